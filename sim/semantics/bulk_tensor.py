"""Tensor (tile-mode) bulk copies through a CUtensorMap: cp.async.bulk.tensor, cp.reduce.async.bulk.tensor,
cp.async.bulk.prefetch.tensor.

PTX ISA 9.1 §9.7.9.25.5.1 (restrictions on tensor copies), §9.7.9.25.5.2 (cp.async.bulk.tensor),
§9.7.9.25.5.3 (cp.reduce.async.bulk.tensor), §9.7.9.25.5.4 (cp.async.bulk.prefetch.tensor), §5.5.3 (tiled
mode bounding box), §5.5.7 (swizzling modes); tma.md §2-§4.

Forms executed (``.tile`` is the default load mode and may be omitted; ``.tile::gather4`` / ``.tile::scatter4``
are described in :mod:`tcsim.semantics.bulk_tensor_gather`):

* loads ``cp.async.bulk.tensor.{1..5}d.{shared::cta|shared::cluster}.global{.tile}.mbarrier::complete_tx::bytes
  {.multicast::cluster}{.cta_group::1|2}{.L2::cache_hint} [dstMem], [tensorMap, {c0, ...}], [mbar]{, ctaMask}{, policy}``
* stores ``cp.async.bulk.tensor.{1..5}d.global.shared::cta{.tile}.bulk_group{.L2::cache_hint}
  [tensorMap, {c0, ...}], [srcMem]{, policy}``
* reductions ``cp.reduce.async.bulk.tensor.{1..5}d.global.shared::cta.{add|min|max|inc|dec|and|or|xor}{.tile}
  .bulk_group{.L2::cache_hint} [tensorMap, coords], [srcMem]{, policy}`` for the element types of the PTX
  table (add: u32 s32 u64 f32 f16 bf16; min/max: u32 s32 u64 s64 f16 bf16; inc/dec: u32; and/or/xor: 32/64-bit
  integers), the type coming from the tensor map.
* ``cp.async.bulk.prefetch.tensor.{1..5}d.L2.global{.tile}{.L2::cache_hint} [tensorMap, coords]{, policy}``:
  a hint (the map and coordinates are still read and checked).
* four-row loads ``cp.async.bulk.tensor.2d.{shared::cta|shared::cluster}.global.tile::gather4
  .mbarrier::complete_tx::bytes{.multicast::cluster}{.cta_group::1|2}{.L2::cache_hint}
  [dstMem], [tensorMap, {col, row0, row1, row2, row3}], [mbar]{, ctaMask}{, policy}``, four-row stores
  ``cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group{.L2::cache_hint}
  [tensorMap, {col, row0, row1, row2, row3}], [srcMem]{, policy}`` and
  ``cp.async.bulk.prefetch.tensor.2d.L2.global.tile::gather4{.L2::cache_hint} [tensorMap, {col, row0..row3}]``
  (sm_100a; PTX ISA §5.5.3.4): the same issue/completion machinery with the four-row geometry, map rules and
  run-time faults of :mod:`tcsim.semantics.bulk_tensor_gather`.

The tensor-map operand is the generic address of the 128-byte map (tcsim's encoding, :mod:`tcsim.isa.tensormap`)
in ``.param``, ``.const`` or ``.global`` memory: a register holding the *generic* address (from ``cvta.param``
as nvcc and Triton emit; a raw ``.param`` offset in a register is read as a generic address and faults) or the
name of a ``.global`` variable (a ``.param`` / ``.const`` / ``.shared`` name is rejected at decode, as ptxas
does: "State space mismatch"); it is read (64-byte aligned) and decoded when the instruction issues (edits
made to the map after the issue do not affect the copy).

Model of one box (tma.md §2): ``n_i = ceil(boxDim[i] / elementStrides[i])`` (dim-0 element stride ignored
without interleave); box element ``(x_0..x_{r-1})`` is global element ``c_i + x_i * elementStrides[i]``; the
SMEM image is dense with dim 0 fastest, and image byte ``k`` lands at SMEM address ``swizzle(dstMem + k)``
(swizzle on absolute addresses, :mod:`tcsim.isa.swizzle`).  Loads fill out-of-bounds elements with zeros (or, with
``oob_fill='nan'``, the NaN pattern of :data:`OOB_NAN_BITS`) and perform complete-tx(``esize * prod n_i``) —
the full box, even when it is partly or wholly out of bounds — once per destination CTA.  Stores and
reductions skip out-of-bounds elements.

Multicast / CTA pairs: with ``.multicast::cluster`` each CTA selected by ctaMask receives the box at the
CTA-relative offset of ``dstMem``.  ``.cta_group::1`` (default): the mbarrier must be in the destination
CTA (multicast: the same offset in every destination).  ``.cta_group::2``: the mbarrier may be in the
destination CTA or its pair peer; with multicast each destination's complete-tx goes to the pair member whose
rank parity equals that of the CTA holding ``mbar``.

Measured on an H100 (tests/golden/tma_h100, recorded with ``bash calib/tma_device_run.sh``): a tile-mode copy (load,
store or reduction) whose dim-0 start coordinate is not on a 16-byte boundary of the row (``c0 * esize % 16``)
is an illegal instruction -> MemoryFault; the NaN fill is 0x7FF7 in every 16-bit half (:data:`OOB_NAN_BITS`);
a TFLOAT32 / TFLOAT32_FTZ load rounds each element to tf32, to nearest even (:func:`tf32_image`); reduce-add
also runs for FLOAT32_FTZ and FLOAT64 maps (outside the PTX table), an f32 NaN result being 0x7FFFFFFF.

Faults: a destination/source SMEM address not 16-byte aligned (32 for 128B_atom_32B{_flip_8B}, 64 for
128B_atom_64B) -> MemoryFault; a tensor map whose rank differs from the instruction's ``.Nd`` -> MemoryFault
(PTX §9.7.9.25.5.2: ``.dim`` is the tensor's dimensionality; an H100 stops both a ``.3d`` copy through a rank-2
map and a ``.2d`` copy through a rank-3 map with CUDA_ERROR_ILLEGAL_INSTRUCTION, tests/golden/tma_h100;
for prefetch.tensor the same check is assumed (?)); a store/reduce with a negative start coordinate ->
MemoryFault (PTX §9.7.9.25.5.1 lists "starting co-ordinates must be non-negative" for the .global.shared::cta
direction; an H100 stops with an illegal instruction for rank 2 and 3, tma.md marks whether it applies to all
types as unsettled (?)); in-bounds elements outside the global
allocation, SMEM images outside SMEM, a map not 64-byte aligned or in shared/local memory, bytes that are not
a valid tensor map -> MemoryFault; the 8-byte-flip swizzle on a store -> VerifyError.

Unsettled points (tma.md): a swizzled box whose ``dstMem`` is not on the pattern repeat (256/512/1024 B) is
accepted and sees the pattern at the phase of its absolute address (PTX requires only 16 B; CUTLASS aligns to
the repeat).  The f16/bf16 reduce-add rounds to nearest even without flushing subnormals (?).

Not supported (UnsupportedError naming the form): ``.im2col``, ``.im2col::w``, ``.im2col::w::128``,
``.im2col_no_offs`` and ``cp.reduce.async.bulk.tensor ... .tile::scatter4`` (decode time); interleaved maps and
packed sub-byte data types (when the map is read).
"""
from __future__ import annotations

import functools

import numpy as np

from tcsim.isa.cache_policy_forms import check_policy_operand
from tcsim.isa import ir
from tcsim.isa.bulk_tensor_forms import SECTION, parse_bulk_tensor
from tcsim.isa.errors import ILLEGAL_INSTRUCTION, LaunchError, MemoryFault, UnsupportedError, VerifyError
from tcsim.isa.swizzle import SWIZZLE_SPAN, swizzle
from tcsim.isa.tensormap import ALIGN as TMAP_ALIGN, SIZE as TMAP_SIZE, TensorMap
from .. import memory as M
from ..agents.tma import TmaEngine
from . import bulk_tensor_gather as rows4
from .bulk_tensor_gather import ILLEGAL
from ..numerics.convert import cvt
from ..numerics.fp import fadd, fmax, fmin
from ..agents.port import byte_runs
from .bulk_copy import (AlignmentFault, alignment_findings, check_source_resident, cta_mask_targets, live_mbarrier,
                        new_op, shared_target)
from .registry import semantics


#: OOB fill of oob_fill='nan' (NAN_REQUEST_ZERO_FMA): the 16-bit pattern 0x7FF7 repeated over the element, for
#: every float type (f16/bf16 0x7FF7, f32/tf32 0x7FF77FF7, f64 0x7FF77FF77FF77FF7) -- measured on an H100
#: (tests/golden/tma_h100: oob_nan_*, oob_r*_float32_nan, estride_r4_f64_nan, mcast4_oob_nan)
OOB_NAN_BITS = {"FLOAT16": 0x7FF7, "BFLOAT16": 0x7FF7, "FLOAT32": 0x7FF77FF7, "FLOAT32_FTZ": 0x7FF77FF7,
                "TFLOAT32": 0x7FF77FF7, "TFLOAT32_FTZ": 0x7FF77FF7, "FLOAT64": 0x7FF77FF77FF77FF7}
#: the NaN a TFLOAT32 load writes for any NaN element (H100: dtype_tfloat32*)
TF32_NAN = 0x7FFFE000
#: tile mode: the start coordinate of dim 0 must address a 16-byte boundary (c0 * element size % 16 == 0); an
#: H100 stops loads, stores and reductions that break it with an illegal instruction (tests/golden/tma_h100:
#: the fault_inner_coord_* cases; every recorded case with an unaligned c0 faulted, every aligned one ran)
INNER_COORD_ALIGN = 16


def tf32_image(u: np.ndarray) -> np.ndarray:
    """What a TFLOAT32 / TFLOAT32_FTZ tensor load writes for f32 elements ``u`` (uint32): each rounded to tf32 to
    nearest even exactly as ``cvt.rn.tf32.f32`` (:func:`tcsim.numerics.convert.cvt`): subnormals kept (no flush,
    even for _FTZ), every NaN :data:`TF32_NAN`.  Measured on an H100 (dtype_tfloat32, dtype_tfloat32_ftz: 384
    elements incl. a tie, subnormals, infinities and NaNs)."""
    return np.asarray(cvt("tf32", "f32", np.asarray(u, dtype=np.uint32), rnd="rn")).astype(np.uint32)


#: minimum SMEM alignment of a box per swizzle mode (tma.md §3)
SMEM_ALIGN = {"128B_atom_32B": 32, "128B_atom_32B_flip_8B": 32, "128B_atom_64B": 64}
#: SMEM alignment of a tile-mode box: an H100 faults with a misaligned address for a load into SMEM offset 16 or
#: 48 (any swizzle) and runs it at 128, 256, 384, 512 and 896 (tests/golden/tma_h100 phase_*); stores from
#: offsets 16 and 64 fault too (fault_store_smem_*); swizzled boxes need no more (the pattern follows the
#: absolute address)
TILE_SMEM_ALIGN = 128


# ---------------------------------------------------------------------------------------------- geometry
def box_geometry(tm: TensorMap, coords, granules: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Byte offsets (relative to the global address) and in-bounds flags of every box element, in SMEM
    image order (dim 0 fastest).  Both arrays are flat with ``prod(n_i)`` entries.  ``granules`` (stores and
    reductions): a row ends with the 16-byte granule that holds its last element -- an H100 writes whole
    granules, so the elements between globalDim[0] and the next 16-byte boundary of the row are written too
    (tests/golden/tma_h100: store_* and reduce_* boxes over the far edge of dim 0)."""
    n = tm.traversed()
    r = tm.rank
    es = tm.esize
    offs = np.zeros((), dtype=np.int64)
    inb = np.ones((), dtype=bool)
    # numpy axis k (outermost first) is tensor dim r-1-k
    for d in range(r - 1, -1, -1):
        step = 1 if (d == 0 and tm.interleave == "none") else tm.element_strides[d]
        g = np.int64(coords[d]) + np.arange(n[d], dtype=np.int64) * step
        stride = es if d == 0 else tm.global_strides[d - 1]
        offs = offs[..., None] + g * np.int64(stride)
        end = -(-tm.global_dims[0] * es // 16) * 16 // es if (granules and d == 0) else tm.global_dims[d]
        inb = inb[..., None] & (g >= 0) & (g < end)
    return offs.reshape(-1), inb.reshape(-1)




# ---------------------------------------------------------------------------------------------- decoding
@semantics("cp.async.bulk.tensor")
def decode_bulk_tensor(ins, info):
    """PTX ISA §9.7.9.25.5.2 cp.async.bulk.tensor, §9.7.9.25.5.3 cp.reduce.async.bulk.tensor and
    §9.7.9.25.5.4 cp.async.bulk.prefetch.tensor (tile mode; the four-row modes .tile::gather4 / .tile::scatter4,
    §5.5.3.4).  The form is parsed and checked in :mod:`tcsim.isa.bulk_tensor_forms`; see the module docstring."""
    form = parse_bulk_tensor(ins, info)
    check_policy_operand(ins, getattr(form, 'policy', None), info)
    f = form.qualifiers()
    if form.direction == "prefetch":
        return alignment_findings(_make_prefetch(ins, f, form.tmap, form.policy))
    if form.direction == "load":
        return alignment_findings(_make_load(ins, f, form.spaces[0], form.dst, form.tmap, form.mbar_addr, form.mask,
                                             form.policy))
    return alignment_findings(_make_store(ins, f, form.tmap, form.src, form.policy))


# ---------------------------------------------------------------------------------------------- the map
def read_tensor_maps(ctx, op: ir.Address, lanes) -> dict:
    """Read and decode the tensor map named by ``op`` for each lane: {lane: TensorMap}.  The 128 bytes are read
    through the context (one 'ld' mem event) at issue; they must be 64-byte aligned in param/const/global."""
    addrs = ctx.address(op)
    mask = np.zeros(32, dtype=bool)
    mask[lanes] = True
    base = op.base
    space = "generic"
    if isinstance(base, ir.Sym):
        space = ctx.symbol_space(base.name) or "generic"       # .global (decode rejects the other spaces)
    else:
        for lane in lanes:
            a = int(addrs[lane])
            for lo, name in ((M.SHARED_WINDOW, "shared"), (M.LOCAL_WINDOW, "local")):
                if lo <= a < lo + M.WINDOW_SIZE:
                    raise MemoryFault(f"tensor map address 0x{a:x} (lane {lane}) is in .{name} memory",
                                      expected="the generic address of a tensor map in .param, .const or .global "
                                               "memory (PTX ISA §9.7.9.25.5.2)")
    try:
        raw = ctx.load(space, addrs, TMAP_SIZE, mask=mask, align=TMAP_ALIGN)
    except MemoryFault as e:
        e.message = f"reading the tensor map operand {op.base}: {e.message}"
        raise e.with_context()
    out = {}
    for lane in lanes:
        try:
            out[int(lane)] = _decoded_map(raw[lane].tobytes())
        except (LaunchError, MemoryFault) as e:
            raise MemoryFault(f"the tensor map at 0x{int(addrs[lane]):x} (lane {lane}) is not valid: {e.message}",
                              expected=e.expected) from None
    return out


@functools.lru_cache(maxsize=64)
def _decoded_map(raw: bytes) -> TensorMap:
    """TensorMap.decode, once per 128-byte map (a kernel issues every copy through the same few maps); the map is
    shared by the copies that name it and read only.  A map that does not decode raises on every issue."""
    return TensorMap.decode(raw)


def _check_map(tm: TensorMap, f: dict, what: str, lane: int) -> None:
    """What every tensor instruction checks of the map it read at issue: a layout tcsim executes; a rank equal to
    the instruction's ``.Nd`` (PTX ISA §9.7.9.25.5.2: ``.dim`` is the dimensionality of the tensor the map
    describes; on an H100 a mismatch in either direction is CUDA_ERROR_ILLEGAL_INSTRUCTION); the map rules of the
    four-row modes (:func:`tcsim.semantics.bulk_tensor_gather.check_map`)."""
    _check_supported_map(tm, lane)
    dim = f["dim"]
    if tm.rank != dim:
        raise MemoryFault(f"{what}: the instruction is .{dim}d, but the tensor map (lane {lane}) has rank {tm.rank}: "
                          f"the instruction's dimensionality differs from the map's rank and {ILLEGAL}",
                          expected=f"a tensor map of rank {dim} for a .{dim}d instruction ({SECTION})",
                          gpu_error=ILLEGAL_INSTRUCTION)
    if f["mode"] in rows4.MODES:
        rows4.check_map(tm, f["mode"], what, lane)


def _check_supported_map(tm: TensorMap, lane: int) -> None:
    if tm.data_type.kind == "packed":
        raise UnsupportedError(f"tensor map (lane {lane}) has packed sub-byte data type {tm.dtype}, which tcsim "
                               f"does not support yet")
    if tm.interleave != "none":
        raise UnsupportedError(f"tensor map (lane {lane}) uses interleave {tm.interleave}, which tcsim does not "
                               f"support yet")


def _coords(ctx, op: ir.Address) -> list:
    return [ctx.read(c, "s32").astype(np.int64) for c in op.coords]


def image_offsets(nbytes: int, tm: TensorMap) -> np.ndarray:
    """Offsets from ``dstMem`` (before the swizzle) of the 8-byte pieces of a box image of ``nbytes``: the image is
    dense, except that under a swizzle whose span (32/64/128 B) is wider than the box's inner row
    (``boxDim[0] * esize``), each row starts on its own span -- the rest of the span is left untouched, so the
    box occupies rows x span bytes (measured on an H100: tests/golden/tma_h100 swizzle_*_narrow*, rank*_uint16_128B;
    a box that thereby runs past the end of SMEM is an illegal address there)."""
    return _image_offsets(nbytes, tm.swizzle, tm.box_dims[0] * tm.esize)


def _image_offsets(nbytes: int, swz: str, row: int) -> np.ndarray:
    k = np.arange(0, nbytes, 8, dtype=np.int64)
    span = SWIZZLE_SPAN.get(swz) or 0
    if row < span:
        k = k // row * span + k % row
    return k


def _check_box_smem(cta, off: int, tm: TensorMap, what: str, lane: int, nbytes: int, mode: str = "tile"):
    """SMEM alignment of a box image of ``nbytes`` and the swizzled addresses of its 8-byte pieces
    (bounds-checked).  Tile mode needs :data:`TILE_SMEM_ALIGN`; the four-row modes 16 bytes (or the swizzle's
    atom)."""
    need = max(SMEM_ALIGN.get(tm.swizzle, 16), TILE_SMEM_ALIGN if mode == "tile" else 16)
    if off % need:
        why = (f" (required by swizzle {tm.swizzle})" if need == SMEM_ALIGN.get(tm.swizzle) else
               " (required of tile-mode tensor copies; measured on an H100)" if need == TILE_SMEM_ALIGN else "")
        raise AlignmentFault(f"{what} = 0x{M.shared_address(cta.rank, off):x} (lane {lane}) is not {need}-byte "
                             f"aligned{why}; the GPU faults with a misaligned address (CUDA_ERROR_MISALIGNED_ADDRESS)",
                             lane=lane,
                             expected=f"a shared-memory box address aligned to {need} bytes (PTX ISA §5.5.3.1, "
                                      f"tma.md §3, tests/golden/tma_h100 phase_*_at16)")
    pieces, lo, hi = _box_pieces_cached(int(off), int(nbytes), tm.swizzle, tm.box_dims[0] * tm.esize)
    if pieces.size:
        if lo < cta.smem.base or hi > cta.smem.end:
            raise MemoryFault(f"{what}: the {nbytes}-byte box image at SMEM offset 0x{off:x} (lane {lane}) "
                              f"extends to 0x{hi:x}, past the end of {cta.smem.name} ({cta.smem.size} bytes at "
                              f"[0x{cta.smem.base:x}, 0x{cta.smem.end:x}))",
                              expected="the whole box inside the CTA's shared memory")
    return pieces


def _box_pieces(off: int, nbytes: int, swz: str, row: int):
    """(swizzled SMEM offsets of the 8-byte pieces of a box image at ``off``, lowest, highest + 8), computed once per
    (offset, size, swizzle, inner row bytes): the pipelined kernels land their boxes in the same few slots.  The
    array is read-only (shared)."""
    pieces = swizzle(np.int64(off) + _image_offsets(nbytes, swz, row), swz)
    pieces.setflags(write=False)
    if not pieces.size:
        return pieces, 0, 0
    return pieces, int(pieces.min()), int(pieces.max()) + 8


_box_pieces_cached = functools.lru_cache(maxsize=512)(_box_pieces)


def _check_global(ctx, tm: TensorMap, offs, inb, lane: int, what: str):
    if not inb.any():
        return np.zeros(0, dtype=np.uint64)
    addrs = np.int64(tm.global_address) + offs[inb]
    lo, hi = int(addrs.min()), int(addrs.max()) + tm.esize
    alloc = ctx.gmem.allocation_of(lo)
    if alloc is None or hi > alloc.end or ctx.gmem.allocation_of(hi - 1) is not alloc:
        bad = lo if alloc is None else hi - 1
        raise MemoryFault(f"{what} (lane {lane}): in-bounds elements of the box span global [0x{lo:x}, 0x{hi:x}), "
                          f"outside one allocation: {ctx.gmem.describe(bad)}",
                          expected="a tensor map whose dims and strides stay inside its buffer")
    return addrs.astype(np.uint64)


# ---------------------------------------------------------------------------------------------- plans
def _plan(f: dict, tm: TensorMap, c: list, what: str, lane: int, store: bool):
    """The elements one instruction moves: (byte offsets relative to the global address, in SMEM image order;
    their in-bounds flags; the image size in bytes), after the mode's run-time checks of the coordinates.  Tile
    mode's box is :func:`box_geometry` (PTX ISA §5.5.3), the four-row modes' :func:`bulk_tensor_gather.plan`
    (§5.5.3.4).  Stores and reductions (``.global.shared::cta``) need non-negative start coordinates
    (§9.7.9.25.5.1)."""
    if f["mode"] == "tile":
        if (c[0] * tm.esize) % INNER_COORD_ALIGN:
            raise AlignmentFault(f"{what}: start coordinate c0 = {c[0]} (lane {lane}) of a {tm.dtype} map is "
                                 f"{c[0] * tm.esize} bytes into the row, not a multiple of {INNER_COORD_ALIGN}; "
                                 f"{ILLEGAL}", lane=lane,
                                 expected=f"c0 * element size ({tm.esize} B) a multiple of {INNER_COORD_ALIGN} bytes "
                                       f"(measured on an H100: tests/golden/tma_h100, fault_inner_coord_*)",
                                 gpu_error=ILLEGAL_INSTRUCTION)
        offs, inb = box_geometry(tm, c, granules=store)
        nbytes = tm.box_bytes()
    else:
        offs, inb, nbytes = rows4.plan(tm, f["mode"], c, what, lane)
    if store:
        names = rows4.COORD_NAMES if f["mode"] in rows4.MODES else [f"start coordinate c{i}" for i in range(len(c))]
        for name, v in zip(names, c):
            if v < 0:
                raise MemoryFault(f"{what}: {name} = {v} (lane {lane}) is negative; {ILLEGAL}",
                                  expected="non-negative starting coordinates for the .global.shared::cta direction "
                                           "(PTX ISA §9.7.9.25.5.1; elements past the high end are dropped instead)",
                                  gpu_error=ILLEGAL_INSTRUCTION)
    return offs, inb, nbytes


# ---------------------------------------------------------------------------------------------- loads
def _make_load(ins, f, dst_space, dst_op, tmap_op, mbar_op, mask_op, policy_op):
    what = ins.full_opcode
    cta_group = f["cta_group"]

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        dst = ctx.address(dst_op)
        mbar = ctx.address(mbar_op)
        coords = _coords(ctx, tmap_op)
        cmask = ctx.read(mask_op, "u16") if mask_op is not None else None
        if policy_op is not None:
            ctx.read(policy_op, "b64")
        maps = read_tensor_maps(ctx, tmap_op, lanes)
        engine = TmaEngine.of(ctx)
        for lane in lanes:
            lane = int(lane)
            tm = maps[lane]
            _check_map(tm, f, what, lane)
            c = [int(v[lane]) for v in coords]
            d, mb = int(dst[lane]), int(mbar[lane])
            dcta, doff = shared_target(ctx, d, dst_space, "cp.async.bulk.tensor destination [dstMem]", lane)
            mcta, moff = shared_target(ctx, mb, "shared::cluster" if dst_space == "shared::cluster" or
                                       cta_group == 2 else "shared::cta",
                                       "cp.async.bulk.tensor mbarrier [mbar]", lane)
            if cmask is not None:
                targets = cta_mask_targets(ctx, int(cmask[lane]), lane)
            else:
                targets = [dcta]
            signals = []
            for t in targets:
                if cmask is None:
                    s = mcta
                    ok = s is t if cta_group == 1 else (s.rank >> 1) == (t.rank >> 1)
                    if not ok:
                        raise MemoryFault(f"cp.async.bulk.tensor mbarrier [mbar] = 0x{mb:x} (lane {lane}) is in "
                                          f"{s.label}, but with .cta_group::{cta_group} it must be in the "
                                          f"destination CTA {t.label}"
                                          + (" or its pair peer" if cta_group == 2 else ""),
                                          expected=f"an mbarrier in the destination CTA ({SECTION})")
                elif cta_group == 1:
                    s = t
                else:
                    s = ctx.cluster.cta_by_rank((t.rank & ~1) | (mcta.rank & 1))
                signals.append(s)
            offs, inb, nbytes = _plan(f, tm, c, what, lane, store=False)
            pieces = None
            for t in targets:
                pieces = _check_box_smem(t, doff, tm, "cp.async.bulk.tensor destination [dstMem]", lane, nbytes,
                                         f["mode"])
            for s in set(signals):
                live_mbarrier(s, moff, "cp.async.bulk.tensor mbarrier [mbar]", lane)
            gaddrs = _check_global(ctx, tm, offs, inb, lane, "cp.async.bulk.tensor source")
            es = tm.esize
            if tm.oob_fill == "nan":
                fill = np.frombuffer(int(OOB_NAN_BITS[tm.dtype]).to_bytes(es, "little"), dtype=np.uint8)
            else:
                fill = np.zeros(es, dtype=np.uint8)

            tf32 = tm.dtype in ("TFLOAT32", "TFLOAT32_FTZ")

            def read(engine=engine, gaddrs=gaddrs, inb=inb, es=es, fill=fill, tf32=tf32):
                image = np.empty((inb.size, es), dtype=np.uint8)
                image[:] = fill
                if gaddrs.size:
                    data = engine.read_global(gaddrs, es, runs=True)
                    if tf32:
                        data = tf32_image(np.ascontiguousarray(data).view(np.uint32)).view(np.uint8).reshape(-1, es)
                    image[inb] = data
                return image.reshape(-1)

            def write(image, engine=engine, targets=targets, signals=signals, pieces=pieces, doff=doff,
                      moff=moff, nbytes=nbytes):
                rows = image.reshape(-1, 8)
                for t in targets:
                    engine.write_smem(t, pieces, rows, who="TMA write", runs=True)
                for s in signals:
                    engine.complete_tx(s, moff, nbytes, what)

            op = engine.submit(new_op(ctx, lane, "load", nbytes, read, write, coords=c, tensor_map=tm,
                                      mode=f["mode"]))
            for s in signals:
                engine.aim(op, s, moff)

    return run


# ---------------------------------------------------------------------------------------------- stores
_RED_TYPES = {
    # FLOAT32_FTZ and FLOAT64 are not in the PTX table, but an H100 performs the add for them
    # (reduce_add_float32_ftz, reduce_add_float64 in tests/golden/tma_h100)
    "add": {"UINT32": "u32", "INT32": "s32", "UINT64": "u64", "FLOAT32": "f32", "FLOAT16": "f16",
            "BFLOAT16": "bf16", "FLOAT32_FTZ": "f32.ftz", "FLOAT64": "f64"},
    "min": {"UINT32": "u32", "INT32": "s32", "UINT64": "u64", "INT64": "s64", "FLOAT16": "f16",
            "BFLOAT16": "bf16"},
    "inc": {"UINT32": "u32"},
    # .b64 through an INT64 map is an illegal instruction on an H100 (reduce_{and,or,xor}_int64): UINT64 only
    "and": {"UINT32": "b32", "INT32": "b32", "UINT64": "b64"},
}
_RED_TYPES["max"] = _RED_TYPES["min"]
_RED_TYPES["dec"] = _RED_TYPES["inc"]
_RED_TYPES["or"] = _RED_TYPES["xor"] = _RED_TYPES["and"]


def reduce_elements(redop: str, ptype: str, old: np.ndarray, src: np.ndarray) -> np.ndarray:
    """Element-wise ``old <redop> src`` on raw bytes (rows of ``esize`` bytes); returns new raw bytes.
    PTX ISA §9.7.9.25.5.3 (each element reduction is .relaxed.gpu)."""
    es = old.shape[1]
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[es]
    a = np.ascontiguousarray(old).view(uint).reshape(-1)
    b = np.ascontiguousarray(src).view(uint).reshape(-1)
    if ptype == "f64":
        # one f64 add; a NaN operand passes through unchanged (not quieted), the old value's first (measured on an
        # H100: reduce_add_float64, 70 elements incl. NaN, infinity and subnormal operands)
        x, y = a.view(np.float64), b.view(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            r = (x + y).view(np.uint64)
        r = np.where(np.isnan(y), b, r)
        r = np.where(np.isnan(x), a, r).astype(np.uint64)
        return np.ascontiguousarray(r).view(np.uint8).reshape(-1, es)
    if ptype in ("f16", "bf16", "f32", "f32.ftz"):
        # the scalar float instructions' numerics (sim.numerics.fp): add.rn{.ftz} (PTX ISA §9.7.3.1 / §9.7.4.1) and
        # min/max (§9.7.3.10-11 / §9.7.4.8-9).  Measured on an H100 (tests/golden/tma_h100, reduce_*): one rounding
        # to nearest even, NaN results canonical (0x7FFFFFFF / 0x7FFF), a NaN loses to a number in min/max,
        # -0 < +0, subnormals kept except through a FLOAT32_FTZ map, which flushes operands and result
        fmt = ptype.split(".")[0]
        if redop == "add":
            r = fadd(fmt, a, b, rnd="rn", ftz=ptype == "f32.ftz")
        else:
            r = (fmin if redop == "min" else fmax)(fmt, a, b)
        return np.ascontiguousarray(np.asarray(r).astype(uint)).view(np.uint8).reshape(-1, es)
    if ptype[0] == "s":
        sint = {4: np.int32, 8: np.int64}[es]
        x, y = a.view(sint), b.view(sint)
    else:
        x, y = a, b
    with np.errstate(over="ignore"):
        if redop == "add":
            r = x + y
        elif redop == "min":
            r = np.minimum(x, y)
        elif redop == "max":
            r = np.maximum(x, y)
        elif redop == "inc":
            r = np.where(x >= y, uint(0), x + uint(1))
        elif redop == "dec":
            r = np.where((x == 0) | (x > y), y, x - uint(1))
        elif redop == "and":
            r = x & y
        elif redop == "or":
            r = x | y
        else:
            r = x ^ y
    return np.ascontiguousarray(r).view(uint).view(np.uint8).reshape(-1, es)


def _make_store(ins, f, tmap_op, src_op, policy_op):
    what = ins.full_opcode
    redop = f["redop"]

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        src = ctx.address(src_op)
        coords = _coords(ctx, tmap_op)
        if policy_op is not None:
            ctx.read(policy_op, "b64")
        maps = read_tensor_maps(ctx, tmap_op, lanes)
        engine = TmaEngine.of(ctx)
        for lane in lanes:
            lane = int(lane)
            tm = maps[lane]
            _check_map(tm, f, what, lane)
            if tm.swizzle == "128B_atom_32B_flip_8B":
                raise VerifyError(f"{what}: swizzle 128B_atom_32B_flip_8B is only valid for loads "
                                  f"(global -> shared)", expected="a tensor map with another swizzle mode")
            ptype = None
            if redop is not None:
                ptype = _RED_TYPES[redop].get(tm.dtype)
                if ptype is None:
                    raise VerifyError(f"{what}: .{redop} is not defined for tensor-map data type {tm.dtype}",
                                      expected=f"one of {', '.join(_RED_TYPES[redop])} ({SECTION[:-1]}3 table)",
                                      gpu_error=ILLEGAL_INSTRUCTION)    # ptxas cannot see the map's type: the
                    # GPU traps at the instruction (tests/golden/tma_h100, reduce_bad_*)
            c = [int(v[lane]) for v in coords]
            offs, inb, nbytes = _plan(f, tm, c, what, lane, store=True)
            s = int(src[lane])
            scta, soff = shared_target(ctx, s, "shared::cta", "cp.async.bulk.tensor source [srcMem]", lane)
            pieces = _check_box_smem(scta, soff, tm, "cp.async.bulk.tensor source [srcMem]", lane, nbytes,
                                     f["mode"])
            gaddrs = _check_global(ctx, tm, offs, inb, lane, "cp.async.bulk.tensor destination")
            es = tm.esize

            def read(engine=engine, scta=scta, pieces=pieces, issued=ctx.now):
                check_source_resident(scta, what, engine)
                return engine.read_smem(scta, pieces, 8, reader=what, issued_at=issued, runs=True).reshape(-1)

            def write(image, engine=engine, gaddrs=gaddrs, inb=inb, es=es, ptype=ptype):
                if gaddrs.size == 0:
                    return
                data = image.reshape(-1, es)[inb]
                if ptype is not None:         # the reduction's read half (reported with its write, as 'red')
                    data = reduce_elements(redop, ptype, engine.read_global(gaddrs, es, traced=False), data)
                engine.write_global(gaddrs, data, op="red" if ptype else "st", runs=True)

            op = engine.submit(new_op(ctx, lane, "reduce" if redop else "store", nbytes, read, write, coords=c,
                                      tensor_map=tm, mode=f["mode"]))
            ctx.async_group_join("bulk", lane, op)

    return run


# ---------------------------------------------------------------------------------------------- prefetch
def _make_prefetch(ins, f, tmap_op, policy_op):
    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        _coords(ctx, tmap_op)                   # read like a copy's, though a prefetch moves nothing
        if policy_op is not None:
            ctx.read(policy_op, "b64")
        maps = read_tensor_maps(ctx, tmap_op, lanes)
        for lane in lanes:
            _check_map(maps[int(lane)], f, ins.full_opcode, int(lane))
        ctx.emit_sync("prefetch", what=ins.full_opcode)

    return run


__all__ = ["box_geometry", "byte_runs", "reduce_elements", "read_tensor_maps", "tf32_image", "OOB_NAN_BITS",
           "SMEM_ALIGN", "TF32_NAN", "INNER_COORD_ALIGN"]
