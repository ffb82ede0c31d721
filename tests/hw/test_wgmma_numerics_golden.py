"""wgmma.mma_async numerics against the H100 (tests/golden/wgmma_numerics, README there).

Recorded by ``python -m calib.probes.wgmma_probe device`` on an H100 (command, GPU, driver and date in
``meta.json``).  For every type combination and both shapes (m64n8: 256 instructions, m64n256: 16), the inputs
are regenerated from the seed and checked against the recorded SHA-256, the GPU's outputs are rebuilt from the
stored ``gpu ^ estimate`` and checked against theirs, and ``tcsim.numerics.tensor_core`` (mma_float with
``tc_params('sm_90a', 'wgmma', a)``, mma_int, mma_b1) must reproduce every one of the 393,216 cases per
combination bit for bit.  A GPU-marked test re-runs a slice of every campaign on the GPU.
"""
from __future__ import annotations

import os
import shutil
import subprocess
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


def _hex_diff(got, want, x, who="model"):
    bad = np.argwhere(got != want)
    i, m, n = (int(v) for v in bad[0])
    return (f"{len(bad)} of {got.size} cases differ; first: instruction {i} (flags {int(x['flags'][i]):#x}) "
            f"D[{m}][{n}]: {who} {int(got[i, m, n]):#x}, H100 {int(want[i, m, n]):#x}")


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


def test_probe_ptx_is_the_recorded_one():
    """The kernels the generator writes now are the ones the H100 ran (a changed generator makes the record stale)."""
    from calib.probes.wgmma_ptx import probe_ptx

    for name, combo in COMBOS.items():
        for N in SHAPES_N:
            assert P.sha256(probe_ptx(combo, N)) == META["combos"][name][str(N)]["ptx_sha256"], f"{name} n{N}"


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_probe_ptx_accepted_by_ptxas(tmp_path):
    """Every probe kernel assembles for sm_90a (the H100 ran them through the driver's JIT)."""
    from calib.probes.wgmma_ptx import probe_ptx

    for name in ("f16_f16", "tf32_f32", "e4m3_e5m2_f32", "s8_u8_s32_sat", "b1_and_popc"):
        for N in SHAPES_N:
            f = tmp_path / f"{name}_{N}.ptx"
            f.write_text(probe_ptx(COMBOS[name], N))
            r = subprocess.run(["ptxas", "-arch=sm_90a", str(f), "-o", os.devnull], capture_output=True, text=True,
                               timeout=120)
            assert r.returncode == 0, f"{name} n{N}: {r.stderr[-2000:]}"


def test_campaigns_exercise_every_flag_and_kind():
    """Every flag (scale-d = 0, negated A / B, A in registers) and every input kind occurs in the campaigns it
    applies to -- the inputs themselves, not the record, so a generator change that dropped one would fail.
    One combination per family (the generator's code paths); the full replay below covers the rest."""
    for name in ("f16_f16", "tf32_f32", "e5m2_e4m3_f16", "u8_s8_s32_sat", "b1_and_popc"):
        combo = COMBOS[name]
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
            assert np.array_equal(got, want), _hex_diff(got, want, x, "GPU now")


# ------------------------------------------------------------------------------------------ targeted
TGT = P.load_arrays(GOLD / "targeted.npz")
TMETA = P.read_json(GOLD / "targeted_meta.json")
TARGETED = sorted({k.split("/")[0] for k in TGT})


def test_targeted_record_provenance():
    assert "H100" in TMETA["gpu"] and TMETA["compute_capability"] == "9.0"
    assert TMETA["command"].startswith("python -m calib.probes.wgmma_probe targeted")
    # every float combination and the three integer forms mma.sync has vectors for
    assert len(TARGETED) == 15 and {"f16_f16", "tf32_f32", "e5m2_e5m2_f32", "s8_s8_s32_sat"} <= set(TARGETED)


@pytest.mark.parametrize("name", TARGETED)
def test_targeted_vectors_bit_exact(name):
    """Every output of every targeted instruction (A from shared memory and, again, from registers)."""
    from calib.probes import wgmma_targeted as WT

    combo = COMBOS[name]
    x = {k: TGT[f"{name}/{k}"] for k in ("a", "b", "c", "flags")}
    x_now, names, where = WT.pack(combo)
    assert all(np.array_equal(x[k], x_now[k]) for k in x), "the targeted vectors changed since the record"
    assert list(TGT[f"{name}/names"]) == names
    gpu = TGT[f"{name}/d"]
    n = len(gpu) // 2
    assert np.array_equal(gpu[:n], gpu[n:]), "the H100 gave different results for A in registers"
    got = WP.model(combo, x)
    assert np.array_equal(got, gpu), _hex_diff(got, gpu, x)


def _tgt(name, test):
    names = list(TGT[f"{name}/names"])
    i, j = TGT[f"{name}/where"][names.index(test)]
    return int(TGT[f"{name}/d"][i, j, j])


FP8_F32 = ["e4m3_e4m3_f32", "e4m3_e5m2_f32", "e5m2_e4m3_f32", "e5m2_e5m2_f32"]
FP8_F16 = ["e4m3_e4m3_f16", "e4m3_e5m2_f16", "e5m2_e4m3_f16", "e5m2_e5m2_f16"]
# The deciding vectors (README "What the H100 settled"), H100 output bits.
SETTLED = [
    # fp8: F = 13.  1 + 2^-13 keeps its last bit; 1 + 31 * 2^-14 loses every small term (each is truncated at
    # 2^(E-13) before the sum; F = 25 with only the e8m13 cut of the result would give 0x3F803C00)
    (FP8_F32, "f13_keep", 0x3F800400),
    (FP8_F32, "many_below_window", 0x3F800000),
    (FP8_F16, "many_below_window", 0x3C00),
    (FP8_F32, "cancel_exact", 0x39800000),
    (FP8_F32, "cancel_below", 0x00000000),
    # fp8 -> f32: the result is cut to 13 fraction bits (3.5 + 2^-13 needs 14: 0x40600200 without the cut),
    # and so is C (1 + 2^-20 alone -> 1)
    (FP8_F32, "out_cut_14", 0x40600000),
    (FP8_F32, "out_cut_13", 0x40600400),
    (FP8_F32, "c_alone_fine", 0x3F800000),
    # fp8 -> f16: round to nearest even after the F = 13 sum
    (FP8_F16, "rne_tie_even", 0x3C00),
    (FP8_F16, "rne_tie_odd", 0x3C02),
    (FP8_F16, "rne_above_tie", 0x3C01),
    (FP8_F16, "f16_ovf", 0x7C00),
    # Q2: a zero operand does not lend its exponent to E; Q3: zero results are +0; canonical NaN
    (FP8_F32, "zero_times_big", 0x39800000),
    (FP8_F16, "zero_times_big", 0x0C00),
    (FP8_F32 + FP8_F16, "cancel_cneg", 0x0),
    (FP8_F32 + FP8_F16, "neg_zero_products_cneg", 0x0),
    (FP8_F32, "nan_c", 0x7FFFFFFF),
    (FP8_F16, "nan_a", 0x7FFF),
    (["e5m2_e5m2_f32", "e5m2_e4m3_f32"], "inf_times_zero", 0x7FFFFFFF),
    # f16/bf16/tf32 wgmma: the mma.sync answers hold (floor -133 / -21, zero terms dropped, +0, RZ overflow Inf)
    (["bf16_f32", "tf32_f32"], "efloor_160", 0x00000200),
    (["bf16_f32", "tf32_f32"], "czero_tiny_products", 0x000001FF),
    (["bf16_f32", "tf32_f32"], "underflow_neg", 0x00000000),
    (["bf16_f32", "tf32_f32"], "ovf_pos", 0x7F800000),
    (["f16_f16"], "f16_floor_probe_46", 0x0001),
    (["f16_f16"], "f16_floor_probe_47", 0x0000),
    (["f16_f32", "bf16_f32", "tf32_f32"], "nan_a_neg_payload", 0x7FFFFFFF),
    (["tf32_f32"], "tf32_nan_low_payload", 0x7F800000),
    # integers: C = 2^31 - 1 plus 1 wraps without .satfinite and clamps with it; no intermediate clamping
    (["s8_s8_s32"], "int_wrap_pos", 0x80000000),
    (["s8_s8_s32_sat"], "int_wrap_pos", 0x7FFFFFFF),
    (["s8_s8_s32_sat"], "int_wrap_bigneg", 0x80000000),
    (["s8_s8_s32", "s8_s8_s32_sat"], "int_transient", 0x7FFFFFF6),
]


@pytest.mark.parametrize("names,test,bits", SETTLED, ids=[f"{t}-{n[0]}" for n, t, _ in SETTLED])
def test_settled_question(names, test, bits):
    for name in names:
        assert _tgt(name, test) == bits, f"{name} {test}: H100 {_tgt(name, test):#x}, recorded {bits:#x}"


# ------------------------------------------------------------------------------------------ layouts
def test_accumulator_fragment_map_by_hand():
    """PTX ISA 9.1 §9.7.15.5 "WGMMA .m64nNk* register fragment layout for accumulator matrix D": thread T (warp
    w = T/32, g = lane/4, t = lane%4) holds d[i] at row 16w + g + 8*((i/2)%2), column 8*(i/4) + 2t + i%2."""
    from calib.probes.wgmma_ptx import FRAG, acc_to_regs, regs_to_acc

    rows, cols = FRAG
    assert (rows[0, 0], cols[0, 0]) == (0, 0) and (rows[0, 1], cols[0, 1]) == (0, 1)
    assert (rows[0, 2], cols[0, 2]) == (8, 0) and (rows[0, 4], cols[0, 4]) == (0, 8)
    assert (rows[5, 3], cols[5, 3]) == (9, 3)             # lane 5: g = 1, t = 1
    assert (rows[127, 127], cols[127, 127]) == (63, 255)   # warp 3, lane 31, last register of m64n256
    x = np.arange(2 * 64 * 256, dtype=np.uint32).reshape(2, 64, 256)
    assert np.array_equal(regs_to_acc(acc_to_regs(x)), x)
    assert np.array_equal(regs_to_acc(acc_to_regs(x[:, :, :8])), x[:, :, :8])


def test_shared_and_register_images_by_hand():
    """No-swizzle K-major image: byte kb of row r at (r//8)*256 + (kb//16)*128 + (r%8)*16 + kb%16; A registers:
    thread T's register r = 32-bit word t + 4*(r//2) of row 16w + g + 8*(r%2)."""
    from calib.probes.wgmma_ptx import a_registers, smem_image

    a = np.arange(64 * 16, dtype=np.uint16).reshape(1, 64, 16)     # f16 codes: element (m, k) = 16m + k
    img = smem_image(a)[0].view(np.uint16)
    assert img[0] == 0 and img[7] == 7 and img[8] == 16            # row 0 k 0..7, then row 1 (16 bytes later)
    assert img[128 // 2] == 8                                       # second core matrix along K: row 0, k 8
    assert img[256 // 2] == 8 * 16                                  # next 8-row group: row 8, k 0
    regs = a_registers(a)[0].view(np.uint16).reshape(128, 4, 2)      # thread, register, half
    assert regs[0, 0].tolist() == [0, 1] and regs[0, 1].tolist() == [8 * 16, 8 * 16 + 1]
    assert regs[0, 2].tolist() == [8, 9]
    assert regs[5, 0].tolist() == [16 + 2, 16 + 3]                  # lane 5: row 1, word 1
    assert regs[32, 0].tolist() == [16 * 16, 16 * 16 + 1]           # warp 1: row 16


def test_probe_kernel_on_the_simulator():
    """The probe kernels the H100 ran, on tcsim: one instruction with A in shared memory and one with A in
    registers per combination (m64n8), and one m64n256 instruction, must give the GPU's bits.  Skipped while the
    simulator does not implement wgmma (the skip names the diagnostic)."""
    from calib.probes.wgmma_ptx import probe_launch, regs_to_acc

    d = META["descriptor"]
    for name, combo in COMBOS.items():
        for N in SHAPES_N:
            x, want = WP.golden_cases(name, N, _rec=REC, count=8 if N == 8 else 1)
            rs = (x["flags"] & FLAG_RS) != 0
            pick = [int(np.argmax(~rs)), int(np.argmax(rs))] if N == 8 else [0]
            x = {k: v[pick] for k, v in x.items()}
            r = P.execute(probe_launch(combo, N, x["a"], x["b"], x["c"], x["flags"], (d["desc_lo"], d["desc_hi"])),
                          "sim")
            assert r.ok, f"{name} n{N}: {r.error}: {r.detail}"
            got = regs_to_acc(r.outputs[3])
            assert np.array_equal(got, want[pick]), _hex_diff(got, want[pick], x, "tcsim")


# ------------------------------------------------------------------------------------------ floor on E
# ``python -m calib.probes.wgmma_probe floor`` (calib/probes/floor_fp8_device_run.sh): bf16 / tf32 -> f32 vectors
# whose result depends on the floor on E (calib.probes.wgmma_targeted.floor_tests), A from shared memory and
# from registers.
FLOOR = P.load_arrays(GOLD / "targeted_floor.npz")
FLOOR_META = P.read_json(GOLD / "targeted_floor_meta.json")


def test_floor_record_provenance():
    from calib.probes import wgmma_targeted as WT

    assert "H100" in FLOOR_META["gpu"] and FLOOR_META["compute_capability"] == "9.0"
    assert FLOOR_META["command"].startswith("python -m calib.probes.wgmma_probe floor")
    assert set(FLOOR_META["combos"]) == set(WT.FLOOR_COMBOS)


@pytest.mark.parametrize("name", ["bf16_f32", "tf32_f32"])
def test_floor_vectors_bit_exact(name):
    """Every output of every floor instruction (inputs equal today's pack_floor; A in registers gives the same)."""
    from calib.probes import wgmma_targeted as WT

    combo = COMBOS[name]
    x = {k: FLOOR[f"{name}/{k}"] for k in ("a", "b", "c", "flags")}
    x_now, names, _ = WT.pack_floor(combo)
    assert all(np.array_equal(x[k], x_now[k]) for k in x), \
        "the floor vectors changed since the record; re-record: bash calib/probes/floor_fp8_device_run.sh"
    assert list(FLOOR[f"{name}/names"]) == names
    gpu = FLOOR[f"{name}/d"]
    n = len(gpu) // 2
    assert np.array_equal(gpu[:n], gpu[n:]), "the H100 gave different results for A in registers"
    got = WP.model(combo, x)
    assert np.array_equal(got, gpu), _hex_diff(got, gpu, x)


def _floor(name, test):
    names = list(FLOOR[f"{name}/names"])
    i, j = FLOOR[f"{name}/where"][names.index(test)]
    return int(FLOOR[f"{name}/d"][i, j, j])


def _floor_expected(test: str, floor: int) -> int:
    """The output a floor vector gives under ``floor`` (worked out by hand, wgmma_targeted.floor_tests): the small
    term -2^-s survives iff it is at or above 2^(E - 25); the f32 result is then truncated toward zero to the
    subnormal grid 2^-149 (sign applied after)."""
    neg = test.endswith("_neg")
    base = test[:-4] if neg else test
    if base.startswith("etop_"):
        e = int(base.split("_")[1])
        top, E, small = e, max(floor, -e), e + 25          # 2^-e - 2^-(e+25)
    else:                                                   # efloor_x, efloor_many_158: 2^-140 - ... 2^-x
        x = 158 if base == "efloor_many_158" else int(base.split("_")[1])
        top, E, small = 140, max(floor, -140), x
    ulps = 1 << (149 - top)                                 # 2^-top in units of 2^-149
    mag = ulps - 1 if -small >= E - 25 else ulps            # truncated toward zero: one unit less when kept
    return mag | (0x80000000 if neg else 0)


@pytest.mark.parametrize("name", ["bf16_f32", "tf32_f32"])
def test_floor_is_minus_133(name):
    """The H100's outputs are those of a floor of exactly -133 on every floor vector (both signs), and each of
    -131, -132, -134, -135 and no floor (E from the terms only) contradicts at least two of them."""
    from calib.probes import wgmma_targeted as WT

    tests = [t[0] for t in WT.floor_tests(COMBOS[name].K)]
    got = {t: _floor(name, t) for t in tests}
    assert got == {t: _floor_expected(t, -133) for t in tests}
    for other in (-131, -132, -134, -135, -1000):
        assert sum(got[t] != _floor_expected(t, other) for t in tests) >= 2, other
    # the two deciding pairs, spelled out: 2^-140 - 2^-158 keeps its last bit, 2^-140 - 2^-159 does not;
    # 2^-133 - 2^-158 keeps it, 2^-134 - 2^-159 does not
    assert (got["efloor_158"], got["efloor_159"]) == (0x1FF, 0x200)
    assert (got["etop_133"], got["etop_134"]) == (0xFFFF, 0x8000)
