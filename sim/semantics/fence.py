"""Memory fences: fence{.sem}.scope, fence.op_restrict (mbarrier_init), fence.proxy.*, membar.

PTX ISA 9.1 §9.7.13.4 (membar / fence) and the memory consistency model (§8).

tcsim executes every memory access in program order against one sequentially consistent memory, so fences
have no functional effect; a generic->async proxy fence (fence.proxy.async{.shared::cta|.shared::cluster},
fence.proxy.async::generic) does clear the marks :mod:`tcsim.proxy_fence` keeps of unfenced generic-proxy SMEM
writes that an async-proxy reader must not see.  They are not dropped: each executed fence emits a ``sync`` event
``op='fence'`` with fields ``fence`` (the fence kind: 'thread' for fence.sc / fence.acq_rel /
fence.acquire / fence.release; 'proxy' for fence.proxy.*; 'mbarrier_init' for fence.mbarrier_init; 'membar'
for membar), ``sem``, ``scope``, ``proxy`` (e.g. 'async', 'async.shared::cta', 'alias',
'tensormap::generic'), ``restrict`` (the ``.sync_restrict::`` space, if any) and ``lanes``, so the race
detector can order accesses by them.  (The field is ``fence``, not ``kind``: a ``kind=`` field collides with
the positional ``kind`` parameter of ``ObservationBus.emit``.)
``fence.proxy.tensormap::generic.acquire.scope [addr], 128`` also evaluates its address (reported as
``addr``) and checks the size operand is 128.

Accepted forms::

    fence{.sc|.acq_rel}.{cta|cluster|gpu|sys}          (default .acq_rel)
    fence.{acquire|release}.sync_restrict::shared::{cluster|cta}.cluster
    fence.mbarrier_init.release.cluster
    fence.proxy.{alias|async|async.global|async.shared::cta|async.shared::cluster}
    fence.proxy.tensormap::generic.release.{cta|cluster|gpu|sys}
    fence.proxy.tensormap::generic.acquire.{cta|cluster|gpu|sys} [addr], 128
    fence.proxy.async::generic.{acquire|release}.sync_restrict::shared::{cluster|cta}.cluster
    membar.{cta|gl|sys}      (membar.gl = fence.sc.gpu, membar.sys = fence.sc.sys, membar.cta = fence.sc.cta)
    membar.proxy.alias       (legacy spelling of fence.proxy.alias)

Anything else is rejected at load time with the offending qualifier named.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import UnsupportedError, VerifyError
from ..proxy_fence import fence_proxy_async
from .registry import semantics

SCOPES = ("cta", "cluster", "gpu", "sys")


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
        if fields["fence"] == "proxy":
            fence_proxy_async(ctx, fields["proxy"] if fields["proxy"] != "async::generic" else "async.shared::cta")
        ctx.emit_sync("fence", lanes=[int(x) for x in np.nonzero(ctx.mask)[0]], **fields, **extra)

    return run


@semantics("fence")
def decode_fence(ins, info):
    """PTX ISA 9.1 §9.7.13.4 fence (thread fences, fence.mbarrier_init, fence.proxy.*)."""
    mods = list(ins.mods)
    what = ins.full_opcode
    if not mods:
        raise VerifyError("fence needs a scope", expected="fence{.sem}.scope")
    if mods[0] == "proxy":
        return _decode_proxy(ins, mods[1:], what)
    if mods[0] in ("mbarrier_init",):
        if mods[1:] != ["release", "cluster"]:
            raise VerifyError(f"{what}: fence.mbarrier_init only exists as fence.mbarrier_init.release.cluster")
        if ins.operands:
            raise VerifyError(f"{what} takes no operands")
        return _emit_run(dict(fence="mbarrier_init", sem="release", scope="cluster", proxy=None, restrict=None))
    sem = "acq_rel"
    restrict = None
    rest = mods
    if rest and rest[0] in ("sc", "acq_rel", "acquire", "release"):
        sem = rest[0]
        rest = rest[1:]
    if rest and rest[0].startswith("sync_restrict::"):
        restrict = rest[0][len("sync_restrict::"):]
        rest = rest[1:]
    if len(rest) != 1 or rest[0] not in SCOPES:
        raise UnsupportedError(f"{what} is not a fence form tcsim knows",
                               expected="fence{.sc|.acq_rel}.{cta|cluster|gpu|sys}")
    scope = rest[0]
    if sem in ("acquire", "release"):
        want = "shared::cluster" if sem == "acquire" else "shared::cta"
        if restrict is None:
            raise VerifyError(f"{what}: fence.{sem} needs .sync_restrict::{want}")
        if restrict != want or scope != "cluster":
            raise VerifyError(f"{what}: fence.{sem} is only defined as fence.{sem}.sync_restrict::{want}.cluster")
    elif restrict is not None:
        raise VerifyError(f"{what}: .sync_restrict is only valid with .acquire / .release")
    if ins.operands:
        raise VerifyError(f"{what} takes no operands")
    return _emit_run(dict(fence="thread", sem=sem, scope=scope, proxy=None, restrict=restrict))


def _decode_proxy(ins, rest, what):
    """fence.proxy.{alias|async{.global|.shared::cta|.shared::cluster}}, fence.proxy.tensormap::generic.*,
    fence.proxy.async::generic.*"""
    if not rest:
        raise VerifyError(f"{what} needs a proxy kind")
    kind = rest[0]
    if kind in ("alias", "async"):
        proxy = kind
        tail = rest[1:]
        if kind == "async" and tail and tail[0] in ("global", "shared::cta", "shared::cluster", "shared"):
            proxy = "async." + ("shared::cta" if tail[0] == "shared" else tail[0])
            tail = tail[1:]
        if tail:
            raise UnsupportedError(f"{what}: qualifier .{tail[0]} is not supported",
                                   expected="fence.proxy.async{.global|.shared::cta|.shared::cluster} or "
                                            "fence.proxy.alias")
        if ins.operands:
            raise VerifyError(f"{what} takes no operands")
        return _emit_run(dict(fence="proxy", sem="acq_rel", scope=None, proxy=proxy, restrict=None))
    if kind in ("tensormap::generic", "async::generic"):
        tail = rest[1:]
        if not tail or tail[0] not in ("acquire", "release"):
            raise VerifyError(f"{what}: needs .acquire or .release")
        sem = tail[0]
        tail = tail[1:]
        restrict = None
        if tail and tail[0].startswith("sync_restrict::"):
            restrict = tail[0][len("sync_restrict::"):]
            tail = tail[1:]
        if len(tail) != 1 or tail[0] not in SCOPES:
            raise VerifyError(f"{what}: needs a scope .cta/.cluster/.gpu/.sys")
        scope = tail[0]
        if kind == "async::generic":
            want = "shared::cluster" if sem == "acquire" else "shared::cta"
            if restrict != want or scope != "cluster":
                raise VerifyError(f"{what}: fence.proxy.async::generic.{sem} is only defined as "
                                  f".sync_restrict::{want}.cluster")
        elif restrict is not None:
            raise VerifyError(f"{what}: .sync_restrict is not valid on fence.proxy.tensormap::generic")
        fields = dict(fence="proxy", sem=sem, scope=scope, proxy=kind, restrict=restrict)
        if kind == "tensormap::generic" and sem == "acquire":
            if len(ins.operands) != 2 or not isinstance(ins.operands[0], ir.Address):
                raise VerifyError(f"{what} takes [addr], size")
            size = ins.operands[1]
            if isinstance(size, ir.Imm) and size.value != 128:
                raise VerifyError(f"{what}: size operand {size} must be 128")
            return _emit_run(fields, ins.operands[0], size)
        if ins.operands:
            raise VerifyError(f"{what} takes no operands")
        return _emit_run(fields)
    raise UnsupportedError(f"{what}: proxy kind .{kind} is not supported",
                           expected="alias, async{.global,.shared::cta,.shared::cluster}, tensormap::generic, "
                                    "async::generic")


@semantics("membar")
def decode_membar(ins, info):
    """PTX ISA 9.1 §9.7.13.4 membar.{cta,gl,sys} (fence.sc at cta/gpu/sys scope) and membar.proxy.alias."""
    mods = list(ins.mods)
    if ins.operands:
        raise VerifyError(f"{ins.full_opcode} takes no operands")
    if mods == ["proxy", "alias"]:
        return _emit_run(dict(fence="proxy", sem="acq_rel", scope=None, proxy="alias", restrict=None))
    scope = {"cta": "cta", "gl": "gpu", "sys": "sys"}.get(mods[0]) if len(mods) == 1 else None
    if scope is None:
        raise UnsupportedError(f"{ins.full_opcode} is not supported", expected="membar.{cta|gl|sys}")
    return _emit_run(dict(fence="membar", sem="sc", scope=scope, proxy=None, restrict=None))
