"""PTX parser: PTX text -> :class:`tcsim.isa.ir.Module`.

Public API::

    parse(text, source_name="<string>") -> Module
    parse_file(path) -> Module            # source_name is the path as given

Every problem in the input raises :class:`~tcsim.isa.errors.PtxSyntaxError` carrying the exact 1-based line and
column of the offending token and the full text of its line; no other exception escapes for bad input.

What it accepts (PTX ISA 9.x as written by nvcc 13, Triton 3.x / LLVM NVPTX, CuTe DSL, and by hand):

* module directives ``.version`` (must come first), ``.target``, ``.address_size``, ``.file``, ``.loc``,
  ``.pragma`` (ignored), ``.section`` (DWARF and other sections are skipped entirely);
* ``[.visible|.weak|.extern] .entry`` / ``.func`` definitions and prototypes (``is_declaration``), return
  parameters, parameter attributes (``.align``, ``.ptr .space .align``, arrays), performance directives
  (stored in ``Function.directives``: ``maxntid``/``reqntid``/``reqnctapercluster`` as 3-tuples padded
  with 1, ``maxnreg``/``minnctapersm``/``maxclusterrank``/``abi_preserve``/``abi_preserve_control`` as
  ints, ``explicitcluster``/``noreturn``/``blocksareclusters`` as True);
* variables in ``.global/.const/.shared/.local`` (module or function scope) with ``.align``, ``.v2/.v4``,
  multi-dimensional and unsized ``[]`` extents, scalar / brace-list initialisers of constant expressions,
  symbol addresses and ``generic(sym)`` (recorded as ``Sym(sym)``); function-body ``.param`` variables
  (``Function.locals`` with ``space='param'``); ``.reg`` declarations including ``%r<N>`` ranges;
* ``{ }`` scopes: registers, variables, ``.param`` s and labels declared in a nested scope are renamed
  ``name@<k>`` (k numbers the nested scopes of one function from 1 in source order) and references resolve
  to the innermost declaration;
* instructions with guards, dotted qualifiers and every operand form of :mod:`tcsim.isa.ir`; constant
  expressions with C operators and precedence (64-bit, signed unless a ``U`` suffix / too-large literal
  makes them unsigned) are folded into ``Imm``.

Operand classification: an identifier bound in the current scope chain to a register is a ``Reg``, to a
variable/parameter a ``Sym`` (renamed name); a ``%`` name that is not declared must be a special register
(``SpecialReg``) or it is an error.  ``bra``/``brx`` targets are ``LabelRef`` s and must name a label
visible from the branch (for ``brx.idx``, the label of a ``.branchtargets`` list).  ``Label: .branchtargets
L1, L2, ...;`` declares a target list (``Function.branch_targets``; every target must be a code label visible
from the list, resolved at the end of the function; the list label itself is not a code label).  For other
instructions a top-level identifier that names a visible label becomes a ``LabelRef`` too; anything else is a
``Sym`` that must name a module variable or a function by the end of the module (``call`` targets must name
functions).  ``Label: .callprototype (ret)? _ (params)?;`` declares an indirect call's signature
(``Function.call_prototypes``) and ``Label: .calltargets f1, f2;`` its possible targets (``Function.call_targets``);
a ``call`` naming such a label gets it as a ``LabelRef``.  ``.loc`` positions are mapped through ``.file`` at the end of the module, so ``.file`` may
follow the functions (as LLVM writes it).

Not supported (rejected with a PtxSyntaxError, never silently dropped): ``.reg`` function parameters,
vector parameters, vector-register element access (``%v.x``),
a ``.branchtargets`` list without a label, ``.alias``, texture/surface/sampler reference types,
floating-point constant *expressions* (a float literal, optionally negated, is fine), the C preprocessor.
"""
from __future__ import annotations

import os
import re

from .decl_rules import verify_declarations
from .errors import PtxSyntaxError, SourceLoc
from .ir import (TYPE_SIZES, Address, CallPrototype, Function, Imm, Instruction, LabelRef, Module, Not, Param, ParenList,
                 PredPair, Reg, Sink, SpecialReg, Sym, VarDecl, Vector)
from .lexer import Tokens, tokenize

__all__ = ["parse", "parse_file", "KNOWN_OPCODES", "SPECIAL_REGISTERS"]

# ------------------------------------------------------------------------------------------- tables

#: every PTX instruction opcode (text before the first '.') of PTX ISA 9.x
KNOWN_OPCODES = frozenset("""
abs activemask add addc alloca and applypriority atom bar barrier bfe bfi bfind bmsk bra brev brkpt brx
call clusterlaunchcontrol clz cnot copysign cos cp createpolicy cvt cvta discard div dp2a dp4a elect ex2
exit fence fma fns getctarank griddepcontrol isspacep istypep ld ldmatrix ldu lg2 lop3 mad mad24 madc mapa
match max mbarrier membar min mma mov movmatrix mul mul24 multimem nanosleep neg not or pmevent popc
prefetch prefetchu prmt rcp red redux rem ret rsqrt sad selp set setmaxnreg setp shf shfl shl shr sin slct
sqrt st stackrestore stacksave stmatrix sub subc suld suq sured sust szext tanh tcgen05 tensormap testp tex
tld4 trap txq vabsdiff vabsdiff2 vabsdiff4 vadd vadd2 vadd4 vavrg2 vavrg4 vmad vmax vmax2 vmax4 vmin vmin2
vmin4 vote vset vset2 vset4 vshl vshr vsub vsub2 vsub4 wgmma wmma xor
""".split())

_XYZ_SREGS = ("%tid", "%ntid", "%ctaid", "%nctaid", "%clusterid", "%nclusterid", "%cluster_ctaid",
              "%cluster_nctaid")
_SCALAR_SREGS = (
    "%laneid %warpid %nwarpid %smid %nsmid %gridid %is_explicit_cluster %cluster_ctarank %cluster_nctarank "
    "%lanemask_eq %lanemask_le %lanemask_lt %lanemask_ge %lanemask_gt %clock %clock_hi %clock64 "
    "%globaltimer %globaltimer_lo %globaltimer_hi %total_smem_size %aggr_smem_size %dynamic_smem_size "
    "%reserved_smem_offset_begin %reserved_smem_offset_end %reserved_smem_offset_cap "
    "%reserved_smem_offset_0 %reserved_smem_offset_1 %current_graph_exec").split()
_SCALAR_SREGS += [f"%pm{i}" for i in range(8)] + [f"%pm{i}_64" for i in range(8)]
_SCALAR_SREGS += [f"%envreg{i}" for i in range(32)]

#: special register name -> allowed components (empty tuple: none)
#: PTX ISA 9.1 §4.4 (Identifiers), "Predefined identifiers": WARP_SZ is the warp size as a constant (32), usable
#: wherever an integer constant is (an operand, a constant expression)
WARP_SZ = "WARP_SZ"

SPECIAL_REGISTERS = {**{n: ("x", "y", "z") for n in _XYZ_SREGS}, **{n: () for n in _SCALAR_SREGS}}

_SPECIAL_NAMES = frozenset(SPECIAL_REGISTERS)

_STATE_SPACES = ("global", "const", "shared", "local")
_VAR_SPACES = frozenset("." + s for s in _STATE_SPACES)
_PTR_SPACES = frozenset("." + s for s in _STATE_SPACES)
_LINKAGES = frozenset((".visible", ".extern", ".weak", ".common"))
_TYPES = frozenset("." + t for t in TYPE_SIZES)
_OPAQUE_TYPES = frozenset((".texref", ".samplerref", ".surfref"))
_VECTORS = {".v2": 2, ".v4": 4, ".v8": 8}

#: the architectures ``.target`` may name (PTX ISA 9.1 §11.2.2 .target; ptxas 13.0 rejects any other name with
#: "Unsupported .target"): sm_XX / compute_XX, ``a`` (architecture-specific) and ``f`` (family) variants where PTX
#: defines them; then optionally the platform options
_ARCH_TARGET_RE = re.compile(r"(sm|compute)_(1[0-3]|2[01]|3[0257]|5[023]|6[0-2]|7[025]|8[06789]|90a?|"
                             r"(100|101|103|110|120|121)[af]?)")
_PLATFORM_TARGETS = frozenset(("texmode_unified", "texmode_independent", "debug", "map_f64_to_f32"))
_PERF_TUPLE = frozenset((".maxntid", ".reqntid", ".reqnctapercluster"))
_PERF_INT = frozenset((".maxnreg", ".minnctapersm", ".maxclusterrank", ".abi_preserve",
                       ".abi_preserve_control"))
_PERF_FLAG = frozenset((".explicitcluster", ".noreturn", ".blocksareclusters"))
_CALL_LISTS = frozenset((".calltargets", ".callprototype"))

_BRANCH_OPS = frozenset(("bra", "brx"))

_BINARY_PREC = {
    "*": 10, "/": 10, "%": 10,
    "+": 9, "-": 9,
    "<<": 8, ">>": 8,
    "<": 7, ">": 7, "<=": 7, ">=": 7,
    "==": 6, "!=": 6,
    "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1,
}
_EXPR_START = frozenset(("num", "-", "+", "~", "!", "("))
_MASK64 = (1 << 64) - 1
_MAX_DEPTH = 200
_MAX_REG_RANGE = 1 << 20
_VERSION_RE = re.compile(r"(\d+)\.(\d+)")
_MISSING = object()


def _wrap(v: int, unsigned: bool) -> int:
    v &= _MASK64
    if not unsigned and v >= 1 << 63:
        v -= 1 << 64
    return v


class _Scope:
    __slots__ = ("id", "parent", "names", "labels", "undo", "open_tok")

    def __init__(self, sid, parent, open_tok):
        self.id = sid
        self.parent = parent
        self.names = set()
        self.labels = {}
        self.undo = []
        self.open_tok = open_tok


class _FloatVal:
    """A float leaf of a constant expression (only unary +/- may be applied to it)."""

    __slots__ = ("value", "kind", "bits")

    def __init__(self, value, kind, bits):
        self.value = value
        self.kind = kind
        self.bits = bits


# ------------------------------------------------------------------------------------------- parser


class _Parser:
    def __init__(self, text: str, source_name: str):
        self.name = source_name
        tk = tokenize(text, source_name)
        self.tk: Tokens = tk
        self.K = tk.kinds
        self.T = tk.texts
        self.L = tk.lines
        self.C = tk.cols
        self.V = tk.vals
        self.i = 0
        self.mod = Module(source_name=source_name)
        self.gsyms = {}                 # module-scope name -> VarDecl
        self.pending_syms = []          # (name, tok_index, need_function)
        self.loc_tokens = {}            # .loc file index -> token index of the first .loc using it
        self.fn = None
        self.depth = 0
        self._loc_cache = {}

    # ------------------------------------------------------------------ helpers
    def loc(self, i: int) -> SourceLoc:
        line = self.L[i]
        key = (line, self.C[i])
        sl = self._loc_cache.get(key)
        if sl is None:
            sl = SourceLoc(self.name, line, self.C[i], self.tk.line_text(line))
            self._loc_cache[key] = sl
        return sl

    def err(self, msg: str, i: int | None = None):
        if i is None:
            i = self.i
        i = min(max(i, 0), len(self.K) - 1)
        raise PtxSyntaxError(msg, self.loc(i))

    def describe(self, i: int) -> str:
        k = self.K[i]
        if k == "eof":
            return "end of file"
        return repr(self.T[i])

    def expect(self, kind: str, what: str | None = None) -> int:
        i = self.i
        if self.K[i] != kind:
            self.err(f"expected {what or repr(kind)}, found {self.describe(i)}", i)
        self.i = i + 1
        return i

    def expect_semicolon(self, after: str):
        i = self.i
        if self.K[i] == ";":
            self.i = i + 1
            return
        prev = i - 1
        if prev >= 0 and (self.L[i] != self.L[prev] or self.K[i] == "eof"):
            # the statement ended at the end of the previous line: point just past its last token
            line = self.L[prev]
            col = self.C[prev] + len(self.T[prev])
            raise PtxSyntaxError(f"missing ';' after {after}",
                                 SourceLoc(self.name, line, col, self.tk.line_text(line)))
        self.err(f"expected ';' after {after}, found {self.describe(i)}", i)

    def expect_int(self, what: str, lo: int | None = None, hi: int | None = None) -> int:
        i = self.i
        v = self.parse_const_int(what)
        if lo is not None and v < lo:
            self.err(f"{what} must be at least {lo}, got {v}", i)
        if hi is not None and v > hi:
            self.err(f"{what} must be at most {hi}, got {v}", i)
        return v

    def expect_name(self, what: str) -> int:
        i = self.i
        if self.K[i] != "id":
            self.err(f"expected {what}, found {self.describe(i)}", i)
        t = self.T[i]
        if "." in t:
            self.err(f"invalid {what} {t!r} (identifiers cannot contain '.')", i)
        self.i = i + 1
        return i

    # ------------------------------------------------------------------ module level
    def parse_module(self) -> Module:
        K, T = self.K, self.T
        if K[0] == "eof":
            raise PtxSyntaxError("missing .version directive: the module is empty",
                                 SourceLoc(self.name, 1, 1, self.tk.line_text(1)))
        if K[0] != "dir" or T[0] != ".version":
            self.err("missing .version directive: a PTX module must start with '.version major.minor'", 0)
        linkage = None
        link_tok = None
        while True:
            i = self.i
            k = K[i]
            if k == "eof":
                if linkage is not None:
                    self.err(f".{linkage} must be followed by a declaration", link_tok)
                if not self.mod.target:
                    self.err("missing .target directive: '.target sm_XX' must follow .version", 0)
                break
            if k != "dir":
                self.err(f"expected a directive at module scope, found {self.describe(i)}", i)
            t = T[i]
            if not self.mod.target and t not in (".version", ".target", ".file", ".loc", ".pragma", ".section"):
                self.err(f"missing .target directive: '.target sm_XX' must follow .version, before {t}", i)
            if t in _LINKAGES:
                if linkage is not None:
                    self.err(f"more than one linkage directive ({linkage}, {t})", i)
                linkage, link_tok = t[1:], i
                self.i = i + 1
                continue
            if t == ".entry" or t == ".func":
                self.parse_function(linkage, link_tok if link_tok is not None else i)
            elif t in _VAR_SPACES:
                for d in self.parse_var_decl(linkage, scoped=False):
                    self.mod.globals.append(d)
            elif linkage is not None:
                self.err(f"{t} cannot follow .{linkage}", i)
            elif t == ".version":
                self.parse_version()
            elif t == ".target":
                self.parse_target()
            elif t == ".address_size":
                self.i = i + 1
                j = self.i
                v = self.expect_int(".address_size")
                if v not in (32, 64):
                    self.err(f".address_size must be 32 or 64, got {v}", j)
                self.mod.address_size = v
            elif t == ".file":
                self.parse_file_directive()
            elif t == ".loc":
                self.parse_loc()
            elif t == ".pragma":
                self.parse_pragma()
            elif t == ".section":
                self.skip_section()
            elif t == ".alias":
                self.err(".alias is not supported", i)
            elif t in _PERF_TUPLE or t in _PERF_INT or t in _PERF_FLAG:
                self.err(f"{t} must follow an .entry/.func header", i)
            else:
                self.err(f"unknown or misplaced directive {t}", i)
            linkage = link_tok = None
        self.finish_module()
        return self.mod

    def parse_version(self):
        i = self.i
        if self.mod.version is not None:
            self.err("duplicate .version directive", i)
        self.i = i + 1
        j = self.i
        m = _VERSION_RE.fullmatch(self.T[j]) if self.K[j] == "num" else None
        if m is None:
            self.err(f"expected a version 'major.minor' after .version, found {self.describe(j)}", j)
        self.mod.version = (int(m.group(1)), int(m.group(2)))
        self.i = j + 1

    def parse_target(self):
        i = self.i
        if self.mod.target:
            self.err("duplicate .target directive", i)
        self.i = i + 1
        j = self.expect_name("a target name")
        targets = [self.T[j]]
        if not _ARCH_TARGET_RE.fullmatch(targets[0]):
            self.err(f"Unsupported .target '{targets[0]}' (an architecture sm_XX / compute_XX that PTX knows must come "
                     "first)", j)
        while self.K[self.i] == ",":
            self.i += 1
            j = self.expect_name("a target name")
            targets.append(self.T[j])
            if targets[-1] not in _PLATFORM_TARGETS:
                self.err(f"Unsupported .target '{targets[-1]}' (after the architecture: "
                         f"{', '.join(sorted(_PLATFORM_TARGETS))})", j)
        self.mod.target = targets

    def parse_file_directive(self):
        self.i += 1
        idx = self.expect_int("file index", lo=0)
        s = self.expect("str", "a quoted file name")
        path = self.V[s]
        if self.K[self.i] == "str":          # DWARF-5 style: directory then file name
            path = os.path.join(path, self.V[self.i])
            self.i += 1
        if self.K[self.i] == ",":            # optional timestamp, size
            self.i += 1
            self.expect_int("file timestamp")
            if self.K[self.i] == ",":
                self.i += 1
                self.expect_int("file size")
        self.mod.files[idx] = path

    def parse_loc(self):
        i = self.i
        self.i = i + 1
        f = self.expect_int(".loc file index", lo=0)
        line = self.expect_int(".loc line", lo=0)
        col = self.expect_int(".loc column", lo=0)
        while self.K[self.i] == ",":
            self.i += 1
            j = self.expect_name("'function_name' or 'inlined_at'")
            attr = self.T[j]
            if attr == "function_name":
                self.expect_name("a label after function_name")
                if self.K[self.i] in ("+", "-"):
                    self.parse_const_int("function_name offset")
            elif attr == "inlined_at":
                self.expect_int("inlined_at file index", lo=0)
                self.expect_int("inlined_at line", lo=0)
                self.expect_int("inlined_at column", lo=0)
            else:
                self.err(f"unknown .loc attribute {attr!r} (expected function_name or inlined_at)", j)
        key = (f, line, col)
        if f not in self.loc_tokens:
            self.loc_tokens[f] = i
        return key

    def parse_pragma(self):
        self.i += 1
        self.expect("str", "a quoted pragma string")
        while self.K[self.i] == ",":
            self.i += 1
            self.expect("str", "a quoted pragma string")
        self.expect_semicolon(".pragma")

    def skip_section(self):
        i = self.i
        self.i = i + 1
        if self.K[self.i] not in ("dir", "id"):
            self.err(f"expected a section name after .section, found {self.describe(self.i)}", self.i)
        self.i += 1
        open_tok = self.expect("{", "'{' opening the section contents")
        depth = 1
        K = self.K
        j = self.i
        while depth:
            k = K[j]
            if k == "{":
                depth += 1
            elif k == "}":
                depth -= 1
            elif k == "eof":
                self.err("unterminated .section block (no matching '}')", open_tok)
            j += 1
        self.i = j

    # ------------------------------------------------------------------ functions
    def parse_function(self, linkage, start_tok):
        K, T = self.K, self.T
        i = self.i
        kind = "entry" if T[i] == ".entry" else "func"
        self.i = i + 1
        returns = []
        early_flags = []
        while K[self.i] == "dir" and T[self.i] in (".noreturn", ".attribute"):
            early_flags.append(self.i)
            if T[self.i] == ".attribute":
                self.skip_attribute()
            else:
                self.i += 1
        if K[self.i] == "(":
            if kind == "entry":
                self.err(".entry kernels have no return parameters", self.i)
            returns = self.parse_param_list("return parameter")
        ni = self.expect_name(f"a {'kernel' if kind == 'entry' else 'function'} name")
        name = T[ni]
        params = []
        if K[self.i] == "(":
            params = self.parse_param_list("parameter")
        fn = Function(name=name, kind=kind, params=params, loc=self.loc(start_tok), returns=returns,
                      linkage=linkage)
        for j in early_flags:
            if T[j] == ".noreturn":
                fn.directives["noreturn"] = True
        self.parse_perf_directives(fn)
        existing = self.mod.functions.get(name)
        if name in self.gsyms:
            self.err(f"{name!r} is already declared as a variable", ni)
        if K[self.i] == ";":
            self.i += 1
            fn.is_declaration = True
            if existing is not None:
                if existing.kind != kind:
                    self.err(f"{name!r} redeclared as a different kind of function", ni)
                return          # a repeated prototype, or a prototype after the definition
            self.mod.functions[name] = fn
            return
        if K[self.i] != "{":
            self.err(f"expected '{{' (function body) or ';' (prototype) after the header of {name!r}, "
                     f"found {self.describe(self.i)}", self.i)
        if existing is not None:
            if not existing.is_declaration:
                self.err(f"function {name!r} is defined twice (first at line {existing.loc.line})", ni)
            if existing.kind != kind:
                self.err(f"{name!r} redeclared as a different kind of function", ni)
        self.mod.functions[name] = fn
        self.parse_body(fn)

    def skip_attribute(self):
        # .attribute( .managed ) / .attribute(.unified(uuid1, uuid2))
        self.i += 1
        open_tok = self.expect("(", "'(' after .attribute")
        depth = 1
        while depth:
            k = self.K[self.i]
            if k == "(":
                depth += 1
            elif k == ")":
                depth -= 1
            elif k in ("eof", ";", "{", "}"):
                self.err("unterminated .attribute(...)", open_tok)
            self.i += 1

    def parse_param_list(self, what: str, listed: str | None = None, unique: bool = True) -> list:
        """``( .param ..., ... )``: a parameter list; ``listed`` names it in errors (default ``what``), ``unique``
        refuses a repeated name (a ``.callprototype``'s parameters may all be ``_``)."""
        listed = listed or what
        self.expect("(")
        out = []
        seen = set()
        if self.K[self.i] == ")":
            self.i += 1
            return out
        while True:
            p = self.parse_param(what)
            if unique and p.name in seen:
                self.err(f"duplicate {what} {p.name!r}", self.i - 1)
            seen.add(p.name)
            out.append(p)
            k = self.K[self.i]
            if k == ",":
                self.i += 1
                continue
            if k == ")":
                self.i += 1
                return out
            self.err(f"expected ',' or ')' in the {listed} list, found {self.describe(self.i)}")

    def parse_param(self, what: str) -> Param:
        K, T = self.K, self.T
        start = self.i
        if K[start] != "dir" or T[start] != ".param":
            if K[start] == "dir" and T[start] == ".reg":
                self.err(f".reg {what}s are not supported (use .param)", start)
            self.err(f"expected '.param' to start a {what}, found {self.describe(start)}", start)
        self.i = start + 1
        align = ptr_align = ptr_space = type_ = None
        ptr = False
        while K[self.i] == "dir":
            j = self.i
            t = T[j]
            if t == ".align":
                self.i += 1
                v = self.expect_int(".align value", lo=1)
                if v & (v - 1):
                    self.err(f".align must be a power of two, got {v}", j + 1)
                if ptr:
                    ptr_align = v
                else:
                    align = v
            elif t == ".ptr":
                if type_ is None:
                    self.err(".ptr must follow the parameter type", j)
                ptr = True
                self.i += 1
            elif t in _PTR_SPACES and ptr and ptr_space is None:
                ptr_space = t[1:]
                self.i += 1
            elif t in _TYPES:
                if type_ is not None:
                    self.err(f"{what} has two types (.{type_} and {t})", j)
                type_ = t[1:]
                self.i += 1
            elif t in _VECTORS:
                self.err(f"vector {what}s are not supported", j)
            elif t in _OPAQUE_TYPES:
                self.err(f"{t} parameters are not supported", j)
            else:
                self.err(f"unexpected {t} in a {what} declaration", j)
        ni = self.expect_name(f"a {what} name")
        if type_ is None:
            self.err(f"{what} {T[ni]!r} has no type", ni)
        array = None
        if K[self.i] == "[":
            self.i += 1
            array = self.expect_int("parameter array size", lo=1)
            self.expect("]", "']'")
        return Param(name=T[ni], type=type_, loc=self.loc(start), align=align, array=array,
                     ptr_space=ptr_space, ptr_align=ptr_align)

    def parse_perf_directives(self, fn: Function):
        K, T = self.K, self.T
        d = fn.directives
        while K[self.i] == "dir":
            i = self.i
            t = T[i]
            key = t[1:]
            if t in _PERF_TUPLE:
                self.i += 1
                vals = [self.expect_int(f"{t} value", lo=1)]
                while K[self.i] == "," and len(vals) < 3:
                    self.i += 1
                    vals.append(self.expect_int(f"{t} value", lo=1))
                vals += [1] * (3 - len(vals))
                value = tuple(vals)
            elif t in _PERF_INT:
                self.i += 1
                # (ptxas 13.0: "Positive non-zero value expected for maxnreg / minnctapersm")
                value = self.expect_int(f"{t} value", lo=1 if t in (".maxnreg", ".minnctapersm") else 0)
            elif t in _PERF_FLAG:
                self.i += 1
                value = True
            elif t == ".pragma":
                self.parse_pragma()
                continue
            else:
                self.err(f"unknown or misplaced directive {t} after the header of {fn.name!r}", i)
            if key in d:
                self.err(f"duplicate {t} directive", i)
            d[key] = value

    # ------------------------------------------------------------------ function bodies
    def parse_body(self, fn: Function):
        K = self.K
        self.fn = fn
        self.bind = {}
        self.pending = []           # (instr, scope, [(placeholder, name, tok, must_label)])
        self.pending_tlists = []    # (list label, scope, [(target name, tok)]) of .branchtargets
        self.scope_count = 0
        self.user_loc = None
        scope = _Scope(0, None, self.i)
        self.scope = scope
        self.i += 1  # '{'
        for p in fn.returns + fn.params:
            self.declare(p.name, "sym", self.i)
        while True:
            i = self.i
            k = K[i]
            if k == "id":
                if K[i + 1] == ":":
                    self.parse_label(i)
                else:
                    self.parse_instruction(i)
            elif k == "@":
                self.parse_instruction(i)
            elif k == "dir":
                self.parse_body_directive(i)
            elif k == "{":
                if self.depth >= _MAX_DEPTH:
                    self.err("blocks nested too deeply", i)
                self.depth += 1
                self.scope_count += 1
                self.scope = _Scope(self.scope_count, self.scope, i)
                self.i = i + 1
            elif k == "}":
                self.i = i + 1
                sc = self.scope
                if sc.parent is None:
                    break
                bind = self.bind
                for name, prev in reversed(sc.undo):
                    if prev is _MISSING:
                        del bind[name]
                    else:
                        bind[name] = prev
                self.scope = sc.parent
                self.depth -= 1
            elif k == ";":
                self.i = i + 1          # empty statement
            elif k == "eof":
                self.err("unterminated block: '{' has no matching '}'", self.scope.open_tok)
            else:
                self.err(f"expected an instruction, label, directive or '}}', found {self.describe(i)}", i)
        self.resolve_pending(fn)
        self.fn = None
        self.bind = None
        self.depth = 0

    def declare(self, name: str, kind: str, tok: int, reg_type=None):
        """Bind ``name`` in the current scope; returns the (possibly renamed) name."""
        sc = self.scope
        if name in sc.names:
            self.err(f"duplicate declaration of {name!r} in the same scope", tok)
        if name in SPECIAL_REGISTERS:
            self.err(f"cannot declare {name!r}: it is a special register", tok)
        sc.names.add(name)
        new = name if sc.id == 0 else f"{name}@{sc.id}"
        value = Reg(new) if kind == "reg" else Sym(new)
        bind = self.bind
        if sc.id:
            sc.undo.append((name, bind.get(name, _MISSING)))
        bind[name] = value
        if kind == "reg":
            self.fn.regs[new] = reg_type
        return new

    def parse_label(self, i: int):
        T = self.T
        name = T[i]
        if "." in name:
            self.err(f"invalid label name {name!r}", i)
        sc = self.scope
        if name in sc.labels:
            self.err(f"duplicate label {name!r} in the same scope", i)
        new = name if sc.id == 0 else f"{name}@{sc.id}"
        sc.labels[name] = new
        self.i = i + 2
        if self.K[self.i] == "dir" and self.T[self.i] == ".branchtargets":
            self.parse_branchtargets(new)
            return
        if self.K[self.i] == "dir" and self.T[self.i] == ".callprototype":
            self.parse_callprototype(new)
            return
        if self.K[self.i] == "dir" and self.T[self.i] == ".calltargets":
            self.parse_calltargets(new)
            return
        self.fn.labels[new] = len(self.fn.body)

    def parse_callprototype(self, name: str):
        """``Label: .callprototype (ret-param)? _ (param, ...)?;`` (PTX ISA §11.4.3): the signature of an indirect
        call; recorded in ``Function.call_prototypes`` (not a code label)."""
        K, T = self.K, self.T
        self.i += 1
        returns = []
        if K[self.i] == "(":
            returns = self.parse_proto_params("return parameter")
        j = self.i
        if K[j] != "id" or T[j] != "_":
            self.err(f"expected '_' (the function name placeholder) in .callprototype, found {self.describe(j)}", j)
        self.i = j + 1
        params = []
        if K[self.i] == "(":
            params = self.parse_proto_params("parameter")
        while K[self.i] == "dir" and T[self.i] == ".noreturn":
            self.i += 1
        self.expect_semicolon(".callprototype")
        self.fn.call_prototypes[name] = CallPrototype(tuple(returns), tuple(params))

    def parse_proto_params(self, what: str) -> list:
        return self.parse_param_list(what, f".callprototype {what}", unique=False)

    def parse_calltargets(self, name: str):
        """``Label: .calltargets f1, f2, ...;`` (PTX ISA §11.4.2): the possible targets of an indirect call;
        recorded in ``Function.call_targets`` (each must name a function by the end of the module)."""
        K, T = self.K, self.T
        self.i += 1
        names = []
        while True:
            j = self.i
            if K[j] != "id" or "." in T[j] or T[j][:1] == "%":
                self.err(f"expected a function name in the .calltargets list, found {self.describe(j)}", j)
            names.append(T[j])
            self.pending_syms.append((T[j], j, True))
            self.i = j + 1
            if K[self.i] == ",":
                self.i += 1
                continue
            break
        self.expect_semicolon(".calltargets list")
        self.fn.call_targets[name] = tuple(names)

    def parse_branchtargets(self, list_name: str):
        """``.branchtargets L1, L2, ...;`` after the list's label (self.i at the directive)."""
        K, T = self.K, self.T
        self.i += 1
        targets = []
        while True:
            j = self.i
            if K[j] != "id" or "." in T[j] or T[j][:1] == "%":
                self.err(f"expected a label in the .branchtargets list, found {self.describe(j)}", j)
            targets.append((T[j], j))
            self.i = j + 1
            if K[self.i] == ",":
                self.i += 1
                continue
            break
        self.expect_semicolon(".branchtargets list")
        self.pending_tlists.append((list_name, self.scope, targets))

    def parse_body_directive(self, i: int):
        t = self.T[i]
        if t == ".reg":
            self.parse_reg_decl()
        elif t == ".param":
            self.parse_body_param()
        elif t in _VAR_SPACES:
            for d in self.parse_var_decl(None, scoped=True):
                self.fn.locals.append(d)
        elif t == ".extern" and self.K[i + 1] == "dir" and self.T[i + 1] in _VAR_SPACES:
            self.i += 1
            for d in self.parse_var_decl("extern", scoped=True):
                self.fn.locals.append(d)
        elif t == ".loc":
            self.user_loc = self.parse_loc()
        elif t == ".pragma":
            self.parse_pragma()
        elif t == ".file":
            self.parse_file_directive()
        elif t in _CALL_LISTS:
            self.err(f"{t} must follow the label that names it (Label: {t} ...;)", i)
        elif t == ".branchtargets":
            self.err(".branchtargets must follow the label that names the list (Label: .branchtargets ...;)", i)
        elif t in _PERF_TUPLE or t in _PERF_INT or t in _PERF_FLAG:
            self.err(f"{t} must appear between the function header and its body", i)
        else:
            self.err(f"unknown or misplaced directive {t} in a function body", i)

    def parse_reg_decl(self):
        K, T = self.K, self.T
        self.i += 1
        vec = 1
        type_ = None
        while K[self.i] == "dir":
            j = self.i
            t = T[j]
            if t in _VECTORS:
                if vec != 1:
                    self.err("two vector sizes in one .reg declaration", j)
                vec = _VECTORS[t]
            elif t in _TYPES:
                if type_ is not None:
                    self.err(f".reg declaration has two types (.{type_} and {t})", j)
                type_ = t[1:]
            elif t == ".align":
                self.err(".align is not allowed on .reg declarations", j)
            else:
                self.err(f"unexpected {t} in a .reg declaration", j)
            self.i += 1
        if type_ is None:
            self.err(f".reg declaration needs a type, found {self.describe(self.i)}", self.i)
        if vec != 1 and type_ == "pred":
            self.err("vector .pred registers are not allowed", self.i)
        rt = (type_, vec)
        fn_regs = self.fn.regs
        sc = self.scope
        while True:
            ni = self.expect_name("a register name")
            base = T[ni]
            if K[self.i] == "<":
                self.i += 1
                j = self.i
                if K[j] != "num" or self.V[j].kind != "int":
                    self.err(f"bad register range for {base!r}: expected an integer count after '<', "
                             f"found {self.describe(j)}", j)
                n = self.V[j].value
                if n < 1:
                    self.err(f"bad register range {base}<{n}>: the count must be positive", j)
                if n > _MAX_REG_RANGE:
                    self.err(f"bad register range {base}<{n}>: too many registers", j)
                self.i = j + 1
                if K[self.i] != ">":
                    self.err(f"bad register range for {base!r}: expected '>', found "
                             f"{self.describe(self.i)}", self.i)
                self.i += 1
                names = [f"{base}{k}" for k in range(n)]
                if sc.id == 0 and _SPECIAL_NAMES.isdisjoint(names):
                    # fast path: function scope, no renaming
                    dup = sc.names.intersection(names)
                    if dup:
                        self.err(f"duplicate declaration of {min(dup)!r} in the same scope", ni)
                    sc.names.update(names)
                    bind = self.bind
                    for nm in names:
                        r = Reg(nm)
                        bind[nm] = r
                        fn_regs[nm] = rt
                else:
                    for nm in names:
                        self.declare(nm, "reg", ni, rt)
            else:
                self.declare(base, "reg", ni, rt)
            if K[self.i] == ",":
                self.i += 1
                continue
            break
        self.expect_semicolon(".reg declaration")

    def parse_body_param(self):
        K, T = self.K, self.T
        start = self.i
        self.i += 1
        align = None
        type_ = None
        vec = 1
        while K[self.i] == "dir":
            j = self.i
            t = T[j]
            if t == ".align":
                self.i += 1
                align = self.expect_int(".align value", lo=1)
                if align & (align - 1):
                    self.err(f".align must be a power of two, got {align}", j + 1)
                continue
            if t in _TYPES:
                if type_ is not None:
                    self.err(f".param declaration has two types (.{type_} and {t})", j)
                type_ = t[1:]
            elif t in _VECTORS:
                vec = _VECTORS[t]
            else:
                self.err(f"unexpected {t} in a .param declaration", j)
            self.i += 1
        if type_ is None:
            self.err(f".param declaration needs a type, found {self.describe(self.i)}", self.i)
        while True:
            ni = self.expect_name("a parameter name")
            dims = self.parse_dims()
            new = self.declare(T[ni], "sym", ni)
            self.fn.locals.append(VarDecl(space="param", name=new, type=type_, loc=self.loc(start),
                                          align=align, dims=dims, vector=vec))
            if K[self.i] == ",":
                self.i += 1
                continue
            break
        self.expect_semicolon(".param declaration")

    # ------------------------------------------------------------------ variables
    def parse_dims(self, extern: bool = False) -> list:
        dims = []
        while self.K[self.i] == "[":
            self.i += 1
            if self.K[self.i] == "]":
                dims.append(None)
            elif extern and not dims and self.T[self.i] == "0":
                self.i += 1
                dims.append(None)       # ptxas 13.0 takes `.extern .shared .b8 x[0]` as the unsized x[]
            else:
                dims.append(self.expect_int("array extent", lo=1))
            self.expect("]", "']'")
        return dims

    def parse_var_decl(self, linkage, scoped: bool) -> list:
        K, T = self.K, self.T
        start = self.i
        space = T[start][1:]
        self.i += 1
        align = None
        type_ = None
        vec = 1
        while K[self.i] == "dir":
            j = self.i
            t = T[j]
            if t == ".align":
                self.i += 1
                align = self.expect_int(".align value", lo=1)
                if align & (align - 1):
                    self.err(f".align must be a power of two, got {align}", j + 1)
                continue
            if t == ".attribute":
                self.skip_attribute()
                continue
            if t in _TYPES:
                if type_ is not None:
                    self.err(f"variable declaration has two types (.{type_} and {t})", j)
                type_ = t[1:]
            elif t in _VECTORS:
                if vec != 1:
                    self.err("two vector sizes in one declaration", j)
                vec = _VECTORS[t]
            elif t in _OPAQUE_TYPES:
                self.err(f"{t} variables (textures/samplers/surfaces) are not supported", j)
            else:
                self.err(f"unexpected {t} in a .{space} declaration", j)
            self.i += 1
        if type_ is None:
            self.err(f".{space} declaration needs a type, found {self.describe(self.i)}", self.i)
        out = []
        while True:
            ni = self.expect_name("a variable name")
            name = T[ni]
            dims = self.parse_dims(extern=linkage == "extern")
            init = None
            if K[self.i] == "=":
                eq = self.i
                self.i += 1
                init = []
                self.parse_initializer(init, 0)
                n_elems = vec
                for d in dims[1:]:
                    if d is None:
                        self.err("only the first array extent may be left unsized", eq)
                    n_elems *= d
                if dims and dims[0] is None:
                    dims[0] = max(1, -(-len(init) // n_elems))
                else:
                    for d in dims:
                        n_elems *= d
                    if len(init) > n_elems:
                        self.err(f"too many initialisers for {name!r} ({len(init)} for {n_elems} "
                                 f"elements)", eq)
            if scoped:
                name = self.declare(name, "sym", ni)
            else:
                if name in self.gsyms or name in self.mod.functions:
                    self.err(f"duplicate declaration of {name!r} at module scope", ni)
            d = VarDecl(space=space, name=name, type=type_, loc=self.loc(start), align=align, dims=dims,
                        init=init, linkage=linkage, vector=vec)
            if not scoped:
                self.gsyms[name] = d
            out.append(d)
            if K[self.i] == ",":
                self.i += 1
                continue
            break
        self.expect_semicolon("variable declaration")
        return out

    def parse_initializer(self, out: list, depth: int):
        K = self.K
        if depth > _MAX_DEPTH:
            self.err("initialiser nested too deeply")
        if K[self.i] == "{":
            self.i += 1
            if K[self.i] == "}":
                self.err("empty initialiser list")
            while True:
                self.parse_initializer(out, depth + 1)
                if K[self.i] == ",":
                    self.i += 1
                    continue
                self.expect("}", "',' or '}' in the initialiser list")
                return
        i = self.i
        if K[i] == "id":
            t = self.T[i]
            if t == "generic" and K[i + 1] == "(":
                self.i = i + 2
                ni = self.expect_name("a variable name inside generic()")
                self.expect(")", "')'")
                name = self.T[ni]
                ref_tok = ni
            else:
                ni = self.expect_name("a symbol name")
                name = t
                ref_tok = ni
            off = 0
            if K[self.i] in ("+", "-"):
                off = self.parse_const_int("symbol offset")
            b = self.bind.get(name) if self.fn is not None else None
            if b is not None:
                if not isinstance(b, Sym):
                    self.err(f"{name!r} is a register and cannot appear in an initialiser", ref_tok)
                name = b.name
            else:
                self.pending_syms.append((name, ref_tok, False))
            out.append(Sym(name, off))
            return
        out.append(self.make_imm(self.parse_expr(), i))

    # ------------------------------------------------------------------ instructions
    def parse_instruction(self, start: int):
        K, T = self.K, self.T
        i = start
        guard = None
        fn = self.fn
        if K[i] == "@":
            i += 1
            neg = False
            if K[i] == "!":
                neg = True
                i += 1
            if K[i] != "id":
                self.err(f"expected a predicate register after '@', found {self.describe(i)}", i)
            g = self.bind.get(T[i])
            if not isinstance(g, Reg):
                if T[i][:1] == "%" or g is None:
                    self.err(f"undeclared register {T[i]!r} in guard", i)
                self.err(f"guard {T[i]!r} is not a register", i)
            if fn.regs[g.name][0] != "pred":
                self.err(f"guard {T[i]!r} is not a .pred register (it is .{fn.regs[g.name][0]})", i)
            guard = (g, neg)
            i += 1
        if K[i] != "id":
            self.err(f"expected an instruction opcode, found {self.describe(i)}", i)
        parts = T[i].split(".")
        opcode = parts[0]
        if opcode not in KNOWN_OPCODES:
            if K[i + 1] == ":" or (opcode[:1] in "%$" or not opcode[:1].isalpha()):
                self.err(f"expected an instruction opcode, found {T[i]!r}", i)
            self.err(f"unknown instruction {opcode!r}", i)
        if "" in parts:
            self.err(f"malformed opcode {T[i]!r}", i)
        self.i = i + 1
        self.cur_pending = None
        if opcode in _BRANCH_OPS:
            mode = 1
        elif opcode == "call":
            mode = 2
        else:
            mode = 0
        operands = []
        k = K[self.i]
        if k != ";":
            if k in ("}", "dir", "eof", "@") or (k == "id" and K[self.i + 1] == ":"):
                self.expect_semicolon("instruction")
            parse_operand = self.parse_operand
            while True:
                operands.append(parse_operand(mode, True))
                k = K[self.i]
                if k == ",":
                    self.i += 1
                    continue
                if k == ";":
                    break
                if k == "eof" or self.L[self.i] != self.L[self.i - 1]:
                    self.expect_semicolon("instruction")
                self.err(f"expected ',' or ';' after an operand, found {self.describe(self.i)}")
        self.i += 1
        instr = Instruction(opcode, tuple(parts[1:]), tuple(operands), self.loc(start), guard,
                            len(fn.body), self.user_loc)
        fn.body.append(instr)
        if self.cur_pending:
            self.pending.append((instr, self.scope, self.cur_pending))

    def add_pending(self, placeholder, name, tok, must_label):
        if self.cur_pending is None:
            self.cur_pending = []
        self.cur_pending.append((placeholder, name, tok, must_label))

    def parse_operand(self, mode: int, top: bool):
        """mode 0: ordinary, 1: branch (labels), 2: call.  ``top``: a direct instruction operand."""
        K = self.K
        i = self.i
        k = K[i]
        if k == "id":
            if self.T[i] == "_":
                self.i = i + 1
                op = Sink()
            elif self.T[i] == WARP_SZ and self.bind.get(WARP_SZ) is None:
                return self.make_imm(self.parse_expr(), i)
            else:
                op = self.parse_ident(mode, top)
            if K[self.i] == "|":
                if not isinstance(op, (Reg, Sink)):
                    self.err("only registers or '_' may form a predicate pair 'a|b'", i)
                self.i += 1
                j = self.i
                if K[j] != "id":
                    self.err(f"expected a register or '_' after '|', found {self.describe(j)}", j)
                if self.T[j] == "_":
                    self.i = j + 1
                    second = Sink()
                else:
                    second = self.parse_ident(0, False)
                    if not isinstance(second, Reg):
                        self.err(f"expected a register or '_' after '|', found {self.describe(j)}", j)
                return PredPair(op, second)
            return op
        if k == "[":
            return self.parse_address(mode)
        if k == "{":
            return Vector(self.parse_brace_list())
        if k == "(" and mode == 2:
            self.i = i + 1
            elems = []
            if K[self.i] != ")":
                while True:
                    elems.append(self.parse_operand(2, False))
                    if K[self.i] == ",":
                        self.i += 1
                        continue
                    break
            self.expect(")", "',' or ')' in the argument list")
            return ParenList(tuple(elems))
        if k == "!" and K[i + 1] == "id":
            self.i = i + 1
            inner = self.parse_ident(0, False)
            if not isinstance(inner, Reg):
                self.err(f"'!' must be applied to a predicate register, found {self.describe(i + 1)}",
                         i + 1)
            return Not(inner)
        if k in _EXPR_START:
            return self.make_imm(self.parse_expr(), i)
        self.err(f"expected an operand, found {self.describe(i)}", i)

    def parse_brace_list(self) -> tuple:
        K = self.K
        open_tok = self.i
        self.i += 1
        elems = []
        if K[self.i] == "}":
            self.err("empty vector operand '{}'", self.i)
        while True:
            j = self.i
            if K[j] == "{":
                self.err("nested vector operands are not allowed", j)
            elems.append(self.parse_operand(0, False))
            k = K[self.i]
            if k == ",":
                self.i += 1
                continue
            if k == "}":
                self.i += 1
                return tuple(elems)
            if k == "eof":
                self.err("unterminated vector operand '{'", open_tok)
            self.err(f"expected ',' or '}}' in a vector operand, found {self.describe(self.i)}")

    def parse_ident(self, mode: int, top: bool):
        """Resolve the identifier at self.i (consuming it and any '+offset' after a symbol)."""
        i = self.i
        t = self.T[i]
        self.i = i + 1
        if "." in t:
            base, comp = t.split(".", 1)
            comps = SPECIAL_REGISTERS.get(base)
            if comps is not None:
                if comp not in comps:
                    if comps:
                        self.err(f"special register {base} has no component .{comp} (expected .x, .y or "
                                 f".z)", i)
                    self.err(f"special register {base} has no components", i)
                return SpecialReg(base, comp)
            b = self.bind.get(base)
            if isinstance(b, Reg):
                self.err(f"vector register element access {t!r} is not supported", i)
            if base[:1] == "%":
                self.err(f"unknown special register {t!r}", i)
            self.err(f"unexpected '.' in operand {t!r}", i)
        if mode == 1:
            b = self.bind.get(t)
            if isinstance(b, Reg):
                return b
            if t in SPECIAL_REGISTERS:
                return SpecialReg(t)
            if t[:1] == "%":
                self.err(f"undeclared register {t!r}", i)
            ph = Sym(t)
            self.add_pending(ph, t, i, True)
            return ph
        b = self.bind.get(t)
        if b is not None:
            if b.__class__ is Reg:
                return b
            if self.K[self.i] in ("+", "-"):
                return Sym(b.name, self.parse_const_int("symbol offset"))
            return b
        if t in SPECIAL_REGISTERS:
            return SpecialReg(t)
        if t[:1] == "%":
            self.err(f"undeclared register {t!r}", i)
        off = 0
        if self.K[self.i] in ("+", "-"):
            off = self.parse_const_int("symbol offset")
        sym = Sym(t, off)
        if mode == 2:
            s = self.scope
            while s is not None and not off:
                lab = s.labels.get(t)
                if lab is not None and (lab in self.fn.call_prototypes or lab in self.fn.call_targets):
                    return LabelRef(lab)
                s = s.parent
            self.pending_syms.append((t, i, top))
        elif top and t not in self.gsyms and t not in self.mod.functions:
            self.add_pending(sym, t, i, False)
        else:
            self.pending_syms.append((t, i, False))
        return sym

    def parse_address(self, mode: int) -> Address:
        K = self.K
        open_tok = self.i
        self.i += 1
        i = self.i
        k = K[i]
        if k == "id":
            if self.T[i] == "_":
                self.err("'_' cannot be used as an address", i)
            base = self.parse_ident(0, False)
            if isinstance(base, SpecialReg):
                self.err(f"special register {base} cannot be used as an address base", i)
            offset = 0
            if isinstance(base, Sym) and base.offset:
                offset = base.offset
                base = Sym(base.name)
            if K[self.i] == ",":
                if offset:
                    self.err("a tensor reference cannot have an offset", self.i)
                self.i += 1
                if K[self.i] != "{":
                    self.err(f"expected '{{' with tensor coordinates after ',', found "
                             f"{self.describe(self.i)}", self.i)
                coords = self.parse_brace_list()
                self.close_bracket(open_tok)
                return Address(base, 0, coords)
            if K[self.i] in ("+", "-"):
                if isinstance(base, Sym):
                    offset += self.parse_const_int("address offset")
                else:
                    offset = self.parse_const_int("address offset")
            self.close_bracket(open_tok)
            return Address(base, offset)
        if k in _EXPR_START:
            v = self.parse_const_int("absolute address")
            self.close_bracket(open_tok)
            return Address(None, v)
        if k == "]":
            self.err("empty address '[]'", i)
        self.err(f"expected a register, symbol or constant address, found {self.describe(i)}", i)

    def close_bracket(self, open_tok: int):
        k = self.K[self.i]
        if k == "]":
            self.i += 1
            return
        if k in ("id", "[") and self.K[self.i - 1] in ("id", "num", "]"):
            self.err(f"expected '+', '-' or ']' in an address, found {self.describe(self.i)}")
        if k in (";", "eof"):
            self.err("unterminated address: '[' has no matching ']'", open_tok)
        self.err(f"expected ']' closing the address, found {self.describe(self.i)}")

    # ------------------------------------------------------------------ constant expressions
    @staticmethod
    def make_imm(v, tok: int) -> Imm:
        if isinstance(v, _FloatVal):
            return Imm(v.value, v.kind, v.bits)
        return Imm(v[0])

    def parse_const_int(self, what: str) -> int:
        i = self.i
        if self.K[i] not in _EXPR_START and self.T[i] != WARP_SZ:
            self.err(f"expected {what} (an integer constant), found {self.describe(i)}", i)
        v = self.parse_expr()
        if isinstance(v, _FloatVal):
            self.err(f"expected {what} to be an integer, found a floating-point value", i)
        return v[0]

    def parse_expr(self, min_prec: int = 0, depth: int = 0):
        if depth > _MAX_DEPTH:
            self.err("constant expression nested too deeply")
        K = self.K
        lhs = self.parse_unary(depth)
        while True:
            k = K[self.i]
            if k == "?" and min_prec == 0:
                qi = self.i
                self.i += 1
                a = self.parse_expr(0, depth + 1)
                self.expect(":", "':' of a conditional expression")
                b = self.parse_expr(0, depth + 1)
                if isinstance(lhs, _FloatVal):
                    self.err("floating-point constant expressions are not supported", qi)
                lhs = a if lhs[0] else b
                continue
            prec = _BINARY_PREC.get(k)
            if prec is None or prec < min_prec or prec == 0:
                return lhs
            op_tok = self.i
            self.i += 1
            rhs = self.parse_expr(prec + 1, depth + 1)
            lhs = self.binop(k, lhs, rhs, op_tok)

    def parse_unary(self, depth: int):
        K = self.K
        i = self.i
        k = K[i]
        if k == "num":
            self.i = i + 1
            v = self.V[i]
            if v[1] == "int":
                return (v[0], v[3])
            return _FloatVal(v[0], v[1], v[2])
        if k == "id" and self.T[i] == WARP_SZ:
            self.i = i + 1
            return (32, False)
        if k in ("-", "+", "~", "!"):
            if depth > _MAX_DEPTH:
                self.err("constant expression nested too deeply", i)
            self.i = i + 1
            v = self.parse_unary(depth + 1)
            if isinstance(v, _FloatVal):
                if k == "+":
                    return v
                if k == "-":
                    sign = 1 << (31 if v.kind == "f32" else 63)
                    return _FloatVal(-v.value, v.kind, v.bits ^ sign)
                self.err(f"operator {k!r} cannot be applied to a floating-point constant", i)
            a, u = v
            if k == "-":
                return (_wrap(-a, u), u)
            if k == "~":
                return (_wrap(~a, u), u)
            if k == "!":
                return (int(a == 0), False)
            return v
        if k == "(":
            self.i = i + 1
            v = self.parse_expr(0, depth + 1)
            if self.K[self.i] != ")":
                self.err(f"expected ')' in a constant expression, found {self.describe(self.i)}")
            self.i += 1
            return v
        if k == "id":
            self.err(f"expected a constant, found {self.T[i]!r} (symbols are not allowed inside "
                     f"constant expressions)", i)
        self.err(f"expected a constant, found {self.describe(i)}", i)

    def binop(self, op: str, lhs, rhs, tok: int):
        if isinstance(lhs, _FloatVal) or isinstance(rhs, _FloatVal):
            self.err("floating-point constant expressions are not supported", tok)
        u = lhs[1] or rhs[1]
        a = _wrap(lhs[0], u)
        b = _wrap(rhs[0], u)
        if op == "+":
            r = a + b
        elif op == "-":
            r = a - b
        elif op == "*":
            r = a * b
        elif op == "/" or op == "%":
            if b == 0:
                self.err("division by zero in a constant expression", tok)
            q = abs(a) // abs(b)
            if (a < 0) != (b < 0):
                q = -q
            r = q if op == "/" else a - b * q
        elif op == "<<":
            if b < 0:
                self.err("negative shift count in a constant expression", tok)
            r = a << b if b < 64 else 0
        elif op == ">>":
            if b < 0:
                self.err("negative shift count in a constant expression", tok)
            r = a >> b if b < 64 else (-1 if a < 0 else 0)
        elif op == "&":
            r = a & b
        elif op == "|":
            r = a | b
        elif op == "^":
            r = a ^ b
        elif op == "&&":
            return (int(bool(a) and bool(b)), False)
        elif op == "||":
            return (int(bool(a) or bool(b)), False)
        else:
            r = {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "==": a == b, "!=": a != b}[op]
            return (int(r), False)
        return (_wrap(r, u), u)

    # ------------------------------------------------------------------ resolution
    def resolve_pending(self, fn: Function):
        for instr, scope, entries in self.pending:
            ops = None
            for ph, name, tok, must_label in entries:
                s = scope
                target = None
                if ph.offset == 0:
                    while s is not None:
                        target = s.labels.get(name)
                        if target is not None:
                            break
                        s = s.parent
                if target is not None:
                    if ops is None:
                        ops = list(instr.operands)
                    for j, o in enumerate(ops):
                        if o is ph:
                            ops[j] = LabelRef(target)
                elif must_label:
                    self.err(f"undefined label {name!r} (no such label visible from this branch)", tok)
                else:
                    self.pending_syms.append((name, tok, False))
            if ops is not None:
                instr.operands = tuple(ops)
        self.pending = []
        for list_name, scope, targets in self.pending_tlists:
            resolved = []
            for name, tok in targets:
                s = scope
                target = None
                while s is not None:
                    target = s.labels.get(name)
                    if target is not None:
                        break
                    s = s.parent
                if target is None or target not in fn.labels:
                    self.err(f"undefined label {name!r} in the .branchtargets list {list_name!r}", tok)
                resolved.append(target)
            fn.branch_targets[list_name] = tuple(resolved)
        self.pending_tlists = []

    def finish_module(self):
        mod = self.mod
        funcs = mod.functions
        gsyms = self.gsyms
        for name, tok, need_function in self.pending_syms:
            if name in funcs:
                continue
            if name in gsyms:
                if need_function:
                    self.err(f"call target {name!r} is a variable, not a function", tok)
                continue
            if need_function:
                self.err(f"call to undefined function {name!r}", tok)
            if name[:1] == "%":
                self.err(f"undeclared register {name!r}", tok)
            self.err(f"undefined symbol {name!r} (not a register, variable, parameter, label or "
                     f"function in scope)", tok)
        # map .loc (file index, line, col) through .file
        files = mod.files
        cache = {}
        for fn in funcs.values():
            for ins in fn.body:
                raw = ins.user_loc
                if raw is None:
                    continue
                m = cache.get(raw)
                if m is None:
                    path = files.get(raw[0])
                    if path is None:
                        self.err(f".loc refers to file index {raw[0]} but no '.file {raw[0]} ...' "
                                 f"directive declares it", self.loc_tokens[raw[0]])
                    m = cache[raw] = (path, raw[1], raw[2])
                ins.user_loc = m


# ------------------------------------------------------------------------------------------- API


def parse(text: str, source_name: str = "<string>") -> Module:
    """Parse PTX source text into a :class:`~tcsim.isa.ir.Module`.

    Raises :class:`~tcsim.isa.errors.PtxSyntaxError` (with the exact line/column and line text) for any
    malformed or unsupported input.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() needs PTX text as str, got {type(text).__name__}")
    try:
        module = _Parser(text, source_name).parse_module()
    except RecursionError:  # pragma: no cover - guarded by depth limits; keep the promise anyway
        raise PtxSyntaxError("input nested too deeply", SourceLoc(source_name, 1, 1, "")) from None
    verify_declarations(module)
    return module


def parse_file(path) -> Module:
    """Read and parse a PTX file; the module's ``source_name`` is ``path`` as given."""
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        text = f.read()
    return parse(text, str(path))
