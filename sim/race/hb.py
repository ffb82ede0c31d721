"""The happens-before race detector: an observer of the observation bus (:mod:`tcsim.observe`) that orders every
access by vector clocks (:mod:`tcsim.race.clocks`), keeps the shadow of what was touched
(:mod:`tcsim.race.shadow`) and reports each unordered or unfenced pair as a :class:`tcsim.findings.Finding`
(:mod:`tcsim.race.explain` words them).

Edges (PTX ISA 9.1 §8.9 base causality order and the sections named):

* ``bar.sync`` / ``bar.arrive`` / ``bar.red`` / ``barrier.cta`` (§9.7.13.1): every arriver's clock joins the
  generation; the threads that wait (not ``bar.arrive``) acquire it at the release;
* mbarrier (§9.7.13.15): arrive / arrive.expect_tx (local or remote), complete-tx of an async copy (its
  completion clock), the arrive of ``tcgen05.commit`` (the tensor pipe's completed ops, with the commit's implicit
  ``tcgen05.fence::before_thread_sync``, §9.7.16.9.2) and of ``cp.async.mbarrier.arrive`` (the thread's prior
  cp.async) release into the current phase; a wait (test_wait / try_wait, parity or state) that returns true
  acquires exactly the phase it observed;
* async ops (§9.7.9.25, §9.7.16): an op's issue snapshots the issuer's clock; its accesses carry the epoch of
  its unit's stream; ``cp.async.bulk.wait_group{.read}``, ``cp.async.wait_group`` / ``wait_all``,
  ``tcgen05.wait::ld`` / ``::st`` acquire the completions they wait for (``.read``: only the source reads);
* ``barrier.cluster.arrive{.release}`` / ``wait{.acquire}`` (§9.7.13.3; ``.relaxed`` arrives release nothing);
* release/acquire (§8.8): ``st.release`` / ``red.release`` / ``atom.release`` / ``.acq_rel`` publish the
  thread's clock at the location, ``ld.acquire`` / ``atom.acquire`` take it; relaxed strong accesses combine with
  ``fence.acq_rel`` / ``fence.sc`` / ``membar`` (fence-release before the write, fence-acquire after the read);
* fences that record knowledge rows: ``fence.proxy.async`` (PA), ``tcgen05.fence::before_thread_sync`` (TB) /
  ``::after_thread_sync`` (TA), ``fence.mbarrier_init`` (MI), ``fence.proxy.tensormap::generic.acquire`` (TM).

* programmatic dependent launch (§9.7.13 griddepcontrol; :mod:`tcsim.grid_dependency`): the global accesses of the
  prerequisite grids still possibly in flight (``sim.grid_dependency.prerequisites``, recorded from their runs)
  happen before a thread's accesses after its ``griddepcontrol.wait`` -- and only those: a thread's global access
  before its wait that conflicts with a prerequisite's access is class 20, naming both sides and the missing wait.

``elect.sync`` needs no edge: it only selects a lane of one warp, whose lanes share a clock.
``wgmma`` (§9.7.15): each warp's share of a ``wgmma.mma_async`` is an async op of its warpgroup's MMA unit (one
stream per warpgroup), joined to the thread's wgmma-groups by ``wgmma.commit_group``; ``wgmma.wait_group N``
acquires the completions of the groups it retires.  Its accumulator and register-A operands stay in flight until
then: any access to them by the warp meanwhile is class 19 (missing ``wgmma.wait_group``), and a register the warp
wrote that an MMA then uses with no ``wgmma.fence`` in between is class 19 too (missing ``wgmma.fence``,
§9.7.15.7.1); its SMEM reads are async-proxy reads like the tensor pipe's (classes 5 and 8).

Checks on each access (over its bytes / TMEM cells at once: numpy, or the shadow's compiled kernel): the earlier
conflicting accesses of other clock components (:meth:`ShadowSpace.access`; for a generic-proxy access of memory
only the unordered ones, the others being no hazard) are classified by :func:`tcsim.race.explain.classify` into the bug
classes of :data:`tcsim.findings.CLASSES` (2, 5, 6, 7, 8, 9, 16, 20, 21).  Besides: class 10 at every arrive /
complete-tx on another CTA's mbarrier (its init must be in the arriver's MI row), class 16 at a named-barrier arrival that an earlier generation of the same id,
in which the arriving warp took no part, is not ordered before (the id is shared by unrelated groups: who meets whom
is up to the schedule, :meth:`HappensBefore._bar_groups`), class 9 for a generic read released through an mbarrier
hand-off while it may still be in flight (:meth:`HappensBefore.read_in_flight_at_release`), class 14 at each CTA's exit
(peers' accesses to its SMEM and its own bulk async reads must be ordered before it), class 19 at any use of a
register a ``tcgen05.ld`` still writes (before ``tcgen05.wait::ld``) or a ``wgmma.mma_async`` still uses (module text),
class 11 for a write over the 8 bytes of an mbarrier that is not ordered after the thread's ``mbarrier.inval`` of it
(PTX ISA 9.1 §9.7.13.15.10), and class 4 instead of a plain data race when the writer's release arrive missed the
phase the reader consumed (:func:`tcsim.race.explain.count_short`).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from tcsim.findings import Access, Finding, lanes_text
from tcsim.isa import ir
from .clocks import AQ, MB, MI, PA, TA, TB, VC, Components
from .shadow import ASYNC, F_ATOMIC, F_TCGEN05, GENERIC, TMAP, AccessTable, ShadowSpace
from . import explain

_PROXY = {"generic": GENERIC, "async": ASYNC, "tensormap": TMAP}
_STRONG = ("relaxed", "acquire", "release", "acq_rel", "volatile", "sc")
TMEM_COLS = 512


def _lanes_str(lanes) -> str | None:
    """The event's lanes as a finding names them (:func:`tcsim.findings.lanes_text`); None without lanes."""
    return lanes_text(lanes) if lanes is not None and len(lanes) else None


class AccessRec:
    """One access (or sync operation) as a finding names it."""

    __slots__ = ("what", "loc", "cta", "warp", "lanes", "proxy", "unit", "cycle", "issuer", "op", "space", "line",
                 "imm", "pc")

    def __init__(self, what, loc, cta, warp, lanes, proxy, unit, cycle, issuer, op=None, space=None, imm=False):
        self.what, self.loc, self.cta, self.warp, self.lanes = what, loc, cta, warp, lanes
        self.proxy, self.unit, self.cycle, self.issuer, self.op, self.space = proxy, unit, cycle, issuer, op, space
        self.line = None if loc is None else loc.line
        self.imm = imm          # a store of an immediate value (every execution writes the same bytes)
        self.pc = None          # the instruction's index in the body (warp accesses)

    def side(self, where=None) -> Access:
        lanes = self.lanes
        if lanes is not None and not isinstance(lanes, str):
            lanes = _lanes_str(lanes)       # the raw lanes of a memory access, worded only for a finding
        return Access(what=self.what, loc=self.loc, cta=self.cta, warp=self.warp, lanes=lanes,
                      proxy=self.proxy, unit=self.unit, where=None if where is None else str(where),
                      cycle=float(self.cycle))


class WarpState:
    __slots__ = ("key", "reg", "comp", "clock", "_tld", "tld_seq", "_tst", "tst_seq", "_cpa", "cpa_seq", "fence_rel",
                 "pend_acq", "bars", "regs", "bulk_open", "bulk_groups", "cpa_open", "cpa_groups", "alloc_ncols",
                 "cluster_phase", "gdc_waited", "arrives", "wg_open", "wg_groups", "wg_regs", "wg_unfenced")

    def __init__(self, key, reg: Components):
        self.key = key
        self.comp = reg.component(("warp",) + key)
        self.clock = reg.clock()
        self.clock.set_at_least(self.comp, 1)
        # the warp's tcgen05.ld / tcgen05.st / cp.async streams: components registered at their first use (most
        # warps never issue them, and every clock is as wide as the components registered)
        self.reg = reg
        self._tld = self._tst = self._cpa = None
        self.tld_seq = 0
        self.tst_seq = 0
        self.cpa_seq = 0
        self.fence_rel = None        # clock at the last release fence (for relaxed strong writes)
        self.pend_acq = None         # clocks read by relaxed strong reads, acquired by the next acquire fence
        self.bars = deque(maxlen=8)  # named-barrier generations waited at: (barrier, generation, cycle, line, warps)
        self.regs: dict = {}         # register -> AccessRec of the tcgen05.ld still writing it
        self.bulk_open: list = []
        self.bulk_groups: deque = deque()
        self.cpa_open: list = []
        self.cpa_groups: deque = deque()
        self.alloc_ncols = None
        self.cluster_phase = None
        self.gdc_waited = np.zeros(32, dtype=bool)   # lanes past griddepcontrol.wait (tcsim.grid_dependency)
        self.arrives = deque(maxlen=16)  # the warp's recent mbarrier arrives: (epoch, pc, cycle, lanes, barrier)
        self.wg_open: list = []      # wgmma.mma_async ops not yet committed (§9.7.15.7.2)
        self.wg_groups: deque = deque()
        self.wg_regs: dict = {}      # register -> (AccessRec of the wgmma.mma_async using it, op id, role)
        self.wg_unfenced: dict = {}  # register -> AccessRec of the warp's last write since its last wgmma.fence

    @property
    def tld(self) -> int:
        if self._tld is None:
            self._tld = self.reg.component(("tcgen05.ld",) + self.key)
        return self._tld

    @property
    def tst(self) -> int:
        if self._tst is None:
            self._tst = self.reg.component(("tcgen05.st",) + self.key)
        return self._tst

    @property
    def cpa(self) -> int:
        if self._cpa is None:
            self._cpa = self.reg.component(("cp.async",) + self.key)
        return self._cpa

    @property
    def epoch(self) -> int:
        return int(self.clock.v[VC, self.comp])

    def tick(self) -> None:
        self.clock.v[VC, self.comp] += 1


class OpState:
    """An async op between its issue and its completion (and after, for late acquirers)."""

    __slots__ = ("op_id", "unit", "what", "clock", "streams", "issuer", "pc", "loc", "lane", "issued", "done",
                 "waiters", "cta", "reads_smem")

    def __init__(self, op_id, unit, what, clock, streams, issuer, pc, loc, lane, issued, cta):
        self.op_id, self.unit, self.what, self.clock, self.streams = op_id, unit, what, clock, streams
        self.issuer, self.pc, self.loc, self.lane, self.issued, self.cta = issuer, pc, loc, lane, issued, cta
        self.done = False
        self.waiters: list = []      # (WarpState, read_only)
        self.reads_smem = False

    def completion(self, read_only: bool = False):
        c = self.clock.copy()
        for kind, (comp, seq) in self.streams.items():
            if read_only and kind != "r":
                continue
            c.set_at_least(comp, seq)
        return c


class HappensBefore:
    """The detector (module docstring).  ``sim``: the :class:`tcsim.engine.Simulation` it observes (its program,
    CTAs and finding log)."""

    kinds = {"mem", "sync"}

    def __init__(self, sim):
        self.sim = sim
        self.bus = sim.bus
        self.program = sim.program
        self.reg = Components()
        self.warps: dict = {}
        self.ops: dict = {}
        self.recs: list = []
        self.spaces: dict = {}
        self.table = AccessTable()       # epoch and flags of each access in self.recs (tcsim.race.shadow)
        self.streams: dict = {}          # unit key -> [component, last sequence number]
        self.pipe_done: dict = {}        # tensor pipe home cta -> clock of its completed ops
        self.bars: dict = {}             # (cta, barrier, generation) -> [clock, waiters, {warp: arrival}]
        self.bar_history: dict = {}      # (cta, barrier) -> deque of its last completed (generation, warps, arrivals)
        self._bar_reported: set = set()
        self.mbars: dict = {}            # (cta, offset) -> MbarState
        self.cluster: dict = {}          # (cluster, phase) -> [clock, waiters]
        self.cluster_done: dict = {}     # (cluster, phase) -> clock
        self.locs: dict = {}             # (space key, address) -> clock released at the location
        self.tm_fences: dict = {}        # tensor-map address -> [(comp, epoch, clock)] of acquire fences on it
        self.lsu_arrives: dict = {}      # (cta, mbarrier, lane) -> deque of release clocks
        #: (cluster, SMEM unit of the barrier's first byte) -> (comp, epoch, inval AccessRec, init AccessRec): the
        #: mbarrier.inval each later write over the barrier's 8 bytes must happen after (class 11)
        self.invals: dict = {}
        self._pc_info: dict = {}
        self.ctas = sim.cta_index          # ctaid -> Cta, growing as CTAs start (the engine creates them lazily)
        self.regs_pending = 0
        #: the kernel follows the tcgen05 fence discipline (:func:`tcsim.race.explain.fence_discipline`)
        self.tcgen05_fenced = explain.fence_discipline(self.program)
        #: the global accesses of the prerequisite grids in flight (tcsim.grid_dependency.GridAccessLog) or None
        self.prerequisites = getattr(sim, "grid_dependency", None) and sim.grid_dependency.prerequisites
        self._gdc_reported: set = set()
        self._consumed: dict = {}        # (load pc, arrive pc) -> a destination of the load read in between
        self._space_recs: dict = {}      # shadow key of a cluster's SMEM / a CTA's TMEM -> the records it holds
        #: registers some wgmma.mma_async uses (accumulators, register A): watched through 'reg' events
        self.wg_names = frozenset(e.name for ins in self.program.body
                                  if ins.opcode == "wgmma" and ins.mods[:1] == ("mma_async",)
                                  for op in ins.operands[:2] for e in getattr(op, "elems", ())
                                  if isinstance(e, ir.Reg))
        if self.wg_names:
            self.kinds = self.kinds | {"reg"}
        #: the detector takes only the warps' own register accesses (:meth:`_reg`)
        self.reg_warp_only = True
        #: the registers whose accesses the detector watches (the bus publishes only those): wgmma accumulators and
        #: A fragments, and every tcgen05.ld destination (pending until tcgen05.wait::ld)
        self.reg_names = self.wg_names | frozenset(
            n for ins in self.program.body if ins.opcode == "tcgen05" and ins.mods[:1] == ("ld",) and ins.operands
            for n in ir.reg_names(ins.operands[0]))
        sim.cta_exit_hooks.append(self._cta_exit)
        self._free_recs: list = []      # ids of records of compacted spaces, reused by new records
        #: a grid larger than the finished CTAs kept whole is compacted (tcsim.retention): its clocks recycle the
        #: components of compacted clusters (tcsim.race.clocks), so they stay as wide as the live components
        from tcsim import retention
        g = getattr(sim, "grid", (1, 1, 1))
        self._forgotten = None
        if g[0] * g[1] * g[2] > retention.KEEP_FINISHED_CTAS and not sim.arch_config.timed:
            self.reg.start_recycling(self._recycle)
            self._forgotten = self.reg.component(("forgotten",))     # nobody advances it: 0 in every clock

    # ----------------------------------------------------------------------------------------- plumbing
    def on_event(self, ev) -> None:
        k = ev.kind
        if k == "mem":
            self._mem(ev)
        elif k == "sync":
            h = _SYNC.get(ev.op)
            if h is not None:
                h(self, ev)
            elif ev.warp is not None and ev.agent == "warp":
                w = self._warp(ev.cta, ev.warp)
                w.tick()
        elif k == "reg":
            self._reg(ev)

    def _warp(self, cta, warp) -> WarpState:
        key = (tuple(cta), int(warp))
        w = self.warps.get(key)
        if w is None:
            w = self.warps[key] = WarpState(key, self.reg)
        return w

    def _stream(self, key) -> list:
        s = self.streams.get(key)
        if s is None:
            s = self.streams[key] = [self.reg.component(key), 0]
        return s

    def _space(self, key) -> ShadowSpace:
        s = self.spaces.get(key)
        if s is None:
            s = self.spaces[key] = ShadowSpace(str(key), self.table, page_bits=20)
        return s

    def _ins(self, pc):
        body = self.program.body
        return body[pc] if pc is not None and 0 <= pc < len(body) else None

    def _pcinfo(self, pc):
        """(text, loc, sem, is tensor-map op) of the instruction at ``pc``."""
        r = self._pc_info.get(pc)
        if r is None:
            ins = self._ins(pc)
            if ins is None:
                r = ("?", None, None, False)
            else:
                mods = set(ins.mods)
                sem = next((s for s in _STRONG if s in mods), None)
                if sem is None and ins.opcode in ("atom", "red"):
                    sem = "relaxed"
                fo = ins.full_opcode
                r = (str(ins).strip(), ins.loc, sem, ".tensor" in fo and ins.opcode in ("cp", "cp.async",
                                                                                         "prefetch") or
                     fo.startswith(("cp.async.bulk.tensor", "cp.reduce.async.bulk.tensor", "prefetch.tensor",
                                    "cp.async.bulk.prefetch.tensor")))
            self._pc_info[pc] = r
        return r

    def _rec(self, rec: AccessRec) -> int:
        if self._free_recs:
            i = self._free_recs.pop()
            self.recs[i] = rec
            return i
        self.recs.append(rec)
        return len(self.recs) - 1

    def _recycle(self, comps) -> list:
        """The recycler of the clock components (:meth:`tcsim.race.clocks.Components.recycle`): ``comps`` are
        retired and no clock alive knows them; those an acquire fence on a tensor map still names stay (its check
        compares a clock with them), the others' recorded accesses move to the component nobody advances (the same
        judgement against every clock: unknown, or known for a value of 0) and they are returned, free."""
        held = {fc for fs in self.tm_fences.values() for fc, _, _ in fs}
        comps = [c for c in comps if c not in held]
        if comps:
            tab = self.table
            tab.comp[np.isin(tab.comp, comps)] = self._forgotten
        return comps

    def _cluster_of(self, cta):
        c = self.ctas.get(tuple(cta))
        return None if c is None else c.cluster

    def report(self, finding) -> None:
        self.sim.findings.report(finding)

    # ----------------------------------------------------------------------------------------- memory
    def _mem(self, ev) -> None:
        space = ev.space
        if space in ("local", "param", "const") or not ev.addrs:
            return
        op = ev.op
        write = ev.is_write or op == "tensormap.replace" or (op == "tensormap.cp" and space == "global")
        atomic = False
        proxy = _PROXY.get(ev.proxy, GENERIC)
        if ev.op_id is not None:
            o = self.ops.get(ev.op_id)
            if o is None:
                return
            clock = o.clock
            kind = "w" if write else "r"
            comp, val = o.streams.get(kind) or o.streams.get("x")
            if not write and space.startswith("shared"):
                o.reads_smem = True
            text = f"{o.what}"
            rec = AccessRec(text, o.loc, tuple(ev.cta) if o.cta is None else o.cta, o.issuer[1] if o.issuer else None,
                            None if o.lane is None else f"lane {o.lane}", ev.proxy, o.unit, ev.cycle, o.issuer,
                            op=o, space=space)
            ws = None
        elif ev.agent == "warp" and ev.warp is not None:
            ws = self._warp(ev.cta, ev.warp)
            text, loc, sem, tmap = self._pcinfo(ev.pc)
            clock = ws.clock
            if space == "tmem":
                ws.tld_seq += 1
                comp, val = ws.tld, ws.tld_seq
                self._pending_regs(ws, ev, text, loc)
            else:
                comp, val = ws.comp, ws.epoch
            if tmap and not write and ev.size == 128:
                # the TMA unit reads the map through the tensormap proxy: not this warp's own program order
                proxy = TMAP
                comp, val = self.reg.component(("tensormap",) + ws.key), ws.epoch
                tm_clock = [clk for fc, fv, clk in self.tm_fences.get(int(ev.addrs[0]), ()) if clock.knows(fc, fv)]
            if sem is not None:
                atomic = True
                self._strong(ws, ev, sem, write, op in ("atom",))
                comp, val = ws.comp, ws.epoch
                if not write:
                    return          # strong reads do not race (and are not recorded)
            if self.prerequisites is not None and space == "global":
                self._grid_dependency(ws, ev, write, text, loc)
            ins = self._ins(ev.pc)
            rec = AccessRec(text, loc, tuple(ev.cta), ev.warp, ev.lanes,
                            "tensormap" if proxy == TMAP else ev.proxy, "warp", ev.cycle, ws.key, space=space,
                            imm=ins is not None and ins.opcode == "st" and bool(ins.operands)
                            and isinstance(ins.operands[-1], ir.Imm))
            rec.pc = ev.pc
            if proxy == TMAP:
                rec.op = tm_clock
        else:
            return
        flags = proxy | (F_ATOMIC if atomic else 0)
        if space == "tmem":
            flags |= F_TCGEN05
            key = ("tmem", tuple(ev.cta))
            a = np.fromiter(ev.addrs, dtype=np.int64, count=len(ev.addrs))
            base = ((a >> 16) & 0xFFFF) * TMEM_COLS + (a & 0xFFFF)
            ncols = max(1, ev.size // 4)
            units = (base[:, None] + np.arange(ncols, dtype=np.int64)).ravel() if ncols > 1 else base
        else:
            if space.startswith("shared"):
                cl = self._cluster_of(ev.cta)
                key = ("smem", None if cl is None else cl.clusterid)
            else:
                key = ("global",)
            a = np.fromiter(ev.addrs, dtype=np.int64, count=len(ev.addrs))
            units = (a[:, None] + np.arange(ev.size, dtype=np.int64)).ravel() if ev.size > 1 else a
        if write and self.invals and key[0] == "smem":
            self._over_invalidated(key, units, clock, rec)
        info = self._rec(rec)
        if key[0] != "global":
            self._space_recs.setdefault(key, []).append(info)
        # a generic-proxy access of memory meets no hazard in an ordered earlier access (explain.classify): only
        # the unordered ones come back
        conflicts = self._space(key).access(units, clock.row(VC), comp, val, info, flags, write,
                                            only_unknown=proxy == GENERIC and space != "tmem")
        if conflicts:
            self._classify(conflicts, key, rec, clock, flags, write, ws)

    def _grid_dependency(self, ws, ev, write, text, loc) -> None:
        """Class 20: a global access of a thread that has not executed griddepcontrol.wait, against the accesses
        of the prerequisite grids in flight (module docstring)."""
        for a, lane in zip(ev.addrs, ev.lanes or (None,) * len(ev.addrs)):
            if lane is not None and ws.gdc_waited[int(lane)]:
                continue
            prior = self.prerequisites.conflict(int(a), int(a) + int(ev.size), write)
            if prior is None:
                continue
            key = (prior.line, ev.line)
            if key in self._gdc_reported:
                return
            self._gdc_reported.add(key)
            self.report(explain.grid_dependency_race(prior, ev, text, loc, int(a), write))
            return

    def _griddep_wait(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        for ln in (ev.detail.get("lanes") or ev.lanes or ()):
            ws.gdc_waited[int(ln)] = True
        ws.tick()

    def _classify(self, conflicts, key, rec, clock, flags, write, ws) -> None:
        for c in conflicts:
            prev = self.recs[c.info]
            f = explain.classify(self, c, prev, rec, clock, flags, write, key)
            if f is not None and f.cls == 21:
                f = explain.count_short(self, prev, rec, f) or f
            if f is not None:
                self.report(f)

    def _strong(self, ws, ev, sem, write, rmw) -> None:
        """Release / acquire through a location (§8.8): a release (or fenced relaxed) write publishes the
        thread's clock there; an acquire (or later fenced relaxed) read takes it."""
        cl = self._cluster_of(ev.cta)
        sp = ("smem", None if cl is None else cl.clusterid) if ev.space.startswith("shared") else ("global",)
        for a in sorted(set(ev.addrs)):
            lk = (sp, a)
            if not write or rmw or ev.op in ("atom",):
                src = self.locs.get(lk)
                if src is not None:
                    if sem in ("acquire", "acq_rel", "sc"):
                        ws.clock.join(src)
                    else:
                        ws.pend_acq = src.copy() if ws.pend_acq is None else ws.pend_acq.join(src)
            if write:
                if sem in ("release", "acq_rel", "sc"):
                    rel = ws.clock
                else:
                    rel = ws.fence_rel
                if rel is not None:
                    cur = self.locs.get(lk)
                    self.locs[lk] = rel.copy() if cur is None else cur.join(rel)
        ws.tick()

    # ----------------------------------------------------------------------------------------- registers
    def _pending_regs(self, ws, ev, text, loc) -> None:
        """A tcgen05.ld's destination registers stay pending until tcgen05.wait::ld (PTX ISA 9.1 §9.7.16.8.3,
        §9.7.16.8.5): watch register accesses of the warp meanwhile."""
        ins = self._ins(ev.pc)
        if ins is None or not ins.operands:
            return
        dst = ins.operands[0]
        elems = getattr(dst, "elems", (dst,))
        rec = AccessRec(text, loc, tuple(ev.cta), ev.warp, ev.lanes, "async", "warp", ev.cycle, ws.key)
        rec.op = ev.pc
        rec.space = ws.tld_seq          # this load's sequence number on the warp's tcgen05.ld stream
        for e in elems:
            name = getattr(e, "name", None)
            if name is not None:
                ws.regs[name] = rec
        if ws.regs and "reg" not in self.kinds:
            self.kinds = self.kinds | {"reg"}
            self.bus.refresh()

    def _regs_done(self, ws) -> None:
        if ws.regs:
            ws.regs.clear()
            if "reg" in self.kinds and not self.wg_names and not any(w.regs for w in self.warps.values()):
                self.kinds = self.kinds - {"reg"}
                self.bus.refresh()

    def _reg(self, ev) -> None:
        if ev.agent != "warp":
            return                   # an async unit's own register accesses (the wgmma completion)
        names = ev.names
        if len(names) == 1:
            self._reg_one(ev, names[0])
            return
        for name in names:          # a register list written together: each register as its own access
            self._reg_one(ev, name)

    def _reg_one(self, ev, name: str) -> None:
        if self.wg_names and name in self.wg_names:
            self._wg_reg(ev, name)
        ws = self.warps.get((tuple(ev.cta), int(ev.warp)))
        if ws is None or not ws.regs:
            return
        rec = ws.regs.get(name)
        if rec is None or rec.op == ev.pc:
            return
        # ptxas orders a use of a tcgen05.ld destination after the load (register scoreboard; Triton and CuTe DSL
        # kernels rely on it): the load is complete from here on, for its registers and its TMEM reads
        for r in [r for r, x in ws.regs.items() if x is rec]:
            del ws.regs[r]
        ws.clock.set_at_least(ws.tld, rec.space)
        text, loc, _, _ = self._pcinfo(ev.pc)
        use = AccessRec(text, loc, tuple(ev.cta), ev.warp, _lanes_str(ev.lanes), None, "warp", ev.cycle, ws.key)
        self.report(explain.register_in_flight(rec, use, name, ev.write))
        if not self.wg_names and not any(w.regs for w in self.warps.values()) and "reg" in self.kinds:
            self.kinds = self.kinds - {"reg"}
            self.bus.refresh()

    # ----------------------------------------------------------------------------------------- wgmma registers
    def _wg_reg(self, ev, name: str) -> None:
        """A warp instruction touches register ``name``, which some wgmma.mma_async uses (PTX ISA 9.1 §9.7.15.5.2,
        §9.7.15.7.1)."""
        ws = self._warp(ev.cta, ev.warp)
        pend = ws.wg_regs.get(name)
        text, loc, _, _ = self._pcinfo(ev.pc)
        use = AccessRec(text, loc, tuple(ev.cta), ev.warp, _lanes_str(ev.lanes), None, "warp", ev.cycle, ws.key)
        if pend is not None:
            rec, op_id, role = pend
            for r in [r for r, x in ws.wg_regs.items() if x[1] == op_id]:
                del ws.wg_regs[r]           # one finding per MMA
            self.report(explain.wgmma_register_in_flight(rec, use, name, ev.write, role))
        if ev.write:
            ws.wg_unfenced[name] = use

    def _wg_issue(self, ws, o, ev) -> None:
        """A wgmma.mma_async share issued by warp ``ws``: its registers are in flight from now; the ones the warp
        wrote since its last wgmma.fence make the 'missing wgmma.fence' finding."""
        rec = AccessRec(o.what, o.loc, ws.key[0], ws.key[1], None, "async", "wgmma", ev.cycle, ws.key)
        d = ev.detail
        roles = [(r, "accumulator") for r in d.get("d_regs") or ()] + [(r, "A fragment") for r in
                                                                        d.get("a_regs") or ()]
        for r, role in roles:
            w = ws.wg_unfenced.pop(r, None)
            if w is not None:
                self.report(explain.wgmma_unfenced(w, rec, r, role))
                for r2, _ in roles:
                    ws.wg_unfenced.pop(r2, None)
        for r, role in roles:
            ws.wg_regs[r] = (rec, o.op_id, role)

    # ----------------------------------------------------------------------------------------- async ops
    def _async_issue(self, ev) -> None:
        unit = ev.unit or ev.agent
        iw = ev.issuer_warp
        icta = ev.detail.get("issuer_cta")
        cta = tuple(ev.cta)
        ws = self._warp(cta, iw) if isinstance(iw, int) else None
        what = ev.what or ev.detail.get("what") or unit
        if unit == "tma":
            r = self._stream(("tma.read", cta))
            w = self._stream(("tma.write", cta))
            r[1] += 1
            w[1] += 1
            streams = {"r": (r[0], r[1]), "w": (w[0], w[1])}
        elif unit == "tensor_pipe":
            s = self._stream(("tensor_pipe", cta))
            s[1] += 1
            streams = {"x": (s[0], s[1])}
        elif unit == "tcgen05" and ws is not None:
            ws.tst_seq += 1
            streams = {"x": (ws.tst, ws.tst_seq)}
        elif unit == "wgmma" and ws is not None:
            s = self._stream(("wgmma", cta, ws.key[1] // 4))
            s[1] += 1
            streams = {"x": (s[0], s[1])}
        elif ws is not None and ev.agent == "lsu":
            ws.cpa_seq += 1
            streams = {"x": (ws.cpa, ws.cpa_seq)}
        else:
            s = self._stream((unit, cta))
            s[1] += 1
            streams = {"x": (s[0], s[1])}
        clock = ws.clock.copy() if ws is not None else self.reg.clock()
        loc = self._pcinfo(ev.issuer_pc)[1] if ev.issuer_pc is not None else None
        o = OpState(ev.op_id, unit, what, clock, streams, None if ws is None else ws.key, ev.issuer_pc, loc,
                    ev.detail.get("issuer_lane"), ev.cycle, tuple(icta) if icta is not None else
                    (ws.key[0] if ws is not None else cta))
        self.ops[ev.op_id] = o
        if ws is not None:
            if unit == "tma" and "bulk_group" in str(what):
                ws.bulk_open.append(o)
            elif ev.agent == "lsu":
                ws.cpa_open.append(o)
            elif unit == "wgmma":
                ws.wg_open.append(o)
                self._wg_issue(ws, o, ev)
            ws.tick()

    def _async_complete(self, ev) -> None:
        o = self.ops.get(ev.op_id)
        if o is None:
            return
        o.done = True
        if o.unit == "tensor_pipe":
            k = tuple(ev.cta)
            c = self.pipe_done.get(k)
            self.pipe_done[k] = o.completion() if c is None else c.join(o.completion())
        for ws, read_only in o.waiters:
            ws.clock.join(o.completion(read_only))
        o.waiters.clear()

    def _group_wait(self, ev, bulk) -> None:
        ws = self._warp(ev.cta, ev.warp)
        keep = int(ev.detail.get("n", 0) or 0)
        read_only = bool(ev.detail.get("read")) if bulk is True else False
        if bulk == "wgmma":
            opened, groups = ws.wg_open, ws.wg_groups
            older = list(groups)[:max(len(groups) - keep, 0)]
            done = {o.op_id for g in older for o in g}
            for r in [r for r, x in ws.wg_regs.items() if x[1] in done]:
                del ws.wg_regs[r]
        else:
            opened, groups = (ws.bulk_open, ws.bulk_groups) if bulk else (ws.cpa_open, ws.cpa_groups)
        if not bulk and ev.detail.get("all"):
            groups.append(list(opened))
            opened.clear()
        older = list(groups)[:max(len(groups) - keep, 0)]
        for g in older:
            for o in g:
                if o.done:
                    ws.clock.join(o.completion(read_only))
                else:
                    o.waiters.append((ws, read_only))
        if not read_only:
            for _ in range(len(older)):
                groups.popleft()
        ws.tick()

    def _group_commit(self, ev, bulk) -> None:
        ws = self._warp(ev.cta, ev.warp)
        if bulk == "wgmma":
            ws.wg_groups.append(list(ws.wg_open))
            ws.wg_open.clear()
        elif bulk:
            ws.bulk_groups.append(list(ws.bulk_open))
            ws.bulk_open.clear()
        else:
            ws.cpa_groups.append(list(ws.cpa_open))
            ws.cpa_open.clear()
        ws.tick()

    # ----------------------------------------------------------------------------------------- barriers
    def _bar_arrive(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        gen = ev.detail.get("generation")
        cta = tuple(ev.cta)
        k = (cta, ev.barrier, gen)
        st = self.bars.get(k)
        if st is None:
            st = self.bars[k] = [ws.clock.copy(), [], {}]
        else:
            st[0].join(ws.clock)
        if ev.warp not in st[2]:
            st[2][ev.warp] = (ws.comp, ws.epoch, ev.pc, ev.cycle, ev.lanes)
            hist = self.bar_history.get((cta, ev.barrier))
            if hist:
                self._bar_groups(ev, ws, hist)
        if ev.detail.get("form") != "arrive":
            st[1].append(ws)
        ws.tick()

    def _bar_release(self, ev) -> None:
        k = (tuple(ev.cta), ev.barrier, ev.detail.get("generation"))
        st = self.bars.pop(k, None)
        if st is None:
            return
        clock, waiters, arrivals = st
        line = None
        warps = frozenset(arrivals)
        for ws in waiters:
            ws.clock.join(clock)
            ws.bars.append((ev.barrier, k[2], ev.cycle, warps, line))
        hist = self.bar_history.get(k[:2])
        if hist is None:
            hist = self.bar_history[k[:2]] = deque(maxlen=4)
        hist.append((k[2], warps, arrivals))

    def _bar_groups(self, ev, ws, hist) -> None:
        """Class 16, a named-barrier id shared by unrelated groups (PTX ISA 9.1 §9.7.13.1: a barrier generation
        completes with whichever threads arrive first, up to its count): warp ``ws`` arrives at a barrier id whose
        earlier generation it took no part in, and that generation's arrivals are not ordered before this one -- in
        another schedule this arrival would have counted in that generation in place of one of its warps, so the
        generation's membership is up to timing.  Arrivals ordered after the other group's (a barrier both groups
        take part in between the two uses of the id) are a legitimate reuse of the id; a group meeting at the id
        again and again (loop iterations, a bar.arrive producer and bar.sync consumers) never triggers it."""
        key = (tuple(ev.cta), ev.barrier)
        if key in self._bar_reported:
            return
        for gen, warps, arrivals in reversed(hist):
            if ev.warp in warps:
                continue
            unordered = [w for w, a in arrivals.items() if not ws.clock.knows(a[0], a[1])]
            if not unordered:
                continue
            self._bar_reported.add(key)
            others = [self._arrival_rec(ev.cta, w, a) for w, a in sorted(arrivals.items())]
            self.report(explain.shared_barrier_id(ev.barrier, tuple(ev.cta), gen, others, unordered,
                                                  self._sync_rec(ev, ws), ev.detail.get("generation")))
            return

    def _arrival_rec(self, cta, warp, arrival) -> AccessRec:
        comp, epoch, pc, cycle, lanes = arrival
        text, loc, _, _ = self._pcinfo(pc)
        return AccessRec(text, loc, tuple(cta), warp, _lanes_str(lanes), None, "warp", cycle, (tuple(cta), warp))

    # ----------------------------------------------------------------------------------------- mbarriers
    def _mb(self, cta, off):
        k = (tuple(cta), off)
        st = self.mbars.get(k)
        if st is None:
            st = self.mbars[k] = {"acc": None, "phases": {}, "init": None, "completed": 0}
        return st

    def _mb_release(self, st, clock) -> None:
        st["acc"] = clock.copy() if st["acc"] is None else st["acc"].join(clock)

    def _mbarrier_init(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        if self.invals:
            self.invals.pop(self._smem_unit(ev.target_cta or ev.cta, ev.mbarrier), None)
        st = self._mb(ev.target_cta or ev.cta, ev.mbarrier)
        st["acc"] = None
        st["phases"] = {}
        st["completed"] = 0
        text, loc, _, _ = self._pcinfo(ev.pc)
        st["init"] = (ws.comp, ws.epoch, AccessRec(text, loc, tuple(ev.cta), ev.warp, _lanes_str(ev.lanes), None,
                                                   "warp", ev.cycle, ws.key))
        ws.tick()

    def _remote_check(self, ev, st, clock, arriver_cta, rec_fn) -> None:
        init = st["init"]
        target = tuple(ev.target_cta or ev.cta)
        if init is None or arriver_cta is None or tuple(arriver_cta) == target:
            return
        comp, val, irec = init
        if clock.knows(comp, val, MI):
            return
        self.report(explain.init_not_visible(irec, rec_fn(), clock.knows(comp, val, VC)))

    def _mbarrier_arrive(self, ev) -> None:
        st = self._mb(ev.target_cta or ev.cta, ev.mbarrier)
        if ev.agent == "warp":
            ws = self._warp(ev.cta, ev.warp)
            self._remote_check(ev, st, ws.clock, ev.cta, lambda: self._sync_rec(ev, ws))
            self._mb_release(st, ws.clock)
            ws.arrives.append((ws.epoch, ev.pc, ev.cycle, ev.lanes, ev.mbarrier))
            ws.tick()
        elif ev.agent == "tensor_pipe":
            o = self.ops.get(ev.op_id)
            c = self.pipe_done.get(tuple(ev.cta))
            rel = (o.completion() if o is not None else self.reg.clock()).join(c)
            if o is not None:
                self._remote_check(ev, st, rel, o.cta, lambda: self._op_rec(o, ev, "the commit's arrive"))
            self._mb_release(st, rel)
        elif ev.agent == "lsu":
            q = self.lsu_arrives.get((tuple(ev.cta), ev.mbarrier, ev.detail.get("lane")))
            if q:
                self._mb_release(st, q.popleft())

    def _cp_async_mbarrier_arrive(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        c = ws.clock.copy()
        c.set_at_least(ws.cpa, ws.cpa_seq)
        self.lsu_arrives.setdefault((tuple(ev.cta), ev.mbarrier, ev.detail.get("lane")), deque()).append(c)
        ws.tick()

    def _mbarrier_complete_tx(self, ev) -> None:
        st = self._mb(ev.target_cta or ev.cta, ev.mbarrier)
        if ev.agent == "warp":
            ws = self._warp(ev.cta, ev.warp)
            self._mb_release(st, ws.clock)
            ws.tick()
            return
        o = self.ops.get(ev.op_id)
        if o is None:
            return
        rel = o.completion()
        self._remote_check(ev, st, rel, o.cta, lambda: self._op_rec(o, ev, "complete-tx"))
        self._mb_release(st, rel)

    def _mbarrier_phase(self, ev) -> None:
        st = self._mb(ev.target_cta or ev.cta, ev.mbarrier)
        done = ev.detail.get("completed")
        if not isinstance(done, int):
            done = (ev.phase - 1) if isinstance(ev.phase, int) else st["completed"]
        ph = st["phases"]
        ph[done] = st["acc"] if st["acc"] is not None else self.reg.clock()
        st["acc"] = None
        st["completed"] = done + 1
        for k in [k for k in ph if k < done - 3]:
            del ph[k]

    def _mbarrier_wait(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        if ev.detail.get("done"):
            st = self.mbars.get((tuple(ev.target_cta or ev.cta), ev.mbarrier))
            if st is not None and st["phases"]:
                arg = ev.detail.get("arg")
                form = str(ev.detail.get("form", ""))
                ph = st["phases"]
                if "parity" in form and arg is not None:
                    cand = [k for k in ph if k % 2 == int(arg) & 1]
                    k = max(cand) if cand else None
                elif arg is not None and int(arg) in ph:
                    k = int(arg)
                else:
                    k = max(ph)
                if arg is None and "parity" in form:
                    k = max(ph)
                if k is not None:
                    c = ph[k]
                    ws.clock.join(c)
                    v = ws.clock.v
                    np.maximum(v[MB], c.row(VC), out=v[MB])
                    if ev.detail.get("sem") != "relaxed":
                        # an acquire wait: the phase's releases are ordered before the thread's later operations
                        # (a .relaxed one orders execution only, §9.7.13.15.16)
                        np.maximum(v[AQ], c.row(VC), out=v[AQ])
        ws.tick()

    def _mbarrier_reset(self, ev) -> None:
        st = self.mbars.pop((tuple(ev.target_cta or ev.cta), ev.mbarrier), None)
        if ev.warp is not None:
            ws = self._warp(ev.cta, ev.warp)
            unit = self._smem_unit(ev.target_cta or ev.cta, ev.mbarrier)
            if unit is not None:
                text, loc, _, _ = self._pcinfo(ev.pc)
                inval = AccessRec(text, loc, tuple(ev.cta), ev.warp, _lanes_str(ev.lanes), None, "warp", ev.cycle,
                                  ws.key)
                init = st["init"][2] if st is not None and st.get("init") is not None else None
                self.invals[unit] = (ws.comp, ws.epoch, inval, init)
            ws.tick()

    def _smem_unit(self, cta, offset):
        """(cluster id, shadow unit) of SMEM ``offset`` of ``cta`` (the units the detector keys shared memory by:
        cluster rank << 24 | offset), or None when the CTA is unknown."""
        c = self.ctas.get(tuple(cta))
        if c is None:
            return None
        cl = c.cluster
        return (None if cl is None else cl.clusterid, (int(getattr(c, "rank", 0) or 0) << 24) | int(offset))

    def _over_invalidated(self, key, units, clock, rec) -> None:
        """A write over the 8 bytes of an mbarrier that some thread invalidated: the write must happen after that
        mbarrier.inval (PTX ISA 9.1 §9.7.13.15.10: the memory of an mbarrier object may be reused only once it is
        invalidated), else it may land on the live barrier -- class 11."""
        for (clid, u0), (comp, val, inval, init) in self.invals.items():
            if clid != key[1] or not ((units >= u0) & (units < u0 + 8)).any():
                continue
            if clock.knows(comp, val):
                continue
            sides = tuple(r.side() for r in (init, inval, rec) if r is not None)
            self.report(Finding(
                11, f"{explain._at(rec)} writes the 8 bytes of the mbarrier that {explain._at(inval)} invalidates, "
                    f"with no happens-before edge from the mbarrier.inval to the write: the write may land on the live "
                    f"barrier (its phase, counts and waiters become garbage on the GPU)", sides,
                missing=f"a barrier (bar.sync) or another happens-before edge ordering the mbarrier.inval at line "
                        f"{inval.line} before the write at line {rec.line} that reuses the barrier's bytes",
                fix=f"synchronise the threads after the mbarrier.inval at line {inval.line} (bar.sync) before any "
                    f"thread reuses the barrier's memory",
                key=(11, "inval-order", inval.line, rec.line)))

    # ----------------------------------------------------------------------------------------- cluster barrier
    def _cluster_arrive(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        cl = self._cluster_of(ev.cta)
        ph = ev.phase
        ws.cluster_phase = ph
        k = (None if cl is None else cl.clusterid, ph)
        st = self.cluster.get(k)
        if st is None:
            st = self.cluster[k] = [self.reg.clock(), []]
        # a .relaxed arrive still orders execution (what a CTA's lifetime needs, and what it releases after a
        # release fence such as fence.mbarrier_init.release.cluster): joined like a release (never a false report)
        st[0].join(ws.clock)
        ws.tick()

    def _cluster_wait(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        cl = self._cluster_of(ev.cta)
        k = (None if cl is None else cl.clusterid, ws.cluster_phase)
        rel = self.cluster_done.get(k)
        acquire = ev.detail.get("sem") != "relaxed"
        if rel is not None:
            if acquire:
                ws.clock.join(rel)
        else:
            st = self.cluster.get(k)
            if st is not None and acquire:
                st[1].append(ws)
        ws.tick()

    def _cluster_release(self, ev) -> None:
        cl = self._cluster_of(ev.cta)
        k = (None if cl is None else cl.clusterid, ev.phase if ev.phase is not None else ev.detail.get("phase"))
        st = self.cluster.pop(k, None)
        if st is None:
            return
        self.cluster_done[k] = st[0]
        for ws in st[1]:
            ws.clock.join(st[0])
        for old in [x for x in self.cluster_done if x[0] == k[0] and x[1] < k[1] - 2]:
            del self.cluster_done[old]

    # ----------------------------------------------------------------------------------------- fences
    def _fence(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        d = ev.detail
        kind = d.get("fence")
        c = ws.clock
        if kind == "proxy":
            proxy = str(d.get("proxy") or "")
            if proxy in ("async", "async.shared::cta", "async.shared::cluster", "async::generic"):
                c.absorb(PA, VC)
            elif proxy.startswith("tensormap") and d.get("sem") == "acquire":
                # fence.proxy.tensormap::generic.acquire [addr], 128: orders what this thread knows of the map at
                # addr before its own later tensormap-proxy uses of that map (PTX ISA 9.1 §9.7.13.4)
                # (a fence by another thread counts when it happens-before the use, as Triton's
                # make_tensor_descriptor relies on: one warp fences, a barrier hands the map to the TMA warp)
                for a in set(d.get("addr") or ()):
                    self.tm_fences.setdefault(int(a), []).append((ws.comp, ws.epoch, c.copy()))
        elif kind == "mbarrier_init":
            c.absorb(MI, VC)
        elif kind in ("thread", "membar"):
            sem = d.get("sem") or "sc"
            if sem in ("acquire", "acq_rel", "sc") and ws.pend_acq is not None:
                c.join(ws.pend_acq)
                ws.pend_acq = None
            if sem in ("release", "acq_rel", "sc"):
                ws.fence_rel = c.copy()
        ws.tick()

    def _wgmma_fence(self, ev) -> None:
        """wgmma.fence (§9.7.15.7.1): the warp's earlier register accesses are ordered before later wgmma.mma_async
        register accesses."""
        ws = self._warp(ev.cta, ev.warp)
        ws.wg_unfenced.clear()
        ws.tick()

    def _tcgen05_fence(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        if ev.detail.get("fence") == "before_thread_sync":
            ws.clock.absorb(TB, VC)
        else:
            # orders the later async tcgen05 ops after everything the thread synchronised with so far
            # (§9.7.16.11.1); explain._tmem also asks the producing side's TB
            ws.clock.absorb(TA, VC)
        ws.tick()

    def _tcgen05_wait(self, ev) -> None:
        ws = self._warp(ev.cta, ev.warp)
        if ev.detail.get("kind") == "ld":
            ws.clock.set_at_least(ws.tld, ws.tld_seq)
            self._regs_done(ws)
        else:
            ws.clock.set_at_least(ws.tst, ws.tst_seq)
        ws.tick()

    def _tmem_cells(self, ev, write_rec_what: str) -> None:
        """tcgen05.alloc / dealloc: a write of every cell of the columns (lanes 0-127) by the warp."""
        d = ev.detail
        ws = self._warp(ev.cta, ev.warp)
        col = d.get("col")
        ncols = d.get("ncols")
        if ev.op == "tcgen05.alloc":
            if d.get("blocked"):
                ws.alloc_ncols = ncols
                return
            if ncols is None:
                ncols = ws.alloc_ncols
        if not isinstance(col, int) or not isinstance(ncols, int):
            ws.tick()
            return
        text, loc, _, _ = self._pcinfo(ev.pc)
        rec = AccessRec(text, loc, tuple(ev.cta), ev.warp, _lanes_str(ev.lanes), "async", "warp", ev.cycle, ws.key,
                        space="tmem")
        info = self._rec(rec)
        self._space_recs.setdefault(("tmem", tuple(ev.cta)), []).append(info)
        units = (np.arange(128, dtype=np.int64)[:, None] * TMEM_COLS
                 + np.arange(col, col + ncols, dtype=np.int64)[None, :]).ravel()
        conflicts = self._space(("tmem", tuple(ev.cta))).access(units, ws.clock.row(VC), ws.comp, ws.epoch, info,
                                                                 ASYNC | F_TCGEN05, True,
                                                                 conflicts=ev.op != "tcgen05.alloc")
        if conflicts:
            self._classify(conflicts, ("tmem", tuple(ev.cta)), rec, ws.clock, ASYNC | F_TCGEN05, True, ws)
        ws.tick()

    # ----------------------------------------------------------------------------------------- compaction
    def can_compact(self, cluster) -> bool:
        """Whether the state of ``cluster`` (all its CTAs exited) may be dropped (tcsim.retention): no async op it
        issued or that targets it is still in flight (its completion would touch that state)."""
        ctas = {tuple(c.ctaid) for c in cluster.ctas}
        for o in self.ops.values():
            if not o.done and ((o.issuer is not None and o.issuer[0] in ctas) or o.cta in ctas):
                return False
        return True

    def compact_cluster(self, cluster) -> None:
        """Drop what only ``cluster`` could still use (tcsim.retention: it exited and nothing of it is in flight,
        :meth:`can_compact`): the shadow of its shared memory and of its CTAs' tensor memory with their access
        records, its warps' states, its barriers, mbarriers, streams and completed ops.  Nothing that a later access
        can meet goes: a finished cluster's SMEM and TMEM are addressable by nobody else (PTX ISA 9.1 §5.1.4:
        distributed shared memory is the cluster's own), and global memory's shadow, which other CTAs do meet, is
        kept whole; the end-of-CTA checks (class 14) ran at each CTA's exit."""
        ctas = {tuple(c.ctaid) for c in cluster.ctas}
        keys = [("smem", cluster.clusterid)] + [("tmem", c) for c in ctas]
        for k in keys:
            self.spaces.pop(k, None)
            ids = self._space_recs.pop(k, ())
            for i in ids:
                self.recs[i] = None
            self._free_recs.extend(ids)         # no shadow left holds them: new records take their ids
        if self._forgotten is not None:
            self.reg.retire(ctas)               # their warps' and units' clock components (tcsim.race.clocks)
        for d in (self.warps, self.bars, self.bar_history, self.mbars, self.lsu_arrives):
            for k in [k for k in d if k[0] in ctas]:
                del d[k]
        for k in [k for k in self.pipe_done if k in ctas]:
            del self.pipe_done[k]
        for k in [k for k in self.streams if len(k) > 1 and k[1] in ctas]:
            del self.streams[k]
        for d in (self.cluster, self.cluster_done):
            for k in [k for k in d if k[0] == cluster.clusterid]:
                del d[k]
        for k in [k for k in self.locs if k[0] == keys[0]]:
            del self.locs[k]
        for k in [k for k, o in self.ops.items() if o.done and ((o.issuer is not None and o.issuer[0] in ctas) or
                                                                o.cta in ctas)]:
            del self.ops[k]

    # ----------------------------------------------------------------------------------------- exit
    def _cta_exit(self, cta) -> None:
        """Class 14: at a CTA's exit, its own bulk async reads of SMEM and its peers' accesses to its SMEM must be
        ordered before the exit (PTX ISA 9.1 §9.7.9.25.6.2, §9.7.13.3: the trailing cluster barrier)."""
        key = tuple(cta.ctaid)
        exit_clock = self.reg.clock()
        last = None
        for (c, w), ws in self.warps.items():
            if c == key:
                exit_clock.join(ws.clock)
                last = ws
        if last is None:
            return
        for o in list(self.ops.values()):
            if o.issuer is not None and o.issuer[0] == key and o.unit == "tma" and "bulk_group" in str(o.what):
                comp, seq = o.streams["r"]
                if not exit_clock.knows(comp, seq):
                    self.report(explain.exit_with_async_read(o, cta, cta.last_exit))
                    break
        cl = cta.cluster
        if cl is None or len(cl.ctas) < 2:
            return
        sp = self.spaces.get(("smem", cl.clusterid))
        if sp is None:
            return
        from tcsim import memory as M
        lo = M.shared_address(cta.rank, 0)
        hi = M.shared_address(cta.rank + 1, 0)
        row = exit_clock.row(VC)
        tab = self.table
        for units, ents in sp.scan(lo, hi):
            for ee in ents:             # the last write, then the read slots
                cc = tab.comp[ee]
                m = (cc >= 0) & (row[np.maximum(cc, 0)] < tab.val[ee])
                if not m.any():
                    continue
                for i in np.unique(ee[m]):
                    rec = self.recs[int(i) - 1]
                    if rec.cta is not None and tuple(rec.cta) != key:
                        self.report(explain.exit_with_remote_access(rec, cta, last, cta.last_exit))
                        return

    # ----------------------------------------------------------------------------------------- class 9 hand-offs
    def read_in_flight_at_release(self, read, epoch: int) -> "AccessRec | None":
        """The mbarrier arrive that released the generic read ``read`` (an :class:`AccessRec` of a warp's ld at the
        warp's ``epoch``) while the read may still have been in flight, or None.

        The release is the reading warp's first mbarrier arrive at or after the read's epoch.  The read counts as
        performed by then when an instruction between the load and the arrive (in the body, straight-line) reads
        one of its destination registers: the warp cannot issue that instruction before the load's data returned
        (register scoreboard), and the arrive comes after it in issue order -- how pipelines that consume a stage
        before releasing it ship without fence.proxy.async (the project's bulk_pipeline; CUTLASS-style consumers).
        A load whose destinations nothing reads before the arrive (the values are used after the release, the
        DeepEP combine of PR #642) may still be outstanding in the generic proxy's queue when the async-proxy write
        the release enables lands: only fence.proxy.async orders the two (PTX ISA 9.1 §8.6)."""
        ws = self.warps.get(read.issuer) if read.issuer is not None else None
        if ws is None or read.pc is None:
            return None
        ins = self._ins(read.pc)
        if ins is None or ins.opcode not in ("ld", "ldu", "ldmatrix") or not ins.operands:
            return None
        if len(ws.arrives) == ws.arrives.maxlen and ws.arrives[0][0] > epoch:
            return None             # the release is older than the arrives kept
        arrive = next((a for a in ws.arrives if a[0] >= epoch), None)
        if arrive is None or arrive[1] is None or arrive[1] <= read.pc or self._consumed_between(read.pc, arrive[1]):
            return None
        text, loc, _, _ = self._pcinfo(arrive[1])
        return AccessRec(text, loc, read.cta, read.warp, _lanes_str(arrive[3]), None, "warp", arrive[2], read.issuer)

    def _consumed_between(self, load_pc: int, arrive_pc: int) -> bool:
        """Whether an instruction strictly between ``load_pc`` and ``arrive_pc`` reads a destination register of the
        load at ``load_pc`` (straight-line, by body index; cached)."""
        key = (load_pc, arrive_pc)
        r = self._consumed.get(key)
        if r is None:
            body = self.program.body
            dests = set(ir.reg_names(body[load_pc].operands[0])) if body[load_pc].operands else set()
            r = not dests or any(dests & _reads(body[j]) for j in range(load_pc + 1, min(arrive_pc, len(body)))
                                 if isinstance(body[j], ir.Instruction))
            self._consumed[key] = r
        return r

    # ----------------------------------------------------------------------------------------- helpers
    def _sync_rec(self, ev, ws) -> AccessRec:
        text, loc, _, _ = self._pcinfo(ev.pc)
        return AccessRec(text, loc, tuple(ev.cta), ev.warp, _lanes_str(ev.lanes), None, "warp", ev.cycle, ws.key)

    def _op_rec(self, o, ev, what) -> AccessRec:
        return AccessRec(f"{o.what} ({what})", o.loc, o.cta, o.issuer[1] if o.issuer else None,
                         None if o.lane is None else f"lane {o.lane}", "async", o.unit, ev.cycle, o.issuer, op=o)


def _reads(ins) -> set:
    """Register names instruction ``ins`` reads (its sources, address bases, guard)."""
    ops = ins.operands if ins.opcode in ir.NO_REG_DEST else ins.operands[1:]
    out = set()
    if ins.guard is not None:
        out.add(ins.guard[0].name)
    for op in ops:
        if isinstance(op, ir.Address):
            if isinstance(op.base, ir.Reg):
                out.add(op.base.name)
            for c in op.coords or ():
                out.update(ir.reg_names(c))
        elif isinstance(op, ir.Not):
            out.update(ir.reg_names(op.operand))
        elif isinstance(op, ir.ParenList):
            for e in op.elems:
                out.update(ir.reg_names(e))
        else:
            out.update(ir.reg_names(op))
    return out


_SYNC = {
    "async.issue": HappensBefore._async_issue,
    "async.complete": HappensBefore._async_complete,
    "bar.arrive": HappensBefore._bar_arrive,
    "bar.release": HappensBefore._bar_release,
    "mbarrier.init": HappensBefore._mbarrier_init,
    "mbarrier.inval": HappensBefore._mbarrier_reset,
    "mbarrier.arrive": HappensBefore._mbarrier_arrive,
    "mbarrier.complete_tx": HappensBefore._mbarrier_complete_tx,
    "mbarrier.phase": HappensBefore._mbarrier_phase,
    "mbarrier.wait": HappensBefore._mbarrier_wait,
    "cp.async.mbarrier.arrive": HappensBefore._cp_async_mbarrier_arrive,
    "bulk.commit_group": lambda self, ev: self._group_commit(ev, True),
    "bulk.wait_group": lambda self, ev: self._group_wait(ev, True),
    "cp.async.commit_group": lambda self, ev: self._group_commit(ev, False),
    "cp.async.wait_group": lambda self, ev: self._group_wait(ev, False),
    "wgmma.commit_group": lambda self, ev: self._group_commit(ev, "wgmma"),
    "wgmma.wait_group": lambda self, ev: self._group_wait(ev, "wgmma"),
    "wgmma.fence": lambda self, ev: self._wgmma_fence(ev),
    "cluster.arrive": HappensBefore._cluster_arrive,
    "cluster.wait": HappensBefore._cluster_wait,
    "cluster.release": HappensBefore._cluster_release,
    "fence": HappensBefore._fence,
    "tcgen05.fence": HappensBefore._tcgen05_fence,
    "tcgen05.wait": HappensBefore._tcgen05_wait,
    "tcgen05.alloc": lambda self, ev: self._tmem_cells(ev, "alloc"),
    "tcgen05.dealloc": lambda self, ev: self._tmem_cells(ev, "dealloc"),
    "griddepcontrol.wait": HappensBefore._griddep_wait,
}

__all__ = ["HappensBefore", "AccessRec"]
