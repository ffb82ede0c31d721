"""The observation hook: every retired instruction, memory access and sync event passes through one bus.

Observers (the JSONL tracer here; the race detector and debugger later) subscribe with
:meth:`ObservationBus.subscribe`.  With no observer the bus is inactive and emitters skip all work: callers
test ``bus.active`` before building an event.

Event kinds and their fields (all carry ``cycle`` -- the simulated SM cycle, ``env.now`` --, ``cta`` as a
rank-ordered tuple, ``agent``):

* ``inst``  — a warp retired one instruction: ``warp, pc, line, text, mask`` (32-bit active-lane mask),
  ``writes`` ({register: [lane values as ints]} for the executing lanes).
* ``mem``   — a memory access: ``op`` ('ld'|'st'|'atom'|'red'), ``space`` ('global'|'shared'|'local'|'param'
  |'const'|'tmem'), ``proxy`` ('generic'|'async'), ``warp`` (None for async agents), ``pc``, ``addrs`` (list),
  ``size`` (bytes per address), ``lanes`` (list).
* ``stall`` — (timing on only) a warp could not issue: ``warp, pc, reason`` (category: 'dependency', 'unit',
  'issue slot', 'mbarrier', 'barrier', 'cluster barrier', 'tmem', 'wait', 'sleep'), ``detail`` (which register,
  unit or mbarrier), ``cycles``; the event's ``cycle`` is when the stall began.  With timing on, ``inst`` events
  also carry ``done``: the cycle at which the instruction's results are readable.
* ``sync``  — a synchronisation event: ``op`` (e.g. 'mbarrier.init', 'mbarrier.arrive', 'mbarrier.complete_tx',
  'mbarrier.phase', 'bar.arrive', 'bar.release', 'fence', 'async.issue', 'async.complete'), plus op-specific
  fields.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Event:
    kind: str
    cycle: float
    cta: tuple
    agent: str
    fields: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        d = {"kind": self.kind, "cycle": self.cycle, "cta": list(self.cta), "agent": self.agent}
        for k, v in self.fields.items():
            d[k] = _jsonable(v)
        return d


def _jsonable(v):
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


class ObservationBus:
    def __init__(self):
        self._observers: list = []
        self.active = False

    def subscribe(self, observer) -> None:
        """``observer`` is a callable taking an :class:`Event` (or an object with ``on_event``)."""
        fn = observer.on_event if hasattr(observer, "on_event") else observer
        self._observers.append(fn)
        self.active = True

    def unsubscribe(self, observer) -> None:
        fn = observer.on_event if hasattr(observer, "on_event") else observer
        self._observers.remove(fn)
        self.active = bool(self._observers)

    def emit(self, kind: str, cycle: float, cta: tuple, agent: str, /, **fields) -> None:
        if not self._observers:
            return
        ev = Event(kind, cycle, cta, agent, fields)
        for fn in self._observers:
            fn(ev)


class JsonlTracer:
    """Writes one JSON object per event, one per line (``tcsim run --trace out.jsonl``)."""

    def __init__(self, path_or_file, kinds: tuple = ("inst", "mem", "sync", "stall")):
        self._own = isinstance(path_or_file, (str, bytes)) or hasattr(path_or_file, "__fspath__")
        self._f = open(path_or_file, "w") if self._own else path_or_file
        self.kinds = set(kinds)
        self.count = 0

    def on_event(self, ev: Event) -> None:
        if ev.kind in self.kinds:
            self._f.write(json.dumps(ev.to_json(), separators=(",", ":")) + "\n")
            self.count += 1

    def close(self) -> None:
        if self._own:
            self._f.close()


class EventRecorder:
    """Keeps events in memory (tests, the debugger's history)."""

    def __init__(self, kinds: tuple = ("inst", "mem", "sync")):
        self.kinds = set(kinds)
        self.events: list[Event] = []

    def on_event(self, ev: Event) -> None:
        if ev.kind in self.kinds:
            self.events.append(ev)

    def of(self, kind: str, **match) -> list[Event]:
        return [e for e in self.events if e.kind == kind and all(e.fields.get(k) == v for k, v in match.items())]
