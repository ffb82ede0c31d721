"""Conversions: cvt (PTX ISA 9.1 §9.7.9.21) and cvt.pack (§9.7.9.22) as two-warp kernels, compared with an
independent model (numpy decoding + exact ``Fraction`` rounding from test_float_arith); illegal forms with
ptxas's diagnostics.  Inputs include NaN, Inf, -0, subnormals and out-of-range values."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tcsim.isa.errors import UnsupportedError, VerifyError
from test_float_arith import encode_exact, round_ref
from test_integer import (check, decode_error, f32_bits, f32_values, flush_f32, half_bits, half_values, lanes,
                          needs_ptxas, ptxas_accepts, rand_bits, run_body, sx)

IRND = {"rni": lambda f: _round_half_even(f), "rzi": lambda f: int(f), "rmi": math.floor, "rpi": math.ceil}


def _round_half_even(f: Fraction) -> int:
    n = math.floor(f)
    r = f - n
    return n + (1 if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2) else 0)


def f2i(x: float, t: str, mode: str) -> int:
    n = int(t[1:])
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return hi if x > 0 else lo
    return max(lo, min(hi, IRND[mode](Fraction(x))))


@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
def test_float_to_int_saturates(mode):
    rng = np.random.default_rng(ord(mode[1]))
    a = f32_bits(rng, lo=100, hi=170)
    a[30:38] = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 4294967295.0, -2147483648.0], np.float32).view(np.uint32)
    types = ["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"]
    body = "\n".join(f"cvt.{mode}.{t}.f32 %{t}, %a;" for t in types) + f"\ncvt.{mode}.ftz.s32.f32 %z, %a;"
    outs = {t: t for t in types} | {"z": "s32"}
    for t in ("s8", "u8"):
        outs[t] = t.replace("8", "16")                     # 8-bit results in 16-bit registers (cvt allows wider)
    out = run_body(body, {"a": "f32"}, outs, {"a": a})
    x = f32_values(a)
    nan = np.isnan(x)
    for t in types:
        n = int(t[1:])
        want = [f2i(float(v), t, mode) for v in x]
        got = out[t]
        if n == 64:               # NaN -> 64-bit integer: see report (GPU gives 0x8000000000000000)
            got, want = got[~nan], [w for w, m in zip(want, nan) if not m]
        width = max(n, 16)
        if t == "s8":             # a signed result is sign-extended into the wider register
            check(got, want, width)
        else:
            check(got, want, width)
    check(out["z"], [f2i(float(v), "s32", mode) for v in f32_values(flush_f32(a))], 32)


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_int_to_float_and_float_narrowing(mode):
    rng = np.random.default_rng(ord(mode[1]) + 1)
    i = rand_bits(rng, 32)
    l = rand_bits(rng, 64)
    a = f32_bits(rng)
    d = f32_values(f32_bits(rng)).astype(np.float64).view(np.uint64) + np.uint64(12345)   # inexact in f32
    d[:4] = [0x7FF0000000000000, 0x0000000000000001, 0x47EFFFFFE0000000, 0xC7EFFFFFF0000000]
    body = f"""cvt.{mode}.f32.s32 %o1, %i; cvt.{mode}.f32.u32 %o2, %i; cvt.{mode}.f16.s32 %h1, %i;
               cvt.{mode}.f64.u64 %w1, %l; cvt.{mode}.f32.s64 %o3, %l; cvt.{mode}.f16.f32 %h2, %a;
               cvt.{mode}.bf16.f32 %h3, %a; cvt.{mode}.f32.f64 %o4, %d; cvt.{mode}.bf16.u32 %h4, %i;"""
    out = run_body(body, {"i": "b32", "l": "b64", "a": "f32", "d": "f64"},
                   {"o1": "b32", "o2": "b32", "o3": "b32", "o4": "b32", "h1": "b16", "h2": "b16", "h3": "b16",
                    "h4": "b16", "w1": "b64"}, {"i": i, "l": l, "a": a, "d": d})

    def rnd(fmt, vals):
        res = []
        for v in vals:
            if isinstance(v, float) and math.isnan(v):
                res.append(0x7FFFFFFF if fmt == "f32" else 0x7FFF)
            elif isinstance(v, float) and math.isinf(v):
                res.append(encode_exact(fmt, v))
            else:
                res.append(round_ref(fmt, Fraction(v), mode, neg_zero=(isinstance(v, float) and
                                                                       math.copysign(1, v) < 0)))
        return res
    L = lanes(i, l)
    assert out["o1"].tolist() == rnd("f32", [sx(x, 32) for x, y in L])
    assert out["o2"].tolist() == rnd("f32", [x for x, y in L])
    assert out["h1"].tolist() == rnd("f16", [sx(x, 32) for x, y in L])
    assert out["w1"].tolist() == rnd("f64", [y for x, y in L])
    assert out["o3"].tolist() == rnd("f32", [sx(y, 64) for x, y in L])
    assert out["h4"].tolist() == rnd("bf16", [x for x, y in L])
    av = [float(v) for v in f32_values(a)]
    assert out["h2"].tolist() == rnd("f16", av)
    assert out["h3"].tolist() == rnd("bf16", av)
    dv = [float(v) for v in d.view(np.float64)]
    ok = [not math.isnan(v) for v in dv]           # f64 NaN -> f32: a NaN (payload handling: numerics' choice)
    assert [o for o, k in zip(out["o4"].tolist(), ok) if k] == [w for w, k in zip(rnd("f32", dv), ok) if k]
    assert np.isnan(f32_values(out["o4"][~np.array(ok)])).all()


def test_relu_satfinite_sat_and_pairs():
    rng = np.random.default_rng(3)
    a, b = f32_bits(rng, lo=90, hi=160), f32_bits(rng, lo=90, hi=160)[::-1].copy()
    body = """cvt.rn.relu.f16.f32 %h1, %a; cvt.rz.satfinite.f16.f32 %h2, %a; cvt.rn.relu.satfinite.bf16.f32 %h3, %a;
              cvt.rn.sat.f16.f32 %h4, %a; cvt.sat.f32.f32 %o1, %a; cvt.rn.f16x2.f32 %o2, %a, %b;
              cvt.rz.relu.satfinite.bf16x2.f32 %o3, %a, %b; cvt.ftz.f32.f32 %o4, %a; cvt.rmi.f32.f32 %o5, %a;"""
    out = run_body(body, {"a": "f32", "b": "f32"},
                   {"h1": "b16", "h2": "b16", "h3": "b16", "h4": "b16", **{f"o{i}": "b32" for i in range(1, 6)}},
                   {"a": a, "b": b})

    def conv(fmt, v, mode="rn", relu=False, satfinite=False, sat=False):
        if math.isnan(v):
            return 0 if sat else 0x7FFF
        if sat:
            v = 0.0 if v <= 0 else min(v, 1.0)          # -0 becomes +0
        if math.isinf(v) and not satfinite:
            r = encode_exact(fmt, v)
        elif math.isinf(v):
            r = round_ref(fmt, Fraction(math.copysign(1e300, v)), "rz")
        else:
            r = round_ref(fmt, Fraction(v), mode, neg_zero=math.copysign(1, v) < 0)
            if satfinite and (r & 0x7FFF) == (0x7C00 if fmt == "f16" else 0x7F80):
                r = round_ref(fmt, Fraction(math.copysign(1e300, v)), "rz")
        if relu and (r >> 15):
            r = 0
        return r
    av, bv = [float(v) for v in f32_values(a)], [float(v) for v in f32_values(b)]
    assert out["h1"].tolist() == [conv("f16", v, relu=True) for v in av]
    assert out["h2"].tolist() == [conv("f16", v, "rz", satfinite=True) for v in av]
    assert out["h3"].tolist() == [conv("bf16", v, relu=True, satfinite=True) for v in av]
    assert out["h4"].tolist() == [conv("f16", v, sat=True) for v in av]
    x = f32_values(a)
    with np.errstate(invalid="ignore"):
        want_sat = np.where(np.isnan(x) | (x <= 0), 0, np.where(x >= 1, 0x3F800000, a))
    assert (out["o1"] == want_sat).all()
    assert out["o2"].tolist() == [conv("f16", u) << 16 | conv("f16", w) for u, w in zip(av, bv)]
    assert out["o3"].tolist() == [conv("bf16", u, "rz", True, True) << 16 | conv("bf16", w, "rz", True, True)
                                  for u, w in zip(av, bv)]
    assert (out["o4"] == np.where(np.isnan(x), 0x7FFFFFFF, flush_f32(a))).all()
    with np.errstate(invalid="ignore"):
        fl = np.floor(a.view(np.float32)).view(np.uint32)
    assert (out["o5"] == np.where(np.isnan(x), 0x7FFFFFFF, fl)).all()


def test_widening_and_half_conversions():
    rng = np.random.default_rng(4)
    h, g = half_bits(rng, "f16"), half_bits(rng, "bf16")
    body = """cvt.f32.f16 %o1, %h; cvt.f64.f32 %w1, %o1; cvt.ftz.f32.f16 %o2, %h; cvt.rn.bf16.f16 %k1, %h;
              cvt.rzi.s32.f16 %o3, %h; cvt.f32.bf16 %o4, %g;"""
    out = run_body(body, {"h": "b16", "g": "b16"},
                   {"o1": "b32", "o2": "b32", "o3": "s32", "o4": "b32", "w1": "b64", "k1": "b16"}, {"h": h, "g": g})
    hv = half_values(h, "f16")
    nan = np.isnan(hv)
    with np.errstate(invalid="ignore"):
        assert (out["o1"] == np.where(nan, 0x7FFFFFFF, hv.astype(np.float32).view(np.uint32))).all()
        assert (out["o2"] == out["o1"]).all()                           # f16 subnormals are f32 normals
        assert (out["w1"][~nan] == hv[~nan].view(np.uint64)).all()
    assert out["k1"].tolist() == [0x7FFF if math.isnan(v) else encode_exact("bf16", float(v)) if math.isinf(v)
                                  else round_ref("bf16", Fraction(float(v)), "rn", math.copysign(1, v) < 0)
                                  for v in hv]
    check(out["o3"], [f2i(float(v), "s32", "rzi") for v in hv], 32)
    gv = half_values(g, "bf16")
    ok = ~np.isnan(gv)
    assert (out["o4"][ok] == gv[ok].astype(np.float32).view(np.uint32)).all()


def test_int_to_int():
    rng = np.random.default_rng(5)
    i, l = rand_bits(rng, 32), rand_bits(rng, 64)
    body = """cvt.u16.u32 %o1, %i; cvt.s16.s32 %o2, %i; cvt.sat.s8.s32 %o3, %i; cvt.sat.u16.s64 %o4, %l;
              cvt.s64.s32 %w1, %i; cvt.u64.u32 %w2, %i; cvt.sat.s32.u64 %o5, %l; cvt.sat.u32.s32 %o6, %i;
              cvt.s32.s8 %o7, %i; cvt.u32.u64 %o8, %l;"""
    out = run_body(body, {"i": "b32", "l": "b64"}, {**{f"o{k}": "b32" for k in range(1, 9)}, "w1": "b64",
                                                    "w2": "b64"}, {"i": i, "l": l}, decls="")
    L = lanes(i, l)
    sat = lambda v, lo, hi: max(lo, min(hi, v))                                   # noqa: E731
    check(out["o1"], [x & 0xFFFF for x, y in L], 32)                              # zero-extended into .b32
    check(out["o2"], [sx(x, 16) for x, y in L], 32)                              # sign-extended
    check(out["o3"], [sat(sx(x, 32), -128, 127) for x, y in L], 32)
    check(out["o4"], [sat(sx(y, 64), 0, 65535) for x, y in L], 32)
    check(out["w1"], [sx(x, 32) for x, y in L], 64)
    check(out["w2"], [x for x, y in L], 64)
    check(out["o5"], [sat(y, -(1 << 31), (1 << 31) - 1) for x, y in L], 32)
    check(out["o6"], [max(sx(x, 32), 0) for x, y in L], 32)
    check(out["o7"], [sx(x, 8) for x, y in L], 32)
    check(out["o8"], [y for x, y in L], 32)


def test_tf32_and_fp8_pairs():
    rng = np.random.default_rng(6)
    a, b = f32_bits(rng, lo=110, hi=140), f32_bits(rng, lo=110, hi=140)[::-1].copy()
    body = """cvt.rna.tf32.f32 %o1, %a; cvt.rn.satfinite.e4m3x2.f32 %h1, %a, %b; cvt.rn.satfinite.relu.e5m2x2.f32 %h2, %a, %b;
              cvt.rn.f16x2.e4m3x2 %o2, %h1; cvt.rn.f16x2.e5m2x2 %o3, %h2;"""
    out = run_body(body, {"a": "f32", "b": "f32"}, {"o1": "b32", "o2": "b32", "o3": "b32", "h1": "b16", "h2": "b16"},
                   {"a": a, "b": b})
    x = f32_values(a)
    fin = np.isfinite(x)
    # rna: round half away from zero at bit 13 (finite inputs whose rounding stays finite)
    r = ((a.astype(np.uint64) + np.uint64(0x1000)) & np.uint64(0xFFFFE000)).astype(np.uint32)
    stay = fin & ((r & np.uint32(0x7F800000)) != np.uint32(0x7F800000))
    assert (out["o1"][stay] == r[stay]).all()

    def fp8(v, p, emin, maxv, relu):
        if math.isnan(v):
            return 0x7F
        neg = math.copysign(1, v) < 0
        if relu and (neg or v == 0):
            return 0
        av = min(abs(v), maxv)
        e = max(math.floor(math.log2(av)) if av else emin, emin)
        q = Fraction(2) ** (e - p + 1)
        n = _round_half_even(Fraction(av) / q)
        val = min(Fraction(n) * q, Fraction(maxv))
        # encode: find the code by search over the 128 magnitudes
        return val, neg
    E4 = {c: _dec8(c, 4, 3, 7) for c in range(0x7F)}
    E5 = {c: _dec8(c, 5, 2, 15) for c in range(0x7C)}

    def enc(table, v, p, emin, maxv, relu):
        r = fp8(v, p, emin, maxv, relu)
        if not isinstance(r, tuple):
            return r
        val, neg = r
        code = min(table, key=lambda c: abs(table[c] - val))
        return code | (0x80 if neg and val != 0 or (neg and val == 0 and not relu) else 0)
    av, bv = [float(v) for v in f32_values(a)], [float(v) for v in f32_values(b)]
    want1 = [enc(E4, u, 4, -6, 448.0, False) << 8 | enc(E4, w, 4, -6, 448.0, False) for u, w in zip(av, bv)]
    want2 = [enc(E5, u, 3, -14, 57344.0, True) << 8 | enc(E5, w, 3, -14, 57344.0, True) for u, w in zip(av, bv)]
    assert out["h1"].tolist() == want1
    assert out["h2"].tolist() == want2

    def unpack(codes, table):
        res = []
        for c in codes:
            halves = []
            for byte in (int(c) & 0xFF, int(c) >> 8):
                mag = byte & 0x7F
                v = table.get(mag)
                if v is None:
                    halves.append(0x7FFF)
                else:
                    f = -float(v) if byte & 0x80 else float(v)
                    halves.append(encode_exact("f16", f))
            res.append(halves[0] | halves[1] << 16)
        return res
    assert out["o2"].tolist() == unpack(out["h1"], E4)
    assert out["o3"].tolist() == unpack(out["h2"], E5)


def _dec8(code: int, e_bits: int, m_bits: int, bias: int) -> Fraction:
    e = code >> m_bits
    m = code & ((1 << m_bits) - 1)
    if e == 0:
        return Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
    return (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)


def test_cvt_pack_sat():
    rng = np.random.default_rng(7)
    a, b, c = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy(), rand_bits(rng, 32)
    a[20:40] = rng.integers(-300, 300, 20).astype(np.int32).view(np.uint32)
    b[20:40] = rng.integers(-20, 20, 20).astype(np.int32).view(np.uint32)
    body = """cvt.pack.sat.u16.s32 %o1, %a, %b; cvt.pack.sat.s16.s32 %o2, %a, %b; cvt.pack.sat.s8.s32.b32 %o3, %a, %b, %c;
              cvt.pack.sat.u4.s32.b32 %o4, %a, %b, %c; cvt.pack.sat.s2.s32.b32 %o5, %a, %b, %c;
              cvt.pack.sat.u8.s32.b32 %o6, %a, %b, %c;"""
    out = run_body(body, {"a": "s32", "b": "s32", "c": "b32"}, {f"o{i}": "b32" for i in range(1, 7)},
                   {"a": a, "b": b, "c": c})

    def pack(x, y, z, n, signed):
        lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
        m = (1 << n) - 1
        ta, tb = max(lo, min(hi, sx(x, 32))) & m, max(lo, min(hi, sx(y, 32))) & m
        r = ta << n | tb
        return r if n == 16 else r | (z << 2 * n)
    L = lanes(a, b, c)
    for k, (n, s) in enumerate([(16, False), (16, True), (8, True), (4, False), (2, True), (8, False)], 1):
        check(out[f"o{k}"], [pack(x, y, z, n, s) for x, y, z in L], 32)


ILLEGAL = [
    ("cvt.f32.s32 %f1, %r1;", VerifyError, "Rounding modifier required for instruction 'cvt'"),
    ("cvt.s32.f32 %r1, %f1;", VerifyError, "Rounding modifier required for instruction 'cvt'"),
    ("cvt.rn.f32.f16 %f1, %h1;", VerifyError, "Illegal modifier combination for 'cvt.f32.f16': .rn"),
    ("cvt.rm.relu.f16.f32 %h1, %f1;", VerifyError, "Illegal modifier combination for 'cvt.f16.f32': .rm .relu"),
    ("cvt.rn.f32.f32 %f1, %f2;", VerifyError, "Illegal modifier combination for 'cvt.f32.f32': .rn"),
    ("cvt.sat.s64.s32 %rd1, %r2;", VerifyError, "Illegal form of instruction 'cvt'"),
    ("cvt.rzi.s32.f32 %f1, %f2;", VerifyError, "Arguments mismatch for instruction 'cvt'"),
    ("cvt.u32.u16 %p1, %h1;", VerifyError, "Arguments mismatch for instruction 'cvt'"),
    ("cvt.pack.sat.u16.s32.b32 %r1, %r2, %r3, %r4;", VerifyError, "Unexpected instruction types specified for 'cvt.pack'"),
    ("cvt.pack.sat.s8.s32.b32 %r1, %f2, %r3, %r4;", VerifyError, "Arguments mismatch for instruction 'cvt'"),
    ("cvt.rs.satfinite.e4m3x4.f32 %r1, {%f1, %f2, %f3, %f4}, %r5;", UnsupportedError, "stochastic rounding"),
]
LEGAL = ["cvt.u16.u32 %r1, %r2;", "cvt.u8.u32 %r1, %r2;", "cvt.u32.u64 %rd1, %rd2;", "cvt.rni.ftz.sat.s32.f32 %r1, %f1;",
         "cvt.ftz.f32.f16 %f1, %h1;", "cvt.rn.relu.satfinite.bf16.f32 %h1, %f1;", "cvt.rz.relu.satfinite.bf16x2.f32 %r1, %f1, %f2;",
         "cvt.rna.satfinite.tf32.f32 %r1, %f1;", "cvt.rn.satfinite.relu.e5m2x2.f16x2 %h1, %r1;",
         "cvt.rn.relu.f16x2.e5m2x2 %r1, %h1;", "cvt.rz.satfinite.ue8m0x2.f32 %h1, %f1, %f2;",
         "cvt.rn.bf16x2.ue8m0x2 %r1, %h1;", "cvt.rni.f32.f32 %f1, %f2;", "cvt.rn.f16.bf16 %h1, %h2;",
         "cvt.pack.sat.s2.s32.b32 %r1, %r2, %r3, %r4;", "cvt.pack.sat.u16.s32 %r1, %r2, %r3;"]


ILLEGAL_SM90 = [
    ("cvt.rn.satfinite.e2m1x2.f32 %c1, %f1, %f2;", "Instruction 'cvt with .e2m1x2' not supported on .target 'sm_90a'"),
    ("cvt.rz.satfinite.ue8m0x2.f32 %h1, %f1, %f2;", "Instruction 'cvt with .ue8m0x2' not supported on .target"),
    ("cvt.rn.satfinite.e3m2x2.f32 %h1, %f1, %f2;", "Instruction 'cvt with .e2m3x2/.e3m2x2' not supported"),
    ("cvt.rn.satfinite.tf32.f32 %r1, %f1;", "Modifier '.satfinite' on 'cvt.tf32.f32.rn' requires .target sm_100"),
]


@pytest.mark.parametrize("line,msg", ILLEGAL_SM90, ids=[x[0] for x in ILLEGAL_SM90])
def test_cvt_target_requirements(line, msg):
    err = decode_error(line, decls=".reg .b8 %c<4>;", arch="sm_90a")
    assert isinstance(err, VerifyError) and msg in err.message, err
    assert decode_error(line, decls=".reg .b8 %c<4>;", arch="sm_100a") is None
    assert decode_error("cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;", arch="sm_90a") is None


@needs_ptxas
def test_ptxas_agrees_on_cvt_targets():
    assert not any(ptxas_accepts([x[0] for x in ILLEGAL_SM90], arch="sm_90a", decls=".reg .b8 %c<4>;"))
    assert all(ptxas_accepts([x[0] for x in ILLEGAL_SM90], arch="sm_100a", decls=".reg .b8 %c<4>;"))


@pytest.mark.parametrize("line,exc,msg", ILLEGAL, ids=[x[0] for x in ILLEGAL])
def test_illegal_cvt_forms(line, exc, msg):
    err = decode_error(line)
    assert isinstance(err, exc), f"{line!r}: expected {exc.__name__}, got {err!r}"
    assert msg in err.message, err.message


def test_legal_cvt_forms_decode():
    for line in LEGAL:
        assert decode_error(line) is None, line


@needs_ptxas
def test_ptxas_agrees_on_cvt_forms():
    lines = [x[0] for x in ILLEGAL if x[1] is VerifyError]
    verdict = ptxas_accepts(lines + LEGAL)
    n = len(lines)
    assert not any(verdict[:n]), [x for x, ok in zip(lines, verdict) if ok]
    assert all(verdict[n:]), [x for x, ok in zip(LEGAL, verdict[n:]) if not ok]


def test_blackwell_fp4_fp6_ue8m0_pairs_order_and_roundtrip():
    """sm_100a packed forms: the first source lands in the upper element; unpacking gives the values back."""
    a = np.array([1.5, 2.0, 448.0, 0.3] * 16, np.float32).view(np.uint32)
    b = np.array([-6.0, 0.75, -0.25, 1e9] * 16, np.float32).view(np.uint32)
    body = """cvt.rn.satfinite.e2m1x2.f32 %c1, %a, %b; cvt.rn.f16x2.e2m1x2 %o1, %c1; cvt.u32.u8 %o2, %c1;
              cvt.rz.satfinite.ue8m0x2.f32 %h1, %a, %b; cvt.u32.u16 %o3, %h1; cvt.rn.bf16x2.ue8m0x2 %o4, %h1;
              cvt.rn.satfinite.e2m3x2.f32 %h2, %a, %b; cvt.u32.u16 %o5, %h2; cvt.rn.f16x2.e2m3x2 %o6, %h2;"""
    out = run_body(body, {"a": "f32", "b": "f32"}, {f"o{i}": "b32" for i in range(1, 7)}, {"a": a, "b": b},
                   decls=".reg .b8 %c1; .reg .b16 %h1, %h2;")
    assert out["o2"][0] == 0x3F                      # 1.5 -> 0b0011 (upper), -6.0 -> 0b1111 (lower)
    assert out["o1"][0] == 0x3E00C600                # f16x2 {hi 1.5, lo -6.0}
    assert out["o2"][3] == (0x1 << 4 | 0x7)          # 0.3 -> 0.5 (rn), 1e9 -> 6.0 (satfinite)
    assert out["o3"][1] == 0x807E                    # ue8m0: 2.0 -> 128, 0.75 -(rz)-> 0.5 -> 126
    assert out["o4"][1] == 0x40003F00
    assert out["o5"][0] == 0x0C3C                    # e2m3 (bias 1): 1.5 -> 0b001100, -6.0 = -1.5*2**2 -> 0b111100
    assert out["o6"][0] == 0x3E00C600
