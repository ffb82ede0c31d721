"""``tma_mma_gemm``: one CTA of 4 warps computes C[64,64] (f32) = A[64,64] (f16) @ B[64,64] (f16), the
operands staged into SMEM by two TMA tile loads (128B swizzle) that complete on one mbarrier, the fragments
read with ldmatrix and multiplied with mma.sync m16n8k16 (see ``tma_mma_gemm.ptx``).

A is row-major (K innermost); B is passed as B^T (N rows of K, K innermost: the "col" operand).  Launch
arguments: A, B^T, C (the output), then the tensor maps of A and B^T (the kernel reads A and B^T only through
the maps; the two buffers are arguments so that the GPU back end can encode the maps on device addresses).

Checked bit for bit against the tensor-core numerics model (sim/numerics/tensor_core.py, H100 parameters since
the PTX targets sm_90a), applied exactly as the kernel chains its instructions: for every 16x8 output tile,
four m16n8k16 products over K = 0-15, 16-31, 32-47, 48-63, each taking the previous one's result as C; and,
loosely, against a float64 numpy product.  On an H100 (hw back end) the kernel's C for seeds 0-2 was
byte-identical to the simulator's.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("TMA-fed CTA gemm: 4 warps, C[64,64] f32 = A[64,64] f16 @ B[64,64] f16 via 128B-swizzled TMA "
               "tile loads, one mbarrier, ldmatrix.x4 and mma.sync m16n8k16")
PTX = ptx_path("tma_mma_gemm.ptx")
KERNEL = "tma_mma_gemm_64x64x64"
M = N = K = 64
K_STEP = 16


def make_launch(seed: int = 0) -> Launch:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    bt = rng.standard_normal((N, K)).astype(np.float16)        # B^T: row n holds B[:, n]
    c = np.zeros((M, N), dtype=np.float32)
    tmap_a = TensorMap.tiled(a, box=(64, 64), swizzle="128B")
    tmap_b = TensorMap.tiled(bt, box=(64, 64), swizzle="128B")
    return Launch(ptx=PTX, kernel=KERNEL, grid=(1, 1, 1), block=(128, 1, 1), args=[a, bt, c, tmap_a, tmap_b],
                  name="tma_mma_gemm")


def operands(launch: Launch) -> tuple:
    """(A, B^T) of a launch."""
    return launch.args[0], launch.args[1]


def reference(launch: Launch) -> np.ndarray:
    """Bit-exact expected C: the numerics model chained over K in 16-wide steps, like the kernel."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    a, bt = operands(launch)
    a_bits = a.view(np.uint16)
    b_bits = np.ascontiguousarray(bt.T).view(np.uint16)         # B[k][n]
    params = tc_params("sm_90a", "mma.sync", "f16")
    c = np.zeros((M, N), dtype=np.uint32)
    for m0 in range(0, M, 16):
        for n0 in range(0, N, 8):
            acc = np.zeros((16, 8), dtype=np.uint32)
            for k0 in range(0, K, K_STEP):
                acc = mma_float(a_bits[m0:m0 + 16, k0:k0 + K_STEP], b_bits[k0:k0 + K_STEP, n0:n0 + 8], acc,
                                "f16", "f16", "f32", params)
            c[m0:m0 + 16, n0:n0 + 8] = np.asarray(acc, dtype=np.uint32)
    return c.view(np.float32)


def check(result, launch):
    got = result.outputs[2]
    want = reference(launch)
    a, bt = operands(launch)
    approx = a.astype(np.float64) @ bt.astype(np.float64).T
    if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
        diff = got.view(np.uint32) != want.view(np.uint32)
        r, c = np.argwhere(diff)[0]
        return False, (f"{int(diff.sum())} of {M * N} elements differ from the bit-exact tensor-core model "
                       f"(first at C[{r}][{c}]: got {got[r, c]!r}, want {want[r, c]!r})")
    err = float(np.abs(got - approx).max())
    return err < 5e-2, (f"C (64x64) equals the bit-exact H100 mma.sync model (4 chained k16 steps); "
                        f"max |C - float64 A@B| = {err:.2e}")


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
