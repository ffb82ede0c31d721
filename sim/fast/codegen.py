"""Generated group code for the simplest register-only instructions (the fast tier's lockstep supersteps).

For an instruction of one of the forms below, :func:`native_op` generates (Python source, compiled with ``exec``)
a function ``op(F, sel)`` computing its destination for every lane of a lockstep group at once: ``F`` is the
fast tier's flat register file (register name -> ``(warps, 32)`` array of the register's container dtype),
``sel`` the group's rows; the result is ``(destination, values)`` with ``values`` an array of the destination's
container dtype (or a scalar of it), which the superstep writes under the instruction's lane mask.  The code
works on the registers' raw bits: two's-complement wrapping arithmetic on the unsigned containers gives the bits
the decoded semantics give (``tcsim.semantics.integer`` / ``logic`` / ``compare`` / ``data_movement``), with
the signed views only where the result depends on the sign (arithmetic shifts, signed comparisons, widening).
The forms are parsed by the same ``tcsim.isa`` form parsers the semantics use.

Forms (anything else -- other modifiers, operands of another width than the type, special registers, symbols,
floating point -- returns None and runs through the decoded semantics over the group context):

* ``add``/``sub``/``mul.lo``/``mad.lo``/``neg`` on 16/32/64-bit integer types (no ``.cc``, ``.sat``, packed);
  ``mul.wide`` / ``mad.wide`` on 16/32-bit types;
* ``and``/``or``/``xor``/``not`` (bit types and ``.pred``), ``shl``/``shr`` (32/64-bit, immediate or 32-bit
  register amount, clamped as PTX ISA §9.7.7.7-8 says);
* ``setp.CmpOp.type p, a, b`` on integer / bit types (no ``|q``, no BoolOp), ``selp`` on integer / bit types;
* ``mov`` of a register or an integer immediate (same width), ``cvt`` between integer types (no ``.sat``),
  ``cvta`` (a 64-bit address, window base subtracted or added).

tests/sim/test_tiers.py checks every form against the decoded semantics over random register contents.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import TcsimError
from ..context import group_read_global, group_read_stacked_words
from ..ptxtypes import imm_bits, size_of

_UINT = {2: "np.uint16", 4: "np.uint32", 8: "np.uint64"}
_SINT = {2: "np.int16", 4: "np.int32", 8: "np.int64"}
_INT_TYPES = {f"{p}{n}" for p in "usb" for n in (16, 32, 64)}


class _Gen:
    """Source of one generated function: its constants and operand expressions."""

    def __init__(self, dtypes: dict):
        self.dtypes = dtypes
        self.consts: dict = {}
        self.lines: list = []

    def const(self, value) -> str:
        name = f"_c{len(self.consts)}"
        self.consts[name] = value
        return name

    def reg(self, op, nbytes: int | None, pred: bool = False) -> str | None:
        """The expression of register operand ``op`` (raw bits, its container), None if it has another width.
        (Register names are constants of the function, so that one form's source is the same whatever registers
        it names: the compiled code is shared, :func:`_code`.)"""
        if type(op) is not ir.Reg or op.name not in self.dtypes:
            return None
        dt = self.dtypes[op.name]
        if pred != (dt == np.bool_):
            return None
        if not pred and dt.itemsize != nbytes:
            return None
        return f"F[{self.const(op.name)}][sel]"

    def src(self, op, t: str) -> str | None:
        """A source of integer/bit type ``t``: a register of that width, or an integer immediate (its bits)."""
        n = size_of(t)
        if type(op) is ir.Imm:
            if op.kind != "int":
                return None
            try:
                b = imm_bits(op.value, op.kind, t, op.bits)
            except ValueError:
                return None
            return self.const(np.dtype(_UINT[n][3:]).type(b))
        return self.reg(op, n)

    def build(self, expr: str, dest: str):
        body = "\n".join(f"    {ln}" for ln in self.lines + [f"return {self.const(dest)}, {expr}"])
        src = f"def op(F, sel):\n{body}\n"
        env = {"np": np, **self.consts}
        exec(_code(src), env)
        fn = env["op"]
        fn.source = src
        return fn


@functools.lru_cache(maxsize=4096)
def _code(src: str):
    """The compiled code of a generated source (a pure function of the text: forms repeat with other registers)."""
    return compile(src, "<tcsim.fast.codegen>", "exec")


def _signed(expr: str, n: int) -> str:
    return f"{expr}.view({_SINT[n]})"


def _dest(g: _Gen, op, nbytes: int | None, pred: bool = False):
    if type(op) is not ir.Reg:
        return None
    return op.name if g.reg(op, nbytes, pred) is not None else None


class IntegerForm(NamedTuple):
    """A plain integer ``add``/``sub``/``mul``/``mad``/``neg`` (:func:`plain_integer`): its opcode, ``mode``
    ('lo', or 'wide' with a destination twice the sources' size), source ``type``, destination type ``dtype``,
    destination register and ``srcs`` as (operand, the type it is read as)."""
    op: str
    mode: str
    type: str
    dtype: str
    dst: object
    srcs: list


def plain_integer(ins, info) -> IntegerForm | None:
    """The form of a plain integer ``add``/``sub``/``mul.lo``/``mad.lo``/``neg`` on 16/32/64-bit types or
    ``mul.wide``/``mad.wide`` on 16/32-bit types (no ``.cc``, carry, ``.sat``, ``.relu``, ``.hi``, packed or float
    types), or None: the operand selection both the generated group code (:func:`native_op`) and the compiled
    blocks (:mod:`tcsim.fast.blocks`) encode, each its own way (raises what the form parser raises)."""
    op = ins.opcode
    if op not in ("add", "sub", "mul", "mad", "neg") or \
            any(m in ins.mods for m in ("f16", "bf16", "f16x2", "bf16x2", "f32x2", "f32", "f64")):
        return None
    from tcsim.isa.integer_forms import parse_integer
    f = parse_integer(ins, info)
    t, dt, mode = f.type, f.dtype, f.mode
    if f.cc or f.carry_in or f.sat or f.relu or f.shiftamt or t not in _INT_TYPES or dt not in _INT_TYPES:
        return None
    if mode in (None, "lo"):
        mode = "lo"
    elif mode != "wide" or size_of(dt) != 2 * size_of(t):
        return None
    srcs = [(s, dt if op == "mad" and i == 2 else t) for i, s in enumerate(f.srcs)]
    return IntegerForm(op, mode, t, dt, f.dst, srcs)


def native_op(ins, info, dtypes: dict):
    """The generated group function of ``ins`` (see the module docstring), or None."""
    if ins.guard is not None and not (isinstance(ins.guard[0], ir.Reg)):
        return None
    try:
        return _native(ins, info, dtypes)
    except Exception:                       # (a form the parsers reject: the semantics report it)
        return None


def _native(ins, info, dtypes):
    op = ins.opcode
    g = _Gen(dtypes)
    if op in ("add", "sub", "mul", "fma") and ("f32" in ins.mods or "f64" in ins.mods):
        return _float(ins, info, g)
    if op in ("add", "sub", "mul", "mad", "neg"):
        f = plain_integer(ins, info)
        if f is None:
            return None
        n, dn = size_of(f.type), size_of(f.dtype)
        srcs = [g.src(s, t) for s, t in f.srcs]
        d = _dest(g, f.dst, dn)
        if d is None or any(s is None for s in srcs):
            return None
        if op == "neg":
            return None if srcs[0].startswith("_c") else g.build(f"np.negative({srcs[0]})", d)
        if op in ("add", "sub"):
            return g.build(f"{srcs[0]} {'+' if op == 'add' else '-'} {srcs[1]}", d)
        if f.mode == "lo":
            prod = f"{srcs[0]} * {srcs[1]}"
        else:
            if any(s.startswith("_c") for s in srcs[:2]):
                return None                 # (a scalar has no .view: the semantics handle wide immediates)
            t = f.type
            cast = _SINT[dn] if t[0] == "s" else _UINT[dn]
            a, b = (_signed(s, n) if t[0] == "s" else s for s in srcs[:2])
            prod = f"({a}.astype({cast}) * {b}.astype({cast})).view({_UINT[dn]})" if t[0] == "s" else \
                f"{a}.astype({cast}) * {b}.astype({cast})"
        if op == "mad":
            return g.build(f"{prod} + {srcs[2]}", d)
        return g.build(prod, d)
    if op in ("and", "or", "xor", "not", "shl", "shr"):
        from tcsim.isa.alu_forms import parse_logic
        f = parse_logic(ins, info)
        t = f.type
        sym = {"and": "&", "or": "|", "xor": "^"}.get(op)
        if t == "pred":
            if op in ("shl", "shr"):
                return None
            srcs = [g.reg(s, None, pred=True) for s in f.srcs]
            d = _dest(g, f.dst, None, pred=True)
            if d is None or any(s is None for s in srcs):
                return None
            return g.build(f"~{srcs[0]}" if op == "not" else f"{srcs[0]} {sym} {srcs[1]}", d)
        if t not in _INT_TYPES:
            return None
        n = size_of(t)
        d = _dest(g, f.dst, n)
        if d is None:
            return None
        if op == "not":
            a = g.src(f.srcs[0], t)
            return None if a is None else g.build(f"~{a}", d)
        if sym is not None:
            a, b = g.src(f.srcs[0], t), g.src(f.srcs[1], t)
            return None if a is None or b is None else g.build(f"{a} {sym} {b}", d)
        if n < 4:
            return None
        a = g.reg(f.srcs[0], n)
        if a is None:
            return None
        bits = 8 * n
        amt = f.srcs[1]
        left, arith = op == "shl", op == "shr" and t[0] == "s"
        if type(amt) is ir.Imm and amt.kind == "int":
            s = imm_bits(amt.value, "int", "u32")
            if arith:
                return g.build(f"({_signed(a, n)} >> {g.const(np.dtype(_SINT[n][3:]).type(min(s, bits - 1)))})"
                               f".view({_UINT[n]})", d)
            if s >= bits:
                return g.build(f"np.zeros_like({a})", d)
            return g.build(f"{a} {'<<' if left else '>>'} {g.const(np.dtype(_UINT[n][3:]).type(s))}", d)
        s = g.reg(amt, 4)
        if s is None:
            return None
        g.lines.append(f"s = {s}.astype(np.int64)")
        g.lines.append(f"sc = np.minimum(s, {bits - 1})")
        if arith:
            return g.build(f"({_signed(a, n)} >> sc.astype({_SINT[n]})).view({_UINT[n]})", d)
        return g.build(f"np.where(s >= {bits}, {_UINT[n]}(0), {a} {'<<' if left else '>>'} sc.astype({_UINT[n]}))"
                       f".astype({_UINT[n]})", d)
    if op in ("setp", "selp"):
        from tcsim.isa.alu_forms import parse_compare
        f = parse_compare(ins, info)
        t = f.stype
        if t not in _INT_TYPES:
            return None
        n = size_of(t)
        if op == "setp":
            if f.qdst is not None or f.boolop is not None or f.c is not None or f.ftz:
                return None
            d = _dest(g, f.dst, None, pred=True)
            cmp = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(f.cmp, f.cmp)
            sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}.get(cmp)
            a, b = g.src(f.a, t), g.src(f.b, t)
            if d is None or sym is None or a is None or b is None:
                return None
            if t[0] == "s":
                a, b = (_signed(x, n) if not x.startswith("_c") else
                        g.const(np.asarray(g.consts[x]).view(_SINT[n][3:])[()]) for x in (a, b))
            return g.build(f"{a} {sym} {b}", d)
        d = _dest(g, f.dst, n)
        a, b = g.src(f.a, t), g.src(f.b, t)
        c = g.reg(f.c, None, pred=True)
        if d is None or a is None or b is None or c is None:
            return None
        return g.build(f"np.where({c}, {a}, {b}).astype({_UINT[n]})", d)
    if op == "mov":
        from tcsim.isa.data_movement_forms import parse_mov
        f = parse_mov(ins, info)
        if f.mode == "pred":
            d, a = _dest(g, f.dst, None, pred=True), g.reg(f.src, None, pred=True)
            return None if d is None or a is None else g.build(f"{a}.copy()", d)
        if f.mode != "copy" or f.type not in _INT_TYPES | {"f32", "f64"}:
            return None
        t = f.type if f.type in _INT_TYPES else ("b32" if f.type == "f32" else "b64")
        n = size_of(t)
        d = _dest(g, f.dst, n)
        if d is None:
            return None
        if type(f.src) is ir.Imm:
            if f.src.kind != "int" and f.type not in ("f32", "f64"):
                return None
            try:
                b = imm_bits(f.src.value, f.src.kind, f.type, f.src.bits)
            except ValueError:
                return None
            return g.build(g.const(np.dtype(_UINT[n][3:]).type(b)), d)
        a = g.reg(f.src, n)
        return None if a is None else g.build(f"{a}.copy()", d)
    if op == "cvt":
        from tcsim.isa.convert_forms import parse_cvt
        f = parse_cvt(ins, info)
        if f.pair or f.rnd or f.ftz or f.sat or f.relu or f.satfinite:
            return None
        dt, st = f.dst, f.src
        ints = {"u16", "s16", "u32", "s32", "u64", "s64"}
        if dt not in ints or st not in ints or len(ins.operands) != 2:
            return None
        dn, sn = size_of(dt), size_of(st)
        d = _dest(g, ins.operands[0], dn)
        a = g.reg(ins.operands[1], sn)
        if d is None or a is None:
            return None
        if dn == sn:
            return g.build(f"{a}.copy()", d)
        if dn < sn:
            return g.build(f"{a}.astype({_UINT[dn]})", d)
        if st[0] == "s":
            return g.build(f"{_signed(a, sn)}.astype({_SINT[dn]}).view({_UINT[dn]})", d)
        return g.build(f"{a}.astype({_UINT[dn]})", d)
    if op == "cvta":
        from tcsim.isa.data_movement_forms import parse_cvta
        from .. import memory as M
        f = parse_cvta(ins, info)
        if f.size != "u64":
            return None
        base = {"shared": M.SHARED_WINDOW, "shared::cta": M.SHARED_WINDOW, "shared::cluster": M.SHARED_WINDOW,
                "local": M.LOCAL_WINDOW, "global": 0, "param": M.PARAM_WINDOW, "const": M.CONST_WINDOW}[f.space]
        d, a = _dest(g, f.dst, 8), g.reg(f.src, 8)
        if d is None or a is None:
            return None
        if not base:
            return g.build(f"{a}.copy()", d)
        return g.build(f"{a} {'-' if f.to else '+'} {g.const(np.uint64(base))}", d)
    return None


def _float(ins, info, g: _Gen):
    """add / sub / mul / fma on .f32 / .f64 registers: the numerics call the semantics make
    (tcsim.semantics.float_arith: ``tcsim.numerics.fp`` over the raw bits, then for .f64 the NaN priority of the
    SASS operand order ptxas picks, ``sass_nan_priority``)."""
    from tcsim.isa.float_forms import parse_float
    from tcsim.numerics import fp
    from ..semantics.float_arith import sass_nan_priority
    f = parse_float(ins, info)
    t = f.type
    if f.atype is not None or t not in ("f32", "f64") or getattr(f, "relu", False):
        return None
    n = size_of(t)
    srcs = [g.reg(s, n) for s in f.srcs]
    d = _dest(g, f.dst, n)
    if d is None or any(s is None for s in srcs) or len(srcs) != (3 if ins.opcode == "fma" else 2):
        return None
    try:
        fn = fp.lane_op(ins.opcode, t, f.rnd, bool(f.ftz), bool(f.sat))
    except ValueError:
        return None                         # (a modifier the format does not allow: the semantics report it)
    prio = sass_nan_priority(info, ins, ins.opcode, tuple(f.srcs)) if t == "f64" else None
    for i, s in enumerate(srcs):
        g.lines.append(f"x{i} = {s}.reshape(-1)")
    args = ", ".join(f"x{i}" for i in range(len(srcs)))
    g.lines.append(f"r = {g.const(fn)}({args})")
    if prio is not None:                    # (propagate_nan64 returns a result without a NaN as it is)
        ops = ", ".join(f"x{i} ^ {g.const(np.uint64(flip))}" for i, flip in prio)
        g.lines.append("if np.isnan(np.asarray(r, dtype=np.uint64).view(np.float64)).any():")
        g.lines.append(f"    r = {g.const(fp.propagate_nan64)}(r, {ops})")
    return g.build(f"np.asarray(r).astype({_UINT[n]}).reshape(-1, 32)", d)


class _SharedAccess:
    """Group code of a scalar ``ld`` / ``st`` of ``shared::cta`` (or a ``ld`` of ``global``) whose value fills its
    register, for a group in which every lane executes it: the addresses are the register's raw bits plus the
    offset (as :meth:`tcsim.context.ExecContext.address` makes them); an access the group context would not run
    (misaligned, another CTA's rank, out of the window, a global address outside every allocation, a shared
    store into a CTA holding an mbarrier) returns None and runs through the semantics, which raise the
    reference's fault.  Shared words move in one gather / scatter over the stacked windows
    (:class:`tcsim.memory.StackedWindows`); a store writes warp after warp, each warp's lanes in descending
    order (later wins: the reference's order)."""

    full_only = True                        # (only when every lane of the group executes it)

    def __init__(self, tier, store: bool, space: str, base: str, offset: int, nbytes: int, reg: str):
        self.tier = tier
        self.store = store
        self.space = space
        self.base = base
        self.offset = np.uint64(offset & ((1 << 64) - 1))
        self.nbytes = nbytes
        self.word = np.dtype(_UINT[nbytes][3:])
        self.reg = reg

    def __call__(self, F, sel):
        from .. import memory as M
        t = self.tier
        n = self.nbytes
        a = F[self.base][sel].astype(np.uint64) + self.offset
        if (a & np.uint64(n - 1)).any():
            return None
        if self.space == "global":
            try:
                raw = group_read_global(t.sim.gmem, a.reshape(-1), n)
            except TcsimError:
                return None
            return self.reg, raw.view(self.word).reshape(a.shape)
        st = t.smem_stack
        if st is None or not st.words_ok(n):
            return None
        cta = t.cta_index[sel]
        ranks = t.cta_rank[cta]
        if not ranks.any():                     # (CTAs of rank 0: the address is the offset)
            offs = a.view(np.int64) if a.dtype == np.uint64 else a.astype(np.int64)
            if int(a.max()) + n > t.smem_end or int(a.min()) < t.smem_base:
                return None
        else:
            rank = (a >> np.uint64(M.SHARED_RANK_SHIFT)).astype(np.int64)
            offs = (a & np.uint64(M.SHARED_OFFSET_MASK)).astype(np.int64)
            if (rank != ranks[:, None]).any() or (offs < t.smem_base).any() or (offs + n > t.smem_end).any():
                return None
        if not self.store:
            return self.reg, group_read_stacked_words(st, cta, offs, n)
        rows = np.broadcast_to(cta[:, None], offs.shape)
        return self.reg, (st, rows[:, ::-1], offs[:, ::-1])    # (the caller stores: tcsim.fast.lockstep)


def bind_mem(spec: tuple, tier) -> _SharedAccess:
    """The :class:`_SharedAccess` of a :func:`native_mem` result for one run's fast tier."""
    return _SharedAccess(tier, *spec)


def native_mem(ins, info, dtypes: dict, global_stores: bool = False):
    """The parameters of a :class:`_SharedAccess` (:func:`bind_mem`) for a plain scalar ld / st of shared::cta (ld
    of global too; ``global_stores``: st of global too, for the compiled blocks) filling a register of its type's
    size, or None."""
    if ins.opcode not in ("ld", "st") or any(m in ins.mods for m in ("volatile", "mmio", "unified")):
        return None
    from tcsim.isa.data_movement_forms import parse_ld, parse_st
    try:
        f = (parse_ld if ins.opcode == "ld" else parse_st)(ins, info)
    except Exception:
        return None
    store = ins.opcode == "st"
    space = {"shared": "shared", "shared::cta": "shared", "global": "global"}.get(f.space)
    if space is None or (store and space != "shared" and not global_stores) or f.vec != 1 or f.policy is not None:
        return None
    n = size_of(f.type)
    if n not in (4, 8) or type(f.value) is not ir.Reg or f.value.name not in dtypes or \
            dtypes[f.value.name] == np.bool_ or dtypes[f.value.name].itemsize != n:
        return None
    addr = f.addr
    if type(addr) is not ir.Address or type(addr.base) is not ir.Reg or addr.base.name not in dtypes or \
            dtypes[addr.base.name] == np.bool_:
        return None
    return (store, space, addr.base.name, int(addr.offset or 0), n, f.value.name)


__all__ = ["bind_mem", "native_mem", "native_op"]
