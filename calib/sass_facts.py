"""Record the SASS facts the sm_90a timing model uses (:mod:`tcsim.timing.sass`): for every counted mma.sync loop that
ptxas unrolls whole, the control bits of its SASS.

Needs ``ptxas`` and ``nvdisasm`` on PATH (the CUDA toolkit; nvdisasm also comes as the nvidia-cuda-nvdisasm
wheel).  The PTX gets ``.loc`` line directives before every instruction, ptxas compiles it with ``-lineinfo`` and
``nvdisasm -g -hex`` gives every SASS instruction with its PTX line and its encoding (control bits).  A loop's SASS
is the address range of the instructions whose PTX line lies in the loop.

    python -m calib.sass_facts record [--case GLOB ...]   # calib/microbench kernels -> sim/timing/data/sass_facts_h100.json
    python -m calib.sass_facts show FILE.ptx              # the loops of one PTX file and their static cycles
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
import sys
from pathlib import Path

from tcsim.isa import ir, ptxas
from tcsim.isa.parser import parse
from tcsim.timing.model import unrolled_loop_control
from tcsim.timing.sass import kernel_fingerprint, parse_listing, steady_cycles

from .pipeline import PACKAGE_DATA

#: the SASS facts tcsim.timing.sass reads (package data), in this checkout: ``record`` writes them here
SASS_FACTS = PACKAGE_DATA / "sass_facts_h100.json"

_LINE = re.compile(r'//## File ".*", line (\d+)')
_ADDR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/")


def with_locs(ptx: str) -> str:
    """``ptx`` with ``.file 1`` and a ``.loc 1 <line> 0`` before every instruction line."""
    out = []
    for i, line in enumerate(ptx.splitlines(), start=1):
        code = line.split("//")[0].strip()
        if code and (code[0].isalpha() or code[0] == "@") and not code.endswith(":"):
            out.append(f"\t.loc 1 {i} 0")
        out.append(line)
        if code.startswith(".address_size"):
            out.append('.file 1 "kernel.ptx"')
    return "\n".join(out) + "\n"


def disassemble(ptx: str, arch: str = "sm_90a") -> str:
    """``nvdisasm -g -hex`` of ``ptx`` compiled with its own line numbers (:func:`with_locs`)."""
    r = ptxas.sass(with_locs(ptx), arch, lineinfo=True, disassembler="nvdisasm")
    if r is None:
        raise RuntimeError("ptxas or nvdisasm is not on PATH")
    if not r[0]:
        raise RuntimeError(f"ptxas failed: {ptxas.first_error(r[1])}")
    return r[1]


def address_lines(listing: str) -> dict:
    """{SASS address: PTX line} of an ``nvdisasm -g`` listing."""
    out, line = {}, None
    for text in listing.splitlines():
        m = _LINE.search(text)
        if m:
            line = int(m.group(1))
            continue
        m = _ADDR.match(text)
        if m and line is not None:
            out[int(m.group(1), 16)] = line
    return out


#: what a SASS-timed loop may hold: register arithmetic, ldmatrix and mma.sync (no clock reads, no other memory
#: access, no synchronisation: their timing belongs to the model's units and waits)
LOOP_OPCODES = {"ldmatrix", "mma", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "setp",
                "selp", "mov", "cvt", "fma", "min", "max", "bra"}


def mma_loops(fn) -> list:
    """(head line, back-edge line) of the counted straight-line loops with an mma.sync that ptxas unrolls and that
    hold nothing but :data:`LOOP_OPCODES` (and no special-register read)."""
    body, labels = fn.body, fn.labels
    out = []
    for pc in unrolled_loop_control(body, labels):
        ins = body[pc]
        if ins.opcode != "bra" or not ins.operands:
            continue
        head = labels.get(getattr(ins.operands[0], "name", None))
        if head is None or head >= pc or not any(body[k].opcode == "mma" for k in range(head, pc)):
            continue
        if any(body[k].opcode not in LOOP_OPCODES or any(isinstance(o, ir.SpecialReg) for o in body[k].operands)
               for k in range(head, pc + 1)):
            continue
        out.append((body[head].loc.line, ins.loc.line))
    return out


def facts(ptx: str, kernel: str, arch: str = "sm_90a") -> dict:
    fn = parse(ptx, "kernel.ptx").functions[kernel]
    listing = disassemble(ptx, arch)
    instrs = parse_listing(listing)
    lines = address_lines(listing)
    loops = {}
    for head, back in mma_loops(fn):
        # the straight-line SASS block holding the loop's HMMAs: from the first instruction of a loop line after
        # the branch before the first HMMA to the last one before the branch after the last HMMA
        inloop = [head <= lines.get(i.addr, -1) <= back for i in instrs]
        hmma = [k for k, i in enumerate(instrs) if inloop[k] and i.opcode.startswith("HMMA")]
        if not hmma:
            continue
        first = max([k for k in range(hmma[0]) if instrs[k].opcode.startswith(("BRA", "EXIT"))], default=-1) + 1
        last = min([k for k in range(hmma[-1], len(instrs)) if instrs[k].opcode.startswith(("BRA", "EXIT"))],
                   default=len(instrs)) - 1
        ks = [k for k in range(first, last + 1) if inloop[k]]
        lo, hi = instrs[ks[0]].addr, instrs[ks[-1]].addr
        region = [i for i in instrs if lo <= i.addr <= hi]
        loops[str(head)] = {"back": back, "sass_range": [lo, hi], "static_cycles": steady_cycles(region),
                            "sass": [[i.opcode.split(".")[0], i.stall, i.write_barrier, i.read_barrier, i.wait_mask]
                                     for i in region]}
    # loops whose SASS blocks overlap (ptxas interleaved back-to-back loops) cannot be timed one by one
    # (and then none of the kernel's loops: its calibration must not mix SASS- and PTX-timed loops)
    spans = {h: v["sass_range"] for h, v in loops.items()}
    if any(g != h and a <= d and c <= b for h, (a, b) in spans.items() for g, (c, d) in spans.items()):
        loops = {}
    return {"kernel": kernel, "fingerprint": kernel_fingerprint(fn.body), "loops": loops}


def record(globs, path: Path = SASS_FACTS) -> int:
    from calib.microbench import cases as C
    table = json.loads(path.read_text()) if path.exists() else {}
    ver = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    for name, case in C.CASES.items():
        if globs and not any(fnmatch.fnmatchcase(name, g) for g in globs):
            continue
        launch = case.build()
        text = launch.ptx_text()[0]
        if "mma.sync" not in text:
            continue
        f = facts(text, launch.kernel)
        if not f["loops"]:
            continue
        table[f.pop("fingerprint")] = dict(f, case=name, ptxas=ver)
        print(f"{name}: " + ", ".join(f"loop at line {h}: {v['static_cycles']:.1f} static cycles "
                                      f"({len(v['sass'])} SASS instructions)" for h, v in f["loops"].items()))
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.sass_facts")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--case", action="append", default=[])
    s = sub.add_parser("show")
    s.add_argument("ptx", type=Path)
    s.add_argument("--kernel")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "record":
            return record(a.case)
        text = a.ptx.read_text()
        kernel = a.kernel or next(iter(parse(text, str(a.ptx)).functions))
        f = facts(text, kernel)
        for h, v in f["loops"].items():
            print(f"loop at line {h}..{v['back']}: SASS 0x{v['sass_range'][0]:04x}-0x{v['sass_range'][1]:04x}, "
                  f"{len(v['sass'])} instructions, {v['static_cycles']:.1f} static cycles")
    except RuntimeError as e:
        print(f"calib.sass_facts: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
