"""The mutation benchmark (benchmarks/bench_mutations.py, issue 22 item 5): small semantic bugs planted in numerics,
swizzle, descriptors, mbarrier, TMA and timing must each fail a fast (CI) test of behaviour.

Fast: every mutation still applies (its text occurs exactly once in its file -- a refactor that moves the code must
move the mutation too) and changes the code.  ``-m slow``: plants each one in a temporary copy of the repository and
runs its selection of the fast suite there; every mutation must be caught (a failing test that passes unmutated), by a
test of behaviour, not one that restates the mutated constant.  (tcgen05-f16-acc-bits is caught by
tests/numerics/test_mmasim_replay.py, issue 22 item 1's replay of mmasim's recorded bits, from another branch.)
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_mutations", ROOT / "benchmarks" / "bench_mutations.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_mutations"] = bench
_spec.loader.exec_module(bench)


def test_the_list_covers_every_area():
    assert {m.area for m in bench.MUTATIONS} >= {"numerics", "swizzle", "descriptors", "mbarrier", "TMA", "timing"}
    assert len({m.name for m in bench.MUTATIONS}) == len(bench.MUTATIONS)


@pytest.mark.parametrize("m", bench.MUTATIONS, ids=lambda m: m.name)
def test_mutation_applies(m):
    new = bench.check_applies(m)
    assert new != (ROOT / m.file).read_text()
    assert m.tests, f"{m.name}: no selection"


#: mutations the fast suite does not catch yet (each a gap in the suite, found by the benchmark): strict xfail, so a
#: test that closes the gap makes this XPASS and asks for the entry to go
NOT_CAUGHT: dict = {}


def _param(m):
    marks = [pytest.mark.xfail(strict=True, reason=NOT_CAUGHT[m.name])] if m.name in NOT_CAUGHT else []
    return pytest.param(m, marks=marks, id=m.name)


@pytest.mark.slow
@pytest.mark.parametrize("m", [_param(m) for m in bench.MUTATIONS])
def test_fast_suite_catches_mutation(m):
    (r,) = bench.run([m], timeout=900.0, log=lambda *_: None)
    assert r["caught"], f"{m.name} ({m.what}) is not caught by {r['tests']}: {r.get('verdict')}"
