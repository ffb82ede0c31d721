"""Memories of the simulated machine and the address model.

Address model (tcsim's choice where the hardware encoding is not public):

* **Global** allocations live in the generic 64-bit space from ``GLOBAL_BASE`` upward, each 256-byte aligned,
  with a guard gap between them so an overrun faults instead of reading a neighbour.
* **Shared** state-space addresses are 32-bit.  The CTA of cluster rank ``r`` sees its own SMEM at
  ``(r << SHARED_RANK_SHIFT) | offset``; ``mapa`` swaps the rank bits.  This matches CUTLASS's assumption that
  bit 24 of a ``shared::cluster`` address selects the odd CTA of a pair (mbarrier.md, tma.md).  A
  ``.shared::cta`` access must carry the executing CTA's own rank bits.
* **Generic** addresses of shared memory are ``SHARED_WINDOW + shared_address``; of local memory
  ``LOCAL_WINDOW + offset`` (per thread).  ``cvta`` converts between them.

Memories are plain ``numpy.uint8`` arrays; accesses are vectorised over the lanes of a warp.
"""
from __future__ import annotations

import bisect

import numpy as np

from tcsim.isa.errors import MemoryFault

GLOBAL_BASE = 0x7F00_0000_0000
GLOBAL_ALIGN = 256
GLOBAL_GUARD = 4096
SHARED_WINDOW = 0x7E00_0000_0000
LOCAL_WINDOW = 0x7D00_0000_0000
PARAM_WINDOW = 0x7C00_0000_0000
CONST_WINDOW = 0x7B00_0000_0000
WINDOW_SIZE = 1 << 32
SHARED_RANK_SHIFT = 24
SHARED_OFFSET_MASK = (1 << SHARED_RANK_SHIFT) - 1


class Allocation:
    __slots__ = ("base", "data", "name")

    def __init__(self, base: int, data: np.ndarray, name: str):
        self.base = base
        self.data = data
        self.name = name

    @property
    def end(self) -> int:
        return self.base + self.data.size


class GlobalMemory:
    """Device global memory: a set of allocations in the generic address space."""

    def __init__(self):
        self._bases: list[int] = []
        self._allocs: list[Allocation] = []
        self._next = GLOBAL_BASE

    def allocate(self, nbytes: int, name: str = "buffer", align: int = GLOBAL_ALIGN) -> Allocation:
        base = (self._next + align - 1) // align * align
        alloc = Allocation(base, np.zeros(max(int(nbytes), 0), dtype=np.uint8), name)
        self._bases.append(base)
        self._allocs.append(alloc)
        self._next = base + max(int(nbytes), 1) + GLOBAL_GUARD
        return alloc

    def allocation_of(self, addr: int) -> Allocation | None:
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0 and addr < self._allocs[i].end:
            return self._allocs[i]
        return None

    def describe(self, addr: int) -> str:
        a = self.allocation_of(addr)
        if a is not None:
            return f"0x{addr:x} ({a.name}+{addr - a.base})"
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0:
            a = self._allocs[i]
            return f"0x{addr:x} (offset {addr - a.base} of {a.name}, which is only {a.data.size} bytes)"
        return f"0x{addr:x} (not in any allocation)"

    def _locate(self, addrs: np.ndarray, nbytes: int):
        """Map each address to (allocation index, offset); fault on anything not wholly inside one allocation."""
        bases = np.asarray(self._bases, dtype=np.uint64)
        idx = np.searchsorted(bases, addrs, side="right").astype(np.int64) - 1
        ok = idx >= 0
        offs = np.zeros(addrs.shape, dtype=np.int64)
        sizes = np.asarray([a.data.size for a in self._allocs], dtype=np.int64)
        if len(sizes):
            safe = np.where(ok, idx, 0)
            offs = (addrs - bases[safe]).astype(np.int64)
            ok &= (offs + nbytes) <= sizes[safe]
        return idx, offs, ok

    def read(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """Bytes at each address: shape (len(addrs), nbytes).  Faults name the first bad lanes."""
        addrs = np.asarray(addrs, dtype=np.uint64)
        out = np.empty((addrs.size, nbytes), dtype=np.uint8)
        idx, offs, ok = self._locate(addrs, nbytes)
        if not ok.all():
            bad = np.nonzero(~ok)[0]
            raise MemoryFault(f"out-of-bounds global read of {nbytes} bytes at "
                              f"{self.describe(int(addrs[bad[0]]))}",
                              expected="every address inside a buffer passed to the kernel")
        rng = np.arange(nbytes)
        for i in np.unique(idx):
            sel = idx == i
            out[sel] = self._allocs[i].data[offs[sel][:, None] + rng]
        return out

    def write(self, addrs: np.ndarray, data: np.ndarray) -> None:
        """Write rows of ``data`` (shape (len(addrs), nbytes)) in lane order (later lanes win)."""
        addrs = np.asarray(addrs, dtype=np.uint64)
        nbytes = data.shape[1]
        idx, offs, ok = self._locate(addrs, nbytes)
        if not ok.all():
            bad = np.nonzero(~ok)[0]
            raise MemoryFault(f"out-of-bounds global write of {nbytes} bytes at "
                              f"{self.describe(int(addrs[bad[0]]))}",
                              expected="every address inside a buffer passed to the kernel")
        rng = np.arange(nbytes)
        for i in np.unique(idx):
            sel = idx == i
            self._allocs[i].data[offs[sel][:, None] + rng] = data[sel]


class FlatMemory:
    """A contiguous byte array addressed by offset (one CTA's SMEM, one thread's local memory)."""

    def __init__(self, size: int, name: str):
        self.data = np.zeros(int(size), dtype=np.uint8)
        self.name = name

    @property
    def size(self) -> int:
        return self.data.size

    def check(self, offs: np.ndarray, nbytes: int, what: str) -> None:
        offs = np.asarray(offs, dtype=np.int64)
        bad = (offs < 0) | (offs + nbytes > self.data.size)
        if bad.any():
            o = int(offs[np.nonzero(bad)[0][0]])
            raise MemoryFault(f"out-of-bounds {self.name} {what} of {nbytes} bytes at offset 0x{o:x}; "
                              f"{self.name} is {self.data.size} bytes",
                              expected=f"offsets in [0, {self.data.size - nbytes}]")

    def read(self, offs: np.ndarray, nbytes: int) -> np.ndarray:
        offs = np.asarray(offs, dtype=np.int64)
        self.check(offs, nbytes, "read")
        return self.data[offs[:, None] + np.arange(nbytes)]

    def write(self, offs: np.ndarray, data: np.ndarray) -> None:
        offs = np.asarray(offs, dtype=np.int64)
        nbytes = data.shape[1]
        self.check(offs, nbytes, "write")
        self.data[offs[:, None] + np.arange(nbytes)] = data

    def read_bytes(self, off: int, nbytes: int) -> np.ndarray:
        self.check(np.asarray([off]), nbytes, "read")
        return self.data[off:off + nbytes]

    def write_bytes(self, off: int, data) -> None:
        data = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else \
            data.reshape(-1).view(np.uint8)
        self.check(np.asarray([off]), data.size, "write")
        self.data[off:off + data.size] = data


def split_shared(addrs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cluster rank, offset) of 32-bit ``shared::cluster`` addresses."""
    a = np.asarray(addrs, dtype=np.uint64)
    return (a >> np.uint64(SHARED_RANK_SHIFT)).astype(np.int64), (a & np.uint64(SHARED_OFFSET_MASK)).astype(np.int64)


def shared_address(rank: int, offset: int) -> int:
    return (rank << SHARED_RANK_SHIFT) | offset
