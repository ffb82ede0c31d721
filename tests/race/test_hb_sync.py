"""Happens-before detector, synchronisation edges (sim/race/hb.py): class 2 (a leader warp's arrive releases a
stage its sibling still reads, PTX ISA 9.1 §9.7.13.15 -- the arrive orders only the arriving thread's accesses),
class 16 (a named barrier orders only the warps that take part in it, §9.7.13.1), class 21 (plain data races),
class 10 (an mbarrier init not released to the cluster before a remote arrive, §9.7.13.4 fence.mbarrier_init,
§9.7.13.3 barrier.cluster) -- each with its correct twin."""
import numpy as np

from tests.ptx_frame import kernel
from tests.race.hb_common import assert_clean, assert_found, line_of, runs

# warp 0 lane 0 fills buf twice with a bulk copy (full: count 1 + tx); warps 1 and 2 read it after round 1 and
# release it through the empty barrier ({release}); the refill waits for the empty barrier
STAGE = """  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mov.u32 %r5, buf;
  mov.u32 %r6, full;
  mov.u32 %r9, empty;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [src];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r6], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r9], {count};
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra CONSUMER;
  @!%p1 bra DONE;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r6], 256;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd2], 256, [%r6];
EMPTY:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r9], 0;
  @!%p4 bra EMPTY;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r6], 256;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd2], 256, [%r6];   // @refill
FULL2:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r6], 1;
  @!%p4 bra FULL2;
  bra DONE;
CONSUMER:
FULL:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r6], 0;
  @!%p4 bra FULL;
  shl.b32 %r7, %r3, 2;
  add.u32 %r7, %r5, %r7;
  ld.shared.u32 %r8, [%r7];   // @read
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd3, %rd1, %rd3;
  st.global.u32 [%rd3], %r8;
{release}
DONE:
  ret;"""
LEADER = """  setp.eq.u32 %p5, %r1, 32;
  @%p5 mbarrier.arrive.shared::cta.b64 _, [%r9];   // @arrive"""
EACH = """  setp.eq.u32 %p5, %r3, 0;
  @%p5 mbarrier.arrive.shared::cta.b64 _, [%r9];"""
NAMED = "  bar.sync 1, 64;\n" + LEADER


def stage(release, count):
    return kernel(STAGE.format(release=release, count=count), params=", .param .u64 src",
                  shared="  .shared .align 128 .b8 buf[256]; .shared .align 8 .b64 full; .shared .align 8 .b64 empty;")


def run_stage(ptx):
    src = np.arange(64, dtype=np.uint32) + 900
    res = runs(ptx, [np.zeros(96, np.uint32), src], block=(96, 1, 1))
    return res


def test_every_reader_arriving_is_clean():
    assert_clean(run_stage(stage(EACH, 2)))


def test_readers_meeting_at_a_named_barrier_before_the_leader_arrives_is_clean():
    assert_clean(run_stage(stage(NAMED, 1)))


def test_a_leader_arrive_releasing_a_stage_its_sibling_still_reads_is_class_2():
    ptx = stage(LEADER, 1)
    # the missing edge by its PTX instructions: a named barrier between warp 2's read and the releasing arrive
    # (named by its line), or an arrive of warp 2's own
    res = run_stage(ptx)
    assert_found(res, 2, (line_of(ptx, "read"), line_of(ptx, "refill")),
                 f"bar.sync (or bar.arrive) of a named barrier that warp 2 and the releasing thread both take part in, "
                 f"between the read at line {line_of(ptx, 'read')} and the mbarrier.arrive.shared::cta.b64 at line "
                 f"{line_of(ptx, 'arrive')}")
    assert_found(res, 2, (line_of(ptx, "read"), line_of(ptx, "refill")),
                 f"or an mbarrier.arrive by warp 2 after line {line_of(ptx, 'read')}")


# ---------------------------------------------------------------------------------------------- class 16 / 21
# warp 0 writes buf; warp {reader} reads it after {sync}
SHARE = """  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mov.u32 %r5, buf;
  ld.param.u64 %rd1, [out];
  shl.b32 %r7, %r3, 2;
  add.u32 %r7, %r5, %r7;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra OTHERS;
  st.shared.u32 [%r7], %r1;   // @write
{writer_sync}
  bra DONE;
OTHERS:
{reader_sync}
  setp.ne.u32 %p3, %r2, {reader};
  @%p3 bra DONE;
  ld.shared.u32 %r8, [%r7];   // @read
  mul.wide.u32 %rd3, %r3, 4;
  add.u64 %rd3, %rd1, %rd3;
  st.global.u32 [%rd3], %r8;
DONE:
  ret;"""


def share(writer_sync, reader_sync, reader=1):
    return kernel(SHARE.format(writer_sync=writer_sync, reader_sync=reader_sync, reader=reader),
                  shared="  .shared .align 128 .b8 buf[128];")


def run_share(ptx):
    return runs(ptx, [np.zeros(32, np.uint32)], block=(96, 1, 1))


def test_a_named_barrier_of_writer_and_reader_orders_them():
    assert_clean(run_share(share("  bar.arrive 1, 64;", "  @%p2 bra SKIP;\nSKIP:\n  setp.eq.u32 %p4, %r2, 1;\n"
                                                         "  @%p4 bar.sync 1, 64;")))


def test_a_reader_ordered_only_by_a_named_barrier_the_writer_skips_is_class_16():
    # warps 1 and 2 meet at barrier 1 (64 threads); the writer, warp 0, never arrives there
    ptx = share("", "  bar.sync 1, 64;")
    assert_found(run_share(ptx), 16, (line_of(ptx, "write"), line_of(ptx, "read")), "named barrier 1")


def test_unsynchronised_write_and_read_is_class_21():
    ptx = share("", "")
    assert_found(run_share(ptx), 21, (line_of(ptx, "write"), line_of(ptx, "read")), "no happens-before")


# ---------------------------------------------------------------------------------------------- class 10
REMOTE = """  mov.u32 %r1, %tid.x;
  mov.u32 %r6, bar;
  mov.u32 %r2, %cluster_ctarank;
  ld.param.u64 %rd1, [out];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r6], 1;   // @init
{fence}
  barrier.cluster.arrive{sem}.aligned;
  barrier.cluster.wait.acquire.aligned;
  setp.ne.u32 %p2, %r2, 1;
  @%p2 bra RANK0;
  mapa.shared::cluster.u32 %r9, %r6, 0;
  @%p1 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r9];   // @remote
  bra END;
RANK0:
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r6], 0;
  @!%p3 bra WAIT;
  @%p1 st.global.u32 [%rd1], 1;
END:
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  ret;"""


def remote(fence, sem=".relaxed"):
    return kernel(REMOTE.format(fence=fence, sem=sem), shared="  .shared .align 8 .b64 bar;")


def run_remote(ptx):
    res = runs(ptx, [np.zeros(1, np.uint32)], block=(32, 1, 1), grid=(2, 1, 1), cluster=(2, 1, 1))
    for _, r in res:
        assert r.outputs[0][0] == 1
    return res


def test_released_init_before_a_remote_arrive_is_clean():
    assert_clean(run_remote(remote("  @%p1 fence.mbarrier_init.release.cluster;")))


def test_init_without_fence_mbarrier_init_before_a_remote_arrive_is_class_10():
    """Nothing releases the init: the cluster barrier's arrive is .relaxed (a .release arrive publishes it:
    tests/race/test_hb_cluster_init.py)."""
    ptx = remote("")
    assert_found(run_remote(ptx), 10, (line_of(ptx, "init"), line_of(ptx, "remote")),
                 "fence.mbarrier_init.release.cluster")


def _same_word(value: str) -> str:
    """Every warp (lane 0) stores ``value`` to one shared word with nothing ordering the warps (Triton initialises
    shared words that way)."""
    return kernel(f"""
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 31;
  shr.u32 %r3, %r1, 5;
  mov.u32 %r4, word;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra DONE;
  st.shared.u32 [%r4], {value};      // @ST
DONE:
  ret;
""", shared="  .shared .align 4 .u32 word;")


def test_the_same_immediate_stored_by_several_warps_is_a_lint_note():
    ptx = _same_word("7")
    for mode, res in runs(ptx, [np.zeros(1, np.uint32)], block=(64, 1, 1)):
        fs = [f for f in res.findings if f.cls == 21]
        assert fs and all(f.severity == "lint" and f.lines == (line_of(ptx, "ST"),) * 2 for f in fs), mode


def test_a_register_value_stored_by_several_warps_is_a_race():
    ptx = _same_word("%r3")         # each warp stores its own index: the order decides the value
    for mode, res in runs(ptx, [np.zeros(1, np.uint32)], block=(64, 1, 1)):
        fs = [f for f in res.findings if f.cls == 21]
        assert fs and all(f.severity == "error" for f in fs), mode
