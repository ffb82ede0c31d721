"""numba-compiled body of :meth:`tcsim.race.shadow.ShadowSpace.access`: one pass over the units per question
instead of a dozen numpy temporaries per access, and whole blocks of :data:`BLOCK` units at a time where a block
holds one value.

A page's per-unit arrays (``wi``, ``ri``: table entry + 1 of the last write and of each read slot) are completed by
per-block summaries (``sw``, ``sr``): a summary ``>= 0`` says every unit of the block holds that value (the per-unit
entries are then stale), ``-1`` that the per-unit entries hold the truth.  A write of a whole block (a TMA tile, an
MMA's accumulator) makes it uniform again, so a pipeline that moves tiles touches one summary per 64 units; a partial
access expands a uniform block first.  Pages created before the kernel was loaded (all blocks ``-1``) are handled
the same way.

Imported only through :func:`tcsim.race.shadow.kernel` (None where numba is absent or ``TCSIM_NUMBA=0``).  It
computes what :func:`tcsim.race.shadow.access_numpy` (the specification, and the path taken before the kernel is
loaded) computes; tests/race/test_shadow.py asserts that both leave the same shadow and return the same conflicts
on random access sequences.
"""
from __future__ import annotations

import numpy as np
from numba import njit

BLOCK_BITS = 6
BLOCK = 1 << BLOCK_BITS


@njit(cache=True)
def _emit(out, k, blk, kind, g, kn, n, lo, hi):
    if k == out.shape[0]:
        nout = np.empty((2 * k, 7), dtype=np.int64)
        nout[:k] = out
        out = nout
    out[k, 0] = blk
    out[k, 1] = kind
    out[k, 2] = g
    out[k, 3] = kn
    out[k, 4] = n
    out[k, 5] = lo
    out[k, 6] = hi
    return out, k + 1


@njit(cache=True)
def _expand(arr, summ, b):
    v = summ[b]
    if v >= 0:
        base = b << BLOCK_BITS
        for j in range(BLOCK):
            arr[base + j] = v
        summ[b] = -1


@njit(cache=True)
def _free(r, info1, tcomp, tval, row, comp):
    return r == 0 or r == info1 or tcomp[r] == comp or row[tcomp[r]] >= tval[r]


@njit(cache=True)
def access_units(wi, ri, sw, sr, off, units, tcomp, tval, row, info1, comp, write, conflicts, only_unknown, s0,
                 group_bits):
    """Check and record the access of ``units`` (their offsets ``off`` into the page) by access-table entry
    ``info1`` (id + 1) of component ``comp`` whose VC row is ``row`` (module docstring).

    Returns the conflicts as rows ``(block, kind, entry, known, n, lo, hi)``: ``block`` the unit's
    ``units >> group_bits``, ``kind`` 0 for the last write, ``1 + s`` for the read in slot ``s``; possibly several
    rows per (block, kind, entry) (the caller merges them)."""
    n = off.size
    out = np.empty((16, 7), dtype=np.int64)
    k = 0
    # segments: [seg[j], seg[j + 1]) consecutive units of one block; full[j]: they are all of its BLOCK units, once
    # each.  The units need not be sorted (a block met in several segments is expanded, never summarised, by all but
    # a full one), and the order changes nothing: conflicts are counted against the state before the access (the
    # caller merges and sorts them), a write stores the same entry everywhere, and a read's slot choice per unit
    # depends only on that unit's entries
    seg = np.empty(n + 1, dtype=np.int64)
    nseg = 0
    for i in range(n):
        if i == 0 or (off[i] >> BLOCK_BITS) != (off[i - 1] >> BLOCK_BITS):
            seg[nseg] = i
            nseg += 1
    seg[nseg] = n
    full = np.zeros(nseg, dtype=np.bool_)
    for j in range(nseg):
        a = seg[j]
        e = seg[j + 1]
        if e - a == BLOCK and (off[a] & (BLOCK - 1)) == 0 and off[e - 1] - off[a] == BLOCK - 1:
            ok = True
            for i in range(a + 1, e):
                if off[i] == off[i - 1]:
                    ok = False
                    break
            full[j] = ok
    if conflicts:
        for kind in range(5 if write else 1):
            arr = wi if kind == 0 else ri[kind - 1]
            summ = sw if kind == 0 else sr[kind - 1]
            cur_g = -1
            cur_blk = -1
            cur_n = 0
            cur_lo = 0
            cur_hi = 0
            cur_kn = 0
            cur_skip = False
            for j in range(nseg):
                a = seg[j]
                e = seg[j + 1]
                b = off[a] >> BLOCK_BITS
                uni = summ[b]
                for i in range(a, e):
                    g = uni if uni >= 0 else arr[off[i]]
                    if g == 0:
                        if uni >= 0:
                            break
                        continue
                    u = units[i]
                    blk = u >> group_bits
                    if not (g == cur_g and blk == cur_blk):
                        pc = tcomp[g]
                        kn = 1 if row[pc] >= tval[g] else 0
                        if cur_n:
                            out, k = _emit(out, k, cur_blk, kind, cur_g, cur_kn, cur_n, cur_lo, cur_hi)
                        cur_g = g
                        cur_blk = blk
                        cur_n = 0
                        cur_kn = kn
                        cur_skip = pc == comp or (only_unknown and kn == 1)
                        cur_lo = u
                        cur_hi = u
                    if cur_skip:
                        if uni >= 0:
                            break           # the rest of the block holds the same entry
                        continue
                    if uni >= 0:            # the whole segment at once
                        cur_n += e - i
                        for ii in range(i, e):
                            uu = units[ii]
                            if uu < cur_lo:
                                cur_lo = uu
                            if uu > cur_hi:
                                cur_hi = uu
                        break
                    cur_n += 1
                    if u < cur_lo:
                        cur_lo = u
                    if u > cur_hi:
                        cur_hi = u
            if cur_n:
                out, k = _emit(out, k, cur_blk, kind, cur_g, cur_kn, cur_n, cur_lo, cur_hi)
    nslots = ri.shape[0]
    if write:
        for j in range(nseg):
            a = seg[j]
            e = seg[j + 1]
            b = off[a] >> BLOCK_BITS
            if full[j]:
                sw[b] = info1
                for s in range(nslots):
                    sr[s, b] = 0
                continue
            _expand(wi, sw, b)
            # a read slot whose block is uniformly empty stays so (the written units are emptied): its per-unit
            # entries are not touched -- no page of a fresh shadow is faulted in for them
            for s in range(nslots):
                if sr[s, b] != 0:
                    _expand(ri[s], sr[s], b)
            for i in range(a, e):
                o = off[i]
                wi[o] = info1
                for s in range(nslots):
                    if sr[s, b] != 0:
                        ri[s, o] = 0
        return out[:k]
    ra = ri[s0]
    rb = ri[s0 + 1]
    sa = sr[s0]
    sb = sr[s0 + 1]
    for j in range(nseg):
        a = seg[j]
        e = seg[j + 1]
        b = off[a] >> BLOCK_BITS
        if full[j] and sa[b] >= 0 and sb[b] >= 0:
            r0 = sa[b]
            r1 = sb[b]
            if _free(r0, info1, tcomp, tval, row, comp):
                sa[b] = info1
                if r1 != 0 and _free(r1, info1, tcomp, tval, row, comp):
                    sb[b] = 0
            else:
                sb[b] = info1
            continue
        _expand(ra, sa, b)
        # the second slot is expanded only when a unit's entry in it changes (a uniform block's summary holds the
        # truth until then): a fresh shadow's pages are not faulted in for it
        ub = sb[b]
        for i in range(a, e):
            o = off[i]
            r0 = ra[o]
            r1 = ub if ub >= 0 else rb[o]
            if _free(r0, info1, tcomp, tval, row, comp):
                ra[o] = info1
                if r1 != 0 and _free(r1, info1, tcomp, tval, row, comp):
                    if ub >= 0:
                        _expand(rb, sb, b)
                        ub = -1
                    rb[o] = 0
            else:
                if ub >= 0:
                    _expand(rb, sb, b)
                    ub = -1
                rb[o] = info1
    return out[:k]


@njit(cache=True)
def materialize(wi, ri, sw, sr):
    """Write every uniform block's summary into its units and mark it mixed (the per-unit arrays are then the
    whole truth: the tests compare them with the numpy path's)."""
    for b in range(sw.size):
        _expand(wi, sw, b)
        for s in range(ri.shape[0]):
            _expand(ri[s], sr[s], b)
