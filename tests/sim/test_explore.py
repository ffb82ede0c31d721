"""Schedule exploration (tcsim.explore; tcsim run --explore N / --schedule K): the knobs perturb only timing, a
race-free kernel gives identical outputs under every schedule, a timing-dependent bug shows as an output difference
with a schedule that reproduces it, and the findings of every run are united."""
import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from tcsim.agents.unit import LatencyKnob
from tcsim.cli import main
from tcsim.explore import (Baseline, FindingUnion, Schedule, compare, explore, make_schedules, run_schedule,
                           schedule_of)
from tcsim.findings import Access, Finding, FindingError
from tcsim.isa.errors import SourceLoc
from tcsim.launch import Launch, run_launch
from tcsim.timing.params import LATENCY_KNOBS, arch_config

sys.path.insert(0, str(Path(__file__).resolve().parent / "timing"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import test_one_config as one_config  # noqa: E402  (the per-unit latency measurements)
from ptx_frame import kernel  # noqa: E402

# ---------------------------------------------------------------------------------------------- kernels
#: Thread 0 starts a 128-byte bulk copy into ``buf`` and busies itself for ``spin`` iterations; then bar.sync and
#: warp 1 reads ``buf`` -- but nobody waited on the copy's mbarrier before the bar.sync (thread 0 waits only at the
#: end).  The default schedule lands the copy inside the busy loop: the right answer; a late TMA does not.
TMA_UNWAITED = kernel("""
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r20, [spin];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  bar.sync 0;
  @!%p1 bra SYNC;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r4], 128;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd1], 128, [%r4];
  mov.u32 %r21, 0;
BUSY:
  add.u32 %r21, %r21, 1;
  setp.lt.u32 %p2, %r21, %r20;
  @%p2 bra BUSY;
SYNC:
  bar.sync 0;
  setp.ne.u32 %p3, %r2, 1;
  @%p3 bra DRAIN;
  and.b32 %r6, %r1, 31;
  shl.b32 %r7, %r6, 2;
  add.u32 %r8, %r5, %r7;
  ld.shared.u32 %r9, [%r8];
  cvt.u64.u32 %rd4, %r7;
  add.u64 %rd5, %rd2, %rd4;
  st.global.u32 [%rd5], %r9;
DRAIN:
  @!%p1 bra DONE;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
DONE:
  ret;
""", shared="  .shared .align 128 .b8 buf[128]; .shared .align 8 .b64 bar;", params=", .param .u64 src, .param .u32 spin")
#: the same kernel with the wait where it belongs (thread 0 waits on the mbarrier before the bar.sync)
TMA_WAITED = TMA_UNWAITED.replace("""  mov.u32 %r21, 0;
BUSY:""", """WAIT0:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r4], 0;
  @!%p5 bra WAIT0;
  mov.u32 %r21, 0;
BUSY:""")
#: busy iterations (3 warp-instructions each) that cover the copy's default latency (the functional preset's
#: global round trip, 200 cycles, timing off; ~465 on sm_100a timing on) but not its late bound (+2000 / +1500)
SPIN = {False: 80, True: 60}

#: Warp 1 wrote ``buf`` before the bar.sync and reads it back after ``spin`` busy iterations, while thread 0
#: reloads ``buf`` with a bulk copy right after the bar.sync -- nothing orders the read before the copy's write
#: (cross-proxy WAR).  The default schedule lands the copy after the read; an early TMA lands it before.
TMA_EARLY = kernel("""
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r6, %r1, 31;
  shl.b32 %r7, %r6, 2;
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  add.u32 %r8, %r5, %r7;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r20, [spin];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  setp.eq.u32 %p3, %r2, 1;
  @%p3 st.shared.u32 [%r8], 7;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @%p3 bra READER;
  @!%p1 bra DONE;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r4], 128;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd1], 128, [%r4];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
  bra DONE;
READER:
  mov.u32 %r21, 0;
BUSY:
  add.u32 %r21, %r21, 1;
  setp.lt.u32 %p2, %r21, %r20;
  @%p2 bra BUSY;
  ld.shared.u32 %r9, [%r8];
  cvt.u64.u32 %rd4, %r7;
  add.u64 %rd5, %rd2, %rd4;
  st.global.u32 [%rd5], %r9;
DONE:
  ret;
""", shared="  .shared .align 128 .b8 buf[128]; .shared .align 8 .b64 bar;", params=", .param .u64 src, .param .u32 spin")
#: the fix: the reader fences its generic read for the async proxy and arrives on named barrier 1 after it; warp 0
#: waits there before the copy
TMA_EARLY_FIXED = TMA_EARLY.replace("""  @%p3 bra READER;
  @!%p1 bra DONE;""", """  @%p3 bra READER;
  bar.sync 1, 64;
  @!%p1 bra DONE;""").replace("""  ld.shared.u32 %r9, [%r8];
  cvt.u64.u32""", """  ld.shared.u32 %r9, [%r8];
  fence.proxy.async.shared::cta;
  bar.arrive 1, 64;
  cvt.u64.u32""")
#: busy iterations inside the window where the read comes before the default TMA landing time and after the early
#: one (timing off: the preset's 200-cycle copy against 1 cycle; sm_100a: ~465 cycles against 295)
SPIN_EARLY = {False: 2, True: 42}

#: A flag handoff that publishes the flag before the data: warp 0 stores ``flag`` then ``data``; warp 1 spins on
#: the flag, then reads the data.  Under the default schedule warp 1 reads after both stores; a producer delayed
#: between them (or slower than the consumer) hands over stale data.
FLAG_FIRST = kernel("""
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mov.u32 %r4, flag;
  mov.u32 %r5, data;
  ld.param.u64 %rd2, [out];
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra DONE;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra CONSUMER;
  st.volatile.shared.u32 [%r4], 1;
  st.shared.u32 [%r5], 42;
  bra DONE;
CONSUMER:
  ld.volatile.shared.u32 %r6, [%r4];
  setp.eq.u32 %p3, %r6, 0;
  @%p3 bra CONSUMER;
  ld.shared.u32 %r7, [%r5];
  st.global.u32 [%rd2], %r7;
DONE:
  ret;
""", shared="  .shared .align 4 .u32 flag; .shared .align 4 .u32 data;")
#: the fixed handoff: data first, then a release store of the flag; the consumer acquires it
FLAG_FIXED = FLAG_FIRST.replace("""  st.volatile.shared.u32 [%r4], 1;
  st.shared.u32 [%r5], 42;""", """  st.shared.u32 [%r5], 42;
  st.release.cta.shared.u32 [%r4], 1;""").replace("ld.volatile.shared.u32 %r6", "ld.acquire.cta.shared.u32 %r6")

#: Both warps store their warp index to out[0] in the same cycle (a deliberate write-write race): which warp goes
#: last decides the value.
SAME_CYCLE = kernel("""
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  ld.param.u64 %rd2, [out];
  setp.ne.u32 %p1, %r1, 0;
  setp.ne.u32 %p2, %r1, 32;
  and.pred %p3, %p1, %p2;
  @%p3 bra DONE;
  st.global.u32 [%rd2], %r2;
DONE:
  ret;
""")


def tma_launch(spin, ptx=TMA_UNWAITED):
    src = np.arange(1, 33, dtype=np.uint32)
    return Launch(ptx=ptx, kernel="k", block=(64, 1, 1), args=[np.zeros(32, np.uint32), src, spin],
                  name="tma_unwaited")


def flag_launch(ptx=FLAG_FIRST):
    return Launch(ptx=ptx, kernel="k", block=(64, 1, 1), args=[np.zeros(1, np.uint32)], name="flag_first")


# ---------------------------------------------------------------------------------------------- the knobs
def test_schedule_zero_is_the_plain_run():
    plain = run_launch(tma_launch(SPIN[False]))
    s, res = run_schedule(tma_launch(SPIN[False]), 0)
    assert s.what == "default schedule" and res.stats["cycles"] == plain.stats["cycles"]
    assert (res.outputs[0] == plain.outputs[0]).all() and (plain.outputs[0] == np.arange(1, 33)).all()


@pytest.mark.parametrize("timed", [False, True], ids=["preset", "sm_100a"])
def test_each_units_latency_knob_moves_that_unit_only(timed):
    """Setting one unit's ``*_extra_latency`` in the run's config delays exactly that unit's op by the extra."""
    base = arch_config("sm_100a") if timed else arch_config("sm_100a").untimed()
    before = {u: m(base) for u, m in one_config.MEASURES.items()}
    names = {"tma": "tma", "cp.async": "cp.async", "tcgen05.st": "tcgen05.st", "tensor pipe": "tensor_pipe"}
    assert set(names.values()) == set(LATENCY_KNOBS)
    for measured, unit in names.items():
        cfg = base.with_overrides({LATENCY_KNOBS[unit][0]: 300})
        for other, m in one_config.MEASURES.items():
            assert m(cfg) - before[other] == (300 if other == measured else 0), (unit, other)


def test_early_bound_never_completes_before_the_op_is_served():
    """The preset's early bounds cut each latency to its floor; the copy still lands (and later than issue)."""
    cfg = arch_config("sm_100a").untimed()
    early = Schedule(latency={u: "early" for u in LATENCY_KNOBS}).apply(cfg)
    for unit, (extra, lo, _hi) in LATENCY_KNOBS.items():
        assert getattr(early, extra) == getattr(cfg, lo) < 0
    t_default, t_early = one_config.MEASURES["tma"](cfg), one_config.MEASURES["tma"](early)
    assert 0 < t_early < t_default


def test_schedule_sets_the_config_knobs_from_the_bounds():
    cfg = arch_config("sm_90a")
    s = Schedule(index=4, latency={"tma": "late", "cp.async": "early"}, async_seed=7)
    got = s.apply(cfg)
    assert got.tma_extra_latency == cfg.tma_late_extra > 0
    assert got.cp_async_extra_latency == cfg.cp_async_early_extra < 0
    assert got.async_jitter_seed == 7 and got.tc_extra_latency == 0
    assert "schedule 4" in got.param("tma_extra_latency").source
    assert Schedule().apply(cfg) is cfg


def test_async_jitter_draws_reproducibly_within_the_bounds():
    cfg = arch_config("sm_100a").untimed().with_overrides({"async_jitter_seed": 11})
    a, b = LatencyKnob(cfg, "tma", "x"), LatencyKnob(cfg, "tma", "x")
    da, db = [a.extra() for _ in range(200)], [b.extra() for _ in range(200)]
    assert da == db and len(set(da)) > 50
    assert min(da) >= cfg.tma_early_extra and max(da) <= cfg.tma_late_extra
    assert [LatencyKnob(cfg, "tma", "y").extra() for _ in range(20)] != da[:20]
    assert LatencyKnob(arch_config("sm_100a").untimed(), "tma").extra() == 0


def test_warp_priority_orders_same_cycle_issuers():
    """Both warps store in the same cycle: creation order puts warp 1 last; priority reverses it."""
    launch = Launch(ptx=SAME_CYCLE, kernel="k", block=(64, 1, 1), args=[np.zeros(1, np.uint32)])
    assert run_launch(launch).outputs[0][0] == 1
    assert run_launch(launch, schedule=Schedule(priority={0: 1, 1: 0})).outputs[0][0] == 0
    assert run_launch(launch, schedule=Schedule(priority={0: 0, 1: 1})).outputs[0][0] == 1


def test_slowdown_and_stall_add_their_cycles():
    launch = Launch(ptx=SAME_CYCLE, kernel="k", block=(32, 1, 1), args=[np.zeros(1, np.uint32)])
    plain = run_launch(launch)
    n = plain.stats["warp_instructions"]
    slow = run_launch(launch, schedule=Schedule(slow={0: 5}))
    assert slow.stats["cycles"] == plain.stats["cycles"] + 5 * n
    stalled = run_launch(launch, schedule=Schedule(stall=(0, 3, 100)))
    assert stalled.stats["cycles"] == plain.stats["cycles"] + 100


# ---------------------------------------------------------------------------------------------- generation
def _baseline(n=4, per_cta=4, units=("tma", "tensor_pipe")):
    return Baseline([f"w{i}" for i in range(n)], per_cta, ["producer", "mma", "consumer", "consumer"][:n] * (n // 4 or 1),
                    [40] * n, units, [[5, 9]] * n)


def test_schedules_are_deterministic_distinct_and_cover_units_roles_and_warps():
    b = _baseline()
    a, again = make_schedules(b, 40, seed=3), make_schedules(b, 40, seed=3)
    assert [s.knobs() for s in a] == [s.knobs() for s in again]
    assert [s.index for s in a] == list(range(40)) and a[0].knobs() == Schedule().knobs()
    assert len({s.knobs() for s in a}) == 40
    whats = [s.what for s in a]
    for needle in ("async late (tma, tensor_pipe)", "async early", "producer warps last", "mma warps first",
                   "w1 stalled 2000 cycles after its instruction 5", "w3 last", "tensor_pipe late",
                   "warps in reverse order"):
        assert any(needle in w for w in whats), needle
    m = next(i for i, s in enumerate(a) if s.seed is not None)                  # the systematic part: a[:m]
    assert m > 15 and all(s.seed is not None for s in a[m:])
    other = make_schedules(b, 40, seed=4)
    assert [s.knobs() for s in other[:m]] == [s.knobs() for s in a[:m]]
    assert all(x.knobs() != y.knobs() for x, y in zip(other[m:], a[m:]))        # the random part
    assert len(make_schedules(b, 1)) == 1


def test_clusters_get_one_cta_behind_and_ahead():
    labels = [f"CTA ({c},0,0) warp {w}" for c in range(3) for w in range(2)]
    b = Baseline(labels, 2, ["consumer"] * 6, [20] * 6, (), [[3]] * 6)
    by_what = {s.what: s for s in make_schedules(b, 30)}
    last, first = by_what["CTA (1,0,0) last"], by_what["CTA (0,0,0) first"]
    assert last.slow == {2: 16, 3: 16} and last.priority == {0: 0, 1: 0, 2: 1, 3: 1, 4: 0, 5: 0}
    assert first.slow == {2: 16, 3: 16, 4: 16, 5: 16} and first.priority[0] == first.priority[1] == 0
    assert "CTA (0,0,0) warp 1 stalled 2000 cycles after its instruction 3" in by_what
    two = [s.what for s in make_schedules(Baseline(labels[:4], 2, ["consumer"] * 4, [20] * 4, (), []), 30)]
    assert "CTA (0,0,0) first" in two and "CTA (1,0,0) last" not in two      # the same schedule: listed once


# ---------------------------------------------------------------------------------------------- findings
def _finding(line, cls=21, severity="error"):
    a = Access("st.shared.u32", SourceLoc("k.ptx", 3, 1), warp=0)
    b = Access("ld.shared.u32", SourceLoc("k.ptx", line, 1), warp=1)
    return Finding(cls, "race", (a, b), missing="bar.sync", severity=severity)


def test_finding_union_dedups_by_key_and_keeps_the_schedules():
    u = FindingUnion()
    u.add(0, [])
    u.add(2, [_finding(10), _finding(11, severity="lint")])
    u.add(5, [_finding(10), _finding(12)])
    u.add(5, [_finding(10)])
    assert [f.lines for f in u] == [(3, 10), (3, 11), (3, 12)]
    assert u.schedules_of(_finding(10)) == [2, 5] and u.schedules_of(_finding(12)) == [5]
    assert [f.lines for f in u.problems] == [(3, 10), (3, 12)] and len(u) == 3


class InFlightRead:
    """A test detector (not tcsim's): a warp's SMEM load while a TMA op of its CTA is in flight is a finding."""

    kinds = ("sync", "mem")

    def __init__(self, sim):
        self.sim = sim
        self.in_flight = set()

    def on_event(self, ev):
        if ev.kind == "sync" and ev.agent == "tma":
            (self.in_flight.add if ev.op == "async.issue" else self.in_flight.discard)(ev.op_id)
        elif ev.kind == "mem" and ev.agent == "warp" and ev.op == "ld" and ev.space == "shared::cta" \
                and self.in_flight:
            self.sim.findings.report(Finding(21, "SMEM read while a bulk copy into the CTA is in flight", (
                Access("ld.shared", SourceLoc("k.ptx", ev.line, 3), cta=ev.cta, warp=ev.warp, proxy="generic"),),
                missing="mbarrier wait before bar.sync"))


def test_findings_of_every_run_are_united_with_their_schedules():
    rep = explore(tma_launch(SPIN[False]), 6, detectors=(InFlightRead,), detect=False)   # the test detector alone
    assert len(rep.findings) == 1
    ks = rep.union.schedules_of(rep.findings[0])
    assert 0 not in ks and ks and all("tma" in rep.schedules[k].what for k in ks)
    text = "\n".join(rep.format("bug.py"))
    assert f"found under schedule {ks[0]}" in text or f"found under schedules {ks[0]}" in text
    assert f"reproduce: tcsim run bug.py --no-timing --schedule {ks[0]}" in text and not rep.ok
    js = rep.to_json("bug.py")["findings"]
    assert len(js) == 1 and js[0]["schedules"] == ks and js[0]["class"] == 21


def test_a_run_stopped_by_a_finding_contributes_its_findings():
    """strict: the finding stops the run (FindingError); the exploration lists the stop and still unites it."""
    rep = explore(tma_launch(SPIN[False]), 6, detectors=(InFlightRead,), strict=True, detect=False)
    assert len(rep.findings) == 1
    stopped = rep.stopped
    assert len(stopped) == 1
    (msg, ks), = stopped.items()
    assert ks == rep.union.schedules_of(rep.findings[0]) and FindingError.__name__ in \
        {r.error_kind for r in rep.runs if r.error is not None}


# ---------------------------------------------------------------------------------------------- outputs
def test_compare_names_count_first_index_and_both_values():
    a = np.arange(10, dtype=np.float32)
    b = a.copy()
    b[[3, 7]] = -1
    d, = compare(a, b, "2", "c", 5, 0)
    assert (d.arg, d.name, d.schedule, d.reference, d.count, d.size, d.index, d.expected, d.got) == \
        ("2", "c", 5, 0, 2, 10, 3, 3.0, -1.0)
    assert compare(a, a.copy(), "0", "c", 1, 0) == []
    assert compare(a, a.astype(np.float64), "0", "c", 1, 0)[0].got == "float64[10]"
    nan = np.array([np.nan], np.float32)
    assert compare(nan, nan.copy(), "0", "c", 1, 0) == []                   # bit for bit
    d, = compare([a, a], [a, b], "1", "s", 2, 0)
    assert d.arg == "1.1" and d.index == 3


@pytest.mark.parametrize("timed", [False, True], ids=["timing-off", "timing-on"])
def test_late_tma_completion_shows_as_an_output_difference(timed):
    launch = tma_launch(SPIN[timed])
    rep = explore(launch, 6, timing=timed)
    assert rep.outputs_differ and not rep.ok and rep.reference == 0
    d = rep.by_argument()["0"][0]
    assert (d.name, d.count, d.size, d.index, d.expected, d.got) == ("out", 32, 32, 0, 1, 0)
    assert "tma late" in rep.schedules[d.schedule].what or "async late" in rep.schedules[d.schedule].what
    s, res = run_schedule(tma_launch(SPIN[timed]), d.schedule, timing=timed)
    assert s.knobs() == rep.schedules[d.schedule].knobs() and (res.outputs[0] == 0).all()
    fixed = explore(tma_launch(SPIN[timed], TMA_WAITED), 6, timing=timed)
    assert fixed.ok and not fixed.diffs and not fixed.findings


@pytest.mark.parametrize("timed", [False, True], ids=["timing-off", "timing-on"])
def test_early_tma_completion_shows_as_an_output_difference(timed):
    def launch(ptx):
        src = np.arange(101, 133, dtype=np.uint32)
        return Launch(ptx=ptx, kernel="k", block=(64, 1, 1), args=[np.zeros(32, np.uint32), src, SPIN_EARLY[timed]])

    rep = explore(launch(TMA_EARLY), 3, timing=timed)
    d, = rep.diffs
    assert (d.count, d.index, d.expected, d.got) == (32, 0, 7, 101)
    assert rep.schedules[d.schedule].latency == {"tma": "early"}
    assert explore(launch(TMA_EARLY_FIXED), 3, timing=timed).ok


@pytest.mark.parametrize("timed", [False, True], ids=["timing-off", "timing-on"])
def test_warp_order_bug_shows_and_its_fix_does_not(timed):
    rep = explore(flag_launch(), 8, timing=timed)
    assert rep.outputs_differ
    d = rep.by_argument()["0"][0]
    assert (d.expected, d.got) == (42, 0) and "warp 0" in rep.schedules[d.schedule].what
    fixed = explore(flag_launch(FLAG_FIXED), 8, timing=timed)
    assert fixed.ok, fixed.format()


def _accumulator_read_early(spin: int) -> str:
    """examples/tcgen05_walkthrough.ptx with the readers' wait on the MMA's commit mbarrier replaced by a busy loop
    of ``spin`` iterations (the wait moves to the end, before TMEM is freed): the tcgen05.ld of D is ordered after
    the MMA by timing alone -- the accumulator read before the MMA completed of issue 15."""
    from tcsim.examples import tcgen05_walkthrough as ex
    src = Path(ex.PTX).read_text()
    wait = """$L_wait_mma:
	mbarrier.try_wait.parity.shared::cta.b64 	%p6, [%r11], 0;
	@!%p6 bra 	$L_wait_mma;
"""
    busy = f"""	mov.u32 	%r43, 0;
$L_busy:
	add.u32 	%r43, %r43, 1;
	setp.lt.u32 	%p6, %r43, {spin};
	@%p6 bra 	$L_busy;
"""
    end = "\t// ---- release the tensor memory\n"
    assert src.count(wait) == 1 and src.count(end) == 1
    src = src.replace(wait, busy)
    return src.replace(end, end + wait)


def test_late_tensor_pipe_shows_an_accumulator_read_before_the_mma_completed():
    """Timing on: the busy loop outlasts the MMA's modelled latency, not its late bound."""
    from tcsim.examples import tcgen05_walkthrough as ex
    launch = ex.make_launch()
    launch.ptx = _accumulator_read_early(60)
    rep = explore(launch, 4, timing=True, check=ex.check)
    assert rep.runs[0].check is None and rep.outputs_differ
    d = rep.by_argument()["3"][0]
    assert d.count == d.size == 64 * 128 and "tensor_pipe" in rep.schedules[d.schedule].what
    assert rep.failed_checks and all(k == d.schedule for ks in rep.failed_checks.values() for k in ks)
    waited = ex.make_launch()
    waited.ptx = _accumulator_read_early(60).replace("$L_busy:", "$L_wait_early:\n\tmbarrier.try_wait.parity."
                                                     "shared::cta.b64 \t%p7, [%r11], 0;\n\t@!%p7 bra \t"
                                                     "$L_wait_early;\n$L_busy:")
    assert explore(waited, 4, timing=True, check=ex.check).ok


#: One thread writes ``v`` to 4 SMEM words and TMA-stores them into row 0 of a tensor-map tensor that is not a
#: launch argument; it also stores ``v`` to the module's ``.global`` variable ``g``.
TMA_STORE = """.version 8.7
.target sm_100a
.address_size 64
.global .align 4 .u32 g;
.visible .entry k(.param .align 64 .b8 tmap[128], .param .u32 v)
{
  .reg .b32 %r<8>; .reg .b64 %rd<8>;
  .shared .align 128 .b8 buf[16];
  mov.b64 %rd1, tmap;
  cvta.param.u64 %rd2, %rd1;
  mov.u32 %r1, buf;
  ld.param.u32 %r2, [v];
  st.shared.v4.u32 [%r1], {%r2, %r2, %r2, %r2};
  fence.proxy.async.shared::cta;
  mov.u32 %r3, 0;
  cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {%r3, %r3}], [%r1];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
  mov.u64 %rd3, g;
  st.global.u32 [%rd3], %r2;
  ret;
}
"""


def test_outputs_include_tensor_map_tensors_and_globals():
    """What TMA stores wrote into a tensor the launch holds only through its map, and .global variables, are
    compared too."""
    from tcsim.explore import outputs_of
    from tcsim.isa.tensormap import TensorMap
    from tcsim.launch import Prepared

    def run(v):
        t = np.zeros((2, 4), np.uint32)
        prep = Prepared(Launch(ptx=TMA_STORE, kernel="k", block=(1, 1, 1), args=[TensorMap.tiled(t, (1, 4)), v]))
        prep.sim.run()
        return {key: (name, arr) for key, name, arr in outputs_of(prep, prep.result(), ["tmap", "v"])}

    a, b = run(5), run(6)
    assert a["0.tensor"][0] == "the tensor of tmap" and a["0.tensor"][1].dtype == np.uint32
    assert (a["0.tensor"][1] == [[5] * 4, [0] * 4]).all() and a["g"][1].view(np.uint32)[0] == 5
    d, = compare(a["0.tensor"][1], b["0.tensor"][1], "0.tensor", "the tensor of tmap", 1, 0)
    assert (d.count, d.index, d.expected, d.got) == (4, 0, 5, 6)
    t = np.zeros((2, 4), np.uint32)
    assert explore(Launch(ptx=TMA_STORE, kernel="k", block=(1, 1, 1), args=[TensorMap.tiled(t, (1, 4)), 5]), 3).ok


LAUNCH_FILE = """
import numpy as np
from tcsim.launch import Launch
PTX = {ptx!r}

def make_launch():
    return Launch(ptx=PTX, kernel="k", block=(64, 1, 1), args=[np.zeros(1, np.uint32)], name="flag_first")

def check(result, launch):
    v = int(result.outputs[0][0])
    return v == 42, f"out[0] = {{v}} (want 42)"
"""


def test_cli_explore_prints_a_reproducer_and_schedule_k_reproduces(tmp_path, capsys):
    f = tmp_path / "flag_first.py"
    f.write_text(LAUNCH_FILE.format(ptx=FLAG_FIRST))
    out = tmp_path / "f.json"
    rc = main(["run", str(f), "--no-timing", "--explore", "8", "--findings", str(out)])
    text = capsys.readouterr().out
    assert rc == 1 and "OUTPUTS DIFFER" in text and "the launch's check FAILED" in text
    assert "argument 0 (out)" in text and "42 (schedule 0) vs 0" in text
    cmd = next(line.split("reproduce: ", 1)[1] for line in text.splitlines() if "reproduce: " in line)
    assert cmd.startswith(f"tcsim run {f} --no-timing --schedule ")
    report = json.loads(out.read_text())
    k = int(cmd.rsplit(" ", 1)[1])
    # the race detector names the cause under every schedule: the data store and the read are not ordered
    assert report["outputs_differ"] is True and [f["class"] for f in report["findings"]] == [21]
    assert all(s["what"].startswith(("st.shared.u32", "ld.shared.u32")) for s in report["findings"][0]["sides"])
    first = report["diffs"][0]
    assert (first["name"], first["expected"], first["got"], first["reproduce"]) == ("out", 42, 0, cmd)
    assert report["failed_checks"][0]["message"] == "out[0] = 0 (want 42)" and len(report["schedules"]) == 8
    assert main(["run", str(f), "--no-timing", "--schedule", str(k)]) == 1
    text = capsys.readouterr().out
    assert f"[sim] schedule {k} (" in text and "[sim] FAIL: out[0] = 0 (want 42)" in text
    # schedule 0 gives the right answer; the race is still found there, so the sanitizer exits non-zero
    assert main(["run", str(f), "--no-timing", "--schedule", "0"]) == 1
    text = capsys.readouterr().out
    assert "[sim] PASS" in text and "[class 21: data race]" in text
    assert main(["run", str(f), "--no-timing", "--no-detect", "--schedule", "0"]) == 0
    assert "[sim] PASS" in capsys.readouterr().out


def test_cli_explore_usage_errors(capsys):
    assert main(["run", "tcsim.examples.mma_gemm", "--explore", "0"]) == 2
    assert main(["run", "tcsim.examples.mma_gemm", "--explore", "2", "--schedule", "1"]) == 2
    assert main(["run", "tcsim.examples.mma_gemm", "--schedule", "1", "--backend", "gpu"]) == 2
    assert main(["run", "tcsim.examples.mma_gemm", "--explore", "2", "--trace", "t.jsonl"]) == 2
    assert "--explore N" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- race-free kernels
@pytest.mark.parametrize("name,timed", [("bulk_pipeline", False), ("tcgen05_walkthrough", False),
                                        ("cluster_exchange", False), ("mma_gemm", False), ("mma_gemm", True),
                                        ("bulk_pipeline", True)])
def test_race_free_examples_give_identical_outputs_under_every_schedule(name, timed):
    mod = importlib.import_module(f"tcsim.examples.{name}")
    rep = explore(mod.make_launch(), 8, timing=timed, check=mod.check)
    assert rep.ok, "\n".join(rep.format())
    assert len({r.cycles for r in rep.runs}) >= 3         # the schedules really differ
    assert rep.reference == 0 and len(rep.runs) == 8


def test_schedule_of_matches_the_exploration():
    rep = explore(flag_launch(), 8)
    for k in (0, 3, 7):
        assert schedule_of(flag_launch(), k).knobs() == rep.schedules[k].knobs()
