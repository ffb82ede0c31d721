"""Device-function calls: call, ret, and the system calls vprintf and __assertfail.

PTX ISA 9.1 §9.7.12.5 (call), §9.7.12.6 (ret), §7 (abstract ABI: ``.param`` arguments and return values,
``.callprototype`` for indirect calls, §11.4.2-3) and the CUDA system calls ``vprintf`` and ``__assertfail``
(CUDA Programming Guide, "Formatted Output" and "Assertion").

* ``call{.uni} (ret), f, (a, b)`` with ``f`` a ``.func`` of the module: the calling lanes copy each argument
  (a call-site ``.param`` variable, or a register / immediate) into ``f``'s parameters, push a frame on their
  call stacks (:mod:`tcsim.callstack`) and continue at ``f``'s first instruction; ``ret`` in ``f`` pops it,
  copies ``f``'s return values into the caller's ``ret`` variables and continues after the call.  Lanes of a
  warp may call different functions and sit at different depths (per-lane PCs); recursion keeps each
  activation's registers and parameters apart; ``.local`` frames follow the thread's stack pointer.
* Indirect calls ``call (ret), %rd, (args), proto;``: each lane calls the function whose address (``mov.u64 %rd,
  f`` or a ``.global`` initialiser) its register holds; the prototype's signature (or the ``.calltargets``
  list) must match that function (PTX leaves a mismatch undefined: tcsim reports it).  An address that is no
  function's is a located fault (the GPU faults too).
* ``vprintf(fmt, args)``: the formatted line goes to the simulation's stdout.
* ``__assertfail(message, file, line, function, charSize)`` (what ``assert()`` lowers to): every calling thread
  prints the GPU's line ``file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `message` failed.`` and
  the launch ends with :class:`DeviceAssert` ("device-side assert triggered", CUDA_ERROR_ASSERT on the GPU).
  Only the lanes of the warp that executes the call print: on the GPU other warps may print too before the grid
  stops, which is timing-dependent.
* ``ret`` in a kernel: the lanes finish (as ``exit``).

Not supported (located diagnostic): calls to ``.extern`` functions other than vprintf / __assertfail (no body in
the module: ``malloc``, ``free``, libdevice); the address of a function's ``.param`` variables; ``charSize`` other
than 1, 2 or 4 in __assertfail.  Stack overflow of recursive calls: :class:`tcsim.linker.StackOverflow`, with
tcsim's frame model (:mod:`tcsim.linker`).
"""
from __future__ import annotations

import re

import numpy as np

from tcsim.isa import ir
from tcsim.isa.control_forms import parse_call, parse_control
from tcsim.isa.errors import MemoryFault, UnsupportedError, VerifyError
from ..linker import SYSTEM_CALLS
from ..ptxtypes import UINT, size_of
from .control import TrapError
from .registry import semantics


class DeviceAssert(TrapError):
    """``assert()`` failed in the kernel (``__assertfail``): the launch ends as on the GPU ("device-side assert
    triggered").  ``assertions``: one :class:`Assertion` per asserting thread; ``lines``: what the GPU prints."""

    kind = "device-side assert triggered"

    def __init__(self, message, loc=None, *, assertions=(), **kw):
        self.assertions = list(assertions)
        super().__init__(message, loc, **kw)

    @property
    def lines(self) -> list:
        return [a.line for a in self.assertions]


class Assertion:
    """One thread's failed assertion: the strings ``__assertfail`` was passed and where the thread is."""

    __slots__ = ("message", "file", "line_no", "function", "block", "thread")

    def __init__(self, message, file, line_no, function, block, thread):
        self.message, self.file, self.line_no, self.function = message, file, line_no, function
        self.block, self.thread = tuple(block), tuple(thread)

    @property
    def line(self) -> str:
        """The line the GPU prints (CUDA Programming Guide, "Assertion")."""
        b, t = self.block, self.thread
        return (f"{self.file}:{self.line_no}: {self.function}: block: [{b[0]},{b[1]},{b[2]}], thread: "
                f"[{t[0]},{t[1]},{t[2]}] Assertion `{self.message}` failed.")

    def __repr__(self) -> str:
        return f"Assertion({self.line!r})"


# ------------------------------------------------------------------------------------------------ call / ret


def _signature_text(returns, params) -> str:
    r = ", ".join(f".{p.type}{'[%d]' % p.array if p.array else ''}" for p in returns)
    a = ", ".join(f".{p.type}{'[%d]' % p.array if p.array else ''}" for p in params)
    return f"({r}) _ ({a})"


def _check_signature(ins, what, form, returns, params):
    if form.returns and len(form.returns) != len(returns):
        raise VerifyError(f"call of {what} passes {len(form.returns)} return variables; it returns "
                          f"{len(returns)}", ins.loc, expected=f"the signature {_signature_text(returns, params)}")
    if len(form.args) != len(params):
        raise VerifyError(f"call of {what} passes {len(form.args)} arguments; it takes {len(params)}", ins.loc,
                          expected=f"the signature {_signature_text(returns, params)}")


def _same_signature(a_ret, a_par, b_ret, b_par) -> bool:
    def shape(ps):
        return [p.size_bytes for p in ps]
    return shape(a_ret) == shape(b_ret) and shape(a_par) == shape(b_par)


def _arg_bytes(ctx, op, param) -> np.ndarray:
    """(32, size) bytes of one argument for the callee's parameter ``param``."""
    size = param.size_bytes
    if isinstance(op, ir.Sym) and ctx.has_call_param(op.name):
        n = min(size, ctx.call_param_size(op.name))
        rows = ctx.call_param_rows(op.name, n)
        if n < size:
            rows = np.concatenate([rows, np.zeros((32, size - n), dtype=np.uint8)], axis=1)
        return rows
    if isinstance(op, (ir.Reg, ir.Imm)) and not param.array:
        t = param.type if param.type != "pred" else "u8"
        vals = ctx.read(op, f"b{8 * size_of(t)}")
        return np.ascontiguousarray(vals.view(UINT[size_of(t)])).reshape(-1, 1).view(np.uint8)
    raise VerifyError(f"call argument {op} is neither a .param variable of the caller nor a register/immediate "
                      f"for parameter {param.name}")


def _ret_names(form) -> tuple:
    out = []
    for r in form.returns:
        if not isinstance(r, ir.Sym):
            raise VerifyError(f"call return operand {r} must be a .param variable of the caller")
        out.append(r.name)
    return tuple(out)


@semantics("call")
def decode_call(ins, info):
    """PTX ISA §9.7.12.5 call: direct and indirect calls of ``.func`` s, and the system calls vprintf and
    __assertfail (see the module docstring)."""
    form = parse_call(ins)
    module = info.module
    if form.direct:
        callee = module.functions.get(form.name)
        if callee is None:
            raise VerifyError(f"call to undefined function {form.name}", ins.loc)
        if callee.kind == "entry":
            raise VerifyError(f"call to kernel {form.name}: an .entry cannot be called", ins.loc,
                              expected="a .func")
        if callee.is_declaration:
            if form.name == "vprintf":
                return _decode_vprintf(ins, form)
            if form.name == "__assertfail":
                return _decode_assertfail(ins, form)
            raise UnsupportedError(f"call to {form.name}, which is declared without a body in this module; tcsim "
                                   f"executes calls of functions defined in the module and the system calls "
                                   f"{' and '.join(SYSTEM_CALLS)}", ins.loc)
        _check_signature(ins, form.name, form, callee.returns, callee.params)
        rets = _ret_names(form) if form.returns else ()
        name = form.name
        params = list(callee.params)
        args = form.args

        def run(ctx):
            if not ctx.mask.any():
                return
            lf = ctx.program.link.by_name[name]
            ctx.call_enter(lf.index, ctx.pc + 1, [(p.name, _arg_bytes(ctx, a, p)) for a, p in zip(args, params)],
                           rets)

        return run
    # indirect: a prototype (or a .calltargets list) gives the signature
    label = form.prototype.name
    fn = info.function
    proto = fn.call_prototypes.get(label)
    allowed = None
    if proto is None:
        allowed = fn.call_targets.get(label)
        if allowed is None:
            raise VerifyError(f"{label} is neither a .callprototype nor a .calltargets list of {fn.name}", ins.loc)
        first = module.functions[allowed[0]]
        sig_ret, sig_par = first.returns, first.params
    else:
        sig_ret, sig_par = proto.returns, proto.params
    _check_signature(ins, f"the prototype {label}", form, sig_ret, sig_par)
    rets = _ret_names(form) if form.returns else ()
    target, args = form.target, form.args

    def run(ctx):
        m = ctx.mask
        if not m.any():
            return
        link = ctx.program.link
        addrs = ctx.read(target, "u64").astype(np.uint64)
        for a in np.unique(addrs[m]):
            lanes = m & (addrs == a)
            lf = link.by_address(int(a)) if link is not None else None
            if lf is None:
                lane = int(np.nonzero(lanes)[0][0])
                raise MemoryFault(f"indirect call through {target} to 0x{int(a):x} (lane {lane}), which is not the "
                                  f"address of a function", expected="a function address (mov.u64 %rd, func)")
            callee = lf.fn
            if allowed is not None and lf.name not in allowed:
                raise VerifyError(f"indirect call reached {lf.name}, which the .calltargets list {label} does not "
                                  f"name ({', '.join(allowed)})")
            if not _same_signature(callee.returns, callee.params, sig_ret, sig_par):
                raise VerifyError(f"indirect call through {target} reached {lf.name} "
                                  f"{_signature_text(callee.returns, callee.params)}, whose signature differs "
                                  f"from the prototype {label} {_signature_text(sig_ret, sig_par)} (undefined "
                                  f"in PTX)")
            ctx.call_enter(lf.index, ctx.pc + 1,
                           [(p.name, _arg_bytes(ctx, op, p)) for op, p in zip(args, callee.params)], rets,
                           lanes=lanes)

    return run


@semantics("ret")
def decode_ret(ins, info):
    """PTX ISA §9.7.12.6 ret: in a ``.func``, return to the caller; in a kernel, the lanes finish (as ``exit``)."""
    parse_control(ins)
    if info.function.kind == "entry":
        def run(ctx):
            ctx.exit_lanes(ctx.mask.copy())
        return run

    def run(ctx):
        if ctx.mask.any():
            ctx.call_return()

    return run


# ------------------------------------------------------------------------------------------------ vprintf


def _param_value(ctx, op, ptype):
    # system-call arguments are call-site .param variables written by st.param (or registers/immediates)
    if isinstance(op, ir.Sym) and ctx.has_call_param(op.name):
        n = size_of(ptype)
        return ctx.call_param_load(op.name, 0, n).view(UINT[n]).reshape(-1)
    return ctx.read(op, ptype)


def _decode_vprintf(ins, form):
    params = form.args
    if len(params) != 2:
        raise VerifyError("vprintf takes (format, args)", ins.loc)

    def run(ctx):
        _vprintf(ctx, params)

    return run


def _vprintf(ctx, params):
    fmt_addr = _param_value(ctx, params[0], "u64")
    arg_addr = _param_value(ctx, params[1], "u64")
    out = ctx.stdout
    for lane in np.nonzero(ctx.mask)[0]:
        fmt = _c_string(ctx, int(fmt_addr[lane]), int(lane), "printf format string")
        out.append(_format_c(ctx, fmt, int(arg_addr[lane]), int(lane)))


def _c_string(ctx, addr: int, lane: int, what: str, char_size: int = 1, limit: int = 4096) -> str:
    """The zero-terminated string at generic address ``addr`` read by thread ``lane``."""
    chars = []
    while True:
        raw = _read_generic(ctx, addr + len(chars) * char_size, char_size, lane)
        c = int.from_bytes(bytes(raw), "little")
        if c == 0:
            break
        chars.append(c)
        if len(chars) > limit:
            raise MemoryFault(f"{what} is not terminated within {limit} characters")
    if char_size == 1:
        return bytes(chars).decode("latin-1")
    return "".join(chr(c) if c < 0x110000 else "?" for c in chars)


def _format_c(ctx, fmt: str, argp: int, lane: int) -> str:
    res = []
    pos = 0
    off = 0
    for m in re.finditer(r"%[-+ #0]*\d*(?:\.\d+)?(hh|h|ll|l|z)?([diouxXfFeEgGcsp%])", fmt):
        res.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m.group(2)
        if conv == "%":
            res.append("%")
            continue
        size = 8 if conv in "fFeEgGsp" or m.group(1) in ("l", "ll", "z") else 4
        off = (off + size - 1) // size * size
        raw = _read_generic(ctx, argp + off, size, lane)
        off += size
        v = int.from_bytes(bytes(raw), "little")
        spec = m.group(0).replace(m.group(1) or "", "")
        if conv in "fFeEgG":
            val = float(np.frombuffer(bytes(raw), dtype=np.float64)[0])
            res.append(spec % val)
        elif conv in "di":
            bits = size * 8
            if v >= 1 << (bits - 1):
                v -= 1 << bits
            res.append(spec % v)
        elif conv == "s":
            res.append(spec % _c_string(ctx, v, lane, "printf %s argument"))
        elif conv == "p":
            res.append(hex(v))
        elif conv == "c":
            res.append(chr(v & 0xFF))
        else:
            res.append(spec % v)
    res.append(fmt[pos:])
    return "".join(res)


def _read_generic(ctx, addr: int, size: int, lane: int):
    mask = np.zeros(32, dtype=bool)
    mask[lane] = True
    addrs = np.full(32, addr, dtype=np.uint64)
    return ctx.load("generic", addrs, size, mask=mask, align=1)[lane]


# ------------------------------------------------------------------------------------------------ __assertfail


def _decode_assertfail(ins, form):
    params = form.args
    if len(params) != 5:
        raise VerifyError("__assertfail takes (message, file, line, function, charSize)", ins.loc)
    msg_op, file_op, line_op, fn_op, cs_op = params

    def run(ctx):
        m = ctx.mask
        if not m.any():
            return
        msg = _param_value(ctx, msg_op, "u64")
        fil = _param_value(ctx, file_op, "u64")
        line = _param_value(ctx, line_op, "u32")
        fun = _param_value(ctx, fn_op, "u64")
        csz = _param_value(ctx, cs_op, "u64")
        tid = [ctx.special(ir.SpecialReg("%tid", c)) for c in "xyz"]
        cta = [ctx.special(ir.SpecialReg("%ctaid", c)) for c in "xyz"]
        found = []
        for lane in np.nonzero(m)[0]:
            lane = int(lane)
            cs = int(csz[lane])
            if cs not in (1, 2, 4):
                raise UnsupportedError(f"__assertfail with charSize {cs} (lane {lane})", expected="1, 2 or 4")
            a = Assertion(_c_string(ctx, int(msg[lane]), lane, "assertion message", cs),
                          _c_string(ctx, int(fil[lane]), lane, "assertion file name", cs),
                          int(line[lane]),
                          _c_string(ctx, int(fun[lane]), lane, "assertion function name", cs),
                          tuple(int(c[lane]) for c in cta), tuple(int(t[lane]) for t in tid))
            found.append(a)
            ctx.stdout.append(a.line + "\n")
        ctx.emit_sync("assertfail", threads=len(found), traced=False)
        first = found[0]
        more = f" (and {len(found) - 1} more thread(s) of this warp)" if len(found) > 1 else ""
        raise DeviceAssert(f"{first.line}{more}; the launch fails as on the GPU (CUDA_ERROR_ASSERT)",
                           assertions=found, user_loc=f"{first.file}:{first.line_no}")

    return run
