"""Forms of tensormap.replace and tensormap.cp_fenceproxy (qualifiers and operands, checked at decode time).

PTX ISA 9.1 "tensormap.replace" (data-movement instructions) and "tensormap.cp_fenceproxy" (parallel
synchronization instructions)::

    tensormap.replace.tile.field{.global|.shared::cta}.b1024.{b32|b64} [addr], {ord,} new_val
    tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.{cta|cluster|gpu|sys}.sync.aligned
        [dst], [src], 128

The fields, their value types and ranges are :data:`tcsim.isa.tensormap.REPLACE_FIELDS`.  The execution is
``tcsim.semantics.tensormap``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import VerifyError
from .forms import FormSpec, QualGroup
from .tensormap import MAX_ORD, REPLACE_FIELDS, SIZE as TMAP_SIZE

SECTION_REPLACE = 'PTX ISA "tensormap.replace"'
SECTION_CP_FENCEPROXY = 'PTX ISA "tensormap.cp_fenceproxy"'
SPACES = {"global": "global", "shared::cta": "shared::cta"}
SCOPES = ("cta", "cluster", "gpu", "sys")

REPLACE_GROUPS = (QualGroup("mode", ("tile",), required=True), QualGroup("field", tuple(REPLACE_FIELDS), required=True),
                  QualGroup("space", tuple(SPACES)), QualGroup("size", ("b1024",), required=True),
                  QualGroup("type", ("b32", "b64"), required=True))
CP_FENCEPROXY_GROUPS = (QualGroup("dst", ("global",), required=True), QualGroup("src", ("shared::cta",), required=True),
                        QualGroup("proxy", ("tensormap::generic",), required=True),
                        QualGroup("sem", ("release",), required=True), QualGroup("scope", SCOPES, required=True),
                        QualGroup("sync", ("sync",), required=True), QualGroup("aligned", ("aligned",), required=True))
SPECS = (FormSpec("tensormap.replace", SECTION_REPLACE, ("replace",), REPLACE_GROUPS),
         FormSpec("tensormap.cp_fenceproxy", SECTION_CP_FENCEPROXY, ("cp_fenceproxy",), CP_FENCEPROXY_GROUPS))


def _imm(ins, op, what: str) -> int:
    if not isinstance(op, ir.Imm) or op.kind != "int":
        raise VerifyError(f"{ins.full_opcode}: {what} must be an integer constant, got {op}", ins.loc)
    return int(op.value)


def _addr(ins, op, what: str) -> ir.Address:
    if not isinstance(op, ir.Address) or op.coords is not None:
        raise VerifyError(f"{ins.full_opcode}: {what} must be a memory address [a], got {op}", ins.loc)
    return op


@dataclass(frozen=True)
class ReplaceForm:
    """A checked tensormap.replace: the field, its value type ``vtype``, the state space ('generic' when none),
    the tensor-map address, the ordinal (None for fields without one) and the new-value operand."""

    field: str
    vtype: str
    space: str
    addr: ir.Address
    ordinal: int | None
    value: object


def parse_replace(ins: ir.Instruction) -> ReplaceForm:
    """The checked form of a ``tensormap.replace`` instruction (module docstring)."""
    what = ins.full_opcode
    mods = list(ins.mods[1:])
    if "tile" not in mods:
        raise VerifyError(f"{what}: tensormap.replace needs the mode qualifier .tile", ins.loc)
    mods.remove("tile")
    fields = [m for m in mods if m in REPLACE_FIELDS]
    if len(fields) != 1:
        raise VerifyError(f"{what}: tensormap.replace names {'no' if not fields else 'more than one'} field",
                          ins.loc, expected=f"one of {', '.join('.' + f for f in REPLACE_FIELDS)}")
    field = fields[0]
    takes_ord, vtype, imm_only, ncodes = REPLACE_FIELDS[field]
    space = "generic"
    rest = [m for m in mods if m != field]
    for m in list(rest):
        if m in SPACES:
            space = SPACES[m]
            rest.remove(m)
    if "b1024" not in rest:
        raise VerifyError(f"{what}: tensormap.replace needs .b1024 (the size of a tensor map)", ins.loc)
    rest.remove("b1024")
    types = [m for m in rest if m in ("b32", "b64")]
    if types != [vtype]:
        raise VerifyError(f"{what}: .{field} takes a .{vtype} new value", ins.loc,
                          expected=f"tensormap.replace.tile.{field}{{.space}}.b1024.{vtype}")
    rest.remove(vtype)
    if rest:
        raise VerifyError(f"{what}: qualifier .{rest[0]} is not valid on tensormap.replace", ins.loc,
                          expected="state space .global or .shared::cta (or none, for a generic address)")
    ops = ins.operands
    n = 3 if takes_ord else 2
    if len(ops) != n:
        raise VerifyError(f"{what} takes {n} operands ([addr], {'ord, ' if takes_ord else ''}new_val), got "
                          f"{len(ops)}", ins.loc)
    addr_op = _addr(ins, ops[0], "the tensor-map operand")
    ordinal = None
    if takes_ord:
        ordinal = _imm(ins, ops[1], "ord")
        if not 0 <= ordinal <= MAX_ORD:
            raise VerifyError(f"{what}: ord {ordinal} is out of range", ins.loc, expected=f"0..{MAX_ORD}")
    val_op = ops[-1]
    if imm_only:
        v = _imm(ins, val_op, f"the new .{field} value")
        if not 0 <= v < ncodes:
            raise VerifyError(f"{what}: new value {v} is out of range for .{field}", ins.loc,
                              expected=f"0..{ncodes - 1}")
    elif not isinstance(val_op, (ir.Reg, ir.Imm)):
        raise VerifyError(f"{what}: new_val must be a register or an immediate, got {val_op}", ins.loc)
    return ReplaceForm(field, vtype, space, addr_op, ordinal, val_op)


@dataclass(frozen=True)
class CpFenceproxyForm:
    """A checked tensormap.cp_fenceproxy: the release scope and the [dst] (global) / [src] (shared::cta)."""

    scope: str
    dst: ir.Address
    src: ir.Address


def parse_cp_fenceproxy(ins: ir.Instruction) -> CpFenceproxyForm:
    """The checked form of a ``tensormap.cp_fenceproxy`` instruction (module docstring)."""
    what = ins.full_opcode
    mods = list(ins.mods[1:])
    need = [("global", "the destination space .global"), ("shared::cta", "the source space .shared::cta"),
            ("tensormap::generic", ".tensormap::generic"), ("release", ".release"), ("sync", ".sync"),
            ("aligned", ".aligned")]
    for m, name in need:
        if m not in mods:
            raise VerifyError(f"{what}: tensormap.cp_fenceproxy needs {name}", ins.loc,
                              expected="tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release"
                                       ".{cta|cluster|gpu|sys}.sync.aligned")
        mods.remove(m)
    if mods[:1] and mods[0] in SCOPES and len(mods) == 1:
        scope = mods[0]
    else:
        raise VerifyError(f"{what}: tensormap.cp_fenceproxy needs exactly one scope .cta/.cluster/.gpu/.sys"
                          + (f" (found .{mods[0]})" if mods and mods[0] not in SCOPES else ""), ins.loc)
    ops = ins.operands
    if len(ops) != 3:
        raise VerifyError(f"{what} takes [dst], [src], size; got {len(ops)} operands", ins.loc)
    dst_op = _addr(ins, ops[0], "[dst]")
    src_op = _addr(ins, ops[1], "[src]")
    size = _imm(ins, ops[2], "the size")
    if size != TMAP_SIZE:
        raise VerifyError(f"{what}: size {size} must be {TMAP_SIZE} (a tensor map)", ins.loc)
    return CpFenceproxyForm(scope, dst_op, src_op)


__all__ = ["SPECS", "ReplaceForm", "parse_replace", "CpFenceproxyForm", "parse_cp_fenceproxy"]
