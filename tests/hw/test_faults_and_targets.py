"""Faulting kernels on both back ends; targets the GPU cannot run; the launcher's isolation."""
import json
from pathlib import Path

import numpy as np
import pytest

from calib import faults
from calib.pipeline import current_command
from tcsim.hw.launcher import GpuUnavailable, check_target, gpu_available, target_capability
from tcsim.isa.errors import VerifyError
from tcsim.launch import Launch, run_launch

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "faults.json"
EXPECTED_SIM = {
    "trap": ("TrapError", "the kernel executed trap"),
    "misaligned_global": ("MemoryFault", "misaligned global access of 4 bytes"),
    "out_of_bounds_global": ("MemoryFault", "out-of-bounds global write of 4 bytes"),
    # a class-18 finding (a FindingError that is also a MemoryFault); with both the address and the size wrong the
    # H100 reports the misaligned address, and so does tcsim (issue 15)
    # (the shared address counts from the window start: user bytes begin at 0x400, tests/hw/golden_h100/
    # address_layout.json)
    "misaligned_bulk_copy": ("MisalignedOperand", "cp.async.bulk destination [dstMem] = 0x408 (lane 0) is not "
                                                  "16-byte aligned"),
}


@pytest.mark.parametrize("case", sorted(faults.CASES))
def test_simulator_diagnoses_each_fault(case):
    kind, msg = faults.simulate(faults.make_launch(case))
    want_kind, needle = EXPECTED_SIM[case]
    assert kind == want_kind and needle in msg
    assert f"fault:{case}:" in msg and "warp 0" in msg


def test_immediate_bulk_size_rejected_at_decode_like_ptxas():
    text = faults.CASES["misaligned_bulk_copy"].replace("], %r3, [bar]", "], 24, [bar]")
    with pytest.raises(VerifyError, match="size 24 is not a multiple of 16"):
        run_launch(Launch(ptx=text, kernel="fault", args=[np.zeros(64, np.uint32)]))


def test_target_rules():
    assert target_capability("sm_100a") == (10, 0, "a") and target_capability("sm_90a") == (9, 0, "a")
    check_target("sm_90a", (9, 0), "NVIDIA H100")
    check_target("sm_80", (9, 0), "NVIDIA H100")
    with pytest.raises(GpuUnavailable) as e:
        check_target("sm_100a", (9, 0), "NVIDIA H100 80GB HBM3")
    assert str(e.value) == ("the PTX targets sm_100a, which needs an sm_100 GPU; this GPU (NVIDIA H100 80GB HBM3) "
                            "is sm_90")
    with pytest.raises(GpuUnavailable, match="newer than this GPU"):
        check_target("sm_120", (9, 0), "NVIDIA H100")


def test_recorded_gpu_faults_match_simulator_diagnoses():
    assert GOLDEN.exists(), "tests/golden/faults.json is missing (python -m calib.faults --out tests/golden/faults.json on a GPU)"
    rec = json.loads(GOLDEN.read_text())
    assert current_command(rec["meta"]["command"]).startswith("python -m calib.faults")   # recorded as hw.faults
    for case, row in rec["cases"].items():
        kind, _, gpu_kind = faults.simulate(faults.make_launch(case), with_gpu_kind=True)
        assert kind == row["sim_kind"] == EXPECTED_SIM[case][0]
        assert row["gpu_error"] and row["gpu_error"].startswith("CUDA_ERROR_"), (case, row)
        # matched by kind (issue 22): the simulator names the fault the GPU gave
        assert gpu_kind == row["gpu_error"], (case, gpu_kind, row["gpu_error"])


@pytest.fixture(scope="module")
def gpu():
    ok, why = gpu_available()
    if not ok:
        pytest.skip(why)
    return why


@pytest.mark.gpu
def test_gpu_faults_are_reported_and_process_survives(gpu):
    for case in faults.CASES:
        r = faults.fault_report(faults.make_launch(case), case)
        assert r.gpu_error and r.gpu_error.startswith("CUDA_ERROR_"), r
        assert r.sim_kind == EXPECTED_SIM[case][0]
    # this process keeps working: a good launch after four faulting ones
    from tcsim.examples import mma_gemm
    from tcsim.hw.launcher import run_on_gpu
    launch = mma_gemm.make_launch()
    res = run_on_gpu(launch)
    assert res.ok and mma_gemm.check(res, launch)[0]


@pytest.mark.gpu
def test_tcgen05_kernel_needs_sm100a(gpu):
    from tcsim.hw.launcher import run_on_gpu, probe
    if tuple(probe()["cc"]) == (10, 0):
        pytest.skip("a Blackwell GPU: the tcgen05 path runs for real")
    ptx = ROOT / "tests" / "fixtures" / "nvcc" / "tcgen05_mma.sm_100a.ptx"
    with pytest.raises(GpuUnavailable, match=r"targets sm_100a, which needs an sm_100 GPU"):
        run_on_gpu(Launch(ptx=ptx, args=[]))
