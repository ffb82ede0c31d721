"""Targeted vectors for the open questions of numerics.md that ``mma.sync`` can answer on an H100.

A test is one dot product: ``a`` (K values of the input format), ``b`` (K values), ``c`` (one accumulator
value) -> one output element.  Values are exact Python floats (or :class:`Code` for raw bit patterns) and
are padded with +0 up to K.  :func:`pack` places 8 tests per probe case: test j of a case is row j of A,
column j of B and C[j][j]; rows 8-15 repeat rows 0-7 (so D[j+8][j] must equal D[j][j]); every other C entry
is +0.  All 128 outputs of a targeted case are compared with the model like any other case; the named
outputs are (case, j, j).

Question tags: ``Q1`` floor on E, ``Q2`` exponent of a zero operand / zero C, ``Q3`` sign of an exact or
underflowed zero, ``OVF`` round-toward-zero overflow (Inf or max-finite), ``NAN`` NaN / Inf encodings,
``TRUNC`` alignment truncation width and direction, ``TF32`` tf32 operand conversion, ``INT`` s8/u8 wrap
versus saturate.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mma_inputs import Fmt
from .mma_ptx import Pair

TESTS_PER_CASE = 8


class Code(int):
    """A raw bit pattern of the operand's (narrow) format, instead of a value."""


@dataclass(frozen=True)
class Test:
    name: str
    question: str
    a: tuple
    b: tuple
    c: object
    note: str = ""


def _enc(fmt: str, x) -> int:
    if isinstance(x, Code):
        return int(x)
    f = Fmt(fmt)
    code = int(f.from_float(np.float64(x)))
    back = _val(fmt, code)
    if not (back == x or (np.isnan(back) and np.isnan(x))) or (x == 0 and np.signbit(back) != np.signbit(x)):
        raise ValueError(f"{x!r} is not exactly representable in {fmt}")
    return code


def _val(fmt: str, code: int) -> float:
    f = Fmt(fmt)
    sign = (code >> (f.eb + f.mb)) & 1
    field = (code >> f.mb) & f.top
    man = code & ((1 << f.mb) - 1)
    if field == f.top:
        v = np.inf if man == 0 else np.nan
    elif field == 0:
        v = np.ldexp(float(man), f.emin - f.mb)
    else:
        v = np.ldexp(float(man | (1 << f.mb)), field - f.bias - f.mb)
    return -v if sign else v


def _float_tests(pair: Pair) -> list:
    ab, acc, K = pair.ab, pair.acc, pair.K
    big = ab in ("bf16", "tf32")
    f16out = acc == "f16"
    T = []
    t = T.append
    p = lambda e: 2.0 ** e   # noqa: E731
    emax_in = 127 if big else 15
    # ---- Q2: zero operands beside a huge partner; zero C
    t(Test("zero_times_huge_a", "Q2", (0.0, p(-14)), (p(emax_in), p(-14)), 0.0,
           "0 * 2^emax beside 2^-28: a zero operand with exponent emin would raise E to emin+emax"))
    t(Test("huge_times_zero_b", "Q2", (p(emax_in), p(-14)), (0.0, p(-14)), 0.0, "zero in B instead of A"))
    t(Test("negzero_times_huge", "Q2", (-0.0, p(-14), p(-14)), (p(emax_in), p(-14), p(-13)), 0.0,
           "-0 * 2^emax beside 2^-28 + 2^-27"))
    mb_in = Fmt(ab).mb
    t(Test("zero_huge_partial", "Q2", (0.0, 1.0 + p(-mb_in)), (p(emax_in), p(-20)), 0.0,
           "(1+ulp)*2^-20 beside 0*2^emax: partly truncated if E = emin+emax"))
    t(Test("zero_huge_c_small", "Q2", (0.0,), (p(emax_in),), p(-22 if f16out else -30),
           "small C beside 0*2^emax"))
    t(Test("zero_zero_c_small", "Q2", (0.0,), (0.0,), p(-24 if f16out else -40), "0*0 and a small C"))
    if big:
        t(Test("zero_huge_tiny_bf", "Q2", (0.0, p(-20)), (p(127), p(-20)), 0.0, "0*2^127 beside 2^-40"))
        t(Test("czero_tiny_products", "Q2", (p(-70), -p(-70)), (p(-70), p(-85)), 0.0,
               "products 2^-140, -2^-155, C=+0: a zero C/zero padding with exponent -126 truncates 2^-155"))
        t(Test("czero_tiny_products_negc", "Q2", (p(-70), -p(-70)), (p(-70), p(-85)), -0.0, "as above, C=-0"))
        # ---- Q1: floor on E (only reachable with f32-range inputs)
        t(Test("efloor_160", "Q1", (p(-70), -p(-80)), (p(-70), p(-80)), 0.0,
               "products 2^-140, -2^-160: E=-140 keeps 2^-160 (RZ -> 2^-140 - 2^-149); E floored at -133 drops it"))
        t(Test("efloor_150", "Q1", (p(-75), p(-75)), (p(-75), p(-76)), 0.0, "2^-150 + 2^-151 (below f32 grid)"))
        t(Test("efloor_sub_sum", "Q1", (p(-70), p(-70), -p(-81)), (p(-70), p(-80), p(-81)), 0.0,
               "2^-140 + 2^-150 - 2^-162"))
        t(Test("efloor_many_tiny", "Q1", tuple([p(-70)] + [-p(-80)] * (K - 1)), tuple([p(-70)] + [p(-79)] * (K - 1)),
               0.0, "2^-140 - (K-1) x 2^-159"))
    if f16out:
        t(Test("f16_floor_tie_plus", "Q1", (p(-13), p(-24)), (p(-12), p(-24)), 0.0,
               "f16 out: 2^-25 + 2^-48: E floored at -21 (res 2^-46) drops 2^-48 -> tie -> +0; no floor -> 2^-24"))
        t(Test("f16_floor_tie_minus", "Q1", (-p(-13), -p(-24)), (p(-12), p(-24)), 0.0, "negated"))
        # 2^-25 (a tie at the f16 subnormal grid) + 2^x: x is kept (-> 2^-24) iff x >= E - 25, so the
        # smallest kept x gives the floor on E for f16 output (-21 -> x = -46 kept, -47 dropped)
        for x in (-44, -45, -46, -47):
            xa = max(x // 2, -24)
            t(Test(f"f16_floor_probe_{-x}", "Q1", (p(-13), p(xa)), (p(-12), p(x - xa)), 0.0,
                   f"f16 out: 2^-25 + 2^{x}"))
            t(Test(f"f16_floor_probe_{-x}_neg", "Q1", (-p(-13), -p(xa)), (p(-12), p(x - xa)), -0.0,
                   f"f16 out: -(2^-25 + 2^{x}), C = -0"))
    # ---- Q3: signs of zero
    ones = tuple([1.0] * K)
    t(Test("zero_pos_products_cneg", "Q3", tuple([0.0] * K), ones, -0.0, "all products +0, C = -0"))
    t(Test("zero_neg_products_cneg", "Q3", tuple([-0.0] * K), ones, -0.0, "all products -0, C = -0"))
    t(Test("zero_neg_products_cpos", "Q3", tuple([-0.0] * K), ones, 0.0, "all products -0, C = +0"))
    t(Test("zero_pos_products_cpos", "Q3", tuple([0.0] * K), ones, 0.0, "all products +0, C = +0"))
    t(Test("zero_mixed_products_cneg", "Q3", tuple([-0.0, 0.0] * (K // 2)), ones, -0.0, "-0,+0,... C=-0"))
    t(Test("cancel_pair_cneg", "Q3", (1.0, -1.0), (1.0, 1.0), -0.0, "1 - 1, C = -0"))
    t(Test("cancel_pair_cpos", "Q3", (1.0, -1.0), (1.0, 1.0), 0.0, "1 - 1, C = +0"))
    t(Test("cancel_c", "Q3", (1.0,), (1.0,), -1.0, "1 + C(-1)"))
    t(Test("cancel_c_neg", "Q3", (-1.0,), (1.0,), 1.0, "-1 + C(1)"))
    t(Test("cancel_c_neg_big", "Q3", (-2.0,), (8.0,), 16.0, "-16 + C(16)"))
    if big:
        t(Test("underflow_neg", "Q3", (-p(-76),), (p(-76),), 0.0,
               "-2^-152: above every truncation window, below the f32 grid: RZ to a zero of which sign?"))
        t(Test("underflow_neg_cneg", "Q3", (-p(-76),), (p(-76),), -0.0, "-2^-152, C = -0"))
        t(Test("underflow_pos_cneg", "Q3", (p(-76),), (p(-76),), -0.0, "+2^-152, C = -0"))
        t(Test("underflow_neg_far", "Q3", (-p(-100),), (p(-100),), 0.0, "-2^-200 (below the E-floor window)"))
    if f16out:
        t(Test("f16_underflow_neg", "Q3", (-p(-20),), (p(-20),), 0.0, "f16 out: -2^-40 rounds to zero"))
        t(Test("f16_underflow_neg_cneg", "Q3", (-p(-20),), (p(-20),), -0.0, "f16 out: -2^-40, C=-0"))
    # ---- OVF: overflow of the f32 / f16 result
    if big:
        t(Test("ovf_pos", "OVF", (p(127),), (2.0,), 0.0, "2^128: RZ -> Inf (numerics.md) or max-finite (IEEE)"))
        t(Test("ovf_neg", "OVF", (p(127),), (-2.0,), 0.0, "-2^128"))
        t(Test("ovf_huge", "OVF", (1.5 * p(127),), (1.5 * p(127),), 0.0, "2.25 * 2^254"))
        t(Test("ovf_c_plus", "OVF", (p(104),), (1.0,), Code(0x7F7FFFFF),
               "max-finite + 2^104 = 2^128"))
        t(Test("ovf_c_minus", "OVF", (-p(104),), (1.0,), Code(0xFF7FFFFF), "-max - 2^104"))
        t(Test("ovf_c_below", "OVF", (p(103),), (1.0,), Code(0x7F7FFFFF),
               "max + 2^103 < 2^128: RZ -> max (control)"))
        t(Test("ovf_sum_k", "OVF", tuple([p(127)] * K), tuple([1.0] * K), 0.0, "K x 2^127"))
    elif not f16out:
        t(Test("max_c_plus_f16", "OVF", (65504.0,), (65504.0,), Code(0x7F7FFFFF),
               "max f32 + 65504^2: stays max (control; f16 products cannot overflow f32)"))
    if f16out:
        t(Test("f16_ovf_prod", "OVF", (256.0,), (256.0,), 0.0, "65536 -> Inf (RNE)"))
        t(Test("f16_ovf_tie", "OVF", (16.0,), (1.0,), 65504.0, "65504 + 16 = 65520: tie -> even = Inf"))
        t(Test("f16_ovf_below", "OVF", (8.0,), (1.0,), 65504.0, "65504 + 8 -> 65504"))
        t(Test("f16_ovf_neg", "OVF", (-256.0,), (256.0,), 0.0, "-65536 -> -Inf"))
    # ---- NAN / Inf encodings
    fi = Fmt(ab)
    nan_q = Code(fi.code(0, fi.top, 1 << (fi.mb - 1)))
    nan_neg_payload = Code(fi.code(1, fi.top, (1 << (fi.mb - 1)) | 1))
    nan_s = Code(fi.code(0, fi.top, 1))
    inf = float("inf")
    cnan = {"f32": 0x7FC00001, "f16": 0x7E01}[acc]
    cnan_neg = {"f32": 0xFFC00000, "f16": 0xFE00}[acc]
    t(Test("nan_a_quiet", "NAN", (nan_q,), (1.0,), 0.0, "quiet NaN in A"))
    t(Test("nan_a_neg_payload", "NAN", (nan_neg_payload,), (1.0,), 0.0, "negative NaN with payload"))
    t(Test("nan_a_signalling", "NAN", (nan_s,), (1.0,), 0.0, "signalling NaN"))
    t(Test("nan_c_payload", "NAN", (1.0,), (1.0,), Code(cnan), "C = NaN with payload"))
    t(Test("nan_c_neg", "NAN", (1.0,), (1.0,), Code(cnan_neg), "C = -NaN"))
    t(Test("inf_times_zero", "NAN", (inf,), (0.0,), 0.0, "Inf * 0"))
    t(Test("inf_minus_inf", "NAN", (inf, inf), (1.0, -1.0), 0.0, "+Inf + -Inf"))
    t(Test("c_inf_minus_prod_inf", "NAN", (inf,), (-1.0,), inf, "C=+Inf, product -Inf"))
    t(Test("inf_plus_finite", "NAN", (inf, 1.0), (1.0, 1.0), -3.0, "Inf + finite"))
    t(Test("neg_inf", "NAN", (inf,), (-1.0,), 0.0, "-Inf"))
    t(Test("c_inf_finite", "NAN", (1.0,), (1.0,), inf, "C = +Inf"))
    t(Test("c_neginf_finite", "NAN", (1.0,), (1.0,), -inf, "C = -Inf"))
    t(Test("inf_times_subnormal", "NAN", (inf,), (Code(fi.code(0, 0, 1)),), 0.0, "Inf * min subnormal"))
    # ---- TRUNC: width and direction of the alignment truncation
    nt = K - 1
    t(Test("trunc_many_small", "TRUNC", tuple([1.0] + [1.5 * p(-13)] * nt), tuple([1.0] + [p(-13)] * nt), 0.0,
           f"1 + {nt} x 1.5*2^-26: dropped at F=25, kept at F=26"))
    t(Test("trunc_neg_small", "TRUNC", (1.0, -1.5 * p(-13)), (1.0, p(-13)), 0.0,
           "1 - 1.5*2^-26: toward zero -> 1.0; toward -inf -> 1 - 2^-24"))
    t(Test("trunc_c_one_small", "TRUNC", tuple([p(-13)] * K), tuple([p(-13)] * K), 1.0, "C=1 + K x 2^-26"))
    t(Test("trunc_c_one_quarter", "TRUNC", tuple([p(-12)] * K), tuple([p(-12)] * K), 1.0, "C=1 + K x 2^-24"))
    t(Test("elead_2p25", "TRUNC", tuple([1.5] + [1.5 * p(-12)] * nt), tuple([1.5] + [p(-12)] * nt), 0.0,
           "2.25 + terms 1.5*2^-24: product significand in [2,4) -- E from ea+eb or from the leading bit"))
    t(Test("sub_times_big", "TRUNC", (Code(fi.code(0, 0, 1)), p(-13)), (p(emax_in), p(-13)),
           0.0, "min subnormal * 2^emax beside a small product: subnormal exponent taken as emin or as its "
                "leading bit"))
    t(Test("rne_vs_rz", "TRUNC", (1.0, 1.0), (1.0, 1.5 * p(-23) if not f16out else 1.5 * p(-10)), 0.0,
           "1 + 1.5 ulp: RZ -> 1 + ulp, RNE -> 1 + 2 ulp"))
    return T


#: tf32 tests that need the low 13 bits of the f32 container set (value, low bits)
TF32_LOW = [
    ("tf32_round_down", 0x3F801FFF, "1 + 0x1FFF*2^-23: truncated -> 1.0, rounded -> 1 + 2^-10"),
    ("tf32_half_even", 0x3F801000, "exact half of a tf32 ulp"),
    ("tf32_nan_low_payload", 0x7F800001, "f32 NaN whose payload is only in the low 13 bits (tf32 view: Inf)"),
    ("tf32_max_round", 0x7F7FFFFF, "f32 max: truncated -> tf32 max, rounded -> Inf"),
]


def _int_tests(pair: Pair) -> list:
    K = pair.K
    T = []
    t = T.append
    big = 2 ** 31
    if pair.ab == "s8":
        t(Test("int_wrap_pos", "INT", (1,), (1,), big - 1, "C = 2^31-1, +1"))
        t(Test("int_wrap_neg", "INT", (-1,), (1,), -big, "C = -2^31, -1"))
        t(Test("int_wrap_big", "INT", tuple([127] * K), tuple([127] * K), big - 1000, "C + 516128"))
        t(Test("int_wrap_bigneg", "INT", tuple([-128] * K), tuple([127] * K), -big + 5, "C - 520192"))
        t(Test("int_no_ovf", "INT", tuple([-128] * K), tuple([-128] * K), 0, "524288 (control)"))
        t(Test("int_c_max_zero", "INT", (0,), (0,), big - 1, "control"))
        t(Test("int_transient", "INT", (127, -127), (127, 127), big - 10,
               "C + 16129 - 16129: exact result in range; a step-by-step saturating sum would clamp"))
        t(Test("int_transient_neg", "INT", (-127, 127), (127, 127), -big + 10, "mirror"))
    else:
        t(Test("u8_wrap", "INT", tuple([255] * K), tuple([255] * K), big - 1, "C + 32*255^2"))
        t(Test("u8_wrap_neg_c", "INT", (1,), (1,), -1, "control"))
        t(Test("u8_wrap_min", "INT", (255,), (255,), big - 65025, "C + 65025 = 2^31: one past the int32 maximum"))
        t(Test("u8_wrap_min1", "INT", (255, 1), (255, 1), big - 65025, "C + 65026 = 2^31 + 1"))
    return T


def tests_for(pair: Pair) -> list:
    return _float_tests(pair) if pair.is_float else _int_tests(pair)


def pack(pair: Pair, tests=None):
    """(a, bt, c, names, where) for ``tests``: container codes of ceil(len/8) cases rounded up to a multiple of
    4, the test names, and ``where[i] = (case, j)`` (the test's output is D[case][j][j])."""
    tests = tests_for(pair) if tests is None else tests
    extra = TF32_LOW if pair.ab == "tf32" else []
    n_tests = len(tests) + len(extra)
    ncases = -(-n_tests // TESTS_PER_CASE)
    ncases += (-ncases) % 4
    K = pair.K
    a = np.zeros((ncases, 16, K), np.int64)
    bt = np.zeros((ncases, 8, K), np.int64)
    c = np.zeros((ncases, 16, 8), np.int64)
    names, where = [], []
    shift = 13 if pair.ab == "tf32" else 0

    def put(i, av, bv, cv):
        case, j = divmod(i, TESTS_PER_CASE)
        a[case, j, :len(av)] = av
        a[case, j + 8, :len(av)] = av
        bt[case, j, :len(bv)] = bv
        c[case, j, j] = cv
        c[case, j + 8, j] = cv
        where.append((case, j))

    for i, ts in enumerate(tests):
        if len(ts.a) > K or len(ts.b) > K:
            raise ValueError(f"{ts.name}: more than K={K} terms")
        if pair.is_float:
            av = [_enc(pair.ab, x) << shift for x in ts.a]
            bv = [_enc(pair.ab, x) << shift for x in ts.b]
            cv = _enc(pair.acc, ts.c)
        else:
            av = [x & 0xFF for x in ts.a]
            bv = [x & 0xFF for x in ts.b]
            cv = ts.c & 0xFFFFFFFF
        put(i, av, bv, cv)
        names.append(ts.name)
    for k, (name, bits, _note) in enumerate(extra):
        put(len(tests) + k, [bits], [_enc("tf32", 1.0) << 13], 0)
        names.append(name)
    return (a.astype(pair.a_dtype), bt.astype(pair.a_dtype), c.astype(pair.c_dtype), names,
            np.array(where, dtype=np.int64).reshape(-1, 2))


def describe(pair: Pair) -> dict:
    """name -> (question, note) for the README."""
    out = {ts.name: (ts.question, ts.note) for ts in tests_for(pair)}
    if pair.ab == "tf32":
        out.update({name: ("TF32", note) for name, _, note in TF32_LOW})
    return out
