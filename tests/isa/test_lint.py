"""isa/lint.py: each note fires exactly on the construct it describes (the fuzz reproducers in
tests/fuzz_regressions check that each diagnosed finding is noted; these check the conditions both ways)."""
from __future__ import annotations

import pytest

from sim.cli import ptx_notes


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
    ("abs.s32 %r0, %r1;", False),
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
])
def test_note_fires_on_its_construct_only(body, noted):
    last = body.splitlines()[-1].strip()
    assert _noted_lines(body) == ([last] if noted else [])


def test_notes_are_for_the_hopper_toolchain_findings():
    # every one of these was measured with ptxas 13.0 for sm_90a; sm_100a code gets no note
    for body in ("@%p0 set.lt.f32.f32 %r0, %r1, %r2;", "abs.s16 %h0, %h1;", "mad.hi.u32 %r0, %r1, %r2, %r0;",
                 "sqrt.rn.f32 %r1, %r2;\n    shl.b64 %rd0, %rd1, %r1;"):
        assert _noted_lines(body, "sm_100a") == []
        assert _noted_lines(body, "sm_90a")


def test_note_text_names_the_location_and_the_dependence():
    text = _kernel("mad.hi.u32 %r0, %r1, %r2, %r0;")
    (n,) = ptx_notes(text, "lint.ptx")
    assert str(n).startswith(f"lint.ptx:{n.loc.line}:") and "depends on ptxas" in n.message
