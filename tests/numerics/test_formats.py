"""isa/formats.py: the format table, exhaustive decode against numpy / ml_dtypes, and encode
(all rounding modes, satfinite) against a fractions.Fraction reference."""
import math
from fractions import Fraction as Fr

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.formats import FORMATS, decode, encode, round_scaled

# numpy references cast NaN/Inf/out-of-range values on purpose (the special cases under test)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ML = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
      "e5m2": ml_dtypes.float8_e5m2, "e2m3": ml_dtypes.float6_e2m3fn,
      "e3m2": ml_dtypes.float6_e3m2fn, "e2m1": ml_dtypes.float4_e2m1fn,
      "ue8m0": ml_dtypes.float8_e8m0fnu}
CODES = {"f16": 1 << 16, "bf16": 1 << 16, "e4m3": 256, "e5m2": 256, "e2m3": 64, "e3m2": 64,
         "e2m1": 16, "ue8m0": 256}
# p, emin, max finite, has_inf, has_nan
PARAMS = {
    "f16": (11, -14, 65504.0, True, True),
    "bf16": (8, -126, float((2 - Fr(1, 2 ** 7)) * Fr(2) ** 127), True, True),
    "tf32": (11, -126, float((2 - Fr(1, 2 ** 10)) * Fr(2) ** 127), True, True),
    "f32": (24, -126, float(np.finfo(np.float32).max), True, True),
    "e4m3": (4, -6, 448.0, False, True),
    "e5m2": (3, -14, 57344.0, True, True),
    "e2m3": (4, 0, 7.5, False, False),
    "e3m2": (3, -2, 28.0, False, False),
    "e2m1": (2, 0, 6.0, False, False),
    "ue4m3": (4, -6, 448.0, False, True),
}


def test_table():
    names = ("b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64 f16 bf16 tf32 f32 f64 e4m3 e5m2 "
             "e2m3 e3m2 e2m1 ue8m0 ue4m3 pred f16x2 bf16x2 e4m3x2 e5m2x2 e2m3x2 e3m2x2 e2m1x2 "
             "ue8m0x2").split()
    for n in names:
        f = FORMATS[n]
        assert f.name == n
    assert FORMATS["f16x2"].elem == "f16" and FORMATS["f16x2"].count == 2
    assert FORMATS["e2m1x2"].bits == 8 and FORMATS["e2m1x2"].slot_bits == 4
    assert FORMATS["e2m3x2"].bits == 16 and FORMATS["e2m3x2"].slot_bits == 8
    assert FORMATS["s32"].kind == "sint" and FORMATS["u8"].kind == "uint"
    assert FORMATS["pred"].kind == "pred" and FORMATS["b128"].kind == "bits"
    assert FORMATS["f32"].dtype == np.uint32 and FORMATS["e4m3x2"].dtype == np.uint16
    for n, (p, emin, mx, inf, nan) in PARAMS.items():
        f = FORMATS[n]
        assert (f.precision, f.emin, f.max_finite, f.has_inf, f.has_nan) == (p, emin, mx, inf, nan)
    assert FORMATS["e4m3"].nan_bits == 0x7F and FORMATS["f32"].nan_bits == 0x7FFFFFFF
    assert FORMATS["ue8m0"].max_finite == 2.0 ** 127 and FORMATS["ue8m0"].min_subnormal == 2.0 ** -127
    with pytest.raises(ValueError):
        FORMATS["e2m1"].nan_bits
    with pytest.raises(TypeError):
        FORMATS["f32"] = None
    with pytest.raises(Exception):
        FORMATS["f32"].bits = 3


@pytest.mark.parametrize("fmt", sorted(ML))
def test_decode_exhaustive(fmt):
    codes = np.arange(CODES[fmt], dtype=np.uint64)
    got = decode(fmt, codes)
    dt = np.uint16 if CODES[fmt] > 256 else np.uint8
    ref = codes.astype(dt).view(ML[fmt]).astype(np.float64)
    assert np.array_equal(got, ref, equal_nan=True)
    assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(ref[~np.isnan(ref)]))


def test_decode_f32_f64_tf32_ue4m3():
    rng = np.random.default_rng(0)
    b = rng.integers(0, 1 << 32, 50000, dtype=np.uint64).astype(np.uint32)
    assert np.array_equal(decode("f32", b), b.view(np.float32).astype(np.float64), equal_nan=True)
    t = decode("tf32", b)
    assert np.array_equal(t, (b & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64),
                          equal_nan=True)
    d = rng.integers(0, 1 << 63, 1000, dtype=np.uint64)
    assert np.array_equal(decode("f64", d), d.view(np.float64), equal_nan=True)
    u = np.arange(256, dtype=np.uint8)
    ue = decode("ue4m3", u)
    e = decode("e4m3", u & np.uint8(0x7F))
    assert np.array_equal(ue, e, equal_nan=True)       # sign bit ignored
    with pytest.raises(ValueError):
        decode("s32", u)


def ref_encode(fmt, x, rnd, satfinite):
    p, emin, mx, has_inf, has_nan = PARAMS[fmt]
    signed = fmt != "ue4m3"
    if math.isnan(x):
        return math.nan if has_nan else mx
    if not signed:
        x = abs(x)
    if math.isinf(x):
        if satfinite or not has_inf:
            if not satfinite and has_nan:
                return math.nan
            return math.copysign(mx, x)
        return x
    if x == 0:
        return x
    a = abs(Fr(x))
    neg = x < 0
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fr(2) ** e > a:
        e -= 1
    while Fr(2) ** (e + 1) <= a:
        e += 1
    q = max(e - (p - 1), emin - (p - 1))
    sc = a / Fr(2) ** q
    n = sc.numerator // sc.denominator
    r = sc - n
    inc = {"rn": r > Fr(1, 2) or (r == Fr(1, 2) and n % 2 == 1), "rna": r >= Fr(1, 2),
           "rz": False, "rp": r > 0 and not neg, "rm": r > 0 and neg}[rnd]
    val = (n + int(inc)) * Fr(2) ** q
    if val > Fr(mx):
        away = rnd in ("rn", "rna") or (rnd == "rp" and not neg) or (rnd == "rm" and neg)
        if satfinite or not away:
            v = mx
        elif has_inf:
            v = math.inf
        elif has_nan:
            v = math.nan
        else:
            v = mx
    else:
        v = float(val)
    return -v if neg else v


@pytest.mark.parametrize("fmt", sorted(PARAMS))
@pytest.mark.parametrize("rnd", ["rn", "rna", "rz", "rm", "rp"])
def test_encode_against_fraction(fmt, rnd):
    rng = np.random.default_rng(hash((fmt, rnd)) & 0xFFFF)
    p, emin, mx, _, _ = PARAMS[fmt]
    n = 1500
    # random values over and beyond the format's range, plus exact codes and midpoints
    e = rng.integers(emin - p - 3, int(math.log2(mx)) + 3, n)
    x = rng.random(n) * 2.0 ** e * np.where(rng.random(n) < 0.5, -1, 1)
    codes = np.arange(min(1 << 12, 1 << FORMATS[fmt].storage_bits), dtype=np.uint64)
    if fmt in ("f32", "tf32", "bf16", "f16"):
        codes = rng.integers(0, 1 << FORMATS[fmt].storage_bits, 3000, dtype=np.uint64)
        if fmt == "tf32":
            codes &= np.uint64(0xFFFFE000)
    exact = decode(fmt, codes)
    exact = exact[np.isfinite(exact)]
    ulp_next = np.nextafter(exact, np.inf)
    mids = np.concatenate([exact[:-1] + (exact[1:] - exact[:-1]) / 2])
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, mx, -mx, mx * 1.0001, mx * 2,
                         2.0 ** (emin - p), 2.0 ** (emin - p) * 1.0001, 2.0 ** (emin - p + 1)])
    x = np.concatenate([x, exact, ulp_next, mids, specials])
    for satf in (False, True):
        got = encode(fmt, x, rnd, satf)
        assert got.dtype == FORMATS[fmt].dtype
        gv = decode(fmt, got)
        for i, (xi, g) in enumerate(zip(x, gv)):
            ev = ref_encode(fmt, float(xi), rnd, satf)
            ok = (math.isnan(ev) and math.isnan(g)) or (
                g == ev and (ev != 0 or math.copysign(1, g) == math.copysign(1, ev)))
            assert ok, (fmt, rnd, satf, float(xi), hex(int(got[i])), g, ev)


def test_encode_nan_encodings():
    nan = np.array([np.nan, -np.nan])
    assert list(encode("f32", nan)) == [0x7FFFFFFF] * 2
    assert list(encode("f16", nan)) == [0x7FFF] * 2
    assert list(encode("bf16", nan)) == [0x7FFF] * 2
    assert list(encode("e4m3", nan)) == [0x7F] * 2
    assert list(encode("e5m2", nan)) == [0x7F] * 2
    assert list(encode("ue8m0", nan)) == [0xFF] * 2
    assert list(encode("e2m1", nan)) == [0x7] * 2
    assert list(encode("f64", nan)) == [0x7FFFFFFFFFFFFFFF] * 2
    # e4m3: no Inf; overflow -> NaN, or 448 with satfinite
    assert list(encode("e4m3", np.array([500.0, -np.inf, 464.0, 465.0]))) == [0x7F, 0x7F, 0x7E, 0x7F]
    assert list(encode("e4m3", np.array([500.0, -np.inf]), satfinite=True)) == [0x7E, 0xFE]
    assert list(encode("e2m1", np.array([7.0, -100.0, 0.25, 0.26]))) == [0x7, 0xF, 0x0, 0x1]


def test_encode_ue8m0():
    x = np.array([1.0, 1.5, 0.75, 2.0 ** -127, 2.0 ** -128, 0.0, -2.0, 2.0 ** 127, 2.0 ** 128, np.inf])
    assert list(encode("ue8m0", x, "rz")) == [127, 127, 126, 0, 0, 0, 128, 254, 254, 0xFF]
    assert list(encode("ue8m0", x, "rp")) == [127, 128, 127, 0, 0, 0, 128, 254, 0xFF, 0xFF]
    assert list(encode("ue8m0", x, "rp", satfinite=True))[-2:] == [254, 254]


def test_round_scaled_wide_and_sticky():
    m = np.empty(3, dtype=object)
    m[:] = [(1 << 200) + 1, (1 << 24) + (1 << 0), 3 << 22]  # huge, just above halfway, exact
    e = np.array([-200, -24, -23], np.int64)
    st = np.array([False, False, True])
    r = round_scaled("f32", np.array([False, True, False]), m, e, st, "rn")
    assert list(r.view(np.float32)) == [1.0, -1.0, np.float32(1.5)]
    r = round_scaled("f32", np.array([False, False, False]), m, e, st, "rp")
    assert list(r) == [0x3F800001, 0x3F800001, 0x3FC00001]
    # uint64 path: halfway with sticky rounds up
    r = round_scaled("f16", False, np.array([(1 << 11) + 1], np.uint64), np.array([-11]),
                     np.array([True]), "rn")
    assert int(r[0]) == 0x3C01
    r = round_scaled("f16", False, np.array([(1 << 11) + 1], np.uint64), np.array([-11]),
                     None, "rn")
    assert int(r[0]) == 0x3C00
    with pytest.raises(ValueError):
        round_scaled("f16", False, np.array([1], np.uint64), 0, None, "rx")
