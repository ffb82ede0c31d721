"""Forms of the warp-level matrix multiply-accumulate ``mma.sync.aligned`` (qualifiers, types and operands).

PTX ISA 9.1 §9.7.14.5.14 mma (fragments §9.7.14.5.7-10).  Accepted (all ``.row.col``; register counts d, a, b, c):

* ``m16n8k8  .f32.f16.f16.f32`` (4, 2, 1, 4), ``.f16.f16.f16.f16`` (2, 2, 1, 2), ``.f32.bf16.bf16.f32``
  (4, 2, 1, 4), ``.f32.tf32.tf32.f32`` (4, 4, 2, 4)
* ``m16n8k16 .f32.f16.f16.f32`` (4, 4, 2, 4), ``.f16.f16.f16.f16`` (2, 4, 2, 2), ``.f32.bf16.bf16.f32``
  (4, 4, 2, 4)
* ``m16n8k32 / m16n8k16 .{f32,f16}.{e4m3,e5m2}.{e4m3,e5m2}.{f32,f16}``
* ``m16n8k16 / m16n8k32 {.satfinite}.s32.{s8,u8}.{s8,u8}.s32``

Operands: four brace vectors d, a, b, c with the register counts of the form (VerifyError naming the expected
count), each element a 32-bit register (c may also hold immediates).  Not supported (UnsupportedError naming
the form): the other PTX shapes, f64, s4/u4, b1, sparse ``mma.sp``, ``.kind::*``, ``.block_scale`` and the
fp6/fp4 types.  The execution is ``tcsim.semantics.warp_mma``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import fragments as FR
from . import ir
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup, b32_vector

SECTION = "PTX ISA §9.7.14.5.14"

_SHAPE_RE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")
#: shapes PTX defines for mma.sync (any of them not in isa.fragments.MMA_SHAPES is unsupported here)
_PTX_SHAPES = {"m8n8k4", "m8n8k16", "m8n8k32", "m8n8k128", "m16n8k4", "m16n8k8", "m16n8k16", "m16n8k32",
               "m16n8k64", "m16n8k128", "m16n8k256"}
_ELEM_TYPES = {"f16", "bf16", "tf32", "f32", "f64", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "s8", "u8",
               "s4", "u4", "b1", "s32"}
_FP8 = ("e4m3", "e5m2")
_I8 = ("s8", "u8")
_UNSUPPORTED_QUALS = ("sp", "sp::ordered_metadata", "block_scale", "xor", "and", "popc", "rn", "rz", "rm",
                      "rp")


@dataclass(frozen=True)
class MmaSyncForm:
    """A checked mma.sync form: shape, the four types, the fragment layouts of d, a, b, c and (from
    :func:`parse_mma_sync`) the operand vectors ``d``, ``a``, ``b``, ``c``."""

    shape: str
    dtype: str
    atype: str
    btype: str
    ctype: str
    satfinite: bool
    d: tuple = ()
    a: tuple = ()
    b: tuple = ()
    c: tuple = ()

    @property
    def integer(self) -> bool:
        return self.atype in _I8

    @property
    def text(self) -> str:
        sat = ".satfinite" if self.satfinite else ""
        return f"mma.sync.aligned.{self.shape}.row.col{sat}.{self.dtype}.{self.atype}.{self.btype}.{self.ctype}"

    def layouts(self):
        return (FR.mma_layout(self.shape, "D", self.dtype), FR.mma_layout(self.shape, "A", self.atype),
                FR.mma_layout(self.shape, "B", self.btype), FR.mma_layout(self.shape, "C", self.ctype))


def _qualifiers(ins: ir.Instruction) -> MmaSyncForm:
    """Validate the qualifiers of an ``mma`` instruction; return its form or raise Verify/UnsupportedError."""
    full = ins.full_opcode
    mods = list(ins.mods)
    for m in mods:
        if m in _UNSUPPORTED_QUALS or m.startswith(("kind::", "scale_vec::", "sp::")):
            raise UnsupportedError(f"{full}: the .{m} form of mma is not supported by tcsim", ins.loc,
                                   expected="a dense mma.sync form listed in sim/semantics/warp_mma.py")
    if "sync" not in mods or "aligned" not in mods:
        raise VerifyError(f"{full}: mma requires the .sync and .aligned qualifiers", ins.loc)
    shapes = [m for m in mods if _SHAPE_RE.match(m)]
    if len(shapes) != 1:
        raise VerifyError(f"{full}: mma needs exactly one shape qualifier (e.g. .m16n8k16)", ins.loc)
    shape = shapes[0]
    if shape not in _PTX_SHAPES:
        raise VerifyError(f"{full}: .{shape} is not an mma.sync shape", ins.loc,
                          expected="one of " + ", ".join(sorted(_PTX_SHAPES)))
    layouts = [m for m in mods if m in ("row", "col")]
    types = [m for m in mods if m in _ELEM_TYPES]
    satfinite = "satfinite" in mods
    known = {"sync", "aligned", "row", "col", "satfinite", shape} | _ELEM_TYPES
    extra = [m for m in mods if m not in known]
    if extra:
        raise VerifyError(f"{full}: unknown qualifier(s) " + ", ".join("." + m for m in extra), ins.loc)
    if shape not in FR.MMA_SHAPES:
        raise UnsupportedError(f"{full}: mma shape .{shape} is not supported by tcsim", ins.loc,
                               expected="mma.sync .m16n8k8, .m16n8k16 or .m16n8k32")
    if len(types) != 4:
        raise VerifyError(f"{full}: mma needs four type qualifiers .dtype.atype.btype.ctype, got "
                          f"{len(types)}", ins.loc)
    dtype, atype, btype, ctype = types
    if layouts != ["row", "col"]:
        raise VerifyError(f"{full}: mma .{shape} requires the .row.col layouts", ins.loc)
    form = MmaSyncForm(shape, dtype, atype, btype, ctype, satfinite)
    for t in (atype, btype):
        if t in ("f64", "s4", "u4", "b1", "e3m2", "e2m3", "e2m1"):
            raise UnsupportedError(f"{full}: mma with .{t} operands is not supported by tcsim", ins.loc)
    _check_types(form, full, ins.loc)
    return form


def _check_types(f: MmaSyncForm, full: str, loc) -> None:
    def bad(why):
        raise VerifyError(f"{full}: {why}", loc)

    if f.atype in _I8 or f.btype in _I8:
        if not (f.atype in _I8 and f.btype in _I8):
            bad("integer mma needs .s8/.u8 for both A and B")
        if f.shape == "m16n8k8":
            bad("integer mma takes .m16n8k16 or .m16n8k32, not .m16n8k8")
        if f.dtype != "s32" or f.ctype != "s32":
            bad("integer mma needs .s32 for D and C")
        return
    if f.satfinite:
        bad(".satfinite applies to integer mma only")
    if f.dtype != f.ctype:
        bad(f".dtype (.{f.dtype}) must be the same as .ctype (.{f.ctype}) for .{f.shape}")
    if f.atype in _FP8 or f.btype in _FP8:
        if not (f.atype in _FP8 and f.btype in _FP8):
            bad("fp8 mma needs .e4m3/.e5m2 for both A and B")
        if f.shape == "m16n8k8":
            bad("fp8 mma takes .m16n8k16 or .m16n8k32, not .m16n8k8")
        if f.dtype not in ("f32", "f16"):
            bad("fp8 mma accumulates in .f32 or .f16")
        return
    if f.atype != f.btype:
        bad(f".atype (.{f.atype}) and .btype (.{f.btype}) must be the same")
    if f.shape == "m16n8k32":
        bad(f".m16n8k32 does not take .{f.atype} operands")
    if f.atype == "f16":
        if f.dtype not in ("f16", "f32"):
            bad(".f16 mma accumulates in .f16 or .f32")
    elif f.atype == "bf16":
        if f.dtype != "f32":
            bad(".bf16 mma accumulates in .f32 only")
    elif f.atype == "tf32":
        if f.shape != "m16n8k8":
            bad(".tf32 mma takes .m16n8k8 (or .m16n8k4) only")
        if f.dtype != "f32":
            bad(".tf32 mma accumulates in .f32 only")
    else:
        bad(f"mma does not take .{f.atype} operands")


def parse_mma_sync(ins: ir.Instruction, info) -> MmaSyncForm:
    """The checked form of an ``mma`` instruction: qualifiers, types and the d, a, b, c operand vectors."""
    form = _qualifiers(ins)
    full = ins.full_opcode
    if len(ins.operands) != 4:
        raise VerifyError(f"{full}: mma takes four operands d, a, b, c; got {len(ins.operands)}", ins.loc)
    LD, LA, LB, LC = form.layouts()
    d = b32_vector(ins.operands[0], LD.nregs, "d", full, info, ins.loc)
    a = b32_vector(ins.operands[1], LA.nregs, "a", full, info, ins.loc)
    b = b32_vector(ins.operands[2], LB.nregs, "b", full, info, ins.loc)
    c = b32_vector(ins.operands[3], LC.nregs, "c", full, info, ins.loc, allow_imm=True)
    return MmaSyncForm(form.shape, form.dtype, form.atype, form.btype, form.ctype, form.satfinite, d, a, b, c)


GROUPS = (QualGroup("sync", ("sync",), required=True), QualGroup("aligned", ("aligned",), required=True),
          QualGroup("shape", tuple(s for s in sorted(_PTX_SHAPES) if s in FR.MMA_SHAPES), required=True),
          QualGroup("alayout", ("row",), required=True), QualGroup("blayout", ("col",), required=True),
          QualGroup("satfinite", ("satfinite",)),
          QualGroup("dtype", ("f16", "f32", "s32"), required=True),
          QualGroup("atype", ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"), required=True),
          QualGroup("btype", ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"), required=True),
          QualGroup("ctype", ("f16", "f32", "s32"), required=True))
SPEC = FormSpec("mma", SECTION, (), GROUPS)

__all__ = ["SECTION", "SPEC", "MmaSyncForm", "parse_mma_sync"]
