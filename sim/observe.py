"""The observation hook: every retired instruction, memory access and sync event passes through one bus.

DESIGN.md principles 4, 7 and 13.  Events are emitted from two doors only: the warp's execution context
(:class:`tcsim.context.ExecContext`: register, SMEM/DSMEM, global, local, TMEM accesses and sync events of warps)
and the agent interface (:class:`tcsim.agents.port.AgentPort`: the TMA engine, tensor pipe, cp.async unit,
tcgen05 ld/st landing, barrier and cluster-barrier release), plus the engine's retire and the timing model's
stall records.  Observers (the JSONL tracer here, the debugger in :mod:`tcsim.session`, the timing statistics, the
race detector and trace visualiser to come) subscribe with :meth:`ObservationBus.subscribe`.  With no observer the
bus is inactive and the doors skip all work: they test ``bus.active`` (or :meth:`ObservationBus.wants` for the
per-operand register events) before building an event.

Events are frozen dataclasses, one class per family, with declared fields.  Every event has ``cycle`` (the
simulated SM cycle, ``env.now``), ``cta`` (ctaid tuple of the CTA whose state it concerns), ``agent`` ('warp',
'tma', 'tensor_pipe', 'lsu', 'tcgen05', 'barrier', 'cluster-barrier') and ``kind`` (the family name):

* :class:`InstRetired` ``inst`` -- a warp retired one instruction: ``warp, pc, line, text, mask`` (32-bit
  active-lane mask), ``writes`` ({register: [lane values]}), ``done`` (timing on: when its results are readable).
* :class:`MemAccess` ``mem`` -- one access to a memory: ``op`` ('ld'|'st'|'atom'|'red'|'ldmatrix'|...),
  ``space`` ('global'|'shared::cta'|'shared::cluster'|'local'|'param'|'const'|'tmem'), ``proxy``
  ('generic'|'async'), ``warp`` and ``pc`` (the issuing warp and instruction; None for an agent's own access),
  ``addrs`` (start address of each range; for TMEM the cell address ``lane << 16 | column``), ``size`` (bytes per
  range), ``lanes`` (the thread lane of each address, empty for agents), ``line`` (PTX source line of the
  instruction, None for agents), ``op_id`` (the async op this access completes, linking it to its
  :class:`AsyncIssue`; None for a warp's synchronous access).  :attr:`MemAccess.is_write`,
  :meth:`MemAccess.ranges` and :meth:`MemAccess.tmem_cells` give the byte ranges / TMEM lanes x columns.
* :class:`SyncEvent` ``sync`` -- a synchronisation event: ``op`` (e.g. 'bar.arrive', 'bar.release',
  'mbarrier.init', 'mbarrier.arrive', 'mbarrier.expect_tx', 'mbarrier.complete_tx', 'mbarrier.phase',
  'mbarrier.wait' (test_wait / try_wait, ``form``), 'fence', 'tcgen05.fence', 'tcgen05.commit', 'tcgen05.wait',
  'cp.async.bulk.commit_group', 'cp.async.bulk.wait_group', 'cluster.arrive', 'cluster.wait', 'cluster.release'),
  ``warp``, ``pc``, ``line``, ``lanes`` (executing lanes where the op has them), the typed operands
  ``barrier`` (named barrier id), ``mbarrier`` (SMEM offset of the mbarrier, in ``target_cta`` when the op names
  another CTA's), ``count``, ``phase``, ``op_id``, and ``detail`` (every op-specific field, by name).
* :class:`AsyncIssue` / :class:`AsyncComplete` (``sync`` with op 'async.issue' / 'async.complete') -- an async op
  entered / left a unit: ``op_id`` (unique per bus, the same on both halves and on every :class:`MemAccess` and
  mbarrier event the completion performs), ``unit`` (the agent), ``what`` (the PTX opcode), ``issuer_warp`` /
  ``issuer_pc`` / ``line`` of the issuing instruction.
* :class:`Stall` ``stall`` -- (timing on only) a warp could not issue: ``warp, pc, reason`` (category:
  'dependency', 'unit', 'issue slot', 'mbarrier', 'barrier', 'cluster barrier', 'tmem', 'wait', 'sleep'),
  ``detail``, ``cycles``; ``cycle`` is when the stall began.
* :class:`RegAccess` ``reg`` -- one register operand read (``write`` False) or written (True) by a warp:
  ``warp, pc, line, reg, lanes``; a register list written together (``tcgen05.ld``'s destinations) is one event
  whose ``regs`` names every register of the list (:attr:`RegAccess.names`).  Built only when an observer asked
  for kind 'reg' (:meth:`ObservationBus.wants`).

``Event.fields`` is the event's record as the pre-issue-14 trace wrote it (a dict in that record's key order);
observers written against that dict (``ev.fields["op"]``) keep working.  The JSONL tracer (schema 3, issue 19)
writes a header record and then a compact record per traced event in cycle order (:class:`JsonlTracer`,
:func:`trace_record`, read back whole by :func:`read_trace`): an event family added since issue 14 (register
accesses) has a kind it does not select, and a sync or mem event the old trace did not carry has ``traced=False``.
"""
from __future__ import annotations

import itertools
import json
from binascii import b2a_base64 as _b64
from struct import pack as _pack
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Mapping

_EMPTY: Mapping = MappingProxyType({})
_MISSING = object()


def _jsonable(v):
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (dict, MappingProxyType)):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


@dataclass(frozen=True, eq=False)
class Event:
    """What every observation event carries.  ``fields``: the event's legacy trace record (module docstring)."""

    kind: ClassVar[str] = "event"
    cycle: float
    cta: tuple
    agent: str

    @property
    def fields(self) -> dict:
        raise NotImplementedError

    #: False for an event the pre-issue-14 trace did not write (the JSONL tracer skips it)
    traced: ClassVar[bool] = True

    def to_json(self) -> dict:
        d = {"kind": self.kind, "cycle": self.cycle, "cta": list(self.cta), "agent": self.agent}
        for k, v in self.fields.items():
            d[k] = _jsonable(v)
        return d


@dataclass(frozen=True, eq=False)
class InstRetired(Event):
    kind: ClassVar[str] = "inst"
    warp: int = 0
    pc: int = 0
    line: int = 0
    text: str = ""
    mask: int = 0
    writes: Mapping = field(default_factory=lambda: _EMPTY)
    done: float | None = None

    @property
    def fields(self) -> dict:
        d = dict(warp=self.warp, pc=self.pc, line=self.line, text=self.text, mask=self.mask,
                 writes=dict(self.writes))
        if self.done is not None:
            d["done"] = self.done
        return d


@dataclass(frozen=True, eq=False)
class Stall(Event):
    kind: ClassVar[str] = "stall"
    warp: int = 0
    pc: int | None = None
    reason: str = ""
    detail: str = ""
    cycles: float = 0

    @property
    def fields(self) -> dict:
        return dict(warp=self.warp, pc=self.pc, reason=self.reason, detail=self.detail, cycles=self.cycles)


_WRITES = frozenset(("st", "atom", "red", "stmatrix", "tcgen05.alloc", "discard"))


@dataclass(frozen=True, eq=False)
class MemAccess(Event):
    kind: ClassVar[str] = "mem"
    op: str = "ld"
    space: str = "global"
    proxy: str = "generic"
    warp: int | None = None
    pc: int | None = None
    addrs: tuple = ()
    size: int = 0
    lanes: tuple = ()
    line: int | None = None
    op_id: int | None = None
    traced: bool = True

    @property
    def is_write(self) -> bool:
        """The access writes memory (atomics and reductions read and write)."""
        return self.op in _WRITES

    def ranges(self) -> list[tuple[int, int]]:
        """``[start, end)`` byte ranges (for TMEM: cell addresses, ``size`` bytes of consecutive columns)."""
        return [(a, a + self.size) for a in self.addrs]

    def tmem_cells(self) -> list[tuple[int, int]]:
        """(lane, column) of each TMEM cell the access touches (``space == 'tmem'``)."""
        ncols = max(1, self.size // 4)
        return [((a >> 16) & 0xFFFF, (a & 0xFFFF) + j) for a in self.addrs for j in range(ncols)]

    @property
    def fields(self) -> dict:
        return dict(warp=self.warp, pc=self.pc, op=self.op, space=self.space, proxy=self.proxy,
                    addrs=list(self.addrs), size=self.size, lanes=list(self.lanes))


@dataclass(frozen=True, eq=False)
class SyncEvent(Event):
    kind: ClassVar[str] = "sync"
    op: str = ""
    warp: int | None = None
    pc: int | None = None
    line: int | None = None
    lanes: tuple | None = None
    barrier: int | None = None
    mbarrier: int | None = None
    target_cta: tuple | None = None
    count: int | None = None
    phase: int | None = None
    op_id: int | None = None
    detail: Mapping = field(default_factory=lambda: _EMPTY)
    #: which of warp / pc / op open the legacy record, in order (warp-side events: all three; agents: their own)
    head: tuple = ("warp", "pc", "op")
    traced: bool = True

    @classmethod
    def make(cls, cycle, cta, agent, op, *, warp=None, pc=None, line=None, op_id=None, head=("warp", "pc", "op"),
             traced=True, typed=None, **detail):
        """The event of sync op ``op`` with op-specific ``detail``; the typed operands are taken from the detail
        fields that name them (``barrier``, ``mbarrier`` / ``addr``, ``target_cta``, ``count``, ``phase``,
        ``lanes`` / ``lane``); ``typed``: declared fields given directly (a subclass's, e.g. :class:`AsyncIssue`'s, or a
        value the record does not show, e.g. the thread count of a ``bar.sync`` without one)."""
        get = detail.get
        lanes = get("lanes")
        if lanes is None:
            ln = get("lane")
            if ln is not None:
                lanes = (int(ln),)
        elif type(lanes) is not tuple or not all(type(x) is int for x in lanes):
            lanes = tuple(int(x) for x in lanes)
        mb = get("mbarrier") if "mbarrier" in detail else get("addr")
        if not isinstance(mb, int):
            mb = None
        bar = get("barrier")
        count = get("count")
        phase = get("phase")
        kw = dict(op=op, warp=warp, pc=pc, line=line, lanes=lanes,
                  barrier=bar if isinstance(bar, int) else None, mbarrier=mb,
                  target_cta=get("target_cta", None if mb is None else cta),
                  count=count if isinstance(count, int) else None, phase=phase if isinstance(phase, int) else None,
                  op_id=op_id, detail=MappingProxyType(detail), head=head, traced=traced)
        if typed:
            kw.update(typed)
        return cls(cycle, cta, agent, **kw)

    @property
    def fields(self) -> dict:
        d = {k: getattr(self, k) for k in self.head}
        d.update(self.detail)
        return d


@dataclass(frozen=True, eq=False)
class AsyncEvent(SyncEvent):
    """What the issue and the completion of an async op both carry: ``unit`` (the agent serving it), ``what`` (its
    PTX opcode), ``issuer_warp`` / ``issuer_pc`` (the issuing warp and instruction; ``warp`` is None: an agent
    acts) and the ``op_id`` that links them."""

    unit: str = ""
    what: str = ""
    issuer_warp: int | None = None
    issuer_pc: int | None = None


@dataclass(frozen=True, eq=False)
class AsyncIssue(AsyncEvent):
    """An async op entered its unit (``op == 'async.issue'``)."""


@dataclass(frozen=True, eq=False)
class AsyncComplete(AsyncEvent):
    """An async op completed (``op == 'async.complete'``): its effects (the :class:`MemAccess` events with the same
    ``op_id``) have been applied."""


@dataclass(frozen=True, eq=False)
class RegAccess(Event):
    kind: ClassVar[str] = "reg"
    traced: ClassVar[bool] = False
    warp: int = 0
    pc: int = 0
    line: int | None = None
    reg: str = ""
    write: bool = False
    lanes: tuple = ()
    #: every register of the operand when it is a register list written together (a wide load's destination
    #: ``{%r0, ..., %r31}``: one event for the operand, ``reg`` its first register); empty for one register
    regs: tuple = ()

    @property
    def names(self) -> tuple:
        """The registers the access touches (``regs``, or ``reg`` alone)."""
        return self.regs or (self.reg,)

    @property
    def fields(self) -> dict:
        d = dict(warp=self.warp, pc=self.pc, line=self.line, reg=self.reg, write=self.write, lanes=list(self.lanes))
        if self.regs:
            d["regs"] = list(self.regs)
        return d


class ObservationBus:
    """Delivers events to the subscribed observers.  ``active``: someone listens; :meth:`wants` a given kind."""

    def __init__(self):
        self._observers: list = []
        self._objects: list = []         # the subscribed observers themselves (their ``kinds`` may change)
        self._kinds: list = []           # per observer: the set of kinds it selects, or None (all)
        self._wanted: frozenset | None = frozenset()     # union of the selected kinds (None: some observer takes all)
        self.active = False
        #: the register names some observer of 'reg' events watches, or None (every register): an observer selecting
        #: 'reg' with a ``reg_names`` attribute (a set) receives only the register accesses of those names
        self.reg_names: frozenset | None = None
        #: every observer of 'reg' events takes only the warps' own register accesses (``reg_warp_only``), not those of
        #: async units completing an op (the wgmma unit writing its accumulators)
        self.reg_warp_only = False
        #: some observer selects 'reg' events (``wants('reg')``, kept as a field: the register doors test it at
        #: every operand)
        self.want_reg = False
        self._op_ids = itertools.count(1)

    def subscribe(self, observer) -> None:
        """``observer`` is a callable taking an :class:`Event` (or an object with ``on_event``); an observer with a
        ``kinds`` attribute receives only those kinds."""
        fn = observer.on_event if hasattr(observer, "on_event") else observer
        self._observers.append(fn)
        self._objects.append(observer)
        kinds = getattr(observer, "kinds", None)
        self._kinds.append(None if kinds is None else frozenset(kinds))
        self._update()

    def unsubscribe(self, observer) -> None:
        fn = observer.on_event if hasattr(observer, "on_event") else observer
        i = self._observers.index(fn)
        del self._observers[i], self._kinds[i], self._objects[i]
        self._update()

    def refresh(self) -> None:
        """Re-read the subscribed observers' ``kinds`` (an observer that selects a kind only while it needs it,
        e.g. the race detector's register events while a tcgen05.ld is in flight)."""
        self._kinds = [None if getattr(o, "kinds", None) is None else frozenset(o.kinds) for o in self._objects]
        self._update()

    def _update(self) -> None:
        self.active = bool(self._observers)
        self._wanted = None if any(k is None for k in self._kinds) else frozenset().union(*self._kinds)
        names: frozenset | None = frozenset()
        warp_only = True
        for o, k in zip(self._objects, self._kinds):
            if k is None or "reg" in k:
                warp_only = warp_only and bool(getattr(o, "reg_warp_only", False))
                rn = getattr(o, "reg_names", None)
                names = None if names is None or rn is None else names | frozenset(rn)
        self.reg_names = names
        self.reg_warp_only = warp_only
        self.want_reg = self.wants("reg")

    def wants(self, kind: str) -> bool:
        """Some observer selects events of ``kind`` (doors test it before building costly per-operand events)."""
        return self.active and (self._wanted is None or kind in self._wanted)

    def next_op_id(self) -> int:
        """A fresh async-op id (unique on this bus): links an :class:`AsyncIssue` to its completion."""
        return next(self._op_ids)

    def publish(self, ev: Event) -> None:
        """Deliver ``ev`` to every observer that selects its kind."""
        for fn, kinds in zip(self._observers, self._kinds):
            if kinds is None or ev.kind in kinds:
                fn(ev)


#: the JSONL trace's schema (the header record's ``version``); the README's "JSONL trace" section documents it
TRACE_SCHEMA = "tcsim-trace"
TRACE_SCHEMA_VERSION = 3


def _num(x):
    """A cycle as an int where it is integral."""
    return int(x) if float(x).is_integer() else float(x)


def encode_lanes(values):
    """A register write's values (the active lanes, in lane order) as the trace writes them (schema 3): an
    integer where every active lane got that value; ``[base, step]`` where lane k of the active lanes got
    ``base + k * step`` (three lanes or more); else one base64 string of the raw values, each lane a fixed
    number of bytes (4 for values below 2**32, 8 below 2**64, else 16; little-endian, two's complement for a
    negative value), lane 0's first (:func:`decode_lanes` reverses it)."""
    vals = values if type(values) is list else [int(v) for v in values]
    if not vals:
        return []
    if type(vals[0]) is not int or type(vals[-1]) is not int:     # numpy integers, a predicate's booleans
        vals = [int(v) for v in vals]
    if vals.count(vals[0]) == len(vals):
        return vals[0]
    if len(vals) >= 3:
        step = _affine(vals)
        if step is not None:
            return [vals[0], step]
    lo, hi = min(vals), max(vals)
    big = max(hi, -lo).bit_length() + (1 if lo < 0 else 0)     # (a negative value counts its sign bit)
    w = 4 if big <= 32 else 8 if big <= 64 else 16
    if w <= 8:
        fmt = f"<{len(vals)}{'I' if w == 4 else 'Q'}"
        if lo >= 0:                     # (every value fits its width unsigned: nothing to mask)
            raw = _pack(fmt, *vals)
        else:
            m = (1 << (8 * w)) - 1
            raw = _pack(fmt, *[v & m for v in vals])
    else:
        m = (1 << (8 * w)) - 1
        raw = b"".join((v & m).to_bytes(w, "little") for v in vals)
    return _b64(raw, newline=False).decode("ascii")


def decode_lanes(v, n: int) -> list:
    """The ``n`` active lanes' values of a register write encoded by :func:`encode_lanes` (a base64 string gives
    each value unsigned in its width)."""
    import base64
    if isinstance(v, int):
        return [v] * n
    if isinstance(v, list):
        return [v[0] + k * v[1] for k in range(n)] if v else []
    raw = base64.b64decode(v)
    w = len(raw) // n
    return [int.from_bytes(raw[i * w:(i + 1) * w], "little") for i in range(n)]


def _affine(xs) -> int | None:
    """The common step of ``xs`` (Python ints, at least one element), or None."""
    n = len(xs)
    if n < 2:
        return 0
    x0 = xs[0]
    d = xs[1] - x0
    if xs[-1] - x0 != d * (n - 1):
        return None
    if d == 0:
        return 0 if xs.count(x0) == n else None
    return d if list(xs) == list(range(x0, x0 + d * n, d)) else None


def _strided(ranges) -> list | None:
    """``[start, length, pitch, count]`` for merged ranges of one length evenly spaced (a 2-D box), else None."""
    if len(ranges) < 3:
        return None
    ln = ranges[0][1] - ranges[0][0]
    if any(b - a != ln for a, b in ranges):
        return None
    step = _affine([a for a, _ in ranges])
    return None if step is None else [ranges[0][0], ln, step, len(ranges)]


def _runs(ranges) -> list:
    """Merged byte ranges as one flat list ``[start, length, gap, length, gap, length...]`` (a gap: from a range's
    end to the next one's start): small numbers where a block access is many short pieces (a swizzled tile)."""
    out: list = []
    end = None
    for a, b in ranges:
        out += [a if end is None else a - end, b - a]
        end = b
    return out


def runs_ranges(runs) -> list:
    """The ``[start, end)`` byte ranges of a ``runs`` list (:func:`_runs`)."""
    out, pos = [], None
    for i in range(0, len(runs), 2):
        a = runs[i] if pos is None else pos + runs[i]
        pos = a + runs[i + 1]
        out.append([a, pos])
    return out


def merge_ranges(ranges) -> list:
    """Byte ranges ``[start, end)`` merged where one ends where the next starts or overlaps (sorted)."""
    if len(ranges) < 256:           # few ranges: plain Python is quicker than numpy's set-up
        out: list = []
        for a, b in sorted((int(a), int(b)) for a, b in ranges):
            if out and a <= out[-1][1]:
                if b > out[-1][1]:
                    out[-1][1] = b
            else:
                out.append([a, b])
        return out
    import numpy as np
    r = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    if not len(r):
        return []
    r = r[np.argsort(r[:, 0], kind="stable")]
    ends = np.maximum.accumulate(r[:, 1])
    new = np.ones(len(r), bool)
    new[1:] = r[1:, 0] > ends[:-1]
    idx = np.flatnonzero(new)
    last = np.append(idx[1:] - 1, len(r) - 1)
    return np.stack([r[idx, 0], ends[last]], 1).tolist()


def _block_access(addrs, size: int) -> dict:
    """An agent's block access (``size``-byte ranges from each of ``addrs``) as its record writes it: the merged
    ranges (:func:`merge_ranges`) as ``strided`` (:func:`_strided`) where they form one, else as ``runs``
    (:func:`_runs`) -- computed over arrays where there are many ranges (a tile's rows), the same lists."""
    n = len(addrs)
    if n < 64:
        rs = merge_ranges([(a, a + size) for a in addrs])
        st = _strided(rs)
        return {"strided": st} if st is not None else {"runs": _runs(rs)}
    import numpy as np
    s = np.asarray(addrs)
    if s.dtype != np.int64:                 # (addresses beyond int64: the plain path)
        rs = merge_ranges([(int(a), int(a) + size) for a in addrs])
        st = _strided(rs)
        return {"strided": st} if st is not None else {"runs": _runs(rs)}
    s = np.sort(s)
    # ranges of one size sorted by start end in that order too: one merges into the run before it exactly where
    # it starts at or before that run's end, i.e. at or before the previous range's end
    brk = np.flatnonzero(s[1:] > s[:-1] + size)
    starts = s[np.concatenate(([0], brk + 1))]
    ends = s[np.concatenate((brk, [n - 1]))] + size
    k = len(starts)
    lens = ends - starts
    if k >= 3 and (lens == lens[0]).all():
        steps = np.diff(starts)
        if (steps == steps[0]).all():
            return {"strided": [int(starts[0]), int(lens[0]), int(steps[0]), k]}
    runs = np.empty(2 * k, np.int64)
    runs[0] = starts[0]
    runs[2::2] = starts[1:] - ends[:-1]
    runs[1::2] = lens
    return {"runs": runs.tolist()}


def tmem_rects(addrs, size: int) -> list:
    """The TMEM cells of an access (cell addresses ``lane << 16 | column``, ``size`` bytes = ``size // 4``
    columns from each) as ``[lane_lo, lane_hi, col_lo, col_hi]`` rectangles (half-open): column runs per lane,
    consecutive lanes with the same runs merged."""
    import numpy as np
    a = np.asarray(addrs, dtype=np.int64)
    if not a.size:
        return []
    lanes, cols, n = (a >> 16) & 0xFFFF, a & 0xFFFF, max(1, size // 4)
    l0, c0 = int(lanes.min()), int(cols.min())
    grid = np.zeros((int(lanes.max()) + 1 - l0, int(cols.max()) + n - c0), bool)
    grid[(lanes - l0)[:, None], (cols - c0)[:, None] + np.arange(n)] = True     # every cell of every run at once
    out: list = []
    change = np.ones(len(grid), bool)
    change[1:] = (grid[1:] != grid[:-1]).any(1)
    starts = np.flatnonzero(change)
    for k, lo in enumerate(starts):
        hi = starts[k + 1] if k + 1 < len(starts) else len(grid)
        row = np.concatenate([[False], grid[lo], [False]])
        edges = np.flatnonzero(row[1:] != row[:-1])
        for b, e in zip(edges[::2], edges[1::2]):
            out.append([l0 + int(lo), l0 + int(hi), c0 + int(b), c0 + int(e)])
    return out


def _lane_mask(lanes):
    """The lanes as a 32-bit mask when each appears once in ascending order, else None."""
    lanes = [int(x) for x in lanes]
    if lanes != sorted(set(lanes)) or any(not 0 <= x < 32 for x in lanes):
        return None
    m = 0
    for x in lanes:
        m |= 1 << x
    return m


_ALL_LANES = list(range(32))


def _ascending_mask(lanes: list) -> int | None:
    """The 32-bit mask of ``lanes`` when they are distinct lanes 0..31 in ascending order (one address each), else
    None."""
    if lanes == _ALL_LANES:                     # (the common case: a whole warp)
        return 0xFFFFFFFF
    if lanes and lanes == sorted(set(lanes)) and 0 <= lanes[0] and lanes[-1] < 32:
        m = 0
        for x in lanes:
            m |= 1 << x
        return m
    return None


def _warp_addressing(addrs: list, lanes: list) -> dict:
    """A warp's access, compactly: each active lane's addresses (in lane order) as ``lane_mask`` + ``per_lane``
    (addresses per lane, 1 when omitted) + ``addr`` / ``stride`` (between lanes) / ``inner`` (within a lane)
    where evenly spaced, else ``lanes`` and ``addrs`` as lists."""
    m = _ascending_mask(lanes)
    if m is not None:                                                               # one address per lane
        stride = _affine(addrs)
        return {"lane_mask": m, "addr": addrs[0], "stride": stride} if stride is not None else \
            {"lane_mask": m, "addrs": addrs}
    if len(lanes) >= 64:
        d = _warp_addressing_arrays(addrs, lanes)
        if d is not None:
            return d
    pairs = sorted(zip(lanes, addrs), key=lambda p: p[0])       # stable: a lane's addresses keep their order
    lanes, addrs = [p[0] for p in pairs], [p[1] for p in pairs]
    order = sorted(set(lanes))
    per = len(lanes) // len(order) if order else 0
    grouped = per > 0 and lanes == [x for x in order for _ in range(per)]
    m = _lane_mask(order) if grouped else None
    if m is not None:
        firsts = addrs[::per]
        stride = _affine(firsts)
        inner = 0 if per == 1 else _affine(addrs[:per])
        if stride is not None and inner is not None and all(
                addrs[i * per:(i + 1) * per] == [firsts[i] + j * inner for j in range(per)] for i in range(len(order))):
            d = {"lane_mask": m, "addr": addrs[0], "stride": stride}
            if per > 1:
                d.update(per_lane=per, inner=inner)
            return d
        return {"lane_mask": m, **({"per_lane": per} if per > 1 else {}), "addrs": addrs}
    return {"lanes": lanes, "addrs": addrs}


def _warp_addressing_arrays(addrs: list, lanes: list) -> dict | None:
    """:func:`_warp_addressing`'s several-addresses-per-lane case over arrays (a tcgen05.ld's many TMEM cells per
    thread): the same fields, or None where the addresses are not plain int64 values (the caller's path)."""
    import numpy as np
    A = np.asarray(addrs)
    L = np.asarray(lanes)
    if A.dtype != np.int64 or L.dtype != np.int64 or A.shape != L.shape or A.ndim != 1 or \
            not (-(1 << 60) < int(A.min()) and int(A.max()) < (1 << 60)):
        return None
    idx = np.argsort(L, kind="stable")                 # stable: a lane's addresses keep their order
    L, A = L[idx], A[idx]
    order = np.unique(L)
    per = len(L) // len(order)
    grouped = per > 0 and per * len(order) == len(L) and bool((L.reshape(-1, per) == order[:, None]).all())
    m = _lane_mask(order.tolist()) if grouped else None
    if m is not None:
        R = A.reshape(len(order), per)
        firsts = R[:, 0]
        stride = 0 if len(firsts) < 2 else int(firsts[1] - firsts[0])
        if len(firsts) >= 2 and not (np.diff(firsts) == stride).all():
            stride = None
        inner = 0 if per == 1 else int(R[0, 1] - R[0, 0])
        if per > 1 and not (np.diff(R[0]) == inner).all():
            inner = None
        if stride is not None and inner is not None and \
                bool((R == firsts[:, None] + np.arange(per, dtype=np.int64) * inner).all()):
            d = {"lane_mask": m, "addr": int(A[0]), "stride": stride}
            if per > 1:
                d.update(per_lane=per, inner=inner)
            return d
        return {"lane_mask": m, **({"per_lane": per} if per > 1 else {}), "addrs": A.tolist()}
    return {"lanes": L.tolist(), "addrs": A.tolist()}


def _ints(xs) -> list:
    """A sequence (numpy array, tuple) as a list of Python ints."""
    if hasattr(xs, "tolist"):
        return xs.tolist()
    if len(xs) and type(xs[0]) is int and type(xs[-1]) is int:
        return list(xs)
    return [int(x) for x in xs]


_esc = json.encoder.encode_basestring_ascii
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _enc(v) -> str:
    """``v`` as compact JSON (as :func:`json.dumps` writes it), scalars without the encoder's set-up."""
    t = type(v)
    if t is int:
        return int.__repr__(v)
    if t is str:
        return _esc(v)
    if t is bool:
        return "true" if v else "false"
    if v is None:
        return "null"
    if (t is list or t is tuple) and all(type(x) is int for x in v):     # cta, lanes, a [base, step] write, runs
        return "[" + ",".join(map(int.__repr__, v)) + "]"
    if t is dict and all(type(k) is str for k in v):                    # a record's writes {register: lanes}
        return "{" + ",".join([_esc(k) + ":" + _enc(x) for k, x in v.items()]) + "}"
    return _dumps(v)


def _same(a, b) -> bool:
    """``a`` and ``b`` are written as the same JSON (1 and True, 0.0 and -0.0 are not)."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t is int or t is str:
        return a == b
    return _enc(a) == _enc(b)


def trace_record(ev: Event) -> dict:
    """The JSONL record of one event (schema :data:`TRACE_SCHEMA_VERSION`; README "JSONL trace"); a field whose
    value is None is left out."""
    d = _record(ev)
    return {k: v for k, v in d.items() if v is not None}


def _record(ev: Event) -> dict:
    cta = ev.cta if type(ev.cta) is tuple else tuple(ev.cta)
    d = {"kind": ev.kind, "cycle": _num(ev.cycle), "cta": cta, "agent": ev.agent}
    if isinstance(ev, InstRetired):
        d.update(warp=ev.warp, pc=ev.pc, line=ev.line, text=ev.text, mask=ev.mask,
                 writes={k: encode_lanes(v) for k, v in ev.writes.items()})
        if ev.done is not None:
            d["done"] = _num(ev.done)
        return d
    if isinstance(ev, MemAccess):
        d.update(warp=ev.warp, pc=ev.pc, line=ev.line, op=ev.op, space=ev.space, proxy=ev.proxy, size=ev.size)
        if ev.op_id is not None:
            d["op_id"] = ev.op_id
        if len(ev.lanes):
            d.update(_warp_addressing(_ints(ev.addrs), _ints(ev.lanes)))
        elif ev.space == "tmem":
            d["tmem"] = tmem_rects(ev.addrs, ev.size)
        else:
            d.update(_block_access(ev.addrs, ev.size))
        return d
    for k, v in ev.fields.items():
        if k in ("kind", "cycle", "cta", "agent"):      # an operand named like a record key (tcgen05.wait's kind)
            d[f"detail_{k}"] = _jsonable(v)
        elif k == "lanes" and isinstance(v, (list, tuple)) and _lane_mask(v) is not None:
            d["lane_mask"] = _lane_mask(v)
        else:
            d[k] = _jsonable(v)
    if isinstance(ev, SyncEvent):
        if ev.op_id is not None:
            d.setdefault("op_id", ev.op_id)
        if ev.line is not None:
            d.setdefault("line", ev.line)
    return d


class JsonlTracer:
    """Writes the run's events as JSON Lines (``tcsim run --trace out.jsonl``), schema :data:`TRACE_SCHEMA_VERSION`.

    The first line is the header record (``kind`` 'header': ``schema``, ``version``, kernel, launch, arch,
    ``clock_mhz``, grid / block / cluster, ``timing``, ``records``, a ``legend`` of the record kinds and the
    ``templates``); then one record per event of the selected kinds (default inst, mem, sync, stall) whose
    ``traced`` is true, **in cycle order** (events of one cycle in the order they happened: the records are kept
    and sorted stably when the trace is closed).  An event's full record (:func:`trace_record`) is ``kind, cycle,
    cta, agent`` and its fields, compactly: a register write is :func:`encode_lanes` of its active lanes' values, a
    warp's memory access is a lane mask and an ``addr`` / ``stride`` pair where the lanes' addresses are evenly
    spaced, an agent's block access its merged byte ranges as ``runs`` (start, length, gap, length...) or a
    ``strided`` box (TMEM: ``tmem`` rectangles of lanes x
    columns).  The line written is that record less what its **template** holds: the records of one (kind,
    agent, pc, op) share a template, the fields (but ``cycle``) every one of them has with one value (the
    instruction's text and line, the operation's space, size, form...); the line names it by index, ``t``, into
    the header's ``templates``.  :func:`read_trace` gives back the full records.  A path ending ``.gz`` is written
    gzip-compressed."""

    LEGEND = {"header": "this record", "template": "a record's 't' indexes the header's 'templates': the "
              "record is that template's fields plus its own", "inst": "a warp retired an instruction: warp, pc, "
              "line, text, mask (active lanes), writes {register: the active lanes' values, lane 0 first: an "
              "integer (every lane that value), [base, step] (lane k: base + k * step) or base64 of the raw "
              "little-endian values, 4, 8 or 16 bytes each}, done (timing: results readable)", "mem": "a memory "
              "access: op, space, proxy, size (bytes per address); a warp's: lane_mask [+ per_lane] + "
              "addr/stride[/inner] (or addrs; lanes); an agent's: runs [start, length, gap, length...] (merged byte "
              "ranges, a gap from one's end to the next's start), strided [start, length, "
              "pitch, count] or tmem [[lane_lo, lane_hi, col_lo, col_hi)]; op_id links an async op's accesses",
              "sync": "a synchronisation event: op and its operands (mbarrier, count, phase, tx, bytes, op_id...)",
              "stall": "a warp could not issue from cycle for cycles: reason, detail (what it waits on)"}

    def __init__(self, path_or_file, kinds: tuple = ("inst", "mem", "sync", "stall")):
        self._own = isinstance(path_or_file, (str, bytes)) or hasattr(path_or_file, "__fspath__")
        if self._own and str(path_or_file).endswith(".gz"):         # out.jsonl.gz: gzip-compressed
            import gzip
            self._f = gzip.open(path_or_file, "wt")
        else:
            self._f = open(path_or_file, "w") if self._own else path_or_file
        self.kinds = set(kinds)
        self.count = 0
        self.header: dict = {}
        self._recs: list = []

    def set_header(self, **info) -> None:
        """What the header record says about the launch (kernel, launch, arch, clock_mhz, grid, block...)."""
        self.header.update({k: _jsonable(v) for k, v in info.items()})

    def on_event(self, ev: Event) -> None:
        if ev.kind in self.kinds and ev.traced:
            self._recs.append(trace_record(ev))
            self.count += 1

    def close(self) -> None:
        if self._f is None:
            return
        recs = sorted(self._recs, key=lambda r: r["cycle"])      # stable: events of one cycle keep their order
        self._recs = []
        # the template test is _same inlined, with the JSON text of a list / dict field made once per record (the
        # line reuses it) and once per template
        keyed = []                  # (template key, record, {field: its JSON text, where made})
        const: dict = {}            # template key -> {field: value} every record of the key has, as JSON writes it
        ctext: dict = {}            # template key -> {field: the template value's JSON text}
        enc = _enc
        for r in recs:
            key = (r["kind"], r["agent"], r.get("pc"), r.get("op"))
            texts = None
            c = const.get(key)
            if c is None:
                const[key] = {k: v for k, v in r.items() if k != "cycle"}
                ctext[key] = {}
            elif c:
                drop = None
                for k, v in c.items():
                    a = r.get(k, _MISSING)
                    if a is v:
                        continue
                    t = type(a)
                    if t is not type(v):
                        same = False
                    elif t is int or t is str:
                        same = a == v
                    else:
                        ct = ctext[key]
                        tv = ct.get(k)
                        if tv is None:
                            tv = ct[k] = enc(v)
                        if texts is None:
                            texts = {}
                        ta = texts[k] = enc(a)
                        same = ta == tv
                    if not same:
                        if drop is None:
                            drop = [k]
                        else:
                            drop.append(k)
                if drop:
                    for k in drop:
                        del c[k]
            keyed.append((key, r, texts))
        tid = {key: i for i, key in enumerate(const)}
        templates = list(const.values())
        head = {"kind": "header", "schema": TRACE_SCHEMA, "version": TRACE_SCHEMA_VERSION, **self.header,
                "records": self.count, "legend": self.LEGEND, "templates": templates}
        self._f.write(_dumps(head) + "\n")
        keys: dict = {}
        out = []
        for key, r, texts in keyed:
            c = const[key]
            parts = [f'{{"t":{tid[key]}']
            for k, v in r.items():
                if k not in c:
                    q = keys.get(k)
                    if q is None:
                        q = keys[k] = _esc(k)
                    x = None if texts is None else texts.get(k)
                    parts.append(f"{q}:{enc(v) if x is None else x}")
            out.append(",".join(parts) + "}\n")
        self._f.writelines(out)
        if self._own:
            self._f.close()
        self._f = None


def read_trace(source):
    """The records of a JSONL trace (a path, ``.gz`` included, a file object or an iterable of lines): the header
    first (as written, ``templates`` included), then each record whole (its template's fields and its own, ``kind,
    cycle, cta, agent`` first) with each register write decoded (:func:`decode_lanes`) to the list of its active
    lanes' values and an agent's ``runs`` to its ``ranges`` (``[[start, end)...]``)."""
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        import gzip
        opener = gzip.open if str(source).endswith(".gz") else open
        with opener(source, "rt") as f:
            yield from read_trace(f)
        return
    templates: list = []
    for line in source:
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("kind") == "header":
            templates = r.get("templates", [])
            yield r
            continue
        full = {**templates[r.pop("t")], **r} if "t" in r else r
        out = {k: full[k] for k in ("kind", "cycle", "cta", "agent") if k in full}
        out.update((k, v) for k, v in full.items() if k not in out)
        if "runs" in out:
            out["ranges"] = runs_ranges(out.pop("runs"))
        if out.get("kind") == "inst" and "writes" in out:
            n = bin(out["mask"]).count("1")
            out["writes"] = {k: decode_lanes(v, n) for k, v in out["writes"].items()}
        yield out


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


__all__ = ["Event", "InstRetired", "Stall", "MemAccess", "SyncEvent", "AsyncEvent", "AsyncIssue", "AsyncComplete",
           "RegAccess", "ObservationBus", "JsonlTracer", "EventRecorder", "trace_record", "encode_lanes", "decode_lanes",
           "read_trace", "runs_ranges", "merge_ranges", "tmem_rects",
           "TRACE_SCHEMA", "TRACE_SCHEMA_VERSION"]
