"""Why ``tcsim check`` and ptxas may give a mutant different verdicts: :func:`explain` maps a campaign entry (see
:func:`calib.ptxas_agree.campaign.judge`) to ``(class, reason)`` or None when no known reason applies.

Each class is a verified, deliberate difference or a named gap:

``unsupported``      legal PTX tcsim does not execute: check says so (UnsupportedError) rather than fail later.
``ptxas-overflow``   a declaration of 2**32 bytes or more: ptxas 13.0 adds sizes in 32 bits and accepts what wraps
                     below its limit (``.shared .b8 x[4000000000]``); tcsim counts exactly and rejects.  Also an
                     integer literal of more than 64 bits (``0x10000000000000000``), which ptxas wraps.
``ptxas-crash``      ptxas itself crashes (segmentation fault) instead of giving a diagnostic.
``sreg-address``     ptxas accepts a special register as an address base (``[%laneid]``); tcsim's parser does not.
``runtime-rule``     tcsim rejects at check what ptxas leaves to run time, where the GPU faults or hangs: a
                     ``bar.sync`` thread count of 0 or not a multiple of 32, a barrier number over 15, an
                     mbarrier wait on an immediate state, an mbarrier count out of range.
``pred-vector``      a predicate register inside a packed vector operand: ptxas accepts it, tcsim does not
                     execute it.
``imm-first-vector`` a vector operand whose first element is an immediate (``{1, %rd0, %rs1}``): ptxas skips
                     the element-size checks; tcsim keeps them (the elements' sizes define what it would execute).
``bracketless-address`` ptxas accepts a register where the form has an address (``..., %r7`` for ``[%r7]``).
``fixed``            (assigned by the record test, not here) check agrees with ptxas at the current commit.
``gap``              a rule ptxas enforces that tcsim's check does not yet (listed in :data:`GAPS` by what it is;
                     the instruction is otherwise executable and its run reports the operand as it reads it).
"""
from __future__ import annotations

import re

#: (regular expression on the mutated line, regular expression on ptxas's message or '') -> the rule tcsim lacks
GAPS = (
    (r"^tcgen05\.", r"Arguments mismatch", "operand kinds and register types of tcgen05 instructions"),
    (r"^(cp|cp\.async)\.", r"Arguments mismatch|Illegal to use|Vector", "operand kinds of cp.async / cp.async.bulk"),
    (r"^tensormap\.", r"Arguments mismatch", "operand types of tensormap.replace"),
    (r"^mbarrier\.", r"Arguments mismatch", "register types of mbarrier count / tx-count operands"),
    (r"^(wgmma|mma|ldmatrix|stmatrix)\.", r"", "register types of warp-level matrix operands"),
    (r"^setp\..*(bf16x2|f16x2)", r"Arguments mismatch", "destination of packed-half setp"),
    (r"^getctarank", r"Arguments mismatch", "getctarank destination size"),
    (r"\.(f32x2|bf16x2|bf16)\b", r"Arguments mismatch", "immediates of packed f32x2 / bf16x2 and bf16 operands"),
    (r"^mov\.b\d+\s+%\w+, \{\s*-?\d", r"", "ptxas skips element-size checks when a vector starts with an immediate"),
    (r"", r"Type of argument does not match formal parameter", "call argument types (only sizes are compared)"),
    (r"", r"Illegal operand type", "operand kinds of st through ptxas's 'Illegal operand type'"),
    (r"\.b128", r"requires PTX ISA \.version", "the PTX version a .b128 declaration needs"),
    (r"^fence\.proxy", r"Arguments mismatch", "operand kinds of fence.proxy.tensormap"),
)


def _strip(line: str) -> str:
    s = line.split("//")[0].strip()
    return re.sub(r"^@!?%\w+\s+", "", s)


def explain(r: dict) -> tuple | None:
    """(class, reason) for a disagreeing entry, or None."""
    if r["check"] == r["ptxas"]:
        return None
    line = _strip(r["after"])
    cmsg, pmsg = r.get("check_msg", ""), r.get("ptxas_msg", "")
    if r["check"] == "reject" and r["ptxas"] == "accept":
        if "unsupported" in cmsg or "not supported by tcsim" in cmsg:
            return "unsupported", "legal PTX tcsim does not execute"
        if r["operator"] == "declaration" and re.search(r"\[(\d{10,}|0[xX][0-9a-fA-F]{8,})\]", line) and "too much" in cmsg:
            return "ptxas-overflow", "ptxas adds declaration sizes in 32 bits"
        if "does not fit in 64 bits" in cmsg:
            return "ptxas-overflow", "ptxas wraps an integer literal beyond 64 bits; tcsim rejects it (PTX ISA 4.5.1)"
        if "address base" in cmsg and "special register" in cmsg:
            return "sreg-address", "special register as an address base"
        if re.search(r"thread count|barrier \S+ out of range|state operand must be|out of range", cmsg):
            return "runtime-rule", "checked at load by tcsim, at run time on the GPU"
        if "predicate element" in cmsg or (".pred register" in cmsg and "{" in line):
            return "pred-vector", "predicate inside a packed vector"
        if re.search(r"\{\s*-?\d", line) and ("elements" in cmsg or "Incompatible" in cmsg):
            return "imm-first-vector", "ptxas skips a vector's element checks when it starts with an immediate"
        if "array extent must be at least 1, got 0" in cmsg:
            return "zero-extent", "ptxas accepts a zero array extent with an initialiser; tcsim's parser does not"
        if cmsg.startswith("m.ptx") and "tcgen05.mma" in line and "descriptor" in cmsg:
            return "gap", "tcsim requires a register for tcgen05.mma's A descriptor (ptxas takes an immediate)"
        if re.search(r"\.(?:bf|f)16x2\s*\{", line) and "is not a register" in cmsg:
            return "gap", ("ptxas 13.0 takes a braced vector destination on a packed half instruction "
                           "(mul.bf16x2 {%r2, %r0}, ...); tcsim rejects it (meaning not characterised)")
        if "must be a memory address" in cmsg:
            return "bracketless-address", "ptxas takes a register for a [register] address operand"
        if "generic address needs a 64-bit register" in cmsg:
            return "strict", ("tcsim rejects a 32-bit register as a generic (no state space) address under "
                              ".address_size 64; ptxas 13.0 takes it for tcgen05.alloc")
        return None
    if r["check"] == "accept" and r["ptxas"] == "reject":
        if "crashed" in pmsg or "Segmentation" in pmsg or pmsg == "":
            return "ptxas-crash", "ptxas gives no diagnostic (it crashed)"
        for lre, mre, what in GAPS:
            if (not lre or re.search(lre, line)) and (not mre or re.search(mre, pmsg)):
                return "gap", what
    return None


__all__ = ["explain", "GAPS"]
