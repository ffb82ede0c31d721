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
* **Lockstep supersteps** (:mod:`tcsim.fast.lockstep`; timing off, no observer, no schedule perturbation or
  instruction budget).  When a gang of uniform warps -- across warps and CTAs -- stands at one PC and nothing else
  is queued for the next cycles, those cycles are known: every member issues one instruction per cycle.  They run
  one instruction at a time for the whole gang (ALU and loads over the group, plain branches whose lanes agree,
  stores in the reference's lane and warp order, ``bar.sync`` of whole CTAs completing at once), without any
  per-warp step; the superstep stops before anything else (divergence, a fault, another kind of instruction, an
  event of another unit, a run-watch check that looks at the warps) and the reference path takes over.
* **Generated code** (:mod:`tcsim.fast.codegen`): for the simplest forms (integer / logic / compare / mov / cvt /
  cvta, f32 / f64 add / sub / mul / fma through the same numerics calls, scalar shared and global loads, shared
  stores) a superstep runs Python source generated per instruction over the flat register file instead of the
  semantics over the group context; straight runs of them execute back to back.  Each form is checked against
  the decoded semantics on random registers (tests/sim/test_tiers.py).
* **Compiled blocks** (:mod:`tcsim.fast.blocks`, :mod:`tcsim.fast.vm`; numba): the program is encoded once per
  cached program (one row per PC: operation, operands as planes of the stacked register arrays -- the registers
  of one container dtype are the planes of one ``(registers, warps, 32)`` array --, constants, guard), and a
  superstep of a gang whose lanes are all live runs it from its PC in one compiled call: integer / logic /
  compare / mov / cvt / cvta, exact ``fma.rn.f32`` and ``fma.f64`` through the numerics kernels, scalar
  ``ld/st.shared`` and ``ld.param``, and plain branches whose lanes agree (loops run inside the call), until an
  instruction it does not encode, a divergent branch, an access or a lane it leaves to the semantics (nothing
  of that instruction is written) or the cycles before the next run-watch check that looks at the warps.  The
  interpreter is compiled once per machine (numba's cache; ``python -m tcsim.fast.blocks`` warms it); each
  form is checked against the decoded semantics (tests/sim/test_tiers.py).  ``TCSIM_FAST_NOVM=1`` turns it off.

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
