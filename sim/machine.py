"""Machine state: the loaded program, clusters of CTAs, warps with per-lane registers.

Nothing in here executes instructions: semantics (``sim/semantics``) act on this state through
:class:`tcsim.context.ExecContext`, and the engine (``sim/engine.py``) decides when.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import LaunchError, MemoryFault, SyncError
from .memory import CallParams, FlatMemory, GlobalMemory, LocalMemory, shared_address
from .mbarrier_state import MBarrier
from .callstack import CallStack, make_regfile
from .ptxtypes import size_of

WARP = 32
MAX_SMEM_PER_CTA = 227 * 1024     # sm_90a / sm_100a: 227 KB per block (tcsim.limits has the sources)
MAX_THREADS_PER_CTA = 1024
MAX_CLUSTER = 16                   # non-portable maximum (8 portable)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


@dataclass
class Symbol:
    """Where a named variable lives: ``space`` and its state-space offset (or global address)."""

    name: str
    space: str
    offset: int
    size: int
    decl: object = None


@dataclass
class Program:
    """A kernel ready to run: its instructions, decoded semantics and the symbol layout."""

    module: ir.Module
    kernel: ir.Function
    body: list
    decoded: list                      # one callable per instruction
    shared_symbols: dict               # name -> Symbol (CTA-relative offset)
    shared_static_size: int            # bytes of the static shared section (tcsim.address_map)
    dynamic_smem_align: int
    local_symbols: dict                # name -> Symbol (offset in the kernel's .local frame)
    local_size: int
    param_symbols: dict                # name -> Symbol (offset into the param buffer)
    param_size: int
    const_symbols: dict
    const_image: bytes
    global_decls: list                 # module .global variables (allocated per launch)
    syncish: list                      # per instruction: warp-synchronous (the engine keeps the warp converged)
    dynamic_smem_base: int = 0         # window offset of the dynamic shared array
    address_map: object = None         # tcsim.address_map.AddressMap of the target
    local_base: int = 0                # local address of byte 0 of the kernel's .local frame
    #: the kernel and the device functions it calls, laid out in ``body`` (tcsim.linker); ``None`` entries of
    #: ``owner`` never occur: the kernel is function 0
    link: object = None
    #: the fast tier's generated group code per (pc, step kind) (tcsim.fast.tier._Generated): a pure function of
    #: the decoded instruction and the register dtypes, built at its first use and shared by every launch of this
    #: program (tcsim.program_cache keeps the program between launches of one PTX text)
    fast_code: dict = field(default_factory=dict, repr=False, compare=False)
    #: the fast tier's per-instruction plan (tcsim.fast.tier.FastTier: groupable families, plain branches,
    #: stores), computed by the first fast launch of this program
    fast_plan: object = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.kernel.name


class NamedBarrier:
    """A CTA barrier resource (bar/barrier 0..15): arrivals counted in threads (PTX ISA §9.7.13.1)."""

    __slots__ = ("index", "expected", "arrived", "event", "waiting", "generation")

    def __init__(self, index: int):
        self.index = index
        self.expected = None
        self.arrived = 0
        self.event = None
        self.waiting = []              # (warp, lane mask) descriptions for deadlock reports
        self.generation = 0


class Cta:
    """One CTA: its SMEM, mbarriers, named barriers and warps."""

    def __init__(self, machine, cluster, ctaid: tuple, rank: int, smem_size: int, reserved: int = 0):
        self.machine = machine
        self.cluster = cluster
        self.ctaid = ctaid
        self.rank = rank
        #: the CTA's shared window: ``reserved`` system bytes, then ``smem_size`` user bytes (tcsim.address_map)
        self.smem = FlatMemory(smem_size, f"shared memory of CTA ({ctaid[0]},{ctaid[1]},{ctaid[2]})", reserved)
        self.mbarriers: dict[int, MBarrier] = {}
        self.barriers = [NamedBarrier(i) for i in range(16)]
        self.warps: list = []
        self.exited = False
        #: the exit / ret of its last exiting lanes (engine: note_exit), as (instruction, warp, lane mask, cycle);
        #: its finding side (last_exit) is built when a finding names it
        self.exit_record = None
        self.tmem = None               # attached by the tcgen05 issue
        self.bulk_groups = {}          # per-thread bulk async-group state, keyed by (warp, lane)
        self.cp_async_groups = {}      # per-thread cp.async group state (non-bulk), keyed by (warp, lane)
        self.wgmma_groups = {}         # per-thread wgmma-groups (PTX ISA §9.7.15.7.2), keyed by (warp, lane)
        self.wgmma_issued = {}         # warpgroup -> {warp: [pc of each wgmma.mma_async issued]} (.aligned check)

    def note_exit(self, ins, warp_id: int, lanes: np.ndarray, cycle: float) -> None:
        """Lanes ``lanes`` of warp ``warp_id`` exit at ``ins`` (the CTA's last exit so far)."""
        self.exit_record = (ins, warp_id, lanes.copy(), cycle)

    @property
    def last_exit(self):
        """The exit / ret of the CTA's last exiting lanes as a finding side (tcsim.findings.Access; what findings
        name as "the CTA exits", classes 13 and 14), or None before any."""
        rec = self.exit_record
        if rec is None:
            return None
        from .findings import Access, lanes_text
        ins, warp_id, lanes, cycle = rec
        return Access(what=str(ins), loc=ins.loc, cta=self.ctaid, warp=warp_id,
                      lanes=lanes_text(np.nonzero(lanes)[0]), proxy=None, unit="warp", where=None, cycle=float(cycle))

    @property
    def label(self) -> str:
        c = self.ctaid
        return f"CTA ({c[0]},{c[1]},{c[2]})"

    def shared_base(self) -> int:
        return shared_address(self.rank, 0)

    def mbarrier(self, offset: int, create: bool = False) -> MBarrier:
        if offset % 8:
            raise MemoryFault(f"mbarrier address offset 0x{offset:x} is not 8-byte aligned",
                              expected="an 8-byte aligned .shared::cta address")
        smem = self.smem
        if not smem.base <= offset <= smem.base + smem.size - 8:        # (the scalar test; check words the fault)
            smem.check(np.asarray([offset]), 8, "mbarrier access")
        mb = self.mbarriers.get(offset)
        if mb is None:
            if not create:
                raise SyncError(f"no mbarrier was initialised at SMEM offset 0x{offset:x} of {self.label}",
                                expected="mbarrier.init on this address before use")
            mb = self.mbarriers[offset] = MBarrier(self.machine.env, offset)
        return mb


class Cluster:
    def __init__(self, machine, clusterid: tuple, dims: tuple):
        self.machine = machine
        self.clusterid = clusterid
        self.dims = dims
        self.ctas: list[Cta] = []      # indexed by rank
        self.barrier_arrived = 0
        self.barrier_event = None
        self.barrier_expected = 0
        self.barrier_waiting = []

    @property
    def size(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]

    def cta_by_rank(self, rank: int) -> Cta:
        if not 0 <= rank < len(self.ctas):
            raise MemoryFault(f"shared::cluster address names CTA rank {rank}, but the cluster has "
                              f"{len(self.ctas)} CTAs", expected=f"rank in [0, {len(self.ctas) - 1}]")
        return self.ctas[rank]


class Warp:
    """A warp: per-lane program counters, liveness, wait state and registers (numpy vectors of 32 lanes)."""

    def __init__(self, cta: Cta, warp_id: int, tids: np.ndarray, nlanes: int, regs: dict, local_size: int,
                 local_base: int = 0, link=None, stack_size: int = 0, regfile=None):
        self.cta = cta
        self.id = warp_id
        self.nlanes = nlanes
        self.valid = np.arange(WARP) < nlanes
        self.alive = self.valid.copy()
        self.waiting = np.zeros(WARP, dtype=bool)
        self.waits: list = []          # active Wait records
        #: lanes parked at a warp-collective .sync instruction until the rest of the warp reaches it
        #: (tcsim.convergence; the engine parks and releases them)
        self.parked = np.zeros(WARP, dtype=bool)
        self.force_pc: int | None = None   # a parked group that must run now (its siblings can never come)
        self.pc = np.zeros(WARP, dtype=np.int64)
        self.tid = tids                # (32, 3) int array
        self.retired = 0
        #: the call stack of the warp's threads (tcsim.callstack) when the kernel calls device functions
        self.callstack = None
        #: index of the linked function whose registers ``regs`` / ``call_params`` are (0: the kernel)
        self.func_index = 0
        if link is not None and len(link.functions) > 1:
            self.callstack = CallStack(link, link.stack_capacity(stack_size))
            act = self.callstack.activations[0]
            self.regs = act.regs
            #: the .param variables of the executing function (PTX ISA §5.1.6.2)
            self.call_params = act.params
            # the thread's stack (tcsim.linker): from the top down by its capacity, and up to the end of the kernel
            # frame's depots where ptxas's kernel frame is smaller than the declared variables
            lo = link.stack_top - self.callstack.capacity
            local_size = max(link.stack_top, link.kernel_sp + link.static_end) - lo
            local_base = lo
        else:
            #: (``regfile``: a register file laid out by the caller, e.g. the fast tier's rows, tcsim.fast.tier)
            self.regs = make_regfile(regs) if regfile is None else regfile
            self.call_params = CallParams()
        self.local = LocalMemory(WARP, local_size, local_base) if local_size else None
        self.ctx = None                # ExecContext, attached by the engine
        self.last_sync = None          # description of the last sync op (for runaway diagnostics)
        #: CC.CF, the carry flag of the extended-precision integer chains (PTX ISA §9.7.2), per lane
        self.carry = np.zeros(WARP, dtype=bool)

    @property
    def label(self) -> str:
        return f"{self.cta.label} warp {self.id}"

    def switch_function(self, index: int) -> None:
        """Execute with the registers and .param variables of linked function ``index`` (the engine calls this
        when the lanes it runs are in another function than the last ones)."""
        act = self.callstack.activations[index]
        self.regs = act.regs
        self.call_params = act.params
        self.func_index = index

    def runnable(self) -> np.ndarray:
        return self.alive & ~self.waiting


class Wait:
    """Lanes of a warp blocked on an event (barrier, mbarrier phase, async group...)."""

    __slots__ = ("warp", "mask", "event", "reason", "on_release", "cause")

    def __init__(self, warp: Warp, mask: np.ndarray, event, reason: str, on_release=None, cause=None):
        self.warp = warp
        self.mask = mask.copy()
        self.event = event
        self.reason = reason
        self.on_release = on_release
        #: ``cause() -> Finding | None``: why the wait can never end, asked when the run deadlocks (the finding
        #: is recorded with outcome 'hang' and named in the deadlock report)
        self.cause = cause


def _referenced_symbols(module: ir.Module, kernel: ir.Function) -> set:
    """Names of the variables the kernel's code can reach: symbols named by an operand of the kernel or of any
    device function of the module, or by a variable's initialiser."""
    names: set = set()
    for fn in module.functions.values():
        if fn is kernel or fn.kind == "func":
            for ins in fn.body:
                for op in ins.operands:
                    ir.operand_symbols(op, names)
    for v in list(module.globals) + list(kernel.locals):
        for item in v.init or ():
            ir.operand_symbols(item, names)
    return names


def layout_program(module: ir.Module, kernel: ir.Function, amap=None) -> dict:
    """Lay out SMEM, local, param and const symbols of ``kernel`` (PTX ISA §5.1 state spaces).

    Shared memory as ptxas lays it out for the H100 (:mod:`tcsim.address_map`; measured by
    calib/probes/address_probe.py): offsets count from the start of the CTA's shared window, the first
    ``amap.reserved_smem`` bytes of which are the system's; the static variables the kernel references follow at
    their natural alignment, kernel-scope declarations first, then module-scope ones, each in declaration order;
    the dynamic (``.extern``) array comes next, aligned to the largest of its declarations' alignments and
    ``amap.dynamic_smem_align``.  Kernel-scope variables never referenced follow the referenced ones (the dynamic
    array may overlap them: they take no address a program can see, but count in the static size); unreferenced
    module-scope ones are dropped.  ``shared_static_size``: the static section's bytes (what the driver reports as
    the kernel's static shared size): up to the dynamic base or the last variable, whichever is further, rounded
    up to ``amap.dynamic_smem_align`` when the kernel declares a dynamic array, and not rounded when it does not."""
    from .address_map import address_map

    amap = amap or address_map(module.arch)
    shared, local, params, consts = {}, {}, {}, {}
    used = _referenced_symbols(module, kernel)
    base = amap.reserved_smem
    off = base
    dyn_align = amap.dynamic_smem_align
    extern_shared, dead = [], []
    decls = [(v, True) for v in kernel.locals if v.space == "shared"] + \
        [(v, False) for v in module.globals if v.space == "shared"]
    for v, kernel_scope in decls:
        if v.linkage == "extern" or (v.dims and v.dims[-1] is None):
            extern_shared.append(v)
            dyn_align = max(dyn_align, v.alignment)
            continue
        if v.name not in used:
            if kernel_scope:                # module-scope ones are dropped (H100 record, case mod2)
                dead.append(v)
            continue
        off = _align(off, v.alignment)
        shared[v.name] = Symbol(v.name, "shared", off, v.size_bytes, v)
        off += v.size_bytes
    dyn_base = _align(off, dyn_align) if extern_shared else off
    for v in extern_shared:
        shared[v.name] = Symbol(v.name, "shared", dyn_base, 0, v)
    end = off
    for v in dead:                          # after the referenced ones; the dynamic array may overlap them
        end = _align(end, v.alignment) + v.size_bytes
    static_size = (amap.static_smem_end(max(end, dyn_base)) if extern_shared else end) - base
    loff = 0
    local_align = 1
    for v in kernel.locals:
        if v.space == "local":
            local_align = max(local_align, v.alignment)
            loff = _align(loff, v.alignment)
            local[v.name] = Symbol(v.name, "local", loff, v.size_bytes, v)
            loff += v.size_bytes
    poff = 0
    for p in kernel.params:
        poff = _align(poff, p.alignment)
        params[p.name] = Symbol(p.name, "param", poff, p.size_bytes, p)
        poff += p.size_bytes
    coff = 0
    for v in module.globals:
        if v.space == "const":
            coff = _align(coff, v.alignment)
            consts[v.name] = Symbol(v.name, "const", coff, v.size_bytes, v)
            coff += v.size_bytes
    return dict(shared_symbols=shared, shared_static_size=static_size, dynamic_smem_align=dyn_align,
                dynamic_smem_base=dyn_base, address_map=amap, local_base=amap.local_base(loff, local_align),
                local_symbols=local, local_size=loff, param_symbols=params, param_size=poff,
                const_symbols=consts, const_size=coff)


def check_launch_shape(kernel: ir.Function, grid, block, cluster, smem_total: int, loc=None,
                       non_portable_cluster: bool = False, arch: str | None = None) -> None:
    """Launch-shape rules: the CUDA limits (:mod:`tcsim.limits`), and the kernel's
    .reqntid/.maxntid/.reqnctapercluster directives."""
    from .limits import check_dims, limits_for
    lim = limits_for(arch)
    for name, dims in (("grid", grid), ("block", block), ("cluster", cluster)):
        if len(dims) != 3 or any((not isinstance(d, (int, np.integer))) or d < 1 for d in dims):
            raise LaunchError(f"{name} dimensions {tuple(dims)} are invalid", loc,
                              expected=f"three positive integers for {name}")
    try:
        check_dims(grid, block, cluster, non_portable_cluster, lim)
    except LaunchError as e:
        raise e.with_context(loc=loc)
    nthreads = block[0] * block[1] * block[2]
    d = kernel.directives
    loc = loc or kernel.loc                 # a directive of the kernel: where the kernel is declared
    if "reqntid" in d and tuple(d["reqntid"]) != tuple(block):
        raise LaunchError(f"kernel {kernel.name} requires .reqntid {tuple(d['reqntid'])} but the launch uses "
                          f"block {tuple(block)}", loc, expected=f"block {tuple(d['reqntid'])}")
    if "maxntid" in d:
        m = d["maxntid"]
        if nthreads > m[0] * m[1] * m[2]:
            raise LaunchError(f"block {tuple(block)} exceeds .maxntid {tuple(m)} of kernel {kernel.name}", loc)
    if "reqnctapercluster" in d and tuple(d["reqnctapercluster"]) != tuple(cluster):
        raise LaunchError(f"kernel {kernel.name} requires .reqnctapercluster {tuple(d['reqnctapercluster'])} "
                          f"but the launch uses cluster {tuple(cluster)}", loc,
                          expected=f"cluster {tuple(d['reqnctapercluster'])}")
    if smem_total > lim.max_smem_per_cta:
        raise LaunchError(f"kernel needs {smem_total} bytes of shared memory per CTA", loc,
                          expected=f"at most {lim.max_smem_per_cta} bytes (227 KiB)")


__all__ = ["Program", "Cta", "Cluster", "Warp", "Wait", "NamedBarrier", "Symbol", "GlobalMemory", "WARP",
           "layout_program", "check_launch_shape", "size_of"]
