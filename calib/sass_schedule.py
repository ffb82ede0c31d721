"""The static schedule of a SASS region: what its control bits alone make it cost (:mod:`tcsim.timing.sass` has the
decoding and the schedule; this is its command line).  The same ldmatrix / mma.sync loop costs 430 or ~700 clk per
k-tile on the H100 depending on ptxas's register allocation, and this reproduces both with one ldmatrix latency
(tests/golden/timing_h100/README.md).

    python -m calib.sass_schedule FILE.ptx [--from ADDR --to ADDR] [--ldsm-latency N]   # needs ptxas + cuobjdump
    python -m calib.sass_schedule --listing FILE.sass --from ADDR --to ADDR               # a saved cuobjdump -sass

Without ``--from/--to`` it prints every region between two ``%clock64`` reads (CS2R SR_CLOCKLO).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tcsim.isa import ptxas
from tcsim.timing.sass import default_latencies, parse_listing, static_cycles


def clock_regions(instrs) -> list:
    """(first, last) addresses of the instructions strictly between consecutive CS2R SR_CLOCKLO reads."""
    clocks = [i for i, ins in enumerate(instrs) if "SR_CLOCKLO" in ins.text]
    return [(instrs[a + 1].addr, instrs[b - 1].addr) for a, b in zip(clocks, clocks[1:]) if b > a + 1]


def listing_of(ptx: Path, arch: str = "sm_90a") -> str:
    r = ptxas.sass(ptx.read_text(), arch)
    if r is None:
        raise RuntimeError("ptxas or cuobjdump is not on PATH (or pass --listing)")
    if not r[0]:
        raise RuntimeError(f"ptxas failed: {ptxas.first_error(r[1])}")
    return r[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.sass_schedule")
    ap.add_argument("ptx", nargs="?", type=Path)
    ap.add_argument("--listing", type=Path, help="a saved cuobjdump -sass listing instead of compiling PTX")
    ap.add_argument("--from", dest="lo", type=lambda s: int(s, 16))
    ap.add_argument("--to", dest="hi", type=lambda s: int(s, 16))
    ap.add_argument("--ldsm-latency", type=float)
    a = ap.parse_args(argv)
    try:
        text = a.listing.read_text() if a.listing else listing_of(a.ptx) if a.ptx else None
    except (OSError, RuntimeError) as e:
        print(f"calib.sass_schedule: {e}", file=sys.stderr)
        return 2
    if text is None:
        ap.error("give a PTX file or --listing")
    instrs = parse_listing(text)
    lat = default_latencies()
    if a.ldsm_latency is not None:
        lat["LDSM"] = a.ldsm_latency
    regions = [(a.lo, a.hi)] if a.lo is not None and a.hi is not None else clock_regions(instrs)
    for lo, hi in regions:
        n = sum(lo <= i.addr <= hi for i in instrs)
        print(f"0x{lo:04x}-0x{hi:04x}: {n} instructions, {static_cycles(instrs, lo, hi, lat):.1f} cycles (static)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
