"""The device scripts of the campaigns (calib/**/*.sh, run on a GPU machine from a checkout) share one prologue,
calib/device_setup.sh (issue 22: the duplicated prologues of the microbench / timing-corpus scripts and of the two
real16 follow-up scripts): output folder from the first argument or $OUT, a usage line without either, ptxas on
PATH, ``device_header`` / ``device_sass``.  What can run without a GPU runs here: the argument handling of every
script and the prologue's folder, shift and functions on a stand-in script."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "calib").rglob("*.sh") if p.name != "device_setup.sh")
#: scripts that take the output folder as their first argument and use the shared prologue
PROLOGUE = [p for p in SCRIPTS if "DEVICE_SUB=" in p.read_text()]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")


def test_the_duplicated_prologues_are_gone():
    """No device script spells out the output-folder prologue itself (it is calib/device_setup.sh's)."""
    names = {p.relative_to(ROOT).as_posix() for p in PROLOGUE}
    assert {"calib/microbench_device_run.sh", "calib/timing_corpus/device_run.sh", "calib/real16_followup_run.sh",
            "calib/real16_topup_run.sh"} <= names
    for p in SCRIPTS:
        assert 'OUTDIR=${1:-${OUT:-}}' not in p.read_text(), \
            f"{p.relative_to(ROOT)}: use DEVICE_SUB=... source device_setup.sh"
    for p in PROLOGUE:
        prologue = r'^DEVICE_SUB=\w+ (DEVICE_USAGE="[^"]*" )?source "\$\(dirname "\$0"\)/(\.\./)?device_setup\.sh"$'
        assert re.search(prologue, p.read_text(), re.M), p


@pytest.mark.parametrize("script", PROLOGUE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_script_without_an_output_folder_prints_its_usage(script):
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    r = subprocess.run(["bash", str(script.relative_to(ROOT))], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"usage: bash {script.relative_to(ROOT).as_posix()} OUTDIR"), r.stderr
    assert "Traceback" not in r.stderr


def test_prologue_makes_the_folder_shifts_the_argument_and_defines_the_helpers(tmp_path):
    """A stand-in script in calib/ (a copy of the repository's calib/device_setup.sh beside it, and a sim/ whose
    tcsim is importable, so nothing is installed): D is OUTDIR/SUB, absolute; the script's remaining arguments are
    the ones after OUTDIR; the working folder is the root; device_sass writes the SASS of each fuzz_*.ptx when
    ptxas and cuobjdump are there."""
    root = tmp_path / "repo"
    (root / "calib").mkdir(parents=True)
    shutil.copy(ROOT / "calib" / "device_setup.sh", root / "calib" / "device_setup.sh")
    (root / "sim").mkdir()
    (root / "sim" / "__init__.py").write_text("")
    stub = tmp_path / "stub"                        # `import tcsim` finds the stand-in repository's sim/
    (stub / "tcsim").mkdir(parents=True)
    (stub / "tcsim" / "__init__.py").write_text(f"__file__ = {str(root / 'sim' / '__init__.py')!r}\n")
    (root / "calib" / "s.sh").write_text(
        'DEVICE_SUB=sub DEVICE_USAGE="[X ...]" source "$(dirname "$0")/device_setup.sh"\n'
        'echo "D=$D"; echo "PWD=$(pwd)"; echo "ARGS=$*"\n'
        'type device_header >/dev/null && type device_sass >/dev/null && echo helpers\n')
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(stub))
    r = subprocess.run(["bash", "calib/s.sh", str(out), "a", "b"], cwd=root, env=env, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    lines = dict(ln.split("=", 1) for ln in r.stdout.splitlines() if "=" in ln)
    assert lines["D"] == str((out / "sub").resolve()) and (out / "sub").is_dir()
    assert lines["PWD"] == str(root) and lines["ARGS"] == "a b"
    assert "helpers" in r.stdout
    r = subprocess.run(["bash", "calib/s.sh"], cwd=root, env={k: v for k, v in env.items() if k != "OUT"},
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.strip() == "usage: bash calib/s.sh OUTDIR [X ...]"
