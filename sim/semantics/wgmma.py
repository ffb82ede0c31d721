"""Warpgroup-level asynchronous MMA (Hopper sm_90a): ``wgmma.fence``, ``wgmma.mma_async{.sp}``,
``wgmma.commit_group``, ``wgmma.wait_group``.

PTX ISA 9.1 §9.7.15: §9.7.15.1 (warpgroup: four contiguous warps, the first with a warp rank a multiple of 4),
§9.7.15.2 (shapes), §9.7.15.4 (async proxy), §9.7.15.5.1 (register fragments, shared-memory layouts, matrix
descriptor), §9.7.15.5.2 (wgmma.mma_async), §9.7.15.6 (sparse), §9.7.15.7.1-3 (fence / commit_group /
wait_group).  Forms are parsed and checked by :mod:`tcsim.isa.wgmma_forms`; the descriptor is
:class:`tcsim.isa.descriptors.WgmmaDescriptor`.

Model.  Warp ``w`` of a warpgroup (``w = warp id % 4``) owns rows ``16w .. 16w+15`` of A and D (the register
fragments of §9.7.15.5.1.1; :func:`tcsim.isa.fragments.wgmma_layout`), and those rows of D depend only on those
rows of A, all of B and those rows of C.  So each warp's execution of ``wgmma.mma_async`` issues its share as one
async op (:class:`tcsim.agents.wgmma_unit.WgmmaOp`) to the warpgroup's MMA unit
(:class:`tcsim.agents.wgmma_unit.WarpgroupMma`), and ``.aligned`` is checked separately: every warp of the
warpgroup must issue the same sequence of wgmma instructions with the same descriptors (SyncError naming the two
lines otherwise), the warpgroup must exist in full (4 warps) and each warp must execute with all 32 lanes.

* Issue half (this module, the warp): the descriptors (identical in every lane), scale-d and sp-meta are read;
  the descriptors are decoded and checked (base offset, unused bits), the SMEM byte address of every operand
  element is computed with the canonical layouts (:func:`tcsim.isa.descriptors.operand_addresses`: K-major, or
  MN-major for imm-trans = 1; swizzle none / 32B / 64B / 128B applied to the CTA's shared address), and the SMEM
  range is checked (MemoryFault).  The op joins the thread's open wgmma-group.
* Completion half (the unit, at the completion time the engine decides): B, and A from SMEM, are read through
  the async proxy (the race detector sees these reads: an SMEM operand written with st.shared and no
  fence.proxy.async is class 8, one overwritten before the MMA read it class 5); the register A fragment and the
  accumulator are read from the warp's registers *then* and D is written into them (the accumulator is C when
  scale-d is true, else 0).  Numerics: :mod:`tcsim.numerics.tensor_core` -- ``mma_float`` with
  ``tc_params('sm_90a', 'wgmma', atype)`` (f16/bf16 block 16, tf32 block 8, fp8 block 32 with F = 13 and the
  e8m13 f32 output), ``mma_int`` (s8/u8, wrap or .satfinite), ``mma_b1`` (b1).  imm-scale-a/b = -1 flip
  the sign bit of every element (exact negation).
* ``wgmma.commit_group`` seals each thread's open ops into a wgmma-group; ``wgmma.wait_group N`` blocks until at
  most N of the thread's groups are pending (:mod:`tcsim.async_groups`).  The race detector
  (:mod:`tcsim.race.hb`) keeps the accumulator and A registers of each op in flight until the wait that retires
  it, and names a use before that wait, and a register write not followed by ``wgmma.fence`` before an MMA that
  uses the register (class 19).

Sparse (``.sp``): A is the packed M x K/2 matrix, expanded to its K dense columns by the metadata (§9.7.15.6.1:
2:4 chunks for the 16- and 8-bit types, two 2-bit indices per nibble, the lower first, 0b0000/0b0101/0b1010/0b1111
invalid; 1:2 chunks for tf32, nibble 0b0100 = element 0, 0b1110 = element 1).  Where the nibbles sit (§9.7.15.6.2,
the figures; read the same way as CUTLASS's sparse GMMA metadata layouts ``ELayout_64x{16,32,64}``): for f16/bf16
and tf32 lane ``4g + 2s + h`` (s = sp-sel, h in {0, 1}) describes rows g (bits 0-15) and g+8 (bits 16-31) of its
warp's 16 rows for dense columns ``[K/2 * h, K/2 * (h+1))``, one nibble per chunk; for the 8-bit types (K = 64,
sp-sel 0) lane ``4g + t`` describes row ``g + 8 (t & 1)`` for dense columns ``[32 (t >> 1), 32 (t >> 1) + 32)``,
chunk c in bits 4c..4c+3.  Numerics (measured on every sparse type combination, tests/golden/wgmma_sparse,
calib/probes/wgmma_sparse.py): each row sums only its K/2 stored products with the B rows its metadata selects,
as one packed K through the dense model (block 16 f16/bf16, 8 tf32, 32 fp8) -- not the dense K with zeros
between, which the GPU rejects for the float types.  Invalid metadata raises VerifyError (PTX: undefined
behaviour).

Not supported (UnsupportedError naming the form): a non-zero descriptor base offset, any target other than sm_90a (ptxas accepts
wgmma only there).  b1 bits are taken least-significant bit first within each byte of the operand row (?).
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import fragments as FR
from tcsim.isa import ir
from tcsim.isa.descriptors import WGMMA_UNUSED_MASK, WgmmaDescriptor, operand_addresses
from tcsim.isa.errors import SyncError, UnsupportedError, VerifyError
from tcsim.isa.wgmma_forms import parse_mma_async, parse_simple
from ..agents.wgmma_unit import WarpgroupMma, WgmmaOp
from ..async_groups import commit_run, wait_run
from ..numerics.tensor_core import mma_b1, mma_float, mma_int, tc_params
from .registry import semantics
from .tcgen05_mma import check_smem_span, read_smem_elements
from .warp_mma import require_full_warp

SECTION = "PTX ISA §9.7.15"
TC_ARCH = "sm_90a"
_SIGN = {"f16": 0x8000, "bf16": 0x8000, "tf32": 0x80000000, "e4m3": 0x80, "e5m2": 0x80}
_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "b1": 1}


# ---------------------------------------------------------------------------------------------- warpgroup
def _warpgroup(ctx, what: str) -> int:
    """The executing warp's warpgroup; SyncError when the warp is partial / diverged or the warpgroup is not
    four warps of this CTA (§9.7.15.1)."""
    require_full_warp(ctx, what)
    wg = ctx.warp.id // 4
    nwarps = len(ctx.cta.warps)
    if nwarps < 4 * (wg + 1):
        raise SyncError(f"{what} in warp {ctx.warp.id}: its warpgroup {wg} (warps {4 * wg}-{4 * wg + 3}) has only "
                        f"{nwarps - 4 * wg} warp(s) in this CTA of {nwarps} warps; a warpgroup is four contiguous "
                        f"warps (PTX ISA §9.7.15.1)", expected="a CTA whose thread count is a multiple of 128")
    return wg


def _aligned(ctx, wg: int, key: tuple, what: str) -> None:
    """``.aligned``: the warps of warpgroup ``wg`` execute the same sequence of wgmma instructions (``key``: the pc
    and the operand values that must agree).  Records the warp's next entry; SyncError on a mismatch."""
    st = ctx.cta.wgmma_issued.setdefault(wg, {"count": {}, "pending": {}})
    w = ctx.warp.id
    i = st["count"].get(w, 0)
    st["count"][w] = i + 1
    line = ctx.ins.loc.line if ctx.ins is not None and ctx.ins.loc is not None else None
    ent = st["pending"].get(i)
    if ent is None:
        st["pending"][i] = [key, w, line, 1]
        return
    if ent[0] != key:
        other = ctx.program.body[ent[0][0]] if 0 <= ent[0][0] < len(ctx.program.body) else None
        same_ins = ent[0][0] == key[0]
        why = ("with different matrix descriptors / scale-d" if same_ins else
               f"but warp {ent[1]} executed line {ent[2]} (`{other}`) as its wgmma instruction number {i + 1}")
        raise SyncError(f"{what}: warp {w} executes this as its wgmma instruction number {i + 1} of warpgroup {wg} "
                        f"{why}; .aligned requires every warp of the warpgroup to execute the same wgmma "
                        f"instruction (PTX ISA §9.7.15.5.2)",
                        expected="all four warps of the warpgroup issuing identical wgmma instructions")
    ent[3] += 1
    if ent[3] == 4:
        del st["pending"][i]


def _uniform(vals: np.ndarray, lanes: np.ndarray, what: str, full: str):
    v = vals[lanes]
    if v.size and (v != v[0]).any():
        bad = int(lanes[np.nonzero(v != v[0])[0][0]])
        raise VerifyError(f"{full}: {what} differs between lanes (lane {int(lanes[0])}: 0x{int(v[0]):x}, lane {bad}: "
                          f"0x{int(vals[bad]):x}); it must be the same in every thread of the warpgroup",
                          expected=f"a warp-uniform {what}")
    return int(v[0])


# ---------------------------------------------------------------------------------------------- fence / commit / wait
@semantics("wgmma.fence")
def decode_fence(ins: ir.Instruction, info):
    """PTX ISA §9.7.15.7.1 wgmma.fence.sync.aligned: orders the warpgroup's prior register accesses before later
    wgmma.mma_async register accesses (the race detector's edge); no data effect."""
    parse_simple(ins, "fence")
    what = ins.full_opcode

    def run(ctx):
        wg = _warpgroup(ctx, what)
        _aligned(ctx, wg, (ctx.pc,), what)
        ctx.emit_sync("wgmma.fence")

    return run


@semantics("wgmma.commit_group")
def decode_commit(ins: ir.Instruction, info):
    """PTX ISA §9.7.15.7.2 wgmma.commit_group.sync.aligned: seal each thread's uncommitted wgmma.mma_async ops into
    a new wgmma-group (an empty group when there are none)."""
    parse_simple(ins, "commit_group")
    what = ins.full_opcode
    seal = commit_run("wgmma", "wgmma.commit_group")

    def run(ctx):
        wg = _warpgroup(ctx, what)
        _aligned(ctx, wg, (ctx.pc,), what)
        seal(ctx)

    return run


@semantics("wgmma.wait_group")
def decode_wait(ins: ir.Instruction, info):
    """PTX ISA §9.7.15.7.3 wgmma.wait_group.sync.aligned N: wait until at most N of the thread's most recent
    wgmma-groups are pending and all older ones completed (their accumulators written)."""
    keep = parse_simple(ins, "wait_group")
    what = ins.full_opcode
    wait = wait_run("wgmma", keep, what, "wgmma-group(s)", "wgmma.wait_group")

    def run(ctx):
        wg = _warpgroup(ctx, what)
        _aligned(ctx, wg, (ctx.pc,), what)
        wait(ctx)

    return run


# ---------------------------------------------------------------------------------------------- mma_async
def check_descriptor(value: int, what: str, full: str) -> WgmmaDescriptor:
    """Decode an sm_90 matrix descriptor and reject what tcsim does not model / what is not a wgmma descriptor."""
    d = WgmmaDescriptor.decode(value)
    if d.unused:
        hint = " (bits 46-48 = 0b001 is the tcgen05 descriptor's fixed field: a tcgen05 descriptor?)" \
            if (value >> 46) & 0x7 else ""
        raise VerifyError(f"{full}: {what} 0x{value:016x} sets bits the sm_90 matrix descriptor leaves unused "
                          f"(0x{value & WGMMA_UNUSED_MASK:016x}){hint}: {d.describe()}",
                          expected="an sm_90 descriptor: start 0-13, LBO 16-29, SBO 32-45, base offset 49-51, "
                                   "swizzle 62-63 (PTX ISA §9.7.15.5.1.2.2)")
    if d.base_offset and d.swizzle != "none":
        raise UnsupportedError(f"{full}: {what} has matrix base offset {d.base_offset} ({d.describe()}); tcsim "
                               f"models swizzle patterns that start at their repeat boundary only (base offset 0)")
    return d


def _operand(desc: WgmmaDescriptor, rows: int, k: int, bits: int, major: str, what: str, full: str):
    eb, kk = (8, k // 8) if bits == 1 else (bits, k)
    try:
        return operand_addresses(desc, rows, kk, eb, major)
    except ValueError as e:
        raise VerifyError(f"{full}: {what}: {e} ({desc.describe()})",
                          expected="a descriptor of the canonical layouts (PTX ISA §9.7.15.5.1.2)") from None


def _codes(raw: np.ndarray, fmt: str, negate: bool) -> np.ndarray:
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32}[_BITS[fmt]]
    c = raw.astype(dt)
    if negate:
        c = c ^ dt(_SIGN[fmt])
    return c


def _unpack_b1(bytes_: np.ndarray) -> np.ndarray:
    """(rows, K/8) byte values -> (rows, K) bits, element k = bit k%8 of byte k//8 (LSB first (?))."""
    b = bytes_.astype(np.uint8)
    return ((b[:, :, None] >> np.arange(8, dtype=np.uint8)[None, None, :]) & 1).reshape(b.shape[0], -1)


def _meta_nibble(meta: np.ndarray, form, row: int, chunk: int) -> tuple:
    """(lane, nibble) of the metadata for chunk ``chunk`` (of the dense row) of row ``row`` (0..15) of this warp
    (module docstring)."""
    g, hi = row % 8, row // 8
    if form.kind in ("fp8", "int"):
        lane = 4 * g + (hi | (2 * (chunk // 8)))
        return lane, (int(meta[lane]) >> (4 * (chunk % 8))) & 0xF
    per = form.k // (2 if form.kind == "tf32" else 4) // 2           # chunks per lane-half
    lane = 4 * g + 2 * form.sp_sel + chunk // per
    return lane, (int(meta[lane]) >> (16 * hi + 4 * (chunk % per))) & 0xF


def _sparse_columns(meta: np.ndarray, form, full: str) -> np.ndarray:
    """(16, K/2): the dense column of every stored element of this warp's A rows, from the warp's 32 sp-meta words
    (module docstring; PTX ISA §9.7.15.6.1-2)."""
    K = form.k
    tf32 = form.kind == "tf32"
    chunk = 2 if tf32 else 4
    cols = np.zeros((16, K // 2), dtype=np.int64)
    for row in range(16):
        for c in range(K // chunk):
            lane, nib = _meta_nibble(meta, form, row, c)
            i0, i1 = nib & 3, nib >> 2
            if tf32:
                if nib not in (0b0100, 0b1110):
                    raise VerifyError(f"{full}: sp-meta nibble 0b{nib:04b} (lane {lane}, row {row}) is not 0b0100 "
                                      f"or 0b1110 (PTX ISA §9.7.15.6.1: undefined)")
                cols[row, c] = 2 * c + (i0 // 2)
            else:
                if i0 >= i1:
                    raise VerifyError(f"{full}: sp-meta nibble 0b{nib:04b} (lane {lane}, row {row}, chunk {c}) does "
                                      f"not name two increasing positions (PTX ISA §9.7.15.6.1: 0b0000/0b0101/"
                                      f"0b1010/0b1111 are invalid)")
                cols[row, 2 * c] = 4 * c + i0
                cols[row, 2 * c + 1] = 4 * c + i1
    return cols


def _sparse_mma(A: np.ndarray, Bt: np.ndarray, C: np.ndarray, cols: np.ndarray, form, params) -> np.ndarray:
    """D of this warp's 16 rows: each row's K/2 stored products with the B rows its metadata selects, summed as one
    packed K (the dense kind's block over K/2: measured, tests/golden/wgmma_sparse)."""
    D = None
    for r in range(16):
        Bs = np.ascontiguousarray(Bt[cols[r]])                       # (K/2, N)
        if form.kind == "int":
            d = mma_int(A[r:r + 1], Bs, C[r:r + 1], form.atype == "s8", form.btype == "s8",
                        form.satfinite).view(np.uint32)
        else:
            d = mma_float(A[r:r + 1], Bs, C[r:r + 1], form.atype, form.btype, form.dtype, params)
        if D is None:
            D = np.zeros((16,) + d.shape[1:], dtype=d.dtype)
        D[r] = d[0]
    return D


@semantics("wgmma.mma_async")
def decode_mma(ins: ir.Instruction, info):
    """PTX ISA §9.7.15.5.2 wgmma.mma_async / §9.7.15.6.3 wgmma.mma_async.sp (module docstring)."""
    form = parse_mma_async(ins, info)
    full = ins.full_opcode
    if info.arch != "sm_90a":
        raise VerifyError(f"{full}: wgmma requires the sm_90a target (this module targets {info.arch})", ins.loc,
                          expected=".target sm_90a (ptxas accepts wgmma only there)")
    params = None
    if form.kind not in ("int", "b1"):
        params = tc_params(TC_ARCH, "wgmma", form.atype)
    la = FR.wgmma_layout("A", form.atype, form.a_k) if form.a_regs is not None and form.kind != "b1" else None
    ld = FR.wgmma_layout("D", form.dtype, form.n)
    d_names = tuple(r.name for r in form.d)
    a_names = tuple(r.name for r in form.a_regs) if form.a_regs is not None else ()
    a_bits, b_bits = _BITS[form.atype], _BITS[form.btype]
    what = form.text

    def run(ctx):
        wg = _warpgroup(ctx, what)
        lanes = ctx.lane_ids()
        b_val = _uniform(ctx.read(form.b_desc, "b64"), lanes, "b-desc", full)
        a_val = None if form.a_desc is None else _uniform(ctx.read(form.a_desc, "b64"), lanes, "a-desc", full)
        sd = form.scale_d
        scale = bool(sd.value) if isinstance(sd, ir.Imm) else \
            bool(_uniform(ctx.read_pred(sd).astype(np.uint8), lanes, "scale-d", full))
        meta = None
        if form.sparse:
            meta = np.asarray(ctx.read(form.sp_meta, "b32"), dtype=np.uint32).copy()
        _aligned(ctx, wg, (ctx.pc, a_val, b_val, scale), what)
        w = ctx.warp.id % 4
        b_desc = check_descriptor(b_val, "b-desc", full)
        b_addrs = _operand(b_desc, form.n, form.k, b_bits, "MN" if form.trans_b else "K", "B", full)
        check_smem_span(ctx.cta, b_addrs, f"{what} operand B ({b_desc.describe()})")
        a_addrs = None
        if a_val is not None:
            a_desc = check_descriptor(a_val, "a-desc", full)
            a_all = _operand(a_desc, 64, form.a_k, a_bits, "MN" if form.trans_a else "K", "A", full)
            check_smem_span(ctx.cta, a_all, f"{what} operand A ({a_desc.describe()})")
            a_addrs = type(a_all)(byte=a_all.byte[16 * w:16 * w + 16], shift=a_all.shift[16 * w:16 * w + 16],
                                  elem_bits=a_all.elem_bits)
        unit = WarpgroupMma.of(ctx)
        warp = ctx.warp
        pc = ctx.pc
        line = ctx.ins.loc.line if ctx.ins is not None and ctx.ins.loc is not None else None

        def complete():
            B = read_smem_elements(ctx.cta, b_addrs, unit)               # (N, K) containers
            if a_addrs is not None:
                A = read_smem_elements(ctx.cta, a_addrs, unit)           # (16, K') containers
            else:
                regs = unit.read_warp_regs(warp, a_names, pc=pc, line=line)
                A = _b1_regs(regs) if form.kind == "b1" else FR.gather(la, regs)
            C = FR.gather(ld, unit.read_warp_regs(warp, d_names, pc=pc, line=line)) if scale else \
                np.zeros(ld.shape, dtype=ld.dtype)
            if form.kind == "b1":
                Ab = _unpack_b1(A) if a_addrs is not None else A
                # mma_b1 takes the bits packed 8 to a byte; A and B packed the same way, so the popcount is
                # the same whatever the bit order within a byte
                D = mma_b1(np.packbits(Ab.astype(np.uint8), axis=1),
                           np.packbits(_unpack_b1(B).T.astype(np.uint8), axis=0),
                           C.view(np.int32) if C.dtype == np.uint32 else C)
                D = D.view(np.uint32)
            else:
                A = _codes(A, form.atype, form.negate_a)
                Bt = np.ascontiguousarray(_codes(B, form.btype, form.negate_b).T)
                if form.sparse:
                    D = _sparse_mma(A, Bt, C, _sparse_columns(meta, form, full), form, params)
                elif form.kind == "int":
                    D = mma_int(A, Bt, C, form.atype == "s8", form.btype == "s8", form.satfinite).view(np.uint32)
                else:
                    D = mma_float(A, Bt, C, form.atype, form.btype, form.dtype, params)
            unit.write_warp_regs(warp, d_names, FR.scatter(ld, D), pc=pc, line=line)

        op = WgmmaOp(what, complete, form.n, warp, issuer=f"{warp.label}", loc=ctx.ins.loc, pc=pc,
                     extra=dict(d_regs=d_names, a_regs=a_names, shape=form.shape))
        unit.submit(op)
        for lane in lanes:
            ctx.async_group_join("wgmma", int(lane), op)

    return run


def _b1_regs(regs: np.ndarray) -> np.ndarray:
    """(16, 256) bits of this warp's A rows from its four b1 registers: register r of lane 4g+t holds row
    g + 8*(r%2), columns 32t + 128*(r//2) + bit (the mma.sync m16n8k256 b1 A map, per warp of the warpgroup
    (?))."""
    out = np.zeros((16, 256), dtype=np.uint8)
    bits = np.arange(32, dtype=np.uint32)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for r in range(4):
            v = (regs[r, lane] >> bits) & 1
            out[g + 8 * (r % 2), 32 * t + 128 * (r // 2) + np.arange(32)] = v
    return out


__all__ = ["check_descriptor", "SECTION"]
