"""wgmma.mma_async numerics against the H100 (tests/golden/wgmma_numerics, README there).

Recorded by ``python -m calib.probes.wgmma_probe device`` on an H100 (command, GPU, driver and date in
``meta.json``).  For every type combination and both shapes (m64n8: 256 instructions, m64n256: 16), the inputs
are regenerated from the seed and checked against the recorded SHA-256, the GPU's outputs are rebuilt from the
stored ``gpu ^ estimate`` and checked against theirs, and ``tcsim.numerics.tensor_core`` (mma_float with
``tc_params('sm_90a', 'wgmma', a)``, mma_int, mma_b1) must reproduce every one of the 393,216 cases per
combination bit for bit.  A GPU-marked test re-runs a slice of every campaign on the GPU.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calib import pipeline as P
from calib.probes import wgmma_inputs as WI
from calib.probes import wgmma_probe as WP
from calib.probes.wgmma_ptx import COMBOS, FLAG_NEG_A, FLAG_NEG_B, FLAG_RS, FLAG_SCALE_D, SHAPES_N

GOLD = Path(__file__).resolve().parents[1] / "golden" / "wgmma_numerics"
REC = WP.load_golden(GOLD)
META = REC[0]


def _hex_diff(got, want, x):
    bad = np.argwhere(got != want)
    i, m, n = (int(v) for v in bad[0])
    return (f"{len(bad)} of {got.size} cases differ; first: instruction {i} (flags {int(x['flags'][i]):#x}) "
            f"D[{m}][{n}]: model {int(got[i, m, n]):#x}, H100 {int(want[i, m, n]):#x}")


# ------------------------------------------------------------------------------------------ provenance
def test_record_covers_every_combination_with_100k_cases():
    assert set(META["combos"]) == set(COMBOS)
    assert "H100" in META["gpu"] and META["compute_capability"] == "9.0"
    assert META["command"].startswith("python -m calib.probes.wgmma_probe device")
    for name, per in META["combos"].items():
        cases = 0
        for N in SHAPES_N:
            rec = per[str(N)]
            assert rec["opcode"] == COMBOS[name].opcode(N)
            assert rec["model"]["instructions"] == WI.INSTRUCTIONS[N]
            cases += rec["model"]["cases"]
        assert cases == sum(n * 64 * N for N, n in WI.INSTRUCTIONS.items()) >= 100_000, name


def test_campaigns_exercise_every_flag_and_kind():
    """Every flag (scale-d = 0, negated A / B, A in registers) and every input kind occurs in every campaign it
    applies to -- the inputs themselves, not the record, so a generator change that dropped one would fail."""
    for name, combo in COMBOS.items():
        x = WI.gen(combo, 8)
        fl = x["flags"]
        assert (fl & FLAG_SCALE_D).any() and (~fl & FLAG_SCALE_D).any(), name
        assert (fl & FLAG_RS).any() and (~fl & FLAG_RS).any(), name
        if combo.has_neg:
            assert (fl & FLAG_NEG_A).any() and (fl & FLAG_NEG_B).any(), name
        assert set(x["kind"]) == set(range(len(WI.kinds_of(combo)))), name


# ------------------------------------------------------------------------------------------ every case
@pytest.mark.parametrize("N", SHAPES_N)
@pytest.mark.parametrize("name", list(COMBOS))
def test_model_bit_exact_on_every_case(name, N):
    x, gpu = WP.golden_cases(name, N, _rec=REC)
    got = WP.model(COMBOS[name], x)
    assert got.dtype == gpu.dtype and np.array_equal(got, gpu), _hex_diff(got, gpu, x)


def test_golden_cases_rejects_a_changed_generator(monkeypatch):
    """The replay refuses inputs that no longer hash to the recorded ones (a stale record is never compared)."""
    real = WI.gen

    def shifted(combo, N, start=0, count=None, seed=WI.MASTER_SEED):
        return real(combo, N, start, count, seed + 1)

    monkeypatch.setattr(WI, "gen", shifted)
    with pytest.raises(P.RecordError, match="regenerated inputs differ"):
        WP.golden_cases("b1_and_popc", 8, _rec=REC)


# ------------------------------------------------------------------------------------------ GPU
@pytest.mark.gpu
def test_slice_on_the_gpu_matches_the_record():
    """The first 4 m64n8 instructions and the first m64n256 instruction of every combination, run again on the
    GPU through the same probe kernels, give the recorded outputs."""
    from tcsim.hw.launcher import gpu_available

    ok, why = gpu_available()
    if not ok:
        pytest.skip(why)
    from calib.probes.wgmma_ptx import probe_launch, regs_to_acc

    for name, combo in COMBOS.items():
        for N, count in ((8, 4), (256, 1)):
            x, want = WP.golden_cases(name, N, _rec=REC, count=count)
            d = META["descriptor"]
            r = P.execute(probe_launch(combo, N, x["a"], x["b"], x["c"], x["flags"], (d["desc_lo"], d["desc_hi"])),
                          "gpu", timeout=120)
            assert r.ok, f"{name} n{N}: {r.error}: {r.detail}"
            got = regs_to_acc(r.outputs[3])
            assert np.array_equal(got, want), _hex_diff(got, want, x)
