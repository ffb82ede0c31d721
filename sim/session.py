"""Stepping API for debuggers: run a launch one warp-instruction at a time and inspect the machine.

    >>> s = Session(launch)
    >>> s.step()                      # one warp-instruction; returns what retired
    >>> s.run(until=42)               # until an instruction on PTX line 42 is about to... has retired
    >>> s.run(until=lambda s: s.mbarrier(0x0).phase == 1)
    >>> s.reg("%r5", warp=0)          # 32 lanes
    >>> s.smem()[:64]; s.mbarriers(); print(s.where())
    >>> res = s.finish()              # run to the end; a Result like run_launch's
    >>> Session(launch, timing=True).timing()   # cycle-approximate: stall breakdown so far

Everything here reads state; nothing mutates the simulation except stepping.  Errors in the kernel
propagate as :class:`tcsim.isa.errors.TcsimError` with their location, so ``pdb.post_mortem`` lands in the
semantics function that raised.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .launch import Launch, Prepared
from .ptxtypes import to_type


@dataclass
class Retired:
    """One retired warp-instruction."""

    cycle: float
    cta: tuple
    warp: int
    pc: int
    line: int
    text: str
    mask: int
    writes: dict

    def __str__(self) -> str:
        return (f"[{self.cycle:>6}] CTA {self.cta} warp {self.warp} line {self.line}: {self.text}  "
                f"(mask {self.mask:08x})")


class Session:
    def __init__(self, launch: Launch, *, seed: int | None = None, max_instructions: int | None = None,
                 observers=(), timing=False):
        self._last: Retired | None = None
        self.history: list[Retired] = []
        self.keep_history = 10_000
        self._prep = Prepared(launch, seed=seed, max_instructions=max_instructions,
                              observers=(self,) + tuple(observers), timing=timing)
        self.sim = self._prep.sim
        self.done = False

    # -------------------------------------------------------------------------------------- stepping
    #: the session observes retired instructions only (so no per-register events are built for it)
    kinds = ("inst",)

    def on_event(self, ev) -> None:
        if ev.kind == "inst":
            r = Retired(ev.cycle, ev.cta, ev.warp, ev.pc, ev.line, ev.text, ev.mask, dict(ev.writes))
            self._last = r
            self.history.append(r)
            if len(self.history) > self.keep_history:
                del self.history[: len(self.history) - self.keep_history]

    def step(self, n: int = 1) -> Retired | None:
        """Execute ``n`` warp-instructions (in engine order); returns the last one, None at the end."""
        for _ in range(n):
            if self.done:
                return None
            if not self.sim.step_instruction():
                self.done = True
                self.sim.finish()
                return None
        return self._last

    def run(self, until=None, max_steps: int = 10_000_000) -> Retired | None:
        """Run until ``until`` holds after a retired instruction, or to the end when None.

        ``until`` may be a PTX line number (an instruction of that line retired), a dict of fields that the
        retired instruction must match (``{'line': 42, 'warp': 1}``), or a callable ``f(session) -> bool``.
        """
        if until is None:
            while self.step() is not None:
                pass
            return None
        if isinstance(until, int):
            cond = lambda s: s._last is not None and s._last.line == until  # noqa: E731
        elif isinstance(until, dict):
            cond = lambda s: s._last is not None and all(getattr(s._last, k) == v  # noqa: E731
                                                         for k, v in until.items())
        else:
            cond = until
        for _ in range(max_steps):
            r = self.step()
            if r is None:
                return None
            if cond(self):
                return r
        raise RuntimeError(f"condition not reached within {max_steps} steps")

    def finish(self):
        """Run to completion and return the launch's Result."""
        self.run()
        self._prep.close()
        return self._prep.result()

    # -------------------------------------------------------------------------------------- inspection
    def _cta(self, cta):
        if isinstance(cta, int):
            return self.sim.ctas[cta]
        for c in self.sim.ctas:
            if c.ctaid == tuple(cta):
                return c
        raise KeyError(f"no CTA {cta}")

    def warp(self, warp: int = 0, cta=0):
        return self._cta(cta).warps[warp]

    def reg(self, name: str, warp: int = 0, cta=0, ptype: str | None = None) -> np.ndarray:
        """A register's 32 lane values (raw container, or viewed as ``ptype``)."""
        w = self.warp(warp, cta)
        if name not in w.regs:
            raise KeyError(f"{w.label} has no register {name}")
        r = w.regs[name]
        return to_type(r.copy(), ptype) if ptype else r.copy()

    def regs(self, warp: int = 0, cta=0, lane: int | None = None) -> dict:
        w = self.warp(warp, cta)
        if lane is None:
            return {k: v.copy() for k, v in w.regs.items()}
        return {k: v[lane].item() for k, v in w.regs.items()}

    def smem(self, cta=0) -> np.ndarray:
        """The CTA's shared memory bytes (a read-only view: the debugger inspects, the kernel writes)."""
        return self._cta(cta).smem.data

    def mbarrier(self, offset: int, cta=0):
        return self._cta(cta).mbarriers[offset]

    def mbarriers(self, cta=0) -> dict:
        return {off: mb.describe() for off, mb in sorted(self._cta(cta).mbarriers.items())}

    def timing(self):
        """The :class:`tcsim.timing.stats.TimingReport` so far (stalls, utilisation), None with timing off."""
        return self.sim.timing_report()

    def scoreboard(self, warp: int = 0, cta=0) -> dict:
        """Registers of a warp whose producer has not yet written back: {name: cycle readable} (timing on)."""
        w = self.warp(warp, cta)
        t = getattr(w, "timing", None)
        return t.scoreboard.pending(self.sim.env.now) if t is not None else {}

    def pcs(self, warp: int = 0, cta=0) -> np.ndarray:
        return self.warp(warp, cta).pc.copy()

    def where(self) -> str:
        """One line per warp: live lanes, the instruction each group of lanes is at, and what it waits on."""
        lines = [f"cycle {self.sim.env.now}, {self.sim.retired} warp-instructions retired"]
        body = self.sim.program.body
        for w in self.sim.warps:
            if not w.alive.any():
                lines.append(f"  {w.label}: exited")
                continue
            pcs = sorted(set(int(p) for p in w.pc[w.alive]))
            at = ", ".join(f"line {body[p].loc.line}: {body[p]}" if p < len(body) else "end" for p in pcs[:3])
            waits = "; ".join((x.reason() if callable(x.reason) else x.reason) for x in w.waits)
            lines.append(f"  {w.label}: at {at}" + (f" — waiting: {waits}" if waits else ""))
        return "\n".join(lines)
