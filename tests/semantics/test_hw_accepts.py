"""What ptxas and the hardware accept (issue 15 item 5): constructs that ship in ThunderKittens / CUTLASS kernels
and run on B200, modelled as the hardware executes them, with a lint note where the PTX ISA calls them undefined.

(a) a generic SMEM address given to ``tcgen05.alloc...shared::cta`` -- ptxas stores through its low 32 bits
    (PTX ISA 9.1 §9.7.16.7.1 makes ``dst`` a ``.shared::cta`` address): modelled, lint note;
(b) a 32-bit shared address given to the generic ``tcgen05.commit...mbarrier::arrive::one.b64 [%r]`` -- ptxas
    passes the low 32 bits to the commit (PTX ISA 9.1 §9.7.16.12.1: outside the .shared::cluster window is
    undefined): modelled, lint note;
(c) lanes 1-31 reaching the warp-collective ``tcgen05.dealloc.sync.aligned`` while lane 0 still waits in
    ``cp.async.bulk.wait_group.read`` -- ``.sync`` makes each thread wait for the warp (PTX ISA 9.1 §9.7.16.7.1),
    ptxas reconverges (``WARPSYNC.ALL``) before it: the lanes wait, no finding.  A real divergence (lanes that
    take a path skipping the collective, lanes predicated off) still gets the located diagnostic.

Kernels are written here in the shape those projects ship (generic ``&smem_word`` to the alloc, a
``cvta.to.shared`` barrier address to the commit, an ``if (lane == 0)`` bulk-store epilogue before the dealloc);
each is checked with ``ptxas -arch=sm_100a`` when ptxas is on PATH.  Every kernel runs with timing off and on and
schedule seeds None / 1 / 2.
"""

import numpy as np
import pytest

from tcsim.isa.errors import SyncError
from tests.semantics.test_tcgen05_mem import assert_ptxas
from tcsim.launch import Launch, run_launch

SCHEDULES = [(t, s) for t in (False, True) for s in (None, 1, 2)]


def line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, l in enumerate(text.splitlines()) if needle in l)


# One warp: allocate TMEM (construct a: the generic address of the SMEM word), write lane id + 7 to TMEM column 0,
# read it back, stage it in SMEM, and have lane 0 alone bulk-store SMEM to global memory and wait for the read of
# the source (construct c: the other lanes go straight to the dealloc), then commit an (empty) tcgen05 batch to an
# mbarrier named by a 32-bit shared address with no state space (construct b) and wait on it.
KERNEL = """.version 8.7
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  .shared .align 16 .b32 stage[32];
  .shared .align 8 .b64 bar;
  .shared .align 4 .b32 slot;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mov.u64 %rd1, slot;
  cvta.shared.u64 %rd2, %rd1;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [{ALLOC_DST}], 32;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  ld.shared.b32 %r1, [slot];
  add.u32 %r2, %r0, 7;
  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r1], {%r2};
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r3}, [%r1];
  tcgen05.wait::ld.sync.aligned;
  mov.u32 %r4, stage;
  shl.b32 %r5, %r0, 2;
  add.u32 %r6, %r4, %r5;
  st.shared.b32 [%r6], %r3;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @!%p1 bra AFTER_STORE;
  cp.async.bulk.global.shared::cta.bulk_group [%rd0], [%r4], 128;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
AFTER_STORE:
  tcgen05.fence::before_thread_sync;
  {COMMIT}
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;
  mov.u32 %r7, bar;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra WAIT;
  @%p1 cp.async.bulk.wait_group 0;
  ret;
}
"""

COMMIT_R32 = "mov.u32 %r8, bar;\n  @%p1 tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [%r8];"
COMMIT_CLUSTER = ("mov.u32 %r8, bar;\n  @%p1 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 "
                  "[%r8];")


def kernel(alloc_dst="%rd2", commit=COMMIT_R32) -> str:
    return KERNEL.replace("{ALLOC_DST}", alloc_dst).replace("{COMMIT}", commit)


def run(text, timing=False, seed=None, strict=False, observers=()):
    out = np.zeros(32, np.uint32)
    res = run_launch(Launch(ptx=text, block=(32, 1, 1), args=[out]), seed=seed, timing=timing, strict=strict,
                     observers=observers)
    return res


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_shipped_constructs_run_clean_with_lint_notes(timing, seed):
    text = kernel()
    if seed is None and not timing:
        assert_ptxas(text)
    res = run(text, timing, seed)
    assert np.array_equal(res.outputs[0], np.arange(32, dtype=np.uint32) + 7)
    assert not [f for f in res.findings if f.severity != "lint"], [str(f) for f in res.findings]
    lint = {f.lines[0]: f for f in res.findings}
    a = lint[line_of(text, "tcgen05.alloc")]
    assert a.cls == 13 and "ptxas stores the TMEM address through its low 32 bits" in a.message
    assert "§9.7.16.7.1" in a.missing and ".shared::cta" in a.missing
    b = lint[line_of(text, "tcgen05.commit")]
    assert "low 32 bits" in b.message and "§9.7.16.12.1" in b.missing
    assert len(res.findings) == 2
    # strict mode does not stop at lint notes
    assert run(text, timing, seed, strict=True).findings == res.findings


def test_the_well_formed_spellings_give_no_note():
    """The same kernel with a shared address for the alloc and .shared::cluster on the commit: no note at all."""
    text = kernel(alloc_dst="slot", commit=COMMIT_CLUSTER)
    assert_ptxas(text)
    for timing, seed in SCHEDULES:
        res = run(text, timing, seed)
        assert res.findings == [] and np.array_equal(res.outputs[0], np.arange(32, dtype=np.uint32) + 7)


def test_the_dealloc_waits_for_lane_0_and_runs_once_for_the_whole_warp():
    """(c): lanes 1-31 reach the dealloc while lane 0 is blocked in wait_group.read; they wait and the dealloc
    retires once, with all 32 lanes, after lane 0's wait."""
    from tcsim.observe import EventRecorder
    text = kernel(alloc_dst="slot", commit=COMMIT_CLUSTER)
    for timing in (False, True):
        rec = EventRecorder(kinds=("inst", "sync"))
        run(text, timing, None, observers=[rec])
        dl = line_of(text, "tcgen05.dealloc")
        wr = line_of(text, "cp.async.bulk.wait_group.read")
        retired = rec.of("inst")
        deallocs = [e for e in retired if e.fields["line"] == dl]
        assert len(deallocs) == 1 and deallocs[0].fields["mask"] == 0xFFFFFFFF
        waits = [e for e in retired if e.fields["line"] == wr]
        assert len(waits) == 1 and waits[0].fields["mask"] == 1
        assert waits[0].cycle < deallocs[0].cycle


DIVERGE = """.version 8.7
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .pred %p<4>;
  .shared .align 4 .b32 slot;
  mov.u32 %r0, %tid.x;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
  ld.shared.b32 %r1, [slot];
  setp.lt.u32 %p1, %r0, 16;
{BODY}
  ret;
}
"""


def test_a_path_that_skips_the_collective_is_still_a_located_divergence():
    """Lanes 16-31 branch past the dealloc (they never reach it): the engine does not wait for them; the dealloc's
    convergence check names both groups at the dealloc line."""
    body = ("  @!%p1 bra SKIP;\n  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;\nSKIP:\n"
            "  @!%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;\n")
    text = DIVERGE.replace("{BODY}", body)
    assert_ptxas(text)
    with pytest.raises(SyncError, match=r"tcgen05.dealloc.cta_group::1 is warp-collective but lanes 16-31 of the "
                                        r"member mask 0xffffffff are not executing it together with lanes 0-15") as e:
        run(text)
    assert f":{line_of(text, 'tcgen05.dealloc')}:" in str(e.value)


def test_lanes_that_exit_before_the_collective_are_still_an_error():
    body = "  @!%p1 exit;\n  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;\n"
    text = DIVERGE.replace("{BODY}", body)
    assert_ptxas(text)
    with pytest.raises(SyncError, match=r"executed by a warp whose lanes 16-31 have already exited"):
        run(text)


def test_lanes_held_at_a_later_collective_while_others_wait_at_an_earlier_one():
    """Lanes 0-15 wait in a loop for a flag only lanes 16-31 set after the collective: a divergence the warp can never
    resolve is reported at the collective, not left to spin."""
    body = ("  @%p1 bra LOW;\n  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;\n  bra.uni DONE;\n"
            "LOW:\n  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;\nDONE:\n")
    text = DIVERGE.replace("{BODY}", body)
    assert_ptxas(text)
    with pytest.raises(SyncError, match=r"warp-collective but lanes (0-15|16-31) of the member mask"):
        run(text)


def test_shfl_sync_waits_for_its_member_lanes():
    """The mechanism is not tcgen05-specific: lanes 1-31 of warp 0 reach a full-mask shfl.sync while lane 0 is
    blocked on an mbarrier that warp 1 completes later; they wait, and all 32 lanes shuffle together (lane 0's
    value reaches every lane)."""
    text = """.version 8.7
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  .reg .pred %p<4>;
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
  bar.sync 0;
  setp.eq.u32 %p3, %r0, 32;
  @!%p3 bra NOARRIVE;
  nanosleep.u32 2000;
  mbarrier.arrive.shared::cta.b64 %rd1, [bar];
NOARRIVE:
  setp.ge.u32 %p3, %r0, 32;
  @%p3 bra DONE;
  @!%p1 bra JOIN;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra WAIT;
JOIN:
  add.u32 %r1, %r0, 100;
  shfl.sync.idx.b32 %r2, %r1, 0, 31, -1;
  mul.wide.u32 %rd2, %r0, 4;
  add.u64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r2;
DONE:
  ret;
}
"""
    assert_ptxas(text)
    for timing, seed in SCHEDULES:
        out = np.zeros(32, np.uint32)
        res = run_launch(Launch(ptx=text, block=(64, 1, 1), args=[out]), seed=seed, timing=timing)
        assert np.array_equal(res.outputs[0], np.full(32, 100, np.uint32)) and res.findings == []
