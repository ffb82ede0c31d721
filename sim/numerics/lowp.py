"""Tensor-core operand formats decoded into exact (sign, exponent, integer significand) triples.

Sources:
    * numerics.md (tcsim reference), section "Inputs": tf32 truncation, e2m1 code table and nibble
      packing, e4m3 ("fn") and e5m2 special values, fp6 biases, ue8m0 / ue4m3 scale formats.
    * PTX ISA 9.1 §5.2.5 "Alternate Floating Point Data Formats" (bf16, tf32, e4m3, e5m2, e2m3, e3m2,
      e2m1, ue8m0, ue4m3) and §9.7.14 (warp-level MMA: "the lower 13 bits of .tf32 operands are
      ignored").
    * OCP Microscaling Formats (MX) v1.0, §5.3 (FP8/FP6/FP4 element encodings) and §5.4 (E8M0 scale).

A decoded element is the exact value

        (-1)**sign * sig * 2**(exp - man_bits)

with ``sig`` a non-negative integer.  For normal numbers ``sig`` includes the hidden bit
(2**man_bits <= sig < 2**(man_bits+1)); subnormal numbers and zeros use the format's minimum
exponent ``emin = 1 - bias`` with ``sig < 2**man_bits`` (numerics.md, fused block model step 2: "a
subnormal input uses the format's minimum exponent").  NaN and Inf elements carry ``sig = 0``,
``exp = emin`` and are flagged in ``nan`` / ``inf``; the caller handles them first (numerics.md step 1).

Per-format notes (all encodings are the raw codes, one element per array entry):
    f32   IEEE binary32 (accumulator format), 8/23.       f16   IEEE binary16, 5/10.
    bf16  8/7, IEEE-style Inf/NaN.                          tf32  an f32 bit pattern whose low 13 bits
          are ignored (treated as zero); 8/10.
    e4m3  4/3, bias 7, max 448, S.1111.111 = NaN, no Inf ("fn").
    e5m2  5/2, bias 15, IEEE-style Inf/NaN.
    e3m2  3/2, bias 3, max 28, no Inf/NaN (fp6).           e2m3  2/3, bias 1, max 7.5, no Inf/NaN (fp6).
    e2m1  2/1, bias 1, codes 0..7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6, bit 3 = sign, no Inf/NaN (fp4).
    ue8m0 unsigned exponent-only scale: code c -> 2**(c-127), 0xFF = NaN, no zero, no subnormals.
    ue4m3 unsigned scale: decoded as e4m3 with the sign bit ignored (so 0x7F and 0xFF are NaN).

Not supported here (fail loudly): bits set above the format's width (e.g. a 6-bit code with its two
top container bits set raises ValueError; only tf32 ignores bits by definition, and ue4m3 ignores
its sign bit); packed containers other than the fp4 nibble pairs of `unpack_e2m1`; integer formats
(s8/u8 are plain integers, see `tcsim.numerics.tensor_core.mma_int`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

__all__ = ["LowpFormat", "FORMATS", "Decoded", "decode", "to_float64", "unpack_e2m1", "lowp_format"]


@dataclass(frozen=True)
class LowpFormat:
    """Encoding parameters of one tensor-core floating-point format (PTX ISA §5.2.5).

    specials: 'ieee' (max exponent field = Inf / NaN), 'fn' (only S.1..1.1..1 is NaN, no Inf),
    'none' (every code is finite), 'e8m0' (0xFF is NaN, everything else 2**(c-127)).
    ignore_low: low bits of the code ignored before decoding (tf32: 13).
    ignore_sign: the sign bit is ignored (ue4m3).  signed=False: no sign bit at all (ue8m0).
    """

    name: str
    width: int          # bits of the code (including ignored low bits for tf32)
    exp_bits: int
    man_bits: int
    bias: int
    specials: str
    signed: bool = True
    ignore_low: int = 0
    ignore_sign: bool = False

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number (also used for subnormals and zero)."""
        if self.specials == "e8m0":
            return -self.bias          # code 0 -> 2**-127; no subnormals
        return 1 - self.bias

    @property
    def max_finite(self) -> float:
        """Largest finite value (checked against ml_dtypes in the tests)."""
        top = (1 << self.exp_bits) - 1
        if self.specials == "e8m0":
            return 2.0 ** (top - 1 - self.bias)
        if self.specials == "ieee":
            return (2.0 - 2.0 ** -self.man_bits) * 2.0 ** (top - 1 - self.bias)
        if self.specials == "fn":
            return (2.0 - 2.0 ** (1 - self.man_bits)) * 2.0 ** (top - self.bias)
        return (2.0 - 2.0 ** -self.man_bits) * 2.0 ** (top - self.bias)


FORMATS = MappingProxyType({
    f.name: f for f in (
        LowpFormat("f32", 32, 8, 23, 127, "ieee"),
        LowpFormat("f16", 16, 5, 10, 15, "ieee"),
        LowpFormat("bf16", 16, 8, 7, 127, "ieee"),
        LowpFormat("tf32", 32, 8, 10, 127, "ieee", ignore_low=13),
        LowpFormat("e4m3", 8, 4, 3, 7, "fn"),
        LowpFormat("e5m2", 8, 5, 2, 15, "ieee"),
        LowpFormat("e3m2", 6, 3, 2, 3, "none"),
        LowpFormat("e2m3", 6, 2, 3, 1, "none"),
        LowpFormat("e2m1", 4, 2, 1, 1, "none"),
        LowpFormat("ue8m0", 8, 8, 0, 127, "e8m0", signed=False),
        LowpFormat("ue4m3", 8, 4, 3, 7, "fn", ignore_sign=True),
    )
})


def lowp_format(name: str) -> LowpFormat:
    """Look up a format by its PTX name (numerics.md "Inputs"); ValueError if unknown."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown tensor-core format {name!r}; known: {sorted(FORMATS)}") from None


class Decoded(NamedTuple):
    """Exact decoded elements: value = (-1)**sign * sig * 2**(exp - man_bits) (see module docstring)."""

    sign: np.ndarray    # bool
    exp: np.ndarray     # int64, unbiased; emin for subnormals, zeros, NaN and Inf
    sig: np.ndarray     # int64 >= 0, man_bits fraction bits; 0 for zeros, NaN and Inf
    nan: np.ndarray     # bool
    inf: np.ndarray     # bool
    man_bits: int       # fraction bits of sig (the format's explicit mantissa width)


def decode(bits, fmt: str) -> Decoded:
    """Decode raw codes of ``fmt`` into exact triples (numerics.md "Inputs"; PTX ISA §5.2.5).

    ``bits``: any integer array-like of codes (one element per entry).  tf32 codes are 32-bit f32
    patterns whose low 13 bits are ignored (PTX ISA §9.7.14, numerics.md "Inputs").  Raises
    ValueError for negative codes or bits set above the format width.
    """
    f = lowp_format(fmt)
    x = np.asarray(bits)
    if x.dtype.kind not in "iu":
        raise ValueError(f"{fmt} codes must be an integer array, got dtype {x.dtype}")
    if f.width <= 8 and x.dtype.itemsize == 1 and x.ndim:
        # byte codes: look the decoded fields up in the table of every code (built by the arithmetic below)
        if x.size and ((x.dtype.kind == "i" and int(x.min()) < 0) or (f.width < 8 and int(x.max()) >> f.width)):
            raise ValueError(f"{fmt} code out of range: codes must fit in {f.width} bits")
        t = _code_table(fmt)
        i = x.astype(np.intp) if x.dtype.kind == "i" else x
        return Decoded(t.sign[i], t.exp[i], t.sig[i], t.nan[i], t.inf[i], t.man_bits)
    x = x.astype(np.int64)
    if x.size and (int(x.min()) < 0 or int(x.max()) >> f.width):
        raise ValueError(f"{fmt} code out of range: codes must fit in {f.width} bits")
    return _decode_int64(f, x)


@functools.lru_cache(maxsize=None)
def _code_table(fmt: str) -> Decoded:
    """decode() of every code 0 .. 2**width - 1 of a format of at most 8 bits (read-only arrays)."""
    f = lowp_format(fmt)
    t = _decode_int64(f, np.arange(1 << f.width, dtype=np.int64))
    for a in t[:5]:
        a.flags.writeable = False
    return t


def _decode_int64(f: LowpFormat, x: np.ndarray) -> Decoded:
    if f.ignore_low:
        x = x >> f.ignore_low
    mb, eb = f.man_bits, f.exp_bits
    man = x & ((1 << mb) - 1)
    field = (x >> mb) & ((1 << eb) - 1)
    if f.signed and not f.ignore_sign:
        sign = ((x >> (mb + eb)) & 1).astype(bool)
    else:
        sign = np.zeros(x.shape, dtype=bool)
    top = (1 << eb) - 1
    if f.specials == "e8m0":
        nan = field == top
        inf = np.zeros(x.shape, dtype=bool)
        exp = field - f.bias
        sig = np.ones(x.shape, dtype=np.int64)
    else:
        if f.specials == "ieee":
            nan = (field == top) & (man != 0)
            inf = (field == top) & (man == 0)
        elif f.specials == "fn":
            nan = (field == top) & (man == (1 << mb) - 1)
            inf = np.zeros(x.shape, dtype=bool)
        else:
            nan = np.zeros(x.shape, dtype=bool)
            inf = np.zeros(x.shape, dtype=bool)
        normal = field != 0
        exp = np.where(normal, field - f.bias, f.emin)
        sig = np.where(normal, man | (1 << mb), man)
    special = nan | inf
    if special.any():
        exp = np.where(special, f.emin, exp)
        sig = np.where(special, 0, sig)
    return Decoded(sign, exp.astype(np.int64), sig.astype(np.int64), nan, inf, mb)


def to_float64(bits, fmt: str) -> np.ndarray:
    """Exact float64 values of ``fmt`` codes (NaN / +-Inf for specials). Every supported format,
    f32 included, is a subset of float64, so this is exact (numerics.md "Inputs")."""
    d = decode(bits, fmt)
    v = np.ldexp(d.sig.astype(np.float64), (d.exp - d.man_bits).astype(np.int32))
    v = np.where(d.inf, np.inf, v)
    v = np.where(d.nan, np.nan, v)
    return np.where(d.sign, -v, v)


def unpack_e2m1(packed) -> np.ndarray:
    """Split bytes holding two fp4 (e2m1) codes each into codes: element 2i is the low nibble of byte
    i, element 2i+1 the high nibble (numerics.md "Inputs"; PTX ISA tcgen05 packing formats).
    The last axis doubles in length."""
    p = np.asarray(packed)
    if p.dtype.kind not in "iu" or (p.size and (int(p.min()) < 0 or int(p.max()) > 0xFF)):
        raise ValueError("unpack_e2m1 expects bytes (integers 0..255)")
    p = p.astype(np.uint8)
    out = np.stack([p & 0x0F, p >> 4], axis=-1)
    return out.reshape(p.shape[:-1] + (2 * p.shape[-1],)) if p.ndim else out
