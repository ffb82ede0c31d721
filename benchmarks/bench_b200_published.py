"""tcsim's sm_100a (B200) timing against PUBLISHED whole-kernel B200 results that no sm_100a parameter was taken from
(issue 21, item 4).  ``benchmarks/bench_tcgen05_fits.py`` reproduces the microbenchmark fits the config was built
from (consistency); this compares with numbers the config never saw (fidelity), printed side by side with the error.

    python benchmarks/bench_b200_published.py [--quick] [--estimates]

Published figures (each row names its source: repository, commit, file):

* ThunderKittens' educational B200 GEMMs (github.com/HazyResearch/ThunderKittens, commit
  0b55588d2769dde0c7a9a606ffc015b0ca7a9551, ``kernels/gemm/educational_b200/README.md``): BF16 GEMM,
  M = N = K = 4096, TFLOP/s of each level.  Level 07 -- "pipelined warp specialization (TMA loader + MMA issuer)",
  ``level_07.cu``: 128 x 128 x 64 tiles, a 3-stage TMA ring, one thread issuing tcgen05.mma, 4 warps, one CTA per
  128 x 128 tile of D (grid 1024, ``__launch_bounds__(128, 1)``: one CTA per SM at a time) -- 731 TFLOP/s.

How tcsim is run: the same recipe in the project's own kernel, ``tcsim.examples.tcgen05_pipeline_gemm`` (TMA
producer thread, MMA-issuer thread, full/empty mbarrier ring, K=16 ``tcgen05.mma.cta_group::1.kind::f16`` into
TMEM, ``tcgen05.ld`` epilogue), bf16, BM = BN = 128, K = 4096 (64 stages of 64), simulated for ONE tile with the
sm_100a config; the whole GPU's time is ``ceil(tiles / 148 SMs)`` waves of that tile at 1965 MHz (tcsim simulates
one SM: the 147 other SMs' share of L2 / HBM is the config's per-SM bandwidth, not contention).  Differences from
level 07, stated: a 2-slot ring (level 07: 3 stages), an f32 D stored by the threads (level 07: bf16 through SMEM
and a TMA store).

Every sm_100a parameter's kind is in ``sim/timing/params.py`` (M measured, S vendor spec, D derived, E estimate);
``--estimates`` lists the estimates.  The B200 GEMM figures here are not parameters of any kind.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tcsim.launch import run_launch  # noqa: E402
from tcsim.timing.params import arch_config  # noqa: E402

TK = "github.com/HazyResearch/ThunderKittens @ 0b55588d, kernels/gemm/educational_b200/README.md (level_07.cu)"
B200_SMS = 148
#: (label, source, M, N, K, published TFLOP/s, tcsim kernel, its BM, BN)
ROWS = (
    ("BF16 GEMM 4096^3, TMA + mbarrier ring + tcgen05.mma, 128x128 tiles (TK level 07)", TK,
     4096, 4096, 4096, 731.0, "tcgen05_pipeline_gemm", 128, 128),
)


def simulate_tile(kernel: str, bm: int, bn: int, k: int) -> int:
    """Simulated cycles of one CTA computing one bm x bn tile of D over K = k (sm_100a timing)."""
    if kernel != "tcgen05_pipeline_gemm":
        raise ValueError(kernel)
    from tcsim.examples import tcgen05_pipeline_gemm as ex
    launch = ex.make_launch(dtype="bf16", m=bm, n=bn, k_stages=k // ex.K_STAGE, bn=bn)
    res = run_launch(launch, timing=True)
    if res.timing is None or res.timing.arch != "sm_100a":
        raise RuntimeError("no sm_100a timing report")
    return int(res.timing.cycles)


def whole_gpu_tflops(m: int, n: int, k: int, bm: int, bn: int, tile_cycles: float, clock_mhz: float) -> float:
    """TFLOP/s of an m x n x k GEMM whose (m/bm)(n/bn) tiles run one per SM, ``ceil(tiles / 148)`` waves of
    ``tile_cycles`` each."""
    waves = math.ceil((m // bm) * (n // bn) / B200_SMS)
    seconds = waves * tile_cycles / (clock_mhz * 1e6)
    return 2.0 * m * n * k / seconds / 1e12


def estimates() -> list:
    cfg = arch_config("sm_100a")
    return sorted((name, p) for name, p in cfg.params.items() if p.kind == "E")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="K = 1024 instead of the published K (scaled per tile)")
    ap.add_argument("--estimates", action="store_true", help="list the sm_100a parameters that are estimates")
    args = ap.parse_args(argv)
    clock = float(arch_config("sm_100a").sm_clock_mhz)
    print(f"{'kernel':78s} {'published':>10s} {'tcsim':>10s} {'error':>8s}  (TFLOP/s)")
    worst = 0.0
    for label, src, m, n, k, pub, kernel, bm, bn in ROWS:
        ksim = 1024 if args.quick else k
        cyc = simulate_tile(kernel, bm, bn, ksim)
        sim = whole_gpu_tflops(m, n, ksim, bm, bn, cyc, clock)
        err = (sim - pub) / pub
        worst = max(worst, abs(err))
        print(f"{label:78s} {pub:10.0f} {sim:10.0f} {100 * err:+7.1f}%")
        print(f"    source: {src}; tcsim: {kernel} bf16 {bm}x{bn}, K={ksim}: {cyc} clk per tile, "
              f"{math.ceil((m // bm) * (n // bn) / B200_SMS)} waves at {clock:.0f} MHz")
    est = estimates()
    print(f"sm_100a config: {len(est)} of {len(arch_config('sm_100a').params)} parameters are estimates (kind E)"
          + ("" if args.estimates else "; --estimates lists them"))
    if args.estimates:
        for name, p in est:
            print(f"    {name} = {p.value:g} {p.unit}: {p.note or p.source}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
