"""Simulation speed with the timing model on vs off, for the GEMM examples.

    python benchmarks/bench_timing.py [--repeat 3]

Runs each GEMM example (``mma_gemm``, ``tma_mma_gemm``, ``gemm_async``, ``cta_pair_gemm``, ``nvfp4_gemm``) with
``timing=False`` (the 1-cycle model) and ``timing=True`` (the arch config of its ``.target``), checks both results,
and prints per kernel: the best wall time of ``--repeat`` runs each way, warp-instructions per second, simulated
cycles each way and the wall-time ratio on/off.  All ratios are measured within this one run.  Not part of the
test suite (no timed assertions anywhere).
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tcsim.launch import run_launch  # noqa: E402

KERNELS = ("mma_gemm", "tma_mma_gemm", "gemm_async", "cta_pair_gemm", "nvfp4_gemm")


def best_run(mod, timing: bool, repeat: int):
    """(best wall seconds, result) of ``repeat`` runs of the example's default launch."""
    best, res = None, None
    for _ in range(repeat):
        launch = mod.make_launch()
        t0 = time.perf_counter()
        res = run_launch(launch, timing=timing)
        dt = time.perf_counter() - t0
        ok, msg = mod.check(res, launch)
        if not ok:
            raise SystemExit(f"{mod.__name__} (timing={timing}) failed its check: {msg}")
        best = dt if best is None else min(best, dt)
    return best, res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kernels", default=",".join(KERNELS))
    args = ap.parse_args(argv)
    print(f"{'kernel':15} {'warp-inst':>9} {'off s':>8} {'on s':>8} {'on/off':>7} {'off inst/s':>11} "
          f"{'on inst/s':>10} {'cycles off':>10} {'cycles on':>10}")
    ratios = []
    for name in args.kernels.split(","):
        mod = importlib.import_module(f"examples.{name}")
        best_run(mod, False, 1)                      # warm-up: imports, decode caches
        off, r_off = best_run(mod, False, args.repeat)
        on, r_on = best_run(mod, True, args.repeat)
        n = r_on.stats["warp_instructions"]
        ratios.append(on / off)
        print(f"{name:15} {n:>9} {off:8.3f} {on:8.3f} {on / off:7.2f} {r_off.stats['warp_instructions'] / off:11,.0f} "
              f"{n / on:10,.0f} {r_off.stats['cycles']:>10} {r_on.stats['cycles']:>10}")
    geo = 1.0
    for r in ratios:
        geo *= r
    print(f"geometric mean wall-time ratio timing on / off: {geo ** (1 / len(ratios)):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
