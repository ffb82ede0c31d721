"""The tensor pipe (5th-generation tensor core issue queue) of one CTA, or of one CTA pair for ``.cta_group::2``:
an in-order simpy process that executes ``tcgen05.mma``, ``tcgen05.cp``, ``tcgen05.shift`` and the arrive of
``tcgen05.commit``.

PTX ISA 9.1 issue granularity (``#tcgen05-issue-granularity``), the tcgen05 memory-consistency model
(``#tcgen05-memory-consistency-model``; tcgen05.md (f): mma -> mma, cp -> mma, shift -> mma, shift ->
cp.4x256b, mma -> shift are pipelined in order when issued by one thread with one .cta_group), §9.7.16.12.1
(tcgen05.commit: the arrive happens once all prior async tcgen05 operations of the thread have completed).
DESIGN.md principles 5 and 6.

Issue half / completion half: the issuing thread's semantics (``sim/semantics/tcgen05_mma.py``,
``tcgen05_copy.py``) read and check every operand -- descriptors, the instruction descriptor, TMEM addresses,
the enable-input-d predicate, scale-factor addresses -- and submit a :class:`PipeOp` whose ``complete`` callable
performs the effect.  This agent decides *when*: it serves ops strictly in issue order and runs ``complete`` at
the op's completion time, so the MMA reads SMEM and TMEM *then* and writes D into TMEM *then*.  A kernel that
reads D with ``tcgen05.ld`` before the commit's mbarrier phase completes, or overwrites an operand before the
MMA completed, really sees / causes stale data.

One pipe serves every issuing thread of its CTA (pair), in one order, so a commit -- itself an op in the queue
-- arrives after every op issued before it by *any* thread; the PTX guarantee (ops of the committing thread)
is a subset of that.

Timing: the simulation's arch config decides, through the pipe's constructor.  With ``tc_fixed_pipe`` 0 (the
targets' configs, timing on) the fitted model (:class:`tcsim.timing.tensor.TensorPipeTiming`: SMEM operand feed,
compute N/2 or N/4, fixed latency from the published B200 fits).  With ``tc_fixed_pipe`` 1 -- the functional
preset (timing off), or a launch given ``tensor_pipe_params`` (a :class:`TensorPipeParams`, the view of the
``tc_fixed_*`` parameters) -- the fixed-parameter model: ops are served in FIFO order, each occupying the pipe for
its issue interval (MMA: ``N * mma_cycles_per_n``; cp: ``ceil(bytes / cp_bytes_per_cycle)`` per destination CTA;
shift ``shift_cycles``; commit 0) and completing ``latency`` cycles after that.  Either way completions are in
issue order and a commit's arrive happens at the completion time of the op before it (plus ``commit_latency``).
The exploration knob ``tc_extra_latency`` (:mod:`tcsim.explore`) adds to the latency of every op but commits
(never below 0).

Events on the observation bus (agent ``'tensor_pipe'``): ``sync`` ``async.issue`` / ``async.complete`` per op,
``mbarrier.arrive`` (+ ``mbarrier.phase``) for commits; the semantics' completion callables reach SMEM and TMEM
only through the agent interface (:class:`tcsim.agents.port.AgentPort`), which reports ``mem`` events (proxy
'async') for the cells they touch.

Errors found at completion (TMEM deallocated in between, an mbarrier invalidated, a collector misuse) stop the
run with the diagnostic located at the issuing instruction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable


from tcsim.isa.errors import SyncError, VerifyError

from ..timing.params import UNTIMED
from .unit import AsyncUnit, LatencyKnob

#: TensorPipeParams field -> the arch-config parameter it is a view of
_CONFIG_NAMES = {"mma_cycles_per_n": "tc_fixed_mma_cycles_per_n", "mma_min_cycles": "tc_fixed_mma_min_cycles",
                 "mma_latency": "tc_fixed_mma_latency", "cp_bytes_per_cycle": "tc_fixed_cp_bytes_per_clk",
                 "cp_latency": "tc_fixed_cp_latency", "shift_cycles": "tc_fixed_shift_cycles",
                 "shift_latency": "tc_fixed_shift_latency", "commit_latency": "tc_fixed_commit_latency"}


@dataclass(frozen=True)
class TensorPipeParams:
    """The fixed-parameter tensor-pipe model's numbers (cycles): a view of the arch config's ``tc_fixed_*``
    parameters (:meth:`from_config`; sources and notes there); the defaults are the functional preset's
    (:data:`tcsim.timing.params.UNTIMED`).  Given to a launch, they replace those parameters and select the fixed
    model (``tc_fixed_pipe`` 1)."""

    mma_cycles_per_n: float = UNTIMED["tc_fixed_mma_cycles_per_n"].value   # MMA issue interval = N * this
    mma_min_cycles: int = UNTIMED["tc_fixed_mma_min_cycles"].value
    mma_latency: int = UNTIMED["tc_fixed_mma_latency"].value               # end of issue interval -> completion
    cp_bytes_per_cycle: int = UNTIMED["tc_fixed_cp_bytes_per_clk"].value   # SMEM feed
    cp_latency: int = UNTIMED["tc_fixed_cp_latency"].value
    shift_cycles: int = UNTIMED["tc_fixed_shift_cycles"].value
    shift_latency: int = UNTIMED["tc_fixed_shift_latency"].value
    commit_latency: int = UNTIMED["tc_fixed_commit_latency"].value         # previous op's completion -> arrive

    @classmethod
    def from_config(cls, cfg) -> "TensorPipeParams":
        return cls(**{f: getattr(cfg, name) for f, name in _CONFIG_NAMES.items()})

    def config_values(self) -> dict:
        """The arch-config parameters these numbers stand for (:meth:`tcsim.timing.params.ArchConfig.with_units`),
        and the switch to the fixed model."""
        return {"tc_fixed_pipe": 1, **{name: getattr(self, f) for f, name in _CONFIG_NAMES.items()}}


@dataclass(eq=False)
class PipeOp:
    """One operation in the tensor pipe.

    ``kind``: 'mma' | 'cp' | 'shift' | 'commit'.  ``complete()`` performs the effect at completion time (it may
    raise a TcsimError, which stops the run located at ``loc``).  ``occupancy`` / ``latency`` are filled by
    :meth:`TensorPipe.submit` from the params unless given.  ``done`` is a simpy event triggered after
    ``complete`` ran.
    """

    kind: str
    what: str
    complete: Callable[[], None]
    size: int = 0                    # MMA: N; cp: bytes per destination CTA
    ndest: int = 1                   # cp: destination CTAs
    issuer: str = ""
    loc: object = None
    warp: int | None = None
    lane: int | None = None
    pc: int | None = None
    op_id: int | None = None
    occupancy: int | None = None
    latency: int | None = None
    issued_at: float = 0.0
    completes_at: float = 0.0
    done: object = None
    extra: dict = field(default_factory=dict)


class TensorPipe(AsyncUnit):
    """The tensor pipe of one CTA (``.cta_group::1``) or one CTA pair (``.cta_group::2``)."""

    agent_name = "tensor_pipe"
    proxy = "async"

    def __init__(self, sim, ctas: tuple, cfg):
        self.ctas = ctas
        self.last_completion = 0.0
        self.busy_cycles = 0
        #: FLOPs of the completed-or-queued MMAs, by .kind (achieved vs peak throughput)
        self.flops: dict = {}
        #: the fitted timing (sim.timing.tensor.TensorPipeTiming), None for the fixed-parameter model
        self.arch_timing = None
        if not cfg.tc_fixed_pipe:
            from ..timing.tensor import TensorPipeTiming
            self.arch_timing = TensorPipeTiming(cfg, len(ctas))
        #: collector buffers: (buffer name 'a' / 'b0'..'b3', pair position) -> (source key, bits, loc line)
        self.collectors: dict = {}
        super().__init__(sim, TensorPipeParams.from_config(cfg))
        #: the exploration knob (tc_extra_latency, added to every op's latency; :mod:`tcsim.explore`)
        self.knob = LatencyKnob(cfg, "tensor_pipe", self.label)

    @property
    def label(self) -> str:
        if len(self.ctas) == 1:
            return f"tensor pipe of {self.ctas[0].label}"
        return f"tensor pipe of the CTA pair {self.ctas[0].label} / {self.ctas[1].label}"

    @property
    def home(self):
        return self.ctas[0]

    def smem_space(self, cta) -> str:
        """Each CTA of a pair feeds its own SMEM to the pipe: reported as ``shared::cta``."""
        return "shared::cta"

    @classmethod
    def of(cls, ctx, cta_group: int, what: str = "tcgen05") -> "TensorPipe":
        """The pipe serving the executing CTA for ``cta_group``, created on first use with the simulation's arch
        config."""
        ctas = group_ctas(ctx, cta_group, what)
        return ctx.agent("tensor_pipe", lambda sim: cls(sim, ctas, sim.arch_config), key=ctas)

    # ------------------------------------------------------------------------------------------ issue
    def timing(self, op: PipeOp) -> tuple[int, int]:
        p = self.params
        if op.kind == "mma":
            return max(p.mma_min_cycles, math.ceil(op.size * p.mma_cycles_per_n)), p.mma_latency
        if op.kind == "cp":
            return max(1, math.ceil(op.size * op.ndest / p.cp_bytes_per_cycle)), p.cp_latency
        if op.kind == "shift":
            return p.shift_cycles, p.shift_latency
        return 0, p.commit_latency

    def submit(self, op: PipeOp) -> PipeOp:
        occ, lat = self.timing(op)
        if op.occupancy is None:
            op.occupancy = occ
        if op.latency is None:
            op.latency = lat
        op.done = self.env.event()
        self.enqueue(op)
        self.async_issue(op, what=op.what, op_kind=op.kind, issuer=op.issuer, issuer_warp=op.warp,
                         issuer_lane=op.lane, issuer_pc=op.pc)
        return op

    # ------------------------------------------------------------------------------------------ service
    def _serve(self):
        while True:
            op = yield self.queue.get()
            if op.kind == "mma":
                x = op.extra
                self.flops[x.get("kind")] = self.flops.get(x.get("kind"), 0) + 2 * x["m"] * x["n"] * x["k"]
            extra = self.knob.extra() if op.kind != "commit" else 0   # a commit arrives when the ops before it did
            if self.arch_timing is not None:
                busy, t = self.arch_timing.schedule(op, self.env.now, extra)
                hold = 0
            else:
                t = max(self.env.now + op.occupancy + max(0, op.latency + extra), self.last_completion)
                busy = hold = op.occupancy
            self.last_completion = t
            op.completes_at = t
            self.env.process(self._complete(op, t - self.env.now))
            self.busy_cycles += busy
            if hold:
                yield self.env.timeout(hold)

    def _complete(self, op: PipeOp, delay: float):
        if delay > 0:
            yield self.env.timeout(delay)
        self.guarded(op, op.complete)
        if self.sim.error is not None:
            return
        self.retire()
        self.async_complete(op, what=op.what, op_kind=op.kind, issuer=op.issuer, issuer_warp=op.warp,
                            issuer_lane=op.lane, issuer_pc=op.pc)
        op.done.succeed()

    # ------------------------------------------------------------------------------------------ mbarriers

    def arrive(self, cta, offset: int, what: str) -> None:
        """The commit's arrive-on (count 1, cluster scope) on the mbarrier at SMEM ``offset`` of ``cta``."""
        mb = cta.mbarrier(offset)
        if not mb.valid:
            raise SyncError(f"{what}: the mbarrier at SMEM offset 0x{offset:x} of {cta.label} was invalidated "
                            f"before the commit's arrive", expected="the mbarrier to stay live until the tracked "
                                                                    "tcgen05 operations complete")
        self.mbarrier_arrive(cta, mb, at=dict(addr=offset), op_id=self._op_id(), what=what,
                             issuer_cta=self.ctas[0].ctaid)


def group_ctas(ctx, cta_group: int, what: str) -> tuple:
    """The CTAs an op of ``.cta_group::N`` acts on, in pair order: ``(cta,)`` for N = 1, ``(even, odd)`` for
    N = 2 (the two CTAs of the cluster whose ranks differ only in bit 0).  The peer must exist and be alive."""
    cta = ctx.cta
    if cta_group == 1:
        return (cta,)
    cl = cta.cluster
    even = cta.rank & ~1
    if even + 1 >= cl.size:
        raise VerifyError(f"{what}.cta_group::2 in {cta.label} (cluster rank {cta.rank}) has no peer CTA: the "
                          f"cluster has {cl.size} CTA(s)",
                          expected="a launch whose cluster holds CTA pairs (ranks 2k, 2k+1) for .cta_group::2")
    pair = (cl.cta_by_rank(even), cl.cta_by_rank(even + 1))
    peer = pair[1] if pair[0] is cta else pair[0]
    if peer.exited:
        raise SyncError(f"{what}.cta_group::2 issued in {cta.label} after its peer {peer.label} exited",
                        expected="both CTAs of the pair alive while pair operations are issued")
    return pair


__all__ = ["TensorPipe", "TensorPipeParams", "PipeOp", "group_ctas"]
