"""Shared-memory bank conflicts: wavefronts per request, and their cost in a running kernel."""
import numpy as np
import pytest

from tcsim.timing.params import arch_config
from tcsim.timing.smem import GlobalLines, smem_wavefronts

from timing_kernels import PROLOGUE, run

LANES = np.arange(32)


@pytest.mark.parametrize("addrs, size, ways", [
    (LANES * 4, 4, 1),              # consecutive words: conflict-free
    (LANES * 128, 4, 32),           # 32 lanes, one bank, 32 different words: 32-way
    (np.zeros(32, int), 4, 1),      # one word: broadcast
    (LANES * 8, 4, 2),              # stride 2 words: 2-way
    (LANES // 2 * 4, 4, 1),         # pairs of lanes share a word
    (LANES * 8, 8, 2),              # 64-bit, consecutive: two half-warp phases, each conflict-free
    (LANES * 16, 16, 4),            # 128-bit, consecutive: four quarter-warp phases
    (LANES * 256, 8, 32),           # 64-bit, one bank pair per phase: 16-way in each of 2 phases
    (LANES[:1] * 4, 4, 1),          # a single lane
])
def test_wavefronts(addrs, size, ways):
    assert smem_wavefronts(addrs, size) == ways


def _delta(stride: int):
    """Cycles from ld.shared (lane i at buf + stride * i) to a dependent add, %clock64-timed."""
    body = f"""
  mov.u32 %r1, %tid.x;
  mul.lo.u32 %r2, %r1, {stride};
  mov.u32 %r9, buf;
  add.u32 %r3, %r9, %r2;
{PROLOGUE}
  mov.u64 %rd2, %clock64;
  ld.shared.u32 %r4, [%r3];
  add.u32 %r5, %r4, 1;
  mov.u64 %rd3, %clock64;
  sub.u64 %rd4, %rd3, %rd2;
  st.global.u64 [%rd1], %rd4;
  ret;
"""
    res, _ = run(body, shared="  .shared .align 16 .b8 buf[8192];")
    return int(res.outputs[0][0]), res


def test_conflicts_cost_a_cycle_per_extra_wavefront():
    per = arch_config("sm_100a").smem_conflict_cycles       # the kernels target sm_100a
    free, _ = _delta(4)
    assert _delta(128)[0] - free == 31 * per     # 32-way conflict: 31 extra wavefronts
    assert _delta(0)[0] == free                  # broadcast
    assert _delta(8)[0] - free == 1 * per        # 2-way
    busy = _delta(128)[1].timing.units["smem"]["busy"]
    assert busy == 32


def test_global_first_touch_then_l2():
    lines = GlobalLines(128)
    assert lines.touch(np.array([0, 4, 127, 128], dtype=np.uint64)) == (2, 2)
    assert lines.touch(np.array([0, 256], dtype=np.uint64)) == (2, 1)
    cfg = arch_config("sm_100a")
    body = f"""{PROLOGUE}
  ld.global.u32 %r1, [%rd1];
  mov.u64 %rd2, %clock64;
  ld.global.u32 %r2, [%rd1+8];
  add.u32 %r3, %r2, 1;
  mov.u64 %rd3, %clock64;
  sub.u64 %rd4, %rd3, %rd2;
  st.global.u64 [%rd1+16], %rd4;
  ret;
"""
    res, _ = run(body)
    d = int(res.outputs[0][2])
    assert cfg.l2_latency < d < cfg.dram_latency       # the line was touched: an L2 hit
