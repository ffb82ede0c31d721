"""The robustness fuzzer (calib/robust): its harness classifies what it should, every regression file it saved
replays as a diagnostic (no traceback, hang, memory blow-up or unlocated message), and a CI sample of mutants of
the tracked PTX, bad launches and bad command lines has no finding.  The 10^5-case campaign is
``calib/robust/campaign_record.json`` (and the ``slow`` test below re-runs a larger sample)."""
from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from calib.robust.campaign import REGRESSIONS, campaign, load_regressions, replay, _ddmin
from calib.robust.execute import FINDINGS, latin1
from calib.robust.generate import make_case, tracked_ptx
from calib.robust.pool import Pool
from calib.robust.ptx_mutate import MUTATORS, mutate

REPO = Path(__file__).resolve().parents[2]


def test_pool_classifies_each_outcome():
    cases = [{"id": w, "kind": "selftest", "what": w, "time_limit": 2.0}
             for w in ("ok", "diagnostic", "raise", "hang", "memory", "crash")]
    with Pool(jobs=2, time_limit=2.0, mem=2 << 30) as pool:
        got = {c["id"]: o["cls"] for c, o in pool.imap(cases)}
    assert got == {"ok": "ran", "diagnostic": "diagnostic", "raise": "traceback", "hang": "hang",
                   "memory": "memory", "crash": "crash"}


def test_pool_kills_a_hang_the_timer_cannot_stop(monkeypatch):
    import calib.robust.pool as pool_mod
    monkeypatch.setattr(pool_mod, "GRACE_S", 1.0)
    with Pool(jobs=1, time_limit=1.0, mem=2 << 30) as pool:
        out = pool.map([{"kind": "selftest", "what": "native_hang", "time_limit": 1.0},
                        {"kind": "selftest", "what": "ok"}])
    assert [o["cls"] for o in out] == ["hang", "ran"]       # a new worker took the next case


def test_every_mutator_changes_its_input_and_cases_are_reproducible():
    rng = random.Random(1)
    src = (REPO / "examples" / "mma_gemm.ptx").read_bytes()
    for name, (fn, _) in MUTATORS.items():
        changed = sum(fn(src, random.Random(k))[0] != src for k in range(20))
        assert changed >= 15, name
    a, la = mutate(src, random.Random(5))
    b, lb = mutate(src, random.Random(5))
    assert (a, la) == (b, lb) and rng is not None
    assert make_case(3, 17) == make_case(3, 17)
    assert {make_case(3, i)["kind"] for i in range(400)} == {"check", "run", "launch", "cli"}
    assert len(tracked_ptx()) > 100


def test_ddmin_finds_a_one_minimal_subset():
    want = {3, 11, 12}
    got = _ddmin(list(range(20)), lambda cands: [want <= set(c) for c in cands])
    assert sorted(got) == sorted(want)


def test_regression_files_replay_as_diagnostics():
    regs = load_regressions()
    assert regs, "tests/robust_regressions holds the minimised findings"
    kinds = Counter(c["kind"] for c in regs)
    assert kinds["check"] and kinds["cli"]
    bad = replay(REGRESSIONS, jobs=2, time_limit=30.0)
    assert not bad, "\n".join(f"{c['id']}: {o['cls']} {o.get('detail')}" for c, o in bad)


def test_regression_files_are_what_was_found():
    for p in sorted(REGRESSIONS.glob("*.json")):
        body = json.loads(p.read_text())
        assert body["found"]["class"] in FINDINGS, p.name
        if "ptx_file" in body:
            assert (REGRESSIONS / body["ptx_file"]).is_file()


# the CI sample: mutants of the small tracked PTX files (the cheapest to check: ~5-10 ms a case) for tcsim check; the
# bad launches and command lines of CI are the regression files and test_bad_inputs.py, the full mix is slow
CI_MIX = {"check": 1.0}


def test_ci_sample_has_no_finding():
    rec = campaign(1234, 1000, jobs=2, time_limit=30.0, max_bytes=2000, mix=CI_MIX)
    assert sum(rec["classes"].values()) == 1000
    # the sample reaches both the front end's rejections and its acceptances
    assert rec["classes"]["diagnostic"] > 400 and rec["classes"]["accepted"] > 80
    assert rec["findings"] == 0, json.dumps(rec["examples"], indent=1)


@pytest.mark.slow
def test_larger_sample_with_runs_has_no_finding():
    rec = campaign(99, 3000, jobs=2, time_limit=30.0)
    assert rec["by_kind"]["run:run"].get("ran", 0) > 10
    assert rec["findings"] == 0, json.dumps(rec["examples"], indent=1)


def test_latin1_round_trip_keeps_every_byte():
    raw = bytes(range(256))
    assert latin1(raw).encode("latin-1") == raw
