"""Timing statistics: per-warp stall breakdown, unit utilisation, achieved vs peak tensor throughput.

Collected by :class:`tcsim.timing.model.TimingModel` while the simulation runs (no prints in components: the
report is built at the end) and returned as a :class:`TimingReport` on ``Result.timing``.

Stall categories (cycles a warp wanted to issue but could not, or was blocked):

* ``dependency``     -- a source/destination register not yet written back; detail ``%r5 <- ld.shared.u32 (line 42)``
                        (memory latency, bank conflicts and queueing show here, on the loaded register); with
                        dataflow issue (sm_90a) also ``dataflow window full`` and ``earlier instructions (ordering
                        point)`` (a barrier / mbarrier op / clock read waiting for earlier starts)
* ``unit``           -- the sub-partition unit the instruction needs is busy (``fp64``, ``sfu``, ``tensor``...)
* ``issue slot``     -- another warp of the same scheduler issued that cycle
* ``mbarrier``       -- blocked in mbarrier.try_wait; detail names the mbarrier (symbol, offset, CTA)
* ``barrier`` / ``cluster barrier`` -- blocked in bar.sync / barrier.cluster.wait
* ``tmem``           -- tcgen05.wait::ld / ::st waiting for the warp's TMEM traffic
* ``wait``           -- any other blocking wait (async groups...); detail is the instruction
* ``sleep``          -- nanosleep
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


class WarpTiming:
    """Timing state and counters of one warp."""

    __slots__ = ("scoreboard", "issued", "stalls", "tmem_ld_ready", "tmem_st_ready", "sub", "first_issue",
                 "last_issue", "last_start", "pending", "store_next", "writes_done", "atomics_done", "loads",
                 "loop_iters", "free_run", "prepaid")

    def __init__(self, scoreboard, sub: int):
        self.scoreboard = scoreboard
        self.sub = sub                    # scheduler (sub-partition) index
        self.issued = 0
        self.stalls: Counter = Counter()  # (category, detail) -> cycles
        self.tmem_ld_ready = 0.0
        self.tmem_st_ready = 0.0
        self.first_issue = None
        self.last_issue = 0.0
        self.last_start = 0.0             # dataflow issue: latest start of an instruction issued so far
        self.pending: list = []           # dataflow issue: starts still in the future (issue order)
        self.store_next = 0.0             # earliest issue of the warp's next global store (store path)
        self.writes_done = 0.0            # when the warp's global stores / reductions / atomics so far are done
        self.atomics_done = 0.0           # ... its global reductions / atomics
        self.loads: dict = {}             # loop back-edge pc -> completion times of its loads (issue order, recent)
        self.loop_iters: dict = {}        # run-time-trip loop back-edge pc -> iterations of its current execution
        self.free_run = 0                 # free instructions issued in a row (tcsim.timing.model.FREE_RUN)
        self.prepaid = 0                  # cycles those runs were held since the last instruction that was not free


@dataclass
class TimingReport:
    """What the timing model measured for one launch (all times in SM cycles of ``arch``)."""

    arch: str
    cycles: int
    clock_mhz: float
    warps: list = field(default_factory=list)       # dicts: cta, warp, issued, stalls {category: {detail: cycles}}
    units: dict = field(default_factory=dict)       # name -> {'busy': cycles, 'capacity': cycles, 'utilisation'}
    tensor: dict = field(default_factory=dict)      # flops, achieved / peak FLOP per clk per SM, fraction
    delays: dict = field(default_factory=dict)      # cause -> {'cycles': total, 'ops': async ops delayed}

    def to_dict(self) -> dict:
        return {"arch": self.arch, "cycles": self.cycles, "clock_mhz": self.clock_mhz, "warps": self.warps,
                "units": self.units, "tensor": self.tensor, "delays": self.delays}

    def stalls_of(self, cta, warp: int) -> dict:
        """{category: {detail: cycles}} of one warp (``cta`` a ctaid tuple)."""
        for w in self.warps:
            if tuple(w["cta"]) == tuple(cta) and w["warp"] == warp:
                return w["stalls"]
        raise KeyError(f"no warp {warp} in CTA {cta}")

    def total_stalls(self) -> dict:
        """{category: cycles} summed over all warps."""
        out: Counter = Counter()
        for w in self.warps:
            for cat, details in w["stalls"].items():
                out[cat] += sum(details.values())
        return dict(out)

    def summary_lines(self, top: int = 3) -> list[str]:
        us = self.cycles / self.clock_mhz if self.clock_mhz else 0.0
        lines = [f"timing ({self.arch}): {self.cycles} cycles = {us:.2f} us at {self.clock_mhz:g} MHz"]
        t = self.tensor
        if t.get("flops"):
            lines.append(f"  tensor: {t['flops']:,} FLOP, {t['achieved_per_sm']:.0f} FLOP/clk/SM achieved of "
                         f"{t['peak_per_sm']:.0f} peak ({100 * t['fraction']:.1f}%)")
        busy = [f"{n} {100 * u['utilisation']:.1f}%" for n, u in sorted(self.units.items()) if u["busy"]]
        if busy:
            lines.append("  unit utilisation: " + ", ".join(busy))
        for cause, d in sorted(self.delays.items()):
            lines.append(f"  async delay: {d['ops']} op(s) {cause}, {d['cycles']:,.0f} cycles in all")
        tot = self.total_stalls()
        if tot:
            lines.append("  stalls (warp-cycles): " + ", ".join(f"{c} {round(n):,}" for c, n in
                                                               sorted(tot.items(), key=lambda x: -x[1])))
        worst = Counter()
        for w in self.warps:
            for cat, details in w["stalls"].items():
                for d, c in details.items():
                    worst[(cat, d)] += c
        for (cat, d), c in worst.most_common(top):
            lines.append(f"    {round(c):>8,} {cat}: {d}")  # fractional cost models sum to floats
        return lines


__all__ = ["WarpTiming", "TimingReport"]
