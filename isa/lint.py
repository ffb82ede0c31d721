"""Notes on PTX whose result on the GPU depends on how ptxas lowers it, not only on the PTX ISA.

tcsim executes such instructions with a definite rule (documented where they are implemented) but the GPU may
disagree when ptxas lowers the same PTX differently -- the user should know before trusting either.  Each note
names the file, line and column, what is ambiguous and what tcsim does.  ``tcsim check`` prints them (they are
not errors), and :func:`tcsim.launch.run_launch` attaches them to ``Result.notes``.

Covered:
* ``mma.sync`` whose destination registers overlap its A/B registers when ptxas splits the instruction into
  several tensor-core instructions (fp8 ``m16n8k32`` on sm_90 becomes f16 HMMAs, and later halves read source
  registers that earlier halves have overwritten: found by the differential fuzzer, tests/fuzz_regressions/
  fuzz_1091_value).  tcsim reads every source before writing the destination.
* a predicated ``testp`` for sm_90: ptxas 13.0 drops the guard, so the GPU writes the destination predicate in
  every lane (found by the fuzzer, confirmed by the probe group guarded_pred).  tcsim follows the PTX ISA.
* ptxas 13.0 miscompilations found by the fuzzer's generator version 1 (calib/fuzz/generator.py V2_AVOIDS), each
  with its minimised reproducer in tests/fuzz_regressions: a predicated ``set`` with an .f32 destination,
  ``abs``/``neg.s16`` of -32768, a self-accumulating ``mad.hi``, a 64-bit shift by a register last written by
  a float instruction, ``abs.f16x2``/``bf16x2`` of an f32 result.
* ptxas 13.0 miscompilations found by the H100 campaigns of generator versions 2 and 3 (each check's name in
  :data:`CHECKS` is the generator's name for the construct, calib/fuzz/generator.py V3_AVOIDS / V4_AVOIDS; each
  note names its minimised reproducers, whose SASS shows the lowering): folded ``neg(neg(x))``, integer
  conversions reading a 16-bit float from before its conversion, float operations folded with an integer's value
  range, 16-bit shifts and branches/guards recomputed without FTZ, half-pair arithmetic on a tf32 result,
  predicated ``mad.hi`` in loops, 16-bit arithmetic on float-to-16-bit results, merged 64-bit shifts,
  ``copysign(x, x)``, min/max of a copy, mma operands from immediates or zeroed fp8 registers, saturation and
  carries after integer abs/neg, predicated instructions moved past a write of their guard, per-copy NaN order
  of f64 operations in unrolled loops, lop3 with a repeated source, logic on a cvt.relu result.
* found by the H100 campaign of generator version 4 (calib/fuzz/generator.py V5_AVOIDS): saturating add/sub of a
  wrapping add/sub sharing a source, 16-bit shifts by a cnot result, a conditionally executed mad.hi in a loop
  that writes its addend first, an f64 operation in a loop that changes one of its two sources (peeled copy).
* found by the H100 campaign of generator version 5 (tests/golden/fuzz_campaign/h100_v5_seeds_400000_409999.npz;
  no generator version avoids them yet): 16-bit compares and right shifts of a float-to-16-bit conversion
  (F2I.S16/U16 inserted into half of a register that holds another value), a conversion to 8/16 bits of a cnot
  result (folded to 0), a float instruction reading a mad.hi.sat result (dropped), bitwise logic of a set.f32
  result and a value computed from it (done on booleans), neg.f64 of min/max(y, y) of a neg.f64 (folded to a
  copy), an fp8x2 conversion packed with another 16-bit register (written over it).
  "Last written by" follows straight-line code and loop back edges (:func:`_reaching_writers`).
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


def _mma_alias(ins: ir.Instruction, arch: str, fn, index):
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


def _guarded_testp(ins: ir.Instruction, arch: str, fn, index):
    if ins.opcode != "testp" or ins.guard is None or not arch.startswith("sm_9"):
        return None
    g, neg = ins.guard
    return Note(ins.loc, f"{'@!' if neg else '@'}{g} {ins.full_opcode}: ptxas 13.0 drops the guard of a predicated "
                         f"testp for {arch} (measured on the H100: the destination predicate is written in every "
                         "lane, guard true or false; calib/probes group guarded_pred). tcsim follows the PTX ISA and "
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


def _guarded_set_f32(ins: ir.Instruction, arch: str, fn, index):
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


def _s16_sign_op(ins: ir.Instruction, arch: str, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("abs", "neg") or "s16" not in ins.mods:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: for -32768 the result depends on ptxas: it keeps 16-bit values "
                         "in 32-bit registers and 13.0 does not wrap +32768 back to -32768 before later "
                         "comparisons/multiplications read it (measured on the H100, fuzz reproducer "
                         "fuzz_1389_value). tcsim wraps, as the PTX ISA's 16-bit result requires.")


def _mad_hi_self(ins: ir.Instruction, arch: str, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("mad", "madc") or "hi" not in ins.mods or len(ins.operands) < 4:
        return None
    d, c = ir.reg_names(ins.operands[0]), ir.reg_names(ins.operands[3])
    if not d or d != c:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: accumulates into its own destination {d[0]}; the GPU result "
                         "depends on ptxas: 13.0 drops copies of such a mad.hi when it unrolls a loop around it "
                         "(measured on the H100, fuzz reproducer fuzz_1237_value: 2 of 4 iterations ran). tcsim "
                         "executes every iteration. Accumulate through a separate register.")


def _b64_shift_by_float(ins: ir.Instruction, arch: str, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("shl", "shr") or not any(m in ins.mods for m in ("b64", "u64", "s64")):
        return None
    amt = ir.reg_names(ins.operands[2]) if len(ins.operands) > 2 else []
    if not amt:
        return None
    w = _last_writer(fn.body, index, amt[0])
    if w is None or not _writes_float(w):
        return None
    return Note(ins.loc, f"{ins.full_opcode}: the shift amount {amt[0]} was last written by {w.full_opcode} "
                         f"(line {w.loc.line}); the GPU result depends on ptxas: 13.0 converts such an amount "
                         "with F2I (float to integer) instead of using its bits (measured on the H100, fuzz "
                         "reproducer fuzz_1071_value). tcsim uses the bits, as the PTX ISA says.")


def _half2_abs_after_f32(ins: ir.Instruction, arch: str, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "abs" or not any(m in ins.mods for m in ("f16x2", "bf16x2")) or len(ins.operands) < 2:
        return None
    src = ir.reg_names(ins.operands[1])
    w = _last_writer(fn.body, index, src[0]) if src else None
    if w is None or "f32" not in w.mods:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: its source was last written by {w.full_opcode} (line "
                         f"{w.loc.line}); the GPU result depends on ptxas: 13.0 treats the f32 result as "
                         "non-negative and drops the low half's sign clear (measured on the H100, fuzz reproducer "
                         "fuzz_14858_value). tcsim clears both halves' sign bits.")


def _writes(ins, name: str) -> bool:
    return isinstance(ins, ir.Instruction) and bool(ins.operands) and name in _dest_names(ins)


def _dest_names(ins) -> list:
    op = ins.operands[0]
    if isinstance(op, ir.PredPair):
        return [x.name for x in (op.first, op.second) if isinstance(x, ir.Reg)]
    return ir.reg_names(op)


def _loops_around(fn, index: int):
    """(start, k) for every backward branch ``fn.body[k]`` after ``index`` to a label at ``start <= index``: the
    loops whose body holds the instruction, innermost first."""
    body = fn.body
    for k in range(index + 1, len(body)):
        b = body[k]
        if isinstance(b, ir.Instruction) and b.opcode == "bra" and b.operands \
                and isinstance(b.operands[0], ir.LabelRef) and fn.labels.get(b.operands[0].name, k) <= index:
            yield fn.labels[b.operands[0].name], k


def _f64_loop_carried_sources(ins, arch, fn, index):
    """For a two-register f64 add/sub/mul/fma/mad/min/max on sm_9x: (its two first sources, for each loop around
    it, innermost first, those of them the loop writes); None for other instructions."""
    if not arch.startswith("sm_9") or ins.opcode not in ("add", "sub", "mul", "fma", "mad", "min", "max") \
            or "f64" not in ins.mods or len(ins.operands) < 3:
        return None
    a, b = ir.reg_names(ins.operands[1]), ir.reg_names(ins.operands[2])
    if not a or not b or a == b:
        return None
    return (a[0], b[0]), [[r for r in (a[0], b[0]) if any(_writes(fn.body[i], r) for i in range(start, k))]
                          for start, k in _loops_around(fn, index)]


def _reaching_writers(fn, index: int, name: str) -> list:
    """Instructions whose value of ``name`` ``fn.body[index]`` may read: the textually last writer before it,
    and inside a loop (a branch after it back to a label at or before it) every writer from it to that branch
    (the previous iteration's)."""
    body = fn.body
    out = []
    for j in range(index - 1, -1, -1):
        if _writes(body[j], name):
            out.append(body[j])
            break
    for _, k in _loops_around(fn, index):
        out += [body[i] for i in range(index, k) if _writes(body[i], name) and body[i] not in out]
    return out


def _src_regs(ins) -> list:
    return [n for op in ins.operands[1:] for n in ir.reg_names(op)]


def _types(ins) -> list:
    return [m for m in ins.mods if m in ir.TYPE_SIZES]


_HALF = ("f16", "bf16")
_INTS = ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64")


def _first_writer(fn, index, names, pred):
    """The first instruction among the reaching writers of ``names`` for which ``pred`` holds, or None."""
    for n in names:
        for w in _reaching_writers(fn, index, n):
            if pred(w):
                return w
    return None


def _note_after(ins, w, what: str, ptxas: str, repro: str, tcsim: str) -> Note | None:
    """The note on ``ins`` reading the result of ``w`` (the writer a check looked for), or None without one."""
    if w is None:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: {what} {w.full_opcode} (line {w.loc.line}); the GPU result depends on "
                         f"ptxas: 13.0 {ptxas} (measured on the H100, fuzz reproducer {repro}). {tcsim}")


def _neg_neg_f64(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "neg" or "f64" not in ins.mods:
        return None
    w = _first_writer(fn, index, _src_regs(ins), lambda w: w.opcode == "neg" and "f64" in w.mods)
    return _note_after(ins, w, "negates the result of", "folds neg(neg(x)) into a copy of x (the SASS keeps one "
                       "DADD -RZ, -R and copies the source for the other), so a signalling NaN comes back "
                       "unquieted where one neg.f64 quiets it", "fuzz_100279_value",
                       "tcsim executes both negations (each quiets a NaN).")


def _f2i_after_half_f2f(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "cvt":
        return None
    ts = _types(ins)
    if len(ts) != 2 or ts[0] not in _INTS or ts[1] not in _HALF:
        return None
    w = _first_writer(fn, index, _src_regs(ins)[:1], lambda w: (
        (w.opcode == "cvt" and len(_types(w)) == 2 and all(t in _HALF for t in _types(w)))
        or (w.opcode in ("min", "max") and any(t in _HALF for t in _types(w)))))
    return _note_after(ins, w, "converts to an integer the 16-bit float written by", "lets the F2I read the "
                       "register as it was before that instruction (SASS: F2F.F16.BF16.RZ R0, R31.H1 then "
                       "F2I.S16.F16.TRUNC R32, R31.H1; after a min.f16 the F2I also loses its rounding mode)",
                       "fuzz_107_value, fuzz_100160_value, fuzz_1060_value",
                       "tcsim converts the value the PTX names. Put an integer or f32 instruction in between.")


_RANGE_FOLDED = (("cnot", None), ("add", "sat"), ("sub", "sat"))


def _reads_float(ins) -> bool:
    ts = _types(ins)
    if ins.opcode == "cvt":
        return len(ts) == 2 and ts[1] in _FLOAT_TYPES
    if ins.opcode in ("mov", "ld", "st", "selp", "shfl", "prmt"):
        return False
    return any(t in _FLOAT_TYPES for t in ts)


def _float_after_int_range(ins, arch, fn, index):
    if not arch.startswith("sm_9") or not _reads_float(ins):
        return None
    w = _first_writer(fn, index, _src_regs(ins), lambda w: any(
        w.opcode == op and (m is None or m in w.mods) for op, m in _RANGE_FOLDED) and not _writes_float(w))
    return _note_after(ins, w, "reads as a float the integer result of", "simplifies the float operation with "
                       "the integer's value range (cnot: 0 or 1; add/sub.sat: clamped), as if the bits were that "
                       "number: a cvt of a cnot result folded to 1, a min.f32 and a cvt's .sat dropped",
                       "fuzz_14755_value, fuzz_101996_value, fuzz_103215_value",
                       "tcsim uses the bits, as the PTX ISA says.")


def _half_shift_amount(ins, arch):
    """The registers of the shift amount of a 16-bit shl/shr on sm_9x; None for other instructions."""
    if not arch.startswith("sm_9") or ins.opcode not in ("shl", "shr") or len(ins.operands) < 3:
        return None
    if not any(t in ("b16", "u16", "s16") for t in _types(ins)):
        return None
    return ir.reg_names(ins.operands[2])


def _half_shift_by_ftz_cvt(ins, arch, fn, index):
    amt = _half_shift_amount(ins, arch)
    if amt is None:
        return None
    w = _first_writer(fn, index, amt, lambda w: w.opcode == "cvt" and "ftz" in w.mods)
    return _note_after(ins, w, "shifts by the amount written by", "converts the amount again for the 16-bit "
                       "shift, without .ftz (SASS: F2I.U16.CEIL.NTZ beside F2I.FTZ.U32.CEIL.NTZ), so a subnormal "
                       "source shifts by 1", "fuzz_101027_value", "tcsim shifts by the converted register.")


def _half2_after_tf32(ins, arch, fn, index):
    if not arch.startswith("sm_9") or not any(t in ("f16x2", "bf16x2") for t in _types(ins)):
        return None
    w = _first_writer(fn, index, _src_regs(ins), lambda w: w.opcode == "cvt" and "tf32" in w.mods)
    return _note_after(ins, w, "reads the tf32 result of", "computes the half-pair operation on the low halves "
                       "only (SASS: HADD2 R26, R20.H0_H0, R23.H0_H0 in the unrolled loop)", "fuzz_1261_value",
                       "tcsim computes both halves.")


def _guarded_mad_hi_after_carry(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.guard is None or ins.opcode not in ("mad", "madc") or "hi" not in ins.mods:
        return None
    if len(ins.operands) < 4:
        return None
    w = _first_writer(fn, index, ir.reg_names(ins.operands[3]), lambda w: w.opcode in ("addc", "subc", "madc"))
    return _note_after(ins, w, "is predicated and adds the carry-chain result of", "unrolls the loop around "
                       "them and the predicated IMAD.HI of a later copy reads an addend of another iteration",
                       "fuzz_100755_value", "tcsim executes the PTX in order.")


def _s16_div_after_f2i(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("div", "rem") or "s16" not in ins.mods:
        return None
    w = _first_writer(fn, index, _src_regs(ins), lambda w: w.opcode == "cvt" and len(_types(w)) == 2
                      and _types(w)[0] == "s16" and _types(w)[1] in _FLOAT_TYPES)
    return _note_after(ins, w, "divides the float-to-s16 result of", "computes the 16-bit division from a copy "
                       "of the conversion that is not the register the PTX names (SASS: two F2I.S16.TRUNC of "
                       "the source in the unrolled loop)", "fuzz_101080_value", "tcsim divides the converted register.")


def _b64_shift_imm_after_mul(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("shl", "shr") or len(ins.operands) < 3:
        return None
    if not any(t in ("b64", "u64", "s64") for t in _types(ins)):
        return None
    amt = ins.operands[2]
    if not isinstance(amt, ir.Imm) or amt.value < 64:
        return None
    w = _first_writer(fn, index, ir.reg_names(ins.operands[1]), lambda w: w.opcode in ("mul", "shl", "mad")
                      and any(isinstance(o, ir.Imm) for o in w.operands[1:]))
    return _note_after(ins, w, f"shifts by {amt.value} (64 or more) the result of", "merges the shift with the "
                       "constant multiplication or shift before it and returns the product unshifted, not 0", "fuzz_108199_value", "tcsim gives 0 (shl, shr.u) as the PTX ISA says.")


def _copysign_same(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "copysign" or len(ins.operands) < 3:
        return None
    a, b = ir.reg_names(ins.operands[1]), ir.reg_names(ins.operands[2])
    if not a or a != b:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: both sources are {a[0]}; the GPU result depends on ptxas: 13.0 "
                         "simplifies later uses of copysign(x, x) wrongly (measured on the H100: xor.b64 of the "
                         "result with x gave x's sign bit, not 0; fuzz reproducer fuzz_109430_value). tcsim "
                         "returns x. Use mov.")


def _minmax_of_copy(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("min", "max") or len(ins.operands) < 3:
        return None
    if not any(t in _FLOAT_TYPES for t in _types(ins)):
        return None
    a, b = ir.reg_names(ins.operands[1]), ir.reg_names(ins.operands[2])
    if not a or not b or a == b:
        return None
    for x, y in ((a[0], b[0]), (b[0], a[0])):
        w = _last_writer(fn.body, index, x)
        if w is not None and w.opcode == "mov" and len(w.operands) > 1 and ir.reg_names(w.operands[1]) == [y]:
            return _note_after(ins, w, f"compares {y} with its copy {x} made by", "propagates the copy and "
                               "folds min/max(x, x) to x (SASS: a PRMT), so a NaN comes back unchanged",
                               "fuzz_104982_value", "tcsim compares two registers: two NaNs give the canonical "
                               "NaN.")
    return None


def _setp_ftz_of_guard(ins, fn, index):
    """The setp.ftz that wrote the guard of ``ins`` (reaching writers), or None."""
    return _first_writer(fn, index, [ins.guard[0].name], lambda w: w.opcode == "setp" and "ftz" in w.mods)


def _guard_from_setp_ftz(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.guard is None or ins.opcode == "bra":
        return None
    g = ins.guard[0].name
    w = _setp_ftz_of_guard(ins, fn, index)
    return _note_after(ins, w, f"is guarded by {g}, written by", "recomputes such a guard with an FSETP without "
                       ".FTZ (SASS: @!P1 FFMA after FSETP.NEU.OR P1 ... without .FTZ), so for a subnormal operand "
                       "the instruction runs or not against the PTX", "fuzz_107537_value",
                       "tcsim uses the predicate the setp wrote.")


def _mma_imm_operand(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "mma" or len(ins.operands) < 4:
        return None
    names = [n for op in ins.operands[1:3] for n in ir.reg_names(op)]
    w = _first_writer(fn, index, names, lambda w: w.opcode == "mov" and len(w.operands) > 1
                      and isinstance(w.operands[1], ir.Imm))
    return _note_after(ins, w, "multiplies the constant written by", "folds the constant's sign into a negated "
                       "HMMA operand (SASS: HMMA.1688.F32 R4, R10, -R34, R4) and the H100 result comes out "
                       "negated", "fuzz_108625_value", "tcsim multiplies the register's value.")


def _sat_cvt_after_int_sign_op(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "cvt" or "sat" not in ins.mods:
        return None
    ts = _types(ins)
    if len(ts) != 2 or ts[0] not in _INTS or ts[1] not in _INTS:
        return None
    w = _first_writer(fn, index, _src_regs(ins)[:1], lambda w: w.opcode in ("neg", "abs")
                      and any(t in ("s32", "s64") for t in _types(w)))
    return _note_after(ins, w, "saturates the result of", "computes the saturation from the operand's range, "
                       "as if the negation could not wrap (SASS: ISETP.LE R25, -0xff selects 0xff), so -(-2^31) "
                       "saturates to 255", "fuzz_106923_value", "tcsim wraps -(-2^31) to -2^31 and saturates that.")


def _reads(ins, name: str) -> bool:
    if not isinstance(ins, ir.Instruction):
        return False
    if ins.guard is not None and ins.guard[0].name == name:
        return True
    return any(name in ir.reg_names(op) or (isinstance(op, ir.Not) and name in ir.reg_names(op.operand))
               or (isinstance(op, ir.Address) and isinstance(op.base, ir.Reg) and op.base.name == name)
               for op in ins.operands[1:])


def _guard_redefined_later(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.guard is None:
        return None
    g = ins.guard[0].name
    body = fn.body
    if ins.opcode == "bra":
        if not ins.operands or not isinstance(ins.operands[0], ir.LabelRef) \
                or fn.labels.get(ins.operands[0].name, -1) <= index:
            return None                     # loop back edges: the usual shape, no finding
        dests = []
    else:
        dests = _dest_names(ins) if ins.operands else []
    for k in range(index + 1, len(body)):
        other = body[k]
        if any(_reads(other, d) for d in dests):
            return None                     # the result is used before the guard changes: it cannot sink past
        if _writes(other, g):
            return _note_after(ins, other, f"is guarded by {g}, which is written again later by",
                               "moves a predicated instruction (or the body of a short branch it predicates) "
                               "below a later write of its guard, so it runs under the new value (simulating "
                               "the moved instruction reproduces the H100 output bit for bit)",
                               "fuzz_108517_value, fuzz_102217_value",
                               "tcsim uses the guard's value at the instruction. Use a fresh predicate.")
    return None


def _f64_nan_order_in_loop(ins, arch, fn, index):
    found = _f64_loop_carried_sources(ins, arch, fn, index)
    if found is None or not any(len(c) == 2 for c in found[1]):
        return None
    a, b = found[0]
    return Note(ins.loc, f"{ins.full_opcode}: both sources ({a}, {b}) change in the loop around it; the GPU result "
                         "depends on ptxas: 13.0 unrolls the loop and orders the two sources differently in different "
                         "copies (SASS: DFMA R28, R28, R30 then DFMA R28, R30, R28), so when both are NaN which NaN "
                         "comes back changes from one iteration to the next (measured on the H100, fuzz reproducer "
                         "fuzz_105824_value). tcsim picks by one rule (sim/semantics/float_arith.py "
                         "sass_nan_priority).")


def _lop3_repeated_source(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "lop3" or len(ins.operands) < 5:
        return None
    names = [ir.reg_names(op) for op in ins.operands[1:4]]
    regs = [n[0] for n in names if n]
    if len(regs) == len(set(regs)):
        return None
    return Note(ins.loc, f"{ins.full_opcode}: a source register appears twice; the GPU result depends on ptxas: 13.0 "
                         "merges such a lop3 with a following logic operation into one LOP3 with a wrong truth "
                         "table (SASS: xor.b32 of a and lop3(a, 0x13, a, 0x9D) became LOP3.LUT R19, R23, 0x13, "
                         "RZ, 0x6d; measured on the H100, fuzz reproducer fuzz_200990_value). tcsim evaluates "
                         "the PTX.")


def _guarded_mad_hi_in_loop(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.guard is None or ins.opcode not in ("mad", "madc") or "hi" not in ins.mods:
        return None
    if len(ins.operands) < 4:
        return None
    c = ir.reg_names(ins.operands[3])
    carried = [w for w in (_reaching_writers(fn, index, c[0]) if c else []) if w.index > index]
    if not carried:
        return None
    return _note_after(ins, carried[0], "is predicated and adds a value the loop around it writes later, with",
                       "unrolls the loop and the predicated IMAD.HI of a copy reads the addend of another "
                       "iteration", "fuzz_200593_value", "tcsim executes the PTX in order.")


def _int_sign_op_min(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("abs", "neg") or not any(m in ins.mods for m in ("s32", "s64")):
        return None
    return Note(ins.loc, f"{ins.full_opcode}: the GPU result of what reads it depends on ptxas: 13.0 simplifies "
                         "with facts about abs/neg that do not hold for every input (abs non-negative, neg never "
                         "wrapping, x - abs(x) never borrowing): a slct on abs(-2^31) took the 'non-negative' "
                         "source, a subc after abs.s64 of 0 borrowed, a cvt.sat of -(-2^31) gave 255 (measured on "
                         "the H100, fuzz reproducers fuzz_202765_value, fuzz_205009_value, fuzz_106923_value). "
                         "tcsim follows the PTX ISA (two's complement, wrapping).")


def _half_int_arith_after_f2i(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("mul", "mad") \
            or not any(t in ("s16", "u16") for t in _types(ins)):
        return None
    w = _first_writer(fn, index, _src_regs(ins), lambda w: w.opcode == "cvt" and len(_types(w)) == 2
                      and _types(w)[0] in ("s16", "u16") and _types(w)[1] in _FLOAT_TYPES)
    return _note_after(ins, w, "computes with the float-to-16-bit result of", "feeds the 16-bit arithmetic "
                       "from 32-bit registers whose upper bits are not what the 16-bit values imply (SASS: "
                       "IMAD R13, R3, R0, R12 for a mad.wide.u16; mul.hi.s16 of a cvt.rmi.s16.bf16 result gave "
                       "0x9B3D for 0)", "fuzz_203514_value, fuzz_203702_value", "tcsim uses the 16-bit values.")


def _fp8_mma_after_big_shift(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "mma" or not any(t in ins.mods for t in _SPLIT_MMA_TYPES):
        return None
    names = [n for op in ins.operands[1:3] for n in ir.reg_names(op)]

    def big_shift(w):
        return w.opcode in ("shl", "shr") and len(w.operands) > 2 and isinstance(w.operands[2], ir.Imm) \
            and w.operands[2].value >= 32

    w = _first_writer(fn, index, names, big_shift)
    if w is None:               # through a shfl of such a value
        w = next((x for n in names for s in _reaching_writers(fn, index, n) if s.opcode == "shfl"
                  for x in [_first_writer(fn, s.index, _src_regs(s)[:1], big_shift)] if x is not None), None)
    return _note_after(ins, w, "multiplies fp8 values that a shift by 32 or more (result 0) wrote:", "constant-folds "
                       "the zero into the fp8-to-f16 unpacking of its mma lowering wrongly (SASS: F2FP.F16.E4M3."
                       "UNPACK_B R9, 1.12e-44 -- the bits 0x8 -- for the upper half of the zero register)",
                       "fuzz_204633_value, fuzz_209975_value", "tcsim multiplies 0.")


def _branch_from_setp_ftz(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.guard is None or ins.opcode != "bra":
        return None
    g = ins.guard[0].name
    w = _setp_ftz_of_guard(ins, fn, index)
    return _note_after(ins, w, f"branches on {g}, written by", "recomputes the branch condition without .FTZ, so "
                       "a subnormal operand takes the other path", "fuzz_207439_value, fuzz_208935_value",
                       "tcsim branches on the predicate the setp wrote.")


def _logic_after_relu_cvt(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("and", "or", "xor") or "b16" not in ins.mods:
        return None
    w = _first_writer(fn, index, _src_regs(ins), lambda w: w.opcode == "cvt" and "relu" in w.mods)
    return _note_after(ins, w, "combines the result of", "drops the 16-bit logic operation on a cvt.relu result "
                       "(SASS: F2FP.RELU.BF16.F32 then PRMT, no LOP3)", "fuzz_206993_value",
                       "tcsim computes it.")


def _sat_of_wrapping_add_sub(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("add", "sub") or "sat" not in ins.mods \
            or len(ins.operands) < 3:
        return None
    srcs = _src_regs(ins)
    for i, name in enumerate(srcs):
        others = set(srcs[:i] + srcs[i + 1:])
        w = _first_writer(fn, index, [name], lambda w: w.opcode in ("add", "sub") and "sat" not in w.mods
                          and any(t in _INTS for t in _types(w)) and others & set(_src_regs(w)))
        if w is not None:
            return _note_after(ins, w, "saturates an expression that shares a source with the wrapping",
                               "cancels the shared source algebraically, as if the wrapping add/sub could not "
                               "overflow (SASS: (a - b) - a became IMAD.MOV -b and a SEL of 0x7fffffff; sat((a + "
                               "b) - a) became b, no saturation at all)", "fuzz_300987_value, fuzz_302787_value",
                               "tcsim wraps the first result and saturates the second, as the PTX ISA says.")
    return None


def _half_shift_by_cnot(ins, arch, fn, index):
    amt = _half_shift_amount(ins, arch)
    if amt is None:
        return None
    w = _first_writer(fn, index, amt, lambda w: w.opcode == "cnot")
    return _note_after(ins, w, "shifts by the amount written by", "computes the 16-bit shift by 0 where the "
                       "cnot gave 1 (SASS: IMAD.MOV.U32 R0, RZ, RZ, RZ; LOP3.LUT R0, R0, 0xffff; SHF.L.U32 R2, "
                       "R29, R0: the amount is the constant 0)", "fuzz_306558_value",
                       "tcsim shifts by the cnot result.")


def _conditional_mad_hi_addend_in_loop(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("mad", "madc") or "hi" not in ins.mods \
            or len(ins.operands) < 4:
        return None
    c = ir.reg_names(ins.operands[3])
    if not c:
        return None
    body = fn.body
    for start, k in _loops_around(fn, index):
        skipped = ins.guard is not None or any(
            isinstance(b, ir.Instruction) and b.opcode == "bra" and b.guard is not None and b.operands
            and isinstance(b.operands[0], ir.LabelRef) and index < fn.labels.get(b.operands[0].name, -1) <= k
            for b in body[start:index])
        # (a writer after it in the loop: guarded-mad-hi-in-loop)
        writers = [body[i] for i in range(start, index) if _writes(body[i], c[0])]
        if skipped and writers:
            return _note_after(ins, writers[-1], f"runs conditionally in a loop whose body first writes its addend "
                               f"{c[0]}, with", "unrolls the loop, predicates the skipped code and keeps fewer "
                               "IMAD.HI than iterations; the one left reads the addend of another iteration (SASS: "
                               "@!P1 VABSDIFF R24 ... @!P1 IMAD.MOV.U32 R29, RZ, RZ, R24; @!P1 VABSDIFF R24 ...; "
                               "@!P1 IMAD.HI R19, R20, 0x1d, R28)", "fuzz_306625_value",
                               "tcsim executes every iteration in order.")
        return None
    return None


def _f64_nan_order_one_carried(ins, arch, fn, index):
    found = _f64_loop_carried_sources(ins, arch, fn, index)
    if found is not None and found[1]:
        (a, b), carried = found[0], found[1][0]          # the innermost loop
        if len(carried) == 1:                   # both: f64-nan-order-in-loop
            other = b if carried == [a] else a
            return Note(ins.loc, f"{ins.full_opcode}: the loop around it changes {carried[0]}, not {other}; the GPU "
                                 "result depends on ptxas: 13.0 peels and unrolls the loop and orders the two sources "
                                 "one way in the peeled copy and the other way in the unrolled ones (SASS: @!P0 DFMA "
                                 "R16, R16, R8, R22 then DFMA R16, R8, R16, R22), so when both are NaN which NaN "
                                 "comes back depends on the trip count (measured on the H100, fuzz campaign programs "
                                 "304041, 304484, 301456 of tests/golden/fuzz_campaign/h100_v4_seeds_300000_309999"
                                 ".npz; reproducers fuzz_304041_value, fuzz_304484_value). tcsim picks by one rule "
                                 "(sim/semantics/float_arith.py sass_nan_priority).")
    return None



# ---------------------------------------------------------------- found by generator version 5's campaign

_HALF_INTS = ("s16", "u16", "b16")


def _f2i_half(w) -> bool:
    """A float-to-16-bit-integer cvt (ptxas 13.0: F2I.S16/F2I.U16)."""
    ts = _types(w)
    return w.opcode == "cvt" and len(ts) == 2 and ts[0] in ("s16", "u16") and ts[1] in _FLOAT_TYPES


def _half_compare_shift_after_f2i(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("setp", "set", "shr") or len(ins.operands) < 3:
        return None
    ts = _types(ins)
    if ins.opcode == "set":
        ts = ts[1:]                                 # set.<cmp>.<dtype>.<stype>: the compared type
    if not ts or ts[-1] not in _HALF_INTS:
        return None
    srcs = ir.reg_names(ins.operands[1]) if ins.opcode == "shr" else \
        [n for op in ins.operands[1:3] for n in ir.reg_names(op)]
    w = _first_writer(fn, index, srcs, _f2i_half)
    what = "shifts" if ins.opcode == "shr" else "compares"
    return _note_after(ins, w, f"{what} the float-to-16-bit result of", "treats the F2I.S16/F2I.U16 result as "
                       "already sign/zero-extended to 32 bits, but re-emits the conversion inside a loop and "
                       "inserts it into the low half of a register whose upper half holds another value (PRMT R37, "
                       "R32, 0x7610, R37), then compares or shifts all 32 bits (ISETP.GT.AND R37, ...; SHF.R.S32.HI "
                       "R31, RZ, R26, R21): setp.gt.s16/setp.ge.s16/setp.hs.u16 took the other branch and shr.s16 "
                       "of -32768 by 16 or more gave 0 instead of 0xFFFF", "fuzz_400122_value, fuzz_401666_value, "
                       "fuzz_401700_value, fuzz_406776_value", "tcsim compares and shifts the 16-bit values.")


def _narrow_cvt_of_cnot(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "cvt":
        return None
    ts = _types(ins)
    if len(ts) != 2 or ts[0] not in ("u8", "s8", "u16", "s16") or ts[1] not in _INTS:
        return None
    w = _first_writer(fn, index, _src_regs(ins)[:1], lambda w: w.opcode == "cnot")
    return _note_after(ins, w, "narrows the result of", "folds the conversion of the cnot result to the constant 0 "
                       "(SASS: IMAD.MOV.U32 R0, RZ, RZ, RZ; PRMT R2, R0, 0x7610, R34 -- no compare of the source), "
                       "so cnot(0) converts to 0, not 1", "fuzz_405637_value", "tcsim converts the cnot result.")


def _float_after_mad_hi_sat(ins, arch, fn, index):
    if not arch.startswith("sm_9") or not _reads_float(ins):
        return None
    w = _first_writer(fn, index, _src_regs(ins), lambda w: w.opcode == "mad" and "hi" in w.mods
                      and "sat" in w.mods and not _writes_float(w))
    return _note_after(ins, w, "reads as a float the saturated integer result of", "drops the float operation "
                       "as if the integer's value range decided it (SASS: IMAD.HI, VIADD, the saturation SELs, no "
                       "FMNMX): max.f32 of mad.hi.sat.s32 = 0xE26DD7A6 (-1.1e21) and -3.0 came back as "
                       "0xE26DD7A6", "fuzz_409367_value", "tcsim uses the bits, as the PTX ISA says.")


def _logic_after_set_f32(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode not in ("and", "or", "xor") or len(ins.operands) < 3:
        return None
    srcs = _src_regs(ins)

    def set_f32(w):
        ts = _types(w)
        return w.opcode == "set" and len(ts) >= 1 and ts[0] == "f32"

    for name in srcs:
        w = _first_writer(fn, index, [name], set_f32)
        if w is None:
            continue
        d = _dest_names(w)[0]
        derived = _first_writer(fn, index, [n for n in srcs if n != name],
                                lambda x: x is not w and d in _src_regs(x))
        if derived is not None:
            return _note_after(ins, w, "combines bitwise the 0/1.0 result of", f"treats the set result and "
                               f"the value {derived.full_opcode} (line {derived.loc.line}) computed from it as "
                               "booleans (SASS: FSEL R17, RZ, 1; ISETP.NE R17; ISETP.NE.U32 ... ; FSEL R25, RZ, 1 "
                               "-- no LOP3, no I2F): and(cvt.rz.ftz.f32.s32(1.0f), 1.0f) gave 1.0f (0x3F800000), "
                               "not 0x0E000000", "fuzz_404470_value", "tcsim combines the bits.")
    return None


def _neg_minmax_neg_f64(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "neg" or "f64" not in ins.mods:
        return None

    def same_minmax(w):
        if w.opcode not in ("min", "max") or "f64" not in w.mods or len(w.operands) < 3:
            return False
        a, b = ir.reg_names(w.operands[1]), ir.reg_names(w.operands[2])
        return bool(a) and a == b

    m = _first_writer(fn, index, _src_regs(ins), same_minmax)
    if m is None:
        return None
    w = _first_writer(fn, m.index, ir.reg_names(m.operands[1]), lambda w: w.opcode == "neg" and "f64" in w.mods)
    return _note_after(ins, w, f"negates {m.full_opcode} (line {m.loc.line}) of one register, the result of",
                       "folds min/max(y, y) to y and then neg(neg(x)) to a copy of x (SASS: the DADD -RZ, -R of the "
                       "first neg is kept for it, and the second is the store of x itself), so a signalling NaN "
                       "comes back signalling where the PTX quiets it", "fuzz_405887_value",
                       "tcsim executes each instruction.")


_FP8X2 = ("e4m3x2", "e5m2x2", "e2m3x2", "e3m2x2", "e2m1x2")


def _pack_after_fp8x2_cvt(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "mov" or len(ins.operands) < 2 \
            or not isinstance(ins.operands[1], ir.Vector):
        return None
    halves = ir.reg_names(ins.operands[1])
    if len(halves) != 2 or halves[0] == halves[1]:
        return None
    w = _first_writer(fn, index, halves, lambda w: w.opcode == "cvt" and bool(_types(w))
                      and _types(w)[0] in _FP8X2)
    if w is None:
        return None
    other = [h for h in halves if h not in _dest_names(w)]
    return _note_after(ins, w, f"packs {other[0] if other else 'another 16-bit register'} with the fp8x2 result of",
                       "lets the conversion's F2FP ...UNPACK_B_MERGE_C write its 16 bits into the low half of the "
                       "register that holds the other half's value (F2FP.SATFINITE.RELU.E4M3.F16.UNPACK_B_MERGE_C "
                       "R23, R19, R23 over the add.u16 result in R23), so that 16-bit register reads back the "
                       "converted bits", "fuzz_407842_value", "tcsim keeps the registers apart.")

def _is_wgmma_mma(ins) -> bool:
    return isinstance(ins, ir.Instruction) and ins.opcode == "wgmma" and "mma_async" in ins.mods


def _wgmma_done_at(body, index: int) -> int:
    """The index of the ``wgmma.wait_group`` that completes the wgmma at ``index`` in straight-line order (its group
    is the next ``commit_group``; ``wait_group N`` completes it once N groups were committed after it), else the
    end of the body."""
    committed, after = False, 0
    for j in range(index + 1, len(body)):
        b = body[j]
        if not isinstance(b, ir.Instruction) or b.opcode != "wgmma":
            continue
        if "commit_group" in b.mods:
            after += committed
            committed = True
        elif "wait_group" in b.mods and committed and b.operands \
                and after >= int(getattr(b.operands[0], "value", 0)):
            return j
    return len(body)


def _wgmma_a_source_reused(ins, arch, fn, index):
    if not arch.startswith("sm_9") or not _is_wgmma_mma(ins) or len(ins.operands) < 2 \
            or not isinstance(ins.operands[1], ir.Vector):
        return None
    body = fn.body
    end = _wgmma_done_at(body, index)
    for a in ir.reg_names(ins.operands[1]):
        w = next((body[j] for j in range(index - 1, -1, -1) if _writes(body[j], a)), None)
        if w is None or w.opcode != "mov" or len(w.operands) != 2 or not isinstance(w.operands[1], ir.Reg):
            continue
        src = w.operands[1].name
        k = next((k for k in range(index + 1, end) if _writes(body[k], src)), None)
        if k is not None:
            return Note(ins.loc, f"{ins.full_opcode}: its A register {a} is a copy of {src} (line {w.loc.line}), "
                                 f"which {body[k].full_opcode} (line {body[k].loc.line}) writes while the wgmma is "
                                 "in flight; the GPU result depends on ptxas: 13.0 gives the copy the source's "
                                 "register, and the tensor core, which reads A after the issue, may take the new "
                                 "value (measured on the H100: v6 campaign program 600221, agreeing with tcsim "
                                 "once a wgmma.wait_group follows the commit; calib/fuzz/explain.py "
                                 "wgmma-a-source-reused). tcsim keeps the copy apart.")
    return None


def _wgmma_acc_copy_clobbered(ins, arch, fn, index):
    if not arch.startswith("sm_9") or not isinstance(ins, ir.Instruction) or _is_wgmma_mma(ins):
        return None
    body = fn.body
    for name in sorted({n for op in ins.operands[1:] for n in ir.reg_names(op)}):
        j = next((j for j in range(index - 1, -1, -1) if _writes(body[j], name)), None)
        if j is None:
            continue
        w = body[j]
        if w.opcode != "mov" or len(w.operands) != 2 or not isinstance(w.operands[1], ir.Reg):
            continue
        acc = w.operands[1].name
        c = next((body[k] for k in range(j + 1, index) if _is_wgmma_mma(body[k])
                  and acc in ir.reg_names(body[k].operands[0])), None)
        if c is not None:
            return Note(ins.loc, f"{ins.full_opcode}: reads {name}, a copy (line {w.loc.line}) of the wgmma "
                                 f"accumulator {acc}, which {c.full_opcode} (line {c.loc.line}) writes again before "
                                 "this read; the GPU result depends on ptxas: 13.0 may give the copy the "
                                 "accumulator's register, so the read gets the new accumulator value (measured on "
                                 "the H100: v6 campaign program 600031; calib/fuzz/explain.py "
                                 "wgmma-acc-copy-clobbered). tcsim reads the copy.")
    return None


def _wgmma_rs_neg_a(ins, arch, fn, index):
    if not arch.startswith("sm_9") or not _is_wgmma_mma(ins) or len(ins.operands) < 5 \
            or not isinstance(ins.operands[1], ir.Vector) or getattr(ins.operands[4], "value", None) != -1:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: imm-scale-a = -1 with A from registers (PTX ISA 9.1 §9.7.15.5.2: "
                         "each element of A is negated); the GPU result depends on ptxas: 13.0 may fold the "
                         "negation into copies of the A registers made as 32-bit integer negations (IMAD.MOV R73, "
                         "RZ, RZ, -R65 for an f16x2 register, instead of the HGMMA's -R operand), which is no "
                         "element-wise negation (measured on the H100: v6 campaign program 600269, reproduced bit "
                         "for bit by neg.s32 of each A register; calib/fuzz/explain.py wgmma-rs-neg-a-int). tcsim "
                         "negates each element, as the PTX says.")


def _wgmma_rs_chain(ins, arch, fn, index):
    if not arch.startswith("sm_9") or not _is_wgmma_mma(ins) or len(ins.operands) < 2 \
            or not isinstance(ins.operands[1], ir.Vector):
        return None
    body = fn.body
    for j in range(index - 1, -1, -1):
        b = body[j]
        if not isinstance(b, ir.Instruction) or b.opcode != "wgmma":
            continue
        if "commit_group" in b.mods or "wait_group" in b.mods:
            return None
        if _is_wgmma_mma(b) and len(b.operands) > 1 and isinstance(b.operands[1], ir.Vector):
            return Note(ins.loc, f"{ins.full_opcode}: follows another wgmma with A from registers in the same "
                                 f"wgmma-group (line {b.loc.line}) with no wait between; the GPU result depends on "
                                 "ptxas: 13.0 may build this wgmma's A operand in the registers of that one, a few "
                                 "instructions after its issue, before the tensor core has read them all (PTX ISA "
                                 "9.1 §9.7.15.5.2 forbids the program, not the compiler, to touch them in flight; "
                                 "measured on the H100: v6 campaign program 600245, whose first IGMMA read two of its "
                                 "four A registers already rewritten -- reproduced bit for bit from the SASS, "
                                 "tests/golden/fuzz_campaign/v6_rs_probe). tcsim reads each wgmma's own A.")
    return None


def _abs_f64_into_selp(ins, arch, fn, index):
    if not isinstance(ins, ir.Instruction) or ins.full_opcode != "selp.f64" or len(ins.operands) != 4:
        return None
    body = fn.body
    for op in ins.operands[1:3]:
        if not isinstance(op, ir.Reg):
            continue
        w = next((body[j] for j in range(index - 1, -1, -1) if _writes(body[j], op.name)), None)
        if w is not None and w.full_opcode == "abs.f64" and w.guard is None:
            return Note(ins.loc, f"selp.f64 of {op.name}, the abs.f64 result of line {w.loc.line}; the GPU result "
                                 "depends on ptxas: 13.0 may select the 64-bit integer absolute value of the abs's "
                                 "source (two's complement negation of a negative bit pattern) instead of the value "
                                 "with its sign bit cleared (measured on the H100: v7 campaign program 702005, where "
                                 "a cvt.sat.u64.s64 also reads it; calib/fuzz/explain.py abs-f64-int-selp). tcsim "
                                 "selects the abs.f64 result (PTX ISA 9.1 §9.7.3.5: abs clears the sign bit).")
    return None


def _f16_sat_after_int_sat(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "cvt" or "sat" not in ins.mods:
        return None
    ts = _types(ins)
    if len(ts) != 2 or ts[0] not in ("f32", "f64") or ts[1] != "f16":
        return None
    w = _first_writer(fn, index, _src_regs(ins)[:1], lambda w: (
        w.opcode == "cvt" and "sat" in w.mods and w.guard is None and len(_types(w)) == 2
        and _types(w)[0] in ("s16", "u16") and _types(w)[1] in _INTS))
    if w is None:
        return None
    return Note(ins.loc, f"{ins.full_opcode}: widens with .sat the 16-bit float bits written by {w.full_opcode} "
                         f"(line {w.loc.line}); the GPU result depends on ptxas: 13.0 takes that integer saturation "
                         "for the float one and drops the clamp to [0, 1] (SASS: I2I.S16.S32.SAT R0, R0 then a bare "
                         "F2F.F64.F16 R2, R0 / HADD2.F32 R5, -RZ, R0.H0_H0), so -0, NaN and values outside [0, 1] "
                         "come back unclamped (measured on the H200, sm_90a: v8 campaign program 801740; "
                         "tests/golden/fuzz_campaign/v8_f16_sat_after_int_sat; calib/fuzz/explain.py "
                         "f16-sat-after-int-sat). tcsim clamps, as .sat says (PTX ISA 9.1 §9.7.9.21 cvt).")


def _imm(op) -> bool:
    return isinstance(op, ir.Imm)


def _sat_add_consts_folded(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.full_opcode != "add.sat.s32" or len(ins.operands) != 3:
        return None
    a, b = ins.operands[1], ins.operands[2]
    for imm, x in ((a, b), (b, a)):
        if not _imm(imm) or not isinstance(x, ir.Reg):
            continue
        w = _first_writer(fn, index, [x.name], lambda w: w.full_opcode in ("add.u32", "add.s32") and w.guard is None
                          and len(w.operands) == 3 and _imm(w.operands[2]) and isinstance(w.operands[1], ir.Reg))
        if w is not None:
            return Note(ins.loc, f"add.sat.s32 of an immediate and {x.name}, the wrapping {w.full_opcode} of an "
                                 f"immediate (line {w.loc.line}); the GPU result depends on ptxas: 13.0 sums the two "
                                 "immediates and saturates the register plus their sum (SASS: VIADD R5, R0, "
                                 "0x247784c6 then the overflow SELs), so where the first add wrapped the result is "
                                 "not saturated (measured on the H100 and the H200: v7 campaign program 712279; "
                                 "tests/golden/fuzz_campaign/v7_sat_add_consts_folded; calib/fuzz/explain.py "
                                 "sat-add-consts-folded). tcsim wraps the first add and saturates the second, as the "
                                 "PTX ISA says (§9.7.1.1 add).")
    return None


_HALF2_ARITH = ("add", "sub", "mul", "fma", "min", "max", "neg", "abs")


def _tf32_of_half2(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.full_opcode != "cvt.rn.tf32.f32":
        return None
    w = _first_writer(fn, index, _src_regs(ins)[:1], lambda w: w.opcode in _HALF2_ARITH
                      and any(t in ("f16x2", "bf16x2") for t in w.mods))
    if w is None:
        return None
    return Note(ins.loc, f"cvt.rn.tf32.f32 of the {w.full_opcode} result of line {w.loc.line}; the GPU result depends "
                         "on ptxas: 13.0 computes only the low half of that packed result (HMUL2.BF16_V2 R6, "
                         "R0.H0_H0, R5.H0_H0) and takes the high half from whatever register it merges it into "
                         "(PRMT R7, R6, 0x7610, R7 with R7 never written), before F2FP.TF32.F32.PACK_B: the upper 16 "
                         "bits are undefined (measured on the H200, sm_90a: v8 campaign program 808497; "
                         "tests/golden/fuzz_campaign/v8_tf32_of_half2; cvt.rna.tf32.f32 is compiled right). tcsim "
                         "converts the whole 32-bit value (PTX ISA 9.1 §9.7.9.21 cvt).")


def _shfl_pred_uniform(ins, arch, fn, index):
    if not arch.startswith("sm_9") or ins.opcode != "shfl" or not ins.operands \
            or not isinstance(ins.operands[0], ir.PredPair) or not isinstance(ins.operands[0].second, ir.Reg):
        return None
    return Note(ins.loc, f"{ins.full_opcode} writes the predicate {ins.operands[0].second.name}; the GPU result "
                         "depends on ptxas: 13.0 may take it for warp-uniform, VOTEU.ANY UP0, P0 after the SHFL and a "
                         "uniform select from UP0, so every lane reads the OR of the lanes' in-range bits (measured "
                         "on the H200, sm_90a: v8 campaign program 813359, shfl.sync.bfly with c = 0x7; "
                         "calib/fuzz/explain.py shfl-pred-uniform; a kernel that needs no uniform select keeps the "
                         "per-lane bit). tcsim gives each lane its own bit (PTX ISA 9.1 §9.7.9.6 shfl.sync).")


#: every check by name: (instruction, arch, function, index in its body) -> Note | None.  A generator version
#: (calib/fuzz/generator.py) avoids the notes of the checks that existed when its campaign was recorded.
CHECKS = {
    "mma-alias": _mma_alias, "testp-guard": _guarded_testp, "set-f32-guard": _guarded_set_f32,
    "s16-sign-op": _s16_sign_op, "mad-hi-self": _mad_hi_self, "b64-shift-by-float": _b64_shift_by_float,
    "half2-abs-after-f32": _half2_abs_after_f32, "neg-neg-f64": _neg_neg_f64,
    "f2i-after-half-f2f": _f2i_after_half_f2f, "float-after-int-range": _float_after_int_range,
    "half-shift-by-ftz-cvt": _half_shift_by_ftz_cvt, "half2-after-tf32": _half2_after_tf32,
    "guarded-mad-hi-after-carry": _guarded_mad_hi_after_carry, "s16-div-after-f2i": _s16_div_after_f2i,
    "b64-shift-imm-after-mul": _b64_shift_imm_after_mul, "copysign-same": _copysign_same,
    "minmax-of-copy": _minmax_of_copy, "guard-from-setp-ftz": _guard_from_setp_ftz,
    "mma-imm-operand": _mma_imm_operand, "sat-cvt-after-int-sign-op": _sat_cvt_after_int_sign_op,
    "guard-redefined-later": _guard_redefined_later, "f64-nan-order-in-loop": _f64_nan_order_in_loop,
    # found by generator version 3's campaign
    "lop3-repeated-source": _lop3_repeated_source, "guarded-mad-hi-in-loop": _guarded_mad_hi_in_loop,
    "int-sign-op-min": _int_sign_op_min, "half-int-arith-after-f2i": _half_int_arith_after_f2i,
    "fp8-mma-after-big-shift": _fp8_mma_after_big_shift, "branch-from-setp-ftz": _branch_from_setp_ftz,
    "logic-after-relu-cvt": _logic_after_relu_cvt,
    # found by generator version 4's campaign
    "sat-of-wrapping-add-sub": _sat_of_wrapping_add_sub, "half-shift-by-cnot": _half_shift_by_cnot,
    "conditional-mad-hi-addend-in-loop": _conditional_mad_hi_addend_in_loop,
    "f64-nan-order-one-carried": _f64_nan_order_one_carried,
    # found by generator version 5's campaign
    "half-compare-shift-after-f2i": _half_compare_shift_after_f2i, "narrow-cvt-of-cnot": _narrow_cvt_of_cnot,
    "float-after-mad-hi-sat": _float_after_mad_hi_sat, "logic-after-set-f32": _logic_after_set_f32,
    "neg-minmax-neg-f64": _neg_minmax_neg_f64, "pack-after-fp8x2-cvt": _pack_after_fp8x2_cvt,
    # found by generator version 6's campaign (warpgroup MMA)
    "wgmma-a-source-reused": _wgmma_a_source_reused, "wgmma-acc-copy-clobbered": _wgmma_acc_copy_clobbered,
    "wgmma-rs-neg-a": _wgmma_rs_neg_a, "wgmma-rs-chain": _wgmma_rs_chain,
    # found by generator version 7's campaign
    "abs-f64-into-selp": _abs_f64_into_selp,
    # found by generator version 8's campaign
    "f16-sat-after-int-sat": _f16_sat_after_int_sat, "tf32-of-half2": _tf32_of_half2,
    "shfl-pred-uniform": _shfl_pred_uniform,
    # found by generator version 7's campaign (whole outputs re-run on the H200)
    "sat-add-consts-folded": _sat_add_consts_folded,
}


def notes(module: ir.Module, checks=None) -> list:
    """Every note for ``module`` (in file order); ``checks``: only those of these names (:data:`CHECKS`)."""
    arch = module.arch or ""
    run = list(CHECKS.values()) if checks is None else [CHECKS[c] for c in checks]
    out = []
    for fn in module.functions.values():
        if fn.is_declaration:
            continue
        for i, ins in enumerate(fn.body):
            if not isinstance(ins, ir.Instruction):
                continue
            for check in run:
                n = check(ins, arch, fn, i)
                if n is not None:
                    out.append(n)
    return out
