"""cp.async.bulk.tensor tile-mode loads/stores, cp.reduce.async.bulk.tensor, prefetch.tensor
(sim/semantics/bulk_tensor.py), checked against an independent numpy model of the box written from tma.md §2-§4:

* n_i = ceil(boxDim[i] / elementStrides[i]) (dim 0 stride ignored without interleave);
* box element (x_0..x_{r-1}) is global element c_i + x_i * elementStrides[i]; outside [0, globalDim) -> fill;
* the SMEM image is dense, dim 0 fastest; image byte k lands at SMEM address swizzle(dstMem + k).
"""
import math

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault, UnsupportedError, VerifyError
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch, run_launch

HEAD = """
.version 8.6
.target sm_100a
.address_size 64
"""


# ---------------------------------------------------------------------------------------------- the model
def model_swizzle(a, mode):
    """tma.md §4 table, written out independently of isa/swizzle.py."""
    a = np.asarray(a, dtype=np.int64)
    line = (a >> 7)
    if mode == "none":
        return a
    if mode == "32B":
        return a ^ ((line & 1) << 4)
    if mode == "64B":
        return a ^ ((line & 3) << 4)
    if mode == "128B":
        return a ^ ((line & 7) << 4)
    if mode == "128B_atom_32B":
        return a ^ ((line & 3) << 5)
    if mode == "128B_atom_32B_flip_8B":
        return a ^ ((line & 3) << 5) ^ ((line & 1) << 3)
    if mode == "128B_atom_64B":
        return a ^ ((line & 1) << 6)
    raise AssertionError(mode)


def model_box(A, coords, box_np, estr_np=None, fill=0):
    """Box image (numpy order) of array A for tensor coordinates ``coords`` (dim 0 = last numpy axis first)."""
    r = A.ndim
    dims = A.shape[::-1]
    box = box_np[::-1]
    es = (estr_np or (1,) * r)[::-1]
    es = (1,) + tuple(es[1:])
    n = [math.ceil(box[d] / es[d]) for d in range(r)]
    img = np.empty(n[::-1], dtype=A.dtype)
    img[...] = fill
    for idx in np.ndindex(*n[::-1]):
        g = [coords[d] + idx[r - 1 - d] * es[d] for d in range(r)]
        if all(0 <= g[d] < dims[d] for d in range(r)):
            img[idx] = A[tuple(g[::-1])]
    return img


SPANS = {"none": 0, "32B": 32, "64B": 64, "128B": 128, "128B_atom_32B": 128, "128B_atom_32B_flip_8B": 128,
         "128B_atom_64B": 128}


def model_smem(img, dst, mode, size):
    """SMEM bytes [0, size) after writing the image (rows = its last axis) at absolute address ``dst`` with
    ``mode``: dense, except that rows narrower than the swizzle span each start a span (as an H100 lays them out)."""
    img = np.ascontiguousarray(img)
    flat = img.reshape(-1).view(np.uint8)
    row = img.shape[-1] * img.itemsize
    k = np.arange(flat.size)
    if row < SPANS[mode]:
        k = k // row * SPANS[mode] + k % row
    out = np.zeros(size, np.uint8)
    out[model_swizzle(dst + k, mode)] = flat
    return out


# ---------------------------------------------------------------------------------------------- kernels
#: the generic address of the ``tmap`` parameter in %rd2, as nvcc emits it (ptxas rejects the parameter's name as
#: the tensor-map operand: "State space mismatch")
CVTA = "mov.b64 %rd20, tmap;\n  cvta.param.u64 %rd2, %rd20;"
WAIT_PHASE0 = "WAIT:\n  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;\n  @!%p1 bra WAIT;\n"


def load_kernel(dim, smem=8192, dst_space="shared::cluster", mods="", tmap_expr="%rd2", prologue="", mode="tile",
                ncoords=None, issue=None, wait=True):
    """One thread: mbarrier.init, expect_tx(nbytes), one tensor load of {c0, ...} (``ncoords`` of them, default
    ``dim``) into buf + doff, wait for phase 0.  ``issue`` replaces the load instruction."""
    n = dim if ncoords is None else ncoords
    cs = ", ".join(f".param .s32 c{i}" for i in range(n))
    regs = ", ".join(f"%r{10 + i}" for i in range(n))
    lds = "\n  ".join(f"ld.param.s32 %r{10 + i}, [c{i}];" for i in range(n))
    issue = issue or (f"cp.async.bulk.tensor.{dim}d.{dst_space}.global.{mode}.mbarrier::complete_tx::bytes{mods} "
                      f"[%r2], [{tmap_expr}, {{{regs}}}], [%r1];")
    return HEAD + f""".visible .entry k(.param .align 64 .b8 tmap[128], .param .u32 nbytes, .param .u32 doff, {cs})
{{
  .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .pred %p<10>; .reg .b16 %rs<4>;
  .shared .align 1024 .b8 buf[{smem}];
  .shared .align 8 .b64 bar;
  {CVTA}
  mov.u32 %r1, bar;
  mov.u32 %r2, buf;
  ld.param.u32 %r3, [nbytes];
  ld.param.u32 %r4, [doff];
  add.u32 %r2, %r2, %r4;
  {lds}
  {prologue}
  mbarrier.init.shared::cta.b64 [%r1], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], %r3;
  {issue}
{WAIT_PHASE0 if wait else ""}  ret;
}}
"""


def run_load(A, box, coords, swizzle="none", estr=None, oob_fill="zero", smem=8192, doff=0, dtype=None, **kw):
    tm = TensorMap.tiled(A, box, swizzle=swizzle, element_strides=estr, oob_fill=oob_fill, dtype=dtype)
    ptx = load_kernel(A.ndim, smem=smem, **kw)
    res = run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=[tm, tm.box_bytes(), doff, *coords]))
    return tm, res.simulation.ctas[0].smem.data[:smem].copy(), res


def check_load(A, box, coords, swizzle="none", estr=None, fill=0, doff=0, smem=8192, **kw):
    tm, got, res = run_load(A, box, coords, swizzle=swizzle, estr=estr, smem=smem, doff=doff, **kw)
    img = model_box(A, coords, box, estr, fill)
    assert tm.box_bytes() == img.nbytes
    exp = model_smem(img, doff, swizzle, smem)
    assert np.array_equal(got, exp)
    return res


# ---------------------------------------------------------------------------------------------- loads
SWIZZLE_CASES = [("none", (8, 24)), ("32B", (16, 8)), ("64B", (16, 16)), ("128B", (16, 32)),
                 ("128B_atom_32B", (16, 32)), ("128B_atom_32B_flip_8B", (16, 32)), ("128B_atom_64B", (16, 32))]


@pytest.mark.parametrize("swizzle, box", SWIZZLE_CASES)
def test_2d_load_every_swizzle(swizzle, box):
    A = (np.arange(50 * 72, dtype=np.float32) * 1.5).reshape(50, 72)
    check_load(A, box, (8, 3), swizzle=swizzle)        # coords are (c0 = column, c1 = row)


@pytest.mark.parametrize("swizzle", ["128B", "64B", "32B"])
def test_2d_load_narrow_rows_and_unaligned_phase(swizzle):
    # 64-byte rows under 128B swizzle, f16 data, box placed 0x80 past the 1024-byte repeat (phase 1)
    A = np.arange(40 * 64, dtype=np.float16).reshape(40, 64)
    span = {"128B": 64, "64B": 32, "32B": 16}[swizzle]
    check_load(A, (12, span), (16, 5), swizzle=swizzle, doff=0x80)


def test_3d_load_with_element_strides_and_oob():
    A = np.arange(6 * 10 * 32, dtype=np.int32).reshape(6, 10, 32)
    check_load(A, (3, 7, 8), (28, 2, 4), estr=(2, 3, 1))   # element strides 3 (dim 1) and 2 (dim 2)


def test_5d_load():
    A = np.arange(3 * 4 * 5 * 6 * 16, dtype=np.uint16).reshape(3, 4, 5, 6, 16)
    check_load(A, (2, 3, 2, 4, 8), (8, 3, 4, 2, 1), swizzle="32B", estr=(1, 2, 1, 1, 1))


def test_1d_load():
    A = np.arange(100, dtype=np.float64)
    check_load(A, (32,), (90,))


EDGE_CASES = []
for d in range(3):
    for v in ("neg", "big"):
        EDGE_CASES.append((d, v))


@pytest.mark.parametrize("dim, where", EDGE_CASES)
def test_oob_on_every_edge(dim, where):
    A = (np.arange(9 * 11 * 24, dtype=np.uint32) + 1).reshape(9, 11, 24)
    box = (4, 5, 8)                                  # numpy order; tensor dims are (24, 11, 9)
    size = A.shape[::-1]
    bx = box[::-1]
    c = [4, 3, 2]
    # dim 0 moves in 16-byte steps (4 u32): a c0 off a 16-byte boundary is an illegal instruction on the H100
    c[dim] = (-4 if where == "neg" else size[dim] - 4) if dim == 0 else \
        (-bx[dim] + 2 if where == "neg" else size[dim] - 2)
    check_load(A, box, tuple(c))


def test_fully_out_of_bounds_box_still_completes_full_tx():
    A = np.ones((16, 16), np.float32)
    tm, got, res = run_load(A, (8, 8), (-100, 500))
    assert not got.any()
    assert res.stats["cycles"] > 0


def test_oob_fill_nan_pattern():
    A = np.ones((4, 8), np.float32)
    tm = TensorMap.tiled(A, (4, 8), oob_fill="nan")
    res = run_launch(Launch(ptx=load_kernel(2), block=(1, 1, 1), args=[tm, tm.box_bytes(), 0, 4, 2]))
    img = res.simulation.ctas[0].smem.data[:128].view(np.uint32).reshape(4, 8)
    exp = np.full((4, 8), 0x7FF77FF7, np.uint32)          # the H100's fill: 0x7FF7 in every 16-bit half
    exp[:2, :4] = np.float32(1).view(np.uint32)
    assert np.array_equal(img, exp)


def test_bf16_load_via_cvta_param_register():
    A = (np.arange(16 * 32) / 7).astype(ml_dtypes.bfloat16).reshape(16, 32)
    pro = "mov.b64 %rd1, tmap;\n  cvta.param.u64 %rd2, %rd1;"
    check_load(A, (8, 16), (16, 4), swizzle="32B", tmap_expr="%rd2", prologue=pro)


def test_shared_cta_destination():
    A = np.arange(64 * 8, dtype=np.uint8).reshape(8, 64)
    check_load(A, (4, 32), (16, 2), dst_space="shared::cta", mods=".cta_group::1")


def test_cache_hint_policy_operand():
    A = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    tm = TensorMap.tiled(A, (4, 8))
    ptx = load_kernel(2, mods=".L2::cache_hint").replace("[%r1];\nWAIT:", "[%r1], %rd9;\nWAIT:")
    assert "%rd9;" in ptx
    res = run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=[tm, tm.box_bytes(), 0, 8, 4]))
    exp = model_smem(model_box(A, (8, 4), (4, 8)), 0, "none", 8192)
    assert np.array_equal(res.simulation.ctas[0].smem.data[:8192], exp)


def test_tensor_map_copied_through_global_memory():
    # the kernel copies its parameter map to a global buffer and issues the copy through the global address
    A = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    tm = TensorMap.tiled(A, (8, 8), swizzle="32B")
    copy = "\n  ".join(f"ld.param.u64 %rd10, [tmap+{8 * i}];\n  st.global.u64 [%rd3+{8 * i}], %rd10;"
                       for i in range(16))
    ptx = load_kernel(2, tmap_expr="%rd3").replace(
        ".param .u32 nbytes,", ".param .u64 scratch, .param .u32 nbytes,").replace(
        "mov.u32 %r1, bar;", "mov.u32 %r1, bar;\n  ld.param.u64 %rd3, [scratch];\n  " + copy)
    scratch = np.zeros(16, np.uint64)
    res = run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=[tm, scratch, tm.box_bytes(), 0, 8, 16]))
    got = res.simulation.ctas[0].smem.data[:8192]
    assert np.array_equal(got, model_smem(model_box(A, (8, 16), (8, 8)), 0, "32B", 8192))


# ---------------------------------------------------------------------------------------------- cluster forms
MC = HEAD + """
.visible .entry k(.param .align 64 .b8 tmap[128], .param .u32 nbytes)
{
  .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .pred %p<10>; .reg .b16 %rs<4>;
  .shared .align 1024 .b8 buf[2048];
  .shared .align 8 .b64 bar;
  @CVTA@
  mov.u32 %r1, bar;
  mov.u32 %r2, buf;
  ld.param.u32 %r3, [nbytes];
  mov.u32 %r9, %cluster_ctarank;
  mbarrier.init.shared::cta.b64 [%r1], 1;
  @EXPECT@
  barrier.cluster.arrive;
  barrier.cluster.wait;
  @ISSUE@
  @SKIPWAIT@
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra WAIT;
SKIP:
  barrier.cluster.arrive;
  barrier.cluster.wait;
  ret;
}
"""


def cluster_kernel(expect: str, issue: str, skipwait: str) -> str:
    """:data:`MC` with its holes filled: ``expect`` after mbarrier.init (before the cluster barrier), ``issue``
    after it, ``skipwait`` before the phase-0 wait loop (``bra SKIP;`` to leave it out).  The map's generic address
    is in %rd2."""
    return MC.replace("@CVTA@", CVTA).replace("@EXPECT@", expect).replace("@ISSUE@", issue).replace("@SKIPWAIT@", skipwait)


def test_multicast_tensor_load():
    A = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    tm = TensorMap.tiled(A, (8, 32), swizzle="128B")
    ptx = cluster_kernel("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], %r3;", """setp.ne.u32 %p2, %r9, 1;
  @%p2 bra WAIT;
  mov.u16 %rs1, 0xF;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r2], [%rd2, {0, 8}], [%r1], %rs1;""", "")
    res = run_launch(Launch(ptx=ptx, block=(1, 1, 1), grid=(4, 1, 1), cluster=(4, 1, 1), args=[tm, tm.box_bytes()]))
    exp = model_smem(model_box(A, (0, 8), (8, 32)), 0, "128B", 2048)
    for cta in res.simulation.ctas:
        assert np.array_equal(cta.smem.data[:2048], exp)


def test_cta_group_2_signals_the_even_peer():
    # both CTAs of the pair load their own box; both complete-tx go to the even CTA's barrier (CUTLASS 2-SM)
    A = np.arange(32 * 32, dtype=np.uint32).reshape(32, 32)
    tm = TensorMap.tiled(A, (8, 32))
    ptx = cluster_kernel("""setp.eq.u32 %p3, %r9, 0;
  shl.b32 %r4, %r3, 1;
  @%p3 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], %r4;""", """and.b32 %r5, %r1, 0xFEFFFFFF;
  shl.b32 %r6, %r9, 3;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2 [%r2], [%rd2, {0, %r6}], [%r5];""", "@!%p3 bra SKIP;")
    res = run_launch(Launch(ptx=ptx, block=(1, 1, 1), grid=(2, 1, 1), cluster=(2, 1, 1), args=[tm, tm.box_bytes()]))
    for rank, cta in enumerate(res.simulation.ctas):
        exp = model_smem(model_box(A, (0, 8 * rank), (8, 32)), 0, "none", 2048)
        assert np.array_equal(cta.smem.data[:2048], exp)
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    assert res.simulation.ctas[0].mbarriers[0x400 + 2048].phase == 1
    assert res.simulation.ctas[1].mbarriers[0x400 + 2048].phase == 0


def test_cta_group_1_mbarrier_in_other_cta_faults():
    A = np.arange(32 * 32, dtype=np.uint32).reshape(32, 32)
    tm = TensorMap.tiled(A, (8, 32))
    ptx = cluster_kernel("", """and.b32 %r5, %r1, 0xFEFFFFFF;
  setp.ne.u32 %p2, %r9, 1;
  @%p2 bra SKIP;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {0, 0}], [%r5];""", "bra SKIP;")
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    with pytest.raises(MemoryFault, match=r"mbarrier \[mbar\] = 0xc00 \(lane 0\) is in CTA \(0,0,0\), but with "
                                          r"\.cta_group::1 it must be in the destination CTA CTA \(1,0,0\)"):
        run_launch(Launch(ptx=ptx, block=(1, 1, 1), grid=(2, 1, 1), cluster=(2, 1, 1), args=[tm, tm.box_bytes()]))


# ---------------------------------------------------------------------------------------------- stores
def store_kernel(dim, smem=4096, op="cp.async.bulk.tensor", mods=".tile.bulk_group", ncoords=None, tmap_expr="%rd2",
                 prologue="", issue=None):
    """Bulk-copy ``image`` into buf, then one tensor store/reduce of buf at {c0, ...} (``ncoords`` of them,
    default ``dim``); commit and wait.  ``issue`` replaces the store instruction."""
    n = dim if ncoords is None else ncoords
    cs = ", ".join(f".param .s32 c{i}" for i in range(n))
    regs = ", ".join(f"%r{10 + i}" for i in range(n))
    lds = "\n  ".join(f"ld.param.s32 %r{10 + i}, [c{i}];" for i in range(n))
    issue = issue or f"{op}.{dim}d.global.shared::cta{mods} [{tmap_expr}, {{{regs}}}], [%r2];"
    return HEAD + f""".visible .entry k(.param .align 64 .b8 tmap[128], .param .u64 tensor, .param .u64 image,
                                  .param .u32 nbytes, {cs})
{{
  .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .pred %p<10>;
  .shared .align 1024 .b8 buf[{smem}];
  .shared .align 8 .b64 bar;
  {CVTA}
  mov.u32 %r1, bar;
  mov.u32 %r2, buf;
  ld.param.u64 %rd1, [image];
  ld.param.u32 %r3, [nbytes];
  {lds}
  {prologue}
  mbarrier.init.shared::cta.b64 [%r1], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], {smem};
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r2], [%rd1], {smem}, [%r1];
{WAIT_PHASE0}  {issue}
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
  ret;
}}
"""


def model_store(T, img, coords, estr_np=None):
    out = T.copy()
    r = T.ndim
    dims = T.shape[::-1]
    es = (estr_np or (1,) * r)[::-1]
    es = (1,) + tuple(es[1:])
    for idx in np.ndindex(*img.shape):
        g = [coords[d] + idx[r - 1 - d] * es[d] for d in range(r)]
        if all(0 <= g[d] < dims[d] for d in range(r)):
            out[tuple(g[::-1])] = img[idx]
    return out


def run_store(T, box, coords, swizzle="none", estr=None, smem=4096, **kw):
    tm = TensorMap.tiled(T, box, swizzle=swizzle, element_strides=estr)
    n = tm.traversed()[::-1]
    img = (np.arange(math.prod(n)) + 5000).astype(T.dtype).reshape(n)
    smem_img = model_smem(img, 0, swizzle, smem)
    res = run_launch(Launch(ptx=store_kernel(T.ndim, smem=smem, **kw), block=(1, 1, 1),
                            args=[tm, T, smem_img, tm.box_bytes(), *coords]))
    return img, res


@pytest.mark.parametrize("swizzle, box, coords", [
    ("none", (8, 16), (4, 3)),
    ("128B", (8, 32), (40, 28)),        # clipped at the high edge of both dims
    ("64B", (8, 16), (60, 0)),
    ("128B_atom_64B", (4, 32), (0, 30)),
])
def test_2d_store_with_oob_clipping(swizzle, box, coords):
    T = (np.arange(32 * 64, dtype=np.float32) * -1).reshape(32, 64)
    img, res = run_store(T, box, coords, swizzle=swizzle)
    assert np.array_equal(res.outputs[1], model_store(T, img, coords))


def test_3d_store_with_element_strides():
    T = np.zeros((6, 8, 16), np.int32)
    img, res = run_store(T, (3, 4, 8), (12, 5, 2), estr=(2, 2, 1))
    assert np.array_equal(res.outputs[1], model_store(T, img, (12, 5, 2), (2, 2, 1)))


def test_store_negative_start_coordinate_faults():
    T = np.zeros((16, 16), np.float32)
    with pytest.raises(MemoryFault, match=r"start coordinate c1 = -2 \(lane 0\) is negative.*"
                                          r"non-negative starting coordinates.*§9.7.9.25.5.1"):
        run_store(T, (4, 8), (0, -2))


def test_store_flip_8b_swizzle_rejected():
    T = np.zeros((16, 32), np.float32)
    with pytest.raises(VerifyError, match="128B_atom_32B_flip_8B is only valid for loads"):
        run_store(T, (4, 32), (0, 0), swizzle="128B_atom_32B_flip_8B")


@pytest.mark.parametrize("redop, dtype", [("add", np.float32), ("add", np.uint32), ("min", np.int32),
                                          ("max", np.float16), ("xor", np.uint64), ("inc", np.uint32)])
def test_reduce_tensor(redop, dtype):
    rng = np.random.default_rng(3)
    T = rng.integers(0, 50, size=(16, 32)).astype(dtype)
    if dtype == np.int32:
        T -= 25
    tm_box = (4, 16)
    # c0 = 24 starts on a 16-byte boundary for every element size here (an H100 faults otherwise)
    img, res = run_store(T, tm_box, (24, 14), op="cp.reduce.async.bulk.tensor", mods=f".{redop}.tile.bulk_group")
    upd = model_store(T, img, (24, 14))
    touched = upd != T if redop != "max" else np.ones_like(T, bool)
    # expected: element-wise reduce on the in-bounds box region
    mask = np.zeros(T.shape, bool)
    mask[14:16, 24:32] = True
    src = np.zeros_like(T)
    src[mask] = upd[mask]
    exp = T.copy()
    if redop == "add":
        exp[mask] = (T[mask] + src[mask]).astype(dtype)
    elif redop == "min":
        exp[mask] = np.minimum(T[mask], src[mask])
    elif redop == "max":
        exp[mask] = np.maximum(T[mask], src[mask])
    elif redop == "xor":
        exp[mask] = T[mask] ^ src[mask]
    elif redop == "inc":
        exp[mask] = np.where(T[mask] >= src[mask], 0, T[mask] + 1).astype(dtype)
    assert touched.any()
    assert np.array_equal(res.outputs[1], exp)


def test_reduce_type_not_allowed():
    T = np.zeros((16, 32), np.float32)
    with pytest.raises(VerifyError, match=r"\.xor is not defined for tensor-map data type FLOAT32"):
        run_store(T, (4, 16), (0, 0), op="cp.reduce.async.bulk.tensor", mods=".xor.tile.bulk_group")


@pytest.mark.parametrize("ptype, dtype", [("f32", np.float32), ("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_reduce_add_ieee_specials_without_numpy_warnings(ptype, dtype):
    """Overflow rounds to infinity and inf + -inf is NaN (IEEE 754 round-to-nearest); numpy must not warn."""
    import warnings
    from tcsim.semantics.bulk_tensor import reduce_elements
    big = float(ml_dtypes.finfo(dtype).max)
    old = np.array([big, np.inf, -big, 1.0], np.float32).astype(dtype)
    src = np.array([big, -np.inf, -big, 2.0], np.float32).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raw = reduce_elements("add", ptype, old.view(np.uint8).reshape(4, -1), src.view(np.uint8).reshape(4, -1))
    got = raw.reshape(-1).view(dtype).astype(np.float64)
    assert got[0] == np.inf and np.isnan(got[1]) and got[2] == -np.inf and got[3] == 3.0


# ---------------------------------------------------------------------------------------------- faults
def test_fault_destination_misaligned():
    A = np.zeros((16, 16), np.float32)
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    with pytest.raises(MemoryFault, match=r"cp.async.bulk.tensor destination \[dstMem\] = 0x408 \(lane 0\) is not "
                                          r"128-byte aligned \(required of tile-mode tensor copies"):
        run_load(A, (4, 4), (0, 0), doff=8)
    with pytest.raises(MemoryFault, match=r"= 0x440 \(lane 0\) is not 128-byte aligned.*CUDA_ERROR_MISALIGNED_ADDRESS"):
        run_load(A, (4, 4), (0, 0), doff=64)
    check_load(A, (4, 4), (0, 0), doff=128)


def test_fault_destination_misaligned_for_atom_swizzle():
    A = np.zeros((16, 32), np.float32)
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    with pytest.raises(MemoryFault, match=r"= 0x420 \(lane 0\) is not 128-byte aligned"):
        run_load(A, (4, 32), (0, 0), swizzle="128B_atom_64B", doff=32)


def test_fault_box_past_end_of_smem():
    A = np.zeros((64, 32), np.float32)
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    with pytest.raises(MemoryFault, match="box image at SMEM offset 0x400 .* past the end of shared memory"):
        run_load(A, (64, 32), (0, 0), smem=1024)


def test_fault_map_in_shared_memory():
    A = np.zeros((16, 16), np.float32)
    pro = "cvta.shared.u64 %rd5, %rd6;\n  mov.u32 %r30, buf;\n  cvt.u64.u32 %rd6, %r30;\n  cvta.shared.u64 %rd5, %rd6;"
    with pytest.raises(MemoryFault, match=r"tensor map address 0x7e[0-9a-f]+ \(lane 0\) is in .shared memory"):
        run_load(A, (4, 4), (0, 0), tmap_expr="%rd5", prologue=pro)


def test_fault_not_a_tensor_map():
    ptx = load_kernel(2)
    from tcsim.memory import PARAM_WINDOW           # tmap is the kernel's first parameter: generic param address + 0
    with pytest.raises(MemoryFault, match=f"the tensor map at 0x{PARAM_WINDOW:x} \\(lane 0\\) is not valid: the 128 "
                                          "bytes used as a tensor map do not hold one"):
        run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=[bytes(128), 64, 0, 0, 0]))


def test_fault_map_breaking_a_driver_rule():
    # bytes edited after encoding (as tensormap.replace could): 256-byte rows under 128B swizzle
    from tcsim.isa.tensormap import LAYOUT
    A = np.zeros((16, 64), np.float32)
    tm = TensorMap.tiled(A, (4, 32), swizzle="128B")
    tm.array = None
    tm.global_address = 0
    raw = bytearray(tm.encode())
    raw[LAYOUT["box_dims"][0]] = 63                   # boxDim[0] = 64 elements = 256 bytes
    with pytest.raises(MemoryFault, match=r"is not valid: invalid tensor map: with swizzle 128B the inner box "
                                          r"dimension .* at most the swizzle span of 128 bytes"):
        run_launch(Launch(ptx=load_kernel(2), block=(1, 1, 1), args=[bytes(raw), 1024, 0, 0, 0]))


def test_fault_tensor_outside_allocation():
    A = np.zeros((16, 16), np.float32)
    tm = TensorMap.tiled(A, (4, 4))
    tm.global_dims = (16, 64)            # claims more rows than the buffer has
    tm.array = None
    with pytest.raises(MemoryFault, match="in-bounds elements of the box span global .* outside one allocation"):
        run_launch(Launch(ptx=load_kernel(2), block=(1, 1, 1), args=[tm, 64, 0, 0, 20]))


PREFETCH = HEAD + """.visible .entry k(.param .align 64 .b8 tmap[128], .param .u32 nbytes, .param .u32 doff)
{{
  .reg .b64 %rd<40>;
  {cvta}
  cp.async.bulk.prefetch.tensor.{dim}d.L2.global.tile [%rd2, {{{coords}}}];
  ret;
}}
"""


@pytest.mark.parametrize("dim, shape, box", [(3, (16, 32), (4, 8)),           # .3d through a rank-2 map
                                             (2, (4, 16, 32), (2, 4, 8))])    # .2d through a rank-3 map
@pytest.mark.parametrize("kind", ["load", "store", "reduce", "prefetch"])
def test_fault_instruction_dimensionality_differs_from_map_rank(kind, dim, shape, box):
    """On an H100 both directions stop with CUDA_ERROR_ILLEGAL_INSTRUCTION (tests/golden/tma_h100,
    fault_dim_mismatch_*); tcsim stops with a located MemoryFault instead of running silently (.3d on rank 2) or
    failing inside the box geometry (.2d on rank 3)."""
    A = np.zeros(shape, np.float32)
    tm = TensorMap.tiled(A, box)
    coords = (0,) * dim
    if kind == "load":
        ptx, args = load_kernel(dim), [tm, tm.box_bytes(), 0, *coords]
    elif kind == "prefetch":
        ptx, args = PREFETCH.format(dim=dim, coords=", ".join(map(str, coords)), cvta=CVTA), [tm, 0, 0]
    else:
        mods = ".tile.bulk_group" if kind == "store" else ".add.tile.bulk_group"
        op = "cp.async.bulk.tensor" if kind == "store" else "cp.reduce.async.bulk.tensor"
        ptx, args = store_kernel(dim, op=op, mods=mods), [tm, A, np.zeros(4096, np.uint8), tm.box_bytes(), *coords]
    with pytest.raises(MemoryFault) as ei:
        run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=args))
    e = ei.value
    assert (f"the instruction is .{dim}d, but the tensor map (lane 0) has rank {len(shape)}: the instruction's "
            f"dimensionality differs from the map's rank and the GPU stops the kernel with an illegal instruction "
            f"(CUDA_ERROR_ILLEGAL_INSTRUCTION)") in e.message, e.message
    assert f"a tensor map of rank {dim} for a .{dim}d instruction" in e.expected
    assert e.loc is not None and e.loc.line > 0 and f".{dim}d." in e.loc.text and "warp 0" in e.where


@pytest.mark.parametrize("form, err, msg", [
    ("cp.async.bulk.tensor.3d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes [%r1], "
     "[tmap, {0, 1, 2, 3, 4}], [%r2];", VerifyError, "cannot be combined with .tile::gather4"),
    ("cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r1], "
     "[tmap, {0, 1, 2}], [%r2], {%rs1};", UnsupportedError, "load mode .im2col is not supported"),
    ("cp.async.bulk.tensor.3d.global.shared::cta.tile::scatter4.bulk_group [tmap, {0, 1, 2, 3, 4}], [%r1];",
     VerifyError, "cannot be combined with .tile::scatter4"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [tmap, {0}], [%r2];",
     VerifyError, "a .2d tensor copy takes 2 coordinates, got 1"),
    ("cp.async.bulk.tensor.2d.global.shared::cta.tile.mbarrier::complete_tx::bytes [tmap, {0, 0}], [%r1];",
     VerifyError, "completes through .bulk_group"),
])
def test_decode_diagnostics(form, err, msg):
    ptx = HEAD + f""".visible .entry k(.param .align 64 .b8 tmap[128])
{{
  .reg .b32 %r<4>; .reg .b16 %rs<4>;
  {form}
  ret;
}}
"""
    with pytest.raises(err, match=msg):
        run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=[bytes(128)]))


@pytest.mark.parametrize("decl, operand, space", [
    ("", "tmap", "param"),                                   # the kernel parameter's name
    (".const .align 64 .b8 cmap[128];", "cmap", "const"),
    (".shared .align 64 .b8 smap[128];", "smap", "shared"),
    (".global .align 64 .b8 gmap[128];", "gmap", None),      # a .global name is a generic address: accepted
])
def test_tensor_map_operand_must_be_a_generic_address(decl, operand, space):
    """PTX ISA §9.7.9.25.5.2: tensorMap is the generic address of the map; ptxas 13.0 rejects the name of a
    .param / .const / .shared variable ("State space mismatch"), and so does tcsim, at decode, located."""
    from tcsim.isa.ptxas import assemble
    from tcsim.cli import check_ptx_text
    ptx = HEAD + decl + f"""
.visible .entry k(.param .align 64 .b8 tmap[128])
{{
  cp.async.bulk.prefetch.tensor.2d.L2.global.tile [{operand}, {{0, 0}}];
  ret;
}}
"""
    errors = check_ptx_text(ptx, "k.ptx")
    r = assemble(ptx, "sm_100a")
    if space is None:
        assert errors == [] and (r is None or r[0] == 0)
        return
    assert len(errors) == 1 and isinstance(errors[0], VerifyError), errors
    e = errors[0]
    assert f"the tensor map {operand} is named as a .{space} variable" in e.message, e.message
    assert "State space mismatch" in e.message
    assert (f"cvta.{space}.u64" if space != "shared" else "a map in .param, .const or .global memory") in e.expected
    assert (e.loc.line, e.loc.col) == (ptx.splitlines().index(f"  cp.async.bulk.prefetch.tensor.2d.L2.global.tile "
                                                              f"[{operand}, {{0, 0}}];") + 1, 3)
    assert r is None or (r[0] != 0 and "State space mismatch" in r[1]), r


def test_kernels_here_assemble():
    from test_tensormap_ops import check_ptxas
    for ptx in [load_kernel(d) for d in range(1, 6)] + [
            load_kernel(2, dst_space="shared::cta", mods=".cta_group::1"), store_kernel(3),
            store_kernel(2, op="cp.reduce.async.bulk.tensor", mods=".add.tile.bulk_group"),
            PREFETCH.format(dim=2, coords="0, 0", cvta=CVTA)]:
        check_ptxas(ptx)


def test_prefetch_tensor():
    A = np.zeros((16, 16), np.float32)
    tm = TensorMap.tiled(A, (4, 4))
    ptx = HEAD + f""".visible .entry k(.param .align 64 .b8 tmap[128])
{{
  .reg .b64 %rd<40>;
  {CVTA}
  cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%rd2, {{-4, 100}}];
  cp.async.bulk.prefetch.tensor.2d.L2.global.L2::cache_hint [%rd2, {{0, 0}}], %rd1;
  ret;
}}
"""
    run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=[tm]))


# ---------------------------------------------------------------------------------------------- nvcc fixture
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_nvcc_tma_mbarrier_fixture(arch):
    """tests/fixtures/nvcc/tma_mbarrier.cu: TMA load of a 64x32 f32 box, scale in SMEM (fma), bulk store to
    ``out`` and tensor store back through the same map."""
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "fixtures" / "nvcc" / f"tma_mbarrier.{arch}.ptx"
    A = np.random.default_rng(7).standard_normal((256, 96)).astype(np.float32)
    A0 = A.copy()
    tm = TensorMap.tiled(A, (64, 32))
    out = np.zeros(64 * 32, np.float32)
    res = run_launch(Launch(ptx=str(path), block=(128, 1, 1), args=[tm, out, 1, 2, np.float32(2.5)]))
    tile = A0[128:192, 32:64]
    exp = (tile.astype(np.float64) * 2.5 + 1.0).astype(np.float32)      # fma.rn.f32: one rounding
    assert np.array_equal(res.outputs[1].reshape(64, 32), exp)
    back = tm.sim_allocation.data.view(np.float32).reshape(A.shape)     # the map's own buffer (not an argument)
    want = A0.copy()
    want[128:192, 32:64] = exp
    assert np.array_equal(back, want)
    # the map's tensor is the caller's array: the tensor store lands there too (as on the GPU)
    assert np.array_equal(A, want)


# ---------------------------------------------------------------------------------------------- H100-measured rules
# (tests/golden/tma_h100: the first H100 record of calib/tma settled these)
@pytest.mark.parametrize("dtype, c0", [(np.float32, 1), (np.float32, -3), (np.uint16, 4), (np.uint8, 8),
                                       (np.float64, 1)])
def test_tile_load_whose_c0_is_not_on_a_16_byte_boundary_faults(dtype, c0):
    A = np.zeros((8, 64), dtype)
    with pytest.raises(MemoryFault, match=rf"start coordinate c0 = {c0} \(lane 0\) of a \w+ map is "
                                          rf"{c0 * A.itemsize} bytes into the row, not a multiple of 16; the GPU "
                                          r"stops the kernel with an illegal instruction"):
        run_load(A, (4, 64 // A.itemsize // 2), (c0, 0))


@pytest.mark.parametrize("dtype, c0", [(np.float32, 4), (np.float32, -4), (np.uint16, 8), (np.uint8, 16),
                                       (np.float64, 2)])
def test_tile_load_whose_c0_is_on_a_16_byte_boundary_runs(dtype, c0):
    A = (np.arange(8 * 64) % 251).astype(dtype).reshape(8, 64)
    check_load(A, (4, 16 // A.itemsize * 2), (c0, 1))


@pytest.mark.parametrize("op, mods", [("cp.async.bulk.tensor", ".tile.bulk_group"),
                                      ("cp.reduce.async.bulk.tensor", ".add.tile.bulk_group")])
def test_tile_store_and_reduce_whose_c0_is_not_on_a_16_byte_boundary_fault(op, mods):
    T = np.zeros((16, 32), np.uint32)
    with pytest.raises(MemoryFault, match=r"c0 = 2 \(lane 0\) of a UINT32 map is 8 bytes into the row"):
        run_store(T, (4, 8), (2, 3), op=op, mods=mods)


def test_tf32_load_rounds_to_nearest_even_and_canonicalises_nan():
    bits = np.array([0x46476810, 0x9A2F3F9E, 0x3F801000, 0x3F803000, 0x807FFFFF, 0x00000001, 0x7F800000,
                     0xFF800000, 0x7FC00000, 0xFFC01234, 0x7F7FFFFF, 0x80000000, 0x3F800FFF, 0x00001FFF,
                     0x3F801001, 0x7F800001], np.uint32)
    want = np.array([0x46476000, 0x9A2F4000, 0x3F800000, 0x3F804000, 0x80800000, 0x00000000, 0x7F800000,
                     0xFF800000, 0x7FFFE000, 0x7FFFE000, 0x7F800000, 0x80000000, 0x3F800000, 0x00002000,
                     0x3F802000, 0x7FFFE000], np.uint32)
    A = np.tile(bits, (4, 1)).view(np.float32)
    for dtype in ("TFLOAT32", "TFLOAT32_FTZ"):
        tm, got, _ = run_load(A, (4, 16), (0, 0), dtype=dtype)
        assert np.array_equal(got[:256].view(np.uint32).reshape(4, 16), np.tile(want, (4, 1))), dtype


def test_tf32_image_agrees_with_the_harness_float_model_on_random_bits():
    from tests.reference.tma_model import model_tf32
    from tcsim.semantics.bulk_tensor import tf32_image
    rng = np.random.default_rng(7)
    u = rng.integers(0, 1 << 32, 3000, dtype=np.uint64).astype(np.uint32)
    u[::7] &= np.uint32(0x807FFFFF)                      # subnormals
    u[1::11] = (u[1::11] & np.uint32(0xFFFFE000)) | np.uint32(0x1000)   # ties
    assert np.array_equal(tf32_image(u), model_tf32(u))


def test_oob_nan_fill_is_0x7ff7_in_every_16_bit_half_for_every_float_type():
    for dtype, es, want in ((np.float16, 2, 0x7FF7), (ml_dtypes.bfloat16, 2, 0x7FF7), (np.float32, 4, 0x7FF77FF7),
                            (np.float64, 8, 0x7FF77FF77FF77FF7)):
        A = np.ones((4, 32 // es), dtype)
        tm, got, _ = run_load(A, (2, 32 // es), (-(32 // es), 1), oob_fill="nan")   # wholly left of the tensor
        img = got[:tm.box_bytes()].view({2: np.uint16, 4: np.uint32, 8: np.uint64}[es])
        assert (img == want).all(), dtype


def test_reduce_add_f64_keeps_a_nan_operand_unquieted():
    from tcsim.semantics.bulk_tensor import reduce_elements
    old = np.array([0x7FF0000000000001, 0x3FF0000000000000, 0x7FF4000000000000, 0x4000000000000000], np.uint64)
    src = np.array([0x3FF0000000000000, 0xFFF0000000000002, 0x7FF8000000000003, 0x4000000000000000], np.uint64)
    got = reduce_elements("add", "f64", old.view(np.uint8).reshape(4, 8), src.view(np.uint8).reshape(4, 8))
    assert got.reshape(-1).view(np.uint64).tolist() == [0x7FF0000000000001, 0xFFF0000000000002, 0x7FF4000000000000,
                                                        0x4010000000000000]


def test_reduce_add_runs_for_float64_and_float32_ftz_maps():
    T = np.full((8, 16), 1.5, np.float64)
    img, res = run_store(T, (2, 8), (8, 2), op="cp.reduce.async.bulk.tensor", mods=".add.tile.bulk_group")
    exp = T.copy()
    exp[2:4, 8:16] += img
    assert np.array_equal(res.outputs[1], exp)
    F = np.array([[1e-39, np.nan, 2.0, -3.0]], np.float32).repeat(4, 0)
    tm = TensorMap.tiled(F, (4, 4), dtype="FLOAT32_FTZ")
    smem = np.zeros(4096, np.uint8)
    smem[:64] = np.array([1e-39, 1.0, np.nan, 3.0] * 4, np.float32).view(np.uint8)
    res = run_launch(Launch(ptx=store_kernel(2, smem=4096, op="cp.reduce.async.bulk.tensor",
                                             mods=".add.tile.bulk_group"),
                            block=(1, 1, 1), args=[tm, F, smem, tm.box_bytes(), 0, 0]))
    got = res.outputs[1].view(np.uint32)[0]
    assert got.tolist() == [0, 0x7FFFFFFF, 0x7FFFFFFF, 0]     # subnormals flushed, NaN canonical
    assert reduce_ftz_bits(0x80000001, 0x00000002) == 0 and reduce_ftz_bits(0x00800000, 0x80400000) == \
        0x00800000 and reduce_ftz_bits(0x00C00000, 0x80800000) == 0    # -0 + 0; a subnormal result flushes


def reduce_ftz_bits(a, b):
    from tcsim.semantics.bulk_tensor import reduce_elements
    r = reduce_elements("add", "f32.ftz", np.array([a], np.uint32).view(np.uint8).reshape(1, 4),
                        np.array([b], np.uint32).view(np.uint8).reshape(1, 4))
    return int(r.view(np.uint32).reshape(-1)[0])
