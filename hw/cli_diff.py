"""``tcsim diff``: run a launch file traced on the simulator and on another back end, compare bit for bit.

    tcsim diff LAUNCH.py [--points all|L1,L2,...] [--against gpu|golden:PATH|sim[:SEED]] [--ring N]
                         [--seed N] [--save PATH] [--save-sim PATH]

Both sides run the same instrumented PTX (:mod:`tcsim.isa.instrument`); the report (:mod:`tcsim.hw.diff`) lists the
output buffers and the per-warp register-value sequences that differ.  ``--against gpu`` (the default) runs
on GPU 0 through :mod:`tcsim.hw.launcher`; ``golden:PATH`` compares with a run saved earlier by ``--save`` (e.g.
on a machine with a GPU); ``sim:SEED`` compares with the simulator under another scheduler seed.

Exit status: 0 bit-identical, 1 different (or a diagnostic), 2 no GPU here / bad usage.

The command line that registers ``diff`` (:func:`tcsim.cli.main`) passes how it turns a launch file into a launch,
so this module never imports the CLI that imports it.
"""
from __future__ import annotations

import argparse
import functools
import sys

__all__ = ["add_parser", "cmd_diff"]


def add_parser(subparsers, load_launch):
    """Register the ``diff`` subcommand on an argparse ``subparsers`` object (``fn=cmd_diff``).
    ``load_launch(spec)``: the :class:`tcsim.launch.Launch` of a launch file or module name (raising
    FileNotFoundError, ModuleNotFoundError or AttributeError for one that is not there or defines no launch)."""
    p = subparsers.add_parser("diff", help="run a launch traced on the simulator and on the GPU (or a golden "
                                           "file) and compare outputs and register values bit for bit",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("launch", help="a Python launch file (defines make_launch()) or an examples module")
    p.add_argument("--points", default="all",
                   help="'all' (default) or comma-separated PTX line numbers of the instructions to trace")
    p.add_argument("--against", default="gpu",
                   help="gpu (default), golden:PATH (a run saved with --save) or sim[:SEED]")
    p.add_argument("--ring", type=int, default=256, help="trace records kept per warp (default 256)")
    p.add_argument("--seed", type=int, default=None, help="the simulator's scheduler seed")
    p.add_argument("--save", metavar="PATH", help="save the other side's traced run (.npz) for golden: use")
    p.add_argument("--save-sim", metavar="PATH", help="save the simulator's traced run (.npz)")
    p.add_argument("--max-items", type=int, default=8, help="how many differences to list per section")
    p.add_argument("--report", metavar="OUT.html", default=None,
                   help="also write the HTML report of the simulator's run with the comparison, opening at the "
                        "first divergence (tcsim.report)")
    p.set_defaults(fn=functools.partial(cmd_diff, load_launch=load_launch))
    return p


def _parse_points(s: str):
    if s.strip().lower() == "all":
        return "all"
    try:
        return [int(x) for x in s.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--points must be 'all' or comma-separated line numbers, got {s!r}")


def cmd_diff(args, load_launch) -> int:
    from tcsim.isa.errors import TcsimError

    from .diff import diff_runs
    from .launcher import GpuUnavailable, gpu_available
    from .trace import TracedRun, run_traced

    try:
        points = _parse_points(args.points)
    except argparse.ArgumentTypeError as e:
        print(f"tcsim diff: {e}", file=sys.stderr)
        return 2
    against = args.against
    if not (against == "gpu" or against.startswith("golden:") or against == "sim" or against.startswith("sim:")):
        print(f"tcsim diff: --against must be gpu, golden:PATH or sim[:SEED], got {against!r}", file=sys.stderr)
        return 2
    try:
        launch = load_launch(args.launch)
    except (FileNotFoundError, ModuleNotFoundError, AttributeError) as e:
        print(f"tcsim diff: {e}", file=sys.stderr)
        return 2
    try:
        if against == "gpu":
            ok, why = gpu_available()
            if not ok:
                print(f"tcsim diff: no GPU to compare against: {why}")
                return 2
            try:
                other = run_traced(launch, backend="gpu", points=points, ring_records=args.ring)
            except GpuUnavailable as e:
                print(f"tcsim diff: no GPU to compare against: {e}")
                return 2
        elif against.startswith("golden:"):
            try:
                other = TracedRun.load(against[len("golden:"):])
            except FileNotFoundError as e:
                print(f"tcsim diff: {e}", file=sys.stderr)
                return 2
        else:
            seed = int(against.split(":", 1)[1]) if ":" in against else None
            other = run_traced(launch, backend="sim", points=points, ring_records=args.ring, seed=seed)
        if against.startswith("golden:"):
            # instrument exactly as the golden run was (same points, same ring), unless told otherwise
            ring = other.layout.ring_records
            pts = sorted({p.line for p in other.layout.points}) if points == "all" else points
        else:
            ring, pts = args.ring, points
        mine = run_traced(launch, backend="sim", points=pts, ring_records=ring, seed=args.seed)
        if args.save:
            other.save(args.save)
        if args.save_sim:
            mine.save(args.save_sim)
        try:
            rep = diff_runs(mine, other)
        except ValueError as e:
            print(f"tcsim diff: {e}", file=sys.stderr)
            return 1
    except TcsimError as e:
        print(str(e), file=sys.stderr)
        return 1
    print(f"tcsim diff {args.launch}")
    print(rep.format(args.max_items))
    if args.report:                 # the simulator's run, uninstrumented, with the comparison (tcsim.report)
        from tcsim.report import VisualOutputs, diff_json
        from tcsim.launch import run_launch
        vo = VisualOutputs(report=args.report)
        res = run_launch(launch, timing=True, seed=args.seed, observers=vo.observers)
        for line in vo.write(res, launch, title=f"{args.launch} (tcsim diff)", diff=diff_json(rep)):
            print(line)
    if args.save:
        print(f"saved the {other.backend} run to {args.save}")
    if args.save_sim:
        print(f"saved the simulator run to {args.save_sim}")
    return 0 if rep.identical else 1
