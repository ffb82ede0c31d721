"""Schedule exploration: run one launch under many schedules that the hardware could produce and report what
changes (``tcsim run LAUNCH --explore N``, ``--schedule K``; :func:`explore`).

Some synchronisation bugs only show under one timing (flashinfer #5252: a wrong result in ~99% of runs once one
instruction is delayed; shared/reference/bug_classes.md).  A simulator's schedule is deterministic, so it can
enumerate schedules instead of hoping for them.  Each :class:`Schedule` perturbs, within what the hardware
allows, and only through the engine's and the arch config's knobs (DESIGN.md principle 14; the semantics never
see a schedule):

* **warp order** (engine knobs, :class:`tcsim.engine.Simulation`): a random issue delay of ``0..jitter`` cycles
  per instruction (the engine's ``seed``), warp priorities (which warp issues first when several may issue in the
  same cycle), a slowdown of chosen warps (extra cycles before each of their instructions: one warp, or one role
  -- producer, MMA issuer, consumer -- systematically last, or first with every other warp slowed), and one large
  gap before one warp's n-th instruction (the #5252 case);
* **async completion times** (config knobs, :data:`tcsim.timing.params.LATENCY_KNOBS`): the TMA engine, the
  cp.async unit, the tensor pipe and the tcgen05.st landing complete their ops at the earliest or the latest
  latency the config's bounds give (``*_early_extra`` / ``*_late_extra``), or each op at its own seeded draw
  between them (``async_jitter_seed``).  Every unit keeps completing in issue order, as the hardware's do.

Both timing on and timing off are explored (timing off: one cycle per warp-instruction, the functional preset's
async latencies moved between the preset's bounds).

Schedule 0 is the default schedule (no perturbation: the plain run).  It also tells the generator what there
is to perturb: the warps, each warp's role (from the async ops it issued) and instruction count, and the async
units in use; schedules 1.. are derived from that and the exploration seed alone, so ``--schedule K`` reruns
exactly schedule K of an exploration (schedule 0's run, then K's).  The first schedules are systematic (every
unit late, every unit early, each role last and first, each warp of CTA 0 stalled mid-run, last and first, each
unit alone late and early, warps in reverse order); the rest draw every knob at random.

The report (:class:`ExploreReport`): the union of the runs' findings (:class:`FindingUnion`, deduplicated by
:attr:`tcsim.findings.Finding.key`; a run that stopped contributes the findings it carried), every output that
differs from schedule 0's (:class:`OutputDiff`: argument, how many elements, the first differing index and both
values, the schedules), the runs that stopped (deadlock, trap...) and the launch's own check where it fails,
each with a schedule that reproduces it as a command.  A race-free kernel gives identical outputs under every
schedule (DESIGN.md principle 5; tests/sim/test_explore.py runs the examples).
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field

import numpy as np

from tcsim.isa.errors import TcsimError
from .parallel import fork_map
from .timing.params import LATENCY_KNOBS

#: extra cycles before each instruction of a warp a schedule puts last (or of every other warp, to put it first)
SLOW = 16
#: the gap of a systematic mid-run stall (the #5252 case); random stalls draw from STALL_GAPS
STALL = 2000
STALL_GAPS = (64, 512, 4096)
#: publishing points recorded per warp (Baseline.points)
MAX_POINTS = 64
#: the async agents' names (observation events) -> their unit in LATENCY_KNOBS
AGENT_UNITS = {"tma": "tma", "lsu": "cp.async", "tensor_pipe": "tensor_pipe", "tcgen05": "tcgen05.st"}
#: roles a warp plays, from the async ops it issued (warps issuing none are consumers)
ROLES = {"tma": "producer", "lsu": "producer", "tensor_pipe": "mma"}


# ---------------------------------------------------------------------------------------------- schedules
@dataclass(frozen=True, eq=False)
class Schedule:
    """One perturbation of the default schedule.  Warps are numbered in creation order (CTA 0's warps first).

    ``seed`` / ``jitter``: the engine's random issue delay, 0..jitter cycles (None: none); ``priority``: warp ->
    rank (lower issues first among same-cycle issuers); ``slow``: warp -> extra cycles per instruction; ``stall``:
    (warp, n, gap) -- ``gap`` extra cycles after the warp's n-th instruction; ``latency``: unit of
    :data:`tcsim.timing.params.LATENCY_KNOBS` -> 'early' | 'late'; ``async_seed``: every async op draws its own
    latency between the bounds (0: off); ``what``: a readable description."""

    index: int = 0
    what: str = "default schedule"
    seed: int | None = None
    jitter: int = 3
    priority: dict = field(default_factory=dict)
    slow: dict = field(default_factory=dict)
    stall: tuple | None = None
    latency: dict = field(default_factory=dict)
    async_seed: int = 0

    def label(self) -> str:
        return f"schedule {self.index} ({self.what})"

    def knobs(self) -> tuple:
        """Everything that decides the run (two schedules with equal knobs run identically)."""
        return (self.seed, self.jitter if self.seed is not None else None, tuple(sorted(self.priority.items())),
                tuple(sorted((k, v) for k, v in self.slow.items() if v)), self.stall,
                tuple(sorted(self.latency.items())), self.async_seed)

    def apply(self, cfg):
        """The arch config ``cfg`` with this schedule's async-latency knobs set (the engine calls this)."""
        values = {}
        for unit, when in self.latency.items():
            extra, early, late = LATENCY_KNOBS[unit]
            values[extra] = getattr(cfg, early if when == "early" else late)
        if self.async_seed:
            values["async_jitter_seed"] = self.async_seed
        if not values:
            return cfg
        return cfg.with_overrides({k: {"value": v, "kind": "E", "source": self.label()} for k, v in values.items()},
                                  source=self.label())


@dataclass
class Baseline:
    """What the default schedule's run tells the generator: ``labels`` of the warps (creation order),
    ``per_cta`` warps per CTA, each warp's ``role`` and ``retired`` instruction count, the async ``units`` used,
    and per warp its ``points``: the instruction counts right after it wrote memory or performed a sync operation
    (a store, an arrive, a fence, an async issue...: where a delay changes what other warps see; the first
    :data:`MAX_POINTS`)."""

    labels: list
    per_cta: int
    role: list
    retired: list
    units: tuple
    points: list = field(default_factory=list)

    @property
    def nwarps(self) -> int:
        return len(self.labels)


class _RoleRecorder:
    """Observer of the default run: which async units each warp issued to, and after which of its instructions
    it had written memory or performed a sync operation."""

    kinds = ("sync", "mem", "inst")

    def __init__(self):
        self.issued: dict = {}          # (ctaid, warp id) -> set of agent names
        self.agents: set = set()
        self.count: dict = {}           # (ctaid, warp id) -> instructions retired
        self.pending: set = set()       # warps whose current instruction wrote / synchronised
        self.points: dict = {}          # (ctaid, warp id) -> [instruction counts]

    def on_event(self, ev) -> None:
        kind = ev.kind
        if kind == "inst":
            key = (tuple(ev.cta), ev.warp)
            n = self.count[key] = self.count.get(key, 0) + 1
            if key in self.pending:
                self.pending.discard(key)
                pts = self.points.setdefault(key, [])
                if len(pts) < MAX_POINTS:
                    pts.append(n)
            return
        if ev.agent == "warp" and ev.warp is not None and (kind == "sync" or ev.is_write):
            self.pending.add((tuple(ev.cta), ev.warp))
        if kind == "sync" and ev.op == "async.issue":
            self.agents.add(ev.agent)
            w = getattr(ev, "issuer_warp", None)
            if w is not None:
                self.issued.setdefault((tuple(ev.cta), w), set()).add(ev.agent)
                self.pending.add((tuple(ev.cta), w))


def _baseline(sim, rec: _RoleRecorder) -> Baseline:
    role = []
    for w in sim.warps:
        got = {ROLES[a] for a in rec.issued.get((tuple(w.cta.ctaid), w.id), ()) if a in ROLES}
        role.append("mma" if "mma" in got else "producer" if "producer" in got else "consumer")
    units = tuple(sorted({AGENT_UNITS[a] for a in rec.agents if a in AGENT_UNITS}))
    per_cta = len(sim.ctas[0].warps) if sim.ctas else len(sim.warps)
    points = [list(rec.points.get((tuple(w.cta.ctaid), w.id), ())) for w in sim.warps]
    return Baseline([w.label for w in sim.warps], per_cta, role, [w.retired for w in sim.warps], units, points)


def _order(first: list, n: int, what: str, last: bool) -> Schedule:
    """``first`` warps issue last (slowed, lowest priority) or first (every other warp slowed)."""
    chosen = set(first)
    if last:
        prio = {i: (1 if i in chosen else 0) for i in range(n)}
        slow = {i: SLOW for i in chosen}
    else:
        prio = {i: (0 if i in chosen else 1) for i in range(n)}
        slow = {i: SLOW for i in range(n) if i not in chosen}
    return Schedule(what=what, priority=prio, slow=slow)


def _systematic(b: Baseline) -> list:
    n = b.nwarps
    out = []
    if b.units:
        out.append(Schedule(what="async late (" + ", ".join(b.units) + ")", latency={u: "late" for u in b.units}))
        out.append(Schedule(what="async early (" + ", ".join(b.units) + ")", latency={u: "early" for u in b.units}))
    if n > 1:
        roles = sorted(set(b.role))
        if len(roles) > 1:
            for r in roles:
                ws = [i for i in range(n) if b.role[i] == r]
                out.append(_order(ws, n, f"{r} warps last", True))
                out.append(_order(ws, n, f"{r} warps first", False))
        per = max(1, b.per_cta)
        for w in range(min(per, 8)):            # right after its first write / sync op (else mid-run)
            pts = b.points[w] if w < len(b.points) else []
            at = pts[0] if pts else max(1, b.retired[w] // 2)
            if b.retired[w] > 1:
                out.append(Schedule(what=f"{b.labels[w]} stalled {STALL} cycles after its instruction {at}",
                                    stall=(w, at, STALL)))
        for w in range(min(per, 8)):
            ws = [i for i in range(n) if i % per == w]
            name = f"warp {w} of every CTA" if len(ws) > 1 else b.labels[w]
            out.append(_order(ws, n, f"{name} last", True))
            out.append(_order(ws, n, f"{name} first", False))
        for c in range(min(n // per, 4) if n // per > 1 else 0):      # one CTA behind / ahead of the others
            ws = list(range(c * per, (c + 1) * per))
            name = b.labels[ws[0]].rsplit(" warp ", 1)[0]
            out.append(_order(ws, n, f"{name} last", True))
            out.append(_order(ws, n, f"{name} first", False))
    if len(b.units) > 1:
        for u in b.units:
            out.append(Schedule(what=f"{u} late", latency={u: "late"}))
            out.append(Schedule(what=f"{u} early", latency={u: "early"}))
    if n > 1:
        out.append(Schedule(what="warps in reverse order", priority={i: n - 1 - i for i in range(n)}))
    return out


def _random(b: Baseline, k: int, seed: int) -> Schedule:
    rng = random.Random(f"tcsim-explore/{seed}/{k}")
    n = b.nwarps
    perm = list(range(n))
    rng.shuffle(perm)
    what = ["random warp priorities"]
    jitter = rng.choice((3, 15, 63))
    what.append(f"issue jitter 0..{jitter}")
    slow = {}
    if n > 1 and rng.random() < 0.3:
        w = rng.randrange(n)
        slow[w] = SLOW
        what.append(f"{b.labels[w]} slowed")
    latency, async_seed = {}, 0
    if b.units:
        if rng.random() < 0.35:
            async_seed = rng.randrange(1, 1 << 31)
            what.append("async latencies drawn per op")
        else:
            for u in b.units:
                c = rng.choice(("default", "early", "late"))
                if c != "default":
                    latency[u] = c
            if latency:
                what.append(", ".join(f"{u} {c}" for u, c in sorted(latency.items())))
    stall = None
    if rng.random() < 0.5:
        w = rng.randrange(n)
        pts = b.points[w] if w < len(b.points) else []
        at = rng.choice(pts) if pts and rng.random() < 0.5 else rng.randint(1, max(1, b.retired[w]))
        gap = rng.choice(STALL_GAPS)
        stall = (w, at, gap)
        what.append(f"{b.labels[w]} stalled {gap} cycles after its instruction {at}")
    return Schedule(what="; ".join(what), seed=rng.randrange(1 << 31), jitter=jitter,
                    priority={i: r for r, i in enumerate(perm)}, slow=slow, stall=stall, latency=latency,
                    async_seed=async_seed)


def make_schedules(baseline: Baseline, n: int, seed: int = 0) -> list:
    """Schedules 0..n-1 of an exploration with ``seed`` over a launch whose default run gave ``baseline``."""
    out = [Schedule()]
    seen = {out[0].knobs()}
    for s in _systematic(baseline):
        if len(out) >= n:
            break
        if s.knobs() not in seen:           # e.g. 'producers last' = 'consumers first' with two roles
            seen.add(s.knobs())
            out.append(s)
    while len(out) < n:
        out.append(_random(baseline, len(out), seed))
    return [_with_index(s, i) for i, s in enumerate(out[:max(n, 1)])]


def _with_index(s: Schedule, i: int) -> Schedule:
    from dataclasses import replace
    return replace(s, index=i)


# ---------------------------------------------------------------------------------------------- findings
class FindingUnion:
    """The union of the findings of many runs, deduplicated by :attr:`tcsim.findings.Finding.key`, with the
    schedules under which each was found (in the order the runs were added)."""

    def __init__(self):
        self._by_key: dict = {}         # key -> [first Finding, [schedule indexes]]

    def add(self, schedule: int, findings) -> None:
        for f in findings:
            e = self._by_key.get(f.key)
            if e is None:
                self._by_key[f.key] = [f, [schedule]]
            elif schedule not in e[1]:
                e[1].append(schedule)

    @property
    def findings(self) -> list:
        return [e[0] for e in self._by_key.values()]

    def schedules_of(self, finding) -> list:
        return list(self._by_key[finding.key][1])

    @property
    def problems(self) -> list:
        return [f for f in self.findings if f.severity != "lint"]

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self):
        return iter(self.findings)


# ---------------------------------------------------------------------------------------------- outputs
@dataclass
class OutputDiff:
    """Output ``name`` (argument ``arg``; a :class:`tcsim.launch.Struct` argument's pointer fields are
    ``arg.field``) of ``schedule`` differs from the reference schedule's: ``count`` of ``size`` elements, the first
    at flat ``index``, where the reference holds ``expected`` and this schedule ``got``."""

    arg: str
    name: str
    schedule: int
    reference: int
    count: int
    size: int
    index: int
    expected: object
    got: object


def compare(ref, out, arg: str, name: str, schedule: int, reference: int) -> list:
    """The :class:`OutputDiff` s between two runs' outputs for one argument (arrays compared bit for bit)."""
    if ref is None or out is None:
        return []
    if isinstance(ref, list):
        diffs = []
        for j, (a, b) in enumerate(zip(ref, out)):
            diffs += compare(a, b, f"{arg}.{j}", f"{name} field {j}", schedule, reference)
        return diffs
    x = np.ascontiguousarray(ref).reshape(-1)
    y = np.ascontiguousarray(out).reshape(-1)
    if x.dtype != y.dtype or x.size != y.size:
        return [OutputDiff(arg, name, schedule, reference, max(x.size, y.size), max(x.size, y.size), 0,
                           f"{x.dtype}[{x.size}]", f"{y.dtype}[{y.size}]")]
    neq = np.nonzero((x.view(np.uint8).reshape(x.size, -1) != y.view(np.uint8).reshape(y.size, -1)).any(1))[0]
    if not neq.size:
        return []
    j = int(neq[0])
    return [OutputDiff(arg, name, schedule, reference, int(neq.size), int(x.size), j, x[j].item(), y[j].item())]


# ---------------------------------------------------------------------------------------------- runs
@dataclass
class ScheduleRun:
    """What one schedule's run gave: ``error`` (the first line of the diagnostic that stopped it, or None),
    ``check`` (the launch file's check message when it failed, else None), ``cycles``, ``findings``."""

    schedule: Schedule
    error: str | None = None
    error_kind: str | None = None
    check: str | None = None
    cycles: int = 0
    findings: list = field(default_factory=list)


def outputs_of(prep, res, params) -> list:
    """Everything a run leaves in global memory, as (key, name, array): each argument's buffer (typed), the
    tensor of each tensor-map argument whose array is not an argument itself (the buffer the launch made for it,
    typed as that array: where TMA stores land), and each module-scope ``.global`` variable (bytes)."""
    out = []
    for i, v in enumerate(res.outputs):
        out.append((str(i), params[i] if i < len(params) else f"arg{i}", v))
    for i, a in enumerate(prep.launch.args):
        alloc, arr = getattr(a, "sim_allocation", None), getattr(a, "array", None)
        if alloc is None or not isinstance(arr, np.ndarray) or prep.gmem.allocation_of(alloc.base) is not alloc:
            continue                        # no buffer of its own in this run
        name = params[i] if i < len(params) else f"arg{i}"
        out.append((f"{i}.tensor", f"the tensor of {name}",
                    alloc.data.view(arr.dtype)[:arr.size].reshape(arr.shape).copy()))
    for g, data in sorted(res.globals.items()):
        out.append((g, f".global {g}", np.asarray(data)))
    return out


def _run(launch, schedule, *, timing, max_instructions, strict, observers=(), detectors=(), detect=True):
    """(Prepared, Result or None, TcsimError or None) of one run of ``launch`` under ``schedule``;
    ``detectors``: callables ``f(sim)`` returning an observer to subscribe for this run; ``detect``: run the
    happens-before race detector too."""
    from .launch import Prepared

    prep = Prepared(launch, timing=timing, max_instructions=max_instructions, strict=strict, schedule=schedule,
                    observers=observers, detect=detect)
    for make in detectors:
        prep.bus.subscribe(make(prep.sim))
    try:
        prep.sim.run()
    except TcsimError as e:
        return prep, None, e
    finally:
        prep.close()
    return prep, prep.result(), None


def baseline(launch, *, timing=False, max_instructions=None, strict=False, detectors=(), detect=True):
    """The default schedule's run with what the generator needs: (Baseline, Prepared, Result or None, error)."""
    rec = _RoleRecorder()
    prep, res, err = _run(launch, None, timing=timing, max_instructions=max_instructions, strict=strict,
                          observers=(rec,), detectors=detectors, detect=detect)
    return _baseline(prep.sim, rec), prep, res, err


def schedule_of(launch, k: int, *, timing=False, seed: int = 0, max_instructions=None) -> Schedule:
    """Schedule ``k`` of an exploration of ``launch`` with ``seed`` (runs the default schedule to derive it)."""
    if k == 0:
        return Schedule()
    b = baseline(launch, timing=timing, max_instructions=max_instructions)[0]
    # schedule k of make_schedules(b, n, seed) for any n > k, without building the k before it (k may be huge)
    out = [Schedule()]
    seen = {out[0].knobs()}
    for s in _systematic(b):
        if len(out) > k:
            break
        if s.knobs() not in seen:
            seen.add(s.knobs())
            out.append(s)
    return _with_index(out[k] if k < len(out) else _random(b, k, seed), k)


# ---------------------------------------------------------------------------------------------- the report
@dataclass
class ExploreReport:
    """The result of :func:`explore`."""

    name: str
    timing: bool
    seed: int
    params: list                                   # the kernel's parameter names
    schedules: list                                # Schedule 0..n-1
    runs: list                                     # ScheduleRun per schedule
    union: FindingUnion
    diffs: list                                    # OutputDiff (each differing argument of each schedule)
    reference: int | None                          # the schedule the outputs are compared with
    checked: bool = False                          # the launch file's check ran on every schedule

    @property
    def findings(self) -> list:
        return self.union.findings

    @property
    def outputs_differ(self) -> bool:
        return bool(self.diffs)

    @property
    def stopped(self) -> dict:
        """{first line of the diagnostic: [schedules]} for the runs that did not finish."""
        out: dict = {}
        for r in self.runs:
            if r.error is not None:
                out.setdefault(r.error, []).append(r.schedule.index)
        return out

    @property
    def failed_checks(self) -> dict:
        out: dict = {}
        for r in self.runs:
            if r.check is not None:
                out.setdefault(r.check, []).append(r.schedule.index)
        return out

    @property
    def ok(self) -> bool:
        """No finding (lint notes aside), identical outputs, every run finished and passed its check."""
        return not (self.union.problems or self.diffs or self.stopped or self.failed_checks)

    def by_argument(self) -> dict:
        """{argument: [OutputDiff, ...]} in schedule order."""
        out: dict = {}
        for d in self.diffs:
            out.setdefault(d.arg, []).append(d)
        return out

    def command(self, k: int, launch: str = "LAUNCH") -> str:
        """The command that reruns schedule ``k``."""
        parts = ["tcsim run", launch]
        if not self.timing:
            parts.append("--no-timing")
        if self.seed:
            parts.append(f"--seed {self.seed}")
        parts.append(f"--schedule {k}")
        return " ".join(parts)

    def to_json(self, launch: str = "LAUNCH") -> dict:
        """The report for tools (``tcsim run --explore N --findings OUT.json``)."""
        def diff(d):
            return {"argument": d.arg, "name": d.name, "schedule": d.schedule, "reference": d.reference,
                    "count": d.count, "size": d.size, "index": d.index, "expected": _jsonable(d.expected),
                    "got": _jsonable(d.got), "reproduce": self.command(d.schedule, launch)}

        return {"launch": launch, "timing": self.timing, "seed": self.seed,
                "schedules": [{"index": s.index, "what": s.what} for s in self.schedules],
                "findings": [dict(f.to_json(), schedules=self.union.schedules_of(f),
                                  reproduce=self.command(self.union.schedules_of(f)[0], launch))
                             for f in self.union.findings],
                "outputs_differ": self.outputs_differ, "diffs": [diff(d) for d in self.diffs],
                "stopped": [{"error": m, "schedules": ks, "reproduce": self.command(ks[0], launch)}
                            for m, ks in self.stopped.items()],
                "failed_checks": [{"message": m, "schedules": ks, "reproduce": self.command(ks[0], launch)}
                                  for m, ks in self.failed_checks.items()]}

    def format(self, launch: str = "LAUNCH") -> list:
        """The report as printed by ``tcsim run --explore``: one line per fact, each with its reproducer."""
        n = len(self.schedules)
        mode = "timing on" if self.timing else "timing off"
        lines = [f"[explore] {n} schedule{'s' if n != 1 else ''} of {self.name} ({mode}, exploration seed "
                 f"{self.seed})"]

        def sched(ks, limit=8):
            s = ", ".join(str(k) for k in ks[:limit])
            return s + (f", ... ({len(ks)} in all)" if len(ks) > limit else "")

        def desc(k):
            return self.schedules[k].what

        if self.diffs:
            lines.append(f"[explore] OUTPUTS DIFFER between schedules (reference: schedule {self.reference}):")
            for arg, ds in self.by_argument().items():
                d = ds[0]
                lines.append(f"  {_output_name(d)}: differs under schedule{'s' if len(ds) > 1 else ''} "
                             f"{sched([x.schedule for x in ds])}; under schedule {d.schedule} ({desc(d.schedule)}) "
                             f"{d.count} of {d.size} elements differ, the first at flat index {d.index}: "
                             f"{d.expected!r} (schedule {d.reference}) vs {d.got!r}")
                lines.append(f"    reproduce: {self.command(d.schedule, launch)}")
        elif self.reference is not None:
            done = sum(1 for r in self.runs if r.error is None)
            lines.append(f"[explore] outputs identical under every schedule that finished ({done} of {n})")
        for msg, ks in self.stopped.items():
            lines.append(f"[explore] the run STOPPED under schedule{'s' if len(ks) > 1 else ''} {sched(ks)}: {msg}")
            lines.append(f"    reproduce: {self.command(ks[0], launch)}  ({desc(ks[0])})")
        for msg, ks in self.failed_checks.items():
            lines.append(f"[explore] the launch's check FAILED under schedule{'s' if len(ks) > 1 else ''} "
                         f"{sched(ks)}: {msg}")
            lines.append(f"    reproduce: {self.command(ks[0], launch)}  ({desc(ks[0])})")
        for f in self.union.findings:
            ks = self.union.schedules_of(f)
            lines.append(f.format())
            lines.append(f"  found under schedule{'s' if len(ks) > 1 else ''} {sched(ks)}; reproduce: "
                         f"{self.command(ks[0], launch)}")
        probs = self.union.problems
        lines.append(f"[explore] findings (union over {n} schedules): "
                     + (f"{len(probs)} distinct" if probs else "none")
                     + (f" ({len(self.union) - len(probs)} lint notes)" if len(self.union) > len(probs) else ""))
        return lines


def _output_name(d: OutputDiff) -> str:
    head = d.arg.split(".")[0]
    if head.isdigit() and not d.arg.endswith(".tensor"):
        return f"argument {d.arg} ({d.name})"
    return f"{d.name} (argument {head})" if head.isdigit() else d.name


def _jsonable(v):
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


def explore(launch, n: int, *, timing=False, seed: int = 0, max_instructions=None, strict: bool = False,
            check=None, progress=None, detectors=(), detect: bool = True, jobs: int = 1) -> ExploreReport:
    """Run ``launch`` (a :class:`tcsim.launch.Launch`) under schedules 0..n-1 (see the module docstring) and
    report the union of findings, output differences, stopped runs and -- with ``check`` (``check(result,
    launch) -> (ok, message)``, as a launch file defines it) -- failed checks.  ``seed`` seeds the random
    schedules; ``strict`` stops each run at its first finding; ``progress(schedule, run)`` is called after each
    run; ``detect``: run the happens-before race detector in every run (default); ``detectors``: callables
    ``f(sim)`` each returning an observer that reports findings through
    ``sim.findings`` (subscribed afresh for every run).

    ``jobs`` > 1 runs schedules 1..n-1 in that many worker processes (forked: the launch, ``check`` and
    ``detectors`` are inherited, never pickled); every run is deterministic and independent of the others, and
    the results are gathered and reported in schedule order, so the report is the one ``jobs=1`` gives
    (tests/sim/test_explore_jobs.py).  Where the platform cannot fork, the schedules run in this process."""
    n = max(1, int(n))
    base, prep, res, err = baseline(launch, timing=timing, max_instructions=max_instructions, strict=strict,
                                    detectors=detectors, detect=detect)
    schedules = make_schedules(base, n, seed)
    params = [p.name for p in prep.program.kernel.params]
    opts = dict(timing=timing, max_instructions=max_instructions, strict=strict, detectors=detectors,
                detect=detect)
    union = FindingUnion()
    runs, diffs = [], []
    ref_outputs, ref_index = None, None
    first = _outcome(launch, schedules[0], prep, res, err, params, check)
    del prep, res
    for k, (run, outs) in enumerate(_outcomes(launch, schedules, first, params, check, opts, jobs)):
        run.schedule = schedules[k]                 # the caller's object (a worker returns a copy)
        if outs is not None:
            if ref_outputs is None:
                ref_outputs, ref_index = outs, k
            else:
                for (key, name, a), (_, _, b) in zip(ref_outputs, outs):
                    diffs += compare(a, b, key, name, k, ref_index)
        union.add(k, run.findings)
        runs.append(run)
        if progress is not None:
            progress(schedules[k], run)
    return ExploreReport(name=launch.name or (launch.kernel or "kernel"), timing=bool(timing), seed=seed,
                         params=params, schedules=schedules, runs=runs, union=union, diffs=diffs,
                         reference=ref_index, checked=check is not None)


def _outcome(launch, s: Schedule, prep, res, err, params, check):
    """(ScheduleRun, outputs or None) of one finished or stopped run: what the report needs of it."""
    run = ScheduleRun(s, cycles=int(prep.sim.env.now))
    if err is not None:
        run.error = str(err).splitlines()[0]
        run.error_kind = type(err).__name__
        run.findings = list(getattr(err, "findings", ()) or ())
        return run, None
    run.findings = list(res.findings)
    if check is not None:
        ok, msg = check(res, launch)
        if not ok:
            run.check = msg
    return run, outputs_of(prep, res, params)


def _schedule_outcome(launch, s: Schedule, *, params, check, opts):
    prep, res, err = _run(launch, s, **opts)
    return _outcome(launch, s, prep, res, err, params, check)


def _outcomes(launch, schedules, first, params, check, opts, jobs: int):
    """The outcome of every schedule in order: ``first`` (schedule 0's, already run), then the others -- in
    this process, or in ``jobs`` forked workers (tcsim.parallel.fork_map: the launch, ``check`` and the detectors
    travel by fork, never pickled)."""
    yield first
    yield from fork_map(functools.partial(_schedule_outcome, launch, params=params, check=check, opts=opts),
                        schedules[1:], jobs)


def run_schedule(launch, k: int, *, timing=False, seed: int = 0, max_instructions=None, strict=False, trace=None,
                 observers=()):
    """(Schedule, Result) of schedule ``k`` of an exploration (deterministic: the same run every time); raises
    the run's TcsimError as :func:`tcsim.launch.run_launch` does."""
    from .launch import run_launch

    s = schedule_of(launch, k, timing=timing, seed=seed, max_instructions=max_instructions)
    return s, run_launch(launch, timing=timing, max_instructions=max_instructions, strict=strict, trace=trace,
                         observers=observers, schedule=None if k == 0 else s)


__all__ = ["Schedule", "Baseline", "FindingUnion", "OutputDiff", "ScheduleRun", "ExploreReport", "explore",
           "make_schedules", "schedule_of", "run_schedule", "baseline", "compare"]
