"""A CTA that exits while a peer of its cluster still uses its shared memory (PTX ISA 9.1 §9.7.13.3 notes that a
CTA's shared memory is gone once it exits, so peers must keep it resident with a cluster barrier): every way of
reaching a peer's SMEM -- ld/st.shared::cluster through mapa, a bulk-copy multicast into it -- is a located
MemoryFault naming the exited CTA; a remote mbarrier arrive, which an H100 completes, is a class-14 finding; the
same kernels with the cluster barrier before exit run clean."""
import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.6\n.target sm_90a\n.address_size 64\n"

# rank 1 leaves at once unless KEEP (a cluster barrier before exit) is in; rank 0 first burns ~200 instructions,
# then reaches into rank 1's shared memory with ACCESS
BODY = """
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<32>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  .reg .b16 %rs<4>;
  .shared .align 16 .b32 sm[32];
  .shared .align 8 .b64 mbar;
  ld.param.u64 %rd0, [out];
  mov.u32 %r1, %cluster_ctarank;
  mov.u32 %r2, sm;
  mov.u32 %r3, mbar;
  mov.u32 %r4, %tid.x;
  setp.eq.u32 %p2, %r4, 0;
  @%p2 mbarrier.init.shared::cta.b64 [%r3], 1;
  @%p2 fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mov.u32 %r10, 0;
SPIN:
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p3, %r10, 100;
  @%p3 bra SPIN;
  mapa.shared::cluster.u32 %r5, %r2, 1;
  mapa.shared::cluster.u32 %r6, %r3, 1;
{access}
DONE:
{keep}
  ret;
}}
"""
KEEP = "  barrier.cluster.arrive;\n  barrier.cluster.wait;"
# with a multicast the barrier is not enough: each destination first waits for its bytes on its own mbarrier
KEEP_MULTICAST = """  and.pred %p0, %p1, %p2;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], 16;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r3], 0;
  @!%p3 bra WAIT;
""" + KEEP
ACCESS = {
    "ld": ("  ld.shared::cluster.u32 %r7, [%r5];\n  st.global.u32 [%rd0], %r7;",
           r"access to the shared memory of CTA \(1,0,0\), which has already exited"),
    "st": ("  st.shared::cluster.u32 [%r5], %r1;",
           r"access to the shared memory of CTA \(1,0,0\), which has already exited"),
    "tma_multicast": ("  mov.u16 %rs1, 3;\n  @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], 16;\n"
                      "  @%p2 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                      "[%r2], [%rd0], 16, [%r3], %rs1;",
                      r"(TMA write into the shared memory of|mbarrier operation on) CTA \(1,0,0\), which has already "
                      r"exited"),
}
# An H100 completes a remote arrive on an exited peer's mbarrier without an error (probe remote_arrive_after_exit,
# tests/hw/golden_h100/protocol_outcomes.json): tcsim reports it as a class-14 finding and the run goes on.
REMOTE_ARRIVE = "  @%p2 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r6];"


def run(access, keep):
    keep = (KEEP_MULTICAST if access == "tma_multicast" else KEEP) if keep else ""
    ptx = HEAD + BODY.format(access=REMOTE_ARRIVE if access == "remote_arrive" else ACCESS[access][0], keep=keep)
    return run_launch(Launch(ptx=ptx, grid=(2, 1, 1), cluster=(2, 1, 1), block=(32, 1, 1),
                             args=[np.zeros(4, np.uint32)]))


@pytest.mark.parametrize("access", sorted(ACCESS))
def test_access_to_an_exited_peer_is_a_located_fault(access):
    with pytest.raises(MemoryFault, match=ACCESS[access][1]) as ei:
        run(access, keep=False)
    e = ei.value
    assert e.loc is not None and e.loc.line > 20          # the accessing instruction of rank 0, not the exit
    assert "CTA (0,0,0)" in str(e)                         # who accessed


def test_remote_arrive_on_an_exited_peer_is_a_class14_finding():
    res = run("remote_arrive", keep=False)
    [f] = res.findings
    assert f.cls == 14 and f.outcome == "continue" and "CTA (1,0,0), which has already exited" in f.message
    assert f.loc.line > 20 and f.sides[0].cta == (0, 0, 0) and "barrier.cluster" in f.missing


@pytest.mark.parametrize("access", sorted(ACCESS) + ["remote_arrive"])
def test_a_cluster_barrier_before_exit_keeps_the_peer_resident(access):
    assert run(access, keep=True).findings == []
