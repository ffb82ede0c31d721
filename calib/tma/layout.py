"""The layout the TMA cases share: the constants of the kernel template (:mod:`calib.tma.ptx`), tensor-map and
copy descriptions (:class:`MapSpec`, :class:`Op`), and where a box's elements lie in global memory and in shared
memory (PTX ISA §5.5.6 "Tensor Access Modes" / tile mode; the swizzle of §5.5.6.2, tma.md §4, written out here
independently of tcsim.isa.swizzle).  The generator (:mod:`calib.tma.cases`) places inputs with it and the
compare step (:mod:`calib.tma.compare`) decodes a differing byte with it."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tcsim.isa.swizzle import SWIZZLE_SPAN
from tcsim.isa.tensormap import DATA_TYPES

HEAD = ".version 8.6\n.target sm_90a\n.address_size 64\n"
KERNEL = "tma_case"
NT = 128                      # threads per CTA
STATUS = 16                   # bytes after the SMEM dump: wait status (u32), end marker (u32), 8 unused
MARKER = 0x7C51D0E5
OUT_FILL = 0xEE               # initial bytes of `out`
SENTINEL = 0xEE               # bytes of tensor padding / untouched store targets
WAIT_CYCLES = 1 << 31         # bounded mbarrier wait (%clock64 cycles, ~1 s on an H100)
SIM_MAX_INSTRUCTIONS = 2_000_000
REDOPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
#: redop -> map data types the PTX ISA table allows (tma.md §2)
RED_TYPES = {
    "add": ("UINT32", "INT32", "UINT64", "FLOAT32", "FLOAT16", "BFLOAT16"),
    "min": ("UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "BFLOAT16"),
    "max": ("UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "BFLOAT16"),
    "inc": ("UINT32",), "dec": ("UINT32",),
    "and": ("UINT32", "INT32", "UINT64"), "or": ("UINT32", "INT32", "UINT64"), "xor": ("UINT32", "INT32", "UINT64"),
}
#: pairs of the PTX table an H100 refuses with an illegal instruction (first record: reduce_{and,or,xor}_int64)
RED_H100_ILLEGAL = {("and", "INT64"), ("or", "INT64"), ("xor", "INT64")}
#: (redop, type) pairs outside the PTX table that an H100 performs anyway (first record: reduce_bad_add_*)
RED_H100_EXTRA = {("add", "FLOAT64"), ("add", "FLOAT32_FTZ")}
#: NaN bit patterns of NAN_REQUEST_ZERO_FMA fill: tma.md leaves them open; the first H100 record settled them as
#: 0x7FF7 repeated over the element for every float type (oob_nan_*)
MODEL_NAN = {2: 0x7FF7, 4: 0x7FF77FF7, 8: 0x7FF77FF77FF77FF7}
MANTISSA = {"FLOAT16": 10, "BFLOAT16": 7, "FLOAT32": 23, "FLOAT32_FTZ": 23, "TFLOAT32": 23, "TFLOAT32_FTZ": 23,
            "FLOAT64": 52}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _esize(dtype: str) -> int:
    return DATA_TYPES[dtype].esize


@dataclass(frozen=True)
class MapSpec:
    """A tiled tensor map over case tensor ``tensor`` (driver order: dim 0 innermost; strides in bytes for dims
    1..rank-1; ``byte_offset`` is added to the tensor's device address)."""

    tensor: int
    dtype: str
    dims: tuple
    strides: tuple
    box: tuple
    estr: tuple
    swizzle: str = "none"
    oob: str = "zero"
    byte_offset: int = 0

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def esize(self) -> int:
        return _esize(self.dtype)

    @property
    def n(self) -> tuple:
        """Elements moved per dim: ceil(box / elementStride), the dim-0 stride ignored (no interleave)."""
        return tuple(-(-b // (1 if i == 0 else e)) for i, (b, e) in enumerate(zip(self.box, self.estr)))

    @property
    def box_bytes(self) -> int:
        return self.esize * math.prod(self.n)

    @property
    def footprint(self) -> int:
        """SMEM bytes the box image spans: its rows padded to the swizzle span when they are narrower (first H100
        record, see :func:`image_addresses`)."""
        row = self.box[0] * self.esize
        span = SWIZZLE_SPAN.get(self.swizzle) or 0
        return self.box_bytes // row * span if row < span else self.box_bytes


@dataclass(frozen=True)
class Op:
    """One copy issued by thread 0 of CTA ``rank``.

    kinds: ``tload`` (tensor -> SMEM ``smem``; ``mask``: multicast ctaMask; ``dst_space``), ``tstore`` /
    ``treduce`` (SMEM ``smem`` -> tensor; ``redop``), ``bload`` (tensor ``tensor`` bytes [goff, goff+size) ->
    SMEM; ``mask``), ``bstore`` (SMEM -> tensor bytes), ``s2s`` (SMEM of ``rank`` -> SMEM ``dst_smem`` of CTA
    ``dst_rank``).  ``dim`` overrides the .Nd of a tensor instruction (a deliberate mismatch)."""

    kind: str
    rank: int = 0
    smem: int = 0
    map: int = 0
    coords: tuple = ()
    mask: int | None = None
    redop: str | None = None
    tensor: int = 0
    goff: int = 0
    size: int = 0
    dst_rank: int = 0
    dst_smem: int = 0
    dim: int | None = None
    dst_space: str = "shared::cluster"
    peer: int | None = None      # tload/bload without multicast: destination + mbarrier in this CTA (mapa)


def _targets(op: Op, ncta: int) -> list:
    """The CTAs a load or bulk copy ``op`` delivers to (multicast mask, peer, or the issuing CTA)."""
    if op.mask is None:
        return [op.rank if op.peer is None else op.peer]
    return [r for r in range(16) if op.mask >> r & 1 and r < ncta]


def model_swizzle(a, mode: str):
    """tma.md §4 (absolute SMEM byte addresses; written out here independently of isa/swizzle.py)."""
    a = np.asarray(a, dtype=np.int64)
    line = a >> 7
    terms = {"none": (), "32B": ((1, 4),), "64B": ((3, 4),), "128B": ((7, 4),), "128B_atom_32B": ((3, 5),),
             "128B_atom_32B_flip_8B": ((3, 5), (1, 3)), "128B_atom_64B": ((1, 6),)}[mode]
    out = a.copy()
    for mask, shift in terms:
        out ^= (line & mask) << shift
    return out


def box_geometry(m: MapSpec, coords, granules: bool = False):
    """(byte offsets from the tensor's base, in-bounds flags) of every box element, image order (dim 0 fastest).
    ``granules``: the rows of stores and reductions end at the 16-byte granule holding their last element (the
    H100 writes whole granules: store_* / reduce_* of the first record wrote past globalDim[0])."""
    r = m.rank
    offs = np.zeros((), dtype=np.int64)
    inb = np.ones((), dtype=bool)
    n = m.n
    for d in range(r - 1, -1, -1):
        step = 1 if d == 0 else m.estr[d]
        g = np.int64(coords[d]) + np.arange(n[d], dtype=np.int64) * step
        stride = m.esize if d == 0 else m.strides[d - 1]
        offs = offs[..., None] + g * np.int64(stride)
        end = -(-m.dims[0] * m.esize // 16) * 16 // m.esize if (granules and d == 0) else m.dims[d]
        inb = inb[..., None] & (g >= 0) & (g < end)
    return offs.reshape(-1) + m.byte_offset, inb.reshape(-1)


def image_addresses(off: int, nbytes: int, mode: str, row: int | None = None) -> np.ndarray:
    """SMEM offsets of the ``nbytes`` image bytes of a box whose inner rows are ``row`` bytes: under a swizzle
    whose span is wider than the row, each row starts on a span boundary (the rest of the span is not touched:
    first H100 record, swizzle_*_narrow* and rank*_uint16_128B), then the swizzle permutes absolute addresses."""
    k = np.arange(nbytes, dtype=np.int64)
    span = SWIZZLE_SPAN.get(mode) or 0
    if row and row < span:
        k = k // row * span + k % row
    return model_swizzle(off + k, mode)


def place(smem_row: np.ndarray, off: int, data: np.ndarray, mode: str, row: int | None = None):
    """Write image bytes ``data`` at SMEM offset ``off`` through swizzle ``mode`` (buf is 1024-aligned)."""
    smem_row[image_addresses(off, data.size, mode, row)] = data


def _float_view(dtype: str):
    import ml_dtypes

    return {"FLOAT16": np.float16, "BFLOAT16": ml_dtypes.bfloat16, "FLOAT32": np.float32,
            "FLOAT32_FTZ": np.float32}.get(dtype)
