"""Checks of the keyword options of :func:`tcsim.launch.run_launch` (and the launchers built on it), so that a
wrong value is a :class:`~tcsim.isa.errors.LaunchError` naming the option, never a Python traceback from deep
inside the engine.

The launch description itself (:class:`tcsim.launch.Launch`: grid / block / cluster, shared memory, arguments) and
``seed`` / ``max_instructions`` / ``max_seconds`` are checked by :mod:`tcsim.limits`.
"""
from __future__ import annotations

import numbers

from tcsim.isa.errors import LaunchError

#: the async units' parameter views a launch accepts, by keyword (module, class name)
UNIT_PARAMS = {"tma_params": ("tcsim.agents.tma", "TmaParams"),
               "tensor_pipe_params": ("tcsim.agents.tensor_pipe", "TensorPipeParams"),
               "async_copy_params": ("tcsim.agents.async_copy", "AsyncCopyParams")}


def check_run_options(*, trace=None, observers=(), timing=False, schedule=None, units=None) -> None:
    """Raise a LaunchError naming the first option whose value the simulator cannot use."""
    if trace is not None and not (isinstance(trace, str) or hasattr(trace, "__fspath__") or hasattr(trace, "write")):
        raise LaunchError(f"trace={trace!r:.60} is neither a path nor a writable file",
                          expected="trace as a path (str / pathlib.Path) or a file object opened for writing")
    if isinstance(trace, str) and not trace:
        raise LaunchError("trace='' is not a path", expected="trace as a file path or None")
    try:
        obs = list(observers)
    except TypeError:
        raise LaunchError(f"observers={observers!r:.60} is not a sequence",
                          expected="observers as a list of callables taking an event (or objects with an "
                                   "on_event(event) method)") from None
    for o in obs:
        if not (callable(getattr(o, "on_event", None)) or callable(o)):
            raise LaunchError(f"observers holds {o!r:.60}, which is neither callable nor has an on_event(event) "
                              "method", expected="observers as a list of callables taking an event (or objects "
                                                 "with an on_event(event) method)")
    from .timing.params import ArchConfig
    if not (isinstance(timing, (bool, ArchConfig)) or timing is None
            or (isinstance(timing, numbers.Integral) and timing in (0, 1))):
        raise LaunchError(f"timing={timing!r:.60} is not a timing choice",
                          expected="timing=False (1-cycle model), True (the target's timing model) or a "
                                   "tcsim.timing.params.ArchConfig")
    if schedule is not None:
        from .explore import Schedule
        if not isinstance(schedule, Schedule):
            raise LaunchError(f"schedule={schedule!r:.60} is not a tcsim.explore.Schedule",
                              expected="schedule as a tcsim.explore.Schedule (tcsim.explore.schedule_of) or None")
    for key, value in (units or {}).items():
        if key not in UNIT_PARAMS:
            raise LaunchError(f"run_launch() got an unexpected keyword argument {key!r}",
                              expected=f"keywords seed, trace, max_instructions, max_seconds, observers, timing, strict, "
                                       f"schedule, detect, progress, {', '.join(UNIT_PARAMS)}")
        if value is None:
            continue
        import importlib
        mod, cls = UNIT_PARAMS[key]
        want = getattr(importlib.import_module(mod), cls)
        if not isinstance(value, want):
            raise LaunchError(f"{key}={value!r:.60} is not a {cls}", expected=f"{key} as a {mod}.{cls} or None")


def open_trace(trace):
    """The JSONL tracer of ``trace`` (a path or file object); a path that cannot be opened is a LaunchError."""
    from .observe import JsonlTracer
    try:
        return JsonlTracer(trace)
    except OSError as e:
        raise LaunchError(f"trace={str(trace)!r}: cannot open it for writing: {e.strerror or e}",
                          expected="trace as the path of a file in an existing directory") from None
