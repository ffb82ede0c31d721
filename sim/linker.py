"""Linking a kernel with the device functions it calls into one program (PTX ISA §7, abstract ABI).

A kernel that calls ``.func`` s (``call``, PTX ISA §9.7.12.5) runs as one instruction list: the kernel's body
first, then the body of every function it can reach -- through direct calls, through a function's address taken
with ``mov`` (a function pointer) or stored in a ``.global``/``.const`` initialiser -- each followed by one
sentinel instruction that stops a lane falling off the end of a body without ``ret``.  Per-lane program counters
index this list, so lanes of one warp may be in different functions (divergent and indirect calls) and the
engine's lowest-PC reconvergence applies unchanged.

Each function keeps its own registers and ``.param`` variables (PTX scopes them to the function); the warp
switches to the executing function's register file (:mod:`tcsim.callstack`).  Its ``.local`` variables form a
*frame* on the thread's stack: the kernel's at offset 0, each call's above its caller's.

Stack sizes (tcsim's model, documented here because PTX leaves them to ptxas): a frame costs its ``.local``
bytes rounded up to 16 plus :data:`CALL_FRAME_OVERHEAD` bytes for the return address and saved registers.
ptxas's real frames are larger (``walk`` of tests/fixtures/nvcc/device_calls.cu: 48 bytes in the model, 88 in
SASS), so with the model deeper recursion fits than on the GPU; ``Launch(stack_frames="ptxas")`` takes each
function's frame from ``ptxas -v`` instead, which matches the H100/H200 (tests/golden/calls_h100.json: depth 15
of walk overflows the default 1 KiB on the GPU: 16 frames of 88 bytes).  A program whose call graph has no cycle gets the stack it needs (the
CUDA driver sizes the stack of a kernel whose need is statically known); a recursive one gets the launch's
``stack_size`` (``cudaLimitStackSize``, 1 KiB per thread by default) and a call that would pass it is a located
:class:`StackOverflow`.

Function addresses (the values of function pointers) are :data:`FUNCTION_BASE` + ``0x100 * index``; an indirect
call to any other value is a located fault.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import LaunchError, TcsimError

#: bytes a call adds to the stack beside the callee's .local frame (return address, saved registers)
CALL_FRAME_OVERHEAD = 16
#: cudaLimitStackSize's default: 1 KiB per thread
DEFAULT_STACK_SIZE = 1024
#: generic address of the first function (function pointers); tcsim's choice
FUNCTION_BASE = 0x7A00_0000_0000
FUNCTION_STRIDE = 0x100
#: functions the CUDA runtime provides (``.extern .func`` with no body) that tcsim executes
SYSTEM_CALLS = ("vprintf", "__assertfail")


class StackOverflow(TcsimError):
    """A call needs more stack than the thread has (cudaLimitStackSize)."""

    kind = "stack overflow"


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


@dataclass
class LinkedFunction:
    """One function of a linked program: where its body starts (``base``) in the program's instruction list, its
    frame (``local_symbols``: name -> offset in the frame, ``frame_size``), the sizes of its ``.param`` variables
    (``param_vars``: call-site variables declared in the body, and for a ``.func`` its parameters and return
    values) and its address."""

    index: int
    fn: ir.Function
    base: int
    local_symbols: dict
    frame_size: int
    param_vars: dict
    address: int
    callees: set = field(default_factory=set)
    indirect: bool = False          # the body makes an indirect call
    #: the SASS frame size (``ptxas -v``) when the launch asks for ptxas's frames, else None (tcsim's model)
    sass_frame: int | None = None
    #: the alignment its frame starts at (the largest of its .local variables', at least 16)
    frame_align: int = 16

    @property
    def name(self) -> str:
        return self.fn.name

    @property
    def end(self) -> int:
        """The pc of its sentinel (one past its last instruction)."""
        return self.base + len(self.fn.body)

    @property
    def frame_cost(self) -> int:
        """Stack bytes one activation takes (see the module docstring): ptxas's SASS frame when given, else the
        .local bytes rounded to 16 plus :data:`CALL_FRAME_OVERHEAD`."""
        if self.sass_frame is not None:
            return self.sass_frame
        return _align(self.frame_size, 16) + CALL_FRAME_OVERHEAD

    @property
    def own_frame(self) -> int:
        """The stack bytes of the kernel's own frame (function 0)."""
        return self.sass_frame if self.sass_frame is not None else _align(self.frame_size, 16)


def frame_layout(fn: ir.Function) -> tuple[dict, int]:
    """(name -> offset, size) of ``fn``'s ``.local`` variables, in declaration order with their alignment."""
    off = 0
    out = {}
    for v in fn.locals:
        if v.space == "local":
            off = _align(off, v.alignment)
            out[v.name] = (off, v.size_bytes)
            off += v.size_bytes
    return out, off


def param_var_sizes(fn: ir.Function) -> dict:
    """Sizes of ``fn``'s own .param variables: call-site ones declared in its body, and for a ``.func`` its
    parameters and return values."""
    sizes = {v.name: max(v.size_bytes, 1) for v in fn.locals if v.space == "param"}
    if fn.kind == "func":
        for p in list(fn.params) + list(fn.returns):
            sizes[p.name] = max(p.size_bytes, 1)
    return sizes


def _function_refs(module: ir.Module, fn: ir.Function) -> tuple[set, set, bool]:
    """(direct callees, functions whose address the body takes, whether it calls indirectly)."""
    funcs = module.functions
    direct, taken, indirect = set(), set(), False

    def scan(op, acc):
        if isinstance(op, ir.Sym) and op.name in funcs:
            acc.add(op.name)
        elif isinstance(op, (ir.Vector, ir.ParenList)):
            for e in op.elems:
                scan(e, acc)
        elif isinstance(op, ir.Address) and op.base is not None:
            scan(op.base, acc)

    for ins in fn.body:
        if ins.opcode == "call":
            ops = [o for o in ins.operands if not isinstance(o, ir.ParenList)]
            if ops and isinstance(ops[0], ir.Sym) and ops[0].name in funcs:
                direct.add(ops[0].name)
            elif ops and isinstance(ops[0], ir.Reg):
                indirect = True
            for o in ins.operands:
                if isinstance(o, ir.ParenList):
                    for e in o.elems:
                        scan(e, taken)
        else:
            for o in ins.operands:
                scan(o, taken)
    for names in fn.call_targets.values():
        taken.update(n for n in names if n in funcs)
    return direct, taken, indirect


@dataclass
class Linkage:
    """A kernel and the functions it reaches, laid out in one instruction list (see the module docstring)."""

    functions: list                 # LinkedFunction, index 0 the kernel
    by_name: dict
    owner: np.ndarray               # pc -> function index
    sentinels: list                 # pcs of the end-of-body sentinels
    recursive: bool                 # the call graph has a cycle (or an indirect call may close one)
    static_stack: int               # the stack a thread needs when the graph is acyclic
    #: pc of a call instruction -> its return pc (pc + 1); the successor tables the reachability analysis asks
    return_sites: dict = field(default_factory=dict)

    def by_address(self, addr: int) -> LinkedFunction | None:
        off = addr - FUNCTION_BASE
        if off < 0 or off % FUNCTION_STRIDE:
            return None
        i = off // FUNCTION_STRIDE
        return self.functions[i] if 0 < i < len(self.functions) else None

    def function_at(self, pc: int) -> LinkedFunction:
        return self.functions[int(self.owner[min(pc, len(self.owner) - 1)])]

    def addresses(self) -> dict:
        """name -> address of every linked ``.func``."""
        return {f.name: f.address for f in self.functions[1:]}

    def stack_capacity(self, stack_size: int) -> int:
        """Bytes of stack each thread gets: the static need of an acyclic program, else the launch's limit (at
        least the kernel's own frame)."""
        if not self.recursive:
            return self.static_stack
        return max(int(stack_size), self.functions[0].own_frame, self.functions[0].frame_size)


def link(module: ir.Module, kernel: ir.Function, frames: dict | None = None) -> Linkage:
    """Lay out ``kernel`` and every ``.func`` it can reach (functions without a body are system calls or
    external; the call decoder decides).  ``frames``: function name -> SASS stack-frame bytes (``ptxas -v``,
    :func:`tcsim.isa.ptxas.stack_frames`) to use instead of tcsim's frame model."""
    funcs = module.functions
    order = [kernel.name]
    seen = {kernel.name}
    refs = {}
    # functions whose address a global/const initialiser holds are reachable through pointers
    init_taken = set()
    for v in module.globals:
        for item in v.init or ():
            if isinstance(item, ir.Sym) and item.name in funcs:
                init_taken.add(item.name)
    i = 0
    while i < len(order):
        fn = funcs[order[i]]
        d, t, ind = _function_refs(module, fn)
        refs[fn.name] = (d, t, ind)
        nxt = sorted(d | t) + (sorted(init_taken) if i == 0 else [])
        for n in nxt:
            f = funcs[n]
            if n not in seen and not f.is_declaration and f.kind == "func":
                seen.add(n)
                order.append(n)
        i += 1
    body_pc = 0
    functions = []
    owner = []
    sentinels = []
    for idx, name in enumerate(order):
        fn = funcs[name]
        lay, size = frame_layout(fn)
        lf = LinkedFunction(idx, fn, body_pc, {k: o for k, (o, _) in lay.items()}, size, param_var_sizes(fn),
                            0 if idx == 0 else FUNCTION_BASE + FUNCTION_STRIDE * idx)
        d, t, ind = refs[name]
        lf.callees = {n for n in d if n in seen}
        lf.indirect = ind
        if frames is not None and name in frames:
            lf.sass_frame = int(frames[name])
        lf.frame_align = max([16] + [v.alignment for v in fn.locals if v.space == "local"])
        functions.append(lf)
        owner.extend([idx] * (len(fn.body) + 1))
        sentinels.append(body_pc + len(fn.body))
        body_pc += len(fn.body) + 1
    by_name = {f.name: f for f in functions}
    # any function whose address is taken may be the target of any indirect call
    pointed = set()
    for name in order:
        pointed |= {n for n in refs[name][1] if n in by_name and n != kernel.name}
    pointed |= {n for n in init_taken if n in by_name}
    for f in functions:
        if f.indirect:
            f.callees |= pointed
    recursive, static = _stack_need(functions, by_name)
    lk = Linkage(functions, by_name, np.asarray(owner, dtype=np.int64), sentinels, recursive, static)
    for f in functions:
        for j, ins in enumerate(f.fn.body):
            if ins.opcode == "call":
                lk.return_sites[f.base + j] = f.base + j + 1
    return lk


def _stack_need(functions, by_name) -> tuple[bool, int]:
    """(has a cycle, deepest stack of an acyclic graph: the kernel frame plus the costliest call chain)."""
    state = {}
    need = {}

    def visit(name) -> int | None:
        st = state.get(name)
        if st == 1:
            return None                 # on the current path: a cycle
        if st == 2:
            return need[name]
        state[name] = 1
        f = by_name[name]
        best = 0
        for c in f.callees:
            r = visit(c)
            if r is None:
                return None
            best = max(best, r)
        state[name] = 2
        need[name] = best + (f.frame_cost if f.index else 0)
        return need[name]

    k = functions[0]
    r = visit(k.name)
    if r is None:
        return True, 0
    return False, k.own_frame + r


def check_stack_size(value) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
        raise LaunchError(f"stack_size {value!r} is not a byte count", expected="a non-negative int "
                          "(cudaLimitStackSize; CUDA's default is 1024)")
    return int(value)


__all__ = ["CALL_FRAME_OVERHEAD", "DEFAULT_STACK_SIZE", "FUNCTION_BASE", "SYSTEM_CALLS", "StackOverflow",
           "LinkedFunction", "Linkage", "link", "frame_layout", "param_var_sizes", "check_stack_size"]
