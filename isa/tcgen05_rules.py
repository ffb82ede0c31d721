"""The tcgen05 verifier: qualifier (kind-word) rules, legal shapes, descriptor sanity, tcgen05.cp pairing.

PTX ISA 9.1 §9.7.16.10.9.1-3 (tcgen05.mma, .sp, .ws: syntax, restrictions), §9.7.16.2.1 (Table 39, kinds and
shapes), §9.7.16.4.1/.2 (descriptors), §9.7.16.3 (strides, canonical layouts), §9.7.16.9.2 (tcgen05.cp),
§9.7.16.9.3 (tcgen05.shift), §9.7.16.12.1 (tcgen05.commit); tcgen05.md (b), (f); the kind-word walkthrough seed
(002).

Two stages, because descriptors are register values:

* **static** (decode time, :func:`parse_mma`, :func:`parse_cp`, :func:`parse_shift`, :func:`parse_commit`,
  :func:`check_uniform_cta_group`): qualifiers, operand kinds and counts.  Raised from a decoder, the registry
  adds the PTX line.
* **dynamic** (execution time, :func:`check_idesc`, :func:`check_smem_desc`): the values of the instruction and
  shared-memory descriptors.  Raised from a semantics function, the engine adds line, CTA, warp and lanes.

Every rejection is a :class:`tcsim.isa.errors.VerifyError` whose message ends with ``[rule <name>]`` (the names are
the keys of :data:`RULES`), so a test -- or a user -- can tell which rule fired.  A form that is legal PTX but
that tcsim does not execute is an :class:`tcsim.isa.errors.UnsupportedError` instead.

The kind-word rules of the walkthrough seed (its 13-rule ladder) were each checked against ``ptxas -arch=sm_100a``
(CUDA 13.0).  Where the seed and ptxas disagree, ptxas wins (it is the reference for what is legal PTX):

* the seed says ``.ws`` is invalid with f8f6f4; ptxas and PTX Table 39 accept ``tcgen05.mma.ws...kind::f8f6f4``
  (only the block-scaled kinds are invalid with ``.ws``);
* the seed says scale-input-d needs kind f16/tf32; ptxas also accepts it with ``kind::i8`` (tcsim raises
  UnsupportedError for that combination: the meaning of scaling an integer accumulator by ``2^-s`` is not
  documented);
* the seed says scale-input-d needs an arch-conditional target; ptxas accepts it on ``sm_100f`` (the explicit
  ``.scale_vec::NX`` spellings and ``kind::i8`` do need ``sm_100a``; PTX 9.1 also lists mxf4 / mxf4nvf4 as
  'a'-only, but ptxas 13.0 accepts them on ``sm_100f``, so tcsim does too).

The seed's 9-bit kind word (:class:`KindWord`): cta_group bits 0-1, scale_vec_size bits 2-3, scale_input_acc
bit 4, block_scale bit 5, mma_kind bits 6-8.  The seed documents the mma_kind code of f16 only (3, giving the
walkthrough's 0xC1 = ``.cta_group::1.kind::f16``); the codes of the other kinds are not public (?), so encoding
one of them raises ValueError and decoding an unknown code names the number.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ir
from .descriptors import (BLOCK_SCALED_KINDS, CONTAINER_BITS, DENSE_KINDS, SWIZZLE_REPEAT, SWIZZLE_WIDTH,
                          SmemDescriptor, TYPE_CODES, decode_idesc)
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup

#: rule name -> one-line description (the verifier's catalogue)
RULES = {
    "arch": "tcgen05 instructions need an sm_100a/sm_100f/sm_103a-class target (shift: arch-specific 'a' only)",
    "i8-arch": "kind::i8 is supported only on arch-conditional ('a') targets",
    "scale-vec-arch": "explicit .scale_vec::1X/2X/4X is supported only on arch-conditional ('a') targets "
                      "(.block16/.block32 also on family targets)",
    "cta-group-required": "tcgen05.mma/cp/shift/commit need .cta_group::1 or .cta_group::2",
    "cta-group-uniform": "all tcgen05 instructions of a kernel use the same .cta_group",
    "kind-required": "tcgen05.mma needs a .kind",
    "unknown-qualifier": "a qualifier that is not part of the instruction",
    "duplicate-qualifier": "a qualifier group given twice",
    "block-scale-kind": ".block_scale only with kind::mxf8f6f4 / mxf4 / mxf4nvf4, and those kinds need it",
    "scale-vec-kind": "scale_vec per kind: mxf8f6f4 1X/block32; mxf4 2X/block32; mxf4nvf4 2X/4X/block32/block16 "
                      "(explicit)",
    "ashift-block-scale": ".ashift is not allowed with .block_scale",
    "ashift-collector": ".ashift cannot be combined with .collector::a::fill or .collector::a::use",
    "ashift-a-tmem": ".ashift needs the A operand in tensor memory",
    "ashift-ws": ".ashift is not allowed with .ws",
    "ashift-shape": ".ashift is only defined for M = 128 and M = 256",
    "zero-col-mask": "the .ws zero-column mask descriptor: reserved bits 0, column shift <= 32 (16 for M = 32)",
    "ws-cta-group": ".ws is only defined for .cta_group::1",
    "ws-kind": ".ws is only defined for kind::f16 / tf32 / f8f6f4 / i8",
    "collector-ws": ".collector::a::* is not allowed with .ws; .collector::bN::* only with .ws",
    "scale-input-d-kind": "scale-input-d only with kind::f16 and kind::tf32",
    "scale-input-d-range": "scale-input-d is an immediate in 0..15",
    "disable-output-lane": "disable-output-lane is a vector of 4 (cta_group::1) or 8 (cta_group::2) 32-bit "
                           "registers, not allowed with .block_scale or .ws",
    "operands": "operand count and kinds of the instruction",
    "idesc-sparse": "the sparsity bit of the instruction descriptor matches the .sp qualifier",
    "idesc-type": "A/B/D type codes legal for the kind",
    "idesc-shape": "M and N legal for the kind, .cta_group and .ws (PTX Table 39)",
    "idesc-negate": "negate is not allowed with kind::i8",
    "idesc-transpose": "MN-major (transpose) A/B is not allowed with kind::mxf4 / mxf4nvf4",
    "idesc-saturate": "the saturate bit is only defined for kind::i8",
    "idesc-scale": "block-scaled kinds: scale type and scale-factor ids legal for the kind and scale_vec",
    "idesc-reserved": "reserved instruction-descriptor bits are 0",
    "idesc-k": "the K96 bit (31) is sm_103a only",
    "idesc-max-shift": "the max-shift field (bits 30-31) is only for .ws",
    "desc-fixed": "SMEM descriptor bits 46-48 hold the fixed constant 0b001, reserved bits are 0",
    "desc-swizzle": "SMEM descriptor swizzle code is 0, 1, 2, 4 or 6",
    "desc-lbo-mode": "absolute leading-dimension mode (bit 52) is sm_103a only",
    "desc-canonical": "the operand is a canonical layout: a K-major slice stays inside its swizzle atom row; "
                      "MN-major tf32 uses swizzle mode 1, other kinds never do",
    "tmem-lane": "a TMEM address operand's lane field is legal for the layout",
    "sf-replicas": "block-scale factors are replicated identically in all four 32-lane TMEM subpartitions",
    "cp-shape": "tcgen05.cp shape / multicast pairing: 64x128b needs .warpx2::02_13 or ::01_23, 32x128b needs "
                ".warpx4, the others take none",
    "cp-format": "tcgen05.cp decompression is .b8x16 with .b6x16_p32 or .b4x16_p64",
    "shift-lane": "tcgen05.shift's lane field is a multiple of 32",
    "commit-form": "tcgen05.commit.cta_group::N.mbarrier::arrive::one{.shared::cluster}{.multicast::cluster}.b64 "
                   "[mbar]{, ctaMask16}",
}


def reject(rule: str, message: str, ins: ir.Instruction | None = None, expected: str | None = None) -> VerifyError:
    """A VerifyError for ``rule`` (message ends with ``[rule <name>]``)."""
    if rule not in RULES:
        raise KeyError(f"unknown verifier rule {rule!r}")
    head = f"{ins.full_opcode}: " if ins is not None else ""
    return VerifyError(f"{head}{message} [rule {rule}]", ins.loc if ins is not None else None, expected=expected)


# ---------------------------------------------------------------------------------------------- targets
_TCGEN05_ARCH = re.compile(r"^sm_1(00|03|10)[af]$|^sm_101a$")


def check_arch(ins: ir.Instruction, arch: str | None, what: str) -> None:
    """tcgen05 needs an sm_100a-class target (sm_100a/f, sm_103a/f, sm_110a/f; ptxas 13.0 accepts tcgen05.mma on
    sm_110a too); shift only on arch-specific 'a' targets."""
    a = arch or ""
    ok = _TCGEN05_ARCH.match(a)
    if ok and what == "shift" and not a.endswith("a"):
        ok = None
    if not ok:
        raise reject("arch", f"tcgen05.{what} is not supported on .target {a or '(none)'}", ins,
                     expected=".target sm_100a (or sm_100f / sm_103a)" + (" (arch-specific)" if what == "shift"
                                                                          else ""))


# ---------------------------------------------------------------------------------------------- kind word
#: seed 002: mma_kind codes; only f16 is documented
KIND_CODES = {"f16": 3}
SCALE_VEC_CODES = {"1X": 0, "2X": 1, "4X": 2}


@dataclass(frozen=True)
class KindWord:
    """The 9-bit tcgen05.mma kind word of the walkthrough seed (002): the form of the printed modifier set
    ``.cta_group::N.kind::K{.block_scale{.scale_vec::V}}`` plus the scale-input-accumulator flag."""

    cta_group: int = 1
    scale_vec: str = "1X"
    scale_input_acc: int = 0
    block_scale: int = 0
    kind: str | int = "f16"          # an int: a code whose kind is not documented

    def encode(self) -> int:
        if isinstance(self.kind, int):
            code = self.kind
        elif self.kind in KIND_CODES:
            code = KIND_CODES[self.kind]
        else:
            raise ValueError(f"the kind-word code of kind::{self.kind} is not documented (only "
                             f"{', '.join(KIND_CODES)} is)")
        return (self.cta_group & 3) | (SCALE_VEC_CODES[self.scale_vec] << 2) | ((self.scale_input_acc & 1) << 4) \
            | ((self.block_scale & 1) << 5) | ((code & 7) << 6)

    @classmethod
    def decode(cls, value: int) -> "KindWord":
        v = int(value)
        if v >> 9:
            raise ValueError(f"kind word 0x{v:x} has more than 9 bits")
        code = (v >> 6) & 7
        names = {c: k for k, c in KIND_CODES.items()}
        sv = {c: n for n, c in SCALE_VEC_CODES.items()}.get((v >> 2) & 3, f"code{(v >> 2) & 3}")
        return cls(cta_group=v & 3, scale_vec=sv, scale_input_acc=(v >> 4) & 1, block_scale=(v >> 5) & 1,
                   kind=names.get(code, code))

    def describe(self) -> str:
        kind = f"kind::{self.kind}" if isinstance(self.kind, str) else f"kind code {self.kind} (undocumented)"
        s = f".cta_group::{self.cta_group}.{kind}"
        if self.block_scale:
            s += f".block_scale.scale_vec::{self.scale_vec}"
        if self.scale_input_acc:
            s += " (scale-input-d)"
        return s


# ---------------------------------------------------------------------------------------------- shapes
def legal_m(kind: str, cta_group: int, ws: bool) -> tuple:
    if ws:
        return (32, 64, 128)
    if kind in BLOCK_SCALED_KINDS:
        return (128,) if cta_group == 1 else (128, 256)
    return (64, 128) if cta_group == 1 else (128, 256)


def legal_n(kind: str, cta_group: int, ws: bool, sparse: bool = False) -> tuple:
    if ws:
        return (64, 128) if sparse else (64, 128, 256)
    if kind == "i8":
        return (8, 16, 24, 32) + tuple(range(48, 257, 16)) if cta_group == 1 else tuple(range(32, 257, 32))
    return tuple(range(8, 257, 8)) if cta_group == 1 else tuple(range(16, 257, 16))


#: K per instruction (dense); K96 (sm_103a) is rejected by check_idesc
K_OF_KIND = {"f16": 16, "tf32": 8, "f8f6f4": 32, "i8": 32, "mxf8f6f4": 32, "mxf4": 64, "mxf4nvf4": 64}


# ---------------------------------------------------------------------------------------------- mma form
@dataclass(frozen=True)
class MmaForm:
    """A checked tcgen05.mma form (qualifiers and operand layout).

    ``scale_vec`` is the normalised vector size ('1X', '2X', '4X') or None for the dense kinds; ``scale_block``
    the number of K elements per scale factor (32 for 1X/2X, 16 for 4X); ``collector`` = (buffer, op) with buffer
    'a' or 'b0'..'b3' (None = the default discard); operand indices refer to ``ins.operands``.
    """

    kind: str
    cta_group: int
    ws: bool
    sparse: bool
    block_scale: bool
    scale_vec: str | None
    scale_vec_spelling: str | None
    ashift: bool
    collector: tuple | None
    a_tmem: bool
    idx_sp: int | None
    idx_idesc: int
    idx_sfa: int | None
    idx_sfb: int | None
    idx_disable: int | None
    idx_enable: int
    idx_scale_d: int | None
    idx_zero_col: int | None

    @property
    def k(self) -> int:
        return K_OF_KIND[self.kind] * (2 if self.sparse else 1)

    @property
    def scale_block(self) -> int | None:
        if self.scale_vec is None:
            return None
        return 16 if self.scale_vec == "4X" else 32

    @property
    def nsf(self) -> int | None:
        """Scale factors per row along this MMA's K."""
        return None if self.scale_block is None else self.k // self.scale_block

    def kind_word(self) -> KindWord:
        return KindWord(cta_group=self.cta_group, scale_vec=self.scale_vec or "1X",
                        scale_input_acc=int(self.idx_scale_d is not None), block_scale=int(self.block_scale),
                        kind=self.kind)


_KINDS = DENSE_KINDS + BLOCK_SCALED_KINDS
_COLLECTOR = re.compile(r"^collector::(a|b[0-3])::(fill|use|lastuse|discard)$")
_SCALE_VEC = {"scale_vec::1X": "1X", "scale_vec::2X": "2X", "scale_vec::4X": "4X", "block16": None, "block32": None}


def _normalise_scale_vec(kind: str, spelling: str | None, ins) -> str:
    """scale_vec per kind (rules scale-vec-kind, seed rules 11-13): returns '1X' | '2X' | '4X'."""
    allowed = {"mxf8f6f4": ("scale_vec::1X", "block32", None),
               "mxf4": ("scale_vec::2X", "block32", None),
               "mxf4nvf4": ("scale_vec::2X", "scale_vec::4X", "block32", "block16")}[kind]
    if spelling not in allowed:
        if spelling is None:
            raise reject("scale-vec-kind", f"kind::{kind} needs an explicit scale vector size", ins,
                         expected="one of .scale_vec::2X, .scale_vec::4X, .block32, .block16")
        raise reject("scale-vec-kind", f".{spelling} is not allowed with kind::{kind}", ins,
                     expected="one of " + ", ".join("." + s if s else "(none)" for s in allowed))
    if spelling is None or spelling == "block32":
        return "1X" if kind == "mxf8f6f4" else "2X"
    if spelling == "block16":
        return "4X"
    return spelling.split("::")[1]


def _is_reg(info, op, types) -> bool:
    if not isinstance(op, ir.Reg):
        return False
    t = info.reg_type(op) if info is not None else None
    return t is None or t in types


_B64 = ("b64", "u64", "s64")
_B32 = ("b32", "u32", "s32")


def _int_imm(op) -> bool:
    return isinstance(op, ir.Imm) and op.kind == "int"


def _tmem_operand(ins, op, what):
    if not (isinstance(op, ir.Address) and op.coords is None and isinstance(op.base, ir.Reg)):
        raise reject("operands", f"{what} must be a tensor-memory address [reg] or [reg+imm], got {op}", ins)


def parse_mma(ins: ir.Instruction, info=None) -> MmaForm:
    """Static checks of a ``tcgen05.mma`` instruction (decode time).  ``info`` (a DecodeInfo) gives the target
    and register types; without it only the qualifiers and operand shapes are checked."""
    arch = info.arch if info is not None else None
    if info is not None:
        check_arch(ins, arch, "mma")
    mods = list(ins.mods[1:])
    ws = sp = block_scale = ashift = False
    cta_group = kind = None
    sv_spelling = None
    collector = None
    seen = set()

    def once(group, m):
        if group in seen:
            raise reject("duplicate-qualifier", f"more than one {group} qualifier (.{m})", ins)
        seen.add(group)

    for m in mods:
        if m == "ws":
            once("ws", m)
            ws = True
        elif m == "sp":
            once("sp", m)
            sp = True
        elif m in ("cta_group::1", "cta_group::2"):
            once(".cta_group", m)
            cta_group = int(m[-1])
        elif m.startswith("kind::") and m[6:] in _KINDS:
            once(".kind", m)
            kind = m[6:]
        elif m == "block_scale":
            once("block_scale", m)
            block_scale = True
        elif m in _SCALE_VEC:
            once("scale vector size", m)
            sv_spelling = m
        elif m == "ashift":
            once("ashift", m)
            ashift = True
        elif _COLLECTOR.match(m):
            once(".collector", m)
            mm = _COLLECTOR.match(m)
            collector = (mm.group(1), mm.group(2))
        else:
            raise reject("unknown-qualifier", f"unknown qualifier .{m}", ins)
    if cta_group is None:
        raise reject("cta-group-required", "missing .cta_group::1 / .cta_group::2", ins)
    if kind is None:
        raise reject("kind-required", "missing .kind::{f16,tf32,f8f6f4,i8,mxf8f6f4,mxf4,mxf4nvf4}", ins)
    if kind == "i8" and arch is not None and not arch.endswith("a"):
        raise reject("i8-arch", f"kind::i8 is supported only on arch-conditional targets, not {arch}", ins,
                     expected=".target sm_100a")
    # seed rule 6 and its converse
    if block_scale and kind not in BLOCK_SCALED_KINDS:
        raise reject("block-scale-kind", f".block_scale is not supported with kind::{kind}", ins,
                     expected="kind::mxf8f6f4, kind::mxf4 or kind::mxf4nvf4")
    if kind in BLOCK_SCALED_KINDS and not block_scale:
        raise reject("block-scale-kind", f"kind::{kind} requires .block_scale", ins)
    if sv_spelling is not None and not block_scale:
        raise reject("scale-vec-kind", f".{sv_spelling} requires .block_scale", ins)
    scale_vec = _normalise_scale_vec(kind, sv_spelling, ins) if block_scale else None
    if sv_spelling is not None and sv_spelling.startswith("scale_vec") and arch is not None and not arch.endswith("a"):
        raise reject("scale-vec-arch", f".{sv_spelling} is supported only on arch-conditional targets, not {arch}",
                     ins, expected=f".target {arch[:-1]}a, or the .block16 / .block32 spelling")
    # ws (seed rules 8, 9)
    if ws and cta_group == 2:
        raise reject("ws-cta-group", "cta_group::2 is not supported with weight-stationary (.ws)", ins,
                     expected=".cta_group::1")
    if ws and kind in BLOCK_SCALED_KINDS:
        raise reject("ws-kind", f"weight-stationary (.ws) is not supported with kind::{kind}", ins,
                     expected="kind::f16, tf32, f8f6f4 or i8")
    if collector is not None:
        buf = collector[0]
        if ws and buf == "a":
            raise reject("collector-ws", f".collector::a::{collector[1]} is not allowed with .ws", ins,
                         expected=".collector::b0..b3::* with .ws")
        if not ws and buf != "a":
            raise reject("collector-ws", f".collector::{buf}::{collector[1]} needs .ws", ins,
                         expected=".collector::a::* without .ws")
    # ashift (seed rules 7, 10)
    if ashift:
        if block_scale:
            raise reject("ashift-block-scale", "ashift is not supported with tcgen05.mma.block_scale variants",
                         ins)
        if ws:
            raise reject("ashift-ws", ".ashift is not supported with .ws", ins)
        if collector is not None and collector[1] in ("fill", "use"):
            raise reject("ashift-collector", f".collector::a::{collector[1]} cannot be combined with .ashift",
                         ins, expected=".collector::a::lastuse or ::discard (or none) with .ashift")

    # ---- operands
    ops = ins.operands
    n = len(ops)
    need = 5 + (1 if sp else 0) + (2 if block_scale else 0)
    if n < need:
        raise reject("operands", f"takes at least {need} operands, got {n}", ins)
    _tmem_operand(ins, ops[0], "the D operand [d-tmem]")
    a_op = ops[1]
    a_tmem = isinstance(a_op, ir.Address)
    if a_tmem:
        _tmem_operand(ins, a_op, "the A operand [a-tmem]")
    elif not (_is_reg(info, a_op, _B64) or _int_imm(a_op)):
        raise reject("operands", f"the A operand must be a 64-bit descriptor (a register or an integer) or [a-tmem], "
                                 f"got {a_op}", ins)
    if not (_is_reg(info, ops[2], _B64) or _int_imm(ops[2])):
        raise reject("operands", f"the B operand must be a 64-bit descriptor (a register or an integer), got {ops[2]}",
                     ins)
    if ashift and not a_tmem:
        raise reject("ashift-a-tmem", ".ashift needs the A operand in tensor memory ([a-tmem])", ins)
    i = 3
    idx_sp = None
    if sp:
        _tmem_operand(ins, ops[i], "the sparse metadata [sp-meta]")
        idx_sp, i = i, i + 1
    idx_idesc = i
    if not (_is_reg(info, ops[i], _B32) or (isinstance(ops[i], ir.Imm) and ops[i].kind == "int")):
        raise reject("operands", f"the instruction descriptor must be a 32-bit register or an immediate, got "
                                 f"{ops[i]}", ins)
    i += 1
    idx_sfa = idx_sfb = idx_disable = idx_scale_d = idx_zero = None
    if block_scale:
        _tmem_operand(ins, ops[i], "the scale factor A operand [sfa-tmem]")
        _tmem_operand(ins, ops[i + 1], "the scale factor B operand [sfb-tmem]")
        idx_sfa, idx_sfb, i = i, i + 1, i + 2
    if i < n and isinstance(ops[i], ir.Vector):
        if block_scale or ws:
            raise reject("disable-output-lane", "disable-output-lane is not allowed with "
                         + (".block_scale" if block_scale else ".ws"), ins)
        want = 4 * cta_group
        # ptxas 13.0 takes any 32-bit register there (f32 too), not a predicate or a 16/64-bit one
        if len(ops[i].elems) != want or not all(_is_reg(info, e, _B32 + ("f32",)) for e in ops[i].elems):
            raise reject("disable-output-lane", f"disable-output-lane must be a vector of {want} 32-bit registers "
                                                f"with .cta_group::{cta_group}, got {ops[i]}", ins)
        idx_disable, i = i, i + 1
    if i >= n:
        raise reject("operands", "missing the enable-input-d predicate", ins)
    e = ops[i]
    if not (_is_reg(info, e, ("pred",)) or (isinstance(e, ir.Not) and _is_reg(info, e.operand, ("pred",)))
            or (isinstance(e, ir.Imm) and e.kind == "int")):
        raise reject("operands", f"enable-input-d must be a predicate (or an immediate), got {e}", ins)
    idx_enable, i = i, i + 1
    if i < n:
        x = ops[i]
        if ws and (_is_reg(info, x, _B64) or (isinstance(x, ir.Imm) and x.kind == "int")):
            idx_zero, i = i, i + 1              # .ws has no scale-input-d: a trailing operand is the zero-column mask
        elif isinstance(x, ir.Imm) and x.kind == "int" and not block_scale:
            if not 0 <= x.value <= 15:
                raise reject("scale-input-d-range", f"scale-input-d = {x.value} is out of range", ins,
                             expected="an immediate in 0..15")
            if kind not in ("f16", "tf32", "i8"):
                raise reject("scale-input-d-kind", f"scale-input-d is not supported with kind::{kind}", ins,
                             expected="kind::f16 or kind::tf32")
            idx_scale_d, i = i, i + 1
    if i != n:
        raise reject("operands", "unexpected operand(s) after enable-input-d: "
                     + ", ".join(str(o) for o in ops[i:]), ins)
    return MmaForm(kind=kind, cta_group=cta_group, ws=ws, sparse=sp, block_scale=block_scale, scale_vec=scale_vec,
                   scale_vec_spelling=sv_spelling, ashift=ashift, collector=collector, a_tmem=a_tmem, idx_sp=idx_sp,
                   idx_idesc=idx_idesc, idx_sfa=idx_sfa, idx_sfb=idx_sfb, idx_disable=idx_disable,
                   idx_enable=idx_enable, idx_scale_d=idx_scale_d, idx_zero_col=idx_zero)


def check_uniform_cta_group(ins: ir.Instruction, function: ir.Function | None) -> int | None:
    """All tcgen05 instructions of a kernel use one .cta_group (PTX ISA 9.1 §9.7.16.7.1: "All tcgen05
    instructions within a kernel must specify the same value for the .cta_group qualifier"; ptxas: 'uses single
    CTA(.cta_group::1) and CTA pair granularity(.cta_group::2) and that is not allowed').  Returns N of ``ins``'s
    ``.cta_group::N`` (None when it has none, or without a function); a VerifyError naming ``ins`` (its location)
    and the first instruction of the function that disagrees (its file:line:col)."""
    mine = ins.mod_with_prefix("cta_group::")
    if function is None or mine is None:
        return None if mine is None else int(mine.split("::")[1])
    for other in function.body:
        if other.opcode != "tcgen05":
            continue
        g = other.mod_with_prefix("cta_group::")
        if g is not None and g != mine:
            raise reject("cta-group-uniform", f"uses .{mine} but {other.full_opcode} at {other.loc} uses .{g}; all "
                                              f"tcgen05 instructions of kernel {function.name} must use the same "
                                              f".cta_group", ins,
                         expected="one .cta_group for every tcgen05 instruction of the kernel, as ptxas requires")
    return int(mine.split("::")[1])


# ---------------------------------------------------------------------------------------------- descriptor values
@dataclass(frozen=True)
class MmaShape:
    """The decoded, checked shape of one tcgen05.mma: M, N, K, formats, majors, negation."""

    m: int
    n: int
    k: int
    a_fmt: str
    b_fmt: str
    d_fmt: str
    a_major: str
    b_major: str
    negate_a: bool
    negate_b: bool
    saturate: bool
    scale_fmt: str | None
    sfa_id: int
    sfb_id: int
    idesc: object


def check_idesc(form: MmaForm, value: int, arch: str | None = None) -> MmaShape:
    """Decode and check an instruction descriptor value against the form (execution time)."""
    kind = form.kind
    d = decode_idesc(kind, value)
    if d.reserved:
        raise reject("idesc-reserved", f"instruction descriptor 0x{int(value) & 0xFFFFFFFF:08x} has reserved bits "
                                       f"0x{d.reserved:08x} set ({d.describe(kind)})")
    if d.sparse != int(form.sparse):
        raise reject("idesc-sparse", f"instruction descriptor sparsity bit is {d.sparse} but the instruction is "
                                     f"{'sparse (.sp)' if form.sparse else 'dense'}")
    a_fmt, b_fmt = d.a_format(kind), d.b_format(kind)
    if a_fmt is None or b_fmt is None:
        bad = ("A", d.atype) if a_fmt is None else ("B", d.btype)
        raise reject("idesc-type", f"{bad[0]} type code {bad[1]} is not defined for kind::{kind}",
                     expected="codes " + ", ".join(f"{c} ({n})" for c, n in TYPE_CODES[kind].items()))
    if kind in ("f16", "tf32") and a_fmt != b_fmt:
        raise reject("idesc-type", f"kind::{kind} needs equal A and B types, got {a_fmt} and {b_fmt}")
    if kind in BLOCK_SCALED_KINDS:
        d_fmt = "f32"
    else:
        d_fmt = d.d_format
        allowed = {"f16": ("f16", "f32") if a_fmt == "f16" else ("f32",), "tf32": ("f32",),
                   "f8f6f4": ("f16", "f32"), "i8": ("s32",)}[kind]
        if d_fmt not in allowed:
            raise reject("idesc-type", f"D type code {d.dtype} ({d_fmt or 'undefined'}) is not allowed with "
                                       f"kind::{kind} and A type {a_fmt}", expected="D type " + " or ".join(allowed))
        if d.saturate and kind != "i8":
            raise reject("idesc-saturate", f"the saturate bit is set with kind::{kind}")
        if d.max_shift and not form.ws:
            raise reject("idesc-max-shift", f"max-shift code {d.max_shift} is set but the instruction is not .ws")
    if kind == "i8" and (d.negate_a or d.negate_b):
        raise reject("idesc-negate", "negate A/B is not allowed with kind::i8")
    if kind in ("mxf4", "mxf4nvf4") and (d.a_major or d.b_major):
        raise reject("idesc-transpose", f"MN-major (transpose) A or B is not allowed with kind::{kind}")
    m_ok = legal_m(kind, form.cta_group, form.ws)
    n_ok = legal_n(kind, form.cta_group, form.ws, form.sparse)
    if d.m not in m_ok:
        raise reject("idesc-shape", f"M = {d.m} is not legal for kind::{kind} .cta_group::{form.cta_group}"
                                    + (" .ws" if form.ws else ""), expected="M in " + ", ".join(map(str, m_ok)))
    if d.n not in n_ok:
        raise reject("idesc-shape", f"N = {d.n} is not legal for kind::{kind} .cta_group::{form.cta_group}"
                                    + (" .ws" if form.ws else ""),
                     expected=f"N in {n_ok[0]}..{n_ok[-1]}" + (f" step {n_ok[-1] - n_ok[-2]}" if len(n_ok) > 3
                                                               else f" ({', '.join(map(str, n_ok))})"))
    if CONTAINER_BITS[b_fmt] == 8 and d.b_major and not form.ws:
        step = 16 * form.cta_group
        if d.n % step or d.n < step:
            raise reject("idesc-shape", f"N = {d.n} with an MN-major 8-bit B operand is not legal",
                         expected=f"N in {step}..256 step {step}")
    scale_fmt = None
    sfa_id = sfb_id = 0
    if kind in BLOCK_SCALED_KINDS:
        scale_fmt = d.scale_format
        if d.k_size:
            raise reject("idesc-k", "the K96 bit (31) is set; K = 96 is supported only on sm_103a",
                         expected="bit 31 = 0 on sm_100a")
        if scale_fmt == "ue4m3" and not (kind == "mxf4nvf4" and form.scale_vec == "4X"):
            raise reject("idesc-scale", f"scale type UE4M3 is not allowed with kind::{kind} "
                                        f".scale_vec::{form.scale_vec}", expected="scale type bit 23 = 1 (UE8M0)")
        ids = {"1X": (0, 1, 2, 3), "2X": (0, 2), "4X": (0,)}[form.scale_vec]
        for name, v in (("SFA", d.sfa_id), ("SFB", d.sfb_id)):
            if v not in ids:
                raise reject("idesc-scale", f"{name} id {v} is not legal with .scale_vec::{form.scale_vec}",
                             expected=f"{name} id in " + ", ".join(map(str, ids)))
        sfa_id, sfb_id = d.sfa_id, d.sfb_id
    k = form.k
    return MmaShape(m=d.m, n=d.n, k=k, a_fmt=a_fmt, b_fmt=b_fmt, d_fmt=d_fmt, a_major="MN" if d.a_major else "K",
                    b_major="MN" if d.b_major else "K", negate_a=bool(d.negate_a), negate_b=bool(d.negate_b),
                    saturate=bool(d.saturate), scale_fmt=scale_fmt, sfa_id=sfa_id, sfb_id=sfb_id, idesc=d)


def check_smem_desc(value: int, what: str, *, major: str = "K", k_bytes: int | None = None,
                    fmt: str | None = None, arch: str | None = None) -> SmemDescriptor:
    """Decode and check a 64-bit SMEM descriptor operand (execution time): fixed/reserved bits, swizzle code,
    LBO mode, base offset (UnsupportedError when non-zero), and -- given the operand's major-ness, the bytes of
    its K slice (K-major) and its format -- the canonical-layout rules."""
    d = SmemDescriptor.decode(value)
    v = int(value) & ((1 << 64) - 1)
    if d.fixed != 0b001 or d.reserved:
        raise reject("desc-fixed", f"{what} 0x{v:016x}: bits 46-48 = 0b{d.fixed:03b}"
                                   + (f", reserved bits 0x{d.reserved:016x}" if d.reserved else ""),
                     expected="bits 46-48 = 0b001 and bits 14-15, 30-31, 53-60 = 0 (PTX ISA §9.7.16.4.1)")
    if d.swizzle.startswith("invalid"):
        raise reject("desc-swizzle", f"{what} 0x{v:016x}: swizzle code {d.swizzle[7:]} is reserved",
                     expected="0 (none), 1 (128B with 32B atoms), 2 (128B), 4 (64B) or 6 (32B)")
    if d.lbo_mode:
        raise reject("desc-lbo-mode", f"{what} 0x{v:016x}: bit 52 selects the absolute leading-dimension mode, "
                                      f"which is supported only on sm_103a")
    if d.base_offset:
        raise UnsupportedError(f"{what} 0x{v:016x}: matrix base offset {d.base_offset} (a swizzle pattern that "
                               f"does not start on its {SWIZZLE_REPEAT[d.swizzle]}-byte repeat boundary) is not "
                               f"modelled by tcsim; swizzles are applied to absolute addresses, so base offset 0 "
                               f"works for any start address", expected="base offset 0")
    if fmt is not None:
        if major == "MN" and fmt == "tf32" and d.swizzle != "128B_base32B":
            raise reject("desc-canonical", f"{what}: an MN-major tf32 operand needs swizzle mode 1 (128B with 32B "
                                           f"atoms), got {d.swizzle}")
        if major == "MN" and fmt != "tf32" and d.swizzle == "128B_base32B":
            raise reject("desc-canonical", f"{what}: swizzle mode 1 (128B with 32B atoms) is only for MN-major tf32 "
                                           f"operands, not MN-major {fmt}")
        if major == "K" and d.swizzle == "128B_base32B":
            raise reject("desc-canonical", f"{what}: swizzle mode 1 (128B with 32B atoms) is only for MN-major tf32 "
                                           f"operands, not K-major ones")
    if major == "K" and k_bytes is not None and d.swizzle != "none":
        W = SWIZZLE_WIDTH[d.swizzle]
        if d.start_address % W + k_bytes > W:
            raise reject("desc-canonical", f"{what}: a K-major slice of {k_bytes} bytes starting {d.start_address % W}"
                                           f" bytes into a {W}-byte swizzle atom row crosses the row "
                                           f"({d.describe()})",
                         expected=f"start address % {W} + {k_bytes} <= {W}")
    return d


# ---------------------------------------------------------------------------------------------- cp / shift / commit
#: tcgen05.cp shapes: (source rows, bytes per row, legal multicast qualifiers)
CP_SHAPES = {
    "128x256b": (128, 32, (None,)),
    "4x256b": (4, 32, (None,)),
    "128x128b": (128, 16, (None,)),
    "64x128b": (64, 16, ("warpx2::02_13", "warpx2::01_23")),
    "32x128b": (32, 16, ("warpx4",)),
}
CP_MULTICAST = ("warpx2::02_13", "warpx2::01_23", "warpx4")
CP_FORMATS = ("b6x16_p32", "b4x16_p64")


@dataclass(frozen=True)
class CpForm:
    cta_group: int
    shape: str
    multicast: str | None
    src_fmt: str | None        # None, 'b6x16_p32' or 'b4x16_p64'

    @property
    def rows(self) -> int:
        return CP_SHAPES[self.shape][0]

    @property
    def row_bytes(self) -> int:
        return CP_SHAPES[self.shape][1]


def _cta_group(ins, mods) -> int:
    g = [m for m in mods if m in ("cta_group::1", "cta_group::2")]
    if not g:
        raise reject("cta-group-required", "missing .cta_group::1 / .cta_group::2", ins)
    if len(g) > 1:
        raise reject("duplicate-qualifier", "more than one .cta_group qualifier", ins)
    return int(g[0][-1])


def parse_cp(ins: ir.Instruction, info=None) -> CpForm:
    """``tcgen05.cp.cta_group::N.shape{.multicast}{.b8x16.b6x16_p32|.b8x16.b4x16_p64} [taddr], s-desc``."""
    if info is not None:
        check_arch(ins, info.arch, "cp")
    mods = list(ins.mods[1:])
    cg = _cta_group(ins, mods)
    shape = multicast = None
    fmts = []
    for m in mods:
        if m in ("cta_group::1", "cta_group::2"):
            continue
        if m in CP_SHAPES:
            if shape is not None:
                raise reject("duplicate-qualifier", f"more than one shape (.{shape}, .{m})", ins)
            shape = m
        elif m in CP_MULTICAST:
            if multicast is not None:
                raise reject("duplicate-qualifier", f"more than one multicast qualifier (.{multicast}, .{m})", ins)
            multicast = m
        elif m in ("b8x16",) + CP_FORMATS:
            fmts.append(m)
        else:
            raise reject("unknown-qualifier", f"unknown qualifier .{m}", ins)
    if shape is None:
        raise reject("cp-shape", "missing the shape qualifier", ins,
                     expected="one of " + ", ".join("." + s for s in CP_SHAPES))
    legal = CP_SHAPES[shape][2]
    if multicast not in legal:
        if multicast is None:
            raise reject("cp-shape", f"shape .{shape} requires a multicast qualifier", ins,
                         expected=" or ".join("." + x for x in legal))
        raise reject("cp-shape", f"multicast .{multicast} is not allowed with shape .{shape}", ins,
                     expected=(" or ".join("." + x for x in legal if x) or "no multicast qualifier"))
    src = None
    if fmts:
        if len(fmts) != 2 or fmts[0] != "b8x16" or fmts[1] not in CP_FORMATS:
            raise reject("cp-format", "decompression needs .b8x16 followed by .b6x16_p32 or .b4x16_p64, got "
                         + ".".join(fmts), ins)
        src = fmts[1]
    ops = ins.operands
    if len(ops) != 2:
        raise reject("operands", f"takes 2 operands ([taddr], s-desc), got {len(ops)}", ins)
    _tmem_operand(ins, ops[0], "the destination [taddr]")
    if not (_is_reg(info, ops[1], _B64) or (isinstance(ops[1], ir.Imm) and ops[1].kind == "int")):
        raise reject("operands", f"the source descriptor must be a 64-bit register, got {ops[1]}", ins)
    return CpForm(cta_group=cg, shape=shape, multicast=multicast, src_fmt=src)


def parse_shift(ins: ir.Instruction, info=None) -> int:
    """``tcgen05.shift.cta_group::N.down [taddr]``; returns N."""
    if info is not None:
        check_arch(ins, info.arch, "shift")
    mods = list(ins.mods[1:])
    cg = _cta_group(ins, mods)
    extra = [m for m in mods if m not in ("cta_group::1", "cta_group::2", "down")]
    if extra:
        raise reject("unknown-qualifier", "unknown qualifier " + ", ".join("." + m for m in extra), ins)
    if "down" not in mods:
        raise reject("unknown-qualifier", "tcgen05.shift needs .down", ins)
    if len(ins.operands) != 1:
        raise reject("operands", f"takes 1 operand ([taddr]), got {len(ins.operands)}", ins)
    _tmem_operand(ins, ins.operands[0], "[taddr]")
    return cg


@dataclass(frozen=True)
class CommitForm:
    cta_group: int
    space: str                 # 'shared::cluster' or 'generic'
    multicast: bool


def parse_commit(ins: ir.Instruction, info=None) -> CommitForm:
    """``tcgen05.commit.cta_group::N.mbarrier::arrive::one{.shared::cluster}{.multicast::cluster}.b64 [mbar]
    {, ctaMask}`` (ctaMask a 16-bit register)."""
    if info is not None:
        check_arch(ins, info.arch, "commit")
    mods = list(ins.mods[1:])
    cg = _cta_group(ins, mods)
    known = {"cta_group::1", "cta_group::2", "mbarrier::arrive::one", "shared::cluster", "multicast::cluster", "b64"}
    extra = [m for m in mods if m not in known]
    if extra:
        raise reject("commit-form", "unknown qualifier " + ", ".join("." + m for m in extra), ins)
    if "mbarrier::arrive::one" not in mods:
        raise reject("commit-form", "missing the completion mechanism .mbarrier::arrive::one", ins)
    if "b64" not in mods:
        raise reject("commit-form", "missing the .b64 type", ins)
    mc = "multicast::cluster" in mods
    ops = ins.operands
    if len(ops) != 1 + mc:
        raise reject("commit-form", f"takes {1 + mc} operand(s) ([mbar]" + (", ctaMask" if mc else "")
                     + f"), got {len(ops)}", ins)
    if not (isinstance(ops[0], ir.Address) and ops[0].coords is None):
        raise reject("commit-form", f"[mbar] must be an address, got {ops[0]}", ins)
    if mc and not _is_reg(info, ops[1], ("b16", "u16", "s16")):
        raise reject("commit-form", f"ctaMask must be a 16-bit register, got {ops[1]}", ins)
    return CommitForm(cta_group=cg, space="shared::cluster" if "shared::cluster" in mods else "generic",
                      multicast=mc)


# ---------------------------------------------------------------------------------------------- form specs
#: the qualifier groups parse_mma / parse_cp / parse_shift / parse_commit accept (``tcsim check --list``)
_CTA_GROUP_Q = QualGroup("cta_group", ("cta_group::1", "cta_group::2"), required=True)
MMA_GROUPS = (QualGroup("sp", ("sp",)), QualGroup("ws", ("ws",)), _CTA_GROUP_Q,
              QualGroup("kind", tuple(f"kind::{k}" for k in _KINDS), required=True),
              QualGroup("block_scale", ("block_scale",)), QualGroup("scale_vec", tuple(_SCALE_VEC)),
              QualGroup("ashift", ("ashift",)),
              QualGroup("collector", tuple(f"collector::{b}::{o}" for b in ("a", "b0", "b1", "b2", "b3")
                                           for o in ("fill", "use", "lastuse", "discard"))))
CP_GROUPS = (_CTA_GROUP_Q, QualGroup("shape", tuple(CP_SHAPES), required=True),
             QualGroup("multicast", CP_MULTICAST), QualGroup("decompress", ("b8x16",)),
             QualGroup("source format", CP_FORMATS))
SHIFT_GROUPS = (_CTA_GROUP_Q, QualGroup("down", ("down",), required=True))
COMMIT_GROUPS = (_CTA_GROUP_Q, QualGroup("completion", ("mbarrier::arrive::one",), required=True),
                 QualGroup("space", ("shared::cluster",)), QualGroup("multicast", ("multicast::cluster",)),
                 QualGroup("type", ("b64",), required=True))
#: the PTX ISA sections of the tcgen05 forms declared here
SECTION_MMA = "PTX ISA §9.7.16.10.9"
SECTION_CP = "PTX ISA §9.7.16.9.2"
SECTION_SHIFT = "PTX ISA §9.7.16.9.3"
SECTION_COMMIT = "PTX ISA §9.7.16.12.1"

SPECS = (FormSpec("tcgen05.mma", SECTION_MMA, ("mma",), MMA_GROUPS),
         FormSpec("tcgen05.cp", SECTION_CP, ("cp",), CP_GROUPS),
         FormSpec("tcgen05.shift", SECTION_SHIFT, ("shift",), SHIFT_GROUPS),
         FormSpec("tcgen05.commit", SECTION_COMMIT, ("commit",), COMMIT_GROUPS))


__all__ = ["RULES", "SPECS", "reject", "check_arch", "KindWord", "MmaForm", "MmaShape", "parse_mma", "check_idesc",
           "check_smem_desc", "check_uniform_cta_group", "legal_m", "legal_n", "K_OF_KIND", "CpForm", "parse_cp",
           "CP_SHAPES", "parse_shift", "CommitForm", "parse_commit"]
