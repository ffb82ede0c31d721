"""One door (DESIGN.md principle 13): only the memory layer touches memory arrays; semantics and agents reach memory
through the execution context (sim/context.py) or the agent interface (sim/agents/port.py); state is declared.

Two guards: an AST scan of the installed package's source (tcsim = sim/, tcsim.isa = isa/) and, at run time, the
read-only ``data`` views the memories expose.  The scan also holds the state changes of the sync objects (mbarriers,
async-groups) to the doors, which report each change as they make it, and the bus publishes only typed events.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import tcsim
import tcsim.isa
from tcsim.async_groups import AsyncGroups
from tcsim.mbarrier_state import MBarrier
from tcsim.memory import FlatMemory, GlobalMemory, LocalMemory
from tcsim.observe import ObservationBus
from tcsim.tmem import TensorMemory

SIM = Path(tcsim.__path__[0])
ISA = Path(tcsim.isa.__path__[0])

#: the memory layer: the only modules that index memory arrays
MEMORY_LAYER = {"memory.py", "tmem.py", "mbarrier_state.py"}
#: the two doors: the only callers of the raw access methods
DOORS = {"context.py", "agents/port.py"}
#: host-side copies (cudaMemcpy): the launch, the tensor-map encoder placing a non-argument tensor, and the Triton
#: front end's host tensor descriptors placing theirs (the same job for Triton's descriptor objects)
HOST = {"launch.py", "isa:tensormap.py", "triton.py"}
#: the memory layer's raw access methods
RAW = {"read_rows", "write_rows", "read_range", "write_range", "read_cells", "write_cells", "land_store"}
#: the private arrays behind the read-only ``data`` views
PRIVATE = {"_bytes", "_cells"}


def violations(source: str, name: str) -> list[str]:
    """The one-door rules broken by module ``name`` (a path relative to the package, 'isa:' for tcsim.isa)."""
    out = []
    if name in MEMORY_LAYER:
        return out
    tree = ast.parse(source)
    for node in ast.walk(tree):
        where = f"{name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE:
            out.append(f"{where}: touches the private memory array .{node.attr}")
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "data":
            out.append(f"{where}: indexes a memory's .data (read it through the context / agent interface)")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute) and sub.attr == "data" and isinstance(sub.ctx, ast.Load):
                        out.append(f"{where}: assigns into .data")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in RAW and name not in DOORS:
                out.append(f"{where}: calls the raw memory access .{attr}() outside the two doors")
            if attr == "upload" and name not in HOST:
                out.append(f"{where}: host copy .upload() outside the launch")
    return out


def _package_modules():
    for root, prefix in ((SIM, ""), (ISA, "isa:")):
        for p in sorted(root.rglob("*.py")):
            rel = p.relative_to(root).as_posix()
            if prefix == "" and rel.startswith(("isa/", "hw/", "examples/")):
                continue
            yield prefix + rel, p.read_text()


def test_scanner_finds_each_kind_of_breach():
    bad = '''
cta.smem.data[0] = 1
w = tm.data[3, 4]
alloc._bytes[:4] = b
gm.write_rows(addrs, rows)
tm.write_cells(l, c, v)
x.data[:] += 1
alloc.upload(a)
ok = ctx.read(op, "u32") + alloc.data.size
'''
    found = violations(bad, "semantics/foo.py")
    lines = {int(v.split(":")[1]) for v in found}
    assert lines == set(range(2, 9)), found          # every breach line, and not the legitimate last line
    assert violations(bad, "memory.py") == []
    door = violations("tm.read_cells(l, c)\nctx.gmem.read_rows(a, 4)", "context.py")
    assert door == []


def test_no_module_outside_the_memory_layer_touches_a_memory_array():
    found = [v for name, src in _package_modules() for v in violations(src, name)]
    assert not found, "\n".join(found)


def dict_stashes(source: str, name: str) -> list[str]:
    """``__dict__`` uses outside ``__getattr__`` (where reading ``self.__dict__`` is how one avoids recursion)."""
    out = []

    def walk(node, in_getattr):
        for child in ast.iter_child_nodes(node):
            inside = in_getattr or (isinstance(child, ast.FunctionDef) and child.name == "__getattr__")
            if isinstance(child, ast.Attribute) and child.attr == "__dict__" and not in_getattr:
                out.append(f"{name}:{child.lineno}")
            walk(child, inside)

    walk(ast.parse(source), False)
    return out


def test_no_dict_stashes_in_the_package():
    """No ``obj.__dict__[...]`` state: every field is declared on the object that owns it."""
    assert dict_stashes("warp.__dict__.setdefault('carry', 0)\nx = e.__dict__['stdout']", "m.py") == ["m.py:1",
                                                                                                         "m.py:2"]
    assert dict_stashes("class C:\n    def __getattr__(self, n):\n        return self.__dict__['p'][n]", "m.py") == []
    found = [v for name, src in _package_modules() for v in dict_stashes(src, name)
             if v.split(":")[0] not in FOREIGN_OBJECTS]
    assert not found, found


#: modules allowed one ``__dict__`` write on a third-party object (not tcsim state), with the reason
FOREIGN_OBJECTS = {
    "cute.py": "pre-fills the CuTe DSL compiled object's cached num_devices property (the DSL asks the CUDA driver "
               "for it otherwise; there is no driver where tcsim runs it)",
}


#: where observation events are published: the two doors, plus the engine's retire record and the timing model's
#: stall record (each builds its typed event, :class:`tcsim.observe.InstRetired` / :class:`tcsim.observe.Stall`)
EMITTERS = {"context.py": {"publish"}, "agents/port.py": {"publish"}, "engine.py": {"publish"},
            "timing/model.py": {"publish"}, "observe.py": {"publish"}}


def bus_calls(source: str, name: str) -> list[str]:
    """``bus.publish`` / ``bus.emit`` calls of module ``name`` that are not its allowed ones (:data:`EMITTERS`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("publish", "emit") and node.func.attr not in EMITTERS.get(name, ())):
            recv = node.func.value
            if (recv.attr if isinstance(recv, ast.Attribute) else getattr(recv, "id", "")) == "bus":
                found.append(f"{name}:{node.lineno}: bus.{node.func.attr}")
    return found


def test_events_are_emitted_only_through_the_doors():
    """Every ``bus.publish`` call is in sim/context.py or sim/agents/port.py, except the engine's retired-instruction
    record and the timing model's stall record (and the bus itself); no module calls a ``bus.emit``."""
    snippet = "self.sim.bus.emit('sync', 0, c, 'tma', op='x')\nbus.publish(ev)\nself.emit(cta, 'sync')"
    assert len(bus_calls(snippet, "semantics/tcgen05_mem.py")) == 2
    assert bus_calls("ctx.bus.publish(ev)", "context.py") == []
    assert bus_calls("bus.emit('inst', 0, c, 'warp', pc=1)", "engine.py") == ["engine.py:1: bus.emit"]
    found = [v for name, src in _package_modules() for v in bus_calls(src, name)]
    assert not found, found


def test_every_event_is_built_typed():
    """The bus has no untyped ``emit(kind, ..., **fields)``: every publisher constructs its event class."""
    assert not hasattr(ObservationBus, "emit")


#: the sync objects whose state the doors change, with their queries; every other public method changes state
SYNC_QUERIES = {MBarrier: {"parity_done", "token_done", "describe"}, AsyncGroups: {"pending_older", "pending_all"}}
#: the state-changing methods of the sync objects (derived from the classes, so a new one is covered)
SYNC_CHANGES = {n for cls, queries in SYNC_QUERIES.items() for n, v in vars(cls).items()
                if callable(v) and not n.startswith("_") and n not in queries}
#: the sync objects' own modules
SYNC_STATE = {"mbarrier_state.py", "async_groups.py"}


def sync_changes(source: str, name: str) -> list[str]:
    """Calls of a sync object's state-changing methods in module ``name`` outside the two doors (which report each
    change as a sync event as they make it) and the objects' own modules."""
    if name in DOORS or name in SYNC_STATE:
        return []
    return [f"{name}:{node.lineno}: .{node.func.attr}()" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in SYNC_CHANGES]


def test_sync_object_state_changes_only_through_the_doors():
    """mbarrier init, inval, revive (use after inval), arrive, expect-tx, complete-tx, the pending-count raise of cp.async.mbarrier.arrive and
    the registration of a phase waiter, and an async op joining / a commit sealing an async-group, are door
    operations (``ctx.mbarrier_*`` / ``port.mbarrier_*`` / ``ctx.async_group_*``)."""
    assert {"apply_init", "apply_inval", "apply_revive", "apply_arrive", "apply_expect_tx", "apply_complete_tx",
            "apply_add_pending", "next_phase_event", "apply_join", "apply_commit"} == SYNC_CHANGES
    planted = ("mb = cta.mbarrier(off)\nmb.apply_arrive(1)\ncta.mbarrier(8).apply_complete_tx(64)\n"
               "ev = mb.next_phase_event()\nctx.async_groups('bulk', 0).apply_commit()\n"
               "ok = mb.parity_done(0) and mb.describe() and st.pending_all()\nctx.mbarrier_arrive(cta, mb, 1, 0)\n"
               "ctx.async_group_commit('bulk', 'bulk.commit_group')")
    assert [int(v.split(":")[1]) for v in sync_changes(planted, "agents/tma.py")] == [2, 3, 4, 5]
    assert sync_changes(planted, "context.py") == [] and sync_changes(planted, "agents/port.py") == []
    found = [v for name, src in _package_modules() for v in sync_changes(src, name)]
    assert not found, found


@pytest.mark.parametrize("make", [
    lambda: FlatMemory(64, "smem").data,
    lambda: GlobalMemory().allocate(64, "buf").data,
    lambda: TensorMemory(None, "cta").data,
    lambda: LocalMemory(32, 16).data,
])
def test_memory_arrays_are_read_only_outside_the_memory_layer(make):
    view = make()
    with pytest.raises(ValueError):
        view[0] = 1
    assert not view.any()


def test_raw_accesses_and_host_copies_land_in_the_views():
    sm = FlatMemory(64, "smem")
    sm.write_rows(np.array([8, 16]), np.array([[1, 2], [3, 4]], dtype=np.uint8))
    assert sm.data[8:10].tolist() == [1, 2] and sm.data[16:18].tolist() == [3, 4]
    assert sm.read_range(8, 2).tolist() == [1, 2]
    g = GlobalMemory()
    a = g.allocate(8, "buf")
    a.upload(np.array([5, 6], dtype=np.uint16), offset=2)
    assert g.read_rows(np.array([a.base + 2], dtype=np.uint64), 4).tolist() == [[5, 0, 6, 0]]
    assert a.download().tolist() == [0, 0, 5, 0, 6, 0, 0, 0]
    tm = TensorMemory(None, "cta")
    tm.write_cells(np.array([[1], [2]]), np.array([[3, 4]]), np.array([[7, 8], [9, 10]], dtype=np.uint32))
    assert tm.data[1, 3] == 7 and tm.data[2, 4] == 10


def test_a_bad_lowering_variant_is_a_launch_error_naming_the_argument():
    from tcsim.isa.errors import LaunchError
    from tcsim.launch import Launch
    head = ".version 8.5\n.target sm_90a\n.address_size 64\n"
    assert Launch(ptx=head, lowering=["sign-ops-bitwise@7"]).lowering == frozenset({"sign-ops-bitwise@7"})
    for bad in (["bogus"], 5):
        with pytest.raises(LaunchError, match="lowering="):
            Launch(ptx=head, lowering=bad)
