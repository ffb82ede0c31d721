"""Declaration rules ptxas enforces on a whole module: variable types, kernel parameter space, static shared
memory per kernel and constant bank size (PTX ISA 9.1 §5.1 state spaces, §5.2 types, §5.4 variables; the limits are
ptxas 13.0's, verified with one-declaration probes on ``-arch=sm_90a`` and ``sm_100a``; see
``tests/isa/test_typing_rules.py``).

* Variable types (§5.2.2, §5.4): ``.bf16``, ``.bf16x2`` and ``.tf32`` are instruction types only -- ptxas does not
  parse them in a declaration of any space (``.reg`` included) -- and so are the 8-bit float formats (``.e4m3``,
  ``.e5m2``: "Type .e4m3 may only be used as an instruction type"); ``.pred`` only declares registers ("Predicate
  type can only be used to define scalar register variables"); a ``.f16x2`` kernel parameter "cannot be allocated
  in .param state space".
* Kernel parameters (§5.1.6): at most 32,764 bytes (0x7ffc) laid out at their alignments ("Entry function uses too
  much parameter space"), on sm_90a and sm_100a; 4,352 bytes (0x1100) under ``.version`` 8.0 and older.  A
  ``.param`` variable or parameter is aligned to at most 128 bytes ("illegal alignment").  A direct call's argument
  and return variables have the sizes and alignments of the callee's parameters ("Type / Alignment of argument
  does not match formal parameter"); a ``.func`` parameter is aligned to at most 128 bytes too.
* Static shared memory (§5.1.5): the kernel-scope ``.shared`` variables plus the module-scope ones the kernel
  names, at their alignments, at most 232,448 bytes (0x38c00, the 227 KiB of an sm_90 / sm_100 SM; 49,152 bytes,
  0xc000, on sm_7x / sm_8x, ptxas 13.0 on sm_75/80/86/89) -- "Entry function uses too much shared data".  A larger total is possible only dynamically (``.extern .shared``), up to the
  launch's opt-in limit, which the launch checks.
* Constant bank (§5.1.3): the module's ``.const`` variables at most 65,536 bytes ("File uses too much global
  constant data").

Not checked here: ``.local`` sizes (ptxas accepts any; a launch checks the per-thread local memory limit) and
``.global`` sizes (ptxas accepts any).  :func:`verify_declarations` is run by :func:`tcsim.isa.parser.parse`, so
``tcsim check`` and every launch see the same diagnostics.
"""
from __future__ import annotations

from . import ir
from .errors import VerifyError

INSTRUCTION_ONLY_TYPES = frozenset(("bf16", "bf16x2", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2"))
MAX_PARAM_BYTES = 0x7FFC
#: before PTX ISA 8.1 (ptxas 13.0 with .version 8.0: "0x1100 max")
MAX_PARAM_BYTES_OLD = 0x1100
MAX_PARAM_ALIGN = 128
#: static shared memory per kernel by SM major generation (ptxas 13.0: "... uses too much shared data (..., max)")
MAX_STATIC_SHARED = {7: 0xC000, 8: 0xC000, 9: 0x38C00, 10: 0x38C00}
MAX_CONST_BYTES = 0x10000


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a if a > 1 else x


def _sm_major(arch: str | None) -> int | None:
    if not arch or not arch.startswith("sm_"):
        return None
    digits = "".join(ch for ch in arch[3:] if ch.isdigit())
    if len(digits) < 2:
        return None
    return int(digits[:-1])


def _names_used(fn: ir.Function) -> set:
    out: set = set()
    for ins in fn.body:
        for op in ins.operands:
            ir.operand_symbols(op, out)
    return out


def _check_var_type(v, where: str) -> None:
    if v.type in INSTRUCTION_ONLY_TYPES:
        raise VerifyError(f"Type .{v.type} may only be used as an instruction type, not in the declaration of "
                          f"{where} {v.name}", v.loc, expected="a bit-size type of the same size (.b16, .b32, .b8)")
    if v.type == "pred":
        raise VerifyError(f"Predicate type can only be used to define scalar register variables ({where} {v.name})",
                          v.loc)


def _natural(p) -> int:
    return ir.TYPE_SIZES.get(p.type, 1) * getattr(p, "vector", 1)


def _check_call_arguments(module: ir.Module, fn: ir.Function) -> None:
    """A direct call's arguments and return slots are ``.param`` variables of the caller of the callee's formal
    parameters' sizes (PTX ISA §9.7.12.5; ptxas: "Type of argument does not match formal parameter"), arrays for
    array parameters only; a register argument has the parameter's size (a predicate never); ``_`` is no argument;
    a callee that returns a value needs a return operand ("Call has wrong number of parameters").  Probed against
    ptxas 13.0: tests/isa/test_call_args.py."""
    decl = {v.name: v for v in fn.locals if v.space == "param"}
    for ins in fn.body:
        if ins.opcode != "call":
            continue
        ops = list(ins.operands)
        rets = ops.pop(0).elems if ops and isinstance(ops[0], ir.ParenList) else ()
        if not ops or not isinstance(ops[0], ir.Sym):
            continue
        callee = module.functions.get(ops.pop(0).name)
        args = ops.pop(0).elems if ops and isinstance(ops[0], ir.ParenList) else ()
        if callee is None:
            continue
        if callee.returns and not rets:
            raise VerifyError(f"Call has wrong number of parameters: {callee.name} returns {len(callee.returns)} "
                              f"value(s) and the call takes none", ins.loc,
                              expected=f"call (ret), {callee.name}, (...) with a .param variable for the result")
        for actuals, formals in ((args, callee.params), (rets, callee.returns)):
            for a, f in zip(actuals, formals):
                if isinstance(a, ir.Sink) and actuals is args:
                    raise VerifyError(f"Illegal argument for formal parameter '{f.name}' of {callee.name}: _ is no "
                                      "value", ins.loc)
                if isinstance(a, ir.Reg) and actuals is args and a.name in fn.regs:
                    rt = fn.regs[a.name][0]
                    size = ir.TYPE_SIZES.get(rt, 0)
                    if f.array is not None:
                        raise VerifyError(f"Inconsistent state space for parameter '{a.name}': the parameter "
                                          f"'{f.name}' of {callee.name} is an array, passed only as a .param "
                                          "variable", ins.loc)
                    if rt == "pred" or size != f.size_bytes:
                        raise VerifyError(f"Type of argument does not match formal parameter '{f.name}' of "
                                          f"{callee.name}: {a.name} is a .{rt} register, the parameter has "
                                          f"{f.size_bytes} bytes", ins.loc)
                v = decl.get(a.name) if isinstance(a, ir.Sym) else None
                if v is not None and bool(v.dims) != (f.array is not None):
                    raise VerifyError(f"Type of argument does not match formal parameter '{f.name}' of {callee.name}: "
                                      f"{v.name} is {'an array' if v.dims else 'a scalar'}, the parameter "
                                      f"{'an array' if f.array is not None else 'a scalar'}", ins.loc)
                if v is not None and v.size_bytes != f.size_bytes:
                    raise VerifyError(f"Type of argument does not match formal parameter '{f.name}' of {callee.name}: "
                                      f"{v.name} has {v.size_bytes} bytes, the parameter {f.size_bytes}", ins.loc)
                # ptxas compares alignments no smaller than the natural one (`.align 1 .b64` is aligned to 8)
                if v is not None and max(v.alignment, v.elem_size) != max(f.alignment, _natural(f)):
                    raise VerifyError(f"Alignment of argument does not match formal parameter '{f.name}' of "
                                      f"{callee.name}: {v.name} is aligned to {v.alignment}, the parameter to "
                                      f"{f.alignment}", ins.loc)


def verify_declarations(module: ir.Module) -> None:
    """Raise VerifyError (located at the declaration or kernel) for the first declaration ptxas rejects."""
    for v in module.globals:
        _check_var_type(v, f".{v.space} variable")
    const = 0
    for v in module.globals:
        if v.space == "const":
            const = _align(const, v.alignment) + v.size_bytes
            if const > MAX_CONST_BYTES:
                raise VerifyError(f"File uses too much global constant data ({const:#x} bytes, {MAX_CONST_BYTES:#x} "
                                  f"max) at .const {v.name}", v.loc)
    major = _sm_major(module.arch)
    shared_max = MAX_STATIC_SHARED.get(major) if major is not None else None
    for fn in module.functions.values():
        for name, rt in fn.regs.items():
            t = rt[0] if isinstance(rt, tuple) else rt
            if t in INSTRUCTION_ONLY_TYPES:
                raise VerifyError(f"Type .{t} may only be used as an instruction type, not for the register "
                                  f"{name}", fn.loc, expected="a .b16 / .b32 register")
        for v in fn.locals:
            _check_var_type(v, f".{v.space} variable")
        for p in list(fn.params) + list(fn.returns):
            if p.type in INSTRUCTION_ONLY_TYPES or p.type == "pred":
                raise VerifyError(f"parameter {p.name} of {fn.name} cannot have the type .{p.type}", p.loc,
                                  expected="a bit-size, integer or .f16/.f32/.f64 type")
        call_params = [v for v in fn.locals if v.space == "param"]
        if fn.kind == "func":
            call_params += list(fn.params) + list(fn.returns)
        for p in call_params:                                       # (kernel parameters may be aligned higher)
            a = p.align or 0
            if a > MAX_PARAM_ALIGN:
                raise VerifyError(f"Parameter '{p.name}' has illegal alignment {a} (must be aligned to 1, 2, 4, 8, 16, "
                                  "32, 64, or 128 bytes)", p.loc)
        _check_call_arguments(module, fn)
        if fn.kind != "entry" or fn.is_declaration:
            continue
        limit = MAX_PARAM_BYTES if tuple(module.version or (9, 0)) >= (8, 1) else MAX_PARAM_BYTES_OLD
        off = 0
        for p in fn.params:
            if p.type in ("f16x2",) and not p.array:
                raise VerifyError(f"Variable '{p.name}' cannot be allocated in .param state space (.{p.type})", p.loc)
            off = _align(off, p.alignment) + p.size_bytes
            if off > limit:
                raise VerifyError(f"Entry function '{fn.name}' uses too much parameter space ({off:#x} bytes, "
                                  f"{limit:#x} max under .version {'.'.join(map(str, module.version or ()))}) at "
                                  f"parameter {p.name}", p.loc,
                                  expected="pass large data through a global-memory pointer")
        if shared_max is None:
            continue
        used = _names_used(fn)
        decls = [v for v in fn.locals if v.space == "shared"] + \
            [v for v in module.globals if v.space == "shared" and v.name in used]
        total = 0
        for v in decls:
            if v.dims and v.dims[-1] is None:
                continue                    # the dynamic array; a sized .extern .shared counts (ptxas)
            total = _align(total, v.alignment) + v.size_bytes
            if total > shared_max:
                raise VerifyError(f"Entry function '{fn.name}' uses too much shared data ({total:#x} bytes, "
                                  f"{shared_max:#x} max on {module.arch}) at .shared {v.name}", v.loc,
                                  expected="dynamic shared memory (.extern .shared) with the launch's opt-in")


__all__ = ["verify_declarations", "MAX_PARAM_BYTES", "MAX_STATIC_SHARED", "MAX_CONST_BYTES",
           "INSTRUCTION_ONLY_TYPES"]
