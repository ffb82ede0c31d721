"""The group context: one instruction's decoded semantics executed once for a lockstep group of warps.

A :class:`BatchCtx` offers the part of :class:`tcsim.context.ExecContext` that register-only ALU instructions and
plain loads use -- ``read`` / ``write`` (scalar, vector, predicate), ``address``, ``load`` -- over the lanes of
``k`` warps at once (``32 k`` lanes, warp after warp).  Registers come from the flat register file the fast tier
lays out (one ``(warps, 32)`` array per register, each warp's ``regs`` entries being its rows), so a group's
operand is one gather.  Writes are buffered and committed only when the semantics return, so a group that cannot
run together leaves no trace and is re-run warp by warp with the reference context.

Anything else a semantics function asks for -- another context method, a special register, a symbol, a state
space other than shared::cta / global / param, an access that would fault, a register written and then read by
the same instruction -- raises :class:`Fallback` (or fails on the lane count: the semantics that build 32-lane
arrays of their own cannot run over more lanes), and the group is run warp by warp.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import TcsimError
from .. import memory as M
from ..context import group_read_global, group_read_stacked, group_write_global, group_write_stacked
from ..ptxtypes import UINT, imm_bits, size_of, to_container, to_type, view_dtype

WARP = 32
#: per-PC step kinds (FastTier.steps; tcsim.fast.lockstep runs them, tcsim.fast.blocks encodes them)
SEM, STORE, BRANCH, BARRIER, EXIT = 1, 2, 3, 4, 5

#: instruction families whose semantics may run over a lockstep group (register-only ALU and loads); a form of
#: one that is not lane-parallel fails over to the warp-by-warp path (see the module docstring)
BATCHABLE = frozenset({
    # integer (PTX ISA §9.7.1; the .cc carry chains use the per-warp carry flag and fail over)
    "add:int", "sub:int", "mul:int", "mad:int", "mul24", "mad24", "sad", "div:int", "rem", "abs:int", "neg:int",
    "min:int", "max:int", "popc", "clz", "bfind", "brev", "bfe", "bfi", "szext", "bmsk", "dp4a", "dp2a",
    # logic and shift (§9.7.8)
    "and", "or", "xor", "not", "cnot", "lop3", "shl", "shr", "shf", "prmt",
    # comparison and selection (§9.7.7)
    "setp", "set", "selp", "slct",
    # conversion (§9.7.9.21)
    "cvt",
    # floating point (§9.7.3, §9.7.4)
    "add:float", "sub:float", "mul:float", "fma", "mad:float", "div:float", "rcp", "sqrt", "rsqrt", "sin", "cos",
    "lg2", "ex2", "tanh", "abs:float", "neg:float", "min:float", "max:float", "copysign", "testp",
    # data movement (§9.7.9.1 mov, §9.7.9.8 ld, §9.7.9.9 ldu, §9.7.9.19 cvta)
    "mov", "ld", "ldu", "cvta",
})

#: families that read memory: held back only while no observer selects 'mem'
LOADS = frozenset({"ld", "ldu"})


class Fallback(Exception):
    """The group cannot run together; run it warp by warp."""


class BatchCtx:
    """Execution context of one instruction for a lockstep group (see the module docstring).

    ``idx``: the warps' indices in the flat register file; ``mask`` / ``group``: (k, 32) lane masks; ``warps``:
    the warps themselves (for their CTAs)."""

    def __init__(self, tier, ins, pc: int, idx: np.ndarray, warps: list, mask: np.ndarray, group: np.ndarray):
        self.tier = tier
        self.ins = ins
        self.pc = pc
        self.idx = idx
        self.warps = warps
        self.n = WARP * len(warps)
        self.mask = mask.reshape(-1)
        self.group = group.reshape(-1)
        self._writes: list = []
        self._written: set = set()

    # ------------------------------------------------------------------------------------------ registers
    def _reg(self, name: str):
        r = self.tier.flat.get(name)
        if r is None or name in self._written:
            raise Fallback(name)
        return r

    def read(self, op, ptype: str) -> np.ndarray:
        if isinstance(op, ir.Reg):
            r = self._reg(op.name)
            if r.dtype == np.bool_ or ptype == "b128":
                raise Fallback(op.name)
            try:
                return to_type(r[self.idx].reshape(-1), ptype)
            except ValueError:
                raise Fallback(op.name) from None
        if isinstance(op, ir.Imm):
            if ptype == "b128":
                raise Fallback("b128 immediate")
            try:
                b = imm_bits(op.value, op.kind, ptype, op.bits)
            except ValueError:
                raise Fallback("immediate") from None
            return np.full(self.n, b, dtype=UINT[size_of(ptype)]).view(view_dtype(ptype))
        if isinstance(op, ir.Vector) and len(op.elems) == 1:
            return self.read(op.elems[0], ptype)
        raise Fallback(f"operand {op}")

    def read_vector(self, op, ptype: str) -> list:
        if isinstance(op, ir.Vector):
            return [self.read(e, ptype) for e in op.elems]
        return [self.read(op, ptype)]

    def write(self, op, ptype: str, values, mask=None) -> None:
        if isinstance(op, ir.Sink):
            return
        if isinstance(op, ir.Vector) and len(op.elems) == 1:
            op = op.elems[0]
        if not isinstance(op, ir.Reg) or ptype == "b128":
            raise Fallback(f"destination {op}")
        r = self._reg(op.name)
        if r.dtype == np.bool_:
            raise Fallback(op.name)
        m = self.mask if mask is None else mask
        if m.shape != (self.n,):
            raise Fallback("mask shape")
        try:
            vals = np.broadcast_to(np.asarray(values), (self.n,))
            bits = to_container(vals, ptype, r.dtype.itemsize)
        except ValueError:
            raise Fallback(op.name) from None
        self._writes.append((op.name, bits, m))

    def write_vector(self, op, ptype: str, values: list, mask=None) -> None:
        elems = op.elems if isinstance(op, ir.Vector) else (op,)
        if len(elems) != len(values):
            raise Fallback("vector length")
        for e, v in zip(elems, values):
            self.write(e, ptype, v, mask)

    def read_pred(self, op) -> np.ndarray:
        if isinstance(op, ir.Not):
            return ~self.read_pred(op.operand)
        if isinstance(op, ir.Reg):
            r = self._reg(op.name)
            if r.dtype != np.bool_:
                raise Fallback(op.name)
            return r[self.idx].reshape(-1)
        if isinstance(op, ir.Imm) and op.kind == "int":
            return np.full(self.n, bool(op.value))
        raise Fallback(f"predicate {op}")

    def write_pred(self, op, values, mask=None) -> None:
        if isinstance(op, ir.Sink):
            return
        if not isinstance(op, ir.Reg):
            raise Fallback(f"destination {op}")
        r = self._reg(op.name)
        if r.dtype != np.bool_:
            raise Fallback(op.name)
        m = self.mask if mask is None else mask
        if m.shape != (self.n,):
            raise Fallback("mask shape")
        try:
            vals = np.broadcast_to(np.asarray(values, dtype=bool), (self.n,))
        except ValueError:
            raise Fallback(op.name) from None
        self._writes.append((op.name, vals, m))

    def commit(self) -> None:
        """Apply the buffered register writes, in the order the semantics made them."""
        idx = self.idx
        k = len(self.warps)
        flat = self.tier.flat
        for name, bits, m in self._writes:
            r = flat[name]
            if m.all():
                r[idx] = bits.reshape(k, WARP)
            else:
                rows = r[idx].reshape(-1)
                rows[m] = bits[m]
                r[idx] = rows.reshape(k, WARP)

    # ------------------------------------------------------------------------------------------ memory
    def _mbarriers(self) -> bool:
        """A CTA of the group holds an mbarrier (the reference checks stores over live barriers)."""
        return any(w.cta.mbarriers for w in self.warps)

    def address(self, op: ir.Address, addr_type: str = "u64") -> np.ndarray:
        base = op.base
        if base is None:
            a = np.zeros(self.n, dtype=np.uint64)
        elif isinstance(base, ir.Reg):
            r = self._reg(base.name)
            if r.dtype == np.bool_:
                raise Fallback(base.name)
            a = r[self.idx].reshape(-1).astype(np.uint64)
        elif isinstance(base, ir.Sym):
            # (no device functions in a grouped kernel: a symbol is the CTA's or the kernel's, never a frame's)
            try:
                per = [w.ctx.symbol_address(base.name) + base.offset for w in self.warps]
            except TcsimError:
                raise Fallback(base.name) from None
            a = np.repeat(np.asarray(per, dtype=np.uint64), WARP)
        else:
            raise Fallback(f"address base {base}")
        if op.offset:
            a = (a.astype(np.int64) + np.int64(op.offset)).astype(np.uint64)
        return a

    def load(self, space: str, addrs: np.ndarray, nbytes: int, mask=None, align: int | None = None,
             op: str = "ld") -> np.ndarray:
        """The reference :meth:`tcsim.context.ExecContext.load` for the group, in the spaces whose accesses cannot
        fault unnoticed here (shared::cta of each warp's own CTA, global, kernel parameters); any access the
        reference would fault on, or another space, fails over."""
        m = self.mask if mask is None else mask
        out = np.zeros((self.n, nbytes), dtype=np.uint8)
        lanes = np.nonzero(m)[0]
        if lanes.size == 0:
            return out
        a = np.asarray(addrs, dtype=np.uint64)[lanes]
        al = nbytes if align is None else align
        if al > 1 and (a % np.uint64(al)).any():
            raise Fallback("misaligned")
        if space in ("shared", "shared::cta"):
            ranks, offs = M.split_shared(a)
            wl = lanes // WARP                       # the group member of each lane
            t = self.tier
            cta_of = t.cta_index[self.idx][wl]
            if (ranks != t.cta_rank[cta_of]).any():
                raise Fallback("foreign rank")
            if (offs < t.smem_base).any() or (offs + nbytes > t.smem_end).any():
                raise Fallback("out of bounds")
            out[lanes] = group_read_stacked(t.smem_stack, cta_of, offs, nbytes)
            return out
        if space == "global" or (space in ("generic", "") and self.tier.all_global(a)):
            try:
                out[lanes] = group_read_global(self.tier.sim.gmem, a, nbytes)
            except TcsimError:
                raise Fallback("global read") from None
            return out
        if space == "param":
            try:
                out[lanes] = M.read_image(self.tier.sim.param_image, a, nbytes, "kernel parameter space")
            except TcsimError:
                raise Fallback("param bounds") from None
            return out
        raise Fallback(f"space {space}")


    def store(self, space: str, addrs: np.ndarray, data: np.ndarray, mask=None, align: int | None = None,
              op: str = "st") -> None:
        """The reference :meth:`tcsim.context.ExecContext.store` for the group, warp after warp in group order and
        each warp's lanes in descending order (the reference's order: a later warp's store, and a lower lane's,
        lands last), in shared::cta of each warp's own CTA (none holding an mbarrier) and global memory; checked
        before anything is written, any access the reference would fault on (or another space) fails over."""
        m = self.mask if mask is None else mask
        k = len(self.warps)
        order = (np.arange(k)[:, None] * WARP + np.arange(WARP - 1, -1, -1)[None, :]).reshape(-1)
        lanes = order[m[order]]
        if lanes.size == 0:
            return
        nbytes = data.shape[1]
        a = np.asarray(addrs, dtype=np.uint64)[lanes]
        al = nbytes if align is None else align
        if al > 1 and (a % np.uint64(al)).any():
            raise Fallback("misaligned")
        rows = data[lanes]
        t = self.tier
        if space in ("shared", "shared::cta"):
            ranks, offs = M.split_shared(a)
            cta_of = t.cta_index[self.idx][lanes // WARP]
            if (ranks != t.cta_rank[cta_of]).any():
                raise Fallback("foreign rank")
            if (offs < t.smem_base).any() or (offs + nbytes > t.smem_end).any():
                raise Fallback("out of bounds")
            if self._mbarriers():
                raise Fallback("mbarriers")         # (the reference checks stores over live barriers)
            group_write_stacked(t.smem_stack, cta_of, offs, rows)
            return
        if space == "global":
            try:
                group_write_global(t.sim.gmem, a, rows)
            except TcsimError:                       # (a fault is raised before anything is written)
                raise Fallback("global write") from None
            return
        raise Fallback(f"space {space}")


__all__ = ["BATCHABLE", "LOADS", "BatchCtx", "Fallback"]

#: special registers whose value is the time (never supplied per call: tcsim.fast.tier, tcsim.fast.blocks)
TIME_SREGS = ("%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi")
