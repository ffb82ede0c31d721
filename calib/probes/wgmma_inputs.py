"""Deterministic inputs of the wgmma numerics probe (regenerated from the seed; never stored).

Instruction ``i`` of the campaign ``(combo, N)`` draws everything from numpy's PCG64 raw stream seeded with
``SeedSequence([MASTER_SEED, combo index, N, i])`` (:class:`calib.probes.mma_inputs.Raw`: integer and IEEE
float64 add/multiply only, stable across numpy versions).  Float combinations cycle through :data:`KINDS`
(``kind = i % 10``), integer ones through :data:`INT_KINDS`, b1 through :data:`B1_KINDS`.  Per instruction
flags (``calib.probes.wgmma_ptx``): scale-d = 0 for 1 in 8 instructions, imm-scale-a / imm-scale-b = -1
each with probability 1/4 (float types), A from registers (RS form) for half of the instructions.

Codes: f16/bf16 uint16; tf32 uint32 f32 patterns with random low 13 bits (PTX ISA: ignored); e4m3/e5m2 and
s8/u8 uint8; b1 (rows, 32) bytes, K = 256 bits.  The accumulator C: f32 uint32, f16 uint16, s32 uint32 patterns.
"""
from __future__ import annotations

import hashlib

import numpy as np

from .mma_inputs import Raw
from .wgmma_ptx import COMBOS, FLAG_NEG_A, FLAG_NEG_B, FLAG_RS, FLAG_SCALE_D, Combo

MASTER_SEED = 20261127
#: instructions per campaign: N -> count.  Output elements (cases) per combination: 256*64*8 + 16*64*256 = 393,216
INSTRUCTIONS = {8: 256, 256: 16}
COMBO_INDEX = {name: i for i, name in enumerate(COMBOS)}

KINDS = ("normal", "wide", "subnormal", "specials", "cancel", "huge_tiny", "c_extreme", "zero_operand", "tiny",
         "mixed")
INT_KINDS = ("uniform", "c_limits", "extreme_operands", "small")
B1_KINDS = ("density_half", "sparse", "dense", "c_limits")

#: name -> (exponent bits, mantissa bits, bias, specials) in the narrow code space (tf32: 19 bits)
SPEC = {"f16": (5, 10, 15, "ieee"), "bf16": (8, 7, 127, "ieee"), "tf32": (8, 10, 127, "ieee"),
        "f32": (8, 23, 127, "ieee"), "e4m3": (4, 3, 7, "fn"), "e5m2": (5, 2, 15, "ieee")}


class F:
    """Code construction for one format (narrow code space)."""

    def __init__(self, name):
        self.name = name
        self.eb, self.mb, self.bias, self.sp = SPEC[name]
        self.top = (1 << self.eb) - 1
        self.emin = 1 - self.bias
        self.emax = (self.top - self.bias) if self.sp == "fn" else (self.top - 1 - self.bias)

    def code(self, sign, field, man):
        c = ((np.asarray(sign, np.int64) & 1) << (self.eb + self.mb)) | (np.asarray(field, np.int64) << self.mb) \
            | np.asarray(man, np.int64)
        if self.sp == "fn":                         # S.1111.111 is NaN: keep finite codes finite
            mag = (1 << (self.eb + self.mb)) - 1
            c = np.where((c & mag) == mag, c - 1, c)
        return c

    def exp(self, R, e, sign=None):
        """Finite codes with unbiased exponents e (below emin: subnormal, the leading 1 shifted; above emax:
        clipped), random mantissa, random sign."""
        e = np.asarray(e, np.int64)
        shape = e.shape
        man = R.bits(self.mb, shape)
        sign = R.bits(1, shape) if sign is None else sign
        e = np.minimum(e, self.emax)
        sub = e < self.emin
        sub_man = np.right_shift(man | (1 << self.mb), np.clip(self.emin - e, 0, 62))
        return np.where(sub, self.code(sign, 0, sub_man), self.code(sign, np.maximum(e, self.emin) + self.bias, man))

    def normal(self, R, shape, lo, hi):
        return self.exp(R, R.ints(lo, hi, shape))

    def wide(self, R, shape):
        hi = self.top if self.sp == "fn" else self.top - 1
        return self.code(R.bits(1, shape), R.ints(0, hi, shape), R.bits(self.mb, shape))

    def subnormal(self, R, shape):
        return self.code(R.bits(1, shape), 0, np.maximum(R.bits(self.mb, shape), 1))

    def zero(self, R, shape):
        return self.code(R.bits(1, shape), 0, 0)

    def special(self, R, shape):
        """NaN (random payload / sign) or +-Inf (ieee); e4m3: its NaN only."""
        s = R.bits(1, shape)
        if self.sp == "fn":
            return self.code(s, 0, 0) | ((1 << (self.eb + self.mb)) - 1)
        sel = R.choice(3, shape)
        nan = (s << (self.eb + self.mb)) | (self.top << self.mb) | np.maximum(R.bits(self.mb, shape), 1)
        qnan = (s << (self.eb + self.mb)) | (self.top << self.mb) | (1 << (self.mb - 1))
        inf = (s << (self.eb + self.mb)) | (self.top << self.mb)
        return np.where(sel == 0, nan, np.where(sel == 1, qnan, inf))

    def extremes(self, R, shape):
        """+-max, +-min normal, +-min subnormal, +-0, and values one ulp inside them."""
        maxc = (self.emax + self.bias) << self.mb | ((1 << self.mb) - (2 if self.sp == "fn" else 1))
        pool = np.array([maxc, maxc - 1, 1 << self.mb, (1 << self.mb) + 1, 1, 2, (1 << self.mb) - 1, 0], np.int64)
        return pool[R.choice(len(pool), shape)] | (R.bits(1, shape) << (self.eb + self.mb))

    def widen(self, R, code):
        """Narrow -> container codes: tf32 gets random low 13 bits (PTX ISA: ignored by the hardware)."""
        if self.name != "tf32":
            return code
        return (code << 13) | R.bits(13, code.shape)


def _pick(R, shape, gens, probs):
    """Element-wise choice among generator outputs (each a full array of ``shape``)."""
    u = R.uniform(shape)
    cum = np.cumsum(probs)
    out = gens[-1].copy()
    for j in range(len(gens) - 1, -1, -1):
        lo = cum[j - 1] if j else 0.0
        out = np.where((u >= lo) & (u < cum[j]), gens[j], out)
    return out


def _float_kind(kind, R, combo: Combo, N):
    fa, fb, fc = F(combo.a), F(combo.b), F(combo.d)
    K = combo.K
    sa, sb, sc = (64, K), (N, K), (64, N)

    def mix(f, shape):
        return _pick(R, shape, [f.normal(R, shape, -3, 1), f.wide(R, shape), f.subnormal(R, shape),
                                f.special(R, shape), f.zero(R, shape), f.extremes(R, shape)],
                     [0.4, 0.3, 0.1, 0.05, 0.1, 0.05])

    def cnorm(lo=-3, hi=3):
        return fc.normal(R, sc, lo, hi)

    if kind == "normal":
        a, b = fa.normal(R, sa, -3, 1), fb.normal(R, sb, -3, 1)
        c = fc.zero(R, sc) if R.coin(0.25, 1)[0] else cnorm()
    elif kind == "wide":
        a, b = fa.wide(R, sa), fb.wide(R, sb)
        c = np.where(R.coin(0.5, sc), fc.wide(R, sc), cnorm(fa.emin + fb.emin, fa.emax + fb.emax))
    elif kind == "subnormal":
        a = _pick(R, sa, [fa.subnormal(R, sa), fa.normal(R, sa, fa.emin, fa.emin + 3), fa.normal(R, sa, -3, 1)],
                  [0.5, 0.25, 0.25])
        b = _pick(R, sb, [fb.subnormal(R, sb), fb.normal(R, sb, fb.emin, fb.emin + 3), fb.normal(R, sb, -3, 1)],
                  [0.5, 0.25, 0.25])
        e0 = fa.emin + fb.emin
        c = _pick(R, sc, [fc.zero(R, sc), fc.subnormal(R, sc), cnorm(e0 - 12, e0 + 4)], [0.3, 0.3, 0.4])
    elif kind == "specials":
        p = [0.003, 0.01, 0.03][int(R.choice(3, 1)[0])]
        a = np.where(R.coin(p, sa), np.where(R.coin(0.5, sa), fa.special(R, sa), fa.zero(R, sa)),
                     fa.normal(R, sa, -3, 1))
        b = np.where(R.coin(p, sb), np.where(R.coin(0.5, sb), fb.special(R, sb), fb.zero(R, sb)),
                     fb.normal(R, sb, -3, 1))
        c = np.where(R.coin(p, sc), fc.special(R, sc), cnorm())
    elif kind == "cancel":
        a, b = fa.normal(R, sa, -3, 1), fb.normal(R, sb, -3, 1)
        perm = R.u64(K).argsort(kind="stable")
        npairs = int(R.ints(1, K // 2, 1)[0])
        off = R.coin(0.3, 1)[0]
        for j in range(npairs):
            k1, k2 = int(perm[2 * j]), int(perm[2 * j + 1])
            a[:, k2] = a[:, k1] ^ (1 << (fa.eb + fa.mb))
            b[:, k2] = b[:, k1]
            if off and j == 0:
                a[:, k2] = np.where((a[:, k2] & ((1 << fa.mb) - 1)) != (1 << fa.mb) - 1, a[:, k2] + 1, a[:, k2])
        rest = perm[2 * npairs:]
        if len(rest):
            a[:, rest] = fa.normal(R, (64, len(rest)), fa.emin, -6)
        c = fc.zero(R, sc) if R.coin(0.5, 1)[0] else cnorm(-20, 0)
    elif kind == "huge_tiny":
        k0 = int(R.choice(K, 1)[0])
        a = fa.normal(R, sa, fa.emin - fa.mb, max(fa.emax - 8, fa.emin))
        b = fb.normal(R, sb, fb.emin - fb.mb, max(fb.emax - 8, fb.emin))
        a[:, k0] = fa.normal(R, (64,), fa.emax - 3, fa.emax)
        b[:, k0] = fb.normal(R, (N,), fb.emax - 3, fb.emax)
        c = fc.zero(R, sc) if R.coin(0.5, 1)[0] else cnorm(fa.emin + fb.emin, fa.emax + fb.emax)
    elif kind == "c_extreme":
        a, b = fa.normal(R, sa, -3, 1), fb.normal(R, sb, -3, 1)
        c = _pick(R, sc, [fc.extremes(R, sc), fc.special(R, sc), cnorm(-30, 30), fc.wide(R, sc),
                          cnorm(fc.emax - 2, fc.emax)], [0.4, 0.1, 0.2, 0.2, 0.1])
    elif kind == "zero_operand":
        a, b = fa.normal(R, sa, -3, 1), fb.normal(R, sb, -3, 1)
        za = R.coin(0.25, K)
        zb = R.coin(0.25, K) & ~za
        a[:, za] = fa.zero(R, (64, int(za.sum())))
        b[:, za] = fb.normal(R, (N, int(za.sum())), fb.emax - 1, fb.emax)
        b[:, zb] = fb.zero(R, (N, int(zb.sum())))
        a[:, zb] = fa.normal(R, (64, int(zb.sum())), fa.emax - 1, fa.emax)
        c = _pick(R, sc, [fc.zero(R, sc), cnorm(-40, 0)], [0.5, 0.5])
    elif kind == "tiny":
        a = fa.normal(R, sa, fa.emin - fa.mb, fa.emin + 4 if fa.emax < 100 else -60)
        b = fb.normal(R, sb, fb.emin - fb.mb, fb.emin + 4 if fb.emax < 100 else -60)
        if fa.emax > 100:
            a = fa.normal(R, sa, -75, -55)
            b = fb.normal(R, sb, -75, -55)
        c = _pick(R, sc, [fc.zero(R, sc), fc.subnormal(R, sc), cnorm(fc.emin, fc.emin + 6)], [0.5, 0.25, 0.25])
    elif kind == "mixed":
        a, b, c = mix(fa, sa), mix(fb, sb), mix(fc, sc)
    else:
        raise ValueError(kind)
    return fa.widen(R, a), fb.widen(R, b), c


def _int_kind(kind, R, combo: Combo, N):
    K = combo.K
    sa, sb, sc = (64, K), (N, K), (64, N)
    near = lambda: np.where(R.coin(0.5, sc), (1 << 31) - 1 - R.ints(0, 1 << 20, sc),      # noqa: E731
                            (1 << 31) + R.ints(0, 1 << 20, sc))
    if kind == "uniform":
        a, b, c = R.bits(8, sa), R.bits(8, sb), R.bits(32, sc)
    elif kind == "c_limits":
        a, b, c = R.bits(8, sa), R.bits(8, sb), near()
    elif kind == "extreme_operands":
        pool = np.array([0x80, 0x7F, 0xFF, 0x00, 0x01, 0x81])
        a, b = pool[R.choice(6, sa)], pool[R.choice(6, sb)]
        c = near()
    elif kind == "small":
        a, b = R.ints(0, 3, sa) ^ (R.bits(1, sa) * 0xFF), R.ints(0, 3, sb) ^ (R.bits(1, sb) * 0xFF)
        c = R.ints(0, 255, sc) ^ (R.bits(1, sc) * 0xFFFFFFFF)
    else:
        raise ValueError(kind)
    return a.astype(np.uint8), b.astype(np.uint8), (c & 0xFFFFFFFF).astype(np.uint32)


def _b1_kind(kind, R, combo: Combo, N):
    sa, sb, sc = (64, 256), (N, 256), (64, N)
    p = {"density_half": 0.5, "sparse": 0.1, "dense": 0.9, "c_limits": 0.5}[kind]
    bits_a, bits_b = R.coin(p, sa), R.coin(p, sb)
    a, b = np.packbits(bits_a, axis=1, bitorder="little"), np.packbits(bits_b, axis=1, bitorder="little")
    if kind == "c_limits":
        c = np.where(R.coin(0.5, sc), (1 << 31) - 1 - R.ints(0, 300, sc), (1 << 31) + R.ints(0, 300, sc))
    else:
        c = R.bits(32, sc)
    return a, b, (c & 0xFFFFFFFF).astype(np.uint32)


def kinds_of(combo: Combo):
    return KINDS if combo.is_float else (B1_KINDS if combo.a == "b1" else INT_KINDS)


def gen_instruction(combo: Combo, N: int, i: int, seed: int = MASTER_SEED):
    """(a (64,K), b (N,K), c (64,N), flags) of instruction i of campaign (combo, N)."""
    R = Raw(seed, COMBO_INDEX[combo.name], N, i)
    kinds = kinds_of(combo)
    kind = kinds[i % len(kinds)]
    if combo.is_float:
        a, b, c = _float_kind(kind, R, combo, N)
    elif combo.a == "b1":
        a, b, c = _b1_kind(kind, R, combo, N)
    else:
        a, b, c = _int_kind(kind, R, combo, N)
    flags = 0 if R.coin(0.125, 1)[0] else FLAG_SCALE_D
    if combo.has_neg:
        flags |= FLAG_NEG_A * int(R.coin(0.25, 1)[0]) | FLAG_NEG_B * int(R.coin(0.25, 1)[0])
    flags |= FLAG_RS * int(R.coin(0.5, 1)[0])
    return (a.astype(combo.a_dtype), b.astype(combo.b_dtype), np.asarray(c).astype(combo.c_dtype), flags)


def gen(combo: Combo, N: int, start: int = 0, count: int | None = None, seed: int = MASTER_SEED):
    """Instructions start .. start+count-1 of campaign (combo, N): dict a (n,64,K), b (n,N,K), c (n,64,N),
    flags (n,) uint32, kind (n,) (index into :func:`kinds_of`)."""
    count = INSTRUCTIONS[N] - start if count is None else count
    parts = [gen_instruction(combo, N, i, seed) for i in range(start, start + count)]
    nk = len(kinds_of(combo))
    return {"a": np.stack([p[0] for p in parts]), "b": np.stack([p[1] for p in parts]),
            "c": np.stack([p[2] for p in parts]), "flags": np.array([p[3] for p in parts], np.uint32),
            "kind": np.arange(start, start + count) % nk}


def input_digest(x: dict) -> str:
    h = hashlib.sha256()
    for k in ("a", "b", "c", "flags"):
        h.update(np.ascontiguousarray(x[k]).tobytes())
    return h.hexdigest()


def output_digest(d) -> str:
    return hashlib.sha256(np.ascontiguousarray(d).tobytes()).hexdigest()
