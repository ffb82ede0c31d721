"""What is installed is what is tested (issue 14): the built wheel, installed in a fresh venv outside the checkout.

A non-editable install once lost the H100 timing data silently (``tcsim run examples/tma_mma_gemm.py``: 1976 cycles
installed vs 1767 in the checkout), because data the simulator reads at run time was not package data.  So:

* pyproject's ``[tool.setuptools] packages`` names every package folder (a folder with ``__init__.py``) of the
  folders it maps to ``tcsim`` (sim/ -> tcsim, isa/ -> tcsim.isa, hw/ -> tcsim.hw, examples/ -> tcsim.examples),
  and nothing else -- a new subpackage cannot be left out of the wheel unnoticed;
* the wheel holds exactly the files of those folders (code, the examples' .ptx, sim/timing/data/*.json) under
  ``tcsim/`` and installs one top-level name, ``tcsim``;
* in a fresh venv (no system site-packages; the dependencies come from the package index) ``import tcsim`` is the
  wheel's, ``import sim`` / ``isa`` / ``hw`` / ``examples`` / ``calib`` fail, the sm_90a config reports the
  measured H100 parameters of measured_h100.json as measured, and ``tcsim run`` of two examples, from a directory
  outside the checkout, prints what the same command prints from the checkout install (wall-clock figures aside).

The wheel is built from a copy of the project files (a build in the checkout would leave ``build/`` there, whose
stale files setuptools puts into later wheels).  Building and installing takes ~25 s (pip's index for the build
backend and the dependencies).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib: Python >= 3.11")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGES = PYPROJECT["tool"]["setuptools"]["packages"]
PACKAGE_DIR = PYPROJECT["tool"]["setuptools"]["package-dir"]     # {"tcsim": "sim", "tcsim.isa": "isa", ...}
#: the two examples run both ways: sm_90a (reads measured_h100.json and sass_facts_h100.json) and sm_100a
EXAMPLES = ["tcsim.examples.tma_mma_gemm", "tcsim.examples.gemm_async"]
#: the wall-clock part of ``tcsim run``'s summary line (tcsim.cli.summary); everything else is simulated
WALL = re.compile(r"in \d+\.\d+ s = [\d,]+ warp-inst/s, [\d,]+ lane-inst/s")


def _skip(p: Path) -> bool:
    return "__pycache__" in p.parts or p.suffix == ".pyc"


def package_files() -> dict:
    """{name in the wheel (tcsim/...): file in the checkout} for every file of the mapped folders."""
    out = {}
    for pkg, folder in PACKAGE_DIR.items():
        base = ROOT / folder
        prefix = pkg.replace(".", "/")
        for p in sorted(base.rglob("*")):
            if p.is_file() and not _skip(p.relative_to(ROOT)):
                out[f"{prefix}/{p.relative_to(base).as_posix()}"] = p
    return out


def test_pyproject_lists_every_package_folder():
    assert set(PACKAGE_DIR) <= set(PACKAGES)
    assert sorted(PACKAGE_DIR.values()) == ["examples", "hw", "isa", "sim"]
    found = set()
    for pkg, folder in PACKAGE_DIR.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([pkg, *rel.parts]))
    assert sorted(found - set(PACKAGES)) == [], "package folders missing from [tool.setuptools] packages"
    assert sorted(set(PACKAGES) - found) == [], "[tool.setuptools] packages names a folder without __init__.py"


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run(cmd, cwd, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)
    if check and r.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} (in {cwd}) exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel, venv python, venv tcsim script, a working directory outside the checkout)."""
    tmp = tmp_path_factory.mktemp("packaging")
    assert ROOT not in tmp.parents, "the venv must live outside the checkout"
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for folder in PACKAGE_DIR.values():
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", src], cwd=tmp)
    wheels = list((tmp / "dist").glob("tcsim-*.whl"))
    assert len(wheels) == 1, wheels
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp)
    py = venv / "bin" / "python"
    # the outer pip installs into the venv (pip >= 22.3): the wheel and its dependencies from the index
    _run([sys.executable, "-m", "pip", "--python", py, "install", "-q", wheels[0]], cwd=tmp)
    work = tmp / "work"
    work.mkdir()
    return wheels[0], py, venv / "bin" / "tcsim", work


def test_wheel_holds_exactly_the_package_files(installed):
    wheel = installed[0]
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        top_level = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert z.read(top_level).decode().split() == ["tcsim"]
    files = sorted(n for n in names if ".dist-info/" not in n)
    expected = package_files()
    assert sorted(set(expected) - set(files)) == [], "checkout files left out of the wheel"
    assert sorted(set(files) - set(expected)) == [], "wheel files that are not in the package folders"
    # what the simulator reads at run time, by name (so this test fails even if the mapping itself moved)
    data = {f"tcsim/timing/data/{p.name}" for p in (ROOT / "sim/timing/data").glob("*.json")}
    ptx = {f"tcsim/examples/{p.name}" for p in (ROOT / "examples").glob("*.ptx")}
    assert {"tcsim/timing/data/measured_h100.json", "tcsim/timing/data/sass_facts_h100.json"} <= data
    assert "tcsim/examples/tma_mma_gemm.ptx" in ptx
    assert data | ptx <= set(files)


PROBE = """
import importlib, json, sys
out = {"errors": {}}
for name in ("sim", "isa", "hw", "examples", "calib"):
    try:
        importlib.import_module(name)
        out["errors"][name] = None
    except ModuleNotFoundError as e:
        out["errors"][name] = e.name
import tcsim
from tcsim.timing.params import MEASURED_H100, arch_config
from tcsim.timing.sass import SASS_FACTS
cfg = arch_config("sm_90a")
measured = json.loads(MEASURED_H100.read_text())
out["tcsim"] = tcsim.__file__
out["prefix"] = sys.prefix
out["measured_path"] = str(MEASURED_H100)
out["sass_path"] = str(SASS_FACTS)
out["sass"] = json.loads(SASS_FACTS.read_text())
out["params"] = {n: [cfg.param(n).value, cfg.param(n).kind] for n in measured}
print(json.dumps(out))
"""


def test_installed_package_is_the_wheel_and_reads_its_data(installed):
    _, py, _, work = installed
    r = _run([py, "-c", PROBE], cwd=work)
    out = json.loads(r.stdout)
    venv = Path(out["prefix"]).resolve()
    assert venv == py.parent.parent.resolve()
    for key in ("tcsim", "measured_path", "sass_path"):
        assert venv in Path(out[key]).resolve().parents, (key, out[key])
    # the repository's folder names are not importable: only tcsim is installed, and calib/ is not installed
    assert out["errors"] == {"sim": "sim", "isa": "isa", "hw": "hw", "examples": "examples", "calib": "calib"}
    # every parameter measured_h100.json overrides is the measured value in the installed sm_90a config
    measured = json.loads((ROOT / "sim/timing/data/measured_h100.json").read_text())
    assert measured, "the checkout's measured_h100.json is empty"
    assert out["params"] == {n: [e["value"], "M"] for n, e in measured.items()}
    assert out["sass"] == json.loads((ROOT / "sim/timing/data/sass_facts_h100.json").read_text())


def _tcsim_in_checkout() -> list:
    script = Path(sys.executable).parent / "tcsim"
    if script.is_file():
        return [script]
    return [sys.executable, "-c", "import sys; from tcsim.cli import main; sys.exit(main())"]


def _masked(text: str) -> list:
    return [WALL.sub("in <wall-clock>", line) for line in text.splitlines()]


@pytest.mark.parametrize("example", EXAMPLES)
def test_installed_run_prints_what_the_checkout_prints(installed, example):
    _, _, tcsim_script, work = installed
    wheel = _run([tcsim_script, "run", example], cwd=work)
    checkout = _run([*_tcsim_in_checkout(), "run", example], cwd=ROOT)
    lines = _masked(wheel.stdout)
    assert any(line.startswith("[sim] PASS: ") for line in lines), wheel.stdout
    assert any(re.match(r"\[sim\] timing \(sm_\d+a\): \d+(\.\d+)? cycles", line) for line in lines), wheel.stdout
    assert lines == _masked(checkout.stdout)
