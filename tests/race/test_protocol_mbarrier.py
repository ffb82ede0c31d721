"""Protocol checks of mbarriers and TMA transactions (tcsim.race.protocol): each buggy ring kernel is a minimal edit
of the correct one (tests/race/protocol_kernels.py); the finding names its class, the lines of both sides, the
root cause, and ends the run as the H100 does (tests/hw/golden_h100/protocol_outcomes.json, issue 15 item 6).  Every case runs
with timing off and on and under seeds None, 1, 2."""
import pytest

from tcsim.findings import FindingError
from tcsim.isa.errors import DeadlockError

from protocol_kernels import BYTES, line_of, ring, ring_inputs, run_ring

SCHEDULES = [(t, s) for t in (False, True) for s in (None, 1, 2)]


def outcome(ptx, timing, seed):
    """(findings, the error that ended the run or None, outputs or None)."""
    try:
        res = run_ring(ptx, timing=timing, seed=seed)
    except (FindingError, DeadlockError) as e:
        return list(e.findings), e, None
    return list(res.findings), None, res.outputs[1]


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_correct_ring_has_no_findings(timing, seed):
    for kw in ({}, dict(S=3, N=7), dict(copies=2), dict(second_producer=True, full_count=2)):
        res = run_ring(ring(**kw), N=kw.get("N", 6), timing=timing, seed=seed)
        assert res.findings == [], [str(f) for f in res.findings]
        assert (res.outputs[1] == ring_inputs(kw.get("N", 6))[1]).all()


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class1_stale_parity_names_the_wait_and_the_phase_it_consumed_before(timing, seed):
    ptx = ring(consumer_flips=False)                    # the consumer never flips its parity on wrap
    findings, err, _ = outcome(ptx, timing, seed)
    cwait = line_of(ptx, "CWAIT")
    stale = [f for f in findings if f.cls == 1]
    assert stale, [str(f) for f in findings]
    f = stale[0]
    assert f.lines[:2] == (cwait, cwait)                # the wait that consumed the phase, and the same wait again
    assert "parity 0" in f.message and "already consumed" in f.message
    assert "wait with parity 1" in f.missing
    if err is not None:
        # the producer re-arms the barrier early and its next arrive.expect_tx over-arrives: the H100 traps there
        # (probe stale_parity_consumer); the trap is explained by the stale wait, not as an arrive-count bug
        assert isinstance(err, FindingError) and err.finding.cls == 1 and err.finding.outcome == "trap"
        assert err.finding.lines == (cwait, cwait, line_of(ptx, "EXPECT"))
        assert "over-arrival" in err.finding.message and "stale phase" in err.finding.message


@pytest.mark.parametrize("timing,seed", SCHEDULES)
@pytest.mark.parametrize("expect", [BYTES - 16, BYTES + 16])
def test_class3_expect_tx_mismatch_hangs_naming_the_expect_tx_and_the_copy(timing, seed, expect):
    ptx = ring(expect=expect)
    findings, err, _ = outcome(ptx, timing, seed)
    assert isinstance(err, DeadlockError)               # the H100 hangs (probes tx_too_few_expect / _many_)
    [f] = [f for f in findings if f.cls == 3]
    assert f.outcome == "hang" and f.lines[:2] == (line_of(ptx, "EXPECT"), line_of(ptx, "COPY0"))
    if expect < BYTES:                  # the copy over-delivers: tx-count -16, the phase never completes
        assert f"16 more bytes were delivered than expected (expect-tx {expect}" in f.message
        assert f"delivered {BYTES}: {BYTES} bytes by 1 copy(ies) issued at line {line_of(ptx, 'COPY0')}" in f.message
        assert f.missing == \
            f"16 more bytes in the mbarrier.arrive.expect_tx.shared::cta.b64 at line {line_of(ptx, 'EXPECT')}"
    else:                               # 16 bytes never come
        assert f"16 transaction bytes are still expected -- expect-tx announced {expect} bytes" in f.message
        assert f"the copies delivered {BYTES}" in f.message
        assert f.missing == \
            f"16 fewer bytes in the mbarrier.arrive.expect_tx.shared::cta.b64 at line {line_of(ptx, 'EXPECT')}"
    assert "Root cause: [class 3]" in str(err)


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class3_phase_completing_with_a_copy_in_flight(timing, seed):
    # two copies of 64 bytes, but the expect_tx announces only one: phase 0 completes while the second is in flight
    ptx = ring(copies=2, expect=BYTES // 2)
    findings, err, out = outcome(ptx, timing, seed)
    early = [f for f in findings if f.cls == 3 and f.outcome == "continue"]
    assert early, [str(f) for f in findings]
    f = early[0]
    assert f.lines == (line_of(ptx, "EXPECT"), line_of(ptx, "COPY0"), line_of(ptx, "COPY1"))
    assert "still in flight" in f.message
    assert f"{BYTES // 2} more bytes in the mbarrier.arrive.expect_tx.shared::cta.b64 at line {line_of(ptx, 'EXPECT')}" \
        in f.missing
    # then the late bytes unbalance the next phases: a hang (deadlock) or a wrong sum, never a clean run
    assert err is not None or (out != ring_inputs()[1]).any()


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class4_init_count_above_the_arrivals_names_init_and_arrive(timing, seed):
    ptx = ring(empty_count=2)                           # one consumer lane arrives per phase; the count says 2
    findings, err, _ = outcome(ptx, timing, seed)
    assert isinstance(err, DeadlockError)
    [f] = [f for f in findings if f.cls == 4]
    assert f.outcome == "hang" and f.lines[:2] == (line_of(ptx, "INIT_EMPTY0"), line_of(ptx, "CARRIVE"))
    assert "counts 2 arrivals" in f.message and "only 1 came" in f.message
    assert "Root cause: [class 4]" in str(err)


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class4_over_arrival_traps_at_the_arrive(timing, seed):
    ptx = ring(arrive_count=2)                          # arrive count 2 on a count-1 barrier (probe arrive_count2_on_count1)
    findings, err, _ = outcome(ptx, timing, seed)
    assert isinstance(err, FindingError) and err.finding.cls == 4 and err.finding.outcome == "trap"
    assert err.finding.lines == (line_of(ptx, "INIT_EMPTY0"), line_of(ptx, "CARRIVE"))
    assert err.finding.loc.line == line_of(ptx, "CARRIVE")


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class17_unpredicated_arrive_by_a_whole_warp_names_the_lanes(timing, seed):
    ptx = ring(consumer_arrive="mbarrier.arrive.shared::cta.b64 _, [%r14];")
    findings, err, _ = outcome(ptx, timing, seed)
    assert isinstance(err, FindingError) and err.finding.cls == 17 and err.finding.outcome == "trap"
    f = err.finding
    assert f.lines == (line_of(ptx, "INIT_EMPTY0"), line_of(ptx, "CARRIVE"))
    assert "lanes 0-31" in f.message and "counts 1" in f.message and "elect" in f.fix


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class12_two_producers_share_one_full_barrier(timing, seed):
    ptx = ring(second_producer=True)                    # a second transfer announced on the same count-1 barrier
    findings, err, _ = outcome(ptx, timing, seed)
    assert isinstance(err, FindingError) and err.finding.cls == 12 and err.finding.outcome == "trap"
    assert err.finding.lines == (line_of(ptx, "INIT_FULL0"), line_of(ptx, "EXPECT"), line_of(ptx, "EXPECT2"))
    assert "two producers in one phase" in err.finding.message and "separate mbarrier" in err.finding.missing


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_class11_store_over_a_live_barrier_names_the_init(timing, seed):
    ptx = ring(store_over_barrier=True)
    res = run_ring(ptx, timing=timing, seed=seed)
    [f] = res.findings
    assert f.cls == 11 and f.outcome == "continue" and f.lines == (line_of(ptx, "INIT_FULL0"), line_of(ptx, "CLOBBER"))
    assert f"initialised at line {line_of(ptx, 'INIT_FULL0')}" in f.missing


def test_strict_mode_stops_at_the_first_continue_finding():
    ptx = ring(store_over_barrier=True)
    with pytest.raises(FindingError) as ei:
        run_ring(ptx, strict=True)
    assert ei.value.finding.cls == 11 and ei.value.finding.loc.line == line_of(ptx, "CLOBBER")
