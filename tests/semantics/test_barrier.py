"""Named CTA barriers (PTX ISA 9.1 §9.7.13.1 bar/barrier, §9.7.13.2 bar.warp.sync)."""
import numpy as np
import pytest

from tcsim.isa.errors import DeadlockError, SyncError, VerifyError
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def kernel(body, nslots=1):
    return HEAD + f"""
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<64>;
  .reg .b64 %rd<64>;
  .reg .pred %p<16>;
  .shared .align 16 .b32 sm[1024];
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd63, %r0, {4 * nslots};
  add.u64 %rd1, %rd0, %rd63;
  mov.u32 %r50, sm;
  shl.b32 %r51, %r0, 2;
  add.u32 %r52, %r50, %r51;          // &sm[tid]
{body}
  ret;
}}
"""


def out(slot, reg):
    return f"  st.global.u32 [%rd1+{4 * slot}], {reg};\n"


def launch(body, nthreads=128, nslots=1, seed=None, observers=()):
    res = run_launch(Launch(ptx=kernel(body, nslots), block=(nthreads, 1, 1),
                            args=[np.full(nthreads * nslots, 0xDEAD, np.uint32)]), seed=seed, observers=observers)
    return res.outputs[0].reshape(nthreads, nslots)


@pytest.mark.parametrize("seed", [None, 2, 5])
@pytest.mark.parametrize("form", ["bar.sync 0;", "barrier.sync 0;", "bar.cta.sync 0;", "barrier.cta.sync.aligned 0;",
                                  "barrier.sync 0, 128;"])
def test_cta_barrier_orders_shared_memory_exchange(form, seed):
    body = ("  mul.lo.u32 %r2, %r0, 3;\n  st.shared.u32 [%r52], %r2;\n"
            f"  {form}\n"
            "  add.u32 %r3, %r0, 37;\n  and.b32 %r3, %r3, 127;\n  shl.b32 %r3, %r3, 2;\n  add.u32 %r3, %r50, %r3;\n"
            "  ld.shared.u32 %r4, [%r3];\n" + out(0, "%r4"))
    r = launch(body, seed=seed)
    tid = np.arange(128)
    assert (r[:, 0] == ((tid + 37) % 128) * 3).all()


@pytest.mark.parametrize("seed", [None, 4])
def test_producer_consumer_named_barriers_arrive_and_sync(seed):
    # PTX ISA example: warps 0-1 produce into sm[0..63] then bar.arrive 0,128 and wait on bar.sync 1,128;
    # warps 2-3 bar.sync 0,128, read, bar.arrive 1,128.  Four rounds.
    body = """
  setp.lt.u32 %p1, %r0, 64;
  mov.u32 %r5, 0;            // round
  mov.u32 %r9, 0;            // consumer accumulator
LOOP:
  @!%p1 bra CONS;
  mad.lo.u32 %r6, %r5, 1000, %r0;
  st.shared.u32 [%r52], %r6;
  bar.arrive 0, 128;
  bar.sync 1, 128;
  bra NEXT;
CONS:
  bar.sync 0, 128;
  sub.u32 %r7, %r51, 256;
  add.u32 %r7, %r50, %r7;
  ld.shared.u32 %r8, [%r7];
  add.u32 %r9, %r9, %r8;
  barrier.arrive 1, 128;
NEXT:
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p2, %r5, 4;
  @%p2 bra LOOP;
""" + out(0, "%r9")
    r = launch(body, seed=seed)
    tid = np.arange(64, 128)
    expect = sum(k * 1000 + (tid - 64) for k in range(4))
    assert (r[64:, 0] == expect).all()
    assert (r[:64, 0] == 0).all()


@pytest.mark.parametrize("op,pred,expect", [
    ("popc.u32", "setp.eq.u32 %p3, %r10, 0;", lambda p: int(p.sum())),
    ("and.pred", "setp.lt.u32 %p3, %r0, 96;", lambda p: int(p.all())),
    ("or.pred", "setp.eq.u32 %p3, %r0, 77;", lambda p: int(p.any())),
    ("and.pred", "setp.lt.u32 %p3, %r0, 95;", lambda p: int(p.all())),
    ("or.pred", "setp.gt.u32 %p3, %r0, 200;", lambda p: int(p.any())),
])
def test_barrier_red(op, pred, expect):
    tid = np.arange(96)
    preds = {"popc.u32": tid % 3 == 0}
    rem = "  rem.u32 %r10, %r0, 3;\n  " + pred + "\n"
    if op == "popc.u32":
        body = rem + "  bar.red.popc.u32 %r11, 3, %p3;\n" + out(0, "%r11")
        p = preds[op]
    else:
        body = rem + f"  barrier.red.{op.split('.')[0]}.aligned.pred %p4, 3, %p3;\n  selp.u32 %r11, 1, 0, %p4;\n" \
            + out(0, "%r11")
        if "96" in pred:
            p = tid < 96
        elif "95" in pred:
            p = tid < 95
        elif "77" in pred:
            p = tid == 77
        else:
            p = tid > 200
    r = launch(body, nthreads=96)
    assert (r[:, 0] == expect(p)).all()


def test_barrier_red_negated_predicate_and_thread_count():
    body = ("  setp.lt.u32 %p3, %r0, 10;\n  bar.red.popc.u32 %r11, 2, 64, !%p3;\n" + out(0, "%r11"))
    r = launch(body, nthreads=64)
    assert (r[:, 0] == 54).all()


def test_exited_threads_count_as_arrived_for_whole_cta_barrier():
    # warp 1 exits at once; lanes 16-31 of warp 0 exit too; the rest meet at bar.sync 0 (whole-CTA form).
    body = ("  setp.ge.u32 %p1, %r0, 32;\n  setp.lt.u32 %p2, %r0, 64;\n  and.pred %p3, %p1, %p2;\n  @%p3 exit;\n"
            "  and.b32 %r2, %r0, 31;\n  setp.ge.u32 %p4, %r2, 16;\n  setp.lt.u32 %p5, %r0, 32;\n"
            "  and.pred %p6, %p4, %p5;\n  @%p6 exit;\n"
            "  st.shared.u32 [%r52], %r0;\n  bar.sync 0;\n  xor.b32 %r3, %r0, 64;\n  shl.b32 %r3, %r3, 2;\n"
            "  add.u32 %r3, %r50, %r3;\n  ld.shared.u32 %r4, [%r3];\n" + out(0, "%r4"))
    r = launch(body)
    tid = np.arange(128)
    live = (tid < 16) | (tid >= 64)
    xs = tid ^ 64
    want = np.where(live[xs], xs, 0)
    assert (r[live, 0] == want[live]).all()
    assert (r[~live, 0] == 0xDEAD).all()


def test_threads_exiting_after_others_wait_release_the_barrier():
    # warp 0 waits at bar.sync 0 while warp 1 spins and then exits without reaching the barrier.
    body = ("  setp.lt.u32 %p1, %r0, 32;\n  @%p1 bra W;\n  mov.u32 %r5, 0;\nSPIN:\n  add.u32 %r5, %r5, 1;\n"
            "  setp.lt.u32 %p2, %r5, 20;\n  @%p2 bra SPIN;\n  exit;\nW:\n  bar.sync 0;\n  mov.u32 %r6, 9;\n"
            + out(0, "%r6"))
    r = launch(body, nthreads=64)
    assert (r[:32, 0] == 9).all()


def test_divergent_non_aligned_barrier_from_two_sites_completes_warp_arrival():
    body = ("  and.b32 %r2, %r0, 31;\n  setp.lt.u32 %p1, %r2, 16;\n  st.shared.u32 [%r52], %r0;\n"
            "  @%p1 bra A;\n  barrier.sync 1;\n  bra J;\nA:\n  barrier.sync 1;\nJ:\n"
            "  xor.b32 %r3, %r0, 33;\n  shl.b32 %r3, %r3, 2;\n  add.u32 %r3, %r50, %r3;\n  ld.shared.u32 %r4, [%r3];\n"
            + out(0, "%r4"))
    r = launch(body, nthreads=64)
    assert (r[:, 0] == (np.arange(64) ^ 33)).all()


def test_divergent_aligned_barrier_is_a_sync_error():
    body = ("  and.b32 %r2, %r0, 31;\n  setp.lt.u32 %p1, %r2, 16;\n"
            "  @%p1 bra A;\n  bar.sync 1;\n  bra J;\nA:\n  bar.sync 1;\nJ:\n")
    with pytest.raises(SyncError, match="different instructions"):
        launch(body, nthreads=64)
    with pytest.raises(SyncError, match="aligned"):
        launch("  setp.lt.u32 %p1, %r0, 5;\n  @%p1 bar.sync 0;\n", nthreads=32)


def test_register_barrier_id_and_count():
    body = ("  mov.u32 %r20, 5;\n  mov.u32 %r21, 64;\n  setp.lt.u32 %p1, %r0, 64;\n  @!%p1 bra END;\n"
            "  st.shared.u32 [%r52], %r0;\n  bar.sync %r20, %r21;\n  xor.b32 %r3, %r0, 63;\n  shl.b32 %r3, %r3, 2;\n"
            "  add.u32 %r3, %r50, %r3;\n  ld.shared.u32 %r4, [%r3];\n" + out(0, "%r4") + "END:\n")
    r = launch(body)
    assert (r[:64, 0] == (np.arange(64) ^ 63)).all()


def test_mismatched_thread_counts_in_one_phase_is_a_sync_error():
    body = ("  setp.lt.u32 %p1, %r0, 32;\n  @%p1 bra A;\n  bar.sync 1, 64;\n  bra J;\nA:\n  bar.sync 1, 96;\nJ:\n")
    with pytest.raises(SyncError, match="expecting 64 threads, but the current phase was started expecting 96"):
        launch(body, nthreads=96)


def test_red_mixed_with_sync_is_a_sync_error():
    body = ("  setp.lt.u32 %p1, %r0, 32;\n  @%p1 bra A;\n  bar.sync 1, 64;\n  bra J;\n"
            "A:\n  bar.red.popc.u32 %r2, 1, 64, %p1;\nJ:\n")
    with pytest.raises(SyncError, match="intermixed"):
        launch(body, nthreads=64)


def test_barrier_deadlock_report():
    body = ("  setp.lt.u32 %p1, %r0, 64;\n  @!%p1 bra END;\n  bar.sync 1, 96;\nEND:\n")
    with pytest.raises(DeadlockError) as ei:
        launch(body)
    msg = str(ei.value)
    assert "named barrier 1 of CTA (0,0,0)" in msg and "96 threads (3 warps)" in msg
    assert "2 warp(s) arrived [0, 1]" in msg


def test_thread_count_checks():
    with pytest.raises(VerifyError, match="multiple of the warp size"):
        launch("  bar.sync 0, 48;\n")
    with pytest.raises(VerifyError, match="barrier 16 out of range"):
        launch("  bar.sync 16;\n")
    with pytest.raises(VerifyError, match="thread count"):
        launch("  bar.arrive 0;\n")
    with pytest.raises(SyncError, match="exceeds"):
        launch("  mov.u32 %r2, 256;\n  bar.sync 0, %r2;\n", nthreads=64)


def test_arrive_twice_in_one_phase_is_a_sync_error():
    # warp 1 is still spinning when warp 0 arrives a second time at the same phase
    body = ("  setp.lt.u32 %p1, %r0, 32;\n  @!%p1 bra B;\n  bar.arrive 1, 64;\n  bar.arrive 1, 64;\n  bra E;\nB:\n"
            "  mov.u32 %r5, 0;\nSPIN:\n  add.u32 %r5, %r5, 1;\n  setp.lt.u32 %p2, %r5, 20;\n  @%p2 bra SPIN;\n"
            "  bar.sync 1, 64;\nE:\n")
    with pytest.raises(SyncError, match="twice"):
        launch(body, nthreads=64)


def test_bar_warp_sync_between_divergent_halves():
    body = ("  and.b32 %r2, %r0, 31;\n  setp.lt.u32 %p1, %r2, 16;\n  @%p1 bra A;\n"
            "  mul.lo.u32 %r3, %r0, 5;\n  st.shared.u32 [%r52], %r3;\n  bar.warp.sync -1;\n  bra J;\n"
            "A:\n  mul.lo.u32 %r3, %r0, 5;\n  st.shared.u32 [%r52], %r3;\n  bar.warp.sync 0xffffffff;\nJ:\n"
            "  xor.b32 %r4, %r0, 16;\n  shl.b32 %r4, %r4, 2;\n  add.u32 %r4, %r50, %r4;\n  ld.shared.u32 %r5, [%r4];\n"
            + out(0, "%r5"))
    r = launch(body, nthreads=32)
    assert (r[:, 0] == (np.arange(32) ^ 16) * 5).all()


def test_bar_warp_sync_requires_own_lane_in_mask():
    with pytest.raises(SyncError, match="membermask"):
        launch("  bar.warp.sync 0x0000ffff;\n", nthreads=32)


def test_barrier_sync_events():
    events = []
    launch("  bar.sync 0;\n", nthreads=64, observers=[events.append])
    ops = [e.fields["op"] for e in events if e.kind == "sync"]
    assert ops.count("bar.arrive") == 2 and ops.count("bar.release") == 1


def test_bar_and_barrier_spellings_share_one_resource():
    # warp 0: bar.sync 3, 96; warp 1: barrier.sync 3, 96; warp 2: barrier.cta.arrive.aligned 3, 96 (no wait)
    body = ("  st.shared.u32 [%r52], %r0;\n  setp.lt.u32 %p1, %r0, 32;\n  setp.lt.u32 %p2, %r0, 64;\n"
            "  @%p1 bra W0;\n  @%p2 bra W1;\n  barrier.cta.arrive.aligned 3, 96;\n  bra E;\n"
            "W0:\n  bar.sync 3, 96;\n  bra R;\nW1:\n  barrier.sync 3, 96;\n"
            "R:\n  add.u32 %r3, %r0, 64;\n  shl.b32 %r3, %r3, 2;\n  add.u32 %r3, %r50, %r3;\n  ld.shared.u32 %r4, [%r3];\n"
            + out(0, "%r4") + "E:\n")
    r = launch(body, nthreads=96)
    assert (r[:32, 0] == np.arange(64, 96)).all()


@pytest.mark.parametrize("nthreads,exit_from", [(48, None), (64, 48)])
def test_thread_count_is_counted_per_warp(nthreads, exit_from):
    # Seen on an H100 (sm_90a): bar.sync 1, 64 completes for a 48-thread CTA (warp 1 has 16 lanes) and for
    # a 64-thread CTA whose lanes 48-63 exited: the barrier counts warps, not threads.
    pre = f"  setp.ge.u32 %p1, %r0, {exit_from};\n  @%p1 exit;\n" if exit_from else ""
    r = launch(pre + "  bar.sync 1, 64;\n  mov.u32 %r2, 1;\n" + out(0, "%r2"), nthreads=nthreads)
    assert (r[:48, 0] == 1).all()


def test_whole_cta_form_and_full_count_are_compatible():
    body = "  setp.lt.u32 %p1, %r0, 32;\n  @%p1 bra A;\n  bar.sync 0, 64;\n  bra J;\nA:\n  bar.sync 0;\nJ:\n"
    launch(body, nthreads=64)
