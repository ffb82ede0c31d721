"""The Tensor Memory Accelerator (TMA) engine of one CTA: a simpy process fed by a simpy Store.

PTX ISA 9.1 §9.7.9.25.4 (bulk copy), §9.7.9.25.5 (tensor copy), §9.7.9.25.6 (bulk async-group completion);
tma.md §5.  DESIGN.md principle 5: an async operation has an *issue half* and a *completion half*.  The issue
half runs in the semantics function of the issuing warp (``sim/semantics/bulk_copy.py``, ``bulk_tensor.py``):
it reads and checks every operand and captures what the copy needs (addresses, the decoded tensor map,
coordinates, the mbarrier).  It then submits a :class:`TmaOp` here.  This engine decides *when* the op lands;
the op's callables decide *what* happens:

* ``read()`` reads the source bytes (global for loads, SMEM for stores) and returns them;
* ``write(payload)`` writes the destination and signals (complete-tx on mbarriers for loads).

Timing (every number is a field of :class:`TmaParams`, a view of the arch config's ``tma_latency``,
``tma_bytes_per_clk`` and ``tma_tensor_extra``): the engine serves ops in FIFO order (queueing), each occupying
it for ``ceil(nbytes / bytes_per_cycle)`` cycles (at least 1; bandwidth).  Every op completes ``latency`` cycles
after its occupancy ends (per-request latency; tensor-map ops add ``tensor_extra``, and with the timing model on
an op whose global source lines are touched for the first time adds the DRAM latency over L2's,
:meth:`tcsim.timing.model.TimingModel.tma_extra_latency`; the functional model adds nothing), so a copy of ``n``
bytes issued to an idle engine completes after ``latency + ceil(n / bytes_per_cycle)`` cycles, and ops complete
in issue order.  On sm_90a with timing on, a load whose requests queue behind the SM's global stores completes
later still (:meth:`tcsim.timing.model.TimingModel.tma_store_delay`; its ``async.complete`` event carries
``store_wait``, the cycles, and the timing report's ``delays`` the totals).  A multicast op reads its source once
and writes every destination CTA at its completion (the fan-out costs no extra engine time).  The numbers come
from the simulation's arch config: the target's with timing on, the functional preset's
(:data:`tcsim.timing.params.UNTIMED`) with it off; a launch's ``tma_params`` replace them in that config
(:meth:`tcsim.timing.params.ArchConfig.with_units`).  At completion the op reads its source (global for loads,
SMEM for stores: ``read_done``, what ``cp.async.bulk.wait_group.read`` waits for, fires then), writes its
destination and signals (``done``).  The source read and the completion coincide.
Because data moves only at those times, a consumer that reads SMEM before waiting on the mbarrier really sees
stale data, and a kernel that overwrites a store's source before ``wait_group.read`` really stores the new
data.

All TMA memory traffic goes through the agent interface (:class:`tcsim.agents.port.AgentPort`) and is reported on
the observation bus as ``mem`` events with ``agent='tma'`` and ``proxy='async'``; complete-tx as ``sync`` events
``mbarrier.complete_tx`` (plus ``mbarrier.phase`` when it completes a phase), issue/completion as ``async.issue`` /
``async.complete``.

Errors found at completion time (an mbarrier invalidated in between, a peer CTA that exited) stop the run with
the diagnostic located at the issuing instruction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable


from ..timing.params import UNTIMED
from .unit import AsyncUnit, LatencyKnob


@dataclass(frozen=True)
class TmaParams:
    """Timing of the TMA engine (cycles): a view of the arch config's ``tma_*`` parameters
    (:meth:`from_config`); the defaults are the functional preset's (:data:`tcsim.timing.params.UNTIMED`)."""

    latency: float = UNTIMED["tma_latency"].value        # end of an op's occupancy -> its completion
    bytes_per_cycle: float = UNTIMED["tma_bytes_per_clk"].value   # occupancy = ceil(bytes / bytes_per_cycle)
    tensor_extra: float = UNTIMED["tma_tensor_extra"].value     # extra latency of a tensor-map op over a bulk copy

    @classmethod
    def from_config(cls, cfg) -> "TmaParams":
        return cls(latency=cfg.tma_latency, bytes_per_cycle=cfg.tma_bytes_per_clk, tensor_extra=cfg.tma_tensor_extra)

    def config_values(self) -> dict:
        """The arch-config parameters these numbers stand for (:meth:`tcsim.timing.params.ArchConfig.with_units`)."""
        return {"tma_latency": self.latency, "tma_bytes_per_clk": self.bytes_per_cycle,
                "tma_tensor_extra": self.tensor_extra}


@dataclass(eq=False)
class TmaOp:
    """One bulk operation in flight.

    ``kind``: 'load' | 'store' | 'reduce' | 'prefetch'.  ``issuer`` names the issuing thread (for diagnostics),
    ``loc`` is the issuing instruction's source location.  ``read_done`` / ``done`` are simpy events the
    engine triggers when the sources have been read / when the op completed (bulk async-groups wait on
    them).
    """

    kind: str
    what: str
    nbytes: int
    read: Callable[[], object]
    write: Callable[[object], None]
    issuer: str = ""
    loc: object = None
    warp: int | None = None       # issuing warp id, lane and pc (for observers)
    lane: int | None = None
    pc: int | None = None
    op_id: int | None = None      # set at issue (links its observation events)
    read_done: object = None
    done: object = None
    issued_at: float = 0.0
    extra: dict = field(default_factory=dict)


class TmaEngine(AsyncUnit):
    """The TMA unit of one CTA (``ctx.agent('tma', factory, key=cta)``)."""

    agent_name = "tma"
    proxy = "async"

    def __init__(self, sim, cta, cfg):
        self.cta = cta
        self.bytes_moved = 0
        self.busy_cycles = 0
        self.last_done = 0.0
        self.last_op: TmaOp | None = None
        self.store_wait_cycles = 0.0      # (timing, sm_90a) cycles loads waited behind the SM's global stores
        self.store_wait_ops = 0
        super().__init__(sim, TmaParams.from_config(cfg))
        #: the exploration knob (tma_extra_latency; :mod:`tcsim.explore`)
        self.knob = LatencyKnob(cfg, "tma", self.label)

    @property
    def label(self) -> str:
        return f"TMA engine of {self.cta.label}"

    @property
    def home(self):
        return self.cta

    @classmethod
    def of(cls, ctx, cta=None) -> "TmaEngine":
        """The engine of ``cta`` (default: the executing CTA), created on first use with the simulation's arch
        config."""
        cta = ctx.cta if cta is None else cta
        return ctx.agent("tma", lambda sim: cls(sim, cta, sim.arch_config), key=cta)

    # ------------------------------------------------------------------------------------------ issue
    def submit(self, op: TmaOp) -> TmaOp:
        op.read_done = self.env.event()
        op.done = self.env.event()
        self.enqueue(op)
        self.async_issue(op, what=op.what, op_kind=op.kind, bytes=op.nbytes, issuer=op.issuer,
                         issuer_warp=op.warp, issuer_lane=op.lane, issuer_pc=op.pc)
        return op

    # ------------------------------------------------------------------------------------------ service
    def occupancy(self, nbytes: int) -> int:
        return max(1, math.ceil(nbytes / self.params.bytes_per_cycle))

    def _serve(self):
        while True:
            op = yield self.queue.get()
            occ = self.occupancy(op.nbytes)
            self.busy_cycles += occ
            self.env.process(self._complete(op, occ))
            yield self.env.timeout(occ)

    def latency(self, op: TmaOp) -> float:
        """Cycles from the end of ``op``'s occupancy to its completion: the fixed latency, plus the tensor-map
        extra for tensor-map ops, plus what the timing model adds (first touch of its global lines in DRAM), plus
        the exploration knob's extra (at least 1 cycle in all)."""
        lat = self.params.latency + (self.params.tensor_extra if "tensor_map" in op.extra else 0)
        return max(1, lat + self.sim.timing.tma_extra_latency(op) + self.knob.extra())

    def _complete(self, op: TmaOp, occ: int):
        # completions stay in issue order (an op never overtakes an earlier one of the same engine)
        start = self.env.now
        done = max(start + occ + self.latency(op), self.last_done)
        self.last_done = done
        prev, self.last_op = self.last_op, op
        yield self.env.timeout(done - self.env.now)
        # (sm_90a, timed) its requests queued behind the SM's global stores (known only now)
        extra = self.sim.timing.tma_store_delay(op, self.cta, start)
        if extra > 0:
            self.last_done = max(self.last_done, done + extra)
            self.store_wait_cycles += extra
            self.store_wait_ops += 1
            op.extra["store_wait"] = extra
            yield self.env.timeout(extra)
        if prev is not None and not prev.done.triggered:
            yield prev.done                 # a delayed earlier op still completes first
        payload = self.guarded(op, op.read)
        if self.sim.error is not None:
            return
        op.read_done.succeed()
        self.guarded(op, lambda: op.write(payload))
        if self.sim.error is not None:
            return
        self.retire()
        self.bytes_moved += op.nbytes
        waited = {"store_wait": op.extra["store_wait"]} if "store_wait" in op.extra else {}
        self.async_complete(op, what=op.what, op_kind=op.kind, bytes=op.nbytes, issuer=op.issuer,
                            issuer_warp=op.warp, issuer_lane=op.lane, issuer_pc=op.pc, **waited)
        op.done.succeed()

    # ------------------------------------------------------------------------------------------ mbarriers
    def aim(self, op: TmaOp, cta, offset: int) -> None:
        """``op`` (just submitted) will complete-tx its bytes on the mbarrier at SMEM ``offset`` of ``cta``: the
        protocol checker (:mod:`tcsim.race.protocol`) notes the phase they are aimed at (the barrier's current one),
        so a phase that completes before they land, or a deadlock that waits for them, names the copy."""
        self.sim.protocol.copy_issued(op, self.cta, cta, cta.mbarrier(offset), op.nbytes, self.env.now)

    def complete_tx(self, cta, offset: int, nbytes: int, what: str) -> None:
        """complete-tx(``nbytes``) on the mbarrier at SMEM ``offset`` of ``cta`` (release, cluster scope)."""
        self.mbarrier_complete_tx(cta, cta.mbarrier(offset), nbytes, at=dict(addr=offset), op_id=self._op_id(),
                                  what=what, issuer_cta=self.cta.ctaid)
