"""PTX `cvt` semantics for every supported type pair, on raw bit patterns.

PTX ISA 9.1 §9.7.9.21 cvt (Data Movement and Conversion Instructions: cvt), with the rounding
rules of its "Integer Notes" / "Floating Point Notes", the .ftz / .sat / .relu / .satfinite
modifiers, and the packed forms.

Entry points:
  * `cvt(dst, src, bits, rnd=None, ftz=False, sat=False, relu=False, satfinite=False)` -- one source
    operand: scalar conversions and the single-source packed forms
    (.e4m3x2/.e5m2x2 <- .f16x2, .f16x2 <- .e4m3x2/.e5m2x2/.e2m1x2/.e2m3x2/.e3m2x2,
    .ue8m0x2 <- .bf16x2, .bf16x2 <- .ue8m0x2).
  * `cvt_pair(dst_packed, a_bits, b_bits, rnd=None, relu=False, satfinite=False)` -- the two-source
    forms `cvt.<rnd>... .<dst_packed>.f32 d, a, b`.  OPERAND ORDER: as in the PTX text, `a` is the
    first source and lands in the UPPER half of d, `b` in the LOWER half
    (d[31:16]=cvt(a), d[15:0]=cvt(b) for f16x2/bf16x2; d[15:8]/d[7:0] for the 8-bit pairs;
    d[13:8]/d[5:0] with zero padding for e2m3x2/e3m2x2; d[7:4]/d[3:0] for e2m1x2).

Rounding-modifier names: integer rounding .rni .rzi .rmi .rpi; float rounding .rn .rz .rm .rp
(and .rna for .tf32).  Pass them without the dot ('rn', 'rzi', ...).

Semantics summary (PTX ISA 9.1 §9.7.9.21):
  * int -> int: no rounding modifier; narrower destination truncates, wider sign-extends when the
    source is signed (zero-extends otherwise); `.sat` clamps to the destination range and is
    illegal when the destination range contains the source range.
  * float -> int: .rni/.rzi/.rmi/.rpi required; out-of-range values saturate (PTX: float to int
    conversion always saturates; `.sat` is redundant).  `.ftz` flushes an f32 subnormal input.
    NaN -> 0 as PTX specifies, except what an H100 does: f64 sources give 1 << (n-1) (0x80000000
    for .s32 and .u32), and 64-bit destinations give 0x8000000000000000 from any source.
  * int -> float: .rn/.rz/.rm/.rp required, correctly rounded.
  * float -> float: narrowing (and f16 <-> bf16) requires .rn/.rz/.rm/.rp; widening is exact and
    takes no rounding modifier; same type takes none (identity, or .ftz / .sat effect) or an integer
    rounding modifier (round to an integral value in the same format).  NaN -> canonical NaN of the
    destination, except (measured on H100) conversions from f64 and widenings to f64, which keep
    sign and payload (quieted), and bf16 -> f32, which is a plain shift.  `.ftz` with an f32
    destination flushes results whose exact value is below 2**-126 (tininess before rounding).  `.sat` clamps to [+0, 1] (NaN -> +0).  `.relu`: negative
    -> +0, NaN -> canonical NaN.  `.satfinite`: |x| > MAX (Inf included) -> +-MAX, NaN -> NaN.
    `.ftz`: only when the source or destination is .f32; flushes f32 subnormal inputs and results.
  * f32 -> tf32: .rna (with optional .satfinite), or .rn/.rz (with optional .satfinite/.relu).
    The result is an f32 bit pattern with the low 13 bits zero.
  * fp8/fp6/fp4 destinations require .rn and .satfinite; NaN -> NaN (e4m3/e5m2: 0x7F), formats
    without NaN (e2m1, e2m3, e3m2) give +MAX (CUDA cuda_fp4.h/cuda_fp6.h documented behaviour).
  * ue8m0x2 destinations use .rz or .rp (optional .satfinite); the sign is ignored; values below
    2**-127 (incl. 0) give 0x00; NaN -> 0xFF; overflow -> 0xFE with .satfinite, 0xFF without (for
    .rp; .rz clamps to 0xFE).  Not yet confirmed on sm_100 hardware.

Unsupported (ValueError): .rs stochastic rounding and the x4 forms, the PTX 9.1
bf16x2 -> f8x2/f6x2/f4x2 and s2f6x2 forms, f32x2 destinations.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.formats import FORMATS, decode, encode, round_scaled

__all__ = ["cvt", "cvt_pair", "INT_TYPES", "FLOAT_TYPES"]

INT_TYPES = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
_IRND = ("rni", "rzi", "rmi", "rpi")
_FRND = ("rn", "rz", "rm", "rp")
_CANON_NAN = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0x7FFFFFFFFFFFFFFF,
              "tf32": 0x7FFFFFFF}
_WIDENING = {("f16", "f32"), ("f16", "f64"), ("bf16", "f32"), ("bf16", "f64"), ("f32", "f64")}


def _err(msg, dst, src):
    return ValueError(f"cvt .{dst}.{src}: {msg}")


def _dtype(name):
    return FORMATS[name].dtype


def _src_bits(src, bits):
    a = np.atleast_1d(np.asarray(bits))
    if a.dtype.kind not in "ui":
        raise ValueError(f"cvt expects raw bit patterns (unsigned integers), got dtype {a.dtype}")
    n = FORMATS[src].bits
    u = a.astype(np.uint64)
    if n < 64:
        u = u & np.uint64((1 << n) - 1)
    return u


def _f32_as_f64(u):
    """float64 values of f32 bit patterns (uint64 array), exactly.  A signalling NaN is quieted in the bits first:
    widening one in hardware raises the invalid-operation flag (numpy's "invalid value encountered in cast"
    warning) and quiets it anyway; callers map every NaN to the canonical NaN of their destination."""
    u = u.astype(np.uint32)
    snan = ((u & np.uint32(0x7F800000)) == np.uint32(0x7F800000)) & ((u & np.uint32(0x007FFFFF)) != 0)
    u = np.where(snan, u | np.uint32(0x00400000), u)
    return u.view(np.float32).astype(np.float64)


# ------------------------------------------------------------------------------------------
# integer helpers
# ------------------------------------------------------------------------------------------

def _int_value(src, u):
    """(neg, magnitude uint64) of integer bit patterns of type src."""
    n = FORMATS[src].bits
    if src[0] == "u":
        return np.zeros(u.shape, bool), u
    neg = ((u >> np.uint64(n - 1)) & np.uint64(1)).astype(bool)
    # two's complement magnitude within n bits
    mask = np.uint64((1 << n) - 1) if n < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    mag = np.where(neg, ((~u) + np.uint64(1)) & mask, u)
    if n == 64:
        mag = np.where(neg & (u == np.uint64(1 << 63)), np.uint64(1 << 63), mag)
    return neg, mag.astype(np.uint64)


def _int_range(dst):
    n = FORMATS[dst].bits
    if dst[0] == "u":
        return 0, (1 << n) - 1
    return -(1 << (n - 1)), (1 << (n - 1)) - 1


def _from_signed(dst, neg, mag):
    """Two's complement bits of value (-1)**neg*mag (already in range) in dst's container."""
    n = FORMATS[dst].bits
    u = np.where(neg, (~mag) + np.uint64(1), mag)
    if n < 64:
        u = u & np.uint64((1 << n) - 1)
    return u.astype(_dtype(dst))


def _clamp_int(dst, neg, mag):
    lo, hi = _int_range(dst)
    too_big = ~neg & (mag > np.uint64(hi))
    too_small = neg & (mag > np.uint64(-lo)) if lo < 0 else neg & (mag > np.uint64(0))
    m = np.where(too_big, np.uint64(hi), mag)
    n2 = np.where(too_small, lo < 0, neg)
    m = np.where(too_small, np.uint64(-lo), m)
    return n2.astype(bool), m.astype(np.uint64)


def _sat_possible(dst, src):
    """True when the source range is not contained in the destination range."""
    slo, shi = _int_range(src)
    dlo, dhi = _int_range(dst)
    return slo < dlo or shi > dhi


# ------------------------------------------------------------------------------------------
# float helpers
# ------------------------------------------------------------------------------------------

def _flush_f32(u):
    sub = ((u & np.uint64(0x7F800000)) == 0) & ((u & np.uint64(0x007FFFFF)) != 0)
    return np.where(sub, u & np.uint64(0x80000000), u)


def _is_sub(fmt, u):
    f = FORMATS[fmt]
    if fmt == "f64":
        em, fm = 0x7FF0000000000000, 0x000FFFFFFFFFFFFF
    else:
        em = ((1 << f.exp_bits) - 1) << f.man_bits
        fm = (1 << f.man_bits) - 1
    return ((u & np.uint64(em)) == 0) & ((u & np.uint64(fm)) != 0)


def _sign_mask(fmt):
    return 1 << (FORMATS[fmt].bits - 1) if fmt != "tf32" else 1 << 31


def _post(dst, out, ftz=False, sat=False, relu=False):
    """Apply .ftz (f32 result), .relu and .sat to destination bit patterns."""
    out = out.astype(np.uint64)
    v = decode(dst, out)
    if ftz and dst == "f32":
        out = np.where(_is_sub("f32", out), out & np.uint64(0x80000000), out)
        v = decode(dst, out)
    if relu:
        neg = ((out & np.uint64(_sign_mask(dst))) != 0) & ~np.isnan(v)
        out = np.where(neg, np.uint64(0), out)
    if sat:
        one = encode(dst, np.array([1.0]))[0].astype(np.uint64)
        out = np.where(np.isnan(v) | (v <= 0), np.uint64(0), np.where(v > 1.0, one, out))
    return out.astype(_dtype(dst))


_MANT = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}


def _nan_result(dst, src, u, ftz):
    """Destination bits for NaN sources, as measured on an H100 (sm_90): conversions from f64,
    and widening to f64, keep the sign and the top payload bits and set the quiet bit;
    bf16 -> f32 is a plain 16-bit shift (a signalling NaN stays signalling); f32 -> f64 with .ftz
    first canonicalises; every other float -> float conversion gives the destination's canonical
    NaN."""
    canon = np.full(u.shape, _CANON_NAN[dst], np.uint64)
    if src == "f32" and ftz:
        u = np.full(u.shape, 0x7FFFFFFF, np.uint64)
    if src == "bf16" and dst == "f32" and not ftz:
        return u << np.uint64(16)       # with .ftz: the canonical NaN (H100)
    if (src == "f64" and dst in ("f32", "f16", "bf16", "f64")) or (
            dst == "f64" and src in ("f32", "f16", "bf16")):
        sb, db = FORMATS[src].bits, FORMATS[dst].bits
        ms, md = _MANT[src], _MANT[dst]
        sign = (u >> np.uint64(sb - 1)) & np.uint64(1)
        mant = u & np.uint64((1 << ms) - 1)
        mant = mant >> np.uint64(ms - md) if ms >= md else mant << np.uint64(md - ms)
        expo = ((1 << (db - 1 - md)) - 1) << md
        return (sign << np.uint64(db - 1)) | np.uint64(expo) | np.uint64(1 << (md - 1)) | mant
    return canon


def _tf32_rna(u, satfinite):
    """cvt.rna{.satfinite}.tf32.f32 as the H100 computes it: integer arithmetic on the bit pattern -- a number
    gets half an ulp (0x1000) added to its magnitude before the 13 low bits are cleared (ties away from zero,
    overflow to Inf), a NaN is truncated (0x7F800001 becomes +Inf, 0x7FFFFFFF 0x7FFFE000); .satfinite then steps
    a result with an all-ones exponent down by one ulp (Inf -> MAX_NORM 0x7F7FE000, and a NaN to another NaN:
    0x7FC00000 -> 0x7FBFE000).  Measured over specials and random patterns (calib/probes group
    cvt_float) and by the fuzzer (tests/fuzz_regressions)."""
    u = u.astype(np.uint64)
    sign = u & np.uint64(0x80000000)
    mag = u & np.uint64(0x7FFFFFFF)
    nan = mag > np.uint64(0x7F800000)
    mag = np.where(nan, mag, mag + np.uint64(0x1000)) & np.uint64(0x7FFFE000)     # a NaN is truncated
    if satfinite:
        mag = np.where((mag & np.uint64(0x7F800000)) == np.uint64(0x7F800000), mag - np.uint64(0x2000), mag)
    return (mag | sign).astype(np.uint32)


def _tiny_after_rounding_f32(v, rnd):
    """|v| rounds (24 significant bits, unbounded exponent, mode ``rnd``) to a value below 2**-126."""
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(v)
        band = (a >= 2.0 ** -127) & (a < 2.0 ** -126)
        q = np.where(band, v * 2.0 ** 150, 0.0)          # exact: a power-of-two scaling; |q| in [2**23, 2**24)
        rq = {"rn": np.rint, "rz": np.trunc, "rm": np.floor, "rp": np.ceil}[rnd](q)
        return (a < 2.0 ** -127) | (band & (np.abs(rq) < 2.0 ** 24))


def _float_to_float(dst, src, u, rnd, ftz, sat, relu, satfinite):
    u_in = u
    if ftz and src == "f32" and dst != "f16":
        # cvt.ftz.f16.f32 does not flush an f32 subnormal input (H100: .rp of the smallest positive
        # subnormal gives 0x0001), the other .ftz conversions from .f32 do
        u = _flush_f32(u)
    v = decode(src, u)
    if rnd in _IRND:
        with np.errstate(invalid="ignore"):
            v = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rnd](v)
        r = "rn"
    else:
        r = rnd or "rn"   # widening / identity conversions are exact
    out = encode(dst, v, r, satfinite).astype(np.uint64)
    if ftz and dst == "f32" and src == "f64":
        # IEEE tininess *after* rounding (to 24 bits, exponent unbounded): an f64 just below 2**-126 that rounds
        # up to 2**-126 stays the smallest normal; one that is exactly a 24-bit number below it (even when
        # rn's tie-to-even would reach 2**-126 in the bounded format) flushes (H100, calib/probes cvt_float)
        out = np.where(_tiny_after_rounding_f32(v, r), out & np.uint64(0x80000000), out)
    isn = np.isnan(v)
    if isn.any() and not relu:
        out = np.where(isn, _nan_result(dst, src, u_in, ftz), out)
    return _post(dst, out, ftz, sat, relu)


def _float_to_int(dst, src, u, rnd, ftz):
    if ftz and src == "f32":
        u = _flush_f32(u)
    v = decode(src, u)
    with np.errstate(invalid="ignore"):
        r = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rnd](v)
    lo, hi = _int_range(dst)
    nan = np.isnan(r)
    r0 = np.where(nan, 0.0, r)
    n = FORMATS[dst].bits
    # NaN -> 0 (PTX), except where the H100 gives the pattern 1 << (n-1): every f64 source, and
    # 64-bit destinations from any source (measured; f16/bf16 -> 64-bit assumed alike)
    nan_bits = np.uint64(1 << (n - 1)) if (src == "f64" or n == 64) else np.uint64(0)
    neg = r0 < 0
    big_pos = r0 >= float(hi) + 1.0     # hi + 1 is a power of two: exact in float64
    big_neg = r0 < float(lo)            # lo is 0 or -2**(n-1): exact
    safe = np.where(big_pos | big_neg, 0.0, np.abs(r0))
    mag = safe.astype(np.uint64)        # |r| < 2**64 and integral: exact
    mag = np.where(big_pos, np.uint64(hi), mag)
    mag = np.where(big_neg, np.uint64(-lo), mag)
    neg = np.where(big_pos, False, neg)
    neg = np.where(big_neg, lo < 0, neg)
    neg = neg & (mag != 0)
    out = _from_signed(dst, neg.astype(bool), mag.astype(np.uint64))
    return np.where(nan, nan_bits, out.astype(np.uint64)).astype(_dtype(dst))


# ------------------------------------------------------------------------------------------
# public
# ------------------------------------------------------------------------------------------

_F8 = ("e4m3x2", "e5m2x2")
_F6 = ("e2m3x2", "e3m2x2")
_F4 = ("e2m1x2",)


def cvt(dst, src, bits, rnd=None, ftz=False, sat=False, relu=False, satfinite=False):
    """Convert `bits` (raw patterns of type `src`) to type `dst`.  PTX ISA 9.1 §9.7.9.21 cvt.

    Returns the destination's natural unsigned container (uint8/16/32/64; uint32 for tf32,
    uint16 for e4m3x2, uint8 for e2m1x2 ...).  Raises ValueError for a combination of types and
    modifiers that PTX does not allow (message names the rule), so the caller can turn it into a
    source-located diagnostic.  See the module docstring for the exact rules.
    """
    for t in (dst, src):
        if t not in FORMATS:
            raise ValueError(f"cvt: unknown type .{t}")
    if rnd is not None and rnd not in _IRND + _FRND + ("rna",):
        raise _err(f"unknown rounding modifier .{rnd}", dst, src)
    u = _src_bits(src, bits)

    # ---- packed single-source forms --------------------------------------------------------
    if FORMATS[dst].is_packed or FORMATS[src].is_packed:
        return _cvt_packed_single(dst, src, u, rnd, ftz, sat, relu, satfinite)

    if dst not in INT_TYPES + FLOAT_TYPES + ("tf32",) or src not in INT_TYPES + FLOAT_TYPES:
        raise _err("type pair not supported by cvt", dst, src)
    if ftz and "f32" not in (dst, src):
        raise _err(".ftz requires .f32 as source or destination type", dst, src)
    if (relu or satfinite) and not (src == "f32" and dst in ("f16", "bf16", "tf32")):
        raise _err(".relu/.satfinite are only allowed for .f16/.bf16/.tf32 <- .f32", dst, src)

    # ---- int <-> int -------------------------------------------------------------------------
    if dst in INT_TYPES and src in INT_TYPES:
        if rnd is not None:
            raise _err("rounding modifier not allowed for integer-to-integer conversion",
                       dst, src)
        neg, mag = _int_value(src, u)
        if sat:
            if not _sat_possible(dst, src):
                raise _err(".sat is illegal: the destination range contains the source range",
                           dst, src)
            neg, mag = _clamp_int(dst, neg, mag)
            return _from_signed(dst, neg, mag)
        return _from_signed(dst, neg, mag)   # truncation / sign- or zero-extension

    # ---- float -> int ------------------------------------------------------------------------
    if dst in INT_TYPES:
        if rnd not in _IRND:
            raise _err("float-to-integer conversion requires .rni/.rzi/.rmi/.rpi", dst, src)
        return _float_to_int(dst, src, u, rnd, ftz)

    # ---- int -> float ------------------------------------------------------------------------
    if src in INT_TYPES:
        if dst == "tf32":
            raise _err("tf32 destination requires an .f32 source", dst, src)
        if rnd not in _FRND:
            raise _err("integer-to-float conversion requires .rn/.rz/.rm/.rp", dst, src)
        neg, mag = _int_value(src, u)
        out = round_scaled(dst, neg, mag, np.zeros(u.shape, np.int64), None, rnd)
        return _post(dst, out, ftz, sat)

    # ---- float -> tf32 -----------------------------------------------------------------------
    if dst == "tf32":
        if src != "f32":
            raise _err("tf32 destination requires an .f32 source", dst, src)
        if rnd not in ("rna", "rn", "rz"):
            raise _err("tf32 conversion requires .rna, .rn or .rz", dst, src)
        if rnd == "rna" and relu:
            raise _err(".relu is not allowed with cvt.rna.tf32.f32", dst, src)
        if sat or ftz:
            raise _err(".sat/.ftz are not allowed for .tf32", dst, src)
        if rnd == "rna":
            return _tf32_rna(u, satfinite)
        v = decode("f32", u)
        out = encode("tf32", v, rnd, satfinite).astype(np.uint64)
        # .rn/.rz (.relu): a NaN gives the canonical tf32 NaN 0x7FFFE000, whatever its sign and payload
        # (H100, calib/probes group cvt_float)
        out = _post("tf32", out, relu=relu).astype(np.uint64)
        return np.where(np.isnan(v), np.uint64(0x7FFFE000), out).astype(np.uint32)

    # ---- float -> float ----------------------------------------------------------------------
    if sat and dst not in ("f16", "f32", "f64", "bf16"):
        raise _err(".sat not allowed", dst, src)
    if dst == src:
        if rnd is not None and rnd not in _IRND:
            raise _err("same-type float conversion takes no rounding or an integer rounding "
                       "modifier (.rni/.rzi/.rmi/.rpi)", dst, src)
        if rnd is None and not (ftz or sat or relu or satfinite) and dst in ("f32", "f64"):
            return u.astype(_dtype(dst))    # a plain move on the H100: NaN payload, sign, sNaN all kept
        return _float_to_float(dst, src, u, rnd, ftz, sat, relu, satfinite)
    if rnd in _IRND:
        raise _err("integer rounding modifiers require source and destination of the same type",
                   dst, src)
    if (src, dst) in _WIDENING:
        if rnd is not None and not (src == "bf16" and rnd in _FRND):
            raise _err("rounding modifier not allowed for a widening float conversion", dst, src)
        # ptxas accepts .rn/.rz/.rm/.rp on the (exact) widening of .bf16: they change nothing
        return _float_to_float(dst, src, u, None, ftz, sat, relu, satfinite)
    if rnd is None and {src, dst} == {"f16", "bf16"}:
        rnd = "rn"          # ptxas accepts cvt.f16.bf16 / cvt.bf16.f16 without a rounding modifier
    if rnd not in _FRND:
        raise _err("narrowing float conversion requires .rn/.rz/.rm/.rp", dst, src)
    if (relu or satfinite) and rnd not in ("rn", "rz"):
        raise _err(".relu/.satfinite require .rn or .rz", dst, src)
    return _float_to_float(dst, src, u, rnd, ftz, sat, relu, satfinite)


def _half_from_f32(dst_elem, v, rnd):
    """``encode(dst_elem, v, rnd)`` for f16 / bf16 with .rn / .rz, when every element of ``v`` (float64) is an
    f32 value: numpy's float32 -> float16 cast (IEEE round to nearest even, subnormals kept, overflow to Inf) or
    bf16's round-to-nearest-even on the f32 bits; .rz steps a result whose magnitude exceeds |v| one code toward
    zero (the correctly rounded .rn result is either the truncation or the next code up); NaN -> the canonical
    NaN.  Bit for bit ``encode`` (tests/numerics/test_convert_fast.py)."""
    f32 = v.astype(np.float32)
    if dst_elem == "f16":
        with np.errstate(over="ignore"):
            h = f32.astype(np.float16)
        bits = h.view(np.uint16).astype(np.uint64)
        back = h.astype(np.float64)
    else:
        u = f32.view(np.uint32).astype(np.uint64)
        bits = ((u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) \
            & np.uint64(0xFFFF)
        back = (bits << np.uint64(16)).astype(np.uint32).view(np.float32).astype(np.float64)
    if rnd == "rz":
        bits = np.where(np.abs(back) > np.abs(v), bits - np.uint64(1), bits)
    return np.where(np.isnan(v), np.uint64(_CANON_NAN[dst_elem]), bits)


def _elem(dst_elem, v, rnd, relu, satfinite, from_f32=False):
    """Encode float64 values into one element format with cvt's relu/satfinite semantics (``from_f32``: every
    value is an f32 value, which allows the f16 / bf16 fast path)."""
    if from_f32 and dst_elem in ("f16", "bf16") and rnd in ("rn", "rz") and not satfinite:
        out = _half_from_f32(dst_elem, v, rnd)
    else:
        out = encode(dst_elem, v, rnd, satfinite).astype(np.uint64)
    if relu:
        f = FORMATS[dst_elem]
        if f.signed:
            sb = np.uint64(1 << f.sign_bit)
            neg = ((out & sb) != 0) & ~np.isnan(v)
            out = np.where(neg, np.uint64(0), out)
    return out


def _pack2(dst, hi_elem_bits, lo_elem_bits):
    slot = FORMATS[dst].slot_bits
    r = (hi_elem_bits.astype(np.uint64) << np.uint64(slot)) | lo_elem_bits.astype(np.uint64)
    return r.astype(FORMATS[dst].dtype)


def _unpack2(src, u):
    f = FORMATS[src]
    slot = f.slot_bits
    mask = np.uint64((1 << slot) - 1)
    return (u >> np.uint64(slot)) & mask, u & mask


def _cvt_packed_single(dst, src, u, rnd, ftz, sat, relu, satfinite):
    if ftz or sat:
        raise _err(".ftz/.sat are not allowed for packed conversions", dst, src)
    # f16x2 -> e4m3x2 / e5m2x2
    if dst in _F8 and src == "f16x2":
        if rnd != "rn" or not satfinite:
            raise _err("requires .rn.satfinite", dst, src)
        hi, lo = (decode("f16", x) for x in _unpack2(src, u))
        e = FORMATS[dst].elem
        return _pack2(dst, _elem(e, hi, "rn", relu, True), _elem(e, lo, "rn", relu, True))
    # e4m3x2 / e5m2x2 / e2m1x2 / e2m3x2 / e3m2x2 -> f16x2
    if dst == "f16x2" and src in _F8 + _F6 + _F4:
        if rnd != "rn":
            raise _err("requires .rn", dst, src)
        if satfinite:
            raise _err(".satfinite not allowed", dst, src)
        e = FORMATS[src].elem
        hi, lo = (decode(e, x) for x in _unpack2(src, u))
        return _pack2(dst, _elem("f16", hi, "rn", relu, False), _elem("f16", lo, "rn", relu, False))
    # bf16x2 -> ue8m0x2
    if dst == "ue8m0x2" and src == "bf16x2":
        if rnd not in ("rz", "rp"):
            raise _err("requires .rz or .rp", dst, src)
        if relu:
            raise _err(".relu not allowed", dst, src)
        hi, lo = (decode("bf16", x) for x in _unpack2(src, u))
        return _pack2(dst, encode("ue8m0", hi, rnd, satfinite), encode("ue8m0", lo, rnd, satfinite))
    # ue8m0x2 -> bf16x2
    if dst == "bf16x2" and src == "ue8m0x2":
        if rnd != "rn":
            raise _err("requires .rn", dst, src)
        if relu or satfinite:
            raise _err(".relu/.satfinite not allowed", dst, src)
        hi, lo = (decode("ue8m0", x) for x in _unpack2(src, u))
        return _pack2(dst, encode("bf16", hi), encode("bf16", lo))
    if FORMATS[dst].is_packed and src == "f32":
        raise _err("two-source form: use cvt_pair(dst, a, b, ...)", dst, src)
    raise _err("packed conversion not supported", dst, src)


def cvt_pair(dst_packed, a_bits, b_bits, rnd=None, relu=False, satfinite=False):
    """Two-source packed conversion `cvt.<rnd>{.relu}{.satfinite}.<dst_packed>.f32 d, a, b`.
    PTX ISA 9.1 §9.7.9.21 cvt.

    `a_bits` and `b_bits` are f32 bit patterns (uint32 arrays).  Result: converted `a` in the UPPER
    element of d, converted `b` in the LOWER element (PTX: d[31:16]=cvt(a), d[15:0]=cvt(b) etc.).
    dst_packed and required modifiers:
      f16x2, bf16x2          .rn or .rz; optional .relu, .satfinite          -> uint32
      e4m3x2, e5m2x2         .rn.satfinite; optional .relu                    -> uint16
      e2m3x2, e3m2x2         .rn.satfinite; optional .relu (2 zero MSBs/byte) -> uint16
      e2m1x2                 .rn.satfinite; optional .relu                    -> uint8
      ue8m0x2                .rz or .rp; optional .satfinite                  -> uint16
    """
    if dst_packed not in FORMATS or not FORMATS[dst_packed].is_packed:
        raise ValueError(f"cvt_pair: .{dst_packed} is not a packed destination type")
    e = FORMATS[dst_packed].elem
    if dst_packed in ("f16x2", "bf16x2"):
        if rnd not in ("rn", "rz"):
            raise _err("requires .rn or .rz (.rs is not supported)", dst_packed, "f32")
    elif dst_packed in _F8 + _F6 + _F4:
        if rnd != "rn" or not satfinite:
            raise _err("requires .rn.satfinite", dst_packed, "f32")
    elif dst_packed == "ue8m0x2":
        if rnd not in ("rz", "rp"):
            raise _err("requires .rz or .rp", dst_packed, "f32")
        if relu:
            raise _err(".relu not allowed", dst_packed, "f32")
    else:
        raise _err("no two-source f32 form", dst_packed, "f32")
    if dst_packed in ("f16x2", "bf16x2") and not satfinite:
        # f32 values straight from their bits (a float32 view widened to float64 is the exact value: what
        # decode('f32') computes, NaN payloads aside, which _half_from_f32 replaces by the canonical NaN)
        a = _f32_as_f64(_src_bits("f32", a_bits))
        b = _f32_as_f64(_src_bits("f32", b_bits))
    else:
        a = decode("f32", _src_bits("f32", a_bits))
        b = decode("f32", _src_bits("f32", b_bits))
    a, b = np.broadcast_arrays(a, b)
    return _pack2(dst_packed, _elem(e, a, rnd, relu, satfinite, True), _elem(e, b, rnd, relu, satfinite, True))
