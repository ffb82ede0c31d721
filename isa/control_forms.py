"""Forms of the control-flow and miscellaneous instructions: bra, brx.idx, call, ret, exit, trap, brkpt, nanosleep,
pmevent, setmaxnreg.

PTX ISA 9.1 §9.7.12 (control flow: §9.7.12.3 bra, §9.7.12.4 brx.idx, §9.7.12.5 call, §9.7.12.6 ret,
§9.7.12.7 exit) and §9.7.19 (miscellaneous: §9.7.19.1 brkpt, §9.7.19.2 nanosleep, §9.7.19.3 pmevent,
§9.7.19.4 trap, §9.7.19.5 setmaxnreg)::

    bra{.uni} tgt                    brx.idx{.uni} index, tlist         call{.uni} (ret), func, (params)
    ret{.uni}    exit    trap    brkpt                                  nanosleep.u32 t
    pmevent a    pmevent.mask a      setmaxnreg.{inc|dec}.sync.aligned.u32 imm-reg-count

``.uni`` asserts a non-divergent branch/call/return (a hint: tcsim does not require it).  A qualifier the ISA
does not define for the instruction is an UnsupportedError naming the instruction's PTX ISA section; the
checks of the operands that need the function (labels, ``.branchtargets`` lists, ``.func`` kind) are done by
the decoders in ``tcsim.semantics.control``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import VerifyError
from .forms import FormSpec, QualGroup, split_qualifiers

_UNI = QualGroup("uni", ("uni",))

SECTIONS = {"bra": "PTX ISA §9.7.12.3", "brx": "PTX ISA §9.7.12.4", "call": "PTX ISA §9.7.12.5",
            "ret": "PTX ISA §9.7.12.6", "exit": "PTX ISA §9.7.12.7", "brkpt": "PTX ISA §9.7.19.1",
            "nanosleep": "PTX ISA §9.7.19.2", "pmevent": "PTX ISA §9.7.19.3", "trap": "PTX ISA §9.7.19.4",
            "setmaxnreg": "PTX ISA §9.7.19.5"}

SPECS = (FormSpec("bra", SECTIONS["bra"], (), (_UNI,)),
         FormSpec("brx", SECTIONS["brx"], (), (QualGroup("idx", ("idx",), required=True), _UNI)),
         FormSpec("call", SECTIONS["call"], (), (_UNI,)),
         FormSpec("ret", SECTIONS["ret"], (), (_UNI,)),
         FormSpec("exit", SECTIONS["exit"], (), ()),
         FormSpec("brkpt", SECTIONS["brkpt"], (), ()),
         FormSpec("nanosleep", SECTIONS["nanosleep"], (), (QualGroup("type", ("u32",), required=True),)),
         FormSpec("pmevent", SECTIONS["pmevent"], (), (QualGroup("mask", ("mask",)),)),
         FormSpec("trap", SECTIONS["trap"], (), ()),
         FormSpec("setmaxnreg", SECTIONS["setmaxnreg"], (),
                  (QualGroup("action", ("inc", "dec"), required=True), QualGroup("sync", ("sync",), required=True),
                   QualGroup("aligned", ("aligned",), required=True),
                   QualGroup("type", ("u32",), required=True))))
_SPEC = {s.key: s for s in SPECS}

#: setmaxnreg's register count: a multiple of 8 in this range (PTX ISA §9.7.19.5)
SETMAXNREG_RANGE = (24, 256)


@dataclass(frozen=True)
class ControlForm:
    """A checked control instruction.  ``uni``: the ``.uni`` hint; ``operands``: the instruction's operands as
    written (bra's target, brx's index and list, call's operands, pmevent's event, nanosleep's time)."""

    op: str
    uni: bool
    operands: tuple
    mask: bool = False          # pmevent.mask


@dataclass(frozen=True)
class CallForm:
    """``call{.uni} (ret), func, (args)`` / ``call{.uni} func, (args)`` / ``call{.uni} (ret), fptr, (args), flist``:
    ``returns`` and ``args`` the .param operands as written (symbols or, for system calls, registers/immediates);
    ``target`` the callee's name (a direct call) or the register holding its address (an indirect call);
    ``prototype`` the label of the ``.callprototype`` / ``.calltargets`` an indirect call names."""

    uni: bool
    target: object
    returns: tuple
    args: tuple
    prototype: object = None

    @property
    def direct(self) -> bool:
        return isinstance(self.target, ir.Sym)

    @property
    def name(self) -> str:
        return self.target.name if self.direct else str(self.target)

    #: kept for callers of the vprintf-only form
    @property
    def params(self) -> tuple:
        return self.args


@dataclass(frozen=True)
class SetmaxnregForm:
    """``setmaxnreg.{inc|dec}.sync.aligned.u32 count``."""

    action: str
    count: int


def _quals(ins: ir.Instruction) -> dict:
    spec = _SPEC[ins.opcode]
    q = split_qualifiers(ins, spec.groups, tuple(ins.mods), ins.opcode, spec.section)
    for g in spec.groups:
        if g.required and g.name not in q:
            raise VerifyError(f"{ins.full_opcode}: {ins.opcode} needs {g.describe()}", ins.loc,
                              expected=spec.describe().split("  (")[0])
    return q


def parse_control(ins: ir.Instruction) -> ControlForm:
    """bra, ret, exit, trap, brkpt, pmevent, call: the qualifiers (``.uni``, pmevent's ``.mask``) and operand
    counts (bra: one target; trap, brkpt, exit, ret: none)."""
    q = _quals(ins)
    ops = tuple(ins.operands)
    if ins.opcode == "bra" and len(ops) != 1:
        raise VerifyError("bra takes exactly one label operand", ins.loc)
    if ins.opcode in ("exit", "trap", "brkpt", "ret") and ops:
        raise VerifyError(f"{ins.opcode} takes no operands, got {len(ops)}", ins.loc)
    if ins.opcode == "pmevent" and len(ops) != 1:
        raise VerifyError(f"pmevent takes one operand (the event{' mask' if 'mask' in q else ''}), got "
                          f"{len(ops)}", ins.loc)
    return ControlForm(ins.opcode, "uni" in q, ops, mask="mask" in q)


def parse_brx(ins: ir.Instruction) -> ControlForm:
    """``brx.idx{.uni} index, tlist``: the index operand (a register or an immediate) and the list label."""
    if [m for m in ins.mods if m != "uni"] != ["idx"]:
        raise VerifyError(f"{ins.full_opcode}: brx needs .idx (brx.idx{{.uni}} index, tlist)", ins.loc)
    if len(ins.operands) != 2:
        raise VerifyError("brx.idx takes two operands: index, tlist", ins.loc)
    index_op, tl = ins.operands
    if not isinstance(index_op, (ir.Reg, ir.Imm)):
        raise VerifyError(f"brx.idx index must be a .u32 register or an immediate, got {index_op}", ins.loc)
    return ControlForm("brx", "uni" in ins.mods, (index_op, tl))


def parse_nanosleep(ins: ir.Instruction) -> ControlForm:
    """``nanosleep.u32 t`` (t a register or an immediate)."""
    _quals(ins)
    if len(ins.operands) != 1:
        raise VerifyError("nanosleep takes one operand", ins.loc)
    return ControlForm("nanosleep", False, tuple(ins.operands))


def parse_setmaxnreg(ins: ir.Instruction) -> SetmaxnregForm:
    """``setmaxnreg.{inc|dec}.sync.aligned.u32 imm`` with an immediate count in 24..256, a multiple of 8 (as
    ptxas requires)."""
    what = ins.full_opcode
    mods = list(ins.mods)
    actions = [m for m in mods if m in ("inc", "dec")]
    if len(actions) != 1:
        raise VerifyError(f"{what}: setmaxnreg needs exactly one of .inc / .dec", ins.loc)
    for m in ("sync", "aligned", "u32"):
        if m not in mods:
            raise VerifyError(f"{what}: setmaxnreg needs .{m}", ins.loc,
                              expected="setmaxnreg.{inc|dec}.sync.aligned.u32 imm")
    extra = [m for m in mods if m not in ("inc", "dec", "sync", "aligned", "u32")]
    if extra:
        raise VerifyError(f"{what}: qualifier .{extra[0]} is not valid on setmaxnreg", ins.loc)
    if len(ins.operands) != 1 or not isinstance(ins.operands[0], ir.Imm) or ins.operands[0].kind != "int":
        raise VerifyError(f"{what} takes one integer constant (the register count)", ins.loc)
    count = int(ins.operands[0].value)
    lo, hi = SETMAXNREG_RANGE
    if not lo <= count <= hi or count % 8:
        raise VerifyError(f"{what}: register count {count} is not valid", ins.loc,
                          expected="a multiple of 8 in 24..256")
    return SetmaxnregForm(actions[0], count)


def parse_call(ins: ir.Instruction) -> CallForm:
    """A ``call`` (PTX ISA §9.7.12.5): ``[(ret-list),] target [, (arg-list)] [, prototype-or-targets]``.  The
    target is a function name (direct) or a 64-bit register (indirect, which needs the label of a
    ``.callprototype`` or ``.calltargets``).  Matching the callee's signature is the decoder's (it knows the
    module)."""
    q = _quals(ins)
    ops = list(ins.operands)
    returns = ()
    if ops and isinstance(ops[0], ir.ParenList):
        returns = tuple(ops.pop(0).elems)
    if not ops or not isinstance(ops[0], (ir.Sym, ir.Reg)) or (isinstance(ops[0], ir.Sym) and ops[0].offset):
        raise VerifyError("call needs a function name or a register holding a function address", ins.loc,
                          expected="call{.uni} (ret), func, (args);  or  call (ret), %rd, (args), prototype;")
    target = ops.pop(0)
    args = ()
    if ops and isinstance(ops[0], ir.ParenList):
        args = tuple(ops.pop(0).elems)
    proto = None
    if ops and isinstance(ops[0], ir.LabelRef):
        proto = ops.pop(0)
    if ops:
        raise VerifyError(f"unexpected operand {ops[0]} in call", ins.loc)
    if isinstance(target, ir.Reg) and proto is None:
        raise VerifyError(f"indirect call through {target} names no .callprototype or .calltargets", ins.loc,
                          expected="call (ret), %rd, (args), prototype_label;")
    if isinstance(target, ir.Sym) and proto is not None:
        raise VerifyError(f"a direct call of {target.name} takes no prototype ({proto})", ins.loc)
    return CallForm("uni" in q, target, returns, args, proto)


__all__ = ["SPECS", "SECTIONS", "SETMAXNREG_RANGE", "ControlForm", "SetmaxnregForm", "CallForm", "parse_control",
           "parse_brx", "parse_nanosleep", "parse_setmaxnreg", "parse_call"]
