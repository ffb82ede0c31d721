"""isa/tcgen05_rules.py: the tcgen05 verifier.

* The walkthrough seed's kind word 0xC1 decodes exactly as the seed shows.
* Every static rule (decode time) fires with its exact message and the PTX line, and ptxas -arch=<target>
  rejects the same instruction (checked when ptxas is on PATH); a table of legal forms is accepted by both.
* The dynamic rules (instruction / SMEM descriptor values, execution time) fire with their exact messages.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from tcsim.isa.descriptors import InstrDescriptor, InstrDescriptorBlockScaled, SmemDescriptor
from tcsim.isa.errors import UnsupportedError, VerifyError
from tcsim.isa.parser import parse
from tcsim.isa.tcgen05_rules import (RULES, KindWord, check_idesc, check_smem_desc, legal_n, parse_cp, parse_mma)
from tcsim.engine import decode_function

PTXAS = shutil.which("ptxas")


def module(lines: str, target: str = "sm_100a", version: str = "8.8") -> str:
    return f""".version {version}
.target {target}
.address_size 64
.visible .entry k()
{{
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .reg .pred %p<4>;
  .reg .b16 %rs<4>;
{lines}
  ret;
}}
"""


def decode(text: str):
    m = parse(text, "t.ptx")
    return decode_function(m, m.kernel())


def ptxas_ok(text: str, target: str) -> bool:
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        r = subprocess.run([PTXAS, f"-arch={target}", path, "-o", os.devnull], capture_output=True, text=True,
                           timeout=120)
    finally:
        os.unlink(path)
    return r.returncode == 0


# ---------------------------------------------------------------------------------------------- kind word
def test_walkthrough_kind_word_0xC1():
    """Seed 002: 0xC1 = 0b011000001 = mma_kind f16 (3) in bits 6-8, block_scale 0 (bit 5), scale_input_acc 0
    (bit 4), scale_vec_size 0 = 1X (bits 2-3), cta_group 1 (bits 0-1)."""
    w = KindWord.decode(0xC1)
    assert (w.cta_group, w.scale_vec, w.scale_input_acc, w.block_scale, w.kind) == (1, "1X", 0, 0, "f16")
    assert w.describe() == ".cta_group::1.kind::f16"
    assert w.encode() == 0xC1
    m = parse(module("  tcgen05.mma.cta_group::1.kind::f16.collector::a::fill [%r1], %rd1, %rd2, %r3, 1;"), "t")
    form = parse_mma(m.kernel().body[0])
    assert form.kind_word() == w and form.kind_word().encode() == 0xC1
    assert form.collector == ("a", "fill")


def test_kind_word_undocumented_codes():
    w = KindWord.decode(0b101_1_0_01_10)
    assert (w.cta_group, w.scale_vec, w.block_scale, w.kind) == (2, "2X", 1, 5)
    assert w.describe() == ".cta_group::2.kind code 5 (undocumented).block_scale.scale_vec::2X"
    with pytest.raises(ValueError, match="not documented"):
        KindWord(kind="tf32").encode()
    with pytest.raises(ValueError, match="more than 9 bits"):
        KindWord.decode(0x200)


# ---------------------------------------------------------------------------------------------- static rules
MMA = "tcgen05.mma.cta_group::1"
D = "[%r1], %rd1, %rd2, %r3"
BS = "[%r1], %rd1, %rd2, %r3, [%r4], [%r5], %p1"

#: (instruction lines, target, rule, exact message)
REJECTED = [
    (f"{MMA}.kind::f16 {D}, %p1;", "sm_90a", "arch",
     "tcgen05.mma.cta_group::1.kind::f16: tcgen05.mma is not supported on .target sm_90a [rule arch]"),
    ("tcgen05.shift.cta_group::1.down [%r1];", "sm_100f", "arch",
     "tcgen05.shift.cta_group::1.down: tcgen05.shift is not supported on .target sm_100f [rule arch]"),
    (f"{MMA}.kind::i8 {D}, %p1;", "sm_100f", "i8-arch",
     "tcgen05.mma.cta_group::1.kind::i8: kind::i8 is supported only on arch-conditional targets, not sm_100f "
     "[rule i8-arch]"),
    (f"{MMA}.kind::mxf8f6f4.block_scale.scale_vec::1X {BS};", "sm_100f", "scale-vec-arch",
     "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X: .scale_vec::1X is supported only on "
     "arch-conditional targets, not sm_100f [rule scale-vec-arch]"),
    (f"tcgen05.mma.kind::f16 {D}, %p1;", "sm_100a", "cta-group-required",
     "tcgen05.mma.kind::f16: missing .cta_group::1 / .cta_group::2 [rule cta-group-required]"),
    (f"{MMA} {D}, %p1;", "sm_100a", "kind-required",
     "tcgen05.mma.cta_group::1: missing .kind::{f16,tf32,f8f6f4,i8,mxf8f6f4,mxf4,mxf4nvf4} [rule kind-required]"),
    (f"{MMA}.kind::f16.block_scale {BS};", "sm_100a", "block-scale-kind",
     "tcgen05.mma.cta_group::1.kind::f16.block_scale: .block_scale is not supported with kind::f16 "
     "[rule block-scale-kind]"),
    (f"{MMA}.kind::mxf4 {D}, %p1;", "sm_100a", "block-scale-kind",
     "tcgen05.mma.cta_group::1.kind::mxf4: kind::mxf4 requires .block_scale [rule block-scale-kind]"),
    (f"{MMA}.kind::f16.scale_vec::1X {D}, %p1;", "sm_100a", "scale-vec-kind",
     "tcgen05.mma.cta_group::1.kind::f16.scale_vec::1X: .scale_vec::1X requires .block_scale [rule scale-vec-kind]"),
    (f"{MMA}.kind::mxf8f6f4.block_scale.scale_vec::2X {BS};", "sm_100a", "scale-vec-kind",
     "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::2X: .scale_vec::2X is not allowed with "
     "kind::mxf8f6f4 [rule scale-vec-kind]"),
    (f"{MMA}.kind::mxf8f6f4.block_scale.block16 {BS};", "sm_100a", "scale-vec-kind",
     "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.block16: .block16 is not allowed with kind::mxf8f6f4 "
     "[rule scale-vec-kind]"),
    (f"{MMA}.kind::mxf4.block_scale.scale_vec::1X {BS};", "sm_100a", "scale-vec-kind",
     "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::1X: .scale_vec::1X is not allowed with "
     "kind::mxf4 [rule scale-vec-kind]"),
    (f"{MMA}.kind::mxf4.block_scale.scale_vec::4X {BS};", "sm_100a", "scale-vec-kind",
     "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::4X: .scale_vec::4X is not allowed with "
     "kind::mxf4 [rule scale-vec-kind]"),
    (f"{MMA}.kind::mxf4.block_scale.block16 {BS};", "sm_100a", "scale-vec-kind",
     "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.block16: .block16 is not allowed with kind::mxf4 "
     "[rule scale-vec-kind]"),
    (f"{MMA}.kind::mxf4nvf4.block_scale.scale_vec::1X {BS};", "sm_100a", "scale-vec-kind",
     "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::1X: .scale_vec::1X is not allowed with "
     "kind::mxf4nvf4 [rule scale-vec-kind]"),
    (f"{MMA}.kind::mxf4nvf4.block_scale {BS};", "sm_100a", "scale-vec-kind",
     "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale: kind::mxf4nvf4 needs an explicit scale vector size "
     "[rule scale-vec-kind]"),
    (f"{MMA}.kind::mxf8f6f4.block_scale.ashift [%r1], [%r2], %rd2, %r3, [%r4], [%r5], %p1;", "sm_100a",
     "ashift-block-scale", "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.ashift: ashift is not supported "
                           "with tcgen05.mma.block_scale variants [rule ashift-block-scale]"),
    (f"{MMA}.kind::f16.ashift.collector::a::fill [%r1], [%r2], %rd2, %r3, %p1;", "sm_100a", "ashift-collector",
     "tcgen05.mma.cta_group::1.kind::f16.ashift.collector::a::fill: .collector::a::fill cannot be combined with "
     ".ashift [rule ashift-collector]"),
    (f"{MMA}.kind::tf32.collector::a::use.ashift [%r1], [%r2], %rd2, %r3, %p1;", "sm_100a", "ashift-collector",
     "tcgen05.mma.cta_group::1.kind::tf32.collector::a::use.ashift: .collector::a::use cannot be combined with "
     ".ashift [rule ashift-collector]"),
    (f"{MMA}.kind::f16.ashift {D}, %p1;", "sm_100a", "ashift-a-tmem",
     "tcgen05.mma.cta_group::1.kind::f16.ashift: .ashift needs the A operand in tensor memory ([a-tmem]) "
     "[rule ashift-a-tmem]"),
    ("tcgen05.mma.ws.cta_group::1.kind::f16.ashift [%r1], [%r2], %rd2, %r3, %p1;", "sm_100a", "ashift-ws",
     "tcgen05.mma.ws.cta_group::1.kind::f16.ashift: .ashift is not supported with .ws [rule ashift-ws]"),
    (f"tcgen05.mma.ws.cta_group::2.kind::f16 {D}, %p1;", "sm_100a", "ws-cta-group",
     "tcgen05.mma.ws.cta_group::2.kind::f16: cta_group::2 is not supported with weight-stationary (.ws) "
     "[rule ws-cta-group]"),
    (f"tcgen05.mma.ws.cta_group::1.kind::mxf8f6f4.block_scale {BS};", "sm_100a", "ws-kind",
     "tcgen05.mma.ws.cta_group::1.kind::mxf8f6f4.block_scale: weight-stationary (.ws) is not supported with "
     "kind::mxf8f6f4 [rule ws-kind]"),
    (f"tcgen05.mma.ws.cta_group::1.kind::f16.collector::a::fill {D}, %p1;", "sm_100a", "collector-ws",
     "tcgen05.mma.ws.cta_group::1.kind::f16.collector::a::fill: .collector::a::fill is not allowed with .ws "
     "[rule collector-ws]"),
    (f"{MMA}.kind::f16.collector::b0::fill {D}, %p1;", "sm_100a", "collector-ws",
     "tcgen05.mma.cta_group::1.kind::f16.collector::b0::fill: .collector::b0::fill needs .ws [rule collector-ws]"),
    (f"{MMA}.kind::f16.collector::a::fill.collector::a::use [%r1], [%r2], %rd2, %r3, %p1;", "sm_100a",
     "duplicate-qualifier", "tcgen05.mma.cta_group::1.kind::f16.collector::a::fill.collector::a::use: more than "
                            "one .collector qualifier (.collector::a::use) [rule duplicate-qualifier]"),
    (f"{MMA}.kind::f8f6f4 {D}, %p1, 3;", "sm_100a", "scale-input-d-kind",
     "tcgen05.mma.cta_group::1.kind::f8f6f4: scale-input-d is not supported with kind::f8f6f4 "
     "[rule scale-input-d-kind]"),
    (f"{MMA}.kind::tf32 {D}, %p1, 16;", "sm_100a", "scale-input-d-range",
     "tcgen05.mma.cta_group::1.kind::tf32: scale-input-d = 16 is out of range [rule scale-input-d-range]"),
    (f"{MMA}.kind::mxf8f6f4.block_scale {BS}, 3;", "sm_100a", "operands",
     "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale: unexpected operand(s) after enable-input-d: 3 "
     "[rule operands]"),
    (f"{MMA}.kind::f16 {D}, {{%r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11}}, %p1;", "sm_100a", "disable-output-lane",
     "tcgen05.mma.cta_group::1.kind::f16: disable-output-lane must be a vector of 4 32-bit registers with "
     ".cta_group::1, got {%r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11} [rule disable-output-lane]"),
    (f"tcgen05.mma.cta_group::2.kind::f16 {D}, {{%r4, %r5, %r6, %r7}}, %p1;", "sm_100a", "disable-output-lane",
     "tcgen05.mma.cta_group::2.kind::f16: disable-output-lane must be a vector of 8 32-bit registers with "
     ".cta_group::2, got {%r4, %r5, %r6, %r7} [rule disable-output-lane]"),
    (f"tcgen05.mma.ws.cta_group::1.kind::f16 {D}, {{%r4, %r5, %r6, %r7}}, %p1;", "sm_100a", "disable-output-lane",
     "tcgen05.mma.ws.cta_group::1.kind::f16: disable-output-lane is not allowed with .ws [rule disable-output-lane]"),
    (f"{MMA}.kind::f16 {D}, %rd4;", "sm_100a", "operands",
     "tcgen05.mma.cta_group::1.kind::f16: enable-input-d must be a predicate (or an immediate), got %rd4 "
     "[rule operands]"),
    (f"{MMA}.kind::f16 [%r1], %r6, %rd2, %r3, %p1;", "sm_100a", "operands",
     "tcgen05.mma.cta_group::1.kind::f16: the A operand must be a 64-bit descriptor (a register or an integer) or "
     "[a-tmem], got %r6 [rule operands]"),
    (f"{MMA}.kind::f16 [%r1], %rd1, %rd2, %rd3, %p1;", "sm_100a", "operands",
     "tcgen05.mma.cta_group::1.kind::f16: the instruction descriptor must be a 32-bit register or an immediate, "
     "got %rd3 [rule operands]"),
    (f"{MMA}.kind::f16.foo {D}, %p1;", "sm_100a", "unknown-qualifier",
     "tcgen05.mma.cta_group::1.kind::f16.foo: unknown qualifier .foo [rule unknown-qualifier]"),
    (f"{MMA}.kind::f16 {D}, %p1;\n  tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 [%r1];",
     "sm_100a", "cta-group-uniform",
     "tcgen05.mma.cta_group::1.kind::f16: uses .cta_group::1 but "
     "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 at t.ptx:11:3 uses .cta_group::2; all "
     "tcgen05 instructions of kernel k must use the same .cta_group [rule cta-group-uniform]"),
    ("tcgen05.cp.cta_group::1.64x128b [%r1], %rd1;", "sm_100a", "cp-shape",
     "tcgen05.cp.cta_group::1.64x128b: shape .64x128b requires a multicast qualifier [rule cp-shape]"),
    ("tcgen05.cp.cta_group::1.32x128b.warpx2::01_23 [%r1], %rd1;", "sm_100a", "cp-shape",
     "tcgen05.cp.cta_group::1.32x128b.warpx2::01_23: multicast .warpx2::01_23 is not allowed with shape .32x128b "
     "[rule cp-shape]"),
    ("tcgen05.cp.cta_group::1.128x256b.warpx4 [%r1], %rd1;", "sm_100a", "cp-shape",
     "tcgen05.cp.cta_group::1.128x256b.warpx4: multicast .warpx4 is not allowed with shape .128x256b "
     "[rule cp-shape]"),
    ("tcgen05.cp.cta_group::1.128x256b.b8x16 [%r1], %rd1;", "sm_100a", "cp-format",
     "tcgen05.cp.cta_group::1.128x256b.b8x16: decompression needs .b8x16 followed by .b6x16_p32 or .b4x16_p64, "
     "got b8x16 [rule cp-format]"),
    ("tcgen05.cp.cta_group::1.128x256b [%r1], %r2;", "sm_100a", "operands",
     "tcgen05.cp.cta_group::1.128x256b: the source descriptor must be a 64-bit register, got %r2 [rule operands]"),
    ("tcgen05.cp.128x256b [%r1], %rd1;", "sm_100a", "cta-group-required",
     "tcgen05.cp.128x256b: missing .cta_group::1 / .cta_group::2 [rule cta-group-required]"),
    ("tcgen05.commit.cta_group::1.shared::cluster.b64 [%rd1];", "sm_100a", "commit-form",
     "tcgen05.commit.cta_group::1.shared::cluster.b64: missing the completion mechanism .mbarrier::arrive::one "
     "[rule commit-form]"),
    ("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%rd1];", "sm_100a",
     "commit-form", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64: "
                    "takes 2 operand(s) ([mbar], ctaMask), got 1 [rule commit-form]"),
    ("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%rd1], %r1;",
     "sm_100a", "commit-form",
     "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64: ctaMask must be a "
     "16-bit register, got %r1 [rule commit-form]"),
    ("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cta.b64 [%rd1];", "sm_100a", "commit-form",
     "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cta.b64: unknown qualifier .shared::cta "
     "[rule commit-form]"),
    ("tcgen05.shift.cta_group::1.up [%r1];", "sm_100a", "unknown-qualifier",
     "tcgen05.shift.cta_group::1.up: unknown qualifier .up [rule unknown-qualifier]"),
]

ACCEPTED = [
    f"{MMA}.kind::f16 {D}, %p1;",
    f"{MMA}.kind::f16 [%r1+16], [%r2], %rd2, 1234, !%p1, 15;",
    f"{MMA}.collector::a::lastuse.kind::tf32 [%r1], [%r2], %rd2, %r3, {{%r4, %r5, %r6, %r7}}, 1;",
    f"tcgen05.mma.cta_group::2.kind::f8f6f4 {D}, {{%r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11}}, %p1;",
    f"tcgen05.mma.ws.cta_group::1.kind::f8f6f4.collector::b2::fill {D}, %p1;",
    f"{MMA}.kind::mxf8f6f4.block_scale.scale_vec::1X {BS};",
    f"{MMA}.kind::mxf4.block_scale {BS};",
    f"{MMA}.kind::mxf4nvf4.block_scale.block16.collector::a::fill [%r1], [%r2], %rd2, %r3, [%r4], [%r5], %p1;",
    "tcgen05.cp.cta_group::1.64x128b.warpx2::02_13.b8x16.b4x16_p64 [%r1], %rd1;",
    "tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [%rd1];",
    "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%r1], %rs1;",
    f"{MMA}.kind::f16.ashift [%r1], [%r2], %rd2, %r3, %p1;",
    f"tcgen05.mma.ws.cta_group::1.kind::f16 {D}, %p1, %rd5;",
    f"tcgen05.mma.ws.cta_group::1.kind::tf32 {D}, %p1, 0;",
]


@pytest.mark.parametrize("line, target, rule, message", REJECTED, ids=[f"{i}-{r[2]}" for i, r in enumerate(REJECTED)])
def test_static_rule(line, target, rule, message):
    assert rule in RULES
    text = module("  " + line, target)
    with pytest.raises(VerifyError) as e:
        decode(text)
    assert e.value.message == message
    assert e.value.loc is not None and e.value.loc.line == 10
    assert f"[rule {rule}]" in str(e.value) and "t.ptx:10:" in str(e.value)


@pytest.mark.parametrize("line", ACCEPTED)
def test_legal_forms_decode(line):
    decode(module("  " + line))


@pytest.mark.skipif(PTXAS is None, reason="ptxas not on PATH")
def test_ptxas_agrees_with_the_static_rules():
    jobs = [(module("  " + line, target), target) for line, target, _, _ in REJECTED] + \
           [(module("  " + line), "sm_100a") for line in ACCEPTED]
    with ThreadPoolExecutor(max_workers=8) as pool:
        ok = list(pool.map(lambda j: ptxas_ok(*j), jobs))
    n = len(REJECTED)
    wrongly_accepted = [REJECTED[i][0] for i in range(n) if ok[i]]
    wrongly_rejected = [ACCEPTED[i] for i in range(len(ACCEPTED)) if not ok[n + i]]
    assert not wrongly_accepted and not wrongly_rejected


@pytest.mark.parametrize("line, what", [
    ("tcgen05.mma.sp.cta_group::1.kind::f16 [%r1], %rd1, %rd2, [%r6], %r3, %p1;", "sparse"),
    (f"{MMA}.kind::i8 {D}, %p1, 2;", "scale-input-d with kind::i8"),
])
def test_legal_but_unsupported_forms(line, what):
    with pytest.raises(UnsupportedError) as e:
        decode(module("  " + line))
    assert what in e.value.message and e.value.loc.line == 10




# ---------------------------------------------------------------------------------------------- dynamic rules
def form_of(line: str):
    return parse_mma(parse(module("  " + line), "t").kernel().body[0])


F16 = form_of(f"{MMA}.kind::f16 {D}, %p1;")
F16_CG2 = form_of(f"tcgen05.mma.cta_group::2.kind::f16 {D}, %p1;")
I8 = form_of(f"{MMA}.kind::i8 {D}, %p1;")
WS = form_of(f"tcgen05.mma.ws.cta_group::1.kind::f8f6f4 {D}, %p1;")
MXF8 = form_of(f"{MMA}.kind::mxf8f6f4.block_scale {BS};")
NVF4_2X = form_of(f"{MMA}.kind::mxf4nvf4.block_scale.scale_vec::2X {BS};")
NVF4_4X = form_of(f"{MMA}.kind::mxf4nvf4.block_scale.block16 {BS};")
MXF4 = form_of(f"{MMA}.kind::mxf4.block_scale {BS};")


def idesc(kind, m, n, a, b, d="f32", **kw):
    return InstrDescriptor.for_kind(kind, m, n, a, b, d, **kw).encode()


def bs(kind, m, n, a, b, scale="ue8m0", **kw):
    return InstrDescriptorBlockScaled.for_kind(kind, m, n, a, b, scale, **kw).encode()


DYNAMIC = [
    (F16, idesc("f16", 128, 64, "f16", "f16") | 1 << 23, "idesc-reserved",
     "instruction descriptor 0x08900010 has reserved bits 0x00800000 set (instruction descriptor {M 128, N 64, "
     "D f32, A f16, B f16, A K-major, B K-major, reserved bits 0x00800000 set}) [rule idesc-reserved]"),
    (F16, idesc("f16", 128, 64, "f16", "f16") | 1 << 2, "idesc-sparse",
     "instruction descriptor sparsity bit is 1 but the instruction is dense [rule idesc-sparse]"),
    (F16, idesc("f16", 128, 64, "f16", "f16") | 2 << 7, "idesc-type",
     "A type code 2 is not defined for kind::f16 [rule idesc-type]"),
    (F16, idesc("f16", 128, 64, "f16", "bf16"), "idesc-type",
     "kind::f16 needs equal A and B types, got f16 and bf16 [rule idesc-type]"),
    (F16, idesc("f16", 128, 64, "bf16", "bf16", "f16"), "idesc-type",
     "D type code 0 (f16) is not allowed with kind::f16 and A type bf16 [rule idesc-type]"),
    (I8, idesc("i8", 128, 64, "s8", "s8", "f32"), "idesc-type",
     "D type code 1 (f32) is not allowed with kind::i8 and A type s8 [rule idesc-type]"),
    (F16, idesc("f16", 128, 64, "f16", "f16", saturate=1), "idesc-saturate",
     "the saturate bit is set with kind::f16 [rule idesc-saturate]"),
    (F16, idesc("f16", 128, 64, "f16", "f16", max_shift=2), "idesc-max-shift",
     "max-shift code 2 is set but the instruction is not .ws [rule idesc-max-shift]"),
    (I8, idesc("i8", 128, 64, "s8", "s8", "s32", negate_b=1), "idesc-negate",
     "negate A/B is not allowed with kind::i8 [rule idesc-negate]"),
    (MXF4, bs("mxf4", 128, 64, "e2m1", "e2m1", a_major=1), "idesc-transpose",
     "MN-major (transpose) A or B is not allowed with kind::mxf4 [rule idesc-transpose]"),
    (F16, idesc("f16", 256, 64, "f16", "f16"), "idesc-shape",
     "M = 256 is not legal for kind::f16 .cta_group::1 [rule idesc-shape]"),
    (F16_CG2, idesc("f16", 256, 24, "f16", "f16"), "idesc-shape",
     "N = 24 is not legal for kind::f16 .cta_group::2 [rule idesc-shape]"),
    (I8, idesc("i8", 128, 40, "s8", "s8", "s32"), "idesc-shape",
     "N = 40 is not legal for kind::i8 .cta_group::1 [rule idesc-shape]"),
    (WS, idesc("f8f6f4", 64, 96, "e4m3", "e4m3"), "idesc-shape",
     "N = 96 is not legal for kind::f8f6f4 .cta_group::1 .ws [rule idesc-shape]"),
    (MXF8, bs("mxf8f6f4", 64, 64, "e4m3", "e4m3"), "idesc-shape",
     "M = 64 is not legal for kind::mxf8f6f4 .cta_group::1 [rule idesc-shape]"),
    (form_of(f"{MMA}.kind::f8f6f4 {D}, %p1;"), idesc("f8f6f4", 128, 8, "e4m3", "e4m3", b_major=1), "idesc-shape",
     "N = 8 with an MN-major 8-bit B operand is not legal [rule idesc-shape]"),
    (MXF8, bs("mxf8f6f4", 128, 64, "e4m3", "e4m3", "ue4m3"), "idesc-scale",
     "scale type UE4M3 is not allowed with kind::mxf8f6f4 .scale_vec::1X [rule idesc-scale]"),
    (NVF4_2X, bs("mxf4nvf4", 128, 64, "e2m1", "e2m1", "ue4m3"), "idesc-scale",
     "scale type UE4M3 is not allowed with kind::mxf4nvf4 .scale_vec::2X [rule idesc-scale]"),
    (NVF4_2X, bs("mxf4nvf4", 128, 64, "e2m1", "e2m1", sfa_id=1), "idesc-scale",
     "SFA id 1 is not legal with .scale_vec::2X [rule idesc-scale]"),
    (NVF4_4X, bs("mxf4nvf4", 128, 64, "e2m1", "e2m1", "ue4m3", sfb_id=2), "idesc-scale",
     "SFB id 2 is not legal with .scale_vec::4X [rule idesc-scale]"),
    (MXF4, bs("mxf4", 128, 64, "e2m1", "e2m1", k_size=1), "idesc-k",
     "the K96 bit (31) is set; K = 96 is supported only on sm_103a [rule idesc-k]"),
]


@pytest.mark.parametrize("form, value, rule, message", DYNAMIC, ids=[f"{i}-{d[2]}" for i, d in enumerate(DYNAMIC)])
def test_dynamic_idesc_rule(form, value, rule, message):
    with pytest.raises(VerifyError) as e:
        check_idesc(form, value)
    assert e.value.message == message


def test_legal_idesc_values():
    s = check_idesc(F16, idesc("f16", 64, 8, "f16", "f16", "f16", negate_a=1, a_major=1))
    assert (s.m, s.n, s.k, s.a_fmt, s.d_fmt, s.a_major, s.negate_a) == (64, 8, 16, "f16", "f16", "MN", True)
    s = check_idesc(NVF4_4X, bs("mxf4nvf4", 128, 256, "e2m1", "e2m1", "ue4m3"))
    assert (s.k, s.scale_fmt, NVF4_4X.scale_block, NVF4_4X.nsf) == (64, "ue4m3", 16, 4)
    s = check_idesc(MXF8, bs("mxf8f6f4", 128, 8, "e2m3", "e2m1", sfa_id=3, sfb_id=1))
    assert (s.a_fmt, s.b_fmt, s.sfa_id, s.sfb_id, MXF8.scale_block) == ("e2m3", "e2m1", 3, 1, 32)
    assert check_idesc(WS, idesc("f8f6f4", 32, 256, "e5m2", "e4m3", "f16", max_shift=3)).m == 32
    assert legal_n("i8", 1, False)[:5] == (8, 16, 24, 32, 48)


def sdesc(**kw):
    return SmemDescriptor(**{"start_address": 0x400, "lbo": 16, "sbo": 1024, "swizzle": "128B", **kw}).encode()


def test_smem_descriptor_rules():
    with pytest.raises(VerifyError) as e:
        check_smem_desc(sdesc(fixed=0), "the A descriptor")
    assert e.value.message == ("the A descriptor 0x4000004000010040: bits 46-48 = 0b000 [rule desc-fixed]")
    with pytest.raises(VerifyError) as e:
        check_smem_desc(sdesc(reserved=1 << 60), "the B descriptor")
    assert "reserved bits 0x1000000000000000 [rule desc-fixed]" in e.value.message
    with pytest.raises(VerifyError) as e:
        check_smem_desc(sdesc(swizzle="invalid5"), "the A descriptor")
    assert e.value.message.endswith("swizzle code 5 is reserved [rule desc-swizzle]")
    with pytest.raises(VerifyError) as e:
        check_smem_desc(sdesc(lbo_mode=1), "the A descriptor")
    assert e.value.message.endswith("which is supported only on sm_103a [rule desc-lbo-mode]")
    with pytest.raises(UnsupportedError) as e:
        check_smem_desc(sdesc(base_offset=1), "the A descriptor")
    assert "base offset 1" in e.value.message
    with pytest.raises(VerifyError) as e:
        check_smem_desc(sdesc(start_address=0x470), "the A descriptor", major="K", k_bytes=32)
    assert e.value.message.startswith("the A descriptor: a K-major slice of 32 bytes starting 112 bytes into a "
                                      "128-byte swizzle atom row crosses the row")
    assert check_smem_desc(sdesc(start_address=0x460), "A", major="K", k_bytes=32).start_address == 0x460
    with pytest.raises(VerifyError, match="needs swizzle mode 1"):
        check_smem_desc(sdesc(), "A", major="MN", fmt="tf32")
    with pytest.raises(VerifyError, match="only for MN-major tf32"):
        check_smem_desc(sdesc(swizzle="128B_base32B"), "A", major="MN", fmt="bf16")
    assert check_smem_desc(sdesc(swizzle="128B_base32B"), "A", major="MN", fmt="tf32").swizzle == "128B_base32B"


def test_cp_form():
    f = parse_cp(parse(module("  tcgen05.cp.cta_group::2.32x128b.warpx4.b8x16.b6x16_p32 [%r1], %rd1;"), "t")
                 .kernel().body[0])
    assert (f.cta_group, f.shape, f.multicast, f.src_fmt, f.rows, f.row_bytes) == (2, "32x128b", "warpx4",
                                                                                   "b6x16_p32", 32, 16)
