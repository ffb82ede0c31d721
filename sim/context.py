"""The one interface through which semantics reach machine state (registers, memories, control, sync).

An :class:`ExecContext` belongs to one warp and is re-pointed at each instruction the warp executes:
``ctx.ins`` is the instruction, ``ctx.group`` the lanes at this PC, ``ctx.mask`` the lanes that execute it
(group AND guard predicate).  Register reads return all 32 lanes (values of inactive lanes are whatever the
register holds); writes touch only ``ctx.mask`` lanes.  Every memory access and sync event is reported to the
observation bus here, so the tracer, race detector and debugger see everything and nothing else needs hooks.

This is the warp side of the one door (DESIGN.md principle 13; the agents' side is
:class:`tcsim.agents.port.AgentPort`): register reads and writes (:class:`tcsim.observe.RegAccess` when an observer
asks for kind 'reg'), loads and stores of every state space -- global, shared::cta / shared::cluster (DSMEM), local,
param, const, the caller-side call parameters, TMEM (``tcgen05.ld``) -- as :class:`tcsim.observe.MemAccess`, and sync
events (:meth:`emit_sync`) as :class:`tcsim.observe.SyncEvent`, each carrying warp, pc, PTX line and lanes.  A warp's
state changes of the sync objects -- mbarriers (``mbarrier_init`` / ``_inval`` / ``_arrive`` / ``_expect_tx`` /
``_complete_tx`` / ``_test`` / ``_block``, ``cp_async_mbarrier_arrive``) and async-groups (``async_group_join`` /
``_commit`` / ``_wait``) -- are operations here that make the change and report it together.  Memory
arrays are reached only through the memory layer's raw methods (sim/memory.py).  The executing CTA's other state
is offered as operations (:attr:`rank`, :meth:`is_local`, :meth:`smem_check`, :attr:`tmem`, :meth:`async_groups`,
:meth:`agent`, :meth:`fail`...) so that semantics need not reach through ``ctx.cta`` / ``ctx.engine``.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import MISALIGNED_ADDRESS, MemoryFault, SyncError, UnsupportedError, VerifyError
from . import memory as M
from .machine import WARP, Wait
from .async_groups import thread_groups
from .observe import MemAccess, RegAccess, SyncEvent
from .ptxtypes import UINT, b128_of, imm_bits, size_of, to_container, to_type, view_dtype
from .tmem import tmem_of
from .race.protocol import warp_act
from .findings import lanes_text

#: special registers of type .pred (PTX ISA 9.1 §10, %is_explicit_cluster: "a predicate ... read-only")
PRED_SREGS = ("%is_explicit_cluster",)

_SPACES = ("global", "shared", "local", "param", "const", "generic")


def lanes_str(mask: np.ndarray) -> str:
    """The lanes set in a warp's lane mask ('all lanes', 'lanes 0,2-5', ...: :func:`tcsim.findings.lanes_text`)."""
    return lanes_text(np.nonzero(mask)[0])


class ExecContext:
    def __init__(self, engine, warp):
        self.engine = engine
        self.warp = warp
        self.cta = warp.cta
        self.cluster = warp.cta.cluster
        self.program = engine.program
        self.gmem = engine.gmem
        self.bus = engine.bus
        self.env = engine.env
        self.ins: ir.Instruction | None = None
        self.pc = 0
        self.group = np.zeros(WARP, dtype=bool)
        self.mask = np.zeros(WARP, dtype=bool)
        self.writes: dict | None = None     # register writes of the current instruction (when tracing)
        self.extra_delay = 0                # cycles added to this instruction's issue by semantics

    # ------------------------------------------------------------------------------------------ basics
    @property
    def now(self) -> float:
        return self.env.now

    @property
    def where(self) -> str:
        return f"{self.warp.label}, {lanes_str(self.mask if self.mask.any() else self.group)}"

    def lane_ids(self, mask=None) -> np.ndarray:
        return np.nonzero(self.mask if mask is None else mask)[0]

    # ------------------------------------------------------------------------------------------ findings
    def side(self, *, proxy: str | None = None, where: str | None = None, mask=None, what: str | None = None):
        """This warp's current instruction as one side of a finding (:class:`tcsim.findings.Access`)."""
        from .findings import Access
        m = self.mask if mask is None else mask
        ins = self.ins
        return Access(what=what or (str(ins) if ins is not None else "?"), loc=None if ins is None else ins.loc,
                      cta=self.cta.ctaid, warp=self.warp.id, lanes=lanes_str(m), proxy=proxy, unit="warp",
                      where=where, cycle=float(self.env.now))

    def report(self, finding) -> None:
        """Report a :class:`tcsim.findings.Finding` (sanitizer mode records it; strict mode raises here)."""
        self.engine.findings.report(finding)

    # ------------------------------------------------------------------------------------------ registers
    def reg_array(self, name: str) -> np.ndarray:
        try:
            return self.warp.regs[name]
        except KeyError:
            raise VerifyError(f"register {name} is not declared") from None

    def read(self, op, ptype: str) -> np.ndarray:
        """Value of a scalar operand for all 32 lanes, viewed as PTX type ``ptype``."""
        if isinstance(op, ir.Reg):
            bits = self.reg_array(op.name)
            if bits.dtype == np.bool_:
                raise VerifyError(f"predicate {op.name} used where a .{ptype} value is expected")
            if self.bus.want_reg:
                self._publish_reg(op.name, False)
            try:
                return to_type(bits, ptype)
            except ValueError as e:
                raise VerifyError(f"register {op.name}: {e}") from None
        if isinstance(op, ir.Imm):
            if ptype == "b128":
                # a PTX integer constant is 64 bits (§4.5.1); as a .b128 value it is zero-extended: on an H100,
                # mov.b128 %q, -1 gives {0xFFFFFFFFFFFFFFFF, 0} (tests/hw/golden_h100/hopper_misc.json)
                if op.kind != "int":
                    raise VerifyError(f"a float constant {op} cannot be a .b128 value")
                return b128_of(np.full(WARP, int(op.value) & ((1 << 64) - 1), np.uint64), np.zeros(WARP, np.uint64))
            try:
                b = imm_bits(op.value, op.kind, ptype, op.bits)
            except ValueError as e:         # a float immediate where an integer of another size belongs
                raise VerifyError(str(e), expected=f"an integer immediate for a .{ptype} operand (PTX ISA §4.5)") \
                    from None
            return np.full(WARP, b, dtype=UINT[size_of(ptype)]).view(view_dtype(ptype))
        if isinstance(op, ir.SpecialReg):
            if op.name in PRED_SREGS:
                raise VerifyError(f"special register {op.name} is a predicate (PTX ISA §10), not a .{ptype} value "
                                  f"(ptxas: \"Arguments mismatch\")",
                                  expected=f"mov.pred %p, {op.name} (then selp for a number)")
            return to_type(self.special(op), ptype)
        if isinstance(op, ir.Sym):
            frame = self._frame_offset(op.name)
            if frame is not None:                   # a .local variable of a called function: per-thread frame
                a = (frame + op.offset).astype(np.uint64) & np.uint64((1 << (8 * size_of(ptype))) - 1)
                return a.astype(UINT[size_of(ptype)]).view(view_dtype(ptype))
            a = self.symbol_address(op.name) + op.offset
            return np.full(WARP, a & ((1 << (8 * size_of(ptype))) - 1), dtype=UINT[size_of(ptype)]).view(
                view_dtype(ptype))
        if isinstance(op, ir.Vector) and len(op.elems) == 1:
            return self.read(op.elems[0], ptype)
        raise VerifyError(f"operand {op} cannot be read as a .{ptype} value")

    def read_vector(self, op, ptype: str) -> list:
        if isinstance(op, ir.Vector):
            return [self.read(e, ptype) for e in op.elems]
        return [self.read(op, ptype)]

    def write(self, op, ptype: str, values, mask=None) -> None:
        """Write ``values`` (typed as ``ptype``) into register ``op`` for the executing lanes."""
        if isinstance(op, ir.Sink):
            return
        if isinstance(op, ir.Vector) and len(op.elems) == 1:
            op = op.elems[0]
        if not isinstance(op, ir.Reg):
            raise VerifyError(f"destination {op} is not a register")
        reg = self.reg_array(op.name)
        if reg.dtype == np.bool_:
            raise VerifyError(f"predicate {op.name} used as a .{ptype} destination")
        m = self.mask if mask is None else mask
        vals = values if type(values) is np.ndarray and values.shape == (WARP,) else \
            np.broadcast_to(np.asarray(values), (WARP,))
        try:
            bits = to_container(vals, ptype, reg.dtype.itemsize)
        except ValueError as e:
            raise VerifyError(f"register {op.name}: {e}") from None
        reg[m] = bits[m]
        if self.writes is not None:
            self.writes[op.name] = reg
        if self.bus.want_reg:
            self._publish_reg(op.name, True, m)

    def write_columns(self, elems, ptype: str, values: np.ndarray, mask=None) -> None:
        """``write(elems[j], ptype, values[:, j], mask)`` for every j (``values``: (32, len(elems))), converting the
        values once per register size: the destination list of a wide load (``tcgen05.ld``'s up to 128 registers)."""
        m = self.mask if mask is None else mask
        publish = self.bus.want_reg
        names = [] if publish else None
        conv = {}
        for j, op in enumerate(elems):
            if isinstance(op, ir.Vector) and len(op.elems) == 1:
                op = op.elems[0]
            if not isinstance(op, ir.Reg):
                self.write(op, ptype, values[:, j], mask)       # a sink, or the error of a non-register
                continue
            reg = self.reg_array(op.name)
            if reg.dtype == np.bool_:
                raise VerifyError(f"predicate {op.name} used as a .{ptype} destination")
            size = reg.dtype.itemsize
            bits = conv.get(size)
            if bits is None:
                try:
                    bits = conv[size] = to_container(values, ptype, size)
                except ValueError as e:
                    raise VerifyError(f"register {op.name}: {e}") from None
            reg[m] = bits[m, j]
            if self.writes is not None:
                self.writes[op.name] = reg
            if publish:
                names.append(op.name)
        if names:
            self._publish_reg(names[0], True, m, regs=tuple(names))

    def write_vector(self, op, ptype: str, values: list, mask=None) -> None:
        elems = op.elems if isinstance(op, ir.Vector) else (op,)
        if len(elems) != len(values):
            raise VerifyError(f"vector {op} has {len(elems)} elements, instruction produces {len(values)}")
        for e, v in zip(elems, values):
            self.write(e, ptype, v, mask)

    def read_pred(self, op) -> np.ndarray:
        if isinstance(op, ir.Not):
            return ~self.read_pred(op.operand)
        if isinstance(op, ir.Reg):
            r = self.reg_array(op.name)
            if r.dtype != np.bool_:
                raise VerifyError(f"register {op.name} is not a predicate")
            if self.bus.want_reg:
                self._publish_reg(op.name, False)
            return r.copy()
        if isinstance(op, ir.Imm) and op.kind == "int":
            return np.full(WARP, bool(op.value))
        if isinstance(op, ir.SpecialReg) and op.name in PRED_SREGS:
            return self.special(op).astype(bool)
        raise VerifyError(f"operand {op} is not a predicate")

    def write_pred(self, op, values, mask=None) -> None:
        if isinstance(op, ir.Sink):
            return
        if not isinstance(op, ir.Reg):
            raise VerifyError(f"destination {op} is not a predicate register")
        r = self.reg_array(op.name)
        if r.dtype != np.bool_:
            raise VerifyError(f"register {op.name} is not a predicate")
        m = self.mask if mask is None else mask
        if type(values) is np.ndarray and values.dtype == np.bool_ and values.shape == (WARP,):
            r[m] = values[m]
        else:
            r[m] = np.broadcast_to(np.asarray(values, dtype=bool), (WARP,))[m]
        if self.writes is not None:
            self.writes[op.name] = r
        if self.bus.want_reg:
            self._publish_reg(op.name, True, m)

    def _publish_reg(self, name: str, write: bool, mask=None, regs: tuple = ()) -> None:
        """One :class:`RegAccess` of register ``name`` (``regs``: every register of a register list written
        together, ``name`` its first), unless no 'reg' observer watches any of them (``bus.reg_names``)."""
        rn = self.bus.reg_names
        if rn is not None and (name not in rn if not regs else rn.isdisjoint(regs)):
            return
        m = self.mask if mask is None else mask
        if not m.any():
            return
        self.bus.publish(RegAccess(self.now, self.cta.ctaid, "warp", warp=self.warp.id, pc=self.pc, line=self._line(),
                                   reg=name, write=write, lanes=tuple(np.flatnonzero(m).tolist()), regs=regs))

    # ------------------------------------------------------------------------------------------ special regs
    def special(self, sreg: ir.SpecialReg) -> np.ndarray:
        return self.engine.special_register(self, sreg)

    # ------------------------------------------------------------------------------------------ addresses
    def _frame_offset(self, name: str):
        """Per-lane local-memory offsets of ``name`` when it is a ``.local`` variable of the executing device
        function (each thread's frame sits at its own stack depth, tcsim.callstack); None otherwise."""
        cs = self.warp.callstack
        if cs is None or self.warp.func_index == 0:
            return None
        off = cs.link.functions[self.warp.func_index].local_symbols.get(name)
        if off is None:
            return None
        # cs.base: the local address of the executing function's depot in each thread (tcsim.linker: in the kernel's
        # frame for a non-recursive function, at the thread's stack pointer for a recursive one)
        return cs.base + off

    def symbol_address(self, name: str) -> int:
        """Address of a named variable in its own state space (shared: 32-bit shared address with this CTA's
        rank bits, counted from the start of the shared window; local: its address in the kernel's frame below the
        stack top; global: generic address; param/const: state-space offset; a function: its address,
        tcsim.linker)."""
        p = self.program
        s = p.shared_symbols.get(name)
        if s is not None:
            return M.shared_address(self.cta.rank, s.offset)
        s = p.param_symbols.get(name)
        if s is not None:
            return s.offset
        s = p.local_symbols.get(name)
        if s is not None:
            return p.local_base + s.offset      # the frame lies below the stack top (tcsim.address_map)
        s = p.const_symbols.get(name)
        if s is not None:
            return s.offset
        g = self.engine.global_symbols.get(name)
        if g is not None:
            return g
        if name in p.module.functions:
            lf = p.link.by_name.get(name) if p.link is not None else None
            if lf is None or lf.index == 0:
                raise UnsupportedError(f"taking the address of {name} is not supported (only a linked .func has "
                                       f"an address)")
            return lf.address
        raise VerifyError(f"unknown symbol {name}")

    def symbol_space(self, name: str) -> str | None:
        p = self.program
        for space, table in (("shared", p.shared_symbols), ("param", p.param_symbols),
                             ("local", p.local_symbols), ("const", p.const_symbols),
                             ("global", self.engine.global_symbols)):
            if name in table:
                return space
        return None

    def address(self, op: ir.Address, addr_type: str = "u64") -> np.ndarray:
        """Effective address of ``[base+offset]`` for every lane, as uint64."""
        base = op.base
        if base is None:
            a = np.zeros(WARP, dtype=np.uint64)
        elif isinstance(base, ir.Sym):
            frame = self._frame_offset(base.name)
            if frame is not None:
                a = (frame + base.offset).astype(np.uint64)
            else:
                a = np.full(WARP, self.symbol_address(base.name) + base.offset, dtype=np.uint64)
        elif isinstance(base, ir.Reg):
            r = self.reg_array(base.name)
            if r.dtype == np.bool_:
                raise VerifyError(f"predicate {base.name} used as an address")
            a = r.astype(np.uint64)
        else:
            raise VerifyError(f"unsupported address base {base}")
        if op.offset:
            a = (a.astype(np.int64) + np.int64(op.offset)).astype(np.uint64)
        return a

    # ------------------------------------------------------------------------------------------ memory
    def _check_align(self, addrs, lanes, nbytes, align, space):
        if align > 1:
            a = addrs
            if space in ("generic", "") and align > 16:
                # the parameter bank starts at offset 0x210 of constant bank 0 on the H100, so a generic parameter
                # address is only 16-byte aligned where the parameter is 64-byte aligned (a tensor map): alignment
                # beyond 16 is the parameter offset's (tcsim.address_map)
                pa = (a >= np.uint64(M.PARAM_WINDOW)) & (a < np.uint64(M.PARAM_WINDOW + M.WINDOW_SIZE))
                a = np.where(pa, a - np.uint64(M.PARAM_WINDOW), a)
            bad = (a % np.uint64(align)) != 0
            if bad.any():
                i = int(np.nonzero(bad)[0][0])
                raise MemoryFault(f"misaligned {space} access of {nbytes} bytes at address "
                                  f"0x{int(addrs[i]):x} (lane {int(lanes[i])})",
                                  expected=f"an address aligned to {align} bytes", gpu_error=MISALIGNED_ADDRESS)

    def _resolve_generic(self, addrs: np.ndarray):
        """Split generic addresses into (space, addresses-in-space) groups; yields (space, selector, addrs)."""
        out = []
        a = addrs.astype(np.uint64)
        sh = (a >= np.uint64(M.SHARED_WINDOW)) & (a < np.uint64(M.SHARED_WINDOW + M.WINDOW_SIZE))
        lo = (a >= np.uint64(M.LOCAL_WINDOW)) & (a < np.uint64(M.LOCAL_WINDOW + M.WINDOW_SIZE))
        pa = (a >= np.uint64(M.PARAM_WINDOW)) & (a < np.uint64(M.PARAM_WINDOW + M.WINDOW_SIZE))
        co = (a >= np.uint64(M.CONST_WINDOW)) & (a < np.uint64(M.CONST_WINDOW + M.WINDOW_SIZE))
        gl = ~(sh | lo | pa | co)
        if pa.any():
            out.append(("param", pa, a - np.uint64(M.PARAM_WINDOW)))
        if co.any():
            out.append(("const", co, a - np.uint64(M.CONST_WINDOW)))
        if sh.any():
            out.append(("shared::cluster", sh, a - np.uint64(M.SHARED_WINDOW)))
        if lo.any():
            out.append(("local", lo, a - np.uint64(M.LOCAL_WINDOW)))
        if gl.any():
            out.append(("global", gl, a))
        return out

    def _shared_target(self, space: str, addrs: np.ndarray, nbytes: int):
        """Per-lane (cta, offset) for a shared access; faults on a foreign rank in .shared::cta."""
        ranks, offs = M.split_shared(addrs)
        if space in ("shared", "shared::cta"):
            bad = ranks != self.cta.rank
            if bad.any():
                i = int(np.nonzero(bad)[0][0])
                raise MemoryFault(f".shared::cta address 0x{int(addrs[i]):x} belongs to cluster rank "
                                  f"{int(ranks[i])}, not to the executing CTA (rank {self.cta.rank})",
                                  expected="a .shared::cluster access (or mapa) for another CTA's memory")
        return ranks, offs

    def load(self, space: str, addrs: np.ndarray, nbytes: int, mask=None, align: int | None = None,
             op: str = "ld") -> np.ndarray:
        """Read ``nbytes`` per executing lane; returns uint8 array (32, nbytes) (zeros on inactive lanes)."""
        m = self.mask if mask is None else mask
        out = np.zeros((WARP, nbytes), dtype=np.uint8)
        lanes = np.nonzero(m)[0]
        if lanes.size == 0:
            return out
        a = np.asarray(addrs, dtype=np.uint64)[lanes]
        self._check_align(a, lanes, nbytes, nbytes if align is None else align, space)
        for sp, sel, sa in self._split(space, a):
            out[lanes[sel]] = self._raw_read(sp, sa, nbytes, lanes[sel])
            if self.bus.active:
                self._publish_mem(op, sp, "generic", sa, nbytes, lanes[sel])
        return out

    def store(self, space: str, addrs: np.ndarray, data: np.ndarray, mask=None, align: int | None = None,
              op: str = "st") -> None:
        """Write rows of ``data`` (uint8 (32, nbytes)) for executing lanes.

        When several lanes of one instruction store to the same address (undefined in PTX), the lowest lane's
        value lands last and wins, as observed on the H100 (32 lanes of one st.global to one address kept
        lane 0's value); lanes are therefore written in descending order."""
        m = self.mask if mask is None else mask
        lanes = np.nonzero(m)[0][::-1]
        if lanes.size == 0:
            return
        nbytes = data.shape[1]
        a = np.asarray(addrs, dtype=np.uint64)[lanes]
        self._check_align(a, lanes, nbytes, nbytes if align is None else align, space)
        for sp, sel, sa in self._split(space, a):
            self._raw_write(sp, sa, data[lanes[sel]], lanes[sel])
            if self.bus.active:
                self._publish_mem(op, sp, "generic", sa, nbytes, lanes[sel])

    def discard(self, space: str, addrs: np.ndarray, nbytes: int) -> None:
        """``discard.global.L2`` (PTX ISA §9.7.9.17): a weak write of an indeterminate value to ``nbytes`` (one L2
        line, aligned to its size) per executing lane.  The bytes are left as they are (one of the values the
        PTX allows); the write is reported (op 'discard') so the race detector orders it like a store."""
        lanes = np.nonzero(self.mask)[0]
        if lanes.size == 0:
            return
        a = np.asarray(addrs, dtype=np.uint64)[lanes]
        self._check_align(a, lanes, nbytes, nbytes, space)
        for sp, sel, sa in self._split(space, a):
            if sp != "global":
                raise MemoryFault(f"discard of a .{sp} address 0x{int(sa[0]):x}: discard applies to global memory",
                                  expected="a global address")
            self._raw_read(sp, sa, 1, lanes[sel])          # faults on an address outside every allocation
            if self.bus.active:
                self._publish_mem("discard", sp, "generic", sa, nbytes, lanes[sel])

    # ------------------------------------------------------------------------------------------ grid dependency
    def griddepcontrol(self, action: str) -> None:
        """``griddepcontrol.launch_dependents`` / ``.wait`` (PTX ISA §9.7.13) of the executing lanes: the first
        trigger of the CTA is recorded (:class:`tcsim.grid_dependency.GridDependency`); the wait returns at once,
        since tcsim runs a dependent grid after its prerequisites have completed (one allowed schedule) -- the race
        detector orders the prerequisites' accesses before the lanes that waited."""
        lanes = [int(x) for x in self.lane_ids()]
        if not lanes:
            return
        gd = self.engine.grid_dependency
        if action == "launch_dependents":
            gd.launch_dependents(self.cta.ctaid, self.now)
        else:
            gd.wait(self.cta.ctaid, self.now)
        self.emit_sync(f"griddepcontrol.{action}", lanes=lanes)

    def _publish_mem(self, op, space, proxy, addrs, size, lanes, traced=True) -> None:
        self.bus.publish(MemAccess(self.now, self.cta.ctaid, "warp", op=op, space=space, proxy=proxy,
                                   warp=self.warp.id, pc=self.pc, addrs=tuple(np.asarray(addrs).ravel().tolist()), size=size,
                                   lanes=tuple(np.asarray(lanes).ravel().tolist()), line=self._line(), traced=traced))

    def _line(self):
        return None if self.ins is None or self.ins.loc is None else self.ins.loc.line

    def _split(self, space: str, a: np.ndarray):
        if space in ("generic", ""):
            return [(sp, sel, sa[sel]) for sp, sel, sa in self._resolve_generic(a)]
        return [(space, np.ones(a.size, dtype=bool), a)]

    def _raw_read(self, space: str, a: np.ndarray, nbytes: int, lanes: np.ndarray) -> np.ndarray:
        if space == "global":
            return self.gmem.read_rows(a, nbytes)
        if space.startswith("shared"):
            ranks, offs = self._shared_target(space, a, nbytes)
            out = np.empty((a.size, nbytes), dtype=np.uint8)
            for r in np.unique(ranks):
                sel = ranks == r
                cta = self.cluster.cta_by_rank(int(r))
                self._check_peer(cta)
                out[sel] = cta.smem.read_rows(offs[sel], nbytes)
                self.engine.check_mbarrier_overlap(cta, offs[sel], nbytes, write=False)
            return out
        if space == "local":
            if self.warp.local is None:
                raise M.no_local_memory(nbytes, "read", a)
            return self.warp.local.read_rows(lanes, a, nbytes)
        if space == "param":
            return M.read_image(self.engine.param_image, a, nbytes, "kernel parameter space")
        if space == "const":
            return M.read_image(self.engine.const_image, a, nbytes, "constant space")
        raise UnsupportedError(f"loads from state space .{space} are not supported")

    def _raw_write(self, space: str, a: np.ndarray, rows: np.ndarray, lanes: np.ndarray) -> None:
        nbytes = rows.shape[1]
        if space == "global":
            self.gmem.write_rows(a, rows)
            return
        if space.startswith("shared"):
            ranks, offs = self._shared_target(space, a, nbytes)
            for r in np.unique(ranks):
                sel = ranks == r
                cta = self.cluster.cta_by_rank(int(r))
                self._check_peer(cta)
                self.engine.check_mbarrier_overlap(cta, offs[sel], nbytes, write=True,
                                                   side=lambda: self.side(proxy="generic"))
                cta.smem.write_rows(offs[sel], rows[sel])
            return
        if space == "local":
            if self.warp.local is None:
                raise M.no_local_memory(nbytes, "write", a)
            self.warp.local.write_rows(lanes, a, rows)
            return
        if space in ("param", "const"):
            raise MemoryFault(f"store to read-only state space .{space}")
        raise UnsupportedError(f"stores to state space .{space} are not supported")

    def _check_peer(self, cta) -> None:
        if cta.exited and cta is not self.cta:
            raise MemoryFault(f"access to the shared memory of {cta.label}, which has already exited",
                              expected="peer CTAs to stay resident (cluster barrier before exit)")

    # ------------------------------------------------------------------------------------------ call parameters
    def has_call_param(self, name: str) -> bool:
        return name in self.warp.call_params

    def call_param_load(self, name: str, offset: int, nbytes: int) -> np.ndarray:
        """(32, nbytes) bytes of the caller-side .param variable ``name`` (PTX ISA §5.1.6.2) from ``offset``;
        reported as an untraced ``ld`` of space 'param' (the pre-issue-14 trace did not list these)."""
        rows = self.warp.call_params.read_rows(name, offset, nbytes)
        if self.bus.active:
            lanes = self.lane_ids()
            self._publish_mem("ld", "param", "generic", [offset] * lanes.size, nbytes, lanes, traced=False)
        return rows

    def call_param_store(self, name: str, offset: int, rows: np.ndarray) -> None:
        """Write the executing lanes' rows of ``rows`` (32, n) into the caller-side .param variable ``name``."""
        self.warp.call_params.write_rows(name, offset, rows, self.mask)
        if self.bus.active:
            lanes = self.lane_ids()
            self._publish_mem("st", "param", "generic", [offset] * lanes.size, rows.shape[1], lanes, traced=False)

    # ------------------------------------------------------------------------------------------ calls
    @property
    def callstack(self):
        """The warp's call stack (:class:`tcsim.callstack.CallStack`), None when the kernel calls no function."""
        return self.warp.callstack

    def call_enter(self, callee: int, return_pc: int, args: list, returns: tuple, lanes=None) -> None:
        """The executing lanes (or ``lanes``) call linked function ``callee`` (PTX ISA §9.7.12.5): push their
        frames, pass ``args`` (``(callee parameter, rows)``), jump to its first instruction; reported as sync
        event ``call``."""
        m = self.mask if lanes is None else lanes
        cs = self.warp.callstack
        act = cs.enter(m, self.warp.func_index, callee, return_pc, returns)
        for name, rows in args:
            act.params.write_rows(name, 0, rows, m)
        lf = cs.link.functions[callee]
        self.jump(lf.base, m)
        self.emit_sync("call", callee=lf.name, lanes=tuple(int(x) for x in np.nonzero(m)[0]), traced=False)

    def call_return(self) -> None:
        """The executing lanes return from the executing function (PTX ISA §9.7.12.6): pop their frames, pass the
        return values, jump back; reported as sync event ``ret``."""
        cs = self.warp.callstack
        fi = self.warp.func_index
        act = cs.activations[fi]
        for m, fr in cs.pop(self.mask):
            # the return values are read before a recursive callee's state is restored, and written into the
            # caller's variables after (the caller may be the same function)
            rows = [act.params.read_rows(p.name, 0, act.params.size_of(p.name))
                    for p in cs.link.functions[fi].fn.returns]
            cs.unwind(m, fr)
            caller = cs.activations[fr.caller].params
            for name, r in zip(fr.returns, rows):
                n = min(r.shape[1], caller.size_of(name))
                caller.write_rows(name, 0, r[:, :n], m)
            self.jump(fr.return_pc, m)
        self.emit_sync("ret", callee=cs.link.functions[fi].name, traced=False)

    def call_param_size(self, name: str) -> int:
        """Declared bytes of the executing function's .param variable ``name``."""
        return self.warp.call_params.size_of(name)

    def call_param_rows(self, name: str, nbytes: int) -> np.ndarray:
        """(32, nbytes) bytes of the executing function's .param variable ``name`` (a call's argument), untraced
        like :meth:`call_param_load`."""
        return self.call_param_load(name, 0, nbytes)

    # ------------------------------------------------------------------------------------------ warp state
    def carry_flag(self) -> np.ndarray:
        """CC.CF of every lane (PTX ISA §9.7.2: the carry of add.cc/sub.cc/mad.cc, read by addc/subc/madc)."""
        return self.warp.carry

    def set_carry_flag(self, values) -> None:
        self.warp.carry[self.mask] = np.asarray(values, dtype=bool)[self.mask]

    @property
    def stdout(self) -> list:
        """The simulation's printed lines (vprintf appends)."""
        return self.engine.stdout

    # ------------------------------------------------------------------------------------------ the executing CTA
    @property
    def rank(self) -> int:
        """The executing CTA's rank in its cluster (%cluster_ctarank; the rank bits of its shared addresses)."""
        return self.cta.rank

    def is_local(self, cta) -> bool:
        """``cta`` is the executing CTA (not a peer of its cluster)."""
        return cta is self.cta

    @property
    def cta_threads(self) -> int:
        """Threads of the executing CTA, counted in whole warps (a named barrier's default count)."""
        return WARP * len(self.cta.warps)

    @property
    def block_dims(self) -> tuple:
        """The launch's CTA shape (%ntid)."""
        return self.engine.block

    def smem_check(self, off: int, nbytes: int, what: str) -> None:
        """MemoryFault unless ``[off, off + nbytes)`` lies inside the executing CTA's shared memory."""
        self.cta.smem.check(np.asarray([off]), nbytes, what)

    def async_groups(self, kind: str, lane: int):
        """The async-group state (:class:`tcsim.async_groups.AsyncGroups`) of thread ``lane`` of this warp for
        ``kind`` 'bulk' (cp.async.bulk groups, PTX ISA §9.7.9.25.6), 'cp.async' (§9.7.9.25.3) or 'wgmma' (wgmma-groups,
        §9.7.15.7.2)."""
        table = {"bulk": self.cta.bulk_groups, "cp.async": self.cta.cp_async_groups,
                 "wgmma": self.cta.wgmma_groups}[kind]
        return thread_groups(table, self.warp.id, lane)

    def async_group_join(self, kind: str, lane: int, op) -> None:
        """Async op ``op``, just issued by thread ``lane``, joins its open ``kind`` group (its issue is reported by
        the agent, :meth:`tcsim.agents.port.AgentPort.async_issue`)."""
        self.async_groups(kind, lane).apply_join(op)

    def async_group_commit(self, kind: str, sync: str) -> None:
        """commit_group (PTX ISA §9.7.9.25.3.2 cp.async.commit_group, §9.7.9.25.6.1 cp.async.bulk.commit_group):
        seal each executing thread's open ``kind`` ops into a new group (possibly empty); report ``sync``."""
        for lane in self.lane_ids():
            self.async_groups(kind, lane).apply_commit()
        self.emit_sync(sync)

    def async_group_wait(self, kind: str, keep: int, sync: str, *, event: str = "done", commit_first: bool = False,
                         **fields) -> tuple[np.ndarray, list]:
        """wait_group ``keep`` (§9.7.9.25.3.3, §9.7.9.25.6.2): report ``sync`` (``n=keep``, then ``fields``) and
        return the executing lanes that must wait and the ``event`` events (``done`` / ``read_done``) of the
        groups older than their ``keep`` newest still pending; ``commit_first`` (cp.async.wait_all) seals each
        thread's open ops first."""
        waits = {}
        blocked = np.zeros_like(self.mask)
        for lane in self.lane_ids():
            st = self.async_groups(kind, lane)
            if commit_first:
                st.apply_commit()
            evs = st.pending_older(keep, event)
            if evs:
                waits.update((id(e), e) for e in evs)
                blocked[lane] = True
        self.emit_sync(sync, n=keep, **fields)
        return blocked, list(waits.values())

    # ------------------------------------------------------------------------------------------ agents
    def agent(self, name: str, factory, key=None):
        """The simulation's async agent ``name`` (one per ``key``), created by ``factory(sim)`` on first use."""
        return self.engine.agent(name, factory, key)

    def fail(self, error) -> None:
        """Stop the simulation with ``error`` (from a callback that runs outside the instruction)."""
        self.engine.fail(error)

    # ------------------------------------------------------------------------------------------ TMEM
    @property
    def tmem(self):
        """The executing CTA's Tensor Memory (created on first use)."""
        return tmem_of(self.cta)

    def tmem_load(self, lanes: np.ndarray, cols: np.ndarray, size: int, pack: bool = False) -> np.ndarray:
        """``tcgen05.ld`` (PTX ISA 9.1 §9.7.16.8.3): the words of the executing CTA's TMEM cells ``(lanes[t, j],
        cols[t, j])`` for thread lane ``t`` (shape (32, R)); ``pack`` (``.pack::16b``) joins the low halves of
        columns ``c`` and ``c + 1``.  Reported as one ``ld`` of ``size`` bytes per register at each executing lane's
        cells (space 'tmem', proxy 'async')."""
        tm = self.tmem
        if pack:
            lo = tm.read_cells(lanes, cols) & np.uint32(0xFFFF)
            hi = tm.read_cells(lanes, cols + 1) & np.uint32(0xFFFF)
            vals = lo | (hi << np.uint32(16))
        else:
            vals = tm.read_cells(lanes, cols)
        if self.bus.active:
            sel = np.nonzero(self.mask)[0]
            taddrs = ((np.asarray(lanes[sel], dtype=np.int64) & 0xFFFF) << 16) | \
                (np.asarray(cols[sel], dtype=np.int64) & 0xFFFF)        # tcsim.tmem.make_taddr, vectorised
            self._publish_mem("ld", "tmem", "async", taddrs.ravel(), size, np.repeat(sel, lanes.shape[1]))
        return vals

    def global_bytes(self, addr: int, nbytes: int) -> np.ndarray:
        """``nbytes`` of global memory at ``addr`` read on behalf of the executing lane-0 thread by a system call
        (``vprintf`` reading its format string); reported untraced (the pre-issue-14 trace did not list it)."""
        rows = self.gmem.read_rows(np.asarray([addr], dtype=np.uint64), nbytes)
        if self.bus.active:
            self._publish_mem("ld", "global", "generic", [addr], nbytes, [int(self.lane_ids()[0])]
                              if self.mask.any() else [], traced=False)
        return rows[0]

    # ------------------------------------------------------------------------------------------ control
    def jump(self, target, lanes: np.ndarray) -> None:
        """Set the program counter of ``lanes`` (a lane mask) to ``target`` (one index, or one per selected lane)."""
        self.warp.pc[lanes] = target

    def exit_lanes(self, lanes: np.ndarray) -> None:
        self.engine.exit_lanes(self.warp, lanes)

    def block(self, lanes: np.ndarray, event, reason: str, on_release=None, cause=None) -> None:
        """Suspend ``lanes`` until ``event`` fires; ``on_release(value)`` runs then (e.g. to write results);
        ``cause() -> Finding | None`` explains a wait that never ends, if the run deadlocks."""
        w = self.warp
        wait = Wait(w, lanes, event, reason, on_release, cause)
        w.waiting |= lanes
        w.waits.append(wait)

        def release(ev, wait=wait):
            w.waiting &= ~wait.mask
            if wait in w.waits:
                w.waits.remove(wait)
            if wait.on_release is not None:
                wait.on_release(ev.value)
            self.engine.wake(w)

        if event.callbacks is None:   # already processed
            release(event)
        else:
            event.callbacks.append(release)

    # ------------------------------------------------------------------------------------------ sync events
    def emit_sync(self, op: str, **fields) -> None:
        """Report sync event ``op`` of the executing warp (``fields``: its op-specific detail, in record order)."""
        if self.bus.active:
            self.bus.publish(SyncEvent.make(self.now, self.cta.ctaid, "warp", op, warp=self.warp.id, pc=self.pc,
                                            line=self._line(), **fields))
        self.warp.last_sync = op

    # ------------------------------------------------------------------------------------------ mbarriers
    # Every state change of an mbarrier object (:class:`tcsim.mbarrier_state.MBarrier`) a warp makes is one of these
    # operations: each applies the change and reports it as one sync event, plus 'mbarrier.phase' when the change
    # completed the current phase (PTX ISA 9.1 §9.7.13.15.4), so state and events cannot disagree.  ``cta`` is the
    # CTA holding the barrier, ``lane`` the thread acting; ``fields``: the event's op-specific detail (sem, scope,
    # remote), in record order.
    def _mbarrier_event(self, op: str, cta, mb, lane: int, **fields) -> None:
        self.emit_sync(op, target_cta=cta.ctaid, mbarrier=mb.offset, lane=lane, **fields)

    def _mbarrier_phase(self, cta, mb, before: int, lane: int) -> None:
        if mb.phase != before:
            self.engine.protocol.on_phase(cta, mb, before, self.now)
            self._mbarrier_event("mbarrier.phase", cta, mb, lane, completed=before, phase=mb.phase)

    def mbarrier_init(self, cta, mb, count: int, lane: int) -> None:
        """``mbarrier.init`` (§9.7.13.15.9): phase 0, ``count`` expected and pending arrivals, tx-count 0."""
        self.engine.protocol.on_init(warp_act(self, lane), cta, mb, count)
        mb.apply_init(count)
        self._mbarrier_event("mbarrier.init", cta, mb, lane, count=count)

    def mbarrier_inval(self, cta, mb, lane: int) -> None:
        """``mbarrier.inval`` (§9.7.13.15.10): the object is no longer a live mbarrier."""
        mb.apply_inval()
        self.engine.protocol.on_inval(warp_act(self, lane), cta, mb)
        self._mbarrier_event("mbarrier.inval", cta, mb, lane)

    def mbarrier_revive(self, cta, mb, lane: int) -> None:
        """An operation reached ``mb`` after ``mbarrier.inval``: an H100 performs it on the state the barrier had
        before the inval (probe arrive_after_inval), so that state becomes live again (the class-11 finding is
        :meth:`tcsim.race.protocol.Protocol.dead_barrier`'s)."""
        mb.apply_revive()
        self._mbarrier_event("mbarrier.revive", cta, mb, lane)

    def mbarrier_expect_tx(self, cta, mb, tx: int, lane: int, **fields) -> None:
        """expect-tx(``tx``) (§9.7.13.15.6): raise the tx-count of the current phase (never completes it)."""
        mb.apply_expect_tx(tx)
        self.engine.protocol.on_expect_tx(warp_act(self, lane), cta, mb, tx)
        self._mbarrier_event("mbarrier.expect_tx", cta, mb, lane, tx=tx, **fields)

    def mbarrier_complete_tx(self, cta, mb, tx: int, lane: int, **fields) -> None:
        """complete-tx(``tx``) (§9.7.13.15.7): lower the tx-count; may complete the phase."""
        before = mb.phase
        self.engine.protocol.on_complete_tx(warp_act(self, lane), cta, mb, tx, foreign=not self.is_local(cta))
        mb.apply_complete_tx(tx)
        self._mbarrier_event("mbarrier.complete_tx", cta, mb, lane, tx=tx, **fields)
        self._mbarrier_phase(cta, mb, before, lane)

    def mbarrier_arrive(self, cta, mb, count: int, lane: int, *, drop: bool = False, no_complete: bool = False,
                        tx: int = 0, **fields) -> int:
        """arrive-on(``count``) (§9.7.13.15.5; ``drop``: arrive_drop, §9.7.13.15.14, also lowers the expected
        count; ``no_complete``: ``.noComplete``); returns the phase the arrive belonged to."""
        before = mb.phase
        phase = mb.apply_arrive(count, drop=drop, no_complete=no_complete)
        self.engine.protocol.on_arrive(warp_act(self, lane), cta, mb, phase, count, tx)
        self._mbarrier_event("mbarrier.arrive", cta, mb, lane, count=count, drop=drop, phase=phase, **fields)
        self._mbarrier_phase(cta, mb, before, lane)
        return phase

    def cp_async_mbarrier_arrive(self, cta, mb, lane: int, *, noinc: bool, waits: int) -> None:
        """``cp.async.mbarrier.arrive`` (PTX ISA §9.7.9.25.3.4) as issued: without ``.noinc`` the pending count of
        the current phase rises by one (the arrive itself comes later, through the 'lsu' port); ``waits``: how
        many of the thread's cp.async it waits for."""
        if not noinc:
            mb.apply_add_pending(1)
        self.emit_sync("cp.async.mbarrier.arrive", mbarrier=mb.offset, lane=lane, noinc=noinc, waits=waits)

    def mbarrier_test(self, cta, mb, lane: int, *, form: str, arg: int, parity: bool, **fields) -> bool:
        """``test_wait`` / ``try_wait`` (§9.7.13.15.16) of ``lane``: has the phase with parity ``arg``
        (``parity``) / the phase ``arg`` of a state token completed?"""
        done = mb.parity_done(arg) if parity else mb.token_done(arg)
        self._mbarrier_event("mbarrier.wait", cta, mb, lane, form=form, arg=arg, done=bool(done), **fields)
        return done

    def mbarrier_block(self, lanes: np.ndarray, mb, reason, on_release=None) -> None:
        """Suspend ``lanes`` until ``mb``'s current phase completes (a blocking ``try_wait``)."""
        self.block(lanes, mb.next_phase_event(), reason, on_release=on_release)

    def async_port(self, agent: str, sync_head: tuple):
        """A sync-only agent port (:class:`tcsim.agents.port.SyncPort`) for an effect this instruction schedules
        for later, e.g. the asynchronous arrive of ``cp.async.mbarrier.arrive`` (agent 'lsu')."""
        from .agents.port import SyncPort
        return SyncPort(self.engine, agent, sync_head, self.cta)

    def require_converged(self, what: str, membermask: int = 0xFFFFFFFF) -> None:
        """For ``.sync.aligned`` warp-collective instructions: every lane of ``membermask`` that is alive must
        be executing this instruction together."""
        need = (np.uint32(membermask) >> np.arange(WARP, dtype=np.uint32)) & 1
        need = need.astype(bool) & self.warp.alive
        missing = need & ~self.mask
        if missing.any():
            raise SyncError(f"{what} is warp-collective but {lanes_str(missing)} of the member mask "
                            f"0x{membermask:08x} are not executing it together with {lanes_str(self.mask)}",
                            expected="all member lanes converged at the same instruction")


# ---------------------------------------------------------------------------------------------- group accesses
# The warp side of the door for a lockstep group of warps (the fast tier, tcsim.fast.batch.BatchCtx): the same raw
# accesses ExecContext.load / store make, for the lanes of several warps at once.  The group context checks
# alignment, rank and bounds before it calls these (an access the reference would fault on runs warp by warp).
def group_read_stacked(stack, which: np.ndarray, offs: np.ndarray, nbytes: int) -> np.ndarray:
    """Rows of ``nbytes`` at ``offs[i]`` of the shared window ``which[i]`` of a
    :class:`tcsim.memory.StackedWindows` (one gather for all of them)."""
    return stack.read_rows(which, offs, nbytes)


def group_write_stacked(stack, which: np.ndarray, offs: np.ndarray, rows: np.ndarray) -> None:
    """Row ``i`` of ``rows`` at ``offs[i]`` of stacked window ``which[i]`` (later rows win)."""
    stack.write_rows(which, offs, rows)


def group_read_stacked_words(stack, which: np.ndarray, offs: np.ndarray, nbytes: int) -> np.ndarray:
    """The aligned ``nbytes``-byte words at ``offs`` (k, m) of the stacked windows ``which`` (k,): one gather
    (:meth:`tcsim.memory.StackedWindows.read_words`)."""
    return stack.read_words(which, offs, nbytes)


def group_write_stacked_words(stack, which: np.ndarray, offs: np.ndarray, values: np.ndarray) -> None:
    """Words ``values`` at the aligned ``offs`` of windows ``which`` (same shapes; later elements win)."""
    stack.write_words(which, offs, values)


def stacked_window_bytes(stack):
    """The bytes of the stacked shared windows as one (windows, bytes) uint8 array that compiled group code
    (tcsim.fast.vm) reads and writes in place, or None when they are not kept as one block."""
    return stack.blocks[0] if len(stack.blocks) == 1 else None


def group_global_arrays(gmem) -> tuple:
    """The global allocations as (bases, byte arrays), address order, that compiled group code (tcsim.fast.vm)
    reads and writes in place -- each access aligned and wholly inside one allocation, stores in the reference's
    lane order (else it leaves the access to the semantics, which fault as the reference does)."""
    return gmem.arrays()


def group_read_global(gmem, addrs: np.ndarray, nbytes: int) -> np.ndarray:
    return gmem.read_rows(addrs, nbytes)


def group_write_global(gmem, addrs: np.ndarray, rows: np.ndarray) -> None:
    """Rows at ``addrs`` (later rows win); faults before writing anything when an address is outside every
    allocation (GlobalMemory.write_rows checks them all first)."""
    gmem.write_rows(addrs, rows)
