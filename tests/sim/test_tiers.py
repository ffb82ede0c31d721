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
    """(groups run together, warp-instructions they held, warp-instructions run warp by warp at a flush, lockstep
    supersteps, cycles they covered)."""
    f = getattr(sim, "_fast", None)
    return None if f is None else (f.groups, f.grouped, f.failovers, f.supersteps, f.superstep_cycles)


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
    groups, grouped, _, supersteps, cycles = sig["_fast"]
    if timing:
        assert groups > 100 and grouped == 2 * groups  # the loop body ran as groups of the kernel's two warps
    else:                                              # the loop ran in lockstep supersteps of both warps
        assert supersteps >= 1 and cycles > 0.9 * sig["stats"]["cycles"]


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


EDGE_PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry edge(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 buf[200000];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  ld.param.u32 %r3, [n];
  mov.u32 %r4, buf;
  shl.b32 %r5, %r1, 2;
  add.s32 %r5, %r4, %r5;
  mov.u32 %r6, 0;
  mov.u32 %r7, %r1;
LOOP:
  st.shared.u32 [%r5], %r7;
  bar.sync 0;
  xor.b32 %r8, %r1, 1;
  shl.b32 %r8, %r8, 2;
  add.s32 %r8, %r4, %r8;
  ld.shared.u32 %r9, [%r8];
  bar.sync 0;
  setp.lt.u32 %p1, %r1, 20;
  @%p1 add.s32 %r7, %r7, %r9;
  mad.lo.s32 %r7, %r7, 3, %r2;
  add.s32 %r6, %r6, 1;
  setp.lt.u32 %p2, %r6, %r3;
  @%p2 bra LOOP;
  and.b32 %r10, %r1, 7;
  setp.eq.u32 %p3, %r10, 0;
  @%p3 bra SKIP;
  add.s32 %r7, %r7, 100;
SKIP:
  mad.lo.s32 %r11, %r2, 48, %r1;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd2, %r11, 4;
  add.s64 %rd1, %rd1, %rd2;
  st.global.u32 [%rd1], %r7;
  ret;
}
"""


@pytest.mark.parametrize("ctas,iters", [(3, 12), pytest.param(140, 2, marks=pytest.mark.slow)])
def test_supersteps_identical(ctas, iters):
    """Lockstep supersteps (tcsim.fast.lockstep) over CTAs of 48 threads (a warp with 16 live lanes): a loop of
    shared stores and loads between bar.syncs, a guarded add, a uniform backward branch, then a divergent branch
    (the superstep stops and the reference path splits the warps); 200 KB of shared memory per CTA: 140 CTAs are
    more than run at once (one per SM; the rest start as CTAs exit).  Same outputs, cycles and counts as the reference tier, and the values the
    loop's recurrence gives (computed here in numpy)."""
    def make():
        return Launch(ptx=EDGE_PTX, kernel="edge", grid=(ctas, 1, 1), block=(48, 1, 1),
                      args=[np.zeros(48 * ctas, np.uint32), iters])
    sig = assert_identical(make)
    tid = np.arange(48, dtype=np.int64)
    want = []
    for c in range(ctas):
        v = tid.copy()
        for _ in range(iters):
            nb = v[tid ^ 1]
            v = np.where(tid < 20, v + nb, v) & 0xFFFFFFFF
            v = (v * 3 + c) & 0xFFFFFFFF
        want.append(np.where(tid % 8 != 0, v + 100, v) & 0xFFFFFFFF)
    assert sig["outputs"][0][2] == np.concatenate(want).astype(np.uint32).tobytes()
    supersteps, cycles = sig["_fast"][3:]
    assert supersteps > 0 and cycles > 0.5 * sig["stats"]["cycles"]


@pytest.mark.parametrize("threads", [48, 64])
def test_superstep_barrier_state_identical(threads):
    """After bar.syncs run by whole CTAs in a superstep, the named barriers hold what the reference's warp-by-warp
    arrivals leave (phase generations, who took part, each barrier's mirror: arrivals, waiting warps); with 48
    threads (a warp of 16 live lanes) the superstep runs them one by one, with 64 (every lane live) inside a
    compiled block, completed after it (several per call)."""
    def state(tier):
        res = run_launch(Launch(ptx=EDGE_PTX, kernel="edge", grid=(3, 1, 1), block=(threads, 1, 1),
                                args=[np.zeros(48 * 3 + threads, np.uint32), 5]), tier=tier, detect=False)
        sim = res.simulation
        nb = sim.agents[("named-barriers", None)]
        pos = {id(c): i for i, c in enumerate(sim.ctas)}
        return ({(pos[c], i): g for (c, i), g in nb.generations.items()},
                {(pos[c], i): sorted(t) for (c, i), t in nb.took_part.items()},
                [[(b.arrived, b.generation, b.expected, b.event is None,
                   [(w.id, m.tobytes()) for w, m in b.waiting]) for b in c.barriers] for c in sim.ctas],
                [w.last_sync for w in sim.warps], sim._fast.supersteps if sim._fast is not None else None)
    ref, fast = state("reference"), state("fast")
    assert fast[:4] == ref[:4]
    assert ref[0] == {(c, 0): 10 for c in range(3)} and fast[4] > 0


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


# ------------------------------------------------------------------------------------------------ generated code
#: forms tcsim.fast.codegen generates group code for, each run against the decoded semantics (the truth)
NATIVE_FORMS = """
add.s32 %r1, %r2, %r3; add.u32 %r1, %r2, 7; sub.s32 %r1, %r2, %r3; sub.u32 %r1, %r2, -9; add.s64 %rd1, %rd2, %rd3;
sub.u64 %rd1, %rd2, 5; add.u16 %h1, %h2, %h3; sub.s16 %h1, %h2, %h3;
mul.lo.s32 %r1, %r2, %r3; mul.lo.u32 %r1, %r2, 1103515245; mul.lo.s64 %rd1, %rd2, %rd3; mul.lo.u16 %h1, %h2, %h3;
mul.wide.s32 %rd1, %r2, %r3; mul.wide.u32 %rd1, %r2, %r3; mul.wide.s16 %r1, %h2, %h3; mul.wide.u16 %r1, %h2, %h3;
mad.lo.s32 %r1, %r2, %r3, %r4; mad.lo.u32 %r1, %r2, 3, %r4; mad.lo.s64 %rd1, %rd2, %rd3, %rd4;
mad.lo.u64 %rd1, %rd2, %rd3, 12345; mad.wide.s32 %rd1, %r2, %r3, %rd4; mad.wide.u32 %rd1, %r2, %r3, %rd4;
neg.s32 %r1, %r2; neg.s64 %rd1, %rd2; neg.s16 %h1, %h2;
and.b32 %r1, %r2, %r3; or.b64 %rd1, %rd2, %rd3; xor.b32 %r1, %r2, 255; and.b64 %rd1, %rd2, 2147483647;
not.b32 %r1, %r2; not.b64 %rd1, %rd2; and.b16 %h1, %h2, %h3;
and.pred %p1, %p2, %p3; or.pred %p1, %p2, %p3; xor.pred %p1, %p2, %p3; not.pred %p1, %p2;
shl.b32 %r1, %r2, 5; shl.b32 %r1, %r2, 40; shr.u32 %r1, %r2, 3; shr.s32 %r1, %r2, 31; shr.s32 %r1, %r2, 99;
shr.b64 %rd1, %rd2, 7; shl.b64 %rd1, %rd2, 64; shl.b64 %rd1, %rd2, %r3; shr.s64 %rd1, %rd2, %r3;
shr.u32 %r1, %r2, %r3; shr.s32 %r1, %r2, %r3; shl.b32 %r1, %r2, %r3; shr.u64 %rd1, %rd2, %r3;
setp.lt.s32 %p1, %r2, %r3; setp.lt.u32 %p1, %r2, %r3; setp.ne.s32 %p1, %r2, 0; setp.ge.s64 %p1, %rd2, -3;
setp.eq.b32 %p1, %r2, 1; setp.hi.u32 %p1, %r2, %r3; setp.ls.u64 %p1, %rd2, %rd3; setp.le.s16 %p1, %h2, %h3;
setp.gt.s32 %p1, %r2, -1; setp.ne.b64 %p1, %rd2, %rd3;
selp.b32 %r1, %r2, %r3, %p1; selp.u64 %rd1, %rd2, 5, %p2; selp.s32 %r1, -4, %r3, %p3;
mov.u32 %r1, %r2; mov.b64 %rd1, 12345; mov.u32 %r1, -1; mov.f32 %f1, 0f3F800000; mov.f32 %f1, %f2;
mov.f64 %fd1, 0d3FF0000000000000; mov.pred %p1, %p2; mov.b16 %h1, %h2;
cvt.u64.u32 %rd1, %r2; cvt.s64.s32 %rd1, %r2; cvt.u32.u64 %r1, %rd2; cvt.s32.s16 %r1, %h2; cvt.u64.s32 %rd1, %r2;
cvt.u16.u32 %h1, %r2; cvt.s32.u16 %r1, %h2; cvt.s16.s64 %h1, %rd2; cvt.u32.s32 %r1, %r2;
cvta.to.global.u64 %rd1, %rd2; cvta.to.shared.u64 %rd1, %rd2; cvta.shared.u64 %rd1, %rd2; cvta.param.u64 %rd1, %rd2;
fma.rn.f32 %f1, %f2, %f0, %f1; fma.rz.ftz.sat.f32 %f1, %f2, %f0, %f2; fma.rn.ftz.f32 %f0, %f1, %f2, %f0;
fma.rn.sat.f32 %f2, %f0, %f1, %f1; add.rn.ftz.sat.f32 %f1, %f0, %f2; fma.rn.f64 %fd1, %fd2, %fd0, %fd1;
fma.rm.f64 %fd0, %fd2, %fd2, %fd1; add.f32 %f1, %f2, %f0; sub.rn.ftz.f32 %f0, %f1, %f2; mul.rp.f32 %f2, %f1, %f0;
add.f64 %fd1, %fd2, %fd0; sub.rz.f64 %fd1, %fd0, %fd2; mul.f64 %fd2, %fd0, %fd1; mul.rn.f64 %fd2, %fd2, %fd2;
"""


def _native_program():
    from tcsim.engine import load_program
    from tcsim.isa.parser import parse
    body = "\n".join(f"\t{s.strip()};" for s in NATIVE_FORMS.replace("\n", " ").split(";") if s.strip())
    ptx = (".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry k()\n{\n"
           "\t.reg .pred %p<4>;\n\t.reg .b16 %h<5>;\n\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<5>;\n"
           "\t.reg .f32 %f<3>;\n\t.reg .f64 %fd<3>;\n" + body + "\n\tret;\n}\n")
    return load_program(parse(ptx), "k")


def _random_regs(prog, k, rng):
    """Register file of ``k`` warps: random bits, small values (shift amounts) and edge values mixed."""
    from tcsim.callstack import make_regfile
    flat = {}
    for name, a in make_regfile(prog.kernel.regs).items():
        if a.dtype == np.bool_:
            flat[name] = rng.random((k, 32)) < 0.5
            continue
        bits = 8 * a.dtype.itemsize
        if name.startswith("%f"):                   # floats: normal numbers, specials and random bits
            fl = rng.standard_normal((k, 32)) * 10.0 ** rng.integers(-40, 40, size=(k, 32))
            with np.errstate(over="ignore"):        # (large ones become infinities)
                fb = (fl.astype(np.float32).view(np.uint32) if bits == 32 else fl.view(np.uint64)).astype(np.uint64)
            sp = np.array([0, 1 << (bits - 1), (0x7F800000 if bits == 32 else 0x7FF0000000000000),
                           (0x7FC00001 if bits == 32 else 0x7FF8000000000001), (1 << (bits - 1)) | 3, 1],
                          dtype=np.uint64)
            pick = rng.integers(0, 5, size=(k, 32))
            rb = rng.integers(0, 1 << 63, size=(k, 32), dtype=np.uint64) >> np.uint64(64 - bits)
            v = np.where(pick == 0, sp[rng.integers(0, len(sp), size=(k, 32))], np.where(pick == 1, rb, fb))
            flat[name] = v.astype(a.dtype)
            continue
        v = rng.integers(0, 1 << bits, size=(k, 32), dtype=np.uint64 if bits == 64 else np.int64)
        small = rng.integers(0, 2 * bits + 8, size=(k, 32))
        edges = np.array([0, 1, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1], dtype=np.uint64)
        pick = rng.integers(0, 4, size=(k, 32))
        v = np.where(pick == 1, small.astype(np.uint64), v.astype(np.uint64))
        v = np.where(pick == 2, edges[rng.integers(0, len(edges), size=(k, 32))], v)
        flat[name] = v.astype(a.dtype)
    return flat


def test_generated_group_code_matches_semantics():
    """Every generated form (tcsim.fast.codegen) writes what the instruction's decoded semantics write, on random
    register contents of several warps (the semantics run over the same lanes through the group context)."""
    from tcsim.fast.batch import BatchCtx
    from tcsim.fast.codegen import native_op
    from tcsim.semantics import DecodeInfo
    prog = _native_program()
    info = DecodeInfo(prog.module, prog.kernel, "sm_100a", frozenset(), 0)
    rng = np.random.default_rng(18)
    k = 3
    dtypes = {name: a.dtype for name, a in _random_regs(prog, 1, rng).items()}

    class Tier:
        pass
    checked = 0
    for pc, ins in enumerate(prog.body[:-2]):
        op = native_op(ins, info, dtypes)
        assert op is not None, f"no generated code for {ins}"
        for _ in range(2):
            regs = _random_regs(prog, k, rng)
            ref = Tier()
            ref.flat = {n: a.copy() for n, a in regs.items()}
            lanes = np.ones(k * 32, bool)
            ctx = BatchCtx(ref, ins, pc, np.arange(k), [None] * k, lanes, lanes)
            prog.decoded[pc](ctx)
            ctx.commit()
            got = {n: a.copy() for n, a in regs.items()}
            dst, v = op(got, slice(0, k))
            got[dst][slice(0, k)] = v
            for n in regs:
                assert got[n].dtype == ref.flat[n].dtype and np.array_equal(got[n], ref.flat[n]), \
                    f"{ins}: {n} differs"
        checked += 1
    assert checked == len([s for s in NATIVE_FORMS.split(";") if s.strip()])


def test_generated_code_declines_other_forms():
    """Forms outside the generated set (a wide immediate, .cc, .sat, .hi, a special register, a float op, a
    shift of a 16-bit register) get no generated code: the semantics run them."""
    from tcsim.engine import load_program
    from tcsim.fast.codegen import native_op
    from tcsim.isa.parser import parse
    from tcsim.semantics import DecodeInfo
    lines = ["mul.wide.s32 %rd1, %r2, 4", "add.cc.u32 %r1, %r2, %r3", "add.sat.s32 %r1, %r2, %r3",
             "mul.hi.u32 %r1, %r2, %r3", "mov.u32 %r1, %tid.x", "div.rn.f32 %f1, %f2, %f2", "fma.rn.f32 %f1, %f2, 0f3F800000, %f1", "shl.b16 %h1, %h2, 3",
             "cvt.rn.f32.s32 %f1, %r2", "cvt.sat.u16.s32 %h1, %r2", "setp.lt.s32 %p1|%p2, %r2, %r3"]
    ptx = (".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry k()\n{\n"
           "\t.reg .pred %p<4>;\n\t.reg .b16 %h<5>;\n\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<5>;\n\t.reg .f32 %f<3>;\n" +
           "".join(f"\t{x};\n" for x in lines) + "\tret;\n}\n")
    prog = load_program(parse(ptx), "k")
    info = DecodeInfo(prog.module, prog.kernel, "sm_100a", frozenset(), 0)
    from tcsim.callstack import make_regfile
    dtypes = {n: a.dtype for n, a in make_regfile(prog.kernel.regs).items()}
    for ins in prog.body[:len(lines)]:
        assert native_op(ins, info, dtypes) is None, str(ins)


def _stacked(regs, dtypes):
    """The fast tier's stacked register layout of ``regs`` (tcsim.fast.tier: one (planes, warps, 32) array per
    container dtype) and the (class, plane) slots the compiled blocks name registers by."""
    from tcsim.fast.blocks import _CLS
    by: dict = {}
    for name, dt in dtypes.items():
        by.setdefault(np.dtype(dt), []).append(name)
    k = next(iter(regs.values())).shape[0]
    arrays, slots = {}, {}
    for dt, names in by.items():
        st = np.zeros((len(names), k, 32), dtype=dt)
        for j, n in enumerate(names):
            st[j] = regs[n]
            if dt in _CLS:
                slots[n] = (_CLS[dt], j)
        arrays[dt] = st
    empty = {c: np.zeros((0, 1, 32), dtype=dt) for dt, c in _CLS.items()}
    stacks = [arrays.get(dt, empty[c]) for dt, c in sorted(_CLS.items(), key=lambda x: x[1])]
    return stacks, slots, by, arrays


def _vm_one(prog, enc, pc, regs, dtypes, smem=None, params=None, k=3, words=False, glob=None, lanes=None,
            bar=False, cycles=1):
    """Run the compiled block interpreter for ``cycles`` cycles at ``pc`` over ``regs`` (k warps): (cycles,
    reason, the registers after it).  ``glob``: global allocations [(base, bytes)] (written in place); ``lanes``:
    the special registers' per-lane values (rows of L, all supplied); ``bar``: bar.sync allowed (the counts per
    barrier are returned as the fourth item then)."""
    from tcsim.fast import vm
    stacks, slots, by, arrays = _stacked(regs, dtypes)
    S = np.zeros((max(1, len(enc.syms)), k), dtype=np.uint64)
    rows = np.arange(k, dtype=np.int64)
    out = np.zeros(5, dtype=np.int64)
    sm = smem if smem is not None else np.zeros((1, 1), np.uint8)
    flags = 3 if smem is not None else 0
    z = np.zeros(k, dtype=np.int64)
    if words:
        flags |= 4
        w32, w64 = sm.view(np.uint32), sm.view(np.uint64)
    else:
        w32, w64 = np.zeros((1, 1), np.uint32), np.zeros((1, 1), np.uint64)
    pad = np.zeros(8, np.uint8)
    gb, gs = np.zeros(vm.NGLOBAL, np.uint64), np.zeros(vm.NGLOBAL, np.uint64)
    garrs = [pad] * vm.NGLOBAL
    if glob is not None:
        flags |= vm.F_GLOBAL
        for i, (base, arr) in enumerate(glob):
            gb[i], gs[i], garrs[i] = base, arr.size, arr
    if bar:
        flags |= vm.F_BAR
    L = np.zeros((1, 32 * k), np.uint64) if lanes is None else lanes
    lok = np.ones(L.shape[0], np.int64) if lanes is not None else np.zeros(1, np.int64)
    bars = np.zeros(16, np.int64)
    vm.run(enc.P, enc.C, *stacks, S, L, lok, rows, sm, np.arange(k) % sm.shape[0], z, pc, cycles, 0, sm.shape[1],
           24, (1 << 24) - 1, flags, params if params is not None else np.zeros(8, np.uint8), w32, w64, gb, gs,
           0 if glob is None else len(glob), tuple(garrs), bars, out)
    got = {n: arrays[np.dtype(dtypes[n])][by[np.dtype(dtypes[n])].index(n)].copy() for n in regs}
    if bar:
        return int(out[0]), int(out[4]), got, bars
    return int(out[0]), int(out[4]), got


def _encode_all(prog, info, dtypes, branch=None):
    from tcsim.fast.blocks import _CLS, encode
    from tcsim.fast.lockstep import BRANCH, SEM
    by: dict = {}
    for name, dt in dtypes.items():
        by.setdefault(np.dtype(dt), []).append(name)
    slots = {n: (_CLS[dt], j) for dt, names in by.items() if dt in _CLS for j, n in enumerate(names)}
    steps = [BRANCH if branch and pc in branch else SEM for pc in range(len(prog.body))]
    return encode(prog, steps, branch or {}, slots, {n: np.dtype(d) for n, d in dtypes.items()}, info)


def test_compiled_blocks_match_semantics():
    """Every form the compiled blocks encode (tcsim.fast.blocks, run by tcsim.fast.vm) writes what the
    instruction's decoded semantics write, on random register contents of several warps, unguarded and under a
    guard (the semantics run over the guard's lanes through the group context); an f64 fma lane the compiled
    numerics leave to the exact reference, or a NaN result, stops the block before it (nothing written)."""
    pytest.importorskip("numba")
    from tcsim.fast import vm
    from tcsim.fast.batch import BatchCtx
    from tcsim.semantics import DecodeInfo
    prog = _native_program()
    info = DecodeInfo(prog.module, prog.kernel, "sm_100a", frozenset(), 0)
    rng = np.random.default_rng(1818)
    k = 3
    dtypes = {name: a.dtype for name, a in _random_regs(prog, 1, rng).items()}
    enc = _encode_all(prog, info, dtypes)

    class Tier:
        pass
    encoded = set()
    bailed = 0
    for pc, ins in enumerate(prog.body[:-2]):
        if enc.P[pc, vm.OP] == vm.STOP:
            continue
        encoded.add(pc)
        for trial in range(3):
            regs = _random_regs(prog, k, rng)
            lanes = np.ones(k * 32, bool)
            if trial == 2:              # under a guard: the semantics over the guard's lanes
                g = rng.random(k * 32) < 0.5
                regs["%p3"] = g.reshape(k, 32)
                row = enc.P[pc].copy()
                if row[vm.DC] == 0 and dtypes["%p3"] == np.bool_ and \
                        [n for n in dtypes if dtypes[n] == np.bool_].index("%p3") == row[vm.DI]:
                    continue            # (it writes %p3 itself)
                lanes = g
            ref = Tier()
            ref.flat = {n: a.copy() for n, a in regs.items()}
            ctx = BatchCtx(ref, ins, pc, np.arange(k), [None] * k, lanes, np.ones(k * 32, bool))
            prog.decoded[pc](ctx)
            ctx.commit()
            P = enc.P
            if trial == 2:
                P = enc.P.copy()
                P[pc, vm.GC] = 0
                P[pc, vm.GI] = [n for n in dtypes if dtypes[n] == np.bool_].index("%p3")
                P[pc, vm.GN] = 0
            e2 = type(enc)(P, enc.C, enc.syms)
            cycles, why, got = _vm_one(prog, e2, pc, regs, dtypes, k=k)
            if cycles == 0:
                assert enc.P[pc, vm.OP] == vm.FMA64 and why == vm.R_BAIL, f"{ins}: stopped"
                for n in regs:
                    assert np.array_equal(got[n], regs[n]), f"{ins}: {n} written before a stop"
                bailed += 1
                continue
            for n in regs:
                assert got[n].dtype == ref.flat[n].dtype and np.array_equal(got[n], ref.flat[n]), \
                    f"{ins} (trial {trial}): {n} differs"
    # every integer / logic / compare / mov / cvt / cvta form, fma.rn.f32 (.ftz) and fma.f64: all but the float
    # add / sub / mul and the .sat / .rz f32 fma
    names = [str(prog.body[pc]) for pc in encoded]
    assert not any(x.startswith(("add.f32", "add.rn.ftz", "sub.rn.ftz", "mul.rp", "add.f64", "sub.rz", "mul.f64",
                                 "mul.rn.f64", "fma.rz", "fma.rn.sat")) for x in names), names
    total = len([s for s in NATIVE_FORMS.split(";") if s.strip()])
    assert len(encoded) == total - 10, (len(encoded), total)
    assert bailed < 3 * 3 * 2


def test_compiled_blocks_memory_and_branches():
    """ld.shared / st.shared / ld.param and plain branches in compiled blocks: the bytes the semantics read and
    write, the stores in the reference's lane order (the lowest lane's value lands last), an access the semantics
    would fault on (misaligned, outside the window) stops the block before it, a branch whose lanes disagree
    stops it, one whose lanes agree jumps."""
    pytest.importorskip("numba")
    from tcsim.engine import load_program
    from tcsim.fast import vm
    from tcsim.isa.parser import parse
    from tcsim.semantics import DecodeInfo
    ptx = (".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry k(.param .u64 k_p0, .param .u32 k_p1)\n"
           "{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<6>;\n\t.reg .b64 %rd<4>;\n"
           "\tld.shared.u32 %r1, [%r2+8];\n\tst.shared.u32 [%r2+4], %r3;\n\tld.param.u32 %r4, [k_p1];\n"
           "\tld.param.u64 %rd1, [k_p0];\n\t@%p1 bra $L;\n\tadd.s32 %r5, %r5, 1;\n$L:\n\tret;\n}\n")
    prog = load_program(parse(ptx), "k")
    info = DecodeInfo(prog.module, prog.kernel, "sm_100a", frozenset(), 0)
    from tcsim.callstack import make_regfile
    dtypes = {n: a.dtype for n, a in make_regfile(prog.kernel.regs).items()}
    enc = _encode_all(prog, info, dtypes, branch={4: 6})
    assert all(enc.P[pc, vm.OP] != vm.STOP for pc in range(6)), enc.P[:6, 0]
    k = 2
    rng = np.random.default_rng(7)
    smem = rng.integers(0, 256, size=(k, 64), dtype=np.uint8)
    words = smem.view(np.uint32)
    base = np.tile((np.arange(32) % 4 * 4).astype(np.uint32), (k, 1))       # (lanes share words: store order)
    regs = {n: np.zeros((k, 32), dtype=dtypes[n]) for n in dtypes}
    regs["%r2"] = base
    regs["%r3"] = np.arange(k * 32, dtype=np.uint32).reshape(k, 32) + 100
    want = words[np.arange(k)[:, None], (base + 8) // 4]
    for words in (False, True):             # (bytes, or whole words of the stacked windows)
        sm = smem.copy()
        cycles, why, got = _vm_one(prog, enc, 0, regs, dtypes, smem=sm, k=k, words=words)
        assert cycles == 1 and np.array_equal(got["%r1"], want)
        sm = smem.copy()
        cycles, why, got = _vm_one(prog, enc, 1, regs, dtypes, smem=sm, k=k, words=words)
        # each word at offset 4 + 4j is written by lanes j, j+4, ...: the lowest of them lands last
        for w in range(k):
            for j in range(4):
                assert sm[w].view(np.uint32)[1 + j] == 100 + 32 * w + j
        assert np.array_equal(np.delete(sm.view(np.uint32), [1, 2, 3, 4], axis=1),
                              np.delete(smem.view(np.uint32), [1, 2, 3, 4], axis=1))
        # misaligned / outside the window: stopped before, nothing written
        for bad in (base + 1, base + 64):
            r2 = dict(regs, **{"%r2": bad.astype(np.uint32)})
            sm = smem.copy()
            cycles, why, got = _vm_one(prog, enc, 1, r2, dtypes, smem=sm, k=k, words=words)
            assert cycles == 0 and why == vm.R_BAIL and np.array_equal(sm, smem)
    params = np.zeros(16, np.uint8)
    params[:8] = np.frombuffer(np.uint64(0x1122334455667788).tobytes(), np.uint8)
    params[8:12] = np.frombuffer(np.uint32(0xDEADBEEF).tobytes(), np.uint8)
    cycles, why, got = _vm_one(prog, enc, 2, regs, dtypes, params=params, k=k)
    assert cycles == 1 and (got["%r4"] == 0xDEADBEEF).all()
    cycles, why, got = _vm_one(prog, enc, 3, regs, dtypes, params=params, k=k)
    assert cycles == 1 and (got["%rd1"] == 0x1122334455667788).all()
    cycles, why, got = _vm_one(prog, enc, 2, regs, dtypes, params=params[:10], k=k)
    assert cycles == 0 and why == vm.R_BAIL
    # the branch: all lanes agree (taken / not), or diverge (stopped before it)
    for p, expect in ((True, 1), (False, 1), (None, 0)):
        r = dict(regs)
        r["%p1"] = np.ones((k, 32), bool) if p else np.zeros((k, 32), bool)
        if p is None:
            r["%p1"][1, 5] = True
        cycles, why, got = _vm_one(prog, enc, 4, r, dtypes, k=k)
        assert cycles == expect and (why == vm.R_DIVERGE) == (p is None)


def test_compiled_blocks_global_special_and_barriers():
    """ld.global / st.global, special registers and bar.sync in compiled blocks: the bytes at each lane's address
    (two allocations), the stores warp after warp with each warp's lanes from the last to the first (the lowest
    lane of the last warp lands last, as ExecContext.store writes them); an access the semantics would fault on
    (misaligned, past an allocation's end, in the guard gap, before the first) stops the block before it with
    nothing written; a special register's per-lane values, and a stop at one the call was not given; a bar.sync
    counted per barrier when allowed, a stop before it when not."""
    pytest.importorskip("numba")
    from tcsim.engine import load_program
    from tcsim.fast import vm
    from tcsim.fast.batch import BARRIER, SEM
    from tcsim.fast.blocks import _CLS, encode
    from tcsim.isa.parser import parse
    from tcsim.semantics import DecodeInfo
    ptx = (".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry k()\n"
           "{\n\t.reg .b32 %r<6>;\n\t.reg .b64 %rd<4>;\n"
           "\tld.global.nc.u32 %r1, [%rd1+8];\n\tst.global.u32 [%rd2+4], %r3;\n\tld.global.u64 %rd3, [%rd1];\n"
           "\tmov.u32 %r4, %tid.x;\n\tmov.u32 %r5, %ctaid.y;\n\tbar.sync 2;\n\tst.global.u64 [%rd2], %rd3;\n"
           "\tret;\n}\n")
    prog = load_program(parse(ptx), "k")
    info = DecodeInfo(prog.module, prog.kernel, "sm_100a", frozenset(), 0)
    from tcsim.callstack import make_regfile
    dtypes = {n: np.dtype(a.dtype) for n, a in make_regfile(prog.kernel.regs).items()}
    by: dict = {}
    for name, dt in dtypes.items():
        by.setdefault(dt, []).append(name)
    slots = {n: (_CLS[dt], j) for dt, names in by.items() for j, n in enumerate(names)}
    steps = [SEM] * 5 + [BARRIER, SEM, None]
    enc = encode(prog, steps, {}, slots, dtypes, info, {5: (2, True)})
    assert all(enc.P[pc, vm.OP] != vm.STOP for pc in range(7)), enc.P[:7, 0]
    assert [(op.name, op.component, n) for op, n in enc.sregs] == [("%tid", "x", 4), ("%ctaid", "y", 4)]
    k = 2
    rng = np.random.default_rng(11)
    base0, base1 = 0x7F0000000000, 0x7F0000002000
    g0 = rng.integers(0, 256, size=256, dtype=np.uint8)
    g1 = rng.integers(0, 256, size=100, dtype=np.uint8)
    regs = {n: np.zeros((k, 32), dtype=dtypes[n]) for n in dtypes}
    # lanes load words 0..63 of g0 (warp 0) and of g1 from offset 0 (warp 1); stores hit 4 words of g1
    off = np.arange(32, dtype=np.uint64) * 4
    regs["%rd1"] = np.stack([base0 + off, base1 + (off % 64)]).astype(np.uint64)
    regs["%rd2"] = np.tile(base1 + (np.arange(32, dtype=np.uint64) % 4) * 8, (k, 1))
    regs["%r3"] = (np.arange(k * 32, dtype=np.uint32) + 1000).reshape(k, 32)

    def word(buf, o, n):
        return int.from_bytes(bytes(buf[o:o + n]), "little")
    a0, a1 = g0.copy(), g1.copy()
    cycles, why, got = _vm_one(prog, enc, 0, regs, dtypes, k=k, glob=[(base0, a0), (base1, a1)])
    want = [[word(g0, 4 * l + 8, 4) for l in range(32)], [word(g1, (4 * l) % 64 + 8, 4) for l in range(32)]]
    assert cycles == 1 and got["%r1"].tolist() == want
    cycles, why, got = _vm_one(prog, enc, 2, regs, dtypes, k=k, glob=[(base0, a0), (base1, a1)])
    assert cycles == 0 and why == vm.R_BAIL                         # (8-byte loads at 4-byte steps: misaligned)
    r = dict(regs, **{"%rd1": np.stack([base0 + 2 * off, base1 + (2 * off) % 64]).astype(np.uint64)})
    cycles, why, got = _vm_one(prog, enc, 2, r, dtypes, k=k, glob=[(base0, a0), (base1, a1)])
    assert cycles == 1 and got["%rd3"].tolist() == [[word(g0, 8 * l, 8) for l in range(32)],
                                                     [word(g1, (8 * l) % 64, 8) for l in range(32)]]
    # the store: word 8j + 4 of g1 (j = 0..3) is written by lanes j, j + 4, ... of both warps: warp 1's lane j last
    cycles, why, got = _vm_one(prog, enc, 1, regs, dtypes, k=k, glob=[(base0, a0), (base1, a1)])
    want = g1.copy()
    for j in range(4):
        want[8 * j + 4:8 * j + 8] = np.frombuffer(np.uint32(1000 + 32 + j).tobytes(), np.uint8)
    assert cycles == 1 and np.array_equal(a1, want) and np.array_equal(a0, g0)
    # faults the semantics report: stopped before, nothing written
    for bad in (base1 + 1, base1 + 96, base1 + 200, base0 - 8):
        r = dict(regs, **{"%rd2": np.full((k, 32), bad, np.uint64)})
        r["%rd2"][0, :5] = base1                    # (some lanes fine)
        a1 = g1.copy()
        cycles, why, got = _vm_one(prog, enc, 1, r, dtypes, k=k, glob=[(base0, a0), (base1, a1)])
        assert cycles == 0 and why == vm.R_BAIL and np.array_equal(a1, g1), hex(bad)
    cycles, why, got = _vm_one(prog, enc, 0, regs, dtypes, k=k)        # (no global memory given)
    assert cycles == 0 and why == vm.R_BAIL
    # special registers: the per-lane values given, or a stop before a reader of one not given
    L = np.stack([np.tile(np.arange(32, dtype=np.uint64), k), np.repeat(np.arange(k, dtype=np.uint64) + 5, 32)])
    cycles, why, got = _vm_one(prog, enc, 3, regs, dtypes, k=k, lanes=L, cycles=2)
    assert cycles == 2 and got["%r4"].tolist() == [list(range(32))] * k
    assert got["%r5"].tolist() == [[5] * 32, [6] * 32]
    cycles, why, got = _vm_one(prog, enc, 3, regs, dtypes, k=k)
    assert cycles == 0 and why == vm.R_BAIL
    # bar.sync 2: counted when allowed, then the next instruction runs; else stopped before it
    a1 = g1.copy()
    cycles, why, got, bars = _vm_one(prog, enc, 5, regs, dtypes, k=k, bar=True, cycles=2,
                                     glob=[(base0, a0), (base1, a1)])
    assert cycles == 2 and bars.tolist() == [0, 0, 1] + [0] * 13
    cycles, why, got = _vm_one(prog, enc, 5, regs, dtypes, k=k)
    assert cycles == 0 and why == vm.R_BAIL
