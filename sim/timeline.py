"""The timeline of one run: tracks, slices, counters, flows and instants built from the observation bus.

What the Perfetto writer (:mod:`tcsim.perfetto_trace`) and the HTML report (:mod:`tcsim.report`) both draw, built
once by :class:`TimelineRecorder` (an observer of ``inst``, ``sync`` and ``stall`` events,
:mod:`tcsim.observe`) and :func:`build_timeline` at the end of the run.  Times are simulated SM cycles
(``Timeline.clock_mhz`` converts them to ns).

* a **process per CTA** (named with its cluster), holding
* a **track per warp**: instruction slices merged into *PTX regions* (a run of instructions at consecutive PCs
  issued with no stall between them; args: the lines, the instruction count) and **stall slices** named by
  reason and by what they wait on (the timing model's :class:`tcsim.observe.Stall` records);
* a **track per async unit** (TMA engine, tensor pipe, tcgen05 ld/st, wgmma, cp.async, bulk copies): one slice
  per operation from :class:`~tcsim.observe.AsyncIssue` to :class:`~tcsim.observe.AsyncComplete` (its bytes, kind,
  opcode, issuing line); operations in flight together go on numbered lanes of the unit (``TMA engine #1``) so
  slices nest as every trace viewer requires;
* a **track per mbarrier**: a slice per phase (from its start to its completion) and an instant at each phase
  completion, with **counters** of the mbarrier's completed phases, pending arrivals and pending transaction
  bytes; CTA counters of TMEM columns allocated and of async writes into SMEM in flight (the SMEM stages being
  filled);
* **flows** issuing instruction -> async operation -> the mbarrier phase it completed -> the region of each warp
  whose ``mbarrier.try_wait`` / ``test_wait`` that phase released (that warp's mbarrier stall slice names the
  phase too: ``released_by``);
* the race detector's **findings** (``Result.findings``) as instants on a per-CTA ``findings`` track with a flow
  from each of the finding's accesses (the warp region or async operation at that access's cycle).

Not supported: a run that raised (the recorder keeps what it saw; build from it as usual); a cycle is rounded
to an integer; warps are numbered per CTA (track ``warp N`` of the CTA's process).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

#: the async units, in the order their tracks are listed, with their display names
UNIT_NAMES = {"tma": "TMA engine", "tensor_pipe": "tensor pipe (tcgen05.mma)", "tcgen05": "tcgen05 ld/st",
              "wgmma": "wgmma unit", "lsu": "cp.async / bulk copies", "cp.async": "cp.async",
              "bulk": "bulk copies"}


@dataclass
class Track:
    """One row of the timeline: ``kind`` 'warp' | 'unit' | 'mbarrier' | 'findings' | 'counter'."""

    id: int
    name: str
    kind: str
    cta: int                    # index into Timeline.ctas
    warp: int | None = None     # kind 'warp'
    group: str | None = None    # kind 'unit': the unit; 'mbarrier': its label; 'counter': what it counts
    lane: int = 0               # kind 'unit': the lane of overlapping operations


@dataclass
class Slice:
    track: int
    ts: int
    dur: int
    name: str
    cat: str                    # 'inst' | 'stall' | 'async' | 'phase' | 'phase_done' | 'finding'
    args: dict = field(default_factory=dict)
    flows_out: list = field(default_factory=list)     # flow ids starting here
    flows_in: list = field(default_factory=list)      # flow ids ending here


@dataclass
class Counter:
    track: int
    points: list = field(default_factory=list)         # [(ts, value)], ts ascending


@dataclass
class Timeline:
    """Everything one run shows on a timeline (module docstring)."""

    kernel: str
    arch: str
    clock_mhz: float
    cycles: int
    ctas: list                  # [{'ctaid': (x,y,z), 'cluster': (x,y,z) or None, 'name': str}]
    tracks: list                # [Track]
    slices: list                # [Slice]
    counters: list              # [Counter]
    flows: int = 0              # flow ids are 1..flows
    stats: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)        # Finding.to_json() of each finding
    lines: dict = field(default_factory=dict)           # PTX line -> per-line statistics (source view)

    def track(self, i: int) -> Track:
        return self.tracks[i]


def _short_what(what: str) -> str:
    """``cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`` -> a short label."""
    parts = what.split(".")
    keep = []
    for p in parts:
        if "::" in p and p.split("::")[0] in ("mbarrier", "shared", "cta_group", "cache_hint"):
            continue
        keep.append(p)
    return ".".join(keep[:5])


_MB_DETAIL = re.compile(r"^(\S+) \(SMEM 0x([0-9a-fA-F]+)\)")


class TimelineRecorder:
    """Observer keeping what the timeline needs (instructions, sync events, stalls) in arrival order."""

    kinds = ("inst", "sync", "stall")

    def __init__(self):
        self.events: list = []

    def on_event(self, ev) -> None:
        self.events.append(ev)


def _cta_label(ctaid, cluster):
    s = f"CTA ({','.join(map(str, ctaid))})"
    return s if cluster is None else f"cluster ({','.join(map(str, cluster))}) / {s}"


def build_timeline(events, *, kernel: str = "", arch: str = "", clock_mhz: float = 0.0, cycles: int | None = None,
                   findings=(), ctas=None, stats=None) -> Timeline:
    """The :class:`Timeline` of the observed ``events`` (a :class:`TimelineRecorder`'s).  ``ctas``: optional
    ``[(ctaid, clusterid)]`` in launch order (CTAs seen only in events are added after them); ``findings``: the
    run's :class:`tcsim.findings.Finding` s."""
    b = _Builder(events, ctas or ())
    b.build()
    end = max([cycles or 0] + [s.ts + s.dur for s in b.slices])
    tl = Timeline(kernel=kernel, arch=arch, clock_mhz=float(clock_mhz or 0.0), cycles=int(end),
                  ctas=b.cta_list, tracks=b.tracks, slices=b.slices, counters=b.counters, flows=b.nflows,
                  stats=dict(stats or {}), lines=b.lines)
    b.add_findings(tl, findings)
    return tl


def timeline_of(recorder: TimelineRecorder, result, launch=None) -> Timeline:
    """The timeline of a finished run (its :class:`tcsim.launch.Result`)."""
    sim = result.simulation
    tr = getattr(result, "timing", None)
    clock = tr.clock_mhz if tr is not None else float(sim.arch_config.sm_clock_mhz) \
        if hasattr(sim.arch_config, "sm_clock_mhz") else 0.0
    ctas = [(c.ctaid, c.cluster.clusterid if sim.cluster_dims != (1, 1, 1) else None) for c in sim.ctas]
    name = sim.program.kernel.name if hasattr(sim.program, "kernel") else ""
    return build_timeline(recorder.events, kernel=name, arch=sim.arch, clock_mhz=clock,
                          cycles=result.stats["cycles"], findings=result.findings, ctas=ctas, stats=result.stats)


class _Builder:
    def __init__(self, events, ctas):
        self.events = sorted(events, key=lambda e: e.cycle)     # stable: arrival order within a cycle
        self.tracks: list[Track] = []
        self.slices: list[Slice] = []
        self.counters: list[Counter] = []
        self.nflows = 0
        self.cta_index: dict = {}
        self.cta_list: list = []
        for ctaid, cl in ctas:
            self._cta(tuple(ctaid), cl)
        self._tracks: dict = {}
        self.lines: dict = {}
        self.regions: dict = {}          # (cta, warp) -> [Slice] of kind inst, ascending ts
        self.ops: dict = {}              # (cta, op_id) -> Slice
        self._region_starts: dict = {}

    # ------------------------------------------------------------------ structure
    def _cta(self, ctaid, cluster=None) -> int:
        i = self.cta_index.get(ctaid)
        if i is None:
            i = self.cta_index[ctaid] = len(self.cta_list)
            self.cta_list.append({"ctaid": tuple(ctaid), "cluster": None if cluster is None else tuple(cluster),
                                  "name": _cta_label(ctaid, cluster)})
        return i

    def _track(self, cta: int, kind: str, name: str, *, warp=None, group=None, lane=0) -> Track:
        key = (cta, kind, name)
        t = self._tracks.get(key)
        if t is None:
            t = Track(len(self.tracks), name, kind, cta, warp=warp, group=group, lane=lane)
            self.tracks.append(t)
            self._tracks[key] = t
        return t

    def _flow(self, src: Slice | None, dst: Slice | None) -> None:
        if src is None or dst is None or src is dst:
            return
        self.nflows += 1
        src.flows_out.append(self.nflows)
        dst.flows_in.append(self.nflows)

    def _line(self, line) -> dict:
        d = self.lines.get(line)
        if d is None:
            d = self.lines[line] = {"executions": 0, "lanes": 0, "first": None, "last": None, "latency": 0,
                                    "stalls": {}, "text": ""}
        return d

    # ------------------------------------------------------------------ passes
    def build(self) -> None:
        ev = self.events
        pc_line: dict = {}
        for e in ev:
            if e.kind == "inst":
                pc_line[e.pc] = e.line
        #: mbarrier (cta, SMEM offset) -> its symbol, from the stall details that name it ("full_bar (SMEM 0x400) ...")
        self.mb_names = {}
        for e in ev:
            if e.kind == "stall" and e.reason == "mbarrier":
                m = _MB_DETAIL.match(e.detail or "")
                if m:
                    self.mb_names[(self._cta(tuple(e.cta)), int(m.group(2), 16))] = m.group(1)
        self._warps([e for e in ev if e.kind in ("inst", "stall")], pc_line)
        self._async([e for e in ev if e.kind == "sync" and e.op in ("async.issue", "async.complete")])
        self._mbarriers([e for e in ev if e.kind == "sync"])
        self._tmem_smem([e for e in ev if e.kind == "sync"])
        for c in self.counters:
            c.points.sort(key=lambda p: p[0])

    def _warps(self, evs, pc_line) -> None:
        per: dict = {}
        for e in evs:
            per.setdefault((self._cta(tuple(e.cta)), e.warp), []).append(e)
        for (cta, warp), lst in sorted(per.items(), key=lambda kv: kv[0]):
            t = self._track(cta, "warp", f"warp {warp}", warp=warp)
            regions = self.regions.setdefault((cta, warp), [])
            cur = None           # open region: [start, last_issue, last_pc, n, lines]
            last_end = 0
            unplaced: list = []  # stall slices with no pc (a blocked wait): the line of the next instruction

            def close():
                nonlocal cur, last_end
                if cur is None:
                    return
                start, last, _pc, n, lines = cur
                end = max(last + 1, start + 1)
                lo, hi = min(lines), max(lines)
                s = Slice(t.id, start, end - start, f"lines {lo}-{hi}" if lo != hi else f"line {lo}", "inst",
                          {"instructions": n, "first_line": lo, "last_line": hi, "warp": warp,
                           "cta": self.cta_list[cta]["name"]})
                self.slices.append(s)
                regions.append(s)
                last_end = end
                cur = None

            for e in lst:
                c = int(round(e.cycle))
                if e.kind == "stall":
                    close()
                    start = max(c, last_end)
                    dur = int(round(e.cycles))
                    line = pc_line.get(e.pc) if e.pc is not None else None
                    name = f"{e.reason}: {e.detail}" if e.detail else e.reason
                    s = Slice(t.id, start, dur, name, "stall",
                              {"reason": e.reason, "detail": e.detail, "warp": warp, "line": line,
                               "cta": self.cta_list[cta]["name"]})
                    self.slices.append(s)
                    last_end = max(last_end, start + dur)
                    if line is not None:
                        st = self._line(line)["stalls"]
                        st[e.reason] = st.get(e.reason, 0) + dur
                    else:
                        unplaced.append(s)
                    continue
                d = self._line(e.line)
                for s in unplaced:
                    s.args["line"] = e.line
                    d["stalls"][s.args["reason"]] = d["stalls"].get(s.args["reason"], 0) + s.dur
                unplaced.clear()
                d["executions"] += 1
                d["lanes"] += bin(e.mask).count("1")
                d["first"] = c if d["first"] is None else min(d["first"], c)      # over every warp
                d["last"] = c if d["last"] is None else max(d["last"], c)
                d["text"] = e.text
                if e.done is not None:
                    d["latency"] += int(round(e.done)) - c
                if cur is not None and (e.pc != cur[2] + 1 or c < cur[1]):
                    close()
                if cur is None:
                    cur = [max(c, last_end), c, e.pc, 1, [e.line]]
                else:
                    cur[1], cur[2], cur[3] = c, e.pc, cur[3] + 1
                    cur[4].append(e.line)
            close()

    def _region_at(self, cta, warp, cycle) -> Slice | None:
        regs = self.regions.get((cta, warp))
        if not regs:
            return None
        i = bisect.bisect_right([s.ts for s in regs] if len(regs) < 64 else self._starts(cta, warp), cycle)
        return regs[i - 1] if i else regs[0]

    def _starts(self, cta, warp) -> list:
        key = (cta, warp)
        st = self._region_starts.get(key)
        if st is None or len(st) != len(self.regions[key]):
            st = self._region_starts[key] = [s.ts for s in self.regions[key]]
        return st

    def _async(self, evs) -> None:
        issues: dict = {}
        lanes: dict = {}                    # (cta, unit) -> [busy until] per lane
        for e in evs:
            cta = self._cta(tuple(e.cta))
            key = (cta, e.op_id)
            if e.op == "async.issue":
                issues[key] = e
                continue
            iss = issues.pop(key, None)
            if iss is None:
                continue
            unit = iss.unit or iss.agent
            t0, t1 = int(round(iss.cycle)), int(round(e.cycle))
            busy = lanes.setdefault((cta, unit), [])
            for lane, until in enumerate(busy):
                if until <= t0:
                    break
            else:
                lane = len(busy)
                busy.append(0)
            busy[lane] = max(t1, t0 + 1)
            base = UNIT_NAMES.get(unit, unit)
            t = self._track(cta, "unit", base if lane == 0 else f"{base} #{lane}", group=unit, lane=lane)
            det = dict(iss.detail)
            nbytes = det.get("bytes")
            label = _short_what(iss.what or det.get("what", unit))
            name = label + (f" {det.get('op_kind')}" if det.get("op_kind") else "") + \
                (f" {nbytes} B" if isinstance(nbytes, int) else "")
            args = {"what": iss.what, "op_id": e.op_id, "unit": unit, "line": iss.line,
                    "issuer_warp": iss.issuer_warp, "cta": self.cta_list[cta]["name"]}
            for k in ("op_kind", "bytes", "shape", "m", "n", "k", "kind"):
                if k in det and isinstance(det[k], (int, str)):
                    args[k] = det[k]
            s = Slice(t.id, t0, max(t1 - t0, 1), name, "async", args)
            self.slices.append(s)
            self.ops[key] = s
            if iss.issuer_warp is not None:
                self._flow(self._region_at(cta, iss.issuer_warp, t0), s)

    def _mbarriers(self, evs) -> None:
        state: dict = {}        # (cta, addr) -> dict
        waiting: dict = {}      # (cta, addr) -> last completion: (slice, cycle)
        for e in evs:
            op = e.op
            if not op.startswith("mbarrier.") or e.mbarrier is None:
                continue
            owner = e.target_cta if e.target_cta is not None else e.cta
            cta = self._cta(tuple(owner))
            addr = e.mbarrier
            c = int(round(e.cycle))
            key = (cta, addr)
            st = state.get(key)
            if st is None:
                sym = self.mb_names.get(key)
                label = f"mbarrier {sym} @0x{addr:x}" if sym else f"mbarrier @0x{addr:x}"
                t = self._track(cta, "mbarrier", label, group=label)
                st = state[key] = {"track": t, "label": label, "count": 0, "pending": 0, "tx": 0, "phase": 0,
                                   "start": c, "completed": 0,
                                   "c_phase": self._counter(cta, f"{label} completed phases"),
                                   "c_pend": self._counter(cta, f"{label} pending arrivals"),
                                   "c_tx": self._counter(cta, f"{label} pending tx bytes")}
            det = e.detail
            if op == "mbarrier.init":
                st["count"] = st["pending"] = int(det.get("count", e.count or 0))
                st["tx"], st["start"] = 0, c
                st["c_phase"].points.append((c, 0))
            elif op == "mbarrier.arrive":
                st["pending"] -= int(e.count if e.count is not None else 1)
                if isinstance(det.get("tx"), int):
                    st["tx"] += det["tx"]
            elif op == "mbarrier.expect_tx":
                st["tx"] += int(det.get("tx", 0))
            elif op == "mbarrier.complete_tx":
                st["tx"] = int(det["tx"]) if isinstance(det.get("tx"), int) else st["tx"] - int(det.get("bytes", 0))
            elif op == "mbarrier.phase":
                # the phase st['phase'] completed at c
                s = Slice(st["track"].id, st["start"], max(c - st["start"], 0), f"phase {st['phase']} "
                          f"(parity {st['phase'] & 1})", "phase",
                          {"mbarrier": st["label"], "phase": st["phase"], "cta": self.cta_list[cta]["name"]})
                done = Slice(st["track"].id, c, 0, f"phase {st['phase']} complete", "phase_done",
                             {"mbarrier": st["label"], "phase": st["phase"], "completed_by": e.agent,
                              "cta": self.cta_list[cta]["name"]})
                self.slices += [s, done]
                src = self.ops.get((self._cta(tuple(e.cta)), e.op_id)) if e.op_id is not None else None
                if src is None and e.warp is not None:
                    src = self._region_at(self._cta(tuple(e.cta)), e.warp, c)
                if src is not None:
                    self._flow(src, done)
                    done.args["op"] = src.name
                st["completed"] += 1
                st["phase"] += 1
                st["pending"], st["tx"], st["start"] = st["count"], 0, c
                waiting[key] = (done, c, set())
            elif op == "mbarrier.wait":
                if det.get("done") and key in waiting:
                    done, pc_cycle, woken = waiting[key]
                    wcta = self._cta(tuple(e.cta))
                    if (wcta, e.warp) not in woken:
                        woken.add((wcta, e.warp))
                        self._wake(done, wcta, e.warp, c)
                continue
            else:
                continue
            st["c_phase"].points.append((c, st["completed"]))
            st["c_pend"].points.append((c, st["pending"]))
            st["c_tx"].points.append((c, st["tx"]))

    def _wake(self, done: Slice, cta: int, warp: int, cycle: int) -> None:
        """``done`` (a phase completion) released warp ``warp``'s wait at ``cycle``: a flow to its region there and
        the name of the phase on the mbarrier stall slice that ended at that wait."""
        # the first region the warp issued after the completion (a flow goes forward in time)
        region = next((s for s in self.regions.get((cta, warp), ()) if s.ts >= done.ts), None)
        self._flow(done, region)
        tid = self._tracks.get((cta, "warp", f"warp {warp}"))
        if tid is None:
            return
        label = f"{done.args['mbarrier']} phase {done.args['phase']} (completed at cycle {done.ts})"
        for s in reversed(self.slices):
            if s.track == tid.id and s.cat == "stall" and s.args.get("reason") == "mbarrier" and \
                    s.ts <= cycle and "released_by" not in s.args:
                s.args["released_by"] = label
                break
        done.args.setdefault("woke", [])
        done.args["woke"].append(f"warp {warp} at cycle {cycle}")

    def _counter(self, cta: int, name: str) -> Counter:
        t = self._track(cta, "counter", name, group=name)
        for c in self.counters:
            if c.track == t.id:
                return c
        c = Counter(t.id)
        self.counters.append(c)
        return c

    def _tmem_smem(self, evs) -> None:
        cols: dict = {}
        inflight: dict = {}
        for e in evs:
            cta = self._cta(tuple(e.cta))
            c = int(round(e.cycle))
            if e.op in ("tcgen05.alloc", "tcgen05.dealloc"):
                n = int(e.detail.get("ncols", 0))
                cols[cta] = cols.get(cta, 0) + (n if e.op == "tcgen05.alloc" else -n)
                self._counter(cta, "TMEM columns allocated").points.append((c, cols[cta]))
            elif e.op in ("async.issue", "async.complete") and _writes_smem(e):
                inflight[cta] = inflight.get(cta, 0) + (1 if e.op == "async.issue" else -1)
                self._counter(cta, "SMEM stages in flight (async writes)").points.append((c, inflight[cta]))

    # ------------------------------------------------------------------ findings
    def add_findings(self, tl: Timeline, findings) -> None:
        for f in findings:
            js = f.to_json()
            tl.findings.append(js)
            sides = [s for s in f.sides if s.cycle is not None]
            cyc = int(round(max([s.cycle for s in sides] or [0])))
            cta = self._cta(tuple(sides[-1].cta)) if sides and sides[-1].cta is not None else 0
            if not self.cta_list:
                self._cta((0, 0, 0))
            t = self._track(cta, "findings", "findings")
            inst = Slice(t.id, cyc, 0, f"class {f.cls}: {f.title}", "finding",
                         {"message": f.message, "severity": f.severity, "line": f.loc.line if f.loc else None,
                          "finding": len(tl.findings) - 1, "missing": f.missing or "", "fix": f.fix or ""})
            self.slices.append(inst)
            for s in sides:
                c = self._cta(tuple(s.cta)) if s.cta is not None else cta
                src = None
                if s.warp is not None and (s.unit in (None, "warp")):
                    src = self._region_at(c, s.warp, int(round(s.cycle)))
                else:
                    src = self._op_at(c, s.unit, int(round(s.cycle)))
                    if src is None and s.warp is not None:
                        src = self._region_at(c, s.warp, int(round(s.cycle)))
                self._flow(src, inst)
        tl.slices = self.slices
        tl.tracks = self.tracks
        tl.flows = self.nflows
        tl.ctas = self.cta_list

    def _op_at(self, cta, unit, cycle) -> Slice | None:
        best = None
        for (c, _), s in self.ops.items():
            if c == cta and s.args.get("unit") == unit and s.ts <= cycle <= s.ts + s.dur:
                best = s
        return best


def _writes_smem(e) -> bool:
    """The async op writes shared memory: its opcode names a shared state space as the destination (the first
    state space of ``cp.async.bulk.tensor.2d.shared::cluster.global...``), or a TMA load."""
    what = getattr(e, "what", "") or e.detail.get("what", "")
    if not what.startswith("cp.async"):
        return False
    for part in what.split("."):
        if part.startswith("shared"):
            return True
        if part.startswith("global"):
            return False
    return getattr(e, "unit", "") == "tma" and e.detail.get("op_kind") == "load"


__all__ = ["Timeline", "Track", "Slice", "Counter", "TimelineRecorder", "build_timeline", "timeline_of",
           "UNIT_NAMES"]
