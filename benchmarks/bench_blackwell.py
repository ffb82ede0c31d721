"""Simulation speed of the Blackwell (tcgen05) GEMM examples.

    python benchmarks/bench_blackwell.py [--k 4096] [--stages 4] [--repeat 1]

Runs the nvfp4 warp-specialized GEMM example (one 128 x 256 tile, K = 4096 by default: 64 K steps through the
mbarrier pipeline, 64 tcgen05.mma.kind::mxf4nvf4 + 192 tcgen05.cp, f16 epilogue) and the ``gemm_async`` example
(the seed shape: 128 x 128, K = 192, twelve kind::f16 MMAs); checks both results (bit-exact against the numerics
oracle); prints, per kernel, the best wall time over ``--repeat`` runs, the simulated cycles, warp-instructions and
tensor-core MMAs (with the wall time per MMA), and the ratio of each kernel's wall time and simulated cycles to the
first kernel's -- ratios are measured within this one run.  Not part of the test suite.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcsim.launch import run_launch  # noqa: E402


def bench_nvfp4(k: int, stages: int):
    from tcsim.examples import nvfp4_gemm as ex
    launch = ex.make_launch(seed=0, k=k, stages=stages)
    return launch, ex, k // ex.K_STEP


def bench_gemm_async():
    from tcsim.examples import gemm_async as ex
    launch = ex.make_launch()
    a, _, _ = ex.operands(launch)
    return launch, ex, a.shape[1] // ex.K_MMA


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=4096, help="K of the nvfp4 GEMM (a multiple of 64)")
    ap.add_argument("--stages", type=int, default=4, help="pipeline stages of the nvfp4 GEMM (2..4)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per kernel; the best wall time is reported")
    args = ap.parse_args(argv)
    cases = [(f"nvfp4_gemm 128x256, K={args.k}, {args.stages} stages (6 warps)",
              lambda: bench_nvfp4(args.k, args.stages)),
             ("gemm_async 128x128, K=192, f16 (4 warps)", bench_gemm_async)]
    rows = []
    for name, make in cases:
        launch, ex, mmas = make()
        best = None
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            res = run_launch(launch)
            wall = time.perf_counter() - t0
            best = wall if best is None else min(best, wall)
        ok, msg = ex.check(res, launch)
        if not ok:
            print(f"{name}: CHECK FAILED: {msg}")
        s = res.stats
        rows.append((name, ok, best, s["cycles"], s["warp_instructions"], mmas))
    base_wall, base_cycles = rows[0][2], rows[0][3]
    print(f"{'kernel':50s} {'check':5s} {'wall s':>8s} {'sim cycles':>10s} {'warp-inst':>9s} {'MMAs':>5s} "
          f"{'ms/MMA':>7s} {'wall ratio':>10s} {'cycle ratio':>11s}")
    for name, ok, wall, cyc, wi, mmas in rows:
        print(f"{name:50s} {'ok' if ok else 'FAIL':5s} {wall:8.3f} {cyc:10d} {wi:9d} {mmas:5d} "
              f"{1e3 * wall / mmas:7.2f} {wall / base_wall:10.3f} {cyc / base_cycles:11.3f}")
    (_, _, w0, c0, _, _), (_, _, w1, c1, _, _) = rows[0], rows[1]
    print(f"ratio nvfp4 / gemm_async: wall time {w0 / w1:.2f}x, simulated cycles {c0 / c1:.2f}x, "
          f"simulated cycles per wall second {c0 / w0:,.0f} vs {c1 / w1:,.0f}")
    return 0 if all(r[1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
