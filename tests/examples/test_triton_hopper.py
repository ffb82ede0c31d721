"""Real Triton output for Hopper, executed: ``tests/fixtures/triton/matmul_128x128x64.sm_90a.ptx`` and
``matmul_tma_host_desc.sm_90a.ptx`` (Triton 3.9.0, ``gen_triton_ptx.py``: ``tl.dot`` lowered to
``wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16``, four per 64-wide K block, with ``wgmma.fence`` /
``commit_group`` / ``wait_group``), launched the way Triton's launcher does (``tests/fixtures/triton/
sm90a_launches.py``), bit-identical to the H100 wgmma numerics oracle chained over K and within a float64 bound of
numpy's product, with zero race-detector findings, timing off and on.  (The same launches are the ``tcsim diff``
launch files ``launch_matmul_sm90a.py`` / ``launch_tma_matmul_sm90a.py``; their H100 goldens are replayed by
``tests/hw/test_wgmma_golden.py``.)"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tcsim.cli import main
from tcsim.launch import run_launch

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "triton"
_spec = importlib.util.spec_from_file_location("sm90a_launches", FIX / "sm90a_launches.py")
L = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(L)


@pytest.mark.parametrize("timing", [False, True])
def test_pointer_matmul(timing):
    launch = L.pointer_launch(128, 128, 160)           # K = 160: a masked last K block
    r = run_launch(launch, timing=timing)
    assert not r.findings, [f.message for f in r.findings]
    ok, msg = L.check(r, launch)
    assert ok, msg


def test_pointer_matmul_two_tiles():
    launch = L.pointer_launch(256, 128, 64, seed=5)
    r = run_launch(launch)
    ok, msg = L.check(r, launch)
    assert ok and not r.findings, msg


@pytest.mark.parametrize("timing", [False, True])
def test_tma_matmul(timing):
    launch = L.tma_launch(128, 128, 192)
    r = run_launch(launch, timing=timing)
    assert not r.findings, [f.message for f in r.findings]
    ok, msg = L.check(r, launch)
    assert ok, msg


def test_negative_control_swapped_operands():
    """The check can fail: B replaced by its transpose after the run."""
    launch = L.pointer_launch(128, 128, 128, seed=3)
    r = run_launch(launch)
    launch.args[1] = np.ascontiguousarray(launch.args[1].T)
    ok, msg = L.check(r, launch)
    assert not ok


def test_cli_check_passes():
    for f in ("matmul_128x128x64.sm_90a.ptx", "matmul_tma_host_desc.sm_90a.ptx"):
        assert main(["check", str(FIX / f)]) == 0


@pytest.mark.slow                 # two traced simulations per file: minutes
@pytest.mark.parametrize("name", ["launch_matmul_sm90a.py", "launch_tma_matmul_sm90a.py"])
def test_diff_launch_files_against_the_simulator(name, capsys):
    """The ``tcsim diff`` launch files run traced and compare clean against a second simulator run."""
    assert main(["diff", str(FIX / name), "--against", "sim:3"]) == 0
