"""The issue model of the functional preset (``ArchConfig.untimed()``, ``timed`` = 0): every warp-instruction takes
one cycle.

It answers the engine the same questions as :class:`tcsim.timing.model.TimingModel` -- may this warp issue now,
how long until it may issue again, how long a released warp waits -- with the trivial answers: always, one cycle,
not at all; nothing is recorded (:meth:`report` is None).  So the warp process has one path whatever the config
(DESIGN.md principle 14), and timing off stays as fast as a model can be.  The async units take the preset's
fixed numbers from the same config (:data:`tcsim.timing.params.UNTIMED`).
"""
from __future__ import annotations


class FunctionalModel:
    """Issue model of an untimed config: one cycle per warp-instruction."""

    timed = False

    def __init__(self, sim, cfg):
        self.sim = sim
        self.cfg = cfg

    def attach(self, warp) -> None:
        warp.timing = None              # no per-warp scoreboard or stall counts

    def stall(self, warp, pc: int, now: float):
        return None                     # a runnable warp always issues

    def prepare(self, ctx, pc: int):
        return None

    def issued(self, ctx, pc: int, pre, now: float):
        """(cycles until the warp may issue again, cycle its results are readable): one cycle; results at issue
        (None: not timed, so the trace records no ``done``)."""
        return 1, None

    def label_waits(self, ctx, pc: int, new_waits, pre) -> None:
        pass

    def released(self, warp, waits_before):
        return "wait", "", 0            # a released warp issues at once

    def stall_record(self, warp, category: str, detail: str, cycles: float, start: float, pc=None) -> None:
        pass

    def tma_extra_latency(self, op) -> float:
        return 0                        # no first-touch DRAM latency

    def tma_store_delay(self, op, cta, start: float) -> float:
        return 0                        # no global-store backlog

    def report(self):
        return None


__all__ = ["FunctionalModel"]
