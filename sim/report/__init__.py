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


    def write_error(self, error, launch=None, source: tuple | None = None, title: str | None = None) -> list[str]:
        """Write the asked outputs of a run that ended in ``error`` (a :class:`tcsim.isa.errors.TcsimError`: a
        kernel fault, a deadlock, the budget, bad input): the timeline of what ran up to it and a report that
        opens at the error, located in the source view (:func:`error_json`); returns the lines to print."""
        if self.recorder is None:
            return []
        if source is None and launch is not None:
            source = launch_source(launch)
        tl = error_timeline(self.recorder.events, error, source)
        out = []
        if self.perfetto:
            from ..perfetto_trace import write_perfetto
            n = write_perfetto(tl, self.perfetto)
            out.append(f"Perfetto trace written to {self.perfetto} ({n:,} bytes; the run up to the {error.kind})")
        if self.report:
            from .html import write_report
            n = write_report(tl, self.report, source=source, title=title, error=error_json(error, self.recorder.events,
                                                                                           source))
            out.append(f"HTML report written to {self.report} ({n:,} bytes; it opens at the {error.kind})")
        return out


def _source_facts(source) -> tuple[str, str]:
    """(kernel, arch) named by PTX text (the first .entry, the .target), '' where absent."""
    import re
    text = source[0] if source else ""
    k = re.search(r"\.entry\s+([\w$]+)", text)
    a = re.search(r"^\s*\.target\s+(sm_\w+)", text, re.M)
    return (k.group(1) if k else ""), (a.group(1) if a else "")


def error_timeline(events, error, source=None):
    """The timeline of the events observed before ``error`` ended the run (kernel and arch from the PTX text)."""
    from ..timeline import build_timeline
    kernel, arch = _source_facts(source)
    clock = 0.0
    if arch:
        try:
            from ..timing.params import arch_config
            clock = float(arch_config(arch).sm_clock_mhz)
        except Exception:           # noqa: BLE001 -- an arch tcsim has no config for: cycles without the clock
            clock = 0.0
    insts = [e for e in events if e.kind == "inst"]
    warps = {(tuple(e.cta), e.warp) for e in insts}
    stats = {"warp_instructions": len(insts), "ctas": len({c for c, _ in warps}), "warps": len(warps),
             "ended_in": error.kind}
    import math
    import re

    from ..timeline import Slice, Track
    end = max([0] + [e.cycle + getattr(e, "cycles", 0) for e in events])
    tl = build_timeline(events, kernel=kernel, arch=arch, clock_mhz=clock, findings=list(error.findings),
                        stats=stats, cycles=math.ceil(end))
    if tl.ctas:         # the error as an instant where the run stopped, on an "error" row of the CTA it names
        m = re.search(r"CTA \((\d+),(\d+),(\d+)\)", getattr(error, "where", None) or getattr(error, "message", ""))
        ctaid = tuple(int(x) for x in m.groups()) if m else None
        cta = next((i for i, c in enumerate(tl.ctas) if tuple(c["ctaid"]) == ctaid), 0)
        t = Track(len(tl.tracks), "error", "findings", cta)
        tl.tracks.append(t)
        loc = getattr(error, "loc", None)
        tl.slices.append(Slice(t.id, math.ceil(end), 0, f"{error.kind}: {getattr(error, 'message', '')[:120]}",
                               "finding", {"message": getattr(error, "message", str(error)), "severity": "error",
                                           "line": loc.line if loc is not None else None, "error": error.kind}))
    return tl


def error_json(error, events=(), source=None) -> dict:
    """The report's view of the error that ended a run: its kind, message, the PTX line it names (``line`` only
    where ``loc`` is a line of the report's source), where (warp, lanes), what was expected, how a GPU ends the
    launch, the last cycle observed, and each warp's last retired instruction."""
    loc = getattr(error, "loc", None)
    text = source[0].splitlines() if source else []
    line = None
    if loc is not None and 1 <= loc.line <= len(text) and (not loc.text or text[loc.line - 1].strip() ==
                                                           loc.text.strip()):
        line = loc.line
    last: dict = {}
    cycle = 0
    for e in events:
        cycle = max(cycle, e.cycle + getattr(e, "cycles", 0))
        if e.kind == "inst":
            last[(tuple(e.cta), e.warp)] = e
    return {"kind": error.kind, "class": type(error).__name__, "message": getattr(error, "message", str(error)),
            "where": getattr(error, "where", None), "expected": getattr(error, "expected", None),
            "gpu_error": getattr(error, "gpu_error", None), "line": line,
            "loc": str(loc) if loc is not None else None,
            "text": loc.text.strip() if loc is not None and loc.text else "",
            "formatted": str(error), "cycle": _plain(cycle),
            "warps": [{"cta": list(c), "warp": w, "line": e.line, "text": e.text, "cycle": _plain(e.cycle)}
                      for (c, w), e in sorted(last.items())]}


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
    """The sim-vs-GPU view of ``--backend both`` (outputs only: :func:`tcsim.cli.compare_outputs`' lines).  (A
    view with ``unavailable``, the reason, says the GPU run could not be made.)"""
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


__all__ = ["VisualOutputs", "run_visualised", "launch_source", "diff_json", "outputs_diff_json", "error_json",
           "error_timeline"]
