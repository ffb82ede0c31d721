"""The fuzz generator's first 16 programs (the ones tests/hw/test_fuzz.py::test_programs_agree_with_the_gpu runs on
a GPU) against the H100's outputs recorded for them (tests/golden/fuzz_gpu16, calib/fuzz/seed_record.py): CI checks
the simulator on these without a GPU.  Every program must agree bit for bit except those in ``EXPLAINED``, each of
which the simulator must reproduce with its named ptxas behaviour (calib.fuzz.explain), checked under ``slow``."""
from __future__ import annotations

import pytest

from calib.fuzz.generator import generate
from calib.fuzz.runner import compare, run_sim
from calib.fuzz.seed_record import load_golden, ptx_digest

META, OUTS = load_golden()

#: seed -> why the H100 differs from the PTX semantics (a diagnosis the slow test re-derives bit for bit)
EXPLAINED = {5: "ptxas register hazard around an RS-form wgmma (calib.fuzz.explain.wgmma_hazards)"}


def test_golden_belongs_to_todays_generator():
    stale = [s for s, d in zip(META["seeds"], META["ptx_sha256"]) if ptx_digest(generate(s).render()) != d]
    assert not stale, f"the generator changed for seeds {stale}: re-record ({META['re_record']})"
    assert not any(META["gpu_errors"]), META["gpu_errors"]


@pytest.mark.parametrize("seed", [s if s < 8 else pytest.param(s, marks=pytest.mark.slow)
                                  for s in range(16) if s not in EXPLAINED])
def test_simulator_equals_the_h100(seed):
    p = generate(seed)
    sim = run_sim(p)
    assert sim.ok, sim.error
    m = compare(p, sim, type(sim)(output=OUTS[seed], error=None))
    assert m is None, m.detail


@pytest.mark.parametrize("seed", sorted(EXPLAINED))
def test_explained_seed_differs_from_plain_semantics(seed):
    p = generate(seed)
    sim = run_sim(p)
    assert sim.ok and sim.output != OUTS[seed], "now agrees: move it out of EXPLAINED"


@pytest.mark.slow
@pytest.mark.parametrize("seed", sorted(EXPLAINED))
def test_explained_seed_is_reproduced_by_its_diagnosis(seed):
    from calib.fuzz.explain import explain_program
    why = explain_program(generate(seed), OUTS[seed])
    assert why is not None and why.startswith("diagnosed:"), why
