"""``tcgen05_pipeline_gemm``: a multi-CTA Blackwell (sm_100a) GEMM, D[M,N] (f32) = A[M,K] @ B[K,N] (f16 or bf16),
each CTA computing one 128 x BN tile of D through a 2-slot ring: a producer thread TMA-loads the K stages (128B
swizzle, ``mbarrier.arrive.expect_tx`` on the slot's 'full' barrier, waiting on its 'empty' barrier before reusing
it), an MMA-issuer thread waits for each stage and issues four K=16 ``tcgen05.mma.cta_group::1.kind::f16`` into
tensor memory, committing each stage back to the slot's 'empty' barrier and the last one to 'done', and all four
warps read the accumulator back with ``tcgen05.ld.32x32b.x32`` (see ``tcgen05_pipeline_gemm.ptx`` for every step).

The default is issue 18's benchmark shape: M, N, K = 256, 512, 256, BN = 256 (grid 2 x 2, four K stages through
the two slots, so the producer laps the ring and waits on 'empty').  A is row-major (K-major); B is passed as B^T
(N rows of K, K-major).  Launch arguments: A, B^T, D, the tensor maps of A and B^T, the 32-bit instruction
descriptor (M 128, N BN; the kernel reads BN out of it), the number of K stages and D's row length.

Checked from the input arrays only (never from simulator state):

1. Against an independent float64 numpy product: with ``values='int'`` (integers in [-4, 4]: every product and
   partial sum is exact in f32) D must *equal* A @ B; with normal values every element must lie within 2^-14
   (|A| @ |B|) of it, which any misplaced row, column, tile or K stage would exceed.
2. Bit for bit against the tensor-core numerics oracle (:mod:`tcsim.numerics.tensor_core`, ``tc_params('sm_100a',
   'tcgen05', fmt, kind='f16')``) applied the way the kernel chains its MMAs: from D = +0, one K=16 MMA after
   the other.

Run: ``python -m tcsim.examples.tcgen05_pipeline_gemm [--seed N]`` or ``tcsim run examples/tcgen05_pipeline_gemm.py``.
The GPU back end needs an sm_100a GPU.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from tcsim.isa.descriptors import InstrDescriptor
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("tcgen05 pipelined GEMM (sm_100a): D[256,512] f32 = A[256,256] f16 @ B[256,512] f16 on a 2 x 2 grid "
               "of 128x256 tiles; TMA (128B swizzle) into a 2-slot full/empty mbarrier ring, one thread issuing "
               "K=16 tcgen05.mma into TMEM, tcgen05.commit per slot, tcgen05.ld epilogue")
PTX = ptx_path("tcgen05_pipeline_gemm.ptx")
KERNEL = "tcgen05_pipeline_gemm"
BM = 128                           # rows per CTA (the MMA's M)
BNS = (128, 256)
K_STAGE = 64                       # K per TMA stage (one 128-byte swizzle row of f16)
K_MMA = 16                         # K per tcgen05.mma kind::f16
DYNAMIC_SMEM = 1024 + 2 * 16384 + 2 * 32768
DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}

#: named variants (the tests run every one)
VARIANTS = {
    "m256n512k256": dict(dtype="f16", m=256, n=512, k_stages=4, bn=256),
    "bf16_m128n256k192_bn128": dict(dtype="bf16", m=128, n=256, k_stages=3, bn=128),
    "m128n256k64": dict(dtype="f16", m=128, n=256, k_stages=1, bn=256),
}


def instr_descriptor(dtype: str, bn: int) -> InstrDescriptor:
    """The kind::f16 instruction descriptor: M 128, N ``bn``, A = B = ``dtype``, D f32, both K-major."""
    return InstrDescriptor.for_kind("f16", BM, bn, dtype, dtype, "f32")


def _values(rng, shape, values: str) -> np.ndarray:
    if values == "int":
        return rng.integers(-4, 5, shape).astype(np.float64)
    if values == "normal":
        return rng.standard_normal(shape)
    raise ValueError(f"values must be 'normal' or 'int', got {values!r}")


def make_launch(seed: int = 0, dtype: str = "f16", m: int = 256, n: int = 512, k_stages: int = 4, bn: int = 256,
                values: str = "normal", variant: str | None = None) -> Launch:
    """A launch of ``tcgen05_pipeline_gemm``; ``variant`` (a key of :data:`VARIANTS`) overrides the shape."""
    if variant is not None:
        v = VARIANTS[variant]
        dtype, m, n, k_stages, bn = v["dtype"], v["m"], v["n"], v["k_stages"], v["bn"]
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if bn not in BNS:
        raise ValueError(f"BN must be one of {BNS}, got {bn}")
    if m < BM or m % BM or n < bn or n % bn:
        raise ValueError(f"M = {m} must be a positive multiple of {BM} and N = {n} of BN = {bn}")
    if k_stages < 1:
        raise ValueError(f"k_stages must be >= 1, got {k_stages}")
    rng = np.random.default_rng(seed)
    k = K_STAGE * k_stages
    dt = DTYPES[dtype]
    a = _values(rng, (m, k), values).astype(dt)
    bt = _values(rng, (n, k), values).astype(dt)            # B^T: row j holds column j of B
    d = np.zeros((m, n), dtype=np.float32)
    tmap_a = TensorMap.tiled(a, box=(BM, K_STAGE), swizzle="128B")
    tmap_b = TensorMap.tiled(bt, box=(bn, K_STAGE), swizzle="128B")
    idesc = instr_descriptor(dtype, bn).encode()
    return Launch(ptx=PTX, kernel=KERNEL, grid=(n // bn, m // BM, 1), block=(128, 1, 1), dynamic_smem=DYNAMIC_SMEM,
                  args=[a, bt, d, tmap_a, tmap_b, idesc, k_stages, n],
                  name=f"tcgen05_pipeline_gemm_{dtype}_m{m}n{n}k{k}_bn{bn}")


def operands(launch: Launch):
    """(A, B^T, dtype name) of a launch."""
    a, bt = launch.args[0], launch.args[1]
    return a, bt, ("bf16" if a.dtype == np.dtype(ml_dtypes.bfloat16) else "f16")


def float64_product(launch: Launch) -> np.ndarray:
    """The independent reference: A @ B in float64 numpy from the decoded inputs."""
    a, bt, _ = operands(launch)
    return a.astype(np.float64) @ bt.astype(np.float64).T


def oracle(launch: Launch) -> np.ndarray:
    """Bit-exact expected D (f32): the numerics oracle chained over K in 16-wide MMAs from D = +0, as issued (every
    CTA's tile is a slice of the whole product: rows and columns never mix across tiles)."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    a, bt, fmt = operands(launch)
    a_bits = np.ascontiguousarray(a).view(np.uint16)
    b_bits = np.ascontiguousarray(bt.T).view(np.uint16)        # B[k][n]
    params = tc_params("sm_100a", "tcgen05", fmt, kind="f16")
    acc = np.zeros((a.shape[0], bt.shape[0]), dtype=np.uint32)
    for k0 in range(0, a.shape[1], K_MMA):
        acc = np.asarray(mma_float(a_bits[:, k0:k0 + K_MMA], b_bits[k0:k0 + K_MMA], acc, fmt, fmt, "f32", params),
                         dtype=np.uint32)
    return acc.view(np.float32)


def compare(got: np.ndarray, launch: Launch, what: str):
    """(ok, message): the float64 check (equality for integer inputs, else the truncation bound), then bit-exact
    equality with the oracle."""
    a, bt, _ = operands(launch)
    exact = float64_product(launch)
    if got.shape != exact.shape:
        return False, f"{what}: output shape {got.shape}, expected {exact.shape}"
    a64, b64 = a.astype(np.float64), bt.astype(np.float64).T
    err = np.abs(got.astype(np.float64) - exact)
    integral = bool(np.all(a64 == np.round(a64)) and np.all(b64 == np.round(b64)) and np.abs(a64).max() <= 4
                    and np.abs(b64).max() <= 4)
    if integral:
        if err.max() != 0:
            r, c = np.unravel_index(int(err.argmax()), err.shape)
            return False, f"{what}: integer inputs but D[{r}][{c}] = {got[r, c]!r} != float64 {exact[r, c]!r}"
    else:
        bound = 2.0 ** -14 * (np.abs(a64) @ np.abs(b64)) + 1e-30
        if (err > bound).any():
            r, c = np.unravel_index(int((err / bound).argmax()), err.shape)
            return False, (f"{what}: D[{r}][{c}] = {got[r, c]!r} is {err[r, c]:.3e} from the float64 product "
                           f"{exact[r, c]!r} (bound {bound[r, c]:.3e}): a layout error")
    want = oracle(launch)
    diff = got.view(np.uint32) != want.view(np.uint32)
    if diff.any():
        r, c = np.argwhere(diff)[0]
        return False, (f"{what}: {int(diff.sum())} of {diff.size} elements differ from the bit-exact tensor-core "
                       f"model (first at D[{r}][{c}]: got {got[r, c]!r}, want {want[r, c]!r})")
    how = "equals the float64 product (integer inputs)" if integral else \
        f"is within 2^-14 |A|@|B| of the float64 product (max error {err.max():.2e})"
    return True, f"{what}: D {how} and equals the bit-exact tensor-core model"


def check(result, launch):
    a, bt, fmt = operands(launch)
    m, k = a.shape
    n = bt.shape[0]
    grid = launch.grid
    return compare(result.outputs[2], launch, f"D[{m},{n}] f32 = A {fmt} @ B {fmt} (K = {k}; {grid[0]}x{grid[1]} "
                                              f"CTAs, {k // K_MMA} chained K=16 tcgen05.mma each)")


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
