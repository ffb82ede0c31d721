"""calib/microbench on the simulator (no GPU needed): every case builds and runs, the timed segments have the
structure they must have (a dependent chain of n instructions takes at least n cycles and longer chains take
longer), the measured instructions really ran (sink values computed here from the chain's arithmetic), the
validation kernels are correct, the example instrumentation leaves the examples' outputs unchanged, the
record/install/sim commands work end to end, bad command-line input is one line.  GPU tests carry the ``gpu``
marker and skip cleanly without one."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calib.microbench import analysis as A
from calib.microbench import cases as C
from calib.microbench import ptxgen as G
from calib.microbench import record as R
from tcsim.launch import Launch, run_launch

ROOT = Path(R.__file__).resolve().parents[2]
CALIB = [c for c in C.CASES.values() if c.kind == "calibration"]
VALID = [c for c in C.CASES.values() if c.kind == "validation"]
#: the calibration cases the simulator runs in CI (the others are the same kernels at other sizes / warp counts)
SIM_CALIB = ["clock", "alu_add_s32", "alu_mad_lo_s32", "alu_fma_rn_f32", "alu_mad_wide_u32", "alu_add_f64",
             "alu_shfl_sync_idx", "alu_fma_rn_f16x2", "smem_conflict_1way", "smem_conflict_32way", "smem_broadcast",
             "gmem_chase_cg",
             "bar_sync_4w", "mbarrier_same_warp", "mbarrier_ping_pong", "ldmatrix_x1_latency",
             "ldmatrix_x4_tput_4w", "mma_f16_latency", "mma_bf16_latency", "mma_f16acc_latency", "mma_f16_tput_2w",
             "tma_128B_8x64", "tma_none_256x64", "tma_32B_64x16", "bulk_256B", "bulk_131072B", "dsmem_chase",
             "gmem_chase_cold", "loop_ldsm_mma_1w", "loop_ldsm_mma_4w", "bulk_ring_32", "bulk_ring_2048"]

_SIM: dict = {}


def sim_out(name):
    if name not in _SIM:
        case = C.CASES[name]
        launch = case.build()
        _SIM[name] = (case, launch, run_launch(launch, seed=0))
    return _SIM[name]


def test_case_list_covers_the_calibration_and_validation_sets():
    groups = {c.group for c in CALIB}
    assert groups == {"clock", "alu", "smem", "gmem", "bar_sync", "mbarrier", "ldmatrix", "mma", "tma", "bulk",
                      "dsmem", "gmem_cold", "loop", "ring", "store", "tma_issue", "code", "elem", "fence", "const", "store_quiet",
                      "ws_tile", "tma_window", "wgmma"}
    assert {c.params.get("store_warps", 0) for c in CALIB if c.group == "tma"} == {0, 4}
    assert {c.params["warps"] for c in CALIB if c.group == "loop"} == {1, 4}
    assert {c.params.get("tma_traffic", False) for c in CALIB if c.group == "loop"} == {False, True}
    assert {c.params["bytes"] for c in CALIB if c.group == "ring"} == {32, 1024, 2048}
    assert {c.params["ways"] for c in CALIB if c.group == "smem"} == {0, 1, 2, 4, 8, 16, 32}   # 0: broadcast
    assert {c.params["stages"] for c in VALID if c.group == "pipe_gemm"} == {2, 3, 4}
    assert {c.params["example"] for c in VALID if c.group == "example"} == {"mma_gemm", "tma_mma_gemm",
                                                                             "bulk_pipeline"}
    assert all(c.name.startswith("val_") for c in VALID)


@pytest.mark.parametrize("case", list(C.CASES.values()), ids=lambda c: c.name)
def test_every_case_builds_and_parses(case):
    launch = case.build()
    mod = launch.module()
    assert mod.kernel(launch.kernel).name == launch.kernel
    assert mod.arch == "sm_90a"


@pytest.mark.parametrize("name", SIM_CALIB)
def test_calibration_case_on_the_simulator(name):
    case, launch, res = sim_out(name)
    out = np.asarray(res.outputs[0], dtype=np.int64)
    assert out.shape == launch.args[0].shape
    assert (out > 0).all(), "every warp stores every segment of every rep"
    d = A.derive(case, out)
    med = [s["median"] for s in d["segments"]]
    v = d["values"]
    chain = case.group in ("alu", "smem", "gmem", "gmem_cold") or (case.group == "ldmatrix" and case.params["mode"] == "latency") \
        or (case.group == "mma" and case.params["chains"] == 1)
    if chain:
        n0, n1 = C.CHAIN
        assert med[0] >= n0 and med[1] >= n1, f"a dependent chain of n instructions takes >= n cycles: {med}"
        assert med[1] > med[0] and v["latency"] >= 1
    if case.group == "dsmem":
        n0, n1 = C.CHAIN
        assert all(med[2 * k] >= n0 and med[2 * k + 1] >= n1 for k in range(3)), med
        assert min(v.values()) >= 1
    if case.group in ("bar_sync", "mbarrier"):
        assert med[1] > med[0]
        assert min(v.values()) > 0
    per = v.get("cycles_per_step", v.get("cycles_per_step_per_warp"))
    if per is not None:
        assert med[1] > med[0] and per >= 1
    if case.group in ("tma", "bulk"):
        assert v["warm"] >= 1 and v["cold"] >= 1
        # the destination holds the source's first word (the copy happened): the kernel folds it into the sink
        sink = res.outputs[1][G.SINK_WORD]
        assert sink == (0 if C.REPS % 2 == 0 else _first_word(case, launch))
    if case.group == "clock":
        assert med[1] >= med[0] >= 1
    if case.group in ("loop", "ring"):
        assert med[1] > med[0]
        per = v["cycles_per_ktile" if case.group == "loop" else "per_chunk"]
        # one cycle per instruction at least: a k-tile issues 4 x (9 + 5 + 8) instructions, a chunk's
        # consumer at least its wait, load, arrive
        assert per >= (4 * 22 if case.group == "loop" else 3), v


def test_ldsm_mma_loop_ran_every_mma():
    """Every thread's sink is the fold of (sum of the 8 chains' first elements) after each segment: all-ones
    f16 operands add 16 per mma, 4 mma per chain per k-tile."""
    for name in ("loop_ldsm_mma_1w", "loop_ldsm_mma_4w"):
        case, launch, res = sim_out(name)
        want, acc = 0, 0.0
        for _ in range(C.REPS):
            for n in C.KTILES:
                acc += 64.0 * n
                want ^= int(np.float32(8 * acc).view(np.uint32))
        threads = launch.block[0]
        sink = np.asarray(res.outputs[1])[G.SINK_WORD:G.SINK_WORD + threads]
        assert (sink == want).all(), (name, sink[:4], want)


@pytest.mark.parametrize("name", ["bulk_ring_32", "bulk_ring_2048"])
def test_bulk_ring_consumer_read_every_chunk(name):
    """The consumer lane l folds word (4l mod bytes)/4 of each chunk k (= the source's word k * bytes/4 + that)
    and the chunk count of each segment; the producer lane folds the chunk counts."""
    case, launch, res = sim_out(name)
    nb = case.params["bytes"]
    src = launch.args[2]
    sink = np.asarray(res.outputs[1])[G.SINK_WORD:G.SINK_WORD + 64]
    for lane in range(32):
        want = 0
        for _ in range(C.REPS):
            for n in C.RING_LENGTHS:
                for k in range(n):
                    want ^= int(src[k * nb // 4 + (4 * lane % nb) // 4])
                want ^= n
        assert sink[32 + lane] == want, (lane, sink[32 + lane], want)
    prod = 0
    for _ in range(C.REPS):
        for n in C.RING_LENGTHS:
            prod ^= n
    assert sink[0] == prod and (sink[1:32] == 0).all()


def test_cold_chase_touches_a_new_line_every_step():
    case, launch, res = sim_out("gmem_chase_cold")
    chain = launch.args[2]
    steps = C.REPS * sum(C.CHAIN)
    assert chain.nbytes > 50 << 20                           # more than the H100's L2
    hops = np.flatnonzero(chain)
    assert len(hops) == steps and (np.diff(hops) * 8 == C.COLD_STRIDE).all() and hops[0] == 0


def _first_word(case, launch):
    src = launch.args[2]
    return int(np.ascontiguousarray(src).reshape(-1).view(np.uint32)[0])


def test_copies_of_more_bytes_take_no_less_time_on_the_simulator():
    small = A.derive(*sim_out("bulk_256B")[:1], sim_out("bulk_256B")[2].outputs[0])["values"]["warm"]
    big = A.derive(*sim_out("bulk_131072B")[:1], sim_out("bulk_131072B")[2].outputs[0])["values"]["warm"]
    assert big > small


def _chain_sinks(state, step, value):
    """The sink the kernel stores: the chain value xor-folded after each segment of each rep."""
    s = 0
    for _ in range(C.REPS):
        for n in C.CHAIN:
            for _ in range(n):
                state = step(state)
            s ^= value(state)
    return s


M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


def _f32_bits(x):
    return int(np.float32(x).view(np.uint32))


def _mad_wide(st):
    v64 = (st[0] * 5 + st[1]) & M64
    return (v64 & M32, v64)


@pytest.mark.parametrize("name,state,step,value", [
    ("alu_add_s32", 3, lambda v: (v + 5) & M32, lambda v: v),
    ("alu_mad_lo_s32", 3, lambda v: (v * 5 + 7) & M32, lambda v: v),
    ("alu_mad_wide_u32", (3, 7), _mad_wide, lambda st: st[0] ^ (st[1] >> 32)),
    ("alu_fma_rn_f32", 1.0, lambda v: float(np.float32(v * 0.5 + 0.25)), _f32_bits),
    ("alu_add_f32", 1.0, lambda v: float(np.float32(np.float32(v) + np.float32(0.25))), _f32_bits),
])
def test_the_measured_chain_really_ran(name, state, step, value):
    """Sinks computed here from each op's arithmetic: the kernel executed every instruction of every chain."""
    _, launch, res = sim_out(name)
    sinks = res.outputs[1][G.SINK_WORD:G.SINK_WORD + 32]
    want = _chain_sinks(state, step, value)
    assert (sinks == want).all(), (sinks[:4], want)


def test_the_shuffle_chain_rotates_lane_values():
    """shfl.sync.idx from lane (l + 1) % 32: after k steps lane l holds lane (l + k)'s start value 3 + lane."""
    _, _, res = sim_out("alu_shfl_sync_idx")
    sinks = res.outputs[1][G.SINK_WORD:G.SINK_WORD + 32]
    for lane in range(32):
        assert sinks[lane] == _chain_sinks(0, lambda k: k + 1, lambda k: 3 + (lane + k) % 32), lane


def test_clock_case_sink_is_the_rep_counter_fold():
    _, _, res = sim_out("clock")
    want = 0
    for r in range(C.REPS):
        want ^= r
    assert (res.outputs[1][G.SINK_WORD:G.SINK_WORD + 32] == want).all()


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.name)
def test_validation_kernel_is_correct_on_the_simulator(case):
    launch = case.build()
    res = run_launch(launch, seed=0)
    ok, msg = C.check_validation(case, launch, res.outputs)
    assert ok, msg
    clk = np.asarray(res.outputs[C.clk_index(case, launch)], dtype=np.uint64).reshape(-1, 2)
    assert (clk[:, 1] > clk[:, 0]).all(), "every thread stores entry and exit clocks"
    cyc = C.cta_cycles(launch, clk)
    assert len(cyc) == launch.grid[0] and min(cyc) > 0


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.name)
def test_validation_check_rejects_a_wrong_output(case):
    """Negative control: one flipped output bit must fail the check."""
    launch = case.build()
    res = run_launch(launch, seed=0)
    outs = list(res.outputs)
    k = {"example": {"mma_gemm": 3, "tma_mma_gemm": 2, "bulk_pipeline": 1}.get(case.params.get("example")),
         "pipe_gemm": 2, "ws": 1}[case.group]
    bad = np.array(outs[k], copy=True)
    bad.reshape(-1).view(np.uint8)[5] ^= 1
    outs[k] = bad
    ok, _ = C.check_validation(case, launch, outs)
    assert not ok


@pytest.mark.parametrize("name", ["val_mma_gemm", "val_tma_mma_gemm", "val_bulk_pipeline_12x1024"])
def test_instrumented_example_keeps_the_example_outputs(name):
    import importlib
    case = C.CASES[name]
    mod = importlib.import_module(f"examples.{case.params['example']}")
    base = mod.make_launch(**case.params["kwargs"])
    inst = case.build()
    a = run_launch(base, seed=0)
    b = run_launch(inst, seed=0)
    for i, x in enumerate(a.outputs):
        if x is not None:
            assert np.array_equal(np.asarray(x).view(np.uint8), np.asarray(b.outputs[i]).view(np.uint8)), i
    # the copy only adds lines: every original line is still there, in order
    orig = [ln for ln in base.ptx_text()[0].splitlines() if ln.strip() and "ret;" not in ln]
    new = inst.ptx_text()[0].splitlines()
    it = iter(new)
    assert all(any(ln == m or ln.rstrip(")") == m.rstrip(")") for m in it) for ln in orig)


def test_instrument_clock_rewrites_every_return():
    ptx = (".version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
           "\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n"
           "\t@%p1 ret;\n\tbar.warp.sync -1;\n\tret;\n}\n")
    out = C.instrument_clock(ptx, "k")
    assert "\tret;" not in out.split("$__mb_end:")[0]
    assert "@%p1 bra \t$__mb_end;" in out and out.count("$__mb_end") == 3
    launch = Launch(ptx=out, kernel="k", block=(64, 1, 1),
                    args=[np.zeros(4, np.uint32), np.zeros((64, 2), np.uint64)])
    clk = run_launch(launch, seed=0).outputs[1]
    assert (clk[:, 1] > clk[:, 0]).all()
    with pytest.raises(ValueError):
        C.instrument_clock(ptx, "nosuch")


# ------------------------------------------------------------------------------------------------ commands
def test_record_install_and_sim_commands_end_to_end(tmp_path):
    rec = tmp_path / "rec"
    meta = R.record(R.select(["clock", "val_mma_gemm"]), rec, "sim", 1, 1, "test")
    assert set(meta["cases"]) == {"clock", "val_mma_gemm"}
    assert all(e["status"] == "ok" for e in meta["cases"].values())
    m, arrays = R.load(rec)
    assert arrays["clock"].shape == tuple(m["cases"]["clock"]["shape"])
    assert "val_mma_gemm:run0" in arrays and m["cases"]["val_mma_gemm"]["correct"] == [True]
    # a simulator record is not golden data
    with pytest.raises(R.CliError):
        R.install(rec, tmp_path / "golden")
    # a GPU-labelled record installs, unless a kernel changed since
    m["backend"] = "gpu"
    m["gpu"] = "test"
    (rec / R.META).write_text(json.dumps(m))
    R.install(rec, tmp_path / "golden")
    assert (tmp_path / "golden" / R.META).exists() and (tmp_path / "golden" / R.DATA).exists()
    # merging a record of other cases into it keeps the installed cases and adds the new ones with their own
    # provenance
    before, before_arrays = R.load(tmp_path / "golden")
    rec2 = tmp_path / "rec2"
    R.record(R.select(["alu_add_s32"]), rec2, "sim", 1, 1, "python -m calib.microbench record --case alu_add_s32")
    m2, _ = R.load(rec2)
    m2.update(backend="gpu", gpu="test")
    (rec2 / R.META).write_text(json.dumps(m2))
    R.install(rec2, tmp_path / "golden", merge=True)
    after, after_arrays = R.load(tmp_path / "golden")
    assert set(after["cases"]) == {"clock", "val_mma_gemm", "alu_add_s32"}
    for n in ("clock", "val_mma_gemm"):
        assert after["cases"][n] == before["cases"][n]
    for k, a in before_arrays.items():
        assert np.array_equal(after_arrays[k], a)
    assert after["command"] == before["command"] and after["date"] == before["date"]
    prov = after["cases"]["alu_add_s32"]["recorded"]
    assert prov["command"].endswith("--case alu_add_s32") and prov["date"] == m2["date"]
    assert after["merged"][-1]["cases"] == ["alu_add_s32"]
    assert after_arrays["alu_add_s32"].shape == tuple(after["cases"]["alu_add_s32"]["shape"])
    m2["gpu"] = "another"
    (rec2 / R.META).write_text(json.dumps(m2))
    with pytest.raises(R.CliError, match="is from"):
        R.install(rec2, tmp_path / "golden", merge=True)
    m["cases"]["clock"]["ptx_sha256"] = "0" * 64
    (rec / R.META).write_text(json.dumps(m))
    with pytest.raises(R.CliError, match="changed"):
        R.install(rec, tmp_path / "golden2")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "calib.microbench", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


@pytest.mark.parametrize("timing", [False, True])
def test_sim_command_prints_simulated_against_measured(timing):
    r = _cli("sim", "--case", "alu_add_s32", "--case", "val_mma_gemm", *(["--timing"] if timing else []))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["case", "value", "measured", "simulated"]
    assert any(ln.startswith("alu_add_s32") and "latency" in ln for ln in lines)
    val = [ln.split() for ln in lines if ln.startswith("val_mma_gemm")]
    assert len(val) == 1 and val[0][1] == "cycles/CTA"
    if R.GOLDEN.joinpath(R.META).exists():
        measured = R.load(R.GOLDEN)[0]["cases"]["val_mma_gemm"]["cycles"]
        assert float(val[0][2]) == measured
        assert ("timing model" in lines[-1]) == timing and "mean absolute percentage error" in lines[-1]


@pytest.mark.parametrize("args,msg", [
    (("ptx", "nosuch"), "no case"),
    (("record", "--out", "/tmp/x", "--case", "nosuch*"), "no case matches"),
    (("record", "--out", "/tmp/x", "--jobs", "0"), "at least 1"),
    (("install", "--gpu", "/nonexistent"), "holds no meta.json"),
    (("sim", "--gpu", "/nonexistent"), "holds no meta.json"),
    (("params", "--gpu", "/nonexistent"), "holds no meta.json"),
])
def test_bad_cli_input_is_one_line(args, msg):
    r = _cli(*args)
    assert r.returncode == 2
    assert msg in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_ptx_command_prints_the_kernel():
    r = _cli("ptx", "mma_f16_latency")
    assert r.returncode == 0 and r.stdout == C.CASES["mma_f16_latency"].ptx()


# ------------------------------------------------------------------------------------------------ the GPU
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["mma_f16_latency", "smem_conflict_1way", "val_pipe_gemm_3stage",
                                  "val_ws_scale_2stage", "val_tma_mma_gemm"])
def test_case_on_the_gpu(name):
    hw = pytest.importorskip("tcsim.hw.launcher")
    ok, why = hw.gpu_available()
    if not ok:
        pytest.skip(why)
    case = C.CASES[name]
    entry, arrays = R.run_case(case, "gpu", 1)
    assert entry["status"] == "ok", entry.get("detail")
    if case.kind == "validation":
        assert entry["correct"] == [True], entry["check"]
        assert entry["cycles"] > 0
    else:
        assert 1 <= entry["values"]["latency"] < 200


@pytest.mark.parametrize("name", ["ws_tile", "ws_tile_quiet_reg"])
def test_ws_tile_writes_the_scaled_tile(name):
    """The consumer-tile case does val_ws_scale's work: every word of every tile it stores is smem * a + b, where
    thread t filled SMEM words t, t + 128, ... with float(t) (the register variant stores float(t) itself)."""
    from tcsim.launch import run_launch
    launch = C.CASES[name].build()
    dst = np.asarray(run_launch(launch).outputs[2], dtype=np.float32)
    word = np.arange(dst.size) % 128
    val = word.astype(np.float32)
    want = val if name.endswith("_reg") else val * np.float32(C.WS_A) + np.float32(C.WS_B)
    assert np.array_equal(dst, want)
