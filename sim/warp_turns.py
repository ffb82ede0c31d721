"""What the engine's warp loop and the fast tier's driver share (:mod:`tcsim.engine`, :mod:`tcsim.fast.tier`): the
divergent-loop turn rule's constants, the lowest live PC, and an instruction's source position from ``.loc``.

A warp whose lanes took different paths runs its lowest-PC group; after ``SPIN_LIMIT`` backward branches by that
group while other lanes wait, the waiting lanes get a turn of at most ``FOCUS_SLICE`` instructions (so a spin loop
polling for a flag its sibling lanes will set cannot starve them)."""
from __future__ import annotations

import numpy as np

SPIN_LIMIT = 64          # backward branches by the lowest-PC group before waiting lanes get a turn
FOCUS_SLICE = 512        # instructions such a turn may run


def pcs_min(pcs: np.ndarray, mask: np.ndarray) -> int:
    """The lowest PC among the lanes in ``mask``."""
    return int(pcs[mask].min())


def user_loc(ins) -> str | None:
    """``file:line:col`` of the CUDA/Triton source line ``ins`` came from (``.loc``), or None."""
    if ins.user_loc:
        f, l, c = ins.user_loc
        return f"{f}:{l}:{c}"
    return None
