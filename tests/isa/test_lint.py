"""isa/lint.py: each note fires exactly on the construct it describes (the fuzz reproducers in
tests/fuzz_regressions check that each diagnosed finding is noted; these check the conditions both ways)."""
from __future__ import annotations

import pytest

from tcsim.cli import ptx_notes


def _kernel(body: str, arch: str = "sm_90a") -> str:
    return f"""
.version 8.5
.target {arch}
.address_size 64
.visible .entry k()
{{
    .reg .pred %p<2>;
    .reg .b16 %h<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
{body}
    ret;
}}
"""


def _noted_lines(body: str, arch: str = "sm_90a") -> list:
    text = _kernel(body, arch)
    lines = text.splitlines()
    return [lines[n.loc.line - 1].strip() for n in ptx_notes(text, "lint.ptx")]


@pytest.mark.parametrize("body, noted", [
    # predicated set with an .f32 destination; unguarded, or an integer destination, is fine
    ("@%p0 set.lt.f32.f32 %r0, %r1, %r2;", True),
    ("@!%p0 set.eq.ftz.f32.u32 %r0, %r1, %r2;", True),
    ("set.lt.f32.f32 %r0, %r1, %r2;", False),
    ("@%p0 set.lt.u32.f32 %r0, %r1, %r2;", False),
    # abs/neg of s16 only
    ("abs.s16 %h0, %h1;", True),
    ("neg.s16 %h0, %h1;", True),
    ("abs.s32 %r0, %r1;", True),        # int-sign-op-min (version 3's campaign)
    ("abs.s16x2 %r0, %r1;", False),
    # mad.hi accumulating into its destination; mad.lo or a distinct addend is fine
    ("mad.hi.u32 %r0, %r1, %r2, %r0;", True),
    ("mad.hi.cc.s32 %r0, %r1, %r2, %r0;", True),
    ("mad.hi.u32 %r0, %r1, %r2, %r3;", False),
    ("mad.lo.u32 %r0, %r1, %r2, %r0;", False),
    # 64-bit shift by a register last written by a float instruction
    ("sqrt.rn.f32 %r1, %r2;\n    shl.b64 %rd0, %rd1, %r1;", True),
    ("cvt.rzi.u32.f32 %r1, %r2;\n    shl.b64 %rd0, %rd1, %r1;", False),       # cvt to an integer type
    ("cvt.rn.f32.u32 %r1, %r2;\n    shr.s64 %rd0, %rd1, %r1;", True),        # cvt to a float type
    ("sqrt.rn.f32 %r1, %r2;\n    add.u32 %r1, %r1, 1;\n    shl.b64 %rd0, %rd1, %r1;", False),  # rewritten since
    ("sqrt.rn.f32 %r1, %r2;\n    shl.b32 %r0, %r3, %r1;", False),             # 32-bit shift
    ("shl.b64 %rd0, %rd1, 3;", False),
    # abs of a half pair whose source an f32 instruction wrote
    ("add.f32 %r1, %r2, %r3;\n    abs.bf16x2 %r0, %r1;", True),
    ("add.f16x2 %r1, %r2, %r3;\n    abs.f16x2 %r0, %r1;", False),
    # generator version 2's findings (generator V3_AVOIDS)
    # neg.f64 of a neg.f64 result
    ("neg.f64 %rd1, %rd0;\n    neg.f64 %rd2, %rd1;", True),
    ("neg.f64 %rd1, %rd0;\n    neg.f64 %rd2, %rd0;", False),
    # cvt to an integer of a 16-bit float a 16-bit-float cvt or min/max wrote
    ("cvt.rz.f16.bf16 %h0, %h0;\n    cvt.rzi.s16.f16 %h1, %h0;", True),
    ("min.ftz.f16 %h2, %h0, %h0;\n    cvt.rzi.s32.bf16 %r0, %h2;", True),
    ("cvt.rn.f16.f32 %h0, %r0;\n    cvt.rzi.s16.f16 %h1, %h0;", False),     # written from an f32
    ("cvt.rz.f16.bf16 %h0, %h0;\n    cvt.f32.f16 %r0, %h0;", False),         # to a float
    # a float instruction reading a cnot or add/sub.sat result
    ("cnot.b16 %h1, %h0;\n    cvt.rmi.sat.u8.f16 %h1, %h1;", True),
    ("sub.sat.s32 %r1, %r5, %r6;\n    min.f32 %r5, %r1, 0f7DBBB72B;", True),
    ("add.sat.s32 %r1, %r2, %r2;\n    cvt.rn.ftz.sat.f16.f32 %h2, %r1;", True),
    ("cnot.b16 %h1, %h0;\n    cvt.u32.u16 %r0, %h1;", False),                # an integer conversion
    ("add.s32 %r1, %r2, %r2;\n    min.f32 %r5, %r1, %r3;", False),           # no .sat
    # a 16-bit shift by a cvt.ftz result
    ("cvt.rpi.ftz.u32.f32 %r4, %r2;\n    shr.u16 %h1, %h3, %r4;", True),
    ("cvt.rpi.u32.f32 %r4, %r2;\n    shr.u16 %h1, %h3, %r4;", False),
    ("cvt.rpi.ftz.u32.f32 %r4, %r2;\n    shr.u32 %r1, %r3, %r4;", False),
    # half-pair arithmetic on a cvt.tf32 result
    ("cvt.rz.tf32.f32 %r1, %r2;\n    add.f16x2 %r3, %r0, %r1;", True),
    ("cvt.rn.f32.s32 %r1, %r2;\n    add.f16x2 %r3, %r0, %r1;", False),
    # a predicated mad.hi adding a carry-chain result
    ("add.cc.u32 %r1, %r2, %r3;\n    addc.u32 %r4, %r2, %r3;\n    @%p0 mad.hi.u32 %r0, %r5, %r5, %r4;", True),
    ("add.cc.u32 %r1, %r2, %r3;\n    addc.u32 %r4, %r2, %r3;\n    mad.hi.u32 %r0, %r5, %r5, %r4;", False),
    # div/rem.s16 of a float-to-s16 conversion
    ("cvt.rzi.s16.f32 %h0, %r1;\n    div.s16 %h2, %h0, %h3;", True),
    ("cvt.s16.s32 %h0, %r1;\n    div.s16 %h2, %h0, %h3;", False),
    # a 64-bit shift by >= 64 of a constant multiplication
    ("mul.lo.u64 %rd0, %rd2, 2;\n    shl.b64 %rd1, %rd0, 0xFFFFFFFF;", True),
    ("mul.lo.u64 %rd0, %rd2, 2;\n    shl.b64 %rd1, %rd0, 3;", False),
    ("mul.lo.u64 %rd0, %rd2, %rd3;\n    shl.b64 %rd1, %rd0, 70;", False),
    # copysign(x, x)
    ("copysign.f64 %rd0, %rd1, %rd1;", True),
    ("copysign.f64 %rd0, %rd1, %rd2;", False),
    # min/max of a register and its copy
    ("mov.b16 %h1, %h0;\n    min.f16 %h2, %h0, %h1;", True),
    ("mov.b16 %h1, %h3;\n    min.f16 %h2, %h0, %h1;", False),
    # an instruction guarded by a setp.ftz predicate
    ("setp.eq.ftz.f32 %p1, %r0, 0f00000000;\n    @%p1 add.f32 %r1, %r2, %r3;", True),
    ("setp.eq.f32 %p1, %r0, 0f00000000;\n    @%p1 add.f32 %r1, %r2, %r3;", False),
    # an mma operand written by a mov of an immediate
    ("mov.b32 %r6, 0xA62E6C0A;\n    mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%r0, %r1, %r2, %r3}, "
     "{%r4, %r5}, {%r6}, {%r0, %r1, %r2, %r3};", True),
    ("mov.b32 %r6, %r7;\n    mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%r0, %r1, %r2, %r3}, "
     "{%r4, %r5}, {%r6}, {%r0, %r1, %r2, %r3};", False),
    # generator version 3's findings
    # lop3 with a repeated source
    ("lop3.b32 %r1, %r5, 0x13, %r5, 0x9D;", True),
    ("lop3.b32 %r1, %r5, 0x13, %r6, 0x9D;", False),
    # 16-bit integer arithmetic on a float-to-16-bit conversion
    ("cvt.rmi.s16.bf16 %h3, %h0;\n    mul.hi.s16 %h0, %h3, 0x9B3D;", True),
    ("cvt.rpi.sat.u16.f16 %h2, %h3;\n    mad.wide.u16 %r1, %h2, %h3, %r0;", True),
    ("cvt.s16.s32 %h3, %r0;\n    mul.hi.s16 %h0, %h3, 0x9B3D;", False),
    ("cvt.rmi.s16.bf16 %h3, %h0;\n    add.s16 %h0, %h3, 1;", False),
    # a 16-bit logic operation on a cvt.relu result
    ("cvt.rz.relu.bf16.f32 %h0, %r1;\n    and.b16 %h0, %h0, %h2;", True),
    ("cvt.rz.bf16.f32 %h0, %r1;\n    and.b16 %h0, %h0, %h2;", False),
])
def test_note_fires_on_its_construct_only(body, noted):
    last = body.splitlines()[-1].strip()
    assert _noted_lines(body) == ([last] if noted else [])


@pytest.mark.parametrize("body, noted", [
    # the noted instruction is not the last one
    # neg.f64 in place in a loop: its previous iteration is the other neg
    ("$L_top:\n    neg.f64 %rd0, %rd0;\n    @%p0 bra $L_top;", "neg.f64 %rd0, %rd0;"),
    ("$L_top:\n    neg.f64 %rd0, %rd1;\n    @%p0 bra $L_top;", None),
    # a cnot later in the loop reaches the cvt of the next iteration
    ("$L_top:\n    cvt.rmi.u32.bf16 %r3, %h1;\n    cnot.b16 %h1, %h1;\n    @%p0 bra $L_top;",
     "cvt.rmi.u32.bf16 %r3, %h1;"),
    # a guard written again later, the result unused until then
    ("@%p0 add.u32 %r0, %r1, %r2;\n    or.pred %p0, %p1, !%p0;", "@%p0 add.u32 %r0, %r1, %r2;"),
    ("@%p0 bra $L_end;\n    add.u32 %r0, %r1, %r2;\n$L_end:\n    testp.finite.f32 %p0, %r3;", "@%p0 bra $L_end;"),
    ("@%p0 add.u32 %r0, %r1, %r2;\n    add.u32 %r3, %r0, 1;\n    or.pred %p0, %p1, !%p0;", None),
    ("@%p0 add.u32 %r0, %r1, %r2;\n    or.pred %p1, %p1, !%p0;", None),
    # both sources of an f64 fma change in the loop around it
    ("$L_top:\n    fma.rn.f64 %rd0, %rd0, %rd1, %rd2;\n    mul.hi.u64 %rd1, %rd0, %rd0;\n    @%p0 bra $L_top;",
     "fma.rn.f64 %rd0, %rd0, %rd1, %rd2;"),
    ("$L_top:\n    fma.rn.f64 %rd0, %rd0, %rd1, %rd2;\n    @%p0 bra $L_top;",     # one: f64-nan-order-one-carried
     "fma.rn.f64 %rd0, %rd0, %rd1, %rd2;"),
    ("fma.rn.f64 %rd0, %rd0, %rd1, %rd2;\n    mul.hi.u64 %rd1, %rd0, %rd0;", None),
    # a predicated mad.hi whose addend the loop writes later
    ("$L_top:\n    @%p1 mad.hi.s16 %h3, %h0, %h0, %h1;\n    cvt.rn.f16.s32 %h1, %r3;\n    @%p0 bra $L_top;",
     "@%p1 mad.hi.s16 %h3, %h0, %h0, %h1;"),
    ("$L_top:\n    @%p1 mad.hi.s16 %h3, %h0, %h0, %h1;\n    cvt.rn.f16.s32 %h2, %r3;\n    @%p0 bra $L_top;", None),
    # a branch on a setp.ftz predicate
    ("setp.neu.and.ftz.f32 %p1, %r0, %r1, %p0;\n    @%p1 bra $L_end;\n    clz.b32 %r2, %r3;\n$L_end:",
     "@%p1 bra $L_end;"),
    ("setp.neu.and.f32 %p1, %r0, %r1, %p0;\n    @%p1 bra $L_end;\n    clz.b32 %r2, %r3;\n$L_end:", None),
    # an fp8 mma of a register a shift by 32 or more wrote, directly or through a shfl
    ("shl.b32 %r4, %r5, 0x558D75C;\n    mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%r0, %r1, %r2, %r3}, "
     "{%r4, %r5, %r6, %r7}, {%r6, %r7}, {%r0, %r1, %r2, %r3};", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 "
     "{%r0, %r1, %r2, %r3}, {%r4, %r5, %r6, %r7}, {%r6, %r7}, {%r0, %r1, %r2, %r3};"),
    ("shl.b32 %r1, %r5, 0x84F81533;\n    shfl.sync.up.b32 %r4, %r1, %r3, 0x1C00, 0xffffffff;\n    "
     "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%r0, %r1, %r2, %r3}, {%r4, %r5, %r6, %r7}, {%r6, %r7}, "
     "{%r0, %r1, %r2, %r3};", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%r0, %r1, %r2, %r3}, "
     "{%r4, %r5, %r6, %r7}, {%r6, %r7}, {%r0, %r1, %r2, %r3};"),
    ("shl.b32 %r4, %r5, 3;\n    mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%r0, %r1, %r2, %r3}, "
     "{%r4, %r5, %r6, %r7}, {%r6, %r7}, {%r0, %r1, %r2, %r3};", None),
    # found by generator version 4's campaign: a saturating add/sub of a wrapping add/sub sharing a source
    ("sub.u32 %r4, %r6, %r5;\n    sub.sat.s32 %r1, %r4, %r6;", "sub.sat.s32 %r1, %r4, %r6;"),
    ("add.u32 %r4, %r1, %r6;\n    sub.sat.s32 %r6, %r4, %r1;", "sub.sat.s32 %r6, %r4, %r1;"),
    ("add.s32 %r4, %r1, %r6;\n    add.sat.s32 %r3, %r2, %r4;\n    add.sat.s32 %r3, %r1, %r4;",
     "add.sat.s32 %r3, %r1, %r4;"),
    ("sub.u32 %r4, %r6, %r5;\n    sub.sat.s32 %r1, %r4, %r2;", None),           # no shared source
    ("sub.u32 %r4, %r6, %r5;\n    sub.s32 %r1, %r4, %r6;", None),               # not saturating
    ("sub.sat.s32 %r4, %r6, %r5;\n    sub.sat.s32 %r1, %r4, %r6;", None),       # the first one saturates too
    # a 16-bit shift by a cnot result
    ("cnot.b32 %r2, %r3;\n    shl.b16 %h2, %h3, %r2;", "shl.b16 %h2, %h3, %r2;"),
    ("cnot.b32 %r2, %r3;\n    shr.u16 %h2, %h3, %r2;", "shr.u16 %h2, %h3, %r2;"),
    ("cnot.b32 %r2, %r3;\n    shl.b32 %r4, %r3, %r2;", None),                   # a 32-bit shift
    ("not.b32 %r2, %r3;\n    shl.b16 %h2, %h3, %r2;", None),
    # a mad.hi skipped by a branch in a loop whose body writes its addend
    ("$L_top:\n    @%p1 bra $L_skip;\n    sad.s32 %r5, %r2, %r3, %r5;\n    mad.hi.s32 %r1, %r1, %r6, %r5;\n"
     "$L_skip:\n    @%p0 bra $L_top;", "mad.hi.s32 %r1, %r1, %r6, %r5;"),
    ("$L_top:\n    sad.s32 %r5, %r2, %r3, %r5;\n    @%p1 mad.hi.s32 %r1, %r1, %r6, %r5;\n    @%p0 bra $L_top;",
     "@%p1 mad.hi.s32 %r1, %r1, %r6, %r5;"),
    ("$L_top:\n    sad.s32 %r5, %r2, %r3, %r5;\n    mad.hi.s32 %r1, %r1, %r6, %r5;\n    @%p0 bra $L_top;",
     None),                                                                     # runs in every iteration
    ("$L_top:\n    @%p1 bra $L_skip;\n    mad.hi.s32 %r1, %r1, %r6, %r5;\n$L_skip:\n    @%p0 bra $L_top;",
     None),                                                                     # the addend does not change
    ("@%p1 bra $L_skip;\n    sad.s32 %r5, %r2, %r3, %r5;\n    mad.hi.s32 %r1, %r1, %r6, %r5;\n$L_skip:", None),
    # an f64 operation in a loop that changes one of its two sources (both: f64-nan-order-in-loop)
    ("$L_top:\n    fma.rn.f64 %rd0, %rd3, %rd0, %rd2;\n    @%p0 bra $L_top;", "fma.rn.f64 %rd0, %rd3, %rd0, %rd2;"),
    ("$L_top:\n    add.f64 %rd1, %rd3, %rd2;\n    @%p0 bra $L_top;", None),
    ("fma.rn.f64 %rd0, %rd3, %rd0, %rd2;", None),
    ("$L_top:\n    fma.rn.f64 %rd0, %rd0, %rd0, %rd2;\n    @%p0 bra $L_top;", None),
    # found by generator version 5's campaign
    # a 16-bit compare or right shift of a float-to-16-bit conversion (in the loop where ptxas re-emits it)
    ("cvt.rzi.sat.s16.f32 %h1, %r6;\n$L_top:\n    setp.gt.s16 %p1, %h1, %h2;\n    @%p0 bra $L_top;",
     "setp.gt.s16 %p1, %h1, %h2;"),
    ("cvt.rni.u16.f16 %h3, %h1;\n    setp.hs.u16 %p1, %h3, %h0;", "setp.hs.u16 %p1, %h3, %h0;"),
    ("cvt.rpi.s16.bf16 %h1, %h1;\n    set.ge.u32.s16 %r0, %h0, %h1;", "set.ge.u32.s16 %r0, %h0, %h1;"),
    ("cvt.rzi.sat.s16.f32 %h1, %r1;\n    shr.s16 %h2, %h1, %r1;", "shr.s16 %h2, %h1, %r1;"),
    ("cvt.rzi.sat.s16.f32 %h1, %r1;\n    shr.s16 %h2, %h3, %r1;", None),        # shifts another value
    ("cvt.sat.s16.s32 %h1, %r1;\n    setp.gt.s16 %p1, %h1, %h2;", None),       # an integer conversion
    ("cvt.rzi.sat.s16.f32 %h1, %r6;\n    add.s16 %h2, %h1, %h2;", None),       # the low 16 bits only
    ("cvt.rzi.s32.f32 %r1, %r6;\n    setp.gt.s32 %p1, %r1, %r2;", None),       # 32 bits
    # a cvt to 8 or 16 bits of a cnot result
    ("cnot.b32 %r2, %r1;\n    cvt.sat.u16.u32 %h0, %r2;", "cvt.sat.u16.u32 %h0, %r2;"),
    ("cnot.b32 %r2, %r1;\n    cvt.u64.u32 %rd0, %r2;", None),
    ("not.b32 %r2, %r1;\n    cvt.sat.u16.u32 %h0, %r2;", None),
    # a float instruction reading a mad.hi.sat result
    ("mad.hi.sat.s32 %r5, %r4, %r1, 0xE26DD7A6;\n    max.f32 %r0, %r5, 0fC0400000;", "max.f32 %r0, %r5, 0fC0400000;"),
    ("mad.hi.s32 %r5, %r4, %r1, 7;\n    max.f32 %r0, %r5, 0fC0400000;", None),
    ("mad.hi.sat.s32 %r5, %r4, %r1, 7;\n    max.s32 %r0, %r5, 3;", None),
    # bitwise logic of a set.f32 result and a value computed from it
    ("set.ge.f32.u32 %r7, %r2, %r6;\n    cvt.rz.ftz.f32.s32 %r6, %r7;\n    and.b32 %r1, %r6, %r7;",
     "and.b32 %r1, %r6, %r7;"),
    ("set.ge.f32.u32 %r7, %r2, %r6;\n    and.b32 %r1, %r3, %r7;", None),
    ("set.ge.u32.u32 %r7, %r2, %r6;\n    cvt.rn.f32.s32 %r6, %r7;\n    and.b32 %r1, %r6, %r7;", None),
    # neg.f64 of min/max(y, y) of a neg.f64 result
    ("neg.f64 %rd3, %rd1;\n    min.f64 %rd2, %rd3, %rd3;\n    neg.f64 %rd0, %rd2;", "neg.f64 %rd0, %rd2;"),
    ("neg.f64 %rd3, %rd1;\n    min.f64 %rd2, %rd3, %rd1;\n    neg.f64 %rd0, %rd2;", None),
    ("abs.f64 %rd3, %rd1;\n    max.f64 %rd2, %rd3, %rd3;\n    neg.f64 %rd0, %rd2;", None),
    # an fp8x2 conversion packed with another 16-bit register
    ("add.u16 %h3, %h1, %h0;\n    cvt.rn.satfinite.relu.e4m3x2.f16x2 %h2, %r1;\n    mov.b32 %r5, {%h2, %h3};",
     "mov.b32 %r5, {%h2, %h3};"),
    ("cvt.rn.satfinite.e5m2x2.f32 %h2, %r1, %r2;\n    mov.b32 %r5, {%h3, %h2};", "mov.b32 %r5, {%h3, %h2};"),
    ("cvt.rn.f16.f32 %h2, %r1;\n    mov.b32 %r5, {%h2, %h3};", None),
    ("cvt.rn.satfinite.e4m3x2.f32 %h2, %r1, %r2;\n    mov.b16 %h3, %h2;", None),
])
def test_note_fires_on_the_instruction_in_its_context(body, noted):
    assert _noted_lines(body) == ([noted] if noted else [])


def test_saturating_cvt_of_an_integer_sign_op():
    # the sign operation is noted itself (int-sign-op-min); the saturating cvt of its result as well
    assert _noted_lines("neg.s32 %r1, %r0;\n    cvt.sat.u8.s32 %h0, %r1;") == ["neg.s32 %r1, %r0;",
                                                                        "cvt.sat.u8.s32 %h0, %r1;"]
    assert _noted_lines("neg.s32 %r1, %r0;\n    cvt.u8.s32 %h0, %r1;") == ["neg.s32 %r1, %r0;"]
    assert _noted_lines("not.b32 %r1, %r0;\n    cvt.sat.u8.s32 %h0, %r1;") == []


def test_notes_are_for_the_hopper_toolchain_findings():
    # every one of these was measured with ptxas 13.0 for sm_90a; sm_100a code gets no note
    for body in ("@%p0 set.lt.f32.f32 %r0, %r1, %r2;", "abs.s16 %h0, %h1;", "mad.hi.u32 %r0, %r1, %r2, %r0;",
                 "sqrt.rn.f32 %r1, %r2;\n    shl.b64 %rd0, %rd1, %r1;", "neg.f64 %rd1, %rd0;\n    neg.f64 %rd2, %rd1;",
                 "cnot.b16 %h1, %h0;\n    cvt.rmi.sat.u8.f16 %h1, %h1;",
                 "@%p0 add.u32 %r0, %r1, %r2;\n    or.pred %p0, %p1, !%p0;",
                 "sub.u32 %r4, %r6, %r5;\n    sub.sat.s32 %r1, %r4, %r6;", "cnot.b32 %r2, %r3;\n    shl.b16 %h2, %h3, %r2;",
                 "$L_top:\n    sad.s32 %r5, %r2, %r3, %r5;\n    @%p1 mad.hi.s32 %r1, %r1, %r6, %r5;\n    @%p0 bra $L_top;",
                 "cvt.rni.u16.f16 %h3, %h1;\n    setp.hs.u16 %p1, %h3, %h0;", "cnot.b32 %r2, %r1;\n    cvt.u8.u32 %h0, %r2;",
                 "mad.hi.sat.s32 %r5, %r4, %r1, 7;\n    max.f32 %r0, %r5, 0fC0400000;",
                 "set.ge.f32.u32 %r7, %r2, %r6;\n    cvt.rz.ftz.f32.s32 %r6, %r7;\n    and.b32 %r1, %r6, %r7;",
                 "neg.f64 %rd3, %rd1;\n    min.f64 %rd2, %rd3, %rd3;\n    neg.f64 %rd0, %rd2;",
                 "cvt.rn.satfinite.e5m2x2.f32 %h2, %r1, %r2;\n    mov.b32 %r5, {%h3, %h2};"):
        assert _noted_lines(body, "sm_100a") == []
        assert _noted_lines(body, "sm_90a")


def test_note_text_names_the_location_and_the_dependence():
    text = _kernel("mad.hi.u32 %r0, %r1, %r2, %r0;")
    (n,) = ptx_notes(text, "lint.ptx")
    assert str(n).startswith(f"lint.ptx:{n.loc.line}:") and "depends on ptxas" in n.message


def _wgmma_kernel(body: str) -> str:
    return f"""
.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 pd)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b32 %wa<4>;
    .reg .b32 %ac<8>;
    .reg .b64 %rd<4>;
{body}
    ret;
}}
"""


_WG = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%ac0, %ac1, %ac2, %ac3}, {%wa0, %wa1, %wa2, %wa3}, %rd0, 1, 1, 1, 1;"
_WG_SS = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%ac0, %ac1, %ac2, %ac3}, %rd0, %rd1, 1, 1, 1, 0, 0;"
_MOVS = "mov.b32 %wa0, %r0; mov.b32 %wa1, %r1; mov.b32 %wa2, %r2; mov.b32 %wa3, %r3; wgmma.fence.sync.aligned;"


@pytest.mark.parametrize("body, noted", [
    # an RS wgmma whose A register is a copy of %r1, written while the wgmma is in flight
    (f"{_MOVS} {_WG} wgmma.commit_group.sync.aligned; add.u32 %r1, %r1, 1; wgmma.wait_group.sync.aligned 0;",
     [_WG]),
    # written after the wait that completes it, or a register no A operand copies: no note
    (f"{_MOVS} {_WG} wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 0; add.u32 %r1, %r1, 1;", []),
    (f"{_MOVS} {_WG} wgmma.commit_group.sync.aligned; add.u32 %r5, %r1, 1; wgmma.wait_group.sync.aligned 0;", []),
    # wait_group 1 with no later group does not complete it
    (f"{_MOVS} {_WG} wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 1; add.u32 %r2, %r2, 1;"
     " wgmma.wait_group.sync.aligned 0;", [_WG]),
    # a copy of an accumulator read after a later wgmma wrote the accumulator again
    (f"mov.b32 %r4, %ac1; {_WG_SS} wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 0;"
     " add.u32 %r5, %r4, 1;", ["add.u32 %r5, %r4, 1;"]),
    (f"mov.b32 %r4, %ac1; add.u32 %r5, %r4, 1; {_WG_SS} wgmma.commit_group.sync.aligned;"
     " wgmma.wait_group.sync.aligned 0;", []),
    (f"mov.b32 %r4, %ac1; {_WG_SS} wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 0;"
     " mov.b32 %r4, 7; add.u32 %r5, %r4, 1;", []),
])
def test_wgmma_register_hazard_notes(body, noted):
    """The two register hazards ptxas 13.0 makes around an asynchronous wgmma (the v6 campaign's programs 600221
    and 600031, explained bit for bit by calib/fuzz/explain.py's wgmma_hazards)."""
    text = _wgmma_kernel("\n".join("    " + s.strip() + (";" if not s.strip().endswith(";") else "")
                                   for s in body.split(";") if s.strip()))
    lines = text.splitlines()
    got = [lines[n.loc.line - 1].strip() for n in ptx_notes(text, "lint.ptx") if "wgmma" in n.message]
    assert got == noted
