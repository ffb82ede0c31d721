"""The per-warp stall breakdown names what a warp waited on (the mbarrier by symbol and offset, the register and
its producer), wake-up latency after an mbarrier phase completes, and the same records in the JSONL trace."""
import io

from tcsim.observe import read_trace
from tcsim.timing.params import arch_config

from timing_kernels import kernel, run

CFG = arch_config("sm_100a")
SLEEP = 500
BODY = f"""
  mov.u32 %r10, full_bar;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  setp.eq.u32 %p3, %r1, 0;
  @!%p3 bra $L_init;
  mbarrier.init.shared::cta.b64 [%r10], 1;
$L_init:
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra $L_consumer;
  nanosleep.u32 {SLEEP};
  @%p3 mbarrier.arrive.shared::cta.b64 _, [%r10];
  bra $L_end;
$L_consumer:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r10], 0;
  @!%p4 bra $L_consumer;
  add.u32 %r5, %r1, 1;
$L_end:
  ret;
"""
SHARED = "  .shared .align 8 .b64 pad;\n  .shared .align 8 .b64 full_bar;"


def test_stall_breakdown_names_the_mbarrier():
    res, _ = run(BODY, threads=64, shared=SHARED)
    mb = res.timing.stalls_of((0, 0, 0), 1)["mbarrier"]
    (name, cycles), = mb.items()
    # the unreferenced pad takes no address (as ptxas lays it out) and user bytes start at window offset 0x400
    # (tests/hw/golden_h100/address_layout.json): full_bar is at 0x400
    assert name == "full_bar (SMEM 0x400) of CTA (0,0,0)"
    # warp 1 blocks two issues after leaving bar.sync (setp, bra), warp 0 arrives three issues and the sleep
    # after leaving it (both leave together: the warp completing a bar.sync pays barrier_latency too)
    assert SLEEP - 20 <= cycles <= SLEEP + CFG.mbarrier_wake_latency + 2
    assert "mbarrier" not in res.timing.stalls_of((0, 0, 0), 0)
    line = kernel(BODY, shared=SHARED).splitlines().index(f"  nanosleep.u32 {SLEEP};") + 1
    assert res.timing.stalls_of((0, 0, 0), 0)["sleep"] == {f"nanosleep.u32 (line {line})": SLEEP}
    assert res.timing.total_stalls()["mbarrier"] == cycles


def test_waiter_resumes_a_wake_up_latency_after_the_arrive():
    _, rec = run(BODY, threads=64, shared=SHARED)
    arrive = [e for e in rec.of("sync", op="mbarrier.arrive")][0]
    after = [e for e in rec.of("inst", warp=1) if e.fields["text"].startswith("@!%p4 bra")]
    assert after[-1].cycle == arrive.cycle + CFG.mbarrier_wake_latency
    # timing off: the waiter resumes in the arrive's cycle
    _, rec = run(BODY, threads=64, shared=SHARED, timing=False)
    arrive = rec.of("sync", op="mbarrier.arrive")[0]
    after = [e for e in rec.of("inst", warp=1) if e.fields["text"].startswith("@!%p4 bra")]
    assert after[-1].cycle == arrive.cycle


def test_jsonl_trace_carries_stalls_and_completion_cycles():
    buf = io.StringIO()
    run(BODY, threads=64, shared=SHARED, trace=buf)
    recs = list(read_trace(buf.getvalue().splitlines()))
    stalls = [r for r in recs if r["kind"] == "stall"]
    mb = [r for r in stalls if r["reason"] == "mbarrier"]
    assert len(mb) == 1 and mb[0]["warp"] == 1 and mb[0]["detail"].startswith("full_bar")
    assert mb[0]["cycles"] >= SLEEP - 20
    insts = [r for r in recs if r["kind"] == "inst"]
    assert all(r["done"] >= r["cycle"] for r in insts)
    add = [r for r in insts if r["text"].startswith("add.u32 %r5")][0]
    assert add["done"] - add["cycle"] == CFG.alu_latency
    # timing off: no stall events, no completion field
    buf = io.StringIO()
    run(BODY, threads=64, shared=SHARED, trace=buf, timing=False)
    recs = list(read_trace(buf.getvalue().splitlines()))
    assert not [r for r in recs if r["kind"] == "stall"]
    assert all("done" not in r for r in recs if r["kind"] == "inst")


def test_report_dict_and_summary():
    res, _ = run(BODY, threads=64, shared=SHARED)
    d = res.timing.to_dict()
    assert d["arch"] == "sm_100a" and d["cycles"] == res.stats["cycles"]
    assert [w["warp"] for w in d["warps"]] == [0, 1] and [w["scheduler"] for w in d["warps"]] == [0, 1]
    lines = res.timing.summary_lines()
    assert lines[0].startswith(f"timing (sm_100a): {res.stats['cycles']} cycles")
    assert any("mbarrier: full_bar (SMEM 0x400) of CTA (0,0,0)" in x for x in lines)       # see above
