"""Campaign runners over independent simulator cases in worker processes (calib.pipeline.run_all(...,
processes=True), ``python -m calib.golden replay --jobs J``; tcsim.parallel.fork_map): results in item order, the
same as one process gives, and really computed in other processes."""
from __future__ import annotations

import os

from calib import golden as G
from calib import pipeline as P
from tcsim.parallel import fork_map


def test_run_all_processes_keeps_order_and_forks():
    offset = 7                                   # a closure: it reaches the workers by fork, not by pickling
    got = P.run_all([3, 1, 2, 5], lambda x: (x * 10 + offset, os.getpid()), jobs=2, processes=True)
    assert [v for v, _ in got] == [37, 17, 27, 57]
    assert os.getpid() not in {pid for _, pid in got}
    assert list(fork_map(lambda x: x + offset, [1, 2], jobs=1)) == [8, 9]      # jobs 1: this process


def test_golden_replay_jobs_prints_what_one_process_prints(capsys):
    cases = ["--case", "bulk_pipeline_1x16", "--case", "bulk_pipeline_0x64", "--case", "bulk_pipeline_3x128"]
    assert G.main(["replay", *cases]) == 0
    one = capsys.readouterr().out
    assert G.main(["replay", *cases, "--jobs", "2"]) == 0
    assert capsys.readouterr().out == one and one.count("bit-identical") == 3
