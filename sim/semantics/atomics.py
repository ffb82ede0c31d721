"""Atomic memory operations: atom and red on .global, .shared{::cta,::cluster} and generic addresses.

PTX ISA 9.1 §9.7.13.5 (atom) and §9.7.13.6 (red).

Forms: :mod:`tcsim.isa.atomic_forms` lists and checks them; in short ``atom{.sem}{.scope}{.space}.op.type d, [a], b``
(``cas``: ``, c``), vector forms on .global for sm_90+, and ``red``: the same without d.

    op/type: and, or, xor: .b32 .b64;  cas: .b16 .b32 .b64 .b128;  exch: .b32 .b64 .b128 (.b128: sm_90+);
             add: .u32 .s32 .u64 .f32 .f64 (+ .s64, accepted as the same two's-complement add);
             inc, dec: .u32;  min, max: .u32 .s32 .u64 .s64

Semantics (PTX pseudo-code): ``inc(r, s) = r >= s ? 0 : r + 1``, ``dec(r, s) = (r == 0 || r > s) ? s : r - 1``,
``cas(r, s, t) = r == s ? t : r``, ``exch(r, s) = s``; integer add wraps.  Lanes of one instruction that hit
the same address are applied one after the other in lane order, each atomically; each lane's ``d`` is the
value it saw.  Floating-point add rounds to nearest even through :func:`tcsim.numerics.fp.fadd` (bit-exact):
``.f32`` on global memory flushes subnormal inputs and results to sign-preserving zero, as the PTX states for
the current implementation; on shared memory it keeps subnormals (both seen on an H100, sm_90a, which also
returns the unflushed old value in ``d``).  ``.f16/.bf16`` (``.noftz``) keep
subnormals.  Vector min/max of half types use :func:`fp.fmin` / :func:`fp.fmax` (a NaN operand yields the
other operand).  Vector and packed forms are atomic per element, as the PTX guarantees.

``.sem`` (default .relaxed) and ``.scope`` (default .gpu) have no functional effect in this sequentially
consistent simulator; they are recorded in a ``sync`` event ``op='atom'`` / ``'red'`` (fields ``aop``,
``sem``, ``scope``, ``space``) and every access is reported as a ``mem`` event with ``op='atom'`` / ``'red'``.
The L2 cache-policy operand is read and ignored.

A ``.b128`` cas compares and swaps all 128 bits at once (16-byte aligned).

Not supported (UnsupportedError at load): ``red.async`` (mbarrier-completed remote
reductions), ``.mmio``.  Vector forms on a non-global address fault at run time (MemoryFault).  The forms are
parsed and checked in :mod:`tcsim.isa.atomic_forms`.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import MemoryFault
from tcsim.isa.atomic_forms import SPACES, AtomForm, parse_atom
from .. import memory as M
from ..numerics import fp
from ..ptxtypes import B128, UINT, size_of, view_dtype
from .registry import semantics

def _apply(f: AtomForm, old: np.ndarray, b: np.ndarray, c, is_global: np.ndarray) -> np.ndarray:
    """New memory value(s) for one round: ``old``/``b``/``c`` are (n, vec) raw-bit arrays, ``is_global`` (n,)."""
    op, typ = f.op, f.type
    dt = old.dtype
    if op == "and":
        return old & b
    if op == "or":
        return old | b
    if op == "xor":
        return old ^ b
    if op == "exch":
        return b.copy()
    if op == "cas":
        return np.where(old == b, c, old)
    if op == "inc":
        return np.where(old >= b, dt.type(0), old + dt.type(1))
    if op == "dec":
        return np.where((old == 0) | (old > b), b, old - dt.type(1))
    if typ in ("u32", "u64", "s32", "s64"):
        if op == "add":
            return (old + b).astype(dt)
        sdt = view_dtype(typ)
        o, v = old.view(sdt), b.view(sdt)
        r = np.minimum(o, v) if op == "min" else np.maximum(o, v)
        return r.view(dt)
    # floating point
    shape = old.shape
    o, v = old.reshape(-1), b.reshape(-1)
    if typ == "f32":
        g = np.repeat(is_global, shape[1])
        out = np.empty_like(o)
        if g.any():
            out[g] = fp.fadd("f32", o[g], v[g], "rn", ftz=True)
        if (~g).any():
            out[~g] = fp.fadd("f32", o[~g], v[~g], "rn", ftz=False)
        return out.reshape(shape)
    if typ == "f64":
        return fp.fadd("f64", o, v, "rn").reshape(shape).astype(dt)
    fn = {"add": lambda fmt, x, y: fp.fadd(fmt, x, y, "rn"), "min": fp.fmin, "max": fp.fmax}[op]
    if typ in ("f16", "bf16"):
        return np.asarray(fn(typ, o, v)).astype(dt).reshape(shape)
    elem = typ[:-2]
    return np.asarray(fp.packed2(fn, elem, o, v)).astype(dt).reshape(shape)


def _is_global(space: str, addrs: np.ndarray) -> np.ndarray:
    if space == "global":
        return np.ones(addrs.size, dtype=bool)
    if space.startswith("shared"):
        return np.zeros(addrs.size, dtype=bool)
    a = addrs.astype(np.uint64)
    out = np.ones(a.size, dtype=bool)
    for base, name in ((M.SHARED_WINDOW, None), (M.LOCAL_WINDOW, "local"), (M.PARAM_WINDOW, "param"),
                       (M.CONST_WINDOW, "const")):
        inwin = (a >= np.uint64(base)) & (a < np.uint64(base + M.WINDOW_SIZE))
        if name is not None and inwin.any():
            raise MemoryFault(f"atomic operation on a generic address 0x{int(a[inwin][0]):x} in the .{name} window",
                              expected="a global or shared address")
        out &= ~inwin
    return out


@semantics("atom", "red")
def decode_atom(ins, info):
    """PTX ISA 9.1 §9.7.13.5 atom / §9.7.13.6 red: atomic read-modify-write (see module docstring)."""
    f = parse_atom(ins, info)
    ops = list(ins.operands)
    name = ins.full_opcode
    dst, addr, bop, cop = f.dst, f.addr, f.b, f.c
    typ = f.type
    es = size_of(typ)
    nbytes = es * f.vec
    space = SPACES.get(f.space, "generic")
    udt = B128 if typ == "b128" else UINT[es]
    memop = "red" if f.red else "atom"

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        addrs = ctx.address(addr)
        if f.vec > 1:
            bv = np.stack([np.ascontiguousarray(v).view(udt) for v in ctx.read_vector(bop, typ)], axis=1)
        else:
            bv = np.ascontiguousarray(ctx.read(bop, typ)).view(udt).reshape(-1, 1)
        cv = np.ascontiguousarray(ctx.read(cop, typ)).view(udt).reshape(-1, 1) if cop is not None else None
        if f.hint:
            ctx.read(ops[-1], "b64")
        la = addrs[lanes]
        glob = _is_global(space, la)
        if f.vec > 1 and not glob.all():
            raise MemoryFault(f"{name}: vector atomic on a non-global address 0x{int(la[~glob][0]):x}",
                              expected="a .global address")
        raw = ctx.load(space, addrs, nbytes, op=memop)
        old_all = np.ascontiguousarray(raw).view(udt).reshape(32, f.vec)
        uniq, first, inv = np.unique(la, return_index=True, return_inverse=True)
        cur = old_all[lanes[first]].copy()
        # position of each lane within its address group (lane order)
        order = np.argsort(inv, kind="stable")
        rank = np.empty(lanes.size, dtype=np.int64)
        starts = np.r_[0, np.flatnonzero(np.diff(inv[order])) + 1]
        counts = np.diff(np.r_[starts, lanes.size])
        rank[order] = np.arange(lanes.size) - np.repeat(starts, counts)
        seen = np.zeros((32, f.vec), dtype=udt)
        bl = bv[lanes]
        cl = cv[lanes] if cv is not None else None
        for k in range(int(rank.max()) + 1):
            sel = rank == k
            g = inv[sel]
            old = cur[g]
            seen[lanes[sel]] = old
            cur[g] = _apply(f, old, bl[sel], cl[sel] if cl is not None else None, glob[sel])
        rep = np.zeros(32, dtype=bool)
        last = np.full(uniq.size, -1, dtype=np.int64)
        np.maximum.at(last, inv, lanes)     # one representative lane (the group's last) stores the result
        rep[last] = True
        rows = np.zeros((32, nbytes), dtype=np.uint8)
        rows[last] = np.ascontiguousarray(cur).view(np.uint8).reshape(uniq.size, nbytes)
        ctx.store(space, addrs, rows, mask=rep, op=memop)
        ctx.emit_sync(memop, aop=f.op, type=typ, sem=f.sem or "relaxed", scope=f.scope or "gpu", space=space,
                      lanes=[int(x) for x in lanes])
        if isinstance(dst, ir.Sink):
            return
        vt = view_dtype(typ)
        if f.vec > 1:
            ctx.write_vector(dst, typ, [np.ascontiguousarray(seen[:, i]).view(vt) for i in range(f.vec)])
        else:
            ctx.write(dst, typ, np.ascontiguousarray(seen[:, 0]).view(vt))

    return run
