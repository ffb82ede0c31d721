"""Non-tensor bulk copies and bulk async-group completion: cp.async.bulk, cp.async.bulk.prefetch,
cp.async.bulk.commit_group, cp.async.bulk.wait_group.

PTX ISA 9.1 §9.7.9.25.4.1 (cp.async.bulk), §9.7.9.25.4.3 (cp.async.bulk.prefetch), §9.7.9.25.6.1
(cp.async.bulk.commit_group), §9.7.9.25.6.2 (cp.async.bulk.wait_group); tma.md §1 and §5.

Every executing lane issues its own copy (kernels normally predicate the instruction to one elected lane).
The issue half (here) reads the operands, checks them and submits a :class:`tcsim.agents.tma.TmaOp` to the
CTA's TMA engine; the engine performs the completion half (moves the bytes, complete-tx / group completion)
at its completion time.

Forms executed:

* ``cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [src], size, [mbar]{, policy}``
* ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.multicast::cluster}{.L2::cache_hint}
  [dst], [src], size, [mbar]{, ctaMask}{, policy}`` — with ``.multicast::cluster`` bit ``i`` of the 16-bit
  ctaMask selects the CTA of ``%cluster_ctarank`` ``i``; each receives the data at the CTA-relative offset of
  ``dst`` and a complete-tx(size) on the mbarrier at the CTA-relative offset of ``mbar``.
* ``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]`` —
  ``dst`` and ``mbar`` in one other CTA of the cluster.
* ``cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}{.cp_mask} [dst], [src], size{, policy}{, byteMask}``
  — joins the thread's uncommitted bulk ops; bit ``b`` of the 16-bit byteMask enables byte ``b`` of every
  16-byte chunk (disabled bytes of the destination keep their value).
* ``cp.async.bulk.prefetch.L2.global{.L2::cache_hint} [src], size{, policy}`` — a hint: operands are checked,
  nothing moves.
* ``cp.async.bulk.commit_group`` and ``cp.async.bulk.wait_group{.read} N`` (per-thread bulk async-groups,
  kept in ``cta.bulk_groups[(warp id, lane)]``; ``.read`` waits only until the sources were read).

Faults (:class:`MemoryFault` naming the operand, its value and the rule; undefined behaviour on hardware):
size not a multiple of 16, ``dst``/``src`` not 16-byte aligned, ranges outside SMEM or outside one global
allocation, a ``.shared::cta`` operand in another CTA, a shared::cta -> shared::cluster copy to the executing
CTA itself, an mbarrier in a different CTA than the destination, a ctaMask selecting no CTA or a CTA outside
the cluster.  An uninitialised/invalidated mbarrier is a :class:`SyncError`.

Not supported (UnsupportedError at decode): ``.ignore_oob`` (PTX 9.2), ``cp.reduce.async.bulk`` (non-tensor
reductions), and any other qualifier.  The forms are parsed and checked in :mod:`tcsim.isa.async_copy_forms`.
"""
from __future__ import annotations


import numpy as np

from tcsim.isa.cache_policy_forms import check_policy_operand
from tcsim.isa.async_copy_forms import SECTION_BULK as SECTION, parse_bulk_copy
from tcsim.isa.errors import HANG, LAUNCH_FAILED, MISALIGNED_ADDRESS, MemoryFault, SyncError
from ..findings import Finding, FindingError
from ..race.protocol import op_act
from .. import memory as M
from ..agents.tma import TmaEngine, TmaOp
from ..async_groups import commit_run, wait_run
from .registry import semantics


# ---------------------------------------------------------------------------------------------- class 18
class AlignmentFault(MemoryFault):
    """A misaligned bulk / tensor-copy operand found at issue (an address, a size, a box's SMEM alignment, an inner
    coordinate).  The decoders turn it into a class-18 finding at the issuing line (:func:`alignment_findings`);
    ``outcome`` is what the H100 does: 'trap' (CUDA_ERROR_MISALIGNED_ADDRESS / illegal instruction at the copy) or
    'hang' (a size that is not a multiple of 16: the copy never completes its bytes)."""

    def __init__(self, message: str, *, lane: int, outcome: str = "trap", expected: str | None = None,
                 gpu_error: str = MISALIGNED_ADDRESS):
        super().__init__(message, expected=expected, gpu_error=gpu_error if outcome == "trap" else HANG)
        self.lane = int(lane)
        self.outcome = outcome


class MisalignedOperand(FindingError, MemoryFault):
    """The class-18 finding that stopped the run (a :class:`FindingError` that is also a :class:`MemoryFault`, as
    the misaligned access was before findings existed)."""

    def __init__(self, finding, findings=None, gpu_error: str | None = MISALIGNED_ADDRESS):
        super().__init__(finding, findings)
        self.gpu_error = gpu_error
        self.kind = f"memory fault [class {finding.cls}: {finding.title}]"
        self.args = (self.format(),)


def alignment_findings(run):
    """Wrap a bulk-copy ``run(ctx)``: an :class:`AlignmentFault` becomes a class-18 finding naming the issuing line
    and lane, with the hardware outcome (it stops the run: the GPU traps or hangs there)."""

    def checked(ctx):
        try:
            return run(ctx)
        except AlignmentFault as e:
            m = np.zeros(32, dtype=bool)
            m[e.lane] = True
            f = Finding(18, e.message, (ctx.side(mask=m, proxy="async"),),
                        missing=f"{e.expected} at line {ctx.ins.loc.line}" if e.expected else None,
                        fix=e.expected,
                        outcome=e.outcome)
            try:
                ctx.report(f)
            except FindingError as fe:
                raise MisalignedOperand(fe.finding, fe.findings, gpu_error=e.gpu_error) from None
            raise MisalignedOperand(f, gpu_error=e.gpu_error) from None          # (a lint-free finding always stops: trap / hang)

    checked.__doc__ = run.__doc__
    return checked


# ---------------------------------------------------------------------------------------------- helpers
def issuer(ctx, lane: int) -> str:
    return f"{ctx.warp.label} lane {int(lane)}"


def new_op(ctx, lane: int, kind: str, nbytes: int, read, write, **extra) -> TmaOp:
    """A :class:`TmaOp` issued by ``lane`` of the executing warp at the current instruction."""
    return TmaOp(kind, ctx.ins.full_opcode, int(nbytes), read, write, issuer=issuer(ctx, lane), loc=ctx.ins.loc,
                 warp=ctx.warp.id, lane=int(lane), pc=ctx.pc, extra=extra)


def shared_target(ctx, addr: int, space: str, what: str, lane: int):
    """(cta, CTA-relative offset) of a 32-bit shared address operand; faults on a non-shared value and on a
    ``.shared::cta`` address of another CTA."""
    a = int(addr)
    if a >> 32:
        raise MemoryFault(f"{what} = 0x{a:x} (lane {lane}) is not a .{space} address",
                          expected="a shared-state-space address (e.g. from mov of a .shared symbol, "
                                   "cvta.to.shared or mapa), not a generic address")
    rank, off = a >> M.SHARED_RANK_SHIFT, a & M.SHARED_OFFSET_MASK
    if space == "shared::cta" and rank != ctx.rank:
        raise MemoryFault(f"{what} = 0x{a:x} (lane {lane}) is in the shared memory of cluster rank {rank}, but "
                          f".shared::cta must name the executing CTA (rank {ctx.rank})",
                          expected="an address in the executing CTA's shared memory")
    return ctx.cluster.cta_by_rank(rank), off


def check_multiple16(what: str, value: int, lane: int, section: str = SECTION, measured_hang: bool = False) -> None:
    """A bulk-copy size must be a multiple of 16.  ``measured_hang``: the global -> shared copy, for which the GPU
    does not fault -- an H100 moves only the first ``value & ~15`` bytes and never completes the transaction
    bytes a wait expects, so the kernel hangs (tests/golden/tma_h100, bulk_fault_size24); tcsim stops at the copy
    instead and says so."""
    if value % 16:
        gpu = (f"; the GPU raises no error but moves only {value & ~15} bytes and never completes the copy's "
               f"transaction bytes, so a wait on its mbarrier hangs (measured on an H100)" if measured_hang else "")
        raise AlignmentFault(f"{what} is {value} bytes (lane {lane}), not a multiple of 16{gpu}", lane=lane,
                             outcome="hang" if measured_hang else "trap",
                             expected=f"a size that is a multiple of 16 bytes ({section})")


def _rounded_load_size(ctx, n: int, lane: int) -> int:
    """A global -> shared bulk copy whose size is not a multiple of 16: an H100 raises no error, moves only the first
    ``n & ~15`` bytes and signals that many transaction bytes (probes bulk_size_not16_poll / _expect16_poll /
    _expect32_poll, tests/hw/golden_h100/protocol_outcomes.json), so a wait expecting ``n`` bytes hangs.  A class-18 finding at the
    copy; the copy goes on with the rounded size."""
    m = np.zeros(32, dtype=bool)
    m[int(lane)] = True
    ctx.report(Finding(
        18, f"cp.async.bulk size is {n} bytes (lane {lane}), not a multiple of 16; the GPU raises no error but "
            f"moves only {n & ~15} bytes and completes only {n & ~15} transaction bytes, so a wait expecting {n} "
            f"hangs (measured on an H100)",
        (ctx.side(mask=m, proxy="async"),),
        missing=f"a size that is a multiple of 16 bytes ({SECTION}) at line {ctx.ins.loc.line}",
        fix=f"a size that is a multiple of 16 bytes ({SECTION})"))
    return n & ~15


def check_align16(what: str, addr: int, lane: int, section: str = SECTION) -> None:
    """A bulk-copy address must be 16-byte aligned; an H100 raises CUDA_ERROR_MISALIGNED_ADDRESS at the copy
    (probes bulk_smem_misaligned, bulk_global_misaligned)."""
    if addr % 16:
        raise AlignmentFault(f"{what} = 0x{addr:x} (lane {lane}) is not 16-byte aligned; the GPU faults with a "
                             f"misaligned address (CUDA_ERROR_MISALIGNED_ADDRESS)", lane=lane,
                             expected=f"an address aligned to 16 bytes ({section})")


def check_global_range(ctx, addr: int, nbytes: int, what: str, lane: int) -> None:
    alloc = ctx.gmem.allocation_of(addr)
    if alloc is None or addr + nbytes > alloc.end:
        raise MemoryFault(f"{what} range [0x{addr:x}, +{nbytes}) (lane {lane}) is not inside one global "
                          f"allocation: {ctx.gmem.describe(addr)}",
                          expected="a range inside a buffer passed to the kernel")


def check_smem_range(cta, off: int, nbytes: int, what: str) -> None:
    cta.smem.check(np.asarray([off]), nbytes, f"{what} (TMA)")


def live_mbarrier(cta, off: int, what: str, lane: int):
    mb = cta.mbarrier(off)
    if not mb.valid:
        raise SyncError(f"{what} (lane {lane}) names SMEM offset 0x{off:x} of {cta.label}, which holds no live "
                        f"mbarrier (invalidated)", expected="mbarrier.init before issuing the copy")
    return mb


def cta_mask_targets(ctx, mask: int, lane: int) -> list:
    n = ctx.cluster.size
    mask &= 0xFFFF
    if mask == 0:
        raise MemoryFault(f"ctaMask 0x{mask:04x} (lane {lane}) selects no destination CTA",
                          expected="at least one bit set for a CTA of the cluster")
    ranks = [r for r in range(16) if mask >> r & 1]
    if ranks[-1] >= n:
        # an H100 ends such a launch with CUDA_ERROR_LAUNCH_FAILED (tests/golden/tma_h100, mcast2_mask_beyond_cluster)
        raise MemoryFault(f"ctaMask 0x{mask:04x} (lane {lane}) selects cluster rank {ranks[-1]}, but the cluster "
                          f"has {n} CTA(s)", expected=f"bits only for ranks 0..{n - 1}", gpu_error=LAUNCH_FAILED)
    return [ctx.cluster.cta_by_rank(r) for r in ranks]


def check_source_resident(cta, what: str, engine=None) -> None:
    """A bulk store / reduction / shared->cluster copy reads its SMEM source when it completes: the CTA must
    still be there (its shared memory may belong to the next CTA on the SM once it exits; PTX ISA §9.7.9.25.6:
    ``cp.async.bulk.wait_group.read`` is how a thread knows the source has been read).  Reported as a class-14
    finding naming the copy (through ``engine``, the TMA engine completing it); an H100 completes such a store with
    the right bytes (probe exit_with_bulk_store_pending, tests/hw/golden_h100/protocol_outcomes.json), so the copy goes on."""
    if cta.exited:
        msg = f"{cta.label} exited while its {what} still had to read the source in its shared memory"
        fix = ("cp.async.bulk.commit_group + cp.async.bulk.wait_group.read 0 (or an mbarrier wait for a "
               "shared::cluster copy) before the CTA exits")
        if engine is None:
            raise SyncError(msg, expected=fix)
        op = engine.completing
        engine.sim.findings.report(Finding(
            14, msg + " (its shared memory may already belong to the next CTA on the SM)",
            (op_act(op, "tma", engine.env.now, engine.cta.ctaid).access(where=f"SMEM of {cta.label}"),),
            missing=f"cp.async.bulk.wait_group.read 0 after the copy at line "
                    f"{op.loc.line if op is not None and op.loc is not None else '?'} and before the CTA exits",
            fix=fix, key=(14, "exit-before-source-read", None if op is None or op.loc is None else op.loc.line)))


def smem_write(engine: TmaEngine, cta, off: int, data: np.ndarray) -> None:
    """Write a contiguous byte image into ``cta``'s SMEM from the TMA (async proxy)."""
    engine.write_smem(cta, [off], np.asarray(data, dtype=np.uint8).reshape(1, -1), who="bulk copy")


def gmem_read(engine: TmaEngine, addr: int, nbytes: int) -> np.ndarray:
    return engine.read_global([addr], nbytes)[0]


def smem_read(engine: TmaEngine, cta, off: int, nbytes: int, what: str, issued: float) -> np.ndarray:
    """The ``nbytes`` source bytes at ``off`` of ``cta``'s SMEM, read by the TMA (async proxy) for ``what``."""
    check_source_resident(cta, what, engine)
    return engine.read_smem(cta, [off], nbytes, reader=what, issued_at=issued)[0]


# ---------------------------------------------------------------------------------------------- decoders
@semantics("cp.async.bulk")
def decode_bulk(ins, info):
    """PTX ISA §9.7.9.25.4 bulk copy (cp.async.bulk, cp.async.bulk.prefetch) and §9.7.9.25.6 completion
    (cp.async.bulk.commit_group / wait_group).  See the module docstring for the forms."""
    f = parse_bulk_copy(ins)
    check_policy_operand(ins, getattr(f, 'policy', None), info)
    if f.kind == "commit_group":
        return commit_run("bulk", "bulk.commit_group")
    if f.kind == "wait_group":
        return _decode_wait(f.keep, f.read_only)
    if f.kind == "prefetch":
        return alignment_findings(_decode_prefetch(ins, f))
    if f.kind == "load":
        return alignment_findings(_make_load(ins, f.dst_space, f.dst, f.src, f.size, f.mbar, f.mask, f.policy))
    if f.kind == "s2s":
        return alignment_findings(_make_s2s(ins, f.dst, f.src, f.size, f.mbar))
    return alignment_findings(_make_store(ins, f.dst, f.src, f.size, f.bytemask, f.policy))


def _make_load(ins, dst_space, dst_op, src_op, size_op, mbar_op, mask_op, policy_op):
    what = ins.full_opcode

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        dst = ctx.address(dst_op)
        src = ctx.address(src_op)
        mbar = ctx.address(mbar_op)
        size = ctx.read(size_op, "u32")
        cmask = ctx.read(mask_op, "u16") if mask_op is not None else None
        if policy_op is not None:
            ctx.read(policy_op, "b64")
        engine = TmaEngine.of(ctx)
        for lane in lanes:
            n = int(size[lane])
            d, s, mb = int(dst[lane]), int(src[lane]), int(mbar[lane])
            check_align16("cp.async.bulk destination [dstMem]", d, lane)
            check_align16("cp.async.bulk source [srcMem]", s, lane)
            # (after the addresses: with both wrong an H100 faults on the address, tests/golden/faults.json)
            if n % 16:
                n = _rounded_load_size(ctx, n, lane)
            dcta, doff = shared_target(ctx, d, dst_space, "cp.async.bulk destination [dstMem]", lane)
            mcta, moff = shared_target(ctx, mb, dst_space, "cp.async.bulk mbarrier [mbar]", lane)
            if cmask is not None:
                targets = cta_mask_targets(ctx, int(cmask[lane]), lane)
            else:
                if mcta is not dcta:
                    raise MemoryFault(f"cp.async.bulk mbarrier [mbar] = 0x{mb:x} (lane {lane}) is in "
                                      f"{mcta.label} but the destination is in {dcta.label}",
                                      expected="the mbarrier in the same CTA as the destination "
                                               f"({SECTION})")
                targets = [dcta]
            check_global_range(ctx, s, n, "cp.async.bulk source [srcMem]", lane)
            for t in targets:
                check_smem_range(t, doff, n, "cp.async.bulk destination")
                live_mbarrier(t, moff, "cp.async.bulk mbarrier [mbar]", lane)

            def read(engine=engine, s=s, n=n):
                return gmem_read(engine, s, n)

            def write(data, engine=engine, targets=targets, doff=doff, moff=moff, n=n):
                for t in targets:
                    smem_write(engine, t, doff, data)
                for t in targets:
                    engine.complete_tx(t, moff, n, what)

            op = engine.submit(new_op(ctx, lane, "load", n, read, write, src=s))   # src: for the timing model
            for t in targets:
                engine.aim(op, t, moff)

    return run


def _make_s2s(ins, dst_op, src_op, size_op, mbar_op):
    what = ins.full_opcode

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        dst = ctx.address(dst_op)
        src = ctx.address(src_op)
        mbar = ctx.address(mbar_op)
        size = ctx.read(size_op, "u32")
        engine = TmaEngine.of(ctx)
        for lane in lanes:
            n = int(size[lane])
            d, s, mb = int(dst[lane]), int(src[lane]), int(mbar[lane])
            check_align16("cp.async.bulk destination [dstMem]", d, lane)
            check_align16("cp.async.bulk source [srcMem]", s, lane)
            check_multiple16("cp.async.bulk size", n, lane)
            dcta, doff = shared_target(ctx, d, "shared::cluster", "cp.async.bulk destination [dstMem]", lane)
            scta, soff = shared_target(ctx, s, "shared::cta", "cp.async.bulk source [srcMem]", lane)
            mcta, moff = shared_target(ctx, mb, "shared::cluster", "cp.async.bulk mbarrier [mbar]", lane)
            if ctx.is_local(dcta):
                raise MemoryFault(f"cp.async.bulk.shared::cluster.shared::cta destination [dstMem] = 0x{d:x} "
                                  f"(lane {lane}) is in the executing CTA",
                                  expected=f"the shared memory of a different CTA of the cluster ({SECTION})")
            if mcta is not dcta:
                raise MemoryFault(f"cp.async.bulk mbarrier [mbar] = 0x{mb:x} (lane {lane}) is in {mcta.label} "
                                  f"but the destination is in {dcta.label}",
                                  expected="the mbarrier in the destination CTA")
            check_smem_range(scta, soff, n, "cp.async.bulk source")
            check_smem_range(dcta, doff, n, "cp.async.bulk destination")
            live_mbarrier(mcta, moff, "cp.async.bulk mbarrier [mbar]", lane)

            def read(engine=engine, scta=scta, soff=soff, n=n, issued=ctx.now):
                return smem_read(engine, scta, soff, n, what, issued)

            def write(data, engine=engine, dcta=dcta, doff=doff, moff=moff, n=n):
                smem_write(engine, dcta, doff, data)
                engine.complete_tx(dcta, moff, n, what)

            op = engine.submit(new_op(ctx, lane, "copy", n, read, write))
            engine.aim(op, dcta, moff)

    return run


def _make_store(ins, dst_op, src_op, size_op, bytemask_op, policy_op):
    what = ins.full_opcode

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        dst = ctx.address(dst_op)
        src = ctx.address(src_op)
        size = ctx.read(size_op, "u32")
        bmask = ctx.read(bytemask_op, "u16") if bytemask_op is not None else None
        if policy_op is not None:
            ctx.read(policy_op, "b64")
        engine = TmaEngine.of(ctx)
        for lane in lanes:
            n = int(size[lane])
            d, s = int(dst[lane]), int(src[lane])
            check_align16("cp.async.bulk destination [dstMem]", d, lane)
            check_align16("cp.async.bulk source [srcMem]", s, lane)
            check_multiple16("cp.async.bulk size", n, lane)
            scta, soff = shared_target(ctx, s, "shared::cta", "cp.async.bulk source [srcMem]", lane)
            check_smem_range(scta, soff, n, "cp.async.bulk source")
            check_global_range(ctx, d, n, "cp.async.bulk destination [dstMem]", lane)
            keep = None
            if bmask is not None:
                bits = int(bmask[lane])
                keep = np.tile(np.array([(bits >> b) & 1 for b in range(16)], dtype=bool), n // 16)

            def read(engine=engine, scta=scta, soff=soff, n=n, issued=ctx.now):
                return smem_read(engine, scta, soff, n, what, issued)

            def write(data, engine=engine, d=d, n=n, keep=keep):
                if keep is not None:          # .cp_mask: the bytes a clear mask bit keeps (not traced before)
                    old = engine.read_global([d], n, traced=False)[0]
                    data = np.where(keep, data, old).astype(np.uint8)
                engine.write_global([d], data.reshape(1, -1))

            op = engine.submit(new_op(ctx, lane, "store", n, read, write))
            ctx.async_group_join("bulk", lane, op)

    return run


def _decode_prefetch(ins, f):
    """PTX ISA §9.7.9.25.4.3 cp.async.bulk.prefetch (form: tcsim.isa.async_copy_forms)."""
    src, size, policy = f.src, f.size, f.policy
    section = "PTX ISA §9.7.9.25.4.3"

    def run(ctx):
        """PTX ISA §9.7.9.25.4.3 cp.async.bulk.prefetch: a hint; the operands are still checked."""
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        a = ctx.address(src)
        n = ctx.read(size, "u32")
        if policy is not None:
            ctx.read(policy, "b64")
        for lane in lanes:
            check_multiple16("cp.async.bulk.prefetch size", int(n[lane]), lane, section)
            check_align16("cp.async.bulk.prefetch source [srcMem]", int(a[lane]), lane, section)
        ctx.emit_sync("prefetch", what=ins.full_opcode)

    return run


def _decode_wait(keep: int, read_only: bool):
    """PTX ISA §9.7.9.25.6.2 cp.async.bulk.wait_group{.read} N: wait until at most N of the thread's most recent
    bulk async-groups are pending (``.read``: until the older groups' sources have been read)."""
    name = f"cp.async.bulk.wait_group{'.read' if read_only else ''} {keep}"
    return wait_run("bulk", keep, name, "bulk async operation(s)", "bulk.wait_group",
                    event="read_done" if read_only else "done", read=read_only)
