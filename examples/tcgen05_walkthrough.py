"""``tcgen05_walkthrough``: the tcgen05.mma walkthrough seed as a kernel -- one 64 x 128 x 16 bf16
``tcgen05.mma.cta_group::1.kind::f16.collector::a::fill`` with an f32 accumulator in tensor memory, A (passed
transposed: an MN-major operand, 128B swizzle) and B (K-major, 32B swizzle) TMA-loaded into SMEM and named by
shared-memory descriptors, the M = 64 data-path layout (F) for the accumulator, written with ``tcgen05.st`` and
read back with ``tcgen05.ld.16x32bx2`` (see ``tcgen05_walkthrough.ptx``).

D[64,128] (f32) = A[64,16] @ B[16,128] + C (``accumulate=True``: C is stored into TMEM first and the MMA runs
with enable-input-d) or A @ B (``accumulate=False``).  Launch arguments: A^T (16 x 64 bf16), B^T (128 x 16
bf16), C, D (the output), the tensor maps of A^T and B^T, and ``acc_in``.

The seed calls 0xC1 the "kind word"; :func:`kind_word_report` decodes it with
:class:`tcsim.isa.descriptors.InstrDescriptor` -- as a PTX instruction descriptor it is not valid (M 0, N 0, reserved
bit 6) -- and shows the descriptor the kernel really uses, 0x04208490; ``check`` prints both.

Checked like ``gemm_async``, from the input arrays only: bit for bit against the numerics oracle
(``tc_params('sm_100a', 'tcgen05', 'bf16', kind='f16')``, one K=16 block with C as the accumulator input), and
against a float64 ``A @ B + C`` (exactly, for ``values='int'``; otherwise within 2^-14 (|A| @ |B| + |C|)).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from tcsim.isa.descriptors import InstrDescriptor
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("tcgen05.mma walkthrough (sm_100a): one 64x128x16 bf16 MMA, f32 accumulator in TMEM (layout F), "
               "collector::a::fill, A MN-major / B K-major via SMEM descriptors, C in via tcgen05.st, D out via "
               "tcgen05.ld.16x32bx2")
PTX = ptx_path("tcgen05_walkthrough.ptx")
KERNEL = "tcgen05_walkthrough_m64n128k16"
M, N, K = 64, 128, 16
#: the seed's 9-bit "kind word" (mma_kind f16 = 3 in bits 6-8, cta_group 1 in bits 0-1)
SEED_KIND_WORD = 0xC1
#: the Table 42 instruction descriptor the kernel passes (an immediate in the PTX)
IDESC = 0x04208490


def instr_descriptor() -> InstrDescriptor:
    """M 64, N 128, A/B bf16 (A MN-major, B K-major), D f32."""
    return InstrDescriptor.for_kind("f16", M, N, "bf16", "bf16", "f32", a_major=1)


def kind_word_report() -> str:
    seed = InstrDescriptor.decode(SEED_KIND_WORD)
    ok = seed.m != 0 and seed.n != 0 and not seed.reserved
    used = InstrDescriptor.decode(IDESC)
    return (f"seed kind word 0x{SEED_KIND_WORD:02X} read as a PTX instruction descriptor: {seed.describe('f16')}"
            f"{'' if ok else ' -- not a valid descriptor (it is the compiler-internal kind/cta_group word)'}; "
            f"the kernel uses idesc 0x{IDESC:08X}: {used.describe('f16')}")


def _values(rng, shape, values: str, scale: float = 1.0) -> np.ndarray:
    if values == "int":
        return rng.integers(-4, 5, shape).astype(np.float64)
    if values == "normal":
        return rng.standard_normal(shape) * scale
    raise ValueError(f"values must be 'normal' or 'int', got {values!r}")


def make_launch(seed: int = 0, accumulate: bool = True, values: str = "normal") -> Launch:
    rng = np.random.default_rng(seed)
    a = _values(rng, (M, K), values).astype(ml_dtypes.bfloat16)
    b = _values(rng, (K, N), values).astype(ml_dtypes.bfloat16)
    c = _values(rng, (M, N), values, scale=4.0).astype(np.float32)
    at = np.ascontiguousarray(a.T)                  # A^T: 16 rows of 64, M innermost (MN-major A)
    bt = np.ascontiguousarray(b.T)                  # B^T: 128 rows of 16, K innermost (K-major B)
    d = np.zeros((M, N), dtype=np.float32)
    tmap_a = TensorMap.tiled(at, box=(K, M), swizzle="128B")
    tmap_b = TensorMap.tiled(bt, box=(N, K), swizzle="32B")
    return Launch(ptx=PTX, kernel=KERNEL, grid=(1, 1, 1), block=(128, 1, 1),
                  args=[at, bt, c, d, tmap_a, tmap_b, int(bool(accumulate))],
                  name=f"tcgen05_walkthrough{'_acc' if accumulate else ''}")


def operands(launch: Launch):
    """(A (64x16), B (16x128), C or None) of a launch, as the logical matrices."""
    at, bt, c = launch.args[0], launch.args[1], launch.args[2]
    return at.T, bt.T, (c if launch.args[6] else None)


def reference(launch: Launch) -> np.ndarray:
    """Bit-exact expected D: the numerics oracle for one K=16 block with C (or +0) as the accumulator input."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    a, b, c = operands(launch)
    c_bits = np.zeros((M, N), np.uint32) if c is None else np.ascontiguousarray(c).view(np.uint32)
    bits = mma_float(np.ascontiguousarray(a).view(np.uint16), np.ascontiguousarray(b).view(np.uint16), c_bits,
                     "bf16", "bf16", "f32", tc_params("sm_100a", "tcgen05", "bf16", kind="f16"))
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def check(result, launch):
    got = result.outputs[3]
    want = reference(launch)
    a, b, c = operands(launch)
    what = f"D[64,128] f32 = A bf16 @ B bf16{' + C' if c is not None else ''} (one K=16 tcgen05.mma, layout F)"
    diff = got.view(np.uint32) != want.view(np.uint32)
    if diff.any():
        r, col = np.argwhere(diff)[0]
        return False, (f"{what}: {int(diff.sum())} of {M * N} elements differ from the bit-exact tensor-core model "
                       f"(first at D[{r}][{col}]: got {got[r, col]!r}, want {want[r, col]!r})")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    c64 = np.zeros((M, N)) if c is None else c.astype(np.float64)
    exact = a64 @ b64 + c64
    err = np.abs(got.astype(np.float64) - exact)
    ints = all(np.all(x == np.round(x)) and np.abs(x).max() <= 4 for x in (a64, b64, c64))
    if ints:
        if err.max() != 0:
            r, col = np.unravel_index(int(err.argmax()), err.shape)
            return False, f"{what}: integer inputs but D[{r}][{col}] = {got[r, col]!r} != float64 {exact[r, col]!r}"
        tail = " and, exactly, the float64 product (integer inputs)"
    else:
        bound = 2.0 ** -14 * (np.abs(a64) @ np.abs(b64) + np.abs(c64)) + 1e-30
        if (err > bound).any():
            r, col = np.unravel_index(int((err / bound).argmax()), err.shape)
            return False, (f"{what}: D[{r}][{col}] = {got[r, col]!r} is {err[r, col]:.3e} from float64 "
                           f"{exact[r, col]!r} (bound {bound[r, col]:.3e}): a layout error")
        tail = f"; max |D - float64 A@B{' + C' if c is not None else ''}| = {err.max():.2e}"
    return True, f"{what}: D equals the bit-exact model{tail}. {kind_word_report()}"


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
