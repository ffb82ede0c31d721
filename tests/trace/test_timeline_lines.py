"""The per-line counts of the report's source view (tcsim.timeline: Timeline.lines) against the run's own retired
instructions: executions, lanes, and the first and last issue cycle over every warp (not the first warp's first and
the last warp's last)."""
from __future__ import annotations

from tcsim.launch import run_launch
from tcsim.observe import EventRecorder
from tcsim.timeline import TimelineRecorder, timeline_of


def test_line_counts_span_every_warp():
    from tcsim.examples.bugs.missing_proxy_fence import make_launch
    launch = make_launch()
    rec, ev = TimelineRecorder(), EventRecorder(kinds=("inst",))
    res = run_launch(launch, timing=True, observers=[rec, ev])
    tl = timeline_of(rec, res, launch)
    insts = ev.of("inst")
    assert len({e.warp for e in insts}) == 2
    lines = {e.line for e in insts}
    assert set(tl.lines) == lines
    skewed = 0
    for n in lines:
        at = [e for e in insts if e.line == n]
        d = tl.lines[n]
        assert d["executions"] == len(at) and d["lanes"] == sum(bin(e.mask).count("1") for e in at)
        assert (d["first"], d["last"]) == (min(round(e.cycle) for e in at), max(round(e.cycle) for e in at)), n
        w0 = [round(e.cycle) for e in at if e.warp == 0]
        w1 = [round(e.cycle) for e in at if e.warp == 1]
        skewed += bool(w0 and w1 and (w1[0] < w0[0] or w0[-1] > w1[-1]))
    assert skewed          # some line where warp 1 issued first or warp 0 last: the case the min / max is for
