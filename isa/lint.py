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
* ptxas 13.0 miscompilations found by the fuzzer's generator version 1 (hw/fuzz/generator.py V2_AVOIDS), each
  with its minimised reproducer in tests/fuzz_regressions: a predicated ``set`` with an .f32 destination,
  ``abs``/``neg.s16`` of -32768, a self-accumulating ``mad.hi``, a 64-bit shift by a register last written by
  a float instruction, ``abs.f16x2``/``bf16x2`` of an f32 result.
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


_SPLIT_MMA_TYPES = ("e4m3", "e5m2")


def _mma_alias(ins: ir.Instruction, arch: str, body, index):
    if ins.opcode != "mma" or len(ins.operands) < 4:
        return None
    if not any(t in ins.mods for t in _SPLIT_MMA_TYPES):
        return None
    if not arch.startswith("sm_9"):
        return None
    d = set(ir.reg_names(ins.operands[0]))
    src = {name: part for part, op in zip("AB", ins.operands[1:3]) for name in ir.reg_names(op)}   # D = C is normal
    both = sorted((n for n in d if n in src), key=lambda n: (src[n], n))
    if not both:
        return None
    which = ", ".join(f"{n} ({src[n]})" for n in both)
    return Note(ins.loc, f"{ins.full_opcode}: destination registers overlap source registers: {which}. ptxas "
                         f"lowers this fp8 mma into several f16 tensor-core instructions on {arch}, so later parts "
                         "may read sources that earlier parts already overwrote; the GPU result depends on that "
                         "lowering. tcsim reads every source before writing the destination. Use distinct "
                         "destination registers.")


def _guarded_testp(ins: ir.Instruction, arch: str, body, index):
    if ins.opcode != "testp" or ins.guard is None or not arch.startswith("sm_9"):
        return None
    g, neg = ins.guard
    return Note(ins.loc, f"{'@!' if neg else '@'}{g} {ins.full_opcode}: ptxas 13.0 drops the guard of a predicated "
                         f"testp for {arch} (measured on the H100: the destination predicate is written in every "
                         "lane, guard true or false; hw/probes group guarded_pred). tcsim follows the PTX ISA and "
                         "writes only the lanes whose guard is true. Compute testp unguarded and combine it with "
                         "the guard explicitly (and.pred / selp) to get the same result on both.")


_FLOAT_TYPES = ("f32", "f16", "bf16", "f64", "f16x2", "bf16x2", "tf32")


def _writes_float(ins: ir.Instruction) -> bool:
    """Does ``ins`` produce a floating-point value (its destination type: a cvt's first type, else any type)?"""
    types = [m for m in ins.mods if m in ir.TYPE_SIZES]
    return bool(types) and any(t in _FLOAT_TYPES for t in (types[:1] if ins.opcode == "cvt" else types))


def _last_writer(body, index: int, name: str):
    j = ir.last_def(body, index, name)
    return body[j] if j >= 0 else None


def _guarded_set_f32(ins: ir.Instruction, arch: str, body, index):
    if ins.opcode != "set" or ins.guard is None or not arch.startswith("sm_9"):
        return None
    types = [m for m in ins.mods if m in ("f32", "u32", "s32")]
    if not types or types[0] != "f32":
        return None
    g, neg = ins.guard
    return Note(ins.loc, f"{'@!' if neg else '@'}{g} {ins.full_opcode}: the GPU result depends on ptxas: 13.0 "
                         f"compiles a predicated set with an .f32 destination for {arch} into a guarded compare "
                         "and an unguarded integer-to-float conversion, so where the guard is false the "
                         "destination becomes float(|int(old bits)|) (measured on the H100, fuzz reproducer "
                         "fuzz_211_value). tcsim follows the PTX ISA and leaves it unchanged. Use an unguarded "
                         "set and selp.")


def _s16_sign_op(ins: ir.Instruction, arch: str, body, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("abs", "neg") or "s16" not in ins.mods:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: for -32768 the result depends on ptxas: it keeps 16-bit values "
                         "in 32-bit registers and 13.0 does not wrap +32768 back to -32768 before later "
                         "comparisons/multiplications read it (measured on the H100, fuzz reproducer "
                         "fuzz_1389_value). tcsim wraps, as the PTX ISA's 16-bit result requires.")


def _mad_hi_self(ins: ir.Instruction, arch: str, body, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("mad", "madc") or "hi" not in ins.mods or len(ins.operands) < 4:
        return None
    d, c = ir.reg_names(ins.operands[0]), ir.reg_names(ins.operands[3])
    if not d or d != c:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: accumulates into its own destination {d[0]}; the GPU result "
                         "depends on ptxas: 13.0 drops copies of such a mad.hi when it unrolls a loop around it "
                         "(measured on the H100, fuzz reproducer fuzz_1237_value: 2 of 4 iterations ran). tcsim "
                         "executes every iteration. Accumulate through a separate register.")


def _b64_shift_by_float(ins: ir.Instruction, arch: str, body, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("shl", "shr") or not any(m in ins.mods for m in ("b64", "u64", "s64")):
        return None
    amt = ir.reg_names(ins.operands[2]) if len(ins.operands) > 2 else []
    if not amt:
        return None
    w = _last_writer(body, index, amt[0])
    if w is None or not _writes_float(w):
        return None
    return Note(ins.loc, f"{ins.full_opcode}: the shift amount {amt[0]} was last written by {w.full_opcode} "
                         f"(line {w.loc.line}); the GPU result depends on ptxas: 13.0 converts such an amount "
                         "with F2I (float to integer) instead of using its bits (measured on the H100, fuzz "
                         "reproducer fuzz_1071_value). tcsim uses the bits, as the PTX ISA says.")


def _half2_abs_after_f32(ins: ir.Instruction, arch: str, body, index):
    if not arch.startswith("sm_9") or ins.opcode != "abs" or not any(m in ins.mods for m in ("f16x2", "bf16x2")) or len(ins.operands) < 2:
        return None
    src = ir.reg_names(ins.operands[1])
    w = _last_writer(body, index, src[0]) if src else None
    if w is None or "f32" not in w.mods:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: its source was last written by {w.full_opcode} (line "
                         f"{w.loc.line}); the GPU result depends on ptxas: 13.0 treats the f32 result as "
                         "non-negative and drops the low half's sign clear (measured on the H100, fuzz reproducer "
                         "fuzz_14858_value). tcsim clears both halves' sign bits.")


#: every check: (instruction, arch, function body, index in the body) -> Note | None
_CHECKS = (_mma_alias, _guarded_testp, _guarded_set_f32, _s16_sign_op, _mad_hi_self, _b64_shift_by_float,
           _half2_abs_after_f32)


def notes(module: ir.Module) -> list:
    """Every note for ``module`` (in file order)."""
    arch = module.arch or ""
    out = []
    for fn in module.functions.values():
        if fn.is_declaration:
            continue
        for i, ins in enumerate(fn.body):
            if not isinstance(ins, ir.Instruction):
                continue
            for check in _CHECKS:
                n = check(ins, arch, fn.body, i)
                if n is not None:
                    out.append(n)
    return out
