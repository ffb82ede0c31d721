"""The timing model the engine consults for every warp-instruction (``Simulation(timing=True)``).

Semantics decide *what* an instruction does; this model decides *when* a warp may issue it and when its results
are readable, so the simulation's values are those of the timing-off engine (a race-free kernel gives identical
results either way -- tests/sim/timing/test_timing_invariance.py).

Issue rules (per CTA = per SM; a CTA is assumed to have its SM to itself):

* warp ``w`` issues on scheduler ``w % schedulers_per_sm``; a scheduler issues at most one instruction per cycle;
* an instruction issues once every register it reads or writes is past its producer's latency (the scoreboard,
  :class:`tcsim.timing.scoreboard.Scoreboard`) and the sub-partition unit it needs is free (units are busy for
  ``32 / lanes-per-clock`` cycles per warp-instruction, :mod:`tcsim.timing.classes`);
* a warp may issue its next instruction ``issue_cycles`` later (1; ``tcgen05.mma`` 12);
* shared-memory requests take one cycle of the CTA's SMEM port per wavefront (bank conflicts:
  :func:`tcsim.timing.smem.smem_wavefronts`; ldmatrix: one 128-byte phase per matrix, conflicts among its rows) and
  complete ``smem_latency`` (ldmatrix: ``ldmatrix_latency``) plus ``smem_conflict_cycles`` per wavefront after
  the first; ``ld.shared::cluster`` on a peer CTA costs ``dsmem_remote_latency`` instead, on the own CTA
  ``dsmem_own_extra`` more;
* global loads hit L1 (``l1_latency``) when ``l1_caches_global_loads`` and every line they touch is in the SM's
  L1 (filled by earlier loads without .cg/.cs/.cv/.lu/.volatile); otherwise they take their sectors' bytes at the
  L2 (hit) or HBM (first touch of a line) bandwidth share of the SM and complete after ``l2_latency`` /
  ``dram_latency``;
* a warp blocked in a wait (mbarrier, barrier.cluster...) issues again a wake-up latency after it is released;
  bar.sync costs ``barrier_wake_latency + barrier_wake_per_warp x warps`` from its completing arrival, for the
  completing warp as well;
* TMA / bulk loads whose global lines are touched for the first time add ``dram_latency - l2_latency``
  (``tma_dram_first_touch``; :meth:`TimingModel.tma_extra_latency`); with ``tma_fresh_extra`` > 0 (sm_90a) they
  add that instead, plus ``tlb_miss_latency`` for a page touched for the first time, and a first-touch ld.global
  costs ``gmem_fresh_latency`` when the host's argument copies left the line in L2 (the last ``l2_bytes`` copied)
  or ``gmem_cold_latency`` when not (``gmem_cold_latency`` > 0);
* global stores (``gmem_store_clk_per_sector`` > 0, sm_90a) drain in issue order through the SM's store path, one
  32-byte sector per ``gmem_store_clk_per_sector``; a warp issues a store at most every
  ``gmem_store_warp_interval`` and none while the backlog exceeds ``gmem_store_queue_cycles``; a TMA load
  (``tma_store_request_share`` > 0) completes ``tma_store_request_share`` x the store backlog
  ``tma_store_request_after`` cycles into it later: its requests leave the SM behind those stores
  (:meth:`TimingModel.tma_store_delay`);
* a tensor-map TMA op holds the issuing warp ``tma_issue_cycles``, ``fence.mbarrier_init`` /
  ``fence.proxy.async`` ``fence_mbarrier_init_cycles`` / ``fence_proxy_async_cycles``
  (:mod:`tcsim.timing.classes`).

**Dataflow issue** (``dataflow_issue``; sm_90a): PTX is not what the hardware issues -- ptxas hoists
independent instructions and unrolls counted loops -- so with it on an instruction does not hold the warp until
its operands are ready: it *starts* when they are (and its unit or memory port has a free slot in the unit's
calendar) while the warp issues on, with at most ``dataflow_window`` instructions of a warp starting in the
future.  Loads wait for their address operands at issue (memory ports see requests in time order); branches
wait for their predicate; the control of a straight-line loop counted against an immediate bound -- its
branch, compare and induction adds -- costs nothing, as ptxas unrolls it (:func:`unrolled_loop_control`);
a straight-line loop with a run-time (register) bound has free control too and costs ``runtime_loop_cycles``
once per execution, when the warp's last lane leaves it (:func:`runtime_loops`; ptxas unrolls it behind a trip-count
dispatch); barriers, mbarrier and fence operations, async copies, clock reads and exits
wait until every earlier instruction of the warp has started (:attr:`tcsim.timing.classes.InstrPlan.order`);
registers are renamed (no write-after-write waits).  Semantics still execute at issue in program order, so
values do not change.

**Basic blocks** (``dataflow_block_drain``; sm_90a): the warp issues SASS in order and ptxas schedules within a
basic block (it hoists a block's loads above their consumers: loop_const_trip_loads' 16 LDGs before its first FADD)
but not across one, so a branch that issues and its target are ordering points (:func:`block_boundaries`; a short
forward branch is if-converted into predicated instructions, ``if_convert_max``), while within a block
``dataflow_window`` instructions may wait for their operands; a loop with a run-time trip count, unrolled by
``runtime_loop_unroll`` behind its dispatch, ends a block every that many iterations.

**Same-word atomics** (sm_90a): an integer add / min / max / and / or / xor whose result is unused and whose lanes
hit one word is one request (ptxas reduces it over the warp: :func:`warp_reduced_atomics`); atomics on one word are
done one after the other at L2 (``atom_same_address_cycles``), and an atomic leaves the SM -- its warp issues on --
only once that backlog ahead of it is at most ``atom_queue_cycles``.

**SASS-timed loops** (``sass_timed_loops``; sm_90a): a counted mma.sync loop whose SASS is recorded
(:mod:`tcsim.timing.sass`, ``python -m calib.sass_facts``) is timed by the steady static schedule of the SASS block ptxas
unrolled it into (stall counts and scoreboard waits, with this config's latencies): its PTX instructions are free and
each execution of the loop costs that schedule -- ptxas's register reuse (a serial LDSM -> HMMA -> LDSM chain or
not) decides a GEMM's k-tile and the PTX does not show it.

**Write-after-read on mma.sync operands** (``mma_sync_operand_read`` > 0; sm_90a): an mma.sync reads its A/B/C
registers late, until ``mma_sync_operand_read`` cycles after its start; an instruction that overwrites such a
register (other than one that also reads it) does not issue before then (pipe_gemm's consumer loop: each k-step's
ldmatrix waits for the previous k-step's mma.sync reading its fragment registers).

Async units (TMA engine, tensor pipe, cp.async, the tcgen05.st landing) are constructed with the same config and
build their parameters from it (:mod:`tcsim.timing.params`, :class:`tcsim.timing.tensor.TensorPipeTiming`); the
TMA engine asks this model for what only it knows (:meth:`tma_extra_latency`, :meth:`tma_store_delay`).  With
timing off the engine consults :class:`tcsim.timing.functional.FunctionalModel`, which has this interface.
"""
from __future__ import annotations

import math
from collections import Counter, OrderedDict, deque
from dataclasses import replace

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import TcsimError
from .. import memory as M
from ..observe import Stall
from .classes import _has_dest, operand_regs, plan_instruction
from .params import ArchConfig
from .sass import default_latencies, load_loop_facts, load_loop_windows, load_loops, steady_cycles
from .scoreboard import Scoreboard
from .smem import GlobalLines, l2_resident_ranges, smem_wavefronts
from .stats import TimingReport, WarpTiming
from .tensor import peak_rate

_WAKE = {"mbarrier": "mbarrier_wake_latency", "barrier": "barrier_wake_latency",
         "cluster barrier": "cluster_barrier_wake_latency"}


class SmState:
    """Issue and unit state of one SM (one CTA): when each scheduler, each sub-partition unit and the SMEM and
    global-memory ports are free next."""

    __slots__ = ("issue_free", "unit_free", "smem_free", "gmem_free", "store_free", "store_log", "l1",
                 "calendar", "const_lines", "const_blocks", "param_lines", "targets", "membar_free", "atom_free")

    def __init__(self, nsched: int):
        self.issue_free = [0.0] * nsched
        self.unit_free: dict = {}
        self.smem_free = 0.0
        self.gmem_free = 0.0
        self.store_free = 0.0           # when the SM's global-store path has drained what was issued so far
        self.store_log: deque = deque()  # recent (issue cycle, drained cycle) of global stores (TMA sharing)
        self.l1: dict = {}              # global lines held in this SM's L1 (loads that allocate there) -> the cycle
        #                                 their fill lands (l1_pending_fills; 0: at once)
        self.calendar: dict = {}        # dataflow issue: unit / port -> sorted booked (start, end) intervals
        self.const_lines = OrderedDict()  # 64-byte constant lines in the SM's small constant cache (LRU)
        self.const_blocks: set = set()  # 256-byte blocks of the constant space read so far
        self.param_lines: set = set()   # 64-byte lines of the kernel parameters read so far
        self.targets: set = set()       # branch targets this SM has jumped to
        self.membar_free = 0.0          # when the SM's GPU/SYS-scope memory barriers have drained (one at a time)
        self.atom_free: dict = {}       # global word address -> when the L2 has done the atomics queued on it


#: a warp that issues this many free instructions in a row (loop control ptxas unrolls away, a loop timed as a
#: whole) is held one cycle.  Not a hardware figure but the simulation's guarantee that simulated time advances while
#: a warp retires instructions: a loop made only of free instructions (a counted loop with an empty body, which ptxas
#: deletes) would otherwise run at one instant -- every other warp waiting for the clock to move, the livelock and
#: loop monitors' cycle margins never met -- for as long as it loops.  A loop timed as a whole pays those cycles out
#: of its cost at the exit (the total is unchanged unless the loop ran more than FREE_RUN x its cost instructions).
FREE_RUN = 8


class TimingModel:
    """Issue model of a timed config (``timed`` = 1)."""

    timed = True

    def __init__(self, sim, cfg: ArchConfig):
        self.sim = sim
        self.cfg = cfg
        self.body = sim.program.body
        self.dataflow = bool(cfg.dataflow_issue)
        self.window = max(1, int(cfg.dataflow_window))
        self.plans = [plan_instruction(ins, cfg) for ins in self.body]
        if self.dataflow:
            for pc in unrolled_loop_control(self.body, sim.program.kernel.labels):
                self._free(pc)
        #: exit pc -> (head pc, back-edge pc, cycles the warp pays when its last lane leaves the loop)
        self.rt_exits: dict = {}
        # counted mma.sync loops whose SASS is known (sim.timing.sass, calib/sass_facts.py): ptxas's schedule of the
        # unrolled loop, which the PTX does not show (its register reuse), replaces the loop's PTX timing: the
        # loop's instructions are free and each execution of the loop costs its SASS block's steady schedule
        if self.dataflow and cfg.sass_timed_loops:
            lat = default_latencies(cfg)
            # the facts are keyed by the kernel's own body (a linked program appends its device functions and an
            # end-of-body sentinel, which shares the last instruction's line: the first pc of a line is meant)
            at: dict = {}
            for pc, ins in enumerate(self.body):
                at.setdefault(ins.loc.line, pc)
            for head, (back, instrs) in load_loops(sim.program.kernel.body).items():
                if head not in at or back not in at:
                    continue
                h, b = at[head], at[back]
                for pc in range(h, b + 1):
                    self._free(pc)
                self.rt_exits[b] = (h, b, steady_cycles(instrs, lat))
        # loops with a run-time trip count (ptxas unrolls them too, behind a trip-count dispatch and remainder
        # checks): their control is free and each completed execution of the loop costs the warp
        # runtime_loop_cycles (calib/microbench elem_loop)
        # which loops ptxas keeps rolled: the kernel's SASS loop facts where recorded (sim.timing.sass), else the PTX
        self.loop_facts = load_loop_facts(sim.program.kernel.body) if self.dataflow and cfg.rolled_loop_order else {}
        line_pc: dict = {}
        for pc, ins in enumerate(self.body):
            line_pc.setdefault(ins.loc.line, pc)
        rolled_by_sass = {line_pc[ln] for ln, rolled in self.loop_facts.items() if rolled and ln in line_pc}
        #: run-time-trip loop back-edge pc -> ptxas's unroll factor: every that many iterations the SASS loop's own
        #: back edge ends a basic block (dataflow_block_drain)
        self.rt_unroll: dict = {}
        unroll = int(cfg.runtime_loop_unroll) if cfg.dataflow_block_drain else 0
        if self.dataflow and cfg.runtime_loop_cycles > 0:
            for head, exit_pc, back, ctrl in runtime_loops(self.body, sim.program.kernel.labels):
                if back in rolled_by_sass or exit_pc in rolled_by_sass:
                    continue                    # the SASS shows ptxas did not unroll it
                for pc in ctrl:
                    self._free(pc)
                self.rt_exits.setdefault(exit_pc, (head, back, cfg.runtime_loop_cycles))
                if unroll > 0:
                    self.rt_unroll[back] = (head, unroll)
        # loops ptxas does not unroll (a step that is no immediate -- grid- and block-stride loops --, a
        # data-dependent exit, control flow inside): the warp issues their SASS in order, so it cannot run ahead
        # into the next iteration past an instruction still waiting for its operands -- the back edge is an
        # ordering point (rolled_loop_order; the SASS of calib/timing_corpus: reduce_smem_tree's LDG -> FADD loop
        # costs one load latency per iteration on the H100)
        if self.dataflow and cfg.rolled_loop_order:
            facts = {line_pc[ln]: rolled for ln, rolled in self.loop_facts.items() if ln in line_pc}
            for pc in rolled_loop_back_edges(self.body, sim.program.kernel.labels, facts):
                if pc in self.rt_exits:
                    continue
                if self.plans[pc].free:
                    # freed as a counted loop's control, but its step is no immediate: ptxas keeps it rolled,
                    # so its exit test and branch issue (plan them again)
                    for k in range(pc - 1, max(0, pc - 4) - 1, -1):
                        if self.plans[k].free and self.body[k].opcode == "setp":
                            self.plans[k] = plan_instruction(self.body[k], cfg)
                            break
                    self.plans[pc] = plan_instruction(self.body[pc], cfg)
                self.plans[pc] = replace(self.plans[pc], order="drain")
        # loads in flight per warp in a loop, as ptxas's register allocation allows (sass_load_window; loop facts'
        # windows): load pc -> (its innermost loop's back-edge pc, window)
        self.load_window: dict = {}
        if self.dataflow and cfg.sass_load_window:
            wins = {line_pc[ln]: n for ln, n in load_loop_windows(sim.program.kernel.body).items() if ln in line_pc}
            if wins:
                loops = [(labels_head, pc) for pc, labels_head in _back_edges(self.body, sim.program.kernel.labels)
                         if pc in wins]
                for k, ins in enumerate(self.body):
                    if ins.opcode not in ("ld", "ldu") or self.plans[k].cls != "mem" or not self.plans[k].dsts:
                        continue
                    inner = [(h, b) for h, b in loops if h <= k <= b]
                    if inner:
                        h, b = min(inner, key=lambda lp: lp[1] - lp[0])
                        self.load_window[k] = (b, wins[b])
        # basic blocks (dataflow_block_drain): the warp issues SASS in order and ptxas schedules within a block, so
        # a block boundary -- a branch, a branch target -- is an ordering point; within a block the dataflow window
        # stands for ptxas's list scheduling (loads hoisted above their consumers)
        if self.dataflow and cfg.dataflow_block_drain:
            for pc in block_boundaries(self.body, sim.program.kernel.labels, self.plans, int(cfg.if_convert_max)):
                self.plans[pc] = replace(self.plans[pc], order="drain")
        self._checked = [tuple(dict.fromkeys(p.srcs + p.dsts)) for p in self.plans]
        # write-after-read: registers an instruction writes but does not read itself (its own read-after-write
        # wait already orders it after a reader that also produced them, e.g. an mma.sync accumulator chain)
        self.war_read = float(cfg.mma_sync_operand_read)
        self._war_dsts = [tuple(n for n in p.dsts if n not in p.srcs) for p in self.plans]
        self.store_path = float(cfg.gmem_store_clk_per_sector) > 0
        self.tma_store_sharing = self.store_path and cfg.tma_store_request_share > 0
        self.branch_taken = float(cfg.branch_taken_cycles)
        self.atom_queue = float(cfg.atom_queue_cycles) if cfg.atom_same_address_cycles > 0 else 0.0
        self._warp_reduced = warp_reduced_atomics(self.body) if cfg.atom_warp_aggregate else set()
        self.nsched = int(cfg.schedulers_per_sm)
        self.sms: dict = {}
        self.lines = GlobalLines(int(cfg.gmem_line_bytes))
        self._l2_ranges = None
        self.pages: set = set()         # global pages touched so far (TLB first touches)
        self.busy: Counter = Counter()        # unit name -> busy cycles (all SMs)
        self.mma_sync_flops = 0
        self.wait_labels: dict = {}            # Wait -> (category, detail)

    def _free(self, pc: int) -> None:
        """Make ``body[pc]`` cost nothing (dataflow issue: code ptxas unrolls away or that is timed as a whole)."""
        self.plans[pc] = replace(self.plans[pc], order="flow", free=True, issue_cycles=0, latency=0, unit=None,
                                 interval=0)

    # ------------------------------------------------------------------------------------------ per-warp state
    def attach(self, warp) -> None:
        warp.timing = WarpTiming(Scoreboard(), warp.id % self.nsched)

    def sm(self, cta) -> SmState:
        s = self.sms.get(cta)
        if s is None:
            s = self.sms[cta] = SmState(self.nsched)
        return s

    # ------------------------------------------------------------------------------------------ issue rules
    def stall(self, warp, pc: int, now: float):
        """None when the warp may issue ``body[pc]`` at ``now``; else (cycle to retry, category, detail)."""
        wt = warp.timing
        p = self.plans[pc]
        if p.free:
            return None
        flow = self.dataflow and p.order == "flow"
        if flow and wt.pending:
            pend = wt.pending = [t for t in wt.pending if t > now]
            if len(pend) >= self.window:
                return min(pend), "dependency", "dataflow window full"
        if self.war_read > 0 and self._war_dsts[pc]:
            # write-after-read: an earlier mma.sync still reading a register this instruction overwrites
            b = wt.scoreboard.war_blocking(self._war_dsts[pc], now)
            if b is not None:
                rd = self.body[b[2]]
                return b[0], "dependency", f"{b[1]} read by {rd.full_opcode} (line {rd.loc.line}, WAR)"
        if not flow:
            # (dataflow issue: ptxas renames registers, so only the sources are waited for)
            b = wt.scoreboard.blocking(p.srcs if self.dataflow else self._checked[pc], now)
            if b is not None:
                prod = self.body[b[2]]
                return b[0], "dependency", f"{b[1]} <- {prod.full_opcode} (line {prod.loc.line})"
            if self.dataflow and p.order == "drain" and wt.last_start > now:
                return wt.last_start, "dependency", "earlier instructions (ordering point)"
        if p.tmem is not None and p.tmem.startswith("wait"):
            ready = wt.tmem_ld_ready if p.tmem.endswith("ld") else wt.tmem_st_ready
            if ready > now:
                return ready, "tmem", f"tcgen05.{p.tmem}"
        if pc in self.load_window:
            loop, n = self.load_window[pc]
            done = wt.loads.get(loop)
            if done is not None and len(done) >= n and done[-n] > now:
                return done[-n], "dependency", f"load registers in flight (SASS window {n})"
        sm = self.sm(warp.cta)
        free = sm.issue_free[wt.sub]
        if free > now:
            return free, "issue slot", f"scheduler {wt.sub}"
        if p.membar is not None:
            # a MEMBAR (a fence, or in front of a release access) waits until the warp's earlier global writes are
            # performed: at GPU / SYS scope its stores and atomics, at CTA scope its atomics (a store is visible to
            # the CTA once in L1; corpus: fence_acq_rel_cta vs hist_atom_acq_rel_cta)
            done = wt.writes_done if p.membar != "cta" else wt.atomics_done
            if done > now:
                return done, "memory ordering", f"{self.body[pc].full_opcode}: earlier global writes"
        if self.store_path and p.cls == "mem" and not p.dsts and p.space == "global" and p.addr_index == 0:
            # the global-store path: a warp's stores issue gmem_store_warp_interval apart at most, and none
            # while the SM's backlog is over gmem_store_queue_cycles (calib/microbench gmem_store_*)
            ready = max(wt.store_next, sm.store_free - self.cfg.gmem_store_queue_cycles)
            if ready > now:
                return ready, "unit", "global store queue"
        if self.dataflow:               # units are booked at the op's start (issued / _reserve)
            return None
        if p.unit is not None:
            free = sm.unit_free.get((wt.sub, p.unit), 0.0)
            if free > now:
                return free, "unit", p.unit
        return None

    def prepare(self, ctx, pc: int):
        """Run-time inputs of the cost that the instruction itself may overwrite (addresses): computed before
        the semantics execute.  Returns what :meth:`issued` needs, or None."""
        p = self.plans[pc]
        if p.cls in ("mem", "ldmatrix") or (p.wait_kind == "mbarrier"):
            try:
                a = ctx.address(ctx.ins.operands[p.addr_index])[ctx.mask]
            except (TcsimError, IndexError, AttributeError):
                return None
            return a
        return None

    def issued(self, ctx, pc: int, pre, now: float) -> tuple[float, float]:
        """Account for ``body[pc]`` issued at ``now`` by ``ctx.warp``; returns (cycles until the warp may issue
        again, cycle at which its results are readable)."""
        warp = ctx.warp
        wt = warp.timing
        p = self.plans[pc]
        sm = self.sm(warp.cta)
        if p.free:                      # unrolled away by ptxas: results at once, no issue slot
            if p.dsts:
                ready = max([now] + [wt.scoreboard.ready[n][0] for n in p.srcs if n in wt.scoreboard.ready])
                wt.scoreboard.write(p.dsts, ready, pc)
            if p.cls == "mma":
                self.mma_sync_flops += p.flops * int(ctx.mask.any())
            gap = 0
            wt.free_run += 1
            if wt.free_run >= FREE_RUN:             # (FREE_RUN: the clock moves while the warp runs)
                wt.free_run = 0
                wt.prepaid += 1
                gap = 1
            if pc in self.rt_exits:
                head, back, cost = self.rt_exits[pc]
                pcs = warp.pc[warp.alive & ~warp.waiting]
                if not ((pcs >= head) & (pcs <= back)).any():     # the whole warp has left the loop
                    wt.loop_iters.pop(back, None)
                    before = wt.prepaid - gap
                    wt.prepaid = wt.free_run = 0
                    return max(cost - before, gap), now
            if pc in self.rt_unroll:
                # ptxas unrolled the loop by `unroll` behind its trip-count dispatch: every `unroll` iterations its
                # SASS back edge ends a block, which the warp leaves once every earlier instruction has started
                head, unroll = self.rt_unroll[pc]
                pcs = warp.pc[warp.alive & ~warp.waiting]
                if ((pcs >= head) & (pcs <= pc)).any():
                    n = wt.loop_iters[pc] = wt.loop_iters.get(pc, 0) + 1
                    if n % unroll == 0 and wt.last_start > now:
                        return max(wt.last_start - now, gap), now
            return gap, now
        wt.free_run = wt.prepaid = 0
        sm.issue_free[wt.sub] = now + 1
        if wt.first_issue is None:
            wt.first_issue = now
        wt.issued += 1
        wt.last_issue = now
        issue = now
        if self.dataflow and p.order == "flow":
            # dataflow issue: the instruction starts once its operands are ready and its unit is free, while
            # the warp issues on (ptxas hoists independent instructions and unrolls loops; PTX order is not the
            # SASS order the hardware issues in)
            for n in p.srcs:
                r = wt.scoreboard.ready.get(n)
                if r is not None and r[0] > now:
                    now = r[0]
        if self.dataflow and p.unit is not None:
            # starts are not in issue order: the unit keeps a calendar and the op takes its first free slot
            now = self._reserve(sm, (wt.sub, p.unit), now, p.interval)
            self.busy[p.unit] += p.interval
        elif p.unit is not None:
            sm.unit_free[(wt.sub, p.unit)] = now + p.interval
            self.busy[p.unit] += p.interval
        if self.dataflow and p.order == "flow":
            wt.last_start = max(wt.last_start, now)
            if now > issue:
                wt.pending.append(now)
        lat = p.latency
        hold = 0.0
        atom_hold = 0.0
        if p.membar is not None:
            # the MEMBAR ptxas puts in front of a release access, or a fence's own: the access starts after it.
            # GPU / SYS-scope barriers of an SM drain one at a time (corpus: 128 MEMBAR.GPU cost the same with 4
            # warps x 32 fences as with 8 warps x 16 acq_rel atomics)
            cyc = self._membar_cycles(p)
            if p.membar != "cta":
                start = max(now, sm.membar_free)
                sm.membar_free = start + cyc
                cyc += start - now
            hold = cyc
            now += hold
        if p.cls == "mem":
            lat, atom_hold = self._memory_latency(ctx, p, pre, sm, now, issue, pc)
            if p.space in ("global", "generic") and (not p.dsts or ctx.ins.opcode in ("atom", "red")):
                wt.writes_done = max(wt.writes_done, now + lat)
                if ctx.ins.opcode in ("atom", "red"):
                    wt.atomics_done = max(wt.atomics_done, now + lat)
        elif p.cls == "ldmatrix":
            # one SMEM port cycle per 128-byte phase (one 8x8 matrix); each phase after the first adds
            # smem_conflict_cycles of latency, as a bank-conflict replay does
            phases = max(1, math.ceil(p.access_bytes / self.cfg.smem_bytes_per_clk))
            if pre is not None and pre.size and ctx.ins.opcode == "ldmatrix":
                # lanes 8i..8i+7 give the 16-byte rows of matrix i: bank conflicts among each matrix's rows
                rows = pre[:8 * phases].astype(np.uint64)
                if (rows >= np.uint64(M.SHARED_WINDOW)).all():
                    rows = rows - np.uint64(M.SHARED_WINDOW)
                _, offs = M.split_shared(rows)
                phases = max(phases, smem_wavefronts(offs.astype(np.int64), 16, int(self.cfg.smem_banks),
                                                     int(self.cfg.smem_bank_bytes)))
            lat = self._smem_port(sm, now, phases) - (phases - 1) + (phases - 1) * self.cfg.smem_conflict_cycles \
                + lat
        elif p.cls == "mma":
            self.mma_sync_flops += p.flops * int(ctx.mask.any())
            if self.war_read > 0 and ctx.ins.opcode == "mma":
                # the HMMA reads its A/B/C operands over mma_sync_operand_read cycles from its start
                wt.scoreboard.read(p.srcs, now + self.war_read, pc)
        gap = p.issue_cycles
        if self.branch_taken > 0 and ctx.ins.opcode == "bra":
            gap = max(gap, self._branch_cost(warp, ctx.group, pc, sm))
        if p.wait_kind == "barrier" and ctx.ins.opcode in ("bar", "barrier") and _waits(ctx.ins):
            # the warp that completes a bar.sync (its release fires at once) leaves it as late as the warps it
            # released, barrier_latency after the completing arrival; a warp released later gets the same
            # latency as its wake-up (label_waits / released)
            gap = max(gap, self.barrier_latency(warp.cta, p))
        if p.cls == "mem" and atom_hold > 0:
            # the atomic waited in the SM for its word's backlog (atom_queue_cycles): the warp with it
            gap = max(gap, atom_hold + 1)
        done = now + lat
        if hold:
            gap = max(gap, now - issue + (0 if p.cls == "control" else 1))
        if p.acquire is not None:
            # CCTL.IVALL after an acquire (GPU / SYS scope): it waits for the access's value, then invalidates the
            # SM's L1 (later loads miss it)
            gap = max(gap, done - issue + self.cfg.acquire_cctl_cycles)
            sm.l1.clear()
        now = issue
        if pc in self.load_window:
            loop, n = self.load_window[pc]
            q = wt.loads.setdefault(loop, deque(maxlen=n))
            q.append(done)
        if p.dsts:
            wt.scoreboard.write(p.dsts, done, pc)
        if p.tmem == "ld":
            wt.tmem_ld_ready = max(wt.tmem_ld_ready, done)
        elif p.tmem == "st":
            wt.tmem_st_ready = max(wt.tmem_st_ready, done)
        return gap, done

    def _membar_cycles(self, p) -> float:
        """Cycles a MEMBAR of ``p``'s scope holds the warp once its earlier global writes are done
        (``membar_{cta,gpu,sys}_cycles``, plus ``membar_sc_extra`` for MEMBAR.SC)."""
        cfg = self.cfg
        base = {"cta": cfg.membar_cta_cycles, "gpu": cfg.membar_gpu_cycles, "sys": cfg.membar_sys_cycles}[p.membar]
        return float(base) + (float(cfg.membar_sc_extra) if p.membar_sc else 0.0)

    def _branch_cost(self, warp, group, pc: int, sm: SmState) -> float:
        """Issue cycles of a branch some lane of ``group`` (the lanes that executed it) took (H100 icache_jump):
        ``branch_taken_cycles``, plus ``branch_cold_target_cycles`` the first time the SM jumps forward
        ``branch_cold_distance`` or more instructions to that target (code the fetch has not reached yet)."""
        targets = {int(t) for t in warp.pc[group & warp.alive].tolist() if t != pc + 1}
        if not targets:
            return 1
        cost = self.branch_taken
        for t in targets:
            if t - pc >= self.cfg.branch_cold_distance and t not in sm.targets:
                cost += self.cfg.branch_cold_target_cycles
            sm.targets.add(t)
        return cost

    def _reserve(self, sm: SmState, key, start: float, interval: float) -> float:
        """Book ``interval`` cycles of a sub-partition unit at the first free slot from ``start`` (dataflow
        issue); returns the slot's start."""
        cal = sm.calendar.setdefault(key, [])
        horizon = self.sim.env.now
        while cal and cal[0][1] <= horizon:
            cal.pop(0)
        t = start
        at = 0
        for i, (a, b) in enumerate(cal):
            if b <= t:
                at = i + 1
                continue
            if a >= t + interval:
                break
            t = b
            at = i + 1
        cal.insert(at, (t, t + interval))
        return t

    def barrier_latency(self, cta, p) -> float:
        """Cycles from the completing arrival at a CTA barrier to its warps issuing again:
        ``barrier_wake_latency + barrier_wake_per_warp x warps taking part`` (H100: bar_sync_* cases)."""
        nwarps = p.barrier_count // 32 if p.barrier_count else sum(1 for w in cta.warps if w.alive.any())
        return self.cfg.barrier_wake_latency + self.cfg.barrier_wake_per_warp * max(1, nwarps)

    # ------------------------------------------------------------------------------------------ memory
    def _smem_port(self, sm: SmState, now: float, wavefronts: int) -> float:
        """Queue ``wavefronts`` cycles on the SMEM port; returns the cycles from ``now`` to the last one."""
        if self.dataflow:       # requests arrive out of start order: book the port's first free slot
            start = self._reserve(sm, "smem", now, wavefronts)
            sm.smem_free = max(sm.smem_free, start + wavefronts)
        else:
            start = max(now, sm.smem_free)
            sm.smem_free = start + wavefronts
        self.busy["smem"] += wavefronts
        return start - now + wavefronts - 1

    def _memory_latency(self, ctx, p, addrs, sm: SmState, now: float, issue: float, pc: int = -1) -> tuple:
        """(latency, cycles an atomic waited in the SM before it left: atom_queue_cycles)."""
        cfg = self.cfg
        atom_hold = 0.0
        if addrs is None or addrs.size == 0:
            return (cfg.l1_latency if p.space in ("param", "const", "local") else cfg.smem_latency), 0.0
        space = p.space
        if space == "generic":
            a = addrs.astype(np.uint64)
            sh = (a >= np.uint64(M.SHARED_WINDOW)) & (a < np.uint64(M.SHARED_WINDOW + M.WINDOW_SIZE))
            if sh.all():
                space, addrs = "shared", a - np.uint64(M.SHARED_WINDOW)
            elif not sh.any() and _is_global(a):
                space = "global"
            else:
                space = "local"
        if space == "shared":
            ranks, offs = M.split_shared(addrs.astype(np.uint64))
            waves = smem_wavefronts(offs.astype(np.int64), p.access_bytes, int(cfg.smem_banks),
                                    int(cfg.smem_bank_bytes))
            q = self._smem_port(sm, now, waves) - (waves - 1)
            lat = q + cfg.smem_latency + (waves - 1) * cfg.smem_conflict_cycles
            if p.cluster:
                # shared::cluster window: a peer CTA's SMEM over the SM-to-SM network, or the own CTA's through
                # the generic path (H100: dsmem_chase)
                remote = bool((ranks != ctx.warp.cta.rank).any())
                lat += cfg.dsmem_remote_latency - cfg.smem_latency if remote else cfg.dsmem_own_extra
            return lat, 0.0
        if space == "global":
            line = int(cfg.gmem_line_bytes)
            lines = set((addrs.astype(np.uint64) // np.uint64(line)).tolist())
            fill = None
            if p.dsts and not p.l2_only and cfg.l1_caches_global_loads:
                if all(ln in sm.l1 for ln in lines):
                    # a hit; with l1_pending_fills, on a line whose fill is still in flight it completes when
                    # the fill lands (a hit under miss: the line is tagged at the miss, its data comes later)
                    landed = max(sm.l1[ln] for ln in lines) - now if cfg.l1_pending_fills else 0.0
                    if cfg.l1_line_cycles > 0 and len(lines) > 1:
                        # a scattered hit: one L1 tag lookup per line, on the port L1 and SMEM share (corpus:
                        # chase_runtime_trip, 4 warps gathering ~28 lines each per step)
                        waves = len(lines)
                        q = self._smem_port(sm, now, math.ceil(waves * cfg.l1_line_cycles)) \
                            - (math.ceil(waves * cfg.l1_line_cycles) - 1)
                        return max(landed, q + cfg.l1_latency + (waves - 1) * cfg.l1_line_cycles), 0.0
                    return max(landed, cfg.l1_latency), 0.0
                fill = [ln for ln in lines if ln not in sm.l1]
                for ln in lines:
                    sm.l1.setdefault(ln, now)
            fresh = self.lines.first_touches(addrs)
            new = len(fresh)
            if not p.dsts:
                new = 0          # a store (or red) is written into L2 (write-back); HBM traffic is not modelled
            first = cfg.dram_latency
            if new and cfg.gmem_cold_latency > 0:
                # a first touch of a line the host's copy left in L2 (calib/microbench gmem_chase_fresh_*) or of one
                # no longer there (gmem_chase_cold: the front of a buffer larger than L2)
                resident = all(self._resident(ln * line) for ln in fresh)
                first = (cfg.gmem_fresh_latency if resident else cfg.gmem_cold_latency) + self._page_miss(fresh, line)
                if resident:
                    new = 0     # the bytes come from L2
            serial = 0.0
            if cfg.atom_same_address_cycles > 0 and ctx.ins.opcode in ("atom", "red"):
                # atomics on one address are done one after the other at its L2 slice, atom_same_address_cycles
                # each, across warps (atomic_cas_counter: 128 threads CAS one counter)
                words, counts = np.unique(addrs.astype(np.uint64), return_counts=True)
                if pc in self._warp_reduced and len(words) == 1:
                    counts = np.ones(1, dtype=counts.dtype)   # ptxas: REDUX over the warp, one lane's request
                arrive = now + cfg.l2_latency / 2
                if self.atom_queue > 0:
                    # same-word atomics back up from their L2 slice into the SM: this one leaves the SM once the
                    # backlog of its words ahead of it is at most atom_queue_cycles (cs_atomicIntrinsics: 8 warps x
                    # 4 per-lane atomics on 4 words last as long as one word's 256 atomics in a row)
                    backlog = max(sm.atom_free.get(w, 0.0) for w in words.tolist()) - arrive
                    atom_hold = max(0.0, backlog - self.atom_queue)
                    now += atom_hold
                    arrive += atom_hold
                for w, c in zip(words.tolist(), counts.tolist()):
                    start = max(arrive, sm.atom_free.get(w, 0.0))
                    sm.atom_free[w] = start + c * cfg.atom_same_address_cycles
                    serial = max(serial, sm.atom_free[w] - arrive - cfg.atom_same_address_cycles)
            sector = int(cfg.gmem_sector_bytes)
            a = addrs.astype(np.uint64)
            starts = a // np.uint64(sector)
            ends = (a + np.uint64(p.access_bytes - 1)) // np.uint64(sector)
            sectors = len(set(starts.tolist()) | set(ends.tolist()))
            nbytes = sectors * sector
            if self.store_path and not p.dsts and p.addr_index == 0:
                # stores drain in issue order through the SM's store path, one sector per
                # gmem_store_clk_per_sector; the issuing warp only waits when the backlog is full (stall())
                occ = sectors * cfg.gmem_store_clk_per_sector
                start = max(now, sm.store_free)
                sm.store_free = start + occ
                if self.tma_store_sharing:
                    _log_store(sm.store_log, issue, start + occ)
                # the per-warp store rate counts from the store's issue, not from when its data is ready
                ctx.warp.timing.store_next = issue + cfg.gmem_store_warp_interval
                self.busy["gmem"] += occ
                return start - now + occ + cfg.l2_latency + atom_hold, atom_hold
            bw = cfg.hbm_bytes_per_clk_sm if new else cfg.l2_bytes_per_clk_sm
            occ = math.ceil(nbytes / bw)
            if cfg.l2_line_cycles > 0 and p.dsts:
                # every line a load touches is a request of its own to L2 (corpus: chase_runtime_single_warp, one
                # warp gathering 32 lines per step through .cg)
                occ = max(occ, math.ceil((len(lines) - 1) * cfg.l2_line_cycles))  # the first line is the load itself
            if self.dataflow:
                start = self._reserve(sm, "gmem", now, occ)
                sm.gmem_free = max(sm.gmem_free, start + occ)
            else:
                start = max(now, sm.gmem_free)
                sm.gmem_free = start + occ
            self.busy["gmem"] += occ
            lat = start - now + occ + (first if fresh and p.dsts else cfg.l2_latency) + serial
            if fill and cfg.l1_pending_fills:
                for ln in fill:
                    sm.l1[ln] = now + lat
            return lat + atom_hold, atom_hold
        if space == "const" and cfg.const_miss_latency > 0:
            return self._const_latency(sm, addrs), 0.0
        if space == "param" and cfg.const_miss_latency > 0 and cfg.param_block_resident:
            # kernel parameters: written by the launch into the constant bank, so their 256-byte blocks are
            # taken to be in the block cache from the start; a 64-byte line's first read costs a block hit
            lines = sm.param_lines
            new = {int(x) // 64 for x in addrs.tolist()} - lines
            lines |= new
            return (cfg.const_l15_latency if new else cfg.const_hit_latency), 0.0
        return cfg.l1_latency, 0.0

    def _const_latency(self, sm: SmState, addrs) -> float:
        """ld.const through the SM's constant caches (H100 const_chase_*): a word of a 64-byte line already read
        costs const_hit_latency, of a 256-byte block already read const_l15_latency, else const_miss_latency;
        the lanes' distinct lines are served one after the other."""
        cfg = self.cfg
        a = addrs.astype(np.int64)
        lat = 0.0
        lines, cap = sm.const_lines, max(1, int(cfg.const_l1_bytes) // 64)
        for ln in sorted(set((a // 64).tolist())):
            blk = ln // 4
            if ln in lines:
                lat += cfg.const_hit_latency if lat == 0 else 1
                lines.move_to_end(ln)
            elif blk in sm.const_blocks:
                lat = max(lat, cfg.const_l15_latency)
            else:
                lat = max(lat, cfg.const_miss_latency)
            lines[ln] = True                 # LRU over const_l1_bytes; the 256-byte blocks stay (64 KB)
            if len(lines) > cap:
                lines.popitem(last=False)
            sm.const_blocks.add(blk)
        return lat

    def _resident(self, addr: int) -> bool:
        """Whether global byte ``addr`` was in L2 when the kernel started (the host's argument copies)."""
        if self._l2_ranges is None:
            allocs = [a for a in self.sim.gmem._allocs if a.name.startswith("arg")]
            self._l2_ranges = l2_resident_ranges(allocs, int(self.cfg.l2_bytes))
        return any(lo <= addr < hi for lo, hi in self._l2_ranges)

    def tma_extra_latency(self, op) -> float:
        """Latency a TMA / bulk op adds over the engine's L2-warm latency: the DRAM latency over L2's when a load
        touches a global line for the first time (the lines of every op join the first-touch set)."""
        if not self.cfg.tma_dram_first_touch:
            return 0
        lines = _tma_lines(op, int(self.cfg.gmem_line_bytes))
        if lines is None:
            return 0
        new = self.lines.mark(lines)
        if not new or op.kind not in ("load", "prefetch"):
            return 0
        cfg = self.cfg
        if cfg.tma_fresh_extra <= 0:
            return cfg.dram_latency - cfg.l2_latency
        # lines the kernel has not touched yet (calib/microbench tma_fresh_* / bulk_fresh_*), a first touch of their
        # page (the cold first rep of every tma_* / bulk_* case), lines no longer in L2 (buffers past its size)
        line = int(cfg.gmem_line_bytes)
        extra = cfg.tma_fresh_extra + self._page_miss(new, line)
        if cfg.gmem_cold_latency > 0 and not all(self._resident(ln * line) for ln in new):
            extra += cfg.gmem_cold_latency - cfg.gmem_fresh_latency
        return extra

    def tma_store_delay(self, op, cta, start: float) -> float:
        """sm_90a (``tma_store_request_share`` > 0): cycles a TMA load served from ``start`` loses to the SM's global
        stores.  Its requests leave the SM ``tma_store_request_after`` cycles after ``start``, behind the stores
        waiting in the store path then: it completes ``tma_store_request_share`` x that backlog later (H100
        tma_store_window: stores issued with the load delay it by about their drain time, stores issued 150 clk
        or more later hardly; tma_*_stores: beside a saturated store path, ~270 clk of backlog, a load takes
        twice as long).  Asked at the load's completion, when every store issued by then is known.

        Where the H100 differs (tests/golden/timing_h100/README.md, third round): stores issued just before a
        load, across a CTA barrier, add ~50 clk there (this model, with the fitted parameters: ~190); stores
        ~300 clk into a 490-clk load, while its data arrives, ~61 (here 0)."""
        if not self.tma_store_sharing or op.kind != "load":
            return 0.0
        t = start + self.cfg.tma_store_request_after
        # the store path is a FIFO: the last store issued by t is the last one drained
        drained = max((d for i, d in self.sm(cta).store_log if i <= t), default=t)
        return self.cfg.tma_store_request_share * max(0.0, drained - t)

    def _page_miss(self, lines, line: int) -> float:
        """``tlb_miss_latency`` when any of the global ``lines`` lies in a page no access has touched yet."""
        if self.cfg.tlb_miss_latency <= 0:
            return 0
        page = int(self.cfg.tlb_page_bytes)
        pages = {ln * line // page for ln in lines}
        new = pages - self.pages
        self.pages |= new
        return self.cfg.tlb_miss_latency if new else 0

    # ------------------------------------------------------------------------------------------ waits
    def label_waits(self, ctx, pc: int, new_waits, pre) -> None:
        """Name the waits ``body[pc]`` just created (for the stall breakdown)."""
        p = self.plans[pc]
        ins = self.body[pc]
        kind = p.wait_kind or "wait"
        wake = None
        if kind == "mbarrier":
            detail = self.mbarrier_name(ctx.cta, pre)
        elif kind == "barrier":
            op = ins.operands[0] if ins.operands else None
            detail = f"{ins.full_opcode} {op}" if op is not None else ins.full_opcode
            if ins.opcode in ("bar", "barrier"):
                wake = self.barrier_latency(ctx.cta, p)
        else:
            detail = f"{ins.full_opcode} (line {ins.loc.line})"
        if len(self.wait_labels) > 4096:     # drop labels of waits that ended while other lanes ran on
            self.wait_labels = {w: lab for w, lab in self.wait_labels.items() if w in w.warp.waits}
        for w in new_waits:
            self.wait_labels[w] = (kind, detail, wake)

    def mbarrier_name(self, cta, addrs) -> str:
        """``full_bar+8 (SMEM 0x408) of CTA (0,0,0)``: the symbol and offset of the mbarrier a wait names."""
        if addrs is None or addrs.size == 0:
            return f"an mbarrier of {cta.label}"
        a = int(addrs[0])
        if M.SHARED_WINDOW <= a < M.SHARED_WINDOW + M.WINDOW_SIZE:
            a -= M.SHARED_WINDOW
        _, off = M.split_shared(np.asarray([a], dtype=np.uint64))
        off = int(off[0])
        sym = ""
        for name, s in self.sim.program.shared_symbols.items():
            if s.offset <= off < s.offset + max(s.size, 1):
                sym = name + (f"+{off - s.offset}" if off != s.offset else "") + " "
                break
        return f"{sym}(SMEM 0x{off:x}) of {cta.label}"

    def released(self, warp, waits_before) -> tuple[str, str, float]:
        """(category, detail, wake-up latency) for a warp that was fully blocked on ``waits_before`` and woke."""
        gone = [w for w in waits_before if w not in warp.waits] or list(waits_before)
        label = ("wait", "unknown", None)
        for w in gone:
            lab = self.wait_labels.pop(w, None)
            if lab is not None:
                label = lab
                break
        if label[2] is not None:
            return label[0], label[1], label[2]
        wake = _WAKE.get(label[0])
        return label[0], label[1], (getattr(self.cfg, wake) if wake else 0)

    def stall_record(self, warp, category: str, detail: str, cycles: float, start: float, pc=None) -> None:
        if cycles <= 0:
            return
        warp.timing.stalls[(category, detail)] += cycles
        bus = self.sim.bus
        if bus.active:
            bus.publish(Stall(start, warp.cta.ctaid, "warp", warp=warp.id, pc=pc, reason=category, detail=detail,
                              cycles=cycles))

    # ------------------------------------------------------------------------------------------ report
    def report(self) -> TimingReport:
        sim = self.sim
        cfg = self.cfg
        cycles = int(sim.env.now)
        nsm = max(1, len(sim.ctas))
        warps = []
        for w in sim.warps:
            wt = w.timing
            stalls: dict = {}
            for (cat, d), c in sorted(wt.stalls.items()):
                stalls.setdefault(cat, {})[d] = c
            warps.append({"cta": list(w.cta.ctaid), "warp": w.id, "scheduler": wt.sub, "issued": wt.issued,
                          "stalls": stalls})
        cap = max(cycles, 1)
        units = {}
        drain = {"smem": max([s.smem_free for s in self.sms.values()] + [cap]),
                 "gmem": max([s.gmem_free for s in self.sms.values()] + [cap])}
        for name, busy in sorted(self.busy.items()):
            if name in drain:   # fire-and-forget stores may still be draining when the last warp exits
                units[name] = _util(busy, drain[name] * nsm)
            else:
                units[name] = _util(busy, cap * nsm * self.nsched)
        issued = sum(w.timing.issued for w in sim.warps)
        units["issue"] = _util(issued, cap * nsm * self.nsched)
        pipes = [a for (n, _), a in sim.agents.items() if n == "tensor_pipe"]
        tmas = [a for (n, _), a in sim.agents.items() if n == "tma"]
        if pipes:
            units["tensor pipe"] = _util(sum(p.busy_cycles for p in pipes), cap * len(pipes))
        if tmas:
            units["tma"] = _util(sum(t.busy_cycles for t in tmas), cap * len(tmas))
        flops: Counter = Counter()
        for p in pipes:
            flops.update(p.flops)
        peak_cycles = sum(f / peak_rate(cfg, k) for k, f in flops.items())
        total = sum(flops.values())
        if self.mma_sync_flops:
            total += self.mma_sync_flops
            peak_cycles += self.mma_sync_flops / cfg.mma_sync_peak_f16
        peak = (total / peak_cycles) if peak_cycles else cfg.tc_peak_f16
        tensor = {"flops": int(total), "by_kind": dict(flops), "mma_sync_flops": int(self.mma_sync_flops),
                  "achieved_per_sm": total / (cap * nsm), "peak_per_sm": peak,
                  "fraction": (peak_cycles / (cap * nsm)) if peak_cycles else 0.0}
        delays = {}
        waited = [t for t in tmas if t.store_wait_ops]
        if waited:
            delays["TMA load behind global stores"] = {"cycles": float(sum(t.store_wait_cycles for t in waited)),
                                                       "ops": int(sum(t.store_wait_ops for t in waited))}
        return TimingReport(cfg.arch, cycles, float(cfg.sm_clock_mhz), warps, units, tensor, delays)


def _back_edges(body, labels: dict) -> list:
    """(back-edge pc, head pc) of every loop (a branch to an earlier label)."""
    out = []
    for pc, ins in enumerate(body):
        if ins.opcode == "bra" and ins.operands:
            head = labels.get(getattr(ins.operands[0], "name", None))
            if head is not None and head <= pc:
                out.append((pc, head))
    return out


def block_boundaries(body, labels: dict, plans, if_convert_max: int) -> list:
    """pcs of the branches and branch targets that end / start a basic block of the SASS: every branch that issues
    (not the freed control of a loop ptxas unrolls) and its target, except a forward branch over at most
    ``if_convert_max`` straight-line instructions (no branch, no ordering point), which ptxas if-converts into
    predicated instructions."""
    out: set = set()
    for pc, ins in enumerate(body):
        if ins.opcode not in ("bra", "brx") or plans[pc].free:
            continue
        target = labels.get(getattr(ins.operands[0], "name", None)) if ins.operands else None
        if target is not None and ins.guard is not None and pc < target <= pc + 1 + if_convert_max \
                and all(body[k].opcode not in ("bra", "brx") and plans[k].order != "drain"
                        for k in range(pc + 1, target)):
            continue
        out.add(pc)
        if target is not None and target < len(body) and not plans[target].free:
            out.add(target)
    return sorted(out)


#: atomic operations ptxas reduces over the warp first (REDUX / POPC) when their result is not used and their address
#: is warp-uniform: one lane then sends the request (SASS of simpleAtomicIntrinsics: @P0 REDG.E.ADD/MAX/MIN/AND/OR/XOR;
#: EXCH, INC, DEC and CAS stay per lane)
_REDUX_OPS = {"add", "min", "max", "and", "or", "xor"}
_REDUX_TYPES = {"u32", "s32", "b32"}


def warp_reduced_atomics(body) -> set:
    """pcs of the 32-bit integer ``atom`` / ``red`` add, min, max, and, or, xor whose result no instruction reads
    (``red``, or an ``atom`` whose destination register is never a source): ptxas reduces them over the warp and one
    lane sends the request when the lanes' address is the same (the caller checks that at run time)."""
    read: set = set()
    for ins in body:
        for k, o in enumerate(ins.operands):
            if k or not _has_dest(ins):
                read.update(operand_regs(o))
        if ins.guard is not None:
            read.add(ins.guard[0].name)
    out = set()
    for pc, ins in enumerate(body):
        if ins.opcode not in ("atom", "red") or not (set(ins.mods) & _REDUX_OPS) or not (set(ins.mods) & _REDUX_TYPES):
            continue
        if ins.opcode == "red" or (ins.operands and isinstance(ins.operands[0], ir.Reg)
                                   and ins.operands[0].name not in read):
            out.add(pc)
    return out


def unrolled_loop_control(body, labels: dict) -> list:
    """pcs of the loop control that ptxas removes when it unrolls a counted loop: a backward branch guarded by a
    ``setp`` (a few instructions before) that compares a register with an immediate bound, that ``setp``, and the
    loop's induction updates (``add r, r, imm`` of a register written nowhere else in the loop: the unrolled code
    uses immediate offsets instead).  Branches to a label inside another loop's body count on their own."""
    out: set = set()
    for pc, ins in enumerate(body):
        if ins.opcode != "bra" or ins.guard is None or not ins.operands:
            continue
        target = labels.get(getattr(ins.operands[0], "name", None))
        if target is None or target > pc:
            continue
        pred = ins.guard[0].name
        setp = None
        for k in range(pc - 1, max(target, pc - 4) - 1, -1):
            dst = body[k].operands[0] if body[k].operands else None
            if isinstance(dst, ir.Reg) and dst.name == pred:
                if body[k].opcode == "setp" and isinstance(body[k].operands[-1], ir.Imm):
                    setp = k
                break
        if setp is None:
            continue
        loop = range(target, pc + 1)
        if any(body[k].opcode in ("bra", "brx") and k != pc for k in loop):
            continue                     # control flow inside: not a straight-line body ptxas unrolls whole
        writes: dict = {}
        for k in loop:
            d = body[k].operands[0] if body[k].operands else None
            if isinstance(d, ir.Reg):
                writes[d.name] = writes.get(d.name, 0) + 1
        out.update((pc, setp))
        for k in loop:
            o = body[k].operands
            if body[k].opcode == "add" and body[k].guard is None and len(o) == 3 and isinstance(o[0], ir.Reg) \
                    and isinstance(o[1], ir.Reg) and o[0].name == o[1].name and isinstance(o[2], ir.Imm) \
                    and writes[o[0].name] == 1:
                out.add(k)
    return sorted(out)


def rolled_loop_back_edges(body, labels: dict, facts: dict | None = None) -> list:
    """Back edges (backward branches) of the loops ptxas keeps rolled: every loop except those whose induction
    variable -- the register the exit test compares -- steps by an immediate, which ptxas unrolls (whole: a
    counted loop, :func:`unrolled_loop_control`; or behind a trip-count dispatch: :func:`runtime_loops`).  A
    grid- or block-stride loop (``i += %ntid.x``) is rolled even with an immediate bound (corpus SASS:
    smem_bank_stride's staging loop).  ``facts``: {back-edge pc: rolled?} from the kernel's SASS, which decide
    where given."""
    facts = facts or {}
    runtime = set()
    for _, exit_pc, back, _ in runtime_loops(body, labels):
        runtime.update((exit_pc, back))
    out = []
    for pc, ins in enumerate(body):
        if ins.opcode != "bra" or not ins.operands:
            continue
        target = labels.get(getattr(ins.operands[0], "name", None))
        if target is None or target > pc:
            continue
        if pc in facts:
            if facts[pc]:
                out.append(pc)
            continue
        if pc not in runtime and not _immediate_step(body, target, pc, ins):
            out.append(pc)
    return out


def _immediate_step(body, head: int, pc: int, br) -> bool:
    """The loop ``head..pc`` (back edge ``br``, guarded) has an exit test ``setp p, i, bound`` (a few instructions
    before the branch) whose ``i`` is written in the loop only by ``add i, i, imm``, and no other branch."""
    if br.guard is None:
        return False
    if any(body[k].opcode in ("bra", "brx", "call") and k != pc for k in range(head, pc)):
        return False
    pred = br.guard[0].name
    for k in range(pc - 1, max(head, pc - 4) - 1, -1):
        o = body[k].operands
        if o and isinstance(o[0], ir.Reg) and o[0].name == pred:
            if body[k].opcode != "setp" or len(o) < 3 or not isinstance(o[1], ir.Reg):
                return False
            ind = o[1].name
            writes = [j for j in range(head, pc + 1) if body[j].operands and isinstance(body[j].operands[0], ir.Reg)
                      and body[j].operands[0].name == ind]
            if len(writes) != 1:
                return False
            w = body[writes[0]]
            wo = w.operands
            return (w.opcode in ("add", "sub") and w.guard is None and len(wo) == 3 and isinstance(wo[1], ir.Reg)
                    and wo[1].name == ind and isinstance(wo[2], ir.Imm))
    return False


def runtime_loops(body, labels: dict) -> list:
    """Loops with a run-time trip count that ptxas unrolls: ``head: setp p, i, r (a register bound); @p bra
    exit; <straight-line body>; add i, i, imm; bra.uni head`` (or the bottom-tested form: ``head: <body>; add
    i, i, imm; setp p, i, r; @p bra head``).  Returns (head, exit branch pc, back-edge pc, control pcs) per loop;
    the exit branch of the bottom-tested form is its back edge."""
    out = []
    for pc, ins in enumerate(body):
        if ins.opcode != "bra" or not ins.operands:
            continue
        head = labels.get(getattr(ins.operands[0], "name", None))
        if head is None or head > pc:
            continue
        loop = range(head, pc + 1)
        branches = [k for k in loop if body[k].opcode in ("bra", "brx", "call", "ret", "exit")]
        if ins.guard is None:                       # top-tested: head setp + exit branch, unconditional back edge
            if len(branches) != 2 or head + 1 >= pc:
                continue
            setp, ex = body[head], body[head + 1]
            if setp.opcode != "setp" or ex.opcode != "bra" or ex.guard is None or branches[0] != head + 1:
                continue
            target = labels.get(getattr(ex.operands[0], "name", None)) if ex.operands else None
            if target is None or target <= pc or ex.guard[0].name != setp.operands[0].name:
                continue
            exit_pc, ctrl = head + 1, [head, head + 1, pc]
        else:                                       # bottom-tested: setp just before the conditional back edge
            if len(branches) != 1 or pc - 1 < head:
                continue
            setp = body[pc - 1]
            if setp.opcode != "setp" or setp.operands[0].name != ins.guard[0].name:
                continue
            exit_pc, ctrl = pc, [pc - 1, pc]
        bound = setp.operands[-1]
        if not isinstance(bound, ir.Reg):
            continue                                # an immediate bound: unrolled_loop_control's case
        ind = setp.operands[1]
        if not isinstance(ind, ir.Reg):
            continue
        writes = [k for k in loop if body[k].operands and isinstance(body[k].operands[0], ir.Reg)
                  and body[k].operands[0].name == ind.name]
        if len(writes) != 1:
            continue
        k = writes[0]
        o = body[k].operands
        if not (body[k].opcode == "add" and body[k].guard is None and len(o) == 3 and isinstance(o[1], ir.Reg)
                and o[1].name == ind.name and isinstance(o[2], ir.Imm)):
            continue
        if any(isinstance(body[j].operands[0], ir.Reg) and body[j].operands[0].name == bound.name
               for j in loop if body[j].operands):
            continue                                # the bound changes inside the loop
        out.append((head, exit_pc, pc, sorted(set(ctrl + [k]))))
    return out


def _tma_lines(op, line: int):
    """Global line indices a TMA op reads or writes: bulk copies from their ``src`` address, tile-mode tensor ops
    from the tensor map and coordinates (box rows; element strides and out-of-bound clipping ignored); None when
    the op says neither."""
    x = op.extra
    if "src" in x:
        a = int(x["src"])
        return set(range(a // line, (a + max(op.nbytes, 1) - 1) // line + 1))
    tm, c = x.get("tensor_map"), x.get("coords")
    if tm is None or c is None or x.get("mode", "tile") != "tile":
        return None
    try:
        es = tm.esize or 1
        coords = [int(v) for v in c]
        base = np.array([tm.global_address + coords[0] * es], dtype=np.int64)
        for i in range(1, min(tm.rank, len(coords))):
            rows = np.arange(coords[i], coords[i] + int(tm.box_dims[i]), dtype=np.int64) \
                * int(tm.global_strides[i - 1])
            base = (base[:, None] + rows[None, :]).reshape(-1)
        n = int(tm.box_dims[0]) * es
    except (AttributeError, TypeError, ValueError, IndexError):
        return None
    out: set = set()
    for first, last in zip((base // line).tolist(), ((base + n - 1) // line).tolist()):
        out.update(range(first, last + 1))
    return out


_STORE_LOG_KEEP = 4096   # cycles of store history kept for TimingModel.tma_store_delay


def _log_store(log: deque, issue: float, drained: float) -> None:
    """Append a global store's (issue cycle, cycle the store path has drained it) and drop stores drained long
    before this one was issued."""
    log.append((issue, drained))
    while log and log[0][1] < issue - _STORE_LOG_KEEP:
        log.popleft()


def _waits(ins) -> bool:
    """A CTA barrier instruction that waits (bar.sync / bar.red / barrier.sync...; not bar.arrive)."""
    return "arrive" not in ins.mods


def _util(busy: float, capacity: float) -> dict:
    return {"busy": busy, "capacity": capacity, "utilisation": busy / capacity if capacity else 0.0}


def _is_global(a: np.ndarray) -> bool:
    """No address of ``a`` falls in the local, param or const window of the generic space."""
    for base in (M.LOCAL_WINDOW, M.PARAM_WINDOW, M.CONST_WINDOW):
        if ((a >= np.uint64(base)) & (a < np.uint64(base + M.WINDOW_SIZE))).any():
            return False
    return True


__all__ = ["TimingModel", "SmState"]
