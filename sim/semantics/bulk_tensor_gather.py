"""The four-row tensor modes of TMA: ``cp.async.bulk.tensor.2d ... .tile::gather4`` (loads) and
``cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group`` (stores), sm_100a.

PTX ISA 9.1 §5.5.3.4 (``.tile::scatter4`` and ``.tile::gather4`` modes), §5.5.3.4.1 (their bounding boxes),
§9.7.9.25.5.2 (cp.async.bulk.tensor: the ``tensorCoords`` table and the ``.load_mode`` qualifier),
§9.7.9.25.5.1 (restrictions on tensor copies: the ``.global.shared::cta`` direction); tma.md §2; the Triton/Gluon
tutorial "Native TMA Gather and Scatter" (shared/seeds/003) for what the hardware checks at run time.

This module holds only what differs from tile mode -- the geometry of the four boxes, the map rule and the
column check.  The issue/completion halves (SMEM image, swizzle, multicast, ``.cta_group``,
complete-tx, bulk async-groups, the TMA engine and the observation bus) are tile mode's, in
:mod:`tcsim.semantics.bulk_tensor`, which calls :func:`check_map` and :func:`plan` for these modes.

Model (PTX §5.5.3.4, §5.5.3.4.1):

* ``tensorCoords`` is ``{col, row0, row1, row2, row3}`` (5 ``.s32``; §9.7.9.25.5.2 table): four bounding boxes
  with start coordinates ``(col, row_k)``.  Each box is one row (boxDim[1] must be 1) of ``n_0 = boxDim[0]``
  elements.  Only 2-D maps, no interleave ("all other constraints and rules of the tile mode apply").
* SMEM image: the four rows stacked in order, row ``k`` at image byte ``k * n_0 * esize`` -- the image of a
  4-row tile box -- and image byte ``i`` lands at ``swizzle(dstMem + i)`` (absolute-address swizzle, as in tile
  mode).  So a gather4 into ``dstMem = tile + 4 * g * rowBytes`` fills rows ``4g..4g+3`` of a swizzled tile
  exactly as one tile-mode load of the whole tile would (the pattern phase comes from the absolute address:
  this is how Triton's ``async_gather`` fills a BLOCK_X-row tile with BLOCK_X / 4 instructions).
* Out of bounds, per box (each row is its own box): a row index outside ``[0, globalDim[1])`` makes the whole
  row out of bounds, a column outside ``[0, globalDim[0])`` that element.  Loads fill OOB elements with zero
  (or the map's OOB-NaN); stores drop them.  A load performs complete-tx of the full image,
  ``4 * n_0 * esize`` bytes, however much of it is out of bounds (tile-mode rule; Triton's ``async_gather``
  expects ``BLOCK_X * BLOCK_Y * esize`` for BLOCK_X / 4 instructions).

Faults (raised at issue, located at the instruction; the common ones are checked by
:mod:`tcsim.semantics.bulk_tensor` for every mode):

* the column's byte offset ``col * esize`` not a multiple of 16 -> :class:`MemoryFault`: the GPU checks this at
  run time and stops the kernel with an illegal instruction (CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal
  instruction was encountered"; the tutorial's ``test_illegal_gather``), for gather4 and scatter4;
* scatter4 with a negative column or row coordinate -> :class:`MemoryFault`, tile mode's rule for the
  ``.global.shared::cta`` direction (PTX §9.7.9.25.5.1: "starting co-ordinates ... must be non-negative"; illegal
  instruction on the GPU, per the tutorial);
* a map that is not 2-D -> tile mode's :class:`MemoryFault` for a map whose rank differs from the instruction's
  ``.2d`` (illegal instruction on the GPU);
* a 2-D map whose boxDim[1] is not 1 (PTX §5.5.3.4.1) -> :class:`VerifyError` naming the rule (the GPU result
  is undefined; an illegal-instruction error is expected (?)); interleaved maps (PTX §5.5.3.4 excludes them) stop
  earlier, at tile mode's UnsupportedError;
* SMEM destination/source alignment and bounds, mbarrier, multicast and map faults: exactly tile mode's (16 B;
  32 B / 64 B under the 128B_atom_32B / 128B_atom_64B swizzles).
* Form errors ptxas rejects (caught at decode, :class:`VerifyError` with file:line:col): ``.tile::gather4`` /
  ``.tile::scatter4`` with ``.1d`` / ``.3d`` ..., a coordinate vector that is not 5 long, gather4 on a store or
  scatter4 on a load.

Unsettled (?): whether the GPU needs a swizzled gather4 ``dstMem`` aligned to more than 16 B (tma.md §3: CUTLASS
and the CUDA programming guide use 128 B (?); Triton's 4-row groups land on multiples of 4 row lengths, which
are 128-byte multiples for every swizzled layout it builds, and necessarily *not* on the 1024-byte 128B-swizzle
repeat) -- tcsim keeps tile mode's rule;
Triton/Gluon's extra limits (at least 8 rows, rows of at least 32 bytes) are compiler rules and not checked;
whether ``cp.async.bulk.prefetch.tensor ... .tile::gather4`` checks the column alignment (tcsim: it checks the map
only).

Not supported: ``cp.reduce.async.bulk.tensor ... .tile::scatter4`` (ptxas 13.0 accepts it, the PTX ISA 9.1 syntax
table does not list it) -> UnsupportedError at decode.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.bulk_tensor_forms import ROWS4_MODES as MODES, ROWS4_SECTION as MODES_SECTION
from tcsim.isa.errors import MemoryFault, VerifyError
from tcsim.isa.tensormap import ROWS4, TensorMap

#: ``{col, row0, row1, row2, row3}``, as the diagnostics name them
COORD_NAMES = ("column coordinate col",) + tuple(f"row coordinate row{k}" for k in range(ROWS4))
NCOORDS = len(COORD_NAMES)
#: how a fault the GPU reports as an illegal instruction is worded (also used by :mod:`.bulk_tensor`)
ILLEGAL = "the GPU stops the kernel with an illegal instruction (CUDA_ERROR_ILLEGAL_INSTRUCTION)"


def check_map(tm: TensorMap, mode: str, what: str, lane: int) -> None:
    """PTX ISA §5.5.3.4 / §5.5.3.4.1: the map rules of the four-row modes (2-D, boxDim[1] == 1, no interleave);
    VerifyError otherwise."""
    problem = tm.rows4_problem()
    if problem is not None:
        raise VerifyError(f"{what}: the tensor map (lane {lane}) cannot be used with .{mode}: {problem}; on the GPU "
                          f"the result is undefined (expect an illegal-instruction error (?))",
                          expected=f"a 2-D tensor map with boxDim = ({{cols}}, 1), i.e. TensorMap.tiled(array, "
                                   f"box=(1, cols)) ({MODES_SECTION}, §5.5.3.4.1)")


def check_column(tm: TensorMap, mode: str, col: int, what: str, lane: int) -> None:
    """The column's byte offset must be a multiple of 16 (a run-time check of the GPU that PTX ISA §5.5.3.4 does
    not state; the Triton/Gluon tutorial documents it)."""
    es = tm.esize
    if (col * es) % 16:
        per = 16 // es if es < 16 else 1
        raise MemoryFault(f"{what}: column coordinate col = {col} (lane {lane}) starts each row at byte offset "
                          f"{col * es} ({col} x {es}-byte {tm.dtype}), which is not a multiple of 16; for "
                          f".{mode} {ILLEGAL}",
                          expected=f"a column coordinate whose byte offset col * {es} is a multiple of 16 bytes "
                                   f"(col a multiple of {per} for {tm.dtype}); the Triton/Gluon tutorial on TMA "
                                   f"gather/scatter documents this run-time check")


def rows4_geometry(tm: TensorMap, col: int, rows) -> tuple[np.ndarray, np.ndarray]:
    """PTX ISA §5.5.3.4.1: byte offsets (relative to the global address) and in-bounds flags of the ``4 * n_0``
    elements of the four one-row boxes, in SMEM image order (row k, then column), flat."""
    n0 = tm.traversed()[0]
    es = tm.esize
    g = np.int64(col) + np.arange(n0, dtype=np.int64)
    r = np.asarray(rows, dtype=np.int64)
    offs = r[:, None] * np.int64(tm.global_strides[0]) + g[None, :] * np.int64(es)
    inb = ((r >= 0) & (r < tm.global_dims[1]))[:, None] & ((g >= 0) & (g < tm.global_dims[0]))[None, :]
    return offs.reshape(-1), inb.reshape(-1)


def plan(tm: TensorMap, mode: str, coords: list, what: str, lane: int) -> tuple[np.ndarray, np.ndarray, int]:
    """PTX ISA §5.5.3.4: ``(offsets, in_bounds, nbytes)`` of one ``.tile::gather4`` / ``.tile::scatter4`` at
    ``{col, row0..row3}`` (the image is four rows, :meth:`TensorMap.rows4_bytes` bytes), after the column check."""
    check_column(tm, mode, coords[0], what, lane)
    offs, inb = rows4_geometry(tm, coords[0], coords[1:])
    return offs, inb, tm.rows4_bytes()


__all__ = ["MODES", "COORD_NAMES", "NCOORDS", "ILLEGAL", "check_map", "check_column", "rows4_geometry", "plan"]
