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
value it saw (computed without a round per lane where the operation allows: segmented scans for the
associative integer ops and exch, a sequential float accumulation, a walk between successful compares for cas;
:func:`_serialise`).
Floating-point add rounds to nearest even through :func:`tcsim.numerics.fp.fadd` (bit-exact):
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


#: integer ops whose effect on a word is associative (``old op b``; exch: the later value wins): the lanes of one
#: address are combined by a segmented prefix scan instead of one round per lane
_SCAN_OPS = frozenset(("add", "and", "or", "xor", "min", "max", "exch"))
_INT_TYPES = frozenset(("u32", "s32", "u64", "s64", "b32", "b64"))
_F32_MIN_NORMAL = np.float32(2.0 ** -126)


def _serialise(f: AtomForm, cur0: np.ndarray, inv: np.ndarray, b: np.ndarray, c, glob: np.ndarray):
    """Apply the active lanes' operations to their words one after the other in lane order: ``cur0`` (words, vec) the
    words' values before, ``inv`` (lanes,) each lane's word, ``b``/``c`` (lanes, vec) its operands, ``glob`` (lanes,)
    whether its address is global.  Returns (the words' values after, the value each lane saw).

    Same-address lanes are one sequence in lane order.  Without contention: one vectorised step.  Integer
    add/and/or/xor/min/max and exch: a segmented Hillis-Steele scan of the operands (log2 of the longest sequence
    steps; the operations are associative, and exch's "the later value" is too), then each lane's old value is its
    word's value combined with the scan of the lanes before it.  ``.f32`` / ``.f64`` add: ``np.add.accumulate``
    (strictly sequential, IEEE round-to-nearest-even in the type: the correctly rounded add of
    :func:`tcsim.numerics.fp.fadd`) when every operand and partial sum is finite and, where subnormals are flushed
    (``.f32`` on global memory), none is below the smallest normal -- else one round per lane.  ``cas``: a word
    changes only where a lane's compare value equals it, so the sequence is walked from one successful swap to the
    next.  Everything else (inc, dec, half types, ``.b128``): one vectorised round per position in the sequences."""
    n = inv.size
    order = np.argsort(inv, kind="stable")          # lanes grouped by word, each group in lane order
    gs = inv[order]
    starts = np.r_[0, np.flatnonzero(np.diff(gs)) + 1]
    counts = np.diff(np.r_[starts, n])
    rounds = int(counts.max())
    first = np.zeros(n, dtype=bool)
    first[starts] = True
    bs = b[order]
    gl = glob[order]
    seen_s = np.empty_like(bs)
    cur = cur0.copy()
    op, typ = f.op, f.type
    if rounds == 1:
        seen_s[:] = cur0[gs]
        cur[gs] = _apply(f, cur0[gs], bs, c[order] if c is not None else None, gl)
    elif op in _SCAN_OPS and typ in _INT_TYPES:
        x = bs.copy()
        d = 1
        while d < rounds:                           # x[i] = b[start] op ... op b[i] within each group
            same = gs[d:] == gs[:-d]
            if same.any():
                j = np.flatnonzero(same) + d
                x[j] = _apply(f, x[j - d], x[j], None, gl[j])
            d *= 2
        seen_s[first] = cur0[gs[first]]
        rest = np.flatnonzero(~first)
        seen_s[rest] = _apply(f, cur0[gs[rest]], x[rest - 1], None, gl[rest])
        last = np.r_[starts[1:], n] - 1
        cur[gs[last]] = _apply(f, cur0[gs[last]], x[last], None, gl[last])
    elif op == "add" and typ in ("f32", "f64") and _accumulate_float(f, cur0, gs, starts, counts, bs, gl, seen_s,
                                                                      cur):
        pass
    elif op == "cas" and typ != "b128" and len(starts) <= rounds:
        cs = c[order]
        for s0, k in zip(starts.tolist(), counts.tolist()):
            g = int(gs[s0])
            v = cur0[g].copy()
            i = s0
            while i < s0 + k:
                hit = np.flatnonzero((bs[i:s0 + k] == v).all(axis=1))
                j = s0 + k if hit.size == 0 else i + int(hit[0])
                seen_s[i:j + 1 if j < s0 + k else j] = v
                if j < s0 + k:
                    v = cs[j].copy()
                i = j + 1
            cur[g] = v
    else:
        rank = np.arange(n) - np.repeat(starts, counts)
        cs = c[order] if c is not None else None
        for k in range(rounds):
            sel = np.flatnonzero(rank == k)
            g = gs[sel]
            old = cur[g]
            seen_s[sel] = old
            cur[g] = _apply(f, old, bs[sel], cs[sel] if cs is not None else None, gl[sel])
    seen = np.empty_like(seen_s)
    seen[order] = seen_s
    return cur, seen


def _accumulate_float(f: AtomForm, cur0, gs, starts, counts, bs, gl, seen_s, cur) -> bool:
    """``.f32``/``.f64`` add of same-address lanes by ``np.add.accumulate`` (see :func:`_serialise`); False (nothing
    written) when a value is not finite or, flushed to zero on global memory, could be subnormal."""
    ft = np.float32 if f.type == "f32" else np.float64
    ftz = f.type == "f32" and bool(gl.any())
    res = []
    for s0, k in zip(starts.tolist(), counts.tolist()):
        g = int(gs[s0])
        seq = np.concatenate([cur0[g:g + 1], bs[s0:s0 + k]]).view(ft)
        if not np.isfinite(seq).all():
            return False
        if ftz:
            a = np.abs(seq)
            if ((a > 0) & (a < _F32_MIN_NORMAL)).any():
                return False
        with np.errstate(over="ignore"):
            acc = np.add.accumulate(seq, axis=0, dtype=ft)
        if not np.isfinite(acc).all():
            return False
        if ftz:
            a = np.abs(acc)
            if ((a > 0) & (a <= _F32_MIN_NORMAL)).any():
                return False
        res.append((g, s0, k, acc))
    for g, s0, k, acc in res:
        bits = acc.view(cur0.dtype)
        seen_s[s0] = cur0[g]
        seen_s[s0 + 1:s0 + k] = bits[1:k]
        cur[g] = bits[k]
    return True


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
        cur0 = old_all[lanes[first]].copy()
        cl = cv[lanes] if cv is not None else None
        cur, seen_l = _serialise(f, cur0, inv, bv[lanes], cl, glob)
        seen = np.zeros((32, f.vec), dtype=udt)
        seen[lanes] = seen_l
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
