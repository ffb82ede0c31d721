"""The zoo's sm_90a kernels as a Hopper GPU ran them (tests/hw/golden_h100/zoo_sm90.json, recorded by
``tests/zoo/hw_zoo.py``; the command is in the file): every correct twin completed on the GPU with the numpy answer,
so the pairs are real kernels, not simulator artefacts; and where the GPU ended a buggy twin (a launch error, or no
result: a hang), tcsim ends it the same way, with the finding as the explanation (issue 15 item 6).  A kernel edited
since the recording fails here (its code hash changed): re-record it on a GPU."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tcsim.findings import FindingError
from tcsim.isa.errors import DeadlockError, MemoryFault

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import zoo  # noqa: E402
from hw_zoo import TARGET, code_sha, twin_text  # noqa: E402

GOLDEN = json.loads((HERE.parent / "hw" / "golden_h100" / "zoo_sm90.json").read_text())
RECORDS = {(r["pair"], r["twin"]): r for r in GOLDEN["records"]}
PAIRS = {p.name: p for p in zoo.PAIRS}


#: sm_90a pairs added after the last GPU recording, not yet run on a Hopper GPU: each names why.  Recording them
#: (``python3 tests/zoo/hw_zoo.py OUTDIR`` on the GPU machine, then merging its records into zoo_sm90.json as
#: tests/hw/golden_h100/README.md says) must empty this; the test below fails when a listed pair has been recorded
#: or a pair is missing without a reason.
AWAITING_GPU: dict = {}


def test_every_sm90_twin_was_recorded_and_is_unchanged():
    want = {(p.name, w) for p in zoo.PAIRS if TARGET in p.targets for w in ("correct", "buggy")}
    pending = {(n, w) for n in AWAITING_GPU for w in ("correct", "buggy")}
    assert pending <= want and not (pending & set(RECORDS)), "AWAITING_GPU lists a pair that is recorded or gone"
    assert set(RECORDS) == want - pending
    for (name, which), rec in RECORDS.items():
        assert code_sha(twin_text(PAIRS[name], which)) == rec["code_sha256"], \
            f"{name} {which}: the kernel changed since the GPU recording; re-record (tests/zoo/hw_zoo.py)"


@pytest.mark.parametrize("name", sorted({n for n, w in RECORDS if w == "correct"}))
def test_correct_twins_ran_right_on_the_gpu(name):
    rec = RECORDS[(name, "correct")]
    assert rec["error"] is None and rec["matches_numpy"] is True


ENDED = sorted(n for (n, w), r in RECORDS.items() if w == "buggy" and r["error"] is not None)


@pytest.mark.parametrize("timing", [False, True], ids=["untimed", "timed"])
@pytest.mark.parametrize("name", ENDED)
def test_tcsim_ends_a_buggy_twin_the_way_the_gpu_did(name, timing):
    rec = RECORDS[(name, "buggy")]
    launch, _ = zoo.make_launch(PAIRS[name], twin_text(PAIRS[name], "buggy"))
    from tcsim.launch import run_launch
    with pytest.raises((FindingError, DeadlockError, MemoryFault)) as ei:
        run_launch(launch, timing=timing)
    err = ei.value
    found = list(getattr(err, "findings", ()) or ())
    assert found, f"{name}: the run stopped without a finding explaining it: {err}"
    if rec["error"] == "TIMEOUT":            # the GPU never finished
        assert isinstance(err, DeadlockError) or (isinstance(err, FindingError) and err.finding.outcome == "hang"), \
            f"{name}: the GPU hung; tcsim ended with {type(err).__name__}: {err}"
    else:                                    # the GPU ended the launch with an error
        assert isinstance(err, MemoryFault) or (isinstance(err, FindingError) and err.finding.outcome == "trap"), \
            f"{name}: the GPU trapped ({rec['error']}); tcsim ended with {type(err).__name__}: {err}"


COMPLETED = sorted(n for (n, w), r in RECORDS.items() if w == "buggy" and r["error"] is None)


@pytest.mark.parametrize("name", COMPLETED)
def test_tcsim_runs_a_buggy_twin_the_gpu_completed_to_its_end(name):
    """The other half of item 6: where the GPU ran the buggy twin to its end (a wrong result at worst), tcsim with
    timing on -- the schedule the hardware's latencies give -- runs it to its end too, the finding explaining the
    hazard.  (With timing off, the 1-cycle model is another schedule the PTX memory model allows; its async units
    take a global round trip as on the GPU, so the stale-parity ring runs to its end there too:
    tests/zoo/test_zoo_root_causes.py.  With a 10-cycle TMA it deadlocks after its class-1 finding instead, the
    producer refilling before the consumer comes back -- the same finding.)"""
    from tcsim.launch import run_launch
    pair = PAIRS[name]
    text = twin_text(pair, "buggy")
    launch, _ = zoo.make_launch(pair, text)
    res = run_launch(launch, timing=True)
    exp = zoo.expectation(text)
    assert any(zoo.matches(f, exp) for f in res.findings), [f.format() for f in res.findings]
