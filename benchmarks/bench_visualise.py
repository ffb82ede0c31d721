"""Cost of the trace outputs: a run with ``--trace`` (JSONL), ``--perfetto`` and ``--report`` against the same run
without them.

    python benchmarks/bench_visualise.py [--repeat 3] [example ...]

For each example (default: gemm_async, nvfp4_gemm, tma_gather_mma_scatter; timing on, race detector on, as
``tcsim run`` runs them) prints the best wall time over ``--repeat`` runs of: the plain run; the run with the
timeline recorded and the Perfetto trace and the HTML report written; the run with the JSONL trace too -- and
their ratios to the plain run (issue 19 asks for at most 1.5x), plus the sizes of the files.  Not part of the test
suite.
"""
from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcsim.cli import _launch_of  # noqa: E402
from tcsim.launch import run_launch  # noqa: E402
from tcsim.report import VisualOutputs  # noqa: E402


def once(name: str, mode: str, tmp: Path) -> tuple[float, dict]:
    launch = _launch_of(f"tcsim.examples.{name}")
    t = time.perf_counter()
    sizes = {}
    if mode == "plain":
        run_launch(launch, timing=True)
    else:
        vo = VisualOutputs(perfetto=tmp / f"{name}.pftrace", report=tmp / f"{name}.html")
        trace = io.StringIO() if mode == "all" else None
        res = run_launch(launch, timing=True, observers=vo.observers, trace=trace)
        vo.write(res, launch)
        sizes = {"perfetto": (tmp / f"{name}.pftrace").stat().st_size, "html": (tmp / f"{name}.html").stat().st_size}
        if trace is not None:
            sizes["jsonl"] = len(trace.getvalue())
    return time.perf_counter() - t, sizes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("examples", nargs="*", default=["gemm_async", "nvfp4_gemm", "tma_gather_mma_scatter"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in args.examples:
            once(name, "plain", tmp)                    # warm up (imports, numba cache)
            best = {}
            sizes = {}
            for mode in ("plain", "visual", "all"):
                ts = []
                for _ in range(args.repeat):
                    t, sz = once(name, mode, tmp)
                    ts.append(t)
                    sizes.update(sz)
                best[mode] = min(ts)
            print(f"{name}: plain {best['plain']:.3f} s; + perfetto + report {best['visual']:.3f} s "
                  f"({best['visual'] / best['plain']:.2f}x); + JSONL too {best['all']:.3f} s "
                  f"({best['all'] / best['plain']:.2f}x); sizes " +
                  ", ".join(f"{k} {v:,} B" for k, v in sizes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
