"""Automatic minimisation of fuzz programs (delta debugging over the program tree).

``minimize(prog, pred)`` shrinks ``prog`` while ``pred`` keeps holding.  ``pred`` is *batched*: it takes a list
of candidate programs and returns one bool per candidate, so a GPU predicate can JIT and run a whole level of
candidates in one child process.  Every candidate is a tree that :meth:`Program.render` turns into a valid
program (the tree's invariants: rounds are deleted whole or read by read, never their write or their
synchronisation alone; labels, SMEM layout, mbarrier parities and set-up code are derived at render time), so
minimisation never produces a program that ptxas rejects or that has a data race.

Passes, repeated until nothing changes (or the time limit):
1. fewer warps (1, then the others below the current count) -- not while wgmma items are left (they need the
   whole warpgroup);
2. ddmin deletion of nodes (top-level items, items inside blocks, round reads, the instructions of a
   wgmma-group), chunk sizes halving;
3. structural simplification, one change per candidate: unwrap an ``if``/loop into its body, drop an
   instruction's guard predicate;
4. input simplification: a register's input slot set to 0 for every thread, or to thread 0's value for every
   thread; the bulk area set to 0.
"""
from __future__ import annotations

import time

from .generator import If, Ins, Loop, N16, N32, N64, OFF16, OFF32, OFF64, OFFP, Program, Round, STRIDE
from .wgmma_ops import WgGroup


# ============================================================================================ tree edits

def node_ids(items, out=None) -> list:
    """Deletable node ids in pre-order."""
    out = [] if out is None else out
    for it in items:
        out.append(it.id)
        if isinstance(it, (If, Loop)):
            node_ids(it.body, out)
        elif isinstance(it, Round):
            out.extend(r.id for r in it.reads)
        elif isinstance(it, WgGroup) and len(it.ops) > 1:
            out.extend(op.id for op in it.ops)
    return out


def _filter(items, ids: set) -> list:
    res = []
    for it in items:
        if it.id in ids:
            continue
        if isinstance(it, (If, Loop)):
            it.body = _filter(it.body, ids)
        elif isinstance(it, Round):
            it.reads = [r for r in it.reads if r.id not in ids]
        elif isinstance(it, WgGroup):
            it.ops = [op for op in it.ops if op.id not in ids]
            if not it.ops:
                continue
        res.append(it)
    return res


def delete(prog: Program, ids) -> Program:
    p = prog.copy()
    p.items = _filter(p.items, set(ids))
    return p


def _edit(items, target: int, fn) -> tuple:
    """Apply fn(item) -> list of items to the node with id target; returns (new items, found)."""
    res = []
    found = False
    for it in items:
        if it.id == target:
            res.extend(fn(it))
            found = True
            continue
        if not found and isinstance(it, (If, Loop)):
            it.body, found = _edit(it.body, target, fn)
        res.append(it)
    return res, found


def unwrap(prog: Program, target: int) -> Program:
    p = prog.copy()
    p.items, _ = _edit(p.items, target, lambda it: list(it.body))
    return p


def unguard(prog: Program, target: int) -> Program:
    p = prog.copy()

    def fn(it):
        it.guard = None
        return [it]
    p.items, _ = _edit(p.items, target, fn)
    return p


def _walk(items):
    for it in items:
        yield it
        if isinstance(it, (If, Loop)):
            yield from _walk(it.body)


def structural_candidates(prog: Program) -> list:
    out = []
    for it in _walk(prog.items):
        if isinstance(it, (If, Loop)):
            out.append(unwrap(prog, it.id))
        elif isinstance(it, Ins) and it.guard:
            out.append(unguard(prog, it.id))
    return out


def _slots():
    s = [(OFF32 + 4 * i, 4) for i in range(N32)]
    s += [(OFF64 + 8 * i, 8) for i in range(N64)]
    s += [(OFF16 + 2 * i, 2) for i in range(N16)]
    s.append((OFFP, 4))
    return s


def input_changes(prog: Program) -> list:
    """Simplifications of the input that change something: ('zero'|'uniform', offset, size) per register slot
    (every thread), ('bulk', 0, 0) for the bulk area."""
    out = []
    nt = prog.nthreads
    rec = prog.inputs[:nt * STRIDE].reshape(nt, STRIDE)
    for off, size in _slots():
        col = rec[:, off:off + size]
        if col.any():
            out.append(("zero", off, size))
        if not (col == col[0]).all():
            out.append(("uniform", off, size))
    if prog.inputs[4 * 32 * STRIDE:].any():
        out.append(("bulk", 0, 0))
    return out


def apply_input_changes(prog: Program, changes) -> Program:
    p = prog.copy()
    nt = p.nthreads
    r = p.inputs[:nt * STRIDE].reshape(nt, STRIDE)
    for mode, off, size in changes:
        if mode == "zero":
            r[:, off:off + size] = 0
        elif mode == "uniform":
            r[:, off:off + size] = r[0, off:off + size]
        else:
            p.inputs[4 * 32 * STRIDE:] = 0
    return p


def input_candidates(prog: Program) -> list:
    return [apply_input_changes(prog, [c]) for c in input_changes(prog)]


# ============================================================================================ the driver

class _Budget:
    def __init__(self, time_limit, max_evals):
        self.t_end = time.time() + time_limit if time_limit else None
        self.max_evals = max_evals
        self.evals = 0

    def out(self) -> bool:
        return (self.t_end is not None and time.time() > self.t_end) or \
            (self.max_evals is not None and self.evals >= self.max_evals)


def _first(pred, cands, budget, batch) -> Program | None:
    """The first candidate (in order) for which pred holds, evaluating ``batch`` at a time."""
    for i in range(0, len(cands), batch):
        if budget.out():
            return None
        part = cands[i:i + batch]
        budget.evals += len(part)
        res = pred(part)
        for c, ok in zip(part, res):
            if ok:
                return c
    return None


def ddmin_delete(prog: Program, pred, budget, batch) -> Program:
    ids = node_ids(prog.items)
    n = 2
    while ids and not budget.out():
        n = min(n, len(ids))
        size = -(-len(ids) // n)
        chunks = [ids[i:i + size] for i in range(0, len(ids), size)]
        hit = _first(pred, [delete(prog, c) for c in chunks], budget, batch)
        if hit is not None:
            prog = hit
            ids = node_ids(prog.items)
            n = max(n - 1, 2)
            continue
        if n >= len(ids):
            break
        n = min(2 * n, len(ids))
    return prog


def minimize(prog: Program, pred, time_limit: float | None = 120.0, max_evals: int | None = None,
             batch: int = 64, stats: dict | None = None, check_first: bool = True) -> Program:
    """Shrink ``prog`` while ``pred([program]) == [True]`` (see module docstring).  Returns the smallest
    program found (``prog`` itself when pred does not hold for it)."""
    budget = _Budget(time_limit, max_evals)
    t0 = time.time()
    before = prog.instruction_count()
    if check_first:
        budget.evals += 1
        if not pred([prog])[0]:
            if stats is not None:
                stats.update(reproduced=False, evaluations=budget.evals)
            return prog
    while not budget.out():
        changed = False
        if prog.nwarps > 1 and not prog.has_wgmma:      # (wgmma needs its whole warpgroup)
            cands = []
            for w in range(1, prog.nwarps):
                c = prog.copy()
                c.nwarps = w
                cands.append(c)
            hit = _first(pred, cands, budget, batch)
            if hit is not None:
                prog, changed = hit, True
        n0 = prog.instruction_count()
        prog = ddmin_delete(prog, pred, budget, batch)
        changed |= prog.instruction_count() != n0
        while not budget.out():
            hit = _first(pred, structural_candidates(prog), budget, batch)
            if hit is None:
                break
            prog, changed = hit, True
            prog = ddmin_delete(prog, pred, budget, batch)
        if not budget.out():
            changes = input_changes(prog)
            # one batch for every single change, then all successful ones together (checked), else the first
            ok = []
            for i in range(0, len(changes), batch):
                part = changes[i:i + batch]
                budget.evals += len(part)
                ok += [c for c, r in zip(part, pred([apply_input_changes(prog, [c]) for c in part])) if r]
                if budget.out():
                    break
            if ok:
                both = apply_input_changes(prog, ok)
                budget.evals += 1
                prog = both if len(ok) > 1 and pred([both])[0] else apply_input_changes(prog, ok[:1])
                changed = True
        if not changed:
            break
    if stats is not None:
        stats.update(reproduced=True, evaluations=budget.evals, before=before, after=prog.instruction_count(),
                     seconds=round(time.time() - t0, 1), timed_out=budget.out())
    return prog


__all__ = ["minimize", "delete", "unwrap", "unguard", "node_ids", "input_changes", "apply_input_changes",
           "input_candidates", "structural_candidates"]
