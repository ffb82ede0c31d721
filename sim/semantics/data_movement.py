"""Plain data movement: mov, ld, ldu, st, cvta, isspacep, mapa, getctarank, prefetch.

PTX ISA 9.1 §9.7.9 (data movement and conversion).  Memory-consistency qualifiers (``.weak``, ``.volatile``,
``.relaxed``, ``.acquire``, ``.release`` with a scope) are recorded on the memory events for the race detector;
every access is otherwise executed in program order by the issuing warp.  Cache and eviction hints
(``.ca .cg .cs .lu .cv .nc``, ``.L1::*``, ``.L2::*``) have no functional effect and are accepted.

``.b128`` (sm_90+): ``mov.b128`` packs / unpacks 2 x 64 or 4 x 32 bits (element 0 in the low bits) and copies
whole; ``ld``/``st .b128`` move 16 bytes per lane (16-byte aligned; bits 0-63 at the low address, as every PTX
value is little-endian), with every state space and memory-consistency qualifier ``ld``/``st`` take.  A
``.L2::cache_hint`` operand is checked (a 64-bit register) and read, with no functional effect.

Not supported (diagnostic at load): ``ld.global.nc`` of texture handles, ``.unified``.
The forms are parsed and checked in :mod:`tcsim.isa.data_movement_forms`.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.data_movement_forms import (parse_cvta, parse_getctarank, parse_isspacep, parse_ld, parse_mapa,
                                           parse_mov, parse_prefetch, parse_st)
from tcsim.isa.errors import MemoryFault, VerifyError
from .. import memory as M
from ..ptxtypes import B128, UINT, b128_of, size_of, view_dtype
from .registry import semantics


def _space_for(space):
    return "shared::cta" if space == "shared" else space


def _split_elems(raw: np.ndarray, vec: int, typ: str) -> list:
    es = size_of(typ)
    return [np.ascontiguousarray(raw[:, i * es:(i + 1) * es]).view(UINT[es]).reshape(-1) for i in range(vec)]


def _is_call_param(info, op) -> bool:
    """``[name+off]`` names one of the function's own .param variables (PTX ISA §5.1.6.2): a call-site variable
    declared in its body or, in a ``.func``, one of its parameters / return values -- not a kernel parameter."""
    if not (isinstance(op, ir.Address) and isinstance(op.base, ir.Sym)):
        return False
    fn = info.function
    name = op.base.name
    if any(v.space == "param" and v.name == name for v in fn.locals):
        return True
    return fn.kind == "func" and any(p.name == name for p in list(fn.params) + list(fn.returns))


@semantics("ld", "ldu")
def decode_ld(ins, info):
    """PTX ISA §9.7.9.8 ld / §9.7.9.9 ldu: load a scalar or vector from a state space."""
    f = parse_ld(ins, info)
    space, vec, typ, dst, src = f.space, f.vec, f.type, f.value, f.addr
    es = size_of(typ)
    nbytes = es * vec
    sp = _space_for(space)
    signed = typ[0] == "s"
    local_param = space == "param" and _is_call_param(info, src)

    def run(ctx):
        if f.policy is not None:
            ctx.read(f.policy, "b64")          # the .L2::cache_hint policy: read, no functional effect
        if local_param:
            raw = ctx.call_param_load(src.base.name, src.offset, nbytes)
        else:
            raw = ctx.load(sp, ctx.address(src), nbytes)
        if typ == "b128":
            ctx.write(dst, "b128", np.ascontiguousarray(raw).view(B128).reshape(-1))
            return
        elems = _split_elems(raw, vec, typ)
        if vec == 1:
            _write_sized(ctx, dst, elems[0], typ, signed)
        else:
            for e, v in zip(dst.elems, elems):
                _write_sized(ctx, e, v, typ, signed)

    return run


def _write_sized(ctx, dst, bits, typ, signed):
    if isinstance(dst, ir.Sink):
        return
    ctx.write(dst, typ, bits.view(view_dtype(typ)))


@semantics("st")
def decode_st(ins, info):
    """PTX ISA §9.7.9.10 st: store a scalar or vector to a state space."""
    f = parse_st(ins, info)
    space, vec, typ, dst, src = f.space, f.vec, f.type, f.addr, f.value
    es = size_of(typ)
    sp = _space_for(space)
    local_param = space == "param" and _is_call_param(info, dst)

    def run(ctx):
        if f.policy is not None:
            ctx.read(f.policy, "b64")          # the .L2::cache_hint policy: read, no functional effect
        if typ == "b128":
            raw = np.ascontiguousarray(ctx.read(src, "b128")).view(np.uint8).reshape(-1, 16)
            ctx.store(sp, ctx.address(dst), raw)
            return
        vals = ctx.read_vector(src, typ) if vec > 1 else [ctx.read(src, typ)]
        raw = np.concatenate([np.ascontiguousarray(v).view(UINT[es]).reshape(-1, 1).view(np.uint8)
                              for v in vals], axis=1)
        if local_param:
            ctx.call_param_store(dst.base.name, dst.offset, raw)
            return
        ctx.store(sp, ctx.address(dst), raw)

    return run


@semantics("mov")
def decode_mov(ins, info):
    """PTX ISA §9.7.9.1 mov: copy a register, immediate, special register or symbol address; pack/unpack
    vectors (``mov.b64 %rd, {%r1, %r2}`` / ``mov.b64 {%r1, %r2}, %rd``), element 0 in the low bits."""
    f = parse_mov(ins, info)
    typ, dst, src = f.type, f.dst, f.src
    if f.mode == "pred":
        def run(ctx):
            ctx.write_pred(dst, ctx.read_pred(src))
        return run
    if f.mode == "vector":
        pairs = [(d, s) for d, s in zip(dst.elems, src.elems) if not isinstance(d, ir.Sink)]

        def run(ctx):
            vals = [ctx.read(s, typ) for _, s in pairs]      # every source read before any write
            for (d, _), v in zip(pairs, vals):
                ctx.write(d, typ, v)
        return run
    if typ == "b128":
        return _mov_b128(f)
    size = size_of(typ)
    if f.mode == "pack":
        n = len(src.elems)
        esz = size // n
        etype = f"b{8 * esz}"

        def run(ctx):
            acc = np.zeros(32, dtype=np.uint64)
            for i, e in enumerate(src.elems):
                acc |= ctx.read(e, etype).astype(np.uint64) << np.uint64(8 * esz * i)
            ctx.write(dst, f"b{8 * size}", acc.astype(UINT[size]))
        return run
    if f.mode == "unpack":
        n = len(dst.elems)
        esz = size // n
        etype = f"b{8 * esz}"

        def run(ctx):
            v = ctx.read(src, f"b{8 * size}").astype(np.uint64)
            for i, e in enumerate(dst.elems):
                ctx.write(e, etype, ((v >> np.uint64(8 * esz * i)) & np.uint64((1 << (8 * esz)) - 1)).astype(
                    UINT[esz]))
        return run

    def run(ctx):
        ctx.write(dst, typ, ctx.read(src, typ))
    return run


def _mov_b128(f):
    """``mov.b128``: pack {lo, hi} (or four 32-bit words, element 0 lowest), unpack, or copy whole."""
    dst, src = f.dst, f.src
    if f.mode == "copy":
        def run(ctx):
            ctx.write(dst, "b128", ctx.read(src, "b128"))
        return run
    vec = src if f.mode == "pack" else dst
    n = len(vec.elems)
    ebits = 128 // n
    etype = f"b{ebits}"
    per_half = n // 2          # elements in each 64-bit half

    if f.mode == "pack":
        def run(ctx):
            halves = []
            for h in range(2):
                acc = np.zeros(32, dtype=np.uint64)
                for i in range(per_half):
                    acc |= ctx.read(vec.elems[h * per_half + i], etype).astype(np.uint64) << np.uint64(ebits * i)
                halves.append(acc)
            ctx.write(dst, "b128", b128_of(*halves))
        return run

    def run(ctx):
        v = ctx.read(src, "b128")
        for h, half in enumerate((v["lo"], v["hi"])):
            for i in range(per_half):
                part = (half >> np.uint64(ebits * i)) if ebits < 64 else half
                ctx.write(vec.elems[h * per_half + i], etype, part.astype(UINT[ebits // 8]))
    return run


@semantics("cvta")
def decode_cvta(ins, info):
    """PTX ISA §9.7.9.19 cvta: convert between generic and state-space addresses (see sim/memory.py)."""
    f = parse_cvta(ins, info)
    to, space, size = f.to, f.space, f.size
    base = {"shared": M.SHARED_WINDOW, "shared::cta": M.SHARED_WINDOW, "shared::cluster": M.SHARED_WINDOW,
            "local": M.LOCAL_WINDOW, "global": 0, "param": M.PARAM_WINDOW, "const": M.CONST_WINDOW}[space]
    dst, src = f.dst, f.src

    def run(ctx):
        a = ctx.read(src, size).astype(np.uint64)
        if to:
            r = a - np.uint64(base) if base else a
        else:
            r = a + np.uint64(base)
        ctx.write(dst, size, r.astype(UINT[size_of(size)]))

    return run


@semantics("isspacep")
def decode_isspacep(ins, info):
    """PTX ISA §9.7.9.20 isspacep: does a generic address fall in a state-space window.  As on the H100
    (tests/hw/golden_h100/address_layout.json): ``.shared::cta`` holds for the executing CTA's own window only,
    ``.shared::cluster`` for every CTA's; ``.param`` and ``.global`` both hold for a kernel-parameter address."""
    f = parse_isspacep(ins)
    space, dst, src = f.space, f.dst, f.src

    def run(ctx):
        a = ctx.read(src, "u64").astype(np.uint64)
        sh = (a >= np.uint64(M.SHARED_WINDOW)) & (a < np.uint64(M.SHARED_WINDOW + M.WINDOW_SIZE))
        lo = (a >= np.uint64(M.LOCAL_WINDOW)) & (a < np.uint64(M.LOCAL_WINDOW + M.WINDOW_SIZE))
        pa = (a >= np.uint64(M.PARAM_WINDOW)) & (a < np.uint64(M.PARAM_WINDOW + M.WINDOW_SIZE))
        co = (a >= np.uint64(M.CONST_WINDOW)) & (a < np.uint64(M.CONST_WINDOW + M.WINDOW_SIZE))
        if space in ("shared", "shared::cta"):
            r = sh & ((a - np.uint64(M.SHARED_WINDOW)) >> np.uint64(M.SHARED_RANK_SHIFT) ==
                      np.uint64(ctx.rank))
        elif space == "shared::cluster":
            r = sh
        elif space == "local":
            r = lo
        elif space == "global":
            # the kernel-parameter (and constant) banks live in global memory: isspacep.global of a generic
            # parameter address is true on the H100 (tests/hw/golden_h100/address_layout.json)
            r = ~(sh | lo) & ((a >= np.uint64(M.GLOBAL_BASE)) | pa | co)
        elif space in ("param", "param::entry"):
            r = pa
        elif space == "const":
            r = co
        else:
            r = np.zeros(32, dtype=bool)
        ctx.write_pred(dst, r)

    return run


@semantics("mapa")
def decode_mapa(ins, info):
    """PTX ISA §9.7.9.23 mapa: address of the same shared variable in CTA ``rank`` of the cluster.

    ``mapa.shared::cluster`` maps a 32/64-bit shared address; plain ``mapa`` maps a generic address.  The result
    replaces the rank field (bits 24 and up) and keeps the window offset, as the H100 does
    (tests/hw/golden_h100/address_layout.json: every rank of clusters of 1, 2, 4 and 2 x 2).  A rank outside the
    cluster, or a generic address outside the shared window, is a located error.
    """
    f = parse_mapa(ins)
    shared, size, dst, src, rank = f.space is not None, f.size, f.dst, f.src, f.rank

    def run(ctx):
        a = ctx.read(src, size).astype(np.uint64)
        r = ctx.read(rank, "u32").astype(np.uint64)
        n = ctx.cluster.size
        bad = ctx.mask & (r >= np.uint64(n))
        if bad.any():
            raise VerifyError(f"mapa to CTA rank {int(r[bad][0])} but the cluster has {n} CTAs")
        if not shared:
            outside = ctx.mask & ((a < np.uint64(M.SHARED_WINDOW)) |
                                  (a >= np.uint64(M.SHARED_WINDOW + M.WINDOW_SIZE)))
            if outside.any():
                i = int(np.nonzero(outside)[0][0])
                raise MemoryFault(f"mapa of generic address 0x{int(a[i]):x} (lane {i}), which is not in the shared "
                                  f"window", expected="the generic address of a shared variable (cvta.shared), or "
                                                      "mapa.shared::cluster with a shared address")
        off = a if shared else a - np.uint64(M.SHARED_WINDOW)
        out = (off & np.uint64(M.SHARED_OFFSET_MASK)) | (r << np.uint64(M.SHARED_RANK_SHIFT))
        if not shared:
            out = out + np.uint64(M.SHARED_WINDOW)
        ctx.write(dst, size, out.astype(UINT[size_of(size)]))

    return run


@semantics("getctarank")
def decode_getctarank(ins, info):
    """PTX ISA §9.7.9.24 getctarank: cluster rank of the CTA owning a shared address."""
    f = parse_getctarank(ins)
    shared, size, dst, src = f.space is not None, f.size, f.dst, f.src

    def run(ctx):
        a = ctx.read(src, size).astype(np.uint64)
        if not shared:
            a = a - np.uint64(M.SHARED_WINDOW)
        ctx.write(dst, "u32", ((a >> np.uint64(M.SHARED_RANK_SHIFT)) & np.uint64(0xFF)).astype(np.uint32))

    return run


@semantics("prefetch", "prefetchu")
def decode_prefetch(ins, info):
    """PTX ISA §9.7.9.15 prefetch/prefetchu (incl. prefetch.tensormap): a cache hint with no architectural
    effect.  tcsim still evaluates the address so a bad operand is reported."""
    op = parse_prefetch(ins)

    def run(ctx):
        ctx.address(op)
        ctx.emit_sync("prefetch", what=ins.full_opcode)

    return run
