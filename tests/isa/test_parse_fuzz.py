"""Robustness: truncated / garbled real PTX must give a Module or a PtxSyntaxError -- never another exception."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from tcsim.isa.errors import PtxSyntaxError
from tcsim.isa.parser import parse

REPO = Path(__file__).resolve().parents[2]
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels"     # copies of ../shared/bench

HAND_WRITTEN = r"""
.version 9.0
.target sm_100a
.address_size 64
.file 1 "/src/k.cu"
.extern .shared .align 1024 .b8 smem[];
.global .align 8 .u64 tbl[2] = {smem, generic(gv)+8};
.global .align 4 .u32 gv = 0x10 << 2;
.visible .entry k(
    .param .align 64 .b8 tmap[128],
    .param .u64 .ptr .global .align 16 out,
    .param .u32 n
)
.maxntid 128, 1, 1
.reqnctapercluster 2
.explicitcluster
{
    .reg .pred %p<4>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<8>;
    .shared .align 8 .b64 mbar[2];
    .loc 1 10 3
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    elect.sync %r3|%p1, -1;
    @!%p1 bra $L__skip;
    mbarrier.init.shared::cta.b64 [mbar], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [mbar+8], 16384;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [smem], [tmap, {%r1, 0}], [mbar];
$L__skip:
    {
    .reg .pred P1;
    LAB_WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 P1, [mbar], 0;
    @P1 bra DONE;
    bra LAB_WAIT;
    DONE:
    }
    tcgen05.mma.cta_group::1.kind::f16 [%r4], %rd1, %rd2, %r5, %p2;
    tcgen05.ld.sync.aligned.32x32b.x4.b32 {%r8, %r9, %r10, _}, [%r4+0x10];
    mov.f32 %f1, 0f3F800000;
    add.f32 %f2, %f1, 0d3FF0000000000000;
    add.s32 %r6, %r1, (1 << 4) * -3 + ~0;  /* block
    comment */ ld.param.u64 %rd3, [out];
    st.global.v2.f32 [%rd3+-8], {%f1, %f2};
    ret;
}
"""


def _sources() -> list:
    srcs = [("hand_written", HAND_WRITTEN)]
    for p in [BENCH / "alu_loop.sm_100a.ptx",
              REPO / "tests/fixtures/nvcc/tma_mbarrier.sm_100a.ptx",
              REPO / "tests/fixtures/nvcc/printf_calls.sm_100a.ptx",
              REPO / "tests/fixtures/nvcc/tcgen05_mma.lineinfo.sm_100a.ptx",
              REPO / "tests/fixtures/triton/vector_add.sm_100a.ptx"]:
        srcs.append((p.name, p.read_text()))         # every one is tracked: a missing file is an error
    return srcs


_JUNK = ["{", "}", "[", "]", "(", ")", ";", ",", ":", "@", "!", "%", "_", "$", "-", "+", "*", "/", "<", ">", "|",
         "&", "^", "~", "=", '"', "'", "#", "\\", " ", "\n", "0", "9", "x", "f", "U", ".", "/*", "*/", "//", "0f",
         "0d", ".reg", ".param", ".shared", "%r<", "%r1", "@%p1", "bra", "LAB_WAIT:", ".loc 9 1 1", ".file",
         "{ .reg .pred P1;", "1.5e", "0x", "0b2", "::", ".v4", "\t", "\u00e9", "\x00", "(((((", "]]]", "-9" * 30]


def _mutate(rng: random.Random, s: str) -> str:
    n = len(s)
    op = rng.randrange(9)
    i = rng.randrange(n + 1)
    if op == 0:                                   # truncate
        return s[:i]
    if op == 1:                                   # delete a span
        return s[:i] + s[i + rng.randint(1, 12):]
    if op == 2:                                   # insert junk
        return s[:i] + rng.choice(_JUNK) + s[i:]
    if op == 3:                                   # replace one char
        return s[:i] + rng.choice(_JUNK) + s[i + 1:]
    lines = s.split("\n")
    j = rng.randrange(len(lines))
    if op == 4:                                   # delete a line
        del lines[j]
    elif op == 5:                                 # duplicate a line
        lines.insert(j, lines[j])
    elif op == 6:                                 # swap two lines
        k = rng.randrange(len(lines))
        lines[j], lines[k] = lines[k], lines[j]
    elif op == 7:                                 # shuffle the characters of one line
        c = list(lines[j])
        rng.shuffle(c)
        lines[j] = "".join(c)
    else:                                         # truncate mid-line and stop there
        lines = lines[:j] + [lines[j][: rng.randrange(len(lines[j]) + 1)]]
    return "\n".join(lines)


@pytest.mark.parametrize("name,text", _sources(), ids=[n for n, _ in _sources()])
def test_fuzz_only_syntax_errors(name, text):
    parse(text)   # the unmutated source is valid
    rng = random.Random(f"tcsim-fuzz-{name}")
    errors = 0
    for trial in range(300):
        s = text
        for _ in range(rng.randint(1, 3)):
            s = _mutate(rng, s)
        try:
            parse(s, "fuzz.ptx")
        except PtxSyntaxError as e:
            errors += 1
            assert e.loc is not None and e.loc.file == "fuzz.ptx"
            nlines = s.count("\n") + 1
            assert 1 <= e.loc.line <= nlines and e.loc.col >= 1, (trial, str(e))
            assert e.loc.text == s.split("\n")[e.loc.line - 1].rstrip("\r")
        except Exception as e:  # pragma: no cover - this is the failure being tested for
            pytest.fail(f"trial {trial}: {type(e).__name__}: {e}\n--- input ---\n{s}")
    assert errors > 100   # the mutations really do break things


def test_fuzz_random_token_soup():
    rng = random.Random(1234)
    for _ in range(400):
        s = ".version 9.0\n.target sm_100a\n" + "".join(rng.choice(_JUNK) + rng.choice(["", " "])
                                                       for _ in range(rng.randint(0, 40)))
        try:
            parse(s)
        except PtxSyntaxError:
            pass
