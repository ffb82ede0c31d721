"""Happens-before detector, class 16: a named-barrier id shared by unrelated groups of warps with the same thread
count (PTX ISA 9.1 §9.7.13.1: a generation completes once ``b`` threads arrived, whichever they are).  Thread
counts that differ are caught by the barrier semantics (sim/semantics/barrier.py); here the counts agree, so only
the order of the arrivals decides who meets whom -- the detector names both groups and the fix whatever the
schedule.  Correct twins: the two groups on their own ids; one pair reusing its id over loop iterations; two
groups reusing one id in phases ordered by a barrier both take part in."""
import numpy as np

from tests.ptx_frame import kernel
from tests.race.hb_common import assert_clean, line_of, runs

# warps 0/1 and 2/3 are two independent producer/consumer pairs: the producer (bar.arrive) writes its buffer,
# the consumer (bar.sync) reads it; {bid}: pair B's barrier id
PAIRS = """  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  shl.b32 %r4, %r3, 2;
  mov.u32 %r5, bufA;
  mov.u32 %r6, bufB;
  add.u32 %r5, %r5, %r4;
  add.u32 %r6, %r6, %r4;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd1, %rd1, %rd2;
  setp.eq.u32 %p1, %r2, 1;
  @%p1 bra CONS_A;
  setp.eq.u32 %p1, %r2, 2;
  @%p1 bra PROD_B;
  setp.eq.u32 %p1, %r2, 3;
  @%p1 bra CONS_B;
  add.u32 %r7, %r1, 100;
  st.shared.u32 [%r5], %r7;
  bar.arrive 1, 64;   // @arriveA
  bra DONE;
CONS_A:
  bar.sync 1, 64;   // @syncA
  ld.shared.u32 %r8, [%r5];
  st.global.u32 [%rd1], %r8;
  bra DONE;
PROD_B:
  add.u32 %r7, %r1, 200;
  st.shared.u32 [%r6], %r7;
  bar.arrive {bid}, 64;   // @arriveB
  bra DONE;
CONS_B:
  bar.sync {bid}, 64;   // @syncB
  ld.shared.u32 %r8, [%r6];
  st.global.u32 [%rd1], %r8;
DONE:
  ret;"""

SHARED = "  .shared .align 128 .b8 bufA[128]; .shared .align 128 .b8 bufB[128];"


def pairs(bid):
    return kernel(PAIRS.format(bid=bid), shared=SHARED)


def run(ptx):
    return runs(ptx, [np.zeros(128, np.uint32)], block=(128, 1, 1))


def test_two_pairs_on_their_own_ids_are_clean():
    res = run(pairs(2))
    assert_clean(res)
    for _, r in res:
        got = r.outputs[0]
        # consumer lane t of warp 1 reads what producer lane t of warp 0 wrote (t + 100), warp 3 that of warp 2
        assert np.array_equal(got[32:64], np.arange(32) + 100) and np.array_equal(got[96:128], np.arange(64, 96) + 200)


def test_two_pairs_sharing_an_id_with_equal_counts_is_class_16_naming_both_groups():
    ptx = pairs(1)
    a = {line_of(ptx, "arriveA"), line_of(ptx, "syncA")}
    b = {line_of(ptx, "arriveB"), line_of(ptx, "syncB")}
    for mode, res in run(ptx):
        fs = [f for f in res.findings if f.cls == 16 and "shared by unrelated groups" in f.message]
        assert len(fs) == 1, (mode, [str(f) for f in res.findings])
        f = fs[0]
        lines = set(f.lines)
        # both groups named: a line of pair A and a line of pair B, every side one of the four barrier lines
        assert lines & a and lines & b and lines <= a | b, (mode, str(f))
        assert "separate named barrier id" in f.missing and "own named barrier id" in f.fix, (mode, str(f))
        assert {s.warp for s in f.sides} & {0, 1} and {s.warp for s in f.sides} & {2, 3}, (mode, str(f))


# one producer/consumer pair reuses barrier 1 on every iteration (bar.arrive + bar.sync on different lines)
LOOP = """  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  shl.b32 %r4, %r3, 2;
  mov.u32 %r5, bufA;
  add.u32 %r5, %r5, %r4;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r3, 4;
  add.u64 %rd1, %rd1, %rd2;
  mov.u32 %r9, 0;
  mov.u32 %r10, 0;
  setp.eq.u32 %p1, %r2, 1;
  @%p1 bra CONS;
PROD:
  add.u32 %r7, %r1, %r9;
  st.shared.u32 [%r5], %r7;
  bar.arrive 1, 64;
  bar.sync 2, 64;
  add.u32 %r9, %r9, 1;
  setp.lt.u32 %p2, %r9, 4;
  @%p2 bra PROD;
  bra DONE;
CONS:
  bar.sync 1, 64;
  ld.shared.u32 %r8, [%r5];
  add.u32 %r10, %r10, %r8;
  bar.arrive 2, 64;
  add.u32 %r9, %r9, 1;
  setp.lt.u32 %p2, %r9, 4;
  @%p2 bra CONS;
  st.global.u32 [%rd1], %r10;
DONE:
  ret;"""


def test_one_pair_reusing_its_id_across_iterations_is_clean():
    res = runs(kernel(LOOP, shared=SHARED), [np.zeros(32, np.uint32)], block=(64, 1, 1))
    assert_clean(res)
    for _, r in res:
        assert np.array_equal(r.outputs[0], 4 * np.arange(32) + 6)          # sum over i<4 of (t + i)


# warps 0/1 use barrier 1 first, then (after bar.sync 0, which all four warps take part in) warps 2/3 use it
PHASES = PAIRS.replace("  bar.arrive 1, 64;   // @arriveA\n", "  bar.arrive 1, 64;   // @arriveA\n  bar.sync 0;\n") \
    .replace("  bar.sync 1, 64;   // @syncA\n  ld.shared.u32 %r8, [%r5];\n",
             "  bar.sync 1, 64;   // @syncA\n  ld.shared.u32 %r8, [%r5];\n  bar.sync 0;\n") \
    .replace("PROD_B:\n", "PROD_B:\n  bar.sync 0;\n").replace("CONS_B:\n", "CONS_B:\n  bar.sync 0;\n")


def test_two_groups_reusing_an_id_in_ordered_phases_are_clean():
    res = run(kernel(PHASES.format(bid=1), shared=SHARED))
    assert_clean(res)
