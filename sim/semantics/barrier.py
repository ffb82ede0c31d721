"""CTA barriers: bar / barrier {.cta} sync, arrive, red.{popc,and,or} (named barriers 0..15), bar.warp.sync.

PTX ISA 9.1 §9.7.13.1 (bar, barrier) and §9.7.13.2 (bar.warp.sync).

Model.  Each CTA has 16 barrier resources.  A barrier phase collects *warp* arrivals, as the hardware does
("causes executing thread to wait for all non-exited threads from its warp and marks warps' arrival"): the
lanes of a warp arrive as they execute a barrier instruction on that barrier, and the warp counts as arrived
once all its non-exited lanes have (so a divergent warp, or lanes that exit instead, still complete the
warp's arrival).  With a thread count ``b`` (a multiple of 32) the phase completes when ``b / 32`` warps
have arrived; without one, when every warp of the CTA that still has a live thread has arrived (threads
that exited count as arrived, PTX §9.7.12.7 exit).  ``sync`` and ``red`` suspend the lanes until the phase
completes; ``arrive`` does not wait.  ``bar{.cta}.X`` is ``barrier{.cta}.X.aligned``; ``.cta`` changes
nothing.  On completion the barrier resets for immediate reuse.

Checks.  Class-16 findings (:mod:`tcsim.findings`) with the outcome an H100 gives (probes in
``tests/hw/golden_h100/protocol_outcomes.json``): a thread count that is zero or not a multiple of 32 (illegal instruction at
the bar.sync: 'trap'); different thread counts for the same barrier in the same phase, naming the arrival that
started the phase (illegal instruction at the later arrival: 'trap'); a count above the CTA's threads (the barrier
never completes: 'hang').  SyncError: barrier id outside 0..15; a missing count on ``arrive``; ``red`` mixed with
``sync``/``arrive`` in one phase; a lane arriving twice in one phase; non-uniform barrier id / count across
the lanes of one instruction; lanes of a warp reaching an ``.aligned`` barrier at different instructions in
the same phase.  (The whole-CTA form and an explicit count equal to the CTA's warp-rounded thread count are
accepted together in one phase; the phase keeps the completion rule of its first arrival.)

Warp granularity was checked on an H100 (sm_90a): ``bar.sync 1, 64`` completes for a 48-thread CTA (warp 1
has 16 lanes) and for a 64-thread CTA whose lanes 48..63 exited.

``barrier.red``: the predicate ``c`` (or ``!c``) of every arriving thread is combined (popc: number of true
predicates, and: all true, or: any true) and written to every thread that executed the ``red`` once the
phase completes.

``bar.warp.sync membermask``: the executing lanes wait until every non-exited lane of ``membermask`` has
executed a ``bar.warp.sync`` (the executing lane must be in the mask).

Memory ordering guarantees of the barriers have no extra functional effect here (execution is sequentially
consistent); every arrival and completion is reported as a ``sync`` event (``bar.arrive``,
``bar.release``, ``bar.warp.sync``) for the race detector.

Not supported: nothing of the PTX 9.1 syntax is left out.  The forms are parsed and checked in
:mod:`tcsim.isa.barrier_forms`.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.barrier_forms import NUM_BARRIERS, WARP, parse_bar
from tcsim.isa.operand_rules import check_src
from tcsim.isa.errors import SyncError
from ..agents.port import SyncPort
from ..context import lanes_str
from ..findings import Finding
from ..race.protocol import warp_act
from .registry import semantics



class _Phase:
    """One open phase of one named barrier of one CTA."""

    __slots__ = ("cta", "index", "count", "kind", "red_op", "lanes", "pcs", "arrived", "event", "popc", "all",
                 "any", "waiting", "generation", "first")

    def __init__(self, cta, index, env, generation):
        self.cta = cta
        self.index = index
        self.count = None          # thread count (None: all threads of the CTA) once the first arrival fixed it
        self.kind = None           # 'sync' (sync/arrive) or 'red'
        self.red_op = None
        self.lanes = {}            # warp id -> bool[32] of lanes arrived in this phase
        self.pcs = {}              # warp id -> pc of its .aligned arrival
        self.arrived = set()       # warp ids whose arrival is complete
        self.event = env.event()
        self.popc = 0
        self.all = True
        self.any = False
        self.waiting = {}          # warp id -> bool[32] lanes suspended on this phase
        self.generation = generation
        self.first = None          # the first arrival of the phase (tcsim.race.protocol.Act), for findings

    def describe(self) -> str:
        cta = self.cta
        if self.count is None:
            need = [w for w in cta.warps if w.alive.any()]
            missing = [w.id for w in need if w.id not in self.arrived]
            target = f"all {len(need)} live warps of the CTA"
        else:
            missing = None
            target = f"{self.count} threads ({self.count // WARP} warps)"
        arrived = sorted(self.arrived)
        partial = {wid: m for wid, m in self.lanes.items() if wid not in self.arrived}
        s = (f"named barrier {self.index} of {cta.label} (phase {self.generation}): waiting for {target}; "
             f"{len(arrived)} warp(s) arrived {arrived}")
        if partial:
            s += "; partially arrived: " + ", ".join(f"warp {wid} {lanes_str(m)}" for wid, m in partial.items())
        if missing:
            s += f"; missing warps {missing}"
        return s


class NamedBarriers:
    """Per-simulation state of the CTA named barriers and of bar.warp.sync (an engine agent).  Each change of that
    state is one of its methods, which reports it as it makes it: :meth:`arrive` ('bar.arrive'), the phase
    completion ('bar.release', through the agent port), :meth:`warp_sync_arrive` ('bar.warp.sync')."""

    def __init__(self, sim):
        self.sim = sim
        self.phases = {}           # (cta id(), index) -> _Phase
        self.generations = {}
        self.warp_sync = {}        # warp -> dict(arrived=bool[32], event=..., mask=int)
        self.took_part = {}        # (cta id(), index) -> ids of the warps that ever arrived at that barrier
        self.port = SyncPort(sim, "barrier", ("op",))     # reports the releases
        sim.exit_hooks.append(self.on_exit)

    # ------------------------------------------------------------------ named barriers
    def phase(self, cta, index) -> _Phase:
        key = (id(cta), index)
        ph = self.phases.get(key)
        if ph is None:
            gen = self.generations.get(key, 0)
            ph = self.phases[key] = _Phase(cta, index, self.sim.env, gen)
            nb = cta.barriers[index]
            nb.event = ph.event
            nb.expected = None
            nb.arrived = 0
            nb.waiting = []
        return ph

    def _mirror(self, ph):
        nb = ph.cta.barriers[ph.index]
        nb.expected = ph.count
        nb.arrived = len(ph.arrived) * WARP
        nb.waiting = [(ph.cta.warps[wid], m.copy()) for wid, m in ph.waiting.items()]
        nb.generation = ph.generation

    def arrive(self, ctx, index, count, kind, lanes, aligned, pred=None, red_op=None):
        """Record the arrival of ``lanes`` of ctx's warp; returns the phase (for waiting)."""
        cta, warp = ctx.cta, ctx.warp
        ph = self.phase(cta, index)
        if ph.kind is None:
            ph.kind, ph.red_op = kind, red_op
        elif ph.kind != kind or ph.red_op != red_op:
            a = "barrier.red" + (f".{ph.red_op}" if ph.red_op else "") if ph.kind == "red" else "barrier.sync/arrive"
            b = "barrier.red" + (f".{red_op}" if red_op else "") if kind == "red" else "barrier.sync/arrive"
            raise SyncError(f"{b} on named barrier {index} while the same phase is in use by {a}",
                            expected="barrier.red not intermixed with sync/arrive (or another red operation) on "
                                     "one barrier phase")
        full = WARP * len(cta.warps)
        if not ph.lanes and not ph.arrived:
            ph.count = count
            ph.first = warp_act(ctx)
        elif ph.count != count and not ({ph.count, count} == {None, full}):
            def show(c):
                return "all threads of the CTA" if c is None else f"{c} threads"
            # an H100 raises an illegal instruction at the later arrival with the other count (probe
            # bar_sync_mixed_counts_large_first, tests/hw/golden_h100/protocol_outcomes.json)
            first = ph.first
            ctx.report(Finding(
                16, f"named barrier {index} of {cta.label}: {warp.label} arrives expecting {show(count)}, but the "
                    f"current phase was started expecting {show(ph.count)} (by {first.short()}, generation "
                    f"{ph.generation}): two groups with different thread counts share barrier {index}",
                (first.access(where=f"named barrier {index} of {cta.label}"),
                 ctx.side(where=f"named barrier {index} of {cta.label}")),
                missing=f"a separate barrier id for one of the groups (line {first.line} and line "
                        f"{ctx.ins.loc.line} use barrier {index} with {show(ph.count)} and {show(count)})",
                fix="give each group of warps that synchronises together its own named barrier id, with the same "
                    "thread count at every bar.sync / bar.arrive of it",
                outcome="trap"))
        self.took_part.setdefault((id(cta), index), set()).add(warp.id)
        prev = ph.lanes.get(warp.id)
        if prev is None:
            prev = ph.lanes[warp.id] = np.zeros(WARP, dtype=bool)
        twice = prev & lanes
        if twice.any() or warp.id in ph.arrived:
            raise SyncError(f"{warp.label} {lanes_str(twice if twice.any() else lanes)} arrived twice at named "
                            f"barrier {index} of {cta.label} in the same phase",
                            expected="one arrival per thread per barrier phase (an arrive followed by another "
                                     "barrier instruction on the same barrier before it completes is undefined)")
        if aligned:
            pc0 = ph.pcs.get(warp.id)
            if pc0 is None:
                ph.pcs[warp.id] = ctx.pc
            elif pc0 != ctx.pc:
                raise SyncError(f"lanes of {warp.label} reach the .aligned barrier {index} at different "
                                f"instructions (pc {pc0} and {ctx.pc}) in one phase",
                                expected="all threads of a warp executing the same aligned barrier instruction")
        prev |= lanes
        if pred is not None:
            p = pred[lanes]
            ph.popc += int(p.sum())
            ph.all = ph.all and bool(p.all())
            ph.any = ph.any or bool(p.any())
        ctx.emit_sync("bar.arrive", barrier=index, count=count, form=kind, lanes=[int(x) for x in np.nonzero(lanes)[0]],
                      generation=ph.generation, typed=dict(count=full if count is None else count))
        self._warp_check(ph, warp)
        self._mirror(ph)
        self._complete_check(ph)
        return ph

    def sync_whole_cta(self, cta, warps: list, index: int, pc: int, aligned: bool, times: int = 1) -> bool:
        """Every live warp of ``cta`` (``warps``, in issue order, each with all its live lanes) executes the
        ``bar.sync index`` at ``pc`` (no thread count, no guard) in one cycle, on a barrier with no open phase: the
        state :meth:`arrive` and :meth:`wait` leave after the reference tier runs them warp by warp -- the phase
        opens, every warp arrives, it completes at the last arrival (the warps' waits end in this same cycle,
        before any of them issues again; nothing of the phase is left) and the barrier's mirror is what the last
        warp's wait leaves (:meth:`_mirror` of the completed phase).  ``times``: that many such barriers back to
        back (the fast tier's compiled blocks run several between two calls; nothing else touches the barrier in
        between).  False (nothing changed) when a phase is open.  Used by the fast tier's lockstep supersteps
        (tcsim.fast.lockstep); keep in step with :meth:`phase` / :meth:`arrive` / :meth:`_complete_check` /
        :meth:`wait`."""
        key = (id(cta), index)
        if key in self.phases:
            return False
        gen = self.generations.get(key, 0)
        took = self.took_part.setdefault(key, set())
        for w in warps:
            took.add(w.id)
            w.last_sync = "bar.arrive"
        self.generations[key] = gen + times
        ids = sorted(w.id for w in warps)
        for t in range(times):
            self.port.sync("bar.release", cta, barrier=index, generation=gen + t, warps=ids)
        nb = cta.barriers[index]
        nb.event = None
        nb.expected = None
        nb.arrived = len(warps) * WARP
        nb.waiting = [(w, w.alive.copy()) for w in warps]
        nb.generation = gen + times - 1
        return True

    def _warp_check(self, ph, warp):
        m = ph.lanes.get(warp.id)
        if m is not None and warp.id not in ph.arrived and not (warp.alive & ~m).any():
            ph.arrived.add(warp.id)

    def _complete_check(self, ph):
        cta = ph.cta
        if ph.count is None:
            done = all(w.id in ph.arrived for w in cta.warps if w.alive.any()) and bool(ph.arrived)
        else:
            done = len(ph.arrived) >= ph.count // WARP
        if not done:
            return
        key = (id(cta), ph.index)
        del self.phases[key]
        self.generations[key] = ph.generation + 1
        nb = cta.barriers[ph.index]
        nb.generation = ph.generation + 1
        nb.arrived = 0
        nb.waiting = []
        nb.event = None
        self.port.sync("bar.release", cta, barrier=ph.index, generation=ph.generation, warps=sorted(ph.arrived))
        value = None
        if ph.kind == "red":
            value = {"popc": ph.popc, "and": ph.all, "or": ph.any}[ph.red_op]
        ph.event.succeed(value)

    def deadlock_cause(self, wait, blocked=None):
        """At a deadlock: a class-16 finding (outcome 'hang') when ``wait`` waits on a named-barrier phase whose
        thread count (PTX ISA 9.1 §9.7.13.1: bar.sync with thread count b completes when b threads have arrived)
        the CTA's warps can no longer meet: warps exited, or the count is above the warps that could arrive.

        ``blocked``: warp id -> where it is stuck, for the warps of the deadlock whose own wait has no root cause
        (the engine finds those first).  Such a warp never arrives here, so it counts as one that could arrive
        only if it ever took part in this barrier (an earlier generation): then the barrier waits for a warp
        blocked elsewhere, and the count is not the fault (None).  A warp that never arrived at this barrier
        index and is stuck elsewhere -- the producer waiting for a stage the barrier's warps would release
        after the barrier -- is not one of its participants: the count is."""
        for ph in self.phases.values():
            if ph.event is not wait.event or ph.count is None:
                continue
            cta = ph.cta
            need = ph.count // WARP
            took = self.took_part.get((id(cta), ph.index), set())
            others = [w for w in cta.warps if w.alive.any() and w.id not in ph.arrived]
            stuck = [w for w in others if blocked is not None and w.id in blocked and w.id not in took]
            could = len(ph.arrived) + len(others) - len(stuck)
            if could >= need:
                return None
            where = f"named barrier {ph.index} of {cta.label}"
            first = ph.first
            exited = [w.id for w in cta.warps if not w.alive.any() and w.id not in ph.arrived]
            elsewhere = "; ".join(f"warp {w.id} waits elsewhere ({blocked[w.id]})" for w in stuck)
            return Finding(
                16, f"{where} (generation {ph.generation}) waits for {ph.count} threads ({need} warps), but only "
                    f"{len(ph.arrived)} warp(s) {sorted(ph.arrived)} arrived and {could - len(ph.arrived)} more "
                    f"can" + (f" (warps {exited} exited without arriving)" if exited else "")
                    + (f" ({elsewhere}, and never took part in barrier {ph.index})" if stuck else "")
                    + ": its count can never be met",
                ((first.access(where=where),) if first is not None else ()),
                missing=f"{need - could} more warp(s) arriving at barrier {ph.index}, or a thread count of "
                        f"{could * WARP} at line {first.line if first is not None else '?'}",
                fix="make the bar.sync / bar.arrive thread count equal the threads of the warps that arrive at it",
                outcome="hang")
        return None

    def wait(self, ctx, ph, lanes, what, on_release=None):
        warp = ctx.warp
        w = ph.waiting.get(warp.id)
        ph.waiting[warp.id] = lanes.copy() if w is None else (w | lanes)
        self._mirror(ph)

        def reason(ph=ph, what=what):
            return f"{what}: {ph.describe()}"

        ctx.block(lanes.copy(), ph.event, reason, on_release=on_release)

    def on_exit(self, warp, lanes):
        cta = warp.cta
        for (cid, idx), ph in list(self.phases.items()):
            if ph.cta is not cta:
                continue
            self._warp_check(ph, warp)
            self._mirror(ph)
            self._complete_check(ph)
        st = self.warp_sync.get(warp)
        if st is not None:
            self._warp_sync_check(warp, st)

    # ------------------------------------------------------------------ bar.warp.sync
    def warp_sync_arrive(self, ctx, lanes, masks):
        """``lanes`` of ctx's warp arrive at ``bar.warp.sync`` (``masks``: each lane's membermask), reported as
        'bar.warp.sync'; returns the event that fires once every member lane arrived, and the sync state."""
        warp = ctx.warp
        st = self.warp_sync.get(warp)
        if st is None:
            st = self.warp_sync[warp] = {"arrived": np.zeros(WARP, dtype=bool), "event": self.sim.env.event(),
                                         "need": np.zeros(WARP, dtype=bool)}
        st["arrived"] |= lanes
        for lane in np.nonzero(lanes)[0]:
            st["need"] |= ((np.uint32(masks[lane]) >> np.arange(WARP, dtype=np.uint32)) & 1).astype(bool)
        ev = st["event"]
        self._warp_sync_check(warp, st)
        lane_ids = np.nonzero(lanes)[0]
        ctx.emit_sync("bar.warp.sync", mask=int(masks[lane_ids[0]]), lanes=[int(x) for x in lane_ids])
        return ev, st

    def _warp_sync_check(self, warp, st):
        need = st["need"] & warp.alive
        if (need & ~st["arrived"]).any():
            return
        del self.warp_sync[warp]
        st["event"].succeed(None)


def _agent(ctx) -> NamedBarriers:
    return ctx.agent("named-barriers", NamedBarriers)


# ----------------------------------------------------------------------------------------------- decoding
def _uniform(ctx, op, what) -> int:
    v = ctx.read(op, "u32")[ctx.mask]
    u = np.unique(v)
    if u.size != 1:
        raise SyncError(f"{what} differs across the lanes of the instruction ({', '.join(map(str, u[:4]))})",
                        expected=f"a warp-uniform {what}")
    return int(u[0])


@semantics("bar", "barrier")
def decode_bar(ins, info):
    """PTX ISA 9.1 §9.7.13.1 bar{.cta}.{sync,arrive,red} / barrier{.cta}.{sync,arrive,red}{.aligned}, and
    §9.7.13.2 bar.warp.sync."""
    f = parse_bar(ins)
    for op in (f.a, f.b):
        if isinstance(op, ir.Reg):
            check_src(ins, info, op, "b32")       # ptxas: a predicate or 64-bit barrier operand is "Arguments mismatch"
    if f.op == "warp_sync":
        return _decode_warp_sync(ins, f.a)
    return _make(ins, ins.full_opcode, f.op, f.a, f.b, f.aligned, dst=f.dst, cop=f.c, rop=f.rop)


def _make(ins, what, op, a, b, aligned, dst=None, cop=None, rop=None):
    kind = "red" if op == "red" else "sync"

    def run(ctx):
        lanes = ctx.mask.copy()
        if not lanes.any():
            return
        if aligned:
            _require_warp_aligned(ctx, what)
        index = _uniform(ctx, a, "barrier number")
        if not 0 <= index < NUM_BARRIERS:
            raise SyncError(f"{what}: barrier number {index} out of range", expected="0..15")
        count = None
        if b is not None:
            count = _uniform(ctx, b, "thread count")
            where = f"named barrier {index} of {ctx.cta.label}"
            if count <= 0 or count % WARP:
                # an H100 raises an illegal instruction at the first bar.sync with such a count (probe
                # bar_sync_count_not_mult32)
                ctx.report(Finding(
                    16, f"{what}: thread count {count} is not a positive multiple of 32 (the warp size)",
                    (ctx.side(where=where),), missing=f"a thread count that is a multiple of 32 at line "
                                                      f"{ctx.ins.loc.line}",
                    fix="count whole warps: the barrier counts every thread of each arriving warp "
                        "(PTX ISA §9.7.13.1: b must be a multiple of the warp size)", outcome="trap"))
            if count > ctx.cta_threads:
                # the barrier can never complete: an H100 hangs (probe bar_sync_count_exceeds_cta)
                ctx.report(Finding(
                    16, f"{what}: thread count {count} exceeds the {ctx.cta_threads} threads (rounded to warps) of "
                        f"the CTA; the barrier can never complete", (ctx.side(where=where),),
                    missing=f"a thread count of at most {ctx.cta_threads} at line {ctx.ins.loc.line}",
                    fix="count only the threads of the CTA that arrive at this barrier", outcome="hang"))
        pred = ctx.read_pred(cop) if cop is not None else None
        ag = _agent(ctx)
        ph = ag.arrive(ctx, index, count, kind, lanes, aligned, pred=pred, red_op=rop)
        if op == "arrive":
            return
        def write_result(value, lanes=lanes):
            if rop == "popc":
                ctx.write(dst, "u32", np.full(WARP, value, dtype=np.uint32), mask=lanes)
            else:
                ctx.write_pred(dst, bool(value), mask=lanes)
        ag.wait(ctx, ph, lanes, what, write_result if op == "red" else None)

    return run


def _require_warp_aligned(ctx, what):
    """An .aligned barrier is executed by the whole warp; lanes predicated off while their siblings execute
    it are a divergent use (undefined behaviour)."""
    off = ctx.group & ~ctx.mask
    if off.any():
        raise SyncError(f"{what} is .aligned but {lanes_str(off)} of {ctx.warp.label} skip it (guard predicate "
                        f"false) while {lanes_str(ctx.mask)} execute it",
                        expected="an aligned barrier executed by all non-exited threads of the warp")


def _decode_warp_sync(ins, mop):
    """PTX ISA 9.1 §9.7.13.2 bar.warp.sync membermask."""

    def run(ctx):
        lanes = ctx.mask.copy()
        if not lanes.any():
            return
        masks = ctx.read(mop, "b32")
        lane_ids = np.nonzero(lanes)[0]
        own = (masks[lane_ids] >> lane_ids.astype(np.uint32)) & 1
        if not own.all():
            bad = lane_ids[own == 0]
            raise SyncError(f"bar.warp.sync: lane {int(bad[0])} is not in its own membermask "
                            f"0x{int(masks[bad[0]]):08x}", expected="the executing thread to be in membermask")
        ag = _agent(ctx)
        ev, st = ag.warp_sync_arrive(ctx, lanes, masks)
        if ev.triggered:
            return
        warp = ctx.warp

        def reason(st=st, warp=warp):
            missing = st["need"] & warp.alive & ~st["arrived"]
            return f"bar.warp.sync: waiting for {lanes_str(missing)} of {warp.label}"

        ctx.block(lanes, ev, reason)

    return run
