"""``wgmma_pipeline_gemm``: a pipelined TMA + wgmma GEMM for Hopper (sm_90a), warp-specialised: a producer warp
streams 64-wide k-tiles of A and B^T into a 3-stage shared-memory ring with TMA (128B swizzle, ``full``
mbarriers with expect_tx), and the consumer warpgroup (warps 0-3) multiplies each stage with four
``wgmma.mma_async.m64n128k16.f32.f16.f16`` from SMEM descriptors, releasing a stage (``empty`` mbarriers, one
arrive per consumer warp) once ``wgmma.wait_group 1`` shows the MMAs reading it are complete.  See
``wgmma_pipeline_gemm.ptx``.

C[M,N] (f32) = A[M,K] (f16, row-major) @ B[K,N] (passed as B^T, K innermost); each CTA computes a 64 x 128 tile;
grid (N/128, M/64), 160 threads.  Launch arguments: A, B^T, C, the tensor maps of A (box 64x64) and B^T (box
128x64), K.

Checked bit for bit against the H100 wgmma numerics model (sim/numerics/tensor_core.py, ``tc_params('sm_90a',
'wgmma', 'f16')``) chained exactly as the kernel issues its MMAs (K in steps of 16, in order, from +0), and
loosely against numpy's float64 product.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("pipelined TMA + wgmma GEMM (Hopper): producer warp + consumer warpgroup, 3-stage mbarrier ring, "
               "C[64,256] f32 = A[64,256] f16 @ B[256,256] f16 with wgmma.mma_async m64n128k16")
PTX = ptx_path("wgmma_pipeline_gemm.ptx")
KERNEL = "wgmma_pipeline_gemm"
M, N, K = 64, 256, 256
K_STEP = 16


def make_launch(seed: int = 0, m: int = M, n: int = N, k: int = K) -> Launch:
    assert m % 64 == 0 and n % 128 == 0 and k % 64 == 0
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    bt = rng.standard_normal((n, k)).astype(np.float16)        # B^T: row n holds B[:, n]
    c = np.zeros((m, n), dtype=np.float32)
    tmap_a = TensorMap.tiled(a, box=(64, 64), swizzle="128B")
    tmap_b = TensorMap.tiled(bt, box=(128, 64), swizzle="128B")
    return Launch(ptx=PTX, kernel=KERNEL, grid=(n // 128, m // 64, 1), block=(160, 1, 1),
                  args=[a, bt, c, tmap_a, tmap_b, np.uint32(k)], name="wgmma_pipeline_gemm")


def operands(launch: Launch) -> tuple:
    return launch.args[0], launch.args[1]


def reference(launch: Launch) -> np.ndarray:
    """Bit-exact expected C: the H100 wgmma model chained over K in 16-wide steps from +0, like the kernel."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    a, bt = operands(launch)
    a_bits = a.view(np.uint16)
    b_bits = np.ascontiguousarray(bt.T).view(np.uint16)
    params = tc_params("sm_90a", "wgmma", "f16")
    acc = np.zeros((a.shape[0], bt.shape[0]), dtype=np.uint32)
    for k0 in range(0, a.shape[1], K_STEP):
        acc = mma_float(a_bits[:, k0:k0 + K_STEP], b_bits[k0:k0 + K_STEP], acc, "f16", "f16", "f32", params)
    return np.asarray(acc, dtype=np.uint32).view(np.float32)


def check(result, launch):
    got = result.outputs[2]
    want = reference(launch)
    a, bt = operands(launch)
    approx = a.astype(np.float64) @ bt.astype(np.float64).T
    if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
        diff = got.view(np.uint32) != want.view(np.uint32)
        r, c = np.argwhere(diff)[0]
        return False, (f"{int(diff.sum())} of {got.size} elements differ from the bit-exact wgmma model "
                       f"(first at C[{r}][{c}]: got {got[r, c]!r}, want {want[r, c]!r})")
    err = float(np.abs(got - approx).max())
    return err < 5e-2, (f"C {got.shape} equals the bit-exact H100 wgmma model ({a.shape[1] // K_STEP} chained "
                        f"k16 steps); max |C - float64 A@B| = {err:.2e}")


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
