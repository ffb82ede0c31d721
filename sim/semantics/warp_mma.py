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

Operand checks at decode (:mod:`tcsim.isa.mma_sync_forms`, which parses and checks the form): four brace vectors
d, a, b, c with the register counts of the form (VerifyError naming the expected count), each element a 32-bit
register (c may also hold immediates).

Not supported (UnsupportedError at decode, naming the form): m8n8k4, m8n8k16, m8n8k32, m16n8k4, m16n8k64,
m8n8k128/m16n8k128/m16n8k256 (.b1), f64, s4/u4, sparse ``mma.sp``, ``.kind::*``, ``.block_scale``, the
fp6/fp4 types (sm_120a only), and any target other than sm_90*/sm_100* (no tensor-core numerics table).
"""
from __future__ import annotations

import re

import numpy as np

from tcsim.isa import fragments as FR
from tcsim.isa import ir
from tcsim.isa.errors import SyncError, UnsupportedError
from tcsim.isa.mma_sync_forms import parse_mma_sync
from ..numerics.tensor_core import mma_float, mma_int, tc_params
from .registry import semantics


def _tc_arch(arch: str) -> str | None:
    """The tensor-core parameter table's arch for a module target (sm_90/sm_90a -> 'sm_90a'...)."""
    a = arch or ""
    if re.fullmatch(r"sm_90a?", a):
        return "sm_90a"
    if re.fullmatch(r"sm_10[03][af]?", a):
        return "sm_100a"
    return None


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
    form = parse_mma_sync(ins, info)
    full = ins.full_opcode
    LD, LA, LB, LC = form.layouts()
    d, a, b, c = form.d, form.a, form.b, form.c
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
