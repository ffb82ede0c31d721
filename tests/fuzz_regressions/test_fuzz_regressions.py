"""Replay the differential-fuzzing reproducers saved here (``python -m calib.fuzz --backend gpu``): each ``.ptx`` +
``.json`` pair is run on the simulator with its saved input and compared bit for bit with its saved GPU output.

A record's ``status`` says what to expect: ``"open"`` -- the simulator still disagrees with the GPU (a known
finding, described in ``finding``; strict xfail, so the day the simulator is fixed the test XPASSes and asks
for the status to become ``"fixed"``); ``"fixed"`` -- it must agree; ``"diagnosed"`` -- the GPU result depends on
how ptxas lowers the PTX (the ISA leaves it open, or ptxas miscompiles it), and tcsim must say so: ``tcsim.isa.lint``
reports a note at the offending instruction; ``"explained"`` -- the PTX ISA leaves the result open and the
lowering variant named in ``explained_by`` (sim/lowering.py, calib/fuzz/explain.py) reproduces the GPU output.  ``gpu_output_source`` says whether the GPU
bits were read back from the minimised program itself (``measured``) or taken from the fuzz run's exact data
point for that instruction (``derived``).  ``category`` ``"aliasing"`` marks register aliasings PTX leaves open
(the generator avoids them now).  Each reproducer must also pass ``tcsim check`` and be schedule-independent.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from calib.fuzz.runner import field_diffs, load_reproducer, replay_on_sim

HERE = Path(__file__).resolve().parent
RECORDS = sorted(HERE.glob("*.json"))


def _param(p: Path):
    rec = load_reproducer(p)
    marks = []
    if rec.get("status") == "diagnosed":
        marks.append(pytest.mark.skip(reason="compiler-dependent; checked by test_diagnosed_findings_are_noted"))
    elif rec.get("status") == "explained":
        marks.append(pytest.mark.skip(reason="PTX leaves it open; checked by test_explained_findings_reproduce"))
    elif rec.get("status", "open") == "open":
        marks.append(pytest.mark.xfail(strict=True, reason=f"open finding: {rec.get('finding', rec['detail'])[:200]}"))
    return pytest.param(p, marks=marks, id=p.stem)


@pytest.mark.parametrize("path", [_param(p) for p in RECORDS])
def test_simulator_matches_saved_gpu_output(path):
    rec = load_reproducer(path)
    assert rec["gpu_output"] is not None, "reproducer without GPU output"
    out = replay_on_sim(rec)
    assert out.ok, out.error
    diffs = field_diffs(None, out.output, rec["gpu_output"], rec["nthreads"], rec.get("nacc", 0))
    assert not diffs, f"{rec['kernel']}: {len(diffs)} fields differ, first {diffs[:3]} -- {rec.get('finding', '')}"


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_reproducer_is_valid_and_schedule_independent(path):
    from tcsim.cli import check_ptx_text

    rec = load_reproducer(path)
    assert not check_ptx_text(rec["ptx"], path.name)
    assert rec["format"] == "tcsim-fuzz-reproducer/1" and rec.get("finding")
    a, b = replay_on_sim(rec, None), replay_on_sim(rec, 1)
    assert a.ok and a.output == b.output
    if rec["sim_output"] is not None and rec.get("status", "open") == "open":
        # the saved simulator bits document the disagreement; they change only when the simulator does
        assert a.output == rec["sim_output"] or a.output == rec["gpu_output"]


def test_there_are_reproducers():
    assert RECORDS, "no saved reproducers"


@pytest.mark.parametrize("path", [p for p in RECORDS if load_reproducer(p).get("status") == "diagnosed"],
                         ids=lambda p: p.stem)
def test_diagnosed_findings_are_noted(path):
    from tcsim.cli import ptx_notes

    rec = load_reproducer(path)
    notes = ptx_notes(rec["ptx"], path.name)
    body_lines = [i + 1 for i, ln in enumerate(rec["ptx"].splitlines()) if ln.strip() in rec["body"]]
    assert notes and all(n.loc.line in body_lines for n in notes), notes
    assert any("depends on" in n.message for n in notes)


@pytest.mark.parametrize("path", [p for p in RECORDS if load_reproducer(p).get("status") == "explained"],
                         ids=lambda p: p.stem)
def test_explained_findings_reproduce(path):
    """A result the PTX ISA leaves open: tcsim's default rule differs from this GPU output, and the named lowering
    variant (sim/lowering.py) reproduces it bit for bit."""
    from calib.fuzz.explain import explain_record

    rec = load_reproducer(path)
    assert replay_on_sim(rec).output != rec["gpu_output"]
    assert explain_record(rec) == rec["explained_by"]


def test_no_finding_is_left_open():
    """Every finding of the fuzzing campaigns is fixed or diagnosed (issue: zero unexplained mismatches)."""
    open_ = [p.stem for p in RECORDS if load_reproducer(p).get("status", "open") == "open"]
    assert not open_, open_
