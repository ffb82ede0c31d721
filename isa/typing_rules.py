"""PTX ISA operand typing rules of the data-movement instructions (mov, ld, ldu, st, cvta), as ptxas enforces them.

Each rule below cites its PTX ISA 9.1 section and was verified against ``ptxas -arch=sm_90a`` and ``sm_100a`` of
CUDA 13.0 with one-line probes (a valid kernel and the same kernel with the one construct changed; the
``tests/isa/test_typing_rules.py`` table holds every probe with ptxas's verdict and replays it through ptxas where
ptxas is on PATH).  The diagnostics use ptxas's wording where it is short.

Operand kinds (§6.4, §9.7.9.1, §9.7.9.8, §9.7.9.10, §9.7.9.19)

* A destination is a register (``mov``/``ld``/``cvta``): an immediate is "Result register required", ``_`` is
  "Result discard mode is not allowed", a special register "Read-only special register cannot be destination
  argument" (``mov``) or "Special register argument not allowed" (``ld``, ``cvta``), a symbol or an address
  "Argument 0 ... must be register".
* ``_`` is never a source ("Sink '_' not allowed as a source operand"); an address ``[a]`` is a source only where
  the form takes one; a variable name is a source of ``mov`` and ``cvta`` (its address), not of ``st``.
* Special registers (§10) are sources of ``mov`` (and ``cvt``) only; every other instruction rejects them
  ("Special register argument not allowed for instruction").  A ``mov`` of a special register needs a type of its
  size: 32-bit ones (``%tid.x``, ``%laneid``, ``%lanemask_*``, ``%smid``, ``%*smem*`` ...) take ``.b32 .u32 .s32``
  and also the 16-bit types, 64-bit ones (``%clock64``, ``%globaltimer``, ``%pm*_64``, ``%current_graph_exec``)
  ``.b64 .u64 .s64``; ``%gridid`` either; ``%is_explicit_cluster`` only ``.pred``; never a float type.  A
  special register without its component (``%tid``) is a ``.v4`` source.

Types and sizes (§6.4.1 operand type agreement; §6.4.2 relaxed rules for ``ld``/``st``)

* ``mov`` types: ``.pred .b16 .b32 .b64 .b128 .u16 .u32 .u64 .s16 .s32 .s64 .f32 .f64`` (no 8-bit, ``.f16``,
  ``.bf16``, packed types); no state space ("No state space qualifier expected"); ``.v2``/``.v4`` of at most
  128 bits ("Vector type too large") and not of ``.pred``; register operands agree with the type exactly in size
  (:func:`tcsim.isa.operand_rules.compatible`: bit types agree with any type of their size, signed and unsigned
  integers with each other, floats only with themselves and bit types).
* ``ld``/``ldu``/``st`` types: ``.b8-.b128 .u8-.u64 .s8-.s64 .f32 .f64``; exactly one state space; ``ldu`` only
  ``.global`` (or generic); ``.nc`` only ``.global``.  The value register may be *wider* than the type (§6.4.2):
  a bit-type register takes any type of its size or smaller; an integer register any bit or integer type of its
  size or smaller; a float register a bit type of its size or smaller or exactly its own type.  A vector's
  elements have one size ("Incompatible elements of vector expression"); the first register element follows the
  scalar rule.  ``ld`` vector elements are registers or ``_``; ``st`` vector elements registers or immediates.
* Immediates: an integer is no ``.f32``/``.f64`` operand; an ``0f`` literal is an operand of ``.f32``,
  ``.f64`` and ``.b32`` only, a ``0d`` or decimal literal of ``.f32``, ``.f64`` and ``.b64`` only ("Arguments
  mismatch").  Integer immediates are not range-checked (ptxas truncates them to the type).
* ``mov`` packing (``mov.b64 %rd, {%r1, %r2}``, §9.7.9.1): type ``.b16 .b32 .b64 .b128``, 2 or 4 elements
  ("Illegal vector size") of one size that add up to the type's size.
* Addresses (§6.4.1 addresses as operands, §5.1): a register base is a bit or integer register (not a predicate or
  float); under ``.address_size 64`` a ``.global`` or generic address needs a 64-bit base (ptxas: "32-Bit ABI ...
  is not supported", a fatal error); a variable base is a variable of the instruction's state space (generic:
  ``.global .shared .local .const``, not a kernel parameter) -- "State space mismatch between instruction and
  address"; an absolute address ``[imm]`` only in ``.local`` ("Immediate addresses allowed only for .local state
  space"); a kernel parameter is read-only ("Illegal to write to function input parameter").
* ``cvta`` (§9.7.9.19): the size is the address size (``.u32`` under ``.address_size 64`` is rejected like a
  32-bit address); no vector qualifier; operands are registers of the size (a source may be an integer or a
  variable of the state space).

Wider-than-128-bit ``ld``/``st`` (``.v8.b32``, ``.v4.b64``) need PTX ISA 8.8 and sm_100 or newer.
``.volatile`` does not apply to ``.param``, ``.local`` or ``.const``; ``st.param`` writes a call's ``.param``
variable by name (ptxas 13.0 crashes on ``st.param [%reg]``).

Rules for every instruction (run by the decode table before each decoder, ``tcsim.semantics.registry``):
:func:`reject_label_operands` (labels only as branch and call operands),
:func:`reject_special_registers` (special registers only as ``mov``/``cvt`` sources; an integer ``cvt`` reads any
integer special register, :func:`tcsim.isa.convert_forms.check_cvt_operands`), :func:`check_address_bases`
(address bases are integer registers; a generic ``mbarrier``/``atom``/``red``/``prefetch`` address needs 64 bits)
and :func:`reject_vector_operands` (no ``{a, b}`` operand on scalar-only instructions: mapa, bar, mbarrier,
elect, shfl, ...).

The operand rules of cp.async*, tensormap.replace, fence.proxy.tensormap, ldmatrix/stmatrix/movmatrix and tcgen05
are :func:`check_family_operands`; call arguments are :mod:`tcsim.isa.decl_rules`.  Deliberately stricter than
ptxas (typing_probes.tsv, tests/isa/test_typing_rules.py's KNOWN): a predicate register inside ldmatrix/stmatrix
vectors or as a movmatrix operand, and a float register as fence.proxy.tensormap's address (ptxas 13.0 accepts
them; what the hardware does with them is undefined).
"""
from __future__ import annotations

from . import ir
from .errors import UnsupportedError, VerifyError
from .operand_rules import compatible

SPACE_QUALS = ("global", "shared", "shared::cta", "shared::cluster", "local", "param", "param::entry",
               "param::func", "const")
MOV_TYPES = ("pred", "b16", "b32", "b64", "b128", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64")
LDST_TYPES = ("b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f32",
              "f64")

#: special registers of 64 bits (PTX ISA §10); %gridid is .u64 but ptxas also moves it to 32 bits
SREG_64 = frozenset(["%clock64", "%globaltimer", "%current_graph_exec"] + [f"%pm{i}_64" for i in range(8)])
SREG_ANY = frozenset(["%gridid"])
SREG_PRED = frozenset(["%is_explicit_cluster"])
SREG_VECTOR = frozenset(["%tid", "%ntid", "%ctaid", "%nctaid", "%clusterid", "%nclusterid", "%cluster_ctaid",
                         "%cluster_nctaid"])
#: special registers ptxas accepts and tcsim does not model (UnsupportedError at check time, never at run time)
SREG_UNSUPPORTED = frozenset(["%current_graph_exec"])


def _size(t: str) -> int:
    return 0 if t == "pred" else ir.TYPE_SIZES.get(t, {"f16x2": 4, "bf16x2": 4}.get(t, 0))


def _kind(t: str) -> str:
    if t == "pred":
        return "pred"
    if t.startswith("b") and not t.startswith("bf") or t in ("f16x2", "bf16x2"):
        return "bits"
    if t[0] in "us":
        return "int"
    return "float"


def _err(ins, msg: str, expected: str | None = None) -> VerifyError:
    return VerifyError(msg, ins.loc, expected=expected)


def _mismatch(ins, why: str) -> VerifyError:
    return VerifyError(f"Arguments mismatch for instruction '{ins.opcode}': {why}", ins.loc)


def _reg_type(info, op) -> str | None:
    if info is None or not isinstance(op, ir.Reg):
        return None
    t = info.function.regs.get(op.name)
    return t[0] if t else None


def relaxed_ok(reg_type: str, typ: str) -> bool:
    """§6.4.2: may a register of ``reg_type`` be the value operand of an ld/st of type ``typ``?"""
    if reg_type == "pred" or typ == "pred":
        return False
    if "b128" in (reg_type, typ):
        return reg_type == typ
    if _size(reg_type) < _size(typ):
        return False
    rk, tk = _kind(reg_type), _kind(typ)
    if rk == "float":
        return tk == "bits" or reg_type == typ
    if rk == "int":
        return tk in ("bits", "int")
    return True


def imm_ok(imm: ir.Imm, typ: str) -> bool:
    """May the immediate ``imm`` be an operand of type ``typ`` (mov, st)?"""
    if imm.kind == "int":
        return _kind(typ) != "float"
    if typ in ("f32", "f64"):
        return True
    return typ == ("b32" if imm.kind == "f32" else "b64")


#: instructions whose address operand without a state-space qualifier is a generic address (tcgen05's [taddr] are
#: 32-bit tensor-memory addresses, ld/st are checked by check_memop)
GENERIC_ADDRESS_OPCODES = frozenset(("mbarrier", "atom", "red", "prefetch", "prefetchu"))


def check_address_bases(ins: ir.Instruction, info) -> None:
    """Every address operand ``[reg+off]`` of every instruction (PTX ISA §6.4.1): the base register is an integer
    or bit-type register ("Illegal to use symbol of type .pred as address operand"), and an instruction that names
    no state space addresses generic memory, which needs a 64-bit base under ``.address_size 64``."""
    spaced = any(m.split("::")[0] in ("global", "shared", "local", "param", "const") for m in ins.mods)
    for op in ins.operands:
        if not (isinstance(op, ir.Address) and isinstance(op.base, ir.Reg)):
            continue
        rt = _reg_type(info, op.base)
        if rt is None:
            continue
        if rt == "pred" or _kind(rt) == "float":
            raise _err(ins, f"Illegal to use symbol '{op.base}' of type .{rt} as address operand",
                       "an integer or bit-type register")
        if not spaced and _size(rt) == 4 and _addr64(info) and ins.opcode in GENERIC_ADDRESS_OPCODES:
            raise _err(ins, f"a generic address needs a 64-bit register under .address_size 64; {op.base} is .{rt} "
                            "(ptxas: 32-bit addressing is not supported on sm_90 or higher)",
                       f"{ins.opcode}.shared::cta... for a shared-memory address in a 32-bit register")


#: instructions none of whose operands is a vector ``{a, b}`` (ptxas: "Vector operand is not allowed" /
#: "Arguments mismatch"); the others (ld/st/mov/mma/wgmma/tcgen05/tensor copies/tex/...) check their own
SCALAR_OPERAND_OPCODES = frozenset(("mapa", "getctarank", "isspacep", "nanosleep", "bar", "barrier", "mbarrier",
                                    "elect", "vote", "match", "redux", "shfl", "createpolicy", "cvta", "prefetch",
                                    "prefetchu", "activemask", "setmaxnreg", "griddepcontrol", "fence", "membar",
                                    "movmatrix"))


#: instructions without an address operand whose immediates are integers (ptxas: "Arguments mismatch")
INTEGER_OPERAND_OPCODES = frozenset(("shfl", "nanosleep", "bar", "barrier", "elect", "vote", "match", "redux",
                                     "activemask", "mapa", "getctarank", "isspacep", "setmaxnreg"))


#: operands typed by the instruction's own .b32/.b64 type (shfl's a, b, c; match's value): a float immediate of
#: that size is a bit pattern there (ptxas 13.0 accepts ``shfl.sync.bfly.b32 d, a, 0f00000000, 31, -1`` and
#: ``match.any.sync.b64 d, 0d..., m``, rejects 0d on .b32 / 0f on .b64 and any float membermask)
TYPED_VALUE_OPERANDS = {"shfl": (1, 2, 3), "match": (1,)}
_FLOAT_LITERAL_SIZE = {"f32": "b32", "f64": "b64"}


def _bit_pattern_operand(ins: ir.Instruction, k: int, op) -> bool:
    return (isinstance(op, ir.Imm) and k in TYPED_VALUE_OPERANDS.get(ins.opcode, ())
            and _FLOAT_LITERAL_SIZE.get(op.kind) in ins.mods)


def reject_vector_operands(ins: ir.Instruction) -> None:
    """No vector operand on scalar-only instructions; no ``_`` source anywhere (ptxas: "Sink '_' not allowed as a
    source operand" or a syntax error); no address and no float immediate on the instructions of
    :data:`INTEGER_OPERAND_OPCODES`."""
    first_is_dst = ins.opcode not in ir.NO_REG_DEST
    for k, op in enumerate(ins.operands):
        if isinstance(op, ir.Sink) and (k > 0 or not first_is_dst):
            raise _err(ins, f"Sink '_' not allowed as a source operand of '{ins.opcode}'")
    if ins.opcode in INTEGER_OPERAND_OPCODES:
        for k, op in enumerate(ins.operands):
            if isinstance(op, ir.Address) or (isinstance(op, ir.Imm) and op.kind != "int"
                                              and not _bit_pattern_operand(ins, k, op)):
                raise _mismatch(ins, f"operand {op} is not an integer value")
    if ins.opcode in SCALAR_OPERAND_OPCODES or (ins.opcode == "cp" and "bulk" in ins.mods and "tensor" not in ins.mods
                                                and "prefetch" not in ins.mods):
        for op in ins.operands:
            if isinstance(op, ir.Vector):
                raise _err(ins, f"Vector operand is not allowed for instruction '{ins.opcode}' ({op})")


#: register operands of a fixed integer size (operand index -> bytes); ptxas 13.0: ``nanosleep.u32`` takes a 32-bit
#: integer or bit-size register (b16/b64/f32 registers are "Arguments mismatch")
INTEGER_REGISTER_OPERANDS = {"nanosleep": {0: 4}}


def check_integer_registers(ins: ir.Instruction, info) -> None:
    """The register operands of :data:`INTEGER_REGISTER_OPERANDS` have the integer size they need; then the operand
    rules of the async-copy, tensormap, fence.proxy, matrix and tcgen05 families (:func:`check_family_operands`)."""
    for k, size in INTEGER_REGISTER_OPERANDS.get(ins.opcode, {}).items():
        if k < len(ins.operands):
            _int_register(ins, info, ins.operands[k], size)
    check_family_operands(ins, info)


def _int_register(ins, info, op, size: int, pred_ok: bool = False, what: str = "") -> None:
    """``op``, when it is a register, is an integer or bit-size register of ``size`` bytes (``pred_ok``: ptxas also
    takes a predicate there)."""
    rt = _reg_type(info, op)
    if rt is None or (pred_ok and rt == "pred"):
        return
    if _size(rt) != size or _kind(rt) not in ("int", "bits") or rt.endswith("x2"):
        raise _mismatch(ins, f"{what or 'operand'} {op} is a .{rt} register, not a {8 * size}-bit integer")


def _sized_register(ins, info, op, size: int, what: str) -> None:
    """``op``, when it is a register, has ``size`` bytes (any kind but a predicate)."""
    rt = _reg_type(info, op)
    if rt is not None and (rt == "pred" or _size(rt) != size):
        raise _mismatch(ins, f"{what} {op} is a .{rt} register, not a {8 * size}-bit one")


def _int_immediate_or_register(ins, info, op, size: int, what: str, pred_ok: bool = False) -> None:
    if isinstance(op, ir.Imm) and op.kind != "int":
        raise _mismatch(ins, f"{what} {op} is not an integer")
    _int_register(ins, info, op, size, pred_ok, what)


def check_family_operands(ins: ir.Instruction, info) -> None:
    """Register and operand-kind rules ptxas 13.0 enforces on cp.async*, tensormap.replace, fence.proxy.tensormap,
    ldmatrix/stmatrix/movmatrix and tcgen05 operands (probes in tests/isa/typing_probes.tsv):

    * ``cp.async`` (§9.7.9.25.3): the src-size operand is a 32-bit integer register (ptxas also takes a
      predicate there); the cache policy of ``.L2::cache_hint`` a 64-bit one (the decoder checks it).
    * ``cp.async.bulk`` / ``.prefetch`` (§9.7.9.25.4): the size is a 32-bit integer register or an integer.
    * ``cp.async.bulk.tensor`` / ``.prefetch.tensor`` (§9.7.9.25.5): the coordinates are 32-bit (ptxas takes any
      32-bit register and predicates: "Incompatible elements of vector expression" for 16- and 64-bit ones).
    * ``tensormap.replace`` (§9.7.9.26): the new value is an immediate or a register of the field's size: any
      64-bit one (f64 too) for .b64, any 32-bit one for a .b32 field without an ordinal (rank, elemtype...), a
      32-bit integer one for an ordinal field (global_dim, box_dim...: ptxas 13.0 rejects an f32 register there).
    * ``fence.proxy.tensormap::generic`` (§9.7.13.4): the size is an immediate (128), not a register.
    * ``ldmatrix`` / ``stmatrix`` (§9.7.14.5.15-16): the register operand is a vector even for ``.x1`` ("Vector of
      size 1 is expected"); ``movmatrix`` (§9.7.14.5.17) takes no vector.
    * ``mbarrier``, ``bar``/``barrier``, ``mapa``: no float register operand (counts, phases, ids, ranks); no
      predicate in ``mapa`` nor in ``mbarrier`` but as test_wait/try_wait's result.
    * ``tcgen05`` (§9.7.16): tensor-memory addresses ``[taddr]`` of mma/cp/shift/ld/st have a 32-bit base;
      ``alloc``'s column count and ``dealloc``'s address and count are 32-bit integers.
    """
    op, mods, ops = ins.opcode, ins.mods, ins.operands
    if op == "cp" and "async" in mods:
        if "bulk" not in mods:
            hint = "L2::cache_hint" in mods
            n_src = len(ops) - (1 if hint else 0)
            if n_src >= 4:
                _int_register(ins, info, ops[3], 4, pred_ok=True, what="the src-size operand")
        elif "tensor" in mods:
            for o in ops:
                if isinstance(o, ir.Address) and o.coords is not None:
                    for e in o.coords:
                        rt = _reg_type(info, e)
                        if rt is not None and rt != "pred" and _size(rt) != 4:
                            raise _err(ins, f"Incompatible elements of vector expression: coordinate {e} is a .{rt} "
                                            "register", "32-bit coordinates")
        elif "prefetch" in mods:
            if len(ops) >= 2:
                _int_immediate_or_register(ins, info, ops[1], 4, "the size")
        elif len(ops) >= 3:
            if isinstance(ops[2], ir.Address):
                raise _mismatch(ins, f"the size {ops[2]} is no value")
            _int_immediate_or_register(ins, info, ops[2], 4, "the size")
    elif op == "tensormap" and mods and mods[0] == "replace" and ops:
        if mods[-1] == "b32" and len(ops) == 3:     # an ordinal field (global_dim...): ptxas takes no f32 there
            _int_register(ins, info, ops[-1], 4, what="the new value")
        elif mods[-1] == "b32":
            _sized_register(ins, info, ops[-1], 4, "the new value")
        elif mods[-1] == "b64":
            _sized_register(ins, info, ops[-1], 8, "the new value")
    elif op == "fence" and any(m.startswith("proxy") or m.startswith("tensormap") for m in mods):
        for o in ops[1:]:
            if isinstance(o, ir.Reg):
                raise _mismatch(ins, f"the size {o} must be an immediate (128)")
    elif op == "ldmatrix" and ops and not isinstance(ops[0], ir.Vector):
        raise _err(ins, f"Vector of size 1 is expected for argument 0 of instruction 'ldmatrix' ({ops[0]})",
                   "{d} even for .x1")
    elif op == "stmatrix" and len(ops) > 1 and not isinstance(ops[1], ir.Vector):
        raise _err(ins, f"Vector of size 1 is expected for argument 1 of instruction 'stmatrix' ({ops[1]})",
                   "{r} even for .x1")
    elif op in ("mbarrier", "bar", "barrier", "mapa"):
        # counts, phases, barrier ids and ranks are integers (ptxas: "Arguments mismatch" for a float register;
        # mapa takes no predicate either, mbarrier a predicate only as test_wait/try_wait's result)
        poll = op == "mbarrier" and any(m in ("test_wait", "try_wait") for m in mods)
        for k, o in enumerate(ops):
            rt = _reg_type(info, o)
            if rt is None:
                continue
            pred_bad = op == "mapa" or (op == "mbarrier" and not (poll and k == 0))
            if _kind(rt) == "float" or (rt == "pred" and pred_bad):
                raise _mismatch(ins, f"operand {o} is a .{rt} register, not an integer")
    elif op == "tcgen05" and mods:
        sub = mods[0]
        if sub in ("mma", "cp", "shift", "ld", "st"):
            for o in ops:
                if isinstance(o, ir.Address) and isinstance(o.base, ir.Reg):
                    _int_register(ins, info, o.base, 4, what="the tensor-memory address")
        elif sub == "alloc" and len(ops) >= 2:
            _int_register(ins, info, ops[1], 4, what="the column count")
        elif sub == "dealloc":
            for o in ops[:2]:
                _int_register(ins, info, o, 4, what="the operand")


def reject_special_registers(ins: ir.Instruction) -> None:
    """Special registers are sources of ``mov`` and ``cvt`` only (ptxas: "Special register argument not allowed
    for instruction")."""
    if ins.opcode in ("mov", "cvt"):
        return

    def has(op) -> bool:
        if isinstance(op, ir.SpecialReg):
            return True
        if isinstance(op, (ir.Vector, ir.ParenList)):
            return any(has(e) for e in op.elems)
        if isinstance(op, ir.Not):
            return has(op.operand)
        if isinstance(op, ir.PredPair):
            return has(op.first) or has(op.second)
        return False

    for op in ins.operands:
        if has(op):
            raise _err(ins, f"Special register argument not allowed for instruction '{ins.opcode}'",
                       "a register (mov the special register into one first)")


def reject_label_operands(ins: ir.Instruction) -> None:
    """A label is an operand of ``bra``, ``brx.idx`` and ``call`` only (PTX ISA 9.1 §4.4 labels name branch and
    call targets; ptxas 13.0: "Arguments mismatch for instruction 'mov'" for ``mov.u64 %rd1, L``)."""
    if ins.opcode in ("bra", "brx", "call"):
        return

    def has(op) -> bool:
        if isinstance(op, ir.LabelRef):
            return True
        if isinstance(op, (ir.Vector, ir.ParenList)):
            return any(has(e) for e in op.elems)
        if isinstance(op, ir.Not):
            return has(op.operand)
        if isinstance(op, ir.Address):
            return has(op.base)
        return False

    for op in ins.operands:
        if has(op):
            raise _err(ins, f"Arguments mismatch for instruction '{ins.opcode}': the label {op} is an operand of a "
                       "branch or call only", "a register, an immediate or a variable")


# ------------------------------------------------------------------------------------------------ operand kinds
def check_destination(ins, op, what: str = "") -> None:
    """A scalar destination must be a register."""
    if isinstance(op, ir.Reg):
        return
    if isinstance(op, ir.Imm):
        raise _err(ins, f"Result register required for instruction '{ins.opcode}'{what}")
    if isinstance(op, ir.Sink):
        raise _err(ins, f"Result discard mode is not allowed for instruction '{ins.opcode}'")
    if isinstance(op, ir.SpecialReg):
        if ins.opcode == "mov":
            raise _err(ins, f"Read-only special register cannot be destination argument ({op})")
        raise _err(ins, f"Special register argument not allowed for instruction '{ins.opcode}'")
    raise _err(ins, f"Argument 0 of instruction '{ins.opcode}': must be register (got {op})")


def _no_sink_source(ins, op) -> None:
    if isinstance(op, ir.Sink):
        raise _err(ins, "Sink '_' not allowed as a source operand")


def _vector_sizes(ins, info, vec: ir.Vector) -> None:
    """The register elements of a vector operand have one size."""
    sizes = {_size(t) for t in (_reg_type(info, e) for e in vec.elems) if t is not None and t != "pred"}
    if len(sizes) > 1:
        raise _err(ins, f"Incompatible elements of vector expression {vec}", "elements of one size")


# ------------------------------------------------------------------------------------------------ mov
def check_mov(ins: ir.Instruction, info) -> None:
    """The typing rules of ``mov`` (PTX ISA §9.7.9.1; see the module docstring)."""
    for m in ins.mods:
        if m in SPACE_QUALS:
            raise _err(ins, "No state space qualifier expected for instruction 'mov'",
                       "mov.type d, var (the address of a variable) or cvta for generic addresses")
    for m in ins.mods:
        if not (m in ir.TYPE_SIZES or m in ("v2", "v4", "v8")):
            raise _err(ins, f"Unknown modifier '.{m}' for instruction 'mov'")
    types = [m for m in ins.mods if m in ir.TYPE_SIZES or m in ("f16x2", "bf16x2", "tf32") or m in LDST_TYPES]
    if len(types) == 1 and types[0] not in MOV_TYPES:
        raise _err(ins, f"Unexpected instruction types specified for 'mov' (.{types[0]})",
                   "one of " + " ".join("." + t for t in MOV_TYPES))
    if len(types) != 1 or len(ins.operands) != 2:
        return                                   # parse_mov reports these
    typ = types[0]
    vecq = [m for m in ins.mods if m in ("v2", "v4", "v8")]
    dst, src = ins.operands
    if typ == "b128" and not vecq:
        return                                   # data_movement_forms._check_mov_b128 holds ptxas's .b128 rules
    if vecq:
        _check_mov_vector(ins, info, typ, int(vecq[0][1:]), dst, src)
        return
    if isinstance(dst, ir.Vector) and len(dst.elems) == 1:
        dst = dst.elems[0]
    if isinstance(src, ir.Vector) and len(src.elems) == 1:
        src = src.elems[0]
    if isinstance(src, ir.Vector) or isinstance(dst, ir.Vector):
        _check_mov_pack(ins, info, typ, dst, src)
        return
    check_destination(ins, dst)
    rt = _reg_type(info, dst)
    if rt is not None and not _mov_compatible(rt, typ):
        raise _mismatch(ins, f"{dst} is a .{rt} register, the operand is .{typ}")
    _check_mov_source(ins, info, typ, src)


def _mov_compatible(rt: str, typ: str) -> bool:
    if rt in ("pred", "b128") or typ in ("pred", "b128"):
        return rt == typ
    return compatible(rt, typ)


def _check_mov_source(ins, info, typ: str, src) -> None:
    _no_sink_source(ins, src)
    if isinstance(src, ir.Address):
        raise _err(ins, f"Argument 1 of instruction 'mov': must be register (got {src}; ld reads memory)")
    if isinstance(src, ir.Imm):
        if not imm_ok(src, typ):
            raise _mismatch(ins, f"immediate {src} cannot be a .{typ} operand")
        return
    if isinstance(src, ir.SpecialReg):
        check_special_source(ins, typ, src)
        return
    if isinstance(src, ir.Sym):
        if _kind(typ) in ("float", "pred") or _size(typ) < 2:
            raise _mismatch(ins, f"the address of {src.name} cannot be a .{typ} value")
        if _size(typ) == 4 and _space_of_symbol(info, src.name) == "global" and _addr64(info):
            raise _err(ins, f"the address of the .global variable {src.name} does not fit in .{typ} under "
                            ".address_size 64 (ptxas: 32-bit addressing is not supported)")
        return
    rt = _reg_type(info, src)
    if rt is not None and not _mov_compatible(rt, typ):
        raise _mismatch(ins, f"{src} is a .{rt} register, the operand is .{typ}")


def check_special_source(ins, typ: str, src: ir.SpecialReg, vec: int = 1) -> None:
    """A special register as the source of ``mov.typ`` (PTX ISA §10 gives each its type)."""
    name = src.name
    if src.component is None and name in SREG_VECTOR:
        if vec != 4:
            raise _err(ins, f"Argument vector size mismatch for instruction '{ins.opcode}': {name} is a .v4 "
                            "special register", f"{name}.x, {name}.y or {name}.z")
        raise UnsupportedError(f"mov.v4 of the whole special register {name} is not supported by tcsim", ins.loc,
                               expected=f"{name}.x, {name}.y and {name}.z one by one")
    if _kind(typ) == "float":
        raise _err(ins, f"Special register argument not allowed for instruction 'mov.{typ}'",
                   "an integer or bit type")
    if name in SREG_PRED:
        ok = typ == "pred"
    elif typ == "pred":
        ok = False
    elif name in SREG_ANY:
        ok = _size(typ) in (4, 8)
    elif name in SREG_64:
        ok = _size(typ) == 8
    else:
        ok = _size(typ) in (2, 4)
    if not ok:
        raise _mismatch(ins, f"special register {src} does not fit a .{typ} operand")
    if name in SREG_UNSUPPORTED:
        raise UnsupportedError(f"special register {name} is not supported by tcsim", ins.loc)


def _check_mov_vector(ins, info, typ: str, n: int, dst, src) -> None:
    """``mov.vN.type {d..}, {a..}`` element-wise."""
    if typ == "pred":
        raise _err(ins, "Vector qualifier is not allowed for instruction 'mov' of .pred")
    if n * _size(typ) > 16:
        raise _err(ins, f"Vector type too large, exceeds 128 bit limit (.v{n}.{typ})")
    if not isinstance(dst, ir.Vector):
        raise _err(ins, f"Result vector expected for instruction 'mov.v{n}'")
    if len(dst.elems) not in (2, 4):
        raise _err(ins, f"Illegal vector size: {len(dst.elems)}")
    if len(dst.elems) != n:
        raise _err(ins, f"Argument vector size mismatch for instruction 'mov': .v{n} and {dst}")
    if isinstance(src, ir.SpecialReg):
        check_special_source(ins, typ, src, vec=n)
        return
    if not isinstance(src, ir.Vector):
        raise _mismatch(ins, f"the source of mov.v{n} must be a vector of {n}, got {src}")
    if len(src.elems) != n:
        raise _err(ins, f"Argument vector size mismatch for instruction 'mov': .v{n} and {src}")
    _vector_sizes(ins, info, dst)
    _vector_sizes(ins, info, src)
    for e in dst.elems:
        if isinstance(e, ir.Sink):
            continue
        check_destination(ins, e)
        rt = _reg_type(info, e)
        if rt is not None and not _mov_compatible(rt, typ):
            raise _mismatch(ins, f"{e} is a .{rt} register, the elements are .{typ}")
    for e in src.elems:
        _check_mov_source(ins, info, typ, e)


def _check_mov_pack(ins, info, typ: str, dst, src) -> None:
    """``mov.b64 %rd, {%r1, %r2}`` / ``mov.b64 {%r1, %r2}, %rd`` (pack / unpack)."""
    if typ not in ("b16", "b32", "b64", "b128"):
        raise _mismatch(ins, f"a vector operand packs into a bit type (.b16/.b32/.b64/.b128), not .{typ}")
    unpack = isinstance(dst, ir.Vector)
    vec, whole = (dst, src) if unpack else (src, dst)
    if isinstance(whole, ir.Vector):
        raise _mismatch(ins, "mov packs a vector into one register or unpacks one register, not both")
    n = len(vec.elems)
    if n not in (2, 4):
        raise _err(ins, f"Illegal vector size: {n}")
    if unpack:
        check_destination_vector(ins, vec)
        _check_mov_source(ins, info, typ, whole)
    else:
        check_destination(ins, whole)
        rt = _reg_type(info, whole)
        if rt is not None and not _mov_compatible(rt, typ):
            raise _mismatch(ins, f"{whole} is a .{rt} register, the operand is .{typ}")
        for e in vec.elems:
            _no_sink_source(ins, e)
            if isinstance(e, (ir.SpecialReg, ir.Sym, ir.Address)):
                raise _mismatch(ins, f"element {e} of {vec} is not a register or an immediate")
    _vector_sizes(ins, info, vec)
    want = _size(typ) // n
    for e in vec.elems:
        rt = _reg_type(info, e)
        if rt == "pred":
            raise UnsupportedError(f"a predicate element ({e}) in the vector {vec} of {ins.full_opcode} is not "
                                   "supported by tcsim", ins.loc)
        if rt is not None and _size(rt) != want:
            raise _mismatch(ins, f"the {n} elements of {vec} are {8 * _size(rt)}-bit; .{typ} needs "
                                 f"{8 * want}-bit elements")


def check_destination_vector(ins, vec: ir.Vector) -> None:
    for e in vec.elems:
        if not isinstance(e, ir.Sink):
            check_destination(ins, e)


# ------------------------------------------------------------------------------------------------ ld / st
def _addr64(info) -> bool:
    return info is None or getattr(info.module, "address_size", 64) == 64


def _space_of_symbol(info, name: str) -> str | None:
    """The state space of the variable / parameter ``name`` seen from the function (None: unknown)."""
    if info is None:
        return None
    fn = info.function
    for v in fn.locals:
        if v.name == name:
            return v.space
    if any(p.name == name for p in list(fn.params) + list(fn.returns)):
        return "param"
    for v in info.module.globals:
        if v.name == name:
            return v.space
    if name in info.module.functions:
        return "function"
    return None


def _canon_space(space: str) -> str:
    if space.startswith("shared"):
        return "shared"
    if space.startswith("param"):
        return "param"
    return space


def check_address(ins, info, addr: ir.Address, space: str) -> None:
    """An ld/st/atom address ``[a]`` in state space ``space`` ('generic' when none)."""
    base = addr.base
    sp = _canon_space(space)
    if base is None:
        if sp != "local":
            raise _err(ins, f"Immediate addresses allowed only for .local state space ({addr} in "
                            f"{'generic' if sp == 'generic' else '.' + sp} space)")
        return
    if isinstance(base, ir.Reg):
        rt = _reg_type(info, base)
        if rt is None:
            return
        if rt == "pred" or _kind(rt) == "float":
            raise _err(ins, f"Illegal to use symbol '{base}' of type .{rt} as address operand",
                       "an integer or bit-type register")
        if sp in ("global", "generic") and _size(rt) == 4 and _addr64(info):
            raise _err(ins, f"a .global or generic address needs a 64-bit register under .address_size 64; {base} "
                            f"is .{rt} (ptxas: 32-bit addressing is not supported on sm_90 or higher)",
                       "cvta / cvt.u64.u32 the offset into a 64-bit register")
        return
    if isinstance(base, ir.Sym):
        vs = _space_of_symbol(info, base.name)
        if vs is None:
            return
        if vs == "function":
            raise _err(ins, f"Illegal to use symbol '{base.name}' (a function) as address operand")
        vs = _canon_space(vs)
        ok = vs == sp or (sp == "generic" and vs in ("global", "shared", "local", "const"))
        if not ok:
            raise _err(ins, f"State space mismatch between instruction and address in instruction '{ins.opcode}': "
                            f"{base.name} is a .{vs} variable, the access is "
                            f"{'generic' if sp == 'generic' else '.' + sp}")


def check_memop(ins: ir.Instruction, info, *, space: str, vec: int, typ: str, value, addr, load: bool) -> None:
    """The typing rules of ``ld``/``ldu``/``st`` (PTX ISA §9.7.9.8-10, §6.4.2; see the module docstring)."""
    if typ not in LDST_TYPES:
        raise _err(ins, f"Unexpected instruction types specified for '{ins.opcode}' (.{typ})",
                   "one of " + " ".join("." + t for t in LDST_TYPES))
    spaces = [m for m in ins.mods if m in SPACE_QUALS]
    if len(spaces) > 1:
        raise _err(ins, f"Unexpected number of state spaces specified in instruction '{ins.opcode}'")
    if ins.opcode == "ldu" and space not in ("global", "generic"):
        raise _err(ins, "State space incorrect for instruction 'ldu'", ".global")
    if "volatile" in ins.mods and _canon_space(space) in ("param", "local", "const"):
        raise _err(ins, f"Modifier '.volatile' cannot be applied to '.{_canon_space(space)}' space")
    if (not load and _canon_space(space) == "param" and isinstance(addr, ir.Address) and isinstance(addr.base, ir.Reg)
            and info is not None and info.function.kind == "entry"):
        # ptxas 13.0 dies with a segmentation fault on it: a call's .param variables are written by name
        raise _err(ins, "st.param through a register address: the .param variables of a call are written by name "
                        "(st.param [name+offset]); a kernel's parameters are read-only", "st.param.type [param0], %r;")
    if "nc" in ins.mods and ins.opcode == "ldu":
        raise _err(ins, "Illegal modifier '.nc' for instruction 'ldu'")
    if "nc" in ins.mods and space != "global":
        raise _err(ins, "Modifier '.nc' requires .global space")
    if vec > 1 and vec * _size(typ) > 16:
        v = getattr(info.module, "version", None) if info is not None else None
        arch = (info.arch if info is not None else "") or ""
        num = int("".join(c for c in arch[3:] if c.isdigit()) or 0)
        if v is not None and tuple(v) < (8, 8):
            raise _err(ins, "Feature '256 bit wide load/store' requires PTX ISA .version 8.8 or later")
        if num and num < 100:
            raise _err(ins, f"Feature '256 bit wide load/store' requires sm_100 or higher (target is {arch})")
    if isinstance(value, ir.Vector):
        if vec == 1 and len(value.elems) != 1:
            raise _err(ins, f"Argument vector size mismatch for instruction '{ins.opcode}': {value} without a "
                            ".v2/.v4 qualifier")
        if vec > 1 and len(value.elems) not in (2, 4, 8):
            raise _err(ins, f"Illegal vector size: {len(value.elems)}")
        _vector_sizes(ins, info, value)
        for e in value.elems[1:] if _kind(typ) == "float" else ():
            if _reg_type(info, e) == "pred":
                raise _err(ins, f"Vector with elements of different types are not allowed in {ins.opcode} instruction "
                                f"({e} is a predicate)")
        first = None
        for e in value.elems:
            if load:
                if isinstance(e, ir.Sink):
                    continue
                check_destination(ins, e)
            else:
                _check_st_source(ins, info, typ, e, element=True)
            if first is None and isinstance(e, ir.Reg):
                first = e
        if first is not None:
            rt = _reg_type(info, first)
            if rt is not None and not relaxed_ok(rt, typ):
                raise _mismatch(ins, f"{first} is a .{rt} register, the access is .{typ}")
    else:
        if vec > 1:
            if load:
                raise _err(ins, f"Result vector expected for instruction '{ins.opcode}.v{vec}'")
            raise _err(ins, f"Argument vector size mismatch for instruction 'st': .v{vec} needs a vector source")
        if load:
            check_destination(ins, value)
            rt = _reg_type(info, value)
            if rt is not None and not relaxed_ok(rt, typ):
                raise _mismatch(ins, f"{value} is a .{rt} register, the access is .{typ}")
        else:
            _check_st_source(ins, info, typ, value)
    if isinstance(addr, ir.Address):
        check_address(ins, info, addr, space)
        if not load and _canon_space(space) == "param" and isinstance(addr.base, ir.Sym) and info is not None:
            fn = info.function
            if fn.kind == "entry" and any(p.name == addr.base.name for p in fn.params):
                raise _err(ins, f"Illegal to write to function input parameter '{addr.base.name}'")


def _check_st_source(ins, info, typ: str, op, element: bool = False) -> None:
    _no_sink_source(ins, op)
    if isinstance(op, ir.Imm):
        if not imm_ok(op, typ):
            raise _mismatch(ins, f"immediate {op} cannot be a .{typ} operand")
        return
    if isinstance(op, ir.SpecialReg):
        raise _err(ins, "Special register argument not allowed for instruction 'st'")
    if isinstance(op, (ir.Sym, ir.Address)):
        raise _err(ins, f"Argument 1 of instruction 'st': must be register (got {op})")
    if isinstance(op, ir.Reg) and not element:
        rt = _reg_type(info, op)
        if rt is not None and not relaxed_ok(rt, typ):
            raise _mismatch(ins, f"{op} is a .{rt} register, the access is .{typ}")


# ------------------------------------------------------------------------------------------------ cvta
def check_cvta(ins: ir.Instruction, info, *, to: bool, space: str, size: str, dst, src) -> None:
    """The typing rules of ``cvta`` (PTX ISA §9.7.9.19)."""
    name = "cvta.to" if to else "cvta"
    if any(m in ("v2", "v4", "v8") for m in ins.mods):
        raise _err(ins, f"Vector qualifier is not allowed for instruction '{name}'")
    for m in ins.mods:
        if m not in ("to", "u32", "u64") and m not in SPACE_QUALS:
            raise _err(ins, f"Unknown modifier '.{m}' for instruction '{name}'")
    if size == "u32" and _addr64(info):
        raise _err(ins, f"{ins.full_opcode}: a 32-bit address conversion under .address_size 64 (ptxas: 32-bit "
                        "addressing is not supported on sm_90 or higher)", f"cvta{'.to' if to else ''}.{space}.u64")
    for op in (dst, src):
        if isinstance(op, ir.Vector):
            raise _mismatch(ins, f"{op}: cvta takes scalar operands")
    check_destination(ins, dst)
    rt = _reg_type(info, dst)
    if rt is not None and (rt == "pred" or not compatible(rt, size)):
        raise _mismatch(ins, f"{dst} is a .{rt} register, the operand is .{size}")
    _no_sink_source(ins, src)
    if isinstance(src, ir.SpecialReg):
        raise _err(ins, f"Special register argument not allowed for instruction '{name}'")
    if isinstance(src, ir.Address):
        raise _err(ins, f"Argument 1 of instruction '{name}': must be register (got {src})")
    if isinstance(src, ir.Imm):
        if src.kind != "int":
            raise _mismatch(ins, f"immediate {src} is not an address")
        return
    if isinstance(src, ir.Sym):
        vs = _space_of_symbol(info, src.name)
        if vs is not None and vs != "function" and not to and _canon_space(vs) != _canon_space(space):
            raise _err(ins, f"State space mismatch between instruction and address in instruction 'cvta': "
                            f"{src.name} is a .{vs} variable")
        return
    rt = _reg_type(info, src)
    if rt is not None and (rt == "pred" or not compatible(rt, size)):
        raise _mismatch(ins, f"{src} is a .{rt} register, the operand is .{size}")


__all__ = ["MOV_TYPES", "LDST_TYPES", "relaxed_ok", "imm_ok", "reject_special_registers", "reject_label_operands",
           "check_address_bases",
           "reject_vector_operands", "check_destination",
           "check_mov", "check_special_source", "check_address", "check_memop", "check_cvta"]
