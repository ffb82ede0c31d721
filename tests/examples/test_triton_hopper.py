"""Real Triton output for Hopper, executed: ``tests/fixtures/triton/matmul_128x128x64.sm_90a.ptx`` and
``matmul_tma_host_desc.sm_90a.ptx`` (Triton 3.9.0, ``gen_triton_ptx.py``: ``tl.dot`` lowered to
``wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16``, four per 64-wide K block, with ``wgmma.fence`` /
``commit_group`` / ``wait_group``), launched the way Triton's launcher does (4 warps, the two hidden trailing
scratch pointers null, a host ``TensorDescriptor`` expanded into (CUtensorMap, shape as i32, strides as i64)).

Reference, from the inputs only: the H100 wgmma numerics oracle (:func:`tcsim.numerics.tensor_core.mma_float` with
``tc_params('sm_90a', 'wgmma', 'f16')``) chained over K in steps of 16 from +0 (the PTX's MMAs, in K order), then
rounded to f16 (``cvt.rn.f16x2.f32``); numpy's float64 product bounds it independently (a layout check).  Both
launches must finish with zero race-detector findings, timing off and on.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch, run_launch
from tcsim.numerics.tensor_core import mma_float, tc_params

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "triton"


def oracle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """f16 C = A[M,K] @ B[K,N] as the kernels compute it (module docstring)."""
    params = tc_params("sm_90a", "wgmma", "f16")
    acc = np.zeros((a.shape[0], b.shape[1]), np.uint32)
    for k0 in range(0, a.shape[1], 16):
        acc = mma_float(a[:, k0:k0 + 16].view(np.uint16), np.ascontiguousarray(b[k0:k0 + 16]).view(np.uint16), acc,
                        "f16", "f16", "f32", params)
    return acc.view(np.float32).astype(np.float16)


def _check(out, a, b):
    ref = oracle(a, b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) * 2.0 ** -10 + 2.0 ** -14
    assert (np.abs(out.astype(np.float64) - exact) <= bound).all()
    np.testing.assert_array_equal(out.view(np.uint16), ref.view(np.uint16))


def pointer_launch(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    grid = (-(-M // 128), -(-N // 128), 1)
    launch = Launch(FIX / "matmul_128x128x64.sm_90a.ptx", grid=grid, block=(128, 1, 1), dynamic_smem=3 * 32768,
                    args=[a, b, c, np.int32(M), np.int32(N), np.int32(K), np.int32(K), np.int32(N), np.int32(N), 0, 0],
                    name="matmul_128x128x64.sm_90a")
    return launch, a, b


def tma_launch(M, N, K, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    bt = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)

    def tm(arr):
        return TensorMap.tiled(arr, box=(128, 64), swizzle="128B", l2_promotion="128B", oob_fill="zero",
                               dtype="FLOAT16")
    args = [tm(a), M, K, K, 1, tm(bt), N, K, K, 1, tm(c), M, N, N, 1, K, 0, 0]
    launch = Launch(FIX / "matmul_tma_host_desc.sm_90a.ptx", grid=(M // 128, N // 128, 1), block=(128, 1, 1),
                    dynamic_smem=160 * 1024, args=args, name="matmul_tma_host_desc.sm_90a")
    return launch, a, bt


@pytest.mark.parametrize("timing", [False, True])
def test_pointer_matmul(timing):
    launch, a, b = pointer_launch(128, 128, 160)        # K = 160: a masked last K block
    r = run_launch(launch, timing=timing)
    assert not r.findings, [f.message for f in r.findings]
    _check(r.outputs[2], a, b)


@pytest.mark.parametrize("timing", [False, True])
def test_tma_matmul(timing):
    launch, a, bt = tma_launch(128, 128, 192)
    r = run_launch(launch, timing=timing)
    assert not r.findings, [f.message for f in r.findings]
    out = launch.args[10].sim_allocation.data.view(np.float16).reshape(128, 128)
    _check(out, a, np.ascontiguousarray(bt.T))


def test_negative_control_transposed_b():
    """Feeding B's transpose must fail the comparison (the check can fail)."""
    launch, a, b = pointer_launch(128, 128, 128, seed=3)
    r = run_launch(launch)
    with pytest.raises(AssertionError):
        _check(r.outputs[2], a, np.ascontiguousarray(b.T))


def test_cli_check_passes():
    from tcsim.cli import main
    for f in ("matmul_128x128x64.sm_90a.ptx", "matmul_tma_host_desc.sm_90a.ptx"):
        assert main(["check", str(FIX / f)]) == 0
