"""Memory fences: fence{.sem}.scope, fence.op_restrict (mbarrier_init), fence.proxy.*, membar.

PTX ISA 9.1 §9.7.13.4 (membar / fence) and the memory consistency model (§8).

tcsim executes every memory access in program order against one sequentially consistent memory, so fences
have no functional effect; the race detector (:mod:`tcsim.race.hb`) orders accesses by them (a generic->async
proxy fence, fence.proxy.async{.shared::cta|.shared::cluster}, is what makes a generic-proxy SMEM write visible to
a later async-proxy read).  They are not dropped: each executed fence emits a ``sync`` event
``op='fence'`` with fields ``fence`` (the fence kind: 'thread' for fence.sc / fence.acq_rel /
fence.acquire / fence.release; 'proxy' for fence.proxy.*; 'mbarrier_init' for fence.mbarrier_init; 'membar'
for membar), ``sem``, ``scope``, ``proxy`` (e.g. 'async', 'async.shared::cta', 'alias',
'tensormap::generic'), ``restrict`` (the ``.sync_restrict::`` space, if any) and ``lanes``, so the race
detector can order accesses by them.  (The field is ``fence``, not ``kind``: every trace record already has a
``kind`` key, the event family, :class:`tcsim.observe.Event`.)
``fence.proxy.tensormap::generic.acquire.scope [addr], 128`` also evaluates its address (reported as
``addr``) and checks the size operand is 128.

The accepted forms are listed and parsed in :mod:`tcsim.isa.fence_forms`; anything else is rejected at load
time with the offending qualifier named.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.errors import VerifyError
from tcsim.isa.fence_forms import parse_fence, parse_membar
from .registry import semantics


def _emit_run(fields: dict, addr_op=None, size_op=None):
    def run(ctx):
        if not ctx.mask.any():
            return
        extra = {}
        if addr_op is not None:
            a = ctx.address(addr_op)
            extra["addr"] = [int(x) for x in a[ctx.mask]]
            if size_op is not None:
                size = ctx.read(size_op, "u32")[ctx.mask]
                if (size != 128).any():
                    raise VerifyError(f"fence.proxy.tensormap::generic.acquire size operand is {int(size[0])}",
                                      expected="128 (the size of a tensor map)")
        ctx.emit_sync("fence", lanes=[int(x) for x in np.nonzero(ctx.mask)[0]], **fields, **extra)

    return run


@semantics("fence")
def decode_fence(ins, info):
    """PTX ISA 9.1 §9.7.13.4 fence (thread fences, fence.mbarrier_init, fence.proxy.*); form:
    :mod:`tcsim.isa.fence_forms`."""
    f = parse_fence(ins)
    return _emit_run(f.event_fields(), f.addr, f.size)


@semantics("membar")
def decode_membar(ins, info):
    """PTX ISA 9.1 §9.7.13.4 membar.{cta,gl,sys} (fence.sc at cta/gpu/sys scope) and membar.proxy.alias."""
    return _emit_run(parse_membar(ins).event_fields())
