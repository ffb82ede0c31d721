"""Tensor Memory (TMEM): per-CTA 128 lanes x 512 columns of 32-bit cells, and its column allocator.

PTX ISA 9.1 §9.7.16.2 (tensor memory), §9.7.16.7.1 (tcgen05.alloc / dealloc / relinquish_alloc_permit).
Addresses are 32-bit: bits 31..16 lane, bits 15..0 column (tcgen05.md (a)).

The allocator is first-fit at a multiple of the request size (tcgen05.md: placement unspecified (?)), in
units of 32 columns; requests are powers of two in [32, 512].  A request that cannot be satisfied waits
(``alloc_event``) until a dealloc frees enough columns (ptxas 13.0's SASS: ``UTCATOMSWS.FIND_AND_SET.ALIGN``, an
aligned first fit, retried until it succeeds).  ``relinquish`` forbids later allocations by the CTA.  Protocol
misuse (leaks at CTA exit, double frees, ...) is judged by :meth:`dealloc_problem` / :meth:`leaks` and reported by the
semantics as class-13 findings (:mod:`tcsim.race.tmem_alloc`).

The cell array is private; ``data`` is a read-only view, :meth:`read_cells` / :meth:`write_cells` are the raw
accesses the doors use (sim/memory.py's docstring). Reads and writes check that every cell lies inside an allocation
(``check_allocated``) so a kernel that touches TMEM before ``tcgen05.alloc`` or after ``dealloc`` is caught; the
warp-quadrant rule of ``tcgen05.ld/st`` is checked by :meth:`check_quadrant`.

Waiters.  A blocked allocation is a *waiter*: a callable retried (in arrival order) whenever columns are freed,
which returns True once it has been satisfied.  ``alloc_event`` wraps a single-CTA request; the
``cta_group::2`` semantics register one joint waiter on both TMEMs of a CTA pair (:meth:`add_waiter`).

Stores in flight. ``tcgen05.st`` is asynchronous: its cells are staged as a :class:`PendingStore` and written only
when the store *lands* (:meth:`land_store`, through the agent interface), at ``tcgen05.wait::st`` or when the engine
decides (sim/semantics/tcgen05_mem.py). Until then ``data`` holds the old values, so a consumer that skips the wait
(``tcgen05.mma``, ``tcgen05.ld``) really sees stale TMEM. :meth:`pending_overlap` lets consumers detect it.
"""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass, field

from tcsim.isa.errors import MemoryFault, SyncError

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
        self._cells = np.zeros((LANES, COLUMNS), dtype=np.uint32)
        self.data = self._cells.view()                               # read-only view (inspection)
        self.data.flags.writeable = False
        self.owner = np.full(COLUMNS // UNIT, -1, dtype=np.int64)   # start column of the owning allocation
        self.allocations: dict[int, int] = {}                       # start column -> ncols
        self.relinquished = False
        self.last_ncols: int | None = None
        self.last_request: int | None = None                        # nCols of the latest alloc issued
        self.sites: dict[int, str] = {}                             # start column -> "where allocated"
        self.ever_allocated = False
        self.pending: list[PendingStore] = []                       # tcgen05.st not yet landed, issue order
        #: class-13 bookkeeping (tcsim.race.tmem_alloc): the alloc that made each allocation (start column ->
        #: tcsim.findings.Access), the dealloc that last freed each 32-column unit, the relinquish
        self.alloc_sides: dict = {}
        self.freed_sides: dict = {}
        self.relinquish_side = None
        self._waiters: list = []                                    # callables retry() -> bool

    # ------------------------------------------------------------------------------------------ allocator
    @staticmethod
    def check_ncols(ncols: int) -> None:
        if ncols < UNIT or ncols > COLUMNS or ncols & (ncols - 1):
            raise SyncError(f"tcgen05.alloc/dealloc of {ncols} columns",
                            expected="a power of two in [32, 512]")

    def free_starts(self, ncols: int) -> list[int]:
        """Start columns (multiples of ``ncols``, first-fit order) of every free range of ``ncols`` columns."""
        units = ncols // UNIT
        return [start * UNIT for start in range(0, COLUMNS // UNIT, units)
                if (self.owner[start:start + units] < 0).all()]

    def claim(self, col: int, ncols: int) -> None:
        """Mark ``[col, col + ncols)`` allocated (the range must be free)."""
        units = self.owner[col // UNIT:(col + ncols) // UNIT]
        if (units >= 0).any():
            raise SyncError(f"TMEM columns [{col}, {col + ncols}) of {self.label} are already allocated")
        units[:] = col
        self.allocations[col] = ncols
        self.last_ncols = ncols
        self.ever_allocated = True

    def check_permit(self, what: str = "tcgen05.alloc") -> None:
        if self.relinquished:
            raise SyncError(f"{what} in {self.label} after tcgen05.relinquish_alloc_permit",
                            expected="every alloc before the CTA relinquishes its allocation permit")

    def try_alloc(self, ncols: int, check_permit: bool = True) -> int | None:
        """First-fit start column aligned to ``ncols``, or None when no such range is free."""
        self.check_ncols(ncols)
        if check_permit:
            self.check_permit()
        starts = self.free_starts(ncols)
        if not starts:
            return None
        self.claim(starts[0], ncols)
        return starts[0]

    def alloc_event(self, ncols: int):
        """An event that fires (with the start column) once ``ncols`` columns could be allocated.

        The request was issued before any relinquish that happens while it waits, so the permit is not
        checked again when it is granted."""
        ev = self.env.event()

        def retry(ev=ev, ncols=ncols) -> bool:
            if ev.triggered:
                return True
            got = self.try_alloc(ncols, check_permit=False)
            if got is None:
                return False
            ev.succeed(got)
            return True

        self._waiters.append(retry)
        return ev

    def add_waiter(self, retry) -> None:
        """Register ``retry() -> bool`` to be called after every free until it returns True."""
        self._waiters.append(retry)

    def waiting(self) -> int:
        return len(self._waiters)

    def dealloc_problem(self, col: int, ncols: int):
        """What is wrong with freeing ``[col, col + ncols)``, as the GPU sees it, or None.

        ptxas 13.0 lowers ``tcgen05.dealloc`` to a check against two per-CTA bitmasks it keeps in reserved shared
        memory -- the allocated 32-column units and the start units returned by alloc -- then frees the units
        (SASS read back with nvdisasm): units not all allocated -> ``'unallocated'`` (it calls
        ``..._guardrail_trap_unallocated_columns_being_dealloced``: a trap); a start unit that no alloc returned
        -> ``'not_start'`` (``..._trap_col_being_dealloced_not_returned_by_alloc``: a trap); a valid start with
        another column count -> ``'size'`` (no check: exactly the named units are freed)."""
        if col < 0 or col + ncols > COLUMNS or col % UNIT:
            return "unallocated"
        units = self.owner[col // UNIT:(col + ncols) // UNIT]
        if (units < 0).any():
            return "unallocated"
        if col not in self.allocations:
            return "not_start"
        if self.allocations[col] != ncols:
            return "size"
        return None

    def free(self, col: int, ncols: int) -> None:
        """Free exactly the 32-column units of ``[col, col + ncols)`` (what the GPU does, see
        :meth:`dealloc_problem`): allocations starting inside the range are gone; units of an allocation that lie
        outside it stay allocated (a leak unless freed by a later dealloc naming them)."""
        u0, u1 = col // UNIT, (col + ncols) // UNIT
        for start in [c for c in self.allocations if col <= c < col + ncols]:
            del self.allocations[start]      # (sites / alloc_sides stay: leftover units still name their alloc)
        self.owner[u0:u1] = -1
        self.service_waiters()

    def service_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for retry in waiters:
            if not retry():
                self._waiters.append(retry)

    def relinquish(self) -> None:
        self.relinquished = True

    def leaks(self) -> list[tuple[int, int]]:
        """(start column, ncols) of every run of still-allocated columns (one per owning allocation)."""
        out = []
        u = 0
        n = COLUMNS // UNIT
        while u < n:
            o = int(self.owner[u])
            if o < 0:
                u += 1
                continue
            v = u
            while v < n and int(self.owner[v]) == o:
                v += 1
            out.append((u * UNIT, (v - u) * UNIT))
            u = v
        return out

    def owner_of(self, col: int) -> int:
        """Start column of the allocation that owns column ``col`` (-1 if free)."""
        return int(self.owner[col // UNIT])

    # ------------------------------------------------------------------------------------------ access checks
    def check_allocated(self, lane0: int, nlanes: int, col0: int, ncols: int, what: str, report=None,
                        side=None) -> bool:
        """MemoryFault if the box leaves the grid.  Columns not allocated: with ``report`` (the issuing warp's
        ``ctx.report``) and ``side`` (its :class:`tcsim.findings.Access`) a class-13 finding is reported (the GPU
        reaches the physical cells: tcsim.race.tmem_alloc) and True returned; without, MemoryFault."""
        if lane0 < 0 or lane0 + nlanes > LANES or col0 < 0 or col0 + ncols > COLUMNS:
            raise MemoryFault(f"{what} touches TMEM lanes [{lane0}, {lane0 + nlanes}) x columns "
                              f"[{col0}, {col0 + ncols}) outside the {LANES} x {COLUMNS} tensor memory of "
                              f"{self.label}", expected="lane < 128 and column < 512")
        units = self.owner[col0 // UNIT:(col0 + ncols + UNIT - 1) // UNIT]
        if (units < 0).any():
            bad = col0 // UNIT * UNIT + int(np.nonzero(units < 0)[0][0]) * UNIT
            if report is not None:
                from .race.tmem_alloc import unallocated_access
                report(unallocated_access(self, side, what, col0, col0 + ncols, bad))
                return True
            raise MemoryFault(f"{what} touches TMEM columns [{col0}, {col0 + ncols}) of {self.label}, but "
                              f"columns [{bad}, {bad + UNIT}) are not allocated",
                              expected="tcgen05.alloc before any TMEM access, and no access after dealloc")
        return False

    def allocated(self, lane0: int, nlanes: int, col0: int, ncols: int) -> bool:
        """Whether the box lies inside the grid with every column allocated (:meth:`check_allocated` would pass): the
        cheap test an issue makes before building the description of a finding it will most likely not report."""
        if lane0 < 0 or lane0 + nlanes > LANES or col0 < 0 or col0 + ncols > COLUMNS:
            return False
        return bool((self.owner[col0 // UNIT:(col0 + ncols + UNIT - 1) // UNIT] >= 0).all())

    def check_bounds(self, lane0: int, nlanes: int, col0: int, ncols: int, what: str) -> None:
        """MemoryFault if the box leaves the 128 x 512 grid (no allocation check)."""
        if lane0 < 0 or lane0 + nlanes > LANES or col0 < 0 or col0 + ncols > COLUMNS:
            raise MemoryFault(f"{what} touches TMEM lanes [{lane0}, {lane0 + nlanes}) x columns "
                              f"[{col0}, {col0 + ncols}) outside the {LANES} x {COLUMNS} tensor memory of "
                              f"{self.label}", expected="lane < 128 and column < 512")

    def unallocated_columns(self, cols: np.ndarray) -> list[int]:
        """Start columns of the 32-column units among ``cols`` that are not allocated."""
        c = np.asarray(cols, dtype=np.int64)
        if not c.size:
            return []
        lo, hi = int(c.min()) // UNIT, int(c.max()) // UNIT
        if 0 <= lo and hi < len(self.owner) and (self.owner[lo:hi + 1] >= 0).all():
            return []                       # (every unit of their span is allocated: no sort of the columns)
        units = np.unique(c // UNIT)
        return [int(u) * UNIT for u in units if self.owner[u] < 0]

    @staticmethod
    def check_quadrant(warp_in_group: int, lane0: int, nlanes: int, what: str) -> None:
        lo = 32 * warp_in_group
        if lane0 < lo or lane0 + nlanes > lo + 32:
            raise MemoryFault(f"{what}: warp {warp_in_group} of its warpgroup may access only TMEM lanes "
                              f"[{lo}, {lo + 32}), not [{lane0}, {lane0 + nlanes})",
                              expected=f"a TMEM address whose lane field is in [{lo}, {lo + 31}] "
                                       f"(warp index % 4 = {warp_in_group})")

    def peek(self, l0: int, l1: int, c0: int, c1: int) -> np.ndarray:
        """Inspection, not an access: a copy of the words of lanes ``[l0, l1)`` x columns ``[c0, c1)`` for a
        debugger or a report (no observation event; the kernel's accesses go through the doors)."""
        return self._cells[l0:l1, c0:c1].copy()

    # ------------------------------------------------------------------------------------------ cells (raw access)
    def read_cells(self, lanes, cols) -> np.ndarray:
        """Words of the cells ``(lanes, cols)`` (numpy index arrays, broadcast together): a new array.  Only the
        doors (:class:`tcsim.context.ExecContext`, :class:`tcsim.agents.port.AgentPort`) call it."""
        box = self._box(lanes, cols)
        if box is not None:
            return self._cells[box].copy()
        return self._cells[lanes, cols]

    def write_cells(self, lanes, cols, values) -> None:
        """Store ``values`` into the cells ``(lanes, cols)`` (later duplicates win).  Doors only."""
        box = self._box(lanes, cols)
        if box is not None:
            self._cells[box] = values
        else:
            self._cells[lanes, cols] = values

    def _box(self, lanes, cols):
        """(lane slice, column slice) where ``lanes`` (L, 1) and ``cols`` (1, C) index a block of consecutive lanes x
        consecutive columns inside the grid (an MMA's D, a tcgen05.ld's registers: slices, not a gather of each
        cell); None for any other indexing (then the index arrays do it, raising as numpy does)."""
        if type(lanes) is not np.ndarray or type(cols) is not np.ndarray or lanes.ndim != 2 or cols.ndim != 2 or \
                lanes.shape[1] != 1 or cols.shape[0] != 1 or not lanes.size or not cols.size or \
                lanes.dtype.kind not in "iu" or cols.dtype.kind not in "iu":
            return None
        ln, cl = lanes[:, 0], cols[0]
        l0, c0, nl, nc = int(ln[0]), int(cl[0]), ln.size, cl.size
        if l0 < 0 or c0 < 0 or l0 + nl > LANES or c0 + nc > COLUMNS or int(ln[-1]) != l0 + nl - 1 or \
                int(cl[-1]) != c0 + nc - 1:
            return None
        if nl > 2 and (ln[1:] - ln[:-1] != 1).any() or nc > 2 and (cl[1:] - cl[:-1] != 1).any():
            return None
        return slice(l0, l0 + nl), slice(c0, c0 + nc)

    # ------------------------------------------------------------------------------------------ stores in flight
    def stage(self, st: "PendingStore") -> None:
        self.pending.append(st)

    def land_store(self, st: "PendingStore") -> None:
        """Write a staged store into ``data`` (idempotent).  MemoryFault if its columns were freed meanwhile."""
        if st.landed:
            return
        st.landed = True
        if st in self.pending:
            self.pending.remove(st)
        bad = self.unallocated_columns(st.cols)
        if bad and not st.unallocated_at_issue:     # (an access to unallocated columns is reported at issue)
            raise MemoryFault(f"{st.what} issued by {st.issuer} at cycle {st.issued_at:g} completed after TMEM "
                              f"columns [{bad[0]}, {bad[0] + UNIT}) of {self.label} were deallocated",
                              expected="tcgen05.wait::st before the columns are deallocated")
        self._cells[st.lanes, st.cols] = st.values

    def pending_overlap(self, lanes: np.ndarray, cols: np.ndarray) -> list["PendingStore"]:
        """Stores in flight that write any of the cells ``(lanes[i], cols[i])``."""
        if not self.pending:
            return []
        lanes = np.asarray(lanes, dtype=np.int64).ravel()
        cols = np.asarray(cols, dtype=np.int64).ravel()
        out = []
        for st in self.pending:
            if (lanes.max() < st.lane_lo or lanes.min() > st.lane_hi or cols.max() < st.col_lo
                    or cols.min() > st.col_hi):
                continue
            if np.isin(lanes * COLUMNS + cols, st.lanes * COLUMNS + st.cols).any():
                out.append(st)
        return out

    def pending_in_columns(self, col0: int, ncols: int) -> list["PendingStore"]:
        return [st for st in self.pending if st.col_lo < col0 + ncols and st.col_hi >= col0]

    def describe(self) -> str:
        held = ", ".join(f"[{c}, {c + n})" for c, n in sorted(self.allocations.items())) or "nothing"
        return f"TMEM of {self.label}: allocated columns {held}" + (" (permit relinquished)"
                                                                      if self.relinquished else "")


@dataclass(eq=False)
class PendingStore:
    """One ``tcgen05.st`` in flight: cells ``(lanes[i], cols[i])`` get ``values[i]`` when it lands."""

    lanes: np.ndarray           # int64, flat
    cols: np.ndarray            # int64, flat
    values: np.ndarray          # uint32, flat (later entries win on duplicates)
    what: str = "tcgen05.st"
    issuer: str = ""
    warp: object = None
    loc: object = None
    pc: int | None = None
    op_id: int | None = None    # set at issue (links its observation events)
    issued_at: float = 0.0
    due: float = 0.0
    done: object = None         # simpy event fired when it lands
    landed: bool = False
    unallocated_at_issue: bool = False  # columns were not allocated when it issued (class 13, reported then)
    lane_lo: int = field(init=False, default=0)
    lane_hi: int = field(init=False, default=0)
    col_lo: int = field(init=False, default=0)
    col_hi: int = field(init=False, default=0)

    def __post_init__(self):
        if self.lanes.size:
            self.lane_lo, self.lane_hi = int(self.lanes.min()), int(self.lanes.max())
            self.col_lo, self.col_hi = int(self.cols.min()), int(self.cols.max())


def tmem_of(cta) -> TensorMemory:
    """The CTA's TMEM, created on first use."""
    if cta.tmem is None:
        cta.tmem = TensorMemory(cta.machine.env, cta.label)
    return cta.tmem
