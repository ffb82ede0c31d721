"""The static schedule of a SASS region: what its control bits alone make it cost.

Every sm_90 SASS instruction carries control bits (the top 21 bits of its second 64-bit word): a stall count (cycles
before the warp issues its next instruction), a yield bit, a write and a read scoreboard barrier it sets (for
variable-latency instructions: LDSM, LDS, LDG, ...) and a mask of the barriers it waits for.  Fixed-latency
dependences (HMMA, ALU) are resolved by the compiler through stall counts.  So one warp's time through straight-line
SASS is, to first order, the sum of its stall counts plus the waits on barriers released ``latency`` cycles after
the variable-latency instruction that set them -- a schedule PTX does not show (hw/microbench: the same ldmatrix /
mma.sync loop costs 430 or ~700 clk per k-tile depending on ptxas's register allocation; this reproduces both with
one ldmatrix latency, tests/golden/timing_h100/README.md).

    python -m hw.sass_schedule FILE.ptx [--from ADDR --to ADDR] [--ldsm-latency N]   # needs ptxas + cuobjdump
    python -m hw.sass_schedule --listing FILE.sass --from ADDR --to ADDR               # a saved cuobjdump -sass

Without ``--from/--to`` it prints every region between two ``%clock64`` reads (CS2R SR_CLOCKLO).
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_INS = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_HEX = re.compile(r"0x([0-9a-f]{16})")


@dataclass(frozen=True)
class SassIns:
    addr: int
    text: str
    stall: int
    yield_: bool
    write_barrier: int | None
    read_barrier: int | None
    wait_mask: int

    @property
    def opcode(self) -> str:
        return re.sub(r"^@!?U?P\w+\s+", "", self.text).split(" ")[0]


def parse_listing(text: str) -> list:
    """The instructions of a ``cuobjdump -sass`` listing (sm_90: two 64-bit words per instruction, the second on
    the next line), with their decoded control bits."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = _INS.match(line)
        if not m or i + 1 >= len(lines):
            continue
        h = _HEX.search(lines[i + 1])
        if not h:
            continue
        ctrl = int(h.group(1), 16) >> 41
        wb, rb = (ctrl >> 5) & 7, (ctrl >> 8) & 7
        out.append(SassIns(int(m.group(1), 16), m.group(2).strip(), ctrl & 0xF, bool((ctrl >> 4) & 1),
                           None if wb == 7 else wb, None if rb == 7 else rb, (ctrl >> 11) & 0x3F))
    return out


def default_latencies() -> dict:
    """Write-barrier release latencies by opcode prefix, from the sm_90a timing config (an LDSM.x4 moves four
    128-byte phases: ldmatrix_latency + 3 x smem_conflict_cycles)."""
    from sim.timing.params import arch_config
    cfg = arch_config("sm_90a")
    return {"LDSM": cfg.ldmatrix_latency + 3 * cfg.smem_conflict_cycles, "LDS": cfg.smem_latency,
            "LDG": cfg.l1_latency, "LDC": cfg.const_hit_latency, "S2R": 20, "": cfg.smem_latency}


def static_cycles(instrs, lo: int, hi: int, latencies: dict | None = None, read_latency: float = 4) -> float:
    """Cycles one warp spends issuing the instructions at addresses lo..hi (inclusive) in order: each issues its
    predecessor's stall count later, and not before every barrier of its wait mask is released; a barrier is
    released ``latencies[opcode prefix]`` after the instruction that set it as its write barrier, and
    ``read_latency`` after one that set it as its read barrier.  Branches are not followed."""
    lat = latencies or default_latencies()
    release = [0.0] * 6
    t = 0.0
    for ins in instrs:
        if not lo <= ins.addr <= hi:
            continue
        for b in range(6):
            if ins.wait_mask >> b & 1:
                t = max(t, release[b])
        if ins.write_barrier is not None:
            key = next((k for k in sorted(lat, key=len, reverse=True) if ins.opcode.startswith(k)), "")
            release[ins.write_barrier] = t + lat[key]
        if ins.read_barrier is not None:
            release[ins.read_barrier] = t + read_latency
        t += ins.stall
    return t


def clock_regions(instrs) -> list:
    """(first, last) addresses of the instructions strictly between consecutive CS2R SR_CLOCKLO reads."""
    clocks = [i for i, ins in enumerate(instrs) if "SR_CLOCKLO" in ins.text]
    return [(instrs[a + 1].addr, instrs[b - 1].addr) for a, b in zip(clocks, clocks[1:]) if b > a + 1]


def listing_of(ptx: Path, arch: str = "sm_90a") -> str:
    for tool in ("ptxas", "cuobjdump"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not on PATH (or pass --listing)")
    with tempfile.TemporaryDirectory() as d:
        cub = Path(d) / "k.cubin"
        r = subprocess.run(["ptxas", f"-arch={arch}", "-o", str(cub), str(ptx)], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"ptxas failed: {r.stderr.strip()[:400]}")
        return subprocess.run(["cuobjdump", "-sass", str(cub)], capture_output=True, text=True, check=True).stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hw.sass_schedule")
    ap.add_argument("ptx", nargs="?", type=Path)
    ap.add_argument("--listing", type=Path, help="a saved cuobjdump -sass listing instead of compiling PTX")
    ap.add_argument("--from", dest="lo", type=lambda s: int(s, 16))
    ap.add_argument("--to", dest="hi", type=lambda s: int(s, 16))
    ap.add_argument("--ldsm-latency", type=float)
    a = ap.parse_args(argv)
    try:
        text = a.listing.read_text() if a.listing else listing_of(a.ptx) if a.ptx else None
    except (OSError, RuntimeError) as e:
        print(f"hw.sass_schedule: {e}", file=sys.stderr)
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
