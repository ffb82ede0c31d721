"""Non-bulk asynchronous copies: cp.async, cp.async.commit_group, cp.async.wait_group, cp.async.wait_all,
cp.async.mbarrier.arrive.

PTX ISA 9.1 §9.7.9.25.3 (cp.async, sm_80+: §9.7.9.25.3.1 cp.async, .2 cp.async.commit_group, .3
cp.async.wait_group / wait_all) and §9.7.13.15.? (cp.async.mbarrier.arrive).  Triton emits these for
pipelined pointer loads (``tl.load`` in a loop with ``num_stages`` > 1) on sm_80 .. sm_100a.

Forms executed::

    cp.async.{ca|cg}.shared{::cta}.global{.L2::cache_hint}{.L2::64B|.L2::128B|.L2::256B}
                                             [dst], [src], cp-size{, src-size | , ignore-src}{, cache-policy}
    cp.async.commit_group
    cp.async.wait_group N
    cp.async.wait_all
    cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [mbar]

Decode-time rules: cp-size is an immediate 4, 8 or 16 (``.cg``: 16 only); a predicate fourth operand is
ignore-src, an integer one src-size; ``.L2::cache_hint`` requires the 64-bit cache-policy operand (read and
ignored), the prefetch-size qualifiers are hints.

Execution (issue half here, completion in :class:`tcsim.agents.async_copy.AsyncCopyUnit`): every executing lane
copies cp-size bytes to ``[dst]`` in the CTA's shared memory; the first ``src-size`` of them come from global
``[src]`` (all cp-size without a src-size; none with ignore-src true), the rest are zeros.  At issue: ``dst``
must be a .shared::cta address of this CTA, aligned to cp-size, inside SMEM; src-size must not exceed cp-size;
the ``src-size`` bytes read must lie inside one global allocation and ``src`` be aligned to cp-size (an
address whose lane reads nothing -- src-size 0 or ignore-src -- is not checked: Triton's masked-off lanes
carry such addresses).  Each problem is a MemoryFault naming the lane.  The bytes are read and written when
the op completes, so a consumer that does not wait sees stale SMEM.

Groups are per thread (``cta.cp_async_groups[(warp, lane)]``): cp.async ops join the thread's open group;
``commit_group`` closes it (an empty group is allowed); ``wait_group N`` blocks the lanes that have more than
N committed groups with ops in flight until only the N most recent may still be pending; ``wait_all`` commits
and waits for everything.  ``cp.async.mbarrier.arrive`` performs an arrive-on on the mbarrier when every
cp.async the thread issued before it has completed; without ``.noinc`` the pending count is first raised by
one at issue, so the net effect on the phase's count is nil (PTX); with ``.noinc`` the init count must
include these arrivals.

Not supported: nothing else exists in this family (the bulk forms are :mod:`tcsim.semantics.bulk_copy`).  The
forms are parsed and checked in :mod:`tcsim.isa.async_copy_forms`.
"""
from __future__ import annotations


import numpy as np
import simpy

from tcsim.isa.cache_policy_forms import check_policy_operand
from tcsim.isa.async_copy_forms import SECTION_CP_ASYNC as SECTION, parse_cp_async
from tcsim.isa.errors import MemoryFault, SyncError
from .. import memory as M
from ..agents.async_copy import AsyncCopyOp, AsyncCopyUnit
from ..async_groups import commit_run, wait_run
from ..mbarrier_state import MAX_COUNT
from .registry import semantics


@semantics("cp.async")
def decode_cp_async(ins, info):
    """PTX ISA §9.7.9.25.3 cp.async and its group / mbarrier completion forms."""
    f = parse_cp_async(ins, info)
    check_policy_operand(ins, getattr(f, 'policy', None), info)
    if f.kind == "commit_group":
        return commit_run("cp.async", "cp.async.commit_group")
    if f.kind in ("wait_group", "wait_all"):
        return _decode_wait(f.keep, wait_all=f.kind == "wait_all")
    if f.kind == "mbarrier_arrive":
        return _decode_mbarrier_arrive(ins, f)
    return _decode_copy(ins, f)


def _decode_copy(ins, f):
    """PTX ISA §9.7.9.25.3.1 cp.async (form: tcsim.isa.async_copy_forms)."""
    what = ins.full_opcode
    dst, src, cp_size, src_size, ignore, policy = f.dst, f.src, f.cp_size, f.src_size, f.ignore, f.policy

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        d = ctx.address(dst).astype(np.uint64)
        s = ctx.address(src).astype(np.uint64)
        if policy is not None:
            ctx.read(policy, "b64")
        if ignore is not None:
            nread = np.where(ctx.read_pred(ignore), 0, cp_size).astype(np.int64)
        elif src_size is not None:
            nread = ctx.read(src_size, "u32").astype(np.int64)
        else:
            nread = np.full(32, cp_size, dtype=np.int64)
        cta = ctx.cta
        offs = np.zeros(lanes.size, dtype=np.int64)
        for i, lane in enumerate(lanes):
            lane = int(lane)
            a = int(d[lane])
            rank, off = a >> M.SHARED_RANK_SHIFT, a & M.SHARED_OFFSET_MASK
            if a >> 32 or rank != cta.rank:
                raise MemoryFault(f"cp.async [dst] = 0x{a:x} (lane {lane}) is not a .shared::cta address of the "
                                  f"executing CTA", expected="an address in this CTA's shared memory (mov of a "
                                                             ".shared symbol, cvta.to.shared)")
            if off % cp_size:
                raise MemoryFault(f"cp.async [dst] = 0x{a:x} (lane {lane}) is not aligned to cp-size {cp_size}",
                                  expected=f"a {cp_size}-byte aligned destination ({SECTION})")
            offs[i] = off
            n = int(nread[lane])
            if n > cp_size:
                raise MemoryFault(f"cp.async src-size {n} (lane {lane}) exceeds cp-size {cp_size}",
                                  expected=f"src-size <= cp-size ({SECTION})")
            if n:
                sa = int(s[lane])
                if sa % cp_size:
                    raise MemoryFault(f"cp.async [src] = 0x{sa:x} (lane {lane}) is not aligned to cp-size "
                                      f"{cp_size}", expected=f"a {cp_size}-byte aligned source ({SECTION})")
                alloc = ctx.gmem.allocation_of(sa)
                if alloc is None or sa + n > alloc.end:
                    raise MemoryFault(f"cp.async [src] range [0x{sa:x}, +{n}) (lane {lane}) is not inside one "
                                      f"global allocation: {ctx.gmem.describe(sa)}",
                                      expected="a source inside a buffer passed to the kernel")
        cta.smem.check(offs, cp_size, "cp.async destination")
        srcs = s[lanes].copy()
        counts = nread[lanes].copy()
        unit = AsyncCopyUnit.of(ctx)

        def complete(unit=unit, cta=cta, offs=offs, srcs=srcs, counts=counts, lanes=lanes, pc=ctx.pc):
            rows = unit.read_global(srcs, cp_size, lanes=lanes, counts=counts)     # src-size bytes, zero-filled
            unit.write_smem(cta, offs, rows, who="cp.async", pc=pc, lanes=lanes)  # the generic proxy

        op = unit.submit(AsyncCopyOp(what, cp_size * lanes.size, complete, issuer=ctx.warp.label, loc=ctx.ins.loc,
                                     warp=ctx.warp.id, pc=ctx.pc))
        for lane in lanes:
            ctx.async_group_join("cp.async", lane, op)

    return run


def _decode_wait(keep: int, wait_all: bool = False):
    """PTX ISA §9.7.9.25.3.3 cp.async.wait_group N / wait_all: wait until at most N of the thread's most recent
    groups are pending (wait_all: commit, then wait for every group)."""
    name = "cp.async.wait_all" if wait_all else f"cp.async.wait_group {keep}"
    return wait_run("cp.async", keep, name, "cp.async instruction(s)", "cp.async.wait_group",
                    commit_first=wait_all, all=wait_all)


def _decode_mbarrier_arrive(ins, f):
    what = ins.full_opcode
    noinc, space, addr_op = f.noinc, f.space, f.addr
    from .mbarrier import describe, resolve_targets

    def run(ctx):
        """PTX ISA cp.async.mbarrier.arrive: arrive-on the mbarrier once the thread's prior cp.async complete."""
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        for lane, cta, off in resolve_targets(ctx, space, ctx.address(addr_op), lanes):
            if not ctx.is_local(cta):
                raise MemoryFault(f"{what}: the mbarrier (lane {lane}) is in {cta.label}, not the executing CTA",
                                  expected="an mbarrier in this CTA's shared memory")
            mb = cta.mbarrier(off)
            if not mb.valid:
                raise SyncError(f"{what} (lane {lane}) on SMEM offset 0x{off:x}, which holds no live mbarrier",
                                expected="mbarrier.init before use")
            if not noinc and mb.pending + 1 > MAX_COUNT:
                raise SyncError(f"{what}: pending count of {describe(mb, cta)} would exceed {MAX_COUNT}")
            prior = ctx.async_groups("cp.async", lane).pending_all()
            ctx.cp_async_mbarrier_arrive(cta, mb, lane, noinc=noinc, waits=len(prior))
            ctx.env.process(_arrive_later(ctx.async_port("lsu", ("warp", "op")), cta, mb, off, prior, what, lane,
                                          ins.loc))

    return run


def _arrive_later(port, cta, mb, off, prior, what, lane, loc):
    """The asynchronous arrive-on of ``cp.async.mbarrier.arrive``, once the thread's prior cp.async completed."""
    if prior:
        yield simpy.AllOf(port.env, prior)
    try:
        port.mbarrier_arrive(cta, mb, at=dict(mbarrier=off, lane=lane), asynchronous=True, phase_traced=False)
    except SyncError as e:
        e.message = f"{what} (lane {lane}, asynchronous arrive): {e.message}"
        port.sim.fail(e.with_context(loc=loc, where=f"{cta.label}, asynchronous arrive of lane {lane}"))
