"""Vector clocks of the happens-before race detector (:mod:`tcsim.race.hb`).

One clock component per *thread of ordering*: each warp (its lanes share the clock -- lanes of a warp execute in
program order in tcsim and their accesses are reported per instruction), and each *stream* of asynchronous
operations that complete in order: a CTA's TMA engine (its source reads and its destination writes as two
streams, so that ``cp.async.bulk.wait_group.read`` acquires only the reads), a tensor pipe (tcgen05.mma / .cp /
.shift and the commit behind them), a warp's ``tcgen05.ld`` (pending until ``tcgen05.wait::ld``), a warp's
``tcgen05.st`` (pending until ``tcgen05.wait::st``) and a warp's ``cp.async``.  An async op's accesses carry the
epoch ``(stream, sequence number)``; observing the op's completion (the mbarrier phase its bytes completed, a
wait_group, a tcgen05.wait) sets the stream's entry to at least that number, which -- the stream completing in
order -- also covers the ops before it.

A clock is not one vector but :data:`NVIEWS` of them (rows), one per kind of knowledge the PTX memory model
distinguishes (PTX ISA 9.1 §8, memory consistency model):

* ``VC`` -- plain happens-before (base causality order, §8.9.2);
* ``PA`` -- what a ``fence.proxy.async`` ordered for the async proxy (§8.6 proxies, §9.7.13.4): a generic write
  ``(c, v)`` is visible to an async-proxy read issued with clock ``I`` iff ``I.PA[c] >= v``;
* ``TB`` -- tcgen05 operations published to thread synchronisation by an explicit
  ``tcgen05.fence::before_thread_sync`` (§9.7.16.6, "memory consistency model for 5th generation TensorCore
  operations"); the implicit one of ``tcgen05.commit`` (§9.7.16.6.4.2) is recognised by
  :func:`tcsim.race.explain.fence_discipline`'s rule from the producing unit and the ``MB`` row instead;
* ``TA`` -- what this thread's ``tcgen05.fence::after_thread_sync`` ordered before its later tcgen05 operations
  (its ``VC`` at the fence);
* ``MB`` -- what reached the thread through an mbarrier phase (arrive -> phase completion -> wait);
* ``MI`` -- what a ``fence.mbarrier_init.release.cluster`` released (mbarrier inits visible to the cluster);
* ``AQ`` -- what reached the thread through an mbarrier wait with acquire semantics (the default ``.acquire``
  ``test_wait`` / ``try_wait``, §9.7.13.15.16) -- a ``.relaxed`` wait orders execution (``VC``, ``MB``) but no
  memory, so what arrived only through relaxed waits is in ``MB`` and not in ``AQ``: the class-7 judgement of
  :mod:`tcsim.race.explain` follows the waits that actually carried the producing op's epoch to the consumer.
  (``fence.proxy.tensormap::generic.acquire [addr]`` orders one map only, so the detector keeps the clock of each
  such fence per warp and map address, :mod:`tcsim.race.hb`.)

Every edge joins all rows (knowledge is cumulative); the fences copy ``VC`` into their row.

A clock is as wide as the components ever registered, so in a grid of many CTAs the clocks would widen by a few
components per warp started (issue 17: the live warps' clocks held most of the detector's memory growth).  When
the detector compacts finished clusters (:mod:`tcsim.retention`) it *retires* their components
(:meth:`Components.retire`: nobody advances them again), and before the registry would widen, it *recycles* the
retired components that no clock still alive knows in any row (:meth:`Components.recycle`; every clock is tracked
by a weak reference while recycling is on): such a component's entries are 0 in every clock, so each access
recorded with it is unknown to every clock (or known, for a value of 0) -- exactly as for one fixed component
that nobody ever advances, ``("forgotten",)``, to which the detector moves those records
(:meth:`tcsim.race.hb.HappensBefore._recycle`).  The freed index then serves a new warp or unit, starting from 0
in every clock as a fresh component does.  The width of the clocks stays that of the components alive or still
known, whatever the number of CTAs run.
"""
from __future__ import annotations

import weakref

import numpy as np

VC, PA, TB, TA, MB, MI, AQ = range(7)
NVIEWS = 7
VIEW_NAMES = ("VC", "PA", "TB", "TA", "MB", "MI", "AQ")


class Components:
    """The registry of clock components (index per key) and the capacity every clock is padded to.

    Recycling (module docstring) is off until :meth:`start_recycling`; a key's second element, where it has one,
    is the CTA it belongs to (the detector's keys: ``("warp", cta, warp)``, ``("tma.read", cta)``, ...), which
    :meth:`retire` goes by."""

    def __init__(self, cap: int = 64):
        self.cap = cap
        self.index: dict = {}
        self.keys: list = []
        self.free: list = []            # recycled indices, ready for a new key
        self.retired: list = []         # indices nobody advances again, not yet recycled
        self.clocks = None              # weakref.WeakSet of every clock alive, while recycling is on
        self.recycler = None            # callable(list of candidate indices) -> those it recycled
        self._by_cta: dict = {}         # cta -> indices of its keys (while recycling is on)
        self.recycled = 0               # components recycled so far

    def start_recycling(self, recycler) -> None:
        """Track every clock made from now on (call it before any) and recycle through ``recycler``."""
        self.clocks = weakref.WeakSet()
        self.recycler = recycler

    def component(self, key) -> int:
        i = self.index.get(key)
        if i is None:
            if not self.free and len(self.keys) >= self.cap and self.retired and self.recycler is not None:
                self.recycle()
            if self.free:
                i = self.free.pop()
                self.keys[i] = key
            else:
                i = len(self.keys)
                self.keys.append(key)
                while i >= self.cap:
                    self.cap *= 2
            self.index[key] = i
            if self.clocks is not None and len(key) > 1:
                self._by_cta.setdefault(key[1], []).append(i)
        return i

    def retire(self, ctas) -> None:
        """The components of ``ctas`` (all exited, their state compacted) will never advance again."""
        for cta in ctas:
            for i in self._by_cta.pop(cta, ()):
                self.index.pop(self.keys[i], None)
                self.retired.append(i)

    def known(self, comps: np.ndarray) -> np.ndarray:
        """For each component of ``comps``: whether some clock alive has a non-zero entry for it in any row."""
        out = np.zeros(comps.size, dtype=bool)
        for c in list(self.clocks):
            v = c.v
            inside = comps < v.shape[1]
            if inside.any():
                out[inside] |= v[:, comps[inside]].any(axis=0)
        return out

    def recycle(self) -> list:
        """Free the retired components no clock alive knows (module docstring), through the recycler; returns them."""
        cand = np.array(self.retired, dtype=np.int64)
        freed = [int(i) for i in cand[~self.known(cand)]] if cand.size else []
        if freed:
            freed = list(self.recycler(freed))
            gone = set(freed)
            self.retired = [i for i in self.retired if i not in gone]
            self.free.extend(sorted(freed, reverse=True))
            self.recycled += len(freed)
        return freed

    def live(self) -> int:
        """Components registered and not recycled (alive, retired but still known, or reserved)."""
        return len(self.keys) - len(self.free)

    def clock(self) -> "Clock":
        return Clock(self, np.zeros((NVIEWS, self.cap), dtype=np.int64))


class Clock:
    """A vector clock with its knowledge views (module docstring); ``v`` is the (NVIEWS, capacity) array."""

    __slots__ = ("reg", "v", "__weakref__")

    def __init__(self, reg: Components, v: np.ndarray):
        self.reg = reg
        self.v = v
        if reg.clocks is not None:
            reg.clocks.add(self)

    def fit(self) -> np.ndarray:
        """The array, padded to the registry's capacity (components registered since)."""
        v = self.v
        cap = self.reg.cap
        if v.shape[1] < cap:
            nv = np.zeros((NVIEWS, cap), dtype=np.int64)
            nv[:, :v.shape[1]] = v
            self.v = v = nv
        return v

    def copy(self) -> "Clock":
        return Clock(self.reg, self.fit().copy())

    def join(self, other: "Clock | None") -> "Clock":
        """This clock := max(this, other), every view."""
        if other is not None:
            a = self.fit()
            b = other.fit()
            np.maximum(a, b, out=a)
        return self

    def get(self, comp: int, view: int = VC) -> int:
        v = self.v
        return int(v[view, comp]) if comp < v.shape[1] else 0

    def knows(self, comp: int, val: int, view: int = VC) -> bool:
        return self.get(comp, view) >= val

    def set_at_least(self, comp: int, val: int, view: int = VC) -> None:
        v = self.fit()
        if v[view, comp] < val:
            v[view, comp] = val

    def absorb(self, dst: int, src: int = VC) -> None:
        """Row ``dst`` := max(row ``dst``, row ``src``) (a fence recording what it orders)."""
        v = self.fit()
        np.maximum(v[dst], v[src], out=v[dst])

    def row(self, view: int = VC) -> np.ndarray:
        return self.fit()[view]


__all__ = ["Components", "Clock", "NVIEWS", "VIEW_NAMES", "VC", "PA", "TB", "TA", "MB", "MI", "AQ"]
