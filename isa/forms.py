"""Instruction families and form specifications: which decoder an instruction belongs to, and what it accepts.

An *instruction family* is the unit tcsim decodes: one opcode (``mbarrier``, ``ldmatrix``), one opcode plus the
qualifier words that select a different instruction of the PTX ISA (``cp.async.bulk.tensor`` = PTX ISA 9.1
§9.7.9.25.5.2 vs ``cp.async.bulk`` = §9.7.9.25.4.1 vs ``cp.async`` = §9.7.9.25.3.1; ``tcgen05.mma`` §9.7.16.10.9
vs ``tcgen05.ld`` §9.7.16.8.3), or one opcode and the class of its type (``add:int`` §9.7.1.1 vs ``add:float``
§9.7.3.1).  :func:`family_of` computes the family key of an instruction from its opcode and qualifiers; every
instruction has at most one key, so a decode table keyed by family has exactly one decoder per instruction by
construction (``tcsim.semantics.registry``).

A :class:`FormSpec` declares what a family accepts: the qualifier groups (each a set of alternatives, required or
optional, at most one of each group) its parser (``isa/*_forms.py``, ``isa/tcgen05_rules.py``) checks.  The
parsers classify qualifiers with the same groups, so ``tcsim check --list`` prints what the parsers accept.

Pure: no machine state.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError

# ----------------------------------------------------------------------------------------------- family keys
#: the float types whose presence makes add/sub/mul/mad/div/abs/neg/min/max a floating-point instruction
#: (PTX ISA 9.1 §9.7.3 and §9.7.4 vs the integer forms of §9.7.1)
FLOAT_TYPES = ("f32", "f64", "f16", "bf16", "f16x2", "bf16x2", "f32x2")
#: opcodes with an integer and a floating-point family, keyed ``op:int`` / ``op:float``
TYPE_CLASS_OPCODES = ("add", "sub", "mul", "mad", "div", "abs", "neg", "min", "max")
#: tcgen05 sub-operations (the first qualifier), each its own family ``tcgen05.<subop>`` (PTX ISA 9.1 §9.7.16)
TCGEN05_SUBOPS = ("mma", "commit", "cp", "shift", "alloc", "dealloc", "relinquish_alloc_permit", "ld", "st",
                  "wait::ld", "wait::st", "fence::before_thread_sync", "fence::after_thread_sync")
#: wgmma sub-operations (the first qualifier), each its own family ``wgmma.<subop>`` (PTX ISA 9.1 §9.7.15)
WGMMA_SUBOPS = ("fence", "commit_group", "wait_group", "mma_async")


def _is_bulk(mods: tuple) -> bool:
    return mods[:2] == ("async", "bulk") or mods[:3] == ("reduce", "async", "bulk")


def _cp_family(mods: tuple) -> str | None:
    if _is_bulk(mods):
        return "cp.async.bulk.tensor" if "tensor" in mods else "cp.async.bulk"
    if mods[:1] == ("async",):
        return "cp.async"
    return None


def _tcgen05_family(mods: tuple) -> str | None:
    return f"tcgen05.{mods[0]}" if mods and mods[0] in TCGEN05_SUBOPS else None


def _wgmma_family(mods: tuple) -> str | None:
    return f"wgmma.{mods[0]}" if mods and mods[0] in WGMMA_SUBOPS else None


def _barrier_family(mods: tuple) -> str:
    return "barrier.cluster" if mods[:1] == ("cluster",) else "barrier"


def _cvt_family(mods: tuple) -> str:
    return "cvt.pack" if "pack" in mods else "cvt"


def _tensormap_family(mods: tuple) -> str:
    if mods[:1] in (("replace",), ("cp_fenceproxy",)):
        return f"tensormap.{mods[0]}"
    return "tensormap"


def _type_class(opcode: str):
    def family(mods: tuple) -> str | None:
        if any(m in FLOAT_TYPES for m in mods):
            return f"{opcode}:float"
        if "tf32" in mods:          # no add/sub/... .tf32 in PTX: neither the integer nor the float family
            return None
        return f"{opcode}:int"
    return family


#: opcode -> (function of the qualifiers giving the family key or None, every key it can give)
_SPLITS = {
    "cp": (_cp_family, ("cp.async.bulk.tensor", "cp.async.bulk", "cp.async")),
    "tcgen05": (_tcgen05_family, tuple(f"tcgen05.{s}" for s in TCGEN05_SUBOPS)),
    "wgmma": (_wgmma_family, tuple(f"wgmma.{s}" for s in WGMMA_SUBOPS)),
    "barrier": (_barrier_family, ("barrier.cluster", "barrier")),
    "cvt": (_cvt_family, ("cvt.pack", "cvt")),
    "tensormap": (_tensormap_family, ("tensormap.replace", "tensormap.cp_fenceproxy", "tensormap")),
    **{op: (_type_class(op), (f"{op}:int", f"{op}:float")) for op in TYPE_CLASS_OPCODES},
}


def family_of(opcode: str, mods: tuple) -> str | None:
    """The family key of the instruction ``opcode.mods`` (None: a form of a split opcode that no family covers,
    e.g. ``cp.foo``)."""
    split = _SPLITS.get(opcode)
    return opcode if split is None else split[0](tuple(mods))


def opcode_of_key(key: str) -> str:
    """``'cp.async.bulk'`` -> ``'cp'``, ``'add:int'`` -> ``'add'``."""
    return key.split(":")[0].split(".")[0]


def check_family_key(key: str) -> None:
    """ValueError unless :func:`family_of` can return ``key`` for some instruction."""
    op = opcode_of_key(key)
    split = _SPLITS.get(op)
    keys = (op,) if split is None else split[1]
    if key not in keys:
        raise ValueError(f"{key!r} is not an instruction family: instructions of opcode {op} fall into "
                         + ", ".join(repr(k) for k in keys))


def instruction_family(ins: ir.Instruction) -> str | None:
    return family_of(ins.opcode, ins.mods)


# ----------------------------------------------------------------------------------------------- form specs
@dataclass(frozen=True)
class QualGroup:
    """One qualifier group: alternatives of which a form takes at most one (exactly one when ``required``)."""

    name: str
    values: tuple
    required: bool = False
    prefixes: tuple = ()        # open-ended alternatives: any qualifier starting with one of these (``L2::``)

    def matches(self, qualifier: str) -> bool:
        return qualifier in self.values or (bool(self.prefixes) and qualifier.startswith(self.prefixes))

    def describe(self) -> str:
        """``.x`` / ``.{a|b}`` (required), ``[.x]`` (optional); a prefix alternative is written ``L2::*``."""
        names = self.values + tuple(f"{p}*" for p in self.prefixes)
        alts = names[0] if len(names) == 1 else "{" + "|".join(names) + "}"
        return f".{alts}" if self.required else f"[.{alts}]"


@dataclass(frozen=True)
class FormSpec:
    """The accepted qualifiers of one family.  ``words`` are the qualifiers that the family key itself names
    (``cp.async.bulk.tensor``: async, bulk, tensor); ``groups`` the others, in PTX syntax order."""

    key: str
    section: str
    words: tuple
    groups: tuple

    def describe(self) -> str:
        """One line of ``tcsim check --list``: ``key .{req|alts} [.{optional}] ...  (PTX ISA §...)``."""
        return " ".join([self.key] + [g.describe() for g in self.groups]) + f"  ({self.section})"

    def accepts(self, opcode: str, mods: tuple) -> bool:
        """True when ``opcode.mods`` is spelled with this family's qualifiers: its key words, at most one
        qualifier of each group, every required group present.  (The family parser may still reject a
        combination, e.g. ``.expect_tx`` on ``mbarrier.init``.)"""
        if family_of(opcode, mods) != self.key:
            return False
        rest = list(mods)
        for w in self.words:
            if w not in rest:
                return False
            rest.remove(w)
        used: set = set()
        for m in rest:
            for g in self.groups:
                if g.name not in used and g.matches(m):
                    used.add(g.name)
                    break
            else:
                return False
        return all(g.name in used for g in self.groups if g.required)


def split_qualifiers(ins: ir.Instruction, groups: tuple, mods: tuple, family: str, section: str) -> dict:
    """Classify ``mods`` into ``groups`` (each at most once, any order, as ptxas): {group name: qualifier}.
    A second qualifier of a group is a VerifyError; a qualifier of no group an UnsupportedError naming the
    family and its PTX ISA section."""
    got: dict = {}
    for m in mods:
        for g in groups:
            if g.matches(m):
                if g.name in got:
                    raise VerifyError(f"{ins.full_opcode}: more than one {g.name} qualifier (.{got[g.name]} and .{m})",
                                      ins.loc)
                got[g.name] = m
                break
        else:
            raise UnsupportedError(f"qualifier .{m} of {family} is not supported", ins.loc,
                                   expected=f"the qualifiers of {family} in PTX ISA {section}")
    return got


def b32_vector(op, n: int, what: str, full: str, info, loc, allow_imm: bool = False) -> tuple:
    """The elements of operand ``what``: a brace vector of exactly ``n`` 32-bit registers (a bare register when
    ``n`` is 1; immediates too with ``allow_imm``); VerifyError naming ``n`` and the operand otherwise."""
    if isinstance(op, ir.Vector):
        elems = op.elems
    elif n == 1 and isinstance(op, ir.Reg):
        elems = (op,)
    else:
        raise VerifyError(f"{full}: operand {what} must be a vector of {n} .b32 register(s), got {op}", loc)
    if len(elems) != n:
        raise VerifyError(f"{full}: operand {what} has {len(elems)} register(s), expected {n}", loc,
                          expected=f"a vector of {n} 32-bit registers for {what}")
    for e in elems:
        if isinstance(e, ir.Imm) and allow_imm:
            continue
        if not isinstance(e, ir.Reg):
            raise VerifyError(f"{full}: element {e} of operand {what} is not a register", loc)
        t = info.reg_type(e) if info is not None else None
        if t is not None and (t == "pred" or ir.TYPE_SIZES.get(t) != 4):
            raise VerifyError(f"{full}: register {e} of operand {what} is .{t}; expected a 32-bit register",
                              loc)
    return tuple(elems)


__all__ = ["b32_vector", "FLOAT_TYPES", "TYPE_CLASS_OPCODES", "TCGEN05_SUBOPS", "WGMMA_SUBOPS", "family_of", "instruction_family",
           "opcode_of_key", "check_family_key", "QualGroup", "FormSpec", "split_qualifiers"]
