"""Forms of the warp-collective matrix moves ldmatrix, stmatrix and movmatrix (qualifiers and operands).

PTX ISA 9.1 §9.7.14.5.15 ldmatrix, §9.7.14.5.16 stmatrix, §9.7.14.5.17 movmatrix.  Accepted:

* ``ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared{::cta}}.b16 {r...}, [p]``
* ``stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared{::cta}}.b16 [p], {r...}``
* ``movmatrix.sync.aligned.m8n8.trans.b16 d, a``

Not supported (UnsupportedError naming the form): the sm_100a ``.m16n16`` / ``.m8n16`` / ``.m16n8`` ``.b8`` forms
and the ``.b8x16.b6x16_p32`` / ``.b8x16.b4x16_p64`` decompressing loads (their thread maps are given only as
figures in the PTX ISA).  The execution is ``tcsim.semantics.ldstmatrix``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup, b32_vector

SECTIONS = {"ldmatrix": "PTX ISA §9.7.14.5.15", "stmatrix": "PTX ISA §9.7.14.5.16",
            "movmatrix": "PTX ISA §9.7.14.5.17"}
NUMS = {"x1": 1, "x2": 2, "x4": 4}
SPACES = {"shared": "shared::cta", "shared::cta": "shared::cta"}
B8_FORMS = ("m16n16", "m8n16", "m16n8", "b8", "b8x16", "b6x16_p32", "b4x16_p64")


def groups(opname: str) -> tuple:
    """The qualifier groups of ``opname`` (in PTX syntax order)."""
    base = [QualGroup("sync", ("sync",), required=True), QualGroup("aligned", ("aligned",), required=True),
            QualGroup("shape", ("m8n8",), required=True)]
    if opname == "movmatrix":
        base.append(QualGroup("trans", ("trans",), required=True))
    else:
        base += [QualGroup("num", tuple(NUMS), required=True), QualGroup("trans", ("trans",)),
                 QualGroup("space", tuple(SPACES))]
    return tuple(base + [QualGroup("type", ("b16",), required=True)])


SPECS = tuple(FormSpec(op, SECTIONS[op], (), groups(op)) for op in SECTIONS)


@dataclass(frozen=True)
class MatrixForm:
    """A checked ld/st/movmatrix: ``num`` matrices (1 for movmatrix), ``trans``, ``space`` ('shared::cta' or None
    for a generic address), ``regs`` the register vector (ldmatrix destination, stmatrix source, movmatrix d),
    ``addr`` the shared-memory address (ld/stmatrix), ``src`` movmatrix's source register."""

    op: str
    num: int
    trans: bool
    space: str | None
    regs: tuple
    addr: ir.Address | None = None
    src: tuple = ()


def _qualifiers(ins, opname: str, need_num: bool):
    """(num, trans, space) of an ld/st/movmatrix; Verify/UnsupportedError on anything else."""
    full = ins.full_opcode
    mods = list(ins.mods)
    for m in mods:
        if m in B8_FORMS:
            raise UnsupportedError(f"{full}: the .{m} form of {opname} is not supported by tcsim (its thread "
                                   f"map is given only as a figure in the PTX ISA)", ins.loc,
                                   expected=f"{opname}.sync.aligned.m8n8{'.x1/.x2/.x4' if need_num else ''}"
                                            f"{'{.trans}' if need_num else '.trans'}.b16")
    if "sync" not in mods or "aligned" not in mods:
        raise VerifyError(f"{full}: {opname} requires the .sync and .aligned qualifiers", ins.loc)
    if "m8n8" not in mods:
        raise VerifyError(f"{full}: {opname} needs the shape qualifier .m8n8", ins.loc)
    if "b16" not in mods:
        raise VerifyError(f"{full}: {opname} .m8n8 needs the type .b16", ins.loc)
    nums = [m for m in mods if m in NUMS]
    spaces = [m for m in mods if m.startswith("shared")]
    trans = "trans" in mods
    known = {"sync", "aligned", "m8n8", "b16", "trans"} | set(NUMS) | set(SPACES)
    extra = [m for m in mods if m not in known]
    if extra:
        if any(m.startswith("shared") for m in extra):
            raise VerifyError(f"{full}: {opname} takes .shared or .shared::cta, not "
                              + ", ".join("." + m for m in extra), ins.loc)
        raise VerifyError(f"{full}: unknown qualifier(s) " + ", ".join("." + m for m in extra), ins.loc)
    if len(spaces) > 1:
        raise VerifyError(f"{full}: more than one state space", ins.loc)
    space = SPACES[spaces[0]] if spaces else None
    if need_num:
        if len(nums) != 1:
            raise VerifyError(f"{full}: {opname} needs exactly one of .x1, .x2, .x4", ins.loc)
        num = NUMS[nums[0]]
    else:
        if nums:
            raise VerifyError(f"{full}: {opname} takes no .x1/.x2/.x4 qualifier", ins.loc)
        num = 1
    return num, trans, space


def parse_matrix(ins: ir.Instruction, info) -> MatrixForm:
    """The checked form of an ldmatrix / stmatrix / movmatrix instruction (module docstring)."""
    full, op, ops = ins.full_opcode, ins.opcode, ins.operands
    if op == "movmatrix":
        num, trans, space = _qualifiers(ins, op, need_num=False)
        if space is not None:
            raise VerifyError(f"{full}: movmatrix takes no state space", ins.loc)
        if not trans:
            raise VerifyError(f"{full}: movmatrix requires .trans", ins.loc)
        if len(ops) != 2:
            raise VerifyError(f"{full}: movmatrix takes a destination d and a source a", ins.loc)
        d = b32_vector(ops[0], 1, "d", full, info, ins.loc)
        a = b32_vector(ops[1], 1, "a", full, info, ins.loc)
        return MatrixForm(op, num, trans, space, d, src=a)
    num, trans, space = _qualifiers(ins, op, need_num=True)
    if op == "ldmatrix":
        if len(ops) != 2 or not isinstance(ops[1], ir.Address):
            raise VerifyError(f"{full}: ldmatrix takes a register vector and an address [p]", ins.loc)
        return MatrixForm(op, num, trans, space, b32_vector(ops[0], num, "r", full, info, ins.loc), addr=ops[1])
    if len(ops) != 2 or not isinstance(ops[0], ir.Address):
        raise VerifyError(f"{full}: stmatrix takes an address [p] and a register vector", ins.loc)
    return MatrixForm(op, num, trans, space, b32_vector(ops[1], num, "r", full, info, ins.loc), addr=ops[0])


__all__ = ["SECTIONS", "NUMS", "SPACES", "B8_FORMS", "SPECS", "MatrixForm", "parse_matrix", "groups"]
