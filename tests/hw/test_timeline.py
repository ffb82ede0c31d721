"""Event timelines of the validation kernels (calib/microbench/timeline.py) and their H100 golden record
(tests/golden/timing_h100/timelines/): the instrumentation finds every mark, the record belongs to the current
instrumented kernels, and the simulator walks each warp through the same events as the H100 did."""
import json

import numpy as np
import pytest

from calib.microbench import cases as C
from calib.microbench import timeline as T
from calib.microbench.record import GOLDEN

TL = GOLDEN / "timelines"
META = json.loads((TL / "timelines.json").read_text())
DATA = np.load(TL / "timelines.npz")
VALIDATION = [n for n, c in C.CASES.items() if c.kind == "validation"]


@pytest.mark.parametrize("name", VALIDATION)
def test_every_mark_is_placed(name):
    case = C.CASES[name]
    text = T.build(case).ptx_text()[0]
    assert text.count("%__tl_c, %clock64") >= len(T.marks_for(case))


def test_a_missing_mark_is_named():
    case = C.CASES["val_mma_gemm"]
    base = case.build()
    with pytest.raises(ValueError, match="no_such_point"):
        T.instrument_events(base.ptx_text()[0], base.kernel, (T.Mark("no_such_point", "after", "frobnicate.u32"),))


def test_golden_record_matches_the_current_instrumented_kernels():
    assert set(META["cases"]) == set(VALIDATION)
    for name, m in META["cases"].items():
        assert m["ptx_sha256"] == T.ptx_sha(C.CASES[name]), f"{name}: re-record the timelines"
        assert m["marks"] == [mk.name for mk in T.marks_for(C.CASES[name])]
        ev = DATA[name]
        used = ev[:, :, 0] >= 0
        lane0 = np.arange(ev.shape[0]) % 32 == 0
        assert used[lane0].any(axis=1).all(), name          # lane 0 of every warp stamped at least its entry
        assert not used[~lane0].any(), name                 # and no other lane stored a stamp
        assert (ev[:, :, 1][used] >= 0).all(), name         # clocks relative to the CTA's first entry


@pytest.mark.parametrize("name", ["val_mma_gemm", "val_tma_mma_gemm", "val_bulk_pipeline_5x2048"])
def test_simulator_walks_the_same_events_as_the_h100(name):
    m = META["cases"][name]
    gpu = T.sequences(DATA[name], m["marks"], m["block"])
    sim = T.sequences(T.run(C.CASES[name], "sim"), m["marks"], m["block"])
    assert sim == gpu
