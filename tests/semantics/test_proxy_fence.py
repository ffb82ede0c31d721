"""Generic-proxy SMEM writes read by the async proxy without fence.proxy.async (PTX ISA 9.1 §9.7.13.4): the race
detector (sim/race/hb.py) reports class 8 at the asynchronous read, naming the write, and the run goes on (strict
mode raises); every properly fenced arrangement runs clean."""
import numpy as np
import pytest

from tcsim.isa.errors import SyncError
from test_bulk_copy import kernel, run

# 64 threads each write 8 bytes of buf (FILL), then FENCE, then the barrier; thread 0 then stores buf to dst
BODY = """
  .shared .align 128 .b8 buf[512];
  mov.u32 %r1, %tid.x;
  mov.u32 %r5, buf;
  ld.param.u64 %rd1, [dst];
  shl.b32 %r2, %r1, 3;
  add.u32 %r3, %r5, %r2;
  cvt.u64.u32 %rd3, %r1;
  add.u64 %rd3, %rd3, 1000;
{fill}
{fence}
  bar.sync 0;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
{late_fence}
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r5], 512;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
DONE:
"""
ST = "  st.shared.u64 [%r3], %rd3;"
CP_ASYNC = """  ld.param.u64 %rd2, [src];
  cvta.to.global.u64 %rd5, %rd2;
  mul.wide.u32 %rd6, %r2, 1;
  add.u64 %rd5, %rd5, %rd6;
  cp.async.ca.shared.global [%r3], [%rd5], 8;
  cp.async.wait_all;"""
FENCE = "  fence.proxy.async.shared::cta;"


def launch(fill=ST, fence=FENCE, late_fence=""):
    ptx = kernel(".param .u64 dst, .param .u64 src", BODY.format(fill=fill, fence=fence, late_fence=late_fence))
    src = np.arange(64, dtype=np.uint64) + 1000
    return run(ptx, [np.zeros(64, np.uint64), src], block=(64, 1, 1))


@pytest.mark.parametrize("fence", [FENCE, "  fence.proxy.async;", "  fence.proxy.async.shared::cluster;"])
def test_a_fence_by_the_writers_before_the_barrier_orders_their_writes(fence):
    assert np.array_equal(launch(fence=fence).outputs[0], np.arange(64, dtype=np.uint64) + 1000)


def test_a_fence_by_the_issuing_thread_after_the_barrier_is_enough():
    # the barrier orders every write before thread 0's fence (cumulativity)
    assert np.array_equal(launch(fence="", late_fence=FENCE).outputs[0], np.arange(64, dtype=np.uint64) + 1000)


@pytest.mark.parametrize("fence", ["", "  fence.proxy.async.global;", "  fence.acq_rel.cta;",
                                   "  fence.proxy.alias;"])
def test_without_a_generic_to_async_shared_fence_the_store_is_reported(fence):
    res = launch(fence=fence)         # sanitizer mode: reported, and the run goes on to the end
    f8 = [f for f in res.findings if f.cls == 8]
    assert len(f8) == 1, [str(f) for f in res.findings]
    f = f8[0]
    assert f.sides[0].what.startswith("st.shared.u64 [%r3], %rd3") and f.sides[0].proxy == "generic"
    assert f.sides[1].what.startswith("cp.async.bulk.global.shared::cta.bulk_group") and f.sides[1].proxy == "async"
    assert "fence.proxy.async.shared::cta between line" in f.missing and f.loc is not None
    with pytest.raises(SyncError, match="class 8"):
        run_strict(fence)


def run_strict(fence):
    from test_bulk_copy import kernel as k
    from tcsim.launch import Launch, run_launch
    ptx = k(".param .u64 dst, .param .u64 src", BODY.format(fill=ST, fence=fence, late_fence=""))
    return run_launch(Launch(ptx=ptx, args=[np.zeros(64, np.uint64), np.arange(64, dtype=np.uint64)],
                             block=(64, 1, 1)), strict=True)


def test_cp_async_writes_are_generic_proxy_writes():
    res = launch(fill=CP_ASYNC, fence="")
    f8 = [f for f in res.findings if f.cls == 8]
    assert f8 and all(f.sides[0].what.startswith("cp.async.ca.shared.global") for f in f8)
    assert np.array_equal(launch(fill=CP_ASYNC).outputs[0], np.arange(64, dtype=np.uint64) + 1000)
    assert not launch(fill=CP_ASYNC).findings


def test_bytes_the_read_does_not_cover_are_not_reported():
    # the stored range is fenced; thread 0 then writes just past it without a fence, which the store never reads
    ptx = kernel(".param .u64 dst, .param .u64 src", BODY.format(fill=ST, fence=FENCE, late_fence="""
  mov.u64 %rd7, 7;
  st.shared.u64 [%r5+512], %rd7;""").replace("buf[512]", "buf[1024]"))
    res = run(ptx, [np.zeros(64, np.uint64), np.zeros(64, np.uint64)], block=(64, 1, 1))
    assert np.array_equal(res.outputs[0], np.arange(64, dtype=np.uint64) + 1000)
