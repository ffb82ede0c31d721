"""The loop monitor's per-cluster verdict (tcsim.loop_watch, issue 17): a warp polling its own CTA's shared memory or
mbarrier, or a CTA whose warps all wait, is reported while other CTAs still work -- once every warp that could
change that memory (its CTA's, its cluster's, their async operations) is itself blocked, stuck or exited -- and
never while another warp of the CTA, a CTA of the cluster (DSMEM) or an async copy can still write it.

Every kernel is a grid of 4 CTAs in which CTAs 1-3 keep working (a loop storing to global memory) long after CTA 0
got stuck, so the whole-machine verdicts cannot fire; sampling at every run-watch check (LOOP_AFTER = LOOP_EVERY =
0) keeps each case under a second or two."""
from __future__ import annotations

import numpy as np
import pytest

import tcsim.loop_watch as lw
from tcsim.isa.errors import DeadlockError, NonTerminatingLoopError
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"
#: CTAs other than 0 (or other than the first cluster) store 1..N to out[ctaid], then out[ctaid] = N
BUSY = """BUSY:
  mov.u32 %r3, 0;
L:
  add.u32 %r3, %r3, 1;
  st.global.u32 [%rd1], %r3;
  setp.lt.u32 %p3, %r3, {n};
  @%p3 bra L;
  ret;"""


def kernel(cta0: str, n: int, first: str = "setp.eq.u32 %p2, %r2, 0;", decl: str = "") -> str:
    return HEAD + decl + f""".visible .entry k(.param .u64 out)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<8>;
  .shared .align 8 .b64 bar;
  .shared .align 4 .u32 flag;
  ld.param.u64 %rd1, [out];
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd2, %r2, 4;
  add.u64 %rd1, %rd1, %rd2;
  mov.u32 %r9, flag;
  mov.u32 %r10, bar;
  mov.u32 %r11, %tid.x;
  setp.eq.u32 %p7, %r11, 0;
  {first}
  @!%p2 bra BUSY;
{cta0}
  ret;
{BUSY.format(n=n)}
}}
"""


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    """Sample at every run-watch check."""
    monkeypatch.setattr(lw, "LOOP_AFTER", 0.0)
    monkeypatch.setattr(lw, "LOOP_EVERY", 0.0)
    monkeypatch.setattr(lw, "MAX_SHARE", 0.0)


def _run(src, block=32, cluster=1, tier="reference"):
    return run_launch(Launch(ptx=src, grid=(4, 1, 1), block=(block, 1, 1), cluster=(cluster, 1, 1),
                             args=[np.zeros(4, np.uint32)]), progress=False, detect=False, tier=tier)


# ---------------------------------------------------------------------------------------------- stuck
STUCK = {
    # a flag in its CTA's shared memory that nobody writes
    "smem_flag": ("""W:
  ld.volatile.shared.u32 %r1, [%r9];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra W;""", 1, 1, NonTerminatingLoopError, "ld.volatile.shared"),
    # an mbarrier of count 2 with one arrival, polled with test_wait (no blocking)
    "mbarrier_test_wait": ("""  @%p7 mbarrier.init.shared::cta.b64 [%r10], 2;
  @%p7 mbarrier.arrive.shared::cta.b64 %rd3, [%r10];
W:
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [%r10], 0;
  @!%p1 bra W;""", 1, 1, NonTerminatingLoopError, "mbarrier.test_wait"),
    # the same with try_wait (which suspends the lanes while the phase is incomplete: a poll or a wait)
    "mbarrier_try_wait": ("""  @%p7 mbarrier.init.shared::cta.b64 [%r10], 2;
  @%p7 mbarrier.arrive.shared::cta.b64 %rd3, [%r10];
W:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r10], 0;
  @!%p1 bra W;""", 1, 1, (NonTerminatingLoopError, DeadlockError), "mbarrier"),
    # two warps of CTA 0 at named barriers of different ids: both wait forever
    "named_barriers_apart": ("""  setp.lt.u32 %p4, %r11, 32;
  @%p4 bar.sync 1, 64;
  @!%p4 bar.sync 2, 64;""", 64, 1, DeadlockError, "bar"),
    # warp 0 polls the flag while warp 1 of the CTA waits at a barrier warp 0 never reaches
    "poll_and_barrier": ("""  setp.lt.u32 %p4, %r11, 32;
  @!%p4 bra B;
W:
  ld.volatile.shared::cta.u32 %r1, [%r9];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra W;
B:
  bar.sync 1, 64;""", 64, 1, NonTerminatingLoopError, "ld.volatile.shared"),
}


#: in the fast selection (the others: slow)
FAST_STUCK = ("smem_flag", "named_barriers_apart")


@pytest.mark.parametrize("name", [n if n in FAST_STUCK else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(STUCK)])
def test_a_cta_stuck_on_its_own_memory_is_reported_while_others_work(name):
    body, block, cluster, exc, what = STUCK[name]
    with pytest.raises(exc) as ei:
        _run(kernel(body, 100_000), block=block, cluster=cluster)
    msg = str(ei.value)
    assert "CTA (0,0,0)" in msg and "other CTAs are still running" in msg, msg
    assert what in msg, msg
    assert ei.value.loc is not None and ei.value.loc.line > 0


def test_a_cluster_polling_its_shared_memory_is_reported_while_another_cluster_works():
    # clusters of 2: in cluster 0, rank 0 polls its flag and rank 1 exits at once; cluster 1 works
    body = """  mov.u32 %r4, %cluster_ctarank;
  setp.ne.u32 %p5, %r4, 0;
  @%p5 ret;
W:
  ld.volatile.shared::cluster.u32 %r1, [%r9];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra W;"""
    with pytest.raises(NonTerminatingLoopError) as ei:
        _run(kernel(body, 100_000, first="setp.lt.u32 %p2, %r2, 2;"), cluster=2)
    msg = str(ei.value)
    assert "CTA (0,0,0)" in msg and "the 2 CTAs of its cluster" in msg, msg


# ---------------------------------------------------------------------------------------------- not stuck
GOOD = {
    # warp 1 of CTA 0 counts, then sets the flag warp 0 polls
    "producer_warp": ("""  setp.lt.u32 %p4, %r11, 32;
  @!%p4 bra P;
W:
  ld.volatile.shared.u32 %r1, [%r9];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra W;
  st.global.u32 [%rd1], %r1;
  bra E;
P:
  mov.u32 %r5, 0;
C:
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p6, %r5, 400;
  @%p6 bra C;
  st.volatile.shared.u32 [%r9], %r5;
E:""", 64, 1, 400),
    # rank 1 of cluster 0 counts, then writes rank 0's flag through DSMEM (mapa + st.shared::cluster)
    "remote_dsmem_writer": ("""  mov.u32 %r4, %cluster_ctarank;
  barrier.cluster.arrive.release;
  barrier.cluster.wait.acquire;
  setp.ne.u32 %p5, %r4, 0;
  @%p5 bra P;
W:
  ld.volatile.shared::cluster.u32 %r1, [%r9];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra W;
  st.global.u32 [%rd1], %r1;
  bra E;
P:
  mov.u32 %r5, 0;
C:
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p6, %r5, 400;
  @%p6 bra C;
  mapa.shared::cluster.u32 %r6, %r9, 0;
  st.volatile.shared::cluster.u32 [%r6], %r5;
  st.global.u32 [%rd1], %r5;
E:
  barrier.cluster.arrive.release;
  barrier.cluster.wait.acquire;""", 32, 2, 400),
    # a bulk copy global -> shared completes the mbarrier CTA 0 polls with test_wait
    "bulk_copy_completes_the_phase": ("""  @%p7 mbarrier.init.shared::cta.b64 [%r10], 1;
  mov.u32 %r12, buf;
  ld.param.u64 %rd4, [out];
  @%p7 mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r10], 16;
  @%p7 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r12], [%rd4], 16, [%r10];
W:
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [%r10], 0;
  @!%p1 bra W;
  mov.u32 %r1, 400;
  st.global.u32 [%rd1], %r1;""", 32, 1, 400),
}


@pytest.mark.parametrize("name,tier", [pytest.param(n, t, marks=() if t == "fast" or n == "producer_warp" else
                                                   pytest.mark.slow)
                                      for n in sorted(GOOD) for t in ("reference", "fast")])
def test_a_poll_another_warp_cta_or_copy_satisfies_is_never_reported(name, tier):
    body, block, cluster, want = GOOD[name]
    first = "setp.lt.u32 %p2, %r2, 2;" if cluster == 2 else "setp.eq.u32 %p2, %r2, 0;"
    decl = ".shared .align 16 .b8 buf[16];\n" if "buf" in body else ""
    r = _run(kernel(body, 1000, first=first, decl=decl), block=block, cluster=cluster, tier=tier)
    assert r.simulation.watch.loops.samples > 2
    out = r.outputs[0]
    busy = [2, 3] if cluster == 2 else [1, 2, 3]
    assert all(int(out[i]) == 1000 for i in busy), out
    assert int(out[0]) == want, out
