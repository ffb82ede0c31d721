"""Class 7 (a missing tcgen05.fence::after_thread_sync), the rule of :func:`tcsim.race.explain.fence_discipline`:
an asynchronous tcgen05 op ordered after another thread's work only through an mbarrier wait, with no
::after_thread_sync between the wait and the op -- the accumulator read after the commit's wait (tcgen05.ld, TMEM)
and the MMA issued after the wait for its TMA operands (SMEM):

* after a ``.relaxed`` wait (the PTX ISA 9.1 §9.7.16.6.4.4 canonical pattern, where the fence is the only edge):
  an error;
* after a default (acquire) wait, in a kernel that uses tcgen05.fence::after_thread_sync elsewhere: a lint note
  (the canonical pattern has the fence; the acquire orders the op by the standard memory model, §9.7.16.6.3);
* in a kernel with no tcgen05 fence at all (Triton, CuTe DSL; tests/fixtures/triton): nothing.

Each buggy kernel is a one-line edit of its correct twin (the tcgen05 walkthrough example, the zoo's pipelined
GEMM template); the fence-free variants remove every tcgen05 fence."""
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
FENCE = "tcgen05.fence::after_thread_sync"
WALK_MMA_WAIT = "\tmbarrier.try_wait.parity.shared::cta.b64 \t%p6, [%r11], 0;"


def no_tcgen05_fences(text: str) -> str:
    return "\n".join(ln for ln in text.split("\n") if "tcgen05.fence::" not in ln.split("//")[0])


def relaxed(text: str, wait: str) -> str:
    assert text.count(wait) == 1
    return text.replace(wait, wait.replace(".parity.shared", ".parity.relaxed.cluster.shared"))


def without_fence_after(text: str, wait_branch: str) -> str:
    lines = text.split("\n")
    i = lines.index(wait_branch)
    assert lines[i + 1] == AFTER
    return "\n".join(lines[:i + 1] + lines[i + 2:])


def run_walk(ptx):
    out = []
    for timing, seed in MODES:
        launch = dataclasses.replace(walk.make_launch(), ptx=ptx, name="walk")
        out.append(((timing, seed), run_launch(launch, timing=timing, seed=seed)))
    return out


def only_class7(results, severity):
    for mode, r in results:
        assert r.findings and all(f.cls == 7 and f.severity == severity for f in r.findings), \
            f"{mode}: {[str(f) for f in r.findings]}"


# ---------------------------------------------------------------------------------------------- TMEM: tcgen05.ld
def test_relaxed_commit_wait_with_the_fence_is_clean():
    assert_clean(run_walk(relaxed(WALK, WALK_MMA_WAIT)))


def test_ld_after_a_relaxed_commit_wait_without_after_thread_sync_is_a_class_7_error():
    ptx = without_fence_after(relaxed(WALK, WALK_MMA_WAIT), "\t@!%p6 bra \t$L_wait_mma;")
    res = run_walk(ptx)
    assert_found(res, 7, (line_with(ptx, MMA), line_with(ptx, LD)), FENCE)
    only_class7(res, "error")


def test_ld_after_an_acquire_commit_wait_without_after_thread_sync_is_a_lint_note_in_a_fenced_kernel():
    ptx = without_fence_after(WALK, "\t@!%p6 bra \t$L_wait_mma;")
    res = run_walk(ptx)
    assert_found(res, 7, (line_with(ptx, MMA), line_with(ptx, LD)), FENCE)
    only_class7(res, "lint")


def test_fence_free_walkthrough_is_not_checked():
    # the same commit -> (acquire) wait -> tcgen05.ld and alloc -> bar.sync -> tcgen05.st, no tcgen05 fence at all
    ptx = no_tcgen05_fences(WALK)
    assert not fence_discipline(load_program(parse(ptx)))
    res = run_walk(ptx)
    assert_clean(res)
    for (_, a), (_, b) in zip(res, run_walk(WALK)):
        for x, y in zip(a.outputs, b.outputs):
            assert np.array_equal(x, y)


def test_fence_free_kernel_with_a_relaxed_commit_wait_is_still_an_error():
    # a .relaxed wait orders nothing by itself: the fence is required whatever the rest of the kernel does
    ptx = no_tcgen05_fences(relaxed(WALK, WALK_MMA_WAIT))
    res = run_walk(ptx)
    assert_found(res, 7, (line_with(ptx, MMA), line_with(ptx, LD)), FENCE)
    only_class7(res, "error")


# The judgement follows the waits that carried the MMA's epoch to the load, not the warp's latest wait: a second wait
# after the commit's wait, on the full barrier (its phase 0 completed long before: it returns at once), changes
# which wait is the warp's latest but not which one ordered the MMA before the load.
WALK_FULL_AGAIN = "\tmbarrier.try_wait.parity{sem}.shared::cta.b64 \t%p7, [%r10], 0;"


def then_full_wait(text: str, sem: str) -> str:
    """After the commit's wait (and in place of its fence): a wait on the full barrier with ``sem``."""
    lines = text.split("\n")
    i = lines.index("\t@!%p6 bra \t$L_wait_mma;")
    assert lines[i + 1] == AFTER
    return "\n".join(lines[:i + 1] + [WALK_FULL_AGAIN.format(sem=sem)] + lines[i + 2:])


def test_acquire_commit_wait_then_a_relaxed_wait_elsewhere_is_a_lint_note_not_an_error():
    # the acquire wait carried the MMA here; the later .relaxed wait (the warp's latest) carried nothing of it
    ptx = then_full_wait(WALK, ".relaxed.cluster")
    res = run_walk(ptx)
    assert_found(res, 7, (line_with(ptx, MMA), line_with(ptx, LD)), FENCE)
    only_class7(res, "lint")


def test_relaxed_commit_wait_then_an_acquire_wait_elsewhere_is_still_an_error():
    # the MMA reached the load only through the .relaxed wait; the later acquire wait (the warp's latest) is on a
    # barrier the MMA's commit never arrived on, so it orders nothing of it
    ptx = then_full_wait(relaxed(WALK, WALK_MMA_WAIT), "")
    res = run_walk(ptx)
    assert_found(res, 7, (line_with(ptx, MMA), line_with(ptx, LD)), FENCE)
    only_class7(res, "error")


# ---------------------------------------------------------------------------------------------- SMEM: tcgen05.mma
RING = next(p for p in zoo.PAIRS if p.template == "gemm_ring")
RING_FULL_WAIT = "\tmbarrier.try_wait.parity.shared::cta.b64 \t%p5, [%r24], %r33;"


def ring_template() -> str:
    tmpl = (zoo.TEMPLATES / "gemm_ring.ptx.tmpl").read_text()
    assert tmpl.count("// @fence") == 1
    return tmpl


def drop_fence(text: str) -> str:
    return "\n".join(ln for ln in text.split("\n") if not ln.rstrip().endswith("// @fence"))


def run_ring(ptx):
    out = []
    for timing, seed in MODES:
        launch, expect = zoo.make_launch(RING, ptx)
        res = run_launch(launch, timing=timing, seed=seed)
        for i, want in expect.items():
            assert np.allclose(res.outputs[i], want, rtol=1e-2, atol=1e-2)
        out.append(((timing, seed), res))
    return out


def assert_mma_class7(ptx, severity):
    res = run_ring(ptx)
    refill, mma = line_of(ptx, "refill"), line_of(ptx, "mma")
    for mode, r in res:
        hits = [f for f in r.findings if f.cls == 7 and refill in f.lines and mma in f.lines]
        assert hits, f"{mode}: {[str(f) for f in r.findings]}"
        assert all(FENCE in f.missing for f in hits)
    only_class7(res, severity)


@pytest.mark.parametrize("wait", ["acquire", "relaxed"])
def test_ring_twins_are_clean(wait):
    ptx = ring_template() if wait == "acquire" else relaxed(ring_template(), RING_FULL_WAIT)
    assert_clean(run_ring(ptx))


def test_mma_after_a_relaxed_full_wait_without_after_thread_sync_is_a_class_7_error():
    assert_mma_class7(drop_fence(relaxed(ring_template(), RING_FULL_WAIT)), "error")


def test_mma_after_an_acquire_full_wait_without_after_thread_sync_is_a_lint_note_in_a_fenced_kernel():
    assert_mma_class7(drop_fence(ring_template()), "lint")


def test_fence_free_ring_is_not_checked():
    assert_clean(run_ring(no_tcgen05_fences(ring_template())))


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
