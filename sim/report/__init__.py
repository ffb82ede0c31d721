"""Visual outputs of a run: the Perfetto timeline (:mod:`tcsim.perfetto_trace`) and the self-contained HTML report
(:mod:`tcsim.report.html`), both drawn from one :class:`tcsim.timeline.Timeline`.

:func:`run_visualised` runs a launch with a :class:`tcsim.timeline.TimelineRecorder` subscribed and writes
what was asked; the command line (``tcsim run --perfetto/--report``, ``tcsim report``) goes through
:class:`VisualOutputs`.
"""
from __future__ import annotations

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

    def write(self, result, launch=None, source: tuple | None = None, title: str | None = None,
              diff: dict | None = None) -> list[str]:
        """Write the asked outputs of a finished run; returns the lines to print.  ``diff``: the sim-vs-GPU
        comparison for the report (:func:`diff_json`, :func:`outputs_diff_json`)."""
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
            n = write_report(tl, self.report, source=source, title=title, timing=getattr(result, "timing", None),
                             diff=diff)
            out.append(f"HTML report written to {self.report} ({n:,} bytes; open it in a browser)")
        return out


def _plain(v):
    """A JSON-able copy (numpy scalars and arrays as Python values / strings)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return v.item()
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def diff_json(rep) -> dict:
    """The report's sim-vs-GPU view of a :class:`tcsim.hw.diff.DiffReport` (``tcsim diff --report``): outputs, the
    first mismatch of each warp (PTX line, register, both values), approximate-value differences, notes; the page
    opens at the first divergence."""
    import dataclasses
    outs = [_plain(dataclasses.asdict(o)) for o in rep.outputs]
    mism = [_plain(dataclasses.asdict(m)) for m in rep.mismatches]
    for m in mism:
        for k in ("a", "b"):
            if isinstance(m.get(k), int):
                m[k] = f"0x{m[k]:x}"
    return {"a_name": rep.a_name, "b_name": rep.b_name, "kernel": rep.kernel, "identical": bool(rep.identical),
            "outputs": outs, "mismatches": mism, "n_value_mismatches": rep.n_value_mismatches,
            "approx": [_plain(dataclasses.asdict(a)) for a in rep.approx],
            "notes": [str(x) for x in list(rep.coverage) + list(rep.convergence)],
            "text": rep.format(50)}


def outputs_diff_json(a_name: str, b_name: str, lines: list, n_outputs: int) -> dict:
    """The sim-vs-GPU view of ``--backend both`` (outputs only: :func:`tcsim.cli.compare_outputs`' lines)."""
    return {"a_name": a_name, "b_name": b_name, "kernel": "", "identical": not lines,
            "outputs": [{"index": i, "name": f"argument {i}", "equal": not any(x.startswith(f"argument {i}:")
                                                                               for x in lines),
                         "note": next((x for x in lines if x.startswith(f"argument {i}:")), "")}
                        for i in range(n_outputs)],
            "mismatches": [], "n_value_mismatches": 0, "approx": [], "notes": [], "text": "\n".join(lines)}


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


__all__ = ["VisualOutputs", "run_visualised", "launch_source", "diff_json", "outputs_diff_json"]
