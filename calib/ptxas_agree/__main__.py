"""``python -m calib.ptxas_agree --seed S --count N [--start K] [--jobs J] [--out record.json]``: a differential
campaign of ``tcsim check`` against ptxas on one-line mutants of the tracked PTX (see calib/ptxas_agree)."""
from __future__ import annotations

import argparse
import json
import shutil
import sys

from .campaign import run_campaign


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.ptxas_agree")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--no-load", action="store_true", help="skip loading accepted mutants")
    ap.add_argument("--time-limit", type=float, default=None, help="stop after this many seconds (partial record)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        print("ptxas is not on PATH: nothing to compare against", file=sys.stderr)
        return 2
    rec = run_campaign(a.seed, a.count, a.start, a.jobs, ptxas, load=not a.no_load, time_limit=a.time_limit)
    rec["command"] = "python -m calib.ptxas_agree " + " ".join(argv if argv is not None else sys.argv[1:])
    text = json.dumps(rec, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(f"{rec['mutants']} mutants, agreement {rec['agreement']:.4f} ({rec['agree']}), "
          f"{len(rec['crashes'])} crashes, {len(rec['load_after_check'])} load errors after check, "
          f"{rec['seconds']} s", file=sys.stderr)
    for k, v in rec["counts"].items():
        print(f"  {k}: {v}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
