"""Compile (or load from numba's cache) every compiled numerics kernel once: ``python -m tcsim.numerics.jit_warmup``
prints how long that took.  On a fresh checkout, run it once before a parallel test run so that the test
processes load the cache instead of each compiling the kernels (see :mod:`tcsim.numerics.jit`)."""
from __future__ import annotations

from .jit import kernels

__all__ = ["warm_up"]


def warm_up() -> bool:
    """Call every compiled kernel once on tiny operands (compiling it, or loading it from the cache); False when
    the kernels are off."""
    if kernels() is None:
        return False
    import numpy as np

    from . import fp
    from . import tensor_core as tc

    u32, u64 = np.zeros(4, np.uint32), np.zeros(4, np.uint64)
    fp.ffma("f32", u32, u32, u32)
    fp.ffma("f64", u64, u64, u64)
    fp.fadd("f32", u32, u32)
    fp.fmul("f32", u32, u32)
    z8 = np.zeros((8, 64), np.uint8)
    c = np.zeros((8, 8), np.uint32)
    tc.mma_block_scaled(z8, z8[:, :8].repeat(8, axis=0), c, np.full((8, 4), 0x38, np.uint8),
                        np.full((4, 8), 0x38, np.uint8), "e2m1", "e2m1", "ue4m3", 16,
                        tc.tc_params("sm_100a", "tcgen05", "e2m1", kind="mxf4nvf4"))
    tc.mma_block_scaled(z8[:, :32], z8[:4, :8].repeat(8, axis=0), c, np.full((8, 1), 127, np.uint8),
                        np.full((1, 8), 127, np.uint8), "e4m3", "e4m3", "ue8m0", 32,
                        tc.tc_params("sm_100a", "tcgen05", "e4m3", kind="mxf8f6f4"))
    p16 = tc.tc_params("sm_100a", "tcgen05", "f16")
    a16, b16 = np.zeros((8, 16), np.uint16), np.zeros((16, 8), np.uint16)
    tc.mma_float(a16, b16, c, "f16", "f16", "f32", p16)                 # the float64 kernel (mma_float_codes_f64)
    pa, pb = tc._code_params(a16, "f16"), tc._code_params(b16, "f16")
    kernels().mma_float_codes(pa[0], pb[0], tc._i64(c), pa[1], pb[1], 16, p16.frac_bits,    # the int64 one
                              *tc._acc_geometry("f32", p16))
    return True


if __name__ == "__main__":
    import time

    t, cpu = time.perf_counter(), time.process_time()
    on = warm_up()
    print(f"tcsim.numerics.jit_warmup: {'kernels ready' if on else 'compiled kernels off (no numba, or TCSIM_NUMBA=0)'} "
          f"in {time.perf_counter() - t:.1f} s ({time.process_time() - cpu:.1f} s CPU)")
