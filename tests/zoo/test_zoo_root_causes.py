"""Root causes the protocol checks and the happens-before detector name on zoo kernels where the symptom is
elsewhere (a deadlock, a half-met expect_tx, a CTA exit): the finding must say what to change, at which line.

* a deadlocked parity wait that skipped a phase (PTX ISA §9.7.13.15.16: a parity wait waits for the phase of
  that parity; waiting twice with the same parity skips one) is class 1, not a bare deadlock;
* bytes a leader's expect_tx waits for that landed on another CTA's barrier, where no expect_tx announced them
  (§9.7.9.25.5.2: complete_tx goes to the mbarrier operand of the copy), are class 15 naming that copy;
* an over-delivered phase names every copy instruction that delivered to it;
* a CTA exiting while a peer reads its shared memory (§9.7.13.3) names the remote read and the exit;
* a stage released by one warp's arrive while a sibling warp still reads it names bar.sync and that arrive.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # noqa: E402

from tcsim.isa.errors import DeadlockError  # noqa: E402


def _run(name, target, timing, seed=None):
    pair = zoo.BY_NAME[name]
    exp, findings, stop = zoo.run_buggy(pair, target, timing, seed)
    return exp, findings, stop


def _run_fast_tma(name, target, seed):
    """The buggy twin with timing off and a 10-cycle TMA: a schedule the PTX memory model allows (a copy served
    from a nearby cache) in which the producer refills a stage before the consumers come back to it."""
    from tcsim.agents.tma import TmaParams
    from tcsim.isa.errors import TcsimError
    from tcsim.launch import run_launch
    pair = zoo.BY_NAME[name]
    text = zoo.retarget(zoo.paths(pair)[1].read_text(), target)
    launch, _ = zoo.make_launch(pair, text)
    try:
        return zoo.expectation(text), list(run_launch(launch, seed=seed, timing=False,
                                                      tma_params=TmaParams(latency=10)).findings), None
    except TcsimError as e:
        return zoo.expectation(text), list(getattr(e, "findings", None) or []), e


@pytest.mark.parametrize("timing", [False, True])
@pytest.mark.parametrize("target", ["sm_100a", "sm_90a"])
def test_the_stale_parity_ring_ends_as_on_the_gpu_with_timing_off_and_on(target, timing):
    # the H200 ran the sm_90a twin to its end with a wrong result (tests/hw/golden_h100/zoo_sm90.json): the
    # consumers come back to full[0] with parity 0 before the producer's copy refilled it, and pass at once; with
    # timing off too (a TMA takes a global round trip in the functional preset), tcsim runs it to its end, the
    # stale wait named
    exp, findings, stop = _run("01_stale_parity", target, timing)
    assert stop is None
    assert [f for f in findings if zoo.matches(f, exp)], [f.format() for f in findings]


@pytest.mark.parametrize("seed", [None, 1, 2])
@pytest.mark.parametrize("target", ["sm_100a", "sm_90a"])
def test_a_deadlocked_wait_that_skipped_a_phase_is_class_1(target, seed):
    # a 10-cycle TMA: the producer completes phase 1 of full[0] before the consumers come back to it with parity 0
    exp, findings, stop = _run_fast_tma("01_stale_parity", target, seed)
    assert isinstance(stop, DeadlockError)
    [f] = [f for f in findings if f.cls == 1]
    wait = exp.sides["@wait"]
    text = zoo.retarget(zoo.paths(zoo.BY_NAME["01_stale_parity"])[1].read_text(), target).split("\n")
    expect = next(i + 1 for i, ln in enumerate(text) if "// @expect" in ln)
    assert f.outcome == "hang" and f.lines == (wait, wait, expect)
    assert "waits for phase 2, which nothing acts on" in f.message and "skipped a phase" in f.message
    assert f.missing == f"a parity flip for the wait at line {wait}: after consuming phase 0 it must wait with " \
                        f"parity 1 for phase 1"
    assert "Root cause: [class 1]" in str(stop)


@pytest.mark.parametrize("timing", [False, True])
def test_bytes_landing_on_the_peers_own_barrier_are_class_15_naming_the_copy(timing):
    exp, findings, stop = _run("15_pair_peer_signals_own_barrier", "sm_100a", timing)
    assert isinstance(stop, DeadlockError)
    [f] = [f for f in findings if f.cls == 15]
    copy = exp.sides["@copy"]
    assert f.outcome == "hang" and f.lines[1] == copy
    assert f.sides[1].cta == (1, 0, 0)               # the peer's copy, whose bytes went to its own barrier
    assert "4352 of the 8704 bytes expected" in f.message and "4352 bytes landed on mbarrier@" in f.message
    assert f"the mbarrier operand of the copy at line {copy} in CTA (1,0,0)" in f.missing
    assert "mapa.shared::cluster to rank 0" in f.missing
    assert not [g for g in findings if g.cls == 3]    # not misnamed as a byte count to lower


def test_an_over_delivered_phase_names_every_delivering_copy():
    exp, findings, stop = _run("03_expect_tx_not_times_cta_group", "sm_100a", False)
    assert isinstance(stop, DeadlockError)
    [f] = [f for f in findings if f.cls == 3]
    copy = exp.sides["@copy"]
    assert f.lines[:3] == (exp.sides["@expect"], copy, copy + 1)   # the A and B copies of the pair
    assert f.missing == f"4352 more bytes in the mbarrier.arrive.expect_tx.shared::cta.b64 at line " \
                        f"{exp.sides['@expect']}"


@pytest.mark.parametrize("timing", [False, True])
@pytest.mark.parametrize("target", ["sm_100a", "sm_90a"])
def test_exit_with_a_remote_read_names_the_read_and_the_exit(target, timing):
    exp, findings, _ = _run("14_exit_with_remote_read", target, timing)
    fs = [f for f in findings if f.cls == 14]
    assert fs
    for f in fs:
        assert f.lines == (exp.sides["@remote"], exp.sides["@exit"])
        assert f.sides[0].cta != f.sides[1].cta     # the peer's read, this CTA's exit
        assert f"exits (line {exp.sides['@exit']})" in f.message


def test_a_leader_release_names_the_named_barrier_and_the_releasing_arrive():
    exp, findings, _ = _run("02_leader_release", "sm_100a", False)
    fs = [f for f in findings if f.cls == 2]
    assert fs
    text = zoo.paths(zoo.BY_NAME["02_leader_release"])[1].read_text().split("\n")
    arrive = next(i + 1 for i, ln in enumerate(text) if "// @arrive" in ln)
    for f in fs:
        assert f.lines == (exp.sides["@read"], exp.sides["@write"])
        assert f.missing.startswith(f"bar.sync (or bar.arrive) of a named barrier that warp {f.sides[0].warp} and "
                                    f"the releasing thread both take part in, between the read at line "
                                    f"{exp.sides['@read']} and the mbarrier.arrive.shared::cta.b64 at line {arrive}")
