"""Timing decides when, semantics decide what (DESIGN.md principle 5): every race-free example gives bit-identical
outputs -- and per-thread instruction traces (pc, register writes) except for timestamps and the
clock registers -- with the 1-cycle model and with the sm_90a / sm_100a timing model, under several schedule
seeds."""
import importlib
import pkgutil

import numpy as np
import pytest

import tcsim.examples as examples
from tcsim.launch import run_launch
from tcsim.observe import EventRecorder

#: every example module with a make_launch (the examples are race-free kernels with a check)
EXAMPLES = sorted(m.name for m in pkgutil.iter_modules(examples.__path__)
                  if not m.name.startswith("_")
                  and hasattr(importlib.import_module(f"examples.{m.name}"), "make_launch"))
#: examples whose five runs cost too much for CI's not-slow selection (the 2 x 2-CTA 256x512x256 benchmark GEMM; its
#: own test file checks it under a seed and the timing model)
SLOW_EXAMPLES = {"tcgen05_pipeline_gemm"}
CONFIGS = [dict(timing=False, seed=None), dict(timing=False, seed=3), dict(timing=True, seed=None),
           dict(timing=True, seed=1), dict(timing=True, seed=2)]


def _flat(x):
    if x is None:
        return None
    if isinstance(x, list):
        return [_flat(y) for y in x]
    return np.ascontiguousarray(x).reshape(-1).view(np.uint8).copy()


def _lane_values(values, lane: int, active: list):
    """The value of ``lane`` in a write's per-lane values (all 32 lanes, or the active lanes in order)."""
    if not isinstance(values, (list, tuple)):
        return values
    return values[lane] if len(values) == 32 else values[active.index(lane)]


def _warp_traces(rec: EventRecorder) -> dict:
    """Per thread (CTA, warp, lane): the retired instructions in order, without timestamps.  Per thread, not per
    warp-instruction: how a diverged warp's paths interleave and where it reconverges is the scheduler's choice (a
    lane group may reach a wait and block there before the other group catches up, or wait for it), so the same
    thread-level execution can retire as different warp-level groups.  Left out: the values of %clock /
    %clock64 / %globaltimer reads (timestamps), and the predicate of a blocking mbarrier.try_wait, which the
    record shows at retirement -- False when the wait blocked, its True landing at the release -- so it says
    whether the wait blocked, not what the kernel computed."""
    out: dict = {}
    for e in rec.of("inst"):
        f = e.fields
        t = f["text"]
        writes = {} if "%clock" in t or "%globaltimer" in t or "mbarrier.try_wait" in t else f["writes"]
        mask = f["mask"]
        active = [ln for ln in range(32) if mask >> ln & 1]
        for ln in active:
            vals = sorted((r, _lane_values(v, ln, active)) for r, v in writes.items())
            out.setdefault((e.cta, f["warp"], ln), []).append((f["pc"], vals))
    return out


def _run(mod, cfg):
    rec = EventRecorder(kinds=("inst",))
    launch = mod.make_launch()
    res = run_launch(launch, observers=(rec,), **cfg)
    if hasattr(mod, "check"):
        ok, msg = mod.check(res, launch)
        assert ok, f"{mod.__name__} {cfg}: {msg}"
    return res, _warp_traces(rec)


def test_every_example_is_covered():
    assert {"gemm_async", "cta_pair_gemm", "mma_gemm", "tma_mma_gemm", "bulk_pipeline"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW_EXAMPLES else [])
                                  for n in EXAMPLES])
def test_results_identical_with_timing_on_and_off(name):
    mod = importlib.import_module(f"examples.{name}")
    base, base_trace = _run(mod, CONFIGS[0])
    cycles = {base.stats["cycles"]}
    for cfg in CONFIGS[1:]:
        res, trace = _run(mod, cfg)
        cycles.add(res.stats["cycles"])
        assert res.stats["timing"] == cfg["timing"]
        assert (res.timing is not None) == cfg["timing"]
        for i, (a, b) in enumerate(zip(base.outputs, res.outputs)):
            fa, fb = _flat(a), _flat(b)
            if fa is None:
                assert fb is None
            elif isinstance(fa, list):
                assert all(np.array_equal(x, y) for x, y in zip(fa, fb)), f"argument {i} differs under {cfg}"
            else:
                assert np.array_equal(fa, fb), f"argument {i} differs under {cfg}"
        assert trace == base_trace, f"per-thread traces differ under {cfg}"
    assert len(cycles) > 1      # the configurations really scheduled differently


RACY = """.version 8.7
.target sm_100a
.address_size 64
.visible .entry racy(.param .u64 src, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .shared .align 16 .b8 buf[16];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [src];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, buf;
  mov.u32 %r2, bar;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 16;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];
  nanosleep.u32 300;
  ld.shared.u32 %r3, [%r1];          // RACE: reads the copy's destination without waiting on bar
  st.global.u32 [%rd2], %r3;
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
  @!%p1 bra $L_wait;
  ret;
}
"""


def test_racy_kernel_reads_what_timing_lets_land():
    """The converse of the invariance: a kernel that reads a TMA destination 300 cycles after the issue without
    waiting sees the data under the 1-cycle model's 200-cycle TMA, and stale SMEM under the sm_100a TMA latency --
    timing decides when the data lands, and the simulation really reads what is there then."""
    from tcsim.launch import Launch
    src = np.array([0xC0FFEE, 1, 2, 3], dtype=np.uint32)

    def read(timing):
        out = np.zeros(1, dtype=np.uint32)
        return int(run_launch(Launch(ptx=RACY, kernel="racy", block=(1, 1, 1), args=[src, out]),
                              timing=timing).outputs[1][0])

    assert read(False) == 0xC0FFEE
    assert read(True) == 0
