"""``python -m calib.tma``: list, print, record, compare and install the TMA cases (see :mod:`calib.tma`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from calib import pipeline as P
from calib.pipeline import RecordError

from .compare import GOLDEN, compare_dir, install
from .families import all_cases, select
from .ptx import ptxas_all
from .record import record


def _summary(cases: list) -> str:
    fam: dict = {}
    for c in cases:
        d = fam.setdefault(c.family, {})
        d[c.expect] = d.get(c.expect, 0) + 1
    return "\n".join(f"{f:10s} {sum(d.values()):4d}  " + ", ".join(f"{k} {v}" for k, v in sorted(d.items()))
                     for f, d in fam.items()) + f"\n{'total':10s} {len(cases):4d}"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m calib.tma", description="tile-mode TMA cases: record on the GPU, compare with the simulator")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="the case list")
    p.add_argument("--case", action="append", help="name glob or family (repeatable)")
    p.add_argument("-v", action="store_true", help="one line per case")
    p = sub.add_parser("record", help="run the cases on the GPU (or the simulator) and write meta.json + outputs.npz")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--backend", choices=("gpu", "sim"), default="gpu")
    p.add_argument("--jobs", type=int, default=8, help="cases in flight (GPU child processes)")
    p.add_argument("--case", action="append")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds after which cases not yet started are recorded as NOT_RUN")
    p = sub.add_parser("install", help="copy a record directory into tests/golden/tma_h100")
    p.add_argument("--gpu", type=Path, required=True)
    p.add_argument("--dest", type=Path, default=GOLDEN)
    p = sub.add_parser("compare", help="simulate every recorded case and compare with the record")
    p.add_argument("--gpu", type=Path, default=GOLDEN)
    p.add_argument("--case", action="append")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p = sub.add_parser("ptxas", help="assemble every kernel with ptxas -arch=sm_90a")
    p.add_argument("--case", action="append")
    p = sub.add_parser("ptx", help="print one case's kernel")
    p.add_argument("name")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        cases = select(args.case)
        if args.v:
            for c in cases:
                print(f"{c.name:44s} {c.family:9s} {c.expect:6s} ncta {c.ncta} ops {len(c.ops):2d} smem {c.smem:6d}  "
                      f"{c.note}")
        print(_summary(cases))
        return 0
    if args.cmd == "ptx":
        case = all_cases().get(args.name)
        if case is None:
            print(f"calib.tma: no case named {args.name!r} (`python -m calib.tma list -v` lists them)",
                  file=sys.stderr)
            return 2
        print(case.ptx(), end="")
        return 0
    if args.cmd == "ptxas":
        bad = ptxas_all(select(args.case))
        if bad is None:
            print("ptxas is not on PATH")
            return 2
        for n, msg in bad:
            print(f"{n}: {msg}")
        print("every kernel assembles" if not bad else f"{len(bad)} kernel(s) refused")
        return 1 if bad else 0
    if args.cmd in ("install", "compare"):
        try:
            if args.cmd == "install":
                for p in install(args.gpu, args.dest):
                    print(f"installed {p} ({p.stat().st_size} bytes)")
                return 0
            v = compare_dir(args.gpu, args.case, jobs=args.jobs)
        except (RecordError, OSError) as e:       # OSError: a dest that cannot be written
            print(f"calib.tma: {e}", file=sys.stderr)
            return 2
        return 0 if all(x.agree or x.skipped for x in v) else 1
    # record
    from tcsim.hw.launcher import GpuUnavailable

    command = P.command_line("calib.tma", argv)
    cases = select(args.case)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"calib.tma: cannot make the record folder {args.out}: {e}", file=sys.stderr)
        return 2
    try:
        meta = record(args.out, cases, backend=args.backend, jobs=args.jobs, command=command,
                      time_limit=args.time_limit)
    except GpuUnavailable as e:
        print(f"calib.tma: no GPU here: {e}", file=sys.stderr)
        return 2
    print(json.dumps(meta["counts"]))
    print(f"{len(cases)} cases on {meta['gpu']} in {meta['wall_s']} s -> {args.out}")
    return 0
