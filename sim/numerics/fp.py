"""IEEE 754 scalar floating-point arithmetic with PTX rounding modes, on raw bit patterns.

PTX ISA 9.1 §9.7.3 (floating-point instructions: add, sub, mul, fma, div, sqrt, rcp, min, max,
abs, neg, and their §9.7.4 half-precision forms), §9.7.5.1 setp / §8.7.? comparison operators.

Contract: every function takes and returns numpy arrays of raw bit patterns (uint16 for f16/bf16,
uint32 for f32, uint64 for f64), vectorised over lanes.  Results are correctly rounded (one
rounding of the exact mathematical result) in the requested mode 'rn' | 'rz' | 'rm' | 'rp'.

How exactness is obtained (no double rounding anywhere):
  * f16 / bf16 / f32: operands are exactly representable in float64.  add/sub/fma use the
    error-free TwoSum on float64 (the product of two f32 significands, 48 bits, is exact in
    float64), giving the exact result as hi + lo; that pair is turned into an integer significand
    with two guard bits and a sticky bit and rounded once by `tcsim.isa.formats.round_scaled`.
    div and sqrt use exact uint64 integer division / integer square root with a sticky bit.
  * f64: rn add/sub/mul/div/sqrt are the host's IEEE float64 operations (correctly rounded).
    Directed modes use TwoSum / Dekker TwoProd to get the exact error and step one ulp.
    fma uses the Boldo-Melquiond emulation with rounding-to-odd.  Lanes where these error-free
    transformations are not provably exact (overflow of the Veltkamp split, products or results near
    the subnormal range) fall back to exact Python-integer arithmetic on those lanes only.

NaN results (measured on an H100, sm_90, driver 580; see the gpu-marked tests):
  * f32 / f16 / bf16: always the canonical NaN 0x7FFFFFFF / 0x7FFF (payloads never propagate),
    abs/neg included.
  * f64: a NaN operand propagates, quieted (payload and sign kept): add/sub/mul/min/max take the
    second operand's NaN if it is one, else the first's; fma takes b, then c, then a; div takes a,
    then b; sqrt/rcp/abs/neg return the quieted operand (neg/abs do not change a NaN's sign).
    An invalid operation without NaN operands (Inf-Inf, 0*Inf, 0/0, sqrt(-x)) gives
    0xFFF8000000000000.  min/max with both operands NaN return the quieted second operand.
`.ftz` (flush subnormal inputs and results to sign-preserving zero) is accepted for f32 and f16
(PTX has add.ftz.f16); ValueError for bf16/f64.  The result is flushed when it is below the smallest
normal in magnitude after rounding to the format's precision with an unbounded exponent (tininess after
rounding: fma.rn.ftz.f32 of -2**-126 * -2**-126 + -2**-126 gives -2**-126 on the H100, fuzz finding 14919;
mul.rn.ftz.f32 of 2**-126 by 1-2**-24 gives +0, exact and tiny either way).  A sum's tiny result is exact.
`.sat` clamps to [+0, 1] and turns NaN into +0 (-0 becomes +0).

Not supported here: .approx / .full division (see approx.py), .oob, mixed-precision
fma.f32.f16, f32x2 packed forms (use `packed2`-like splitting at the caller), stochastic rounding.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from tcsim.isa.formats import FORMATS, decode, encode, f64_parts, round_scaled

from . import jit

__all__ = [
    "fadd", "fsub", "fmul", "ffma", "fdiv", "fsqrt", "frcp", "fmin", "fmax", "fabs", "fneg",
    "fcompare", "packed2", "canonical_nan", "propagate_nan64", "COMPARE_OPS", "ARITH_FORMATS", "ffma_reference",
    "fadd_reference", "fsub_reference", "fmul_reference", "lane_op",
]

ARITH_FORMATS = ("f16", "bf16", "f32", "f64")
_RND = ("rn", "rz", "rm", "rp")
COMPARE_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu",
               "num", "nan")

_NAN = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0x7FFFFFFFFFFFFFFF}
_DT = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}


def canonical_nan(fmt: str) -> int:
    """Canonical NaN bit pattern of `fmt` (PTX ISA 9.1 §9.7.3).  For f64 the GPU propagates NaN
    operands instead; invalid f64 operations give 0xFFF8000000000000 (see module docstring)."""
    _chk_fmt(fmt)
    return _NAN[fmt]


# ------------------------------------------------------------------------------------------
# argument checks and bit helpers
# ------------------------------------------------------------------------------------------

def _chk_fmt(fmt):
    if fmt not in ARITH_FORMATS:
        raise ValueError(f"unsupported floating-point arithmetic type {fmt!r} "
                         f"(expected one of {ARITH_FORMATS})")


def _chk(fmt, rnd=None, ftz=False, sat=False):
    _chk_fmt(fmt)
    if rnd is not None and rnd not in _RND:
        raise ValueError(f"unsupported rounding modifier {rnd!r} (expected rn/rz/rm/rp)")
    if ftz and fmt not in ("f32", "f16"):
        raise ValueError(f".ftz is not allowed with .{fmt}")
    if sat and fmt == "f64":
        raise ValueError(".sat is not allowed with .f64")


def _bits(fmt, x):
    a = np.asarray(x)
    if a.dtype.kind not in "ui":
        raise ValueError(f"expected raw bit patterns (unsigned integers), got dtype {a.dtype}")
    return np.atleast_1d(a).astype(_DT[fmt])


def _geom(fmt):
    f = FORMATS[fmt]
    nbits = f.bits
    sign = 1 << (nbits - 1)
    expmask = ((1 << f.exp_bits) - 1) << f.man_bits
    fracmask = (1 << f.man_bits) - 1
    return nbits, sign, expmask, fracmask


def _is_sub(fmt, b):
    _, _, em, fm = _geom(fmt)
    u = b.astype(np.uint64)
    return ((u & np.uint64(em)) == 0) & ((u & np.uint64(fm)) != 0)


def _is_nan(fmt, b):
    _, _, em, fm = _geom(fmt)
    u = b.astype(np.uint64)
    return ((u & np.uint64(em)) == np.uint64(em)) & ((u & np.uint64(fm)) != 0)


def _signbit(fmt, b):
    nbits = _geom(fmt)[0]
    return ((b.astype(np.uint64) >> np.uint64(nbits - 1)) & np.uint64(1)).astype(bool)


def _flush(fmt, b):
    """Sign-preserving flush of subnormal encodings (for .ftz)."""
    nbits, sign, _, _ = _geom(fmt)
    return np.where(_is_sub(fmt, b), b & _DT[fmt](sign), b).astype(_DT[fmt])


def _val(fmt, b):
    """Exact float64 value of the bit patterns."""
    return decode(fmt, b)


def _enc(fmt, v):
    """Encode float64 values that are already exactly representable (or Inf/NaN)."""
    return encode(fmt, v, "rn")


_QNAN64 = np.uint64(0x0008000000000000)
_INVALID64 = np.uint64(0xFFF8000000000000)


def _nan64(r, *ops):
    """f64 NaN results: the first NaN among `ops` (priority order) quieted, else the invalid
    operation NaN 0xFFF8000000000000 (measured H100 behaviour)."""
    r = r.astype(np.uint64)
    isn = _is_nan("f64", r)
    if not isn.any():
        return r
    pick = np.full(r.shape, _INVALID64)
    for op in reversed(ops):
        o = np.broadcast_to(op.astype(np.uint64), r.shape)
        pick = np.where(_is_nan("f64", o), o | _QNAN64, pick)
    return np.where(isn, pick, r)


def propagate_nan64(r, *ops):
    """Replace an f64 NaN result by the first NaN among ``ops`` (hardware priority order), quieted; an invalid
    operation without NaN operands keeps 0xFFF8000000000000.  The semantics layer uses it to apply the priority
    of the SASS operand order ptxas chose (see sim/semantics/float_arith.py, ``sass_nan_priority``)."""
    return _nan64(r, *ops)


def _tiny(fmt, rz_bits):
    """Lanes whose exact result is below the smallest normal (rz result subnormal or zero)."""
    _, _, em, _ = _geom(fmt)
    return (rz_bits.astype(np.uint64) & np.uint64(em)) == 0


def _ftz_result(fmt, r, rz_bits):
    """Flush results whose exact value is tiny (for sums, where the exact tiny value is representable, so
    tininess before and after rounding agree), keeping the sign."""
    sign = _DT[fmt](_geom(fmt)[1])
    return np.where(_tiny(fmt, rz_bits) & ~_is_nan(fmt, r), r & sign, r).astype(_DT[fmt])


def _tiny_after_rounding(fmt, hi, lo, rnd):
    """Lanes whose exact result hi + lo, rounded to fmt's precision with an *unbounded* exponent, is below the
    smallest normal -- the .ftz flush rule of the H100's FFMA (fuzz finding 14919: fma.rn.ftz.f32 of
    x = -2**-126 with itself, x*x + x = -2**-126 + 2**-252, gives -2**-126, not -0).  Scaling by 1/min_normal is
    exact and maps the boundary to 1.0, out of the subnormal range, so the ordinary rounding is the unbounded one
    there."""
    mn = FORMATS[fmt].min_normal
    near = (hi != 0) & (np.abs(hi) < 2 * mn)
    out = np.zeros(hi.shape, bool)
    if near.any():
        bits = _round_pair(fmt, hi[near] / mn, lo[near] / mn, rnd)
        out[near] = np.abs(_val(fmt, bits)) < 1.0
    return out


def _finish(fmt, r, ftz=False, sat=False, relu=False):
    r = r.astype(_DT[fmt])
    if ftz:
        r = _flush(fmt, r)
    if fmt != "f64":
        nan = _is_nan(fmt, r)
        r = np.where(nan, _DT[fmt](_NAN[fmt]), r)
    if sat:
        v = _val(fmt, r)
        one = _enc(fmt, np.array([1.0]))[0]
        r = np.where(np.isnan(v) | (v <= 0), _DT[fmt](0), np.where(v > 1.0, one, r))
    if relu:
        v = _val(fmt, r)
        r = np.where(~np.isnan(v) & ((v < 0) | _signbit(fmt, r)), _DT[fmt](0), r)
    return r.astype(_DT[fmt])


# ------------------------------------------------------------------------------------------
# float64 error-free transformations
# ------------------------------------------------------------------------------------------

def _two_sum(a, b):
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    return s, err


_SPLIT = 134217729.0  # 2**27 + 1


def _split(a):
    t = _SPLIT * a
    hi = t - (t - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, err


def _pair_to_scaled(hi, lo):
    """Exact value hi + lo (|lo| <= ulp(hi)/2, hi finite nonzero) as (neg, mant, exp, sticky)
    with two guard bits, for `round_scaled`."""
    neg, mh, eh, _, _ = f64_parts(hi)
    alo = np.abs(lo)
    q1 = np.ldexp(1.0, eh - 2)          # one unit of the guard position
    q2 = np.ldexp(1.0, eh - 1)
    g_floor = (alo >= q1).astype(np.int64) + (alo >= q2).astype(np.int64)
    integral = (alo == 0) | (alo == q1) | (alo == q2)
    g_ceil = g_floor + (~integral).astype(np.int64)
    same = (np.signbit(lo) == np.signbit(hi)) | (lo == 0)
    m4 = mh.astype(np.int64) * 4
    mant = np.where(same, m4 + g_floor, m4 - g_ceil)
    return neg, mant.astype(np.uint64), eh - 2, ~integral


def _round_pair(fmt, hi, lo, rnd):
    """Round exact hi + lo (nonzero hi) to fmt (f16/bf16/f32)."""
    neg, m, e, st = _pair_to_scaled(hi, lo)
    return round_scaled(fmt, neg, m, e, st, rnd)


def _zero_sign_sum(rnd, sa, sb):
    """Sign of an exact-zero sum x + y with operand signs sa, sb (IEEE 754 §6.3)."""
    return np.where(sa == sb, sa, rnd == "rm")


def _directed_adjust(hi, lo, rnd):
    """hi = RN(exact), lo = exact - hi (sign only matters): the directed rounding of exact."""
    if rnd == "rn":
        return hi
    if rnd == "rp":
        return np.where(lo > 0, np.nextafter(hi, np.inf), hi)
    if rnd == "rm":
        return np.where(lo < 0, np.nextafter(hi, -np.inf), hi)
    # rz: step toward zero when lo points toward zero
    toward_zero = ((hi > 0) & (lo < 0)) | ((hi < 0) & (lo > 0))
    return np.where(toward_zero, np.nextafter(hi, 0.0), hi)


_MAX64 = np.finfo(np.float64).max


def _overflow64(neg, rnd):
    away = {"rn": np.ones_like(neg), "rz": np.zeros_like(neg), "rp": ~neg, "rm": neg}[rnd]
    mag = np.where(away, np.inf, _MAX64)
    return np.where(neg, -mag, mag)


# ------------------------------------------------------------------------------------------
# exact Python-integer fallback (rare lanes, mostly f64)
# ------------------------------------------------------------------------------------------

def _py_parts(v: float):
    m, e = math.frexp(abs(v))           # v = m * 2**e, 0.5 <= m < 1
    mi = int(m * (1 << 53))
    return v < 0 or (v == 0 and math.copysign(1.0, v) < 0), mi, e - 53


def _py_exact(op, vals):
    """Exact result of op on finite float64 lane values -> (neg, mant, exp, sticky)."""
    if op == "mul":
        (na, ma, ea), (nb, mb, eb) = map(_py_parts, vals)
        return na != nb, ma * mb, ea + eb, False
    if op in ("add", "fma"):
        if op == "add":
            (na, ma, ea), (nc, mc, ec) = map(_py_parts, vals)
            np_, mp, ep = na, ma, ea
        else:
            (na, ma, ea), (nb, mb, eb), (nc, mc, ec) = map(_py_parts, vals)
            np_, mp, ep = na != nb, ma * mb, ea + eb
        e = min(ep, ec)
        s = (-1 if np_ else 1) * (mp << (ep - e)) + (-1 if nc else 1) * (mc << (ec - e))
        return s < 0, abs(s), e, False
    if op == "div":
        (na, ma, ea), (nb, mb, eb) = map(_py_parts, vals)
        k = max(0, 60 + mb.bit_length() - ma.bit_length())
        q, r = divmod(ma << k, mb)
        return na != nb, q, ea - eb - k, r != 0
    if op == "sqrt":
        (_, m, e), = map(_py_parts, vals)
        if e & 1:
            m <<= 1
            e -= 1
        sh = max(0, 2 * 60 - m.bit_length())
        sh += sh & 1
        n = m << sh
        s = math.isqrt(n)
        return False, s, (e - sh) // 2, s * s != n
    raise ValueError(op)


def _exact_lanes(fmt, op, idx, vals, rnd, zero_neg=None):
    """Round the exact results of `op` on lanes `idx` (python-int arithmetic).  Exact-zero
    results get the sign `zero_neg` (bool per lane of idx) when given."""
    res = [_py_exact(op, [float(v[i]) for v in vals]) for i in idx]
    if zero_neg is not None:
        res = [(bool(zn), *r[1:]) if r[1] == 0 else r for r, zn in zip(res, zero_neg)]
    neg = np.array([r[0] for r in res], dtype=bool)
    mant = np.empty(len(res), dtype=object)
    mant[:] = [r[1] for r in res]
    exp = np.array([r[2] for r in res], dtype=np.int64)
    st = np.array([r[3] for r in res], dtype=bool)
    return round_scaled(fmt, neg, mant, exp, st, rnd)


# ------------------------------------------------------------------------------------------
# add / sub / mul / fma
# ------------------------------------------------------------------------------------------

def _prep(fmt, ftz, *xs):
    bs = [_bits(fmt, x) for x in xs]
    shape = np.broadcast_shapes(*[b.shape for b in bs])
    bs = [np.broadcast_to(b, shape) for b in bs]
    if ftz:
        bs = [_flush(fmt, b) for b in bs]
    return bs, [_val(fmt, b) for b in bs]


def fadd(fmt, a, b, rnd="rn", ftz=False, sat=False):
    """d = a + b, correctly rounded.  PTX ISA 9.1 §9.7.3.1 add (floating point) and §9.7.4.1
    add (half precision).  NaN -> canonical NaN; exact zero sum is +0 (-0 with .rm) unless both
    operands are zeros of the same sign."""
    _chk(fmt, rnd, ftz, sat)
    kern = jit.kernels() if fmt != "f64" else None
    if kern is not None:
        return _binary_compiled(kern, "fadd_small", fmt, a, b, rnd, ftz, sat, False)
    return _fadd(fmt, a, b, rnd, ftz, sat)


def fadd_reference(fmt, a, b, rnd="rn", ftz=False, sat=False):
    """:func:`fadd` by the numpy reference only (the specification the compiled kernel is tested against)."""
    _chk(fmt, rnd, ftz, sat)
    return _fadd(fmt, a, b, rnd, ftz, sat)


def _fadd(fmt, a, b, rnd, ftz, sat):
    (ba, bb), (va, vb) = _prep(fmt, ftz, a, b)
    r = _add_core(fmt, va, vb, rnd)
    if fmt == "f64":
        return _nan64(r, bb, ba)
    if ftz:
        r = _ftz_result(fmt, r, _add_core(fmt, va, vb, "rz"))
    return _finish(fmt, r, ftz, sat)


def fsub(fmt, a, b, rnd="rn", ftz=False, sat=False):
    """d = a - b.  PTX ISA 9.1 §9.7.3.2 sub (floating point), §9.7.4.2 sub (half precision)."""
    _chk(fmt, rnd, ftz, sat)
    kern = jit.kernels() if fmt != "f64" else None
    if kern is not None:
        return _binary_compiled(kern, "fadd_small", fmt, a, b, rnd, ftz, sat, True)
    return _fsub(fmt, a, b, rnd, ftz, sat)


def fsub_reference(fmt, a, b, rnd="rn", ftz=False, sat=False):
    """:func:`fsub` by the numpy reference only (the specification the compiled kernel is tested against)."""
    _chk(fmt, rnd, ftz, sat)
    return _fsub(fmt, a, b, rnd, ftz, sat)


def _fsub(fmt, a, b, rnd, ftz, sat):
    (ba, bb), (va, vb) = _prep(fmt, ftz, a, b)
    r = _add_core(fmt, va, -vb, rnd)
    if fmt == "f64":
        return _nan64(r, bb, ba)
    if ftz:
        r = _ftz_result(fmt, r, _add_core(fmt, va, -vb, "rz"))
    return _finish(fmt, r, ftz, sat)


def _add_core(fmt, va, vb, rnd):
    with np.errstate(all="ignore"):
        hi, lo = _two_sum(va, vb)
        fin = np.isfinite(va) & np.isfinite(vb)
        if fmt == "f64":
            out = _directed_adjust(hi, lo, rnd)
            ovf = fin & ~np.isfinite(hi)
            out = np.where(ovf, _overflow64(np.signbit(hi), rnd), out)
            zero = fin & (out == 0)
            zs = _zero_sign_sum(rnd, np.signbit(va), np.signbit(vb))
            out = np.where(zero & (hi == 0), np.where(zs, -0.0, 0.0), out)
            return out.view(np.uint64).copy()
        res = np.zeros(hi.shape, _DT[fmt])
        nz = fin & (hi != 0)
        if nz.any():
            res[nz] = _round_pair(fmt, hi[nz], lo[nz], rnd)
        zero = fin & (hi == 0)
        zs = _zero_sign_sum(rnd, np.signbit(va), np.signbit(vb))
        res = np.where(zero, np.where(zs, _DT[fmt](_geom(fmt)[1]), _DT[fmt](0)), res)
        sp = ~fin
        if sp.any():
            res = np.where(sp, _enc(fmt, np.where(sp, va + vb, 0.0)), res)
        return res.astype(_DT[fmt])


def fmul(fmt, a, b, rnd="rn", ftz=False, sat=False):
    """d = a * b, correctly rounded.  PTX ISA 9.1 §9.7.3.3 mul (floating point), §9.7.4.3 mul
    (half precision)."""
    _chk(fmt, rnd, ftz, sat)
    kern = jit.kernels() if fmt != "f64" else None
    if kern is not None:
        return _binary_compiled(kern, "fmul_small", fmt, a, b, rnd, ftz, sat)
    return _fmul(fmt, a, b, rnd, ftz, sat)


def fmul_reference(fmt, a, b, rnd="rn", ftz=False, sat=False):
    """:func:`fmul` by the numpy reference only (the specification the compiled kernel is tested against)."""
    _chk(fmt, rnd, ftz, sat)
    return _fmul(fmt, a, b, rnd, ftz, sat)


def _fmul(fmt, a, b, rnd, ftz, sat):
    (ba, bb), (va, vb) = _prep(fmt, ftz, a, b)
    with np.errstate(all="ignore"):
        p = va * vb
        fin = np.isfinite(va) & np.isfinite(vb)
        if fmt != "f64":
            res = np.zeros(p.shape, _DT[fmt])
            nz = fin & (p != 0)
            if nz.any():
                res[nz] = _round_pair(fmt, p[nz], np.zeros(int(nz.sum())), rnd)
            zsign = np.signbit(va) != np.signbit(vb)
            res = np.where(fin & (p == 0), np.where(zsign, _DT[fmt](_geom(fmt)[1]), 0), res)
            res = np.where(~fin, _enc(fmt, np.where(fin, 0.0, p)), res)
            if ftz:
                tiny = fin & _tiny_after_rounding(fmt, np.where(fin, p, 0.0), np.zeros(p.shape), rnd)   # p exact
                res = np.where(tiny, res & _DT[fmt](_geom(fmt)[1]), res)
            return _finish(fmt, res, ftz, sat)
        if rnd == "rn":
            return _nan64(p.view(np.uint64).copy(), bb, ba)
        aa, ab = np.abs(va), np.abs(vb)
        safe = fin & (aa < 2.0 ** 995) & (ab < 2.0 ** 995) & (
            (np.abs(p) >= 2.0 ** -968) | (va == 0) | (vb == 0))
        safe &= np.isfinite(p)
        hi, lo = _two_prod(np.where(safe, va, 1.0), np.where(safe, vb, 1.0))
        out = _directed_adjust(hi, lo, rnd)
        out = np.where(safe, out, p)  # specials: p is exact (inf/nan/zero of exact zero)
        res = out.view(np.uint64).copy()
        hard = fin & ~safe
        idx = np.nonzero(hard)[0]
        if len(idx):
            res[idx] = _exact_lanes("f64", "mul", idx, [va, vb], rnd)
        return _nan64(res, bb, ba)


def _ffma_f32_rn_round_to_odd(va, vb, vc, fin, ftz):
    """Fast exact f32 fma (rn): the f32 product is exact in f64, TwoSum gives the exact sum as hi + lo, hi is
    made round-to-odd (53 >= 24 + 2 bits, so a final rn cast to f32 rounds once correctly, subnormals
    included).  Returns (bits, slow) where ``slow`` marks lanes this path does not decide (non-finite
    operands, exact zero results with their sign rules, and results near the f32 normal boundary under
    .ftz, whose flush depends on the unrounded value)."""
    p = va * vb
    hi, lo = _two_sum(p, vc)
    h = np.ascontiguousarray(hi).view(np.uint64)
    adj = (lo != 0) & ((h & np.uint64(1)) == 0)
    up = np.signbit(lo) == np.signbit(hi)
    h = np.where(adj, np.where(up, h + np.uint64(1), h - np.uint64(1)), h)
    r = h.view(np.float64).astype(np.float32).view(np.uint32)
    slow = ~fin | (hi == 0)
    if ftz:
        slow |= np.abs(hi) < 2.0 ** -125
    return r, slow


def ffma(fmt, a, b, c, rnd="rn", ftz=False, sat=False, relu=False):
    """d = a * b + c with a single rounding.  PTX ISA 9.1 §9.7.3.5 fma (floating point) and
    §9.7.4.4 fma (half precision; `relu` is the .relu modifier: negative results become +0, NaN
    stays canonical NaN).  Runs the compiled kernel where numba is installed (bit for bit :func:`ffma_reference`,
    tests/numerics/test_jit.py; f64 lanes outside the float64 error-free range go through the reference)."""
    _chk(fmt, rnd, ftz, sat)
    if relu and fmt not in ("f16", "bf16"):
        raise ValueError(".relu is only allowed with fma.rn.{f16,bf16}")
    kern = jit.kernels()
    if kern is None:
        return _ffma(fmt, a, b, c, rnd, ftz, sat, relu)
    dt = _DT[fmt]
    (a, b, c), shape = _lanes(dt, a, b, c)
    if fmt == "f64":
        return _ffma_f64_compiled(kern, a, b, c, rnd).reshape(shape)
    a, b, c = (np.ascontiguousarray(x, dtype=np.uint32) for x in (a, b, c))
    out = np.empty(a.shape, np.uint32)
    if fmt == "f32" and rnd == "rn" and not sat:
        kern.ffma_f32_rn(a, b, c, out, bool(ftz), _NAN[fmt])
        return out.reshape(shape)
    man, exp_bits, bias, width = _FMA_GEOM[fmt]
    kern.ffma_small(a, b, c, out, man, exp_bits, bias, width, _RND_CODE[rnd], bool(ftz), bool(sat), bool(relu),
                    _NAN[fmt])
    return (out if dt is np.uint32 else out.astype(dt)).reshape(shape)


def lane_op(op: str, fmt: str, rnd: str = "rn", ftz: bool = False, sat: bool = False):
    """``fn(a, b[, c])`` computing :func:`fadd` / :func:`fsub` / :func:`fmul` / :func:`ffma` (``op`` = add / sub /
    mul / fma) of ``fmt`` with these modifiers, checked once here, for callers that pass 1-d contiguous lane
    arrays of the format's container dtype and one length on every call (the fast tier's generated code): the
    same bits as the public entry point, without its per-call operand checks and conversions.  The result is a
    1-d array of the container dtype."""
    _chk(fmt, rnd, ftz, sat)
    public = {"add": fadd, "sub": fsub, "mul": fmul, "fma": ffma}[op]
    kern = jit.kernels()
    if kern is None:
        return functools.partial(_lane_public, public, fmt, rnd, ftz, sat)
    if op == "fma" and fmt == "f32" and rnd == "rn" and not sat:
        nan = _NAN[fmt]
        ftz = bool(ftz)

        def fma_f32(a, b, c):
            out = np.empty(a.shape, np.uint32)
            kern.ffma_f32_rn(a, b, c, out, ftz, nan)
            return out
        return fma_f32
    if op == "fma" and fmt == "f64":
        code = _RND_CODE[rnd]

        def fma_f64(a, b, c):
            out = np.empty(a.shape, np.uint64)
            hard = np.empty(a.shape, np.bool_)
            if kern.ffma_f64(a.view(np.float64), b.view(np.float64), c.view(np.float64), a, b, c, out, hard, code):
                out[hard] = _ffma("f64", a[hard], b[hard], c[hard], rnd, False, False, False)
            return out
        return fma_f64
    if op in ("add", "sub", "mul") and fmt == "f32":
        man, exp_bits, bias, width = _FMA_GEOM[fmt]
        name = "fmul_small" if op == "mul" else "fadd_small"
        fn = getattr(kern, name)
        extra = () if op == "mul" else (op == "sub",)
        args = (man, exp_bits, bias, width, _RND_CODE[rnd], bool(ftz), bool(sat), _NAN[fmt]) + extra

        def binary_f32(a, b):
            out = np.empty(a.shape, np.uint32)
            fn(a, b, out, *args)
            return out
        return binary_f32
    return functools.partial(_lane_public, public, fmt, rnd, ftz, sat)


def _lane_public(public, fmt, rnd, ftz, sat, *xs):
    return public(fmt, *xs, rnd=rnd, ftz=ftz, sat=sat)


def _lanes(dt, *xs):
    """The compiled entry points' operands: 1-d arrays of one length (the operands as ``_bits`` and a broadcast
    make them; the semantics layer's lane vectors pass untouched) and the result shape.  The small-format kernels
    take contiguous uint32 lanes (f16 / bf16 codes widened): one specialisation each."""
    if all(type(x) is np.ndarray and x.ndim == 1 and x.dtype == dt and x.shape == xs[0].shape for x in xs):
        return xs, xs[0].shape
    ys = []
    for x in xs:
        x = np.atleast_1d(np.asarray(x))
        if x.dtype.kind not in "ui":
            raise ValueError(f"expected raw bit patterns (unsigned integers), got dtype {x.dtype}")
        ys.append(x.astype(dt, copy=False))
    shape = np.broadcast_shapes(*(y.shape for y in ys))
    return [np.broadcast_to(y, shape).ravel() for y in ys], shape


def _binary_compiled(kern, name, fmt, a, b, rnd, ftz, sat, *extra):
    """fadd / fsub / fmul of f16 / bf16 / f32 by the compiled kernel ``name``."""
    dt = _DT[fmt]
    (a, b), shape = _lanes(dt, a, b)
    a, b = (np.ascontiguousarray(x, dtype=np.uint32) for x in (a, b))
    out = np.empty(a.shape, np.uint32)
    man, exp_bits, bias, width = _FMA_GEOM[fmt]
    getattr(kern, name)(a, b, out, man, exp_bits, bias, width, _RND_CODE[rnd], bool(ftz), bool(sat), _NAN[fmt],
                        *extra)
    return (out if dt is np.uint32 else out.astype(dt)).reshape(shape)


def _ffma_f64_compiled(kern, a, b, c, rnd):
    """f64 lanes by the compiled kernel; the lanes it marks hard (where the reference leaves float64 error-free
    transformations for exact Python-integer arithmetic) by the reference, lane by lane independent."""
    a, b, c = (np.ascontiguousarray(x, dtype=np.uint64) for x in (a, b, c))
    out = np.empty(a.shape, np.uint64)
    hard = np.empty(a.shape, np.bool_)
    if kern.ffma_f64(a.view(np.float64), b.view(np.float64), c.view(np.float64), a, b, c, out, hard,
                     _RND_CODE[rnd]):
        out[hard] = _ffma("f64", a[hard], b[hard], c[hard], rnd, False, False, False)
    return out


def ffma_reference(fmt, a, b, c, rnd="rn", ftz=False, sat=False, relu=False):
    """:func:`ffma` by the numpy reference only (the specification the compiled kernel is tested against)."""
    _chk(fmt, rnd, ftz, sat)
    if relu and fmt not in ("f16", "bf16"):
        raise ValueError(".relu is only allowed with fma.rn.{f16,bf16}")
    return _ffma(fmt, a, b, c, rnd, ftz, sat, relu)


_RND_CODE = {"rn": 0, "rz": 1, "rm": 2, "rp": 3}     # jit_kernels.RND_CODES
_FMA_GEOM = {f: (FORMATS[f].man_bits, FORMATS[f].exp_bits, FORMATS[f].bias, FORMATS[f].bits)
             for f in ("f16", "bf16", "f32")}


def _ffma(fmt, a, b, c, rnd, ftz, sat, relu):
    (ba, bb, bc), (va, vb, vc) = _prep(fmt, ftz, a, b, c)
    with np.errstate(all="ignore"):
        fin = np.isfinite(va) & np.isfinite(vb) & np.isfinite(vc)
        pzero = fin & ((va == 0) | (vb == 0))
        psign = np.signbit(va) != np.signbit(vb)
        # specials: a finite product (even one overflowing float64) plus an infinite c is c
        ab_fin = np.isfinite(va) & np.isfinite(vb)
        spec = np.where(fin, 0.0, np.where(ab_fin & np.isinf(vc), vc, va * vb + vc))
        if fmt == "f32" and rnd == "rn":
            fast, slow = _ffma_f32_rn_round_to_odd(va, vb, vc, fin, ftz)
            if not slow.any():
                return _finish(fmt, fast, ftz, sat, relu)
        if fmt != "f64":
            p = va * vb                                   # exact
            hi, lo = _two_sum(p, vc)
            res = np.zeros(hi.shape, _DT[fmt])
            nz = fin & (hi != 0)
            if nz.any():
                res[nz] = _round_pair(fmt, hi[nz], lo[nz], rnd)
            zs = _zero_sign_sum(rnd, psign, np.signbit(vc))
            res = np.where(fin & (hi == 0),
                           np.where(zs, _DT[fmt](_geom(fmt)[1]), _DT[fmt](0)), res)
            res = np.where(~fin, _enc(fmt, spec), res)
            if ftz and nz.any():
                tiny = nz & _tiny_after_rounding(fmt, np.where(nz, hi, 0.0), np.where(nz, lo, 0.0), rnd)
                res = np.where(tiny, res & _DT[fmt](_geom(fmt)[1]), res)
            return _finish(fmt, res, ftz, sat, relu)
        # f64
        out = np.zeros(va.shape)
        # product exactly zero: result is c (exact) or a signed zero
        zs = _zero_sign_sum(rnd, psign, np.signbit(vc))
        zres = np.where(vc == 0, np.where(zs, -0.0, 0.0), vc)
        out = np.where(pzero, zres, out)
        aa, ab, ac = np.abs(va), np.abs(vb), np.abs(vc)
        p = va * vb
        safe = fin & ~pzero & (aa < 2.0 ** 995) & (ab < 2.0 ** 995) & (np.abs(p) >= 2.0 ** -900) \
            & (np.abs(p) < 2.0 ** 1000) & ((ac == 0) | ((ac >= 2.0 ** -900) & (ac < 2.0 ** 1000)))
        A = np.where(safe, va, 1.0)
        B = np.where(safe, vb, 1.0)
        C = np.where(safe, vc, 0.0)
        uh, ul = _two_prod(A, B)
        th, tl = _two_sum(C, uh)
        s, e = _two_sum(tl, ul)
        odd = (s.view(np.uint64) & np.uint64(1)).astype(bool)
        v = np.where((e != 0) & ~odd, np.where(e > 0, np.nextafter(s, np.inf),
                                               np.nextafter(s, -np.inf)), s)
        z, w = _two_sum(th, v)
        z = _directed_adjust(z, w, rnd)
        safe &= (np.abs(z) >= 2.0 ** -900) | (z == 0)
        # exact cancellation to zero inside the safe path: sign rule
        z = np.where(z == 0, np.where(_zero_sign_sum(rnd, psign, np.signbit(vc)), -0.0, 0.0), z)
        out = np.where(safe, z, out)
        out = np.where(~fin, spec, out)
        res = out.view(np.uint64).copy()
        hard = fin & ~pzero & ~safe
        idx = np.nonzero(hard)[0]
        if len(idx):
            res[idx] = _exact_lanes("f64", "fma", idx, [va, vb, vc], rnd, zs[idx])
        return _nan64(res, bb, bc, ba)


# ------------------------------------------------------------------------------------------
# div / rcp / sqrt
# ------------------------------------------------------------------------------------------

def _small_parts(v):
    """|v| = m * 2**e with m a 24-bit integer, for values of f16/bf16/f32 (normal in f64)."""
    neg, mant, exp, _, _ = f64_parts(v)
    return neg, mant >> np.uint64(29), exp + 29


def fdiv(fmt, a, b, rnd="rn", ftz=False):
    """d = a / b, IEEE correctly rounded (div.rnd).  PTX ISA 9.1 §9.7.3.8 div (floating point):
    div.{rn,rz,rm,rp}{.ftz}.f32 and div.rnd.f64.  (div.approx / div.full are not IEEE and are not
    implemented here.)  x/0 = +-Inf, 0/0 = Inf/Inf = NaN."""
    _chk(fmt, rnd, ftz)
    (ba, bb), (va, vb) = _prep(fmt, ftz, a, b)
    with np.errstate(all="ignore"):
        q = va / vb
        regular = np.isfinite(va) & np.isfinite(vb) & (va != 0) & (vb != 0)
        if fmt != "f64":
            res = _enc(fmt, np.where(regular, 0.0, q))       # specials are exact in f64
            if regular.any():
                na, ma, ea = _small_parts(va[regular])
                nb, mb, eb = _small_parts(vb[regular])
                num = ma << np.uint64(39)
                Q = num // mb
                R = num - Q * mb
                res[regular] = round_scaled(fmt, na != nb, Q, ea - eb - 39, R != 0, rnd)
                if ftz:
                    rz = round_scaled(fmt, na != nb, Q, ea - eb - 39, R != 0, "rz")
                    res[regular] = _ftz_result(fmt, res[regular], rz)
            return _finish(fmt, res, ftz)
        if rnd == "rn":
            return _nan64(q.view(np.uint64).copy(), ba, bb)
        aa, ab, aq = np.abs(va), np.abs(vb), np.abs(q)
        # q*b must not overflow in the residual (a dividend near DBL_MAX rounds q*b up to Inf): such lanes take
        # the exact path
        safe = regular & (aq < 2.0 ** 995) & (aq >= 2.0 ** -960) & (ab < 2.0 ** 995) & \
            (aa >= 2.0 ** -960) & (ab >= 2.0 ** -960) & (aa < 2.0 ** 1000)
        Qs = np.where(safe, q, 1.0)
        Bs = np.where(safe, vb, 1.0)
        As = np.where(safe, va, 1.0)
        ph, pl = _two_prod(Qs, Bs)
        r = (As - ph) - pl                         # sign(r) = sign(a - q*b), exact sign
        lo = np.where(np.signbit(Bs), -r, r)       # sign of exact quotient minus q
        out = _directed_adjust(Qs, lo, rnd)
        out = np.where(safe, out, q)
        res = out.view(np.uint64).copy()
        idx = np.nonzero(regular & ~safe)[0]
        if len(idx):
            res[idx] = _exact_lanes("f64", "div", idx, [va, vb], rnd)
        return _nan64(res, ba, bb)


def frcp(fmt, a, rnd="rn", ftz=False):
    """d = 1 / a, IEEE correctly rounded.  PTX ISA 9.1 §9.7.3.9 rcp: rcp.rnd{.ftz}.f32,
    rcp.rnd.f64 (rcp.approx is in approx.py).  rcp(+-0) = +-Inf, rcp(+-Inf) = +-0."""
    _chk(fmt, rnd, ftz)
    a = _bits(fmt, a)
    one = _enc(fmt, np.ones(a.shape))
    return fdiv(fmt, one, a, rnd, ftz)


def fsqrt(fmt, a, rnd="rn", ftz=False):
    """d = sqrt(a), IEEE correctly rounded.  PTX ISA 9.1 §9.7.3.11 sqrt: sqrt.rnd{.ftz}.f32,
    sqrt.rnd.f64.  sqrt(-0) = -0, sqrt(negative) = NaN, sqrt(+Inf) = +Inf."""
    _chk(fmt, rnd, ftz)
    (ba,), (va,) = _prep(fmt, ftz, a)
    with np.errstate(all="ignore"):
        s = np.sqrt(va)
        regular = np.isfinite(va) & (va > 0)
        if fmt != "f64":
            res = _enc(fmt, np.where(regular, 0.0, s))
            if regular.any():
                _, m, e = _small_parts(va[regular])
                m = m.astype(np.uint64)
                odd = (e & 1).astype(bool)
                m = np.where(odd, m << np.uint64(1), m)
                e = np.where(odd, e - 1, e)
                N = m << np.uint64(36)
                e = e - 36
                r = np.floor(np.sqrt(N.astype(np.float64))).astype(np.uint64)
                for _ in range(2):
                    r = np.where(r * r > N, r - np.uint64(1), r)
                    r1 = r + np.uint64(1)
                    r = np.where(r1 * r1 <= N, r1, r)
                res[regular] = round_scaled(fmt, np.zeros(r.shape, bool), r, e // 2, r * r != N,
                                            rnd)
            return _finish(fmt, res, ftz)
        if rnd == "rn":
            return _nan64(s.view(np.uint64).copy(), ba)
        safe = regular & (va >= 2.0 ** -960) & (va < 2.0 ** 990)
        S = np.where(safe, s, 1.0)
        A = np.where(safe, va, 1.0)
        ph, pl = _two_prod(S, S)
        lo = (A - ph) - pl
        out = _directed_adjust(S, lo, rnd)
        out = np.where(safe, out, s)
        res = out.view(np.uint64).copy()
        idx = np.nonzero(regular & ~safe)[0]
        if len(idx):
            res[idx] = _exact_lanes("f64", "sqrt", idx, [va], rnd)
        return _nan64(res, ba)


# ------------------------------------------------------------------------------------------
# min / max / abs / neg / compare
# ------------------------------------------------------------------------------------------

def _minmax(fmt, a, b, ftz, nan, xorsign_abs, want_max):
    _chk(fmt, None, ftz)
    if (nan or xorsign_abs) and fmt == "f64":
        raise ValueError(".NaN / .xorsign.abs are not allowed with .f64 min/max")
    (ba, bb), (va, vb) = _prep(fmt, ftz, a, b)
    nbits, sign, _, _ = _geom(fmt)
    dt = _DT[fmt]
    xs = _signbit(fmt, ba) != _signbit(fmt, bb)
    if xorsign_abs:
        ba = ba & dt(sign - 1)
        bb = bb & dt(sign - 1)
        va, vb = np.abs(va), np.abs(vb)
    na, nb = np.isnan(va), np.isnan(vb)
    sa = _signbit(fmt, ba)
    if want_max:
        a_wins = (va > vb) | ((va == vb) & ~sa)
    else:
        a_wins = (va < vb) | ((va == vb) & sa)
    r = np.where(a_wins, ba, bb)
    r = np.where(na & ~nb, bb, r)
    r = np.where(nb & ~na, ba, r)
    cn = dt(_NAN[fmt])
    if fmt == "f64":   # both NaN: the second operand, quieted (measured)
        r = np.where(na & nb, bb | _QNAN64, r)
    else:
        r = np.where(na & nb, cn, r)
    if nan:
        r = np.where(na | nb, cn, r)
    if xorsign_abs:
        isn = _is_nan(fmt, r)
        r = np.where(isn, r, np.where(xs, r | dt(sign), r))
    return _finish(fmt, r, ftz)


def fmin(fmt, a, b, ftz=False, nan=False, xorsign_abs=False):
    """d = min(a, b).  PTX ISA 9.1 §9.7.3.10 min (floating point), §9.7.4.8 min (half precision).
    -0 < +0; one NaN operand -> the other operand; both NaN -> canonical NaN; `nan` (.NaN) ->
    canonical NaN if either is NaN; `xorsign_abs` (.xorsign.abs): min of |a|, |b| with sign bit
    sign(a) ^ sign(b) (NaN results keep the canonical NaN)."""
    return _minmax(fmt, a, b, ftz, nan, xorsign_abs, False)


def fmax(fmt, a, b, ftz=False, nan=False, xorsign_abs=False):
    """d = max(a, b).  PTX ISA 9.1 §9.7.3.11 max (floating point), §9.7.4.9 max (half precision).
    Same NaN / signed-zero / .xorsign.abs rules as `fmin`."""
    return _minmax(fmt, a, b, ftz, nan, xorsign_abs, True)


def fabs(fmt, a, ftz=False):
    """d = |a| (clears the sign bit; NaN -> canonical NaN, f64: quieted operand).  PTX ISA 9.1 §9.7.3.6 abs (floating
    point), §9.7.4.6 abs (half precision)."""
    _chk(fmt, None, ftz)
    (ba,), _ = _prep(fmt, ftz, a)
    return _absneg_nan(fmt, ba, (ba & _DT[fmt](_geom(fmt)[1] - 1)).astype(_DT[fmt]))


def _absneg_nan(fmt, ba, r):
    """abs/neg of a NaN (measured): f32/f16/bf16 give the canonical NaN; f64 gives the operand
    quieted, sign unchanged."""
    isn = _is_nan(fmt, ba)
    if fmt == "f64":
        return np.where(isn, ba | _QNAN64, r).astype(np.uint64)
    return np.where(isn, _DT[fmt](_NAN[fmt]), r).astype(_DT[fmt])


def fneg(fmt, a, ftz=False):
    """d = -a (flips the sign bit; NaN -> canonical NaN, f64: quieted operand).  PTX ISA 9.1 §9.7.3.7 neg (floating
    point), §9.7.4.7 neg (half precision)."""
    _chk(fmt, None, ftz)
    (ba,), _ = _prep(fmt, ftz, a)
    return _absneg_nan(fmt, ba, (ba ^ _DT[fmt](_geom(fmt)[1])).astype(_DT[fmt]))


def fcompare(fmt, op, a, b, ftz=False):
    """Boolean comparison as used by setp/set/selp.  PTX ISA 9.1 §9.7.6.1 (floating-point
    comparison operators, Table "Floating-point comparison operators"): eq ne lt le gt ge are
    ordered (false when either operand is NaN); equ neu ltu leu gtu geu are unordered (true when
    either is NaN); num: both are numbers; nan: either is NaN.  -0 == +0."""
    _chk(fmt, None, ftz)
    if op not in COMPARE_OPS:
        raise ValueError(f"unknown floating-point comparison {op!r}")
    (ba, bb), (va, vb) = _prep(fmt, ftz, a, b)
    un = np.isnan(va) | np.isnan(vb)
    if op == "num":
        return ~un
    if op == "nan":
        return un
    base = op[:2]
    with np.errstate(invalid="ignore"):
        r = {"eq": va == vb, "ne": va != vb, "lt": va < vb, "le": va <= vb, "gt": va > vb,
             "ge": va >= vb}[base]
    if len(op) == 3:
        return r | un
    return r & ~un


# ------------------------------------------------------------------------------------------
# packed
# ------------------------------------------------------------------------------------------

def packed2(fn, elemfmt, *u32arrays, **kw):
    """Apply a scalar op to both halves of packed .f16x2 / .bf16x2 operands.  PTX ISA 9.1
    §5.2.5.1 (packed data types) and the x2 forms of §9.7.4 (half-precision instructions).

    Element 0 is the low 16 bits, element 1 the high 16 bits.  Returns a uint32 array, or for a
    function returning booleans (fcompare) a tuple (element0, element1).  Pass the scalar fn's
    non-operand arguments by keyword, except fcompare's op, which may be given as the first
    positional after elemfmt: packed2(fcompare, 'f16', 'lt', a, b).
    """
    if elemfmt not in ("f16", "bf16"):
        raise ValueError(f"packed2 supports f16x2 / bf16x2 elements, not {elemfmt!r}")
    pre = []
    arrs = list(u32arrays)
    if arrs and isinstance(arrs[0], str):
        pre = [arrs.pop(0)]
    ops = [np.atleast_1d(np.asarray(x)).astype(np.uint32) for x in arrs]
    lo = [(x & np.uint32(0xFFFF)).astype(np.uint16) for x in ops]
    hi = [(x >> np.uint32(16)).astype(np.uint16) for x in ops]
    r0 = fn(elemfmt, *pre, *lo, **kw)
    r1 = fn(elemfmt, *pre, *hi, **kw)
    if np.asarray(r0).dtype == bool:
        return r0, r1
    return (r0.astype(np.uint32) | (r1.astype(np.uint32) << np.uint32(16))).astype(np.uint32)
