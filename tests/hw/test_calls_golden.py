"""Device-function calls, assert and launch arguments against the GPU (issue 16 items 1 and 3): every case of
``calib.calls_golden`` recorded on an H100 (``tests/golden/calls_h100.json``, made by ``python -m calib.calls_golden
--out tests/golden/calls_h100.json`` on the GPU) is rebuilt and simulated here; outputs must be bit-identical, the
assertion lines identical, printf lines the same multiset, and a launch that failed on the GPU must fail here."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from calib.calls_golden import CASES, DEFAULT_OUT, build, decode_array
from calib.pipeline import current_command
from tcsim.isa.errors import TcsimError
from tcsim.launch import run_launch
from tcsim.linker import StackOverflow
from tcsim.semantics.calls import DeviceAssert

pytestmark = pytest.mark.skipif(not DEFAULT_OUT.exists(), reason="no GPU record yet: python -m calib.calls_golden "
                                                                 "--out tests/golden/calls_h100.json on a GPU")


def _record():
    return json.loads(DEFAULT_OUT.read_text())


def test_record_provenance():
    rec = _record()
    assert current_command(rec["meta"]["command"]).startswith("python -m calib.calls_golden")
    assert "H100" in rec["meta"]["gpu"] or "H200" in rec["meta"]["gpu"]
    assert set(rec["rows"]) == set(CASES)


def _same(got, want):
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    w = decode_array(want)
    g = np.asarray(got)
    assert g.dtype == w.dtype and g.shape == w.shape
    assert np.array_equal(g.view(np.uint8), w.view(np.uint8)), "not bit-identical"


@pytest.mark.parametrize("case", CASES)
def test_case_matches_the_gpu(case):
    row = _record()["rows"][case]
    launch, through = build(case)
    if row["error"] is not None:
        with pytest.raises(TcsimError) as ei:
            run_launch(launch)
        err = ei.value
        if row["error"] == "CUDA_ERROR_ASSERT":
            assert isinstance(err, DeviceAssert)
            assert [s.rstrip("\n") for s in err.stdout] == [s.rstrip("\n") for s in row["stdout"]]
        elif case == "deep_overflow":
            assert isinstance(err, StackOverflow)
        return
    assert case != "deep_overflow" or pytest.fail(f"the GPU ran {case} without an error: {row}")
    r = run_launch(launch)
    for got, want in zip(r.outputs, row["outputs"]):
        if want is not None:
            _same(got, want)
    for name, want in row["through"].items():
        _same(through[name], want)
    assert Counter(s.rstrip("\n") for s in r.stdout) == Counter(s.rstrip("\n") for s in row["stdout"])
