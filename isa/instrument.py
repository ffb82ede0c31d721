"""PTX -> PTX trace instrumentation, identical on every back end (simulator and real GPU).

``instrument(ptx_text, source_name, kernel=None, points='all', ring_records=256) -> (new_text, TraceLayout)``

The rewritten kernel takes one extra, last parameter ``.param .u64 __tcsim_trace``: a zero-filled global
buffer of ``layout.buffer_bytes(grid, block)`` bytes, one *region* per warp.  After each chosen instruction
that writes registers the rewriter inserts a block in its own ``{ }`` scope (its own ``.reg`` declarations)
that appends one *record* to the warp's ring:

* ``activemask.b32`` (PTX ISA 9.1 §9.7.13.9) gives the lanes executing the block together; for a guarded
  instruction ``vote.sync.ballot.b32`` (§9.7.13.6) of the guard restricts the record's mask to the lanes that
  executed it, and no record is written when none did;
* the leader (lowest lane of the active mask) claims a slot with ``atom.global.add.u32`` (§9.7.13.5) on the
  region's counter, ``shfl.sync.idx.b32`` (§9.7.9.6) broadcasts it under the active mask (divergent
  sub-groups of one warp claim slots independently); slot = count mod ring_records, so a wrapped ring keeps
  the newest records and the counter holds the total;
* the leader writes the header {point id u32, mask u32, ``%clock64`` u64}; every lane writes, for each
  destination register, its value zero-extended to 64 bits (predicates as 0/1).

Region layout (little-endian; offsets in ``TraceLayout``): ``u32 count, u32 0, u64 0`` | ``u64 anchors[n]``
| ``ring_records x record_bytes``.  Record: ``u32 point, u32 mask, u64 clock`` | ``u64 value[dest][32 lanes]``.
Warp index = linear CTA id (``%ctaid``/``%nctaid``) x warps per CTA + linear thread id / 32 (``%tid``/
``%ntid``), never ``%warpid``.

*Anchors* are written once per warp by a prologue: the values of 64-bit scalar parameters (device pointers)
and of the 64-bit words the kernel loads from ``.b8`` array parameters (structs, the CuTe DSL's pointers), and
the addresses of the state-space symbols the kernel takes the address of (shared, global, const, local variables;
parameters whose address is taken, with their ``cvta`` generic forms).  Two back ends place buffers and variables
at different addresses; the differ relocates address-valued records against these anchors (``buffer + offset``)
so that addresses compare exactly where the layout does not matter.

Every destination is also *classified* by a flow-insensitive taint analysis over the kernel, so that the
differ knows what may legitimately differ between back ends: ``exact`` (compared bit for bit), ``address``
(compared after relocation), ``approx`` (result of an ``.approx`` instruction: differences reported with
their ulp distance), ``poll`` (result of ``mbarrier.try_wait``/``test_wait``: a poll's outcome depends on
timing), ``timing`` (derived from ``%clock``/``%globaltimer``), ``hwid`` (derived from ``%smid``/``%warpid``
and other placement registers), ``opaque`` (``mbarrier.arrive`` state tokens, ``createpolicy`` handles).

The instrumentation uses only fresh registers (``%__tcsim_wb`` at function scope, the rest scoped), so the
kernel's own instructions keep their semantics; the original text is kept verbatim between insertions.

Not traced (listed in ``TraceLayout.skipped`` with the reason): instructions without register destinations
(stores, barriers, fences, ...), branches/ret/exit/call, destinations written asynchronously
(``wgmma.mma_async`` accumulators, ``tcgen05.*``), instructions inside a call-sequence scope (``{ ... call
... }``: ptxas constrains what may sit between the ``.param`` set-up and the call), ``.b128`` and ``.s8``
destination registers, and instructions of ``.func`` device functions (only the kernel body is rewritten).
Instructions inside other nested scopes (inline asm ``{ .reg .pred P1; ... }``) *are* traced: the record
block is inserted inside the same scope, so scoped register names resolve as in the original.

Known limit: a warp's divergent sub-groups that re-merge (in the simulator) in the middle of a record block
would reach its ``shfl.sync`` with different member masks; this needs lanes released from a blocking wait
while a sibling group is inside a block, and has not been seen.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field

from .errors import LaunchError, SourceLoc, TcsimError
from .ir import NO_REG_DEST, TYPE_SIZES, Address, Not, ParenList, PredPair, Reg, SpecialReg, Sym, Vector
from .lexer import tokenize
from .parser import parse

__all__ = ["instrument", "TraceLayout", "PointInfo", "Anchor", "InstrumentError", "TRACE_PARAM",
           "HEADER_BYTES", "RECORD_HEADER_BYTES", "LANE_BYTES", "WARP"]

TRACE_PARAM = "__tcsim_trace"
WARP = 32
HEADER_BYTES = 16              # u32 count, u32 pad, u64 pad
RECORD_HEADER_BYTES = 16       # u32 point, u32 mask, u64 clock
LANE_BYTES = 8
DEST_BYTES = WARP * LANE_BYTES  # one destination register, 32 lanes x u64

#: ``.approx`` instructions whose results may legitimately differ between back ends (ulp distance reported)
APPROX_OPCODES = frozenset(("ex2", "lg2", "rcp", "sqrt", "rsqrt", "sin", "cos", "tanh"))
_NO_DEST = NO_REG_DEST
_CONTROL = frozenset(("bra", "brx", "ret", "exit", "call", "trap", "brkpt"))
#: opcodes whose destinations are written asynchronously (reading them right after issue is undefined)
_ASYNC_DEST = frozenset(("wgmma", "tcgen05"))
#: loads: the destination is memory contents, not derived from the address operand's taint
_LOADS = frozenset(("ld", "ldu", "ldmatrix", "atom", "tex", "tld4", "suld", "multimem", "movmatrix"))
_TIMING_SREGS = frozenset(("%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo",
                           "%globaltimer_hi"))
_HWID_SREGS = frozenset(("%smid", "%nsmid", "%warpid", "%nwarpid", "%gridid", "%total_smem_size",
                         "%aggr_smem_size", "%reserved_smem_offset_begin", "%reserved_smem_offset_end",
                         "%reserved_smem_offset_cap", "%reserved_smem_offset_0", "%reserved_smem_offset_1",
                         "%current_graph_exec"))
_SCOPED = re.compile(r"@\d+$")
_DIRECTIVE_STATEMENTS = frozenset((".reg", ".shared", ".local", ".const", ".global", ".param", ".pragma",
                                   ".loc", ".file", ".extern"))


class InstrumentError(TcsimError):
    """The requested instrumentation cannot be done (unknown point line, already instrumented PTX...)."""

    kind = "instrumentation error"


@dataclass
class PointInfo:
    """One trace point: a register-writing instruction of the original PTX."""

    id: int
    line: int                      # 1-based line of the instruction in the *original* PTX
    text: str                      # the instruction as the IR prints it
    opcode: str                    # full opcode with qualifiers
    dests: list                    # [(register name as written, PTX type)]
    classes: list                  # per destination: exact|address|approx|poll|timing|hwid|opaque
    approx_format: str | None = None   # f32/f16/bf16/f64/f16x2/bf16x2 for .approx results
    approx_inputs: bool = False    # some source value derives from an .approx result


@dataclass
class Anchor:
    """A per-warp value written by the prologue, used to relocate addresses (see module docstring)."""

    kind: str                      # param | param_addr | param_generic | shared | shared_generic | global |
    name: str                      # const | const_generic | local | local_generic
    size: int | None               # extent in bytes (None: a launch property, e.g. dynamic SMEM / buffer size)
    offset: int = 0                # kind 'param': the byte offset of the 64-bit word in an array parameter


@dataclass
class TraceLayout:
    """Everything the decoder and the differ need to interpret a trace buffer."""

    source_name: str
    kernel: str
    ring_records: int
    record_bytes: int
    anchor_offset: int
    ring_offset: int
    region_bytes: int
    points: list = field(default_factory=list)      # PointInfo, index = point id
    anchors: list = field(default_factory=list)     # Anchor, index = anchor slot
    skipped: list = field(default_factory=list)     # (line, text, reason)
    params: list = field(default_factory=list)      # original kernel parameter names (the trace param is last)
    fingerprint: str = ""                            # sha256 of the instrumented PTX

    def warps_per_cta(self, block) -> int:
        b = tuple(block) + (1,) * (3 - len(tuple(block)))
        return (b[0] * b[1] * b[2] + WARP - 1) // WARP

    def num_warps(self, grid, block) -> int:
        g = tuple(grid) + (1,) * (3 - len(tuple(grid)))
        return g[0] * g[1] * g[2] * self.warps_per_cta(block)

    def buffer_bytes(self, grid, block) -> int:
        return self.num_warps(grid, block) * self.region_bytes

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TraceLayout":
        d = dict(d)
        d["points"] = [PointInfo(**{**p, "dests": [tuple(x) for x in p["dests"]]}) for p in d["points"]]
        d["anchors"] = [Anchor(**a) for a in d["anchors"]]
        d["skipped"] = [tuple(s) for s in d["skipped"]]
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, s: str) -> "TraceLayout":
        return cls.from_dict(json.loads(s))


# ------------------------------------------------------------------------------------------ text structure


class _Stmt:
    __slots__ = ("kind", "tok", "end_tok", "scope", "opcode")

    def __init__(self, kind, tok, end_tok, scope, opcode=None):
        self.kind, self.tok, self.end_tok, self.scope, self.opcode = kind, tok, end_tok, scope, opcode


def _scan_body(toks, open_tok):
    """Walk the statements of a function body from its '{' token.  Returns (statements, close_tok, scopes)
    where scopes[i] = (parent, has_call) and statements carry the innermost scope id (0 = function body)."""
    K, T = toks.kinds, toks.texts
    i = open_tok + 1
    stack = [0]
    scopes = {0: [None, False]}
    nxt = 1
    stmts = []
    n = len(K)
    while i < n:
        k = K[i]
        if k == "{":
            scopes[nxt] = [stack[-1], False]
            stmts.append(_Stmt("open", i, i, stack[-1]))
            stack.append(nxt)
            nxt += 1
            i += 1
        elif k == "}":
            if len(stack) == 1:
                return stmts, i, scopes
            stmts.append(_Stmt("close", i, i, stack[-1]))
            stack.pop()
            i += 1
        elif k == ";":
            i += 1
        elif k == "id" and i + 1 < n and K[i + 1] == ":":
            stmts.append(_Stmt("label", i, i + 1, stack[-1]))
            i += 2
        elif k == "dir" and T[i] in (".loc", ".file"):
            # no ';': the directive's operands are the rest of its line
            j = i
            while K[j + 1] != "eof" and toks.lines[j + 1] == toks.lines[i]:
                j += 1
            stmts.append(_Stmt("dir", i, j, stack[-1], T[i]))
            i = j + 1
        elif k == "dir":
            j = i
            while K[j] != ";" and K[j] != "eof":
                j += 1
            stmts.append(_Stmt("dir", i, j, stack[-1], T[i]))
            i = j + 1
        elif k == "eof":
            break
        else:  # instruction ('@' guard or opcode)
            j = i
            while K[j] != ";" and K[j] != "eof":
                j += 1
            jj = i
            if K[jj] == "@":
                jj += 1
                if K[jj] == "!":
                    jj += 1
                jj += 1
            op = T[jj]
            stmts.append(_Stmt("ins", i, j, stack[-1], op))
            if op.split(".")[0] == "call":
                s = stack[-1]
                while s:
                    scopes[s][1] = True
                    s = scopes[s][0]
            i = j + 1
    raise InstrumentError("unterminated kernel body while instrumenting")


def _line_offsets(text: str) -> list:
    offs = [0]
    for m in re.finditer("\n", text):
        offs.append(m.end())
    return offs


def _offset(line_offs, toks, i, end=False) -> int:
    base = line_offs[toks.lines[i] - 1] + toks.cols[i] - 1
    return base + (len(toks.texts[i]) if end else 0)


# ------------------------------------------------------------------------------------------ analysis


def _plain(name: str) -> str:
    """The register name as written at its declaration scope (the parser renames scoped ones ``%p@3``)."""
    return _SCOPED.sub("", name)


def _dest_operands(ins):
    """Register destinations of ``ins`` (list of Reg), or (None, reason) when it has none to trace."""
    op = ins.opcode
    if op in _CONTROL:
        return None, "control flow"
    if op in _ASYNC_DEST:
        return None, "destination written asynchronously"
    if op in _NO_DEST or not ins.operands:
        return None, "no register destination"
    if op == "mbarrier" and not any(m.startswith(("arrive", "try_wait", "test_wait", "pending_count"))
                                    for m in ins.mods):
        return None, "no register destination"
    d = ins.operands[0]
    regs = []

    def add(x):
        if isinstance(x, Reg) and x not in regs:
            regs.append(x)

    if isinstance(d, Reg):
        add(d)
    elif isinstance(d, Vector):
        for e in d.elems:
            add(e)
    elif isinstance(d, PredPair):
        add(d.first)
        add(d.second)
    if not regs:
        return None, "no register destination"
    return regs, None


def _source_operands(ins):
    ops = ins.operands[1:] if _dest_operands(ins)[0] else ins.operands
    out = []

    def walk(x):
        if isinstance(x, (Vector, ParenList)):
            for e in x.elems:
                walk(e)
        elif isinstance(x, Not):
            walk(x.operand)
        elif isinstance(x, PredPair):
            walk(x.first)
            walk(x.second)
        else:
            out.append(x)

    for o in ops:
        walk(o)
    return out


def _own_taint(ins, fn) -> set | None:
    """Taint the instruction itself gives its destinations (None: derive from sources)."""
    op = ins.opcode
    if op in APPROX_OPCODES and "approx" in ins.mods:
        return {"approx_result"}
    if op == "mbarrier":
        if any(m.startswith(("try_wait", "test_wait")) for m in ins.mods):
            return {"poll"}
        if any(m.startswith("arrive") for m in ins.mods):
            return {"opaque"}
        return set()
    if op == "createpolicy":
        return {"opaque"}
    if op == "ld" and any(m == "param" or m.startswith("param::") for m in ins.mods):
        if _param_words(ins, fn):
            return {"address"}
        return set()
    if op in _LOADS:
        return set()
    return None


def _param_words(ins, fn) -> list:
    """The (parameter, byte offset) pairs of the 64-bit words a ``ld.param`` of a kernel parameter reads: a 64-bit
    scalar parameter, or 8-byte elements of a ``.b8 p[N]`` array parameter at 8-aligned offsets (how nvcc passes
    structs and the CuTe DSL passes pointers: ``.param .align 8 .b8 p[8]``).  Such a word may be a device pointer,
    so it is a relocation anchor and what is loaded from it is classed ``address`` (an integer that is no pointer
    still compares exactly: relocation only forgives values that differ by the two back ends' placements)."""
    if ins.opcode != "ld" or not any(m == "param" or m.startswith("param::") for m in ins.mods):
        return []
    src = ins.operands[1] if len(ins.operands) > 1 else None
    if not (isinstance(src, Address) and isinstance(src.base, Sym) and src.coords is None):
        return []
    p = fn.param(src.base.name)
    if p is None:
        return []
    width = max((TYPE_SIZES.get(m, 0) for m in ins.mods), default=0)
    if width != 8:
        return []
    count = next((int(m[1:]) for m in ins.mods if m in ("v2", "v4", "v8")), 1)
    base = src.offset + getattr(src.base, "offset", 0)
    if not p.array:
        return [(p, 0)] if TYPE_SIZES.get(p.type, 0) == 8 and base == 0 and count == 1 else []
    return [(p, base + 8 * k) for k in range(count)
            if (base + 8 * k) % 8 == 0 and 0 <= base + 8 * k and base + 8 * k + 8 <= p.size_bytes]


def _taints(fn, symbols) -> dict:
    """Flow-insensitive taint of every register (fixpoint over the kernel body)."""
    taint = {name: set() for name in fn.regs}
    changed = True
    while changed:
        changed = False
        for ins in fn.body:
            dests, _ = _dest_operands(ins)
            if not dests:
                continue
            own = _own_taint(ins, fn)
            if own is None:
                t = set()
                for s in _source_operands(ins):
                    t |= _operand_taint(s, taint, symbols)
                t.discard("approx_result")
                if any("approx_result" in taint.get(s.name, ()) for s in _source_operands(ins)
                       if isinstance(s, Reg)):
                    t.add("approx_dep")
            else:
                t = set(own)
                if ins.opcode not in _LOADS:
                    for s in _source_operands(ins):
                        st = _operand_taint(s, taint, symbols)
                        if "approx_result" in st or "approx_dep" in st:
                            t.add("approx_dep")
            for d in dests:
                cur = taint.setdefault(d.name, set())
                if not t <= cur:
                    cur |= t
                    changed = True
    return taint


def _operand_taint(op, taint, symbols) -> set:
    if isinstance(op, Reg):
        return taint.get(op.name, set())
    if isinstance(op, SpecialReg):
        if op.name in _TIMING_SREGS or op.name.startswith("%pm"):
            return {"timing"}
        if op.name in _HWID_SREGS:
            return {"hwid"}
        return set()
    if isinstance(op, Sym):
        return {"address"} if op.name in symbols else set()
    return set()


def _classify(taint: set, own_approx: bool) -> str:
    for c in ("timing", "hwid", "opaque", "poll"):
        if c in taint:
            return c
    if own_approx:
        return "approx"
    if "address" in taint:
        return "address"
    return "exact"


def _approx_format(ins) -> str | None:
    for t in ("f16x2", "bf16x2", "f16", "bf16", "f32", "f64"):
        if t in ins.mods:
            return t
    return None


# ------------------------------------------------------------------------------------------ code generation


def _value_to_u64(reg: str, typ: str, vec: int) -> list | None:
    """Instructions that put the zero-extended value of ``reg`` into %__tc_v (None: type not traceable)."""
    if vec != 1:
        return None
    if typ == "pred":
        return [f"selp.u64 %__tc_v, 1, 0, {reg};"]
    size = TYPE_SIZES.get(typ)
    if size == 8:
        return [f"mov.b64 %__tc_v, {reg};"]
    if size == 4:
        return [f"mov.b32 %__tc_y, {reg};", "cvt.u64.u32 %__tc_v, %__tc_y;"]
    if size == 2:
        return [f"mov.b16 %__tc_h, {reg};", "cvt.u64.u16 %__tc_v, %__tc_h;"]
    if size == 1 and typ in ("b8", "u8"):
        return [f"cvt.u64.u8 %__tc_v, {reg};"]
    return None


def _record_block(pid: int, dests: list, guard, layout: TraceLayout, guard_reg: str | None) -> str:
    L = ["{",
         ".reg .b32 %__tc_a, %__tc_m, %__tc_x, %__tc_s, %__tc_l, %__tc_y;",
         ".reg .b64 %__tc_r, %__tc_c, %__tc_v, %__tc_o;",
         ".reg .pred %__tc_q, %__tc_w;"]
    if any(TYPE_SIZES.get(t) == 2 for _, t, _v in dests):
        L.append(".reg .b16 %__tc_h;")
    L.append("activemask.b32 %__tc_a;")
    if guard is not None:
        greg = guard_reg or _plain(guard[0].name)
        L.append(f"vote.sync.ballot.b32 %__tc_m, {'!' if guard[1] else ''}{greg}, %__tc_a;")
        L.append("setp.ne.u32 %__tc_w, %__tc_m, 0;")
        mask = "%__tc_m"
    else:
        mask = "%__tc_a"
    L += ["neg.s32 %__tc_x, %__tc_a;",
          "and.b32 %__tc_x, %__tc_x, %__tc_a;",
          "mov.u32 %__tc_l, %lanemask_eq;",
          "setp.eq.u32 %__tc_q, %__tc_x, %__tc_l;"]
    if guard is not None:
        L.append("and.pred %__tc_q, %__tc_q, %__tc_w;")
    L += ["mov.u32 %__tc_s, 0;",
          "@%__tc_q atom.global.add.u32 %__tc_s, [%__tcsim_wb], 1;",
          "bfind.u32 %__tc_x, %__tc_x;",
          "shfl.sync.idx.b32 %__tc_s, %__tc_s, %__tc_x, 31, %__tc_a;"]
    n = layout.ring_records
    if n & (n - 1) == 0:
        L.append(f"and.b32 %__tc_s, %__tc_s, {n - 1};")
    else:
        L.append(f"rem.u32 %__tc_s, %__tc_s, {n};")
    L += [f"mul.wide.u32 %__tc_r, %__tc_s, {layout.record_bytes};",
          "add.u64 %__tc_r, %__tc_r, %__tcsim_wb;",
          "mov.u64 %__tc_c, %clock64;",
          f"mov.u32 %__tc_l, {pid};",
          f"@%__tc_q st.global.v2.u32 [%__tc_r+{layout.ring_offset}], {{%__tc_l, {mask}}};",
          f"@%__tc_q st.global.u64 [%__tc_r+{layout.ring_offset + 8}], %__tc_c;",
          "mov.u32 %__tc_l, %laneid;",
          f"mul.wide.u32 %__tc_o, %__tc_l, {LANE_BYTES};",
          "add.u64 %__tc_r, %__tc_r, %__tc_o;"]
    pred = "@%__tc_w " if guard is not None else ""
    for d, (reg, typ, vec) in enumerate(dests):
        L += _value_to_u64(reg, typ, vec)
        L.append(f"{pred}st.global.u64 [%__tc_r+{layout.ring_offset + RECORD_HEADER_BYTES + DEST_BYTES * d}], "
                 f"%__tc_v;")
    L.append("}")
    return "\t" + "\n\t".join(L) + "\n"


def _prologue(layout: TraceLayout, anchor_code: list) -> str:
    L = ["{",
         ".reg .b32 %__tp_<8>;",
         ".reg .b64 %__tp_d<4>;",
         "mov.u32 %__tp_0, %ctaid.x;", "mov.u32 %__tp_1, %ctaid.y;", "mov.u32 %__tp_2, %ctaid.z;",
         "mov.u32 %__tp_3, %nctaid.x;", "mov.u32 %__tp_4, %nctaid.y;",
         "mad.lo.u32 %__tp_1, %__tp_2, %__tp_4, %__tp_1;",
         "mad.lo.u32 %__tp_0, %__tp_1, %__tp_3, %__tp_0;",          # linear CTA id
         "mov.u32 %__tp_1, %ntid.x;", "mov.u32 %__tp_2, %ntid.y;", "mov.u32 %__tp_3, %ntid.z;",
         "mul.lo.u32 %__tp_4, %__tp_1, %__tp_2;",
         "mul.lo.u32 %__tp_4, %__tp_4, %__tp_3;",
         "add.u32 %__tp_4, %__tp_4, 31;",
         "shr.u32 %__tp_4, %__tp_4, 5;",                             # warps per CTA
         "mov.u32 %__tp_3, %tid.z;", "mov.u32 %__tp_5, %tid.y;",
         "mad.lo.u32 %__tp_3, %__tp_3, %__tp_2, %__tp_5;",
         "mov.u32 %__tp_5, %tid.x;",
         "mad.lo.u32 %__tp_3, %__tp_3, %__tp_1, %__tp_5;",           # linear thread id
         "shr.u32 %__tp_3, %__tp_3, 5;",
         "mad.lo.u32 %__tp_0, %__tp_0, %__tp_4, %__tp_3;",           # global warp index
         f"mul.wide.u32 %__tp_d0, %__tp_0, {layout.region_bytes};",
         f"ld.param.u64 %__tp_d1, [{TRACE_PARAM}];",
         "cvta.to.global.u64 %__tp_d1, %__tp_d1;",
         "add.u64 %__tcsim_wb, %__tp_d1, %__tp_d0;"]
    for k, code in enumerate(anchor_code):
        L += code
        L.append(f"st.global.u64 [%__tcsim_wb+{layout.anchor_offset + 8 * k}], %__tp_d2;")
    L.append("}")
    return "\t// ---- tcsim trace prologue (warp region base, relocation anchors)\n\t" + "\n\t".join(L) + "\n"


def _version_at_least(module, major, minor) -> bool:
    v = module.version or (0, 0)
    return tuple(v) >= (major, minor)


def _anchors(module, fn, first_ins_line) -> tuple[list, list]:
    """Anchors (and the prologue code computing each into %__tp_d2) for the symbols the kernel uses."""
    used = set()
    addr_taken = set()

    def walk(x, in_addr=False):
        if isinstance(x, (Vector, ParenList)):
            for e in x.elems:
                walk(e, in_addr)
        elif isinstance(x, Not):
            walk(x.operand, in_addr)
        elif isinstance(x, Address):
            if isinstance(x.base, Sym):
                used.add(x.base.name)
            for c in x.coords or ():
                walk(c, True)
        elif isinstance(x, Sym):
            used.add(x.name)
            if not in_addr:
                addr_taken.add(x.name)

    for ins in fn.body:
        for o in ins.operands:
            walk(o)
    anchors, code = [], []
    cvta_param = _version_at_least(module, 7, 7)
    for p in fn.params:
        if not p.array and TYPE_SIZES.get(p.type, 0) == 8:
            anchors.append(Anchor("param", p.name, None))
            code.append([f"ld.param.u64 %__tp_d2, [{p.name}];"])
    words = []                               # 64-bit words of array parameters the kernel loads (_param_words)
    for ins in fn.body:
        for p, off in _param_words(ins, fn):
            if p.array and (p.name, off) not in words:
                words.append((p.name, off))
    for name, off in sorted(words, key=lambda w: ([q.name for q in fn.params].index(w[0]), w[1])):
        anchors.append(Anchor("param", name, None, off))
        code.append([f"ld.param.u64 %__tp_d2, [{name}+{off}];"])
    for p in fn.params:
        if p.name in addr_taken:
            anchors.append(Anchor("param_addr", p.name, p.size_bytes))
            code.append([f"mov.u64 %__tp_d2, {p.name};"])
            if cvta_param:
                anchors.append(Anchor("param_generic", p.name, p.size_bytes))
                code.append([f"mov.u64 %__tp_d3, {p.name};", "cvta.param.u64 %__tp_d2, %__tp_d3;"])
    decls = [v for v in module.globals] + [v for v in fn.locals if v.loc.line < first_ins_line]
    for v in decls:
        if v.name not in used or _SCOPED.search(v.name) or v.space not in ("shared", "global", "const", "local"):
            continue
        if v.space == "local" and v not in fn.locals:
            continue
        size = None if (v.linkage == "extern" and v.space == "shared") or \
            (v.dims and v.dims[-1] is None) else v.size_bytes
        sp = v.space
        if sp == "shared":
            anchors.append(Anchor("shared", v.name, size))
            code.append([f"mov.u32 %__tp_6, {v.name};", "cvt.u64.u32 %__tp_d2, %__tp_6;"])
        else:
            anchors.append(Anchor(sp, v.name, size))
            code.append([f"mov.u64 %__tp_d2, {v.name};"])
        if sp != "global":
            anchors.append(Anchor(f"{sp}_generic", v.name, size))
            code.append([f"mov.u64 %__tp_d3, {v.name};", f"cvta.{sp}.u64 %__tp_d2, %__tp_d3;"])
    return anchors, code


# ------------------------------------------------------------------------------------------ the rewriter


def instrument(ptx_text: str, source_name: str = "<ptx>", kernel: str | None = None, points="all",
               ring_records: int = 256):
    """Rewrite ``kernel`` of ``ptx_text`` to trace register writes; returns ``(new_text, TraceLayout)``.

    ``points``: ``'all'`` (every traceable instruction of the kernel) or a list of 1-based PTX line numbers
    of the original text (every instruction starting on such a line; a line with none is an error).
    """
    if not isinstance(ring_records, int) or ring_records < 1:
        raise InstrumentError(f"ring_records must be a positive integer, got {ring_records!r}")
    module = parse(ptx_text, source_name)
    try:
        fn = module.kernel(kernel)
    except KeyError as e:
        raise LaunchError(str(e.args[0])) from None
    if fn.param(TRACE_PARAM) is not None:
        raise InstrumentError(f"kernel {fn.name} already has a {TRACE_PARAM} parameter (instrumented twice?)",
                              fn.loc)
    for name in fn.regs:
        if _plain(name).startswith(("%__tcsim", "%__tc_", "%__tp_")):
            raise InstrumentError(f"kernel {fn.name} declares register {name}, which collides with tcsim's "
                                  f"instrumentation registers (%__tcsim*, %__tc_*, %__tp_*)", fn.loc)
    if not fn.body:
        raise InstrumentError(f"kernel {fn.name} has no instructions to trace", fn.loc)

    toks = tokenize(ptx_text, source_name)
    K, T = toks.kinds, toks.texts
    line_offs = _line_offsets(ptx_text)
    # locate the kernel header: '.entry' NAME ( params ) directives { body }
    tok_entry = None
    for i in range(len(K) - 1):
        if K[i] == "dir" and T[i] == ".entry" and toks.lines[i] >= fn.loc.line:
            j = i + 1
            if K[j] == "id" and T[j] == fn.name:
                tok_entry = j
                break
    if tok_entry is None:
        raise InstrumentError(f"cannot find the header of kernel {fn.name} in the text", fn.loc)
    j = tok_entry + 1
    param_close = None
    if K[j] == "(":
        depth = 0
        while True:
            if K[j] == "(":
                depth += 1
            elif K[j] == ")":
                depth -= 1
                if depth == 0:
                    param_close = j
                    break
            j += 1
        j += 1
    while K[j] != "{":
        j += 1
    body_open = j
    stmts, body_close, scopes = _scan_body(toks, body_open)

    # map instruction start positions to statements
    by_pos = {(toks.lines[s.tok], toks.cols[s.tok]): s for s in stmts if s.kind == "ins"}
    ins_stmts = []
    for ins in fn.body:
        s = by_pos.get((ins.loc.line, ins.loc.col))
        if s is None:
            raise InstrumentError(f"internal: instruction at {ins.loc} not found in the token stream", ins.loc)
        ins_stmts.append(s)

    # the prologue goes before the first body-level statement that is not a declaration directive
    first = None
    for s in stmts:
        if s.kind == "dir" and s.opcode in _DIRECTIVE_STATEMENTS:
            continue
        first = s
        break
    first_line = toks.lines[first.tok] if first is not None else toks.lines[body_close]

    # choose points
    wanted = None
    if points != "all":
        if isinstance(points, (int, str)):
            points = [points]
        try:
            wanted = {int(p) for p in points}
        except (TypeError, ValueError):
            raise InstrumentError(f"points must be 'all' or a list of PTX line numbers, got {points!r}") from None
    lines_seen = {}
    symbols = _symbol_names(module, fn)
    taint = _taints(fn, symbols)
    chosen = []      # (ins, stmt, dests [(plain name, type, vec, class)])
    skipped = []
    for ins, s in zip(fn.body, ins_stmts):
        if wanted is not None and ins.loc.line not in wanted:
            continue
        regs, why = _dest_operands(ins)
        if regs is None:
            skipped.append((ins.loc.line, str(ins), why))
            lines_seen.setdefault(ins.loc.line, why)
            continue
        sc = s.scope
        in_call = False
        while sc:
            if scopes[sc][1]:
                in_call = True
            sc = scopes[sc][0]
        if in_call:
            why = "inside a call-sequence scope"
            skipped.append((ins.loc.line, str(ins), why))
            lines_seen.setdefault(ins.loc.line, why)
            continue
        dests, bad = [], None
        for r in regs:
            typ, vec = fn.regs.get(r.name, (None, 1))
            if typ is None or _value_to_u64("%x", typ, vec) is None:
                bad = f"destination {_plain(r.name)} has type .{typ}{'' if vec == 1 else f' x{vec}'}, not traced"
                break
            dests.append((r, typ, vec))
        if bad:
            skipped.append((ins.loc.line, str(ins), bad))
            lines_seen.setdefault(ins.loc.line, bad)
            continue
        lines_seen[ins.loc.line] = None
        chosen.append((ins, s, dests))
    if wanted is not None:
        missing = sorted(l for l in wanted if l not in lines_seen)
        if missing:
            raise InstrumentError(f"no instruction of kernel {fn.name} starts on line(s) "
                                  f"{', '.join(map(str, missing))}")
        untraceable = sorted(l for l in wanted if lines_seen.get(l, None) is not None and
                             not any(c[0].loc.line == l for c in chosen))
        if untraceable:
            l0 = untraceable[0]
            raise InstrumentError(f"line {l0} of kernel {fn.name} has no traceable register write "
                                  f"({lines_seen[l0]})", SourceLoc(source_name, l0, 1, toks.line_text(l0)))

    max_dests = max((len(d) for _, _, d in chosen), default=0)
    record_bytes = RECORD_HEADER_BYTES + DEST_BYTES * max_dests
    anchors, anchor_code = _anchors(module, fn, first_line)
    anchor_offset = HEADER_BYTES
    ring_offset = (anchor_offset + 8 * len(anchors) + 15) // 16 * 16
    region_bytes = (ring_offset + ring_records * record_bytes + 15) // 16 * 16
    if region_bytes >= 1 << 31:
        raise InstrumentError(f"{ring_records} records of {record_bytes} bytes make a {region_bytes}-byte region "
                              f"per warp; use fewer ring_records (at most 2 GiB per warp)")
    layout = TraceLayout(source_name=source_name, kernel=fn.name, ring_records=ring_records,
                         record_bytes=record_bytes, anchor_offset=anchor_offset, ring_offset=ring_offset,
                         region_bytes=region_bytes, anchors=anchors, skipped=skipped,
                         params=[p.name for p in fn.params])

    edits = []   # (offset, order, text)
    # 1. the trace parameter
    if param_close is not None:
        if K[param_close - 1] != "(":
            edits.append((_offset(line_offs, toks, param_close - 1, end=True), 0,
                          f",\n\t.param .u64 {TRACE_PARAM}"))
        else:
            edits.append((_offset(line_offs, toks, param_close), 0, f"\n\t.param .u64 {TRACE_PARAM}\n"))
    else:
        edits.append((_offset(line_offs, toks, tok_entry, end=True), 0, f"(\n\t.param .u64 {TRACE_PARAM}\n)"))
    # 2. function-scope register + prologue
    edits.append((_offset(line_offs, toks, body_open, end=True), 0,
                  "\n\t.reg .b64 \t%__tcsim_wb;\t// tcsim trace: this warp's region\n"))
    ptok = first.tok if first is not None else body_close
    pos = _offset(line_offs, toks, ptok)
    if ptx_text[line_offs[toks.lines[ptok] - 1]:pos].strip() == "":
        pos = line_offs[toks.lines[ptok] - 1]
    prologue = _prologue(layout, anchor_code)
    guard_capture = False
    # 3. record blocks
    for pid, (ins, s, dests) in enumerate(chosen):
        classes, approx_inputs = [], False
        own_approx = ins.opcode in APPROX_OPCODES and "approx" in ins.mods
        src_t = set()
        for so in _source_operands(ins):
            src_t |= _operand_taint(so, taint, symbols)
        if "approx_result" in src_t or "approx_dep" in src_t:
            approx_inputs = True
        own = _own_taint(ins, fn)
        for r, typ, vec in dests:
            t = set(own) if own is not None else set(src_t)
            t.discard("approx_result")
            classes.append(_classify(t, own_approx))
        layout.points.append(PointInfo(
            id=pid, line=ins.loc.line, text=str(ins), opcode=ins.full_opcode,
            dests=[(_plain(r.name), typ) for r, typ, _ in dests], classes=classes,
            approx_format=_approx_format(ins) if own_approx else None, approx_inputs=approx_inputs))
        guard_reg = None
        if ins.guard is not None and any(r.name == ins.guard[0].name for r, _, _ in dests):
            # the instruction overwrites its own guard: capture the guard before it
            guard_capture = True
            guard_reg = "%__tcsim_g"
            start = _offset(line_offs, toks, s.tok)
            edits.append((start, 1, f"mov.pred %__tcsim_g, {_plain(ins.guard[0].name)};\n\t"))
        block = _record_block(pid, [(_plain(r.name), typ, vec) for r, typ, vec in dests], ins.guard, layout,
                              guard_reg)
        end = _offset(line_offs, toks, s.end_tok, end=True)
        rest = ptx_text[end:ptx_text.find("\n", end) if "\n" in ptx_text[end:] else len(ptx_text)]
        if rest.strip() == "" or rest.strip().startswith("//"):
            nl = ptx_text.find("\n", end)
            if nl < 0:
                edits.append((len(ptx_text), 2, "\n" + block))
            else:
                edits.append((nl + 1, 2, block))
        else:
            edits.append((end, 2, "\n" + block + "\t"))
    edits.append((pos, 1, prologue))
    if guard_capture:
        edits.append((_offset(line_offs, toks, body_open, end=True), 1,
                      "\t.reg .pred \t%__tcsim_g;\t// tcsim trace: captured guard\n"))
    out = ptx_text
    for off, _, txt in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:off] + txt + out[off:]
    layout.fingerprint = hashlib.sha256(out.encode()).hexdigest()
    return out, layout


def _symbol_names(module, fn) -> set:
    names = {v.name for v in module.globals} | {v.name for v in fn.locals} | {p.name for p in fn.params}
    return names
