"""The fast tier (tcsim.fast) against the reference tier: every launch gives bit-identical outputs, statistics
(cycles, warp- and lane-instructions), findings, printed lines, timing reports, errors and JSONL traces.

The oracle is the reference tier itself (the interpreter every other test checks against the GPU and the
models); the fast tier must not differ from it in any observable.  CI runs a representative subset (an ALU-heavy
nvcc kernel, a shared-memory tiled GEMM, the TMA + mbarrier + mma.sync GEMM, a DSMEM cluster exchange, a few
fuzz programs, with timing off and on, with and without the race detector, with a trace and under a scheduler
seed); the sweep over every shipped example, every golden-data case, the nvcc fixtures the suite runs and 200 fuzz
programs is ``slow``.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.errors import TcsimError
from tcsim.launch import Launch, run_launch

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "kernels"          # copies of ../shared/bench (its README)
FIXTURES = ROOT / "tests" / "fixtures" / "nvcc"


# ------------------------------------------------------------------------------------------------ launches
def _alu_loop(n=64, iters=40):
    ptx = BENCH / "alu_loop.sm_100a.ptx"
    return Launch(ptx=ptx, kernel="alu_loop", grid=(1, 1, 1), block=(n, 1, 1),
                  args=[np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.float64), iters,
                        1103515245, 12345, 0.999, 0.5])


def _gemm_tiled(m=32, n=32, k=32, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    ptx = BENCH / "gemm_tiled.sm_100a.ptx"
    return Launch(ptx=ptx, kernel="gemm_tiled", grid=(n // 16, m // 16, 1), block=(16, 16, 1),
                  args=[a, b, np.zeros((m, n), np.float32), m, n, k])


def _example(name, **kw):
    def make():
        import importlib
        return importlib.import_module(f"tcsim.examples.{name}").make_launch(**kw)
    return make


def _golden(case):
    def make():
        from calib.golden import CASES
        return CASES[case].build()
    return make


def _fuzz(seed, ctas=3):
    """A differential-fuzzing program (calib.fuzz: ~100 random instructions of every ALU family, loads and stores,
    divergence) run by ``ctas`` CTAs at once: the CTAs compute the same records, so their warps stand at the same
    instruction and run as lockstep groups -- every form the generator draws runs in the group context."""
    def make():
        from calib.fuzz.generator import generate
        prog = generate(seed)
        return Launch(ptx=prog.render(), kernel=prog.kernel_name, grid=(ctas, 1, 1), block=(prog.nthreads, 1, 1),
                      args=[prog.input_buffer(), prog.output_template()])
    return make


# ------------------------------------------------------------------------------------------------ signature
def _bytes(x):
    if x is None:
        return None
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    return repr(x)


def signature(make, tier: str, *, timing=False, detect=False, seed=None, trace=False, max_instructions=None):
    """Everything a launch lets a user observe, on ``tier``."""
    buf = io.StringIO() if trace else None
    try:
        res = run_launch(make(), tier=tier, timing=timing, detect=detect, seed=seed, trace=buf,
                         max_instructions=max_instructions)
    except TcsimError as e:
        return {"error": (type(e).__name__, str(e)), "findings": [repr(f) for f in getattr(e, "findings", [])],
                "stdout": list(getattr(e, "stdout", [])), "trace": buf.getvalue() if buf else None}
    stats = {k: v for k, v in res.stats.items() if k != "wall_s"}
    timing_rep = None
    if res.timing is not None:
        timing_rep = repr(res.timing.to_dict() if hasattr(res.timing, "to_dict") else res.timing)
    return {"outputs": [_bytes(o) for o in res.outputs], "stats": stats, "stdout": list(res.stdout),
            "findings": [repr(f) for f in res.findings], "notes": list(res.notes), "timing": timing_rep,
            "globals": {k: _bytes(v) for k, v in (res.globals or {}).items()},
            "trace": buf.getvalue() if buf else None,
            "now": res.simulation.env.now if res.simulation is not None else None,
            "_fast": _fast_counts(res.simulation)}


def _fast_counts(sim):
    """(groups run together, warp-instructions they held, warp-instructions run warp by warp at a flush)."""
    f = getattr(sim, "_fast", None)
    return None if f is None else (f.groups, f.grouped, f.failovers)


def assert_identical(make, **kw):
    ref = signature(make, "reference", **kw)
    fast = signature(make, "fast", **kw)
    for key in ref:
        if not key.startswith("_"):
            assert fast[key] == ref[key], f"tiers differ in {key}"
    ref["_fast"] = fast.get("_fast")
    return ref


# ------------------------------------------------------------------------------------------------ CI subset
@pytest.mark.parametrize("timing", [False, True])
def test_alu_loop_identical(timing):
    sig = assert_identical(_alu_loop, timing=timing)
    # and the kernel computed what the C source says (an independent oracle for the values both tiers share)
    n, iters = 64, 40
    a = np.arange(n, dtype=np.int64) + 1
    b = np.arange(n, dtype=np.int64)
    for _ in range(iters):
        a = (a * 1103515245 + 12345) & 0x7FFFFFFF
        b = b ^ (a >> 7)
    assert sig["outputs"][0][2] == a.tobytes() and sig["outputs"][1][2] == b.tobytes()
    groups, grouped, _ = sig["_fast"]
    assert groups > 100 and grouped == 2 * groups     # the loop body ran as groups of the kernel's two warps


def test_gemm_tiled_identical_with_detector_and_trace():
    sig = assert_identical(lambda: _gemm_tiled(16, 32, 16), detect=True)
    assert sig["_fast"][0] > 0                        # (the detector selects no 'inst'/'reg': ALU ops group)
    sig = assert_identical(lambda: _gemm_tiled(16, 16, 32), trace=True)
    assert sig["trace"].count('"kind":"inst"') > 100


def test_gemm_tiled_identical_timed_seeded():
    assert_identical(lambda: _gemm_tiled(32, 16, 16), timing=True, seed=3)


def test_tma_mma_gemm_identical():
    assert_identical(_golden("tma_mma_gemm_seed1"), timing=True, detect=True)


def test_cluster_exchange_identical():
    assert_identical(_golden("cluster_exchange_c2_seed0"), detect=True)
    # timed and seeded: stalls of fractional length make some cycles floats; a warp's records keep the type of
    # its own issue cycle (a gang of same-cycle warps must not hand it another's 5.0 for 5)
    assert_identical(_example("cluster_exchange"), timing=True, seed=1)


@pytest.mark.parametrize("seed", [400003, 400011])
def test_fuzz_programs_identical(seed):
    sig = assert_identical(_fuzz(seed))
    assert sig["_fast"][0] > 50                       # (most of the program ran as lockstep groups)


def test_faults_identical():
    """A kernel that faults: the same error, located the same, on both tiers."""
    text = (FIXTURES / "assert_fail.sm_90a.ptx")
    src = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry oob(.param .u64 p)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 buf[256];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 4;
  mov.u32 %r3, buf;
  add.s32 %r3, %r3, %r2;
  ld.shared.u32 %r2, [%r3];
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd1, %rd1;
  st.global.u32 [%rd1], %r2;
  ret;
}
"""
    assert text.exists()

    def make():
        return Launch(ptx=src, kernel="oob", grid=(2, 1, 1), block=(64, 1, 1), args=[np.zeros(4, np.uint32)])
    ref = assert_identical(make)
    assert ref.get("error") and "out-of-bounds" in ref["error"][1]


def _calls(case):
    def make():
        from calib.calls_golden import build
        return build(case)[0]
    return make


def test_device_function_kernel_identical():
    """A kernel with device functions and printf (the fast tier runs it without groups: per-function register
    files) gives the same outputs, lines and errors."""
    from calib.calls_golden import CASES
    case = next(c for c in CASES if "printf" in c)
    sig = assert_identical(_calls(case))
    assert sig["_fast"][0] == 0


# ------------------------------------------------------------------------------------------------ full sweep
def _calls_cases():
    from calib.calls_golden import CASES
    return list(CASES)


@pytest.mark.slow
@pytest.mark.parametrize("case", _calls_cases())
def test_every_calls_case_identical(case):
    assert_identical(_calls(case), detect=True)

EXAMPLES = ["bulk_pipeline", "cluster_exchange", "cta_pair_gemm", "cute_rowsum", "gemm_async", "mma_gemm",
            "nvfp4_gemm", "tcgen05_walkthrough", "tma_gather_mma_scatter", "tma_gather_scatter", "tma_mma_gemm",
            "tcgen05_pipeline_gemm", "triton_softmax", "wgmma_pipeline_gemm"]


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("timing", [False, True])
def test_every_example_identical(name, timing):
    assert_identical(_example(name), timing=timing, detect=True)
    assert_identical(_example(name), timing=timing, detect=False, seed=1)


@pytest.mark.slow
def test_every_example_trace_identical():
    for name in EXAMPLES:
        assert_identical(_example(name), trace=True)


def _golden_cases():
    from calib.golden import CASES
    return sorted(CASES)


@pytest.mark.slow
@pytest.mark.parametrize("case", _golden_cases())
def test_every_golden_case_identical(case):
    assert_identical(_golden(case), detect=True)
    assert_identical(_golden(case), timing=True, trace=True)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(8))
def test_fuzz_sweep_identical(chunk):
    for seed in range(400000 + 25 * chunk, 400000 + 25 * (chunk + 1)):
        assert_identical(_fuzz(seed), max_instructions=400_000)


@pytest.mark.slow
@pytest.mark.parametrize("timing", [False, True])
def test_bench_kernels_full_size_identical(timing):
    assert_identical(lambda: _gemm_tiled(64, 64, 64), timing=timing)
    assert_identical(lambda: _alu_loop(128, 1000), timing=timing)


def test_cli_tier_option(tmp_path, capsys):
    """``tcsim run --tier fast`` runs the fast tier (every simulation of the command, --explore included) and
    writes the reference tier's trace."""
    from tcsim.cli import main
    from tcsim.fast import default_tier
    traces = {}
    for tier in ("reference", "fast"):
        out = tmp_path / f"{tier}.jsonl"
        assert main(["run", str(ROOT / "examples" / "mma_gemm.py"), "--tier", tier, "--no-timing", "--no-detect",
                     "--trace", str(out)]) == 0
        traces[tier] = out.read_text()
    assert traces["fast"] == traces["reference"] and '"kind":"inst"' in traces["fast"]
    assert default_tier() == "reference"             # (the option does not outlive the command)
    capsys.readouterr()


def test_unknown_tier_is_a_located_error():
    from tcsim.isa.errors import LaunchError
    with pytest.raises(LaunchError, match="unknown execution tier 'turbo'"):
        run_launch(_gemm_tiled(16, 16, 16), tier="turbo")


def test_lazy_ctas_identical():
    """A grid larger than the GPU runs at once (here a 2-SM machine, one CTA per SM by its shared memory): the later
    CTAs start as the first ones exit, on both tiers at the same cycles (the fast tier takes their warps as they
    start)."""
    from tcsim.timing.params import timing_config
    cfg = timing_config("sm_100a", False).with_overrides({"num_sms": 2})

    def make():
        return Launch(ptx=BENCH / "alu_loop.sm_100a.ptx", kernel="alu_loop", grid=(7, 1, 1), block=(64, 1, 1),
                      dynamic_smem=200 * 1024,
                      args=[np.zeros(64, np.int64), np.zeros(64, np.int64), np.zeros(64, np.float64), 3,
                            1103515245, 12345, 0.999, 0.5])
    ref = assert_identical(make, timing=cfg)
    res = run_launch(make(), tier="fast", detect=False, timing=cfg)
    assert res.simulation.resident_clusters == 2 and ref["_fast"][0] > 0
