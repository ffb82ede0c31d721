"""Protocol checks of mbarriers and TMA transactions: per-mbarrier phase history and root-cause findings.

PTX ISA 9.1 §9.7.13.15 (mbarrier: §9.7.13.15.4 phase completion, §9.7.13.15.5 arrive-on, §9.7.13.15.6 expect-tx,
§9.7.13.15.7 complete-tx, §9.7.13.15.16 test_wait / try_wait) and §9.7.9.25.4 / §9.7.9.25.5 (bulk and tensor copies
signalling complete-tx).  One :class:`Protocol` per simulation (``sim.protocol``) keeps, for every mbarrier
incarnation (one ``mbarrier.init``), a :class:`BarrierRecord`:

* the init (its instruction, count) and, once made, the ``mbarrier.inval``;
* per phase (:class:`PhaseRecord`): the arrivals by instruction (line, warp, lanes, count), the expect-tx
  (line, bytes) and the bytes delivered by each complete-tx (the copy's issuing line, or the warp's line);
* the TMA copies in flight towards the barrier and the phase current when each was issued (the phase its bytes are
  aimed at);
* per waiter -- (warp, lane) of the barrier's CTA -- the last phase it consumed (a successful parity wait consumes
  the most recent completed phase of that parity), the wait that consumed it, and an unsatisfied wait it still has.

From that history the checks name the root cause, not the symptom:

* **over-arrival** (more arrivals than the phase has pending): class 17 when one warp-instruction's lanes alone
  bring more arrivals than the barrier counts (an unpredicated arrive by a whole warp); class 1 when the arriving
  warp got past a stale wait on the way; class 12 when the phase's arrivals come from two producer instructions
  that each announce their own transaction bytes (two channels on one barrier); class 4 otherwise (the init count
  against the arriving lines).  The H100 ends the launch with an error at such an arrive (compute-sanitizer memcheck
  places it there), so the finding's outcome is 'trap'.
* **stale wait** (class 1): a parity wait by the same thread at the same instruction that is satisfied by the phase
  it already consumed there, once the barrier shows the phase it should have waited for is in use (an arrival or
  transaction on it); **overtaken phase**: a thread's unsatisfied wait for phase P whose next test finds the barrier
  at phase P + 2 or later (the parity matches again, phase P went by unseen).
* **transaction bytes** (class 3): a phase completing while a copy aimed at it is still in flight (too few
  expect-tx bytes; the H100 hangs: outcome 'hang'); at a deadlock, pending tx named with the expect-tx lines and the
  copies that delivered.  Class 15 when the bytes that no expect-tx of the receiving CTA covers came by multicast
  from another CTA's copy.
* **barrier lifetime** (class 11): a store over a live mbarrier, re-initialisation without ``mbarrier.inval``, an
  operation on an invalidated barrier -- each naming the init (and inval) line.
* **deadlock root cause**: for each waiter blocked on an mbarrier, the shortfall of arrivals (init count vs the
  arriving lines) or of bytes (expect-tx lines vs the copies that delivered); class 1 when the waiter waits for a
  phase nothing acts on after it skipped the previous one (the same parity twice: it consumed phase P - 2, phase
  P - 1 completed unseen; or its first wait, with parity 1 on a fresh barrier, named the phase before the init and
  phase 0 went by first); class 15 when the missing bytes landed on a barrier of another CTA of the cluster that
  no expect-tx there announced (a copy signalling its own CTA's barrier instead of the leader's), or when a
  multicast delivered to the peers' barrier at the same offset but not to this CTA (a ctaMask leaving it out);
  class 12 when the waited barrier never received anything while another barrier of the CTA receives two
  producers' arrivals, one a transfer announcing bytes (the other channel signals the wrong barrier).  A livelock
  (warps polling test_wait loops) gets the same account for the barriers whose current phase is stuck
  (:meth:`tcsim.engine.Simulation.polled_barrier_causes`).
* **a commit executed by several lanes** (class 17): each lane of a tcgen05.commit performs its own arrive-on;
  more lanes than the barrier counts turn one MMA completion into several phases.
* **a race behind a short init count** (class 4, :meth:`Protocol.count_short`, asked by the race detector): the
  writer's release arrive counted in a later phase than the one the reader's wait consumed, while the same arrive
  instruction of other warps made that phase.

Not checked here: happens-before ordering of the accesses the barriers protect (:mod:`tcsim.race.hb`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Access, Finding
from ..findings import lanes_text as _lanes_text

#: phases of history kept per barrier (older ones are dropped; a finding needs the current and the previous few)
KEEP_PHASES = 4


def lanes_text(mask: int) -> str:
    """'lane 0', 'lanes 0-31', 'lanes 0,2-3' for a 32-bit lane mask (:func:`tcsim.findings.lanes_text`)."""
    return _lanes_text((i for i in range(32) if mask >> i & 1), name_all=False)


@dataclass
class Act:
    """One protocol action as the user wrote it: the instruction, who executed it, when.  ``lanes`` is a 32-bit
    mask (merged as more lanes of the same warp-instruction act)."""

    ins: object                 # the ir.Instruction (warp side) or None
    what: str | None
    loc: object
    cta: tuple | None
    warp: int | None
    lanes: int
    unit: str
    cycle: float
    pc: int | None = None

    @property
    def line(self):
        return None if self.loc is None else self.loc.line

    @property
    def text(self) -> str:
        return self.what if self.what is not None else (str(self.ins) if self.ins is not None else "?")

    @property
    def opcode(self) -> str:
        """The instruction's full opcode (``mbarrier.arrive.expect_tx.shared::cta.b64``), without guard or
        operands: how a finding names the instruction to change."""
        if self.ins is not None and getattr(self.ins, "full_opcode", None):
            return self.ins.full_opcode
        t = self.text.strip()
        if t.startswith("@"):
            t = t.split(None, 1)[1] if " " in t else ""
        return t.split(None, 1)[0].rstrip(";") if t else "?"

    def access(self, where: str | None = None) -> Access:
        return Access(what=self.text, loc=self.loc, cta=self.cta, warp=self.warp,
                      lanes=lanes_text(self.lanes) if self.lanes else None, unit=self.unit, where=where,
                      cycle=float(self.cycle))

    def short(self) -> str:
        who = f"warp {self.warp}" if self.warp is not None else self.unit
        if self.lanes:
            who += " " + lanes_text(self.lanes)
        return f"line {self.line} ({who})"


def warp_act(ctx, lane: int | None = None, mask: int | None = None) -> Act:
    """The executing warp's current instruction as an :class:`Act` (``lane`` or ``mask``: the acting lanes)."""
    if mask is None:
        if lane is None:
            m = 0
            for i in ctx.lane_ids():
                m |= 1 << int(i)
            mask = m
        else:
            mask = 1 << int(lane)
    ins = ctx.ins
    return Act(ins, None, None if ins is None else ins.loc, ctx.cta.ctaid, ctx.warp.id, mask, "warp", ctx.now,
               ctx.pc)


def op_act(op, unit: str, cycle: float, cta=None) -> Act:
    """An async op (a :class:`tcsim.agents.tma.TmaOp` or the tensor pipe's) as an :class:`Act` at its issuing line."""
    lane = getattr(op, "lane", None)
    warp = getattr(op, "warp", None)
    if warp is not None and not isinstance(warp, int):
        warp = getattr(warp, "id", None)
    return Act(None, getattr(op, "what", unit), getattr(op, "loc", None), cta, warp,
               0 if lane is None else 1 << int(lane), unit, cycle, getattr(op, "pc", None))


@dataclass
class PhaseRecord:
    """What one phase of one barrier received."""

    number: int
    arrivals: list = field(default_factory=list)    # [Act, count, tx announced by the same instruction]
    arrived: int = 0
    expects: list = field(default_factory=list)     # [Act, bytes]
    expected_bytes: int = 0
    deliveries: list = field(default_factory=list)  # [Act, bytes, from_other_cta]
    delivered_bytes: int = 0
    completed_at: float | None = None

    def add_arrival(self, act: Act, count: int, tx: int) -> None:
        self.arrived += count
        for a in self.arrivals:
            x = a[0]
            if x.pc == act.pc and x.warp == act.warp and x.cta == act.cta and x.unit == act.unit and \
                    act.pc is not None and abs(x.cycle - act.cycle) < 1e-9:
                x.lanes |= act.lanes
                a[1] += count
                a[2] += tx
                return
        self.arrivals.append([act, count, tx])

    def add_expect(self, act: Act, nbytes: int) -> None:
        self.expected_bytes += nbytes
        for e in self.expects:
            x = e[0]
            if x.pc == act.pc and x.warp == act.warp and act.pc is not None and abs(x.cycle - act.cycle) < 1e-9:
                x.lanes |= act.lanes
                e[1] += nbytes
                return
        self.expects.append([act, nbytes])

    def add_delivery(self, act: Act, nbytes: int, foreign: bool) -> None:
        self.delivered_bytes += nbytes
        self.deliveries.append([act, nbytes, foreign])

    def producer_lines(self) -> set:
        """The lines whose arrivals or delivered bytes made up this phase."""
        out = {a.line for a, _, _ in self.arrivals if a.line is not None}
        out.update(a.line for a, _, _ in self.deliveries if a.line is not None)
        return out

    def arrivals_text(self) -> str:
        if not self.arrivals:
            return "no arrivals"
        parts = [f"{n} from {a.short()}" for a, n, _ in self.arrivals[:6]]
        more = len(self.arrivals) - 6
        return ", ".join(parts) + (f" and {more} more instructions" if more > 0 else "")

    def expects_text(self) -> str:
        if not self.expects:
            return "no expect-tx"
        return ", ".join(f"{b} bytes by {a.short()}" for a, b in self.expects[:6])

    def deliveries_text(self) -> str:
        if not self.deliveries:
            return "no bytes delivered"
        by: dict = {}
        for a, b, _ in self.deliveries:
            k = (a.line, a.text, a.cta)
            n = by.setdefault(k, [0, 0, a])
            n[0] += b
            n[1] += 1
        return ", ".join(f"{n} bytes by {c} copy(ies) issued at line {ln}"
                         + (f" by cta ({','.join(map(str, a.cta))})" if a.cta is not None else "")
                         for (ln, _, _), (n, c, a) in list(by.items())[:6])


def _channel_missing(name: str, a0: Act, a1: Act) -> str:
    """The missing edge of a class-12 finding (one barrier shared by two channels), worded the same whichever way
    the schedule exposed it (an over-arrival, or a deadlock on the other channel's barrier)."""
    return (f"a separate mbarrier for the producer at line {a1.line} (one barrier per independent channel), or a "
            f"wait on {name} completing between line {a0.line} and line {a1.line}")


class BarrierRecord:
    """The history of one mbarrier incarnation (one ``mbarrier.init``)."""

    __slots__ = ("init", "count", "inval", "phases", "consumed", "waiting", "suspects", "inflight", "cta_label",
                 "offset", "previous", "stale_phases", "channels")

    def __init__(self, init: Act, count: int, cta_label: str, offset: int, previous=None):
        self.init = init
        self.count = count
        self.inval: Act | None = None
        self.phases: dict = {}
        self.consumed: dict = {}        # (warp, lane) -> (phase, Act of the wait)
        self.waiting: dict = {}         # (warp, lane) -> (phase waited for, parity, Act)  (an unsatisfied test)
        self.suspects: list = []        # stale waits awaiting confirmation: (key, phase, parity, prev Act, Act)
        self.inflight: dict = {}        # id(op) -> (Act, bytes, aimed phase, from_other_cta)
        self.cta_label = cta_label
        self.offset = offset
        self.previous = previous        # the record of the incarnation this one replaced (re-init)
        self.stale_phases: dict = {}    # phase -> the stale wait that skipped it (confirmed)
        self.channels: dict = {}        # wait line -> the producer lines of the phases it consumed

    def phase(self, n: int) -> PhaseRecord:
        ph = self.phases.get(n)
        if ph is None:
            ph = self.phases[n] = PhaseRecord(n)
            if len(self.phases) > KEEP_PHASES:
                for k in sorted(self.phases)[:-KEEP_PHASES]:
                    del self.phases[k]
        return ph

    def name(self) -> str:
        return f"mbarrier@0x{self.offset:x} of {self.cta_label}"

    def init_text(self) -> str:
        return f"initialised with count {self.count} at line {self.init.line}"


class Protocol:
    """The protocol checker of one simulation (``sim.protocol``); the mbarrier doors call it (module docstring)."""

    def __init__(self, sim):
        self.sim = sim
        self.stale_by_warp: dict = {}   # (cta, warp) -> (record, Act of the stale wait, consumed phase, parity)
        sim.finish_hooks.append(self.finish)

    def finish(self, sim) -> None:
        """After a run that completed: a barrier whose current phase holds bytes multicast from another CTA that no
        expect-tx of its own covers (tx-count below zero, nothing announced) is class 15 -- its CTA's waits did not
        wait for them (they came after the phase its waiters consumed)."""
        for cta in sim.ctas:
            for mb in cta.mbarriers.values():
                rec = mb.record
                if rec is None or not mb.valid or mb.tx >= 0:
                    continue
                ph = rec.phases.get(mb.phase)
                if ph is None or ph.expects:
                    continue
                foreign = [d for d in ph.deliveries if d[2]]
                if not foreign:
                    continue
                d = foreign[0][0]
                prev = rec.phases.get(mb.phase - 1)
                last = prev.arrivals[-1][0] if prev is not None and prev.arrivals else None
                sides = ((last.access(where=rec.name()),) if last is not None else (rec.init.access(where=rec.name()),))
                sides += (d.access(where=rec.name()),)
                self.report(Finding(
                    15, f"{-mb.tx} bytes multicast into {cta.label} by the copy at {d.short()} of cta "
                        f"({','.join(map(str, d.cta))}) landed on phase {mb.phase} of {rec.name()}, which no expect-tx "
                        f"of this CTA announced"
                        + (f"; phase {mb.phase - 1} had completed on {prev.arrivals_text()} with "
                           f"{prev.expects_text()}, so this CTA's waiters went on before the bytes came"
                           if prev is not None else ""),
                    sides,
                    missing=f"an mbarrier.arrive.expect_tx in {cta.label} for the {-mb.tx} bytes the copy at line {d.line} "
                            f"multicasts to it" + (f" (mbarrier.arrive.expect_tx at line {last.line})"
                                                   if last is not None else ""),
                    fix="every receiving CTA must expect the bytes it receives (each CTA's arrive.expect_tx counts its "
                        "own copies plus the multicast it gets), not only the leader",
                    key=(15, "finish", rec.init.line, d.line)))

    # ------------------------------------------------------------------------------------------ helpers
    def report(self, finding: Finding) -> None:
        self.sim.findings.report(finding)

    # ------------------------------------------------------------------------------------------ init / inval
    def on_init(self, act: Act, cta, mb, count: int) -> None:
        """Before ``mbarrier.init`` of ``mb``: a live barrier re-initialised without ``mbarrier.inval`` is class 11
        (the hardware simply re-initialises it; reported and the init goes on)."""
        old = mb.record
        if mb.valid and old is not None:
            self.report(Finding(
                11, f"mbarrier.init on {old.name()}, which is still live ({old.init_text()}, now in phase "
                    f"{mb.phase} with {mb.pending}/{mb.expected} arrivals pending, tx-count {mb.tx}); waiters and "
                    f"arrivals of the old incarnation now act on the new one",
                (old.init.access(where=old.name()), act.access(where=old.name())),
                missing=f"mbarrier.inval of the barrier initialised at line {old.init.line} before line {act.line}",
                fix="invalidate the barrier (mbarrier.inval) once every use of it has completed, then re-initialise "
                    "it, or use a separate mbarrier"))
        mb.record = BarrierRecord(act, count, cta.label, mb.offset, previous=old)

    def on_inval(self, act: Act, cta, mb) -> None:
        rec = mb.record
        if rec is not None:
            rec.inval = act

    def dead_barrier(self, act: Act, cta, mb, what: str, outcome: str = "continue") -> Finding | None:
        """An operation on an invalidated barrier (class 11), naming its init and inval lines; None if the barrier
        was never initialised (the caller reports that as before).  An H100 performs the operation on the state the
        barrier had before ``mbarrier.inval`` (probe arrive_after_inval, tests/hw/golden_h100/protocol_outcomes.json), so the caller
        revives that state and goes on."""
        rec = mb.record
        if rec is None or rec.inval is None:
            return None
        f = Finding(11, f"{what} on {rec.name()}, which was invalidated at line {rec.inval.line} "
                        f"({rec.init_text()}); its memory no longer holds an mbarrier (the GPU acts on the state it "
                        f"had before the inval)",
                    (rec.init.access(), rec.inval.access(), act.access(where=rec.name())),
                    missing=f"no mbarrier.init between the mbarrier.inval at line {rec.inval.line} and line "
                            f"{act.line}",
                    fix="re-initialise the barrier after invalidating it, or invalidate it only after its last use",
                    outcome=outcome)
        self.report(f)
        return f

    def uninitialised(self, act: Act, cta, offset: int, what: str) -> None:
        """An mbarrier operation on SMEM that never held an initialised mbarrier: the H100 ends the launch with an
        error at it (probe arrive_uninitialised)."""
        self.report(Finding(
            0, f"{what} on SMEM offset 0x{offset:x} of {cta.label}, where no mbarrier was initialised (ever)",
            (act.access(where=f"SMEM [0x{offset:x}, 0x{offset + 8:x}) of {cta.label}"),),
            missing=f"mbarrier.init of the barrier at 0x{offset:x} (then fence.mbarrier_init / a barrier) before "
                    f"line {act.line}",
            fix="initialise every mbarrier before its first use", outcome="trap"))

    def check_expect(self, act: Act, cta, mb, nbytes: int) -> None:
        """expect-tx past the 2^20-1 tx-count limit (PTX ISA §9.7.13.15.1): the H100 ends the launch with an error
        at the instruction (probe expect_tx_over_limit)."""
        from ..mbarrier_state import MAX_COUNT
        if mb.tx + int(nbytes) <= MAX_COUNT:
            return
        rec = mb.record
        name = rec.name() if rec is not None else f"mbarrier@0x{mb.offset:x} of {cta.label}"
        self.report(Finding(
            3, f"expect-tx of {nbytes} bytes on {name} brings its tx-count to {mb.tx + int(nbytes)}, past the limit "
               f"{MAX_COUNT}", ((rec.init.access(where=name),) if rec is not None else ()) + (act.access(where=name),),
            missing=f"at most {MAX_COUNT} transaction bytes pending per phase",
            fix="split the transfer over several phases (or barriers)", outcome="trap"))

    def store_over_barrier(self, cta, mb, side: Access | None, who: str) -> None:
        """A generic (or async) store over the bytes of a live mbarrier (class 11)."""
        rec = mb.record
        name = rec.name() if rec is not None else f"mbarrier@0x{mb.offset:x} of {cta.label}"
        sides = ((rec.init.access(where=name),) if rec is not None else ()) + ((side,) if side is not None else ())
        self.report(Finding(
            11, f"{who} over the live {name}"
                + (f" ({rec.init_text()})" if rec is not None else "")
                + "; the barrier's state is overwritten (its phase, counts and waiters become garbage on the GPU)",
            sides, missing=f"mbarrier.inval of {name} before its memory is reused"
                           + (f" (it was initialised at line {rec.init.line})" if rec is not None else ""),
            fix="keep mbarrier objects out of data buffers, or mbarrier.inval the barrier before reusing its bytes",
            key=(11, "store", (rec.init.line if rec is not None else None), side.line if side is not None else None)))

    # ------------------------------------------------------------------------------------------ arrivals
    def check_arrive(self, act: Act, cta, mb, count: int, tx: int = 0, lanes_of_instruction: int = 1) -> None:
        """Before ``count`` arrivals (``lanes_of_instruction`` lanes of one warp-instruction together) on ``mb``:
        more arrivals than pending is an over-arrival -- reported (outcome 'trap', the H100 raises an error at the
        arrive) with its root cause."""
        if count <= mb.pending:
            return
        rec = mb.record
        if rec is None:
            return
        ph = rec.phase(mb.phase)
        name = rec.name()
        state = (f"phase {mb.phase} had {mb.pending} of {mb.expected} arrivals pending"
                 + (f" and tx-count {mb.tx}" if mb.tx else ""))
        earlier = ph.arrivals_text()
        sides = [rec.init.access(where=name)] + [a.access(where=name) for a, _, _ in ph.arrivals[-2:]]
        sides.append(act.access(where=name))
        where_lanes = lanes_text(act.lanes)
        # a stale wait behind it: one that skipped this very phase of this barrier (a consumer past its wait let the
        # producer re-arm the barrier early), or one by the arriving warp itself (on any barrier)
        stale = rec.stale_phases.get(mb.phase)
        if stale is None:
            for sp in rec.suspects:
                if sp[1] == mb.phase:
                    stale = (rec, sp[4], sp[5], sp[2], sp[3])
                    break
        if stale is None and act.unit == "warp":
            stale = self.stale_by_warp.get((act.cta, act.warp))
        if lanes_of_instruction > 1 and count > rec.count:
            f = Finding(
                17, f"over-arrival: {act.short()} arrives on {name} with {lanes_of_instruction} lanes ({where_lanes}), "
                    f"{count} arrivals, but the barrier counts {rec.count} per phase ({rec.init_text()}); {state}"
                    f" (earlier in this phase: {earlier})",
                tuple(sides[:1] + sides[-1:]),
                missing=f"a predicate or elect.sync restricting the arrive at line {act.line} to "
                        f"{rec.count} lane{'s' if rec.count != 1 else ''}",
                fix=f"issue the arrive from one elected lane (elect.sync / @p with %laneid == 0), or initialise the "
                    f"barrier at line {rec.init.line} with the number of arriving threads",
                outcome="trap")
        elif stale is not None:
            srec, sact, sphase, spar, prev = stale
            f = Finding(
                1, f"over-arrival on {name}: {state}; {act.short()} arrives after the wait at {sact.short()} "
                   f"(parity {spar} on {srec.name()}) went past with the stale phase {sphase}, which it had already "
                   f"consumed at line {prev.line}, instead of waiting for phase {sphase + 1}",
                (prev.access(where=srec.name()), sact.access(where=srec.name()), act.access(where=name)),
                missing=f"the parity of the wait at line {sact.line} flipped after consuming phase {sphase} "
                        f"(it should wait with parity {(sphase + 1) & 1})",
                fix="flip the wait parity each time the ring of stages wraps (phase ^= 1 when the stage index "
                    "returns to 0)",
                outcome="trap")
        elif self._two_channels(ph, act, tx):
            (a0, n0, t0) = next((x for x in ph.arrivals if x[2]), None) or ph.arrivals[0]
            f = Finding(
                12, f"over-arrival: {name} is shared by two producers in one phase: {a0.short()} "
                    + (f"announced {t0} bytes" if t0 else "arrived") + f" and {act.short()} arrives "
                    + (f"announcing {tx} more" if tx else "as well") + f", but the barrier counts {rec.count} arrival"
                    f"{'s' if rec.count != 1 else ''} per phase ({rec.init_text()}); {state}",
                (rec.init.access(where=name), a0.access(where=name), act.access(where=name)),
                missing=_channel_missing(name, a0, act),
                fix="give each independent producer/consumer channel its own mbarrier (e.g. as many barriers as "
                    "concurrent loads), or raise the init count and expect the combined bytes once",
                outcome="trap")
        elif any(a.line == act.line and a.warp == act.warp and a.cta == act.cta for a, _, _ in ph.arrivals):
            # the same instruction arrives again before the phase it arrived on completed: the producer laps its
            # own barrier (a missing wait for the consumers' release / for the phase)
            prev = next(a for a, _, _ in ph.arrivals if a.line == act.line and a.warp == act.warp)
            f = Finding(
                4, f"over-arrival on {name}: {state} ({rec.init_text()}); {act.short()} arrives again in phase "
                   f"{mb.phase}, which its earlier arrival at cycle {prev.cycle:g} opened and which has not "
                   f"completed",
                tuple(sides),
                missing=f"a wait between the two arrivals at line {act.line}: phase {mb.phase} of {name} must complete "
                        f"(and its consumers release the stage) before the barrier is armed again",
                fix="wait on the stage's empty (consumer-release) barrier before arming the full barrier again",
                outcome="trap")
        else:
            f = Finding(
                4, f"over-arrival on {name}: {state} ({rec.init_text()}); {act.short()} brings {count} more "
                   f"(earlier in this phase: {earlier})",
                tuple(sides),
                missing=f"an init count at line {rec.init.line} equal to the arrivals per phase "
                        f"(or fewer arriving threads)",
                fix=f"initialise the barrier with the number of threads that arrive per phase, or predicate the "
                    f"arrive at line {act.line}",
                outcome="trap")
        self.report(f)

    def check_commit_lanes(self, act: Act, cta, mb, nlanes: int) -> None:
        """``nlanes`` lanes of one tcgen05.commit each perform their own arrive-on on ``mb`` (PTX ISA 9.1
        §9.7.16.12.1: the commit is not a warp-collective instruction; every executing thread makes an
        mbarrier::arrive::one): more than the barrier counts per phase is class 17 -- each commit completes a phase
        of its own, so the phases the waiters count no longer match (one MMA, many completions)."""
        rec = mb.record
        if rec is None or nlanes <= 1 or nlanes <= rec.count:
            return
        name = rec.name()
        self.report(Finding(
            17, f"{act.short()} is executed by {nlanes} lanes ({lanes_text(act.lanes)}); each performs its own "
                f"mbarrier::arrive::one on {name}, which counts {rec.count} arrival{'s' if rec.count != 1 else ''} "
                f"per phase ({rec.init_text()}): one MMA completion becomes {nlanes} arrivals and completes "
                f"{nlanes // max(rec.count, 1)} phases",
            (rec.init.access(where=name), act.access(where=name)),
            missing=f"a predicate or elect.sync restricting the tcgen05.commit at line {act.line} to one lane",
            fix="issue tcgen05.mma and tcgen05.commit from one elected lane (elect.sync, @p) of the MMA warp",
            key=(17, "commit-lanes", rec.init.line, act.line)))

    @staticmethod
    def _two_channels(ph: PhaseRecord, act: Act, tx: int) -> bool:
        """Two producer instructions in one phase, at least one of them a transfer that announces its transaction
        bytes: different lines or warps / CTAs each announcing bytes, or an arrive at another line by another warp
        joining a phase armed for a transfer (a second channel -- e.g. a generic-proxy producer's release -- signalling
        the transfer's barrier)."""
        for a, _, t in ph.arrivals:
            if not (t or tx):
                continue
            if t and tx and (a.line != act.line or a.warp != act.warp or a.cta != act.cta):
                return True
            if a.line != act.line and (a.warp != act.warp or a.cta != act.cta):
                return True
        return False

    def on_arrive(self, act: Act, cta, mb, phase: int, count: int, tx: int = 0) -> None:
        """After an arrival that belonged to ``phase``."""
        rec = mb.record
        if rec is None:
            return
        rec.phase(phase).add_arrival(act, count, tx)
        self._confirm_stale(rec, phase, act)

    def on_expect_tx(self, act: Act, cta, mb, nbytes: int) -> None:
        rec = mb.record
        if rec is None:
            return
        rec.phase(mb.phase).add_expect(act, nbytes)
        self._confirm_stale(rec, mb.phase, act)

    # ------------------------------------------------------------------------------------------ transactions
    def copy_issued(self, op, issuer_cta, cta, mb, nbytes: int, cycle: float) -> None:
        """A TMA copy issued towards ``mb`` of ``cta``: its bytes are aimed at the barrier's current phase."""
        rec = mb.record
        if rec is None:
            return
        v = rec.inflight.get(id(op))
        if v is not None:                   # signalled more than once (cta_group::2 pairs: both CTAs' bytes)
            v[4] += 1
            v[1] += int(nbytes)
            return
        act = op_act(op, "tma", cycle, issuer_cta.ctaid)
        rec.inflight[id(op)] = [act, int(nbytes), mb.phase, issuer_cta is not cta, 1]

    def on_complete_tx(self, act: Act, cta, mb, nbytes: int, op=None, foreign: bool = False) -> None:
        """Before complete-tx(``nbytes``) on ``mb`` (by copy ``op`` when given)."""
        rec = mb.record
        if rec is None:
            return
        if op is not None:
            v = rec.inflight.get(id(op))
            if v is not None:
                v[4] -= 1
                v[1] -= int(nbytes)
                if v[4] <= 0:
                    del rec.inflight[id(op)]
        rec.phase(mb.phase).add_delivery(act, nbytes, foreign)
        self._confirm_stale(rec, mb.phase, act)

    def on_phase(self, cta, mb, completed: int, cycle: float) -> None:
        """Phase ``completed`` of ``mb`` just completed: copies aimed at it still in flight are class 3 (or 15 when
        they come by multicast from another CTA) -- the waiters go on while those bytes are still missing, and the
        bytes will count against the next phase (an H100 counts complete-tx on a completed phase against the next
        one without an error: probe complete_tx_on_completed_phase, tests/hw/golden_h100/protocol_outcomes.json), which then
        completes early or never (a hang when its tx-count cannot return to zero, reported at the deadlock)."""
        rec = mb.record
        if rec is None:
            return
        ph = rec.phase(completed)
        ph.completed_at = cycle
        late = [v for v in rec.inflight.values() if v[2] == completed]
        if not late:
            return
        name = rec.name()
        act, nbytes, _, foreign, _ = late[0]
        total = sum(v[1] for v in late)
        exp = ph.expects[0][0] if ph.expects else None
        sides = ([exp.access(where=name)] if exp is not None else [rec.init.access(where=name)])
        sides += [d[0].access(where=name) for d in ph.deliveries[:1]]
        sides.append(act.access(where=name))
        multi = self._multi_lane_issue([v[0] for v in late] + [d[0] for d in ph.deliveries])
        if multi is not None:
            ins_act, nlanes = multi
            f = Finding(
                17, f"phase {completed} of {name} completed while {total} bytes were still in flight: the copy at "
                    f"line {ins_act.line} was issued by {nlanes} lanes of warp {ins_act.warp} "
                    f"({lanes_text(ins_act.lanes)}), each a copy of its own, but expect-tx announced "
                    f"{ph.expected_bytes} bytes ({ph.expects_text()})",
                tuple(sides),
                missing=f"a predicate or elect.sync restricting the copy at line {ins_act.line} to one lane",
                fix="issue each bulk copy from one elected lane (elect.sync / @p with %laneid == 0)")
        elif foreign:
            f = Finding(
                15, f"phase {completed} of {name} completed while {total} bytes multicast to it by the copy at "
                    f"{act.short()} of cta ({','.join(map(str, act.cta))}) were still in flight: this CTA's "
                    f"expect-tx ({ph.expects_text()}) does not cover the bytes other CTAs send it "
                    f"(delivered: {ph.deliveries_text()}); they will land on phase {completed + 1}",
                tuple(sides),
                missing=f"an mbarrier.arrive.expect_tx in cta ({','.join(map(str, cta.ctaid))}) for the {total} bytes the copy at "
                        f"line {act.line} multicasts to it",
                fix="every receiving CTA must expect the bytes it receives (each CTA's arrive.expect_tx counts its "
                    "own copies plus the multicast it gets), not only the leader")
        else:
            f = Finding(
                3, f"phase {completed} of {name} completed while the copy at {act.short()} ({nbytes} bytes"
                   + (f", {total} in all" if total != nbytes else "")
                   + f") aimed at it was still in flight: expect-tx announced {ph.expected_bytes} bytes "
                     f"({ph.expects_text()}), the copies delivered {ph.delivered_bytes} ({ph.deliveries_text()}); "
                     f"the late bytes land on phase {completed + 1} and drive its tx-count negative",
                tuple(sides),
                missing=(f"{total} more bytes in the {exp.opcode} at line {exp.line}" if exp is not None else
                         f"an mbarrier.arrive.expect_tx of {total} bytes for the copy at line {act.line}"),
                fix="make the expect-tx byte count equal the bytes all copies of the phase deliver (box bytes x "
                    "number of copies, x2 for cta_group::2 / both CTAs of a pair)")
        self.report(f)

    @staticmethod
    def _multi_lane_issue(acts):
        """(an Act with the lanes merged, their number) when several lanes of one warp issued copies at the same
        line (one instruction executed by more lanes than the protocol counts), else None."""
        by: dict = {}
        for a in acts:
            if a.unit == "tma" and a.line is not None and a.warp is not None:
                by.setdefault((a.cta, a.warp, a.line), [a, 0])[1] |= a.lanes
        for (cta, warp, line), (a, lanes) in by.items():
            n = bin(lanes).count("1")
            if n > 1:
                return Act(a.ins, a.what, a.loc, cta, warp, lanes, a.unit, a.cycle, a.pc), n
        return None

    # ------------------------------------------------------------------------------------------ waits
    def on_wait(self, act_of, cta, mb, lanes_done, lanes_blocked, parity: int | None, warp: int) -> None:
        """A test_wait / try_wait by ``warp``: ``lanes_done`` passed (each consumed a phase), ``lanes_blocked``
        did not.  ``parity``: the parity of a parity wait (None for a token wait).  ``act_of(mask)``: the wait as an
        :class:`Act` for those lanes."""
        rec = mb.record
        if rec is None or parity is None:
            return
        P = mb.phase
        # overtaken: an earlier unsatisfied wait for phase Q, and now the barrier is at Q + 2 or later
        for lane in list(lanes_done) + list(lanes_blocked):
            key = (warp, lane)
            w = rec.waiting.get(key)
            if w is not None and w[1] == parity and P >= w[0] + 2:
                wact = act_of(1 << lane)
                self.report(Finding(
                    1, f"phase {w[0]} of {rec.name()} completed while warp {warp} lane {lane} waited for it "
                       f"(parity {parity}, first tested at line {w[2].line}); by its next test at line {wact.line} "
                       f"the barrier had advanced to phase {P}, whose parity matches again, so the wait misses the "
                       f"completion", (w[2].access(where=rec.name()), wact.access(where=rec.name())),
                    missing=f"a blocking try_wait (or a wait that cannot be overtaken) at line {w[2].line}: no "
                            f"arrivals for phase {w[0] + 1} may come before every waiter saw phase {w[0]} complete",
                    fix="make producers wait for the consumers' release (an empty barrier) before re-arming the "
                        "barrier, so a phase cannot complete twice while a waiter waits",
                    key=(1, "overtaken", rec.init.line, w[2].line)))
                rec.waiting.pop(key, None)
        for lane in lanes_blocked:
            key = (warp, lane)
            if key not in rec.waiting:
                rec.waiting[key] = (P, parity, act_of(1 << lane))
        if not lanes_done:
            return
        consumed = P - 1      # the most recent completed phase with this parity (-1: the phase before init)
        pc = act_of(0).pc
        stale_lanes = 0
        prev_act = None
        for lane in lanes_done:
            key = (warp, lane)
            rec.waiting.pop(key, None)
            prev = rec.consumed.get(key)
            if prev is not None and prev[0] == consumed and prev[1].pc == pc:
                stale_lanes |= 1 << lane
                prev_act = prev[1]
        mask = 0
        for lane in lanes_done:
            mask |= 1 << lane
        sact = act_of(mask)             # one record of the wait for all its lanes
        self._channel(rec, sact, consumed, P)
        for lane in lanes_done:
            rec.consumed[(warp, lane)] = (consumed, sact)
        if stale_lanes:
            stale = act_of(stale_lanes)
            rec.suspects.append(((warp, stale_lanes), P, parity, prev_act, stale, consumed))
            ph = rec.phases.get(P)
            if ph is not None and (ph.arrivals or ph.expects or ph.deliveries):
                first = (ph.arrivals or ph.expects or ph.deliveries)[0][0]
                self._confirm_stale(rec, P, first)

    def on_release(self, cta, mb, warp: int, mask: int, act: Act) -> None:
        """Lanes ``mask`` of ``warp`` blocked in a try_wait were released by the completion of phase
        ``mb.phase - 1``: they consumed it."""
        rec = mb.record
        if rec is None:
            return
        for lane in range(32):
            if mask >> lane & 1:
                rec.waiting.pop((warp, lane), None)
                rec.consumed[(warp, lane)] = (mb.phase - 1, act)
        self._channel(rec, act, mb.phase - 1, mb.phase)

    def _channel(self, rec: BarrierRecord, wait: Act, consumed: int, current: int) -> None:
        """The wait at line ``wait.line`` consumed phase ``consumed``: class 12 when that phase was made by producer
        lines this wait never consumed from, while a transfer of its own producers is already under way on the
        barrier's current phase -- the wait was satisfied by another channel's completion (one mbarrier shared by
        independent channels, NVIDIA/Fuser PR #5862)."""
        ph = rec.phases.get(consumed)
        if ph is None or consumed < 0:
            return
        made_by = ph.producer_lines()
        if not made_by:
            return
        mine = rec.channels.get(wait.line)
        if mine and not (made_by & mine):
            cur = rec.phases.get(current)
            own = []
            if cur is not None:
                own = [a for a, _, _ in cur.arrivals if a.line in mine]
                own += [a for a, _ in cur.expects if a.line in mine]
            own += [v[0] for v in rec.inflight.values() if v[0].line in mine]
            if own:
                other = next((a for a, _, _ in ph.arrivals), None) or ph.deliveries[0][0]
                name = rec.name()
                self.report(Finding(
                    12, f"the wait at {wait.short()} on {name} was satisfied by phase {consumed}, which was made by "
                        f"line(s) {sorted(made_by)} -- another channel than the transfers it consumed before (lines "
                        f"{sorted(mine)}); its own transfer ({own[0].short()}) was still under way on phase "
                        f"{current}",
                    (other.access(where=name), own[0].access(where=name), wait.access(where=name)),
                    missing=f"a separate mbarrier for the transfers of line(s) {sorted(made_by)} and of line(s) "
                            f"{sorted(mine)}",
                    fix="give each independent producer/consumer channel its own mbarrier (at least as many "
                        "barriers as transfers in flight at once)",
                    key=(12, "other-channel", rec.init.line, wait.line)))
                return
        rec.channels.setdefault(wait.line, set()).update(made_by)

    def _confirm_stale(self, rec: BarrierRecord, phase: int, evidence: Act) -> None:
        """Activity on ``phase`` of the barrier confirms the stale waits that skipped it: class 1."""
        if not rec.suspects:
            return
        keep = []
        for s in rec.suspects:
            (warp, lanes), P, parity, prev, stale, consumed = s
            if P != phase:
                keep.append(s) if P > phase else None
                continue
            self.stale_by_warp[(stale.cta, warp)] = (rec, stale, consumed, parity, prev)
            rec.stale_phases[phase] = (rec, stale, consumed, parity, prev)
            self.report(Finding(
                1, f"the wait at {stale.short()} (parity {parity}) on {rec.name()} was satisfied by phase "
                   f"{consumed}, which the same wait had already consumed at cycle {prev.cycle:g}; the phase it "
                   f"should have waited for, {phase}, was still in progress ({evidence.short()} acted on it)",
                (prev.access(where=rec.name()), stale.access(where=rec.name()), evidence.access(where=rec.name())),
                missing=f"a parity flip for the wait at line {stale.line}: after consuming phase {consumed} it must "
                        f"wait with parity {(consumed + 1) & 1} for phase {consumed + 1}",
                fix="flip the wait parity each time the ring of stages wraps (phase ^= 1 when the stage index "
                    "returns to 0)",
                key=(1, "stale", rec.init.line, stale.line)))
        rec.suspects = keep

    # ------------------------------------------------------------------------------------------ deadlock
    def deadlock_cause(self, cta, mb, warp_label: str, lanes: str) -> Finding | None:
        """The root cause of a waiter blocked on ``mb`` at a deadlock: missing bytes (class 3, or 15 for
        multicast bytes no expect-tx covers) or missing arrivals (class 4)."""
        rec = mb.record
        if rec is None or not mb.valid:
            return None
        ph = rec.phase(mb.phase)
        name = rec.name()
        waiter = next(iter(rec.waiting.values()), None)
        wside = [waiter[2].access(where=name)] if waiter is not None else []
        skipped = self._skipped_phase(rec, mb, ph)
        if skipped is not None:
            return skipped
        if mb.pending == 0 and mb.tx > 0:
            exp = ph.expects[0][0] if ph.expects else None
            elsewhere = self._misdirected(cta, mb)
            if elsewhere is not None:
                other_cta, other, oph = elsewhere
                d = oph.deliveries[0][0]
                oname = other.record.name()
                rank = getattr(cta, "rank", None)
                return Finding(
                    15, f"phase {mb.phase} of {name} can never complete: {mb.tx} of the {ph.expected_bytes} bytes "
                        f"expected ({ph.expects_text()}) never came to it, while {-other.tx} bytes landed on "
                        f"{oname}, where no expect-tx of {other_cta.label} announced them (delivered: "
                        f"{oph.deliveries_text()}): the copies of {other_cta.label} signal complete-tx on a barrier of "
                        f"their own CTA instead of the one that expects their bytes",
                    tuple(([exp.access(where=name)] if exp is not None else [rec.init.access(where=name)])
                          + [d.access(where=oname)] + wside),
                    missing=f"the mbarrier operand of the copy at line {d.line} in {other_cta.label} naming {name} "
                            f"(mapa.shared::cluster to rank {rank}), which the expect_tx"
                            + (f" at line {exp.line}" if exp is not None else "") + " arms for those bytes; or an "
                            f"mbarrier.arrive.expect_tx in {other_cta.label} for its {-other.tx} bytes (and a wait "
                            f"on it before they are used)",
                    fix="in a cta_group::2 pair (or any cluster transfer), every copy must signal the mbarrier whose "
                        "expect_tx counts its bytes: the leader's barrier (mapa to the leader's rank) when the "
                        "leader expects the bytes of both CTAs",
                    outcome="hang")
            excluded = self._mask_excluded(cta, mb) if not ph.deliveries else None
            if excluded is not None:
                d, other_cta = excluded
                rank = getattr(cta, "rank", None)
                return Finding(
                    15, f"phase {mb.phase} of {name} can never complete: its expect-tx ({ph.expects_text()}) "
                        f"announced {ph.expected_bytes} bytes and none came, while the multicast copy at {d.short()} "
                        f"delivered to {other_cta.label}'s barrier at the same offset but not to this CTA: its "
                        f"ctaMask leaves out cluster rank {rank}",
                    tuple(([exp.access(where=name)] if exp is not None else [rec.init.access(where=name)])
                          + [d.access(where=other_cta.label)] + wside),
                    missing=f"bit {rank} (cta rank {rank}) in the ctaMask of the multicast copy at line {d.line}, "
                            f"which this CTA's expect_tx" + (f" at line {exp.line}" if exp is not None else "")
                            + " counts on (or no expect_tx for bytes this CTA does not receive)",
                    fix="make the ctaMask of every multicast name each CTA whose barrier expects its bytes (0b11 for "
                        "a pair), and each CTA expect exactly the bytes the masks send it",
                    outcome="hang")
            sides = ([exp.access(where=name)] if exp else [rec.init.access(where=name)]) + \
                [d[0].access(where=name) for d in ph.deliveries[:1]] + wside
            return Finding(
                3, f"phase {mb.phase} of {name} can never complete: all {rec.count} arrivals came but {mb.tx} "
                   f"transaction bytes are still expected -- expect-tx announced {ph.expected_bytes} bytes "
                   f"({ph.expects_text()}), the copies delivered {ph.delivered_bytes} ({ph.deliveries_text()})",
                tuple(sides),
                missing=(f"{mb.tx} fewer bytes in the {exp.opcode} at line {exp.line}" if exp is not None else
                         f"copies delivering the {mb.tx} bytes"),
                fix="make the expect-tx byte count equal the bytes the phase's copies deliver (box bytes x number of "
                    "copies; a cta_group::2 pair counts the bytes of both CTAs only in the barrier that receives "
                    "both)",
                outcome="hang")
        if mb.pending == 0 and mb.tx < 0:
            foreign = [d for d in ph.deliveries if d[2]]
            if foreign and not ph.expects:
                d = foreign[0][0]
                return Finding(
                    15, f"phase {mb.phase} of {name} can never complete: {-mb.tx} bytes multicast into this CTA "
                        f"(by the copy at {d.short()} of cta ({','.join(map(str, d.cta))})) were never expected "
                        f"here (no expect-tx in this CTA this phase; delivered: {ph.deliveries_text()})",
                    (d.access(where=name),) + tuple(wside),
                    missing=f"an mbarrier.arrive.expect_tx in cta ({','.join(map(str, cta.ctaid))}) for the bytes "
                            f"the copy at line {d.line} multicasts to it",
                    fix="every receiving CTA must expect the bytes it receives, not only the leader", outcome="hang")
            d = ph.deliveries[-1][0] if ph.deliveries else rec.init
            # every copy instruction that delivered (each line once, first delivery first): which one over-delivers
            # is a matter of arrival order, the bug is the byte count of them all against the expect-tx
            copies, seen = [], set()
            for a, _, _ in ph.deliveries:
                if a.line not in seen:
                    seen.add(a.line)
                    copies.append(a)
            copies = copies[:4] or [d]
            return Finding(
                3, f"phase {mb.phase} of {name} can never complete: {-mb.tx} more bytes were delivered than "
                   f"expected (expect-tx {ph.expected_bytes}: {ph.expects_text()}; delivered "
                   f"{ph.delivered_bytes}: {ph.deliveries_text()})",
                tuple(([ph.expects[0][0].access(where=name)] if ph.expects else [])
                      + [a.access(where=name) for a in copies] + wside),
                missing=(f"{-mb.tx} more bytes in the {ph.expects[0][0].opcode} at line {ph.expects[0][0].line}"
                         if ph.expects else
                         f"an mbarrier.arrive.expect_tx of {ph.delivered_bytes} bytes for the copies at line {d.line}"),
                fix="make the expect-tx byte count equal the bytes all copies of the phase deliver", outcome="hang")
        shared = self._channel_elsewhere(cta, mb, wside)
        if shared is not None:
            return shared
        arrivers = {(a.cta, a.warp, a.unit) for p in rec.phases.values() for a, _, _ in p.arrivals}
        now = {(a.cta, a.warp, a.unit) for a, _, _ in ph.arrivals}
        if mb.pending > 0 and ph.arrivals and arrivers <= now:
            # every thread that ever arrived on this barrier has arrived in this phase: the count is too high
            last = ph.arrivals[-1][0]
            return Finding(
                4, f"phase {mb.phase} of {name} can never complete: it counts {mb.expected} arrivals "
                   f"({rec.init_text()}) but only {mb.expected - mb.pending} came ({ph.arrivals_text()}); "
                   f"{mb.pending} never arrive",
                (rec.init.access(where=name), last.access(where=name)) + tuple(wside),
                missing=f"{mb.pending} more arrival{'s' if mb.pending != 1 else ''} on {name} in phase {mb.phase}, "
                        f"or an init count at line {rec.init.line} equal to the threads that arrive",
                fix="initialise the barrier with the number of threads (or elected lanes) that arrive per phase",
                outcome="hang")
        return None

    def _channel_elsewhere(self, cta, mb, wside) -> Finding | None:
        """Class 12 at a deadlock: the waited barrier never received anything since its init, while another barrier
        of the same CTA received, in its recent phases, arrivals of two producer instructions (different lines and
        warps), one of them a transfer announcing bytes -- the second channel signals the first channel's barrier
        instead of its own (NVIDIA/Fuser PR #5862)."""
        rec = mb.record
        if any(p.arrivals or p.expects or p.deliveries for p in rec.phases.values()):
            return None
        for other in cta.mbarriers.values():
            orec = other.record
            if other is mb or orec is None or not other.valid:
                continue
            sources = {}
            for p in orec.phases.values():
                for a, _, t in p.arrivals:
                    k = (a.line, a.warp, a.cta)
                    if a.line is not None and k not in sources:
                        sources[k] = (a, t)
            tx = [a for a, t in sources.values() if t]
            if not tx:
                continue
            rest = [a for a, _ in sources.values() if a.line != tx[0].line and (a.warp != tx[0].warp
                                                                                or a.cta != tx[0].cta)]
            if not rest or len(sources) <= orec.count:
                continue
            a0, a1 = tx[0], rest[0]
            oname, name = orec.name(), rec.name()
            return Finding(
                12, f"phase {mb.phase} of {name} can never complete: nothing has arrived on it since its init "
                    f"({rec.init_text()}), while {oname} ({orec.init_text()}) receives the arrivals of two producers: "
                    f"{a0.short()}, a transfer announcing its bytes, and {a1.short()} -- two channels share one "
                    f"barrier and the other's is never signalled"
                    + (f" ({wside[0].describe()} waits for it)" if wside else ""),
                (orec.init.access(where=oname), a0.access(where=oname), a1.access(where=oname)),
                missing=_channel_missing(oname, a0, a1),
                fix="give each independent producer/consumer channel its own mbarrier and signal it from that "
                    "channel's producer only",
                outcome="hang")
        return None

    def _skipped_phase(self, rec: BarrierRecord, mb, ph: PhaseRecord) -> Finding | None:
        """Class 1 at a deadlock: a thread blocked in a parity wait for the current phase P, which nothing has
        acted on, after it consumed phase P - 2 and phase P - 1 completed without it -- it waited twice with the
        same parity (PTX ISA §9.7.13.15.16: a parity wait waits for the completion of the phase of that parity), so
        it skipped phase P - 1 and now waits for a phase no producer will make."""
        if ph.arrivals or ph.expects or ph.deliveries or mb.phase < 1:
            return None
        hits = []
        for key, (P, parity, wact) in rec.waiting.items():
            got = rec.consumed.get(key)
            if P != mb.phase or parity != P & 1:
                continue
            if got is not None and got[0] == P - 2:
                hits.append((key, got[1], wact))
            elif got is None and P == 1:
                # its first wait: with parity 1 on a fresh barrier it names the phase before init (-1), which a
                # parity wait treats as completed; phase 0 went by first, so it now waits for phase 1
                hits.append((key, None, wact))
        if not hits:
            return None
        (warp, _), prev, wact = hits[0]
        lanes = 0
        for (w, lane), _, _ in hits:
            if w == warp:
                lanes |= 1 << lane
        wact = Act(wact.ins, wact.what, wact.loc, wact.cta, wact.warp, lanes, wact.unit, wact.cycle, wact.pc)
        warps = sorted({k[0] for k, _, _ in hits})
        name = rec.name()
        done = rec.phases.get(mb.phase - 1)
        maker = None
        if done is not None:
            maker = (done.arrivals[-1][0] if done.arrivals else done.deliveries[-1][0] if done.deliveries else None)
        sides = ([prev.access(where=name)] if prev is not None else []) + [wact.access(where=name)]
        if maker is not None:
            sides.append(maker.access(where=name))
        before = (f"last consumed phase {mb.phase - 2} at line {prev.line} with the same parity" if prev is not None
                  else f"had consumed no phase of it: with parity {mb.phase & 1} its first wait named the phase "
                       f"before the init (-1), which counts as completed")
        return Finding(
            1, f"the wait at {wact.short()} (parity {mb.phase & 1}) on {name} waits for phase {mb.phase}, which "
               f"nothing acts on; the same thread{'s' if len(hits) > 1 else ''} (warp{'s' if len(warps) > 1 else ''} "
               f"{', '.join(map(str, warps))}) {before}, and phase {mb.phase - 1} completed"
               + (f" ({maker.short()} acted on it)" if maker is not None else "")
               + " without being waited for: the wait parity was not flipped, so the wait skipped a phase",
            tuple(sides),
            missing=f"a parity flip for the wait at line {wact.line}: "
                    + (f"after consuming phase {mb.phase - 2} it must " if prev is not None else
                       "on a fresh barrier it must ")
                    + f"wait with parity {(mb.phase - 1) & 1} for phase {mb.phase - 1}",
            fix="flip the wait parity each time the ring of stages wraps (phase ^= 1 when the stage index returns "
                "to 0)",
            outcome="hang", key=(1, "skipped", rec.init.line, wact.line))

    def release_before(self, ctaid, warp: int, before: float, reader_warp=None):
        """The stage release a producer acted on: the latest mbarrier wait by ``warp`` of cta ``ctaid`` that
        consumed a phase at or before cycle ``before``, as (record, wait Act, the arrivals of that phase) -- or None
        when unknown, or when ``reader_warp`` itself arrived in that phase (then the release does cover it)."""
        cta = next((c for c in self.sim.ctas if tuple(c.ctaid) == tuple(ctaid)), None)
        if cta is None:
            return None
        best = None
        for mb in cta.mbarriers.values():
            rec = mb.record
            if rec is None:
                continue
            for (w, _), (phase, act) in rec.consumed.items():
                if w == warp and act.cycle <= before and (best is None or act.cycle > best[1].cycle):
                    best = (rec, act, phase)
        if best is None:
            return None
        rec, act, phase = best
        ph = rec.phases.get(phase)
        if ph is None or not ph.arrivals:
            return None
        arrivals = [a for a, _, _ in ph.arrivals]
        if reader_warp is not None and any(a.warp == reader_warp and a.cta == tuple(ctaid) for a in arrivals):
            return None
        return rec, act, arrivals

    def count_short(self, writer, reader, reaches=None):
        """Class 4 behind a race: ``writer`` (an access record: cta, warp, cycle) arrived on an mbarrier after its
        access, and that arrival counted in phase k + 1 (or later) although the same arrive instruction (by other
        warps) also made phase k -- the phase that ``reader``'s warp consumed before its access.  The init count is
        lower than the threads that arrive per round, so the phase completed before the writer's arrival.  Returns
        (record, consumed phase, the arrival Act, phase k's arrival Acts, the reader's wait Act, whether the Act is
        the writer's own arrival) or None.  ``reaches(pc, line)``: whether the straight-line code from the
        instruction at ``pc`` reaches ``line`` (the writer's arrive still to come)."""
        if writer.issuer is None or reader.issuer is None or writer.issuer == reader.issuer:
            return None
        cta = next((c for c in self.sim.ctas if tuple(c.ctaid) == tuple(reader.issuer[0])), None)
        if cta is None:
            return None
        rw = reader.issuer[1]
        for mb in cta.mbarriers.values():
            rec = mb.record
            if rec is None:
                continue
            got = [v for (w, _), v in rec.consumed.items() if w == rw and v[1].cycle <= reader.cycle]
            if not got:
                continue
            k, wait = max(got, key=lambda v: v[1].cycle)
            made = rec.phases.get(k)
            if made is None or not made.arrivals:
                continue
            lines = {a.line for a, _, _ in made.arrivals}
            wkey = (tuple(writer.issuer[0]), writer.issuer[1])
            if any((a.cta, a.warp) == wkey for a, _, _ in made.arrivals):
                continue                # the writer's own arrival made the phase: not a count problem
            for q in sorted(p for p in rec.phases if p > k):
                for a, _, _ in rec.phases[q].arrivals:
                    if (a.cta, a.warp) == wkey and a.unit == "warp" and a.line in lines and a.cycle >= writer.cycle:
                        return rec, k, a, [x for x, _, _ in made.arrivals], wait, True
            # the writer has not arrived yet, but its straight-line code after the access reaches the arrive that
            # made phase k for the other warps: the phase completed before its arrival could count
            if reaches is not None and getattr(writer, "pc", None) is not None:
                for a, _, _ in made.arrivals:
                    if a.unit == "warp" and reaches(writer.pc, a.line):
                        return rec, k, a, [x for x, _, _ in made.arrivals], wait, False
        return None

    @staticmethod
    def _mask_excluded(cta, mb):
        """(the delivery Act, the CTA it went to) of a multicast copy that delivered bytes to the barrier at
        ``mb``'s offset in another CTA of the cluster, in a phase kept on record, while ``mb`` got none -- a ctaMask
        that leaves this CTA out; None otherwise."""
        cl = getattr(cta, "cluster", None)
        for other_cta in getattr(cl, "ctas", None) or ():
            if other_cta is cta:
                continue
            other = other_cta.mbarriers.get(mb.offset)
            orec = None if other is None else other.record
            if orec is None:
                continue
            for p in orec.phases.values():
                for d, _, _ in p.deliveries:
                    if "multicast" in (d.text or ""):
                        return d, other_cta
        return None

    @staticmethod
    def _misdirected(cta, mb):
        """(other cta, its mbarrier, its current PhaseRecord) for a barrier in another CTA of ``cta``'s cluster
        holding transaction bytes that no expect-tx of its CTA announced (tx-count below zero, no expect-tx this
        phase), at most as many as ``mb`` still misses -- where the bytes ``mb`` waits for went."""
        cl = getattr(cta, "cluster", None)
        for other_cta in getattr(cl, "ctas", None) or ():
            if other_cta is cta:
                continue
            for other in other_cta.mbarriers.values():
                orec = other.record
                if orec is None or not other.valid or other.tx >= 0 or -other.tx > mb.tx:
                    continue
                oph = orec.phases.get(other.phase)
                if oph is not None and oph.deliveries and not oph.expects:
                    return other_cta, other, oph
        return None


__all__ = ["Act", "BarrierRecord", "PhaseRecord", "Protocol", "lanes_text", "op_act", "warp_act"]
