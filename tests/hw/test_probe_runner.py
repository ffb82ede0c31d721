"""calib/probes/runner.py: what the tensor-core numerics probes share (targeted vectors on the diagonals, the codes
of a test list, the named outputs, the command-line exits), checked by hand; the probes' recorded inputs rebuild
through it (tests/hw/test_mma_fp8_numerics_golden.py, tests/hw/test_wgmma_numerics_golden.py)."""
from __future__ import annotations

import numpy as np

from calib import pipeline as P
from calib.probes import runner as R


def test_diagonal_layout_by_hand():
    tests = [(f"t{k}", [k + 1, 2], [3], 10 + k) for k in range(10)]
    a, b, c, names, where = R.diagonal(tests, rows=16, K=4, a_dtype=np.uint8, b_dtype=np.uint16, c_dtype=np.uint32,
                                       per_case=8, multiple=4)
    assert a.shape == (4, 16, 4) and b.shape == (4, 8, 4) and c.shape == (4, 16, 8)
    assert (a.dtype, b.dtype, c.dtype) == (np.uint8, np.uint16, np.uint32)
    assert names == [f"t{k}" for k in range(10)] and where[8] == (1, 0) and where[9] == (1, 1)
    assert list(a[1, 1]) == [10, 2, 0, 0] and list(a[1, 9]) == [10, 2, 0, 0] and list(b[1, 1]) == [3, 0, 0, 0]
    assert c[1, 1, 1] == 19 and c[1, 9, 1] == 19 and np.count_nonzero(c) == 20
    assert not a[2:].any() and not b[2:].any()
    d = np.zeros((4, 16, 8), np.uint32)
    d[1, 1, 1] = 0xAB
    assert R.named(d, names, where)["t9"] == "0xab"
    got = []
    R.report_named(got.append, "p ", np.zeros_like(d), d, names, where)
    assert got == ["    p t9: GPU 0xab model 0x0"]


def test_convert_drops_tests_a_format_cannot_hold():
    def code(v):
        if v != int(v):
            raise ValueError(v)
        return int(v)
    tests = [("ok", "Q", (1, 2), (3,), 4), ("frac", "Q", (0.5,), (1,), 0)]
    assert R.convert(tests, code, code, code) == [("ok", "Q", [1, 2], [3], 4)]


def test_cli_exit_codes(capsys):
    from tcsim.hw.launcher import GpuUnavailable

    def stale():
        raise P.RecordError("stale record")

    def no_gpu():
        raise GpuUnavailable("none here")
    assert R.cli(lambda: 0) == 0
    assert R.cli(stale) == 2 and capsys.readouterr().err == "error: stale record\n"
    assert R.cli(no_gpu) == 3 and "error: no GPU: none here" in capsys.readouterr().err
