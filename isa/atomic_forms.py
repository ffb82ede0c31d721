"""Forms of the atomic memory instructions atom and red: qualifiers and operands, checked at decode time.

PTX ISA 9.1 §9.7.13.5 (atom) and §9.7.13.6 (red)::

    atom{.sem}{.scope}{.space}.op{.L2::cache_hint}.type d, [a], b{, cache-policy}
    atom{.sem}{.scope}{.space}.cas.type                d, [a], b, c
    atom{.sem}{.scope}{.space}.add.noftz{.L2::cache_hint}.{f16,f16x2,bf16,bf16x2} d, [a], b
    atom{.sem}{.scope}{.global}.add{.L2::cache_hint}.{v2,v4}.f32 {d..}, [a], {b..}            (sm_90+)
    atom{.sem}{.scope}{.global}.{add,min,max}.noftz.{v2,v4,v8}.{f16,bf16} {d..}, [a], {b..}    (sm_90+)
    atom{.sem}{.scope}{.global}.{add,min,max}.noftz.{v2,v4}.{f16x2,bf16x2} {d..}, [a], {b..}   (sm_90+)
    red: the same without d (and without cas / exch).

    atom{.sem}{.scope}{.space}.{cas,exch}.b128         d, [a], b{, c}                        (sm_90+)

``.b128`` operands are single ``.b128`` registers (ptxas: "Vector is not expected").

Not supported (UnsupportedError): ``red.async`` / ``.mbarrier::*`` (mbarrier-completed remote
reductions), ``.mmio``.  The execution is ``tcsim.semantics.atomics``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .cache_policy_forms import check_policy_operand
from .forms import FormSpec, QualGroup

SECTIONS = {"atom": "PTX ISA §9.7.13.5", "red": "PTX ISA §9.7.13.6"}
SEMS = ("relaxed", "acquire", "release", "acq_rel")
SCOPES = ("cta", "cluster", "gpu", "sys")
SPACES = {"global": "global", "shared": "shared::cta", "shared::cta": "shared::cta",
          "shared::cluster": "shared::cluster"}
OPS = ("and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max")
TYPES = ("b16", "b32", "b64", "u32", "u64", "s32", "s64", "f32", "f64", "f16", "bf16", "f16x2", "bf16x2",
         "b128")
HALF = ("f16", "bf16", "f16x2", "bf16x2")
VECTORS = ("v2", "v4", "v8")

#: op -> the scalar types it takes
SCALAR_OK = {
    "and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"),
    "cas": ("b16", "b32", "b64", "b128"), "exch": ("b32", "b64", "b128"),
    "add": ("u32", "s32", "u64", "s64", "f32", "f64", "f16", "bf16", "f16x2", "bf16x2"),
    "inc": ("u32",), "dec": ("u32",),
    "min": ("u32", "s32", "u64", "s64"), "max": ("u32", "s32", "u64", "s64"),
}
#: type -> (ops, vector lengths) of the sm_90 vector forms
VECTOR_OK = {"f32": (("add",), (2, 4)), "f16": (("add", "min", "max"), (2, 4, 8)),
             "bf16": (("add", "min", "max"), (2, 4, 8)), "f16x2": (("add", "min", "max"), (2, 4)),
             "bf16x2": (("add", "min", "max"), (2, 4))}


def groups(opcode: str) -> tuple:
    sems = SEMS if opcode == "atom" else ("relaxed", "release")
    ops = OPS if opcode == "atom" else tuple(o for o in OPS if o not in ("cas", "exch"))
    return (QualGroup("sem", sems), QualGroup("scope", SCOPES), QualGroup("space", tuple(SPACES)),
            QualGroup("op", ops, required=True), QualGroup("noftz", ("noftz",)),
            QualGroup("cache_hint", ("L2::cache_hint",)), QualGroup("vector", VECTORS),
            QualGroup("type", TYPES if opcode == "atom" else tuple(t for t in TYPES if t != "b128"),
                      required=True))


SPECS = tuple(FormSpec(op, SECTIONS[op], (), groups(op)) for op in SECTIONS)


def arch_number(arch: str) -> int:
    """``'sm_90a'`` -> 90."""
    digits = "".join(ch for ch in arch[3:] if ch.isdigit())
    return int(digits) if digits else 0


@dataclass(frozen=True)
class AtomForm:
    """A checked atom / red.  ``space`` is the spelled state space (None: generic); ``vec`` 1 for scalar forms.
    Operands: ``dst`` (a Sink for red), ``addr``, ``b``, ``c`` (cas only)."""

    red: bool
    sem: str | None
    scope: str | None
    space: str | None
    op: str
    type: str
    vec: int
    noftz: bool
    hint: bool
    dst: object = None
    addr: ir.Address | None = None
    b: object = None
    c: object = None


def _qualifiers(ins, arch: str) -> dict:
    f = dict(red=ins.opcode == "red", sem=None, scope=None, space=None, op=None, type=None, vec=1, noftz=False,
             hint=False)
    name = ins.full_opcode
    for m in ins.mods:
        if m in SEMS and f["sem"] is None:
            f["sem"] = m
        elif m in SCOPES and f["scope"] is None:
            f["scope"] = m
        elif m in SPACES and f["space"] is None:
            f["space"] = m
        elif m in OPS and f["op"] is None:
            f["op"] = m
        elif m in TYPES and f["type"] is None:
            f["type"] = m
        elif m in VECTORS and f["vec"] == 1:
            f["vec"] = int(m[1:])
        elif m == "noftz":
            f["noftz"] = True
        elif m == "L2::cache_hint":
            f["hint"] = True
        elif m in ("async", "mmio") or m.startswith("mbarrier::"):
            raise UnsupportedError(f"{name}: .{m} forms of {ins.opcode} are not supported", ins.loc)
        else:
            raise VerifyError(f"{name}: unexpected qualifier .{m}", ins.loc,
                              expected=f"{ins.opcode}{{.sem}}{{.scope}}{{.space}}.op.type (PTX ISA §9.7.13.5)")
    op, typ, vec, space = f["op"], f["type"], f["vec"], f["space"]
    if op is None or typ is None:
        raise VerifyError(f"{name} needs an operation and a type", ins.loc)
    if typ == "b128" and arch_number(arch) < 90:
        raise VerifyError(f"{name}: .b128 atomics require sm_90 or later", ins.loc)
    if f["red"] and op in ("cas", "exch"):
        raise VerifyError(f"red.{op} does not exist", ins.loc, expected="atom.cas / atom.exch")
    if f["red"] and f["sem"] in ("acquire", "acq_rel"):
        raise VerifyError(f"{name}: red allows only .relaxed or .release", ins.loc)
    if vec > 1:
        ok = VECTOR_OK.get(typ)
        if ok is None or op not in ok[0] or vec not in ok[1]:
            raise VerifyError(f"{name}: vector .v{vec} {op} on .{typ} is not a valid atomic form", ins.loc,
                              expected=".v2/.v4 .add.f32; .v2/.v4/.v8 add/min/max .f16/.bf16; "
                                       ".v2/.v4 add/min/max .f16x2/.bf16x2")
        if space not in (None, "global"):
            raise VerifyError(f"{name}: vector atomics exist only for .global (or generic) addresses", ins.loc)
        if arch_number(arch) < 90:
            raise VerifyError(f"{name}: vector atomics require sm_90 or later", ins.loc)
    elif typ not in SCALAR_OK[op]:
        raise VerifyError(f"{name}: .{op} does not take .{typ}", ins.loc,
                          expected="/".join("." + t for t in SCALAR_OK[op]))
    if typ in HALF and not f["noftz"]:
        raise VerifyError(f"{name}: {op} on .{typ} requires .noftz", ins.loc)
    if f["noftz"] and typ not in HALF:
        raise VerifyError(f"{name}: .noftz only applies to .f16/.bf16/.f16x2/.bf16x2", ins.loc)
    if f["hint"] and space not in (None, "global"):
        raise VerifyError(f"{name}: .L2::cache_hint is only supported on global addresses", ins.loc)
    if typ in ("bf16", "bf16x2") and arch_number(arch) < 90:
        raise VerifyError(f"{name}: bf16 atomics require sm_90 or later", ins.loc)
    return f


def parse_atom(ins: ir.Instruction, info) -> AtomForm:
    """The checked form of an ``atom`` / ``red`` instruction (module docstring)."""
    f = _qualifiers(ins, info.arch)
    ops = list(ins.operands)
    name = ins.full_opcode
    if f["red"]:
        dst = ir.Sink()
        if len(ops) not in (2, 3) or (len(ops) == 3 and not f["hint"]):
            raise VerifyError(f"{name} takes [a], b" + (", cache-policy" if f["hint"] else ""), ins.loc)
        addr, bop = ops[0], ops[1]
        cop = None
    else:
        cas = f["op"] == "cas"
        nreq = 4 if cas else 3
        if len(ops) not in (nreq, nreq + 1) or (len(ops) == nreq + 1 and not f["hint"]):
            raise VerifyError(f"{name} takes d, [a], b" + (", c" if cas else "")
                              + (", cache-policy" if f["hint"] else ""), ins.loc)
        dst, addr, bop = ops[0], ops[1], ops[2]
        cop = ops[3] if cas else None
    if f["hint"] and len(ops) == (2 if f["red"] else (4 if f["op"] == "cas" else 3)):
        raise VerifyError(f"{name}: .L2::cache_hint needs a cache-policy operand", ins.loc)
    if not isinstance(addr, ir.Address) or addr.coords is not None:
        raise VerifyError(f"{name}: the memory operand must be an address [a]", ins.loc)
    if f["vec"] > 1:
        for o, what in ((bop, "source"), (dst, "destination")):
            if isinstance(o, ir.Sink) and what == "destination":
                continue
            if not isinstance(o, ir.Vector) or len(o.elems) != f["vec"]:
                raise VerifyError(f"{name}: the {what} must be a vector of {f['vec']} registers", ins.loc)
    if f["hint"]:
        check_policy_operand(ins, ops[-1], info)
    if f["type"] == "b128":
        for o, what in ((dst, "destination"), (bop, "operand b"), (cop, "operand c")):
            if o is None or isinstance(o, ir.Sink):
                continue
            t = info.reg_type(o) if isinstance(o, ir.Reg) else None
            if isinstance(o, ir.Vector) or (isinstance(o, ir.Reg) and t is not None and t != "b128"):
                raise VerifyError(f"{name}: the {what} {o} must be a .b128 register", ins.loc,
                                  expected="a register declared .reg .b128 (mov.b128 packs one)")
    else:
        # a .b128 register is an operand of a .b128 atomic only (ptxas 13.0: "Arguments mismatch for instruction
        # 'atom'" / 'red' for add.u32, cas.b16/.b32, exch.b64 with one; the other operand rules allow wider registers)
        for o, what in ((dst, "destination"), (bop, "operand b"), (cop, "operand c")):
            if isinstance(o, ir.Reg) and info.reg_type(o) == "b128":
                raise VerifyError(f"{name}: the {what} {o} is a .b128 register, but the operation is "
                                  f".{f['type']}", ins.loc, expected=f"a .{f['type']} register (or a .b128 atomic)")
    return AtomForm(**f, dst=dst, addr=addr, b=bop, c=cop)


__all__ = ["SECTIONS", "SEMS", "SCOPES", "SPACES", "OPS", "TYPES", "HALF", "SCALAR_OK", "VECTOR_OK", "SPECS",
           "AtomForm", "parse_atom", "arch_number"]
