"""``python -m calib.fuzz --count N --seed S [--backend gpu] [--out DIR]`` -- differential fuzzing campaign.

Without ``--backend gpu`` the programs run on the simulator only (two scheduler seeds must agree; simulator
errors on valid programs are findings).  ``--emit DIR`` only writes the programs as .ptx files (for ptxas).
Exit status: 0 no findings, 1 findings (see DIR/summary.json and the saved reproducers), 2 bad usage or no GPU.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0, help="first program seed (programs seed .. seed+count-1)")
    ap.add_argument("--backend", choices=["sim", "gpu"], default="sim")
    ap.add_argument("--out", default="fuzz_out", help="directory for summary.json and minimised reproducers")
    ap.add_argument("--jobs", type=int, default=None, help="simulator worker processes (default: CPUs)")
    ap.add_argument("--time-limit", type=float, default=None, help="stop starting new programs after this many "
                                                                   "seconds (minimisation included)")
    ap.add_argument("--batch", type=int, default=64, help="programs per GPU module / simulator batch")
    ap.add_argument("--minimize-limit", type=int, default=6, help="at most this many findings are minimised")
    ap.add_argument("--minimize-time", type=float, default=60.0, help="seconds per minimisation")
    ap.add_argument("--gpu-workers", type=int, default=None,
                    help="GPU child processes working in parallel (JIT is the GPU side's cost; default 1)")
    ap.add_argument("--emit", default=None, help="only write the programs as DIR/fuzz_<seed>.ptx")
    ap.add_argument("--generator", type=int, default=None, help="generator version (default: the current one)")
    args = ap.parse_args(argv)
    if args.emit:
        from .generator import generate
        d = Path(args.emit)
        d.mkdir(parents=True, exist_ok=True)
        for s in range(args.seed, args.seed + args.count):
            (d / f"fuzz_{s}.ptx").write_text(generate(s, version=args.generator).render())
        print(f"wrote {args.count} programs to {d}")
        return 0
    from .runner import fuzz
    try:
        summary = fuzz(args.count, args.seed, args.backend, args.out, jobs=args.jobs, time_limit=args.time_limit,
                       batch_size=args.batch, minimize_limit=args.minimize_limit, minimize_time=args.minimize_time,
                       gpu_workers=args.gpu_workers, version=args.generator,
                       log=lambda s: print(s, flush=True))
    except Exception as e:  # noqa: BLE001
        from tcsim.hw.launcher import GpuUnavailable
        if isinstance(e, GpuUnavailable):
            print(f"python -m calib.fuzz: GPU unavailable: {e}", file=sys.stderr)
            return 2
        raise
    n_find = len(summary["schedule_mismatches"]) + len(summary["sim_errors"]) + len(summary["gpu_mismatches"])
    print(f"ran {summary['ran_sim']} programs on the simulator"
          + (f", {summary['ran_gpu']} on the GPU ({summary['device']})" if args.backend == "gpu" else "")
          + f" in {summary['wall_s']} s: {len(summary['schedule_mismatches'])} schedule-dependent, "
            f"{len(summary['sim_errors'])} simulator errors, {len(summary['gpu_mismatches'])} GPU mismatches; "
            f"{len(summary['minimised'])} minimised -> {args.out}")
    return 1 if n_find else 0


if __name__ == "__main__":
    sys.exit(main())
