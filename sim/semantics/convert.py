"""Conversions: cvt (every scalar and packed form tcsim's numerics know) and cvt.pack.sat.

PTX ISA 9.1 §9.7.9.21 cvt and §9.7.9.22 cvt.pack.  The conversion arithmetic (rounding, saturation,
.relu/.satfinite, NaN handling, packed element order) is :func:`tcsim.numerics.convert.cvt` /
:func:`tcsim.numerics.convert.cvt_pair`; the qualifiers, types, targets and operands are parsed and
checked by :mod:`tcsim.isa.convert_forms` (frozen ``CvtForm`` / ``CvtPackForm``); this module asks those
numerics functions once at decode time whether they implement the form (a ValueError there becomes a
VerifyError naming the rule) and moves register bits.

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

from tcsim.isa.convert_forms import INT, check_cvt_operands, container as _container, parse_cvt, parse_cvt_pack
from tcsim.isa.errors import UnsupportedError, VerifyError
from tcsim.isa.operand_rules import type_size
from tcsim.numerics import convert as numcvt
from ..ptxtypes import view_dtype
from .registry import semantics

_DT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


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
    form = parse_cvt(ins, info)
    dst, src, rnd, relu, satfinite, pair = form.dst, form.src, form.rnd, form.relu, form.satfinite, form.pair
    kw = dict(rnd=rnd, ftz=form.ftz, sat=form.sat, relu=relu, satfinite=satfinite)
    if pair:
        _verify(ins, numcvt.cvt_pair, dst, np.zeros(1, np.uint32), np.zeros(1, np.uint32), rnd=rnd, relu=relu,
                satfinite=satfinite)
        d, a, b = check_cvt_operands(ins, info, form)

        def run(ctx):
            r = numcvt.cvt_pair(dst, _read(ctx, a, "f32"), _read(ctx, b, "f32"), rnd=rnd, relu=relu,
                                satfinite=satfinite)
            _write(ctx, d, dst, r)
        return run

    _verify(ins, numcvt.cvt, dst, src, np.zeros(1, _DT[type_size(src)]), **kw)
    d, a = check_cvt_operands(ins, info, form)

    def run(ctx):
        _write(ctx, d, dst, numcvt.cvt(dst, src, _read(ctx, a, src), **kw))
    return run


@semantics("cvt.pack")
def decode_cvt_pack(ins, info):
    """PTX ISA 9.1 §9.7.9.22 cvt.pack: saturate two .s32 values to a narrow integer type and pack them,
    a in the upper and b in the lower element; the 8/4/2-bit forms shift c left by twice the element width
    and place it above: ``d = c << 2n | sat(a) << n | sat(b)``."""
    form = parse_cvt_pack(ins, info)
    ct, n, d, a, b, c = form.ctype, form.width, form.dst, form.a, form.b, form.c
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
