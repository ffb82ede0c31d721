"""Exhaustive GPU check of tcsim's .approx models: every one of the 2**32 f32 inputs of every form, all f16/bf16
inputs, the x2 forms on all 2**32 pairs, div on 2**32 operand pairs, and the tables regenerated from the GPU equal
to the package data (calib/approx/verify.py; ~2 minutes on an H100).  Needs CuPy, nvcc and a Hopper GPU."""
import json
import shutil

import pytest

from tcsim.numerics import approx as ap

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def _needs_gpu():
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
        cc = cp.cuda.Device(0).compute_capability
    except Exception:  # noqa: BLE001 - any failure means "no usable GPU here"
        pytest.skip("needs CuPy and a CUDA GPU")
    if cc != "90":
        pytest.skip(f"the models are of sm_90 (H100/H200); this GPU is sm_{cc}")
    if not shutil.which("nvcc"):
        pytest.skip("needs nvcc")


def test_exhaustive_bit_exact(tmp_path):
    _needs_gpu()
    from calib.approx import verify
    verify.main(["--out", str(tmp_path)])
    res = json.loads((tmp_path / "verify.json").read_text())
    for form, r in res["f32"].items():
        name = (form[:-4] if form.endswith("_ftz") else form) + "_approx"
        assert r["inputs"] == 1 << 32
        if ap.approx_exact(name):
            assert r["mismatches"] == 0, (form, r["first_mismatches"])
            assert r["numpy_vs_cupy_model_mismatches"] == 0, form
        else:
            assert r["exact_fraction"] > 0.8, (form, r["exact_fraction"])
    assert all(r.get("mismatches", r.get("mismatches_vs_per_half_table")) == 0 for r in res["half"].values())
    assert all(r["mismatches_vs_rcp_model"] == 0 for r in res["div"].values())
    assert all(res["regenerated_tables_equal_package_data"].values())
