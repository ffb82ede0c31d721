"""Warp-level matrix fragment maps: which element of a matrix each (register, lane, slot) of a warp holds.

Pure functions, no machine state.  Every map is the closed form of PTX ISA 9.1 §9.7.14.5 ("Matrix
multiply-accumulate operation using mma instruction"), with ``g = laneid >> 2`` (groupID) and
``t = laneid & 3`` (threadID_in_group):

* §9.7.14.5.7  "Matrix Fragments for mma.m16n8k8"    (f16/bf16 and tf32 A/B, C/D)
* §9.7.14.5.8  "Matrix Fragments for mma.m16n8k16 with floating point type"
* §9.7.14.5.9  "Matrix Fragments for mma.m16n8k16 with integer type" (s8/u8, and e4m3/e5m2 from PTX 8.7)
* §9.7.14.5.10 "Matrix Fragments for mma.m16n8k32"   (s8/u8/e4m3/e5m2)
* §9.7.14.5.15 ldmatrix, §9.7.14.5.16 stmatrix, §9.7.14.5.17 movmatrix (8x8 b16 tiles)

Element ``i`` of a lane's fragment sits in register ``i // per_reg`` at slot ``i % per_reg``; the
lower-indexed slot occupies the lower bits of the 32-bit register (slot ``s`` of an ``elem_bits``-wide
element is bits ``[s*elem_bits, (s+1)*elem_bits)``).

A :class:`FragmentLayout` holds the index tables ``row[lane, i]`` and ``col[lane, i]`` (numpy int arrays of
shape ``(32, nregs*per_reg)``); :func:`gather` turns the registers of a warp (``(nregs, 32)`` uint32) into the
dense matrix, :func:`scatter` does the reverse; :func:`describe` prints a layout for diagnostics.

ldmatrix / stmatrix of ``num`` 8x8 b16 matrices are described on a dense ``(8*num, 8)`` tile: matrix ``m``
occupies rows ``8m .. 8m+7`` (rows as stored in memory).  Thread ``8m + r`` supplies the address of row
``r`` of matrix ``m`` (:func:`ldmatrix_row_suppliers`).

Not described here (the callers raise UnsupportedError for them): m8n8k4, m16n8k4, f64, s4/u4, b1, sparse
fragments, and the sm_100a ``ldmatrix .m16n16/.m8n16`` / ``stmatrix .m16n8`` b8 forms, whose thread maps the
PTX ISA gives only as figures.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["FragmentLayout", "mma_layout", "wgmma_layout", "ldmatrix_layout", "ldmatrix_row_suppliers", "gather", "scatter",
           "describe", "MMA_SHAPES", "elem_bits_of"]

WARP = 32

#: (M, N, K) of the shapes with maps here
MMA_SHAPES = {"m16n8k8": (16, 8, 8), "m16n8k16": (16, 8, 16), "m16n8k32": (16, 8, 32)}

_ELEM_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "s32": 32, "e4m3": 8, "e5m2": 8, "s8": 8,
              "u8": 8, "b16": 16}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def elem_bits_of(elem_type: str) -> int:
    try:
        return _ELEM_BITS[elem_type]
    except KeyError:
        raise ValueError(f"no fragment element type .{elem_type}") from None


@dataclass(frozen=True, eq=False)
class FragmentLayout:
    """Where each element of a warp's fragment lives in the dense ``shape`` matrix.

    ``row``/``col``: int arrays ``(32, nregs * per_reg)``; entry ``[lane, i]`` is the matrix position of the
    lane's element ``i`` (register ``i // per_reg``, slot ``i % per_reg``).
    """

    name: str
    shape: tuple
    elem_bits: int
    per_reg: int
    nregs: int
    row: np.ndarray
    col: np.ndarray

    @property
    def dtype(self):
        return _UINT[self.elem_bits]


def _make(name, shape, elem_bits, nelems, row_fn, col_fn) -> FragmentLayout:
    lane = np.arange(WARP)[:, None]
    i = np.arange(nelems)[None, :]
    g, t = lane >> 2, lane & 3
    row = np.broadcast_to(row_fn(i, g, t), (WARP, nelems)).astype(np.int64)
    col = np.broadcast_to(col_fn(i, g, t), (WARP, nelems)).astype(np.int64)
    per_reg = 32 // elem_bits
    row.setflags(write=False)
    col.setflags(write=False)
    return FragmentLayout(name, shape, elem_bits, per_reg, nelems // per_reg, row, col)


# operand -> elem kind -> (nelems per lane, row(i,g,t), col(i,g,t)); "16b" = f16/bf16, "8b" = s8/u8/fp8
_ACC = (4, lambda i, g, t: g + 8 * (i // 2), lambda i, g, t: 2 * t + i % 2)

_MAPS = {
    ("m16n8k8", "A", "16b"): (4, lambda i, g, t: g + 8 * (i // 2), lambda i, g, t: 2 * t + i % 2),
    ("m16n8k8", "B", "16b"): (2, lambda i, g, t: 2 * t + i, lambda i, g, t: g + 0 * i),
    ("m16n8k8", "A", "tf32"): (4, lambda i, g, t: g + 8 * (i % 2), lambda i, g, t: t + 4 * (i // 2)),
    ("m16n8k8", "B", "tf32"): (2, lambda i, g, t: t + 4 * i, lambda i, g, t: g + 0 * i),
    ("m16n8k16", "A", "16b"): (8, lambda i, g, t: g + 8 * ((i // 2) % 2),
                               lambda i, g, t: 2 * t + i % 2 + 8 * (i // 4)),
    ("m16n8k16", "B", "16b"): (4, lambda i, g, t: 2 * t + i % 2 + 8 * (i // 2), lambda i, g, t: g + 0 * i),
    ("m16n8k16", "A", "8b"): (8, lambda i, g, t: g + 8 * (i // 4), lambda i, g, t: 4 * t + i % 4),
    ("m16n8k16", "B", "8b"): (4, lambda i, g, t: 4 * t + i, lambda i, g, t: g + 0 * i),
    ("m16n8k32", "A", "8b"): (16, lambda i, g, t: g + 8 * ((i // 4) % 2),
                              lambda i, g, t: 4 * t + i % 4 + 16 * (i // 8)),
    ("m16n8k32", "B", "8b"): (8, lambda i, g, t: 4 * t + i % 4 + 16 * (i // 4), lambda i, g, t: g + 0 * i),
}


def _kind(elem_type: str) -> str:
    if elem_type in ("f16", "bf16"):
        return "16b"
    if elem_type in ("s8", "u8", "e4m3", "e5m2"):
        return "8b"
    if elem_type == "tf32":
        return "tf32"
    raise ValueError(f"no mma fragment for element type .{elem_type}")


@lru_cache(maxsize=None)
def mma_layout(shape: str, operand: str, elem_type: str) -> FragmentLayout:
    """Fragment layout of mma ``shape`` (``'m16n8k16'``...) operand ``'A'``, ``'B'``, ``'C'`` or ``'D'`` with
    elements of ``elem_type`` (A/B: f16 bf16 tf32 e4m3 e5m2 s8 u8; C/D: f32 f16 s32).  ValueError for a
    combination without a map (PTX ISA §9.7.14.5.7-10)."""
    if shape not in MMA_SHAPES:
        raise ValueError(f"no fragment maps for mma shape {shape}")
    M, N, K = MMA_SHAPES[shape]
    bits = elem_bits_of(elem_type)
    name = f"mma.{shape} {operand} .{elem_type}"
    if operand in ("C", "D"):
        if elem_type not in ("f32", "f16", "s32"):
            raise ValueError(f"no accumulator fragment of type .{elem_type}")
        n, rf, cf = _ACC
        return _make(name, (M, N), bits, n, rf, cf)
    if operand not in ("A", "B"):
        raise ValueError(f"mma operand must be A, B, C or D, got {operand!r}")
    key = (shape, operand, _kind(elem_type))
    if key not in _MAPS:
        raise ValueError(f"no fragment map for {name}")
    n, rf, cf = _MAPS[key]
    return _make(name, (M, K) if operand == "A" else (K, N), bits, n, rf, cf)


#: wgmma.mma_async register A of one warp (its 16 rows of the 64-row A): the mma.sync map of the same K
#: (PTX ISA 9.1 §9.7.15.5.1.1, Figures 148 / 150 / 152: row 16*w + the mma row for warp w of the warpgroup)
_WGMMA_A = {16: ("m16n8k16", "16b"), 8: ("m16n8k8", "tf32"), 32: ("m16n8k32", "8b")}


@lru_cache(maxsize=None)
def wgmma_layout(operand: str, elem_type: str, n_or_k: int) -> FragmentLayout:
    """One warp's share of a ``wgmma.mma_async`` register operand (PTX ISA 9.1 §9.7.15.5.1.1): warp ``w`` of the
    warpgroup holds rows ``16w .. 16w+15``; the layout is on that warp's ``(16, X)`` slice.

    * ``operand 'D'`` (accumulator, ``elem_type`` f32 / s32 / f16, ``n_or_k`` = N): element ``i`` of a lane is
      row ``g + 8*((i//2) % 2)``, column ``8*(i//4) + 2t + i%2`` (Figures 149 / 151 / 153 / 155: the mma.sync
      m16n8 accumulator repeated over N/8 column blocks); f16 packs elements ``2j, 2j+1`` into register ``j``.
    * ``operand 'A'`` (``elem_type`` f16 / bf16 / tf32 / e4m3 / e5m2 / s8 / u8, ``n_or_k`` = K of the shape, or of
      the packed sparse A): the mma.sync A map of m16n8k16 / m16n8k8 (tf32) / m16n8k32 (8-bit)."""
    if operand == "D":
        if elem_type not in ("f32", "s32", "f16"):
            raise ValueError(f"no wgmma accumulator of type .{elem_type}")
        n = n_or_k
        if n % 8 or not 8 <= n <= 256:
            raise ValueError(f"wgmma N = {n} is not a multiple of 8 in 8..256")
        return _make(f"wgmma D .{elem_type} N={n}", (16, n), elem_bits_of(elem_type), n // 2,
                     lambda i, g, t: g + 8 * ((i // 2) % 2), lambda i, g, t: 8 * (i // 4) + 2 * t + i % 2)
    if operand != "A":
        raise ValueError(f"wgmma register operands are A and D, got {operand!r}")
    key = _WGMMA_A.get(n_or_k)
    if key is None or _kind(elem_type) != key[1]:
        raise ValueError(f"no wgmma A fragment for .{elem_type} with K = {n_or_k}")
    base = mma_layout(key[0], "A", elem_type)
    return FragmentLayout(f"wgmma A .{elem_type} K={n_or_k}", base.shape, base.elem_bits, base.per_reg, base.nregs,
                          base.row, base.col)


@lru_cache(maxsize=None)
def ldmatrix_layout(num: int, trans: bool) -> FragmentLayout:
    """Register layout of ``ldmatrix/stmatrix .m8n8.x{num}{.trans}.b16`` on the dense ``(8*num, 8)`` tile of
    the stored matrices (PTX ISA §9.7.14.5.15): register ``m`` of thread T holds
    ``M_m[T/4][2(T%4) + h]`` (no .trans) or ``M_m[2(T%4) + h][T/4]`` (.trans), slot h = 0, 1.
    ``ldmatrix_layout(1, False)`` / ``(1, True)`` are also the input / output layouts of movmatrix."""
    if num not in (1, 2, 4):
        raise ValueError(f"ldmatrix num must be 1, 2 or 4, got {num}")
    if trans:
        rf = lambda i, g, t: 8 * (i // 2) + 2 * t + i % 2       # noqa: E731
        cf = lambda i, g, t: g + 0 * i                          # noqa: E731
    else:
        rf = lambda i, g, t: 8 * (i // 2) + g                   # noqa: E731
        cf = lambda i, g, t: 2 * t + i % 2                      # noqa: E731
    return _make(f"ldmatrix.m8n8.x{num}{'.trans' if trans else ''}.b16", (8 * num, 8), 16, 2 * num, rf, cf)


def ldmatrix_row_suppliers(num: int) -> np.ndarray:
    """For each lane, the tile row (``8*m + r``) whose start address it supplies, or -1 if its address is
    ignored (PTX ISA §9.7.14.5.15: threads 0-7 for .x1, 0-15 for .x2, 0-31 for .x4)."""
    lane = np.arange(WARP)
    return np.where(lane < 8 * num, lane, -1)


# ------------------------------------------------------------------------------------------ gather/scatter
def gather(layout: FragmentLayout, regs) -> np.ndarray:
    """Dense matrix (``layout.shape``, unsigned ``elem_bits`` codes) from the warp's registers
    ``regs`` (``(nregs, 32)`` uint32, one row per register of the operand vector)."""
    r = np.asarray(regs, dtype=np.uint32)
    if r.shape != (layout.nregs, WARP):
        raise ValueError(f"{layout.name}: expected registers of shape {(layout.nregs, WARP)}, got {r.shape}")
    n = layout.nregs * layout.per_reg
    i = np.arange(n)
    reg, slot = i // layout.per_reg, i % layout.per_reg
    mask = np.uint64((1 << layout.elem_bits) - 1)
    vals = (r[reg].T.astype(np.uint64) >> (slot * layout.elem_bits).astype(np.uint64)) & mask   # (32, n)
    out = np.zeros(layout.shape, dtype=layout.dtype)
    out[layout.row, layout.col] = vals.astype(layout.dtype)
    return out


def scatter(layout: FragmentLayout, dense) -> np.ndarray:
    """The warp's registers (``(nregs, 32)`` uint32) holding the dense matrix ``dense`` (unsigned codes of
    ``elem_bits`` bits, shape ``layout.shape``)."""
    d = np.asarray(dense)
    if d.shape != tuple(layout.shape):
        raise ValueError(f"{layout.name}: expected a {layout.shape} matrix, got {d.shape}")
    vals = d[layout.row, layout.col].astype(np.uint64) & np.uint64((1 << layout.elem_bits) - 1)  # (32, n)
    n = layout.nregs * layout.per_reg
    slot = (np.arange(n) % layout.per_reg) * layout.elem_bits
    shifted = vals << slot.astype(np.uint64)[None, :]
    regs = shifted.reshape(WARP, layout.nregs, layout.per_reg).sum(axis=2)   # disjoint bit fields
    return regs.T.astype(np.uint32)


# ------------------------------------------------------------------------------------------ diagnostics
def describe(layout: FragmentLayout, lanes=None) -> str:
    """Human-readable table: for each lane, each register's elements as ``(row,col)`` low slot first."""
    lanes = range(WARP) if lanes is None else lanes
    lines = [f"{layout.name}: {layout.shape[0]}x{layout.shape[1]} matrix, {layout.nregs} register(s) of "
             f"{layout.per_reg} x {layout.elem_bits}-bit element(s) per lane"]
    for ln in lanes:
        regs = []
        for r in range(layout.nregs):
            els = [f"({layout.row[ln, i]},{layout.col[ln, i]})"
                   for i in range(r * layout.per_reg, (r + 1) * layout.per_reg)]
            regs.append(f"r{r}=" + ("{" + ",".join(els) + "}" if layout.per_reg > 1 else els[0]))
        lines.append(f"  lane {ln:2d}: " + " ".join(regs))
    return "\n".join(lines)
