"""Synchronous tcgen05 instructions after a thread synchronisation need no tcgen05.fence::after_thread_sync.

PTX ISA 9.1 §9.7.16.6.1 sorts the tcgen05 instructions into asynchronous ones (.mma, .cp, .shift, .ld, .st) and
synchronous ones (.alloc, .dealloc, .relinquish_alloc_permit, .fence, .wait, .commit); ::after_thread_sync orders
the *asynchronous* operations after it (§9.7.16.6.3).  A tcgen05.dealloc after the barrier that the loading warps
reach after tcgen05.wait::ld and tcgen05.fence::before_thread_sync is ordered after their loads by the barrier
alone -- DeepGEMM's sm100 epilogue frees TMEM so and runs on B200.  The detector reported it class 7.

Twins (one-line edits of the tcgen05 walkthrough example, which fences on both sides):
* no ::after_thread_sync before the dealloc: clean;
* no barrier before the dealloc either: it frees columns the other warps' tcgen05.ld may still read -- class 6,
  naming the ld and the dealloc, the missing edge their tcgen05.wait::ld ordered before it (really missing there);
(An asynchronous op after the wait with no ::after_thread_sync stays class 7: tests/race/test_hb_tcgen05_fences.py.)"""
import dataclasses

from tcsim.examples import tcgen05_walkthrough as walk
from tcsim.launch import run_launch
from tests.race.hb_common import assert_clean, assert_found, line_with

WALK = walk.PTX.read_text()
LD = "tcgen05.ld.sync.aligned.16x32bx2.x32.b32"
DEALLOC = "tcgen05.dealloc.cta_group::1.sync.aligned.b32"
AFTER = "\ttcgen05.fence::after_thread_sync;"
WAIT_LD = "\ttcgen05.wait::ld.sync.aligned;"
RELEASE = "\t@%p2 bra \t$L_end;"


def without_after_before_dealloc(text: str) -> str:
    lines = text.split("\n")
    i = lines.index(RELEASE)
    assert lines[i + 1] == AFTER and DEALLOC in lines[i + 2]
    return "\n".join(lines[:i + 1] + lines[i + 2:])


# timing off and on (a seed): the verdict must not depend on the schedule; two modes keep the CI cost low
MODES = [(False, None), (True, 1)]


def run_walk(ptx, modes=MODES):
    out = []
    for timing, seed in modes:
        launch = dataclasses.replace(walk.make_launch(), ptx=ptx, name="walk")
        out.append(((timing, seed), run_launch(launch, timing=timing, seed=seed)))
    return out


def test_dealloc_after_the_barrier_without_after_thread_sync_is_clean():
    assert_clean(run_walk(without_after_before_dealloc(WALK)))


def test_dealloc_not_ordered_after_the_other_warps_loads_is_still_class_6():
    # drop the barrier before the dealloc: warp 0 frees the columns the other warps' tcgen05.ld still read
    lines = without_after_before_dealloc(WALK).split("\n")
    i = lines.index(RELEASE)
    assert lines[i - 1] == "\tbar.sync \t0;" and lines[i - 2] == "\ttcgen05.fence::before_thread_sync;"
    ptx = "\n".join(lines[:i - 1] + lines[i:])
    res = run_walk(ptx)
    assert_found(res, 6, (line_with(ptx, LD), line_with(ptx, DEALLOC)), "tcgen05.wait::ld")
