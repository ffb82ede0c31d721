"""The shipped examples: each passes its own numpy check, is schedule-independent (identical results under
several scheduler seeds, DESIGN.md principle 5), runs through ``tcsim run``; plus negative controls showing
the checks are not vacuous (a missing swizzle XOR, a consumer that skips its mbarrier wait).  The two sm_90a GEMMs'
checks compute their expected D with tcsim's numerics model; for the launches run here that D, and the simulated
one, must equal the D an H100 produced (tests/golden/mma_gemm_*, tma_mma_gemm_*, recorded by
``python -m calib.golden regen``), so the checks are backed by hardware, not only by the model under test."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from calib.golden import GOLDEN_ROOT, load_case
from kernel_checks import oracle_replay
from tcsim.isa.errors import TcsimError
from tcsim.cli import main
from tcsim.launch import Launch, run_launch

import tcsim.examples.bulk_pipeline as bulk_pipeline
import tcsim.examples.mma_gemm as mma_gemm
import tcsim.examples.tma_mma_gemm as tma_mma_gemm

ROOT = Path(__file__).resolve().parents[2]
SCHED_SEEDS = (0, 1, 2)
PTXAS = shutil.which("ptxas")


def _run_checked(mod, launch, seed=None):
    result = run_launch(launch, seed=seed)
    with oracle_replay.numerics_backed_by_data():      # the check's numerics, checked against the records
        ok, msg = mod.check(result, launch)
    assert ok, msg
    return result


def _outputs_identical(mod, launch):
    """Run under every scheduler seed; all pass the check and produce byte-identical outputs."""
    runs = [_run_checked(mod, launch, seed=s) for s in SCHED_SEEDS]
    for r in runs[1:]:
        for a, b in zip(runs[0].outputs, r.outputs):
            if a is not None:
                assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
    return runs


def _with_ptx(launch: Launch, text: str) -> Launch:
    return Launch(ptx=text, kernel=launch.kernel, grid=launch.grid, block=launch.block, cluster=launch.cluster,
                  dynamic_smem=launch.dynamic_smem, args=launch.args, name="mutated")


def _ptxas_ok(tmp_path, text, name):
    if PTXAS is None:
        return
    p = tmp_path / name
    p.write_text(text)
    r = subprocess.run([PTXAS, "-arch=sm_90a", str(p), "-o", "/dev/null"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr


def _h100(case: str, key: str) -> np.ndarray:
    """The D an H100 produced for a golden case (its inputs are checked fresh by tests/hw/test_golden_replay.py)."""
    _, outs = load_case(GOLDEN_ROOT / case)
    return outs[key].view(np.uint32)


# ------------------------------------------------------------------------------------------------ mma_gemm
@pytest.mark.parametrize("beta", [0, 1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mma_gemm_matches_model_and_h100(beta, seed):
    launch = mma_gemm.make_launch(beta=beta, seed=seed)
    result = _run_checked(mma_gemm, launch)
    want = _h100(f"mma_gemm_beta{beta}_seed{seed}", "arg3")
    assert np.array_equal(result.outputs[3].view(np.uint32), want)
    assert np.array_equal(mma_gemm.reference(launch).view(np.uint32), want)     # the check's expected D


@pytest.mark.parametrize("beta", [0, 1])
def test_mma_gemm_schedule_independent(beta):
    _outputs_identical(mma_gemm, mma_gemm.make_launch(beta=beta, seed=3))


def test_mma_gemm_beta_selects_c():
    r0 = run_launch(mma_gemm.make_launch(beta=0, seed=5)).outputs[3]
    r1 = run_launch(mma_gemm.make_launch(beta=1, seed=5)).outputs[3]
    assert not np.array_equal(r0, r1)


# ------------------------------------------------------------------------------------------- tma_mma_gemm
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tma_mma_gemm_matches_model_and_h100(seed):
    launch = tma_mma_gemm.make_launch(seed=seed)
    result = _run_checked(tma_mma_gemm, launch)
    want = _h100(f"tma_mma_gemm_seed{seed}", "arg2")
    assert np.array_equal(result.outputs[2].view(np.uint32), want)
    assert np.array_equal(tma_mma_gemm.reference(launch).view(np.uint32), want)  # the check's expected D


def test_tma_mma_gemm_schedule_independent():
    _outputs_identical(tma_mma_gemm, tma_mma_gemm.make_launch(seed=4))


def test_tma_mma_gemm_reference_is_the_k_chain():
    """The chained-k16 reference agrees with the float64 product closely and is not all zeros."""
    launch = tma_mma_gemm.make_launch(seed=1)
    a, bt = tma_mma_gemm.operands(launch)
    want = tma_mma_gemm.reference(launch)
    assert np.abs(want).max() > 1.0
    assert np.allclose(want, a.astype(np.float64) @ bt.astype(np.float64).T, atol=1e-3)


def test_tma_mma_gemm_without_swizzle_xor_is_wrong(tmp_path):
    """Negative control: dropping the 128B-swizzle XOR from the ldmatrix addresses reads the wrong chunks."""
    text = tma_mma_gemm.PTX.read_text()
    pattern = re.compile(r"^\s*xor\.b32\s+%r2[23], %r2[23], %r9;\n", flags=re.M)
    broken, n = pattern.subn("", text)
    assert n == 2
    _ptxas_ok(tmp_path, broken, "tma_mma_gemm_noswizzle.ptx")
    launch = tma_mma_gemm.make_launch(seed=0)
    ok, msg = tma_mma_gemm.check(run_launch(_with_ptx(launch, broken)), launch)
    assert not ok and "differ" in msg


# ------------------------------------------------------------------------------------------ bulk_pipeline
def test_bulk_pipeline_default():
    launch = bulk_pipeline.make_launch()
    assert launch.args[2] == 12 and launch.args[3] == 1024       # 12 chunks > 3 stages: 4 laps
    _run_checked(bulk_pipeline, launch)


@pytest.mark.parametrize("chunks,chunk_bytes", [(0, 64), (1, 16), (2, 48), (3, 128), (7, 80), (13, 2048),
                                                (25, 32)])
def test_bulk_pipeline_variants(chunks, chunk_bytes):
    _run_checked(bulk_pipeline, bulk_pipeline.make_launch(chunks=chunks, chunk_bytes=chunk_bytes, seed=chunks))


def test_bulk_pipeline_schedule_independent():
    _outputs_identical(bulk_pipeline, bulk_pipeline.make_launch(chunks=10, chunk_bytes=256, seed=9))


def test_bulk_pipeline_rejects_bad_chunk_size():
    with pytest.raises(TcsimError):
        bulk_pipeline.make_launch(chunks=4, chunk_bytes=20)


def _skip_consumer_wait(text: str) -> str:
    broken, n = re.subn(r"// CONSUMER-WAIT-BEGIN\n.*?// CONSUMER-WAIT-END\n", "// (wait on full[s] removed)\n",
                        text, flags=re.S)
    assert n == 1
    return broken


@pytest.mark.parametrize("seed", SCHED_SEEDS)
def test_bulk_pipeline_consumer_without_wait_is_caught(seed, tmp_path):
    """The consumer reads its stage without waiting on full[s]: the bulk copies complete asynchronously (TMA
    latency), so the simulator must either report a diagnostic or produce wrong output -- never the right
    answer by accident."""
    broken = _skip_consumer_wait(bulk_pipeline.PTX.read_text())
    assert "try_wait.parity.shared::cta.b64 \t%p8" not in broken
    _ptxas_ok(tmp_path, broken, "bulk_pipeline_nowait.ptx")
    launch = bulk_pipeline.make_launch(chunks=12, chunk_bytes=256, seed=seed)
    try:
        result = run_launch(_with_ptx(launch, broken), seed=seed)
    except TcsimError:
        return                                                     # diagnosed
    ok, msg = bulk_pipeline.check(result, launch)
    assert not ok, "consumer without the full[s] wait still produced the right output"
    assert "differ" in msg


# --------------------------------------------------------------------------------------------- tcsim run
@pytest.mark.parametrize("name", ["tma_mma_gemm", "bulk_pipeline"])
def test_tcsim_run_example_file(name, capsys):
    assert main(["run", str(ROOT / "examples" / f"{name}.py"), "--seed", "1"]) == 0
    assert "PASS" in capsys.readouterr().out


def test_tcsim_run_mma_gemm_file(capsys):
    assert main(["run", str(ROOT / "examples" / "mma_gemm.py")]) == 0
    assert "PASS" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["mma_gemm", "tma_mma_gemm", "bulk_pipeline"])
def test_python_m_example(name, capsys):
    mod = {"mma_gemm": mma_gemm, "tma_mma_gemm": tma_mma_gemm, "bulk_pipeline": bulk_pipeline}[name]
    from tcsim.examples._common import example_main
    assert example_main(mod, ["--seed", "2"]) == 0
    assert "PASS" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["tma_mma_gemm", "bulk_pipeline"])
def test_tcsim_check_examples(name, capsys):
    assert main(["check", str(ROOT / "examples" / f"{name}.ptx")]) == 0


# ----------------------------------------------------------------------------------------- the real GPU
_GPU_CASES = [
    ("mma_gemm", lambda: mma_gemm.make_launch(beta=1, seed=0)),
    ("tma_mma_gemm", lambda: tma_mma_gemm.make_launch(seed=0)),
    ("bulk_pipeline", lambda: bulk_pipeline.make_launch(chunks=12, chunk_bytes=1024, seed=0)),
]


@pytest.mark.gpu
@pytest.mark.parametrize("name,make", _GPU_CASES)
def test_example_matches_gpu(name, make):
    """Same launch on the GPU back end: passes the example's check and is byte-identical to the simulator."""
    hw = pytest.importorskip("tcsim.hw.launcher")
    ok, why = hw.gpu_available()
    if not ok:
        pytest.skip(why)
    mod = {"mma_gemm": mma_gemm, "tma_mma_gemm": tma_mma_gemm, "bulk_pipeline": bulk_pipeline}[name]
    launch = make()
    gpu = hw.run_on_gpu(launch)
    assert gpu.ok, f"{gpu.error}: {gpu.error_detail}"
    ok, msg = mod.check(gpu, launch)
    assert ok, msg
    sim = run_launch(launch, seed=1)
    for a, b in zip(sim.outputs, gpu.outputs):
        if a is not None:
            assert np.array_equal(a.view(np.uint8), np.asarray(b).view(np.uint8))
