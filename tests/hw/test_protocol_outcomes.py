"""Protocol violations end on tcsim the way they end on an H100 (issue 15, item 6).

The golden file ``tests/hw/golden_h100/protocol_outcomes.json`` holds what an H100 did with each probe kernel of
``calib/probes/protocol/`` (recorded by ``bash calib/probes/protocol_device_run.sh``, installed by
``python -m calib.probes.protocol_outcomes install``): ``completes`` (with its outputs), ``trap`` (the CUDA error,
and the PTX line compute-sanitizer memcheck placed it at) or ``hang`` (no result within the time limit).

Every probe runs on tcsim with timing off and on, and tcsim must end it the same way:

* ``trap``: the run raises :class:`tcsim.findings.FindingError` whose finding's outcome is ``'trap'`` -- or a
  :class:`tcsim.isa.errors.MemoryFault` where the GPU reported ``CUDA_ERROR_MISALIGNED_ADDRESS`` -- located at the
  line memcheck named (when it named one);
* ``hang``: a FindingError with outcome ``'hang'`` or a :class:`tcsim.isa.errors.DeadlockError`;
* ``completes``: the run completes, with the same ``out`` as the GPU (probes whose outputs depend on the schedule
  are marked ``outputs_compared: false`` in the record and only have to complete).

A probe whose H100 outcome depended on timing (it ended differently under memcheck, which slows the kernel) may
end either way (``calib.probes.protocol_outcomes.hardware_outcomes``).

The ``gpu`` test reruns every probe on a GPU when one is present (and skips cleanly without).
"""
from __future__ import annotations

import numpy as np
import pytest

from calib.probes import protocol_outcomes as P

GOLDEN = P.load_golden() if P.GOLDEN.is_file() else None
ROWS = GOLDEN["probes"] if GOLDEN else {}
NAMES = sorted(P.PROBES)
needs_golden = pytest.mark.skipif(GOLDEN is None, reason=f"{P.GOLDEN} is missing")


# ------------------------------------------------------------------------------------------------ the record
@needs_golden
def test_record_provenance_and_coverage():
    meta = GOLDEN["meta"]
    assert "H100" in meta["gpu"] and meta["compute_capability"] == "9.0"
    assert meta["driver_version"] and meta["date"] and meta["compute_sanitizer"]
    assert meta["command"].startswith("python -m calib.probes.protocol_outcomes record")
    assert set(ROWS) == set(P.PROBES), "the record must cover exactly the probe list (re-record after a change)"
    for name, row in ROWS.items():
        assert row["outcome"] in (P.COMPLETES, P.TRAP, P.HANG), (name, row["outcome"])
        assert (row["outcome"] == P.COMPLETES) == ("outputs" in row), name
        if row["outcome"] == P.TRAP:
            assert row["cuda_error"].startswith("CUDA_ERROR_"), name


@needs_golden
@pytest.mark.parametrize("name", NAMES)
def test_record_is_of_todays_kernel(name):
    """A probe edited since the record is stale: re-record it, never compare."""
    assert ROWS[name]["ptx_sha256"] == P.ptx_digest(name), (
        f"{P.probe_path(name)} changed since the H100 record: re-run bash calib/probes/protocol_device_run.sh")


# ------------------------------------------------------------------------------------------------ tcsim
def _check_against(name: str, row: dict, got: dict, where: str) -> None:
    allowed = P.hardware_outcomes(name, row)
    hw = "/".join(sorted(allowed))
    detail = f"{name} [{where}]: the H100 says {hw} ({row.get('cuda_error') or 'no CUDA error'}), tcsim " \
             f"ended with {got['outcome']} ({got['error']}): {got['message'][:600]}"
    assert got["outcome"] in allowed, detail
    if got["outcome"] == P.TRAP:
        if got["error"] == "MemoryFault":
            assert row.get("cuda_error") == "CUDA_ERROR_MISALIGNED_ADDRESS", \
                f"{detail}\n(a MemoryFault stands for an alignment trap only)"
        else:
            assert got["error"] == "FindingError" and got["finding"].outcome == P.TRAP, detail
        line = (row.get("memcheck") or {}).get("line")
        if line is not None:
            assert got["line"] == line, f"{detail}\nmemcheck places the error at line {line}, tcsim at {got['line']}"
    elif got["outcome"] == P.HANG:
        assert got["error"] == "DeadlockError" or got["finding"].outcome == P.HANG, detail
    elif row["outcome"] == P.COMPLETES and row["outputs_compared"]:
        want = np.array(row["outputs"], dtype=np.uint32)
        have = np.array(got["outputs"], dtype=np.uint32)
        bad = np.flatnonzero(want != have)
        assert not bad.size, (f"{name} [{where}]: out differs from the H100 at {bad.size} words, first out[{bad[0]}]"
                              f" = 0x{int(have[bad[0]]):x}, H100 0x{int(want[bad[0]]):x}")


@needs_golden
@pytest.mark.parametrize("timing", [False, True], ids=["timing_off", "timing_on"])
@pytest.mark.parametrize("name", NAMES)
def test_tcsim_ends_the_probe_as_the_h100_did(name, timing):
    _check_against(name, ROWS[name], P.sim_outcome(name, timing=timing), "timing on" if timing else "timing off")


# ------------------------------------------------------------------------------------------------ the harness
def test_lineinfo_names_each_instruction_by_its_own_line():
    """The .loc directives the GPU run adds name the probe file's own lines (so memcheck's lines are tcsim's)."""
    for name in ("tx_too_few_expect", "bulk_tensor_smem_not128", "stale_parity_consumer"):
        src = P.probe_text(name).splitlines()
        text = P.probe_text(name, lineinfo=True).splitlines()
        assert text[:3] == src[:3]
        seen = 0
        for i, ln in enumerate(text):
            if ln.strip().startswith(".loc 1 "):
                n = int(ln.split()[2])
                assert text[i + 1] == src[n - 1], (name, n)
                seen += 1
        body = [s for s in src if s.startswith("\t") and not s.strip().startswith((".", "//"))]
        assert seen == len(body), name
        P.make_launch(name, lineinfo=True).module()        # tcsim reads the .loc form too


def test_parse_memcheck_report():
    text = ("========= COMPUTE-SANITIZER\n========= Invalid __shared__ write of size 16 bytes\n"
            "=========     at probe+0x160 in bulk_smem_misaligned.ptx:33\n"
            "=========     by thread (0,0,0) in block (0,0,0)\n=========     Access to 0x408 is misaligned\n"
            "========= \n========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to \"unspecified launch "
            "failure\" on CUDA API call to cuCtxSynchronize.\n=========     Saved host backtrace\n"
            "========= Target application returned an error\n========= ERROR SUMMARY: 2 errors\n")
    got = P.parse_memcheck(text)
    assert got["line"] == 33 and got["error_count"] == 2
    assert got["errors"][0] == "Invalid __shared__ write of size 16 bytes"
    assert got["errors"][1].startswith("Program hit CUDA_ERROR_LAUNCH_FAILED") and len(got["errors"]) == 2
    clean = P.parse_memcheck("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n")
    assert clean == {"errors": [], "line": None, "error_count": 0}


def test_run_gpu_classifies_each_ending(monkeypatch):
    from calib.pipeline import Run

    cases = [(Run(False, error="TIMEOUT"), P.HANG), (Run(False, error="CUDA_ERROR_ILLEGAL_INSTRUCTION",
                                                            detail="kernel execution"), P.TRAP),
             (Run(True, outputs=[np.arange(3, dtype=np.uint32), None, None]), P.COMPLETES)]
    for run, want in cases:
        monkeypatch.setattr(P, "execute", lambda launch, backend, timeout, _r=run: _r)
        row = P.run_gpu("control_bulk_copy", timeout=1.0)
        assert row["outcome"] == want
        assert (row.get("outputs") == [0, 1, 2]) == (want == P.COMPLETES)


# ------------------------------------------------------------------------------------------------ the GPU
@pytest.fixture(scope="module")
def gpu():
    from tcsim.hw.launcher import gpu_available

    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    return why


@pytest.mark.gpu
@needs_golden
@pytest.mark.parametrize("name", NAMES)
def test_gpu_reproduces_the_record(gpu, name):
    if "sm_90" not in gpu:
        pytest.skip(f"the record is of an sm_90 GPU; this one is {gpu}")
    row = ROWS[name]
    got = P.run_gpu(name, timeout=float(GOLDEN["meta"]["hang_timeout_s"]))
    assert got["outcome"] in P.hardware_outcomes(name, row), (name, got)
    if got["outcome"] == P.TRAP and row["outcome"] == P.TRAP:
        assert got["cuda_error"] == row["cuda_error"], (name, got)
    if got["outcome"] == P.COMPLETES and row["outcome"] == P.COMPLETES and row["outputs_compared"]:
        assert got["outputs"] == row["outputs"], name
