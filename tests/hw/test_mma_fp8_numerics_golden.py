"""sm_90a ``mma.sync`` fp8 numerics against the H100 (tests/golden/mma_sync_fp8, README there).

Recorded by ``python -m calib.probes.mma_fp8_probe device`` (calib/probes/floor_fp8_device_run.sh) on an H100:
``mma.sync.aligned.m16n8k32.row.col.{f32,f16}.{e4m3,e5m2}.{e4m3,e5m2}.{f32,f16}``, which ptxas lowers onto f16
HMMAs on sm_90a (``tcsim.numerics.tensor_core.LOWER_FP8_VIA_F16``).  Per pair, 1,024 random cases (the inputs of
the recorded wgmma campaign with the same formats, regenerated from its seed and checked against its SHA-256) and
the targeted vectors of ``calib.probes.mma_fp8_probe.tests_for``.  ``mma_float`` with
``tc_params('sm_90a', 'mma.sync', fmt)`` must reproduce every output bit for bit: CI replays the first chunk of
128 random cases and every targeted case of every pair; the slow test replays all 1,024.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess

import numpy as np
import pytest

from calib import pipeline as P
from calib.probes import mma_fp8_probe as F
from calib.probes.mma_ptx import FP8_PAIRS, probe_launch, probe_ptx

REC = F.load_golden()
META = REC[0]
PAIRS = list(FP8_PAIRS)
F32_PAIRS = [n for n in PAIRS if FP8_PAIRS[n].acc == "f32"]
F16_PAIRS = [n for n in PAIRS if FP8_PAIRS[n].acc == "f16"]


def _hex_diff(got, want):
    bad = np.argwhere(got != want)
    i = tuple(int(x) for x in bad[0])
    return f"{len(bad)} of {got.size} outputs differ; first at {list(i)}: model {int(got[i]):#x}, H100 {int(want[i]):#x}"


# ------------------------------------------------------------------------------------------ provenance
def test_record_provenance():
    assert "H100" in META["gpu"] and META["compute_capability"] == "9.0"
    assert META["command"].startswith("python -m calib.probes.mma_fp8_probe device")
    assert set(META["pairs"]) == set(FP8_PAIRS)
    wmeta = P.read_json(P.GOLDEN_ROOT / "wgmma_numerics" / P.META)
    for name, rec in META["pairs"].items():
        pair = FP8_PAIRS[name]
        assert rec["opcode"] == pair.opcode
        assert rec["random"]["cases"] == 1024 and len(rec["random"]["chunk_in_sha256"]) == 1024 // F.CHUNK
        # the random inputs are those of the recorded wgmma campaign (same seed, same digest)
        assert rec["wgmma_in_sha256"] == wmeta["combos"][F.combo_name(pair)][str(F.WGMMA_N)]["in_sha256"]


def test_probe_ptx_is_the_recorded_one():
    for name, pair in FP8_PAIRS.items():
        assert P.sha256(probe_ptx(pair)) == META["pairs"][name]["ptx_sha256"], \
            f"{name}: the probe PTX changed; re-record: bash calib/probes/floor_fp8_device_run.sh"


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_probe_ptx_accepted_by_ptxas(tmp_path):
    for name in ("m16n8k32_f32_e4m3_e5m2", "m16n8k32_f16_e5m2_e4m3"):
        f = tmp_path / f"{name}.ptx"
        f.write_text(probe_ptx(FP8_PAIRS[name]))
        r = subprocess.run(["ptxas", "-arch=sm_90a", str(f), "-o", os.devnull], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, f"{name}: {r.stderr[-2000:]}"


# ------------------------------------------------------------------------------------------ replay
@pytest.mark.parametrize("name", PAIRS)
def test_random_chunk_bit_exact(name):
    """The first 128 random cases (32 wgmma instructions' inputs as mma.sync cases, every input kind)."""
    a, bt, c, gpu = F.golden_cases(name, "random", rec=REC, chunks=1)
    got = F.model(FP8_PAIRS[name], a, bt, c)
    assert got.dtype == gpu.dtype and np.array_equal(got, gpu), _hex_diff(got, gpu)


@pytest.mark.slow
@pytest.mark.parametrize("name", PAIRS)
def test_random_all_bit_exact(name):
    a, bt, c, gpu = F.golden_cases(name, "random", rec=REC)
    got = F.model(FP8_PAIRS[name], a, bt, c)
    assert np.array_equal(got, gpu), _hex_diff(got, gpu)


@pytest.mark.parametrize("name", PAIRS)
def test_targeted_bit_exact(name):
    a, bt, c, gpu = F.golden_cases(name, "targeted", rec=REC)
    got = F.model(FP8_PAIRS[name], a, bt, c)
    assert np.array_equal(got, gpu), _hex_diff(got, gpu)


def test_golden_cases_rejects_changed_inputs(monkeypatch):
    """A record whose inputs no longer regenerate is refused, never compared."""
    real = F.random_cases

    def shifted(pair, seed=F.WI.MASTER_SEED, chunks=None):
        return real(pair, seed + 1, chunks)

    monkeypatch.setattr(F, "random_cases", shifted)
    with pytest.raises(P.RecordError, match="regenerated inputs differ"):
        F.golden_cases(PAIRS[0], "random", rec=REC, chunks=1)


def _tgt(name, test):
    arr = REC[1]
    names = list(arr[f"{name}/targeted/names"])
    i, j = arr[f"{name}/targeted/where"][names.index(test)]
    return int(arr[f"{name}/targeted/d"][i, j, j])


# The lowering, worked out by hand (calib.probes.mma_fp8_probe.LOWERING_TESTS): D = C + P rounds to nearest even;
# the products are summed in two chained halves (k % 4 in {0, 1}, then {2, 3}), each an f16-HMMA block.
SETTLED = [
    (F32_PAIRS, "c_plus_p_rne", 0x3F800001),          # 1 + 0.75 ulp -> 1 + ulp (a truncating sum gives 1.0)
    (F32_PAIRS, "c_plus_p_tie_even", 0x3F800000),     # 1 + 0.5 ulp -> 1
    (F32_PAIRS, "c_plus_p_tie_odd", 0x3F800002),      # 1 + 1.5 ulp -> 1 + 2 ulp
    (F16_PAIRS, "c_plus_p_rne_f16", 0x3C01),
    (F32_PAIRS, "halves_cancel_first", 0x36800000),   # 2^-18 survives: the second half starts from +0
    (F16_PAIRS, "halves_cancel_first", 0x0040),       # 2^-18 as an f16 subnormal
    (F32_PAIRS, "halves_cancel_split", 0x0),          # 2^16 + 2^-18 truncated in the first half, then -2^16
    (F16_PAIRS, "halves_cancel_split", 0x7C00),       # the first half's 2^16 overflows the f16 result: +Inf
    (F16_PAIRS, "halves_round_f16", 0x3C00),          # each half rounds 1 + 2^-11 to 1 (one block: 0x3C01)
    (F32_PAIRS, "halves_round_f16", 0x3F802000),      # f32 keeps 1 + 2^-10 exactly
    (PAIRS, "c_neg_plus_p", 0x0),                     # -1 + 1 = +0
    (F32_PAIRS, "c_tiny_cancel", 0x30800000),         # C = 2^-30 beside products that cancel
    (PAIRS, "nan_a", None),                           # canonical NaN
    # where the lowering differs from wgmma's native fp8 (F = 13, f32 result cut to e8m13; test_wgmma_numerics_golden):
    (F32_PAIRS, "many_below_window", 0x3F803E00),     # 1 + 31 * 2^-14 exactly (wgmma: 0x3F800000)
    (F32_PAIRS, "out_cut_14", 0x40600200),            # 3.5 + 2^-13 exactly, no e8m13 cut (wgmma: 0x40600000)
    (F32_PAIRS, "f16_ovf", 0x4AC40000),               # 32 * 448^2 = 6,422,528: for an f32 D the halves sum in f32
]


@pytest.mark.parametrize("pairs,test,bits", SETTLED, ids=[t for _, t, _ in SETTLED])
def test_settled_question(pairs, test, bits):
    for name in pairs:
        want = bits if bits is not None else (0x7FFFFFFF if FP8_PAIRS[name].acc == "f32" else 0x7FFF)
        assert _tgt(name, test) == want, f"{name} {test}: H100 {_tgt(name, test):#x}, expected {want:#x}"


@pytest.mark.parametrize("name", ["m16n8k32_f32_e4m3_e4m3", "m16n8k32_f16_e5m2_e5m2"])
def test_native_fp8_block_contradicted(name):
    """mma.sync fp8 is not wgmma's native fp8 operation on the H100: the wgmma fp8 parameters (one 32-wide block,
    F = 13, e8m13 cut) miss many of the first chunk's outputs, the lowering misses none."""
    from tcsim.numerics import tensor_core as TC

    pair = FP8_PAIRS[name]
    a, bt, c, gpu = F.golden_cases(name, "random", rec=REC, chunks=1)
    native = TC.tc_params("sm_90a", "wgmma", pair.ab)
    assert native.lowering is None
    assert int((F.model(pair, a, bt, c, params=native) != gpu).sum()) > 1000
    unlowered = dataclasses.replace(TC.tc_params("sm_90a", "mma.sync", pair.ab), lowering=None)
    assert int((F.model(pair, a, bt, c, params=unlowered) != gpu).sum()) > 100


def test_probe_kernel_on_the_simulator():
    """The probe kernels the H100 ran, on tcsim (mma.sync fp8 through warp_mma): four random cases and the first
    targeted case of two pairs give the GPU's bits."""
    for name in ("m16n8k32_f32_e5m2_e4m3", "m16n8k32_f16_e4m3_e5m2"):
        pair = FP8_PAIRS[name]
        a, bt, c, gpu = F.golden_cases(name, "random", rec=REC, chunks=1)
        ta, tbt, tc_, tgpu = F.golden_cases(name, "targeted", rec=REC)
        pick = [0, 17, 64, 127]
        a, bt, c = (np.concatenate([x[pick], y[:4]]) for x, y in ((a, ta), (bt, tbt), (c, tc_)))
        want = np.concatenate([gpu[pick], tgpu[:4]])
        r = P.execute(probe_launch(pair, a, bt, c), "sim")
        assert r.ok, f"{name}: {r.error}: {r.detail}"
        got = np.asarray(r.outputs[3])
        assert np.array_equal(got, want), _hex_diff(got, want)
