"""The bug zoo (issue 15 item 7): every correct/buggy pair of ``tests/zoo/kernels`` (see :mod:`zoo`), on each of
its targets (sm_100a; sm_90a too where the class exists on Hopper), with timing off and on and scheduler seeds
None, 1, 2, in sanitizer mode (the default):

* the correct twin gives the output numpy computes from the inputs and no finding at all;
* the buggy twin gives a finding -- in ``Result.findings``, or in the ``findings`` of the FindingError /
  TcsimError that stopped the run -- whose class is the one its ``// expect:`` header names, whose ``lines``
  include the PTX lines of the header's side markers, and whose ``missing`` / ``fix`` / message names the edge
  (one of the header's ``missing=`` alternatives).

Also: the kernels on disk are what ``gen_zoo.py`` renders; each buggy twin differs from its correct twin in at most
two PTX lines; ptxas assembles every kernel for every target (skipped without ptxas).
"""
from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # noqa: E402

from tcsim.findings import CLASSES  # noqa: E402
from tcsim.launch import run_launch  # noqa: E402

PTXAS = shutil.which("ptxas")
TIMINGS = (False, True)
SEEDS = (None, 1, 2)

CASES = [pytest.param(p, t, id=f"{p.name}-{t}", marks=[pytest.mark.slow] if p.slow else [])
         for p in zoo.PAIRS for t in p.targets]
RUNS = [pytest.param(p, t, timing, seed, id=f"{p.name}-{t}-{'timed' if timing else 'untimed'}-seed{seed}",
                     marks=[pytest.mark.slow] if p.slow else [])
        for p in zoo.PAIRS for t in p.targets for timing in TIMINGS for seed in SEEDS]


def _text(pair, which, target):
    pc, pb = zoo.paths(pair)
    return zoo.retarget((pc if which == "correct" else pb).read_text(), target)


# ------------------------------------------------------------------------------------------- the zoo itself
def test_every_class_has_a_pair():
    assert {p.cls for p in zoo.PAIRS} >= set(range(1, 21))
    assert len({p.name for p in zoo.PAIRS}) == len(zoo.PAIRS)


@pytest.mark.parametrize("pair", zoo.PAIRS, ids=lambda p: p.name)
def test_files_are_rendered(pair):
    """The committed kernels are what gen_zoo.py writes (regenerate with ``python tests/zoo/gen_zoo.py``)."""
    correct, buggy = zoo.render(pair)
    pc, pb = zoo.paths(pair)
    assert pc.read_text() == correct, f"{pc.name} is stale: run python tests/zoo/gen_zoo.py"
    assert pb.read_text() == buggy, f"{pb.name} is stale: run python tests/zoo/gen_zoo.py"


@pytest.mark.parametrize("pair", zoo.PAIRS, ids=lambda p: p.name)
def test_buggy_is_a_minimal_edit(pair):
    """One or two PTX lines differ (comments aside); the header names the class and markers that exist."""
    pc, pb = zoo.paths(pair)
    code = [[ln for ln in p.read_text().split("\n") if not ln.startswith("//")] for p in (pc, pb)]
    changed = [d for d in difflib.unified_diff(code[0], code[1], n=0, lineterm="")
               if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    removed = sum(d.startswith("-") for d in changed)
    added = sum(d.startswith("+") for d in changed)
    assert 1 <= max(removed, added) <= 2, changed
    exp = zoo.expectation(pb.read_text())
    assert exp.cls == pair.cls and exp.cls in CLASSES
    assert list(exp.sides) == list(pair.sides)
    assert "why:" in pb.read_text() and "PTX ISA" in pb.read_text()


# ------------------------------------------------------------------------------------------------ ptxas
@pytest.fixture(scope="module")
def ptxas_results():
    if PTXAS is None:
        pytest.skip("ptxas not on PATH")
    tmp = Path(tempfile.mkdtemp(prefix="zoo_ptxas_"))
    jobs = []
    for p in zoo.PAIRS:
        for t in p.targets:
            for which in ("correct", "buggy"):
                f = tmp / f"{p.name}.{which}.{t}.ptx"
                f.write_text(_text(p, which, t))
                jobs.append(((p.name, t, which), f, t))

    def one(job):
        key, f, t = job
        r = subprocess.run([PTXAS, f"-arch={t}", str(f), "-o", os.devnull], capture_output=True, text=True,
                           timeout=120)
        return key, (r.returncode, (r.stdout + r.stderr).strip())

    with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
        out = dict(pool.map(one, jobs))
    shutil.rmtree(tmp, ignore_errors=True)
    return out


@pytest.mark.parametrize("pair,target", CASES)
def test_ptxas_assembles(ptxas_results, pair, target):
    for which in ("correct", "buggy"):
        rc, msg = ptxas_results[(pair.name, target, which)]
        assert rc == 0, f"ptxas -arch={target} rejects {pair.name}.{which}: {msg}"


# ---------------------------------------------------------------------------------------------- the runs
@pytest.mark.parametrize("pair,target,timing,seed", RUNS)
def test_correct_twin_is_clean(pair, target, timing, seed):
    launch, want = zoo.make_launch(pair, _text(pair, "correct", target))
    result = run_launch(launch, seed=seed, timing=timing)
    assert result.findings == [], "\n".join(f.format() for f in result.findings)
    for i, w in want.items():
        got = result.outputs[i]
        assert got.shape == w.shape and np.array_equal(got, w), \
            f"output {i} differs from numpy at {np.argwhere(got != w)[:5].tolist()}"


@pytest.mark.parametrize("pair,target,timing,seed", RUNS)
def test_buggy_twin_is_reported(pair, target, timing, seed):
    exp, findings, stop = zoo.run_buggy(pair, target, timing, seed)
    if not any(zoo.matches(f, exp) for f in findings):
        got = "\n".join(f.format() for f in findings) or "no findings"
        stopped = f"\nthe run stopped with: {stop}" if stop is not None else ""
        pytest.fail(f"{pair.name} on {target}: expected a class {exp.cls} finding on lines "
                    f"{sorted(exp.sides.values())} naming one of {exp.missing}; got:\n{got}{stopped}")
