"""Issue 18's tensor-core / async-unit targets, each workload's simulation time against its target, in one run.

    python benchmarks/bench_tensorcore.py [--repeat 3] [--tier reference|fast|both] [--only NAME ...] [--no-gluon]
                                          [--gluon-size M N K] [--profile NAME]

Workloads (each result is checked bit for bit by the example's own check before its time counts):

====================  ==========================================================================  ========
name                  what                                                                        target
====================  ==========================================================================  ========
nvfp4                 examples/nvfp4_gemm, 128 x 256, K = 4096 (64 tcgen05.mma.kind::mxf4nvf4)    0.5 s
gemm_async            examples/gemm_async, the seed shape (128 x 128, K = 192, 12 kind::f16 MMAs)  0.05 s
cta_pair              examples/cta_pair_gemm (cta_group::2)                                        0.05 s
pipeline_timed        examples/tcgen05_pipeline_gemm 256 x 512 x 256, timing model on             2 s
gluon_fused           the Gluon tutorial's matmul_fused_gather_scatter at M, N, K = 1024, 1024,    5 s
                      2048 (benchmarks/kernels/gluon_fused_gather_scatter.py; Triton 3.9 compiles
                      it for sm_100a on the CPU; skipped without Triton; ``--gluon-size`` runs
                      another size, against the target scaled by its tile work)
====================  ==========================================================================  ========

Each workload runs once to warm up (numba's cache load, the program cache of :mod:`tcsim.program_cache`), then
``--repeat`` times with the race detector off and ``--repeat`` times with it on (``detect=True``, run_launch's
default), alternating; the best of each is printed in process CPU seconds (what this loaded 2-core machine can
measure; the wall time of the same run is printed beside it), with ``time / target`` (<= 1 meets the target) and
the detector's cost (on / off; the detector itself is issue 15's).  ``--profile NAME`` prints a cProfile of one
detector-off run of that workload instead.  Not part of the test suite: no timed assertion anywhere.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcsim.launch import run_launch  # noqa: E402

TARGETS = {"nvfp4": 0.5, "gemm_async": 0.05, "cta_pair": 0.05, "pipeline_timed": 2.0, "gluon_fused": 5.0}


GLUON_SIZE = (1024, 1024, 2048)


def gluon_target(size) -> float:
    """The 5 s target scaled by the tile work of ``size`` (M * N * K) against the tutorial's size."""
    m, n, k = size
    return TARGETS["gluon_fused"] * (m * n * k) / (GLUON_SIZE[0] * GLUON_SIZE[1] * GLUON_SIZE[2])


def workloads(names, gluon: bool, gluon_size=GLUON_SIZE):
    """name -> (launch, check(result) -> (ok, msg), run_launch keywords)."""
    from tcsim.examples import cta_pair_gemm, gemm_async, nvfp4_gemm, tcgen05_pipeline_gemm

    def simple(mod, launch, **kw):
        return launch, (lambda res: mod.check(res, launch)), kw

    out = {}
    for name in names:
        if name == "nvfp4":
            out[name] = simple(nvfp4_gemm, nvfp4_gemm.make_launch(seed=0, k=4096, stages=4))
        elif name == "gemm_async":
            out[name] = simple(gemm_async, gemm_async.make_launch())
        elif name == "cta_pair":
            out[name] = simple(cta_pair_gemm, cta_pair_gemm.make_launch())
        elif name == "pipeline_timed":
            out[name] = simple(tcgen05_pipeline_gemm, tcgen05_pipeline_gemm.make_launch(), timing=True)
        elif name == "gluon_fused":
            if not gluon:
                continue
            sys.path.insert(0, str(ROOT / "benchmarks" / "kernels"))
            try:
                import gluon_fused_gather_scatter as g
            except ImportError as e:
                print(f"gluon_fused: skipped ({e})")
                continue
            prep = g.make_launch(*gluon_size)
            out[name] = (prep.launch, (lambda res, prep=prep: g.check(res, prep)), {})
    return out


def _timed(launch, check, kw, detect, tier):
    c, t = time.process_time(), time.perf_counter()
    res = run_launch(launch, detect=detect, tier=tier, **kw)
    cpu, wall = time.process_time() - c, time.perf_counter() - t
    ok, msg = check(res)
    if not ok:
        raise SystemExit(f"result check failed: {msg}")
    return cpu, wall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tier", choices=["reference", "fast", "both"], default="both")
    ap.add_argument("--only", nargs="*", choices=list(TARGETS), default=None)
    ap.add_argument("--no-gluon", action="store_true", help="leave out the Gluon kernel (Triton compile + ~minutes)")
    ap.add_argument("--gluon-size", nargs=3, type=int, default=list(GLUON_SIZE), metavar=("M", "N", "K"),
                    help="the Gluon kernel's size (default the tutorial's 1024 1024 2048; multiples of 128 / 64)")
    ap.add_argument("--profile", choices=list(TARGETS), default=None)
    args = ap.parse_args(argv)
    names = args.only or list(TARGETS)
    tiers = ["reference", "fast"] if args.tier == "both" else [args.tier]
    if args.profile:
        launch, check, kw = workloads([args.profile], True, tuple(args.gluon_size))[args.profile]
        _timed(launch, check, kw, False, tiers[0])
        pr = cProfile.Profile()
        pr.enable()
        run_launch(launch, detect=False, tier=tiers[0], **kw)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(40)
        return 0
    loads = workloads(names, not args.no_gluon, tuple(args.gluon_size))
    print(f"{'workload':16s} {'tier':9s} {'target':>7s} {'cpu s':>8s} {'wall s':>8s} {'/target':>8s} "
          f"{'+detector':>10s} {'wall s':>8s} {'det. cost':>9s}")
    for name, (launch, check, kw) in loads.items():
        for tier in tiers:
            _timed(launch, check, kw, False, tier)                 # warm-up
            best = {False: (1e9, 1e9), True: (1e9, 1e9)}
            for _ in range(args.repeat):
                for detect in (False, True):
                    cpu, wall = _timed(launch, check, kw, detect, tier)
                    if cpu < best[detect][0]:
                        best[detect] = (cpu, wall)
            (c0, w0), (c1, w1) = best[False], best[True]
            tgt = gluon_target(args.gluon_size) if name == "gluon_fused" else TARGETS[name]
            label = name if name != "gluon_fused" or tuple(args.gluon_size) == GLUON_SIZE else \
                "gluon " + "x".join(map(str, args.gluon_size))
            print(f"{label:16s} {tier:9s} {tgt:7.2f} {c0:8.3f} {w0:8.3f} {c0 / tgt:8.2f} {c1:10.3f} {w1:8.3f} "
                  f"{c1 / c0:8.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
