"""Access to the compiled numerics kernels (:mod:`tcsim.numerics.jit_kernels`).

The pure numpy functions of :mod:`tcsim.numerics.fp` and :mod:`tcsim.numerics.tensor_core` are the reference
(the specification, and the tier a debugger steps through); where numba is installed their public entry points
run the compiled kernels instead, bit for bit the same (tests/numerics/test_jit.py).  numba is imported on first
use, not with tcsim (it costs ~0.5 s), and kernels are cached on disk (``cache=True``), so only the very first
use on a machine pays the compilation.

``TCSIM_NUMBA=0`` in the environment (read once, at the first use) turns the compiled kernels off: every entry
point then runs its reference -- for post-mortem debugging inside the numpy code, or to time the reference.
"""
from __future__ import annotations

import functools
import importlib.util
import os

__all__ = ["kernels", "enabled"]


@functools.lru_cache(maxsize=None)
def kernels():
    """The compiled kernels module, or None when numba is absent or ``TCSIM_NUMBA=0``."""
    if os.environ.get("TCSIM_NUMBA", "1").strip() in ("0", "false", "no", "off"):
        return None
    if importlib.util.find_spec("numba") is None:
        return None
    from . import jit_kernels
    return jit_kernels


def enabled() -> bool:
    """Whether the public numerics entry points run compiled kernels."""
    return kernels() is not None
