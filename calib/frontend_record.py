"""Record the GPU side of ``tcsim diff`` for the front-end launch files (tests/fixtures/frontend, issue 16).

    python -m calib.frontend_record --out DIR [--ring 512] [--only NAME ...]       # GPU machine

For each launch file (a Triton kernel replayed through ``tcsim.triton``, a CuTe DSL program through ``tcsim.cute``)
the instrumented launch runs on the GPU only (:func:`tcsim.hw.trace.run_traced`) and is saved as
``DIR/frontend_<name>.npz`` -- what ``tcsim diff LAUNCH --against gpu --save`` saves, without the simulator side,
which ``tcsim diff LAUNCH --against golden:DIR/frontend_<name>.npz`` runs anywhere
(tests/hw/test_frontend_diff.py)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRONT = ROOT / "tests" / "fixtures" / "frontend"
NAMES = ("desc_matmul", "inplace", "cute_tma3")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.frontend_record", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ring", type=int, default=512)
    ap.add_argument("--only", nargs="+", choices=NAMES, default=list(NAMES), help="record these launch files only")
    args = ap.parse_args(argv)
    from tcsim.cli import _launch_of
    from tcsim.hw.trace import run_traced
    args.out.mkdir(parents=True, exist_ok=True)
    rc = 0
    for name in args.only:
        t = time.time()
        try:
            launch = _launch_of(str(FRONT / f"launch_frontend_{name}.py"))
            run = run_traced(launch, backend="gpu", ring_records=args.ring)
            run.save(args.out / f"frontend_{name}.npz")
            print(f"{name}: saved ({run.device}) in {time.time() - t:.1f} s", flush=True)
        except Exception as e:          # noqa: BLE001 - report and go on with the next launch file
            print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
