"""Comparison and selection: setp, set, selp, slct.

PTX ISA 9.1 §9.7.6 (comparison and selection instructions: §9.7.6.1 set, §9.7.6.2 setp, §9.7.6.3 selp,
§9.7.6.4 slct) and their half-precision forms §9.7.4.10 set / §9.7.4.11 setp (``.f16 .f16x2 .bf16 .bf16x2``).

Comparison operators (§9.7.6, tables "Operators for signed integer, unsigned integer, bit-size and
floating-point types"): signed ``eq ne lt le gt ge``; unsigned also ``lo ls hi hs``; bit-size ``eq ne``;
floating point ``eq ne lt le gt ge`` (ordered: false on NaN), ``equ neu ltu leu gtu geu`` (unordered: true
on NaN), ``num``, ``nan``.  Floating-point comparisons come from :func:`tcsim.numerics.fp.fcompare`.

``setp`` writes ``p = BoolOp(t, c)`` and ``q = BoolOp(!t, c)``; for packed ``.f16x2/.bf16x2`` the low
half's result goes to ``p`` and the high half's to ``q`` (not a complement).  ``set`` writes all ones
(integer destinations; per 16-bit half for packed sources) or 1.0 in the destination float format.

Not supported: nothing of §9.7.6 is left out.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.errors import VerifyError
from tcsim.numerics.fp import fcompare, packed2
from tcsim.isa.operand_rules import Mods, check_count, check_dst, check_src, split_pred_pair
from .misc_alu import bool_op
from .registry import semantics

SIGNED_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
UNSIGNED_OPS = SIGNED_OPS + ("lo", "ls", "hi", "hs")
BIT_OPS = ("eq", "ne")
FLOAT_OPS = SIGNED_OPS + ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
ALL_OPS = tuple(dict.fromkeys(UNSIGNED_OPS + FLOAT_OPS))
BOOL_OPS = ("and", "or", "xor")

INT_STYPES = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64")
STD_STYPES = INT_STYPES + ("f32", "f64")
HALF_STYPES = ("f16", "bf16", "f16x2", "bf16x2")
_UNSIGNED_ALIAS = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}
#: 1.0 in each float destination format
ONE_BITS = {"f32": 0x3F800000, "f16": 0x3C00, "bf16": 0x3F80}


def _ops_for(stype: str):
    if stype in HALF_STYPES or stype in ("f32", "f64"):
        return FLOAT_OPS
    if stype[0] == "b":
        return BIT_OPS
    if stype[0] == "s":
        return SIGNED_OPS
    if stype[0] == "u":
        return UNSIGNED_OPS
    return FLOAT_OPS


def _reg_type(stype: str) -> str:
    return {"bf16": "b16", "bf16x2": "b32"}.get(stype, stype)


def _compare_fn(ins, stype: str, cmp: str, ftz: bool):
    """Return fn(ctx, a, b) -> bool array (or a (low, high) pair for packed halves)."""
    if cmp not in _ops_for(stype):
        raise VerifyError("Mismatch between instruction type and comparison qualifier", ins.loc,
                          expected=f"one of {', '.join(_ops_for(stype))} for .{stype}")
    if ftz and stype not in ("f32", "f16", "f16x2"):
        raise VerifyError(f"Illegal modifier '.ftz' for instruction '{ins.opcode}'", ins.loc)
    if stype in ("f32", "f64", "f16", "bf16"):
        rt = "b16" if stype in ("f16", "bf16") else stype
        view = {"f32": np.uint32, "f64": np.uint64}.get(stype)

        def fn(ctx, a, b):
            x, y = ctx.read(a, rt), ctx.read(b, rt)
            if view is not None:
                x, y = x.view(view), y.view(view)
            return fcompare(stype, cmp, x, y, ftz=ftz)
        return fn
    if stype in ("f16x2", "bf16x2"):
        el = stype[:-2]

        def fn(ctx, a, b):
            return packed2(fcompare, el, cmp, ctx.read(a, "b32"), ctx.read(b, "b32"), ftz=ftz)
        return fn
    op = _UNSIGNED_ALIAS.get(cmp, cmp)
    f = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
         "ge": np.greater_equal}[op]

    def fn(ctx, a, b):
        return f(ctx.read(a, stype), ctx.read(b, stype))
    return fn


def _parse_cmp(ins, m: Mods):
    cmp = m.one_of(ALL_OPS, "comparison")
    if cmp is None:
        raise VerifyError(f"Comparison operator required for instruction '{ins.opcode}'", ins.loc)
    boolop = m.one_of(BOOL_OPS, "boolean operation")
    ftz = m.flag("ftz")
    return cmp, boolop, ftz


@semantics("setp")
def decode_setp(ins, info):
    """PTX ISA 9.1 §9.7.6.2 setp (and §9.7.4.11 half-precision setp): ``p[|q] = BoolOp(a CmpOp b, {!}c)``."""
    m = Mods(ins)
    cmp, boolop, ftz = _parse_cmp(ins, m)
    stype = m.type(STD_STYPES + HALF_STYPES)
    m.done()
    fn = _compare_fn(ins, stype, cmp, ftz)
    ops = ins.operands
    if boolop is None and len(ops) == 4:
        raise VerifyError("Boolean operation is required for instruction 'setp'", ins.loc)
    check_count(ins, 4 if boolop else 3)
    p, q = split_pred_pair(ins, ops[0])
    check_dst(ins, info, p, "pred", sink=True)
    if q is not None:
        check_dst(ins, info, q, "pred", sink=True)
    rt = _reg_type(stype)
    check_src(ins, info, ops[1], rt)
    check_src(ins, info, ops[2], rt)
    c = ops[3] if boolop else None
    if c is not None:
        check_src(ins, info, c, "pred")
    a, b = ops[1], ops[2]
    packed = stype in ("f16x2", "bf16x2")

    def run(ctx):
        t = fn(ctx, a, b)
        cv = ctx.read_pred(c) if c is not None else None
        # q is written before p: with p and q the same register (PTX leaves that open) the H100 keeps p
        # (calib/probes group setp_alias, every comparison and type probed)
        if packed:
            t_lo, t_hi = t
            if q is not None:
                ctx.write_pred(q, bool_op(boolop, t_hi, cv))
            ctx.write_pred(p, bool_op(boolop, t_lo, cv))
            return
        if q is not None:
            ctx.write_pred(q, bool_op(boolop, ~t, cv))
        ctx.write_pred(p, bool_op(boolop, t, cv))
    return run


@semantics("set")
def decode_set(ins, info):
    """PTX ISA 9.1 §9.7.6.1 set (and §9.7.4.10 half-precision set): ``d = BoolOp(a CmpOp b, {!}c)`` as all
    ones (integer destination) or 1.0 (float destination), else 0."""
    m = Mods(ins)
    cmp, boolop, ftz = _parse_cmp(ins, m)
    ts = m.types()
    m.done()
    if len(ts) != 2:
        raise VerifyError("Unexpected instruction types specified for 'set'", ins.loc,
                          expected="a destination and a source type (set.CmpOp.dtype.stype)")
    dtype, stype = ts
    ok = ((dtype in ("u32", "s32", "f32") and stype in STD_STYPES + ("f16", "bf16"))
          or (dtype in ("f16", "bf16") and stype in STD_STYPES + ("f16",))
          or (dtype == "bf16" and stype == "bf16")
          or (dtype in ("u16", "s16") and stype in ("f16", "bf16"))
          or (stype == "f16x2" and dtype in ("f16x2", "u32", "s32"))
          or (stype == "bf16x2" and dtype in ("bf16x2", "u32", "s32")))
    if dtype == "f32" and stype in ("f16", "bf16"):
        ok = False
    if not ok:
        raise VerifyError("Unexpected instruction types specified for 'set'", ins.loc)
    fn = _compare_fn(ins, stype, cmp, ftz)
    ops = ins.operands
    if boolop is None and len(ops) == 4:
        raise VerifyError("Boolean operation is required for instruction 'set'", ins.loc)
    check_count(ins, 4 if boolop else 3)
    drt = _reg_type(dtype)
    check_dst(ins, info, ops[0], drt)
    rt = _reg_type(stype)
    check_src(ins, info, ops[1], rt)
    check_src(ins, info, ops[2], rt)
    c = ops[3] if boolop else None
    if c is not None:
        check_src(ins, info, c, "pred")
    d, a, b = ops[:3]
    if stype in ("f16x2", "bf16x2"):
        one = {"f16x2": 0x3C00, "bf16x2": 0x3F80}.get(dtype, 0xFFFF)

        def run(ctx):
            t_lo, t_hi = fn(ctx, a, b)
            cv = ctx.read_pred(c) if c is not None else None
            lo = np.where(bool_op(boolop, t_lo, cv), one, 0).astype(np.uint32)
            hi = np.where(bool_op(boolop, t_hi, cv), one, 0).astype(np.uint32)
            ctx.write(d, "b32", lo | (hi << np.uint32(16)))
        return run
    width = 16 if dtype in ("u16", "s16", "f16", "bf16") else 32
    true_bits = ONE_BITS.get(dtype, (1 << width) - 1)
    dt = np.uint16 if width == 16 else np.uint32

    def run(ctx):
        t = fn(ctx, a, b)
        cv = ctx.read_pred(c) if c is not None else None
        r = np.where(bool_op(boolop, t, cv), true_bits, 0).astype(dt)
        ctx.write(d, f"b{width}", r)
    return run


@semantics("selp")
def decode_selp(ins, info):
    """PTX ISA 9.1 §9.7.6.3 selp: ``d = c ? a : b`` with a predicate c (``!c`` allowed)."""
    m = Mods(ins)
    t = m.type(STD_STYPES)
    m.done()
    check_count(ins, 4)
    d, a, b, c = ins.operands
    check_dst(ins, info, d, t)
    check_src(ins, info, a, t)
    check_src(ins, info, b, t)
    check_src(ins, info, c, "pred")

    def run(ctx):
        ctx.write(d, t, np.where(ctx.read_pred(c), ctx.read(a, t), ctx.read(b, t)))
    return run


@semantics("slct")
def decode_slct(ins, info):
    """PTX ISA 9.1 §9.7.6.4 slct: ``d = (c >= 0) ? a : b`` with c .s32 or .f32 (``.ftz`` flushes a
    subnormal c to a signed zero; -0 >= 0 holds; a NaN c selects b)."""
    m = Mods(ins)
    ftz = m.flag("ftz")
    ts = m.types()
    m.done()
    if len(ts) != 2 or ts[0] not in STD_STYPES or ts[1] not in ("s32", "f32"):
        raise VerifyError("Unexpected instruction types specified for 'slct'", ins.loc,
                          expected="slct.dtype.s32 or slct.dtype.f32")
    t, ct = ts
    if ftz and ct != "f32":
        raise VerifyError("Illegal modifier '.ftz' for instruction 'slct'", ins.loc)
    check_count(ins, 4)
    d, a, b, c = ins.operands
    check_dst(ins, info, d, t)
    check_src(ins, info, a, t)
    check_src(ins, info, b, t)
    check_src(ins, info, c, ct)
    zero = np.zeros(32, np.uint32)

    def run(ctx):
        if ct == "s32":
            sel = ctx.read(c, "s32") >= 0
        else:
            sel = fcompare("f32", "ge", ctx.read(c, "f32").view(np.uint32), zero, ftz=ftz)
        ctx.write(d, t, np.where(sel, ctx.read(a, t), ctx.read(b, t)))
    return run
