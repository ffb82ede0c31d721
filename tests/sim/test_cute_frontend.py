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
