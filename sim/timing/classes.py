"""Instruction classes: what one PTX instruction costs a warp, decided once per instruction at load time.

:func:`plan_instruction` turns an :class:`tcsim.isa.ir.Instruction` into an :class:`InstrPlan`: the registers it reads
and writes (for the scoreboard), its class and the sub-partition unit it occupies, how many cycles a warp-
instruction keeps that unit busy (32 lanes / the unit's lanes per clock per sub-partition), the latency until its
results may be read, and -- for memory instructions -- which state space and operand decide the cost at run time
(bank conflicts, first touch of a global line).  Numbers come from an :class:`tcsim.timing.params.ArchConfig`.

Classes (per-SM lane throughput from the config, divided by the schedulers per SM):

=============  ==================================================  ============================
class          instructions                                        latency
=============  ==================================================  ============================
alu            fp32 / integer / logic / moves / setp / selp        alu_latency
fp64           .f64 arithmetic                                     fp64_latency
sfu            rcp sqrt rsqrt sin cos lg2 ex2 tanh (MUFU)           sfu_latency
cvt            cvt, cvt.pack                                       cvt_latency
warp           shfl vote match redux                               warp_op_latency
mma            mma.sync (initiation interval by FLOPs)             mma_sync_latency
ldmatrix       ldmatrix / stmatrix / movmatrix (SMEM wavefronts)    ldmatrix_latency
mem            ld / st / atom / red / ldu (by state space)         smem / L1 / L2 / HBM latency
tmem           tcgen05.ld / tcgen05.st                             tmem_ld/st_latency
tcgen05        tcgen05.mma / commit / cp / shift (pipe does work)  issue cost only
async          cp.async, cp.async.bulk*, TMA issue                 issue cost only
sync           bar / barrier / mbarrier / fence / control          alu (results) / 0
=============  ==================================================  ============================
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tcsim.isa import ir
from tcsim.isa.instrument import APPROX_OPCODES

#: opcodes whose first operand, when a register, is read, not written
_NO_DEST = ir.NO_REG_DEST
#: the special-function unit's opcodes = the .approx transcendentals
_SFU = APPROX_OPCODES
_WARP = {"shfl", "vote", "match", "redux", "activemask", "elect"}
_MEM = {"ld", "ldu", "st", "atom", "red"}
_MATRIX = {"ldmatrix", "stmatrix", "movmatrix"}
_SPACES = ("shared", "global", "local", "param", "const")
_VEC = {"v2": 2, "v4": 4, "v8": 8}
#: cache operators / qualifiers of ld.global that do not allocate in (or read from) L1 (PTX ISA, cache operators)
_L2_ONLY = {"cg", "cs", "cv", "lu", "volatile", "mmio", "relaxed", "acquire"}


@dataclass(frozen=True)
class InstrPlan:
    """The timing plan of one instruction (see the module docstring)."""

    cls: str
    unit: str | None            # sub-partition unit the warp-instruction occupies ('fma', 'int', 'fp64', 'sfu'...)
    interval: int               # cycles it keeps that unit busy
    latency: int                # issue -> destination registers readable (memory: the fixed part)
    srcs: tuple                 # register names read (guard included)
    dsts: tuple                 # register names written
    issue_cycles: int = 1       # cycles before the warp may issue its next instruction
    space: str | None = None    # memory instructions: state space ('shared', 'global', 'generic', ...)
    addr_index: int = -1        # operand holding the address
    access_bytes: int = 0       # bytes per lane
    wait_kind: str | None = None  # blocking instructions: 'mbarrier', 'barrier', 'cluster barrier', ...
    flops: int = 0              # mma.sync: FLOPs per warp-instruction
    tmem: str | None = None     # 'ld' / 'st' / 'wait::ld' / 'wait::st' for tcgen05 register <-> TMEM traffic
    l2_only: bool = False       # global loads that bypass L1 (.cg / .cs / .cv / .lu / .volatile, atom, red)
    cluster: bool = False       # shared-memory access through the shared::cluster window
    barrier_count: int = 0      # bar.sync / barrier.sync with an immediate thread count (0: the whole CTA)
    membar: str | None = None   # memory ordering (:func:`memory_ordering`): the scope of the MEMBAR ptxas puts
                                # before the access (a fence, or a release / acq_rel / sc access): 'cta'/'gpu'/'sys'
    membar_sc: bool = False     # ... a MEMBAR.SC (fence.sc, membar) rather than MEMBAR.ALL
    acquire: str | None = None  # the scope ('gpu'/'sys') of an acquire side ptxas implements with CCTL.IVALL
    free: bool = False          # dataflow issue: loop control of a loop ptxas unrolls (no issue slot, no latency)
    order: str = "flow"         # dataflow issue (sim.timing.model): 'flow' may start once its operands are
                                # ready, 'resolve' (branches) waits for its operands at issue, 'drain' also waits
                                # until every earlier instruction of the warp has started


def operand_regs(op) -> list:
    """Register names an operand reads (address bases, tensor coordinates, vector elements, negations)."""
    if isinstance(op, ir.Reg):
        return [op.name]
    if isinstance(op, ir.Vector):
        return [n for e in op.elems for n in operand_regs(e)]
    if isinstance(op, ir.Address):
        out = operand_regs(op.base) if op.base is not None else []
        for c in op.coords or ():
            out += operand_regs(c)
        return out
    if isinstance(op, ir.Not):
        return operand_regs(op.operand)
    if isinstance(op, ir.PredPair):
        return operand_regs(op.first) + operand_regs(op.second)
    if isinstance(op, ir.ParenList):
        return [n for e in op.elems for n in operand_regs(e)]
    return []


def _has_dest(ins: ir.Instruction) -> bool:
    if not ins.operands or ins.opcode in _NO_DEST:
        return False
    if ins.opcode == "tcgen05":
        return ins.mods[:1] == ("ld",)
    if ins.opcode == "mbarrier":
        return ins.mods[:1] in (("arrive",), ("arrive_drop",), ("test_wait",), ("try_wait",), ("pending_count",))
    return isinstance(ins.operands[0], (ir.Reg, ir.Vector, ir.PredPair))


def registers(ins: ir.Instruction) -> tuple[tuple, tuple]:
    """(sources, destinations) of ``ins`` as register-name tuples."""
    dest = _has_dest(ins)
    dsts = operand_regs(ins.operands[0]) if dest else []
    srcs = []
    for i, op in enumerate(ins.operands):
        if i == 0 and dest:
            continue
        srcs += operand_regs(op)
    if ins.guard is not None:
        srcs.append(ins.guard[0].name)
    return tuple(dict.fromkeys(srcs)), tuple(dict.fromkeys(dsts))


def _type_bytes(ins) -> int:
    for m in reversed(ins.mods):
        if m in ir.TYPE_SIZES:
            return ir.TYPE_SIZES[m]
    return 4


def _space(ins) -> str:
    for m in ins.mods:
        base = m.split("::")[0]
        if base in _SPACES:
            return base
    return "generic"


def _lanes(cfg, ops_per_clk: float) -> int:
    """Cycles a 32-lane warp-instruction keeps a sub-partition unit with ``ops_per_clk`` lanes per SM busy."""
    per_sub = ops_per_clk / cfg.schedulers_per_sm
    return max(1, math.ceil(32 / per_sub))


def _is_f64(ins) -> bool:
    return "f64" in ins.mods


def _is_float(ins) -> bool:
    return any(m in ("f32", "f16", "bf16", "f16x2", "bf16x2", "ftz", "rn", "rz", "rm", "rp", "approx", "full")
               for m in ins.mods)


def _mma_flops(ins) -> int:
    shape = ins.mod_with_prefix("m") or ""
    try:
        m, rest = shape[1:].split("n")
        n, k = rest.split("k")
        return 2 * int(m) * int(n) * int(k)
    except ValueError:
        return 2 * 16 * 8 * 16


#: classes whose instructions are ordering points of the dataflow issue model (see sim.timing.model)
_DRAIN_CLASSES = {"sync", "async", "tcgen05", "tmem"}
_CLOCKS = {"%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"}


def issue_order(ins: ir.Instruction, cls: str) -> str:
    """'drain', 'resolve' or 'flow' (:attr:`InstrPlan.order`): barriers, mbarrier and fence operations, async
    copies, exits and clock reads drain; branches resolve; everything else flows."""
    if cls in _DRAIN_CLASSES or ins.opcode in ("ret", "exit", "trap", "brkpt", "call", "nanosleep", "setmaxnreg",
                                               "fence", "membar", "griddepcontrol"):
        return "drain"
    if any(isinstance(o, ir.SpecialReg) and o.name in _CLOCKS for o in ins.operands):
        return "drain"
    if ins.opcode in ("bra", "brx"):
        return "resolve"
    if cls in ("mem", "ldmatrix") and _has_dest(ins):
        # a load goes to its memory port when issued, its address operands ready: the port serves requests in
        # time order (ptxas hoists a load only as far up as its address is computed)
        return "resolve"
    return "flow"


def plan_instruction(ins: ir.Instruction, cfg) -> InstrPlan:
    """The :class:`InstrPlan` of ``ins`` under the timing config ``cfg``."""
    p = _plan(ins, cfg)
    order = issue_order(ins, p.cls)
    return p if order == "flow" else replace(p, order=order)


_SCOPES = {"cta": "cta", "cluster": "gpu", "gpu": "gpu", "sys": "sys"}
_MEMBAR_SCOPES = {"cta": "cta", "gl": "gpu", "sys": "sys"}


def memory_ordering(ins: ir.Instruction) -> tuple:
    """(membar scope or None, MEMBAR.SC?, acquire scope or None) of a fence / membar or of a ld / st / atom / red
    with a memory-ordering semantic, as ptxas 13.0 compiles them for sm_90a (the SASS of
    calib/timing_corpus/cuda/atomics_fences.cu): ``fence.{sc,acq_rel}.S`` -> ``MEMBAR.{SC,ALL}.S`` (S = CTA, GPU,
    SYS; GPU and SYS add ``ERRBAR``, ``CGAERRBAR`` and ``CCTL.IVALL``, the L1 invalidation of an acquire);
    ``.release`` / ``.acq_rel`` accesses get the ``MEMBAR.ALL.S`` in front; ``.acquire`` / ``.acq_rel`` at GPU or
    SYS scope a ``CCTL.IVALL`` after them, which waits for the access's value.  A semantic without a scope is .gpu
    (PTX ISA, memory consistency model); .cluster is timed as .gpu (not measured).  ``fence.proxy.*`` and
    ``fence.mbarrier_init`` are no memory barriers here (their own costs: fence_proxy_async_cycles...)."""
    op, mods = ins.opcode, ins.mods
    if op == "membar":
        sc = next((_MEMBAR_SCOPES[m] for m in mods if m in _MEMBAR_SCOPES), None)
        return sc, True, sc if sc in ("gpu", "sys") else None
    scope = next((_SCOPES[m] for m in mods if m in _SCOPES), None)
    if op == "fence":
        if "mbarrier_init" in mods or any(m.startswith("proxy") for m in mods) or scope is None:
            return None, False, None
        return scope, "sc" in mods, scope if scope in ("gpu", "sys") else None
    if op not in _MEM:
        return None, False, None
    sem = next((m for m in mods if m in ("release", "acq_rel", "acquire", "sc")), None)
    if sem is None:
        return None, False, None
    scope = scope or "gpu"
    membar = scope if sem in ("release", "acq_rel", "sc") else None
    acquire = scope if sem in ("acquire", "acq_rel", "sc") and scope in ("gpu", "sys") else None
    return membar, sem == "sc", acquire


def _plan(ins: ir.Instruction, cfg) -> InstrPlan:
    srcs, dsts = registers(ins)
    op = ins.opcode
    mods = ins.mods

    def plan(cls, unit, interval, latency, **kw):
        return InstrPlan(cls, unit, interval, latency, srcs, dsts, **kw)

    if op in _MEM:
        space = _space(ins)
        vec = next((_VEC[m] for m in mods if m in _VEC), 1)
        addr = 0 if op in ("st", "red") else 1
        l2_only = op in ("atom", "red") or any(m in _L2_ONLY for m in mods)
        cluster = any(m == "shared::cluster" for m in mods)
        membar, sc, acquire = memory_ordering(ins) if cfg.memory_ordering else (None, False, None)
        return plan("mem", "lsu", 1, 0, space=space, addr_index=addr, access_bytes=_type_bytes(ins) * vec,
                    l2_only=l2_only, cluster=cluster, membar=membar, membar_sc=sc, acquire=acquire)
    if op in _MATRIX:
        # one 8x8 matrix of 16-bit elements = 8 rows of 16 bytes = 128 bytes per .x (PTX ISA, ldmatrix)
        num = next((int(m[1:]) for m in mods if m in ("x1", "x2", "x4")), 1)
        return plan("ldmatrix", "lsu", 1, cfg.ldmatrix_latency, access_bytes=128 * num)
    if op == "mma":
        flops = _mma_flops(ins)
        ii = max(1, round(cfg.mma_sync_interval * flops / 4096))
        return plan("mma", "tensor", ii, int(cfg.mma_sync_latency), flops=flops)
    if op in _WARP:
        return plan("warp", "warp", _lanes(cfg, cfg.warp_op_ops_per_clk), int(cfg.warp_op_latency))
    if op in _SFU:
        return plan("sfu", "sfu", _lanes(cfg, cfg.sfu_ops_per_clk), int(cfg.sfu_latency))
    if op == "cvt":
        if _is_f64(ins):
            return plan("cvt", "fp64", _lanes(cfg, cfg.fp64_ops_per_clk), int(cfg.fp64_latency))
        return plan("cvt", "cvt", _lanes(cfg, cfg.cvt_ops_per_clk), int(cfg.cvt_latency))
    if op == "tcgen05":
        sub = mods[0] if mods else ""
        if sub == "mma":
            return plan("tcgen05", None, 0, 0, issue_cycles=int(cfg.tc_mma_issue_cycles))
        if sub in ("ld", "st"):
            return plan("tmem", "tmem", 1, int(cfg.tmem_ld_latency if sub == "ld" else cfg.tmem_st_latency),
                        tmem=sub)
        if sub.startswith("wait"):
            return plan("tmem", None, 0, 0, tmem=sub)
        return plan("tcgen05", None, 0, 0)
    if op == "cp":
        # a tensor-map TMA op (UTMALDG / UTMASTG...) holds the issuing warp for tma_issue_cycles
        tensor = "bulk" in mods and "tensor" in mods
        return plan("async", "lsu", 1, 0, issue_cycles=int(cfg.tma_issue_cycles) if tensor else 1)
    if op == "mbarrier":
        sub = mods[0] if mods else ""
        kind = "mbarrier" if sub == "try_wait" else None
        return plan("sync", "lsu", 1, int(cfg.mbarrier_op_latency), wait_kind=kind, addr_index=1)
    if op in ("bar", "barrier"):
        kind = "cluster barrier" if mods[:1] == ("cluster",) else "barrier"
        count = 0
        if kind == "barrier" and len(ins.operands) > 1 and isinstance(ins.operands[1], ir.Imm):
            count = int(ins.operands[1].value)
        return plan("sync", None, 1, 0, wait_kind=kind, barrier_count=count)
    if op == "fence" and ("mbarrier_init" in mods or ("proxy" in mods and "async" in mods)):
        # fence.mbarrier_init (MEMBAR) and fence.proxy.async (FENCE.VIEW.ASYNC) hold the warp (H100:
        # mbarrier_init_fence_*)
        hold = cfg.fence_mbarrier_init_cycles if "mbarrier_init" in mods else cfg.fence_proxy_async_cycles
        return plan("control", None, 1, 0, issue_cycles=max(1, int(round(hold))))
    if op in ("fence", "membar") and cfg.memory_ordering:
        membar, sc, acquire = memory_ordering(ins)
        if membar is not None:
            return plan("control", None, 1, 0, membar=membar, membar_sc=sc, acquire=acquire)
    if op in ("bra", "brx", "ret", "exit", "call", "trap", "brkpt", "fence", "membar", "nanosleep", "setmaxnreg"):
        return plan("control", None, 1, 0)
    if _is_f64(ins):
        return plan("fp64", "fp64", _lanes(cfg, cfg.fp64_ops_per_clk), int(cfg.fp64_latency))
    if _is_float(ins):
        return plan("alu", "fma", _lanes(cfg, cfg.fp32_ops_per_clk), int(cfg.alu_latency))
    return plan("alu", "int", _lanes(cfg, cfg.int_ops_per_clk), int(cfg.alu_latency))


__all__ = ["InstrPlan", "plan_instruction", "registers", "operand_regs", "memory_ordering"]
