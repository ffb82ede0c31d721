"""The PTX `.approx` transcendental / reciprocal instructions, on raw bit patterns.

PTX ISA 9.1 §9.7.3.9 rcp.approx, §9.7.3.13 rsqrt.approx, §9.7.3.11 sqrt.approx, §9.7.3.14 sin,
§9.7.3.15 cos, §9.7.3.16 lg2, §9.7.3.17 ex2, §9.7.3.18 tanh, and the half-precision forms
§9.7.4.10 tanh / §9.7.4.11 ex2 (f16, bf16).

MODEL -- NOT YET KNOWN TO BE BIT-EXACT.  The hardware computes these on the SFU (MUFU) with a
table-interpolation algorithm that NVIDIA does not publish.  This module models every function as
the float64 result of numpy's libm (error < 1 ulp of float64) rounded once to nearest-even in the
destination format (`APPROX_MODEL = 'correctly-rounded-f64'`).  Results can differ from a GPU by a
few ulps (sin/cos by much more for large arguments, where the hardware's range reduction is
coarse); `ulp_distance` exists so a differential comparator can report that distance, and
`PTX_ERROR_BOUNDS` records the accuracy the PTX ISA promises, to judge the distance against.

What *is* exact here: the special cases the PTX ISA lists (ex2(-Inf)=+0, ex2(+Inf)=+Inf,
lg2(+-0)=-Inf, lg2(negative)=NaN, lg2(+Inf)=+Inf, rcp(+-0)=+-Inf, rcp(+-Inf)=+-0,
sqrt(-0)=-0, sqrt(negative)=NaN, rsqrt(+-0)=+-Inf, rsqrt(negative)=NaN, rsqrt(+Inf)=+0,
sin/cos(+-Inf)=NaN, sin(+-0)=+-0, tanh(+-Inf)=+-1 (saturating), tanh(+-0)=+-0), canonical NaN results
(f32 0x7FFFFFFF, f16/bf16 0x7FFF, f64 0x7FFFFFFFFFFFFFFF) and `.ftz` (subnormal inputs and results
flushed to sign-preserving zero); sin/cos flush subnormal inputs even without .ftz (measured).

Measured on an H100 (sm_90) against this model, ulp distance over ~30k inputs (tests marked gpu):
rcp/sqrt/rsqrt <= 1 ulp (87-91% identical); ex2 <= 2 ulp (70% identical); lg2 up to ~1100 ulp
where the result is near 0 (absolute-error bound; lg2(0.5) gives -0.99999994); tanh <= 123 ulp;
sin/cos: absolute error only (ulp distance meaningless for large arguments); ex2/tanh f16 and
bf16 <= 1 ulp.  Special cases all identical.

Not supported: sin/cos/lg2/ex2 in f64 (PTX has none), the rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64
"approximate" f64 algorithms are modelled the same way (correctly rounded).
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.formats import decode, encode

__all__ = [
    "APPROX_MODEL", "PTX_ERROR_BOUNDS", "ex2_approx", "lg2_approx", "rcp_approx", "sqrt_approx",
    "rsqrt_approx", "sin_approx", "cos_approx", "tanh_approx", "ex2_approx_f16",
    "ex2_approx_bf16", "tanh_approx_f16", "tanh_approx_bf16", "rcp_approx_f64",
    "rsqrt_approx_f64", "ulp_distance",
]

APPROX_MODEL = "correctly-rounded-f64"

#: Accuracy the PTX ISA text states for each .approx instruction (kind, bound).  Taken from the
#: PTX ISA descriptions as understood when this was written; a differential comparator should use
#: them as the tolerance until hardware probes give measured bit-exact behaviour.
PTX_ERROR_BOUNDS = {
    "rcp.approx.f32": ("ulp", 1.0),
    "sqrt.approx.f32": ("rel", 2.0 ** -23),
    "rsqrt.approx.f32": ("rel", 2.0 ** -22.9),
    "ex2.approx.f32": ("ulp", 2.0),
    "lg2.approx.f32": ("abs", 2.0 ** -22.6),
    "sin.approx.f32": ("abs", 2.0 ** -20.5),   # for |x| <= 100*pi; larger arguments are worse
    "cos.approx.f32": ("abs", 2.0 ** -20.5),
    "tanh.approx.f32": ("rel", 2.0 ** -11),
    "ex2.approx.f16": ("rel", 2.0 ** -9.9),
    "tanh.approx.f16": ("rel", 2.0 ** -10.987),
}

_DT = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}
_NAN = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0x7FFFFFFFFFFFFFFF}
_GEOM = {  # sign, exponent mask, fraction mask
    "f16": (0x8000, 0x7C00, 0x03FF),
    "bf16": (0x8000, 0x7F80, 0x007F),
    "f32": (0x80000000, 0x7F800000, 0x007FFFFF),
    "f64": (0x8000000000000000, 0x7FF0000000000000, 0x000FFFFFFFFFFFFF),
}


def _bits(fmt, a):
    x = np.atleast_1d(np.asarray(a))
    if x.dtype.kind not in "ui":
        raise ValueError(f"expected raw bit patterns (unsigned integers), got dtype {x.dtype}")
    return x.astype(_DT[fmt])


def _flush(fmt, b):
    s, em, fm = _GEOM[fmt]
    u = b.astype(np.uint64)
    sub = ((u & np.uint64(em)) == 0) & ((u & np.uint64(fm)) != 0)
    return np.where(sub, u & np.uint64(s), u).astype(_DT[fmt])


def _apply(fmt, fn, a, ftz):
    b = _bits(fmt, a)
    if ftz:
        b = _flush(fmt, b)
    v = decode(fmt, b)
    with np.errstate(all="ignore"):
        r = fn(v)
    out = encode(fmt, r, "rn").astype(_DT[fmt])
    if ftz:
        out = _flush(fmt, out)
    s, em, fm = _GEOM[fmt]
    u = out.astype(np.uint64)
    nan = ((u & np.uint64(em)) == np.uint64(em)) & ((u & np.uint64(fm)) != 0)
    return np.where(nan, _DT[fmt](_NAN[fmt]), out).astype(_DT[fmt])


def _rcp(v):
    return 1.0 / v


def _rsqrt(v):
    return 1.0 / np.sqrt(v)


def _flush64(v):
    """sin/cos.approx flush subnormal f32 inputs even without .ftz (measured on H100:
    sin.approx.f32(2**-149) = +0)."""
    return np.where(np.abs(v) < 2.0 ** -126, np.copysign(0.0, v), v)


def _sin(v):
    v = _flush64(v)
    return np.where(np.isinf(v), np.nan, np.sin(v))


def _cos(v):
    v = _flush64(v)
    return np.where(np.isinf(v), np.nan, np.cos(v))


def ex2_approx(a, ftz=False):
    """d = 2**a (f32).  PTX ISA 9.1 §9.7.3.17 ex2.approx{.ftz}.f32.  Model: correctly rounded
    from float64; NOT yet known to be bit-exact vs the GPU.  ex2(-Inf)=+0, ex2(+Inf)=+Inf."""
    return _apply("f32", np.exp2, a, ftz)


def lg2_approx(a, ftz=False):
    """d = log2(a) (f32).  PTX ISA 9.1 §9.7.3.16 lg2.approx{.ftz}.f32.  Model: correctly rounded
    from float64; NOT yet known to be bit-exact.  lg2(+-0)=-Inf, lg2(a<0)=NaN, lg2(+Inf)=+Inf."""
    return _apply("f32", np.log2, a, ftz)


def rcp_approx(a, ftz=False):
    """d = 1/a (f32).  PTX ISA 9.1 §9.7.3.9 rcp.approx{.ftz}.f32.  Model: correctly rounded; NOT
    yet known to be bit-exact.  rcp(+-0)=+-Inf, rcp(+-Inf)=+-0."""
    return _apply("f32", _rcp, a, ftz)


def sqrt_approx(a, ftz=False):
    """d = sqrt(a) (f32).  PTX ISA 9.1 §9.7.3.11 sqrt.approx{.ftz}.f32.  Model: correctly rounded;
    NOT yet known to be bit-exact.  sqrt(-0)=-0, sqrt(a<0)=NaN, sqrt(+Inf)=+Inf."""
    return _apply("f32", np.sqrt, a, ftz)


def rsqrt_approx(a, ftz=False):
    """d = 1/sqrt(a) (f32).  PTX ISA 9.1 §9.7.3.13 rsqrt.approx{.ftz}.f32.  Model: correctly
    rounded from float64; NOT yet known to be bit-exact.  rsqrt(+-0)=+-Inf, rsqrt(a<0)=NaN,
    rsqrt(+Inf)=+0."""
    return _apply("f32", _rsqrt, a, ftz)


def sin_approx(a, ftz=False):
    """d = sin(a) (f32, radians).  PTX ISA 9.1 §9.7.3.14 sin.approx{.ftz}.f32.  Model: correctly
    rounded from float64; NOT yet known to be bit-exact (the GPU's error grows with |a|).
    sin(+-Inf)=NaN, sin(+-0)=+-0."""
    return _apply("f32", _sin, a, ftz)


def cos_approx(a, ftz=False):
    """d = cos(a) (f32, radians).  PTX ISA 9.1 §9.7.3.15 cos.approx{.ftz}.f32.  Model: correctly
    rounded from float64; NOT yet known to be bit-exact.  cos(+-Inf)=NaN, cos(+-0)=1."""
    return _apply("f32", _cos, a, ftz)


def tanh_approx(a, ftz=False):
    """d = tanh(a) (f32).  PTX ISA 9.1 §9.7.3.18 tanh.approx.f32.  Model: correctly rounded from
    float64; NOT yet known to be bit-exact.  Saturates: tanh(+-Inf)=+-1, tanh(+-0)=+-0.
    (`ftz` is accepted for symmetry; PTX tanh.approx.f32 has no .ftz.)"""
    return _apply("f32", np.tanh, a, ftz)


def ex2_approx_f16(a, ftz=False):
    """d = 2**a (f16).  PTX ISA 9.1 §9.7.4.11 ex2.approx.f16 (and .f16x2 per element).  Model:
    correctly rounded from float64; NOT yet known to be bit-exact."""
    return _apply("f16", np.exp2, a, ftz)


def ex2_approx_bf16(a, ftz=True):
    """d = 2**a (bf16).  PTX ISA 9.1 §9.7.4.11 ex2.approx.ftz.bf16 (and .bf16x2 per element; the
    instruction always flushes subnormals).  Model: correctly rounded; NOT yet known to be
    bit-exact."""
    return _apply("bf16", np.exp2, a, ftz)


def tanh_approx_f16(a):
    """d = tanh(a) (f16).  PTX ISA 9.1 §9.7.4.10 tanh.approx.f16 (.f16x2 per element).  Model:
    correctly rounded from float64; NOT yet known to be bit-exact."""
    return _apply("f16", np.tanh, a, False)


def tanh_approx_bf16(a):
    """d = tanh(a) (bf16).  PTX ISA 9.1 §9.7.4.10 tanh.approx.bf16 (.bf16x2 per element).  Model:
    correctly rounded from float64; NOT yet known to be bit-exact."""
    return _apply("bf16", np.tanh, a, False)


def rcp_approx_f64(a, ftz=True):
    """d = 1/a (f64).  PTX ISA 9.1 §9.7.3.9 rcp.approx.ftz.f64.  Model: correctly rounded with
    subnormal flushing; NOT yet known to be bit-exact (the hardware uses a reduced-precision
    table)."""
    return _apply("f64", _rcp, a, ftz)


def rsqrt_approx_f64(a, ftz=True):
    """d = 1/sqrt(a) (f64).  PTX ISA 9.1 §9.7.3.13 rsqrt.approx.ftz.f64.  Model: correctly
    rounded; NOT yet known to be bit-exact."""
    return _apply("f64", _rsqrt, a, ftz)


def ulp_distance(fmt, a_bits, b_bits):
    """Distance in units in the last place between two encodings of `fmt` (f16, bf16, f32, f64):
    the number of representable values between them (+0 and -0 are the same point, so they are 0
    apart; neighbouring floats are 1 apart; crossing zero counts the values on both sides).
    Both NaN -> 0; exactly one NaN -> the maximum int64 value.  Returns int64 (saturating).
    Used by the differential comparator to report `.approx` results against the GPU
    (PTX ISA 9.1 §9.7.3, approximate instructions)."""
    if fmt not in _GEOM:
        raise ValueError(f"ulp_distance: unsupported format {fmt!r}")
    a = _bits(fmt, a_bits).astype(np.uint64)
    b = _bits(fmt, b_bits).astype(np.uint64)
    s, em, fm = _GEOM[fmt]
    mag = np.uint64(s - 1)
    na = ((a & np.uint64(em)) == np.uint64(em)) & ((a & np.uint64(fm)) != 0)
    nb = ((b & np.uint64(em)) == np.uint64(em)) & ((b & np.uint64(fm)) != 0)
    ma, mb = (a & mag).astype(np.int64), (b & mag).astype(np.int64)   # < 2**63
    sa, sb = (a & np.uint64(s)) != 0, (b & np.uint64(s)) != 0
    same = (sa == sb) | (ma == 0) | (mb == 0)
    top = np.iinfo(np.int64).max
    d_same = np.abs(ma - mb)
    with np.errstate(over="ignore"):
        tot = ma + mb
    d_diff = np.where(ma > top - mb, top, tot)
    d = np.where(same, d_same, d_diff)
    d = np.where(na & nb, 0, np.where(na | nb, top, d))
    return d.astype(np.int64)
