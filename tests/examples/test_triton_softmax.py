"""The Triton example (examples/triton_softmax.py): compiled live through tcsim.triton (when Triton is installed)
and replayed from its saved PTX + JSON (always), both passing the example's own check; the check is not vacuous;
the saved PTX is what Triton 3.9.0 makes of the kernel and the CUDA 13.0 ptxas accepts it.  The example also
runs in the generic example tests (race detector, timing invariance, observation events, the clean corpus)."""
from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import tcsim.examples.triton_softmax as ex
from tcsim.cli import main
from tcsim.isa.errors import LaunchError
from tcsim.launch import run_launch

SAVED = ex.PTX


def _hide_triton(monkeypatch):
    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")
                 or m == "tcsim.examples._triton_softmax"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "triton", None)


def test_replayed_without_triton(monkeypatch):
    _hide_triton(monkeypatch)
    prep = ex.prepare(seed=3)
    assert prep.compiled is None and prep.record["triton_version"] == "3.9.0"
    res = run_launch(prep.launch)
    ok, msg = ex.check(res, prep.launch)
    assert ok, msg
    with pytest.raises(LaunchError, match="needs Triton"):
        ex.make_launch(arch="sm_90a")
    import tcsim.triton as tt
    with pytest.raises(LaunchError, match=r"tcsim.triton needs Triton.*Expected: `pip install triton`"):
        tt.launch(ex.reference, (1,), np.zeros(4, np.float32))


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_compiled_live(arch):
    pytest.importorskip("triton")
    prep = ex.prepare(seed=4, arch=arch)
    assert prep.compiled is not None and f".target {arch}" in prep.ptx
    launch = prep.launch
    assert launch.block == (128, 1, 1) and launch.grid == (ex.ROWS, 1, 1)
    res = run_launch(launch)
    ok, msg = ex.check(res, launch)
    assert ok, msg
    # written back into the caller's output array too
    assert prep.write_back(res) == ["out_ptr"]


def test_check_is_discriminating():
    """A softmax that forgets to normalise one row (the row's sum is dropped: num / 1) fails the check, and so
    does reading the input with the output's row stride (a stride bug)."""
    launch = ex.make_launch(seed=5)
    res = run_launch(launch)
    assert ex.check(res, launch)[0]
    out = np.asarray(res.outputs[0]).reshape(ex.ROWS, ex.COLS).copy()
    x, _, _ = ex.inputs(launch)
    out[2] = np.exp(x[2].astype(np.float64) - x[2].max())
    res.outputs[0] = out.reshape(-1)
    ok, msg = ex.check(res, launch)
    assert not ok and "differ from the float64 reference" in msg
    args = list(launch.args)
    args[2] = ex.COLS                               # in_row_stride = 200 instead of 208
    launch.args = args
    ok, msg = ex.check(run_launch(launch), ex.make_launch(seed=5))
    assert not ok


def test_saved_ptx_is_tritons_output():
    """The committed PTX equals a fresh compile with the installed Triton (when it is 3.9.0), apart from the
    ``.file`` lines and the DWARF sections, which name the kernel's source and Triton's own modules by absolute
    path (so their lengths depend on where the checkout and Triton live)."""
    triton = pytest.importorskip("triton")
    if triton.__version__ != "3.9.0":
        pytest.skip(f"Triton {triton.__version__} is installed; the example was saved with 3.9.0")
    fresh = ex.prepare().ptx
    def mask(t):
        t = t.split("\t.section\t.debug", 1)[0]
        return re.sub(r'^\s*\.file.*$', "", t, flags=re.M)
    assert mask(fresh) == mask(SAVED.read_text())


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
