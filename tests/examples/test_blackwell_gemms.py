"""The Blackwell GEMM examples of issue 4 item 6 (c) and (d): ``nvfp4_gemm`` (the seed's block-scaled nvfp4
warp-specialized GEMM: 6 warps, an N-stage full/empty mbarrier pipeline, tcgen05.cp.32x128b.warpx4 scale factors,
tcgen05.mma.kind::mxf4nvf4.block_scale.block16, f16 epilogue through tcgen05.ld.16x256b) and ``cta_pair_gemm`` (a
``.cta_group::2`` M = 256 GEMM on a 2-CTA cluster).

Every variant passes its example's check -- bit for bit against the numerics oracle chained as the kernel issues
its MMAs, and against an independent float64 product (nvfp4: within the stated bound, or equal after rounding to
f16 with power-of-two scales; the pair: exactly for integer inputs) -- and gives byte-identical outputs under
scheduler seeds None / 1 / 2 and under other TMA / tensor-pipe timings (DESIGN.md principle 5).  ``ptxas
-arch=sm_100a`` accepts both .ptx files (skipped without ptxas) and every mutated kernel of the negative controls,
which must fail the check or stop with a located tcsim diagnostic."""
from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.descriptors import InstrDescriptor, InstrDescriptorBlockScaled
from tcsim.isa.errors import TcsimError
from tcsim.agents.tensor_pipe import TensorPipeParams
from tcsim.agents.tma import TmaParams
from tcsim.cli import main
from kernel_checks import fails_or_diagnosed, mutation_is_caught, run_checked
from tcsim.launch import run_launch

import tcsim.examples.cta_pair_gemm as pair
import tcsim.examples.nvfp4_gemm as nvfp4

ROOT = Path(__file__).resolve().parents[2]
SCHED_SEEDS = (None, 1, 2)
#: other timing configurations: a slow TMA, a slow tensor pipe, a narrow TMA with slow MMA issue
TIMINGS = {"slow_tma": (TmaParams(latency=3000), None),
           "slow_mma": (None, TensorPipeParams(mma_latency=2000, cp_latency=500)),
           "narrow_tma": (TmaParams(latency=1, bytes_per_cycle=16), TensorPipeParams(mma_cycles_per_n=4))}


def _run_checked(mod, launch, tma=None, pipe=None, **kw):
    return run_checked(mod, launch, tma_params=tma, tensor_pipe_params=pipe, **kw)


def _bytes(result):
    return [a.view(np.uint8).copy() for a in result.outputs if isinstance(a, np.ndarray)]


def _identical(runs):
    first = _bytes(runs[0])
    for r in runs[1:]:
        for a, b in zip(first, _bytes(r)):
            assert np.array_equal(a, b)


# ptxas and `tcsim check` of these examples: tests/examples/test_tcgen05_examples.py (NEW_PTX)


@pytest.mark.parametrize("name", ["nvfp4_gemm", "cta_pair_gemm"])
def test_tcsim_run_example(name, capsys):
    assert main(["run", str(ROOT / "examples" / f"{name}.py"), "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "[sim] PASS" in out and "bit-exact" in out


# ------------------------------------------------------------------------------------------------ nvfp4: formats
def test_nvfp4_decoders_agree_with_ml_dtypes():
    """The example's own numpy decoders (used for the float64 reference) against ml_dtypes' e2m1 / e4m3."""
    codes = np.arange(16, dtype=np.uint8)
    assert np.array_equal(nvfp4.e2m1_to_float(codes),
                          codes.view(ml_dtypes.float4_e2m1fn).astype(np.float64))
    sf = np.arange(0x7F, dtype=np.uint8)                # every non-NaN ue4m3 code
    assert np.array_equal(nvfp4.ue4m3_to_float(sf), sf.view(ml_dtypes.float8_e4m3fn).astype(np.float64))
    assert np.isnan(nvfp4.ue4m3_to_float(np.array([0x7F, 0xFF]))).all()
    assert nvfp4.ue4m3_to_float(np.array([0xB8]))[0] == 1.0     # the sign bit of a ue4m3 scale is ignored


def test_nvfp4_packing_and_scale_chunks():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 16, (128, 128), dtype=np.uint8)
    packed = nvfp4.pack_fp4(codes)
    assert packed.shape == (128, 64) and packed[5, 3] == codes[5, 6] | (codes[5, 7] << 4)   # element 2i low
    assert np.array_equal(nvfp4.unpack_fp4(packed), codes)
    sf = rng.integers(0, 256, (256, 8), dtype=np.uint8)          # 2 row blocks x 2 K blocks
    ch = nvfp4.sf_to_chunks(sf)
    assert ch.shape == (2, 2, 512)
    for r, s in ((0, 0), (37, 6), (100, 3), (255, 7), (130, 1)):  # tcgen05_layouts.md (c): (r%32)*16 + (r/32)*4 + s
        b, rr, kb, ss = r // 128, r % 128, s // 4, s % 4
        assert ch[b, kb, (rr % 32) * 16 + (rr // 32) * 4 + ss] == sf[r, s]
    assert np.array_equal(nvfp4.chunks_to_sf(ch), sf)
    assert not np.array_equal(nvfp4.sf_to_linear_chunks(sf), ch)


def test_nvfp4_instruction_descriptor_and_tensor_maps():
    d = nvfp4.instr_descriptor()
    assert d.encode() == nvfp4.IDESC == 0x08400480
    assert (d.m, d.n, d.a_format("mxf4nvf4"), d.b_format("mxf4nvf4"), d.scale_format, d.sfa_id, d.sfb_id) == \
        (128, 256, "e2m1", "e2m1", "ue4m3", 0, 0)
    assert InstrDescriptorBlockScaled.decode(0x08400480) == d
    text = nvfp4.PTX.read_text()
    assert "mov.u32 \t%r50, 0x08400480;" in text
    assert "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16" in text
    assert text.count("\ttcgen05.cp.cta_group::1.32x128b.warpx4 \t") == 3
    launch = nvfp4.make_launch(k=256, stages=3)
    tma, tmb = launch.args[5], launch.args[6]
    assert (tma.global_dims, tma.global_strides, tma.box_dims) == ((16, 128, 8), (128, 16), (16, 128, 2))
    assert (tmb.global_dims, tmb.box_dims) == ((16, 256, 8), (16, 256, 2))
    assert tma.box_bytes() + tmb.box_bytes() + 3 * 512 == nvfp4.TX_BYTES == 13824
    assert launch.block == (192, 1, 1) and launch.dynamic_smem == 128 + 3 * 16384


def test_nvfp4_reference_is_the_k64_chain():
    """Chaining K=64 MMAs equals the oracle's own block chaining over the whole K (its block is 64); the result
    is far from zero and near the float64 product."""
    from tcsim.numerics.tensor_core import mma_block_scaled, tc_params

    launch = nvfp4.make_launch(seed=2, k=256)
    a, bt, sfa, sfb = nvfp4.operands(launch)
    whole = mma_block_scaled(a, np.ascontiguousarray(bt.T), np.zeros((128, 256), np.uint32), sfa,
                             np.ascontiguousarray(sfb.T), "e2m1", "e2m1", "ue4m3", 16,
                             tc_params("sm_100a", "tcgen05", "e2m1", kind="mxf4nvf4"))
    f32 = nvfp4.reference_f32(launch)
    assert np.array_equal(np.asarray(whole, np.uint32), f32.view(np.uint32))
    exact = nvfp4.float64_product(launch)
    assert np.abs(exact).max() > 100
    assert np.all(np.abs(f32 - exact) <= 4 * 2.0 ** -22 * (np.abs(nvfp4.scaled_operands(launch)[0]) @
                                                            np.abs(nvfp4.scaled_operands(launch)[1]).T))
    assert np.array_equal(nvfp4.reference(launch), f32.astype(np.float16))


@pytest.mark.parametrize("bad", [dict(k=96), dict(k=0), dict(stages=1), dict(stages=5), dict(scales="e8"),
                                 dict(m_tiles=0), dict(sf_layout="rowmajor")])
def test_nvfp4_rejects_what_the_kernel_cannot_do(bad):
    with pytest.raises(ValueError):
        nvfp4.make_launch(**bad)


# ------------------------------------------------------------------------------------------------ nvfp4: runs
@pytest.mark.parametrize("variant", sorted(nvfp4.VARIANTS))
def test_nvfp4_variant_matches_oracle_and_float64(variant):
    launch = nvfp4.make_launch(seed=11, variant=variant)
    result = _run_checked(nvfp4, launch)
    got = result.outputs[4]
    v = nvfp4.VARIANTS[variant]
    assert got.shape == (128 * v.get("m_tiles", 1), 256 * v.get("n_tiles", 1))
    exact = nvfp4.float64_product(launch)
    if v.get("scales") == "pow2":                       # exact f32 accumulation: D = f16(float64 product)
        assert np.array_equal(got.view(np.uint16), exact.astype(np.float16).view(np.uint16))
    assert np.all(np.abs(got.astype(np.float64) - exact) <= nvfp4.tolerance(launch))


@pytest.mark.parametrize("variant", ["k256_s2", "k128_s2_2x1"])
def test_nvfp4_schedule_independent(variant):
    launch = nvfp4.make_launch(seed=4, variant=variant)
    _identical([_run_checked(nvfp4, launch, seed=s) for s in SCHED_SEEDS])


def test_nvfp4_timing_independent():
    launch = nvfp4.make_launch(seed=6, k=320, stages=2)
    runs = [_run_checked(nvfp4, launch)]
    for tma, pipe in TIMINGS.values():
        runs.append(_run_checked(nvfp4, launch, tma=tma, pipe=pipe))
    _identical(runs)
    assert len({r.stats["cycles"] for r in runs}) == len(runs)      # the timings really differ


def test_nvfp4_check_catches_corrupted_results():
    launch = nvfp4.make_launch(seed=1)
    result = run_launch(launch)
    summary = "\n".join(nvfp4.demo_summary(result, launch))
    assert "idesc 0x08400480" in summary and "scale ue4m3" in summary and "D[  0][  0]" in summary
    d = result.outputs[4]
    d[[0, 1]] = d[[1, 0]]                                  # two rows swapped
    ok, msg = nvfp4.check(result, launch)
    assert not ok and "differ" in msg


def test_nvfp4_wrong_scale_factor_layout_fails():
    """Scale factors stored row-major inside each 512-byte chunk instead of the 32x4x4 layout: the kernel runs
    (tcgen05.cp.warpx4 still writes four identical copies) but computes with the wrong scales."""
    good = nvfp4.make_launch(seed=0)
    bad = nvfp4.make_launch(seed=0, sf_layout="linear")
    assert all(np.array_equal(x, y) for x, y in zip(good.args[:2], bad.args[:2]))
    msg = fails_or_diagnosed(nvfp4, good, bad)
    assert "differ" in msg


NVFP4_MUTATIONS = {
    # the MMA issuer does not wait for full[s]: tcgen05.cp / mma read SMEM before the TMA landed
    "no_full_wait": lambda t: re.sub(r"\$L_wait_full:\n[^\n]*\n[^\n]*\n", "", t),
    # the producer refills a stage without waiting for empty[s]: a second arrive on full[s] in one phase
    "no_empty_wait": lambda t: re.sub(r"\$L_wait_empty:\n[^\n]*\n[^\n]*\n", "", t),
    # the epilogue starts without waiting for done_bar: TMEM is freed under the MMAs
    "no_done_wait": lambda t: re.sub(r"\$L_wait_done:\n[^\n]*\n[^\n]*\n", "", t),
    # the second SFB chunk (B columns 128-255) copied over the first one's columns
    "sfb_same_columns": lambda t: t.replace("tcgen05.cp.cta_group::1.32x128b.warpx4 \t[%r54], %rd21;",
                                            "tcgen05.cp.cta_group::1.32x128b.warpx4 \t[%r53], %rd21;"),
    # SFA copied without the .warpx4 replication (128x128b): the four subpartition copies disagree
    "sfa_not_replicated": lambda t: t.replace("tcgen05.cp.cta_group::1.32x128b.warpx4 \t[%r52], %rd20;",
                                              "tcgen05.cp.cta_group::1.128x128b \t[%r52], %rd20;"),
    # scale type bit 23 = UE8M0: the ue4m3 codes are read as powers of two
    "scale_type_ue8m0": lambda t: t.replace("mov.u32 \t%r50, 0x08400480;", "mov.u32 \t%r50, 0x08C00480;"),
    # A's LBO 1024 instead of 2048: the second 16-byte K chunk is read from the wrong rows
    "a_lbo": lambda t: t.replace("or.b32 \t%r57, %r57, 0x800000;", "or.b32 \t%r57, %r57, 0x400000;"),
    # never accumulate
    "no_accumulate": lambda t: t.replace("setp.ne.u32 \t%p10, %r30, 0;", "setp.ne.u32 \t%p10, %r30, %r30;"),
    # the epilogue addresses TMEM lanes by (warp - 2) instead of warp % 4: outside the warp's lane quadrant; the GPU
    # (release build) routes each load to the warp's own quadrant, so the rows land in the wrong places of D
    "epilogue_quadrant": lambda t: t.replace("and.b32 \t%r60, %r2, 3;", "sub.u32 \t%r60, %r2, 2;"),
    # expect_tx short by the SFB bytes: full[s] never completes
    "short_expect_tx": lambda t: t.replace("[%r37], 13824;", "[%r37], 12288;"),
}


@pytest.mark.parametrize("name", sorted(NVFP4_MUTATIONS))
def test_nvfp4_negative_controls(name):
    msg = mutation_is_caught(nvfp4, nvfp4.make_launch(seed=0, k=256, stages=2), NVFP4_MUTATIONS[name])
    expected = {"no_empty_wait": "over-arrival", "no_done_wait": "not allocated", "sfa_not_replicated": "sf-replicas",
                "epilogue_quadrant": "elements differ",
                "short_expect_tx": "Root cause: [class 3]"}   # a hang on the GPU; tcsim names the expect_tx line
    if name in expected:
        assert expected[name] in msg, msg


# ------------------------------------------------------------------------------------------------ cta pair
def test_pair_instruction_descriptor_and_launch_shape():
    launch = pair.make_launch(seed=0, dtype="bf16", n=128, k_stages=2)
    d = InstrDescriptor.decode(launch.args[5])
    assert (d.m, d.n, d.a_format("f16"), d.d_format) == (256, 128, "bf16", "f32")
    assert launch.grid == (2, 1, 1) and launch.cluster == (2, 1, 1) and launch.block == (128, 1, 1)
    assert pair.make_launch(pairs=2, cluster_size=4).cluster == (4, 1, 1)
    text = pair.PTX.read_text()
    assert re.search(r"^\.explicitcluster$", text, flags=re.M)
    for form in ("tcgen05.alloc.cta_group::2", "tcgen05.mma.cta_group::2.kind::f16",
                 "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster",
                 "tcgen05.dealloc.cta_group::2", ".mbarrier::complete_tx::bytes.cta_group::2"):
        assert form in text
    assert launch.args[3].box_dims == (64, 128) and launch.args[4].box_dims == (64, 64)


@pytest.mark.parametrize("values", ["normal", "int"])
@pytest.mark.parametrize("variant", sorted(pair.VARIANTS))
def test_pair_variant_matches_oracle_and_float64(variant, values):
    launch = pair.make_launch(seed=9, variant=variant, values=values)
    result = _run_checked(pair, launch)
    if values == "int":
        assert np.array_equal(result.outputs[2].astype(np.float64), pair.float64_product(launch))


@pytest.mark.parametrize("variant", ["f16_n256_k192", "f16_n64_k64_2clusters", "bf16_n96_k256_cluster4"])
def test_pair_schedule_independent(variant):
    launch = pair.make_launch(seed=4, variant=variant)
    _identical([_run_checked(pair, launch, seed=s) for s in SCHED_SEEDS])


def test_pair_timing_independent():
    launch = pair.make_launch(seed=5, dtype="bf16", n=128, k_stages=3)
    runs = [_run_checked(pair, launch)] + [_run_checked(pair, launch, tma=tma, pipe=pipe)
                                           for tma, pipe in TIMINGS.values()]
    _identical(runs)


def test_pair_both_ctas_hold_their_half():
    """Rows 0-127 come from the even CTA's TMEM, rows 128-255 from the odd CTA's: zeroing the odd CTA's A half
    zeroes exactly the lower half of D."""
    launch = pair.make_launch(seed=2, n=64, k_stages=1)
    a = launch.args[0]
    a[128:] = 0
    result = _run_checked(pair, launch)
    d = result.outputs[2]
    assert np.all(d[128:] == 0) and np.all(d[:128] != 0)


@pytest.mark.parametrize("bad", [dict(n=48), dict(n=288), dict(k_stages=5), dict(k_stages=0), dict(dtype="f32"),
                                 dict(pairs=0), dict(cluster_size=3), dict(pairs=1, cluster_size=4)])
def test_pair_rejects_what_the_kernel_cannot_do(bad):
    with pytest.raises(ValueError):
        pair.make_launch(**bad)


def test_pair_without_a_cluster_is_diagnosed():
    """Launched without clusters, the pair allocation has no peer: a located SyncError, not a traceback."""
    launch = pair.make_launch(seed=0, n=64, k_stages=1)
    launch.cluster = (1, 1, 1)
    with pytest.raises(TcsimError) as e:
        run_launch(launch)
    assert "tcgen05.alloc.cta_group::2" in str(e.value) and "peer" in str(e.value) and e.value.loc is not None


PAIR_MUTATIONS = {
    # each CTA loads B rows 0..N/2 (no v N/2 offset): the odd CTA supplies the wrong half of B
    "b_not_split": (lambda t: t.replace("mul.lo.u32 \t%r25, %r16, %r7;", "mov.u32 \t%r25, 0;"), None),
    # both CTAs load A rows 0..127 of the tile
    "a_not_split": (lambda t: t.replace("shl.b32 \t%r20, %r16, 7;", "mov.u32 \t%r20, 0;"), None),
    # each CTA signals its own full[s]: the leader's expect_tx (both CTAs' bytes) is never met
    "own_full_barrier": (lambda t: t.replace("add.u32 \t%r28, %r27, %r21;", "add.u32 \t%r28, %r27, %r10;"), "deadlock"),
    # TMA without .cta_group::2: the mbarrier must then be in the destination CTA
    "tma_without_cta_group": (lambda t: t.replace(".mbarrier::complete_tx::bytes.cta_group::2",
                                                  ".mbarrier::complete_tx::bytes"), "must be in the destination CTA"),
    # the commit arrives only on the even CTA's mma_bar: the odd CTA waits forever
    "commit_not_multicast": (lambda t: t.replace(
        "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 \t[%r11], %rs1;",
        "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 \t[%r11];"), "deadlock"),
    # the MMA does not wait for full[s] (seen with a slow TMA: the MMA reads SMEM before the loads land)
    "no_full_wait": (lambda t: re.sub(r"\$L_wait_full:\n[^\n]*\n[^\n]*\n", "", t), None),
}


@pytest.mark.parametrize("name", sorted(PAIR_MUTATIONS))
def test_pair_negative_controls(name):
    mutate, expected = PAIR_MUTATIONS[name]
    msg = mutation_is_caught(pair, pair.make_launch(seed=0, n=128, k_stages=2), mutate,
                             tma_params=TmaParams(latency=3000))
    if expected:
        assert expected in msg, msg
