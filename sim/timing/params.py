"""Architecture timing configs as data: ``sm_100a`` (B200) and ``sm_90a`` (H100).

Every parameter is a :class:`Param` -- value, unit, kind and source.  Kinds (as in
shared/reference/timing.md): ``M`` measured, ``S`` vendor specification, ``D`` derived from other entries (the
note says how), ``E`` estimate (not public; the note says what it rests on).  Clocks are SM cycles; tcsim has one
clock domain (the SM clock, ``sm_clock_mhz``), and memory-side figures are converted into SM cycles here.

The H100 (sm_90a) values below are starting points; the values measured and fitted on the H100 calibration
kernels of ``calib/microbench`` (``python -m calib.microbench fit``, calib/microbench/fit.py) replace them from one place,
the JSON file :data:`MEASURED_H100` (``{"name": {"value": v, "source": "...", "note": "..."}}``; see
:func:`load_measured`), which :func:`arch_config` applies on top of the table below.  A test checks that every
parameter has a unit and a source.

One config times everything (DESIGN.md principle 14): the timing model, and every async unit, which builds its
parameters from the config it is constructed with (the TMA engine: ``tma_*``; cp.async: ``cp_async_*``; the
tensor pipe: ``tc_*``; the tcgen05.st landing: ``tmem_st_land_latency``).  Timing off is not a branch but a preset
of the same config, :meth:`ArchConfig.untimed` (:data:`UNTIMED`: ``timed`` 0 and the async units' fixed numbers);
:func:`timing_config` picks the config of a launch.

Schedule exploration (:mod:`tcsim.explore`) moves async completion times through the same config: each unit adds
its ``*_extra_latency`` knob to every op (0 in a normal run) and the exploration sets it to the unit's earliest or
latest plausible completion (``*_early_extra`` / ``*_late_extra``, per target and for the functional preset), or
has every op draw its own (``async_jitter_seed``); :data:`LATENCY_KNOBS` lists them per unit.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from tcsim.isa.errors import LaunchError

#: where H100 measurements override sm_90a estimates: package data, written by ``python -m calib.microbench fit``
MEASURED_H100 = Path(__file__).resolve().parent / "data" / "measured_h100.json"

KINDS = {"M": "measured", "S": "vendor specification", "D": "derived", "E": "estimate"}

# ---------------------------------------------------------------------------------------------- sources
TM_B200 = "shared/reference/timing.md, B200 table"
SEMI = "SemiAnalysis microbench-blackwell (timing.md B200 table)"
TM_H100 = "shared/reference/timing.md, H100 table"
LUO = "Luo et al., arXiv 2402.13499, H800 (timing.md H100 table)"
ACCEL = "Accel-Sim SM90_H100 gpgpusim.config (timing.md H100 table)"
CUDA_GUIDE = "CUDA C++ Programming Guide, 'Arithmetic Instructions' throughput table (compute capability 9.0)"
CUDA_SMEM = "CUDA C++ Programming Guide, 'Shared Memory' (compute capability 5.x and later: 32 banks of 4 bytes)"
H100_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper: 4 SM sub-partitions, one warp scheduler each"
JIA = "Jia et al., Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking, arXiv 1804.06826"
TM_H100_HERE = "timing.md: measured here on H100 SXM (64x64 fp16 2D TMA load, 128B swizzle, ~565 clk to mbarrier)"
MB_H100 = "calib/microbench on the H100 (tests/golden/timing_h100)"
CORPUS_H100 = "calib/timing_corpus fit split on the H100 (tests/golden/timing_corpus_h100)"
TCSIM = "tcsim's model structure (sim/timing/model.py, sim/timing/functional.py)"
FUNCTIONAL = ("tcsim's functional (timing-off) preset: the fixed numbers its async units have used since they were "
              "written (the functional tests and recorded traces rest on them)")


def _fixed_pipe(src, kind="E"):
    """The fixed-parameter tensor-pipe model's numbers (``tc_fixed_pipe`` = 1: the functional preset, or a
    :class:`tcsim.agents.tensor_pipe.TensorPipeParams` given to a launch): FIFO, each op occupying the pipe for
    its issue interval and completing a fixed latency after it.  Starting values from timing.md "B200"."""
    return {
        "tc_fixed_mma_cycles_per_n": P(0.5, "clk/N", kind, src, "MMA issue interval N x this (timing.md: N/2 for "
                                                               "every dtype)"),
        "tc_fixed_mma_min_cycles": P(4, "clk", kind, src, "shortest MMA issue interval (not public)"),
        "tc_fixed_mma_latency": P(128, "clk", kind, src, "end of an MMA's issue interval -> completion (timing.md: "
                                                         "~N/2 + 104..170 in all)"),
        "tc_fixed_cp_bytes_per_clk": P(128, "B/clk", kind, src, "tcgen05.cp SMEM feed (timing.md: 128 B/clk/SM)"),
        "tc_fixed_cp_latency": P(32, "clk", kind, src, "tcgen05.cp latency after its feed (not public)"),
        "tc_fixed_shift_cycles": P(4, "clk", kind, src, "tcgen05.shift occupancy (not public)"),
        "tc_fixed_shift_latency": P(16, "clk", kind, src, "tcgen05.shift latency (not public)"),
        "tc_fixed_commit_latency": P(0, "clk", kind, src, "completion of the op before a commit -> its arrive"),
    }


@dataclass(frozen=True)
class Param:
    """One timing parameter: ``value`` in ``unit``; ``kind`` one of :data:`KINDS`; ``source`` where the number
    comes from; ``note`` what it means or how it was derived / estimated."""

    value: float
    unit: str
    kind: str
    source: str
    note: str = ""

    @property
    def is_estimate(self) -> bool:
        return self.kind == "E"


def P(value, unit, kind, source, note=""):
    return Param(value, unit, kind, source, note)


def _tensor_core_fits(fit_1sm, fit_2sm_m256, fit_2sm_m128, src):
    """The tcgen05.mma parameters (shared structure of the B200 fits; sm_90a has no tcgen05, so tcsim's
    sm_90a config keeps the same numbers marked as estimates -- a tcgen05 kernel there fails to decode)."""
    return {
        "tc_mma_issue_cycles": P(12, "clk", "M", src, "fixed per-MMA issue overhead of the issuing warp"),
        "tc_feed_bytes_per_clk": P(128, "B/clk/SM", "M", src, "SMEM operand feed of the tensor pipe (SS with "
                                                            "N<128 is SMEM bound)"),
        "tc_cycles_per_n_1sm_m64": P(0.5, "clk/N", "M", src, "1 SM, M=64: half rate (same interval as M=128)"),
        "tc_cycles_per_n_1sm_m128": P(0.5, "clk/N", "M", src, "steady issue interval N/2, every dtype"),
        "tc_cycles_per_n_2sm_m256": P(0.5, "clk/N", "M", src, "steady issue interval N/2, every dtype"),
        "tc_cycles_per_n_2sm_m128": P(0.25, "clk/N", "M", src, "slope of the 2-SM TS M=128 latency fit N/4+146"),
        "tc_fit_base_1sm": P(fit_1sm, "clk", "M", src, "issue->commit->mbarrier wait, 1 SM TS: N/2 + this (SS adds "
                                                       "the A operand's SMEM feed: M=64 +16, M=128 +32)"),
        "tc_fit_base_2sm_m256": P(fit_2sm_m256, "clk", "M", src, "same, 2 SM TS M=256 (SS M=256: +32 = 170)"),
        "tc_fit_base_2sm_m128": P(fit_2sm_m128, "clk", "M", src, "same, 2 SM TS M=128: N/4 + this"),
        "tc_block_scale_latency": P(3, "clk", "M", src, "block scaling costs +1..5 clk latency, no throughput "
                                                        "loss: the midpoint"),
        "tc_commit_latency": P(0, "clk", "D", src, "last op's completion -> commit arrive; included in the fits"),
        "tc_cp_latency": P(32, "clk", "E", src, "tcgen05.cp SMEM->TMEM latency after its feed (not public)"),
        "tc_shift_cycles": P(4, "clk", "E", src, "tcgen05.shift occupancy (not public)"),
        "tc_shift_latency": P(16, "clk", "E", src, "tcgen05.shift latency (not public)"),
        "tmem_ld_latency": P(24, "clk", "E", src, "tcgen05.ld issue -> registers (not public)"),
        "tmem_st_latency": P(16, "clk", "E", src, "tcgen05.st issue -> TMEM written (not public): when the issue "
                                                 "model lets tcgen05.wait::st issue (sim/timing/model.py)"),
        "tmem_st_land_latency": P(32, "clk", "E", FUNCTIONAL,
                                  "tcgen05.st issue -> its cells land in TMEM (what tcgen05.wait::st and later "
                                  "readers wait for; sim/semantics/tcgen05_mem.py): not public, tcsim's value "
                                  "since the tcgen05 ld/st semantics were written, timing on and off.  It is not "
                                  "tmem_st_latency, which gates the wait's issue: making the two one changes "
                                  "timed results (open)"),
        "tc_fixed_pipe": P(0, "bool", "E", TCSIM, "0: the tensor pipe is timed by the fitted two-stage model "
                                                  "(sim/timing/tensor.py, the tc_* fits); 1: by the fixed-parameter "
                                                  "model of the tc_fixed_* numbers"),
        **_fixed_pipe(TM_B200),
        "tmem_bytes_per_clk_subpartition": P(128, "B/clk", "E", src, "TMEM <-> registers per sub-partition: 32 "
                                                                     "lanes x 32 bit (not public)"),
    }


SM_100A: dict = {
    # clocks and size
    "sm_clock_mhz": P(1965, "MHz", "M", TM_B200, "SM clock seen in benchmarks; the only clock domain"),
    "num_sms": P(148, "SMs", "S", TM_B200),
    # warp schedulers
    "schedulers_per_sm": P(4, "schedulers", "E", H100_WP, "Hopper's 4 sub-partitions, assumed unchanged on "
                                                           "Blackwell; warp w issues on scheduler w % 4"),
    "issue_per_scheduler_clk": P(1, "warp-instr/clk", "E", H100_WP, "one dispatch per scheduler per clock"),
    "timed": P(1, "bool", "E", TCSIM, "1: the timing model decides when each warp-instruction issues "
                                      "(sim/timing/model.py); 0: every warp-instruction takes one cycle (the "
                                      "functional preset, ArchConfig.untimed)"),
    "dataflow_window": P(8, "instructions", "E", H100_WP, "dataflow issue only (off for B200)"),
    "sass_timed_loops": P(0, "bool", "E", H100_WP, "0: no SASS-timed loops on sm_100a"),
    "wgmma_subpartition_units": P(1, "bool", "E", H100_WP, "1: a warp's share of a wgmma runs on its sub-partition's "
                                                          "tensor core (wgmma is sm_90a's; kept so a config is "
                                                          "complete)"),
    "mma_sync_operand_read": P(0, "clk", "E", H100_WP, "0: no write-after-read wait on mma.sync operands "
                                                       "(sm_90a only, see there)"),
    "dataflow_issue": P(0, "bool", "E", H100_WP, "0: a warp issues its PTX in program order, each instruction "
                                                 "waiting for its operands; 1: dataflow issue (sim/timing/model.py) "
                                                 "-- kept off for B200, whose published fits were matched in order"),
    # shared memory
    "smem_banks": P(32, "banks", "S", CUDA_SMEM),
    "smem_bank_bytes": P(4, "B", "S", CUDA_SMEM),
    "smem_bytes_per_clk": P(128, "B/clk/SM", "S", TM_B200, "one 32-bank wavefront per clock"),
    "smem_latency": P(30, "clk", "E", TM_B200, "not public for B200: just under the measured 40 clk L1 "
                                                "pointer chase, like H800 (29 SMEM vs 41 L1)"),
    "smem_conflict_cycles": P(1, "clk/wavefront", "E", CUDA_SMEM, "latency added by each wavefront after the first "
                                                                  "(bank-conflict replay, ldmatrix phase): one "
                                                                  "SMEM port cycle (not measured on B200)"),
    "dsmem_remote_latency": P(30, "clk", "E", TM_B200, "ld/st.shared::cluster to a peer CTA: not measured on "
                                                       "B200, kept at smem_latency (DSMEM not modelled apart)"),
    "dsmem_own_extra": P(0, "clk", "E", TM_B200, "shared::cluster access to the own CTA over plain ld.shared "
                                                 "(not measured on B200)"),
    # memory hierarchy (simple model: L1 not modelled for global; first touch of a 128-byte line from HBM,
    # later touches L2 hits)
    "l1_latency": P(40, "clk", "M", TM_B200, "pointer chase; used for ld.param / ld.const"),
    "l1_caches_global_loads": P(0, "bool", "E", TM_B200, "1: ld.global without .cg/.cs/.cv/.lu hits L1 (l1_latency) "
                                                         "once its lines are in this SM's L1; kept off for B200 "
                                                         "until measured there"),
    "l2_latency": P(295, "clk", "M", TM_B200, "pointer chase, same die"),
    "dram_latency": P(860, "clk", "M", TM_B200, "pointer chase"),
    "hbm_bytes_per_clk_sm": P(25.0, "B/clk/SM", "D", TM_B200, "7.26 TB/s via TMA / (148 SMs x 1.965 GHz)"),
    "l2_bytes": P(126 << 20, "B", "S", TM_B200, "126 MB L2 (not used while gmem_cold_latency is 0)"),
    "gmem_fresh_latency": P(0, "clk", "E", TM_B200, "not measured on B200: first touches cost dram_latency"),
    "const_hit_latency": P(0, "clk", "E", TM_B200, "not measured on B200"),
    "const_l1_bytes": P(2048, "B", "E", JIA, "2 KiB on Volta (not used while const_miss_latency is 0)"),
    "param_block_resident": P(0, "bool", "E", TM_B200, "off: ld.param costs l1_latency"),
    "const_l15_latency": P(0, "clk", "E", TM_B200, "not measured on B200"),
    "const_miss_latency": P(0, "clk", "E", TM_B200, "0: ld.const costs l1_latency (not measured on B200)"),
    "tma_fresh_extra": P(0, "clk", "E", TM_B200, "0: a TMA first touch adds dram_latency - l2_latency (not measured "
                                                 "on B200)"),
    "tlb_miss_latency": P(0, "clk", "E", TM_B200, "not measured on B200 (off)"),
    "tlb_page_bytes": P(2 << 20, "B", "E", CUDA_GUIDE, "2 MB pages (not used while tlb_miss_latency is 0)"),
    "gmem_cold_latency": P(0, "clk", "E", TM_B200, "0: a first touch costs dram_latency (not measured on B200)"),
    "l2_bytes_per_clk_sm": P(64, "B/clk/SM", "E", TM_B200, "L2 bandwidth is not public"),
    "gmem_sector_bytes": P(32, "B", "S", CUDA_GUIDE, "global accesses move 32-byte sectors"),
    "gmem_line_bytes": P(128, "B", "S", CUDA_GUIDE, "cache line (HBM first-touch granule of the model)"),
    # instruction classes: dependent-issue latency and per-SM throughput
    "alu_latency": P(4, "clk", "E", JIA, "dependent FFMA/IADD latency measured on Volta; assumed unchanged"),
    "fp32_ops_per_clk": P(128, "lane-ops/clk/SM", "E", CUDA_GUIDE, "cc 9.0 value assumed for cc 10.0"),
    "int_ops_per_clk": P(64, "lane-ops/clk/SM", "E", CUDA_GUIDE, "32-bit integer ops, cc 9.0 value"),
    "fp64_latency": P(8, "clk", "E", JIA, "dependent DFMA latency (Volta 8 clk)"),
    "fp64_ops_per_clk": P(64, "lane-ops/clk/SM", "D", TM_B200, "~40 TFLOP/s FP64 / 148 SMs / 1.965 GHz / 2"),
    "sfu_latency": P(18, "clk", "E", JIA, "MUFU latency range on Volta/Turing"),
    "sfu_ops_per_clk": P(16, "lane-ops/clk/SM", "E", CUDA_GUIDE, "special functions, cc 9.0 value"),
    "cvt_latency": P(6, "clk", "E", JIA, "conversion latency (not public for B200)"),
    "cvt_ops_per_clk": P(64, "lane-ops/clk/SM", "E", CUDA_GUIDE, "16/32-bit conversions, cc 9.0 value"),
    "warp_op_latency": P(24, "clk", "E", JIA, "shfl/vote/redux/match latency (not public for B200)"),
    "warp_op_ops_per_clk": P(32, "lane-ops/clk/SM", "E", CUDA_GUIDE, "warp shuffle, cc 9.0 value"),
    "mma_sync_latency": P(24, "clk", "E", LUO, "H800 mma.sync m16n8k16 f16 latency, assumed on B200"),
    "mma_sync_interval": P(8, "clk", "E", ACCEL, "initiation interval per sub-partition for an m16n8k16 "
                                                 "(4096 FLOP); other shapes scale with their FLOPs"),
    "ldmatrix_latency": P(33, "clk", "E", LUO, "SMEM latency + 4 (not public)"),
    "mbarrier_op_latency": P(30, "clk", "E", TM_B200, "mbarrier.arrive/test_wait result: an SMEM round trip"),
    "mbarrier_wake_latency": P(10, "clk", "E", SEMI, "phase completion -> blocked try_wait warp issues again "
                                                     "(not public)"),
    "barrier_wake_latency": P(12, "clk", "E", LUO, "bar.sync: completing arrival -> every warp of it issues "
                                                   "again, the fixed part (not public)"),
    "barrier_wake_per_warp": P(0, "clk/warp", "E", LUO, "bar.sync cost per warp taking part (not measured on "
                                                        "B200)"),
    "cluster_barrier_wake_latency": P(190, "clk", "E", LUO, "barrier.cluster.wait release; ~ the H800 remote "
                                                           "DSMEM latency 181-207"),
    # TMA and cp.async
    "tma_latency": P(465, "clk", "E", LUO, "unloaded TMA latency is not public for B200: L2 latency 295 + the "
                                           "~170 clk TMA overhead over a plain load measured on H800"),
    "tma_bytes_per_clk": P(128, "B/clk/SM", "E", TM_B200, "limited by the SMEM write port, 128 B/clk"),
    "tma_tensor_extra": P(0, "clk", "E", TM_B200, "extra latency of a tensor-map (tile-mode) op over a bulk copy "
                                                  "(not measured on B200)"),
    "tma_dram_first_touch": P(0, "bool", "E", TM_B200, "1: a TMA / bulk load touching a global line for the first "
                                                       "time adds dram_latency - l2_latency; kept off for B200, "
                                                       "whose unloaded TMA latency is itself an estimate"),
    "cp_async_issue_cycles": P(1, "clk", "E", TM_B200, "LDGSTS unit occupancy per instruction"),
    "cp_async_latency": P(295, "clk", "D", TM_B200, "= l2_latency: a cp.async (LDGSTS) lands one L2 round trip "
                                                    "after its occupancy (follows l2_latency: FOLLOWS)"),
    "tma_issue_cycles": P(1, "clk", "E", TM_B200, "not measured on B200: one issue cycle"),
    "fence_mbarrier_init_cycles": P(1, "clk", "E", TM_B200, "not measured on B200: one issue cycle"),
    "fence_proxy_async_cycles": P(1, "clk", "E", TM_B200, "not measured on B200: one issue cycle"),
    "branch_taken_cycles": P(0, "clk", "E", TM_B200, "0: a branch costs its issue cycle (not measured on B200)"),
    "branch_cold_target_cycles": P(0, "clk", "E", TM_B200, "not measured on B200 (off)"),
    "branch_cold_distance": P(16, "instructions", "E", TM_B200, "not used while branch_taken_cycles is 0"),
    "runtime_loop_cycles": P(0, "clk", "E", TM_B200, "not measured on B200 (off: run-time-trip loops are "
                                                     "charged instruction by instruction)"),
    "rolled_loop_order": P(0, "bool", "E", TM_B200, "dataflow issue only (off for B200)"),
    "atom_same_address_cycles": P(0, "clk", "E", TM_B200, "0: atomics on one address are not serialised (not "
                                                           "measured on B200)"),
    "l1_pending_fills": P(0, "bool", "E", TM_B200, "off: an L1 line is usable once a load has missed on it"),
    "sass_load_window": P(0, "bool", "E", TM_B200, "off: no sm_100a loop facts recorded (dataflow issue only)"),
    "dataflow_block_drain": P(0, "bool", "E", TM_B200, "dataflow issue only (off for B200)"),
    "if_convert_max": P(0, "instructions", "E", TM_B200, "not used while dataflow_block_drain is 0"),
    "runtime_loop_unroll": P(4, "iterations", "E", TM_B200, "not used while dataflow_block_drain is 0"),
    "atom_warp_aggregate": P(0, "bool", "E", TM_B200, "off: every lane of an atomic is a request (no sm_100a SASS "
                                                      "read)"),
    "atom_queue_cycles": P(0, "clk", "E", TM_B200, "0: atomics never wait at issue for a word's backlog (not "
                                                   "measured on B200)"),
    "l1_line_cycles": P(0, "clk/line", "E", TM_B200, "0: an L1 hit costs l1_latency however many lines it touches "
                                                     "(not measured on B200)"),
    "l2_line_cycles": P(0, "clk/line", "E", TM_B200, "0: a load takes its bytes at the L2 bandwidth share only (not "
                                                     "measured on B200)"),
    "memory_ordering": P(0, "bool", "E", TM_B200, "0: fences and release / acquire accesses cost what a plain "
                                                  "access does (not measured on B200)"),
    "membar_cta_cycles": P(0, "clk", "E", TM_B200, "not used while memory_ordering is 0"),
    "membar_gpu_cycles": P(0, "clk", "E", TM_B200, "not used while memory_ordering is 0"),
    "membar_sys_cycles": P(0, "clk", "E", TM_B200, "not used while memory_ordering is 0"),
    "membar_sc_extra": P(0, "clk", "E", TM_B200, "not used while memory_ordering is 0"),
    "acquire_cctl_cycles": P(0, "clk", "E", TM_B200, "not used while memory_ordering is 0"),
    "gmem_store_clk_per_sector": P(0, "clk/sector", "E", TM_B200, "0: stores take the L2 bandwidth share like "
                                                                 "loads (not measured on B200)"),
    "gmem_store_warp_interval": P(0, "clk", "E", TM_B200, "not measured on B200 (off)"),
    "gmem_store_queue_cycles": P(0, "clk", "E", TM_B200, "not measured on B200 (off)"),
    "tma_store_request_share": P(0, "factor", "E", TM_B200, "not measured on B200 (off)"),
    "tma_store_request_after": P(0, "clk", "E", TM_B200, "not measured on B200 (off)"),
    # tensor rates (peak, dense, per SM)
    "tc_peak_f16": P(8192, "FLOP/clk/SM", "M", SEMI, "f16/bf16 -> f32 (measured 99.5%)"),
    "tc_peak_tf32": P(4096, "FLOP/clk/SM", "D", TM_B200, "half the f16 rate (K=8 at the same N/2 interval)"),
    "tc_peak_f8f6f4": P(16384, "FLOP/clk/SM", "M", SEMI, "fp8 / i8 / mxf8"),
    "tc_peak_f4": P(32768, "FLOP/clk/SM", "M", SEMI, "fp4 / mxf4 (K=64)"),
    "mma_sync_peak_f16": P(4096, "FLOP/clk/SM", "E", TM_H100, "mma.sync rate assumed as on H100"),
}
SM_100A.update(_tensor_core_fits(104, 138, 146, SEMI))

SM_90A: dict = {
    "sm_clock_mhz": P(1980, "MHz", "S", TM_H100, "max clock; the only clock domain"),
    "num_sms": P(132, "SMs", "S", TM_H100),
    "schedulers_per_sm": P(4, "schedulers", "S", H100_WP, "warp w issues on scheduler w % 4"),
    "issue_per_scheduler_clk": P(1, "warp-instr/clk", "S", H100_WP),
    "timed": P(1, "bool", "E", TCSIM, "1: the timing model decides when each warp-instruction issues "
                                      "(sim/timing/model.py); 0: every warp-instruction takes one cycle (the "
                                      "functional preset, ArchConfig.untimed)"),
    "dataflow_window": P(16, "instructions", "M", CORPUS_H100,
                         "dataflow issue: instructions of a warp whose start is still in the future before the warp "
                         "stops issuing -- within a basic block (dataflow_block_drain), it stands for ptxas's list "
                         "scheduling (loads hoisted above their consumers).  Scanned on the fit split with the block "
                         "drains on (python -m calib.timing_corpus timing report over fit kernels): 12 / 16 / 24 gave "
                         "12.1% / 11.5% / 11.8% (8, before the drains: 13.2%)"),
    "mma_sync_operand_read": P(34.5, "clk", "M", "calib/microbench loop_ldsm_mma_1w/4w (fit.py; measured.json)",
                               "write-after-read on mma.sync operands: an instruction overwriting a register that "
                               "an earlier in-flight mma.sync reads waits until that mma has read it, this long "
                               "after the mma's start.  Fitted on the k-tile loop (H100 429 / 440 clk per k-tile "
                               "with 1 / 4 warps; 269 / 305 without the wait, +4 clk per k-tile per clk of this "
                               "value): an effective value above mma_sync_latency, standing in for ptxas's tighter "
                               "fragment-register reuse (SASS: LDSM -> 2 HMMA -> LDSM), which the PTX does not show"),
    "wgmma_subpartition_units": P(1, "bool", "M", MB_H100 + ": wgmma_f16_n256, wgmma_f16_n256_2wg",
                                  "1: a warp's share of a wgmma runs on its sub-partition's tensor core "
                                  "(sim/agents/wgmma_unit.py): one warpgroup's wgmma takes N/2 cycles, two "
                                  "warpgroups share the four tensor cores (N each)"),
    "sass_timed_loops": P(1, "bool", "E", "sim/timing/sass.py", "1: a counted mma.sync loop whose SASS is recorded "
                          "(calib/sass_facts.py) costs the steady static schedule of its SASS block instead of its "
                          "PTX timing (mechanism, no parameter of its own)"),
    "dataflow_issue": P(1, "bool", "E", "calib/microbench val_ws_scale_* and val_mma_gemm (mechanism, not fitted)",
                        "1: the hardware issues SASS, in which ptxas has hoisted independent loads and unrolled "
                        "fixed-trip loops, not PTX in program order: a non-ordering instruction starts once its "
                        "operands are ready while the warp issues on; barriers, mbarrier/fence ops, async copies, "
                        "clock reads and exits wait for every earlier start, branches for their predicate"),
    "smem_banks": P(32, "banks", "S", CUDA_SMEM),
    "smem_bank_bytes": P(4, "B", "S", CUDA_SMEM),
    "smem_bytes_per_clk": P(128, "B/clk/SM", "S", TM_H100),
    "smem_latency": P(29, "clk", "M", LUO, "H800; to be measured on H100"),
    "smem_conflict_cycles": P(1, "clk/wavefront", "E", CUDA_SMEM, "latency of each wavefront after the first"),
    "dsmem_remote_latency": P(194, "clk", "M", LUO, "H800 remote DSMEM 181-207: the midpoint"),
    "dsmem_own_extra": P(4, "clk", "M", LUO, "H800: shared::cluster to the own CTA 33 vs 29 for ld.shared"),
    "l1_latency": P(41, "clk", "M", LUO, "H800; used for ld.param / ld.const"),
    "l1_caches_global_loads": P(1, "bool", "S", CUDA_GUIDE, "ld.global (default .ca) is cached in L1 on cc 9.0; "
                                                            ".cg/.cs/.cv/.lu, volatile and atomics go to L2"),
    "l2_latency": P(263, "clk", "M", LUO, "H800 (near L2 hit 258, far 414)"),
    "dram_latency": P(479, "clk", "M", LUO, "H800 global latency"),
    "hbm_bytes_per_clk_sm": P(12.8, "B/clk/SM", "D", TM_H100, "3.35 TB/s / (132 SMs x 1.98 GHz)"),
    "l2_bytes": P(50 << 20, "B", "S", H100_WP, "50 MB L2: the host's argument copies leave their last 50 MB in L2"),
    "gmem_fresh_latency": P(390, "clk", "M", MB_H100,
                            "gmem_chase_fresh_128 / _8192: a dependent ld.global touching a line for the first time "
                            "that the host's copy left in L2 (1 / 16 MB buffers) takes 399 / 382 clk (an L2 hit 270)"),
    "const_hit_latency": P(30, "clk", "M", MB_H100, "const_chase_0: ld.const of a word in a line already read "
                                                    "(LDC -> IADD chase 34 clk per step; fit.py)"),
    "const_l1_bytes": P(2048, "B", "E", JIA, "the per-SM constant cache the hits come from (2 KiB on Volta); "
                                           "const_chase_256's later reps, a 64 KB sweep, miss it on the H100"),
    "param_block_resident": P(1, "bool", "E", MB_H100, "1: ld.param reads the constant bank the launch wrote, "
                              "taken to be in the 256-byte block cache from the start: a 64-byte line's first read "
                              "costs const_l15_latency, later ones const_hit_latency (assumed: no calibration case "
                              "isolates parameter reads, ptxas hoists them)"),
    "const_l15_latency": P(100, "clk", "M", MB_H100, "const_chase_256, reps 4-8 (the chase has wrapped the 64 KB "
                                                     "array): a 256-byte block read before (fit.py)"),
    "const_miss_latency": P(430, "clk", "M", MB_H100, "const_chase_256, rep 0: every step a 256-byte block never "
                                                      "read (435 clk per step; fit.py); const_chase_64 (168) is "
                                                      "one such miss and three block hits per 4 steps"),
    "tma_fresh_extra": P(195, "clk", "M", MB_H100,
                         "tma_fresh_128B_64x64, bulk_fresh_1024B / _8192B (reps 1-8): a TMA / bulk load of lines "
                         "the kernel has not touched yet (host-written, in L2) takes ~195 clk longer than an L2-warm "
                         "one (628 vs 437 for 8 KB tiles; fit.py)"),
    "tlb_miss_latency": P(135, "clk", "M", MB_H100,
                          "rep 0 of tma_fresh_* / bulk_fresh_* over reps 1-8 (119-155 clk): the first access to a "
                          "page (fit.py over every tma_* / bulk_* cold first rep)"),
    "tlb_page_bytes": P(2 << 20, "B", "E", CUDA_GUIDE, "2 MB pages for device allocations (not measured)"),
    "gmem_cold_latency": P(709, "clk", "M", MB_H100,
                           "gmem_chase_cold: a dependent ld.global touching a line no longer in L2 (front of a 64 MB "
                           "buffer) takes 709 clk, incl. one 64-bit add"),
    "l2_bytes_per_clk_sm": P(64, "B/clk/SM", "E", TM_H100, "L2 bandwidth not in the collected sources"),
    "gmem_sector_bytes": P(32, "B", "S", CUDA_GUIDE),
    "gmem_line_bytes": P(128, "B", "S", CUDA_GUIDE),
    "alu_latency": P(4, "clk", "E", JIA, "Volta measurement; to be measured on H100"),
    "fp32_ops_per_clk": P(128, "lane-ops/clk/SM", "S", CUDA_GUIDE),
    "int_ops_per_clk": P(64, "lane-ops/clk/SM", "S", CUDA_GUIDE, "32-bit integer add/logic/shift"),
    "fp64_latency": P(8, "clk", "E", JIA, "dependent DFMA latency on Volta; to be measured on H100"),
    "fp64_ops_per_clk": P(64, "lane-ops/clk/SM", "S", CUDA_GUIDE),
    "sfu_latency": P(18, "clk", "E", JIA, "MUFU latency range on Volta/Turing; to be measured on H100"),
    "sfu_ops_per_clk": P(16, "lane-ops/clk/SM", "S", CUDA_GUIDE),
    "cvt_latency": P(6, "clk", "E", JIA, "not public; to be measured on H100"),
    "cvt_ops_per_clk": P(64, "lane-ops/clk/SM", "E", CUDA_GUIDE, "16/32-bit conversions"),
    "warp_op_latency": P(24, "clk", "E", JIA, "shfl/vote/redux/match; to be measured on H100"),
    "warp_op_ops_per_clk": P(32, "lane-ops/clk/SM", "S", CUDA_GUIDE, "warp shuffle"),
    "mma_sync_latency": P(24, "clk", "M", LUO, "H800 m16n8k16 f16; Accel-Sim uses 24 too"),
    "mma_sync_interval": P(8, "clk", "E", ACCEL, "initiation interval per sub-partition for an m16n8k16; "
                                                 "~60% of peak was measured on H800"),
    "ldmatrix_latency": P(33, "clk", "E", LUO, "SMEM latency + 4"),
    "mbarrier_op_latency": P(29, "clk", "E", LUO, "an SMEM round trip"),
    "mbarrier_wake_latency": P(10, "clk", "E", LUO, "not public"),
    "barrier_wake_latency": P(12, "clk", "E", LUO, "not public; the fixed part"),
    "barrier_wake_per_warp": P(0, "clk/warp", "E", LUO, "not public"),
    "cluster_barrier_wake_latency": P(190, "clk", "E", LUO, "~ H800 remote DSMEM latency 181-207"),
    "tma_latency": P(500, "clk", "D", TM_H100_HERE, "565 clk minus 64 clk moving 8 KB at 128 B/clk, rounded"),
    "tma_bytes_per_clk": P(128, "B/clk/SM", "E", TM_H100, "SMEM write port"),
    "tma_tensor_extra": P(0, "clk", "E", TM_H100, "extra latency of a tensor-map op over a bulk copy"),
    "tma_dram_first_touch": P(1, "bool", "M", TM_H100, "a TMA / bulk load touching a global line for the first "
                                                       "time adds dram_latency - l2_latency (calib/microbench tma_* "
                                                       "and bulk_*: the cold first rep is ~300 clk slower)"),
    "cp_async_issue_cycles": P(1, "clk", "E", TM_H100, "LDGSTS unit occupancy per instruction"),
    "cp_async_latency": P(263, "clk", "D", LUO, "= l2_latency: a cp.async (LDGSTS) lands one L2 round trip after "
                                                "its occupancy (follows l2_latency: FOLLOWS)"),
    "fence_mbarrier_init_cycles": P(62, "clk", "M", MB_H100,
                                    "mbarrier_init_fence_init: mbarrier.init + fence.mbarrier_init.release.cluster "
                                    "(MEMBAR.ALL.CTA) + try_wait takes 110 clk, 62 more than without the fence"),
    "fence_proxy_async_cycles": P(65, "clk", "M", MB_H100,
                                  "mbarrier_init_fence_proxy: each mbarrier.init + fence.proxy.async.shared::cta "
                                  "(FENCE.VIEW.ASYNC.S) adds 67 clk (slope of 1 -> 4), the init ~2"),
    "branch_taken_cycles": P(8, "clk", "M", MB_H100, "icache_jump: a taken branch over code that never runs costs "
                                                     "13 clk warm against 5 without it (the BRA's stall and "
                                                     "redirect)"),
    "branch_cold_target_cycles": P(62, "clk", "M", MB_H100, "icache_jump: the first jump to a target 2 KB / 16 KB "
                                                            "ahead costs 75 / 77 clk against 13 warm"),
    "branch_cold_distance": P(16, "instructions", "E", MB_H100, "a forward jump at least this many PTX instructions "
                                                               "(~256 B of SASS) ahead lands beyond the fetched "
                                                               "code the first time; shorter ones are prefetched "
                                                               "(not measured)"),
    "runtime_loop_cycles": P(150, "clk", "M", MB_H100,
                             "elem_loop: a loop with a run-time trip count, which ptxas unrolls by 4 behind a "
                             "trip-count dispatch and remainder checks (compares with 13-clk stalls, branches, "
                             "convergence barriers), costs this much per execution on top of its body (fit.py)"),
    "rolled_loop_order": P(1, "bool", "M", CORPUS_H100,
                           "1: the back edge of a loop ptxas keeps rolled (no immediate step, a data-dependent exit, "
                           "control flow inside) is an ordering point of the dataflow issue: the warp does not run "
                           "ahead into the next iteration (SASS of reduce_smem_tree: LDG -> FADD per iteration, 16 "
                           "iterations 7604 clk on the H100, 2029 in tcsim without it)"),
    "atom_same_address_cycles": P(5.2, "clk", "M", CORPUS_H100,
                                  "atomics (atom / red) on one global word are done one after the other at its L2 "
                                  "slice, this long each, across the SM's warps (python -m calib.timing_corpus timing "
                                  "fit atomics: of its 6 fit-split kernels only atomic_cas_counter -- 128 threads CAS "
                                  "one counter -- has same-word collisions worth the name; one Gauss-Newton step gave "
                                  "7.2 (+23%), 4.5 / 5.4 gave -9.7% / +2.2%: 5.2 interpolated; -41.9% before)"),
    "atom_warp_aggregate": P(1, "bool", "D", "SASS of ptxas 13.0 (simpleAtomicIntrinsics: REDUX + @P0 REDG)",
                             "1: a 32-bit integer add / min / max / and / or / xor atomic whose result is unused, on "
                             "one word for every lane, is reduced over the warp first: one request, not one per lane "
                             "(model.warp_reduced_atomics)"),
    "atom_queue_cycles": P(270, "clk", "D", "= gmem_store_queue_cycles (FOLLOWS)",
                           "with atom_same_address_cycles: a global atomic / reduction leaves the SM (and its warp "
                           "issues on) only once the backlog of same-word atomics ahead of it at L2 is at most this "
                           "many cycles: the requests back up into the SM's queue, taken as deep as the store "
                           "path's (gmem_store_queue_cycles; no fit-split kernel has such a backlog)"),
    "l1_pending_fills": P(1, "bool", "D", CUDA_GUIDE,
                          "1: a load hitting an L1 line whose fill (an earlier load's miss) is still in flight "
                          "completes when the fill lands, not l1_latency after it issues (conv1d_direct: the 16 taps "
                          "of an output all read the 2 lines a warp touches first in that iteration)"),
    "dataflow_block_drain": P(1, "bool", "D", "SASS of ptxas 13.0 (nvdisasm of calib/timing_corpus kernels)",
                              "1: basic blocks bound the dataflow issue instead of the dataflow_window alone: a "
                              "branch and a branch target are ordering points (the warp issues SASS in order and "
                              "ptxas schedules within a block: it hoists a block's loads above their consumers -- "
                              "loop_const_trip_loads' 16 LDGs before its first FADD -- but nothing across a block "
                              "boundary), while within a block up to dataflow_window instructions may wait for "
                              "their operands; loops ptxas unrolls (freed control) and if-converted branches "
                              "(if_convert_max) are no boundaries"),
    "runtime_loop_unroll": P(4, "iterations", "D", "SASS of ptxas 13.0 (tri_sum_reduce, gemv_warp_per_row, "
                             "rmsnorm_half2: run-time-trip loops unrolled by 4)",
                             "with dataflow_block_drain: a loop with a run-time trip count is unrolled by this many "
                             "iterations behind its trip-count dispatch, so every this many iterations its back edge "
                             "ends a basic block (an ordering point)"),
    "if_convert_max": P(6, "instructions", "D", "SASS of ptxas 13.0 (gemv_warp_per_row: `if (lane == 0) y[row] = s` "
                        "is a predicated STG, no branch)",
                        "a forward branch over at most this many straight-line PTX instructions (no branch, barrier "
                        "or other ordering point among them) is if-converted by ptxas: no block boundary"),
    "sass_load_window": P(1, "bool", "D", "SASS of ptxas 13.0 (calib/timing_corpus/sass_loops.py load_window)",
                          "1: in a loop with a recorded load window (loop facts), a warp's load waits until the "
                          "load that many loads earlier has completed: ptxas's register allocation lets only that "
                          "many loads be in flight (a load into a register whose earlier value is still to be read "
                          "waits for the read; gemv_warp_per_row's 16-way unrolled body: 8; PTX's virtual registers "
                          "do not show it)"),
    "l1_line_cycles": P(1.3, "clk/line", "M", CORPUS_H100,
                        "an L1 hit touching n > 1 lines (a scattered gather) holds the L1/SMEM port n x this and "
                        "completes (n - 1) x this later (python -m calib.timing_corpus timing fit gather: 5 fit-split "
                        "kernels, chase_* / gather_indirect / spmv_csr / tri_gather, 11.7% -> 6.0%; refitted 2026-11-28 05:20 once a load's "
                        "first line stopped paying l2_line_cycles: 7.3% -> 6.5%)"),
    "l2_line_cycles": P(4.2, "clk/line", "M", CORPUS_H100,
                        "a load going to L2 holds the SM's global port at least this long per line past its first (same "
                        "fit; chase_runtime_single_warp: one warp, 32 lines per .cg load)"),
    # memory ordering (classes.memory_ordering, TimingModel._membar_cycles): fitted on the fit split of the timing
    # corpus (calib/timing_corpus: python -m calib.timing_corpus timing fit)
    "memory_ordering": P(1, "bool", "M", CORPUS_H100, "1: fences and release / acquire accesses pay the MEMBAR / "
                                                      "CCTL.IVALL ptxas compiles them to (SASS of "
                                                      "calib/timing_corpus/cuda/atomics_fences.cu)"),
    "membar_cta_cycles": P(19.6, "clk", "M", CORPUS_H100, "MEMBAR.ALL.CTA / .SC.CTA: cycles it holds the warp once "
                                                          "the warp's earlier atomics are done (python -m calib.timing_corpus timing fit memory_ordering --iters 1: 17 fit-split kernels (fence_*, hist_*, tri_hist_*, flag_handoff))"),
    "membar_gpu_cycles": P(194.0, "clk", "M", CORPUS_H100, "MEMBAR.ALL.GPU (+ ERRBAR, CGAERRBAR): cycles it holds the "
                                                           "SM's barrier path (one at a time per SM) once the warp's "
                                                           "earlier global writes are done (same fit; fence_sc_gpu: "
                                                           "4 warps x 32 fences, 22093 clk on the H100)"),
    "membar_sys_cycles": P(384.6, "clk", "M", CORPUS_H100, "MEMBAR.ALL.SYS: as membar_gpu_cycles (same fit; "
                                                           "fence_sc_sys 47898 clk)"),
    "membar_sc_extra": P(0, "clk", "M", CORPUS_H100, "MEMBAR.SC over MEMBAR.ALL: fitted to 0 (fit split: fence_sc_sys "
                                                     "47898 clk, fence_acq_rel_sys 48437)"),
    "acquire_cctl_cycles": P(0, "clk", "M", CORPUS_H100, "CCTL.IVALL after an acquire, beyond waiting for the "
                                                         "value: fitted to 0"),
    "tma_issue_cycles": P(74, "clk", "M", MB_H100, "tma_issue: each cp.async.bulk.tensor holds the issuing warp "
                                                   "73.7 clk (slope of 1 -> 4 back-to-back 2D loads; "
                                                   "expect_tx + one load 80)"),
    "gmem_store_clk_per_sector": P(1.07, "clk/sector", "M", MB_H100,
                                   "gmem_store_*_4w: the SM's global stores drain at one 32-byte sector per "
                                   "1.02 (st.global.u32) - 1.11 (v2.f32) clk, ~30 B/clk"),
    "gmem_store_warp_interval": P(5.7, "clk", "M", MB_H100,
                                  "gmem_store_u32_1w: one warp issues a coalesced st.global.u32 every 5.7 clk at "
                                  "most (4 sectors; the SM rate alone would allow 4.3)"),
    "tma_store_request_share": P(1.9, "factor", "E", MB_H100,
                                 "tma_store_window, tma_*_stores: a TMA load is delayed by this many times the "
                                 "backlog of the SM's store path when its requests go out (stores issued with the "
                                 "load: +232 clk; beside a saturated store path, ~270 clk of backlog: +516)"),
    "tma_store_request_after": P(60, "clk", "E", MB_H100, "tma_store_window: the load's requests go out this long "
                                                           "after it is served (stores issued ~75 clk after the "
                                                           "load: +6)"),
    "gmem_store_queue_cycles": P(270, "clk", "E", MB_H100,
                                 "gmem_store_v2_4w: a warp's store waits once the SM's store backlog exceeds this "
                                 "many cycles of draining (4 warps issue 16 v2 stores each in ~290 clk, 512 "
                                 "sectors)"),
    "tc_peak_f16": P(4096, "FLOP/clk/SM", "D", TM_H100, "dense f16/bf16 rate per SM from the spec sheet"),
    "tc_peak_tf32": P(2048, "FLOP/clk/SM", "D", TM_H100, "half the f16 rate"),
    "tc_peak_f8f6f4": P(8192, "FLOP/clk/SM", "D", TM_H100, "fp8 / i8"),
    "tc_peak_f4": P(8192, "FLOP/clk/SM", "E", TM_H100, "no fp4 tensor path on H100; fp8 rate"),
    "mma_sync_peak_f16": P(4096, "FLOP/clk/SM", "D", TM_H100, "the dense f16 tensor rate"),
}
SM_90A.update({k: replace(v, kind="E", note="sm_90a has no tcgen05; B200 value kept so a config is complete. "
                                            + v.note)
               for k, v in _tensor_core_fits(104, 138, 146, SEMI).items()})



def _exploration_knobs(tma_latency, l2_latency, l1_latency, src):
    """The async units' exploration knobs (``tcsim run --explore``, :mod:`tcsim.explore`): for each unit an extra
    completion latency added to every op it serves (``*_extra_latency``, 0 in a normal run; the unit never lets an
    op complete before its occupancy ends), and the bounds an exploration moves it between: ``*_early_extra``,
    the earliest completion the hardware plausibly shows, and ``*_late_extra``, the latest (a loaded memory system,
    a busy pipe).  With ``async_jitter_seed`` non-zero every op draws its own extra in [early, late] (seeded per
    unit).  A race-free kernel gives the same results anywhere in these bounds (DESIGN.md principle 5)."""
    knob = ("exploration knob (sim/explore.py): added to the completion latency of every op of the unit; 0 in a "
            "normal run")
    return {
        "tma_extra_latency": P(0, "clk", "E", TCSIM, knob),
        "tma_early_extra": P(l2_latency - tma_latency, "clk", "E", src,
                             "earliest TMA completion: one L2 round trip (l2_latency) without the TMA overhead"),
        "tma_late_extra": P(1500, "clk", "E", src, "latest plausible TMA completion: queueing behind a loaded "
                                                   "memory system (several DRAM round trips; not measured)"),
        "cp_async_extra_latency": P(0, "clk", "E", TCSIM, knob),
        "cp_async_early_extra": P(l1_latency - l2_latency, "clk", "E", src,
                                  "earliest cp.async completion: an L1-resident line (l1_latency)"),
        "cp_async_late_extra": P(1500, "clk", "E", src, "latest plausible cp.async completion: a loaded memory "
                                                        "system (not measured)"),
        "tc_extra_latency": P(0, "clk", "E", TCSIM, knob),
        "tc_early_extra": P(0, "clk", "E", src, "the tensor-pipe fits are unloaded minima: nothing earlier"),
        "tc_late_extra": P(1000, "clk", "E", src, "latest plausible tensor-pipe completion (a pipe shared with "
                                                  "other work; not measured)"),
        "tmem_st_extra_latency": P(0, "clk", "E", TCSIM, knob),
        "tmem_st_early_extra": P(-24, "clk", "E", src, "earliest tcgen05.st landing: 8 clk after issue (not public)"),
        "tmem_st_late_extra": P(224, "clk", "E", src, "latest plausible tcgen05.st landing: 256 clk (not public)"),
        "async_jitter_seed": P(0, "seed", "E", TCSIM, "0: each unit adds its *_extra_latency to every op; else every "
                                                      "op draws its own extra in [*_early_extra, *_late_extra] from "
                                                      "a generator seeded with this and the unit's name"),
    }


SM_100A.update(_exploration_knobs(465, 295, 40, TM_B200))
SM_90A.update(_exploration_knobs(500, 263, 41, TM_H100))

TABLES = {"sm_100a": SM_100A, "sm_90a": SM_90A}

#: The functional (timing-off) preset, applied over an architecture's config by :meth:`ArchConfig.untimed`: every
#: warp-instruction takes one cycle (``timed`` 0: :class:`tcsim.timing.functional.FunctionalModel`) and the async
#: units run on these fixed numbers.  The agents' ``*Params`` views default to them.
UNTIMED: dict = {
    "timed": P(0, "bool", "E", FUNCTIONAL, "0: every warp-instruction takes one cycle and a released warp issues at "
                                           "once (sim/timing/functional.py)"),
    "wgmma_subpartition_units": P(0, "bool", "E", FUNCTIONAL, "0: one wgmma unit per warpgroup serves its warps' "
                                                              "shares in turn (the functional schedule since wgmma "
                                                              "was written; the fast tier's lockstep tests rest on "
                                                              "it)"),
    "tma_latency": P(200, "clk", "E", FUNCTIONAL, "a TMA / bulk op completes this long after its engine occupancy: "
                                                  "the same global round trip as cp_async_latency (the TMA reads "
                                                  "and writes through the same L2; on the H100 it is slower still, "
                                                  "500 vs 263 clk), so other warps run dozens of instructions "
                                                  "meanwhile as on the GPU (a stale-parity wait then passes at "
                                                  "once and the ring runs to its end, as the H100 ran zoo "
                                                  "01_stale_parity; 10 clk made it deadlock)"),
    "tma_bytes_per_clk": P(128, "B/clk/SM", "E", FUNCTIONAL, "TMA engine occupancy = ceil(bytes / this)"),
    "tma_tensor_extra": P(0, "clk", "E", FUNCTIONAL, "no extra latency for tensor-map ops"),
    "cp_async_latency": P(200, "clk", "E", FUNCTIONAL, "a cp.async lands this long after its occupancy (a global "
                                                       "round trip)"),
    "cp_async_issue_cycles": P(1, "clk", "E", FUNCTIONAL, "cp.async unit occupancy per instruction"),
    "tc_fixed_pipe": P(1, "bool", "E", FUNCTIONAL, "1: the tensor pipe runs the fixed-parameter model"),
    **_fixed_pipe(FUNCTIONAL),
    "tmem_st_land_latency": P(32, "clk", "E", FUNCTIONAL, "tcgen05.st issue -> its cells land in TMEM (the value "
                                                          "the timing-on configs keep too)"),
    # exploration bounds of the functional preset: any completion from 1 cycle after the op's occupancy to long
    # after (with one cycle per warp-instruction, a late op lets the other warps run ~2000 instructions)
    "tma_early_extra": P(-199, "clk", "E", FUNCTIONAL, "earliest: 1 cycle after the engine occupancy"),
    "tma_late_extra": P(2000, "clk", "E", FUNCTIONAL, "latest: 2000 warp-instructions of the other warps later"),
    "cp_async_early_extra": P(-199, "clk", "E", FUNCTIONAL, "earliest: 1 cycle after the unit occupancy"),
    "cp_async_late_extra": P(2000, "clk", "E", FUNCTIONAL, "latest: 2000 warp-instructions of the other warps later"),
    "tc_early_extra": P(-127, "clk", "E", FUNCTIONAL, "earliest: an MMA 1 cycle after its issue interval (every op's "
                                                      "latency is cut to at least 0)"),
    "tc_late_extra": P(2000, "clk", "E", FUNCTIONAL, "latest: 2000 warp-instructions of the other warps later"),
    "tmem_st_early_extra": P(-31, "clk", "E", FUNCTIONAL, "earliest: the store lands 1 cycle after issue"),
    "tmem_st_late_extra": P(480, "clk", "E", FUNCTIONAL, "latest: 512 cycles after issue"),
}

#: The exploration knobs of each async unit (:class:`tcsim.agents.unit.LatencyKnob`): unit -> (the extra latency
#: added to each op, its earliest bound, its latest bound), parameter names of the config.
LATENCY_KNOBS = {"tma": ("tma_extra_latency", "tma_early_extra", "tma_late_extra"),
                 "cp.async": ("cp_async_extra_latency", "cp_async_early_extra", "cp_async_late_extra"),
                 "tensor_pipe": ("tc_extra_latency", "tc_early_extra", "tc_late_extra"),
                 "tcgen05.st": ("tmem_st_extra_latency", "tmem_st_early_extra", "tmem_st_late_extra")}

#: Derived parameters that follow another one when it is overridden, unless they were overridden themselves
#: (kind still ``D``): derived name -> the name it equals.
FOLLOWS = {"cp_async_latency": "l2_latency", "atom_queue_cycles": "gmem_store_queue_cycles"}
ALIASES = {"sm_100": "sm_100a", "sm_100f": "sm_100a", "sm_90": "sm_90a"}


class ArchConfig:
    """The timing parameters of one architecture; ``cfg.name`` is the value, ``cfg.param(name)`` the
    :class:`Param`."""

    def __init__(self, arch: str, params: dict):
        self.arch = arch
        self.params = dict(params)

    def __getattr__(self, name):
        try:
            return self.__dict__["params"][name].value
        except KeyError:
            raise AttributeError(f"{self.__dict__.get('arch')} timing config has no parameter {name!r}") from None

    def param(self, name: str) -> Param:
        return self.params[name]

    def with_overrides(self, values: dict, source: str = "override") -> "ArchConfig":
        """A copy with ``values`` ({name: number or {'value':, 'source':}}) replacing parameters; unknown names
        are a LaunchError (a typo must not silently fall back to the estimate)."""
        params = dict(self.params)
        for name, v in values.items():
            if name not in params:
                raise LaunchError(f"{source}: the {self.arch} timing config has no parameter {name!r}",
                                  expected="a name of sim/timing/params.py (python -m calib.microbench params)")
            if isinstance(v, dict) and "value" not in v:
                raise LaunchError(f"{source}: the override of {name!r} has no 'value'",
                                  expected='{"value": number, "source": "..."}')
            if isinstance(v, dict):
                params[name] = replace(params[name], value=v["value"], kind=v.get("kind", "M"),
                                       source=v.get("source", source), note=v.get("note", params[name].note))
            else:
                params[name] = replace(params[name], value=v, kind="M", source=source)
        for dep, base in FOLLOWS.items():
            if base in values and dep not in values and dep in params and params[dep].kind == "D":
                params[dep] = replace(params[dep], value=params[base].value)
        return ArchConfig(self.arch, params)

    def untimed(self) -> "ArchConfig":
        """This architecture's functional preset: :data:`UNTIMED` over this config (SM count, clock... stay)."""
        params = dict(self.params)
        params.update(UNTIMED)
        return ArchConfig(self.arch, params)

    def with_units(self, *units) -> "ArchConfig":
        """A copy whose async-unit parameters are those of ``units`` (the agents' ``*Params`` views, e.g.
        :class:`tcsim.agents.tma.TmaParams`; each says which parameters it stands for with ``config_values()``)."""
        cfg = self
        for u in units:
            name = type(u).__name__
            cfg = cfg.with_overrides({k: {"value": v, "kind": "E", "source": f"{name} given to the launch"}
                                      for k, v in u.config_values().items()}, source=name)
        return cfg

    def estimates(self) -> list[str]:
        return sorted(k for k, p in self.params.items() if p.is_estimate)

    def table(self) -> str:
        """A readable listing: name, value, unit, kind, source."""
        rows = [f"{k:34} {p.value!s:>8} {p.unit:18} {p.kind}  {p.source}" + (f" -- {p.note}" if p.note else "")
                for k, p in sorted(self.params.items())]
        return "\n".join([f"timing config {self.arch} (kinds: " + ", ".join(f"{k} {v}" for k, v in KINDS.items())
                          + ")"] + rows)


def load_measured(path: Path = MEASURED_H100) -> dict:
    """``{name: {'value': v, 'source': s}}`` from a measurement file; {} when it does not exist."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LaunchError(f"timing measurements {path} cannot be read: {e}",
                          expected="the JSON written by python -m calib.microbench fit") from None
    if not isinstance(data, dict):
        raise LaunchError(f"timing measurements {path} are not a JSON object of parameter overrides")
    return {k: (v if isinstance(v, dict) else {"value": v, "source": str(path)}) for k, v in data.items()}


def arch_config(arch: str | None, measured: Path | None = None) -> ArchConfig:
    """The timing config of ``arch`` (``.target`` of the module; None -> sm_100a).  sm_90a values are
    overridden by the H100 measurements in ``measured`` (default :data:`MEASURED_H100`) when that file exists."""
    a = ALIASES.get(arch or "sm_100a", arch or "sm_100a")
    if a not in TABLES:
        a = "sm_90a" if a.startswith("sm_9") else "sm_100a"
    cfg = ArchConfig(a, TABLES[a])
    if a == "sm_90a":
        over = load_measured(MEASURED_H100 if measured is None else measured)
        if over:
            cfg = cfg.with_overrides(over, source=str(measured or MEASURED_H100))
    return cfg


def timing_config(arch: str | None, timing=False, units=()) -> ArchConfig:
    """The config a simulation of ``arch`` runs under: ``timing`` False -> the functional preset
    (``arch_config(arch).untimed()``), True -> ``arch_config(arch)``, an :class:`ArchConfig` -> itself; then the
    parameters of ``units`` (:meth:`ArchConfig.with_units`) replace their unit's."""
    if isinstance(timing, ArchConfig):
        cfg = timing
    elif timing:
        cfg = arch_config(arch)
    else:
        cfg = arch_config(arch).untimed()
    return cfg.with_units(*units) if units else cfg


__all__ = ["Param", "ArchConfig", "arch_config", "timing_config", "load_measured", "UNTIMED", "FOLLOWS", "LATENCY_KNOBS", "SM_100A",
           "SM_90A", "MEASURED_H100", "KINDS"]
