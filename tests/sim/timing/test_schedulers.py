"""Issue rules: 4 schedulers per SM (warp w on scheduler w % 4), one instruction per scheduler per cycle, unit
occupancy by per-SM lane throughput."""
from collections import Counter

from tcsim.timing.classes import plan_instruction
from tcsim.timing.params import arch_config
from tcsim.isa.parser import parse

from timing_kernels import PROLOGUE, kernel, run

CFG = arch_config("sm_100a")


def _cycles_by_warp(rec):
    out = {}
    for e in rec.of("inst"):
        out.setdefault(e.fields["warp"], []).append(e.cycle)
    return out


def test_one_issue_per_scheduler_per_cycle():
    body = PROLOGUE + "".join(f"  mov.u32 %r{i}, {i};\n" for i in range(2, 12)) + "  ret;\n"
    res, rec = run(body, threads=256)
    per_slot = Counter((e.cycle, e.fields["warp"] % 4) for e in rec.of("inst"))
    assert max(per_slot.values()) == 1
    first = {w: c[0] for w, c in _cycles_by_warp(rec).items()}
    assert [first[w] for w in range(4)] == [0, 0, 0, 0]          # four schedulers issue together
    assert [first[w] for w in range(4, 8)] == [1, 1, 1, 1]       # warp w + 4 waits for warp w's slot
    slots = res.timing.stalls_of((0, 0, 0), 4)["issue slot"]
    assert slots == {"scheduler 0": slots["scheduler 0"]} and slots["scheduler 0"] >= 1
    assert res.timing.units["issue"]["busy"] == res.stats["warp_instructions"]


def test_unit_interval_from_lane_throughput():
    f32 = "".join(f"  add.f32 %f{i}, %f20, %f21;\n" for i in range(4))
    f64 = "".join(f"  add.f64 %fd{i}, %fd20, %fd21;\n" for i in range(4))
    sfu = "".join(f"  ex2.approx.f32 %f{i}, %f20;\n" for i in range(4))
    gaps = {}
    for name, code in (("f32", f32), ("f64", f64), ("sfu", sfu)):
        _, rec = run(code + "  ret;\n")
        c = _cycles_by_warp(rec)[0][:4]
        gaps[name] = {b - a for a, b in zip(c, c[1:])}
    # 32 lanes / (lane-ops per clock per SM / 4 schedulers)
    assert gaps["f32"] == {32 // (CFG.fp32_ops_per_clk // 4)} == {1}
    assert gaps["f64"] == {32 // (CFG.fp64_ops_per_clk // 4)} == {2}
    assert gaps["sfu"] == {32 // (CFG.sfu_ops_per_clk // 4)} == {8}


def test_tcgen05_mma_issue_overhead_and_plans():
    m = parse(kernel("  add.u32 %r1, %r2, %r3;\n  ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r8+16];\n"
                     "  st.global.u32 [%rd1], %r9;\n  @%p1 bra L;\nL:\n  ret;\n"))
    body = m.kernel("k").body
    add, ld, st, bra = (plan_instruction(i, CFG) for i in body[:4])
    assert (add.srcs, add.dsts, add.cls) == (("%r2", "%r3"), ("%r1",), "alu")
    assert (ld.srcs, ld.dsts, ld.space, ld.access_bytes) == (("%r8",), ("%r4", "%r5", "%r6", "%r7"), "shared", 16)
    assert (st.srcs, st.dsts, st.space) == (("%rd1", "%r9"), (), "global")
    assert bra.srcs == ("%p1",) and bra.dsts == ()


def test_seeded_schedules_differ_but_stay_deterministic():
    body = PROLOGUE + "".join(f"  mov.u32 %r{i}, {i};\n" for i in range(2, 12)) + "  ret;\n"
    a = run(body, threads=128, seed=5)[0].stats["cycles"]
    b = run(body, threads=128, seed=5)[0].stats["cycles"]
    c = run(body, threads=128, seed=None)[0].stats["cycles"]
    assert a == b and a > c
