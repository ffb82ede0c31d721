"""Independent runs in parallel processes: ``fork_map(fn, items, jobs)`` is ``map(fn, items)`` over ``jobs`` forked
worker processes, results in item order.

Used where work is independent by construction -- the schedules of an exploration (``tcsim run --explore N --jobs
J``, :func:`tcsim.explore.explore`), calibration campaigns over independent cases (calib/pipeline.py ``run_all(...,
processes=True)``, ``python -m calib.golden replay --jobs J``).  Every simulator run is deterministic and shares no
state with the others, so the gathered results are the ones a single process gives.

``fn`` reaches the workers by fork, never by pickling: closures over launches, launch files' ``check`` functions
and detector factories need not pickle.  Items and results travel through pipes and must pickle.  Where the
platform cannot fork (or ``jobs`` <= 1, or there is at most one item) the items run in this process.  One machine
only: a campaign that outgrows it belongs on an existing distributed engine (Ray, Dask), not here.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

__all__ = ["fork_map", "can_fork"]


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def fork_map(fn, items, jobs: int):
    """Yield ``fn(item)`` for each item, in order, computed by up to ``jobs`` forked worker processes."""
    items = list(items)
    if jobs <= 1 or len(items) <= 1 or not can_fork():
        for it in items:
            yield fn(it)
        return
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=ctx, initializer=_Forked.init,
                             initargs=(fn,)) as pool:
        yield from pool.map(_Forked.call, items)


class _Forked:
    """The function a forked worker serves: set once by the worker's initializer, in the worker only (the parent
    never writes it).  It travels by fork because it need not pickle."""

    fn = None

    @staticmethod
    def init(fn) -> None:
        _Forked.fn = fn

    @staticmethod
    def call(item):
        return _Forked.fn(item)
