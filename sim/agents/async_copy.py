"""The non-bulk asynchronous copy path of one CTA (``cp.async``, SASS LDGSTS): global -> shared copies of 4, 8
or 16 bytes per thread that complete after the issuing instruction, in the generic proxy.

One :class:`AsyncCopyUnit` per CTA (``AsyncCopyUnit.of(ctx)``), one simpy process serving its queue: each
submitted :class:`AsyncCopyOp` (all executing lanes of one ``cp.async`` instruction) occupies the unit for
``issue_cycles`` and completes ``latency`` cycles later, when its ``complete`` callback moves the bytes (the
semantics module builds the callback; the issue half has already checked every address).  Ops of one unit
complete in issue order (also when the exploration knob ``cp_async_extra_latency`` moves them, :mod:`tcsim.explore`).  Timing numbers: the simulation's arch config's ``cp_async_latency`` (= ``l2_latency`` in
the targets' configs) and ``cp_async_issue_cycles`` (:class:`AsyncCopyParams`, a view of them); with timing off the
functional preset's; a launch's ``async_copy_params`` replace them in that config.

Observation: ``sync`` events ``async.issue`` / ``async.complete`` (``unit='cp.async'``) and the ``mem`` events of
the callback's accesses through the agent interface (:class:`tcsim.agents.port.AgentPort`; agent ``lsu``, proxy
``generic``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


from ..timing.params import UNTIMED
from .unit import AsyncUnit, LatencyKnob


@dataclass(frozen=True)
class AsyncCopyParams:
    """Timing of the cp.async path (cycles): a view of the arch config's ``cp_async_*`` parameters
    (:meth:`from_config`); the defaults are the functional preset's (:data:`tcsim.timing.params.UNTIMED`)."""

    latency: int = UNTIMED["cp_async_latency"].value           # occupancy end -> data in SMEM
    issue_cycles: int = UNTIMED["cp_async_issue_cycles"].value  # unit occupancy per instruction

    @classmethod
    def from_config(cls, cfg) -> "AsyncCopyParams":
        return cls(latency=int(cfg.cp_async_latency), issue_cycles=int(cfg.cp_async_issue_cycles))

    def config_values(self) -> dict:
        """The arch-config parameters these numbers stand for (:meth:`tcsim.timing.params.ArchConfig.with_units`)."""
        return {"cp_async_latency": self.latency, "cp_async_issue_cycles": self.issue_cycles}


@dataclass(eq=False)
class AsyncCopyOp:
    """One cp.async instruction's copies in flight (all its executing lanes)."""

    what: str
    nbytes: int                                   # bytes moved (all lanes)
    complete: Callable[[], None]
    issuer: str = ""
    loc: object = None
    warp: int | None = None
    pc: int | None = None
    op_id: int | None = None
    done: object = None
    issued_at: float = 0.0
    extra: dict = field(default_factory=dict)


class AsyncCopyUnit(AsyncUnit):
    """The cp.async unit of one CTA (its accesses: the generic proxy)."""

    agent_name = "lsu"
    proxy = "generic"

    def __init__(self, sim, cta, cfg):
        self.cta = cta
        self.last_done = 0.0
        super().__init__(sim, AsyncCopyParams.from_config(cfg))
        #: the exploration knob (cp_async_extra_latency; :mod:`tcsim.explore`)
        self.knob = LatencyKnob(cfg, "cp.async", self.label)

    @property
    def label(self) -> str:
        return f"cp.async unit of {self.cta.label}"

    @property
    def home(self):
        return self.cta

    @classmethod
    def of(cls, ctx) -> "AsyncCopyUnit":
        """The unit of the executing CTA, created on first use with the simulation's arch config."""
        cta = ctx.cta
        return ctx.agent("cp.async", lambda sim: cls(sim, cta, sim.arch_config), key=cta)

    def submit(self, op: AsyncCopyOp) -> AsyncCopyOp:
        op.done = self.env.event()
        self.enqueue(op)
        self.async_issue(op, unit="cp.async", what=op.what, bytes=op.nbytes, issuer=op.issuer,
                         issuer_warp=op.warp, issuer_pc=op.pc)
        return op

    def _serve(self):
        while True:
            op = yield self.queue.get()
            self.env.process(self._complete(op))
            yield self.env.timeout(max(1, self.params.issue_cycles))

    def _complete(self, op: AsyncCopyOp):
        # the exploration knob may move the latency; completions stay in issue order
        done = self.env.now + max(1, self.params.issue_cycles) + max(1, self.params.latency + self.knob.extra())
        done = self.last_done = max(done, self.last_done)
        yield self.env.timeout(done - self.env.now)
        self.guarded(op, op.complete)
        if self.sim.error is not None:
            return
        self.retire()
        self.async_complete(op, unit="cp.async", what=op.what, bytes=op.nbytes, issuer=op.issuer,
                            issuer_warp=op.warp, issuer_pc=op.pc)
        op.done.succeed()
