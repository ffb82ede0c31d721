"""Forms of the barriers: bar / barrier {.cta} sync, arrive, red; bar.warp.sync; barrier.cluster arrive / wait.

PTX ISA 9.1 §9.7.13.1 (bar, barrier), §9.7.13.2 (bar.warp.sync), §9.7.13.3 (barrier.cluster)::

    bar{.cta}.{sync|arrive} a{, b}              barrier{.cta}.{sync|arrive}{.aligned} a{, b}
    bar{.cta}.red.popc.u32 d, a{, b}, {!}c      barrier{.cta}.red.{and|or}.pred{.aligned} p, a{, b}, {!}c
    bar.warp.sync membermask
    barrier.cluster.arrive{.release|.relaxed}{.aligned}      barrier.cluster.wait{.acquire}{.aligned}

Checked here: qualifiers, operand counts, immediate barrier numbers 0..15 and thread counts (positive multiples of
32).  Register values are checked when the instruction runs (``tcsim.semantics.barrier`` / ``cluster_barrier``).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup

WARP = 32
NUM_BARRIERS = 16
BAR_QUALIFIERS = ("cta", "sync", "arrive", "red", "aligned", "popc", "and", "or", "u32", "pred")

_BAR_GROUPS = (QualGroup("cta", ("cta",)), QualGroup("op", ("sync", "arrive", "red"), required=True),
               QualGroup("redop", ("popc", "and", "or")), QualGroup("type", ("u32", "pred")))
SPECS = (FormSpec("bar", "PTX ISA §9.7.13.1-2", (), (QualGroup("warp", ("warp",)),) + _BAR_GROUPS),
         FormSpec("barrier", "PTX ISA §9.7.13.1", (), _BAR_GROUPS + (QualGroup("aligned", ("aligned",)),)),
         FormSpec("barrier.cluster", "PTX ISA §9.7.13.3", ("cluster",),
                  (QualGroup("op", ("arrive", "wait"), required=True),
                   QualGroup("sem", ("release", "relaxed", "acquire")), QualGroup("aligned", ("aligned",)))))


@dataclass(frozen=True)
class BarForm:
    """A checked bar / barrier.  ``op``: 'sync', 'arrive', 'red' or 'warp_sync'; ``aligned`` (bar is always
    aligned); operands ``a`` (barrier number, or bar.warp.sync's membermask), ``b`` (thread count or None),
    and for red the destination ``dst``, the predicate ``c`` and the reduction ``rop``."""

    op: str
    aligned: bool
    a: object
    b: object = None
    dst: object = None
    c: object = None
    rop: str | None = None


def _check_count_imm(ins, op, what):
    if isinstance(op, ir.Imm):
        if op.kind != "int" or op.value <= 0 or op.value % WARP:
            raise VerifyError(f"{what}: thread count {op} must be a positive multiple of the warp size (32)",
                              ins.loc)
    elif not isinstance(op, ir.Reg):
        raise VerifyError(f"{what}: thread count must be a .u32 register or immediate, got {op}", ins.loc)


def _check_id_imm(ins, op, what):
    if isinstance(op, ir.Imm):
        if op.kind != "int" or not 0 <= op.value < NUM_BARRIERS:
            raise VerifyError(f"{what}: barrier {op} out of range", ins.loc, expected="a barrier number 0..15")
    elif not isinstance(op, ir.Reg):
        raise VerifyError(f"{what}: barrier number must be a .u32 register or immediate, got {op}", ins.loc)


def parse_bar(ins: ir.Instruction) -> BarForm:
    """The checked form of a ``bar`` / ``barrier`` (not ``barrier.cluster``) instruction (module docstring)."""
    mods = list(ins.mods)
    if ins.opcode == "bar" and mods[:2] == ["warp", "sync"]:
        if len(ins.mods) != 2:
            raise UnsupportedError(f"{ins.full_opcode} is not supported", ins.loc, expected="bar.warp.sync membermask")
        if len(ins.operands) != 1:
            raise VerifyError("bar.warp.sync takes one operand: membermask", ins.loc)
        return BarForm("warp_sync", True, ins.operands[0])
    if mods and mods[0] == "cta":
        mods = mods[1:]
    if not mods:
        raise VerifyError(f"{ins.full_opcode} needs .sync, .arrive or .red", ins.loc)
    op = mods[0]
    rest = mods[1:]
    aligned = ins.opcode == "bar"
    for m in rest:
        if m not in BAR_QUALIFIERS or m in ("cta", "sync", "arrive", "red"):
            raise UnsupportedError(f"qualifier .{m} of {ins.opcode}.{op} is not supported", ins.loc,
                                   expected="PTX ISA §9.7.13.1 syntax")
    if "aligned" in rest:
        if ins.opcode == "bar":
            raise VerifyError("bar takes no .aligned qualifier (bar is already aligned)", ins.loc)
        aligned = True
    what = ins.full_opcode
    ops = ins.operands
    if op == "sync" or op == "arrive":
        if any(m in rest for m in ("popc", "and", "or", "u32", "pred")):
            raise VerifyError(f"{what}: reduction qualifiers are only valid with .red", ins.loc)
        if op == "arrive" and len(ops) != 2:
            raise VerifyError(f"{what} needs a barrier number and a (non-zero) thread count: a, b", ins.loc)
        if op == "sync" and len(ops) not in (1, 2):
            raise VerifyError(f"{what} takes a{{, b}}", ins.loc)
        _check_id_imm(ins, ops[0], what)
        if len(ops) == 2:
            _check_count_imm(ins, ops[1], what)
        return BarForm(op, aligned, ops[0], ops[1] if len(ops) == 2 else None)
    if op == "red":
        red_ops = [m for m in rest if m in ("popc", "and", "or")]
        if len(red_ops) != 1:
            raise VerifyError(f"{what} needs exactly one of .popc, .and, .or", ins.loc)
        rop = red_ops[0]
        want = "u32" if rop == "popc" else "pred"
        if want not in rest or ("u32" in rest and "pred" in rest):
            raise VerifyError(f"{what}: .{rop} requires type .{want}", ins.loc)
        if len(ops) not in (3, 4):
            raise VerifyError(f"{what} takes d, a{{, b}}, {{!}}c", ins.loc)
        dst, a = ops[0], ops[1]
        b = ops[2] if len(ops) == 4 else None
        c = ops[-1]
        if not isinstance(c, (ir.Reg, ir.Not, ir.Imm)):
            raise VerifyError(f"{what}: the reduced operand must be a predicate or its complement", ins.loc)
        _check_id_imm(ins, a, what)
        if b is not None:
            _check_count_imm(ins, b, what)
        return BarForm("red", aligned, a, b, dst=dst, c=c, rop=rop)
    raise UnsupportedError(f"{what} is not supported", ins.loc,
                           expected="bar/barrier .sync, .arrive, .red, bar.warp.sync")


@dataclass(frozen=True)
class ClusterBarrierForm:
    """A checked barrier.cluster: ``op`` 'arrive' / 'wait', ``sem`` (default release / acquire), ``aligned``."""

    op: str
    sem: str
    aligned: bool


def parse_barrier_cluster(ins: ir.Instruction) -> ClusterBarrierForm:
    """``barrier.cluster.arrive{.release|.relaxed}{.aligned}`` / ``barrier.cluster.wait{.acquire}{.aligned}``
    (PTX ISA 9.1 §9.7.13.3)."""
    mods = ins.mods[1:]
    if not mods or mods[0] not in ("arrive", "wait"):
        raise UnsupportedError(f"{ins.full_opcode} is not supported", ins.loc,
                               expected="barrier.cluster.arrive or barrier.cluster.wait")
    op = mods[0]
    sem = None
    aligned = False
    allowed = ("release", "relaxed") if op == "arrive" else ("acquire",)
    for m in mods[1:]:
        if m == "aligned":
            aligned = True
        elif m in allowed and sem is None:
            sem = m
        else:
            raise VerifyError(f"qualifier .{m} is not valid on barrier.cluster.{op}", ins.loc,
                              expected="barrier.cluster.arrive{.release|.relaxed}{.aligned} / "
                                       "barrier.cluster.wait{.acquire}{.aligned}")
    if ins.operands:
        raise VerifyError(f"barrier.cluster.{op} takes no operands", ins.loc)
    return ClusterBarrierForm(op, sem or ("release" if op == "arrive" else "acquire"), aligned)


__all__ = ["WARP", "NUM_BARRIERS", "SPECS", "BarForm", "parse_bar", "ClusterBarrierForm", "parse_barrier_cluster"]
