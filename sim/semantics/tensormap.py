"""Tensor maps edited and published by the kernel: tensormap.replace, tensormap.cp_fenceproxy.

PTX ISA 9.1 "tensormap.replace" and "tensormap.cp_fenceproxy" (data movement instructions, sm_90a / sm_100a);
the acquire side, ``fence.proxy.tensormap::generic.acquire``, lives in :mod:`tcsim.semantics.fence`.  This is how
Triton's ``tl.make_tensor_descriptor`` builds a CUtensorMap on the device: zero 128 bytes of SMEM, one
``tensormap.replace`` per field, ``tensormap.cp_fenceproxy`` to a global scratch slot, ``fence.proxy.tensormap
::generic.acquire`` on that slot, then ``cp.async.bulk.tensor`` through it.

Forms executed::

    tensormap.replace.tile.{global_address|global_stride}{.global|.shared::cta}.b1024.b64  [addr], {ord,} new_val
    tensormap.replace.tile.{rank|box_dim|global_dim|element_stride}{.global|.shared::cta}.b1024.b32
                                                                                          [addr], {ord,} new_val
    tensormap.replace.tile.{elemtype|interleave_layout|swizzle_mode|swizzle_atomicity|fill_mode}
                                                           {.global|.shared::cta}.b1024.b32  [addr], imm
    tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.{cta|cluster|gpu|sys}.sync.aligned
                                                                                          [dst], [src], 128

Decode-time rules (all checked against ptxas 13.0, which rejects the same PTX): ``.tile`` is required; the
state space is ``.global``, ``.shared::cta`` or absent (a generic address; ``.shared`` is rejected); the
``.b64`` type goes with ``global_address`` / ``global_stride`` and ``.b32`` with the rest; ``ord`` is an
immediate 0..4 and is present exactly for ``box_dim``, ``global_dim``, ``global_stride``, ``element_stride``;
the five enum-like fields take an immediate within the field's range (``elemtype`` 0..15, ``swizzle_mode``
0..3, ``swizzle_atomicity`` 0..3, ``interleave_layout`` 0..2, ``fill_mode`` 0..1).  ``cp_fenceproxy`` needs
``.global.shared::cta``, ``.tensormap::generic.release``, a scope, ``.sync.aligned`` and the immediate size 128.

Execution: ``tensormap.replace`` is a per-thread read-modify-write of the 128-byte object at ``addr`` (64-byte
aligned, MemoryFault otherwise) through ``ctx.load`` / ``ctx.store`` (op ``tensormap.replace``), translating
the field into tcsim's encoding with :func:`tcsim.isa.tensormap.replace_field` (which also writes the encoding's
header, so zero-filled bytes become a map).  Register values the PTX ISA does not allow (a rank code above 4,
a box size outside 1..256, a global size of 0, an element stride outside 1..8) raise VerifyError when
executed; what tcsim's encoding cannot hold (``global_stride`` ord 4, which ptxas accepts although a map has
only 4 strides; a swizzle atomicity other than 16B with a span other than 128B) raises UnsupportedError.
Nothing is validated as a whole here: a map may be half built between replaces; the TMA instruction that
uses it decodes and validates it.

``tensormap.cp_fenceproxy`` is warp-collective (``.sync.aligned``: SyncError unless every live lane executes
it together); each distinct (dst, src) pair of the active lanes is copied once, 128 bytes from the CTA's
shared memory to global memory (both 64-byte aligned), then a release fence of the tensormap proxy at the
given scope is emitted as a ``sync`` event (``fence='proxy'``, ``proxy='tensormap::generic'``, as
:mod:`tcsim.semantics.fence` does), so the race detector sees the publication.  tcsim's memory is sequentially
consistent, so the fence has no further functional effect.

Not supported: nothing else exists in these families on sm_100a (``.im2col`` maps have no replace fields).  The
forms are parsed and checked in :mod:`tcsim.isa.tensormap_forms`.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.errors import MemoryFault
from tcsim.isa.tensormap import ALIGN as TMAP_ALIGN, SIZE as TMAP_SIZE, replace_field
from tcsim.isa.tensormap_forms import parse_cp_fenceproxy, parse_replace
from .registry import semantics


@semantics("tensormap.replace")
def decode_replace(ins, info):
    """PTX ISA 9.1 tensormap.replace: replace one field of the 128-byte tensor map at [addr]."""
    f = parse_replace(ins)
    field, vtype, space, addr_op, ordinal, val_op = f.field, f.vtype, f.space, f.addr, f.ordinal, f.value
    rtype = "u64" if vtype == "b64" else "u32"

    def run(ctx):
        lanes = ctx.lane_ids()
        if lanes.size == 0:
            return
        addrs = ctx.address(addr_op)
        vals = ctx.read(val_op, rtype)
        for lane in lanes:
            one = np.zeros(32, dtype=bool)
            one[lane] = True
            try:
                raw = ctx.load(space, addrs, TMAP_SIZE, mask=one, align=TMAP_ALIGN, op="tensormap.replace")
            except MemoryFault as e:
                e.message = f"tensormap.replace [addr] (lane {int(lane)}): {e.message}"
                raise e.with_context()
            new = replace_field(raw[lane].tobytes(), field, int(vals[lane]), ordinal)
            data = np.zeros((32, TMAP_SIZE), dtype=np.uint8)
            data[lane] = np.frombuffer(new, dtype=np.uint8)
            ctx.store(space, addrs, data, mask=one, align=TMAP_ALIGN, op="tensormap.replace")

    return run


@semantics("tensormap.cp_fenceproxy")
def decode_cp_fenceproxy(ins, info):
    """PTX ISA 9.1 tensormap.cp_fenceproxy: copy a tensor map from shared::cta to global memory and release it
    to the tensormap proxy."""
    what = ins.full_opcode
    f = parse_cp_fenceproxy(ins)
    scope, dst_op, src_op = f.scope, f.dst, f.src

    def run(ctx):
        if not ctx.mask.any():
            return
        ctx.require_converged(what)
        lanes = ctx.lane_ids()
        dst = ctx.address(dst_op)
        src = ctx.address(src_op)
        done = set()
        for lane in lanes:
            key = (int(dst[lane]), int(src[lane]))
            if key in done:
                continue
            done.add(key)
            one = np.zeros(32, dtype=bool)
            one[lane] = True
            try:
                raw = ctx.load("shared::cta", src, TMAP_SIZE, mask=one, align=TMAP_ALIGN, op="tensormap.cp")
                ctx.store("global", dst, raw, mask=one, align=TMAP_ALIGN, op="tensormap.cp")
            except MemoryFault as e:
                e.message = f"tensormap.cp_fenceproxy (lane {int(lane)}): {e.message}"
                raise e.with_context()
        ctx.emit_sync("fence", lanes=[int(x) for x in lanes], fence="proxy", sem="release", scope=scope,
                      proxy="tensormap::generic", restrict=None)

    return run

