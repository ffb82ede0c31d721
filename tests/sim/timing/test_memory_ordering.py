"""Memory-ordering costs (sm_90a, ``memory_ordering``; issue 21): what ptxas 13.0 compiles fences and release /
acquire accesses to (the SASS of calib/timing_corpus/cuda/atomics_fences.cu, listed in the expectations below) and
what the timing model charges for them.  Expected classifications are read off that SASS; expected cycles follow
from the parameters (each fence of a serial loop holds the warp its parameter longer), not from a recorded run."""
import numpy as np
import pytest

from tcsim.isa.parser import parse
from tcsim.launch import Launch, run_launch
from tcsim.timing.classes import memory_ordering
from tcsim.timing.params import arch_config

from timing_kernels import PROLOGUE, kernel

H100 = arch_config("sm_90a")

# PTX -> (MEMBAR scope, MEMBAR.SC, acquire (CCTL.IVALL) scope), from the SASS ptxas 13.0 makes for sm_90a
CASES = [
    ("fence.sc.cta;", ("cta", True, None)),                          # MEMBAR.SC.CTA
    ("fence.acq_rel.cta;", ("cta", False, None)),                    # MEMBAR.ALL.CTA
    ("fence.sc.gpu;", ("gpu", True, "gpu")),                         # MEMBAR.SC.GPU; ERRBAR; CGAERRBAR; CCTL.IVALL
    ("fence.acq_rel.gpu;", ("gpu", False, "gpu")),                   # MEMBAR.ALL.GPU ... CCTL.IVALL
    ("fence.acq_rel.sys;", ("sys", False, "sys")),                   # MEMBAR.ALL.SYS ... CCTL.IVALL
    ("membar.gl;", ("gpu", True, "gpu")),
    ("fence.proxy.async.shared::cta;", (None, False, None)),        # FENCE.VIEW.ASYNC.S: no MEMBAR
    ("fence.mbarrier_init.release.cluster;", (None, False, None)),
    ("atom.relaxed.gpu.global.add.u32 %r1, [%rd1], 1;", (None, False, None)),     # REDG / ATOMG
    ("atom.acquire.gpu.global.add.u32 %r1, [%rd1], 1;", (None, False, "gpu")),    # ATOMG; CCTL.IVALL
    ("atom.release.gpu.global.add.u32 %r1, [%rd1], 1;", ("gpu", False, None)),    # MEMBAR.ALL.GPU...; REDG
    ("atom.acq_rel.gpu.global.add.u32 %r1, [%rd1], 1;", ("gpu", False, "gpu")),   # MEMBAR.ALL.GPU; ATOMG; CCTL
    ("atom.acq_rel.cta.global.add.u32 %r1, [%rd1], 1;", ("cta", False, None)),    # MEMBAR.ALL.CTA; ATOMG.STRONG.SM
    ("atom.acq_rel.sys.global.add.u32 %r1, [%rd1], 1;", ("sys", False, "sys")),
    ("red.release.gpu.global.add.u32 [%rd1], 1;", ("gpu", False, None)),
    ("st.release.gpu.global.u32 [%rd1], %r1;", ("gpu", False, None)),            # MEMBAR.ALL.GPU; STG.STRONG.GPU
    ("ld.acquire.gpu.global.u32 %r1, [%rd1];", (None, False, "gpu")),           # LDG.STRONG.GPU; CCTL.IVALL
    ("ld.relaxed.gpu.global.u32 %r1, [%rd1];", (None, False, None)),
    ("ld.global.u32 %r1, [%rd1];", (None, False, None)),
]


@pytest.mark.parametrize("text,want", CASES)
def test_classification_follows_the_sass(text, want):
    mod = parse(kernel("  " + text + "\n  ret;", "sm_90a"))
    assert memory_ordering(mod.functions["k"].body[0]) == want


FENCE_LOOP = """
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  add.s64 %rd3, %rd3, 64;
  mov.u32 %r2, 0;
  mov.u64 %rd10, %clock64;
LOOP:
  st.global.u32 [%rd3], %r2;
  {fence}
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, {iters};
  @%p1 bra LOOP;
  mov.u64 %rd11, %clock64;
  setp.eq.u32 %p2, %r1, 0;
  @%p2 st.global.u64 [%rd1], %rd10;
  @%p2 st.global.u64 [%rd1+8], %rd11;
  ret;
"""


def _fence_cycles(fence: str, cfg, iters: int = 16) -> int:
    out = np.zeros(64, dtype=np.uint64)
    launch = Launch(ptx=kernel(PROLOGUE + FENCE_LOOP.format(fence=fence, iters=iters), "sm_90a"), kernel="k",
                    block=(32, 1, 1), args=[out])
    res = run_launch(launch, timing=cfg)
    o = res.outputs[0]
    return int(o[1]) - int(o[0])


@pytest.mark.parametrize("fence,param", [("fence.acq_rel.gpu;", "membar_gpu_cycles"),
                                         ("fence.acq_rel.cta;", "membar_cta_cycles"),
                                         ("fence.sc.sys;", "membar_sys_cycles")])
def test_each_fence_holds_the_warp_its_parameter(fence, param):
    """A serial loop of (store; fence): 16 more fences' worth of cycles per 100 clk added to the parameter."""
    base = _fence_cycles(fence, H100)
    more = _fence_cycles(fence, H100.with_overrides({param: getattr(H100, param) + 100}))
    assert more - base == 16 * 100


def test_sc_fence_costs_the_sc_extra():
    cfg = H100.with_overrides({"membar_sc_extra": 40})
    assert _fence_cycles("fence.sc.gpu;", cfg) - _fence_cycles("fence.acq_rel.gpu;", cfg) == 16 * 40


def test_gpu_fence_waits_for_the_store():
    """MEMBAR.GPU waits until the warp's store is performed: at least an L2 round trip per iteration more than the
    CTA-scope fence, beyond the parameters' difference."""
    gpu, cta = _fence_cycles("fence.acq_rel.gpu;", H100), _fence_cycles("fence.acq_rel.cta;", H100)
    assert gpu - cta >= 16 * (H100.membar_gpu_cycles - H100.membar_cta_cycles + H100.l2_latency)


def test_off_without_memory_ordering():
    """sm_100a (no measurement) and memory_ordering 0: a fence costs what it did before (one issue cycle)."""
    off = H100.with_overrides({"memory_ordering": 0})
    assert _fence_cycles("fence.acq_rel.gpu;", off) == _fence_cycles("fence.acq_rel.cta;", off)
    assert arch_config("sm_100a").memory_ordering == 0
