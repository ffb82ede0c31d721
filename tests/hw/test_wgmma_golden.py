"""H100 truth for wgmma, replayed without a GPU: traced runs of the pipelined TMA + wgmma example and of Triton's
sm_90a pointer matmul recorded on an H100 with ``tcsim diff ... --against gpu --save`` (commands in
``tests/hw/golden_h100/README.md``); the simulator's traced run must be bit-identical to them (outputs and every
compared trace value), and the GPU's outputs must pass the launches' own checks (the wgmma numerics oracle).
The output-only goldens of the example (``tests/golden/wgmma_pipeline_gemm_seed*``, ``calib.golden``) are replayed
by ``tests/hw/test_golden_replay.py``."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import tcsim.examples.wgmma_pipeline_gemm as example
from tcsim.hw.diff import diff_runs
from tcsim.hw.trace import TracedRun, run_traced

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "hw" / "golden_h100"
FIX = ROOT / "tests" / "fixtures" / "triton"


def _launches():
    spec = importlib.util.spec_from_file_location("sm90a_launches", FIX / "sm90a_launches.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


CASES = {
    "wgmma_pipeline_gemm": (lambda: example.make_launch(seed=0), example.check),
    "triton_matmul_sm90a": (lambda: _launches().pointer_launch(seed=0), lambda r, l: _launches().check(r, l)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_simulator_matches_h100_golden(name):
    make, check = CASES[name]
    gold = TracedRun.load(GOLDEN / f"{name}.npz")
    launch = make()
    sim = run_traced(launch, ring_records=gold.layout.ring_records)
    if sim.layout.fingerprint != gold.layout.fingerprint:
        pytest.skip(f"{name}: the instrumented PTX changed since the H100 golden was recorded; regenerate it "
                    f"(tests/hw/golden_h100/README.md)")
    assert gold.device.startswith("NVIDIA H100")
    ok, msg = check(gold, launch)
    assert ok, msg
    rep = diff_runs(sim, gold)
    assert rep.identical, rep.format()
