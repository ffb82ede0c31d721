"""Memories of the simulated machine and the address model.

Address model (tcsim's choice where the hardware encoding is not public):

* **Global** allocations live in the generic 64-bit space from ``GLOBAL_BASE`` upward, each 256-byte aligned,
  with a guard gap between them so an overrun faults instead of reading a neighbour.
* **Shared** state-space addresses are 32-bit.  The CTA of cluster rank ``r`` sees its own SMEM at
  ``(r << SHARED_RANK_SHIFT) | offset``; ``mapa`` swaps the rank bits.  The offset counts from the start of the
  CTA's shared window, whose first ``reserved`` bytes (0x400 on sm_90a / sm_100a) belong to the system: the
  first user byte is at offset 0x400, as on the H100 (:mod:`tcsim.address_map` holds the per-architecture
  numbers and their sources; tests/hw/golden_h100/address_layout.json the H100's record).  A ``.shared::cta``
  access must carry the executing CTA's own rank bits; an access to the reserved bytes is a located fault.
* **Generic** addresses of shared memory are ``SHARED_WINDOW + shared_address`` (a 4 GiB-aligned window, as on the
  GPU, whose driver picks the base per process); of local memory ``LOCAL_WINDOW + local address`` (per thread;
  the local address of a kernel's frame lies below the stack top, :meth:`tcsim.address_map.AddressMap.local_base`);
  of kernel parameters ``PARAM_WINDOW + offset`` (low bits as on the H100).  ``cvta`` converts between them.

Memories are plain ``numpy.uint8`` arrays; accesses are vectorised over the lanes of a warp.

The memory layer (this module, :mod:`tcsim.tmem` for TMEM, :mod:`tcsim.mbarrier_state` for mbarrier objects) is the
only code that touches a memory array (DESIGN.md principle 13, "one door").  Each memory keeps its bytes in a
private writable array and exposes ``data``, a read-only view of them for inspection (tests, the debugger): a write
through ``data`` raises ``ValueError``.  Simulated accesses go through the raw methods below (``read_rows`` /
``write_rows`` / ``read_range`` / ``write_range``), which only the two doors call: the warp's execution context
(:class:`tcsim.context.ExecContext`) and the agent interface (:class:`tcsim.agents.port.AgentPort`); they emit the
observation event of every access.  The host side (the launch copying arguments in) uses
:meth:`Allocation.upload`, the ``cudaMemcpy`` of the simulator.  tests/sim/test_one_door.py enforces this.
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
PARAM_WINDOW = 0x7C00_0028_0210     # tcsim.address_map.AddressMap.param_generic_base
CONST_WINDOW = 0x7B00_0000_0000
WINDOW_SIZE = 1 << 32
SHARED_RANK_SHIFT = 24
SHARED_OFFSET_MASK = (1 << SHARED_RANK_SHIFT) - 1


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class Allocation:
    """One global buffer: ``data`` is a read-only view of its bytes (:meth:`upload` writes them from the host)."""

    __slots__ = ("base", "_bytes", "data", "name")

    def __init__(self, base: int, nbytes: int, name: str):
        self.base = base
        self._bytes = np.zeros(max(int(nbytes), 0), dtype=np.uint8)
        self.data = _read_only(self._bytes)
        self.name = name

    @property
    def end(self) -> int:
        return self.base + self._bytes.size

    def upload(self, data, offset: int = 0) -> None:
        """Host -> device copy (``cudaMemcpy``) of ``data``'s bytes at ``offset`` (before or after a launch, never
        by the simulated kernel)."""
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if offset < 0 or offset + raw.size > self._bytes.size:
            raise MemoryFault(f"host copy of {raw.size} bytes at offset {offset} of {self.name}, which is "
                              f"{self._bytes.size} bytes")
        self._bytes[offset:offset + raw.size] = raw

    def download(self, nbytes: int | None = None) -> np.ndarray:
        """Device -> host copy of the first ``nbytes`` bytes (all by default)."""
        return self._bytes[:self._bytes.size if nbytes is None else int(nbytes)].copy()


class GlobalMemory:
    """Device global memory: a set of allocations in the generic address space."""

    def __init__(self):
        self._bases: list[int] = []
        self._allocs: list[Allocation] = []
        self._next = GLOBAL_BASE
        self._arrays = None         # (bases, sizes) as arrays, for _locate; rebuilt after an allocation

    def allocate(self, nbytes: int, name: str = "buffer", align: int = GLOBAL_ALIGN) -> Allocation:
        base = (self._next + align - 1) // align * align
        alloc = Allocation(base, nbytes, name)
        self._bases.append(base)
        self._allocs.append(alloc)
        self._arrays = None
        self._next = base + max(int(nbytes), 1) + GLOBAL_GUARD
        return alloc

    def allocations(self) -> list:
        """Every allocation, in address order."""
        return list(self._allocs)

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
        arrs = self._arrays
        if arrs is None:
            arrs = self._arrays = (np.asarray(self._bases, dtype=np.uint64),
                                   np.asarray([a._bytes.size for a in self._allocs], dtype=np.int64))
        bases, sizes = arrs
        idx = np.searchsorted(bases, addrs, side="right").astype(np.int64) - 1
        ok = idx >= 0
        offs = np.zeros(addrs.shape, dtype=np.int64)
        if len(sizes):
            safe = np.where(ok, idx, 0)
            offs = (addrs - bases[safe]).astype(np.int64)
            # an address 2^63 or more past the last base wraps to a negative offset: outside too
            ok &= (offs >= 0) & ((offs + nbytes) <= sizes[safe])
        return idx, offs, ok

    def read_rows(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
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
        if idx.size and idx.min() == idx.max():                 # (one allocation: the common case)
            return self._allocs[int(idx[0])]._bytes[offs[:, None] + rng]
        for i in np.unique(idx):
            sel = idx == i
            out[sel] = self._allocs[i]._bytes[offs[sel][:, None] + rng]
        return out

    def arrays(self) -> tuple:
        """(bases, byte arrays) of the allocations in address order, the arrays themselves (writable): for compiled
        group code that reads and writes in place with :meth:`read_rows` / :meth:`write_rows`'s checks replayed
        (tcsim.fast.vm, reached through the execution context's door, tcsim.context.group_global_arrays)."""
        return list(self._bases), [a._bytes for a in self._allocs]

    def peek(self, addr: int, nbytes: int) -> np.ndarray:
        """Inspection, not an access: a copy of ``nbytes`` at device address ``addr`` for a debugger or a report
        (no observation event, nothing a kernel does; the kernel's accesses go through the two doors)."""
        return self.read_rows(np.array([int(addr)], dtype=np.uint64), int(nbytes))[0].copy()

    def write_rows(self, addrs: np.ndarray, data: np.ndarray) -> None:
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
        if idx.size and idx.min() == idx.max():                 # (one allocation: the common case)
            self._allocs[int(idx[0])]._bytes[offs[:, None] + rng] = data
            return
        for i in np.unique(idx):
            sel = idx == i
            self._allocs[i]._bytes[offs[sel][:, None] + rng] = data[sel]


class FlatMemory:
    """A contiguous byte array addressed by offset (one CTA's SMEM window); ``data`` is a read-only view of the
    user bytes ``[base, end)``.  Offsets below ``base`` (the system-reserved bytes at the start of the window) and
    from ``end`` on fault."""

    def __init__(self, size: int, name: str, reserved: int = 0):
        self.base = int(reserved)
        self._bytes = np.zeros(self.base + int(size), dtype=np.uint8)
        self.data = _read_only(self._bytes[self.base:])
        self.name = name

    @property
    def size(self) -> int:
        """User bytes (static + dynamic shared memory)."""
        return self._bytes.size - self.base

    @property
    def end(self) -> int:
        """The offset one past the last user byte."""
        return self._bytes.size

    def check(self, offs: np.ndarray, nbytes: int, what: str) -> None:
        offs = np.asarray(offs, dtype=np.int64)
        end = self._bytes.size
        bad = (offs < self.base) | (offs + nbytes > end)
        if bad.any():
            o = int(offs[np.nonzero(bad)[0][0]])
            if 0 <= o < self.base:
                raise MemoryFault(f"{self.name} {what} of {nbytes} bytes at offset 0x{o:x}, in the "
                                  f"{self.base} system-reserved bytes [0, 0x{self.base:x}) of the shared window",
                                  expected=f"offsets in [0x{self.base:x}, 0x{end - nbytes:x}] (the user shared "
                                           f"memory starts at 0x{self.base:x})")
            raise MemoryFault(f"out-of-bounds {self.name} {what} of {nbytes} bytes at offset 0x{o:x}; "
                              f"{self.name} is {self.size} bytes at [0x{self.base:x}, 0x{end:x})",
                              expected=f"offsets in [0x{self.base:x}, 0x{end - nbytes:x}]")

    def read_rows(self, offs: np.ndarray, nbytes: int) -> np.ndarray:
        """``nbytes`` at each offset: a new array of shape (len(offs), nbytes)."""
        offs = np.asarray(offs, dtype=np.int64)
        self.check(offs, nbytes, "read")
        return self._bytes[offs[:, None] + np.arange(nbytes)]

    def write_rows(self, offs: np.ndarray, data: np.ndarray) -> None:
        """Row ``i`` of ``data`` (shape (len(offs), nbytes)) at ``offs[i]`` (later rows win)."""
        offs = np.asarray(offs, dtype=np.int64)
        nbytes = data.shape[1]
        self.check(offs, nbytes, "write")
        self._bytes[offs[:, None] + np.arange(nbytes)] = data

    def peek(self, off: int, nbytes: int) -> np.ndarray:
        """Inspection, not an access: a copy of the user bytes ``[off, off + nbytes)`` (window offsets) for a
        debugger or a report; bounds are checked as for an access, no observation event is made."""
        self.check(np.asarray([off]), nbytes, "read")
        return self._bytes[off:off + nbytes].copy()

    def read_range(self, off: int, nbytes: int) -> np.ndarray:
        """A copy of the bytes ``[off, off + nbytes)``."""
        self.check(np.asarray([off]), nbytes, "read")
        return self._bytes[off:off + nbytes].copy()

    def write_range(self, off: int, data) -> None:
        data = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else \
            data.reshape(-1).view(np.uint8)
        self.check(np.asarray([off]), data.size, "write")
        self._bytes[off:off + data.size] = data


_WORD = {2: np.uint16, 4: np.uint32, 8: np.uint64}


class StackedWindows:
    """Shared windows of many CTAs (:class:`FlatMemory` objects of one size) kept as rows of a few 2-D arrays, so
    that one gather reads (or one scatter writes) the lanes of a lockstep group of warps across CTAs (the fast
    tier, tcsim.fast).  :meth:`adopt` moves a window's bytes into the next row of the current block of ``block``
    rows (a window keeps its row for the whole run: nothing is moved again); ``which`` numbers the adopted
    windows in adoption order.  The accessors only move bytes: the caller checks bounds first."""

    def __init__(self, block: int):
        self.block = max(int(block), 1)
        self.blocks: list = []
        self.n = 0

    def adopt(self, mem: FlatMemory) -> int:
        """Move ``mem``'s bytes into a row (returns its index ``which``)."""
        b, r = divmod(self.n, self.block)
        if r == 0:
            self.blocks.append(np.zeros((self.block, mem._bytes.size), dtype=np.uint8))
        row = self.blocks[b][r]
        row[:] = mem._bytes
        mem._bytes = row
        mem.data = _read_only(row[mem.base:])
        self.n += 1
        return self.n - 1

    def read_rows(self, which: np.ndarray, offs: np.ndarray, nbytes: int) -> np.ndarray:
        """Rows of ``nbytes`` at ``offs[i]`` of window ``which[i]``."""
        cols = offs[:, None] + np.arange(nbytes)
        blk = self.block
        if len(self.blocks) == 1:
            return self.blocks[0][which[:, None], cols]
        out = np.empty((offs.size, nbytes), dtype=np.uint8)
        b = which // blk
        for j in np.unique(b):
            sel = b == j
            out[sel] = self.blocks[int(j)][(which[sel] - j * blk)[:, None], cols[sel]]
        return out

    def words_ok(self, nbytes: int) -> bool:
        """Whether :meth:`read_words` / :meth:`write_words` of ``nbytes`` words work (one block, rows of whole
        words)."""
        return len(self.blocks) == 1 and self.blocks[0].shape[1] % nbytes == 0

    def read_words(self, which: np.ndarray, offs: np.ndarray, nbytes: int) -> np.ndarray:
        """The ``nbytes``-byte words (unsigned) at the aligned offsets ``offs`` (k, m) of windows ``which`` (k,)."""
        words = self.blocks[0].view(_WORD[nbytes])
        return words[which[:, None], offs >> (nbytes.bit_length() - 1)]

    def write_words(self, which: np.ndarray, offs: np.ndarray, values: np.ndarray) -> None:
        """Word ``values[i, j]`` at the aligned offset ``offs[i, j]`` of window ``which[i, j]`` (the later element
        in row-major order wins)."""
        nbytes = values.dtype.itemsize
        words = self.blocks[0].view(_WORD[nbytes])
        words[which, offs >> (nbytes.bit_length() - 1)] = values

    def write_rows(self, which: np.ndarray, offs: np.ndarray, rows: np.ndarray) -> None:
        """Row ``i`` of ``rows`` at ``offs[i]`` of window ``which[i]`` (later rows win)."""
        cols = offs[:, None] + np.arange(rows.shape[1])
        blk = self.block
        if len(self.blocks) == 1:
            self.blocks[0][which[:, None], cols] = rows
            return
        b = which // blk
        for j in np.unique(b):
            sel = b == j
            self.blocks[int(j)][(which[sel] - j * blk)[:, None], cols[sel]] = rows[sel]


class LocalMemory:
    """The local memory of the 32 threads of one warp (PTX ISA §5.1.5): ``size`` bytes per lane at local addresses
    ``[base, base + size)`` (the kernel's frame below the stack top); ``data`` is a read-only (32, size) view."""

    def __init__(self, nlanes: int, size: int, base: int = 0):
        self._bytes = np.zeros((nlanes, int(size)), dtype=np.uint8)
        self.data = _read_only(self._bytes)
        self.base = int(base)

    @property
    def size(self) -> int:
        return self._bytes.shape[1]

    def _offsets(self, a, nbytes: int, what: str) -> np.ndarray:
        addrs = np.asarray(a).astype(np.int64)
        offs = addrs - self.base
        if (offs < 0).any() or (offs + nbytes > self.size).any():
            bad = int(addrs[np.nonzero((offs < 0) | (offs + nbytes > self.size))[0][0]])
            raise MemoryFault(f"out-of-bounds local {what} of {nbytes} bytes at local address 0x{bad:x}; the "
                              f"thread's local memory is {self.size} bytes at [0x{self.base:x}, "
                              f"0x{self.base + self.size:x})")
        return offs

    def read_rows(self, lanes: np.ndarray, a: np.ndarray, nbytes: int) -> np.ndarray:
        """``nbytes`` at local address ``a[i]`` of lane ``lanes[i]``'s local memory (rows)."""
        offs = self._offsets(a, nbytes, "read")
        return self._bytes[lanes[:, None], offs[:, None] + np.arange(nbytes)]

    def write_rows(self, lanes: np.ndarray, a: np.ndarray, rows: np.ndarray) -> None:
        nbytes = rows.shape[1]
        offs = self._offsets(a, nbytes, "write")
        self._bytes[lanes[:, None], offs[:, None] + np.arange(nbytes)] = rows


class CallParams:
    """The ``.param`` variables of one function's activations in a warp (PTX ISA §5.1.6.2 and the call ABI of §7):
    the call-site variables a caller declares for a ``call`` and, for a ``.func``, its parameters and return
    values.  Per variable: (32 lanes, size) bytes, zero until written.  ``sizes`` gives the declared size of each
    variable; an undeclared one gets :attr:`SIZE` bytes."""

    SIZE = 64

    def __init__(self, sizes: dict | None = None):
        self._sizes = dict(sizes or {})
        self._vars: dict[str, np.ndarray] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._vars or name in self._sizes

    def size_of(self, name: str) -> int:
        return self._sizes.get(name, self.SIZE)

    def _check(self, name: str, offset: int, n: int) -> None:
        size = self.size_of(name)
        if offset < 0 or offset + n > size:
            raise MemoryFault(f"access of {n} bytes at offset {offset} of .param variable {name}, which is "
                              f"{size} bytes", expected=f"offsets in [0, {size - n}]")

    def read_rows(self, name: str, offset: int, nbytes: int) -> np.ndarray:
        """(32, nbytes) bytes of variable ``name`` from ``offset`` (zeros for a variable never written)."""
        self._check(name, offset, nbytes)
        buf = self._vars.get(name)
        if buf is None:
            return np.zeros((32, nbytes), dtype=np.uint8)
        return buf[:, offset:offset + nbytes].copy()

    def write_rows(self, name: str, offset: int, rows: np.ndarray, mask: np.ndarray) -> None:
        """Rows of ``rows`` (32, n) into variable ``name`` at ``offset``, for the lanes of ``mask``."""
        n = rows.shape[1]
        self._check(name, offset, n)
        buf = self._vars.get(name)
        if buf is None:
            buf = self._vars[name] = np.zeros((32, self.size_of(name)), dtype=np.uint8)
        buf[mask, offset:offset + n] = rows[mask]

    def snapshot(self) -> dict:
        """A copy of every variable (a recursive call saves its callee's)."""
        return {k: v.copy() for k, v in self._vars.items()}

    def restore(self, snap: dict, lanes: np.ndarray) -> None:
        """Put back the lanes ``lanes`` (a mask) of a :meth:`snapshot` (variables written since are zeroed)."""
        for k, v in self._vars.items():
            old = snap.get(k)
            v[lanes] = 0 if old is None else old[lanes]


def no_local_memory(nbytes: int, what: str, a) -> MemoryFault:
    """The fault of a local access by a kernel that declares no local memory."""
    addrs = np.asarray(a).astype(np.int64)
    return MemoryFault(f"out-of-bounds local {what} of {nbytes} bytes at local address 0x{int(addrs.max()):x}; the "
                       f"kernel declares no local memory (0 bytes per thread)")


def read_image(image: np.ndarray, a, nbytes: int, name: str) -> np.ndarray:
    """``nbytes`` at each offset of a read-only state-space image (kernel parameters, constant bank)."""
    offs = np.asarray(a).astype(np.int64)
    if (offs < 0).any() or (offs + nbytes > image.size).any():
        raise MemoryFault(f"out-of-bounds read of {nbytes} bytes at offset 0x{int(offs.max()):x} in {name} "
                          f"({image.size} bytes)")
    return image[offs[:, None] + np.arange(nbytes)]


def split_shared(addrs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cluster rank, offset) of 32-bit ``shared::cluster`` addresses."""
    a = np.asarray(addrs, dtype=np.uint64)
    return (a >> np.uint64(SHARED_RANK_SHIFT)).astype(np.int64), (a & np.uint64(SHARED_OFFSET_MASK)).astype(np.int64)


def shared_address(rank: int, offset: int) -> int:
    return (rank << SHARED_RANK_SHIFT) | offset
