"""Deterministic inputs for the mma.sync numerics probe: random campaigns and targeted vectors.

Reproducibility: every number is derived from the raw 64-bit output of numpy's PCG64 (``random_raw``)
seeded through ``SeedSequence([seed, pair index, chunk, kind])`` with integer and IEEE float64
add/multiply arithmetic only (no transcendental functions, no ``Generator`` distribution methods, whose
streams numpy does not promise to keep across versions).  The generated codes of each chunk are hashed
(:func:`input_digest`) and the hashes are stored beside the GPU results, so a change of the generator is
caught before any comparison is made.

Case ``i`` of a campaign has kind ``KINDS[i % len(KINDS)]``; chunk ``j`` holds cases ``j*chunk .. (j+1)*chunk-1``.
Codes are unsigned integers: f16/bf16 -> uint16; tf32 -> uint32 f32 patterns whose low 13 bits are random
(the hardware is expected to ignore them); f32 -> uint32.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from .mma_ptx import ALL_PAIRS, FLOAT_PAIRS, Pair

MASTER_SEED = 20251122
CHUNK = 5000

#: (exponent bits, mantissa bits, bias) of the formats that occur here (tf32 in its 19-bit code space)
FMT = {"f16": (5, 10, 15), "bf16": (8, 7, 127), "tf32": (8, 10, 127), "f32": (8, 23, 127)}

KINDS = ("normal", "wide", "subnormal", "specials", "cancel", "huge_tiny", "c_extreme", "zero_operand",
         "tiny", "mixed")
PAIR_INDEX = {name: i for i, name in enumerate(ALL_PAIRS)}


# ---------------------------------------------------------------------------------------------- raw stream
class Raw:
    """Uniform randomness from PCG64's raw 64-bit stream (stable across numpy versions)."""

    def __init__(self, *words: int):
        self.bg = np.random.PCG64(np.random.SeedSequence([int(w) for w in words]))

    def u64(self, shape) -> np.ndarray:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = int(np.prod(shape, dtype=np.int64))
        return np.asarray(self.bg.random_raw(n), dtype=np.uint64).reshape(shape)

    def bits(self, nbits: int, shape) -> np.ndarray:
        """Uniform integers in [0, 2**nbits) as int64."""
        if nbits == 0:
            return np.zeros(shape, dtype=np.int64)
        return (self.u64(shape) >> np.uint64(64 - nbits)).astype(np.int64)

    def uniform(self, shape) -> np.ndarray:
        return (self.u64(shape) >> np.uint64(11)).astype(np.float64) * (2.0 ** -53)

    def ints(self, lo: int, hi: int, shape) -> np.ndarray:
        """Integers in [lo, hi] inclusive (modulo bias is irrelevant here)."""
        return lo + (self.u64(shape) % np.uint64(hi - lo + 1)).astype(np.int64)

    def coin(self, p: float, shape) -> np.ndarray:
        return self.uniform(shape) < p

    def normal(self, shape) -> np.ndarray:
        """Approximately standard normal: Irwin-Hall sum of 4 uniforms (exact IEEE adds only)."""
        s = self.uniform(shape) + self.uniform(shape) + self.uniform(shape) + self.uniform(shape)
        return (s - 2.0) * 1.7320508075688772

    def choice(self, n: int, shape) -> np.ndarray:
        return self.ints(0, n - 1, shape)


# ---------------------------------------------------------------------------------------------- codes
@dataclass(frozen=True)
class Fmt:
    name: str

    @property
    def eb(self):
        return FMT[self.name][0]

    @property
    def mb(self):
        return FMT[self.name][1]

    @property
    def bias(self):
        return FMT[self.name][2]

    @property
    def emin(self):
        return 1 - self.bias

    @property
    def emax(self):
        return (1 << self.eb) - 2 - self.bias

    @property
    def top(self):
        return (1 << self.eb) - 1

    def code(self, sign, field, man) -> np.ndarray:
        """Narrow code (tf32: 19-bit) from sign / exponent field / mantissa arrays."""
        return ((np.asarray(sign, np.int64) & 1) << (self.eb + self.mb)) | (np.asarray(field, np.int64)
                                                                           << self.mb) | np.asarray(man, np.int64)

    def normal_code(self, R: Raw, shape, elo, ehi, man_mode="random") -> np.ndarray:
        """Normal numbers, random sign, unbiased exponent uniform in [elo, ehi] (clipped to the format)."""
        e = R.ints(elo, ehi, shape)
        e = np.clip(e, self.emin, self.emax)
        if man_mode == "random":
            man = R.bits(self.mb, shape)
        elif man_mode == "pow2":
            man = np.zeros(shape, np.int64)
        else:                                   # mix of powers of two, 1 + 2^-j, random
            sel = R.choice(3, shape)
            j = R.ints(0, self.mb - 1, shape)
            man = np.where(sel == 0, 0, np.where(sel == 1, np.left_shift(1, j), R.bits(self.mb, shape)))
        return self.code(R.bits(1, shape), e + self.bias, man)

    def exp_code(self, R: Raw, e, man_mode="random") -> np.ndarray:
        """Like normal_code but with a given exponent array; exponents below emin become subnormals
        (the leading 1 shifted in; 0 if it falls off), above emax are clipped."""
        e = np.asarray(e, np.int64)
        shape = e.shape
        man = R.bits(self.mb, shape) if man_mode == "random" else np.zeros(shape, np.int64)
        sign = R.bits(1, shape)
        e = np.minimum(e, self.emax)
        sub = e < self.emin
        sh = np.clip(self.emin - e, 0, 62)
        sub_man = np.right_shift((man | (1 << self.mb)), sh)
        return np.where(sub, self.code(sign, 0, sub_man), self.code(sign, e + self.bias, man))

    def subnormal_code(self, R: Raw, shape) -> np.ndarray:
        man = np.maximum(R.bits(self.mb, shape), 1)
        return self.code(R.bits(1, shape), 0, man)

    def wide_code(self, R: Raw, shape) -> np.ndarray:
        """Any finite code (zero and subnormals included), exponent field uniform."""
        return self.code(R.bits(1, shape), R.ints(0, self.top - 1, shape), R.bits(self.mb, shape))

    def zero_code(self, R: Raw, shape) -> np.ndarray:
        return self.code(R.bits(1, shape), 0, 0)

    def special_code(self, R: Raw, shape) -> np.ndarray:
        """NaN (random payload, quiet or signalling, either sign) or +-Inf."""
        sel = R.choice(4, shape)
        payload = np.maximum(R.bits(self.mb, shape), 1)
        nan = self.code(R.bits(1, shape), self.top, payload)
        qnan = self.code(R.bits(1, shape), self.top, 1 << (self.mb - 1))
        inf = self.code(R.bits(1, shape), self.top, 0)
        return np.where(sel == 0, nan, np.where(sel == 1, qnan, inf))

    def from_float(self, x) -> np.ndarray:
        """Round float64 values to this format (numpy casts; bf16/tf32 by round-to-nearest-even on the f32
        bits).  Finite inputs only."""
        x = np.asarray(x, np.float64)
        with np.errstate(over="ignore"):
            if self.name == "f16":
                return x.astype(np.float16).view(np.uint16).astype(np.int64)
            f = x.astype(np.float32).view(np.uint32).astype(np.int64)
        if self.name == "f32":
            return f
        drop = 32 - 1 - self.eb - self.mb
        return (f + (1 << (drop - 1)) - 1 + ((f >> drop) & 1)) >> drop


def widen(fmt: str, code: np.ndarray, R: Raw | None = None) -> np.ndarray:
    """Narrow codes -> container codes: tf32 gets random low 13 bits (when R is given)."""
    if fmt != "tf32":
        return code
    low = R.bits(13, code.shape) if R is not None else 0
    return (code << 13) | low


# ---------------------------------------------------------------------------------------------- kinds
def _gen_kind(kind: str, R: Raw, n: int, K: int, fi: Fmt, fc: Fmt):
    """(A (n,16,K), BT (n,8,K), C (n,16,8)) narrow int64 codes of one kind."""
    sa, sb, sc = (n, 16, K), (n, 8, K), (n, 16, 8)
    big_in = fi.emax > 100                          # bf16 / tf32: f32 exponent range

    def normal(shape, scale=None):
        x = R.normal(shape)
        if scale is not None:
            x = x * scale
        return x

    def cnormal(shape):
        return fc.from_float(R.normal(shape))

    def where_case(p, shape):
        """A per-case coin broadcast to shape."""
        return np.broadcast_to(R.coin(p, (n,) + (1,) * (len(shape) - 1)), shape)

    if kind == "normal":
        a, b = fi.from_float(normal(sa)), fi.from_float(normal(sb))
        c = np.where(where_case(0.25, sc), 0, cnormal(sc))
        return a, b, c

    if kind == "wide":
        a, b = fi.wide_code(R, sa), fi.wide_code(R, sb)
        if fc.name == "f32" and not big_in:          # f16 products live in [2^-48, 2^32]
            c = fc.normal_code(R, sc, -60, 40)
        else:
            c = fc.wide_code(R, sc)
        return a, b, c

    if kind == "subnormal":
        def op(shape):
            sel = R.choice(4, shape)
            return np.where(sel < 2, fi.subnormal_code(R, shape),
                            np.where(sel == 2, fi.normal_code(R, shape, fi.emin, fi.emin + 4),
                                     fi.from_float(normal(shape))))
        a, b = op(sa), op(sb)
        sel = R.choice(3, sc)
        c = np.where(sel == 0, fc.zero_code(R, sc),
                     np.where(sel == 1, fc.subnormal_code(R, sc), fc.normal_code(R, sc, fc.emin, fc.emin + 10)))
        return a, b, c

    if kind == "specials":
        # per case a rate p: each element is NaN (random payload) / +-Inf with probability p (2p for C),
        # +-0 with probability 4p
        p = np.array([0.003, 0.01, 0.03])[R.choice(3, n)]

        def sprinkle(x, shape, f, mult):
            pp = p.reshape((n,) + (1,) * (len(shape) - 1))
            u = R.uniform(shape)
            return np.where(u < pp * mult, f.special_code(R, shape),
                            np.where(u < pp * (mult + 4), f.zero_code(R, shape), x))
        a = sprinkle(fi.from_float(normal(sa)), sa, fi, 1.0)
        b = sprinkle(fi.from_float(normal(sb)), sb, fi, 1.0)
        c = sprinkle(cnormal(sc), sc, fc, 2.0)
        return a, b, c

    if kind == "cancel":
        # pairs (k1, k2) with A[:, k2] = -A[:, k1] and B[k2, :] = B[k1, :]: the two products cancel exactly
        # for every output; the other k carry tiny terms (or none: then the result is C exactly)
        sign = 1 << (fi.eb + fi.mb)
        scale = np.ldexp(1.0, -R.ints(8, 40, n))
        a = fi.from_float(normal(sa) * scale[:, None, None])
        b = fi.from_float(normal(sb))
        perm = np.argsort(R.uniform((n, K)), axis=1, kind="stable")
        npairs = np.where(R.coin(0.2, n), K // 2, R.ints(K // 4, K // 2, n))
        near = R.coin(0.3, n)
        rows = np.arange(n)
        for j in range(K // 2):
            k1, k2 = perm[:, 2 * j], perm[:, 2 * j + 1]
            use = (j < npairs)[:, None]
            src = fi.from_float(normal((n, 16)))
            neg = src ^ sign
            flip = near[:, None] & R.coin(0.5, (n, 16)) & ((src & (sign - 1)) > 1)
            neg = np.where(flip, neg ^ 1, neg)                      # 1-ulp near-cancellation
            a[rows, :, k1] = np.where(use, src, a[rows, :, k1])
            a[rows, :, k2] = np.where(use, neg, a[rows, :, k2])
            b[rows, :, k2] = np.where(use, b[rows, :, k1], b[rows, :, k2])
        sel = R.choice(10, sc)
        cz = fc.zero_code(R, sc)
        ct = fc.from_float(R.normal(sc) * np.ldexp(1.0, -R.ints(8, 40, sc)))
        c = np.where(sel < 4, cz, np.where(sel < 7, ct, cnormal(sc)))
        # 15% of the cases: signed-zero sums -- A all +-0 (per row all +0, all -0 or mixed), B positive,
        # C +-0: the result's zero sign is the only thing left to observe
        zc = R.coin(0.15, n)
        row_mode = R.choice(3, (n, 16, 1))
        zsign = np.where(row_mode == 0, 0, np.where(row_mode == 1, 1, R.bits(1, sa)))
        a = np.where(zc[:, None, None], fi.code(zsign, 0, 0), a)
        b = np.where(zc[:, None, None], b & ~(1 << (fi.eb + fi.mb)), b)
        c = np.where(zc[:, None, None], cz, c)
        return a, b, c

    if kind == "huge_tiny":
        # one product +-2^x (x in -3..3, mantissa 1, 1 + 2^-j or random) beside products 2^-8 .. 2^-44
        # (half of them powers of two): the sum straddles the F-bit truncation window
        a = fi.exp_code(R, -R.ints(4, 22, sa))
        b = fi.exp_code(R, -R.ints(4, 22, sb))
        a = np.where(R.coin(0.5, sa), a & ~((1 << fi.mb) - 1), a)
        x = np.clip(R.ints(-3, 3, (n, 16)), fi.emin, fi.emax)
        big = fi.normal_code(R, (n, 16), 0, 0, "mix")
        big = (big & ~(fi.top << fi.mb)) | ((x + fi.bias) << fi.mb)
        k0 = R.choice(K, n)
        rows = np.arange(n)
        a[rows, :, k0] = big
        b[rows, :, k0] = fi.normal_code(R, (n, 8), 0, 0, "mix")
        sel = R.choice(3, sc)
        j = R.ints(1, fc.mb, sc)
        c_one = fc.code(R.bits(1, sc), np.clip(R.ints(-3, 3, sc), fc.emin, fc.emax) + fc.bias,
                        np.left_shift(1, fc.mb - j))
        c_tiny = fc.exp_code(R, -R.ints(10, 40, sc))
        c = np.where(sel == 0, fc.zero_code(R, sc), np.where(sel == 1, c_one, c_tiny))
        return a, b, c

    if kind == "c_extreme":
        sh = np.array([0, 4, 8, 12])[R.choice(4, n)]
        a = fi.from_float(normal(sa) * np.ldexp(1.0, sh)[:, None, None])
        b = fi.from_float(normal(sb))
        if big_in:
            huge = R.coin(0.25, n)                                  # bf16/tf32: products up to 2^254
            a = np.where(huge[:, None, None], fi.normal_code(R, sa, 60, fi.emax), a)
            b = np.where(huge[:, None, None], fi.normal_code(R, sb, 60, fi.emax), b)
        ext = _c_extremes(fc)
        pick = ext[R.choice(len(ext), sc)]
        near_max = fc.code(R.bits(1, sc), fc.top - 1, R.bits(fc.mb, sc))
        sel = R.choice(4, sc)
        c = np.where(sel < 2, pick, np.where(sel == 2, near_max, fc.subnormal_code(R, sc)))
        return a, b, c

    if kind == "zero_operand":
        # whole k-slices of zero x huge (or huge x zero, or zero x zero) beside small products: a zero
        # operand that kept its exponent field (emin) would raise E and truncate the small terms
        tiny_case = R.coin(0.3 if big_in else 0.0, n)
        s_small = np.where(tiny_case, R.ints(60, 80, n), R.ints(2, 12, n))
        if big_in:
            a = fi.exp_code(R, -(s_small[:, None, None] + R.ints(0, 3, sa)))
            b = fi.exp_code(R, -(s_small[:, None, None] + R.ints(0, 3, sb)))
        else:
            scale = np.ldexp(1.0, -s_small)[:, None, None]
            a = fi.from_float(normal(sa) * scale)
            b = fi.from_float(normal(sb) * scale)
        mode = R.choice(4, (n, K))          # 0: A col zero & B row huge, 1: B row zero & A col huge, 2: both 0
        for k in range(K):
            mk = mode[:, k]
            za = fi.zero_code(R, (n, 16))
            zb = fi.zero_code(R, (n, 8))
            ha = fi.normal_code(R, (n, 16), fi.emax - 8, fi.emax)
            hb = fi.normal_code(R, (n, 8), fi.emax - 8, fi.emax)
            a[:, :, k] = np.where((mk == 0)[:, None] | (mk == 2)[:, None], za,
                                  np.where((mk == 1)[:, None], ha, a[:, :, k]))
            b[:, :, k] = np.where((mk == 1)[:, None] | (mk == 2)[:, None], zb,
                                  np.where((mk == 0)[:, None], hb, b[:, :, k]))
        sel = R.choice(2, sc)
        c = np.where(sel == 0, fc.zero_code(R, sc), fc.exp_code(R, -(R.ints(2, 30, sc))))
        if big_in:
            c = np.where(tiny_case[:, None, None] & (sel == 1), fc.exp_code(R, -R.ints(126, 150, sc)), c)
        return a, b, c

    if kind == "tiny":
        if big_in:
            a = fi.exp_code(R, R.ints(-100, -50, sa) + R.ints(-10, 10, (n, 1, 1)))
            b = fi.exp_code(R, R.ints(-100, -50, sb))
        else:
            a = np.where(R.coin(0.5, sa), fi.subnormal_code(R, sa), fi.normal_code(R, sa, fi.emin, -5))
            b = np.where(R.coin(0.5, sb), fi.subnormal_code(R, sb), fi.normal_code(R, sb, fi.emin, -5))
        sel = R.choice(5, sc)
        c = np.where(sel == 0, fc.code(0, 0, 0), np.where(sel == 1, fc.code(1, 0, 0),
                     np.where(sel == 2, fc.subnormal_code(R, sc), fc.normal_code(R, sc, fc.emin, fc.emin + 16))))
        return a, b, c

    if kind == "mixed":
        def op(shape, f):
            sel = R.choice(16, shape)
            band = f.normal_code(R, shape, -20, 20)
            out = np.where(sel < 6, f.from_float(R.normal(shape)),
                           np.where(sel < 9, band,
                                    np.where(sel < 11, f.wide_code(R, shape),
                                             np.where(sel < 13, f.subnormal_code(R, shape),
                                                      np.where(sel < 15, f.zero_code(R, shape),
                                                               f.special_code(R, shape))))))
            rare = R.coin(0.85, shape)                            # specials only 1/16 * 0.15 of the time
            return np.where((sel == 15) & rare, f.from_float(R.normal(shape)), out)
        return op(sa, fi), op(sb, fi), op(sc, fc)

    raise ValueError(kind)


def _c_extremes(fc: Fmt) -> np.ndarray:
    if fc.name == "f32":
        v = [0x00000000, 0x80000000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x80000001, 0x00800000, 0x80800000,
             0x007FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0x3F800000,
             0xBF800000, 0x4B800000, 0x71800000, 0x0D800000, 0x7F000000, 0x4F000000, 0x7F7FFFF0, 0xFF7FFF00,
             0x33800000, 0x34000000, 0x4B7FFFFF]
    else:
        v = [0x0000, 0x8000, 0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x0400, 0x8400, 0x03FF, 0x7C00, 0xFC00, 0x7E00,
             0xFE00, 0x7C01, 0x7FFF, 0x3C00, 0xBC00, 0x7800, 0x6400, 0x1400, 0x7BF0, 0x1000, 0x6BFF]
    return np.array(v, dtype=np.int64)


def gen_chunk(pair: Pair, chunk: int, n: int = CHUNK, seed: int = MASTER_SEED):
    """Cases ``chunk*n .. chunk*n+n-1`` of ``pair``'s random campaign: (A (n,16,K), BT (n,8,K), C (n,16,8))
    container codes (see the module docstring)."""
    if not pair.is_float:
        raise ValueError("random campaigns are for float pairs")
    fi, fc = Fmt(pair.ab), Fmt(pair.acc)
    K = pair.K
    a = np.zeros((n, 16, K), np.int64)
    bt = np.zeros((n, 8, K), np.int64)
    c = np.zeros((n, 16, 8), np.int64)
    idx = chunk * n + np.arange(n)
    kinds = idx % len(KINDS)
    for ki, kind in enumerate(KINDS):
        sel = np.flatnonzero(kinds == ki)
        if sel.size == 0:
            continue
        R = Raw(seed, PAIR_INDEX[pair.name], chunk, ki)
        ka, kb, kc = _gen_kind(kind, R, sel.size, K, fi, fc)
        a[sel] = widen(pair.ab, ka, R)
        bt[sel] = widen(pair.ab, kb, R)
        c[sel] = kc
    return a.astype(pair.a_dtype), bt.astype(pair.a_dtype), c.astype(pair.c_dtype)


def case_kinds(start: int, n: int) -> np.ndarray:
    return (start + np.arange(n)) % len(KINDS)


def input_digest(a, bt, c) -> str:
    h = hashlib.sha256()
    for x in (a, bt, c):
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()


def output_digest(d) -> str:
    return hashlib.sha256(np.ascontiguousarray(d).tobytes()).hexdigest()


__all__ = ["MASTER_SEED", "CHUNK", "KINDS", "gen_chunk", "input_digest", "output_digest", "Fmt", "Raw",
           "FLOAT_PAIRS", "case_kinds", "widen", "estimate"]


# ---------------------------------------------------------------------------------------------- estimate
def _f64_to_code(s: np.ndarray, acc: str, round_half_up: bool) -> np.ndarray:
    """float64 -> acc code by integer operations on the bit pattern (truncation or rounding half up; values
    outside the normal range of acc -> +-0 or +-Inf; every NaN -> one fixed code, sign included).  No
    floating-point conversion is involved, so the result does not depend on the CPU's flush-to-zero or
    NaN-propagation behaviour."""
    eb, mb, bias = FMT[acc]
    x = np.ascontiguousarray(s, dtype=np.float64).view(np.uint64).astype(np.uint64)
    sign = (x >> np.uint64(63)).astype(np.int64)
    mag = (x & np.uint64((1 << 63) - 1)).astype(np.int64)
    e64 = mag >> 52
    if round_half_up:
        mag = np.where(e64 == 0x7FF, mag, mag + (1 << (52 - mb - 1)))
        e64 = mag >> 52
    m64 = mag & ((1 << 52) - 1)
    e = e64 - 1023 + bias
    top = (1 << eb) - 1
    code = np.where(e >= top, top << mb, np.where(e <= 0, 0, (e << mb) | (m64 >> (52 - mb))))
    nan = (e64 == 0x7FF) & (m64 != 0)
    code = np.where(e64 == 0x7FF, np.where(nan, (top << mb) | (1 << (mb - 1)), top << mb), code)
    # a NaN's sign (and payload) from float64 arithmetic depends on the CPU and on numpy's loop: drop both
    return np.where(nan, code, (sign << (eb + mb)) | code)


def estimate(pair: Pair, a, bt, c) -> np.ndarray:
    """A deterministic approximation of D, used only to store GPU outputs compactly as ``gpu ^ estimate``
    (the XOR is mostly zero in its high bits and compresses about 8x).  float64 sum of C and the products in
    k order (products of f16/bf16/tf32 values are exact in float64 and no partial sum is subnormal there),
    then :func:`_f64_to_code` (truncating for f32 output, rounding for f16).  Only IEEE float64
    add/multiply and integer operations are used."""
    from .mma_models import to_f64

    av, bv, s = to_f64(a, pair.ab), to_f64(bt, pair.ab), to_f64(c, pair.acc)
    with np.errstate(all="ignore"):
        for k in range(pair.K):
            s = s + av[:, :, None, k] * bv[:, None, :, k]
    return _f64_to_code(s, pair.acc, pair.acc == "f16").astype(pair.c_dtype)
