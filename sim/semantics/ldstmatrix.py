"""Warp-collective matrix moves between shared memory and registers: ldmatrix, stmatrix, movmatrix.

PTX ISA 9.1 §9.7.14.5.15 ldmatrix, §9.7.14.5.16 stmatrix, §9.7.14.5.17 movmatrix.

Supported forms:

* ``ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared{::cta}}.b16 {r...}, [p]`` (sm_75+)
* ``stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared{::cta}}.b16 [p], {r...}`` (sm_90+)
* ``movmatrix.sync.aligned.m8n8.trans.b16 d, a`` (sm_75+)

Thread ``8m + r`` supplies the start address of row ``r`` of matrix ``m`` (m < num); the other threads'
addresses are ignored (sm_80+ behaviour).  A row is 8 b16 values = 16 contiguous bytes and must be 16-byte
aligned (MemoryFault otherwise).  Register ``m`` of thread T holds ``M_m[T/4][2(T%4) .. +1]`` (low half
first), or with ``.trans`` ``M_m[2(T%4) .. +1][T/4]`` (the maps of :func:`tcsim.isa.fragments.ldmatrix_layout`).
Without a state space the address is generic and must fall in this CTA's shared window (MemoryFault
otherwise).  The accesses go through ``ctx.load`` / ``ctx.store`` (weak shared-memory accesses, one 16-byte
row per supplying lane), so the observation bus and race detector see them with op ``ldmatrix`` /
``stmatrix``.  All three are ``.sync.aligned``: the whole warp must execute them together (SyncError).

Not supported (UnsupportedError at decode, naming the form): the sm_100a ``ldmatrix .m16n16`` /
``.m8n16`` ``.b8`` forms, the ``.b8x16.b6x16_p32`` / ``.b8x16.b4x16_p64`` decompressing loads, and
``stmatrix .m16n8.b8`` -- the PTX ISA gives their thread maps only as figures, which tcsim has not pinned.
The forms are parsed and checked in :mod:`tcsim.isa.ldstmatrix_forms`.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import fragments as FR
from tcsim.isa import ir
from tcsim.isa.errors import MemoryFault
from tcsim.isa.ldstmatrix_forms import parse_matrix
from .. import memory as M
from .registry import semantics
from .warp_mma import read_regs, require_full_warp

def _row_addresses(ctx, addr_op, space, suppliers, what):
    """Per-lane row addresses (uint64[32]) in state space ``'shared::cta'``; generic ones are translated."""
    a = ctx.address(addr_op)
    if space is not None:
        return a
    lo, hi = np.uint64(M.SHARED_WINDOW), np.uint64(M.SHARED_WINDOW + M.WINDOW_SIZE)
    bad = suppliers & ((a < lo) | (a >= hi))
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        raise MemoryFault(f"{what}: generic address 0x{int(a[i]):x} (lane {i}) does not point into shared "
                          f"memory", expected="a generic address in the shared window (cvta.shared)")
    return np.where(suppliers, a - lo, np.uint64(0)).astype(np.uint64)


@semantics("ldmatrix")
def decode_ldmatrix(ins: ir.Instruction, info):
    """PTX ISA 9.1 §9.7.14.5.15 ldmatrix (warp-collective load of 8x8 b16 matrices from shared memory)."""
    full = ins.full_opcode
    f = parse_matrix(ins, info)
    num, trans, space, dst, addr_op = f.num, f.trans, f.space, f.regs, f.addr
    layout = FR.ldmatrix_layout(num, trans)
    suppliers = FR.ldmatrix_row_suppliers(num) >= 0

    def run(ctx):
        require_full_warp(ctx, full)
        addrs = _row_addresses(ctx, addr_op, space, suppliers, full)
        rows = ctx.load("shared::cta", addrs, 16, mask=suppliers, align=16, op="ldmatrix")   # (32, 16)
        tile = np.ascontiguousarray(rows[:8 * num]).view(np.uint16)                         # (8*num, 8)
        regs = FR.scatter(layout, tile)
        for e, v in zip(dst, regs):
            ctx.write(e, "b32", v)

    return run


@semantics("stmatrix")
def decode_stmatrix(ins: ir.Instruction, info):
    """PTX ISA 9.1 §9.7.14.5.16 stmatrix (warp-collective store of 8x8 b16 matrices to shared memory)."""
    full = ins.full_opcode
    f = parse_matrix(ins, info)
    num, trans, space, src, addr_op = f.num, f.trans, f.space, f.regs, f.addr
    layout = FR.ldmatrix_layout(num, trans)
    suppliers = FR.ldmatrix_row_suppliers(num) >= 0

    def run(ctx):
        require_full_warp(ctx, full)
        tile = FR.gather(layout, read_regs(ctx, src))                     # (8*num, 8) uint16
        addrs = _row_addresses(ctx, addr_op, space, suppliers, full)
        data = np.zeros((32, 16), dtype=np.uint8)
        data[:8 * num] = tile.view(np.uint8)
        ctx.store("shared::cta", addrs, data, mask=suppliers, align=16, op="stmatrix")

    return run


@semantics("movmatrix")
def decode_movmatrix(ins: ir.Instruction, info):
    """PTX ISA 9.1 §9.7.14.5.17 movmatrix (transpose an 8x8 b16 matrix held in the ldmatrix layout)."""
    full = ins.full_opcode
    f = parse_matrix(ins, info)
    d, a = f.regs, f.src
    src_l, dst_l = FR.ldmatrix_layout(1, False), FR.ldmatrix_layout(1, True)

    def run(ctx):
        require_full_warp(ctx, full)
        m = FR.gather(src_l, read_regs(ctx, a))
        ctx.write(d[0], "b32", FR.scatter(dst_l, m)[0])

    return run
