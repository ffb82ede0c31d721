"""``gemm_async``: a Blackwell warpgroup GEMM on the 5th-generation tensor core (``tcgen05``), after the seed
``gemm_async`` (TMA-loaded A/B in SMEM, one elected thread issuing ``tcgen05.mma`` into tensor memory,
``tcgen05.commit`` to an mbarrier, the four warps reading the accumulator back with ``tcgen05.ld``).

D[M,N] (f32) = A[M,K] @ B[K,N] with A, B f16 or bf16 and K = 64 * k_stages.  A is row-major (K-major); B is
passed as B^T (N rows of K, K-major).  Per K stage the kernel TMA-loads a 128B-swizzled M x 64 tile of A and
an N x 64 tile of B^T, then issues four K=16 ``tcgen05.mma.cta_group::1.kind::f16`` into TMEM columns
[256, 256+N) of a 512-column allocation (see ``gemm_async.ptx`` for every step).  The default is the seed's
shape, M = N = 128, K = 3 x 64.  Launch arguments: A, B^T, D (the output), the tensor maps of A and B^T, the
32-bit instruction descriptor (built here with :class:`tcsim.isa.descriptors.InstrDescriptor`; the kernel reads M
and N out of it) and the number of K stages.

Checked two ways, both computed from the input arrays (never from simulator state):

1. Bit for bit against the tensor-core numerics oracle (:mod:`tcsim.numerics.tensor_core`, ``tc_params('sm_100a',
   'tcgen05', fmt, kind='f16')``), applied the way the kernel chains its instructions: D starts from +0 and each
   K=16 MMA takes the previous D as its accumulator That model is not the only witness: for every launch
   the tests run with normal inputs, tests/examples/test_tcgen05_examples.py also requires mmasim's D for the same
   launch (the second oracle, recorded in tests/golden/mmasim_oracle/replay/examples.npz), and the model's numerics
   replay mmasim's outputs on >= 10^5 random cases per tcgen05 form (tests/numerics/test_mmasim_replay.py).
2. Against an independent float64 numpy product of the decoded inputs: with ``values='int'`` (small integers:
   every product and partial sum is exact) it must be *equal*; with random normal inputs it must lie within the
   oracle's truncation bound 2^-14 * (|A| @ |B|), which any misplaced row, column or K slice would exceed.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from tcsim.isa.descriptors import InstrDescriptor
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("tcgen05 gemm_async (sm_100a): 4 warps, D[128,128] f32 = A[128,192] f16 @ B[192,128] f16; TMA "
               "(128B swizzle, expect_tx) -> SMEM, one thread issues 12 K=16 tcgen05.mma into TMEM columns "
               "[256,384), tcgen05.commit -> mbarrier, tcgen05.ld per warp quadrant")
PTX = ptx_path("gemm_async.ptx")
KERNEL = "gemm_async"
K_STAGE = 64                       # K per TMA stage (one 128-byte swizzle row of f16)
K_MMA = 16                         # K per tcgen05.mma kind::f16
MAX_STAGES = 3
D_COL = 256                        # D lives in TMEM columns [256, 256 + N)
DYNAMIC_SMEM = 1024 + 2 * MAX_STAGES * 16384
DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}

#: named variants (tests run every one): dtype, M, N, k_stages
VARIANTS = {
    "f16": dict(dtype="f16", m=128, n=128, k_stages=3),
    "bf16": dict(dtype="bf16", m=128, n=128, k_stages=3),
    "m128n64": dict(dtype="f16", m=128, n=64, k_stages=3),
    "m64n128_bf16": dict(dtype="bf16", m=64, n=128, k_stages=2),
    "m64n64": dict(dtype="f16", m=64, n=64, k_stages=1),
}


def instr_descriptor(dtype: str, m: int, n: int) -> InstrDescriptor:
    """The kind::f16 instruction descriptor: A, B ``dtype``, D f32, both K-major."""
    return InstrDescriptor.for_kind("f16", m, n, dtype, dtype, "f32")


def _values(rng, shape, values: str) -> np.ndarray:
    if values == "int":
        return rng.integers(-4, 5, shape).astype(np.float64)
    if values == "normal":
        return rng.standard_normal(shape)
    raise ValueError(f"values must be 'normal' or 'int', got {values!r}")


def make_launch(seed: int = 0, dtype: str = "f16", m: int = 128, n: int = 128, k_stages: int = 3,
                values: str = "normal", variant: str | None = None) -> Launch:
    """A launch of ``gemm_async``; ``variant`` (a key of :data:`VARIANTS`) overrides dtype/m/n/k_stages."""
    if variant is not None:
        v = VARIANTS[variant]
        dtype, m, n, k_stages = v["dtype"], v["m"], v["n"], v["k_stages"]
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if m not in (64, 128):
        raise ValueError(f"M must be 64 or 128 (cta_group::1 kind::f16), got {m}")
    step = 32 if m == 128 else 64                   # the kernel's tcgen05.ld column block
    if not (step <= n <= 128 and n % step == 0):
        raise ValueError(f"N = {n}: the kernel needs a multiple of {step} up to 128 for M = {m}")
    if not 1 <= k_stages <= MAX_STAGES:
        raise ValueError(f"k_stages must be 1..{MAX_STAGES}, got {k_stages}")
    rng = np.random.default_rng(seed)
    k = K_STAGE * k_stages
    dt = DTYPES[dtype]
    a = _values(rng, (m, k), values).astype(dt)
    bt = _values(rng, (n, k), values).astype(dt)            # B^T: row j holds column j of B
    d = np.zeros((m, n), dtype=np.float32)
    tmap_a = TensorMap.tiled(a, box=(m, K_STAGE), swizzle="128B")
    tmap_b = TensorMap.tiled(bt, box=(n, K_STAGE), swizzle="128B")
    idesc = instr_descriptor(dtype, m, n).encode()
    name = f"gemm_async_{dtype}_m{m}n{n}k{k}"
    return Launch(ptx=PTX, kernel=KERNEL, grid=(1, 1, 1), block=(128, 1, 1), dynamic_smem=DYNAMIC_SMEM,
                  args=[a, bt, d, tmap_a, tmap_b, idesc, k_stages], name=name)


def operands(launch: Launch):
    """(A, B^T, dtype name) of a launch."""
    a, bt = launch.args[0], launch.args[1]
    return a, bt, ("bf16" if a.dtype == np.dtype(ml_dtypes.bfloat16) else "f16")


def reference(launch: Launch) -> np.ndarray:
    """Bit-exact expected D (f32): the numerics oracle chained over K in 16-wide MMAs from D = +0, as issued."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    a, bt, fmt = operands(launch)
    a_bits = np.ascontiguousarray(a).view(np.uint16)
    b_bits = np.ascontiguousarray(bt.T).view(np.uint16)        # B[k][n]
    params = tc_params("sm_100a", "tcgen05", fmt, kind="f16")
    m, k = a.shape
    acc = np.zeros((m, bt.shape[0]), dtype=np.uint32)
    for k0 in range(0, k, K_MMA):
        acc = np.asarray(mma_float(a_bits[:, k0:k0 + K_MMA], b_bits[k0:k0 + K_MMA], acc, fmt, fmt, "f32", params),
                         dtype=np.uint32)
    return acc.view(np.float32)


def float64_product(launch: Launch) -> np.ndarray:
    a, bt, _ = operands(launch)
    return a.astype(np.float64) @ bt.astype(np.float64).T


def compare(got: np.ndarray, want: np.ndarray, a: np.ndarray, bt: np.ndarray, what: str):
    """(ok, message): bit-exact equality with the oracle, then the float64 layout check."""
    m, n = want.shape
    if got.shape != want.shape:
        return False, f"{what}: output shape {got.shape}, expected {want.shape}"
    diff = got.view(np.uint32) != want.view(np.uint32)
    if diff.any():
        r, c = np.argwhere(diff)[0]
        return False, (f"{what}: {int(diff.sum())} of {m * n} elements differ from the bit-exact tensor-core model "
                       f"(first at D[{r}][{c}]: got {got[r, c]!r}, want {want[r, c]!r})")
    a64, b64 = a.astype(np.float64), bt.astype(np.float64).T
    exact = a64 @ b64
    err = np.abs(got.astype(np.float64) - exact)
    integral = bool(np.all(a64 == np.round(a64)) and np.all(b64 == np.round(b64)) and np.abs(a64).max() <= 4
                    and np.abs(b64).max() <= 4)
    if integral:
        if err.max() != 0:
            r, c = np.unravel_index(int(err.argmax()), err.shape)
            return False, f"{what}: integer inputs but D[{r}][{c}] = {got[r, c]!r} != float64 {exact[r, c]!r}"
        return True, f"{what}: D equals the bit-exact model and, exactly, the float64 product (integer inputs)"
    bound = 2.0 ** -14 * (np.abs(a64) @ np.abs(b64)) + 1e-30
    if (err > bound).any():
        r, c = np.unravel_index(int((err / bound).argmax()), err.shape)
        return False, (f"{what}: D[{r}][{c}] = {got[r, c]!r} is {err[r, c]:.3e} from the float64 product "
                       f"{exact[r, c]!r} (bound {bound[r, c]:.3e}): a layout error")
    return True, (f"{what}: D equals the bit-exact model; max |D - float64 A@B| = {err.max():.2e} "
                  f"(within 2^-14 |A|@|B|)")


def check(result, launch):
    a, bt, fmt = operands(launch)
    want = reference(launch)
    m, k = a.shape
    n = bt.shape[0]
    return compare(result.outputs[2], want, a, bt, f"D[{m},{n}] f32 = A {fmt} @ B {fmt} (K = {k}, "
                                                    f"{k // K_MMA} chained K=16 tcgen05.mma)")


def demo_summary(result, launch) -> list[str]:
    """The decoded result, for ``tcsim demo``: the descriptors the kernel used, where D lived in TMEM, and the
    corners of D next to the float64 product."""
    from tcsim.isa.descriptors import SmemDescriptor

    a, bt, fmt = operands(launch)
    m, k = a.shape
    n = bt.shape[0]
    idesc = launch.args[5]
    sdesc = SmemDescriptor(start_address=0, lbo=16, sbo=1024, swizzle="128B")
    got = result.outputs[2]
    ref = float64_product(launch)
    layout = "layout D, row i at lane i" if m == 128 else "layout F, row i at lane 32(i/16) + i%16"
    lines = [f"  idesc 0x{idesc:08x} = {InstrDescriptor.decode(idesc).describe('f16')}",
             f"  A/B operands: {sdesc.describe().replace('start 0x00000', 'start sX[s] + 32k')}",
             f"  TMEM: D in columns [{D_COL}, {D_COL + n}) of a 512-column allocation ({layout}); "
             f"{k // K_MMA} tcgen05.mma of K=16 over {k // K_STAGE} TMA stage(s)"]
    for r, c in ((0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)):
        lines.append(f"  D[{r:3d}][{c:3d}] = {float(got[r, c]):+.7e}   (float64 A@B: {ref[r, c]:+.7e})")
    return lines


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
