"""Shadow state of the happens-before detector: for every unit of memory an access touched, the last write and
the reads since, each as an epoch ``(clock component, value)`` plus an id into the detector's access table.

A unit is a byte of SMEM / DSMEM (keyed by the cluster and the 32-bit ``shared::cluster`` address, so a CTA's own
and its peers' accesses land on the same bytes) or of global memory, or a 32-bit TMEM cell.  Only what is touched
is shadowed: a space is a dict of 4096-unit pages of numpy arrays, created on first touch.

Reads keep two slots per proxy (generic / async): a new read replaces a slot whose read happens-before it (the
older read is then ordered before anything the new one is ordered before) or the slot of the same component;
two concurrent reads by other components keep both; a third concurrent reader replaces the second (the only
loss of information, which can hide a race, never invent one).  Tensor-map-proxy reads share the async slots.

All checks are vectorised over the units of one access: :meth:`ShadowSpace.access` returns, for each earlier
access that the new one conflicts with (write/any or read/write on a unit, other component), whether its epoch is
in the accessor's clock, with the number of units and their range.
"""
from __future__ import annotations

import numpy as np

PAGE_BITS = 14
PAGE = 1 << PAGE_BITS
NSLOTS = 4            # read slots: generic 0-1, async 2-3

GENERIC, ASYNC, TMAP = 0, 1, 2
F_PROXY = 3           # flags & F_PROXY: the proxy
F_ATOMIC = 4          # a strong (atomic / relaxed / acquire / release / volatile) access: does not race with another
F_TCGEN05 = 8         # a tcgen05 access of TMEM


class Page:
    __slots__ = ("wc", "wv", "wi", "wf", "rc", "rv", "ri")

    def __init__(self):
        self.wc = np.full(PAGE, -1, dtype=np.int32)
        self.wv = np.zeros(PAGE, dtype=np.int64)
        self.wi = np.zeros(PAGE, dtype=np.int64)
        self.wf = np.zeros(PAGE, dtype=np.int8)
        self.rc = np.full((NSLOTS, PAGE), -1, dtype=np.int32)
        self.rv = np.zeros((NSLOTS, PAGE), dtype=np.int64)
        self.ri = np.zeros((NSLOTS, PAGE), dtype=np.int64)


class Conflict:
    """An earlier access the new one meets: ``kind`` 'w' (its write) or 'r' (its read), its access-table id
    ``info``, epoch ``(comp, val)``, ``flags``, ``known`` (its epoch is in the accessor's VC), ``n`` units in
    ``[lo, hi]``."""

    __slots__ = ("kind", "info", "comp", "val", "flags", "known", "n", "lo", "hi")

    def __init__(self, kind, info, comp, val, flags, known, n, lo, hi):
        self.kind, self.info, self.comp, self.val, self.flags = kind, info, comp, val, flags
        self.known, self.n, self.lo, self.hi = known, n, lo, hi


def _known(row: np.ndarray, comps: np.ndarray, vals: np.ndarray) -> np.ndarray:
    return row[np.maximum(comps, 0)] >= vals


def _group(kind, units, comps, vals, infos, flags, known, out):
    """Append one :class:`Conflict` per distinct earlier access (access-table id) among the selected units."""
    if infos.size == 1 or (infos == infos[0]).all():
        out.append(Conflict(kind, int(infos[0]), int(comps[0]), int(vals[0]), int(flags[0]), bool(known[0]),
                            int(units.size), int(units.min()), int(units.max())))
        return
    u, first, counts = np.unique(infos, return_index=True, return_counts=True)
    for k, i in enumerate(first):
        sel = infos == u[k]
        out.append(Conflict(kind, int(infos[i]), int(comps[i]), int(vals[i]), int(flags[i]), bool(known[i]),
                            int(counts[k]), int(units[sel].min()), int(units[sel].max())))


class ShadowSpace:
    """One shadowed memory (module docstring)."""

    def __init__(self, name: str):
        self.name = name
        self.pages: dict = {}

    def _page(self, p: int) -> Page:
        page = self.pages.get(p)
        if page is None:
            page = self.pages[p] = Page()
        return page

    def _pieces(self, units: np.ndarray):
        """(page, offsets within it, units) per page the units touch."""
        pg = units >> PAGE_BITS
        lo = int(pg.min())
        hi = int(pg.max())
        if lo == hi:
            return [(self._page(lo), units & (PAGE - 1), units)]
        out = []
        for p in (range(lo, hi + 1) if hi - lo < 16 else np.unique(pg).tolist()):
            sel = pg == p
            if sel.any():
                uu = units[sel]
                out.append((self._page(int(p)), uu & (PAGE - 1), uu))
        return out

    def access(self, units: np.ndarray, row: np.ndarray, comp: int, val: int, info: int, flags: int,
               write: bool, conflicts: bool = True) -> list:
        """Check the access of ``units`` by epoch ``(comp, val)`` (accessor's VC row ``row``) against the shadow,
        then record it.  Returns the :class:`Conflict` s (earlier accesses by other components: for a read the
        last write; for a write the last write and the reads since)."""
        out: list = []
        if units.size == 0:
            return out
        proxy = flags & F_PROXY
        for page, off, uu in self._pieces(units):
            wc = page.wc[off]
            if conflicts:
                sel = (wc >= 0) & (wc != comp)
                if sel.any():
                    c = wc[sel]
                    v = page.wv[off][sel]
                    _group("w", uu[sel], c, v, page.wi[off][sel], page.wf[off][sel], _known(row, c, v), out)
            if write:
                if conflicts:
                    rc = page.rc[:, off]
                    sel = (rc >= 0) & (rc != comp)
                    if sel.any():
                        rv = page.rv[:, off]
                        for s in range(NSLOTS):
                            m = sel[s]
                            if m.any():
                                c = rc[s][m]
                                v = rv[s][m]
                                f = np.full(c.size, GENERIC if s < 2 else ASYNC, dtype=np.int8)
                                _group("r", uu[m], c, v, page.ri[s, off][m], f, _known(row, c, v), out)
                page.wc[off] = comp
                page.wv[off] = val
                page.wi[off] = info
                page.wf[off] = flags
                page.rc[:, off] = -1
            else:
                s0 = 0 if proxy == GENERIC else 2
                c0 = page.rc[s0, off]
                free0 = (c0 < 0) | (c0 == comp) | _known(row, c0, page.rv[s0, off])
                c1 = page.rc[s0 + 1, off]
                free1 = (c1 < 0) | (c1 == comp) | _known(row, c1, page.rv[s0 + 1, off])
                # slot 0 if free; else slot 1 (free or, with two concurrent readers already, evicted)
                if free0.all():
                    o0, o1 = off, None
                elif not free0.any():
                    o0, o1 = None, off
                else:
                    o0, o1 = off[free0], off[~free0]
                for s, o in ((s0, o0), (s0 + 1, o1)):
                    if o is not None:
                        page.rc[s, o] = comp
                        page.rv[s, o] = val
                        page.ri[s, o] = info
                # a read into slot 0 that also subsumes slot 1's read frees slot 1
                clear1 = free0 & free1 & (c1 >= 0)
                if clear1.any():
                    page.rc[s0 + 1, off[clear1]] = -1
        return out

    def scan(self, lo: int, hi: int):
        """(units, write comps, write vals, write infos, read comps (NSLOTS, n), read vals, read infos) of every
        shadowed unit in ``[lo, hi)`` that holds something."""
        res = []
        for p in range(lo >> PAGE_BITS, ((hi - 1) >> PAGE_BITS) + 1):
            page = self.pages.get(p)
            if page is None:
                continue
            base = p << PAGE_BITS
            a = max(lo - base, 0)
            b = min(hi - base, PAGE)
            if a >= b:
                continue
            idx = np.arange(a, b)
            used = (page.wc[idx] >= 0) | (page.rc[:, idx] >= 0).any(axis=0)
            if used.any():
                i = idx[used]
                res.append((base + i, page.wc[i], page.wv[i], page.wi[i], page.rc[:, i], page.rv[:, i],
                            page.ri[:, i]))
        return res


__all__ = ["ShadowSpace", "Conflict", "GENERIC", "ASYNC", "TMAP", "F_PROXY", "F_ATOMIC", "F_TCGEN05", "PAGE"]
