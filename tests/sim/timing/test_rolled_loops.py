"""Loops ptxas keeps rolled (sm_90a ``rolled_loop_order``; issue 21): which loops are rolled (PTX rule and SASS loop
facts) and what that costs -- the warp cannot start the next iteration's load before the current iteration's use
of its load has started, so a rolled load -> use loop pays a load latency per iteration.  The classifications
below are read off the SASS ptxas 13.0 makes of the corpus kernels (tests/golden/timing_corpus_h100 sass.tgz)."""
import numpy as np

from tcsim.isa.parser import parse
from tcsim.launch import Launch, run_launch
from tcsim.timing.model import rolled_loop_back_edges
from tcsim.timing.params import arch_config

from timing_kernels import PROLOGUE, kernel

H100 = arch_config("sm_90a")

BLOCK_STRIDE = """
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ntid.x;
  mov.f32 %f1, 0f00000000;
  mov.u64 %rd10, %clock64;
LOOP:
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f2, [%rd3+64];
  add.f32 %f1, %f1, %f2;
  add.u32 %r1, %r1, {step};
  setp.lt.u32 %p1, %r1, {bound};
  @%p1 bra LOOP;
  mov.u64 %rd11, %clock64;
  mov.u32 %r5, %tid.x;
  setp.eq.u32 %p2, %r5, 0;
  @%p2 st.global.u64 [%rd1], %rd10;
  @%p2 st.global.u64 [%rd1+8], %rd11;
  @%p2 st.global.f32 [%rd1+16], %f1;
  ret;
"""


def _fn(step, bound):
    return parse(kernel(PROLOGUE + BLOCK_STRIDE.format(step=step, bound=bound), "sm_90a")).functions["k"]


def _back_edge(fn):
    return next(pc for pc, ins in enumerate(fn.body) if ins.opcode == "bra" and ins.guard is not None
                and fn.labels[ins.operands[0].name] < pc)


def test_block_stride_loop_is_rolled_even_with_an_immediate_bound():
    # reduce_smem_tree / smem_bank_stride: i += %ntid.x stays one LDG per iteration in the SASS
    fn = _fn("%r2", 1024)
    assert rolled_loop_back_edges(fn.body, fn.labels) == [_back_edge(fn)]


def test_immediate_step_loops_are_unrolled():
    # chase_runtime_trip (step 1, run-time bound): unrolled by 16; a counted loop: unrolled whole
    for bound in (1024, "%r2"):
        fn = _fn(32, bound)
        assert rolled_loop_back_edges(fn.body, fn.labels) == []


def test_sass_facts_decide_where_recorded():
    # tri_hist_*: Triton's loop has an immediate step, but ptxas keeps it rolled (its predicated red became
    # branches): a fact says so
    fn = _fn(32, "%r2")
    pc = _back_edge(fn)
    assert rolled_loop_back_edges(fn.body, fn.labels, {pc: True}) == [pc]
    fn = _fn("%r2", 1024)
    assert rolled_loop_back_edges(fn.body, fn.labels, {_back_edge(fn): False}) == []


def _cycles(step, cfg, threads=32, n=16):
    out = np.zeros(64 * n + 64, dtype=np.float32)
    text = kernel(PROLOGUE + BLOCK_STRIDE.format(step=step, bound=threads * n), "sm_90a")
    res = run_launch(Launch(ptx=text, kernel="k", block=(threads, 1, 1), args=[out]), timing=cfg)
    o = res.outputs[0].view(np.uint64)
    return int(o[1]) - int(o[0])


def test_a_rolled_load_use_loop_pays_a_load_latency_per_iteration():
    """16 iterations of LDG -> FADD with the block stride: at least 16 L1 latencies (the lines are touched by the
    first iteration's neighbours only later, so most loads miss L1 and take longer); without the ordering the loads
    overlap and the loop takes less than half of that."""
    on = _cycles("%r2", H100)
    off = _cycles("%r2", H100.with_overrides({"rolled_loop_order": 0}))
    assert on >= 16 * H100.l1_latency
    assert off < on / 2
