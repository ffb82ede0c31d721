"""The skeleton every asynchronous hardware unit shares (TMA engine, tensor pipe, cp.async unit).

DESIGN.md principle 6: one simpy process per hardware unit, its queue a simpy store. A unit serves the ops submitted
to it in order (``_serve``, written by each unit); :meth:`AsyncUnit.enqueue` stamps and counts an op,
:meth:`AsyncUnit.guarded` runs part of an op's completion half -- the semantics' ``complete``/``read``/``write``
callables, which reach memory only through the unit's :class:`~tcsim.agents.port.AgentPort` methods -- and turns a
:class:`tcsim.isa.errors.TcsimError` into a simulation failure located at the issuing instruction and naming the
unit, and :meth:`AsyncUnit.retire` counts the op done.

DESIGN.md principle 14: a unit is constructed with the simulation's architecture config
(:attr:`tcsim.engine.Simulation.arch_config`) and builds its ``params`` from it (each unit's ``*Params`` is a view
of its parameters there, ``Params.from_config``); timing on or off is only which config that is.
"""
from __future__ import annotations

import random

import simpy

from tcsim.isa.errors import TcsimError

from ..timing.params import LATENCY_KNOBS
from .port import AgentPort


class LatencyKnob:
    """A unit's exploration knob (:data:`tcsim.timing.params.LATENCY_KNOBS`, read from the config the unit is
    built with): :meth:`extra` is the extra completion latency of the next op -- the config's ``*_extra_latency``,
    or with ``async_jitter_seed`` set, a draw in [``*_early_extra``, ``*_late_extra``] from a generator seeded with
    the seed, the unit and ``key`` (the unit's label), so a run is reproducible op by op."""

    __slots__ = ("fixed", "early", "late", "rng")

    def __init__(self, cfg, unit: str, key: str = ""):
        extra, early, late = LATENCY_KNOBS[unit]
        self.fixed = getattr(cfg, extra)
        self.early, self.late = int(getattr(cfg, early)), int(getattr(cfg, late))
        seed = int(cfg.async_jitter_seed)
        self.rng = random.Random(f"{seed}/{unit}/{key}") if seed else None

    def extra(self) -> float:
        if self.rng is None:
            return self.fixed
        return self.rng.randint(self.early, self.late)


class AsyncUnit(AgentPort):
    """An async hardware unit; its memory accesses and events go through :class:`tcsim.agents.port.AgentPort`."""

    def __init__(self, sim, params):
        self.sim = sim
        self.env = sim.env
        self.params = params
        self.queue = simpy.Store(self.env)
        self.in_flight = 0
        self.completed = 0
        #: the op whose completion callables are running (set by :meth:`guarded`), else None
        self.completing = None
        self.process = self.env.process(self._serve())

    @property
    def label(self) -> str:
        """How diagnostics name the unit (e.g. 'TMA engine of CTA (0,0,0)')."""
        raise NotImplementedError

    def _serve(self):
        raise NotImplementedError

    def enqueue(self, op) -> None:
        op.issued_at = self.env.now
        self.in_flight += 1
        self.queue.put(op)

    def guarded(self, op, fn):
        """``fn()``; a TcsimError fails the simulation (located at ``op.loc``) and returns None.  While ``fn`` runs,
        ``self.completing`` is ``op`` (its accesses carry its op id: :mod:`tcsim.race.hb`)."""
        self.completing = op
        try:
            return fn()
        except TcsimError as e:
            e.with_context(loc=op.loc, where=f"{self.label}, completing {op.what} issued by {op.issuer} at cycle "
                                             f"{op.issued_at:g}")
            self.sim.fail(e)
            return None
        finally:
            self.completing = None

    def retire(self) -> None:
        self.in_flight -= 1
        self.completed += 1
