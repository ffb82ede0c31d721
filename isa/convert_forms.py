"""Forms of the conversions: cvt (PTX ISA 9.1 §9.7.9.21) and cvt.pack (§9.7.9.22).

:func:`parse_cvt` checks the qualifiers and types of a cvt (rounding ``.rni .rzi .rmi .rpi`` / ``.rn .rz .rm .rp
.rna``, ``.ftz .sat .relu .satfinite``, ``.dtype.atype``), the targets of the newer forms (as ptxas 13.0 reports
them) and, for float-to-float forms, the modifier combinations ptxas accepts (the generated table
:mod:`tcsim.isa.cvt_forms`); :func:`check_cvt_operands` checks its operands (§6.4.2: registers may be wider than
the types).  Whether tcsim's numerics implement a form that passes these rules is asked of
``tcsim.numerics.convert`` by the decoder (``tcsim.semantics.convert``), between the two.  :func:`parse_cvt_pack`
parses and checks a ``cvt.pack.sat`` completely.  Frozen forms :class:`CvtForm`, :class:`CvtPackForm`.

Not supported (UnsupportedError): stochastic rounding ``.rs`` and the x4 forms, types outside tcsim's cvt.
Pure: no machine state.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import cvt_forms, ir
from .errors import UnsupportedError, VerifyError
from .gen_cvt_forms import key as cvt_key
from .operand_rules import Mods, check_count, check_dst, check_src, type_size

INT = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
FLOATS = ("f16", "bf16", "f32", "f64", "tf32")
PACKED = ("f16x2", "bf16x2", "e4m3x2", "e5m2x2", "e2m3x2", "e3m2x2", "e2m1x2", "ue8m0x2")
X4 = ("e4m3x4", "e5m2x4", "e2m3x4", "e3m2x4", "e2m1x4")
RND = ("rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi", "rs")
#: cvt.pack.sat destination types and their element widths in bits
PACK_WIDTH = {"u16": 16, "s16": 16, "u8": 8, "s8": 8, "u4": 4, "s4": 4, "u2": 2, "s2": 2}
_CONT = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}


@dataclass(frozen=True)
class CvtForm:
    """A checked ``cvt{.rnd}{.ftz}{.sat}{.relu}{.satfinite}.dtype.atype``; ``pair``: the two-source packed form
    ``cvt.rnd.{f16x2|bf16x2|e4m3x2|...}.f32 d, a, b`` (a -> upper element)."""

    dst: str
    src: str
    rnd: str | None
    pair: bool
    ftz: bool = False
    sat: bool = False
    relu: bool = False
    satfinite: bool = False


def container(t: str) -> str:
    """The bit-size register type holding a value of cvt type ``t``."""
    return _CONT[type_size(t)]


def reg_type(t: str) -> str:
    """Type used for the operand checks (formats without a register type live in bit registers)."""
    return t if t in INT + ("f16", "f32", "f64", "f16x2") else container(t)


def _arch_num(info) -> tuple:
    arch = info.arch or "sm_100a"
    digits = "".join(ch for ch in arch[3:] if ch.isdigit())
    return (int(digits) if digits else 100), arch


def parse_cvt(ins: ir.Instruction, info) -> CvtForm:
    """The qualifiers, types and target rules of a cvt (see the module docstring); not its operands."""
    m = Mods(ins)
    rnd = m.one_of(RND, "rounding modifier")
    ftz = m.flag("ftz")
    sat = m.flag("sat")
    relu = m.flag("relu")
    satfinite = m.flag("satfinite")
    ts = m.types()
    extra = [x for x in m.left if x in X4 or x.startswith(("s2f6",))]
    for x in extra:
        m.left.remove(x)
        ts.append(x)
    m.done()
    if rnd == "rs" or any(t in X4 for t in ts):
        raise UnsupportedError(f"{ins.full_opcode}: stochastic rounding (.rs) and the x4 forms are not supported "
                               "by tcsim", ins.loc)
    if len(ts) != 2:
        raise VerifyError("Unexpected instruction types specified for 'cvt'", ins.loc,
                          expected="cvt.dtype.atype")
    dst, src = ts
    for t in ts:
        if t not in INT + FLOATS + PACKED:
            raise UnsupportedError(f"{ins.full_opcode}: type .{t} is not supported by tcsim's cvt", ins.loc)
    _check_target(ins, info, dst, src, rnd, satfinite, relu)
    if dst in FLOATS and src in FLOATS:
        _check_float_form(ins, info, dst, src, (rnd, "ftz" if ftz else None, "sat" if sat else None,
                                                "relu" if relu else None, "satfinite" if satfinite else None))
    pair = dst in PACKED and src == "f32"
    if pair and (ftz or sat):
        raise VerifyError(f"Illegal modifier '.{'ftz' if ftz else 'sat'}' for instruction 'cvt'", ins.loc)
    return CvtForm(dst, src, rnd, pair, ftz=ftz, sat=sat, relu=relu, satfinite=satfinite)


def _sreg_cvt_ok(a: ir.SpecialReg, form: CvtForm) -> bool:
    """ptxas 13.0 lets an integer-to-integer cvt read any integer special register directly, of any source size
    (a float destination is "Special register argument not allowed")."""
    from .typing_rules import SREG_PRED, SREG_VECTOR
    ints = ("u16", "u32", "u64", "s16", "s32", "s64", "b16", "b32", "b64")
    if form.src not in ints or form.dst not in ints + ("u8", "s8"):
        return False
    return not (a.name in SREG_PRED or (a.component is None and a.name in SREG_VECTOR))


def check_cvt_operands(ins: ir.Instruction, info, form: CvtForm) -> tuple:
    """The operands of a checked cvt: ``(d, a)``, or ``(d, a, b)`` for the two-source packed form."""
    if form.pair:
        check_count(ins, 3)
        d, a, b = ins.operands
        check_dst(ins, info, d, reg_type(form.dst), wider=True)
        check_src(ins, info, a, "f32", wider=True)
        check_src(ins, info, b, "f32", wider=True)
        return d, a, b
    check_count(ins, 2)
    d, a = ins.operands
    check_dst(ins, info, d, reg_type(form.dst), wider=True)
    if isinstance(a, ir.SpecialReg) and _sreg_cvt_ok(a, form):
        return d, a          # an integer cvt reads a special register directly (ptxas 13.0: cvt.u64.u32 %rd, %tid.x)
    check_src(ins, info, a, reg_type(form.src), wider=True)
    return d, a


def _check_float_form(ins, info, dst, src, mods) -> None:
    """Float-to-float cvt: accept exactly the modifier combinations ptxas accepts (isa/cvt_forms.py, generated
    from ptxas 13.0); a rejection lists the combinations that are legal for the same types."""
    num, _arch = _arch_num(info)
    table = cvt_forms.ACCEPTED["sm_100a" if num >= 100 else "sm_90a"]
    k = cvt_key(dst, src, mods)
    if k in table:
        return
    legal = sorted(x.split(":", 1)[1] for x in table if x.startswith(f"{dst}.{src}:"))
    shown = ", ".join("." + x.replace(".", " .") if x else "(none)" for x in legal)
    used = " ".join("." + m for m in mods if m) or "no modifiers"
    raise VerifyError(f"Illegal modifier combination for 'cvt.{dst}.{src}': {used}", ins.loc,
                      expected=f"one of the combinations ptxas accepts: {shown}" if legal else
                      f"no cvt.{dst}.{src} form exists")


def _check_target(ins, info, dst, src, rnd, satfinite, relu) -> None:
    """Target requirements of the newer cvt forms (as ptxas 13.0 reports them)."""
    num, arch = _arch_num(info)
    ts = (dst, src)
    for fam, label in ((("e2m1x2",), ".e2m1x2"), (("e2m3x2", "e3m2x2"), ".e2m3x2/.e3m2x2"), (("ue8m0x2",), ".ue8m0x2")):
        if any(t in fam for t in ts) and (num < 100 or not arch.endswith(("a", "f"))):
            raise VerifyError(f"Instruction 'cvt with {label}' not supported on .target '{arch}'", ins.loc,
                              expected="sm_100a or another family-specific Blackwell target")
    if any(t in ("e4m3x2", "e5m2x2") for t in ts) and num < 89:
        raise VerifyError("Feature 'cvt with .e4m3x2/.e5m2x2' requires .target sm_89 or higher", ins.loc)
    if set(ts) == {"bf16", "f16"} and num < 90:
        raise VerifyError(f"Feature 'cvt with .{dst}.{src}' requires .target sm_90 or higher", ins.loc)
    if dst == "tf32" and rnd in ("rn", "rz") and satfinite and num < 100:
        raise VerifyError(f"Modifier '.satfinite' on 'cvt.tf32.f32.{rnd}' requires .target sm_100 or higher", ins.loc)


@dataclass(frozen=True)
class CvtPackForm:
    """A checked ``cvt.pack.sat.{u16|s16}.s32 d, a, b`` / ``cvt.pack.sat.{u8|s8|u4|s4|u2|s2}.s32.b32 d, a, b, c``:
    the destination element type ``ctype`` and its ``width`` in bits, the operands."""

    ctype: str
    width: int
    dst: object
    a: object
    b: object
    c: object = None


def parse_cvt_pack(ins: ir.Instruction, info) -> CvtPackForm:
    """A cvt.pack.sat (PTX ISA §9.7.9.22): qualifiers, types and operands."""
    m = Mods(ins, "cvt.pack")
    m.flag("pack")
    sat = m.flag("sat")
    rest = [x for x in m.left if x in PACK_WIDTH or x in ("s32", "b32")]
    for x in rest:
        m.left.remove(x)
    m.done()
    if not sat:
        raise VerifyError("Modifier '.sat' required for instruction 'cvt.pack'", ins.loc)
    if not rest or rest[0] not in PACK_WIDTH:
        raise VerifyError("Unexpected instruction types specified for 'cvt.pack'", ins.loc)
    ct = rest[0]
    n = PACK_WIDTH[ct]
    want = ["s32"] if n == 16 else ["s32", "b32"]
    if rest[1:] != want:
        raise VerifyError("Unexpected instruction types specified for 'cvt.pack'", ins.loc,
                          expected=f"cvt.pack.sat.{ct}.{'.'.join(want)}")
    check_count(ins, 3 if n == 16 else 4)
    d = ins.operands[0]
    check_dst(ins, info, d, "b32")
    check_src(ins, info, ins.operands[1], "s32")
    check_src(ins, info, ins.operands[2], "s32")
    if n != 16:
        check_src(ins, info, ins.operands[3], "b32")
    return CvtPackForm(ct, n, d, ins.operands[1], ins.operands[2], ins.operands[3] if n != 16 else None)


__all__ = ["INT", "FLOATS", "PACKED", "X4", "RND", "PACK_WIDTH", "CvtForm", "CvtPackForm", "container", "reg_type",
           "parse_cvt", "check_cvt_operands", "parse_cvt_pack"]
