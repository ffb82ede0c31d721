"""Generator versions 7 and 8 (calib/fuzz/generator.py V7_AVOIDS, V8's renderer fix) and the explanations of what the
v6 and v7 campaigns found around wgmma (calib/fuzz/explain.py ``wgmma-rs-neg-a-int``, ``wgmma-in-flight-waited``;
isa/lint.py ``wgmma-rs-neg-a``, ``wgmma-rs-chain``), checked bit for bit against GPU bytes kept in
tests/golden/fuzz_campaign (issue 16)."""
from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from calib.fuzz.explain import in_flight_waited, rs_neg_a_int
from calib.fuzz.generator import generate
from tcsim.isa.lint import notes
from tcsim.isa.parser import parse

ROOT = Path(__file__).resolve().parents[1] / "golden" / "fuzz_campaign"
RS = re.compile(r"wgmma\.mma_async\S*\s+\{[^}]*\},\s*\{([^}]*)\},\s*([^;]*);")


def _record(stem):
    from calib.fuzz.record import load
    return load(ROOT / f"{stem}.npz")


@pytest.mark.parametrize("version", [7, 8])
def test_values_reach_wgmma_registers_without_copies(version):
    """Versions 7 and 8 move values between the pools and %wa / %ac only through instructions that make a new value,
    never put imm-scale-a = -1 on a wgmma with A from registers, and (version 8) touch no register of a wgmma in
    flight; the programs are still one warpgroup with RS-form wgmmas."""
    rs = 0
    for seed in (700001, 700004, 700011):
        text = generate(seed, version=version).render()
        lines = [ln.strip() for ln in text.splitlines()]
        assert not [ln for ln in lines if re.match(r"mov\.b(32|64) (%wa|%ac|\S+, %ac|\S+, \{%ac)", ln)], seed
        for a, rest in RS.findall(text):
            rs += 1
            ops = [o.strip() for o in rest.split(",")]
            assert len(ops) < 3 or ops[2] == "1", (seed, rest)          # imm-scale-a (float kinds)
            assert all(r.strip().startswith("%wa") for r in a.split(","))
        assert not notes(parse(text), checks=["wgmma-a-source-reused", "wgmma-acc-copy-clobbered",
                                              "wgmma-rs-neg-a"]), seed
        if version >= 8:
            assert in_flight_waited(text) == text, seed
    assert rs >= 3


def test_version_8_renders_the_waits_version_7_forgot():
    """Program 701553 of the v7 campaign: ``wait_group 3`` with two groups in flight made the v7 renderer forget the
    older one, so a later group's ``xor.b32 %wa0..3`` ran while it still read %wa0..3; version 8 (the same tree)
    waits there, and nothing of it is in flight at any access."""
    v7 = generate(701553, version=7)
    v8 = generate(701553, version=8)
    t7, t8 = v7.render(), v8.render()
    assert in_flight_waited(t7) != t7 and in_flight_waited(t8) == t8
    diff = [d for d in difflib.ndiff(t7.splitlines(), t8.splitlines()) if d[0] in "+-"]
    assert diff == ["+ \twgmma.wait_group.sync.aligned 0;"]
    v7.version = 8
    assert v7.render() == t8


def test_explanation_rewrites():
    """The two rewrites on a hand-written group: integer negation of register A before the fence, imm-scale-a 1;
    a wait before the first instruction touching a register of a group in flight (and none after a wait)."""
    body = ["\t.reg .b32 %wa<8>;", "\tmov.b32 %wa0, %r0;", "\twgmma.fence.sync.aligned;",
            "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%ac0, %ac1, %ac2, %ac3}, {%wa0, %wa1, %wa2, %wa3}, "
            "%rd0, 1, -1, 1, 0;",
            "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%ac0, %ac1, %ac2, %ac3}, %rd1, %rd0, 1, -1, 1, 0, 0;",
            "\twgmma.commit_group.sync.aligned;", "\twgmma.wait_group.sync.aligned 2;", "\txor.b32 %wa1, %r1, 5;",
            "\twgmma.wait_group.sync.aligned 0;", "\tadd.f32 %r2, %ac0, %r2;"]
    text = "\n".join(body)
    neg = rs_neg_a_int(text).split("\n")
    assert neg[0].endswith(" .reg .b32 %xn<4>;")
    assert neg[2] == "\tneg.s32 %xn3, %wa3; neg.s32 %xn2, %wa2; neg.s32 %xn1, %wa1; neg.s32 %xn0, %wa0; " \
                     "wgmma.fence.sync.aligned;"
    assert neg[3].endswith("{%xn0, %xn1, %xn2, %xn3}, %rd0, 1, 1, 1, 0;") and neg[4] == body[4]   # SS form kept
    waited = in_flight_waited(text).split("\n")
    assert waited[7] == "\twgmma.wait_group.sync.aligned 0; xor.b32 %wa1, %r1, 5;"
    assert [i for i, (a, b) in enumerate(zip(body, waited)) if a != b] == [7]
    assert rs_neg_a_int(text.replace("1, -1, 1, 0;", "1, 1, 1, 0;")) == text.replace("1, -1, 1, 0;", "1, 1, 1, 0;")


def test_lint_notes_the_two_ptxas_behaviours():
    """isa/lint.py: ``wgmma-rs-neg-a`` on an RS wgmma with imm-scale-a = -1 (not on the SS form), ``wgmma-rs-chain``
    on an RS wgmma after another of the same group (not after a commit)."""
    def mod(body):
        return ("\n.version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
                "\t.reg .b32 %wa<8>;\n\t.reg .f32 %ac<4>;\n\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd0, [p];\n"
                "\tmov.b32 %wa0, 1; mov.b32 %wa1, 1; mov.b32 %wa2, 1; mov.b32 %wa3, 1;\n"
                "\tmov.b32 %wa4, 1; mov.b32 %wa5, 1; mov.b32 %wa6, 1; mov.b32 %wa7, 1;\n"
                "\tmov.f32 %ac0, 0f00000000; mov.f32 %ac1, 0f00000000; mov.f32 %ac2, 0f00000000;\n"
                "\tmov.f32 %ac3, 0f00000000;\n\twgmma.fence.sync.aligned;\n" + body +
                "\twgmma.wait_group.sync.aligned 0;\n\tret;\n}\n")
    rs = "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%ac0, %ac1, %ac2, %ac3}, {%wa0, %wa1, %wa2, %wa3}, " \
         "%rd0, 1, {s}, 1, 0;\n"
    rs2 = rs.replace("%wa0, %wa1, %wa2, %wa3", "%wa4, %wa5, %wa6, %wa7")
    ss = "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%ac0, %ac1, %ac2, %ac3}, %rd0, %rd0, 1, -1, 1, 0, 0;\n"
    commit = "\twgmma.commit_group.sync.aligned;\n"

    def got(body):
        return sorted((n.loc.line, n.message.split(":")[0]) for n in
                      notes(parse(mod(body)), checks=["wgmma-rs-neg-a", "wgmma-rs-chain"]))
    assert ([k for _, k in got(rs.replace("{s}", "-1") + commit)]
            == ["wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"])
    assert got(rs.replace("{s}", "1") + ss + commit) == []
    chained = got(rs.replace("{s}", "1") + rs2.replace("{s}", "1") + commit)
    assert len(chained) == 1 and "follows another wgmma" in str(notes(parse(mod(rs.replace("{s}", "1") + rs2.replace(
        "{s}", "1") + commit)), checks=["wgmma-rs-chain"])[0])
    assert got(rs.replace("{s}", "1") + commit + rs2.replace("{s}", "1") + commit) == []


def test_v7_in_flight_program_explained_bit_for_bit():
    """v7 campaign program 701553 (the H100's whole output kept in the record): the simulator differs in the
    accumulators of the group whose A registers the program rewrote in flight, and reproduces every byte once
    that group completes before the rewrite (``wgmma-in-flight-waited``)."""
    from calib.fuzz.replay import replay_explained
    from calib.fuzz.runner import run_sim

    z, meta = _record("h100_v7_seeds_700000_713999")
    assert meta["device"].startswith("NVIDIA H100") and meta["generator"] == 7
    prog = generate(701553, version=7)
    gpu = bytes(z["s701553"])
    assert run_sim(prog).output != gpu
    assert replay_explained(prog, "diagnosed:wgmma-in-flight-waited") == gpu


@pytest.mark.slow
def test_v6_rs_neg_a_int_explained_bit_for_bit():
    """v6 campaign program 600269 as recorded (H200) and with a wait after every commit (H100, v6_rs_probe/): the
    GPU bytes are the simulator's once register A of the imm-scale-a = -1 wgmma is negated as 32-bit integers."""
    from calib.fuzz.replay import replay_explained, replay_record
    from calib.fuzz.rs_probe import waited

    z, _ = _record("h200_v6_seeds_600000_611999")
    prog = generate(600269, version=6)
    assert replay_explained(prog, "diagnosed:wgmma-rs-neg-a-int") == bytes(z["s600269"])
    gpu = (ROOT / "v6_rs_probe" / "600269_waited.gpu.bin").read_bytes()
    rec = {"ptx": waited(prog.render()), "kernel": prog.kernel_name, "nthreads": prog.nthreads,
           "input": prog.input_buffer(), "gpu_output": gpu}
    assert replay_record(rec) != gpu
    assert replay_record(rec, "diagnosed:wgmma-rs-neg-a-int") == gpu


@pytest.mark.slow
def test_v6_rs_chain_a_registers_rewritten_in_flight_bit_for_bit():
    """v6 program 600245 with a wait after every commit (H100, v6_rs_probe/600245_waited.*): the SASS builds the
    second IGMMA's A in the first one's registers R76-R79 right after its issue (and overwrites R76 right after the
    second's); the GPU bytes are the simulator's with the A each IGMMA really read -- first: R76 and R79 already the
    second's (%wa12, %wa15), R77 and R78 not yet (%wa9, %wa10); second: R76 the IADD3.X result (the low word of
    ``addc.cc.s64 %rd2, %rd4, %rd2``), the rest its own."""
    from calib.fuzz.replay import replay_record
    from calib.fuzz.rs_probe import waited

    prog = generate(600245, version=6)
    gpu = (ROOT / "v6_rs_probe" / "600245_waited.gpu.bin").read_bytes()
    text = waited(prog.render())
    w2, w3 = "{%wa8, %wa9, %wa10, %wa11}, %kd9, 0;", "{%wa12, %wa13, %wa14, %wa15}, %kd9, 1;"
    assert text.count(w2) == text.count(w3) == 1
    model = (text.replace(w2, "{%wa12, %wa9, %wa10, %wa15}, %kd9, 0;")
             .replace(w3, "{%xm0, %wa13, %wa14, %wa15}, %kd9, 1;"))
    lines = model.split("\n")
    at = next(i for i, ln in enumerate(lines) if "{%xm0" in ln)
    fence = max(i for i in range(at) if lines[i].strip().startswith("wgmma.fence"))
    lines[fence] = "\tadd.cc.s64 %xd0, %rd5, %rd5; addc.cc.s64 %xd1, %rd4, %rd2; cvt.u32.u64 %xm0, %xd1; " + \
        lines[fence].lstrip()
    reg = next(i for i, ln in enumerate(lines) if ln.strip().startswith(".reg "))
    lines[reg] += " .reg .b64 %xd<2>; .reg .b32 %xm<1>;"
    rec = {"ptx": "\n".join(lines), "kernel": prog.kernel_name, "nthreads": prog.nthreads,
           "input": prog.input_buffer(), "gpu_output": gpu}
    assert replay_record(dict(rec, ptx=text)) != gpu
    assert replay_record(rec) == gpu
    sass = (ROOT / "v6_rs_probe" / "600245_waited.sass").read_text()
    for ln in ("/*1830*/ IGMMA.64x16x32.S8.U8 R68, R76, gdesc[UR8], RZ, !UPT", "/*1870*/ MOV R76, R84",
               "/*18a0*/ IGMMA.64x16x32.S8.U8 R68, R76, gdesc[UR8], R68, gsb0", "/*18c0*/ IADD3.X R76, P0, R134, R8"):
        assert ln in sass, ln


def test_v7_abs_f64_selp_explained_bit_for_bit():
    """v7 program 702005 (the H100's whole output kept): ``selp.f64`` of an ``abs.f64`` result that a
    ``cvt.sat.u64.s64`` also reads; the GPU selected the 64-bit integer absolute value of the abs's source
    (0x8000000000000000 minus the cleared-sign value), which ``abs-f64-int-selp`` reproduces byte for byte; the lint
    note ``abs-f64-into-selp`` names the selp."""
    from calib.fuzz.replay import replay_explained
    from calib.fuzz.runner import run_sim

    z, _ = _record("h100_v7_seeds_700000_713999")
    prog = generate(702005, version=7)
    gpu = bytes(z["s702005"])
    assert run_sim(prog).output != gpu
    assert replay_explained(prog, "diagnosed:abs-f64-int-selp") == gpu
    noted = notes(parse(prog.render()), checks=["abs-f64-into-selp"])
    assert [n.message.split(",")[0] for n in noted] == ["selp.f64 of %rd0"]


def test_v7_wgmma_group_lost_explained_bit_for_bit():
    """v7 program 710731 (noted ``wgmma-rs-chain``) re-run on an H200 (v7_probe/): its output is the H100's (the
    record's hash) and the simulator's once the noted wgmma's group is dropped (``wgmma-group-lost``: ptxas copies the
    chain's accumulators before the WARPGROUP.DEPBAR and goes on with the copies, SASS quoted); with a wait after
    every commit the GPU agrees with tcsim."""
    from calib.fuzz.record import _h
    from calib.fuzz.replay import replay_explained, replay_record
    from calib.fuzz.rs_probe import waited
    from calib.fuzz.runner import run_sim

    _, meta = _record("h100_v7_seeds_700000_713999")
    prog = generate(710731, version=7)
    gpu = (ROOT / "v7_probe" / "710731_orig.gpu.bin").read_bytes()
    assert _h(gpu) == meta["gpu_sha"]["710731"]
    assert run_sim(prog).output != gpu
    assert replay_explained(prog, "diagnosed:wgmma-group-lost@278") == gpu
    rec = {"ptx": waited(prog.render()), "kernel": prog.kernel_name, "nthreads": prog.nthreads,
           "input": prog.input_buffer(), "gpu_output": gpu}
    assert replay_record(rec) == (ROOT / "v7_probe" / "710731_waited.gpu.bin").read_bytes()
    sass = [ln.split("*/", 1)[1].strip() for ln in (ROOT / "v7_probe" / "710731_orig.sass").read_text().splitlines()
            if "*/" in ln]
    last = sass.index("HGMMA.64x8x8.F32.TF32 R64, R56, gdesc[UR4], R64, gsb0 ;")
    depbar = next(i for i in range(last, len(sass)) if sass[i].startswith("WARPGROUP.DEPBAR"))
    copied = {re.findall(r"R\d+", ln)[-1] for ln in sass[last + 1:depbar] if "MOV" in ln}
    assert copied >= {"R64", "R65", "R66", "R67"}, sass[last:depbar + 1]
