"""tcgen05.cp (shared memory -> tensor memory, async) and tcgen05.shift (rows of tensor memory down by one, async).

PTX ISA 9.1 §9.7.16.9.2 (tcgen05.cp), the data-movement shapes and "Optional decompression"
(``#tcgen05-optional-decompression``: .b8x16.b6x16_p32 / .b8x16.b4x16_p64), §9.7.16.9.3 (tcgen05.shift), issue
granularity and pipelined ordering with tcgen05.mma (``#tcgen05-issue-granularity``,
``#tcgen05-memory-consistency-model``); tcgen05_layouts.md (e); tcgen05.md (f).

Forms executed::

    tcgen05.cp.cta_group::{1,2}.{128x256b | 4x256b | 128x128b | 64x128b.warpx2::02_13 | 64x128b.warpx2::01_23
                                 | 32x128b.warpx4}{.b8x16.b6x16_p32 | .b8x16.b4x16_p64}  [taddr], s-desc;
    tcgen05.shift.cta_group::{1,2}.down [taddr];

Both are issued by one thread (every executing lane issues its own op) into the CTA's (pair's) tensor pipe
(:mod:`tcsim.agents.tensor_pipe`), in order with tcgen05.mma: the pipe is strictly in issue order, which is at
least the ordering PTX guarantees (cp -> mma, shift -> mma, shift -> cp.4x256b, mma -> shift); pairs PTX leaves
unordered also execute in issue order here.

tcgen05.cp (tcgen05_layouts.md (e)): the source is a K-major canonical matrix read through the 64-bit SMEM
descriptor ``s-desc`` (the same address function as the MMA operands: rows map to TMEM lanes, bytes run along
columns, 8-row x 16-byte core matrices, SBO between 8-row groups, LBO between 16-byte column chunks, the
descriptor's swizzle on absolute addresses) -- an inferred reading (?).  Each row's bytes land little-endian in
consecutive 32-bit columns from the taddr column (32 B -> 8 columns, 16 B -> 4).  Rows -> lanes (relative to
the taddr lane field): 128x256b / 128x128b row r -> r; 4x256b row r -> 32r; 64x128b.warpx2::02_13 row r -> r and
r + 64; 64x128b.warpx2::01_23 row r -> 64(r//32) + r%32 and that + 32; 32x128b.warpx4 row r -> r + 32p, p = 0..3.
Decompression: each 16-byte source chunk holds 16 packed values (6-bit values in its first 12 bytes, or 4-bit
values in its first 8), value i at bit 6i / 4i of the little-endian chunk (?); value i becomes byte i of the
destination chunk -- fp6 in bits [5:0], fp4 (E2M1) in bits [5:2] (?).  With ``.cta_group::2`` each CTA of the pair
reads its own SMEM at the descriptor's offset and writes its own TMEM (?).

tcgen05.shift.down (PTX: "shift down the rows of the matrix in the Tensor Memory for a warp ... 32-byte elements
downwards across all the rows, except the last, by one row"; tcgen05_layouts.md (e) marks details (?)):
taddr's lane field must be a multiple of 32; in the 32-lane subpartition (the warp's lanes) starting there, the
32-byte rows (8 columns from the taddr column) of lanes L0 .. L0+30 move one lane down (to L0+1 .. L0+31); the
last row is not a source and lane L0 keeps its contents (the implicit 31x256b shape; a following
tcgen05.cp.4x256b refills lanes 0/32/64/96).  That the shift stays inside one subpartition and that the vacated
row keeps its old value are inferred (?).  ``.cta_group::2`` shifts both CTAs.

Checked at issue: the descriptor (:func:`tcsim.isa.tcgen05_rules.check_smem_desc`), the source inside SMEM
(MemoryFault), the destination cells allocated (MemoryFault), shift's lane alignment (VerifyError, rule
shift-lane).  The allocation is checked again at completion (a dealloc racing the copy is a fault).

Not supported: nothing else of these two instructions exists on sm_100a.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.descriptors import operand_addresses
from tcsim.isa.tcgen05_rules import check_smem_desc, check_uniform_cta_group, parse_cp, parse_shift, reject
from ..agents.tensor_pipe import PipeOp, TensorPipe
from ..tmem import tmem_of
from .bulk_copy import issuer
from .registry import semantics
from .tcgen05_mma import check_smem_span, split_taddr, read_smem_elements


def cp_lanes(shape: str, multicast: str | None, rows: int) -> list:
    """Destination lane offsets of each source row: a list over replicas of int arrays (rows,)."""
    r = np.arange(rows)
    if shape in ("128x256b", "128x128b"):
        return [r]
    if shape == "4x256b":
        return [32 * r]
    if multicast == "warpx2::02_13":
        return [r, r + 64]
    if multicast == "warpx2::01_23":
        base = 64 * (r // 32) + r % 32
        return [base, base + 32]
    return [r + 32 * p for p in range(4)]                  # 32x128b.warpx4


def decompress(rows: np.ndarray, fmt: str | None) -> np.ndarray:
    """Expand each 16-byte chunk of ``rows`` (uint8 (R, nbytes)) per the source format (module docstring)."""
    if fmt is None:
        return rows
    R, nb = rows.shape
    chunks = rows.reshape(R, nb // 16, 16).astype(np.uint64)
    lo = np.zeros(chunks.shape[:2], dtype=np.uint64)
    hi = np.zeros(chunks.shape[:2], dtype=np.uint64)
    for i in range(8):
        lo |= chunks[:, :, i] << np.uint64(8 * i)
        hi |= chunks[:, :, 8 + i] << np.uint64(8 * i)
    out = np.zeros(chunks.shape, dtype=np.uint8)
    width = 6 if fmt == "b6x16_p32" else 4
    for i in range(16):
        bit = width * i
        if bit + width <= 64:
            v = (lo >> np.uint64(bit)) & np.uint64((1 << width) - 1)
        elif bit >= 64:
            v = (hi >> np.uint64(bit - 64)) & np.uint64((1 << width) - 1)
        else:                                                  # straddles the 64-bit halves
            nlo = 64 - bit
            v = (lo >> np.uint64(bit)) | ((hi & np.uint64((1 << (width - nlo)) - 1)) << np.uint64(nlo))
        out[:, :, i] = (v << np.uint64(2)).astype(np.uint8) if width == 4 else v.astype(np.uint8)
    return out.reshape(R, nb)


@semantics("tcgen05.cp")
def decode_cp(ins, info):
    """PTX ISA §9.7.16.9.2 tcgen05.cp.cta_group::N.shape{.multicast}{.dst_fmt.src_fmt} [taddr], s-desc (module
    docstring)."""
    form = parse_cp(ins, info)
    check_uniform_cta_group(ins, info.function)
    taddr_op, desc_op = ins.operands
    what = ins.full_opcode
    arch = info.arch
    R, nb = form.rows, form.row_bytes
    reps = cp_lanes(form.shape, form.multicast, R)
    ncols = nb // 4

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        taddrs = ctx.address(taddr_op)
        descs = ctx.read(desc_op, "b64")
        pipe = TensorPipe.of(ctx, form.cta_group, "tcgen05.cp")
        for lane in lanes:
            lane = int(lane)
            l0, c0 = split_taddr(int(taddrs[lane]))
            desc = check_smem_desc(int(descs[lane]), "the tcgen05.cp source descriptor", major="K", k_bytes=nb,
                                   arch=arch)
            addrs = operand_addresses(desc, R, nb, 8, "K")
            dst = [l0 + r for r in reps]
            lo, hi = min(int(d.min()) for d in dst), max(int(d.max()) for d in dst) + 1
            ctas = pipe.ctas
            reported = set()        # CTAs whose columns were not allocated at issue (class 13, reported then)
            for cta in ctas:
                check_smem_span(cta, addrs, f"{what} source")
                if not tmem_of(cta).allocated(lo, hi - lo, c0, ncols) and \
                        tmem_of(cta).check_allocated(lo, hi - lo, c0, ncols, f"{what} destination", ctx.report,
                                                ctx.side(proxy="async", where=f"TMEM lanes [{lo}, {hi}) columns "
                                                                              f"[{c0}, {c0 + ncols}) of {cta.label}")):
                    reported.add(id(cta))

            def complete(ctas=ctas, addrs=addrs, dst=dst, c0=c0, lo=lo, hi=hi, reported=reported):
                for cta in ctas:
                    tm = tmem_of(cta)
                    if id(cta) not in reported:
                        tm.check_allocated(lo, hi - lo, c0, ncols, f"{what} destination at completion")
                    data = read_smem_elements(cta, addrs, pipe).astype(np.uint8)        # (R, nb) bytes
                    data = decompress(data, form.src_fmt)
                    words = np.ascontiguousarray(data).view("<u4").astype(np.uint32)   # (R, ncols)
                    cols = c0 + np.arange(ncols)
                    for d in dst:
                        pipe.write_tmem(cta, d[:, None], cols[None, :], words)

            pipe.submit(PipeOp("cp", what, complete, size=R * nb, ndest=len(ctas), issuer=issuer(ctx, lane),
                               loc=ctx.ins.loc, warp=ctx.warp.id, lane=lane, pc=ctx.pc,
                               extra=dict(shape=form.shape)))

    return run


@semantics("tcgen05.shift")
def decode_shift(ins, info):
    """PTX ISA §9.7.16.9.3 tcgen05.shift.cta_group::N.down [taddr] (module docstring)."""
    cg = parse_shift(ins, info)
    check_uniform_cta_group(ins, info.function)
    taddr_op = ins.operands[0]
    what = ins.full_opcode

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        taddrs = ctx.address(taddr_op)
        pipe = TensorPipe.of(ctx, cg, "tcgen05.shift")
        for lane in lanes:
            lane = int(lane)
            l0, c0 = split_taddr(int(taddrs[lane]))
            if l0 % 32:
                raise reject("shift-lane", f"tcgen05.shift [taddr] lane field {l0} (lane {lane}) is not a multiple "
                                           f"of 32", expected="a TMEM address whose lane is 0, 32, 64 or 96")
            ctas = pipe.ctas
            reported = set()        # CTAs whose columns were not allocated at issue (class 13, reported then)
            for cta in ctas:
                if tmem_of(cta).check_allocated(l0, 32, c0, 8, what, ctx.report,
                                                ctx.side(proxy="async", where=f"TMEM lanes [{l0}, {l0 + 32}) "
                                                                              f"columns [{c0}, {c0 + 8}) of "
                                                                              f"{cta.label}")):
                    reported.add(id(cta))

            def complete(ctas=ctas, l0=l0, c0=c0, reported=reported):
                for cta in ctas:
                    tm = tmem_of(cta)
                    if id(cta) not in reported:
                        tm.check_allocated(l0, 32, c0, 8, f"{what} at completion")
                    rows, cols = np.arange(l0, l0 + 31)[:, None], np.arange(c0, c0 + 8)[None, :]
                    block = pipe.read_tmem(cta, rows, cols)          # lanes l0..l0+30 move down one lane
                    pipe.write_tmem(cta, rows + 1, cols, block)

            pipe.submit(PipeOp("shift", what, complete, issuer=issuer(ctx, lane), loc=ctx.ins.loc, warp=ctx.warp.id,
                               lane=lane, pc=ctx.pc))

    return run


__all__ = ["cp_lanes", "decompress"]
