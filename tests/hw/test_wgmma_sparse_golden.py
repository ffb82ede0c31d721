"""Sparse wgmma (``wgmma.mma_async.sp``, PTX ISA §9.7.15.6) against the GPU: every sparse type combination, the 8-bit
ones (e4m3 / e5m2 / s8 / u8, ``.m64nNk64``) included.

The probe (calib/probes/wgmma_sparse.py) runs one instruction per CTA over seeded operands; where each metadata
nibble sits is decided on the host from CUTLASS's sparse GMMA metadata layouts.  Without a GPU: the simulator runs
the probe kernel itself to the host model's answer (the model expands A with that layout and runs the dense
numerics), the metadata placement is checked by hand on single nibbles, and invalid metadata is a located error.
With the GPU's record (an H200, tests/golden/wgmma_sparse/, ``bash calib/real16_device_run.sh``): every recorded case
against the model, and the probe kernel through the simulator on the first instructions of every combination."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from calib import pipeline as P
from calib.probes import wgmma_sparse as S
from calib.probes.wgmma_ptx import THREADS


def _sim(name, x):
    r = P.execute(S.probe_launch(name, 8, x), "sim", timeout=600)
    assert r.ok, (r.error, r.detail)
    return S.gpu_output(r)


@pytest.mark.parametrize("name", ["sp_e4m3_e5m2_f32", "sp_u8_s8_s32_sat", "sp_f16_f32", "sp_tf32_f32"])
def test_simulator_runs_the_probe_to_the_models_answer(name):
    x = S.gen(name, 8, 0, 2)
    assert np.array_equal(_sim(name, x), S.model(S.SPARSE[name], x))


def test_8bit_metadata_lane_and_bits_by_hand():
    """One nibble at a time: row r, chunk c of the 8-bit forms is lane 4 (r % 8) + (r // 8 % 2) + 2 (c // 8) of
    warp r // 16, bits 4 (c % 8) .. +3 (CUTLASS ELayout_64x64: thread stride (8 rows, 2048 = 32 columns))."""
    combo = S.SPARSE["sp_s8_s8_s32"]
    for row, chunk in [(0, 0), (9, 3), (17, 8), (63, 15), (40, 9)]:
        nib = np.zeros((64, 16), np.int64)
        nib[row, chunk] = 0b1101
        e = S.meta_words(combo, nib, False, np.zeros(THREADS, np.int64))
        lane = 32 * (row // 16) + 4 * (row % 8) + (row // 8) % 2 + 2 * (chunk // 8)
        assert np.nonzero(e)[0].tolist() == [lane]
        assert int(e[lane]) == 0b1101 << (4 * (chunk % 8))


def test_f16_metadata_lane_and_bits_by_hand():
    """f16 (K = 32): row r, chunk c is lane 4 (r % 8) + 2 sel + c // 4, bits 16 (r // 8 % 2) + 4 (c % 4)."""
    combo = S.SPARSE["sp_f16_f32"]
    for sel in (False, True):
        for row, chunk in [(0, 0), (9, 5), (30, 7)]:
            nib = np.zeros((64, 8), np.int64)
            nib[row, chunk] = 0b0100
            e = S.meta_words(combo, nib, sel, np.zeros(THREADS, np.int64))
            lane = 32 * (row // 16) + 4 * (row % 8) + 2 * sel + chunk // 4
            assert np.nonzero(e)[0].tolist() == [lane]
            assert int(e[lane]) == 0b0100 << (16 * ((row // 8) % 2) + 4 * (chunk % 4))


def test_invalid_8bit_metadata_is_a_located_error():
    from tcsim.isa.errors import VerifyError
    from tcsim.launch import run_launch
    name = "sp_s8_u8_s32"
    x = S.gen(name, 8, 0, 1)
    x["e"][0, 5] = 0x00000005           # nibble 0b0101 (equal indices) in lane 5 of warp 0, which the 8-bit forms read
    with pytest.raises(VerifyError, match="sp-meta nibble 0b0101 .lane 5"):
        run_launch(S.probe_launch(name, 8, x))


def _golden():
    if not (S.GOLDEN / S.DATA).exists():
        pytest.skip("no GPU record yet: bash calib/real16_device_run.sh, then python -m calib.probes.wgmma_sparse "
                    "install --gpu <its r16 folder>")
    return S.load()


def test_record_provenance():
    meta, arrays = _golden()
    assert meta["gpu"].startswith(("NVIDIA H100", "NVIDIA H200")) and meta["command"].startswith(
        "python -m calib.probes.wgmma_sparse device")
    assert set(meta["combos"]) == set(S.SPARSE)
    for name, ent in meta["combos"].items():
        for N in map(str, S.INSTRUCTIONS):
            assert "error" not in ent[N], (name, N, ent[N])
            assert ent[N]["ptx_sha256"] == P.sha256(S.probe_ptx(name, int(N))), f"{name} n{N}: the probe changed"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(S.SPARSE))
def test_model_reproduces_every_recorded_case(name):
    meta, arrays = _golden()
    for N in S.INSTRUCTIONS:
        x = S.gen(name, N)
        assert S.input_digest(x) == meta["combos"][name][str(N)]["in_sha256"], "the inputs changed"
        gpu = arrays[f"{name}/n{N}/d_xor_model"] ^ S.model(S.SPARSE[name], x)
        assert hashlib.sha256(np.ascontiguousarray(gpu).tobytes()).hexdigest() == \
            meta["combos"][name][str(N)]["gpu_out_sha256"]
        assert not arrays[f"{name}/n{N}/d_xor_model"].any(), f"{name} n{N}: the model differs from the GPU"


#: one combination of each family runs in CI; the rest with -m slow
QUICK = ("sp_f16_f32", "sp_tf32_f32", "sp_e4m3_e5m2_f16", "sp_u8_s8_s32_sat")


@pytest.mark.parametrize("name", [n if n in QUICK else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(S.SPARSE)])
def test_simulator_gives_the_gpus_bits(name):
    """The probe kernel through the simulator, first instruction of every combination (A from SMEM or registers,
    as drawn), against the GPU's output."""
    meta, arrays = _golden()
    x = S.gen(name, 8, 0, 1)
    want = arrays[f"{name}/n8/d_xor_model"][:1] ^ S.model(S.SPARSE[name], x)
    assert np.array_equal(_sim(name, x), want)
