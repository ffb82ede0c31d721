"""The fast tier's per-warp shortcuts for warp-specialized code (tcsim.fast.tier): a warp whose elected lane runs
a loop while its other lanes wait at a barrier (the single-runnable-group issue path of ``warp_process``), and the
recorded ALU instructions of a flush run as generated code (``_flush_op``) for one warp, under its issue mask
(a guard, a lane subset) -- both tiers bit-identical, and the values those of an independent Python model of the
loop."""
from __future__ import annotations

import numpy as np

from tcsim.launch import Launch, run_launch

ITERS = 37

PTX = r"""
.version 8.8
.target sm_100a
.address_size 64

.visible .entry elected_loop(
	.param .u64 out_ptr,
	.param .u32 iters
)
.reqntid 64, 1, 1
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [out_ptr];
	cvta.to.global.u64 	%rd1, %rd1;
	ld.param.u32 	%r9, [iters];
	mov.u32 	%r1, %tid.x;
	and.b32 	%r2, %r1, 31;
	setp.eq.u32 	%p1, %r2, 0;
	@%p1 bra 	$L_work;                 // lane 0 of each warp: the loop; the others wait at the barrier first
$L_wait:
	bar.sync 	0;
	ret;
$L_work:
	mov.u32 	%r3, %r1;                // x = tid
	mov.u32 	%r4, 0;                  // i
	mov.u32 	%r5, 7;                  // y
$L_loop:
	mad.lo.u32 	%r3, %r3, 1103515245, 12345;
	shr.u32 	%r6, %r3, 7;
	xor.b32 	%r5, %r5, %r6;
	and.b32 	%r7, %r4, 3;
	setp.eq.u32 	%p2, %r7, 0;
	@%p2 add.u32 	%r5, %r5, %r4;      // a guarded ALU instruction (every fourth iteration)
	shl.b32 	%r8, %r5, 1;
	or.b32 	%r5, %r8, 1;
	add.u32 	%r4, %r4, 1;
	setp.lt.u32 	%p3, %r4, %r9;
	@%p3 bra 	$L_loop;
	shr.u32 	%r10, %r1, 5;            // warp index
	mul.wide.u32 	%rd2, %r10, 8;
	add.u64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r3;
	st.global.u32 	[%rd3+4], %r5;
	bra 	$L_wait;
}
"""


def _model(tid: int, iters: int) -> tuple[int, int]:
    """The elected lane's loop in Python integers (mod 2^32)."""
    m = 0xFFFFFFFF
    x, y = tid, 7
    for i in range(iters):
        x = (x * 1103515245 + 12345) & m
        y ^= x >> 7
        if i % 4 == 0:
            y = (y + i) & m
        y = ((y << 1) & m) | 1
    return x, y


def _launch():
    return Launch(ptx=PTX, kernel="elected_loop", grid=(1, 1, 1), block=(64, 1, 1),
                  args=[np.zeros(4, np.uint32), ITERS])


def test_elected_lane_loop_identical_and_shortcuts_taken():
    ref = run_launch(_launch(), tier="reference", detect=False)
    fast = run_launch(_launch(), tier="fast", detect=False)
    want = np.array([v for w in range(2) for v in _model(32 * w, ITERS)], dtype=np.uint32)
    assert np.array_equal(ref.outputs[0], want)
    assert np.array_equal(fast.outputs[0], want)
    assert {k: v for k, v in fast.stats.items() if k != "wall_s"} == \
        {k: v for k, v in ref.stats.items() if k != "wall_s"}
    f = fast.simulation._fast
    # the loop body's ALU instructions (the other lanes wait at the barrier meanwhile) ran through both shortcuts
    assert f.single_issues > ITERS
    assert f.native_runs > ITERS


def test_elected_lane_loop_identical_timed_and_detected():
    for kw in ({"timing": True}, {"detect": True}):
        ref = run_launch(_launch(), tier="reference", **kw)
        fast = run_launch(_launch(), tier="fast", **kw)
        assert np.array_equal(fast.outputs[0], ref.outputs[0])
        assert {k: v for k, v in fast.stats.items() if k != "wall_s"} == \
            {k: v for k, v in ref.stats.items() if k != "wall_s"}
        assert [repr(x) for x in fast.findings] == [repr(x) for x in ref.findings]
