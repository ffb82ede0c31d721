"""Forms of the L2 cache-policy instructions: createpolicy, applypriority, discard.

PTX ISA 9.1 §9.7.9.18 (createpolicy), §9.7.9.16 (applypriority), §9.7.9.17 (discard); all sm_80+::

    createpolicy.fractional.L2::<primary>{.L2::<secondary>}.b64  policy{, fraction};      fraction: f32 in (0, 1]
    createpolicy.range{.global}.L2::<primary>{.L2::<secondary>}.b64  policy, [a], primary-size, total-size;
    createpolicy.cvt.L2.b64  policy, access-property;
        primary   = evict_last | evict_normal | evict_first | evict_unchanged
        secondary = evict_first | evict_unchanged          (default evict_unchanged)
    applypriority{.global}.L2::evict_normal  [a], 128;
    discard{.global}.L2  [a], 128;

The checks follow ptxas 13.0 (each seen rejected by it): the policy destination is a 64-bit register, only
``.b64`` is a type, the secondary priority is evict_first or evict_unchanged, an immediate fraction lies in
(0, 1], immediate sizes satisfy primary-size <= total-size, applypriority / discard take exactly the size 128.

The policy value is opaque (PTX ISA: "an opaque 64-bit register"); :func:`encode_policy` gives the bit pattern the
H100 produces (measured: ``tests/hw/golden_h100/hopper_misc.json``).  The execution is ``tcsim.semantics.cache_policy``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import ir
from .errors import VerifyError
from .forms import FormSpec, QualGroup

SECTIONS = {"createpolicy": "PTX ISA §9.7.9.18", "applypriority": "PTX ISA §9.7.9.16",
            "discard": "PTX ISA §9.7.9.17"}
PRIMARY = ("L2::evict_last", "L2::evict_normal", "L2::evict_first", "L2::evict_unchanged")
SECONDARY = ("L2::evict_first", "L2::evict_unchanged")

SPECS = (FormSpec("createpolicy", SECTIONS["createpolicy"], (), (
    QualGroup("mode", ("fractional", "range", "cvt"), required=True), QualGroup("space", ("global",)),
    QualGroup("level", ("L2",)), QualGroup("primary", PRIMARY), QualGroup("secondary", SECONDARY),
    QualGroup("type", ("b64",), required=True))),
    FormSpec("applypriority", SECTIONS["applypriority"], (), (
        QualGroup("space", ("global",)), QualGroup("priority", ("L2::evict_normal",), required=True))),
    FormSpec("discard", SECTIONS["discard"], (), (
        QualGroup("space", ("global",)), QualGroup("level", ("L2",), required=True))))


@dataclass(frozen=True)
class CreatePolicyForm:
    """A checked createpolicy: ``mode`` ('fractional' | 'range' | 'cvt'), the priorities (names without ``L2::``;
    ``secondary`` defaults to 'evict_unchanged'), the destination and the mode's operands (``fraction``: None when
    omitted, i.e. 1.0)."""

    mode: str
    primary: str | None
    secondary: str | None
    dst: object
    fraction: object = None
    addr: object = None
    primary_size: object = None
    total_size: object = None
    prop: object = None


def _reg64(ins, op, info, what: str, allow_imm: bool = False) -> None:
    if allow_imm and isinstance(op, ir.Imm) and op.kind == "int":
        return
    if not isinstance(op, ir.Reg):
        raise VerifyError(f"{ins.full_opcode}: {what} {op} must be a 64-bit register", ins.loc)
    t = info.reg_type(op) if info is not None else None
    if t is not None and (t == "pred" or ir.TYPE_SIZES.get(t) != 8):
        raise VerifyError(f"{ins.full_opcode}: {what} {op} is .{t}; it must be a 64-bit register", ins.loc,
                          expected="a .b64 register (ptxas: \"Arguments mismatch\")")


def _reg32_or_imm(ins, op, info, what: str) -> None:
    if isinstance(op, ir.Imm):
        if op.kind != "int" or not 0 <= int(op.value) <= 0xFFFFFFFF:
            raise VerifyError(f"{ins.full_opcode}: {what} {op} must be a 32-bit unsigned integer", ins.loc)
        return
    if not isinstance(op, ir.Reg):
        raise VerifyError(f"{ins.full_opcode}: {what} {op} must be a 32-bit register or an integer", ins.loc)
    t = info.reg_type(op) if info is not None else None
    if t is not None and (t == "pred" or ir.TYPE_SIZES.get(t) != 4):
        raise VerifyError(f"{ins.full_opcode}: {what} {op} is .{t}; it must be a 32-bit register", ins.loc)


def parse_createpolicy(ins: ir.Instruction, info=None) -> CreatePolicyForm:
    """The checked form of a ``createpolicy`` (module docstring)."""
    name = ins.full_opcode
    mode = level = space = typ = None
    prios: list = []
    for m in ins.mods:
        if m in ("fractional", "range", "cvt") and mode is None:
            mode = m
        elif m == "global" and space is None:
            space = m
        elif m == "L2" and level is None:
            level = m
        elif m in PRIMARY and len(prios) < 2:
            prios.append(m)
        elif m == "b64" and typ is None:
            typ = m
        elif m in ("u64", "s64", "b32", "u32"):
            raise VerifyError(f"{name}: createpolicy makes a .b64 policy, not .{m}", ins.loc, expected=".b64")
        else:
            raise VerifyError(f"{name}: unexpected qualifier .{m}", ins.loc,
                              expected=f"createpolicy.{{fractional|range|cvt}}... ({SECTIONS['createpolicy']})")
    if mode is None or typ is None:
        raise VerifyError(f"{name} needs a mode (.fractional, .range or .cvt) and the type .b64", ins.loc)
    ops = list(ins.operands)
    if mode == "cvt":
        if level is None or prios or space is not None:
            raise VerifyError(f"{name}: createpolicy.cvt is spelled createpolicy.cvt.L2.b64", ins.loc)
        if len(ops) != 2:
            raise VerifyError(f"{name} takes policy, access-property", ins.loc)
        _reg64(ins, ops[0], info, "the destination")
        _reg64(ins, ops[1], info, "the access property", allow_imm=True)
        return CreatePolicyForm("cvt", None, None, ops[0], prop=ops[1])
    if level is not None or not prios:
        raise VerifyError(f"{name}: createpolicy.{mode} needs a primary priority .L2::evict_*", ins.loc,
                          expected="." + " / .".join(PRIMARY))
    if len(prios) == 2 and prios[1] not in SECONDARY:
        raise VerifyError(f"{name}: .{prios[1]} cannot be the secondary priority", ins.loc,
                          expected=".L2::evict_first or .L2::evict_unchanged")
    primary = prios[0].split("::")[1]
    secondary = prios[1].split("::")[1] if len(prios) == 2 else "evict_unchanged"
    if mode == "fractional":
        if space is not None:
            raise VerifyError(f"{name}: createpolicy.fractional takes no state space", ins.loc)
        if len(ops) not in (1, 2):
            raise VerifyError(f"{name} takes policy{{, fraction}}", ins.loc)
        _reg64(ins, ops[0], info, "the destination")
        frac = ops[1] if len(ops) == 2 else None
        if isinstance(frac, ir.Imm):
            v = float(frac.value)
            if not 0.0 < v <= 1.0:
                raise VerifyError(f"{name}: the fraction {v} is out of range (0, 1]", ins.loc,
                                  expected="a fraction in (0.0, 1.0]")
        elif frac is not None:
            t = info.reg_type(frac) if info is not None and isinstance(frac, ir.Reg) else None
            if not isinstance(frac, ir.Reg) or (t is not None and t not in ("f32", "b32")):
                raise VerifyError(f"{name}: the fraction {frac} must be an .f32 register or a constant", ins.loc)
        return CreatePolicyForm("fractional", primary, secondary, ops[0], fraction=frac)
    if len(ops) != 4 or not isinstance(ops[1], ir.Address):
        raise VerifyError(f"{name} takes policy, [a], primary-size, total-size", ins.loc)
    _reg64(ins, ops[0], info, "the destination")
    _reg32_or_imm(ins, ops[2], info, "primary-size")
    _reg32_or_imm(ins, ops[3], info, "total-size")
    if isinstance(ops[2], ir.Imm) and isinstance(ops[3], ir.Imm) and int(ops[2].value) > int(ops[3].value):
        raise VerifyError(f"{name}: primary-size {ops[2].value} exceeds total-size {ops[3].value}", ins.loc,
                          expected="primary-size <= total-size")
    return CreatePolicyForm("range", primary, secondary, ops[0], addr=ops[1], primary_size=ops[2],
                            total_size=ops[3])


def check_policy_operand(ins: ir.Instruction, op, info) -> None:
    """The cache-policy operand of an ``.L2::cache_hint`` form (ld, st, atom, red, cp.async, cp.async.bulk
    {.tensor,.prefetch}): a 64-bit register (what createpolicy writes) or an integer constant; ptxas rejects a
    32-bit register ("Arguments mismatch")."""
    if op is None or (isinstance(op, ir.Imm) and op.kind == "int"):
        return
    if not isinstance(op, ir.Reg):
        raise VerifyError(f"{ins.full_opcode}: the cache-policy operand {op} is not a register", ins.loc,
                          expected="a .b64 register made by createpolicy")
    t = info.reg_type(op) if info is not None else None
    if t is not None and (t == "pred" or ir.TYPE_SIZES.get(t) != 8):
        raise VerifyError(f"{ins.full_opcode}: the cache-policy operand {op} is .{t}; it must be a 64-bit register",
                          ins.loc, expected="a .b64 register made by createpolicy (ptxas: \"Arguments mismatch\")")


def parse_hint_range(ins: ir.Instruction) -> ir.Address:
    """``applypriority{.global}.L2::evict_normal [a], 128`` / ``discard{.global}.L2 [a], 128``: the address."""
    name = ins.full_opcode
    want = "L2::evict_normal" if ins.opcode == "applypriority" else "L2"
    mods = list(ins.mods)
    if want not in mods or any(m not in (want, "global") for m in mods) or len(set(mods)) != len(mods):
        raise VerifyError(f"{name}: expected {ins.opcode}{{.global}}.{want}", ins.loc,
                          expected=f"{ins.opcode}.global.{want} [a], 128 ({SECTIONS[ins.opcode]})")
    ops = list(ins.operands)
    if len(ops) != 2 or not isinstance(ops[0], ir.Address):
        raise VerifyError(f"{name} takes [a], 128", ins.loc)
    if not (isinstance(ops[1], ir.Imm) and ops[1].kind == "int" and int(ops[1].value) == 128):
        raise VerifyError(f"{name}: the size must be the constant 128, got {ops[1]}", ins.loc,
                          expected="128 (one L2 cache line)")
    return ops[0]


# ----------------------------------------------------------------------------------------- the policy value
#: the 2-bit code of a primary priority in the policy value (measured on the H100)
PRIORITY_CODE = {"evict_unchanged": 0, "evict_first": 1, "evict_last": 2, "evict_normal": 3}


def fraction_code(fraction: float) -> int:
    """The 4-bit fraction field: ``ceil(16 * fraction) - 1`` for a fraction in (0, 1] (an f32; 16 * f is exact),
    i.e. the fraction rounded up to sixteenths."""
    return math.ceil(float(fraction) * 16.0) - 1


def encode_policy(mode: str, primary: str | None = None, secondary: str | None = None, *, fraction: float = 1.0,
                  addr: int = 0, primary_size: int = 0, total_size: int = 0, prop: int = 0) -> int:
    """The 64-bit cache-policy value an H100 (sm_90) writes for a createpolicy, as measured by
    ``python -m calib.probes.hopper_misc record`` (``tests/hw/golden_h100/hopper_misc.json``: 64 fractions x 12
    priority pairs, 64 address/size triples x 12 pairs, 64 access properties; every value reproduced)::

        bit 60        1
        bit 59        1 for .range
        bits 57-58    primary priority: unchanged 0, first 1, last 2, normal 3
        bit 56        secondary priority is evict_first (the default, evict_unchanged, is 0)
      .fractional:
        bits 52-55    ceil(16 * fraction) - 1
      .range (G = 2^(12 + E) bytes, the smallest granule >= 4 KiB of which 128 cover total-size):
        bits 52-55    E = max(0, ceil(log2(total-size)) - 19)
        bits 44-50    (a >> (12 + E)) & 0x7f
        bits 37-43    the number of granules the primary range [a, a + primary-size) touches, modulo 128
                      (ceil(((a mod G) + primary-size) / G), 0 when primary-size is 0)
        a total-size of 0 gives bits 59-60 only (seen for a = 0)
      .cvt:           the access property itself (64 random values and the edge values came back unchanged)

    CUTLASS's ``CacheHintSm90`` constants agree where they overlap: EVICT_FIRST 0x12F0000000000000 and EVICT_LAST
    0x14F0000000000000 are the fraction-1.0 policies of evict_first / evict_last (its EVICT_NORMAL,
    0x1000000000000000, is the evict_unchanged one; evict_normal is 0x16F0000000000000)."""
    if mode == "cvt":
        return int(prop) & ((1 << 64) - 1)
    sec = 1 if secondary == "evict_first" else 0
    head = (1 << 60) | (PRIORITY_CODE[primary] << 57) | (sec << 56)
    if mode == "fractional":
        return head | (fraction_code(fraction) << 52)
    if total_size == 0:
        return (1 << 60) | (1 << 59)
    e = max(0, math.ceil(math.log2(total_size)) - 19) if total_size > 1 else 0
    g = 1 << (12 + e)
    n = -(-((addr % g) + primary_size) // g) if primary_size else 0
    return (head | (1 << 59) | (e << 52) | (((addr >> (12 + e)) & 0x7F) << 44) | ((n & 0x7F) << 37))


__all__ = ["SECTIONS", "PRIMARY", "SECONDARY", "SPECS", "CreatePolicyForm", "parse_createpolicy",
           "parse_hint_range", "check_policy_operand", "encode_policy", "fraction_code", "PRIORITY_CODE"]
