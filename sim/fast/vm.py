"""The compiled block interpreter of the fast tier's lockstep supersteps (numba; :mod:`tcsim.fast.blocks` encodes
the program for it).

:func:`run` executes, for a gang of ``k`` uniform warps in which every lane is live, the encoded instructions from
``pc`` on, one instruction of the whole gang per cycle, straight through plain branches whose lanes agree and
``bar.sync`` of whole CTAs (when the caller allows it), until an instruction it does not run (``STOP``: the
superstep's own paths run it), a branch whose lanes diverge, an access it cannot prove to be the reference's
(misaligned, out of the shared window or of every global allocation, another CTA's rank, a lane mask that is not
the whole gang), a special register the call was not given, an f64 fma lane the compiled numerics leave to the
exact reference or whose result is a NaN (the reference's NaN priority), or ``max_cycles``.  Nothing of the
instruction it stops at has been written.  Registers are read and written in place: the fast tier keeps the
registers of one container dtype as the planes of one ``(registers, warps, 32)`` array (``B`` bool, ``H`` uint16,
``W`` uint32, ``D`` uint64), and an operand is a (class, index) pair: a plane of one of those, a constant
(``C``), a per-warp value (``S``: symbol addresses) or a per-lane value (``L``: special registers).  All
arithmetic is on the registers' raw bits in uint64, masked to the instruction's width, as
:mod:`tcsim.fast.codegen` (checked against the decoded semantics) computes it.

``out`` receives (cycles run, the PC it stopped at, lane-instructions executed, the last PC it executed).
The kernel is compiled once per machine (``cache=True``); it depends on nothing of the program.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from tcsim.numerics.jit_kernels import ffma_f32_rn, ffma_f64

# operation codes (column OP of the encoded program; tcsim.fast.blocks writes them)
STOP, ADD, SUB, MULLO, MADLO, NEG, MULWIDE, MADWIDE, AND, OR, XOR, NOT, SHL, SHRU, SHRS, SETP, SELP, MOV, CVT, \
    FMA32, FMA64, LDS, STS, BRA, LDP, LDG, STG, BAR = range(28)
# columns: op, dst (class, index), a, b, c, guard (class -1: none; index; negated), width, aux1..3
OP, DC, DI, AC, AI, BC, BI, CC, CI, GC, GI, GN, WD, X1, X2, X3 = range(16)
NCOL = 16
# operand classes (CL: a per-lane value of the gang, the special registers)
CB, CH, CW, CD, CK, CS, CL = range(7)
#: global allocations one call sees at most (the rest: an access to them stops the block)
NGLOBAL = 16
# flags bits: shared accesses, shared stores, shared as whole words, global accesses, bar.sync
F_SHARED, F_SHARED_ST, F_WORDS, F_GLOBAL, F_BAR = 1, 2, 4, 8, 16
# why run() stopped (out[4])
R_STOP, R_LIMIT, R_BAIL, R_DIVERGE = range(4)


@njit(cache=True)
def _load(cls, idx, B, H, W, D, C, S, L, rows, out):
    """Operand (class, index) of every lane of the gang into ``out`` (uint64 bits)."""
    k = rows.shape[0]
    if cls == 6:
        for i in range(k * 32):
            out[i] = L[idx, i]
    elif cls == 2:
        for w in range(k):
            r = rows[w]
            for l in range(32):
                out[w * 32 + l] = W[idx, r, l]
    elif cls == 3:
        for w in range(k):
            r = rows[w]
            for l in range(32):
                out[w * 32 + l] = D[idx, r, l]
    elif cls == 0:
        for w in range(k):
            r = rows[w]
            for l in range(32):
                out[w * 32 + l] = 1 if B[idx, r, l] else 0
    elif cls == 1:
        for w in range(k):
            r = rows[w]
            for l in range(32):
                out[w * 32 + l] = H[idx, r, l]
    elif cls == 4:
        v = C[idx]
        for i in range(k * 32):
            out[i] = v
    else:
        for w in range(k):
            v = S[idx, w]
            for l in range(32):
                out[w * 32 + l] = v


@njit(cache=True)
def _store(cls, idx, B, H, W, D, rows, val, gm, guarded):
    """``val`` (uint64 bits) into register (class, index) of the gang's lanes (those of ``gm`` when
    ``guarded``)."""
    k = rows.shape[0]
    if cls == 2:
        for w in range(k):
            r = rows[w]
            for l in range(32):
                if not guarded or gm[w * 32 + l]:
                    W[idx, r, l] = np.uint32(val[w * 32 + l] & np.uint64(0xFFFFFFFF))
    elif cls == 3:
        for w in range(k):
            r = rows[w]
            for l in range(32):
                if not guarded or gm[w * 32 + l]:
                    D[idx, r, l] = val[w * 32 + l]
    elif cls == 0:
        for w in range(k):
            r = rows[w]
            for l in range(32):
                if not guarded or gm[w * 32 + l]:
                    B[idx, r, l] = val[w * 32 + l] != 0
    else:
        for w in range(k):
            r = rows[w]
            for l in range(32):
                if not guarded or gm[w * 32 + l]:
                    H[idx, r, l] = np.uint16(val[w * 32 + l] & np.uint64(0xFFFF))


@njit(cache=True, inline="always")
def _mask(width):
    if width >= 64:
        return np.uint64(0xFFFFFFFFFFFFFFFF)
    return (np.uint64(1) << np.uint64(width)) - np.uint64(1)


@njit(cache=True, inline="always")
def _sx(v, width):
    """The signed value of the low ``width`` bits of ``v``."""
    sh = np.uint64(64 - width)
    return np.int64(v << sh) >> np.int64(64 - width)


@njit(cache=True)
def _alu(op, wd, x1, x2, a, b, c, r, n):
    """Integer / logic / compare / move operation ``op`` of width ``wd`` over lanes ``a``, ``b``, ``c`` into ``r``."""
    m = _mask(wd)
    if op == MOV:
        for i in range(n):
            r[i] = a[i]
    elif op == ADD:
        for i in range(n):
            r[i] = (a[i] + b[i]) & m
    elif op == SUB:
        for i in range(n):
            r[i] = (a[i] - b[i]) & m
    elif op == MULLO:
        for i in range(n):
            r[i] = (a[i] * b[i]) & m
    elif op == MADLO:
        for i in range(n):
            r[i] = (a[i] * b[i] + c[i]) & m
    elif op == NEG:
        for i in range(n):
            r[i] = (np.uint64(0) - a[i]) & m
    elif op == MULWIDE or op == MADWIDE:
        m2 = _mask(2 * wd)
        for i in range(n):
            if x1 != 0:
                p = np.uint64(_sx(a[i], wd) * _sx(b[i], wd))
            else:
                p = a[i] * b[i]
            if op == MADWIDE:
                p = p + c[i]
            r[i] = p & m2
    elif op == AND:
        for i in range(n):
            r[i] = a[i] & b[i]
    elif op == OR:
        for i in range(n):
            r[i] = a[i] | b[i]
    elif op == XOR:
        for i in range(n):
            r[i] = a[i] ^ b[i]
    elif op == NOT:
        for i in range(n):
            r[i] = ~a[i] & m
    elif op == SHL:
        for i in range(n):
            s = b[i]
            r[i] = np.uint64(0) if s >= np.uint64(wd) else (a[i] << s) & m
    elif op == SHRU:
        for i in range(n):
            s = b[i]
            r[i] = np.uint64(0) if s >= np.uint64(wd) else a[i] >> s
    elif op == SHRS:
        top = np.uint64(wd - 1)
        for i in range(n):
            s = b[i]
            if s > top:
                s = top
            r[i] = np.uint64(_sx(a[i], wd) >> np.int64(s)) & m
    elif op == SETP:
        for i in range(n):
            if x2 != 0:
                sa = _sx(a[i], wd)
                sb = _sx(b[i], wd)
                t = (sa == sb) if x1 == 0 else (sa != sb) if x1 == 1 else (sa < sb) if x1 == 2 else \
                    (sa <= sb) if x1 == 3 else (sa > sb) if x1 == 4 else (sa >= sb)
            else:
                ua = a[i]
                ub = b[i]
                t = (ua == ub) if x1 == 0 else (ua != ub) if x1 == 1 else (ua < ub) if x1 == 2 else \
                    (ua <= ub) if x1 == 3 else (ua > ub) if x1 == 4 else (ua >= ub)
            r[i] = np.uint64(1) if t else np.uint64(0)
    elif op == SELP:
        for i in range(n):
            r[i] = a[i] if c[i] != 0 else b[i]
    elif op == CVT:
        # x1: the source width, x2: a signed source (sign-extended when widening)
        ext = x2 != 0 and wd > x1
        for i in range(n):
            r[i] = (np.uint64(_sx(a[i], x1)) & m) if ext else (a[i] & m)
    else:
        for i in range(n):
            r[i] = a[i]


@njit(cache=True)
def _is_nan64(u):
    return (u & np.uint64(0x7FF0000000000000)) == np.uint64(0x7FF0000000000000) and \
        (u & np.uint64(0x000FFFFFFFFFFFFF)) != 0


@njit(cache=True)
def run(P, C, B, H, W, D, S, L, lok, rows, smem, cta_row, cta_rank, pc0, max_cycles, smem_lo, smem_hi, rank_shift,
        off_mask, flags, params, smem32, smem64, gbase, gsize, ng, garrs, bars, out):
    """See the module docstring.  ``rows``: the gang's register rows (k); ``L``: per-lane values (special
    registers; ``lok[i]``: row ``i`` is supplied); ``smem``: the stacked shared windows (CTA rows x bytes);
    ``cta_row`` / ``cta_rank``: per member, its CTA's row in ``smem`` and its rank; ``params``: the parameter
    image; ``smem32`` / ``smem64``: ``smem`` as 4- / 8-byte words (when its rows are whole 8-byte words);
    ``gbase`` / ``gsize`` / ``garrs``: the first ``ng`` global allocations (address order: base, size, bytes);
    ``bars[i]``: incremented at each ``bar.sync i`` run; ``flags``: the F_* bits (what the call may run)."""
    k = rows.shape[0]
    nl = k * 32
    va = np.empty(nl, np.uint64)
    vb = np.empty(nl, np.uint64)
    vc = np.empty(nl, np.uint64)
    vr = np.empty(nl, np.uint64)
    gm = np.empty(nl, np.bool_)
    a32 = np.empty(nl, np.uint32)
    b32 = np.empty(nl, np.uint32)
    c32 = np.empty(nl, np.uint32)
    r32 = np.empty(nl, np.uint32)
    hard = np.empty(nl, np.bool_)
    gix = np.empty(nl, np.int64)
    pc = pc0
    cycles = 0
    lanes = 0
    last = -1
    reason = R_LIMIT
    nbody = P.shape[0]
    while cycles < max_cycles:
        if pc >= nbody:
            reason = R_STOP
            break
        op = P[pc, OP]
        if op == STOP:
            reason = R_STOP
            break
        gc = P[pc, GC]
        wd = P[pc, WD]
        x1 = P[pc, X1]
        x2 = P[pc, X2]
        # the lanes that execute it
        n = nl
        guarded = gc >= 0
        if guarded:
            gi = P[pc, GI]
            gn = P[pc, GN] != 0
            n = 0
            for w in range(k):
                r = rows[w]
                for l in range(32):
                    t = B[gi, r, l] != gn
                    gm[w * 32 + l] = t
                    if t:
                        n += 1
        if (P[pc, AC] == CL and lok[P[pc, AI]] == 0) or (P[pc, BC] == CL and lok[P[pc, BI]] == 0) or \
                (P[pc, CC] == CL and lok[P[pc, CI]] == 0):
            reason = R_BAIL                     # (a special register this call was not given)
            break
        if op == BAR:
            # bar.sync of every live warp of the gang's CTAs, no phase open (flags): completes in this cycle
            if (flags & F_BAR) == 0 or n != nl:
                reason = R_BAIL
                break
            bars[x1] += 1
            lanes += n
            cycles += 1
            last = pc
            pc += 1
            continue
        if op == LDG or op == STG:
            if n != nl or (flags & F_GLOBAL) == 0:
                reason = R_BAIL
                break
            _load(P[pc, AC], P[pc, AI], B, H, W, D, C, S, L, rows, va)
            nb = np.uint64(x1)
            off = C[x2]
            bad = False
            # every lane's access aligned and wholly inside one allocation (else the semantics fault)
            for i in range(nl):
                a = va[i] + off
                if (a & (nb - np.uint64(1))) != 0:
                    bad = True
                    break
                j = -1
                for t in range(ng):
                    if a >= gbase[t] and a - gbase[t] < gsize[t] and gsize[t] - (a - gbase[t]) >= nb:
                        j = t
                        break
                if j < 0:
                    bad = True
                    break
                gix[i] = j
                va[i] = a - gbase[j]
            if bad:
                reason = R_BAIL
                break
            if op == LDG:
                for i in range(nl):
                    buf = garrs[gix[i]]
                    o = np.int64(va[i])
                    v = np.uint64(0)
                    for t in range(x1):
                        v |= np.uint64(buf[o + t]) << np.uint64(8 * t)
                    vr[i] = v
                _store(P[pc, DC], P[pc, DI], B, H, W, D, rows, vr, gm, False)
            else:
                _load(P[pc, BC], P[pc, BI], B, H, W, D, C, S, L, rows, vb)
                # warp after warp, each warp's lanes from the last to the first (the reference's order)
                for w in range(k):
                    for l in range(31, -1, -1):
                        i = w * 32 + l
                        buf = garrs[gix[i]]
                        o = np.int64(va[i])
                        v = vb[i]
                        for t in range(x1):
                            buf[o + t] = np.uint8((v >> np.uint64(8 * t)) & np.uint64(0xFF))
            lanes += n
            cycles += 1
            last = pc
            pc += 1
            continue
        if op == BRA:
            if n != 0 and n != nl:
                reason = R_DIVERGE
                break
            lanes += n
            cycles += 1
            last = pc
            pc = x1 if n == nl else pc + 1
            continue
        if op == LDS or op == STS:
            if n != nl or (flags & F_SHARED) == 0 or (op == STS and (flags & F_SHARED_ST) == 0):
                reason = R_BAIL
                break
            _load(P[pc, AC], P[pc, AI], B, H, W, D, C, S, L, rows, va)
            nb = np.uint64(x1)
            off = C[x2]
            bad = False
            for w in range(k):
                rk = np.uint64(cta_rank[w])
                for l in range(32):
                    a = va[w * 32 + l] + off
                    o = a & np.uint64(off_mask)
                    if (a & (nb - np.uint64(1))) != 0 or (a >> np.uint64(rank_shift)) != rk or \
                            o < np.uint64(smem_lo) or o + nb > np.uint64(smem_hi):
                        bad = True
                        break
                    va[w * 32 + l] = o
                if bad:
                    break
            if bad:
                reason = R_BAIL
                break
            words = (flags & F_WORDS) != 0
            if op == LDS and words and x1 == 4:
                for w in range(k):
                    cr = cta_row[w]
                    for l in range(32):
                        vr[w * 32 + l] = smem32[cr, np.int64(va[w * 32 + l]) >> 2]
                _store(P[pc, DC], P[pc, DI], B, H, W, D, rows, vr, gm, False)
            elif op == LDS and words and x1 == 8:
                for w in range(k):
                    cr = cta_row[w]
                    for l in range(32):
                        vr[w * 32 + l] = smem64[cr, np.int64(va[w * 32 + l]) >> 3]
                _store(P[pc, DC], P[pc, DI], B, H, W, D, rows, vr, gm, False)
            elif op == LDS:
                for w in range(k):
                    cr = cta_row[w]
                    for l in range(32):
                        o = np.int64(va[w * 32 + l])
                        v = np.uint64(0)
                        for t in range(x1):
                            v |= np.uint64(smem[cr, o + t]) << np.uint64(8 * t)
                        vr[w * 32 + l] = v
                _store(P[pc, DC], P[pc, DI], B, H, W, D, rows, vr, gm, False)
            else:
                _load(P[pc, BC], P[pc, BI], B, H, W, D, C, S, L, rows, vb)
                # warp after warp, each warp's lanes from the last to the first (the later write wins: the
                # reference's order)
                if words and x1 == 4:
                    for w in range(k):
                        cr = cta_row[w]
                        for l in range(31, -1, -1):
                            smem32[cr, np.int64(va[w * 32 + l]) >> 2] = \
                                np.uint32(vb[w * 32 + l] & np.uint64(0xFFFFFFFF))
                elif words and x1 == 8:
                    for w in range(k):
                        cr = cta_row[w]
                        for l in range(31, -1, -1):
                            smem64[cr, np.int64(va[w * 32 + l]) >> 3] = vb[w * 32 + l]
                for w in range(k if not words or (x1 != 4 and x1 != 8) else 0):
                    cr = cta_row[w]
                    for l in range(31, -1, -1):
                        o = np.int64(va[w * 32 + l])
                        v = vb[w * 32 + l]
                        for t in range(x1):
                            smem[cr, o + t] = np.uint8((v >> np.uint64(8 * t)) & np.uint64(0xFF))
            lanes += n
            cycles += 1
            last = pc
            pc += 1
            continue
        if op == LDP:
            if x2 + x1 > params.shape[0]:
                reason = R_BAIL
                break
            v = np.uint64(0)
            for t in range(x1):
                v |= np.uint64(params[x2 + t]) << np.uint64(8 * t)
            for i in range(nl):
                vr[i] = v
            _store(P[pc, DC], P[pc, DI], B, H, W, D, rows, vr, gm, guarded)
            lanes += n
            cycles += 1
            last = pc
            pc += 1
            continue
        if op == FMA32 and P[pc, AC] == CW and P[pc, BC] == CW and P[pc, CC] == CW and P[pc, DC] == CW:
            # (the common case: 32-bit registers in and out, read and written without the uint64 lanes)
            ia, ib, ic, idst = P[pc, AI], P[pc, BI], P[pc, CI], P[pc, DI]
            for w in range(k):
                r = rows[w]
                for l in range(32):
                    a32[w * 32 + l] = W[ia, r, l]
                    b32[w * 32 + l] = W[ib, r, l]
                    c32[w * 32 + l] = W[ic, r, l]
            ffma_f32_rn(a32, b32, c32, r32, x1 != 0, x2)
            for w in range(k):
                r = rows[w]
                for l in range(32):
                    if not guarded or gm[w * 32 + l]:
                        W[idst, r, l] = r32[w * 32 + l]
            lanes += n
            cycles += 1
            last = pc
            pc += 1
            continue
        _load(P[pc, AC], P[pc, AI], B, H, W, D, C, S, L, rows, va)
        if P[pc, BC] >= 0:
            _load(P[pc, BC], P[pc, BI], B, H, W, D, C, S, L, rows, vb)
        if P[pc, CC] >= 0:
            _load(P[pc, CC], P[pc, CI], B, H, W, D, C, S, L, rows, vc)
        if op == FMA32:
            for i in range(nl):
                a32[i] = np.uint32(va[i])
                b32[i] = np.uint32(vb[i])
                c32[i] = np.uint32(vc[i])
            ffma_f32_rn(a32, b32, c32, r32, x1 != 0, x2)
            for i in range(nl):
                vr[i] = r32[i]
        elif op == FMA64:
            ffma_f64(va.view(np.float64), vb.view(np.float64), vc.view(np.float64), va, vb, vc, vr, hard, x1)
            bad = False
            for i in range(nl):
                if guarded and not gm[i]:
                    continue
                # (a NaN result takes the SASS operand order's priority: the reference decides it)
                if hard[i] or _is_nan64(vr[i]):
                    bad = True
                    break
            if bad:
                reason = R_BAIL
                break
        else:
            _alu(op, wd, x1, x2, va, vb, vc, vr, nl)
        _store(P[pc, DC], P[pc, DI], B, H, W, D, rows, vr, gm, guarded)
        lanes += n
        cycles += 1
        last = pc
        pc += 1
    out[0] = cycles
    out[1] = pc
    out[2] = lanes
    out[3] = last
    out[4] = reason
