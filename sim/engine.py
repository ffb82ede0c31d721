"""The discrete-event engine: warps and async agents are simpy processes of one environment.

* Each warp is a process that executes one warp-instruction per step.  Lanes of a warp keep their own PCs;
  the warp executes the lowest PC among its runnable lanes, with exactly the lanes at that PC (min-PC
  reconvergence: structured and compiler-generated control flow reconverge at the post-dominator, and lanes
  blocked on a barrier let their siblings run on, as on Volta+ independent thread scheduling).
* Async agents (TMA engine, tensor pipe...) are processes too; semantics give them work, the engine decides
  when it lands.
* Timing is one architecture config (:attr:`Simulation.arch_config`, :func:`tcsim.timing.params.timing_config`):
  ``timing=True`` gives the config of the program's target, whose timing model (:mod:`tcsim.timing.model`)
  decides when each warp-instruction issues -- scoreboard, scheduler issue slots, unit occupancy, memory
  latency, wake-up latency; ``timing=False`` its functional preset (``ArchConfig.untimed()``), whose model
  (:mod:`tcsim.timing.functional`) issues every warp-instruction in one cycle; or pass an
  :class:`tcsim.timing.params.ArchConfig`.  The warp process asks that model the same questions either way, and
  every async unit is constructed with the same config.  Semantics are the same either way: timing changes
  *when*, never *what*.
* The schedule is deterministic for a given seed: with ``seed=None`` ties go in creation order; another seed
  adds a reproducible random issue delay of 0..3 cycles so warps interleave differently (race-free kernels must
  give the same results under every seed and timing configuration).  A ``schedule``
  (:class:`tcsim.explore.Schedule`, what ``tcsim run --explore`` / ``--schedule K`` runs) perturbs the warps
  further within what the hardware allows -- the random delay's range, warp priorities (which warp goes first
  when several may issue in the same cycle), a per-warp slowdown (extra cycles per instruction), one large gap
  before one warp's n-th instruction -- and sets the async units' latency knobs in the arch config
  (``*_extra_latency``, ``async_jitter_seed``: :data:`tcsim.timing.params.LATENCY_KNOBS`); semantics never see
  it.
* When no event is left but some warp is still alive, that is a deadlock: the report names every waiting
  warp, its lanes and what it waits on.  A budget (seconds of work by default, or warp-instructions) stops
  runaway kernels; a run in which every live warp polls while the machine state repeats is a livelock, reported
  like a deadlock; long runs print a progress line and stop on Ctrl-C with every warp's position
  (:mod:`tcsim.watch`, consulted every few thousand instructions through :meth:`Simulation._watch_check`).
* CTAs are created when they are scheduled (:meth:`Simulation._start_cluster`): as many clusters as the GPU holds
  at once (:func:`tcsim.limits.resident_ctas`) start at cycle 0, and each cluster that exits lets the next one
  of the grid start, so a huge grid starts at once and its memory stays bounded by what has run.
"""
from __future__ import annotations

import random
import time

import numpy as np
import simpy
from simpy.events import URGENT

from tcsim.isa import ir
from tcsim.isa.errors import DeadlockError, LaunchError, RunawayError, SyncError, TcsimError, UnsupportedError
from . import memory as M
from .context import ExecContext, lanes_str
from .convergence import ALL, Reachability, collective_members
from .findings import FindingError, FindingLog
from .race.protocol import Protocol
from .machine import WARP, Cluster, Cta, Program, Warp, check_launch_shape, layout_program
from .observe import InstRetired, ObservationBus
from .ptxtypes import B128, b128_int
from .semantics import REGISTRY, DecodeInfo, load_all

#: (kept for callers that imported it; the default budget is :data:`tcsim.watch.DEFAULT_MAX_SECONDS` of work)
DEFAULT_MAX_INSTRUCTIONS = None
from .warp_turns import FOCUS_SLICE, SPIN_LIMIT, pcs_min, user_loc as _user_loc  # noqa: F401 (engine's names)

_SYNC_OPCODES = {"shfl", "vote", "match", "redux", "bar", "barrier", "mma", "ldmatrix", "stmatrix", "movmatrix",
                 "elect", "activemask", "wgmma", "tcgen05", "wmma"}


def _lane_ints(values: np.ndarray) -> list:
    """A register's lane values as Python ints (a .b128 register's lanes as 128-bit ints)."""
    k = values.dtype.kind
    if k == "u" or k == "i":
        return values.tolist()
    if k == "b":
        return values.astype(np.uint8).tolist()
    if values.dtype == B128:
        return [b128_int(x) for x in values]
    return [int(x) for x in values]


def _is_warp_synchronous(ins) -> bool:
    return ins.opcode in _SYNC_OPCODES or "aligned" in ins.mods or "sync" in ins.mods


#: registers a function may declare (each warp holds all of them as 32-lane arrays: 500 K of them took minutes and
#: gigabytes to set up; the largest tracked kernel, a Triton GEMM, declares ~3,200)
MAX_DECLARED_REGISTERS = 65536


def decode_function(module: ir.Module, fn: ir.Function, errors: list | None = None,
                    lowering: frozenset = frozenset(), pc_base: int = 0) -> list:
    """Decode every instruction of ``fn`` (with the ``lowering`` variants on, :mod:`tcsim.lowering`); with
    ``errors`` given, collect diagnostics instead of raising.  ``pc_base``: where the body starts in a linked
    program (branch targets are program PCs)."""
    load_all()
    nregs = sum(vec + (vec != 1) for _, vec in fn.regs.values())
    if nregs > MAX_DECLARED_REGISTERS:
        e = UnsupportedError(f"{fn.name} declares {nregs:,} registers; tcsim keeps every declared register of "
                             f"every warp and supports at most {MAX_DECLARED_REGISTERS:,} per function", fn.loc,
                             expected="smaller .reg ranges (%r<N>: the largest tracked kernel declares ~3,200)")
        if errors is None:
            raise e
        errors.append(e)
    info = DecodeInfo(module, fn, module.arch or "sm_100a", lowering, pc_base)
    out = []
    for ins in fn.body:
        try:
            out.append(REGISTRY.decode(ins, info))
        except TcsimError as e:
            e.with_context(loc=ins.loc)
            if errors is None:
                raise
            errors.append(e)
            out.append(None)
    return out


def _sentinel(fn: ir.Function):
    """The instruction after a function's body: lanes reaching it fell off the end without ret/exit."""
    last = fn.body[-1].loc if fn.body else fn.loc
    ins = ir.Instruction("trap", (), (), last, index=len(fn.body))
    what = "kernel" if fn.kind == "entry" else "function"

    def run(ctx):
        if ctx.mask.any():
            raise SyncError(f"{lanes_str(ctx.mask)} ran past the end of {what} {fn.name} without ret/exit", last)

    return ins, run


def load_program(module: ir.Module, kernel: str | None = None, lowering: frozenset = frozenset(),
                 frames: dict | None = None) -> Program:
    """The kernel ``kernel`` and the device functions it reaches, linked (:mod:`tcsim.linker`; ``frames``: SASS
    stack-frame sizes by function) and decoded."""
    from .linker import link as link_program
    try:
        fn = module.kernel(kernel)
    except KeyError as e:
        other = module.functions.get(kernel) if isinstance(kernel, str) else None
        if other is not None:               # a .func of that name (no .entry): where it is declared
            raise LaunchError(f"kernel={kernel!r}: {module.source_name} declares {kernel} as a .func, not a kernel",
                              other.loc, expected="the name of a .entry function") from None
        raise LaunchError(f"kernel={kernel!r}: {e.args[0]}",
                          expected="the name of one of the module's .entry functions") from None
    link = link_program(module, fn, frames)
    body, decoded = [], []
    for lf in link.functions:
        decoded += decode_function(module, lf.fn, lowering=lowering, pc_base=lf.base)
        body += lf.fn.body
        ins, run = _sentinel(lf.fn)
        body.append(ins)
        decoded.append(run)
    lay = layout_program(module, fn)
    if len(link.functions) > 1:             # the kernel's frame holds the callees' depots too (tcsim.linker)
        lay["local_base"] = link.kernel_sp
    const_image = np.zeros(lay["const_size"], dtype=np.uint8)
    return Program(module=module, kernel=fn, body=body, decoded=decoded,
                   shared_symbols=lay["shared_symbols"], shared_static_size=lay["shared_static_size"],
                   dynamic_smem_align=lay["dynamic_smem_align"], dynamic_smem_base=lay["dynamic_smem_base"],
                   address_map=lay["address_map"], local_base=lay["local_base"], local_symbols=lay["local_symbols"],
                   local_size=lay["local_size"], param_symbols=lay["param_symbols"], param_size=lay["param_size"],
                   const_symbols=lay["const_symbols"], const_image=const_image.tobytes(),
                   global_decls=[v for v in module.globals if v.space == "global"],
                   syncish=[_is_warp_synchronous(i) for i in body], link=link)


class Simulation:
    """One kernel launch on the simulated machine."""

    def __init__(self, program: Program, gmem: M.GlobalMemory, param_image: np.ndarray, *, grid, block,
                 cluster=(1, 1, 1), dynamic_smem: int = 0, seed: int | None = None,
                 max_instructions: int | None = None, bus: ObservationBus | None = None,
                 global_symbols: dict | None = None, const_image: np.ndarray | None = None,
                 timing=False, strict: bool = False, schedule=None, grid_dependency=None,
                 stack_size: int | None = None, max_seconds: float | None = None, progress=None,
                 non_portable_cluster: bool = False, tier: str | None = None):
        from .grid_dependency import GridDependency
        from .fast import check_tier, default_tier
        #: the execution tier (tcsim.fast): 'reference' (this module's warp process) or 'fast' (lockstep groups)
        self.tier = default_tier() if tier is None else check_tier(tier)
        self._fast = None
        from .linker import DEFAULT_STACK_SIZE
        self.program = program
        #: programmatic dependent launch state of this grid (tcsim.grid_dependency); a lone launch has none in
        #: flight before it
        self.grid_dependency = grid_dependency if grid_dependency is not None else GridDependency()
        #: per-thread stack bytes for recursive device functions (cudaLimitStackSize; tcsim.linker)
        self.stack_size = DEFAULT_STACK_SIZE if stack_size is None else int(stack_size)
        self.gmem = gmem
        self.param_image = param_image
        self.const_image = const_image if const_image is not None else np.frombuffer(program.const_image,
                                                                                      dtype=np.uint8)
        self.global_symbols = global_symbols or {}
        self.grid, self.block, self.cluster_dims = tuple(grid), tuple(block), tuple(cluster)
        self.dynamic_smem = int(dynamic_smem)
        self.arch = program.module.arch or "sm_100a"
        #: the target's address layout (tcsim.address_map): reserved shared bytes, rank field, local stack
        self.address_map = program.address_map
        # user shared bytes per CTA: the static section, then the dynamic bytes (the GPU's %aggr_smem_size less the
        # reserved bytes)
        smem_total = program.shared_static_size + self.dynamic_smem
        check_launch_shape(program.kernel, self.grid, self.block, self.cluster_dims, smem_total,
                           non_portable_cluster=non_portable_cluster, arch=self.arch)
        self.smem_total = smem_total
        #: the schedule perturbation (:class:`tcsim.explore.Schedule`) or None
        self.schedule = schedule
        if schedule is not None and schedule.seed is not None:
            seed = schedule.seed
        self.seed = seed
        self._rng = random.Random(seed) if seed is not None else None
        self._jitter = 3 if schedule is None else int(schedule.jitter)   # random issue delay: 0..jitter cycles
        self.max_instructions = max_instructions
        from .watch import RunWatch
        #: budget, progress line, Ctrl-C and livelock detection (tcsim.watch)
        self.watch = RunWatch(self, max_instructions, max_seconds, progress)
        self.bus = bus or ObservationBus()
        self._texts: dict = {}          # pc -> its instruction's text (the retire events' ``text``)
        self.env = simpy.Environment()
        self.retired = 0
        self.lane_instructions = 0
        #: cycles of simulated time skipped over clock waits (skip_time)
        self.time_skipped = 0
        self.agents: dict = {}
        self.exit_hooks: list = []      # callables (warp, lanes) run when lanes exit
        self.cta_exit_hooks: list = []  # callables (cta) run when a CTA's last thread exits
        self.finish_hooks: list = []    # callables (sim) run after the run completes (leak checks...)
        self.clusters: list[Cluster] = []
        from .retention import Retention
        #: aggregates of finished CTAs no longer kept whole (tcsim.retention: a huge grid's memory stays bounded)
        self.retention = Retention()
        self.ctas: list[Cta] = []          # the CTAs started so far, in launch order (less the compacted ones)
        self.warps: list[Warp] = []
        #: ctaid -> Cta of the CTAs started so far
        self.cta_index: dict = {}
        self._procs = []
        self.error: BaseException | None = None
        self.wall_time = 0.0
        self.stdout: list[str] = []     # lines the kernel printed (vprintf), in execution order
        self.warnings: list[str] = []   # legal-but-suspicious findings reported after the run
        #: the run's findings (:mod:`tcsim.findings`): sanitizer mode records each and runs on; ``strict`` stops
        #: at the first
        self.findings = FindingLog(strict)
        #: the mbarrier / transaction protocol checker (:mod:`tcsim.race.protocol`): phase histories, root causes
        self.protocol = Protocol(self)
        from .timing.params import timing_config
        #: the architecture config every unit takes its parameters from (sim.timing.params: SM count, clock,
        #: latencies... with their sources); ``timing`` False gives the functional preset
        self.arch_config = timing_config(self.arch, timing)
        if schedule is not None:                       # its async-latency knobs (tcsim.explore.Schedule.apply)
            self.arch_config = schedule.apply(self.arch_config)
        if self.arch_config.timed:
            from .timing.model import TimingModel as Model
        else:
            from .timing.functional import FunctionalModel as Model
        #: the issue model the warps consult (TimingModel, or FunctionalModel: one cycle per warp-instruction)
        self.timing = Model(self, self.arch_config)
        #: per PC: None, or the lanes a warp-collective .sync instruction waits for (tcsim.convergence)
        self.collective = [collective_members(ins) for ins in program.body]
        fn = program.kernel
        self.reach = Reachability(program.body, fn.labels, getattr(fn, "branch_targets", {}) or {}, program.link)
        self._build()

    # ------------------------------------------------------------------------------------------ setup
    def _build(self) -> None:
        """Set up the grid: the per-CTA thread ids, the cluster order, and the clusters that start at cycle 0."""
        from .limits import resident_ctas
        bx, by, bz = self.block
        nthreads = bx * by * bz
        self._nthreads = nthreads
        self._nwarps = (nthreads + WARP - 1) // WARP
        lin = np.arange(nthreads)
        self._tid_all = np.stack([lin % bx, (lin // bx) % by, lin // (bx * by)], axis=1)
        gx, gy, gz = self.grid
        cx, cy, cz = self.cluster_dims
        self._cluster_grid = (gx // cx, gy // cy, gz // cz)
        self._clusters_total = self._cluster_grid[0] * self._cluster_grid[1] * self._cluster_grid[2]
        self._clusters_started = 0
        self._clusters_reserved = 0         # clusters about to start (one cycle after a cluster exits)
        self.clusters_cancelled = 0         # clusters cancelled by clusterlaunchcontrol.try_cancel (never started)
        csize = cx * cy * cz
        #: clusters that run at once (the GPU's occupancy bound); the rest start as clusters exit
        self.resident_clusters = max(1, resident_ctas(self.arch, int(self.arch_config.num_sms), self.block,
                                                      self.smem_total) // csize)
        self._warp_knobs(self.schedule)
        if self.tier == "fast":                 # (its driver runs the warps: tcsim.fast.tier)
            from .fast.tier import FastTier
            self._fast = FastTier(self)
        for _ in range(min(self._clusters_total, self.resident_clusters)):
            self._start_cluster()

    def try_cancel_cluster(self):
        """clusterlaunchcontrol.try_cancel's completion (PTX ISA §9.7.13.19, :mod:`tcsim.semantics.clc`): cancel
        the next cluster of the launch order that has not started -- it never starts -- and return the ctaid of
        its first CTA; None when every cluster has started (the request fails)."""
        if self._clusters_started >= self._clusters_total:
            return None
        k = self._clusters_started
        self._clusters_started += 1
        self.clusters_cancelled += 1
        nx, ny, _ = self._cluster_grid
        cx, cy, cz = self.cluster_dims
        return ((k % nx) * cx, ((k // nx) % ny) * cy, (k // (nx * ny)) * cz)

    def clusters_pending(self) -> int:
        """Clusters of the grid not started yet."""
        return self._clusters_total - self._clusters_started

    def _start_cluster(self) -> None:
        """Create the next cluster of the grid (launch order: x fastest), its CTAs and their warps, and start the
        warps' processes (CTA by CTA, warp by warp)."""
        k = self._clusters_started
        self._clusters_started += 1
        nx, ny, _ = self._cluster_grid
        kx, ky, kz = k % nx, (k // nx) % ny, k // (nx * ny)
        cx, cy, cz = self.cluster_dims
        nthreads, tid_all = self._nthreads, self._tid_all
        prog = self.program
        cl = Cluster(self, (kx, ky, kz), self.cluster_dims)
        self.clusters.append(cl)
        new = []
        for rz in range(cz):
            for ry in range(cy):
                for rx in range(cx):
                    rank = rx + ry * cx + rz * cx * cy
                    ctaid = (kx * cx + rx, ky * cy + ry, kz * cz + rz)
                    cta = Cta(self, cl, ctaid, rank, self.smem_total, self.address_map.reserved_smem)
                    cta.index = len(self.ctas) + self.retention.ctas
                    cl.ctas.append(cta)
                    self.ctas.append(cta)
                    self.cta_index[ctaid] = cta
                    for w in range(self._nwarps):
                        n = min(WARP, nthreads - w * WARP)
                        tids = np.zeros((WARP, 3), dtype=np.int64)
                        tids[:n] = tid_all[w * WARP:w * WARP + n]
                        warp = Warp(cta, w, tids, n, prog.kernel.regs, prog.local_size, prog.local_base, prog.link,
                                    self.stack_size,
                                    regfile=self._fast.regfile(len(self.warps)) if self._fast is not None else None)
                        warp.ctx = ExecContext(self, warp)
                        warp.wake_event = None
                        self.timing.attach(warp)
                        self._knobs_of(warp, len(self.warps) + self.retention.warps)
                        cta.warps.append(warp)
                        self.warps.append(warp)
                        new.append(warp)
        if self._fast is not None:
            self._fast.add_warps(new)
            return
        for warp in new:
            self._procs.append(self.env.process(self._warp_process(warp)))

    def _cluster_exited(self, cta: Cta) -> None:
        """A CTA exited: when its whole cluster has, the next cluster of the grid starts in the next cycle (not in
        this one: a grid of CTAs that exit at once would otherwise run whole within one simulated instant)."""
        if not all(c.exited for c in cta.cluster.ctas):
            return
        if self._clusters_started < self._clusters_total:
            self._clusters_reserved += 1
            self.env.process(self._start_next_cluster())
        from .retention import compact_cluster
        compact_cluster(self, cta.cluster)

    def _start_next_cluster(self):
        yield self.env.timeout(1)
        self._clusters_reserved -= 1
        if self.error is None and self._clusters_started < self._clusters_total:
            self._start_cluster()

    # ------------------------------------------------------------------------------------------ agents
    def agent(self, name: str, factory, key=None):
        """The async agent ``name`` (one per ``key``, e.g. per CTA), created by ``factory(sim)`` on first use."""
        k = (name, key)
        a = self.agents.get(k)
        if a is None:
            a = self.agents[k] = factory(self)
        return a

    # ------------------------------------------------------------------------------------------ execution
    def _warp_knobs(self, schedule) -> None:
        """The schedule's warp knobs, by warp (warps are numbered in creation order: CTA 0's first)."""
        #: warp -> simpy event priority: among warps that may issue in the same cycle, the lower goes first
        self._priority: dict = {}
        #: warp -> extra cycles before each of its instructions
        self._slow: dict = {}
        #: (warp, n, gap): ``gap`` extra cycles after the warp's n-th retired instruction
        self._stall = None
        self._schedule_knobs = None
        if schedule is None:
            self._perturbed = self._rng is not None
            return
        # warps are numbered over the whole grid (the resident ones at first; later ones as they start)
        n = self._clusters_total * (self.cluster_dims[0] * self.cluster_dims[1] * self.cluster_dims[2]) * \
            self._nwarps
        self._schedule_knobs = (schedule, n)
        self._perturbed = self._rng is not None or any(schedule.slow.values() if schedule.slow else ()) or \
            (schedule.stall is not None and 0 <= schedule.stall[0] < n)

    def _knobs_of(self, warp: Warp, i: int) -> None:
        """The schedule's knobs for warp number ``i`` (creation order)."""
        if self._schedule_knobs is None:
            return
        schedule, n = self._schedule_knobs
        rank = (schedule.priority or {}).get(i)
        if rank is not None:
            self._priority[warp] = 0.5 + (rank + 1) / (n + 2)
        extra = (schedule.slow or {}).get(i)
        if extra:
            self._slow[warp] = int(extra)
        if schedule.stall is not None and schedule.stall[0] == i:
            _, at, gap = schedule.stall
            self._stall = (warp, int(at), int(gap))

    def _issue_delay(self, warp) -> int:
        """Cycles the warp waits after an instruction on top of what the issue model says: 0 unless a seed or a
        schedule perturbs it."""
        d = 0
        if self._rng is not None:
            d += self._rng.randrange(self._jitter + 1)
        if self._slow:
            d += self._slow.get(warp, 0)
        st = self._stall
        if st is not None and st[0] is warp and warp.retired == st[1]:
            d += st[2]
        return d

    def timing_report(self):
        """The :class:`tcsim.timing.stats.TimingReport` of the run so far (None with timing off)."""
        return self.timing.report()

    def wake(self, warp: Warp) -> None:
        ev = warp.wake_event
        if ev is not None and not ev.triggered:
            ev.succeed()

    def _warp_process(self, warp: Warp):
        """One warp: pick the lanes to run, ask the issue model (``self.timing``) whether they may issue now,
        execute the instruction's semantics, and wait as long as the model says."""
        ctx = warp.ctx
        prog = self.program
        body = prog.body
        decoded = prog.decoded
        nbody = len(body)
        syncish = prog.syncish
        bus = self.bus
        tm = self.timing
        stall, prepare, issued = tm.stall, tm.prepare, tm.issued
        env = self.env
        warp.focus = None
        warp.focus_left = 0
        warp.spin = 0
        collective = self.collective
        perturbed = self._perturbed
        watch = self.watch
        owner = prog.link.owner if warp.callstack is not None else None
        prio = self._priority.get(warp)
        if prio is None:
            sleep = env.timeout
        else:                                           # a schedule orders this warp among same-cycle issuers
            def sleep(delay, env=env, prio=prio):
                return _Timeout(env, delay, prio)
            yield sleep(0)
        while True:
            runnable = warp.alive & ~warp.waiting & ~warp.parked
            if not runnable.any():
                if not warp.alive.any():
                    return
                if warp.parked.any() and not (warp.alive & warp.waiting).any():
                    # only parked lanes are left: their siblings can never arrive; the lowest group runs and its
                    # semantics report the divergence
                    warp.force_pc = int(pcs_min(warp.pc, warp.parked))
                    warp.parked &= ~(warp.pc == warp.force_pc)
                    continue
                warp.wake_event = env.event()
                blocked_at, waits_before = env.now, list(warp.waits)
                yield warp.wake_event
                warp.wake_event = None
                category, detail, wake = tm.released(warp, waits_before)
                if wake or prio is not None:
                    yield sleep(wake)
                tm.stall_record(warp, category, detail, env.now - blocked_at, blocked_at)
                continue
            pcs = warp.pc
            group = None
            focus_left = warp.focus_left
            if warp.focus is not None:
                f = warp.focus & runnable
                if f.any() and warp.focus_left > 0:
                    pc = int(pcs[f].min())
                    if pc < nbody and not syncish[pc]:
                        group = runnable & (pcs == pc)
                        warp.focus_left -= 1
                if group is None:
                    warp.focus = None
            if group is None:
                pc = int(pcs[runnable].min())
                group = runnable & (pcs == pc)
            if pc >= nbody:
                err = SyncError(f"{lanes_str(group)} ran past the end of kernel {prog.name} without ret/exit",
                                body[-1].loc if body else None, where=warp.label)
                self._fail(err)
                return
            if owner is not None and owner[pc] != warp.func_index:
                warp.switch_function(int(owner[pc]))    # the lanes at pc are in another function (tcsim.callstack)
            if collective[pc] is not None:
                group = self._converge(warp, pc, group, collective[pc])
                if group is None:                       # parked: the rest of the warp runs first
                    continue
            now = env.now                               # (the semantics below cannot advance it)
            st = stall(warp, pc, now)
            if st is not None:                          # not yet: retry when the blocking resource frees
                warp.focus_left = focus_left
                t0 = env.now
                yield sleep(st[0] - t0)
                tm.stall_record(warp, st[1], st[2], env.now - t0, t0, pc)
                continue
            ins = body[pc]
            ctx.ins = ins
            ctx.pc = pc
            ctx.group = group
            if ins.guard is not None:
                g = ctx.read_pred(ins.guard[0])
                mask = group & (~g if ins.guard[1] else g)
            else:
                mask = group
            ctx.mask = mask
            ctx.extra_delay = 0
            pcs[group] = pc + 1
            if bus.active and bus.wants("inst"):
                ctx.writes = {}
            pre = prepare(ctx, pc)
            nwaits = len(warp.waits)
            try:
                decoded[pc](ctx)
            except TcsimError as e:
                e.with_context(loc=ins.loc, where=ctx.where, user_loc=_user_loc(ins))
                self._fail(e)
                return
            if len(warp.waits) > nwaits:
                tm.label_waits(ctx, pc, warp.waits[nwaits:], pre)
            gap, done = issued(ctx, pc, pre, now)
            # Independent thread scheduling: lanes at the lowest PC run first (reconvergence), but a group that
            # keeps branching backwards while other lanes of the warp wait at higher PCs (a spin lock whose
            # holder is one of those lanes) must not starve them: after SPIN_LIMIT such branches the highest
            # group runs for a slice, stopping before any warp-synchronous instruction.
            # (the two halves are pure: the cheaper one first -- no runnable lane outside the group is the common case)
            if warp.focus is None and (runnable & ~group & (pcs > pc)).any() and \
                    (pm := pcs[mask]).size and (pm <= pc).any():
                warp.spin += 1
                if warp.spin >= SPIN_LIMIT:
                    hi = int(pcs[runnable & ~group].max())
                    warp.focus = runnable & (pcs == hi)
                    warp.focus_left = FOCUS_SLICE
                    warp.spin = 0
            warp.retired += 1
            self.retired += 1
            self.lane_instructions += int(np.count_nonzero(mask))
            if bus.active:
                self._retire_event(warp, pc, ins, mask, done)
            if self.retired >= watch.next_check:
                err = self._watch_check()
                if err is not None:
                    self._fail(err)
                    return
            if ctx.extra_delay:
                tm.stall_record(warp, "sleep", f"{ins.full_opcode} (line {ins.loc.line})", ctx.extra_delay,
                                env.now, pc)
            yield sleep(gap + ctx.extra_delay + (self._issue_delay(warp) if perturbed else 0))

    def _retire_event(self, warp: Warp, pc: int, ins, mask: np.ndarray, done) -> None:
        """Publish the warp's retired instruction (``done``: the cycle its results are readable, where the model
        times them) with the register writes its context collected -- when some observer selects 'inst' events (the
        race detector does not: it would pay for a record per instruction it never reads)."""
        ctx = warp.ctx
        if not self.bus.wants("inst"):
            ctx.writes = None
            return
        text = self._texts.get(pc)
        if text is None:
            text = self._texts[pc] = str(ins)
        self.bus.publish(InstRetired(self.env.now, warp.cta.ctaid, "warp", warp=warp.id, pc=pc, line=ins.loc.line,
                                     text=text, mask=int(np.packbits(mask, bitorder="little").view("<u4")[0]),
                                     writes={k: _lane_ints(v[mask]) for k, v in ctx.writes.items()}, done=done))
        ctx.writes = None

    def _converge(self, warp: Warp, pc: int, group: np.ndarray, members):
        """Lanes ``group`` reached the warp-collective instruction at ``pc``: the lanes to execute it with, or None
        when they park there until the rest of the warp's member lanes arrive (tcsim.convergence)."""
        g = group | (warp.parked & (warp.pc == pc))
        if warp.force_pc == pc:
            warp.force_pc = None
            warp.parked &= ~g
            return g
        if members is ALL:
            need = warp.alive.copy()
        else:
            need = self._member_lanes(warp, g, members) & warp.alive
        absent = need & ~g
        if absent.any() and self._can_arrive(warp, absent, pc):
            warp.parked |= g
            return None
        warp.parked &= ~g
        return g

    @staticmethod
    def _member_lanes(warp: Warp, g: np.ndarray, op) -> np.ndarray:
        """Union of the member masks of the lanes ``g`` (raw register bits; the semantics validate them)."""
        if isinstance(op, ir.Imm) and op.kind == "int":
            m = int(op.value) & 0xFFFFFFFF
        elif isinstance(op, ir.Reg) and op.name in warp.regs and warp.regs[op.name].dtype != np.bool_:
            vals = warp.regs[op.name][g].astype(np.uint64) & np.uint64(0xFFFFFFFF)
            m = int(np.bitwise_or.reduce(vals)) if vals.size else 0
        else:
            m = 0xFFFFFFFF
        return ((np.uint32(m) >> np.arange(WARP, dtype=np.uint32)) & 1).astype(bool)

    def _can_arrive(self, warp: Warp, absent: np.ndarray, pc: int) -> bool:
        """Every absent member lane may still reach ``pc``: it is running or blocked at a PC from which the CFG
        leads to ``pc`` (a lane parked at another collective cannot move until this group does)."""
        for lane in np.nonzero(absent)[0]:
            if warp.parked[lane]:
                return False
            if not self.reach.reaches(int(warp.pc[lane]), pc):
                return False
        return True

    def exit_lanes(self, warp: Warp, lanes: np.ndarray) -> None:
        lanes = lanes & warp.alive
        if not lanes.any():
            return
        warp.alive &= ~lanes
        cta = warp.cta
        if warp.ctx.ins is not None:
            cta.note_exit(warp.ctx.ins, warp.id, lanes, self.env.now)    # (findings' "the CTA exits")
        for hook in self.exit_hooks:
            hook(warp, lanes)
        if not cta.exited and not any(w.alive.any() for w in cta.warps):
            cta.exited = True
            self.grid_dependency.cta_exit(cta.ctaid, self.env.now)
            for hook in self.cta_exit_hooks:
                hook(cta)
            self._cluster_exited(cta)

    def fail(self, err: BaseException) -> None:
        """Stop the run with ``err`` (used by warps and async agents alike)."""
        self._fail(err)

    def _fail(self, err: BaseException) -> None:
        if self.error is None:
            self.error = err
        # stop the run at once: a failed event nobody defuses makes simpy raise _Stop out of env.run() when it is
        # processed (simpy's ``defused`` setter defuses whatever it is given, so it is not touched here)
        ev = self.env.event()
        ev.fail(_Stop())

    def only_warps_pending(self) -> bool:
        """Whether every pending event is one a warp's own process waits for (no async unit, timer, barrier
        release or CTA start in flight): what the livelock detector asks (tcsim.watch)."""
        self._procs = [p for p in self._procs if p.is_alive]
        own = set()
        for p in self._procs:
            own.add(id(p))
            t = getattr(p, "target", None)
            if t is not None:
                own.add(id(t))
        gang = None
        if self._fast is not None:
            # the fast tier drives the warps itself (no process per warp): its queue entries are gangs -- the issue
            # events of its warps (a CTA start's gang, URGENT, is not: as the reference's process initialisations)
            # -- and a blocked warp waits for its wake event
            from .fast.tier import _Gang as gang
            for w in self.warps:
                if w.wake_event is not None:
                    own.add(id(w.wake_event))
        for item in self.env._queue:
            ev = item[-1]
            if id(ev) in own:
                continue
            if gang is not None and isinstance(ev, gang) and item[1] != URGENT:
                continue
            return False
        return True

    def skip_time(self, cycles: int) -> None:
        """Advance simulated time by ``cycles`` with every queued event moving by as much (the loop monitor skips a
        clock wait this way, tcsim.loop_watch: only the warps' own issue and wake events are queued then).  A uniform
        shift keeps the queue's order; the fast tier's gangs carry their queue key too."""
        if cycles <= 0:
            return
        env = self.env
        q = env._queue
        gang = None
        if self._fast is not None:
            from .fast.tier import _Gang as gang
        for i, item in enumerate(q):
            q[i] = (item[0] + cycles,) + tuple(item[1:])
            ev = item[-1]
            if gang is not None and isinstance(ev, gang):
                ev.key = (ev.key[0] + cycles,) + tuple(ev.key[1:])
        env._now = env._now + cycles
        self.time_skipped += cycles

    def _watch_check(self):
        """The run watch's verdict (tcsim.watch: budget, Ctrl-C, livelock, progress line): an error ending the run,
        or None."""
        return self.watch.check()

    def run(self) -> None:
        t0 = time.perf_counter()
        sigint = self.watch.install_sigint()
        self.watch.started()
        try:
            if self._fast is not None:
                self._fast.run()
            else:
                self.env.run()
        except _Stop:
            pass
        finally:
            self.wall_time += time.perf_counter() - t0
            self.watch.stopped()
            self.watch.restore_sigint(sigint)
        if self.error is not None:
            raise self._with_findings(self.error)
        self.finish()

    def _with_findings(self, err: BaseException) -> BaseException:
        if isinstance(err, TcsimError):
            err.findings = list(self.findings.items)
            #: what the kernel printed before the error (printf, the assertion lines of __assertfail)
            err.stdout = list(self.stdout)
        return err

    def finish(self) -> None:
        stuck = [w for w in self.warps if w.alive.any()]
        if stuck:
            raise self._with_findings(self._deadlock(stuck))
        try:
            for hook in self.finish_hooks:
                hook(self)
        except TcsimError as e:
            raise self._with_findings(e)

    def step_instruction(self) -> bool:
        """Process events until one more warp-instruction retires; False when the run is over."""
        target = self.retired + 1
        if self._fast is not None:
            self._fast.single_step()
        while self.retired < target:
            if self.error is not None:
                raise self.error
            try:
                self.env.step()
            except simpy.core.EmptySchedule:
                return False
            except _Stop:
                raise self.error
            finally:
                if self._fast is not None:
                    self._fast.flush()      # (a debugger looks at the state after every step)
        if self.error is not None:
            raise self.error
        return True

    # ------------------------------------------------------------------------------------------ diagnostics
    def _blocking_mbarrier(self, wait):
        """(cta, mbarrier) whose phase completion ``wait`` waits for, or None."""
        for cta in self.ctas:
            for mb in cta.mbarriers.values():
                if wait.event in mb._waiters:
                    return cta, mb
        return None

    def _deadlock(self, stuck, head: str = "the kernel can make no progress; every live warp is waiting.") -> \
            DeadlockError:
        """The deadlock report: every waiting warp, its lanes and what it waits on, and for a wait on an mbarrier the
        root cause the protocol history shows (:meth:`tcsim.race.protocol.Protocol.deadlock_cause`: the expect-tx
        whose bytes never came, the init count against the arrivals), each also recorded as a finding (outcome
        'hang': the GPU never finishes).  ``head``: the report's first sentence (the loop monitor's report of one
        cluster that waits while others still run, tcsim.loop_watch)."""
        lines = []
        loc = None
        causes = []
        # first the waits' own root causes; the warps left without one (blocked elsewhere) are handed to the
        # named-barrier check, which decides whether a barrier's thread count is what none of them can meet
        own = {}
        blocked = {}
        for w in stuck:
            for wait in w.waits:
                f = wait.cause() if wait.cause is not None else None
                hit = self._blocking_mbarrier(wait) if f is None else None
                if hit is not None:
                    f = self.protocol.deadlock_cause(hit[0], hit[1], w.label, lanes_str(wait.mask))
                own[id(wait)] = (f, hit)
                if f is None and hit is not None:
                    pc = int(w.pc[wait.mask].min()) if wait.mask.any() else None
                    at = f" at {self.program.body[max(pc - 1, 0)].loc}" if pc is not None else ""
                    blocked.setdefault(id(w.cta), {})[w.id] = f"an mbarrier wait{at}"
        known = any(f is not None for f, _ in own.values())
        for w in stuck:
            for wait in w.waits:
                reason = wait.reason() if callable(wait.reason) else wait.reason
                f, hit = own[id(wait)]
                if f is None and hit is None and ("named-barriers", None) in self.agents:
                    f = self.agents[("named-barriers", None)].deadlock_cause(
                        wait, None if known else blocked.get(id(w.cta), {}))
                if f is not None and all(f.key != c.key for c in causes):
                    causes.append(f)
                ins = self.program.body[int(w.pc[wait.mask].min())] if wait.mask.any() else None
                at = ""
                if ins is not None:
                    prev = self.program.body[max(int(w.pc[wait.mask].min()) - 1, 0)]
                    at = f" at {prev.loc}"
                    loc = loc or prev.loc
                lines.append(f"{w.label} {lanes_str(wait.mask)}{at}: {reason}")
            parked = w.alive & w.parked
            for ppc in sorted(set(int(x) for x in w.pc[parked])):
                sel = parked & (w.pc == ppc)
                ins = self.program.body[ppc]
                loc = loc or ins.loc
                others = w.alive & ~sel
                lines.append(f"{w.label} {lanes_str(sel)} at {ins.loc}: wait at the warp-collective `{ins}` for "
                             f"{lanes_str(others)} of the warp to reach it")
            idle = w.alive & ~w.waiting & ~w.parked
            if idle.any():
                lines.append(f"{w.label} {lanes_str(idle)}: runnable but never scheduled (engine bug?)")
        for f in causes:
            try:
                self.findings.report(f)
            except FindingError:
                pass                    # (outcome 'hang': the run is over anyway; the deadlock below says so)
        why = ""
        if causes:
            why = " Root cause: " + " | ".join(f"[class {f.cls}] {f.message}" + (f"; missing: {f.missing}" if f.missing
                                                                              else "") for f in causes) + "."
            loc = causes[0].loc or loc
        if self.clusters_pending():
            lines.append(f"{self.clusters_pending()} clusters of the grid never started (at most "
                         f"{self.resident_clusters} run at once; they start as running ones exit)")
        return DeadlockError(head + " " + "; ".join(lines) + why,
                             loc, expected="each wait to be matched by the arrivals / transactions that complete it")

    def polled_barrier_causes(self) -> list:
        """At a livelock (warps polling test_wait / try_wait loops while nothing changes): the root causes the
        protocol history shows for the mbarriers whose current phase is stuck -- each barrier with activity in its
        current phase (arrivals, expect-tx or bytes) or a waiter on record (:meth:`tcsim.race.protocol.Protocol.
        deadlock_cause`, the same account a deadlock gets), each reported as a finding (outcome 'hang')."""
        causes = []
        for cta in self.ctas:
            for mb in list(cta.mbarriers.values()):
                rec = mb.record
                if rec is None or not mb.valid:
                    continue
                ph = rec.phases.get(mb.phase)
                active = ph is not None and (ph.arrivals or ph.expects or ph.deliveries)
                if not active and not rec.waiting:
                    continue
                f = self.protocol.deadlock_cause(cta, mb, "", "")
                if f is not None and all(f.key != c.key for c in causes):
                    causes.append(f)
        for f in causes:
            try:
                self.findings.report(f)
            except FindingError:
                pass
        return causes

    def _runaway(self) -> RunawayError:
        return self.watch.runaway(f"more than {self.max_instructions} warp-instructions executed")

    # ------------------------------------------------------------------------------------------ mbarrier guard
    def check_mbarrier_overlap(self, cta: Cta, offs: np.ndarray, nbytes: int, write: bool,
                               who: str = "plain store", side=None) -> None:
        """A write over the 8 bytes of a live mbarrier of ``cta``: a class-11 finding naming the barrier's init line
        (:meth:`tcsim.race.protocol.Protocol.store_over_barrier`); ``side``: the writer as an Access (or a callable
        giving it), None for an agent's write.  On the GPU the store simply overwrites the barrier's state; tcsim
        keeps its model of the barrier and goes on."""
        if not write or not cta.mbarriers:
            return
        if offs.size:
            lo, hi = int(offs.min()), int(offs.max()) + nbytes      # (no barrier in [lo, hi): nothing to test)
            if not any(mb.valid and lo < off + 8 and off < hi for off, mb in cta.mbarriers.items()):
                return
        for off, mb in cta.mbarriers.items():
            if mb.valid and ((offs < off + 8) & (offs + nbytes > off)).any():
                self.protocol.store_over_barrier(cta, mb, side() if callable(side) else side, who)

    # ------------------------------------------------------------------------------------------ special regs
    def special_register(self, ctx: ExecContext, sreg: ir.SpecialReg) -> np.ndarray:
        w = ctx.warp
        cta = w.cta
        name, comp = sreg.name, sreg.component
        axis = {"x": 0, "y": 1, "z": 2}.get(comp, 0)
        u32 = np.uint32

        def full(v, dt=u32):
            return np.full(WARP, v, dtype=dt)

        if name == "%tid":
            return w.tid[:, axis].astype(u32)
        if name == "%ntid":
            return full(self.block[axis])
        if name == "%laneid":
            return np.arange(WARP, dtype=u32)
        if name == "%warpid":
            return full(w.id)
        if name == "%nwarpid":
            return full(64)
        if name == "%ctaid":
            return full(cta.ctaid[axis])
        if name == "%nctaid":
            return full(self.grid[axis])
        if name == "%smid":
            return full(cta.index % int(self.arch_config.num_sms))
        if name == "%nsmid":
            return full(int(self.arch_config.num_sms))
        if name == "%gridid":
            return full(0, np.uint64)
        if name in ("%clock", "%clock_hi", "%clock64"):
            c = int(self.env.now)
            if name == "%clock64":
                return full(c, np.uint64)
            return full((c >> 32) & 0xFFFFFFFF if name == "%clock_hi" else c & 0xFFFFFFFF)
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            ns = int(self.env.now * 1000 / self.arch_config.sm_clock_mhz)
            if name == "%globaltimer":
                return full(ns, np.uint64)
            return full(ns & 0xFFFFFFFF if name.endswith("lo") else ns >> 32)
        if name.startswith("%lanemask_"):
            lane = np.arange(WARP, dtype=np.uint64)
            one = np.uint64(1)
            kind = name[len("%lanemask_"):]
            if kind == "eq":
                v = one << lane
            elif kind == "lt":
                v = (one << lane) - one
            elif kind == "le":
                v = (one << (lane + one)) - one
            elif kind == "gt":
                v = ~((one << (lane + one)) - one)
            elif kind == "ge":
                v = ~((one << lane) - one)
            else:
                raise UnsupportedError(f"special register {sreg} is not supported")
            return (v & np.uint64(0xFFFFFFFF)).astype(u32)
        cl = cta.cluster
        if name == "%cluster_ctarank":
            return full(cta.rank)
        if name == "%cluster_nctarank":
            return full(cl.size)
        if name == "%cluster_ctaid":
            d = cl.dims
            r = cta.rank
            return full((r % d[0], (r // d[0]) % d[1], r // (d[0] * d[1]))[axis])
        if name == "%cluster_nctaid":
            return full(cl.dims[axis])
        if name == "%clusterid":
            return full(cl.clusterid[axis])
        if name == "%nclusterid":
            return full(self.grid[axis] // self.cluster_dims[axis])
        if name == "%is_explicit_cluster":
            return full(1 if self.cluster_dims != (1, 1, 1) or "explicitcluster" in self.program.kernel.directives
                        or "reqnctapercluster" in self.program.kernel.directives else 0)
        am = self.address_map
        if name == "%dynamic_smem_size":
            return full(self.dynamic_smem)
        if name == "%total_smem_size":
            return full(am.total_smem_size(self.program.shared_static_size, self.dynamic_smem))
        if name == "%aggr_smem_size":
            return full(am.aggr_smem_size(self.program.shared_static_size, self.dynamic_smem))
        if name.startswith("%reserved_smem_offset_"):
            v = {"begin": am.reserved_smem_begin, "end": am.reserved_smem_end, "cap": am.reserved_smem,
                 "0": am.reserved_smem_0, "1": am.reserved_smem_1}.get(name[len("%reserved_smem_offset_"):])
            if v is None:
                raise UnsupportedError(f"special register {sreg} is not supported")
            return full(v)
        if name.startswith("%envreg") or name.startswith("%pm"):
            return full(0)
        raise UnsupportedError(f"special register {sreg} is not supported")


class _Stop(Exception):
    """Internal: unwinds simpy when a warp hits an error."""


class _Timeout(simpy.events.Timeout):
    """A timeout scheduled with an event priority of its own (simpy orders events of one cycle by priority, then
    by creation): how a schedule puts one warp before or after the others that issue in the same cycle."""

    def __init__(self, env, delay, priority):
        self.env = env
        self.callbacks = []
        self._value = None
        self._delay = delay
        self._ok = True
        env.schedule(self, priority, delay)


