"""Programmatic dependent launch: launch sequences whose grids may overlap, ordered by griddepcontrol.

PTX ISA 9.1 §9.7.13 (griddepcontrol) and the CUDA launch attribute
``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION``.  On a stream, a grid launched with the attribute (a
*dependent*) may begin before the grid before it (its *prerequisite*) has completed: once every CTA of the
prerequisite has executed ``griddepcontrol.launch_dependents`` or exited.  ``griddepcontrol.wait`` in the
dependent blocks the executing thread until every prerequisite grid in flight has completed and its memory
operations are performed and visible.  Without the attribute the grids run one after the other, so
``launch_dependents`` has no effect and ``wait`` returns at once (there is no prerequisite in flight).

How tcsim runs a sequence (:func:`tcsim.launch.run_sequence`): one global memory for the whole sequence (an array passed to
several launches is one buffer, at one address), the grids simulated in stream order -- each dependent starts
after its prerequisite has finished, one of the schedules the hardware allows -- and the dependency rules checked
rather than left to the schedule:

* each grid's :class:`GridDependency` records when each CTA first executed ``launch_dependents`` and when it
  exited; :attr:`GridDependency.release_cycle` is the cycle from which a dependent may begin (every CTA triggered
  or exited), reported per grid in :attr:`SequenceResult.release_cycles`;
* the happens-before detector (:mod:`tcsim.race.hb`) orders a prerequisite grid's accesses to global memory
  before the dependent's accesses that follow the accessing thread's ``griddepcontrol.wait`` and only those: an
  access before the wait that conflicts with one of the prerequisite's (same bytes, at least one a write) is a
  class-20 finding naming both sides and the missing ``griddepcontrol.wait``.  The prerequisites of a grid are the
  grids before it back to the first one launched without the attribute (a chain of programmatic launches can
  overlap transitively).

Not modelled: grids really running side by side in one simulation (so timing across grids), async-proxy
(TMA / bulk copy) accesses of the dependent issued before its wait (only its threads' own accesses are checked).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np



@dataclass
class GridDependency:
    """The programmatic-dependent-launch state of one grid (``Simulation.grid_dependency``)."""

    #: launched with programmatic stream serialization after a prerequisite grid
    programmatic: bool = False
    #: the global accesses of the prerequisite grids still possibly in flight (:class:`GridAccessLog`), or None
    prerequisites: "GridAccessLog | None" = None
    #: ctaid -> cycle of its first ``griddepcontrol.launch_dependents`` (later ones have no further effect)
    triggered: dict = field(default_factory=dict)
    #: ctaid -> cycle its last thread exited
    exited: dict = field(default_factory=dict)
    #: ctaid -> cycle of its first ``griddepcontrol.wait``
    waited: dict = field(default_factory=dict)

    def launch_dependents(self, ctaid, cycle) -> None:
        self.triggered.setdefault(tuple(ctaid), float(cycle))

    def wait(self, ctaid, cycle) -> None:
        self.waited.setdefault(tuple(ctaid), float(cycle))

    def releases_before_waiting(self) -> bool:
        """A dependent of this grid may begin while this grid's own prerequisites are still in flight: some CTA
        released it (triggered, or exited) before waiting for them."""
        for c in set(self.triggered) | set(self.exited):
            rel = min(x for x in (self.triggered.get(c), self.exited.get(c)) if x is not None)
            w = self.waited.get(c)
            if w is None or rel < w:
                return True
        return False

    def cta_exit(self, ctaid, cycle) -> None:
        self.exited.setdefault(tuple(ctaid), float(cycle))

    def release_cycle(self, ctaids) -> float | None:
        """The cycle from which a dependent grid may begin: every CTA of this grid has triggered or exited (None
        while one has done neither)."""
        out = 0.0
        for c in ctaids:
            c = tuple(c)
            t = [x for x in (self.triggered.get(c), self.exited.get(c)) if x is not None]
            if not t:
                return None
            out = max(out, min(t))
        return out


class GridAccessLog:
    """The global-memory accesses of one or more grids (an observer of their buses), queried by byte range."""

    kinds = {"mem"}

    def __init__(self, label: str):
        self.label = label
        self._raw: list = []         # (start, end, write, side)
        self._frozen = None

    def extend(self, other: "GridAccessLog") -> None:
        self._raw.extend(other._raw)
        self._frozen = None

    def on_event(self, ev) -> None:
        if ev.kind != "mem" or ev.space != "global" or not ev.addrs:
            return
        from tcsim.findings import Access, lanes_text
        what = f"{ev.op} by {self.label}"
        side = Access(what=what, loc=None, cta=tuple(ev.cta), warp=ev.warp,
                      lanes=lanes_text(ev.lanes) if ev.lanes else None, proxy=ev.proxy, unit=ev.agent,
                      cycle=float(ev.cycle))
        line = ev.line
        for a in ev.addrs:
            self._raw.append((int(a), int(a) + int(ev.size), bool(ev.is_write), side, line))
        self._frozen = None

    def name_lines(self, module) -> None:
        """Give each recorded side its PTX text and location (the grid's module ``module``)."""
        by_line = {}
        for fn in module.functions.values() if isinstance(module.functions, dict) else module.functions:
            for ins in getattr(fn, "body", ()):
                if ins.loc is not None:
                    by_line.setdefault(ins.loc.line, ins)
        from dataclasses import replace
        out = []
        for s, e, w, side, line in self._raw:
            ins = by_line.get(line)
            if ins is not None and side.loc is None:
                side = replace(side, what=f"{str(ins).strip()} ({self.label})", loc=ins.loc)
            out.append((s, e, w, side, line))
        self._raw = out

    def _freeze(self):
        if self._frozen is None:
            parts = {}
            for write in (False, True):
                rows = sorted((s, e, i) for i, (s, e, w, _, _) in enumerate(self._raw) if w == write)
                parts[write] = (np.array([r[0] for r in rows], dtype=np.int64),
                                np.array([r[1] for r in rows], dtype=np.int64), [r[2] for r in rows],
                                np.maximum.accumulate(np.array([r[1] for r in rows], dtype=np.int64))
                                if rows else np.zeros(0, np.int64))
            self._frozen = parts
        return self._frozen

    def conflict(self, start: int, end: int, write: bool):
        """The first recorded access that overlaps ``[start, end)`` and conflicts with it (a write on either
        side), as its finding side, or None."""
        fz = self._freeze()
        for w in ((True, False) if write else (True,)):
            starts, ends, idx, runmax = fz[w]
            if starts.size == 0:
                continue
            k = int(np.searchsorted(starts, end, side="left"))     # candidates: starts < end
            if k == 0:
                continue
            if runmax[k - 1] <= start:
                continue
            for j in range(k - 1, -1, -1):
                if ends[j] > start:
                    return self._raw[idx[j]][3]
                if runmax[j] <= start:
                    break
        return None

    def __len__(self) -> int:
        return len(self._raw)


__all__ = ["GridDependency", "GridAccessLog"]
