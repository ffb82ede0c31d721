"""Tests for sim/numerics/lowp.py: exact decoding of tensor-core operand formats.

Oracles: ml_dtypes 0.6 (bfloat16, float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn,
float4_e2m1fn, float8_e8m0fnu), numpy float16/float32, and the tables of numerics.md "Inputs".
Every 4/6/8/16-bit code space is checked exhaustively.
"""
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tcsim.numerics.lowp import FORMATS, decode, lowp_format, to_float64, unpack_e2m1

# format -> (numpy dtype used by the oracle, number of codes)
ORACLE = {
    "f16": (np.float16, 1 << 16),
    "bf16": (ml_dtypes.bfloat16, 1 << 16),
    "e4m3": (ml_dtypes.float8_e4m3fn, 1 << 8),
    "e5m2": (ml_dtypes.float8_e5m2, 1 << 8),
    "e3m2": (ml_dtypes.float6_e3m2fn, 1 << 6),
    "e2m3": (ml_dtypes.float6_e2m3fn, 1 << 6),
    "e2m1": (ml_dtypes.float4_e2m1fn, 1 << 4),
    "ue8m0": (ml_dtypes.float8_e8m0fnu, 1 << 8),
}
CONTAINER = {8: np.uint8, 16: np.uint16}


def oracle_values(fmt, codes):
    dt, _ = ORACLE[fmt]
    cont = np.uint16 if np.dtype(dt).itemsize == 2 else np.uint8
    with np.errstate(invalid="ignore"):          # signalling-NaN codes
        return np.asarray(codes).astype(cont).view(dt).astype(np.float64)


def same(a, b):
    """Equal as float64, NaN == NaN, and the sign of zero must match."""
    a, b = np.asarray(a), np.asarray(b)
    both_nan = np.isnan(a) & np.isnan(b)
    eq = (a == b) & (np.signbit(a) == np.signbit(b))
    return bool(np.all(both_nan | eq))


@pytest.mark.parametrize("fmt", sorted(ORACLE))
def test_exhaustive_decode_matches_ml_dtypes(fmt):
    n = ORACLE[fmt][1]
    codes = np.arange(n)
    assert same(to_float64(codes, fmt), oracle_values(fmt, codes))


@pytest.mark.parametrize("fmt", sorted(ORACLE))
def test_triples_are_well_formed(fmt):
    f = lowp_format(fmt)
    d = decode(np.arange(ORACLE[fmt][1]), fmt)
    fin = ~d.nan & ~d.inf
    v = oracle_values(fmt, np.arange(ORACLE[fmt][1]))
    # value = (-1)^s * sig * 2^(exp - man_bits), exactly
    rec = np.ldexp(d.sig.astype(np.float64), (d.exp - d.man_bits).astype(np.int32))
    rec = np.where(d.sign, -rec, rec)
    assert same(rec[fin], v[fin])
    # normals carry the hidden bit; subnormals and zeros sit at emin with sig < 2^man_bits
    hidden = 1 << f.man_bits
    if f.specials != "e8m0":
        sub = fin & (d.sig < hidden)
        assert np.all(d.exp[sub] == f.emin)
        assert np.all(d.sig[fin & ~sub] < 2 * hidden)
    assert np.all(d.exp[fin] >= f.emin)
    assert d.man_bits == f.man_bits
    # specials carry sig = 0, exp = emin
    assert np.all(d.sig[~fin] == 0) and np.all(d.exp[~fin] == f.emin)
    assert np.array_equal(d.nan, np.isnan(v)) and np.array_equal(d.inf, np.isinf(v))


@pytest.mark.parametrize("fmt", sorted(ORACLE))
def test_max_finite_matches_ml_dtypes(fmt):
    assert lowp_format(fmt).max_finite == float(ml_dtypes.finfo(ORACLE[fmt][0]).max)


def test_numerics_md_tables():
    # numerics.md "Inputs": e2m1 codes 0..7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 = sign.
    assert list(to_float64(np.arange(8), "e2m1")) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert same(to_float64(np.arange(8, 16), "e2m1"), -np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6]))
    # e4m3: max 448, S.1111.111 = NaN, no Inf; e5m2 IEEE-like
    assert to_float64([0x7E], "e4m3")[0] == 448 and np.isnan(to_float64([0x7F, 0xFF], "e4m3")).all()
    assert to_float64([0x7C, 0xFC], "e5m2").tolist() == [math.inf, -math.inf]
    # fp6 maxima 7.5 / 28 (numerics.md marks them (?); ml_dtypes agrees, see test above)
    assert to_float64([0x1F], "e2m3")[0] == 7.5 and to_float64([0x1F], "e3m2")[0] == 28
    # ue8m0: 2^(E-127), 0xFF = NaN
    assert to_float64([0, 127, 254], "ue8m0").tolist() == [2.0 ** -127, 1.0, 2.0 ** 127]
    assert np.isnan(to_float64([0xFF], "ue8m0")[0])
    d = decode([0, 127, 254], "ue8m0")
    assert d.exp.tolist() == [-127, 0, 127] and d.sig.tolist() == [1, 1, 1] and d.man_bits == 0


def test_ue4m3_ignores_sign_bit():
    codes = np.arange(256)
    v = to_float64(codes, "ue4m3")
    expect = oracle_values("e4m3", codes & 0x7F)
    assert same(v, expect)
    assert not decode(codes, "ue4m3").sign.any()
    assert np.isnan(v[[0x7F, 0xFF]]).all() and v[0x80] == 0 and not np.signbit(v[0x80])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, (1 << 32) - 1), min_size=1, max_size=64))
def test_tf32_ignores_low_13_bits(codes):
    codes = np.array(codes, dtype=np.uint32)
    with np.errstate(invalid="ignore"):                  # signalling NaN codes
        expect = (codes & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    assert same(to_float64(codes, "tf32"), expect)
    d = decode(codes, "tf32")
    assert d.man_bits == 10


def test_f32_edges_and_random():
    edge = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000,
                     0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x3F800000], dtype=np.uint32)
    rnd = np.random.default_rng(1).integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32)
    for c in (edge, rnd):
        with np.errstate(invalid="ignore"):
            expect = c.view(np.float32).astype(np.float64)
        assert same(to_float64(c, "f32"), expect)
    d = decode(np.array([1], np.uint32), "f32")          # smallest subnormal: sig 1 at emin -126
    assert (d.exp[0], d.sig[0]) == (-126, 1)


@pytest.mark.parametrize("fmt,bad", [("e2m1", 16), ("e2m3", 64), ("e3m2", 0xC0), ("e4m3", 256),
                                     ("f16", 1 << 16), ("tf32", 1 << 32), ("e4m3", -1)])
def test_out_of_range_codes_raise(fmt, bad):
    with pytest.raises(ValueError):
        decode(np.array([bad], dtype=np.int64), fmt)


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        decode(np.array([1.0]), "f16")
    with pytest.raises(ValueError):
        decode([1], "e8m0")          # unknown name (the scale format is ue8m0)
    with pytest.raises(ValueError):
        lowp_format("fp8")


def test_unpack_e2m1_low_nibble_first():
    # numerics.md: element 2i in the low nibble
    packed = np.array([[0x21, 0xF7], [0x00, 0x8A]], dtype=np.uint8)
    assert unpack_e2m1(packed).tolist() == [[1, 2, 7, 15], [0, 0, 10, 8]]
    with pytest.raises(ValueError):
        unpack_e2m1(np.array([256]))


def test_formats_table_is_read_only():
    with pytest.raises(TypeError):
        FORMATS["x"] = FORMATS["f16"]
