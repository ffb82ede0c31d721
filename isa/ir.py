"""The typed intermediate representation produced by :mod:`tcsim.isa.parser`.

A :class:`Module` holds :class:`Function` s (``.entry`` kernels and ``.func`` s) and module-scope variables.
A function body is a flat list of :class:`Instruction` s; labels map to instruction indices.  Registers
declared in nested ``{ }`` scopes (inline asm blocks) are renamed to unique names at parse time
(``%p1`` declared in scope 7 becomes ``%p1@7``), and so are labels declared inside such scopes, so the
simulator never sees scoping.

Operands are small frozen dataclasses.  An instruction keeps its opcode and its dot-separated qualifiers
separately: ``ld.global.v4.f32`` -> ``opcode='ld'``, ``mods=('global', 'v4', 'f32')``.  Qualifiers that
contain ``::`` stay whole (``mbarrier::complete_tx::bytes``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from .errors import SourceLoc

# ----------------------------------------------------------------------------------------------- operands


@dataclass(frozen=True)
class Reg:
    """A declared register (``%r1``, ``%fd3``, ``%p2``, or a renamed scoped one ``%p1@7``)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class SpecialReg:
    """A special register: ``%tid.x`` -> name ``'%tid'``, component ``'x'``; ``%laneid`` -> component None."""

    name: str
    component: str | None = None

    def __str__(self) -> str:
        return self.name + (f".{self.component}" if self.component else "")


@dataclass(frozen=True)
class Imm:
    """An immediate.  ``kind`` is ``'int'`` (Python int, any width/sign), ``'f32'`` or ``'f64'``.

    Float immediates keep their exact bit pattern in ``bits`` (``0f3F800000`` -> bits 0x3F800000) and their
    value in ``value``; decimal float literals (``1.5``) are f64 per PTX.
    """

    value: Union[int, float]
    kind: str = "int"
    bits: int | None = None

    def __str__(self) -> str:
        if self.kind == "f32":
            return f"0f{self.bits:08X}"
        if self.kind == "f64":
            return f"0d{self.bits:016X}"
        return str(self.value)


@dataclass(frozen=True)
class Sym:
    """A variable, parameter or function name used as a value, optionally ``+ offset`` (``sym+8``)."""

    name: str
    offset: int = 0

    def __str__(self) -> str:
        return self.name + (f"+{self.offset}" if self.offset else "")


@dataclass(frozen=True)
class LabelRef:
    """A branch target (label name, after scope renaming)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Vector:
    """A brace list ``{%r1, %r2, _}``; elements are operands (``Sink`` allowed)."""

    elems: tuple

    def __str__(self) -> str:
        return "{" + ", ".join(map(str, self.elems)) + "}"


@dataclass(frozen=True)
class Address:
    """A memory operand ``[base+offset]``.

    ``base`` is a :class:`Reg`, a :class:`Sym` (variable/param name) or ``None`` for an absolute ``[imm]``.
    ``coords`` is set for tensor references ``[tmap, {c0, c1}]`` (a tuple of operands) and then ``offset`` is 0.
    """

    base: Union[Reg, Sym, None]
    offset: int = 0
    coords: tuple | None = None

    def __str__(self) -> str:
        if self.coords is not None:
            return f"[{self.base}, {{{', '.join(map(str, self.coords))}}}]"
        b = "" if self.base is None else str(self.base)
        if self.offset and b:
            return f"[{b}{'+' if self.offset >= 0 else ''}{self.offset}]"
        if b:
            return f"[{b}]"
        return f"[{self.offset}]"


@dataclass(frozen=True)
class Sink:
    """The bit bucket ``_``."""

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True)
class Not:
    """A negated predicate operand ``!%p`` (allowed in a few places, e.g. ``vote``, ``selp`` via predicates)."""

    operand: object

    def __str__(self) -> str:
        return f"!{self.operand}"


@dataclass(frozen=True)
class PredPair:
    """The two-destination form ``%p|%q`` of ``setp``/``elect``-style instructions."""

    first: object
    second: object

    def __str__(self) -> str:
        return f"{self.first}|{self.second}"


@dataclass(frozen=True)
class ParenList:
    """A parenthesised operand list, used by ``call (ret), f, (a, b)``."""

    elems: tuple

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.elems)) + ")"


Operand = Union[Reg, SpecialReg, Imm, Sym, LabelRef, Vector, Address, Sink, Not, PredPair, ParenList]

# ------------------------------------------------------------------------------------------- instructions


@dataclass(eq=False)
class Instruction:
    """One PTX instruction.

    ``guard`` is ``(Reg, negated)`` for ``@%p`` / ``@!%p`` or None.  ``index`` is the position in the body.
    ``user_loc`` is the ``.loc``-mapped source position ``(file, line, col)`` if the PTX carries debug lines.
    """

    opcode: str
    mods: tuple
    operands: tuple
    loc: SourceLoc
    guard: tuple | None = None
    index: int = -1
    user_loc: tuple | None = None

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode,) + tuple(self.mods))

    def has(self, *mods: str) -> bool:
        """True if every given qualifier is present."""
        return all(m in self.mods for m in mods)

    def mod_with_prefix(self, prefix: str) -> str | None:
        """The first qualifier starting with ``prefix`` (e.g. ``'kind::'``), or None."""
        for m in self.mods:
            if m.startswith(prefix):
                return m
        return None

    def __str__(self) -> str:
        g = ""
        if self.guard is not None:
            g = f"@{'!' if self.guard[1] else ''}{self.guard[0]} "
        ops = ", ".join(map(str, self.operands))
        return f"{g}{self.full_opcode} {ops};" if ops else f"{g}{self.full_opcode};"

#: opcodes that never write a register synchronously: operand 0, if a register, is a source (used by the trace
#: instrumentation and the timing model's scoreboard)
NO_REG_DEST = frozenset(("st", "red", "bar", "barrier", "bra", "brx", "ret", "exit", "call", "trap", "brkpt",
                         "nanosleep", "pmevent", "prefetch", "prefetchu", "fence", "membar", "cp", "stmatrix",
                         "griddepcontrol", "setmaxnreg", "stackrestore", "sust", "sured", "discard",
                         "applypriority", "tensormap"))


def reg_names(op) -> list:
    """Register names an operand names: a register, or the registers of a ``{...}`` vector."""
    if isinstance(op, Reg):
        return [op.name]
    if isinstance(op, Vector):
        return [e.name for e in op.elems if isinstance(e, Reg)]
    return []


def last_def(body, index: int, name: str) -> int:
    """Index of the textually last instruction before ``body[index]`` whose destination (first operand) names
    register ``name``; -1 when there is none."""
    for j in range(index - 1, -1, -1):
        other = body[j]
        if isinstance(other, Instruction) and other.operands and name in reg_names(other.operands[0]):
            return j
    return -1


# ------------------------------------------------------------------------------------------- declarations


#: byte size of each scalar PTX type
TYPE_SIZES = {
    "pred": 1, "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16,
    "e4m3": 1, "e5m2": 1, "e4m3x2": 2, "e5m2x2": 2,
}


@dataclass
class VarDecl:
    """A ``.shared/.global/.const/.local`` variable (module scope or function scope).

    ``dims`` lists array extents (``[]`` for a scalar; ``None`` entries for an unsized ``extern`` array).
    ``init`` is a flat list of initialiser operands (``Imm`` or ``Sym`` for addresses) or None.
    """

    space: str
    name: str
    type: str
    loc: SourceLoc
    align: int | None = None
    dims: list = field(default_factory=list)
    init: list | None = None
    linkage: str | None = None      # 'visible' | 'extern' | 'weak' | 'common' | None
    vector: int = 1                 # .v2/.v4 element vectors

    @property
    def elem_size(self) -> int:
        return TYPE_SIZES[self.type] * self.vector

    @property
    def size_bytes(self) -> int:
        n = 1
        for d in self.dims:
            if d is None:
                return 0
            n *= d
        return n * self.elem_size

    @property
    def alignment(self) -> int:
        return self.align if self.align else self.elem_size


@dataclass
class Param:
    """A kernel or function parameter.  ``array`` is the element count of ``.b8 name[128]`` forms."""

    name: str
    type: str
    loc: SourceLoc
    align: int | None = None
    array: int | None = None
    ptr_space: str | None = None    # from '.ptr .global' attributes
    ptr_align: int | None = None

    @property
    def size_bytes(self) -> int:
        return TYPE_SIZES[self.type] * (self.array or 1)

    @property
    def alignment(self) -> int:
        return self.align if self.align else TYPE_SIZES[self.type]


@dataclass(frozen=True)
class CallPrototype:
    """The signature of an indirect call (``Label: .callprototype (.param .b32 _) _ (.param .b64 _);``, PTX ISA
    §11.4.3): its return and argument parameters (names are the placeholder ``_``)."""

    returns: tuple
    params: tuple


@dataclass
class Function:
    """An ``.entry`` (kind ``'entry'``) or ``.func`` (kind ``'func'``).

    ``regs`` maps every register name (after scope renaming) to ``(type, vector)``; ``locals`` holds
    function-scope ``.shared/.local/.const`` variables (and ``.param`` declared in the body for calls).
    ``directives`` holds performance directives: ``{'maxntid': (x,y,z), 'reqntid': ..., 'reqnctapercluster':
    ..., 'explicitcluster': True, 'maxnreg': n, 'minnctapersm': n, 'maxclusterrank': n}``.
    ``branch_targets`` maps the label of each ``.branchtargets`` list (``JTI0_0: .branchtargets $L1, $L2;``,
    the operand of ``brx.idx``) to the tuple of its target labels; such a list label is not a code label and is
    not in ``labels``.
    """

    name: str
    kind: str
    params: list
    loc: SourceLoc
    returns: list = field(default_factory=list)
    regs: dict = field(default_factory=dict)
    locals: list = field(default_factory=list)
    body: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)
    directives: dict = field(default_factory=dict)
    branch_targets: dict = field(default_factory=dict)
    #: label -> :class:`CallPrototype` of each ``.callprototype`` declared in the body (not code labels)
    call_prototypes: dict = field(default_factory=dict)
    #: label -> tuple of function names of each ``.calltargets`` list declared in the body
    call_targets: dict = field(default_factory=dict)
    linkage: str | None = None
    is_declaration: bool = False    # prototype without a body (e.g. .extern .func vprintf)

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


@dataclass
class Module:
    """A parsed PTX file."""

    source_name: str
    version: tuple | None = None          # (major, minor)
    target: list = field(default_factory=list)   # e.g. ['sm_100a'] or ['sm_90a', 'texmode_independent']
    address_size: int = 64
    functions: dict = field(default_factory=dict)
    globals: list = field(default_factory=list)
    files: dict = field(default_factory=dict)     # .file index -> path

    @property
    def arch(self) -> str | None:
        for t in self.target:
            if t.startswith("sm_"):
                return t
        return None

    @property
    def kernels(self) -> dict:
        return {n: f for n, f in self.functions.items() if f.kind == "entry"}

    def kernel(self, name: str | None = None) -> Function:
        """The kernel called ``name``, or the only kernel when ``name`` is None."""
        ks = self.kernels
        if name is None:
            if len(ks) != 1:
                raise KeyError(f"{self.source_name} has {len(ks)} kernels ({', '.join(ks) or 'none'}); "
                               f"name one")
            return next(iter(ks.values()))
        if name not in ks:
            raise KeyError(f"{self.source_name} has no kernel named {name!r} (kernels: {', '.join(ks)})")
        return ks[name]


def operand_symbols(op, out: set) -> set:
    """Add to ``out`` the names of the symbols ``op`` refers to (through addresses, vectors, lists, negations and
    predicate pairs); returns ``out``."""
    if isinstance(op, Sym):
        out.add(op.name)
    elif isinstance(op, Address):
        operand_symbols(op.base, out)
    elif isinstance(op, (Vector, ParenList)):
        for e in op.elems:
            operand_symbols(e, out)
    elif isinstance(op, Not):
        operand_symbols(op.operand, out)
    elif isinstance(op, PredPair):
        operand_symbols(op.first, out)
        operand_symbols(op.second, out)
    return out
