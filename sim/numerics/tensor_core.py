"""Bit-exact tensor-core arithmetic: the fused block dot-product model and its per-architecture table.

Sources:
    * numerics.md (tcsim reference), sections "The fused block model", "Parameters", "Block-scaled
      kinds", "Integers", "Open questions".  That file is the specification implemented here.
    * Khattak & Mikaitis, "Accurate Models of NVIDIA Tensor Cores", arXiv 2512.07004 (models H100TC,
      B200TC; the E floor and the dropping of zero products).
    * Xie et al., "MMA-Sim", arXiv 2511.10909 (truncated fused sum; zero exponent -126; group-scaled
      fused sum for mxf4 / mxf4nvf4; canonical NaN encodings).
    * PTX ISA 9.1 §9.7.14 (warp-level mma.sync), §9.7.15 (wgmma), §9.7.16 (tcgen05.mma kinds,
      block scaling) for which instruction uses which kind.

The model, for one output element and one block of ``params.block`` products (numerics.md):
    1. Specials first: any NaN, Inf*0, or +Inf together with -Inf -> canonical NaN (f32 0x7FFFFFFF,
       f16 0x7FFF).  Otherwise any Inf -> that signed Inf.
    2. Products are exact: significand ma*mb (unnormalised, in [0,4)), exponent ea+eb; subnormals
       use the format's minimum exponent.  C (the accumulator input) is one more term.
    3. E = the largest exponent among the terms (policy switches below for zeros and a floor).
    4. Each term -> |m| * 2**(F + e - E) truncated toward zero (no sticky bit), sign applied after
       truncation; the integers are summed exactly.
    5. Normalise once and round once: f32 output round toward zero keeping subnormals, f16 output
       round to nearest even.  Every zero result is +0: an exact zero sum (also for C = -0,
       numerics.md Q3) and also a negative sum that rounds to zero.  The latter was measured on an
       H100 (mma.sync bf16/tf32/f16: hardware +0 where both public models would give -0).
    6. K larger than one block: blocks are chained in K order, each block's rounded result is C of
       the next block.

Policy switches for numerics.md "Open questions" (fields of TensorCoreParams; defaults in brackets):
    Q1 floor on E    -- ``e_floor`` [-133 = E_FLOOR_F32_OUT, Khattak].  The value is the floor for
                        f32 output; for f16 output it is moved by the difference of the output
                        formats' minimum exponents (-133 -> -21, numerics.md Q1).  None = no floor.
    Q2 zero operands -- ``zero_exp_policy`` ['drop', Khattak: zero products and a zero C do not
                        take part in E].  'min' (MMA-Sim as numerics.md quotes it): every zero term,
                        C included, has exponent ZERO_EXP_MIN = -126.
    Q3 sign of a zero result -- always +0 (not a switch).
    mmasim 2.1.1 (the PyPI MMA-Sim release) no longer uses -126: its Hopper/Blackwell models give a
    zero term the exponent e_zero = -133 (f32 out) / -21 (f16 out), which is exactly 'drop' plus the
    floor above; 100k+ random cases per tcgen05 form agree bit for bit
    (tests/numerics/test_mmasim_oracle.py, tests/golden/mmasim_oracle/README.md).
    Group-scaled kinds (kind::mxf4 / mxf4nvf4) follow mmasim's B200 model, fitted by its authors to
    B200 hardware: floor E_FLOOR_F32_OUT_GROUPED = -139 (not -133), and a group whose products are not
    all zero keeps its scale exponent in E even when its exact sum cancels (``group_exp_policy``
    ['products']; 'sum' = the former tcsim rule).  Not measured by tcsim itself (no B200 at hand).
  Evidence (H100 80GB HBM3, driver 580.159, CUDA 13.0, mma.sync m16n8k16 f16/bf16 -> f32,
  f16 -> f16, m16n8k8 tf32 and f16, m16n8k32 e4m3/e5m2 -> f32/f16; 128k-192k random outputs per
  form plus the golden vectors in tests/numerics/test_tensor_core.py): the defaults above matched
  every output bit for bit; 'min' missed 116-237 outputs per bf16/tf32 form and two golden
  vectors, 'no floor' missed one tf32 output and two golden vectors.  The floor values themselves
  are pinned: f32 output -133 is the only floor with no bf16/tf32 mismatch (-132 and -134 each
  miss), and a bracket of golden vectors puts the f16-output floor at exactly -21 (Khattak's B200
  file uses -15 for f16 in/out; that is not what the H100 does).  Q3: the hardware returns +0
  also for a negative sum that rounds to zero (both public models say -0 there).  None of this
  was measured on sm_100a (no B200 at hand); the B200 rows assume the same policies.
    Q4 fp6/fp4 in kind::f8f6f4, B200 mma.sync fp8 and tf32 -- table entries taken
       from the public models or extrapolated, not measured here; `provisional_reason` names them.
       H100 mma.sync fp8 was measured: it is a compiler lowering (LOWER_FP8_VIA_F16), recorded for all
       eight m16n8k32 e4m3/e5m2 -> f32/f16 forms in tests/golden/mma_sync_fp8 (1,024 random cases and
       the targeted vectors per form, every output matched).
  Evidence, wgmma (H100 80GB HBM3, driver 580.159, CUDA 13.0; tests/golden/wgmma_numerics): every
  wgmma.mma_async type combination -- f16 -> f16/f32, bf16 -> f32, tf32 -> f32, the four e4m3/e5m2 pairs
  -> f16/f32, s8/u8 (all four, with and without .satfinite) -> s32, b1 .and.popc -> s32 -- at m64n8 and
  m64n256, A from shared memory and from registers, negated operands and scale-d = 0: 393,216 random outputs
  per combination (8.26 million in all) plus targeted vectors, and the sm_90a wgmma rows below (with
  mma_int / mma_b1) matched every one bit for bit, no parameter changed.  The fp8 row (native on wgmma, unlike
  mma.sync) is pinned: F = 13 with the f32 result cut to e8m13, and F = 13 with round to nearest even for f16
  output; F = 12 / 14..16 / 23..25, no e8m13 cut, a block of 16 and the mma.sync f16 lowering each miss
  11-90 thousand of 131,072 m64n8 outputs per combination.  The same campaigns on an H200 gave identical bits.
    Module constant, not a per-instruction switch:
       F32_RZ_OVERFLOW_TO_INF -- numerics.md says f32 RZ overflow gives +-Inf (MMA-Sim does the
       same; the H100 does too); IEEE RZ would give +-max-finite.  Default True.

Fixed-point arithmetic uses numpy int64.  Overflow argument (checked again at run time by
`_check_headroom`): a term's significand m = sig * 2**-frac satisfies m < 2**k with k = 2 for a
product (each significand < 2), k = 1 for C and k <= 12 for an mxf4 group term (|sum of 16 e2m1
products| <= 576 < 2**10, times two scale significands < 2 each).  Because e <= E for every non-zero
term, its aligned integer is < 2**(F + k) <= 2**(35 + 12) = 2**47.  A block fuses at most 64 terms
plus C, so |sum| < 65 * 2**47 < 2**54 < 2**63.  Right shifts are clipped at 63, which for a
non-negative value below 2**63 yields exactly 0 (the truncation of a term aligned far below the
window); left shifts never exceed F - frac <= 35.

Not supported (raises): K = 0, accumulator formats other than f32 / f16, scale blocks that split an
mxf4 group, integer-kind tables through `mma_float`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple, Optional

import numpy as np

from . import jit
from .lowp import Decoded, decode, lowp_format, to_float64

__all__ = [
    "TensorCoreParams", "tc_params", "provisional_reason", "mma_float", "mma_block_scaled", "mma_int",
    "ZERO_EXP_MIN", "E_FLOOR_F32_OUT", "F32_RZ_OVERFLOW_TO_INF", "CANONICAL_NAN", "OUTPUT_ROUNDING",
    "ACC_FORMATS", "effective_e_floor", "LOWER_FP8_VIA_F16", "E_FLOOR_F32_OUT_GROUPED",
    "GROUP_EXP_POLICIES", "mma_b1", "mma_float_reference", "mma_block_scaled_reference",
]

# ---- named constants ---------------------------------------------------------------------------
#: MMA-Sim's exponent for a zero term under zero_exp_policy='min' (numerics.md open question 2).
ZERO_EXP_MIN = -126
#: Khattak's floor on E for f32 output (numerics.md open question 1); f16 output: see effective_e_floor.
E_FLOOR_F32_OUT = -133
#: Floor on E of the group-scaled kinds (tcgen05 kind::mxf4 / mxf4nvf4, F = 35): MMA-Sim's e_zero for
#: its B200 MMA_GST_FDPA model (mmasim 2.1.1 nv_ptx/sim.py), which its authors fitted to B200 hardware
#: (their probe list has tcgen05 mxf4nvf4 block32/ue8m0, block16/ue8m0, block16/ue4m3).  A zero C and
#: an all-zero group take exponent -139 there, and C is always a term, so E >= -139 -- i.e. this floor.
#: Discriminating vector: tests/numerics/test_tensor_core.py::TestBlockScaledVectors::test_mxf4_floor_is_139.
E_FLOOR_F32_OUT_GROUPED = -139
#: TensorCoreParams.group_exp_policy values (kind::mxf4 / mxf4nvf4, see that class).
GROUP_EXP_POLICIES = ("products", "sum")
#: f32 round-toward-zero overflow gives +-Inf (numerics.md step 5) instead of IEEE +-max-finite.
#: Measured on an H100 (mma.sync bf16: 2^127 * 2 -> +Inf, 2^127 * -2 -> -Inf); sm_100a unmeasured.
F32_RZ_OVERFLOW_TO_INF = True
#: Canonical NaN of the result (numerics.md step 1, after MMA-Sim).
CANONICAL_NAN = MappingProxyType({"f32": 0x7FFFFFFF, "f16": 0x7FFF})
#: Final rounding per accumulator format (numerics.md step 5).
OUTPUT_ROUNDING = MappingProxyType({"f32": "rz", "f16": "rne"})
ACC_FORMATS = ("f32", "f16")
#: TensorCoreParams.lowering: fp8 mma.sync as ptxas emits it for sm_90a (seen in CUDA 13.0 SASS):
#: F2FP.F16.E4M3/E5M2.UNPACK_B (exact fp8 -> f16), an f16 HMMA over the k with k%4 in {0,1} from
#: C = +0, a second one over k%4 in {2,3} chained on the first, then FADD / HADD2 (IEEE round to
#: nearest even) of the instruction's C.  m16n8k32 uses two HMMA.16816 (16 products each),
#: m16n8k16 (PTX 8.7) two HMMA.1688 (8 each); both matched 128k random H100 outputs bit for bit,
#: for f32 and f16 accumulators.
#: This is a compiler lowering: another ptxas version may emit something else.
LOWER_FP8_VIA_F16 = "fp8_via_f16_hmma"
_FP8_INSTR_K = 32
_ACC_DTYPE = MappingProxyType({"f32": np.uint32, "f16": np.uint16})
_ZERO_POLICIES = ("drop", "min")
# exponent given to dropped zero terms: far below anything real, far from int64 limits
_DROPPED = -(1 << 40)


@dataclass(frozen=True)
class TensorCoreParams:
    """Numerical parameters of one tensor-core path (numerics.md "Parameters").

    block: products fused per block (K chunk); frac_bits: F, fractional bits of the aligned sum;
    out_trunc_frac: f32 output cut to e8m`out_trunc_frac` (H100 wgmma fp8: 13), None otherwise;
    group: products summed exactly per group before scaling (mxf4 / mxf4nvf4: 16), None otherwise;
    zero_exp_policy / e_floor: switches for open questions Q2 / Q1 (module docstring);
    group_exp_policy (group-scaled kinds only): which group terms take part in E with their scale
    exponent.  'products' [default, MMA-Sim gst_fdpa]: every group with at least one non-zero product
    (and a non-zero scale product), even when its exact sum cancels to 0 -- such a group still
    raises E and so can wipe out smaller groups and C.  'sum': only groups whose exact sum is
    non-zero (tcsim before the mmasim oracle campaign; an extrapolation of the H100 'drop' rule).
    See tests/golden/mmasim_oracle/README.md for the evidence;
    lowering: None (one tensor-core operation) or LOWER_FP8_VIA_F16 (the instruction is emulated
    by the compiler with f16 tensor-core operations; see that constant).
    """

    arch: str
    path: str
    in_fmt: str
    block: int
    frac_bits: int
    out_trunc_frac: Optional[int] = None
    group: Optional[int] = None
    zero_exp_policy: str = "drop"
    e_floor: Optional[int] = E_FLOOR_F32_OUT
    lowering: Optional[str] = None   # LOWER_FP8_VIA_F16 for H100 mma.sync fp8, else None
    group_exp_policy: str = "products"

    def __post_init__(self):
        if self.block < 1 or self.frac_bits < 0:
            raise ValueError(f"bad block/frac_bits: {self.block}/{self.frac_bits}")
        if self.zero_exp_policy not in _ZERO_POLICIES:
            raise ValueError(f"zero_exp_policy must be one of {_ZERO_POLICIES}, got {self.zero_exp_policy!r}")
        if self.group is not None and (self.group < 1 or self.block % self.group):
            raise ValueError(f"group {self.group} must divide block {self.block}")
        if self.out_trunc_frac is not None and not 0 <= self.out_trunc_frac <= 23:
            raise ValueError(f"out_trunc_frac must be in 0..23, got {self.out_trunc_frac}")
        if self.lowering not in (None, LOWER_FP8_VIA_F16):
            raise ValueError(f"unknown lowering {self.lowering!r}")
        if self.group_exp_policy not in GROUP_EXP_POLICIES:
            raise ValueError(f"group_exp_policy must be one of {GROUP_EXP_POLICIES}, "
                             f"got {self.group_exp_policy!r}")


class _Entry(NamedTuple):
    in_fmts: tuple
    block: int
    frac_bits: int
    out_trunc_frac: Optional[int] = None
    group: Optional[int] = None
    lowering: Optional[str] = None
    e_floor: Optional[int] = E_FLOOR_F32_OUT


_F16 = ("f16", "bf16")
_F8 = ("e4m3", "e5m2")
_F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
_I8 = ("s8", "u8")

# (arch, path, kind) -> entry.  numerics.md "Parameters"; for mma.sync / wgmma the kind is implied
# by the input format ('f16', 'tf32', 'f8f6f4', 'i8').  Integer rows only carry block = K.
_TABLE = MappingProxyType({
    # H100: f16/bf16 block = whole instruction K (16; m16n8k8 has K = 8, which mma_float fuses as
    # one block since a block never extends past K), tf32 block 8, wgmma fp8 block 32 with F = 13
    # and the f32 output cut to e8m13 (all wgmma rows measured on an H100, tests/golden/wgmma_numerics).
    # mma.sync fp8 is not a native operation on sm_90a: ptxas
    # emulates it with two f16 HMMAs (block 16, F = 25) and an IEEE add of C (LOWER_FP8_VIA_F16;
    # SASS read on an H100 with CUDA 13.0 and 192k random outputs compared bit for bit; the CI record
    # is tests/golden/mma_sync_fp8).  The bf16/tf32 floor -133 holds for wgmma too
    # (tests/golden/wgmma_numerics/targeted_floor.npz).
    ("sm_90a", "mma.sync", "f16"): _Entry(_F16, 16, 25),
    ("sm_90a", "mma.sync", "tf32"): _Entry(("tf32",), 8, 25),
    ("sm_90a", "mma.sync", "f8f6f4"): _Entry(_F8, 16, 25, None, None, LOWER_FP8_VIA_F16),
    ("sm_90a", "mma.sync", "i8"): _Entry(_I8, 32, 0),
    # wgmma rows: every combination measured on an H100 (module docstring, tests/golden/wgmma_numerics)
    ("sm_90a", "wgmma", "f16"): _Entry(_F16, 16, 25),
    ("sm_90a", "wgmma", "tf32"): _Entry(("tf32",), 8, 25),
    ("sm_90a", "wgmma", "f8f6f4"): _Entry(_F8, 32, 13, 13),
    ("sm_90a", "wgmma", "i8"): _Entry(_I8, 32, 0),
    # B200 tcgen05.mma kinds
    ("sm_100a", "tcgen05", "f16"): _Entry(_F16, 16, 25),
    ("sm_100a", "tcgen05", "tf32"): _Entry(("tf32",), 8, 25),
    ("sm_100a", "tcgen05", "f8f6f4"): _Entry(_F8F6F4, 32, 25),             # fp6/fp4 provisional (Q4)
    ("sm_100a", "tcgen05", "mxf8f6f4"): _Entry(_F8F6F4, 32, 25),           # fp6/fp4 provisional (Q4)
    ("sm_100a", "tcgen05", "mxf4"): _Entry(("e2m1",), 64, 35, None, 16, None, E_FLOOR_F32_OUT_GROUPED),
    ("sm_100a", "tcgen05", "mxf4nvf4"): _Entry(("e2m1",), 64, 35, None, 16, None, E_FLOOR_F32_OUT_GROUPED),
    ("sm_100a", "tcgen05", "i8"): _Entry(_I8, 32, 0),
    # B200 legacy mma.sync: f16/bf16 as kind::f16 (numerics.md); tf32 and fp8 extrapolated.
    ("sm_100a", "mma.sync", "f16"): _Entry(_F16, 16, 25),
    ("sm_100a", "mma.sync", "tf32"): _Entry(("tf32",), 8, 25),             # provisional (Q4)
    ("sm_100a", "mma.sync", "f8f6f4"): _Entry(_F8, 32, 25),                # provisional (Q4)
    ("sm_100a", "mma.sync", "i8"): _Entry(_I8, 32, 0),
})

_PROVISIONAL = MappingProxyType({
    ("sm_100a", "mma.sync", "tf32"): "B200 mma.sync tf32 parameters copied from tcgen05 kind::tf32",
    ("sm_100a", "mma.sync", "f8f6f4"): "B200 mma.sync fp8 parameters copied from tcgen05 kind::f8f6f4",
})
_FP6_FP4 = ("e3m2", "e2m3", "e2m1")

_IMPLIED_KIND = MappingProxyType({
    "f16": "f16", "bf16": "f16", "tf32": "tf32", "e4m3": "f8f6f4", "e5m2": "f8f6f4",
    "e3m2": "f8f6f4", "e2m3": "f8f6f4", "e2m1": "f8f6f4", "s8": "i8", "u8": "i8",
})


def tc_params(arch: str, path: str, in_fmt: str, kind: Optional[str] = None) -> TensorCoreParams:
    """Parameters of the tensor-core path (numerics.md "Parameters" table); ValueError if unknown.

    arch: 'sm_90a' | 'sm_100a'; path: 'mma.sync' | 'wgmma' | 'tcgen05'; in_fmt: A/B element format.
    kind: the tcgen05.mma ``.kind`` without prefix ('f16', 'tf32', 'f8f6f4', 'mxf8f6f4', 'mxf4',
    'mxf4nvf4', 'i8'); when None it is implied by in_fmt ('f8f6f4' for fp8/fp6/fp4).  For mma.sync
    and wgmma kind must be None or the implied kind.  Policy switches get their documented defaults
    (zero_exp_policy='drop', e_floor=-133); use dataclasses.replace to change them.
    """
    if in_fmt not in _IMPLIED_KIND:
        raise ValueError(f"unknown tensor-core input format {in_fmt!r}")
    implied = _IMPLIED_KIND[in_fmt]
    if kind is None:
        kind = implied
    elif path != "tcgen05" and kind != implied:
        raise ValueError(f"{path} has no kind {kind!r} (input {in_fmt} implies {implied!r})")
    entry = _TABLE.get((arch, path, kind))
    if entry is None:
        raise ValueError(f"no tensor-core parameters for arch={arch!r} path={path!r} kind={kind!r}")
    if in_fmt not in entry.in_fmts:
        raise ValueError(f"{arch} {path} kind::{kind} does not take {in_fmt} (takes {entry.in_fmts})")
    return TensorCoreParams(arch, path, in_fmt, entry.block, entry.frac_bits, entry.out_trunc_frac,
                            entry.group, e_floor=entry.e_floor, lowering=entry.lowering)


def provisional_reason(params: TensorCoreParams, kind: Optional[str] = None) -> Optional[str]:
    """Why the table entry behind ``params`` is extrapolated rather than taken from numerics.md
    (open question 4), or None when it is a documented row."""
    kind = kind or _IMPLIED_KIND.get(params.in_fmt)
    why = _PROVISIONAL.get((params.arch, params.path, kind))
    if why is None and params.in_fmt in _FP6_FP4 and params.group is None:
        why = "fp6/fp4 inside kind::f8f6f4 / mxf8f6f4 is untested by both public models (numerics.md Q4)"
    return why


def effective_e_floor(params: TensorCoreParams, acc_fmt: str) -> Optional[int]:
    """The floor on E for this output format (numerics.md open question 1): params.e_floor is the
    f32-output floor (Khattak: -133 = emin(f32) - 7); for f16 output it moves with the output's
    minimum exponent (-133 + (-14 - -126) = -21, the value numerics.md quotes).  Both values were
    measured on an H100 (module docstring)."""
    if params.e_floor is None:
        return None
    _acc_check(acc_fmt)
    return params.e_floor + (lowp_format(acc_fmt).emin - lowp_format("f32").emin)


# ---- helpers ------------------------------------------------------------------------------------
def _acc_check(acc_fmt: str) -> None:
    if acc_fmt not in ACC_FORMATS:
        raise ValueError(f"accumulator format must be one of {ACC_FORMATS}, got {acc_fmt!r}")


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Exact bit length of non-negative int64 values below 2**62 (0 -> 0)."""
    _, e = np.frexp(x.astype(np.float64))
    e = e.astype(np.int64)
    # float64 rounding can carry x up to the next power of two; undo that off-by-one.
    high = np.right_shift(x, np.maximum(e - 1, 0))
    return e - ((high == 0) & (x > 0))


def _round_pack(T: np.ndarray, lsb_exp: np.ndarray, acc_fmt: str, prec_frac: Optional[int] = None,
                overflow_to_inf: bool = F32_RZ_OVERFLOW_TO_INF) -> np.ndarray:
    """Round the exact value T * 2**lsb_exp once to acc_fmt (numerics.md step 5) and encode it.

    f32: round toward zero with subnormals; `prec_frac` < 23 cuts the significand to that many
    fraction bits first (e8m13).  f16: round to nearest even.  Every zero result is +0 (T == 0, and a
    non-zero T that rounds to zero).  Overflow: f16 -> +-Inf (RNE); f32 RZ -> +-Inf if
    overflow_to_inf else +-max-finite.
    """
    fmt = lowp_format(acc_fmt)
    man, rne = fmt.man_bits, OUTPUT_ROUNDING[acc_fmt] == "rne"
    p_frac = man if prec_frac is None else min(prec_frac, man)
    neg = T < 0
    mag = np.abs(T)
    zero = mag == 0
    lead = _bit_length(mag) - 1 + lsb_exp            # exponent of the leading bit
    q = np.maximum(lead, fmt.emin) - p_frac           # exponent of the result's last kept bit
    s = q - lsb_exp                                   # number of bits dropped (<= 0: exact)
    up_sh = np.clip(-s, 0, 62)
    dn_sh = np.clip(s, 0, 62)
    r = np.right_shift(np.left_shift(mag, up_sh), dn_sh)
    if rne:
        # dropped part rem = mag mod 2**dn_sh; halfway point 2**(dn_sh-1).  With dn_sh == 0 nothing
        # is dropped (rem = 0 < half = 1).  dn_sh is clipped at 62 > bit_length(mag), so a huge
        # drop correctly leaves r = 0 and rem = mag < half.
        rem = np.where(dn_sh > 0, mag - np.left_shift(r, dn_sh), 0)
        half = np.left_shift(np.int64(1), np.maximum(dn_sh - 1, 0))
        r = r + ((dn_sh > 0) & ((rem > half) | ((rem == half) & ((r & 1) == 1))))
    # re-express at f32/f16 precision (e8m13 results get zero low bits)
    r = np.left_shift(r, man - p_frac)
    q = q - (man - p_frac)
    carry = r >> (man + 1) != 0                       # rounding carried to 2**(man+1)
    r = np.where(carry, r >> 1, r)
    q = q + carry
    normal = r >= (1 << man)
    field = np.where(normal, q + man + fmt.bias, 0)
    mant = np.where(normal, r - (1 << man), r)
    top = (1 << fmt.exp_bits) - 1
    over = field >= top
    if over.any():
        if rne or overflow_to_inf:
            field = np.where(over, top, field)
            mant = np.where(over, 0, mant)
        else:
            field = np.where(over, top - 1, field)
            mant = np.where(over, (1 << man) - 1, mant)
    bits = (field << man) | mant
    # a zero result is +0, also when a non-zero negative sum rounds to zero (H100 mma.sync, see
    # ZERO_RESULT_IS_POSITIVE); otherwise the sign of the sum
    bits = np.where(neg & (bits != 0), bits | (1 << (fmt.width - 1)), bits)
    bits = np.where(zero, 0, bits)
    return bits.astype(_ACC_DTYPE[acc_fmt])


class _Terms(NamedTuple):
    """Terms of a fused sum, arrays broadcastable to (M, n, N): value = (-1)**neg * sig * 2**(exp-frac).
    live: which terms take part in E (None: the non-zero ones); a live term may have sig == 0
    (a cancelled mxf4 group under group_exp_policy='products')."""

    neg: np.ndarray
    exp: np.ndarray
    sig: np.ndarray
    frac: int
    live: Optional[np.ndarray] = None


def _check_headroom(terms: _Terms, c_sig_bits: int, c_frac: int, F: int) -> None:
    """Run-time form of the module docstring's int64 argument: every aligned term is below
    2**(F + k) with k = bit_length(sig) - frac, so the sum of n terms is below 2**(F + k + log2 n)."""
    n = terms.sig.shape[1] + 1
    k = max(int(terms.sig.max(initial=0)).bit_length() - terms.frac, c_sig_bits - c_frac, 0)
    if F + k + int(n - 1).bit_length() > 62:
        raise OverflowError(f"fused sum of {n} terms with F={F} could overflow int64")


def _fused_sum(terms: _Terms, C: Decoded, acc_fmt: str, params: TensorCoreParams) -> np.ndarray:
    """Steps 3-5 of the fused block model (numerics.md) for finite inputs: E, truncating alignment,
    exact sum, single rounding.  terms: (M, n, N); C: (M, N).  Returns acc_fmt bit patterns."""
    F = params.frac_bits
    _check_headroom(terms, C.man_bits + 1, C.man_bits, F)
    zero_exp = _DROPPED if params.zero_exp_policy == "drop" else ZERO_EXP_MIN
    dead = terms.sig == 0 if terms.live is None else ~terms.live
    t_exp = np.where(dead, zero_exp, terms.exp)
    c_exp = np.where(C.sig == 0, zero_exp, C.exp)
    E = np.maximum(t_exp.max(axis=1, initial=_DROPPED), c_exp)
    floor = effective_e_floor(params, acc_fmt)
    if floor is not None:
        E = np.maximum(E, floor)

    def align(sig, exp, frac, E_):
        sh = F + exp - E_ - frac
        return np.right_shift(np.left_shift(sig, np.clip(sh, 0, 62)), np.clip(-sh, 0, 63))

    t_al = align(terms.sig, t_exp, terms.frac, E[:, None, :])
    T = np.where(terms.neg, -t_al, t_al).sum(axis=1)
    c_al = align(C.sig, c_exp, C.man_bits, E)
    T = T + np.where(C.sign, -c_al, c_al)
    prec = params.out_trunc_frac if acc_fmt == "f32" else None
    return _round_pack(T, E - F, acc_fmt, prec)


def _special_results(L: Decoded, R: Decoded, C: Decoded, acc_fmt: str, bits: np.ndarray) -> np.ndarray:
    """Step 1 of the model (numerics.md): overwrite bits where a NaN / Inf decides the result.
    L: (M, n) left factors, R: (n, N) right factors, C: (M, N)."""
    if not (L.nan.any() or L.inf.any() or R.nan.any() or R.inf.any() or C.nan.any() or C.inf.any()):
        return bits
    lz = (L.sig == 0) & ~L.nan & ~L.inf
    rz = (R.sig == 0) & ~R.nan & ~R.inf
    pnan = (L.nan[:, :, None] | R.nan[None] | (L.inf[:, :, None] & rz[None])
            | (lz[:, :, None] & R.inf[None]))
    pinf = (L.inf[:, :, None] | R.inf[None]) & ~pnan
    pneg = L.sign[:, :, None] ^ R.sign[None]
    pos = (pinf & ~pneg).any(axis=1) | (C.inf & ~C.sign)
    negi = (pinf & pneg).any(axis=1) | (C.inf & C.sign)
    nan = pnan.any(axis=1) | C.nan | (pos & negi)
    inf = (pos | negi) & ~nan
    width = lowp_format(acc_fmt).width
    inf_bits = lowp_format(acc_fmt).exp_bits
    inf_code = ((1 << inf_bits) - 1) << (width - 1 - inf_bits)
    out = np.where(inf, np.where(negi, inf_code | (1 << (width - 1)), inf_code), bits)
    out = np.where(nan, CANONICAL_NAN[acc_fmt], out)
    return out.astype(bits.dtype)


def _slice(D: Decoded, idx, axis: int) -> Decoded:
    sl = (slice(None), idx) if axis == 1 else (idx, slice(None))
    return Decoded(D.sign[sl], D.exp[sl], D.sig[sl], D.nan[sl], D.inf[sl], D.man_bits)


def _scaled(D: Decoded, S: Decoded) -> Decoded:
    """Element times its (unsigned) scale factor, exactly: significands multiply, exponents add
    (numerics.md "Block-scaled kinds").  NaN scale -> NaN; Inf element with zero scale -> NaN."""
    s_zero = (S.sig == 0) & ~S.nan
    nan = D.nan | S.nan | (D.inf & s_zero)
    inf = D.inf & ~nan
    sig = np.where(nan | inf, 0, D.sig * S.sig)
    return Decoded(D.sign, D.exp + S.exp, sig, nan, inf, D.man_bits + S.man_bits)


def _check_shapes(a, b, c):
    if a.ndim != 2 or b.ndim != 2 or c.ndim != 2:
        raise ValueError("A, B, C must be 2-D (M,K), (K,N), (M,N)")
    M, K = a.shape
    if b.shape[0] != K or c.shape != (M, b.shape[1]):
        raise ValueError(f"shape mismatch: A {a.shape}, B {b.shape}, C {c.shape}")
    if K == 0:
        raise ValueError("K must be positive")
    return M, K, b.shape[1]


def _acc_bits(c_bits, acc_fmt: str) -> np.ndarray:
    """C as acc_fmt bit patterns in their unsigned container; rejects float values and codes that
    do not fit (a float array here is almost certainly values passed instead of bits)."""
    c = np.asarray(c_bits)
    width = lowp_format(acc_fmt).width
    if c.dtype.kind not in "iu" or (c.size and (int(c.min()) < 0 or int(c.max()) >> width)):
        raise ValueError(f"C must hold {acc_fmt} bit patterns (unsigned {width}-bit integers)")
    return c.astype(_ACC_DTYPE[acc_fmt])


def _check_in_fmt(fmt: str, params: TensorCoreParams) -> None:
    kind = _IMPLIED_KIND.get(fmt)
    if kind is None or kind == "i8":
        raise ValueError(f"{fmt!r} is not a floating-point tensor-core input format")
    if kind != _IMPLIED_KIND[params.in_fmt]:
        raise ValueError(f"operand format {fmt} does not match params for {params.in_fmt}")
    if kind in ("f16", "tf32") and fmt != params.in_fmt:
        # PTX: for .f16/.bf16/.tf32 MMAs atype == btype; only the f8f6f4 family mixes formats
        raise ValueError(f"operand format {fmt} must equal {params.in_fmt} for this MMA")


# ---- public entry points ------------------------------------------------------------------------
def mma_float(a_bits, b_bits, c_bits, a_fmt: str, b_fmt: str, acc_fmt: str,
              params: TensorCoreParams) -> np.ndarray:
    """D = A*B + C with the fused block model (numerics.md "The fused block model", steps 1-6).

    a_bits (M,K) and b_bits (K,N): raw codes of a_fmt / b_fmt (tf32: f32 patterns, low 13 bits
    ignored); c_bits (M,N): acc_fmt patterns (uint32 for 'f32', uint16 for 'f16').  Blocks of
    params.block products along K are fused and chained in K order.  Returns (M,N) acc_fmt bit
    patterns.  PTX ISA §9.7.14 / §9.7.15 / §9.7.16 leave the numerics unspecified; this is the
    Khattak / MMA-Sim model.  Runs the compiled kernel where numba is installed (bit for bit
    :func:`mma_float_reference`; see :mod:`tcsim.numerics.jit`).
    """
    return _mma_float(a_bits, b_bits, c_bits, a_fmt, b_fmt, acc_fmt, params, jit.kernels())


def mma_float_reference(a_bits, b_bits, c_bits, a_fmt: str, b_fmt: str, acc_fmt: str,
                        params: TensorCoreParams) -> np.ndarray:
    """:func:`mma_float` by the numpy reference only (the specification the compiled kernel is tested against)."""
    return _mma_float(a_bits, b_bits, c_bits, a_fmt, b_fmt, acc_fmt, params, None)


def _mma_float(a_bits, b_bits, c_bits, a_fmt, b_fmt, acc_fmt, params, kern) -> np.ndarray:
    _acc_check(acc_fmt)
    _check_in_fmt(a_fmt, params)
    _check_in_fmt(b_fmt, params)
    if params.group is not None:
        raise ValueError("group-scaled kinds (mxf4, mxf4nvf4) go through mma_block_scaled")
    a, b, c = np.asarray(a_bits), np.asarray(b_bits), _acc_bits(c_bits, acc_fmt)
    M, K, N = _check_shapes(a, b, c)
    if params.lowering == LOWER_FP8_VIA_F16:
        return _mma_fp8_via_f16(a, b, c, a_fmt, b_fmt, acc_fmt, params, kern)
    if kern is not None:
        out = _compiled_codes(kern, a, b, c, a_fmt, b_fmt, acc_fmt, params)
        if out is not None:
            return out
    A, B = decode(a, a_fmt), decode(b, b_fmt)
    return _chained_blocks(A, B, c, acc_fmt, params, params.block, kern)


def _code_params(x: np.ndarray, fmt: str):
    """(int64 codes, the kernel's format tuple) after lowp.decode's checks, or None for codes decode would
    reject (the reference then raises its error)."""
    f = lowp_format(fmt)
    if x.dtype.kind not in "iu":
        return None
    if (x.dtype.kind == "i" or x.dtype.itemsize * 8 > f.width) and x.size and \
            (int(x.min()) < 0 or int(x.max()) >> f.width):
        return None
    has_sign = f.signed and not f.ignore_sign
    return (np.ascontiguousarray(x, dtype=np.int64),
            np.array([f.man_bits, f.exp_bits, f.bias, _SPECIALS_CODE[f.specials], has_sign, f.ignore_low],
                     np.int64))


_SPECIALS_CODE = {"ieee": 0, "fn": 1, "none": 2, "e8m0": 3}      # jit_kernels._SPECIALS


def _compiled_codes(kern, a, b, c, a_fmt, b_fmt, acc_fmt, params, block=None):
    """mma_float by one compiled call from the raw codes (decode included), or None where the reference decides
    (codes out of range, or int64 headroom not guaranteed by the formats: sig < 2**(man + 1) per operand, so a
    product's k is 2)."""
    block = params.block if block is None else block
    n = min(block, a.shape[1])
    if params.frac_bits + 2 + int(n).bit_length() > 62:
        return None
    pa, pb = _code_params(a, a_fmt), _code_params(b, b_fmt)
    if pa is None or pb is None:
        return None
    (zero_exp, has_floor, floor, man, exp_bits, bias, width, rne, p_frac, ovf, nan_code) = \
        _acc_geometry(acc_fmt, params)
    fn = kern.mma_float_codes_f64 if _f64_exact(pa[1], pb[1], params.frac_bits, n) else kern.mma_float_codes
    out = fn(pa[0], pb[0], _i64(c), pa[1], pb[1], int(block), params.frac_bits, zero_exp,
             has_floor, floor, man, exp_bits, bias, width, rne, p_frac, ovf, nan_code)
    return out.astype(_ACC_DTYPE[acc_fmt])


def _f64_exact(fa, fb, frac_bits: int, n: int) -> bool:
    """Whether ``jit_kernels.fused_float_rows_f64`` is exact for these formats (fa / fb: the kernel's format
    tuples, man bits first): each product of two significands (at most man + 1 bits each) is an exact float64, and
    every aligned product term (below 2**(frac_bits + 2)) and the sum of ``n`` of them stay below 2**53."""
    return int(fa[0]) + int(fb[0]) + 2 <= 53 and frac_bits + 2 + int(n).bit_length() <= 52


def _chained_blocks(L: Decoded, R: Decoded, c: np.ndarray, acc_fmt: str, params: TensorCoreParams,
                    block: int, kern) -> np.ndarray:
    """Blocks of ``block`` products along K (L: (M, K), R: (K, N)), each fused with C (_product_block), chained
    in K order; by the compiled kernel when ``kern`` is given and the int64 headroom is guaranteed up front."""
    K = L.sig.shape[1]
    if kern is not None and _float_headroom_ok(L, R, acc_fmt, params, min(block, K)):
        return _compiled_float(kern, L, R, c, acc_fmt, params, block)
    for k0 in range(0, K, block):
        ks = slice(k0, min(k0 + block, K))
        c = _product_block(_slice(L, ks, 1), _slice(R, ks, 0), c, acc_fmt, params)
    return c


def _bits_of_max(x: np.ndarray) -> int:
    return int(np.max(x, initial=0)).bit_length()


def _float_headroom_ok(L: Decoded, R: Decoded, acc_fmt: str, params: TensorCoreParams, n: int) -> bool:
    """The bound _check_headroom checks, from the operands' largest significands (>= every product's): when it
    holds, no block can overflow int64 and no block would raise, so the compiled kernel may run."""
    # k as in _check_headroom: C's significand contributes (man + 1) - man = 1
    k = max(_bits_of_max(L.sig) + _bits_of_max(R.sig) - (L.man_bits + R.man_bits), 1, 0)
    return params.frac_bits + k + int(n).bit_length() <= 62


def _acc_geometry(acc_fmt: str, params: TensorCoreParams) -> tuple:
    fmt = lowp_format(acc_fmt)
    prec = params.out_trunc_frac if acc_fmt == "f32" else None
    p_frac = fmt.man_bits if prec is None else min(prec, fmt.man_bits)
    floor = effective_e_floor(params, acc_fmt)
    zero_exp = _DROPPED if params.zero_exp_policy == "drop" else ZERO_EXP_MIN
    return (zero_exp, floor is not None, 0 if floor is None else floor, fmt.man_bits, fmt.exp_bits, fmt.bias,
            fmt.width, OUTPUT_ROUNDING[acc_fmt] == "rne", p_frac, F32_RZ_OVERFLOW_TO_INF, CANONICAL_NAN[acc_fmt])


def _i64(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.int64)


def _b(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.bool_)


def _compiled_float(kern, L: Decoded, R: Decoded, c, acc_fmt, params, block) -> np.ndarray:
    (zero_exp, has_floor, floor, man, exp_bits, bias, width, rne, p_frac, ovf, nan_code) = \
        _acc_geometry(acc_fmt, params)
    out = kern.fused_float_rows(_b(L.sign), _i64(L.exp), _i64(L.sig), _b(L.nan), _b(L.inf),
                                _b(R.sign), _i64(R.exp), _i64(R.sig), _b(R.nan), _b(R.inf), _i64(c),
                                int(block), L.man_bits + R.man_bits, params.frac_bits, zero_exp, has_floor, floor,
                                man, exp_bits, bias, width, rne, p_frac, ovf, nan_code)
    return out.astype(_ACC_DTYPE[acc_fmt])


def _f16_codes(bits, fmt: str) -> np.ndarray:
    """fp8 codes -> f16 codes (exact: e4m3 and e5m2 are subsets of f16; NaN stays NaN)."""
    x = np.asarray(bits)
    if x.dtype == np.uint8 and x.ndim and lowp_format(fmt).width == 8:
        return _f16_code_table(fmt)[x]             # the same conversion, of every byte code once
    with np.errstate(invalid="ignore"):
        return to_float64(bits, fmt).astype(np.float16).view(np.uint16)


@functools.lru_cache(maxsize=None)
def _f16_code_table(fmt: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        t = to_float64(np.arange(1 << lowp_format(fmt).width), fmt).astype(np.float16).view(np.uint16)
    t.flags.writeable = False
    return t


def _ieee_add(c: np.ndarray, p: np.ndarray, acc_fmt: str) -> np.ndarray:
    """C + P with IEEE round to nearest even and subnormals (SASS FADD / HADD2 without .FTZ);
    a NaN result is the canonical NaN."""
    with np.errstate(all="ignore"):
        if acc_fmt == "f32":
            s = c.view(np.float32) + p.view(np.float32)          # numpy f32 add: one IEEE rounding
            out = s.view(np.uint32)
        else:
            # the exact sum of two f16 values fits a float64, so this rounds once
            s = (c.view(np.float16).astype(np.float64) + p.view(np.float16).astype(np.float64))
            s = s.astype(np.float16)
            out = s.view(np.uint16)
    return np.where(np.isnan(s), CANONICAL_NAN[acc_fmt], out).astype(_ACC_DTYPE[acc_fmt])


def _mma_fp8_via_f16(a, b, c, a_fmt, b_fmt, acc_fmt, params, kern=None) -> np.ndarray:
    """H100 mma.sync fp8 as ptxas lowers it (LOWER_FP8_VIA_F16): per instruction K of 32 (or a
    final 16, the m16n8k16 form), fused f16 block over k%4 in {0,1} from +0, chained fused f16 block
    over k%4 in {2,3}, then D = C + P rounded to nearest even."""
    a16, b16 = _f16_codes(a, a_fmt), _f16_codes(b, b_fmt)
    A = B = None
    K = a.shape[1]
    for k0 in range(0, K, _FP8_INSTR_K):
        ks = np.arange(k0, min(k0 + _FP8_INSTR_K, K))
        p = np.zeros(c.shape, dtype=_ACC_DTYPE[acc_fmt])
        for half in ((ks - k0) % 4 < 2, (ks - k0) % 4 >= 2):
            kk = ks[half]
            fast = None
            if len(kk) and kern is not None:      # the half fused as one block, from the f16 codes
                fast = _compiled_codes(kern, a16[:, kk], b16[kk], p, "f16", "f16", acc_fmt, params, len(kk))
            if fast is not None:
                p = fast
                continue
            if A is None:
                A, B = decode(a16, "f16"), decode(b16, "f16")
            if len(kk):
                p = _chained_blocks(_slice(A, kk, 1), _slice(B, kk, 0), p, acc_fmt, params, len(kk), kern)
            else:                           # an empty half (K % 32 in {1, 2}) still re-rounds P
                p = _product_block(_slice(A, kk, 1), _slice(B, kk, 0), p, acc_fmt, params)
        c = _ieee_add(c, p, acc_fmt)
    return c


def _product_block(L: Decoded, R: Decoded, c: np.ndarray, acc_fmt: str,
                   params: TensorCoreParams) -> np.ndarray:
    C = decode(c, acc_fmt)
    terms = _Terms(L.sign[:, :, None] ^ R.sign[None],
                   L.exp[:, :, None] + R.exp[None],
                   L.sig[:, :, None] * R.sig[None],
                   L.man_bits + R.man_bits)
    bits = _fused_sum(terms, C, acc_fmt, params)
    return _special_results(L, R, C, acc_fmt, bits)


def mma_block_scaled(a_bits, b_bits, c_bits, sfa_bits, sfb_bits, a_fmt: str, b_fmt: str,
                     scale_fmt: str, scale_block: int, params: TensorCoreParams) -> np.ndarray:
    """D = (A*SFA)(B*SFB) + C for tcgen05.mma block-scaled kinds (numerics.md "Block-scaled kinds";
    PTX ISA §9.7.16 "Block scaling").

    sfa_bits (M, K//scale_block) and sfb_bits (K//scale_block, N): ue8m0 / ue4m3 codes; element k
    of a row of A uses sfa[:, k // scale_block].  params.group None (kind::mxf8f6f4): each product's
    exponent gets both scale exponents added (scale significands multiply in), then the block of
    params.block products and C is fused with F = params.frac_bits.  params.group = G (kind::mxf4,
    mxf4nvf4): each group of G products is summed exactly; each group sum becomes one term whose
    significand is (group sum) * (scale significands) and whose exponent is the sum of the two scale
    exponents (MMA-Sim's formulation); the groups of a block and C are fused with F = frac_bits.
    A NaN scale gives NaN.  The block-scaled kinds accumulate in f32 only (PTX ISA §9.7.16), so
    c_bits are f32 patterns and the result is (M,N) uint32 f32 patterns; blocks chained in K order.
    Runs the compiled kernel where numba is installed (bit for bit :func:`mma_block_scaled_reference`).
    """
    return _mma_block_scaled(a_bits, b_bits, c_bits, sfa_bits, sfb_bits, a_fmt, b_fmt, scale_fmt, scale_block,
                             params, jit.kernels())


def mma_block_scaled_reference(a_bits, b_bits, c_bits, sfa_bits, sfb_bits, a_fmt: str, b_fmt: str,
                               scale_fmt: str, scale_block: int, params: TensorCoreParams) -> np.ndarray:
    """:func:`mma_block_scaled` by the numpy reference only."""
    return _mma_block_scaled(a_bits, b_bits, c_bits, sfa_bits, sfb_bits, a_fmt, b_fmt, scale_fmt, scale_block,
                             params, None)


def _mma_block_scaled(a_bits, b_bits, c_bits, sfa_bits, sfb_bits, a_fmt, b_fmt, scale_fmt, scale_block, params,
                      kern) -> np.ndarray:
    acc_fmt = "f32"                        # block-scaled kinds accumulate in f32 only
    _check_in_fmt(a_fmt, params)
    _check_in_fmt(b_fmt, params)
    if scale_fmt not in ("ue8m0", "ue4m3"):
        raise ValueError(f"scale format must be ue8m0 or ue4m3, got {scale_fmt!r}")
    a, b, c = np.asarray(a_bits), np.asarray(b_bits), _acc_bits(c_bits, acc_fmt)
    M, K, N = _check_shapes(a, b, c)
    if scale_block < 1 or K % scale_block:
        raise ValueError(f"K={K} is not a multiple of scale_block={scale_block}")
    sfa, sfb = np.asarray(sfa_bits), np.asarray(sfb_bits)
    if sfa.shape != (M, K // scale_block) or sfb.shape != (K // scale_block, N):
        raise ValueError(f"scale shapes {sfa.shape}, {sfb.shape}; expected "
                         f"{(M, K // scale_block)}, {(K // scale_block, N)}")
    G = params.group
    if G is not None and (scale_block % G or K % G):
        raise ValueError(f"group {G} must divide scale_block {scale_block} and K {K}")
    if G is not None and kern is not None:
        out = _compiled_group_codes(kern, a, b, c, sfa, sfb, a_fmt, b_fmt, scale_fmt, scale_block, acc_fmt, params)
        if out is not None:
            return out
    A, B = decode(a, a_fmt), decode(b, b_fmt)
    SA, SB = decode(sfa, scale_fmt), decode(sfb, scale_fmt)
    kidx = np.arange(K) // scale_block
    SAk, SBk = _slice(SA, kidx, 1), _slice(SB, kidx, 0)        # scales per element of K
    AL, BR = _scaled(A, SAk), _scaled(B, SBk)
    if G is None:
        return _chained_blocks(AL, BR, c, acc_fmt, params, params.block, kern)
    base = lowp_format(a_fmt).emin + lowp_format(b_fmt).emin
    if kern is not None:
        out = _compiled_group(kern, A, B, SAk, SBk, AL, BR, c, acc_fmt, params, a_fmt, b_fmt)
        if out is not None:
            return out
    for k0 in range(0, K, params.block):
        ks = slice(k0, min(k0 + params.block, K))
        c = _group_block(_slice(A, ks, 1), _slice(B, ks, 0), _slice(SAk, ks, 1),
                         _slice(SBk, ks, 0), _slice(AL, ks, 1), _slice(BR, ks, 0), c, acc_fmt,
                         params, base)
    return c


def _compiled_group_codes(kern, a, b, c, sfa, sfb, a_fmt, b_fmt, scale_fmt, scale_block, acc_fmt, params):
    """The group kinds from the raw codes in one compiled call (decode, scaling and :func:`_compiled_group`'s
    preparation included: ``jit_kernels.mma_group_codes``), or None where the numpy path must decide (codes decode
    would reject, a custom F, headroom the data does not guarantee)."""
    if not params.frac_bits <= 62:
        return None
    pa, pb = _code_params(a, a_fmt), _code_params(b, b_fmt)
    psa, psb = _code_params(sfa, scale_fmt), _code_params(sfb, scale_fmt)
    if pa is None or pb is None or psa is None or psb is None:
        return None
    (zero_exp, has_floor, floor, man, exp_bits, bias, width, _rne, p_frac, ovf, nan_code) = \
        _acc_geometry(acc_fmt, params)
    ok, out = kern.mma_group_codes(pa[0], pb[0], _i64(c), psa[0], psb[0], pa[1], pb[1], psa[1], int(scale_block),
                                   int(params.group), int(params.block), params.frac_bits, zero_exp,
                                   params.group_exp_policy == "products", has_floor, floor, man, exp_bits, bias,
                                   width, p_frac, ovf, nan_code, lowp_format(a_fmt).emin, lowp_format(b_fmt).emin)
    return out.astype(_ACC_DTYPE[acc_fmt]) if ok else None


def _compiled_group(kern, A, B, SAk, SBk, AL, BR, c, acc_fmt, params, a_fmt, b_fmt):
    """_group_block chained over K by the compiled kernel, or None where the int64 headroom is not
    guaranteed up front (the reference then decides, raising as it does)."""
    G = params.group
    K = A.sig.shape[1]
    ea, eb = lowp_format(a_fmt).emin, lowp_format(b_fmt).emin
    sha, shb = A.exp - ea, B.exp - eb                    # >= 0: every decoded exponent is >= emin
    if (_bits_of_max(A.sig) + int(np.max(sha, initial=0)) > 30
            or _bits_of_max(B.sig) + int(np.max(shb, initial=0)) > 30):
        return None
    a_int = np.left_shift(A.sig, sha)
    b_int = np.left_shift(B.sig, shb)
    gi = np.arange(0, K, G)
    sa, sb = _slice(SAk, gi, 1), _slice(SBk, gi, 0)
    frac = A.man_bits + B.man_bits - (ea + eb) + sa.man_bits + sb.man_bits
    gs_bits = _bits_of_max(a_int) + _bits_of_max(b_int) + int(G).bit_length()
    if gs_bits > 31:                                     # group sums in int32 (e2m1: 4 + 4 + 5 = 13 bits)
        return None
    k = max(gs_bits + _bits_of_max(sa.sig) + _bits_of_max(sb.sig) - frac, 1, 0)
    n_terms = min(params.block, K) // G
    if params.frac_bits + k + int(n_terms).bit_length() > 62:
        return None
    a_int = np.where(A.sign, -a_int, a_int)
    b_int = np.where(B.sign, -b_int, b_int)
    (zero_exp, has_floor, floor, man, exp_bits, bias, width, _rne, p_frac, ovf, nan_code) = \
        _acc_geometry(acc_fmt, params)
    out = kern.fused_group_rows(np.ascontiguousarray(a_int, np.int32), np.ascontiguousarray(b_int, np.int32), _i64(sa.sig), _i64(sa.exp), _i64(sb.sig), _i64(sb.exp),
                                _b(AL.sign), _i64(AL.sig), _b(AL.nan), _b(AL.inf),
                                _b(BR.sign), _i64(BR.sig), _b(BR.nan), _b(BR.inf), _i64(c),
                                int(G), int(params.block), int(frac), params.frac_bits, zero_exp,
                                params.group_exp_policy == "products", has_floor, floor, man, exp_bits, bias, width,
                                p_frac, ovf, nan_code)
    return out.astype(_ACC_DTYPE[acc_fmt])


def _group_block(A, B, SAk, SBk, AL, BR, c, acc_fmt, params, base: int) -> np.ndarray:
    """One block of kind::mxf4 / mxf4nvf4 (numerics.md "Block-scaled kinds", MMA-Sim gst_fdpa).
    base = emin(a_fmt) + emin(b_fmt) <= every product exponent."""
    G = params.group
    M, n = A.sig.shape
    N = B.sig.shape[1]
    C = decode(c, acc_fmt)
    # exact products on a common grid 2**(base - fa - fb): P = sa*sb << (ea + eb - base)
    P = np.left_shift(A.sig[:, :, None] * B.sig[None], A.exp[:, :, None] + B.exp[None] - base)
    P = np.where(A.sign[:, :, None] ^ B.sign[None], -P, P)
    Gs = P.reshape(M, n // G, G, N).sum(axis=2)                # exact group sums
    gi = np.arange(0, n, G)                                    # first element of each group
    sa, sb = _slice(SAk, gi, 1), _slice(SBk, gi, 0)
    sig = np.abs(Gs) * sa.sig[:, :, None] * sb.sig[None]
    live = None
    if params.group_exp_policy == "products":
        # a group with a non-zero product keeps its scale exponent in E even if its sum cancels
        nz = (A.sig[:, :, None] != 0) & (B.sig[None] != 0)
        live = nz.reshape(M, n // G, G, N).any(axis=2) & ((sa.sig[:, :, None] * sb.sig[None]) != 0)
    terms = _Terms(Gs < 0,
                   sa.exp[:, :, None] + sb.exp[None],
                   sig,
                   A.man_bits + B.man_bits - base + sa.man_bits + sb.man_bits,
                   live)
    bits = _fused_sum(terms, C, acc_fmt, params)
    return _special_results(AL, BR, C, acc_fmt, bits)


def mma_int(a, b, c, a_signed: bool, b_signed: bool, satfinite: bool) -> np.ndarray:
    """Integer MMA (kind::i8, mma.sync s8/u8): exact dot product plus C, then wrap modulo 2**32, or
    clamp to the int32 range when ``satfinite`` (PTX ISA §9.7.14 mma ".satfinite"; numerics.md
    "Integers").  Measured on an H100 (mma.sync m16n8k32 s8.s8 and u8.s8, 25.6k outputs each, C
    near the int32 limits): wraps without .satfinite, clamps with it, no intermediate clamping.

    a (M,K), b (K,N): 8-bit codes (uint8 or int8 arrays, or ints in -128..255) read as s8 when the
    *_signed flag is set, else u8; c (M,N): int32 values or their uint32 bit patterns.
    Returns an (M,N) int32 array.
    """
    def as8(x, signed):
        x = np.asarray(x)
        if x.dtype.kind not in "iu" or (x.size and (int(x.min()) < -128 or int(x.max()) > 255)):
            raise ValueError("integer MMA operands must be 8-bit codes")
        x = x.astype(np.int64) & 0xFF
        return (x ^ 0x80) - 0x80 if signed else x

    A, B = as8(a, a_signed), as8(b, b_signed)
    cc = np.asarray(c)
    if cc.dtype.kind not in "iu" or (cc.size and (int(cc.min()) < -(1 << 31) or int(cc.max()) >= 1 << 32)):
        raise ValueError("C must hold int32 values or uint32 bit patterns")
    C = cc.astype(np.int64)
    C = np.where(C >= 1 << 31, C - (1 << 32), C)
    _check_shapes(A, B, C)
    acc = A @ B + C                         # |A@B| <= K * 2**16: exact in int64
    if satfinite:
        acc = np.clip(acc, -(1 << 31), (1 << 31) - 1)
    else:
        acc = ((acc + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    return acc.astype(np.int32)


def mma_b1(a, b, c, op: str = "and") -> np.ndarray:
    """Single-bit MMA with ``.popc`` (PTX ISA §9.7.14 mma ``.b1`` ``.and.popc`` / ``.xor.popc``; §9.7.15
    wgmma ``.s32.b1.b1.and.popc``): D = C + popc(a_row OP b_col), wrapped modulo 2**32 (no ``.satfinite``
    exists for b1).

    a (M, K/8), b (K/8, N): packed bits as bytes (uint8), element k of a row / column in bit k%8 of byte k//8
    -- the popcount does not depend on the bit order as long as A and B use the same one; c (M, N): int32 values
    or their uint32 bit patterns.  Returns an (M, N) int32 array.  Measured on an H100 (wgmma m64n8k256 and
    m64n256k256 ``.and.popc``, tests/golden/wgmma_numerics): matches bit for bit, C near the int32 limits wraps.
    ``.xor`` (an mma.sync form; wgmma has only ``.and``) is implemented but not measured.
    """
    if op not in ("and", "xor"):
        raise ValueError(f"b1 MMA op must be 'and' or 'xor', got {op!r}")
    A, B = np.asarray(a), np.asarray(b)
    if A.dtype != np.uint8 or B.dtype != np.uint8:
        raise ValueError("b1 MMA operands must be packed bits in uint8 arrays")
    cc = np.asarray(c)
    if cc.dtype.kind not in "iu" or (cc.size and (int(cc.min()) < -(1 << 31) or int(cc.max()) >= 1 << 32)):
        raise ValueError("C must hold int32 values or uint32 bit patterns")
    C = cc.astype(np.int64)
    C = np.where(C >= 1 << 31, C - (1 << 32), C)
    Ab = np.unpackbits(A, axis=1).astype(np.int64)         # (M, K)
    Bb = np.unpackbits(B, axis=0).astype(np.int64)         # (K, N)
    _check_shapes(Ab, Bb, C)
    both = Ab @ Bb
    cnt = both if op == "and" else Ab.sum(axis=1)[:, None] + Bb.sum(axis=0)[None, :] - 2 * both
    acc = cnt + C
    return (((acc + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)).astype(np.int32)
