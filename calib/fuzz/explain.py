"""Verified explanations of simulator-vs-GPU mismatches that come from ptxas, not from tcsim.

A mismatch is *explained* only when the simulator reproduces the GPU's output bit for bit after one of these,
each established on the H100 from the SASS ptxas 13.0 emitted for minimised fuzz reproducers:

Rewrites (the PTX as ptxas really compiled it -- miscompilations; isa/lint.py notes each at the instruction):

``testp-guard``
    a predicated ``testp`` loses its guard (the destination predicate is written in every lane).
``set-f32-guard``
    a predicated ``set.<cmp>.f32.<type> d, a, b`` compiles to ``@g FSETP``/``SEL`` then an *unguarded*
    ``IABS`` + ``I2FP.F32.S32`` of the destination: where the guard is false the old bits of ``d`` come back
    converted, ``d = float(|int(d)|)``.

``f64-const-operand``
    ptxas propagates a constant loaded by ``mov.b64 r, imm`` into an f64 add/sub/mul/fma/min/max that reads
    ``r``: it becomes an immediate operand, so the f64 NaN order puts it last and ``sub`` flips its sign (a NaN
    constant's sign comes back flipped; fuzz reproducer fuzz_208261_value).
``neg-into-immediate``
    ``neg.f64 b, a`` then an f64 mul/fma of ``b`` by an immediate: ptxas multiplies ``a`` by the negated
    immediate (``DMUL R, R, -imm``), so a NaN immediate comes back with its sign flipped (fuzz_201099_value).
``minmax-equal``
    a float min/max whose two sources ptxas proves equal (one a ``mov`` copy, ``min/max(x, x)`` or
    ``shf.l.clamp`` by 32 or more of the other) is folded to its source: a NaN comes back with its payload
    (fuzz_104982_value, fuzz_207127_value, fuzz_209983_value).

Found by generator version 4's campaign (tests/golden/fuzz_campaign/h100_v4_seeds_300000_309999.npz; each
verified on its minimised reproducer and on the whole campaign programs, SASS quoted in the reproducers):

``f64-folded-operand``
    as ``f64-const-operand`` for a value ptxas's constant propagation computes (:func:`_const_of`: a 32-bit shift
    by 32 or more, an ``and`` with 0, a ``mad.wide`` by 0 plus a constant): ``DADD.RM R2, R6, UR6`` with the
    negated constant 0x7FFFFFFFFFFFFFFF (fuzz_307583_value).
``mul-by-one``
    ``mul(.rn).f32 d, a, 1.0`` is dropped (a copy): a NaN keeps its payload and sign (fuzz_305883_value).
``cvt-const-nan``
    a float-to-float ``cvt`` of a NaN constant (a ``mov`` of an immediate) is folded to the canonical NaN of the
    destination, bf16 0x7FFF where the F2F keeps the sign (fuzz_305143_value).
``cvt-narrow-fused``
    ``cvt.sat.s32.s64`` of a ``cvt.<rnd>i.s64.f32`` result is one float-to-s32 conversion of the float
    (``F2I.FLOOR.NTZ``): a NaN gives 0 (fuzz_305538_value).
``neg-into-immediate-copy``
    ``neg-into-immediate`` where the negation's source is written again before the multiplication: ptxas keeps the
    source in another register (fuzz campaign program 308979).
``minmax-equal`` also counts ``selp`` of one register twice as a copy (fuzz_308386_value).

Found by generator version 5's campaign (tests/golden/fuzz_campaign/h100_v5_seeds_400000_409999.npz), a rewrite
the PTX ISA allows rather than a miscompilation:

``mul-add-contracted``
    an ``add``/``sub`` without a rounding modifier of a ``mul`` result without one becomes one ``fma.rn`` (the ISA:
    "mul/add sequences with no rounding modifiers may be optimized to use fused-multiply-add instructions"); ptxas
    13.0 does it where the product has no other use (HFMA2 R0, -R12.H0_H0, R27.H0_H0, R17.H0_H0;
    fuzz_403381_value).  tcsim rounds the product, as the default ``.rn`` of each instruction says.

Found by generator version 6's campaign (tests/golden/fuzz_campaign/h200_v6_seeds_600000_611999.npz: warpgroup
programs), register hazards ptxas 13.0 creates around an asynchronous ``wgmma.mma_async`` by coalescing a ``mov``
copy into the register it copies, each one instruction of the program (:func:`wgmma_hazards`):

``wgmma-a-source-reused@<line>:<register>``
    an A operand of a wgmma with A from registers is a ``mov`` copy of a register that the program writes again
    while the wgmma is in flight (before the ``wgmma.wait_group`` that completes it): ptxas gave the copy the
    source's register (``IGMMA ... R60`` with ``@P3 FADD.SAT R61`` before the ``WARPGROUP.DEPBAR``), and the
    tensor core, which reads A after the issue, takes the new value (campaign program 600221: the GPU's output
    with the write moved before the wgmma, bit for bit; with a ``wgmma.wait_group 0`` after every commit the GPU
    agrees with tcsim, calib/fuzz/rs_probe.py on the H100).  <line>: the wgmma's line; <register>: the A
    register.
``wgmma-acc-copy-clobbered@<line>``
    ``mov.b32 r, acc`` of an accumulator register that a later wgmma writes again, ``r`` read after that wgmma:
    ptxas gave ``r`` the accumulator's register, so the read at <line> gets the accumulator's new value (program
    600031: ``MOV R95, R27`` after the QGMMA that rewrote R27 -- its ``mov.b32 %wa7, %r10`` -- while the earlier
    copy of the same register for %wa5 kept the old value: only the rows g + 8 of that wgmma differ).
``wgmma-rs-neg-a-int`` (a rewrite of :data:`REWRITES`: every such wgmma of the program)
    a wgmma with A from registers and imm-scale-a = -1: ptxas 13.0 may drop the HGMMA's ``-R`` operand and negate
    copies of the A registers as 32-bit integers (``IMAD.MOV R73, RZ, RZ, -R65`` / ``IADD3 R72, RZ, -R5, RZ``
    for f16x2 registers; program 600269, whose GPU output this reproduces bit for bit with and without a
    ``wgmma.wait_group 0`` after every commit; isa/lint.py ``wgmma-rs-neg-a``).  Not a coalescing hazard: the
    same A registers made by ``xor`` instead of ``mov`` get the same integer negation.

Found by generator version 7's campaign (tests/golden/fuzz_campaign/h100_v7_seeds_700000_713999.npz), a bug of the
generator itself (fixed in version 8): the program touches a register of a wgmma still in flight, which the PTX ISA
leaves undefined (§9.7.15.5.2), and the H100 and tcsim resolve it differently:

``abs-f64-int-selp``
    a ``selp.f64`` of an ``abs.f64`` result gets the 64-bit *integer* absolute value of the abs's source (two's
    complement negation of a negative bit pattern) instead of the cleared sign bit: program 702005 (``abs.f64 %rd0,
    %rd4`` read by ``cvt.sat.u64.s64`` and ``selp.f64``; the GPU's selp result is 0x8000000000000000 minus the
    correct one), bit for bit; isa/lint.py ``abs-f64-into-selp``.  A ptxas 13.0 miscompilation, not a wgmma one.
``wgmma-in-flight-waited``
    the program as if the wgmma had completed before the access (a ``wgmma.wait_group 0`` put before it): the H100
    reads register A within a few instructions of the issue (calib/fuzz/rs_probe.py program 600245 measured that
    window), tcsim at completion (sim/semantics/wgmma.py).  Program 701553: a later group's ``xor.b32 %wa0..3``
    while the group reading %wa0..3 was in flight -- the GPU's accumulators bit for bit.

Lowering variants (results the PTX ISA leaves open; sim/lowering.py):

``sign-ops-bitwise``, ``f64-nan-swap`` (everywhere, or ``<variant>@<line>`` for one instruction: ptxas orders each
f64 instruction's commutative sources and lowers each abs/neg on its own, and one or two instructions of a
program may go against the rule tcsim follows -- :func:`per_instruction_swaps`).

Per-instruction rewrites (:data:`LINE_REWRITES`, issue 22): the executable models of isa/lint.py's noted classes,
each ptxas's lowering read from the SASS of the class's minimised reproducers (tests/fuzz_regressions: each rewrite,
applied where the lint notes the reproducer, gives the as-compiled model's output, which is the GPU's), applied at
lines the lint notes (``<name>@<line>,<line>``; all of them, all but one, or one): ``guard-sunk``
(``guard-redefined-later``), ``b64-shift-f2i`` (``b64-shift-by-float``), ``half2-abs-fma``
(``half2-abs-after-f32``), ``setp-no-ftz`` (``branch-from-setp-ftz``, ``guard-from-setp-ftz``), ``neg-neg-copy``
(``neg-neg-f64``), ``f2i-half-source`` (``f2i-after-half-f2f``) and ``wgmma-group-lost`` (``wgmma-rs-chain``; read
from the SASS of v7 campaign program 710731).

:func:`explain` tries every combination that applies and returns ``"diagnosed:<names>"`` for the first that
reproduces the GPU output exactly, else None.
"""
from __future__ import annotations

import itertools
import re

import numpy as np

_GUARDED_TESTP = re.compile(r"^(\s*)@!?%\w+ (testp\.[\w.]+ %\w+, [^;]+;)", re.M)
_GUARDED_SET_F32 = re.compile(r"^(\s*)(@!?%\w+) set\.([a-z.]+?)\.f32\.([a-z0-9]+) (%\w+), ([^;]+);", re.M)


def _testp_guard(text: str) -> str:
    return _GUARDED_TESTP.sub(r"\1\2", text)


def _set_f32_guard(text: str) -> str:
    return _GUARDED_SET_F32.sub(r"\1\2 set.\3.s32.\4 \5, \6;\n\1abs.s32 \5, \5;\n\1cvt.rn.f32.s32 \5, \5;", text)


_INSTR = re.compile(r"^(\s*)(@!?%\w+ )?([a-z][\w.:]*)(?: (.*))?;\s*$")
_F64_ARITH = re.compile(r"^(add|sub|mul|fma|mad|min|max)(\.\w+)*\.f64$")
_FLOAT_MINMAX = re.compile(r"^(min|max)(\.\w+)*\.(f32|f16|bf16|f64)$")


def _split_operands(text: str) -> list:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _dests(opcode: str, ops: list) -> list:
    if not ops or opcode.split(".")[0] in ("st", "bra", "bar", "ret", "cp", "red", "fence") or ops[0].startswith("["):
        return []
    return re.findall(r"%\w+", ops[0])


def _dataflow_rewrite(text: str, fold, consts: dict | None = None) -> str:
    """Rewrite instruction lines with what straight-line code tells about their sources.  ``fold(opcode,
    operands, facts)`` returns new operands, (new opcode, new operands) or None; ``facts`` maps a register to the
    unguarded instruction (opcode, operands) that last wrote it, for registers neither it nor its sources have
    changed since.  ``consts`` (a dict the caller's ``fold`` reads), when given, maps every register whose value
    constant propagation knows to that value (:func:`_const_of`), kept until the register itself changes.  Paths
    that skip code forward only skip writes already seen; at the head of a loop (a label a later branch goes
    back to) whatever the loop writes is forgotten."""
    lines = text.split("\n")
    loop_writes = _loop_writes(lines)
    facts: dict = {}
    out = []
    for i, ln in enumerate(lines):
        m = _INSTR.match(ln)
        if m is None:
            written = loop_writes.get(i, set())
            for k in [k for k, (_, o) in facts.items() if k in written or written & set(o[1:])]:
                del facts[k]
            for k in written & set(consts or ()):
                del consts[k]
            out.append(ln)
            continue
        indent, guard, opcode, rest = m.group(1), m.group(2) or "", m.group(3), m.group(4) or ""
        ops = _split_operands(rest)
        new = fold(opcode, ops, facts)
        if new is not None:
            if isinstance(new, tuple):          # (new opcode, new operands)
                opcode, new = new
            ops = new
            ln = f"{indent}{guard}{opcode} {', '.join(ops)};"
        for d in _dests(opcode, ops):
            facts.pop(d, None)
            for k in [k for k, (_, o) in facts.items() if d in o[1:]]:
                del facts[k]
        ds = _dests(opcode, ops)
        if consts is not None:
            v = _const_of(opcode, ops, consts) if not guard and len(ds) == 1 else None
            for d in ds:
                consts.pop(d, None)
            if v is not None:
                consts[ds[0]] = v
        if not guard and len(ds) == 1 and ds[0] not in ops[1:]:
            facts[ds[0]] = (opcode, ops)
        out.append(ln)
    return "\n".join(out)


def _imm64(op: str):
    try:
        return int(op, 0) & (2 ** 64 - 1) if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)", op) else None
    except ValueError:
        return None


_MOV64 = ("mov.b64", "mov.u64", "mov.s64")


def _f64_operand_fold(value):
    """A :func:`_dataflow_rewrite` fold that replaces each source of an f64 add/sub/mul/fma/mad/min/max by the
    immediate ``value(register, its last writer or None)`` gives (an int, the 64-bit pattern), where not None."""
    def fold(opcode, ops, facts):
        if not _F64_ARITH.match(opcode):
            return None
        new = list(ops)
        for i in range(1, len(ops)):
            v = value(ops[i], facts.get(ops[i]))
            if v is not None:
                new[i] = f"0d{v:016X}"
        return new if new != ops else None
    return fold


def _f64_const_operand(text: str) -> str:
    return _dataflow_rewrite(text, _f64_operand_fold(lambda r, w: _imm64(w[1][1]) if w and w[0] in _MOV64 else None))


_F64_MUL = re.compile(r"^(mul|fma|mad)(\.\w+)*\.f64$")


def _negated_f64_imm(op: str) -> str:
    """The f64 immediate ``0dXXXXXXXXXXXXXXXX`` with its sign bit flipped."""
    return f"0d{int(op[2:], 16) ^ (1 << 63):016X}"


def _neg_into_immediate(text: str) -> str:
    def fold(opcode, ops, facts):
        if not _F64_MUL.match(opcode) or len(ops) < 3:
            return None
        for i, j in ((1, 2), (2, 1)):
            w = facts.get(ops[i])
            if w and w[0] == "neg.f64" and ops[j].startswith("0d"):
                new = list(ops)
                new[i] = w[1][1]
                new[j] = _negated_f64_imm(ops[j])
                return new
        return None
    return _dataflow_rewrite(text, fold)


def _minmax_equal(text: str) -> str:
    def same(y, x, facts) -> bool:
        w = facts.get(y)
        if not w:
            return False
        op, o = w
        if op.startswith("mov.") and o[1:] == [x]:
            return True
        if _FLOAT_MINMAX.match(op) and o[1:] == [x, x]:
            return True
        if op.startswith("selp.") and o[1:3] == [x, x]:
            return True
        return op.startswith("shf.l.clamp") and o[1] == x and (_imm64(o[3]) or 0) >= 32

    def fold(opcode, ops, facts):
        if not _FLOAT_MINMAX.match(opcode) or len(ops) != 3 or ops[1] == ops[2]:
            return None
        x, y = ops[1], ops[2]
        if same(y, x, facts):
            return [ops[0], x, x]
        if same(x, y, facts):
            return [ops[0], y, y]
        return None
    return _dataflow_rewrite(text, fold)


def _const_of(opcode: str, ops: list, consts: dict):
    """The value ptxas's constant propagation gives the destination of ``opcode ops`` from the known register
    values ``consts``, or None: a ``mov`` of an immediate or of a known register, a 32-bit ``shl``/``shr.u``/
    ``shr.b`` by 32 or more (0), an ``and`` with a known 0, a ``mul.wide`` by a known 0 (0) and a ``mad.wide`` by
    one (its 64-bit addend)."""
    def val(op):
        v = _imm64(op)
        return v if v is not None else consts.get(op)

    head = opcode.split(".")[0]
    if head == "mov" and len(ops) == 2:
        return val(ops[1])
    if head in ("shl", "shr") and len(ops) == 3 and re.search(r"\.(b32|u32)$", opcode) and (val(ops[2]) or 0) >= 32:
        return 0
    if head == "and" and len(ops) == 3 and 0 in (val(ops[1]), val(ops[2])):
        return 0
    if head in ("mul", "mad") and ".wide." in opcode and len(ops) >= 3 \
            and 0 in (None if val(ops[1]) is None else val(ops[1]) & 0xFFFFFFFF,
                      None if val(ops[2]) is None else val(ops[2]) & 0xFFFFFFFF):
        return 0 if head == "mul" else (val(ops[3]) if len(ops) > 3 else None)
    return None


def _f64_folded_operand(text: str) -> str:
    consts: dict = {}
    # (a mov of a constant: f64-const-operand)
    return _dataflow_rewrite(text, _f64_operand_fold(lambda r, w: None if w and w[0] in _MOV64 else consts.get(r)),
                             consts)


def _neg_into_immediate_copy(text: str) -> str:
    """``neg-into-immediate`` where the negation's source is written again before the mul/fma reads the
    negation: ptxas still multiplies the source (kept in another register) by the negated immediate.  The rewrite
    copies the source into a fresh register ``%xdN`` on the negation's line and multiplies that (a declaration
    goes on the first ``.reg`` line: line numbers stay those of the PTX)."""
    lines = text.split("\n")
    loop_writes = _loop_writes(lines)
    negs: dict = {}                     # negation's register -> (its line, its source), while it is unchanged
    n = 0
    for i, ln in enumerate(lines):
        m = _INSTR.match(ln)
        if m is None:
            for r in loop_writes.get(i, set()) & set(negs):
                del negs[r]             # the head of a loop that writes it
            continue
        guard, opcode, ops = m.group(2) or "", m.group(3), _split_operands(m.group(4) or "")
        if _F64_MUL.match(opcode) and len(ops) >= 3:
            for a, b in ((1, 2), (2, 1)):
                if ops[a] in negs and ops[b].startswith("0d"):
                    at, src = negs[ops[a]]
                    if not _source_changed(lines, at, i, src):
                        break           # unchanged: the plain neg-into-immediate covers it
                    tmp = f"%xd{n}"
                    n += 1
                    lines[at] += f" mov.b64 {tmp}, {src};"
                    new = list(ops)
                    new[a], new[b] = tmp, _negated_f64_imm(ops[b])
                    lines[i] = f"{m.group(1)}{guard}{opcode} {', '.join(new)};"
                    break
        ds = _dests(opcode, ops)
        for d in ds:
            negs.pop(d, None)
        if opcode == "neg.f64" and not guard and len(ops) == 2 and ops[1] != ops[0]:
            negs[ops[0]] = (i, ops[1])
    return _with_fresh_registers(text, lines, n, ".b64 %xd")


def _with_fresh_registers(text: str, lines: list, n: int, decl: str) -> str:
    """``lines`` joined, with ``n`` fresh registers ``.reg <decl><n>`` declared on the first ``.reg`` line (line
    numbers stay those of the PTX); ``text`` unchanged where none was made or nothing declares registers."""
    k = next((i for i, ln in enumerate(lines) if ln.strip().startswith(".reg ")), None)
    if not n or k is None:
        return text
    lines[k] += f" .reg {decl}<{n}>;"
    return "\n".join(lines)


def _loop_writes(lines: list) -> dict:
    """{line of a loop's head label: registers the loop writes} (a loop: a label a later branch goes back to)."""
    labels = {ln.strip()[:-1]: i for i, ln in enumerate(lines) if ln.strip().endswith(":")}
    out: dict = {}
    for k, ln in enumerate(lines):
        m = _INSTR.match(ln)
        if m and m.group(3) == "bra" and labels.get((m.group(4) or "").strip(), k) < k:
            head = labels[m.group(4).strip()]
            for body_ln in lines[head:k]:
                mm = _INSTR.match(body_ln)
                if mm:
                    out.setdefault(head, set()).update(_dests(mm.group(3), _split_operands(mm.group(4) or "")))
    return out


def _source_changed(lines: list, start: int, end: int, reg: str) -> bool:
    for ln in lines[start + 1:end]:
        m = _INSTR.match(ln)
        if m and reg in _dests(m.group(3), _split_operands(m.group(4) or "")):
            return True
    return False


_MUL_F32_BY_ONE = re.compile(r"^(\s*)(@!?%\w+ )?mul(?:\.rn)?\.f32 (%\w+), (?:(%\w+), 0f3F800000|0f3F800000, (%\w+));",
                             re.M)


def _mul_by_one(text: str) -> str:
    return _MUL_F32_BY_ONE.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}mov.b32 {m.group(3)}, "
                                         f"{m.group(4) or m.group(5)};", text)


_CANONICAL_NAN = {"f16": "mov.b16", "bf16": "mov.b16", "f32": "mov.b32"}
_NAN_BITS = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF}


def _is_nan(v: int, t: str) -> bool:
    exp, man = {"f64": (0x7FF, 52), "f32": (0xFF, 23)}[t]
    return (v >> man) & exp == exp and v & ((1 << man) - 1) != 0


def _cvt_const_nan(text: str) -> str:
    def fold(opcode, ops, facts):
        m = re.match(r"^cvt(?:\.\w+)*\.(f16|bf16|f32)\.(f32|f64)$", opcode)
        if not m or len(ops) != 2 or m.group(1) == m.group(2):
            return None
        w = facts.get(ops[1])
        v = _imm64(w[1][1]) if w and w[0].startswith("mov.") and len(w[1]) == 2 else None
        if v is None or not _is_nan(v & (2 ** (64 if m.group(2) == "f64" else 32) - 1), m.group(2)):
            return None
        return _CANONICAL_NAN[m.group(1)], [ops[0], f"0x{_NAN_BITS[m.group(1)]:X}"]
    return _dataflow_rewrite(text, fold)


_F2I64 = re.compile(r"^cvt\.(rni|rzi|rmi|rpi)(\.ftz)?\.(s64|u64)\.(f32|f64)$")


def _cvt_narrow_fused(text: str) -> str:
    """``cvt.sat.s32.s64 r, d`` of ``cvt.<rnd>i.s64.f32 d, x`` (or the .u forms): ptxas converts ``x`` to 32 bits
    directly (F2I.FLOOR.NTZ beside the F2I.S64.FLOOR), from its value at the first conversion -- a NaN gives 0, not
    sat(0x8000000000000000).  The rewrite converts into a fresh register ``%xfN`` right after the first conversion
    and copies that; both go on existing lines (after the first conversion and after the first ``.reg``), so line
    numbers stay those of the PTX."""
    lines = text.split("\n")
    loop_writes = _loop_writes(lines)
    made: dict = {}                     # 64-bit register -> (line of its conversion, its 32-bit form)
    n = 0
    for i, ln in enumerate(lines):
        m = _INSTR.match(ln)
        if m is None:
            for r in loop_writes.get(i, set()) & set(made):
                del made[r]
            continue
        guard, opcode, ops = m.group(2) or "", m.group(3), _split_operands(m.group(4) or "")
        mm = re.match(r"^cvt\.sat\.(s32|u32)\.(s64|u64)$", opcode)
        if mm and len(ops) == 2 and ops[1] in made and made[ops[1]][1][0] == mm.group(1)[0]:
            at, (sign, rnd, ftz, ftype, x) = made[ops[1]]
            tmp = f"%xf{n}"
            n += 1
            lines[at] += f" cvt.{rnd}{ftz}.{sign}32.{ftype} {tmp}, {x};"
            lines[i] = f"{m.group(1)}{guard}mov.b32 {ops[0]}, {tmp};"
        ds = _dests(opcode, ops)
        for d in ds:
            made.pop(d, None)
        f = _F2I64.match(opcode)
        if f and not guard and len(ops) == 2 and ops[1] not in ds:
            made[ops[0]] = (i, (f.group(3)[0], f.group(1), f.group(2) or "", f.group(4), ops[1]))
    return _with_fresh_registers(text, lines, n, ".b32 %xf")



_CONTRACTIBLE = re.compile(r"^(add|sub)((?:\.ftz)?(?:\.sat)?)\.(f16|bf16|f32|f64|f16x2|bf16x2)$")
_MUL_NO_RND = re.compile(r"^mul(\.ftz)?\.(f16|bf16|f32|f64|f16x2|bf16x2)$")
_SIGN_BIT = {"f16": ("b16", "0x8000"), "bf16": ("b16", "0x8000"), "f32": ("b32", "0x80000000"),
             "f16x2": ("b32", "0x80008000"), "bf16x2": ("b32", "0x80008000"), "f64": ("b64", "0x8000000000000000")}


def _mul_add_contracted(text: str) -> str:
    """``add``/``sub`` without a rounding modifier of a ``mul`` result without one (same type and .ftz) is one
    fused multiply-add, ``fma.rn`` (the PTX ISA lets the code generator do this: "mul/add sequences with no
    rounding modifiers may be optimized to use fused-multiply-add instructions", §9.7.3/§9.7.4 add, sub, mul).
    ptxas 13.0 does it when the product has no other use (SASS: HFMA2 R0, -R12.H0_H0, R27.H0_H0, R17.H0_H0 for
    ``mul.f16`` then ``sub.f16`` into the same register; fuzz_403381_value).  A subtraction negates one factor or
    the addend with a sign-bit ``xor`` into a fresh register (the SASS operand modifier ``-R``), on the same line,
    so line numbers stay those of the PTX."""
    lines = text.split("\n")
    loop_writes = _loop_writes(lines)
    muls: dict = {}                     # product register -> (ftz, type, factor a, factor b)
    fresh = {"b16": 0, "b32": 0, "b64": 0}

    def tmp(bt: str) -> str:
        fresh[bt] += 1
        return f"%xc{bt[1:]}_{fresh[bt] - 1}"

    for i, ln in enumerate(lines):
        m = _INSTR.match(ln)
        if m is None:
            written = loop_writes.get(i, set())
            for k in [k for k, v in muls.items() if k in written or written & {v[2], v[3]}]:
                del muls[k]
            continue
        indent, guard, opcode, ops = m.group(1), m.group(2) or "", m.group(3), _split_operands(m.group(4) or "")
        c = _CONTRACTIBLE.match(opcode)
        if c and len(ops) == 3:
            sub, mods, t = c.group(1) == "sub", c.group(2), c.group(3)
            for j in (2, 1):                            # the source that is the product
                w = muls.get(ops[j])
                if w is None or w[1] != t or w[0] != ("ftz" in mods):
                    continue
                x, a, b = ops[3 - j], w[2], w[3]
                pre = ""
                if sub:                                 # x - a*b = fma(-a, b, x); a*b - x = fma(a, b, -x)
                    bt, sign = _SIGN_BIT[t]
                    if j == 2 and not a.startswith("%"):
                        a, b = b, a
                    neg = a if j == 2 else x
                    if not neg.startswith("%"):
                        break
                    r = tmp(bt)
                    pre = f"xor.{bt} {r}, {neg}, {sign}; "
                    a, x = (r, x) if j == 2 else (a, r)
                lines[i] = f"{indent}{pre}{guard}fma.rn{mods}.{t} {ops[0]}, {a}, {b}, {x};"
                break
        for d in _dests(opcode, ops):
            for k in [k for k, v in muls.items() if k == d or d in (v[2], v[3])]:
                del muls[k]
        mm = _MUL_NO_RND.match(opcode)
        if mm and not guard and len(ops) == 3 and ops[0] not in ops[1:]:
            muls[ops[0]] = (bool(mm.group(1)), mm.group(2), ops[1], ops[2])
    out = "\n".join(lines)
    if out == text:
        return text
    k = next((i for i, ln in enumerate(lines) if ln.strip().startswith(".reg ")), None)
    if k is None:
        return text
    lines[k] += "".join(f" .reg .{bt} %xc{bt[1:]}_<{n}>;" for bt, n in fresh.items() if n)
    return "\n".join(lines)

REWRITES = {"testp-guard": _testp_guard, "set-f32-guard": _set_f32_guard, "f64-const-operand": _f64_const_operand,
            "neg-into-immediate": _neg_into_immediate, "minmax-equal": _minmax_equal,
            # found by generator version 4's campaign
            "f64-folded-operand": _f64_folded_operand, "mul-by-one": _mul_by_one,
            "cvt-const-nan": _cvt_const_nan, "cvt-narrow-fused": _cvt_narrow_fused,
            "neg-into-immediate-copy": _neg_into_immediate_copy,
            # found by generator version 5's campaign: what the PTX ISA allows, not a miscompilation
            "mul-add-contracted": _mul_add_contracted}


def as_compiled(text: str, names=None) -> str | None:
    """``text`` with the named rewrites (default: all) applied; None when none of them changes anything."""
    out = text
    for n in (REWRITES if names is None else names):
        out = REWRITES[n](out)
    return out if out != text else None


def _applicable_rewrites(text: str) -> list:
    return [n for n, fn in REWRITES.items() if fn(text) != text]


def _has_f64(text: str) -> bool:
    return ".f64" in text


def _has_sign_op(text: str) -> bool:
    return re.search(r"\b(neg|abs)(\.ftz)?\.(f32|f16|bf16|f16x2|bf16x2|f64)\b", text) is not None


def candidates(text: str) -> list:
    """(rewrites, variants) combinations worth trying for ``text``, smallest first."""
    rw = _applicable_rewrites(text)
    var = [v for v, ok in (("sign-ops-bitwise", _has_sign_op(text)), ("f64-nan-swap", _has_f64(text))) if ok]
    out = []
    for k in range(1, len(rw) + len(var) + 1):
        for combo in itertools.combinations(rw + var, k):
            out.append(([c for c in combo if c in REWRITES], [c for c in combo if c not in REWRITES]))
    return out


_F64_TWO_SOURCE = re.compile(r"^\s*(?:@!?%\w+ )?(?:add|sub|mul|fma|mad|min|max)(?:\.\w+)*\.f64 %\w+, %\w+, %\w+")


def f64_nan_lines(text: str) -> list:
    """PTX lines of f64 instructions with two register sources whose NaN order ptxas decides per instruction."""
    return [i + 1 for i, ln in enumerate(text.splitlines()) if _F64_TWO_SOURCE.match(ln)]


_SIGN_OP = re.compile(r"^\s*(?:@!?%\w+ )?(?:neg|abs)(?:\.ftz)?\.(?:f32|f16|bf16|f16x2|bf16x2|f64) ")


def sign_op_lines(text: str) -> list:
    """PTX lines of float abs/neg, which ptxas lowers one by one (an FADD/DADD, a source modifier, nothing)."""
    return [i + 1 for i, ln in enumerate(text.splitlines()) if _SIGN_OP.match(ln)]


#: variants ptxas decides per instruction, and the lines each may apply to
PER_INSTRUCTION = {"f64-nan-swap": f64_nan_lines, "sign-ops-bitwise": sign_op_lines}


def per_instruction_swaps(text: str, limit: int = 12, lines_of=f64_nan_lines) -> list:
    """Sets of lines to apply a per-instruction variant at (default ``f64-nan-swap``), one instruction's choice
    differing from tcsim's rule or from its opposite: every single line and pair of lines, and every line or pair
    left out.  A program with one such line gets that line alone: the program-wide variant also reorders the f64
    instructions with an immediate source, which ptxas may not (fuzz_200560_value: only its max.f64 went the
    other way)."""
    lines = lines_of(text)
    if not 1 <= len(lines) <= limit:
        return []
    if len(lines) == 1:
        return [lines]
    out, seen = [], set()
    for k in (1, 2):
        for combo in itertools.combinations(lines, k):
            for sel in (set(combo), set(lines) - set(combo)):
                key = frozenset(sel)
                if sel and key not in seen and len(sel) < len(lines):
                    seen.add(key)
                    out.append(sorted(sel))
    return out


_DEST = re.compile(r"^(\s*(?:@!?%\w+\s+)?[a-z][\w.:]*\s+)(\{[^}]*\}|%\w+(?:\|%\w+)?)(.*)$")


_NO_DEST = ("st.", "bar", "wgmma.fence", "wgmma.commit", "wgmma.wait", "bra", "fence", "ret", "exit", "red.",
            "cp.", "barrier", "mbarrier.init", "mbarrier.inval", "@")


def _dest_regs(line: str) -> list:
    """The registers an instruction line writes (its first operand), [] for one without a destination."""
    m = _DEST.match(line)
    if not m:
        return []
    op = re.sub(r"^\s*@!?%\w+\s+", "", m.group(1)).strip()
    return [] if op.startswith(_NO_DEST) else re.findall(r"%\w+", m.group(2))


def _reads(line: str, reg: str) -> bool:
    m = _DEST.match(line)
    if m and reg in _dest_regs(line):
        return re.search(re.escape(reg) + r"\b", m.group(3)) is not None
    return re.search(re.escape(reg) + r"\b", line) is not None


def _wgmma_done_at(lines: list, i: int) -> int:
    """The index of the ``wgmma.wait_group`` that completes the wgmma at ``i`` (straight-line: its group is the next
    commit; ``wait_group N`` completes it once N groups were committed after it), else len(lines)."""
    committed, after = False, 0
    for j in range(i + 1, len(lines)):
        t = lines[j].strip()
        if t.startswith("wgmma.commit_group"):
            if committed:
                after += 1
            committed = True
        elif t.startswith("wgmma.wait_group") and committed:
            n = int(re.search(r"(\d+)\s*;", t).group(1))
            if after >= n:
                return j
    return len(lines)


_RS_WGMMA = re.compile(r"^\s*wgmma\.mma_async[\w.]*\s+\{[^}]*\},\s*\{([^}]*)\}")
_MOV32 = re.compile(r"^\s*mov\.b32\s+(%\w+),\s*(%\w+);")


_RS_WGMMA_PARTS = re.compile(r"^(\s*)(wgmma\.mma_async[\w.]*)\s+(\{[^}]*\}),\s*\{([^}]*)\},\s*(.*);\s*$")


def rs_neg_a_int(text: str) -> str:
    """``text`` with each wgmma with A from registers and imm-scale-a = -1 made
    the way ptxas 13.0 may compile it (``wgmma-rs-neg-a-int``, module docstring): ``neg.s32`` of each A register
    into a fresh register before the group's ``wgmma.fence`` (nothing writes A between the fence and the wgmma in
    the fuzz programs), and the wgmma with those registers and imm-scale-a = 1; ``text`` itself when no wgmma
    qualifies."""
    lines = text.split("\n")
    n = 0
    for i, ln in enumerate(lines):
        m = _RS_WGMMA_PARTS.match(ln)
        if not m:
            continue
        ind, opc, d, a, rest = m.groups()
        ops = [x.strip() for x in rest.split(",")]
        if len(ops) < 3 or ops[2] != "-1":
            continue
        fence = next((j for j in range(i - 1, -1, -1) if lines[j].strip().startswith("wgmma.fence")), i)
        fresh = []
        for r in (x.strip() for x in a.split(",")):
            lines[fence] = f"{ind}neg.s32 %xn{n}, {r}; " + lines[fence].lstrip() if fence != i else lines[fence]
            fresh.append(f"%xn{n}")
            n += 1
        if fence == i:          # no fence before it: right before the wgmma
            ind2 = ind + " ".join(f"neg.s32 {f}, {r.strip()};" for f, r in zip(fresh, a.split(","))) + " "
        else:
            ind2 = ind
        ops[2] = "1"
        lines[i] = f"{ind2}{opc} {d}, {{{', '.join(fresh)}}}, {', '.join(ops)};"
    return _with_fresh_registers(text, lines, n, ".b32 %xn") if n else text


# found by generator version 6's campaign: register A negated as integers
REWRITES["wgmma-rs-neg-a-int"] = rs_neg_a_int


def _abs_f64_int_selp(text: str) -> str:
    """``abs-f64-int-selp`` (module docstring): each ``selp.f64`` source that is an ``abs.f64`` result read as the
    64-bit integer absolute value of the abs's source, ``abs.s64`` into a fresh register right after the
    ``abs.f64``."""
    lines = text.split("\n")
    absd: dict = {}              # abs.f64 destination -> (line index, source, fresh register or None)
    n = 0
    for i, ln in enumerate(lines):
        m = _INSTR.match(ln)
        if not m:
            continue
        _, guard, opcode, rest = m.groups()
        ops = _split_operands(rest or "")
        if opcode == "selp.f64" and len(ops) == 4:
            new = list(ops)
            for k in (1, 2):
                if ops[k] in absd:
                    at, src, fresh = absd[ops[k]]
                    if fresh is None:
                        fresh = f"%xi{n}"
                        n += 1
                        lines[at] += f" abs.s64 {fresh}, {src};"
                        absd[ops[k]] = (at, src, fresh)
                    new[k] = fresh
            if new != ops:
                lines[i] = f"{m.group(1)}{guard or ''}{opcode} {', '.join(new)};"
        for d in _dests(opcode, ops):
            absd.pop(d, None)
        if opcode == "abs.f64" and not guard and len(ops) == 2 and ops[0] != ops[1]:
            absd[ops[0]] = (i, ops[1], None)
    return _with_fresh_registers(text, lines, n, ".b64 %xi")


REWRITES["abs-f64-int-selp"] = _abs_f64_int_selp


_REG = re.compile(r"%\w+")


def in_flight_waited(text: str) -> str:
    """``text`` with ``wgmma.wait_group 0`` put before each instruction that touches (reads or writes) a register
    of a wgmma still in flight -- its register-A operands or accumulators (``wgmma-in-flight-waited``, module
    docstring): the program as if the wgmma had read and written its registers before that access.  ``text``
    itself when no instruction does (straight-line tracking of the groups: ``wait_group N`` leaves the newest N)."""
    lines = text.split("\n")
    inflight: list = []          # register sets of the committed groups still in flight, oldest first
    open_regs: set = set()       # registers of the group being built (before its commit)
    changed = False
    for i, ln in enumerate(lines):
        t = ln.strip()
        if t.startswith("wgmma.commit_group"):
            inflight.append(open_regs)
            open_regs = set()
            continue
        if t.startswith("wgmma.wait_group"):
            n = int(re.search(r"(\d+)\s*;", t).group(1))
            inflight = inflight[max(0, len(inflight) - n):] if n else []
            continue
        if not t or t.startswith((".", "//", "{", "}")) or t.endswith(":"):
            continue
        regs = set(_REG.findall(t))
        if any(regs & g for g in inflight):
            lines[i] = ln[:len(ln) - len(ln.lstrip())] + "wgmma.wait_group.sync.aligned 0; " + ln.lstrip()
            inflight = []
            changed = True
        if t.startswith("wgmma.mma_async"):
            m = re.match(r"wgmma\.mma_async[\w.]*\s+\{([^}]*)\},\s*(\{[^}]*\})?", t)
            open_regs |= set(_REG.findall(m.group(1))) | set(_REG.findall(m.group(2) or ""))
    return "\n".join(lines) if changed else text


REWRITES["wgmma-in-flight-waited"] = in_flight_waited



# ---------------------------------------------------------------------------------------------------------------
# Per-instruction rewrites: ptxas does them to some instructions of a class, not to all (its scheduler decides),
# so an explanation names the lines: ``<name>@<line>,<line>`` (lines of the program as generated).  Each class is
# the executable model of an isa/lint.py check; its candidate lines are the lines that check notes.

_LABEL_LINE = re.compile(r"^\s*(\$?[\w$]+):\s*$")
_BRA = re.compile(r"^\s*(?:@!?%\w+\s+)?bra(?:\.uni)?\s+(\$?[\w$]+)\s*;\s*$")


def _sink_target(lines: list, first: int, last: int, guard: str) -> int | None:
    """Where ptxas puts a predicated instruction (or a short forward branch's block, lines ``first..last``) that it
    moves below the next write of its guard ``guard``: right after that write -- after the whole loop when the write
    is in a loop that starts after the block (ptxas emits it after the loop, under the loop's final guard:
    fuzz_108517_value), after the skipped block's label when the write is in a block a forward branch skips
    (fuzz_102217_value: the testp under ``@!%q1 bra``) -- or None when nothing writes the guard later."""
    k = next((j for j in range(last + 1, len(lines)) if (m := _INSTR.match(lines[j]))
              and guard in _dests(m.group(3), _split_operands(m.group(4) or ""))), None)
    if k is None:
        return None
    labels = {m.group(1): j for j, ln in enumerate(lines) if (m := _LABEL_LINE.match(ln))}
    branches = [(j, labels[m.group(1)]) for j, ln in enumerate(lines) if (m := _BRA.match(ln)) and m.group(1) in labels]
    t, moved = k, True
    while moved:
        moved = False
        for j, to in branches:
            if to < j and last < to <= t < j:          # a loop after the block around the target: after its back edge
                t, moved = j, True
            elif j < to and last < j < t < to:          # a forward branch skips the target: after its label
                t, moved = to, True
    return t


def guard_sunk(text: str, at) -> str | None:
    """``guard-sunk@<lines>`` (isa/lint.py ``guard-redefined-later``): each predicated instruction at the listed
    lines (1-based), or the block of the short forward branch it is, as ptxas 13.0 emits it -- below the next write
    of its guard (:func:`_sink_target`), so it runs under the guard's new value (the SASS of fuzz_108517_value: the
    FRND.F64 of ``@%p0 cvt.rni.sat.f64.f64`` after the loop that rewrites %p0; fuzz_102217_value: the lop3 selected
    under the later testp, SEL R11, R11, R0, !P1).  Its sources are read where it lands.  The moved lines are
    emptied and appended to the target's line, so line numbers stay those of the PTX; None when a listed line is
    no predicated instruction with a later write of its guard."""
    lines = text.split("\n")
    moves = []
    for n in sorted(set(at), reverse=True):
        i = n - 1
        m = _INSTR.match(lines[i]) if 0 <= i < len(lines) else None
        if m is None or not m.group(2):
            return None
        guard = re.search(r"%\w+", m.group(2)).group(0)
        last = i
        if m.group(3).startswith("bra"):
            b = _BRA.match(lines[i])
            ends = [j for j, ln in enumerate(lines) if (mm := _LABEL_LINE.match(ln)) and mm.group(1) == b.group(1)]
            if not ends or ends[0] <= i:
                return None
            last = ends[0]
        t = _sink_target(lines, i, last, guard)
        if t is None:
            return None
        moves.append((i, last, t))
    for i, last, t in moves:            # bottom-up: the moved blocks' lines stay where the others look for them
        block = " ".join(ln.strip() for ln in lines[i:last + 1])
        lines[t] = lines[t] + " " + block
        for j in range(i, last + 1):
            lines[j] = ""
    return "\n".join(lines)


def _noted_lines(check: str):
    """The candidate lines of a per-instruction rewrite: the lines isa/lint.py's check ``check`` notes."""
    def lines_of(text: str) -> list:
        from tcsim.isa.errors import TcsimError
        from tcsim.isa.lint import notes
        from tcsim.isa.parser import parse

        try:
            return sorted({n.loc.line for n in notes(parse(text), checks=[check])})
        except TcsimError:
            return []
    return lines_of


guard_sunk_lines = _noted_lines("guard-redefined-later")


def _per_line(text: str, at, one) -> str | None:
    """Apply ``one(lines, index, fresh) -> bool`` at each listed line (1-based) of ``text``; ``fresh(kind)`` names
    a new register of that declaration kind (``.b32``, ``.b64``, ``.pred``), declared on the first ``.reg`` line
    so that line numbers stay those of the PTX.  None when ``one`` refuses a line."""
    lines = text.split("\n")
    made: dict = {}

    def fresh(kind: str) -> str:
        made[kind] = made.get(kind, 0) + 1
        return f"%xl{kind[1:]}_{made[kind] - 1}"

    for n in sorted(set(at)):
        if not (0 < n <= len(lines)) or not one(lines, n - 1, fresh):
            return None
    k = next((i for i, ln in enumerate(lines) if ln.strip().startswith(".reg ")), None)
    if k is None:
        return None
    lines[k] += "".join(f" .reg {kind} %xl{kind[1:]}_<{c}>;" for kind, c in made.items())
    return "\n".join(lines)


def _shift_amount_f2i(lines: list, i: int, fresh) -> bool:
    m = _INSTR.match(lines[i])
    if not m or not re.match(r"^(shl|shr)\.[bsu]64$", m.group(3)):
        return False
    ops = _split_operands(m.group(4) or "")
    if len(ops) != 3 or not ops[2].startswith("%"):
        return False
    wide, amt = fresh(".b64"), fresh(".b32")
    ops[2] = amt
    lines[i] = (f"{m.group(1)}cvt.rzi.u64.f32 {wide}, {m.group(4).split(',')[2].strip()}; cvt.u32.u64 {amt}, {wide}; "
                f"{m.group(2) or ''}{m.group(3)} {', '.join(ops)};")
    return True


def b64_shift_f2i(text: str, at) -> str | None:
    """``b64-shift-f2i@<lines>`` (isa/lint.py ``b64-shift-by-float``): a 64-bit shift by a register a float
    instruction wrote last, as ptxas 13.0 emits it -- the amount converted float to integer first (SASS of
    fuzz_1071_value: F2I.U64.TRUNC R14, R27, then SHF.L.U64.HI / SHF.L.U32 by R14): ``cvt.rzi.u64.f32`` of the
    amount, its low word the shift amount."""
    return _per_line(text, at, _shift_amount_f2i)


def _half2_abs_as_fma(lines: list, i: int, fresh) -> bool:
    m = _INSTR.match(lines[i])
    mm = re.match(r"^abs(\.ftz)?\.(f16x2|bf16x2)$", m.group(3)) if m else None
    ops = _split_operands(m.group(4) or "") if mm else []
    if not mm or len(ops) != 2:
        return False
    nz, z = fresh(".b32"), fresh(".b32")
    ftz = mm.group(1) or "" if mm.group(2) == "f16x2" else ""
    lines[i] = (f"{m.group(1)}mov.b32 {nz}, 0x80008000; mov.b32 {z}, 0; "
                f"{m.group(2) or ''}fma.rn{ftz}.{mm.group(2)} {ops[0]}, {nz}, {z}, {ops[1]};")
    return True


def half2_abs_fma(text: str, at) -> str | None:
    """``half2-abs-fma@<lines>`` (isa/lint.py ``half2-abs-after-f32``): ``abs.f16x2``/``abs.bf16x2`` of an f32
    result as ptxas 13.0 emits it -- no sign clear at all, an HFMA2 of -0 * 0 plus the source (SASS of
    fuzz_14858_value: FADD R32, |R25|, -RZ then HFMA2.BF16_V2 R19, -RZ.H0_H0, RZ.H0_H0, R32)."""
    return _per_line(text, at, _half2_abs_as_fma)


def _guard_without_ftz(lines: list, i: int, fresh) -> bool:
    m = _INSTR.match(lines[i])
    if not m or not m.group(2):
        return False
    g = re.search(r"%\w+", m.group(2)).group(0)
    for j in range(i - 1, -1, -1):
        w = _INSTR.match(lines[j])
        if not w:
            if _LABEL_LINE.match(lines[j]) is None and lines[j].strip() and not lines[j].strip().startswith("//"):
                return False
            continue
        wops = _split_operands(w.group(4) or "")
        dests = _dests(w.group(3), wops)
        if g not in dests:
            continue
        if not w.group(3).startswith("setp.") or ".ftz" not in w.group(3):
            return False
        names = wops[0].split("|")
        new = [fresh(".pred") for _ in names]
        lines[j] += f" {w.group(2) or ''}{w.group(3).replace('.ftz', '')} {'|'.join(new)}, {', '.join(wops[1:])};"
        guard = m.group(2).replace(g, new[[n.strip() for n in names].index(g)])
        lines[i] = f"{m.group(1)}{guard}{m.group(3)} {m.group(4) or ''};".replace(" ;", ";")
        return True
    return False


def setp_no_ftz(text: str, at) -> str | None:
    """``setp-no-ftz@<lines>`` (isa/lint.py ``branch-from-setp-ftz``, ``guard-from-setp-ftz``): a branch or an
    instruction guarded by the predicate a ``setp.ftz`` wrote, as ptxas 13.0 emits it -- the comparison redone
    without .FTZ for it (SASS of fuzz_207439_value: FSETP.NEU.AND P2 without .FTZ, @P0 BRA P2; fuzz_107537_value:
    @!P1 FFMA after FSETP.NEU.OR P1 without .FTZ), from the setp's operands where the setp stands, so a subnormal
    operand goes the other way.  The setp that wrote the guard last, in straight-line order before the line."""
    return _per_line(text, at, _guard_without_ftz)


def _neg_neg_as_copy(lines: list, i: int, fresh) -> bool:
    m = _INSTR.match(lines[i])
    ops = _split_operands(m.group(4) or "") if m else []
    if not m or m.group(3) != "neg.f64" or len(ops) != 2:
        return False
    for j in range(i - 1, -1, -1):
        w = _INSTR.match(lines[j])
        if w and ops[1] in _dests(w.group(3), _split_operands(w.group(4) or "")):
            wops = _split_operands(w.group(4) or "")
            if w.group(3) != "neg.f64" or w.group(2) or len(wops) != 2:
                return False
            keep = fresh(".b64")
            lines[j] += f" mov.b64 {keep}, {wops[1]};"
            lines[i] = f"{m.group(1)}{m.group(2) or ''}mov.b64 {ops[0]}, {keep};"
            return True
    return False


def neg_neg_copy(text: str, at) -> str | None:
    """``neg-neg-copy@<lines>`` (isa/lint.py ``neg-neg-f64``): ``neg.f64`` of a ``neg.f64`` result as ptxas 13.0
    emits it -- a copy of the first negation's source (SASS of fuzz_100279_value: one DADD R2, -RZ, -R14 for the
    first, a copy for the second), so a signalling NaN comes back unquieted."""
    return _per_line(text, at, _neg_neg_as_copy)


_F2I_RND = {"rn": "rni", "rz": "rzi", "rm": "rmi", "rp": "rpi"}


def _f2i_reads_source(lines: list, i: int, fresh) -> bool:
    m = _INSTR.match(lines[i])
    ops = _split_operands(m.group(4) or "") if m else []
    mm = re.match(r"^cvt\.(rni|rzi|rmi|rpi)((?:\.ftz)?(?:\.sat)?)\.([su](?:8|16|32|64))\.(f16|bf16)$",
                  m.group(3)) if m else None
    if not mm or len(ops) != 2:
        return False
    for j in range(i - 1, -1, -1):
        w = _INSTR.match(lines[j])
        if not (w and ops[1] in _dests(w.group(3), _split_operands(w.group(4) or ""))):
            continue
        wops = _split_operands(w.group(4) or "")
        rnd = re.search(r"\.(rn|rz|rm|rp)\b", w.group(3))
        if w.group(2) or len(wops) < 2 or not wops[1].startswith("%"):
            return False
        old = fresh(".b16")
        lines[j] = f"{w.group(1)}mov.b16 {old}, {wops[1]}; " + lines[j].lstrip()
        cvt = f"cvt.{_F2I_RND[rnd.group(1)] if rnd else 'rni'}{mm.group(2)}.{mm.group(3)}.{mm.group(4)}"
        lines[i] = f"{m.group(1)}{m.group(2) or ''}{cvt} {ops[0]}, {old};"
        return True
    return False


def f2i_half_source(text: str, at) -> str | None:
    """``f2i-half-source@<lines>`` (isa/lint.py ``f2i-after-half-f2f``): a float-to-integer ``cvt`` of a 16-bit
    float that an F2F (or a 16-bit min/max) just wrote, as ptxas 13.0 emits it -- the F2I reads the register that
    instruction read, as it was then, with that instruction's rounding (none: to nearest) (SASS of fuzz_107_value:
    F2F.F16.BF16.RZ R0, R31.H1 and F2I.S16.F16.TRUNC R32, R31.H1; fuzz_100160_value: F2I.U16.F16.FLOOR after
    F2F.F16.BF16.RM; fuzz_1060_value: F2I.FTZ.BF16.NTZ R29, R30 of the HADD2's source)."""
    return _per_line(text, at, _f2i_reads_source)

def _wgmma_group_dropped(lines: list, i: int, fresh) -> bool:
    if not lines[i].strip().startswith("wgmma.mma_async"):
        return False
    start = next((j for j in range(i - 1, -1, -1) if lines[j].strip().startswith(("wgmma.commit_group",
                                                                                   "wgmma.wait_group"))), -1)
    end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("wgmma.commit_group")), None)
    if end is None:
        return False
    for j in range(start + 1, end):
        if lines[j].strip().startswith("wgmma.mma_async"):
            lines[j] = ""
    return True


def wgmma_group_lost(text: str, at) -> str | None:
    """``wgmma-group-lost@<lines>`` (isa/lint.py ``wgmma-rs-chain``): the wgmma-group of the noted wgmma as ptxas
    13.0 may compile a chain of wgmmas with A from registers -- it copies the accumulator registers out and back
    between the chain's GMMAs and out again after the last one, all before the WARPGROUP.DEPBAR that waits for the
    group, and the program goes on with the copies, so the group's results never arrive: every wgmma of the group
    dropped (v7 campaign program 710731, tests/golden/fuzz_campaign/v7_probe: HGMMA.64x8x8.F32.TF32 R64 at 0x1950,
    MOV R52, R65 ... R64, RZ, RZ, R51 at 0x1960-0x19d0, the second HGMMA at 0x19e0, MOV R54, R67 ... R51, RZ, RZ,
    R64 at 0x1a00-0x1a30, DEPBAR at 0x1a40; the same output on the H100 and an H200 over three runs, and with a
    wait after every commit the GPU agrees with tcsim).  The copies race with the tensor core's write-back: where
    it wins, the results arrive (program 710959: differs on the H100, agrees on the H200), so this rewrite
    reproduces only the programs where the copies lose the race everywhere."""
    return _per_line(text, at, _wgmma_group_dropped)

def _setp_ftz_lines(text: str) -> list:
    return sorted(set(_noted_lines("branch-from-setp-ftz")(text)) | set(_noted_lines("guard-from-setp-ftz")(text)))


def line_selections(noted: list) -> list:
    """The selections of noted ``(class, line)`` pairs :func:`explain` tries, in order: all of them, all but one,
    each one alone (a class's lowering applies where ptxas's pattern matched, which the lint over-approximates)."""
    out: list = []
    for sel in [noted] + [[x for x in noted if x != y] for y in noted] + [[y] for y in noted]:
        if sel and sel not in out:
            out.append(sel)
    return out


def line_rewrite_name(sel: list) -> str:
    """``guard-sunk@3,9+setp-no-ftz@12`` for the selection [(class, line), ...]."""
    by: dict = {}
    for name, n in sel:
        by.setdefault(name, []).append(n)
    return "+".join(f"{name}@" + ",".join(map(str, sorted(ns))) for name, ns in by.items())


def apply_line_rewrites(text: str, sel: list) -> str | None:
    """``text`` with the per-instruction rewrites of the selection [(class, line), ...] applied (lines of ``text``:
    each rewrite keeps the line numbers), or None when one does not apply."""
    by: dict = {}
    for name, n in sel:
        by.setdefault(name, []).append(n)
    for name, ns in by.items():
        text = LINE_REWRITES[name][0](text, ns)
        if text is None:
            return None
    return text


#: per-instruction rewrites: name -> (rewrite(text, lines) -> text or None, candidate lines of a text)
LINE_REWRITES = {"guard-sunk": (guard_sunk, guard_sunk_lines),
                 "b64-shift-f2i": (b64_shift_f2i, _noted_lines("b64-shift-by-float")),
                 "half2-abs-fma": (half2_abs_fma, _noted_lines("half2-abs-after-f32")),
                 "setp-no-ftz": (setp_no_ftz, _setp_ftz_lines),
                 "neg-neg-copy": (neg_neg_copy, _noted_lines("neg-neg-f64")),
                 "f2i-half-source": (f2i_half_source, _noted_lines("f2i-after-half-f2f")),
                 "wgmma-group-lost": (wgmma_group_lost, _noted_lines("wgmma-rs-chain"))}



def wgmma_hazards(text: str) -> list:
    """(name, rewritten PTX) for each register hazard ptxas creates around a wgmma by coalescing a copy (module
    docstring), one instruction at a time.  (The register-A negation, ``wgmma-rs-neg-a-int``, is a whole-program
    rewrite of :data:`REWRITES`: :func:`explain` tries each hazard alone and on top of it.)"""
    lines = text.split("\n")
    out = []
    for i, ln in enumerate(lines):
        m = _RS_WGMMA.match(ln)
        if not m:
            continue
        end = _wgmma_done_at(lines, i)
        for a in re.findall(r"%\w+", m.group(1)):
            src = None
            for j in range(i - 1, -1, -1):
                if a in _dest_regs(lines[j]):
                    mm = _MOV32.match(lines[j])
                    src = mm.group(2) if mm and mm.group(1) == a else None
                    break
            if src is None:
                continue
            for k in range(i + 1, end):
                if src in _dest_regs(lines[k]):
                    w = _DEST.match(lines[k])
                    dest = re.sub(re.escape(src) + r"\b", a, w.group(2))
                    new = lines[:i] + [w.group(1) + dest + w.group(3)] + lines[i:]
                    out.append((f"wgmma-a-source-reused@{i + 1}:{a}", "\n".join(new)))
                    break
    for i, ln in enumerate(lines):
        mm = _MOV32.match(ln)
        if not mm or not mm.group(2).startswith("%ac"):
            continue
        r, acc = mm.groups()
        clob = None
        for j in range(i + 1, len(lines)):
            if r in _dest_regs(lines[j]):
                break
            if lines[j].strip().startswith("wgmma.mma_async") and acc in re.findall(r"%\w+", lines[j].split("}")[0]):
                clob = j
                break
        if clob is None:
            continue
        for k in range(clob + 1, len(lines)):
            if _reads(lines[k], r):
                mk = _DEST.match(lines[k])
                if mk and r in _dest_regs(lines[k]):
                    new_line = mk.group(1) + mk.group(2) + re.sub(re.escape(r) + r"\b", acc, mk.group(3))
                else:
                    new_line = re.sub(re.escape(r) + r"\b", acc, lines[k])
                out.append((f"wgmma-acc-copy-clobbered@{k + 1}", "\n".join(lines[:k] + [new_line] + lines[k + 1:])))
            if r in _dest_regs(lines[k]):
                break
    return out

class SearchTimeout(Exception):
    """:func:`explain` ran past its ``deadline`` (a :func:`time.process_time` value: CPU seconds of this process,
    so that a search's reach does not depend on how busy the machine is) before finding an explanation."""


#: the stages of :func:`explain`'s search, in order
STAGES = ("combinations", "hazards", "per-instruction", "line-rewrites")


def explain(ptx: str, kernel: str, nthreads: int, inp: np.ndarray, out_template: np.ndarray,
            gpu_out, deadline: float | None = None, stages=STAGES) -> str | None:
    """``"diagnosed:<names>"`` when a rewrite/variant combination makes the simulator reproduce ``gpu_out`` (the
    GPU's output bytes, or a predicate on the simulator's output bytes: a recording keeps only a 128-bit hash
    of most GPU outputs, :func:`calib.fuzz.record.compare_recording`).  ``deadline``: raise
    :class:`SearchTimeout` when the search is still going at that :func:`time.process_time` (CPU) time.
    ``stages``: the parts of the search to run (:data:`STAGES`; a re-survey of programs an earlier search left
    open runs only the new ones)."""
    import time

    same = gpu_out if callable(gpu_out) else (lambda b: b == gpu_out)
    from tcsim.isa.errors import TcsimError
    from tcsim.launch import Launch, run_launch

    def reproduces(text, var) -> bool:
        if deadline is not None and time.process_time() > deadline:
            raise SearchTimeout()
        try:
            # the race detector is no part of the output (the programs are race-free by construction)
            res = run_launch(Launch(ptx=text, kernel=kernel, block=(nthreads, 1, 1),
                                    args=[inp.copy(), out_template.copy()], lowering=frozenset(var)),
                             detect=False, max_instructions=200_000)
        except TcsimError:
            return False
        return same(res.outputs[1].tobytes())

    combos = candidates(ptx)
    singles = [([], [])] + [c for c in combos if len(c[0]) + len(c[1]) == 1]
    for rw, var in combos if "combinations" in stages else ():
        if reproduces(as_compiled(ptx, rw) or ptx, var):
            return "diagnosed:" + "+".join(rw + var)
    # a register hazard ptxas made around a wgmma (one instruction; alone, or with one program-wide variant)
    hazards = wgmma_hazards(ptx) if "hazards" in stages else []
    for rw, var in singles if hazards else ():
        for name, text in hazards:
            if reproduces(as_compiled(text, rw) or text, var):
                return "diagnosed:" + "+".join(rw + var + [name])
    # ptxas orders each f64 instruction's commutative sources, and lowers each float abs/neg, on its own: one or
    # two instructions the other way (beside at most one other rewrite or variant: the search grows with every
    # combination)
    for name, lines_of in PER_INSTRUCTION.items() if "per-instruction" in stages else ():
        for rw, var in [([], [])] + [c for c in combos if name not in c[1] and len(c[0]) + len(c[1]) == 1]:
            text = as_compiled(ptx, rw) or ptx
            for sel in per_instruction_swaps(text, lines_of=lines_of):
                if reproduces(text, var + [f"{name}@{n}" for n in sel]):
                    return "diagnosed:" + "+".join(rw + var + [f"{name}@" + ",".join(map(str, sel))])
    # the per-instruction rewrites of the lint-noted classes (LINE_REWRITES) at the noted lines: at every noted line
    # of every class, at all but one, at one alone; each alone or beside one other rewrite or variant
    noted = [(name, n) for name, (_fn, lines_of) in LINE_REWRITES.items() if "line-rewrites" in stages
             for n in lines_of(ptx)]
    for sel in line_selections(noted):
        name = line_rewrite_name(sel)
        text = apply_line_rewrites(ptx, sel)
        for rw, var in singles if text is not None else ():
            if reproduces(as_compiled(text, rw) or text, var):
                return "diagnosed:" + "+".join([name] + rw + var)
    return None


def explain_program(prog, gpu_out, deadline: float | None = None, stages=STAGES) -> str | None:
    return explain(prog.render(), prog.kernel_name, prog.nthreads, prog.input_buffer(), prog.output_template(),
                   gpu_out, deadline, stages)


def explain_record(rec: dict) -> str | None:
    """For a saved reproducer (:func:`calib.fuzz.runner.load_reproducer`)."""
    tmpl = np.full(len(rec["gpu_output"]), rec.get("output_fill", 0xA5), dtype=np.uint8)
    return explain(rec["ptx"], rec["kernel"], rec["nthreads"], rec["input"], tmpl, rec["gpu_output"])
