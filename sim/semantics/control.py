"""Control flow: bra, brx.idx, exit, trap, brkpt, nanosleep, pmevent, setmaxnreg (call and ret: sim/semantics/calls.py).

PTX ISA 9.1 §9.7.12 (control flow instructions) and §9.7.19 (miscellaneous instructions).  Divergence is
handled by the engine's per-lane PCs: ``bra`` only moves the PCs of the lanes whose guard is true; the engine
reconverges at the lowest PC.  ``brx.idx`` moves each executing lane to the entry of its own index in a
``.branchtargets`` list (an index past the end of the list is undefined in PTX and raises VerifyError naming
the lane and index).  ``setmaxnreg`` (Triton's warp specialization emits it) only changes how many registers
the hardware gives each thread; tcsim has no register-file limit, so it is validated (``.inc``/``.dec``,
``.sync.aligned``, ``.u32``, an immediate count 24..256 that is a multiple of 8, as ptxas requires), checked
to be executed by the whole warp, and recorded as a ``sync`` event ``setmaxnreg`` with ``action`` and
``count``.  Not checked: that all four warps of the warpgroup execute the same ``setmaxnreg``, and the
direction rule (``.inc`` must not lower, ``.dec`` must not raise, the current count).

"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.control_forms import parse_brx, parse_control, parse_nanosleep, parse_setmaxnreg
from tcsim.isa.errors import LAUNCH_FAILED, TcsimError, VerifyError
from .registry import semantics


class TrapError(TcsimError):
    kind = "trap"
    gpu_error = LAUNCH_FAILED          # measured on an H100 for trap (tests/golden/faults.json)


@semantics("bra")
def decode_bra(ins, info):
    """PTX ISA §9.7.12.3 bra: branch to a label; ``.uni`` asserts a non-divergent branch (not required)."""
    form = parse_control(ins)
    target = info.label_index(ins, form.operands[0])

    def run(ctx):
        ctx.jump(target, ctx.mask)

    return run


@semantics("brx")
def decode_brx(ins, info):
    """PTX ISA §9.7.12.4 brx.idx{.uni} index, tlist: branch to the index-th label of a ``.branchtargets``
    list (``.uni`` asserts a non-divergent branch, not required)."""
    index_op, tl = parse_brx(ins).operands
    if not isinstance(tl, (ir.LabelRef, ir.Sym)) or tl.name not in info.function.branch_targets:
        raise VerifyError(f"brx.idx target {tl} is not a .branchtargets list of {info.function.name}", ins.loc,
                          expected="the label of a `Label: .branchtargets L1, L2, ...;` list")
    names = info.function.branch_targets[tl.name]
    targets = np.asarray([info.pc_base + info.function.labels[n] for n in names], dtype=np.int64)

    def run(ctx):
        idx = ctx.read(index_op, "u32").astype(np.int64)
        bad = ctx.mask & (idx >= targets.size)
        if bad.any():
            lane = int(np.nonzero(bad)[0][0])
            raise VerifyError(f"brx.idx index {int(idx[lane])} (lane {lane}) is past the end of {tl.name}, which "
                              f"lists {targets.size} labels (the branch is undefined in PTX)",
                              expected=f"an index 0..{targets.size - 1}")
        ctx.jump(targets[idx[ctx.mask]], ctx.mask)

    return run


@semantics("exit")
def decode_exit(ins, info):
    """PTX ISA §9.7.12.7 exit: the executing threads terminate."""
    parse_control(ins)

    def run(ctx):
        ctx.exit_lanes(ctx.mask.copy())

    return run


@semantics("trap")
def decode_trap(ins, info):
    """PTX ISA §9.7.19.4 trap: abort the kernel (the GPU reports CUDA_ERROR_LAUNCH_FAILED, measured on H100)."""
    parse_control(ins)

    def run(ctx):
        if ctx.mask.any():
            raise TrapError("the kernel executed trap (on the H100 the launch fails with "
                            "CUDA_ERROR_LAUNCH_FAILED, 'unspecified launch failure'; tests/golden/faults.json)")

    return run


@semantics("brkpt")
def decode_brkpt(ins, info):
    """PTX ISA §9.7.19.1 brkpt: stops the run with a diagnostic (a debugger session can catch it)."""
    parse_control(ins)

    def run(ctx):
        if ctx.mask.any():
            raise TrapError("the kernel hit brkpt", gpu_error=None)     # not measured on a GPU

    return run


@semantics("nanosleep")
def decode_nanosleep(ins, info):
    """PTX ISA §9.7.19.2 nanosleep.u32 t: suspend for up to t ns; modelled as a delay of t cycles, capped."""
    op = parse_nanosleep(ins).operands[0]

    def run(ctx):
        t = ctx.read(op, "u32")[ctx.mask]
        if t.size:
            ctx.extra_delay = int(min(int(t.max()), 1_000_000))

    return run


@semantics("setmaxnreg")
def decode_setmaxnreg(ins, info):
    """PTX ISA §9.7.19.5 setmaxnreg.{inc|dec}.sync.aligned.u32 imm: a hint to grow/shrink the per-thread
    register count of the warpgroup (no functional effect in tcsim; see the module docstring)."""
    what = ins.full_opcode
    form = parse_setmaxnreg(ins)
    action, count = form.action, form.count

    def run(ctx):
        if not ctx.mask.any():
            return
        ctx.require_converged(what)
        ctx.emit_sync("setmaxnreg", action=action, count=count)

    return run


@semantics("pmevent")
def decode_pmevent(ins, info):
    """PTX ISA §9.7.19.3 pmevent: performance-monitor event; has no architectural effect (recorded as a sync
    event)."""
    parse_control(ins)

    def run(ctx):
        ctx.emit_sync("pmevent", args=[str(o) for o in ins.operands])

    return run
