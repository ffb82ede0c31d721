"""Forms of the tcgen05 Tensor Memory instructions: alloc / dealloc / relinquish_alloc_permit, ld / st, wait, fence.

PTX ISA 9.1 §9.7.16.7.1 (tcgen05.alloc, tcgen05.dealloc, tcgen05.relinquish_alloc_permit), §9.7.16.8.3
(tcgen05.ld), §9.7.16.8.4 (tcgen05.st), §9.7.16.8.5 (tcgen05.wait), §9.7.16.11.1 (tcgen05.fence).  The forms are
checked at decode time (qualifiers, operand kinds and counts, the .cta_group of the kernel); the values (nCols in
a register, the TMEM address) are checked when the instruction runs (``tcsim.semantics.tcgen05_mem``).

Not supported (UnsupportedError): ``tcgen05.ld.red`` (sm_101a/sm_103 family only) and any qualifier not listed in
the groups below.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup, split_qualifiers
from .tcgen05_rules import check_uniform_cta_group

SECTION_ALLOC = "PTX ISA §9.7.16.7.1"
SECTION_LD, SECTION_ST, SECTION_WAIT = "PTX ISA §9.7.16.8.3", "PTX ISA §9.7.16.8.4", "PTX ISA §9.7.16.8.5"
SECTION_FENCE = "PTX ISA §9.7.16.11.1"

ALLOC_OPS = ("alloc", "dealloc", "relinquish_alloc_permit")
LDST_OPS = ("ld", "st")
WAIT_OPS = ("wait::ld", "wait::st")
FENCE_OPS = ("fence::before_thread_sync", "fence::after_thread_sync")
SUBOPS = ALLOC_OPS + LDST_OPS + WAIT_OPS + FENCE_OPS

#: shape -> (TMEM lanes touched, registers per unit of .num)
SHAPES = {"32x32b": (32, 1), "16x64b": (16, 1), "16x128b": (16, 2), "16x256b": (16, 4), "16x32bx2": (16, 1)}
NUMS = {f"x{n}": n for n in (1, 2, 4, 8, 16, 32, 64, 128)}
MAX_REGS = 128
TCGEN05_ARCHS = ("sm_100a", "sm_100f", "sm_101a", "sm_101f", "sm_103a", "sm_103f", "sm_110a", "sm_110f")

_CTA_GROUP = QualGroup("cta_group", ("cta_group::1", "cta_group::2"), required=True)
_SYNC = QualGroup("sync", ("sync",), required=True)
_ALIGNED = QualGroup("aligned", ("aligned",), required=True)
_ALIGNED_OPT = QualGroup("aligned", ("aligned",))          # ptxas accepts a missing .aligned on ld/st
_B32 = QualGroup("type", ("b32",), required=True)


def alloc_groups(op: str) -> tuple:
    groups = [_CTA_GROUP, _SYNC, _ALIGNED]
    if op == "alloc":
        groups.append(QualGroup("space", ("shared::cta",)))
    if op != "relinquish_alloc_permit":
        groups.append(_B32)
    return tuple(groups)


def ldst_groups(op: str) -> tuple:
    pack = "pack::16b" if op == "ld" else "unpack::16b"
    return (_SYNC, _ALIGNED_OPT, QualGroup("shape", tuple(SHAPES), required=True),
            QualGroup("num", tuple(NUMS), required=True), QualGroup("pack", (pack,)), _B32)


WAIT_GROUPS = (_SYNC, _ALIGNED)

SPECS = tuple(
    [FormSpec(f"tcgen05.{op}", SECTION_ALLOC, (op,), alloc_groups(op)) for op in ALLOC_OPS]
    + [FormSpec("tcgen05.ld", SECTION_LD, ("ld",), ldst_groups("ld")),
       FormSpec("tcgen05.st", SECTION_ST, ("st",), ldst_groups("st"))]
    + [FormSpec(f"tcgen05.{op}", SECTION_WAIT, (op,), WAIT_GROUPS) for op in WAIT_OPS]
    + [FormSpec(f"tcgen05.{op}", SECTION_FENCE, (op,), ()) for op in FENCE_OPS])


def _fail(ins, msg: str, expected: str | None = None):
    raise VerifyError(f"{ins.full_opcode}: {msg}", ins.loc, expected=expected)


def check_arch(ins: ir.Instruction, arch: str) -> None:
    if arch not in TCGEN05_ARCHS:
        raise VerifyError(f"{ins.full_opcode} requires an sm_100a-family target, but the module targets "
                          f"{arch}", ins.loc, expected=".target sm_100a (or sm_100f/sm_103a/sm_110a...)")


def _split(ins, groups) -> dict:
    return split_qualifiers(ins, groups, ins.mods[1:], f"tcgen05.{ins.mods[0]}", "§9.7.16")


def _reg32(ins, info, op, what: str) -> None:
    if not isinstance(op, ir.Reg):
        raise VerifyError(f"{ins.full_opcode}: {what} {op} must be a 32-bit register", ins.loc)
    t = info.reg_type(op) if info is not None else None
    if t is not None and (t == "pred" or ir.TYPE_SIZES.get(t) != 4):
        raise VerifyError(f"{ins.full_opcode}: {what} {op} is a .{t} register", ins.loc, expected="a 32-bit register")


# ---------------------------------------------------------------------------------- alloc / dealloc / relinquish
@dataclass(frozen=True)
class AllocForm:
    """A checked tcgen05.alloc / dealloc / relinquish_alloc_permit.  ``dst`` is alloc's [dst] address, ``taddr``
    dealloc's address operand, ``ncols`` the nCols operand (register or checked immediate)."""

    op: str
    cta_group: int
    has_space: bool
    dst: ir.Address | None = None
    taddr: object = None
    ncols: object = None


def _check_ncols_operand(ins, info, op, power_of_two: bool) -> None:
    if isinstance(op, ir.Imm):
        if op.kind != "int":
            _fail(ins, f"nCols {op} must be an integer")
        n = int(op.value)
        if power_of_two:     # ptxas: alloc immediates must be a power of two in [32, 512]
            if n < 32 or n > 512:
                _fail(ins, f"nCols {n} is out of range", expected="a power of two in [32, 512]")
            if n & (n - 1):
                _fail(ins, f"nCols {n} is not a power of two", expected="a power of two in [32, 512]")
        elif n % 32 or n <= 0:   # ptxas: dealloc immediates must be a multiple of 32
            _fail(ins, f"nCols {n} is not a positive multiple of 32", expected="a power of two in [32, 512]")
    else:
        _reg32(ins, info, op, "nCols")


def parse_alloc(ins: ir.Instruction, info) -> AllocForm:
    """``tcgen05.alloc.cta_group::N.sync.aligned{.shared::cta}.b32 [dst], nCols``,
    ``tcgen05.dealloc.cta_group::N.sync.aligned.b32 taddr, nCols``,
    ``tcgen05.relinquish_alloc_permit.cta_group::N.sync.aligned`` (PTX ISA 9.1 §9.7.16.7.1)."""
    check_arch(ins, info.arch)
    op = ins.mods[0]
    groups = alloc_groups(op)
    got = _split(ins, groups)
    for g in groups:
        if g.required and g.name not in got:
            raise VerifyError(f"{ins.full_opcode}: the .{'b32' if g.name == 'type' else g.name} qualifier is "
                              f"required", ins.loc, expected=f"tcgen05.{op}.cta_group::N.sync.aligned"
                                                             + (".b32" if op != "relinquish_alloc_permit" else ""))
    group = check_uniform_cta_group(ins, info.function)
    ops = ins.operands
    if op == "alloc":
        if len(ops) != 2 or not isinstance(ops[0], ir.Address) or ops[0].coords is not None:
            _fail(ins, "expects operands [dst], nCols")
        dst = ops[0]
        if isinstance(dst.base, ir.Reg):
            t = info.reg_type(dst.base)
            if t is not None and ir.TYPE_SIZES.get(t) not in (4, 8):
                _fail(ins, f"address register {dst.base} is .{t}")
            if "space" not in got and t is not None and ir.TYPE_SIZES.get(t) != 8:
                _fail(ins, f"a generic address needs a 64-bit register, not .{t} {dst.base}")
        _check_ncols_operand(ins, info, ops[1], power_of_two=True)
        return AllocForm(op, group, "space" in got, dst=dst, ncols=ops[1])
    if op == "dealloc":
        if len(ops) != 2 or isinstance(ops[0], ir.Address):
            _fail(ins, "expects operands taddr, nCols")
        if not isinstance(ops[0], ir.Imm):
            _reg32(ins, info, ops[0], "taddr")
        _check_ncols_operand(ins, info, ops[1], power_of_two=False)
        return AllocForm(op, group, False, taddr=ops[0], ncols=ops[1])
    if ops:
        _fail(ins, "takes no operands")
    return AllocForm(op, group, False)


# ---------------------------------------------------------------------------------- ld / st
@dataclass(frozen=True)
class LdStForm:
    """A checked tcgen05.ld / st: shape, .num (``num`` registers units, ``num_name`` its spelling), .pack::16b /
    .unpack::16b, the 16x32bx2 half-split offset, the register vector and the TMEM address operand."""

    op: str
    shape: str
    num: int
    num_name: str
    pack: bool
    half_split: int
    elems: tuple
    addr: ir.Address

    @property
    def nregs(self) -> int:
        return self.num * SHAPES[self.shape][1]

    @property
    def nlanes(self) -> int:
        return SHAPES[self.shape][0]

    @property
    def name(self) -> str:
        pack = ("pack::16b" if self.op == "ld" else "unpack::16b") if self.pack else None
        return f"tcgen05.{self.op}.{self.shape}.{self.num_name}" + (f".{pack}" if pack else "")


def parse_ldst(ins: ir.Instruction, info) -> LdStForm:
    """``tcgen05.ld.sync.aligned.shape.num{.pack::16b}.b32 {r...}, [taddr]{, immHalfSplitoff}`` and
    ``tcgen05.st.sync.aligned.shape.num{.unpack::16b}.b32 [taddr]{, immHalfSplitoff}, {r...}``
    (PTX ISA 9.1 §9.7.16.8.3, §9.7.16.8.4)."""
    check_arch(ins, info.arch)
    op = ins.mods[0]
    if op == "ld" and "red" in ins.mods:
        raise UnsupportedError(f"{ins.full_opcode}: tcgen05.ld.red is not supported (it exists only on the "
                               f"sm_101a/sm_103 family, not on sm_100a)", ins.loc)
    got = _split(ins, ldst_groups(op))
    # ptxas requires .sync, the shape, .num and .b32; it accepts a missing .aligned (treated as aligned).
    for need, text in (("sync", ".sync"), ("shape", "a shape (.32x32b/.16x64b/.16x128b/.16x256b/.16x32bx2)"),
                       ("num", "a .num (.x1 ... .x128)"), ("type", ".b32")):
        if need not in got:
            raise VerifyError(f"{ins.full_opcode}: {text} qualifier is required", ins.loc,
                              expected=f"tcgen05.{op}.sync.aligned.shape.num.b32")
    shape, num, pack = got["shape"], NUMS[got["num"]], "pack" in got
    nregs = num * SHAPES[shape][1]
    if nregs > MAX_REGS:
        raise VerifyError(f"{ins.full_opcode}: .{got['num']} is not allowed with shape .{shape} ({nregs} registers)",
                          ins.loc, expected=f"at most {MAX_REGS // SHAPES[shape][1]} for .{shape} (128 registers)")
    ops = list(ins.operands)
    split = shape == "16x32bx2"
    nops = 3 if split else 2
    if len(ops) != nops:
        _fail(ins, f"expects {nops} operands" + (" (the 16x32bx2 shape takes the immHalfSplitoff immediate)"
                                                 if split else ""))
    if op == "ld":
        vec, addr = ops[0], ops[1]
        off_op = ops[2] if split else None
    else:
        addr = ops[0]
        off_op = ops[1] if split else None
        vec = ops[-1]
    if not isinstance(addr, ir.Address) or addr.coords is not None or not isinstance(addr.base, ir.Reg):
        _fail(ins, f"the TMEM address {addr} must be [reg] or [reg+imm] with a 32-bit register")
    _reg32(ins, info, addr.base, "TMEM address register")
    off = 0
    if split:
        if not isinstance(off_op, ir.Imm) or off_op.kind != "int":
            _fail(ins, f"immHalfSplitoff {off_op} must be an integer immediate")
        off = int(off_op.value)
    elems = vec.elems if isinstance(vec, ir.Vector) else None
    if elems is None:
        _fail(ins, f"needs a vector of {nregs} .b32 registers, got {vec}",
              expected=f"{{...}} with {nregs} registers for .{shape}.{got['num']}")
    if len(elems) != nregs:
        _fail(ins, f"needs a vector of {nregs} .b32 registers for .{shape}.{got['num']}, got {len(elems)}",
              expected=f"exactly {nregs} registers")
    for e in elems:
        _reg32(ins, info, e, "vector element")
    return LdStForm(op, shape, num, got["num"], pack, off, tuple(elems), addr)


# ---------------------------------------------------------------------------------- wait / fence
def parse_wait(ins: ir.Instruction, info) -> str:
    """``tcgen05.wait::ld.sync.aligned`` / ``tcgen05.wait::st.sync.aligned`` (PTX ISA 9.1 §9.7.16.8.5); returns
    the sub-operation."""
    check_arch(ins, info.arch)
    op = ins.mods[0]
    got = _split(ins, WAIT_GROUPS)
    if len(got) != 2:
        raise VerifyError(f"{ins.full_opcode}: .sync.aligned is required", ins.loc,
                          expected=f"tcgen05.{op}.sync.aligned")
    if ins.operands:
        _fail(ins, "takes no operands")
    return op


def parse_fence(ins: ir.Instruction, info) -> str:
    """``tcgen05.fence::before_thread_sync`` / ``::after_thread_sync`` (PTX ISA 9.1 §9.7.16.11.1); returns
    ``'before_thread_sync'`` or ``'after_thread_sync'``."""
    check_arch(ins, info.arch)
    op = ins.mods[0]
    if len(ins.mods) != 1:
        raise VerifyError(f"{ins.full_opcode}: tcgen05.fence takes no other qualifier", ins.loc,
                          expected=f"tcgen05.{op}")
    if ins.operands:
        _fail(ins, "takes no operands")
    return op.split("::")[1]


__all__ = ["SUBOPS", "ALLOC_OPS", "LDST_OPS", "WAIT_OPS", "FENCE_OPS", "SHAPES", "NUMS", "MAX_REGS",
           "TCGEN05_ARCHS", "SPECS", "AllocForm", "LdStForm", "parse_alloc", "parse_ldst", "parse_wait",
           "parse_fence", "check_arch"]
