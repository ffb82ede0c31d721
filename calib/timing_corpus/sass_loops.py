"""Which loops ptxas keeps rolled, from the SASS (``python -m calib.timing_corpus loop-facts``): the loop facts the
sm_90a timing model reads (package data sim/timing/data/loop_facts_h100.json, :func:`tcsim.timing.sass.
load_loop_facts`), recorded for the corpus's kernels (the instrumented copies, as they are launched).

For each loop of the PTX (a backward branch), the SASS instructions ptxas 13.0 makes of each memory instruction of
the loop body (``ld`` / ``st`` / ``atom`` / ``red`` / ``ldmatrix``, outside loops nested in it) are counted through
the PTX line of every SASS instruction (``nvdisasm -g``, :func:`calib.sass_facts.disassemble`): one SASS memory
instruction per PTX one means the loop stayed rolled, more means ptxas unrolled it.  A loop without memory
instructions gets no fact (the model decides from the PTX).  Each loop with loads also gets its **load window**
(``windows``): how many loads one warp can have in flight in the SASS loop that holds most of them, as ptxas's
register allocation allows (:func:`load_window`).  Needs ptxas and nvdisasm.
"""
from __future__ import annotations

import json
import re
import subprocess
from collections import Counter

from calib.sass_facts import address_lines, disassemble
from tcsim.isa.parser import parse
from tcsim.timing.sass import LOOP_FACTS, kernel_fingerprint, parse_listing

_MEM_PTX = {"ld", "ldu", "st", "atom", "red", "ldmatrix"}
_MEM_SASS = ("LDG", "STG", "LDS", "STS", "LD.", "ST.", "LD ", "ST ", "ATOM", "RED", "LDSM", "LDL", "STL")


def without_debug(ptx: str) -> str:
    """``ptx`` with its own ``.file`` / ``.loc`` directives and its debug ``.section`` blocks (Triton puts them after
    the kernels, to the end of the file) blanked out, line for line: the line numbers stay those of the launched PTX
    (:func:`calib.sass_facts.with_locs` adds its own line directives)."""
    out, tail = [], False
    for line in ptx.split("\n"):
        t = line.strip()
        tail = tail or t.startswith(".section")
        out.append("" if tail or re.match(r"\.(file|loc)\s", t) else line)
    return "\n".join(out)


def only_kernel(ptx: str, kernel: str) -> str:
    """``ptx`` with every other ``.entry`` blanked out line for line (ptxas then compiles one kernel; the line
    numbers stay those of the launched PTX)."""
    lines = ptx.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)", lines[i])
        if not m or m.group(1) == kernel:
            i += 1
            continue
        start, depth, opened = i, 0, False
        while i < len(lines):
            depth += lines[i].count("{") - lines[i].count("}")
            opened = opened or "{" in lines[i]
            i += 1
            if opened and depth <= 0:
                break
        for k in range(start, i):
            lines[k] = ""
        if start > 0 and lines[start - 1].strip().startswith("// .globl"):
            lines[start - 1] = ""
    return "\n".join(lines)


def function_listing(listing: str, kernel: str) -> str:
    """The part of an ``nvdisasm`` listing of a module that holds ``kernel``'s code (``.text.<kernel>``; the SASS
    addresses of every function start at 0)."""
    out, on = [], False
    for line in listing.splitlines():
        m = re.match(r"\s*\.section\s+\.text\.([\w$]+)", line)
        if m:
            on = m.group(1) == kernel
        if on:
            out.append(line)
    if not out:
        raise RuntimeError(f"no .text.{kernel} in the SASS listing")
    return "\n".join(out)


_LOAD_SASS = ("LDG", "LDS", "LD.", "LD ", "LDL")
_REG = re.compile(r"\bR(\d+)\b")


def _width(op: str) -> int:
    """32-bit registers a load writes (``LDG.E.128`` -> 4, ``LDS.64`` -> 2)."""
    mods = op.split(".")[1:]
    return 4 if "128" in mods else 2 if "64" in mods else 1


def load_window(instrs) -> int:
    """Loads one warp can have in flight in a SASS loop body executed back to back: a load stays in flight from its
    issue until the first instruction that reads a register it writes.  The register allocation bounds it: a load
    into a register an earlier value of which is still to be read cannot issue before that read (write-after-read
    in the SASS, which PTX's virtual registers do not show).  The most loads in flight at once over the second of
    two executions."""
    inflight: list = []          # (first register, width) of the loads not yet read
    most = 0
    for rep in range(2):
        for ins in instrs:
            text = re.sub(r"^@!?U?P\w+\s+", "", ins.text)
            op, _, rest = text.partition(" ")
            operands = rest.split(",")
            is_load = (op + " ").startswith(_LOAD_SASS) and not op.startswith(("LDGSTS", "LDSM"))
            no_dest = op.startswith(("ST", "RED", "BRA", "BAR", "EXIT", "RET", "CALL", "BSYNC", "BSSY", "WARPSYNC"))
            src_text = rest if no_dest else ",".join(operands[1:])
            srcs = [int(r) for r in _REG.findall(src_text)]
            inflight = [(b, w) for b, w in inflight if not any(b <= r < b + w for r in srcs)]
            dest = _REG.findall(operands[0]) if operands else []
            if is_load and dest:
                inflight.append((int(dest[0]), _width(op)))
                if rep == 1:
                    most = max(most, len(inflight))
    return most


def _sass_loops(listing: str, sass) -> list:
    """(first, last) SASS addresses of the listing's loops (a branch to a label at an earlier address)."""
    labels, pending = {}, []
    for text in listing.splitlines():
        m = re.match(r"^(\.L_x_\d+):", text.strip())
        if m:
            pending.append(m.group(1))
            continue
        a = re.match(r"^\s+/\*([0-9a-f]{4,})\*/", text)
        if a:
            for lab in pending:
                labels[lab] = int(a.group(1), 16)
            pending = []
    out = []
    for ins in sass:
        m = re.search(r"\bBRA\s+`\((\.L_x_\d+)\)", ins.text)
        if m and labels.get(m.group(1), ins.addr + 1) <= ins.addr:
            out.append((labels[m.group(1)], ins.addr))
    return out


def loop_facts(ptx: str, kernel: str, windows: dict | None = None) -> dict:
    """{back-edge PTX line: rolled?} of ``kernel``'s loops that hold memory instructions; ``windows`` (a dict):
    filled with {back-edge PTX line: :func:`load_window` of the SASS loop that holds most of the loop's loads}."""
    fn = parse(ptx, "kernel.ptx").functions[kernel]
    body, labels = fn.body, fn.labels
    listing = function_listing(disassemble(only_kernel(without_debug(ptx), kernel)), kernel)
    lines = address_lines(listing)
    sass = parse_listing(listing)
    per_line = Counter(lines[i.addr] for i in sass
                       if i.addr in lines and (i.opcode + " ").startswith(_MEM_SASS))
    sloops = _sass_loops(listing, sass)
    loops = []
    for pc, ins in enumerate(body):
        if ins.opcode == "bra" and ins.operands:
            head = labels.get(getattr(ins.operands[0], "name", None))
            if head is not None and head <= pc:
                loops.append((head, pc))
    out = {}
    for head, pc in loops:
        inner = [(h, b) for h, b in loops if (h, b) != (head, pc) and head <= h and b < pc]
        mem = [body[k].loc.line for k in range(head, pc) if body[k].opcode in _MEM_PTX
               and not any(h <= k <= b for h, b in inner)]
        counts = [per_line[ln] for ln in mem]
        if not counts or max(counts) == 0:
            continue
        out[str(body[pc].loc.line)] = max(counts) <= 1
        if windows is not None:
            loads = {body[k].loc.line for k in range(head, pc) if body[k].opcode in ("ld", "ldu")
                     and not any(h <= k <= b for h, b in inner)}
            addrs = [i.addr for i in sass if lines.get(i.addr) in loads and (i.opcode + " ").startswith(_LOAD_SASS)]
            best = max(sloops, key=lambda lp: sum(lp[0] <= a <= lp[1] for a in addrs), default=None)
            if best is not None and any(best[0] <= a <= best[1] for a in addrs):
                inner_s = [lp for lp in sloops if lp != best and best[0] <= lp[0] and lp[1] < best[1]]
                blk = [i for i in sass if best[0] <= i.addr <= best[1]
                       and not any(a <= i.addr <= b for a, b in inner_s)]
                windows[str(body[pc].loc.line)] = load_window(blk)
    return out


def record(names=None, path=LOOP_FACTS, jobs: int = 4) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from . import record as R
    ver = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    todo = [n for n in (names or R.names()) if R.source_of(n) != "microbench"]   # the microbench kernels keep the
    #                                                                          model they were calibrated with

    def one(n):
        launch = R.build(n)[0]
        text = launch.ptx_text()[0]
        windows: dict = {}
        return n, text, launch.kernel, loop_facts(text, launch.kernel, windows), windows

    table = {}
    with ThreadPoolExecutor(jobs) as pool:
        for n, text, kernel, facts, windows in pool.map(one, todo):
            if not facts:
                continue
            fp = kernel_fingerprint(parse(text, "kernel.ptx").functions[kernel].body)
            table[fp] = {"kernel": n, "ptxas": ver, "loops": facts, "windows": windows}
            print(f"{n}: " + ", ".join(f"line {ln} {'rolled' if r else 'unrolled'}" for ln, r in facts.items()),
                  flush=True)
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"{len(table)} kernels -> {path}")
    return 0
