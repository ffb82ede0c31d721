"""Class 7 (a missing tcgen05.fence::after_thread_sync), the rule of :func:`tcsim.race.explain.fence_discipline`:
in a kernel that uses tcgen05.fence::after_thread_sync (the PTX ISA 9.1 §9.7.16.6.4 canonical patterns), an
asynchronous tcgen05 op ordered after another thread's work only through a thread synchronisation, with no
::after_thread_sync between the synchronisation and the op, is an error -- the accumulator read after the commit's
mbarrier wait (tcgen05.ld, TMEM) and the MMA issued after the wait for its TMA operands (SMEM).  A kernel with no
tcgen05 fence at all (what Triton and the CuTe DSL emit; tests/fixtures/triton) is not checked: it orders its
tcgen05 ops by the wait's acquire semantics only (§9.7.16.6.3) and runs correctly on B200.
Each buggy kernel is a one-line edit of its correct twin; fence-free variants remove every tcgen05 fence."""
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from tcsim.engine import load_program
from tcsim.examples import tcgen05_walkthrough as walk
from tcsim.isa.parser import parse
from tcsim.launch import run_launch
from tcsim.race.explain import fence_discipline
from tests.race.hb_common import MODES, assert_clean, assert_found, line_of, line_with

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "zoo"))
import zoo  # noqa: E402

WALK = walk.PTX.read_text()
MMA = "tcgen05.mma.cta_group::1.kind::f16.collector::a::fill"
LD = "tcgen05.ld.sync.aligned.16x32bx2.x32.b32"
AFTER = "\ttcgen05.fence::after_thread_sync;"


def no_tcgen05_fences(text: str) -> str:
    return "\n".join(ln for ln in text.split("\n") if "tcgen05.fence::" not in ln.split("//")[0])


def run_walk(ptx):
    out = []
    for timing, seed in MODES:
        launch = dataclasses.replace(walk.make_launch(), ptx=ptx, name="walk")
        out.append(((timing, seed), run_launch(launch, timing=timing, seed=seed)))
    return out


def without_fence_after(text: str, wait_branch: str) -> str:
    lines = text.split("\n")
    i = lines.index(wait_branch)
    assert lines[i + 1] == AFTER
    return "\n".join(lines[:i + 1] + lines[i + 2:])


# ---------------------------------------------------------------------------------------------- TMEM: tcgen05.ld
def test_ld_after_the_commit_wait_without_after_thread_sync_is_class_7():
    ptx = without_fence_after(WALK, "\t@!%p6 bra \t$L_wait_mma;")
    assert_found(run_walk(ptx), 7, (line_with(ptx, MMA), line_with(ptx, LD)), "tcgen05.fence::after_thread_sync")
    for _, r in run_walk(ptx):
        assert {f.cls for f in r.findings} == {7} and all(f.severity == "error" for f in r.findings)


def test_fence_free_walkthrough_is_not_checked():
    # the same commit -> wait -> tcgen05.ld (and alloc -> bar.sync -> tcgen05.st), no tcgen05 fence anywhere
    ptx = no_tcgen05_fences(WALK)
    assert not fence_discipline(load_program(parse(ptx)))
    res = run_walk(ptx)
    assert_clean(res)
    ref = run_walk(WALK)
    for (_, a), (_, b) in zip(res, ref):
        for x, y in zip(a.outputs, b.outputs):
            assert np.array_equal(x, y)


# ---------------------------------------------------------------------------------------------- SMEM: tcgen05.mma
RING = next(p for p in zoo.PAIRS if p.template == "gemm_ring")


def run_ring(ptx):
    out = []
    for timing, seed in MODES:
        launch, expect = zoo.make_launch(RING, ptx)
        res = run_launch(launch, timing=timing, seed=seed)
        for i, want in expect.items():
            assert np.allclose(res.outputs[i], want, rtol=1e-2, atol=1e-2)
        out.append(((timing, seed), res))
    return out


def ring_correct() -> str:
    tmpl = (zoo.TEMPLATES / "gemm_ring.ptx.tmpl").read_text()
    assert tmpl.count("// @fence") == 1
    return tmpl


def test_ring_twin_is_clean():
    assert_clean(run_ring(ring_correct()))


def test_mma_after_the_full_wait_without_after_thread_sync_is_class_7():
    ptx = "\n".join(ln for ln in ring_correct().split("\n") if not ln.rstrip().endswith("// @fence"))
    res = run_ring(ptx)
    refill = line_of(ptx, "refill")
    mma = line_of(ptx, "mma")
    for mode, r in res:
        hits = [f for f in r.findings if f.cls == 7 and refill in f.lines and mma in f.lines]
        assert hits, f"{mode}: {[str(f) for f in r.findings]}"
        assert all("tcgen05.fence::after_thread_sync" in f.missing and f.severity == "error" for f in hits)
        assert {f.cls for f in r.findings} == {7}


def test_fence_free_ring_is_not_checked():
    assert_clean(run_ring(no_tcgen05_fences(ring_correct())))


# ---------------------------------------------------------------------------------------------- the rule
@pytest.mark.parametrize("path,fenced", [
    ("tests/fixtures/triton/tma_matmul_bf16.sm_100a.ptx", False),
    ("tests/fixtures/triton/ws_matmul_f16.sm_100a.ptx", False),
    ("tests/fixtures/triton/cute_dsl/cute_gemm_bf16.sm_100a.ptx", False),
    ("examples/gemm_async.ptx", True),
    ("tests/fixtures/nvcc/tcgen05_mma.sm_100a.ptx", True),
])
def test_fence_discipline_of_shipped_kernels(path, fenced):
    assert fence_discipline(load_program(parse((ROOT / path).read_text()))) is fenced
