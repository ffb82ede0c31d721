"""tcgen05, the Tensor Memory side: alloc / dealloc / relinquish_alloc_permit, ld / st, wait::ld / wait::st and
the tcgen05 fences (sm_100a family).

PTX ISA 9.1 §9.7.16.1 (Tensor Memory), §9.7.16.2.3 (data-movement shapes and their matrix fragments),
§9.7.16.5 (issue granularity), §9.7.16.6 (tcgen05 memory-consistency model), §9.7.16.7.1 (tcgen05.alloc,
tcgen05.dealloc, tcgen05.relinquish_alloc_permit), §9.7.16.8.3 (tcgen05.ld), §9.7.16.8.4 (tcgen05.st),
§9.7.16.8.5 (tcgen05.wait), §9.7.16.11.1 (tcgen05.fence).  Facts: /work/shared/reference/tcgen05.md (a), (f)
and tcgen05_layouts.md (d).  The TMEM state and allocator live in :mod:`tcsim.tmem`; ``tcgen05.mma / commit /
cp / shift`` are decoded by ``tcgen05_mma.py`` (this module registers the families ``tcgen05.<op>`` of the
sub-operations in :data:`tcsim.isa.tcgen05_mem_forms.SUBOPS`, whose forms that module parses and checks).

Forms
-----
``tcgen05.alloc.cta_group::{1,2}.sync.aligned{.shared::cta}.b32 [dst], nCols``
    One whole warp (``.sync.aligned``: every live lane of the warp must execute it together).  Blocks until
    ``nCols`` columns are free (first fit at a multiple of nCols), then writes the TMEM address (lane 0, start
    column) to the 32-bit SMEM word ``dst`` through the context's store path (a weak ``st`` on the observation
    bus).  ``dst`` is a ``.shared::cta`` address, or with no state space a generic address of the executing CTA's
    shared window; ptxas stores through the low 32 bits of the operand either way, and so does tcsim, with a lint
    note when the value is not of the form the ISA asks (:func:`_dst_offset`).  ``nCols`` is a power of two in
    [32, 512] (VerifyError at load for an immediate, as ptxas; SyncError at run time for a register).  Class-13
    findings (:mod:`tcsim.race.tmem_alloc`, which also says what the GPU does): an allocation after a
    ``relinquish_alloc_permit`` of the CTA (trap), nCols growing between two allocations of a CTA (PTX 9.1;
    warning), an allocation no live warp will ever satisfy (at a deadlock: hang, naming the holders).
``tcgen05.dealloc.cta_group::{1,2}.sync.aligned.b32 taddr, nCols``
    Frees the 32-column units it names, as the GPU does.  Class-13 findings: columns not all allocated (double
    free, never allocated, too many columns: trap), a start column no alloc returned (an address inside an
    allocation: trap), a smaller nCols than the allocation (continue: the rest stays allocated), a lane field other
    than 0 (lint: the GPU uses the column part).  Freed columns wake blocked allocs.
    A ``tcgen05.st`` still in flight into the freed columns is a SyncError (a ``tcgen05.wait::st`` is missing).
``tcgen05.relinquish_alloc_permit.cta_group::{1,2}.sync.aligned``
    Forbids further allocations by the executing CTA.  An alloc already blocked is still granted.
``cta_group::2``
    One warp in each CTA of the pair (cluster ranks differing only in bit 0) issues the same alloc / dealloc;
    each side blocks until the peer's warp arrives (a rendezvous per pair, matched in arrival order), then
    the same columns are allocated (first fit over the columns free in *both* CTAs) or freed in both CTAs, and
    each side's address word is written to its own ``dst``.  Both sides must pass the same nCols (alloc: a
    class-13 finding, and the even CTA's count is allocated, as in the SASS) and for dealloc the same address
    (SyncError).  A missing or exited peer is a SyncError; a peer that never arrives is the deadlock report's root
    cause (class 13, hang).  ``relinquish_alloc_permit.cta_group::2`` relinquishes the executing CTA's permit.
    All tcgen05 instructions of a function (this module's and mma/cp/shift/commit) must use the same
    ``.cta_group``: checked at load over the whole function (VerifyError naming both lines, as ptxas).
``tcgen05.ld.sync.aligned.{32x32b,16x64b,16x128b,16x256b,16x32bx2}.x{1..128}{.pack::16b}.b32 {r...}, [taddr]{, off}``
``tcgen05.st.sync.aligned.<shape>.x{1..128}{.unpack::16b}.b32 [taddr]{, off}, {r...}``
    Register maps of tcgen05_layouts.md (d) (:func:`ldst_map`); the vector length must equal the count the
    shape and .num require (VerifyError at load naming it; 16x128b stops at x64 and 16x256b at x32, as
    ptxas).  Every register is a 32-bit register (f32 registers are fine).  All lanes must pass the same
    ``taddr``.  Checks at run time, in this order: the warp-quadrant rule -- warp q = (linear thread id / 32) % 4,
    computed from the warp's %tid values (not %warpid), may touch only lanes [32q, 32q+32); an address whose lane
    field names another quadrant is routed to the warp's own, lane 32q + (lane % 32), as the GPU does in a release
    build (DeepGEMM's sm100 epilogues pass lane 0 from all four warps and are right on the B200; DeepGEMM PR #341:
    "in release mode the hardware auto-routes lanes", a -G build traps), with a warning finding (class 0) naming
    the line; a box that crosses a quadrant boundary even so is a MemoryFault -- then the box stays inside the
    128 x 512 grid (MemoryFault), and every touched column is allocated
    (class-13 finding naming the dealloc that freed them, if any; the access goes on, as on the GPU).
    ``.pack::16b``: register bits 0-15 / 16-31 come from the low 16 bits of the two adjacent columns 2d, 2d+1
    (d = the table's column offset); ``.unpack::16b`` writes them back with zero upper halves (tcgen05_layouts
    says the upper half is unspecified; zero is tcsim's choice).  For ``16x32bx2`` the immediate half-split
    offset is added to the table's column offset *before* the pack doubling (it counts in the same units as
    the register index; matches CUTLASS passing ``off = .num`` for packed and unpacked atoms alike (?)).
``tcgen05.wait::ld.sync.aligned`` / ``tcgen05.wait::st.sync.aligned``
``tcgen05.fence::before_thread_sync`` / ``tcgen05.fence::after_thread_sync``
    Fences have no functional effect here (mma/cp/shift execute in issue order at issue); each emits a
    ``sync`` event ``tcgen05.fence`` with its ordering meaning for the race detector.

Asynchrony (tcgen05.md (f), "simulator rule of thumb")
------------------------------------------------------
``tcgen05.ld`` completes at issue: its registers get the values then (true register dependences are honoured,
so reading them is fine); ``wait::ld`` therefore never blocks.  ``tcgen05.st`` is *delayed*: its cells are staged
(:class:`tcsim.tmem.PendingStore`) and land in TMEM ``tmem_st_land_latency`` cycles after issue (a parameter of
the simulation's arch config, :mod:`tcsim.timing.params`; this module holds no latency).  ``wait::st``
blocks the warp until all of its stores have landed.  So a kernel that does ``st`` then ``mma`` / ``ld``
without ``wait::st`` really sees stale TMEM; a ``tcgen05.ld`` that reads cells of a store still in flight also
records a warning in the simulation's ``warnings``.

Exit checks (a CTA-exit hook registered once per simulation)
------------------------------------------------------------
Columns still allocated when the CTA's last thread exits: a class-13 finding per allocation, "tcgen05.alloc ...
never deallocated", naming the alloc line and the exit.  A CTA that allocated but never executed
``relinquish_alloc_permit``: PTX does not require the relinquish (tcgen05.md (a) states only that
everything allocated must be freed before exit, and that relinquish forbids later allocs), so this is legal
and recorded as a warning ("alloc with no relinquish at exit") in the simulation's ``warnings`` list.

Unsupported (UnsupportedError at load): ``tcgen05.ld.red`` (sm_101a/sm_103 family only; not on sm_100a) and any
other tcgen05 sub-operation or qualifier not listed above.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import MemoryFault, SyncError, TcsimError
from tcsim.isa.tcgen05_mem_forms import (ALLOC_OPS, LDST_OPS, SHAPES, SUBOPS, WAIT_OPS, parse_alloc, parse_fence,
                                         parse_ldst, parse_wait)
from .. import memory as M
from ..agents.port import AgentPort
from ..agents.unit import LatencyKnob
from ..context import lanes_str
from ..machine import WARP
from ..race import tmem_alloc as T13
from ..tmem import UNIT, PendingStore, make_taddr, split_taddr, tmem_of
from .registry import semantics


# ------------------------------------------------------------------------------------------- register maps
def ldst_map(shape: str, num: int, off: int = 0, pack: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """(lane, column) offsets relative to (L0, C0) of register j of thread t: ``lanes[t, j]``, ``cols[t, j]``
    (int64, shape (32, R)), and R.  With ``pack`` the columns are those of the low half (``2d``); the high half
    is the next column.  tcgen05_layouts.md (d)."""
    t = np.arange(WARP, dtype=np.int64)[:, None]
    nreg = num * SHAPES[shape][1]
    j = np.arange(nreg, dtype=np.int64)[None, :]
    if shape == "32x32b":
        lane, col = t + 0 * j, j + 0 * t
    elif shape == "16x64b":
        lane, col = t // 4 + 8 * (t % 2) + 0 * j, 2 * j + (t // 2) % 2
    elif shape == "16x128b":
        lane, col = t // 4 + 8 * (j % 2), 4 * (j // 2) + t % 4
    elif shape == "16x256b":
        lane, col = t // 4 + 8 * ((j // 2) % 2), 8 * (j // 4) + 2 * (t % 4) + j % 2
    elif shape == "16x32bx2":
        lane, col = t % 16 + 0 * j, j + (t // 16) * off
    else:  # pragma: no cover - guarded by the decoder
        raise ValueError(shape)
    if pack:
        col = 2 * col
    return lane, col, nreg


# ------------------------------------------------------------------------------------------- decode helpers
# ------------------------------------------------------------------------------------------- run-time helpers
def _collective(ctx, what: str) -> bool:
    """.sync.aligned warp-collective entry check; False when no lane executes (uniformly false guard)."""
    if not ctx.mask.any():
        return False
    ctx.require_converged(what)
    w = ctx.warp
    gone = w.valid & ~w.alive
    if gone.any():
        raise SyncError(f"{what} is executed by a warp whose {lanes_str(gone)} have already exited",
                        expected="every thread of the warp alive (PTX: behaviour undefined otherwise)")
    return True


def _uniform(ctx, values: np.ndarray, what: str) -> int:
    lanes = ctx.lane_ids()
    v = np.asarray(values)[lanes]
    if (v != v[0]).any():
        i = int(np.nonzero(v != v[0])[0][0])
        raise SyncError(f"{what} differs between the lanes of the warp (lane {int(lanes[0])}: {int(v[0])}, lane "
                        f"{int(lanes[i])}: {int(v[i])})", expected=f"the same {what} in every thread of the warp")
    return int(v[0])


def warp_quadrant(ctx) -> int:
    """Warp index within its warpgroup, ``(linear %tid / 32) % 4``, from the warp's thread ids."""
    w = ctx.warp
    bx, by, _ = ctx.block_dims
    i = int(np.nonzero(w.valid)[0][0])
    x, y, z = (int(v) for v in w.tid[i])
    lin = x + y * bx + z * bx * by
    return (lin // WARP) % 4


class Tcgen05Tmem(AgentPort):
    """Per-simulation agent: the CTA-exit hook, the cta_group::2 rendezvous and the st landing timer (a store
    lands ``cfg.tmem_st_land_latency`` cycles after issue, through the agent interface, agent 'tcgen05')."""

    agent_name = "tcgen05"
    proxy = "async"
    sync_head = ("op",)
    home = None
    completing = None

    def __init__(self, sim, cfg):
        self.sim = sim
        self.env = sim.env
        self.st_latency = cfg.tmem_st_land_latency
        #: the exploration knob (tmem_st_extra_latency; :mod:`tcsim.explore`); a warp's stores land in issue order
        self.knob = LatencyKnob(cfg, "tcgen05.st", "tcgen05")
        self.last_due: dict = {}          # warp -> when its latest tcgen05.st lands
        self.rendezvous: dict = {}        # (cluster id, even rank, op) -> {0: [arrivals], 1: [arrivals]}
        self.warned: set = set()
        self.warp_pending: dict = {}      # warp -> its tcgen05.st not yet landed, in issue order
        sim.cta_exit_hooks.append(self.on_cta_exit)

    @classmethod
    def of(cls, ctx) -> "Tcgen05Tmem":
        return ctx.agent("tcgen05.tmem", lambda sim: cls(sim, sim.arch_config))

    # ---------------------------------------------------------------------------------- exit checks
    def on_cta_exit(self, cta) -> None:
        """Class 13 leak finding per allocation still held (tcsim.race.tmem_alloc: what the GPU does)."""
        tm = cta.tmem
        if tm is None:
            return
        for c, n in tm.leaks():
            o = tm.owner_of(c)
            self.sim.findings.report(T13.leak(tm, tm.alloc_sides.get(o), cta.last_exit, c, n,
                                              tm.sites.get(o)))
        if tm.ever_allocated and not tm.relinquished:
            self.sim.warnings.append(
                f"warning: {cta.label} allocated TMEM but never executed tcgen05.relinquish_alloc_permit "
                f"(alloc with no relinquish at exit); legal PTX: the relinquish only forbids later allocations")

    # ---------------------------------------------------------------------------------- stores
    def submit_store(self, cta, st: PendingStore) -> None:
        tm = tmem_of(cta)
        st.done = self.env.event()
        st.issued_at = self.env.now
        due = self.env.now + max(1, self.st_latency + self.knob.extra())
        st.due = self.last_due[st.warp] = max(due, self.last_due.get(st.warp, 0))
        tm.stage(st)
        self.async_issue(st, cta, what=st.what, issuer=st.issuer, issuer_warp=st.warp.id, issuer_pc=st.pc)
        timer = self.env.timeout(st.due - self.env.now)
        timer.callbacks.append(lambda _ev, st=st, cta=cta: self.land(cta, st))

    def land(self, cta, st: PendingStore) -> None:
        if st.landed or self.sim.error is not None:
            return
        try:
            self.land_tmem_store(cta, st)
        except TcsimError as e:
            e.with_context(loc=st.loc, where=f"tcgen05.st of {st.issuer}, landing at cycle {self.env.now:g}")
            self.sim.fail(e)
            return
        self.async_complete(st, cta, what=st.what, issuer=st.issuer, issuer_warp=st.warp.id, issuer_pc=st.pc)
        st.done.succeed()

    def warn_once(self, key, text: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            self.sim.warnings.append(text)

    # ---------------------------------------------------------------------------------- cta_group::2
    def pair_queue(self, cta, op: str) -> dict:
        key = (id(cta.cluster), cta.rank & ~1, op)
        q = self.rendezvous.get(key)
        if q is None:
            q = self.rendezvous[key] = {0: [], 1: []}
        return q


def _peer_of(ctx, what: str):
    cta = ctx.cta
    peer_rank = cta.rank ^ 1
    if peer_rank >= len(cta.cluster.ctas):
        raise SyncError(f"{what} in {cta.label} (cluster rank {cta.rank}) needs the peer CTA of rank {peer_rank}, "
                        f"but the cluster has {len(cta.cluster.ctas)} CTA(s)",
                        expected="a cluster of at least 2 CTAs (even size) for .cta_group::2")
    peer = cta.cluster.ctas[peer_rank]
    if peer.exited:
        raise SyncError(f"{what} in {cta.label}: the peer CTA {peer.label} (rank {peer_rank}) has already exited",
                        expected="the peer CTA to be launched and still active")
    return peer


# ------------------------------------------------------------------------------------------- decoders
@semantics(*(f"tcgen05.{op}" for op in SUBOPS))
def decode_tcgen05_mem(ins: ir.Instruction, info):
    """tcgen05 TMEM sub-operations (PTX ISA 9.1 §9.7.16.7.1, §9.7.16.8.3-5, §9.7.16.11.1); see module doc."""
    op = ins.mods[0]
    if op in ALLOC_OPS:
        return _decode_alloc_family(ins, info)
    if op in LDST_OPS:
        return _decode_ldst(ins, info)
    if op in WAIT_OPS:
        return _decode_wait(ins, info)
    return _decode_fence(ins, info)

# ---------------------------------------------------------------------------------- alloc / dealloc / relinquish
def _decode_alloc_family(ins, info):
    """tcgen05.alloc / dealloc / relinquish_alloc_permit (PTX ISA 9.1 §9.7.16.7.1); form: isa/tcgen05_mem_forms."""
    f = parse_alloc(ins, info)
    if f.op == "alloc":
        return _run_alloc(ins, f.dst, f.ncols, f.has_space, f.cta_group)
    if f.op == "dealloc":
        return _run_dealloc(ins, f.taddr, f.ncols, f.cta_group)
    return _run_relinquish(ins, f.cta_group)


def _dst_offset(ctx, dst: ir.Address, has_space: bool) -> int:
    """SMEM offset (in the executing CTA) of the alloc's destination word; the same for every lane.

    What ptxas does with the operand (ptxas 13.0, SASS read back with nvdisasm): the alloc's address store is an
    ``STS`` through the *low 32 bits* of the operand register.  A generic address of shared memory is
    ``SR_SWINHI << 32 | shared address`` on sm_100a (the generic shared window is 4 GiB aligned, so its low 32 bits
    are the ``.shared::cta`` address, CTA-id bits included; tcsim's window :data:`tcsim.memory.SHARED_WINDOW` has the
    same property).  So a generic address given to ``.shared::cta`` (ThunderKittens passes
    ``reinterpret_cast<uint64_t>(&smem_word)``) stores to the right word on the GPU; tcsim takes the low 32 bits as
    ptxas does and reports a lint note, since PTX ISA 9.1 §9.7.16.7.1 makes ``dst`` a ``.shared::cta`` address when
    the state space is given, and "if the address specified by dst does not fall within the address window of
    .shared::cta state space then the behavior is undefined" for the generic form."""
    a = ctx.address(dst)
    addr = _uniform(ctx, a, "tcgen05.alloc destination address")
    if not has_space and isinstance(dst.base, ir.Sym) and ctx.symbol_space(dst.base.name) == "shared":
        has_space = True          # [smem_var] names the variable's own (shared) address
    low = addr & 0xFFFFFFFF
    in_window = M.SHARED_WINDOW <= addr < M.SHARED_WINDOW + M.WINDOW_SIZE
    if has_space and addr >> 32:
        _lint_truncated(ctx, addr, low, ".shared::cta",
                        "PTX ISA 9.1 §9.7.16.7.1: with .shared::cta the dst operand is an address in the "
                        ".shared::cta state space, not a generic address" + ("" if in_window else
                                                                             " (and this value is not even in the "
                                                                             "generic shared window)"))
    elif not has_space and not in_window:
        _lint_truncated(ctx, addr, low, "generic",
                        "PTX ISA 9.1 §9.7.16.7.1: with no state space Generic Addressing is used, and \"if the address "
                        "specified by dst does not fall within the address window of .shared::cta state space then "
                        "the behavior is undefined\"")
    addr = low
    rank, off = (int(x[0]) for x in M.split_shared(np.asarray([addr], dtype=np.uint64)))
    if rank != ctx.rank:
        raise MemoryFault(f"tcgen05.alloc destination 0x{addr:x} belongs to cluster rank {rank}, not to the "
                          f"executing CTA (rank {ctx.rank})", expected="a .shared::cta address")
    if off % 4:
        raise MemoryFault(f"misaligned tcgen05.alloc destination 0x{addr:x}", expected="a 4-byte aligned address")
    ctx.smem_check(off, 4, "tcgen05.alloc destination")
    return off


def _lint_truncated(ctx, addr: int, low: int, form: str, rule: str) -> None:
    """Lint note: ptxas used the low 32 bits of an address operand (see :func:`_dst_offset`)."""
    from ..findings import Finding
    what = ctx.ins.full_opcode if ctx.ins is not None else "tcgen05.alloc"
    ctx.report(Finding(
        13, f"{what} [dst] = 0x{addr:x} is not a {'.shared::cta' if form != 'generic' else 'generic shared'} "
            f"address; ptxas stores the TMEM address through its low 32 bits, 0x{low:x} (tcsim does the same)",
        sides=(ctx.side(where=f"SMEM word 0x{low:x}"),), severity="lint",
        missing=rule,
        fix=("pass the 32-bit shared address (__cvta_generic_to_shared / cvta.to.shared) to the .shared::cta form"
             if form != "generic" else "pass the generic address of the shared word (cvta.shared), or use "
                                       ".shared::cta with a shared address")))


def _write_taddr(ctx, lane_mask: np.ndarray, off: int, col: int, loc) -> None:
    """Store the TMEM address into the SMEM word (one store, by the lowest executing lane)."""
    first = np.zeros(WARP, dtype=bool)
    first[int(np.nonzero(lane_mask)[0][0])] = True
    data = np.zeros((WARP, 4), dtype=np.uint8)
    data[:] = np.frombuffer(np.uint32(make_taddr(0, col)).tobytes(), dtype=np.uint8)
    addrs = np.full(WARP, M.shared_address(ctx.rank, off), dtype=np.uint64)
    ctx.store("shared::cta", addrs, data, mask=first, op="tcgen05.alloc")


def _release_writer(ctx, lanes, off, loc, what):
    """on_release callback that writes the granted address; errors stop the run with the alloc's location."""
    where = ctx.where

    def on_release(col):
        try:
            _write_taddr(ctx, lanes, off, col, loc)
            ctx.emit_sync("tcgen05.alloc", col=int(col), granted=True)
        except TcsimError as e:
            ctx.fail(e.with_context(loc=loc, where=where))
    return on_release


def _ncols_value(ctx, op) -> int:
    return _uniform(ctx, ctx.read(op, "u32"), "nCols")


def _run_alloc(ins, dst, ncols_op, has_space, group):
    what = f"tcgen05.alloc.cta_group::{group}"

    def run(ctx):
        if not _collective(ctx, what):
            return
        agent = Tcgen05Tmem.of(ctx)
        ncols = _ncols_value(ctx, ncols_op)
        off = _dst_offset(ctx, dst, has_space)
        tm = ctx.tmem
        _check_request(ctx, tm, ncols, what)
        site = f"{ins.loc} by {ctx.warp.label}"
        side = ctx.side(where=f"{ncols} TMEM columns")
        lanes = ctx.mask.copy()
        if group == 1:
            col = tm.try_alloc(ncols, check_permit=False)
            if col is not None:
                tm.sites[col] = site
                tm.alloc_sides[col] = side
                ctx.emit_sync("tcgen05.alloc", ncols=ncols, col=col, cta_group=1)
                _write_taddr(ctx, lanes, off, col, ins.loc)
                return
            ev = tm.alloc_event(ncols)
            ev.callbacks.append(lambda e, tm=tm, site=site, side=side: (tm.sites.__setitem__(e.value, site),
                                                                        tm.alloc_sides.__setitem__(e.value, side)))
            ctx.emit_sync("tcgen05.alloc", ncols=ncols, blocked=True, cta_group=1)
            ctx.block(lanes, ev, lambda tm=tm, n=ncols: f"tcgen05.alloc of {n} columns waits for free TMEM "
                                                        f"columns; {tm.describe()}",
                      on_release=_release_writer(ctx, lanes, off, ins.loc, what),
                      cause=lambda tm=tm, side=side, n=ncols: T13.unsatisfiable_alloc(tm, side, n))
            return
        # cta_group::2: rendezvous with the peer CTA's warp
        peer = _peer_of(ctx, what)
        half = ctx.rank & 1
        q = agent.pair_queue(ctx.cta, "alloc")
        ev = ctx.env.event()
        me = dict(ctx=ctx, cta=ctx.cta, ncols=ncols, event=ev, site=site, loc=ins.loc, side=side)
        ctx.emit_sync("tcgen05.alloc", ncols=ncols, cta_group=2, side=half)
        if q[1 - half]:
            other = q[1 - half].pop(0)
            if other["ncols"] != ncols:
                # ptxas 13.0's SASS: the even CTA's warp allocates (UTCATOMSWS.2CTA.FIND_AND_SET.ALIGN with its own
                # nCols) and stores the start to the odd CTA; the odd CTA's nCols only enters its own bookkeeping
                ctx.report(T13.pair_mismatch(other["side"], me["side"], what, other["ncols"], ncols))
                even = me if half == 0 else other
                me["ncols"] = other["ncols"] = even["ncols"]
            _pair_alloc(agent, me, other)
        else:
            q[half].append(me)
        ctx.block(lanes, ev, lambda me=me, peer=peer, q=q, half=half: _pair_alloc_reason(me, peer, q, half),
                  on_release=_release_writer(ctx, lanes, off, ins.loc, what),
                  cause=lambda me=me, peer=peer, q=q, s=half: (
                      T13.peer_never_arrives(me["side"], what, peer.label) if me in q[s] else
                      T13.unsatisfiable_alloc(tmem_of(me["cta"]), me["side"], me["ncols"])))
    return run


def _check_request(ctx, tm, ncols: int, what: str) -> None:
    """nCols in range (SyncError: the request has no meaning), the permit (class 13, a trap on the GPU) and the
    no-growth rule (class 13 warning; tcsim.race.tmem_alloc)."""
    tm.check_ncols(ncols)
    if tm.relinquished:
        ctx.report(T13.alloc_after_relinquish(tm, ctx.side(), what))
    if tm.last_request is not None and ncols > tm.last_request:
        ctx.report(T13.growing_ncols(tm, ctx.side(), what, ncols, tm.last_request))
    tm.last_request = ncols


def _pair_alloc(agent, a: dict, b: dict) -> None:
    """Allocate the same columns in both CTAs of a pair now, or register a joint waiter on both TMEMs."""
    ta, tb = tmem_of(a["cta"]), tmem_of(b["cta"])
    n = a["ncols"]
    state = {"done": False}

    def retry() -> bool:
        if state["done"]:
            return True
        common = sorted(set(ta.free_starts(n)) & set(tb.free_starts(n)))
        if not common:
            return False
        col = common[0]
        ta.claim(col, n)
        tb.claim(col, n)
        ta.sites[col], tb.sites[col] = a["site"], b["site"]
        ta.alloc_sides[col], tb.alloc_sides[col] = a["side"], b["side"]
        state["done"] = True
        a["event"].succeed(col)
        b["event"].succeed(col)
        return True

    a["joint"] = b["joint"] = True
    if not retry():
        ta.add_waiter(retry)
        tb.add_waiter(retry)


def _pair_alloc_reason(me, peer, q, side) -> str:
    if me in q[side]:
        return (f"tcgen05.alloc.cta_group::2 of {me['ncols']} columns waits for the peer {peer.label} "
                f"(rank {peer.rank}) to execute tcgen05.alloc.cta_group::2")
    return (f"tcgen05.alloc.cta_group::2 of {me['ncols']} columns waits for the same free columns in both CTAs "
            f"of the pair; {tmem_of(me['cta']).describe()}; {tmem_of(peer).describe()}")


def _taddr_value(ctx, op) -> tuple[int, int]:
    v = _uniform(ctx, ctx.read(op, "u32"), "TMEM address")
    return split_taddr(v)


def _dealloc_checks(tm, lane: int, col: int, ncols: int, what: str, ctx=None, side=None) -> None:
    """Class 13 findings of a dealloc (tcsim.race.tmem_alloc says what the GPU does with each), then the
    tcgen05.st-in-flight check."""
    tm.check_ncols(ncols)
    report = ctx.report if ctx is not None else None
    if side is None and ctx is not None:
        side = ctx.side(where=T13.cols(col, ncols))
    if lane != 0 and report is not None:
        report(T13.lane_field(tm, side, what, lane, col))
    kind = tm.dealloc_problem(col, ncols)
    if kind is not None:
        f = T13.bad_dealloc(tm, side, what, col, ncols, kind)
        if report is None:
            raise SyncError(f.message, expected=f.fix)
        report(f)
    busy = tm.pending_in_columns(col, ncols)
    if busy:
        st = busy[0]
        raise SyncError(f"{what} of columns [{col}, {col + ncols}) in {tm.label} while a tcgen05.st into them "
                        f"(issued at {st.loc} by {st.issuer}, cycle {st.issued_at:g}) has not completed",
                        expected="tcgen05.wait::st by the storing warp (and a thread sync) before tcgen05.dealloc")


def _run_dealloc(ins, taddr_op, ncols_op, group):
    what = f"tcgen05.dealloc.cta_group::{group}"

    def run(ctx):
        if not _collective(ctx, what):
            return
        agent = Tcgen05Tmem.of(ctx)
        lane, col = _taddr_value(ctx, taddr_op)
        ncols = _ncols_value(ctx, ncols_op)
        tm = ctx.tmem
        dside = ctx.side(where=T13.cols(col, ncols))
        _dealloc_checks(tm, lane, col, ncols, what, ctx, dside)
        if group == 1:
            _free(tm, col, ncols, dside)
            ctx.emit_sync("tcgen05.dealloc", col=col, ncols=ncols, cta_group=1)
            return
        peer = _peer_of(ctx, what)
        side = ctx.rank & 1
        q = agent.pair_queue(ctx.cta, "dealloc")
        ev = ctx.env.event()
        me = dict(cta=ctx.cta, col=col, ncols=ncols, event=ev, loc=ins.loc, side=dside)
        ctx.emit_sync("tcgen05.dealloc", col=col, ncols=ncols, cta_group=2, side=side)
        if q[1 - side]:
            other = q[1 - side].pop(0)
            if (other["col"], other["ncols"]) != (col, ncols):
                raise SyncError(f"{what}: this CTA frees columns [{col}, {col + ncols}) but the peer "
                                f"{other['cta'].label} frees [{other['col']}, {other['col'] + other['ncols']}) "
                                f"(at {other['loc']})", expected="the same address and nCols on both CTAs of the pair")
            # re-check the peer side now (it may have changed while it waited)
            _dealloc_checks(tmem_of(other["cta"]), 0, col, ncols, what, ctx, other["side"])
            _free(tm, col, ncols, dside)
            _free(tmem_of(other["cta"]), col, ncols, other["side"])
            other["event"].succeed(col)
            ev.succeed(col)
        else:
            q[side].append(me)
        ctx.block(ctx.mask.copy(), ev,
                  lambda me=me, peer=peer: f"{what} of columns [{me['col']}, {me['col'] + me['ncols']}) waits for "
                                           f"the peer {peer.label} (rank {peer.rank}) to execute {what}",
                  cause=lambda me=me, peer=peer: T13.peer_never_arrives(me["side"], what, peer.label))
    return run


def _free(tm, col: int, ncols: int, side) -> None:
    """Free the 32-column units of ``[col, col + ncols)`` that are allocated (the GPU frees exactly the named
    units) and remember the dealloc that freed each."""
    lo, hi = max(col, 0), min(col + ncols, 512)
    if hi > lo:
        tm.free(lo, hi - lo)
        for u in range(lo // UNIT, hi // UNIT):
            tm.freed_sides[u] = side


def _run_relinquish(ins, group):
    what = f"tcgen05.relinquish_alloc_permit.cta_group::{group}"

    def run(ctx):
        if not _collective(ctx, what):
            return
        Tcgen05Tmem.of(ctx)
        ctx.tmem.relinquish()
        if ctx.tmem.relinquish_side is None:
            ctx.tmem.relinquish_side = ctx.side()
        ctx.emit_sync("tcgen05.relinquish_alloc_permit", cta_group=group)
    return run


# ---------------------------------------------------------------------------------- ld / st
def _decode_ldst(ins, info):
    """tcgen05.ld / tcgen05.st (PTX ISA 9.1 §9.7.16.8.3, §9.7.16.8.4; maps: tcgen05_layouts.md (d)); form:
    isa/tcgen05_mem_forms."""
    f = parse_ldst(ins, info)
    lane_off, col_off, _ = ldst_map(f.shape, f.num, f.half_split, f.pack)
    spec = _LdSt(f.name, f.shape, f.nlanes, lane_off, col_off, f.pack, f.elems, f.addr, ins.loc)
    return spec.run_ld if f.op == "ld" else spec.run_st


def _foreign_quadrant(ctx, what: str, q: int, lane0: int, routed: int, nlanes: int):
    """The finding for a tcgen05.ld/st whose address names lanes outside the issuing warp's quadrant: the PTX ISA
    lets warp q of a warpgroup access only lanes [32q, 32q+32); the GPU (release build) routes the access to the
    warp's own quadrant -- the address's lane bits above bit 4 are not used -- and a ``-G`` build's warp TMEM
    access check traps (DeepGEMM's epilogues pass lane 0 from every warp: DeepGEMM PR #341)."""
    from ..findings import Finding
    span = f"TMEM lanes [{routed}, {routed + nlanes})"
    return Finding(
        cls=0, severity="warning",
        message=(f"{what} names TMEM lanes [{lane0}, {lane0 + nlanes}), but warp {q} of its warpgroup may access "
                 f"only lanes [{32 * q}, {32 * q + 32}) (PTX ISA 9.7.16.8.3 / 9.7.16.8.4); the GPU routes the "
                 f"access to the warp's own quadrant, {span}, and so does tcsim (a -G build traps here)"),
        sides=(ctx.side(proxy="async", where=span),),
        missing="the warp's quadrant in the address's lane field (bits 16-22)",
        fix=f"add (32 * (warp index % 4)) << 16 to the TMEM address (lane field {routed} instead of {lane0})")


class _LdSt:
    """A decoded tcgen05.ld / st: the register map and operands."""

    def __init__(self, name, shape, nlanes, lane_off, col_off, pack, elems, addr, loc):
        self.name, self.shape, self.nlanes, self.pack = name, shape, nlanes, pack
        self.lane_off, self.col_off = lane_off, col_off          # (32, R) int64
        self.width = 2 if pack else 1                             # TMEM columns per register
        c = col_off if not pack else np.concatenate([col_off, col_off + 1], axis=1)
        self.col_lo, self.col_hi = int(c.min()), int(c.max())     # column span relative to C0
        self.elems, self.addr, self.loc = elems, addr, loc
        self.nreg = lane_off.shape[1]

    def _locate(self, ctx):
        """Check the access and return (tmem, lanes (32,R), cols (32,R) of the low column)."""
        if not _collective(ctx, self.name):
            return None
        a = ctx.address(self.addr).astype(np.int64) & 0xFFFFFFFF
        taddr = _uniform(ctx, a, "TMEM address")
        lane0, col0 = split_taddr(taddr)
        tm = ctx.tmem
        what = f"{self.name} at TMEM address 0x{taddr:08x}"
        q = warp_quadrant(ctx)
        routed = 32 * q + lane0 % 32
        if routed != lane0 and routed + self.nlanes <= 32 * q + 32:
            ctx.report(_foreign_quadrant(ctx, what, q, lane0, routed, self.nlanes))
            lane0 = routed
        tm.check_bounds(lane0, self.nlanes, col0 + self.col_lo, self.col_hi - self.col_lo + 1, what)
        tm.check_quadrant(q, lane0, self.nlanes, what)
        lanes = lane0 + self.lane_off
        cols = col0 + self.col_off
        touched = cols if not self.pack else np.concatenate([cols, cols + 1], axis=1)
        bad = tm.unallocated_columns(touched)
        if bad:         # class 13; the GPU reaches the physical cells (tcsim.race.tmem_alloc), so does tcsim
            span = T13.cols(col0 + self.col_lo, self.col_hi - self.col_lo + 1)
            ctx.report(T13.unallocated_access(tm, ctx.side(proxy="async", where=f"{span} of {tm.label}"), what,
                                              col0 + self.col_lo, col0 + self.col_hi + 1, bad[0]))
        return tm, lanes, cols

    def run_ld(self, ctx):
        got = self._locate(ctx)
        if got is None:
            return
        tm, lanes, cols = got
        agent = Tcgen05Tmem.of(ctx)
        m = ctx.mask
        if tm.pending:
            sel_l, sel_c = lanes[m], cols[m]
            if self.pack:
                sel_l, sel_c = np.concatenate([sel_l, sel_l]), np.concatenate([sel_c, sel_c + 1])
            stale = tm.pending_overlap(sel_l, sel_c)
            if stale:
                st = stale[0]
                agent.warn_once((id(ctx.cta), ctx.pc, st.pc),
                                f"warning: {self.loc}: {self.name} by {ctx.warp.label} at cycle {ctx.now:g} reads "
                                f"TMEM cells of a tcgen05.st (issued at {st.loc} by {st.issuer}) that has not "
                                f"completed; it sees the old values (missing tcgen05.wait::st?)")
        vals = ctx.tmem_load(lanes, cols, 4 * self.width, pack=self.pack)
        ctx.write_columns(self.elems, "b32", vals)

    def run_st(self, ctx):
        got = self._locate(ctx)
        if got is None:
            return
        tm, lanes, cols = got
        agent = Tcgen05Tmem.of(ctx)
        m = ctx.mask
        vals = np.stack([ctx.read(e, "b32") for e in self.elems], axis=1).astype(np.uint32)   # (32, R)
        sel = np.nonzero(m)[0]
        l, c, v = lanes[sel].ravel(), cols[sel].ravel(), vals[sel].ravel()
        if self.pack:
            # .unpack::16b: low half -> column 2d, high half -> 2d+1, upper 16 bits zero (tcsim's choice)
            l = np.stack([l, l], axis=1).ravel()
            c = np.stack([c, c + 1], axis=1).ravel()
            v = np.stack([v & np.uint32(0xFFFF), v >> np.uint32(16)], axis=1).ravel()
        st = PendingStore(lanes=l.astype(np.int64), cols=c.astype(np.int64), values=v.astype(np.uint32),
                          what=self.name, issuer=ctx.warp.label, warp=ctx.warp, loc=self.loc, pc=ctx.pc,
                          unallocated_at_issue=bool(tm.unallocated_columns(c)))
        agent.submit_store(ctx.cta, st)
        pend = agent.warp_pending.setdefault(ctx.warp, [])
        pend[:] = [p for p in pend if not p.landed]
        pend.append(st)


# ---------------------------------------------------------------------------------- wait / fence
def _decode_wait(ins, info):
    """tcgen05.wait::ld / wait::st (PTX ISA 9.1 §9.7.16.8.5); form: isa/tcgen05_mem_forms."""
    op = parse_wait(ins, info)
    name = f"tcgen05.{op}"

    def run(ctx):
        if not _collective(ctx, name):
            return
        if op == "wait::ld":          # loads complete at issue
            ctx.emit_sync("tcgen05.wait", kind="ld")
            return
        agent = Tcgen05Tmem.of(ctx)
        pend = [p for p in agent.warp_pending.get(ctx.warp, []) if not p.landed]
        agent.warp_pending[ctx.warp] = pend
        ctx.emit_sync("tcgen05.wait", kind="st", pending=len(pend))
        if not pend:
            return
        last = pend[-1]               # stores of a warp land in issue order
        ctx.block(ctx.mask.copy(), last.done,
                  lambda n=len(pend), last=last: f"tcgen05.wait::st waits for {n} tcgen05.st to land "
                                                 f"(last issued at {last.loc}, due at cycle {last.due:g})")
    return run


def _decode_fence(ins, info):
    """tcgen05.fence::before_thread_sync / after_thread_sync (PTX ISA 9.1 §9.7.16.11.1)."""
    kind = parse_fence(ins, info)
    meaning = ("orders this thread's prior async tcgen05 operations before its subsequent tcgen05 and "
               "execution-ordering operations" if kind == "before_thread_sync" else
               "orders this thread's subsequent async tcgen05 operations after its prior tcgen05 and "
               "execution-ordering operations")

    def run(ctx):
        if ctx.mask.any():
            ctx.emit_sync("tcgen05.fence", fence=kind, ordering=meaning)
    return run
