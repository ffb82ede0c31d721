"""The timing model the engine consults for every warp-instruction (``Simulation(timing=True)``).

Semantics decide *what* an instruction does; this model decides *when* a warp may issue it and when its results
are readable, so the simulation's values are those of the timing-off engine (a race-free kernel gives identical
results either way -- tests/sim/timing/test_timing_invariance.py).

Issue rules (per CTA = per SM; a CTA is assumed to have its SM to itself):

* warp ``w`` issues on scheduler ``w % schedulers_per_sm``; a scheduler issues at most one instruction per cycle;
* an instruction issues once every register it reads or writes is past its producer's latency (the scoreboard,
  :class:`sim.timing.scoreboard.Scoreboard`) and the sub-partition unit it needs is free (units are busy for
  ``32 / lanes-per-clock`` cycles per warp-instruction, :mod:`sim.timing.classes`);
* a warp may issue its next instruction ``issue_cycles`` later (1; ``tcgen05.mma`` 12);
* shared-memory requests take one cycle of the CTA's SMEM port per wavefront (bank conflicts:
  :func:`sim.timing.smem.smem_wavefronts`) and complete ``smem_latency`` after their last wavefront; global
  requests take their sectors' bytes at the L2 (hit) or HBM (first touch of a line) bandwidth share of the SM and
  complete after ``l2_latency`` / ``dram_latency``;
* a warp blocked in a wait (mbarrier, bar.sync, barrier.cluster...) issues again a wake-up latency after it is
  released.

Async units (TMA engine, tensor pipe, cp.async) take their parameters from the same config
(:meth:`unit_params`, :class:`sim.timing.tensor.TensorPipeTiming`).
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from isa.errors import TcsimError
from .. import memory as M
from .classes import plan_instruction
from .params import ArchConfig
from .scoreboard import Scoreboard
from .smem import GlobalLines, smem_wavefronts
from .stats import TimingReport, WarpTiming
from .tensor import peak_rate

_WAKE = {"mbarrier": "mbarrier_wake_latency", "barrier": "barrier_wake_latency",
         "cluster barrier": "cluster_barrier_wake_latency"}


class SmState:
    """Issue and unit state of one SM (one CTA): when each scheduler, each sub-partition unit and the SMEM and
    global-memory ports are free next."""

    __slots__ = ("issue_free", "unit_free", "smem_free", "gmem_free")

    def __init__(self, nsched: int):
        self.issue_free = [0.0] * nsched
        self.unit_free: dict = {}
        self.smem_free = 0.0
        self.gmem_free = 0.0


class TimingModel:
    def __init__(self, sim, cfg: ArchConfig):
        self.sim = sim
        self.cfg = cfg
        self.body = sim.program.body
        self.plans = [plan_instruction(ins, cfg) for ins in self.body]
        self._checked = [tuple(dict.fromkeys(p.srcs + p.dsts)) for p in self.plans]
        self.nsched = int(cfg.schedulers_per_sm)
        self.sms: dict = {}
        self.lines = GlobalLines(int(cfg.gmem_line_bytes))
        self.busy: Counter = Counter()        # unit name -> busy cycles (all SMs)
        self.mma_sync_flops = 0
        self.wait_labels: dict = {}            # Wait -> (category, detail)

    # ------------------------------------------------------------------------------------------ per-warp state
    def attach(self, warp) -> None:
        warp.timing = WarpTiming(Scoreboard(), warp.id % self.nsched)

    def sm(self, cta) -> SmState:
        s = self.sms.get(cta)
        if s is None:
            s = self.sms[cta] = SmState(self.nsched)
        return s

    def unit_params(self, attr: str):
        """Parameters of the async unit named by its Simulation attribute, from the arch config."""
        cfg = self.cfg
        if attr == "tma_params":
            from ..agents.tma import TmaParams
            return TmaParams(latency=int(cfg.tma_latency), bytes_per_cycle=int(cfg.tma_bytes_per_clk))
        if attr == "async_copy_params":
            from ..agents.async_copy import AsyncCopyParams
            return AsyncCopyParams(latency=int(cfg.l2_latency), issue_cycles=int(cfg.cp_async_issue_cycles))
        raise KeyError(attr)

    # ------------------------------------------------------------------------------------------ issue rules
    def stall(self, warp, pc: int, now: float):
        """None when the warp may issue ``body[pc]`` at ``now``; else (cycle to retry, category, detail)."""
        wt = warp.timing
        b = wt.scoreboard.blocking(self._checked[pc], now)
        if b is not None:
            prod = self.body[b[2]]
            return b[0], "dependency", f"{b[1]} <- {prod.full_opcode} (line {prod.loc.line})"
        p = self.plans[pc]
        if p.tmem is not None and p.tmem.startswith("wait"):
            ready = wt.tmem_ld_ready if p.tmem.endswith("ld") else wt.tmem_st_ready
            if ready > now:
                return ready, "tmem", f"tcgen05.{p.tmem}"
        sm = self.sm(warp.cta)
        free = sm.issue_free[wt.sub]
        if free > now:
            return free, "issue slot", f"scheduler {wt.sub}"
        if p.unit is not None:
            free = sm.unit_free.get((wt.sub, p.unit), 0.0)
            if free > now:
                return free, "unit", p.unit
        return None

    def prepare(self, ctx, pc: int):
        """Run-time inputs of the cost that the instruction itself may overwrite (addresses): computed before
        the semantics execute.  Returns what :meth:`issued` needs, or None."""
        p = self.plans[pc]
        if p.cls == "mem" or (p.wait_kind == "mbarrier"):
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
        sm.issue_free[wt.sub] = now + 1
        if wt.first_issue is None:
            wt.first_issue = now
        wt.issued += 1
        wt.last_issue = now
        if p.unit is not None:
            sm.unit_free[(wt.sub, p.unit)] = now + p.interval
            self.busy[p.unit] += p.interval
        lat = p.latency
        if p.cls == "mem":
            lat = self._memory_latency(ctx, p, pre, sm, now)
        elif p.cls == "ldmatrix":
            lat = self._smem_port(sm, now, max(1, p.access_bytes // int(self.cfg.smem_bytes_per_clk))) + lat
        elif p.cls == "mma":
            self.mma_sync_flops += p.flops * int(ctx.mask.any())
        done = now + lat
        if p.dsts:
            wt.scoreboard.write(p.dsts, done, pc)
        if p.tmem == "ld":
            wt.tmem_ld_ready = max(wt.tmem_ld_ready, done)
        elif p.tmem == "st":
            wt.tmem_st_ready = max(wt.tmem_st_ready, done)
        return p.issue_cycles, done

    # ------------------------------------------------------------------------------------------ memory
    def _smem_port(self, sm: SmState, now: float, wavefronts: int) -> float:
        """Queue ``wavefronts`` cycles on the SMEM port; returns the cycles from ``now`` to the last one."""
        start = max(now, sm.smem_free)
        sm.smem_free = start + wavefronts
        self.busy["smem"] += wavefronts
        return start - now + wavefronts - 1

    def _memory_latency(self, ctx, p, addrs, sm: SmState, now: float) -> float:
        cfg = self.cfg
        if addrs is None or addrs.size == 0:
            return cfg.l1_latency if p.space in ("param", "const", "local") else cfg.smem_latency
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
            _, offs = M.split_shared(addrs.astype(np.uint64))
            waves = smem_wavefronts(offs.astype(np.int64), p.access_bytes, int(cfg.smem_banks),
                                    int(cfg.smem_bank_bytes))
            return self._smem_port(sm, now, waves) + cfg.smem_latency
        if space == "global":
            _, new = self.lines.touch(addrs)
            if not p.dsts:
                new = 0          # a store (or red) is written into L2 (write-back); HBM traffic is not modelled
            sector = int(cfg.gmem_sector_bytes)
            a = addrs.astype(np.uint64)
            starts = a // np.uint64(sector)
            ends = (a + np.uint64(p.access_bytes - 1)) // np.uint64(sector)
            nbytes = len(set(starts.tolist()) | set(ends.tolist())) * sector
            bw = cfg.hbm_bytes_per_clk_sm if new else cfg.l2_bytes_per_clk_sm
            start = max(now, sm.gmem_free)
            occ = math.ceil(nbytes / bw)
            sm.gmem_free = start + occ
            self.busy["gmem"] += occ
            return start - now + occ + (cfg.dram_latency if new else cfg.l2_latency)
        return cfg.l1_latency

    # ------------------------------------------------------------------------------------------ waits
    def label_waits(self, ctx, pc: int, new_waits, pre) -> None:
        """Name the waits ``body[pc]`` just created (for the stall breakdown)."""
        p = self.plans[pc]
        ins = self.body[pc]
        kind = p.wait_kind or "wait"
        if kind == "mbarrier":
            detail = self.mbarrier_name(ctx.cta, pre)
        elif kind == "barrier":
            op = ins.operands[0] if ins.operands else None
            detail = f"{ins.full_opcode} {op}" if op is not None else ins.full_opcode
        else:
            detail = f"{ins.full_opcode} (line {ins.loc.line})"
        if len(self.wait_labels) > 4096:     # drop labels of waits that ended while other lanes ran on
            self.wait_labels = {w: lab for w, lab in self.wait_labels.items() if w in w.warp.waits}
        for w in new_waits:
            self.wait_labels[w] = (kind, detail)

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
        label = ("wait", "unknown")
        for w in gone:
            lab = self.wait_labels.pop(w, None)
            if lab is not None:
                label = lab
                break
        wake = _WAKE.get(label[0])
        return label[0], label[1], (getattr(self.cfg, wake) if wake else 0)

    def stall_record(self, warp, category: str, detail: str, cycles: float, start: float, pc=None) -> None:
        if cycles <= 0:
            return
        warp.timing.stalls[(category, detail)] += cycles
        bus = self.sim.bus
        if bus.active:
            bus.emit("stall", start, warp.cta.ctaid, "warp", warp=warp.id, pc=pc, reason=category, detail=detail,
                     cycles=cycles)

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
        return TimingReport(cfg.arch, cycles, float(cfg.sm_clock_mhz), warps, units, tensor)


def _util(busy: float, capacity: float) -> dict:
    return {"busy": busy, "capacity": capacity, "utilisation": busy / capacity if capacity else 0.0}


def _is_global(a: np.ndarray) -> bool:
    """No address of ``a`` falls in the local, param or const window of the generic space."""
    for base in (M.LOCAL_WINDOW, M.PARAM_WINDOW, M.CONST_WINDOW):
        if ((a >= np.uint64(base)) & (a < np.uint64(base + M.WINDOW_SIZE))).any():
            return False
    return True


__all__ = ["TimingModel", "SmState"]
