"""SASS control bits and the static schedule they give (sm_90), for the timing model and calib/sass_schedule.py.

Every sm_90 SASS instruction carries control bits (the top 21 bits of its second 64-bit word): a stall count (cycles
before the warp issues its next instruction), a yield bit, a write and a read scoreboard barrier it sets (for
variable-latency instructions: LDSM, LDS, LDG, ...) and a mask of the barriers it waits for.  Fixed-latency
dependences (HMMA, ALU) are resolved by the compiler through stall counts.  So one warp's time through straight-line
SASS is, to first order, the sum of its stall counts plus the waits on barriers released ``latency`` cycles after
the variable-latency instruction that set them -- a schedule the PTX does not show.

``SASS_FACTS`` (package data tcsim/timing/data/sass_facts_h100.json, written by ``python -m calib.sass_facts``) holds, per kernel
(keyed by :func:`kernel_fingerprint`), the SASS of its counted mma.sync loops that ptxas unrolls whole: the timing
model charges such a loop the static schedule of its SASS instead of timing its PTX.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

SASS_FACTS = Path(__file__).resolve().parent / "data" / "sass_facts_h100.json"
#: per kernel (keyed by :func:`kernel_fingerprint`), which of its loops ptxas 13.0 keeps rolled for sm_90a
#: (``python -m calib.timing_corpus loop-facts``; calib/timing_corpus/sass_loops.py)
LOOP_FACTS = Path(__file__).resolve().parent / "data" / "loop_facts_h100.json"
_FACTS_CACHE: dict = {}


def _facts_entry(body, path: Path) -> dict:
    """The recorded facts of kernel ``body`` in the facts file ``path`` (read once per process; {} when the file or
    the kernel is not there)."""
    if path not in _FACTS_CACHE:
        try:
            _FACTS_CACHE[path] = json.loads(path.read_text())
        except (OSError, ValueError):
            _FACTS_CACHE[path] = {}
    return _FACTS_CACHE[path].get(kernel_fingerprint(body)) or {}

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


def default_latencies(cfg=None) -> dict:
    """Write-barrier release latencies by opcode prefix, from a timing config (default sm_90a; an LDSM.x4 moves
    four 128-byte phases: ldmatrix_latency + 3 x smem_conflict_cycles)."""
    if cfg is None:
        from .params import arch_config
        cfg = arch_config("sm_90a")
    return {"LDSM": cfg.ldmatrix_latency + 3 * cfg.smem_conflict_cycles, "LDS": cfg.smem_latency,
            "LDG": cfg.l1_latency, "LDC": cfg.const_hit_latency, "S2R": 20, "": cfg.smem_latency}


def _schedule(instrs, latencies: dict | None, read_latency: float, runs: int) -> list:
    """Issue time at the start of each of ``runs`` back-to-back executions of ``instrs``, and at the end: each
    instruction issues its predecessor's stall count later, and not before every barrier of its wait mask is
    released; a barrier is released ``latencies[opcode prefix]`` after the instruction that set it as its write
    barrier, ``read_latency`` after one that set it as its read barrier (carried across executions)."""
    lat = latencies or default_latencies()
    keys = sorted(lat, key=len, reverse=True)
    release = [0.0] * 6
    t, marks = 0.0, []
    for _ in range(runs):
        marks.append(t)
        for ins in instrs:
            for b in range(6):
                if ins.wait_mask >> b & 1:
                    t = max(t, release[b])
            if ins.write_barrier is not None:
                release[ins.write_barrier] = t + lat[next((k for k in keys if ins.opcode.startswith(k)), "")]
            if ins.read_barrier is not None:
                release[ins.read_barrier] = t + read_latency
            t += ins.stall
    return marks + [t]


def static_cycles(instrs, lo: int, hi: int, latencies: dict | None = None, read_latency: float = 4) -> float:
    """Cycles one warp spends issuing the instructions at addresses lo..hi (inclusive) in order, from a clean
    scoreboard (:func:`_schedule`).  Branches are not followed."""
    marks = _schedule([i for i in instrs if lo <= i.addr <= hi], latencies, read_latency, 1)
    return marks[-1]


def steady_cycles(instrs, latencies: dict | None = None, read_latency: float = 4) -> float:
    """Cycles per execution of a straight-line SASS block executed back to back (barrier state carried from one
    execution into the next, as when ptxas's schedule of one k-tile overlaps the next): the second execution's
    time.  ``instrs`` in address order."""
    marks = _schedule(list(instrs), latencies, read_latency, 2)
    return marks[2] - marks[1]


def kernel_fingerprint(body) -> str:
    """SHA-256 of a kernel's instructions with their PTX line numbers (what the SASS facts are keyed by)."""
    h = hashlib.sha256()
    for ins in body:
        h.update(f"{ins.loc.line}:{ins}\n".encode())
    return h.hexdigest()


def load_loops(body, path: Path | None = None) -> dict:
    """{head PTX line: (back-edge PTX line, [SassIns])} of the kernel's SASS-timed loops ({} when none)."""
    path = path or SASS_FACTS
    entry = _facts_entry(body, path)
    out = {}
    for head, lp in entry.get("loops", {}).items():
        instrs = [SassIns(i, op, st, False, wb, rb, wm) for i, (op, st, wb, rb, wm) in enumerate(lp["sass"])]
        out[int(head)] = (int(lp["back"]), instrs)
    return out


def load_loop_facts(body, path: Path | None = None) -> dict:
    """{back-edge PTX line: True (ptxas keeps the loop rolled) / False (unrolled)} of a kernel with recorded loop
    facts ({} when none: the timing model then decides from the PTX, :func:`tcsim.timing.model.rolled_loop_back_edges`)."""
    path = path or LOOP_FACTS
    entry = _facts_entry(body, path)
    return {int(line): bool(rolled) for line, rolled in entry.get("loops", {}).items()}


def load_loop_windows(body, path: Path | None = None) -> dict:
    """{back-edge PTX line: loads one warp can have in flight in the loop} from the kernel's recorded loop facts
    (``windows``: the SASS register allocation, calib/timing_corpus/sass_loops.py ``load_window``; {} when none)."""
    path = path or LOOP_FACTS
    entry = _facts_entry(body, path)
    return {int(line): int(n) for line, n in entry.get("windows", {}).items() if int(n) > 0}


__all__ = ["SassIns", "load_loop_windows", "load_loop_facts", "LOOP_FACTS", "parse_listing", "static_cycles",
           "steady_cycles", "default_latencies", "kernel_fingerprint",
           "load_loops",
           "SASS_FACTS"]
