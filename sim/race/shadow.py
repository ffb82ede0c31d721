"""Shadow state of the happens-before detector: for every unit of memory an access touched, the last write and
the reads since, each as an entry of the detector's access table (:class:`AccessTable`: the access's epoch
``(clock component, value)`` and flags; the :class:`tcsim.race.hb.AccessRec` that names it has the same id).

A unit is a byte of SMEM / DSMEM (keyed by the cluster and the 32-bit ``shared::cluster`` address, so a CTA's own
and its peers' accesses land on the same bytes) or of global memory, or a 32-bit TMEM cell.  Only what is touched
is shadowed: a space is a dict of pages of numpy arrays (entry id + 1 per unit, 0 for none), created on first touch
(a CTA's TMEM is one page of its 128 lanes x 512 columns).

Reads keep two slots per proxy (generic / async): a new read replaces a slot whose read happens-before it (the
older read is then ordered before anything the new one is ordered before) or the slot of the same component;
two concurrent reads by other components keep both; a third concurrent reader replaces the second (the only
loss of information, which can hide a race, never invent one).  Tensor-map-proxy reads share the async slots.

:meth:`ShadowSpace.access` returns, for each earlier access that the new one conflicts with (write/any or
read/write on a unit, other component), whether its epoch is in the accessor's clock, with the number of units and
their range -- one :class:`Conflict` per earlier access and block of :data:`PAGE` units, blocks in address order,
the last write before the reads of slots 0-3, entries in table order.  :func:`access_numpy` is the vectorised
specification (and the path until the first large access, or without numba); from then on every access runs
its numba port
(:func:`tcsim.race.shadow_jit.access_units`, where numba is installed: one pass instead of a dozen temporaries, and
whole 64-unit blocks at a time where a block holds one value).
"""
from __future__ import annotations

import functools
import importlib.util
import mmap
import os

import numpy as np

PAGE_BITS = 14
PAGE = 1 << PAGE_BITS
NSLOTS = 4            # read slots: generic 0-1, async 2-3
#: the compiled kernel is loaded (numba imported, ~0.5-1 s) at the first access of at least JIT_MIN_UNITS units or
#: after JIT_AFTER accesses -- a small kernel's run never pays for it; from then on every access takes it (and
#: every access of a later run in the same process, from its first)
JIT_MIN_UNITS = 512
JIT_AFTER = 2000
BLOCK_BITS = 6        # tcsim.race.shadow_jit.BLOCK_BITS: units per block summary

GENERIC, ASYNC, TMAP = 0, 1, 2
F_PROXY = 3           # flags & F_PROXY: the proxy
F_ATOMIC = 4          # a strong (atomic / relaxed / acquire / release / volatile) access: does not race with another
F_TCGEN05 = 8         # a tcgen05 access of TMEM


@functools.lru_cache(maxsize=None)
def kernel():
    """The compiled kernel module (:mod:`tcsim.race.shadow_jit`), or None when numba is absent or
    ``TCSIM_NUMBA=0`` (the switch of :mod:`tcsim.numerics.jit`)."""
    if os.environ.get("TCSIM_NUMBA", "1").strip() in ("0", "false", "no", "off"):
        return None
    if importlib.util.find_spec("numba") is None:
        return None
    from . import shadow_jit
    return shadow_jit


def warm_up() -> bool:
    """Compile (or load from numba's on-disk cache) the kernel for the argument types the detector passes, once --
    the root conftest does it before pytest-xdist starts its workers, as for :mod:`tcsim.numerics.jit_warmup`.
    False when the kernel is off."""
    k = kernel()
    if k is None:
        return False
    tab = AccessTable()
    tab.kernel_asked = True
    tab.kernel = k
    sp = ShadowSpace("warm-up", tab, page_bits=16)
    row = np.zeros(8, dtype=np.int64)
    units = np.arange(200, dtype=np.int64)
    sp.access(units, row, 0, 1, 0, GENERIC, True)
    sp.access(units, row, 1, 1, 1, ASYNC, False)
    sp.scan(0, 256)
    return True


class AccessTable:
    """Epoch and flags of every access the detector recorded, by id + 1 (row 0: no access, component -1)."""

    def __init__(self, cap: int = 1024):
        self.comp = np.full(cap, -1, dtype=np.int64)
        self.val = np.zeros(cap, dtype=np.int64)
        self.flags = np.zeros(cap, dtype=np.int8)
        self.accesses = 0
        self.kernel = None              # tcsim.race.shadow_jit once loaded (JIT_MIN_UNITS)
        self.kernel_asked = False

    def jit(self, n: int):
        """The compiled kernel for an access of ``n`` units, or None (numpy): module constants above; a run in a
        process that loaded the kernel already (an earlier run) takes it from its first access."""
        self.accesses += 1
        if not self.kernel_asked:
            if n < JIT_MIN_UNITS and self.accesses < JIT_AFTER and not kernel.cache_info().currsize:
                return None
            self.kernel_asked = True
            self.kernel = kernel()
        return self.kernel

    def set(self, info: int, comp: int, val: int, flags: int) -> None:
        i = info + 1
        if i >= self.comp.size:
            n = max(2 * self.comp.size, i + 1)
            for name, fill in (("comp", -1), ("val", 0), ("flags", 0)):
                old = getattr(self, name)
                new = np.full(n, fill, dtype=old.dtype)
                new[:old.size] = old
                setattr(self, name, new)
        self.comp[i] = comp
        self.val[i] = val
        self.flags[i] = flags


#: arrays of at least this many bytes are mapped lazily in small OS pages (:func:`lazy_zeros`)
LAZY_BYTES = 1 << 20


def lazy_zeros(shape, dtype) -> np.ndarray:
    """A zero-filled array whose memory the OS provides on first touch, 4 KiB at a time: an anonymous mapping
    advised against transparent huge pages where the platform has them (with THP on, a first write to a fresh
    ``np.zeros`` page of a megabyte-sized array has the kernel clear a whole 2 MiB page -- a millisecond per page
    for an access of a few bytes, measured as most of the detector's cost on a small cluster kernel)."""
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if n < LAZY_BYTES:
        return np.zeros(shape, dtype=dtype)
    m = mmap.mmap(-1, n)
    if hasattr(m, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
        try:
            m.madvise(mmap.MADV_NOHUGEPAGE)
        except OSError:         # a kernel without THP: nothing to advise against
            pass
    return np.frombuffer(m, dtype=dtype).reshape(shape)


class Page:
    """A page's per-unit entries (table id + 1, 0 for none) and the per-block summaries of the compiled kernel
    (:mod:`tcsim.race.shadow_jit`: ``-1``, the per-unit entries hold the truth -- always so for pages made before the
    kernel was loaded, which the numpy path may touch)."""

    __slots__ = ("wi", "ri", "sw", "sr", "lo", "hi")

    def __init__(self, size: int, summarised: bool):
        self.lo, self.hi = size, 0                            # the offsets ever touched lie in [lo, hi)
        self.wi = lazy_zeros(size, np.int32)                  # last write
        self.ri = lazy_zeros((NSLOTS, size), np.int32)        # reads since, per slot
        nb = max(size >> BLOCK_BITS, 1)
        if summarised:          # zeros the allocator need not write (calloc): a page costs what it touches
            self.sw = np.zeros(nb, dtype=np.int32)
            self.sr = np.zeros((NSLOTS, nb), dtype=np.int32)
        else:
            self.sw = np.full(nb, -1, dtype=np.int32)
            self.sr = np.full((NSLOTS, nb), -1, dtype=np.int32)


class Conflict:
    """An earlier access the new one meets: ``kind`` 'w' (its write) or 'r' (its read), its access-table id
    ``info``, epoch ``(comp, val)``, ``flags``, ``known`` (its epoch is in the accessor's VC), ``n`` units in
    ``[lo, hi]``."""

    __slots__ = ("kind", "info", "comp", "val", "flags", "known", "n", "lo", "hi")

    def __init__(self, kind, info, comp, val, flags, known, n, lo, hi):
        self.kind, self.info, self.comp, self.val, self.flags = kind, info, comp, val, flags
        self.known, self.n, self.lo, self.hi = known, n, lo, hi


def _conflict(tab: AccessTable, kind: int, entry: int, known, n, lo, hi) -> Conflict:
    """``kind`` 0: the last write; 1 + s: the read in slot s (its proxy: the slot's)."""
    flags = int(tab.flags[entry]) if kind == 0 else (GENERIC if kind <= 2 else ASYNC)
    return Conflict("w" if kind == 0 else "r", entry - 1, int(tab.comp[entry]), int(tab.val[entry]), flags,
                    bool(known), int(n), int(lo), int(hi))


def _merged(tab, rows) -> list:
    """The kernel's conflict rows (block, kind, entry, known, n, lo, hi), several per (block, kind, entry) possibly,
    as one :class:`Conflict` each, in the reference's order (block, kind, entry)."""
    if rows.shape[0] == 1:
        r = rows[0]
        return [_conflict(tab, int(r[1]), int(r[2]), r[3], r[4], r[5], r[6])]
    acc: dict = {}
    for blk, kind, g, kn, n, lo, hi in rows.tolist():
        a = acc.get((blk, kind, g))
        if a is None:
            acc[(blk, kind, g)] = [kn, n, lo, hi]
        else:
            a[1] += n
            a[2] = min(a[2], lo)
            a[3] = max(a[3], hi)
    return [_conflict(tab, kind, g, *v) for (blk, kind, g), v in sorted(acc.items())]


def _group(tab, kind, units, entries, known, out) -> None:
    """Append one :class:`Conflict` per distinct earlier access (entry) among the selected units, in entry order."""
    if entries.size == 1 or (entries == entries[0]).all():
        out.append(_conflict(tab, kind, int(entries[0]), known[0], units.size, units.min(), units.max()))
        return
    u, first, counts = np.unique(entries, return_index=True, return_counts=True)
    for k, i in enumerate(first):
        sel = entries == u[k]
        out.append(_conflict(tab, kind, int(u[k]), known[i], counts[k], units[sel].min(), units[sel].max()))


def _known(tab, row, entries):
    comps = tab.comp[entries]
    return comps, row[np.maximum(comps, 0)] >= tab.val[entries]


def access_numpy(page: Page, off, units, tab: AccessTable, row, info1: int, comp: int, write: bool,
                 conflicts: bool, only_unknown: bool, s0: int, out: list) -> None:
    """The access of ``units`` (offsets ``off`` into ``page``, all in one block of :data:`PAGE` units) by table entry
    ``info1`` (id + 1) of component ``comp`` (VC row ``row``): append its conflicts to ``out``, then record it
    (module docstring; ``s0``: the first read slot of the access's proxy; ``only_unknown``: conflicts whose epoch
    the accessor knows are left out)."""
    g = page.wi[off]
    if conflicts:
        pc, kn = _known(tab, row, g)
        sel = (pc >= 0) & (pc != comp)
        if only_unknown:
            sel &= ~kn
        if sel.any():
            _group(tab, 0, units[sel], g[sel], kn[sel], out)
    if write:
        if conflicts:
            for s in range(NSLOTS):
                r = page.ri[s, off]
                pc, kn = _known(tab, row, r)
                m = (pc >= 0) & (pc != comp)
                if only_unknown:
                    m &= ~kn
                if m.any():
                    _group(tab, 1 + s, units[m], r[m], kn[m], out)
        page.wi[off] = info1
        page.ri[:, off] = 0
        return
    r0 = page.ri[s0, off]
    c0, k0 = _known(tab, row, r0)
    free0 = (r0 == 0) | (c0 == comp) | k0
    r1 = page.ri[s0 + 1, off]
    c1, k1 = _known(tab, row, r1)
    free1 = (r1 == 0) | (c1 == comp) | k1
    # slot 0 if free; else slot 1 (free or, with two concurrent readers already, evicted)
    if free0.all():
        page.ri[s0, off] = info1
    elif not free0.any():
        page.ri[s0 + 1, off] = info1
    else:
        page.ri[s0, off[free0]] = info1
        page.ri[s0 + 1, off[~free0]] = info1
    # a read into slot 0 that also subsumes slot 1's read frees slot 1
    clear1 = free0 & free1 & (r1 != 0)
    if clear1.any():
        page.ri[s0 + 1, off[clear1]] = 0


class ShadowSpace:
    """One shadowed memory (module docstring).  ``page_bits``: units per page (the detector's: 20, a CTA's whole
    SMEM or TMEM and a tile's rows in one page, one kernel call per access; the arrays are zero-filled on demand by
    the OS, so only what is touched costs memory); conflicts are still reported per block of :data:`PAGE` units."""

    def __init__(self, name: str, table: AccessTable | None = None, page_bits: int = PAGE_BITS):
        self.name = name
        self.table = AccessTable() if table is None else table
        self.page_bits = page_bits
        self.pages: dict = {}

    def _page(self, p: int) -> Page:
        page = self.pages.get(p)
        if page is None:
            page = self.pages[p] = Page(1 << self.page_bits, self.table.kernel is not None)
        return page

    def _pieces(self, units: np.ndarray, bits: int):
        """(page number, offsets within it, units) per block of ``1 << bits`` units the units touch, in order (and
        the pages' touched ranges widened to them)."""
        pb = self.page_bits
        mask = (1 << pb) - 1
        umin = int(units.min())
        umax = int(units.max())
        lo = umin >> bits
        hi = umax >> bits
        if umin >> pb == umax >> pb:
            page = self._page(umin >> pb)
            page.lo = min(page.lo, umin & mask)
            page.hi = max(page.hi, (umax & mask) + 1)
            if lo == hi:
                return [(umin >> pb, units & mask, units)]
        else:
            for p in range(umin >> pb, (umax >> pb) + 1) if (umax >> pb) - (umin >> pb) < 16 else \
                    np.unique(units >> pb).tolist():
                page = self._page(int(p))
                page.lo, page.hi = 0, mask + 1
        pg = units >> bits
        out = []
        for p in (range(lo, hi + 1) if hi - lo < 16 else np.unique(pg).tolist()):
            sel = pg == p
            if sel.any():
                uu = units[sel]
                out.append((int(p) >> (self.page_bits - bits), uu & mask, uu))
        return out

    def access(self, units: np.ndarray, row: np.ndarray, comp: int, val: int, info: int, flags: int,
               write: bool, conflicts: bool = True, only_unknown: bool = False) -> list:
        """Check the access of ``units`` by epoch ``(comp, val)`` (accessor's VC row ``row``; access-table id
        ``info``) against the shadow, then record it.  Returns the :class:`Conflict` s (earlier accesses by other
        components: for a read the last write; for a write the last write and the reads since; with
        ``only_unknown`` only those whose epoch ``row`` does not hold)."""
        tab = self.table
        tab.set(info, comp, val, flags)
        out: list = []
        if units.size == 0:
            return out
        s0 = 0 if (flags & F_PROXY) == GENERIC else 2
        info1 = info + 1
        k = tab.jit(units.size)
        if k is not None:
            for p, off, uu in self._pieces(units, self.page_bits):
                pg = self._page(p)
                rows = k.access_units(pg.wi, pg.ri, pg.sw, pg.sr, off, uu, tab.comp, tab.val, row, info1, comp,
                                      write, conflicts, only_unknown, s0, PAGE_BITS)
                if rows.shape[0]:
                    out.extend(_merged(tab, rows))
            return out
        for p, off, uu in self._pieces(units, PAGE_BITS):
            access_numpy(self._page(p), off, uu, tab, row, info1, comp, write, conflicts, only_unknown, s0, out)
        return out

    def scan(self, lo: int, hi: int):
        """(units, entries) of every shadowed unit in ``[lo, hi)`` that holds something: ``entries`` (1 + NSLOTS,
        n) the last write's and the read slots' table entries (id + 1, 0 for none)."""
        res = []
        pb = self.page_bits
        size = 1 << pb
        for p in range(lo >> pb, ((hi - 1) >> pb) + 1):
            page = self.pages.get(p)
            if page is None:
                continue
            base = p << pb
            a = max(lo - base, 0, page.lo)
            b = min(hi - base, size, page.hi)
            if a >= b:
                continue
            blk = np.arange(a, b) >> BLOCK_BITS            # a uniform block's summary, else the unit's entry
            ent = np.concatenate([np.where(page.sw[blk] >= 0, page.sw[blk], page.wi[a:b])[None],
                                  np.where(page.sr[:, blk] >= 0, page.sr[:, blk], page.ri[:, a:b])])
            used = (ent != 0).any(axis=0)
            if used.any():
                res.append((base + a + np.flatnonzero(used), ent[:, used]))
        return res


__all__ = ["ShadowSpace", "AccessTable", "Conflict", "access_numpy", "kernel", "warm_up", "GENERIC", "ASYNC", "TMAP", "F_PROXY",
           "F_ATOMIC", "F_TCGEN05", "PAGE", "JIT_MIN_UNITS", "JIT_AFTER"]
