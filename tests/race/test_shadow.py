"""The shadow's compiled kernel (tcsim.race.shadow_jit) against its numpy specification (tcsim.race.shadow.access_numpy):
random access sequences -- whole 64-unit blocks and partial ones, strided boxes, scattered units with repeats,
accesses spanning pages and conflict blocks, reads and writes of both proxies, ordered and unordered epochs -- give
the same conflicts (every field, in order) and leave the same shadow, on pages the kernel made (block summaries) and
on pages made before it was loaded (per-unit entries only)."""
from __future__ import annotations

import numpy as np
import pytest

from tcsim.race import shadow as S

pytest.importorskip("numba")


def _space(jit: bool, page_bits: int, pre_pages=()):
    tab = S.AccessTable()
    tab.kernel_asked = True
    sp = S.ShadowSpace("x", tab, page_bits=page_bits)
    for p in pre_pages:          # made while no kernel was loaded: per-unit entries only
        sp._page(p)
    tab.kernel = S.kernel() if jit else None
    return sp


def _units(rng, span):
    kind = rng.integers(6)
    if kind == 0:                                   # aligned whole blocks
        a = int(rng.integers(span // 64)) * 64
        return np.arange(a, min(a + 64 * int(rng.integers(1, 6)), span), dtype=np.int64)
    if kind == 1:                                   # a contiguous range anywhere
        a = int(rng.integers(span - 1))
        return np.arange(a, min(a + int(rng.integers(1, 400)), span), dtype=np.int64)
    if kind == 2:                                   # a strided box (TMEM lanes x columns, tile rows)
        rows, cols, stride = int(rng.integers(1, 9)), int(rng.integers(1, 130)), int(rng.integers(130, 600))
        a = int(rng.integers(max(span - rows * stride - cols, 1)))
        return (a + np.arange(rows)[:, None] * stride + np.arange(cols)[None, :]).ravel().astype(np.int64)
    if kind == 3:                                   # scattered, repeats (lanes storing to one address)
        return rng.integers(0, span, int(rng.integers(1, 80))).astype(np.int64)
    if kind == 4:                                   # a few units, reversed
        a = int(rng.integers(span - 40))
        return np.arange(a + 31, a - 1, -1, dtype=np.int64)
    return np.repeat(np.arange(int(rng.integers(span - 8)), dtype=np.int64)[-4:], 2)   # pairs of repeats


@pytest.mark.parametrize("page_bits,span,pre", [(14, 3 * S.PAGE, (0,)), (16, 1 << 16, ()), (20, 1 << 16, (0,))])
def test_kernel_matches_the_numpy_specification(page_bits, span, pre):
    rng = np.random.default_rng(1234 + page_bits + len(pre))
    a, b = _space(False, page_bits, pre), _space(True, page_bits, pre)
    ncomp = 6
    clocks = np.zeros((ncomp, 8), dtype=np.int64)
    epoch = np.ones(ncomp, dtype=np.int64)
    seen = set()
    for info in range(600):
        comp = int(rng.integers(ncomp))
        if rng.random() < 0.4:                      # an edge: comp learns another's current epoch
            other = int(rng.integers(ncomp))
            clocks[comp] = np.maximum(clocks[comp], clocks[other])
            clocks[comp, other] = max(clocks[comp, other], epoch[other] - int(rng.integers(2)))
        clocks[comp, comp] = epoch[comp]
        units = _units(rng, span)
        write = bool(rng.random() < 0.45)
        flags = int(rng.choice([S.GENERIC, S.ASYNC, S.TMAP]))
        conflicts = bool(rng.random() < 0.95)
        only_unknown = bool(rng.random() < 0.3)
        row = clocks[comp].copy()
        ra = a.access(units, row, comp, int(epoch[comp]), info, flags, write, conflicts, only_unknown)
        rb = b.access(units, row, comp, int(epoch[comp]), info, flags, write, conflicts, only_unknown)
        fa = [(c.kind, c.info, c.comp, c.val, c.flags, c.known, c.n, c.lo, c.hi) for c in ra]
        fb = [(c.kind, c.info, c.comp, c.val, c.flags, c.known, c.n, c.lo, c.hi) for c in rb]
        assert fa == fb, (info, write, flags, units[:8])
        seen.update((c[0], c[5]) for c in fa)
        epoch[comp] += int(rng.integers(0, 2))
    assert seen == {("w", True), ("w", False), ("r", True), ("r", False)}     # the sequence meets every case
    assert sorted(a.pages) == sorted(b.pages)
    # the scans of the CTA-exit check agree (the kernel's read through its block summaries)
    for (ua, ea), (ub, eb) in zip(a.scan(0, span), b.scan(0, span)):
        assert np.array_equal(ua, ub) and np.array_equal(ea, eb)
    k = S.kernel()
    for p, pa in a.pages.items():
        pb = b.pages[p]
        k.materialize(pb.wi, pb.ri, pb.sw, pb.sr)
        assert (pa.sw == -1).all() and (pb.sw == -1).all()
        assert np.array_equal(pa.wi, pb.wi) and np.array_equal(pa.ri, pb.ri), p


def test_a_pipeline_of_whole_tiles_stays_summarised():
    sp = _space(True, 14)
    row = np.zeros(8, dtype=np.int64)
    tile = np.arange(4096, 4096 + 2048, dtype=np.int64)
    sp.access(tile, row, 0, 1, 0, S.ASYNC, True)                 # a TMA write of the tile
    row[0] = 1
    assert sp.access(tile, row, 1, 1, 1, S.ASYNC, False)[0].known  # the MMA's read, ordered after it
    page = sp.pages[0]
    blocks = slice(4096 // 64, (4096 + 2048) // 64)
    assert (page.sw[blocks] == 1).all() and (page.sr[2, blocks] == 2).all()
    assert (page.wi[4096:4096 + 2048] == 0).all()                  # no per-unit store was needed


def test_large_shadow_arrays_are_zero_filled_lazily_and_writable():
    # a 1M-unit page (the detector's) is mapped in 4 KiB OS pages, not cleared 2 MiB at a time at the first write
    import mmap
    page = S.Page(1 << 20, True)
    for arr, shape in ((page.wi, (1 << 20,)), (page.ri, (S.NSLOTS, 1 << 20))):
        assert arr.shape == shape and arr.dtype == np.int32 and arr.flags.writeable
        base = arr
        while isinstance(base, (np.ndarray, memoryview)):
            base = base.base if isinstance(base, np.ndarray) else base.obj
        assert isinstance(base, mmap.mmap)
        assert not arr[:: 4099].any() and not arr[..., -7:].any()
    page.ri[2, 123457] = 9
    page.wi[(1 << 20) - 1] = 5
    assert page.ri[2, 123457] == 9 and page.wi[-1] == 5 and int(page.ri.sum()) == 9
    small = S.lazy_zeros((3, 5), np.int64)          # below LAZY_BYTES: an ordinary array
    assert small.shape == (3, 5) and not small.any() and small.base is None
