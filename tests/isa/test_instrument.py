"""tcsim.isa.instrument (PTX -> PTX trace rewriter) and hw.trace (decoder, traced runs) on the simulator.

The instrumented PTX of the examples and of the nvcc sm_90a fixtures must pass ptxas; the instrumented
run must produce the same outputs as the plain run; decoded records are checked against hand-computed values,
masks of divergent code, guards, ring wrap-around, the warp index of 2-D blocks and grids, and scoped
registers of inline-asm blocks.
"""
from __future__ import annotations

import glob
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.errors import LaunchError, TcsimError
from tcsim.isa.instrument import TRACE_PARAM, InstrumentError, TraceLayout, instrument
from tcsim.isa.parser import parse
from tcsim.launch import Launch, run_launch
from tcsim.hw.trace import TracedRun, decode_trace, run_traced, traced_launch

import tcsim.examples.bulk_pipeline as bulk_pipeline
import tcsim.examples.mma_gemm as mma_gemm
import tcsim.examples.tma_mma_gemm as tma_mma_gemm

ROOT = Path(__file__).resolve().parents[2]
PTXAS = shutil.which("ptxas")
EXAMPLES = {"mma_gemm": mma_gemm, "tma_mma_gemm": tma_mma_gemm, "bulk_pipeline": bulk_pipeline}
HDR = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def _ptxas(tmp_path, text, name, arch="sm_90a"):
    p = tmp_path / name
    p.write_text(text)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(p), "-o", "/dev/null"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr


def _line_of(text: str, needle: str) -> int:
    for i, l in enumerate(text.split("\n"), 1):
        if needle in l:
            return i
    raise AssertionError(f"{needle!r} not in the PTX")


def _recs(wt):
    return list(wt.records)


# ------------------------------------------------------------------------------------------------ ptxas
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")


@needs_ptxas
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_instrumented_example_passes_ptxas(name, tmp_path):
    mod = EXAMPLES[name]
    new, lay = instrument(mod.PTX.read_text(), str(mod.PTX))
    assert len(lay.points) > 20
    _ptxas(tmp_path, new, f"{name}.traced.ptx")


_FIXTURES = sorted(glob.glob(str(ROOT / "tests/fixtures/nvcc/*.sm_90a.ptx")))


@needs_ptxas
@pytest.mark.parametrize("path", _FIXTURES, ids=[Path(p).name for p in _FIXTURES])
def test_instrumented_nvcc_fixture_passes_ptxas(path, tmp_path):
    text = Path(path).read_text()
    module = parse(text, path)
    for k in module.kernels:
        new, lay = instrument(text, path, kernel=k)
        assert lay.points
        _ptxas(tmp_path, new, f"{Path(path).stem}.{len(k)}.traced.ptx")


def test_call_sequence_scopes_are_skipped():
    path = ROOT / "tests/fixtures/nvcc/printf_calls.sm_90a.ptx"
    text = path.read_text()
    k = next(n for n in parse(text, str(path)).kernels)
    _, lay = instrument(text, str(path), kernel=k)
    reasons = {s[2] for s in lay.skipped}
    assert "inside a call-sequence scope" in reasons


def test_inline_asm_scope_registers_are_traced():
    """cluster_dsmem wraps try_wait in `{ .reg .pred P1; ... }`: the record block sits in that scope."""
    path = ROOT / "tests/fixtures/nvcc/cluster_dsmem.sm_90a.ptx"
    text = path.read_text()
    new, lay = instrument(text, str(path))
    waits = [p for p in lay.points if p.opcode.startswith("mbarrier.try_wait")]
    assert waits and all(p.dests == [("P1", "pred")] and p.classes == ["poll"] for p in waits)


# ----------------------------------------------------------------------------- the rewrite keeps semantics
def test_original_instructions_are_kept_in_order():
    text = tma_mma_gemm.PTX.read_text()
    new, lay = instrument(text, "t.ptx")
    orig = [str(i) for i in parse(text, "o").kernel().body]
    body = [str(i) for i in parse(new, "n").kernel().body]
    it = iter(body)
    assert all(any(x == y for y in it) for x in orig)       # a subsequence
    fn = parse(new, "n").kernel()
    assert fn.params[-1].name == TRACE_PARAM and fn.params[-1].type == "u64"
    # instrumentation registers are fresh: none of them is an original register
    ours = [r for r in fn.regs if re.sub(r"@\d+$", "", r).startswith(("%__tc", "%__tp"))]
    assert ours and not set(parse(text, "o").kernel().regs) & set(ours)
    # every original line survives verbatim
    for line in text.split("\n"):
        assert line in new


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_traced_run_gives_the_same_outputs(name):
    mod = EXAMPLES[name]
    launch = mod.make_launch()
    plain = run_launch(launch)
    traced = run_traced(launch, backend="sim")
    ok, msg = mod.check(traced, launch)
    assert ok, msg
    for a, b in zip(plain.outputs, traced.outputs):
        if a is not None:
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
    outs, traces = traced                          # unpacks as (outputs, per-warp traces)
    assert len(traces) == launch.block[0] // 32 and all(t.count > 0 for t in traces)


# -------------------------------------------------------------------------------- hand-computed records
SIMPLE = HDR + r"""
.visible .entry simple(.param .u64 out_ptr, .param .u32 n)
{
	.reg .pred 	%p<3>;
	.reg .b16 	%h<3>;
	.reg .b32 	%r<8>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<5>;
	mov.u32 	%r1, %tid.x;
	mad.lo.u32 	%r2, %r1, 3, 1;
	setp.lt.u32 	%p1, %r1, 5;
	cvt.rn.f32.u32 	%f1, %r2;
	cvt.u16.u32 	%h1, %r2;
	ld.param.u64 	%rd1, [out_ptr];
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r1, 4;
	add.u64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r2;
	ret;
}
"""


def test_decoded_records_equal_hand_computed_values():
    out = np.zeros(40, dtype=np.uint32)
    launch = Launch(ptx=SIMPLE, grid=(1, 1, 1), block=(40, 1, 1), args=[out, 40])
    run = run_traced(launch)
    assert np.array_equal(run.outputs[0], 3 * np.arange(40, dtype=np.uint32) + 1)
    lay = run.layout
    assert [p.line for p in lay.points] == [_line_of(SIMPLE, s) for s in (
        "mov.u32 \t%r1", "mad.lo", "setp.lt", "cvt.rn", "cvt.u16", "ld.param", "cvta", "mul.wide", "add.u64")]
    assert [s[1] for s in lay.skipped] == ["st.global.u32 [%rd4], %r2;", "ret;"]
    assert len(run.traces) == 2
    for w, wt in enumerate(run.traces):
        assert wt.cta == (0, 0, 0) and wt.warp == w and wt.count == 9 and wt.dropped == 0
        recs = _recs(wt)
        n = 32 if w == 0 else 8
        want_mask = (1 << n) - 1
        tid = np.arange(32, dtype=np.uint64) + 32 * w
        assert [r.point for r in recs] == list(range(9))
        assert all(r.mask == want_mask for r in recs)
        lanes = slice(0, n)
        assert np.array_equal(recs[0].values["%r1"][lanes], tid[lanes])
        assert np.array_equal(recs[1].values["%r2"][lanes], (3 * tid + 1)[lanes])
        assert np.array_equal(recs[2].values["%p1"][lanes], (tid < 5).astype(np.uint64)[lanes])
        f = (3 * tid + 1).astype(np.float32).view(np.uint32).astype(np.uint64)
        assert np.array_equal(recs[3].values["%f1"][lanes], f[lanes])
        assert np.array_equal(recs[4].values["%h1"][lanes], ((3 * tid + 1) & 0xFFFF)[lanes])
        base = int(wt.anchors[0])                  # the out_ptr anchor = the buffer's device address
        assert np.all(recs[5].values["%rd1"][lanes] == base)
        assert np.array_equal(recs[8].values["%rd4"][lanes], (base + 4 * tid)[lanes])
        clocks = [r.clock for r in recs]
        assert clocks == sorted(clocks) and clocks[0] > 0
    cls = {p.dests[0][0]: p.classes[0] for p in lay.points}
    assert cls["%rd1"] == cls["%rd2"] == cls["%rd4"] == "address" and cls["%r2"] == "exact"
    assert lay.anchors[0].kind == "param" and lay.anchors[0].name == "out_ptr"


DIVERGENT = HDR + r"""
.visible .entry divergent(.param .u64 out_ptr)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;
	mov.u32 	%r1, %laneid;
	setp.lt.u32 	%p1, %r1, 10;
	@%p1 bra 	$L_if;
	add.u32 	%r2, %r1, 100;
	bra.uni 	$L_join;
$L_if:
	add.u32 	%r2, %r1, 200;
$L_join:
	add.u32 	%r3, %r2, 1;
	@%p1 add.u32 	%r4, %r1, 7;
	setp.gt.u32 	%p2, %r1, 100;
	@%p2 mov.u32 	%r5, 1;
	@%p1 setp.ne.u32 	%p1, %r1, 3;
	ld.param.u64 	%rd1, [out_ptr];
	mul.wide.u32 	%rd2, %r1, 4;
	add.u64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r3;
	ret;
}
"""


def test_divergent_if_else_masks():
    out = np.zeros(32, dtype=np.uint32)
    run = run_traced(Launch(ptx=DIVERGENT, block=(32, 1, 1), args=[out]))
    lane = np.arange(32, dtype=np.uint64)
    assert np.array_equal(run.outputs[0], np.where(lane < 10, lane + 201, lane + 101).astype(np.uint32))
    lay = run.layout
    by_line = {}
    for r in _recs(run.traces[0]):
        by_line.setdefault(lay.points[r.point].text, []).append(r)
    else_r, = by_line["add.u32 %r2, %r1, 100;"]
    if_r, = by_line["add.u32 %r2, %r1, 200;"]
    join, = by_line["add.u32 %r3, %r2, 1;"]
    assert else_r.mask == 0xFFFFFC00 and if_r.mask == 0x000003FF and join.mask == 0xFFFFFFFF
    assert np.array_equal(if_r.values["%r2"][:10], lane[:10] + 200)
    assert np.array_equal(else_r.values["%r2"][10:], lane[10:] + 100)
    guarded, = by_line["@%p1 add.u32 %r4, %r1, 7;"]          # mask = the lanes that executed it
    assert guarded.mask == 0x3FF and np.array_equal(guarded.values["%r4"][:10], lane[:10] + 7)
    assert "@%p2 mov.u32 %r5, 1;" not in by_line              # no lane executed it: no record
    own, = by_line["@%p1 setp.ne.u32 %p1, %r1, 3;"]           # overwrites its own guard
    assert own.mask == 0x3FF and list(own.values["%p1"][:10]) == [int(i != 3) for i in range(10)]


def test_divergent_masks_recorded_on_an_h100():
    """The same instrumented kernel on an H100 (tests/hw/golden_h100): the same lane groups (it ran the
    if-side first), values identical lane by lane."""
    from tcsim.hw.diff import diff_runs

    gold = TracedRun.load(ROOT / "tests/hw/golden_h100/divergent.npz")
    run = run_traced(Launch(ptx=DIVERGENT, block=(32, 1, 1), args=[np.zeros(32, np.uint32)]),
                     ring_records=gold.layout.ring_records)
    assert run.layout.fingerprint == gold.layout.fingerprint, (
        "the instrumented PTX changed since the H100 golden was recorded: stale hardware data fails instead of "
        "skipping; re-record tests/hw/golden_h100/divergent.npz on a GPU (tests/hw/golden_h100/README.md)")
    lay = gold.layout
    masks = {lay.points[r.point].text: r.mask for r in _recs(gold.traces[0])}
    assert masks["add.u32 %r2, %r1, 100;"] == 0xFFFFFC00 and masks["add.u32 %r2, %r1, 200;"] == 0x3FF
    assert masks["add.u32 %r3, %r2, 1;"] == 0xFFFFFFFF and masks["@%p1 add.u32 %r4, %r1, 7;"] == 0x3FF
    assert "@%p2 mov.u32 %r5, 1;" not in masks
    assert diff_runs(run, gold).identical


LOOP = HDR + r"""
.visible .entry loop(.param .u64 out_ptr, .param .u32 n)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<4>;
	ld.param.u32 	%r2, [n];
	mov.u32 	%r1, 0;
$L_top:
	add.u32 	%r1, %r1, 1;
	setp.lt.u32 	%p1, %r1, %r2;
	@%p1 bra 	$L_top;
	ld.param.u64 	%rd1, [out_ptr];
	st.global.u32 	[%rd1], %r1;
	ret;
}
"""


def test_ring_wraps_and_keeps_the_newest_records():
    out = np.zeros(1, dtype=np.uint32)
    run = run_traced(Launch(ptx=LOOP, block=(32, 1, 1), args=[out, 100]), ring_records=15)
    wt = run.traces[0]
    assert wt.count == 2 + 2 * 100 + 1 and len(wt) == 15 and wt.dropped == wt.count - 15
    recs = _recs(wt)
    assert run.layout.points[recs[-1].point].text.startswith("ld.param.u64")
    # the newest 14 before it: add/setp pairs of iterations 94..100
    adds = [int(r.values["%r1"][0]) for r in recs if "%r1" in r.values]
    assert adds == list(range(94, 101))


def test_selected_points_by_line():
    lines = [_line_of(LOOP, "add.u32"), _line_of(LOOP, "ld.param.u64")]
    out = np.zeros(1, dtype=np.uint32)
    run = run_traced(Launch(ptx=LOOP, block=(32, 1, 1), args=[out, 5]), points=lines)
    assert [p.line for p in run.layout.points] == lines
    recs = _recs(run.traces[0])
    assert [r.line for r in recs] == [lines[0]] * 5 + [lines[1]]
    with pytest.raises(InstrumentError, match="no traceable register write"):
        instrument(LOOP, "l.ptx", points=[_line_of(LOOP, "@%p1 bra")])
    with pytest.raises(InstrumentError, match="no instruction"):
        instrument(LOOP, "l.ptx", points=[1])


GRID2D = HDR + r"""
.visible .entry grid2d(.param .u64 out_ptr)
{
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<4>;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ctaid.y;
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %tid.y;
	mad.lo.u32 	%r5, %r1, 10, %r2;
	mad.lo.u32 	%r5, %r5, 10, %r4;
	mad.lo.u32 	%r5, %r5, 10, %r3;
	ret;
}
"""


def test_warp_index_of_2d_grid_and_block():
    run = run_traced(Launch(ptx=GRID2D, grid=(2, 3, 1), block=(8, 6, 1), args=[np.zeros(1, np.uint32)]))
    assert len(run.traces) == 2 * 3 * 2                     # 48 threads: 2 warps per CTA
    for wt in run.traces:
        cx, cy, _ = wt.cta
        assert wt.index == (cy * 2 + cx) * 2 + wt.warp
        last = _recs(wt)[-1]
        n = 32 if wt.warp == 0 else 16
        assert last.mask == (1 << n) - 1
        lin = 32 * wt.warp + np.arange(n)
        want = ((cx * 10 + cy) * 10 + lin // 8) * 10 + lin % 8
        assert np.array_equal(last.values["%r5"][:n], want.astype(np.uint64))


SCOPED = HDR + r"""
.visible .entry scoped(.param .u64 out_ptr)
{
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<3>;
	mov.u32 	%r1, %laneid;
	{
	.reg .pred P1;
	.reg .b32 %r1;
	mov.u32 %r1, 7;
	setp.eq.u32 P1, %r1, 7;
	selp.u32 %r2, 1, 0, P1;
	}
	add.u32 	%r3, %r1, %r2;
	ld.param.u64 	%rd1, [out_ptr];
	mul.wide.u32 	%rd2, %r1, 4;
	add.u64 	%rd1, %rd1, %rd2;
	st.global.u32 	[%rd1], %r3;
	ret;
}
"""


def test_scoped_registers_resolve_as_in_the_original(tmp_path):
    new, lay = instrument(SCOPED, "s.ptx")
    if PTXAS:
        _ptxas(tmp_path, new, "scoped.ptx")
    run = run_traced(Launch(ptx=SCOPED, block=(32, 1, 1), args=[np.zeros(32, np.uint32)]))
    assert np.array_equal(run.outputs[0], np.arange(32) + 1)
    recs = {lay.points[r.point].text: r for r in _recs(run.traces[0])}
    assert np.all(recs["mov.u32 %r1@1, 7;"].values["%r1"] == 7)           # the inner %r1
    assert np.all(recs["setp.eq.u32 P1@1, %r1@1, 7;"].values["P1"] == 1)
    assert np.array_equal(recs["add.u32 %r3, %r1, %r2;"].values["%r3"], np.arange(32) + 1)   # outer %r1


def test_classes_of_the_examples():
    _, lay = instrument(bulk_pipeline.PTX.read_text(), "b.ptx")
    by = {p.text: p.classes for p in lay.points}
    assert by["mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r15], %r12;"] == ["poll"]
    assert by["mbarrier.arrive.shared::cta.b64 %rd9, [%r28];"] == ["opaque"]
    assert by["mov.u32 %r3, full_bar;"] == ["address"]
    assert by["mad.lo.u32 %r33, %r32, 3, 1;"] == ["exact"]
    kinds = {(a.kind, a.name) for a in lay.anchors}
    assert {("param", "in_ptr"), ("shared", "full_bar"), ("shared", "ring"), ("shared_generic", "ring")} <= kinds
    _, lay = instrument(tma_mma_gemm.PTX.read_text(), "t.ptx")
    assert {("param_addr", "tmapA"), ("param_generic", "tmapB")} <= {(a.kind, a.name) for a in lay.anchors}


def test_timing_and_hwid_and_approx_classes():
    text = HDR + r"""
.visible .entry k(.param .u64 p)
{
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<3>;
	.reg .f32 	%f<4>;
	mov.u64 	%rd1, %clock64;
	add.u64 	%rd2, %rd1, 5;
	mov.u32 	%r1, %smid;
	mov.u32 	%r2, %laneid;
	cvt.rn.f32.u32 	%f1, %r2;
	ex2.approx.f32 	%f2, %f1;
	add.f32 	%f3, %f2, %f1;
	ret;
}
"""
    _, lay = instrument(text, "k.ptx")
    cls = {p.dests[0][0]: p.classes[0] for p in lay.points}
    assert cls == {"%rd1": "timing", "%rd2": "timing", "%r1": "hwid", "%r2": "exact", "%f1": "exact",
                   "%f2": "approx", "%f3": "exact"}
    ex2 = next(p for p in lay.points if p.dests[0][0] == "%f2")
    assert ex2.approx_format == "f32"
    assert next(p for p in lay.points if p.dests[0][0] == "%f3").approx_inputs


# ------------------------------------------------------------------------------------------ errors, layout
def test_errors_are_typed():
    with pytest.raises(InstrumentError, match="already"):
        new, _ = instrument(SIMPLE, "s.ptx")
        instrument(new, "s2.ptx")
    with pytest.raises(LaunchError):
        instrument(SIMPLE, "s.ptx", kernel="nope")
    with pytest.raises(InstrumentError):
        instrument(SIMPLE, "s.ptx", ring_records=0)
    clash = SIMPLE.replace(".reg .b64 \t%rd<5>;", ".reg .b64 \t%rd<5>;\n\t.reg .b32 %__tc_a;")
    with pytest.raises(InstrumentError, match="collides"):
        instrument(clash, "c.ptx")
    assert issubclass(InstrumentError, TcsimError)


def test_layout_round_trips_and_decoder_checks_size(tmp_path):
    out = np.zeros(40, dtype=np.uint32)
    launch = Launch(ptx=SIMPLE, block=(40, 1, 1), args=[out, 40])
    run = run_traced(launch)
    lay2 = TraceLayout.from_json(run.layout.to_json())
    assert lay2 == run.layout
    with pytest.raises(TcsimError, match="bytes"):
        decode_trace(run.buffer[:-16], run.layout, (1, 1, 1), (40, 1, 1))
    path = tmp_path / "run.npz"
    run.save(path)
    back = TracedRun.load(path)
    assert back.backend == "golden" and back.layout.fingerprint == run.layout.fingerprint
    assert np.array_equal(back.outputs[0], run.outputs[0]) and back.outputs[1] is None
    assert [len(t) for t in back.traces] == [len(t) for t in run.traces]
    tl, lay, buf = traced_launch(launch)
    assert buf.nbytes == lay.buffer_bytes((1, 1, 1), (40, 1, 1)) == 2 * lay.region_bytes
