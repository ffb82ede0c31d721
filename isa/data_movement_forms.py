"""Forms of the plain data-movement instructions: ld, ldu, st, mov, cvta, isspacep, mapa, getctarank, prefetch.

PTX ISA 9.1 §9.7.9 (data movement and conversion): §9.7.9.1 mov, §9.7.9.8 ld, §9.7.9.9 ldu, §9.7.9.10 st,
§9.7.9.15 prefetch / prefetchu, §9.7.9.19 cvta, §9.7.9.20 isspacep, §9.7.9.23 mapa, §9.7.9.24 getctarank.
Memory-consistency qualifiers (``.weak``, ``.volatile``, ``.relaxed``, ``.acquire``, ``.release`` with a scope)
are kept on the form; cache and eviction hints (``.ca .cg .cs .lu .cv .nc``, ``.L1::*``, ``.L2::*``,
``.level::*``) are accepted and have no functional effect.

Not supported (UnsupportedError): ``.b128`` loads/stores and ``.unified``.  The execution is
``tcsim.semantics.data_movement``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup, split_qualifiers

SPACES = ("global", "shared", "shared::cta", "shared::cluster", "local", "param", "param::entry", "param::func",
          "const")
SEMS = ("weak", "volatile", "relaxed", "acquire", "release", "mmio")
SCOPES = ("cta", "cluster", "gpu", "sys")
HINTS_PREFIX = ("L1::", "L2::", "level::")
CACHE_OPS = ("ca", "cg", "cs", "lu", "cv", "nc", "wb", "wt")
#: the scalar types of ld/st/mov (PTX ISA §5.2.2; .pred only for mov)
TYPES = tuple(t for t in ir.TYPE_SIZES if t not in ("pred", "b128"))
VECTORS = ("v2", "v4", "v8")
#: prefetch{.space}.level [a] / prefetch.global.L2::evict_* [a] / prefetch{.const|.param}.tensormap [a]
PREFETCH_SPACES = ("global", "local", "const", "param")
PREFETCH_LEVELS = ("L1", "L2", "L2::evict_last", "L2::evict_normal", "tensormap")
CVTA_SPACES = ("global", "shared", "shared::cta", "shared::cluster", "local", "param", "const")

_MEM_GROUPS = (QualGroup("sem", SEMS), QualGroup("scope", SCOPES), QualGroup("space", SPACES),
               QualGroup("cache", CACHE_OPS), QualGroup("eviction", (), prefixes=("L1::",)),
               QualGroup("l2", (), prefixes=("L2::",)), QualGroup("level", (), prefixes=("level::",)),
               QualGroup("vector", VECTORS), QualGroup("type", TYPES, required=True))
SPECS = (FormSpec("ld", "PTX ISA §9.7.9.8", (), _MEM_GROUPS),
         FormSpec("ldu", "PTX ISA §9.7.9.9", (), _MEM_GROUPS),
         FormSpec("st", "PTX ISA §9.7.9.10", (), _MEM_GROUPS),
         FormSpec("mov", "PTX ISA §9.7.9.1", (), (QualGroup("type", TYPES + ("pred",), required=True),)),
         FormSpec("cvta", "PTX ISA §9.7.9.19", (), (QualGroup("to", ("to",)),
                                                    QualGroup("space", CVTA_SPACES, required=True),
                                                    QualGroup("size", ("u32", "u64"), required=True))),
         FormSpec("isspacep", "PTX ISA §9.7.9.20", (),
                  (QualGroup("space", ("global", "shared", "shared::cta", "shared::cluster", "local", "param",
                                       "const"), required=True),)),
         FormSpec("mapa", "PTX ISA §9.7.9.23", (), (QualGroup("space", ("shared::cluster",)),
                                                    QualGroup("size", ("u32", "u64"), required=True))),
         FormSpec("getctarank", "PTX ISA §9.7.9.24", (), (QualGroup("space", ("shared::cluster",)),
                                                          QualGroup("size", ("u32", "u64"), required=True))),
         FormSpec("prefetch", "PTX ISA §9.7.9.15", (), (QualGroup("space", PREFETCH_SPACES),
                                                        QualGroup("level", PREFETCH_LEVELS, required=True))),
         FormSpec("prefetchu", "PTX ISA §9.7.9.15", (), (QualGroup("level", ("L1",), required=True),)))
_SPEC = {s.key: s for s in SPECS}


# ---------------------------------------------------------------------------------------------- ld / ldu / st
@dataclass(frozen=True)
class MemOpForm:
    """A checked ld / ldu / st: state space ('generic' when none; ``param::*`` -> 'param'), ``sem`` / ``scope``
    (None when not spelled), vector length, type; ``value`` the destination (ld) or source (st) operand, ``addr``
    the address."""

    op: str
    space: str
    sem: str | None
    scope: str | None
    vec: int
    type: str
    value: object
    addr: ir.Address


def parse_memop_qualifiers(ins: ir.Instruction):
    """Split ld/st qualifiers into (space, sem, scope, vec, type); reject unknown ones."""
    space, sem, scope, vec, typ = "generic", None, None, 1, None
    for m in ins.mods:
        if m in SPACES:
            space = m
        elif m in SEMS:
            sem = m
        elif m in SCOPES:
            scope = m
        elif m in VECTORS:
            vec = int(m[1:])
        elif m in TYPES:
            if typ is not None:
                raise VerifyError(f"{ins.full_opcode} names two types (.{typ} and .{m})", ins.loc)
            typ = m
        elif m in CACHE_OPS or m.startswith(HINTS_PREFIX) or m in ("unified",):
            if m == "unified":
                raise UnsupportedError(".unified loads are not supported", ins.loc)
        elif m == "b128":
            raise UnsupportedError(".b128 accesses are not supported", ins.loc)
        else:
            raise UnsupportedError(f"qualifier .{m} of {ins.opcode} is not supported", ins.loc)
    if typ is None:
        raise VerifyError(f"{ins.full_opcode} has no type qualifier", ins.loc)
    if space.startswith("param::"):
        space = "param"
    return space, sem, scope, vec, typ


def parse_ld(ins: ir.Instruction) -> MemOpForm:
    """``ld{.sem}{.scope}{.space}{.cop}{.hints}{.vec}.type d, [a]`` and ``ldu`` (PTX ISA §9.7.9.8-9)."""
    space, sem, scope, vec, typ = parse_memop_qualifiers(ins)
    if len(ins.operands) < 2 or not isinstance(ins.operands[1], ir.Address):
        raise VerifyError(f"{ins.opcode} needs a destination and an address [a]", ins.loc)
    dst, src = ins.operands[0], ins.operands[1]
    if vec > 1 and not (isinstance(dst, ir.Vector) and len(dst.elems) == vec):
        raise VerifyError(f"{ins.full_opcode} needs a destination vector of {vec} registers", ins.loc)
    return MemOpForm(ins.opcode, space, sem, scope, vec, typ, dst, src)


def parse_st(ins: ir.Instruction) -> MemOpForm:
    """``st{.sem}{.scope}{.space}{.cop}{.hints}{.vec}.type [a], b`` (PTX ISA §9.7.9.10)."""
    space, sem, scope, vec, typ = parse_memop_qualifiers(ins)
    if len(ins.operands) != 2 or not isinstance(ins.operands[0], ir.Address):
        raise VerifyError("st needs an address [a] and a source", ins.loc)
    dst, src = ins.operands
    if space in ("const",):
        raise VerifyError("st to .const is not allowed", ins.loc)
    if vec > 1 and not (isinstance(src, ir.Vector) and len(src.elems) == vec):
        raise VerifyError(f"{ins.full_opcode} needs a source vector of {vec} values", ins.loc)
    return MemOpForm("st", space, sem, scope, vec, typ, src, dst)


# ---------------------------------------------------------------------------------------------- mov / cvta
@dataclass(frozen=True)
class MovForm:
    """A checked mov: ``type``; ``mode`` 'pred', 'pack' (vector source), 'unpack' (vector destination) or
    'copy'."""

    type: str
    mode: str
    dst: object
    src: object


def parse_mov(ins: ir.Instruction) -> MovForm:
    """``mov.type d, a`` incl. pack / unpack of vectors (PTX ISA §9.7.9.1)."""
    if len(ins.operands) != 2:
        raise VerifyError("mov takes a destination and a source", ins.loc)
    types = [m for m in ins.mods if m in TYPES or m == "pred"]
    if len(types) != 1:
        raise VerifyError(f"{ins.full_opcode} needs exactly one type", ins.loc)
    typ = types[0]
    dst, src = ins.operands
    if typ == "pred":
        mode = "pred"
    elif isinstance(src, ir.Vector) and len(src.elems) > 1:
        mode = "pack"
    elif isinstance(dst, ir.Vector) and len(dst.elems) > 1:
        mode = "unpack"
    else:
        mode = "copy"
    return MovForm(typ, mode, dst, src)


@dataclass(frozen=True)
class CvtaForm:
    """A checked cvta: ``to`` (state space -> generic when False), the state space, the size type."""

    to: bool
    space: str
    size: str
    dst: object
    src: object


def parse_cvta(ins: ir.Instruction) -> CvtaForm:
    """``cvta{.to}.space.size d, a`` (PTX ISA §9.7.9.19)."""
    spaces = [m for m in ins.mods if m in CVTA_SPACES]
    sizes = [m for m in ins.mods if m in ("u32", "u64")]
    if len(spaces) != 1 or len(sizes) != 1 or len(ins.operands) != 2:
        raise VerifyError(f"malformed {ins.full_opcode}", ins.loc)
    return CvtaForm("to" in ins.mods, spaces[0], sizes[0], *ins.operands)


# ---------------------------------------------------------------------------------------------- address queries
def _operands(ins, n: int, names: str) -> tuple:
    if len(ins.operands) != n:
        raise VerifyError(f"{ins.full_opcode} takes {n} operands ({names}), got {len(ins.operands)}", ins.loc)
    return tuple(ins.operands)


@dataclass(frozen=True)
class AddressQueryForm:
    """A checked isspacep / mapa / getctarank: ``space`` (isspacep's space; 'shared::cluster' or None for mapa /
    getctarank), ``size`` ('u32' / 'u64'), operands ``dst``, ``src`` and mapa's ``rank``."""

    op: str
    space: str | None
    size: str | None
    dst: object
    src: object
    rank: object = None


def parse_isspacep(ins: ir.Instruction) -> AddressQueryForm:
    """``isspacep.space p, a`` (PTX ISA §9.7.9.20)."""
    dst, src = _operands(ins, 2, "p, a")
    return AddressQueryForm("isspacep", ins.mods[0] if ins.mods else None, None, dst, src)


def parse_mapa(ins: ir.Instruction) -> AddressQueryForm:
    """``mapa{.shared::cluster}.{u32|u64} d, a, b`` (PTX ISA §9.7.9.23)."""
    dst, src, rank = _operands(ins, 3, "d, a, b")
    return AddressQueryForm("mapa", "shared::cluster" if "shared::cluster" in ins.mods else None,
                            "u64" if "u64" in ins.mods else "u32", dst, src, rank)


def parse_getctarank(ins: ir.Instruction) -> AddressQueryForm:
    """``getctarank{.shared::cluster}.{u32|u64} d, a`` (PTX ISA §9.7.9.24)."""
    dst, src = _operands(ins, 2, "d, a")
    return AddressQueryForm("getctarank", "shared::cluster" if "shared::cluster" in ins.mods else None,
                            "u64" if "u64" in ins.mods else "u32", dst, src)


def parse_prefetch(ins: ir.Instruction) -> ir.Address:
    """``prefetch{.global|.local}.{L1|L2} [a]``, ``prefetch.global.L2::{evict_last|evict_normal} [a]``,
    ``prefetch{.const|.param}.tensormap [a]``, ``prefetchu.L1 [a]`` (PTX ISA §9.7.9.15): the address operand.
    A qualifier of no group is an UnsupportedError; a space the level does not take a VerifyError."""
    spec = _SPEC[ins.opcode]
    q = split_qualifiers(ins, spec.groups, tuple(ins.mods), ins.opcode, spec.section)
    level, space = q.get("level"), q.get("space")
    if level is None:
        raise VerifyError(f"{ins.full_opcode}: {ins.opcode} needs a level", ins.loc,
                          expected=" or ".join("." + v for v in spec.groups[-1].values))
    if space is not None:
        allowed = (("const", "param") if level == "tensormap" else ("global",) if level.startswith("L2::")
                   else ("global", "local"))
        if space not in allowed:
            raise VerifyError(f"{ins.full_opcode}: prefetch.{level} does not take the state space .{space}", ins.loc,
                              expected=" or ".join("." + a for a in allowed))
    if not ins.operands or not isinstance(ins.operands[0], ir.Address):
        raise VerifyError(f"{ins.full_opcode} needs an address operand", ins.loc)
    return ins.operands[0]


__all__ = ["SPECS", "MemOpForm", "parse_memop_qualifiers", "parse_ld", "parse_st", "MovForm", "parse_mov",
           "CvtaForm", "parse_cvta", "AddressQueryForm", "parse_isspacep", "parse_mapa", "parse_getctarank",
           "parse_prefetch"]
