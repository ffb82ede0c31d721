"""Shared-memory bank conflicts and the global-memory line model.

Bank conflicts (CUDA C++ Programming Guide, "Shared Memory", compute capability 5.x and later): shared memory has
32 banks of 4 bytes; successive 4-byte words go to successive banks.  A warp's request is served in wavefronts of
one word per bank: lanes reading the *same* word share it (broadcast), lanes touching *different* words of one bank
are serialised.  Accesses wider than 4 bytes per lane are split into phases of 128 bytes (8-byte accesses: two
half-warps, 16-byte accesses: four quarter-warps), each phase conflicting only within itself.  The cost of a
request is the number of wavefronts -- 1 conflict-free, 32 when 32 lanes hit one bank at 32 different words.
"""
from __future__ import annotations

import functools

import numpy as np


def smem_wavefronts(addrs, access_bytes: int, banks: int = 32, bank_bytes: int = 4) -> int:
    """Wavefronts needed for lanes accessing ``access_bytes`` each at byte addresses ``addrs`` (active lanes
    only, in lane order).  A pure function of the addresses: a warp's address pattern recurs (other warps, CTAs,
    loop iterations), so results are kept by the pattern's bytes (:func:`_wavefronts`)."""
    a = np.ascontiguousarray(addrs, dtype=np.int64)
    if a.size == 0:
        return 0
    if a.ndim != 1:
        a = a.reshape(-1)
    return _wavefronts(a.tobytes(), int(access_bytes), int(banks), int(bank_bytes))


@functools.lru_cache(maxsize=1 << 16)
def _wavefronts(key: bytes, access_bytes: int, banks: int, bank_bytes: int) -> int:
    """smem_wavefronts of the int64 addresses whose bytes are ``key``."""
    a = np.frombuffer(key, dtype=np.int64)
    per_phase = max(1, min(32, (banks * bank_bytes) // max(access_bytes, bank_bytes)))
    nwords = max(1, -(-access_bytes // bank_bytes))
    total = 0
    for start in range(0, a.size, per_phase):
        words = (a[start:start + per_phase, None] // bank_bytes + np.arange(nwords)).reshape(-1)
        words = np.unique(words)
        counts = np.bincount(words % banks, minlength=banks)
        total += int(counts.max())
    return total


class GlobalLines:
    """First-touch model of global memory: a 128-byte line's first access comes from HBM, later ones hit L2
    (the whole working set of a simulated launch fits the 50 MB / 126 MB L2)."""

    __slots__ = ("line", "seen")

    def __init__(self, line_bytes: int = 128):
        self.line = int(line_bytes)
        self.seen: set = set()

    def lines_of(self, addrs) -> set:
        """The line indices of byte addresses ``addrs``."""
        return set((np.asarray(addrs, dtype=np.uint64) // np.uint64(self.line)).tolist())

    def mark(self, lines: set) -> set:
        """Those of ``lines`` touched for the first time (now marked as seen)."""
        new = lines - self.seen
        self.seen |= new
        return new

    def touch(self, addrs) -> tuple[int, int]:
        """(lines touched, of which first touches) for byte addresses ``addrs``."""
        lines = self.lines_of(addrs)
        return len(lines), len(self.mark(lines))

    def first_touches(self, addrs) -> set:
        """The lines of byte addresses ``addrs`` touched for the first time (now marked as seen)."""
        return self.mark(self.lines_of(addrs))


def l2_resident_ranges(allocations, l2_bytes: int) -> list:
    """Byte ranges [lo, hi) of the host-written buffers (``allocations``, in the order the host copied them)
    that are still in L2 when the kernel starts: the last ``l2_bytes`` bytes written (each copy passes through
    L2, later copies evict earlier ones)."""
    out, room = [], int(l2_bytes)
    for a in reversed(list(allocations)):
        if room <= 0:
            break
        n = len(a.data)
        take = min(n, room)
        out.append((a.base + n - take, a.base + n))
        room -= take
    return out


__all__ = ["smem_wavefronts", "GlobalLines", "l2_resident_ranges"]
