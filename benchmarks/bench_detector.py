"""Cost of the happens-before race detector (tcsim.race.hb): every example (examples/*.py launch files) run with
the detector off and on, in one process, timing off and on; prints the wall time of each and the on/off ratio
(the issue-15 target: at most 2x).

    python benchmarks/bench_detector.py [--repeat N] [NAME ...]
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import time


def examples() -> list[str]:
    import tcsim.examples as ex
    return sorted(m.name for m in pkgutil.iter_modules(ex.__path__) if not m.name.startswith("_") and not m.ispkg)


def best(launch_fn, repeat, **kw) -> float:
    from tcsim.launch import run_launch
    t_best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        run_launch(launch_fn(), **kw)
        t_best = min(t_best, time.perf_counter() - t)
    return t_best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2, help="runs per configuration (the best is kept)")
    ap.add_argument("names", nargs="*", help="examples to run (default: all)")
    args = ap.parse_args(argv)
    tot_off = tot_on = 0.0
    print(f"{'example':<24} {'timing':<6} {'off s':>8} {'on s':>8} {'on/off':>7}")
    for name in args.names or examples():
        mod = importlib.import_module(f"tcsim.examples.{name}")
        for timing in (False, True):
            off = best(mod.make_launch, args.repeat, timing=timing, detect=False)
            on = best(mod.make_launch, args.repeat, timing=timing, detect=True)
            tot_off += off
            tot_on += on
            print(f"{name:<24} {str(timing):<6} {off:8.3f} {on:8.3f} {on / off:7.2f}")
    print(f"{'total':<24} {'':<6} {tot_off:8.3f} {tot_on:8.3f} {tot_on / tot_off:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
