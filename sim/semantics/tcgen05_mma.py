"""tcgen05.mma (5th-generation tensor-core MMA, D in tensor memory) and tcgen05.commit.

PTX ISA 9.1 §9.7.16.10.9.1 (tcgen05.mma), §9.7.16.10.9.2 (.sp), §9.7.16.10.9.3 (.ws), §9.7.16.2.1 (Table 39
shapes), §9.7.16.4 (descriptors), §9.7.16.3 (canonical SMEM layouts), the data-path layouts
(``#tcgen05-data-path-layout-organization``) and block scaling (``#tcgen05-block-scaling``), §9.7.16.12.1
(tcgen05.commit); tcgen05.md (b), (f); tcgen05_layouts.md (b'), (c); numerics.md.

Forms executed (qualifiers in any order, as ptxas accepts them)::

    tcgen05.mma{.ws}.cta_group::{1,2}.kind::{f16,tf32,f8f6f4,i8}{.collector::a::*|.collector::bN::*}
        [d], a-desc|[a-tmem], b-desc, idesc, {disable-output-lane,} enable-input-d {, scale-input-d};
    tcgen05.mma.cta_group::{1,2}.kind::{mxf8f6f4,mxf4,mxf4nvf4}.block_scale{.scale_vec::1X|2X|4X|.block16|.block32}
        {.collector::a::*} [d], a-desc|[a-tmem], b-desc, idesc, [sfa], [sfb], enable-input-d;
    tcgen05.commit.cta_group::{1,2}.mbarrier::arrive::one{.shared::cluster}{.multicast::cluster}.b64
        [mbar]{, ctaMask};

Issue half (this module, the issuing thread; every executing lane issues its own MMA): the qualifiers were
checked at decode by :func:`tcsim.isa.tcgen05_rules.parse_mma`; at issue the instruction descriptor and the SMEM
descriptors are decoded and checked (:func:`tcsim.isa.tcgen05_rules.check_idesc`, ``check_smem_desc``), the operand
geometry is computed (SMEM byte address of every element through :func:`tcsim.isa.descriptors.operand_addresses`; TMEM
lanes/columns of D, A, SFA, SFB), SMEM ranges and TMEM allocations are checked, and a
:class:`tcsim.agents.tensor_pipe.PipeOp` is submitted to the CTA's (pair's) tensor pipe.  Completion half (the
op's ``complete``, run by the pipe at completion time): read A, B (and C, SFA, SFB) from SMEM / TMEM *then*,
compute D with the bit-exact tensor-core model (:mod:`tcsim.numerics.tensor_core`: ``mma_float`` /
``mma_block_scaled`` / ``mma_int`` with ``tc_params('sm_100a', 'tcgen05', fmt, kind=...)``), write D into TMEM.

Operands:
* A is M x K (this CTA's M/2 rows for ``.cta_group::2``), B is stored N x K (K-major by default; the idesc
  transpose bits select MN-major), each read through the canonical layout of its descriptor; 4/6-bit types of
  kind::f8f6f4 / mxf8f6f4 sit in byte containers (E2M1 in bits [5:2], E3M2 / E2M3 in bits [5:0]; padding bits
  are ignored (?)), mxf4 / mxf4nvf4 pack two E2M1 per byte (element 2i in the low nibble).  Negate flips the
  sign bit of every element (exact).
* ``.cta_group::2``: CTA v of the pair (v = rank & 1) supplies A rows [vM/2, (v+1)M/2) and B columns
  [vN/2, (v+1)N/2) from its own SMEM at the descriptors' offsets and receives D rows [vM/2, ...) x all N in its
  own TMEM at the d address (tcgen05.md (b), CUTLASS 2x1SM).
* D / C in TMEM: the data-path layouts of tcgen05_layouts.md (c) -- M=128 (layout D), M=64 (layout F, lane base
  0 or 16), M=256 and M=128 with ``::2`` (layouts A and B), ``.ws`` M=128/64/32 (D, E, G).  A 16-bit D uses the
  low 16 bits of a cell (the high 16 bits are written as 0).  A from TMEM (``[a-tmem]``) uses D's row -> lane
  map (for the split layouts B/E/G each D column part reads the A copy in its own lanes); K elements are
  packed along columns (32/bits per column).  ``enable-input-d`` false -> C = 0.  ``scale-input-d`` s
  (f16/tf32): C is scaled by 2^-s first; a scaling that is not exact (subnormal underflow) raises
  UnsupportedError rather than guessing the rounding.
* Block scaling (tcgen05_layouts.md (c)): SFA row r, factor s at TMEM (lane (r%32)+32p, column sfa + r//32, byte
  SFA_ID + s); SFB column c likewise (for the split layout B, column c of part h at lanes of that part's
  subpartitions, column (c - hN/2)//32).  All replicas p must agree (VerifyError, rule ``sf-replicas``).  With
  ``::2`` each CTA reads SFB for all N columns from its own TMEM (?).
* ``disable-output-lane``: bit i of the 128-bit vector (words 4v..4v+3 for CTA v of a pair (?)) suppresses
  the write of TMEM lane i of D.
* Collectors: ``collector::a::fill`` (``bN::fill`` for ``.ws``) records the A (B) operand it read;
  ``::use`` / ``::lastuse`` use the recorded operand, as the hardware reuses its collector buffer -- so
  tcsim raises SyncError when the operand in memory (or its descriptor) changed since the fill, or when no
  fill preceded; ``::lastuse`` / ``::discard`` (the default) release the buffer.

``tcgen05.commit``: an op in the same in-order pipe whose completion performs one arrive (count 1, cluster
scope) on the mbarrier ``[mbar]`` (``.shared::cluster`` address, or a generic address of shared memory), or
with ``.multicast::cluster`` on the mbarrier at the same offset in every CTA whose rank bit is set in the
16-bit ctaMask.  The mbarrier must be live at issue and at the arrive (SyncError otherwise).

* ``.ws`` zero-column mask (PTX ISA §9.7.16.4.3; the literal 0 or a 64-bit register, per issuing lane): the
  columns of B its mask selects are 0 for the MMA, and its column shift makes the MMA use B columns
  [shift, shift + N) of the descriptor's operand (:class:`tcsim.isa.descriptors.ZeroColumnMask`); reserved bits or
  a shift above 32 (16 for M = 32) are a VerifyError (rule ``zero-col-mask``).
* ``.ashift`` (A in TMEM, M = 128 / 256): :func:`ashift_rows` -- the MMA's A row r is TMEM row r - 1 for r >= 1;
  row 0 keeps its own row and TMEM is not modified (both inferred from the PTX text (?)).

Not supported (UnsupportedError naming the form): ``.sp`` (sparse; decode time), scale-input-d with kind::i8 (ptxas accepts it; its meaning is undocumented), a non-zero descriptor base offset,
and an MN-major A taken from TMEM (execution time).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcsim.isa.descriptors import CONTAINER_BITS, OperandAddresses, ZeroColumnMask, operand_addresses
from tcsim.isa.errors import MemoryFault, SyncError, UnsupportedError
from tcsim.isa.tcgen05_rules import (MmaForm, check_idesc, check_smem_desc, check_uniform_cta_group, parse_commit,
                               parse_mma, reject)
from .. import memory as M
from ..agents.tensor_pipe import PipeOp, TensorPipe
from ..numerics.tensor_core import mma_block_scaled, mma_float, mma_int, tc_params
from ..tmem import tmem_of
from .bulk_copy import cta_mask_targets, issuer, live_mbarrier, shared_target
from .registry import semantics

SECTION = "PTX ISA §9.7.16.10.9.1"
TC_ARCH = "sm_100a"

#: sign bit of each element format's code
SIGN_BIT = {"f16": 0x8000, "bf16": 0x8000, "tf32": 0x80000000, "e4m3": 0x80, "e5m2": 0x80, "e3m2": 0x20,
            "e2m3": 0x20, "e2m1": 0x8}
_CODE_DTYPE = {16: np.uint16, 32: np.uint32, 8: np.uint8, 4: np.uint8}


# ---------------------------------------------------------------------------------------------- elements
def element_bits(kind: str, fmt: str) -> int:
    """Bits one element occupies in SMEM / TMEM: the byte container for f8f6f4 / mxf8f6f4 fp6/fp4, a nibble for
    mxf4 / mxf4nvf4."""
    return 4 if kind in ("mxf4", "mxf4nvf4") else CONTAINER_BITS[fmt]


def container_to_code(kind: str, fmt: str, c: np.ndarray) -> np.ndarray:
    """Element codes from containers (tcgen05_layouts.md (c): E2M1 in bits [5:2], fp6 in bits [5:0] of a byte)."""
    bits = element_bits(kind, fmt)
    if bits == 8 and fmt == "e2m1":
        return ((c >> 2) & 0xF).astype(np.uint8)
    if fmt in ("e3m2", "e2m3"):
        return (c & 0x3F).astype(np.uint8)
    if bits == 4:
        return (c & 0xF).astype(np.uint8)
    return c.astype(_CODE_DTYPE[bits])


def negate(codes: np.ndarray, fmt: str) -> np.ndarray:
    return codes ^ codes.dtype.type(SIGN_BIT[fmt])


def read_smem_elements(cta, addrs, pipe) -> np.ndarray:
    """Container values (uint32 array, shape of ``addrs.byte``) of the elements at ``addrs`` in ``cta``'s SMEM, read
    by the tensor ``pipe`` (async proxy: st.shared data needs fence.proxy.async first) for the op it completes."""
    nb = addrs.nbytes_each
    flat = addrs.byte.reshape(-1)
    op = pipe.completing
    reader = None if op is None else f"{op.what} (SMEM operand)"
    raw = pipe.read_smem(cta, flat, nb, reader=reader, issued_at=0.0 if op is None else op.issued_at,
                         unique=True).astype(np.uint32)           # (n, nb)
    val = np.zeros(flat.size, dtype=np.uint32)
    for i in range(nb):
        val |= raw[:, i] << np.uint32(8 * i)
    if addrs.elem_bits == 4:
        val = (val >> addrs.shift.reshape(-1).astype(np.uint32)) & np.uint32(0xF)
    return val.reshape(addrs.byte.shape)


def read_tmem_elements(pipe, cta, lanes: np.ndarray, col0: int, k: int, bits: int) -> np.ndarray:
    """Containers of a TMEM-resident operand: row i at lane ``lanes[i]``, element kk at column
    ``col0 + kk*bits//32``, bit ``(kk*bits) % 32`` (tcgen05_layouts.md (c) "A in TMEM"), read by ``pipe``."""
    kk = np.arange(k)
    cols = col0 + (kk * bits) // 32
    sh = ((kk * bits) % 32).astype(np.uint32)
    ncols = k * bits // 32
    cells = [(int(l), c) for l in lanes for c in range(col0, col0 + ncols)]
    words = pipe.read_tmem(cta, lanes[:, None], cols[None, :], cells=cells)
    return (words >> sh[None, :]) & np.uint32((1 << bits) - 1)


# ---------------------------------------------------------------------------------------------- D layouts
@dataclass(frozen=True)
class DPart:
    """Columns [j0, j1) of this CTA's D rows: D[i][j] at TMEM (lanes[i], d_col + j - j0)."""

    j0: int
    j1: int
    lanes: np.ndarray


def d_layout(m: int, n: int, cta_group: int, ws: bool, lane_base: int, ins=None) -> tuple:
    """(rows of D in this CTA, [DPart], TMEM columns used) for the data-path layout of the shape
    (tcgen05_layouts.md (c)).  Raises VerifyError (rule tmem-lane) for an illegal lane field of d."""
    if cta_group == 1 and not ws and m == 64:
        if lane_base not in (0, 16):
            raise reject("tmem-lane", f"the d-tmem lane field is {lane_base}; M = 64 (layout F) uses lane base 0 or "
                                      f"16", expected="a d-tmem address with lane 0 or 16")
        i = np.arange(64)
        return 64, [DPart(0, n, 32 * (i // 16) + i % 16 + lane_base)], n
    if lane_base != 0:
        raise reject("tmem-lane", f"the d-tmem lane field is {lane_base}; the M = {m} data path starts at lane 0",
                     expected="a d-tmem address with lane field 0")
    if cta_group == 2:
        rows = m // 2
        i = np.arange(rows)
        if m == 256:
            return rows, [DPart(0, n, i)], n
        h = n // 2
        return rows, [DPart(0, h, i), DPart(h, n, i + 64)], h
    if ws and m in (64, 32):
        parts = 128 // m
        w = n // parts
        i = np.arange(m)
        return m, [DPart(p * w, (p + 1) * w, i + m * p) for p in range(parts)], w
    i = np.arange(m)
    return m, [DPart(0, n, i)], n


# ---------------------------------------------------------------------------------------------- issue
@dataclass
class _CtaPlan:
    """What the completion half needs for one CTA of the group."""

    cta: object
    tmem: object
    a_addrs: object          # OperandAddresses (A from SMEM) or None
    b_addrs: object          # OperandAddresses of this CTA's B rows
    rows: int
    parts: list
    unallocated_at_issue: bool = False   # D columns not allocated at issue (class 13, reported then)


def split_taddr(v: int) -> tuple[int, int]:
    v = int(v) & 0xFFFFFFFF
    return v >> 16, v & 0xFFFF


def check_smem_span(cta, addrs, what: str) -> None:
    lo, hi = addrs.span()
    if lo < cta.smem.base or hi > cta.smem.end:
        raise MemoryFault(f"{what} reads SMEM bytes [0x{lo:x}, 0x{hi:x}) of {cta.label}, outside its "
                          f"{cta.smem.size}-byte shared memory [0x{cta.smem.base:x}, 0x{cta.smem.end:x})",
                          expected="a descriptor whose operand lies inside "
                                                                           "the CTA's shared memory")


def _read_c(pipe, cta, parts, d_col, d_fmt, enable: bool, scale_d: int):
    """C per part (uint16 / uint32 bits), zeros when enable-input-d is false; scale-input-d applied.  (The
    accumulator read was not in the pre-issue-14 trace: ``traced=False``.)"""
    out = []
    for p in parts:
        cols = d_col + np.arange(p.j1 - p.j0)
        if enable:
            w = pipe.read_tmem(cta, p.lanes[:, None], cols[None, :], traced=False)
            c = (w & np.uint32(0xFFFF)).astype(np.uint16) if d_fmt == "f16" else w.copy()
            if scale_d:
                c = _scale_c(c, d_fmt, scale_d)
        else:
            c = np.zeros((p.lanes.size, cols.size), dtype=np.uint16 if d_fmt == "f16" else np.uint32)
        out.append(c)
    return out


def _scale_c(c, d_fmt, s):
    ft = np.float16 if d_fmt == "f16" else np.float32
    with np.errstate(all="ignore"):
        x = c.view(ft).astype(np.float64)
        y = x * 2.0 ** -s
        back = y.astype(ft)
    exact = (back.astype(np.float64) == y) | np.isnan(x)
    if not exact.all():
        raise UnsupportedError(f"scale-input-d {s}: scaling the accumulator by 2^-{s} is inexact for some elements "
                               f"(subnormal underflow); the hardware rounding of that case is not modelled")
    return np.where(np.isnan(x), c, back.view(c.dtype)).astype(c.dtype)


def _sf_values(pipe, cta, rows_idx: np.ndarray, col0: int, byte0: int, nsf: int, subparts, what: str) -> np.ndarray:
    """Scale factors (len(rows_idx), nsf) uint8 from TMEM: row r at lanes (r%32)+32p (p in subparts), column
    col0 + r//32, byte byte0+s; replicas must agree.  (Not in the pre-issue-14 trace: ``traced=False``.)"""
    lanes = rows_idx % 32
    cols = col0 + rows_idx // 32
    vals = []
    for p in subparts:
        w = pipe.read_tmem(cta, lanes + 32 * p, cols, traced=False)
        vals.append(np.stack([(w >> np.uint32(8 * (byte0 + s))) & np.uint32(0xFF) for s in range(nsf)], axis=1))
    for p, v in zip(subparts[1:], vals[1:]):
        if not np.array_equal(v, vals[0]):
            r = int(rows_idx[np.nonzero((v != vals[0]).any(axis=1))[0][0]])
            raise reject("sf-replicas", f"{what}: the scale factors of row/column {r} differ between the copies in "
                                        f"TMEM subpartitions {subparts[0]} and {p} (lanes {r % 32} and "
                                        f"{r % 32 + 32 * p})",
                         expected="identical scale-factor copies in every 32-lane subpartition (e.g. written by "
                                  "tcgen05.cp.32x128b.warpx4)")
    return vals[0].astype(np.uint8)


@semantics("tcgen05.mma")
def decode_mma(ins, info):
    """PTX ISA §9.7.16.10.9.1 tcgen05.mma (and §9.7.16.10.9.3 .ws; §9.7.16.10.9.2 .sp is rejected): see the module
    docstring for the forms and the model."""
    form = parse_mma(ins, info)
    check_uniform_cta_group(ins, info.function)
    if form.sparse:
        raise UnsupportedError(f"{ins.full_opcode}: sparse tcgen05.mma (.sp) is not supported by tcsim yet", ins.loc)
    if form.idx_scale_d is not None and form.kind == "i8":
        raise UnsupportedError(f"{ins.full_opcode}: scale-input-d with kind::i8 (accepted by ptxas, meaning not "
                               f"documented by PTX) is not supported", ins.loc)
    return _make_mma(ins, form, info.arch)


def _make_mma(ins, form: MmaForm, arch):
    ops = ins.operands
    what = ins.full_opcode
    scale_d = ops[form.idx_scale_d].value if form.idx_scale_d is not None else 0

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        d_addr = ctx.address(ops[0])
        a_val = ctx.address(ops[1]) if form.a_tmem else ctx.read(ops[1], "b64")
        b_val = ctx.read(ops[2], "b64")
        idesc = ctx.read(ops[form.idx_idesc], "b32")
        enable = ctx.read_pred(ops[form.idx_enable])
        sfa_addr = ctx.address(ops[form.idx_sfa]) if form.block_scale else None
        sfb_addr = ctx.address(ops[form.idx_sfb]) if form.block_scale else None
        disable = ctx.read_vector(ops[form.idx_disable], "b32") if form.idx_disable is not None else None
        zcol = ctx.read(ops[form.idx_zero_col], "b64") if form.idx_zero_col is not None else None
        pipe = TensorPipe.of(ctx, form.cta_group, "tcgen05.mma")
        for lane in lanes:
            lane = int(lane)
            dis = [int(w[lane]) for w in disable] if disable is not None else None
            op = _issue_one(ctx, pipe, form, what, lane, int(d_addr[lane]), int(a_val[lane]), int(b_val[lane]),
                            int(idesc[lane]), bool(enable[lane]), scale_d,
                            int(sfa_addr[lane]) if sfa_addr is not None else None,
                            int(sfb_addr[lane]) if sfb_addr is not None else None, dis, arch,
                            None if zcol is None else int(zcol[lane]))
            pipe.submit(op)

    return run


def _zero_columns(what, zcol: int | None, m: int, n: int):
    """(bool mask of the N columns of B replaced by 0, column shift) of a .ws zero-column mask descriptor
    (PTX ISA §9.7.16.4.3; :class:`tcsim.isa.descriptors.ZeroColumnMask`); (None, 0) without the operand."""
    if zcol is None:
        return None, 0
    zm = ZeroColumnMask.decode(zcol)
    if zm.reserved:
        raise reject("zero-col-mask", f"the zero-column mask descriptor 0x{zcol:016x} sets reserved bits (36-38 or "
                                      f"62-63)", expected="reserved bits 0")
    if zm.shift > zm.max_shift(m):
        raise reject("zero-col-mask", f"the zero-column mask descriptor's column shift {zm.shift} exceeds "
                                      f"{zm.max_shift(m)} for M = {m}",
                     expected=f"a shift of at most {zm.max_shift(m)}")
    mask = zm.mask(m, n)
    return (mask if mask.any() else None), zm.shift


def _issue_one(ctx, pipe, form: MmaForm, what, lane, d_taddr, a_val, b_val, idesc, enable, scale_d, sfa_taddr,
               sfb_taddr, disable, arch, zcol=None) -> PipeOp:
    shape = check_idesc(form, idesc, arch)
    kind = form.kind
    m, n, k = shape.m, shape.n, shape.k
    cg = form.cta_group
    zero_cols, col_shift = _zero_columns(what, zcol, m, n)
    if form.ashift and m not in (128, 256):
        raise reject("ashift-shape", f".ashift with M = {m}", expected="M = 128 or M = 256")
    a_bits = element_bits(kind, shape.a_fmt)
    b_bits = element_bits(kind, shape.b_fmt)
    d_lane, d_col = split_taddr(d_taddr)
    rows, parts, dcols = d_layout(m, n, cg, form.ws, d_lane)
    nb = n // cg
    b_desc = check_smem_desc(b_val, "the B descriptor", major=shape.b_major, k_bytes=k * b_bits // 8,
                             fmt=shape.b_fmt, arch=arch)
    a_desc = None
    if form.a_tmem:
        if shape.a_major != "K":
            raise UnsupportedError(f"{what}: an MN-major (transposed) A operand read from tensor memory is not "
                                   f"defined by the TMEM A layout; tcsim does not model it")
        a_lane, a_col = split_taddr(a_val)
        if a_lane != d_lane:
            raise reject("tmem-lane", f"the a-tmem lane field {a_lane} differs from the d-tmem lane field {d_lane}",
                         expected="A in TMEM at the lanes of D's rows (the same lane base)")
    else:
        a_desc = check_smem_desc(a_val, "the A descriptor", major=shape.a_major, k_bytes=k * a_bits // 8,
                                 fmt=shape.a_fmt, arch=arch)
    ctas = pipe.ctas
    plans = []
    unalloc = set()                 # CTAs whose D columns were not allocated at issue (class 13, reported then)
    for cta in ctas:
        tmem = tmem_of(cta)
        a_addrs = None
        if a_desc is not None:
            a_addrs = operand_addresses(a_desc, rows, k, a_bits, shape.a_major)
            check_smem_span(cta, a_addrs, f"{what} operand A")
        b_addrs = operand_addresses(b_desc, nb + col_shift, k, b_bits, shape.b_major)
        if col_shift:                       # the .ws column shift: B columns [shift, shift + N)
            b_addrs = OperandAddresses(byte=b_addrs.byte[col_shift:], shift=b_addrs.shift[col_shift:],
                                       elem_bits=b_addrs.elem_bits)
        check_smem_span(cta, b_addrs, f"{what} operand B")
        if not tmem.allocated(0, 128, d_col, dcols) and \
                tmem.check_allocated(0, 128, d_col, dcols, f"{what} D (TMEM columns {d_col}..{d_col + dcols - 1})",
                                     ctx.report, ctx.side(proxy="async", where=f"TMEM columns [{d_col}, "
                                                                               f"{d_col + dcols}) of {cta.label}")):
            unalloc.add(id(cta))
        if form.a_tmem and not tmem.allocated(0, 128, a_col, k * a_bits // 32):
            tmem.check_allocated(0, 128, a_col, k * a_bits // 32, f"{what} A in TMEM", ctx.report,
                                 ctx.side(proxy="async", where=f"TMEM columns from {a_col} of {cta.label}"))
        plans.append(_CtaPlan(cta, tmem, a_addrs, b_addrs, rows, parts, id(cta) in unalloc))
    sf = None
    if form.block_scale:
        sfa_lane, sfa_col = split_taddr(sfa_taddr)
        sfb_lane, sfb_col = split_taddr(sfb_taddr)
        for nm, ln in (("sfa", sfa_lane), ("sfb", sfb_lane)):
            if ln:
                raise reject("tmem-lane", f"the [{nm}-tmem] lane field is {ln}; scale factors use all four "
                                          f"subpartitions from lane 0", expected="lane field 0")
        sfb_cols = max((p.j1 - p.j0 + 31) // 32 for p in parts)
        for pl in plans:
            pl.tmem.check_allocated(0, 128, sfa_col, (rows + 31) // 32, f"{what} scale factors A")
            pl.tmem.check_allocated(0, 128, sfb_col, sfb_cols, f"{what} scale factors B")
        sf = (sfa_col, sfb_col)
    params = None if kind == "i8" else tc_params(TC_ARCH, "tcgen05", shape.a_fmt, kind=kind)
    line = ctx.ins.loc.line if ctx.ins is not None and ctx.ins.loc is not None else None
    a_key = ("tmem", a_val & 0xFFFFFFFF) if form.a_tmem else ("smem", a_desc.encode())
    b_key = ("smem", b_desc.encode())
    a_col = (a_val & 0xFFFF) if form.a_tmem else None

    def complete():
        _complete_mma(pipe, form, shape, plans, d_col, enable, scale_d, sf, disable, params, what, a_key, a_col,
                      b_key, line, zero_cols)

    return PipeOp("mma", what, complete, size=n, issuer=issuer(ctx, lane), loc=ctx.ins.loc, warp=ctx.warp.id,
                  lane=lane, pc=ctx.pc, extra=dict(m=m, n=n, k=k, kind=kind, a_tmem=form.a_tmem, a_bits=a_bits,
                                                  b_bits=b_bits, block_scale=form.block_scale, ws=form.ws))


# ---------------------------------------------------------------------------------------------- completion
def _collect(pipe, buf: str, v: int, op: str | None, key, fresh, what: str, line):
    """Apply the collector qualifier: returns the operand to use (the recorded one for use/lastuse)."""
    slot = (buf, v)
    if op in ("use", "lastuse"):
        rec = pipe.collectors.get(slot)
        if rec is None:
            raise SyncError(f"{what}: .collector::{buf}::{op} with an empty collector buffer (no earlier "
                            f".collector::{buf}::fill)", expected=f"a .collector::{buf}::fill MMA before ::{op}")
        rkey, rdata, rline = rec
        same = rkey == key and len(rdata) == len(fresh) and all(np.array_equal(x, y) for x, y in zip(rdata, fresh))
        if not same:
            why = "its descriptor / address" if rkey != key else "its data in memory"
            raise SyncError(f"{what}: .collector::{buf}::{op} reuses the operand loaded by .collector::{buf}::fill "
                            f"(line {rline}), but {why} changed since; the hardware would compute with the stale "
                            f"collector contents", expected="the operand unchanged between ::fill and ::use")
        if op == "lastuse":
            del pipe.collectors[slot]
        return rdata
    if op == "fill":
        pipe.collectors[slot] = (key, fresh, line)
    else:
        pipe.collectors.pop(slot, None)
    return fresh


def _complete_mma(pipe, form, shape, plans, d_col, enable, scale_d, sf, disable, params, what, a_key, a_col, b_key,
                  line, zero_cols=None):
    kind = form.kind
    k = shape.k
    a_bits = element_bits(kind, shape.a_fmt)
    # ---- read every source first (D may alias nothing we read, but be safe)
    b_rows = []
    for v, pl in enumerate(plans):
        b = container_to_code(kind, shape.b_fmt, read_smem_elements(pl.cta, pl.b_addrs, pipe))
        b_rows.append(b)
    # no qualifier = .collector::a::discard (.collector::b0::discard for .ws)
    coll_buf, coll_op = form.collector or (("b0" if form.ws else "a"), "discard")
    if form.ws:                                             # .ws is cta_group::1: one CTA
        b_rows = _collect(pipe, coll_buf, 0, coll_op, b_key, b_rows, what, line)
    B = np.concatenate(b_rows, axis=0)                      # (N, K) codes
    if shape.negate_b:
        B = negate(B, shape.b_fmt)
    if zero_cols is not None:                                # .ws zero-column mask: those columns of B are 0
        B = B.copy()
        B[zero_cols] = 0
    Bt = np.ascontiguousarray(B.T)                           # (K, N)
    results = []
    for v, pl in enumerate(plans):
        if not pl.unallocated_at_issue:
            pl.tmem.check_allocated(0, 128, d_col, max(p.j1 - p.j0 for p in pl.parts), f"{what} D at completion")
        if pl.a_addrs is not None:
            a = container_to_code(kind, shape.a_fmt, read_smem_elements(pl.cta, pl.a_addrs, pipe))
            a_parts = [a] * len(pl.parts)
        else:
            rows_of = [p.lanes.size for p in pl.parts]
            words = read_tmem_elements(pipe, pl.cta, np.concatenate([p.lanes for p in pl.parts]), a_col, k, a_bits)
            a_parts = [container_to_code(kind, shape.a_fmt, w)
                       for w in np.split(words, np.cumsum(rows_of)[:-1], axis=0)]
            if form.ashift:
                a_parts = [ashift_rows(x) for x in a_parts]
        if not form.ws:
            a_parts = _collect(pipe, "a", v, coll_op, a_key, a_parts, what, line)
        if shape.negate_a:
            a_parts = [negate(x, shape.a_fmt) for x in a_parts]
        cs = _read_c(pipe, pl.cta, pl.parts, d_col, shape.d_fmt, enable, scale_d)
        outs = []
        for p, a, c in zip(pl.parts, a_parts, cs):
            b = Bt[:, p.j0:p.j1]
            if kind == "i8":
                d = mma_int(a, b, c, shape.a_fmt == "s8", shape.b_fmt == "s8", shape.saturate).view(np.uint32)
            elif form.block_scale:
                sfa_col, sfb_col = sf
                nsf = form.nsf
                sfa = _sf_values(pipe, pl.cta, np.arange(pl.rows), sfa_col, shape.sfa_id, nsf, (0, 1, 2, 3),
                                 f"{what} SFA")
                subs = tuple(sorted(set(int(x) for x in p.lanes // 32)))
                sfb = _sf_values(pipe, pl.cta, np.arange(p.j1 - p.j0), sfb_col, shape.sfb_id, nsf, subs, f"{what} SFB")
                d = mma_block_scaled(a, b, c, sfa, np.ascontiguousarray(sfb.T), shape.a_fmt, shape.b_fmt,
                                     shape.scale_fmt, form.scale_block, params)
            else:
                d = mma_float(a, b, c, shape.a_fmt, shape.b_fmt, shape.d_fmt, params)
            outs.append(np.asarray(d).astype(np.uint32) if shape.d_fmt == "f16" else np.asarray(d).view(np.uint32))
        results.append(outs)
    # ---- write D
    for v, (pl, outs) in enumerate(zip(plans, results)):
        keep = None
        if disable is not None:
            words = disable[4 * v:4 * v + 4]
            mask128 = np.array([(words[i // 32] >> (i % 32)) & 1 for i in range(128)], dtype=bool)
            keep = ~mask128
        for p, d in zip(pl.parts, outs):
            cols = d_col + np.arange(p.j1 - p.j0)
            ln = p.lanes
            if keep is not None:
                sel = keep[ln]
                ln, d = ln[sel], d[sel]
            if ln.size:
                pipe.write_tmem(pl.cta, ln[:, None], cols[None, :], d)


def ashift_rows(a: np.ndarray) -> np.ndarray:
    """``.ashift`` (PTX ISA §9.7.16.10.9.1: "shifts the rows of the A matrix down by one row, except for the last
    row in the Tensor Memory"): the MMA's row r is the A row r - 1 read from TMEM (rows 0 .. M-2 move down one;
    the last row is no source).  Row 0 keeps its own TMEM row, as ``tcgen05.shift`` leaves its vacated row (?);
    tensor memory itself is not modified (?).  ``a``: this CTA's rows (M = 128, or 128 of M = 256 per CTA)."""
    out = a.copy()
    out[1:] = a[:-1]
    return out


# ---------------------------------------------------------------------------------------------- commit
def _commit_generic(ctx, a: int, lane: int) -> int:
    """The ``.shared::cluster`` address ptxas makes of a generic ``[mbar]`` operand: its low 32 bits.

    ptxas 13.0 (SASS read back with nvdisasm) feeds ``UTCBAR`` the low 32 bits of the operand register for the
    generic form, whether the register is 64-bit or 32-bit: a generic shared address is ``SR_SWINHI << 32 | shared
    address`` (4 GiB-aligned window, as tcsim's :data:`tcsim.memory.SHARED_WINDOW`), so its low half is the shared
    address.  ThunderKittens passes ``__cvta_generic_to_shared(&bar)`` (a shared address, not a generic one) to the
    generic form and it works on B200 for that reason.  PTX ISA 9.1 §9.7.16.12.1 (tcgen05.commit): "If no state
    space is specified then Generic Addressing is used. If the address specified by mbar does not fall within the
    address window of .shared::cluster state space then the behavior is undefined" -- such a value gets a lint note
    (severity 'lint', never a stop) and the low 32 bits are used, as on the GPU."""
    if M.SHARED_WINDOW <= a < M.SHARED_WINDOW + M.WINDOW_SIZE:
        return a - M.SHARED_WINDOW
    low = a & 0xFFFFFFFF
    from ..findings import Finding
    ctx.report(Finding(
        0, f"{ctx.ins.full_opcode} [mbar] = 0x{a:x} (lane {lane}) is not a generic address of shared memory; ptxas "
           f"passes its low 32 bits, 0x{low:x}, to the commit as a .shared::cluster address (tcsim does the same)",
        sides=(ctx.side(where=f"mbarrier at shared address 0x{low:x}"),), severity="lint",
        missing="PTX ISA 9.1 §9.7.16.12.1: with no state space [mbar] is a generic address, and one outside the "
                ".shared::cluster window is undefined behaviour",
        fix="add .shared::cluster to the commit when passing a shared address (or pass the generic address)"))
    return low


@semantics("tcgen05.commit")
def decode_commit(ins, info):
    """PTX ISA §9.7.16.12.1 tcgen05.commit.cta_group::N.mbarrier::arrive::one{.shared::cluster}
    {.multicast::cluster}.b64 [mbar]{, ctaMask}: one arrive (count 1) on the mbarrier(s) once every tcgen05
    mma/cp/shift issued before it to the same tensor pipe completed (module docstring)."""
    form = parse_commit(ins, info)
    check_uniform_cta_group(ins, info.function)
    mbar_op = ins.operands[0]
    mask_op = ins.operands[1] if form.multicast else None
    what = ins.full_opcode

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        addrs = ctx.address(mbar_op)
        cmask = ctx.read(mask_op, "u16") if mask_op is not None else None
        pipe = TensorPipe.of(ctx, form.cta_group, "tcgen05.commit")
        per_barrier: dict = {}
        for lane in lanes:
            lane = int(lane)
            a = int(addrs[lane])
            if form.space == "generic":
                a = _commit_generic(ctx, a, lane)
            mcta, off = shared_target(ctx, a, "shared::cluster", "tcgen05.commit [mbar]", lane)
            targets = cta_mask_targets(ctx, int(cmask[lane]), lane) if cmask is not None else [mcta]
            for t in targets:
                mb = live_mbarrier(t, off, "tcgen05.commit [mbar]", lane)
                per_barrier.setdefault((id(t), off), [t, mb, 0])[2] |= 1 << lane

            def complete(targets=targets, off=off):
                for t in targets:
                    pipe.arrive(t, off, what)

            pipe.submit(PipeOp("commit", what, complete, issuer=issuer(ctx, lane), loc=ctx.ins.loc,
                               warp=ctx.warp.id, lane=lane, pc=ctx.pc))
        if len(lanes) > 1:
            from ..race.protocol import warp_act
            for t, mb, mask in per_barrier.values():
                ctx.engine.protocol.check_commit_lanes(warp_act(ctx, mask=mask), t, mb, bin(mask).count("1"))
        ctx.emit_sync("tcgen05.commit", lanes=[int(x) for x in lanes])

    return run


__all__ = ["d_layout", "DPart", "element_bits", "container_to_code", "read_smem_elements", "read_tmem_elements",
           "SIGN_BIT", "split_taddr", "check_smem_span"]
