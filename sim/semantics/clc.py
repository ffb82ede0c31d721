"""Cluster launch control: clusterlaunchcontrol.try_cancel / clusterlaunchcontrol.query_cancel.

PTX ISA 9.1 §9.7.13.19 (clusterlaunchcontrol.try_cancel) and §9.7.13.20 (clusterlaunchcontrol.query_cancel),
sm_100+ (forms: :mod:`tcsim.isa.clc_forms`).  ``try_cancel`` asynchronously asks to cancel the launch of a cluster
of the grid that has not started running; its 16-byte opaque response lands in shared memory (of the executing CTA,
or with ``.multicast::cluster::all`` at the same CTA-relative offset of every CTA of the cluster) and each receiving
CTA's mbarrier at the offset of ``mbar`` gets a complete-tx of 16 bytes (the kernel does the arrive.expect_tx itself).
On success the response holds the ctaid of the first CTA of the cancelled cluster, which then never starts; no other
response names it.  ``query_cancel`` decodes a response held in a ``.b128`` register: ``is_canceled`` and
``get_first_ctaid`` (undefined by the PTX ISA when the request failed; tcsim gives 0).

Issue and completion halves (DESIGN principle 5): the issue half here checks the operands (16-byte aligned response,
live mbarrier, shared::cta addresses of the executing CTA) and submits the request to the CTA's async unit (the TMA
engine's queue, 16 bytes); the completion half decides the cancellation at its completion time -- the next cluster
of the launch order that has not started is cancelled (tcsim's scheduler starts clusters in launch order as resident
ones exit, :class:`tcsim.engine.Simulation`), and when every cluster has started the request fails -- then writes the
response(s) and signals the mbarrier(s).

The response encoding is opaque in the PTX ISA; tcsim's: bytes 0-11 the first ctaid (x, y, z as u32, zero on
failure), byte 12 bit 0 set when the cancellation succeeded.

Not supported / not detected: a try_cancel issued after the CTA observed a failed one (undefined behaviour by the
PTX ISA) is executed (it fails again) rather than reported.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.clc_forms import SECTION, QueryCancel, parse_clc
from tcsim.isa.errors import MemoryFault
from .. import memory as M
from ..agents.tma import TmaEngine
from ..ptxtypes import B128
from .bulk_copy import check_smem_range, live_mbarrier, new_op
from .registry import semantics

RESPONSE_BYTES = 16


def encode_response(first_ctaid) -> np.ndarray:
    """The 16 response bytes (module docstring): ``first_ctaid`` (x, y, z) of the cancelled cluster or None."""
    w = np.zeros(4, np.uint32)
    if first_ctaid is not None:
        w[:3] = first_ctaid
        w[3] = 1
    return w.view(np.uint8)


def _shared_offset(ctx, addr: int, space, what: str, lane: int) -> int:
    """The executing CTA's SMEM offset of a try_cancel address operand (shared::cta or generic)."""
    a = int(addr)
    if space is None:
        if not (M.SHARED_WINDOW <= a < M.SHARED_WINDOW + M.WINDOW_SIZE):
            raise MemoryFault(f"{what} = 0x{a:x} (lane {lane}) is not a generic address of shared memory",
                              expected=f"the generic address of the executing CTA's shared memory ({SECTION})")
        a -= M.SHARED_WINDOW
    elif a >> 32:
        raise MemoryFault(f"{what} = 0x{a:x} (lane {lane}) is not a .shared::cta address",
                          expected="a shared-state-space address (mov of a .shared symbol, cvta.to.shared)")
    rank, off = a >> M.SHARED_RANK_SHIFT, a & M.SHARED_OFFSET_MASK
    if rank != ctx.rank:
        raise MemoryFault(f"{what} = 0x{int(addr):x} (lane {lane}) is in the shared memory of cluster rank {rank}, "
                          f"not of the executing CTA (rank {ctx.rank})",
                          expected=f"an address in the executing CTA's shared::cta window ({SECTION}: the result "
                                   f"is undefined otherwise)")
    return int(off)


@semantics("clusterlaunchcontrol")
def decode_clc(ins, info):
    """PTX ISA §9.7.13.19-20 clusterlaunchcontrol (module docstring)."""
    form = parse_clc(ins, info)
    if isinstance(form, QueryCancel):
        return _query(form)
    what = ins.full_opcode

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        addr = ctx.address(form.addr)
        mbar = ctx.address(form.mbar)
        engine = TmaEngine.of(ctx)
        targets = list(ctx.cluster.ctas) if form.multicast else [ctx.cta]
        for lane in lanes:
            doff = _shared_offset(ctx, addr[lane], form.space, "try_cancel response [addr]", int(lane))
            moff = _shared_offset(ctx, mbar[lane], form.space, "try_cancel mbarrier [mbar]", int(lane))
            if doff % RESPONSE_BYTES:
                raise MemoryFault(f"try_cancel response [addr] at SMEM offset 0x{doff:x} (lane {int(lane)}) is not "
                                  f"16-byte aligned", expected=f"a naturally aligned 16-byte location ({SECTION})")
            for t in targets:
                check_smem_range(t, doff, RESPONSE_BYTES, "try_cancel response")
                live_mbarrier(t, moff, "try_cancel mbarrier [mbar]", int(lane))

            def read(engine=engine):
                # the completion half: the cancellation is decided when the request completes
                return encode_response(engine.sim.try_cancel_cluster())

            def write(data, engine=engine, targets=targets, doff=doff, moff=moff):
                for t in targets:
                    engine.write_smem(t, [doff], np.asarray(data, np.uint8).reshape(1, -1), who="try_cancel")
                for t in targets:
                    engine.complete_tx(t, moff, RESPONSE_BYTES, what)

            op = engine.submit(new_op(ctx, int(lane), "load", RESPONSE_BYTES, read, write))
            for t in targets:
                engine.aim(op, t, moff)

    return run


def _query(form: QueryCancel):
    def run(ctx):
        raw = np.ascontiguousarray(ctx.read(form.response, "b128")).view(B128)
        lo = raw["lo"].astype(np.uint64)
        hi = raw["hi"].astype(np.uint64)
        ok = ((hi >> np.uint64(32)) & np.uint64(1)) == 1
        if form.query == "is_canceled":
            ctx.write_pred(form.dests[0], ok)
            return
        comps = (lo & np.uint64(0xFFFFFFFF), lo >> np.uint64(32), hi & np.uint64(0xFFFFFFFF))
        for d, v in zip(form.dests, comps):
            if d is not None:
                ctx.write(d, "b32", np.where(ok, v, 0).astype(np.uint32))

    return run
