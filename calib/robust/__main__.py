"""``python -m calib.robust`` -- the robustness campaign (see :mod:`calib.robust`).

    python -m calib.robust --count N [--seed S] [--jobs J] [--time-limit T] [--mem-gib G] [--out DIR]
                           [--record FILE] [--minimize K] [--save-regressions]
    python -m calib.robust --replay [DIR]          replay the regression files (default tests/robust_regressions)
    python -m calib.robust --combine R1.json R2.json ... --record OUT.json   one record of several chunks

Exit status: 0 no finding (no traceback, hang, memory blow-up, crash or unlocated diagnostic), 1 findings, 2 usage.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.robust", description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=20.0, help="seconds per case (a longer case is a hang)")
    ap.add_argument("--mem-gib", type=float, default=3.0, help="address-space limit of each worker")
    ap.add_argument("--max-bytes", type=int, default=None, help="mutate only tracked PTX files up to this size")
    ap.add_argument("--budget", type=int, default=None,
                    help="instruction budget of run/launch cases (default: calib.robust.generate.RUN_BUDGET; 0: the "
                         "simulator's own default budget)")
    ap.add_argument("--mix", default=None, help='JSON fractions per case kind, e.g. \'{"check": 0.9, "run": 0.1}\'')
    ap.add_argument("--out", default=None, help="write every finding (case + outcome) as DIR/findings.jsonl")
    ap.add_argument("--record", default=None, help="write the campaign record (counts per class, command) here")
    ap.add_argument("--minimize", type=int, default=0, help="minimise up to K findings (one per signature)")
    ap.add_argument("--minimize-time", type=float, default=120.0, help="seconds per minimisation")
    ap.add_argument("--save-regressions", default=None, metavar="DIR",
                    help="write the minimised findings as regression files into DIR")
    ap.add_argument("--replay", nargs="?", const="tests/robust_regressions", default=None,
                    help="replay the regression files of DIR")
    ap.add_argument("--combine", nargs="+", default=None, metavar="RECORD", help="combine chunk records")
    args = ap.parse_args(argv)
    from .campaign import campaign, combine, replay

    if args.combine:
        rec = combine([json.loads(Path(p).read_text()) for p in args.combine])
        text = json.dumps(rec, indent=1, sort_keys=True) + "\n"
        if args.record:
            Path(args.record).write_text(text)
        print(json.dumps({k: rec[k] for k in ("cases", "classes", "findings")}, indent=1))
        return 1 if rec["findings"] else 0

    if args.replay is not None:
        bad = replay(Path(args.replay), jobs=args.jobs, time_limit=args.time_limit,
                     mem=int(args.mem_gib * (1 << 30)), log=print)
        print(f"{len(bad)} regression file(s) still failing")
        return 1 if bad else 0
    t0 = time.time()
    rec = campaign(args.seed, args.count, start=args.start, jobs=args.jobs, time_limit=args.time_limit,
                   mem=int(args.mem_gib * (1 << 30)), max_bytes=args.max_bytes, out=args.out,
                   minimize=args.minimize, minimize_time=args.minimize_time, save=args.save_regressions, log=lambda s: print(s, flush=True),
                   mix=json.loads(args.mix) if args.mix else None,
                   budget="default" if args.budget is None else (args.budget or None))
    rec["command"] = "python -m calib.robust " + " ".join(sys.argv[1:] if argv is None else argv)
    rec["wall_s"] = round(time.time() - t0, 1)
    print(json.dumps({k: rec[k] for k in ("classes", "by_kind", "wall_s")}, indent=1))
    if args.record:
        Path(args.record).parent.mkdir(parents=True, exist_ok=True)
        Path(args.record).write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return 1 if rec["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
