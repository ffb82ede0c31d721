"""cp.async.bulk.tensor.2d ... .tile::gather4 / .tile::scatter4 (sim/semantics/bulk_tensor_gather.py through the
tile-mode machinery of bulk_tensor.py), checked against an independent numpy model written from PTX ISA 9.1
§5.5.3.4 and tma.md §2/§4 (the swizzle and SMEM-image models are test_bulk_tensor.py's):

* coordinates {col, row0..row3}; box k is row row_k, columns col .. col + boxDim[0] - 1;
* image = the four rows stacked (row k at byte k * boxDim[0] * esize), byte i at SMEM swizzle(dstMem + i);
* loads: OOB rows / columns read the fill value, complete-tx = 4 * boxDim[0] * esize always;
* stores: OOB rows / columns are dropped.

Every kernel here assembles with ptxas -arch=sm_100a (the tensor map goes through cvta.param, as nvcc emits).
"""
import re

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.errors import DeadlockError, MemoryFault, UnsupportedError, VerifyError
from tcsim.isa.ptxas import assemble
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch, run_launch
from tcsim.observe import read_trace
from test_bulk_copy import run
from test_bulk_tensor import HEAD, cluster_kernel, load_kernel, model_smem, model_swizzle, run_load, store_kernel
from test_tensormap_ops import check_ptxas

G4 = "cp.async.bulk.tensor.2d.{space}.global.tile::gather4.mbarrier::complete_tx::bytes{mods}"
S4 = "cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group"
REG_COORDS = "{%r10, %r11, %r12, %r13, %r14}"


# ---------------------------------------------------------------------------------------------- the model
def model_rows(A, col, rows, cols, fill=0):
    """The 4 x cols image a gather4 of A (numpy (rows, cols) order) at {col, rows} must produce."""
    img = np.empty((4, cols), dtype=A.dtype)
    img[...] = fill
    for k, r in enumerate(rows):
        for j in range(cols):
            if 0 <= r < A.shape[0] and 0 <= col + j < A.shape[1]:
                img[k, j] = A[r, col + j]
    return img


def model_scatter(T, img, col, rows):
    out = T.copy()
    for k, r in enumerate(rows):
        for j in range(img.shape[1]):
            if 0 <= r < T.shape[0] and 0 <= col + j < T.shape[1]:
                out[r, col + j] = img[k, j]
    return out


# ---------------------------------------------------------------------------------------------- kernels
def gather_kernel(smem=8192, space="shared::cluster", mods="", pre="", issue=None, wait=True):
    """test_bulk_tensor.load_kernel with one gather4 of {c0, c1..c4} (registers %r10..%r14) through the map's
    generic address in %rd2."""
    issue = issue or f"{G4.format(space=space, mods=mods)} [%r2], [%rd2, {REG_COORDS}], [%r1];"
    return load_kernel(2, smem=smem, ncoords=5, prologue=pre, issue=issue, wait=wait)


def run_gather(A, cols, col, rows, swizzle="none", oob_fill="zero", doff=0, smem=8192, nbytes=None, observers=(),
               **kw):
    tm = TensorMap.tiled(A, (1, cols), swizzle=swizzle, oob_fill=oob_fill)
    nb = tm.rows4_bytes() if nbytes is None else nbytes
    res = run_launch(Launch(ptx=gather_kernel(smem=smem, **kw), block=(1, 1, 1), args=[tm, nb, doff, col, *rows]),
                     observers=observers)
    return tm, res.simulation.ctas[0].smem.data[:smem].copy(), res


def scatter_kernel(smem=4096, issue=None):
    """test_bulk_tensor.store_kernel with one scatter4 of buf at {c0, c1..c4} through %rd2."""
    return store_kernel(2, smem=smem, ncoords=5, issue=issue or f"{S4} [%rd2, {REG_COORDS}], [%r2];")


def run_scatter(T, cols, col, rows, swizzle="none", smem=4096, observers=(), **kw):
    tm = TensorMap.tiled(T, (1, cols), swizzle=swizzle)
    img = (np.arange(4 * cols) + 5000).astype(T.dtype).reshape(4, cols)
    smem_img = model_smem(img, 0, swizzle, smem)
    res = run_launch(Launch(ptx=scatter_kernel(smem=smem, **kw), block=(1, 1, 1),
                            args=[tm, T, smem_img, tm.rows4_bytes(), col, *rows]), observers=observers)
    return img, res


# ---------------------------------------------------------------------------------------------- gather4
#: (swizzle, fp32 columns per row = the widest row the swizzle allows, or 24 without swizzle)
SWIZZLES = [("none", 24), ("32B", 8), ("64B", 16), ("128B", 32), ("128B_atom_32B", 32),
            ("128B_atom_32B_flip_8B", 32), ("128B_atom_64B", 32)]


@pytest.mark.parametrize("swizzle, cols", SWIZZLES)
@pytest.mark.parametrize("col, rows", [(8, (3, 40, 0, 49)),          # all in bounds, out of order
                                       (56, (-1, 7, 50, 2)),        # columns 56.. past 72; rows -1 and 50 OOB
                                       (-8, (12, 12, -7, 1000))])   # negative columns; a row twice
def test_gather4_every_swizzle_and_oob(swizzle, cols, col, rows):
    A = (np.arange(50 * 72, dtype=np.float32) * 1.5 + 1).reshape(50, 72)
    tm, got, _ = run_gather(A, cols, col, rows, swizzle=swizzle)
    assert tm.rows4_bytes() == 4 * cols * 4
    assert np.array_equal(got, model_smem(model_rows(A, col, rows, cols), 0, swizzle, 8192))


@pytest.mark.parametrize("swizzle", ["128B", "64B", "32B"])
def test_gather4_groups_fill_a_swizzled_tile_like_one_tile_load(swizzle):
    """Four gather4 of contiguous rows into tile + 4g * rowBytes reproduce, byte for byte, one tile-mode load of
    the 16-row box: the swizzle phase of each group comes from its absolute SMEM address."""
    A = (np.arange(64 * 64) % 251).astype(np.uint16).reshape(64, 64).view(np.float16)
    span = {"128B": 64, "64B": 32, "32B": 16}[swizzle]
    tm = TensorMap.tiled(A, (1, span), swizzle=swizzle)
    rb = span * 2
    issue = "\n  ".join(
        f"add.u32 %r20, %r2, {4 * g * rb};\n  add.u32 %r21, %r11, {4 * g};\n  add.u32 %r22, %r11, {4 * g + 1};\n"
        f"  add.u32 %r23, %r11, {4 * g + 2};\n  add.u32 %r24, %r11, {4 * g + 3};\n  "
        + G4.format(space="shared::cta", mods="") + " [%r20], [%rd2, {%r10, %r21, %r22, %r23, %r24}], [%r1];"
        for g in range(4))
    ptx = gather_kernel(issue=issue)
    check_ptxas(ptx)
    got = run(ptx, [tm, 4 * tm.rows4_bytes(), 0, 8, 20, 0, 0, 0]).simulation.ctas[0].smem.data[:8192]
    _, tile_load, _ = run_load(A, (16, span), (8, 20), swizzle=swizzle)     # test_bulk_tensor's tile-mode load
    assert np.array_equal(got, tile_load)
    img = np.zeros((16, span), np.float16)
    img[:, :min(span, 64 - 8)] = A[20:36, 8:8 + span]      # with 128B swizzle, columns 64.. are out of bounds
    assert np.array_equal(got, model_smem(img, 0, swizzle, 8192))


def test_gather4_at_a_group_offset_sees_the_pattern_phase():
    # 128B swizzle, the second 4-row group of a tile: dstMem = 512 (lines 4..7 of the 1024-byte repeat)
    A = np.arange(40 * 32, dtype=np.float32).reshape(40, 32)
    _, got, _ = run_gather(A, 32, 0, (9, 1, 30, 4), swizzle="128B", doff=512)
    img = model_rows(A, 0, (9, 1, 30, 4), 32)
    assert np.array_equal(got, model_smem(img, 512, "128B", 8192))
    phase0 = np.zeros(8192, np.uint8)                   # the image swizzled as if it started a repeat
    phase0[512 + model_swizzle(np.arange(512), "128B")] = img.reshape(-1).view(np.uint8)
    assert not np.array_equal(got, phase0)


def test_gather4_bf16_rows_wider_than_16_bytes_and_oob_zero_fill():
    A = (np.arange(30 * 128) / 3 + 1).astype(ml_dtypes.bfloat16).reshape(30, 128)
    rows = (-30, 29, 30, 2 * 30)
    _, got, _ = run_gather(A, 64, 120, rows, swizzle="128B")
    img = model_rows(A, 120, rows, 64)
    assert np.array_equal(got, model_smem(img, 0, "128B", 8192))
    assert (img.view(np.uint16)[[0, 2, 3]] == 0).all() and (img.view(np.uint16)[1, 8:] == 0).all()
    assert (img.view(np.uint16)[1, :8] != 0).all()


def test_gather4_oob_nan_fill():
    A = np.ones((8, 16), np.float32)
    _, got, _ = run_gather(A, 16, 8, (1, -1, 8, 3), oob_fill="nan")
    img = got[:256].view(np.uint32).reshape(4, 16)
    exp = np.full((4, 16), 0x7FF77FF7, np.uint32)   # the fill an H100 writes in tile mode (assumed for gather4)
    exp[[0, 3], :8] = np.float32(1).view(np.uint32)
    assert np.array_equal(img, exp)


def test_gather4_complete_tx_is_the_full_four_row_box_even_when_all_oob(tmp_path):
    A = np.ones((16, 32), np.float32)
    rows = (-5, 16, 99, -1)
    trace = tmp_path / "t.jsonl"
    tm = TensorMap.tiled(A, (1, 32))
    res = run_launch(Launch(ptx=gather_kernel(), block=(1, 1, 1), args=[tm, 512, 0, 64, *rows]),
                     trace=str(trace))
    assert tm.rows4_bytes() == 512
    assert not res.simulation.ctas[0].smem.data[:8192].any()
    events = list(read_trace(str(trace)))
    tx = [e for e in events if e["kind"] == "sync" and e.get("op") == "mbarrier.complete_tx"]
    assert [e["bytes"] for e in tx] == [512]
    assert not [e for e in events if e["kind"] == "mem" and e["agent"] == "tma" and e["space"] == "global"]
    # one byte more expected than the copy delivers: the phase never completes
    with pytest.raises(DeadlockError):
        run(gather_kernel(), [tm, 513, 0, 64, *rows])


def test_gather4_observed_on_the_bus_as_tma_async_accesses():
    A = np.arange(20 * 16, dtype=np.float32).reshape(20, 16)
    events = []
    tm, got, res = run_gather(A, 16, 0, (2, 19, 25, 7), swizzle="64B", observers=[events.append])
    base = tm.sim_allocation.base                      # A is not a launch argument: the map's own buffer
    tma = [e for e in events if e.kind == "mem" and e.agent == "tma"]
    loads = [e for e in tma if e.fields["op"] == "ld" and e.fields["space"] == "global"]
    stores = [e for e in tma if e.fields["op"] == "st"]
    assert all(e.fields["proxy"] == "async" for e in tma)
    # three in-bounds rows of 64 bytes each, read from exactly those rows of A
    runs = sorted((a, e.fields["size"]) for e in loads for a in e.fields["addrs"])
    assert [s for _, s in runs] == [64, 64, 64]
    assert sorted(a for a, _ in runs) == sorted(base + 64 * r for r in (2, 19, 7))
    assert sum(e.fields["size"] * len(e.fields["addrs"]) for e in stores) == 256   # the whole image, OOB too
    issues = [e for e in events if e.kind == "sync" and e.fields.get("op") == "async.issue"]
    assert len(issues) == 1 and "tile::gather4" in issues[0].fields["what"] and issues[0].fields["bytes"] == 256


def test_gather4_consumer_that_skips_the_wait_sees_stale_smem():
    """The engine decides when the rows land: reading SMEM right after the issue sees the old bytes."""
    A = np.full((8, 16), 3.0, np.float32)
    tm = TensorMap.tiled(A, (1, 16))
    issue = (G4.format(space="shared::cluster", mods="") + f" [%r2], [%rd2, {REG_COORDS}], [%r1];"
             "\n  ld.shared.f32 %r30, [%r2];\n  st.shared.f32 [%r2+1024], %r30;")
    ptx = gather_kernel(issue=issue)
    check_ptxas(ptx)
    res = run(ptx, [tm, 256, 0, 0, 0, 1, 2, 3])
    smem = res.simulation.ctas[0].smem.data
    assert smem[1024:1028].view(np.float32)[0] == 0.0             # read before the copy landed
    assert (smem[:256].view(np.float32) == 3.0).all()              # landed before the wait returned


def test_gather4_shared_cta_cta_group_1_and_cache_hint():
    A = np.arange(16 * 16, dtype=np.int32).reshape(16, 16)
    pro = "mov.b64 %rd9, 0x12F0000000000000;"         # an L2 cache policy (only a hint)
    issue = (G4.format(space="shared::cta", mods=".cta_group::1.L2::cache_hint")
             + f" [%r2], [%rd2, {REG_COORDS}], [%r1], %rd9;")
    ptx = gather_kernel(pre=pro, issue=issue)
    check_ptxas(ptx)
    tm = TensorMap.tiled(A, (1, 8))
    res = run(ptx, [tm, 128, 0, 8, 15, 0, 3, 3])
    assert np.array_equal(res.simulation.ctas[0].smem.data[:8192], model_smem(model_rows(A, 8, (15, 0, 3, 3), 8),
                                                                              0, "none", 8192))


# test_bulk_tensor.MC: CTA 1 issues (and skips the wait: it receives nothing), the others expect the image
MC = cluster_kernel("""fence.mbarrier_init.release.cluster;
  setp.ne.u32 %p3, %r9, 1;
  @%p3 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], %r3;""", """@%p3 bra WAIT;
  mov.u16 %rs1, 0xD;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes.multicast::cluster [%r2], [%rd2, {16, 5, -1, 0, 31}], [%r1], %rs1;""", "bra SKIP;")


def test_gather4_multicast_to_three_ctas():
    """CTA 1 issues one gather4 multicast to ranks 0, 2, 3 (ctaMask 0xD); each receives the image and its own
    complete-tx; CTA 1 itself receives nothing."""
    A = np.arange(32 * 48, dtype=np.float32).reshape(32, 48)
    tm = TensorMap.tiled(A, (1, 32), swizzle="128B")
    check_ptxas(MC)
    res = run(MC, [tm, 512], grid=(4, 1, 1), cluster=(4, 1, 1))
    exp = model_smem(model_rows(A, 16, (5, -1, 0, 31), 32), 0, "128B", 2048)
    for rank, cta in enumerate(res.simulation.ctas):
        got = cta.smem.data[:2048]
        assert np.array_equal(got, exp) if rank != 1 else not got.any()


# test_bulk_tensor.MC: each CTA of the pair gathers rows 4 * rank .. 4 * rank + 3; only the even CTA expects (both
# images) and waits
PAIR = cluster_kernel("""fence.mbarrier_init.release.cluster;
  setp.eq.u32 %p3, %r9, 0;
  shl.b32 %r4, %r3, 1;
  @%p3 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], %r4;""", """and.b32 %r5, %r1, 0xFEFFFFFF;
  shl.b32 %r6, %r9, 2;
  add.u32 %r7, %r6, 1;
  add.u32 %r8, %r6, 2;
  add.u32 %r10, %r6, 3;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes.cta_group::2 [%r2], [%rd2, {8, %r6, %r7, %r8, %r10}], [%r5];""", "@!%p3 bra SKIP;")


def test_gather4_cta_group_2_signals_the_even_peer():
    """Both CTAs of a pair gather their own 4 rows; both complete-tx go to the even CTA's barrier (CUTLASS's
    2-SM pattern, as for tile mode)."""
    A = np.arange(16 * 24, dtype=np.uint32).reshape(16, 24)
    tm = TensorMap.tiled(A, (1, 16), swizzle="64B")
    check_ptxas(PAIR)
    res = run(PAIR, [tm, 256], grid=(2, 1, 1), cluster=(2, 1, 1))
    for rank, cta in enumerate(res.simulation.ctas):
        rows = tuple(range(4 * rank, 4 * rank + 4))
        assert np.array_equal(cta.smem.data[:2048], model_smem(model_rows(A, 8, rows, 16), 0, "64B", 2048))
    assert res.simulation.ctas[0].mbarriers[0x400 + 2048].phase == 1   # keys are window offsets: user SMEM starts at 0x400 (tests/hw/golden_h100/address_layout.json)
    assert res.simulation.ctas[1].mbarriers[0x400 + 2048].phase == 0


# ---------------------------------------------------------------------------------------------- scatter4
@pytest.mark.parametrize("swizzle, cols", [c for c in SWIZZLES if c[0] != "128B_atom_32B_flip_8B"])  # loads only
@pytest.mark.parametrize("col, rows", [(0, (3, 31, 0, 17)), (48, (32, 5, 1000, 30)), (64, (1, 2, 3, 4))])
def test_scatter4_drops_oob_rows_and_columns(swizzle, cols, col, rows):
    T = (np.arange(32 * 72, dtype=np.float32) * -1).reshape(32, 72)
    img, res = run_scatter(T, cols, col, rows, swizzle=swizzle)
    assert np.array_equal(res.outputs[1], model_scatter(T, img, col, rows))


def test_scatter4_bf16_and_observed_writes():
    T = np.zeros((16, 64), ml_dtypes.bfloat16)
    events = []
    img, res = run_scatter(T, 32, 40, (15, 16, 0, 7), swizzle="64B", observers=[events.append])
    out = res.outputs[1]
    assert np.array_equal(out.view(np.uint16), model_scatter(T, img, 40, (15, 16, 0, 7)).view(np.uint16))
    writes = [e for e in events if e.kind == "mem" and e.agent == "tma" and e.fields["op"] == "st"
              and e.fields["space"] == "global"]
    assert sum(e.fields["size"] * len(e.fields["addrs"]) for e in writes) == 3 * 24 * 2   # 3 rows x 24 columns
    reads = [e for e in events if e.kind == "mem" and e.agent == "tma" and e.fields["op"] == "ld"
             and e.fields["space"] == "shared::cta"]
    assert sum(e.fields["size"] * len(e.fields["addrs"]) for e in reads) == 4 * 32 * 2     # the whole image


# ---------------------------------------------------------------------------------------------- faults
def located_fault(mode, run_fn, *args, err=MemoryFault, **kw):
    """``run_fn(*args, **kw)`` must stop with ``err`` located at the ``.{mode}`` instruction (file:line:col and
    warp); returns the error."""
    with pytest.raises(err) as ei:
        run_fn(*args, **kw)
    e = ei.value
    assert e.loc is not None and e.loc.line > 0 and e.loc.col > 0, str(e)
    assert mode in e.loc.text, str(e)
    assert e.where is not None and "warp 0" in e.where, str(e)
    return e


@pytest.mark.parametrize("dtype, col", [(ml_dtypes.bfloat16, 2), (np.float32, 3), (np.float32, -6)])
def test_fault_gather4_column_not_16_byte_aligned(dtype, col):
    A = np.zeros((16, 64), dtype)
    es = np.dtype(dtype).itemsize
    e = located_fault("tile::gather4", run_gather, A, 16 // es * 2, col, (0, 1, 2, 3))
    assert (f"column coordinate col = {col} (lane 0) starts each row at byte offset {col * es}" in e.message
            and "not a multiple of 16" in e.message and "illegal instruction (CUDA_ERROR_ILLEGAL_INSTRUCTION)"
            in e.message), e.message
    assert f"col a multiple of {16 // es}" in e.expected


def test_fault_scatter4_column_not_16_byte_aligned():
    T = np.zeros((16, 64), ml_dtypes.bfloat16)
    e = located_fault("tile::scatter4", run_scatter, T, 16, 12, (0, 1, 2, 3))
    assert re.search(r"col = 12 \(lane 0\) starts each row at byte offset 24.*\.tile::scatter4 the GPU stops the "
                     r"kernel with an illegal instruction", e.message), e.message


@pytest.mark.parametrize("col, rows, name, value", [(0, (0, 1, -2, 3), "row2", -2), (-8, (0, 1, 2, 3), "col", -8)])
def test_fault_scatter4_negative_coordinate(col, rows, name, value):
    T = np.zeros((16, 32), np.float32)
    e = located_fault("tile::scatter4", run_scatter, T, 16, col, rows)
    kind = "column" if name == "col" else "row"
    assert f"{kind} coordinate {name} = {value} (lane 0) is negative" in e.message, e.message
    assert "illegal instruction" in e.message and "§9.7.9.25.5.1" in e.expected


def test_gather4_negative_coordinates_are_fine():
    A = np.ones((16, 32), np.float32)
    _, got, _ = run_gather(A, 16, -16, (-1, -100, 0, 5))
    assert np.array_equal(got, model_smem(model_rows(A, -16, (-1, -100, 0, 5), 16), 0, "none", 8192))


@pytest.mark.parametrize("swizzle, cols, doff, need", [("none", 16, 0x8, 16), ("128B", 32, 0x24, 16),
                                                        ("128B_atom_64B", 32, 0x20, 64),
                                                        ("128B_atom_32B", 32, 0x10, 32)])
def test_fault_gather4_smem_destination_misaligned(swizzle, cols, doff, need):
    A = np.zeros((16, 32), np.float32)
    e = located_fault("tile::gather4", run_gather, A, cols, 0, (0, 1, 2, 3), swizzle=swizzle, doff=doff)
    assert f"destination [dstMem] = 0x{0x400 + doff:x} (lane 0) is not {need}-byte aligned" in e.message, e.message
    assert "misaligned address" in e.message
    if need > 16:
        assert f"(required by swizzle {swizzle})" in e.message


def test_fault_scatter4_smem_source_misaligned():
    T = np.zeros((16, 32), np.float32)
    issue = f"add.u32 %r2, %r2, 8;\n  {S4} [%rd2, {REG_COORDS}], [%r2];"
    e = located_fault("tile::scatter4", run_scatter, T, 16, 0, (0, 1, 2, 3), issue=issue)
    assert "source [srcMem] = 0x408 (lane 0) is not 16-byte aligned" in e.message, e.message


def test_fault_gather4_image_past_the_end_of_smem():
    A = np.zeros((16, 32), np.float32)
    e = located_fault("tile::gather4", run_gather, A, 32, 0, (0, 1, 2, 3), doff=0x300, smem=1024)
    assert re.search(r"the 512-byte box image at SMEM offset 0x700 .* past the end", e.message), e.message


@pytest.mark.parametrize("shape, box, err, msg, expected", [
    # a map whose rank is not the instruction's 2: tile mode's illegal-instruction fault
    ((4, 16, 32), (1, 1, 32), MemoryFault, "the instruction is .2d, but the tensor map (lane 0) has rank 3: the "
     "instruction's dimensionality differs from the map's rank and the GPU stops the kernel with an illegal "
     "instruction", "a tensor map of rank 2 for a .2d instruction"),
    ((16, 32), (4, 32), VerifyError, "the tensor map (lane 0) cannot be used with .{mode}: its boxDim[1] is 4, but "
     "each of the four boxes is one row", "box=(1, cols)"),
])
@pytest.mark.parametrize("kind", ["gather", "scatter"])
def test_fault_map_unfit_for_four_row_modes(shape, box, err, msg, expected, kind):
    A = np.zeros(shape, np.float32)
    tm = TensorMap.tiled(A, box)
    mode = "tile::gather4" if kind == "gather" else "tile::scatter4"
    if kind == "gather":
        args, ptx = [tm, 512, 0, 0, 0, 1, 2, 3], gather_kernel()
    else:
        args, ptx = [tm, A, np.zeros(4096, np.uint8), 512, 0, 0, 1, 2, 3], scatter_kernel()
    e = located_fault(mode, run, ptx, args, err=err)
    assert msg.format(mode=mode) in e.message, e.message
    assert expected in e.expected, e.expected


def test_tensormap_rows4_helpers():
    A = np.zeros((8, 64), ml_dtypes.bfloat16)
    tm = TensorMap.tiled(A, (1, 64), swizzle="128B")
    assert tm.rows4_problem() is None and tm.rows4_bytes() == 4 * 64 * 2 == 4 * tm.box_bytes()
    assert "boxDim[1] is 2" in TensorMap.tiled(A, (2, 64)).rows4_problem()
    assert "1-dimensional" in TensorMap.tiled(np.zeros(64, np.float32), (16,)).rows4_problem()


# ---------------------------------------------------------------------------------------------- decode (ptxas-level)
BAD_FORMS = [
    (G4.format(space="shared::cluster", mods="").replace(".2d.", ".3d.") + f" [%r2], [%rd2, {REG_COORDS}], [%r1];",
     VerifyError, r"\.3d cannot be combined with \.tile::gather4"),
    (G4.format(space="shared::cluster", mods="").replace(".2d.", ".1d.") + f" [%r2], [%rd2, {REG_COORDS}], [%r1];",
     VerifyError, r"\.1d cannot be combined with \.tile::gather4"),
    (G4.format(space="shared::cluster", mods="") + " [%r2], [%rd2, {%r10, %r11, %r12, %r13}], [%r1];",
     VerifyError, r"a \.tile::gather4 tensor copy takes 5 coordinates \{col, row0, row1, row2, row3\}, got 4"),
    (G4.format(space="shared::cta", mods="") + " [%r2], [%rd2, {%r10, %r11}], [%r1];",
     VerifyError, r"takes 5 coordinates .*got 2"),
    (S4 + " [%rd2, {%r10, %r11, %r12, %r13, %r14, %r15}], [%r2];",
     VerifyError, r"a \.tile::scatter4 tensor copy takes 5 coordinates .*got 6"),
    (S4.replace(".2d.", ".4d.") + f" [%rd2, {REG_COORDS}], [%r2];",
     VerifyError, r"\.4d cannot be combined with \.tile::scatter4"),
    (S4 + f" [%rd2, {REG_COORDS}], [%r2], %rd5;", VerifyError, r"takes 2 operands here, got 3"),
    (G4.format(space="shared::cluster", mods=".multicast::cluster") + f" [%r2], [%rd2, {REG_COORDS}], [%r1];",
     VerifyError, r"takes 4 operands here, got 3"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile::scatter4.mbarrier::complete_tx::bytes "
     f"[%r2], [%rd2, {REG_COORDS}], [%r1];", VerifyError, r"\.tile::scatter4 is a store mode"),
    (f"cp.async.bulk.tensor.2d.global.shared::cta.tile::gather4.bulk_group [%rd2, {REG_COORDS}], [%r2];",
     VerifyError, r"\.tile::gather4 is a load mode"),
]


@pytest.mark.parametrize("form, err, msg", BAD_FORMS)
def test_decode_diagnostics_located_and_ptxas_agrees(form, err, msg):
    ptx = gather_kernel(issue=form, wait=False)
    with pytest.raises(err, match=msg) as ei:
        run(ptx, [bytes(128), 0, 0, 0, 0, 0, 0, 0])
    e = ei.value
    line = ptx.splitlines().index(f"  {form}") + 1
    assert (e.loc.line, e.loc.col) == (line, 3), str(e)
    assert str(e).startswith(f"<ptx>:{line}:3: invalid PTX:")
    r = assemble(ptx, "sm_100a")
    assert r is None or r[0] != 0, "ptxas accepts a form tcsim rejects"


def test_reduce_scatter4_unsupported():
    form = ("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile::scatter4.bulk_group "
            f"[%rd2, {REG_COORDS}], [%r2];")
    ptx = gather_kernel(issue=form, wait=False)
    with pytest.raises(UnsupportedError, match=r"\.tile::scatter4 is not supported by tcsim") as ei:
        run(ptx, [bytes(128), 0, 0, 0, 0, 0, 0, 0])
    assert ei.value.loc is not None


def test_prefetch_gather4_checks_the_map():
    A = np.zeros((16, 32), np.float32)
    form = f"cp.async.bulk.prefetch.tensor.2d.L2.global.tile::gather4 [%rd2, {REG_COORDS}];"
    ptx = gather_kernel(issue=form, wait=False)
    check_ptxas(ptx)
    run(ptx, [TensorMap.tiled(A, (1, 32)), 0, 0, 0, 0, 1, 2, 3])
    with pytest.raises(VerifyError, match=r"cannot be used with \.tile::gather4: its boxDim\[1\] is 8"):
        run(ptx, [TensorMap.tiled(A, (8, 32)), 0, 0, 0, 0, 1, 2, 3])


# ---------------------------------------------------------------------------------------------- ptxas
@pytest.mark.parametrize("name", ["gather", "gather_cta", "gather_mc_cta2_hint", "scatter", "scatter_hint",
                                  "multicast", "pair"])
def test_kernels_here_assemble(name):
    kernels = {
        "gather": gather_kernel(),
        "gather_cta": gather_kernel(space="shared::cta", mods=".cta_group::1"),
        "gather_mc_cta2_hint": gather_kernel(issue=G4.format(space="shared::cluster",
                                                             mods=".multicast::cluster.cta_group::2.L2::cache_hint")
                                             + f" [%r2], [%rd2, {REG_COORDS}], [%r1], %rs1, %rd9;"),
        "scatter": scatter_kernel(),
        "scatter_hint": scatter_kernel(issue=f"{S4}.L2::cache_hint [%rd2, {REG_COORDS}], [%r2], %rd9;"),
        "multicast": MC,
        "pair": PAIR,
    }
    if assemble(HEAD, "sm_100a") is None:
        pytest.skip("ptxas not on PATH")
    check_ptxas(kernels[name])
    # and tcsim decodes every instruction of it
    from tcsim.cli import check_ptx_text
    assert check_ptx_text(kernels[name], f"{name}.ptx") == []

