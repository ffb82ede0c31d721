"""The findings door (tcsim.findings): dedup, sanitizer vs strict mode, hardware-ending outcomes, JSON."""
import json

import pytest

from tcsim.findings import CLASSES, Access, Finding, FindingError, FindingLog, write_json
from tcsim.isa.errors import SourceLoc, SyncError


def _finding(cls=8, line_a=41, line_b=43, outcome="continue", severity="error"):
    a = Access("st.shared.b32 [%r1], %r2", SourceLoc("k.ptx", line_a, 5), cta=(0, 0, 0), warp=1,
               lanes="lanes 0-31", proxy="generic", where="SMEM [0x0, 0x200) of cta (0,0,0)", cycle=12)
    b = Access("cp.async.bulk.global.shared::cta", SourceLoc("k.ptx", line_b, 5), cta=(0, 0, 0), warp=0,
               lanes="lane 0", proxy="async", unit="tma", where="SMEM [0x0, 0x200) of cta (0,0,0)", cycle=30)
    return Finding(cls, "the bulk copy read 512 bytes written by the generic proxy", (a, b),
                   missing=f"fence.proxy.async.shared::cta between line {line_a} and line {line_b}",
                   fix="add fence.proxy.async.shared::cta after the stores", outcome=outcome, severity=severity)


def test_format_names_class_both_sides_and_missing_edge():
    text = _finding().format()
    assert text.startswith("k.ptx:43:5: error: [class 8: " + CLASSES[8] + "]")
    assert "line 41 (`st.shared.b32 [%r1], %r2` by cta (0,0,0) warp 1 lanes 0-31) [generic proxy]" in text
    assert "line 43" in text and "via the tma" in text and "[async proxy]" in text and "cycle 30" in text
    assert "missing: fence.proxy.async.shared::cta between line 41 and line 43" in text


def test_sanitizer_mode_records_each_distinct_finding_once():
    log = FindingLog()
    log.report(_finding())
    log.report(_finding())                      # same class, lines and edge: a repeat
    log.report(_finding(line_a=50))
    assert [f.lines for f in log] == [(41, 43), (50, 43)]
    assert sum(log.repeats.values()) == 1
    assert log.summary() == f"2 findings: 2 x class 8 ({CLASSES[8]})"


def test_strict_mode_raises_at_the_first_finding():
    log = FindingLog(strict=True)
    with pytest.raises(FindingError) as ei:
        log.report(_finding())
    assert isinstance(ei.value, SyncError) and ei.value.finding.cls == 8
    assert "k.ptx:43:5" in str(ei.value) and "missing: fence.proxy.async" in str(ei.value)


@pytest.mark.parametrize("outcome", ["trap", "hang"])
def test_a_hardware_ending_finding_stops_in_sanitizer_mode_too(outcome):
    log = FindingLog()
    with pytest.raises(FindingError) as ei:
        log.report(_finding(outcome=outcome))
    assert "the launch ends with an error" in str(ei.value.finding) or outcome == "hang"
    assert len(ei.value.findings) == 1


def test_lint_notes_never_stop_and_are_not_problems():
    log = FindingLog(strict=True)
    log.report(_finding(severity="lint"))
    assert len(log) == 1 and log.problems == [] and log.summary() == "no findings (1 lint note)"


def test_json_round_trip(tmp_path):
    p = tmp_path / "f.json"
    write_json([_finding()], p, error=None)
    d = json.loads(p.read_text())
    f = d["findings"][0]
    assert f["class"] == 8 and [s["loc"]["line"] for s in f["sides"]] == [41, 43]
    assert f["sides"][1]["proxy"] == "async" and f["missing"].startswith("fence.proxy.async")


def test_bad_class_is_rejected():
    with pytest.raises(ValueError):
        Finding(99, "x")


def test_clean_example_has_no_findings_and_cli_writes_empty_json(tmp_path, capsys):
    from tcsim.cli import main
    out = tmp_path / "f.json"
    rc = main(["run", "tcsim.examples.gemm_async", "--no-timing", "--findings", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "[sim] findings: no findings" in text
    assert json.loads(out.read_text())["findings"] == []


def test_a_data_race_is_one_finding_whichever_access_came_first():
    a = Access("st.shared.u32 [%r5], 42", SourceLoc("k.ptx", 30, 2), warp=0)
    b = Access("ld.shared.u32 %r7, [%r5]", SourceLoc("k.ptx", 36, 2), warp=1)
    log = FindingLog()
    log.report(Finding(21, "read after write", (a, b), missing="no edge between line 30 and line 36"))
    log.report(Finding(21, "write after read", (b, a), missing="no edge between line 36 and line 30"))
    assert len(log) == 1 and sum(log.repeats.values()) == 1


def test_the_readme_bug_examples_and_their_fixes():
    """examples/bugs: the buggy kernel names the missing fence with both lines; the one-line fix runs clean."""
    from tcsim.examples.bugs import missing_proxy_fence as m
    from tcsim.launch import run_launch
    text = m.PTX.read_text().splitlines()
    write = next(i for i, t in enumerate(text, 1) if "st.shared.u32" in t)
    read = next(i for i, t in enumerate(text, 1) if "cp.async.bulk.global.shared::cta" in t)
    [f] = run_launch(m.make_launch()).findings
    assert f.cls == 8 and f.lines == (write, read) and "fence.proxy.async.shared::cta" in f.missing
    res = run_launch(m.make_launch(fixed=True))
    assert res.findings == [] and m.check(res, None)[0]


@pytest.mark.parametrize("extra", [[], ["--explore", "2"]])
def test_an_unwritable_findings_path_is_a_diagnostic(tmp_path, capsys, extra):
    from tcsim.cli import main
    bad = tmp_path / "no" / "such" / "dir" / "f.json"
    rc = main(["run", "tcsim.examples.bugs.missing_proxy_fence", "--no-timing", "--findings", str(bad)] + extra)
    err = capsys.readouterr().err
    # checked before the run (bad usage: exit status 2), naming the option and the missing directory
    assert rc == 2 and f"--findings {bad}" in err and "does not exist" in err and "Traceback" not in err
