"""Async units under the timing model: the TMA engine's per-request latency, bandwidth and queueing come from the
arch config; explicit unit parameters still win."""
import importlib.util
from pathlib import Path

import numpy as np

from tcsim.agents.tensor_pipe import TensorPipeParams
from tcsim.agents.tma import TmaParams
from tcsim.launch import Launch, run_launch
from tcsim.timing.params import arch_config

_spec = importlib.util.spec_from_file_location(
    "bench_tcgen05_fits", Path(__file__).resolve().parents[3] / "benchmarks" / "bench_tcgen05_fits.py")
fits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fits)

CFG = arch_config("sm_100a")


def _copy_kernel(sizes) -> str:
    """One thread: bulk copies of ``sizes`` bytes global -> SMEM on one mbarrier; %clock64 from just before the
    first issue to the end of the wait (every operand is computed before the timed region)."""
    total = sum(sizes)
    offs = [sum(sizes[:i]) for i in range(len(sizes))]
    operands = "".join(f"  add.u32 %r{4 + i}, %r1, {o};\n  add.u64 %rd{4 + i}, %rd1, {o};\n"
                       for i, o in enumerate(offs))
    issue = "".join(f"  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r{4 + i}], [%rd{4 + i}], "
                    f"{n}, [%r2];\n" for i, n in enumerate(sizes))
    return f""".version 8.7
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 src, .param .u64 out)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .shared .align 128 .b8 buf[{total}];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [src];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, buf;
  mov.u32 %r2, bar;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], {total};
{operands}  nanosleep.u32 50;
  mov.u64 %rd10, %clock64;
{issue}$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
  @!%p1 bra $L_wait;
  mov.u64 %rd11, %clock64;
  sub.u64 %rd12, %rd11, %rd10;
  st.global.u64 [%rd2], %rd12;
  ret;
}}
"""


def _time(sizes, **kw):
    src = np.arange(sum(sizes), dtype=np.uint8)
    out = np.zeros(1, dtype=np.uint64)
    return int(run_launch(Launch(ptx=_copy_kernel(sizes), kernel="k", block=(1, 1, 1), args=[src, out]),
                          timing=True, **kw).outputs[1][0])


def test_tma_latency_bandwidth_and_queueing():
    one_k, eight_k = _time([1024]), _time([8192])
    assert eight_k - one_k == (8192 - 1024) // CFG.tma_bytes_per_clk          # bandwidth
    occ = 1024 // CFG.tma_bytes_per_clk
    # latency + occupancy, plus the mbarrier wake-up and a few single-cycle issues inside the timed region
    assert CFG.tma_latency + occ + CFG.mbarrier_wake_latency < one_k <= CFG.tma_latency + occ + \
        CFG.mbarrier_wake_latency + 4
    # queueing: two 4 KB copies share the engine like one 8 KB copy (+1 cycle: the second issue)
    assert _time([4096, 4096]) - eight_k in (0, 1)


def test_explicit_unit_parameters_win_over_the_arch_config():
    assert _time([1024], tma_params=TmaParams(latency=3000)) > 3000
    slow = fits.measure(128, 128, False, 1, tensor_pipe_params=TensorPipeParams(mma_latency=1000))
    assert slow > 1000 > fits.measure(128, 128, False, 1)
