"""Protocol checks outside the mbarrier ring (tcsim.race.protocol, sim/semantics/barrier.py, bulk_copy.py): a
phase overtaken while a thread waited (class 1), named-barrier thread counts (class 16) and misaligned bulk
operands (class 18), each with a correct twin, timing off and on, seeds None/1/2.  Outcomes follow the H100 probes
(tests/hw/golden_h100/protocol_outcomes.json)."""
import numpy as np
import pytest

from tcsim.findings import FindingError
from tcsim.isa.errors import DeadlockError, MemoryFault
from tcsim.launch import Launch, run_launch

from protocol_kernels import line_of

SCHEDULES = [(t, s) for t in (False, True) for s in (None, 1, 2)]
HEAD = ".version 8.6\n.target sm_90a\n.address_size 64\n"


def launch(ptx, nthreads, timing, seed, args=None):
    return run_launch(Launch(ptx=ptx, grid=(1, 1, 1), block=(nthreads, 1, 1),
                             args=args if args is not None else [np.zeros(64, np.uint32)]), timing=timing, seed=seed)


# ---------------------------------------------------------------------------------------------- class 1: overtaken
def overtaken(arrivals: int) -> str:
    arr = "\n".join(f"  mbarrier.arrive.shared::cta.b64 _, [bar];      // @ARRIVE{i}" for i in range(arrivals))
    return HEAD + f""".visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<20>; .reg .b64 %rd<10>; .reg .pred %p<8>;
  .shared .align 8 .b64 bar;
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [out];
  setp.eq.u32 %p1, %r1, 0;
  setp.eq.u32 %p2, %r1, 32;
  @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
  bar.sync 0;
  @%p1 mbarrier.test_wait.parity.shared::cta.b64 %p3, [bar], 0;      // @TEST1
  bar.sync 0;
  @!%p2 bra SKIP;
{arr}
SKIP:
  bar.sync 0;
  @!%p1 bra DONE;
  mbarrier.test_wait.parity.shared::cta.b64 %p4, [bar], 0;      // @TEST2
  selp.u32 %r2, 1, 0, %p4;
  st.global.u32 [%rd1], %r2;
DONE:
  ret;
}}
"""


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class1_phase_overtaken_while_a_thread_waited(timing, seed):
    ptx = overtaken(2)                  # phases 0 and 1 complete between the two tests of the same thread
    res = launch(ptx, 64, timing, seed)
    [f] = res.findings
    assert f.cls == 1 and f.lines == (line_of(ptx, "TEST1"), line_of(ptx, "TEST2"))
    assert "phase 0" in f.message and "advanced to phase 2" in f.message and f.outcome == "continue"
    assert res.outputs[0][0] == 0       # the parity matches again: the wait does not see phase 0 complete


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_one_phase_between_the_tests_is_clean(timing, seed):
    res = launch(overtaken(1), 64, timing, seed)
    assert res.findings == [] and res.outputs[0][0] == 1


# ---------------------------------------------------------------------------------------------- class 16
def named(count_a: int, count_b: int, first: str = "a") -> str:
    """Warps 0-1 use barrier 1 with ``count_a``, warp 2 with ``count_b`` (counts in registers: ptxas and tcsim's
    loader reject an immediate that is not a multiple of 32); ``first``: which group arrives first (the other
    sleeps first)."""
    delay_a = "  nanosleep.u32 2000;\n" if first == "b" else ""
    delay_b = "  nanosleep.u32 2000;\n" if first == "a" else ""
    return HEAD + f""".visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<20>; .reg .pred %p<8>;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  setp.eq.u32 %p1, %r2, 2;
  @%p1 bra B;
{delay_a}  mov.u32 %r3, {count_a};
  bar.sync 1, %r3;      // @BAR_A
  bra DONE;
B:
{delay_b}  mov.u32 %r4, {count_b};
  bar.sync 1, %r4;      // @BAR_B
DONE:
  ret;
}}
"""


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class16_two_counts_in_one_generation_trap_at_the_later_arrival(timing, seed):
    ptx = named(64, 96, first="b")      # warp 2 opens the generation with 96; warps 0-1 arrive with 64
    with pytest.raises(FindingError) as ei:
        launch(ptx, 96, timing, seed)
    f = ei.value.finding
    assert f.cls == 16 and f.outcome == "trap" and f.lines == (line_of(ptx, "BAR_B"), line_of(ptx, "BAR_A"))
    assert "expecting 64 threads" in f.message and "started expecting 96 threads" in f.message


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class16_count_not_a_multiple_of_32_traps(timing, seed):
    ptx = named(48, 96)
    with pytest.raises(FindingError) as ei:
        launch(ptx, 96, timing, seed)
    assert ei.value.finding.cls == 16 and ei.value.finding.outcome == "trap"
    assert ei.value.finding.lines == (line_of(ptx, "BAR_A"),) and "not a positive multiple of 32" in str(ei.value)


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class16_count_above_the_cta_hangs(timing, seed):
    ptx = named(128, 128)
    with pytest.raises(FindingError) as ei:
        launch(ptx, 96, timing, seed)
    assert ei.value.finding.cls == 16 and ei.value.finding.outcome == "hang"


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_named_barriers_with_separate_ids_are_clean(timing, seed):
    ptx = named(64, 32).replace("bar.sync 1, %r4;", "bar.sync 2, %r4;")
    assert launch(ptx, 96, timing, seed).findings == []


# ---------------------------------------------------------------------------------------------- class 18
def bulk(dst_off: int, size: int) -> str:
    return HEAD + f""".visible .entry k(.param .u64 src, .param .u64 out)
{{
  .reg .b32 %r<20>; .reg .b64 %rd<10>; .reg .pred %p<8>;
  .shared .align 128 .b8 buf[256];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  add.u32 %r5, %r5, {dst_off};
  mbarrier.init.shared::cta.b64 [%r4], 1;
  mov.u32 %r7, {size};
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], %r7;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd1], %r7, [%r4];      // @COPY
W:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], 0;
  @!%p1 bra W;
  ld.shared.u32 %r6, [%r5];
  st.global.u32 [%rd2], %r6;
  ret;
}}
"""


def bulk_run(ptx, timing, seed):
    src = np.arange(64, dtype=np.uint32) + 9
    return launch(ptx, 1, timing, seed, args=[src, np.zeros(4, np.uint32)])


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class18_misaligned_destination_traps_at_the_copy(timing, seed):
    ptx = bulk(8, 32)
    with pytest.raises(FindingError) as ei:
        bulk_run(ptx, timing, seed)
    f = ei.value.finding
    assert isinstance(ei.value, MemoryFault)            # CUDA_ERROR_MISALIGNED_ADDRESS on the H100
    assert f.cls == 18 and f.outcome == "trap" and f.lines == (line_of(ptx, "COPY"),)
    assert "not 16-byte aligned" in f.message and "aligned to 16 bytes" in f.missing


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class18_size_not_a_multiple_of_16_hangs(timing, seed):
    # an H100 moves and signals only 16 of the 24 bytes (probe bulk_size_not16_poll): the wait for 24 hangs
    ptx = bulk(0, 24)
    with pytest.raises(DeadlockError) as ei:
        bulk_run(ptx, timing, seed)
    first, cause = ei.value.findings
    assert first.cls == 18 and first.outcome == "continue" and first.lines == (line_of(ptx, "COPY"),)
    assert "moves only 16 bytes" in first.message
    assert cause.cls == 3 and cause.outcome == "hang" and "8 transaction bytes are still expected" in cause.message


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_aligned_bulk_copy_is_clean(timing, seed):
    res = bulk_run(bulk(16, 32), timing, seed)
    assert res.findings == [] and res.outputs[1][0] == 9


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class16_deadlock_names_the_count_that_can_never_be_met(timing, seed):
    # bar.sync 1, 64 reached by warp 0 only; warp 1 exits (probe bar_sync_too_few_threads: the H100 hangs)
    ptx = HEAD + """.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<20>; .reg .pred %p<8>;
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 32;
  @%p1 bra DONE;
  bar.sync 1, 64;      // @BAR
DONE:
  ret;
}
"""
    with pytest.raises(DeadlockError) as ei:
        launch(ptx, 64, timing, seed)
    [f] = ei.value.findings
    assert f.cls == 16 and f.outcome == "hang" and f.lines == (line_of(ptx, "BAR"),)
    assert "warps [1] exited without arriving" in f.message and "Root cause: [class 16]" in str(ei.value)


# ---------------------------------------------------------------------------------------------- class 17: issue
def issue(predicated: bool) -> str:
    guard = "@%p1 " if predicated else ""
    return HEAD + f""".visible .entry k(.param .u64 src, .param .u64 out)
{{
  .reg .b32 %r<20>; .reg .b64 %rd<10>; .reg .pred %p<8>;
  .shared .align 128 .b8 buf[128];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 128;      // @EXPECT
  {guard}cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd1], 128, [%r4];      // @COPY
W:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], 0;
  @!%p2 bra W;
  shl.b32 %r6, %r1, 2;
  add.u32 %r6, %r5, %r6;
  ld.shared.u32 %r7, [%r6];
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r7;
  ret;
}}
"""


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class17_copy_issued_by_every_lane(timing, seed):
    ptx = issue(predicated=False)       # 32 lanes each issue the 128-byte copy; expect_tx counts one
    src = np.arange(64, dtype=np.uint32) + 3
    res = launch(ptx, 32, timing, seed, args=[src, np.zeros(32, np.uint32)])
    [f] = [f for f in res.findings if f.cls == 17]
    assert f.lines[0] == line_of(ptx, "EXPECT") and f.lines[-1] == line_of(ptx, "COPY")
    assert "issued by 32 lanes of warp 0 (lanes 0-31)" in f.message and "one lane" in f.missing
    # besides the root cause, the race detector sees what the 32 copies do: they write the same bytes unordered
    # (each other's and the reader's) -- every other finding names the copy line
    assert all(line_of(ptx, "COPY") in g.lines for g in res.findings if g.cls != 17)


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_copy_issued_by_one_lane_is_clean(timing, seed):
    src = np.arange(64, dtype=np.uint32) + 3
    res = launch(issue(predicated=True), 32, timing, seed, args=[src, np.zeros(32, np.uint32)])
    assert res.findings == [] and (res.outputs[1] == src[:32]).all()


def handoff(count: int) -> str:
    """Warp 0 (lane 0) waits on an mbarrier that thread 32 arrives on after warps 1 and 2 meet at named barrier 1
    (bar.sync 1, ``count``): the shape of a consumer group's barrier in a producer/consumer ring."""
    return HEAD + f""".visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<20>; .reg .pred %p<8>;
  .shared .align 8 .b64 bar;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, bar;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
  bar.sync 0;
  setp.ge.u32 %p2, %r1, 32;
  @%p2 bra CONS;
  @!%p1 bra DONE;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2], 0;      // @WAIT
  @!%p3 bra WAIT;
  bra DONE;
CONS:
  bar.sync 1, {count};      // @BAR
  setp.eq.u32 %p4, %r1, 32;
  @%p4 mbarrier.arrive.shared::cta.b64 _, [%r2];
DONE:
  ret;
}}
"""


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class16_count_above_the_group_while_the_other_warp_waits_elsewhere(timing, seed):
    # warps 1, 2 (64 threads) meet at bar.sync 1, 96; warp 0 is alive but blocked on the mbarrier those warps
    # would arrive on after the barrier, and never took part in barrier 1: the count is the root cause (§9.7.13.1)
    ptx = handoff(96)
    with pytest.raises(DeadlockError) as ei:
        launch(ptx, 96, timing, seed)
    [f] = [f for f in ei.value.findings if f.cls == 16]
    assert f.outcome == "hang" and f.lines == (line_of(ptx, "BAR"),)
    assert "96 threads (3 warps)" in f.message and "[1, 2] arrived" in f.message
    assert "warp 0 waits elsewhere" in f.message and "thread count of 64" in f.missing
    assert "Root cause: [class 16]" in str(ei.value)


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class16_twin_with_the_group_count_is_clean(timing, seed):
    res = launch(handoff(64), 96, timing, seed)
    assert res.findings == []
