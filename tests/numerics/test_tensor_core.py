"""Tests for sim/numerics/tensor_core.py, the fused block model of numerics.md.

Three kinds of evidence:
  1. hand-checked vectors, each with its derivation in a comment (F = 25 unless said otherwise;
     "units" are multiples of 2**(E - F));
  2. an independent slow reference written with fractions.Fraction straight from the numerics.md text
     (values decoded through ml_dtypes, not through sim.numerics.lowp; rounding by exact rational
     arithmetic, not by bit manipulation), compared on a few thousand random cases per format,
     including extreme exponents, subnormals, specials and cancellation;
  3. properties: when every term is exactly representable inside the F-bit window the result is the
     exact sum rounded once (oracle: numpy's IEEE conversions); chained blocks equal chained calls.

Open questions of numerics.md that stay policy switches (TensorCoreParams fields), with defaults:
  Q1 floor on E: e_floor = -133 for f32 output (-21 for f16 output)   [Khattak]
  Q2 zero terms: zero_exp_policy = 'drop' (zeros do not set E)         [Khattak]; 'min' = MMA-Sim (-126)
  Q3 zero result: always +0, not a switch.
  f32 RZ overflow -> +-Inf: module constant F32_RZ_OVERFLOW_TO_INF = True.
The defaults were measured on an H100 (mma.sync; see H100_GOLDEN below and the tensor_core module
docstring): they matched every random output, the alternatives did not.  The discriminating
vectors are in TestPolicySwitches and H100_GOLDEN.  Nothing was measured on sm_100a.
"""
import dataclasses
import math
import time
import zlib
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tcsim.numerics import tensor_core as tc
from tcsim.numerics.tensor_core import (TensorCoreParams, effective_e_floor, mma_block_scaled,
                                      mma_float, mma_int, provisional_reason, tc_params)

# ================================================================================================
# Encoding helpers (through numpy / ml_dtypes only)
# ================================================================================================
ML = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
      "e5m2": ml_dtypes.float8_e5m2, "e3m2": ml_dtypes.float6_e3m2fn, "e2m3": ml_dtypes.float6_e2m3fn,
      "e2m1": ml_dtypes.float4_e2m1fn, "ue8m0": ml_dtypes.float8_e8m0fnu, "f32": np.float32}
WIDTH = {"f32": 32, "tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "e3m2": 6,
         "e2m3": 6, "e2m1": 4, "ue8m0": 8, "ue4m3": 8}
EMIN = {"f32": -126, "f16": -14, "bf16": -126, "tf32": -126, "e4m3": -6, "e5m2": -14, "e3m2": -2,
        "e2m3": 0, "e2m1": 0, "ue8m0": -127, "ue4m3": -6}
NAN = {"f32": 0x7FFFFFFF, "f16": 0x7FFF}
INF = {"f32": 0x7F800000, "f16": 0x7C00}
NEG = {"f32": 0x80000000, "f16": 0x8000}


def enc(vals, fmt):
    """Codes of exactly representable values (asserts exactness)."""
    v = np.asarray(vals, dtype=np.float64)
    if fmt in ("f32", "tf32"):
        out = v.astype(np.float32)
        bits = out.view(np.uint32)
        if fmt == "tf32":
            assert not np.any(bits & 0x1FFF), "value not representable in tf32"
    else:
        out = v.astype(ML[fmt])
        bits = out.view(np.uint16 if np.dtype(ML[fmt]).itemsize == 2 else np.uint8)
    back = out.astype(np.float64)
    assert np.array_equal(back, v, equal_nan=True), f"{vals} not exact in {fmt}"
    return bits.astype(np.int64)


def values(codes, fmt):
    """float64 values of codes via numpy / ml_dtypes (independent of sim.numerics.lowp)."""
    c = np.asarray(codes).astype(np.int64)
    with np.errstate(invalid="ignore"):
        if fmt in ("f32", "tf32"):
            if fmt == "tf32":
                c = c & 0xFFFFE000
            return c.astype(np.uint32).view(np.float32).astype(np.float64)
        if fmt == "ue4m3":
            c, fmt = c & 0x7F, "e4m3"
        dt = ML[fmt]
        cont = np.uint16 if np.dtype(dt).itemsize == 2 else np.uint8
        return c.astype(cont).view(dt).astype(np.float64)


def f32(x):
    return int(np.float32(x).view(np.uint32))


def f16(x):
    return int(np.float16(x).view(np.uint16))


def run1(a, b, c, fmt, acc, params, b_fmt=None):
    """One output element: a, b value lists, c value; returns the D bit pattern."""
    b_fmt = b_fmt or fmt
    A = enc(a, fmt)[None, :]
    B = enc(b, b_fmt)[:, None]
    C = np.array([[f32(c) if acc == "f32" else f16(c)]], dtype=np.int64)
    return int(mma_float(A, B, C, fmt, b_fmt, acc, params)[0, 0])


def bits1(a_codes, b_codes, c_bits, fmt, acc, params):
    A = np.array(a_codes, dtype=np.int64)[None, :]
    B = np.array(b_codes, dtype=np.int64)[:, None]
    return int(mma_float(A, B, np.array([[c_bits]]), fmt, fmt, acc, params)[0, 0])


H100_F16 = tc_params("sm_90a", "mma.sync", "f16")
H100_BF16 = tc_params("sm_90a", "wgmma", "bf16")
H100_TF32 = tc_params("sm_90a", "wgmma", "tf32")
H100_FP8 = tc_params("sm_90a", "wgmma", "e4m3")
H100_MMA_FP8 = tc_params("sm_90a", "mma.sync", "e4m3")
B200_F16 = tc_params("sm_100a", "tcgen05", "f16")
B200_FP8 = tc_params("sm_100a", "tcgen05", "e4m3")
B200_MX8 = tc_params("sm_100a", "tcgen05", "e4m3", "mxf8f6f4")
B200_MXF4 = tc_params("sm_100a", "tcgen05", "e2m1", "mxf4")
B200_NVF4 = tc_params("sm_100a", "tcgen05", "e2m1", "mxf4nvf4")


# ================================================================================================
# 1. Hand-checked vectors
# ================================================================================================
class TestSpecials:
    """numerics.md step 1."""

    def test_nan_input(self):
        # a NaN anywhere in the block -> canonical NaN, whatever the rest is
        assert run1([1, np.nan], [1, 1], 0, "f16", "f32", H100_F16) == 0x7FFFFFFF
        assert run1([1, np.nan], [1, 1], 0, "f16", "f16", H100_F16) == 0x7FFF
        # NaN in C
        assert run1([1, 2], [1, 1], np.nan, "f16", "f32", H100_F16) == 0x7FFFFFFF
        # e4m3 NaN code 0x7F (S.1111.111) and the negative one 0xFF
        assert bits1([0x38, 0xFF], [0x38, 0x38], 0, "e4m3", "f32", B200_FP8) == 0x7FFFFFFF

    def test_inf_times_zero(self):
        # +Inf * +0 in one product, everything else finite -> NaN
        assert run1([np.inf, 1], [0, 1], 0, "f16", "f32", H100_F16) == 0x7FFFFFFF
        assert run1([0.0, 1], [-np.inf, 1], 0, "bf16", "f32", H100_BF16) == 0x7FFFFFFF

    def test_pos_inf_with_neg_inf(self):
        # products +Inf (inf*1) and -Inf (inf*-1) -> NaN
        assert run1([np.inf, np.inf], [1, -1], 0, "f16", "f32", H100_F16) == 0x7FFFFFFF
        # +Inf product with C = -Inf -> NaN
        assert run1([np.inf], [2], -np.inf, "f16", "f32", H100_F16) == 0x7FFFFFFF

    def test_signed_inf(self):
        # -Inf * 2 beside finite products -> -Inf; f32 0xFF800000, f16 0xFC00
        assert run1([-np.inf, 3, 5], [2, 1, -7], 1.0, "f16", "f32", H100_F16) == 0xFF800000
        assert run1([-np.inf, 3], [2, 1], 1.0, "f16", "f16", H100_F16) == 0xFC00
        # two products of the same sign Inf -> that Inf (-Inf * -1 = +Inf, +Inf * 1 = +Inf)
        assert run1([-np.inf, np.inf], [-1, 1], 0, "f16", "f32", H100_F16) == 0x7F800000
        # only C is Inf
        assert run1([1, 2], [3, 4], -np.inf, "f16", "f32", H100_F16) == 0xFF800000
        # e5m2 Inf inputs (e4m3 has none)
        assert bits1([0x7C, 0x3C], [0x3C, 0x3C], 0, "e5m2", "f32", B200_FP8) == 0x7F800000

    def test_nan_beats_inf(self):
        assert run1([np.inf, np.nan], [1, 1], 0, "f16", "f32", H100_F16) == 0x7FFFFFFF


class TestFiniteVectors:
    def test_subnormal_inputs_use_min_exponent(self):
        # f16 2^-24 is subnormal: sig = 1 (0.0000000001b), exponent -14, so m = 2^-10.
        # Product: m = 2^-20, e = -28.  C = 0 is dropped, E = -28 (floor -133 inactive).
        # Term = 2^-20 * 2^(25 - 28 + 28) = 2^5 = 32 units of 2^(E - F) = 2^-53 -> 2^-48 exactly.
        # f32 2^-48: biased exponent 127 - 48 = 79 -> 79 << 23 = 0x27800000.
        assert run1([2.0 ** -24], [2.0 ** -24], 0, "f16", "f32", H100_F16) == 0x27800000
        # f16 output: 2^-48 is far below half the smallest subnormal 2^-25 -> RNE gives +0.
        assert run1([2.0 ** -24], [2.0 ** -24], 0, "f16", "f16", H100_F16) == 0x0000

    def test_subnormal_f32_output_rz(self):
        # bf16 a = 1.5 * 2^-126 (0x00C0), b = 2^-23: product 1.5 * 2^-149, C = 0.
        # Default policy: E = max(-149, floor -133) = -133; term = 1.5 * 2^(25 - 149 + 133) = 768
        # units of 2^-158 = 1.5 * 2^-149.  RZ onto the subnormal grid 2^-149 -> 1 -> 0x00000001.
        assert run1([1.5 * 2.0 ** -126], [2.0 ** -23], 0, "bf16", "f32", H100_BF16) == 0x00000001
        # negative: -1.5 * 2^-149 -> RZ -> -2^-149 = 0x80000001
        assert run1([-1.5 * 2.0 ** -126], [2.0 ** -23], 0, "bf16", "f32", H100_BF16) == 0x80000001
        # -0.5 * 2^-149 (a = 2^-126, b = -2^-24) rounds to zero.  Both public models would return
        # -0; the H100 (mma.sync bf16, measured) returns +0 = 0x00000000.
        assert run1([2.0 ** -126], [-2.0 ** -24], 0, "bf16", "f32", H100_BF16) == 0x00000000

    def test_subnormal_f16_output_rne(self):
        # f16 a = 1.5 * 2^-12, b = 2^-12: product 1.5 * 2^-24 (exact in the window).
        # f16 subnormal grid 2^-24: 1.5 is a tie between 1 and 2 -> even -> 2 -> 2^-23 = 0x0002.
        assert run1([1.5 * 2.0 ** -12], [2.0 ** -12], 0, "f16", "f16", H100_F16) == 0x0002
        # 1.25 * 2^-24 -> 1 (0x0001); 0.5 * 2^-24 -> tie -> even 0 -> +0
        assert run1([1.25 * 2.0 ** -12], [2.0 ** -12], 0, "f16", "f16", H100_F16) == 0x0001
        assert run1([2.0 ** -13], [2.0 ** -12], 0, "f16", "f16", H100_F16) == 0x0000

    def test_total_cancellation_is_plus_zero(self):
        # 1*1 + (-1)*1 + C(0): T = 2^25 - 2^25 = 0 -> +0 in both output formats
        assert run1([1, -1], [1, 1], 0, "f16", "f32", H100_F16) == 0x00000000
        assert run1([1, -1], [1, 1], 0, "f16", "f16", H100_F16) == 0x0000
        # 3 + C(-3): exact zero -> +0
        assert run1([1.5], [2], -3.0, "f16", "f32", H100_F16) == 0x00000000

    def test_c_minus_zero_gives_plus_zero(self):
        # IEEE: (-0)*1 + (-0) = -0.  Model: every term is zero, T = 0 -> +0 (numerics.md Q3).
        assert run1([-0.0], [1], -0.0, "f16", "f32", H100_F16) == 0x00000000
        assert run1([-0.0, 0.0], [1, -1], -0.0, "f16", "f16", H100_F16) == 0x0000
        # C = -0 and products cancelling: still +0
        assert run1([2, -2], [1, 1], -0.0, "bf16", "f32", H100_BF16) == 0x00000000

    def test_tiny_term_truncated_beside_huge_one(self):
        # The classic: C = 1.0 (f32) and the product -(2^-15 * 2^-15) = -2^-30.
        # f16 2^-15 is subnormal: m = 0.5, e = -14 -> product m = 0.25, e = -28.
        # E = 0: C term = 1 * 2^25; product term = trunc(0.25 * 2^(25 - 28)) = trunc(2^-5) = 0.
        # T = 2^25 -> 1.0 = 0x3F800000.  An IEEE fma with RZ would give 1 - 2^-24 = 0x3F7FFFFF.
        assert run1([2.0 ** -15], [-(2.0 ** -15)], 1.0, "f16", "f32", H100_F16) == 0x3F800000
        # Positive version: exact 1 + 2^-30 also RZ-rounds to 1.0, the model agrees.
        assert run1([2.0 ** -15], [2.0 ** -15], 1.0, "f16", "f32", H100_F16) == 0x3F800000

    def test_many_tiny_products_lost(self):
        # K = 16: 1*1 and fifteen 2^-13 * 2^-13 = 2^-26 products.  E = 0; each small term
        # trunc(2^-26 * 2^25) = trunc(0.5) = 0, so T = 2^25 -> 1.0 = 0x3F800000.
        # Exact: 1 + 15 * 2^-26 = 1 + 1.875 * 2^-23 -> RZ -> 1 + 2^-23 = 0x3F800001 (not what TCs do).
        a = [1.0] + [2.0 ** -13] * 15
        assert run1(a, a, 0, "f16", "f32", H100_F16) == 0x3F800000

    def test_rz_vs_rne(self):
        # products -1 and -(1.5 * 2^-12) * 2^-12 = -1.5 * 2^-24: at E = 0 the small term is
        # 1.5 * 2^-24 * 2^25 = 3 units (exact); T = -(2^25 + 3) -> -(1 + 3 * 2^-25).
        # f32 ulp at 1 is 2^-23 = 4 units: RZ drops 3 units -> -1.0 = 0xBF800000
        # (RNE would give -(1 + 2^-23) = 0xBF800001).
        assert run1([-1, -1.5 * 2.0 ** -12], [1, 2.0 ** -12], 0, "f16", "f32", H100_F16) == 0xBF800000
        # f16 output, RNE: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 -> even -> 1.0 = 0x3C00
        assert run1([1, 2.0 ** -11], [1, 1], 0, "f16", "f16", H100_F16) == 0x3C00
        # 1 + 3 * 2^-12 = 1 + 0.75 ulp -> up -> 1 + 2^-10 = 0x3C01.  f32 output keeps it exactly:
        # fraction bits 2^-11 -> bit 12 (0x1000) and 2^-12 -> bit 11 (0x800): 0x3F801800.
        assert run1([1, 2.0 ** -11, 2.0 ** -12], [1, 1, 1], 0, "f16", "f16", H100_F16) == 0x3C01
        assert run1([1, 2.0 ** -11, 2.0 ** -12], [1, 1, 1], 0, "f16", "f32", H100_F16) == 0x3F801800
        # 1 + 2^-10 + 2^-11: tie between 1 + 2^-10 (odd) and 1 + 2^-9 (even) -> 0x3C02
        assert run1([1, 2.0 ** -10, 2.0 ** -11], [1, 1, 1], 0, "f16", "f16", H100_F16) == 0x3C02
        # No sticky bit: 1 + 2^-11 + 2^-30 is just above the tie, so exact RNE gives 0x3C01; the
        # model truncates the 2^-30 product (2^-13 * 2^-17: m = 2^-3, e = -27, term
        # trunc(2^-3 * 2^(25 - 27)) = 0) and sees an exact tie -> even -> 1.0 = 0x3C00.
        assert run1([1, 2.0 ** -11, 2.0 ** -13], [1, 1, 2.0 ** -17], 0, "f16", "f16", H100_F16) == 0x3C00
        # f16 overflow under RNE -> +Inf: 256 * 256 = 65536 >= 65520 -> 0x7C00; 65504 stays finite
        assert run1([256], [256], 0, "f16", "f16", H100_F16) == 0x7C00
        assert run1([65504], [1], 0, "f16", "f16", H100_F16) == 0x7BFF

    def test_chained_blocks_k32(self):
        # K = 32 as two blocks of 16 (H100 f16).  f16 2^-12 = 0x0C00 (normal), 2^-13 normal.
        # Block 1: products 1, 2^-24, 2^-25 -> E = 0, T = 2^25 + 2 + 1 -> 1 + 3 * 2^-25 -> RZ -> 1.0.
        # Block 2: C = 1.0 and the same two small products -> again 1 + 3 * 2^-25 -> 1.0.
        # Result 0x3F800000.  One fused block of 32 would see 1 + 6 * 2^-25 = 1 + 1.5 * 2^-23
        # -> RZ -> 1 + 2^-23 = 0x3F800001.
        a = np.zeros(32)
        b = np.zeros(32)
        for k0 in (0, 16):
            a[k0 + 1], b[k0 + 1] = 2.0 ** -12, 2.0 ** -12
            a[k0 + 2], b[k0 + 2] = 2.0 ** -12, 2.0 ** -13
        a[0], b[0] = 1, 1
        assert run1(a, b, 0, "f16", "f32", H100_F16) == 0x3F800000
        fused32 = dataclasses.replace(H100_F16, block=32)
        assert run1(a, b, 0, "f16", "f32", fused32) == 0x3F800001

    def test_tf32_low_bits_ignored(self):
        # a = 0x3F801FFF is 1.0 with garbage in the 13 ignored bits -> 1.0 * 1.0 = 1.0
        one = f32(1.0)
        assert bits1([0x3F801FFF], [one], 0, "tf32", "f32", H100_TF32) == 0x3F800000
        # 0x3F802000 is 1 + 2^-10 (lowest kept bit): (1 + 2^-10) * 1 -> 0x3F802000
        assert bits1([0x3F803FFF], [one], 0, "tf32", "f32", H100_TF32) == 0x3F802000

    def test_bf16_overflow_to_inf(self):
        # bf16 2^127 * 2: product 2^128, E = 128 -> beyond f32 -> +Inf (numerics.md step 5)
        assert run1([2.0 ** 127], [2], 0, "bf16", "f32", H100_BF16) == 0x7F800000
        assert run1([2.0 ** 127], [-2], 0, "bf16", "f32", H100_BF16) == 0xFF800000
        # 1.9921875 * 2^127 * 1 is the largest bf16 and fits f32 exactly
        assert run1([1.9921875 * 2.0 ** 127], [1], 0, "bf16", "f32", H100_BF16) == 0x7F7F0000

    def test_overflow_constant_alternative(self):
        # The open question behind F32_RZ_OVERFLOW_TO_INF: the IEEE alternative gives max-finite.
        T = np.array([1 << 25])                                    # 1.0 * 2^128 with F = 25
        assert tc.F32_RZ_OVERFLOW_TO_INF is True
        assert int(tc._round_pack(T, np.array([128 - 25]), "f32")[0]) == 0x7F800000
        assert int(tc._round_pack(-T, np.array([128 - 25]), "f32", overflow_to_inf=False)[0]) == 0xFF7FFFFF

    def test_h100_fp8_f13_and_e8m13(self):
        # H100 wgmma e4m3: F = 13, f32 output cut to e8m13.
        # (a) product 2^-9 * 2^-4 = 2^-13: e4m3 2^-9 is subnormal (code 0x01): m = 2^-3, e = -6;
        #     2^-4 normal: product m = 2^-3, e = -10.  With 1*1: E = 0, small term
        #     trunc(2^-3 * 2^(13 - 10)) = 1 unit of 2^-13 -> T = 2^13 + 1 -> 1 + 2^-13, which e8m13
        #     keeps: f32 0x3F800000 | (1 << 10) = 0x3F800400.
        assert run1([1, 2.0 ** -9], [1, 2.0 ** -4], 0, "e4m3", "f32", H100_FP8) == 0x3F800400
        # (b) 2^-9 * 2^-5 = 2^-14: term trunc(2^-3 * 2^(13 - 11)) = trunc(0.5) = 0 -> 1.0.
        #     B200 (F = 25) keeps it: 1 + 2^-14 = 0x3F800200.
        assert run1([1, 2.0 ** -9], [1, 2.0 ** -5], 0, "e4m3", "f32", H100_FP8) == 0x3F800000
        assert run1([1, 2.0 ** -9], [1, 2.0 ** -5], 0, "e4m3", "f32", B200_FP8) == 0x3F800200
        # (c) C = 1 + 2^-20 (f32 0x3F800008) is truncated to 13 fraction bits too: E = 0,
        #     C term trunc((1 + 2^-20) * 2^13) = 2^13 -> 1.0.  B200 keeps C exactly.
        assert run1([0], [0], 1 + 2.0 ** -20, "e4m3", "f32", H100_FP8) == 0x3F800000
        assert run1([0], [0], 1 + 2.0 ** -20, "e4m3", "f32", B200_FP8) == 0x3F800008
        # (d) e8m13 cut after normalisation: 1.875 * 1.875 = 3.515625 (m = 3.515625, e = 0) plus
        #     2^-13 (as in (a)).  E = 0, T = 3.515625 * 2^13 + 1 = 28801 units of 2^-13.
        #     The result's leading bit is 2^1, so e8m13 keeps bits down to 2^-12: the 2^-13 unit is
        #     cut -> 3.515625 = 0x40610000.  B200 gives 3.515625 + 2^-13 = 0x40610200.
        a, b = [1.875, 2.0 ** -9], [1.875, 2.0 ** -4]
        assert run1(a, b, 0, "e4m3", "f32", H100_FP8) == 0x40610000
        assert run1(a, b, 0, "e4m3", "f32", B200_FP8) == 0x40610200

    def test_h100_mma_sync_fp8_lowering(self):
        # H100 mma.sync fp8 is emulated by ptxas (SASS: F2FP.F16.E4M3.UNPACK_B, HMMA.16816.F32 from
        # RZ over k%4 in {0,1}, HMMA.16816.F32 over k%4 in {2,3}, FADD with C).  Values measured on
        # an H100 for the wgmma-style vectors of test_h100_fp8_f13_and_e8m13:
        #  (b) 1 + 2^-14: the f16 HMMA keeps it (F = 25) -> 0x3F800200
        assert run1([1, 2.0 ** -9], [1, 2.0 ** -5], 0, "e4m3", "f32", H100_MMA_FP8) == 0x3F800200
        #  (c) C = 1 + 2^-20 never enters the fused sum; FADD(C, +0) = C -> 0x3F800008
        assert run1([0], [0], 1 + 2.0 ** -20, "e4m3", "f32", H100_MMA_FP8) == 0x3F800008
        #  (d) no e8m13 cut: 3.515625 + 2^-13 -> 0x40610200
        assert run1([1.875, 2.0 ** -9], [1.875, 2.0 ** -4], 0, "e4m3", "f32", H100_MMA_FP8) == 0x40610200
        # C is added by an IEEE round-to-nearest-even add, not fused: C = 64, one product
        # 3 * 2^-9 * 2^-9 = 1.5 * 2^-17 (the f16 HMMA gives it exactly).  ulp(64) = 2^-17, so
        # 64 + 1.5 ulp is a tie -> even -> 64 + 2 ulp = 0x42800002.  A fused RZ sum with C inside
        # would give 64 + 1 ulp = 0x42800001 (B200 kind::f8f6f4 row).
        assert run1([3 * 2.0 ** -9], [2.0 ** -9], 64.0, "e4m3", "f32", H100_MMA_FP8) == 0x42800002
        assert run1([3 * 2.0 ** -9], [2.0 ** -9], 64.0, "e4m3", "f32", B200_FP8) == 0x42800001
        # Interleaved blocks: k%4 in {0,1} go to the first HMMA, k%4 in {2,3} to the second.
        # Products 8 * 8 = 64 at k = 0 and two 2^-9 * 2^-9 = 2^-18 products.  Within one block
        # (E = 6, units 2^-19) both tiny products are exact: 64 + 2^-17 fits f32 -> 0x42800001.
        # Alone beside 64, one 2^-18 is half an f32 ulp (2^-17) and RZ drops it.
        #   tiny products at k = 1 and k = 4: both in the first block -> 64 + 2^-17 = 0x42800001
        #   tiny products at k = 1 and k = 2: one per block, each dropped by the block's RZ -> 64
        #   = 0x42800000 (a contiguous 16 + 16 split would have kept them together)
        t = 2.0 ** -9
        assert run1([8, t, 0, 0, t], [8, t, 0, 0, t], 0, "e4m3", "f32", H100_MMA_FP8) == 0x42800001
        assert run1([8, t, t], [8, t, t], 0, "e4m3", "f32", H100_MMA_FP8) == 0x42800000
        # m16n8k16 fp8 (K = 16): ptxas emits two HMMA.1688 over the same k%4 halves (measured)
        pad = [0.0] * 11
        assert run1([8, t, 0, 0, t] + pad, [8, t, 0, 0, t] + pad, 0, "e4m3", "f32", H100_MMA_FP8) == 0x42800001
        assert run1([8, t, t, 0, 0] + pad, [8, t, t, 0, 0] + pad, 0, "e4m3", "f32", H100_MMA_FP8) == 0x42800000
        # NaN and Inf still give the canonical NaN / signed Inf
        assert bits1([0x7F, 0x38], [0x38, 0x38], 0, "e4m3", "f32", H100_MMA_FP8) == 0x7FFFFFFF
        assert bits1([0x7C, 0x3C], [0xBC, 0x3C], 0, "e5m2", "f32", H100_MMA_FP8) == 0xFF800000

    def test_mixed_fp8_formats(self):
        # e4m3 448 * e5m2 57344 = 25690112 = 1.53125 * 2^24, exact in f32 -> 0x4BC40000
        assert run1([448], [57344], 0, "e4m3", "f32", B200_FP8, b_fmt="e5m2") == f32(448.0 * 57344)

    def test_fp6_fp4_inputs(self):
        p = tc_params("sm_100a", "tcgen05", "e2m1")
        # e2m1 6 * 6 + 0.5 * -0.5 = 35.75
        assert run1([6, 0.5], [6, -0.5], 0, "e2m1", "f32", p) == f32(35.75)
        # e2m3 7.5 * 0.125 (subnormal, m = 0.125 at emin 0) = 0.9375; e3m2 28 * 0.0625 = 1.75
        assert run1([7.5], [0.125], 0, "e2m3", "f32", tc_params("sm_100a", "tcgen05", "e2m3")) == f32(0.9375)
        assert run1([28], [0.0625], 0, "e3m2", "f32", tc_params("sm_100a", "tcgen05", "e3m2")) == f32(1.75)


class TestPolicySwitches:
    """Golden vectors that separate the answers to numerics.md open questions 1 and 2."""

    # bf16 a = 2^-126 (0x0080), b = 2^-26: product 2^-152.  Eight such products, C = 0.
    A8 = [2.0 ** -126] * 8
    B8 = [2.0 ** -26] * 8

    def test_floor_drop_default(self):
        # Khattak (default): zeros dropped, E = max(-152, -133) = -133, each term
        # 2^(25 - 152 + 133) = 64 units, T = 512 units of 2^-158 = 2^-149 -> 0x00000001.
        assert run1(self.A8, self.B8, 0, "bf16", "f32", H100_BF16) == 0x00000001

    def test_min_policy(self):
        # MMA-Sim: C = 0 has exponent -126, so E = -126; each term trunc(2^(25 - 152 + 126)) =
        # trunc(0.5) = 0 -> T = 0 -> +0.
        p = dataclasses.replace(H100_BF16, zero_exp_policy="min", e_floor=None)
        assert run1(self.A8, self.B8, 0, "bf16", "f32", p) == 0x00000000

    def test_no_floor(self):
        # No floor, zeros dropped: E = -152, all terms exact, 8 * 2^-152 = 2^-149 -> 0x00000001.
        p = dataclasses.replace(H100_BF16, e_floor=None)
        assert run1(self.A8, self.B8, 0, "bf16", "f32", p) == 0x00000001

    def test_floor_vs_no_floor_f32(self):
        # bf16 block of 16: P = (2 - 2^-7) * 2^-126 * 2^-24 = 2^-149 - 2^-157 = 510 * 2^-158 and
        # fifteen products 2^-126 * 2^-33 = 2^-159; C = 0.  Exact sum = 510 * 2^-158 + 15 * 2^-159
        # = 517.5 * 2^-158, just above 512 * 2^-158 = 2^-149 (the smallest f32 subnormal).
        #   default (floor -133): E = -133, units of 2^-158: P -> 510, each 2^-159 -> trunc(0.5) = 0;
        #       T = 510 < 512 -> RZ to the 2^-149 grid -> +0.
        #   no floor: E = -150, window LSB 2^-175, everything exact -> 517.5 * 2^-158 -> 0x00000001.
        #   MMA-Sim ('min'): E = -126 (zero C), P -> trunc(1.99 * 2) = 3 units of 2^-151 -> +0.
        a = [1.9921875 * 2.0 ** -126] + [2.0 ** -126] * 15
        b = [2.0 ** -24] + [2.0 ** -33] * 15
        assert run1(a, b, 0, "bf16", "f32", H100_BF16) == 0x00000000
        assert run1(a, b, 0, "bf16", "f32", dataclasses.replace(H100_BF16, e_floor=None)) == 0x00000001
        pm = dataclasses.replace(H100_BF16, zero_exp_policy="min", e_floor=None)
        assert run1(a, b, 0, "bf16", "f32", pm) == 0x00000000

    def test_f16_output_floor(self):
        # f16 products 2^-12 * 2^-13 = 2^-25 and 2^-24 * 2^-24 = 2^-48 (subnormals: m = 2^-20,
        # e = -28), C = 0, f16 output (RNE, smallest subnormal 2^-24, so 2^-25 is a tie).
        a, b = [2.0 ** -12, 2.0 ** -24], [2.0 ** -13, 2.0 ** -24]
        # default: floor for f16 output = -133 + 112 = -21 -> E = -21; small term
        # trunc(2^-20 * 2^(25 - 28 + 21)) = trunc(2^-2) = 0; value 2^-25 exactly -> tie -> even 0 -> +0
        assert effective_e_floor(H100_F16, "f16") == -21
        assert run1(a, b, 0, "f16", "f16", H100_F16) == 0x0000
        # no floor: E = -25; small term 2^-20 * 2^(25 - 28 + 25) = 4 units -> above the tie -> 0x0001
        assert run1(a, b, 0, "f16", "f16", dataclasses.replace(H100_F16, e_floor=None)) == 0x0001
        # MMA-Sim ('min', no floor): zero C has exponent -126 < -25, E = -25 -> also 0x0001
        pm = dataclasses.replace(H100_F16, zero_exp_policy="min", e_floor=None)
        assert run1(a, b, 0, "f16", "f16", pm) == 0x0001

    def test_zero_product_does_not_raise_E(self):
        # numerics.md Q2 suggests "0 * 2^100 can raise E" under MMA-Sim.  In MMA-Sim's code
        # (truncated_fused_sum) a zero *product* gets exponent -126 whatever its operands' exponents,
        # so a huge zero product cannot raise E above -126 under either policy.  Vector: products
        # 0 * 2^15 and 1.5 * 2^-12 * 2^-14 = 1.5 * 2^-26, C = 0.  Under 'drop' and 'min',
        # E = -26 and the small product is exact -> 1.5 * 2^-26 = f32 0x32C00000.  (Had the zero
        # kept its operand exponent -14 + 15 = 1, E = 1 and the term trunc(1.5 * 2^-2) = 0 -> +0.)
        a, b = [0.0, 1.5 * 2.0 ** -12], [2.0 ** 15, 2.0 ** -14]
        assert f32(1.5 * 2.0 ** -26) == 0x32C00000
        for p in (H100_F16, dataclasses.replace(H100_F16, zero_exp_policy="min")):
            assert run1(a, b, 0, "f16", "f32", p) == 0x32C00000


class TestBlockScaledVectors:
    def test_mxf8f6f4_scale_exponents_add(self):
        # e4m3 a = 1, b = 1; ue8m0 sA = 2^3 (code 130), sB = 2^-2 (code 125) -> 2 = 0x40000000
        A = np.full((1, 32), 0x38)
        B = np.zeros((32, 1), dtype=np.int64)
        B[0, 0] = 0x38
        C = np.zeros((1, 1), dtype=np.uint32)
        d = mma_block_scaled(A, B, C, np.array([[130]]), np.array([[125]]), "e4m3", "e4m3", "ue8m0",
                             32, B200_MX8)
        # row of 32 ones times column (1, 0, ..., 0): 1 * 2^3 * 2^-2 = 2
        assert int(d[0, 0]) == 0x40000000

    def test_scale_nan(self):
        A = np.full((1, 32), 0x38)
        B = np.full((32, 1), 0x38)
        C = np.zeros((1, 1), dtype=np.uint32)
        d = mma_block_scaled(A, B, C, np.array([[0xFF]]), np.array([[127]]), "e4m3", "e4m3", "ue8m0",
                             32, B200_MX8)
        assert int(d[0, 0]) == 0x7FFFFFFF

    def test_mxf4_group_exponent_is_scale_exponent(self):
        # mxf4, K = 64 (four groups of 16), ue8m0 scales 2^0 (code 127), C = 2^-35 (f32 0x2E000000).
        # e2m1 codes: 7 = 6, 0xF = -6, 1 = 0.5.
        def run(A, B, sfa):
            C = np.array([[f32(2.0 ** -35)]], dtype=np.uint32)
            return int(mma_block_scaled(A, B, C, sfa, np.full((2, 1), 127), "e2m1", "e2m1", "ue8m0",
                                        32, B200_MXF4)[0, 0])
        A = np.zeros((1, 64), dtype=np.int64)
        B = np.zeros((64, 1), dtype=np.int64)
        ones = np.full((1, 2), 127)
        # (a) 6*6 and -6*6 inside group 0: the group sum is exactly 0, but the group has non-zero
        #     products, so it keeps its scale exponent 0 in E (group_exp_policy 'products', MMA-Sim;
        #     see test_mxf4_cancelled_group_keeps_scale_exponent): E = 0 and C is exactly 1 unit of
        #     2^-35 -> 0x2E000000.  (Under 'sum' the group is dropped, E = -35, same result.)
        A[0, 0], B[0, 0] = 0x7, 0x7
        A[0, 1], B[1, 0] = 0xF, 0x7
        assert run(A, B, ones) == 0x2E000000
        # (b) the same two products in different groups (k = 0 and k = 16): group terms 36 and -36
        #     are non-zero and carry the scale exponent 0 (MMA-Sim), so E = 0 and C is
        #     2^-35 * 2^(35 + (-35) - 0) = 1 unit: T = 36 * 2^35 - 36 * 2^35 + 1 -> 2^-35 = 0x2E000000.
        #     (Normalising each group sum instead would give E = 5 and drop C -> +0.)
        A[:] = 0
        B[:] = 0
        A[0, 0], B[0, 0] = 0x7, 0x7
        A[0, 16], B[16, 0] = 0xF, 0x7
        assert run(A, B, ones) == 0x2E000000
        # (c) group 0 = 36 - 36 + 0.5 * 0.5 = 0.25 exactly, scale of block 0 = 2^-20 (code 107):
        #     group term significand 0.25, exponent -20; E = max(-20, -35) = -20; units 2^-55:
        #     group -> 0.25 * 2^35 = 2^33, C -> 2^(-35 + 55) = 2^20.  T = 2^33 + 2^20 ->
        #     2^-22 + 2^-35, which has 14 significant bits -> exact in f32.
        A[:] = 0
        B[:] = 0
        A[0, 0], B[0, 0] = 0x7, 0x7
        A[0, 1], B[1, 0] = 0xF, 0x7
        A[0, 2], B[2, 0] = 0x1, 0x1
        assert run(A, B, np.array([[107, 127]])) == f32(2.0 ** -22 + 2.0 ** -35)
        # (d) same with scale 2^0: E = 0, C is 1 unit of 2^-35 -> 0.25 + 2^-35 -> RZ -> 0.25
        assert run(A, B, ones) == 0x3E800000

    def test_mxf4_cancelled_group_keeps_scale_exponent(self):
        # mmasim oracle finding (tests/golden/mmasim_oracle/README.md): in MMA-Sim's B200 mxf4 model
        # a group whose products are non-zero but cancel exactly still takes part in E with its
        # scale exponent.  Group 0 = 6*6 + (-6)*6 = 0 with scale 2^0, C = 2^-36 (0x2D800000), all
        # other products zero (those groups do not take part).  'products': E = 0, C = 2^-36 is half
        # a unit of 2^-35 -> truncated -> +0.  'sum': E = -36 from C -> C survives.
        A = np.zeros((1, 64), dtype=np.int64)
        B = np.zeros((64, 1), dtype=np.int64)
        A[0, 0], B[0, 0] = 0x7, 0x7
        A[0, 1], B[1, 0] = 0xF, 0x7
        C = np.array([[f32(2.0 ** -36)]], dtype=np.uint32)
        ones = np.full((1, 2), 127)

        def run(p):
            return int(mma_block_scaled(A, B, C, ones, ones.T, "e2m1", "e2m1", "ue8m0", 32, p)[0, 0])
        assert run(B200_MXF4) == 0
        assert run(dataclasses.replace(B200_MXF4, group_exp_policy="sum")) == 0x2D800000
        # a group whose products are all zero does not take part: same C alone is kept
        A[0, :2] = 0
        assert run(B200_MXF4) == 0x2D800000
        # a huge cancelled group wipes out a large finite group: group 2 (scale block 1, 2^100)
        # cancels, group 0 = 1 * 1 with scale 2^0 -> 1 is far below 2^(100 - 35) -> +0
        A[0, 0], B[0, 0] = 0x2, 0x2
        A[0, 32], B[32, 0] = 0x7, 0x7
        A[0, 33], B[33, 0] = 0xF, 0x7
        sfa = np.array([[127, 227]])
        C0 = np.zeros((1, 1), dtype=np.uint32)
        assert int(mma_block_scaled(A, B, C0, sfa, ones.T, "e2m1", "e2m1", "ue8m0", 32, B200_MXF4)[0, 0]) == 0
        assert int(mma_block_scaled(A, B, C0, sfa, ones.T, "e2m1", "e2m1", "ue8m0", 32,
                                    dataclasses.replace(B200_MXF4, group_exp_policy="sum"))[0, 0]) == f32(1.0)

    def test_mxf4_floor_is_139(self):
        # mmasim oracle finding: MMA-Sim's B200 mxf4 / mxf4nvf4 model floors E at -139 (e_zero of
        # MMA_GST_FDPA), not -133.  C = 0; group 0 = 1 * 1 with scales 2^-70 * 2^-70 -> 2^-140
        # (exponent -140); group 2 = (-0.5) * 0.5 with scales 2^-84 * 2^-84 -> -2^-170 (exponent -168).
        # Floor -139: E = -139, units 2^-174, the tiny term is kept: 2^-140 - 2^-170 -> RZ to f32
        # (subnormal, units 2^-149) -> 2^-140 - 2^-149 = 0x000001FF.  Floor -133: units 2^-168, the
        # tiny term truncates to 0 -> exactly 2^-140 = 0x00000200.
        A = np.zeros((1, 64), dtype=np.int64)
        B = np.zeros((64, 1), dtype=np.int64)
        A[0, 0], B[0, 0] = 0x2, 0x2
        A[0, 32], B[32, 0] = 0x9, 0x1
        sf = np.array([[57, 43]])
        C = np.zeros((1, 1), dtype=np.uint32)
        for p in (B200_MXF4, B200_NVF4):
            assert p.e_floor == tc.E_FLOOR_F32_OUT_GROUPED == -139
            assert int(mma_block_scaled(A, B, C, sf, sf.T, "e2m1", "e2m1", "ue8m0", 32, p)[0, 0]) == 0x1FF
            assert int(mma_block_scaled(A, B, C, sf, sf.T, "e2m1", "e2m1", "ue8m0", 32,
                                        dataclasses.replace(p, e_floor=-133))[0, 0]) == 0x200

    def test_nvf4_ue4m3_scales(self):
        # mxf4nvf4 with ue4m3 block-16 scales: group g uses sfa[g] * sfb[g].
        # a = 1.5 (code 3) in every slot, b = 2 (code 4) in every slot: each group sums 16 * 3 = 48.
        # scales: sfa = [1.5 (0x3C), 0.5 (0x30), 0 (0x00), 0.001953125 (0x01: subnormal 2^-9)],
        # sfb = 1 (0x38).  Sum = 48 * (1.5 + 0.5 + 0 + 2^-9) = 96 + 0.09375 = 96.09375 (exact f32).
        A = np.full((1, 64), 3)
        B = np.full((64, 1), 4)
        C = np.zeros((1, 1), dtype=np.uint32)
        sfa = np.array([[0x3C, 0x30, 0x00, 0x01]])
        sfb = np.full((4, 1), 0x38)
        d = mma_block_scaled(A, B, C, sfa, sfb, "e2m1", "e2m1", "ue4m3", 16, B200_NVF4)
        assert int(d[0, 0]) == f32(96.09375)
        # the ue4m3 sign bit is ignored: 0xBC is 1.5 as well
        sfa[0, 0] = 0xBC
        assert int(mma_block_scaled(A, B, C, sfa, sfb, "e2m1", "e2m1", "ue4m3", 16, B200_NVF4)[0, 0]) \
            == f32(96.09375)


class TestIntegers:
    """numerics.md "Integers"; PTX ISA §9.7.14 .satfinite."""

    def test_s8_max_dot(self):
        # 32 * 127 * 127 = 516128, plus C = -5 -> 516123
        a = np.full((1, 32), 127, dtype=np.int8)
        b = np.full((32, 1), 127, dtype=np.int8)
        assert mma_int(a, b, np.array([[-5]]), True, True, False)[0, 0] == 516123

    def test_signedness_of_codes(self):
        # code 0xFF is -1 as s8 and 255 as u8; 0x80 is -128 / 128
        # s8.s8: (-1)(-128) + (-128)(-1) = 256
        a = np.array([[0xFF, 0x80]], dtype=np.uint8)
        b = np.array([[0x80], [0xFF]], dtype=np.uint8)
        assert mma_int(a, b, np.zeros((1, 1), np.int32), True, True, False)[0, 0] == 256
        assert mma_int(a, b, np.zeros((1, 1), np.int32), False, False, False)[0, 0] == 2 * 255 * 128
        assert mma_int(a, b, np.zeros((1, 1), np.int32), False, True, False)[0, 0] == 255 * -128 + 128 * -1
        assert mma_int(a, b, np.zeros((1, 1), np.int32), True, False, False)[0, 0] == -128 - 128 * 255

    def test_wrap_and_saturate(self):
        one = np.ones((1, 1), dtype=np.uint8)
        cmax = np.array([[2 ** 31 - 1]])
        # 0x7FFFFFFF + 1: wraps to -2^31 without .satfinite, clamps to 2^31 - 1 with it
        assert mma_int(one, one, cmax, True, True, False)[0, 0] == -(2 ** 31)
        assert mma_int(one, one, cmax, True, True, True)[0, 0] == 2 ** 31 - 1
        # negative side, C given as its uint32 bit pattern 0x80000000 = -2^31; minus 1
        neg = np.array([[0xFF]], dtype=np.uint8)
        cmin = np.array([[0x80000000]], dtype=np.uint32)
        assert mma_int(neg, one, cmin, True, True, False)[0, 0] == 2 ** 31 - 1
        assert mma_int(neg, one, cmin, True, True, True)[0, 0] == -(2 ** 31)
        # the dot product is exact in wide precision and only the final sum is clamped:
        # C = 2^31 - 100 plus 32 * 255 * 1 = 8160 -> 2^31 + 8060 -> clamps to 2^31 - 1
        a = np.full((1, 32), 255, dtype=np.uint8)
        big = np.array([[2 ** 31 - 100]])
        assert mma_int(a, np.ones((32, 1), np.uint8), big, False, False, True)[0, 0] == 2 ** 31 - 1
        # ... and wraps without .satfinite: 2^31 + 8060 - 2^32 = -2^31 + 8060
        assert mma_int(a, np.ones((32, 1), np.uint8), big, False, False, False)[0, 0] == -(2 ** 31) + 8060

    @settings(max_examples=60, deadline=None)
    @given(st.integers(0, 2 ** 32 - 1), st.booleans(), st.booleans(), st.booleans(),
           st.lists(st.integers(0, 255), min_size=32, max_size=32),
           st.lists(st.integers(0, 255), min_size=32, max_size=32))
    def test_random_against_python_ints(self, cbits, sa, sb, sat, a, b):
        def s8(x, signed):
            return x - 256 if signed and x >= 128 else x
        cval = cbits - 2 ** 32 if cbits >= 2 ** 31 else cbits
        exact = sum(s8(x, sa) * s8(y, sb) for x, y in zip(a, b)) + cval
        if sat:
            expect = max(-(2 ** 31), min(2 ** 31 - 1, exact))
        else:
            expect = (exact + 2 ** 31) % 2 ** 32 - 2 ** 31
        got = mma_int(np.array([a], dtype=np.uint8), np.array(b, dtype=np.uint8)[:, None],
                      np.array([[cbits]], dtype=np.uint32), sa, sb, sat)
        assert got.dtype == np.int32 and int(got[0, 0]) == expect

    def test_bad_operands(self):
        with pytest.raises(ValueError):
            mma_int(np.array([[256]]), np.array([[1]]), np.array([[0]]), False, False, False)
        with pytest.raises(ValueError):
            mma_int(np.array([[1.0]]), np.array([[1]]), np.array([[0]]), False, False, False)


# Golden vectors measured on an H100 80GB HBM3 (driver 580.159, CUDA 13.0 ptxas) with mma.sync,
# one output element (row 0, column 0) set, everything else zero.  (name, params, in fmt, acc,
# a values, b values, c value, hardware bits).  The model must reproduce them exactly.
H100_GOLDEN = [
    ("Q1 bf16 8 x 2^-152", H100_BF16, "bf16", "f32", [2.0 ** -126] * 8, [2.0 ** -26] * 8, 0.0, 0x1),
    ("Q1 bf16 floor vs none", H100_BF16, "bf16", "f32", [1.9921875 * 2.0 ** -126] + [2.0 ** -126] * 15,
     [2.0 ** -24] + [2.0 ** -33] * 15, 0.0, 0x0),
    ("Q1 bf16 subnormal RZ", H100_BF16, "bf16", "f32", [1.5 * 2.0 ** -126], [2.0 ** -23], 0.0, 0x1),
    ("Q1 f16-out floor", H100_F16, "f16", "f16", [2.0 ** -12, 2.0 ** -24], [2.0 ** -13, 2.0 ** -24], 0.0, 0x0),
    # f16-output floor bracket: products 2^-22, 2^-25 (a tie on the f16 subnormal grid) and
    # 2^-24 * 2^-k, kept iff floor <= 1 - k: kept for k = 22, dropped for k = 23 -> floor = -21
    ("Q1 f16-out floor = -21 (k=22)", H100_F16, "f16", "f16", [2.0 ** -11, 2.0 ** -12, 2.0 ** -24],
     [2.0 ** -11, 2.0 ** -13, 2.0 ** -22], 0.0, 0x0005),
    ("Q1 f16-out floor = -21 (k=23)", H100_F16, "f16", "f16", [2.0 ** -11, 2.0 ** -12, 2.0 ** -24],
     [2.0 ** -11, 2.0 ** -13, 2.0 ** -23], 0.0, 0x0004),
    ("Q2 huge zero product", H100_F16, "f16", "f32", [0.0, 1.5 * 2.0 ** -12], [2.0 ** 15, 2.0 ** -14], 0.0,
     0x32C00000),
    ("Q3 C = -0", H100_F16, "f16", "f32", [-0.0], [1.0], -0.0, 0x0),
    ("Q3 cancel, C = -0", H100_F16, "f16", "f32", [2.0, -2.0], [1.0, 1.0], -0.0, 0x0),
    ("Q3 negative underflow f32", H100_BF16, "bf16", "f32", [2.0 ** -126], [-(2.0 ** -24)], 0.0, 0x0),
    ("Q3 negative underflow f16", H100_F16, "f16", "f16", [-(2.0 ** -13)], [2.0 ** -13], 0.0, 0x0),
    ("truncation 1 - 2^-30", H100_F16, "f16", "f32", [2.0 ** -15], [-(2.0 ** -15)], 1.0, 0x3F800000),
    ("15 tiny products", H100_F16, "f16", "f32", [1.0] + [2.0 ** -13] * 15, [1.0] + [2.0 ** -13] * 15, 0.0,
     0x3F800000),
    ("RZ negative", H100_F16, "f16", "f32", [-1, -1.5 * 2.0 ** -12], [1, 2.0 ** -12], 0.0, 0xBF800000),
    ("RNE tie, no sticky", H100_F16, "f16", "f16", [1, 2.0 ** -11, 2.0 ** -13], [1, 1, 2.0 ** -17], 0.0, 0x3C00),
    ("f16 overflow", H100_F16, "f16", "f16", [256.0], [256.0], 0.0, 0x7C00),
    ("bf16 -> f32 overflow", H100_BF16, "bf16", "f32", [2.0 ** 127], [2.0], 0.0, 0x7F800000),
    ("bf16 -> f32 overflow neg", H100_BF16, "bf16", "f32", [2.0 ** 127], [-2.0], 0.0, 0xFF800000),
    ("bf16 -> f32 overflow sum", H100_BF16, "bf16", "f32", [1.9921875 * 2.0 ** 127] * 2, [1.0] * 2, 0.0,
     0x7F800000),
    ("fp8 mma.sync 1 + 2^-13", H100_MMA_FP8, "e4m3", "f32", [1, 2.0 ** -9], [1, 2.0 ** -4], 0.0, 0x3F800400),
    ("fp8 mma.sync 1 + 2^-14", H100_MMA_FP8, "e4m3", "f32", [1, 2.0 ** -9], [1, 2.0 ** -5], 0.0, 0x3F800200),
    ("fp8 mma.sync C kept", H100_MMA_FP8, "e4m3", "f32", [0.0], [0.0], 1 + 2.0 ** -20, 0x3F800008),
    ("fp8 mma.sync no e8m13", H100_MMA_FP8, "e4m3", "f32", [1.875, 2.0 ** -9], [1.875, 2.0 ** -4], 0.0,
     0x40610200),
    ("fp8 mma.sync C added RNE", H100_MMA_FP8, "e4m3", "f32", [3 * 2.0 ** -9], [2.0 ** -9], 64.0, 0x42800002),
    ("fp8 mma.sync same block", H100_MMA_FP8, "e4m3", "f32", [8, 2.0 ** -9, 0, 0, 2.0 ** -9],
     [8, 2.0 ** -9, 0, 0, 2.0 ** -9], 0.0, 0x42800001),
    ("fp8 mma.sync split blocks", H100_MMA_FP8, "e4m3", "f32", [8, 2.0 ** -9, 2.0 ** -9],
     [8, 2.0 ** -9, 2.0 ** -9], 0.0, 0x42800000),
    ("Inf * 0", H100_F16, "f16", "f32", [np.inf, 1], [0.0, 1], 0.0, 0x7FFFFFFF),
    ("+Inf + -Inf", H100_F16, "f16", "f32", [np.inf, np.inf], [1.0, -1.0], 0.0, 0x7FFFFFFF),
    ("NaN, f16 out", H100_F16, "f16", "f16", [np.nan], [1.0], 0.0, 0x7FFF),
    ("NaN", H100_F16, "f16", "f32", [np.nan], [1.0], 0.0, 0x7FFFFFFF),
]


@pytest.mark.parametrize("g", H100_GOLDEN, ids=[g[0] for g in H100_GOLDEN])
def test_h100_golden_vectors(g):
    name, p, fmt, acc, a, b, c, hw = g
    K = 32 if p.lowering else (16 if fmt != "tf32" else 8)
    a = list(a) + [0.0] * (K - len(a))
    b = list(b) + [0.0] * (K - len(b))
    assert run1(a, b, c, fmt, acc, p) == hw
    if p.lowering is None and fmt != "tf32":
        assert ref_dot(a, b, c, fmt, fmt, acc, p) == hw          # the reference agrees as well


def test_h100_golden_policy_alternatives_disagree():
    """The measured vectors reject MMA-Sim's zero exponent and the no-floor variant."""
    by = {g[0]: g for g in H100_GOLDEN}
    for name, variant in [("Q1 bf16 8 x 2^-152", dict(zero_exp_policy="min", e_floor=None)),
                          ("Q1 bf16 floor vs none", dict(e_floor=None)),
                          ("Q1 f16-out floor", dict(e_floor=None)),
                          ("Q1 f16-out floor", dict(zero_exp_policy="min", e_floor=None)),
                          ("Q1 f16-out floor = -21 (k=22)", dict(e_floor=-127)),      # B200 file: -15
                          ("Q1 f16-out floor = -21 (k=23)", dict(e_floor=-134))]:
        _, p, fmt, acc, a, b, c, hw = by[name]
        assert run1(a, b, c, fmt, acc, dataclasses.replace(p, **variant)) != hw, (name, variant)


# ================================================================================================
# 2. Independent reference with fractions.Fraction (straight from the numerics.md text)
# ================================================================================================
TWO = Fraction(2)
OUT = {"f32": (23, -126, 127), "f16": (10, -14, 15), "e8m13": (13, -126, 127)}


def flog2(x):
    """floor(log2(|x|)) of a non-zero Fraction."""
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e - 1 if TWO ** e > x else e


def sig_exp(x, emin):
    """numerics.md step 2: significand and exponent, subnormals at the minimum exponent."""
    e = max(flog2(x), emin)
    return x / TWO ** e, e


def ref_round(v, out, rne=None):
    """Round the exact rational v once: f32 / e8m13 toward zero with subnormals, f16 to nearest
    even (rne=True forces nearest-even); overflow -> +-Inf; every zero result is +0 (also a
    negative v that rounds to zero)."""
    acc = "f16" if out == "f16" else "f32"
    if v == 0:
        return 0
    pf, emin, emax = OUT[out]
    a = abs(v)
    q = max(flog2(a), emin) - pf
    scaled = a / TWO ** q
    rne = (out == "f16") if rne is None else rne
    r = round(scaled) if rne else int(scaled)               # Fraction.__round__ is ties-to-even
    if r == 0:
        return 0                                             # every zero result is +0 (H100)
    val = r * TWO ** q
    fv = math.inf if val >= TWO ** (emax + 1) else float(val)
    fv = -fv if v < 0 else fv
    return int(np.array(fv, dtype=np.float16 if acc == "f16" else np.float32)
               .view(np.uint16 if acc == "f16" else np.uint32))


def ref_specials(factors, c, acc):
    """numerics.md step 1 on float64 values.  factors: list of tuples of factor values per term."""
    nan = math.isnan(c)
    pos = c == math.inf
    neg = c == -math.inf
    for fs in factors:
        if any(math.isnan(x) for x in fs):
            nan = True
        elif any(math.isinf(x) for x in fs):
            if any(x == 0 for x in fs):
                nan = True
            elif math.prod(1 if x > 0 else -1 for x in fs) > 0:
                pos = True
            else:
                neg = True
    if nan or (pos and neg):
        return NAN[acc]
    if pos or neg:
        return INF[acc] | (NEG[acc] if neg else 0)
    return None


def ref_fuse(terms, F, E_floor, policy, out):
    """Steps 3-5.  terms: list of (signed significand Fraction, exponent) with zero terms as
    (0, None); (0, e) is a zero term that still takes part in E with exponent e (a cancelled
    mxf4 group under group_exp_policy='products')."""
    zero_e = None if policy == "drop" else -126
    exps = [e if (m != 0 or e is not None) else zero_e for m, e in terms]
    exps = [e for e in exps if e is not None]
    if E_floor is not None:
        exps.append(E_floor)
    if not exps:
        return 0
    E = max(exps)
    T = sum(int(m * TWO ** (F + e - E)) for m, e in terms if m != 0)   # int() truncates toward 0
    return ref_round(T * TWO ** (E - F), out)


def ref_floor(p, acc):
    return None if p.e_floor is None else p.e_floor + (EMIN[acc] - EMIN["f32"])


def ref_dot(av, bv, cv, a_fmt, b_fmt, acc, p):
    """Reference for one output element of mma_float (value lists in, bit pattern out)."""
    out = "e8m13" if (p.out_trunc_frac == 13 and acc == "f32") else acc
    K = len(av)
    c_bits = None
    for k0 in range(0, K, p.block):
        if c_bits is not None:
            cv = float(values([c_bits], acc)[0])
        ks = range(k0, min(k0 + p.block, K))
        sp = ref_specials([(av[k], bv[k]) for k in ks], cv, acc)
        if sp is not None:
            c_bits = sp
            continue
        terms = []
        for k in ks:
            if av[k] == 0 or bv[k] == 0:
                terms.append((0, None))
            else:
                ma, ea = sig_exp(Fraction(av[k]), EMIN[a_fmt])
                mb, eb = sig_exp(Fraction(bv[k]), EMIN[b_fmt])
                terms.append((ma * mb, ea + eb))
        terms.append(sig_exp(Fraction(cv), EMIN[acc]) if cv != 0 else (0, None))
        c_bits = ref_fuse(terms, p.frac_bits, ref_floor(p, acc), p.zero_exp_policy, out)
    return c_bits


def ref_dot_fp8_via_f16(av, bv, cv, acc, p):
    """Reference for H100 mma.sync fp8 (numerics: LOWER_FP8_VIA_F16, read from SASS): per 32-wide
    instruction, operands become f16 (exact), a fused f16 block over k%4 in {0,1} starting from
    C = +0, a chained block over k%4 in {2,3}, then C + P rounded once to nearest even (IEEE add)."""
    f16p = dataclasses.replace(p, lowering=None, in_fmt="f16")
    c_bits = f32(cv) if acc == "f32" else f16(cv)
    for k0 in range(0, len(av), 32):
        ks = range(k0, min(k0 + 32, len(av)))
        P = 0.0
        for half in ([k for k in ks if (k - k0) % 4 < 2], [k for k in ks if (k - k0) % 4 >= 2]):
            pb = ref_dot([av[k] for k in half], [bv[k] for k in half], P, "f16", "f16", acc, f16p)
            P = float(values([pb], acc)[0])
        C = float(values([c_bits], acc)[0])
        if math.isnan(C) or math.isnan(P) or (math.isinf(C) and math.isinf(P) and C != P):
            c_bits = NAN[acc]
        elif math.isinf(C) or math.isinf(P):
            c_bits = INF[acc] | (NEG[acc] if (C if math.isinf(C) else P) < 0 else 0)
        else:
            s = Fraction(C) + Fraction(P)
            if s == 0:       # IEEE: x + (-x) = +0; (-0) + (-0) = -0 cannot occur (P is never -0)
                c_bits = NEG[acc] if (C == 0 and P == 0 and math.copysign(1, C) < 0
                                      and math.copysign(1, P) < 0) else 0
            else:
                c_bits = ref_round(s, acc, rne=True)
    return c_bits


def ref_scaled_dot(av, bv, cv, sav, sbv, a_fmt, b_fmt, s_fmt, p):
    """Reference for mma_block_scaled.  sav / sbv: scale value per k (already expanded)."""
    K = len(av)
    c_bits = None
    for k0 in range(0, K, p.block):
        if c_bits is not None:
            cv = float(values([c_bits], "f32")[0])
        ks = range(k0, min(k0 + p.block, K))
        sp = ref_specials([(av[k], bv[k], sav[k], sbv[k]) for k in ks], cv, "f32")
        if sp is not None:
            c_bits = sp
            continue
        terms = []
        if p.group is None:
            # "add exp(sA)+exp(sB) to each product exponent" (scale significands multiply in)
            for k in ks:
                if av[k] == 0 or bv[k] == 0 or sav[k] == 0 or sbv[k] == 0:
                    terms.append((0, None))
                    continue
                ma, ea = sig_exp(Fraction(av[k]), EMIN[a_fmt])
                mb, eb = sig_exp(Fraction(bv[k]), EMIN[b_fmt])
                msa, esa = sig_exp(Fraction(sav[k]), EMIN[s_fmt])
                msb, esb = sig_exp(Fraction(sbv[k]), EMIN[s_fmt])
                terms.append((ma * mb * msa * msb, ea + eb + esa + esb))
        else:
            # groups summed exactly, then one term per group scaled by sA * sB.  A group takes part
            # in E when a product is non-zero (group_exp_policy 'products', MMA-Sim) or when its
            # sum is non-zero ('sum')
            for g0 in range(ks.start, ks.stop, p.group):
                gk = range(g0, g0 + p.group)
                gsum = sum(Fraction(av[k]) * Fraction(bv[k]) for k in gk)
                live = (any(av[k] != 0 and bv[k] != 0 for k in gk) if p.group_exp_policy == "products"
                        else gsum != 0)
                if not live or sav[g0] == 0 or sbv[g0] == 0:
                    terms.append((0, None))
                    continue
                msa, esa = sig_exp(Fraction(sav[g0]), EMIN[s_fmt])
                msb, esb = sig_exp(Fraction(sbv[g0]), EMIN[s_fmt])
                terms.append((gsum * msa * msb, esa + esb))
        terms.append(sig_exp(Fraction(cv), EMIN["f32"]) if cv != 0 else (0, None))
        c_bits = ref_fuse(terms, p.frac_bits, ref_floor(p, "f32"), p.zero_exp_policy, "f32")
    return c_bits


# ---- random case generation ------------------------------------------------------------------
FIELDS = {"f16": (5, 10), "bf16": (8, 7), "tf32": (8, 10), "f32": (8, 23), "e4m3": (4, 3),
          "e5m2": (5, 2), "e3m2": (3, 2), "e2m3": (2, 3), "e2m1": (2, 1)}


def gen_codes(rng, fmt, shape, mode, lo=None, width=None):
    """Random codes.  mode 'uniform': the whole code space, most specials replaced; 'band':
    exponent field in [lo, lo + width], random sign and mantissa, 10% zeros."""
    eb, mb = FIELDS[fmt]
    shift = 13 if fmt == "tf32" else 0
    n_codes = 1 << WIDTH[fmt]
    if mode == "uniform":
        codes = rng.integers(0, n_codes, shape, dtype=np.int64)
    else:
        field = np.clip(lo + rng.integers(0, width + 1, shape), 0, (1 << eb) - 1)
        man = rng.integers(0, 1 << mb, shape)
        sign = rng.integers(0, 2, shape)
        codes = ((sign << (eb + mb)) | (field << mb) | man) << shift
        if shift:
            codes |= rng.integers(0, 1 << shift, shape)      # garbage in the ignored tf32 bits
        codes = np.where(rng.random(shape) < 0.1, 0, codes)
    v = values(codes, fmt)
    special = ~np.isfinite(v)
    keep = rng.random(shape) < 0.03
    if fmt == "e4m3":
        repl = rng.integers(0, 0x7F, shape)
    elif FIELDS[fmt][0] >= 5 or fmt in ("bf16", "tf32"):
        repl = rng.integers(0, 1 << (WIDTH[fmt] - 2), shape)  # positive, exponent field not max
    else:
        repl = codes
    return np.where(special & ~keep, repl, codes)


def gen_case(rng, a_fmt, b_fmt, acc, m, K, n, mode):
    eb_a = FIELDS[a_fmt][0]
    eb_b = FIELDS[b_fmt][0]
    top_a, top_b = (1 << eb_a) - 1, (1 << eb_b) - 1
    if mode == "uniform":
        A = gen_codes(rng, a_fmt, (m, K), "uniform")
        B = gen_codes(rng, b_fmt, (K, n), "uniform")
    else:
        if mode == "tiny":                                      # subnormal / smallest exponents
            la, lb, w = 0, 0, 3
        elif mode == "huge":                                    # products near the output's max
            w = 2
            emax_out = 127 if acc == "f32" else 15
            la = int(np.clip(emax_out // 2 - 2 + (1 << (eb_a - 1)) - 1, 0, max(top_a - 3, 0)))
            lb = int(np.clip(emax_out // 2 - 2 + (1 << (eb_b - 1)) - 1, 0, max(top_b - 3, 0)))
        else:
            w = int(rng.integers(0, 8))
            la = int(rng.integers(0, max(top_a - w, 1)))
            lb = int(rng.integers(0, max(top_b - w, 1)))
        A = gen_codes(rng, a_fmt, (m, K), "band", la, w)
        B = gen_codes(rng, b_fmt, (K, n), "band", lb, w)
        if mode == "cancel":                                   # second half negates the first
            h = K // 2
            sign_a = 1 << (WIDTH[a_fmt] - 1)
            A[:, h:2 * h] = A[:, :h] ^ sign_a
            B[h:2 * h, :] = B[:h, :]
            A[:, int(rng.integers(0, K))] = gen_codes(rng, a_fmt, (m,), "uniform")
    # C: zeros of both signs, values near the product scale, or anything finite
    pa = values(A, a_fmt)
    pb = values(B, b_fmt)
    with np.errstate(all="ignore"):
        scale = np.nanmax(np.abs(pa), initial=1.0) * np.nanmax(np.abs(pb), initial=1.0)
    scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    cdt = np.float32 if acc == "f32" else np.float16
    with np.errstate(over="ignore"):
        near = (rng.standard_normal((m, n)) * scale * 2.0 ** rng.integers(-30, 4, (m, n))).astype(cdt)
    cont = np.uint32 if acc == "f32" else np.uint16
    anyc = gen_codes(rng, acc, (m, n), "uniform")
    choice = rng.integers(0, 4, (m, n))
    C = np.where(choice == 0, np.where(rng.random((m, n)) < 0.5, 0, NEG[acc]),
                 np.where(choice == 3, anyc, near.view(cont).astype(np.int64)))
    return A, B, C


MODES = ("uniform", "band", "band", "tiny", "huge", "cancel", "band", "uniform")

FLOAT_CONFIGS = [
    # (id, a_fmt, b_fmt, acc, params, K, cases)
    ("h100-f16-f32", "f16", "f16", "f32", H100_F16, 16, 2048),
    ("h100-f16-f32-k32", "f16", "f16", "f32", H100_F16, 32, 1024),
    ("h100-f16-f16", "f16", "f16", "f16", H100_F16, 16, 2048),
    ("h100-bf16-f32", "bf16", "bf16", "f32", H100_BF16, 16, 2048),
    ("h100-tf32-f32-k16", "tf32", "tf32", "f32", H100_TF32, 16, 2048),
    ("h100-e4m3-f32", "e4m3", "e4m3", "f32", H100_FP8, 32, 2048),
    ("h100-e5m2-f16", "e5m2", "e5m2", "f16", tc_params("sm_90a", "wgmma", "e5m2"), 32, 1024),
    ("b200-bf16-f32-k32", "bf16", "bf16", "f32", tc_params("sm_100a", "tcgen05", "bf16"), 32, 1024),
    ("b200-e4m3xe5m2-f32", "e4m3", "e5m2", "f32", B200_FP8, 32, 2048),
    ("b200-e5m2-f32-k64", "e5m2", "e5m2", "f32", B200_FP8, 64, 1024),
    ("b200-e3m2xe2m3-f32", "e3m2", "e2m3", "f32", tc_params("sm_100a", "tcgen05", "e3m2"), 32, 1024),
    ("b200-e2m1-f32", "e2m1", "e2m1", "f32", tc_params("sm_100a", "tcgen05", "e2m1"), 32, 1024),
    # policy variants (open questions 1 and 2)
    ("min-bf16", "bf16", "bf16", "f32", dataclasses.replace(H100_BF16, zero_exp_policy="min", e_floor=None), 16, 1024),
    ("min-f16-f16", "f16", "f16", "f16", dataclasses.replace(H100_F16, zero_exp_policy="min", e_floor=None), 16, 1024),
    ("nofloor-bf16", "bf16", "bf16", "f32", dataclasses.replace(H100_BF16, e_floor=None), 16, 1024),
    ("min-floor-e4m3", "e4m3", "e4m3", "f32", dataclasses.replace(H100_FP8, zero_exp_policy="min"), 32, 512),
    # H100 mma.sync fp8: the ptxas lowering onto f16 HMMAs (LOWER_FP8_VIA_F16)
    ("h100-mma.sync-e4m3-f32", "e4m3", "e4m3", "f32", H100_MMA_FP8, 32, 1024),
    ("h100-mma.sync-e4m3xe5m2-f32-k64", "e4m3", "e5m2", "f32", H100_MMA_FP8, 64, 512),
    ("h100-mma.sync-e5m2-f16", "e5m2", "e5m2", "f16", H100_MMA_FP8, 32, 1024),
]


@pytest.mark.parametrize("cfg", FLOAT_CONFIGS, ids=[c[0] for c in FLOAT_CONFIGS])
def test_random_against_fraction_reference(cfg):
    name, a_fmt, b_fmt, acc, p, K, cases = cfg
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    ref = ref_dot_fp8_via_f16 if p.lowering else None
    m = n = 16
    done = 0
    chunk = 0
    while done < cases:
        mode = MODES[chunk % len(MODES)]
        chunk += 1
        A, B, C = gen_case(rng, a_fmt, b_fmt, acc, m, K, n, mode)
        D = mma_float(A, B, C, a_fmt, b_fmt, acc, p)
        av, bv, cv = values(A, a_fmt), values(B, b_fmt), values(C, acc)
        for i in range(m):
            arow = av[i].tolist()
            for j in range(n):
                if ref is not None:
                    want = ref(arow, bv[:, j].tolist(), float(cv[i, j]), acc, p)
                else:
                    want = ref_dot(arow, bv[:, j].tolist(), float(cv[i, j]), a_fmt, b_fmt, acc, p)
                assert int(D[i, j]) == want, (
                    f"{name} mode={mode} i={i} j={j}: got {int(D[i, j]):#x} want {want:#x}\n"
                    f"A={A[i].tolist()}\nB={B[:, j].tolist()}\nC={int(C[i, j]):#x}")
        done += m * n


SCALED_CONFIGS = [
    # (id, a_fmt, b_fmt, scale_fmt, scale_block, params, K, cases)
    ("mxf8-e4m3", "e4m3", "e4m3", "ue8m0", 32, B200_MX8, 64, 1024),
    ("mxf8-e5m2xe2m1", "e5m2", "e2m1", "ue8m0", 32, B200_MX8, 32, 512),
    ("mxf4-ue8m0", "e2m1", "e2m1", "ue8m0", 32, B200_MXF4, 64, 1024),
    ("nvf4-ue4m3", "e2m1", "e2m1", "ue4m3", 16, B200_NVF4, 128, 1024),
    ("nvf4-ue8m0-4x", "e2m1", "e2m1", "ue8m0", 16, B200_NVF4, 64, 512),
    ("mxf4-min", "e2m1", "e2m1", "ue8m0", 32, dataclasses.replace(B200_MXF4, zero_exp_policy="min", e_floor=None), 64, 512),
]


def gen_scales(rng, fmt, shape, mode):
    if fmt == "ue8m0":
        if mode == "extreme":
            c = np.where(rng.random(shape) < 0.5, rng.integers(0, 8, shape), rng.integers(247, 255, shape))
        else:
            c = rng.integers(110, 145, shape)
        return np.where(rng.random(shape) < 0.02, 0xFF, c)
    c = rng.integers(0, 256, shape) if mode == "extreme" else rng.integers(0x20, 0x50, shape)
    c = np.where((c & 0x7F) == 0x7F, c ^ 1, c)
    return np.where(rng.random(shape) < 0.02, 0x7F, c)


@pytest.mark.parametrize("cfg", SCALED_CONFIGS, ids=[c[0] for c in SCALED_CONFIGS])
def test_block_scaled_against_fraction_reference(cfg):
    name, a_fmt, b_fmt, s_fmt, sblk, p, K, cases = cfg
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    m = n = 8
    done = chunk = 0
    while done < cases:
        mode = MODES[chunk % len(MODES)]
        smode = "extreme" if chunk % 3 == 2 else "normal"
        chunk += 1
        A, B, C = gen_case(rng, a_fmt, b_fmt, "f32", m, K, n, mode)
        SA = gen_scales(rng, s_fmt, (m, K // sblk), smode)
        SB = gen_scales(rng, s_fmt, (K // sblk, n), smode)
        D = mma_block_scaled(A, B, C, SA, SB, a_fmt, b_fmt, s_fmt, sblk, p)
        av, bv, cv = values(A, a_fmt), values(B, b_fmt), values(C, "f32")
        sav = np.repeat(values(SA, s_fmt), sblk, axis=1)
        sbv = np.repeat(values(SB, s_fmt), sblk, axis=0)
        for i in range(m):
            for j in range(n):
                want = ref_scaled_dot(av[i].tolist(), bv[:, j].tolist(), float(cv[i, j]),
                                      sav[i].tolist(), sbv[:, j].tolist(), a_fmt, b_fmt, s_fmt, p)
                assert int(D[i, j]) == want, (
                    f"{name} mode={mode}/{smode} i={i} j={j}: got {int(D[i, j]):#x} want {want:#x}")
        done += m * n


def test_reference_agrees_with_hand_vectors():
    # the reference itself reproduces a few hand-derived results
    assert ref_dot([1.0] + [2.0 ** -13] * 15, [1.0] + [2.0 ** -13] * 15, 0.0, "f16", "f16", "f32",
                   H100_F16) == 0x3F800000
    assert ref_dot([2.0 ** -126] * 8, [2.0 ** -26] * 8, 0.0, "bf16", "bf16", "f32", H100_BF16) == 1
    assert ref_dot([1, 2.0 ** -10, 2.0 ** -11], [1, 1, 1], 0.0, "f16", "f16", "f16", H100_F16) == 0x3C02


# ================================================================================================
# 3. Properties
# ================================================================================================
def exact_round_numpy(x, acc):
    """Oracle independent of both implementations: x is an exact float64; f16 -> numpy RNE cast;
    f32 -> numpy RNE cast stepped back toward zero when it rounded away (i.e. RZ)."""
    if acc == "f16":
        return int(np.float16(x).view(np.uint16))
    f = np.float32(x)
    if abs(float(f)) > abs(x):
        f = np.nextafter(f, np.float32(0))
    if x == 0:
        f = np.float32(0.0)
    return int(f.view(np.uint32))


WINDOW_FMTS = {"f16": (H100_F16, 15, 10), "bf16": (H100_BF16, 127, 7),
               "tf32": (H100_TF32, 127, 10), "e5m2": (B200_FP8, 15, 2)}


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(WINDOW_FMTS)), st.sampled_from(["f32", "f16"]), st.data())
def test_exact_sum_rounded_when_terms_fit_the_window(fmt, acc, data):
    """If every product and C is exact within F bits of E, the model is the exact sum rounded once
    (numerics.md steps 4-5 lose nothing)."""
    p, bias, mb = WINDOW_FMTS[fmt]
    F = p.frac_bits
    K = p.block
    E0 = data.draw(st.integers(-12, 12), label="E0")
    # a product's lowest bit is at e_p - 2*mb; it must be >= E - F, i.e. e_p >= E0 - (F - 2*mb)
    slack = min(F - 2 * mb, 6)
    a_vals, b_vals = [], []
    for _ in range(K):
        if data.draw(st.integers(0, 9)) == 0:
            a_vals.append(0.0)
            b_vals.append(1.0)
            continue
        ep = data.draw(st.integers(E0 - slack, E0))
        ea = data.draw(st.integers(max(ep - 7, -bias + 1), min(ep + 7, 7)))
        eb = ep - ea
        ma = data.draw(st.integers(0, (1 << mb) - 1))
        mbb = data.draw(st.integers(0, (1 << mb) - 1))
        sa = data.draw(st.sampled_from([1, -1]))
        a_vals.append(sa * (1 + ma / 2 ** mb) * 2.0 ** ea)
        b_vals.append((1 + mbb / 2 ** mb) * 2.0 ** eb)
    # C: its lowest bit (ec - c_man) must be >= E - F, and ec <= E0 so that E <= E0
    c_man = 23 if acc == "f32" else 10
    if data.draw(st.booleans()):
        cv = 0.0
    else:
        ec = data.draw(st.integers(E0 - max(F - c_man - 2, 0), E0))          # E stays E0
        cm = data.draw(st.integers(0, (1 << c_man) - 1))
        cv = data.draw(st.sampled_from([1, -1])) * (1 + cm / 2 ** c_man) * 2.0 ** ec
        if acc == "f16" and not (2.0 ** -14 <= abs(cv) <= 65504):
            cv = 0.0
    A = enc(a_vals, fmt)[None, :]
    B = enc(b_vals, fmt)[:, None]
    C = np.array([[f32(cv) if acc == "f32" else f16(cv)]])
    exact = sum(Fraction(x) * Fraction(y) for x, y in zip(a_vals, b_vals)) + Fraction(cv)
    x = float(exact)
    assert Fraction(x) == exact             # the exact sum fits float64
    got = int(mma_float(A, B, C, fmt, fmt, acc, p)[0, 0])
    assert got == exact_round_numpy(x, acc)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["f16", "bf16", "e4m3"]))
def test_chained_blocks_equal_chained_calls(seed, fmt):
    """numerics.md step 6: K = 3 blocks in one call == three calls with D fed back as C."""
    rng = np.random.default_rng(seed)
    p = {"f16": H100_F16, "bf16": B200_F16, "e4m3": H100_FP8}[fmt]
    if fmt == "bf16":
        p = tc_params("sm_100a", "tcgen05", "bf16")
    K = 3 * p.block
    A, B, C = gen_case(rng, fmt, fmt, "f32", 4, K, 4, MODES[seed % len(MODES)])
    whole = mma_float(A, B, C, fmt, fmt, "f32", p)
    c = C
    for k0 in range(0, K, p.block):
        c = mma_float(A[:, k0:k0 + p.block], B[k0:k0 + p.block], c, fmt, fmt, "f32", p)
    assert np.array_equal(whole, c)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_unit_scales_reduce_to_unscaled(seed):
    """mxf8f6f4 with all scales 2^0 (ue8m0 127) equals kind::f8f6f4; mxf4 with unit scales
    equals the exact-group model, which with F = 35 and |values| <= 36 loses nothing except
    the C alignment, so it matches the reference."""
    rng = np.random.default_rng(seed)
    A, B, C = gen_case(rng, "e4m3", "e4m3", "f32", 4, 64, 4, MODES[seed % len(MODES)])
    ones_a, ones_b = np.full((4, 2), 127), np.full((2, 4), 127)
    assert np.array_equal(mma_block_scaled(A, B, C, ones_a, ones_b, "e4m3", "e4m3", "ue8m0", 32, B200_MX8),
                          mma_float(A, B, C, "e4m3", "e4m3", "f32", B200_FP8))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["f16", "bf16", "tf32", "e4m3", "e2m1"]))
def test_commutes_with_negation_and_row_swap(seed, fmt):
    """Symmetries of the model: negating A and C negates D (RZ and RNE are symmetric; a zero
    result is +0 either way); swapping A's rows swaps D's rows."""
    rng = np.random.default_rng(seed)
    p = tc_params("sm_100a" if fmt == "e2m1" else "sm_90a", "tcgen05" if fmt == "e2m1" else "wgmma", fmt)
    A, B, C = gen_case(rng, fmt, fmt, "f32", 4, p.block, 4, MODES[seed % len(MODES)])
    D = mma_float(A, B, C, fmt, fmt, "f32", p)
    sign = 1 << (WIDTH[fmt] - 1)
    Dn = mma_float(A ^ sign, B, C ^ 0x80000000, fmt, fmt, "f32", p).astype(np.int64)
    Di = D.astype(np.int64)
    nan = Di == 0x7FFFFFFF
    zero = Di == 0
    assert np.array_equal(Dn[nan], Di[nan])
    assert not np.any(Di == 0x80000000) and not np.any(Dn == 0x80000000)   # never -0
    assert np.all(Dn[zero] == 0)
    rest = ~nan & ~zero
    assert np.array_equal(Dn[rest], Di[rest] ^ 0x80000000)
    assert np.array_equal(mma_float(A[::-1], B, C[::-1], fmt, fmt, "f32", p), D[::-1])


# ================================================================================================
# Table, API and errors
# ================================================================================================
class TestParams:
    @pytest.mark.parametrize("args,block,F,trunc,group", [
        (("sm_90a", "mma.sync", "f16"), 16, 25, None, None),
        (("sm_90a", "mma.sync", "bf16"), 16, 25, None, None),
        (("sm_90a", "wgmma", "f16"), 16, 25, None, None),
        (("sm_90a", "wgmma", "tf32"), 8, 25, None, None),
        (("sm_90a", "mma.sync", "tf32"), 8, 25, None, None),
        (("sm_90a", "wgmma", "e4m3"), 32, 13, 13, None),
        (("sm_90a", "wgmma", "e5m2"), 32, 13, 13, None),
        (("sm_90a", "mma.sync", "e4m3"), 16, 25, None, None),
        (("sm_100a", "tcgen05", "f16"), 16, 25, None, None),
        (("sm_100a", "tcgen05", "bf16", "f16"), 16, 25, None, None),
        (("sm_100a", "mma.sync", "f16"), 16, 25, None, None),
        (("sm_100a", "tcgen05", "tf32"), 8, 25, None, None),
        (("sm_100a", "tcgen05", "e4m3"), 32, 25, None, None),
        (("sm_100a", "tcgen05", "e5m2", "f8f6f4"), 32, 25, None, None),
        (("sm_100a", "tcgen05", "e4m3", "mxf8f6f4"), 32, 25, None, None),
        (("sm_100a", "tcgen05", "e2m1", "mxf4"), 64, 35, None, 16),
        (("sm_100a", "tcgen05", "e2m1", "mxf4nvf4"), 64, 35, None, 16),
        (("sm_100a", "tcgen05", "s8", "i8"), 32, 0, None, None),
    ])
    def test_table_rows(self, args, block, F, trunc, group):
        p = tc_params(*args)
        assert (p.block, p.frac_bits, p.out_trunc_frac, p.group) == (block, F, trunc, group)
        assert p.arch == args[0] and p.path == args[1] and p.in_fmt == args[2]
        # documented defaults of the open-question switches; the group-scaled kinds use MMA-Sim's
        # B200 floor -139 (tests/golden/mmasim_oracle/README.md)
        assert p.zero_exp_policy == "drop" and p.e_floor == (-139 if group else -133)
        assert p.group_exp_policy == "products"
        fp8_mma_sync_h100 = args[:2] == ("sm_90a", "mma.sync") and args[2] in ("e4m3", "e5m2")
        assert p.lowering == (tc.LOWER_FP8_VIA_F16 if fp8_mma_sync_h100 else None)

    @pytest.mark.parametrize("args", [
        ("sm_80", "mma.sync", "f16"), ("sm_90a", "tcgen05", "f16"), ("sm_100a", "wgmma", "f16"),
        ("sm_90a", "wgmma", "e2m1"), ("sm_100a", "tcgen05", "f16", "mxf4"),
        ("sm_100a", "tcgen05", "e4m3", "mxf4"), ("sm_90a", "wgmma", "f16", "tf32"),
        ("sm_90a", "wgmma", "f64"), ("sm_100a", "tcgen05", "e4m3", "bogus"),
    ])
    def test_unknown_raises(self, args):
        with pytest.raises(ValueError):
            tc_params(*args)

    def test_provisional(self):
        assert provisional_reason(tc_params("sm_90a", "wgmma", "e4m3")) is None
        assert provisional_reason(tc_params("sm_100a", "tcgen05", "f16")) is None
        assert provisional_reason(B200_MXF4) is None
        assert provisional_reason(tc_params("sm_90a", "mma.sync", "e4m3")) is None   # measured
        assert provisional_reason(tc_params("sm_100a", "mma.sync", "e4m3")) is not None
        assert "Q4" in provisional_reason(tc_params("sm_100a", "tcgen05", "e2m1"))
        assert provisional_reason(tc_params("sm_100a", "mma.sync", "tf32")) is not None

    def test_group_exp_policy_validation(self):
        with pytest.raises(ValueError):
            dataclasses.replace(B200_MXF4, group_exp_policy="bogus")

    def test_params_validation(self):
        with pytest.raises(ValueError):
            dataclasses.replace(H100_F16, zero_exp_policy="bogus")
        with pytest.raises(ValueError):
            dataclasses.replace(B200_MXF4, group=24)
        with pytest.raises(ValueError):
            TensorCoreParams("sm_90a", "wgmma", "f16", 0, 25)
        assert effective_e_floor(H100_F16, "f32") == -133
        assert effective_e_floor(dataclasses.replace(H100_F16, e_floor=None), "f16") is None

    def test_m16n8k8_is_one_block(self):
        # H100 m16n8k8 f16: the block is the whole instruction K = 8; block 16 of the table
        # never spans two instructions, so K = 8 fuses once.
        rng = np.random.default_rng(5)
        A, B, C = gen_case(rng, "f16", "f16", "f32", 16, 8, 8, "band")
        d16 = mma_float(A, B, C, "f16", "f16", "f32", H100_F16)
        d8 = mma_float(A, B, C, "f16", "f16", "f32", dataclasses.replace(H100_F16, block=8))
        assert np.array_equal(d16, d8)

    def test_api_errors(self):
        A = np.zeros((2, 16), np.int64)
        B = np.zeros((16, 3), np.int64)
        C = np.zeros((2, 3), np.uint32)
        with pytest.raises(ValueError):
            mma_float(A, B, C, "f16", "f16", "f64", H100_F16)            # bad accumulator
        with pytest.raises(ValueError):
            mma_float(A, B, C, "bf16", "f16", "f32", H100_F16)           # f16/bf16 types must match
        with pytest.raises(ValueError):
            mma_float(A, B[:8], C, "f16", "f16", "f32", H100_F16)        # shape mismatch
        with pytest.raises(ValueError):
            mma_float(A, B, C.astype(np.float32), "f16", "f16", "f32", H100_F16)   # values, not bits
        with pytest.raises(ValueError):
            mma_float(A[:, :0], B[:0], C, "f16", "f16", "f32", H100_F16)  # K = 0
        with pytest.raises(ValueError):
            mma_float(A, B, C, "e2m1", "e2m1", "f32", B200_MXF4)           # group kinds: scaled API
        with pytest.raises(ValueError):
            mma_float(A, B, C, "s8", "s8", "f32", tc_params("sm_90a", "wgmma", "s8"))
        A4 = np.zeros((2, 64), np.int64)
        B4 = np.zeros((64, 3), np.int64)
        with pytest.raises(ValueError):                                   # scale shape
            mma_block_scaled(A4, B4, C, np.zeros((2, 1)), np.zeros((2, 3)), "e2m1", "e2m1", "ue8m0", 32, B200_MXF4)
        with pytest.raises(ValueError):                                   # scale block splits a group
            mma_block_scaled(A4, B4, C, np.zeros((2, 8), np.int64), np.zeros((8, 3), np.int64),
                             "e2m1", "e2m1", "ue8m0", 8, B200_MXF4)
        with pytest.raises(ValueError):
            mma_block_scaled(A4, B4, C, np.zeros((2, 2), np.int64), np.zeros((2, 3), np.int64),
                             "e2m1", "e2m1", "e8m0", 32, B200_MXF4)

    def test_output_dtypes(self):
        A = np.zeros((2, 16), np.int64)
        B = np.zeros((16, 3), np.int64)
        assert mma_float(A, B, np.zeros((2, 3), np.uint32), "f16", "f16", "f32", H100_F16).dtype == np.uint32
        assert mma_float(A, B, np.zeros((2, 3), np.uint16), "f16", "f16", "f16", H100_F16).dtype == np.uint16


# ================================================================================================
# Speed (generous bounds: the suite may share two cores with other jobs)
# ================================================================================================
def _best_time(fn, reps):
    best = math.inf
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def test_speed_mma_sync_tile():
    rng = np.random.default_rng(0)
    A, B, C = gen_case(rng, "f16", "f16", "f32", 16, 16, 8, "band")
    t = _best_time(lambda: mma_float(A, B, C, "f16", "f16", "f32", H100_F16), 30)
    assert t < 2e-3, f"16x8x16 took {t * 1e3:.3f} ms"


def test_speed_block_scaled_tile():
    rng = np.random.default_rng(0)
    A = rng.integers(0, 16, (128, 64))
    B = rng.integers(0, 16, (64, 256))
    C = rng.integers(0, 1 << 30, (128, 256)).astype(np.uint32)
    SA = rng.integers(0x30, 0x40, (128, 4))
    SB = rng.integers(0x30, 0x40, (4, 256))
    t = _best_time(lambda: mma_block_scaled(A, B, C, SA, SB, "e2m1", "e2m1", "ue4m3", 16, B200_NVF4), 3)
    assert t < 0.25, f"128x256x64 mxf4nvf4 took {t * 1e3:.1f} ms"
