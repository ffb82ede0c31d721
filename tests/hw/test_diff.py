"""tcsim.hw.diff and ``tcsim diff``: identical runs are clean; a modified input is reported at the right element
and record; addresses relocate against the anchors; .approx differences are reported with their ulp
distance; polls collapse; clocks are reported, never asserted.  The GPU comparison (marked gpu) skips
cleanly without a GPU."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from tcsim.launch import Launch
from tcsim.cli import main as tcsim_main
from tcsim.hw.diff import diff_runs
from tcsim.hw.trace import run_traced

import tcsim.examples.bulk_pipeline as bulk_pipeline
import tcsim.examples.cluster_exchange as cluster_exchange
import tcsim.examples.mma_gemm as mma_gemm
import tcsim.examples.tma_mma_gemm as tma_mma_gemm

#: every example of tcsim.examples that runs on sm_90a (Hopper); the others (cta_pair_gemm, gemm_async, nvfp4_gemm,
#: tcgen05_walkthrough, tma_gather_mma_scatter, tma_gather_scatter) need Blackwell's tcgen05 / TMA gather and are
#: checked in tcsim only
HOPPER_EXAMPLES = {"mma_gemm": mma_gemm, "tma_mma_gemm": tma_mma_gemm, "bulk_pipeline": bulk_pipeline,
                   "cluster_exchange": cluster_exchange}

ROOT = Path(__file__).resolve().parents[2]
HDR = ".version 8.5\n.target sm_90a\n.address_size 64\n"

AXPY = HDR + r"""
.visible .entry axpy(.param .u64 x_ptr, .param .u64 y_ptr, .param .u32 n)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [x_ptr];
	ld.param.u64 	%rd2, [y_ptr];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.u32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	$L_done;
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mul.wide.u32 	%rd5, %r5, 4;
	add.u64 	%rd6, %rd3, %rd5;
	ld.global.u32 	%r6, [%rd6];
	mad.lo.u32 	%r7, %r6, 3, 1;
	add.u64 	%rd7, %rd4, %rd5;
	st.global.u32 	[%rd7], %r7;
$L_done:
	ret;
}
"""


def _line(text, needle):
    return next(i for i, l in enumerate(text.split("\n"), 1) if needle in l)


def _axpy(x):
    return Launch(ptx=AXPY, grid=(2, 1, 1), block=(64, 1, 1), args=[x, np.zeros_like(x), x.size])


def _x(n=100):
    return np.arange(n, dtype=np.uint32) * 7 + 5


# -------------------------------------------------------------------------------------- identical runs
@pytest.mark.parametrize("mod,kw", [(mma_gemm, {}), (tma_mma_gemm, {}),
                                    (bulk_pipeline, {"chunks": 5, "chunk_bytes": 256})])
def test_identical_runs_are_clean(mod, kw):
    launch = mod.make_launch(**kw)
    a = run_traced(launch, backend="sim")
    b = run_traced(launch, backend="sim", seed=2)           # another schedule, same semantics
    rep = diff_runs(a, b)
    assert rep.identical, rep.format()
    assert rep.compared["exact"] > 0 and not rep.mismatches and not rep.approx
    text = rep.format()
    assert "RESULT: bit-identical" in text and "ratio" in text


def test_modified_input_is_reported_at_the_first_differing_element():
    x = _x()
    a = run_traced(_axpy(x))
    x2 = x.copy()
    x2[37] += 1                                              # CTA 0, warp 1, lane 5
    b = run_traced(_axpy(x2))
    rep = diff_runs(a, b)
    assert not rep.identical
    ox, oy = rep.outputs
    assert ox.name == "x_ptr" and ox.n_diff == 1 and ox.first == (37,) and (ox.a, ox.b) == (x[37], x2[37])
    assert oy.name == "y_ptr" and oy.n_diff == 1 and oy.first == (37,)
    assert (oy.a, oy.b) == (3 * x[37] + 1, 3 * x2[37] + 1)
    assert rep.n_value_mismatches == 2                       # the load and the mad, lane 37 only
    first = rep.mismatches[0]
    assert (first.warp, first.lane) == ("cta (0,0,0) warp 1", 5)
    assert first.line == _line(AXPY, "ld.global.u32") and first.reg == "%r6" and first.cls == "exact"
    assert (first.a, first.b) == (int(x[37]), int(x2[37]))
    text = rep.format()
    assert "DIFFERS in 1 element(s); first [37]" in text and "RESULT: DIFFERENT" in text


def _shift_addresses(run, anchor_name, delta):
    """What another back end would produce: the buffer at another address (anchor and every address value
    inside it shifted by delta)."""
    out = copy.deepcopy(run)
    lay = out.layout
    k = next(i for i, a in enumerate(lay.anchors) if a.name == anchor_name and a.kind == "param")
    size = run.arg_bytes[lay.params.index(anchor_name)]
    for wt in out.traces:
        base = int(wt.anchors[k])
        wt.anchors[k] = np.uint64(base + delta)
        for i, pid in enumerate(wt.points):
            p = lay.points[int(pid)]
            for d, c in enumerate(p.classes):
                if c == "address":
                    v = wt.values[i, d].astype(object)
                    inside = np.array([base <= int(e) <= base + size for e in v])
                    wt.values[i, d] = np.where(inside, (v + delta).astype(np.uint64), wt.values[i, d])
    return out


def test_addresses_relocate_against_anchors():
    a = run_traced(_axpy(_x()))
    b = _shift_addresses(a, "y_ptr", 0x10_0000)
    rep = diff_runs(a, b)
    assert rep.identical, rep.format()
    assert rep.relocated == 128 + 100 + 100                  # %rd2 (all 128 threads), %rd4, %rd7 (n = 100)
    # the same values without moving the anchor: real address differences
    c = copy.deepcopy(b)
    k = next(i for i, an in enumerate(c.layout.anchors) if an.name == "y_ptr")
    for wt, wa in zip(c.traces, a.traces):
        wt.anchors[k] = wa.anchors[k]
    rep = diff_runs(a, c)
    assert not rep.identical and rep.mismatches[0].cls == "address"
    assert "y_ptr+0" in rep.mismatches[0].note


STRUCT_AXPY = HDR + r"""
.visible .entry saxpy(.param .align 8 .b8 xp[8], .param .align 8 .b8 args[24])
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<8>;
	ld.param.b64 	%rd1, [xp];
	ld.param.b64 	%rd2, [args+16];
	ld.param.u32 	%r1, [args+8];
	mov.u32 	%r4, %tid.x;
	setp.ge.u32 	%p1, %r4, %r1;
	@%p1 bra 	$L_done;
	mul.wide.u32 	%rd5, %r4, 4;
	add.u64 	%rd6, %rd1, %rd5;
	ld.global.u32 	%r6, [%rd6];
	mad.lo.u32 	%r7, %r6, 3, 1;
	add.u64 	%rd7, %rd2, %rd5;
	st.global.u32 	[%rd7], %r7;
$L_done:
	ret;
}
"""


def test_pointers_in_array_parameters_are_anchors():
    """A pointer passed in a ``.b8 p[8]`` parameter (the CuTe DSL's form) and one inside a struct parameter (nvcc's
    form for structs, here at offset 16) are relocation anchors like 64-bit scalar parameters: another back end's
    buffers at other addresses compare identical; the same values without the anchor moved are differences."""
    from tcsim.launch import Pointer, Struct
    x, y = _x(64), np.zeros(64, np.uint32)
    launch = Launch(ptx=STRUCT_AXPY, block=(64, 1, 1),
                    args=[Pointer(x), Struct(Pointer(np.zeros(4, np.uint32)), np.uint32(60), Pointer(y))])
    a = run_traced(launch)
    out = a.outputs[1][1]                       # the struct's outputs: its pointer fields' arrays
    assert np.array_equal(out[:60], x[:60] * 3 + 1) and not out[60:].any()
    anchors = [(an.kind, an.name, an.offset) for an in a.layout.anchors]
    assert ("param", "xp", 0) in anchors and ("param", "args", 16) in anchors
    assert ("param", "args", 8) not in anchors                      # a 32-bit load is no pointer
    ks = [anchors.index(("param", "xp", 0)), anchors.index(("param", "args", 16))]
    assert a.arg_bytes == [x.nbytes, [[0, 16], [16, y.nbytes]]]
    b = copy.deepcopy(a)
    moved = 0
    for wt in b.traces:
        bases = [int(wt.anchors[k]) for k in ks]
        for k, delta in zip(ks, (0x20_0000, 0x40_0000)):
            wt.anchors[k] = np.uint64(int(wt.anchors[k]) + delta)
        for i, pid in enumerate(wt.points):
            for d, c in enumerate(b.layout.points[int(pid)].classes):
                if c != "address":
                    continue
                for base, delta in zip(bases, (0x20_0000, 0x40_0000)):
                    v = wt.values[i, d].astype(object)
                    inside = np.array([base <= int(e) < base + 256 for e in v])
                    moved += int(inside.sum())
                    wt.values[i, d] = np.where(inside, (v + delta).astype(np.uint64), wt.values[i, d])
    assert moved == 2 * 64 + 2 * 60          # %rd1, %rd2 (64 lanes each), %rd6, %rd7 (the 60 lanes < n)
    rep = diff_runs(a, b)
    assert rep.identical, rep.format()
    assert rep.relocated == moved
    c = copy.deepcopy(b)
    for wt, wa in zip(c.traces, a.traces):
        wt.anchors[ks[1]] = wa.anchors[ks[1]]
    rep = diff_runs(a, c)
    assert not rep.identical and rep.mismatches[0].cls == "address"
    assert "args[16]+0" in rep.mismatches[0].note


def test_struct_outputs_are_compared_and_saved(tmp_path):
    from tcsim.hw.trace import TracedRun
    from tcsim.launch import Pointer, Struct
    x, y = _x(64), np.zeros(64, np.uint32)
    a = run_traced(Launch(ptx=STRUCT_AXPY, block=(64, 1, 1),
                          args=[Pointer(x), Struct(Pointer(np.zeros(4, np.uint32)), np.uint32(60), Pointer(y))]))
    a.save(tmp_path / "s.npz")
    g = TracedRun.load(tmp_path / "s.npz")
    assert g.arg_bytes == a.arg_bytes and np.array_equal(g.outputs[1][1], a.outputs[1][1])
    rep = diff_runs(a, g)
    assert rep.identical and [o.name for o in rep.outputs] == ["xp", "args.0", "args.1"]
    g.outputs[1][1][7] ^= 1
    rep = diff_runs(a, g)
    assert not rep.identical and [o.name for o in rep.outputs if not o.equal] == ["args.1"]


def test_a_pointer_stepped_past_its_buffer_relocates_by_derivation():
    """A loop's last increment leaves a pointer beyond its buffer; one back end packs the next buffer right after
    it, the other leaves a gap.  Same offset from the same anchor on both sides: the same value; a value one stride
    past the end on one side and elsewhere on the other: a difference; offsets farther than an extent: not a
    derivation."""
    from tcsim.hw.diff import _same_derivation
    a_anchors, b_anchors, ext = [0x1000, 0x1400], [0x7000_0000, 0x7020_0000], [0x400, 0x400]
    past = 0x1000 + 0x400 + 0x80                 # A + extent + one 128-byte stride: inside B on the packed side
    assert _same_derivation(past, 0x7000_0000 + 0x480, a_anchors, b_anchors, ext, ext)
    assert _same_derivation(0x1000 - 0x40, 0x7000_0000 - 0x40, a_anchors, b_anchors, ext, ext)   # before the start
    assert not _same_derivation(past, 0x7000_0000 + 0x500, a_anchors, b_anchors, ext, ext)
    far = 3 * 0x400 + 8
    assert not _same_derivation(0x1000 + far, 0x7000_0000 + far, a_anchors, b_anchors, ext, ext)


APPROX = HDR + r"""
.visible .entry approx(.param .u64 out_ptr)
{
	.reg .b32 	%r<3>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<4>;
	mov.u32 	%r1, %laneid;
	cvt.rn.f32.u32 	%f1, %r1;
	mul.f32 	%f1, %f1, 0f3E000000;
	ex2.approx.f32 	%f2, %f1;
	add.f32 	%f3, %f2, 0f3F800000;
	ld.param.u64 	%rd1, [out_ptr];
	mul.wide.u32 	%rd2, %r1, 4;
	add.u64 	%rd3, %rd1, %rd2;
	st.global.f32 	[%rd3], %f3;
	ret;
}
"""


def test_approx_differences_are_reported_with_ulp_distance():
    launch = Launch(ptx=APPROX, block=(32, 1, 1), args=[np.zeros(32, np.float32)])
    a = run_traced(launch)
    b = copy.deepcopy(a)
    ex2 = next(p for p in a.layout.points if p.opcode.startswith("ex2"))
    wt = b.traces[0]
    i = int(np.nonzero(wt.points == ex2.id)[0][0])
    wt.values[i, 0, 3] += np.uint64(2)                        # lane 3: 2 ulp away
    rep = diff_runs(a, b)
    assert not rep.identical
    d, = rep.approx
    assert (d.line, d.reg, d.count, d.max_ulp, d.fmt) == (ex2.line, "%f2", 1, 2, "f32")
    assert d.example[1] == 3
    assert rep.n_value_mismatches == 0                        # reported apart, never as exact mismatches
    assert ".APPROX RESULTS THAT DIFFER" in rep.format() and "2 ulp" in rep.format()


def test_polls_collapse_and_clocks_are_not_asserted():
    launch = bulk_pipeline.make_launch(chunks=4, chunk_bytes=128)
    a = run_traced(launch, ring_records=1024)
    b = copy.deepcopy(a)
    lay = b.layout
    poll = {p.id for p in lay.points if p.classes == ["poll"]}
    wt = b.traces[0]                                          # the producer warp: add failed polls
    idx = [i for i, p in enumerate(wt.points) if int(p) in poll]
    assert idx
    rep_idx = np.repeat(np.arange(len(wt)), [4 if i == idx[0] else 1 for i in range(len(wt))])
    wt.points, wt.masks, wt.values = wt.points[rep_idx], wt.masks[rep_idx], wt.values[rep_idx].copy()
    wt.clocks = (wt.clocks[rep_idx] * 3).astype(np.uint64)
    first = idx[0]
    wt.values[first:first + 3, 0, :] = 0                      # three failed polls before the success
    wt.count = len(wt.points)
    for t in b.traces[1:]:
        t.clocks = (t.clocks * 3).astype(np.uint64)
    rep = diff_runs(a, b)
    assert rep.identical, rep.format()
    assert rep.poll_collapsed[1] == rep.poll_collapsed[0] + 3 * bin(int(wt.masks[first])).count("1")
    assert abs(rep.timing["ratio"] - 3.0) < 0.01


def test_control_flow_divergence_is_reported():
    x = _x()
    a = run_traced(_axpy(x))
    b = run_traced(Launch(ptx=AXPY, grid=(2, 1, 1), block=(64, 1, 1), args=[x, np.zeros_like(x), 90]))
    rep = diff_runs(a, b)
    assert not rep.identical
    kinds = {m.kind for m in rep.mismatches}
    assert "length" in kinds or "control" in kinds
    assert "CONTROL-FLOW / LENGTH" in rep.format()


def test_different_instrumentation_is_refused():
    a = run_traced(_axpy(_x()))
    b = run_traced(_axpy(_x()), points=[_line(AXPY, "mad.lo.u32 \t%r7")])
    with pytest.raises(ValueError, match="instrumented differently"):
        diff_runs(a, b)


# ------------------------------------------------------------------------------------------- the CLI
def _cli(argv):
    return tcsim_main(["diff"] + argv)


def test_cli_against_sim_seed(capsys):
    assert _cli([str(ROOT / "examples" / "mma_gemm.py"), "--against", "sim:1"]) == 0
    out = capsys.readouterr().out
    assert "RESULT: bit-identical" in out and "D_ptr" in out


def test_cli_golden_round_trip_and_difference(tmp_path, capsys):
    golden = tmp_path / "golden.npz"
    mma = str(ROOT / "examples" / "mma_gemm.py")
    assert _cli([mma, "--against", "sim", "--save", str(golden)]) == 0
    capsys.readouterr()
    assert _cli([mma, "--against", f"golden:{golden}"]) == 0
    assert "bit-identical" in capsys.readouterr().out
    other = tmp_path / "mma_seed1.py"
    other.write_text("from examples.mma_gemm import check\nimport examples.mma_gemm as m\n\n"
                     "def make_launch():\n    return m.make_launch(seed=1)\n")
    assert _cli([str(other), "--against", f"golden:{golden}"]) == 1
    out = capsys.readouterr().out
    assert "RESULT: DIFFERENT" in out and "[3] D_ptr" in out and "VALUE MISMATCHES" in out


def test_cli_points_and_usage_errors(capsys):
    mma = str(ROOT / "examples" / "mma_gemm.py")
    assert _cli([mma, "--against", "sim:2", "--points", "42,73"]) == 0
    out = capsys.readouterr().out
    assert "2 trace points" in out
    assert _cli([mma, "--points", "x,y"]) == 2
    assert _cli([mma, "--against", "tpu"]) == 2
    assert _cli([mma, "--against", "golden:/nonexistent.npz"]) == 2
    assert _cli([mma, "--against", "sim", "--points", "1"]) == 1      # a diagnostic: no instruction there


def test_cli_without_gpu_says_so_in_one_line(capsys):
    from tcsim.hw.launcher import gpu_available

    ok, _ = gpu_available()
    if ok:
        pytest.skip("a GPU is present")
    assert _cli([str(ROOT / "examples" / "mma_gemm.py"), "--against", "gpu"]) == 2
    out = capsys.readouterr()
    lines = [l for l in (out.out + out.err).split("\n") if l.strip()]
    assert len(lines) == 1 and "no GPU" in lines[0]


# ------------------------------------------------------------------------------------------- the GPU
@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(HOPPER_EXAMPLES))
def test_examples_traced_on_gpu_match_the_simulator(name):
    hw = pytest.importorskip("tcsim.hw.launcher")
    ok, why = hw.gpu_available()
    if not ok:
        pytest.skip(why)
    mod = HOPPER_EXAMPLES[name]
    launch = mod.make_launch()
    gpu = run_traced(launch, backend="gpu", ring_records=2048)
    sim = run_traced(launch, backend="sim", ring_records=2048)
    rep = diff_runs(sim, gpu)
    assert rep.identical, rep.format()


# ------------------------------------------------------------------- H100 goldens (no GPU needed here)
GOLDEN = ROOT / "tests" / "hw" / "golden_h100"


def _against_golden(name, launch):
    """The simulator's traced run and the H100 run saved in tests/hw/golden_h100 (see its README)."""
    from tcsim.hw.trace import TracedRun

    gold = TracedRun.load(GOLDEN / f"{name}.npz")
    sim = run_traced(launch, ring_records=gold.layout.ring_records)
    # stale hardware data fails (issue 22): a silent skip would retire this hardware check unnoticed
    assert sim.layout.fingerprint == gold.layout.fingerprint, (
        f"{name}: the instrumented PTX changed since the H100 golden was recorded; re-record it on a GPU with "
        f"the command in tests/hw/golden_h100/README.md (tcsim diff ... --against gpu --save "
        f"tests/hw/golden_h100/{name}.npz)")
    assert gold.device.startswith("NVIDIA H100")
    return sim, gold


def test_every_hopper_example_is_compared():
    """Every example whose PTX targets sm_90a is in HOPPER_EXAMPLES (and has an H100 golden trace)."""
    import tcsim.examples as ex

    hopper = {p.stem for p in Path(ex.__file__).parent.glob("*.ptx")
              if ".target sm_90a" in p.read_text()}
    # wgmma_pipeline_gemm's golden trace came from an H200 (same Hopper ISA); tests/hw/test_wgmma_golden.py
    # replays it
    assert hopper == set(HOPPER_EXAMPLES) | {"wgmma_pipeline_gemm"}
    assert all((GOLDEN / f"{n}.npz").is_file() for n in hopper)


def _shared_points(layout, launch):
    """Trace points whose destinations hold shared-window addresses: mapa, cvta to shared, and a mov of a shared
    variable's address."""
    from tcsim.machine import layout_program

    m = launch.module()
    names = set(layout_program(m, m.kernel(launch.kernel))["shared_symbols"])
    return [p.id for p in layout.points
            if p.opcode.startswith(("mapa", "cvta.to.shared")) or
            (p.opcode.startswith("mov") and p.text.rstrip(";").split(",")[-1].strip() in names)]


@pytest.mark.parametrize("name", sorted(HOPPER_EXAMPLES))
def test_simulator_matches_h100_golden(name):
    mod = HOPPER_EXAMPLES[name]
    launch = mod.make_launch()
    sim, gold = _against_golden(name, launch)
    ok, msg = mod.check(gold, launch)
    assert ok, msg
    rep = diff_runs(sim, gold)
    assert rep.identical, rep.format()
    assert rep.relocated > 0                                 # buffers live elsewhere on the GPU
    # shared addresses are the H100's bit for bit, not merely at the same offset from an anchor
    pts = set(_shared_points(sim.layout, launch))
    assert pts or name == "mma_gemm"                         # mma_gemm takes no shared address
    for ws, wg in zip(sim.traces, gold.traces):
        ks = np.isin(ws.points, list(pts))
        kg = np.isin(wg.points, list(pts))
        assert np.array_equal(ws.points[ks], wg.points[kg])
        lanes = ws.masks[ks]
        for r, m in enumerate(lanes):
            sel = [(int(m) >> l) & 1 == 1 for l in range(32)]
            assert np.array_equal(ws.values[ks][r][:, sel], wg.values[kg][r][:, sel]), ws.label
    if name == "bulk_pipeline":
        assert rep.poll_collapsed[1] > rep.poll_collapsed[0]   # the H100 polled its mbarriers more often
        assert rep.compared["opaque"] > 0                     # mbarrier.arrive state tokens: not compared


def test_h100_ex2_approx_trace_is_identical():
    """ex2.approx.f32 follows the H100's measured tables (tcsim.numerics.approx), so the whole traced run -- the
    .approx results and everything downstream of them -- is bit-identical to the H100 record.  (How differing
    .approx results are reported is tested on a synthetic pair above.)"""
    sim, gold = _against_golden("approx_ex2", Launch(ptx=APPROX, block=(32, 1, 1),
                                                      args=[np.zeros(32, np.float32)]))
    rep = diff_runs(sim, gold)
    assert rep.identical, rep.format()
    assert rep.outputs_identical and not rep.approx
