"""Plausible bit-level models of one ``mma.sync`` (float inputs), batched over many cases, for discriminating
between them with GPU results.  These are probe-side variants, written independently of
``sim/numerics/tensor_core.py`` (which is the model under test); the ``model`` variant here must agree with
``mma_float(..., tc_params('sm_90a', 'mma.sync', fmt))`` bit for bit, and the analysis checks that it does on
every case before any variant is trusted.

All functions take container codes ``a (N,16,K)``, ``bt (N,8,K)`` (B column-major: ``bt[n][k] = B[k][n]``)
and ``c (N,16,8)`` and return D codes ``(N,16,8)`` of the accumulator format.

The fused block model (numerics.md) with switches:

* ``F``          fractional bits kept below the largest exponent E (25 on the H100 per numerics.md);
* ``zero``       how a zero term takes part in E: 'drop' (not at all; Khattak), 'min' (every zero term and a
                 zero C has exponent -126; tensor_core's zero_exp_policy='min', after MMA-Sim), 'operand' (a
                 zero operand keeps the exponent of its all-zero exponent field, emin, so 0 * 2^15 has
                 exponent emin + 15, as an exponent adder that does not look at the significand would do);
* ``floor``      Khattak's floor on E for f32 output (-133; moved to -21 for f16 output) or None;
* ``e_mode``     'raw' (a product's exponent is ea + eb with its significand in [0, 4)) or 'lead' (E from the
                 exponent of each term's leading bit, i.e. products normalised before alignment);
* ``trunc``      'zero' (alignment truncates magnitudes toward zero, sign applied after) or 'floor' (two's
                 complement arithmetic shift: negative terms truncated toward -inf);
* ``rounding``   final rounding 'rz' or 'rne' (default: rz for f32 output, rne for f16, as the model);
* ``overflow``   for RZ: 'inf' (overflow gives +-Inf, numerics.md) or 'maxfinite' (IEEE RZ);
* ``zero_sign``  'pos' (every zero result is +0) or 'ieee' (an exact zero sum is -0 only when every term is
                 a -0; a non-zero sum that rounds to zero keeps its sign);
* ``block``      products fused per block (K = whole instruction; K/2 = Ampere-style split halves, each
                 half rounded to the output format and used as C of the next);
* ``tf32_round`` tf32 inputs rounded to nearest from the f32 pattern instead of truncated.

Plus :func:`fma_chain`: D = fma(a_k, b_k, D) for k = 0..K-1 from D = C, IEEE round-to-nearest-even in the
output format at every step (computed exactly through float64 with round-to-odd).
"""
from __future__ import annotations

import numpy as np

FMT = {"f16": (5, 10, 15), "bf16": (8, 7, 127), "tf32": (8, 10, 127), "f32": (8, 23, 127)}
NAN_CODE = {"f32": 0x7FFFFFFF, "f16": 0x7FFF}
OUT_DTYPE = {"f32": np.uint32, "f16": np.uint16}
_BIG = 1 << 40


def _dec(x, fmt: str, tf32_round: bool = False):
    """Exact decode: (sign bool, exp int64 (emin for zero/subnormal), sig int64 (hidden bit included),
    nan, inf, mantissa bits)."""
    x = np.asarray(x).astype(np.int64)
    if fmt == "tf32":
        if tf32_round:
            fin = ((x >> 23) & 0xFF) != 0xFF
            x = np.where(fin, x + 0xFFF + ((x >> 13) & 1), x)
        x = x >> 13
    eb, mb, bias = FMT[fmt]
    sign = ((x >> (eb + mb)) & 1).astype(bool)
    field = (x >> mb) & ((1 << eb) - 1)
    man = x & ((1 << mb) - 1)
    top = (1 << eb) - 1
    nan = (field == top) & (man != 0)
    inf = (field == top) & (man == 0)
    sig = np.where(field == top, 0, np.where(field == 0, man, man | (1 << mb)))
    exp = np.where(field == 0, 1 - bias, field - bias)
    return sign, exp, sig, nan, inf, mb


def _bitlen(x: np.ndarray) -> np.ndarray:
    """Bit length of non-negative int64 values below 2**62."""
    _, e = np.frexp(x.astype(np.float64))
    e = e.astype(np.int64)
    high = np.right_shift(x, np.maximum(e - 1, 0))
    return e - ((high == 0) & (x > 0))


def _shift(mag, sh, trunc_floor_neg=None):
    """mag * 2**sh, truncated toward zero (or, where trunc_floor_neg, rounded up in magnitude = toward
    -inf for the negative terms it marks)."""
    up = np.left_shift(mag, np.clip(sh, 0, 62))
    s = np.clip(-sh, 0, 63)
    down = np.right_shift(mag, s)
    if trunc_floor_neg is not None:
        lost = (mag - np.left_shift(down, np.minimum(s, 62))) != 0
        lost = np.where(s >= 63, mag != 0, lost)
        down = down + (trunc_floor_neg & lost)
    return np.where(sh >= 0, up, down)


def round_pack(T, lsb_exp, acc: str, rounding: str, overflow: str = "inf") -> np.ndarray:
    """Encode T * 2**lsb_exp (T int64) in acc with one rounding ('rz' or 'rne'); zero -> +0 here."""
    eb, mb, bias = FMT[acc]
    emin, top = 1 - bias, (1 << eb) - 1
    neg = T < 0
    mag = np.abs(T)
    lead = _bitlen(mag) - 1 + lsb_exp
    q = np.maximum(lead, emin) - mb
    s = q - lsb_exp
    sd = np.clip(s, 0, 63)
    r = np.where(s <= 0, np.left_shift(mag, np.clip(-s, 0, 62)), np.right_shift(mag, sd))
    if rounding == "rne":
        rem = np.where(s > 0, mag - np.left_shift(r, np.minimum(sd, 62)), 0)
        rem = np.where(s >= 63, mag, rem)
        half = np.left_shift(np.int64(1), np.clip(sd - 1, 0, 62))
        r = r + ((s > 0) & ((rem > half) | ((rem == half) & ((r & 1) == 1))))
    carry = (r >> (mb + 1)) != 0
    r = np.where(carry, r >> 1, r)
    q = q + carry
    normal = r >= (1 << mb)
    field = np.where(normal, q + mb + bias, 0)
    mant = np.where(normal, r - (1 << mb), r)
    over = field >= top
    if rounding == "rne" or overflow == "inf":
        field, mant = np.where(over, top, field), np.where(over, 0, mant)
    else:
        field, mant = np.where(over, top - 1, field), np.where(over, (1 << mb) - 1, mant)
    bits = (field << mb) | mant
    bits = np.where((bits != 0) & neg, bits | (1 << (eb + mb)), bits)
    return bits


def _block(A, B, c, ab: str, acc: str, o: dict) -> np.ndarray:
    """One fused block: A (sign, exp, sig, nan, inf) slices (N,16,kb), B (N,8,kb), c codes (N,16,8)."""
    asg, aex, asi, ana, ain, amb = A
    bsg, bex, bsi, bna, bin_, _ = B
    csg, cex, csi, cna, cin, cmb = _dec(c, acc)
    F = o["F"]
    ps = asg[:, :, None, :] ^ bsg[:, None, :, :]
    pe = aex[:, :, None, :] + bex[:, None, :, :]
    pm = asi[:, :, None, :] * bsi[:, None, :, :]
    pf = 2 * amb
    if o["e_mode"] == "lead":
        te = pe + _bitlen(pm) - 1 - pf
        ce = cex + _bitlen(csi) - 1 - cmb
    else:
        te, ce = pe, cex
    zt, zc = pm == 0, csi == 0
    if o["zero"] == "drop":
        te, ce = np.where(zt, -_BIG, te), np.where(zc, -_BIG, ce)
    elif o["zero"] == "min":
        te, ce = np.where(zt, -126, te), np.where(zc, -126, ce)
    elif o["zero"] == "operand":
        te, ce = np.where(zt, pe, te), np.where(zc, cex, ce)
    else:
        raise ValueError(o["zero"])
    E = np.maximum(te.max(axis=-1), ce)
    if o["floor"] is not None:
        E = np.maximum(E, o["floor"] + (1 - FMT[acc][2]) + 126)
    tf = o["trunc"] == "floor"
    v = _shift(pm, F + pe - E[..., None] - pf, ps if tf else None)
    T = np.where(ps, -v, v).sum(axis=-1)
    cv = _shift(csi, F + cex - E - cmb, csg if tf else None)
    T = T + np.where(csg, -cv, cv)
    bits = round_pack(T, E - F, acc, o["rounding"], o["overflow"])
    if o["zero_sign"] == "ieee":
        eb, mb, _ = FMT[acc]
        all_negzero = (zt & ps).all(axis=-1) & zc & csg
        negzero = np.where(T == 0, all_negzero, T < 0) & (bits == 0)
        bits = np.where(negzero, 1 << (eb + mb), bits)
    # specials
    az = (asi == 0) & ~ana & ~ain
    bz = (bsi == 0) & ~bna & ~bin_
    pnan = (ana[:, :, None, :] | bna[:, None, :, :] | (ain[:, :, None, :] & bz[:, None, :, :])
            | (az[:, :, None, :] & bin_[:, None, :, :]))
    pinf = (ain[:, :, None, :] | bin_[:, None, :, :]) & ~pnan
    posi = (pinf & ~ps).any(axis=-1) | (cin & ~csg)
    negi = (pinf & ps).any(axis=-1) | (cin & csg)
    nan = pnan.any(axis=-1) | cna | (posi & negi)
    inf = (posi | negi) & ~nan
    eb, mb, _ = FMT[acc]
    inf_code = ((1 << eb) - 1) << mb
    bits = np.where(inf, np.where(negi, inf_code | (1 << (eb + mb)), inf_code), bits)
    bits = np.where(nan, NAN_CODE[acc], bits)
    return bits


DEFAULTS = dict(F=25, zero="drop", floor=-133, e_mode="raw", trunc="zero", rounding=None, overflow="inf",
                zero_sign="pos", block=None, tf32_round=False)


def fused(ab: str, acc: str, a, bt, c, **opts) -> np.ndarray:
    """The fused block model with the switches of the module docstring (defaults = tensor_core's model)."""
    o = dict(DEFAULTS)
    unknown = set(opts) - set(o)
    if unknown:
        raise ValueError(f"unknown options {unknown}")
    o.update(opts)
    if o["rounding"] is None:
        o["rounding"] = "rz" if acc == "f32" else "rne"
    K = a.shape[-1]
    block = o["block"] or K
    A = _dec(a, ab, o["tf32_round"])
    B = _dec(bt, ab, o["tf32_round"])
    cur = np.asarray(c).astype(np.int64)
    for k0 in range(0, K, block):
        ks = slice(k0, min(k0 + block, K))
        cur = _block(tuple(x[..., ks] if isinstance(x, np.ndarray) else x for x in A),
                     tuple(x[..., ks] if isinstance(x, np.ndarray) else x for x in B), cur, ab, acc, o)
    return cur.astype(OUT_DTYPE[acc])


def to_f64(x, fmt: str) -> np.ndarray:
    sign, exp, sig, nan, inf, mb = _dec(x, fmt)
    v = np.ldexp(sig.astype(np.float64), (exp - mb).astype(np.int32))
    v = np.where(inf, np.inf, v)
    v = np.where(nan, np.nan, v)
    return np.where(sign, -v, v)


def fma_chain(ab: str, acc: str, a, bt, c) -> np.ndarray:
    """IEEE fma chain in k order from C, round to nearest even in acc at every step (see module docstring)."""
    av, bv = to_f64(a, ab), to_f64(bt, ab)
    d = to_f64(c, acc)
    out_t = np.float32 if acc == "f32" else np.float16
    with np.errstate(all="ignore"):
        for k in range(a.shape[-1]):
            p = av[:, :, None, k] * bv[:, None, :, k]           # exact in float64
            s = p + d
            bp = s - d
            err = (p - bp) + (d - (s - bp))                     # TwoSum: s + err = p + d exactly
            inexact = np.isfinite(s) & np.isfinite(err) & (err != 0)
            bits = s.view(np.int64)
            away = inexact & ((err < 0) != (s < 0))             # |s| > |p + d|: step toward zero
            bits = np.where(away, bits - 1, bits)
            bits = np.where(inexact, bits | 1, bits)            # round to odd: one final rounding is exact
            d = bits.view(np.float64).astype(out_t).astype(np.float64)
        out = d.astype(out_t)
    bits = out.view(OUT_DTYPE[acc]).astype(np.int64)
    bits = np.where(np.isnan(out), NAN_CODE[acc], bits)
    return bits.astype(OUT_DTYPE[acc])


def variants(pair) -> dict:
    """name -> (description, fn(a, bt, c) -> D codes) of the variants that make sense for ``pair``."""
    ab, acc, K = pair.ab, pair.acc, pair.K
    rz = acc == "f32"

    def fz(**kw):
        return lambda a, bt, c: fused(ab, acc, a, bt, c, **kw)

    v = {
        "model": ("tensor_core reference: fused block of K, F=25, zero terms dropped from E, E floor -133 "
                  f"(f32 out) / -21 (f16 out), {'RZ' if rz else 'RNE'}, zero result +0", fz()),
        "zero_min": ("zero terms (and C=0) have exponent -126 (tensor_core zero_exp_policy='min', MMA-Sim)",
                     fz(zero="min")),
        "zero_operand": ("a zero operand keeps exponent emin: 0*2^x has exponent emin+x; C=0 has emin",
                         fz(zero="operand")),
        "no_floor": ("no floor on E", fz(floor=None)),
        "F23": ("F = 23", fz(F=23)),
        "F24": ("F = 24", fz(F=24)),
        "F26": ("F = 26", fz(F=26)),
        "F27": ("F = 27", fz(F=27)),
        "F40": ("F = 40 (a much wider aligned sum)", fz(F=40)),
        "E_lead": ("E from the leading-bit exponents (products normalised before alignment)",
                   fz(e_mode="lead")),
        "trunc_floor": ("alignment truncates toward -inf (two's complement shift) instead of toward zero",
                        fz(trunc="floor")),
        "round_flip": (f"final rounding {'RNE' if rz else 'RZ'} instead of {'RZ' if rz else 'RNE'}",
                       fz(rounding="rne" if rz else "rz")),
        "zero_sign_ieee": ("IEEE zero signs: exact zero is -0 only when all terms are -0; a non-zero sum that "
                           "rounds to zero keeps its sign", fz(zero_sign="ieee")),
        "split_halves": ("Ampere-style: two fused halves of K/2, the first rounded to the output format and "
                         "used as C of the second", fz(block=K // 2)),
        "fma_chain": ("IEEE fma chain in k order from C, RNE at every step",
                      lambda a, bt, c: fma_chain(ab, acc, a, bt, c)),
    }
    if ab in ("bf16", "tf32") or acc == "f16":
        # the floor on E can only act where E can fall below it: f32-range inputs, or f16 output
        for fl in (-131, -132, -134, -135):
            shown = fl if acc == "f32" else fl + 112
            v[f"floor_m{-shown}"] = (f"floor on E at {shown} instead of {-133 if acc == 'f32' else -21}",
                                    fz(floor=fl))
    if rz:
        v["rz_maxfinite"] = ("RZ overflow gives +-max-finite (IEEE) instead of +-Inf", fz(overflow="maxfinite"))
    if ab == "tf32":
        v["tf32_rne_inputs"] = ("tf32 operands rounded to nearest even from f32 instead of truncated",
                                fz(tf32_round=True))
    return v


__all__ = ["fused", "fma_chain", "variants", "round_pack", "to_f64", "DEFAULTS"]
