"""Generic-proxy writes to shared memory that the async proxy reads without a proxy fence in between.

PTX ISA 9.1 §8.6 (proxies) and §9.7.13.4 (fence.proxy.async): the TMA engine and the tensor pipe access
shared memory through the *async proxy*.  Data a thread wrote with ordinary instructions (st.shared,
stmatrix, atomics: the *generic proxy*) is only guaranteed to be seen by a later async-proxy read (a TMA store's
source, a shared -> cluster bulk copy, a tcgen05.mma / tcgen05.cp operand) when a ``fence.proxy.async``
(``.shared::cta`` / ``.shared::cluster`` / no state space) lies between the write and the issue of the read.
Without it the hardware may read stale bytes -- the bug the seed's TMA scatter write-up warns about.

:class:`GenericWrites` (one per CTA, created on the first generic write) keeps a bitmap of the SMEM bytes
written through the generic proxy since the last proxy fence that covers them, and for each 16-byte granule
the instruction (pc) and cycle of the last such write.  A proxy fence executed by any thread of the CTA clears
the CTA's bitmap (a ``.shared::cluster`` fence: every CTA of the cluster); an async-proxy write (a TMA load)
clears the bytes it writes.  An async-proxy read that finds bytes still marked stops the run with a
:class:`~tcsim.isa.errors.SyncError` naming the write and the reader.

The check is conservative in one direction only: a fence by *any* thread clears the marks, even a thread that
is not ordered after the writer, so some missing fences go unreported, but a properly fenced kernel is never
reported.  A write that lands *after* the reader was issued (overwriting a TMA store's source before
``cp.async.bulk.wait_group.read``) is reported as what it is.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.errors import SyncError

GRANULE = 16


class GenericWrites:
    def __init__(self, size: int):
        self.unfenced = np.zeros(size, dtype=bool)
        self.pc = np.full(-(-size // GRANULE), -1, dtype=np.int32)
        self.cycle = np.zeros(-(-size // GRANULE), dtype=np.float64)
        self.any = False

    @staticmethod
    def of(cta) -> "GenericWrites":
        if cta.generic_writes is None:
            cta.generic_writes = GenericWrites(cta.smem.size)
        return cta.generic_writes

    def record(self, offs: np.ndarray, nbytes: int, pc: int, cycle: float) -> None:
        """Generic-proxy writes of ``nbytes`` at each CTA-relative offset in ``offs`` (already bounds-checked)."""
        offs = np.asarray(offs, dtype=np.int64).reshape(-1)
        if offs.size == 0:
            return
        idx = (offs[:, None] + np.arange(nbytes, dtype=np.int64)).reshape(-1)
        self.unfenced[idx] = True
        g = np.unique(idx // GRANULE)
        self.pc[g] = pc
        self.cycle[g] = cycle
        self.any = True

    def overwritten(self, offs: np.ndarray, nbytes: int) -> None:
        """The async proxy wrote these bytes (a TMA load): what an async reader sees there is no longer a generic
        write."""
        if self.any:
            offs = np.asarray(offs, dtype=np.int64).reshape(-1)
            self.unfenced[(offs[:, None] + np.arange(nbytes, dtype=np.int64)).reshape(-1)] = False

    def fence(self) -> None:
        if self.any:
            self.unfenced[:] = False
            self.any = False

    def check(self, cta, offs: np.ndarray, size: int, reader: str, issued_at: float, program) -> None:
        """Raise when any of the ``size``-byte ranges at ``offs`` holds an unfenced generic write."""
        if not self.any:
            return
        offs = np.asarray(offs, dtype=np.int64).reshape(-1)
        idx = (offs[:, None] + np.arange(size, dtype=np.int64)).reshape(-1)
        hit = idx[self.unfenced[idx]]
        if hit.size == 0:
            return
        first = int(hit.min())
        g = first // GRANULE
        pc = int(self.pc[g])
        ins = program.body[pc] if 0 <= pc < len(program.body) else None
        writer = f"`{ins}` at {ins.loc}" if ins is not None else "a generic-proxy write"
        when = float(self.cycle[g])
        nbad = int(np.unique(hit).size)
        if when > issued_at:
            raise SyncError(f"{reader} read {nbad} byte(s) of {cta.label}'s shared memory (first at offset "
                            f"0x{first:x}) that {writer} overwrote at cycle {when:g}, after the read was issued at "
                            f"cycle {issued_at:g}: the source changed while the asynchronous read was in flight",
                            expected="cp.async.bulk.wait_group.read (or the mbarrier / tcgen05.commit that "
                                     "completes the reader) before writing its source again, then "
                                     "fence.proxy.async")
        raise SyncError(f"{reader} read {nbad} byte(s) of {cta.label}'s shared memory (first at offset 0x{first:x}) "
                        f"written through the generic proxy by {writer} (cycle {when:g}) with no fence.proxy.async "
                        f"between the write and the asynchronous read: the hardware may read stale data",
                        expected="fence.proxy.async.shared::cta by the writing threads after their writes (then the "
                                 "barrier that orders them before the issuing thread) -- PTX ISA §9.7.13.4")


def fence_proxy_async(ctx, proxy: str) -> None:
    """Effect of an executed ``fence.proxy.async{.shared::cta|.shared::cluster}`` (``proxy`` as fence.py
    names it) on the marks of the executing CTA (cluster form: every CTA of the cluster)."""
    if proxy in ("async", "async.shared::cta"):
        ctas = [ctx.cta]
    elif proxy == "async.shared::cluster":
        ctas = list(ctx.cluster.ctas)
    else:
        return
    for cta in ctas:
        gw = cta.generic_writes
        if gw is not None:
            gw.fence()


def async_write(cta, offs, size: int) -> None:
    """Called by an async-proxy writer of ``cta``'s SMEM (TMA loads)."""
    gw = cta.generic_writes
    if gw is not None:
        gw.overwritten(offs, size)


def check_async_read(engine, cta, offs, size: int, reader: str, issued_at: float) -> None:
    """Called by an async-proxy reader of ``cta``'s SMEM (TMA engine, tensor pipe) when it reads."""
    gw = cta.generic_writes
    if gw is not None:
        gw.check(cta, offs, size, reader, issued_at, engine.sim.program)
