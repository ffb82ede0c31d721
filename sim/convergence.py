"""Warp reconvergence before warp-collective instructions (what ptxas and the hardware do).

PTX ISA 9.1, e.g. §9.7.16.7.1 (tcgen05.alloc): "The mandatory ``.sync`` qualifier indicates that the instruction
causes the executing thread to wait until all threads in the warp execute the same instruction before resuming
execution"; ``.aligned`` adds that all threads of the warp must execute the *same* instruction (undefined if they
evaluate a guarding condition differently).  The ``.sync`` collectives with a member mask (``shfl.sync``,
``vote.sync``, ``match.sync``, ``redux.sync``, ``elect.sync``, §9.7.9.6 / §9.7.13) likewise make each thread wait
for the non-exited threads of its mask.  ptxas implements this by reconverging the warp (``WARPSYNC`` /
``BSYNC``) before the instruction: in the SASS of ``tcgen05.dealloc`` a ``WARPSYNC.ALL`` precedes it.

So lanes that reach such an instruction while siblings are still behind -- e.g. lanes 1-31 at a
``tcgen05.dealloc.sync.aligned`` while lane 0 waits in ``cp.async.bulk.wait_group.read`` (ThunderKittens' store
epilogue) -- wait there (the engine *parks* them) and the others run first; the instruction executes once every
live lane of the member mask has arrived.  This is defined behaviour (no finding): every thread executes the same
instruction, it only arrives later.

A real divergence still gets the semantics' located diagnostic (:meth:`tcsim.context.ExecContext.require_converged`):
lanes predicated off at the instruction, lanes that can no longer reach it (the control-flow graph has no path
from their PC to it: they took a path that skips it), lanes that exited (for ``.aligned`` tcgen05 instructions,
"undefined if any thread in the warp has exited"), and lanes parked at a different collective (neither can go on).

This module holds the pure parts: which instructions are collectives (:func:`collective_members`) and the CFG
reachability the engine asks (:class:`Reachability`).  The engine (``Simulation._converge``) does the parking.
"""
from __future__ import annotations

from tcsim.isa import ir

#: opcodes whose ``.sync`` form takes a member mask as its last operand
MEMBERMASK_OPCODES = ("shfl", "vote", "match", "redux", "elect")
#: barriers have their own warp/CTA rules (sim/semantics/barrier.py)
_NOT_HERE = ("bar", "barrier")

ALL = "all"


def collective_members(ins: ir.Instruction):
    """None if ``ins`` is not a warp-collective ``.sync`` instruction; :data:`ALL` when every lane of the warp takes
    part (``.sync.aligned``, and ``tcgen05.ld/st`` whose ``.aligned`` ptxas lets one omit); else the member-mask
    operand."""
    mods = ins.mods
    if ins.opcode in _NOT_HERE or "sync" not in mods:
        return None
    if ins.opcode in MEMBERMASK_OPCODES:
        return ins.operands[-1] if ins.operands else ALL
    if "aligned" in mods or ins.opcode == "tcgen05":
        return ALL
    return None


class Reachability:
    """Can control get from PC ``a`` to PC ``b`` in the function body (branches, fall-through; exit/ret/trap end
    a path unless guarded)?  Answers are cached."""

    def __init__(self, body, labels: dict, branch_targets: dict, link=None):
        self.body = body
        self.labels = labels
        self.branch_targets = branch_targets
        #: a linked program (tcsim.linker): labels are per function, ``call`` leads into the callees (and on to
        #: the next instruction), a function's ``ret`` to every return site
        self.link = link if link is not None and len(link.functions) > 1 else None
        self._succ: dict = {}
        self._reach: dict = {}

    def successors(self, pc: int) -> tuple:
        s = self._succ.get(pc)
        if s is not None:
            return s
        n = len(self.body)
        out = []
        if pc < n:
            ins = self.body[pc]
            guarded = ins.guard is not None
            op = ins.opcode
            labels, targets, base = self.labels, self.branch_targets, 0
            lf = None
            if self.link is not None:
                lf = self.link.function_at(pc)
                labels, targets, base = lf.fn.labels, lf.fn.branch_targets, lf.base
            if op == "bra":
                t = ins.operands[0] if ins.operands else None
                name = getattr(t, "name", None)
                if name in labels:
                    out.append(base + labels[name])
                if guarded:
                    out.append(pc + 1)
            elif op == "brx":
                tl = ins.operands[-1] if ins.operands else None
                for name in targets.get(getattr(tl, "name", None), ()):
                    if name in labels:
                        out.append(base + labels[name])
                if guarded:
                    out.append(pc + 1)
            elif op == "call" and lf is not None:
                ops = [o for o in ins.operands if not isinstance(o, ir.ParenList)]
                name = getattr(ops[0], "name", None) if ops else None
                callee = self.link.by_name.get(name)
                if callee is not None:
                    out.append(callee.base)
                elif ops and isinstance(ops[0], ir.Reg):
                    out.extend(self.link.by_name[c].base for c in sorted(lf.callees))
                out.append(pc + 1)
            elif op == "ret" and lf is not None and lf.index > 0:
                out.extend(sorted(self.link.return_sites.values()))
                if guarded:
                    out.append(pc + 1)
            elif op in ("exit", "ret", "trap"):
                if guarded:
                    out.append(pc + 1)
            else:
                out.append(pc + 1)
        s = self._succ[pc] = tuple(x for x in out if x <= n)
        return s

    def reaches(self, a: int, b: int) -> bool:
        """True if a path of one or more steps leads from ``a`` to ``b``, or ``a == b``."""
        if a == b:
            return True
        key = (a, b)
        r = self._reach.get(key)
        if r is None:
            seen = {a}
            todo = [a]
            r = False
            while todo and not r:
                for s in self.successors(todo.pop()):
                    if s == b:
                        r = True
                        break
                    if s not in seen:
                        seen.add(s)
                        todo.append(s)
            self._reach[key] = r
        return r
