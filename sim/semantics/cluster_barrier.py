"""The cluster barrier: barrier.cluster.arrive{.release|.relaxed}{.aligned} / barrier.cluster.wait{.acquire}{.aligned}.

PTX ISA 9.1 §9.7.13.3 (barrier.cluster).

Model.  Each cluster has one barrier counting *threads*.  ``arrive`` records the arrival of each executing
thread in the current phase and does not wait; a thread may arrive only once per phase (SyncError
otherwise).  The phase completes when every non-exited thread of the cluster has arrived (threads that exit
stop being waited for, PTX §9.7.12.7 exit) and the barrier rearms itself.  ``wait`` suspends the executing
threads until the phase in which they arrived has completed; a ``wait`` without a preceding ``arrive`` of the
same thread is reported as a SyncError (it would wait for the thread itself).

``.aligned`` requires every non-exited thread of the warp to execute the instruction together (SyncError if
some lanes of the warp skip it through the guard or are elsewhere).  The intra-warp wait that both
instructions imply ("wait for all non-exited threads from its warp") has no functional effect and is not
modelled separately.  ``.release`` / ``.relaxed`` / ``.acquire`` are recorded on the ``sync`` events
(``cluster.arrive``, ``cluster.wait``, ``cluster.release``) for the race detector; the default is
``.release`` for arrive and ``.acquire`` for wait.

Not supported: nothing of the PTX 9.1 syntax is left out.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.barrier_forms import parse_barrier_cluster
from tcsim.isa.errors import SyncError
from ..agents.port import SyncPort
from ..context import lanes_str
from .registry import semantics

WARP = 32


class _ClusterState:
    __slots__ = ("cluster", "phase", "arrived", "arrive_phase", "event")

    def __init__(self, cluster, env):
        self.cluster = cluster
        self.phase = 0
        # per CTA rank: (nwarps, 32) arrays
        self.arrived = [np.zeros((len(c.warps), WARP), dtype=bool) for c in cluster.ctas]
        self.arrive_phase = [np.full((len(c.warps), WARP), -1, dtype=np.int64) for c in cluster.ctas]
        self.event = env.event()

    def missing(self):
        out = []
        for cta, arr in zip(self.cluster.ctas, self.arrived):
            for w in cta.warps:
                m = w.alive & ~arr[w.id]
                if m.any():
                    out.append((w, m))
        return out

    def describe(self) -> str:
        miss = self.missing()
        alive = sum(int(w.alive.sum()) for c in self.cluster.ctas for w in c.warps)
        n = sum(int((w.alive & arr[w.id]).sum()) for c, arr in zip(self.cluster.ctas, self.arrived) for w in c.warps)
        shown = "; ".join(f"{w.label} {lanes_str(m)}" for w, m in miss[:6]) + ("; ..." if len(miss) > 6 else "")
        cid = self.cluster.clusterid
        return (f"barrier.cluster of cluster ({cid[0]},{cid[1]},{cid[2]}) phase {self.phase}: {n}/{alive} "
                f"non-exited threads arrived; not yet arrived: {shown or 'none'}")


class ClusterBarriers:
    """Per-simulation agent holding the state of every cluster's barrier.  Each change of that state is one of its
    methods, which reports it as it makes it: :meth:`arrive` ('cluster.arrive'), :meth:`wait` ('cluster.wait'),
    :meth:`check` (the phase completion, 'cluster.release' through the agent port)."""

    def __init__(self, sim):
        self.sim = sim
        self.states = {}
        self.port = SyncPort(sim, "cluster-barrier", ("op",))     # reports the releases
        sim.exit_hooks.append(self.on_exit)

    def state(self, cluster) -> _ClusterState:
        st = self.states.get(id(cluster))
        if st is None:
            st = self.states[id(cluster)] = _ClusterState(cluster, self.sim.env)
            cluster.barrier_event = st.event
        return st

    def check(self, st: _ClusterState) -> None:
        cl = st.cluster
        alive = sum(int(w.alive.sum()) for c in cl.ctas for w in c.warps)
        arrived = sum(int((w.alive & arr[w.id]).sum()) for c, arr in zip(cl.ctas, st.arrived) for w in c.warps)
        cl.barrier_arrived = arrived
        cl.barrier_expected = alive
        if arrived == 0 or st.missing():
            return
        ev = st.event
        done = st.phase
        st.phase += 1
        for arr in st.arrived:
            arr[:] = False
        st.event = self.sim.env.event()
        cl.barrier_event = st.event
        cl.barrier_arrived = 0
        cl.barrier_waiting = []
        self.port.sync("cluster.release", cl.ctas[0], cluster=cl.clusterid, phase=done)
        ev.succeed(done)

    def arrive(self, ctx, lanes, sem: str, what: str) -> None:
        """``lanes`` of ctx's warp arrive on their cluster's barrier (§9.7.13.3): recorded with the phase they
        arrived in, reported as 'cluster.arrive', and the phase completes if they were the last."""
        st = self.state(ctx.cluster)
        arr = st.arrived[ctx.rank][ctx.warp.id]
        twice = arr & lanes
        if twice.any():
            raise SyncError(f"{what}: {lanes_str(twice)} of {ctx.warp.label} arrive twice at the cluster "
                            f"barrier in phase {st.phase}",
                            expected="each thread arrives once, then barrier.cluster.wait, before arriving again")
        arr |= lanes
        st.arrive_phase[ctx.rank][ctx.warp.id][lanes] = st.phase
        ctx.emit_sync("cluster.arrive", sem=sem, phase=st.phase, lanes=[int(x) for x in np.nonzero(lanes)[0]])
        self.check(st)

    def wait(self, ctx, lanes, sem: str, what: str) -> None:
        """``lanes`` of ctx's warp wait for the phase they arrived in (§9.7.13.3): their arrival is consumed,
        reported as 'cluster.wait', and the lanes whose phase has not completed are suspended until it does."""
        st = self.state(ctx.cluster)
        ph = st.arrive_phase[ctx.rank][ctx.warp.id]
        none = lanes & (ph < 0)
        if none.any():
            raise SyncError(f"{what}: {lanes_str(none)} of {ctx.warp.label} wait on the cluster barrier without "
                            f"having arrived in this phase",
                            expected="barrier.cluster.arrive before barrier.cluster.wait")
        pending = lanes & (ph == st.phase)
        ph[lanes] = -1
        ctx.emit_sync("cluster.wait", sem=sem, phase=st.phase, lanes=[int(x) for x in np.nonzero(lanes)[0]],
                      done=not pending.any())
        if pending.any():
            def reason(st=st):
                return f"{what}: {st.describe()}"

            ctx.block(pending, st.event, reason)

    def on_exit(self, warp, lanes):
        st = self.states.get(id(warp.cta.cluster))
        if st is not None:
            self.check(st)


def _agent(ctx) -> ClusterBarriers:
    return ctx.agent("cluster-barriers", ClusterBarriers)


def _require_aligned(ctx, what):
    missing = ctx.warp.alive & ~ctx.mask
    if missing.any():
        raise SyncError(f"{what} is .aligned but {lanes_str(missing)} of {ctx.warp.label} do not execute it "
                        f"together with {lanes_str(ctx.mask)}",
                        expected="all non-exited threads of the warp executing the aligned instruction together")


@semantics("barrier.cluster")
def decode_barrier_cluster(ins, info):
    """PTX ISA 9.1 §9.7.13.3 barrier.cluster.arrive{.release|.relaxed}{.aligned} and
    barrier.cluster.wait{.acquire}{.aligned}."""
    f = parse_barrier_cluster(ins)
    op, sem, aligned = f.op, f.sem, f.aligned
    what = ins.full_opcode

    if op == "arrive":
        def run(ctx):
            lanes = ctx.mask.copy()
            if not lanes.any():
                return
            if aligned:
                _require_aligned(ctx, what)
            _agent(ctx).arrive(ctx, lanes, sem, what)

        return run

    def run(ctx):
        lanes = ctx.mask.copy()
        if not lanes.any():
            return
        if aligned:
            _require_aligned(ctx, what)
        _agent(ctx).wait(ctx, lanes, sem, what)

    return run
