"""The timing of the 5th-generation tensor pipe (tcgen05) from an architecture config.

One in-order pipe per CTA (``.cta_group::1``) or CTA pair (``.cta_group::2``), modelled as two stages and a fixed
latency (shared/reference/timing.md, B200 table, SemiAnalysis fits):

* **feed**: the operands an MMA reads from shared memory stream in at ``tc_feed_bytes_per_clk`` (128 B/clk per
  SM; with ``::2`` each SM feeds its own half).  A from SMEM (SS) must be in before the MMA starts; B streams
  while it computes.
* **compute**: ``N x tc_cycles_per_n_*`` cycles (N/2 for 1-SM M=64 / M=128 and 2-SM M=256, N/4 for 2-SM M=128),
  for every kind (K grows as the element shrinks, so the FLOP rate doubles per halving of the type).
* **fixed latency** to completion, derived from the published issue -> commit -> mbarrier-wait fits by taking
  away what tcsim models separately in such a measurement: the mbarrier wake-up latency, the commit's arrive
  latency and the two single-cycle issues inside the timed region (the MMA after the opening ``%clock64`` read,
  the wait loop's branch before the closing one).  The fits' SS - TS differences (M=64: 16, M=128 and 2-SM M=256:
  32 cycles) are exactly the A operand's feed time (M/cta_group x 32 bytes / 128 B/clk), which is how the model
  produces them.

Steady state the pipe accepts an MMA every ``max(compute, (A+B) bytes / feed)`` cycles: N/2, or the SMEM bound
for SS with small N (timing.md: "SS with N<128 is SMEM bound").  Completions stay in issue order.
"""
from __future__ import annotations

import math

#: single-cycle issues inside a clock64-timed issue -> commit -> wait region besides the pipe (see docstring)
TIMED_REGION_ISSUES = 2


def cycles_per_n(cfg, m: int, cta_group: int) -> float:
    if cta_group == 2:
        return cfg.tc_cycles_per_n_2sm_m256 if m >= 256 else cfg.tc_cycles_per_n_2sm_m128
    return cfg.tc_cycles_per_n_1sm_m128 if m >= 128 else cfg.tc_cycles_per_n_1sm_m64


def fit_base(cfg, m: int, cta_group: int) -> float:
    """The published fit's constant term (TS form) for this shape."""
    if cta_group == 2:
        return cfg.tc_fit_base_2sm_m256 if m >= 256 else cfg.tc_fit_base_2sm_m128
    return cfg.tc_fit_base_1sm


def fixed_latency(cfg, m: int, cta_group: int) -> float:
    """The pipe's own latency after compute (derived; see the module docstring)."""
    return (fit_base(cfg, m, cta_group) - cfg.mbarrier_wake_latency - cfg.tc_commit_latency
            - TIMED_REGION_ISSUES)


def peak_rate(cfg, kind: str) -> float:
    """Dense peak FLOP/clk per SM of a tcgen05 ``.kind``."""
    if kind == "tf32":
        return cfg.tc_peak_tf32
    if kind in ("f8f6f4", "i8", "mxf8f6f4"):
        return cfg.tc_peak_f8f6f4
    if kind in ("mxf4", "mxf4nvf4"):
        return cfg.tc_peak_f4
    return cfg.tc_peak_f16


class TensorPipeTiming:
    """Arch-config timing of one tensor pipe: :meth:`schedule` returns (busy cycles, completion cycle) of an op
    arriving at ``now``; state: when the feed and compute stages free up, and the last completion."""

    def __init__(self, cfg, cta_group: int):
        self.cfg = cfg
        self.cta_group = cta_group
        self.feed_free = 0.0
        self.compute_free = 0.0
        self.last_completion = 0.0

    def _feed(self, nbytes: float) -> int:
        return math.ceil(nbytes / self.cfg.tc_feed_bytes_per_clk)

    def schedule(self, op, now: float, extra: float = 0) -> tuple[float, float]:
        """``extra``: cycles added to the op's latency (the exploration knob; the latency stays >= 0)."""
        cfg = self.cfg
        if op.kind == "mma":
            x = op.extra
            m, n, k, cg = x["m"], x["n"], x["k"], self.cta_group
            rows = m if x.get("ws") else m // cg
            a_bytes = 0 if x.get("a_tmem") else rows * k * x.get("a_bits", 16) // 8
            b_bytes = (n // cg) * k * x.get("b_bits", 16) // 8
            a_cyc, ab_cyc = self._feed(a_bytes), self._feed(a_bytes + b_bytes)
            feed_start = max(now, self.feed_free)
            self.feed_free = feed_start + ab_cyc
            compute = math.ceil(n * cycles_per_n(cfg, m, cg))
            start = max(feed_start + a_cyc, self.compute_free)
            end = max(start + compute, self.feed_free)
            self.compute_free = end
            lat = fixed_latency(cfg, m, cg) + (cfg.tc_block_scale_latency if x.get("block_scale") else 0)
            done = max(end + max(0, lat + extra), self.last_completion)
            busy = compute
        elif op.kind == "cp":
            feed_start = max(now, self.feed_free)
            self.feed_free = feed_start + self._feed(op.size * op.ndest)
            done = max(self.feed_free + max(0, cfg.tc_cp_latency + extra), self.last_completion)
            busy = 0
        elif op.kind == "shift":
            start = max(now, self.compute_free)
            self.compute_free = start + cfg.tc_shift_cycles
            done = max(self.compute_free + max(0, cfg.tc_shift_latency + extra), self.last_completion)
            busy = cfg.tc_shift_cycles
        else:   # commit: arrives once everything before it completed
            done = max(now, self.last_completion) + cfg.tc_commit_latency
            busy = 0
        self.last_completion = done
        return busy, done


__all__ = ["TensorPipeTiming", "cycles_per_n", "fit_base", "fixed_latency", "peak_rate", "TIMED_REGION_ISSUES"]
