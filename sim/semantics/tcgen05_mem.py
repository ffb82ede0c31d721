"""tcgen05, the Tensor Memory side: alloc / dealloc / relinquish_alloc_permit, ld / st, wait::ld / wait::st and
the tcgen05 fences (sm_100a family).

PTX ISA 9.1 §9.7.16.1 (Tensor Memory), §9.7.16.2.3 (data-movement shapes and their matrix fragments),
§9.7.16.5 (issue granularity), §9.7.16.6 (tcgen05 memory-consistency model), §9.7.16.7.1 (tcgen05.alloc,
tcgen05.dealloc, tcgen05.relinquish_alloc_permit), §9.7.16.8.3 (tcgen05.ld), §9.7.16.8.4 (tcgen05.st),
§9.7.16.8.5 (tcgen05.wait), §9.7.16.11.1 (tcgen05.fence).  Facts: /work/shared/reference/tcgen05.md (a), (f)
and tcgen05_layouts.md (d).  The TMEM state and allocator live in :mod:`tcsim.tmem`; ``tcgen05.mma / commit /
cp / shift`` are decoded by ``tcgen05_mma.py`` (this module only claims the sub-operations listed in
:data:`SUBOPS`, keyed on the first qualifier).

Forms
-----
``tcgen05.alloc.cta_group::{1,2}.sync.aligned{.shared::cta}.b32 [dst], nCols``
    One whole warp (``.sync.aligned``: every live lane of the warp must execute it together).  Blocks until
    ``nCols`` columns are free (first fit at a multiple of nCols), then writes the TMEM address (lane 0, start
    column) to the 32-bit SMEM word ``dst`` through the context's store path (a weak ``st`` on the observation
    bus).  ``dst`` is a ``.shared::cta`` address, or with no state space a generic address that must fall in
    the executing CTA's shared window.  ``nCols`` is a power of two in [32, 512] (VerifyError at load for an
    immediate, as ptxas; SyncError at run time for a register).  The number of columns must not increase
    between two allocations of a CTA in execution order (PTX 9.1: SyncError), and no allocation may follow a
    ``relinquish_alloc_permit`` of the CTA (SyncError).
``tcgen05.dealloc.cta_group::{1,2}.sync.aligned.b32 taddr, nCols``
    Frees exactly one earlier allocation (lane field 0, its start column, its size); anything else -- double
    free, wrong size, an address inside an allocation -- is a SyncError.  Freed columns wake blocked allocs.
    A ``tcgen05.st`` still in flight into the freed columns is a SyncError (a ``tcgen05.wait::st`` is missing).
``tcgen05.relinquish_alloc_permit.cta_group::{1,2}.sync.aligned``
    Forbids further allocations by the executing CTA.  An alloc already blocked is still granted.
``cta_group::2``
    One warp in each CTA of the pair (cluster ranks differing only in bit 0) issues the same alloc / dealloc;
    each side blocks until the peer's warp arrives (a rendezvous per pair, matched in arrival order), then
    the same columns are allocated (first fit over the columns free in *both* CTAs) or freed in both CTAs, and
    each side's address word is written to its own ``dst``.  Both sides must pass the same nCols (and for
    dealloc the same address).  A missing or exited peer is a SyncError; a peer that never arrives shows up in
    the deadlock report.  ``relinquish_alloc_permit.cta_group::2`` relinquishes the executing CTA's permit.
    All tcgen05 instructions of a function (this module's and mma/cp/shift/commit) must use the same
    ``.cta_group``: checked at load over the whole function (VerifyError naming both lines, as ptxas).
``tcgen05.ld.sync.aligned.{32x32b,16x64b,16x128b,16x256b,16x32bx2}.x{1..128}{.pack::16b}.b32 {r...}, [taddr]{, off}``
``tcgen05.st.sync.aligned.<shape>.x{1..128}{.unpack::16b}.b32 [taddr]{, off}, {r...}``
    Register maps of tcgen05_layouts.md (d) (:func:`ldst_map`); the vector length must equal the count the
    shape and .num require (VerifyError at load naming it; 16x128b stops at x64 and 16x256b at x32, as
    ptxas).  Every register is a 32-bit register (f32 registers are fine).  All lanes must pass the same
    ``taddr``.  Checks at run time, in this order: the box stays inside the 128 x 512 grid (MemoryFault), the
    warp-quadrant rule -- warp q = (linear thread id / 32) % 4, computed from the warp's %tid values (not
    %warpid), may touch only lanes [32q, 32q+32) (MemoryFault) -- and every touched column is allocated
    (MemoryFault: access before alloc or after dealloc).
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
(:class:`tcsim.tmem.PendingStore`) and land in TMEM ``st_latency`` cycles after issue (a placeholder of
:class:`LdStParams`; a simulation may carry a ``tcgen05_params`` attribute to override it).  ``wait::st``
blocks the warp until all of its stores have landed.  So a kernel that does ``st`` then ``mma`` / ``ld``
without ``wait::st`` really sees stale TMEM; a ``tcgen05.ld`` that reads cells of a store still in flight also
records a warning in the simulation's ``warnings``.

Exit checks (a CTA-exit hook registered once per simulation)
------------------------------------------------------------
Columns still allocated when the CTA's last thread exits: SyncError "tcgen05.alloc ... never deallocated",
listing the columns and where they were allocated.  A CTA that allocated but never executed
``relinquish_alloc_permit``: PTX does not require the relinquish (tcgen05.md (a) states only that
everything allocated must be freed before exit, and that relinquish forbids later allocs), so this is legal
and recorded as a warning ("alloc with no relinquish at exit") in the simulation's ``warnings`` list.

Unsupported (UnsupportedError at load): ``tcgen05.ld.red`` (sm_101a/sm_103 family only; not on sm_100a) and any
other tcgen05 sub-operation or qualifier not listed above.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import MemoryFault, SyncError, TcsimError, UnsupportedError, VerifyError
from .. import memory as M
from ..agents.port import AgentPort
from ..context import lanes_str
from ..machine import WARP
from ..ptxtypes import size_of
from ..tmem import PendingStore, make_taddr, split_taddr, tmem_of
from .registry import semantics

ALLOC_OPS = ("alloc", "dealloc", "relinquish_alloc_permit")
LDST_OPS = ("ld", "st")
WAIT_OPS = ("wait::ld", "wait::st")
FENCE_OPS = ("fence::before_thread_sync", "fence::after_thread_sync")
SUBOPS = ALLOC_OPS + LDST_OPS + WAIT_OPS + FENCE_OPS

#: shape -> (TMEM lanes touched, registers per unit of .num)
SHAPES = {"32x32b": (32, 1), "16x64b": (16, 1), "16x128b": (16, 2), "16x256b": (16, 4), "16x32bx2": (16, 1)}
NUMS = {f"x{n}": n for n in (1, 2, 4, 8, 16, 32, 64, 128)}
MAX_REGS = 128
TCGEN05_ARCHS = ("sm_100a", "sm_100f", "sm_101a", "sm_101f", "sm_103a", "sm_103f", "sm_110a", "sm_110f")
#: ops that carry .cta_group and therefore take part in the one-cta_group-per-function rule
CTA_GROUP_OPS = ("alloc", "dealloc", "relinquish_alloc_permit", "mma", "cp", "shift", "commit")


@dataclass(frozen=True)
class LdStParams:
    """Placeholder timing of the tcgen05 ld/st path (cycles); the timing issue will replace these numbers."""

    st_latency: int = 32        # cycles from tcgen05.st issue until its cells land in TMEM


DEFAULT_PARAMS = LdStParams()


def _mine(ins) -> bool:
    m0 = ins.mods[0] if ins.mods else ""
    return m0 in SUBOPS or m0.startswith("fence::") or m0.startswith("wait::")


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
def _fail(ins, msg: str, expected: str | None = None, cls=VerifyError):
    raise cls(f"{ins.full_opcode}: {msg}", expected=expected)


def _check_arch(ins, info) -> None:
    if info.arch not in TCGEN05_ARCHS:
        raise VerifyError(f"{ins.full_opcode} requires an sm_100a-family target, but the module targets "
                          f"{info.arch}", expected=".target sm_100a (or sm_100f/sm_103a/sm_110a...)")


def _split_mods(ins, allowed: dict) -> dict:
    """Classify ins.mods[1:] into the groups of ``allowed`` (group -> set of qualifiers); each group at most
    once; unknown qualifiers are UnsupportedError (ptxas-style order independence)."""
    got: dict = {}
    for m in ins.mods[1:]:
        for group, names in allowed.items():
            if m in names:
                if group in got:
                    raise VerifyError(f"{ins.full_opcode}: more than one {group} qualifier "
                                  f"(.{got[group]} and .{m})")
                got[group] = m
                break
        else:
            raise UnsupportedError(f"qualifier .{m} of tcgen05.{ins.mods[0]} is not supported",
                                   expected=f"the qualifiers of tcgen05.{ins.mods[0]} in PTX ISA §9.7.16")
    return got


def _cta_group_of(ins) -> str | None:
    return ins.mod_with_prefix("cta_group::")


def check_uniform_cta_group(ins, info) -> int:
    """The one ``.cta_group`` of every tcgen05 instruction of the function (PTX ISA §9.7.16.7.1: "All tcgen05
    instructions within a kernel must specify the same value for the .cta_group qualifier"); VerifyError naming
    ``ins`` and the first instruction that disagrees with it.  Returns 1 or 2.  Shared with tcgen05_mma.py."""
    mine = _cta_group_of(ins)
    for other in info.function.body:     # (a decode-time scan: tcgen05.alloc/dealloc/relinquish are few)
        if other.opcode != "tcgen05" or not other.mods or other.mods[0] not in CTA_GROUP_OPS:
            continue
        grp = _cta_group_of(other)
        if grp and grp != mine:
            raise VerifyError(f"{ins.full_opcode} uses .{mine} but {other.full_opcode} at {other.loc} uses "
                              f".{grp}; all tcgen05 instructions of function {info.function.name} must use the "
                              f"same .cta_group", expected="one .cta_group for the whole function, as ptxas requires")
    return int(mine.split("::")[1])


def _reg32(ins, info, op, what: str) -> None:
    if not isinstance(op, ir.Reg):
        raise VerifyError(f"{ins.full_opcode}: {what} {op} must be a 32-bit register")
    t = info.reg_type(op)
    if t is not None and (t == "pred" or size_of(t) != 4):
        raise VerifyError(f"{ins.full_opcode}: {what} {op} is a .{t} register", expected="a 32-bit register")


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


def warnings_of(sim) -> list:
    return sim.warnings


class Tcgen05Tmem(AgentPort):
    """Per-simulation agent: the CTA-exit hook, the cta_group::2 rendezvous and the st landing timer; a store lands
    through the agent interface (agent 'tcgen05')."""

    agent_name = "tcgen05"
    proxy = "async"
    sync_head = ("op",)
    home = None
    completing = None

    def __init__(self, sim):
        self.sim = sim
        self.env = sim.env
        self.params = getattr(sim, "tcgen05_params", DEFAULT_PARAMS)
        self.rendezvous: dict = {}        # (cluster id, even rank, op) -> {0: [arrivals], 1: [arrivals]}
        self.warned: set = set()
        self.warp_pending: dict = {}      # warp -> its tcgen05.st not yet landed, in issue order
        sim.cta_exit_hooks.append(self.on_cta_exit)

    @classmethod
    def of(cls, ctx) -> "Tcgen05Tmem":
        return ctx.agent("tcgen05.tmem", cls)

    # ---------------------------------------------------------------------------------- exit checks
    def on_cta_exit(self, cta) -> None:
        tm = cta.tmem
        if tm is None:
            return
        leaks = tm.leaks()
        if leaks:
            parts = [f"[{c}, {c + n})" + (f" (allocated at {tm.sites[c]})" if c in tm.sites else "")
                     for c, n in leaks]
            raise SyncError(f"{cta.label} exited with TMEM columns still allocated: tcgen05.alloc of "
                            + ", ".join(parts) + " never deallocated",
                            expected="tcgen05.dealloc of every allocation before the kernel exits")
        if tm.ever_allocated and not tm.relinquished:
            warnings_of(self.sim).append(
                f"warning: {cta.label} allocated TMEM but never executed tcgen05.relinquish_alloc_permit "
                f"(alloc with no relinquish at exit); legal PTX: the relinquish only forbids later allocations")

    # ---------------------------------------------------------------------------------- stores
    def submit_store(self, cta, st: PendingStore) -> None:
        tm = tmem_of(cta)
        st.done = self.env.event()
        st.issued_at = self.env.now
        st.due = self.env.now + self.params.st_latency
        tm.stage(st)
        self.async_issue(st, cta, what=st.what, issuer=st.issuer, issuer_warp=st.warp.id, issuer_pc=st.pc)
        timer = self.env.timeout(self.params.st_latency)
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
            warnings_of(self.sim).append(text)

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
@semantics("tcgen05", when=_mine)
def decode_tcgen05_mem(ins: ir.Instruction, info):
    """tcgen05 TMEM sub-operations (PTX ISA 9.1 §9.7.16.7.1, §9.7.16.8.3-5, §9.7.16.11.1); see module doc."""
    _check_arch(ins, info)
    op = ins.mods[0]
    if op in ALLOC_OPS:
        return _decode_alloc_family(ins, info, op)
    if op in LDST_OPS:
        return _decode_ldst(ins, info, op)
    if op in WAIT_OPS:
        return _decode_wait(ins, op)
    if op in FENCE_OPS:
        return _decode_fence(ins, op)
    raise UnsupportedError(f"tcgen05.{op} is not supported by tcsim",
                           expected="tcgen05." + "/".join(SUBOPS) + " (mma/cp/shift/commit: tcgen05_mma)")


# ---------------------------------------------------------------------------------- alloc / dealloc / relinquish
def _decode_alloc_family(ins, info, op):
    """tcgen05.alloc / dealloc / relinquish_alloc_permit (PTX ISA 9.1 §9.7.16.7.1)."""
    allowed = {"cta_group": {"cta_group::1", "cta_group::2"}, "sync": {"sync"}, "aligned": {"aligned"}}
    if op == "alloc":
        allowed["space"] = {"shared::cta"}
    if op != "relinquish_alloc_permit":
        allowed["type"] = {"b32"}
    got = _split_mods(ins, allowed)
    for need in allowed:
        if need not in got and need != "space":
            raise VerifyError(f"{ins.full_opcode}: the .{'b32' if need == 'type' else need} qualifier is required",
                              expected=f"tcgen05.{op}.cta_group::N.sync.aligned"
                                       + (".b32" if op != "relinquish_alloc_permit" else ""))
    group = check_uniform_cta_group(ins, info)
    ops = ins.operands
    if op == "alloc":
        if len(ops) != 2 or not isinstance(ops[0], ir.Address) or ops[0].coords is not None:
            _fail(ins, "expects operands [dst], nCols")
        dst = ops[0]
        if isinstance(dst.base, ir.Reg):
            t = info.reg_type(dst.base)
            if t is not None and size_of(t) not in (4, 8):
                _fail(ins, f"address register {dst.base} is .{t}")
            if "space" not in got and t is not None and size_of(t) != 8:
                _fail(ins, f"a generic address needs a 64-bit register, not .{t} {dst.base}")
        _check_ncols_operand(ins, info, ops[1], power_of_two=True)
        return _run_alloc(ins, dst, ops[1], "space" in got, group)
    if op == "dealloc":
        if len(ops) != 2 or isinstance(ops[0], ir.Address):
            _fail(ins, "expects operands taddr, nCols")
        if not isinstance(ops[0], ir.Imm):
            _reg32(ins, info, ops[0], "taddr")
        _check_ncols_operand(ins, info, ops[1], power_of_two=False)
        return _run_dealloc(ins, ops[0], ops[1], group)
    if ops:
        _fail(ins, "takes no operands")
    return _run_relinquish(ins, group)


def _check_ncols_operand(ins, info, op, power_of_two: bool) -> None:
    if isinstance(op, ir.Imm):
        if op.kind != "int":
            _fail(ins, f"nCols {op} must be an integer")
        n = int(op.value)
        if power_of_two:     # ptxas: alloc immediates must be a power of two in [32, 512]
            if n < 32 or n > 512:
                _fail(ins, f"nCols {n} is out of range", expected="a power of two in [32, 512]")
            if n & (n - 1):
                _fail(ins, f"nCols {n} is not a power of two", expected="a power of two in [32, 512]")
        elif n % 32 or n <= 0:   # ptxas: dealloc immediates must be a multiple of 32
            _fail(ins, f"nCols {n} is not a positive multiple of 32", expected="a power of two in [32, 512]")
    else:
        _reg32(ins, info, op, "nCols")


def _dst_offset(ctx, dst: ir.Address, has_space: bool) -> int:
    """SMEM offset (in the executing CTA) of the alloc's destination word; the same for every lane."""
    a = ctx.address(dst)
    addr = _uniform(ctx, a, "tcgen05.alloc destination address")
    if not has_space and isinstance(dst.base, ir.Sym) and ctx.symbol_space(dst.base.name) == "shared":
        has_space = True          # [smem_var] names the variable's own (shared) address
    if not has_space:
        if not M.SHARED_WINDOW <= addr < M.SHARED_WINDOW + M.WINDOW_SIZE:
            raise MemoryFault(f"tcgen05.alloc destination 0x{addr:x} is not a shared-memory address",
                              expected="a generic address in the executing CTA's .shared::cta window")
        addr -= M.SHARED_WINDOW
    rank, off = (int(x[0]) for x in M.split_shared(np.asarray([addr], dtype=np.uint64)))
    if rank != ctx.rank:
        raise MemoryFault(f"tcgen05.alloc destination 0x{addr:x} belongs to cluster rank {rank}, not to the "
                          f"executing CTA (rank {ctx.rank})", expected="a .shared::cta address")
    if off % 4:
        raise MemoryFault(f"misaligned tcgen05.alloc destination 0x{addr:x}", expected="a 4-byte aligned address")
    ctx.smem_check(off, 4, "tcgen05.alloc destination")
    return off


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
        _check_request(tm, ncols, what)
        site = f"{ins.loc} by {ctx.warp.label}"
        lanes = ctx.mask.copy()
        if group == 1:
            col = tm.try_alloc(ncols)
            if col is not None:
                tm.sites[col] = site
                ctx.emit_sync("tcgen05.alloc", ncols=ncols, col=col, cta_group=1)
                _write_taddr(ctx, lanes, off, col, ins.loc)
                return
            ev = tm.alloc_event(ncols)
            ev.callbacks.append(lambda e, tm=tm, site=site: tm.sites.__setitem__(e.value, site))
            ctx.emit_sync("tcgen05.alloc", ncols=ncols, blocked=True, cta_group=1)
            ctx.block(lanes, ev, lambda tm=tm, n=ncols: f"tcgen05.alloc of {n} columns waits for free TMEM "
                                                        f"columns; {tm.describe()}",
                      on_release=_release_writer(ctx, lanes, off, ins.loc, what))
            return
        # cta_group::2: rendezvous with the peer CTA's warp
        peer = _peer_of(ctx, what)
        side = ctx.rank & 1
        q = agent.pair_queue(ctx.cta, "alloc")
        ev = ctx.env.event()
        me = dict(ctx=ctx, cta=ctx.cta, ncols=ncols, event=ev, site=site, loc=ins.loc)
        ctx.emit_sync("tcgen05.alloc", ncols=ncols, cta_group=2, side=side)
        if q[1 - side]:
            other = q[1 - side].pop(0)
            if other["ncols"] != ncols:
                raise SyncError(f"{what}: this CTA requests {ncols} columns but the peer {other['cta'].label} "
                                f"requested {other['ncols']} (at {other['loc']})",
                                expected="the same nCols on both CTAs of the pair")
            _pair_alloc(agent, me, other)
        else:
            q[side].append(me)
        ctx.block(lanes, ev, lambda me=me, peer=peer, q=q, side=side: _pair_alloc_reason(me, peer, q, side),
                  on_release=_release_writer(ctx, lanes, off, ins.loc, what))
    return run


def _check_request(tm, ncols: int, what: str) -> None:
    tm.check_ncols(ncols)
    tm.check_permit(what)
    if tm.last_request is not None and ncols > tm.last_request:
        raise SyncError(f"{what} of {ncols} columns in {tm.label} follows an allocation of {tm.last_request} "
                        f"columns; the number of columns must not increase between allocations of a CTA",
                        expected=f"nCols <= {tm.last_request} (PTX ISA 9.1 §9.7.16.7.1)")
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


def _dealloc_checks(tm, lane: int, col: int, ncols: int, what: str) -> None:
    if lane != 0:
        raise SyncError(f"{what} of address 0x{make_taddr(lane, col):08x}: lane field {lane} is not 0",
                        expected="the address written by tcgen05.alloc (lane field 0)")
    tm.check_free(col, ncols)
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
        _dealloc_checks(tm, lane, col, ncols, what)
        if group == 1:
            tm.free(col, ncols)
            ctx.emit_sync("tcgen05.dealloc", col=col, ncols=ncols, cta_group=1)
            return
        peer = _peer_of(ctx, what)
        side = ctx.rank & 1
        q = agent.pair_queue(ctx.cta, "dealloc")
        ev = ctx.env.event()
        me = dict(cta=ctx.cta, col=col, ncols=ncols, event=ev, loc=ins.loc)
        ctx.emit_sync("tcgen05.dealloc", col=col, ncols=ncols, cta_group=2, side=side)
        if q[1 - side]:
            other = q[1 - side].pop(0)
            if (other["col"], other["ncols"]) != (col, ncols):
                raise SyncError(f"{what}: this CTA frees columns [{col}, {col + ncols}) but the peer "
                                f"{other['cta'].label} frees [{other['col']}, {other['col'] + other['ncols']}) "
                                f"(at {other['loc']})", expected="the same address and nCols on both CTAs of the pair")
            # re-check the peer side now (it may have changed while it waited)
            _dealloc_checks(tmem_of(other["cta"]), 0, col, ncols, what)
            tm.free(col, ncols)
            tmem_of(other["cta"]).free(col, ncols)
            other["event"].succeed(col)
            ev.succeed(col)
        else:
            q[side].append(me)
        ctx.block(ctx.mask.copy(), ev,
                  lambda me=me, peer=peer: f"{what} of columns [{me['col']}, {me['col'] + me['ncols']}) waits for "
                                           f"the peer {peer.label} (rank {peer.rank}) to execute {what}")
    return run


def _run_relinquish(ins, group):
    what = f"tcgen05.relinquish_alloc_permit.cta_group::{group}"

    def run(ctx):
        if not _collective(ctx, what):
            return
        Tcgen05Tmem.of(ctx)
        ctx.tmem.relinquish()
        ctx.emit_sync("tcgen05.relinquish_alloc_permit", cta_group=group)
    return run


# ---------------------------------------------------------------------------------- ld / st
def _decode_ldst(ins, info, op):
    """tcgen05.ld / tcgen05.st (PTX ISA 9.1 §9.7.16.8.3, §9.7.16.8.4; maps: tcgen05_layouts.md (d))."""
    if op == "ld" and "red" in ins.mods:
        raise UnsupportedError(f"{ins.full_opcode}: tcgen05.ld.red is not supported (it exists only on the "
                               f"sm_101a/sm_103 family, not on sm_100a)")
    packname = "pack::16b" if op == "ld" else "unpack::16b"
    allowed = {"sync": {"sync"}, "aligned": {"aligned"}, "shape": set(SHAPES), "num": set(NUMS),
               "pack": {packname}, "type": {"b32"}}
    got = _split_mods(ins, allowed)
    # ptxas requires .sync, the shape, .num and .b32; it accepts a missing .aligned (treated as aligned).
    for need, text in (("sync", ".sync"), ("shape", "a shape (.32x32b/.16x64b/.16x128b/.16x256b/.16x32bx2)"),
                       ("num", "a .num (.x1 ... .x128)"), ("type", ".b32")):
        if need not in got:
            raise VerifyError(f"{ins.full_opcode}: {text} qualifier is required",
                              expected=f"tcgen05.{op}.sync.aligned.shape.num.b32")
    shape, num, pack = got["shape"], NUMS[got["num"]], "pack" in got
    nregs = num * SHAPES[shape][1]
    if nregs > MAX_REGS:
        raise VerifyError(f"{ins.full_opcode}: .{got['num']} is not allowed with shape .{shape} ({nregs} registers)",
                          expected=f"at most {MAX_REGS // SHAPES[shape][1]} for .{shape} (128 registers)")
    ops = list(ins.operands)
    split = shape == "16x32bx2"
    nops = 3 if split else 2
    if len(ops) != nops:
        _fail(ins, f"expects {nops} operands" + (" (the 16x32bx2 shape takes the immHalfSplitoff immediate)"
                                                 if split else ""))
    if op == "ld":
        vec, addr = ops[0], ops[1]
        off_op = ops[2] if split else None
    else:
        addr = ops[0]
        off_op = ops[1] if split else None
        vec = ops[-1]
    if not isinstance(addr, ir.Address) or addr.coords is not None or not isinstance(addr.base, ir.Reg):
        _fail(ins, f"the TMEM address {addr} must be [reg] or [reg+imm] with a 32-bit register")
    _reg32(ins, info, addr.base, "TMEM address register")
    off = 0
    if split:
        if not isinstance(off_op, ir.Imm) or off_op.kind != "int":
            _fail(ins, f"immHalfSplitoff {off_op} must be an integer immediate")
        off = int(off_op.value)
    elems = vec.elems if isinstance(vec, ir.Vector) else None
    if elems is None:
        _fail(ins, f"needs a vector of {nregs} .b32 registers, got {vec}",
              expected=f"{{...}} with {nregs} registers for .{shape}.{got['num']}")
    if len(elems) != nregs:
        _fail(ins, f"needs a vector of {nregs} .b32 registers for .{shape}.{got['num']}, got {len(elems)}",
              expected=f"exactly {nregs} registers")
    for e in elems:
        _reg32(ins, info, e, "vector element")
    lane_off, col_off, _ = ldst_map(shape, num, off, pack)
    nlanes = SHAPES[shape][0]
    name = f"tcgen05.{op}.{shape}.{got['num']}" + (f".{packname}" if pack else "")
    spec = _LdSt(name, shape, nlanes, lane_off, col_off, pack, elems, addr, ins.loc)
    return spec.run_ld if op == "ld" else spec.run_st


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
        tm.check_bounds(lane0, self.nlanes, col0 + self.col_lo, self.col_hi - self.col_lo + 1, what)
        tm.check_quadrant(warp_quadrant(ctx), lane0, self.nlanes, what)
        lanes = lane0 + self.lane_off
        cols = col0 + self.col_off
        touched = cols if not self.pack else np.concatenate([cols, cols + 1], axis=1)
        bad = tm.unallocated_columns(touched)
        if bad:
            raise MemoryFault(f"{what} touches TMEM columns [{col0 + self.col_lo}, {col0 + self.col_hi + 1}) of "
                              f"{tm.label}, but columns [{bad[0]}, {bad[0] + 32}) are not allocated",
                              expected="tcgen05.alloc before any TMEM access, and no access after dealloc")
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
        for j, e in enumerate(self.elems):
            ctx.write(e, "b32", vals[:, j])

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
                          what=self.name, issuer=ctx.warp.label, warp=ctx.warp, loc=self.loc, pc=ctx.pc)
        agent.submit_store(ctx.cta, st)
        pend = agent.warp_pending.setdefault(ctx.warp, [])
        pend[:] = [p for p in pend if not p.landed]
        pend.append(st)


# ---------------------------------------------------------------------------------- wait / fence
def _decode_wait(ins, op):
    """tcgen05.wait::ld / wait::st (PTX ISA 9.1 §9.7.16.8.5)."""
    got = _split_mods(ins, {"sync": {"sync"}, "aligned": {"aligned"}})
    if len(got) != 2:
        raise VerifyError(f"{ins.full_opcode}: .sync.aligned is required", expected=f"tcgen05.{op}.sync.aligned")
    if ins.operands:
        _fail(ins, "takes no operands")
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


def _decode_fence(ins, op):
    """tcgen05.fence::before_thread_sync / after_thread_sync (PTX ISA 9.1 §9.7.16.11.1)."""
    if len(ins.mods) != 1:
        raise VerifyError(f"{ins.full_opcode}: tcgen05.fence takes no other qualifier",
                          expected=f"tcgen05.{op}")
    if ins.operands:
        _fail(ins, "takes no operands")
    kind = op.split("::")[1]
    meaning = ("orders this thread's prior async tcgen05 operations before its subsequent tcgen05 and "
               "execution-ordering operations" if kind == "before_thread_sync" else
               "orders this thread's subsequent async tcgen05 operations after its prior tcgen05 and "
               "execution-ordering operations")

    def run(ctx):
        if ctx.mask.any():
            ctx.emit_sync("tcgen05.fence", fence=kind, ordering=meaning)
    return run
