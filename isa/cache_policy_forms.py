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
H100 produces (``tests/hw/golden_h100/createpolicy.json``).  The execution is ``tcsim.semantics.cache_policy``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
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
            if not isinstance(frac, ir.Reg) or (t is not None and t != "f32"):
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
def encode_policy(mode: str, primary: str | None = None, secondary: str | None = None, *, fraction: float = 1.0,
                  addr: int = 0, primary_size: int = 0, total_size: int = 0, prop: int = 0) -> int:
    """The 64-bit cache-policy value the H100 writes for a createpolicy (see ``POLICY_MODEL``)."""
    return POLICY_MODEL.encode(mode, primary, secondary, fraction=fraction, addr=addr, primary_size=primary_size,
                               total_size=total_size, prop=prop)


class _PolicyModel:
    """The encoding of createpolicy's result on sm_90 (the H100).  Known publicly: with fraction 1.0 and the
    default secondary, evict_normal / evict_first / evict_last give 0x1000000000000000 / 0x12F0000000000000 /
    0x14F0000000000000 (CUTLASS's ``CacheHintSm90``).  Forms outside what was measured raise
    :class:`UnsupportedError`."""

    KNOWN = {("fractional", "evict_normal", "evict_unchanged", 1.0): 0x1000000000000000,
             ("fractional", "evict_first", "evict_unchanged", 1.0): 0x12F0000000000000,
             ("fractional", "evict_last", "evict_unchanged", 1.0): 0x14F0000000000000}

    def encode(self, mode, primary, secondary, *, fraction=1.0, addr=0, primary_size=0, total_size=0,
               prop=0) -> int:
        v = self.KNOWN.get((mode, primary, secondary, float(fraction)))
        if v is None:
            raise UnsupportedError(f"createpolicy.{mode} {primary}/{secondary} fraction {fraction}: the policy "
                                   "value of this form has not been characterised on the GPU")
        return v


POLICY_MODEL = _PolicyModel()

__all__ = ["SECTIONS", "PRIMARY", "SECONDARY", "SPECS", "CreatePolicyForm", "parse_createpolicy",
           "parse_hint_range", "encode_policy"]
