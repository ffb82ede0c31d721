"""Notes on PTX whose result on the GPU depends on how ptxas lowers it, not only on the PTX ISA.

tcsim executes such instructions with a definite rule (documented where they are implemented) but the GPU may
disagree when ptxas lowers the same PTX differently -- the user should know before trusting either.  Each note
names the file, line and column, what is ambiguous and what tcsim does.  ``tcsim check`` prints them (they are
not errors), and :func:`sim.launch.run_launch` attaches them to ``Result.notes``.

Covered:
* ``mma.sync`` whose destination registers overlap its A/B registers when ptxas splits the instruction into
  several tensor-core instructions (fp8 ``m16n8k32`` on sm_90 becomes f16 HMMAs, and later halves read source
  registers that earlier halves have overwritten: found by the differential fuzzer, tests/fuzz_regressions/
  fuzz_1091_value).  tcsim reads every source before writing the destination.
* a predicated ``testp`` for sm_90: ptxas 13.0 drops the guard, so the GPU writes the destination predicate in
  every lane (found by the fuzzer, confirmed by the probe group guarded_pred).  tcsim follows the PTX ISA.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import SourceLoc


@dataclass(frozen=True)
class Note:
    loc: SourceLoc
    message: str

    def __str__(self) -> str:
        return f"{self.loc.file}:{self.loc.line}:{self.loc.col}: note: {self.message}"


def _regs(op) -> list:
    if isinstance(op, ir.Reg):
        return [op.name]
    if isinstance(op, ir.Vector):
        return [e.name for e in op.elems if isinstance(e, ir.Reg)]
    return []


_SPLIT_MMA_TYPES = ("e4m3", "e5m2")


def _mma_alias(ins: ir.Instruction, arch: str):
    if ins.opcode != "mma" or len(ins.operands) < 4:
        return None
    if not any(t in ins.mods for t in _SPLIT_MMA_TYPES):
        return None
    if not arch.startswith("sm_9"):
        return None
    d = set(_regs(ins.operands[0]))
    src = {name: part for part, op in zip("AB", ins.operands[1:3]) for name in _regs(op)}   # D = C is normal
    both = sorted((n for n in d if n in src), key=lambda n: (src[n], n))
    if not both:
        return None
    which = ", ".join(f"{n} ({src[n]})" for n in both)
    return Note(ins.loc, f"{ins.full_opcode}: destination registers overlap source registers: {which}. ptxas "
                         f"lowers this fp8 mma into several f16 tensor-core instructions on {arch}, so later parts "
                         "may read sources that earlier parts already overwrote; the GPU result depends on that "
                         "lowering. tcsim reads every source before writing the destination. Use distinct "
                         "destination registers.")


def _guarded_testp(ins: ir.Instruction, arch: str):
    if ins.opcode != "testp" or ins.guard is None or not arch.startswith("sm_9"):
        return None
    g, neg = ins.guard
    return Note(ins.loc, f"{'@!' if neg else '@'}{g} {ins.full_opcode}: ptxas 13.0 drops the guard of a predicated "
                         f"testp for {arch} (measured on the H100: the destination predicate is written in every "
                         "lane, guard true or false; hw/probes group guarded_pred). tcsim follows the PTX ISA and "
                         "writes only the lanes whose guard is true. Compute testp unguarded and combine it with "
                         "the guard explicitly (and.pred / selp) to get the same result on both.")


def notes(module: ir.Module) -> list:
    """Every note for ``module`` (in file order)."""
    arch = module.arch or ""
    out = []
    for fn in module.functions.values():
        if fn.is_declaration:
            continue
        for ins in fn.body:
            if not isinstance(ins, ir.Instruction):
                continue
            for check in (_mma_alias, _guarded_testp):
                n = check(ins, arch)
                if n is not None:
                    out.append(n)
    return out
