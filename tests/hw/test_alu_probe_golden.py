"""Scalar-instruction truth from the H100, replayed on the simulator (calib/probes/alu_probe.py, alu_ops.py).

Each probe group is one kernel that runs a list of single PTX instructions over hundreds or thousands of operand
vectors (NaN payloads and signs, operand orders, out-of-range bit-field and shift operands, every float-to-float
cvt form ptxas accepts, directed-rounding division...).  Its GPU outputs are committed under
``tests/golden/alu_probe`` (``python -m calib.probes.alu_probe device`` + ``install``); here the same PTX runs on
the simulator and every output column must be bit-identical.
"""
from __future__ import annotations


import pytest

from calib.probes.alu_ops import groups
from tcsim.isa.ptxas import PTXAS, assemble
from calib.probes.alu_probe import GOLDEN, diff_report, load_golden, probe_ptx, simulate

GROUPS = sorted(groups())


def test_every_group_has_golden_data():
    missing = [g for g in GROUPS if not (GOLDEN / f"{g}.npz").exists()]
    assert not missing, f"record these probe groups on a GPU: {missing}"


@pytest.mark.parametrize("name", GROUPS)
def test_simulator_matches_h100(name):
    """Bit for bit -- except ops ptxas miscompiles (``Op.compiled_as``): there the H100 must equal the simulator
    running what ptxas really emitted, and tcsim must flag the instruction with a note (isa/lint.py)."""
    g = groups()[name]
    gpu = load_golden(g)
    sim = simulate(g)
    miscompiled = [k for k, op in enumerate(g.ops) if op.compiled_as]
    if miscompiled:
        from dataclasses import replace

        from tcsim.isa.lint import notes
        from tcsim.isa.parser import parse
        as_compiled = simulate(replace(g, ops=[replace(op, text=op.compiled_as or op.text) for op in g.ops]))
        for k in miscompiled:
            assert (gpu[k] == as_compiled[k]).all(), f"{g.ops[k].text}: the H100 is not explained by " \
                                                     f"{g.ops[k].compiled_as}"
            sim[k] = gpu[k]
        noted = {n.loc.line for n in notes(parse(probe_ptx(g), f"{name}.ptx"))}
        lines = probe_ptx(g).splitlines()
        for k in miscompiled:
            body = g.ops[k].text.split("; ")[-1].split(" ")[1]      # the opcode of the guarded instruction
            assert any(body in lines[ln - 1] for ln in noted), f"no note for {g.ops[k].text}"
    lines = diff_report(g, gpu, sim, limit=2)
    assert not lines, f"{len(lines)} of {len(g.ops)} ops differ from the H100:\n" + "\n".join(lines[:20])


@pytest.mark.parametrize("name", GROUPS)
def test_schedule_does_not_matter(name):
    g = groups()[name]
    assert all((x == y).all() for x, y in zip(simulate(g), simulate(g, seed=3)))


@pytest.mark.skipif(PTXAS is None, reason="ptxas not on PATH")
def test_ptxas_accepts_every_probe_kernel():
    for name in GROUPS:
        rc, log = assemble(probe_ptx(groups()[name]), "sm_90a", f"{name}.ptx")
        assert rc == 0, f"{name}: {log[:2000]}"
