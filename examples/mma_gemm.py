"""The seed ``gemm``: one warp, D[16,8] = A[16,16] @ B[16,8] (+ C if beta = 1) with one m16n8k16 mma.sync.

Checked bit for bit against the tensor-core numerics model (sim/numerics/tensor_core.py, H100 parameters
since the PTX targets sm_90a) and, loosely, against a float64 numpy product.  For seeds 0-2 (beta 0 and 1) that
model's D and the simulated D both equal the D an H100 produced (tests/golden/mma_gemm_*, checked by
tests/examples/test_examples.py), so the check is backed by hardware data, not only by the model.
"""
from __future__ import annotations

import numpy as np

from tcsim.launch import Launch
from ._common import example_main, ptx_path

DESCRIPTION = "seed gemm: one warp, 16x8x16 f16 mma.sync with f32 accumulate (D = A@B + beta*C)"
PTX = ptx_path("mma_gemm.ptx")


def make_launch(beta: int = 1, seed: int = 0) -> Launch:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d = np.zeros((16, 8), dtype=np.float32)
    return Launch(ptx=PTX, kernel="mma_gemm_16x8x16", grid=(1, 1, 1), block=(32, 1, 1),
                  args=[a, b, c, d, beta], signature=("f16", "f16", "f32", "f32", None))


def reference(launch: Launch) -> np.ndarray:
    """Bit-exact expected D from the numerics model."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    a, b, c, _, beta = launch.args
    c_used = c if beta else np.zeros_like(c)
    params = tc_params("sm_90a", "mma.sync", "f16")
    bits = mma_float(a.view(np.uint16), b.view(np.uint16), c_used.view(np.uint32), "f16", "f16", "f32", params)
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def check(result, launch):
    d = result.outputs[3]
    want = reference(launch)
    a, b, c, _, beta = launch.args
    approx = a.astype(np.float64) @ b.astype(np.float64) + (c if beta else 0)
    if not np.array_equal(d.view(np.uint32), want.view(np.uint32)):
        bad = int((d.view(np.uint32) != want.view(np.uint32)).sum())
        return False, f"{bad} of 128 elements differ from the bit-exact tensor-core model"
    err = float(np.abs(d - approx).max())
    return err < 1e-2, (f"D (16x8) equals the bit-exact H100 mma.sync model; max |D - float64 A@B"
                        f"{' + C' if beta else ''}| = {err:.2e}")


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
