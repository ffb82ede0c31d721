"""Warp-level matrix multiply-accumulate: ``mma.sync.aligned`` (PTX ISA 9.1 §9.7.14.5.14).

Supported forms (all ``.row.col``; A is M x K row-major, B is K x N column-major; register counts d, a, b, c):

* ``m16n8k8  .f32.f16.f16.f32`` (4, 2, 1, 4), ``.f16.f16.f16.f16`` (2, 2, 1, 2), ``.f32.bf16.bf16.f32``
  (4, 2, 1, 4), ``.f32.tf32.tf32.f32`` (4, 4, 2, 4)
* ``m16n8k16 .f32.f16.f16.f32`` (4, 4, 2, 4), ``.f16.f16.f16.f16`` (2, 4, 2, 2), ``.f32.bf16.bf16.f32``
  (4, 4, 2, 4)
* ``m16n8k32 .{f32,f16}.{e4m3,e5m2}.{e4m3,e5m2}.{f32,f16}`` (4|2, 4, 2, 4|2; sm_89+, f16 from PTX 8.7)
* ``m16n8k16 .{f32,f16}.{e4m3,e5m2}.{e4m3,e5m2}.{f32,f16}`` (4|2, 2, 1, 4|2; PTX 8.7)
* ``m16n8k16 / m16n8k32 {.satfinite}.s32.{s8,u8}.{s8,u8}.s32`` (4, 2, 1, 4 / 4, 4, 2, 4)

Execution: the fragments of A, B and C are gathered into dense bit matrices with the closed-form maps of
:mod:`tcsim.isa.fragments` (PTX ISA §9.7.14.5.7-10), the product is computed by the pure tensor-core model
:mod:`tcsim.numerics.tensor_core` (``mma_float`` with ``tc_params(arch, 'mma.sync', atype)``, or ``mma_int``),
and D is scattered back.  PTX leaves the float accumulation order, rounding and subnormal handling
unspecified; the model's documented choice (fused block, truncating alignment, per-arch table) is used.
The arch is the module's target (the engine's ``arch``, sm_90* -> 'sm_90a', sm_100*/sm_103* -> 'sm_100a').
The fp8 rows on both archs and tf32 on sm_100a are extrapolated in that table (numerics.md open question
4, ``tensor_core.provisional_reason``).
All sources are read before D is written, so D may alias C.

``.sync.aligned``: every lane of the warp must execute the instruction together (SyncError otherwise, also
when a lane of the warp has exited or the warp is partial -- PTX calls that undefined).

Operand checks at decode: four brace vectors d, a, b, c with the register counts of the form (VerifyError
naming the expected count), each element a 32-bit register (c may also hold immediates).

Not supported (UnsupportedError at decode, naming the form): m8n8k4, m8n8k16, m8n8k32, m16n8k4, m16n8k64,
m8n8k128/m16n8k128/m16n8k256 (.b1), f64, s4/u4, sparse ``mma.sp``, ``.kind::*``, ``.block_scale``, the
fp6/fp4 types (sm_120a only), and any target other than sm_90*/sm_100* (no tensor-core numerics table).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tcsim.isa import fragments as FR
from tcsim.isa import ir
from tcsim.isa.errors import SyncError, UnsupportedError, VerifyError
from ..numerics.tensor_core import mma_float, mma_int, tc_params
from ..ptxtypes import SIZE
from .registry import semantics

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
class MmaForm:
    """A checked mma.sync form: shape, the four types, and the fragment layouts of d, a, b, c."""

    shape: str
    dtype: str
    atype: str
    btype: str
    ctype: str
    satfinite: bool

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


def _tc_arch(arch: str) -> str | None:
    """The tensor-core parameter table's arch for a module target (sm_90/sm_90a -> 'sm_90a'...)."""
    a = arch or ""
    if re.fullmatch(r"sm_90a?", a):
        return "sm_90a"
    if re.fullmatch(r"sm_10[03][af]?", a):
        return "sm_100a"
    return None


def parse_form(ins: ir.Instruction) -> MmaForm:
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
    form = MmaForm(shape, dtype, atype, btype, ctype, satfinite)
    for t in (atype, btype):
        if t in ("f64", "s4", "u4", "b1", "e3m2", "e2m3", "e2m1"):
            raise UnsupportedError(f"{full}: mma with .{t} operands is not supported by tcsim", ins.loc)
    _check_types(form, full, ins.loc)
    return form


def _check_types(f: MmaForm, full: str, loc) -> None:
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


def _check_vector(op, n: int, what: str, full: str, info, loc, allow_imm=False) -> tuple:
    """Elements of a brace vector of exactly ``n`` 32-bit registers (VerifyError naming ``n`` otherwise)."""
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
        t = info.reg_type(e)
        if t is not None and (t == "pred" or SIZE.get(t) != 4):
            raise VerifyError(f"{full}: register {e} of operand {what} is .{t}; expected a 32-bit register",
                              loc)
    return tuple(elems)


def read_regs(ctx, elems) -> np.ndarray:
    """(len(elems), 32) uint32 raw bits of the registers of a vector operand."""
    return np.stack([np.asarray(ctx.read(e, "b32"), dtype=np.uint32) for e in elems])


def require_full_warp(ctx, what: str) -> None:
    """The .sync.aligned rule: every lane of the warp executes this instruction now (PTX ISA §9.7.14.5.14:
    undefined if a thread of the warp has exited or does not execute it)."""
    ctx.require_converged(what)
    if not ctx.mask.all():
        from ..context import lanes_str
        raise SyncError(f"{what} needs all 32 lanes of the warp, but {lanes_str(~ctx.mask)} are not executing "
                        f"it (exited, predicated off, or absent in a partial warp)",
                        expected="a full, converged warp")


@semantics("mma")
def decode_mma(ins: ir.Instruction, info):
    """PTX ISA 9.1 §9.7.14.5.14 mma (warp-level ``mma.sync.aligned``; fragments §9.7.14.5.7-10)."""
    form = parse_form(ins)
    full = ins.full_opcode
    if len(ins.operands) != 4:
        raise VerifyError(f"{full}: mma takes four operands d, a, b, c; got {len(ins.operands)}", ins.loc)
    LD, LA, LB, LC = form.layouts()
    d = _check_vector(ins.operands[0], LD.nregs, "d", full, info, ins.loc)
    a = _check_vector(ins.operands[1], LA.nregs, "a", full, info, ins.loc)
    b = _check_vector(ins.operands[2], LB.nregs, "b", full, info, ins.loc)
    c = _check_vector(ins.operands[3], LC.nregs, "c", full, info, ins.loc, allow_imm=True)
    what = form.text

    if form.integer:
        a_signed, b_signed, sat = form.atype == "s8", form.btype == "s8", form.satfinite

        def compute(A, B, C):
            return mma_int(A, B, C, a_signed, b_signed, sat).view(np.uint32)
    else:
        arch = _tc_arch(info.arch)
        if arch is None:
            raise UnsupportedError(f"{full}: no tensor-core numerics model for target {info.arch}", ins.loc,
                                   expected="a module targeting sm_90a or sm_100a")
        try:
            params = tc_params(arch, "mma.sync", form.atype)
        except ValueError as e:
            raise UnsupportedError(f"{full}: {e}", ins.loc) from None
        afmt, bfmt, acc = form.atype, form.btype, form.ctype

        def compute(A, B, C):
            return mma_float(A, B, C, afmt, bfmt, acc, params)

    def run(ctx):
        require_full_warp(ctx, what)
        A = FR.gather(LA, read_regs(ctx, a))
        B = FR.gather(LB, read_regs(ctx, b))
        C = FR.gather(LC, read_regs(ctx, c))
        D = compute(A, B, C)
        regs = FR.scatter(LD, D)
        for e, v in zip(d, regs):
            ctx.write(e, "b32", v)

    return run
