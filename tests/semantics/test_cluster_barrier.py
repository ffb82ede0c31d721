"""barrier.cluster.arrive / wait (PTX ISA 9.1 §9.7.13.3) on 2- and 4-CTA clusters."""
import numpy as np
import pytest

from tcsim.isa.errors import DeadlockError, SyncError, VerifyError
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def kernel(body):
    return HEAD + f"""
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<64>;
  .reg .b64 %rd<64>;
  .reg .pred %p<16>;
  .shared .align 16 .b32 sm[64];
  .shared .align 8 .b64 mbar;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %cluster_ctarank;
  mov.u32 %r2, %cluster_nctarank;
  mov.u32 %r61, %ctaid.x;
  mov.u32 %r62, %ntid.x;
  mad.lo.u32 %r63, %r61, %r62, %r0;
  mul.wide.u32 %rd63, %r63, 4;
  add.u64 %rd1, %rd0, %rd63;
  mov.u32 %r50, sm;
  shl.b32 %r51, %r0, 2;
  add.u32 %r52, %r50, %r51;          // &sm[tid] (own CTA)
{body}
  ret;
}}
"""


def launch(body, nctas=2, nthreads=64, seed=None, observers=()):
    n = nctas * nthreads
    res = run_launch(Launch(ptx=kernel(body), grid=(nctas, 1, 1), cluster=(nctas, 1, 1), block=(nthreads, 1, 1),
                            args=[np.full(n, 0xDEAD, np.uint32)]), seed=seed, observers=observers)
    return res.outputs[0]


EXCHANGE = """
  mad.lo.u32 %r3, %r1, 1000, %r0;
  st.shared.u32 [%r52], %r3;
  {arrive}
  {wait}
  add.u32 %r4, %r1, 1;
  rem.u32 %r4, %r4, %r2;              // next rank
  mapa.shared::cluster.u32 %r5, %r52, %r4;
  ld.shared::cluster.u32 %r6, [%r5];
  st.global.u32 [%rd1], %r6;
  barrier.cluster.arrive;
  barrier.cluster.wait;               // keep peers resident until everyone has read
"""


@pytest.mark.parametrize("seed", [None, 1, 9])
@pytest.mark.parametrize("arrive,wait", [
    ("barrier.cluster.arrive;", "barrier.cluster.wait;"),
    ("barrier.cluster.arrive.aligned;", "barrier.cluster.wait.aligned;"),
    ("barrier.cluster.arrive.release.aligned;", "barrier.cluster.wait.acquire.aligned;"),
    ("barrier.cluster.arrive.relaxed.aligned; fence.acq_rel.cluster;", "barrier.cluster.wait;"),
])
def test_cluster_barrier_orders_dsmem_exchange(arrive, wait, seed):
    r = launch(EXCHANGE.format(arrive=arrive, wait=wait), nctas=4, seed=seed)
    rank = np.repeat(np.arange(4), 64)
    tid = np.tile(np.arange(64), 4)
    assert (r == ((rank + 1) % 4) * 1000 + tid).all()


def test_cluster_barrier_many_phases_ping_pong():
    body = """
  mov.u32 %r9, 0;
  mov.u32 %r10, 0;
LOOP:
  add.u32 %r3, %r9, %r1;
  st.shared.u32 [%r52], %r3;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  xor.b32 %r4, %r1, 1;
  mapa.shared::cluster.u32 %r5, %r52, %r4;
  ld.shared::cluster.u32 %r6, [%r5];
  add.u32 %r10, %r10, %r6;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  add.u32 %r9, %r9, 10;
  setp.lt.u32 %p1, %r9, 50;
  @%p1 bra LOOP;
  st.global.u32 [%rd1], %r10;
"""
    r = launch(body, nctas=2, nthreads=32)
    assert (r[:32] == sum(10 * i + 1 for i in range(5))).all()
    assert (r[32:] == sum(10 * i for i in range(5))).all()


def test_exited_threads_are_not_waited_for():
    # in CTA 1, warp 1 and lanes 8-31 of warp 0 exit before the cluster barrier
    body = """
  setp.eq.u32 %p1, %r1, 1;
  setp.ge.u32 %p2, %r0, 8;
  and.pred %p3, %p1, %p2;
  @%p3 exit;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  mov.u32 %r3, 5;
  st.global.u32 [%rd1], %r3;
"""
    r = launch(body)
    assert (r[:64] == 5).all() and (r[64:72] == 5).all() and (r[72:] == 0xDEAD).all()


def test_divergent_non_aligned_arrive_sites():
    body = """
  and.b32 %r3, %r0, 1;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 bra A;
  barrier.cluster.arrive;
  bra J;
A:
  barrier.cluster.arrive.release;
J:
  barrier.cluster.wait;
  mov.u32 %r3, 3;
  st.global.u32 [%rd1], %r3;
"""
    assert (launch(body) == 3).all()


def test_wait_without_arrive_and_double_arrive_are_errors():
    with pytest.raises(SyncError, match="without having arrived"):
        launch("  barrier.cluster.wait;\n")
    with pytest.raises(SyncError, match="arrive twice"):
        launch("  setp.eq.u32 %p1, %r1, 1;\n  @%p1 bra S;\n  barrier.cluster.arrive;\n  barrier.cluster.arrive;\n"
               "  bra E;\nS:\n  mov.u32 %r5, 0;\nSPIN:\n  add.u32 %r5, %r5, 1;\n  setp.lt.u32 %p2, %r5, 20;\n"
               "  @%p2 bra SPIN;\n  barrier.cluster.arrive;\nE:\n")
    with pytest.raises(SyncError, match="aligned"):
        launch("  setp.lt.u32 %p1, %r0, 3;\n  @%p1 barrier.cluster.arrive.aligned;\n")
    with pytest.raises(VerifyError, match="not valid"):
        launch("  barrier.cluster.wait.release;\n")


def test_cluster_barrier_deadlock_names_missing_threads():
    # CTA 1 warp 0 blocks forever on an mbarrier; everybody else waits at the cluster barrier.
    body = """
  setp.eq.u32 %p1, %r1, 1;
  setp.lt.u32 %p2, %r0, 32;
  and.pred %p3, %p1, %p2;
  setp.eq.u32 %p4, %r0, 0;
  @%p4 mbarrier.init.shared::cta.b64 [mbar], 1;
  bar.sync 0;
  @!%p3 bra ARR;
W:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [mbar], 0;
  @!%p5 bra W;
ARR:
  barrier.cluster.arrive;
  barrier.cluster.wait;
"""
    with pytest.raises(DeadlockError) as ei:
        launch(body)
    msg = str(ei.value)
    assert "barrier.cluster of cluster (0,0,0) phase 0: 96/128 non-exited threads arrived" in msg
    assert "not yet arrived: CTA (1,0,0) warp 0 all lanes" in msg
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    assert "mbarrier.try_wait.parity(parity=0) on mbarrier@0x500 of CTA (1,0,0)" in msg


def test_single_cta_cluster_barrier_acts_as_cta_barrier():
    body = ("  st.shared.u32 [%r52], %r0;\n  barrier.cluster.arrive;\n  barrier.cluster.wait;\n"
            "  xor.b32 %r3, %r0, 63;\n  shl.b32 %r3, %r3, 2;\n  add.u32 %r3, %r50, %r3;\n  ld.shared.u32 %r4, [%r3];\n"
            "  st.global.u32 [%rd1], %r4;\n")
    r = launch(body, nctas=1)
    assert (r == (np.arange(64) ^ 63)).all()


def test_cluster_barrier_sync_events():
    events = []
    launch("  barrier.cluster.arrive;\n  barrier.cluster.wait;\n", nthreads=32, observers=[events.append])
    ops = [e.fields["op"] for e in events if e.kind == "sync"]
    assert ops.count("cluster.arrive") == 2 and ops.count("cluster.wait") == 2 and ops.count("cluster.release") == 1
