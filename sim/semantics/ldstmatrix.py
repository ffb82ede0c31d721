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
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import fragments as FR
from tcsim.isa import ir
from tcsim.isa.errors import MemoryFault, UnsupportedError, VerifyError
from .. import memory as M
from ..ptxtypes import SIZE
from .registry import semantics
from .warp_mma import read_regs, require_full_warp

_NUMS = {"x1": 1, "x2": 2, "x4": 4}
_SPACES = {"shared": "shared::cta", "shared::cta": "shared::cta"}
_B8_FORMS = ("m16n16", "m8n16", "m16n8", "b8", "b8x16", "b6x16_p32", "b4x16_p64")


def _parse(ins, opname: str, need_num: bool):
    """(num, trans, space) of an ld/st/movmatrix; Verify/UnsupportedError on anything else."""
    full = ins.full_opcode
    mods = list(ins.mods)
    for m in mods:
        if m in _B8_FORMS:
            raise UnsupportedError(f"{full}: the .{m} form of {opname} is not supported by tcsim (its thread "
                                   f"map is given only as a figure in the PTX ISA)", ins.loc,
                                   expected=f"{opname}.sync.aligned.m8n8{'.x1/.x2/.x4' if need_num else ''}"
                                            f"{'{.trans}' if need_num else '.trans'}.b16")
    if "sync" not in mods or "aligned" not in mods:
        raise VerifyError(f"{full}: {opname} requires the .sync and .aligned qualifiers", ins.loc)
    if "m8n8" not in mods:
        raise VerifyError(f"{full}: {opname} needs the shape qualifier .m8n8", ins.loc)
    if "b16" not in mods:
        raise VerifyError(f"{full}: {opname} .m8n8 needs the type .b16", ins.loc)
    nums = [m for m in mods if m in _NUMS]
    spaces = [m for m in mods if m.startswith("shared")]
    trans = "trans" in mods
    known = {"sync", "aligned", "m8n8", "b16", "trans"} | set(_NUMS) | set(_SPACES)
    extra = [m for m in mods if m not in known]
    if extra:
        if any(m.startswith("shared") for m in extra):
            raise VerifyError(f"{full}: {opname} takes .shared or .shared::cta, not "
                              + ", ".join("." + m for m in extra), ins.loc)
        raise VerifyError(f"{full}: unknown qualifier(s) " + ", ".join("." + m for m in extra), ins.loc)
    if len(spaces) > 1:
        raise VerifyError(f"{full}: more than one state space", ins.loc)
    space = _SPACES[spaces[0]] if spaces else None
    if need_num:
        if len(nums) != 1:
            raise VerifyError(f"{full}: {opname} needs exactly one of .x1, .x2, .x4", ins.loc)
        num = _NUMS[nums[0]]
    else:
        if nums:
            raise VerifyError(f"{full}: {opname} takes no .x1/.x2/.x4 qualifier", ins.loc)
        num = 1
    return num, trans, space


def _regs(op, n: int, what: str, full: str, info, loc) -> tuple:
    if isinstance(op, ir.Vector):
        elems = op.elems
    elif n == 1 and isinstance(op, ir.Reg):
        elems = (op,)
    else:
        raise VerifyError(f"{full}: operand {what} must be a vector of {n} .b32 register(s), got {op}", loc)
    if len(elems) != n:
        raise VerifyError(f"{full}: operand {what} has {len(elems)} register(s), expected {n}", loc,
                          expected=f"a vector of {n} 32-bit registers")
    for e in elems:
        if not isinstance(e, ir.Reg):
            raise VerifyError(f"{full}: element {e} of operand {what} is not a register", loc)
        t = info.reg_type(e)
        if t is not None and (t == "pred" or SIZE.get(t) != 4):
            raise VerifyError(f"{full}: register {e} is .{t}; expected a 32-bit register", loc)
    return tuple(elems)


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
    num, trans, space = _parse(ins, "ldmatrix", need_num=True)
    if len(ins.operands) != 2 or not isinstance(ins.operands[1], ir.Address):
        raise VerifyError(f"{full}: ldmatrix takes a register vector and an address [p]", ins.loc)
    dst = _regs(ins.operands[0], num, "r", full, info, ins.loc)
    addr_op = ins.operands[1]
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
    num, trans, space = _parse(ins, "stmatrix", need_num=True)
    if len(ins.operands) != 2 or not isinstance(ins.operands[0], ir.Address):
        raise VerifyError(f"{full}: stmatrix takes an address [p] and a register vector", ins.loc)
    src = _regs(ins.operands[1], num, "r", full, info, ins.loc)
    addr_op = ins.operands[0]
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
    num, trans, space = _parse(ins, "movmatrix", need_num=False)
    if space is not None:
        raise VerifyError(f"{full}: movmatrix takes no state space", ins.loc)
    if not trans:
        raise VerifyError(f"{full}: movmatrix requires .trans", ins.loc)
    if len(ins.operands) != 2:
        raise VerifyError(f"{full}: movmatrix takes a destination d and a source a", ins.loc)
    d = _regs(ins.operands[0], 1, "d", full, info, ins.loc)
    a = _regs(ins.operands[1], 1, "a", full, info, ins.loc)
    src_l, dst_l = FR.ldmatrix_layout(1, False), FR.ldmatrix_layout(1, True)

    def run(ctx):
        require_full_warp(ctx, full)
        m = FR.gather(src_l, read_regs(ctx, a))
        ctx.write(d[0], "b32", FR.scatter(dst_l, m)[0])

    return run
