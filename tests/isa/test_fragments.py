"""isa/fragments.py: the mma / ldmatrix fragment maps, checked against the PTX ISA text forms (written here
independently, in the "for ai where ..." style of PTX ISA §9.7.14.5.7-10) and against each other."""
import numpy as np
import pytest

from tcsim.isa import fragments as FR


def _gt(lane):
    return lane >> 2, lane % 4


# The PTX ISA's own formulations (conditional form), element i of lane -> (row, col)
def _ptx_pos(shape, operand, kind, lane, i):
    g, t = _gt(lane)
    if operand in "CD":
        return (g if i < 2 else g + 8), t * 2 + (i & 1)
    if shape == "m16n8k8" and kind == "16b":
        if operand == "A":
            return (g if i in (0, 1) else g + 8), t * 2 + (i & 1)
        return t * 2 + i, g
    if shape == "m16n8k8" and kind == "tf32":
        if operand == "A":
            return (g if i in (0, 2) else g + 8), (t if i in (0, 1) else t + 4)
        return (t if i == 0 else t + 4), g
    if shape == "m16n8k16" and kind == "16b":
        if operand == "A":
            row = g if (0 <= i < 2 or 4 <= i < 6) else g + 8
            col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
            return row, col
        return t * 2 + (i & 1) + (8 if i >= 2 else 0), g
    if shape == "m16n8k16" and kind == "8b":
        if operand == "A":
            return (g if i < 4 else g + 8), t * 4 + (i & 3)
        return t * 4 + i, g
    if shape == "m16n8k32" and kind == "8b":
        if operand == "A":
            row = g if (0 <= i < 4 or 8 <= i < 12) else g + 8
            return row, t * 4 + (i & 3) + (16 if i >= 8 else 0)
        return t * 4 + (i & 3) + (16 if i >= 4 else 0), g
    raise AssertionError


CASES = [  # shape, operand, elem type, kind, (rows, cols), nregs
    ("m16n8k8", "A", "f16", "16b", (16, 8), 2), ("m16n8k8", "B", "bf16", "16b", (8, 8), 1),
    ("m16n8k8", "A", "tf32", "tf32", (16, 8), 4), ("m16n8k8", "B", "tf32", "tf32", (8, 8), 2),
    ("m16n8k16", "A", "f16", "16b", (16, 16), 4), ("m16n8k16", "B", "bf16", "16b", (16, 8), 2),
    ("m16n8k16", "A", "s8", "8b", (16, 16), 2), ("m16n8k16", "B", "e4m3", "8b", (16, 8), 1),
    ("m16n8k32", "A", "u8", "8b", (16, 32), 4), ("m16n8k32", "B", "e5m2", "8b", (32, 8), 2),
    ("m16n8k16", "C", "f32", "acc", (16, 8), 4), ("m16n8k8", "D", "f16", "acc", (16, 8), 2),
    ("m16n8k32", "C", "s32", "acc", (16, 8), 4),
]


@pytest.mark.parametrize("shape,operand,et,kind,dims,nregs", CASES)
def test_layout_matches_ptx_text_and_is_a_bijection(shape, operand, et, kind, dims, nregs):
    L = FR.mma_layout(shape, operand, et)
    assert L.shape == dims and L.nregs == nregs and L.nregs * L.per_reg * 32 == dims[0] * dims[1]
    for lane in range(32):
        for i in range(L.nregs * L.per_reg):
            assert (L.row[lane, i], L.col[lane, i]) == _ptx_pos(shape, operand, kind, lane, i)
    seen = np.zeros(dims, dtype=int)
    np.add.at(seen, (L.row, L.col), 1)
    assert (seen == 1).all()


def test_worked_check_m16n8k16_f16_A():
    L = FR.mma_layout("m16n8k16", "A", "f16")
    for lane in range(32):
        g, t = _gt(lane)
        want = [(g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8)]
        for r, (row, col) in enumerate(want):
            assert [(L.row[lane, 2 * r + h], L.col[lane, 2 * r + h]) for h in (0, 1)] == [(row, col),
                                                                                         (row, col + 1)]


@pytest.mark.parametrize("shape,operand,et,kind,dims,nregs", CASES)
def test_gather_scatter_roundtrip_and_packing(shape, operand, et, kind, dims, nregs):
    rng = np.random.default_rng(1)
    L = FR.mma_layout(shape, operand, et)
    regs = rng.integers(0, 1 << 32, size=(nregs, 32), dtype=np.uint64).astype(np.uint32)
    dense = FR.gather(L, regs)
    assert dense.shape == dims and dense.dtype.itemsize * 8 == L.elem_bits
    assert (FR.scatter(L, dense) == regs).all()
    # lower-indexed element in the lower bits
    lane = 5
    i = min(1, L.per_reg * L.nregs - 1)
    slot = i % L.per_reg
    want = (int(regs[i // L.per_reg, lane]) >> (slot * L.elem_bits)) & ((1 << L.elem_bits) - 1)
    assert int(dense[L.row[lane, i], L.col[lane, i]]) == want


def _ld_reference(tile, num, trans):
    """PTX ISA ldmatrix text: register m of thread T = {M_m[T/4][2(T%4)], M_m[T/4][2(T%4)+1]} (.trans: the
    transpose of the stored matrix)."""
    out = np.zeros((num, 32), dtype=np.uint32)
    for m in range(num):
        Mm = tile[8 * m:8 * m + 8]
        if trans:
            Mm = Mm.T
        for T in range(32):
            lo, hi = Mm[T // 4, 2 * (T % 4)], Mm[T // 4, 2 * (T % 4) + 1]
            out[m, T] = int(lo) | (int(hi) << 16)
    return out


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_layout(num, trans):
    rng = np.random.default_rng(num + 10 * trans)
    tile = rng.integers(0, 1 << 16, size=(8 * num, 8)).astype(np.uint16)
    L = FR.ldmatrix_layout(num, trans)
    regs = FR.scatter(L, tile)
    assert (regs == _ld_reference(tile, num, trans)).all()
    assert (FR.gather(L, regs) == tile).all()
    sup = FR.ldmatrix_row_suppliers(num)
    assert list(sup[:8 * num]) == list(range(8 * num)) and (sup[8 * num:] == -1).all()


def test_ldmatrix_x4_feeds_mma_A_and_x2_feeds_B():
    rng = np.random.default_rng(3)
    A = rng.integers(0, 1 << 16, size=(16, 16)).astype(np.uint16)
    # matrices (rows 0-7,k 0-7), (rows 8-15,k 0-7), (rows 0-7,k 8-15), (rows 8-15,k 8-15)
    tile = np.concatenate([A[0:8, 0:8], A[8:16, 0:8], A[0:8, 8:16], A[8:16, 8:16]])
    assert (FR.scatter(FR.ldmatrix_layout(4, False), tile) == FR.scatter(FR.mma_layout("m16n8k16", "A", "f16"),
                                                                         A)).all()
    B = rng.integers(0, 1 << 16, size=(16, 8)).astype(np.uint16)        # K x N
    LB = FR.mma_layout("m16n8k16", "B", "f16")
    nk = B.T                                                            # stored [n][k]
    tile = np.concatenate([nk[:, 0:8], nk[:, 8:16]])
    assert (FR.scatter(FR.ldmatrix_layout(2, False), tile) == FR.scatter(LB, B)).all()
    kn = B                                                              # stored [k][n]: .trans
    tile = np.concatenate([kn[0:8], kn[8:16]])
    assert (FR.scatter(FR.ldmatrix_layout(2, True), tile) == FR.scatter(LB, B)).all()


def test_movmatrix_relation():
    rng = np.random.default_rng(4)
    M = rng.integers(0, 1 << 16, size=(8, 8)).astype(np.uint16)
    assert (FR.scatter(FR.ldmatrix_layout(1, True), M) == FR.scatter(FR.ldmatrix_layout(1, False), M.T)).all()


def test_describe_and_errors():
    s = FR.describe(FR.mma_layout("m16n8k16", "A", "f16"), lanes=[0, 5])
    assert "16x16 matrix, 4 register(s) of 2 x 16-bit" in s
    assert "lane  5: r0={(1,2),(1,3)} r1={(9,2),(9,3)} r2={(1,10),(1,11)} r3={(9,10),(9,11)}" in s
    assert "r0=(0,0)" in FR.describe(FR.mma_layout("m16n8k8", "A", "tf32"), lanes=[0])
    with pytest.raises(ValueError):
        FR.mma_layout("m8n8k4", "A", "f16")
    with pytest.raises(ValueError):
        FR.mma_layout("m16n8k32", "A", "f16")
    with pytest.raises(ValueError):
        FR.mma_layout("m16n8k16", "C", "bf16")
    with pytest.raises(ValueError):
        FR.gather(FR.mma_layout("m16n8k16", "A", "f16"), np.zeros((2, 32), dtype=np.uint32))
