"""The CuTe DSL example (examples/cute_rowsum.py): compiled live through tcsim.cute (when the DSL is installed) and
replayed from its saved PTX + JSON (always), both passing the example's own check; the check is not vacuous; the
saved PTX is what nvidia-cutlass-dsl 4.8.1 makes of the program and the CUDA 13.0 ptxas accepts it.  The example
also runs in the generic example tests (race detector, timing invariance, observation events, the clean corpus)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import tcsim.examples.cute_rowsum as ex
from tcsim.cli import main
from tcsim.isa.errors import LaunchError
from tcsim.launch import run_launch

SAVED = ex.PTX


def _hide_dsl(monkeypatch):
    for name in [m for m in sys.modules if m == "cutlass" or m.startswith("cutlass.")
                 or m == "tcsim.examples._cute_rowsum"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cutlass", None)


def test_replayed_without_the_dsl(monkeypatch):
    _hide_dsl(monkeypatch)
    prep = ex.prepare(seed=3)
    assert prep.compiled is None and prep.record["dsl_version"] == "4.8.1"
    res = run_launch(prep.launch)
    ok, msg = ex.check(res, prep.launch)
    assert ok, msg
    # the caller's output array receives the sums
    x = ex.inputs(prep.launch)
    prep.write_back(0, res)
    y = prep.named["mY"].host
    np.testing.assert_array_equal(y, x.sum(axis=1))
    with pytest.raises(LaunchError, match="needs the CuTe DSL"):
        ex.make_launch(arch="sm_90a")


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_compiled_live(arch):
    pytest.importorskip("cutlass")
    prep = ex.prepare(seed=4, arch=arch)
    assert prep.compiled is not None and f".target {arch}" in prep.ptx
    launch = prep.launch
    assert launch.block == (32, 1, 1) and launch.grid == (ex.ROWS, 1, 1)
    res = run_launch(launch)
    ok, msg = ex.check(res, launch)
    assert ok, msg
    assert prep.write_back(0, res) == ["mY"]


def test_check_is_discriminating():
    """A row sum that lost one row's value fails the check, and so does a launch that reads the window with the
    wrong row stride (the struct parameter's stride field edited from 104 to 100)."""
    launch = ex.make_launch(seed=5)
    res = run_launch(launch)
    assert ex.check(res, launch)[0]
    res.outputs[1][0] = res.outputs[1][0].copy()
    res.outputs[1][0][2] += 1
    ok, msg = ex.check(res, launch)
    assert not ok and "rows [2]" in msg
    from tcsim.launch import Struct
    s = launch.args[0]
    raw = bytearray(b"".join(f for f in s.fields[1:]))
    assert int.from_bytes(raw[8:16], "little") == ex.PITCH
    raw[8:16] = ex.COLS.to_bytes(8, "little")
    launch.args = [Struct(s.fields[0], bytes(raw))] + list(launch.args[1:])
    ok, msg = ex.check(run_launch(launch), launch)
    assert not ok


def test_saved_ptx_is_the_dsls_output():
    """The committed PTX equals a fresh compile with the installed DSL (when it is 4.8.1)."""
    pytest.importorskip("cutlass")
    from importlib.metadata import version
    if version("nvidia-cutlass-dsl") != "4.8.1":
        pytest.skip("the example was saved with nvidia-cutlass-dsl 4.8.1")
    assert ex.prepare().ptx == SAVED.read_text()


def test_saved_ptx_assembles():
    from tcsim.isa.ptxas import PTXAS, assemble
    if PTXAS is None:
        pytest.skip("ptxas not installed")
    rc, log = assemble(SAVED.read_text(), "sm_100a")
    assert rc == 0, log


def test_tcsim_run_and_python_m(capsys):
    assert main(["run", str(SAVED.with_suffix(".py")), "--seed", "1"]) == 0
    assert "PASS" in capsys.readouterr().out
    from tcsim.examples._common import example_main
    assert example_main(ex, ["--seed", "2"]) == 0
    assert "PASS" in capsys.readouterr().out
