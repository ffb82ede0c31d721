"""Warp-level collectives: shfl.sync, vote.sync, elect.sync, activemask, match.sync, redux.sync.

PTX ISA 9.1 §9.7.9.6 (shfl.sync), §9.7.13.6 (vote.sync), §9.7.13.14 (elect.sync), §9.7.13.9 (activemask),
§9.7.13.7 (match.sync), §9.7.13.8 (redux.sync).

Convergence.  Every ``.sync`` collective checks, per distinct ``membermask`` value among the executing lanes,
that each executing lane is in its own mask and that every non-exited lane of the mask executes the
instruction together (:meth:`ExecContext.require_converged`); otherwise SyncError.  Lanes may use different
masks in one instruction (e.g. two half-warps each naming their own half).  Collective results are computed
over the non-exited member lanes (exited lanes do not take part, as on hardware).

shfl.sync follows the PTX pseudo-code exactly: ``b`` gives the source lane / offset (low 5 bits), ``c``
packs the clamp value (bits 0..4) and the segment mask (bits 8..12); a source lane outside the clamp range
copies the lane's own value and sets the optional predicate output false.  Reading from a source lane that
is not executing the shfl is undefined in PTX; tcsim returns that lane's current register contents (no
error, since partial warps commonly shuffle with full masks and discard those values).

elect.sync elects the lowest executing lane of the member mask (the PTX leaves the choice unspecified but
deterministic; an H100 picked lane 0 for 0xffffffff and lane 4 for 0xf0f0f0f0).  activemask returns the lanes currently executing in convergence (lanes at this
instruction, including lanes whose guard predicate is false).

Not supported: the non-``.sync`` forms of shfl and vote (removed for sm_70+; UnsupportedError at load);
redux.sync ``.f32`` outside sm_100a-class targets (VerifyError).  The forms are parsed and checked in
:mod:`tcsim.isa.warp_level_forms`.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.errors import SyncError
from tcsim.isa.warp_level_forms import (parse_activemask, parse_elect, parse_match, parse_redux, parse_shfl,
                                        parse_vote)
from ..numerics import fp
from tcsim.isa.operand_rules import check_dst, check_src
from .registry import semantics

WARP = 32
LANES = np.arange(WARP, dtype=np.uint32)
_BITS = (np.uint64(1) << LANES.astype(np.uint64))


def bitmask(mask: np.ndarray) -> int:
    """Pack a bool[32] lane mask into an int (bit i = lane i)."""
    return int(_BITS[np.asarray(mask, dtype=bool)].sum())


def unpack(m: int) -> np.ndarray:
    return ((np.uint32(m) >> LANES) & 1).astype(bool)


def member_masks(ctx, mop, what: str) -> np.ndarray:
    """Per-lane membermask (uint32[32]); validates membership and convergence for every distinct value."""
    masks = ctx.read(mop, "b32").astype(np.uint32)
    lanes = np.nonzero(ctx.mask)[0]
    for m in np.unique(masks[lanes]):
        m = int(m)
        users = lanes[masks[lanes] == m]
        notin = users[((np.uint32(m) >> users.astype(np.uint32)) & 1) == 0]
        if notin.size:
            raise SyncError(f"{what}: lane {int(notin[0])} executes it with membermask 0x{m:08x}, which does not "
                            f"contain the lane itself", expected="every executing thread in its own membermask")
        ctx.require_converged(what, m)
    return masks


def _group_value(ctx, masks):
    """For each executing lane: the bool[32] set of non-exited member lanes taking part with it."""
    execm = ctx.mask
    return {int(m): unpack(int(m)) & execm for m in np.unique(masks[ctx.mask])}


# ----------------------------------------------------------------------------------------------- shfl
@semantics("shfl")
def decode_shfl(ins, info):
    """PTX ISA 9.1 §9.7.9.6 shfl.sync.{up,down,bfly,idx}.b32 d[|p], a, b, c, membermask."""
    f = parse_shfl(ins)
    mode, dst, pdst, a, b, c, mop = f.mode, f.dst, f.pdst, f.a, f.b, f.c, f.membermask
    check_dst(ins, info, dst, "b32")
    check_src(ins, info, mop, "b32")
    what = ins.full_opcode
    lane = np.arange(WARP, dtype=np.int64)

    def run(ctx):
        if not ctx.mask.any():
            return
        member_masks(ctx, mop, what)
        src = ctx.read(a, "b32").copy()
        bval = ctx.read(b, "u32").astype(np.int64) & 31
        cv = ctx.read(c, "u32").astype(np.int64)
        cval = cv & 31
        seg = (cv >> 8) & 31
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            pval = j >= max_lane
        elif mode == "down":
            j = lane + bval
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            pval = j <= max_lane
        else:
            j = min_lane | (bval & ~seg)
            pval = j <= max_lane
        j = np.where(pval, j, lane)
        ctx.write(dst, "b32", src[j])
        if pdst is not None:
            ctx.write_pred(pdst, pval)

    return run


# ----------------------------------------------------------------------------------------------- vote
@semantics("vote")
def decode_vote(ins, info):
    """PTX ISA 9.1 §9.7.13.6 vote.sync.{all,any,uni}.pred d, {!}a, membermask; vote.sync.ballot.b32 d, {!}a,
    membermask."""
    f = parse_vote(ins)
    mode, dst, a, mop = f.mode, f.dst, f.a, f.membermask
    check_src(ins, info, mop, "b32")
    what = ins.full_opcode

    def run(ctx):
        if not ctx.mask.any():
            return
        masks = member_masks(ctx, mop, what)
        pred = ctx.read_pred(a) & ctx.mask
        pbits = bitmask(pred)
        ebits = bitmask(ctx.mask)
        m = masks.astype(np.int64)
        if mode == "ballot":
            ctx.write(dst, "b32", (m & pbits).astype(np.uint32))
            return
        mm = m & ebits
        t = mm & pbits
        if mode == "all":
            r = t == mm
        elif mode == "any":
            r = t != 0
        else:
            r = (t == 0) | (t == mm)
        ctx.write_pred(dst, r)

    return run


# ----------------------------------------------------------------------------------------------- elect
@semantics("elect")
def decode_elect(ins, info):
    """PTX ISA 9.1 §9.7.13.14 elect.sync d|p, membermask (d may be the sink _)."""
    f = parse_elect(ins)
    d, p, mop = f.dst, f.pdst, f.membermask
    check_src(ins, info, mop, "b32")
    what = "elect.sync"

    def run(ctx):
        if not ctx.mask.any():
            return
        masks = member_masks(ctx, mop, what)
        leader = np.zeros(WARP, dtype=np.uint32)
        for m, part in _group_value(ctx, masks).items():
            sel = ctx.mask & (masks == np.uint32(m))
            leader[sel] = int(np.argmax(part))
        ctx.write(d, "u32", leader)
        ctx.write_pred(p, LANES == leader)

    return run


# ----------------------------------------------------------------------------------------------- activemask
@semantics("activemask")
def decode_activemask(ins, info):
    """PTX ISA 9.1 §9.7.13.9 activemask.b32 d."""
    dst = parse_activemask(ins).dst

    def run(ctx):
        if not ctx.mask.any():
            return
        ctx.write(dst, "b32", np.full(WARP, bitmask(ctx.group), dtype=np.uint32))

    return run


# ----------------------------------------------------------------------------------------------- match
@semantics("match")
def decode_match(ins, info):
    """PTX ISA 9.1 §9.7.13.7 match.any.sync.type d, a, membermask; match.all.sync.type d[|p], a, membermask
    (.type = .b32, .b64)."""
    f = parse_match(ins)
    kind, typ, dst, pdst, a, mop = f.mode, f.type, f.dst, f.pdst, f.a, f.membermask
    check_src(ins, info, mop, "b32")
    what = ins.full_opcode

    def run(ctx):
        if not ctx.mask.any():
            return
        masks = member_masks(ctx, mop, what)
        vals = ctx.read(a, typ)
        out = np.zeros(WARP, dtype=np.uint32)
        pout = np.zeros(WARP, dtype=bool)
        for m, part in _group_value(ctx, masks).items():
            sel = ctx.mask & (masks == np.uint32(m))
            for lane in np.nonzero(sel)[0]:
                same = part & (vals == vals[lane])
                if kind == "any":
                    out[lane] = bitmask(same)
                else:
                    ok = bool((same == part).all())
                    out[lane] = bitmask(part) if ok else 0
                    pout[lane] = ok
        ctx.write(dst, "b32", out)
        if pdst is not None:
            ctx.write_pred(pdst, pout)

    return run


# ----------------------------------------------------------------------------------------------- redux
@semantics("redux")
def decode_redux(ins, info):
    """PTX ISA 9.1 §9.7.13.8 redux.sync.op.type dst, src, membermask (add/min/max .u32/.s32, and/or/xor
    .b32; sm_100a: min/max{.abs}{.NaN}.f32)."""
    f = parse_redux(ins, info.arch)
    op, typ, dst, src, mop = f.mode, f.type, f.dst, f.a, f.membermask
    what = ins.full_opcode
    use_abs, use_nan = f.abs, f.nan

    def reduce(vals: np.ndarray):
        if typ == "f32":
            bits = vals.view(np.uint32)
            if use_abs:
                bits = fp.fabs("f32", bits)
            fn = fp.fmin if op == "min" else fp.fmax
            acc = bits[:1]
            for i in range(1, bits.size):
                acc = fn("f32", acc, bits[i:i + 1], nan=use_nan)
            return acc.view(np.float32)[0]
        if op == "add":
            total = int(vals.astype(np.int64).sum()) & 0xFFFFFFFF
            return np.array([total], dtype=np.uint32).view(vals.dtype)[0]
        if op == "min":
            return vals.min()
        if op == "max":
            return vals.max()
        r = vals[0]
        for v in vals[1:]:
            r = (r & v) if op == "and" else (r | v) if op == "or" else (r ^ v)
        return r

    def run(ctx):
        if not ctx.mask.any():
            return
        masks = member_masks(ctx, mop, what)
        vals = ctx.read(src, typ)
        out = np.zeros(WARP, dtype=vals.dtype)
        for m, part in _group_value(ctx, masks).items():
            sel = ctx.mask & (masks == np.uint32(m))
            out[sel] = reduce(vals[part])
        ctx.write(dst, typ, out)

    return run
