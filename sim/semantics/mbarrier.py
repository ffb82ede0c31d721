"""mbarrier: init, inval, arrive (+expect_tx, noComplete), arrive_drop, expect_tx, complete_tx, test_wait,
try_wait (token and parity forms), pending_count.

PTX ISA 9.1 §9.7.13.15 (mbarrier): §9.7.13.15.1 contents, §9.7.13.15.4 phase completion, §9.7.13.15.5
arrive-on, §9.7.13.15.6 expect-tx, §9.7.13.15.7 complete-tx, §9.7.13.15.9 init, §9.7.13.15.10 inval,
§9.7.13.15.11 expect_tx, §9.7.13.15.12 complete_tx, §9.7.13.15.13 arrive, §9.7.13.15.14 arrive_drop,
§9.7.13.15.16 test_wait/try_wait, §9.7.13.15.17 pending_count.  The object model (phase, pending, expected,
tx-count) lives in :mod:`tcsim.mbarrier_state`; this module decodes the instructions, resolves addresses and
applies the primitive operations per executing lane, in lane order, through the execution context's mbarrier
operations (``ctx.mbarrier_init`` / ``_inval`` / ``_arrive`` / ``_expect_tx`` / ``_complete_tx`` / ``_test`` /
``_block``), which change the object and report the event together.

Addressing.  ``.shared`` / ``.shared::cta`` take a 32-bit shared address of the executing CTA (its rank bits
must be the CTA's own, see :mod:`tcsim.memory`); ``.shared::cluster`` takes a cluster address whose rank bits
select the CTA (``mapa``); without a state space the address is generic and must fall in the shared window
(it may name another CTA of the cluster, e.g. ``mapa.u64``).  init, inval, test_wait, try_wait and
pending_count-producing arrives must target the executing CTA; a barrier in another CTA only accepts arrive /
arrive_drop without a result (sink ``_``), expect_tx and complete_tx.

The 64-bit state token (the ``state`` result of arrive / arrive_drop) is tcsim's own encoding (the hardware
one is opaque)::

    bits  0..19  pending arrival count *before* the arrive (for mbarrier.pending_count)
    bits 20..39  phase number (mod 2^20) the arrive belonged to
    bits 40..59  SMEM offset of the barrier / 8
    bits 60..63  tag 0xA (so a zero / garbage register is reported instead of silently accepted)

A token wait is complete when the barrier's current phase differs from the phase in the token (PTX only
allows the current or the immediately preceding phase to be queried).  A parity wait is complete when
``(phase & 1) != parity``, i.e. the phase with that parity has completed.

Protocol checks (:mod:`tcsim.race.protocol`, outcomes measured on an H100: tests/hw/golden_h100/protocol_outcomes.json).  The
lanes of one warp-instruction that arrive on one barrier arrive together: more arrivals than the phase has
pending is an over-arrival, a finding with outcome 'trap' at the arrive naming its root cause (class 17: the
instruction's lanes alone exceed the count; class 1: a stale wait let the barrier be re-armed early; class 12: two
producers announce bytes in one phase; class 4: the init count).  A parity wait satisfied by the phase the same
wait already consumed, or a phase overtaken between two tests, is class 1; a re-init of a live barrier and an
operation after ``mbarrier.inval`` are class 11 (the H100 re-initialises / acts on the old state, and so does
tcsim); an operation on a never-initialised barrier and an expect-tx past 2^20-1 trap; an operation on an exited
peer CTA's barrier is class 14 and goes on.

Blocking.  ``try_wait`` suspends the lanes whose phase has not completed until it completes (tcsim does not
model the hardware time limit after which try_wait returns false), then writes true; a kernel waiting on a
barrier nobody completes therefore ends in a DeadlockError naming the barrier, its phase and counts, and the root
cause its history shows (the expect-tx whose bytes never came, the init count against the arrivals).
``test_wait`` never blocks.  The optional suspend-time hint is read and ignored.

Memory ordering (``.release`` / ``.acquire`` / ``.relaxed`` with ``.cta`` / ``.cluster``) has no functional
effect in this sequentially consistent simulator; it is recorded on the ``sync`` events for the race
detector.  Every operation emits a ``sync`` event (``mbarrier.init``, ``mbarrier.inval``,
``mbarrier.arrive``, ``mbarrier.expect_tx``, ``mbarrier.complete_tx``, ``mbarrier.wait``) and a completed
phase additionally emits ``mbarrier.phase``.

Not supported (UnsupportedError at load): ``cp.async.mbarrier.arrive{.noinc}`` is not decoded here (it needs
the Ampere cp.async model); qualifiers not listed in the PTX syntax are rejected by name.  The qualifiers and
operands are parsed and checked in :mod:`tcsim.isa.mbarrier_forms`.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import MemoryFault, SyncError
from tcsim.isa.mbarrier_forms import MbarrierForm, check_mbarrier_operand_types, parse_mbarrier
from .. import memory as M
from ..findings import Finding
from ..mbarrier_state import MAX_COUNT
from ..race.protocol import warp_act
from .registry import semantics

# --------------------------------------------------------------------------------------- state token
_TOKEN_TAG = 0xA
_F20 = (1 << 20) - 1


def encode_token(phase: int, offset: int, pending_before: int) -> int:
    """The opaque 64-bit ``state`` value tcsim returns from arrive (see module docstring)."""
    return ((_TOKEN_TAG << 60) | (((offset >> 3) & _F20) << 40) | ((phase & _F20) << 20)
            | (pending_before & _F20))


def decode_token(token: int) -> tuple[int, int, int]:
    """(phase mod 2^20, SMEM offset, pending count before the arrive); SyncError for a non-token value."""
    token = int(token)
    if (token >> 60) != _TOKEN_TAG:
        raise SyncError(f"mbarrier state operand 0x{token:016x} is not a state token returned by "
                        f"mbarrier.arrive / arrive_drop",
                        expected="the state result of a prior arrive on the same mbarrier")
    return (token >> 20) & _F20, ((token >> 40) & _F20) << 3, token & _F20


# --------------------------------------------------------------------------------------- addressing
def resolve_targets(ctx, space: str, addrs: np.ndarray, lanes: np.ndarray) -> list:
    """Per executing lane (in lane order): ``(lane, cta, smem_offset)`` of the mbarrier it addresses.

    ``space`` is 'shared::cta', 'shared::cluster' or 'generic'."""
    a = np.asarray(addrs, dtype=np.uint64)[lanes]
    if space == "generic":
        lo, hi = np.uint64(M.SHARED_WINDOW), np.uint64(M.SHARED_WINDOW + M.WINDOW_SIZE)
        bad = (a < lo) | (a >= hi)
        if bad.any():
            i = int(np.nonzero(bad)[0][0])
            raise MemoryFault(f"generic address 0x{int(a[i]):x} (lane {int(lanes[i])}) of an mbarrier operation "
                              f"is not in the shared-memory window",
                              expected="the generic address of an mbarrier object in shared memory")
        a = a - lo
    ranks, offs = M.split_shared(a)
    out = []
    for lane, r, off, raw in zip(lanes, ranks, offs, a):
        r = int(r)
        if space == "shared::cta" and r != ctx.rank:
            raise MemoryFault(f".shared::cta mbarrier address 0x{int(raw):x} (lane {int(lane)}) belongs to "
                              f"cluster rank {r}, not to the executing CTA (rank {ctx.rank})",
                              expected="a .shared::cluster address (mapa) for another CTA's mbarrier")
        cta = ctx.cluster.cta_by_rank(r)
        if not ctx.is_local(cta) and cta.exited:
            # an H100 performs a remote arrive on an exited peer's barrier without an error (probe
            # remote_arrive_after_exit, tests/hw/golden_h100/protocol_outcomes.json): a class-14 finding, and the operation goes on
            ctx.report(Finding(
                14, f"mbarrier operation on the shared memory of {cta.label}, which has already exited (its shared "
                    f"memory may already belong to the next CTA on that SM)",
                (ctx.side(where=f"mbarrier@0x{int(off):x} of {cta.label}", mask=_one(lane)),),
                missing=f"a cluster barrier (barrier.cluster.arrive + wait) before {cta.label} exits, after the "
                        f"operation at line {ctx.ins.loc.line}",
                fix="end the kernel with barrier.cluster.arrive.release + barrier.cluster.wait.acquire so no CTA "
                    "exits while its peers still use its shared memory",
                key=(14, "exited-peer-mbarrier", ctx.ins.loc.line)))
        out.append((int(lane), cta, int(off)))
    return out


def _one(lane) -> np.ndarray:
    m = np.zeros(32, dtype=bool)
    m[int(lane)] = True
    return m


def describe(mb, cta) -> str:
    """'mbarrier@0x10 of CTA (0,0,0): phase 0 (parity 0), 1/1 arrivals pending, tx-count 4096'."""
    if not mb.valid:
        return f"mbarrier@0x{mb.offset:x} of {cta.label} (not initialised / invalidated)"
    return (f"mbarrier@0x{mb.offset:x} of {cta.label}: phase {mb.phase} (parity {mb.phase & 1}), "
            f"{mb.pending}/{mb.expected} arrivals pending, tx-count {mb.tx}")


# --------------------------------------------------------------------------------------- decode helpers
def _space(f: MbarrierForm) -> str:
    if f.space in ("shared", "shared::cta"):
        return "shared::cta"
    if f.space == "shared::cluster":
        return "shared::cluster"
    return "generic"


def _read_u32(ctx, op) -> np.ndarray:
    return ctx.read(op, "u32").astype(np.int64)


def _range_check(value: int, lo: int, hi: int, what: str, lane: int) -> int:
    if not lo <= value <= hi:
        raise SyncError(f"{what} {value} (lane {lane}) is out of range", expected=f"a value in [{lo}, {hi}]")
    return value


def _live(cta, off: int, what: str, ctx=None, lane: int | None = None):
    """The initialised mbarrier at ``off`` of ``cta`` (SyncError if none; an invalidated one is a class-11 finding
    naming its init and inval lines, :meth:`tcsim.race.protocol.Protocol.dead_barrier`)."""
    try:
        mb = cta.mbarrier(off, create=False)
    except SyncError:
        if ctx is not None:      # never initialised: the H100 traps at the instruction (probe arrive_uninitialised)
            ctx.engine.protocol.uninitialised(warp_act(ctx, lane), cta, off, what)
        raise
    if not mb.valid:
        if ctx is not None and ctx.engine.protocol.dead_barrier(warp_act(ctx, lane), cta, mb, what) is not None:
            ctx.mbarrier_revive(cta, mb, lane)
            return mb
        raise SyncError(f"{what} on SMEM offset 0x{off:x} of {cta.label}, which holds no live mbarrier "
                        f"(it was invalidated)", expected="mbarrier.init before any other mbarrier operation")
    return mb


# --------------------------------------------------------------------------------------- decoder
@semantics("mbarrier")
def decode_mbarrier(ins, info):
    """PTX ISA 9.1 §9.7.13.15 mbarrier (init §.9, inval §.10, expect_tx §.11, complete_tx §.12, arrive §.13,
    arrive_drop §.14, test_wait/try_wait §.16, pending_count §.17)."""
    f = parse_mbarrier(ins)
    check_mbarrier_operand_types(ins, info, f)
    ops = ins.operands
    builder = {"init": _dec_init, "inval": _dec_inval, "arrive": _dec_arrive, "arrive_drop": _dec_arrive,
               "expect_tx": _dec_tx, "complete_tx": _dec_tx, "test_wait": _dec_wait, "try_wait": _dec_wait,
               "pending_count": _dec_pending}[f.op]
    return builder(f, ops, ins)


def _dec_init(f, ops, ins):
    """§9.7.13.15.9 mbarrier.init{.shared{::cta}}.b64 [addr], count."""
    addr, cnt_op = f.addr, f.count
    space = _space(f)

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        counts = _read_u32(ctx, cnt_op)
        done = {}
        for lane, cta, off in resolve_targets(ctx, space, ctx.address(addr), lanes):
            if not ctx.is_local(cta):
                raise SyncError(f"mbarrier.init on an mbarrier of {cta.label}; init must be executed by the "
                                f"barrier's own CTA", expected="a .shared::cta address of the executing CTA")
            count = _range_check(int(counts[lane]), 1, MAX_COUNT, "mbarrier.init count", lane)
            mb = cta.mbarrier(off, create=True)
            if off in done:
                # several lanes of one warp-instruction initialising the same barrier identically: one init
                if done[off] != count:
                    raise SyncError(f"lanes {done[off]} and {lane} initialise mbarrier@0x{off:x} with different "
                                    f"counts in the same instruction")
                continue
            # a live barrier re-initialised without mbarrier.inval: a class-11 finding (Protocol.on_init, through
            # the door); the GPU re-initialises it, and so does tcsim
            ctx.mbarrier_init(cta, mb, count, lane)
            done[off] = count

    return run


def _dec_inval(f, ops, ins):
    """§9.7.13.15.10 mbarrier.inval{.shared{::cta}}.b64 [addr]."""
    addr = f.addr
    space = _space(f)

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        for lane, cta, off in resolve_targets(ctx, space, ctx.address(addr), lanes):
            if not ctx.is_local(cta):
                raise SyncError(f"mbarrier.inval on an mbarrier of {cta.label}; inval must be executed by the "
                                f"barrier's own CTA")
            mb = cta.mbarrier(off, create=False)
            if not mb.valid:
                raise SyncError(f"mbarrier.inval on mbarrier@0x{off:x} of {cta.label}, which is not live",
                                expected="mbarrier.init before mbarrier.inval")
            ctx.mbarrier_inval(cta, mb, lane)

    return run


def _dec_arrive(f, ops, ins):
    """§9.7.13.15.13 mbarrier.arrive{.expect_tx|.noComplete}{.sem.scope}{.space}.b64 state|_, [addr]{, count|tx}
    and §9.7.13.15.14 mbarrier.arrive_drop (same forms; the count is also removed from the expected count)."""
    drop = f.op == "arrive_drop"
    what = f"mbarrier.{f.op}"
    dst, addr, extra = f.dst, f.addr, f.count
    space = _space(f)
    sink = isinstance(dst, ir.Sink)

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        vals = _read_u32(ctx, extra) if extra is not None else None
        tokens = np.zeros(32, dtype=np.uint64)
        targets = []
        for lane, cta, off in resolve_targets(ctx, space, ctx.address(addr), lanes):
            if not ctx.is_local(cta) and not sink:
                raise SyncError(f"{what} on the mbarrier@0x{off:x} of {cta.label} (another CTA) cannot return "
                                f"a state", expected="the sink _ as destination for a remote arrive")
            mb = _live(cta, off, what, ctx, lane)
            tx = 0
            count = 1
            if f.expect_tx:
                # past the tx-count limit: the H100 traps at the instruction (probe expect_tx_over_limit)
                ctx.engine.protocol.check_expect(warp_act(ctx, lane), cta, mb, int(vals[lane]))
                tx = _range_check(int(vals[lane]), 0, MAX_COUNT, "txCount", lane)
            elif vals is not None:
                count = _range_check(int(vals[lane]), 1, MAX_COUNT, "arrive count", lane)
            targets.append((lane, cta, off, mb, tx, count))
        # The lanes of one warp-instruction arriving on one barrier arrive together: more than the phase has pending
        # is an over-arrival, which the H100 ends with an error at this arrive (tcsim.race.protocol names its cause).
        together = {}
        for lane, cta, off, mb, tx, count in targets:
            g = together.setdefault((id(cta), off), [cta, mb, 0, 0, 0])
            g[2] |= 1 << lane
            g[3] += count
            g[4] += tx
        for cta, mb, lmask, total, txs in together.values():
            ctx.engine.protocol.check_arrive(warp_act(ctx, mask=lmask), cta, mb, total, tx=txs,
                                             lanes_of_instruction=bin(lmask).count("1"))
        for lane, cta, off, mb, tx, count in targets:
            pending_before = mb.pending
            if tx:
                ctx.engine.protocol.check_expect(warp_act(ctx, lane), cta, mb, tx)
                ctx.mbarrier_expect_tx(cta, mb, tx, lane, sem=f.sem, scope=f.scope)
            try:
                phase = ctx.mbarrier_arrive(cta, mb, count, lane, drop=drop, no_complete=f.no_complete, sem=f.sem,
                                            scope=f.scope, remote=not ctx.is_local(cta), tx=tx)
            except SyncError as e:
                raise SyncError(f"{what}: {e.message} [{describe(mb, cta)}]", expected=e.expected) from None
            tokens[lane] = encode_token(phase, off, pending_before)
        if not sink:
            ctx.write(dst, "b64", tokens)

    return run


def _dec_tx(f, ops, ins):
    """§9.7.13.15.11 mbarrier.expect_tx / §9.7.13.15.12 mbarrier.complete_tx{.relaxed.scope}{.space}.b64
    [addr], txCount."""
    what = f"mbarrier.{f.op}"
    addr, tx_op = f.addr, f.count
    space = _space(f)
    complete = f.op == "complete_tx"

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        txs = _read_u32(ctx, tx_op)
        for lane, cta, off in resolve_targets(ctx, space, ctx.address(addr), lanes):
            mb = _live(cta, off, what, ctx, lane)
            if not complete:        # past the tx-count limit: the H100 traps here (probe expect_tx_over_limit)
                ctx.engine.protocol.check_expect(warp_act(ctx, lane), cta, mb, int(txs[lane]))
            tx = _range_check(int(txs[lane]), 0, MAX_COUNT, "txCount", lane)
            change = ctx.mbarrier_complete_tx if complete else ctx.mbarrier_expect_tx
            change(cta, mb, tx, lane, sem=f.sem, scope=f.scope, remote=not ctx.is_local(cta))

    return run


def _dec_wait(f, ops, ins):
    """§9.7.13.15.16 mbarrier.test_wait{.parity} / mbarrier.try_wait{.parity}{.sem.scope}{.shared{::cta}}.b64
    waitComplete, [addr], state|phaseParity{, suspendTimeHint}."""
    what = f.name
    blocking = f.op == "try_wait"
    dst, addr, arg, hint = f.dst, f.addr, f.arg, f.hint
    space = _space(f)
    form = f"{f.op}{'.parity' if f.parity else ''}"

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        argv = ctx.read(arg, "u32" if f.parity else "b64")
        if hint is not None:
            ctx.read(hint, "u32")
        result = np.zeros(32, dtype=bool)
        groups = {}
        checked = {}
        for lane, cta, off in resolve_targets(ctx, space, ctx.address(addr), lanes):
            if not ctx.is_local(cta):
                raise SyncError(f"{what} on the mbarrier@0x{off:x} of {cta.label}; waits must be executed by the "
                                f"barrier's own CTA", expected="a .shared::cta address of the executing CTA")
            mb = _live(cta, off, what, ctx, lane)
            if f.parity:
                key_arg = int(argv[lane]) & 1
            else:
                tphase, toff, _ = decode_token(int(argv[lane]))
                if toff != off:
                    raise SyncError(f"{what}: the state token (lane {lane}) came from the mbarrier at offset "
                                    f"0x{toff:x}, not from mbarrier@0x{off:x}",
                                    expected="the state returned by an arrive on the same mbarrier")
                key_arg = tphase
            done = ctx.mbarrier_test(cta, mb, lane, form=form, arg=key_arg, parity=f.parity, sem=f.sem,
                                     scope=f.scope)
            result[lane] = done
            seen = checked.setdefault(off, (mb, cta, [], []))
            seen[2 if done else 3].append(int(lane))
            if not done and blocking:
                groups.setdefault((off, key_arg), (mb, cta, []))[2].append(lane)
        for off, (mb, cta, passed, waiting) in checked.items():
            # per waiter (warp, lane): the phase it consumed; a stale or overtaken parity wait is class 1
            ctx.engine.protocol.on_wait(lambda m: warp_act(ctx, mask=m), cta, mb, passed, waiting,
                                        (int(argv[passed[0] if passed else waiting[0]]) & 1) if f.parity else None,
                                        ctx.warp.id)
        done_lanes = ctx.mask.copy()
        for (off, karg), (mb, cta, glanes) in groups.items():
            m = np.zeros(32, dtype=bool)
            m[glanes] = True
            done_lanes &= ~m
            ctx.mbarrier_block(m, mb, _reason(form, karg, mb, cta, f.parity),
                               on_release=_releaser(ctx, dst, m, mb, cta, f))
        ctx.write_pred(dst, result, mask=done_lanes)

    return run


def _reason(form, arg, mb, cta, parity):
    label = f"parity={arg}" if parity else f"token phase={arg}"

    def reason():
        return f"mbarrier.{form}({label}) on {describe(mb, cta)}"

    return reason


def _releaser(ctx, dst, mask, mb, cta, f):
    act = warp_act(ctx, mask=sum(1 << int(i) for i in np.nonzero(mask)[0]))

    def on_release(value):
        ctx.engine.protocol.on_release(cta, mb, ctx.warp.id, act.lanes, act)
        ctx.write_pred(dst, True, mask=mask)
        ctx.emit_sync("mbarrier.wait", target_cta=cta.ctaid, mbarrier=mb.offset, lane=int(np.argmax(mask)),
                      form=f.op + (".parity" if f.parity else ""), done=True, resumed=True, sem=f.sem,
                      scope=f.scope)

    return on_release


def _dec_pending(f, ops, ins):
    """§9.7.13.15.17 mbarrier.pending_count.b64 count, state: the pending count before the .noComplete
    arrive that produced ``state``."""
    dst, src = f.dst, f.src

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        st = ctx.read(src, "b64")
        out = np.zeros(32, dtype=np.uint32)
        for lane in lanes:
            _, _, pend = decode_token(int(st[lane]))
            out[lane] = pend
        ctx.write(dst, "u32", out)

    return run
