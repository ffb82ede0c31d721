"""Integrity of the H100 timing golden data (``tests/golden/timing_h100``, recorded by
``bash calib/microbench_device_run.sh`` and installed with ``python -m calib.microbench install``).

The record must belong to the current kernels: every registered case is recorded, and the SHA-256 of its PTX
and of its input arrays matches what the case builds now -- changing a kernel (or its inputs) without
re-recording on the H100 fails here.  The stored statistics are recomputed from the stored raw clock64 samples,
the validation kernels were correct on the GPU, and the measured values have the structure physics demands (a
dependent chain of n instructions takes at least n cycles; the chain really compiled to one SASS instruction per
PTX step where the record carries SASS counts)."""
from __future__ import annotations

import numpy as np
import pytest

from calib.microbench import analysis as A
from calib.microbench import cases as C
from calib.microbench import record as R
from calib.microbench import run as RUN
from calib.pipeline import current_command

GOLDEN = R.GOLDEN
HAVE = (GOLDEN / R.META).exists() and (GOLDEN / R.DATA).exists()
pytestmark = pytest.mark.skipif(not HAVE, reason=f"{GOLDEN} does not exist yet: run bash "
                                "calib/microbench_device_run.sh $OUT on an H100, then python -m calib.microbench install")
META, ARRAYS = R.load(GOLDEN) if HAVE else ({"cases": {}}, {})


def test_provenance():
    assert META["backend"] == "gpu"
    assert "H100" in META["gpu"] and META["compute_capability"] == "9.0"
    assert META["driver_version"] and META["date"]
    assert current_command(META["command"]).startswith("python -m calib.microbench record")  # hw.microbench then
    assert META["reps"] == C.REPS and tuple(META["chain"]) == C.CHAIN
    for f in (R.META, R.DATA):
        assert (GOLDEN / f).stat().st_size < 2 << 20


def test_every_registered_case_is_recorded():
    assert sorted(META["cases"]) == sorted(C.CASES), "re-record after adding or removing a case"


@pytest.mark.parametrize("name", sorted(C.CASES))
def test_record_matches_the_current_kernel(name):
    e = META["cases"].get(name)
    assert e is not None, f"{name} is not recorded"
    case = C.CASES[name]
    launch = case.build()
    assert e["ptx_sha256"] == RUN.ptx_sha(case), (f"the PTX of {name} changed since the H100 record: re-record "
                                                "(bash calib/microbench_device_run.sh) and install")
    assert e["inputs_sha256"] == RUN.input_digests(case, launch), f"the inputs of {name} changed: re-record"
    assert e["status"] == "ok", (e["status"], e.get("detail"))


@pytest.mark.parametrize("name", sorted(n for n, c in C.CASES.items() if c.kind == "calibration"))
def test_calibration_statistics_recompute_from_the_raw_samples(name):
    e, case = META["cases"][name], C.CASES[name]
    raw = ARRAYS[name]
    assert list(raw.shape) == e["shape"] == list(case.build().args[0].shape)
    d = A.derive(case, raw, e.get("sass"))
    assert d["segments"] == e["segments"]
    assert d["values"] == pytest.approx(e["values"])
    med = [s["median"] for s in d["segments"]]
    if "latency" in d["values"]:
        n0, n1 = C.CHAIN
        assert med[0] >= n0 and med[1] >= n1 and d["values"]["latency"] >= 1
    if case.group == "dsmem":
        assert min(d["values"].values()) >= 1


@pytest.mark.parametrize("name", sorted(n for n, c in C.CASES.items() if c.kind == "validation"))
def test_validation_kernel_was_correct_on_the_gpu_and_cycles_recompute(name):
    e, case = META["cases"][name], C.CASES[name]
    assert e["correct"] and all(e["correct"]), e.get("check")
    launch = case.build()
    runs = [ARRAYS[f"{name}:run{r}"] for r in range(len(e["correct"]))]
    # stored clocks are relative to each CTA's first entry: CTA cycles = max exit
    got = [[int(x) for x in np.asarray(r).reshape(launch.grid[0], -1, 2)[:, :, 1].max(axis=1)] for r in runs]
    assert got == e["cta_cycles"]
    assert e["cycles"] > 0


@pytest.mark.parametrize("op", sorted(A.SASS_OF))
def test_alu_chains_reached_the_sass(op):
    """Every measured chain op is in the SASS (ptxas may fold two dependent adds into one IADD3, no more: the
    derived latency per SASS instruction says which)."""
    e = META["cases"][f"alu_{op.replace('.', '_')}"]
    if not e.get("sass"):
        pytest.skip("the record has no SASS counts (no ptxas/cuobjdump on the recording machine)")
    n = A.sass_count(e["sass"], A.SASS_OF[op])
    assert n >= sum(C.CHAIN) // 2, e["sass"]
    assert e["values"]["latency_per_sass_instruction"] >= 1


@pytest.mark.parametrize("name", sorted(n for n, c in C.CASES.items() if c.kind == "calibration"
                                        and c.group in ("alu", "smem", "gmem", "gmem_cold", "ldmatrix", "mma",
                                                        "dsmem", "loop")))
def test_every_timed_chain_was_in_its_timed_region(name):
    """The SASS between the clock reads of each segment holds at least one instruction per chain step: ptxas
    did not hoist a chain out of the rep loop nor merge it away (ALU pairs folded into one IADD3 excepted)."""
    e, case = META["cases"][name], C.CASES[name]
    if not e.get("sass_timed"):
        pytest.skip("the record has no SASS listing summary")
    lengths = C.MMA_TPUT if case.group == "mma" and case.params["chains"] > 1 else C.CHAIN
    per = case.params.get("chains", 1)
    if case.group == "loop":                                # >= one k-step body (5 LDSM + 8 HMMA) per k-tile
        lengths, per = C.KTILES, 13
    want = [n * per for n in lengths] * (3 if case.group == "dsmem" else 1)
    if case.group == "alu" and e["values"].get("sass_fold", 1) > 1:
        want = [w // e["values"]["sass_fold"] for w in want]
    got = e["sass_timed"][:len(want)]
    assert all(g >= w for g, w in zip(got, want)), (got, want)


def test_direct_params_are_sm90a_parameters_with_the_recorded_values(tmp_path):
    """``python -m calib.microbench params`` writes names sim/timing knows (a typo would raise KeyError there)."""
    from tcsim.timing.params import arch_config
    p = A.direct_params(META)
    f = tmp_path / "measured.json"
    f.write_text(__import__("json").dumps(p))
    cfg = arch_config("sm_90a", measured=f)
    assert cfg.mma_sync_latency == META["cases"]["mma_f16_latency"]["values"]["latency"] == 24
    assert cfg.smem_latency == round(META["cases"]["smem_conflict_1way"]["values"]["latency"], 2)
    assert cfg.param("l2_latency").kind == "M" and "gmem_chase_cg" in cfg.param("l2_latency").source
    assert cfg.mma_sync_interval == pytest.approx(META["cases"]["mma_f16_tput_1w"]["values"]["cycles_per_step"] / 8,
                                                  abs=0.01)
