"""The loop monitor: a warp in a loop that can never end, or not within the run's budget, is reported at once.

The run watch (:mod:`tcsim.watch`) asks :meth:`LoopMonitor.sample` every :data:`LOOP_EVERY` seconds once a run has
taken :data:`LOOP_AFTER` seconds; a run shorter than that never pays for it.  A sample looks at every live warp:

* **The loops** (built once per program): every branch back to an earlier PC closes a loop whose body is the PCs on a
  path from its head to that branch (loops sharing a head are one); a ``call`` counts as one instruction that
  returns.  Its **exits** are the edges that leave the body (a guarded branch out, the fall-through of a guarded
  branch back, a guarded ``exit``/``ret``/``trap``).  A loop with no exit, or a call to a function that may
  ``exit``/``trap``, is marked as such.
* **The governing compare** of an exit: the one instruction of the body that writes the exit's guard predicate --
  a ``setp`` (without a ``.and/.or/.xor`` predicate operand) or an ``mbarrier.test_wait/try_wait``; no write in the
  body: the predicate is invariant.  A ``setp`` operand is classed by the body's writes of it: *invariant* (not
  written, or written only from invariants by a pure instruction; ``ld.param/ld.const`` of an invariant address;
  special registers other than clocks and counters), an *induction variable* (one write ``add/sub r, r, step``
  with an invariant step, integer or ``f32/f64``, or one ``mov/add/sub/mul.lo/shl/mad.lo`` of one with
  invariants), *memory* (an ``ld`` of an invariant address: constant while memory does not change) or unknown
  (anything else: a clock, an atomic, data: such a loop is never judged).
* **Per lane**, from the registers' current values: the first iteration at which the exit could fire.  Integers
  are followed exactly modulo 2^width: an equality test by solving the linear congruence (a counter stepping by 2
  never equals an odd bound), an ordered test segment by segment between wrap-arounds (``i >= 0`` on an unsigned
  counter never fails).  Floats: a step absorbed by the value (``x + s == x``) or moving away never arrives,
  otherwise at least ``distance / (2 |step|)`` iterations (round-to-nearest at most doubles a step).  Each
  iteration costs at least the shortest cycle through the counter's update in the body, so ``k`` iterations are at
  least ``k * cycle`` warp-instructions.
* **Verdicts**.  A lane is *stuck* when no exit of a loop it is in can fire (never), or not within the budget's
  horizon (the warp-instructions left of ``max_instructions``; for a budget in seconds, the run's best rate so far
  times the seconds left times :data:`RATE_MARGIN`).  A lane stuck on registers alone (invariants and induction
  variables, nothing asynchronous in flight that writes them) is stuck whatever other warps do: the warp is
  reported when two consecutive samples agree.  A lane stuck on memory (a bound or flag loaded from memory, an
  mbarrier poll) is stuck only if nobody changes that memory: reported when, at two consecutive samples, nothing
  but the warps is in flight, every live warp is blocked (waiting at a barrier, parked) or stuck, no loop that is
  stuck on memory can write memory or arrive anywhere (no store, atomic, reduction, copy, arrive, barrier, call),
  and the memories (shared, global, tensor memory, mbarriers, barriers) did not change between the samples.  When
  the warps' registers did not change either, the whole machine state repeated: that is reported as the livelock
  detector reports it (:class:`~tcsim.isa.errors.LivelockError`).
* **Per cluster** (:meth:`LoopMonitor._cluster_sample`): only the warps and async operations of a cluster can
  write its shared memory (DSMEM included) and arrive on its mbarriers and barriers.  A lane stuck on memory that
  is its cluster's (a flag loaded with ``ld.shared``, an mbarrier poll) is therefore stuck whatever other clusters
  do, once every live warp of its cluster is blocked or stuck in a loop that writes nothing, no TMA / bulk / cp.async
  copy, tensor-pipe or wgmma op of the cluster's CTAs is in flight, and the cluster's memories did not change over
  two samples at least :data:`tcsim.watch.LIVELOCK_MIN_CYCLES` cycles apart (the run watch gives the monitor that
  margin and the cluster fingerprint when it makes it): the polling warp is reported while the other CTAs still run
  (a cluster whose warps all wait: a :class:`~tcsim.isa.errors.DeadlockError` of that cluster, with the engine's
  root causes).  Another warp of the CTA still working, a CTA of the cluster that can
  still store through DSMEM, an async copy in flight: no verdict.

* **Clock waits.**  A register that is a time counter (``%clock``, ``%clock64``, ``%globaltimer``,
  ``%globaltimer_lo``) plus or minus invariants, compared with an invariant of the same width, governs a
  *clock-wait exit*: per lane, the first cycle at which it fires is solved exactly (the counter steps by one per
  cycle -- per nanosecond for the global timer -- modulo 2^width, the same arithmetic as a counter's); one that can
  never fire (before cycle 2^62) makes the lane stuck like any other exit.  When, at two consecutive samples with
  memory unchanged and nothing but the warps in flight, every live warp is blocked, stuck, or in a clock wait (its
  innermost loop writes no memory, arrives nowhere, calls nothing, and its other exits cannot fire while memory
  does not change), nothing but the passing of time can change the machine: simulated time then skips to
  :data:`SKIP_MARGIN` cycles before the earliest deadline (:meth:`tcsim.engine.Simulation.skip_time`: every
  queued event moves by as much, as if the machine had paused while the clock ran on; the run's warnings say so),
  and the wait ends after a few more iterations at about the cycle it would have -- a spin of 10^8 cycles takes
  a second instead of hours.
* **The livelock detector's account** (:meth:`LoopMonitor.explain_stuck`): when the livelock detector
  (:mod:`tcsim.watch`) sees the machine repeat up to registers that only count, the monitor's verdict on the first
  stuck warp, if it has one, is the report (located at the compare, with its values).

The report (:class:`~tcsim.isa.errors.NonTerminatingLoopError`, a :class:`~tcsim.isa.errors.RunawayError`) is
located at the governing compare (or the loop's back branch) and names the loop's lines, the compare, the observed
values and steps, and the iterations left (or why never).  Loops it cannot judge are left to the budget
(:data:`tcsim.watch.DEFAULT_MAX_SECONDS`) and the livelock detector.  Not supported: predicates combined by
``and/or/not.pred`` or ``setp``'s boolean operand, counters compared with each other, derived counters through
``cvt`` widening or shifts right, ``f16/bf16`` compares, counters updated in a called function; a clock read
widened by ``cvt`` or compared with a counter or with memory, clock waits while some warp is working (time is
skipped only when nothing else runs), ``%clock_hi``.
"""
from __future__ import annotations

import math
import struct
import time
from dataclasses import dataclass, field

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import NonTerminatingLoopError
from .context import lanes_str
from .ptxtypes import imm_bits

#: seconds of run time before the first sample, and between two samples
LOOP_AFTER = 3.0
LOOP_EVERY = 1.0
#: a budget in seconds: the horizon is the best rate so far times the seconds left times this (a rate measured early
#: may be low: warm-up, compilation)
RATE_MARGIN = 3.0
#: live warps a sample looks at for the system-wide (memory) verdict; more, and only register-stuck warps are sought
#: among the first of them
SYSTEM_WARPS = 4096
SELF_WARPS = 512
#: a skip over a clock wait stops this many cycles before the deadline, and is made only when it saves at least
#: SKIP_MIN cycles
SKIP_MARGIN = 256
#: a clock-wait deadline at or past this cycle (~73 years at 2 GHz) counts as never
CLOCK_LIMIT = 1 << 62
SKIP_MIN = 4096
#: wrap-around segments an ordered compare is followed through
SEGMENTS = 64
#: a sample stops looking at further warps after this many seconds (CPU time, like the run watch's clock); the next
#: sample comes at least MAX_SHARE times the last one's duration later
SAMPLE_SECONDS = 0.5
MAX_SHARE = 10.0

_CMP = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "lo": "lt", "ls": "le",
        "hi": "gt", "hs": "ge", "equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge"}
_UNSIGNED_CMP = {"lo", "ls", "hi", "hs"}
_INT_TYPES = {f"{k}{w}": w for k in "sub" for w in (16, 32, 64)}
_FLOAT_TYPES = {"f32": 32, "f64": 64}
#: special registers whose value changes while a warp runs
_TIME_SREG_PREFIX = ("%clock", "%globaltimer", "%pm")
#: opcodes whose destination depends on more than their register operands (memory, other lanes, time, async units)
_IMPURE = frozenset(("ld", "ldu", "atom", "red", "shfl", "vote", "match", "redux", "mbarrier", "tex", "tld4", "suld",
                     "activemask", "elect", "ldmatrix", "movmatrix", "tcgen05", "wgmma", "mma", "wmma", "call",
                     "multimem", "cp", "getctarank", "clusterlaunchcontrol", "istypep", "txq", "suq", "alloca",
                     "stacksave"))
#: opcodes that write memory, arrive somewhere or call: a loop stuck on memory must have none
_WRITERS = frozenset(("st", "stmatrix", "atom", "red", "cp", "bar", "barrier", "tcgen05", "wgmma", "multimem",
                      "tensormap", "griddepcontrol", "call", "discard", "clusterlaunchcontrol", "wmma",
                      "setmaxnreg", "trap", "exit", "ret", "brkpt"))
_MBAR_POLLS = ("test_wait", "try_wait")
#: time special registers a clock-wait loop may compare: name -> (width, unit: 'cycle' or 'ns')
_CLOCKS = {"%clock": (32, "cycle"), "%clock64": (64, "cycle"), "%globaltimer": (64, "ns"),
           "%globaltimer_lo": (32, "ns")}


class _Unknown(Exception):
    """The loop or exit cannot be judged (the reason is kept for tests)."""


# ---------------------------------------------------------------------------------------------- static loops
@dataclass
class Exit:
    node: int                   # the PC that leaves the body
    pred: object                # the guard's predicate register (ir.Reg), None: unguarded
    fire_when: bool | None      # the predicate value that leaves (None: unguarded)
    kind: str                   # 'branch', 'fall-through', 'exit', 'brx'


@dataclass
class Loop:
    head: int
    body: frozenset
    latches: tuple              # PCs branching back to the head
    exits: list
    calls: bool                 # the body calls a function
    call_may_exit: bool         # ... one that may exit/trap
    writes: bool                # the body writes memory, arrives or calls
    defs: dict = field(default_factory=dict)       # register -> PCs of the body writing it
    classes: dict = field(default_factory=dict)    # register -> its class (memo)
    cycles: dict = field(default_factory=dict)     # PC -> shortest cycle through it in the body (memo)

    def lines(self, body) -> tuple:
        ls = [body[p].loc.line for p in self.body if body[p].loc is not None]
        return (min(ls), max(ls)) if ls else (0, 0)


def _regs_in(op):
    if isinstance(op, ir.Reg):
        yield op
    elif isinstance(op, (ir.Vector, ir.ParenList)):
        for e in op.elems:
            yield from _regs_in(e)
    elif isinstance(op, ir.PredPair):
        yield from _regs_in(op.first)
        yield from _regs_in(op.second)
    elif isinstance(op, ir.Not):
        yield from _regs_in(op.operand)


#: opcodes whose first operand is their only destination and whose result is a function of their register and
#: immediate operands alone (a clock read is one: its destination then changes, which is what is compared)
_PURE = frozenset(("add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min", "max",
                   "popc", "clz", "bfind", "fns", "brev", "bfe", "bfi", "dp4a", "dp2a", "and", "or", "xor", "not",
                   "cnot", "lop3", "shf", "shl", "shr", "selp", "slct", "set", "setp", "mov", "cvt", "cvta", "prmt",
                   "testp", "copysign", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "fma", "addc",
                   "subc", "madc", "mapa", "isspacep"))


def _is_pure(ins) -> bool:
    return ins.opcode in _PURE and bool(ins.operands) and \
        isinstance(ins.operands[0], (ir.Reg, ir.Vector, ir.PredPair))


def _regs_of(op):
    """Every register an operand names (address bases and tensor coordinates included)."""
    if isinstance(op, ir.Address):
        if isinstance(op.base, ir.Reg):
            yield op.base
        for c in op.coords or ():
            yield from _regs_of(c)
    elif isinstance(op, (ir.Vector, ir.ParenList)):
        for e in op.elems:
            yield from _regs_of(e)
    else:
        yield from _regs_in(op)


def _regs_read(ins, all_operands: bool = False) -> list:
    """Registers ``ins`` reads: its guard and its operands after the first (``all_operands``: the first too)."""
    out = [ins.guard[0].name] if ins.guard is not None else []
    for op in (ins.operands if all_operands else ins.operands[1:]):
        out.extend(r.name for r in _regs_of(op))
    return out


def _sccs(n: int, succ) -> list:
    """The strongly connected component of each node 0..n-1 (an id), Tarjan's algorithm without recursion."""
    index = [-1] * n
    low = [0] * n
    on = [False] * n
    comp = [-1] * n
    stack: list = []
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on[v] = True
            nxt = [s for s in succ[v] if s < n]
            if i < len(nxt):
                work.append((v, i + 1))
                w = nxt[i]
                if index[w] < 0:
                    work.append((w, 0))
                elif on[w]:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on[w] = False
                    comp[w] = v
                    if w == v:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comp


def _written(ins) -> list:
    """Registers ``ins`` may write (over-approximated: every register of its first operand)."""
    if ins.opcode in ("bra", "brx", "ret", "exit", "trap"):
        return []
    if not ins.operands:
        return []
    return [r.name for r in _regs_in(ins.operands[0])]


class LoopMap:
    """The loops of a linked program and their exits (see the module docstring)."""

    def __init__(self, sim):
        prog = sim.program
        self.body = prog.body
        self.sim = sim
        n = len(self.body)
        reach = sim.reach
        succ = []
        for pc in range(n):
            ins = self.body[pc]
            if ins.opcode == "call":
                succ.append((pc + 1,))
            else:
                succ.append(tuple(s for s in reach.successors(pc) if 0 <= s <= n))
        self.succ = succ
        pred = [[] for _ in range(n + 1)]
        for pc, ss in enumerate(succ):
            for s in ss:
                pred[s].append(pc)
        heads: dict = {}
        for pc, ss in enumerate(succ):
            for s in ss:
                if s <= pc and s < n:
                    heads.setdefault(s, []).append(pc)
        self.loops: list[Loop] = []
        exiting = self._callees_exit(prog)
        #: registers an asynchronous unit writes (wgmma, tcgen05.ld): not judged while something is in flight
        self.async_dests = frozenset(r for ins in self.body if ins.opcode in ("wgmma", "tcgen05")
                                     for r in _written(ins))
        for head, latches in sorted(heads.items()):
            fwd = self._closure(head, succ)
            back = set()
            for lt in latches:
                back |= self._closure(lt, pred, stop=head)
            body = frozenset((fwd & back) | {head})
            if not body:
                continue
            self.loops.append(self._make(head, tuple(latches), body, exiting))
        #: PC -> loops containing it, outermost first
        self.at: dict = {}
        for lp in sorted(self.loops, key=lambda lp: -len(lp.body)):
            for p in lp.body:
                self.at.setdefault(p, []).append(lp)
        self._relevant = None
        self._counted: dict = {}

    # ------------------------------------------------------------------------------------------ relevance
    def relevant_at(self, pc: int):
        """The registers that can influence what a lane at ``pc`` does from now on while it stays in the cycles
        through ``pc`` (its strongly connected component of the control-flow graph), or None when every register
        may (``pc`` on no cycle, or a call in the component).  A lane that stands at ``pc`` at two moments ran only
        instructions of that component in between (leaving a component is for good), so two machine states that
        agree on these registers (and on everything else the livelock detector compares) evolve alike: the other
        registers are written by pure instructions (:data:`_PURE`) only into registers nothing that matters reads --
        a spin loop's attempt counter, a statistic.  What matters: every operand (addresses, data, guards) of an
        instruction that is not such a pure one (memory, atomics, branches, barriers, collectives, async units),
        and, back to a fixed point, the sources and guard of a pure instruction whose destination matters."""
        if self._relevant is None:
            self._relevant = self._relevance()
        return self._relevant.get(pc)

    def _relevance(self) -> dict:
        body, succ = self.body, self.succ
        n = len(body)
        comp = _sccs(n, succ)
        members: dict = {}
        for pc in range(n):
            members.setdefault(comp[pc], []).append(pc)
        out: dict = {}
        for pcs in members.values():
            if len(pcs) == 1 and pcs[0] not in succ[pcs[0]]:
                continue                            # on no cycle
            if any(body[p].opcode == "call" for p in pcs):
                continue
            rel: set = set()
            pure = []
            for p in pcs:
                ins = body[p]
                if _is_pure(ins):
                    pure.append(ins)
                else:
                    rel.update(_regs_read(ins, all_operands=True))
            changed = True
            while changed:
                changed = False
                for ins in pure:
                    if any(r in rel for r in _written(ins)):
                        new = set(_regs_read(ins)) - rel
                        if new:
                            rel |= new
                            changed = True
            frozen = frozenset(rel)
            counted = frozenset(r for ins in pure for r in _written(ins) if r not in rel)
            for p in pcs:
                out[p] = frozen
                self._counted[p] = counted
        return out

    def counted_at(self, pc: int) -> frozenset:
        """The registers the cycles through ``pc`` write but that cannot influence them (see :meth:`relevant_at`):
        a spin loop's attempt counter."""
        self.relevant_at(pc)
        return self._counted.get(pc, frozenset())

    def loop_head(self, pc: int):
        """The head PC of the innermost loop containing ``pc`` (None: ``pc`` is in no loop)."""
        loops = self.at.get(pc)
        return loops[-1].head if loops else None

    def loop_lines(self, pc: int):
        """(first line, last line, head instruction) of the outermost loop containing ``pc``, or None."""
        lps = self.at.get(pc)
        if not lps:
            return None
        lo, hi = lps[0].lines(self.body)
        return lo, hi, self.body[lps[0].head]

    @staticmethod
    def _closure(start, edges, stop=None) -> set:
        seen = {start}
        todo = [start]
        while todo:
            p = todo.pop()
            if p == stop:
                continue
            for q in edges[p] if p < len(edges) else ():
                if q not in seen:
                    seen.add(q)
                    todo.append(q)
        return seen

    @staticmethod
    def _callees_exit(prog) -> bool:
        link = prog.link
        for lf in getattr(link, "functions", ())[1:]:
            if any(i.opcode in ("exit", "trap") for i in lf.fn.body):
                return True
        return False

    def _make(self, head, latches, body, callee_exits) -> Loop:
        exits = []
        calls = writes = False
        defs: dict = {}
        for p in sorted(body):
            ins = self.body[p]
            op = ins.opcode
            if op == "call":
                calls = True
            if op in _WRITERS and not (op in ("trap", "exit", "ret")):
                writes = True
            if op == "mbarrier" and not any(m in _MBAR_POLLS for m in ins.mods):
                writes = True
            for r in _written(ins):
                defs.setdefault(r, []).append(p)
            g = ins.guard
            outside = [s for s in self.succ[p] if s not in body]
            if op == "brx" and outside:
                exits.append(Exit(p, None, None, "brx"))
                continue
            if op in ("exit", "ret", "trap") and not outside:
                if g is not None:
                    exits.append(Exit(p, g[0], not g[1], "exit"))
                continue
            for s in outside:
                if g is None:
                    exits.append(Exit(p, None, None, "branch"))
                    continue
                if op == "bra":
                    tgt = [t for t in self.succ[p] if t != p + 1]
                    taken = s != p + 1 or (tgt and tgt[0] == p + 1)
                else:                               # a guarded ret/exit (linked: to the return sites)
                    taken = True
                fire = (not g[1]) if taken else bool(g[1])
                exits.append(Exit(p, g[0], fire, "branch" if taken else "fall-through"))
        return Loop(head, body=body, latches=latches, exits=exits, calls=calls,
                    call_may_exit=calls and callee_exits, writes=writes or calls, defs=defs)

    # ------------------------------------------------------------------------------------------ classes
    def klass(self, lp: Loop, name: str, depth: int = 0):
        """The class of register ``name`` in ``lp``: ('inv',), ('mem', pc), ('iv', def_pc, step, is_float, width)
        with ``step`` an expression (see :func:`_step_value`), or ('unknown', why)."""
        c = lp.classes.get(name)
        if c is not None:
            return c
        lp.classes[name] = ("unknown", f"{name} depends on itself")      # (a cycle through derived values)
        c = self._klass(lp, name, depth)
        lp.classes[name] = c
        return c

    def _operand_class(self, lp, op, depth):
        if isinstance(op, ir.Imm) or isinstance(op, ir.Sym):
            return ("inv",)
        if isinstance(op, ir.SpecialReg):
            if op.name in _CLOCKS:
                return ("clk", None, op.name, 1, (), _CLOCKS[op.name][0])
            if op.name.startswith(_TIME_SREG_PREFIX):
                return ("unknown", f"{op.name} changes by itself")
            return ("inv",)
        if isinstance(op, ir.Reg):
            return self.klass(lp, op.name, depth + 1)
        if isinstance(op, ir.Vector) and len(op.elems) == 1:
            return self._operand_class(lp, op.elems[0], depth)
        return ("unknown", f"operand {op}")

    def _klass(self, lp, name, depth):
        pcs = lp.defs.get(name)
        if not pcs:
            return ("inv",)
        if len(pcs) > 1 or depth > 8:
            return ("unknown", f"{name} is written {len(pcs)} times in the loop")
        d = pcs[0]
        ins = self.body[d]
        op, mods, ops = ins.opcode, ins.mods, ins.operands
        typ = mods[-1] if mods else ""
        srcs = ops[1:]
        # an induction variable: add/sub r, r, step
        if op in ("add", "sub") and len(ops) == 3 and isinstance(ops[0], ir.Reg) and \
                (typ in _INT_TYPES or typ in _FLOAT_TYPES) and not any(m in ("cc", "sat") for m in mods):
            a, b = ops[1], ops[2]
            is_f = typ in _FLOAT_TYPES
            width = _INT_TYPES.get(typ) or _FLOAT_TYPES[typ]
            if isinstance(a, ir.Reg) and a.name == name and self._operand_class(lp, b, depth)[0] == "inv":
                step = ("op", b, typ) if op == "add" else ("neg", ("op", b, typ))
                return ("iv", d, step, is_f, width)
            if op == "add" and isinstance(b, ir.Reg) and b.name == name and \
                    self._operand_class(lp, a, depth)[0] == "inv":
                return ("iv", d, ("op", a, typ), is_f, width)
        if ins.guard is None and op not in _IMPURE:
            clk = self._clock_class(lp, d, op, mods, typ, srcs, depth)
            if clk is not None:
                return clk
            classes = [self._operand_class(lp, s, depth) for s in srcs]
            if all(c[0] == "inv" for c in classes):
                return ("inv",)
            ivs = [(i, c) for i, c in enumerate(classes) if c[0] == "iv"]
            if len(ivs) == 1 and all(c[0] == "inv" for c in classes if c[0] != "iv") and not ivs[0][1][3]:
                i, c = ivs[0]
                width = _INT_TYPES.get(typ) or (int(typ[1:]) if typ[:1] == "b" and typ[1:].isdigit() else None)
                step = self._derived_step(op, mods, typ, srcs, i, c[2]) if width == c[4] else None
                if step is not None:
                    return ("iv", c[1], step, False, width)
            bad = [c for c in classes if c[0] != "inv"]
            return ("unknown", bad[0][1] if bad and len(bad[0]) > 1 and isinstance(bad[0][1], str) else
                    f"{name} from {ins.full_opcode}")
        if op in ("ld", "ldu") and ins.guard is None and len(ops) >= 2 and isinstance(ops[1], ir.Address):
            base = ops[1].base
            inv_addr = base is None or isinstance(base, ir.Sym) or \
                (isinstance(base, ir.Reg) and self.klass(lp, base.name, depth + 1)[0] == "inv")
            if inv_addr:
                if "param" in mods or "const" in mods:
                    return ("inv",)
                return ("mem", d)
        return ("unknown", f"{name} from {ins.full_opcode}")

    def _clock_class(self, lp, d, op, mods, typ, srcs, depth):
        """A register that is a time counter plus or minus invariants, modulo 2^width: ('clk', def_pc, the special
        register, sign, ((sign, operand, type), ...), width); None when ``op`` is not such a write."""
        width = _INT_TYPES.get(typ) or (int(typ[1:]) if typ[:1] == "b" and typ[1:].isdigit() else None)
        if width not in (32, 64):
            return None
        if op == "mov" and len(srcs) == 1:
            c = self._operand_class(lp, srcs[0], depth)
            if c[0] == "clk" and c[5] == width:
                return ("clk", d, c[2], c[3], c[4], width)
            return None
        if op not in ("add", "sub") or len(srcs) != 2 or any(m in ("cc", "sat") for m in mods) or \
                typ not in _INT_TYPES:
            return None
        ca, cb = (self._operand_class(lp, x, depth) for x in srcs)
        if ca[0] == "clk" and cb[0] == "inv" and ca[5] == width:
            return ("clk", d, ca[2], ca[3], ca[4] + ((1 if op == "add" else -1, srcs[1], typ),), width)
        if cb[0] == "clk" and ca[0] == "inv" and cb[5] == width:
            sign = 1 if op == "add" else -1
            return ("clk", d, cb[2], sign * cb[3], tuple((sign * sg, o, t) for sg, o, t in cb[4]) +
                    ((1, srcs[0], typ),), width)
        return None

    @staticmethod
    def _derived_step(op, mods, typ, srcs, i, step):
        """The per-update step of a pure function of one induction variable (linear modulo 2^width), or None."""
        if op == "mov" and len(srcs) == 1:
            return step
        if typ not in _INT_TYPES:
            return None
        if op in ("add", "sub") and len(srcs) == 2 and not any(m in ("cc", "sat") for m in mods):
            if op == "sub" and i == 1:
                return ("neg", step)
            return step
        if op == "mul" and "lo" in mods and len(srcs) == 2:
            return ("mul", step, ("op", srcs[1 - i], typ))
        if op == "mad" and "lo" in mods and len(srcs) == 3 and i in (0, 1):
            return ("mul", step, ("op", srcs[1 - i], typ))
        if op == "shl" and len(srcs) == 2 and i == 0 and isinstance(srcs[1], ir.Imm):
            return ("shl", step, int(srcs[1].value))
        if op == "neg" and len(srcs) == 1:
            return ("neg", step)
        return None

    def cycle(self, lp: Loop, pc: int) -> int:
        """The fewest instructions on a path from ``pc`` back to ``pc`` inside the body."""
        c = lp.cycles.get(pc)
        if c is None:
            dist = {pc: 0}
            frontier = [pc]
            c = None
            while frontier and c is None:
                nxt = []
                for p in frontier:
                    for s in self.succ[p]:
                        if s == pc:
                            c = dist[p] + 1
                            break
                        if s in lp.body and s not in dist:
                            dist[s] = dist[p] + 1
                            nxt.append(s)
                    if c is not None:
                        break
                frontier = nxt
            c = c or 1
            lp.cycles[pc] = c
        return c


# ---------------------------------------------------------------------------------------------- values
def _as_float(bits: int, width: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0] if width == 32 else \
        struct.unpack("<d", struct.pack("<Q", bits))[0]


def _round(x: float, width: int) -> float:
    return float(np.float32(x)) if width == 32 else float(x)


def _signed(v: int, width: int) -> int:
    return v - (1 << width) if v >> (width - 1) else v


def _holds(cmp: str, d: int) -> bool:
    """cmp(a, b) in terms of d = b - a."""
    return {"lt": d > 0, "le": d >= 0, "gt": d < 0, "ge": d <= 0, "eq": d == 0, "ne": d != 0}[cmp]


def _first_ordered(cmp: str, want: bool, d0: int, e: int, length):
    """The smallest j in [0, length] with cmp(d0 + j*e) == want (cmp on d = b - a), or None."""
    if _holds(cmp, d0) == want:
        return 0
    if e == 0:
        return None
    # the condition to reach, as d > t / d >= t / d < t / d <= t
    rel = {("lt", True): ">", ("lt", False): "<=", ("le", True): ">=", ("le", False): "<",
           ("gt", True): "<", ("gt", False): ">=", ("ge", True): "<=", ("ge", False): ">"}[(cmp, want)]
    if rel in (">", ">=") and e < 0 or rel in ("<", "<=") and e > 0:
        return None
    if rel == ">":
        j = (-d0) // e + 1
    elif rel == ">=":
        j = -((d0) // e)                    # ceil(-d0 / e)
    elif rel == "<":
        j = d0 // (-e) + 1
    else:
        j = -((-d0) // (-e))                # ceil(d0 / -e)
    j = max(j, 0)
    return j if length is None or j <= length else None


def _int_exit(cmp, signed, width, a, sa, b, sb, want, horizon):
    """The first update count k >= 0 at which cmp(a_k, b_k) == want, with a_k = a + k*sa and b_k = b + k*sb modulo
    2^width (``signed``: the compare reads them as two's complement), or None for never; a value past ``horizon``
    may be a lower bound."""
    m = 1 << width
    if cmp in ("eq", "ne"):
        # equal at k: (a - b) + k (sa - sb) == 0 mod 2^w
        c, s = (b - a) % m, (sa - sb) % m
        if c == 0:
            eq0 = True
        else:
            eq0 = False
        if (cmp == "eq") == want:           # fires when equal
            if eq0:
                return 0
            g = math.gcd(s, m)
            if c % g:
                return None
            mg = m // g
            return (c // g) * pow(s // g, -1, mg) % mg
        # fires when different
        if not eq0:
            return 0
        return None if s == 0 else 1
    lo, hi = (-(m >> 1), (m >> 1) - 1) if signed else (0, m - 1)
    # one operand moves: its values repeat after m / gcd(step, m) updates, so no exit in a whole period is never
    period = m // math.gcd(sa or sb, m) if (sa == 0) != (sb == 0) else None
    sa_s, sb_s = _signed(sa, width), _signed(sb, width)
    k = 0
    for _ in range(SEGMENTS):
        va = _signed(a, width) if signed else a
        vb = _signed(b, width) if signed else b
        lens = []
        for v, s in ((va, sa_s), (vb, sb_s)):
            if s > 0:
                lens.append((hi - v) // s)
            elif s < 0:
                lens.append((v - lo) // (-s))
        length = min(lens) if lens else None
        j = _first_ordered(cmp, want, vb - va, sb_s - sa_s, length)
        if j is not None:
            return k + j
        if length is None:
            return None
        k += length + 1
        if period is not None and k >= period:
            return None
        if k > horizon:
            return k
        a = (a + (length + 1) * sa) % m
        b = (b + (length + 1) * sb) % m
    return k


def _float_exit(cmp, a, sa, b, sb, want, width):
    """(lower bound on the updates until cmp(a_k, b_k) == want for floats, one side moving; None for never, why)."""
    if any(math.isnan(x) for x in (a, b, sa, sb)):
        raise _Unknown("a NaN operand")
    ok = {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[cmp]
    if ok == want:
        return 0, None
    if sa != 0 and sb != 0:
        raise _Unknown("both operands move")
    x, s, other = (a, sa, b) if sa != 0 else (b, sb, a)
    if s == 0:
        return None, None
    if math.isinf(x) or _round(x + s, width) == x:
        return None, f"the step is lost in rounding: {x!r} + {s!r} == {x!r} in .f{width}"
    if cmp in ("eq", "ne") and want == (cmp == "ne"):
        return 1, None                      # an equality that holds fails after one move
    d0, e = (other - x, -s) if sa != 0 else (x - other, s)      # d = b - a and its change per update
    if math.isinf(d0):
        return None, "the bound is infinite"
    if cmp in ("eq", "ne"):                 # fires on equality: d reaches 0 (rounding at most doubles a step)
        if d0 * e > 0:
            return None, "the counter moves away from the bound (floats do not wrap)"
        return int(abs(d0) / (2 * abs(e))), None
    j = _first_ordered(cmp, want, d0, 2 * e, None)
    if j is None:
        return None, "the counter moves away from the bound (floats do not wrap)"
    return max(int(j), 1), None


# ---------------------------------------------------------------------------------------------- the monitor
@dataclass
class Verdict:
    """Why a lane is stuck."""
    lane: int
    loop: Loop
    never: bool
    iterations: int | None      # lower bound on the updates left (None: never)
    instructions: int | None    # lower bound on the warp-instructions left
    memory: bool                # stuck only while memory does not change
    text: str                   # the explanation
    loc: object


class LoopMonitor:
    """Samples of the live warps' loops for :class:`tcsim.watch.RunWatch` (see the module docstring)."""

    def __init__(self, watch, min_cycles: int, cluster_fingerprint):
        """``min_cycles``: the fewest simulated cycles between two samples of a cluster's verdict
        (:data:`tcsim.watch.LIVELOCK_MIN_CYCLES`); ``cluster_fingerprint``: a digest of what only a cluster can change
        (:meth:`tcsim.watch.RunWatch.cluster_fingerprint`) -- both given by the run watch that makes the monitor."""
        self.watch = watch
        self.sim = watch.sim
        self.min_cycles = min_cycles
        self.cluster_fingerprint = cluster_fingerprint
        self.map = None
        #: seconds before the first sample and between samples (the module's values at construction)
        self.after, self.every = LOOP_AFTER, LOOP_EVERY
        self.next_at = self.after
        self._prev_self: dict = {}          # (warp id, loop head) -> Verdict at the previous sample
        self._prev_system = None            # (set of (warp, head), memory fingerprint) at the previous sample
        self._prev_clock = None             # the same, when warps waited for the clock
        self._prev_cluster: dict = {}       # cluster id -> ((live warps, memory fingerprint), cycle)
        #: cycles of simulated time skipped over clock waits (see _skip)
        self.skipped = 0
        self._last = None                   # (elapsed, retired) at the previous sample
        self.best_rate = 0.0
        self.samples = 0

    def loop_map(self) -> "LoopMap":
        """The program's :class:`LoopMap` (built at the first use)."""
        if self.map is None:
            self.map = LoopMap(self.sim)
        return self.map

    def due(self, t: float) -> bool:
        return t >= self.next_at

    # ------------------------------------------------------------------------------------------ horizon
    def horizon(self, t: float) -> float:
        sim, w = self.sim, self.watch
        if self._last is not None and t > self._last[0]:
            self.best_rate = max(self.best_rate, (sim.retired - self._last[1]) / (t - self._last[0]))
        self.best_rate = max(self.best_rate, sim.retired / max(t, 1e-9))
        hs = []
        if w.max_instructions is not None:
            hs.append(w.max_instructions - sim.retired)
        if w.max_seconds is not None:
            hs.append(self.best_rate * max(w.max_seconds - t, 0.0) * RATE_MARGIN)
        return max(min(hs), 0) if hs else math.inf

    # ------------------------------------------------------------------------------------------ sample
    def sample(self, t: float):
        """One sample: the error ending the run, or None.  A sample that takes long spaces the next ones out (at most
        ~1/:data:`MAX_SHARE` of the run goes to the monitor) and stops looking after :data:`SAMPLE_SECONDS`."""
        sim = self.sim
        t0 = time.process_time()
        self.next_at = t + self.every
        self.samples += 1
        try:
            return self._sample(t, t0)
        except _Unknown:
            return None
        except Exception as e:          # noqa: BLE001 -- a bug here must not end a user's run: say so and stop
            sim.warnings.append(f"the loop monitor stopped ({type(e).__name__}: {e}); long loops are left to the "
                                "budget")
            self.next_at = math.inf
            return None
        finally:
            spent = time.process_time() - t0
            self.next_at = max(self.next_at, t + spent * MAX_SHARE)

    def _sample(self, t: float, t0: float):
        sim = self.sim
        self.loop_map()
        if not self.map.loops:
            self.next_at = math.inf
            return None
        horizon = self.horizon(t)
        self._last = (t, sim.retired)
        quiet = sim.only_warps_pending()
        live = [w for w in sim.warps if w.alive.any()]
        system_ok = quiet and len(live) <= SYSTEM_WARPS
        stuck_self: dict = {}
        system: set = set()
        first_mem = None
        cache: dict = {}
        clock_waits: list = []                  # (deadline cycle, warp, loop) of the warps waiting for the clock
        # per cluster (id): [cluster, live warps, warps looked at, some lane free, [(warp, memory verdict)]]
        per_cluster: dict = {}
        busy = set() if quiet else self._busy_clusters()
        for i, w in enumerate(live):
            cl = w.cta.cluster
            pc_ = per_cluster.get(id(cl))
            if pc_ is None:
                pc_ = per_cluster[id(cl)] = [cl, 0, 0, False, []]
            pc_[1] += 1
        for i, w in enumerate(live):
            if not system_ok and i >= SELF_WARPS:
                break
            if time.process_time() - t0 > SAMPLE_SECONDS:
                system_ok = False
                break
            pc_ = per_cluster[id(w.cta.cluster)]
            # (a warp of a cluster with nothing of its own in flight is judged as if the machine were quiet: only
            # its cluster's warps and async operations can change its shared memory and mbarriers)
            cq = quiet or id(pc_[0]) not in busy
            v_self, v_mem, free = self._warp(w, horizon, cq, cache, clock_waits if system_ok else None)
            pc_[2] += 1
            if v_self is not None:
                key = (id(w), v_self.loop.head)
                stuck_self[key] = v_self
                if key in self._prev_self:
                    return self._error(w, v_self, t, horizon, cq)
                if v_self.loop.writes:              # (stuck, but it may still write its cluster's memory)
                    pc_[3] = True
            if free:
                system_ok = False
                pc_[3] = True
            elif v_mem is not None:
                system.add((id(w), v_mem.loop.head))
                first_mem = first_mem or (w, v_mem)
                if cq:
                    pc_[4].append((w, v_mem))
            elif not cq:
                pc_[3] = True
        self._prev_self = stuck_self
        cluster_err = self._cluster_sample(per_cluster, busy, t, horizon, len(live))
        err = self._system_sample(system_ok, clock_waits, system, first_mem, t, horizon, quiet)
        return err if err is not None else cluster_err

    def _system_sample(self, system_ok, clock_waits, system, first_mem, t, horizon, quiet):
        """The whole-machine verdicts of a sample: a skip over a clock wait, a memory-stuck warp nobody can free."""
        sim = self.sim
        if system_ok and clock_waits:
            # every live warp is blocked, stuck or waiting for the clock, and nothing else is in flight: only time
            # changes anything -- at two samples in a row with memory unchanged, skip to just before the deadline
            key = (frozenset(system | {(id(w), lp.head) for _, w, lp in clock_waits}),
                   self.watch._memory_fingerprint())
            if self._prev_clock == key:
                self._prev_clock = None
                self._skip(min(clock_waits, key=lambda x: x[0]))
            else:
                self._prev_clock = key
            self._prev_system = None
            return None
        self._prev_clock = None
        if system_ok and first_mem is not None:
            key = (frozenset(system), self.watch._memory_fingerprint())
            warps = self.watch._warp_fingerprint(project=False)
            prev = self._prev_system
            if prev is not None and prev[0] == key:
                if prev[1] == warps:        # nothing changed at all: a pure spin is the livelock detector's case
                    return self.watch._livelock_error(prev[2])
                return self._error(first_mem[0], first_mem[1], t, horizon, quiet)
            self._prev_system = (key, warps, sim.env.now)
        else:
            self._prev_system = None
        return None

    def _busy_clusters(self) -> set:
        """Ids of the clusters with an asynchronous operation in flight (a TMA, bulk or cp.async copy, a tensor-pipe
        or wgmma op of one of their CTAs, a tcgen05.st not landed); every cluster's id when an async unit cannot be
        tied to a CTA."""
        from .agents.unit import AsyncUnit
        from .machine import Cta
        sim = self.sim
        busy: set = set()
        for (name, key), a in sim.agents.items():
            if not isinstance(a, AsyncUnit) or a.in_flight <= 0:
                continue
            ctas = [k for k in (key if isinstance(key, tuple) else (key,)) if isinstance(k, Cta)]
            if not ctas:
                return {id(c.cluster) for c in sim.ctas}
            busy.update(id(c.cluster) for c in ctas)
        for c in sim.ctas:
            if c.tmem is not None and c.tmem.pending:
                busy.add(id(c.cluster))
        return busy

    def _cluster_sample(self, per_cluster: dict, busy, t, horizon, live: int):
        """The per-cluster verdict: only the warps and async operations of a cluster can write its shared memory
        (DSMEM included) and arrive on its mbarriers and barriers.  So when every live warp of a cluster is blocked
        (a barrier, an mbarrier, an async-group wait), stuck in a loop that writes no memory and arrives nowhere,
        or polling its cluster's memory (a flag loaded with ``ld.shared``, ``mbarrier.test_wait/try_wait``) in such a
        loop; nothing of the cluster is in flight (no TMA, bulk or cp.async copy, tensor-pipe or wgmma op of its
        CTAs, no tcgen05.st landing); and the cluster's memories did not change -- at two samples in a row, at least
        :data:`tcsim.watch.LIVELOCK_MIN_CYCLES` cycles apart -- the cluster can never move again, whatever other
        clusters do: a polling warp is reported at its compare (NonTerminatingLoopError), a cluster whose warps all
        wait as a deadlock of that cluster (DeadlockError, with the engine's root causes).  A flag in global
        memory is left to the whole-machine verdict (any CTA may write it)."""
        sim = self.sim
        now = sim.env.now
        prev_all = self._prev_cluster
        self._prev_cluster = {}
        if len(per_cluster) < 2:            # one cluster: the whole-machine verdicts say it
            return None
        for cid, (cl, n_live, n_seen, free, mems) in per_cluster.items():
            if free or n_seen < n_live or cid in busy:
                continue
            if not all(self._cluster_local(v) for _, v in mems):
                continue
            key = (n_live, self.cluster_fingerprint(cl))
            prev = prev_all.get(cid)
            if prev is not None and prev[0] == key and now - prev[1] >= self.min_cycles:
                n_ctas = len(cl.ctas)
                who = f"the {n_ctas} CTAs of its cluster" if n_ctas > 1 else "its CTA"
                others = (f"{live - n_live} live warps of other CTAs are still running: they cannot reach its "
                          f"shared memory")
                if mems:
                    w, v = mems[0]
                    note = (f"; every live warp of {who} is stuck or blocked like it, and none of their asynchronous "
                            f"operations is in flight, so nothing can write that shared memory or mbarrier ({others})")
                    return self._error(w, v, t, horizon, True, note=note)
                warps = [w for w in sim.warps if w.alive.any() and w.cta.cluster is cl]
                what = (f"the cluster of {', '.join(c.label for c in cl.ctas[:4])}{' ...' if n_ctas > 4 else ''}"
                        if n_ctas > 1 else cl.ctas[0].label)
                return sim._deadlock(warps, head=f"{what} can make no progress; every live warp of it is waiting, "
                                                 f"with nothing of it in flight ({others}).")
            # (the cycle the cluster was first seen in this state: samples may come faster than the cycles needed)
            self._prev_cluster[cid] = prev if prev is not None and prev[0] == key else (key, now)
        return None

    def _cluster_local(self, v: Verdict) -> bool:
        """Whether the memory verdict ``v`` waits only on memory its cluster owns: every memory exit of its loop is
        an mbarrier poll or a compare of a value loaded from ``.shared`` (not global or generic memory)."""
        if v.text[0] != "exits":
            return False
        lp = v.loop
        for ex in lp.exits:
            try:
                st = self._static(lp, ex)
            except _Unknown:
                return False
            if not st["memory"]:
                continue
            if st["kind"] == "mbar":
                continue
            for c in (st.get("ca"), st.get("cb")):
                if c is not None and c[0] == "mem":
                    ld = self.map.body[c[1]]
                    if not any(m == "shared" or m.startswith("shared::") for m in ld.mods):
                        return False
        return True

    def _skip(self, wait) -> None:
        """Advance simulated time to :data:`SKIP_MARGIN` cycles before the clock-wait deadline ``wait`` (deadline,
        warp, loop): every warp's next issue moves by as much, as if the machine had paused while the clock ran (a
        delay any warp may see on a GPU); the loops then read the clock past their deadline within a few
        iterations, at about the cycle they would have reached it."""
        deadline, w, lp = wait
        sim = self.sim
        now = int(sim.env.now)
        target = int(deadline) - SKIP_MARGIN
        if target - now < SKIP_MIN:
            return
        sim.skip_time(target - now)
        self.skipped += target - now
        lo, hi = lp.lines(self.map.body)
        head = self.map.body[lp.head]
        sim.warnings.append(f"simulated time skipped from cycle {now:,} to {target:,}: every live warp was blocked or "
                            f"polling the clock, and {w.label} waits in the loop at lines {lo}-{hi} ({head.loc}) for "
                            f"cycle {int(deadline):,}; nothing else was running")

    def explain_stuck(self, t: float):
        """The :class:`~tcsim.isa.errors.NonTerminatingLoopError` of the first live warp with a loop the monitor
        finds stuck now, given that nothing but the warps is in flight and memory is not changing (the livelock
        detector has seen the machine repeat: tcsim.watch), or None."""
        try:
            self.loop_map()
            horizon = self.horizon(t)
            cache: dict = {}
            for w in self.sim.warps:
                if not w.alive.any():
                    continue
                v_self, v_mem, _ = self._warp(w, horizon, True, cache)
                v = v_self or v_mem
                if v is not None:
                    return self._error(w, v, t, horizon, True)
        except Exception:       # noqa: BLE001 -- the livelock report stands without the account
            return None
        return None

    def _warp(self, w, horizon, quiet, cache, clock_waits=None):
        """(a register-stuck verdict or None, a memory-stuck verdict or None, whether some lane is free), the lanes
        taken by groups at one PC.  With ``clock_waits`` (a list; nothing but the warps in flight), lanes that wait
        for the clock in a loop that changes nothing else (:meth:`_clock_wait`) are not free: their deadline is
        appended."""
        sim = self.sim
        lmap = self.map
        owner = sim.program.link.owner if w.callstack is not None else None
        v_self = v_mem = None
        free = False
        alive = np.flatnonzero(w.alive)
        pcs = w.pc[alive]
        blocked = (w.waiting | w.parked)[alive]
        lo = int(pcs.min())
        for pc in ((lo,) if lo == int(pcs.max()) else np.unique(pcs)):
            sel = pcs == pc
            lanes = alive[sel]
            pc = int(pc)
            loops = lmap.at.get(pc, ())
            if owner is not None and pc < len(owner) and owner[pc] != w.func_index:
                loops = ()
            stuck = np.zeros(len(lanes), bool)
            for lp in loops:
                try:
                    v = self._loop(w, lanes, lp, horizon, quiet, cache)
                except _Unknown:
                    continue
                if v is None:
                    continue
                mask, verdict = v
                stuck |= mask
                if not verdict.memory:
                    v_self = v_self or verdict
                else:
                    v_mem = v_mem or verdict
            rest = ~(stuck | blocked[sel])
            if rest.any():
                cw = self._clock_wait(w, lanes[rest], loops, cache) if clock_waits is not None and loops else None
                if cw is None:
                    free = True
                else:
                    clock_waits.append(cw)
        return v_self, v_mem, free

    def _clock_wait(self, w, lanes, loops, cache):
        """(deadline cycle, w, loop) when ``lanes`` wait in their innermost loop for a time counter: a loop that
        writes no memory, arrives nowhere and calls nothing, whose exits are clock compares and exits that cannot
        fire while memory does not change; else None."""
        lp = loops[-1]
        if lp.writes or lp.calls or not lp.exits:
            return None
        best = np.full(len(lanes), math.inf)
        clock = False
        for ex in lp.exits:
            try:
                st = self._static(lp, ex)
                if st["kind"] == "clock":
                    dl = self._clock_deadlines(w, lanes, st)
                    fire_now = w.regs[st["pred"]][lanes] == st["fire"]
                    dl[fire_now] = float(self.sim.env.now)
                    best = np.minimum(best, dl)
                    clock = True
                elif (self._exit(w, lanes, lp, ex, st, True, cache) < math.inf).any():
                    return None
            except (_Unknown, KeyError):
                return None
        if not clock or not np.isfinite(best).any():
            return None
        return float(best[np.isfinite(best)].min()), w, lp


    def _loop(self, w, lanes, lp: Loop, horizon, quiet, cache):
        """(lanes stuck in ``lp``, the :class:`Verdict` of the first of them) or None when none is; raises _Unknown
        when the loop cannot be judged."""
        if lp.call_may_exit:
            raise _Unknown("the loop calls a function that may exit")
        body = self.map.body
        if not lp.exits:
            latch = body[lp.latches[0]]
            return np.ones(len(lanes), bool), Verdict(int(lanes[0]), lp, True, None, None, False,
                                                      ("noexit", latch), latch.loc)
        instr = np.full(len(lanes), math.inf)
        memory = False
        loc = None
        for ex in lp.exits:
            st = self._static(lp, ex)
            instr = np.minimum(instr, self._exit(w, lanes, lp, ex, st, quiet, cache))
            memory = memory or st["memory"]
            loc = loc or st["loc"]
        stuck = instr > horizon
        if not stuck.any():
            return None
        if memory and lp.writes:
            raise _Unknown("the loop waits on memory and writes memory")
        j = int(np.flatnonzero(stuck)[0])
        never = math.isinf(instr[j])
        return stuck, Verdict(int(lanes[j]), lp, never, None, None if never else int(instr[j]), memory,
                              ("exits", w, int(lanes[j]), lp), loc)

    # ------------------------------------------------------------------------------------------ exits
    def _static(self, lp: Loop, ex: Exit) -> dict:
        """What an exit depends on, worked out once per loop and exit (raises _Unknown)."""
        st = lp.cycles.get(("exit", ex.node, id(ex)))
        if st is None:
            try:
                st = self._static_exit(lp, ex)
            except _Unknown as e:
                st = {"unknown": str(e)}
            lp.cycles[("exit", ex.node, id(ex))] = st
        if "unknown" in st:
            raise _Unknown(st["unknown"])
        return st

    def _static_exit(self, lp: Loop, ex: Exit) -> dict:
        lmap = self.map
        body = lmap.body
        if ex.pred is None:
            raise _Unknown(f"an unguarded or indexed exit at {ex.node}")
        pname = ex.pred.name
        node = body[ex.node]
        how = "taken" if ex.kind == "branch" else ("not taken" if ex.kind == "fall-through" else "executed")
        st = {"pred": pname, "fire": ex.fire_when, "where": f"`{node}` (line {node.loc.line}) {how}",
              "loc": node.loc, "memory": False, "kind": "inv"}
        defs = lp.defs.get(pname, [])
        if not defs:
            return st
        if len(defs) > 1:
            raise _Unknown(f"{pname} written {len(defs)} times")
        d = body[defs[0]]
        st.update(def_pc=defs[0], d=d, loc=d.loc)
        if d.opcode == "mbarrier" and any(m in _MBAR_POLLS for m in d.mods):
            if not isinstance(d.operands[0], ir.Reg):
                raise _Unknown("mbarrier wait with a predicate pair")
            st.update(kind="mbar", memory=True)
            return st
        if d.opcode != "setp" or d.guard is not None:
            raise _Unknown(f"{pname} from {d.full_opcode}")
        mods = [m for m in d.mods if m != "ftz"]
        if any(m in ("and", "or", "xor") for m in mods) or len(d.operands) != 3:
            raise _Unknown("setp with a predicate operand")
        cmp_mod, typ = mods[0], mods[-1]
        if cmp_mod not in _CMP:
            raise _Unknown(f"setp.{cmp_mod}")
        fire = ex.fire_when
        dst = d.operands[0]
        if isinstance(dst, ir.PredPair):
            if isinstance(dst.first, ir.Reg) and dst.first.name == pname:
                pass
            elif isinstance(dst.second, ir.Reg) and dst.second.name == pname:
                fire = not fire
            else:
                raise _Unknown("predicate pair")
        elif not (isinstance(dst, ir.Reg) and dst.name == pname):
            raise _Unknown("setp destination")
        a_op, b_op = d.operands[1], d.operands[2]
        ca, cb = lmap._operand_class(lp, a_op, 0), lmap._operand_class(lp, b_op, 0)
        for c in (ca, cb):
            if c[0] == "unknown":
                raise _Unknown(c[1])
        if ca[0] == "clk" or cb[0] == "clk":
            # a clock-wait: a time counter (plus or minus invariants) compared with an invariant
            clk, other = (ca, cb) if ca[0] == "clk" else (cb, ca)
            if other[0] != "inv" or typ not in _INT_TYPES or _INT_TYPES[typ] != clk[5]:
                raise _Unknown("a clock compared with something that changes, or in another width")
            st.update(kind="clock", cmp=_CMP[cmp_mod], typ=typ, width=clk[5], a_op=a_op, b_op=b_op, ca=ca, cb=cb,
                      want=fire, memory=False, clk_first=ca[0] == "clk",
                      signed=typ.startswith("s") and cmp_mod not in _UNSIGNED_CMP, asyncdest=False)
            return st
        if ca[0] == "iv" and cb[0] == "iv":
            raise _Unknown("two counters")
        is_f = typ in _FLOAT_TYPES
        if not is_f and typ not in _INT_TYPES:
            raise _Unknown(f"setp type .{typ}")
        width = _FLOAT_TYPES[typ] if is_f else _INT_TYPES[typ]
        iv = ca if ca[0] == "iv" else (cb if cb[0] == "iv" else None)
        if iv is not None and (iv[3] != is_f or iv[4] != width):
            raise _Unknown("the counter's type differs from the compare's")
        st.update(kind="setp", cmp=_CMP[cmp_mod], cmp_mod=cmp_mod, typ=typ, width=width, is_f=is_f, a_op=a_op,
                  b_op=b_op, ca=ca, cb=cb, want=fire, memory=ca[0] == "mem" or cb[0] == "mem",
                  signed=typ.startswith("s") and cmp_mod not in _UNSIGNED_CMP,
                  cycle=lmap.cycle(lp, iv[1]) if iv is not None else 1,
                  asyncdest=any(r.name in lmap.async_dests for o in (a_op, b_op) for r in _regs_in(o)))
        return st

    def _exit(self, w, lanes, lp, ex: Exit, st: dict, quiet, cache) -> np.ndarray:
        """Per lane: a lower bound on the warp-instructions before the exit can fire (inf: never)."""
        arr = w.regs.get(st["pred"])
        if arr is None or arr.dtype != np.bool_:
            raise _Unknown(f"{st['pred']} is no predicate register")
        fire_now = arr[lanes] == st["fire"]     # the last compare says leave: the lane may be on its way out
        kind = st["kind"]
        if kind == "inv":
            return np.where(fire_now, 0.0, math.inf)
        if not quiet and (st["memory"] or st.get("asyncdest")):
            raise _Unknown("something is in flight")
        if kind == "mbar":
            return np.where(fire_now, 0.0, math.inf)
        if kind == "clock":
            dl = self._clock_deadlines(w, lanes, st)
            return np.where(fire_now | (dl < math.inf), 0.0, math.inf)
        width, typ = st["width"], st["typ"]
        n = len(lanes)
        a = _lane_values(w, st["a_op"], lanes, typ, width)
        b = _lane_values(w, st["b_op"], lanes, typ, width)
        ca, cb = st["ca"], st["cb"]
        sa = _lane_steps(w, ca, lanes, width) if ca[0] == "iv" else [0] * n
        sb = _lane_steps(w, cb, lanes, width) if cb[0] == "iv" else [0] * n
        cyc = st["cycle"]
        sid = id(st)
        keys = list(zip(a, b, sa, sb))
        costs = []
        for key in keys:
            ck = (sid,) + key
            c = cache.get(ck)
            if c is None:
                k = self._solve(st, *key)[0]
                c = cache[ck] = math.inf if k is None else float(k * cyc)
            costs.append(c)
        out = np.array(costs)
        out[fire_now] = 0.0
        return out

    def _clock_now(self, sreg: str) -> int:
        """The value the time counter ``sreg`` reads now (its unit: cycles, or nanoseconds for the global timer)."""
        now = int(self.sim.env.now)
        if _CLOCKS[sreg][1] == "ns":
            return int(now * 1000 / self.sim.arch_config.sm_clock_mhz)
        return now

    def _cycle_of(self, sreg: str, value: int) -> int:
        """The first cycle at which ``sreg`` reads at least ``value`` (its unit)."""
        if _CLOCKS[sreg][1] == "ns":
            mhz = self.sim.arch_config.sm_clock_mhz
            c = int(value * mhz / 1000)
            while int(c * 1000 / mhz) < value:
                c += 1
            return c
        return value

    def _clock_deadlines(self, w, lanes, st) -> np.ndarray:
        """Per lane: the first cycle (>= now) at which a clock-wait exit fires, read from the time counter as it runs
        on (inf: never)."""
        clk = st["ca"] if st["clk_first"] else st["cb"]
        _, _, sreg, sign, terms, width = clk
        mask = (1 << width) - 1
        t_now = self._clock_now(sreg)
        base = (sign * t_now) & mask
        offs = [0] * len(lanes)
        for sg, op, typ in terms:
            vals = _lane_values(w, op, lanes, typ, width)
            offs = [(o + sg * v) & mask for o, v in zip(offs, vals)]
        other = _lane_values(w, st["b_op"] if st["clk_first"] else st["a_op"], lanes, st["typ"], width)
        step = sign & mask
        out = np.full(len(lanes), math.inf)
        for j, (off, b) in enumerate(zip(offs, other)):
            v = (base + off) & mask
            # (a horizon past the counter's period: the answer is exact, never a lower bound)
            if st["clk_first"]:
                k = _int_exit(st["cmp"], st["signed"], width, v, step, b, 0, st["want"], 1 << 130)
            else:
                k = _int_exit(st["cmp"], st["signed"], width, b, 0, v, step, st["want"], 1 << 130)
            if k is not None:
                c = self._cycle_of(sreg, t_now + k)
                if c < CLOCK_LIMIT:
                    out[j] = c
        return out

    @staticmethod
    def _solve(st, a, b, sa, sb) -> tuple:
        """(first update at which the exit fires, or None for never; why never, for floats)."""
        width = st["width"]
        if st["is_f"]:
            k, why = _float_exit(st["cmp"], _as_float(a, width), _as_float(sa, width) if sa else 0.0,
                                 _as_float(b, width), _as_float(sb, width) if sb else 0.0, st["want"], width)
            return k, why
        return _int_exit(st["cmp"], st["signed"], width, a, sa, b, sb, st["want"], 1 << 62), None

    # ------------------------------------------------------------------------------------------ report
    def _explain(self, v: Verdict) -> str:
        """Why the verdict's lane cannot leave its loop: each exit, its compare, the values and steps."""
        if v.text[0] == "noexit":
            latch = v.text[1]
            return (f"the loop has no exit: `{latch}` (line {latch.loc.line}) always goes back to line "
                    f"{self.map.body[v.loop.head].loc.line}")
        _, w, lane, lp = v.text
        lanes = np.array([lane])
        parts = []
        for ex in lp.exits:
            st = self._static(lp, ex)
            kind = st["kind"]
            if kind == "inv":
                val = bool(w.regs[st["pred"]][lane])
                parts.append(f"the exit {st['where']} needs {st['pred']} to be {str(st['fire']).lower()}, but the "
                             f"loop never writes {st['pred']} (it is {str(val).lower()})")
                continue
            d = st["d"]
            if kind == "clock":
                clk = st["ca"] if st["clk_first"] else st["cb"]
                dl = self._clock_deadlines(w, lanes, st)[0]
                when = ("never: the compare stays "
                        f"{str(not st['want']).lower()} for every value the counter takes (modulo 2^{st['width']}) "
                        f"before cycle 2^{CLOCK_LIMIT.bit_length() - 1}"
                        if math.isinf(dl) else f"at cycle {int(dl):,}")
                parts.append(f"the exit {st['where']} needs `{d}` (line {d.loc.line}) to be "
                             f"{str(st['want']).lower()} as {clk[2]} runs on: {when}")
                continue
            if kind == "mbar":
                parts.append(f"the exit {st['where']} needs `{d}` (line {d.loc.line}) to see the phase complete, "
                             "and nothing that could complete it is running or in flight")
                continue
            width, typ = st["width"], st["typ"]
            a = _lane_values(w, st["a_op"], lanes, typ, width)[0]
            b = _lane_values(w, st["b_op"], lanes, typ, width)[0]
            ca, cb = st["ca"], st["cb"]
            sa = _lane_steps(w, ca, lanes, width)[0] if ca[0] == "iv" else 0
            sb = _lane_steps(w, cb, lanes, width)[0] if cb[0] == "iv" else 0
            k, why = self._solve(st, a, b, sa, sb)
            parts.append(self._describe(st, a, b, sa, sb, k, why))
        return "; ".join(parts)

    def _describe(self, st, a, b, sa, sb, k, why) -> str:
        width = st["width"]
        if st["is_f"]:
            shown = (_as_float(a, width), _as_float(b, width), _as_float(sa, width) if sa else 0.0,
                     _as_float(sb, width) if sb else 0.0)
        else:
            conv = (lambda x: _signed(x, width)) if st["signed"] else (lambda x: x)
            shown = (conv(a), conv(b), _signed(sa, width), _signed(sb, width))

        def side(op, c, val, step):
            if c[0] == "iv":
                upd = self.map.body[c[1]]
                return f"{op} = {val} (changes by {step} per update, `{upd}` at line {upd.loc.line})"
            if c[0] == "mem":
                ld = self.map.body[c[1]]
                return f"{op} = {val} (loaded by `{ld}` at line {ld.loc.line}; memory is not changing)"
            if isinstance(op, ir.Imm):
                return f"{op}"
            return f"{op} = {val} (not written in the loop)"

        d = st["d"]
        need = "true" if st["want"] else "false"
        head = (f"the exit {st['where']} needs `{d}` (line {d.loc.line}) to be {need}: "
                f"{side(st['a_op'], st['ca'], shown[0], shown[2])}, {side(st['b_op'], st['cb'], shown[1], shown[3])}")
        if k is None:
            if st["ca"][0] != "iv" and st["cb"][0] != "iv":
                why = "neither operand changes, so the compare never changes"
            elif why is None and st["cmp"] in ("eq", "ne"):
                why = f"the counter never takes the value that leaves (modulo 2^{width}): it skips it"
            elif why is None:
                why = (f"the compare stays {str(not st['want']).lower()} for every value the counter takes, "
                       f"wrap-arounds included (modulo 2^{width})")
            return f"{head}; never: {why}"
        cyc = st["cycle"]
        return f"{head}; at least {k:,} more updates ({k * cyc:,} warp-instructions at >= {cyc} per update)"

    def _error(self, w, v: Verdict, t: float, horizon: float, quiet: bool, note: str = ""):
        sim = self.sim
        body = self.map.body
        lo, hi = v.loop.lines(body)
        head = body[v.loop.head]
        lanes = lanes_str(self._lanes_like(w, v))
        what = "can never leave" if v.never else "cannot leave, within the run's budget,"
        watch = self.watch
        if v.never:
            budget = ""
        elif watch.max_seconds is not None and (watch.max_instructions is None or
                                                 horizon < watch.max_instructions - sim.retired):
            left = max(watch.max_seconds - t, 0.0)
            rate = self.best_rate
            est = v.instructions / rate if rate > 0 else math.inf
            dflt = " (the default; max_seconds= / --max-seconds sets another)" if watch.default_budget else ""
            budget = (f"; at the best rate so far ({rate:,.0f} warp-instructions/s) that is ~{est:,.0f} s, more "
                      f"than {RATE_MARGIN:g}x the {left:.0f} s left of the budget of {watch.max_seconds:g} s{dflt}")
        else:
            budget = (f"; more than the {max(watch.max_instructions - sim.retired, 0):,} warp-instructions left of "
                      f"the budget (max_instructions={watch.max_instructions})")
        msg = (f"{w.label} ({lanes}) {what} the loop at lines {lo}-{hi} (head `{head}` at line {head.loc.line}, "
               f"after {sim.retired:,} warp-instructions, {t:.1f} s): {self._explain(v)}{note}{budget}")
        return NonTerminatingLoopError(msg, v.loc,
                                       expected="a loop bound and step that reach the exit (or raise the budget if "
                                       "the loop really is this long)")

    def _lanes_like(self, w, v: Verdict):
        m = np.zeros_like(w.alive)
        for lane in np.flatnonzero(w.alive):
            if int(w.pc[lane]) in v.loop.body:
                m[lane] = True
        return m


def _lane_values(w, op, lanes, typ: str, width: int) -> list:
    """The ``width``-bit patterns of operand ``op`` for ``lanes`` (a register's low bits, an immediate's bits)."""
    mask = (1 << width) - 1
    if isinstance(op, ir.Vector) and len(op.elems) == 1:
        op = op.elems[0]
    if isinstance(op, ir.Imm):
        return [imm_bits(op.value, op.kind, typ, op.bits) & mask] * len(lanes)
    if isinstance(op, ir.Reg):
        arr = w.regs.get(op.name)
        if arr is None or arr.dtype == np.bool_ or arr.dtype.names or arr.dtype.itemsize > 8:
            raise _Unknown(f"{op.name} is no scalar register")
    elif isinstance(op, ir.SpecialReg):
        arr = np.asarray(w.ctx.special(op))
    else:
        raise _Unknown(f"operand {op}")
    raw = np.ascontiguousarray(arr[lanes]).view(np.dtype(f"u{arr.dtype.itemsize}"))
    return [int(x) & mask for x in raw.tolist()]


def _lane_steps(w, c, lanes, width: int) -> list:
    """The per-update step of induction variable class ``c`` for ``lanes`` (W-bit integers; for a float counter the
    bits of the float step)."""
    mask = (1 << width) - 1
    is_f = c[3]

    def ev(expr):
        k = expr[0]
        if k == "op":
            return _lane_values(w, expr[1], lanes, expr[2], width)
        if k == "neg":
            v = ev(expr[1])
            return [x ^ (1 << (width - 1)) for x in v] if is_f else [(-x) & mask for x in v]
        if k == "mul":
            return [(x * y) & mask for x, y in zip(ev(expr[1]), ev(expr[2]))]
        if k == "shl":
            return [(x << expr[2]) & mask for x in ev(expr[1])]
        raise _Unknown(str(expr))
    return ev(c[2])


__all__ = ["LoopMap", "LoopMonitor", "LOOP_AFTER", "LOOP_EVERY"]
