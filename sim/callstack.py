"""The call stack of the 32 threads of a warp: activation records of device-function calls (PTX ISA §9.7.12.5
call, §9.7.12.6 ret, and the ABI of §7: ``.param`` arguments and return values, ``.local`` frames).

Machine state only (nothing here decodes PTX): the call semantics (:mod:`tcsim.semantics.calls`) drive it through
the execution context.  Each thread has its own stack, so the lanes of a warp may call different functions
(an indirect call through per-lane pointers) or sit at different recursion depths.

* Every linked function (:mod:`tcsim.linker`) has one register file and one set of ``.param`` variables per warp
  (an :class:`Activation`); the warp executes with the file of the function at its PC.
* A call by some lanes pushes one :class:`Frame` on each lane's stack: the return PC, the caller's frame base and
  stack pointer, where the return values go.  When a lane calls a function that is already active on its stack
  (recursion), the callee's registers and ``.param`` variables are saved in the frame first and restored by the
  matching ``ret``, so each activation sees its own.
* ``.local`` frames, as the GPU lays them out (:mod:`tcsim.linker`'s docstring): the stack grows down from the
  stack top; a callee whose depot lies in the kernel's frame has it at its fixed offset from the kernel's stack
  pointer, a callee with a frame of its own (recursive, or given one by ptxas: :attr:`tcsim.linker.LinkedFunction.
  own_frame`; its size :attr:`~tcsim.linker.LinkedFunction.frame_cost`, ptxas's or tcsim's model) has it pushed
  below the caller's stack pointer and its depot at the new stack pointer.  A call that would take the
  thread's stack use (the top minus its stack pointer) past its capacity raises
  :class:`tcsim.linker.StackOverflow`.
"""
from __future__ import annotations

import numpy as np

from .linker import StackOverflow, _align
from .memory import CallParams
from .ptxtypes import container

WARP = 32


def make_regfile(regs: dict) -> dict:
    """Zeroed 32-lane registers for a function's ``regs`` table (name -> (type, vector))."""
    out = {}
    for name, (ptype, vec) in regs.items():
        if vec != 1:
            for i in range(vec):
                out[f"{name}.{i}"] = np.zeros(WARP, dtype=container(ptype))
        out[name] = np.zeros(WARP, dtype=container(ptype))
    return out


class Activation:
    """One function's per-warp state: its registers and its ``.param`` variables."""

    __slots__ = ("regs", "params")

    def __init__(self, regs: dict, params: CallParams):
        self.regs = regs
        self.params = params

    def snapshot(self) -> tuple:
        return ({k: v.copy() for k, v in self.regs.items()}, self.params.snapshot())

    def restore(self, snap: tuple, lanes: np.ndarray) -> None:
        regs, params = snap
        for k, v in regs.items():
            self.regs[k][lanes] = v[lanes]
        self.params.restore(params, lanes)


class Frame:
    """What a call pushed on the stacks of the lanes that made it (shared by them)."""

    __slots__ = ("caller", "callee", "return_pc", "base", "sp", "saved", "returns")

    def __init__(self, caller: int, callee: int, return_pc: int, base: np.ndarray, sp: np.ndarray, saved,
                 returns: tuple):
        self.caller = caller
        self.callee = callee
        self.return_pc = return_pc
        self.base = base                # the caller's depot address, per lane (restored by ret)
        self.sp = sp                    # the caller's stack pointer, per lane
        self.saved = saved              # the callee's Activation snapshot (recursion), or None
        self.returns = returns          # caller-side .param names receiving the return values


class CallStack:
    """The stacks of a warp's threads (see the module docstring)."""

    def __init__(self, link, capacity: int):
        self.link = link
        self.capacity = int(capacity)
        n = len(link.functions)
        self.activations = [Activation(make_regfile(f.fn.regs), CallParams(f.param_vars)) for f in link.functions]
        self.frames = [[] for _ in range(WARP)]
        #: the local address of the executing function's .local variables (its depot), per thread
        self.base = np.full(WARP, link.kernel_sp, dtype=np.int64)
        #: each thread's stack pointer (local address); the stack grows down from link.stack_top
        self.sp = np.full(WARP, link.kernel_sp, dtype=np.int64)
        #: activations of each function on each lane's stack
        self.active = np.zeros((n, WARP), dtype=np.int32)
        self.active[0] = 1

    @property
    def used(self) -> np.ndarray:
        """Stack bytes each thread's activations take (what cudaLimitStackSize bounds): the top minus its stack
        pointer."""
        return self.link.stack_top - self.sp

    def depth(self, lane: int) -> int:
        return len(self.frames[lane])

    def enter(self, lanes: np.ndarray, caller: int, callee: int, return_pc: int, returns: tuple) -> Activation:
        """Lanes ``lanes`` (a mask) call function ``callee`` from ``caller``: check the stack, save a recursive
        callee's state and push the frame.  Returns the callee's activation, whose parameters the execution
        context then fills with the arguments."""
        f = self.link.functions[callee]
        sel = np.nonzero(lanes)[0]
        new_sp = self.sp[sel] - f.frame_cost           # the callee's frame below the caller's stack pointer
        if f.own_frame:                                 # its depot at the new stack pointer (aligned up for it)
            start = (new_sp + f.depot_align - 1) // f.depot_align * f.depot_align
        else:                                           # its depot at its place in the kernel's frame
            start = np.full(sel.size, self.link.kernel_sp + f.static_offset, dtype=np.int64)
        new_used = self.link.stack_top - new_sp
        over = new_used > self.capacity
        if over.any():
            lane = int(sel[np.nonzero(over)[0][0]])
            raise StackOverflow(
                f"call of {f.name} by lane {lane} at call depth {self.depth(lane) + 1} needs "
                f"{int(new_used[np.nonzero(over)[0][0]])} bytes of stack; the thread has {self.capacity} "
                + (f"(each activation of {f.name} takes {f.frame_cost} bytes, its SASS frame by ptxas -v)"
                   if f.sass_frame is not None else
                   f"(each activation of {f.name} takes {f.frame_cost} bytes: {f.frame_size} of .local and "
                   f"{f.frame_cost - _align(f.frame_size, 16)} of call overhead, tcsim's frame model; "
                   f"Launch(stack_frames='ptxas') uses ptxas's frame sizes)"),
                expected="recursion that fits cudaLimitStackSize (Launch(stack_size=...), 1024 bytes per thread "
                         "by default), or a bounded depth")
        act = self.activations[callee]
        saved = act.snapshot() if (self.active[callee][sel] > 0).any() else None
        frame = Frame(caller, callee, return_pc, self.base.copy(), self.sp.copy(), saved, tuple(returns))
        for lane in sel:
            self.frames[lane].append(frame)
        self.base[sel] = start
        self.sp[sel] = new_sp
        self.active[callee][sel] += 1
        return act

    def pop(self, lanes: np.ndarray) -> list:
        """Lanes ``lanes`` return: pop their frames; ``[(lane mask, frame)]``, one per frame (lanes that called
        together return together).  The context passes the return values and then calls :meth:`unwind`."""
        groups: dict = {}
        for lane in np.nonzero(lanes)[0]:
            fr = self.frames[lane].pop()
            groups.setdefault(id(fr), (fr, []))[1].append(lane)
        out = []
        for fr, ls in groups.values():
            m = np.zeros(WARP, dtype=bool)
            m[ls] = True
            out.append((m, fr))
        return out

    def unwind(self, m: np.ndarray, fr: Frame) -> None:
        """Finish the return of lanes ``m`` from ``fr``: restore a recursive callee's registers and parameters
        and the caller's frame base and stack pointer."""
        if fr.saved is not None:
            self.activations[fr.callee].restore(fr.saved, m)
        self.base[m] = fr.base[m]
        self.sp[m] = fr.sp[m]
        self.active[fr.callee][m] -= 1

    def frames_of(self, lane: int) -> list:
        """The function names on ``lane``'s stack, outermost first."""
        names = [self.link.functions[0].name]
        names += [self.link.functions[fr.callee].name for fr in self.frames[lane]]
        return names


__all__ = ["Activation", "Frame", "CallStack", "make_regfile", "StackOverflow"]
