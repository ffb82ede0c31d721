"""Execution tiers: ``reference`` (the per-warp interpreter of :mod:`tcsim.engine`) and ``fast``.

The fast tier (:mod:`tcsim.fast.tier`) runs the same decoded program with the same warp processes, the same issue
model and the same event order, so that results, traces, findings and cycle counts are those of the reference tier;
what it changes is *how* the semantics of the hot instructions execute:

* **Lockstep groups.**  Register-only ALU instructions and loads from shared, global and parameter memory
  (:data:`tcsim.fast.batch.BATCHABLE`) are not executed when a warp issues them: the warp records them and goes on
  (its issue, timing and instruction counts are accounted at once, as in the reference tier).  The recorded
  instructions of all warps that stand at the same PC -- across warps and CTAs -- are then executed together, once,
  by the instruction's own decoded semantics over the lanes of all of them (:class:`tcsim.fast.batch.BatchCtx`:
  the register file is one flat ``(warps, 32)`` array per register, so a lockstep group's operands are one gather).
  They run before anything could see their effects: before any other instruction executes, before any event that
  is not a warp's issue is processed (an agent, a wake-up, the end of the run), and before the warp issues again;
  since they only write their own warp's registers and read memory that nothing wrote since they issued, the
  state every later step sees is the reference tier's.
* **Observation.**  An instruction is held back only while no observer selects the events it would publish
  (``inst`` and ``reg``; for loads ``mem``): with a tracer attached, instructions run at issue as in the reference
  tier; with the race detector (which selects ``mem`` and ``sync``) ALU instructions are still grouped.
* What a group cannot run together (a form whose semantics are not lane-parallel, an operand kind the group
  context does not offer, a fault) runs warp by warp with the reference semantics, in issue order; a form that
  once failed to run as a group is not grouped again.

Not grouped: kernels with device-function calls (per-function register files), instructions that block, jump,
exit, synchronise or publish, and anything under a seed or schedule perturbation is still exact (the process and
event order are unchanged) but grouped the same way.

Select the tier with ``run_launch(..., tier="fast")``, ``tcsim run --tier fast``, the ``TCSIM_TIER`` environment
variable or :func:`use_tier`; the default stays ``reference``.
"""
from __future__ import annotations

import contextlib
import os

TIERS = ("reference", "fast")

_default: list = []


def default_tier() -> str:
    """The tier a simulation gets when none is named: :func:`use_tier`'s, else ``$TCSIM_TIER``, else reference."""
    if _default:
        return _default[-1]
    t = os.environ.get("TCSIM_TIER", "").strip() or "reference"
    return check_tier(t)


def check_tier(tier: str) -> str:
    if tier not in TIERS:
        from tcsim.isa.errors import LaunchError
        raise LaunchError(f"unknown execution tier {tier!r}", expected=" or ".join(TIERS))
    return tier


@contextlib.contextmanager
def use_tier(tier: str):
    """Run the simulations started inside the ``with`` block on ``tier`` unless they name one (also in the worker
    processes started meanwhile, e.g. ``--explore N --jobs J``: ``$TCSIM_TIER`` says it to them)."""
    _default.append(check_tier(tier))
    old = os.environ.get("TCSIM_TIER")
    os.environ["TCSIM_TIER"] = tier
    try:
        yield
    finally:
        _default.pop()
        if old is None:
            os.environ.pop("TCSIM_TIER", None)
        else:
            os.environ["TCSIM_TIER"] = old


__all__ = ["TIERS", "check_tier", "default_tier", "use_tier"]
