"""Floating-point arithmetic: add sub mul fma mad div rcp sqrt rsqrt sin cos lg2 ex2 tanh abs neg min max
copysign testp, on .f32 .f64 .f16 .f16x2 .bf16 .bf16x2 and the sm_100 packed .f32x2.

PTX ISA 9.1 §9.7.3 (floating-point instructions) and §9.7.4 (half-precision floating-point instructions).
All bit-exact arithmetic comes from :mod:`tcsim.numerics.fp` (correctly rounded IEEE operations on raw bit
patterns) and :mod:`tcsim.numerics.approx` (the ``.approx`` functions); the qualifiers, types and operands are
parsed and checked by :func:`tcsim.isa.float_forms.parse_float` (ptxas's rules, with ptxas's wording; a frozen
:class:`~tcsim.isa.float_forms.FloatForm`), and this module moves bits between registers and those functions.

Qualifier rules enforced at decode (all checked against ptxas 13.0):

* rounding ``.rn .rz .rm .rp``: f32/f64/f32x2 any; f16/bf16 (and x2) ``.rn`` only; ``add/sub/mul`` default
  to ``.rn`` when none is given; ``fma`` and ``mad`` need one (``mad.f32`` without a rounding modifier is
  the sm_1x form and is rejected, as ptxas does for every sm_20+ target);
* ``.ftz``: f32, f32x2, f16, f16x2 only; ``.sat``: f32, f16, f16x2 only; ``.relu``: ``fma.rn`` on
  f16/bf16 (x2), not with ``.sat``;
* mixed precision ``add/sub{.rnd}{.sat}.f32.{f16,bf16} d, a, c`` and ``fma.rnd{.sat}.f32.{f16,bf16}``
  (sm_100): the half operands widen exactly, then one f32 rounding.

``div.approx.f32`` / ``div.full.f32`` are modelled as ``a * rcp.approx.ftz(b)`` with ptxas's operand scaling
(see :func:`div_approx_f32`): identical to the H100 on 2**32 hashed operand pairs (calib/approx/verify.py), and
``rcp.approx`` in sim.numerics.approx is exhaustively bit-exact, so these are too.

Not supported (UnsupportedError at decode): ``fma.oob`` (out-of-bounds operand handling), stochastic
rounding ``.rs``.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir

from tcsim.isa.errors import UnsupportedError
from tcsim import lowering
from tcsim.numerics import fp
from tcsim.isa.float_forms import parse_float
from .registry import semantics

_CONTAINER = {"f32": "b32", "f64": "b64", "f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32",
              "f32x2": "b64"}
_SIGN = {"f32": 0x80000000, "f64": 0x8000000000000000, "f16": 0x8000, "bf16": 0x8000}


def _elem(t: str) -> str:
    return {"f16x2": "f16", "bf16x2": "bf16", "f32x2": "f32"}.get(t, t)


def read_bits(ctx, op, t: str) -> np.ndarray:
    """Raw bits of a float operand (uint16/32/64 per container)."""
    if t == "f32":
        return ctx.read(op, "f32").view(np.uint32)
    if t == "f64":
        return ctx.read(op, "f64").view(np.uint64)
    return ctx.read(op, _CONTAINER[t])


def write_bits(ctx, op, t: str, bits) -> None:
    ctx.write(op, _CONTAINER[t], np.asarray(bits).astype({"b16": np.uint16, "b32": np.uint32,
                                                          "b64": np.uint64}[_CONTAINER[t]]))


def lanewise(fn, t: str, *xs, **kw):
    """Apply a scalar numerics function (fmt first) to scalar or packed operands."""
    if t in ("f16x2", "bf16x2"):
        return fp.packed2(fn, _elem(t), *xs, **kw)
    if t == "f32x2":
        lo = [(np.asarray(x, np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32) for x in xs]
        hi = [(np.asarray(x, np.uint64) >> np.uint64(32)).astype(np.uint32) for x in xs]
        r0 = np.asarray(fn("f32", *lo, **kw)).astype(np.uint64)
        r1 = np.asarray(fn("f32", *hi, **kw)).astype(np.uint64)
        return r0 | (r1 << np.uint64(32))
    return fn(t, *xs, **kw)


# ============================================================================================ add sub mul
@semantics("add:float", "sub:float", "mul:float")
def decode_add_sub_mul(ins, info):
    """PTX ISA 9.1 §9.7.3.1 add, §9.7.3.2 sub, §9.7.3.3 mul (f32/f64/f32x2, ``.rnd .ftz .sat``) and
    §9.7.4.1-3 (f16/bf16 and packed x2, ``.rn``); mixed ``add/sub.f32.{f16,bf16}`` (§9.7.3.1)."""
    form = parse_float(ins, info)
    if form.atype is not None:
        return _decode_mixed(form)
    t, rnd, ftz, sat = form.type, form.rnd, form.ftz, form.sat
    d, (a, b) = form.dst, form.srcs
    fn = {"add": fp.fadd, "sub": fp.fsub, "mul": fp.fmul}[ins.opcode]
    prio = sass_nan_priority(info, ins, ins.opcode, (a, b)) if t == "f64" else None

    def run(ctx):
        xs = (read_bits(ctx, a, t), read_bits(ctx, b, t))
        r = lanewise(fn, t, xs[0], xs[1], rnd=rnd, ftz=ftz, sat=sat)
        if prio is not None:
            r = fp.propagate_nan64(r, *(xs[i] ^ flip for i, flip in prio))
        write_bits(ctx, d, t, r)
    return run


#: the sign bit of an f64, as ptxas flips it when it negates an immediate subtrahend at compile time
_F64_SIGN = np.uint64(1 << 63)


def sass_nan_priority(info, ins, opcode: str, srcs) -> list:
    """Which f64 source's NaN the H100 returns when several are NaN, as (source index, xor mask) in priority
    order.  The hardware rule is fixed -- DADD/DMUL/DMNMX return the second SASS operand's NaN, DFMA the second
    multiplicand's, then the addend's, then the first multiplicand's (the numerics' own order) -- but ptxas
    freely commutes operands: it puts the two commutative sources in the order their values were defined (the
    source whose textually last definition comes first goes first; registers never written before -- loaded in
    the prologue -- in declaration order), immediates last, and folds ``sub a, imm`` into ``add a, -imm`` with
    the immediate's sign bit flipped (a register's negation leaves a NaN's sign alone).  Established on the H100
    with ptxas 13.0 from the SASS of the probe kernels (``calib/probes`` group f64_nan: every operand order and
    permutation) and of the fuzz reproducers; the definition order explains 133 of 300 recorded fuzz programs
    with f64 NaN mismatches that declaration order alone left unexplained (tests/golden/fuzz_campaign)."""
    order = {name: i for i, name in enumerate(info.function.regs)}

    def key(i):
        op = srcs[i]
        if isinstance(op, ir.Reg):
            return (0, ir.last_def(info.function.body, ins.index, op.name), order.get(op.name, len(order)))
        return (1, 0, 0)

    zero = np.uint64(0)
    flips = [zero] * len(srcs)
    if opcode == "sub" and not isinstance(srcs[1], ir.Reg):
        flips[1] = _F64_SIGN
    ra, rb = sorted((0, 1), key=key)
    if lowering.active(info.lowering, "f64-nan-swap", ins.loc.line):
        ra, rb = rb, ra
    if opcode in ("fma", "mad"):
        return [(rb, flips[rb]), (2, zero), (ra, flips[ra])]
    return [(rb, flips[rb]), (ra, flips[ra])]


def _widen_half(bits: np.ndarray, t: str) -> np.ndarray:
    from tcsim.isa.formats import decode, encode
    return encode("f32", decode(t, bits))   # exact: every f16/bf16 value is an f32 value


def _decode_mixed(form):
    """``add/sub{.rnd}{.sat}.f32.{f16|bf16} d, a, c``: the half source widens exactly, then one f32 rounding."""
    at, rnd, sat = form.atype, form.rnd, form.sat
    d, (a, c) = form.dst, form.srcs
    fn = fp.fadd if form.op == "add" else fp.fsub

    def run(ctx):
        r = fn("f32", _widen_half(read_bits(ctx, a, at), at), read_bits(ctx, c, "f32"), rnd=rnd, sat=sat)
        write_bits(ctx, d, "f32", r)
    return run


# ============================================================================================ fma / mad
@semantics("fma")
@semantics("mad:float")
def decode_fma(ins, info):
    """PTX ISA 9.1 §9.7.3.5 fma, §9.7.3.6 mad (= fma with a required rounding modifier on sm_20+),
    §9.7.4.4 fma (half precision, ``.relu``), mixed ``fma.rnd.f32.{f16,bf16}``."""
    form = parse_float(ins, info)
    if form.atype is not None:
        at, rnd, sat = form.atype, form.rnd, form.sat
        d, (a, b, c) = form.dst, form.srcs

        def run(ctx):
            r = fp.ffma("f32", _widen_half(read_bits(ctx, a, at), at), _widen_half(read_bits(ctx, b, at), at),
                        read_bits(ctx, c, "f32"), rnd=rnd, sat=sat)
            write_bits(ctx, d, "f32", r)
        return run
    t, rnd, ftz, sat, relu = form.type, form.rnd, form.ftz, form.sat, form.relu
    d, (a, b, c) = form.dst, form.srcs
    kw = {"rnd": rnd, "ftz": ftz, "sat": sat}
    if relu:
        kw["relu"] = True

    prio = sass_nan_priority(info, ins, "fma", (a, b, c)) if t == "f64" else None

    def run(ctx):
        xs = (read_bits(ctx, a, t), read_bits(ctx, b, t), read_bits(ctx, c, t))
        r = lanewise(fp.ffma, t, *xs, **kw)
        if prio is not None:
            r = fp.propagate_nan64(r, *(xs[i] ^ flip for i, flip in prio))
        write_bits(ctx, d, t, r)
    return run


# ============================================================================================ div rcp sqrt
def _approx_module(ins):
    try:
        from tcsim.numerics import approx
    except ImportError:
        raise UnsupportedError(f"{ins.full_opcode}: the approximate-function numerics (sim/numerics/approx.py) "
                               "are not available", ins.loc) from None
    return approx


def _approx_fn(ins, *names):
    """The first of ``names`` that sim.numerics.approx defines (decode-time lookup)."""
    approx = _approx_module(ins)
    for n in names:
        f = getattr(approx, n, None)
        if f is not None:
            return f
    raise UnsupportedError(f"{ins.full_opcode} is not supported: sim.numerics.approx has none of "
                           f"{', '.join(names)}", ins.loc)


@semantics("div:float")
def decode_div(ins, info):
    """PTX ISA 9.1 §9.7.3.8 div (floating point): ``div.approx{.ftz}.f32``, ``div.full{.ftz}.f32``,
    ``div.rnd{.ftz}.f32``, ``div.rnd.f64``."""
    form = parse_float(ins, info)
    t, rnd, ftz, approx, full = form.type, form.rnd, form.ftz, form.approx, form.full
    d, (a, b) = form.dst, form.srcs
    if approx or full:
        rcp = _approx_fn(ins, "rcp_approx")

        def run(ctx):
            write_bits(ctx, d, t, div_approx_f32(rcp, read_bits(ctx, a, t), read_bits(ctx, b, t), ftz, full))
        return run

    def run(ctx):
        write_bits(ctx, d, t, fp.fdiv(t, read_bits(ctx, a, t), read_bits(ctx, b, t), rnd=rnd, ftz=ftz))
    return run


#: |b| at or above which div.full.f32 scales both operands by 1/4 before the reciprocal (so that 1/b stays
#: normal); div.approx.f32 does not, and its reciprocal of such b flushes to zero (PTX ISA §9.7.3.8, CUDA
#: __fdividef: "returns 0 for 2**126 < |y| < 2**128")
DIV_FULL_SCALE_THRESHOLD = 2.0 ** 126


#: non-.ftz div.approx/div.full scale a subnormal divisor (and the dividend) by 2**24 first
DIV_SUBNORMAL_SCALE = 0x4B800000       # 2**24 as f32 bits


def div_approx_f32(rcp, a: np.ndarray, b: np.ndarray, ftz: bool, full: bool) -> np.ndarray:
    """div.approx / div.full model: ``a * rcp.approx.ftz(b)`` with one f32 rounding of the product (with
    .ftz: flushing both; measured identical, bit for bit, to ``mul.rn.ftz(a, rcp.approx.ftz(b))`` on an H100).
    Without .ftz a subnormal b is first scaled (a and b times 2**24) so that the quotient is finite, as the GPU
    does; .full also scales a and b by 1/4 when |b| >= 2**126, where .approx returns 0 (1/b underflows).
    The reciprocal comes from tcsim.numerics.approx, whose accuracy model is documented there."""
    from tcsim.isa.formats import decode
    bv = np.abs(decode("f32", b))
    if full:
        big = bv >= DIV_FULL_SCALE_THRESHOLD
        if big.any():
            q = np.full(b.shape, 0x3E800000, np.uint32)       # 0.25
            a = np.where(big, fp.fmul("f32", a, q), a).astype(np.uint32)
            b = np.where(big, fp.fmul("f32", b, q), b).astype(np.uint32)
    if not ftz:
        tiny = (bv < 2.0 ** -126) & (bv > 0)
        if tiny.any():
            s = np.full(b.shape, DIV_SUBNORMAL_SCALE, np.uint32)
            a = np.where(tiny, fp.fmul("f32", a, s), a).astype(np.uint32)
            b = np.where(tiny, fp.fmul("f32", b, s), b).astype(np.uint32)
    r = rcp(b, ftz=True)
    return fp.fmul("f32", a, r, rnd="rn", ftz=ftz)


@semantics("rcp", "sqrt")
def decode_rcp_sqrt(ins, info):
    """PTX ISA 9.1 §9.7.3.9 rcp (``.approx{.ftz}.f32``, ``.rnd{.ftz}.f32``, ``.rnd.f64``,
    ``.approx.ftz.f64``) and §9.7.3.12 sqrt (``.approx{.ftz}.f32``, ``.rnd{.ftz}.f32``, ``.rnd.f64``)."""
    form = parse_float(ins, info)
    t, rnd, ftz, approx = form.type, form.rnd, form.ftz, form.approx
    name = ins.opcode
    d, (a,) = form.dst, form.srcs
    if approx:
        if t == "f64":
            f = _approx_fn(ins, "rcp_approx_f64", "rcp_approx_ftz_f64")
            def run(ctx):
                write_bits(ctx, d, t, f(read_bits(ctx, a, t)))
            return run
        f = _approx_fn(ins, f"{name}_approx")

        def run(ctx):
            write_bits(ctx, d, t, f(read_bits(ctx, a, t), ftz=ftz))
        return run
    f = fp.frcp if name == "rcp" else fp.fsqrt

    def run(ctx):
        write_bits(ctx, d, t, f(t, read_bits(ctx, a, t), rnd=rnd, ftz=ftz))
    return run


# ============================================================================================ .approx functions
@semantics("rsqrt", "sin", "cos", "lg2", "ex2", "tanh")
def decode_approx(ins, info):
    """PTX ISA 9.1 §9.7.3.13 rsqrt, §9.7.3.14 sin, §9.7.3.15 cos, §9.7.3.16 lg2, §9.7.3.17 ex2,
    §9.7.3.18 tanh and the half-precision §9.7.4.12 ex2 / §9.7.4.13 tanh: ``.approx`` only
    (values from tcsim.numerics.approx)."""
    name = ins.opcode
    form = parse_float(ins, info)
    t, ftz = form.type, form.ftz
    d, (a,) = form.dst, form.srcs
    el = _elem(t)
    if el == "f32":
        f = _approx_fn(ins, f"{name}_approx")

        def scalar(bits):
            return f(bits, ftz=ftz)
    elif el == "f64":
        f = _approx_fn(ins, f"{name}_approx_f64")

        def scalar(bits):
            return f(bits, ftz=ftz)
    else:
        f = _approx_fn(ins, f"{name}_approx_{el}")

        def scalar(bits):
            return f(bits)

    def run(ctx):
        x = read_bits(ctx, a, t)
        if t in ("f16x2", "bf16x2"):
            lo = scalar((x & np.uint32(0xFFFF)).astype(np.uint16)).astype(np.uint32)
            hi = scalar((x >> np.uint32(16)).astype(np.uint16)).astype(np.uint32)
            write_bits(ctx, d, t, lo | (hi << np.uint32(16)))
        else:
            write_bits(ctx, d, t, scalar(x))
    return run


# ============================================================================================ abs neg min max
@semantics("abs:float", "neg:float")
def decode_abs_neg(ins, info):
    """PTX ISA 9.1 §9.7.3.6 abs / §9.7.3.7 neg (f32 ``.ftz``, f64) and §9.7.4.6 / §9.7.4.7 (f16 f16x2
    ``.ftz``, bf16 bf16x2): sign-bit operations; NaN inputs give the GPU's NaN (see _sign_op_nan)."""
    form = parse_float(ins, info)
    t, ftz = form.type, form.ftz
    d, (a,) = form.dst, form.srcs
    fn = fp.fabs if ins.opcode == "abs" else fp.fneg
    is_abs = ins.opcode == "abs"
    bitwise = lowering.active(info.lowering, "sign-ops-bitwise", ins.loc.line)

    def run(ctx):
        x = read_bits(ctx, a, t)
        r = lanewise(fn, t, x, ftz=ftz)
        write_bits(ctx, d, t, lanewise(_sign_op_nan, t, x, r, is_abs=is_abs, bitwise=bitwise))
    return run


def _sign_op_nan(fmt, x, r, is_abs, bitwise=False):
    """NaN results of abs/neg as the GPU gives them (measured on an H100): f32/f16/bf16 give the canonical
    NaN; f64 gives the input NaN quieted, sign and payload unchanged (neither abs nor neg touches the sign of a
    NaN)."""
    x = np.asarray(x)
    if fmt == "f64":
        u = x.astype(np.uint64)
        isnan = (u & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000)
        if bitwise:     # folded away (neg(neg(x)) -> x): not even quieted
            sign = np.uint64(1 << 63)
            return np.where(isnan, u & ~sign if is_abs else u ^ sign, r).astype(np.uint64)
        return np.where(isnan, u | np.uint64(0x0008000000000000), r).astype(np.uint64)
    from tcsim.isa.formats import FORMATS
    f = FORMATS[fmt]
    mag = x.astype(np.uint64) & np.uint64((1 << (f.bits - 1)) - 1)
    isnan = mag > np.uint64(f.inf_code)
    if bitwise:     # folded into a source modifier: a pure sign-bit operation
        sign = np.uint64(1 << (f.bits - 1))
        u = x.astype(np.uint64)
        return np.where(isnan, mag if is_abs else u ^ sign, np.asarray(r).astype(np.uint64)).astype(x.dtype)
    return np.where(isnan, np.uint64(fp.canonical_nan(fmt)), np.asarray(r).astype(np.uint64)).astype(x.dtype)


@semantics("min:float", "max:float")
def decode_min_max(ins, info):
    """PTX ISA 9.1 §9.7.3.10 min / §9.7.3.11 max (``.ftz .NaN .xorsign.abs``; three-input f32 form with
    ``.abs`` on sm_100) and §9.7.4.8 / §9.7.4.9 (half precision)."""
    form = parse_float(ins, info)
    t, ftz, nan, xorsign, absq = form.type, form.ftz, form.nan, form.xorsign, form.abs
    name = ins.opcode
    d, srcs = form.dst, form.srcs
    three = len(srcs) == 3
    fn = fp.fmin if name == "min" else fp.fmax
    if (not three and not (nan or xorsign or ftz) and t in ("f16", "f32", "f64")
            and isinstance(srcs[0], ir.Reg) and srcs[0] == srcs[1]):
        # min/max of a register with itself: ptxas folds it to a move, so a NaN passes through unchanged
        # (payload, sign, even a signalling NaN) -- measured on the H100 (calib/probes group f64_nan and
        # small_float_nan); bf16, .ftz, .NaN and .xorsign forms are not folded.
        def run_same(ctx):
            write_bits(ctx, d, t, read_bits(ctx, srcs[0], t))
        return run_same
    kw = {"ftz": ftz}
    if nan:
        kw["nan"] = True
    if xorsign:
        kw["xorsign_abs"] = True

    prio = sass_nan_priority(info, ins, name, srcs) if t == "f64" else None

    def run(ctx):
        xs = [read_bits(ctx, s, t) for s in srcs]
        if three and absq:
            xs = [fp.fabs("f32", x) for x in xs]
        r = lanewise(fn, t, xs[0], xs[1], **kw)
        if prio is not None:
            r = fp.propagate_nan64(r, *(xs[i] ^ flip for i, flip in prio))
        if three:
            r = fn("f32", r, xs[2], **kw)
        write_bits(ctx, d, t, r)
    return run


# ============================================================================================ copysign testp
@semantics("copysign")
def decode_copysign(ins, info):
    """PTX ISA 9.1 §9.7.3.4 copysign: ``d`` = b with the sign bit of a (.f32 / .f64)."""
    form = parse_float(ins, info)
    t = form.type
    d, (a, b) = form.dst, form.srcs
    dt = np.uint32 if t == "f32" else np.uint64
    sign = dt(_SIGN[t])

    def run(ctx):
        x, y = read_bits(ctx, a, t), read_bits(ctx, b, t)
        write_bits(ctx, d, t, (y & ~sign) | (x & sign))
    return run


#: testp.normal is true for +-0 on the GPU (H100, sm_90a: measured), although zero is not a normal number
TESTP_ZERO_IS_NORMAL = True


@semantics("testp")
def decode_testp(ins, info):
    """PTX ISA 9.1 §9.7.3.19 testp: classify an .f32/.f64 value (finite, infinite, number, notanumber,
    normal, subnormal).  Zero is not subnormal and, as on the GPU, tests as normal (TESTP_ZERO_IS_NORMAL)."""
    form = parse_float(ins, info)
    t, op = form.type, form.test
    p, (a,) = form.dst, form.srcs
    ebits, mbits = (8, 23) if t == "f32" else (11, 52)

    def run(ctx):
        u = read_bits(ctx, a, t).astype(np.uint64)
        e = (u >> np.uint64(mbits)) & np.uint64((1 << ebits) - 1)
        f = u & np.uint64((1 << mbits) - 1)
        emax = np.uint64((1 << ebits) - 1)
        inf = (e == emax) & (f == 0)
        isnan = (e == emax) & (f != 0)
        r = {"finite": e != emax, "infinite": inf, "number": ~isnan, "notanumber": isnan,
             "normal": (e != emax) & ~((e == 0) & (f != 0)) if TESTP_ZERO_IS_NORMAL else (e != 0) & (e != emax),
             "subnormal": (e == 0) & (f != 0)}[op]
        ctx.write_pred(p, r)
    return run
