"""The self-contained HTML report of a run (``tcsim report LAUNCH.py -o report.html``, ``tcsim run --report``).

One file, no network: the page's script and style (``report.js``, ``report.css`` beside this module, written for
tcsim: no third-party library) and the run's data (a JSON block) are inlined.  It shows

* a summary (kernel, arch, cycles and the clock, warp-instructions) and a legend of how to read the page;
* the **findings** of the race detector: clicking one scrolls the source view to its line and the timeline to its
  cycle;
* the **timeline** (canvas; wheel zooms, drag pans, click selects): the tracks of :mod:`tcsim.timeline` -- per CTA,
  a row per warp (PTX regions, stalls named by reason and what they wait on), per async unit lane, per mbarrier
  (phases and their completions), counters -- and the flows of the selected slice (issue -> operation -> phase
  completion -> woken warps), listed in the details panel, each a link;
* the **PTX source** annotated per line: executions (warp-instructions, lanes), issue cycles (first, last),
  result latency summed, stall cycles by reason, findings on the line;
* **charts** (SVG): stall cycles per warp by reason, async unit utilisation, the **mbarrier phase diagram** (each
  phase's span, its completion, the warps it released), SMEM stages in flight and TMEM columns allocated over time.

* with ``tcsim diff --report`` / ``tcsim run --backend both --report``, a **simulator vs GPU** view: the outputs
  compared bit for bit, the first mismatch of each warp (PTX line, register, both values); the page opens at the
  first divergence (its line in the source view, the warp's region on the timeline).

* for a run that ended in an **error** (a kernel fault, a deadlock, the budget, bad input): the error first -- its
  kind, message, the PTX line it names (highlighted in the source view, where the page opens), where (warp,
  lanes), how a GPU ends the launch, each warp's last instruction -- and the timeline of what ran up to it (a red
  line at the last cycle observed);
* the **SASS** ptxas made of each PTX line (:mod:`tcsim.report.sass`: ptxas -lineinfo + nvdisasm where found, or
  the committed listing of a shipped example): a count per line that lists them under it, a switch for every line,
  and the whole listing in address order, each instruction a link to its PTX line; without either, the reason.

Times are SM cycles (the clock in the summary converts them).
"""
from __future__ import annotations

import html
import json
from pathlib import Path

from ..timeline import Timeline

_HERE = Path(__file__).resolve().parent


def report_data(tl: Timeline, source: tuple | None = None, timing=None, title: str | None = None,
                diff: dict | None = None, sass=None, error: dict | None = None) -> dict:
    """The JSON the page's script draws (compact: slices as arrays).  ``sass``: the SASS listing
    (:func:`tcsim.report.sass.listing_for`; None: found for the source text and arch, False: none)."""
    tracks = [{"id": t.id, "name": t.name, "kind": t.kind, "cta": t.cta, "warp": t.warp, "group": t.group,
               "lane": t.lane} for t in tl.tracks]
    cats = ["inst", "stall", "async", "phase", "phase_done", "finding"]
    slices = [[s.track, s.ts, s.dur, s.name, cats.index(s.cat) if s.cat in cats else 0, s.args,
               s.flows_out, s.flows_in] for s in tl.slices]
    text, name = source if source else ("", "")
    if sass is None:
        from .sass import listing_for
        sass = listing_for(text, tl.arch)
    elif sass is False:
        sass = {"error": "no SASS: not asked for"}
    units = timing.units if timing is not None else {}
    warps = timing.warps if timing is not None else []
    return {"title": title or tl.kernel, "kernel": tl.kernel, "arch": tl.arch, "clock_mhz": tl.clock_mhz,
            "cycles": tl.cycles, "stats": {k: v for k, v in tl.stats.items() if isinstance(v, (int, float, bool))},
            "ctas": [c["name"] for c in tl.ctas], "tracks": tracks, "cats": cats, "slices": slices,
            "counters": [{"track": c.track, "points": c.points} for c in tl.counters],
            "findings": tl.findings, "source_name": Path(name).name if name else "", "source": text.splitlines(),
            "lines": {str(k): v for k, v in tl.lines.items() if k is not None},
            "diff": diff, "error": error, "sass": sass,
            "units": units, "warps": [{"cta": list(w.get("cta", ())), "warp": w.get("warp"),
                                       "issued": w.get("issued"),
                                       "stalls": {c: sum(d.values()) for c, d in w.get("stalls", {}).items()}}
                                      for w in warps]}


def render_report(tl: Timeline, source: tuple | None = None, timing=None, title: str | None = None,
                  diff: dict | None = None, sass=None, error: dict | None = None) -> str:
    """The page (one string).  ``error``: the error that ended the run (:func:`tcsim.report.error_json`)."""
    data = json.dumps(report_data(tl, source, timing, title, diff, sass, error), separators=(",", ":"))
    data = data.replace("</", "<\\/")                  # no "</script>" inside the JSON block
    js = (_HERE / "report.js").read_text()
    css = (_HERE / "report.css").read_text()
    t = html.escape(title or tl.kernel)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\">"
            f"<title>tcsim report: {t}</title><style>{css}</style></head>\n<body>\n"
            f"<script type=\"application/json\" id=\"tcsim-data\">{data}</script>\n"
            f"<div id=\"app\"></div>\n<script>{js}</script>\n</body></html>\n")


def write_report(tl: Timeline, path, source: tuple | None = None, timing=None, title: str | None = None,
                 diff: dict | None = None, sass=None, error: dict | None = None) -> int:
    page = render_report(tl, source, timing, title, diff, sass, error)
    data = page.encode("utf-8")
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


__all__ = ["report_data", "render_report", "write_report"]
