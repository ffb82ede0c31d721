"""Class 15 (tcsim.race.protocol): multicast bytes delivered to a CTA whose own mbarrier has no matching expect-tx
(only the leader expects them).  The correct twin has every receiving CTA expect the bytes it receives."""
import numpy as np
import pytest

from tcsim.launch import Launch, run_launch

from protocol_kernels import line_of


def multicast(peer_expects: bool) -> str:
    peer = ("  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 128;      // @PEER_ARRIVE" if peer_expects else
            "  mbarrier.arrive.shared::cta.b64 _, [%r4];      // @PEER_ARRIVE")
    return f""".version 8.6
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 src, .param .u64 out)
{{
  .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .pred %p<10>; .reg .b16 %rs<4>;
  .shared .align 128 .b8 buf[128];
  .shared .align 8 .b64 bar;
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  mov.u32 %r9, %cluster_ctarank;
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  setp.eq.u32 %p2, %r1, 0;
  setp.ne.u32 %p1, %r9, 0;
  @!%p2 bra SYNC;
  mbarrier.init.shared::cta.b64 [%r4], 1;      // @INIT
  fence.mbarrier_init.release.cluster;
  @%p1 bra PEER;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 128;      // @LEADER_ARRIVE
  bra SYNC;
PEER:
{peer}
SYNC:
  barrier.cluster.arrive;
  barrier.cluster.wait;
  @%p1 bra WAIT;
  @!%p2 bra WAIT;
  mov.u16 %rs1, 3;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r5], [%rd1], 128, [%r4], %rs1;      // @MCAST
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
  shl.b32 %r6, %r1, 2;
  add.u32 %r6, %r5, %r6;
  ld.shared.u32 %r7, [%r6];
  mad.lo.u32 %r8, %r9, 32, %r1;
  mul.wide.u32 %rd3, %r8, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r7;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  ret;
}}
"""


def run(ptx, timing, seed):
    src = np.arange(32, dtype=np.uint32) + 50
    return run_launch(Launch(ptx=ptx, grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1),
                             args=[src, np.zeros(64, np.uint32)]), timing=timing, seed=seed), src


@pytest.mark.parametrize("timing", [False, True])
@pytest.mark.parametrize("seed", [None, 1, 2])
def test_every_cta_expecting_its_multicast_bytes_is_clean(timing, seed):
    res, src = run(multicast(peer_expects=True), timing, seed)
    assert res.findings == [], [str(f) for f in res.findings]
    assert (res.outputs[1] == np.tile(src, 2)).all()


@pytest.mark.parametrize("timing", [False, True])
@pytest.mark.parametrize("seed", [None, 1, 2])
def test_peer_without_expect_tx_is_class15_naming_its_arrive_and_the_copy(timing, seed):
    ptx = multicast(peer_expects=False)
    res, src = run(ptx, timing, seed)
    [f] = [f for f in res.findings if f.cls == 15]
    assert f.lines == (line_of(ptx, "PEER_ARRIVE"), line_of(ptx, "MCAST"))
    assert "128 bytes multicast into CTA (1,0,0)" in f.message and "cta (0,0,0)" in f.message
    assert f"mbarrier.arrive.expect_tx at line {line_of(ptx, 'PEER_ARRIVE')}" in f.missing
    # the peer's phase completes on its arrive alone, so its read of the buffer is not ordered after the multicast
    # bytes: the race detector reports that consequence, naming the multicast copy
    assert all(line_of(ptx, "MCAST") in g.lines for g in res.findings if g.cls != 15)
