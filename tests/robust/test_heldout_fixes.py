"""Fixes found by robust17's held-out bad inputs (issue 17: hand-written malformed PTX, launches and command lines
outside the fuzzer's mutations, run through ``tcsim check`` / ``tcsim run`` with a 60 s limit): each case is a
located diagnostic now, with ptxas 13.0's verdict as the oracle for what ``tcsim check`` must reject or accept
(probes run with ``ptxas -arch=sm_90a`` / ``-arch=sm_121a``, verdicts in the tables below).  The CTA that polls its
own shared memory while others work is tests/sim/test_loop_watch_cluster.py."""
from __future__ import annotations

import pytest

from tcsim.cli import main

BODY = ".visible .entry k()\n{DIR}{{\n  .reg .pred %p<2>;\n  .reg .b64 %rd<2>;\nL:\n{INS}\n  ret;\n}}\n"


def _check(tmp_path, capsys, text):
    p = tmp_path / "k.ptx"
    p.write_text(text)
    rc = main(["check", str(p)])
    out = capsys.readouterr()
    return rc, out.out + out.err, str(p)


def _ptx(target="sm_90a", version="8.7", directive="", ins="  mov.u64 %rd1, 0;"):
    return (f".version {version}\n.target {target}\n.address_size 64\n" +
            BODY.format(DIR=directive + ("\n" if directive else ""), INS=ins))


# ptxas 13.0: "Unsupported .target 'X'" for a name it does not know (a fatal error at line 2), or "Target
# architecture not defined" when the first target is no architecture; old architectures and compute_XX are accepted
@pytest.mark.parametrize("target,col", [("sm_999z", 9), ("sm_91", 9), ("sm_90f", 9), ("sm_89a", 9),
                                        ("compute_999", 9), ("bogus", 9), ("sm_90a, bogus", 17)])
def test_an_unknown_target_is_rejected_at_its_name(tmp_path, capsys, target, col):
    rc, out, p = _check(tmp_path, capsys, _ptx(target, version="9.0"))
    assert rc == 1 and out.startswith(f"{p}:2:{col}: syntax error: Unsupported .target"), out


@pytest.mark.parametrize("target", ["sm_90a", "sm_10", "sm_20", "sm_88", "sm_120", "sm_121f", "compute_90",
                                    "sm_90a, debug", "sm_90a, texmode_independent"])
def test_a_known_target_is_accepted(tmp_path, capsys, target):
    rc, out, _ = _check(tmp_path, capsys, _ptx(target, version="9.0"))
    assert rc == 0, out


# ptxas 13.0: "Positive non-zero value expected for maxnreg" (and minnctapersm); .maxclusterrank 0 is accepted
@pytest.mark.parametrize("directive,ok", [(".maxnreg 0", False), (".minnctapersm 0", False), (".maxnreg 1", True),
                                          (".minnctapersm 1", True), (".maxclusterrank 0", True)])
def test_performance_directives_that_must_be_positive(tmp_path, capsys, directive, ok):
    rc, out, p = _check(tmp_path, capsys, _ptx(directive=directive))
    assert (rc == 0) == ok, out
    if not ok:
        assert out.startswith(f"{p}:5:") and directive.split()[0] in out, out


# ptxas 13.0: "Arguments mismatch for instruction 'mov'" for a label as a value (run time rejected it before,
# after check had accepted it); a label is a branch target
@pytest.mark.parametrize("ins,ok", [("  mov.u64 %rd1, L;", False), ("  add.u64 %rd1, %rd1, L;", False),
                                    ("  @%p1 bra L;", True)])
def test_a_label_is_an_operand_of_branches_only(tmp_path, capsys, ins, ok):
    rc, out, p = _check(tmp_path, capsys, _ptx(ins=ins))
    assert (rc == 0) == ok, out
    if not ok:
        assert out.startswith(f"{p}:9:3:") and "Arguments mismatch" in out, out


def test_run_of_a_ptx_file_says_it_is_no_launch_file(tmp_path, capsys):
    p = tmp_path / "k.ptx"
    p.write_text(_ptx())
    rc = main(["run", str(p)])
    out = capsys.readouterr().err
    assert rc == 2 and "is not a launch file" in out and "tcsim check" in out, out
