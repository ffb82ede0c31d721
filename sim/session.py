"""The debugger's engine: run a launch step by step, stop on breakpoints, watchpoints and findings, go back in time.

    >>> s = Session(launch)
    >>> s.step()                          # one warp-instruction; returns what retired
    >>> s.step(5, warp=1)                 # until warp 1 has retired 5 more
    >>> s.run(until=42)                   # until an instruction of PTX line 42 retired (error if it never can)
    >>> s.run(until={"warp": 1, "line": 89})
    >>> s.run(until=lambda s: s.mbarrier(0x400).phase == 1)
    >>> s.reg("%r5", warp=0); s.reg("%r5", warp=0, ptype="f16x2")     # 32 lanes (as f16 pairs)
    >>> s.smem_view(0x480, (32,), "u32"); s.tmem_view(range(0, 32), range(0, 8), "f32")
    >>> b = s.break_at(89, warp=1, cond="%r5 > 3"); w = s.watch_smem(0x480, 4); s.break_finding(2)
    >>> s.cont()                          # to the next breakpoint / watchpoint / finding, or the end
    >>> s.reverse_step(); s.reverse_cont()   # back one instruction; back to the last stop (the write of a watch)
    >>> s.schedule_first(1); s.delay("tma")  # force an interleaving: the run restarts under it, same seed
    >>> res = s.finish()                  # run to the end; a Result like run_launch's

**Positions.**  A session's position is the number of simulator events processed since the launch began
(:attr:`Session.pos`).  Every warp-instruction retires in one event and every async completion (a TMA write into
SMEM, a tensor-pipe write into TMEM, an mbarrier phase flip) happens in one, so a watchpoint stops exactly after
the event that wrote the watched bytes, whichever agent wrote them.

**Reverse execution** is deterministic replay: the schedule is a function of the launch, the seed, the schedule
knobs and the timing config, so a fresh simulation of the same launch processed for ``p`` events *is* the state
at position ``p`` (tests/debugger/test_reverse.py checks this against full traces).  :meth:`Session.goto` replays
to any position; :meth:`reverse_step` goes to just before the last retired warp-instruction (of a warp, if
given); :meth:`reverse_cont` replays once from the start with the stop conditions recording instead of
stopping, then lands on the last stop before the current position -- for a watchpoint, right after the write
that last changed the watched value.  Replay starts from the nearest *checkpoint* at or before the target: in
this process the only checkpoint is the launch itself (a simpy simulation holds generator frames, which cannot
be copied); ``tcsim debug`` adds periodic checkpoints as forked processes (:mod:`tcsim.debugger.checkpoints`).

**Forced interleavings** (:meth:`schedule_first`, :meth:`schedule_last`, :meth:`delay`) are a
:class:`tcsim.explore.Schedule` / arch-config latency knob; a schedule decides the whole run, so setting one
restarts the run (the breakpoints and watchpoints stay).

Errors in the kernel propagate as :class:`tcsim.isa.errors.TcsimError` with their location (so
``pdb.post_mortem`` lands in the semantics function that raised); misuse of the session (a warp, CTA, register,
mbarrier or line that does not exist, a ``run(until=...)`` that can never hold or did not before the kernel ended)
raises :class:`DebugError` (a ``TcsimError``; the lookups also a ``LookupError``) naming what exists.
"""
from __future__ import annotations

import difflib
import inspect
import re
import time
import weakref
from dataclasses import dataclass, field

import numpy as np
import simpy

from tcsim.isa.errors import SourceLoc, TcsimError
from .launch import Launch, Prepared
from .ptxtypes import to_type

_CURRENT: "weakref.ref | None" = None
#: how the debugger names the agents of observation events
UNIT_NAMES = {"tma": "TMA engine", "tensor_pipe": "tensor pipe", "tcgen05": "tcgen05 ld/st unit",
              "lsu": "cp.async unit", "wgmma": "wgmma unit", "barrier": "barrier unit"}


def current():
    """The Session most recently created or stepped in this process (``tcsim.breakpoint()`` opens it), or None."""
    return _CURRENT() if _CURRENT is not None else None


class DebugError(TcsimError):
    """Misuse of a debugging session: a warp, CTA, register, mbarrier or line that does not exist, a stop
    condition that can never hold."""

    kind = "debugger error"


class DebugLookupError(DebugError, KeyError):
    """A name or number the session does not have (a warp, CTA, register, mbarrier, breakpoint)."""

    def __str__(self) -> str:
        return self.format()


class UntilNotReached(DebugError):
    """``run(until=...)``: the kernel ended (or the step budget ran out) before the condition held."""


@dataclass
class Retired:
    """One retired warp-instruction (``pos``: the session position right after it)."""

    cycle: float
    cta: tuple
    warp: int
    pc: int
    line: int
    text: str
    mask: int
    writes: dict
    pos: int = 0

    @property
    def lanes(self) -> list:
        return [i for i in range(32) if self.mask >> i & 1]

    def __str__(self) -> str:
        return (f"[{self.cycle:>6}] CTA {self.cta} warp {self.warp} line {self.line}: {self.text}  "
                f"(mask {self.mask:08x})")


@dataclass
class Stop:
    """Why the session stopped: ``reason`` ('step', 'breakpoint', 'watchpoint', 'finding', 'until', 'exited',
    'error', 'position'), a message, the instruction that retired last, and for a watchpoint the writer and the
    old and new value."""

    reason: str
    message: str
    pos: int
    retired: Retired | None = None
    point: object = None
    old: object = None
    new: object = None
    writer: str | None = None
    finding: object = None

    def __str__(self) -> str:
        return self.message


# ---------------------------------------------------------------------------------------------- stop points
_REG = re.compile(r"%[A-Za-z_][\w$]*(?:\.[xyzw])?")


@dataclass
class Breakpoint:
    """Stop after an instruction of PTX ``line`` retires (in ``warp`` / ``cta`` if given, when ``cond`` holds for
    some executing lane).  ``temporary``: deleted at its first stop (``tbreak``)."""

    id: int
    line: int
    cond: str | None = None
    warp: int | None = None
    cta: int | None = None
    temporary: bool = False
    enabled: bool = True
    hits: int = 0
    _code: object = field(default=None, repr=False)

    def describe(self) -> str:
        s = f"{'tbreak' if self.temporary else 'break'} line {self.line}"
        if self.warp is not None:
            s += f" warp {self.warp}"
        if self.cta is not None:
            s += f" cta {self.cta}"
        if self.cond:
            s += f" if {self.cond}"
        return s + ("" if self.enabled else " (disabled)") + f" -- hit {self.hits} time{'s' * (self.hits != 1)}"


@dataclass
class FindingBreak:
    """Stop when the run records a finding (of class ``cls``, or any)."""

    id: int
    cls: int | None = None
    enabled: bool = True
    hits: int = 0
    temporary: bool = False

    def describe(self) -> str:
        from .findings import CLASSES
        what = "any finding" if self.cls is None else f"finding class {self.cls} ({CLASSES[self.cls]})"
        return f"break on {what}" + ("" if self.enabled else " (disabled)") + \
            f" -- hit {self.hits} time{'s' * (self.hits != 1)}"


@dataclass
class Watchpoint:
    """Stop when the watched value changes: ``kind`` 'smem' (``cta``, ``start`` offset in the shared window,
    ``size`` bytes), 'gmem' (``start`` address, ``size`` bytes), 'tmem' (``cta``, ``lanes`` and ``cols`` as
    [lo, hi) pairs) or 'mbarrier' (``cta``, ``start`` offset)."""

    id: int
    kind: str
    cta: int = 0
    start: int = 0
    size: int = 0
    lanes: tuple = (0, 0)
    cols: tuple = (0, 0)
    label: str = ""
    dtype: str | None = None
    enabled: bool = True
    hits: int = 0
    last: object = field(default=None, repr=False)

    def describe(self) -> str:
        return f"watch {self.label}" + ("" if self.enabled else " (disabled)") + \
            f" -- changed {self.hits} time{'s' * (self.hits != 1)}"

    def touched_by(self, ev, cta_index_of) -> bool:
        """Whether the event ``ev`` may change the watched value."""
        k = self.kind
        if k == "mbarrier":
            return ev.kind == "sync" and ev.mbarrier == self.start and ev.op.startswith("mbarrier.") and \
                cta_index_of(ev.target_cta if ev.target_cta is not None else ev.cta) == self.cta
        if ev.kind != "mem" or not ev.is_write:
            return False
        sp = ev.space
        if k == "gmem":
            if sp != "global":
                return False
        elif k == "smem":
            if not sp.startswith("shared"):
                return False
            if sp == "shared::cluster" and ev.agent == "warp":     # DSMEM: the rank field names the target CTA
                lo, hi = self.start, self.start + self.size
                return any(cta_index_of(ev.cta, a >> 24) == self.cta and (a & 0xFFFFFF) < hi and
                           (a & 0xFFFFFF) + ev.size > lo for a in ev.addrs)
            if cta_index_of(ev.cta) != self.cta:
                return False
        elif k == "tmem":
            if sp != "tmem" or cta_index_of(ev.cta) != self.cta:
                return False
            (l0, l1), (c0, c1) = self.lanes, self.cols
            n = max(1, ev.size // 4)
            for a in ev.addrs:
                lane, col = (a >> 16) & 0xFFFF, a & 0xFFFF
                if l0 <= lane < l1 and col < c1 and col + n > c0:
                    return True
            return False
        lo, hi = self.start, self.start + self.size
        if k == "smem":
            return any(((a & 0xFFFFFF) < hi and (a & 0xFFFFFF) + ev.size > lo) for a in ev.addrs)
        return any(a < hi and a + ev.size > lo for a in ev.addrs)


# ---------------------------------------------------------------------------------------------- typed values
def typed(raw: np.ndarray, ptype: str) -> np.ndarray:
    """Raw register / memory bits viewed as ``ptype`` (a PTX type name: u32, s16, f32, f16, bf16, f16x2, bf16x2,
    e4m3, e5m2, e4m3x2, e5m2x2, b64...): packed types give a trailing axis of 2."""
    import ml_dtypes
    t = ptype.lstrip(".")
    small = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
             "e5m2": ml_dtypes.float8_e5m2}
    if t.endswith("x2") and t[:-2] in small:
        half = np.dtype(small[t[:-2]]).itemsize
        bits = np.ascontiguousarray(raw).astype({1: np.uint16, 2: np.uint32}[half], copy=False) \
            if raw.dtype.itemsize != 2 * half else np.ascontiguousarray(raw)
        return bits.view(small[t[:-2]]).reshape(bits.shape + (2,))
    if t in small:
        size = np.dtype(small[t]).itemsize
        u = {1: np.uint8, 2: np.uint16}[size]
        bits = np.ascontiguousarray(raw)
        if bits.dtype.itemsize != size:
            bits = bits.astype(u)
        return bits.view(small[t])
    return to_type(np.ascontiguousarray(raw), t)


def _np_dtype(ptype: str):
    """The numpy dtype of one element of ``ptype`` (a memory view's element)."""
    import ml_dtypes
    t = ptype.lstrip(".")
    table = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
             "e5m2": ml_dtypes.float8_e5m2, "f32": np.float32, "f64": np.float64, "tf32": np.float32}
    if t in table:
        return np.dtype(table[t])
    if t[:1] in "usb" and t[1:].isdigit() and int(t[1:]) in (8, 16, 32, 64):
        return np.dtype(("i" if t[0] == "s" else "u") + str(int(t[1:]) // 8))
    raise DebugError(f"unknown element type {ptype!r}",
                     expected="a PTX type: u8/s8/b8 .. u64/s64/b64, f16, bf16, f32, f64, tf32, e4m3, e5m2")


# ---------------------------------------------------------------------------------------------- the session
class Session:
    """A launch under the debugger (module docstring).  ``seed`` / ``schedule`` / ``timing`` / ``strict`` /
    ``detect``: as :func:`tcsim.launch.run_launch`; ``observers`` see every event, replays included."""

    #: the session observes these event kinds (retirements, memory writes for watchpoints, sync events for
    #: mbarrier watchpoints and the async ops in flight)
    kinds = ("inst", "mem", "sync")

    def __init__(self, launch: Launch, *, seed: int | None = None, max_instructions: int | None = None,
                 observers=(), timing=False, schedule=None, strict: bool = False, detect: bool = True,
                 max_seconds: float | None = None):
        global _CURRENT
        if not isinstance(launch, Launch):
            raise DebugError(f"Session needs a tcsim.launch.Launch, got {type(launch).__name__}")
        self.launch = launch
        self.seed = seed
        self.schedule = schedule
        self.timing_option = timing
        self._opts = dict(max_instructions=max_instructions, strict=strict, detect=detect, max_seconds=max_seconds)
        self._user_observers = tuple(observers)
        self.keep_history = 10_000
        self.breakpoints: dict = {}
        self.watchpoints: dict = {}
        self._ids = 0
        self.stop: Stop | None = None
        #: the last replay's wall time (s) and events replayed (what reverse execution cost)
        self.last_replay = (0.0, 0)
        #: a callable(session, target) -> bool that may satisfy a replay in another way (tcsim debug's forked
        #: checkpoints); None: replay in this process
        self.replayer = None
        #: called after every event of a run or replay (tcsim debug's checkpoints); None: nothing
        self.on_position = None
        self._dirty = False                     # an event was interrupted midway: the next travel replays
        self._line_pcs: dict | None = None      # PTX line -> PCs (built on first use)
        self._ptx_cache: list | None = None     # the PTX text's lines (listings)
        self._t0 = 0.0                          # perf_counter when the current stretch of simulation began
        self._start()
        _CURRENT = weakref.ref(self)

    # ------------------------------------------------------------------------------------------ the run
    def _start(self) -> None:
        """A fresh simulation of the launch at position 0 (same seed, schedule and timing)."""
        self._last: Retired | None = None
        self.history: list[Retired] = []
        self._retire_pos: list[int] = []        # position of each retired warp-instruction, in order
        self._warp_retires: dict = {}           # (cta index, warp) -> [positions]
        self._inflight: dict = {}               # op_id -> AsyncIssue event (issued, not completed)
        self._issues: dict = {}                 # op_id -> AsyncIssue event (every op of the run)
        self._touched: list = []                # (watchpoint, event) seen in the current event
        self._step_retired: list[Retired] = []  # retired in the current event
        self.pos = 0
        self.done = False
        self.error: BaseException | None = None
        self._findings_seen = 0
        self._result = None
        self._prep = Prepared(self.launch, seed=self.seed, observers=(self,) + self._user_observers,
                              timing=self.timing_option, schedule=self.schedule, tier="reference", **self._opts)
        self.sim = self._prep.sim
        self._cta_ids = {}
        for wp in self.watchpoints.values():
            wp.last = self._wp_value(wp, quiet=True)

    def on_event(self, ev) -> None:
        kind = ev.kind
        if kind == "inst":
            r = Retired(ev.cycle, ev.cta, ev.warp, ev.pc, ev.line, ev.text, ev.mask, dict(ev.writes), self.pos + 1)
            self._last = r
            self._step_retired.append(r)
            self.history.append(r)
            if len(self.history) > self.keep_history:
                del self.history[: len(self.history) - self.keep_history]
            self._retire_pos.append(r.pos)
            self._warp_retires.setdefault((self._cta_index(ev.cta), ev.warp), []).append(r.pos)
            return
        if kind == "sync":
            op = ev.op
            if op == "async.issue":
                self._inflight[ev.op_id] = ev
                self._issues[ev.op_id] = ev
            elif op == "async.complete":
                self._inflight.pop(ev.op_id, None)
        if self.watchpoints:
            for wp in self.watchpoints.values():
                if wp.enabled and wp.touched_by(ev, self._cta_index):
                    self._touched.append((wp, ev))

    def _cta_index(self, ctaid, rank: int | None = None) -> int:
        """The launch-order index of a CTA (by ctaid; with ``rank``: of the CTA of that rank in its cluster)."""
        if rank is not None:
            c = self.sim.cta_index.get(tuple(ctaid))
            if c is None or not 0 <= rank < len(c.cluster.ctas):
                return -1
            return c.cluster.ctas[rank].index
        ctaid = tuple(ctaid)
        i = self._cta_ids.get(ctaid)
        if i is None:
            c = self.sim.cta_index.get(ctaid)
            i = c.index if c is not None else -1
            self._cta_ids[ctaid] = i
        return i

    def _event(self) -> bool:
        """Process one simulator event; False when none is left (the kernel ended)."""
        sim = self.sim
        self._touched.clear()
        self._step_retired.clear()
        if sim.error is not None:
            raise sim.error
        from .engine import _Stop
        try:
            sim.env.step()
        except simpy.core.EmptySchedule:
            return False
        except _Stop:
            self.pos += 1
            raise sim._with_findings(sim.error)
        self.pos += 1
        if sim.error is not None:
            raise sim._with_findings(sim.error)
        return True

    def _ended(self) -> Stop:
        self.done = True
        now = time.perf_counter()
        self.sim.wall_time += now - self._t0       # (the Result's wall_s: the simulation work of this run)
        self._t0 = now
        self._prep.sim.finish()         # a deadlock (live warps left) raises here, located
        self._prep.close()
        self._result = self._prep.result()
        return Stop("exited", f"the kernel exited: {self.sim.retired} warp-instructions, {int(self.sim.env.now)} "
                              f"cycles", self.pos, self._last)

    def _advance(self, should_stop=None, max_events: int | None = None, record: list | None = None) -> Stop:
        """Process events until ``should_stop()`` gives a Stop, a breakpoint / watchpoint / finding fires, or the
        kernel ends.  ``record``: collect the stops instead of stopping (reverse-continue's pass)."""
        global _CURRENT
        _CURRENT = weakref.ref(self)
        if self.done:
            if self.error is not None:
                raise self.error
            return Stop("exited", "the kernel has exited (`run` restarts it; reverse-step goes back)", self.pos,
                        self._last)
        self._t0 = time.perf_counter()
        n = 0
        try:
            while True:
                try:
                    if not self._event():
                        st = self._ended()
                        return st
                except TcsimError as e:
                    self.done = True
                    self.error = e
                    raise
                except KeyboardInterrupt:
                    self._dirty = True          # (mid-event: the next travel replays to self.pos)
                    raise
                n += 1
                if self.on_position is not None:
                    self.on_position(self)
                st = self._check_points()
                if st is not None:
                    if record is not None:
                        record.append(st)
                    else:
                        return st
                if should_stop is not None:
                    st = should_stop()
                    if st is not None:
                        return st
                if max_events is not None and n >= max_events:
                    return Stop("position", f"at position {self.pos}", self.pos, self._last)
        finally:
            self.sim.wall_time += time.perf_counter() - self._t0

    def _check_points(self) -> Stop | None:
        """The breakpoint, watchpoint or finding stop of the event just processed, or None."""
        stops = []
        for r in self._step_retired:
            for bp in self.breakpoints.values():
                if isinstance(bp, Breakpoint) and bp.enabled and bp.line == r.line and self._bp_matches(bp, r):
                    bp.hits += 1
                    stops.append(Stop("breakpoint", f"Breakpoint {bp.id}: CTA {r.cta} warp {r.warp} "
                                                    f"{_lanes(r.mask)} retired line {r.line}: {r.text}",
                                      self.pos, r, point=bp))
        if self._touched:
            seen = set()
            for wp, ev in list(self._touched):
                if wp.id in seen:
                    continue
                seen.add(wp.id)
                new = self._wp_value(wp)
                old = wp.last
                if _same(old, new):
                    continue
                wp.last = new
                wp.hits += 1
                writers = [self._writer(e, wp) for w2, e in self._touched if w2 is wp]
                writer = "; ".join(dict.fromkeys(writers))
                stops.append(Stop("watchpoint", f"Watchpoint {wp.id}: {wp.label} changed, written by {writer}\n"
                                                f"  old: {self.format_value(wp, old)}\n"
                                                f"  new: {self.format_value(wp, new)}",
                                  self.pos, self._last, point=wp, old=old, new=new, writer=writer))
        items = self.sim.findings.items
        if len(items) > self._findings_seen:
            new_f = items[self._findings_seen:]
            self._findings_seen = len(items)
            for fb in self.breakpoints.values():
                if isinstance(fb, FindingBreak) and fb.enabled:
                    for f in new_f:
                        if f.severity != "lint" and (fb.cls is None or f.cls == fb.cls):
                            fb.hits += 1
                            stops.append(Stop("finding", f"Finding (break {fb.id}): {f.format()}", self.pos,
                                              self._last, point=fb, finding=f))
                            break
        if not stops:
            return None
        for st in stops:
            if getattr(st.point, "temporary", False):
                self.breakpoints.pop(st.point.id, None)
        if len(stops) == 1:
            return stops[0]
        first = stops[0]
        first.message = "\n".join(s.message for s in stops)
        return first

    def _bp_matches(self, bp: Breakpoint, r: Retired) -> bool:
        if bp.warp is not None and r.warp != bp.warp:
            return False
        if bp.cta is not None and self._cta_index(r.cta) != bp.cta:
            return False
        if bp.cond:
            return self._eval_cond(bp, r)
        return True

    def _eval_cond(self, bp: Breakpoint, r: Retired) -> bool:
        """The condition, evaluated lane by lane over the lanes that executed: true for some lane."""
        cta = self._cta_index(r.cta)
        w = self.warp(r.warp, cta)
        vals = [w.regs[name] for name in _REG.findall(bp.cond)]
        for lane in range(32):
            if not (r.mask >> lane) & 1:
                continue
            env = {"warp": r.warp, "cta": cta, "cycle": r.cycle, "lane": lane}
            for i, v in enumerate(vals):
                x = v[lane]
                env[f"_r{i}"] = float(x) if v.dtype.kind == "f" else bool(x) if v.dtype == np.bool_ else int(x)
            try:
                if eval(bp._code, {"__builtins__": {}}, env):       # noqa: S307 -- the user's own condition
                    return True
            except Exception as e:  # noqa: BLE001 -- reported with the breakpoint, not as a traceback
                raise DebugError(f"breakpoint {bp.id} condition `{bp.cond}` failed in lane {lane}: "
                                 f"{type(e).__name__}: {e}") from None
        return False

    def _writer(self, ev, wp=None) -> str:
        """Who wrote: a warp's instruction (line, text, warp and the lanes that wrote the watched bytes) or an async
        unit completing a warp's op."""
        cta = f"CTA {tuple(ev.cta)}"
        if ev.agent == "warp":
            lanes = getattr(ev, "lanes", None) or ()
            if wp is not None and ev.kind == "mem" and len(lanes) == len(ev.addrs) and wp.kind in ("smem", "gmem"):
                lo, hi = wp.start, wp.start + wp.size
                mask = 0xFFFFFF if wp.kind == "smem" else -1
                lanes = [ln for a, ln in zip(ev.addrs, lanes) if (a & mask) < hi and (a & mask) + ev.size > lo]
            lt = _lanes_of(sorted(set(lanes))) if lanes else ""
            body = self.sim.program.body
            text = f" `{body[ev.pc]}`" if ev.pc is not None and ev.pc < len(body) else ""
            return f"line {ev.line}{text} (warp {ev.warp}{' ' + lt if lt else ''}, {cta}, cycle {ev.cycle:g})"
        unit = UNIT_NAMES.get(ev.agent, ev.agent.replace("_", " "))
        iss = self._issues.get(ev.op_id) if ev.op_id is not None else None
        if iss is not None:
            return (f"the {unit} completing `{iss.detail.get('what', iss.what or '?')}` issued at line {iss.line} "
                    f"by warp {iss.issuer_warp if iss.issuer_warp is not None else '?'} ({cta}, cycle {ev.cycle:g})")
        return f"the {unit} ({cta}, cycle {ev.cycle:g})"

    # ------------------------------------------------------------------------------------------ stepping
    def step(self, n: int = 1, warp: int | None = None, cta=0) -> Retired | None:
        """Execute ``n`` warp-instructions (of ``warp`` only, when given; the others run as the schedule has them)
        and return the last one; None when the kernel ended.  Breakpoints, watchpoints and finding breaks stop it
        early (:attr:`stop` says why)."""
        if n < 1:
            raise DebugError(f"step count {n}", expected="a positive number of warp-instructions")
        key = None
        if warp is not None:
            self.warp(warp, cta)                        # (a warp that does not exist: DebugLookupError)
            key = (self._cta_of(cta).index, warp)
        left = [n]

        def done():
            for r in self._step_retired:
                if key is None or (self._cta_index(r.cta), r.warp) == key:
                    left[0] -= 1
                    if left[0] <= 0:
                        return Stop("step", str(r), self.pos, r)
            return None

        self.stop = self._advance(done)
        if self.stop.reason == "exited":
            return None
        return self._last

    def next(self, warp: int | None = None, cta=0) -> Retired | None:
        """Like :meth:`step` (one instruction of ``warp``, default the warp that retired last), but a ``call``
        counts as one step: run until the warp is back after it."""
        if warp is None:
            if self._last is None:
                return self.step()
            warp, cta = self._last.warp, self._cta_index(self._last.cta)
        r = self.step(1, warp=warp, cta=cta)
        if r is None or self.stop.reason != "step" or self.sim.program.body[r.pc].opcode != "call":
            return r
        w = self.warp(warp, cta)
        back = r.pc + 1
        key = (self._cta_of(cta).index, warp)

        def returned():
            for x in self._step_retired:
                if (self._cta_index(x.cta), x.warp) == key and back in set(int(p) for p in w.pc[w.alive]):
                    return Stop("step", str(x), self.pos, x)
            return None

        self.stop = self._advance(returned)
        return None if self.stop.reason == "exited" else self._last

    def cont(self) -> Stop:
        """Run to the next breakpoint, watchpoint or finding break, or to the end."""
        self.stop = self._advance()
        return self.stop

    def run(self, until=None, max_steps: int = 10_000_000) -> Retired | None:
        """Run until ``until`` holds after a retired instruction, or to the end when None.

        ``until`` may be a PTX line number (an instruction of that line retired), a dict of fields that the
        retired instruction must match (``{'line': 42, 'warp': 1}``; also ``cta``), or a callable
        ``f(session) -> bool``.  A line without instructions or a warp / CTA that does not exist raise
        :class:`DebugError` at once; a condition that did not hold before the kernel ended (or within
        ``max_steps`` instructions) raises :class:`UntilNotReached` saying what did happen.  Breakpoints,
        watchpoints and finding breaks are not consulted (use :meth:`cont`)."""
        if until is None:                   # to the end (the run's own budget applies: tcsim.watch)
            self.stop = self._advance_plain(lambda: None, None)
            return None
        if isinstance(until, bool) or not (isinstance(until, (int, dict)) or callable(until)):
            raise DebugError(f"run(until={until!r})", expected="a PTX line number, a dict of Retired fields "
                             "({'line': 89, 'warp': 1}) or a callable f(session) -> bool")
        if isinstance(until, int):
            until = {"line": until}
        if isinstance(until, dict):
            fields = {"line", "warp", "cta", "pc", "text"}
            bad = set(until) - fields
            if bad:
                raise DebugError(f"run(until=...) has no field {sorted(bad)[0]!r}",
                                 expected="fields of a retired instruction: " + ", ".join(sorted(fields)))
            if "line" in until:
                self.pcs_of_line(until["line"])
            cta = until.get("cta", 0 if "warp" in until else None)
            if cta is not None:
                self._cta_of(cta)
                if "warp" in until:
                    self.warp(until["warp"], cta)
            want = dict(until)
            if "cta" in want:
                want["cta"] = self._cta_of(want["cta"]).ctaid

            def cond_r(r):
                return all(getattr(r, k) == v for k, v in want.items())
            desc = ", ".join(f"{k} {v}" for k, v in until.items())

            def stop_fn():
                for r in self._step_retired:
                    if cond_r(r):
                        return Stop("until", str(r), self.pos, r)
                return None
            self.stop = self._advance_plain(stop_fn, max_steps, desc, until)
            return self.stop.retired if self.stop.reason == "until" else None
        fn = until

        def stop_call():
            if self._step_retired and fn(self):
                return Stop("until", str(self._last), self.pos, self._last)
            return None
        self.stop = self._advance_plain(stop_call, max_steps, getattr(fn, "__name__", "the condition"), None)
        return self._last

    def _advance_plain(self, stop_fn, max_steps, desc=None, until=None) -> Stop:
        """:meth:`_advance` without breakpoints (``run``): UntilNotReached when the kernel ends first."""
        saved = self.breakpoints, self.watchpoints
        self.breakpoints, self.watchpoints = {}, {}
        start = self.sim.retired

        def fn():
            st = stop_fn()
            if st is None and max_steps is not None and self.sim.retired - start >= max_steps:
                raise UntilNotReached(f"run(until={desc}) did not hold within {max_steps} warp-instructions "
                                      f"(now at position {self.pos}, cycle {self.sim.env.now:g})")
            return st
        try:
            st = self._advance(fn)
        finally:
            self.breakpoints, self.watchpoints = saved
        if st.reason == "exited" and desc is not None:
            raise UntilNotReached(self._never_msg(desc, until), self._loc_of_line(until.get("line"))
                                  if isinstance(until, dict) and "line" in until else None)
        return st

    def _never_msg(self, desc, until) -> str:
        msg = f"the kernel ended ({self.sim.retired} warp-instructions, {int(self.sim.env.now)} cycles) before " \
              f"run(until={desc}) held"
        if isinstance(until, dict) and "line" in until:
            line = until["line"]
            who = [f"warp {w}" + (f" of CTA {self.sim.ctas[c].ctaid}" if len(self.sim.ctas) > 1 else "")
                   for (c, w) in sorted(self._warp_retires)
                   if any(h.line == line and h.warp == w for h in self.history)]
            msg += f"; line {line} was retired by " + (", ".join(who) if who else "no warp") + \
                (" in the last instructions kept" if len(self.history) >= self.keep_history else "")
        return msg

    def finish(self):
        """Run to completion (no stops) and return the launch's :class:`tcsim.launch.Result`."""
        if not self.done:
            self.run()
        if self.error is not None:
            raise self.error
        return self._result

    # ------------------------------------------------------------------------------------------ time travel
    def goto(self, pos: int) -> Stop:
        """Put the session at position ``pos`` (events since the launch began) by deterministic replay: forward
        from here when ``pos`` is ahead, else from the nearest checkpoint (module docstring)."""
        if isinstance(pos, bool) or not isinstance(pos, (int, np.integer)) or pos < 0:
            raise DebugError(f"position {pos!r}", expected="a position >= 0 (events since the launch began)")
        return self._travel(int(pos), None)

    def _travel(self, pos: int, then) -> Stop:
        """Go to ``pos`` and do ``then``: None (report the position), ``("msg", text)`` (report ``text``) or
        ``("arm1",)`` (process one more event with the stop points armed: reverse-continue's landing).  Backwards
        (or from a finished run) this replays from the nearest checkpoint: :attr:`replayer` (tcsim debug's forked
        checkpoints; it may continue the session in another process and not return), else the launch."""
        t0 = time.perf_counter()
        start = self.pos
        if pos < self.pos or (self.done and pos != self.pos) or self._dirty:
            if self.replayer is not None:
                self.replayer(self, pos, then)          # (returns only when no checkpoint serves)
            self._start()
            start = 0
            if then is not None and then[0] == "search":        # in process: one replay from the launch
                stops = self._record(then[1])
                st = self._land(stops)
                self.last_replay = (time.perf_counter() - t0, then[1])
                return st
        self._replay_to(pos)
        self.last_replay = (time.perf_counter() - t0, self.pos - start)
        return self._then(then)

    def _then(self, then) -> Stop:
        if then is not None and then[0] == "search":
            return self._search(then[1])
        if then is not None and then[0] == "arm1":
            st = self._advance(max_events=1)
            if st.reason == "position":       # (cannot happen: the replay is deterministic)
                raise DebugError(f"replay diverged: no stop at position {self.pos}")
        elif then is not None and then[0] == "msg":
            st = Stop("position", then[1], self.pos, self._last)
        else:
            st = Stop("position", f"at position {self.pos}" + (f", after: {self._last}" if self._last else ""),
                      self.pos, self._last)
        self.stop = st
        return st

    def _replay_to(self, pos: int) -> None:
        """Process events up to position ``pos`` with the stop points off (breakpoint hit counts unchanged)."""
        saved = self.breakpoints
        self.breakpoints = {}
        wps = self.watchpoints
        self.watchpoints = {}
        self._dirty = False
        try:
            self._t0 = time.perf_counter()
            hook = self.on_position
            while self.pos < pos and not self.done:
                if not self._event():
                    self._ended()
                elif hook is not None:
                    hook(self)
            self.sim.wall_time += time.perf_counter() - self._t0
            self._findings_seen = len(self.sim.findings.items)
        finally:
            self.breakpoints = saved
            self.watchpoints = wps
            for wp in wps.values():
                wp.last = self._wp_value(wp, quiet=True)

    def reverse_step(self, n: int = 1, warp: int | None = None, cta=0) -> Stop:
        """Go back to just before the ``n``-th last retired warp-instruction (of ``warp``, when given)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise DebugError(f"reverse-step count {n!r}", expected="a positive number of warp-instructions")
        if warp is not None:
            self.warp(warp, cta)
            ps = self._warp_retires.get((self._cta_of(cta).index, warp), [])
            ps = [p for p in ps if p <= self.pos]
            who = f"warp {warp}"
        else:
            ps = [p for p in self._retire_pos if p <= self.pos]
            who = "the kernel"
        if len(ps) < n:
            raise DebugError(f"cannot go back {n} instruction{'s' * (n != 1)}: {who} has retired {len(ps)} so far "
                             f"(position {self.pos})")
        target = ps[-n] - 1
        undone = next((r for r in reversed(self.history) if r.pos == ps[-n] and
                       (warp is None or r.warp == warp)), None)
        what = f"line {undone.line} `{undone.text}` of warp {undone.warp} (CTA {undone.cta})" if undone else \
            f"the instruction at position {ps[-n]}"
        return self._travel(target, ("msg", f"back at position {target}: {what} has not executed yet"))

    def reverse_cont(self) -> Stop:
        """Go back to the last breakpoint / watchpoint / finding stop before the current position (for a
        watchpoint: right after the write that last changed the watched value); to the start when there is
        none.  A replay with the stop points recording finds the last stop; a second replay lands on it.  With
        checkpoints (:attr:`replayer`) the search goes back one checkpoint's stretch at a time."""
        here = self.pos
        if here == 0:
            raise DebugError("already at the start of the run (position 0)")
        return self._travel(here - 1, ("search", here))

    def _record(self, upper: int) -> list:
        """Replay from here to position ``upper - 1`` with the stop points recording instead of stopping: the
        stops, in order (hit counts and temporary breakpoints as they were)."""
        stops: list = []
        saved_hits = {k: v.hits for k, v in self.breakpoints.items()} | \
            {k: v.hits for k, v in self.watchpoints.items()}
        temps = {k: v for k, v in self.breakpoints.items() if getattr(v, "temporary", False)}
        for v in temps.values():
            v.temporary = False
        try:
            while self.pos < upper - 1 and not self.done:
                st = self._advance(max_events=upper - 1 - self.pos, record=stops)
                if st.reason == "exited":
                    break
        finally:
            for v in temps.values():
                v.temporary = True
            self._restore_hits(saved_hits)
        return [x for x in stops if x.pos < upper]

    def _restore_hits(self, saved: dict) -> None:
        for k, h in saved.items():
            p = self.breakpoints.get(k) or self.watchpoints.get(k)
            if p is not None:
                p.hits = h

    def _land(self, stops: list) -> Stop:
        """reverse-continue's landing: right after the last of ``stops`` (re-armed), or the start when none."""
        if not stops:
            return self._travel(0, ("msg", "no breakpoint, watchpoint or finding stop before here: back at the "
                                           "start of the run (position 0)"))
        saved = {k: v.hits for k, v in self.breakpoints.items()} | {k: v.hits for k, v in self.watchpoints.items()}
        st = self._travel(stops[-1].pos - 1, ("arm1",))
        self._restore_hits(saved)
        return st

    def _search(self, upper: int) -> Stop:
        """(resumed at a checkpoint by tcsim debug) the stops from here to ``upper - 1``: land on the last, else
        search the stretch of the checkpoint before this one."""
        k = self.pos
        stops = self._record(upper)
        if stops or k == 0:
            return self._land(stops)
        return self._travel(k - 1, ("search", k + 1))

    def restart(self) -> Stop:
        """Restart the run from the launch (same seed, schedule, timing; breakpoints and watchpoints stay)."""
        self._dirty = False
        self._start()
        self.stop = Stop("position", "restarted: position 0 (no instruction retired yet)", 0, None)
        return self.stop

    # ------------------------------------------------------------------------------------------ interleavings
    def _warp_number(self, warp: int, cta) -> int:
        """The schedule's number of a warp: creation order over the grid (CTA 0's warps first)."""
        c = self._cta_of(cta)
        self.warp(warp, cta)
        return c.index * len(c.warps) + warp

    def schedule_first(self, warp: int, cta=0) -> Stop:
        """Force ``warp`` ahead: it issues first among same-cycle issuers and every other warp waits extra cycles
        per instruction (:class:`tcsim.explore.Schedule`).  Restarts the run."""
        return self._reschedule(warp, cta, first=True)

    def schedule_last(self, warp: int, cta=0) -> Stop:
        """Force ``warp`` behind the others (lowest priority, extra cycles before each of its instructions)."""
        return self._reschedule(warp, cta, first=False)

    def _reschedule(self, warp, cta, first: bool) -> Stop:
        from .explore import SLOW, Schedule
        i = self._warp_number(warp, cta)
        n = len(self.sim.warps) + self.sim.clusters_pending() * len(self.sim.ctas[0].warps)
        old = self.schedule
        lat = dict(old.latency) if old is not None else {}
        if first:
            prio = {j: (0 if j == i else 1) for j in range(n)}
            slow = {j: SLOW for j in range(n) if j != i}
        else:
            prio = {j: (1 if j == i else 0) for j in range(n)}
            slow = {i: SLOW}
        what = f"warp {warp} {'first' if first else 'last'}"
        self.schedule = Schedule(what=what, seed=self.seed, priority=prio, slow=slow, latency=lat)
        return self._restarted(f"schedule: {what}")

    def delay(self, unit: str, when: str = "late") -> Stop:
        """Complete every op of an async unit ('tma', 'cp.async', 'tensor_pipe', 'tcgen05.st') at the latest
        (``when='late'``) or earliest ('early') latency the config allows.  Restarts the run."""
        from .explore import Schedule
        from .timing.params import LATENCY_KNOBS
        alias = {"mma": "tensor_pipe", "tensor": "tensor_pipe", "tc": "tensor_pipe", "cp_async": "cp.async",
                 "tmem": "tcgen05.st", "tcgen05": "tcgen05.st"}
        u = alias.get(unit, unit)
        if u not in LATENCY_KNOBS:
            raise DebugLookupError(f"no async unit {unit!r}", expected="one of " + ", ".join(LATENCY_KNOBS))
        if when not in ("late", "early", "default"):
            raise DebugError(f"delay {unit} {when}", expected="late, early or default")
        old = self.schedule
        lat = dict(old.latency) if old is not None else {}
        if when == "default":
            lat.pop(u, None)
        else:
            lat[u] = when
        kw = {} if old is None else dict(priority=old.priority, slow=old.slow, stall=old.stall)
        what = (old.what + ", " if old is not None and old.priority else "") + \
            ", ".join(f"{k} {v}" for k, v in sorted(lat.items()))
        self.schedule = Schedule(what=what or "default schedule", seed=self.seed, latency=lat, **kw)
        return self._restarted(f"schedule: {self.schedule.what}")

    def default_schedule(self) -> Stop:
        """Back to the default schedule (restarts the run)."""
        self.schedule = None
        return self._restarted("schedule: default")

    def _restarted(self, what: str) -> Stop:
        self._start()
        self.stop = Stop("position", f"{what}; the run restarted at position 0", 0, None)
        return self.stop

    # ------------------------------------------------------------------------------------------ stop points
    def _new_id(self) -> int:
        self._ids += 1
        return self._ids

    def pcs_of_line(self, line: int) -> list[int]:
        """The program counters of PTX ``line``; a line without instructions is a DebugError naming the nearest
        lines that have some."""
        if isinstance(line, bool) or not isinstance(line, (int, np.integer)):
            raise DebugError(f"line {line!r}", expected="a PTX line number")
        lines = self._lines()
        pcs = lines.get(int(line))
        if pcs:
            return pcs
        have = sorted(lines)
        below = [x for x in have if x < line]
        above = [x for x in have if x > line]
        near = ([f"{below[-1]} (`{self._text_of_line(below[-1])}`)"] if below else []) + \
            ([f"{above[0]} (`{self._text_of_line(above[0])}`)"] if above else [])
        raise DebugError(f"line {line} of {self._file()} holds no instruction of kernel "
                         f"{self.sim.program.kernel.name}", self._loc_of_line(line),
                         expected=("a line with an instruction; the nearest: " + " or ".join(near)) if near else None)

    def _lines(self) -> dict:
        """PTX line -> program counters of the user's instructions (not the sentinel after each function)."""
        got = self._line_pcs
        if got is None:
            prog = self.sim.program
            sentinels = {lf.base + len(lf.fn.body) for lf in prog.link.functions}
            got = {}
            for pc, ins in enumerate(prog.body):
                if pc not in sentinels and ins.loc is not None:
                    got.setdefault(ins.loc.line, []).append(pc)
            self._line_pcs = got
        return got

    def _text_of_line(self, line: int) -> str:
        for ins in self.sim.program.body:
            if ins.loc is not None and ins.loc.line == line:
                return str(ins)
        return ""

    def _file(self) -> str:
        body = self.sim.program.body
        return body[0].loc.file if body and body[0].loc is not None else "<ptx>"

    def _loc_of_line(self, line) -> SourceLoc | None:
        if line is None:
            return None
        return SourceLoc(self._file(), int(line), 1, self.source_line(int(line)))

    def break_at(self, line: int, *, cond: str | None = None, warp: int | None = None, cta: int | None = None,
                 temporary: bool = False) -> Breakpoint:
        """A breakpoint: stop after an instruction of PTX ``line`` retires (in ``warp`` / ``cta``; when ``cond``,
        a Python expression over registers such as ``%r5 > 3 and %p1``, holds for some executing lane)."""
        self.pcs_of_line(line)
        if warp is not None:
            self.warp(warp, 0 if cta is None else cta)
        if cta is not None:
            self._cta_of(cta)
        bp = Breakpoint(self._new_id(), int(line), cond, warp, cta, temporary)
        if cond:
            names = _REG.findall(cond)
            w = self.warp(warp if warp is not None else 0, cta if cta is not None else 0)
            for nme in names:
                if nme not in w.regs:
                    self._no_register(w, nme)
            expr = cond
            for i, nme in enumerate(names):
                expr = expr.replace(nme, f"_r{i}", 1)
            expr = _c_ops(expr)
            try:
                bp._code = compile(expr, f"<breakpoint {bp.id} condition>", "eval")
            except SyntaxError as e:
                raise DebugError(f"breakpoint condition `{cond}` is not an expression: {e.msg}",
                                 expected="a Python expression over registers, e.g. `%r5 == 3 and %p1`") from None
        self.breakpoints[bp.id] = bp
        return bp

    def break_finding(self, cls: int | None = None) -> FindingBreak:
        """Stop when a finding (of class ``cls``, :data:`tcsim.findings.CLASSES`) is recorded."""
        from .findings import CLASSES
        if cls is not None and cls not in CLASSES:
            raise DebugLookupError(f"no finding class {cls}", expected=f"a class 0..{max(CLASSES)}")
        fb = FindingBreak(self._new_id(), cls)
        self.breakpoints[fb.id] = fb
        return fb

    def delete(self, ident: int | None = None) -> None:
        """Delete breakpoint / watchpoint ``ident`` (all of them when None)."""
        if ident is None:
            self.breakpoints.clear()
            self.watchpoints.clear()
            return
        if self.breakpoints.pop(ident, None) is None and self.watchpoints.pop(ident, None) is None:
            have = sorted(list(self.breakpoints) + list(self.watchpoints))
            raise DebugLookupError(f"no breakpoint or watchpoint {ident}",
                                   expected="one of " + ", ".join(map(str, have)) if have else "none is set")

    def _add_watch(self, wp: Watchpoint) -> Watchpoint:
        wp.last = self._wp_value(wp)
        self.watchpoints[wp.id] = wp
        return wp

    def watch_smem(self, offset: int, size: int = 4, cta=0, dtype: str | None = None) -> Watchpoint:
        """Watch ``size`` bytes of shared memory at ``offset`` (a shared-window offset, as PTX addresses it)."""
        c = self._cta_of(cta)
        self._check_smem(c, offset, size)
        return self._add_watch(Watchpoint(self._new_id(), "smem", c.index, int(offset), int(size),
                                          label=f"smem 0x{offset:x}:{size} of CTA {c.ctaid}", dtype=dtype))

    def watch_gmem(self, arg, index: int = 0, count: int = 1) -> Watchpoint:
        """Watch element ``index`` (and the ``count`` after it) of array argument ``arg`` (its position, or the
        kernel's parameter name)."""
        i, name, orig, base = self._array_arg(arg)
        n = orig.size
        if not 0 <= index < n or index + count > n:
            raise DebugLookupError(f"{name}[{index}] is out of range: the argument has {n} elements",
                                   expected=f"an index in 0..{n - 1}")
        item = orig.dtype.itemsize
        label = f"{name}[{index}]" if count == 1 else f"{name}[{index}:{index + count}]"
        return self._add_watch(Watchpoint(self._new_id(), "gmem", 0, base + index * item, count * item, label=label,
                                          dtype=str(orig.dtype)))

    def watch_tmem(self, lanes, cols, cta=0, dtype: str | None = None) -> Watchpoint:
        """Watch TMEM ``lanes`` x ``cols`` (ranges or (lo, hi) pairs) of a CTA (values shown as ``dtype``: u32,
        s32, f32, f16x2, bf16x2; default hex)."""
        c = self._cta_of(cta)
        (l0, l1), (c0, c1) = _span(lanes, 128, "lanes"), _span(cols, 512, "columns")
        if dtype is not None:
            typed(np.zeros(1, np.uint32), dtype)        # (an unknown type: an error now, not at the stop)
        span = lambda a, b, w: f"{w} {a}" if b == a + 1 else f"{w}s {a}-{b - 1}"  # noqa: E731
        return self._add_watch(Watchpoint(self._new_id(), "tmem", c.index, lanes=(l0, l1), cols=(c0, c1),
                                          label=f"tmem {span(l0, l1, 'lane')} {span(c0, c1, 'column')} of CTA "
                                                f"{c.ctaid}", dtype=dtype))

    def watch_mbarrier(self, what, cta=0) -> Watchpoint:
        """Watch an mbarrier (its SMEM offset, or the name of the .shared variable holding it, ``name+8``)."""
        c = self._cta_of(cta)
        off = self.mbarrier_offset(what)
        self._check_smem(c, off, 8)
        return self._add_watch(Watchpoint(self._new_id(), "mbarrier", c.index, off, 8,
                                          label=f"mbarrier 0x{off:x}" + (f" ({what})" if isinstance(what, str)
                                                                         else "") + f" of CTA {c.ctaid}"))

    def mbarrier_offset(self, what) -> int:
        """The SMEM offset of an mbarrier given as an offset or a shared symbol (``full_bar``, ``full_bar+8``)."""
        if isinstance(what, (int, np.integer)):
            return int(what)
        s = str(what).strip()
        try:
            return int(s, 0)
        except ValueError:
            pass
        m = re.fullmatch(r"([A-Za-z_$][\w$]*)\s*(?:\+\s*(\w+))?", s)
        syms = self.sim.program.shared_symbols
        if m is None or m.group(1) not in syms:
            raise DebugLookupError(f"no shared variable {s!r}", expected="an SMEM offset or one of " +
                                   ", ".join(sorted(syms)) if syms else "an SMEM offset")
        return int(self._symbol_offset(m.group(1))) + (int(m.group(2), 0) if m.group(2) else 0)

    def _symbol_offset(self, name: str) -> int:
        sym = self.sim.program.shared_symbols[name]
        off = getattr(sym, "offset", None)
        return int(off if off is not None else sym)

    # ------------------------------------------------------------------------------------------ watch values
    def _wp_value(self, wp: Watchpoint, quiet: bool = False):
        k = wp.kind
        if k == "smem":
            c = self.sim.ctas[wp.cta] if wp.cta < len(self.sim.ctas) else None
            if c is None:
                return None
            return self._smem_bytes(c, wp.start, wp.size)
        if k == "gmem":
            return self.sim.gmem.peek(wp.start, wp.size)
        if k == "tmem":
            c = self.sim.ctas[wp.cta] if wp.cta < len(self.sim.ctas) else None
            if c is None or c.tmem is None:
                return None
            (l0, l1), (c0, c1) = wp.lanes, wp.cols
            return c.tmem.peek(l0, l1, c0, c1)
        c = self.sim.ctas[wp.cta] if wp.cta < len(self.sim.ctas) else None
        mb = c.mbarriers.get(wp.start) if c is not None else None
        if mb is None or not mb.valid:
            return None
        return (mb.phase, mb.pending, mb.expected, mb.tx)

    def format_value(self, wp: Watchpoint, v) -> str:
        if v is None:
            return {"tmem": "(no TMEM allocated yet)", "mbarrier": "(not initialised)"}.get(wp.kind, "(none)")
        if wp.kind == "mbarrier":
            ph, pend, exp, tx = v
            return f"phase {ph} (parity {ph & 1}), {pend}/{exp} arrivals pending, tx-count {tx}"
        if wp.kind == "tmem":
            if wp.dtype and wp.dtype not in ("u32", "b32"):
                return np.array2string(typed(v, wp.dtype), threshold=16, edgeitems=2)
            return np.array2string(v, formatter={"int": lambda x: f"0x{x:08x}"}, threshold=16, edgeitems=2)
        raw = np.asarray(v, dtype=np.uint8)
        if wp.dtype:
            try:
                dt = np.dtype(wp.dtype) if wp.kind == "gmem" else _np_dtype(wp.dtype)
                if raw.size % dt.itemsize == 0:
                    vals = raw.view(dt)
                    return " ".join(str(x) for x in vals[:16]) + (" ..." if vals.size > 16 else "")
            except (TypeError, DebugError):
                pass
        if raw.size % 4 == 0:
            return " ".join(f"0x{x:08x}" for x in raw.view(np.uint32)[:16]) + (" ..." if raw.size > 64 else "")
        return " ".join(f"{x:02x}" for x in raw[:64])

    # ------------------------------------------------------------------------------------------ inspection
    def _cta_of(self, cta):
        ctas = self.sim.ctas
        if isinstance(cta, (int, np.integer)) and not isinstance(cta, bool):
            if 0 <= cta < len(ctas):
                return ctas[cta]
            pend = self.sim.clusters_pending()
            raise DebugLookupError(f"no CTA {cta}: {len(ctas)} CTA{'s' * (len(ctas) != 1)} started so far "
                                   f"(0-{len(ctas) - 1})" + (f"; {pend} clusters not started yet" if pend else ""),
                                   expected="a CTA index in launch order or a ctaid tuple")
        try:
            key = tuple(int(x) for x in cta)
        except (TypeError, ValueError):
            raise DebugLookupError(f"CTA {cta!r}", expected="a CTA index or a ctaid tuple (x, y, z)") from None
        key = key + (0,) * (3 - len(key))
        c = self.sim.cta_index.get(key)
        if c is None:
            raise DebugLookupError(f"no CTA {key}: the grid is {self.sim.grid} and the CTAs started so far are "
                                   + ", ".join(str(x.ctaid) for x in ctas[:8]) + ("..." if len(ctas) > 8 else ""))
        return c

    def warp(self, warp: int = 0, cta=0):
        """The simulator's warp object (read it, do not change it)."""
        c = self._cta_of(cta)
        n = len(c.warps)
        if isinstance(warp, bool) or not isinstance(warp, (int, np.integer)) or not 0 <= warp < n:
            raise DebugLookupError(f"no warp {warp} in CTA {c.ctaid}: the block {self.sim.block} has {n} "
                                   f"warp{'s' * (n != 1)} ({'0' if n == 1 else f'0-{n - 1}'})",
                                   expected="a warp index of the CTA")
        return c.warps[warp]

    def _no_register(self, w, name: str):
        close = difflib.get_close_matches(name, list(w.regs), n=3, cutoff=0.6)
        raise DebugLookupError(f"{w.label} has no register {name}; it declares {_reg_ranges(w.regs)}",
                               expected=("a declared register, e.g. " + ", ".join(close)) if close else None)

    def reg(self, name: str, warp: int = 0, cta=0, ptype: str | None = None) -> np.ndarray:
        """A register's 32 lane values (raw container, or viewed as ``ptype``: ``'f32'``, ``'f16x2'``...)."""
        w = self.warp(warp, cta)
        if name not in w.regs:
            if not name.startswith("%") and "%" + name in w.regs:
                name = "%" + name
            else:
                self._no_register(w, name)
        r = w.regs[name]
        if not ptype:
            return r.copy()
        try:
            return typed(r.copy(), ptype)
        except ValueError as e:
            raise DebugError(f"{name} as {ptype}: {e}") from None

    def regs(self, warp: int = 0, cta=0, lane: int | None = None) -> dict:
        w = self.warp(warp, cta)
        if lane is None:
            return {k: v.copy() for k, v in w.regs.items()}
        _lane(lane)
        return {k: v[lane].item() for k, v in w.regs.items()}

    def registers(self, warp: int = 0, cta=0, lanes=None):
        """A table of the warp's registers by lane (HTML in Jupyter)."""
        from .debugger.views import Table
        w = self.warp(warp, cta)
        lanes = list(range(32)) if lanes is None else [_lane(x) for x in lanes]
        rows = []
        for k, v in w.regs.items():
            rows.append([k] + [_fmt_scalar(v[i]) for i in lanes])
        return Table(["register"] + [f"lane {i}" for i in lanes], rows, title=f"registers of {w.label}")

    def _check_smem(self, c, off: int, n: int) -> None:
        base, end = c.smem.base, c.smem.end
        if off < base or off + n > end or n <= 0:
            raise DebugError(f"SMEM [0x{off:x}, 0x{off + n:x}) is outside the shared window of CTA {c.ctaid}",
                             expected=f"offsets in [0x{base:x}, 0x{end:x}) (the {c.smem.size} user bytes)")

    def _smem_bytes(self, c, off: int, n: int) -> np.ndarray:
        self._check_smem(c, off, n)
        return c.smem.peek(off, n)

    def smem(self, cta=0) -> np.ndarray:
        """The CTA's shared memory user bytes (a read-only view; index 0 is offset ``smem_base()``)."""
        return self._cta_of(cta).smem.data

    def smem_base(self, cta=0) -> int:
        """The shared-window offset of the first user byte (the reserved bytes come first)."""
        return self._cta_of(cta).smem.base

    def smem_view(self, offset: int, shape=None, dtype: str = "u8", cta=0) -> np.ndarray:
        """A copy of SMEM at ``offset`` (shared-window offset) as a numpy array of PTX ``dtype`` and ``shape``
        (row-major; default: one element)."""
        dt = _np_dtype(dtype)
        shape = (1,) if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
        n = int(np.prod(shape)) * dt.itemsize
        return self._smem_bytes(self._cta_of(cta), int(offset), n).view(dt).reshape(shape)

    def gmem_view(self, arg, dtype: str | None = None) -> np.ndarray:
        """The current contents of array argument ``arg`` (index or parameter name), in its own dtype and shape
        (or as PTX ``dtype``)."""
        i, name, orig, base = self._array_arg(arg)
        raw = self.sim.gmem.peek(base, orig.nbytes)
        if dtype is None:
            return raw.view(orig.dtype).reshape(orig.shape)
        return raw.view(_np_dtype(dtype))

    def gmem(self, addr: int, nbytes: int) -> np.ndarray:
        """``nbytes`` of global memory at device address ``addr``."""
        try:
            return self.sim.gmem.peek(int(addr), int(nbytes))
        except TcsimError as e:
            raise DebugError(f"global memory [0x{int(addr):x}, +{nbytes}): {e.message}") from None

    def _array_arg(self, arg):
        """(index, name, original array, device address) of an array argument."""
        params = self.sim.program.kernel.params
        names = [p.name for p in params]
        bufs = self._prep.buffers
        if isinstance(arg, str):
            if arg.isdigit():
                arg = int(arg)
            elif arg in names:
                arg = names.index(arg)
            else:
                arrays = [n for n, b in zip(names, bufs) if isinstance(b, tuple)]
                raise DebugLookupError(f"kernel {self.sim.program.kernel.name} has no parameter {arg!r}",
                                       expected="an array parameter: " + ", ".join(arrays))
        if not isinstance(arg, (int, np.integer)) or not 0 <= arg < len(bufs):
            raise DebugLookupError(f"no argument {arg!r}: the launch has {len(bufs)} arguments")
        b = bufs[arg]
        if not isinstance(b, tuple):
            arrays = [f"{i} ({n})" for i, (n, x) in enumerate(zip(names, bufs)) if isinstance(x, tuple)]
            raise DebugLookupError(f"argument {arg} ({names[arg] if arg < len(names) else '?'}) is not an array",
                                   expected="an array argument: " + ", ".join(arrays))
        alloc, orig = b
        return arg, names[arg] if arg < len(names) else f"arg{arg}", orig, alloc.base

    def tmem_view(self, lanes=(0, 128), cols=(0, 1), dtype: str = "u32", cta=0) -> np.ndarray:
        """TMEM ``lanes`` x ``cols`` (ranges or (lo, hi) pairs) as a (lanes, cols) numpy array of 32-bit
        ``dtype`` ('u32', 's32', 'f32', or 'f16x2' / 'bf16x2': a trailing axis of 2)."""
        c = self._cta_of(cta)
        (l0, l1), (c0, c1) = _span(lanes, 128, "lanes"), _span(cols, 512, "columns")
        if c.tmem is None:
            raise DebugError(f"CTA {c.ctaid} has no tensor memory yet (no tcgen05 instruction has run)")
        raw = c.tmem.peek(l0, l1, c0, c1)
        return typed(raw, dtype) if dtype not in ("u32", "b32") else raw

    def tmem_table(self, lanes=(0, 8), cols=(0, 4), dtype: str = "f32", cta=0):
        """:meth:`tmem_view` as a table (rows: lanes, columns: TMEM columns; HTML in Jupyter)."""
        from .debugger.views import Table
        (l0, l1), (c0, c1) = _span(lanes, 128, "lanes"), _span(cols, 512, "columns")
        v = self.tmem_view((l0, l1), (c0, c1), dtype, cta)
        rows = [[f"lane {l0 + i}"] + [_fmt_scalar(x) if v.ndim == 2 else "(" + ", ".join(_fmt_scalar(y) for y in x)
                                      + ")" for x in v[i]] for i in range(v.shape[0])]
        return Table(["TMEM"] + [f"col {c}" for c in range(c0, c1)], rows,
                     title=f"TMEM of CTA {self._cta_of(cta).ctaid} as {dtype}")

    def mbarrier(self, offset, cta=0):
        """The mbarrier at an SMEM offset (or shared symbol): phase, pending, expected, tx."""
        c = self._cta_of(cta)
        off = self.mbarrier_offset(offset)
        mb = c.mbarriers.get(off)
        if mb is None:
            have = ", ".join(f"0x{o:x}" + (f" ({n})" if n else "") for o, n in
                             ((o, self._symbol_at(o)) for o in sorted(c.mbarriers)))
            raise DebugLookupError(f"no mbarrier at SMEM offset 0x{off:x} of CTA {c.ctaid}",
                                   expected=("an mbarrier's offset: " + have) if have else
                                   "an offset that mbarrier.init has initialised (none has been yet)")
        return mb

    def _symbol_at(self, off: int) -> str | None:
        for name in self.sim.program.shared_symbols:
            try:
                o = self._symbol_offset(name)
            except (TypeError, ValueError):
                continue
            size = getattr(self.sim.program.shared_symbols[name], "size", 8) or 8
            if o <= off < o + size:
                return name if o == off else f"{name}+{off - o}"
        return None

    def mbarriers(self, cta=0) -> dict:
        return {off: mb.describe() for off, mb in sorted(self._cta_of(cta).mbarriers.items())}

    def mbarrier_table(self, cta=0):
        """The CTA's mbarriers as a table (HTML in Jupyter)."""
        from .debugger.views import Table
        c = self._cta_of(cta)
        rows = []
        for off, mb in sorted(c.mbarriers.items()):
            waiters = [w.label for w in c.warps for x in w.waits if getattr(x, "event", None) in mb._waiters]
            rows.append([f"0x{off:x}", self._symbol_at(off) or "", "yes" if mb.valid else "no", mb.phase,
                         mb.phase & 1, f"{mb.pending}/{mb.expected}", mb.tx, ", ".join(dict.fromkeys(waiters))])
        return Table(["offset", "symbol", "valid", "phase", "parity", "pending/expected", "tx-count", "waiting"],
                     rows, title=f"mbarriers of CTA {c.ctaid}")

    def in_flight(self) -> list[dict]:
        """The async operations issued and not completed: unit, what, issuer, issue cycle, and the cycle its unit
        will complete it when the unit has scheduled that already (else None)."""
        due = self._due_cycles()
        out = []
        for op_id, ev in sorted(self._inflight.items()):
            out.append({"op_id": op_id, "unit": ev.agent, "what": ev.detail.get("what", ev.what), "cta": ev.cta,
                        "issuer_warp": ev.issuer_warp, "line": ev.line, "issued": ev.cycle, "due": due.get(op_id)})
        return out

    def async_table(self):
        from .debugger.views import Table
        rows = [[x["op_id"], x["unit"], x["what"], f"warp {x['issuer_warp']}", x["line"], f"{x['issued']:g}",
                 "queued" if x["due"] is None else f"{x['due']:g}"] for x in self.in_flight()]
        return Table(["op", "unit", "what", "issuer", "line", "issued", "completes"], rows,
                     title=f"async operations in flight at cycle {self.sim.env.now:g}")

    def _due_cycles(self) -> dict:
        """op_id -> the cycle until which its unit's completion process (each async unit's ``_complete(op, ...)``)
        sleeps: a read-only look at the scheduled events; an op still queued in its unit has none yet."""
        out = {}
        for item in getattr(self.sim.env, "_queue", ()):
            t, ev = item[0], item[-1]
            for cb in getattr(ev, "callbacks", None) or ():
                proc = getattr(cb, "__self__", None)
                gen = getattr(proc, "_generator", None)
                frame = getattr(gen, "gi_frame", None)
                if frame is None or gen.gi_code.co_name != "_complete" or \
                        inspect.getgeneratorstate(gen) == inspect.GEN_CREATED:
                    continue
                op = frame.f_locals.get("op")
                oid = getattr(op, "op_id", None)
                if oid is not None:
                    out[oid] = max(out.get(oid, t), t)
        return out

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

    def warps_table(self):
        """``info warps``: per warp its state, lanes, where each group of lanes is and what it waits on."""
        from .debugger.views import Table
        from .context import lanes_str
        body = self.sim.program.body
        rows = []
        for w in self.sim.warps:
            if not w.alive.any():
                rows.append([str(w.cta.ctaid), w.id, "exited", "", w.retired, "", "", ""])
                continue
            for pc in sorted(set(int(p) for p in w.pc[w.alive])):
                sel = w.alive & (w.pc == pc)
                waiting = (w.waiting & sel).any()
                parked = (w.parked & sel).any()
                state = "waiting" if waiting else "parked" if parked else "runnable"
                ins = body[pc] if pc < len(body) else None
                shown = body[pc - 1] if waiting and pc > 0 else ins
                waits = "; ".join((x.reason() if callable(x.reason) else x.reason) for x in w.waits
                                  if (x.mask & sel).any())
                rows.append([str(w.cta.ctaid), w.id, state, lanes_str(sel), w.retired, pc,
                             f"{shown.loc.line}: {shown}" if shown is not None else "past the end", waits])
        return Table(["CTA", "warp", "state", "lanes", "retired", "pc", "line", "waiting on"], rows,
                     title=f"cycle {self.sim.env.now:g}, position {self.pos}, {self.sim.retired} warp-instructions "
                           f"retired")

    def where(self) -> str:
        """One line per warp: live lanes, the instruction each group of lanes is at, and what it waits on."""
        lines = [f"cycle {self.sim.env.now}, {self.sim.retired} warp-instructions retired (position {self.pos})"]
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

    def __repr__(self) -> str:
        name = self.launch.name or self.sim.program.kernel.name
        return f"<Session {name}: position {self.pos}, cycle {self.sim.env.now:g}, {self.sim.retired} " \
               f"warp-instructions retired{', exited' if self.done else ''}>"

    def _repr_html_(self) -> str:
        """Jupyter: where every warp is (:meth:`warps_table`)."""
        return self.warps_table()._repr_html_()

    def findings(self) -> list:
        """The findings recorded so far."""
        return list(self.sim.findings.items)

    def source_line(self, line: int) -> str:
        """The text of PTX ``line`` (for listings)."""
        text = self._ptx_lines()
        return text[line - 1] if 0 < line <= len(text) else ""

    def _ptx_lines(self) -> list:
        lines = self._ptx_cache
        if lines is None:
            try:
                lines = self.launch.ptx_text()[0].splitlines()
            except (TypeError, TcsimError):
                lines = []
            self._ptx_cache = lines
        return lines


# ---------------------------------------------------------------------------------------------- helpers
def _c_ops(expr: str) -> str:
    """C's logical operators as Python's (a breakpoint condition may be written either way)."""
    expr = expr.replace("&&", " and ").replace("||", " or ")
    return re.sub(r"!(?!=)", " not ", expr)


def _reg_ranges(names) -> str:
    """Register names as ranges: '%r0-%r7, %rd0-%rd7, %x'."""
    groups: dict = {}
    other = []
    for n in names:
        m = re.fullmatch(r"(%[A-Za-z_$]+?)(\d+)", n)
        if m:
            groups.setdefault(m.group(1), []).append(int(m.group(2)))
        else:
            other.append(n)
    parts = []
    for p, nums in groups.items():
        nums.sort()
        runs, a, b = [], nums[0], nums[0]
        for x in nums[1:]:
            if x != b + 1:
                runs.append((a, b))
                a = x
            b = x
        runs.append((a, b))
        parts += [f"{p}{x}" if x == y else f"{p}{x}-{p}{y}" for x, y in runs]
    parts += other
    return ", ".join(parts[:12]) + (", ..." if len(parts) > 12 else "")


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _lanes(mask: int) -> str:
    from .findings import lanes_text
    return lanes_text([i for i in range(32) if mask >> i & 1])


def _lanes_of(lanes) -> str:
    from .findings import lanes_text
    return lanes_text(lanes)


def _lane(lane) -> int:
    if isinstance(lane, bool) or not isinstance(lane, (int, np.integer)) or not 0 <= lane < 32:
        raise DebugLookupError(f"no lane {lane}", expected="a lane 0-31")
    return int(lane)


def _span(x, limit: int, what: str) -> tuple:
    if isinstance(x, range):
        lo, hi = x.start, x.stop
    elif isinstance(x, (int, np.integer)):
        lo, hi = int(x), int(x) + 1
    else:
        try:
            lo, hi = (int(v) for v in x)
        except (TypeError, ValueError):
            raise DebugError(f"TMEM {what} {x!r}", expected="a range, an int or a (lo, hi) pair") from None
    if not 0 <= lo < hi <= limit:
        raise DebugError(f"TMEM {what} [{lo}, {hi}) are outside 0..{limit - 1}",
                         expected=f"{what} within the {limit} of tensor memory")
    return lo, hi


def _fmt_scalar(x) -> str:
    if isinstance(x, (np.floating, float)):
        return f"{float(x):.6g}"
    if isinstance(x, (np.bool_, bool)):
        return "1" if x else "0"
    if isinstance(x, np.void):
        from .ptxtypes import b128_int
        return f"0x{b128_int(x):032x}"
    try:
        return f"0x{int(x):x}" if int(x) > 9 else str(int(x))
    except (TypeError, ValueError):
        return str(x)
