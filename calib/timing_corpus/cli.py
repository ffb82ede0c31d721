"""Command line of the timing corpus (``python -m calib.timing_corpus ...``)::

    list [-v]                                    # kernels, their source and split
    build [--cuda-only | --triton-only | --heldout DIR]   # regenerate ptx/, triton/ (nvcc 13.0, Triton 3.9), heldout/
    record --out DIR [--backend gpu|sim] [--kernel GLOB ...] [--reps 5] [--batch 12] [--jobs N] [--sass-dir D]
    install --gpu DIR [--merge]                  # -> tests/golden/timing_corpus_h100/{meta.json,timings.npz}
    timing evaluate [--jobs N] [--kernel GLOB ...]   # simulate every kernel -> evaluation.json (the cache)
    timing report [--cached | --cache FILE] [--jobs N] [--gpu DIR]   # per-kernel table + one line per split
    timing fit GROUP [--jobs N]                  # fit a parameter group on the fit split (calib/timing_corpus/fit.py)
    timing readme [--write]                      # the README's timing-corpus section from the cache

On the GPU machine: ``bash calib/timing_corpus/device_run.sh "$OUT"``.
"""
from __future__ import annotations

import argparse
import fnmatch
import sys
from pathlib import Path

from calib import pipeline as P

from . import evaluate as E
from . import fit as F
from . import record as R
from .split import HELDOUT, SPLITS, split_of


class CliError(Exception):
    pass


def select(globs) -> list:
    allnames = R.names()
    if not globs:
        return allnames
    out = []
    for g in globs:
        hit = [n for n in allnames if fnmatch.fnmatchcase(n, g)]
        if not hit:
            raise CliError(f"no corpus kernel matches {g!r} (python -m calib.timing_corpus list)")
        out += [n for n in hit if n not in out]
    return out


def cmd_list(verbose: bool) -> int:
    from . import kernels as K
    counts = {s: 0 for s in SPLITS + (HELDOUT,)}
    for n in R.names():
        s = split_of(n)
        counts[s] += 1
        line = f"{n:34s} {s:10s} {R.source_of(n)}"
        if verbose and n in K.BY_NAME:
            k = K.BY_NAME[n]
            line += f"  block {k.block} smem {k.smem}  {k.note}"
        print(line)
    print(f"{len(R.names())} kernels: " + ", ".join(f"{counts[s]} {s}" for s in SPLITS + (HELDOUT,)))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.timing_corpus", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list")
    p.add_argument("-v", action="store_true")
    p = sub.add_parser("build")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--cuda-only", action="store_true")
    g.add_argument("--triton-only", action="store_true")
    g.add_argument("--heldout", type=Path, metavar="CUDA_SAMPLES_DIR",
                   help="only the held-out PTX, from a cuda-samples checkout (build.CUDA_SAMPLES_COMMIT)")
    p = sub.add_parser("record")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--backend", choices=("gpu", "sim"), default="gpu")
    p.add_argument("--kernel", action="append", default=[])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--sass-dir", type=Path)
    p = sub.add_parser("install")
    p.add_argument("--gpu", required=True, type=Path)
    p.add_argument("--merge", action="store_true", help="add a --kernel record's kernels to the installed record")
    p = sub.add_parser("timing")
    tsub = p.add_subparsers(dest="what", required=True)
    q = tsub.add_parser("evaluate")
    q.add_argument("--jobs", type=int, default=1)
    q.add_argument("--kernel", action="append", default=[])
    q = tsub.add_parser("report")
    q.add_argument("--cached", action="store_true", help="the committed evaluation.json instead of simulating")
    q.add_argument("--jobs", type=int, default=1)
    q.add_argument("--gpu", type=Path, help="a record folder instead of the installed golden data")
    q.add_argument("--cache", type=Path, help="an evaluation file instead (e.g. calib/timing_corpus/baseline.json: "
                   "the model before issue 21)")
    q = tsub.add_parser("fit", help="fit a parameter group on the fit split (prints the values)")
    q.add_argument("group", choices=sorted(F.GROUPS))
    q.add_argument("--jobs", type=int, default=1)
    q = tsub.add_parser("readme")
    q.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "list":
            return cmd_list(args.v)
        if args.cmd == "build":
            from . import build
            return build.main(cuda=not args.triton_only, triton=not args.cuda_only, heldout=args.heldout)
        if args.cmd == "record":
            command = P.command_line("calib.timing_corpus", sys.argv[1:] if argv is None else argv)
            meta = R.record(args.out, args.backend, args.reps, select(args.kernel), command, batch=args.batch,
                            jobs=args.jobs, sass_dir=args.sass_dir)
            return 0 if all(e.get("status") == "ok" for e in meta["kernels"].values()) else 1
        if args.cmd == "install":
            return E.install(args.gpu, merge=args.merge)
        if args.what == "evaluate":
            E.evaluate(select(args.kernel), jobs=args.jobs, write=True)
            return 0
        if args.what == "report":
            return E.report(cached=args.cached, jobs=args.jobs, gpu_dir=args.gpu, cache=args.cache)
        if args.what == "fit":
            F.fit_group(args.group, jobs=args.jobs)
            return 0
        if args.what == "readme":
            return E.readme(write=args.write)
    except (CliError, P.RecordError, E.EvalError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
