"""Forms of the floating-point instructions: add sub mul fma mad div rcp sqrt rsqrt sin cos lg2 ex2 tanh abs neg min
max copysign testp, on .f32 .f64 .f16 .f16x2 .bf16 .bf16x2 and the sm_100 packed .f32x2.

PTX ISA 9.1 §9.7.3 (floating-point instructions) and §9.7.4 (half-precision floating-point instructions).
:func:`parse_float` checks the qualifiers (ptxas's rules and wording, checked against ptxas 13.0: rounding
``.rn .rz .rm .rp`` -- f16/bf16 ``.rn`` only, required on fma/mad; ``.ftz`` on f32/f32x2/f16/f16x2; ``.sat``
on f32/f16/f16x2; ``.relu`` on fma.rn of f16/bf16; the mixed-precision ``add/sub/fma .f32.{f16|bf16}`` of
sm_100), the minimum target and the operands, and returns a frozen :class:`FloatForm`;
``tcsim.semantics.float_arith`` builds the execution.  The declared qualifier groups are
:data:`tcsim.isa.alu_forms.FLOAT_SPECS`.

Not supported (UnsupportedError): ``fma.oob``, stochastic rounding ``.rs``.  Pure: no machine state.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .operand_rules import ROUNDING, Mods, check_count, check_dst, check_operands, check_src, require_arch

SCALAR = ("f32", "f64", "f16", "bf16")
PACKED = ("f16x2", "bf16x2", "f32x2")
ALL_FLOAT = SCALAR + PACKED
_SIGN_TYPES = ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2")
#: the types of the .approx functions (PTX ISA §9.7.3.13-18, §9.7.4.12-13)
APPROX_TYPES = {
    "rsqrt": ("f32", "f64"),
    "sin": ("f32",), "cos": ("f32",), "lg2": ("f32",),
    "ex2": ("f32", "f16", "f16x2", "bf16", "bf16x2"),
    "tanh": ("f32", "f16", "f16x2", "bf16", "bf16x2"),
}
TESTP_OPS = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")


@dataclass(frozen=True)
class FloatForm:
    """A checked floating-point instruction.  ``type``: the instruction type (the result type of the mixed
    forms); ``atype``: the half-precision source type of the mixed ``add/sub/fma .f32.{f16|bf16}``; ``rnd`` the
    rounding (``rn`` when none is given), ``rnd_given`` whether one was; flags ``ftz sat relu approx full nan
    xorsign abs``; ``test``: testp's class; ``dst`` and ``srcs`` the operands."""

    op: str
    type: str
    dst: object
    srcs: tuple
    rnd_given: bool = False     # a rounding qualifier was written (div/rcp/sqrt: the IEEE-rounded form)
    ftz: bool = False           # subnormal inputs and results flush to sign-preserving zero
    sat: bool = False           # clamp the result to [0.0, 1.0] (NaN -> 0)
    relu: bool = False          # fma.relu: negative results become +0
    approx: bool = False        # the .approx (hardware approximation) form
    full: bool = False          # div.full.f32
    nan: bool = False           # min/max.NaN: a NaN input gives the canonical NaN
    xorsign: bool = False       # min/max.xorsign.abs: |result| with the xor of the input signs
    abs: bool = False           # min/max .abs (with .xorsign, or the three-input form)
    rnd: str = "rn"
    atype: str | None = None
    test: str | None = None


def op_type(t: str) -> str:
    """Operand type for the register checks (packed halves live in .b32, f32x2 in .b64)."""
    return {"bf16x2": "b32", "f32x2": "b64"}.get(t, t)


def _form(ins, t, **kw) -> FloatForm:
    return FloatForm(ins.opcode, t, ins.operands[0], tuple(ins.operands[1:]), **kw)


def _common(ins, info, m: Mods, allowed=ALL_FLOAT, *, rnd_required=False, rnd_allowed=True,
            ftz_ok=("f32", "f32x2", "f16", "f16x2"), sat_ok=("f32", "f16", "f16x2")):
    """Parse rounding/.ftz/.sat and the type; returns (type, rnd, ftz, sat)."""
    rnd = m.one_of(ROUNDING, "rounding modifier")
    ftz = m.flag("ftz")
    sat = m.flag("sat")
    t = m.type(allowed)
    if rnd is not None and not rnd_allowed:
        raise VerifyError(f"Illegal rounding modifier for instruction '{ins.opcode}'", ins.loc)
    if rnd is not None and t in ("f16", "f16x2", "bf16", "bf16x2") and rnd != "rn":
        raise VerifyError(f"Illegal rounding modifier for instruction '{ins.opcode}'", ins.loc,
                          expected=".rn for half-precision types")
    if rnd_required and rnd is None:
        raise VerifyError(f"Rounding modifier required for instruction '{ins.opcode}'", ins.loc)
    if ftz and t not in ftz_ok:
        raise VerifyError(f"Illegal modifier '.ftz' for instruction '{ins.opcode}'", ins.loc)
    if sat and t not in sat_ok:
        raise VerifyError(f"Illegal modifier '.sat' for instruction '{ins.opcode}'", ins.loc)
    if t in ("bf16", "bf16x2"):
        require_arch(ins, info, 90 if ins.opcode in ("add", "sub", "mul") else 80)
    if t == "f32x2":
        require_arch(ins, info, 100)
    return t, rnd or "rn", ftz, sat


def parse_float(ins: ir.Instruction, info) -> FloatForm:
    """Parse and check one floating-point instruction (PTX ISA §9.7.3, §9.7.4) of the opcodes listed in the module
    docstring."""
    parser = _PARSERS.get(ins.opcode)
    if parser is None:
        raise ValueError(f"parse_float: {ins.opcode} is not a floating-point instruction")
    return parser(ins, info, Mods(ins))


def _mixed_types(ins) -> list:
    return [x for x in ins.mods if x in ALL_FLOAT]


def _add_sub_mul(ins, info, m: Mods) -> FloatForm:
    ts = _mixed_types(ins)
    if len(ts) == 2 and ins.opcode in ("add", "sub"):
        return _mixed(ins, info, m, ts)
    t, rnd, ftz, sat = _common(ins, info, m)
    m.done(unsupported=("rs",))
    ot = op_type(t)
    check_operands(ins, info, ot, (ot, ot))
    return _form(ins, t, rnd=rnd, ftz=ftz, sat=sat)


def _mixed(ins, info, m: Mods, ts) -> FloatForm:
    """``add/sub{.rnd}{.sat}.f32.{f16|bf16} d, a, c`` (sm_100)."""
    rnd = m.one_of(ROUNDING, "rounding modifier")
    sat = m.flag("sat")
    m.types()
    m.done()
    if ts[0] != "f32" or ts[1] not in ("f16", "bf16"):
        raise VerifyError(f"Unexpected instruction types specified for '{ins.opcode}'", ins.loc,
                          expected=f"{ins.opcode}.f32.f16 or {ins.opcode}.f32.bf16")
    require_arch(ins, info, 100)
    check_operands(ins, info, "f32", (ts[1], "f32"))
    return _form(ins, "f32", atype=ts[1], rnd=rnd or "rn", rnd_given=rnd is not None, sat=sat)


def _fma_mad(ins, info, m: Mods) -> FloatForm:
    relu = m.flag("relu")
    oob = m.flag("oob")
    ts = _mixed_types(ins)
    if oob:
        raise UnsupportedError(f"{ins.full_opcode}: .oob (out-of-bounds operand handling) is not supported by "
                               "tcsim", ins.loc)
    if len(ts) == 2 and ins.opcode == "fma":
        rnd = m.one_of(ROUNDING, "rounding modifier")
        sat = m.flag("sat")
        m.types()
        m.done()
        if ts[0] != "f32" or ts[1] not in ("f16", "bf16") or relu:
            raise VerifyError("Unexpected instruction types specified for 'fma'", ins.loc)
        if rnd is None:
            raise VerifyError("Rounding modifier required for instruction 'fma'", ins.loc)
        require_arch(ins, info, 100)
        check_operands(ins, info, "f32", (ts[1], ts[1], "f32"))
        return _form(ins, "f32", atype=ts[1], rnd=rnd, rnd_given=True, sat=sat)
    allowed = ALL_FLOAT if ins.opcode == "fma" else ("f32", "f64")
    t, rnd, ftz, sat = _common(ins, info, m, allowed, rnd_required=True,
                               ftz_ok=("f32", "f32x2", "f16", "f16x2"), sat_ok=("f32", "f16", "f16x2"))
    m.done(unsupported=("rs",))
    if relu:
        if t not in ("f16", "f16x2", "bf16", "bf16x2"):
            raise VerifyError("Unexpected instruction types specified for 'fma'", ins.loc,
                              expected=".relu with .f16/.f16x2/.bf16/.bf16x2")
        if sat:
            raise VerifyError("Modifier '.relu' cannot be combined with modifier '.sat'", ins.loc)
    ot = op_type(t)
    check_operands(ins, info, ot, (ot, ot, ot))
    return _form(ins, t, rnd=rnd, rnd_given=True, ftz=ftz, sat=sat, relu=relu)


def _div(ins, info, m: Mods) -> FloatForm:
    approx = m.flag("approx")
    full = m.flag("full")
    t, rnd, ftz, _ = _common(ins, info, m, ("f32", "f64"), ftz_ok=("f32",), sat_ok=())
    given_rnd = any(x in ROUNDING for x in ins.mods)
    m.done()
    if approx + full + given_rnd > 1:
        raise VerifyError("Conflicting modifiers for instruction 'div' (one of .approx, .full, .rnd)", ins.loc)
    if (approx or full) and t == "f64":
        raise VerifyError(f"Illegal modifier '.{'approx' if approx else 'full'}' for instruction 'div'", ins.loc)
    if not (approx or full or given_rnd):
        raise VerifyError("Rounding modifier or '.approx' modifier required for instruction 'div'", ins.loc)
    check_operands(ins, info, t, (t, t))
    return _form(ins, t, rnd=rnd, rnd_given=given_rnd, ftz=ftz, approx=approx, full=full)


def _rcp_sqrt(ins, info, m: Mods) -> FloatForm:
    approx = m.flag("approx")
    t, rnd, ftz, _ = _common(ins, info, m, ("f32", "f64"), ftz_ok=("f32", "f64") if approx else ("f32",),
                             sat_ok=())
    given_rnd = any(x in ROUNDING for x in ins.mods)
    m.done()
    name = ins.opcode
    if approx and given_rnd:
        raise VerifyError(f"Conflicting modifiers for instruction '{name}' (.approx and a rounding modifier)",
                          ins.loc)
    if not (approx or given_rnd):
        raise VerifyError(f"Rounding modifier or '.approx' modifier required for instruction '{name}'", ins.loc)
    if approx and t == "f64":
        if name == "sqrt":
            raise VerifyError("Illegal modifier '.approx' for instruction 'sqrt'", ins.loc)
        if not ftz:
            raise VerifyError("'.ftz' modifier required for instruction 'rcp.approx.f64'", ins.loc)
    if ftz and t == "f64" and not approx:
        raise VerifyError(f"Illegal modifier '.ftz' for instruction '{name}'", ins.loc)
    check_operands(ins, info, t, (t,))
    return _form(ins, t, rnd=rnd, rnd_given=given_rnd, ftz=ftz, approx=approx)


def _approx_fn(ins, info, m: Mods) -> FloatForm:
    name = ins.opcode
    approx = m.flag("approx")
    ftz = m.flag("ftz")
    if any(x in ROUNDING for x in ins.mods):
        m.one_of(ROUNDING)
        if not approx:
            raise VerifyError(f".approx modifier required for instruction '{name}'", ins.loc)
        raise VerifyError(f"Illegal rounding modifier for instruction '{name}'", ins.loc)
    t = m.type(APPROX_TYPES[name])
    m.done()
    if not approx:
        raise VerifyError(f".approx modifier required for instruction '{name}'", ins.loc)
    if ftz and (name == "tanh" or t in ("f16", "f16x2")):
        raise VerifyError(f"Illegal modifier '.ftz' for instruction '{name}'", ins.loc)
    if name == "ex2" and t in ("bf16", "bf16x2") and not ftz:
        raise VerifyError(".ftz modifier required for instruction 'ex2.bf16'", ins.loc)
    if t in ("f16", "f16x2"):
        require_arch(ins, info, 75)
    if t in ("bf16", "bf16x2"):
        require_arch(ins, info, 90)
    ot = op_type(t)
    check_operands(ins, info, ot, (ot,))
    return _form(ins, t, ftz=ftz, approx=True)


def _abs_neg(ins, info, m: Mods) -> FloatForm:
    t, _, ftz, _ = _common(ins, info, m, _SIGN_TYPES, rnd_allowed=False, ftz_ok=("f32", "f16", "f16x2"),
                           sat_ok=())
    m.done()
    if t in ("bf16", "bf16x2"):
        require_arch(ins, info, 80)
    ot = op_type(t)
    check_operands(ins, info, ot, (ot,))
    return _form(ins, t, ftz=ftz)


def _min_max(ins, info, m: Mods) -> FloatForm:
    nan = m.flag("NaN")
    xorsign = m.flag("xorsign")
    absq = m.flag("abs")
    t, _, ftz, _ = _common(ins, info, m, _SIGN_TYPES, rnd_allowed=False, ftz_ok=("f32", "f16", "f16x2"),
                           sat_ok=())
    m.done()
    name = ins.opcode
    three = len(ins.operands) == 4
    if t == "f64" and nan:
        raise VerifyError(f"Illegal modifier '.NaN' for instruction '{name}'", ins.loc)
    if t == "f64" and (xorsign or absq):
        raise VerifyError(f"Illegal modifier '.xorsign' for instruction '{name}'", ins.loc)
    if three:
        if t != "f32":
            raise VerifyError(f"Arguments mismatch for instruction '{name}': three inputs need .f32", ins.loc)
        if xorsign:
            raise VerifyError(f"Illegal modifier '.xorsign' for instruction '{name}'", ins.loc)
        require_arch(ins, info, 100, f"{name}.f32 with 3 input operands")
    else:
        if absq and not xorsign:
            raise VerifyError("Modifier '.abs' requires modifier '.xorsign'", ins.loc)
        if xorsign and not absq:
            raise VerifyError("Modifier '.xorsign' requires modifier '.abs'", ins.loc)
    if (nan or xorsign) and t != "f64":
        require_arch(ins, info, 80)
    ot = op_type(t)
    check_operands(ins, info, ot, (ot,) * (3 if three else 2))
    return _form(ins, t, ftz=ftz, nan=nan, xorsign=xorsign, abs=absq)


def _copysign(ins, info, m: Mods) -> FloatForm:
    t = m.type(("f32", "f64"))
    m.done()
    check_operands(ins, info, t, (t, t))
    return _form(ins, t)


def _testp(ins, info, m: Mods) -> FloatForm:
    op = m.one_of(TESTP_OPS, "test")
    t = m.type(("f32", "f64"))
    m.done()
    if op is None:
        raise VerifyError("Instruction 'testp' requires one of ." + ", .".join(TESTP_OPS), ins.loc)
    check_count(ins, 2)
    p, a = ins.operands
    check_dst(ins, info, p, "pred")
    check_src(ins, info, a, t)
    return _form(ins, t, test=op)


_PARSERS = {"add": _add_sub_mul, "sub": _add_sub_mul, "mul": _add_sub_mul, "fma": _fma_mad, "mad": _fma_mad,
            "div": _div, "rcp": _rcp_sqrt, "sqrt": _rcp_sqrt, "abs": _abs_neg, "neg": _abs_neg, "min": _min_max,
            "max": _min_max, "copysign": _copysign, "testp": _testp, **{op: _approx_fn for op in APPROX_TYPES}}

__all__ = ["SCALAR", "PACKED", "ALL_FLOAT", "APPROX_TYPES", "TESTP_OPS", "FloatForm", "op_type", "parse_float"]
