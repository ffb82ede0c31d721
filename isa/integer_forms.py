"""Forms of the integer instructions: add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns
brev bfe bfi szext bmsk dp4a dp2a and the carry chains add.cc addc sub.cc subc mad.cc madc.

PTX ISA 9.1 §9.7.1 (integer arithmetic) and §9.7.2 (extended-precision integer arithmetic).  :func:`parse_integer`
checks the qualifiers (ptxas's rules and wording, :mod:`tcsim.isa.operand_rules`), the minimum target and the
operands, and returns a frozen :class:`IntForm`; ``tcsim.semantics.integer`` builds the execution from it.  The
declared qualifier groups are :data:`tcsim.isa.alu_forms.INTEGER_SPECS`.

Pure: no machine state.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import VerifyError
from .operand_rules import INT_TYPES, Mods, check_count, check_dst, check_operands, check_src, require_arch

#: the double-width result type of ``.wide`` (mul.wide, mad.wide)
WIDE = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}
_CARRY_TYPES = ("u32", "s32", "u64", "s64")
_PACKED = ("u16x2", "s16x2")


@dataclass(frozen=True)
class IntForm:
    """A checked integer instruction.  ``type``: the instruction (source) type; ``dtype``: the destination type
    (the double width for ``.wide``, .u32 for popc/clz/bfind, the accumulator type of dp4a/dp2a); ``dst`` and
    ``srcs`` the operands; ``mode``: .lo/.hi/.wide (mul, mad, mul24, mad24, dp2a) or .clamp/.wrap (szext, bmsk);
    ``cc`` (writes CC.CF), ``carry_in`` (addc, subc, madc read CC.CF), ``sat``, ``relu``, ``shiftamt``;
    ``btype``: dp4a/dp2a's second source type."""

    op: str
    type: str
    dtype: str
    dst: object
    srcs: tuple
    mode: str | None = None
    btype: str | None = None
    cc: bool = False
    carry_in: bool = False
    sat: bool = False
    relu: bool = False
    shiftamt: bool = False


def _form(ins, t, dtype=None, **kw) -> IntForm:
    return IntForm(ins.opcode, t, dtype or t, ins.operands[0], tuple(ins.operands[1:]), **kw)


def parse_integer(ins: ir.Instruction, info) -> IntForm:
    """Parse and check one integer instruction (PTX ISA §9.7.1, §9.7.2) of the opcodes listed in the module
    docstring."""
    op = ins.opcode
    parser = _PARSERS.get(op)
    if parser is None:
        raise ValueError(f"parse_integer: {op} is not an integer instruction")
    return parser(ins, info, Mods(ins))


def _add_sub(ins, info, m: Mods) -> IntForm:
    cc = m.flag("cc")
    sat = m.flag("sat")
    t = m.type(INT_TYPES + (_PACKED if ins.opcode == "add" else ()))
    m.done()
    if cc and t not in _CARRY_TYPES:
        raise VerifyError(f"Modifier '.cc' applies only to {ins.opcode} integer types of 32 or 64 bits", ins.loc)
    if sat and t != "s32":
        raise VerifyError(f"Modifier '.sat' does not apply to '.{t}' type", ins.loc)
    if sat and cc:
        raise VerifyError(f"Modifiers '.sat' and '.cc' cannot be combined on '{ins.opcode}'", ins.loc)
    if t in _PACKED:
        require_arch(ins, info, 90)
    check_operands(ins, info, t, (t, t))     # packed types need .b32 registers (as ptxas)
    return _form(ins, t, cc=cc, sat=sat)


def _addc_subc(ins, info, m: Mods) -> IntForm:
    cc = m.flag("cc")
    t = m.type(INT_TYPES)
    m.done()
    if cc and t not in _CARRY_TYPES:
        raise VerifyError(f"Modifier '.cc' applies only to {ins.opcode} integer types of 32 or 64 bits", ins.loc)
    check_operands(ins, info, t, (t, t))
    return _form(ins, t, cc=cc, carry_in=True)


def _mul(ins, info, m: Mods) -> IntForm:
    mode = m.one_of(("lo", "hi", "wide"))
    t = m.type(INT_TYPES)
    m.done()
    if mode is None:
        raise VerifyError("Unexpected instruction types specified for 'mul'", ins.loc,
                          expected="a mode .lo, .hi or .wide for integer mul")
    if mode == "wide" and t not in WIDE:
        raise VerifyError("Unexpected instruction types specified for 'mul.wide'", ins.loc,
                          expected=".wide with a 16- or 32-bit type")
    dt = WIDE[t] if mode == "wide" else t
    check_operands(ins, info, dt, (t, t))
    return _form(ins, t, dt, mode=mode)


def _mad(ins, info, m: Mods) -> IntForm:
    mode = m.one_of(("lo", "hi", "wide"))
    cc = m.flag("cc")
    sat = m.flag("sat")
    t = m.type(INT_TYPES)
    m.done()
    name = ins.opcode
    carry_in = ins.opcode == "madc"
    if mode is None:
        raise VerifyError(f"Unexpected instruction types specified for '{name}'", ins.loc,
                          expected="a mode .lo, .hi or .wide")
    if mode == "wide" and t not in WIDE:
        raise VerifyError(f"Unexpected instruction types specified for '{name}.wide'", ins.loc)
    if (cc or carry_in):
        if mode == "wide":
            raise VerifyError(f"Illegal modifier '.cc' for instruction '{name}.wide'", ins.loc)
        if t not in _CARRY_TYPES:
            raise VerifyError(f"Unexpected instruction types specified for '{name}'", ins.loc,
                              expected="a 32- or 64-bit integer type with carry")
    if sat:
        if mode != "hi":
            raise VerifyError(f"Illegal modifier '.sat' for instruction '{name}.{mode}'", ins.loc)
        if t != "s32":
            raise VerifyError(f"Modifier '.sat' does not apply to '.{t}' type", ins.loc)
        if cc or carry_in:
            raise VerifyError(f"Modifiers '.sat' and '.cc' cannot be combined on '{name}'", ins.loc)
    dt = WIDE[t] if mode == "wide" else t
    check_operands(ins, info, dt, (t, t, dt))
    return _form(ins, t, dt, mode=mode, cc=cc, carry_in=carry_in, sat=sat)


def _mul24_mad24(ins, info, m: Mods) -> IntForm:
    name = ins.opcode
    mode = m.one_of(("lo", "hi"))
    sat = m.flag("sat") if name == "mad24" else False
    t = m.type(("u32", "s32"), name=f"{name}.{mode}" if mode else name)
    m.done()
    if mode is None:
        raise VerifyError(f"'.hi/.lo' modifier required for instruction '{name}'", ins.loc)
    if sat and mode != "hi":
        raise VerifyError(f"Illegal modifier '.sat' for instruction 'mad24.{mode}'", ins.loc)
    if sat and t != "s32":
        raise VerifyError(f"Modifier '.sat' does not apply to '.{t}' type", ins.loc)
    check_operands(ins, info, t, (t, t) if name == "mul24" else (t, t, t))
    return _form(ins, t, mode=mode, sat=sat)


def _same_type(types: tuple, n_src: int, dtype: str | None = None, src2: tuple = ()):
    """A form ``op.type d, a[, b...]`` whose sources have the instruction type (then ``src2``) and whose
    destination is ``dtype`` (default: the instruction type)."""
    def parse(ins, info, m: Mods) -> IntForm:
        t = m.type(types)
        m.done()
        if ins.opcode in ("abs", "neg") and t[0] != "s":
            raise VerifyError(f"Instruction '{ins.opcode}' applies only to signed numeric types", ins.loc)
        check_operands(ins, info, dtype or t, (t,) * n_src + src2)
        return _form(ins, t, dtype)
    return parse


def _min_max(ins, info, m: Mods) -> IntForm:
    relu = m.flag("relu")
    t = m.type(INT_TYPES + _PACKED)
    m.done()
    if relu and t not in ("s32", "s16x2"):
        raise VerifyError(f"Illegal modifier '.relu' for instruction '{ins.opcode}' with type '.{t}'", ins.loc)
    if t in _PACKED or relu:
        require_arch(ins, info, 90)
    check_operands(ins, info, t, (t, t))
    return _form(ins, t, relu=relu)


def _bfind(ins, info, m: Mods) -> IntForm:
    shiftamt = m.flag("shiftamt")
    t = m.type(("u32", "u64", "s32", "s64"))
    m.done()
    check_operands(ins, info, "u32", (t,))
    return _form(ins, t, "u32", shiftamt=shiftamt)


def _fns(ins, info, m: Mods) -> IntForm:
    m.type(("b32",))
    m.done()
    check_count(ins, 4)
    d, mask, base, off = ins.operands
    check_dst(ins, info, d, "b32")
    check_src(ins, info, mask, "b32")
    check_src(ins, info, base, "b32")
    check_src(ins, info, off, "s32")
    return _form(ins, "b32")


def _szext_bmsk(ins, info, m: Mods) -> IntForm:
    name = ins.opcode
    mode = m.one_of(("clamp", "wrap"))
    t = m.type(("u32", "s32") if name == "szext" else ("b32",))
    m.done()
    if mode is None:
        raise VerifyError(f"Clamp modifier required for instruction '{name}'", ins.loc, expected=".clamp or .wrap")
    require_arch(ins, info, 70)
    check_operands(ins, info, t, (t, "u32") if name == "szext" else ("b32", "b32"))
    return _form(ins, t, mode=mode)


def _dot(ins, info, m: Mods) -> IntForm:
    name = ins.opcode
    mode = m.one_of(("lo", "hi")) if name == "dp2a" else None
    ts = m.types()
    m.done()
    if name == "dp2a" and mode is None:
        raise VerifyError("'.hi/.lo' modifier required for instruction 'dp2a'", ins.loc)
    if len(ts) != 2 or any(x not in ("u32", "s32") for x in ts):
        raise VerifyError(f"Unexpected instruction types specified for '{name}'", ins.loc,
                          expected=".atype.btype with each .u32 or .s32")
    at, bt = ts
    ct = "u32" if at == bt == "u32" else "s32"
    check_operands(ins, info, ct, (at, bt, ct))
    return _form(ins, at, ct, mode=mode, btype=bt)


_PARSERS = {
    "add": _add_sub, "sub": _add_sub, "addc": _addc_subc, "subc": _addc_subc, "mul": _mul, "mad": _mad,
    "madc": _mad, "mul24": _mul24_mad24, "mad24": _mul24_mad24,
    "sad": _same_type(INT_TYPES, 3), "div": _same_type(INT_TYPES, 2), "rem": _same_type(INT_TYPES, 2),
    "abs": _same_type(INT_TYPES + ("b16", "b32", "b64"), 1), "neg": _same_type(INT_TYPES + ("b16", "b32", "b64"), 1),
    "min": _min_max, "max": _min_max,
    "popc": _same_type(("b32", "b64"), 1, "u32"), "clz": _same_type(("b32", "b64"), 1, "u32"),
    "bfind": _bfind, "fns": _fns, "brev": _same_type(("b32", "b64"), 1),
    "bfe": _same_type(("u32", "u64", "s32", "s64"), 1, src2=("u32", "u32")),
    "bfi": _same_type(("b32", "b64"), 2, src2=("u32", "u32")),
    "szext": _szext_bmsk, "bmsk": _szext_bmsk, "dp4a": _dot, "dp2a": _dot,
}

__all__ = ["WIDE", "IntForm", "parse_integer"]
