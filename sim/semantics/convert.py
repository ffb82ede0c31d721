"""Conversions: cvt (every scalar and packed form tcsim's numerics know) and cvt.pack.sat.

PTX ISA 9.1 §9.7.9.21 cvt and §9.7.9.22 cvt.pack.  The conversion arithmetic (rounding, saturation,
.relu/.satfinite, NaN handling, packed element order) is :func:`tcsim.numerics.convert.cvt` /
:func:`tcsim.numerics.convert.cvt_pair`; this module picks the form, validates it once at decode time by
asking those functions (a ValueError there becomes a VerifyError naming the rule), and moves register bits.

Register rules (§6.4.2, "Operand Size Exceeding Instruction-Type Size"): cvt accepts source and
destination registers wider than the instruction types; a narrow source is truncated from the register, a
narrow result is sign-extended (signed integer destination types) or zero-extended into the register.

Forms:
* ``cvt{.irnd|.frnd}{.ftz}{.sat}.dtype.atype d, a`` (integers u8..s64, f16 bf16 f32 f64);
* ``cvt.frnd{.relu}{.satfinite}.{f16,bf16}.f32 d, a``, ``cvt.{rna,rn,rz}{.satfinite}{.relu}.tf32.f32``;
* two-source packed ``cvt.rnd{.relu}{.satfinite}.{f16x2,bf16x2,e4m3x2,e5m2x2,e2m3x2,e3m2x2,e2m1x2,
  ue8m0x2}.f32 d, a, b`` (a -> upper element, b -> lower);
* single-source packed ``.{e4m3x2,e5m2x2}.f16x2``, ``.f16x2.{e4m3x2,e5m2x2,e2m1x2,e2m3x2,e3m2x2}``,
  ``.ue8m0x2.bf16x2``, ``.bf16x2.ue8m0x2``;
* ``cvt.pack.sat.{u16,s16}.s32 d, a, b`` and ``cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32 d, a, b, c``.

Not supported (UnsupportedError at decode): stochastic rounding ``.rs`` (and its x4 forms), the PTX 9.1
bf16x2 -> f8x2/f6x2/f4x2 and s2f6x2 forms, f32x2 destinations (whatever sim.numerics.convert refuses as
unsupported).
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import cvt_forms
from tcsim.isa.errors import UnsupportedError, VerifyError
from tcsim.isa.gen_cvt_forms import key as cvt_key
from tcsim.numerics import convert as numcvt
from ..ptxtypes import view_dtype
from tcsim.isa.operand_rules import Mods, check_count, check_dst, check_src, type_size
from .registry import semantics

INT = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
FLOATS = ("f16", "bf16", "f32", "f64", "tf32")
PACKED = ("f16x2", "bf16x2", "e4m3x2", "e5m2x2", "e2m3x2", "e3m2x2", "e2m1x2", "ue8m0x2")
X4 = ("e4m3x4", "e5m2x4", "e2m3x4", "e3m2x4", "e2m1x4")
RND = ("rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi", "rs")
_CONT = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}
_DT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _container(t: str) -> str:
    return _CONT[type_size(t)]


def _read(ctx, op, t: str) -> np.ndarray:
    """Raw bits of a cvt source of type t (unsigned container)."""
    if t == "f32":
        return ctx.read(op, "f32").view(np.uint32)
    if t == "f64":
        return ctx.read(op, "f64").view(np.uint64)
    if t in INT:
        return ctx.read(op, t).view(_DT[type_size(t)])
    return ctx.read(op, _container(t))


def _write(ctx, op, t: str, bits) -> None:
    bits = np.asarray(bits).astype(_DT[type_size(t)])
    if t in INT:
        ctx.write(op, t, bits.view(view_dtype(t)))
    else:
        ctx.write(op, _container(t), bits)


def _reg_type(t: str) -> str:
    """Type used for the operand checks (formats without a register type live in bit registers)."""
    return t if t in INT + ("f16", "f32", "f64", "f16x2") else _container(t)


def _verify(ins, fn, *args, **kw):
    rnd = kw.get("rnd")
    try:
        fn(*args, **kw)
    except ValueError as e:
        msg = str(e)
        if "not supported" in msg or "Unsupported" in msg:
            raise UnsupportedError(f"{ins.full_opcode}: {msg}", ins.loc) from None
        if rnd is None and "requires" in msg:
            raise VerifyError("Rounding modifier required for instruction 'cvt'", ins.loc, expected=msg) from None
        raise VerifyError(f"Illegal form of instruction 'cvt': {msg}", ins.loc) from None


@semantics("cvt")
def decode_cvt(ins, info):
    """PTX ISA 9.1 §9.7.9.21 cvt: convert between integer, floating-point and packed low-precision types
    (rounding ``.rni .rzi .rmi .rpi`` / ``.rn .rz .rm .rp .rna``, ``.ftz .sat .relu .satfinite``)."""
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
    kw = dict(rnd=rnd, ftz=ftz, sat=sat, relu=relu, satfinite=satfinite)
    _check_target(ins, info, dst, src, rnd, satfinite, relu)
    if dst in FLOATS and src in FLOATS:
        _check_float_form(ins, info, dst, src, (rnd, "ftz" if ftz else None, "sat" if sat else None,
                                                "relu" if relu else None, "satfinite" if satfinite else None))
    pair = dst in PACKED and src == "f32"
    if pair:
        if ftz or sat:
            raise VerifyError(f"Illegal modifier '.{'ftz' if ftz else 'sat'}' for instruction 'cvt'", ins.loc)
        _verify(ins, numcvt.cvt_pair, dst, np.zeros(1, np.uint32), np.zeros(1, np.uint32), rnd=rnd, relu=relu,
                satfinite=satfinite)
        check_count(ins, 3)
        d, a, b = ins.operands
        check_dst(ins, info, d, _reg_type(dst), wider=True)
        check_src(ins, info, a, "f32", wider=True)
        check_src(ins, info, b, "f32", wider=True)

        def run(ctx):
            r = numcvt.cvt_pair(dst, _read(ctx, a, "f32"), _read(ctx, b, "f32"), rnd=rnd, relu=relu,
                                satfinite=satfinite)
            _write(ctx, d, dst, r)
        return run

    _verify(ins, numcvt.cvt, dst, src, np.zeros(1, _DT[type_size(src)]), **kw)
    check_count(ins, 2)
    d, a = ins.operands
    check_dst(ins, info, d, _reg_type(dst), wider=True)
    check_src(ins, info, a, _reg_type(src), wider=True)

    def run(ctx):
        _write(ctx, d, dst, numcvt.cvt(dst, src, _read(ctx, a, src), **kw))
    return run


def _arch_num(info) -> tuple:
    arch = info.arch or "sm_100a"
    digits = "".join(ch for ch in arch[3:] if ch.isdigit())
    return (int(digits) if digits else 100), arch


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


_PACK_WIDTH = {"u16": 16, "s16": 16, "u8": 8, "s8": 8, "u4": 4, "s4": 4, "u2": 2, "s2": 2}


@semantics("cvt.pack")
def decode_cvt_pack(ins, info):
    """PTX ISA 9.1 §9.7.9.22 cvt.pack: saturate two .s32 values to a narrow integer type and pack them,
    a in the upper and b in the lower element; the 8/4/2-bit forms shift c left by twice the element width
    and place it above: ``d = c << 2n | sat(a) << n | sat(b)``."""
    m = Mods(ins, "cvt.pack")
    m.flag("pack")
    sat = m.flag("sat")
    rest = [x for x in m.left if x in _PACK_WIDTH or x in ("s32", "b32")]
    for x in rest:
        m.left.remove(x)
    m.done()
    if not sat:
        raise VerifyError("Modifier '.sat' required for instruction 'cvt.pack'", ins.loc)
    if not rest or rest[0] not in _PACK_WIDTH:
        raise VerifyError("Unexpected instruction types specified for 'cvt.pack'", ins.loc)
    ct = rest[0]
    n = _PACK_WIDTH[ct]
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
    a, b = ins.operands[1], ins.operands[2]
    c = ins.operands[3] if n != 16 else None
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if ct[0] == "s" else (0, (1 << n) - 1)
    mask = (1 << n) - 1

    def run(ctx):
        ta = np.clip(ctx.read(a, "s32").astype(np.int64), lo, hi) & mask
        tb = np.clip(ctx.read(b, "s32").astype(np.int64), lo, hi) & mask
        r = (ta << n) | tb
        if c is not None:
            r = r | ((ctx.read(c, "b32").astype(np.int64) << (2 * n)) & 0xFFFFFFFF)
        ctx.write(d, "b32", (r & 0xFFFFFFFF).astype(np.uint32))
    return run
