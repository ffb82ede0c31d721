"""What a run keeps of the CTAs that finished: all of them up to :data:`KEEP_FINISHED_CTAS`, then only aggregates.

A grid of millions of CTAs runs a few clusters at a time (:meth:`tcsim.engine.Simulation._start_cluster`), but each
finished CTA used to stay in ``sim.ctas`` / ``sim.warps`` with its shared memory, tensor memory, mbarriers and every
warp's registers and local memory -- tens to hundreds of KiB per CTA, so memory grew with the CTAs run.  Now, once
more than :data:`KEEP_FINISHED_CTAS` CTAs have finished, each further cluster that exits is *compacted*
(:func:`compact_cluster`): the end-of-run checks that read a CTA's final state run on it at once (the mbarrier
protocol's class-15 check, :meth:`tcsim.race.protocol.Protocol.finish`), its contribution to the programmatic
dependent launch release is folded into :attr:`Retention.release`, and its CTAs and warps leave the simulation's
lists (``ctas``, ``warps``, ``clusters``, ``cta_index``) so that nothing keeps their memory; :class:`Retention` counts
them for the reports (``Result.stats['ctas']``, the progress line, the warp pictures).

Observers of the observation bus that hold per-CTA state of their own take part through two methods:
``can_compact(cluster)`` (False: keep this cluster whole, e.g. an async op of it is still in flight) and
``compact_cluster(cluster)`` (drop what only that cluster could still use).  The race detector
(:meth:`tcsim.race.hb.HappensBefore.compact_cluster`) has them -- it is on by default, so a default run's memory stays
bounded too, and its findings are those of the run kept whole (the shadow of global memory, which later CTAs meet,
is kept; a finished cluster's shared and tensor memory can be addressed by nobody).

Not compacted (everything is kept, as before): runs with timing on (the timing report has a row per warp), runs on the
fast tier (its flat register arrays are laid out per warp: :mod:`tcsim.fast`) and runs with an observer without those
methods (a tracer: it holds per-warp state of its own).  The first
:data:`KEEP_FINISHED_CTAS` finished CTAs are always kept whole (``sim.ctas[0]`` and its warps stay inspectable after a
run, as the debugger expects).
"""
from __future__ import annotations

from dataclasses import dataclass

#: finished CTAs kept whole before later ones are compacted
KEEP_FINISHED_CTAS = 256


@dataclass
class Retention:
    """Aggregates of the compacted CTAs of one simulation."""
    ctas: int = 0           # CTAs compacted
    warps: int = 0          # their warps
    clusters: int = 0
    #: the latest programmatic-dependent-launch release cycle among them (tcsim.grid_dependency), or None when one
    #: of them neither triggered nor exited (cannot happen: they exited)
    release: float = 0.0
    #: CTAs finished and still kept whole
    kept_finished: int = 0

    def enabled(self, sim) -> bool:
        return (not sim.arch_config.timed and sim.tier == "reference" and
                all(hasattr(o, "compact_cluster") for o in _observers(sim)))


def _observers(sim) -> tuple:
    """The observers subscribed to the simulation's observation bus."""
    return tuple(getattr(sim.bus, "_objects", ()))


def compact_cluster(sim, cluster) -> None:
    """Compact a cluster whose CTAs have all exited, or count it among the kept ones (see the module docstring)."""
    ret = sim.retention
    n = len(cluster.ctas)
    observers = [o for o in _observers(sim) if hasattr(o, "compact_cluster")]
    if ret.kept_finished + n <= KEEP_FINISHED_CTAS or not ret.enabled(sim) or \
            not all(o.can_compact(cluster) for o in observers):
        ret.kept_finished += n
        return
    for o in observers:                 # (the race detector: what only this cluster could still use)
        o.compact_cluster(cluster)
    from types import SimpleNamespace
    # the end-of-run check of the mbarrier protocol, on this cluster's final state (it reads only ``.ctas``)
    sim.protocol.finish(SimpleNamespace(ctas=list(cluster.ctas)))
    rel = sim.grid_dependency.release_cycle(c.ctaid for c in cluster.ctas)
    if rel is not None:
        ret.release = max(ret.release, rel)
    gone = {id(c) for c in cluster.ctas}
    warps = {id(w) for c in cluster.ctas for w in c.warps}
    sim.ctas[:] = [c for c in sim.ctas if id(c) not in gone]
    sim.warps[:] = [w for w in sim.warps if id(w) not in warps]
    sim.clusters[:] = [cl for cl in sim.clusters if cl is not cluster]
    for c in cluster.ctas:
        sim.cta_index.pop(tuple(c.ctaid), None)
    sim._procs[:] = [p for p in sim._procs if p.is_alive]
    ret.ctas += n
    ret.warps += len(warps)
    ret.clusters += 1


__all__ = ["KEEP_FINISHED_CTAS", "Retention", "compact_cluster"]
