"""The run's hang detectors (issue 17: the loop monitor, tcsim.loop_watch, with its clock-wait skip; the livelock
detector, tcsim.watch, with its projected fingerprint) say nothing about the project's own kernels -- every shipped
example, the nvcc / Triton / CuTe DSL fixtures (the launches of tests/zoo/test_clean_corpus.py) and the correct twin
of every bug-zoo pair -- sampled as eagerly as they can be (a loop sample at every run-watch check, a livelock sample
every 64 warp-instructions per warp), on both tiers: no NonTerminatingLoopError, no LivelockError, no simulated time
skipped, and the outputs still pass their checks.  Slow (every kernel of the corpus, twice)."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import tcsim.loop_watch as lw
import tcsim.watch as watch
from tcsim.launch import run_launch

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
TIERS = ("reference", "fast")


def _module(folder: str, name: str):
    sys.path.insert(0, str(ROOT / "tests" / folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


corpus = _module("zoo", "test_clean_corpus")
zoo = _module("zoo", "zoo")


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    monkeypatch.setattr(lw, "LOOP_AFTER", 0.0)
    monkeypatch.setattr(lw, "LOOP_EVERY", 0.0)
    monkeypatch.setattr(lw, "MAX_SHARE", 0.0)
    monkeypatch.setattr(watch, "LIVELOCK_SAMPLE", 1 << 6)


def _run(launch, tier):
    r = run_launch(launch, tier=tier, detect=False, progress=False)
    assert r.simulation.time_skipped == 0, r.simulation.warnings
    # (the monitor did look, unless the run ended before the first run-watch check)
    assert r.simulation.watch.loops.samples > 0 or r.simulation.retired <= watch.CHECK_EVERY
    return r


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("name", corpus.EXAMPLES)
def test_example(name, tier):
    mod = importlib.import_module(f"tcsim.examples.{name}")
    launch = mod.make_launch()
    r = _run(launch, tier)
    if hasattr(mod, "check"):
        ok, msg = mod.check(r, launch)
        assert ok, msg


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("make,arch", corpus.NVCC_CASES, ids=[f"{f.__name__[6:]}-{a}" for f, a in corpus.NVCC_CASES])
def test_nvcc_fixture(make, arch, tier):
    _run(make(arch), tier)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("name", corpus.TRITON)
def test_triton_fixture(name, tier):
    _run(corpus._triton_launch(name), tier)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("pair,target", [pytest.param(p, t, id=f"{p.name}-{t}") for p in zoo.PAIRS for t in p.targets])
def test_zoo_correct_twin(pair, target, tier):
    pc, _ = zoo.paths(pair)
    launch, want = zoo.make_launch(pair, zoo.retarget(pc.read_text(), target))
    r = _run(launch, tier)
    for i, w in want.items():
        assert np.array_equal(r.outputs[i], w), f"output {i} differs from numpy"
