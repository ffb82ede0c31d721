"""Forms of the warpgroup-level MMA family ``wgmma`` (Hopper, sm_90a): qualifiers, types and operands.

PTX ISA 9.1 §9.7.15 (Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions):
§9.7.15.2 (matrix shapes), §9.7.15.5.2 ``wgmma.mma_async``, §9.7.15.6.3 ``wgmma.mma_async.sp``, §9.7.15.7.1
``wgmma.fence``, §9.7.15.7.2 ``wgmma.commit_group``, §9.7.15.7.3 ``wgmma.wait_group``.  Legality was checked
against ptxas 13.0 ``-arch=sm_90a`` (``tests/semantics/test_wgmma.py::test_ptxas_agrees``).

Accepted (``.sync`` and ``.aligned`` required, qualifiers in any order, as ptxas)::

    wgmma.fence.sync.aligned;
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned N;                      N an integer immediate >= 0
    wgmma.mma_async{.sp}.sync.aligned.m64nNkK{.satfinite}.dtype.atype.btype{.and.popc}
        d, a-desc | {a0..a3}, b-desc, {sp-meta, sp-sel,} scale-d {, imm-scale-a, imm-scale-b {, imm-trans-a}
        {, imm-trans-b}};

==========  =========================  =====  =======  ============  ================  ========================
kind        atype / btype              dense  sparse   dtype         N                 immediates after scale-d
==========  =========================  =====  =======  ============  ================  ========================
f16         f16 / f16                  k16    k32      f16 | f32     8..256 step 8     scale-a/b, trans-a*, trans-b
bf16        bf16 / bf16                k16    k32      f32           8..256 step 8     scale-a/b, trans-a*, trans-b
tf32        tf32 / tf32                k8     k16      f32           8..256 step 8     scale-a/b
fp8         e4m3|e5m2 / e4m3|e5m2      k32    k64      f16 | f32     8..256 step 8     scale-a/b
int         s8|u8 / s8|u8 (.satfinite) k32    k64      s32           8,16,24,32,48..256 step 16   (none)
b1          b1 / b1 ``.and.popc``      k256   --       s32           8,16,24,32,48..256 step 16   (none)
==========  =========================  =====  =======  ============  ================  ========================

(* imm-trans-a only with A from a descriptor.)  scale-d is a predicate, ``!predicate`` or the immediate 0 / 1;
imm-scale-a/b are -1 / 1 (negate), imm-trans-a/b 0 / 1 (1: MN-major operand in SMEM); sp-sel is 0 or 1 for
f16 / bf16 / tf32 and 0 for the 8-bit kinds; sp-meta is a 32-bit register or immediate.  d holds N/2 32-bit
registers (N/4 ``.b32`` registers for an f16 accumulator; ptxas rejects ``.f32``-typed ones there); register A
is four 32-bit registers; a-desc and b-desc are 64-bit values.  Every violation is a located VerifyError naming
the operand and what is expected.  The execution is :mod:`tcsim.semantics.wgmma`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ir
from .errors import VerifyError
from .forms import FormSpec, QualGroup, b32_vector, split_qualifiers

SECTION = "PTX ISA §9.7.15"

_SHAPE_RE = re.compile(r"^m64n(\d+)k(\d+)$")
_FLOAT_N = tuple(range(8, 257, 8))
_INT_N = (8, 16, 24, 32) + tuple(range(48, 257, 16))
#: kind -> (dense K, sparse K or None, legal dtypes, legal N)
KINDS = {
    "f16": (16, 32, ("f16", "f32"), _FLOAT_N),
    "bf16": (16, 32, ("f32",), _FLOAT_N),
    "tf32": (8, 16, ("f32",), _FLOAT_N),
    "fp8": (32, 64, ("f16", "f32"), _FLOAT_N),
    "int": (32, 64, ("s32",), _INT_N),
    "b1": (256, None, ("s32",), _INT_N),
}
_ELEM = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8", "b1")
_DTYPES = ("f16", "f32", "s32")


def _kind_of(atype: str, btype: str) -> str | None:
    if atype in ("e4m3", "e5m2") and btype in ("e4m3", "e5m2"):
        return "fp8"
    if atype in ("s8", "u8") and btype in ("s8", "u8"):
        return "int"
    if atype == btype and atype in ("f16", "bf16", "tf32", "b1"):
        return atype
    return None


@dataclass(frozen=True)
class WgmmaForm:
    """A checked ``wgmma.mma_async`` form and its operands (:func:`parse_mma_async`)."""

    kind: str
    sparse: bool
    n: int
    k: int
    dtype: str
    atype: str
    btype: str
    satfinite: bool
    d: tuple                 # the accumulator registers (ir.Reg)
    a_regs: tuple | None     # register A (4 ir.Reg), or None for an A descriptor
    a_desc: object           # the a-desc operand (None for register A)
    b_desc: object
    sp_meta: object          # the sp-meta operand (sparse only)
    sp_sel: int
    scale_d: object          # ir.Reg / ir.Not / ir.Imm
    negate_a: bool
    negate_b: bool
    trans_a: bool
    trans_b: bool

    m: int = 64

    @property
    def shape(self) -> str:
        return f"m64n{self.n}k{self.k}"

    @property
    def text(self) -> str:
        sp = ".sp" if self.sparse else ""
        sat = ".satfinite" if self.satfinite else ""
        pop = ".and.popc" if self.kind == "b1" else ""
        return f"wgmma.mma_async{sp}.sync.aligned.{self.shape}{sat}.{self.dtype}.{self.atype}.{self.btype}{pop}"

    @property
    def a_k(self) -> int:
        """K of A as stored (the packed K/2 of a sparse A)."""
        return self.k // 2 if self.sparse else self.k


def _imm(op, allowed: tuple, what: str, full: str, loc) -> int:
    if not isinstance(op, ir.Imm) or op.kind != "int" or op.value not in allowed:
        raise VerifyError(f"{full}: {what} must be the immediate " + " or ".join(map(str, allowed)) + f", got {op}",
                          loc, expected=f"{what} in {{{', '.join(map(str, allowed))}}} (ptxas rejects other values)")
    return int(op.value)


def _b64(op, what: str, full: str, info, loc):
    if isinstance(op, ir.Imm) and op.kind == "int":
        return op
    if not isinstance(op, ir.Reg):
        raise VerifyError(f"{full}: {what} must be a 64-bit register holding a matrix descriptor, got {op}", loc,
                          expected=f"a .b64 / .u64 register for {what}")
    t = info.reg_type(op) if info is not None else None
    if t is not None and (t == "pred" or ir.TYPE_SIZES.get(t) != 8):
        raise VerifyError(f"{full}: {what} {op} is .{t}; a matrix descriptor is a 64-bit value", loc,
                          expected=f"a .b64 / .u64 register for {what}")
    return op


def _scale_d(op, full: str, info, loc):
    inner = op.operand if isinstance(op, ir.Not) else op
    if isinstance(inner, ir.Reg):
        t = info.reg_type(inner) if info is not None else None
        if t is not None and t != "pred":
            raise VerifyError(f"{full}: scale-d {op} is a .{t} register; scale-d is a predicate", loc,
                              expected="a predicate, !predicate, or the immediate 0 / 1 for scale-d")
        return op
    if isinstance(op, ir.Imm) and op.kind == "int" and op.value in (0, 1):
        return op
    raise VerifyError(f"{full}: scale-d must be a predicate or the immediate 0 / 1, got {op}", loc,
                      expected="a predicate, !predicate, or the immediate 0 / 1 for scale-d")


MMA_GROUPS = (QualGroup("mma_async", ("mma_async",), required=True), QualGroup("sp", ("sp",)),
              QualGroup("sync", ("sync",), required=True), QualGroup("aligned", ("aligned",), required=True),
              QualGroup("shape", (), required=True, prefixes=("m",)), QualGroup("satfinite", ("satfinite",)),
              QualGroup("dtype", _DTYPES, required=True), QualGroup("atype", _ELEM, required=True),
              QualGroup("btype", _ELEM, required=True), QualGroup("op", ("and",)), QualGroup("popc", ("popc",)))


def _classify(ins: ir.Instruction) -> dict:
    """Split the qualifiers: dtype / atype / btype are positional (the first of _DTYPES, then two element types)."""
    full = ins.full_opcode
    mods = list(ins.mods)
    got: dict = {}
    types = []
    rest = []
    for m in mods:
        if not got.get("dtype") and m in _DTYPES and not types:
            got["dtype"] = m
        elif "dtype" in got and m in _ELEM and len(types) < 2:
            types.append(m)
        else:
            rest.append(m)
    groups = tuple(g for g in MMA_GROUPS if g.name not in ("dtype", "atype", "btype"))
    got.update(split_qualifiers(ins, groups, tuple(rest), "wgmma.mma_async", SECTION))
    for g in ("sync", "aligned"):
        if g not in got:
            raise VerifyError(f"{full}: wgmma.mma_async requires the .sync and .aligned qualifiers", ins.loc,
                              expected="wgmma.mma_async.sync.aligned...")
    if "shape" not in got:
        raise VerifyError(f"{full}: wgmma.mma_async needs a shape qualifier .m64nNkK", ins.loc)
    if "dtype" not in got or len(types) != 2:
        raise VerifyError(f"{full}: wgmma.mma_async needs the types .dtype.atype.btype", ins.loc,
                          expected="e.g. .f32.f16.f16, .s32.s8.u8, .s32.b1.b1.and.popc")
    got["atype"], got["btype"] = types
    return got


def parse_mma_async(ins: ir.Instruction, info) -> WgmmaForm:
    """The checked form of a ``wgmma.mma_async`` instruction (module docstring): VerifyError with the location for
    anything ptxas rejects."""
    full = ins.full_opcode
    loc = ins.loc
    q = _classify(ins)
    sparse = "sp" in q
    shape = q["shape"]
    mt = _SHAPE_RE.match(shape)
    if mt is None:
        raise VerifyError(f"{full}: .{shape} is not a wgmma shape", loc, expected=".m64nNkK (M is always 64)")
    n, k = int(mt.group(1)), int(mt.group(2))
    dtype, atype, btype = q["dtype"], q["atype"], q["btype"]
    kind = _kind_of(atype, btype)
    if kind is None:
        raise VerifyError(f"{full}: .{atype}.{btype} is not a wgmma operand type pair", loc,
                          expected="f16.f16, bf16.bf16, tf32.tf32, {e4m3,e5m2}.{e4m3,e5m2}, {s8,u8}.{s8,u8} or "
                                   "b1.b1")
    kdense, ksparse, dtypes, ns = KINDS[kind]
    if sparse and ksparse is None:
        raise VerifyError(f"{full}: there is no sparse wgmma with .{atype} operands", loc)
    want_k = ksparse if sparse else kdense
    if k != want_k:
        raise VerifyError(f"{full}: {'sparse ' if sparse else ''}wgmma with .{atype} has K = {want_k}, not {k}", loc,
                          expected=f".m64nNk{want_k}")
    if n not in ns:
        raise VerifyError(f"{full}: N = {n} is not a legal wgmma N for .{atype} (ptxas: illegal matrix shape)", loc,
                          expected="N in " + ("8..256 in steps of 8" if ns is _FLOAT_N else
                                              "8, 16, 24, 32, 48..256 in steps of 16"))
    if dtype not in dtypes:
        raise VerifyError(f"{full}: .{atype} wgmma accumulates in " + " or ".join("." + d for d in dtypes) +
                          f", not .{dtype}", loc)
    satfinite = "satfinite" in q
    if satfinite and kind != "int":
        raise VerifyError(f"{full}: .satfinite applies to the integer wgmma only", loc)
    popc = ("op" in q, "popc" in q)
    if kind == "b1" and popc != (True, True):
        raise VerifyError(f"{full}: the .b1 wgmma needs .and.popc", loc, expected="wgmma...s32.b1.b1.and.popc")
    if kind != "b1" and any(popc):
        raise VerifyError(f"{full}: .and / .popc belong to the .b1 wgmma only", loc)

    ops = list(ins.operands)
    if len(ops) < 4:
        raise VerifyError(f"{full}: too few operands ({len(ops)})", loc)
    a_op = ops[1]
    a_reg = isinstance(a_op, ir.Vector)
    n_imm = {"f16": 4, "bf16": 4, "tf32": 2, "fp8": 2, "int": 0, "b1": 0}[kind]
    if a_reg and kind in ("f16", "bf16"):
        n_imm = 3                                   # no imm-trans-a with A in registers
    n_sp = 2 if sparse else 0
    want = 3 + n_sp + 1 + n_imm
    if len(ops) != want:
        a_txt = "a (registers)" if a_reg else "a-desc"
        raise VerifyError(f"{full}: takes {want} operands with {a_txt}, got {len(ops)} (ptxas: arguments mismatch)",
                          loc, expected=_syntax(kind, sparse, a_reg))
    nd = n // 4 if dtype == "f16" else n // 2
    d = b32_vector(ops[0], nd, "d", full, info, loc)
    if dtype == "f16":
        for e in d:
            t = info.reg_type(e) if info is not None else None
            if t is not None and t not in ("b32", "u32", "s32", "f16x2", "bf16x2"):
                raise VerifyError(f"{full}: register {e} of d is .{t}; an f16 accumulator is held in .b32 registers "
                                  f"(ptxas: arguments mismatch)", loc)
    a_regs = b32_vector(a_op, 4, "a", full, info, loc) if a_reg else None
    a_desc = None if a_reg else _b64(a_op, "a-desc", full, info, loc)
    b_desc = _b64(ops[2], "b-desc", full, info, loc)
    i = 3
    sp_meta, sp_sel = None, 0
    if sparse:
        sp_meta = ops[3]
        if not (isinstance(sp_meta, ir.Reg) or (isinstance(sp_meta, ir.Imm) and sp_meta.kind == "int")):
            raise VerifyError(f"{full}: sp-meta must be a 32-bit register or immediate, got {sp_meta}", loc)
        sels = (0,) if kind in ("fp8", "int") else (0, 1)
        sp_sel = _imm(ops[4], sels, "sp-sel", full, loc)
        i = 5
    scale_d = _scale_d(ops[i], full, info, loc)
    imms = ops[i + 1:]
    neg_a = neg_b = trans_a = trans_b = False
    if n_imm >= 2:
        neg_a = _imm(imms[0], (-1, 1), "imm-scale-a", full, loc) == -1
        neg_b = _imm(imms[1], (-1, 1), "imm-scale-b", full, loc) == -1
    if n_imm == 4:
        trans_a = _imm(imms[2], (0, 1), "imm-trans-a", full, loc) == 1
        trans_b = _imm(imms[3], (0, 1), "imm-trans-b", full, loc) == 1
    elif n_imm == 3:
        trans_b = _imm(imms[2], (0, 1), "imm-trans-b", full, loc) == 1
    return WgmmaForm(kind, sparse, n, k, dtype, atype, btype, satfinite, d, a_regs, a_desc, b_desc, sp_meta, sp_sel,
                     scale_d, neg_a, neg_b, trans_a, trans_b)


def _syntax(kind: str, sparse: bool, a_reg: bool) -> str:
    a = "{a0, a1, a2, a3}" if a_reg else "a-desc"
    sp = " sp-meta, sp-sel," if sparse else ""
    tail = {"f16": ", imm-scale-a, imm-scale-b" + ("" if a_reg else ", imm-trans-a") + ", imm-trans-b",
            "tf32": ", imm-scale-a, imm-scale-b", "fp8": ", imm-scale-a, imm-scale-b", "int": "", "b1": ""}
    tail["bf16"] = tail["f16"]
    return f"d, {a}, b-desc,{sp} scale-d{tail[kind]}"


def parse_simple(ins: ir.Instruction, sub: str) -> int | None:
    """``wgmma.fence`` / ``commit_group`` / ``wait_group``: check ``.sync.aligned`` and the operands; returns N of
    wait_group (else None)."""
    full = ins.full_opcode
    rest = [m for m in ins.mods if m != sub]
    for m in rest:
        if m not in ("sync", "aligned"):
            raise VerifyError(f"{full}: unknown qualifier .{m} of wgmma.{sub}", ins.loc,
                              expected=f"wgmma.{sub}.sync.aligned")
    if sorted(rest) != ["aligned", "sync"]:
        raise VerifyError(f"{full}: wgmma.{sub} requires .sync and .aligned (once each)", ins.loc,
                          expected=f"wgmma.{sub}.sync.aligned")
    if sub == "wait_group":
        if len(ins.operands) != 1 or not isinstance(ins.operands[0], ir.Imm) or ins.operands[0].kind != "int" \
                or ins.operands[0].value < 0:
            raise VerifyError(f"{full}: wgmma.wait_group takes one non-negative integer immediate N", ins.loc,
                              expected="wgmma.wait_group.sync.aligned N;")
        return int(ins.operands[0].value)
    if ins.operands:
        raise VerifyError(f"{full}: wgmma.{sub} takes no operands", ins.loc)
    return None


SPECS = (
    FormSpec("wgmma.fence", "PTX ISA §9.7.15.7.1", ("fence",), (QualGroup("sync", ("sync",), required=True),
                                                              QualGroup("aligned", ("aligned",), required=True))),
    FormSpec("wgmma.commit_group", "PTX ISA §9.7.15.7.2", ("commit_group",),
             (QualGroup("sync", ("sync",), required=True), QualGroup("aligned", ("aligned",), required=True))),
    FormSpec("wgmma.wait_group", "PTX ISA §9.7.15.7.3", ("wait_group",),
             (QualGroup("sync", ("sync",), required=True), QualGroup("aligned", ("aligned",), required=True))),
    FormSpec("wgmma.mma_async", "PTX ISA §9.7.15.5.2, §9.7.15.6.3", ("mma_async",), MMA_GROUPS[1:]),
)

__all__ = ["SECTION", "SPECS", "KINDS", "WgmmaForm", "parse_mma_async", "parse_simple"]
