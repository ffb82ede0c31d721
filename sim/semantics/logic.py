"""Logic and shift instructions: and or xor not cnot lop3 shl shr shf prmt.

PTX ISA 9.1 §9.7.7 (logic and shift instructions) and §9.7.9.7 prmt (byte permute, listed with data
movement in the ISA but a pure ALU operation).  ``and/or/xor/not`` also work on ``.pred`` operands
(predicate logic, with ``!p`` negated sources).

Shift amounts are unsigned 32-bit values; amounts of the type width or more give 0 (``shl``, unsigned
``shr``) or the replicated sign bit (``shr.s*``), as PTX specifies ("shift amounts greater than the register
width N are clamped to N").

``lop3`` immLut is an integer constant; only its low 8 bits matter (ptxas accepts 256 and larger).

Qualifiers and operands are parsed and checked by :func:`tcsim.isa.alu_forms.parse_logic` (a frozen
:class:`~tcsim.isa.alu_forms.LogicForm`); this module builds the execution.

Not supported: nothing of §9.7.7 is left out.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.alu_forms import parse_logic
from .misc_alu import bool_op
from .registry import semantics

_U = {"b16": np.uint16, "b32": np.uint32, "b64": np.uint64, "u16": np.uint16, "u32": np.uint32,
      "u64": np.uint64, "s16": np.uint16, "s32": np.uint32, "s64": np.uint64}
_NB = {"16": 16, "32": 32, "64": 64}


def _bits(x: np.ndarray, t: str) -> np.ndarray:
    return x.view(_U[t]) if x.dtype != _U[t] else x


@semantics("and", "or", "xor")
def decode_and_or_xor(ins, info):
    """PTX ISA 9.1 §9.7.7.1 and, §9.7.7.2 or, §9.7.7.3 xor (bitwise on .b16/.b32/.b64, logical on .pred)."""
    form = parse_logic(ins, info)
    t = form.type
    d, (a, b) = form.dst, form.srcs
    f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[ins.opcode]
    if t == "pred":
        def run(ctx):
            ctx.write_pred(d, f(ctx.read_pred(a), ctx.read_pred(b)))
        return run

    def run(ctx):
        ctx.write(d, t, f(ctx.read(a, t), ctx.read(b, t)))
    return run


@semantics("not")
def decode_not(ins, info):
    """PTX ISA 9.1 §9.7.7.4 not: bitwise / logical negation."""
    form = parse_logic(ins, info)
    t = form.type
    d, (a,) = form.dst, form.srcs
    if t == "pred":
        def run(ctx):
            ctx.write_pred(d, ~ctx.read_pred(a))
        return run

    def run(ctx):
        ctx.write(d, t, ~ctx.read(a, t))
    return run


@semantics("cnot")
def decode_cnot(ins, info):
    """PTX ISA 9.1 §9.7.7.5 cnot: C logical not, ``d = (a == 0) ? 1 : 0``."""
    form = parse_logic(ins, info)
    t = form.type
    d, (a,) = form.dst, form.srcs

    def run(ctx):
        ctx.write(d, t, (ctx.read(a, t) == 0).astype(_U[t]))
    return run


def lop3_eval(a: np.ndarray, b: np.ndarray, c: np.ndarray, lut: int) -> np.ndarray:
    """The three-input function whose truth table is ``lut`` (bit index = 4*a + 2*b + c), bitwise."""
    out = np.zeros_like(a)
    for i in range(8):
        if (lut >> i) & 1:
            term = (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
            out |= term
    return out


@semantics("lop3")
def decode_lop3(ins, info):
    """PTX ISA 9.1 §9.7.7.6 lop3: arbitrary three-input logic from an 8-bit truth table; the
    ``lop3.{or,and}.b32 d|p, a, b, c, immLut, q`` form also computes ``p = (d != 0) BoolOp q``."""
    form = parse_logic(ins, info)
    boolop, d, p, q, lut = form.boolop, form.dst, form.pdst, form.pred_src, form.lut
    a, b, c = form.srcs

    def run(ctx):
        r = lop3_eval(ctx.read(a, "b32"), ctx.read(b, "b32"), ctx.read(c, "b32"), lut)
        ctx.write(d, "b32", r)
        if p is not None:
            ctx.write_pred(p, bool_op(boolop, r != 0, ctx.read_pred(q)))
    return run


@semantics("shl", "shr")
def decode_shift(ins, info):
    """PTX ISA 9.1 §9.7.7.7 shl, §9.7.7.8 shr (``.s*`` arithmetic); the amount is .u32 and amounts >= the
    width clamp to the width.

    16-bit forms with an *immediate* amount: ptxas keeps only the immediate's low 16 bits (measured on the H100
    with ptxas 13.0, ``calib/probes`` group shift_imm: ``shl.b16 d, a, 0x10000`` returns a, ``0x10001`` shifts by
    one); register amounts clamp as the ISA says."""
    form = parse_logic(ins, info)
    t = form.type
    d, (a, b) = form.dst, form.srcs
    n = _NB[t[1:]]
    left = ins.opcode == "shl"
    arith = t[0] == "s"
    imm16 = n == 16 and isinstance(b, ir.Imm)

    def run(ctx):
        x = ctx.read(a, t)
        s = ctx.read(b, "u32").astype(np.int64)
        if imm16:
            s = s & 0xFFFF
        big = s >= n
        sc = np.minimum(s, n - 1)
        if arith:   # an amount >= n shifts by n-1: every bit becomes the sign
            r = (x >> sc.astype(x.dtype)).view(_U[t])
        else:
            u = _bits(x, t)
            sh = sc.astype(_U[t])
            r = np.where(big, _U[t](0), (u << sh) if left else (u >> sh)).astype(_U[t])
        ctx.write(d, t, r.view(x.dtype))
    return run


@semantics("shf")
def decode_shf(ins, info):
    """PTX ISA 9.1 §9.7.7.9 shf: funnel shift of the 64-bit value {b, a} (b high); ``.l`` returns the high
    word of the left shift, ``.r`` the low word of the right shift; the amount is ``min(c, 32)`` (.clamp)
    or ``c & 31`` (.wrap)."""
    form = parse_logic(ins, info)
    direction, mode = form.direction, form.mode
    d, (a, b, c) = form.dst, form.srcs

    def run(ctx):
        lo = ctx.read(a, "b32").astype(np.uint64)
        hi = ctx.read(b, "b32").astype(np.uint64)
        cv = ctx.read(c, "u32").astype(np.uint64)
        sh = np.minimum(cv, np.uint64(32)) if mode == "clamp" else cv & np.uint64(31)
        v = (hi << np.uint64(32)) | lo
        if direction == "l":
            r = np.where(sh == 32, lo, ((v << sh) >> np.uint64(32)))
        else:
            r = np.where(sh == 32, hi, (v >> sh))
        ctx.write(d, "b32", (r & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    return run


#: byte selectors of the specialised prmt modes, indexed [mode][c & 3] -> source byte of d.b0..d.b3
PRMT_MODES = {
    "f4e": ((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)),
    "b4e": ((0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)),
    "rc16": ((0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)),
}


def prmt_eval(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str | None) -> np.ndarray:
    """Byte permute of {b, a} (bytes 0..7) under control c (PTX ISA §9.7.9.7)."""
    src = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
    cu = c.astype(np.uint64)
    out = np.zeros(a.shape, np.uint64)
    for k in range(4):
        if mode is None:
            ctl = (cu >> np.uint64(4 * k)) & np.uint64(0xF)
            sel = ctl & np.uint64(7)
            byte = (src >> (sel * np.uint64(8))) & np.uint64(0xFF)
            sign = (byte >> np.uint64(7)) & np.uint64(1)
            byte = np.where((ctl & np.uint64(8)) != 0, sign * np.uint64(0xFF), byte)
        else:
            table = np.array([PRMT_MODES[mode][j][k] for j in range(4)], dtype=np.uint64)
            sel = table[(cu & np.uint64(3)).astype(np.int64)]
            byte = (src >> (sel * np.uint64(8))) & np.uint64(0xFF)
        out |= byte << np.uint64(8 * k)
    return out.astype(np.uint32)


@semantics("prmt")
def decode_prmt(ins, info):
    """PTX ISA 9.1 §9.7.9.7 prmt: pick four bytes of {b, a}; generic form with 4-bit selectors (bit 3:
    replicate the byte's sign), or the ``.f4e .b4e .rc8 .ecl .ecr .rc16`` modes on ``c & 3``."""
    form = parse_logic(ins, info)
    mode = form.mode
    d, (a, b, c) = form.dst, form.srcs

    def run(ctx):
        ctx.write(d, "b32", prmt_eval(ctx.read(a, "b32"), ctx.read(b, "b32"), ctx.read(c, "b32"), mode))
    return run
