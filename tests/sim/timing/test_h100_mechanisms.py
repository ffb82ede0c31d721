"""The sm_90a mechanisms the validation timelines led to (tests/golden/timing_h100/README.md): the global-store
path, the TMA issue hold, the fence holds, first touches of host-written lines and of pages, and loops with a
run-time trip count.  Each test checks the mechanism against its parameter, not against a recorded number."""
import numpy as np
import pytest

from tcsim.isa.parser import parse
from tcsim.launch import Launch, run_launch
from tcsim.timing.model import runtime_loops, unrolled_loop_control
from tcsim.timing.params import arch_config

from timing_kernels import PROLOGUE, run

H100 = arch_config("sm_90a")


def _clock_gap(body: str, threads: int = 32, shared: str = "") -> int:
    """Cycles between the two clock reads the body stores to out[0], out[1]."""
    res, _ = run(PROLOGUE + body, target="sm_90a", threads=threads, shared=shared)
    out = res.outputs[0]
    return int(out[1]) - int(out[0])


def _stores(n: int, vec: str = "u32") -> str:
    op = "st.global.u32 [%rd5+{o}], %r1;" if vec == "u32" else "st.global.v2.u32 [%rd5+{o}], {{%r1, %r1}};"
    width = 4 if vec == "u32" else 8
    return "\n".join("  " + op.format(o=k * 32 * width) for k in range(n))


STORE_BODY = """
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 31;
  shr.u32 %r3, %r1, 5;
  mul.wide.u32 %rd4, %r3, 65536;
  mul.wide.u32 %rd6, %r2, {width};
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd5, %rd5, %rd6;
  add.s64 %rd5, %rd5, 64;
  bar.sync 0;
  mov.u64 %rd10, %clock64;
{stores}
  mov.u64 %rd11, %clock64;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 st.global.u64 [%rd1], %rd10;
  @%p1 st.global.u64 [%rd1+8], %rd11;
  ret;
"""


def _store_run(n: int, warps: int, vec: str = "u32", target: str = "sm_90a"):
    width = 4 if vec == "u32" else 8
    body = STORE_BODY.format(width=width, stores=_stores(n, vec))
    out = np.zeros(8 + warps * 65536 // 8, dtype=np.uint64)
    from timing_kernels import kernel
    launch = Launch(ptx=kernel(PROLOGUE + body, target), kernel="k", block=(32 * warps, 1, 1), args=[out])
    return run_launch(launch, timing=True)


def test_one_warp_issues_stores_no_faster_than_the_warp_interval():
    res = _store_run(40, 1)
    gap = int(res.outputs[0][1]) - int(res.outputs[0][0])
    assert gap >= 39 * H100.gmem_store_warp_interval
    assert gap <= 40 * H100.gmem_store_warp_interval + 20


def test_four_warps_share_the_sms_store_drain_rate():
    """64 v2 stores per warp from 4 warps: 2048 sectors; the warps stall once the backlog passes the queue, so the
    last store issues about (sectors x clk/sector - queue) after the first, and the stall is named."""
    res = _store_run(64, 4, "v2")
    sectors = 4 * 64 * 8
    drain = sectors * H100.gmem_store_clk_per_sector
    issue_end = drain - H100.gmem_store_queue_cycles
    stalls = res.timing.stalls_of((0, 0, 0), 0)
    assert "global store queue" in stalls.get("unit", {})
    assert res.timing.cycles >= issue_end


def test_b200_stores_do_not_stall_issue():
    """sm_100a has no store-path model (not measured on B200): the same burst never waits on a store queue."""
    res = _store_run(64, 4, "v2", target="sm_100a")
    assert "global store queue" not in res.timing.stalls_of((0, 0, 0), 0).get("unit", {})
    assert int(res.outputs[0][1]) - int(res.outputs[0][0]) < 64 * H100.gmem_store_warp_interval


#: thread 0 initialises the mbarrier ``mbar`` (%r20) and fences it for the async proxy; %r22 = sbuf, %rd13 = the
#: tensor map ``tmap``, %p1 = thread 0
TMA_INIT = """  mov.u32 %r20, mbar;
  mov.u32 %r22, sbuf;
  mov.b64 %rd12, tmap;
  cvta.param.u64 %rd13, %rd12;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r20], 1;
  fence.mbarrier_init.release.cluster;
  fence.proxy.async.shared::cta;
"""

TMA_BODY = """
  mov.u32 %r1, %tid.x;
""" + TMA_INIT + """  bar.sync 0;
  mov.u32 %r23, 0;
  mov.u64 %rd10, %clock64;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r20], {nbytes};
{loads}
  mov.u64 %rd11, %clock64;
$L_w:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r20], 0;
  @!%p2 bra $L_w;
  @%p1 st.global.u64 [%rd1], %rd10;
  @%p1 st.global.u64 [%rd1+8], %rd11;
  ret;
"""


def _tma_gap(n: int) -> int:
    from tcsim.isa.tensormap import TensorMap
    from timing_kernels import kernel
    loads = "\n".join(f"  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                      f"[%r22+{8192 * k}], [%rd13, {{%r23, %r23}}], [%r20];" for k in range(n))
    body = TMA_BODY.format(nbytes=8192 * n, loads=loads)
    text = kernel(PROLOGUE + body, "sm_90a", shared="  .shared .align 1024 .b8 sbuf[32768];\n"
                                                    "  .shared .align 8 .b64 mbar;")
    text = text.replace(".param .u64 out)", ".param .u64 out, .param .align 64 .b8 tmap[128])")
    t = np.zeros((64, 64), dtype=np.float16)
    launch = Launch(ptx=text, kernel="k", block=(32, 1, 1), args=[np.zeros(4, np.uint64),
                                                                  TensorMap.tiled(t, box=(64, 64), swizzle="128B")])
    res = run_launch(launch, timing=True)
    return int(res.outputs[0][1]) - int(res.outputs[0][0])


def test_each_tensor_tma_holds_the_issuing_warp():
    per = (_tma_gap(4) - _tma_gap(1)) / 3
    assert per == pytest.approx(round(H100.tma_issue_cycles), abs=1.5)


@pytest.mark.parametrize("fence,param", [("fence.proxy.async.shared::cta;", "fence_proxy_async_cycles"),
                                         ("fence.mbarrier_init.release.cluster;", "fence_mbarrier_init_cycles")])
def test_fences_hold_the_warp(fence, param):
    body = "  mov.u64 %rd10, %clock64;\n  {f}\n  mov.u64 %rd11, %clock64;\n" \
           "  st.global.u64 [%rd1], %rd10;\n  st.global.u64 [%rd1+8], %rd11;\n  ret;\n"
    with_fence = _clock_gap(body.format(f=fence))
    without = _clock_gap(body.format(f=""))
    assert with_fence - without == pytest.approx(round(getattr(H100, param)), abs=1.5)


CHASE = """
  ld.param.u64 %rd2, [src];
  cvta.to.global.u64 %rd2, %rd2;
  ld.global.u64 %rd8, [%rd2];
  add.s64 %rd3, %rd2, %rd8;
  mov.u64 %rd10, %clock64;
  ld.global.u64 %rd4, [%rd3];
  add.s64 %rd5, %rd4, 1;
  mov.u64 %rd11, %clock64;
  ld.global.u64 %rd6, [%rd3];
  add.s64 %rd7, %rd6, 1;
  mov.u64 %rd12, %clock64;
  st.global.u64 [%rd1], %rd10;
  st.global.u64 [%rd1+8], %rd11;
  st.global.u64 [%rd1+16], %rd12;
  st.global.u64 [%rd1+24], %rd7;
  ret;
"""


def test_first_touch_of_a_host_written_line_costs_the_fresh_latency_then_l2():
    """A dependent ld.global of a line the host has just written (a small buffer, in L2) costs gmem_fresh_latency
    (+ a TLB miss when the page is new), the same line again an L1/L2 hit."""
    from timing_kernels import kernel
    src = np.zeros(4096, dtype=np.uint64)
    src[0] = 1024                                   # the chase goes on to a line 1 KB further
    text = kernel(PROLOGUE + CHASE, "sm_90a").replace(".param .u64 out)", ".param .u64 out, .param .u64 src)")
    out = np.zeros(4, dtype=np.uint64)
    res = run_launch(Launch(ptx=text, kernel="k", block=(1, 1, 1), args=[out, src]), timing=True)
    first = int(res.outputs[0][1]) - int(res.outputs[0][0])
    again = int(res.outputs[0][2]) - int(res.outputs[0][1])
    assert first >= H100.gmem_fresh_latency
    assert first < H100.gmem_cold_latency
    assert again < H100.l2_latency


def _body(ptx: str):
    fn = parse(ptx, "t.ptx").functions["k"]
    return fn.body, fn.labels


RT_LOOP = """
.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 n)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  ld.param.u32 %r1, [n];
  mov.u32 %r2, 0;
$L_top:
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra $L_done;
  add.u32 %r3, %r3, %r2;
  add.u32 %r2, %r2, 4;
  bra.uni $L_top;
$L_done:
  mov.u32 %r4, 0;
$L_cnt:
  add.u32 %r5, %r5, %r4;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p2, %r4, 16;
  @%p2 bra $L_cnt;
$L_rt2:
  add.u32 %r6, %r6, 1;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p3, %r4, %r1;
  @%p3 bra $L_rt2;
  ret;
}
"""


def test_runtime_trip_loops_are_found_and_counted_loops_are_not():
    body, labels = _body(RT_LOOP)
    loops = runtime_loops(body, labels)
    assert len(loops) == 2                                   # the top-tested and the bottom-tested one
    heads = sorted(body[h].loc.line for h, _, _, _ in loops)
    assert heads == [12, 25]                            # the first instruction after $L_top and $L_rt2
    counted = unrolled_loop_control(body, labels)
    assert counted and not any(pc in counted for _, _, _, ctrl in loops for pc in ctrl)


def test_runtime_trip_loop_costs_its_dispatch_once_per_execution():
    body = """
  mov.u32 %r1, %tid.x;
  ld.global.u32 %r9, [%rd1+32];
  mov.u64 %rd10, %clock64;
  mov.u32 %r2, 0;
$L_top:
  setp.ge.u32 %p1, %r2, %r9;
  @%p1 bra $L_done;
  add.u32 %r3, %r3, %r2;
  add.u32 %r2, %r2, 1;
  bra.uni $L_top;
$L_done:
  mov.u64 %rd11, %clock64;
  st.global.u64 [%rd1], %rd10;
  st.global.u64 [%rd1+8], %rd11;
  st.global.u32 [%rd1+40], %r3;
  ret;
"""
    from timing_kernels import kernel

    def gap(n):
        out = np.zeros(8, dtype=np.uint64)
        out[4] = n
        res = run_launch(Launch(ptx=kernel(PROLOGUE + body, "sm_90a"), kernel="k", block=(32, 1, 1), args=[out]),
                         timing=True)
        return int(res.outputs[0][1]) - int(res.outputs[0][0])
    zero, one, eight = gap(0), gap(1), gap(8)
    assert zero >= H100.runtime_loop_cycles
    assert eight - one < H100.runtime_loop_cycles / 4           # the dispatch is paid once, not per iteration


CONST = """
  mov.u64 %rd2, tbl;
  mov.u64 %rd10, %clock64;
  ld.const.u32 %r1, [%rd2];
  add.u32 %r1, %r1, 1;
  mov.u64 %rd11, %clock64;
  ld.const.u32 %r2, [%rd2+4];
  add.u32 %r2, %r2, 1;
  mov.u64 %rd12, %clock64;
  ld.const.u32 %r3, [%rd2+64];
  add.u32 %r3, %r3, 1;
  mov.u64 %rd13, %clock64;
  st.global.u64 [%rd1], %rd10;
  st.global.u64 [%rd1+8], %rd11;
  st.global.u64 [%rd1+16], %rd12;
  st.global.u64 [%rd1+24], %rd13;
  add.u32 %r4, %r1, %r2;
  add.u32 %r4, %r4, %r3;
  st.global.u32 [%rd1+32], %r4;
  ret;
"""


def test_constant_cache_miss_line_hit_and_block_hit():
    from timing_kernels import kernel
    text = kernel(PROLOGUE + CONST, "sm_90a").replace(".visible .entry", ".const .align 8 .u32 tbl[64] = {7};\n"
                                                                         ".visible .entry", 1)
    res = run_launch(Launch(ptx=text, kernel="k", block=(1, 1, 1), args=[np.zeros(6, np.uint64)]), timing=True)
    t = [int(x) for x in res.outputs[0][:4]]
    miss, hit, block = t[1] - t[0], t[2] - t[1], t[3] - t[2]
    assert miss >= H100.const_miss_latency
    assert H100.const_hit_latency <= hit < H100.const_l15_latency
    assert H100.const_l15_latency <= block < H100.const_miss_latency


def test_taken_branch_costs_and_a_cold_forward_target_costs_more_once():
    """Two passes over a forward jump past 40 instructions that never run: the first pass pays
    branch_cold_target_cycles on top of branch_taken_cycles, the second only the latter."""
    dead = "\n".join("  add.u32 %r5, %r5, 3;" for _ in range(40))
    body = f"""
  mov.u32 %r1, 0;
  ld.global.u32 %r9, [%rd1+32];
$L_pass:
  setp.eq.u32 %p2, %r9, 12345;
  mov.u64 %rd10, %clock64;
  @%p2 bra $L_dead;
  bra.uni $L_tgt;
$L_dead:
{dead}
$L_tgt:
  mov.u64 %rd11, %clock64;
  sub.s64 %rd12, %rd11, %rd10;
  mul.wide.u32 %rd13, %r1, 8;
  add.s64 %rd14, %rd1, %rd13;
  st.global.u64 [%rd14], %rd12;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p3, %r1, 2;
  @%p3 bra $L_pass;
  st.global.u32 [%rd1+40], %r5;
  ret;
"""
    res, _ = run(PROLOGUE + body, target="sm_90a", out_len=8)
    first, second = int(res.outputs[0][0]), int(res.outputs[0][1])
    assert second >= H100.branch_taken_cycles
    assert first - second == pytest.approx(H100.branch_cold_target_cycles, abs=2)


# ---------------------------------------------------------------------------------------- TMA behind stores
TMA_STORES_BODY = """
  mov.u32 %r1, %tid.x;
  shr.u32 %r3, %r1, 5;
""" + TMA_INIT + """  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd5, %rd1, %rd6;
  add.s64 %rd5, %rd5, 64;
  bar.sync 0;
  setp.ne.u32 %p3, %r3, 0;
  @%p3 bra $L_st;
  mov.u32 %r23, 0;
  mov.u64 %rd10, %clock64;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r20], 8192;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r22], [%rd13, {{%r23, %r23}}], [%r20];
$L_w:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r20], 0;
  @!%p2 bra $L_w;
  mov.u64 %rd11, %clock64;
  @%p1 st.global.u64 [%rd1], %rd10;
  @%p1 st.global.u64 [%rd1+8], %rd11;
  ret;
$L_st:
{delay}{stores}
  ret;
"""


def _tma_beside_stores(nstores: int, delay: int = 0, cfg=H100) -> int:
    """Cycles from warp 0's TMA issue (8 KB) to its completion seen by the warp, while warps 1-4 issue ``nstores``
    coalesced st.global.u32 each (4 sectors a store; one warp alone cannot outpace the store path)
    ``delay`` FMAs (4 clk each) after the CTA barrier."""
    from tcsim.isa.tensormap import TensorMap
    from timing_kernels import kernel
    chain = ("  mov.f32 %f1, 0f3F800000;\n" + "  fma.rn.f32 %f1, %f1, %f1, %f1;\n" * delay
             + "  mov.b32 %r5, %f1;\n") if delay else ""
    stores = "\n".join(f"  st.global.u32 [%rd5+{640 * k}], {'%r5' if delay else '%r1'};" for k in range(nstores))
    body = TMA_STORES_BODY.format(delay=chain, stores=stores)
    text = kernel(PROLOGUE + body, "sm_90a", shared="  .shared .align 1024 .b8 sbuf[8192];\n"
                                                    "  .shared .align 8 .b64 mbar;")
    text = text.replace(".param .u64 out)", ".param .u64 out, .param .align 64 .b8 tmap[128])")
    t = np.zeros((64, 64), dtype=np.float16)
    out = np.zeros(16 + nstores * 80, dtype=np.uint64)
    launch = Launch(ptx=text, kernel="k", block=(160, 1, 1),
                    args=[out, TensorMap.tiled(t, box=(64, 64), swizzle="128B")])
    res = run_launch(launch, timing=cfg)
    return int(res.outputs[0][1]) - int(res.outputs[0][0])


def test_a_tma_load_waits_behind_stores_issued_with_it():
    alone = _tma_beside_stores(0)
    with_stores = _tma_beside_stores(16)          # 4 x 16 x 4 = 256 sectors, ~270 clk of drain, issued with it
    assert with_stores - alone > 100
    # the delay is the share times the store backlog when the requests go out: linear in the share
    double = _tma_beside_stores(16, cfg=H100.with_overrides(
        {"tma_store_request_share": 2 * H100.tma_store_request_share}))
    assert double - alone == pytest.approx(2 * (with_stores - alone), rel=0.1)


def test_stores_issued_after_the_requests_left_do_not_delay_a_tma_load():
    alone = _tma_beside_stores(0)
    late = _tma_beside_stores(16, delay=int(H100.tma_store_request_after) // 4 + 40)
    assert late - alone == pytest.approx(0, abs=3)


def test_b200_tma_loads_ignore_the_store_backlog():
    b200ish = H100.with_overrides({"tma_store_request_share": 0})
    assert _tma_beside_stores(16, cfg=b200ish) == pytest.approx(_tma_beside_stores(0, cfg=b200ish), abs=3)
    from tcsim.timing.params import arch_config
    assert arch_config("sm_100a").tma_store_request_share == 0


def test_the_report_names_tma_loads_delayed_behind_stores():
    """A kernel author sees why a TMA load was slow: the timing report's delays and the summary line count the
    loads that waited behind global stores and their cycles; a load alone reports none."""
    from tcsim.isa.tensormap import TensorMap
    from timing_kernels import kernel
    stores = "\n".join(f"  st.global.u32 [%rd5+{640 * k}], %r1;" for k in range(16))

    def report(nstores):
        body = TMA_STORES_BODY.format(delay="", stores=stores if nstores else "")
        text = kernel(PROLOGUE + body, "sm_90a", shared="  .shared .align 1024 .b8 sbuf[8192];\n"
                                                        "  .shared .align 8 .b64 mbar;")
        text = text.replace(".param .u64 out)", ".param .u64 out, .param .align 64 .b8 tmap[128])")
        t = np.zeros((64, 64), dtype=np.float16)
        launch = Launch(ptx=text, kernel="k", block=(160, 1, 1),
                        args=[np.zeros(16 + 16 * 80, np.uint64), TensorMap.tiled(t, box=(64, 64), swizzle="128B")])
        return run_launch(launch, timing=True).timing
    alone, behind = report(0), report(16)
    assert alone.delays == {}
    d = behind.delays["TMA load behind global stores"]
    assert d["ops"] == 1 and d["cycles"] > 100
    assert any("async delay: 1 op(s) TMA load behind global stores" in ln for ln in behind.summary_lines())
    assert behind.to_dict()["delays"] == behind.delays


ATOM_BODY = """
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, {stride};
  add.s64 %rd5, %rd1, 64;
  add.s64 %rd5, %rd5, %rd4;
  mov.u64 %rd10, %clock64;
  atom.global.add.u32 %r5, [%rd5], 1;
  add.u32 %r6, %r5, 1;
  mov.u64 %rd11, %clock64;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 st.global.u64 [%rd1], %rd10;
  @%p1 st.global.u64 [%rd1+8], %rd11;
  ret;
"""


def _atom_gap(stride: int, cycles: float) -> int:
    from timing_kernels import kernel
    out = np.zeros(64, dtype=np.uint64)
    launch = Launch(ptx=kernel(PROLOGUE + ATOM_BODY.format(stride=stride), "sm_90a"), kernel="k", block=(32, 1, 1),
                    args=[out])
    cfg = H100.with_overrides({"atom_same_address_cycles": cycles})
    res = run_launch(launch, timing=cfg)
    o = res.outputs[0]
    return int(o[1]) - int(o[0])


def test_atomics_on_one_word_serialise():
    """atom_same_address_cycles: 32 lanes adding to one word take 31 x the parameter longer than with it off (the
    first op's own time is in the L2 latency); lanes on 32 different words are not serialised."""
    assert _atom_gap(0, 10.0) - _atom_gap(0, 0.0) == 31 * 10
    assert _atom_gap(4, 10.0) == _atom_gap(4, 0.0)
    assert H100.atom_same_address_cycles > 0 and arch_config("sm_100a").atom_same_address_cycles == 0


PENDING_BODY = """
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, 256;
  add.s64 %rd5, %rd5, %rd4;
  ld.global.u32 %r5, [%rd5];
  mov.u64 %rd10, %clock64;
  ld.global.u32 %r6, [%rd5];
  add.u32 %r7, %r6, 1;
  mov.u64 %rd11, %clock64;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 st.global.u64 [%rd1], %rd10;
  @%p1 st.global.u64 [%rd1+8], %rd11;
  @%p1 st.global.u32 [%rd1+16], %r5;
  ret;
"""


def _pending_gap(on: int) -> int:
    from timing_kernels import kernel
    out = np.zeros(64, dtype=np.uint64)
    launch = Launch(ptx=kernel(PROLOGUE + PENDING_BODY, "sm_90a"), kernel="k", block=(32, 1, 1), args=[out])
    res = run_launch(launch, timing=H100.with_overrides({"l1_pending_fills": on}))
    o = res.outputs[0]
    return int(o[1]) - int(o[0])


def test_a_hit_under_miss_waits_for_the_fill():
    """l1_pending_fills: the second load of a line whose first load (a first touch) is still in flight completes
    when the line lands -- more than an L2 hit's latency after the first load -- not l1_latency after it issues."""
    on, off = _pending_gap(1), _pending_gap(0)
    assert off < H100.l1_latency + 20
    assert on > H100.l2_latency
