"""Long runs are visible and stoppable, huge grids start at once (issue 17 item 4): lazy CTAs, the budget in
seconds, the progress line, Ctrl-C (a subprocess and SIGINT), the livelock detector."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tcsim.isa.errors import DeadlockError, LivelockError, NonTerminatingLoopError, RunawayError
from tcsim.launch import Launch, Prepared, run_launch

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"

RET = HEAD + ".visible .entry k()\n{\n  ret;\n}\n"

# thread 0 of each CTA writes ctaid.x + 1 to out[ctaid.x] and the cycle it started at to start[ctaid.x]
MARK = HEAD + """.visible .entry k(.param .u64 out, .param .u64 start)
{
  .reg .pred %p<2>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<6>;
  mov.u32 %r4, %clock;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [start];
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.u64 %rd4, %rd1, %rd3;
  add.u32 %r3, %r2, 1;
  st.global.u32 [%rd4], %r3;
  add.u64 %rd5, %rd2, %rd3;
  st.global.u32 [%rd5], %r4;
DONE:
  ret;
}
"""

# a loop whose tested register changes every iteration and does not repeat within any run (a xorshift32 sequence,
# period 2^32 - 1, until it reaches 0, which it never does; nothing the loop monitor can judge: %r1 is written three
# times): runs until the budget or Ctrl-C stops it.  (A loop that only counts, with no exit, is a livelock: the
# counter cannot change what it does.)
COUNT_FOREVER = HEAD + """.visible .entry k()
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  mov.u32 %r1, 1;
LOOP:
  shl.b32 %r2, %r1, 13;
  xor.b32 %r1, %r1, %r2;
  shr.u32 %r2, %r1, 17;
  xor.b32 %r1, %r1, %r2;
  shl.b32 %r2, %r1, 5;
  xor.b32 %r1, %r1, %r2;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra LOOP;
  ret;
}
"""

# every thread polls a flag nobody sets
SPIN = HEAD + """.visible .entry k(.param .u64 flag)
{
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [flag];
WAIT:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra WAIT;
  ret;
}
"""

# warp 0 polls the flag; warp 1 counts to N first, then sets it (polling while another warp makes progress)
SPIN_THEN_SET = HEAD + """.visible .entry k(.param .u64 flag, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [flag];
  ld.param.u32 %r3, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p2, %r2, 32;
  @%p2 bra SETTER;
WAIT:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra WAIT;
  ret;
SETTER:
  mov.u32 %r4, 0;
COUNT:
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p1, %r4, %r3;
  @%p1 bra COUNT;
  st.volatile.global.u32 [%rd1], %r4;
  ret;
}
"""


def test_huge_grid_starts_at_once_and_stops_by_budget():
    t0 = time.perf_counter()
    prep = Prepared(Launch(ptx=RET, grid=(2 ** 31 - 1, 1, 1), block=(32, 1, 1), dynamic_smem=200 * 1024),
                    max_instructions=500, detect=False, progress=False)
    assert time.perf_counter() - t0 < 10
    with pytest.raises(RunawayError) as e:
        prep.sim.run()
    assert "more than 500 warp-instructions" in str(e.value) and "clusters of the grid not started yet" in str(e.value)
    # one instruction per CTA: ~500 CTAs ran; the H100 holds 132 of these at once (228 KiB of shared memory per
    # SM, 200 KiB + 1 KiB reserved per CTA: one CTA per SM), so ~500 + 132 were ever created, not 2^31 - 1
    assert 500 <= len(prep.sim.ctas) + prep.sim.retention.ctas <= 501 + 132    # (compacted ones included)
    assert prep.sim.clusters_pending() > 2 ** 31 - 1 - 1000


def test_grid_beyond_residency_runs_in_waves():
    n = 200
    r = run_launch(Launch(ptx=MARK, grid=(n, 1, 1), block=(64, 1, 1), dynamic_smem=200 * 1024,
                          args=[np.zeros(n, np.uint32), np.zeros(n, np.uint32)]))
    assert np.array_equal(r.outputs[0], np.arange(1, n + 1, dtype=np.uint32))
    start = r.outputs[1]
    # 132 SMs x 1 CTA (shared memory bound) start at cycle 0; each later CTA starts after one of them exits
    assert (start[:132] == 0).all() and (start[132:] > 0).all()
    assert r.stats["ctas"] == n


def test_seconds_budget_and_progress_line():
    buf = io.StringIO()
    with pytest.raises(RunawayError) as e:
        run_launch(Launch(ptx=COUNT_FOREVER), max_seconds=2.5, progress=buf, detect=False)
    msg = str(e.value)
    assert "budget of 2.5 s" in msg and "CTA (0,0,0) warp 0: all lanes at <ptx>:" in msg and "CPU time" in msg
    lines = [ln for ln in buf.getvalue().splitlines() if ln.startswith("[tcsim]")]
    assert lines and "warp-instructions retired" in lines[0] and "cycles" in lines[0] and "warp-inst/s" in lines[0]


def test_the_seconds_budget_is_work_not_wall_time():
    # an observer that sleeps 20 ms on every retired instruction stretches a ~150-instruction run to >= 3 s of wall
    # time; the budget of 1 s counts the process's CPU time, which the sleeps do not spend
    src = HEAD + """.visible .entry k(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, 0;
L:
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 50;
  @%p1 bra L;
  ld.param.u64 %rd1, [out];
  st.global.u32 [%rd1], %r1;
  ret;
}
"""
    slept = []

    def nap(ev):
        if ev.kind == "inst":
            time.sleep(0.02)
            slept.append(1)
    t0 = time.perf_counter()
    r = run_launch(Launch(ptx=src, args=[np.zeros(1, np.uint32)]), max_seconds=1.0, observers=(nap,),
                   detect=False, progress=False)
    assert r.outputs[0][0] == 50 and len(slept) >= 150
    assert time.perf_counter() - t0 >= 3.0


def test_no_progress_line_when_short_or_not_a_terminal(capsys):
    buf = io.StringIO()
    run_launch(Launch(ptx=RET), progress=buf)
    assert buf.getvalue() == ""
    with pytest.raises(RunawayError):                   # auto: stderr (captured here) is not a terminal
        run_launch(Launch(ptx=COUNT_FOREVER), max_seconds=2.2, detect=False)
    assert "[tcsim]" not in capsys.readouterr().err


@pytest.mark.parametrize("tier", ["reference", "fast"])
def test_livelock_is_reported_like_a_deadlock(tier):
    # (the fast tier queues its warps' issue events as gangs: they are the warps' own, so it is quiescent too)
    t0 = time.perf_counter()
    with pytest.raises(LivelockError) as e:
        run_launch(Launch(ptx=SPIN, block=(64, 1, 1), args=[np.zeros(1, np.uint32)]), progress=False, detect=False,
                   tier=tier)
    assert isinstance(e.value, DeadlockError)
    msg = str(e.value)
    assert "livelock" in msg and "CTA (0,0,0) warp 0" in msg and "CTA (0,0,0) warp 1" in msg
    assert "ld.volatile.global.u32 %r1, [%rd1]" in msg or "setp.eq.u32" in msg or "@%p1 bra WAIT" in msg
    assert e.value.loc is not None and e.value.loc.line in (11, 12, 13)
    assert time.perf_counter() - t0 < 30


# every thread tries to take a lock that is held (1) and that nobody releases, counting its attempts
CAS_SPIN = HEAD + """.visible .entry k(.param .u64 lock)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [lock];
  mov.u32 %r3, 0;
TRY:
  add.u32 %r3, %r3, 1;
  atom.global.cas.b32 %r1, [%rd1], 0, 1;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra TRY;
  ret;
}
"""

# a data-dependent exit the data never meets: x -> (5x + 1) mod 16 runs through all 16 values, never 99; a step count
# alongside
CYCLE = HEAD + """.visible .entry k()
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r1, 3;
  mov.u32 %r3, 0;
STEP:
  mad.lo.u32 %r2, %r1, 5, 1;
  and.b32 %r1, %r2, 15;
  add.u32 %r3, %r3, 1;
  setp.ne.u32 %p1, %r1, 99;
  @%p1 bra STEP;
  ret;
}
"""


@pytest.mark.parametrize("tier", ["reference", "fast"])
@pytest.mark.parametrize("case", ["cas", "cycle"])
def test_a_livelock_with_an_attempt_counter_is_reported(case, tier, monkeypatch):
    # the counter (%r3) never repeats, but nothing the loop tests, compares or addresses reads it: the machine state
    # the loop depends on repeats, so the livelock detector reports it at once (not the budget after 300 s).
    # (Samples every 64 warp-instructions per warp instead of 2048: the same detector, sooner.)
    import tcsim.watch as watch
    monkeypatch.setattr(watch, "LIVELOCK_SAMPLE", 1 << 6)
    src, args, lines = (CAS_SPIN, [np.ones(1, np.uint32)], (12, 15)) if case == "cas" else (CYCLE, [], (11, 15))
    t0 = time.process_time()
    with pytest.raises(LivelockError) as e:
        run_launch(Launch(ptx=src, block=(32 if case == "cas" else 64, 1, 1), args=args), progress=False,
                   detect=False, tier=tier)
    msg = str(e.value)
    assert f"the loop at lines {lines[0]}-{lines[1]}" in msg and "%r3" in msg, msg
    assert lines[0] <= e.value.loc.line <= lines[1]
    assert time.process_time() - t0 < 15


def test_a_livelock_with_an_attempt_counter_polling_memory_is_the_loop_monitors_report():
    # a flag poll that counts: the livelock detector sees the repeat, the loop monitor names the compare and why
    src = SPIN.replace("WAIT:\n", "WAIT:\n  add.u32 %r2, %r2, 1;\n").replace(".reg .b32 %r<2>", ".reg .b32 %r<3>")
    with pytest.raises(NonTerminatingLoopError) as e:
        run_launch(Launch(ptx=src, block=(64, 1, 1), args=[np.zeros(1, np.uint32)]), progress=False, detect=False)
    msg = str(e.value)
    assert "memory is not changing" in msg and e.value.loc.line == 13, msg


def test_polling_while_another_warp_progresses_is_no_livelock():
    r = run_launch(Launch(ptx=SPIN_THEN_SET, block=(64, 1, 1), args=[np.zeros(1, np.uint32), 2500]),
                   progress=False, detect=False)
    assert r.outputs[0][0] == 2500
    assert r.stats["warp_instructions"] > 4 * 2048          # several livelock samples were taken on the way


def test_ctrl_c_ends_the_run_with_every_warps_position(tmp_path):
    f = tmp_path / "forever.py"
    f.write_text("from tcsim.launch import Launch\n"
                 f"LAUNCH = Launch(ptx={COUNT_FOREVER!r}, block=(64, 1, 1))\n")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "tcsim.cli", "run", str(f), "--no-timing", "--no-detect",
                          "--progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stderr.readline()                     # the first progress line: the run is under way
        assert line.startswith("[tcsim]"), line
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "stopped by Ctrl-C" in err and "CTA (0,0,0) warp 0:" in err and "CTA (0,0,0) warp 1:" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------------------------------------- finished CTAs
# every thread keeps 192 64-bit registers live (48 KiB per warp) and the CTA declares 16 KiB of shared memory: a
# finished CTA kept whole costs ~110 KiB
HEAVY = HEAD + """.visible .entry k(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<200>;
  .shared .align 8 .b8 buf[16384];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [out];
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.u64 %rd4, %rd1, %rd3;
  add.u32 %r3, %r2, 1;
  st.shared.u32 [buf], %r3;
  st.global.u32 [%rd4], %r3;
DONE:
  ret;
}
"""


def test_finished_ctas_beyond_the_kept_ones_are_compacted(monkeypatch):
    import tcsim.retention as retention
    monkeypatch.setattr(retention, "KEEP_FINISHED_CTAS", 8)
    n = 300
    r = run_launch(Launch(ptx=HEAVY, grid=(n, 1, 1), block=(64, 1, 1), args=[np.zeros(n, np.uint32)]),
                   detect=False, progress=False)
    assert np.array_equal(r.outputs[0], np.arange(1, n + 1, dtype=np.uint32))
    sim = r.simulation
    assert r.stats["ctas"] == n and r.stats["warps"] == 2 * n
    assert len(sim.ctas) == 8 and len(sim.warps) == 16 and len(sim.cta_index) == 8
    assert sim.retention.ctas == n - 8 and [c.ctaid for c in sim.ctas] == [(i, 0, 0) for i in range(8)]


def test_traced_runs_keep_every_cta(monkeypatch, tmp_path):
    import tcsim.retention as retention
    monkeypatch.setattr(retention, "KEEP_FINISHED_CTAS", 4)
    r = run_launch(Launch(ptx=HEAVY, grid=(16, 1, 1), block=(64, 1, 1), args=[np.zeros(16, np.uint32)]),
                   progress=False, trace=str(tmp_path / "t.jsonl"))    # a tracer holds per-warp state: kept whole
    assert len(r.simulation.ctas) == 16 and r.stats["ctas"] == 16


# every CTA: thread 0 publishes its ctaid in shared memory, a barrier, every thread reads it (no race); CTA 18: warp
# 1 writes a shared word that warp 0 reads with no barrier between (a race inside the CTA); CTAs 5 and 20: thread 0
# writes out[1] (a race between CTAs: nothing orders them); every CTA's thread 0 writes out[2 + ctaid]
RACES = HEAD + """.visible .entry k(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 buf[256];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 st.shared.u32 [buf], %r2;
  bar.sync 0;
  ld.shared.u32 %r3, [buf];
  setp.ne.u32 %p2, %r2, 18;
  @%p2 bra G;
  setp.eq.u32 %p3, %r1, 32;
  @%p3 st.shared.u32 [buf+4], %r1;
  @%p1 ld.shared.u32 %r4, [buf+4];
G:
  setp.eq.u32 %p2, %r2, 5;
  setp.eq.u32 %p3, %r2, 20;
  or.pred %p2, %p2, %p3;
  and.pred %p2, %p2, %p1;
  @%p2 st.global.u32 [%rd1+4], %r3;
  mul.wide.u32 %rd2, %r3, 4;
  add.u64 %rd3, %rd1, %rd2;
  @%p1 st.global.u32 [%rd3+8], %r3;
  ret;
}
"""


def test_the_race_detector_compacts_finished_ctas_and_keeps_every_finding(monkeypatch):
    # the detector is on (the default): finished clusters are compacted on its side too, and the findings -- a
    # shared-memory race inside a late CTA, a global race between an early (compacted) CTA and a late one -- are
    # those of the same run kept whole
    import tcsim.retention as retention
    n = 24

    def run():
        r = run_launch(Launch(ptx=RACES, grid=(n, 1, 1), block=(64, 1, 1), args=[np.zeros(n + 2, np.uint32)]),
                       progress=False)
        return r, sorted((f.cls, tuple(f.lines), f.format()) for f in r.findings)
    line = {t: i for i, ln in enumerate(RACES.splitlines(), 1) for t in ("[buf+4], %r1", "[%rd1+4]") if t in ln}
    whole, want = run()
    monkeypatch.setattr(retention, "KEEP_FINISHED_CTAS", 4)
    r, got = run()
    assert len(whole.simulation.ctas) == n and len(r.simulation.ctas) == 4 and r.stats["ctas"] == n
    assert got == want, got
    st, g = line["[buf+4], %r1"], line["[%rd1+4]"]
    assert [f[:2] for f in got] == [(21, (st, st + 1)), (21, (g, g))], got
    assert "cta (5,0,0)" in got[1][2] and "cta (20,0,0)" in got[1][2]
    det = r.simulation.bus._objects[0]
    assert len(det.warps) < 2 * n and not any(k[0] == (5, 0, 0) for k in det.warps)
    assert np.array_equal(r.outputs[0][2:], np.arange(n, dtype=np.uint32))


@pytest.mark.slow
@pytest.mark.parametrize("detect", [False, True], ids=["plain", "race-detector"])
def test_memory_of_a_big_grid_stays_bounded(detect):
    # 100 KiB of shared memory per CTA: 2 CTAs per SM, 264 at once.  The memory the simulation holds (numpy
    # arrays and Python objects, tracemalloc) when the 500th and when the 1,100th CTA exit is alike: kept whole,
    # the 600 CTAs in between would hold ~600 x 200 KiB = ~120 MiB.  (Peak RSS is no measure: the C allocator
    # keeps freed pages.)  With the race detector on, its shadow pages of the live clusters' shared memory (~10 MiB
    # each, allocated at a cluster's first access) are left out of the sum: how many of the 264 live CTAs have one
    # at a given moment varies by gigabytes; that those of finished clusters go is counted by the spaces left.
    import gc
    import tracemalloc
    import tcsim.retention as retention
    n = 1200
    prep = Prepared(Launch(ptx=HEAVY.replace("buf[16384]", "buf[102400]"), grid=(n, 1, 1), block=(64, 1, 1),
                           args=[np.zeros(n, np.uint32)]), detect=detect, progress=False, max_instructions=10 ** 9)
    held = {}
    live_shadow = [tracemalloc.Filter(False, "*/race/shadow.py", all_frames=True)]

    def at_exit(cta):
        if cta.index in (500, 1100):
            gc.collect()
            snap = tracemalloc.take_snapshot().filter_traces(live_shadow)
            held[cta.index] = sum(t.size for t in snap.traces)
            if detect:
                assert len(prep.detector.spaces) <= retention.KEEP_FINISHED_CTAS + 264 + 1
                assert len(prep.detector.warps) <= 2 * (retention.KEEP_FINISHED_CTAS + 264)
    prep.sim.cta_exit_hooks.append(at_exit)
    tracemalloc.start(6)
    try:
        prep.sim.run()
    finally:
        tracemalloc.stop()
    assert prep.sim.retention.ctas + len(prep.sim.ctas) == n
    # with the detector too: its clocks no longer widen with the warps started (they grew ~80 KB per CTA here,
    # 108.6 -> 154.3 MiB: tcsim.race.clocks recycles the components of compacted clusters;
    # tests/race/test_detector_memory.py counts the entries in a fast run)
    assert held[1100] - held[500] < 8 << 20, held
