"""Cost of the happens-before race detector (tcsim.race.hb): every example (examples/*.py launch files) run with
the detector off and on, in one process, timing off and on; prints the wall time of each and the on/off ratio
(the issue-15 target: at most 2x on every example; the last line names the worst).

    python benchmarks/bench_detector.py [--repeat N] [--clock wall|cpu] [NAME ...]

``--clock cpu`` times the process's CPU time (time.process_time) instead of the wall clock: the simulator runs on
one thread, so on an idle machine the two agree, and on a shared one the CPU time is the figure that does not
depend on the other jobs.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import time


def examples() -> list[str]:
    import tcsim.examples as ex
    return sorted(m.name for m in pkgutil.iter_modules(ex.__path__) if not m.name.startswith("_") and not m.ispkg)


def best(launch_fn, repeat, clock=time.perf_counter, **kw) -> float:
    from tcsim.launch import run_launch
    t_best = float("inf")
    for _ in range(repeat):
        t = clock()
        run_launch(launch_fn(), **kw)
        t_best = min(t_best, clock() - t)
    return t_best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2, help="runs per configuration (the best is kept)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall clock (default) or this process's CPU time")
    ap.add_argument("names", nargs="*", help="examples to run (default: all)")
    args = ap.parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    tot_off = tot_on = 0.0
    worst = (0.0, "")
    print(f"{'example':<24} {'timing':<6} {'off s':>8} {'on s':>8} {'on/off':>7}")
    for name in args.names or examples():
        mod = importlib.import_module(f"tcsim.examples.{name}")
        best(mod.make_launch, 1, clock, timing=False, detect=True)      # warm-up (parse caches, imports), untimed
        for timing in (False, True):
            off = best(mod.make_launch, args.repeat, clock, timing=timing, detect=False)
            on = best(mod.make_launch, args.repeat, clock, timing=timing, detect=True)
            tot_off += off
            tot_on += on
            print(f"{name:<24} {str(timing):<6} {off:8.3f} {on:8.3f} {on / off:7.2f}")
            worst = max(worst, (on / off, f"{name} timing {timing}"))
    print(f"{'total':<24} {'':<6} {tot_off:8.3f} {tot_on:8.3f} {tot_on / tot_off:7.2f}")
    print(f"worst on/off: {worst[0]:.2f} ({worst[1]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
