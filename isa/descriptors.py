"""tcgen05 descriptors as data: the 64-bit shared-memory matrix descriptor and the 32-bit instruction descriptors.

PTX ISA 9.1 §9.7.16.4.1 (shared memory descriptor), §9.7.16.4.2 (instruction descriptor, Tables 42 and 43),
§9.7.16.3 (leading / stride dimension byte offsets, canonical layouts), §9.7.16.3.3 (canonical layouts in CuTe
notation); tcgen05.md "Shared-memory matrix descriptor" / "Instruction descriptor"; tcgen05_layouts.md (b').

Everything here is pure: no machine state.  Each descriptor class has ``encode() -> int``, ``decode(int)`` and
``describe() -> str``; ``decode`` never rejects a value (every bit pattern has a field reading) -- the checks
that a value is *legal* for an instruction live in :mod:`tcsim.isa.tcgen05_rules`, because descriptors are register
values known only at execution time.

Shared-memory matrix descriptor (64-bit)::

    bits  0-13  start address  (addr & 0x3FFFF) >> 4
    bits 14-15  reserved (0)
    bits 16-29  leading dimension byte offset (LBO) >> 4   (absolute address >> 4 when bit 52 = 1, sm_103a)
    bits 30-31  reserved (0)
    bits 32-45  stride dimension byte offset (SBO) >> 4
    bits 46-48  fixed constant 0b001
    bits 49-51  matrix base offset
    bit  52     leading dimension stride mode: 0 relative offset, 1 absolute address
    bits 53-60  fixed constant 0
    bits 61-63  swizzle: 0 none, 1 128B with 32B atomic, 2 128B, 4 64B, 6 32B (3, 5, 7 invalid)

:func:`operand_addresses` is the address function the tensor pipe reads through: for a descriptor, an operand
of ``rows`` (M or N) x ``k`` elements of ``elem_bits`` bits, K-major or MN-major, it returns the absolute SMEM
byte offset (and the bit position inside that byte, for 4-bit packed elements) of every element, following the
canonical layouts (tcgen05_layouts.md (b'), PTX §9.7.16.3.3):

==========  ===========  =================================================================  ==========  ==========
major       swizzle (W)  linear byte address of (mn, k), ``kb = k*e``, ``mb = mn*e``          LBO         SBO
==========  ===========  =================================================================  ==========  ==========
K           none         ``start + (mn%8)*16 + (mn//8)*SBO + kb%16 + (kb//16)*LBO``           K chunk     8-row group
K           32/64/128    ``start + (mn%8)*W + (mn//8)*SBO + kb``   (kb < W)                   unused      8-row group
MN          none         ``start + mb%16 + (mb//16)*SBO + (k%8)*16 + (k//8)*LBO``            8-K group   16 B MN chunk
MN          32/64/128    ``start + mb%W + (mb//W)*LBO + (k%8)*W + (k//8)*SBO``               W-byte atom 8-K group
MN          128B/32B at  ``start + mb%128 + (mb//128)*LBO + (k%4)*128 + (k//4)*SBO``  (?)     128 B atom  4-K group
==========  ===========  =================================================================  ==========  ==========

then the swizzle of :mod:`tcsim.isa.swizzle` is applied to the *absolute* address (``none``; W=32 ``32B``;
W=64 ``64B``; W=128 ``128B``; mode 1 ``128B_atom_32B`` = CuTe ``Swizzle<2,5,2>``).  This is an inferred model
(tcgen05_layouts.md marks it (?)): advancing K inside a swizzle atom works by adding bytes to the start field,
as CUTLASS and DeepGEMM do.  The mode-1 (tf32 MN-major) atom of 4 K-rows x 128 B follows CUTLASS
``Layout_MN_SW128_32B_Atom`` (?).  A non-zero base offset and the absolute LBO mode are not modelled
(:class:`tcsim.isa.errors.UnsupportedError` / :class:`tcsim.isa.errors.VerifyError` from the rules module).
"""
from __future__ import annotations

import functools

from dataclasses import dataclass

import numpy as np

from .swizzle import swizzle as _swizzle

# ---------------------------------------------------------------------------------------------- helpers


def _bits(value: int, lo: int, width: int) -> int:
    return (int(value) >> lo) & ((1 << width) - 1)


def _put(value: int, lo: int, width: int, what: str) -> int:
    v = int(value)
    if v < 0 or v >> width:
        raise ValueError(f"{what} = {v} does not fit in {width} bits")
    return v << lo


# ---------------------------------------------------------------------------------------------- SMEM descriptor
#: swizzle code (bits 61-63) -> name; the names of the other codes say why they are invalid
SWIZZLE_CODES = {0: "none", 1: "128B_base32B", 2: "128B", 4: "64B", 6: "32B"}
SWIZZLE_BY_NAME = {v: k for k, v in SWIZZLE_CODES.items()}
#: descriptor swizzle name -> isa.swizzle mode name
SWIZZLE_FN = {"none": "none", "128B_base32B": "128B_atom_32B", "128B": "128B", "64B": "64B", "32B": "32B"}
#: row width W of a swizzle atom in bytes (none: a 16-byte core-matrix row)
SWIZZLE_WIDTH = {"none": 16, "128B_base32B": 128, "128B": 128, "64B": 64, "32B": 32}
#: bytes after which the swizzle pattern repeats (the "repeat boundary" of the base-offset rule)
SWIZZLE_REPEAT = {"none": 16, "128B_base32B": 512, "128B": 1024, "64B": 512, "32B": 256}

START_MASK = 0x3FFFF          # the start address field keeps address bits 4..17
FIXED_CONSTANT = 0b001        # bits 46-48


@dataclass(frozen=True)
class SmemDescriptor:
    """A tcgen05 shared-memory matrix descriptor (PTX ISA §9.7.16.4.1).

    ``start_address``, ``lbo``, ``sbo`` are in bytes (multiples of 16; the fields store them ``>> 4``).  ``swizzle``
    is a name of :data:`SWIZZLE_CODES`, or ``'invalid3'`` / ``'invalid5'`` / ``'invalid7'`` for the reserved
    codes (decode keeps them so a verifier can name the value).  ``fixed`` is bits 46-48 (must be 0b001),
    ``reserved`` the OR of bits 14-15, 30-31 and 53-60 shifted into place (must be 0).
    """

    start_address: int
    lbo: int = 16
    sbo: int = 0
    base_offset: int = 0
    lbo_mode: int = 0             # 0 relative byte offset, 1 absolute address (sm_103a)
    swizzle: str = "none"
    fixed: int = FIXED_CONSTANT
    reserved: int = 0             # raw reserved bits, in place

    # -------------------------------------------------------------------------------------- encoding
    def encode(self) -> int:
        for name in ("start_address", "lbo", "sbo"):
            v = getattr(self, name)
            if v % 16:
                raise ValueError(f"SMEM descriptor {name} = {v} is not a multiple of 16 bytes")
        if self.swizzle in SWIZZLE_BY_NAME:
            code = SWIZZLE_BY_NAME[self.swizzle]
        elif self.swizzle.startswith("invalid") and self.swizzle[7:].isdigit():
            code = int(self.swizzle[7:])
        else:
            raise ValueError(f"unknown swizzle {self.swizzle!r}; known: {', '.join(SWIZZLE_BY_NAME)}")
        v = _put((self.start_address & START_MASK) >> 4, 0, 14, "start address >> 4")
        v |= _put(self.lbo >> 4, 16, 14, "LBO >> 4")
        v |= _put(self.sbo >> 4, 32, 14, "SBO >> 4")
        v |= _put(self.fixed, 46, 3, "fixed bits 46-48")
        v |= _put(self.base_offset, 49, 3, "base offset")
        v |= _put(self.lbo_mode, 52, 1, "LBO mode")
        v |= _put(code, 61, 3, "swizzle")
        if self.reserved & ~RESERVED_MASK:
            raise ValueError(f"reserved = 0x{self.reserved:x} has bits outside the reserved fields")
        return v | self.reserved

    @classmethod
    def decode(cls, value: int) -> "SmemDescriptor":
        value = int(value) & ((1 << 64) - 1)
        code = _bits(value, 61, 3)
        return cls(start_address=_bits(value, 0, 14) << 4, lbo=_bits(value, 16, 14) << 4,
                   sbo=_bits(value, 32, 14) << 4, base_offset=_bits(value, 49, 3), lbo_mode=_bits(value, 52, 1),
                   swizzle=SWIZZLE_CODES.get(code, f"invalid{code}"), fixed=_bits(value, 46, 3),
                   reserved=value & RESERVED_MASK)

    def describe(self) -> str:
        parts = [f"start 0x{self.start_address:05x}", f"LBO {self.lbo}", f"SBO {self.sbo}",
                 f"swizzle {self.swizzle}"]
        if self.base_offset:
            parts.append(f"base offset {self.base_offset}")
        if self.lbo_mode:
            parts.append("LBO mode absolute")
        if self.fixed != FIXED_CONSTANT:
            parts.append(f"fixed bits 46-48 = 0b{self.fixed:03b} (must be 0b001)")
        if self.reserved:
            parts.append(f"reserved bits 0x{self.reserved:016x} set")
        return "SMEM descriptor {" + ", ".join(parts) + "}"

    @property
    def width(self) -> int:
        """Swizzle atom row width W in bytes (16 for no swizzle)."""
        return SWIZZLE_WIDTH.get(self.swizzle, 16)

    @property
    def swizzle_fn(self) -> str:
        """The :mod:`tcsim.isa.swizzle` mode name of this descriptor's swizzle."""
        return SWIZZLE_FN[self.swizzle]


RESERVED_MASK = (0x3 << 14) | (0x3 << 30) | (0xFF << 53)


@dataclass(frozen=True)
class OperandAddresses:
    """SMEM byte offsets (``byte``, int64 (rows, k)) and the bit position of each element inside its first byte
    (``shift``; non-zero only for 4-bit elements) of an operand read through a descriptor."""

    byte: np.ndarray
    shift: np.ndarray
    elem_bits: int

    @property
    def nbytes_each(self) -> int:
        return max(self.elem_bits // 8, 1)

    def span(self) -> tuple[int, int]:
        """[lowest, highest+1) byte touched."""
        return int(self.byte.min()), int(self.byte.max()) + self.nbytes_each


def operand_addresses(desc: SmemDescriptor, rows: int, k: int, elem_bits: int, major: str) -> OperandAddresses:
    """:func:`_operand_addresses`, computed once per (descriptor, rows, k, element size, major-ness): a pipelined
    kernel names the same few SMEM slots with the same descriptors on every K step.  The arrays of the result are
    read-only (shared by every caller)."""
    return _operand_addresses_cached(desc, int(rows), int(k), int(elem_bits), major)


@functools.lru_cache(maxsize=256)
def _operand_addresses_cached(desc, rows, k, elem_bits, major) -> OperandAddresses:
    out = _operand_addresses(desc, rows, k, elem_bits, major)
    out.byte.setflags(write=False)
    out.shift.setflags(write=False)
    return out


def _operand_addresses(desc: SmemDescriptor, rows: int, k: int, elem_bits: int, major: str) -> OperandAddresses:
    """Absolute SMEM byte address of every element (mn, kk), 0 <= mn < rows, 0 <= kk < k, of an operand read
    through ``desc`` in the canonical layout (module docstring table).  ``major`` is ``'K'`` or ``'MN'``;
    ``elem_bits`` 4, 8, 16 or 32 (fp6/fp4 of kind::f8f6f4 occupy 8-bit containers: pass 8).

    Raises ValueError for a request the canonical layouts do not define (a K-major slice wider than the swizzle
    atom row, a bad major / element size / swizzle code)."""
    if elem_bits not in (4, 8, 16, 32):
        raise ValueError(f"element size {elem_bits} bits is not 4, 8, 16 or 32")
    if major not in ("K", "MN"):
        raise ValueError(f"major must be 'K' or 'MN', got {major!r}")
    if desc.swizzle not in SWIZZLE_FN:
        raise ValueError(f"descriptor swizzle {desc.swizzle} is not a valid swizzle mode")
    W = desc.width
    start = desc.start_address
    mn = np.arange(rows, dtype=np.int64)[:, None]
    kk = np.arange(k, dtype=np.int64)[None, :]
    if major == "K":
        kbit = kk * elem_bits
        kb, shift = kbit // 8, kbit % 8
        if desc.swizzle == "none":
            lin = start + (mn % 8) * 16 + (mn // 8) * desc.sbo + kb % 16 + (kb // 16) * desc.lbo
        else:
            if (k * elem_bits + 7) // 8 > W:
                raise ValueError(f"a K-major operand of {k} x {elem_bits}-bit elements spans "
                                 f"{(k * elem_bits + 7) // 8} bytes, wider than the {W}-byte swizzle atom row")
            lin = start + (mn % 8) * W + (mn // 8) * desc.sbo + kb
        shift = np.broadcast_to(shift, lin.shape)
    else:
        mbit = mn * elem_bits
        mb, shift = mbit // 8, mbit % 8
        if desc.swizzle == "none":
            lin = start + mb % 16 + (mb // 16) * desc.sbo + (kk % 8) * 16 + (kk // 8) * desc.lbo
        elif desc.swizzle == "128B_base32B":
            lin = start + mb % 128 + (mb // 128) * desc.lbo + (kk % 4) * 128 + (kk // 4) * desc.sbo
        else:
            lin = start + mb % W + (mb // W) * desc.lbo + (kk % 8) * W + (kk // 8) * desc.sbo
        shift = np.broadcast_to(shift, lin.shape)
    byte = _swizzle(lin.astype(np.int64), desc.swizzle_fn)
    return OperandAddresses(byte=np.ascontiguousarray(byte), shift=np.ascontiguousarray(shift).astype(np.int64),
                            elem_bits=elem_bits)


def make_smem_descriptor(start_address: int, *, lbo: int = 16, sbo: int = 0, swizzle: str = "none",
                         base_offset: int = 0) -> SmemDescriptor:
    """A descriptor with the fixed bits set (a convenience for tests and tools)."""
    return SmemDescriptor(start_address=start_address, lbo=lbo, sbo=sbo, swizzle=swizzle, base_offset=base_offset)


# ---------------------------------------------------------------------------------------------- wgmma descriptor
#: sm_90 wgmma layout-type code (bits 62-63) -> swizzle name (PTX ISA 9.1 §9.7.15.5.1.2.2)
WGMMA_SWIZZLE_CODES = {0: "none", 1: "128B", 2: "64B", 3: "32B"}
WGMMA_SWIZZLE_BY_NAME = {v: k for k, v in WGMMA_SWIZZLE_CODES.items()}
#: bits the sm_90 descriptor leaves unused: 14-15, 30-31, 46-48, 52-61
WGMMA_UNUSED_MASK = (0x3 << 14) | (0x3 << 30) | (0x7 << 46) | (0x3FF << 52)


@dataclass(frozen=True)
class WgmmaDescriptor:
    """The 64-bit matrix descriptor of ``wgmma.mma_async`` (PTX ISA 9.1 §9.7.15.5.1.2.2 "Matrix Descriptor Format";
    Hopper sm_90a -- not the tcgen05 layout of :class:`SmemDescriptor`)::

        bits  0-13  matrix-descriptor-encode(start address) = (addr & 0x3FFFF) >> 4
        bits 16-29  matrix-descriptor-encode(leading dimension byte offset)
        bits 32-45  matrix-descriptor-encode(stride dimension byte offset)
        bits 49-51  matrix base offset (valid for the swizzled modes only)
        bits 62-63  swizzle: 0 none (interleave), 1 128-byte, 2 64-byte, 3 32-byte

    Bits 14-15, 30-31, 46-48 and 52-61 are unused; ``unused`` keeps them (in place) so a checker can name them.
    ``start_address``, ``lbo``, ``sbo`` are in bytes.  The operand address function is :func:`operand_addresses`
    (the canonical layouts of §9.7.15.5.1.2.1 are those of tcgen05: LBO / SBO mean the same per major-ness and
    swizzle; the 128B-with-32B-atom mode does not exist here)."""

    start_address: int
    lbo: int = 16
    sbo: int = 0
    base_offset: int = 0
    swizzle: str = "none"
    unused: int = 0

    def encode(self) -> int:
        for name in ("start_address", "lbo", "sbo"):
            v = getattr(self, name)
            if v % 16:
                raise ValueError(f"wgmma descriptor {name} = {v} is not a multiple of 16 bytes")
        if self.swizzle not in WGMMA_SWIZZLE_BY_NAME:
            raise ValueError(f"unknown wgmma swizzle {self.swizzle!r}; known: {', '.join(WGMMA_SWIZZLE_BY_NAME)}")
        if self.unused & ~WGMMA_UNUSED_MASK:
            raise ValueError(f"unused = 0x{self.unused:x} has bits outside the unused fields")
        v = _put((self.start_address & START_MASK) >> 4, 0, 14, "start address >> 4")
        v |= _put((self.lbo & START_MASK) >> 4, 16, 14, "LBO >> 4")
        v |= _put((self.sbo & START_MASK) >> 4, 32, 14, "SBO >> 4")
        v |= _put(self.base_offset, 49, 3, "base offset")
        v |= _put(WGMMA_SWIZZLE_BY_NAME[self.swizzle], 62, 2, "swizzle")
        return v | self.unused

    @classmethod
    def decode(cls, value: int) -> "WgmmaDescriptor":
        value = int(value) & ((1 << 64) - 1)
        return cls(start_address=_bits(value, 0, 14) << 4, lbo=_bits(value, 16, 14) << 4,
                   sbo=_bits(value, 32, 14) << 4, base_offset=_bits(value, 49, 3),
                   swizzle=WGMMA_SWIZZLE_CODES[_bits(value, 62, 2)], unused=value & WGMMA_UNUSED_MASK)

    def describe(self) -> str:
        parts = [f"start 0x{self.start_address:05x}", f"LBO {self.lbo}", f"SBO {self.sbo}",
                 f"swizzle {self.swizzle}"]
        if self.base_offset:
            parts.append(f"base offset {self.base_offset}")
        if self.unused:
            parts.append(f"unused bits 0x{self.unused:016x} set")
        return "wgmma matrix descriptor {" + ", ".join(parts) + "}"

    @property
    def width(self) -> int:
        """Swizzle atom row width W in bytes (16 for no swizzle)."""
        return SWIZZLE_WIDTH[self.swizzle]

    @property
    def swizzle_fn(self) -> str:
        return SWIZZLE_FN[self.swizzle]


def make_wgmma_descriptor(start_address: int, *, lbo: int = 16, sbo: int = 0, swizzle: str = "none",
                          base_offset: int = 0) -> WgmmaDescriptor:
    """A wgmma matrix descriptor (a convenience for tests and tools)."""
    return WgmmaDescriptor(start_address=start_address, lbo=lbo, sbo=sbo, swizzle=swizzle, base_offset=base_offset)


# ---------------------------------------------------------------------------------------------- instruction descriptors
#: type codes of Table 42 per kind: code -> format name (numerics names)
TYPE_CODES = {
    "f16": {0: "f16", 1: "bf16"},
    "tf32": {2: "tf32"},
    "f8f6f4": {0: "e4m3", 1: "e5m2", 3: "e2m3", 4: "e3m2", 5: "e2m1"},
    "i8": {0: "u8", 1: "s8"},
    "mxf8f6f4": {0: "e4m3", 1: "e5m2", 3: "e2m3", 4: "e3m2", 5: "e2m1"},
    "mxf4": {1: "e2m1"},
    "mxf4nvf4": {1: "e2m1"},
}
#: D type codes (bits 4-5 of Table 42)
DTYPE_CODES = {0: "f16", 1: "f32", 2: "s32"}
DTYPE_BY_NAME = {v: k for k, v in DTYPE_CODES.items()}
#: bits per element as stored in SMEM / TMEM (fp6/fp4 of the f8f6f4 families use byte containers)
CONTAINER_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "e2m3": 8, "e3m2": 8, "e2m1": 8,
                  "u8": 8, "s8": 8}
MAX_SHIFT_CODES = {0: 0, 1: 8, 2: 16, 3: 32}
BLOCK_SCALED_KINDS = ("mxf8f6f4", "mxf4", "mxf4nvf4")
DENSE_KINDS = ("f16", "tf32", "f8f6f4", "i8")


def type_code(kind: str, fmt: str) -> int:
    for c, n in TYPE_CODES[kind].items():
        if n == fmt:
            return c
    raise ValueError(f"kind::{kind} has no operand type {fmt!r} (types: {', '.join(TYPE_CODES[kind].values())})")


@dataclass(frozen=True)
class InstrDescriptor:
    """The 32-bit instruction descriptor of ``.kind::f16 / tf32 / f8f6f4 / i8`` (PTX ISA §9.7.16.4.2 Table 42).

    ``m`` and ``n`` are the matrix dimensions (the fields hold ``M >> 4`` in bits 24-28 and ``N >> 3`` in bits
    17-22); ``atype`` / ``btype`` / ``dtype`` are the raw codes (:data:`TYPE_CODES`, :data:`DTYPE_CODES`);
    ``a_major`` / ``b_major`` are 0 for K-major and 1 for MN-major ("transpose"); ``max_shift`` is the raw
    code of bits 30-31 (``.ws`` maximum B-reuse shift: 0 none, 1 -> 8, 2 -> 16, 3 -> 32); ``reserved`` holds
    bits 6, 23 and 29 in place.
    """

    m: int = 128
    n: int = 128
    dtype: int = 1
    atype: int = 0
    btype: int = 0
    sparse_id2: int = 0
    sparse: int = 0
    saturate: int = 0
    negate_a: int = 0
    negate_b: int = 0
    a_major: int = 0
    b_major: int = 0
    max_shift: int = 0
    reserved: int = 0

    RESERVED = (1 << 6) | (1 << 23) | (1 << 29)

    def encode(self) -> int:
        if self.m % 16 or self.n % 8:
            raise ValueError(f"M = {self.m} must be a multiple of 16 and N = {self.n} a multiple of 8")
        v = _put(self.sparse_id2, 0, 2, "sparsity selector") | _put(self.sparse, 2, 1, "sparse")
        v |= _put(self.saturate, 3, 1, "saturate") | _put(self.dtype, 4, 2, "dtype")
        v |= _put(self.atype, 7, 3, "atype") | _put(self.btype, 10, 3, "btype")
        v |= _put(self.negate_a, 13, 1, "negate A") | _put(self.negate_b, 14, 1, "negate B")
        v |= _put(self.a_major, 15, 1, "A major") | _put(self.b_major, 16, 1, "B major")
        v |= _put(self.n >> 3, 17, 6, "N >> 3") | _put(self.m >> 4, 24, 5, "M >> 4")
        v |= _put(self.max_shift, 30, 2, "max shift")
        if self.reserved & ~self.RESERVED:
            raise ValueError("reserved bits outside 6, 23, 29")
        return v | self.reserved

    @classmethod
    def decode(cls, value: int) -> "InstrDescriptor":
        v = int(value) & 0xFFFFFFFF
        return cls(m=_bits(v, 24, 5) << 4, n=_bits(v, 17, 6) << 3, dtype=_bits(v, 4, 2), atype=_bits(v, 7, 3),
                   btype=_bits(v, 10, 3), sparse_id2=_bits(v, 0, 2), sparse=_bits(v, 2, 1),
                   saturate=_bits(v, 3, 1), negate_a=_bits(v, 13, 1), negate_b=_bits(v, 14, 1),
                   a_major=_bits(v, 15, 1), b_major=_bits(v, 16, 1), max_shift=_bits(v, 30, 2),
                   reserved=v & cls.RESERVED)

    @classmethod
    def for_kind(cls, kind: str, m: int, n: int, a: str, b: str, d: str, **kw) -> "InstrDescriptor":
        """Build from format names (e.g. ``for_kind('f16', 128, 64, 'bf16', 'bf16', 'f32')``)."""
        return cls(m=m, n=n, atype=type_code(kind, a), btype=type_code(kind, b), dtype=DTYPE_BY_NAME[d], **kw)

    def a_format(self, kind: str) -> str | None:
        return TYPE_CODES[kind].get(self.atype)

    def b_format(self, kind: str) -> str | None:
        return TYPE_CODES[kind].get(self.btype)

    @property
    def d_format(self) -> str | None:
        return DTYPE_CODES.get(self.dtype)

    def describe(self, kind: str | None = None) -> str:
        def t(code, fmt):
            return fmt if fmt else f"code {code}"
        a = t(self.atype, self.a_format(kind) if kind in TYPE_CODES else None)
        b = t(self.btype, self.b_format(kind) if kind in TYPE_CODES else None)
        parts = [f"M {self.m}", f"N {self.n}", f"D {self.d_format or f'code {self.dtype}'}", f"A {a}", f"B {b}",
                 f"A {'MN' if self.a_major else 'K'}-major", f"B {'MN' if self.b_major else 'K'}-major"]
        if self.negate_a:
            parts.append("negate A")
        if self.negate_b:
            parts.append("negate B")
        if self.saturate:
            parts.append("saturate")
        if self.sparse:
            parts.append(f"sparse (selector {self.sparse_id2})")
        elif self.sparse_id2:
            # bits 0-1 are set but bit 2 is clear: name them rather than drop them (e.g. the seed "kind word" 0xC1)
            parts.append(f"sparsity selector {self.sparse_id2} without the sparse flag")
        if self.max_shift:
            parts.append(f"max shift {MAX_SHIFT_CODES[self.max_shift]}")
        if self.reserved:
            parts.append(f"reserved bits 0x{self.reserved:08x} set")
        return "instruction descriptor {" + ", ".join(parts) + "}"


@dataclass(frozen=True)
class InstrDescriptorBlockScaled:
    """The 32-bit instruction descriptor of ``.kind::mxf8f6f4 / mxf4 / mxf4nvf4`` (PTX ISA §9.7.16.4.2 Table 43).

    ``m`` is read from bits 24-28 as ``M >> 4`` (equivalently ``M >> 7`` in bits 27-28 for the legal M of 128 and
    256, which is how the PTX table writes it and how CUTLASS encodes it); ``scale_type`` is bit 23
    (1 UE8M0, 0 UE4M3); ``sfa_id`` / ``sfb_id`` the scale-factor byte ids; ``k_size`` bit 31 (1 = K96,
    sm_103a); ``reserved`` holds bits 0-1, 3 and 6 in place.
    """

    m: int = 128
    n: int = 128
    atype: int = 0
    btype: int = 0
    sparse: int = 0
    sfa_id: int = 0
    sfb_id: int = 0
    negate_a: int = 0
    negate_b: int = 0
    a_major: int = 0
    b_major: int = 0
    scale_type: int = 1
    k_size: int = 0
    reserved: int = 0

    RESERVED = 0x3 | (1 << 3) | (1 << 6)

    def encode(self) -> int:
        if self.m % 16 or self.n % 8:
            raise ValueError(f"M = {self.m} must be a multiple of 16 and N = {self.n} a multiple of 8")
        v = _put(self.sparse, 2, 1, "sparse") | _put(self.sfb_id, 4, 2, "SFB id")
        v |= _put(self.atype, 7, 3, "atype") | _put(self.btype, 10, 3, "btype")
        v |= _put(self.negate_a, 13, 1, "negate A") | _put(self.negate_b, 14, 1, "negate B")
        v |= _put(self.a_major, 15, 1, "A major") | _put(self.b_major, 16, 1, "B major")
        v |= _put(self.n >> 3, 17, 6, "N >> 3") | _put(self.scale_type, 23, 1, "scale type")
        v |= _put(self.m >> 4, 24, 5, "M >> 4") | _put(self.sfa_id, 29, 2, "SFA id")
        v |= _put(self.k_size, 31, 1, "K size")
        if self.reserved & ~self.RESERVED:
            raise ValueError("reserved bits outside 0-1, 3, 6")
        return v | self.reserved

    @classmethod
    def decode(cls, value: int) -> "InstrDescriptorBlockScaled":
        v = int(value) & 0xFFFFFFFF
        return cls(m=_bits(v, 24, 5) << 4, n=_bits(v, 17, 6) << 3, atype=_bits(v, 7, 3), btype=_bits(v, 10, 3),
                   sparse=_bits(v, 2, 1), sfa_id=_bits(v, 29, 2), sfb_id=_bits(v, 4, 2), negate_a=_bits(v, 13, 1),
                   negate_b=_bits(v, 14, 1), a_major=_bits(v, 15, 1), b_major=_bits(v, 16, 1),
                   scale_type=_bits(v, 23, 1), k_size=_bits(v, 31, 1), reserved=v & cls.RESERVED)

    @classmethod
    def for_kind(cls, kind: str, m: int, n: int, a: str, b: str, scale: str = "ue8m0", **kw):
        return cls(m=m, n=n, atype=type_code(kind, a), btype=type_code(kind, b),
                   scale_type=1 if scale == "ue8m0" else 0, **kw)

    def a_format(self, kind: str) -> str | None:
        return TYPE_CODES[kind].get(self.atype)

    def b_format(self, kind: str) -> str | None:
        return TYPE_CODES[kind].get(self.btype)

    @property
    def scale_format(self) -> str:
        return "ue8m0" if self.scale_type else "ue4m3"

    @property
    def dtype(self) -> int:
        return 1                     # block-scaled kinds accumulate in f32

    @property
    def d_format(self) -> str:
        return "f32"

    @property
    def saturate(self) -> int:
        return 0

    @property
    def max_shift(self) -> int:
        return 0

    def describe(self, kind: str | None = None) -> str:
        def t(code, fmt):
            return fmt if fmt else f"code {code}"
        a = t(self.atype, self.a_format(kind) if kind in TYPE_CODES else None)
        b = t(self.btype, self.b_format(kind) if kind in TYPE_CODES else None)
        parts = [f"M {self.m}", f"N {self.n}", "D f32", f"A {a}", f"B {b}", f"scale {self.scale_format}",
                 f"SFA id {self.sfa_id}", f"SFB id {self.sfb_id}",
                 f"A {'MN' if self.a_major else 'K'}-major", f"B {'MN' if self.b_major else 'K'}-major"]
        if self.negate_a:
            parts.append("negate A")
        if self.negate_b:
            parts.append("negate B")
        if self.sparse:
            parts.append("sparse")
        if self.k_size:
            parts.append("K96")
        if self.reserved:
            parts.append(f"reserved bits 0x{self.reserved:08x} set")
        return "block-scaled instruction descriptor {" + ", ".join(parts) + "}"


def decode_idesc(kind: str, value: int):
    """The instruction descriptor of ``kind`` (either table) decoded from a 32-bit value."""
    if kind in BLOCK_SCALED_KINDS:
        return InstrDescriptorBlockScaled.decode(value)
    if kind in DENSE_KINDS:
        return InstrDescriptor.decode(value)
    raise ValueError(f"unknown tcgen05.mma kind {kind!r}")


# ---------------------------------------------------------------------------------------------- zero-column mask
@dataclass(frozen=True)
class ZeroColumnMask:
    """The zero-column mask descriptor of ``tcgen05.mma.ws`` (PTX ISA 9.1 §9.7.16.4.3, Table 45), 64 bits::

        bits  0-31  start count sc0..sc3 (8 bits each): low bits of sub-mask i dropped from its pattern
        bits 32-35  first span fs0..fs3: the value sub-mask i's pattern starts with
        bits 36-38  reserved
        bit  39     non-zero mask: 0 -> the mask is all 0 (every B column used), 1 -> generate it
        bits 40-47  skip span - 1: length of each run of 1s (B columns replaced by 0)
        bits 48-55  use span - 1: length of each run of 0s (B columns used)
        bits 56-61  column shift: the MMA uses B columns [shift, shift + N)
        bits 62-63  reserved

    Sub-mask i (M = 128: one of N bits; M = 64: two of N/2; M = 32: four of N/4, mask i covering columns
    [i N/s, (i + 1) N/s)) is the periodic sequence that starts with a run of fs_i values (1s when fs_i = 1, of
    skip-span length; 0s of use-span length when 0), alternating, with its first sc_i bits dropped; bit j of the
    sequence is column i N/s + j.  Table 45 names the two span fields the other way round; its four worked
    examples (M = 128 x 2, 64, 32) fix the lengths as above (``tests/semantics/test_tcgen05_mma_ws.py``)."""

    start: tuple
    first: tuple
    nonzero: bool
    skip_span: int
    use_span: int
    shift: int
    reserved: int

    @classmethod
    def decode(cls, v: int) -> "ZeroColumnMask":
        v = int(v) & ((1 << 64) - 1)
        return cls(start=tuple((v >> (8 * i)) & 0xFF for i in range(4)),
                   first=tuple((v >> (32 + i)) & 1 for i in range(4)), nonzero=bool((v >> 39) & 1),
                   skip_span=((v >> 40) & 0xFF) + 1, use_span=((v >> 48) & 0xFF) + 1, shift=(v >> 56) & 0x3F,
                   reserved=((v >> 36) & 0x7) | (((v >> 62) & 0x3) << 3))

    def submasks(self, m: int) -> int:
        return {128: 1, 64: 2, 32: 4}[m]

    def max_shift(self, m: int) -> int:
        return 16 if m == 32 else 32

    def mask(self, m: int, n: int) -> np.ndarray:
        """Bool array of N: True where the MMA uses 0 instead of B column j."""
        out = np.zeros(n, dtype=bool)
        if not self.nonzero:
            return out
        s = self.submasks(m)
        width = n // s
        period = self.skip_span + self.use_span
        for i in range(s):
            # position p of the undropped sequence: within the period, the first run is fs_i's
            p = np.arange(width, dtype=np.int64) + self.start[i]
            q = p % period
            if self.first[i]:
                ones = q < self.skip_span
            else:
                ones = q >= self.use_span
            out[i * width:(i + 1) * width] = ones
        return out


__all__ = ["WgmmaDescriptor", "make_wgmma_descriptor", "WGMMA_SWIZZLE_CODES", "WGMMA_UNUSED_MASK",
           "SmemDescriptor", "OperandAddresses", "operand_addresses", "make_smem_descriptor", "InstrDescriptor",
           "InstrDescriptorBlockScaled", "decode_idesc", "SWIZZLE_CODES", "SWIZZLE_WIDTH", "SWIZZLE_REPEAT",
           "SWIZZLE_FN", "TYPE_CODES", "DTYPE_CODES", "CONTAINER_BITS", "MAX_SHIFT_CODES", "BLOCK_SCALED_KINDS",
           "DENSE_KINDS", "type_code", "ZeroColumnMask"]
