"""Happens-before detector, class 10 (mbarrier init not made visible before remote use; PTX ISA 9.1 §9.7.13.3
barrier.cluster, §9.7.13.4 fence.mbarrier_init): a ``barrier.cluster.arrive`` with its default ``.release``
semantics releases the arriving thread's prior ``mbarrier.init`` to the cluster, as any release does
(ThunderKittens' cluster sync after its inits; the zoo's buggy twin needs both the deleted fence and a ``.relaxed``
arrive); ``fence.mbarrier_init.release.cluster`` is the light-weight release for the ``.relaxed`` arrive."""
import numpy as np
import pytest

from tests.ptx_frame import kernel
from tests.race.hb_common import assert_clean, assert_found, line_of, runs

# a cluster of 2 CTAs: thread 0 initialises its CTA's mbarrier (count 32), the cluster meets, every thread arrives
# (release, cluster scope) on the PEER's mbarrier and waits on its own; out[rank] = peer rank
REMOTE = """  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, bar;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r3], 32;   // @init
{fence}
  barrier.cluster.arrive{sem}.aligned;
  barrier.cluster.wait.aligned;
  xor.b32 %r4, %r2, 1;
  mapa.shared::cluster.u32 %r5, %r3, %r4;
  mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];   // @arrive
WAIT:
  mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p2, [%r3], 0;
  @!%p2 bra WAIT;
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r2, 4;
  add.u64 %rd1, %rd1, %rd2;
  @%p1 st.global.u32 [%rd1], %r4;
  ret;"""
MODES = [(False, None), (True, 1)]


def run(sem, fence):
    ptx = kernel(REMOTE.format(sem=sem, fence=fence), target="sm_90a", shared="  .shared .align 8 .b64 bar;")
    res = runs(ptx, [np.zeros(2, np.uint32)], modes=MODES, grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))
    for _, r in res:
        assert list(r.outputs[0]) == [1, 0]
    return ptx, res


@pytest.mark.parametrize("sem", ["", ".release"])
def test_a_release_cluster_arrive_publishes_the_init(sem):
    assert_clean(run(sem, "")[1])


@pytest.mark.parametrize("fence", ["fence.mbarrier_init.release.cluster", "fence.acq_rel.cluster",
                                   "fence.release.sync_restrict::shared::cta.cluster"])
def test_a_release_fence_at_cluster_scope_publishes_it_for_a_relaxed_arrive(fence):
    """fence.mbarrier_init is the .op_restrict form of a release fence (PTX ISA 9.1 §9.7.13.4): the unrestricted
    one orders the thread's prior mbarrier.init as well."""
    assert_clean(run(".relaxed", f"  @%p1 {fence};")[1])


def test_a_cta_scope_release_fence_does_not_publish_it():
    ptx, res = run(".relaxed", "  @%p1 fence.acq_rel.cta;")
    assert_found(res, 10, (line_of(ptx, "init"), line_of(ptx, "arrive")), "fence.mbarrier_init.release.cluster")


def test_a_relaxed_arrive_without_the_fence_is_class_10():
    ptx, res = run(".relaxed", "")
    assert_found(res, 10, (line_of(ptx, "init"), line_of(ptx, "arrive")), "fence.mbarrier_init.release.cluster")
