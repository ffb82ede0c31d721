"""Real-hardware truth on every CI run: each ``tests/golden/<case>/`` was recorded on a GPU by
``python -m calib.golden regen``; here its launch is rebuilt from ``meta.json``, simulated, and every output is
required to be bit-identical to the GPU's (``calib.golden.replay_case``).  No GPU is needed."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from calib.pipeline import current_command, current_name
from calib.golden import CASES, GOLDEN_ROOT, META, OUTPUTS, GoldenMismatch, golden_dirs, load_case, replay_case

DIRS = golden_dirs()
REQUIRED = ("case", "factory", "kwargs", "seed", "gpu", "driver_version", "compute_capability", "date", "command",
            "elapsed_ms", "ptx_sha256", "inputs_sha256", "outputs")


def test_every_registered_case_has_golden_data():
    assert {d.name for d in DIRS} == set(CASES), "run `python -m calib.golden regen` on a GPU for the missing cases"


@pytest.mark.parametrize("d", DIRS, ids=lambda d: d.name)
def test_replay_bit_identical(d):
    replay_case(d)


@pytest.mark.parametrize("d", DIRS, ids=lambda d: d.name)
def test_meta_records_provenance(d):
    meta = json.loads((d / META).read_text())
    missing = [k for k in REQUIRED if k not in meta]
    assert not missing
    assert meta["case"] == d.name
    # recorded under the names of the time (examples.*, hw.golden); read with today's
    assert current_name(meta["factory"]) == CASES[d.name].factory and meta["kwargs"] == CASES[d.name].kwargs
    assert current_command(meta["command"]).startswith("python -m calib.golden regen")
    assert "H100" in meta["gpu"] and meta["compute_capability"] == "9.0"
    assert [int(i) for i in meta["outputs"]] == list(CASES[d.name].outputs)


def test_golden_data_is_small():
    total = sum(p.stat().st_size for d in DIRS for p in d.iterdir())
    assert total < 256 * 1024, f"golden data is {total} bytes"


def _copy(d, tmp_path):
    dst = tmp_path / d.name
    shutil.copytree(d, dst)
    for p in dst.iterdir():
        p.chmod(0o644)
    return dst


def test_replay_catches_a_flipped_bit(tmp_path):
    """Negative control: one flipped bit in a stored GPU output is reported with its position."""
    d = _copy(GOLDEN_ROOT / "mma_gemm_beta1_seed0", tmp_path)
    meta, outs = load_case(d)
    key = next(iter(outs))
    outs[key] = outs[key].copy()
    outs[key].view(np.uint32)[3, 5] ^= 1
    np.savez_compressed(d / OUTPUTS, **outs)
    with pytest.raises(GoldenMismatch, match=r"differs from the .* in 1 of 128 elements; first at \[3, 5\]"):
        replay_case(d)


def test_replay_catches_changed_inputs(tmp_path):
    """A meta.json whose factory arguments no longer build the recorded inputs is refused, not compared."""
    d = _copy(GOLDEN_ROOT / "bulk_pipeline_7x80", tmp_path)
    meta = json.loads((d / META).read_text())
    meta["kwargs"]["seed"] += 1
    (d / META).write_text(json.dumps(meta))
    with pytest.raises(GoldenMismatch, match="input arrays it builds changed since the record was made"):
        replay_case(d)


def test_replay_catches_changed_ptx(tmp_path):
    d = _copy(GOLDEN_ROOT / "tma_mma_gemm_seed0", tmp_path)
    meta = json.loads((d / META).read_text())
    meta["ptx_sha256"] = "0" * 64
    (d / META).write_text(json.dumps(meta))
    with pytest.raises(GoldenMismatch, match="PTX .* changed"):
        replay_case(d)
