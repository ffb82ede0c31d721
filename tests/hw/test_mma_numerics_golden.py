"""mma.sync numerics against the H100 (tests/golden/mma_sync_numerics, README there).

The GPU results were recorded by ``calib/probes/device_run.sh`` (``python -m calib.probes.mma_probe device``) and
reduced by ``python -m calib.probes.mma_probe analyze``.  Inputs are never stored for the random campaigns: they
are regenerated from the seed (``calib.probes.mma_inputs.gen_chunk``), their SHA-256 checked against the
device's, and ``tcsim.numerics.tensor_core.mma_float`` with ``tc_params('sm_90a', 'mma.sync', fmt)`` must
reproduce the GPU bit for bit on

* the CI subsample (the first cases of every campaign; GPU outputs stored as ``gpu ^ estimate``);
* every kept discriminating element (where two plausible models disagree; the GPU's answer stored);
* every targeted vector (inputs and outputs stored), with the deciding answers spelled out below;
* the integer forms (wrap without ``.satfinite``, clamp with it) through ``mma_int``;
* and, with ``TCSIM_FULL_NUMERICS=1``, all 100,000 cases of every pair (SHA-256 per chunk of 5,000).

The probe kernel itself also runs on the simulator (fragment maps, warp_mma, model end to end).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from calib.probes import mma_inputs as MI
from calib.probes.mma_ptx import FLOAT_PAIRS, INT_PAIRS, probe_launch, probe_ptx, ptx_path
from tcsim.numerics.tensor_core import mma_float, mma_int, tc_params

GOLD = Path(__file__).resolve().parents[1] / "golden" / "mma_sync_numerics"
SUMMARY = json.loads((GOLD / "summary.json").read_text())
CI = np.load(GOLD / "ci_subsample.npz")
DISC = np.load(GOLD / "discriminating.npz")
TGT = np.load(GOLD / "targeted.npz")
PAIRS = list(FLOAT_PAIRS)
FULL = os.environ.get("TCSIM_FULL_NUMERICS") == "1"


def _model(pair, a, bt, c):
    """mma_float per case: a (n,16,K), bt (n,8,K), c (n,16,8) -> (n,16,8) codes."""
    P = tc_params("sm_90a", "mma.sync", pair.ab)
    return np.stack([mma_float(a[i], bt[i].T, c[i], pair.ab, pair.ab, pair.acc, P) for i in range(a.shape[0])])


def _hex_diff(got, want):
    bad = np.argwhere(got != want)
    i = tuple(int(x) for x in bad[0])
    return f"{len(bad)} elements differ; first at {list(i)}: model {int(got[i]):#x}, H100 {int(want[i]):#x}"


@pytest.fixture(scope="module", params=PAIRS)
def chunk0(request):
    name = request.param
    pair = FLOAT_PAIRS[name]
    a, bt, c = MI.gen_chunk(pair, 0)
    return name, pair, a, bt, c


# ------------------------------------------------------------------------------------------ provenance
def test_summary_covers_every_pair_with_100k_cases():
    assert set(SUMMARY["pairs"]) == set(FLOAT_PAIRS)
    assert "H100" in SUMMARY["device"] and SUMMARY["compute_capability"] == [9, 0]
    for name, p in SUMMARY["pairs"].items():
        assert p["cases"] >= 100_000
        ag = p["agreement"]["mma_float"]
        assert ag["elements_equal"] == p["elements"] and ag["cases_equal"] == p["cases"], name


def test_probe_ptx_files_are_the_generated_ones():
    for pair in {**FLOAT_PAIRS, **INT_PAIRS}.values():
        assert ptx_path(pair).read_text() == probe_ptx(pair), "run `python -m calib.probes.mma_probe write-ptx`"


def test_inputs_regenerate_from_the_seed(chunk0):
    name, pair, a, bt, c = chunk0
    assert MI.input_digest(a, bt, c) == SUMMARY["pairs"][name]["in_sha256_per_chunk"][0], (
        "the input generator no longer reproduces the device's inputs: the stored GPU outputs are meaningless "
        "for these inputs")


# ------------------------------------------------------------------------------------------ CI subsample
def test_ci_subsample_bit_exact(chunk0):
    name, pair, a, bt, c = chunk0
    n = SUMMARY["ci_cases"]
    a, bt, c = a[:n], bt[:n], c[:n]
    gpu = CI[f"{name}/d_xor_estimate"] ^ MI.estimate(pair, a, bt, c)
    assert MI.output_digest(gpu) == str(CI[f"{name}/sha256"]), "decoding the stored GPU outputs failed"
    got = _model(pair, a, bt, c)
    assert np.array_equal(got, gpu), _hex_diff(got, gpu)


def test_probe_kernel_on_the_simulator(chunk0):
    """The same PTX the H100 ran, on the simulator, over the first 64 cases: fragment maps + mma.sync + model."""
    from tcsim.launch import run_launch

    name, pair, a, bt, c = chunk0
    n = 64
    gpu = (CI[f"{name}/d_xor_estimate"][:n] ^ MI.estimate(pair, a[:n], bt[:n], c[:n]))
    d = run_launch(probe_launch(pair, a[:n], bt[:n], c[:n])).outputs[3]
    assert np.array_equal(d, gpu), _hex_diff(d, gpu)


# ------------------------------------------------------------------------------------------ discriminating
@pytest.mark.parametrize("name", PAIRS)
def test_discriminating_elements_bit_exact(name):
    pair = FLOAT_PAIRS[name]
    a, b, c, gpu = DISC[f"{name}/a"], DISC[f"{name}/b"], DISC[f"{name}/c"], DISC[f"{name}/gpu"]
    assert len(gpu) == SUMMARY["pairs"][name]["discriminating_elements"] > 0
    P = tc_params("sm_90a", "mma.sync", pair.ab)
    got = np.array([mma_float(a[i][None, :], b[i][:, None], c[i].reshape(1, 1), pair.ab, pair.ab, pair.acc, P)[0, 0]
                    for i in range(len(gpu))])
    assert np.array_equal(got, gpu), _hex_diff(got, gpu)
    # every kept element rules out at least one variant, and the stored bitmask agrees with the model
    names = list(DISC[f"{name}/variants"])
    match = DISC[f"{name}/match"]
    assert np.all(match & np.uint64(1 << names.index("model")))
    full = np.uint64((1 << len(names)) - 1)
    assert np.all(match != full)


# ------------------------------------------------------------------------------------------ targeted
@pytest.mark.parametrize("name", PAIRS)
def test_targeted_cases_bit_exact(name):
    pair = FLOAT_PAIRS[name]
    a, bt, c, d = (TGT[f"{name}/{k}"] for k in ("a", "bt", "c", "d"))
    got = _model(pair, a, bt, c)
    assert np.array_equal(got, d), _hex_diff(got, d)


def _tgt(name, test):
    names = list(TGT[f"{name}/names"])
    case, j = TGT[f"{name}/where"][names.index(test)]
    d = TGT[f"{name}/d"]
    assert d[case, j, j] == d[case, j + 8, j]
    return int(d[case, j, j])


# The deciding vectors (README "What the H100 settled"): test name -> H100 output bits, per pair group.
F32_ALL = ["m16n8k16_f32_f16", "m16n8k16_f32_bf16", "m16n8k8_f32_f16", "m16n8k8_f32_bf16", "m16n8k8_f32_tf32"]
F32_WIDE = ["m16n8k16_f32_bf16", "m16n8k8_f32_bf16", "m16n8k8_f32_tf32"]
SETTLED = [
    # Q2: a zero operand does not lend its exponent field to E (0 * 2^emax beside 2^-28 keeps 2^-28) ...
    (F32_ALL, "zero_times_huge_a", 0x31800000),
    (F32_ALL, "huge_times_zero_b", 0x31800000),
    (F32_ALL, "zero_huge_c_small", 0x30800000),
    # ... and C = +-0 (and zero products) do not take exponent -126: 2^-140 - 2^-155 -> RZ 2^-140 - 2^-149
    (F32_WIDE, "czero_tiny_products", 0x000001FF),
    (F32_WIDE, "czero_tiny_products_negc", 0x000001FF),
    # Q1: E is floored at -133 for f32 output: 2^-140 - 2^-160 -> the -2^-160 is truncated away
    (F32_WIDE, "efloor_160", 0x00000200),
    (F32_WIDE, "efloor_many_tiny", 0x00000200),
    # Q1, f16 output: floored at -21 (2^-25 + 2^-48 becomes an exact tie and rounds to +0)
    (["m16n8k16_f16_f16"], "f16_floor_tie_plus", 0x0000),
    (["m16n8k16_f16_f16"], "f16_floor_tie_minus", 0x0000),
    # ... exactly -21: 2^-25 + 2^-46 is kept (-> min subnormal), 2^-25 + 2^-47 truncated (-> tie -> +0)
    (["m16n8k16_f16_f16"], "f16_floor_probe_46", 0x0001),
    (["m16n8k16_f16_f16"], "f16_floor_probe_47", 0x0000),
    (["m16n8k16_f16_f16"], "f16_floor_probe_46_neg", 0x8001),
    (["m16n8k16_f16_f16"], "f16_floor_probe_47_neg", 0x0000),
    # Q3: every zero result is +0: all products -0 with C = -0, and a negative sum that rounds to zero
    (F32_ALL, "zero_neg_products_cneg", 0x00000000),
    (F32_ALL, "cancel_pair_cneg", 0x00000000),
    (F32_WIDE, "underflow_neg", 0x00000000),
    (F32_WIDE, "underflow_neg_cneg", 0x00000000),
    (["m16n8k16_f16_f16"], "zero_neg_products_cneg", 0x0000),
    (["m16n8k16_f16_f16"], "f16_underflow_neg_cneg", 0x0000),
    # OVF: f32 round-toward-zero overflow gives +-Inf, not +-max-finite
    (F32_WIDE, "ovf_pos", 0x7F800000),
    (F32_WIDE, "ovf_neg", 0xFF800000),
    (F32_WIDE, "ovf_c_plus", 0x7F800000),
    (F32_WIDE, "ovf_c_below", 0x7F7FFFFF),
    # NaN: one canonical NaN whatever the payload or sign
    (F32_ALL, "nan_a_neg_payload", 0x7FFFFFFF),
    (F32_ALL, "nan_c_payload", 0x7FFFFFFF),
    (F32_ALL, "inf_times_zero", 0x7FFFFFFF),
    (["m16n8k16_f16_f16"], "nan_c_neg", 0x7FFF),
    # TRUNC: F = 25, truncation toward zero, RZ (f32) / RNE (f16) final rounding
    (F32_ALL, "trunc_neg_small", 0x3F800000),
    (F32_ALL, "rne_vs_rz", 0x3F800001),
    (["m16n8k16_f16_f16"], "rne_vs_rz", 0x3C02),
    # TF32: operands truncated (low 13 bits ignored), an f32 NaN with only low payload bits reads as Inf
    (["m16n8k8_f32_tf32"], "tf32_round_down", 0x3F800000),
    (["m16n8k8_f32_tf32"], "tf32_nan_low_payload", 0x7F800000),
]


@pytest.mark.parametrize("pairs,test,bits", SETTLED, ids=[f"{t}" for _, t, _ in SETTLED])
def test_settled_question(pairs, test, bits):
    for name in pairs:
        assert _tgt(name, test) == bits, f"{name} {test}: H100 {_tgt(name, test):#x}, recorded {bits:#x}"


# ------------------------------------------------------------------------------------------ integers
@pytest.mark.parametrize("name", list(INT_PAIRS))
def test_integer_forms_wrap_or_clamp(name):
    from calib.probes.mma_probe import int_random

    pair = INT_PAIRS[name]
    signed = pair.ab == "s8"
    for a, bt, c, d in [int_random(pair) + (TGT[f"{name}/rand_d"],),
                        tuple(TGT[f"{name}/{k}"] for k in ("a", "bt", "c", "d"))]:
        got = np.stack([mma_int(a[i], bt[i].T, c[i], signed, signed, pair.satfinite).view(np.uint32)
                        for i in range(len(a))])
        assert np.array_equal(got, d.astype(np.uint32)), _hex_diff(got, d)
    # deciding vectors: C = 2^31-1 plus 1 wraps to -2^31 without .satfinite and clamps with it
    if signed:
        want = 2**31 - 1 if pair.satfinite else -2**31
        assert np.uint32(_tgt(name, "int_wrap_pos")).view(np.int32) == want


# ------------------------------------------------------------------------------------------ everything
@pytest.mark.skipif(not FULL, reason="set TCSIM_FULL_NUMERICS=1 to replay all 600,000 cases (a few minutes)")
@pytest.mark.parametrize("name", PAIRS)
def test_full_campaign_sha256(name):
    pair = FLOAT_PAIRS[name]
    info = SUMMARY["pairs"][name]
    for j, (in_sha, out_sha) in enumerate(zip(info["in_sha256_per_chunk"], info["gpu_out_sha256_per_chunk"])):
        a, bt, c = MI.gen_chunk(pair, j)
        assert MI.input_digest(a, bt, c) == in_sha, f"chunk {j}: inputs"
        assert MI.output_digest(_model(pair, a, bt, c)) == out_sha, f"{name} chunk {j}: model != H100"
