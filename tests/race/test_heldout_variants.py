"""The eight kernels of issue 15 that used to run clean, in a second, differently-shaped variant each
(tests/race/heldout_variants.py): under timing off and on and scheduler seeds None/1/2, the correct twin gives the
numpy result and no finding; the buggy twin gives a finding that names the bug -- its class, the PTX lines of both
sides, the missing edge -- and the same diagnosis (class, lines, missing edge) in every mode."""
from __future__ import annotations

import difflib

import numpy as np
import pytest

from tcsim.isa.errors import TcsimError
from tcsim.launch import Launch, run_launch
from tests.race.hb_common import MODES
from tests.race.heldout_variants import VARIANTS, lines

CASES = [pytest.param(v, t, id=f"{v.name}-{t}") for v in VARIANTS for t in v.targets]
#: CI runs sm_100a with timing off and on (seed None); the whole matrix -- every target, seeds None/1/2 -- is slow
QUICK = [(False, None), (True, None)]
RUNS = [pytest.param(v, t, modes, id=f"{v.name}-{t}-{'all-modes' if full else 'quick'}",
                     marks=[pytest.mark.slow] if full else [])
        for v in VARIANTS for t in v.targets for full, modes in ((False, QUICK), (True, MODES))
        if full or t == "sm_100a"]


def _retarget(text, target):
    return text.replace(".target sm_100a", f".target {target}", 1)


def _run(v, ptx, timing, seed):
    args = v.args()
    launch = Launch(ptx=ptx, args=args, name=v.name, **v.launch)
    try:
        return args, run_launch(launch, timing=timing, seed=seed), None
    except TcsimError as e:
        return args, None, e


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.name)
def test_buggy_twin_is_a_minimal_edit(v):
    a = [ln for ln in v.correct.splitlines()]
    b = [ln for ln in v.buggy().splitlines()]
    changed = [d for d in difflib.unified_diff(a, b, n=0, lineterm="") if d[:1] in "+-"
               and not d.startswith(("+++", "---"))]
    assert 1 <= max(sum(d.startswith("-") for d in changed), sum(d.startswith("+") for d in changed)) <= 2, changed


@pytest.mark.parametrize("v,target,modes", RUNS)
def test_correct_twin_is_clean(v, target, modes):
    ptx = _retarget(v.correct, target)
    for timing, seed in modes:
        args, res, err = _run(v, ptx, timing, seed)
        assert err is None, f"{(timing, seed)}: {err}"
        assert not res.findings, f"{(timing, seed)}: " + "\n".join(f.format() for f in res.findings)
        for i, w in v.want(args).items():
            got = res.outputs[i]
            assert np.array_equal(got.reshape(w.shape), w), f"{(timing, seed)}: output {i} differs"


@pytest.mark.parametrize("v,target,modes", RUNS)
def test_buggy_twin_names_the_bug_the_same_way_in_every_mode(v, target, modes):
    ptx = _retarget(v.buggy(), target)
    want_lines = lines(ptx, v.sides)
    diagnoses = {}
    for timing, seed in modes:
        _, res, err = _run(v, ptx, timing, seed)
        findings = list(res.findings) if res is not None else list(getattr(err, "findings", None) or [])
        hits = [f for f in findings if f.cls == v.cls and want_lines <= set(f.lines)
                and v.missing in " ".join(x for x in (f.missing, f.fix) if x)]
        assert hits, (f"{(timing, seed)}: no class {v.cls} finding on lines {sorted(want_lines)} naming "
                      f"{v.missing!r}; got:\n" + ("\n".join(f.format() for f in findings) or f"nothing ({err})"))
        assert all(f.severity == ("lint" if v.lint else "error") for f in hits), [f.format() for f in hits]
        diagnoses[(timing, seed)] = sorted((f.cls, tuple(sorted(f.lines)), f.missing) for f in hits)
    first = next(iter(diagnoses.values()))
    assert all(d == first for d in diagnoses.values()), diagnoses


@pytest.mark.parametrize("v,target", CASES)
def test_ptxas_assembles_both_twins(v, target, tmp_path):
    import os
    import shutil
    import subprocess
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not on PATH")
    for which, text in (("correct", v.correct), ("buggy", v.buggy())):
        f = tmp_path / f"{v.name}.{which}.ptx"
        f.write_text(_retarget(text, target))
        r = subprocess.run([ptxas, f"-arch={target}", str(f), "-o", os.devnull], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, f"ptxas -arch={target} rejects {v.name}.{which}: {r.stdout}{r.stderr}"
