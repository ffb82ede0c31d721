"""Targeted vectors for the wgmma numerics probe: the deciding dot products of numerics.md's open questions.

A test is one dot product (K values of A, K of B, one C) -> one output element.  f16/bf16/tf32 and s8/u8 reuse
the mma.sync vectors of :mod:`calib.probes.mma_targeted` (same formats and K): each mma.sync probe case
(16 x K A, 8 x K B, 16 x 8 C, eight tests on its diagonal) becomes the top-left corner of one m64n8 wgmma
instruction, the rest zero.  The fp8 combinations get their own vectors (:data:`FP8_TESTS`): F = 13 truncation,
the e8m13 cut of f32 results, zero operands, signed zeros, NaN/Inf, f16-output rounding and overflow.  Every
instruction runs twice, A from shared memory and A from registers.  The named output of a test is
``D[instruction][j][j]``; every other output of those instructions is compared too.
"""
from __future__ import annotations

import numpy as np

from . import mma_targeted as MT
from . import runner as R
from .mma_ptx import ALL_PAIRS
from .wgmma_ptx import COMBOS, FLAG_RS, FLAG_SCALE_D, Combo

Code = MT.Code
TESTS_PER_INSTR = 8

#: wgmma combination -> the mma.sync probe pair with the same formats and K
MMA_PAIR = {"f16_f16": "m16n8k16_f16_f16", "f16_f32": "m16n8k16_f32_f16", "bf16_f32": "m16n8k16_f32_bf16",
            "tf32_f32": "m16n8k8_f32_tf32", "s8_s8_s32": "m16n8k32_s32_s8", "s8_s8_s32_sat": "m16n8k32_s32_s8_sat",
            "u8_u8_s32": "m16n8k32_s32_u8"}

_NAN = object()      # placeholder: the format's NaN (e4m3 0x7F, e5m2 0x7F, f32 0x7FC00001, f16 0x7E01)
_INF = object()      # +Inf (e5m2 0x7C only)
_NINF = object()

#: (name, question, a values, b values, c value): values exact in the format or skipped for that combination
FP8_TESTS = [
    ("f13_keep", "TRUNC", (1, 2**-6), (1, 2**-7), 0.0),
    ("f13_drop", "TRUNC", (1, 2**-7), (1, 2**-7), 0.0),
    ("f13_drop_neg", "TRUNC", (1, -2**-7), (1, 2**-7), 0.0),
    ("many_below_window", "TRUNC", (1,) + (2**-7,) * 31, (1,) + (2**-7,) * 31, 0.0),
    ("out_cut_14", "CUT", (1.75, 1.75, 2**-6), (1, 1, 2**-7), 0.0),
    ("out_cut_13", "CUT", (1.75, 1.75, 2**-6), (1, 1, 2**-6), 0.0),
    ("c_in_window", "TRUNC", (1,), (1,), 2**-13),
    ("c_below_window", "TRUNC", (1,), (1,), 2**-14),
    ("c_alone_fine", "CUT", (), (), 1 + 2**-20),
    ("c_alone_f16", "CUT", (), (), 1 + 2**-10),
    ("zero_times_big", "Q2", (0.0, 2**-6), (256, 2**-6), 0.0),
    ("negzero_times_big", "Q2", (-0.0, 2**-6), (256, 2**-6), 0.0),
    ("big_times_zero", "Q2", (256, 2**-6), (0.0, 2**-6), 0.0),
    ("cancel_exact", "TRUNC", (1.5, -1.5, 2**-6), (1, 1, 2**-6), 0.0),
    ("cancel_below", "TRUNC", (1.5, -1.5, 2**-7), (1, 1, 2**-7), 0.0),
    ("cancel_cneg", "Q3", (-1, 1), (1, 1), -0.0),
    ("neg_zero_products_cneg", "Q3", (-0.0,) * 4, (1,) * 4, -0.0),
    ("cancel_to_negative", "TRUNC", (1, -1, -2**-6), (1, 1, 2**-7), 0.0),
    ("nan_a", "NAN", (_NAN,), (1,), 0.0),
    ("nan_b_neg", "NAN", (1,), (_NAN,), 0.0),
    ("nan_c", "NAN", (1,), (1,), _NAN),
    ("inf_times_zero", "NAN", (_INF,), (0.0,), 0.0),
    ("inf_minus_inf", "NAN", (_INF, _NINF), (1, 1), 0.0),
    ("inf_plus_c", "NAN", (_INF,), (1,), 1.0),
    ("f16_ovf", "OVF", (448,) * 32, (448,) * 32, 0.0),
    ("big_e5m2", "OVF", (57344, 57344), (57344, 57344), 0.0),
    ("rne_tie_even", "ROUND", (1, 2**-6), (1, 2**-5), 0.0),
    ("rne_tie_odd", "ROUND", (1, 2**-5, 2**-6), (1, 2**-5, 2**-5), 0.0),
    ("rne_above_tie", "ROUND", (1, 2**-6, 2**-6), (1, 2**-5, 2**-7), 0.0),
    ("f16_subnormal_result", "ROUND", (2**-9,), (2**-9,), 0.0),
    ("c_min_sub_plus_one", "TRUNC", (1,), (1,), 2**-24),
    ("c_max_f16_plus", "OVF", (16,), (2,), 65504.0),
]


def _fp8(fmt: str, x) -> int:
    from tcsim.numerics.lowp import to_float64

    if isinstance(x, Code):
        return int(x)
    if x is _NAN:
        return 0x7F
    if x is _INF or x is _NINF:
        if fmt != "e5m2":
            raise ValueError("no Inf in e4m3")
        return 0x7C | (0x80 if x is _NINF else 0)
    with np.errstate(invalid="ignore"):
        vals = to_float64(np.arange(256), fmt)
    hit = np.flatnonzero((vals == x) & (np.signbit(vals) == np.signbit(x)))
    if not len(hit):
        raise ValueError(f"{x!r} is not an {fmt} value")
    return int(hit[0])


def _acc(fmt: str, x) -> int:
    if x is _NAN:
        return 0x7FC00001 if fmt == "f32" else 0x7E01
    if x is _INF or x is _NINF:
        raise ValueError("no Inf C test")
    dt, it = (np.float32, np.uint32) if fmt == "f32" else (np.float16, np.uint16)
    v = dt(x)
    if float(v) != x or np.signbit(v) != np.signbit(x):
        raise ValueError(f"{x!r} is not an {fmt} value")
    return int(v.view(it))


def fp8_tests(combo: Combo) -> list:
    """(name, question, a codes, b codes, c code) of :data:`FP8_TESTS` representable in ``combo``'s formats."""
    return R.convert(FP8_TESTS, lambda v: _fp8(combo.a, v), lambda v: _fp8(combo.b, v), lambda v: _acc(combo.d, v))


def pack(combo: Combo):
    """Inputs (dict a (n,64,K), b (n,8,K), c (n,64,8), flags (n,), kind (n,)) of the targeted instructions
    (each twice: SS then RS), the test names and ``where[t] = (instruction, j)`` of the SS copy (the RS copy of
    the same test is instruction + n/2)."""
    K = combo.K
    names, where = [], []
    if combo.name in MMA_PAIR:
        pair = ALL_PAIRS[MMA_PAIR[combo.name]]
        a16, bt8, c16, tnames, twhere = MT.pack(pair)
        n = a16.shape[0]
        a = np.zeros((n, 64, K), combo.a_dtype)
        b = np.zeros((n, 8, K), combo.b_dtype)
        c = np.zeros((n, 64, 8), combo.c_dtype)
        a[:, :16], b[:, :8], c[:, :16] = a16, bt8, c16
        names, where = list(tnames), [tuple(int(v) for v in w) for w in twhere]
    elif combo.a in ("e4m3", "e5m2"):
        a, b, c, names, where = _diagonal(combo, [(name, av, bv, cv) for name, _q, av, bv, cv in fp8_tests(combo)])
    else:
        return None
    return _ss_and_rs(a, b, c), names, where


def _diagonal(combo: Combo, tests):
    return R.diagonal(tests, rows=64, K=combo.K, a_dtype=combo.a_dtype, b_dtype=combo.b_dtype,
                      c_dtype=combo.c_dtype, per_case=TESTS_PER_INSTR)


def _ss_and_rs(a, b, c) -> dict:
    """The probe's inputs: every instruction twice, A from shared memory, then A from registers."""
    n = len(a)
    flags = np.array([FLAG_SCALE_D] * n + [FLAG_SCALE_D | FLAG_RS] * n, np.uint32)
    return {"a": np.concatenate([a, a]), "b": np.concatenate([b, b]), "c": np.concatenate([c, c]), "flags": flags,
            "kind": np.zeros(2 * n, np.int64)}


def targeted_combos() -> list:
    return [name for name in COMBOS if pack(COMBOS[name]) is not None]


# ------------------------------------------------------------------------------------------------ floor on E
#: Vectors aimed at the floor on E of the f32-output bf16 / tf32 rows (numerics.md "Floor on E"; the mma.sync
#: record settled -133 for mma.sync, the wgmma targeted set above only tells a floor from none).  The window's
#: last kept bit is 2^(E - 25) with E = max(floor, the largest term's exponent), and a term below it is truncated.
#: ``efloor_x``: products 2^-140 and -2^-x (x = 155 .. 161), C = +0: E is the floor, -2^-x is kept iff
#: floor <= 25 - x, and the result is 0x1FF (2^-140 - 2^-x toward zero on the f32 grid) when kept, 0x200 when not.
#: ``etop_e``: products 2^-e and -2^-(e + 25) (e = 130 .. 136): kept iff floor <= -e (E is then -e).
#: ``efloor_many_158``: 2^-140 and (K - 1) products -2^-158.  Each vector also with both signs flipped.
FLOOR_COMBOS = ("bf16_f32", "tf32_f32")


def floor_tests(K: int) -> list:
    """(name, a values, b values, c value) of the floor vectors for instruction depth K (every value a power of two
    with a normal bf16 / tf32 exponent, so exact in both formats)."""
    out = []

    def both(name, a, b):
        out.append((name, a, b, 0.0))
        out.append((name + "_neg", tuple(-v for v in a), b, 0.0))

    for x in range(155, 162):
        both(f"efloor_{x}", (2.0**-70, -2.0**-79), (2.0**-70, 2.0**-(x - 79)))
    for e in range(130, 137):
        both(f"etop_{e}", (2.0**-(e // 2), -2.0**-79), (2.0**-(e - e // 2), 2.0**-(e + 25 - 79)))
    both("efloor_many_158", (2.0**-70,) + (-2.0**-79,) * (K - 1), (2.0**-70,) + (2.0**-79,) * (K - 1))
    return out


def _code(fmt: str, v: float) -> int:
    """bf16 / tf32 code (tf32: the f32 pattern) of an exactly representable power of two."""
    bits = int(np.array(v, np.float32).view(np.uint32))
    if float(np.array(bits, np.uint32).view(np.float32)) != v:
        raise ValueError(f"{v!r} is not exact in f32")
    return bits >> 16 if fmt == "bf16" else bits


def pack_floor(combo: Combo):
    """Like :func:`pack`, for :func:`floor_tests` (None for a combination without them)."""
    if combo.name not in FLOOR_COMBOS:
        return None
    # C stays +0 (its code 0) in every floor vector
    a, b, c, names, where = _diagonal(combo, [(name, [_code(combo.a, v) for v in av], [_code(combo.b, v) for v in bv],
                                               0) for name, av, bv, _cv in floor_tests(combo.K)])
    return _ss_and_rs(a, b, c), names, where
