"""``--jobs N`` / ``explore(..., jobs=N)``: the schedules of an exploration run in worker processes and the report
is the one a single process gives -- the same schedules, per-run cycles, errors, checks and findings, the same
output differences, the same printed and JSON reports."""
import json
import os

import pytest

import test_explore as TE  # tests/sim is on sys.path (the kernels and launch files of the exploration tests)
from tcsim.cli import main
from tcsim.explore import explore


def _facts(rep):
    return ([(r.schedule.index, r.schedule.what, r.cycles, r.error, r.error_kind, r.check,
              [f.key for f in r.findings]) for r in rep.runs],
            [(d.arg, d.schedule, d.reference, d.count, d.index, d.expected, d.got) for d in rep.diffs],
            rep.format("L"), json.dumps(rep.to_json("L"), sort_keys=True))


@pytest.mark.parametrize("timed", [False, True], ids=["timing-off", "timing-on"])
def test_jobs_give_the_single_process_report(timed):
    """A warp-order bug (outputs differ, the detector reports the race, the check fails under some schedules)."""
    seen = []

    def check(res, launch):
        ok = int(res.outputs[0][0]) == 42
        return ok, "ok" if ok else f"out[0] = {int(res.outputs[0][0])} (want 42)"

    one = explore(TE.flag_launch(), 8, timing=timed, check=check, progress=lambda s, r: seen.append(s.index))
    par = explore(TE.flag_launch(), 8, timing=timed, check=check, jobs=2,
                  progress=lambda s, r: seen.append(s.index))
    assert one.outputs_differ and one.failed_checks and one.findings      # the case has something to report
    assert _facts(par) == _facts(one)
    assert seen == list(range(8)) * 2                                      # progress in schedule order
    assert [id(s) for s in par.schedules] == [id(r.schedule) for r in par.runs]


def test_cli_jobs_prints_the_same_report(tmp_path, capsys):
    f = tmp_path / "flag_first.py"
    f.write_text(TE.LAUNCH_FILE.format(ptx=TE.FLAG_FIRST))
    outs = []
    for jobs in ("1", "2"):
        js = tmp_path / f"r{jobs}.json"
        rc = main(["run", str(f), "--no-timing", "--explore", "6", "--jobs", jobs, "--findings", str(js)])
        outs.append((rc, capsys.readouterr().out.replace(str(js), "OUT"), json.loads(js.read_text())))
    assert outs[0][0] == 1 and "OUTPUTS DIFFER" in outs[0][1]
    assert outs[1] == outs[0]


def test_jobs_really_run_in_worker_processes(tmp_path):
    log = tmp_path / "pids"

    def check(res, launch):
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        return True, "ok"

    explore(TE.flag_launch(), 5, check=check, jobs=2)
    pids = log.read_text().split()
    assert len(pids) == 5 and pids[0] == str(os.getpid())                 # schedule 0 runs here
    assert str(os.getpid()) not in pids[1:] and len(set(pids[1:])) >= 1
