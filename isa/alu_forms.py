"""Declared forms of the ALU families: integer (PTX ISA 9.1 §9.7.1, §9.7.2), floating point (§9.7.3, §9.7.4),
comparison and selection (§9.7.6), logic and shift (§9.7.7, prmt §9.7.9.7) and conversion (§9.7.9.21 cvt,
§9.7.9.22 cvt.pack).

Each :class:`tcsim.isa.forms.FormSpec` lists the qualifier groups of one family in PTX syntax order: the
qualifiers its parser accepts, one of each group at most, the required ones present.  The parsers consume the
qualifiers with the rules of :mod:`tcsim.isa.operand_rules` (ptxas's wording) and then check the combinations a
group list cannot say (``.sat`` only on ``.s32``, ``.ftz`` only on f32/f16, the cvt table of
:mod:`tcsim.isa.cvt_forms`); a qualifier outside these groups is rejected.  ``tcsim check --list`` prints these
lines.

The parsers, each returning a frozen form that the decoders of ``tcsim.semantics`` only execute: logic/shift
(§9.7.7, prmt) and comparison/selection (§9.7.6) here (:func:`parse_logic` -> :class:`LogicForm`,
:func:`parse_compare` -> :class:`CompareForm`); integer in :mod:`tcsim.isa.integer_forms`, floating point in
:mod:`tcsim.isa.float_forms`, conversion in :mod:`tcsim.isa.convert_forms`.

Pure: no machine state.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import VerifyError
from .forms import FormSpec, QualGroup
from .operand_rules import Mods, check_count, check_dst, check_operands, check_src, require_arch, split_pred_pair

# --------------------------------------------------------------------------------------------- shared groups
INT_TYPES = ("u16", "u32", "u64", "s16", "s32", "s64")
SIGNED_TYPES = ("s16", "s32", "s64")
BIT_TYPES = ("b16", "b32", "b64")
ROUNDING = ("rn", "rz", "rm", "rp")
#: the float types of add/sub/mul/fma (PTX ISA §9.7.3 and the half-precision §9.7.4; .f32x2 on sm_100)
FLOAT_TYPES = ("f32", "f64", "f16", "bf16", "f16x2", "bf16x2", "f32x2")
HALF_AND_F32_F64 = ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2")
#: comparison operators (PTX ISA §9.7.6): integer, unsigned-only and unordered floating-point ones
CMP_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
           "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
BOOL_OPS = ("and", "or", "xor")
CMP_SOURCE_TYPES = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64",
                    "f16", "bf16", "f16x2", "bf16x2")
SET_DEST_TYPES = ("u32", "s32", "f32", "u16", "s16", "f16", "bf16", "f16x2", "bf16x2")
TESTP_OPS = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")
PRMT_MODES = ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")
#: cvt (PTX ISA §9.7.9.21): integer rounding .rni..., float rounding .rn... and .rna (tf32); the value types
CVT_ROUNDING = ("rni", "rzi", "rmi", "rpi", "rn", "rz", "rm", "rp", "rna")
CVT_TYPES = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "bf16", "f32", "f64", "tf32",
             "f16x2", "bf16x2", "e4m3x2", "e5m2x2", "e2m3x2", "e3m2x2", "e2m1x2", "ue8m0x2")
#: cvt.pack.sat (PTX ISA §9.7.9.22) destination types
PACK_TYPES = ("u16", "s16", "u8", "s8", "u4", "s4", "u2", "s2")


def _flag(name: str) -> QualGroup:
    return QualGroup(name, (name,))


def _one(name: str, values: tuple, required: bool = False) -> QualGroup:
    return QualGroup(name, tuple(values), required=required)


def _type(values: tuple, name: str = "type") -> QualGroup:
    return QualGroup(name, tuple(values), required=True)


_CC, _SAT, _FTZ, _RELU, _APPROX = _flag("cc"), _flag("sat"), _flag("ftz"), _flag("relu"), _flag("approx")
_MUL_MODE = _one("mode", ("lo", "hi", "wide"), required=True)
_LOHI = _one("mode", ("lo", "hi"), required=True)
_CLAMP = _one("mode", ("clamp", "wrap"), required=True)
_RND = _one("rnd", ROUNDING)
_RND_REQ = _one("rnd", ROUNDING, required=True)
_CMP = _one("cmp", CMP_OPS, required=True)
_BOOL = _one("bool", BOOL_OPS)


def _s(key: str, section: str, *groups: QualGroup) -> FormSpec:
    return FormSpec(key, f"PTX ISA {section}", (), groups)


# --------------------------------------------------------------------------------------------- integer
INTEGER_SPECS = (
    _s("add:int", "§9.7.1.1, §9.7.2.1", _CC, _SAT, _type(INT_TYPES + ("u16x2", "s16x2"))),
    _s("sub:int", "§9.7.1.2, §9.7.2.3", _CC, _SAT, _type(INT_TYPES)),
    _s("addc", "§9.7.2.2", _CC, _type(INT_TYPES)),
    _s("subc", "§9.7.2.4", _CC, _type(INT_TYPES)),
    _s("mul:int", "§9.7.1.3", _MUL_MODE, _type(INT_TYPES)),
    _s("mad:int", "§9.7.1.4, §9.7.2.5", _MUL_MODE, _CC, _SAT, _type(INT_TYPES)),
    _s("madc", "§9.7.2.6", _one("mode", ("lo", "hi"), required=True), _CC, _type(("u32", "s32", "u64", "s64"))),
    _s("mul24", "§9.7.1.5", _LOHI, _type(("u32", "s32"))),
    _s("mad24", "§9.7.1.6", _LOHI, _SAT, _type(("u32", "s32"))),
    _s("sad", "§9.7.1.7", _type(INT_TYPES)),
    _s("div:int", "§9.7.1.8", _type(INT_TYPES)),
    _s("rem", "§9.7.1.9", _type(INT_TYPES)),
    _s("abs:int", "§9.7.1.10", _type(SIGNED_TYPES)),
    _s("neg:int", "§9.7.1.11", _type(SIGNED_TYPES)),
    _s("min:int", "§9.7.1.12", _RELU, _type(INT_TYPES + ("u16x2", "s16x2"))),
    _s("max:int", "§9.7.1.13", _RELU, _type(INT_TYPES + ("u16x2", "s16x2"))),
    _s("popc", "§9.7.1.14", _type(("b32", "b64"))),
    _s("clz", "§9.7.1.15", _type(("b32", "b64"))),
    _s("bfind", "§9.7.1.16", _flag("shiftamt"), _type(("u32", "u64", "s32", "s64"))),
    _s("fns", "§9.7.1.17", _type(("b32",))),
    _s("brev", "§9.7.1.18", _type(("b32", "b64"))),
    _s("bfe", "§9.7.1.19", _type(("u32", "u64", "s32", "s64"))),
    _s("bfi", "§9.7.1.20", _type(("b32", "b64"))),
    _s("szext", "§9.7.1.21", _CLAMP, _type(("u32", "s32"))),
    _s("bmsk", "§9.7.1.22", _CLAMP, _type(("b32",))),
    _s("dp4a", "§9.7.1.23", _type(("u32", "s32"), "atype"), _type(("u32", "s32"), "btype")),
    _s("dp2a", "§9.7.1.24", _LOHI, _type(("u32", "s32"), "atype"), _type(("u32", "s32"), "btype")),
)

# --------------------------------------------------------------------------------------------- floating point
#: add/sub/mul: ``{.rnd}{.ftz}{.sat}.type``, and the mixed ``add/sub{.rnd}{.sat}.f32.{f16|bf16}`` (sm_100): the
#: second type group is the source type of that form
_MIXED_SRC = _one("atype", ("f16", "bf16"))
FLOAT_SPECS = (
    _s("add:float", "§9.7.3.1, §9.7.4.1", _RND, _FTZ, _SAT, _type(FLOAT_TYPES), _MIXED_SRC),
    _s("sub:float", "§9.7.3.2, §9.7.4.2", _RND, _FTZ, _SAT, _type(FLOAT_TYPES), _MIXED_SRC),
    _s("mul:float", "§9.7.3.3, §9.7.4.3", _RND, _FTZ, _SAT, _type(FLOAT_TYPES)),
    _s("fma", "§9.7.3.5, §9.7.4.4", _RND_REQ, _FTZ, _SAT, _RELU, _type(FLOAT_TYPES), _MIXED_SRC),
    _s("mad:float", "§9.7.3.6", _RND_REQ, _FTZ, _SAT, _type(("f32", "f64"))),
    _s("div:float", "§9.7.3.8", _one("mode", ("approx", "full") + ROUNDING, required=True), _FTZ,
       _type(("f32", "f64"))),
    _s("rcp", "§9.7.3.9", _one("mode", ("approx",) + ROUNDING, required=True), _FTZ, _type(("f32", "f64"))),
    _s("sqrt", "§9.7.3.12", _one("mode", ("approx",) + ROUNDING, required=True), _FTZ, _type(("f32", "f64"))),
    _s("rsqrt", "§9.7.3.13", _one("approx", ("approx",), required=True), _FTZ, _type(("f32", "f64"))),
    _s("sin", "§9.7.3.14", _one("approx", ("approx",), required=True), _FTZ, _type(("f32",))),
    _s("cos", "§9.7.3.15", _one("approx", ("approx",), required=True), _FTZ, _type(("f32",))),
    _s("lg2", "§9.7.3.16", _one("approx", ("approx",), required=True), _FTZ, _type(("f32",))),
    _s("ex2", "§9.7.3.17, §9.7.4.12", _one("approx", ("approx",), required=True), _FTZ,
       _type(("f32", "f16", "f16x2", "bf16", "bf16x2"))),
    _s("tanh", "§9.7.3.18, §9.7.4.13", _one("approx", ("approx",), required=True),
       _type(("f32", "f16", "f16x2", "bf16", "bf16x2"))),
    _s("abs:float", "§9.7.3.6, §9.7.4.6", _FTZ, _type(HALF_AND_F32_F64)),
    _s("neg:float", "§9.7.3.7, §9.7.4.7", _FTZ, _type(HALF_AND_F32_F64)),
    _s("min:float", "§9.7.3.10, §9.7.4.8", _FTZ, _flag("NaN"), _flag("xorsign"), _flag("abs"),
       _type(HALF_AND_F32_F64)),
    _s("max:float", "§9.7.3.11, §9.7.4.9", _FTZ, _flag("NaN"), _flag("xorsign"), _flag("abs"),
       _type(HALF_AND_F32_F64)),
    _s("copysign", "§9.7.3.4", _type(("f32", "f64"))),
    _s("testp", "§9.7.3.19", _one("op", TESTP_OPS, required=True), _type(("f32", "f64"))),
)

# --------------------------------------------------------------------------------------------- compare, select
COMPARE_SPECS = (
    _s("setp", "§9.7.6.2, §9.7.4.11", _CMP, _BOOL, _FTZ, _type(CMP_SOURCE_TYPES)),
    _s("set", "§9.7.6.1, §9.7.4.10", _CMP, _BOOL, _FTZ, _type(SET_DEST_TYPES, "dtype"),
       _type(CMP_SOURCE_TYPES, "stype")),
    _s("selp", "§9.7.6.3", _type(("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64"))),
    _s("slct", "§9.7.6.4", _FTZ,
       _type(("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64"), "dtype"),
       _type(("s32", "f32"), "ctype")),
)

# --------------------------------------------------------------------------------------------- logic, shift
LOGIC_SPECS = (
    _s("and", "§9.7.7.1", _type(("pred",) + BIT_TYPES)),
    _s("or", "§9.7.7.2", _type(("pred",) + BIT_TYPES)),
    _s("xor", "§9.7.7.3", _type(("pred",) + BIT_TYPES)),
    _s("not", "§9.7.7.4", _type(("pred",) + BIT_TYPES)),
    _s("cnot", "§9.7.7.5", _type(BIT_TYPES)),
    _s("lop3", "§9.7.7.6", _one("boolop", ("or", "and")), _type(("b32",))),
    _s("shl", "§9.7.7.7", _type(BIT_TYPES)),
    _s("shr", "§9.7.7.8", _type(BIT_TYPES + INT_TYPES)),
    _s("shf", "§9.7.7.9", _one("direction", ("l", "r"), required=True), _CLAMP, _type(("b32",))),
    _s("prmt", "§9.7.9.7", _one("mode", PRMT_MODES), _type(("b32",))),
)

# --------------------------------------------------------------------------------------------- conversion
CONVERT_SPECS = (
    _s("cvt", "§9.7.9.21", _one("rnd", CVT_ROUNDING), _FTZ, _SAT, _RELU, _flag("satfinite"),
       _type(CVT_TYPES, "dtype"), _type(CVT_TYPES, "atype")),
    FormSpec("cvt.pack", "PTX ISA §9.7.9.22", ("pack",),
             (QualGroup("sat", ("sat",), required=True), _type(PACK_TYPES, "dtype"), _type(("s32",), "atype"),
              _one("ctype", ("b32",)))),
)

SPECS = INTEGER_SPECS + FLOAT_SPECS + COMPARE_SPECS + LOGIC_SPECS + CONVERT_SPECS


# --------------------------------------------------------------------------------------------- logic forms
@dataclass(frozen=True)
class LogicForm:
    """A checked logic / shift / prmt instruction (PTX ISA §9.7.7, §9.7.9.7).  ``type``: the instruction type
    (``pred`` for predicate logic); ``dst`` and ``srcs`` the operands; lop3's ``pdst`` / ``pred_src`` (the
    ``d|p ... q`` form with ``boolop``) and ``lut`` (the truth table's low 8 bits); shf's ``direction`` and
    ``mode`` (.clamp/.wrap); prmt's ``mode``."""

    op: str
    type: str
    dst: object
    srcs: tuple
    boolop: str | None = None
    pdst: object = None
    pred_src: object = None
    lut: int | None = None
    direction: str | None = None
    mode: str | None = None


_SHR_TYPES = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64")


def parse_logic(ins: ir.Instruction, info) -> LogicForm:
    """and/or/xor/not (.pred or .b16/.b32/.b64), cnot, lop3{.or|.and}, shl/shr, shf.{l|r}.{clamp|wrap}, prmt:
    qualifiers and operands checked with ptxas's wording (:mod:`tcsim.isa.operand_rules`)."""
    op = ins.opcode
    m = Mods(ins)
    if op in ("and", "or", "xor", "not", "cnot"):
        t = m.type(BIT_TYPES if op == "cnot" else ("pred",) + BIT_TYPES)
        m.done()
        check_operands(ins, info, t, (t,) if op in ("not", "cnot") else (t, t))
        return LogicForm(op, t, ins.operands[0], tuple(ins.operands[1:]))
    if op == "lop3":
        return _parse_lop3(ins, info, m)
    if op in ("shl", "shr"):
        t = m.type(BIT_TYPES if op == "shl" else _SHR_TYPES)
        m.done()
        check_operands(ins, info, t, (t, "u32"))
        return LogicForm(op, t, ins.operands[0], tuple(ins.operands[1:]))
    if op == "shf":
        direction = m.one_of(("l", "r"))
        mode = m.one_of(("clamp", "wrap"))
        name = f"shf.{direction}" if direction else "shf"
        m.type(("b32",), name=name)
        m.done()
        if direction is None:
            raise VerifyError("Direction modifier (.l or .r) required for instruction 'shf'", ins.loc)
        if mode is None:
            raise VerifyError(f"Clamp modifier required for instruction '{name}'", ins.loc,
                              expected=".clamp or .wrap")
        check_operands(ins, info, "b32", ("b32", "b32", "u32"))
        return LogicForm(op, "b32", ins.operands[0], tuple(ins.operands[1:]), direction=direction, mode=mode)
    if op == "prmt":
        mode = m.one_of(PRMT_MODES)
        m.type(("b32",))
        m.done()
        check_operands(ins, info, "b32", ("b32", "b32", "b32"))
        return LogicForm(op, "b32", ins.operands[0], tuple(ins.operands[1:]), mode=mode)
    raise ValueError(f"parse_logic: {op} is not a logic instruction")


def _parse_lop3(ins, info, m: Mods) -> LogicForm:
    boolop = m.one_of(("or", "and"))
    m.type(("b32",))
    m.done()
    check_count(ins, 6 if boolop else 5)
    ops = ins.operands
    d = ops[0]
    p = None
    if boolop:
        if not isinstance(d, ir.PredPair):
            raise VerifyError(f"lop3.{boolop} needs a destination pair d|p", ins.loc)
        d, p = d.first, d.second
        check_dst(ins, info, d, "b32", sink=True)
        check_dst(ins, info, p, "pred")
        check_src(ins, info, ops[5], "pred")
        require_arch(ins, info, 70)
    else:
        check_dst(ins, info, d, "b32")
    for op in ops[1:4]:
        check_src(ins, info, op, "b32")
    lut_op = ops[4]
    if not (isinstance(lut_op, ir.Imm) and lut_op.kind == "int"):
        raise VerifyError("Arguments mismatch for instruction 'lop3': immLut must be an integer constant", ins.loc)
    return LogicForm("lop3", "b32", d, tuple(ops[1:4]), boolop=boolop, pdst=p,
                     pred_src=ops[5] if boolop else None, lut=int(lut_op.value) & 0xFF)


# --------------------------------------------------------------------------------------------- compare forms
SIGNED_CMP = ("eq", "ne", "lt", "le", "gt", "ge")
UNSIGNED_CMP = SIGNED_CMP + ("lo", "ls", "hi", "hs")
BIT_CMP = ("eq", "ne")
FLOAT_CMP = SIGNED_CMP + ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
_STD_STYPES = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64")
_HALF_STYPES = ("f16", "bf16", "f16x2", "bf16x2")


def cmp_ops_for(stype: str) -> tuple:
    """The comparison operators of a source type (PTX ISA §9.7.6: signed, unsigned, bit-size, float tables)."""
    if stype in _HALF_STYPES or stype in ("f32", "f64"):
        return FLOAT_CMP
    if stype[0] == "b":
        return BIT_CMP
    if stype[0] == "s":
        return SIGNED_CMP
    if stype[0] == "u":
        return UNSIGNED_CMP
    return FLOAT_CMP


def compare_reg_type(stype: str) -> str:
    """The register type of a comparison operand (bf16 values live in .b16 / .b32 registers)."""
    return {"bf16": "b16", "bf16x2": "b32"}.get(stype, stype)


@dataclass(frozen=True)
class CompareForm:
    """A checked setp / set / selp / slct (PTX ISA §9.7.6, §9.7.4.10-11).  ``cmp`` the comparison, ``boolop``
    the optional BoolOp with the predicate ``c``; ``stype`` the compared (setp/set) or selected (selp/slct)
    type, ``dtype`` set's destination type or slct's ``c`` type; ``dst`` (setp's ``p``) and ``qdst`` (setp's
    ``q`` of ``p|q``); ``a``, ``b``, ``c`` the sources."""

    op: str
    stype: str
    dst: object
    a: object
    b: object
    c: object = None
    cmp: str | None = None
    boolop: str | None = None
    ftz: bool = False
    dtype: str | None = None
    qdst: object = None


def _parse_cmp(ins, m: Mods):
    cmp = m.one_of(CMP_OPS, "comparison")
    if cmp is None:
        raise VerifyError(f"Comparison operator required for instruction '{ins.opcode}'", ins.loc)
    boolop = m.one_of(BOOL_OPS, "boolean operation")
    ftz = m.flag("ftz")
    return cmp, boolop, ftz


def _check_cmp(ins, stype: str, cmp: str, ftz: bool) -> None:
    if cmp not in cmp_ops_for(stype):
        raise VerifyError("Mismatch between instruction type and comparison qualifier", ins.loc,
                          expected=f"one of {', '.join(cmp_ops_for(stype))} for .{stype}")
    if ftz and stype not in ("f32", "f16", "f16x2"):
        raise VerifyError(f"Illegal modifier '.ftz' for instruction '{ins.opcode}'", ins.loc)


def _set_types_ok(dtype: str, stype: str) -> bool:
    if dtype == "f32" and stype in ("f16", "bf16"):
        return False
    return ((dtype in ("u32", "s32", "f32") and stype in _STD_STYPES + ("f16", "bf16"))
            or (dtype in ("f16", "bf16") and stype in _STD_STYPES + ("f16",))
            or (dtype == "bf16" and stype == "bf16")
            or (dtype in ("u16", "s16") and stype in ("f16", "bf16"))
            or (stype == "f16x2" and dtype in ("f16x2", "u32", "s32"))
            or (stype == "bf16x2" and dtype in ("bf16x2", "u32", "s32")))


def _bool_operands(ins, boolop):
    if boolop is None and len(ins.operands) == 4:
        raise VerifyError(f"Boolean operation is required for instruction '{ins.opcode}'", ins.loc)
    check_count(ins, 4 if boolop else 3)


def parse_compare(ins: ir.Instruction, info) -> CompareForm:
    """setp, set, selp, slct: qualifiers, types and operands checked with ptxas's wording."""
    op = ins.opcode
    m = Mods(ins)
    if op in ("setp", "set"):
        cmp, boolop, ftz = _parse_cmp(ins, m)
        if op == "setp":
            stype = m.type(_STD_STYPES + _HALF_STYPES)
            m.done()
            dtype = None
        else:
            ts = m.types()
            m.done()
            if len(ts) != 2:
                raise VerifyError("Unexpected instruction types specified for 'set'", ins.loc,
                                  expected="a destination and a source type (set.CmpOp.dtype.stype)")
            dtype, stype = ts
            if not _set_types_ok(dtype, stype):
                raise VerifyError("Unexpected instruction types specified for 'set'", ins.loc)
        _check_cmp(ins, stype, cmp, ftz)
        _bool_operands(ins, boolop)
        ops = ins.operands
        q = None
        if op == "setp":
            p, q = split_pred_pair(ins, ops[0])
            check_dst(ins, info, p, "pred", sink=True)
            if q is not None:
                check_dst(ins, info, q, "pred", sink=True)
        else:
            p = ops[0]
            check_dst(ins, info, p, compare_reg_type(dtype))
        rt = compare_reg_type(stype)
        check_src(ins, info, ops[1], rt)
        check_src(ins, info, ops[2], rt)
        c = ops[3] if boolop else None
        if c is not None:
            check_src(ins, info, c, "pred")
        return CompareForm(op, stype, p, ops[1], ops[2], c, cmp=cmp, boolop=boolop, ftz=ftz, dtype=dtype, qdst=q)
    if op == "selp":
        t = m.type(_STD_STYPES)
        m.done()
        check_count(ins, 4)
        d, a, b, c = ins.operands
        check_dst(ins, info, d, t)
        check_src(ins, info, a, t)
        check_src(ins, info, b, t)
        check_src(ins, info, c, "pred")
        return CompareForm(op, t, d, a, b, c)
    if op == "slct":
        ftz = m.flag("ftz")
        ts = m.types()
        m.done()
        if len(ts) != 2 or ts[0] not in _STD_STYPES or ts[1] not in ("s32", "f32"):
            raise VerifyError("Unexpected instruction types specified for 'slct'", ins.loc,
                              expected="slct.dtype.s32 or slct.dtype.f32")
        t, ct = ts
        if ftz and ct != "f32":
            raise VerifyError("Illegal modifier '.ftz' for instruction 'slct'", ins.loc)
        check_count(ins, 4)
        d, a, b, c = ins.operands
        check_dst(ins, info, d, t)
        check_src(ins, info, a, t)
        check_src(ins, info, b, t)
        check_src(ins, info, c, ct)
        return CompareForm(op, t, d, a, b, c, ftz=ftz, dtype=ct)
    raise ValueError(f"parse_compare: {op} is not a comparison or selection instruction")


__all__ = ["SPECS", "INTEGER_SPECS", "FLOAT_SPECS", "COMPARE_SPECS", "LOGIC_SPECS", "CONVERT_SPECS", "LogicForm",
           "parse_logic", "CompareForm", "parse_compare", "cmp_ops_for", "compare_reg_type"]
