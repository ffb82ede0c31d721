"""Forms of the warp-level collectives: shfl.sync, vote.sync, elect.sync, activemask, match.sync, redux.sync.

PTX ISA 9.1 §9.7.9.6 (shfl.sync), §9.7.13.6 (vote.sync), §9.7.13.7 (match.sync), §9.7.13.8 (redux.sync),
§9.7.13.9 (activemask), §9.7.13.14 (elect.sync)::

    shfl.sync.{up|down|bfly|idx}.b32 d[|p], a, b, c, membermask
    vote.sync.{all|any|uni}.pred d, {!}a, membermask        vote.sync.ballot.b32 d, {!}a, membermask
    elect.sync d|p, membermask                               activemask.b32 d
    match.any.sync.{b32|b64} d, a, membermask                match.all.sync.{b32|b64} d[|p], a, membermask
    redux.sync.{add|min|max}.{u32|s32} / .{and|or|xor}.b32 d, a, membermask
    redux.sync.{min|max}{.abs}{.NaN}.f32 d, a, membermask    (sm_100a)

Not supported (UnsupportedError): the non-``.sync`` shfl and vote (removed for sm_70+).  The execution is
``tcsim.semantics.warp_level``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup

SHFL_MODES = ("up", "down", "bfly", "idx")
VOTE_MODES = ("all", "any", "uni", "ballot")
#: redux.sync integer operations and their types
REDUX_INT_OPS = {"add": ("u32", "s32"), "min": ("u32", "s32"), "max": ("u32", "s32"),
                 "and": ("b32",), "or": ("b32",), "xor": ("b32",)}

_SYNC = QualGroup("sync", ("sync",), required=True)
SPECS = (FormSpec("shfl", "PTX ISA §9.7.9.6", (), (_SYNC, QualGroup("mode", SHFL_MODES, required=True),
                                                    QualGroup("type", ("b32",), required=True))),
         FormSpec("vote", "PTX ISA §9.7.13.6", (), (_SYNC, QualGroup("mode", VOTE_MODES, required=True),
                                                     QualGroup("type", ("pred", "b32"), required=True))),
         FormSpec("elect", "PTX ISA §9.7.13.14", (), (_SYNC,)),
         FormSpec("activemask", "PTX ISA §9.7.13.9", (), (QualGroup("type", ("b32",), required=True),)),
         FormSpec("match", "PTX ISA §9.7.13.7", (), (QualGroup("mode", ("any", "all"), required=True), _SYNC,
                                                      QualGroup("type", ("b32", "b64"), required=True))),
         FormSpec("redux", "PTX ISA §9.7.13.8", (), (_SYNC, QualGroup("op", tuple(REDUX_INT_OPS), required=True),
                                                      QualGroup("abs", ("abs",)), QualGroup("nan", ("NaN",)),
                                                      QualGroup("type", ("u32", "s32", "b32", "f32"),
                                                                required=True))))


@dataclass(frozen=True)
class WarpCollectiveForm:
    """A checked warp collective.  ``mode``: shfl's up/down/bfly/idx, vote's all/any/uni/ballot, match's any/all,
    redux's operation; ``type`` the data type; operands ``dst`` (and ``pdst``, the predicate of ``d|p``), ``a``,
    ``b``, ``c`` and ``membermask``; redux's ``.abs`` / ``.NaN`` flags."""

    op: str
    mode: str | None
    type: str | None
    dst: object
    membermask: object
    pdst: object = None
    a: object = None
    b: object = None
    c: object = None
    abs: bool = False
    nan: bool = False


def _sync_required(ins, what):
    if "sync" not in ins.mods:
        raise UnsupportedError(f"{ins.full_opcode}: {what} without .sync is not supported for sm_70 and later",
                               ins.loc, expected=f"{what}.sync")


def _arch_has_f32_redux(arch: str) -> bool:
    try:
        n = int("".join(ch for ch in arch[3:] if ch.isdigit()))
    except ValueError:
        return False
    return n >= 100 and arch[-1] in "af"


def parse_shfl(ins: ir.Instruction) -> WarpCollectiveForm:
    _sync_required(ins, "shfl")
    modes = [m for m in ins.mods if m in SHFL_MODES]
    others = [m for m in ins.mods if m not in SHFL_MODES + ("sync", "b32")]
    if len(modes) != 1 or others or "b32" not in ins.mods:
        raise VerifyError(f"{ins.full_opcode}: expected shfl.sync.{{up|down|bfly|idx}}.b32", ins.loc)
    if len(ins.operands) != 5:
        raise VerifyError("shfl.sync takes d[|p], a, b, c, membermask", ins.loc)
    dst, a, b, c, mop = ins.operands
    pdst = None
    if isinstance(dst, ir.PredPair):
        dst, pdst = dst.first, dst.second
    return WarpCollectiveForm("shfl", modes[0], "b32", dst, mop, pdst=pdst, a=a, b=b, c=c)


def parse_vote(ins: ir.Instruction) -> WarpCollectiveForm:
    _sync_required(ins, "vote")
    modes = [m for m in ins.mods if m in VOTE_MODES]
    if len(modes) != 1:
        raise VerifyError(f"{ins.full_opcode}: expected one of .all .any .uni .ballot", ins.loc)
    mode = modes[0]
    want = "b32" if mode == "ballot" else "pred"
    rest = [m for m in ins.mods if m not in (mode, "sync")]
    if rest != [want]:
        raise VerifyError(f"{ins.full_opcode}: vote.sync.{mode} requires type .{want}", ins.loc)
    if len(ins.operands) != 3:
        raise VerifyError("vote.sync takes d, {!}a, membermask", ins.loc)
    dst, a, mop = ins.operands
    return WarpCollectiveForm("vote", mode, want, dst, mop, a=a)


def parse_elect(ins: ir.Instruction) -> WarpCollectiveForm:
    if list(ins.mods) != ["sync"]:
        raise VerifyError(f"{ins.full_opcode}: expected elect.sync", ins.loc)
    if len(ins.operands) != 2 or not isinstance(ins.operands[0], ir.PredPair):
        raise VerifyError("elect.sync takes d|p, membermask", ins.loc)
    pair, mop = ins.operands
    return WarpCollectiveForm("elect", None, "u32", pair.first, mop, pdst=pair.second)


def parse_activemask(ins: ir.Instruction) -> WarpCollectiveForm:
    if list(ins.mods) != ["b32"] or len(ins.operands) != 1:
        raise VerifyError("expected activemask.b32 d", ins.loc)
    return WarpCollectiveForm("activemask", None, "b32", ins.operands[0], None)


def parse_match(ins: ir.Instruction) -> WarpCollectiveForm:
    mods = set(ins.mods)
    kinds = mods & {"any", "all"}
    types = mods & {"b32", "b64"}
    if len(kinds) != 1 or len(types) != 1 or "sync" not in mods or len(mods) != 3:
        raise VerifyError(f"{ins.full_opcode}: expected match.{{any|all}}.sync.{{b32|b64}}", ins.loc)
    kind, typ = kinds.pop(), types.pop()
    if len(ins.operands) != 3:
        raise VerifyError("match.sync takes d, a, membermask", ins.loc)
    dst, a, mop = ins.operands
    pdst = None
    if isinstance(dst, ir.PredPair):
        if kind != "all":
            raise VerifyError("only match.all.sync has a predicate destination", ins.loc)
        dst, pdst = dst.first, dst.second
    return WarpCollectiveForm("match", kind, typ, dst, mop, pdst=pdst, a=a)


def parse_redux(ins: ir.Instruction, arch: str) -> WarpCollectiveForm:
    mods = list(ins.mods)
    if not mods or mods[0] != "sync":
        raise VerifyError(f"{ins.full_opcode}: expected redux.sync.op.type", ins.loc)
    rest = mods[1:]
    ops = [m for m in rest if m in REDUX_INT_OPS]
    if len(ops) != 1:
        raise VerifyError(f"{ins.full_opcode}: expected one reduction operation", ins.loc)
    op = ops[0]
    flags = [m for m in rest if m in ("abs", "NaN")]
    types = [m for m in rest if m in ("u32", "s32", "b32", "f32")]
    if len(types) != 1 or len(rest) != 1 + len(flags) + 1:
        raise VerifyError(f"{ins.full_opcode}: unexpected qualifiers", ins.loc)
    typ = types[0]
    if typ == "f32":
        if op not in ("min", "max"):
            raise VerifyError(f"redux.sync.{op}.f32 does not exist", ins.loc, expected="redux.sync.{min|max}.f32")
        if not _arch_has_f32_redux(arch):
            raise VerifyError(f"redux.sync.{op}.f32 requires sm_100a or later (target {arch})", ins.loc)
    else:
        if flags:
            raise VerifyError(f"{ins.full_opcode}: .abs / .NaN only apply to .f32", ins.loc)
        if typ not in REDUX_INT_OPS[op]:
            raise VerifyError(f"redux.sync.{op} does not take .{typ}", ins.loc,
                              expected="/".join("." + t for t in REDUX_INT_OPS[op]))
    if len(ins.operands) != 3:
        raise VerifyError("redux.sync takes dst, src, membermask", ins.loc)
    dst, src, mop = ins.operands
    return WarpCollectiveForm("redux", op, typ, dst, mop, a=src, abs="abs" in flags, nan="NaN" in flags)


def _membermask_checked(parse):
    """Wrap a parser: the membermask operand (PTX ISA §9.7.13: a .b32 value) is a register or an integer
    immediate -- ptxas rejects a vector, an address, a float or ``_`` there ("Arguments mismatch")."""
    import functools

    @functools.wraps(parse)
    def wrapped(ins, *args, **kw):
        form = parse(ins, *args, **kw)
        mop = form.membermask
        if mop is not None and not (isinstance(mop, ir.Reg) or (isinstance(mop, ir.Imm) and mop.kind == "int")):
            raise VerifyError(f"Arguments mismatch for instruction '{ins.opcode}': membermask {mop} is not a .b32 "
                              "register or integer", ins.loc, expected="a .b32 register or an integer constant")
        return form
    return wrapped


parse_shfl, parse_vote, parse_elect, parse_match, parse_redux = (
    _membermask_checked(f) for f in (parse_shfl, parse_vote, parse_elect, parse_match, parse_redux))


__all__ = ["SPECS", "WarpCollectiveForm", "parse_shfl", "parse_vote", "parse_elect", "parse_activemask",
           "parse_match", "parse_redux"]
