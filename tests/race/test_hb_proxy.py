"""Happens-before detector, cross-proxy and async-read checks (sim/race/hb.py, explain.py): class 8 (generic write
read by the async proxy without fence.proxy.async, PTX ISA 9.1 §8.6, §9.7.13.4), class 5 (a bulk store's source
overwritten before cp.async.bulk.wait_group.read, §9.7.9.25.6.2 -- whatever fence follows) and class 9 (generic
read, then an async-proxy write of the same bytes ordered only by a generic-proxy barrier)."""
import numpy as np
import pytest

from tests.ptx_frame import kernel
from tests.race.hb_common import assert_clean, assert_found, line_of, runs

FENCE = "  fence.proxy.async.shared::cta;"

# 64 threads each write 8 bytes of buf; thread 0 stores buf to out with a bulk copy
STORE = """  mov.u32 %r1, %tid.x;
  mov.u32 %r5, buf;
  ld.param.u64 %rd1, [out];
  shl.b32 %r2, %r1, 3;
  add.u32 %r3, %r5, %r2;
  cvt.u64.u32 %rd3, %r1;
  add.u64 %rd3, %rd3, 1000;
  st.shared.u64 [%r3], %rd3;   // @write
{fence}
  bar.sync 0;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r5], 512;   // @store
  cp.async.bulk.commit_group;
{mid}
  cp.async.bulk.wait_group.read 0;   // @waitread
{after}
  cp.async.bulk.wait_group 0;
DONE:
  ret;"""
OVERWRITE = "  st.shared.u64 [%r5], %rd3;   // @overwrite"


def store_kernel(fence=FENCE, mid="", after=""):
    return kernel(STORE.format(fence=fence, mid=mid, after=after), shared="  .shared .align 128 .b8 buf[512];")


def run_store(ptx):
    return runs(ptx, [np.zeros(64, np.uint64)], block=(64, 1, 1))


def test_fenced_bulk_store_is_clean_and_right():
    res = run_store(store_kernel())
    assert_clean(res)
    for _, r in res:
        assert np.array_equal(r.outputs[0], np.arange(64, dtype=np.uint64) + 1000)


@pytest.mark.parametrize("fence", ["", "  fence.proxy.async.global;", "  fence.acq_rel.cta;"])
def test_unfenced_generic_write_read_by_a_bulk_store_is_class_8(fence):
    ptx = store_kernel(fence=fence)
    assert_found(run_store(ptx), 8, (line_of(ptx, "write"), line_of(ptx, "store")), "fence.proxy.async.shared::cta")


def test_a_fence_by_the_issuing_thread_after_the_barrier_orders_the_writes():
    # cumulativity: bar.sync orders every write before thread 0's fence, which precedes the store's issue
    ptx = store_kernel(fence="").replace("  @%p1 bra DONE;\n", "  @%p1 bra DONE;\n" + FENCE + "\n")
    assert_clean(run_store(ptx))


def test_a_fence_by_a_thread_not_ordered_before_the_read_does_not_count():
    # thread 0 fences *after* issuing the store: the old record-clearing check accepted this
    ptx = store_kernel(fence="", mid=FENCE)
    assert_found(run_store(ptx), 8, (line_of(ptx, "write"), line_of(ptx, "store")), "fence.proxy.async")


def test_source_overwritten_before_wait_group_read_is_class_5_even_with_a_later_fence():
    ptx = store_kernel(mid=OVERWRITE + "\n" + FENCE)
    assert_found(run_store(ptx), 5, (line_of(ptx, "overwrite"), line_of(ptx, "store")), "wait_group.read")


def test_source_overwritten_after_wait_group_read_is_clean():
    assert_clean(run_store(store_kernel(after=OVERWRITE)))


# ---------------------------------------------------------------------------------------------- class 9
# warps 0-1 read buf; the hand-off to thread 0, which refills buf with a bulk copy, is {handoff}
READ_THEN_COPY = """  mov.u32 %r1, %tid.x;
  mov.u32 %r5, buf;
  mov.u32 %r6, full;
  mov.u32 %r9, empty;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [src];
  setp.eq.u32 %p1, %r1, 0;
  and.b32 %r10, %r1, 31;
  setp.eq.u32 %p3, %r10, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r6], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r9], 2;
  @%p1 fence.mbarrier_init.release.cluster;
  shl.b32 %r2, %r1, 2;
  add.u32 %r3, %r5, %r2;
  st.shared.u32 [%r3], %r1;
  bar.sync 0;
  ld.shared.u32 %r7, [%r3];   // @read
{handoff}
  @!%p1 bra DONE;
{fence}
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r6], 256;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd2], 256, [%r6];   // @copy
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r6], 0;
  @!%p2 bra WAIT;
  ld.shared.u32 %r8, [%r5+4];
  st.global.u32 [%rd1], %r8;
DONE:
  ret;"""
BAR = "  bar.sync 0;"
MBAR = """  @%p3 mbarrier.arrive.shared::cta.b64 _, [%r9];
  @!%p1 bra DONE;
EMPTY:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r9], 0;
  @!%p4 bra EMPTY;"""


def read_then_copy(handoff=BAR, fence=""):
    return kernel(READ_THEN_COPY.format(handoff=handoff, fence=fence), params=", .param .u64 src",
                  shared="  .shared .align 128 .b8 buf[256]; .shared .align 8 .b64 full; .shared .align 8 .b64 empty;")


def run_rc(ptx):
    src = np.arange(64, dtype=np.uint32) + 500
    res = runs(ptx, [np.zeros(1, np.uint32), src], block=(64, 1, 1))
    for _, r in res:
        assert r.outputs[0][0] == 501
    return res


def test_generic_read_then_async_write_ordered_only_by_bar_sync_is_class_9():
    ptx = read_then_copy()
    assert_found(run_rc(ptx), 9, (line_of(ptx, "read"), line_of(ptx, "copy")), "fence.proxy.async.shared::cta")


def test_a_proxy_fence_after_the_barrier_orders_the_reads_before_the_copy():
    assert_clean(run_rc(read_then_copy(fence=FENCE)))


def test_an_mbarrier_hand_off_orders_the_reads_before_the_copy():
    """The CUTLASS pipeline pattern (the consumer uses what it read, then consumer_release = mbarrier.arrive on the
    empty barrier; the producer waits it before the TMA load) ships without a proxy fence: the detector accepts a
    generic read ordered before the async write through an mbarrier phase once the read value was used before the
    arrive (tcsim.race.hb.HappensBefore.read_in_flight_at_release)."""
    assert_clean(run_rc(read_then_copy(handoff="  add.u32 %r11, %r7, 1;\n" + MBAR)))


def test_an_mbarrier_hand_off_of_a_read_not_yet_used_is_class_9():
    """The same hand-off with the loaded value unused at the arrive (DeepEP PR #642): the load may still be in
    flight when the copy lands -- class 9, naming the read, the releasing arrive and the copy."""
    ptx = read_then_copy(handoff=MBAR)
    lines = ptx.splitlines()
    arrive = next(i + 1 for i, ln in enumerate(lines) if "mbarrier.arrive.shared::cta.b64 _, [%r9]" in ln)
    assert_found(run_rc(ptx), 9, (line_of(ptx, "read"), arrive, line_of(ptx, "copy")), "fence.proxy.async.shared::cta")
