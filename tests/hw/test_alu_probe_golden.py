"""Scalar-instruction truth from the H100, replayed on the simulator (hw/probes/alu_probe.py, alu_ops.py).

Each probe group is one kernel that runs a list of single PTX instructions over hundreds or thousands of operand
vectors (NaN payloads and signs, operand orders, out-of-range bit-field and shift operands, every float-to-float
cvt form ptxas accepts, directed-rounding division...).  Its GPU outputs are committed under
``tests/golden/alu_probe`` (``python -m hw.probes.alu_probe device`` + ``install``); here the same PTX runs on
the simulator and every output column must be bit-identical.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from hw.probes.alu_ops import groups
from hw.probes.alu_probe import GOLDEN, diff_report, load_golden, probe_ptx, simulate

GROUPS = sorted(groups())


def test_every_group_has_golden_data():
    missing = [g for g in GROUPS if not (GOLDEN / f"{g}.npz").exists()]
    assert not missing, f"record these probe groups on a GPU: {missing}"


@pytest.mark.parametrize("name", GROUPS)
def test_simulator_matches_h100(name):
    g = groups()[name]
    gpu = load_golden(g)
    lines = diff_report(g, gpu, simulate(g), limit=2)
    assert not lines, f"{len(lines)} of {len(g.ops)} ops differ from the H100:\n" + "\n".join(lines[:20])


@pytest.mark.parametrize("name", GROUPS)
def test_schedule_does_not_matter(name):
    g = groups()[name]
    assert all((x == y).all() for x, y in zip(simulate(g), simulate(g, seed=3)))


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_ptxas_accepts_every_probe_kernel(tmp_path):
    for name in GROUPS:
        p = tmp_path / f"{name}.ptx"
        p.write_text(probe_ptx(groups()[name]))
        r = subprocess.run(["ptxas", "-arch=sm_90a", str(p), "-o", "/dev/null"], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, f"{name}: {r.stderr[:2000]}"
