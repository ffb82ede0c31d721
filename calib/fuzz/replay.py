"""Replay a verified explanation of a fuzz disagreement: the simulator run that reproduces the GPU's bytes.

An explanation (:func:`calib.fuzz.explain.explain`'s ``"diagnosed:<names>"``) names ptxas rewrites (the PTX as
ptxas really compiled it, :data:`calib.fuzz.explain.REWRITES`) and lowering variants (results the PTX ISA leaves
open, sim/lowering.py; ``<variant>@<line>,<line>`` for the listed instructions only) and register hazards ptxas
made around a wgmma (:func:`calib.fuzz.explain.wgmma_hazards`: ``wgmma-a-source-reused@<line>:<register>``,
``wgmma-acc-copy-clobbered@<line>``, one instruction of the program as generated).  :func:`replay_explained`
applies exactly those to a program and simulates it once -- no search -- so a recorded explanation can be
re-checked bit for bit cheaply (tests/hw/test_fuzz_disagreements.py).
"""
from __future__ import annotations

import re

from .explain import LINE_REWRITES, REWRITES, apply_line_rewrites, as_compiled, wgmma_hazards

#: a register hazard's name (:func:`calib.fuzz.explain.wgmma_hazards`)
HAZARD = re.compile(r"^wgmma-(?:a-source-reused@\d+:%\w+|acc-copy-clobbered@\d+)$")


def parse_explanation(name: str) -> tuple[list, list]:
    """(rewrites in order, lowering variant names) of ``"diagnosed:<a>+<b>+..."``; ``v@1,2`` gives ``v@1``,
    ``v@2``; a wgmma register hazard (:data:`HAZARD`) and a per-instruction rewrite
    (:data:`calib.fuzz.explain.LINE_REWRITES`: ``guard-sunk@3,9``) are rewrites.  Raises ValueError for a name
    that is not an explanation."""
    if not name.startswith("diagnosed:"):
        raise ValueError(f"not an explanation: {name!r}")
    rw, var = [], []
    for part in name[len("diagnosed:"):].split("+"):
        if part in REWRITES or HAZARD.match(part) or part.split("@")[0] in LINE_REWRITES:
            rw.append(part)
        elif "@" in part:
            base, lines = part.split("@", 1)
            var += [f"{base}@{int(n)}" for n in lines.split(",")]
        elif part:
            var.append(part)
        else:
            raise ValueError(f"empty part in {name!r}")
    return rw, var


def apply_rewrites(text: str, rw: list) -> str | None:
    """``text`` as ptxas compiled it by the rewrites ``rw``: first the per-instruction rewrites and the wgmma
    register hazards (their lines are the program's as generated, as :func:`calib.fuzz.explain.explain` tries
    them), then the others (:func:`calib.fuzz.explain.as_compiled`); None when a named hazard or line is not in
    the program."""
    sel = [(r.split("@")[0], int(n)) for r in rw if r.split("@")[0] in LINE_REWRITES
           for n in r.split("@", 1)[1].split(",")]
    if sel:                                     # lines of the program as generated
        text = apply_line_rewrites(text, sel)
        if text is None:
            return None
    rw = [r for r in rw if r.split("@")[0] not in LINE_REWRITES]
    hazards = [r for r in rw if HAZARD.match(r)]
    if hazards:
        for h in hazards:
            made = dict(wgmma_hazards(text))
            if h not in made:
                return None
            text = made[h]
    rest = [r for r in rw if not HAZARD.match(r)]
    return (as_compiled(text, rest) or text) if rest else text


def replay_explained(prog, name: str) -> bytes | None:
    """The output bytes of ``prog`` (a :class:`calib.fuzz.generator.Program`) simulated as the explanation
    ``name`` says ptxas compiled it, or None when the simulator refuses the rewritten program."""
    from tcsim.isa.errors import TcsimError
    from tcsim.launch import Launch, run_launch

    rw, var = parse_explanation(name)
    text = apply_rewrites(prog.render(), rw)
    if text is None:
        return None
    try:
        res = run_launch(Launch(ptx=text, kernel=prog.kernel_name, block=(prog.nthreads, 1, 1),
                                args=[prog.input_buffer(), prog.output_template()], lowering=frozenset(var)),
                         detect=False, max_instructions=200_000)
    except TcsimError:
        return None
    return res.outputs[1].tobytes()


def replay_record(rec: dict, name: str | None = None, ptx: str | None = None) -> bytes | None:
    """A saved reproducer (:func:`calib.fuzz.runner.load_reproducer`) simulated with its input: as the explanation
    ``name`` says ptxas compiled it, and/or with the PTX text ``ptx`` in place of its own (an as-compiled model,
    :func:`as_compiled_text`); None when the simulator refuses it."""
    import numpy as np

    from tcsim.isa.errors import TcsimError
    from tcsim.launch import Launch, run_launch

    text = ptx if ptx is not None else rec["ptx"]
    var: list = []
    if name is not None:
        rw, var = parse_explanation(name)
        text = apply_rewrites(text, rw)
        if text is None:
            return None
    out = np.full(len(rec["gpu_output"]), rec.get("output_fill", 0xA5), dtype=np.uint8)
    try:
        res = run_launch(Launch(ptx=text, kernel=rec["kernel"], block=(rec["nthreads"], 1, 1),
                                args=[rec["input"].copy(), out], lowering=frozenset(var)),
                         detect=False, max_instructions=200_000)
    except TcsimError:
        return None
    return res.outputs[1].tobytes()


BODY_START, BODY_END = "\t// ---- body", "\t// ---- dump"


def as_compiled_text(ptx: str, model: dict) -> str:
    """A reproducer's PTX with its body (between ``// ---- body`` and ``// ---- dump``) replaced by ``model["body"]``
    -- the instructions the SASS that ptxas made of it executes, written as PTX (tests/fuzz_regressions/
    as_compiled.json) -- and the extra registers ``model["regs"]`` declared after the kernel's own."""
    lines = ptx.split("\n")
    try:
        a, b = lines.index(BODY_START), lines.index(BODY_END)
    except ValueError:
        raise ValueError("no '// ---- body' ... '// ---- dump' block in the reproducer") from None
    last_reg = max(i for i, ln in enumerate(lines[:a]) if ln.strip().startswith(".reg "))
    new = lines[:last_reg + 1] + ["\t" + r for r in model.get("regs", [])] + lines[last_reg + 1:a + 1]
    return "\n".join(new + ["\t" + ln for ln in model["body"]] + lines[b:])
