"""tcsim.session.Session (issue 20, item 2): stepping, breakpoints, watchpoints, finding breaks, typed views,
forced interleavings and the located errors of bad usage.  Expected values come from the launch's inputs, from an
independent full run's event trace (tcsim.observe.EventRecorder) or from the kernel's own arithmetic."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tcsim.launch import Launch, run_launch
from tcsim.observe import EventRecorder
from tcsim.session import DebugError, DebugLookupError, Session, UntilNotReached

ROOT = Path(__file__).resolve().parents[2]


def _early_release():
    spec = importlib.util.spec_from_file_location("early_release", ROOT / "examples" / "bugs" / "early_release.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ER = _early_release()
PTX_LINES = (ROOT / "examples" / "bugs" / "early_release.ptx").read_text().splitlines()


def line_of(text: str) -> int:
    """The PTX line of the first line containing ``text`` (so the tests follow edits of the file)."""
    return next(i + 1 for i, s in enumerate(PTX_LINES) if text in s)


LD_SHARED = line_of("ld.shared.u32 \t%r32")         # the consumer's read of the stage
BULK_COPY = line_of("\tcp.async.bulk.shared::cluster")  # the producer's copy into the stage
STAGE0 = 0x480                                       # ring[] (stage 0) in the shared window (mbarriers at 0x400)

CALL_PTX = """.version 8.5
.target sm_90a
.address_size 64
.func (.param .b32 r) twice(.param .b32 a)
{
  .reg .b32 %x;
  ld.param.u32 %x, [a];
  add.u32 %x, %x, %x;
  st.param.b32 [r], %x;
  ret;
}
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  mov.u32 %r1, %tid.x;
  {
  .param .b32 a0;
  .param .b32 r0;
  st.param.b32 [a0], %r1;
  call.uni (r0), twice, (a0);
  ld.param.b32 %r3, [r0];
  }
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
}
"""


def call_launch(block=128):
    return Launch(ptx=CALL_PTX, block=(block, 1, 1), args=[np.zeros(block, np.uint32)], name="call")


# ---------------------------------------------------------------------------------------------- bad usage
def test_lookups_name_what_exists():
    s = Session(call_launch(128))                           # 4 warps
    with pytest.raises(DebugLookupError) as e:
        s.reg("%r14", warp=7)
    assert "no warp 7" in str(e.value) and "4 warps (0-3)" in str(e.value)
    assert isinstance(e.value, KeyError)                    # (what callers of the old API caught)
    with pytest.raises(DebugLookupError, match=r"no register %r9; it declares %r0-%r7, %rd0-%rd7"):
        s.reg("%r9", warp=1)
    with pytest.raises(DebugLookupError, match=r"no mbarrier at SMEM offset 0x4 .*none has been"):
        s.mbarrier(0x4)
    with pytest.raises(DebugLookupError, match=r"no CTA 3: 1 CTA started"):
        s.reg("%r1", cta=3)
    with pytest.raises(DebugLookupError, match="no lane 32"):
        s.regs(warp=0, lane=32)
    with pytest.raises(DebugLookupError, match="has no parameter 'outp'"):
        s.gmem_view("outp")
    assert s.pos == 0                                       # nothing ran


def test_mbarrier_error_lists_the_initialised_ones():
    s = Session(ER.make_launch())
    s.run(until=line_of("fence.mbarrier_init"))
    with pytest.raises(DebugLookupError) as e:
        s.mbarrier(0x4)
    msg = str(e.value)
    assert "0x400 (full_bar)" in msg and "0x418 (empty_bar)" in msg and "0x428 (empty_bar+16)" in msg
    assert s.mbarrier("empty_bar+8").expected == 32          # the kernel's init count (mbarrier.init [%r4+8], 32)
    assert s.mbarrier(0x400).expected == 1


def test_run_until_fails_at_once_or_says_what_happened():
    s = Session(ER.make_launch())
    empty = line_of(".reg .b64 \t%rd<16>")                  # a declaration: no instruction
    with pytest.raises(DebugError) as e:
        s.run(until={"warp": 1, "line": empty})
    assert e.value.loc.line == empty and "holds no instruction" in str(e.value) and "nearest" in str(e.value)
    with pytest.raises(DebugLookupError, match="no warp 7"):
        s.run(until={"warp": 7, "line": LD_SHARED})
    with pytest.raises(DebugError, match="has no field 'lane'"):
        s.run(until={"lane": 3})
    assert s.pos == 0
    with pytest.raises(UntilNotReached, match="did not hold within 5 warp-instructions"):
        s.run(until=lambda ss: ss.sim.retired > 50, max_steps=5)
    r = s.run(until=lambda ss: ss.mbarrier("full_bar").phase == 1 if ss.sim.ctas[0].mbarriers else False)
    assert s.mbarrier(0x400).phase == 1 and r is not None
    # warp 0 (the producer) never executes the consumer's read: the kernel ends first, and the error says who did
    with pytest.raises(UntilNotReached) as e:
        s.run(until={"warp": 0, "line": LD_SHARED})
    assert e.value.loc.line == LD_SHARED
    assert f"line {LD_SHARED} was retired by warp 1" in str(e.value)
    assert s.done


def test_wall_time_is_measured():
    s = Session(ER.make_launch())
    s.step(20)
    res = s.finish()
    assert res.stats["wall_s"] > 0.0
    assert res.stats["warp_instructions"] == run_launch(ER.make_launch()).stats["warp_instructions"]


# ---------------------------------------------------------------------------------------------- stepping
def test_step_of_one_warp_and_next_over_a_call():
    s = Session(call_launch(64))
    before = s.warp(1).retired
    r = s.step(3, warp=1)
    assert r.warp == 1 and s.warp(1).retired == before + 3
    call_line = line_of_text(CALL_PTX, "call.uni")
    s = Session(call_launch(64))
    s.run(until={"warp": 1, "line": call_line - 1})        # st.param before the call
    r = s.next(warp=1)                                      # the call and the whole of twice() as one step
    assert r.warp == 1 and r.line == line_of_text(CALL_PTX, "ret;")
    assert s.warp(1).pc[0] == r.pc + 1 or s.sim.program.body[int(s.warp(1).pc[0])].loc.line == call_line + 1
    r = s.next(warp=1)
    assert r.line == call_line + 1                          # ld.param.b32 %r3, [r0]
    assert list(s.reg("%r3", warp=1)) == [2 * t for t in range(32, 64)]      # twice(tid)


def line_of_text(ptx: str, text: str) -> int:
    return next(i + 1 for i, s in enumerate(ptx.splitlines()) if text in s)


def test_breakpoints_stop_as_often_as_the_trace_retires_the_line():
    rec = EventRecorder(kinds=("inst",))
    run_launch(ER.make_launch(), observers=[rec], timing=False)
    want = [e.cycle for e in rec.events if e.line == LD_SHARED and e.warp == 1]
    s = Session(ER.make_launch())
    bp = s.break_at(LD_SHARED, warp=1)
    got = []
    while True:
        st = s.cont()
        if st.reason == "exited":
            break
        assert st.reason == "breakpoint" and st.point is bp and st.retired.line == LD_SHARED
        got.append(st.retired.cycle)
    assert got == want and bp.hits == len(want) == ER.CHUNKS


def test_conditional_and_temporary_breakpoints():
    s = Session(ER.make_launch())
    bp = s.break_at(LD_SHARED, cond="%r22 == 2 && %r30 == 64")     # chunk 2; lane 16 reads byte 64
    st = s.cont()
    assert st.point is bp
    assert int(s.reg("%r22", warp=1)[0]) == 2
    # the loaded word is chunk 2's element 16 (the launch's input; the default schedule reads it in time)
    assert int(s.reg("%r32", warp=1)[16]) == int(s.launch.args[0][2 * 32 + 16])
    assert s.cont().reason == "exited" and bp.hits == 1
    s.restart()                                             # (breakpoints stay: the same stop again)
    assert s.cont().point is bp and bp.hits == 2
    s.delete(bp.id)
    tb = s.break_at(LD_SHARED, warp=1, temporary=True)
    assert s.cont().point is tb and tb.id not in s.breakpoints
    assert s.cont().reason == "exited"
    with pytest.raises(DebugError, match="not an expression"):
        s.break_at(LD_SHARED, cond="%r22 ==")
    with pytest.raises(DebugLookupError, match="no register %r99"):
        s.break_at(LD_SHARED, cond="%r99 > 1")


def test_watchpoints_show_writer_old_and_new():
    launch = ER.make_launch()
    src = launch.args[0]
    s = Session(launch)
    wp = s.watch_smem(STAGE0, 4, dtype="u32")
    st = s.cont()
    assert st.reason == "watchpoint" and st.point is wp
    assert "TMA engine" in st.writer and f"issued at line {BULK_COPY} by warp 0" in st.writer
    assert int(st.old.view(np.uint32)[0]) == 0 and int(st.new.view(np.uint32)[0]) == int(src[0])
    # the whole stage landed in the same event: chunk 0 of the input
    assert np.array_equal(s.smem_view(STAGE0, (32,), "u32"), src[:32])
    st = s.cont()                                           # chunk 3 lands in stage 0 (3 stages)
    assert int(st.new.view(np.uint32)[0]) == int(src[3 * 32]) and "TMA engine" in st.writer
    # an mbarrier watch: full_bar of stage 0 flips phase when the bytes land
    s.restart()
    s.delete()
    mw = s.watch_mbarrier("full_bar")
    st = s.cont()                                           # the init
    assert st.new == (0, 1, 1, 0) and st.old is None
    # global memory: out[5] written by the consumer (warp 1, lane 5) with 3 * in[5] + 1
    s.delete()
    gw = s.watch_gmem("out_ptr", 5)
    st = s.cont()
    assert st.point is gw and "warp 1 lane 5" in st.writer
    assert int(st.new.view(np.uint32)[0]) == (3 * int(src[5]) + 1) % 2**32
    assert mw.id not in s.watchpoints


def test_finding_break_and_in_flight_ops():
    s = Session(ER.make_launch())
    s.break_at(BULK_COPY)
    st = s.cont()
    ops = s.in_flight()
    assert len(ops) == 1 and ops[0]["unit"] == "tma" and ops[0]["line"] == BULK_COPY and ops[0]["issuer_warp"] == 0
    assert ops[0]["due"] is None                            # (queued: the engine has not taken it yet)
    for _ in range(10):                                     # a few events on, its completion is scheduled
        s.goto(s.pos + 1)
        if s.in_flight()[0]["due"] is not None:
            break
    due = s.in_flight()[0]["due"]
    assert due is not None and due > s.sim.env.now
    assert "completes" in str(s.async_table()) and f"{due:g}" in str(s.async_table())
    s.delete()
    s.watch_smem(STAGE0, 4)
    st = s.cont()
    assert st.reason == "watchpoint" and s.sim.env.now == due          # it landed when its unit said it would
    s.delete()
    fb = s.break_finding(2)
    st = s.cont()
    assert st.reason == "finding" and st.finding.cls == 2 and st.point is fb
    assert set(st.finding.lines) == {LD_SHARED, BULK_COPY}
    with pytest.raises(DebugLookupError, match="no finding class 99"):
        s.break_finding(99)


# ---------------------------------------------------------------------------------------------- views
def test_typed_views_and_rich_reprs():
    launch = ER.make_launch()
    s = Session(launch)
    res_out = None
    s.run(until=LD_SHARED)
    regs = s.registers(warp=1, lanes=[0, 1])
    assert "<table" in regs._repr_html_() and "%r32" in str(regs)
    assert regs.column("lane 1")[regs.column("register").index("%r21")] == "4"     # lane 1's byte offset
    mbs = s.mbarrier_table()
    assert mbs.column("symbol")[:2] == ["full_bar", "full_bar+8"] and "<table" in mbs._repr_html_()
    assert s.reg("%r32", warp=1, ptype="f16x2").shape == (32, 2)
    assert "<table" in s._repr_html_() and "waiting on" in s._repr_html_() and "position" in repr(s)
    lo = s.reg("%r32", warp=1, ptype="f16x2")[0, 0]
    assert lo.view(np.uint16) == np.uint16(int(launch.args[0][0]) & 0xFFFF)
    res_out = s.finish().outputs[1]
    assert np.array_equal(s.gmem_view("out_ptr"), res_out)
    assert np.array_equal(s.gmem_view(1, "u8")[:4], res_out[:1].view(np.uint8))


# ---------------------------------------------------------------------------------------------- interleavings
def test_forcing_an_interleaving_reproduces_the_wrong_output():
    launch = ER.make_launch()
    want = ER.reference(launch)
    s = Session(launch)
    assert np.array_equal(s.finish().outputs[1], want)      # the default schedule hides the race
    outs = []
    for _ in range(2):
        s = Session(launch)
        s.schedule_first(0)                                 # the producer ahead: the stage is refilled too early
        s.delay("tma", "early")                             # ... by a copy at its earliest (the preset's: 200 cycles)
        out = s.finish().outputs[1]
        outs.append(out)
        ok, msg = ER.check(s._result, launch)
        assert not ok
    assert np.array_equal(outs[0], outs[1])                 # deterministic
    wrong = np.flatnonzero(outs[0] != want)
    # the consumer read chunk c + 3 where it wanted chunk c: every wrong word is 3 * in[i + 96] + 1
    assert wrong.size and np.array_equal(outs[0][wrong], (launch.args[0][wrong + 96].astype(np.uint64) * 3 + 1)
                                         .astype(np.uint32))
    s = Session(launch)
    base = Session(launch).finish().stats["cycles"]
    s.delay("tma", "late")
    r = s.finish()
    assert r.stats["cycles"] > base and np.array_equal(r.outputs[1], want)
    with pytest.raises(DebugLookupError, match="no async unit 'dma'"):
        s.delay("dma")


def test_a_dsmem_store_from_another_cta_stops_the_watch_of_the_target_cta():
    from tcsim.examples import cluster_exchange as ce
    launch = ce.make_launch()
    rec = EventRecorder(kinds=("mem",))
    run_launch(launch, observers=[rec], timing=False)
    ev = next(e for e in rec.events if e.space == "shared::cluster" and e.is_write and e.agent == "warp")
    rank, off = ev.addrs[0] >> 24, ev.addrs[0] & 0xFFFFFF        # (the trace's own encoding of the address)
    s = Session(launch)
    target = s.sim.cta_index[tuple(ev.cta)].cluster.ctas[rank]
    assert target.ctaid != tuple(ev.cta)                           # another CTA's shared memory
    s.watch_smem(off, 4, cta=target.ctaid)
    st = s.cont()
    assert st.reason == "watchpoint" and s.sim.env.now == ev.cycle
    assert f"(warp {ev.warp} lane {ev.lanes[0]}, CTA {tuple(ev.cta)}," in st.writer


def test_tcsim_debug_reports_a_bad_launch_file_without_a_traceback(tmp_path, capsys):
    from tcsim.cli import main
    (tmp_path / "bad.py").write_text("import numpy\nraise ValueError('boom')\n")
    assert main(["debug", str(tmp_path / "bad.py")]) == 2
    err = capsys.readouterr().err
    assert "importing the launch file raised ValueError: boom" in err and "bad.py:2" in err
    assert main(["debug", str(tmp_path / "none.py")]) == 2
    assert "not found" in capsys.readouterr().err
    er = str(ROOT / "examples" / "bugs" / "early_release.py")
    assert main(["debug", er, "-x", str(tmp_path / "no.txt")]) == 2
    assert "command file" in capsys.readouterr().err
