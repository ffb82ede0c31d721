"""Happens-before detector, TMEM and tcgen05 checks (sim/race/hb.py, explain.py): class 6 (a tcgen05.ld of the
accumulator issued before the MMA's tcgen05.commit -> mbarrier wait, PTX ISA 9.1 §9.7.16.9.2; TMEM freed before
tcgen05.wait::ld, §9.7.16.8.5), class 7 (tcgen05 ops of different warps ordered through a thread sync without
tcgen05.fence::before_thread_sync / ::after_thread_sync, §9.7.16.6; in kernels that use the fences) and class 19 (tcgen05.ld destination registers
used before tcgen05.wait::ld, §9.7.16.8.3).  The correct twins are the tcgen05 walkthrough example and a one-warp
alloc / st / ld / dealloc kernel; each buggy kernel is a minimal edit of its twin."""
import dataclasses

import numpy as np

from tcsim.examples import tcgen05_walkthrough as walk
from tests.ptx_frame import kernel
from tests.race.hb_common import MODES, assert_clean, assert_found, line_of, line_with, runs

WALK = walk.PTX.read_text()
MMA = "tcgen05.mma.cta_group::1.kind::f16.collector::a::fill"
LD = "tcgen05.ld.sync.aligned.16x32bx2.x32.b32"


def run_walk(ptx):
    out = []
    for timing, seed in MODES:
        launch = dataclasses.replace(walk.make_launch(), ptx=ptx, name="walk")
        from tcsim.launch import run_launch
        out.append(((timing, seed), run_launch(launch, timing=timing, seed=seed)))
    return out


def drop(text, *lines):
    for ln in lines:
        assert text.count(ln) == 1, ln
        text = text.replace(ln + "\n", "")
    return text


def test_walkthrough_is_clean():
    assert_clean(run_walk(WALK))


def test_ld_of_the_accumulator_before_the_commit_wait_is_class_6():
    # the wait on the commit's mbarrier moves after the loads (TMEM stays allocated until the MMA completes)
    wait = "$L_wait_mma:\n\tmbarrier.try_wait.parity.shared::cta.b64 \t%p6, [%r11], 0;\n\t@!%p6 bra \t$L_wait_mma;\n"
    assert WALK.count(wait) == 1
    ptx = WALK.replace(wait, "").replace("\t// ---- release the tensor memory\n", wait)
    assert_found(run_walk(ptx), 6, (line_with(ptx, MMA), line_with(ptx, LD)), "tcgen05.commit")


def test_a_commit_wait_without_after_thread_sync_is_a_class_7_lint_note_in_a_fenced_kernel():
    """The walkthrough uses tcgen05.fence::after_thread_sync after its other thread synchronisations; the commit ->
    (acquire) mbarrier wait -> tcgen05.ld without it departs from the PTX ISA 9.1 canonical pattern
    (§9.7.16.6.4.4) but the acquire orders the load (§9.7.16.6.3): a class-7 lint note, not an error.  The .relaxed
    wait (an error) and fence-free kernels (nothing): tests/race/test_hb_tcgen05_fences.py."""
    after = "\ttcgen05.fence::after_thread_sync;"
    lines = WALK.splitlines()
    i = lines.index("\t@!%p6 bra \t$L_wait_mma;")
    assert lines[i + 1] == after
    ptx = "\n".join(lines[:i + 1] + lines[i + 2:]) + "\n"
    res = run_walk(ptx)
    assert_found(res, 7, (line_with(ptx, MMA), line_with(ptx, LD)), "tcgen05.fence::after_thread_sync")
    assert all(f.severity == "lint" for _, r in res for f in r.findings)


def test_missing_after_thread_sync_after_the_alloc_barrier_is_class_7():
    lines = WALK.splitlines()
    i = lines.index("\ttcgen05.fence::before_thread_sync;")
    assert lines[i + 1] == "\tbar.sync \t0;" and lines[i + 2] == "\ttcgen05.fence::after_thread_sync;"
    ptx = "\n".join(lines[:i + 2] + lines[i + 3:]) + "\n"
    alloc = line_with(ptx, "tcgen05.alloc.cta_group::1")
    st = line_with(ptx, "tcgen05.st.sync.aligned.16x32bx2")
    assert_found(run_walk(ptx), 7, (alloc, st), "tcgen05.fence::after_thread_sync")


# ---------------------------------------------------------------------------------------------- one warp
ONE = """  mov.u32 %r1, %tid.x;
  mov.u32 %r2, taddr;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd1, %rd1, %rd2;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 32;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
  ld.shared.b32 %r3, [%r2];
  add.u32 %r4, %r1, 7;
  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r3], {{%r4}};
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.32x32b.x1.b32 {{%r5}}, [%r3];   // @ld
{a}
  add.u32 %r6, %r5, 1;   // @use
{b}
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;   // @dealloc
{c}
  st.global.u32 [%rd1], %r6;
  ret;"""
WAIT_LD = "  tcgen05.wait::ld.sync.aligned;"


def one(a=WAIT_LD, b="", c=""):
    return kernel(ONE.format(a=a, b=b, c=c), shared="  .shared .align 16 .b32 taddr[4];")


def run_one(ptx):
    res = runs(ptx, [np.zeros(32, np.uint32)], block=(32, 1, 1))
    for _, r in res:
        assert np.array_equal(r.outputs[0], np.arange(32, dtype=np.uint32) + 8)
    return res


def test_one_warp_twin_is_clean():
    assert_clean(run_one(one()))


def test_dealloc_before_wait_ld_is_class_6():
    ptx = one(a="", c=WAIT_LD).replace("  add.u32 %r6, %r5, 1;   // @use\n", "").replace(
        "  st.global.u32 [%rd1], %r6;", "  add.u32 %r6, %r5, 1;\n  st.global.u32 [%rd1], %r6;")
    res = runs(ptx, [np.zeros(32, np.uint32)], block=(32, 1, 1))
    assert_found(res, 6, (line_of(ptx, "ld"), line_of(ptx, "dealloc")), "tcgen05.wait::ld")


def test_ld_destination_used_before_wait_ld_is_class_19():
    ptx = one(a="", b=WAIT_LD)
    res = runs(ptx, [np.zeros(32, np.uint32)], block=(32, 1, 1))
    assert_found(res, 19, (line_of(ptx, "ld"), line_of(ptx, "use")), "tcgen05.wait::ld")
    for _, r in res:
        assert {f.cls for f in r.findings} == {19}
