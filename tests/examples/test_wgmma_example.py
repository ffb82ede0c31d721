"""The pipelined TMA + wgmma GEMM example (``examples/wgmma_pipeline_gemm.{ptx,py}``): passes its own bit-exact
check (the H100 wgmma model chained over K, plus a float64 bound), is schedule- and timing-independent with zero
race-detector findings, assembles with ptxas and passes ``tcsim check`` / ``tcsim run``; negative controls show
that the check and the detector can fail (a consumer that releases a stage one k-tile too early, a transposed
operand)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tcsim.examples.wgmma_pipeline_gemm as ex
from tcsim.cli import main
from tcsim.launch import Launch, run_launch

ROOT = Path(__file__).resolve().parents[2]
PTXAS = shutil.which("ptxas")


def _checked(launch, **kw):
    r = run_launch(launch, **kw)
    ok, msg = ex.check(r, launch)
    assert ok, msg
    assert not r.findings, [f.message for f in r.findings]
    return r


def test_default_matches_model():
    _checked(ex.make_launch(seed=0))


def test_two_cta_rows_and_longer_k():
    _checked(ex.make_launch(seed=1, m=128, n=128, k=448))


def test_schedule_and_timing_independent():
    launch = ex.make_launch(seed=2, m=64, n=128, k=256)
    outs = [_checked(launch, seed=s).outputs[2].copy() for s in (1, 2)]
    outs.append(_checked(launch, timing=True).outputs[2].copy())
    for o in outs[1:]:
        assert np.array_equal(o.view(np.uint32), outs[0].view(np.uint32))


def test_early_stage_release_is_found():
    """Waiting for wgmma groups one k-tile too late (wait_group 2) releases a stage the MMAs still read: the TMA
    refill then overwrites SMEM an MMA reads (found by the race detector)."""
    text = ex.PTX.read_text().replace("wgmma.wait_group.sync.aligned 1;", "wgmma.wait_group.sync.aligned 2;")
    base = ex.make_launch(seed=3, m=64, n=128, k=320)
    launch = Launch(ptx=text, kernel=ex.KERNEL, grid=base.grid, block=base.block, args=base.args, name="mutated")
    r = run_launch(launch)
    assert r.findings, "releasing a stage before its MMAs completed was not reported"
    assert {f.cls for f in r.findings} & {2, 5}


def test_check_catches_a_transposed_operand():
    launch = ex.make_launch(seed=4, m=64, n=128, k=128)
    r = run_launch(launch)
    a, bt = ex.operands(launch)
    launch.args[1] = np.ascontiguousarray(bt[:, ::-1])      # the check now sees a different B
    ok, msg = ex.check(r, launch)
    assert not ok and "differ" in msg


def test_ptxas_and_tcsim_check():
    if PTXAS is not None:
        r = subprocess.run([PTXAS, "-arch=sm_90a", str(ex.PTX), "-o", "/dev/null"], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
    assert main(["check", str(ex.PTX)]) == 0


def test_tcsim_run_example_file(capsys):
    assert main(["run", str(ROOT / "examples" / "wgmma_pipeline_gemm.py"), "--seed", "1"]) == 0
    assert "PASS" in capsys.readouterr().out


@pytest.mark.gpu
def test_example_matches_gpu():
    """Same launch on the H100: passes the check and is byte-identical to the simulator."""
    hw = pytest.importorskip("tcsim.hw.launcher")
    ok, why = hw.gpu_available()
    if not ok:
        pytest.skip(why)
    launch = ex.make_launch(seed=0)
    gpu = hw.run_on_gpu(launch)
    assert gpu.ok, f"{gpu.error}: {gpu.error_detail}"
    ok, msg = ex.check(gpu, launch)
    assert ok, msg
    sim = run_launch(ex.make_launch(seed=0))
    assert np.array_equal(sim.outputs[2].view(np.uint32), gpu.outputs[2].view(np.uint32))
