"""The agent interface: the one door through which asynchronous agents reach memory and report sync events.

DESIGN.md principles 4 and 13.  The warp side has :class:`tcsim.context.ExecContext`; the agents -- the TMA engine,
the tensor pipe, the cp.async unit (:class:`tcsim.agents.unit.AsyncUnit`), the tcgen05.st landing, the barrier and
cluster-barrier release -- have :class:`AgentPort`.  Every SMEM, DSMEM, global and TMEM access an agent performs
(the completion half of an async op: PTX ISA 9.1 §9.7.9.25 bulk and tensor copies, §9.7.9.25.3 cp.async,
§9.7.16 tcgen05) goes through a method here that

1. checks what the hardware faults on (a write over a live mbarrier or into an exited peer CTA); the memory-model
   ordering of the access (proxies, PTX ISA §8.6) is the race detector's (:mod:`tcsim.race.hb`), from the event,
2. performs it through the memory layer's raw methods (sim/memory.py, sim/tmem.py), and
3. publishes one :class:`tcsim.observe.MemAccess` (when the bus is active) carrying the op id of the async op being
   completed (``self.completing``), so an observer links the access to the op's :class:`~tcsim.observe.AsyncIssue`.

Sync events go through :meth:`AgentPort.sync`, :meth:`AgentPort.async_issue` and :meth:`AgentPort.async_complete`;
an agent's change of an mbarrier is one operation that changes it and reports it (:meth:`AgentPort.mbarrier_arrive`,
:meth:`AgentPort.mbarrier_complete_tx`).

A class using the port provides ``sim`` (the engine), ``env``, ``home`` (the CTA its events name by default) and
``completing`` (the op whose completion runs, or None), and sets the class attributes ``agent_name`` (the events'
``agent``), ``proxy`` ('async' for the TMA engine and tensor pipe, 'generic' for cp.async) and ``sync_head`` (which
of warp / pc / op open its sync records in the legacy trace format, :class:`tcsim.observe.SyncEvent`).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from tcsim.isa.errors import MemoryFault

from .. import memory as M
from ..observe import AsyncComplete, AsyncIssue, MemAccess, SyncEvent
from ..race.protocol import op_act
from ..tmem import tmem_of


def _ints(xs) -> tuple:
    """A tuple of Python ints (the event's addresses / lanes), built in one numpy pass."""
    if isinstance(xs, np.ndarray):
        return tuple(xs.astype(np.int64, copy=False).ravel().tolist())
    return tuple(int(x) for x in xs)


def distinct(addrs) -> np.ndarray:
    """The distinct values of ``addrs`` (int64), ascending: ``np.unique``, or where they span a range not much
    wider than their number (an operand tile's byte offsets in SMEM, a TMA box's rows) a mark per value of the
    range -- linear instead of a sort or a hash of every element."""
    a = np.asarray(addrs).astype(np.int64, copy=False).reshape(-1)
    if a.size < 2:
        return a
    d = np.diff(a)
    if (d > 0).all():                       # already strictly ascending
        return a
    lo, hi = int(a.min()), int(a.max())
    if hi - lo > 8 * a.size + 4096:
        return np.unique(a)
    mark = np.zeros(hi - lo + 1, dtype=bool)
    mark[a - lo] = True
    return np.flatnonzero(mark) + lo


def byte_runs(addrs, size: int) -> dict:
    """Group ``[a, a+size)`` ranges into maximal contiguous runs; returns {run length: [run starts]}."""
    out: dict = {}
    addrs = np.asarray(addrs)
    if addrs.size == 0:
        return out
    a = distinct(addrs)
    brk = np.nonzero(np.diff(a) != size)[0]
    starts = np.concatenate([[0], brk + 1])
    ends = np.concatenate([brk, [a.size - 1]])
    lens = (ends - starts + 1) * size
    firsts = a[starts]
    if (lens == lens[0]).all():
        out[int(lens[0])] = firsts.tolist()
        return out
    u, first = np.unique(lens, return_index=True)
    for k in np.argsort(first, kind="stable"):          # run lengths in the order they first occur
        out[int(u[k])] = firsts[lens == u[k]].tolist()
    return out


def tmem_runs(addrs: np.ndarray) -> tuple:
    """TMEM cell addresses (``lane << 16 | column``, in order) as (first cell of each run, columns per run): runs of
    consecutive columns of one lane, when they all have the same length (an MMA's D block: one run per lane);
    else every cell alone (``addrs``, 1).  The event then lists one address per run with ``size`` = 4 bytes per
    column (:class:`tcsim.observe.MemAccess`): the same cells, without one Python int per cell."""
    n = addrs.size
    if n < 2:
        return addrs, 1
    brk = np.flatnonzero(np.diff(addrs) != 1)          # a new run: another lane, or a gap in the columns
    nruns = brk.size + 1
    if n % nruns:
        return addrs, 1
    ncols = n // nruns
    if ncols == 1 or (brk.size and ((brk + 1) % ncols).any()) or ((addrs[::ncols] & 0xFFFF) + ncols > 0x10000).any():
        return addrs, 1
    return addrs[::ncols], ncols


class AgentPort:
    """The memory and event door of an async agent (module docstring); mixed into each agent class."""

    agent_name: ClassVar[str] = "agent"
    proxy: ClassVar[str] = "async"
    sync_head: ClassVar[tuple] = ("warp", "op")
    #: how a write into an exited peer CTA's SMEM names the writer
    writer_name: ClassVar[str] = "TMA"

    # -------------------------------------------------------------------------------------------- events
    def _op_id(self):
        return None if self.completing is None else self.completing.op_id

    def _publish_mem(self, op: str, space: str, cta, addrs, size: int, lanes=(), *, warp=None, pc=None,
                     op_id=None, traced: bool = True) -> None:
        self.sim.bus.publish(MemAccess(self.env.now, cta.ctaid, self.agent_name, op=op, space=space,
                                       proxy=self.proxy, warp=warp, pc=pc, addrs=_ints(addrs),
                                       size=int(size), lanes=_ints(lanes),
                                       op_id=self._op_id() if op_id is None else op_id, traced=traced))

    def _publish_ranges(self, op, space, cta, offsets, size, lanes, runs, traced, base=0):
        """One event for ``size``-byte ranges at ``offsets`` (+``base``), or (``runs``) one per run length of the
        maximal contiguous runs they form."""
        if runs:
            for n, starts in byte_runs(offsets, size).items():
                self._publish_mem(op, space, cta, [base + s for s in starts], n, traced=traced)
        else:
            self._publish_mem(op, space, cta, np.asarray(offsets, dtype=np.int64) + base, size, lanes,
                              traced=traced)

    def sync(self, op: str, cta=None, *, op_id=None, traced: bool = True, **detail) -> None:
        """Publish sync event ``op`` (``detail``: its op-specific fields, in record order) about ``cta``."""
        bus = self.sim.bus
        if bus.active:
            c = self.home if cta is None else cta
            bus.publish(SyncEvent.make(self.env.now, c.ctaid, self.agent_name, op, op_id=op_id,
                                       head=self.sync_head, traced=traced, **detail))

    # -------------------------------------------------------------------------------------------- mbarriers
    # The state changes an agent makes to an mbarrier (:class:`tcsim.mbarrier_state.MBarrier`) of ``cta``: each applies
    # the change and publishes its sync event, plus 'mbarrier.phase' when it completed the phase (PTX ISA 9.1
    # §9.7.13.15.4).  ``at``: the fields naming the barrier in the record (``addr=...`` or ``mbarrier=..., lane=...``);
    # ``detail``: the record's fields after the change's own ones.
    def _protocol_act(self, cta):
        """The async op being completed (or this agent) as the actor of a protocol record (tcsim.race.protocol)."""
        op = self.completing
        home = self.home if self.home is not None else cta
        if op is None:
            return op_act(None, self.agent_name, self.env.now, home.ctaid)
        return op_act(op, self.agent_name, self.env.now, home.ctaid)

    def _mbarrier_phase(self, cta, mb, before: int, at: dict, op_id, traced: bool) -> None:
        if mb.phase != before:
            self.sim.protocol.on_phase(cta, mb, before, self.env.now)
            self.sync("mbarrier.phase", cta, op_id=op_id, traced=traced, **at, phase=mb.phase)

    def mbarrier_arrive(self, cta, mb, *, at: dict, count: int = 1, op_id=None, phase_traced: bool = True,
                        **detail) -> int:
        """arrive-on(``count``) (§9.7.13.15.5) by this agent, e.g. a ``tcgen05.commit``'s arrive (§9.7.16.9.2) or
        the asynchronous arrive of ``cp.async.mbarrier.arrive``; returns the phase it belonged to.
        ``phase_traced``: whether the JSONL trace writes the phase completion (the pre-issue-14 trace did not for
        the 'lsu' arrive)."""
        before = mb.phase
        prot = self.sim.protocol
        act = self._protocol_act(cta)
        prot.check_arrive(act, cta, mb, count)
        mb.apply_arrive(count)
        prot.on_arrive(act, cta, mb, before, count)
        self.sync("mbarrier.arrive", cta, op_id=op_id, **at, count=count, phase=before, **detail)
        self._mbarrier_phase(cta, mb, before, at, op_id, phase_traced)
        return before

    def mbarrier_complete_tx(self, cta, mb, nbytes: int, *, at: dict, op_id=None, **detail) -> None:
        """complete-tx(``nbytes``) (§9.7.13.15.7) by this agent, e.g. a bulk copy's bytes landing (§9.7.9.25)."""
        before = mb.phase
        self.sim.protocol.on_complete_tx(self._protocol_act(cta), cta, mb, nbytes, op=self.completing,
                                         foreign=cta is not self.home)
        mb.apply_complete_tx(nbytes)
        self.sync("mbarrier.complete_tx", cta, op_id=op_id, **at, bytes=int(nbytes), tx=mb.tx, phase=before,
                  **detail)
        self._mbarrier_phase(cta, mb, before, at, op_id, True)

    def _async_event(self, cls, op_name, op, cta, detail):
        bus = self.sim.bus
        if bus.active:
            c = self.home if cta is None else cta
            w = op.warp
            line = None if op.loc is None else op.loc.line
            bus.publish(cls.make(self.env.now, c.ctaid, self.agent_name, op_name, op_id=op.op_id, head=self.sync_head,
                                 line=line,
                                 typed=dict(unit=self.agent_name, what=op.what, issuer_pc=op.pc,
                                            issuer_warp=w if isinstance(w, int) or w is None else w.id),
                                 **detail))

    def async_issue(self, op, cta=None, **detail) -> None:
        """``op`` entered this unit: give it its op id and publish an :class:`AsyncIssue`."""
        op.op_id = self.sim.bus.next_op_id()
        self._async_event(AsyncIssue, "async.issue", op, cta, detail)

    def async_complete(self, op, cta=None, **detail) -> None:
        self._async_event(AsyncComplete, "async.complete", op, cta, detail)

    # -------------------------------------------------------------------------------------------- warp registers
    def read_warp_regs(self, warp, names, *, pc: int | None = None, line: int | None = None) -> np.ndarray:
        """The 32-bit registers ``names`` of ``warp`` (all 32 lanes, shape (len(names), 32) uint32), read by the op
        being completed (``wgmma.mma_async`` reads its accumulator / A fragment in flight, PTX ISA 9.1
        §9.7.15.5.2); each read is published as a :class:`tcsim.observe.RegAccess` of this agent."""
        out = np.stack([np.asarray(warp.regs[n], dtype=np.uint32).copy() for n in names]) if names else \
            np.zeros((0, 32), dtype=np.uint32)
        self._publish_regs(warp, names, False, pc, line)
        return out

    def write_warp_regs(self, warp, names, values, *, pc: int | None = None, line: int | None = None) -> None:
        """Write ``values`` ((len(names), 32) uint32) into ``warp``'s 32-bit registers ``names`` (every lane): the
        completion of an async op whose destinations are registers (``wgmma.mma_async`` accumulators)."""
        for n, v in zip(names, values):
            reg = warp.regs[n]
            reg[:] = np.asarray(v, dtype=np.uint32).astype(reg.dtype, copy=False)
        self._publish_regs(warp, names, True, pc, line)

    def _publish_regs(self, warp, names, write, pc, line) -> None:
        bus = self.sim.bus
        if bus.active and bus.wants("reg") and not bus.reg_warp_only:
            from ..observe import RegAccess
            lanes = tuple(range(32))
            rn = bus.reg_names
            for n in names:
                if rn is not None and n not in rn:
                    continue
                bus.publish(RegAccess(self.env.now, warp.cta.ctaid, self.agent_name, warp=warp.id, pc=pc,
                                      line=line, reg=n, write=write, lanes=lanes))

    # -------------------------------------------------------------------------------------------- SMEM / DSMEM
    def smem_space(self, cta) -> str:
        """The state space an access to ``cta``'s SMEM is reported in: its own CTA's or a peer's (DSMEM)."""
        return "shared::cta" if cta is self.home else "shared::cluster"

    def read_smem(self, cta, offs, nbytes: int, *, reader: str | None = None, issued_at: float = 0.0,
                  runs: bool = False, unique: bool = False) -> np.ndarray:
        """``nbytes`` at each CTA-relative offset of ``cta``'s SMEM (rows, shape (len(offs), nbytes)).
        (``reader`` / ``issued_at`` name the async reader; the proxy check is the race detector's.)  The event lists each offset (``unique``: each distinct one; ``runs``: contiguous
        runs)."""
        offs = np.asarray(offs, dtype=np.int64).reshape(-1)
        rows = cta.smem.read_rows(offs, nbytes)
        if self.sim.bus.active and offs.size:
            self._publish_ranges("ld", self.smem_space(cta), cta, distinct(offs) if unique else offs, nbytes, (),
                                 runs, True, base=M.shared_address(cta.rank, 0))
        return rows

    def write_smem(self, cta, offs, rows: np.ndarray, *, who: str, pc: int | None = None, lanes=(),
                   runs: bool = False) -> None:
        """Row ``i`` of ``rows`` into ``cta``'s SMEM at offset ``offs[i]``.  ``who`` names the writer if it
        overwrites a live mbarrier; ``pc`` is the issuing instruction (recorded for a generic-proxy write)."""
        offs = np.asarray(offs, dtype=np.int64).reshape(-1)
        nbytes = rows.shape[1]
        if cta.exited and cta is not self.home:
            raise MemoryFault(f"{self.writer_name} write into the shared memory of {cta.label}, which has already "
                              f"exited", expected="peer CTAs to stay resident until their copies complete")
        self.sim.check_mbarrier_overlap(cta, offs, nbytes, write=True, who=who)
        cta.smem.write_rows(offs, rows)
        if self.sim.bus.active and offs.size:
            self._publish_ranges("st", self.smem_space(cta), cta, offs, nbytes, lanes, runs, True,
                                 base=M.shared_address(cta.rank, 0))

    # -------------------------------------------------------------------------------------------- global
    def read_global(self, addrs, nbytes: int, *, lanes=(), counts=None, runs: bool = False,
                    traced: bool = True) -> np.ndarray:
        """``nbytes`` at each global address (rows).  ``counts``: read only ``counts[i] <= nbytes`` bytes of row
        ``i`` and zero-fill the rest (cp.async src-size; rows with count 0 read nothing)."""
        addrs = np.asarray(addrs, dtype=np.uint64).reshape(-1)
        gm = self.sim.gmem
        if counts is None:
            rows = gm.read_rows(addrs, nbytes)
            read = np.ones(addrs.size, dtype=bool)
        else:
            counts = np.asarray(counts)
            rows = np.zeros((addrs.size, nbytes), dtype=np.uint8)
            full = counts == nbytes
            if full.any():
                rows[full] = gm.read_rows(addrs[full], nbytes)
            for i in np.nonzero((counts > 0) & ~full)[0]:
                rows[i, :counts[i]] = gm.read_rows(addrs[i:i + 1], int(counts[i]))[0]
            read = counts > 0
        if self.sim.bus.active and read.any():
            lanes = np.asarray(lanes, dtype=np.int64)
            self._publish_ranges("ld", "global", self.home, addrs[read], nbytes, lanes[read] if lanes.size else (),
                                 runs, traced)
        return rows

    def write_global(self, addrs, rows: np.ndarray, *, op: str = "st", runs: bool = False) -> None:
        """Row ``i`` of ``rows`` at global address ``addrs[i]`` (``op``: 'st', or 'red' for a reduction's
        read-modify-write)."""
        addrs = np.asarray(addrs, dtype=np.uint64).reshape(-1)
        self.sim.gmem.write_rows(addrs, rows)
        if self.sim.bus.active and addrs.size:
            self._publish_ranges(op, "global", self.home, addrs, rows.shape[1], (), runs, True)

    # -------------------------------------------------------------------------------------------- TMEM
    def read_tmem(self, cta, lanes, cols, *, cells=None, traced: bool = True) -> np.ndarray:
        """Words of ``cta``'s TMEM cells ``(lanes, cols)`` (index arrays, broadcast together).  The event lists
        ``cells`` (``(lane, column)`` pairs) if given, else every cell read, row-major."""
        tm = tmem_of(cta)
        words = tm.read_cells(lanes, cols)
        if self.sim.bus.active:
            self._publish_tmem("ld", cta, lanes, cols, cells, traced)
        return words

    def write_tmem(self, cta, lanes, cols, values) -> None:
        """Store ``values`` into ``cta``'s TMEM cells ``(lanes, cols)``."""
        tmem_of(cta).write_cells(lanes, cols, values)
        if self.sim.bus.active:
            self._publish_tmem("st", cta, lanes, cols, None, True)

    def land_tmem_store(self, cta, st) -> None:
        """A staged ``tcgen05.st`` (:class:`tcsim.tmem.PendingStore`) lands in ``cta``'s TMEM."""
        tmem_of(cta).land_store(st)
        if self.sim.bus.active:
            addrs = ((np.asarray(st.lanes, dtype=np.int64) & 0xFFFF) << 16) | \
                (np.asarray(st.cols, dtype=np.int64) & 0xFFFF)           # make_taddr, vectorised
            starts, ncols = tmem_runs(addrs)
            self._publish_mem("st", "tmem", cta, starts, 4 * ncols, warp=st.warp.id, pc=st.pc, op_id=st.op_id)

    def _publish_tmem(self, op, cta, lanes, cols, cells, traced):
        if cells is None:
            ll, cc = np.broadcast_arrays(np.asarray(lanes, dtype=np.int64), np.asarray(cols, dtype=np.int64))
            addrs = (ll.ravel() << 16) | cc.ravel()
        else:
            addrs = np.fromiter(((int(l) << 16) | int(c) for l, c in cells), dtype=np.int64, count=len(cells))
        starts, ncols = tmem_runs(addrs)
        self._publish_mem(op, "tmem", cta, starts, 4 * ncols, traced=traced)


class SyncPort(AgentPort):
    """The port of an agent that only reports sync events and owns no simpy process: the barrier and
    cluster-barrier release (agents 'barrier', 'cluster-barrier') and the asynchronous arrive of
    ``cp.async.mbarrier.arrive`` (agent 'lsu')."""

    def __init__(self, sim, agent_name: str, sync_head: tuple, home=None):
        self.sim = sim
        self.env = sim.env
        self.agent_name = agent_name
        self.sync_head = sync_head
        self.home = home
        self.completing = None


__all__ = ["AgentPort", "SyncPort", "byte_runs", "tmem_runs"]
