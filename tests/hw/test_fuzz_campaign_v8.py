"""The generator-v8 campaign (tests/golden/fuzz_campaign/h200_v8_seeds_800000_813695.npz) and the v7 leftovers: the
ptxas 13.0 behaviours diagnosed from their SASS, each checked bit for bit against GPU bytes kept in the records
(issue 16)."""
from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from calib.fuzz.explain import REWRITES
from calib.fuzz.generator import generate
from calib.fuzz.replay import replay_explained
from calib.fuzz.runner import run_sim
from tcsim.isa.lint import notes
from tcsim.isa.parser import parse

ROOT = Path(__file__).resolve().parents[1] / "golden" / "fuzz_campaign"
REPRO = ROOT / "v8_f16_sat_after_int_sat"


def _kept(stem, seed):
    from calib.fuzz.record import load
    z, meta = load(ROOT / f"{stem}.npz")
    return bytes(z[f"s{seed}"]), meta.get("generator", 1)


def _changed(before: str, after: str) -> list:
    return [d for d in difflib.ndiff(before.splitlines(), after.splitlines()) if d[0] in "+-"]


def test_f16_sat_after_int_sat_follows_the_sass():
    """The rewrite drops ``.sat`` exactly where ptxas 13.0's SASS of the reproducer has no clamp: the two widenings
    of the ``cvt.sat.s16.s32`` result (bare ``F2F.F64.F16`` / ``HADD2.F32`` of the I2I.S16.S32.SAT register), not
    those of the loaded value or of ``cvt.s16.s32`` (DSETP.MAX/MIN, FADD.SAT); the lint check notes the same two."""
    ptx = (REPRO / "repro.ptx").read_text()
    sass = (REPRO / "repro.sass").read_text()
    sat = re.search(r"I2I\.S16\.S32\.SAT (R\d+),", sass).group(1)
    assert re.search(rf"F2F\.F64\.F16 R\d+, {sat} ;", sass) and re.search(rf"HADD2\.F32 R\d+, -RZ, {sat}\.H0_H0", sass)
    assert sass.count("DSETP.MAX") == sass.count("DSETP.MIN") == 1 and "FADD.SAT" in sass   # the two controls
    assert _changed(ptx, REWRITES["f16-sat-after-int-sat"](ptx)) == [
        "- \tcvt.sat.f64.f16 %rd2, %h1;", "+ \tcvt.f64.f16 %rd2, %h1;",
        "- \tcvt.sat.f32.f16 %r1, %h1;", "+ \tcvt.f32.f16 %r1, %h1;"]
    noted = notes(parse(ptx), checks=["f16-sat-after-int-sat"])
    lines = ptx.splitlines()
    assert [lines[n.loc.line - 1].strip() for n in noted] == ["cvt.sat.f64.f16 %rd2, %h1;",
                                                              "cvt.sat.f32.f16 %r1, %h1;"]
    # a guarded writer, or a label between (another path may reach the cvt), is left alone
    guarded = ptx.replace("\tcvt.sat.s16.s32 %h1, %r0;", "\tsetp.ne.u32 %p9, %r0, 0;\n\t@%p9 cvt.sat.s16.s32 %h1, %r0;")
    assert REWRITES["f16-sat-after-int-sat"](guarded) == guarded
    joined = ptx.replace("\tcvt.sat.f32.f16 %r1, %h1;", "$L_j:\n\tcvt.sat.f32.f16 %r1, %h1;")
    assert _changed(joined, REWRITES["f16-sat-after-int-sat"](joined)) == [        # only the f64 one
        "- \tcvt.sat.f64.f16 %rd2, %h1;", "+ \tcvt.f64.f16 %rd2, %h1;"]


def test_v8_program_801740_explained_bit_for_bit():
    """801740: ``cvt.sat.s16.s32 %h0, %r10`` then ``cvt.sat.f64.f16 %rd5, %h0``; the H200 stored -0.0, NaNs and
    values outside [0, 1] where tcsim clamps (%rd5 of 119 threads); without the .sat every byte is the GPU's."""
    gpu, gv = _kept("h200_v8_seeds_800000_813695", 801740)
    prog = generate(801740, version=gv)
    assert run_sim(prog).output != gpu
    assert replay_explained(prog, "diagnosed:f16-sat-after-int-sat") == gpu
    assert [n.loc.line for n in notes(parse(prog.render()), checks=["f16-sat-after-int-sat"])] == [229]


def test_v7_program_703656_contraction_keeps_the_overwritten_factor():
    """703656: ``mul.bf16 %h1, %h3, %h1`` then ``sub.bf16 %h3, %h2, %h1``; ptxas 13.0 contracts them into
    ``HFMA2.BF16_V2 R16, -R21.H0_H0, R16.H0_H0, R22.H0_H0`` reading the factor %h1 from before the mul (the mul's
    own result is never formed), so a product too small for bf16 gives 0 - tiny = -0 (0x8000) where tcsim, rounding
    the product to +0 first, gives +0: ``mul-add-contracted`` with the factor kept reproduces every byte."""
    gpu, gv = _kept("h100_v7_seeds_700000_713999", 703656)
    prog = generate(703656, version=gv)
    assert run_sim(prog).output != gpu
    assert replay_explained(prog, "diagnosed:mul-add-contracted") == gpu
    text = prog.render()
    assert _changed(text, REWRITES["mul-add-contracted"](text))[2:] == [
        "- \tmul.bf16 %h1, %h3, %h1;", "+ \tmov.b16 %xc16_1, %h1; mul.bf16 %h1, %h3, %h1;",
        "- \tsub.bf16 %h3, %h2, %h1;", "+ \txor.b16 %xc16_0, %h3, 0x8000; fma.rn.bf16 %h3, %xc16_0, %xc16_1, %h2;"]


@pytest.mark.parametrize("seed", [801378, 812905])
def test_v8_jit_crashes_are_ptxas_crashes(seed):
    """The campaign's two GPU errors are the driver's JIT dying on the program (JIT_CRASH); ptxas 13.0 itself
    segfaults on both (checked here where ptxas is installed), and tcsim checks and runs them: a refusal of the
    toolchain, not a disagreement of the simulator."""
    import shutil
    import subprocess
    from calib.fuzz.record import load

    _, meta = load(ROOT / "h200_v8_seeds_800000_813695.npz")
    assert meta["errors"][str(seed)].startswith("JIT_CRASH")
    prog = generate(seed, version=meta["generator"])
    assert run_sim(prog).ok
    if shutil.which("ptxas") is None:
        pytest.skip("no ptxas here")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "p.ptx"
        src.write_text(prog.render())
        r = subprocess.run(["ptxas", "-arch=sm_90a", str(src), "-o", str(Path(d) / "p.cubin")], capture_output=True,
                           timeout=120)
    assert r.returncode == -11, (r.returncode, r.stderr[-300:])     # SIGSEGV


@pytest.mark.parametrize("stem, seed, name, repro", [
    ("h100_v7_seeds_700000_713999", 712279, "sat-add-consts-folded", "v7_sat_add_consts_folded"),
    ("h200_v8_seeds_800000_813695", 813359, "shfl-pred-uniform", None),
])
def test_hash_only_programs_explained_by_their_recorded_hash(stem, seed, name, repro):
    """Diagnosed from the whole outputs re-run on the H200 (calib/real16_rerun_run.sh; the campaigns kept only a
    128-bit hash): 712279's ``add.u32 %r7, %r9, 0xA47784C7`` / ``add.sat.s32 %r3, 0x7FFFFFFF, %r7`` saturates
    ``%r9 + 0x247784C6`` on the GPU (the reproducer's SASS: ``VIADD R5, R0, 0x247784c6``); 813359's
    ``shfl.sync.bfly.b32 %r2|%p2, %r1, 31, 0x7`` predicate is the warp's OR (``VOTEU.ANY UP0, P0``).  Each
    explanation reproduces the recorded hash, the plain simulator does not, and the lint check notes the
    instruction."""
    from calib.fuzz.record import _h, load

    _, meta = load(ROOT / f"{stem}.npz")
    prog = generate(seed, version=meta["generator"])
    assert _h(run_sim(prog).output) != meta["gpu_sha"][str(seed)]
    assert _h(replay_explained(prog, f"diagnosed:{name}")) == meta["gpu_sha"][str(seed)]
    assert notes(parse(prog.render()), checks=[name])
    if repro:
        sass = (ROOT / repro / "repro.sass").read_text()
        assert "VIADD R5, R0, 0x247784c6" in sass and sass.count("SEL R5, R5, 0x") == 2
        ptx = (ROOT / repro / "repro.ptx").read_text()
        assert "add.sat.s32 %r2, %r0, 0x247784C6;" in REWRITES[name](ptx)


def test_tf32_of_half2_note_follows_the_sass():
    """808497 (lint-noted, no executable model: the upper half is whatever the register ptxas merges into held):
    the reproducer's SASS computes only the low lane of the half2 result cvt.rn.tf32.f32 reads (``.H0_H0`` and a
    PRMT into a register nothing wrote) and the whole value for cvt.rna; the check notes the first only."""
    ptx = (ROOT / "v8_tf32_of_half2" / "repro.ptx").read_text()
    sass = (ROOT / "v8_tf32_of_half2" / "repro.sass").read_text()
    m = re.search(r"HMUL2\.BF16_V2 (R\d+), R\d+\.H0_H0, R\d+\.H0_H0 ;", sass)
    merged = re.search(rf"PRMT (R\d+), {m.group(1)}, 0x7610, (R\d+) ;", sass)
    assert merged.group(1) == merged.group(2) and f"F2FP.TF32.F32.PACK_B {merged.group(1)}" in sass
    written = [ln for ln in sass.splitlines() if re.search(rf"\s{merged.group(1)},", ln.split(";")[0])]
    assert len(written) == 2                    # the PRMT and the F2FP: nothing else writes the merged register
    lines = ptx.splitlines()
    noted = notes(parse(ptx), checks=["tf32-of-half2"])
    assert [lines[n.loc.line - 1].strip() for n in noted] == ["cvt.rn.tf32.f32 %r3, %r2;"]
    assert [n.loc.line for n in notes(parse(generate(808497, version=8).render()), checks=["tf32-of-half2"])] == [99]
