"""Reverse execution (issue 20): deterministic replay lands exactly where a full trace of an independent run says.

reverse-continue with a watchpoint must land on the event that last wrote the watched bytes -- whichever agent
wrote them: the TMA engine completing a bulk copy into SMEM, the tensor pipe completing a tcgen05.mma into TMEM.
The oracle is the event trace of a separate ``run_launch`` (tcsim.observe.EventRecorder): the last write event
overlapping the bytes, and how many warp-instructions retired before it in the trace."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tcsim.launch import run_launch
from tcsim.observe import EventRecorder
from tcsim.session import DebugError, Session

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("early_release", ROOT / "examples" / "bugs" / "early_release.py")
ER = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ER)
STAGE0 = 0x480


def trace(launch, **kw):
    rec = EventRecorder(kinds=("inst", "mem"))
    run_launch(launch, observers=[rec], timing=False, **kw)
    return rec.events


def last_write(events, touches):
    """(index in the trace, event) of the last memory write for which ``touches(event)``; and the number of
    warp-instructions retired before it."""
    j = max(i for i, e in enumerate(events) if e.kind == "mem" and e.is_write and touches(e))
    return j, events[j], sum(1 for e in events[:j] if e.kind == "inst")


def smem_touch(lo, hi):
    return lambda e: e.space.startswith("shared") and any(a < hi and a + e.size > lo for a in e.addrs)


def test_reverse_continue_lands_on_the_last_tma_write_into_smem():
    launch = ER.make_launch()
    events = trace(launch)
    s = Session(launch)
    s.run()                                                 # to the end
    final = s.smem_view(STAGE0, (1,), "u32")[0]
    s.watch_smem(STAGE0, 4, dtype="u32")
    st = s.reverse_cont()
    j, ev, retired = last_write(events, smem_touch(STAGE0, STAGE0 + 4))
    assert ev.agent == "tma"                                # the oracle's writer: the TMA engine
    assert st.reason == "watchpoint" and "TMA engine" in st.writer
    assert s.sim.retired == retired and s.sim.env.now == ev.cycle
    assert s.smem_view(STAGE0, (1,), "u32")[0] == final     # the value it left is the final one
    assert int(st.new.view(np.uint32)[0]) == final != int(st.old.view(np.uint32)[0])
    landed = s.pos
    # once more: the write before it (chunk 0's copy into the same stage)
    st2 = s.reverse_cont()
    j2, ev2, retired2 = last_write(events[:j], smem_touch(STAGE0, STAGE0 + 4))
    assert s.sim.retired == retired2 and s.sim.env.now == ev2.cycle
    assert int(st2.new.view(np.uint32)[0]) == int(launch.args[0][0])
    # and forward again: the next stop is the same write as before, at the same position
    st3 = s.cont()
    assert st3.reason == "watchpoint" and s.pos == landed and s.sim.retired == retired


def test_reverse_step_is_the_state_a_forward_run_reaches():
    launch = ER.make_launch()
    s = Session(launch)
    s.step(150)
    s.step(1)
    st = s.reverse_step()
    assert "has not executed yet" in st.message and s.sim.retired == 150
    fresh = Session(launch)
    fresh.step(150)
    for w in range(2):
        assert np.array_equal(s.pcs(w), fresh.pcs(w))
        a, b = s.regs(w), fresh.regs(w)
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    # reverse-step lands just before the undone instruction, after any async completion that preceded it
    assert s.pos >= fresh.pos
    fresh.goto(s.pos)
    assert np.array_equal(s.smem(), fresh.smem()) and s.sim.env.now == fresh.sim.env.now
    # reverse-step of one warp: back to before warp 0's last instruction
    n0 = s.warp(0).retired
    s.reverse_step(warp=0)
    assert s.warp(0).retired == n0 - 1
    s.reverse_step(3)
    assert s.sim.retired == sum(s.warp(w).retired for w in range(2))
    with pytest.raises(DebugError, match="cannot go back"):
        s.reverse_step(10_000)
    with pytest.raises(DebugError, match="already at the start"):
        Session(launch).reverse_cont()


def test_goto_back_and_forth_is_deterministic_under_a_forced_schedule():
    launch = ER.make_launch()
    s = Session(launch)
    s.schedule_first(0)
    s.goto(300)
    snap = (s.sim.retired, s.sim.env.now, s.smem().copy(), s.regs(1))
    s.goto(120)
    s.goto(300)
    assert (s.sim.retired, s.sim.env.now) == snap[:2] and np.array_equal(s.smem(), snap[2])
    assert all(np.array_equal(s.regs(1)[k], v) for k, v in snap[3].items())


def test_reverse_continue_lands_on_the_last_tcgen05_mma_write_into_tmem():
    from tcsim.examples import gemm_async as g
    launch = g.make_launch(k_stages=2, n=64)
    events = trace(launch)
    cell = (0 << 16) | 256                                  # TMEM lane 0, column 256: the accumulator D[0][0]

    def tmem_touch(e):
        return e.space == "tmem" and any(a <= cell < a + max(1, e.size // 4) for a in e.addrs)

    j, ev, retired = last_write(events, tmem_touch)
    assert ev.agent == "tensor_pipe"
    s = Session(launch)
    s.watch_tmem((0, 1), (256, 257), dtype="f32")
    while s.cont().reason == "watchpoint":                  # forward: every change of D[0][0], up to the end
        pass
    final = s.tmem_view((0, 1), (256, 257), "f32")[0, 0]
    assert final == g.reference(launch)[0, 0]               # the bit-exact oracle of the example
    st = s.reverse_cont()
    assert st.reason == "watchpoint" and "tensor pipe" in st.writer and "tcgen05.mma" in st.writer
    assert s.sim.retired == retired and s.sim.env.now == ev.cycle
    assert s.tmem_view((0, 1), (256, 257), "f32")[0, 0] == final
    assert "col 256" in str(s.tmem_table((0, 2), (256, 258), "f32"))
    assert "new: " + np.array2string(np.array([[final]], np.float32)) in st.message    # (shown as f32)
