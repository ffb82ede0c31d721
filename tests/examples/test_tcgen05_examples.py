"""The tcgen05 (sm_100a) examples: ``gemm_async`` (the Blackwell GEMM seed, ``tcsim demo``'s default kernel) and
``tcgen05_walkthrough`` (the tcgen05.mma walkthrough seed).

Every variant passes its example's check -- bit for bit against tcsim's numerics model computed from the input
arrays, and against a float64 numpy product (exactly for integer inputs) -- and its D equals, bit for bit, the D
that mmasim computed for the same launch (recorded by ``python tests/numerics/oracle_replay.py record-examples``; so
the example's expected values are backed by the second oracle, not only by the model under test), and gives
byte-identical outputs
under scheduler seeds None / 1 / 2 (DESIGN.md principle 5).  ``ptxas -arch=sm_100a`` accepts every new .ptx
(skipped without ptxas), and negative controls show the checks are not vacuous (a wrong SBO, a wrong K
advance, an MMA issued before its TMA stage landed, a wrong major-ness bit).  ``tcsim demo`` runs gemm_async
and prints the decoded summary; ``--kernel mma_gemm`` still runs the former demo; ``--backend gpu`` on a GPU
that is not an sm_100 prints one line."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.descriptors import InstrDescriptor
from tcsim.cli import main
from tcsim.isa.ptxas import PTXAS
from kernel_checks import assert_assembles, mutation_is_caught, run_checked
from tcsim.launch import run_launch

import tcsim.examples.gemm_async as gemm_async
import tcsim.examples.tcgen05_walkthrough as walkthrough

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "numerics"))
import oracle_replay  # noqa: E402  (mmasim's recorded D of the gemm_async launches)

ROOT = Path(__file__).resolve().parents[2]
SCHED_SEEDS = (None, 1, 2)
NEW_PTX = ("gemm_async.ptx", "tcgen05_walkthrough.ptx", "nvfp4_gemm.ptx", "cta_pair_gemm.ptx")


def _outputs_identical(mod, launch):
    runs = [run_checked(mod, launch, seed=s) for s in SCHED_SEEDS]
    for r in runs[1:]:
        for a, b in zip(runs[0].outputs, r.outputs):
            if isinstance(a, np.ndarray):
                assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
    return runs


# ------------------------------------------------------------------------------------------------ ptxas
@pytest.mark.parametrize("name", NEW_PTX)
def test_ptxas_accepts_new_example(name):
    if PTXAS is None:
        pytest.skip("ptxas not on PATH")
    text = (ROOT / "examples" / name).read_text()
    assert re.search(r"^\.target sm_100a$", text, flags=re.M)
    version = re.search(r"^\.version (\d+)\.(\d+)$", text, flags=re.M)
    assert version and (int(version.group(1)), int(version.group(2))) >= (8, 7)
    assert_assembles(text)


@pytest.mark.parametrize("name", NEW_PTX)
def test_tcsim_check_new_example(name, capsys):
    assert main(["check", str(ROOT / "examples" / name)]) == 0
    assert "OK" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ gemm_async
@pytest.mark.parametrize("values", ["normal", "int"])
@pytest.mark.parametrize("variant", sorted(gemm_async.VARIANTS))
def test_gemm_async_variant_matches_oracle_and_float64(variant, values):
    """normal inputs: D is mmasim's recorded D bit for bit (and the check's reference equals it too); int inputs:
    D is exactly the float64 product."""
    launch = gemm_async.make_launch(seed=oracle_replay.GEMM_ASYNC_SEED, variant=variant, values=values)
    v = gemm_async.VARIANTS[variant]
    d = InstrDescriptor.decode(launch.args[5])
    assert (d.m, d.n, d.a_format("f16"), d.b_format("f16"), d.d_format) == (v["m"], v["n"], v["dtype"], v["dtype"],
                                                                             "f32")
    result = run_checked(gemm_async, launch)
    if values == "int":                                     # exact: no tolerance anywhere
        assert np.array_equal(result.outputs[2].astype(np.float64), gemm_async.float64_product(launch))
    else:                                                   # the second oracle's D for this very launch
        a, bt, _ = gemm_async.operands(launch)
        want = oracle_replay.recorded_example("gemm_async", variant, a, bt)
        got = result.outputs[2].view(np.uint32)
        assert np.array_equal(got, want), f"{int((got != want).sum())} elements differ from mmasim's D"
        assert np.array_equal(gemm_async.reference(launch).view(np.uint32), want)


@pytest.mark.parametrize("variant", sorted(gemm_async.VARIANTS))
def test_gemm_async_schedule_independent(variant):
    _outputs_identical(gemm_async, gemm_async.make_launch(seed=4, variant=variant))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k_stages", [1, 2])
def test_gemm_async_seeds_and_stage_counts(seed, k_stages):
    dtype = "bf16" if seed % 2 else "f16"
    run_checked(gemm_async, gemm_async.make_launch(seed=seed, dtype=dtype, k_stages=k_stages))


def test_gemm_async_default_is_the_seed_shape():
    launch = gemm_async.make_launch()
    a, bt, fmt = gemm_async.operands(launch)
    assert (a.shape, bt.shape, fmt, launch.args[6]) == ((128, 192), (128, 192), "f16", 3)
    assert launch.args[5] == InstrDescriptor.for_kind("f16", 128, 128, "f16", "f16", "f32").encode() == 0x08200010
    assert launch.block == (128, 1, 1) and launch.dynamic_smem == 1024 + 6 * 16384


def test_gemm_async_reference_is_the_k16_chain():
    """The reference chains K=16 MMAs; the oracle's own block chaining (K = 192 in one call) must agree, the
    result must be near the float64 product and not trivially zero."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    launch = gemm_async.make_launch(seed=2, dtype="bf16")
    a, bt, fmt = gemm_async.operands(launch)
    want = gemm_async.reference(launch)
    whole = mma_float(a.view(np.uint16), np.ascontiguousarray(bt.T).view(np.uint16), np.zeros((128, 128), np.uint32),
                      "bf16", "bf16", "f32", tc_params("sm_100a", "tcgen05", "bf16", kind="f16"))
    assert np.array_equal(np.asarray(whole, np.uint32), want.view(np.uint32))
    assert np.abs(want).max() > 10
    assert np.allclose(want, gemm_async.float64_product(launch), rtol=0, atol=1e-3)


def test_gemm_async_check_catches_a_transposed_result():
    launch = gemm_async.make_launch(seed=1, m=128, n=128, values="int")
    result = run_launch(launch)
    result.outputs[2][...] = result.outputs[2].T.copy()
    ok, msg = gemm_async.check(result, launch)
    assert not ok and "differ" in msg


@pytest.mark.parametrize("bad", [dict(m=256), dict(n=96, m=64), dict(n=160), dict(k_stages=4), dict(dtype="f32")])
def test_gemm_async_rejects_shapes_the_kernel_cannot_do(bad):
    with pytest.raises(ValueError):
        gemm_async.make_launch(**bad)


MUTATIONS = {
    # SBO 512 instead of 1024: the MMA reads 8-row groups at the wrong stride
    "sbo": lambda t: t.replace("mov.u32 \t%r30, 0x40004040;", "mov.u32 \t%r30, 0x40004020;"),
    # K slices 64 bytes apart instead of 32 (A only)
    "k_advance": lambda t: t.replace("add.s64 \t%rd10, %rd10, 2;", "add.s64 \t%rd10, %rd10, 4;"),
    # the issuer does not wait for full[s]: the MMA reads SMEM before the TMA landed
    "no_full_wait": lambda t: re.sub(r"\$L_wait_full:\n[^\n]*\n[^\n]*\n", "", t),
    # never accumulate: every MMA overwrites D
    "no_accumulate": lambda t: t.replace("[%r14], %rd10, %rd11, %r4, 1;", "[%r14], %rd10, %rd11, %r4, 0;"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_gemm_async_negative_controls(name):
    mutation_is_caught(gemm_async, gemm_async.make_launch(seed=0), MUTATIONS[name])


# ------------------------------------------------------------------------------------------------ walkthrough
@pytest.mark.parametrize("values", ["normal", "int"])
@pytest.mark.parametrize("accumulate", [True, False])
def test_walkthrough_matches_oracle_and_float64(accumulate, values):
    launch = walkthrough.make_launch(seed=7, accumulate=accumulate, values=values)
    result = run_checked(walkthrough, launch)
    if values == "int":
        a, b, c = walkthrough.operands(launch)
        exact = a.astype(np.float64) @ b.astype(np.float64) + (0 if c is None else c.astype(np.float64))
        assert np.array_equal(result.outputs[3].astype(np.float64), exact)


@pytest.mark.parametrize("accumulate", [True, False])
def test_walkthrough_schedule_independent(accumulate):
    _outputs_identical(walkthrough, walkthrough.make_launch(seed=3, accumulate=accumulate))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_walkthrough_seeds(seed):
    run_checked(walkthrough, walkthrough.make_launch(seed=seed))


def test_walkthrough_enable_input_d_selects_c():
    r_acc = run_launch(walkthrough.make_launch(seed=5, accumulate=True)).outputs[3]
    r_new = run_launch(walkthrough.make_launch(seed=5, accumulate=False)).outputs[3]
    assert not np.array_equal(r_acc, r_new)


def test_walkthrough_instruction_descriptor_and_seed_kind_word(capsys):
    """The PTX passes the Table 42 descriptor 0x04208490 (M 64, N 128, bf16, A MN-major); the seed's 0xC1 does not
    decode to a usable descriptor, and the example says so in its output."""
    d = walkthrough.instr_descriptor()
    assert d.encode() == walkthrough.IDESC == 0x04208490
    assert "mov.u32 \t%r33, 0x04208490;" in walkthrough.PTX.read_text()
    assert ".collector::a::fill" in walkthrough.PTX.read_text()
    seed = InstrDescriptor.decode(walkthrough.SEED_KIND_WORD)
    assert (seed.m, seed.n, seed.reserved) == (0, 0, 0x40)
    report = walkthrough.kind_word_report()
    assert "0xC1" in report and "M 0, N 0" in report and "not a valid descriptor" in report
    assert "idesc 0x04208490: instruction descriptor {M 64, N 128, D f32, A bf16, B bf16, A MN-major, B K-major}" \
        in report
    from tcsim.examples._common import example_main
    assert example_main(walkthrough, ["--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "seed kind word 0xC1" in out


WALK_MUTATIONS = {
    # A read as K-major: the idesc without bit 15
    "a_major": lambda t: t.replace("mov.u32 \t%r33, 0x04208490;", "mov.u32 \t%r33, 0x04200490;"),
    # B descriptor with 64B swizzle (code 4) instead of 32B (code 6)
    "b_swizzle": lambda t: t.replace("0xC0004010", "0x80004010"),
    # the readback ignores the layout-F half split (offset 0: both half-warps read the same columns)
    "ld_offset": lambda t: t.replace("[%r44], 32;\n\ttcgen05.wait::ld", "[%r44], 0;\n\ttcgen05.wait::ld"),
}


@pytest.mark.parametrize("name", sorted(WALK_MUTATIONS))
def test_walkthrough_negative_controls(name):
    mutation_is_caught(walkthrough, walkthrough.make_launch(seed=0), WALK_MUTATIONS[name])


# ------------------------------------------------------------------------------------------------ tcsim run / demo
@pytest.mark.parametrize("name", ["gemm_async", "tcgen05_walkthrough"])
def test_tcsim_run_new_example(name, capsys):
    assert main(["run", str(ROOT / "examples" / f"{name}.py"), "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "[sim] PASS" in out and "bit-exact" in out


def test_demo_runs_gemm_async_and_prints_decoded_summary(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "tcsim demo: tcgen05 gemm_async" in out
    assert "[sim] PASS: D[128,128] f32 = A f16 @ B f16 (K = 192, 12 chained K=16 tcgen05.mma): D equals the " \
           "bit-exact model" in out
    assert "idesc 0x08200010 = instruction descriptor {M 128, N 128, D f32, A f16, B f16, A K-major, B K-major}" \
        in out
    assert "SMEM descriptor {start sX[s] + 32k, LBO 16, SBO 1024, swizzle 128B}" in out
    assert "TMEM: D in columns [256, 384) of a 512-column allocation" in out
    corner = re.search(r"D\[  0\]\[  0\] = ([-+0-9.e]+)", out)
    want = gemm_async.reference(gemm_async.make_launch())
    assert corner and np.float32(float(corner.group(1))) == want[0, 0]


def test_demo_keeps_the_former_kernel(capsys):
    assert main(["demo", "--kernel", "mma_gemm", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "mma.sync" in out and "PASS" in out and "bit-exact" in out


def test_demo_gpu_backend_on_a_non_blackwell_gpu_is_one_line(monkeypatch, capsys):
    """On an H100 the launcher refuses sm_100a PTX (hw.launcher.check_target); demo prints that one line."""
    import tcsim.hw.launcher as L

    def on_h100(launch, **kw):
        from tcsim.isa.parser import parse
        text = launch.ptx.read_text() if isinstance(launch.ptx, Path) else launch.ptx
        L.check_target(parse(text, "demo").arch, (9, 0), "NVIDIA H100 80GB HBM3")
        raise AssertionError("check_target accepted sm_100a on sm_90")
    monkeypatch.setattr(L, "run_on_gpu", on_h100)
    assert main(["demo", "--backend", "gpu"]) == 2
    cap = capsys.readouterr()
    assert cap.err.strip() == ("tcsim: the GPU back end cannot run here: the PTX targets sm_100a, which needs an "
                               "sm_100 GPU; this GPU (NVIDIA H100 80GB HBM3) is sm_90")
    assert "Traceback" not in cap.out + cap.err


# ------------------------------------------------------------------------------------------------ the real GPU
@pytest.mark.gpu
@pytest.mark.parametrize("mod,make", [(gemm_async, lambda: gemm_async.make_launch(seed=0)),
                                      (gemm_async, lambda: gemm_async.make_launch(seed=0, variant="m64n128_bf16")),
                                      (walkthrough, lambda: walkthrough.make_launch(seed=0))])
def test_new_example_on_gpu(mod, make):
    """On an sm_100 GPU: the check passes and the output is byte-identical to the simulator's.  On any other GPU
    the back end must refuse with GpuUnavailable naming sm_100a."""
    hw = pytest.importorskip("tcsim.hw.launcher")
    ok, why = hw.gpu_available()
    if not ok:
        pytest.skip(why)
    launch = make()
    try:
        gpu = hw.run_on_gpu(launch)
    except hw.GpuUnavailable as e:
        assert "sm_100a" in str(e)
        return
    assert gpu.ok, f"{gpu.error}: {gpu.error_detail}"
    ok, msg = mod.check(gpu, launch)
    assert ok, msg
    sim = run_launch(launch, seed=1)
    for a, b in zip(sim.outputs, gpu.outputs):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a.view(np.uint8), np.asarray(b).view(np.uint8))
