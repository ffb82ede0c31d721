"""The fast execution tier: the reference warp processes, with lockstep groups (see :mod:`tcsim.fast`).

:class:`FastTier` is attached to a :class:`tcsim.engine.Simulation` built with ``tier="fast"``.  It

* lays the warps' registers out as one flat ``(warps, 32)`` array per register (each warp's ``regs`` entries are
  rows of it) and the CTAs' shared memories as rows of one ``(CTAs, bytes)`` array;
* runs each warp as the reference process does (:meth:`warp_process` is :meth:`Simulation._warp_process` with one
  change: a groupable instruction is recorded instead of executed, and runs at the next :meth:`flush`);
* runs the event loop (:meth:`run`), flushing the recorded instructions before any event other than a warp's issue.

Every warp-instruction is issued, timed, counted and ordered exactly as in the reference tier; only the execution
of the recorded instructions is moved to the flush, where nothing has observed their effects yet (the package
docstring gives the argument).
"""
from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import simpy
from heapq import heappush
from simpy.core import EmptySchedule
from simpy.events import NORMAL, URGENT

from tcsim.isa.errors import SyncError, TcsimError
from tcsim.isa.forms import family_of
from .batch import BATCHABLE, LOADS, WARP, BatchCtx, Fallback

#: what a group's semantics may raise when they are not lane-parallel or need what the group context lacks
_FAILOVER = (Fallback, ValueError, IndexError, TypeError, AttributeError, KeyError)


from .batch import TIME_SREGS as _TIME_SREGS  # noqa: E402


def _reads_time(ins) -> bool:
    """``ins`` reads a clock special register (its value is the cycle it executes in)."""
    from tcsim.isa import ir

    def walk(op):
        if isinstance(op, ir.SpecialReg):
            return op.name in _TIME_SREGS
        if isinstance(op, ir.Vector):
            return any(walk(e) for e in op.elems)
        return False
    return any(walk(op) for op in ins.operands)


class _Count:
    """The environment's event-id counter, readable (simpy's is an ``itertools.count``)."""

    __slots__ = ("n",)

    def __init__(self, start: int):
        self.n = start

    def __iter__(self):
        return self

    def __next__(self) -> int:
        self.n += 1
        return self.n


class _Gang(simpy.events.Event):
    """One queue entry standing for the issue events of several warps that the reference tier would have queued
    back to back (same cycle, same priority, consecutive ids): processing it resumes them in that order."""

    def __init__(self, tier, members: list, key: tuple):
        self.env = tier.sim.env
        self.callbacks = [tier._run_gang]
        self._value = None
        self._ok = True
        self.members = members
        self.key = key
        self.popped = False


class RowRegs(Mapping):
    """A warp's registers as rows ``i`` of the fast tier's flat ``(warps, 32)`` arrays (``flat``: register name ->
    array, replaced when the arrays grow; each access looks the row up, so nothing keeps a stale one).  Assigning a
    register copies the lanes into its row."""

    __slots__ = ("flat", "i")

    def __init__(self, flat: dict, i: int):
        self.flat = flat
        self.i = i

    def __getitem__(self, name: str) -> np.ndarray:
        return self.flat[name][self.i]

    def __setitem__(self, name: str, value) -> None:
        self.flat[name][self.i] = value

    def __contains__(self, name) -> bool:
        return name in self.flat

    def __iter__(self):
        return iter(self.flat)

    def __len__(self) -> int:
        return len(self.flat)


_UNBUILT = object()
#: what a warp's generator yields once, before its first instruction (FastTier.add_warps primes it)
_PRIMED = object()


class _Generated:
    """Per PC: the generated group code (tcsim.fast.codegen) a superstep runs for a SEM or STORE step, or None
    (the semantics run over the group context); built at the PC's first use (``TCSIM_FAST_NOGEN=1``: none)."""

    __slots__ = ("tier", "steps", "ops", "info", "dtypes", "off")

    def __init__(self, tier, steps: list):
        from ..semantics import DecodeInfo
        prog = tier.sim.program
        self.tier = tier
        self.steps = steps
        self.ops = [_UNBUILT] * tier.nbody
        self.info = DecodeInfo(prog.module, prog.kernel, prog.module.arch or "sm_100a", frozenset(), 0)
        self.dtypes = {name: a.dtype for name, a in tier.flat.items()}
        self.off = bool(os.environ.get("TCSIM_FAST_NOGEN"))

    def __getitem__(self, pc: int):
        op = self.ops[pc]
        if op is _UNBUILT:
            op = self.ops[pc] = self._build(pc)
        return op

    def _build(self, pc: int):
        from .codegen import bind_mem
        from .batch import SEM, STORE
        kind = self.steps[pc]
        if self.off or kind not in (SEM, STORE):
            return None
        cache = self.tier.sim.program.fast_code       # (shared by the launches of one cached program)
        key = (pc, kind)
        spec = cache.get(key, _UNBUILT)
        if spec is _UNBUILT:
            spec = cache[key] = self._spec(pc, kind)
        return bind_mem(spec, self.tier) if type(spec) is tuple else spec

    def _spec(self, pc: int, kind: int):
        """What :meth:`_build` caches for ``pc``: a generated function (pure), a memory access's parameters (a
        tuple, bound to this tier by tcsim.fast.codegen.bind_mem) or None."""
        from .codegen import native_mem, native_op
        from .batch import SEM
        ins = self.tier.sim.program.body[pc]
        if kind == SEM:
            return native_op(ins, self.info, self.dtypes) or native_mem(ins, self.info, self.dtypes)
        return native_mem(ins, self.info, self.dtypes)


class FastTier:
    #: the register mapping of warps whose registers are rows of the flat arrays (the run watch takes it from
    #: here: importing this module from tcsim.watch would make an import cycle)
    row_regs_type = RowRegs

    def __init__(self, sim):
        self.sim = sim
        prog = sim.program
        #: lockstep groups need one register file per warp (a kernel without device functions)
        self.enabled = prog.link is None or len(prog.link.functions) <= 1
        #: per PC: the family may run as a lockstep group (None: never), and whether it reads memory
        self.groupable = [None] * len(prog.body)
        self.collective = sim.collective
        self.nbody = len(prog.body)
        # the bulk issue of lockstep groups (_bulk) answers for the functional issue model, unperturbed
        from ..timing.functional import FunctionalModel
        self.bulk_ok = self.enabled and type(sim.timing) is FunctionalModel and not sim._perturbed \
            and sim._schedule_knobs is None and not os.environ.get("TCSIM_FAST_NOBULK")
        #: per PC: the target of a plain ``bra`` (issued by lockstep groups at once, _bulk)
        self.branch: dict = {}
        #: per PC: a ``st`` (a lockstep group stores at once, in the reference's lane and warp order, _bulk)
        self.store: dict = {}
        #: pending groups: pc -> list of (sequence number, warp)
        self.pending: dict = {}
        self.npending = 0
        self._seq = 0
        #: per PC: the step kind a lockstep superstep runs it as (tcsim.fast.lockstep), None: not in supersteps;
        #: computed at the first gang (it needs the register file's guard check)
        self.steps = None
        self.bar_index: dict = {}
        #: per PC: the straight run of generated code from it (tcsim.fast.lockstep._region), built on first use
        self.regions: dict = {}
        #: the compiled blocks' runner (tcsim.fast.blocks.Runner; False: none), built at the first full gang
        self.vm = None
        #: supersteps run, and the cycles they covered (statistics)
        self.supersteps = 0
        self.superstep_cycles = 0
        self.super_ok = self.bulk_ok and sim.max_instructions is None and \
            not os.environ.get("TCSIM_FAST_NOSUPER")
        self.groups = 0                  # groups executed together (statistics)
        self.grouped = 0                 # warp-instructions they held
        self.failovers = 0               # warp-instructions run warp by warp at a flush
        self._flush_ops: dict = {}       # per PC: the generated code a flush runs (_flush_op)
        self.native_runs = 0             # recorded instructions a flush ran as generated code (statistics)
        self.single_issues = 0           # issues that took the single-runnable-group shortcut (warp_process)
        # the warp driver's state (start / _tick / _run_gang)
        env = sim.env
        self._eid = _Count(next(env._eid))
        env._eid = self._eid
        self._last = None
        self._last_n = -1
        self.merge = True
        # the flat register file, PCs and live lanes (rows by warp index; capacity grows as CTAs start)
        self.flat = None
        self._by_dtype = None
        self.stacks: dict = {}
        self.nwarps = 0
        self.cap = 0
        self.smems: list = []
        #: the CTAs' shared windows as rows of a few arrays (tcsim.memory.StackedWindows; row = cta_pos)
        self.smem_stack = None
        self.cta_pos: dict = {}
        self.cta_rank = np.zeros(0, np.int64)
        self.cta_index = np.zeros(0, np.int64)
        self.guard_ok = None
        if not self.enabled:
            return
        if prog.fast_plan is None:              # (a pure function of the program: once per cached program)
            prog.fast_plan = self._plan()
        groupable, branch, store = prog.fast_plan
        self.groupable = list(groupable)
        self.branch = dict(branch)
        self.store = dict(store)

    def _plan(self) -> tuple:
        """Per PC: groupable (None, or whether it reads memory), the plain branches' targets, the stores."""
        sim = self.sim
        prog = sim.program
        groupable = [None] * len(prog.body)
        branch: dict = {}
        store: dict = {}
        for pc, ins in enumerate(prog.body):
            if pc >= len(prog.decoded) or prog.decoded[pc] is None or prog.syncish[pc]:
                continue
            if sim.collective[pc] is not None:
                continue
            try:
                fam = family_of(ins.opcode, tuple(ins.mods))
            except Exception:
                continue
            if _reads_time(ins):
                continue                    # (%clock, %globaltimer: a recorded instruction runs later)
            if fam in BATCHABLE:
                groupable[pc] = fam in LOADS
            elif fam == "bra" and ins.operands and getattr(ins.operands[0], "name", None) in prog.kernel.labels:
                branch[pc] = prog.kernel.labels[ins.operands[0].name]
            elif fam == "st":
                store[pc] = True
        return groupable, branch, store

    # ------------------------------------------------------------------------------------------ layout
    def add_warps(self, new: list) -> None:
        """Warps of CTAs that start now (launch order): give them their rows and queue their start, as the
        reference's processes' URGENT initialisations are queued."""
        sim = self.sim
        for w in new:
            w.fast_index = self.nwarps
            w.fast_pending = False
            self.nwarps += 1
        if self.enabled and new:
            self._layout(new)
        for w in new:
            w.fast_gen = self.warp_process(w)
            if sim._priority.get(w) is None:
                next(w.fast_gen)                    # (to its _PRIMED yield: no instruction runs, see warp_process)
        if new:
            # the start events, after the ones queued just before for the same cycle (the CTAs of clusters started
            # together: one gang, as their processes' initialisations come back to back in the reference)
            g = self._last
            if g is not None and self.merge and not g.popped and self._eid.n == self._last_n and \
                    g.key[0] == sim.env.now and g.key[1] == URGENT:
                g.members.extend(new)
            else:
                self._push(list(new), sim.env.now, URGENT)

    def regfile(self, i: int):
        """The register file of warp number ``i`` (creation order) when the tier lays registers out: rows of the
        flat arrays (:class:`RowRegs`), else None (the warp makes its own)."""
        if not self.enabled:
            return None
        if self.flat is None:
            cache = self.sim.program.fast_code
            dts = cache.get("regfile dtypes")
            if dts is None:                 # (one warp's registers: names, order and dtypes; once per program)
                from ..callstack import make_regfile
                tmpl = make_regfile(self.sim.program.kernel.regs)
                dts = cache["regfile dtypes"] = {name: a.dtype for name, a in tmpl.items()}
            self._dtypes = dict(dts)
            empty = {dt: np.zeros((0, WARP), dtype=dt) for dt in set(dts.values())}
            self.flat = {name: empty[dt] for name, dt in dts.items()}
        self._grow(i + 1)
        return RowRegs(self.flat, i)

    def reg_slots_by_dtype(self) -> dict:
        """Container dtype -> the register names stored in its stacked array (kernel order)."""
        by = self._by_dtype
        if by is None:
            by = {}
            for name, dt in self._dtypes.items():
                by.setdefault(np.dtype(dt), []).append(name)
            self._by_dtype = by
        return by

    def _grow(self, n: int) -> None:
        """Room for ``n`` warps in the flat arrays (registers, PCs, live lanes): when they are full they double;
        the laid-out warps' PCs and live lanes are pointed at the new rows (register rows are looked up at each
        access, :class:`RowRegs`)."""
        if n <= self.cap:
            return
        sim = self.sim
        if not self.cap:
            per = sim.cluster_dims[0] * sim.cluster_dims[1] * sim.cluster_dims[2]
            total = sim.grid[0] * sim.grid[1] * sim.grid[2]
            first = min(total, sim.resident_clusters * per) * sim._nwarps
        else:
            first = 0
        cap = max(n, 2 * self.cap, first)
        # the registers of one container dtype are the planes of one (registers, cap, 32) array (``stacks``): the
        # compiled blocks (tcsim.fast.blocks) name a register by (dtype, plane)
        stacks: dict = {}
        for dt, names in self.reg_slots_by_dtype().items():
            st = stacks[dt] = np.zeros((len(names), cap, WARP), dtype=dt)
            for j, name in enumerate(names):
                old = self.flat[name]
                st[j, :len(old)] = old
                self.flat[name] = st[j]
        self.stacks = stacks
        pcs = np.zeros((cap, WARP), dtype=np.int64)
        alive = np.zeros((cap, WARP), dtype=bool)
        old = sim.warps[:self.nwarps]
        if old:
            pcs[:len(old)] = self.pcs[:len(old)]
            alive[:len(old)] = self.alive[:len(old)]
            for w, p, a in zip(old, pcs, alive):
                w.pc = p
                w.alive = a
        self.pcs, self.alive = pcs, alive
        self.cap = cap

    def _layout(self, new: list) -> None:
        """PCs and live lanes of the warps ``new`` become rows of the flat arrays (their registers already are:
        :meth:`regfile`), and their CTAs' shared windows rows of the stacked windows."""
        sim = self.sim
        if self.guard_ok is None:
            from tcsim.isa import ir
            body = sim.program.body
            self.guard_ok = [ins.guard is None or (isinstance(ins.guard[0], ir.Reg) and ins.guard[0].name in
                                                   self.flat and self.flat[ins.guard[0].name].dtype == np.bool_)
                             for ins in body]
        self._grow(self.nwarps)
        for w in new:
            i = w.fast_index
            if not isinstance(w.regs, RowRegs) or w.regs.i != i:
                raise AssertionError(f"{w.label}: register file not laid out by the fast tier")
            self.pcs[i] = w.pc
            w.pc = self.pcs[i]
            self.alive[i] = w.alive
            w.alive = self.alive[i]
        # the CTAs' shared memories, by index (a group's lanes name theirs: cta_index)
        if self.smem_stack is None:
            from ..memory import StackedWindows
            per = sim.cluster_dims[0] * sim.cluster_dims[1] * sim.cluster_dims[2]
            total = sim.grid[0] * sim.grid[1] * sim.grid[2]
            self.smem_stack = StackedWindows(min(total, sim.resident_clusters * per))
        for w in new:
            if id(w.cta) not in self.cta_pos:
                self.cta_pos[id(w.cta)] = self.smem_stack.adopt(w.cta.smem)
                self.smems.append(w.cta.smem)
        ranks = {self.cta_pos[id(w.cta)]: w.cta.rank for w in new}
        if len(self.cta_rank) < len(self.smems):
            cr = np.zeros(len(self.smems), dtype=np.int64)
            cr[:len(self.cta_rank)] = self.cta_rank
            self.cta_rank = cr
        for j, r in ranks.items():
            self.cta_rank[j] = r
        ci = np.zeros(self.nwarps, dtype=np.int64)
        ci[:len(self.cta_index)] = self.cta_index
        for w in new:
            ci[w.fast_index] = self.cta_pos[id(w.cta)]
        self.cta_index = ci
        c0 = new[0].cta.smem
        self.smem_base = c0.base
        self.smem_end = c0.end

    def all_global(self, a: np.ndarray) -> bool:
        """Every generic address ``a`` lies outside the shared, local, param and const windows."""
        from .. import memory as M
        win = [M.SHARED_WINDOW, M.LOCAL_WINDOW, M.PARAM_WINDOW, M.CONST_WINDOW]
        for w in win:
            if ((a >= np.uint64(w)) & (a < np.uint64(w + M.WINDOW_SIZE))).any():
                return False
        return True

    # ------------------------------------------------------------------------------------------ flush
    def flush(self) -> None:
        """Execute every recorded instruction: each PC's warps as one group, a group that cannot run together warp
        by warp with the reference semantics; faults are raised in issue order."""
        if not self.npending:
            return
        pending = dict(self.pending)
        self.pending.clear()
        self.npending = 0
        sim = self.sim
        prog = sim.program
        errors = []
        for pc, items in pending.items():
            warps = [w for _, w in items]
            for w in warps:
                w.fast_pending = False
            op = self._flush_ops.get(pc, _UNBUILT)
            if op is _UNBUILT:
                op = self._flush_op(pc)
            if op is not None and self._run_native(op, warps):
                self.native_runs += 1
                if len(items) > 1:
                    self.groups += 1
                    self.grouped += len(items)
                continue
            if self.groupable[pc] is not None and len(items) > 1:
                ins = prog.body[pc]
                idx = np.fromiter((w.fast_index for w in warps), dtype=np.int64, count=len(warps))
                mask = np.stack([w.ctx.mask for w in warps])
                group = np.stack([w.ctx.group for w in warps])
                bctx = BatchCtx(self, ins, pc, idx, warps, mask, group)
                try:
                    prog.decoded[pc](bctx)
                except _FAILOVER:
                    pass
                except TcsimError:
                    pass
                else:
                    bctx.commit()
                    self.groups += 1
                    self.grouped += len(items)
                    continue
            for seq, w in items:
                self.failovers += 1
                ctx = w.ctx
                try:
                    prog.decoded[pc](ctx)
                except TcsimError as e:
                    from ..warp_turns import user_loc as _user_loc
                    ins = prog.body[pc]
                    e.with_context(loc=ins.loc, where=ctx.where, user_loc=_user_loc(ins))
                    errors.append((seq, e, w))
        if errors:
            errors.sort(key=lambda x: x[0])
            for _, e, w in errors:
                w.fast_failed = True
                sim._fail(e)

    def _flush_op(self, pc: int):
        """The generated code (tcsim.fast.codegen.native_op: register-only integer / logic / compare / mov / cvt
        and f32/f64 arithmetic forms, which cannot fault) that :meth:`flush` runs for the warps recorded at ``pc``
        instead of the semantics, or None; built once per cached program (``TCSIM_FAST_NOGEN=1``: none)."""
        op = None
        if self.enabled and self.groupable[pc] is False and self.flat is not None and \
                not os.environ.get("TCSIM_FAST_NOGEN"):
            cache = self.sim.program.fast_code
            key = (pc, "flush")
            op = cache.get(key, _UNBUILT)
            if op is _UNBUILT:
                from ..semantics import DecodeInfo
                from .codegen import native_op
                prog = self.sim.program
                info = DecodeInfo(prog.module, prog.kernel, prog.module.arch or "sm_100a", frozenset(), 0)
                op = cache[key] = native_op(prog.body[pc], info, {n: a.dtype for n, a in self.flat.items()})
        self._flush_ops[pc] = op
        return op

    def _run_native(self, op, warps: list) -> bool:
        """Run generated code ``op`` for the recorded ``warps`` (each under its issue mask); False when it declines
        (nothing written: the semantics run them)."""
        k = len(warps)
        if k == 1:
            i = warps[0].fast_index
            sel = slice(i, i + 1)
            mask = warps[0].ctx.mask[None]
        else:
            sel = np.fromiter((w.fast_index for w in warps), dtype=np.int64, count=k)
            mask = np.stack([w.ctx.mask for w in warps])
        if getattr(op, "full_only", False) and not mask.all():
            return False
        res = op(self.flat, sel)
        if res is None:
            return False
        dst, v = res
        r = self.flat[dst]
        if k == 1:
            np.copyto(r[sel], v, where=mask)
        else:
            rows = r[sel]
            np.copyto(rows, v, where=mask)
            r[sel] = rows
        return True

    # ------------------------------------------------------------------------------------------ warp driver
    # The warps are not simpy processes here: each warp's generator (:meth:`warp_process`) is resumed by this
    # driver, and their issue events are queued as gangs.  A warp's issue event joins the gang queued last when
    # nothing else was queued since and it is for the same cycle and priority -- where the reference tier's would
    # have come right after the gang's in the queue; a gang resumes its warps in order and, should one of them
    # queue an event that comes before the gang's place in the queue (an URGENT one, now), puts the rest back at
    # that very place (same cycle, priority and id).  So every event is processed in the reference tier's order.
    def single_step(self) -> None:
        """A debugger steps the run one event at a time: one warp per issue event from now on (the gangs already
        queued are split into their warps' events, at their places: ids between the gang's and the next)."""
        if not self.merge:
            return
        self.merge = False
        q = self.sim.env._queue
        for i, (t, p, eid, ev) in enumerate(list(q)):
            if isinstance(ev, _Gang) and len(ev.members) > 1:
                n = len(ev.members)
                q[i] = (t, p, eid, _Gang(self, ev.members[:1], (t, p, eid)))
                for j in range(1, n):
                    k = (t, p, eid + j / n)
                    q.append(k + (_Gang(self, ev.members[j:j + 1], k),))
        import heapq
        heapq.heapify(q)

    def _push(self, members: list, t, prio) -> None:
        eid = next(self._eid)
        g = _Gang(self, members, (t, prio, eid))
        heappush(self.sim.env._queue, (t, prio, eid, g))
        self._last = g
        self._last_n = self._eid.n

    def _tick(self, w, delay) -> None:
        env = self.sim.env
        t = env._now + delay
        p = w.fast_prio
        g = self._last
        # (the same cycle as the same number: a warp resumes with ``env.now`` the value its own event would carry)
        if g is not None and self.merge and not g.popped and self._eid.n == self._last_n and g.key[0] == t \
                and type(g.key[0]) is type(t) and g.key[1] == p:
            g.members.append(w)
        else:
            self._push([w], t, p)

    def _advance(self, w, value=None) -> None:
        """Resume warp ``w`` (with ``value``, the event it waited for) until it yields its next wait."""
        gen = w.fast_gen
        while True:
            try:
                y = gen.send(value)
            except StopIteration:
                return
            if isinstance(y, simpy.events.Event):
                if y.callbacks is None:             # already processed: go on at once, as a simpy process does
                    value = y._value
                    continue
                y.callbacks.append(lambda ev, w=w: self._advance(w, ev._value))
                return
            self._tick(w, y)
            return

    def _lockstep_steps(self) -> list:
        """Per PC, how a superstep runs the instruction (tcsim.fast.lockstep): SEM (a recorded kind: its semantics
        over the group), STORE, BRANCH (a plain ``bra``), BARRIER (``bar.sync`` / ``barrier.sync`` of a constant
        barrier, no thread count), EXIT (an unguarded ``exit``, or ``ret`` of the kernel), or None (never in a
        superstep)."""
        from tcsim.isa import ir
        from .batch import BARRIER, BRANCH, EXIT, SEM, STORE
        prog = self.sim.program
        cached = prog.fast_code.get("lockstep steps")     # (a function of the program: once per cached program)
        if cached is not None:
            steps = list(cached[0])
            self.bar_index.update(cached[1])
            self.native = _Generated(self, steps)
            return steps
        steps = [None] * self.nbody
        self.native = _Generated(self, steps)
        for pc, ins in enumerate(prog.body[:self.nbody]):
            if not self.guard_ok[pc]:
                continue
            if self.groupable[pc] is not None:
                steps[pc] = SEM
            elif pc in self.branch:
                steps[pc] = BRANCH
            elif pc in self.store:
                steps[pc] = STORE
            elif ins.opcode in ("exit", "ret") and ins.guard is None and prog.decoded[pc] is not None and \
                    not ins.mods and self.collective[pc] is None and prog.kernel.kind == "entry":
                steps[pc] = EXIT
            elif ins.opcode in ("bar", "barrier") and ins.guard is None and prog.decoded[pc] is not None:
                from tcsim.isa.barrier_forms import parse_bar
                try:
                    f = parse_bar(ins)
                except TcsimError:
                    continue
                if f.op == "sync" and f.b is None and f.dst is None and f.c is None and isinstance(f.a, ir.Imm) \
                        and f.a.kind == "int" and 0 <= int(f.a.value) < 16:
                    steps[pc] = BARRIER
                    self.bar_index[pc] = (int(f.a.value), bool(f.aligned))
        prog.fast_code["lockstep steps"] = (tuple(steps), dict(self.bar_index))
        return steps

    def _run_gang(self, gang) -> None:
        gang.popped = True
        members = gang.members
        key = gang.key
        q = self.sim.env._queue
        n = len(members)
        if self.super_ok and (key[1] == NORMAL or key[1] == URGENT) and self.merge:
            if self.steps is None:
                self.steps = self._lockstep_steps()
            from .lockstep import superstep
            if superstep(self, members):
                return
        bulk = self.bulk_ok and n > 1 and key[1] == NORMAL and self.merge
        i = 0
        while i < n:
            if bulk:
                j = self._bulk(members, i)
                if j > i:
                    i = j
                    continue
            self._advance(members[i])
            i += 1
            if i < n and q and q[0][:3] < key:
                # an event now comes before the rest of the gang: they go back at the gang's own place
                rest = _Gang(self, members[i:], key)
                heappush(q, key + (rest,))
                return

    def _bulk(self, members: list, i: int) -> int:
        """Issue, for the run of gang members from ``i`` on that are uniform warps standing at a recorded
        instruction or a plain ``bra`` (or, a run of its own, at one ``st``), that instruction -- what each one's
        :meth:`warp_process` iteration would do on the functional issue model (no stall, nothing to prepare, one
        cycle), for all of them at once: record it (or jump, or store), advance the PCs, count, queue the next
        issue.  Returns the index after the run (``i``: none)."""
        sim = self.sim
        bus = sim.bus
        if bus.active:
            w_ = bus._wanted
            if w_ is None or "inst" in w_ or "reg" in w_:
                return i
            mem_ok = "mem" not in w_
        else:
            mem_ok = True
        groupable = self.groupable
        collective = self.collective
        branch = self.branch
        nbody = self.nbody
        n = len(members)
        j = i
        run = []
        store_pc = None
        while j < n:
            w = members[j]
            upc = w.fast_upc
            if upc is None or not w.fast_at_top or w.fast_failed or upc >= nbody or collective[upc] is not None:
                break
            if not self.guard_ok[upc]:
                break
            gk = groupable[upc]
            if gk is not None and (mem_ok or not gk) and store_pc is None:
                pass
            elif upc in branch and store_pc is None:
                pass
            elif mem_ok and upc in self.store and (store_pc is None and not run or store_pc == upc):
                store_pc = upc
            else:
                break
            run.append(w)
            j += 1
        # the run ends before the retirement the run watch looks at (that one issues on its own, and the watch
        # checks after it as in the reference loop)
        room = sim.watch.next_check - sim.retired - 1
        if len(run) > room:
            run = run[:max(room, 0)]
            j = i + len(run)
        k = len(run)
        if k < 2:
            return i
        if store_pc is not None:
            if self.npending:
                self.flush()                # (the stores must not be seen by loads issued before them)
            if not self._store(run, store_pc):
                return i
        elif any(w.fast_pending for w in run):
            self.flush()
        prog = sim.program
        body = prog.body
        pending = self.pending
        # the members by PC (a gang is mostly at one PC)
        by_pc: dict = {}
        for w in run:
            by_pc.setdefault(w.fast_upc, []).append(w)
        seq0 = self._seq
        order = {id(w): seq0 + 1 + t for t, w in enumerate(run)}
        self._seq = seq0 + k
        lanes = 0
        npend = 0
        for pc, ws in by_pc.items():
            ins = body[pc]
            idx = np.fromiter((w.fast_index for w in ws), dtype=np.int64, count=len(ws))
            group = self.alive[idx]
            if pc == store_pc:
                mask = self._store_mask
            elif ins.guard is not None:
                g = self._guard(ins.guard[0], idx)
                mask = group & (~g if ins.guard[1] else g)
            else:
                mask = group
            pcs = self.pcs[idx]
            pcs[group] = pc + 1
            target = branch.get(pc)
            if target is not None:
                pcs[mask] = target
            self.pcs[idx] = pcs
            lanes += int(np.count_nonzero(mask))
            if target is None and pc != store_pc:
                items = pending.get(pc)
                if items is None:
                    items = pending[pc] = []
                npend += len(ws)
            for t, w in enumerate(ws):
                ctx = w.ctx
                ctx.ins = ins
                ctx.pc = pc
                ctx.group = group[t]
                ctx.mask = mask[t]
                ctx.extra_delay = 0
                w.retired += 1
                if target is not None:
                    m = mask[t]
                    if not m.any():
                        w.fast_upc = pc + 1
                    elif (m == group[t]).all():
                        w.fast_upc = target
                    else:                   # diverged: the general path picks the lanes from now on
                        w.fast_upc = None
                elif pc == store_pc:
                    w.fast_upc = pc + 1
                else:
                    items.append((order[id(w)], w))
                    w.fast_pending = True
                    w.fast_upc = pc + 1
        self.npending += npend
        sim.retired += k
        sim.lane_instructions += lanes
        # the next issues, one cycle on, in gang order: one gang (they are queued back to back)
        self._tick(run[0], 1)
        last = self._last
        if len(last.members) and last.members[-1] is run[0]:
            last.members.extend(run[1:])
        else:                                   # (not merged where expected: queue them one by one)
            for w in run[1:]:
                self._tick(w, 1)
        return j

    def _store(self, run: list, pc: int) -> bool:
        """Execute the ``st`` at ``pc`` for the warps ``run`` (their guard read now, as at issue) in one group;
        False (nothing written) when it must run warp by warp."""
        prog = self.sim.program
        ins = prog.body[pc]
        idx = np.fromiter((w.fast_index for w in run), dtype=np.int64, count=len(run))
        group = self.alive[idx]
        if ins.guard is not None:
            g = self._guard(ins.guard[0], idx)
            if g is None:
                return False
            mask = group & (~g if ins.guard[1] else g)
        else:
            mask = group
        bctx = BatchCtx(self, ins, pc, idx, run, mask, group)
        try:
            prog.decoded[pc](bctx)
        except (*_FAILOVER, TcsimError):
            return False
        if bctx._writes:                        # (a store writes no register)
            return False
        self._store_mask = mask
        self.groups += 1
        self.grouped += len(run)
        return True

    def _guard(self, op, idx):
        """The guard predicate of the warps ``idx`` as (k, 32) lanes (a predicate register or its negation,
        what PTX allows as a guard)."""
        from tcsim.isa import ir
        neg = False
        while isinstance(op, ir.Not):
            neg = not neg
            op = op.operand
        if not isinstance(op, ir.Reg):
            return None
        r = self.flat.get(op.name)
        if r is None or r.dtype != np.bool_:
            return None
        g = r[idx]
        return ~g if neg else g

    # ------------------------------------------------------------------------------------------ event loop
    def run(self) -> None:
        """``env.run()``, flushing the recorded instructions before every event that is not a warp's issue."""
        env = self.sim.env
        q = env._queue
        step = env.step
        try:
            while True:
                if self.npending and (not q or not isinstance(q[0][3], _Gang)):
                    self.flush()
                step()
        except EmptySchedule:
            pass
        finally:
            self.flush()

    # ------------------------------------------------------------------------------------------ warp process
    def warp_process(self, warp):
        """:meth:`tcsim.engine.Simulation._warp_process`, recording groupable instructions instead of executing
        them (keep the two in step: every change there is a change here).

        One shortcut: while every live lane of the warp stands at one PC, none waits or is parked and no spin focus
        is set (a *uniform* warp), the PC is kept as a number (``warp.fast_upc``) and the lane-mask bookkeeping
        is skipped: the group is the live lanes and the spin check cannot fire (no other lanes).  The warp is
        uniform after a recorded instruction issued by all its live lanes (recorded instructions neither jump nor
        block); any other instruction, a wake-up or a stall sends it back to the general path.

        A second one for a warp whose runnable lanes (live, not waiting, not parked) stand at one PC while others
        wait -- an elected lane running a producer loop while the rest wait at a barrier: after a recorded
        instruction issued by every runnable lane, with no spin focus, the PC and group are kept with the state
        they were chosen from (the warp's PCs, live, waiting and parked lanes, as bytes); while that state is
        unchanged at the next issue, the general path would choose the same PC and lanes (and its spin check
        cannot fire: no runnable lane is outside the group), so they are taken as they are."""
        from ..context import lanes_str
        from ..warp_turns import FOCUS_SLICE, SPIN_LIMIT, pcs_min, user_loc as _user_loc
        tier = self
        sim = self.sim
        ctx = warp.ctx
        prog = sim.program
        body = prog.body
        decoded = prog.decoded
        nbody = len(body)
        syncish = prog.syncish
        bus = sim.bus
        tm = sim.timing
        stall, prepare, issued = tm.stall, tm.prepare, tm.issued
        env = self.sim.env
        warp.focus = None
        warp.focus_left = 0
        warp.spin = 0
        collective = sim.collective
        perturbed = sim._perturbed
        owner = prog.link.owner if warp.callstack is not None else None
        prio = sim._priority.get(warp)
        groupable = tier.groupable if tier.enabled else [None] * nbody
        pending = tier.pending
        count_nonzero = np.count_nonzero
        warp.fast_failed = False
        warp.fast_upc = None
        warp.fast_semi = None
        warp.fast_at_top = False
        # (the process yields a number -- cycles until its next issue, an issue event the driver queues at the
        # warp's priority, :meth:`_tick` -- or an event to wait for)
        warp.fast_prio = NORMAL if prio is None else prio
        if prio is not None:
            yield 0
        else:
            # primed (add_warps runs the generator to here, before any instruction): a uniform warp stands at its
            # top at PC 0, and the start gang may run it in a lockstep superstep before it resumes here
            if tier.enabled and owner is None and warp.alive.any() and not warp.waiting.any() and \
                    not warp.parked.any() and not warp.pc[warp.alive].any():
                warp.fast_upc = 0
                warp.fast_at_top = True
            yield _PRIMED
            warp.fast_at_top = False
        while True:
            if warp.fast_pending:
                tier.flush()
            if warp.fast_failed:
                return
            pcs = warp.pc
            upc = warp.fast_upc
            semi = warp.fast_semi
            warp.fast_semi = None
            if upc is not None and upc < nbody and collective[upc] is None and owner is None:
                # a uniform warp (see the docstring): its group is every live lane
                pc = upc
                group = warp.alive.copy()
                uniform = True
                single = False
            elif semi is not None and warp.focus is None and owner is None and collective[semi[0]] is None and \
                    semi[2] == pcs.tobytes() + warp.alive.tobytes() + warp.waiting.tobytes() + \
                    warp.parked.tobytes():
                # a single runnable group (see the docstring): the state the general path below would choose from
                # is the one recorded after the last instruction, so it would choose the same PC and lanes
                pc = semi[0]
                group = semi[1].copy()
                runnable = group
                focus_left = warp.focus_left
                uniform = False
                single = True
                tier.single_issues += 1
            else:
                uniform = False
                single = False
                warp.fast_upc = None
                runnable = warp.alive & ~warp.waiting & ~warp.parked
                if not runnable.any():
                    if not warp.alive.any():
                        return
                    if warp.parked.any() and not (warp.alive & warp.waiting).any():
                        warp.force_pc = int(pcs_min(warp.pc, warp.parked))
                        warp.parked &= ~(warp.pc == warp.force_pc)
                        continue
                    warp.wake_event = env.event()
                    blocked_at, waits_before = env.now, list(warp.waits)
                    yield warp.wake_event
                    warp.wake_event = None
                    category, detail, wake = tm.released(warp, waits_before)
                    if wake or prio is not None:
                        yield wake
                    tm.stall_record(warp, category, detail, env.now - blocked_at, blocked_at)
                    continue
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
                    tier.flush()
                    sim._fail(err)
                    return
                if owner is not None and owner[pc] != warp.func_index:
                    warp.switch_function(int(owner[pc]))
                if collective[pc] is not None:
                    tier.flush()                            # (the member mask may be a register)
                    group = sim._converge(warp, pc, group, collective[pc])
                    if group is None:
                        continue
            now = env.now
            st = stall(warp, pc, now)
            if st is not None:
                if not uniform:
                    warp.focus_left = focus_left
                warp.fast_upc = None
                t0 = env.now
                yield st[0] - t0
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
            gk = groupable[pc]
            if gk is None:
                defer = False
            elif bus.active:
                w = bus._wanted
                defer = w is not None and "inst" not in w and "reg" not in w and not (gk and "mem" in w)
            else:
                defer = True
            if bus.active and not defer:
                ctx.writes = {}
            pre = prepare(ctx, pc)
            if defer:
                tier._seq += 1
                items = pending.get(pc)
                if items is None:
                    pending[pc] = [(tier._seq, warp)]
                else:
                    items.append((tier._seq, warp))
                tier.npending += 1
                warp.fast_pending = True
                # the warp stays (or becomes) uniform when all its live lanes issued this instruction
                if uniform or (warp.focus is None and not (group ^ warp.alive).any()):
                    warp.fast_upc = pc + 1
                else:
                    warp.fast_upc = None
                    # the group was every runnable lane: they all stand at pc + 1 now
                    if warp.focus is None and owner is None and pc + 1 < nbody and \
                            (single or not (group ^ runnable).any()):
                        warp.fast_semi = (pc + 1, group, pcs.tobytes() + warp.alive.tobytes() +
                                          warp.waiting.tobytes() + warp.parked.tobytes())
            else:
                warp.fast_upc = None
                if tier.npending:
                    tier.flush()
                nwaits = len(warp.waits)
                try:
                    decoded[pc](ctx)
                except TcsimError as e:
                    e.with_context(loc=ins.loc, where=ctx.where, user_loc=_user_loc(ins))
                    sim._fail(e)
                    return
                if len(warp.waits) > nwaits:
                    tm.label_waits(ctx, pc, warp.waits[nwaits:], pre)
                # uniform again when every live lane stands at one PC with nothing waiting, parked or in focus
                al = warp.alive
                if warp.focus is None and not warp.waits and not (warp.waiting & al).any() and \
                        not warp.parked.any():
                    p = pcs[al]
                    if p.size and (p == p[0]).all():
                        warp.fast_upc = int(p[0])
            gap, done = issued(ctx, pc, pre, now)
            # (a uniform warp has no lanes outside its group: the spin check cannot fire)
            # (the reference's test with its pure halves in the cheaper order: runnable lanes outside the group ahead
            # of this PC first -- none where the group is every runnable lane, an elected lane with the rest waiting)
            if not uniform and not single and warp.focus is None and (runnable & ~group & (pcs > pc)).any() and \
                    (pm := pcs[mask]).size and (pm <= pc).any():
                warp.spin += 1
                if warp.spin >= SPIN_LIMIT:
                    hi = int(pcs[runnable & ~group].max())
                    warp.focus = runnable & (pcs == hi)
                    warp.focus_left = FOCUS_SLICE
                    warp.spin = 0
            warp.retired += 1
            sim.retired += 1
            sim.lane_instructions += int(count_nonzero(mask))
            if bus.active and not defer:
                sim._retire_event(warp, pc, ins, mask, done)
            if sim.retired >= sim.watch.next_check:
                err = sim._watch_check()
                if err is not None:
                    sim._fail(err)
                    return
            if ctx.extra_delay:
                tm.stall_record(warp, "sleep", f"{ins.full_opcode} (line {ins.loc.line})", ctx.extra_delay,
                                env.now, pc)
            warp.fast_at_top = True                     # (resuming goes straight to the next issue: _bulk)
            yield gap + ctx.extra_delay + (sim._issue_delay(warp) if perturbed else 0)
            warp.fast_at_top = False


__all__ = ["FastTier"]
