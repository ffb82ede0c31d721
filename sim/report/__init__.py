"""Visual outputs of a run: the Perfetto timeline (:mod:`tcsim.perfetto_trace`) and the self-contained HTML report
(:mod:`tcsim.report.html`), both drawn from one :class:`tcsim.timeline.Timeline`.

:func:`run_visualised` runs a launch with a :class:`tcsim.timeline.TimelineRecorder` subscribed and writes
what was asked; the command line (``tcsim run --perfetto/--report``, ``tcsim report``) goes through
:class:`VisualOutputs`.
"""
from __future__ import annotations

from pathlib import Path

from ..timeline import TimelineRecorder, timeline_of


class VisualOutputs:
    """The observer and the writers of ``--perfetto PATH`` / ``--report PATH`` for one run."""

    def __init__(self, perfetto=None, report=None):
        self.perfetto = perfetto
        self.report = report
        self.recorder = TimelineRecorder() if (perfetto or report) else None

    @property
    def observers(self) -> list:
        return [self.recorder] if self.recorder is not None else []

    def write(self, result, launch=None, source: tuple | None = None, title: str | None = None) -> list[str]:
        """Write the asked outputs of a finished run; returns the lines to print."""
        if self.recorder is None:
            return []
        tl = timeline_of(self.recorder, result, launch)
        out = []
        if self.perfetto:
            from ..perfetto_trace import write_perfetto
            n = write_perfetto(tl, self.perfetto)
            out.append(f"Perfetto trace written to {self.perfetto} ({n:,} bytes; open it in the Perfetto UI)")
        if self.report:
            from .html import write_report
            if source is None and launch is not None:
                source = launch_source(launch)
            n = write_report(tl, self.report, source=source, title=title, timing=getattr(result, "timing", None))
            out.append(f"HTML report written to {self.report} ({n:,} bytes; open it in a browser)")
        return out


def launch_source(launch) -> tuple[str, str] | None:
    """(PTX text, source name) of a launch, or None when it holds a parsed module."""
    try:
        return launch.ptx_text()
    except (TypeError, Exception):      # noqa: BLE001 -- a launch without text: the report has no source view
        return None


def run_visualised(launch, *, perfetto=None, report=None, **kw):
    """:func:`tcsim.launch.run_launch` with the timeline recorded; writes ``perfetto`` / ``report`` (paths)."""
    from ..launch import run_launch
    vo = VisualOutputs(perfetto, report)
    kw["observers"] = list(kw.get("observers", ())) + vo.observers
    res = run_launch(launch, **kw)
    vo.write(res, launch)
    return res


def output_problem(opt: str, path) -> str | None:
    if path is None:
        return None
    p = Path(path)
    if not path or p.is_dir():
        return f"--{opt} {path!r} is a directory, not a file to write"
    if not p.parent.is_dir():
        return f"--{opt} {path}: the directory {p.parent} does not exist"
    return None


__all__ = ["VisualOutputs", "run_visualised", "launch_source"]
