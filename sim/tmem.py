"""Tensor Memory (TMEM): per-CTA 128 lanes x 512 columns of 32-bit cells, and its column allocator.

PTX ISA 9.1 §9.7.16.2 (tensor memory), §9.7.16.7.1 (tcgen05.alloc / dealloc / relinquish_alloc_permit).
Addresses are 32-bit: bits 31..16 lane, bits 15..0 column (tcgen05.md (a)).

The allocator is first-fit at a multiple of the request size (tcgen05.md: placement unspecified (?)), in
units of 32 columns; requests are powers of two in [32, 512].  A request that cannot be satisfied waits
(``alloc_event``) until a dealloc frees enough columns.  ``relinquish`` forbids later allocations by the CTA.
Leaks (columns still allocated at CTA exit) and double frees are reported as :class:`SyncError`.

Reads and writes check that every cell lies inside an allocation (``check_allocated``) so a kernel that
touches TMEM before ``tcgen05.alloc`` or after ``dealloc`` is caught; the warp-quadrant rule of
``tcgen05.ld/st`` is checked by :meth:`check_quadrant`.
"""
from __future__ import annotations

import numpy as np

from isa.errors import MemoryFault, SyncError

LANES = 128
COLUMNS = 512
UNIT = 32


def split_taddr(addr: int) -> tuple[int, int]:
    """(lane, column) of a TMEM address."""
    return (int(addr) >> 16) & 0xFFFF, int(addr) & 0xFFFF


def make_taddr(lane: int, col: int) -> int:
    return ((int(lane) & 0xFFFF) << 16) | (int(col) & 0xFFFF)


class TensorMemory:
    """One CTA's TMEM."""

    def __init__(self, env, label: str):
        self.env = env
        self.label = label
        self.data = np.zeros((LANES, COLUMNS), dtype=np.uint32)
        self.owner = np.full(COLUMNS // UNIT, -1, dtype=np.int64)   # start column of the owning allocation
        self.allocations: dict[int, int] = {}                       # start column -> ncols
        self.relinquished = False
        self.last_ncols: int | None = None
        self._waiters: list = []                                    # (event, ncols)

    # ------------------------------------------------------------------------------------------ allocator
    @staticmethod
    def check_ncols(ncols: int) -> None:
        if ncols < UNIT or ncols > COLUMNS or ncols & (ncols - 1):
            raise SyncError(f"tcgen05.alloc/dealloc of {ncols} columns",
                            expected="a power of two in [32, 512]")

    def try_alloc(self, ncols: int) -> int | None:
        """First-fit start column aligned to ``ncols``, or None when no such range is free."""
        self.check_ncols(ncols)
        if self.relinquished:
            raise SyncError(f"tcgen05.alloc in {self.label} after tcgen05.relinquish_alloc_permit",
                            expected="every alloc before the CTA relinquishes its allocation permit")
        units = ncols // UNIT
        for start in range(0, COLUMNS // UNIT, units):
            if (self.owner[start:start + units] < 0).all():
                self.owner[start:start + units] = start * UNIT
                self.allocations[start * UNIT] = ncols
                self.last_ncols = ncols
                return start * UNIT
        return None

    def alloc_event(self, ncols: int):
        """An event that fires (with the start column) once ``ncols`` columns could be allocated."""
        ev = self.env.event()
        self._waiters.append((ev, ncols))
        return ev

    def free(self, col: int, ncols: int) -> None:
        self.check_ncols(ncols)
        if self.allocations.get(col) != ncols:
            held = ", ".join(f"[{c}, {c + n})" for c, n in sorted(self.allocations.items())) or "none"
            raise SyncError(f"tcgen05.dealloc of columns [{col}, {col + ncols}) in {self.label}, which is not "
                            f"an allocation (double free or wrong size?); allocated: {held}",
                            expected="the address and column count returned by a matching tcgen05.alloc")
        del self.allocations[col]
        self.owner[col // UNIT:(col + ncols) // UNIT] = -1
        waiters, self._waiters = self._waiters, []
        for ev, n in waiters:
            if ev.triggered:
                continue
            got = self.try_alloc(n)
            if got is None:
                self._waiters.append((ev, n))
            else:
                ev.succeed(got)

    def relinquish(self) -> None:
        self.relinquished = True

    def leaks(self) -> list[tuple[int, int]]:
        return sorted(self.allocations.items())

    # ------------------------------------------------------------------------------------------ access checks
    def check_allocated(self, lane0: int, nlanes: int, col0: int, ncols: int, what: str) -> None:
        if lane0 < 0 or lane0 + nlanes > LANES or col0 < 0 or col0 + ncols > COLUMNS:
            raise MemoryFault(f"{what} touches TMEM lanes [{lane0}, {lane0 + nlanes}) x columns "
                              f"[{col0}, {col0 + ncols}) outside the {LANES} x {COLUMNS} tensor memory of "
                              f"{self.label}", expected="lane < 128 and column < 512")
        units = self.owner[col0 // UNIT:(col0 + ncols + UNIT - 1) // UNIT]
        if (units < 0).any():
            bad = col0 // UNIT * UNIT + int(np.nonzero(units < 0)[0][0]) * UNIT
            raise MemoryFault(f"{what} touches TMEM columns [{col0}, {col0 + ncols}) of {self.label}, but "
                              f"columns [{bad}, {bad + UNIT}) are not allocated",
                              expected="tcgen05.alloc before any TMEM access, and no access after dealloc")

    @staticmethod
    def check_quadrant(warp_in_group: int, lane0: int, nlanes: int, what: str) -> None:
        lo = 32 * warp_in_group
        if lane0 < lo or lane0 + nlanes > lo + 32:
            raise MemoryFault(f"{what}: warp {warp_in_group} of its warpgroup may access only TMEM lanes "
                              f"[{lo}, {lo + 32}), not [{lane0}, {lane0 + nlanes})",
                              expected=f"a TMEM address whose lane field is in [{lo}, {lo + 31}] "
                                       f"(warp index % 4 = {warp_in_group})")

    def describe(self) -> str:
        held = ", ".join(f"[{c}, {c + n})" for c, n in sorted(self.allocations.items())) or "nothing"
        return f"TMEM of {self.label}: allocated columns {held}" + (" (permit relinquished)"
                                                                      if self.relinquished else "")


def tmem_of(cta) -> TensorMemory:
    """The CTA's TMEM, created on first use."""
    if cta.tmem is None:
        cta.tmem = TensorMemory(cta.machine.env, cta.label)
    return cta.tmem
