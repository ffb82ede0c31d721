"""Findings of the happens-before detector, worded so that a kernel author can fix the bug from the message alone:
the class, both sides (:class:`tcsim.findings.Access`), the missing edge by its PTX instruction and lines, and
the fix.  :func:`classify` decides what an unordered or unfenced pair of accesses is (PTX ISA 9.1 sections
cited per class); the other functions build the findings of the checks that are not pairs of memory accesses.
"""
from __future__ import annotations

from tcsim.findings import Finding
from .clocks import AQ, MB, PA, TA, TB

from .shadow import ASYNC, F_ATOMIC, F_PROXY, GENERIC, TMAP


def _at(rec) -> str:
    who = f"warp {rec.warp}" if rec.warp is not None else "an async unit"
    if rec.unit not in (None, "warp"):
        who = f"the {rec.unit.replace('_', ' ')} for warp {rec.warp}" if rec.warp is not None else \
            f"the {rec.unit.replace('_', ' ')}"
    return f"line {rec.line} (`{_short(rec.what)}` by {who})"


def _short(text: str) -> str:
    text = text.strip().rstrip(";")
    return text if len(text) <= 70 else text[:67] + "..."


class _Range:
    """:func:`where` of a conflict's unit range, worded on first use: most pairs the detector meets classify to no
    finding, and their words would be thrown away."""

    __slots__ = ("key", "lo", "hi", "_text")

    def __init__(self, key, lo, hi):
        self.key, self.lo, self.hi, self._text = key, lo, hi, None

    def __str__(self) -> str:
        if self._text is None:
            self._text = where(self.key, self.lo, self.hi)
        return self._text

    def __format__(self, spec) -> str:
        return format(str(self), spec)


class _Sides:
    """The two sides of a pair (:meth:`tcsim.race.hb.AccessRec.side`), built on first call (as :class:`_Range`)."""

    __slots__ = ("prev", "cur", "rng", "_sides")

    def __init__(self, prev, cur, rng):
        self.prev, self.cur, self.rng, self._sides = prev, cur, rng, None

    def __call__(self) -> tuple:
        if self._sides is None:
            self._sides = (self.prev.side(self.rng), self.cur.side(self.rng))
        return self._sides


def where(key, lo: int, hi: int, ctas=None) -> str:
    """The unit range [lo, hi] of shadow space ``key`` in words."""
    if key[0] == "tmem":
        l0, l1 = lo // 512, hi // 512
        c0, c1 = lo % 512, hi % 512
        if l0 != l1:
            c0, c1 = 0, 511
        return (f"TMEM lanes {l0}-{l1} columns {min(c0, c1)}-{max(c0, c1)} of cta "
                f"({','.join(map(str, key[1]))})")
    if key[0] == "smem":
        rank, off0 = lo >> 24, lo & 0xFFFFFF
        off1 = (hi & 0xFFFFFF) + 1
        return f"SMEM [0x{off0:x}, 0x{off1:x}) of cluster rank {rank} ({off1 - off0} bytes)"
    return f"global [0x{lo:x}, 0x{hi + 1:x}) ({hi + 1 - lo} bytes)"


def _race_edge(det, prev, cur) -> tuple[int, str, str]:
    """Class 21, or 16 when the later warp waited at a named barrier (after the earlier access) that the earlier
    warp took no part in (PTX ISA 9.1 §9.7.13.1: bar.sync orders only the threads that arrive at it)."""
    if prev.issuer is not None and cur.issuer is not None and prev.issuer[0] == cur.issuer[0] \
            and prev.issuer != cur.issuer:
        for one, other in ((cur, prev), (prev, cur)):
            ws = det.warps.get(one.issuer)
            for bar, gen, cycle, warps, _ in reversed(ws.bars if ws is not None else ()):
                if other.issuer[1] not in warps:
                    a, b = sorted((prev, cur), key=lambda r: r.line or 0)
                    return (16, f"warp {other.issuer[1]} does not take part in named barrier {bar} (warps "
                                f"{sorted(warps)} meet there), so that barrier does not order {_at(a)} and {_at(b)}",
                            f"make warp {other.issuer[1]} take part in barrier {bar} (bar.arrive/bar.sync {bar} with a "
                            f"thread count covering both warps) between its access and the other's, or use a "
                            f"barrier both warps take part in")
    return (21, f"no happens-before edge between {_at(prev)} and {_at(cur)}: no barrier, mbarrier arrive -> wait, "
                f"async-op completion wait or release/acquire pair orders them",
            f"order line {cur.line} after line {prev.line} with a barrier or mbarrier both sides take part in "
            f"(or make both accesses atomic)")


def classify(det, c, prev, cur, clock, flags, write, key):
    """The finding (or None) for the earlier access ``prev`` (conflict ``c``) met by ``cur``."""
    pproxy = c.flags & F_PROXY
    cproxy = flags & F_PROXY
    rng = _Range(key, c.lo, c.hi)
    sides = _Sides(prev, cur, rng)
    if key[0] == "tmem":
        return _tmem(det, c, prev, cur, clock, write, rng, sides)
    if c.kind == "w" and not write:
        if cproxy == ASYNC:
            if not c.known:
                if cur.op is not None and prev.cycle >= cur.op.issued:
                    return _source_overwritten(cur, prev, rng)
                k, missing, fix = _race_edge(det, prev, cur)
                return Finding(k, f"{cur.what} (async proxy) read {rng} written by {_at(prev)} with no "
                                  f"happens-before between them", sides(), missing=missing, fix=fix)
            if pproxy == GENERIC and not clock.knows(c.comp, c.val, PA):
                return Finding(8, f"{_at(cur)} reads {rng} through the async proxy; {_at(prev)} wrote it "
                                  f"through the generic proxy and no fence.proxy.async is ordered between the write "
                                  f"and the read's issue (PTX ISA §8.6, §9.7.13.4): the async proxy may read stale "
                                  f"data", sides(),
                               missing=f"fence.proxy.async.shared::cta between line {prev.line} "
                                       f"(`{_short(prev.what)}`) and line {cur.line} "
                                       f"(`{_short(cur.what)}` reading the same {c.n} bytes)",
                               fix=f"add fence.proxy.async.shared::cta after line {prev.line} in the writing "
                                   f"threads, before the barrier that hands the data to the issuing thread")
            if cur.unit == "tensor_pipe":
                return _unfenced_tcgen05_read(det, c, prev, cur, clock, rng, sides)
            return None
        if cproxy == TMAP:
            if pproxy != GENERIC:
                return None
            if not c.known:
                k, missing, fix = _race_edge(det, prev, cur)
                return Finding(k, f"the tensor map at {rng} used by {_at(cur)} was written by {_at(prev)} with no "
                                  f"happens-before between them", sides(), missing=missing, fix=fix)
            # cur.op: the clocks of the acquire fences on this map that happen-before the use
            if not any(tm.knows(c.comp, c.val) for tm in (cur.op or ())):
                return Finding(20, f"{_at(cur)} uses the tensor map at {rng} through the tensormap proxy; "
                                   f"{_at(prev)} wrote it through the generic proxy and no "
                                   f"fence.proxy.tensormap::generic.acquire orders the write before the use "
                                   f"(PTX ISA §9.7.13.4): the TMA unit may use a stale map", sides(),
                               missing=f"fence.proxy.tensormap::generic.acquire.gpu [map], 128 between line "
                                       f"{prev.line} and line {cur.line}",
                               fix=f"after line {prev.line}: fence.proxy.tensormap::generic.release (writer); before "
                                   f"line {cur.line}: fence.proxy.tensormap::generic.acquire.gpu [map], 128 (user)")
            return None
        # generic read of a write
        if c.known or ((c.flags & F_ATOMIC) and (flags & F_ATOMIC)):
            return None
        k, missing, fix = _race_edge(det, prev, cur)
        return Finding(k, f"data race: {_at(cur)} reads {rng} that {_at(prev)} wrote"
                          + (" through the async proxy" if pproxy == ASYNC else "")
                          + ", and neither is ordered before the other", sides(), missing=missing, fix=fix)
    if c.kind == "w":          # write after write
        if c.known or ((c.flags & F_ATOMIC) and (flags & F_ATOMIC)):
            return None
        k, missing, fix = _race_edge(det, prev, cur)
        # the same store instruction of an immediate value, executed by several warps (Triton initialises shared
        # words that way): a race by PTX ISA section 8.9, but every order leaves the same bytes -- a lint note
        same = k == 21 and prev.line == cur.line and cur.imm
        return Finding(k, f"data race: {_at(cur)} and {_at(prev)} both write {rng} with no happens-before "
                          f"between them" + (" (the same immediate value: every order leaves the same bytes)"
                                             if same else ""), sides(), missing=missing, fix=fix,
                       severity="lint" if same else "error")
    # a write after reads
    if pproxy == ASYNC:
        if c.known:
            return None
        if prev.proxy == "tensormap":
            k, missing, fix = _race_edge(det, prev, cur)
            return Finding(k, f"{_at(cur)} rewrites the tensor map at {rng} that {_at(prev)} may still read",
                           sides(), missing=missing, fix=fix)
        return _source_overwritten(prev, cur, rng)
    if cproxy == ASYNC:
        if not c.known:
            return Finding(2, f"{_at(cur)} overwrites {rng} through the async proxy while {_at(prev)} may still "
                              f"be reading it: the release of the stage is not ordered after that read", sides(),
                           missing=_release_missing(det, prev, cur),
                           fix=f"join the reading warps (warp {prev.warp} included) at a named barrier (bar.sync) "
                               f"after their last read (line {prev.line}) before the elected thread releases the "
                               f"stage, or have every reading warp arrive and count those arrivals in the barrier's "
                               f"init count")
        if clock.knows(c.comp, c.val, PA):
            return None
        if clock.knows(c.comp, c.val, MB):
            # Ordered through an mbarrier arrive -> wait (a pipeline's stage release) with no proxy fence: reported
            # when the read may still be in flight at the release (its value is used only after the arrive, the
            # DeepEP PR #642 combine); a stage consumed before it is released ships without the fence and works
            # (:meth:`tcsim.race.hb.HappensBefore.read_in_flight_at_release`).
            rel = det.read_in_flight_at_release(prev, c.val)
            if rel is None:
                return None
            return Finding(9, f"{_at(cur)} writes {rng} through the async proxy; {_at(prev)} read it through the "
                              f"generic proxy and released the stage at {_at(rel)} before any instruction used the "
                              f"loaded value, with no fence.proxy.async between: the mbarrier arrive -> wait orders "
                              f"the threads, not the proxies (PTX ISA §8.6), so the load may still be outstanding "
                              f"when the asynchronous write lands and read the new data", (sides()[0], rel.side(rng), sides()[1]),
                           missing=f"fence.proxy.async.shared::cta between line {prev.line} (`{_short(prev.what)}`) "
                                   f"and line {cur.line} (`{_short(cur.what)}`): in the reading threads before the "
                                   f"mbarrier arrive at line {rel.line}, or in the producer after its wait, before "
                                   f"line {cur.line}",
                           fix=f"add fence.proxy.async.shared::cta after line {prev.line}, before the release at line "
                               f"{rel.line} (or before line {cur.line}, after the producer's wait)")
        # Ordered only through bar.sync or a flag, it is an error.
        return Finding(9, f"{_at(cur)} writes {rng} through the async proxy; {_at(prev)} read it through the "
                          f"generic proxy, ordered before only by a generic-proxy synchronisation (a barrier or a "
                          f"flag) with no fence.proxy.async between (PTX ISA §8.6): the read may see the async "
                          f"write", sides(),
                       missing=f"fence.proxy.async.shared::cta between line {prev.line} (`{_short(prev.what)}`) and "
                               f"line {cur.line} (`{_short(cur.what)}`)",
                       fix=f"add fence.proxy.async.shared::cta before line {cur.line}, after the synchronisation "
                           f"that orders the reads (or in the reading threads before they release the stage)")
    if c.known:
        return None
    k, missing, fix = _race_edge(det, prev, cur)
    return Finding(k, f"data race: {_at(cur)} writes {rng} that {_at(prev)} read, and neither is ordered before the "
                      f"other", sides(), missing=missing, fix=fix)


def count_short(det, prev, cur, race: Finding) -> Finding | None:
    """Class 4 behind a data race (``race``, class 21): the writing side released its access with an mbarrier
    arrive that counted in a later phase than the one the other side's warp consumed, while the same arrive
    instruction of other warps made that phase -- the init count is lower than the threads that arrive per round
    (PTX ISA 9.1 §9.7.13.15.4: a phase completes when its pending arrival count reaches zero), so the phase completed
    without the writer's arrival and the wait does not order its access.  None when the race has another cause."""
    proto = getattr(getattr(det, "sim", None), "protocol", None)
    if proto is None:
        return None
    body = det.program.body

    def reaches(pc, line, limit=24):
        for ins in body[pc + 1:pc + 1 + limit]:
            if ins.loc is not None and ins.loc.line == line:
                return True
            if ins.opcode in ("bra", "ret", "exit", "brx", "call"):
                return False
        return False

    for writer, reader in ((prev, cur), (cur, prev)):
        hit = proto.count_short(writer, reader, reaches)
        if hit is None:
            continue
        rec, k, arr, made, wait, own = hit
        name = rec.name()
        others = sorted({a.warp for a in made if a.warp is not None})
        n = sum(bin(a.lanes).count("1") for a in made)
        late = (f"the arrive of {arr.short()} after {_at(writer)} counted in phase {arr_phase(rec, arr)}" if own else
                f"warp {writer.warp}'s arrive at line {arr.line}, which follows {_at(writer)}, had not come")
        return Finding(
            4, f"{race.message}: phase {k} of {name} ({rec.init_text()}) completed with the arrivals of warp"
               f"{'s' if len(others) != 1 else ''} {', '.join(map(str, others))} ({n} lanes) at line "
               f"{made[0].line}; {late}, so the wait at {wait.short()} that consumed phase {k} does not order "
               f"{_at(writer)} before {_at(reader)}",
            (rec.init.access(where=name), arr.access(where=name), writer.side(race.sides[0].where)),
            missing=f"an init count at line {rec.init.line} equal to the threads that arrive per phase (the arrive "
                    f"at line {arr.line} is executed by more threads than the count {rec.count}), so each phase "
                    f"waits for the arrivals of every thread whose accesses it releases",
            fix=f"initialise the barrier at line {rec.init.line} with the number of arriving threads per phase (or "
                f"arrive from one elected lane per warp and count the warps)",
            key=(4, "count-short", rec.init.line, arr.line))
    return None


def arr_phase(rec, act) -> str:
    for q, ph in rec.phases.items():
        if any(a is act for a, _, _ in ph.arrivals):
            return str(q)
    return "a later one"


def _source_overwritten(read, write, rng) -> Finding:
    """Class 5 (PTX ISA 9.1 §9.7.9.25.6.2 cp.async.bulk.wait_group.read; §9.7.16.10.9.1 / §9.7.16.12.1 an MMA's
    operands are read until its tcgen05.commit's mbarrier phase): ``write`` overwrites bytes the asynchronous
    ``read`` may still be reading -- the same finding whichever of the two the schedule performed first."""
    return Finding(5, f"{_at(write)} overwrites {rng} while the asynchronous read by {_at(read)} may still be in "
                      f"flight: its completion was not observed first, so the asynchronous operation may read either "
                      f"value", (read.side(rng), write.side(rng)),
                   missing=f"the completion of line {read.line} observed before line {write.line}: "
                           f"cp.async.bulk.wait_group.read for a bulk store's source, the mbarrier wait on the phase "
                           f"its tcgen05.commit arrives on for an MMA operand (a fence does not order it)",
                   fix=f"wait for the asynchronous read of line {read.line} to complete before line {write.line}")


def _release_missing(det, prev, cur) -> str:
    """Class 2's missing edge by its PTX instructions, naming the arrive that released the stage (PTX ISA 9.1
    §9.7.13.15.5 mbarrier.arrive has release semantics only for the arriving thread's own prior accesses, so
    the reading warp's reads must reach it through bar.sync, §9.7.13.1, or through an arrive of its own)."""
    w = prev.warp
    found = None
    proto = getattr(getattr(det, "sim", None), "protocol", None)
    if proto is not None and cur.issuer is not None:
        before = cur.op.issued if cur.op is not None and getattr(cur.op, "issued", None) is not None else cur.cycle
        found = proto.release_before(cur.issuer[0], cur.issuer[1], before, reader_warp=w)
    if found is not None:
        rec, wait, arrivals = found
        rel = arrivals[-1]
        return (f"bar.sync (or bar.arrive) of a named barrier that warp {w} and the releasing thread both take part "
                f"in, between the read at line {prev.line} and the {rel.opcode} at {rel.short()} that released the "
                f"stage to the producer's wait at line {wait.line}; or an mbarrier.arrive by warp {w} after line "
                f"{prev.line}, counted in the init count of {rec.name()} ({rec.init_text()})")
    return (f"bar.sync (or bar.arrive) of a named barrier that warp {w} takes part in, between the read at line "
            f"{prev.line} and the mbarrier.arrive that releases the stage; or an mbarrier.arrive by warp {w} after "
            f"line {prev.line} on the barrier the producer waits on before line {cur.line}")


def _tmem(det, c, prev, cur, clock, write, rng, sides):
    """TMEM pairs: class 6 (PTX ISA 9.1 §9.7.16.8.3 tcgen05.ld completes at tcgen05.wait::ld; an MMA's results
    are visible after its tcgen05.commit's mbarrier phase, §9.7.16.9.2), class 7 (§9.7.16.6: tcgen05 ops of
    different threads ordered through a thread synchronisation need tcgen05.fence::before_thread_sync on the
    producing side -- explicit, or implied by tcgen05.commit, §9.7.16.6.4.2 -- and ::after_thread_sync on the
    consuming side; checked in kernels that use ::after_thread_sync, :func:`fence_discipline`)."""
    if not c.known:
        if c.kind == "r" and write and cur.unit == "tensor_pipe" and prev.unit == "warp" and cur.op is not None \
                and prev.cycle >= cur.op.issued:
            return _ld_before_mma(cur, prev, rng)
        if c.kind == "w" and not write and prev.unit == "tensor_pipe":
            return _ld_before_mma(prev, cur, rng)
        if c.kind == "r" and write:
            if prev.unit == "warp":
                return Finding(6, f"{_at(cur)} {'frees' if 'dealloc' in cur.what else 'overwrites'} {rng} while "
                                  f"the tcgen05.ld of {_at(prev)} has not been waited for", sides(),
                               missing=f"tcgen05.wait::ld by the loading warp after line {prev.line}, ordered before "
                                       f"line {cur.line}",
                               fix=f"execute tcgen05.wait::ld after line {prev.line} (then "
                                   f"tcgen05.fence::before_thread_sync and the barrier) before line {cur.line}")
            return Finding(6, f"{_at(cur)} overwrites {rng} that {_at(prev)} reads, before that read's completion "
                              f"was observed", sides(),
                           missing=f"tcgen05.commit after line {prev.line} and a wait on its mbarrier phase before "
                                   f"line {cur.line}",
                           fix=f"wait for the tcgen05.commit covering line {prev.line} before line {cur.line}")
        if c.kind == "w" and prev.unit == "tcgen05" and prev.issuer == cur.issuer:
            return Finding(21, f"{_at(cur)} accesses {rng} that the tcgen05.st of {_at(prev)} may not have written "
                               f"yet", sides(), missing=f"tcgen05.wait::st after line {prev.line}, before line "
                                                      f"{cur.line}",
                           fix=f"tcgen05.wait::st before line {cur.line}")
        k, missing, fix = _race_edge(det, prev, cur)
        return Finding(k, f"{_at(cur)} and {_at(prev)} access {rng} with no happens-before between them", sides(),
                       missing=missing, fix=fix)
    if prev.issuer is None or cur.issuer is None or prev.issuer == cur.issuer:
        return None
    if clock.knows(c.comp, c.val, TA):
        return None
    missing = (f"tcgen05.fence::after_thread_sync by the consuming warp after the thread synchronisation, before "
               f"line {cur.line}")
    fix = f"add tcgen05.fence::after_thread_sync after the barrier / mbarrier wait, before line {cur.line}"
    if clock.knows(c.comp, c.val, TB):
        # the producer fenced explicitly (tcgen05.fence::before_thread_sync) and the consumer did not
        return Finding(7, f"{_at(cur)} is ordered after {_at(prev)} on {rng} only through a thread synchronisation "
                          f"without the tcgen05 fences around it: the tcgen05 operations may still be reordered "
                          f"across it", sides(), missing=missing, fix=fix)
    if prev.unit != "tensor_pipe" or not clock.knows(c.comp, c.val, MB):
        return None
    # tcgen05.mma -> tcgen05.commit (its implicit ::before_thread_sync) -> mbarrier wait -> this tcgen05 op: the
    # waits that carried the MMA's epoch here (row AQ: through an acquire wait; only MB: through .relaxed ones)
    return _commit_wait_unfenced(det, not clock.knows(c.comp, c.val, AQ), prev, cur, rng, sides, missing, fix,
                                 "reads the accumulator" if not write else "overwrites the cells")


def fence_discipline(program) -> bool:
    """Whether the kernel uses ``tcgen05.fence::after_thread_sync`` anywhere (PTX ISA 9.1 §9.7.16.11.1).

    The class-7 rule for a consumer's tcgen05 op (tcgen05.ld of an accumulator, tcgen05.mma / .cp of SMEM) that
    another thread's work (a tcgen05.mma tracked by tcgen05.commit, a TMA copy) reaches only through an mbarrier
    wait, with no ``tcgen05.fence::after_thread_sync`` between the wait and the op:

    * §9.7.16.6.1: tcgen05.mma / .cp / .shift / .ld / .st are asynchronous, "not inherently ordered" with the
      issuing thread's other operations.  §9.7.16.6.3: ::before_thread_sync / ::after_thread_sync "compose with
      execution ordering instructions" (mbarrier, barrier, morally strong ld/st/atom) to order tcgen05 ops across
      threads; an async tcgen05 op after ::after_thread_sync is ordered after the thread's prior
      execution-ordering operations.  The canonical cross-thread pattern (§9.7.16.6.4.4) is
      ``tcgen05.mma; tcgen05.commit.mbarrier::arrive::one [mbar]`` || ``mbarrier.try_wait.relaxed.cluster [mbar];
      tcgen05.fence::after_thread_sync; tcgen05.ld`` (the commit performs the producer's ::before_thread_sync,
      §9.7.16.6.4.2).  A ``.relaxed`` wait "does not provide any memory ordering semantics" (§9.7.13.15.16, mbarrier.try_wait), so
      there the fence is the only edge: its absence is an **error**.
    * §9.7.16.6.3 also says "the standard memory consistency model synchronization mechanisms also apply to the
      tcgen05 family": after a default (``.acquire``) wait the op is ordered by the acquire (an NVIDIA engineer on
      CUTLASS issue #2974: the fence is needed with the ``.relaxed`` try_wait of the ISA's examples).  CUTLASS C++,
      ThunderKittens (its educational_b200 levels fence after the TMEM-allocation barrier but not after the
      commit's wait), Triton and the CuTe DSL ship that way and run on B200.  In a kernel that does use
      ::after_thread_sync (it follows the §9.7.16.6.4 patterns) the missing fence after an acquire wait is a
      **lint note** (the canonical pattern has it); in a fence-free kernel nothing is reported.
    * An explicit ``tcgen05.fence::before_thread_sync`` on the producing side with no ::after_thread_sync on the
      consuming side stays an error whatever the wait (the fence pair of §9.7.16.6.3 is half present).

    The discipline check is static over the kernel's instructions, so it does not depend on the schedule."""
    for ins in program.body:
        fo = getattr(ins, "full_opcode", "") or ""
        if fo.startswith("tcgen05.fence") and "after_thread_sync" in fo:
            return True
    return False


def _commit_wait_unfenced(det, relaxed, prev, cur, rng, sides, missing, fix, what):
    """Class 7 (error after a .relaxed wait, lint note after an acquire wait in a kernel that uses
    ::after_thread_sync, else None) for ``cur`` ordered after ``prev`` only through an mbarrier wait with no
    tcgen05.fence::after_thread_sync after it: :func:`fence_discipline`."""
    if relaxed:
        return Finding(7, f"{_at(cur)} {what} {rng} that {_at(prev)} produced; it is ordered after it only through "
                          f"a .relaxed mbarrier wait, which orders no memory (PTX ISA §9.7.13.15.16, mbarrier.try_wait), with no "
                          f"tcgen05.fence::after_thread_sync after the wait (§9.7.16.6.4.4): the asynchronous tcgen05 "
                          f"operation may be performed before the wait", sides(), missing=missing, fix=fix)
    if not det.tcgen05_fenced:
        return None
    return Finding(7, f"{_at(cur)} {what} {rng} that {_at(prev)} produced, after an mbarrier wait with no "
                      f"tcgen05.fence::after_thread_sync between them, although this kernel uses that fence "
                      f"elsewhere: the PTX ISA's canonical pattern (§9.7.16.6.4.4) has the fence here; the wait's "
                      f"acquire orders the operation by the standard memory model (§9.7.16.6.3)", sides(),
                   missing=missing, fix=fix, severity="lint")


def _unfenced_tcgen05_read(det, c, prev, cur, clock, rng, sides):
    """Class 7 for SMEM an async tcgen05 op (tcgen05.mma / .cp) reads: ``prev`` wrote it from another thread (a TMA
    copy issued by a producer warp), the write reached the issuing warp through an mbarrier wait (``clock``: the
    op's issue clock; rows MB, TA) and no tcgen05.fence::after_thread_sync came between the wait and the issue
    (:func:`fence_discipline`): relaxed when no acquire wait carried the write's epoch to the issue (row AQ)."""
    if prev.issuer is None or cur.issuer is None or prev.issuer == cur.issuer:
        return None
    if clock.knows(c.comp, c.val, TA) or not clock.knows(c.comp, c.val, MB):
        return None
    missing = (f"tcgen05.fence::after_thread_sync by warp {cur.warp} after the mbarrier wait that ordered line "
               f"{prev.line} before it, before line {cur.line}")
    fix = f"add tcgen05.fence::after_thread_sync after the wait, before line {cur.line}"
    return _commit_wait_unfenced(det, not clock.knows(c.comp, c.val, AQ), prev, cur, rng, sides, missing, fix,
                                 "reads")


def _ld_before_mma(mma, ld, rng):
    """Class 6: a tcgen05.ld of cells an MMA writes, issued before the MMA's completion was observed (the same
    finding whichever of the two touched the cells first in this schedule)."""
    return Finding(6, f"{_at(ld)} reads {rng}, which {_at(mma)} writes, before the MMA's completion was observed: "
                      f"it returns whatever the tensor pipe has written by then", (mma.side(rng), ld.side(rng)),
                   missing=f"tcgen05.commit after line {mma.line} and an mbarrier wait on its phase (then "
                           f"tcgen05.fence::after_thread_sync) before line {ld.line}",
                   fix=f"tcgen05.commit.mbarrier::arrive::one after line {mma.line}; before line {ld.line}: "
                       f"mbarrier.try_wait.parity on that barrier, then tcgen05.fence::after_thread_sync")


def register_in_flight(ld, use, reg: str, write: bool) -> Finding:
    """Class 19: PTX ISA 9.1 §9.7.16.8.3 -- the destination registers of tcgen05.ld are undefined until
    tcgen05.wait::ld."""
    verb = "overwrites" if write else "reads"
    # a lint note: the PTX ISA leaves the value undefined, but ptxas orders the use after the load (register
    # scoreboard), which shipped Triton and CuTe DSL kernels rely on
    return Finding(19, f"{_at(use)} {verb} {reg}, a destination of the tcgen05.ld at {_at(ld)} that has not "
                       f"completed: its value is undefined until tcgen05.wait::ld", (ld.side(f"register {reg}"),
                                                                                    use.side(f"register {reg}")),
                   missing=f"tcgen05.wait::ld between line {ld.line} and line {use.line}",
                   fix=f"add tcgen05.wait::ld after line {ld.line}, before the first use of its registers "
                       f"(line {use.line})", severity="lint")


def wgmma_register_in_flight(mma, use, reg: str, write: bool, role: str) -> Finding:
    """Class 19: PTX ISA 9.1 §9.7.15.5.2 / §9.7.15.7.3 -- the accumulator and register-A operands of a
    wgmma.mma_async may be accessed only after a wgmma.wait_group that retires its wgmma-group."""
    verb = "overwrites" if write else "reads"
    return Finding(19, f"{_at(use)} {verb} {reg}, the {role} of the wgmma.mma_async at {_at(mma)}, before a "
                       f"wgmma.wait_group retired it: the MMA may still read or write it (undefined behaviour)",
                   (mma.side(f"register {reg}"), use.side(f"register {reg}")),
                   missing=f"wgmma.commit_group after line {mma.line} and wgmma.wait_group (N small enough to "
                           f"retire it) before line {use.line}",
                   fix=f"wait for the MMA of line {mma.line} (wgmma.wait_group) before line {use.line} touches {reg}")


def wgmma_unfenced(write, mma, reg: str, role: str) -> Finding:
    """Class 19: PTX ISA 9.1 §9.7.15.7.1 -- wgmma.fence must order a register access by the warpgroup before a
    wgmma.mma_async that uses the register as accumulator or A fragment."""
    return Finding(19, f"{_at(mma)} uses {reg} as its {role}, which {_at(write)} wrote with no wgmma.fence in "
                       f"between: the MMA's register access is not ordered after the write (undefined behaviour)",
                   (write.side(f"register {reg}"), mma.side(f"register {reg}")),
                   missing=f"wgmma.fence.sync.aligned between line {write.line} and line {mma.line}",
                   fix=f"issue wgmma.fence.sync.aligned after line {write.line}, before the wgmma.mma_async of line "
                       f"{mma.line}")


def shared_barrier_id(barrier, cta, gen, others, unordered, cur, cur_gen) -> Finding:
    """Class 16: PTX ISA 9.1 §9.7.13.1 (bar / barrier) -- a generation of a named barrier completes once its thread
    count has arrived, whichever threads they are; an id used by two groups of warps whose uses are not ordered
    lets one group's arrival complete the other's generation (both sides: the earlier generation's arrivals,
    ``others``, and the arrival ``cur`` not ordered after those of ``unordered``)."""
    members = sorted(r.warp for r in others)
    lines = sorted({r.line for r in others if r.line is not None})
    where_ = f"named barrier {barrier} of cta ({','.join(map(str, cta))})"
    arrivals = ", ".join(f"{_at(r)}" for r in others)
    return Finding(16, f"{where_} is shared by unrelated groups of warps: generation {gen} completed with warps "
                       f"{members} ({arrivals}), and {_at(cur)} arrives at the same id (generation {cur_gen}) with no "
                       f"happens-before from the arrival of warp{'s' if len(unordered) > 1 else ''} "
                       f"{', '.join(map(str, sorted(unordered)))}: a generation completes with whichever warps arrive "
                       f"first (§9.7.13.1), so in another schedule warp {cur.warp}'s arrival completes generation "
                       f"{gen} in place of one of its warps (the wrong partners meet, the other group's waiter is "
                       f"released early or waits for the next generation)",
                   tuple(r.side(where_) for r in others) + (cur.side(where_),),
                   # worded by the lines only (not by which warps met first): the same in every schedule
                   missing=f"a separate named barrier id for each group of warps that uses barrier {barrier} (lines "
                           f"{', '.join(map(str, sorted(set(lines) | {cur.line})))}), or a barrier both groups take "
                           f"part in between their uses of barrier {barrier}",
                   fix=f"give each group of warps that synchronises together its own named barrier id (bar.sync / "
                       f"bar.arrive {barrier} at line {cur.line} on another id than at line"
                       f"{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}), with the same thread count "
                       f"at every use of an id",
                   key=(16, "shared-id", barrier, tuple(sorted(set(lines) | {cur.line}))))


def init_not_visible(init, arrive, ordered: bool) -> Finding:
    """Class 10: PTX ISA 9.1 §9.7.13.4 fence.mbarrier_init / §9.7.13.3 barrier.cluster -- an mbarrier's init
    must be released to the cluster (fence.mbarrier_init.release.cluster, then barrier.cluster.arrive.release /
    wait.acquire) before another CTA arrives on it."""
    if ordered:
        missing = (f"fence.mbarrier_init.release.cluster after line {init.line} (the init is ordered before line "
                   f"{arrive.line}, but not released to the cluster)")
    else:
        missing = (f"fence.mbarrier_init.release.cluster after line {init.line}, then barrier.cluster.arrive.release "
                   f"+ barrier.cluster.wait.acquire in both CTAs before line {arrive.line}")
    return Finding(10, f"{_at(arrive)} in cta ({','.join(map(str, arrive.cta or ()))}) acts on the mbarrier that "
                       f"{_at(init)} initialised in cta ({','.join(map(str, init.cta or ()))}), but the init is not "
                       f"made visible to the remote CTA first", (init.side(), arrive.side()), missing=missing,
                   fix="fence.mbarrier_init.release.cluster after the inits, then barrier.cluster.arrive.release and "
                       "barrier.cluster.wait.acquire (all CTAs) before any remote arrive or multicast copy")


def exit_with_async_read(op, cta, exit_side=None) -> Finding:
    """Class 14: PTX ISA 9.1 §9.7.9.25.6.2 -- a bulk store's SMEM source must stay valid until
    cp.async.bulk.wait_group.read.  ``exit_side``: the exit / ret of the CTA's last exiting lanes."""
    from tcsim.findings import Access
    side = Access(what=op.what, loc=op.loc, cta=op.cta, warp=op.issuer[1] if op.issuer else None,
                  lanes=None if op.lane is None else f"lane {op.lane}", proxy="async", unit=op.unit,
                  cycle=float(op.issued))
    return Finding(14, f"{cta.label} exits"
                       + (f" (line {exit_side.line})" if exit_side is not None else "")
                       + f" while the bulk async operation issued at line "
                       f"{side.line} may still read its shared memory (its completion was never waited for)",
                   (side,) + ((exit_side,) if exit_side is not None else ()),
                   missing=f"cp.async.bulk.wait_group.read 0 after line {side.line}, before the exit",
                   fix="cp.async.bulk.wait_group.read 0 (or wait_group 0) before the issuing thread exits",
                   # the same bug as the bulk copy's own residency check (tcsim.semantics.bulk_copy): one finding
                   key=(14, "exit-before-source-read", side.line))


def exit_with_remote_access(rec, cta, last, exit_side=None) -> Finding:
    """Class 14: PTX ISA 9.1 §9.7.13.3 -- a CTA's shared memory is gone when it exits; peers' accesses to it
    must be ordered before the exit (a trailing barrier.cluster arrive/wait).  ``exit_side``: the exit / ret of
    the CTA's last exiting lanes (the later side)."""
    return Finding(14, f"{cta.label} exits"
                       + (f" (line {exit_side.line})" if exit_side is not None else "")
                       + f" while {_at(rec)} of cta ({','.join(map(str, rec.cta))}) accessed its "
                       f"shared memory without being ordered before the exit",
                   (rec.side(),) + ((exit_side,) if exit_side is not None else ()),
                   missing=f"barrier.cluster.arrive.release + barrier.cluster.wait.acquire in every CTA after line "
                           f"{rec.line}, before {cta.label} exits",
                   fix="end the kernel with barrier.cluster.arrive + barrier.cluster.wait in every CTA of the "
                       "cluster")


__all__ = ["classify", "where", "register_in_flight", "init_not_visible", "exit_with_async_read",
           "exit_with_remote_access"]


def grid_dependency_race(prior, ev, text, loc, addr: int, write: bool) -> Finding:
    """Class 20: PTX ISA 9.1 §9.7.13 griddepcontrol -- a dependent grid launched with programmatic stream
    serialization may run while its prerequisite grid still runs; only griddepcontrol.wait makes the
    prerequisite's memory operations performed and visible.  ``prior``: the prerequisite's access (an
    :class:`tcsim.findings.Access`), ``ev``: the dependent thread's access before its wait."""
    from tcsim.findings import Access, lanes_text
    cur = Access(what=text, loc=loc, cta=tuple(ev.cta), warp=ev.warp,
                 lanes=lanes_text(ev.lanes) if ev.lanes else None, proxy=ev.proxy, unit="warp",
                 where=f"global [0x{addr:x}, 0x{addr + int(ev.size):x})", cycle=float(ev.cycle))
    verb = "writes" if write else "reads"
    at = f"line {loc.line}" if loc is not None else "an instruction"
    pl = f"line {prior.loc.line}" if prior.loc is not None else "an access"
    return Finding(20, f"{at} (`{text}`) of the dependent grid {verb} global memory that the prerequisite grid "
                       f"accesses at {pl} (`{prior.what}`) before executing griddepcontrol.wait: with programmatic "
                       f"dependent launch the two grids may run at the same time, and the prerequisite's memory "
                       f"operations are visible only after griddepcontrol.wait", (prior, cur),
                   missing=f"griddepcontrol.wait before {at} in the dependent grid",
                   fix=f"execute griddepcontrol.wait (cudaGridDependencySynchronize()) before {at}")
