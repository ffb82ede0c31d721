"""Shared command-line driver for the examples: ``python -m tcsim.examples.<name> [--seed N] [--trace F]``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ptx_path(name: str) -> Path:
    return HERE / name


def example_main(mod, argv=None) -> int:
    from tcsim.cli import _run_module

    ap = argparse.ArgumentParser(prog=f"python -m {mod.__name__}", description=getattr(mod, "DESCRIPTION", ""))
    ap.add_argument("--backend", choices=["sim", "gpu", "both"], default="sim",
                    help="sim, the real GPU, or both compared bit for bit")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--trace", default=None)
    ap.add_argument("--max-instructions", type=int, default=None)
    args = ap.parse_args(argv)
    from tcsim.isa.errors import TcsimError
    try:
        return _run_module(mod, args)
    except TcsimError as e:
        print(str(e), file=sys.stderr)
        return 1
