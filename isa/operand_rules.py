"""The qualifier and operand rules shared by the ALU families (integer, logic, compare, float, convert).

PTX ISA 9.1 §6.4 (operand type information) and §6.4.1/§6.4.2 (operand-type and operand-size rules): for ALU
instructions every register operand must have the size of the instruction type; bit-size types (``.b32``)
agree with any type of their size, signed and unsigned integers of one size agree with each other, and
floating-point types only agree with themselves.  A predicate register is never a value operand, and
special registers cannot be used directly (``mov`` them into a register first) — ptxas rejects all of these
and so does tcsim, at decode time, with ptxas's wording where that is short.

* :class:`Mods` — consumes an instruction's qualifiers category by category and reports the leftovers;
* :func:`check_operands` / :func:`check_src` / :func:`check_dst` — operand-kind and register-type checks;
* :func:`require_arch` — the minimum target of a form.

The ALU decoders of ``tcsim.semantics`` (integer, logic, compare, float_arith, convert) check their forms with
these rules.  Pure: no machine state.
"""
from __future__ import annotations

from . import ir
from .errors import UnsupportedError, VerifyError

INT_TYPES = ("u16", "u32", "u64", "s16", "s32", "s64")
FLOAT_TYPES = ("f32", "f64")
ROUNDING = ("rn", "rz", "rm", "rp")

#: byte sizes of the scalar register types (.b128 is not an ALU type)
_SIZE = {t: n for t, n in ir.TYPE_SIZES.items() if t != "b128"}
#: extra sizes of packed types
_EXTRA_SIZE = {"u16x2": 4, "s16x2": 4, "f32x2": 8, "e2m1x2": 1, "e2m3x2": 2, "e3m2x2": 2, "ue8m0x2": 2,
               "pred": 0}


def type_size(t: str) -> int:
    if t in _SIZE and t != "pred":
        return _SIZE[t]
    return _EXTRA_SIZE[t]


def _category(t: str) -> str:
    if t == "pred":
        return "pred"
    if t in ("bf16", "bf16x2"):
        return "float"
    if t[0] == "b":
        return "bits"
    if t[0] in "us" and t[1:].isdigit():
        return "int"
    if t in ("u16x2", "s16x2"):
        return "int"
    return "float"


# --------------------------------------------------------------------------------------------- qualifiers
class Mods:
    """The qualifiers of one instruction, taken out category by category.

    >>> m = Mods(ins); t = m.type(INT_TYPES); sat = m.flag('sat'); m.done()
    """

    def __init__(self, ins: ir.Instruction, name: str | None = None):
        self.ins = ins
        self.name = name or ins.opcode
        self.left = list(ins.mods)

    def flag(self, q: str) -> bool:
        if q in self.left:
            self.left.remove(q)
            if q in self.left:
                raise VerifyError(f"Duplicate modifier '.{q}' for instruction '{self.name}'", self.ins.loc)
            return True
        return False

    def one_of(self, options, what: str = "modifier") -> str | None:
        found = [m for m in self.left if m in options]
        if len(found) > 1:
            raise VerifyError(f"Conflicting {what}s " + ", ".join(f"'.{f}'" for f in found)
                              + f" for instruction '{self.name}'", self.ins.loc)
        if found:
            self.left.remove(found[0])
            return found[0]
        return None

    def types(self) -> list:
        """Remove and return every type qualifier (in order)."""
        out = [m for m in self.left if _is_type(m)]
        for t in out:
            self.left.remove(t)
        return out

    def type(self, allowed, name: str | None = None) -> str:
        """Exactly one type qualifier, from ``allowed``."""
        ts = self.types()
        op = name or self.name
        if len(ts) != 1 or ts[0] not in allowed:
            if not ts:
                raise VerifyError(f"Instruction '{op}' requires a type ({', '.join('.' + a for a in allowed)})",
                                  self.ins.loc)
            raise VerifyError(f"Unexpected instruction types specified for '{op}'", self.ins.loc,
                              expected="one of " + ", ".join("." + a for a in allowed))
        return ts[0]

    def done(self, unsupported=()) -> None:
        """Every qualifier must have been consumed; ``unsupported`` ones are legal PTX tcsim cannot run."""
        for m in self.left:
            if m in unsupported:
                raise UnsupportedError(f"modifier .{m} of {self.ins.full_opcode} is not supported by tcsim",
                                       self.ins.loc)
        if self.left:
            raise VerifyError(f"Illegal modifier '.{self.left[0]}' for instruction '{self.name}'", self.ins.loc)


_ALL_TYPES = set(_SIZE) | set(_EXTRA_SIZE) | {"b8", "u8", "s8", "e2m1", "e2m3", "e3m2", "ue8m0"}


def _is_type(m: str) -> bool:
    return m in _ALL_TYPES


def require_arch(ins, info, minimum: int, what: str | None = None, suffix_a: bool = False) -> None:
    """Raise VerifyError unless the target is sm_<minimum> or newer (``suffix_a``: needs the 'a' variant)."""
    arch = (info.arch or "sm_100a")
    try:
        num = int("".join(ch for ch in arch[3:] if ch.isdigit()))
    except ValueError:
        return
    if num < minimum or (suffix_a and not arch.endswith(("a", "f"))):
        raise VerifyError(f"{what or ins.full_opcode} requires sm_{minimum}{'a' if suffix_a else ''} or higher "
                          f"(target is {arch})", ins.loc)


# --------------------------------------------------------------------------------------------- operands
def check_count(ins, n: int | tuple) -> None:
    ns = (n,) if isinstance(n, int) else tuple(n)
    if len(ins.operands) not in ns:
        want = " or ".join(str(x) for x in ns)
        raise VerifyError(f"{ins.full_opcode} takes {want} operands, got {len(ins.operands)}", ins.loc)


def _mismatch(ins, op, why: str):
    return VerifyError(f"Arguments mismatch for instruction '{ins.opcode}': {why}", ins.loc)


def compatible(reg_type: str, ptype: str) -> bool:
    """PTX operand-type agreement (§6.4.1) between a declared register type and an instruction type."""
    if reg_type == ptype:
        return True
    rc, pc = _category(reg_type), _category(ptype)
    if "pred" in (rc, pc):
        return False
    sizes = {**_SIZE, **_EXTRA_SIZE}
    if reg_type not in sizes or ptype not in sizes:     # .b128 (agrees with .b128 only) or a type ALU rules lack
        return False
    if type_size(reg_type) != type_size(ptype):
        return False
    if ptype.endswith("x2") or reg_type.endswith("x2"):
        return rc == "bits" or pc == "bits"    # packed operands live in bit-size registers
    if rc == "bits" or pc == "bits":
        return True
    return rc == pc == "int"


def check_src(ins, info, op, ptype: str, *, imm: bool = True, wider: bool = False) -> None:
    """Check one source operand of instruction type ``ptype`` (``'pred'`` for predicates)."""
    if isinstance(op, ir.Not):
        if ptype != "pred":
            raise UnsupportedError(f"negated operand {op} of a .{ptype} value is not supported", ins.loc)
        op = op.operand
    if isinstance(op, ir.Reg):
        rt = info.reg_type(op)
        if rt is None:
            if op.name not in info.function.regs:
                raise VerifyError(f"register {op.name} is not declared", ins.loc)
            return
        if ptype == "pred" or rt == "pred":
            if ptype != rt:
                if rt == "pred":
                    raise _mismatch(ins, op, f"predicate {op.name} used where a .{ptype} value is expected")
                raise _mismatch(ins, op, f"{op.name} is a .{rt} register, a predicate is expected")
            return
        # (a .b128 register agrees with .b128 only: no wider rule for it -- the robustness campaign's
        # `cvt.rn.f64.u32 %q, %r` with %q .b128 raised a KeyError here)
        if wider and "b128" not in (rt, ptype) and type_size(rt) >= type_size(ptype) and (
                _category(rt) != "float" or rt == ptype or _category(ptype) == "bits"):
            return
        if not compatible(rt, ptype):
            raise _mismatch(ins, op, f"{op.name} is a .{rt} register, the operand is .{ptype}")
        return
    if isinstance(op, ir.Imm):
        if not imm:
            raise _mismatch(ins, op, f"immediate {op} is not allowed here")
        cat = _category(ptype)
        if ptype == "pred":
            if op.kind != "int":
                raise _mismatch(ins, op, f"{op} is not a predicate constant")
            return
        if cat == "int" and op.kind != "int":
            raise _mismatch(ins, op, f"floating-point constant {op} used as a .{ptype} operand")
        if cat == "float" and op.kind == "int":
            raise _mismatch(ins, op, f"integer constant {op} used as a .{ptype} operand")
        if cat == "float" and ptype not in ("f32", "f64"):
            raise _mismatch(ins, op, f"constant {op} cannot be a .{ptype} operand")
        if cat == "bits" and op.kind != "int" and (op.kind, type_size(ptype)) not in (("f32", 4), ("f64", 8)):
            # ptxas 13.0: a 0f literal is a 32-bit and a 0d / decimal literal a 64-bit bit pattern
            raise _mismatch(ins, op, f"floating-point constant {op} is not a .{ptype} bit pattern (0f literals are "
                                     "32-bit, 0d and decimal literals 64-bit)")
        return
    if isinstance(op, ir.SpecialReg):
        raise VerifyError(f"Special register argument not allowed for instruction '{ins.opcode}'", ins.loc,
                          expected="a register (mov the special register into one first)")
    if isinstance(op, ir.Sym):
        if _category(ptype) in ("int", "bits") and type_size(ptype) >= 4:
            return
        raise _mismatch(ins, op, f"address of {op.name} used as a .{ptype} operand")
    raise _mismatch(ins, op, f"operand {op} is not a .{ptype} value")


def check_dst(ins, info, op, ptype: str, *, sink: bool = False, wider: bool = False) -> None:
    """Check a destination operand (a register of type ``ptype``; ``_`` only where ``sink``)."""
    if isinstance(op, ir.Sink):
        if not sink:
            raise VerifyError(f"Result discard mode is not allowed for instruction '{ins.opcode}'", ins.loc)
        return
    if isinstance(op, ir.Vector) and len(op.elems) == 1:
        op = op.elems[0]
    if not isinstance(op, ir.Reg):
        raise VerifyError(f"destination {op} of {ins.full_opcode} is not a register", ins.loc)
    check_src(ins, info, op, ptype, imm=False, wider=wider)


def check_operands(ins, info, dst_type, src_types, *, sink: bool = False, imm=True) -> None:
    """Operand count plus destination/source checks in one call (``dst_type`` None: no destination)."""
    n = len(src_types) + (0 if dst_type is None else 1)
    check_count(ins, n)
    ops = list(ins.operands)
    if dst_type is not None:
        check_dst(ins, info, ops.pop(0), dst_type, sink=sink)
    for op, t in zip(ops, src_types):
        check_src(ins, info, op, t, imm=imm)


def split_pred_pair(ins, op):
    """``p|q`` -> (p, q); a single destination -> (op, None)."""
    if isinstance(op, ir.PredPair):
        return op.first, op.second
    return op, None


__all__ = ["INT_TYPES", "FLOAT_TYPES", "ROUNDING", "type_size",
           "Mods", "require_arch", "check_count", "compatible", "check_src", "check_dst", "check_operands",
           "split_pred_pair"]
