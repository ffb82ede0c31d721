"""Linking a kernel with the device functions it calls into one program (PTX ISA §7, abstract ABI).

A kernel that calls ``.func`` s (``call``, PTX ISA §9.7.12.5) runs as one instruction list: the kernel's body
first, then the body of every function it can reach -- through direct calls, through a function's address taken
with ``mov`` (a function pointer) or stored in a ``.global``/``.const`` initialiser -- each followed by one
sentinel instruction that stops a lane falling off the end of a body without ``ret``.  Per-lane program counters
index this list, so lanes of one warp may be in different functions (divergent and indirect calls) and the
engine's lowest-PC reconvergence applies unchanged.

Each function keeps its own registers and ``.param`` variables (PTX scopes them to the function); the warp
switches to the executing function's register file (:mod:`tcsim.callstack`).

``.local`` frames (PTX leaves them to ptxas; this is the layout the GPU gives, tests/hw/test_calls_golden.py
``test_gpu_frame_layout_rule``, measured on an H200 with tests/fixtures/nvcc/frame_addresses.cu).  The stack grows
down from the stack top (:attr:`tcsim.address_map.AddressMap.local_stack_top`).  The kernel's stack pointer is
the top minus the kernel's *frame*, which holds the kernel's own ``.local`` variables at offset 0 and, above
them, the ``.local`` variables (the depot) of every **non-recursive** device function, each at one fixed offset
whatever the call path: the end of the deepest depot that can be live at the same time -- its callers' (for a
caller with a frame of its own, what is live while it runs) -- rounded up to the depot's alignment.  A
**recursive** function (one on a cycle of the call graph) gets a frame of its own on each call, just below its
caller's stack pointer, its depot at the new stack pointer; so does a function to which ptxas gives a SASS frame
of its own (a debug build, ``nvcc -G``, gives every function one).  The frame sizes are ptxas's (``ptxas -v`` "N bytes
stack frame": ``Launch(stack_frames="ptxas")`` takes them, which makes every address GPU-exact: 112 bytes for
frame_addresses' kernel, 40 for its recursive function, 0 for the non-recursive ones, whose depots are in the
kernel's frame) or tcsim's model: the kernel's frame is the end of the deepest depot rounded up to 8 or the
largest depot alignment (as a kernel without calls, :meth:`tcsim.address_map.AddressMap.local_frame`; 112 for
frame_addresses too), a recursive function's its ``.local`` bytes rounded up to 16 plus
:data:`CALL_FRAME_OVERHEAD` bytes for the return address and saved registers, a non-recursive one's 0.  ptxas's
recursive frames are larger (``walk`` of tests/fixtures/nvcc/device_calls.cu: 48 bytes in the model, 88 in SASS),
so with the model deeper recursion fits than on the GPU and the recursive frames lie elsewhere.  Not measured:
where the GPU puts the depot of a non-recursive function called only from a recursive one (tcsim: the same rule,
a fixed offset in the kernel's frame, which is where a function whose activations never nest can live).

Stack sizes: a thread's stack use is the top minus its stack pointer (the kernel's frame plus the frames of the
calls in progress).  A program whose call graph has no cycle gets the stack it needs (the CUDA driver sizes the
stack of a kernel whose need is statically known); a recursive one gets the launch's ``stack_size``
(``cudaLimitStackSize``, 1 KiB per thread by default) and a call that would pass it is a located
:class:`StackOverflow` (with ptxas's frames at the depth the GPU faults: tests/golden/calls_hopper.json, depth 15
of walk overflows the default 1 KiB: 16 frames of 88 bytes).

Function addresses (the values of function pointers) are :data:`FUNCTION_BASE` + ``0x100 * index``; an indirect
call to any other value is a located fault.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import LaunchError, TcsimError

from .address_map import address_map

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
    #: the alignment of its .local variables (the largest; 1 without any)
    depot_align: int = 1
    #: on a cycle of the call graph
    recursive: bool = False
    #: a depot in the kernel's frame: its offset from the kernel's stack pointer (the kernel: 0; see the module
    #: docstring), None for a function with a frame of its own
    static_offset: int | None = None

    @property
    def name(self) -> str:
        return self.fn.name

    @property
    def end(self) -> int:
        """The pc of its sentinel (one past its last instruction)."""
        return self.base + len(self.fn.body)

    @property
    def own_frame(self) -> bool:
        """Each activation gets a frame of its own below the caller's stack pointer (its depot there): a recursive
        function, and one to which ptxas gives a SASS frame (debug builds, ``nvcc -G``, give every function one);
        the others' depots lie in the kernel's frame."""
        return self.recursive or bool(self.sass_frame)

    @property
    def frame_cost(self) -> int:
        """Stack bytes one activation takes below its caller's stack pointer (see the module docstring): ptxas's
        SASS frame when given, else tcsim's model -- for a recursive function its .local bytes rounded to 16 plus
        :data:`CALL_FRAME_OVERHEAD`, for a non-recursive one 0 (its depot lies in the kernel's frame)."""
        if self.sass_frame is not None:
            return self.sass_frame
        if not self.recursive:
            return 0
        return _align(self.frame_size, 16) + CALL_FRAME_OVERHEAD


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
    #: the kernel's frame: its own .local variables and the non-recursive functions' depots (module docstring)
    kernel_frame: int = 0
    #: the end of the deepest non-recursive depot, from the kernel's stack pointer (at most kernel_frame unless
    #: ptxas's kernel frame is smaller than the declared variables)
    static_end: int = 0
    #: the local address the stack grows down from
    stack_top: int = 0
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

    @property
    def kernel_sp(self) -> int:
        """The kernel's stack pointer: the local address of its frame (its own .local variables start there)."""
        return self.stack_top - self.kernel_frame

    def stack_capacity(self, stack_size: int) -> int:
        """Bytes of stack each thread gets: the static need of an acyclic program, else the launch's limit (at
        least the kernel's frame)."""
        if not self.recursive:
            return self.static_stack
        return max(int(stack_size), self.kernel_frame)


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
        lf.depot_align = max([1] + [v.alignment for v in fn.locals if v.space == "local"])
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
    _mark_recursive(functions, by_name)
    static_end, static_align = _place_depots(functions, by_name)
    amap = address_map(module.arch)
    k = functions[0]
    kernel_frame = k.sass_frame if k.sass_frame is not None else amap.local_frame(static_end, static_align)
    recursive, static = _stack_need(functions, by_name, kernel_frame)
    lk = Linkage(functions, by_name, np.asarray(owner, dtype=np.int64), sentinels, recursive, static,
                 kernel_frame=kernel_frame, static_end=static_end, stack_top=amap.local_stack_top)
    for f in functions:
        for j, ins in enumerate(f.fn.body):
            if ins.opcode == "call":
                lk.return_sites[f.base + j] = f.base + j + 1
    return lk


def _mark_recursive(functions, by_name) -> None:
    """Mark every function on a cycle of the call graph (it can reach itself)."""
    for f in functions:
        seen, todo = set(), list(f.callees)
        while todo:
            n = todo.pop()
            if n == f.name:
                f.recursive = True
                break
            if n not in seen:
                seen.add(n)
                todo.extend(by_name[n].callees)


def _place_depots(functions, by_name) -> tuple[int, int]:
    """Give every non-recursive function its depot's offset from the kernel's stack pointer (module docstring):
    the end of the depots live while any of its callers runs, rounded up to its alignment.  Returns (the end of
    the deepest depot, the largest alignment among the kernel's and the placed depots)."""
    callers: dict = {f.name: [] for f in functions}
    for f in functions:
        for c in f.callees:
            callers[c].append(f.name)
    k = functions[0]
    live = {f.name: 0 for f in functions}           # end of the depots live while f runs
    live[k.name] = k.frame_size
    k.static_offset = 0
    for _ in range(len(functions) + 1):             # a fixpoint: static functions form a DAG, cycles only copy
        changed = False
        for f in functions[1:]:
            below = max([live[c] for c in callers[f.name]], default=0)
            if f.own_frame:
                end, off = below, None
            else:
                off = _align(below, f.depot_align)
                end = off + f.frame_size
            if end != live[f.name] or off != f.static_offset:
                live[f.name], f.static_offset, changed = end, off, True
        if not changed:
            break
    align = max([k.depot_align] + [f.depot_align for f in functions[1:] if not f.own_frame])
    return max(live.values()), align


def _stack_need(functions, by_name, kernel_frame: int) -> tuple[bool, int]:
    """(has a cycle, deepest stack of an acyclic graph: the kernel's frame plus the costliest call chain)."""
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
    return False, kernel_frame + r


def check_stack_size(value) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
        raise LaunchError(f"stack_size {value!r} is not a byte count", expected="a non-negative int "
                          "(cudaLimitStackSize; CUDA's default is 1024)")
    return int(value)


__all__ = ["CALL_FRAME_OVERHEAD", "DEFAULT_STACK_SIZE", "FUNCTION_BASE", "SYSTEM_CALLS", "StackOverflow",
           "LinkedFunction", "Linkage", "link", "frame_layout", "param_var_sizes", "check_stack_size"]
