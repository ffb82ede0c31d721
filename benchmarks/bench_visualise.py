"""Cost of the trace outputs: a run with the timeline recorded and the Perfetto trace and HTML report written, and a
run with the JSONL trace, against the same run without them.

    python benchmarks/bench_visualise.py [--repeat 3] [example ...]

For each example (default: gemm_async, nvfp4_gemm, tma_gather_mma_scatter; timing on, race detector on, as
``tcsim run`` runs them) prints the best CPU time of this process (a shared machine does not skew it as it skews
wall time) over ``--repeat`` runs of each piece: the plain run; the run with the timeline recorder subscribed;
building the timeline; writing the Perfetto trace; writing the HTML report; the run with the JSONL trace -- and
the ratios to the plain run (issue 19 asks for at most 1.5x), plus the sizes of the outputs.  Not part of the test
suite.
"""
from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcsim.cli import _launch_of  # noqa: E402
from tcsim.launch import run_launch  # noqa: E402
from tcsim.perfetto_trace import perfetto_bytes  # noqa: E402
from tcsim.report import launch_source  # noqa: E402
from tcsim.report.html import render_report  # noqa: E402
from tcsim.timeline import TimelineRecorder, timeline_of  # noqa: E402


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def measure(name: str) -> tuple[dict, dict]:
    launch = _launch_of(f"tcsim.examples.{name}")
    t = {}
    t["plain"], _ = _cpu(lambda: run_launch(launch, timing=True))
    rec = TimelineRecorder()
    t["recorded run"], res = _cpu(lambda: run_launch(launch, timing=True, observers=[rec]))
    t["timeline"], tl = _cpu(lambda: timeline_of(rec, res))
    t["perfetto"], pb = _cpu(lambda: perfetto_bytes(tl))
    t["html"], page = _cpu(lambda: render_report(tl, launch_source(launch), res.timing))
    buf = io.StringIO()

    def jsonl():
        run_launch(launch, timing=True, trace=buf)
        return buf.getvalue()
    t["jsonl run"], text = _cpu(jsonl)
    return t, {"perfetto": len(pb), "html": len(page.encode()), "jsonl": len(text)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("examples", nargs="*", default=["gemm_async", "nvfp4_gemm", "tma_gather_mma_scatter"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    for name in args.examples:
        run_launch(_launch_of(f"tcsim.examples.{name}"), timing=True)      # warm up (imports, numba cache)
        best: dict = {}
        for _ in range(args.repeat):
            t, sizes = measure(name)
            for k, v in t.items():
                best[k] = min(best.get(k, v), v)
        vis = best["recorded run"] + best["timeline"] + best["perfetto"] + best["html"]
        print(f"{name} (CPU s, best of {args.repeat}): plain {best['plain']:.3f}; recorded run "
              f"{best['recorded run']:.3f} + timeline {best['timeline']:.3f} + Perfetto {best['perfetto']:.3f} + "
              f"HTML {best['html']:.3f} = {vis:.3f} ({vis / best['plain']:.2f}x); JSONL run "
              f"{best['jsonl run']:.3f} ({best['jsonl run'] / best['plain']:.2f}x); sizes " +
              ", ".join(f"{k} {v:,} B" for k, v in sizes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
