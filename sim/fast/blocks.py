"""Compiled blocks: the fast tier's supersteps run straight-line code and plain loops in compiled code.

A lockstep superstep (:mod:`tcsim.fast.lockstep`) of a gang in which every lane is live hands the run of
instructions from its PC on to :func:`tcsim.fast.vm.run` (numba, compiled once per machine): the program is
encoded once per cached program (:func:`encode`, one row per PC: the operation, its operands as planes of the
fast tier's stacked register arrays, constants or per-warp symbol addresses, its guard, width and modifiers), and
the compiled interpreter executes it for all lanes of the gang, one instruction per cycle, through plain branches
whose lanes agree, until an instruction it has no row for, a branch that diverges, an access it leaves to the
semantics (it writes nothing of that one), or the cycles the superstep may run.  Per-instruction Python
overhead is gone inside a block; what is left is one call per block.

Encoded forms (the same as :mod:`tcsim.fast.codegen`'s, whose formulas they follow; each is checked against the
decoded semantics on random registers, tests/sim/test_tiers.py):

* integer ``add``/``sub``/``mul.lo``/``mad.lo``/``neg`` (16/32/64-bit), ``mul.wide``/``mad.wide`` (16/32-bit);
  ``and``/``or``/``xor``/``not`` (bit types and ``.pred``), ``shl``/``shr`` (32/64-bit); ``setp`` (integer
  compare, no ``|q`` / BoolOp), ``selp``; ``mov`` of a register, an integer / float immediate or a symbol's
  address; ``cvt`` between integer types (no ``.sat``); ``cvta`` (64-bit);
* ``fma.rn.f32`` (``.ftz`` or not; the exact kernel of :mod:`tcsim.numerics.jit_kernels`), ``fma.f64`` (any
  rounding; a lane the compiled kernel leaves to exact integers, or a NaN result, stops the block before it);
* scalar ``ld.shared`` / ``st.shared`` (4 / 8 bytes, register + offset address; a store only while the CTAs hold
  no mbarrier), checked as :class:`tcsim.fast.codegen._SharedAccess` checks them;
* scalar ``ld.global`` / ``st.global`` (4 / 8 bytes, register + offset address) through the global allocations'
  byte arrays (:func:`tcsim.context.group_global_arrays`, the door): every lane's access aligned and wholly inside
  one allocation, as :meth:`tcsim.memory.GlobalMemory.read_rows` / ``write_rows`` check it -- else the block
  stops before it and the semantics report the fault; stores warp after warp, each warp's lanes from the last to
  the first (:meth:`tcsim.context.ExecContext.store`'s order: the lowest lane lands last);
* special registers read by ``mov`` or as an integer source (not the clocks): their per-lane values, taken once
  per call from the members' contexts (:meth:`tcsim.fast.lockstep.GroupCtx.special_lanes`);
* scalar ``ld.param`` of a kernel parameter (the launch's parameter image; out of it: stopped before);
* ``bar.sync`` of a constant barrier (a BARRIER step) when the gang is whole CTAs with no named-barrier phase open:
  it completes in its cycle, counted per barrier (``Runner.bars``), and the superstep completes them after the call
  (:meth:`tcsim.semantics.barrier.NamedBarriers.sync_whole_cta` with ``times``);
* a plain ``bra`` (guarded or not).

Not encoded (the superstep's own paths run them): other state spaces and vector accesses, other float
operations, anything not listed.  Without numba (or ``TCSIM_NUMBA=0``, ``TCSIM_FAST_NOVM=1``) supersteps run as
before, instruction by instruction.
"""
from __future__ import annotations

import os

import numpy as np

from tcsim.isa import ir
from ..ptxtypes import imm_bits, size_of

_INT_TYPES = {f"{p}{n}" for p in "usb" for n in (16, 32, 64)}
_CLS = {np.dtype(np.bool_): 0, np.dtype(np.uint16): 1, np.dtype(np.uint32): 2, np.dtype(np.uint64): 3}


def available() -> bool:
    """Whether compiled blocks run (numba present and not switched off)."""
    if os.environ.get("TCSIM_FAST_NOVM"):
        return False
    from tcsim.numerics import jit
    return jit.enabled()


class Encoded:
    """A program's encoding for :func:`tcsim.fast.vm.run`: ``P`` (one row per PC), ``C`` (constants), ``syms``
    ((name, offset, width) of the per-warp symbol addresses, rows of ``S``)."""

    def __init__(self, P: np.ndarray, C: np.ndarray, syms: list, sregs: list = ()):
        self.P = P
        self.C = C
        self.syms = syms
        #: the special registers read ((operand, bytes): rows of the per-lane values ``L``), and the last PC reading
        #: one (a call from a later PC needs none of them)
        self.sregs = list(sregs)
        from . import vm
        cl = (P[:, vm.AC] == vm.CL) | (P[:, vm.BC] == vm.CL) | (P[:, vm.CC] == vm.CL)
        self.last_sreg_pc = int(np.nonzero(cl)[0].max()) if cl.any() else -1
        #: whether any row is a bar.sync
        self.has_bar = bool((P[:, vm.OP] == vm.BAR).any())
        self.has_global = bool(((P[:, vm.OP] == vm.LDG) | (P[:, vm.OP] == vm.STG)).any())


class _Enc:
    def __init__(self, prog, slots: dict, dtypes: dict):
        self.prog = prog
        self.slots = slots          # register name -> (class, plane)
        self.dtypes = dtypes
        self.consts: list = []
        self.syms: list = []
        self.sregs: list = []

    def const(self, v: int) -> tuple:
        v = int(v) & ((1 << 64) - 1)
        try:
            i = self.consts.index(v)
        except ValueError:
            i = len(self.consts)
            self.consts.append(v)
        return (4, i)

    def sym(self, name: str, offset: int, width: int) -> tuple:
        key = (name, int(offset), int(width))
        if key not in self.syms:
            self.syms.append(key)
        return (5, self.syms.index(key))

    def sreg(self, op, nbytes: int):
        """(class, row) of special register ``op`` read as ``nbytes`` (its per-lane values, supplied per call when
        the register's container is an integer of that size), or None for a clock (its value is the cycle)."""
        from .batch import TIME_SREGS
        if op.name in TIME_SREGS or nbytes not in (2, 4, 8):
            return None
        key = (op.name, op.component, int(nbytes))
        for i, (o, n) in enumerate(self.sregs):
            if (o.name, o.component, n) == key:
                return (6, i)
        self.sregs.append((op, int(nbytes)))
        return (6, len(self.sregs) - 1)

    def reg(self, op, nbytes, pred: bool = False):
        """(class, plane) of register ``op`` of ``nbytes`` (a predicate: ``pred``), or None."""
        if type(op) is not ir.Reg or op.name not in self.slots:
            return None
        dt = self.dtypes[op.name]
        if pred != (dt == np.bool_):
            return None
        if not pred and dt.itemsize != nbytes:
            return None
        return self.slots[op.name]

    def src(self, op, t: str):
        """An integer / bit source of type ``t``: a register of its size or an integer immediate (its bits)."""
        if type(op) is ir.Imm:
            if op.kind != "int":
                return None
            try:
                return self.const(imm_bits(op.value, op.kind, t, op.bits))
            except ValueError:
                return None
        if type(op) is ir.SpecialReg:
            return self.sreg(op, size_of(t))
        return self.reg(op, size_of(t))


def _row(op, d=None, a=None, b=None, c=None, width=0, x1=0, x2=0, x3=0) -> list:
    from . import vm
    r = [0] * vm.NCOL
    r[vm.OP] = op
    for (ci, ii), v in (((vm.DC, vm.DI), d), ((vm.AC, vm.AI), a), ((vm.BC, vm.BI), b), ((vm.CC, vm.CI), c)):
        r[ci], r[ii] = (v if v is not None else (-1, 0))
    r[vm.WD] = width
    r[vm.X1], r[vm.X2], r[vm.X3] = x1, x2, x3
    return r


def encode(prog, steps: list, branch: dict, slots: dict, dtypes: dict, info, bar_index=None) -> Encoded:
    """The encoding of ``prog`` for the PCs a superstep runs as SEM / STORE / BRANCH / BARRIER steps (``steps``;
    ``bar_index``: per BARRIER PC, (barrier, aligned))."""
    from . import vm
    from .batch import BARRIER, BRANCH, SEM, STORE
    e = _Enc(prog, slots, dtypes)
    nbody = len(steps)
    P = np.zeros((nbody, vm.NCOL), dtype=np.int64)
    P[:, vm.GC] = -1
    for pc in range(nbody):
        kind = steps[pc]
        if kind == BARRIER and bar_index and pc in bar_index:
            index, aligned = bar_index[pc]
            P[pc] = _row(vm.BAR, x1=int(index), x2=int(bool(aligned)))
            P[pc, vm.GC] = -1
            continue
        if kind not in (SEM, STORE, BRANCH):
            continue
        ins = prog.body[pc]
        try:
            if kind == BRANCH:
                row = _row(vm.BRA, x1=int(branch[pc]))
            else:
                row = _encode(e, ins, info)
        except Exception:                   # (a form the parsers reject: the semantics report it)
            row = None
        if row is None:
            continue
        if ins.guard is not None:
            g = ins.guard[0]
            if type(g) is not ir.Reg or e.reg(g, None, pred=True) is None:
                continue
            gcls, gidx = e.slots[g.name]
            # (an instruction that writes its own guard: the lanes it ran on are not readable after it)
            if row[vm.DC] == gcls and row[vm.DI] == gidx and kind != BRANCH:
                continue
            row[vm.GC], row[vm.GI], row[vm.GN] = gcls, gidx, int(bool(ins.guard[1]))
        else:
            row[vm.GC] = -1
        P[pc] = row
    C = np.asarray(e.consts if e.consts else [0], dtype=np.uint64)
    return Encoded(P, C, e.syms, e.sregs)


def _encode(e: _Enc, ins, info):
    from . import vm
    op = ins.opcode
    if op in ("add", "sub", "mul", "fma") and ("f32" in ins.mods or "f64" in ins.mods):
        return _float(e, ins, info)
    if op in ("add", "sub", "mul", "mad", "neg"):
        from .codegen import plain_integer
        f = plain_integer(ins, info)
        if f is None:
            return None
        srcs = [e.src(s, t) for s, t in f.srcs]
        d = e.reg(f.dst, size_of(f.dtype))
        if d is None or any(s is None for s in srcs):
            return None
        w = 8 * size_of(f.type)
        if op == "neg":
            return None if srcs[0][0] == 4 else _row(vm.NEG, d, srcs[0], width=w)
        if op in ("add", "sub"):
            return _row(vm.ADD if op == "add" else vm.SUB, d, srcs[0], srcs[1], width=w)
        if f.mode == "lo":
            return _row(vm.MULLO, d, srcs[0], srcs[1], width=w) if op == "mul" else \
                _row(vm.MADLO, d, srcs[0], srcs[1], srcs[2], width=w)
        signed = int(f.type[0] == "s")
        return _row(vm.MULWIDE, d, srcs[0], srcs[1], width=w, x1=signed) if op == "mul" else \
            _row(vm.MADWIDE, d, srcs[0], srcs[1], srcs[2], width=w, x1=signed)
    if op in ("and", "or", "xor", "not", "shl", "shr"):
        from tcsim.isa.alu_forms import parse_logic
        f = parse_logic(ins, info)
        t = f.type
        code = {"and": vm.AND, "or": vm.OR, "xor": vm.XOR, "not": vm.NOT}.get(op)
        if t == "pred":
            if code is None:
                return None
            srcs = [e.reg(s, None, pred=True) for s in f.srcs]
            d = e.reg(f.dst, None, pred=True)
            if d is None or any(s is None for s in srcs):
                return None
            return _row(code, d, *srcs, width=1)
        if t not in _INT_TYPES:
            return None
        n = size_of(t)
        d = e.reg(f.dst, n)
        if d is None:
            return None
        if code is not None:
            srcs = [e.src(s, t) for s in f.srcs]
            if any(s is None for s in srcs):
                return None
            return _row(code, d, *srcs, width=8 * n)
        if n < 4:
            return None
        a = e.reg(f.srcs[0], n)
        amt = f.srcs[1]
        if type(amt) is ir.Imm and amt.kind == "int":
            s = e.const(imm_bits(amt.value, "int", "u32"))
        else:
            s = e.reg(amt, 4)
        if a is None or s is None:
            return None
        code = vm.SHL if op == "shl" else vm.SHRS if t[0] == "s" else vm.SHRU
        return _row(code, d, a, s, width=8 * n)
    if op in ("setp", "selp"):
        from tcsim.isa.alu_forms import parse_compare
        f = parse_compare(ins, info)
        t = f.stype
        if t not in _INT_TYPES:
            return None
        n = size_of(t)
        a, b = e.src(f.a, t), e.src(f.b, t)
        if op == "setp":
            if f.qdst is not None or f.boolop is not None or f.c is not None or f.ftz:
                return None
            d = e.reg(f.dst, None, pred=True)
            cmp = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(f.cmp, f.cmp)
            code = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}.get(cmp)
            if d is None or code is None or a is None or b is None:
                return None
            return _row(vm.SETP, d, a, b, width=8 * n, x1=code, x2=int(t[0] == "s"))
        d = e.reg(f.dst, n)
        c = e.reg(f.c, None, pred=True)
        if d is None or a is None or b is None or c is None:
            return None
        return _row(vm.SELP, d, a, b, c, width=8 * n)
    if op == "mov":
        return _mov(e, ins, info)
    if op == "cvt":
        from tcsim.isa.convert_forms import parse_cvt
        f = parse_cvt(ins, info)
        if f.pair or f.rnd or f.ftz or f.sat or f.relu or f.satfinite:
            return None
        ints = {"u16", "s16", "u32", "s32", "u64", "s64"}
        if f.dst not in ints or f.src not in ints or len(ins.operands) != 2:
            return None
        dn, sn = size_of(f.dst), size_of(f.src)
        d, a = e.reg(ins.operands[0], dn), e.reg(ins.operands[1], sn)
        if d is None or a is None:
            return None
        return _row(vm.CVT, d, a, width=8 * dn, x1=8 * sn, x2=int(f.src[0] == "s"))
    if op == "cvta":
        from tcsim.isa.data_movement_forms import parse_cvta
        from .. import memory as M
        f = parse_cvta(ins, info)
        if f.size != "u64":
            return None
        base = {"shared": M.SHARED_WINDOW, "shared::cta": M.SHARED_WINDOW, "shared::cluster": M.SHARED_WINDOW,
                "local": M.LOCAL_WINDOW, "global": 0, "param": M.PARAM_WINDOW, "const": M.CONST_WINDOW}[f.space]
        d, a = e.reg(f.dst, 8), e.reg(f.src, 8)
        if d is None or a is None:
            return None
        return _row(vm.SUB if f.to else vm.ADD, d, a, e.const(base), width=64)
    if op in ("ld", "st"):
        return _shared(e, ins, info) or _global(e, ins, info) or _param(e, ins, info)
    return None


def _param(e: _Enc, ins, info):
    """A scalar ``ld.param`` of a kernel parameter (a symbol plus offsets, aligned) filling a register of its size:
    the same bytes of the launch's parameter image for every lane (BatchCtx.load's param case)."""
    from tcsim.isa.data_movement_forms import parse_ld
    from . import vm
    if ins.opcode != "ld" or any(m in ins.mods for m in ("volatile", "mmio", "unified")):
        return None
    f = parse_ld(ins, info)
    if f.space != "param" or f.vec != 1 or f.policy is not None:
        return None
    n = size_of(f.type)
    d = e.reg(f.value, n)
    addr = f.addr
    if d is None or n not in (2, 4, 8) or type(addr) is not ir.Address or type(addr.base) is not ir.Sym:
        return None
    sym = e.prog.param_symbols.get(addr.base.name)
    if sym is None:
        return None
    off = int(sym.offset) + int(addr.base.offset) + int(addr.offset or 0)
    if off < 0 or off % n:
        return None
    return _row(vm.LDP, d, width=8 * n, x1=n, x2=off)


def _mov(e: _Enc, ins, info):
    from . import vm
    src = ins.operands[1] if len(ins.operands) == 2 else None
    if type(src) is ir.Sym:
        # a symbol's address (GroupCtx.read: the CTA's address plus the offset, cut to the type's size)
        t = next((m for m in ins.mods if m in ("u32", "u64", "b32", "b64", "s32", "s64")), None)
        if t is None or len(ins.mods) != 1:
            return None
        n = size_of(t)
        d = e.reg(ins.operands[0], n)
        if d is None:
            return None
        return _row(vm.MOV, d, e.sym(src.name, src.offset, 8 * n), width=8 * n)
    from tcsim.isa.data_movement_forms import parse_mov
    f = parse_mov(ins, info)
    if f.mode == "pred":
        d, a = e.reg(f.dst, None, pred=True), e.reg(f.src, None, pred=True)
        return None if d is None or a is None else _row(vm.MOV, d, a, width=1)
    if f.mode != "copy" or f.type not in _INT_TYPES | {"f32", "f64"}:
        return None
    t = f.type if f.type in _INT_TYPES else ("b32" if f.type == "f32" else "b64")
    n = size_of(t)
    d = e.reg(f.dst, n)
    if d is None:
        return None
    if type(f.src) is ir.Imm:
        if f.src.kind != "int" and f.type not in ("f32", "f64"):
            return None
        try:
            b = imm_bits(f.src.value, f.src.kind, f.type, f.src.bits)
        except ValueError:
            return None
        return _row(vm.MOV, d, e.const(b), width=8 * n)
    a = e.sreg(f.src, n) if type(f.src) is ir.SpecialReg else e.reg(f.src, n)
    return None if a is None else _row(vm.MOV, d, a, width=8 * n)


def _float(e: _Enc, ins, info):
    from tcsim.isa.float_forms import parse_float
    from tcsim.numerics import fp
    from . import vm
    if ins.opcode != "fma":
        return None
    f = parse_float(ins, info)
    t = f.type
    if f.atype is not None or t not in ("f32", "f64") or getattr(f, "relu", False) or f.sat:
        return None
    n = size_of(t)
    srcs = [e.reg(s, n) for s in f.srcs]
    d = e.reg(f.dst, n)
    if d is None or any(s is None for s in srcs) or len(srcs) != 3:
        return None
    try:
        fp.lane_op("fma", t, f.rnd, bool(f.ftz), bool(f.sat))     # (the modifiers the format allows)
    except ValueError:
        return None
    if t == "f32":
        if f.rnd != "rn":
            return None
        return _row(vm.FMA32, d, *srcs, width=32, x1=int(bool(f.ftz)), x2=fp._NAN["f32"])
    if f.ftz:
        return None
    return _row(vm.FMA64, d, *srcs, width=64, x1=fp._RND_CODE[f.rnd])


def _shared(e: _Enc, ins, info):
    """Scalar ld / st of shared::cta (tcsim.fast.codegen.native_mem's forms, shared only)."""
    from . import vm
    from .codegen import native_mem
    spec = native_mem(ins, info, e.dtypes)
    if spec is None:
        return None
    store, space, base, offset, n, reg = spec
    if space != "shared" or base not in e.slots or reg not in e.slots:
        return None
    a = e.slots[base]
    if e.dtypes[base] == np.bool_:
        return None
    v = e.slots[reg]
    off = e.const(offset)
    if store:
        return _row(vm.STS, None, a, v, width=8 * n, x1=n, x2=off[1])
    return _row(vm.LDS, v, a, width=8 * n, x1=n, x2=off[1])


def _global(e: _Enc, ins, info):
    """Scalar ld / st of global memory (4 / 8 bytes filling / from a register of that size, register + offset
    address): tcsim.fast.codegen.native_mem's forms, stores included."""
    from . import vm
    from .codegen import native_mem
    spec = native_mem(ins, info, e.dtypes, global_stores=True)
    if spec is None:
        return None
    store, space, base, offset, n, reg = spec
    if space != "global" or base not in e.slots or reg not in e.slots or e.dtypes[base] == np.bool_:
        return None
    a, v, off = e.slots[base], e.slots[reg], e.const(offset)
    if store:
        return _row(vm.STG, None, a, v, width=8 * n, x1=n, x2=off[1])
    return _row(vm.LDG, v, a, width=8 * n, x1=n, x2=off[1])


# ---------------------------------------------------------------------------------------------- running
class Runner:
    """One run's compiled blocks: the program's encoding and the fast tier's arrays, for :meth:`run`."""

    def __init__(self, tier):
        from . import vm
        self.vm = vm
        self.tier = tier
        sim = tier.sim
        prog = sim.program
        by = tier.reg_slots_by_dtype()
        slots, dtypes = {}, {}
        for dt, names in by.items():
            cls = _CLS.get(np.dtype(dt))
            for j, name in enumerate(names):
                dtypes[name] = np.dtype(dt)
                if cls is not None:
                    slots[name] = (cls, j)
        key = ("vm", tuple(sorted(slots.items())))
        enc = prog.fast_code.get(key)
        if enc is None:
            enc = prog.fast_code[key] = encode(prog, tier.steps, tier.branch, slots, dtypes, tier.native.info,
                                               tier.bar_index)
        self.enc = enc
        self.P = enc.P
        self.out = np.zeros(5, dtype=np.int64)
        self.bars = np.zeros(16, dtype=np.int64)
        self._empty = {c: np.zeros((0, 1, 32), dtype=dt) for dt, c in _CLS.items()}
        self._nowords = (np.zeros((1, 1), np.uint32), np.zeros((1, 1), np.uint64))
        self._noL = (np.zeros((1, 1), np.uint64), np.zeros(1, np.int64))
        self._pad = np.zeros(8, np.uint8)
        self._noglobal = (np.zeros(vm.NGLOBAL, np.uint64), np.zeros(vm.NGLOBAL, np.uint64), 0,
                          (self._pad,) * vm.NGLOBAL)

    def runs_at(self, pc: int) -> bool:
        return self.P[pc, 0] != 0

    def stacks(self):
        st = self.tier.stacks
        e = self._empty
        out = [None] * 4
        for dt, c in _CLS.items():
            a = st.get(dt)
            out[c] = a if a is not None else e[c]
        return out

    def _globals(self) -> tuple:
        """The global allocations for vm.run (the first NGLOBAL, address order; the rest stop a block at them)."""
        from ..context import group_global_arrays
        vm = self.vm
        bases, arrays = group_global_arrays(self.tier.sim.gmem)
        ng = min(len(bases), vm.NGLOBAL)
        gb = np.zeros(vm.NGLOBAL, np.uint64)
        gs = np.zeros(vm.NGLOBAL, np.uint64)
        gb[:ng] = bases[:ng]
        gs[:ng] = [a.size for a in arrays[:ng]]
        return gb, gs, ng, tuple(arrays[:ng]) + (self._pad,) * (vm.NGLOBAL - ng)

    def _lanes(self, gctx, k: int, pc: int) -> tuple:
        """The special registers' per-lane values of the gang (rows of ``L``) and which of them are supplied (a
        register whose container is not an integer of the size read, or that the context cannot give: not, and
        a block stops at its reader).  None needed from a PC after the last reader."""
        enc = self.enc
        if not enc.sregs or pc > enc.last_sreg_pc:
            return self._noL
        L = np.zeros((len(enc.sregs), 32 * k), np.uint64)
        ok = np.zeros(len(enc.sregs), np.int64)
        for j, (op, n) in enumerate(enc.sregs):
            raw = gctx.special_lanes(op)
            if raw is not None and raw.dtype.kind in "ui" and raw.dtype.itemsize == n and raw.shape == (32 * k,):
                L[j] = raw
                ok[j] = 1
        return L, ok

    def run(self, gctx, rows: np.ndarray, pc: int, max_cycles: int, ctas=None):
        """Run the gang (its register rows ``rows``, its group context ``gctx``) from ``pc`` for at most
        ``max_cycles``; returns (cycles, next pc, lane-instructions, last pc run, reason) or None when the
        gang's symbol addresses cannot be had here.  ``ctas``: the gang's CTAs [(cta, warps)] when they are whole
        (every live warp a member) and no named barrier of theirs has a phase open -- then a ``bar.sync`` runs
        inside (:attr:`bars` counts them per barrier: the caller completes them, NamedBarriers.sync_whole_cta)."""
        from .. import memory as M
        from ..context import stacked_window_bytes
        from .batch import Fallback
        from tcsim.isa.errors import TcsimError
        vm = self.vm
        tier = self.tier
        enc = self.enc
        k = len(rows)
        syms = enc.syms
        if syms:
            S = np.empty((len(syms), k), dtype=np.uint64)
            for j, (name, off, width) in enumerate(syms):
                try:
                    base = gctx._sym(name)[::32]
                except (Fallback, TcsimError):
                    return None
                v = base + np.uint64(off & ((1 << 64) - 1))
                S[j] = v & np.uint64((1 << width) - 1) if width < 64 else v
        else:
            S = np.zeros((1, k), dtype=np.uint64)
        smem = stacked_window_bytes(tier.smem_stack) if tier.smem_stack is not None else None
        flags = 0
        if smem is not None:
            flags |= vm.F_SHARED
            if not gctx._mbarriers():
                flags |= vm.F_SHARED_ST
            cta_row = np.ascontiguousarray(tier.cta_index[rows], dtype=np.int64)
            cta_rank = np.ascontiguousarray(tier.cta_rank[cta_row], dtype=np.int64)
            lo, hi = int(tier.smem_base), int(tier.smem_end)
        else:
            smem = np.zeros((1, 1), dtype=np.uint8)
            cta_row = cta_rank = np.zeros(k, dtype=np.int64)
            lo = hi = 0
        B, H, W, D = self.stacks()
        if smem.shape[1] % 8 == 0:
            flags |= vm.F_WORDS
            s32, s64 = smem.view(np.uint32), smem.view(np.uint64)
        else:
            s32, s64 = self._nowords
        if enc.has_global:
            flags |= vm.F_GLOBAL
            gb, gs, ng, garrs = self._globals()
        else:
            gb, gs, ng, garrs = self._noglobal
        if ctas is not None:
            flags |= vm.F_BAR
        L, lok = self._lanes(gctx, k, pc)
        out = self.out
        bars = self.bars
        bars[:] = 0
        vm.run(self.P, enc.C, B, H, W, D, S, L, lok, rows, smem, cta_row, cta_rank, pc, max_cycles, lo, hi,
               M.SHARED_RANK_SHIFT, M.SHARED_OFFSET_MASK, flags, np.ascontiguousarray(tier.sim.param_image, np.uint8),
               s32, s64, gb, gs, ng, garrs, bars, out)
        return int(out[0]), int(out[1]), int(out[2]), int(out[3]), int(out[4])

    def last_mask(self, pc: int, sel, group: np.ndarray) -> np.ndarray:
        """The lanes that executed ``body[pc]`` (its guard, read now: no encoded instruction writes its own)."""
        vm = self.vm
        row = self.P[pc]
        if row[vm.GC] < 0:
            return group
        g = self.tier.flat[self.tier.sim.program.body[pc].guard[0].name][sel].reshape(-1)
        return group & (~g if row[vm.GN] else g)


def warm_up() -> bool:
    """Compile (or load from numba's on-disk cache) the block interpreter once, with the argument types a run
    passes; False when compiled blocks are off.  ``python -m tcsim.fast.blocks`` prints how long it took."""
    if not available():
        return False
    from .. import memory as M
    from . import vm
    P = np.zeros((1, vm.NCOL), dtype=np.int64)
    k = 1
    stacks = [np.zeros((1, k, 32), dtype=dt) for dt in (np.bool_, np.uint16, np.uint32, np.uint64)]
    z = np.zeros(k, dtype=np.int64)
    pad = np.zeros(8, np.uint8)
    vm.run(P, np.zeros(1, np.uint64), *stacks, np.zeros((1, k), np.uint64), np.zeros((1, 1), np.uint64),
           np.zeros(1, np.int64), np.arange(k, dtype=np.int64), np.zeros((1, 8), np.uint8), z, z, 0, 1, 0, 8,
           M.SHARED_RANK_SHIFT, M.SHARED_OFFSET_MASK, 0, np.zeros(8, np.uint8), np.zeros((1, 2), np.uint32),
           np.zeros((1, 1), np.uint64), np.zeros(vm.NGLOBAL, np.uint64), np.zeros(vm.NGLOBAL, np.uint64), 0,
           (pad,) * vm.NGLOBAL, np.zeros(16, np.int64), np.zeros(5, np.int64))
    return True


__all__ = ["Encoded", "Runner", "available", "encode", "warm_up"]


if __name__ == "__main__":
    import time

    t, cpu = time.perf_counter(), time.process_time()
    on = warm_up()
    print(f"tcsim.fast.blocks: {'compiled blocks ready' if on else 'compiled blocks off'} in "
          f"{time.perf_counter() - t:.1f} s ({time.process_time() - cpu:.1f} s CPU)")
