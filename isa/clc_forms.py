"""Forms of clusterlaunchcontrol (cluster launch control: cancelling clusters not yet launched), PTX ISA 9.1
§9.7.13.19 "clusterlaunchcontrol.try_cancel" and §9.7.13.20 "clusterlaunchcontrol.query_cancel" (sm_100+)::

    clusterlaunchcontrol.try_cancel.async{.space}.completion_mechanism{.multicast::cluster::all}.b128 [addr], [mbar];
        .space = { .shared::cta }    .completion_mechanism = { .mbarrier::complete_tx::bytes }
    clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 pred, response;
    clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {xdim, ydim, zdim, _}, response;
    clusterlaunchcontrol.query_cancel.get_first_ctaid::{x,y,z}.b32.b128 reg, response;

``addr`` (16-byte aligned, the 16-byte response) and ``mbar`` are shared::cta addresses with ``.shared::cta``, else
generic addresses (which must fall in the executing CTA's shared window); ``response`` is a ``.b128`` register.
``.multicast::cluster::all`` needs sm_100a/sm_101a (ptxas 13.0 rejects it on sm_100).
The execution is :mod:`tcsim.semantics.clc`.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .atomic_forms import arch_number
from .errors import VerifyError
from .forms import FormSpec, QualGroup

SECTION = "PTX ISA §9.7.13.19-20 (clusterlaunchcontrol)"
QUERIES = ("is_canceled", "get_first_ctaid", "get_first_ctaid::x", "get_first_ctaid::y", "get_first_ctaid::z")
SPECS = (FormSpec("clusterlaunchcontrol", SECTION, (), (
    QualGroup("operation", ("try_cancel", "query_cancel"), required=True),
    QualGroup("async", ("async",)),
    QualGroup("space", ("shared::cta",)),
    QualGroup("completion", ("mbarrier::complete_tx::bytes",)),
    QualGroup("multicast", ("multicast::cluster::all",)),
    QualGroup("query", QUERIES),
    QualGroup("vec", ("v4",)),
    QualGroup("dtype", ("pred", "b32")),
    QualGroup("type", ("b128",), required=True),
)),)


@dataclass(frozen=True)
class TryCancel:
    """A checked try_cancel: ``space`` 'shared::cta' or None (generic addresses)."""

    space: str | None
    multicast: bool
    addr: object
    mbar: object


@dataclass(frozen=True)
class QueryCancel:
    """A checked query_cancel: ``query`` 'is_canceled' or 'get_first_ctaid' with ``dims`` the destination per
    component (x, y, z; None: not written), ``dest`` the predicate for is_canceled."""

    query: str
    dests: tuple
    response: object


def _err(ins, msg, expected=None):
    raise VerifyError(f"{ins.full_opcode}: {msg}", ins.loc, expected=expected or f"a form of {SECTION}")


def parse_clc(ins: ir.Instruction, info=None):
    """A :class:`TryCancel` or :class:`QueryCancel` for a checked clusterlaunchcontrol instruction."""
    mods = list(ins.mods)
    if info is not None and info.arch and arch_number(info.arch) < 100:
        _err(ins, f"requires sm_100 or later (the kernel targets {info.arch})")
    if not mods or mods[0] not in ("try_cancel", "query_cancel"):
        _err(ins, "expected clusterlaunchcontrol.try_cancel or clusterlaunchcontrol.query_cancel")
    if mods[-1] != "b128":
        _err(ins, "the last qualifier must be .b128")
    body = mods[1:-1]
    ops = ins.operands
    if mods[0] == "try_cancel":
        space = None
        rest = list(body)
        if not rest or rest[0] != "async":
            _err(ins, ".async is mandatory", "clusterlaunchcontrol.try_cancel.async...")
        rest.pop(0)
        if rest and rest[0] == "shared::cta":
            space = rest.pop(0)
        if not rest or rest[0] != "mbarrier::complete_tx::bytes":
            _err(ins, "the completion mechanism .mbarrier::complete_tx::bytes is mandatory")
        rest.pop(0)
        multicast = False
        if rest and rest[0] == "multicast::cluster::all":
            multicast = True
            rest.pop(0)
            if info is not None and info.arch and not info.arch.endswith(("a", "f")):
                _err(ins, f".multicast::cluster::all needs an architecture-specific target (sm_100a); the kernel "
                          f"targets {info.arch}")
        if rest:
            _err(ins, f"unexpected qualifier(s) {'.' + '.'.join(rest)}")
        if len(ops) != 2 or not all(isinstance(o, ir.Address) and o.coords is None for o in ops):
            _err(ins, "expects two address operands [addr], [mbar]")
        return TryCancel(space, multicast, ops[0], ops[1])
    # query_cancel
    if len(ops) != 2:
        _err(ins, "expects a destination and the .b128 response")
    resp = ops[1]
    if not isinstance(resp, ir.Reg):
        _err(ins, "the response operand must be a .b128 register")
    if body == ["is_canceled", "pred"]:
        if not isinstance(ops[0], ir.Reg):
            _err(ins, "the destination of is_canceled must be a predicate register")
        return QueryCancel("is_canceled", (ops[0],), resp)
    if body == ["get_first_ctaid", "v4", "b32"]:
        if not isinstance(ops[0], ir.Vector) or len(ops[0].elems) != 4:
            _err(ins, "get_first_ctaid.v4 writes a vector of four .b32 registers {x, y, z, _}")
        dests = tuple(None if isinstance(e, ir.Sink) else e for e in ops[0].elems[:3])
        if not isinstance(ops[0].elems[3], (ir.Sink, ir.Reg)):
            _err(ins, "the fourth element of the get_first_ctaid.v4 destination must be a register or _")
        return QueryCancel("get_first_ctaid", dests, resp)
    if len(body) == 2 and body[0] in QUERIES[2:] and body[1] == "b32":
        if not isinstance(ops[0], ir.Reg):
            _err(ins, f"the destination of {body[0]} must be a .b32 register")
        k = "xyz".index(body[0][-1])
        return QueryCancel("get_first_ctaid", tuple(ops[0] if i == k else None for i in range(3)), resp)
    _err(ins, f"unexpected qualifiers .{'.'.join(body)}",
         "query_cancel.is_canceled.pred.b128, .get_first_ctaid.v4.b32.b128 or .get_first_ctaid::{x,y,z}.b32.b128")


__all__ = ["SECTION", "SPECS", "TryCancel", "QueryCancel", "parse_clc"]
