"""Forms of the plain data-movement instructions: ld, ldu, st, mov, cvta, isspacep, mapa, getctarank, prefetch.

PTX ISA 9.1 §9.7.9 (data movement and conversion): §9.7.9.1 mov, §9.7.9.8 ld, §9.7.9.9 ldu, §9.7.9.10 st,
§9.7.9.15 prefetch / prefetchu, §9.7.9.19 cvta, §9.7.9.20 isspacep, §9.7.9.23 mapa, §9.7.9.24 getctarank.
Memory-consistency qualifiers (``.weak``, ``.volatile``, ``.relaxed``, ``.acquire``, ``.release`` with a scope)
are kept on the form; cache and eviction hints (``.ca .cg .cs .lu .cv .nc``, ``.L1::*``, ``.L2::*``,
``.level::*``) are accepted and have no functional effect.

``.b128`` (PTX ISA §5.2.2, §9.7.9.1, §9.7.9.8, §9.7.9.10; sm_90+): ``mov.b128 %q, {a, b}`` packs two 64-bit
(or four 32-bit) registers, element 0 in the low bits, and the unpack form splits one; a ``.b128`` register is
otherwise only copied, loaded and stored whole (ptxas rejects ``mov.b128`` from a 64-bit register, a vector
operand of ``ld``/``st .b128`` and ``.v2.b128``: "Vector type too large").

``.L2::cache_hint`` (§9.7.9.8, §9.7.9.10, PTX ISA §9.7.9.25 cache-eviction priority hints) takes one more
operand, the 64-bit cache policy made by ``createpolicy`` (§9.7.9.18); the operand must be a 64-bit register
and is checked here; the hint has no functional effect (tcsim models no caches).

Not supported (UnsupportedError): ``.unified``.  The execution is ``tcsim.semantics.data_movement``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .cache_policy_forms import check_policy_operand
from .forms import FormSpec, QualGroup, split_qualifiers
from .typing_rules import check_cvta, check_memop, check_mov

SPACES = ("global", "shared", "shared::cta", "shared::cluster", "local", "param", "param::entry", "param::func",
          "const")
SEMS = ("weak", "volatile", "relaxed", "acquire", "release", "mmio")
SCOPES = ("cta", "cluster", "gpu", "sys")
HINTS_PREFIX = ("L1::", "L2::", "level::")
CACHE_OPS = ("ca", "cg", "cs", "lu", "cv", "nc", "wb", "wt")
#: the scalar types of ld/st/mov (PTX ISA §5.2.2; .pred only for mov)
TYPES = tuple(t for t in ir.TYPE_SIZES if t != "pred")
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
    policy: object = None       # the .L2::cache_hint cache-policy operand, or None


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
        else:
            raise UnsupportedError(f"qualifier .{m} of {ins.opcode} is not supported", ins.loc)
    if typ is None:
        raise VerifyError(f"{ins.full_opcode} has no type qualifier", ins.loc)
    if space.startswith("param::"):
        space = "param"
    if typ == "b128" and vec > 1:
        raise VerifyError(f"{ins.full_opcode}: a vector of .b128 exceeds the 128-bit limit of one access", ins.loc,
                          expected=f"{ins.opcode}...b128 with one .b128 register (ptxas: \"Vector type too large\")")
    return space, sem, scope, vec, typ


def check_cache_policy(ins: ir.Instruction, rest: list, info, what: str = "cache-policy") -> object | None:
    """The cache-policy operand of a ``.L2::cache_hint`` form (PTX ISA §9.7.9.18 createpolicy makes it): ``rest``
    holds the operands after the fixed ones.  With the qualifier there must be exactly one, a 64-bit register
    (or an integer immediate); without it, none.  Returns the operand or None."""
    hinted = "L2::cache_hint" in ins.mods
    if hinted and ins.opcode in ("ld", "ldu", "st"):
        space = next((m for m in ins.mods if m in SPACES), None)
        if space is not None and space != "global":
            raise VerifyError(f"{ins.full_opcode}: .L2::cache_hint cannot be applied to the .{space} space", ins.loc,
                              expected="a .global (or generic) access")
    if not hinted:
        if rest:
            raise VerifyError(f"{ins.full_opcode}: unexpected operand {rest[0]} (a {what} operand needs the "
                              f".L2::cache_hint qualifier)", ins.loc)
        return None
    if len(rest) != 1:
        raise VerifyError(f"{ins.full_opcode}: .L2::cache_hint needs exactly one {what} operand after the "
                          f"others, got {len(rest)}", ins.loc,
                          expected="a .b64 register made by createpolicy")
    check_policy_operand(ins, rest[0], info)
    return rest[0]


def _check_b128_operand(ins, op, info, what: str) -> None:
    """A ``.b128`` ld/st/atom value operand: one .b128 register (ptxas rejects vectors and narrower registers)."""
    if isinstance(op, ir.Vector):
        raise VerifyError(f"{ins.full_opcode}: the {what} of a .b128 access is one .b128 register, not the vector "
                          f"{op}", ins.loc, expected="a .b128 register (mov.b128 packs and unpacks it)")
    if isinstance(op, ir.Reg):
        t = info.reg_type(op) if info is not None else None
        if t is not None and t != "b128":
            raise VerifyError(f"{ins.full_opcode}: the {what} {op} is .{t}; a .b128 access needs a .b128 register",
                              ins.loc, expected="a register declared .reg .b128")


def parse_ld(ins: ir.Instruction, info=None) -> MemOpForm:
    """``ld{.sem}{.scope}{.space}{.cop}{.hints}{.vec}.type d, [a]{, cache-policy}`` and ``ldu`` (PTX ISA
    §9.7.9.8-9)."""
    space, sem, scope, vec, typ = parse_memop_qualifiers(ins)
    if len(ins.operands) < 2 or not isinstance(ins.operands[1], ir.Address):
        raise VerifyError(f"{ins.opcode} needs a destination and an address [a]", ins.loc)
    dst, src = ins.operands[0], ins.operands[1]
    pol = check_cache_policy(ins, list(ins.operands[2:]), info)
    if vec > 1 and not (isinstance(dst, ir.Vector) and len(dst.elems) == vec):
        raise VerifyError(f"{ins.full_opcode} needs a destination vector of {vec} registers", ins.loc)
    if typ == "b128":
        _check_b128_operand(ins, dst, info, "destination")
    check_memop(ins, info, space=space, vec=vec, typ=typ, value=dst, addr=src, load=True)
    return MemOpForm(ins.opcode, space, sem, scope, vec, typ, dst, src, pol)


def parse_st(ins: ir.Instruction, info=None) -> MemOpForm:
    """``st{.sem}{.scope}{.space}{.cop}{.hints}{.vec}.type [a], b{, cache-policy}`` (PTX ISA §9.7.9.10)."""
    space, sem, scope, vec, typ = parse_memop_qualifiers(ins)
    if len(ins.operands) < 2 or not isinstance(ins.operands[0], ir.Address):
        raise VerifyError("st needs an address [a] and a source", ins.loc)
    dst, src = ins.operands[:2]
    pol = check_cache_policy(ins, list(ins.operands[2:]), info)
    if space in ("const",):
        raise VerifyError("st to .const is not allowed", ins.loc)
    if vec > 1 and not (isinstance(src, ir.Vector) and len(src.elems) == vec):
        raise VerifyError(f"{ins.full_opcode} needs a source vector of {vec} values", ins.loc)
    if typ == "b128":
        _check_b128_operand(ins, src, info, "source")
    check_memop(ins, info, space=space, vec=vec, typ=typ, value=src, addr=dst, load=False)
    return MemOpForm("st", space, sem, scope, vec, typ, src, dst, pol)


# ---------------------------------------------------------------------------------------------- mov / cvta
@dataclass(frozen=True)
class MovForm:
    """A checked mov: ``type``; ``mode`` 'pred', 'pack' (vector source), 'unpack' (vector destination),
    'vector' (``mov.v2``/``.v4``: element by element) or 'copy'."""

    type: str
    mode: str
    dst: object
    src: object


def parse_mov(ins: ir.Instruction, info=None) -> MovForm:
    """``mov.type d, a`` incl. pack / unpack of vectors (PTX ISA §9.7.9.1); ``mov.b128`` packs / unpacks
    two 64-bit or four 32-bit registers and otherwise copies a .b128 register or an immediate whole."""
    if len(ins.operands) != 2:
        raise VerifyError("mov takes a destination and a source", ins.loc)
    check_mov(ins, info)
    types = [m for m in ins.mods if m in TYPES or m == "pred"]
    if len(types) != 1:
        raise VerifyError(f"{ins.full_opcode} needs exactly one type", ins.loc)
    typ = types[0]
    dst, src = ins.operands
    if typ == "pred":
        mode = "pred"
    elif any(m in ("v2", "v4") for m in ins.mods):
        mode = "vector"
    elif isinstance(src, ir.Vector) and len(src.elems) > 1:
        mode = "pack"
    elif isinstance(dst, ir.Vector) and len(dst.elems) > 1:
        mode = "unpack"
    else:
        mode = "copy"
    if typ == "b128":
        _check_mov_b128(ins, mode, dst, src, info)
    return MovForm(typ, mode, dst, src)


def _check_mov_b128(ins, mode, dst, src, info) -> None:
    """ptxas's rules for ``mov.b128``: the packed side is one .b128 register; the vector side 2 x 64-bit or
    4 x 32-bit registers of one size ("Incompatible elements of vector expression"); a copy is .b128 to .b128 or
    an immediate ("Arguments mismatch" for a 64-bit register)."""
    def rtype(op):
        return info.reg_type(op) if info is not None and isinstance(op, ir.Reg) else None

    whole, vec = (dst, src) if mode == "pack" else (src, dst) if mode == "unpack" else (dst, None)
    if not isinstance(whole, ir.Reg):
        raise VerifyError(f"{ins.full_opcode}: operand {whole} must be a .b128 register", ins.loc)
    if mode == "copy" and not isinstance(src, (ir.Reg, ir.Imm)):
        raise VerifyError(f"{ins.full_opcode}: the source {src} must be a .b128 register or an integer", ins.loc)
    for op in ((dst, src) if mode == "copy" else (whole,)):
        t = rtype(op)
        if t is not None and t != "b128":
            raise VerifyError(f"{ins.full_opcode}: register {op} is .{t}; mov.b128 moves .b128 registers", ins.loc,
                              expected="mov.b128 %q, {%rd_lo, %rd_hi} to pack two 64-bit registers")
    if mode == "copy":
        if isinstance(src, ir.Imm) and src.kind != "int":
            raise VerifyError(f"{ins.full_opcode}: a float immediate cannot be a .b128 value", ins.loc)
        return
    n = len(vec.elems)
    if n not in (2, 4):
        raise VerifyError(f"{ins.full_opcode}: the vector {vec} has {n} elements; .b128 packs 2 x 64 or 4 x 32 "
                          "bits", ins.loc)
    want = 16 // n
    for e in vec.elems:
        if isinstance(e, ir.Sink) and mode == "unpack":
            continue
        if isinstance(e, ir.Imm):
            continue
        if not isinstance(e, ir.Reg):
            raise VerifyError(f"{ins.full_opcode}: element {e} of {vec} is not a register", ins.loc)
        t = rtype(e)
        if t is not None and (t == "pred" or ir.TYPE_SIZES.get(t) != want):
            raise VerifyError(f"{ins.full_opcode}: element {e} of {vec} is .{t}; the {n} elements of a .b128 "
                              f"vector are {8 * want}-bit registers", ins.loc,
                              expected="elements of one size (ptxas: \"Incompatible elements of vector "
                                       "expression\")")


@dataclass(frozen=True)
class CvtaForm:
    """A checked cvta: ``to`` (state space -> generic when False), the state space, the size type."""

    to: bool
    space: str
    size: str
    dst: object
    src: object


def parse_cvta(ins: ir.Instruction, info=None) -> CvtaForm:
    """``cvta{.to}.space.size d, a`` (PTX ISA §9.7.9.19); typing rules in :func:`tcsim.isa.typing_rules.check_cvta`."""
    spaces = [m for m in ins.mods if m in CVTA_SPACES]
    sizes = [m for m in ins.mods if m in ("u32", "u64")]
    if len(spaces) != 1 or len(sizes) != 1 or len(ins.operands) != 2:
        raise VerifyError(f"malformed {ins.full_opcode}", ins.loc)
    f = CvtaForm("to" in ins.mods, spaces[0], sizes[0], *ins.operands)
    check_cvta(ins, info, to=f.to, space=f.space, size=f.size, dst=f.dst, src=f.src)
    return f


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


def _address_query_mods(ins) -> None:
    """mapa / getctarank take ``.shared::cluster`` and one of ``.u32 .u64`` (ptxas: "Unexpected instruction types
    specified" for any other type)."""
    sizes = [m for m in ins.mods if m in ("u32", "u64")]
    other = [m for m in ins.mods if m not in ("u32", "u64", "shared::cluster")]
    if other:
        raise VerifyError(f"Unexpected instruction types specified for '{ins.opcode}' (.{other[0]})", ins.loc,
                          expected=".u32 or .u64")
    if len(sizes) != 1:
        raise VerifyError(f"{ins.full_opcode} needs exactly one of .u32 / .u64", ins.loc)


def parse_mapa(ins: ir.Instruction) -> AddressQueryForm:
    """``mapa{.shared::cluster}.{u32|u64} d, a, b`` (PTX ISA §9.7.9.23)."""
    _address_query_mods(ins)
    dst, src, rank = _operands(ins, 3, "d, a, b")
    return AddressQueryForm("mapa", "shared::cluster" if "shared::cluster" in ins.mods else None,
                            "u64" if "u64" in ins.mods else "u32", dst, src, rank)


def parse_getctarank(ins: ir.Instruction) -> AddressQueryForm:
    """``getctarank{.shared::cluster}.{u32|u64} d, a`` (PTX ISA §9.7.9.24)."""
    _address_query_mods(ins)
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


__all__ = ["SPECS", "MemOpForm", "parse_memop_qualifiers", "check_cache_policy", "parse_ld", "parse_st", "MovForm", "parse_mov",
           "CvtaForm", "parse_cvta", "AddressQueryForm", "parse_isspacep", "parse_mapa", "parse_getctarank",
           "parse_prefetch"]
