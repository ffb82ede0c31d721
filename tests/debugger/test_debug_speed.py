"""Responsiveness on the nvfp4 example (issue 20 acceptance): ``step`` and ``print`` under 100 ms, ``reverse-step``
under 1 s with ``tcsim debug``'s checkpoints -- benchmarks/bench_debugger.py's measurements, with its bounds.
Slow (a few runs of the nvfp4 GEMM) and load-sensitive: the worst step / print of a warm session is taken over
many samples, so a bound is missed only when the machine is far busier than a user's."""
from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_debugger", ROOT / "benchmarks" / "bench_debugger.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


@pytest.mark.slow
def test_step_and_print_answer_in_under_100_ms():
    sp = bench.step_and_print(30)
    assert statistics.median(sp["step"]) < bench.STEP_BOUND / 4 and max(sp["step"]) < bench.STEP_BOUND
    assert statistics.median(sp["print"]) < bench.PRINT_BOUND / 4 and max(sp["print"]) < bench.PRINT_BOUND


@pytest.mark.slow
def test_reverse_step_answers_in_under_1_s_with_checkpoints():
    times = bench.reverse_cli(4, 128)
    assert max(times) < bench.REVERSE_BOUND
