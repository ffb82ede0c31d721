"""Floating-point arithmetic (PTX ISA 9.1 §9.7.3, §9.7.4) as two-warp kernels, compared with an independent
exact model: operands decoded with numpy, the exact result formed with ``fractions.Fraction`` and rounded by a
small reference rounder below (all four rounding modes, subnormals, overflow).  NaN, Inf, -0 and subnormal
operands are among the inputs of every test.  The .approx functions are checked against numpy within the
PTX ISA's stated error bounds plus their special values.  Illegal forms carry ptxas's diagnostics."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tcsim.isa.errors import UnsupportedError, VerifyError
from test_integer import (N, decode_error, f32_bits, f32_values, flush_f32, half_bits, half_values, needs_ptxas,
                          ptxas_accepts, run_body)

# ------------------------------------------------------------------------------------------- reference rounder
FMT = {  # precision p (with hidden bit), emin, emax, total bits
    "f32": (24, -126, 127, 32), "f64": (53, -1022, 1023, 64), "f16": (11, -14, 15, 16), "bf16": (8, -126, 127, 16),
}
CANON = {"f32": 0x7FFFFFFF, "f16": 0x7FFF, "bf16": 0x7FFF}


def encode_exact(fmt, value: float) -> int:
    """Bits of a float64 value already representable in fmt (or +-inf)."""
    if fmt == "f64":
        return int(np.array(value, np.float64).view(np.uint64))
    if fmt == "f32":
        return int(np.array(value, np.float32).view(np.uint32))
    if fmt == "f16":
        return int(np.array(value, np.float16).view(np.uint16))
    return int(np.array(value, np.float32).view(np.uint32)) >> 16


def round_ref(fmt, x: Fraction, mode: str, neg_zero: bool = False) -> int:
    """Correctly round the exact value x to fmt under rn/rz/rm/rp."""
    p, emin, emax, _ = FMT[fmt]
    if x == 0:
        return encode_exact(fmt, -0.0 if neg_zero else 0.0)
    neg = x < 0
    a = -x if neg else x
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = max(e - p + 1, emin - p + 1)
    m = a / Fraction(2) ** q
    n = m.numerator // m.denominator
    rem = m - n
    away = {"rn": rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1), "rz": False,
            "rp": rem > 0 and not neg, "rm": rem > 0 and neg}[mode]
    n += int(away)
    v = Fraction(n) * Fraction(2) ** q
    maxv = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if v > maxv:
        to_inf = mode == "rn" or (mode == "rp" and not neg) or (mode == "rm" and neg)
        return encode_exact(fmt, (-1 if neg else 1) * (math.inf if to_inf else float(maxv)))
    return encode_exact(fmt, -float(v) if neg else float(v))


def values(fmt, bits):
    if fmt == "f32":
        return f32_values(bits)
    if fmt == "f64":
        return np.asarray(bits, np.uint64).view(np.float64)
    return half_values(bits, fmt)


def flush(fmt, bits):
    if fmt == "f32":
        return flush_f32(bits)
    p, emin, emax, nb = FMT[fmt]
    b = np.asarray(bits).astype(np.uint64)
    expm = ((1 << (nb - p)) - 1) << (p - 1) if fmt != "f64" else 0x7FF << 52
    sub = ((b & np.uint64(expm)) == 0) & ((b & np.uint64((1 << (p - 1)) - 1)) != 0)
    return np.where(sub, b & np.uint64(1 << (nb - 1)), b).astype(np.asarray(bits).dtype)


def ref_op(fmt, op, xs, mode="rn", ftz=False, sat=False, relu=False):
    """Reference result bits, lane by lane: op in add sub mul fma div."""
    bits = [flush(fmt, x) if ftz else np.asarray(x) for x in xs]
    vals = [values(fmt, b) for b in bits]
    out = []
    for lane in range(len(vals[0])):
        v = [float(w[lane]) for w in vals]
        with np.errstate(all="ignore"):
            f = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                 "fma": lambda a, b, c: a * b + c, "div": lambda a, b: a / b}[op]
            approx = f(*[np.float64(t) for t in v])
        if any(math.isnan(t) or math.isinf(t) for t in v) or (op == "div" and v[1] == 0):
            r = CANON.get(fmt) if math.isnan(approx) else encode_exact(fmt, float(approx))
            if fmt == "f64" and math.isnan(approx):
                r = None                       # NaN-ness only (see module docstring of float_arith)
        else:
            F = [Fraction(t) for t in v]
            exact = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                     "fma": lambda a, b, c: a * b + c, "div": lambda a, b: a / b}[op](*F)
            if exact == 0:
                sg = [math.copysign(1.0, t) < 0 for t in v]
                if op in ("add", "sub", "fma"):        # IEEE 754 §6.3: exact zero sum
                    s1 = sg[0] != sg[1] if op == "fma" else sg[0]
                    s2 = sg[2] if op == "fma" else (sg[1] != (op == "sub"))
                    nz = s1 if s1 == s2 else (mode == "rm")
                else:
                    nz = sg[0] != sg[1]
                r = round_ref(fmt, exact, mode, neg_zero=nz)
            else:
                r = round_ref(fmt, exact, mode)
        if r is not None and ftz:
            r = int(flush(fmt, np.array([r], dtype=np.asarray(xs[0]).dtype))[0])
        if r is not None and sat:
            x = float(values(fmt, np.array([r], dtype=np.asarray(xs[0]).dtype))[0])
            r = 0 if (math.isnan(x) or x <= 0) else (encode_exact(fmt, 1.0) if x > 1 else r)
        if r is not None and relu:
            x = float(values(fmt, np.array([r], dtype=np.asarray(xs[0]).dtype))[0])
            r = r if math.isnan(x) or (x > 0) else 0
        out.append(r)
    return out


def assert_bits(out, want, fmt="f32"):
    got = [int(x) for x in out]
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if w is not None and g != w]
    nan_bad = [i for i, (g, w) in enumerate(zip(got, want))
               if w is None and not math.isnan(float(values(fmt, np.array([g], dtype=np.asarray(out).dtype))[0]))]
    assert not bad and not nan_bad, f"lanes {bad[:6]}{nan_bad[:6]}: got {[hex(got[i]) for i in bad[:4]]} " \
                                    f"want {[hex(want[i]) for i in bad[:4]]}"


# ------------------------------------------------------------------------------------------- f32 / f64
@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_f32_add_sub_mul_fma_div_all_roundings(mode):
    rng = np.random.default_rng(ord(mode[1]))
    a, b, c = f32_bits(rng), f32_bits(rng)[::-1].copy(), f32_bits(rng)
    body = f"""add.{mode}.f32 %o1, %a, %b; sub.{mode}.f32 %o2, %a, %b; mul.{mode}.f32 %o3, %a, %b;
               fma.{mode}.f32 %o4, %a, %b, %c; div.{mode}.f32 %o5, %a, %b; mad.{mode}.f32 %o6, %a, %b, %c;"""
    out = run_body(body, {"a": "f32", "b": "f32", "c": "f32"}, {f"o{i}": "b32" for i in range(1, 7)},
                   {"a": a, "b": b, "c": c})
    assert_bits(out["o1"], ref_op("f32", "add", [a, b], mode))
    assert_bits(out["o2"], ref_op("f32", "sub", [a, b], mode))
    assert_bits(out["o3"], ref_op("f32", "mul", [a, b], mode))
    assert_bits(out["o4"], ref_op("f32", "fma", [a, b, c], mode))
    assert_bits(out["o5"], ref_op("f32", "div", [a, b], mode))
    assert_bits(out["o6"], ref_op("f32", "fma", [a, b, c], mode))


def test_f32_ftz_sat_and_default_rounding():
    rng = np.random.default_rng(1)
    a, b, c = f32_bits(rng, lo=0, hi=4), f32_bits(rng)[::-1].copy(), f32_bits(rng, lo=0, hi=3)
    a[40:48] = [0x3F000000, 0x3F800000, 0x40000000, 0xBF000000, 0x3F7FFFFF, 0x3F800001, 0x7FC00000, 0x80000000]
    body = """add.f32 %o1, %a, %b; add.ftz.f32 %o2, %a, %c; mul.rz.ftz.f32 %o3, %a, %c; add.sat.f32 %o4, %a, %b;
              fma.rn.ftz.sat.f32 %o5, %a, %b, %c; sub.rp.sat.f32 %o6, %b, %a; mul.f32 %o7, %a, %c;"""
    out = run_body(body, {"a": "f32", "b": "f32", "c": "f32"}, {f"o{i}": "b32" for i in range(1, 8)},
                   {"a": a, "b": b, "c": c})
    assert_bits(out["o1"], ref_op("f32", "add", [a, b]))
    assert_bits(out["o2"], ref_op("f32", "add", [a, c], ftz=True))
    assert_bits(out["o3"], ref_op("f32", "mul", [a, c], "rz", ftz=True))
    assert_bits(out["o4"], ref_op("f32", "add", [a, b], sat=True))
    assert_bits(out["o5"], ref_op("f32", "fma", [a, b, c], ftz=True, sat=True))
    assert_bits(out["o6"], ref_op("f32", "sub", [b, a], "rp", sat=True))
    assert_bits(out["o7"], ref_op("f32", "mul", [a, c]))


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_f64_arith(mode):
    rng = np.random.default_rng(ord(mode[1]) + 100)

    def f64(r):
        v = (r.integers(0, 2, N).astype(np.uint64) << np.uint64(63)) | \
            (r.integers(960, 1090, N).astype(np.uint64) << np.uint64(52)) | r.integers(0, 1 << 52, N, dtype=np.uint64)
        v[:10] = [0, 1 << 63, 0x3FF0000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
                  1, 0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0x0010000000000000]
        return v
    a, b, c = f64(rng), f64(rng)[::-1].copy(), f64(rng)
    body = f"""add.{mode}.f64 %o1, %a, %b; mul.{mode}.f64 %o2, %a, %b; fma.{mode}.f64 %o3, %a, %b, %c;
               div.{mode}.f64 %o4, %a, %b; sub.{mode}.f64 %o5, %a, %b;"""
    out = run_body(body, {"a": "f64", "b": "f64", "c": "f64"}, {f"o{i}": "b64" for i in range(1, 6)},
                   {"a": a, "b": b, "c": c})
    assert_bits(out["o1"], ref_op("f64", "add", [a, b], mode), "f64")
    assert_bits(out["o2"], ref_op("f64", "mul", [a, b], mode), "f64")
    assert_bits(out["o3"], ref_op("f64", "fma", [a, b, c], mode), "f64")
    assert_bits(out["o4"], ref_op("f64", "div", [a, b], mode), "f64")
    assert_bits(out["o5"], ref_op("f64", "sub", [a, b], mode), "f64")


def test_sqrt_and_rcp_rn():
    rng = np.random.default_rng(2)
    a = f32_bits(rng)
    body = "sqrt.rn.f32 %o1, %a; rcp.rn.f32 %o2, %a; sqrt.rn.ftz.f32 %o3, %a; rcp.rz.f32 %o4, %a;"
    out = run_body(body, {"a": "f32"}, {f"o{i}": "b32" for i in range(1, 5)}, {"a": a})
    x = a.view(np.float32)
    with np.errstate(all="ignore"):
        want = np.sqrt(x).view(np.uint32)
        want_ftz = np.sqrt(flush_f32(a).view(np.float32)).view(np.uint32)
    isnan = np.isnan(want.view(np.float32))
    assert (np.where(isnan, 0x7FFFFFFF, want) == out["o1"]).all()
    assert (np.where(np.isnan(want_ftz.view(np.float32)), 0x7FFFFFFF, want_ftz) == out["o3"]).all()
    one = np.full(N, 0x3F800000, np.uint32)
    assert_bits(out["o2"], ref_op("f32", "div", [one, a], "rn"))
    assert_bits(out["o4"], ref_op("f32", "div", [one, a], "rz"))


# ------------------------------------------------------------------------------------------- half precision
@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_half_scalar_and_packed(kind):
    rng = np.random.default_rng(3 if kind == "f16" else 4)
    a, b, c = half_bits(rng, kind), half_bits(rng, kind)[::-1].copy(), half_bits(rng, kind)
    a2 = a.astype(np.uint32) | (c.astype(np.uint32) << 16)
    b2 = b.astype(np.uint32) | (a.astype(np.uint32) << 16)
    c2 = c.astype(np.uint32) | (b.astype(np.uint32) << 16)
    t = kind
    extra = "add.rn.ftz.sat.f16 %o6, %a, %b; fma.rn.ftz.f16 %o7, %a, %b, %c;" if kind == "f16" else \
        "sub.bf16 %o6, %a, %b; fma.rn.bf16 %o7, %a, %b, %c;"
    body = f"""add.{t} %o1, %a, %b; mul.rn.{t} %o2, %a, %b; fma.rn.{t} %o3, %a, %b, %c; fma.rn.relu.{t} %o4, %a, %b, %c;
               sub.rn.{t} %o5, %a, %b; {extra}
               add.{t}x2 %p1, %x, %y; fma.rn.relu.{t}x2 %p2, %x, %y, %z; mul.rn.{t}x2 %p3, %x, %y;"""
    out = run_body(body, {"a": "b16", "b": "b16", "c": "b16", "x": "b32", "y": "b32", "z": "b32"},
                   {**{f"o{i}": "b16" for i in range(1, 8)}, **{f"p{i}": "b32" for i in range(1, 4)}},
                   {"a": a, "b": b, "c": c, "x": a2, "y": b2, "z": c2})
    assert_bits(out["o1"], ref_op(t, "add", [a, b]), t)
    assert_bits(out["o2"], ref_op(t, "mul", [a, b]), t)
    assert_bits(out["o3"], ref_op(t, "fma", [a, b, c]), t)
    assert_bits(out["o4"], ref_op(t, "fma", [a, b, c], relu=True), t)
    assert_bits(out["o5"], ref_op(t, "sub", [a, b]), t)
    if kind == "f16":
        assert_bits(out["o6"], ref_op(t, "add", [a, b], ftz=True, sat=True), t)
        assert_bits(out["o7"], ref_op(t, "fma", [a, b, c], ftz=True), t)
    else:
        assert_bits(out["o6"], ref_op(t, "sub", [a, b]), t)
        assert_bits(out["o7"], ref_op(t, "fma", [a, b, c]), t)

    def pk(lo, hi):
        return [None if x is None or y is None else (x | (y << 16)) for x, y in zip(lo, hi)]
    assert_bits(out["p1"], pk(ref_op(t, "add", [a, b]), ref_op(t, "add", [c, a])), "f32")
    assert_bits(out["p2"], pk(ref_op(t, "fma", [a, b, c], relu=True), ref_op(t, "fma", [c, a, b], relu=True)), "f32")
    assert_bits(out["p3"], pk(ref_op(t, "mul", [a, b]), ref_op(t, "mul", [c, a])), "f32")


def test_f32x2_and_mixed_precision_sm100():
    rng = np.random.default_rng(5)
    lo, hi, lo2, hi2 = (f32_bits(rng) for _ in range(4))
    x = lo.astype(np.uint64) | (hi.astype(np.uint64) << np.uint64(32))
    y = lo2.astype(np.uint64) | (hi2.astype(np.uint64) << np.uint64(32))
    h = half_bits(rng, "f16")
    body = """add.rz.f32x2 %w1, %x, %y; mul.f32x2 %w2, %x, %y; fma.rn.f32x2 %w3, %x, %y, %x;
              add.f32.f16 %o1, %h, %a; fma.rn.f32.f16 %o2, %h, %h, %a; sub.rm.f32.f16 %o3, %h, %a;"""
    out = run_body(body, {"x": "b64", "y": "b64", "h": "b16", "a": "f32"},
                   {"w1": "b64", "w2": "b64", "w3": "b64", "o1": "b32", "o2": "b32", "o3": "b32"},
                   {"x": x, "y": y, "h": h, "a": lo2})

    def pk(a, b):
        return [None if p is None or q is None else p | (q << 32) for p, q in zip(a, b)]
    assert_bits(out["w1"], pk(ref_op("f32", "add", [lo, lo2], "rz"), ref_op("f32", "add", [hi, hi2], "rz")), "f64")
    assert_bits(out["w2"], pk(ref_op("f32", "mul", [lo, lo2]), ref_op("f32", "mul", [hi, hi2])), "f64")
    assert_bits(out["w3"], pk(ref_op("f32", "fma", [lo, lo2, lo]), ref_op("f32", "fma", [hi, hi2, hi])), "f64")
    with np.errstate(invalid="ignore"):
        hf = half_values(h, "f16").astype(np.float32).view(np.uint32)      # exact widening
    assert_bits(out["o1"], ref_op("f32", "add", [hf, lo2]))
    assert_bits(out["o2"], ref_op("f32", "fma", [hf, hf, lo2]))
    assert_bits(out["o3"], ref_op("f32", "sub", [hf, lo2], "rm"))


# ------------------------------------------------------------------------------------------- min max abs neg
def _minmax_ref(fmt, a, b, is_max, nan=False, xorsign=False, ftz=False):
    if ftz:
        a, b = flush(fmt, a), flush(fmt, b)
    va, vb = values(fmt, a), values(fmt, b)
    nb = FMT[fmt][3]
    sign = 1 << (nb - 1)
    out = []
    for i in range(len(va)):
        x, y, bx, by = float(va[i]), float(vb[i]), int(a[i]), int(b[i])
        s = (bx ^ by) & sign
        if xorsign:
            x, y, bx, by = abs(x), abs(y), bx & (sign - 1), by & (sign - 1)
        if math.isnan(x) and math.isnan(y) or (nan and (math.isnan(x) or math.isnan(y))):
            out.append(CANON[fmt])
            continue
        if math.isnan(x):
            r = by
        elif math.isnan(y):
            r = bx
        elif x == y:        # -0 < +0
            r = (bx if not (bx & sign) else by) if is_max else (bx if bx & sign else by)
        else:
            r = bx if ((x > y) == is_max) else by
        out.append(r | s if xorsign else r)
    return out


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
def test_min_max_variants(fmt):
    rng = np.random.default_rng(6)
    if fmt == "f32":
        a, b = f32_bits(rng), f32_bits(rng)[::-1].copy()
        a[30:34] = [0x80000000, 0x00000000, 0x7FC00000, 0x00000001]
        b[30:34] = [0x00000000, 0x80000000, 0x7F800001, 0x80000000]
        rt = "f32"
    else:
        a, b = half_bits(rng, fmt), half_bits(rng, fmt)[::-1].copy()
        rt = "b16"
    ftz = ".ftz" if fmt != "bf16" else ""
    body = f"""min.{fmt} %o1, %a, %b; max.{fmt} %o2, %a, %b; min.NaN.{fmt} %o3, %a, %b; max{ftz}.NaN.{fmt} %o4, %a, %b;
               min.xorsign.abs.{fmt} %o5, %a, %b; max.NaN.xorsign.abs.{fmt} %o6, %a, %b;"""
    ot = "b32" if fmt == "f32" else "b16"
    out = run_body(body, {"a": rt, "b": rt}, {f"o{i}": ot for i in range(1, 7)}, {"a": a, "b": b})
    assert [int(v) for v in out["o1"]] == _minmax_ref(fmt, a, b, False)
    assert [int(v) for v in out["o2"]] == _minmax_ref(fmt, a, b, True)
    assert [int(v) for v in out["o3"]] == _minmax_ref(fmt, a, b, False, nan=True)
    assert [int(v) for v in out["o4"]] == _minmax_ref(fmt, a, b, True, nan=True, ftz=bool(ftz))
    assert [int(v) for v in out["o5"]] == _minmax_ref(fmt, a, b, False, xorsign=True)
    assert [int(v) for v in out["o6"]] == _minmax_ref(fmt, a, b, True, nan=True, xorsign=True)


def test_three_input_min_max_sm100():
    rng = np.random.default_rng(7)
    a, b, c = f32_bits(rng), f32_bits(rng)[::-1].copy(), f32_bits(rng)
    body = "min.f32 %o1, %a, %b, %c; max.NaN.f32 %o2, %a, %b, %c; min.abs.f32 %o3, %a, %b, %c;"
    out = run_body(body, {"a": "f32", "b": "f32", "c": "f32"}, {f"o{i}": "b32" for i in range(1, 4)},
                   {"a": a, "b": b, "c": c})
    ab = np.array(_minmax_ref("f32", a, b, False), np.uint32)
    assert [int(v) for v in out["o1"]] == _minmax_ref("f32", ab, c, False)
    abn = np.array(_minmax_ref("f32", a, b, True, nan=True), np.uint32)
    assert [int(v) for v in out["o2"]] == _minmax_ref("f32", abn, c, True, nan=True)
    m = np.uint32(0x7FFFFFFF)
    aa = np.array(_minmax_ref("f32", a & m, b & m, False), np.uint32)
    assert [int(v) for v in out["o3"]] == _minmax_ref("f32", aa, c & m, False)


def test_abs_neg_copysign_testp():
    """abs/neg flip/clear the sign bit; NaN inputs give the GPU's NaN (f32/f16/bf16: canonical; f64: the input
    quieted, sign unchanged: measured on an H100); testp.normal is true for +-0 (H100)."""
    rng = np.random.default_rng(8)
    a, b = f32_bits(rng), f32_bits(rng)[::-1].copy()
    d = np.array([0x7FF0000000000001, 0xFFF8000000000000, 0x3FF0000000000000, 0x8000000000000000] * 16, np.uint64)
    h = half_bits(rng, "f16")
    body = """abs.f32 %o1, %a; neg.f32 %o2, %a; abs.ftz.f32 %o3, %a; neg.ftz.f32 %o4, %a; copysign.f32 %o5, %a, %b;
              abs.f64 %w1, %d; neg.f64 %w2, %d; copysign.f64 %w3, %d, %d; abs.f16 %k1, %h; neg.f16 %k2, %h;
              testp.finite.f32 %q1, %a; testp.infinite.f32 %q2, %a; testp.number.f32 %q3, %a;
              testp.notanumber.f32 %q4, %a; testp.normal.f32 %q5, %a; testp.subnormal.f32 %q6, %a;
              testp.normal.f64 %q7, %d;"""
    out = run_body(body, {"a": "f32", "b": "f32", "d": "f64", "h": "b16"},
                   {**{f"o{i}": "b32" for i in range(1, 6)}, **{f"w{i}": "b64" for i in range(1, 4)},
                    "k1": "b16", "k2": "b16", **{f"q{i}": "pred" for i in range(1, 8)}},
                   {"a": a, "b": b, "d": d, "h": h})
    x = f32_values(a)
    nan = np.isnan(x)
    S = np.uint32(0x80000000)
    assert (out["o1"] == np.where(nan, 0x7FFFFFFF, a & ~S)).all()
    assert (out["o2"] == np.where(nan, 0x7FFFFFFF, a ^ S)).all()
    af = flush_f32(a)
    assert (out["o3"] == np.where(nan, 0x7FFFFFFF, af & ~S)).all()
    assert (out["o4"] == np.where(nan, 0x7FFFFFFF, af ^ S)).all()
    assert (out["o5"] == ((b & ~S) | (a & S))).all()
    assert out["w1"][:4].tolist() == [0x7FF8000000000001, 0xFFF8000000000000, 0x3FF0000000000000, 0]
    assert out["w2"][:4].tolist() == [0x7FF8000000000001, 0xFFF8000000000000, 0xBFF0000000000000, 0]
    hv = half_values(h, "f16")
    assert (out["k1"] == np.where(np.isnan(hv), 0x7FFF, h & np.uint16(0x7FFF))).all()
    assert (out["k2"] == np.where(np.isnan(hv), 0x7FFF, h ^ np.uint16(0x8000))).all()
    sub = ((a & np.uint32(0x7F800000)) == 0) & ((a & np.uint32(0x7FFFFF)) != 0)
    assert (out["q1"] == np.isfinite(x)).all() and (out["q2"] == np.isinf(x)).all()
    assert (out["q3"] == ~nan).all() and (out["q4"] == nan).all()
    assert (out["q5"] == (np.isfinite(x) & ~sub)).all() and (out["q6"] == sub).all()
    assert out["q7"][:4].tolist() == [False, False, True, True]


# ------------------------------------------------------------------------------------------- .approx
def _ulps(got_bits, want_f64):
    got = got_bits.view(np.float32).astype(np.float64)
    w32 = want_f64.astype(np.float32)
    spacing = np.abs(np.spacing(w32)).astype(np.float64)
    return np.abs(got - want_f64) / np.maximum(spacing, 1e-45)


def test_approx_functions_within_ptx_bounds_and_specials():
    rng = np.random.default_rng(9)
    a = rng.uniform(-20, 20, N).astype(np.float32).view(np.uint32)
    a[:8] = np.array([1e-3, -1e-3, 0.5, 3.0, -7.25, 1e-6, 19.5, -0.1], np.float32).view(np.uint32)
    pos = a & np.uint32(0x7FFFFFFF)
    body = """rcp.approx.f32 %o1, %a; sqrt.approx.f32 %o2, %p; rsqrt.approx.f32 %o3, %p; ex2.approx.f32 %o4, %a;
              lg2.approx.f32 %o5, %p; sin.approx.f32 %o6, %a; cos.approx.f32 %o7, %a; tanh.approx.f32 %o8, %a;
              div.approx.f32 %o9, %a, %p; div.full.f32 %o10, %a, %p; ex2.approx.ftz.f32 %o11, %a;"""
    out = run_body(body, {"a": "f32", "p": "f32"}, {f"o{i}": "b32" for i in range(1, 12)}, {"a": a, "p": pos})
    x, xp = f32_values(a), f32_values(pos)
    assert _ulps(out["o1"], 1 / x).max() <= 1
    assert _ulps(out["o2"], np.sqrt(xp)).max() <= 2
    assert _ulps(out["o3"], 1 / np.sqrt(xp)).max() <= 2
    assert _ulps(out["o4"], np.exp2(x)).max() <= 2
    lg = np.log2(xp)
    assert (np.abs(f32_values(out["o5"]) - lg) <= 2 ** -22.6 + np.spacing(np.abs(lg).astype(np.float32))).all()
    # the H100 multiplies by f32(1/(2 pi)) rounding toward zero first (tcsim.numerics.approx): ~2**-19 at |x| = 20
    assert np.abs(f32_values(out["o6"]) - np.sin(x)).max() <= 2 ** -18.5
    assert np.abs(f32_values(out["o7"]) - np.cos(x)).max() <= 2 ** -18.5
    assert (np.abs(f32_values(out["o8"]) - np.tanh(x)) <= 2 ** -11 * np.abs(np.tanh(x)) + 1e-30).all()
    assert _ulps(out["o9"], x / xp).max() <= 2 and _ulps(out["o10"], x / xp).max() <= 2
    assert (out["o11"] == out["o4"]).all()
    # special values listed by the PTX ISA
    sp = np.array([0xFF800000, 0x7F800000, 0x00000000, 0x80000000, 0xBF800000] * 13, np.uint32)[:N]
    body = """ex2.approx.f32 %o1, %a; lg2.approx.f32 %o2, %a; rcp.approx.f32 %o3, %a; sqrt.approx.f32 %o4, %a;
              rsqrt.approx.f32 %o5, %a; sin.approx.f32 %o6, %a; tanh.approx.f32 %o7, %a;"""
    out = run_body(body, {"a": "f32"}, {f"o{i}": "b32" for i in range(1, 8)}, {"a": sp})
    assert out["o1"][:3].tolist() == [0, 0x7F800000, 0x3F800000]
    assert out["o2"][:5].tolist() == [0x7FFFFFFF, 0x7F800000, 0xFF800000, 0xFF800000, 0x7FFFFFFF]
    assert out["o3"][:4].tolist() == [0x80000000, 0, 0x7F800000, 0xFF800000]
    assert out["o4"][1:5].tolist() == [0x7F800000, 0, 0x80000000, 0x7FFFFFFF]
    assert out["o5"][1:5].tolist() == [0, 0x7F800000, 0xFF800000, 0x7FFFFFFF]
    assert out["o6"][:4].tolist() == [0x7FFFFFFF, 0x7FFFFFFF, 0, 0x80000000]
    assert out["o7"][:4].tolist() == [0xBF800000, 0x3F800000, 0, 0x80000000]


def test_div_approx_large_divisor_flushes_and_full_does_not():
    """div.approx.f32: 1/b underflows to 0 for 2**126 < |b| < 2**128 (CUDA __fdividef); div.full scales."""
    b = np.full(N, 0x7E800000 + 0x1234, np.uint32)           # ~2**126 * 1.0
    a = np.full(N, 0x7E000000, np.uint32)                    # 2**125
    out = run_body("div.approx.f32 %o1, %a, %b; div.full.f32 %o2, %a, %b;", {"a": "f32", "b": "f32"},
                   {"o1": "b32", "o2": "b32"}, {"a": a, "b": b})
    assert (out["o1"] == 0).all()
    assert np.abs(f32_values(out["o2"]) - f32_values(a) / f32_values(b)).max() < 1e-6
    # a subnormal divisor still gives a finite quotient without .ftz (operands scaled first, as on an H100)
    tiny = np.full(N, 1, np.uint32)                                          # 2**-149
    out = run_body("div.approx.f32 %o1, %a, %b; div.full.f32 %o2, %a, %b; div.approx.ftz.f32 %o3, %c, %b;",
                   {"a": "f32", "b": "f32", "c": "f32"}, {"o1": "b32", "o2": "b32", "o3": "b32"},
                   {"a": tiny, "b": tiny, "c": np.full(N, 0x3F800000, np.uint32)})
    assert (out["o1"] == 0x3F800000).all() and (out["o2"] == 0x3F800000).all()
    assert (out["o3"] == 0x7F800000).all()                                  # .ftz: 1 / (flushed) 0


def test_half_approx():
    rng = np.random.default_rng(10)
    h = (half_bits(rng, "f16", edges=False) & np.uint16(0x7FFF)) | np.uint16(0)
    h = np.where(half_values(h, "f16") > 8, np.uint16(0x4400), h).astype(np.uint16)
    bf = half_bits(rng, "bf16", edges=False)
    bf = np.where(np.abs(half_values(bf, "bf16")) > 8, np.uint16(0x4000), bf).astype(np.uint16)
    body = """ex2.approx.f16 %o1, %h; tanh.approx.f16 %o2, %h; ex2.approx.ftz.bf16 %o3, %g; tanh.approx.bf16 %o4, %g;
              ex2.approx.f16x2 %w, %x;"""
    x = h.astype(np.uint32) | (h.astype(np.uint32) << 16)
    out = run_body(body, {"h": "b16", "g": "b16", "x": "b32"},
                   {"o1": "b16", "o2": "b16", "o3": "b16", "o4": "b16", "w": "b32"}, {"h": h, "g": bf, "x": x})
    hv, bv = half_values(h, "f16"), half_values(bf, "bf16")
    assert (np.abs(half_values(out["o1"], "f16") / np.exp2(hv) - 1) <= 2 ** -9.9).all()
    # H100 (tcsim.numerics.approx tables): up to 2**-10.02 relative, the PTX ISA states 2**-10.987
    assert (np.abs(half_values(out["o2"], "f16") - np.tanh(hv)) <= 2 ** -10 * np.abs(np.tanh(hv)) + 2 ** -24).all()
    assert (np.abs(half_values(out["o3"], "bf16") / np.exp2(bv) - 1) <= 2 ** -7).all()
    assert (np.abs(half_values(out["o4"], "bf16") - np.tanh(bv)) <= 2 ** -7 * np.abs(np.tanh(bv)) + 2 ** -126).all()
    assert ((out["w"] & 0xFFFF) == out["o1"]).all() and ((out["w"] >> 16) == out["o1"]).all()


# ------------------------------------------------------------------------------------------- illegal forms
ILLEGAL = [
    ("add.sat.f64 %fd1, %fd2, %fd3;", VerifyError, "Illegal modifier '.sat' for instruction 'add'"),
    ("add.ftz.f64 %fd1, %fd2, %fd3;", VerifyError, "Illegal modifier '.ftz' for instruction 'add'"),
    ("add.rz.f16 %h1, %h2, %h3;", VerifyError, "Illegal rounding modifier for instruction 'add'"),
    ("add.sat.bf16 %h1, %h2, %h3;", VerifyError, "Illegal modifier '.sat' for instruction 'add'"),
    ("add.sat.f32x2 %rd1, %rd2, %rd3;", VerifyError, "Illegal modifier '.sat' for instruction 'add'"),
    ("fma.f32 %f1, %f2, %f3, %f4;", VerifyError, "Rounding modifier required for instruction 'fma'"),
    ("fma.rn.relu.f32 %f1, %f2, %f3, %f4;", VerifyError, "Unexpected instruction types specified for 'fma'"),
    ("fma.rn.sat.relu.f16 %h1, %h2, %h3, %h4;", VerifyError,
     "Modifier '.relu' cannot be combined with modifier '.sat'"),
    ("fma.rz.f16 %h1, %h2, %h3, %h4;", VerifyError, "Illegal rounding modifier for instruction 'fma'"),
    ("fma.rn.sat.bf16 %h1, %h2, %h3, %h4;", VerifyError, "Illegal modifier '.sat' for instruction 'fma'"),
    ("mad.f32 %f1, %f2, %f3, %f4;", VerifyError, "Rounding modifier required for instruction 'mad'"),
    ("mad.f64 %fd1, %fd2, %fd3, %fd4;", VerifyError, "Rounding modifier required for instruction 'mad'"),
    ("mad.rn.f16 %h1, %h2, %h3, %h4;", VerifyError, "Unexpected instruction types specified for 'mad'"),
    ("div.f32 %f1, %f2, %f3;", VerifyError, "Rounding modifier or '.approx' modifier required for instruction 'div'"),
    ("div.approx.f64 %fd1, %fd2, %fd3;", VerifyError, "Illegal modifier '.approx' for instruction 'div'"),
    ("div.f64 %fd1, %fd2, %fd3;", VerifyError, "Rounding modifier or '.approx' modifier required"),
    ("div.rn.f16 %h1, %h2, %h3;", VerifyError, "Unexpected instruction types specified for 'div'"),
    ("rcp.approx.f64 %fd1, %fd2;", VerifyError, "'.ftz' modifier required for instruction 'rcp.approx.f64'"),
    ("rcp.f32 %f1, %f2;", VerifyError, "Rounding modifier or '.approx' modifier required for instruction 'rcp'"),
    ("sqrt.approx.f64 %fd1, %fd2;", VerifyError, "Illegal modifier '.approx' for instruction 'sqrt'"),
    ("rsqrt.rn.f32 %f1, %f2;", VerifyError, ".approx modifier required for instruction 'rsqrt'"),
    ("sin.f32 %f1, %f2;", VerifyError, ".approx modifier required for instruction 'sin'"),
    ("lg2.approx.f16 %h1, %h2;", VerifyError, "Unexpected instruction types specified for 'lg2'"),
    ("ex2.approx.bf16 %h1, %h2;", VerifyError, ".ftz modifier required for instruction 'ex2.bf16'"),
    ("tanh.approx.ftz.f32 %f1, %f2;", VerifyError, "Illegal modifier '.ftz' for instruction 'tanh'"),
    ("abs.ftz.f64 %fd1, %fd2;", VerifyError, "Illegal modifier '.ftz' for instruction 'abs'"),
    ("abs.ftz.bf16 %h1, %h2;", VerifyError, "Illegal modifier '.ftz' for instruction 'abs'"),
    ("min.NaN.f64 %fd1, %fd2, %fd3;", VerifyError, "Illegal modifier '.NaN' for instruction 'min'"),
    ("min.ftz.bf16 %h1, %h2, %h3;", VerifyError, "Illegal modifier '.ftz' for instruction 'min'"),
    ("min.abs.f32 %f1, %f2, %f3;", VerifyError, "Modifier '.abs' requires modifier '.xorsign'"),
    ("max.xorsign.abs.f32 %f1, %f2, %f3, %f4;", VerifyError, "Illegal modifier '.xorsign' for instruction 'max'"),
    ("min.f16 %h1, %h2, %h3, %h4;", VerifyError, "Arguments mismatch for instruction 'min'"),
    ("copysign.f16 %h1, %h2, %h3;", VerifyError, "Unexpected instruction types specified for 'copysign'"),
    ("copysign.ftz.f32 %f1, %f2, %f3;", VerifyError, "Illegal modifier '.ftz' for instruction 'copysign'"),
    ("testp.subnormal.f16 %p1, %h2;", VerifyError, "Unexpected instruction types specified for 'testp'"),
    ("add.f32 %f1, %f2, 1;", VerifyError, "Arguments mismatch for instruction 'add'"),
    ("add.f32 %f1, %u2, %f3;", VerifyError, "Arguments mismatch for instruction 'add'"),
    ("add.f16 %uh1, %uh2, %uh3;", VerifyError, "Arguments mismatch for instruction 'add'"),
    ("add.f16x2 %f1, %f2, %f3;", VerifyError, "Arguments mismatch for instruction 'add'"),
    ("mul.ftz.f64 %fd1, %fd2, %fd3;", VerifyError, "Illegal modifier '.ftz' for instruction 'mul'"),
    ("fma.rn.oob.f16 %h1, %h2, %h3, %h4;", UnsupportedError, ".oob"),
]
LEGAL = ["add.rz.ftz.sat.f32 %f1, %f2, %f3;", "add.rn.ftz.sat.f16x2 %r1, %r2, %r3;", "add.rn.bf16x2 %r1, %r2, %r3;",
         "add.rz.ftz.f32x2 %rd1, %rd2, %rd3;", "add.f32.f16 %f1, %h2, %f3;", "mul.bf16 %h1, %h2, %h3;",
         "fma.rn.ftz.relu.f16 %h1, %h2, %h3, %h4;", "fma.rn.relu.bf16x2 %r1, %r2, %r3, %r4;",
         "mad.rn.ftz.sat.f32 %f1, %f2, %f3, %f4;", "div.full.ftz.f32 %f1, %f2, %f3;", "rcp.approx.ftz.f64 %fd1, %fd2;",
         "rsqrt.approx.f64 %fd1, %fd2;", "ex2.approx.ftz.bf16x2 %r1, %r2;", "tanh.approx.bf16x2 %r1, %r2;",
         "min.ftz.NaN.xorsign.abs.f32 %f1, %f2, %f3;", "min.abs.f32 %f1, %f2, %f3, %f4;", "add.f32 %f1, %r2, %f3;",
         "add.f64 %fd1, %fd2, 0f3F800000;", "add.f16 %hf1, %hf2, %hf3;", "testp.notanumber.f64 %p1, %fd2;",
         "fma.rn.f32.f16 %f1, %h2, %h3, %f4;", "neg.bf16x2 %r1, %r2;"]


@pytest.mark.parametrize("line,exc,msg", ILLEGAL, ids=[x[0] for x in ILLEGAL])
def test_illegal_float_forms(line, exc, msg):
    err = decode_error(line)
    assert isinstance(err, exc), f"{line!r}: expected {exc.__name__}, got {err!r}"
    assert msg in err.message, err.message


def test_legal_float_forms_decode():
    for line in LEGAL:
        assert decode_error(line) is None, line


@needs_ptxas
def test_ptxas_agrees_on_float_forms():
    lines = [x[0] for x in ILLEGAL if x[1] is VerifyError]
    verdict = ptxas_accepts(lines + LEGAL)
    n = len(lines)
    assert not any(verdict[:n]), [x for x, ok in zip(lines, verdict) if ok]
    assert all(verdict[n:]), [x for x, ok in zip(LEGAL, verdict[n:]) if not ok]


def test_f64_two_nan_priority_follows_definition_order():
    """ptxas orders commutative f64 sources by when their values were defined; the H100 returns the second SASS
    operand's NaN.  %rd1 is declared first but redefined after %rd2 was loaded, so it goes second and wins."""
    import numpy as np
    from tcsim.launch import Launch, run_launch

    ptx = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
	.reg .b64 %rd<8>;
	ld.param.u64 %rd6, [pin];
	ld.param.u64 %rd7, [pout];
	ld.global.b64 %rd1, [%rd6];
	ld.global.b64 %rd2, [%rd6+8];
	add.f64 %rd3, %rd1, %rd2;
	add.rz.f64 %rd1, %rd1, 0d8000000000000000;
	add.f64 %rd4, %rd1, %rd2;
	add.f64 %rd5, %rd2, %rd1;
	st.global.b64 [%rd7], %rd3;
	st.global.b64 [%rd7+8], %rd4;
	st.global.b64 [%rd7+16], %rd5;
	ret;
}
"""
    a, b = 0x7FF8000000000AAA, 0xFFF8000000000BBB
    inp = np.array([a, b], np.uint64)
    out = np.zeros(3, np.uint64)
    res = run_launch(Launch(ptx=ptx, kernel="k", block=(1, 1, 1), args=[inp, out]))
    got = [int(x) for x in res.outputs[1]]
    assert got == [b, a, a]      # before the redefinition: (rd1, rd2) -> rd2's NaN; after: (rd2, rd1) -> rd1's
