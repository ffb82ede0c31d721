"""sim/numerics/convert.py (PTX cvt) against independent references: Python integers for the
integer paths, fractions.Fraction rounding for every float destination, and ml_dtypes as a
second oracle for round-to-nearest narrowing into the 8/6/4-bit formats."""
import math
from fractions import Fraction as Fr

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.formats import decode
from tcsim.numerics.convert import cvt, cvt_pair

# numpy references cast NaN/Inf/out-of-range values on purpose (the special cases under test)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# p (with hidden bit), emin, max finite, has_inf, nan code (None), signed
FP = {
    "f16": (11, -14, 65504.0, True),
    "bf16": (8, -126, float(Fr(2 ** 8 - 1, 2 ** 7) * Fr(2) ** 127), True),
    "tf32": (11, -126, float(Fr(2 ** 11 - 1, 2 ** 10) * Fr(2) ** 127), True),
    "f32": (24, -126, float(np.finfo(np.float32).max), True),
    "f64": (53, -1022, float(np.finfo(np.float64).max), True),
    "e4m3": (4, -6, 448.0, False),
    "e5m2": (3, -14, 57344.0, True),
    "e2m3": (4, 0, 7.5, False),
    "e3m2": (3, -2, 28.0, False),
    "e2m1": (2, 0, 6.0, False),
}
HAS_NAN = {"e2m3": False, "e3m2": False, "e2m1": False}
DT = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64, "tf32": np.uint32}
INTS = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")


def ref_round(fmt, x: Fr, rnd, satfinite=False):
    """Correctly rounded float value (or +-inf / nan) of rational x."""
    p, emin, mx, has_inf = FP[fmt]
    if x == 0:
        return 0.0
    neg = x < 0
    a = -x if neg else x
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fr(2) ** e > a:
        e -= 1
    while Fr(2) ** (e + 1) <= a:
        e += 1
    q = max(e - (p - 1), emin - (p - 1))
    sc = a / Fr(2) ** q
    n = sc.numerator // sc.denominator
    r = sc - n
    if rnd == "rn":
        inc = r > Fr(1, 2) or (r == Fr(1, 2) and n % 2 == 1)
    elif rnd == "rna":
        inc = r >= Fr(1, 2)
    elif rnd == "rz":
        inc = False
    elif rnd == "rp":
        inc = r > 0 and not neg
    else:
        inc = r > 0 and neg
    val = (n + int(inc)) * Fr(2) ** q
    if val > Fr(mx):
        away = rnd in ("rn", "rna") or (rnd == "rp" and not neg) or (rnd == "rm" and neg)
        if satfinite or not away:
            res = mx
        elif has_inf:
            res = math.inf
        elif HAS_NAN.get(fmt, True):
            res = math.nan
        else:
            res = mx
    else:
        res = float(val)
    return -res if neg else res


def ref_float(fmt, x: float, rnd, satfinite=False):
    if math.isnan(x):
        return math.nan if HAS_NAN.get(fmt, True) else FP[fmt][2]
    if math.isinf(x):
        if satfinite or not FP[fmt][3]:
            if not satfinite and HAS_NAN.get(fmt, True):
                return math.nan
            return math.copysign(FP[fmt][2], x)
        return x
    if x == 0:
        return x
    return ref_round(fmt, Fr(x), rnd, satfinite)


def same(got_vals, exp):
    for g, e in zip(got_vals, exp):
        if math.isnan(e):
            if not math.isnan(g):
                return False
        elif not (g == e and math.copysign(1, g) == math.copysign(1, e)):
            return False
    return True


def assert_vals(fmt, bits, exp, ctx):
    got = [float(v) for v in decode(fmt, bits)]
    for i, (g, e) in enumerate(zip(got, exp)):
        ok = (math.isnan(e) and math.isnan(g)) or (g == e and math.copysign(1, g) == math.copysign(1, e))
        assert ok, f"{ctx(i)}: got {hex(int(bits[i]))} ({g!r}) expected {e!r}"


def rand_bits(rng, nbits, n):
    if nbits == 64:
        return rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(
            0, 2, n, dtype=np.uint64)
    return rng.integers(0, 1 << nbits, n, dtype=np.uint64)


def f32_inputs(rng, n=1500):
    b = np.concatenate([
        rand_bits(rng, 32, n).astype(np.uint32),
        # near the f16/bf16/fp8 ranges: exponents -30..20
        ((rng.integers(97, 148, n).astype(np.uint32) << 23) | rng.integers(0, 1 << 23, n).astype(
            np.uint32) | (rng.integers(0, 2, n).astype(np.uint32) << 31)),
        # exact halfway cases for 10/7/3/2/1-bit fractions
        ((rng.integers(110, 140, n).astype(np.uint32) << 23)
         | (rng.integers(0, 1 << 10, n).astype(np.uint32) << 13) | np.uint32(1 << 12)),
        ((rng.integers(110, 140, n).astype(np.uint32) << 23)
         | (rng.integers(0, 8, n).astype(np.uint32) << 20) | np.uint32(1 << 19)),
        np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 1, 0x807FFFFF,
                  0x477FE000, 0x477FF000, 0x477FF001, 0x43E00000, 0x43E80000, 0x43E80001,
                  0x40C00000, 0x40D00000, 0x40F00000, 0x41000000],
                 dtype=np.uint32),
    ])
    return b.astype(np.uint32)


# ------------------------------------------------------------------------------------------
# int <-> int
# ------------------------------------------------------------------------------------------

def int_val(t, u):
    n = int(t[1:])
    u = int(u) & ((1 << n) - 1)
    if t[0] == "s" and u >> (n - 1):
        u -= 1 << n
    return u


def int_range(t):
    n = int(t[1:])
    return (0, (1 << n) - 1) if t[0] == "u" else (-(1 << (n - 1)), (1 << (n - 1)) - 1)


@pytest.mark.parametrize("src", INTS)
@pytest.mark.parametrize("dst", INTS)
def test_int_to_int(dst, src):
    rng = np.random.default_rng(1)
    n = int(src[1:])
    b = np.concatenate([rand_bits(rng, n, 200), np.array([0, 1, (1 << n) - 1, 1 << (n - 1),
                                                           (1 << (n - 1)) - 1], np.uint64)])
    got = cvt(dst, src, b)
    nd = int(dst[1:])
    assert got.dtype == np.dtype(f"uint{nd}")
    for x, g in zip(b, got):
        v = int_val(src, x)
        assert int(g) == v & ((1 << nd) - 1)
    lo, hi = int_range(dst)
    slo, shi = int_range(src)
    if slo < lo or shi > hi:
        got = cvt(dst, src, b, sat=True)
        for x, g in zip(b, got):
            v = min(max(int_val(src, x), lo), hi)
            assert int(g) == v & ((1 << nd) - 1)
    else:
        with pytest.raises(ValueError):
            cvt(dst, src, b, sat=True)
    with pytest.raises(ValueError):
        cvt(dst, src, b, rnd="rn")


def test_int_source_wider_register_uses_low_bits():
    assert int(cvt("s32", "s8", np.array([0x1FF], np.uint32))[0]) == 0xFFFFFFFF


# ------------------------------------------------------------------------------------------
# float <-> int
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("src", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("dst", INTS)
def test_float_to_int(dst, src):
    rng = np.random.default_rng(2)
    nb = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[src]
    b = rand_bits(rng, nb, 300)
    vals = [float(v) for v in decode(src, b)]
    # values near integers / halves and near the destination limits
    lo, hi = int_range(dst)
    extra = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.0, 1e-40, -1e-40, float(hi),
             float(hi) + 1, float(lo), float(lo) - 1, float(hi) * 2, 3.7, -3.7, 1e30, -1e30]
    eb = [int(x) for x in {
        "f16": np.array(extra, np.float64).astype(np.float16).view(np.uint16),
        "bf16": np.array(extra, np.float64).astype(ml_dtypes.bfloat16).view(np.uint16),
        "f32": np.array(extra, np.float64).astype(np.float32).view(np.uint32),
        "f64": np.array(extra, np.float64).view(np.uint64)}[src]]
    b = np.concatenate([b, np.array(eb, np.uint64)])
    vals = [float(v) for v in decode(src, b)]
    nd = int(dst[1:])
    for rnd, f in (("rni", round), ("rzi", math.trunc), ("rmi", math.floor), ("rpi", math.ceil)):
        got = cvt(dst, src, b, rnd=rnd)
        assert got.dtype == np.dtype(f"uint{nd}")
        for i, (v, g) in enumerate(zip(vals, got)):
            if math.isnan(v):   # PTX: 0; H100: 1 << (n-1) from f64 or into 64-bit types
                e = (1 << (nd - 1)) if (src == "f64" or nd == 64) else 0
            elif math.isinf(v):
                e = hi if v > 0 else lo
            else:
                e = min(max(int(f(Fr(v))), lo), hi)
            assert int(g) == e & ((1 << nd) - 1), (rnd, v, hex(int(g)), e)
    with pytest.raises(ValueError):
        cvt(dst, src, b, rnd="rn")
    with pytest.raises(ValueError):
        cvt(dst, src, b)


def test_float_to_int_ftz():
    sub = np.array([0x00000001, 0x80000001], np.uint32)
    assert list(cvt("s32", "f32", sub, rnd="rpi")) == [1, 0]
    assert list(cvt("s32", "f32", sub, rnd="rpi", ftz=True)) == [0, 0]
    assert list(cvt("s32", "f32", sub, rnd="rmi")) == [0, 0xFFFFFFFF]


@pytest.mark.parametrize("dst", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("src", INTS)
def test_int_to_float(dst, src):
    rng = np.random.default_rng(3)
    n = int(src[1:])
    b = np.concatenate([rand_bits(rng, n, 150),
                        np.array([0, 1, (1 << n) - 1, 1 << (n - 1), (1 << (n - 1)) + 1,
                                  (1 << (n - 1)) - 1], np.uint64),
                        # values with bits just around the destination precision
                        (np.uint64(1) << rng.integers(0, n - 1, 100).astype(np.uint64))
                        + rng.integers(0, 4096, 100).astype(np.uint64)])
    b = b & np.uint64((1 << n) - 1) if n < 64 else b
    for rnd in ("rn", "rz", "rm", "rp"):
        got = cvt(dst, src, b, rnd=rnd)
        assert got.dtype == DT[dst]
        exp = [ref_float(dst, 0.0, rnd) if int_val(src, x) == 0 else
               ref_round(dst, Fr(int_val(src, x)), rnd) for x in b]
        assert_vals(dst, got, exp, lambda i: f"cvt.{rnd}.{dst}.{src}({int_val(src, b[i])})")
    with pytest.raises(ValueError):
        cvt(dst, src, b)
    with pytest.raises(ValueError):
        cvt(dst, src, b, rnd="rni")


# ------------------------------------------------------------------------------------------
# float <-> float
# ------------------------------------------------------------------------------------------

NARROW = [("f16", "f32"), ("bf16", "f32"), ("f16", "f64"), ("bf16", "f64"), ("f32", "f64"),
          ("f16", "bf16"), ("bf16", "f16")]


@pytest.mark.parametrize("dst,src", NARROW)
def test_float_narrowing(dst, src):
    rng = np.random.default_rng(4)
    if src == "f32":
        b = f32_inputs(rng, 600).astype(np.uint64)
    elif src == "f64":
        f = f32_inputs(rng, 300).view(np.float32).astype(np.float64)
        v = np.concatenate([f * (1 + rng.random(len(f)) * 2.0 ** -20), f,
                            np.array([np.nan, np.inf, -np.inf, 1e-310, 2.0 ** -1074, 1e300])])
        b = v.view(np.uint64)
        b = np.concatenate([b, rand_bits(rng, 64, 400)])
    else:
        b = np.arange(1 << 16, dtype=np.uint64)[::7]
    vals = [float(x) for x in decode(src, b)]
    for rnd in ("rn", "rz", "rm", "rp"):
        got = cvt(dst, src, b, rnd=rnd)
        assert got.dtype == DT[dst]
        exp = [ref_float(dst, x, rnd) for x in vals]
        assert_vals(dst, got, exp, lambda i: f"cvt.{rnd}.{dst}.{src}({vals[i]!r})")
        nan_lanes = [i for i, x in enumerate(vals) if math.isnan(x)]
        canon = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF}[dst]
        if src != "f64":   # f64 sources propagate the payload (golden test below)
            assert all(int(got[i]) == canon for i in nan_lanes)
    if src == "f32":
        for rnd in ("rn", "rz"):
            got = cvt(dst, src, b, rnd=rnd, satfinite=True)
            assert_vals(dst, got, [ref_float(dst, x, rnd, True) for x in vals],
                        lambda i: f"cvt.{rnd}.satfinite.{dst}.f32({vals[i]!r})")
            got = cvt(dst, src, b, rnd=rnd, relu=True)
            exp = [ref_float(dst, x, rnd) for x in vals]
            exp = [e if math.isnan(e) or (e > 0) else 0.0 for e in exp]
            assert_vals(dst, got, exp, lambda i: f"cvt.{rnd}.relu.{dst}.f32({vals[i]!r})")
        with pytest.raises(ValueError):
            cvt(dst, src, b, rnd="rm", relu=True)
    if {dst, src} == {"f16", "bf16"}:
        # ptxas accepts cvt.f16.bf16 / cvt.bf16.f16 without a rounding modifier: round to nearest even
        assert np.array_equal(cvt(dst, src, b), cvt(dst, src, b, rnd="rn"))
    else:
        with pytest.raises(ValueError):
            cvt(dst, src, b)          # rounding mandatory when narrowing
    with pytest.raises(ValueError):
        cvt(dst, src, b, rnd="rni")


def test_f32_f16_cross_check_numpy():
    rng = np.random.default_rng(5)
    b = rand_bits(rng, 32, 20000).astype(np.uint32)
    got = cvt("f16", "f32", b, rnd="rn")
    ref = b.view(np.float32).astype(np.float16).view(np.uint16)
    nan = np.isnan(b.view(np.float32))
    assert np.array_equal(got[~nan], ref[~nan])
    got = cvt("bf16", "f32", b, rnd="rn")
    ref = b.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(got[~nan], ref[~nan])


@pytest.mark.parametrize("dst,src", [("f32", "f16"), ("f64", "f16"), ("f32", "bf16"),
                                     ("f64", "bf16"), ("f64", "f32")])
def test_float_widening_exact(dst, src):
    b = np.arange(1 << 16, dtype=np.uint64)
    if src == "f32":
        b = (b * np.uint64(65537)) & np.uint64(0xFFFFFFFF)
    v = decode(src, b)
    got = cvt(dst, src, b)
    gv = decode(dst, got)
    ok = (gv == v) & (np.signbit(gv) == np.signbit(v))
    assert np.all(ok | np.isnan(v))
    if (src, dst) in (("f16", "f32"),):          # canonical; the others propagate payloads
        assert np.all(got[np.isnan(v)] == 0x7FFFFFFF)
    assert np.all(np.isnan(decode(dst, got[np.isnan(v)])))
    if src == "bf16":
        # ptxas accepts .rn/.rz/.rm/.rp on the exact widening of .bf16; they change nothing
        for rnd in ("rn", "rz", "rm", "rp"):
            assert np.array_equal(cvt(dst, src, b, rnd=rnd), got)
    else:
        with pytest.raises(ValueError):
            cvt(dst, src, b, rnd="rn")
    # ftz on the f32 side
    if dst == "f32" or src == "f32":
        cvt(dst, src, b, ftz=True)
    else:
        with pytest.raises(ValueError):
            cvt(dst, src, b, ftz=True)


def test_f32_to_f64_ftz_flushes_input():
    assert int(cvt("f64", "f32", np.array([0x80000001], np.uint32), ftz=True)[0]) == 1 << 63


@pytest.mark.parametrize("fmt", ["f16", "bf16", "f32", "f64"])
def test_same_type_integral_rounding(fmt):
    rng = np.random.default_rng(6)
    nb = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[fmt]
    b = rand_bits(rng, nb, 2000)
    vals = [float(x) for x in decode(fmt, b)]
    for rnd, f in (("rni", round), ("rzi", math.trunc), ("rmi", math.floor), ("rpi", math.ceil)):
        got = cvt(fmt, fmt, b, rnd=rnd)
        exp = []
        for x in vals:
            if math.isnan(x) or math.isinf(x):
                exp.append(x)
            else:
                r = float(f(Fr(x)))
                exp.append(math.copysign(r, x) if r == 0 else r)
        assert_vals(fmt, got, exp, lambda i: f"cvt.{rnd}.{fmt}.{fmt}({vals[i]!r})")
    # identity, sat
    assert np.array_equal(cvt(fmt, fmt, b)[~np.isnan(decode(fmt, b))],
                          b.astype(DT[fmt])[~np.isnan(decode(fmt, b))])
    got = cvt(fmt, fmt, b, sat=True)
    exp = [0.0 if (math.isnan(x) or x <= 0) else min(x, 1.0) for x in vals]
    assert_vals(fmt, got, exp, lambda i: f"cvt.sat.{fmt}.{fmt}({vals[i]!r})")
    with pytest.raises(ValueError):
        cvt(fmt, fmt, b, rnd="rn")


def test_same_type_ftz_f32():
    b = np.array([0x00000005, 0x80000005, 0x3F800000], np.uint32)
    assert list(cvt("f32", "f32", b, ftz=True)) == [0, 0x80000000, 0x3F800000]


def test_tf32():
    rng = np.random.default_rng(7)
    b = f32_inputs(rng, 1000)
    vals = [float(x) for x in decode("f32", b)]
    for rnd in ("rna", "rn", "rz"):
        for satf in (False, True):
            got = cvt("tf32", "f32", b, rnd=rnd, satfinite=satf)
            assert got.dtype == np.uint32
            fin = [not math.isnan(v) for v in vals]
            assert all((int(g) & 0x1FFF) == 0 for g, f in zip(got, fin) if f)
            exp = [ref_float("tf32", x, rnd, satf) for x in vals]
            assert_vals("tf32", got, exp, lambda i: f"cvt.{rnd}.tf32.f32({vals[i]!r})")
    got = cvt("tf32", "f32", b, rnd="rn", relu=True)
    assert all(decode("tf32", got)[~np.isnan(decode("f32", b))] >= 0)
    with pytest.raises(ValueError):
        cvt("tf32", "f32", b, rnd="rm")
    with pytest.raises(ValueError):
        cvt("tf32", "f32", b, rnd="rna", relu=True)
    with pytest.raises(ValueError):
        cvt("tf32", "f16", b, rnd="rna")


# ------------------------------------------------------------------------------------------
# packed forms
# ------------------------------------------------------------------------------------------

def test_pair_f16x2_operand_order():
    a = np.array([0x3F800000], np.uint32)  # 1.0 -> upper
    b = np.array([0x40000000], np.uint32)  # 2.0 -> lower
    assert int(cvt_pair("f16x2", a, b, rnd="rn")[0]) == 0x3C004000
    assert int(cvt_pair("bf16x2", a, b, rnd="rz")[0]) == 0x3F804000
    assert int(cvt_pair("e4m3x2", a, b, rnd="rn", satfinite=True)[0]) == 0x3840
    assert cvt_pair("e4m3x2", a, b, rnd="rn", satfinite=True).dtype == np.uint16
    assert int(cvt_pair("e2m1x2", a, b, rnd="rn", satfinite=True)[0]) == 0x24
    assert cvt_pair("e2m1x2", a, b, rnd="rn", satfinite=True).dtype == np.uint8
    assert int(cvt_pair("e2m3x2", a, b, rnd="rn", satfinite=True)[0]) == 0x0810
    assert int(cvt_pair("ue8m0x2", a, b, rnd="rz")[0]) == 0x7F80


ML = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
      "e2m3": ml_dtypes.float6_e2m3fn, "e3m2": ml_dtypes.float6_e3m2fn,
      "e2m1": ml_dtypes.float4_e2m1fn}


@pytest.mark.parametrize("elem", ["e4m3", "e5m2", "e2m3", "e3m2", "e2m1"])
@pytest.mark.parametrize("relu", [False, True])
def test_pair_narrow_formats(elem, relu):
    rng = np.random.default_rng(8)
    a = f32_inputs(rng, 800)
    b = a[rng.permutation(len(a))]
    dst = elem + "x2"
    got = cvt_pair(dst, a, b, rnd="rn", satfinite=True, relu=relu)
    slot = 4 if elem == "e2m1" else 8
    hi = (got.astype(np.uint64) >> np.uint64(slot)) & np.uint64((1 << slot) - 1)
    lo = got.astype(np.uint64) & np.uint64((1 << slot) - 1)
    for part, src in ((hi, a), (lo, b)):
        vals = [float(x) for x in decode("f32", src)]
        exp = [ref_float(elem, x, "rn", True) for x in vals]
        if relu:
            exp = [e if math.isnan(e) or e > 0 else 0.0 for e in exp]
        assert_vals(elem, part, exp, lambda i: f"cvt.rn.satfinite.{dst}.f32({vals[i]!r})")
        if elem in ("e2m3", "e3m2"):
            assert np.all(part < 64)
        if elem in ("e4m3", "e5m2"):
            nan = np.isnan(np.array(vals))
            assert np.all(part[nan] == 0x7F)
        # second oracle: ml_dtypes (round to nearest even from float32, saturating)
        if not relu:
            f = np.array(vals, np.float32)
            fin = np.isfinite(f) & (np.abs(f) <= FP[elem][2])
            ref = f[fin].astype(ML[elem]).view(np.uint8)
            assert np.array_equal(part[fin].astype(np.uint8), ref)
    with pytest.raises(ValueError):
        cvt_pair(dst, a, b, rnd="rn")          # .satfinite is mandatory
    with pytest.raises(ValueError):
        cvt_pair(dst, a, b, rnd="rz", satfinite=True)


def test_nan_to_formats_without_nan_gives_positive_max():
    nan = np.array([0x7FC00000, 0xFFC00000], np.uint32)
    assert int(cvt_pair("e2m1x2", nan[:1], nan[1:], rnd="rn", satfinite=True)[0]) == 0x77
    assert int(cvt_pair("e2m3x2", nan[:1], nan[1:], rnd="rn", satfinite=True)[0]) == 0x1F1F


def test_fp8x2_from_f16x2_and_unpack_roundtrip():
    # every e4m3 / e5m2 / e2m1 / e2m3 / e3m2 code unpacks exactly to f16 and packs back
    for elem, n in (("e4m3", 256), ("e5m2", 256), ("e2m3", 64), ("e3m2", 64), ("e2m1", 16)):
        slot = 4 if elem == "e2m1" else 8
        codes = np.arange(n, dtype=np.uint64)
        packed = (codes << np.uint64(slot)) | codes[::-1]
        f16x2 = cvt("f16x2", elem + "x2", packed, rnd="rn")
        assert f16x2.dtype == np.uint32
        hi = decode("f16", f16x2 >> np.uint32(16))
        lo = decode("f16", f16x2 & np.uint32(0xFFFF))
        ev = decode(elem, codes)
        assert np.array_equal(hi, ev, equal_nan=True)
        assert np.array_equal(lo, ev[::-1], equal_nan=True)
        if elem in ("e4m3", "e5m2"):
            back = cvt(elem + "x2", "f16x2", f16x2, rnd="rn", satfinite=True)
            nan = np.isnan(ev) | np.isinf(ev)  # satfinite maps +-Inf to +-MAX
            assert np.array_equal((back >> np.uint16(8))[~nan], codes[~nan].astype(np.uint16))
        r = cvt("f16x2", elem + "x2", packed, rnd="rn", relu=True)
        assert np.all(np.nan_to_num(decode("f16", r >> np.uint32(16)), nan=0) >= 0)


def test_f16x2_to_e4m3x2_rounding_and_order():
    # upper f16 -> upper byte
    x = np.array([(0x3C00 << 16) | 0x4000], np.uint32)  # hi 1.0, lo 2.0
    assert int(cvt("e4m3x2", "f16x2", x, rnd="rn", satfinite=True)[0]) == 0x3840
    # 464 (halfway between 448 and 480) -> 448 under satfinite; 65504 -> 448
    x = np.array([(0x5F40 << 16) | 0x7BFF], np.uint32)
    assert int(cvt("e4m3x2", "f16x2", x, rnd="rn", satfinite=True)[0]) == 0x7E7E
    with pytest.raises(ValueError):
        cvt("e4m3x2", "f16x2", x, rnd="rn")


def test_ue8m0():
    vals = np.array([1.0, 1.5, 3.0, 2.0 ** -127, 2.0 ** -130, 0.0, 2.0 ** 127, 2.0 ** 127 * 1.5,
                     np.inf, np.nan, -4.0, 2.0 ** -126 * 0.75], np.float32)
    b = vals.view(np.uint32)
    z = np.zeros_like(b)
    rz = cvt_pair("ue8m0x2", b, z, rnd="rz") >> np.uint16(8)
    rp = cvt_pair("ue8m0x2", b, z, rnd="rp") >> np.uint16(8)
    rps = cvt_pair("ue8m0x2", b, z, rnd="rp", satfinite=True) >> np.uint16(8)
    assert list(rz) == [127, 127, 128, 0, 0, 0, 254, 254, 0xFF, 0xFF, 129, 0]
    assert list(rp) == [127, 128, 129, 0, 0, 0, 254, 0xFF, 0xFF, 0xFF, 129, 1]
    assert list(rps) == [127, 128, 129, 0, 0, 0, 254, 254, 254, 0xFF, 129, 1]
    # bf16x2 source, and back to bf16x2
    bf = np.array([(0x3FC0 << 16) | 0x4040], np.uint32)  # hi 1.5, lo 3.0
    assert int(cvt("ue8m0x2", "bf16x2", bf, rnd="rp")[0]) == (128 << 8) | 129
    back = cvt("bf16x2", "ue8m0x2", np.array([(127 << 8) | 0, (0xFF << 8) | 254], np.uint16),
               rnd="rn")
    assert list(back) == [(0x3F80 << 16) | 0x0040, (0x7FFF << 16) | 0x7F00]
    with pytest.raises(ValueError):
        cvt_pair("ue8m0x2", b, z, rnd="rn")


def test_invalid_combinations():
    x = np.zeros(4, np.uint32)
    bad = [
        dict(dst="f16", src="f32", rnd="rn", ftz=False, relu=True, sat=False, satfinite=False,
             extra=("f64",)),
    ]
    with pytest.raises(ValueError):
        cvt("f16", "f64", x, rnd="rn", relu=True)
    with pytest.raises(ValueError):
        cvt("f16", "f16x2", x, rnd="rn")
    with pytest.raises(ValueError):
        cvt("f16x2", "f32", x, rnd="rn")          # two-source form needs cvt_pair
    with pytest.raises(ValueError):
        cvt("f64", "f16", x, ftz=True)
    with pytest.raises(ValueError):
        cvt("e4m3", "f32", x, rnd="rn")
    with pytest.raises(ValueError):
        cvt("s32", "f32", x, rnd="rs")
    with pytest.raises(ValueError):
        cvt_pair("f32", x, x, rnd="rn")
    with pytest.raises(ValueError):
        cvt_pair("f16x2", x, x, rnd="rm")
    with pytest.raises(ValueError):
        cvt("f32", "f32", np.zeros(2))            # float arrays are not bit patterns
    assert bad


# ------------------------------------------------------------------------------------------
# hardware probe (runs only where CuPy and a CUDA GPU are present: pytest -m gpu)
# ------------------------------------------------------------------------------------------

def _cupy():
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
        return cp
    except Exception:  # noqa: BLE001 - any failure means "no GPU here"
        pytest.skip("needs CuPy and a CUDA GPU")


_CT = {16: ("unsigned short", "h", np.uint16), 32: ("unsigned int", "r", np.uint32),
       64: ("unsigned long long", "l", np.uint64)}


def gpu_run(op, in_types, out_type, *arrays):
    """Run one PTX instruction per element on the GPU.  `op` uses {d} {a} {b} {c}; in_types /
    out_type are PTX register types (f32, f16, b16, u32, pred, ...), declared as .reg inside the
    asm block and moved bit-exactly from/to the C integer containers."""
    cp = _cupy()
    bits = lambda t: 16 if t[-2:] in ("16",) else 64 if t[-2:] == "64" else 32  # noqa: E731
    names = "abc"
    params, args, decl, moves = [], [], [], []
    for i, t in enumerate(in_types):
        ctype, con, _ = _CT[bits(t)]
        params.append(f"const {ctype}* in{i}")
        args.append(f'"{con}"(in{i}[i])')
        decl.append(f".reg .{t} {names[i]};")
        moves.append(f"mov.b{bits(t)} {names[i]}, %{i + 1};")
    if out_type == "pred":
        ctype, con, odt = _CT[32]
        decl.append(".reg .pred d;")
        tail = "selp.u32 %0, 1, 0, d;"
    else:
        ctype, con, odt = _CT[bits(out_type)]
        decl.append(f".reg .{out_type} d;")
        tail = f"mov.b{bits(out_type)} %0, d;"
    body = op.format(d="d", a="a", b="b", c="c")
    asm = " ".join(["{"] + decl + moves + [body + ";", tail, "}"])
    src = (f'extern "C" __global__ void k({", ".join(params)}, {ctype}* out, int n) {{\n'
           f"  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;\n"
           f"  {ctype} r; asm volatile(\"{asm}\" : \"={con}\"(r) : {', '.join(args)});\n"
           f"  out[i] = r;\n}}\n")
    kern = cp.RawKernel(src, "k")
    n = len(arrays[0])
    dev = [cp.asarray(np.ascontiguousarray(x.astype(_CT[bits(t)][2]))) for x, t in
           zip(arrays, in_types)]
    out = cp.zeros(n, dtype=odt)
    kern(((n + 127) // 128,), (128,), (*dev, out, np.int32(n)))
    return cp.asnumpy(out)


def report(tag, got, exp, inputs):
    bad = np.nonzero(np.asarray(got).astype(np.uint64) != np.asarray(exp).astype(np.uint64))[0]
    line = f"GPU {tag}: {len(got) - len(bad)}/{len(got)} bit-exact"
    if len(bad):
        i = bad[0]
        line += (f"; first mismatch inputs={[hex(int(x[i])) for x in inputs]} "
                 f"gpu={hex(int(got[i]))} sim={hex(int(exp[i]))}")
    print(line)
    return len(bad)


@pytest.mark.gpu
def test_gpu_cvt_bit_exact():
    """cvt forms available on sm_90, on the GPU vs convert.py (bit for bit)."""
    rng = np.random.default_rng(99)
    x32 = f32_inputs(rng, 300)
    x64 = np.concatenate([x32.view(np.float32).astype(np.float64).view(np.uint64),
                          rand_bits(rng, 64, 500),
                          (x32.view(np.float32).astype(np.float64)
                           * (1 + rng.random(len(x32)) * 2.0 ** -30)).view(np.uint64)])
    x16 = np.arange(0, 1 << 16, 3, dtype=np.uint64).astype(np.uint16)
    i32 = np.concatenate([rand_bits(rng, 32, 800), np.array([0, 1, 0xFFFFFFFF, 0x80000000,
                                                             0x7FFFFFFF, 16777217], np.uint64)])
    i64 = np.concatenate([rand_bits(rng, 64, 800), np.array([1 << 63, (1 << 63) - 1, 2 ** 53 + 1],
                                                            np.uint64)])
    bad = 0

    def one(ptx, it, ot, arr, exp):
        nonlocal bad
        got = gpu_run(ptx, [it], ot, arr)
        if np.asarray(exp).dtype == np.uint8:       # 8-bit results live in 16-bit registers
            got = got & 0xFF
        bad += report(ptx.split()[0], got, exp, (arr,))

    for rnd in ("rn", "rz", "rm", "rp"):
        one(f"cvt.{rnd}.f16.f32 {{d}}, {{a}}", "f32", "f16", x32, cvt("f16", "f32", x32, rnd=rnd))
        one(f"cvt.{rnd}.bf16.f32 {{d}}, {{a}}", "f32", "b16", x32, cvt("bf16", "f32", x32, rnd=rnd))
        one(f"cvt.{rnd}.f32.f64 {{d}}, {{a}}", "f64", "f32", x64, cvt("f32", "f64", x64, rnd=rnd))
        one(f"cvt.{rnd}.f16.f64 {{d}}, {{a}}", "f64", "f16", x64, cvt("f16", "f64", x64, rnd=rnd))
        one(f"cvt.{rnd}.ftz.f32.f64 {{d}}, {{a}}", "f64", "f32", x64,
            cvt("f32", "f64", x64, rnd=rnd, ftz=True))
        one(f"cvt.{rnd}.f32.s32 {{d}}, {{a}}", "s32", "f32", i32, cvt("f32", "s32", i32, rnd=rnd))
        one(f"cvt.{rnd}.f16.u32 {{d}}, {{a}}", "u32", "f16", i32, cvt("f16", "u32", i32, rnd=rnd))
        one(f"cvt.{rnd}.f64.s64 {{d}}, {{a}}", "s64", "f64", i64, cvt("f64", "s64", i64, rnd=rnd))
        one(f"cvt.{rnd}.f32.u64 {{d}}, {{a}}", "u64", "f32", i64, cvt("f32", "u64", i64, rnd=rnd))
    for rnd in ("rn", "rz"):
        for q, kw in ((".relu", {"relu": True}), (".satfinite", {"satfinite": True}),
                      (".relu.satfinite", {"relu": True, "satfinite": True})):
            one(f"cvt.{rnd}{q}.f16.f32 {{d}}, {{a}}", "f32", "f16", x32,
                cvt("f16", "f32", x32, rnd=rnd, **kw))
            one(f"cvt.{rnd}{q}.bf16.f32 {{d}}, {{a}}", "f32", "b16", x32,
                cvt("bf16", "f32", x32, rnd=rnd, **kw))
        try:   # .rn/.rz tf32 forms need sm_100 in ptxas
            one(f"cvt.{rnd}.satfinite.tf32.f32 {{d}}, {{a}}", "f32", "b32", x32,
                cvt("tf32", "f32", x32, rnd=rnd, satfinite=True))
        except Exception as e:  # noqa: BLE001
            print(f"GPU cvt.{rnd}.satfinite.tf32.f32 not available here: {str(e)[:80]}")
    one("cvt.rna.tf32.f32 {d}, {a}", "f32", "b32", x32, cvt("tf32", "f32", x32, rnd="rna"))
    fin = ~np.isnan(x32.view(np.float32))     # NaN payload of .rna.satfinite not modelled
    one("cvt.rna.satfinite.tf32.f32 {d}, {a}", "f32", "b32", x32[fin],
        cvt("tf32", "f32", x32[fin], rnd="rna", satfinite=True))
    for dst in ("s32", "u32", "s8", "u8", "s64", "u64", "s16"):
        for rnd in ("rni", "rzi", "rmi", "rpi"):
            one(f"cvt.{rnd}.{dst}.f32 {{d}}, {{a}}", "f32", dst if dst[1:] in ("32", "64") else
                dst[0] + "16", x32, cvt(dst, "f32", x32, rnd=rnd))
            one(f"cvt.{rnd}.{dst}.f64 {{d}}, {{a}}", "f64", dst if dst[1:] in ("32", "64") else
                dst[0] + "16", x64, cvt(dst, "f64", x64, rnd=rnd))
    for src, arr in (("f16", x16), ("bf16", x16)):
        reg = "f16" if src == "f16" else "b16"
        one(f"cvt.f32.{src} {{d}}, {{a}}", reg, "f32", arr, cvt("f32", src, arr))
        one(f"cvt.f64.{src} {{d}}, {{a}}", reg, "f64", arr, cvt("f64", src, arr))
        one(f"cvt.rni.{src}.{src} {{d}}, {{a}}", reg, reg, arr, cvt(src, src, arr, rnd="rni"))
        one(f"cvt.rpi.s32.{src} {{d}}, {{a}}", reg, "s32", arr, cvt("s32", src, arr, rnd="rpi"))
    one("cvt.rn.bf16.f16 {d}, {a}", "f16", "b16", x16, cvt("bf16", "f16", x16, rnd="rn"))
    one("cvt.rz.f16.bf16 {d}, {a}", "b16", "f16", x16, cvt("f16", "bf16", x16, rnd="rz"))
    one("cvt.f64.f32 {d}, {a}", "f32", "f64", x32, cvt("f64", "f32", x32))
    one("cvt.ftz.f64.f32 {d}, {a}", "f32", "f64", x32, cvt("f64", "f32", x32, ftz=True))
    for rnd in ("rni", "rzi", "rmi", "rpi"):
        one(f"cvt.{rnd}.f32.f32 {{d}}, {{a}}", "f32", "f32", x32, cvt("f32", "f32", x32, rnd=rnd))
        one(f"cvt.{rnd}.f64.f64 {{d}}, {{a}}", "f64", "f64", x64, cvt("f64", "f64", x64, rnd=rnd))
    one("cvt.ftz.f32.f32 {d}, {a}", "f32", "f32", x32, cvt("f32", "f32", x32, ftz=True))
    one("cvt.sat.f32.f32 {d}, {a}", "f32", "f32", x32, cvt("f32", "f32", x32, sat=True))
    one("cvt.rn.sat.f16.f32 {d}, {a}", "f32", "f16", x32, cvt("f16", "f32", x32, rnd="rn", sat=True))
    one("cvt.sat.s8.s32 {d}, {a}", "s32", "s16", i32, cvt("s8", "s32", i32, sat=True))
    one("cvt.sat.u16.s32 {d}, {a}", "s32", "u16", i32, cvt("u16", "s32", i32, sat=True))
    one("cvt.s64.s32 {d}, {a}", "s32", "s64", i32, cvt("s64", "s32", i32))
    one("cvt.u16.u64 {d}, {a}", "u64", "u16", i64, cvt("u16", "u64", i64))
    # packed forms
    b32 = x32[rng.permutation(len(x32))]
    for e in ("e4m3x2", "e5m2x2"):
        for q, kw in (("", {}), (".relu", {"relu": True})):
            got = gpu_run(f"cvt.rn.satfinite{q}.{e}.f32 {{d}}, {{a}}, {{b}}", ["f32", "f32"], "b16",
                          x32, b32)
            bad += report(f"cvt.rn.satfinite{q}.{e}.f32", got,
                          cvt_pair(e, x32, b32, rnd="rn", satfinite=True, **kw), (x32, b32))
        h2 = (x16.astype(np.uint64) << np.uint64(16)) | x16[::-1].astype(np.uint64)
        got = gpu_run(f"cvt.rn.satfinite.{e}.f16x2 {{d}}, {{a}}", ["b32"], "b16", h2)
        bad += report(f"cvt.rn.satfinite.{e}.f16x2", got,
                      cvt(e, "f16x2", h2, rnd="rn", satfinite=True), (h2,))
        codes = np.arange(1 << 16, dtype=np.uint64)[::5]
        got = gpu_run(f"cvt.rn.f16x2.{e} {{d}}, {{a}}", ["b16"], "b32", codes)
        bad += report(f"cvt.rn.f16x2.{e}", got, cvt("f16x2", e, codes, rnd="rn"), (codes,))
        got = gpu_run(f"cvt.rn.relu.f16x2.{e} {{d}}, {{a}}", ["b16"], "b32", codes)
        bad += report(f"cvt.rn.relu.f16x2.{e}", got, cvt("f16x2", e, codes, rnd="rn", relu=True),
                      (codes,))
    for d in ("f16x2", "bf16x2"):
        for rnd in ("rn", "rz"):
            for q, kw in (("", {}), (".relu.satfinite", {"relu": True, "satfinite": True})):
                got = gpu_run(f"cvt.{rnd}{q}.{d}.f32 {{d}}, {{a}}, {{b}}", ["f32", "f32"], "b32",
                              x32, b32)
                bad += report(f"cvt.{rnd}{q}.{d}.f32", got, cvt_pair(d, x32, b32, rnd=rnd, **kw),
                              (x32, b32))
    assert bad == 0



# ------------------------------------------------------------------------------------------
# golden vectors measured on an NVIDIA H100 (sm_90, driver 580.159.04), see test_gpu_cvt_bit_exact
# and tests/numerics/test_fp.py::test_gpu_probe_nan_ftz_edges
# ------------------------------------------------------------------------------------------

def test_golden_nan_conversions():
    q1, q2, s1 = 0x7FF8000000000123, 0xFFF8000000000456, 0x7FF0000000000001
    v = np.array([q1, q2, s1, s1 | (1 << 63)], np.uint64)
    assert list(cvt("f32", "f64", v, rnd="rn")) == [0x7FC00000, 0xFFC00000, 0x7FC00000, 0xFFC00000]
    assert list(cvt("bf16", "f64", v, rnd="rn")) == [0x7FC0, 0xFFC0, 0x7FC0, 0xFFC0]
    assert list(cvt("f16", "f64", v, rnd="rz")) == [0x7E00, 0xFE00, 0x7E00, 0xFE00]
    assert list(cvt("s32", "f64", v, rnd="rzi")) == [0x80000000] * 4
    assert list(cvt("f64", "f64", v, rnd="rni")) == [q1, q2, 0x7FF8000000000001,
                                                     0xFFF8000000000001]
    w = np.array([0xFFFD99DA60000000], np.uint64)
    assert int(cvt("f32", "f64", w, rnd="rm", ftz=True)[0]) == 0xFFECCED3
    assert int(cvt("f16", "f64", w, rnd="rn")[0]) == 0xFF66
    for dst, e in (("u32", 0x80000000), ("s16", 0x8000), ("s8", 0x80), ("u8", 0x80),
                   ("s64", 1 << 63), ("u64", 1 << 63)):
        assert int(cvt(dst, "f64", w, rnd="rni")[0]) == e
    f = np.array([0x7FC00123, 0xFF800001, 0x7F800001, 0xFFECCED3], np.uint32)
    assert list(cvt("f64", "f32", f)) == [0x7FF8002460000000, 0xFFF8000020000000,
                                          0x7FF8000020000000, 0xFFFD99DA60000000]
    assert int(cvt("f64", "f32", f[3:], ftz=True)[0]) == 0x7FFFFFFFE0000000
    assert list(cvt("f16", "f32", f, rnd="rn")) == [0x7FFF] * 4
    assert list(cvt("f32", "f32", f, rnd="rni")) == [0x7FFFFFFF] * 4
    for dst, e in (("s32", 0), ("u32", 0), ("s16", 0), ("s8", 0), ("u8", 0), ("s64", 1 << 63),
                   ("u64", 1 << 63)):
        assert int(cvt(dst, "f32", f[3:], rnd="rzi")[0]) == e
    assert int(cvt("tf32", "f32", f[3:], rnd="rna")[0]) == 0xFFECC000
    h = np.array([0x7E01, 0xFD01, 0x7FFF], np.uint16)
    assert list(cvt("f32", "f16", h)) == [0x7FFFFFFF] * 3
    assert list(cvt("f64", "f16", h)) == [0x7FF8040000000000, 0xFFFC040000000000,
                                          0x7FFFFC0000000000]
    bf = np.array([0x7F83], np.uint16)
    assert int(cvt("f32", "bf16", bf)[0]) == 0x7F830000
    assert int(cvt("f64", "bf16", bf)[0]) == 0x7FF8600000000000
