"""Basic blocks bound the dataflow issue (sm_90a ``dataflow_block_drain``, ``runtime_loop_unroll``) and same-word
atomics (``atom_warp_aggregate``, ``atom_queue_cycles``): issue 21's mechanisms read off the SASS ptxas 13.0 makes
of the timing corpus.

* ptxas schedules within a basic block: loop_const_trip_loads' 16 loads (a counted loop it unrolls whole) are 16
  LDGs ahead of the first FADD, so all 16 are in flight at once -- one load latency for the lot;
* a loop with a run-time trip count is unrolled by 4 (tri_sum_reduce: 16 LDGs per SASS iteration of a 4-load PTX
  body): every 4 iterations its SASS back edge ends a block, which the warp leaves in order;
* a short forward branch is if-converted (gemv_warp_per_row: ``if (lane == 0) y[row] = s`` is ``@!P0 STG``);
* simpleAtomicIntrinsics: ``atomicAdd/Max/Min/And/Or/Xor`` with unused results on one word become REDUX + one
  lane's REDG; ``atomicExch/Inc/Dec/CAS`` stay per lane.
"""
import numpy as np

from tcsim.isa.parser import parse
from tcsim.launch import Launch, run_launch
from tcsim.timing.classes import plan_instruction
from tcsim.timing.model import block_boundaries, unrolled_loop_control, warp_reduced_atomics
from tcsim.timing.params import arch_config

from timing_kernels import PROLOGUE, kernel

H100 = arch_config("sm_90a")
OLD = H100.with_overrides({"dataflow_block_drain": 0, "dataflow_window": 8})


def _fn(body):
    return parse(kernel(PROLOGUE + body, "sm_90a")).functions["k"]


BRANCHES = """
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 31;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra $L_skip;
  st.global.u32 [%rd1], %r1;
$L_skip:
  setp.lt.u32 %p2, %r1, 64;
  @%p2 bra $L_far;
  add.u32 %r3, %r1, 1;
  add.u32 %r3, %r3, 1;
  add.u32 %r3, %r3, 1;
  add.u32 %r3, %r3, 1;
  add.u32 %r3, %r3, 1;
  add.u32 %r3, %r3, 1;
  add.u32 %r3, %r3, 1;
  st.global.u32 [%rd1+4], %r3;
$L_far:
  mov.u32 %r4, 0;
$L_cnt:
  add.u32 %r5, %r5, %r4;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p3, %r4, 16;
  @%p3 bra $L_cnt;
  st.global.u32 [%rd1+8], %r5;
  ret;
"""


def test_block_boundaries_skip_if_converted_branches_and_unrolled_loop_control():
    fn = _fn(BRANCHES)
    body, labels = fn.body, fn.labels
    plans = [plan_instruction(ins, H100) for ins in body]
    from dataclasses import replace
    for pc in unrolled_loop_control(body, labels):
        plans[pc] = replace(plans[pc], free=True)
    got = block_boundaries(body, labels, plans, 6)
    skip = next(pc for pc, i in enumerate(body) if i.opcode == "bra" and i.operands[0].name == "$L_skip")
    far = next(pc for pc, i in enumerate(body) if i.opcode == "bra" and i.operands[0].name == "$L_far")
    # the one-store skip is predicated (no boundary); the 8-instruction skip is a branch over a block: it and its
    # target; the counted loop's back edge is unrolled away (no boundary, nor its head)
    assert got == [far, labels["$L_far"]]
    assert skip not in got and labels["$L_cnt"] not in got
    # with a larger if-conversion limit the 8-instruction body is predicated too
    assert block_boundaries(body, labels, plans, 8) == []


UNROLLED_LOADS = """
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, 1024;
  add.s64 %rd5, %rd5, %rd4;
  mov.f32 %f1, 0f00000000;
  mov.u64 %rd10, %clock64;
""" + "".join(f"""  ld.global.f32 %f{10 + k}, [%rd5+{512 * k}];
  add.f32 %f1, %f1, %f{10 + k};
""" for k in range(16)) + """  mov.u64 %rd11, %clock64;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 st.global.u64 [%rd1], %rd10;
  @%p1 st.global.u64 [%rd1+8], %rd11;
  @%p1 st.global.f32 [%rd1+16], %f1;
  ret;
"""


def _gap(body, cfg, threads=32, out_len=4096):
    out = np.zeros(out_len, dtype=np.uint64)
    res = run_launch(Launch(ptx=kernel(PROLOGUE + body, "sm_90a"), kernel="k", block=(threads, 1, 1), args=[out]),
                     timing=cfg)
    o = res.outputs[0]
    return int(o[1]) - int(o[0])


def test_a_blocks_loads_are_all_in_flight_before_their_consumers():
    """16 load -> add pairs in one block (loop_const_trip_loads as ptxas unrolls it): the loads are hoisted above
    the adds, so the block takes about one first-touch latency; an 8-instruction window stops at the 9th add and
    pays a second latency."""
    lat = H100.gmem_fresh_latency
    new, old = _gap(UNROLLED_LOADS, H100), _gap(UNROLLED_LOADS, OLD)
    assert lat < new < 1.5 * lat
    assert old > 2 * lat


RUNTIME_LOOP = """
  mov.u32 %r1, %tid.x;
  ld.global.u32 %r9, [%rd1+32];
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, 1024;
  add.s64 %rd5, %rd5, %rd4;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r2, 0;
  add.u32 %r8, %r9, 0;
  mov.u64 %rd10, %clock64;
$L_top:
  setp.ge.u32 %p1, %r2, %r8;
  @%p1 bra $L_done;
  ld.global.f32 %f2, [%rd5];
  add.f32 %f1, %f1, %f2;
  add.s64 %rd5, %rd5, 512;
  add.u32 %r2, %r2, 1;
  bra.uni $L_top;
$L_done:
  mov.u64 %rd11, %clock64;
  setp.eq.u32 %p2, %r1, 0;
  @%p2 st.global.u64 [%rd1], %rd10;
  @%p2 st.global.u64 [%rd1+8], %rd11;
  @%p2 st.global.f32 [%rd1+16], %f1;
  ret;
"""


def test_a_runtime_trip_loop_leaves_its_block_every_unroll_iterations():
    """16 iterations of load -> add with a run-time trip count: ptxas's 4-way unrolled SASS loop ends a block
    every 4 iterations, so the 16 loads go out in 4 groups -- about 4 load latencies, not 1."""
    out = np.zeros(4096, dtype=np.uint64)
    out[4] = 16
    lat = H100.gmem_fresh_latency

    def gap(cfg):
        o = out.copy()
        res = run_launch(Launch(ptx=kernel(PROLOGUE + RUNTIME_LOOP, "sm_90a"), kernel="k", block=(32, 1, 1),
                                args=[o]), timing=cfg)
        return int(res.outputs[0][1]) - int(res.outputs[0][0])
    four = gap(H100)
    assert 4 * lat < four < 4 * lat + 2 * H100.runtime_loop_cycles + 200
    two = gap(H100.with_overrides({"runtime_loop_unroll": 8}))
    assert 2 * lat < two < 2 * lat + 2 * H100.runtime_loop_cycles + 200


ATOMICS = """
  ld.param.u64 %rd1, [out];
  mov.u32 %r4, %tid.x;
  atom.global.add.u32 %r5, [%rd1], 10;
  atom.global.exch.b32 %r7, [%rd1+8], %r4;
  atom.global.max.s32 %r8, [%rd1+12], %r4;
  atom.global.inc.u32 %r10, [%rd1+20], 17;
  atom.global.cas.b32 %r13, [%rd1+28], %r4, %r4;
  atom.global.add.f32 %f1, [%rd1+32], 0f3F800000;
  atom.global.add.u32 %r14, [%rd1+36], 1;
  atom.global.or.b32 %r15, [%rd1+40], %r4;
  red.global.xor.b32 [%rd1+44], %r4;
  st.global.u32 [%rd1+48], %r14;
  ret;
"""


def test_warp_reduced_atomics_are_those_of_the_sass():
    fn = parse(kernel(ATOMICS, "sm_90a")).functions["k"]
    got = [fn.body[pc].full_opcode for pc in sorted(warp_reduced_atomics(fn.body))]
    # add / max / or with unused results and the red: REDUX; exch / inc / cas per lane, an f32 add (no REDUX)
    # and an add whose result is stored are not
    assert got == ["atom.global.add.u32", "atom.global.max.s32", "atom.global.or.b32", "red.global.xor.b32"]


ATOM_BACKLOG = """
  mov.u64 %rd10, %clock64;
  mov.u32 %r1, %tid.x;
  atom.global.exch.b32 %r7, [%rd1+64], %r1;
  mov.u64 %rd11, %clock64;
  mul.wide.u32 %rd4, %r1, 16;
  add.s64 %rd5, %rd1, 128;
  add.s64 %rd5, %rd5, %rd4;
  st.global.u64 [%rd5], %rd10;
  st.global.u64 [%rd5+8], %rd11;
  ret;
"""


def _backlog_span(cfg, threads=256):
    out = np.zeros(16 + 2 * threads, dtype=np.uint64)
    res = run_launch(Launch(ptx=kernel(PROLOGUE + ATOM_BACKLOG, "sm_90a"), kernel="k", block=(threads, 1, 1),
                            args=[out]), timing=cfg)
    o = res.outputs[0][16:].reshape(threads, 2)
    return int(o[:, 1].max()) - int(o[:, 0].min())


def test_same_word_atomics_hold_their_warps_once_the_backlog_is_full():
    """256 lanes exchanging one word: the L2 does them one after the other (atom_same_address_cycles each); once
    more than atom_queue_cycles of them wait, a warp's atomic does not leave the SM, so the last warp reads its
    clock about 256 x atom_same_address_cycles - atom_queue_cycles in (cs_atomicIntrinsics' shape).  With the
    queue unbounded the warps run on at once."""
    serial = 256 * H100.atom_same_address_cycles
    held = _backlog_span(H100)
    free = _backlog_span(H100.with_overrides({"atom_queue_cycles": 0}))
    assert free < 200
    assert serial - H100.atom_queue_cycles - 32 * H100.atom_same_address_cycles < held < serial
    assert arch_config("sm_100a").atom_queue_cycles == 0 and H100.atom_queue_cycles == H100.gmem_store_queue_cycles
