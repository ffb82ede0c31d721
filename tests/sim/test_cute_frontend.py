"""tcsim.cute: CuTe DSL programs written here, compiled by the DSL on the CPU for sm_100a / sm_90a, run through
``tcsim.cute`` and compared with numpy references computed from the inputs (integer-valued data, so the f32 results
are exact whatever the summation order).  Also: the launch shape and parameters the DSL's host code computed (read
from the recorded launch), dynamic layouts (shapes/strides as kernel parameters) over a strided view, several
launches in one program, save/replay without the DSL, and the diagnostics for bad input."""
from __future__ import annotations

import sys

import numpy as np
import pytest

cutlass = pytest.importorskip("cutlass")
cute = pytest.importorskip("cutlass.cute")

from cutlass.cute.nvgpu import cpasync, warpgroup  # noqa: E402
from cutlass.memory import SmemAllocator  # noqa: E402

from cutlass.base_dsl.typing import GridConstant  # noqa: E402
from cutlass.experimental.cuda.tensor_map import (TensorMap, TensorMapSwizzle,  # noqa: E402
                                                  create_tensor_map_tiled_from_view)

import tcsim.cute as tc  # noqa: E402
from tcsim.isa.errors import LaunchError  # noqa: E402
from tcsim.launch import Pointer, Struct  # noqa: E402

ARCHES = ("sm_100a", "sm_90a")
THIS = __file__


# ------------------------------------------------------------------------------------------ programs
@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    m, n = gA.shape
    if i < m * n:
        gC[i // n, i % n] = gA[i // n, i % n] + gB[i // n, i % n]


@cute.jit
def add(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    n = cute.size(mA)
    add_kernel(mA, mB, mC).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


@cute.kernel
def rowsum_kernel(gX: cute.Tensor, gY: cute.Tensor):
    """One warp per row: lanes stride over the columns, then a butterfly shuffle reduction."""
    lane, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    acc = cutlass.Float32(0.0)
    for j in cutlass.range(lane, gX.shape[1], 32):
        acc += gX[row, j]
    for s in cutlass.range_constexpr(5):
        acc += cute.arch.shuffle_sync_bfly(acc, offset=1 << s)
    if lane == 0:
        gY[row] = acc


@cute.jit
def rowsum(mX: cute.Tensor, mY: cute.Tensor):
    rowsum_kernel(mX, mY).launch(grid=(mX.shape[0], 1, 1), block=(32, 1, 1))


@cute.kernel
def scale_kernel(gX: cute.Tensor, gY: cute.Tensor, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 64 + tidx
    if i < cute.size(gX):
        gY[i] = gX[i] * alpha


@cute.jit
def add_then_scale(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, mD: cute.Tensor, alpha: cutlass.Float32):
    """Two launches: C = A + B (2-D), then D = alpha * C (1-D view of C): the second reads what the first wrote."""
    n = cute.size(mA)
    add_kernel(mA, mB, mC).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))
    flat = cute.make_tensor(mC.iterator, cute.make_layout(n))
    scale_kernel(flat, mD, alpha).launch(grid=((n + 63) // 64, 1, 1), block=(64, 1, 1))


@cute.jit
def broken(mA: cute.Tensor):
    add_kernel(mA, mA).launch(grid=(1, 1, 1), block=(32, 1, 1))    # add_kernel takes three tensors


TM, TN = 16, 64


@cute.kernel
def tma_copy_kernel(tma: cute.CopyAtom, mT: cute.Tensor, mO: cute.Tensor, s_layout: cute.ComposedLayout):
    """One (TM, TN) tile per CTA: TMA-loaded into (possibly swizzled) SMEM behind an mbarrier, then every thread
    copies elements out through the SMEM layout (so a wrong swizzle in the tensor map shows in the output)."""
    tidx, _, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    smem = SmemAllocator()
    bar = smem.allocate_array(cutlass.Int64, 1)
    sA = smem.allocate_tensor(element_type=mO.element_type, layout=s_layout.outer, byte_alignment=1024,
                              swizzle=s_layout.inner)
    gT = cute.local_tile(mT, (TM, TN), (bx, by))
    tAsA, tAgA = cpasync.tma_partition(tma, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2),
                                       cute.group_modes(gT, 0, 2))
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bar, TM * TN * mO.element_type.width // 8)
        cute.copy(tma, tAgA, tAsA, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    gO = cute.local_tile(mO, (TM, TN), (bx, by))
    for i in cutlass.range(tidx, TM * TN, 128):
        gO[i // TN, i % TN] = sA[i // TN, i % TN]


@cute.jit
def tma_copy(mA: cute.Tensor, mO: cute.Tensor, swizzle: cutlass.Constexpr):
    if cutlass.const_expr(swizzle == "none"):
        atom = cute.make_composed_layout(cute.make_swizzle(0, 4, 3), 0, cute.make_layout((8, TN), stride=(TN, 1)))
    else:
        kind = {"32B": warpgroup.SmemLayoutAtomKind.K_SW32, "64B": warpgroup.SmemLayoutAtomKind.K_SW64,
                "128B": warpgroup.SmemLayoutAtomKind.K_SW128}[swizzle]
        atom = warpgroup.make_smem_layout_atom(kind, mA.element_type)
    s_layout = cute.tile_to_shape(atom, (TM, TN), (0, 1))
    tma, tT = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA, s_layout, (TM, TN))
    grid = (mA.shape[0] // TM, mA.shape[1] // TN, 1)
    tma_copy_kernel(tma, tT, mO, s_layout).launch(grid=grid, block=(128, 1, 1))


@cute.kernel
def bump_kernel(desc: GridConstant[TensorMap], mO: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    mO[tidx] = mO[tidx] + 1.0


@cute.jit
def encode_map(mA: cute.Tensor, mO: cute.Tensor):
    """The experimental tensor-map API: the host code calls cuTensorMapEncodeTiled (the stand-in records it)."""
    desc = create_tensor_map_tiled_from_view(mA, box_dims=(16, 64), swizzle=TensorMapSwizzle.s128b)
    bump_kernel(desc, mO).launch(grid=(1, 1, 1), block=(32, 1, 1))


def _ints(rng, shape, lo=-50, hi=50):
    return rng.integers(lo, hi, shape).astype(np.float32)


# ------------------------------------------------------------------------------------------ results
@pytest.mark.parametrize("arch", ARCHES)
def test_elementwise_add(arch):
    rng = np.random.default_rng(1)
    a, b = _ints(rng, (20, 33)), _ints(rng, (20, 33))
    c = np.full_like(a, -7.0)
    run = tc.launch(add, a, b, c, arch=arch)
    np.testing.assert_array_equal(c, a + b)
    assert run.written == ["mC"]
    prep = run.prepared
    assert f".target {arch}" in prep.ptx
    ln = prep.launch
    # the DSL's host code computed the grid: ceil(660 / 128) = 6 CTAs of 128 threads
    assert ln.grid == (6, 1, 1) and ln.block == (128, 1, 1) and ln.dynamic_smem == 0
    # static layouts: each tensor is its base pointer, and a points at the caller's array's device copy
    assert all(isinstance(x, Pointer) for x in ln.args)
    assert ln.args[0].array.ctypes.data == a.ctypes.data


def test_reduction_over_a_strided_view_with_dynamic_layout():
    rng = np.random.default_rng(2)
    wide = _ints(rng, (7, 130))
    x = wide[:, 5:105]                          # 7 x 100 window, row stride 130 elements
    y = np.zeros(7, np.float32)
    prep = tc.prepare(rowsum, tc.tensor(x, dynamic=True), tc.tensor(y, dynamic=True), arch="sm_100a")
    ln = prep.launch
    assert ln.grid == (7, 1, 1) and ln.block == (32, 1, 1)
    # dynamic layout: pointer + shape (7, 100) + the row stride 130 travel in the parameter
    s = ln.args[0]
    assert isinstance(s, Struct) and isinstance(s.fields[0], Pointer)
    rest = b"".join(f for f in s.fields[1:])
    assert np.frombuffer(rest[:8], np.int32).tolist() == [7, 100]
    assert 130 in np.frombuffer(rest[8:16], np.int64).tolist() + np.frombuffer(rest[8:16], np.int32).tolist()
    run = prep.run()
    np.testing.assert_array_equal(y, x.sum(axis=1))
    assert run.written == ["mY"]
    np.testing.assert_array_equal(wide[:, 5:105], x)      # the input is untouched


@pytest.mark.parametrize("arch", ARCHES)
def test_reduction_static(arch):
    rng = np.random.default_rng(3)
    x = _ints(rng, (5, 77))
    y = np.zeros(5, np.float32)
    tc.launch(rowsum, x, y, arch=arch)
    np.testing.assert_array_equal(y, x.sum(axis=1))


def test_two_launches_and_a_scalar_parameter():
    rng = np.random.default_rng(4)
    a, b = _ints(rng, (8, 24)), _ints(rng, (8, 24))
    c, d = np.zeros_like(a), np.zeros(8 * 24, np.float32)
    run = tc.launch(add_then_scale, a, b, c, d, cutlass.Float32(0.5), arch="sm_90a")
    prep = run.prepared
    assert len(prep.launches) == 2 and len(run.results) == 2
    assert prep.launches[1].args[2] == np.float32(0.5)
    np.testing.assert_array_equal(c, a + b)
    np.testing.assert_array_equal(d, ((a + b) * np.float32(0.5)).reshape(-1))
    assert sorted(run.written) == ["mC", "mD"]
    with pytest.raises(LaunchError, match="made 2 launches"):
        prep.launch


def test_torch_tensors():
    """CPU torch tensors (f32, and bf16 which numpy cannot hand over through DLPack) are accepted and written."""
    torch = pytest.importorskip("torch")
    x = torch.arange(6 * 40, dtype=torch.float32).reshape(6, 40)
    y = torch.zeros(6)
    assert tc.launch(rowsum, x, y, arch="sm_90a").written == ["mY"]
    assert torch.equal(y, x.sum(1))
    a = torch.randint(-5, 5, (4, 32)).to(torch.bfloat16)
    b = torch.randint(-5, 5, (4, 32)).to(torch.bfloat16)
    c = torch.zeros(4, 32, dtype=torch.bfloat16)
    tc.launch(add, a, b, c)
    assert torch.equal(c, a + b)


def test_save_and_replay_without_the_dsl(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    a, b = _ints(rng, (20, 33)), _ints(rng, (20, 33))
    c = np.zeros_like(a)
    tc.prepare(add, a, b, c, arch="sm_100a").save(tmp_path / "add.ptx")
    for name in [m for m in sys.modules if m == "cutlass" or m.startswith("cutlass.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cutlass", None)
    a2, b2 = _ints(rng, (20, 33)), _ints(rng, (20, 33))
    c2 = np.zeros_like(a2)
    prep = tc.replay(tmp_path / "add.ptx", a2, b2, c2)
    assert prep.compiled is None and prep.record["arch"] == "sm_100a"
    run = prep.run()
    np.testing.assert_array_equal(c2, a2 + b2)
    assert run.written == ["mC"]
    with pytest.raises(LaunchError, match=r"argument mB: <f4\[20, 32\].*compiled for <f4\[20, 33\]"):
        tc.replay(tmp_path / "add.ptx", a2, b2[:, :32].copy(), c2)
    with pytest.raises(LaunchError, match="takes 3 arguments"):
        tc.replay(tmp_path / "add.ptx", a2, b2)
    with pytest.raises(LaunchError, match="tcsim.cute needs the CuTe DSL.*Expected: `pip install nvidia-cutlass-dsl"):
        tc.launch(add, a2, b2, c2)


@pytest.mark.parametrize("dtype,swizzle,arch", [
    ("float32", "none", "sm_90a"), ("float32", "128B", "sm_90a"), ("float16", "64B", "sm_90a"),
    ("bfloat16", "32B", "sm_100a"), ("int32", "none", "sm_100a"), ("uint8", "none", "sm_90a"),
    ("float32", "128B", "sm_100a")])
def test_tma_copy(dtype, swizzle, arch, tmp_path):
    """TMA through the tensor map the DSL's host code encoded inline (decoded by tcsim.cute): every tile lands in
    the output exactly; the map tcsim built has the array's shape, stride, the tile as box and the swizzle."""
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype)) if dtype == "bfloat16" else np.dtype(dtype)
    M, N = 48, 192
    a = (np.arange(M * N) % 251).astype(dt).reshape(M, N)
    o = np.zeros_like(a)
    prep = tc.prepare(tma_copy, tc.tensor(a, assumed_align=16), tc.tensor(o, assumed_align=16), swizzle, arch=arch)
    ln = prep.launch
    assert ln.grid == (M // TM, N // TN, 1)
    tm = ln.args[0].tensor_map
    inner = TN if swizzle == "none" else min(TN, int(swizzle[:-1]) // dt.itemsize)   # a row within the swizzle span
    assert (tm.global_dims, tm.global_strides, tm.box_dims, tm.swizzle) == ((N, M), (N * dt.itemsize,),
                                                                            (inner, TM), swizzle)
    prep.run()
    assert np.array_equal(o.view(np.uint8), a.view(np.uint8))
    if swizzle == "128B" and arch == "sm_90a":          # the saved launch replays the map over new arrays
        prep.save(tmp_path / "tma.ptx")
        a2, o2 = a[::-1].copy(), np.zeros_like(a)
        tc.replay(tmp_path / "tma.ptx", a2, o2, swizzle).run()
        assert np.array_equal(o2.view(np.uint8), a2.view(np.uint8))


def test_tma_decoder_refuses_what_it_has_not_seen():
    """A map with a bit set outside the fields read off the DSL's encodings (or rank 3, or another element type)
    is refused; the reading of a known map matches the parameters it was made from."""
    rng = np.random.default_rng(6)
    a = rng.integers(0, 100, (32, 128)).astype(np.float32)
    prep = tc.prepare(tma_copy, tc.tensor(a, assumed_align=16), tc.tensor(np.zeros_like(a), assumed_align=16),
                      "128B", arch="sm_90a")
    m = prep.record["launches"][0]["params"][0]["tensor_map"]
    assert (m["dtype"], m["dims"], m["strides"], m["swizzle"]) == ("FLOAT32", [128, 32], [512], 3)
    assert m["box"] == [32, 16]                     # 128B swizzle: a 128-byte (32 x f32) inner box row
    good = bytearray(64)
    good[0:8] = (0x1000).to_bytes(8, "little")
    good[8:16] = ((512 // 16) << 32 | 0b0100 << 16 | 3 << 13 | 7 << 7 | 1 << 4 | 0b0010).to_bytes(8, "little")
    good[32:40] = (31 << 32 | 127).to_bytes(8, "little")
    good[55], good[56] = 31, 15
    d = tc.decode_inline_tensor_map(bytes(good) + bytes(64))
    assert (d["dtype"], d["dims"], d["strides"], d["box"], d["swizzle"]) == ("FLOAT32", [128, 32], [512], [32, 16], 3)
    for byte, bit in ((8, 2), (9, 4), (10, 6), (16, 0), (41, 0), (57, 3)):    # tag, dtype 11, ..., box 2
        bad = bytearray(good)
        bad[byte] |= 1 << bit
        assert tc.decode_inline_tensor_map(bytes(bad) + bytes(64)) is None, (byte, bit)


def test_tma_tcgen05_gemm_of_the_fixture_generator():
    """The sm_100a TMA + tcgen05.mma GEMM of tests/fixtures/triton/cute_dsl/gen_cute_blackwell.py (bf16 operands
    through two inline tensor maps with 128B swizzle, a 2-stage mbarrier pipeline, TMEM accumulator) run on real
    arrays through tcsim.cute: exact against numpy on integer-valued bf16 data."""
    import importlib.util
    from pathlib import Path
    import ml_dtypes
    path = Path(THIS).resolve().parents[1] / "fixtures" / "triton" / "cute_dsl" / "gen_cute_blackwell.py"
    spec = importlib.util.spec_from_file_location("gen_cute_blackwell", path)
    g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g)
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (g.M, g.K)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-4, 5, (g.N, g.K)).astype(ml_dtypes.bfloat16)
    c = np.zeros((g.M, g.N), np.float32)
    run = tc.launch(g.gemm, *(tc.tensor(x, assumed_align=16) for x in (a, b, c)), arch="sm_100a")
    ln = run.prepared.launch
    assert ln.dynamic_smem == g.DYNAMIC_SMEM and ln.grid == (g.M // 128, g.N // 128, 1)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32).T)


def test_tensor_map_encoded_through_the_runtime():
    """A map the host code makes with ``cuTensorMapEncodeTiled`` reaches the kernel as a tcsim TensorMap with the
    call's arguments, over the caller's array."""
    a = np.zeros((32, 128), np.float16)
    o = np.arange(32, dtype=np.float32)
    prep = tc.prepare(encode_map, a, o, arch="sm_90a")
    tm = prep.launch.args[0].tensor_map
    assert (tm.dtype, tm.global_dims, tm.global_strides, tm.swizzle) == ("FLOAT16", (128, 32), (256,), "128B")
    assert sorted(tm.box_dims) == [16, 64]
    assert prep.launch.args[0].region.host.ctypes.data == a.ctypes.data
    prep.run()
    np.testing.assert_array_equal(o, np.arange(32) + 1)


# ------------------------------------------------------------------------------------------ diagnostics
def _def_line(fn) -> int:
    import inspect
    src, start = inspect.getsourcelines(inspect.unwrap(fn))
    return start + next(i for i, t in enumerate(src) if t.lstrip().startswith("def "))


def test_bad_input_is_a_located_error():
    a = np.zeros((4, 4), np.float32)
    with pytest.raises(LaunchError, match=r"cannot compile for arch='sm_80'.*one of sm_100a, sm_90a") as e:
        tc.launch(add, a, a, a, arch="sm_80")
    assert e.value.loc.file == THIS and e.value.loc.line == _def_line(add)
    with pytest.raises(LaunchError, match="needs a @cute.jit function"):
        tc.launch(np.add, a, a, a)
    with pytest.raises(LaunchError, match="argument mB: list is not a numpy array"):
        tc.launch(add, a, [1.0, 2.0], a)
    with pytest.raises(tc.CuteCompileError, match="could not compile 'broken' for sm_100a") as e:
        tc.launch(broken, a)
    assert e.value.loc.file == THIS and e.value.loc.line == _def_line(broken)
    ro = np.zeros((4, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(LaunchError, match="mC: the kernel wrote .* into a read-only array"):
        tc.launch(add, a, a + 1, ro)
