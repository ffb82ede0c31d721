"""Lockstep supersteps: a gang of uniform warps standing at one PC runs many cycles in one go.

On the functional issue model (timing off: every warp-instruction takes one cycle), unperturbed and with no
observer on the bus, the reference tier's next cycles are fully known when a gang (the issue events of several
warps in one cycle, :mod:`tcsim.fast.tier`) is popped at cycle ``t`` with

* every member a uniform warp at its top (all its live lanes at one PC, nothing waiting or parked), all of them at
  the same PC, and
* no other event queued before cycle ``t + h``:

for the next ``h`` cycles each member issues one instruction per cycle, in gang order, and nothing else happens.
A superstep runs those cycles one instruction at a time for the whole gang (:func:`superstep`): the instruction's
own decoded semantics execute once over the lanes of every member (:class:`GroupCtx`, the group context of
:mod:`tcsim.fast.batch` reading the flat ``(warps, 32)`` register file by a slice when the members are
consecutive rows); a plain ``bra`` whose lanes all go one way moves the whole gang; a ``st`` writes in the
reference's warp and lane order; a ``bar.sync`` by every live warp of each CTA completes the barrier at once
(:meth:`tcsim.semantics.barrier.NamedBarriers.sync_whole_cta`: in the reference the last arrival releases the
others in the same cycle, so they issue again one cycle on, in lockstep); an ``exit`` (or the kernel's ``ret``)
runs each member's exit in gang order when it can queue no event and fail at nothing (:func:`_exit_quiet`), and
ends the superstep.  Since all members execute the same
instruction in a cycle, and loads, ALU and stores do not mix within one cycle, running it once over the group in
gang order is what the reference does member after member.

The superstep stops *before* a cycle it cannot run so: an instruction of another kind (an exit that is not quiet,
a collective, an atomic...), a branch whose lanes diverge, a barrier with an open phase or a CTA not all in the
gang, a group that fails (a fault, or a form that is not lane-parallel: the reference path then runs that cycle
and reports the fault itself), the horizon, or a run-watch check that looks at the warps
(:meth:`tcsim.watch.RunWatch.check`: the livelock sample, a budget or Ctrl-C stop); a check that does not (the next
check's count, the progress line) is made in place.  Then the members' PCs, counts and contexts are brought up to
date and the gang is queued for its next cycle, as its members' own issue events would have been.
"""
from __future__ import annotations

import numpy as np
from simpy.events import NORMAL

from tcsim.isa import ir
from tcsim.isa.errors import TcsimError
from ..context import group_write_stacked_words
from ..ptxtypes import to_container, to_type
from ..watch import CHECK_EVERY
from .batch import BARRIER, BRANCH, EXIT, SEM, STORE, WARP, BatchCtx, Fallback  # noqa: F401 (step kinds: re-exported)

_FAIL = (Fallback, TcsimError, ValueError, IndexError, TypeError, AttributeError, KeyError)


class GroupCtx(BatchCtx):
    """The group context of one superstep: :class:`BatchCtx` over the members ``sel`` (a slice of the flat register
    file when they are consecutive rows, else their indices), reused instruction after instruction
    (:meth:`start`), with the members' special registers and symbol addresses computed once per superstep."""

    def __init__(self, tier, sel, warps: list, group: np.ndarray):
        self.tier = tier
        self.idx = sel
        self.warps = warps
        self.n = WARP * len(warps)
        self.group = group
        self.mask = group
        self._writes = []
        self._written = set()
        self._sregs: dict = {}
        self._syms: dict = {}
        self._mb = None

    def _mbarriers(self) -> bool:
        if self._mb is None:                    # (no superstep instruction creates one)
            self._mb = super()._mbarriers()
        return self._mb

    def start(self, ins, pc: int, mask: np.ndarray, full: bool) -> None:
        self.ins = ins
        self.pc = pc
        self.mask = mask
        self._full = full                       # every lane of the members executes it
        self._writes = []
        self._written = set()

    def write(self, op, ptype, values, mask=None) -> None:
        if mask is None and type(op) is ir.Reg and type(values) is np.ndarray and values.shape == (self.n,) \
                and ptype != "b128":
            # (the common case without BatchCtx.write's broadcast: a register, the instruction's own lanes)
            r = self._reg(op.name)
            if r.dtype == np.bool_:
                raise Fallback(op.name)
            try:
                bits = to_container(values, ptype, r.dtype.itemsize)
            except ValueError:
                raise Fallback(op.name) from None
            self._writes.append((op.name, bits, self.mask))
        else:
            super().write(op, ptype, values, mask)
        if self._writes:
            self._written.add(self._writes[-1][0])

    def commit(self) -> None:
        if not self._full:
            return super().commit()
        flat = self.tier.flat
        idx = self.idx
        k = len(self.warps)
        mask = self.mask
        for name, bits, m in self._writes:
            if m is mask:
                flat[name][idx] = bits.reshape(k, WARP)
            else:
                r = flat[name]
                rows = r[idx].reshape(-1)
                rows[m] = bits[m]
                r[idx] = rows.reshape(k, WARP)

    def _reg_read(self, name: str, ptype: str) -> np.ndarray:
        r = self.tier.flat.get(name)
        if r is None or name in self._written or r.dtype == np.bool_ or ptype == "b128":
            raise Fallback(name)
        try:
            return to_type(r[self.idx].reshape(-1), ptype)
        except ValueError:
            raise Fallback(name) from None

    def write_pred(self, op, values, mask=None) -> None:
        super().write_pred(op, values, mask)
        if self._writes:
            self._written.add(self._writes[-1][0])

    def _sym(self, name: str) -> np.ndarray:
        """The members' addresses of symbol ``name`` (one per lane; a shared symbol's carries each CTA's rank)."""
        a = self._syms.get(name)
        if a is None:
            by_cta: dict = {}
            per = []
            for w in self.warps:
                v = by_cta.get(id(w.cta))
                if v is None:
                    try:
                        v = by_cta[id(w.cta)] = w.ctx.symbol_address(name)
                    except TcsimError:
                        raise Fallback(name) from None
                per.append(v)
            a = self._syms[name] = np.repeat(np.asarray(per, dtype=np.uint64), WARP)
        return a

    def special_lanes(self, op):
        """Special register ``op`` of every lane of the members (their contexts' values, once per superstep), or
        None when a context cannot give it."""
        key = (op.name, op.component)
        raw = self._sregs.get(key)
        if raw is None:
            try:
                raw = self._sregs[key] = np.concatenate([w.ctx.special(op) for w in self.warps])
            except TcsimError:
                return None
        return raw

    def read(self, op, ptype: str) -> np.ndarray:
        if type(op) is ir.Reg:
            return self._reg_read(op.name, ptype)
        if isinstance(op, ir.SpecialReg):
            raw = self.special_lanes(op)
            if raw is None:
                raise Fallback(op.name)
            if raw.dtype == np.bool_:
                raise Fallback(op.name)
            try:
                return to_type(raw, ptype)
            except ValueError:
                raise Fallback(op.name) from None
        if isinstance(op, ir.Sym):
            from ..ptxtypes import UINT, size_of, view_dtype
            if ptype == "b128":
                raise Fallback(op.name)
            size = size_of(ptype)
            a = (self._sym(op.name) + np.uint64(op.offset & ((1 << 64) - 1))) & np.uint64((1 << (8 * size)) - 1) \
                if size < 8 else self._sym(op.name) + np.uint64(op.offset & ((1 << 64) - 1))
            return a.astype(UINT[size]).view(view_dtype(ptype))
        return super().read(op, ptype)

    def address(self, op: ir.Address, addr_type: str = "u64") -> np.ndarray:
        base = op.base
        if isinstance(base, ir.Sym):
            a = self._sym(base.name) + np.uint64(base.offset & ((1 << 64) - 1))
            if op.offset:
                a = (a.astype(np.int64) + np.int64(op.offset)).astype(np.uint64)
            return a
        return super().address(op, addr_type)


class _Gang:
    """What a superstep knows about its members (built once per superstep)."""

    __slots__ = ("members", "k", "sel", "alive", "group", "nalive", "nlanes", "ctas")

    def __init__(self, tier, members: list):
        self.members = members
        self.k = k = len(members)
        idx = np.fromiter((w.fast_index for w in members), dtype=np.int64, count=k)
        lo = int(idx[0])
        if idx[-1] == lo + k - 1 and (k < 3 or (np.diff(idx) == 1).all()):
            self.sel = slice(lo, lo + k)
            self.alive = tier.alive[self.sel].copy()
        else:
            self.sel = idx
            self.alive = tier.alive[idx]
        self.group = self.alive.reshape(-1)
        self.nalive = int(np.count_nonzero(self.group))
        self.nlanes = WARP * k
        self.ctas = None

    def whole_ctas(self):
        """The members by CTA, [(cta, warps)], when every live warp of each of their CTAs is a member; else
        None."""
        if self.ctas is None:
            by: dict = {}
            for w in self.members:
                ent = by.get(id(w.cta))
                if ent is None:
                    ent = by[id(w.cta)] = (w.cta, [])
                ent[1].append(w)
            ok = all(len(ws) == sum(1 for x in cta.warps if x.alive.any()) for cta, ws in by.values())
            self.ctas = list(by.values()) if ok else False
        return self.ctas or None


def _native(op, kind: int, flat: dict, sel, gctx):
    """Run generated code ``op`` (tcsim.fast.codegen) for the group: a SEM step's (destination, values) to write,
    a store done (True), or None when the generated code declines (the semantics run the step instead)."""
    res = op(flat, sel)
    if res is None or kind == SEM:
        return res
    reg, (stack, rows, offs) = res
    if gctx._mbarriers():                       # (the reference checks stores over live barriers)
        return None
    group_write_stacked_words(stack, rows, offs, flat[reg][sel][:, ::-1])
    return True


def _region(tier, pc: int) -> tuple:
    """The generated functions of the unguarded instructions with generated code from ``pc`` on (a straight run of
    them: one cycle each, no branch, no memory access, nothing that can fail), run back to back when every lane
    of the gang executes them."""
    steps, native, body = tier.steps, tier.native, tier.sim.program.body
    out = []
    while pc < tier.nbody and steps[pc] == SEM and native[pc] is not None and body[pc].guard is None and \
            not getattr(native[pc], "full_only", False):
        out.append(native[pc])
        pc += 1
    return tuple(out)


#: lane-instructions one compiled-block call may run at most (a run-watch check comes between two calls)
VM_CHUNK_LANES = 1 << 24


def _vm_limit(sim, watch, k: int, room) -> int:
    """The cycles a compiled-block call may run for a gang of ``k`` warps: at most ``room``, and up to (and
    including) the cycle whose run-watch check would look at the warps (the per-instruction loop below stops
    after that cycle too); 0 when a check now would (a stop, Ctrl-C, the budget, a loop-monitor sample)."""
    if watch.looks_at_warps(-1):
        return 0
    limit = int(min(room, max(1, VM_CHUNK_LANES // (32 * k))))
    # the checks come at the cycles c1, c1 + d, c1 + 2d, ... (each sets the next CHECK_EVERY on: no instruction
    # budget here); the first whose retired count reaches the livelock sample looks at the warps
    r0 = sim.retired
    c1 = max(1, -(-(watch.next_check - r0) // k))
    d = -(-CHECK_EVERY // k)
    j = max(0, -(-(-(-(watch._next_sample - r0) // k) - c1) // d))
    return min(limit, c1 + j * d)


def _vm_checks(sim, watch, k: int, e: int) -> bool:
    """The run-watch checks of ``e`` cycles of ``k`` warps that a compiled-block call ran: the last of them, made
    at the cycle the per-instruction loop would make it (the ones before it only set the next check: a progress
    line or the seconds budget waits for this one); True when it looks at the warps or ends the run (the
    superstep stops there)."""
    r0 = sim.retired
    end = r0 + e * k
    c1 = max(1, -(-(watch.next_check - r0) // k))
    if c1 > e:
        sim.retired = end
        return False
    d = -(-CHECK_EVERY // k)
    sim.retired = r0 + (c1 + (e - c1) // d * d) * k
    stop = watch.looks_at_warps() or watch.check() is not None
    sim.retired = end
    return stop


def _vm_barriers(sim, g):
    """The gang's CTAs [(cta, warps)] when a compiled block may run their ``bar.sync`` (every live warp of each a
    member, no named barrier of theirs with a phase open: then each completes in its cycle, as the BARRIER step
    below completes it), else None."""
    ctas = g.whole_ctas()
    if ctas is None:
        return None
    from ..semantics.barrier import NamedBarriers
    ag = sim.agent("named-barriers", NamedBarriers)
    ids = {id(c) for c, _ in ctas}
    if any(key[0] in ids for key in ag.phases):
        return None
    return ctas


def _complete_barriers(sim, ctas, bars) -> None:
    """The ``bar.sync`` a compiled block ran (``bars[i]``: how many of barrier ``i``), completed as the BARRIER step
    completes each (NamedBarriers.sync_whole_cta, that many times)."""
    from ..semantics.barrier import NamedBarriers
    ag = sim.agent("named-barriers", NamedBarriers)
    for index in np.nonzero(bars)[0]:
        for c, ws in ctas:
            ag.sync_whole_cta(c, ws, int(index), None, None, times=int(bars[index]))


def _exit_quiet(sim, g, gctx) -> bool:
    """The gang's ``exit`` changes nothing but the exiting warps' and CTAs' own state -- no event is queued, nothing
    can fail -- so that running it for every member in gang order in one cycle is what their processes do one
    after the other: every cluster of the grid has started (no CTA starts at an exit), no CTA-exit hook (TMEM,
    the detector), the only exit hook the named barriers' with no phase open in the gang's CTAs and no
    ``bar.warp.sync`` pending for a member, no mbarrier in the gang's CTAs (the protocol's end check at a
    cluster's compaction)."""
    if sim.clusters_pending() or sim.cta_exit_hooks or gctx._mbarriers():
        return False
    if sim.exit_hooks:
        from ..semantics.barrier import NamedBarriers
        ag = sim.agents.get(("named-barriers", None))
        if ag is None or any(getattr(h, "__self__", None) is not ag or getattr(h, "__func__", None) is not
                             NamedBarriers.on_exit for h in sim.exit_hooks):
            return False
        ctas = {id(w.cta) for w in g.members}
        if any(id(ph.cta) in ctas for ph in ag.phases.values()) or any(w in ag.warp_sync for w in g.members):
            return False
    return True


def superstep(tier, members: list) -> bool:
    """Run the gang ``members`` (popped now) for as many cycles as the module docstring allows; False when not even
    one (nothing changed: the caller issues the gang as usual)."""
    sim = tier.sim
    if sim.bus.active or sim.error is not None:
        return False
    steps = tier.steps
    w0 = members[0]
    pc = w0.fast_upc
    if pc is None or pc >= tier.nbody or steps[pc] is None:
        return False
    env = sim.env
    q = env._queue
    t = env._now
    horizon = q[0][0] - t if q else float("inf")
    if not horizon > 0:
        return False
    for w in members:
        if w.fast_upc != pc or not w.fast_at_top or w.fast_failed:
            return False
    if tier.npending:
        tier.flush()
        if sim.error is not None:
            return False
    g = _Gang(tier, members)
    k = g.k
    sel = g.sel
    group = g.group
    nalive = g.nalive
    flat = tier.flat
    prog = sim.program
    body = prog.body
    decoded = prog.decoded
    branch = tier.branch
    native = tier.native
    watch = sim.watch
    count_nonzero = np.count_nonzero
    gctx = GroupCtx(tier, sel, members, group)
    cycles = 0
    lanes = 0
    last = None
    check = False
    full = nalive == g.nlanes
    regions = tier.regions
    vmr = tier.vm
    if vmr is None and full:
        from .blocks import Runner, available
        vmr = tier.vm = Runner(tier) if available() else False
    rows = None
    vm_ctas = None
    vm_skip = -1
    exited = False
    while cycles < horizon:
        kind = steps[pc]
        if kind is None:
            break
        if full and vmr and pc != vm_skip and vmr.runs_at(pc):
            # compiled blocks (tcsim.fast.blocks): from here on in one call, as far as it goes
            lim = _vm_limit(sim, watch, k, horizon - cycles)
            if lim > 0:
                if rows is None:
                    rows = np.arange(sel.start, sel.stop, dtype=np.int64) if isinstance(sel, slice) else sel
                    vm_ctas = _vm_barriers(sim, g) if vmr.enc.has_bar else None
                res = vmr.run(gctx, rows, pc, lim, vm_ctas)
                if res is not None:
                    e, npc, nl, last_pc, _why = res
                    if vm_ctas is not None and vmr.bars.any():
                        _complete_barriers(sim, vm_ctas, vmr.bars)
                    vm_skip = npc           # (where it stopped: the paths below run that one)
                    if e:
                        lanes += nl
                        cycles += e
                        last = (last_pc, vmr.last_mask(last_pc, sel, group))
                        pc = npc
                        if _vm_checks(sim, watch, k, e):
                            check = True
                            break
                    continue
        if full:
            reg = regions.get(pc)
            if reg is None:
                reg = regions[pc] = _region(tier, pc)
            nreg = len(reg)
            if nreg > 1 and cycles + nreg <= horizon:
                after = sim.retired + nreg * k
                crossing = after >= watch.next_check
                if not crossing or not watch.looks_at_warps(after):
                    for op in reg:                  # (unguarded generated code, every lane: see _region)
                        dst, v = op(flat, sel)
                        flat[dst][sel] = v
                    lanes += nreg * nalive
                    cycles += nreg
                    sim.retired = after
                    last = (pc + nreg - 1, group)
                    pc += nreg
                    if crossing and watch.check() is not None:
                        check = True
                        break
                    continue
        if kind == EXIT:
            # every member's live lanes exit, in gang order (the exit's own semantics on each member's context)
            if sim.retired + k >= watch.next_check or not _exit_quiet(sim, g, gctx):
                break
            ins = body[pc]
            for t_, w in enumerate(members):
                ctx = w.ctx
                ctx.ins = ins
                ctx.pc = pc
                ctx.group = g.alive[t_].copy()
                ctx.mask = ctx.group
                ctx.extra_delay = 0
                try:
                    decoded[pc](ctx)
                except TcsimError as e:                 # (as the warp's process reports it)
                    from ..warp_turns import user_loc as _user_loc
                    e.with_context(loc=ins.loc, where=ctx.where, user_loc=_user_loc(ins))
                    w.fast_failed = True
                    sim._fail(e)
            lanes += nalive
            cycles += 1
            sim.retired += k
            last = (pc, group)
            pc += 1
            exited = True
            break
        ins = body[pc]
        guard = ins.guard
        if guard is None:
            mask = group
            n = nalive
        else:
            gv = flat[guard[0].name][sel].reshape(-1)
            mask = group & ~gv if guard[1] else group & gv
            n = int(count_nonzero(mask))
        if kind == BRANCH:
            if n == 0:
                nxt = pc + 1
            elif n == nalive:
                nxt = branch[pc]
            else:
                break                                   # (diverges: the reference path splits the warps)
        elif kind == BARRIER:
            ctas = g.whole_ctas()
            if ctas is None:
                break
            from ..semantics.barrier import NamedBarriers
            ag = sim.agent("named-barriers", NamedBarriers)
            index, aligned = tier.bar_index[pc]
            if any((id(c), index) in ag.phases for c, _ in ctas):
                break
            for c, ws in ctas:
                ag.sync_whole_cta(c, ws, index, pc, aligned)
            nxt = pc + 1
        elif native[pc] is not None and (n == g.nlanes or not getattr(native[pc], "full_only", False)) and \
                (res := _native(native[pc], kind, flat, sel, gctx)) is not None:
            if kind == SEM:
                dst, v = res
                r = flat[dst]
                if n == g.nlanes:
                    r[sel] = v
                elif isinstance(sel, slice):
                    np.copyto(r[sel], v, where=mask.reshape(k, WARP))
                else:
                    rows = r[sel]
                    np.copyto(rows, v, where=mask.reshape(k, WARP))
                    r[sel] = rows
            nxt = pc + 1
        else:
            gctx.start(ins, pc, mask, n == g.nlanes)
            try:
                decoded[pc](gctx)
                if kind == STORE and gctx._writes:
                    raise Fallback("a store writes no register")
            except _FAIL:
                steps[pc] = None                        # (not again: the reference path runs it from now on)
                break
            if kind == SEM:
                gctx.commit()
            nxt = pc + 1
        lanes += n
        cycles += 1
        sim.retired += k
        last = (pc, mask)
        pc = nxt
        if sim.retired >= watch.next_check:
            if watch.looks_at_warps():
                check = True
                break
            err = watch.check()
            if err is not None:
                check = True
                break
    if not cycles:
        return False
    # the members as their own warp processes would have left them
    last_pc, last_mask = last
    ins = body[last_pc]
    rows = tier.pcs[sel]
    rows[g.alive] = pc
    if not isinstance(sel, slice):
        tier.pcs[sel] = rows
    masks = last_mask.reshape(k, WARP)
    alive = g.alive
    for t_, w in enumerate(members):
        w.retired += cycles
        w.fast_upc = None if exited else pc
        ctx = w.ctx
        ctx.ins = ins
        ctx.pc = last_pc
        ctx.group = alive[t_]
        ctx.mask = masks[t_]
        ctx.extra_delay = 0
    sim.lane_instructions += lanes
    tier.supersteps += 1
    tier.superstep_cycles += cycles
    tier._push(list(members), t + cycles, NORMAL)
    if check:
        err = sim._watch_check()
        if err is not None:
            sim._fail(err)
    return True


__all__ = ["BARRIER", "BRANCH", "GroupCtx", "SEM", "STORE", "superstep"]
