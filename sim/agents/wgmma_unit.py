"""The warpgroup MMA unit (Hopper tensor core as ``wgmma.mma_async`` drives it): one in-order simpy process per
SM sub-partition of a CTA -- the tensor core of that sub-partition (H100 whitepaper: four per SM, one per
sub-partition; warp ``w`` runs on sub-partition ``w % 4``) -- that executes the completion half of the shares of
``wgmma.mma_async`` its warps issue: a warpgroup's four warps use the four tensor cores at once, and warpgroups share
them.

PTX ISA 9.1 §9.7.15.5.2 (wgmma.mma_async is asynchronous: its accumulator and register-A operands are in flight
until a ``wgmma.wait_group`` retires its wgmma-group), §9.7.15.7.2-3 (commit_group / wait_group), §9.7.15.4 (the
SMEM operands are read through the async proxy).  DESIGN.md principles 5, 6 and 14.

Issue half / completion half: ``sim/semantics/wgmma.py`` checks the form, the descriptors and the operand ranges at
issue and submits a :class:`WgmmaOp` per issuing warp (warp ``w`` of the warpgroup owns D rows ``16w..16w+15``);
this unit decides *when* it completes and runs its ``complete`` callable then, which reads the SMEM operands (async
proxy), the register A fragment and the accumulator registers and writes D into the warp's registers -- all through
this agent's :class:`tcsim.agents.port.AgentPort` door.  Ops complete in issue order, so an MMA chained on the
accumulator of the previous one (the same registers of the same warp, PTX: "ordering guarantee is provided by
default" for the same shape) reads the previous result.

Timing is the injected arch config: the fixed-parameter tensor-core numbers (:class:`TensorPipeParams`,
``tc_fixed_mma_cycles_per_n`` / ``tc_fixed_mma_min_cycles`` / ``tc_fixed_mma_latency``), plus the exploration knob
``tc_extra_latency``: a warp's share of an m64nNk* wgmma occupies its sub-partition's tensor core
``max(min_cycles, N x cycles_per_n)`` cycles and completes ``latency`` after that.  The H100 record
(tests/golden/timing_h100, calib/microbench ``wgmma_*``) gives N/2 cycles for every type (f16, tf32, e4m3: each
K step the same time), 18 at N = 8, and 256 per wgmma when two warpgroups share the tensor cores; sm_90a's
config carries those numbers (sim/timing/data/measured_h100.json).  The functional preset keeps the schedule
wgmma had when it was written (``wgmma_subpartition_units`` 0: one unit per warpgroup, its warps' shares in turn);
otherwise it and the timed configs differ only in these numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from .tensor_pipe import TensorPipeParams
from .unit import AsyncUnit, LatencyKnob


@dataclass(eq=False)
class WgmmaOp:
    """One warp's share of a ``wgmma.mma_async`` in the unit (``complete()`` performs it at completion)."""

    what: str
    complete: Callable[[], None]
    n: int
    warp: object                      # the issuing warp (its registers are the op's register operands)
    issuer: str = ""
    loc: object = None
    pc: int | None = None
    op_id: int | None = None
    occupancy: int | None = None
    latency: int | None = None
    issued_at: float = 0.0
    completes_at: float = 0.0
    done: object = None
    lane: int | None = None
    extra: dict = field(default_factory=dict)


class WarpgroupMma(AsyncUnit):
    """The MMA unit (tensor core) of sub-partition ``sub`` of ``cta``: it serves warps ``sub, sub + 4, ...`` --
    one warp of each warpgroup (``sub`` < 0: the functional preset's unit of warpgroup ``-1 - sub``)."""

    agent_name = "wgmma"
    proxy = "async"
    sync_head = ("warp", "op")

    def __init__(self, sim, cta, sub: int, cfg):
        self.cta = cta
        self.sub = sub
        self.last_completion = 0.0
        self.busy_cycles = 0
        super().__init__(sim, TensorPipeParams.from_config(cfg))
        self.knob = LatencyKnob(cfg, "tensor_pipe", self.label)

    @property
    def label(self) -> str:
        if self.sub < 0:                              # the functional preset's unit of warpgroup -1 - sub
            return f"wgmma unit of {self.cta.label} warpgroup {-1 - self.sub}"
        return f"wgmma unit of {self.cta.label} sub-partition {self.sub}"

    @property
    def home(self):
        return self.cta

    def smem_space(self, cta) -> str:
        return "shared::cta"

    @classmethod
    def of(cls, ctx) -> "WarpgroupMma":
        """The unit of the executing warp's sub-partition (``wgmma_subpartition_units`` 1: every timed config);
        under the functional preset (0) one unit per warpgroup, whose four warps' shares then run in turn."""
        cta = ctx.cta
        cfg = ctx.engine.arch_config
        key = ctx.warp.id % 4 if cfg.wgmma_subpartition_units else -1 - ctx.warp.id // 4
        return ctx.agent("wgmma", lambda sim: cls(sim, cta, key, sim.arch_config), key=(cta, key))

    def submit(self, op: WgmmaOp) -> WgmmaOp:
        p = self.params
        if op.occupancy is None:
            op.occupancy = max(p.mma_min_cycles, math.ceil(op.n * p.mma_cycles_per_n))
        if op.latency is None:
            op.latency = p.mma_latency
        op.done = self.env.event()
        self.enqueue(op)
        self.async_issue(op, what=op.what, op_kind="mma", issuer=op.issuer, issuer_warp=op.warp.id,
                         issuer_lane=op.lane, issuer_pc=op.pc, **op.extra)
        return op

    def _serve(self):
        while True:
            op = yield self.queue.get()
            t = max(self.env.now + op.occupancy + max(0, op.latency + self.knob.extra()), self.last_completion)
            self.last_completion = t
            op.completes_at = t
            self.env.process(self._complete(op, t - self.env.now))
            self.busy_cycles += op.occupancy
            if op.occupancy:
                yield self.env.timeout(op.occupancy)

    def _complete(self, op: WgmmaOp, delay: float):
        if delay > 0:
            yield self.env.timeout(delay)
        self.guarded(op, op.complete)
        if self.sim.error is not None:
            return
        self.retire()
        self.async_complete(op, what=op.what, op_kind="mma", issuer=op.issuer, issuer_warp=op.warp.id,
                            issuer_lane=op.lane, issuer_pc=op.pc)
        op.done.succeed()


__all__ = ["WarpgroupMma", "WgmmaOp"]
