"""The observation stream of every shipped example: each event is a typed record with its fields, async completions
link to their issue by op id, and over the examples the stream carries every kind of access and sync event the race
detector, trace visualiser and debugger need (issue 14, "one door")."""
from __future__ import annotations

import importlib
import io
import pkgutil
from collections import defaultdict

import pytest

import tcsim.examples
from tests.semantics import test_bulk_copy as _bulk_copy_tests
from tcsim.cli import _get_launch
from tcsim.launch import run_launch
from tcsim.observe import (AsyncComplete, AsyncIssue, EventRecorder, InstRetired, JsonlTracer, MemAccess,
                           ObservationBus, RegAccess, SyncEvent, read_trace)

EXAMPLES = sorted(m.name for m in pkgutil.iter_modules(tcsim.examples.__path__)
                  if not m.name.startswith("_") and not m.ispkg)
ALL_KINDS = ("inst", "mem", "sync", "reg", "stall")


@pytest.fixture(scope="module")
def streams():
    """example name -> (events, the program's instruction list); each run still passes the example's own check."""
    out = {}
    for name in EXAMPLES:
        mod = importlib.import_module(f"tcsim.examples.{name}")
        launch = _get_launch(mod)
        rec = EventRecorder(kinds=ALL_KINDS)
        res = run_launch(launch, observers=(rec,))
        ok, msg = mod.check(res, launch)
        assert ok, f"{name}: {msg}"
        out[name] = (rec.events, res.simulation.program.body)
    return out


def _ints(xs) -> bool:
    return all(isinstance(x, int) for x in xs)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_event_is_typed_and_located(streams, name):
    events, body = streams[name]
    assert events
    for ev in events:
        assert isinstance(ev.cycle, (int, float)) and len(ev.cta) == 3 and isinstance(ev.agent, str)
        if isinstance(ev, (InstRetired, RegAccess)) or (isinstance(ev, (MemAccess, SyncEvent)) and ev.agent == "warp"):
            # a warp's event names the warp and the instruction, and the PTX line of that instruction
            assert isinstance(ev.warp, int) and 0 <= ev.pc < len(body), ev
            if not (isinstance(ev, SyncEvent) and ev.detail.get("resumed")):   # a wait's release runs later
                assert ev.line == body[ev.pc].loc.line, ev
        if isinstance(ev, MemAccess):
            assert ev.space in ("global", "shared::cta", "shared::cluster", "local", "param", "const", "tmem")
            assert ev.proxy in ("generic", "async") and ev.size > 0 and ev.addrs and _ints(ev.addrs)
            if ev.agent == "warp":
                assert len(ev.lanes) == len(ev.addrs) and _ints(ev.lanes) and ev.op_id is None, ev
            else:
                assert isinstance(ev.op_id, int), ev          # an agent's access completes an async op
            if ev.space == "tmem":
                assert ev.proxy == "async"
                assert all(0 <= lane < 128 and 0 <= col < 512 for lane, col in ev.tmem_cells())
            if ev.space.startswith("shared"):
                assert all(a >> 24 < 16 for a in ev.addrs)   # 32-bit shared::cluster addresses: rank, offset
        if isinstance(ev, RegAccess):
            assert ev.reg.startswith("%") and ev.lanes and _ints(ev.lanes)
            assert ev.names == (ev.regs or (ev.reg,)) and ev.names[0] == ev.reg
        if isinstance(ev, SyncEvent):
            assert ev.op and ev.fields["op"] == ev.op


@pytest.mark.parametrize("name", EXAMPLES)
def test_async_completions_link_to_their_issue(streams, name):
    events, _ = streams[name]
    issued, completed = {}, {}
    for ev in events:
        if isinstance(ev, AsyncIssue):
            assert ev.op_id not in issued and ev.unit == ev.agent and ev.what
            assert isinstance(ev.issuer_warp, int) and isinstance(ev.issuer_pc, int) and isinstance(ev.line, int)
            issued[ev.op_id] = ev
        elif isinstance(ev, AsyncComplete):
            iss = issued.get(ev.op_id)
            assert iss is not None, f"{ev} completes an op never issued"
            assert (iss.unit, iss.what, iss.issuer_warp, iss.issuer_pc) == (ev.unit, ev.what, ev.issuer_warp,
                                                                            ev.issuer_pc)
            assert ev.cycle >= iss.cycle and ev.op_id not in completed
            completed[ev.op_id] = ev
        elif isinstance(ev, (MemAccess, SyncEvent)) and ev.op_id is not None:
            # an effect of a completing op: after its issue, not after its completion
            assert ev.op_id in issued and ev.op_id not in completed and ev.cycle >= issued[ev.op_id].cycle, ev
    assert set(completed) == set(issued)                  # every op the example issued completed


def _union(streams):
    by = defaultdict(list)
    for events, _ in streams.values():
        for ev in events:
            if isinstance(ev, MemAccess):
                by[("mem", ev.agent, ev.op, ev.space)].append(ev)
            elif isinstance(ev, SyncEvent):
                by[("sync", ev.op)].append(ev)
            else:
                by[(ev.kind,)].append(ev)
    return by


def test_the_examples_carry_every_kind_of_event(streams):
    by = _union(streams)
    # memory: every space, by warps and by each async agent, reads and writes
    for key in [("mem", "warp", "ld", "global"), ("mem", "warp", "st", "global"), ("mem", "warp", "ld", "param"),
                ("mem", "warp", "ld", "shared::cta"), ("mem", "warp", "st", "shared::cta"),
                ("mem", "warp", "ld", "shared::cluster"), ("mem", "warp", "st", "shared::cluster"),
                ("mem", "warp", "ld", "tmem"), ("mem", "warp", "ldmatrix", "shared::cta"),
                ("mem", "tma", "ld", "global"), ("mem", "tma", "st", "shared::cta"), ("mem", "tma", "st", "global"),
                ("mem", "tma", "ld", "shared::cta"), ("mem", "tensor_pipe", "ld", "shared::cta"),
                ("mem", "tensor_pipe", "ld", "tmem"), ("mem", "tensor_pipe", "st", "tmem"),
                ("mem", "tcgen05", "st", "tmem")]:
        assert by[key], f"no {key} event in any example"
    assert all(e.proxy == "async" for k, v in by.items() if k[0] == "mem" and k[1] in ("tma", "tensor_pipe")
               for e in v)
    # registers: reads and writes
    regs = by[("reg",)]
    assert any(r.write for r in regs) and any(not r.write for r in regs)
    # named barriers: arrive (with id, count and form) and release
    for ev in by[("sync", "bar.arrive")]:
        assert isinstance(ev.barrier, int) and 0 <= ev.barrier < 16 and isinstance(ev.count, int) and ev.lanes
        assert ev.detail["form"] in ("sync", "arrive", "red")
    assert {e.detail["form"] for e in by[("sync", "bar.arrive")]} >= {"sync"}
    assert all(isinstance(e.barrier, int) for e in by[("sync", "bar.release")]) and by[("sync", "bar.release")]
    # mbarriers: init, arrive, expect-tx, complete-tx (by the TMA), phase completion, test/try_wait
    for op in ("mbarrier.init", "mbarrier.arrive", "mbarrier.expect_tx", "mbarrier.complete_tx", "mbarrier.phase",
               "mbarrier.wait"):
        evs = by[("sync", op)]
        assert evs, f"no {op} event"
        assert all(isinstance(e.mbarrier, int) and e.mbarrier % 8 == 0 and len(e.target_cta) == 3 for e in evs), op
    assert all(isinstance(e.count, int) for e in by[("sync", "mbarrier.init")])
    assert all(isinstance(e.phase, int) for e in by[("sync", "mbarrier.phase")])
    assert {e.agent for e in by[("sync", "mbarrier.complete_tx")]} == {"tma"}
    assert {e.agent for e in by[("sync", "mbarrier.arrive")]} >= {"warp", "tensor_pipe"}
    assert {e.detail["form"].split(".")[0] for e in by[("sync", "mbarrier.wait")]} >= {"try_wait"}
    # fences, tcgen05 commit / wait / fence, bulk groups, cluster barrier, async issue and completion
    assert all(e.detail["fence"] for e in by[("sync", "fence")]) and by[("sync", "fence")]
    for op in ("tcgen05.fence", "tcgen05.commit", "tcgen05.wait", "bulk.commit_group", "bulk.wait_group",
               "cluster.arrive", "cluster.wait", "cluster.release"):
        assert by[("sync", op)], f"no {op} event"
    assert {e.detail["kind"] for e in by[("sync", "tcgen05.wait")]} == {"ld", "st"}
    assert all(isinstance(e.detail["n"], int) for e in by[("sync", "bulk.wait_group")])
    issues = by[("sync", "async.issue")]
    assert {e.unit for e in issues} == {"tma", "tensor_pipe", "tcgen05", "wgmma"}   # wgmma: examples/wgmma_pipeline_gemm
    assert all(isinstance(e, AsyncIssue) for e in issues)
    assert all(isinstance(e, AsyncComplete) for e in by[("sync", "async.complete")])


def test_the_trace_writes_the_traced_events(streams):
    """The JSONL tracer writes a header and then ``kind, cycle, cta, agent`` + the event's fields (compactly, schema
    3: tests/trace/test_jsonl.py; read back whole by read_trace) for the traced events only: no register events, none of the accesses marked
    ``traced=False``."""
    events, _ = streams["gemm_async"]
    buf = io.StringIO()
    tr = JsonlTracer(buf)
    for ev in events:
        tr.on_event(ev)
    tr.close()
    lines = list(read_trace(buf.getvalue().splitlines()))
    kept = [e for e in events if e.kind in ("inst", "mem", "sync") and e.traced]
    assert lines[0]["kind"] == "header" and lines[0]["records"] == len(kept)
    assert len(lines) - 1 == len(kept) < len(events)
    assert any(isinstance(e, MemAccess) and not e.traced for e in events)     # the accumulator reads of the MMA
    kept.sort(key=lambda e: e.cycle)
    for rec, ev in zip(lines[1:], kept):
        assert list(rec)[:4] == ["kind", "cycle", "cta", "agent"] and rec["kind"] == ev.kind
        assert rec["cycle"] == ev.cycle


# ---------------------------------------------------------------------------------------------- agents the examples
# do not use: the cp.async unit (generic proxy) and a TMA copy into a peer CTA's shared memory (DSMEM)
CP_ASYNC = """.version 9.0
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 src, .param .u64 out)
{
  .reg .b32 %r<16>; .reg .b64 %rd<16>; .reg .pred %p<4>;
  .shared .align 16 .b8 buf[512];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r0, %tid.x;
  mul.lo.u32 %r1, %r0, 16;
  mov.u32 %r2, buf;
  add.u32 %r2, %r2, %r1;
  cvt.u64.u32 %rd5, %r1;
  add.u64 %rd3, %rd1, %rd5;
  add.u64 %rd4, %rd2, %rd5;
  mov.u32 %r12, bar;
  setp.eq.u32 %p3, %r0, 0;
  @%p3 mbarrier.init.shared::cta.b64 [%r12], 32;
  bar.sync 0;
  cp.async.cg.shared.global [%r2], [%rd3], 16;
  cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%r12];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r12], 0;
  @!%p1 bra WAIT;
  ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r2];
  st.global.v4.u32 [%rd4], {%r4, %r5, %r6, %r7};
  ret;
}
"""

#: a TMA copy from this CTA's shared memory into the peer's (tests/semantics/test_bulk_copy.py's kernel)
DSMEM = _bulk_copy_tests.DSMEM.replace("@BAD@", "")


def test_cp_async_copies_are_generic_proxy_agent_accesses_linked_to_their_issue():
    import numpy as np
    from tcsim.launch import Launch

    src = (np.arange(512) * 7 + 3).astype(np.uint8)
    rec = EventRecorder(kinds=ALL_KINDS)
    res = run_launch(Launch(ptx=CP_ASYNC, block=(32, 1, 1), args=[src, np.zeros(512, np.uint8)]), observers=(rec,))
    assert np.array_equal(res.outputs[1], src)
    issue = [e for e in rec.events if isinstance(e, AsyncIssue)]
    assert len(issue) == 1 and issue[0].unit == "lsu" and issue[0].what.startswith("cp.async")
    mine = [e for e in rec.events if isinstance(e, MemAccess) and e.agent == "lsu"]
    assert {(e.op, e.space) for e in mine} == {("ld", "global"), ("st", "shared::cta")} and all(
        e.proxy == "generic" and e.op_id == issue[0].op_id and sorted(e.lanes) == list(range(32)) for e in mine)
    base = res.simulation.ctas[0].shared_base()
    st = next(e for e in mine if e.op == "st")
    # the buffer is the first user shared byte, window offset 0x400 (tests/hw/golden_h100/address_layout.json)
    assert sorted(st.addrs) == [base + 0x400 + 16 * t for t in range(32)] and st.size == 16
    done = next(e for e in rec.events if isinstance(e, AsyncComplete))
    assert done.op_id == issue[0].op_id and done.cycle >= st.cycle
    # the asynchronous arrive of cp.async.mbarrier.arrive: an lsu event, after the copies landed
    arrives = [e for e in rec.events if isinstance(e, SyncEvent) and e.op == "mbarrier.arrive" and e.agent == "lsu"]
    assert len(arrives) == 32 and all(e.detail["asynchronous"] and e.cycle >= done.cycle for e in arrives)
    assert {e.lanes for e in arrives} == {(t,) for t in range(32)}
    # the 32nd arrive completes phase 0: the change reports the completion (not written to the legacy trace)
    phases = [e for e in rec.events if isinstance(e, SyncEvent) and e.op == "mbarrier.phase"]
    assert [(e.agent, e.phase, e.traced) for e in phases] == [("lsu", 1, False)]
    assert rec.events.index(phases[0]) == rec.events.index(arrives[-1]) + 1
    assert _mbarrier_history_is_consistent(rec.events) == 1


def test_tma_writes_into_a_peer_cta_are_dsmem_accesses_of_that_cta():
    import numpy as np
    from tcsim.launch import Launch

    rec = EventRecorder(kinds=ALL_KINDS)
    res = run_launch(Launch(ptx=DSMEM, grid=(2, 1, 1), block=(1, 1, 1), cluster=(2, 1, 1),
                            args=[np.zeros(2, np.uint32)]), observers=(rec,))
    assert list(res.outputs[0]) == [101, 100]
    ctas = res.simulation.ctas
    writes = [e for e in rec.events if isinstance(e, MemAccess) and e.agent == "tma" and e.op == "st"]
    assert len(writes) == 2 and all(e.space == "shared::cluster" and e.size == 64 for e in writes)
    for e in writes:
        target = next(c for c in ctas if c.ctaid == e.cta)
        assert e.addrs[0] >> 24 == target.rank                 # the peer's shared::cluster address
        issue = next(i for i in rec.events if isinstance(i, AsyncIssue) and i.op_id == e.op_id)
        assert issue.cta != e.cta                             # issued by the other CTA's TMA engine
    tx = [e for e in rec.events if isinstance(e, SyncEvent) and e.op == "mbarrier.complete_tx"]
    assert {e.op_id for e in tx} == {e.op_id for e in writes} and all(e.target_cta == e.cta for e in tx)


def _mbarrier_history_is_consistent(events) -> int:
    """Replays the mbarrier events of one run: per barrier (``target_cta``, ``mbarrier``), after an init the phase
    completions are reported as 1, 2, 3, ... and every arrive / complete-tx event names the phase it belonged to,
    i.e. the number of completions reported before it.  Returns the number of completions."""
    completed = {}
    total = 0
    for e in events:
        if not isinstance(e, SyncEvent) or not e.op.startswith("mbarrier.") or e.op == "mbarrier.wait":
            continue
        key = (e.target_cta, e.mbarrier)
        if e.op == "mbarrier.init":
            completed[key] = 0
        elif e.op == "mbarrier.phase":
            assert e.phase == completed[key] + 1, e
            if "completed" in e.detail:
                assert e.detail["completed"] == completed[key], e
            completed[key] += 1
            total += 1
        elif e.op in ("mbarrier.arrive", "mbarrier.complete_tx") and e.phase is not None:
            assert e.phase == completed[key], e
    return total


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_mbarrier_phase_completion_is_reported_with_the_change(streams, name):
    """The doors change an mbarrier and report it in one operation: the reported phases never skip or repeat."""
    events, _ = streams[name]
    uses = any(isinstance(e, SyncEvent) and e.op == "mbarrier.init" for e in events)
    assert _mbarrier_history_is_consistent(events) > 0 or not uses


def test_the_bus_builds_and_delivers_only_what_observers_select():
    bus = ObservationBus()
    assert not bus.active and not bus.wants("mem")               # no observer: the doors build nothing
    insts = EventRecorder(kinds=("inst",))
    bus.subscribe(insts)
    assert bus.active and bus.wants("inst") and not bus.wants("reg")
    seen = []
    bus.subscribe(seen.append)                                   # a plain callable takes every kind
    assert bus.wants("reg")
    bus.unsubscribe(seen.append)
    assert not bus.wants("reg")
    # through a run: an observer selecting 'inst' receives only instructions; one taking all sees registers too
    import numpy as np
    from tcsim.launch import Launch

    class Only:
        kinds = ("inst",)

        def __init__(self):
            self.kinds_seen = set()

        def on_event(self, ev):
            self.kinds_seen.add(ev.kind)

    only, every = Only(), []
    src = (np.arange(512) * 7 + 3).astype(np.uint8)
    run_launch(Launch(ptx=CP_ASYNC, block=(32, 1, 1), args=[src, np.zeros(512, np.uint8)]), observers=(only,))
    assert only.kinds_seen == {"inst"}
    run_launch(Launch(ptx=CP_ASYNC, block=(32, 1, 1), args=[src, np.zeros(512, np.uint8)]),
               observers=(every.append,))
    assert {e.kind for e in every} == {"inst", "mem", "sync", "reg"}


def test_a_wide_load_writes_its_register_list_as_one_event(streams):
    # tcgen05.ld's destination list {%r0, ..., %rN} is one operand: one RegAccess naming its registers in order
    from tcsim.isa import ir
    seen = 0
    for events, body in streams.values():
        for ev in events:
            if isinstance(ev, RegAccess) and ev.write and body[ev.pc].opcode == "tcgen05":
                dst = body[ev.pc].operands[0]
                want = tuple(e.name for e in getattr(dst, "elems", (dst,)) if isinstance(e, ir.Reg))
                assert ev.names == want and ev.fields["regs"] == list(want)
                seen += 1
    assert seen


def test_byte_runs_of_an_agent_access():
    # the maximal runs of [a, a + size) ranges, each range once (a Python walk over the sorted distinct starts)
    import numpy as np
    from tcsim.agents.port import byte_runs, distinct

    def walk(addrs, size):
        out = {}
        starts = sorted(set(int(a) for a in addrs))
        i = 0
        while i < len(starts):
            j = i
            while j + 1 < len(starts) and starts[j + 1] == starts[j] + size:
                j += 1
            out.setdefault((j - i + 1) * size, []).append(starts[i])
            i = j + 1
        return out

    rng = np.random.default_rng(7)
    for _ in range(400):
        size = int(rng.choice([1, 2, 4, 16, 128]))
        a = rng.integers(0, int(rng.choice([40, 2000, 10 ** 9])), int(rng.integers(1, 300))) * size
        if rng.random() < 0.3:
            a = np.sort(a)
        if rng.random() < 0.3:
            a = a.astype(np.uint64)
        got = byte_runs(a, size)
        assert got == walk(a, size) and list(got) == list(walk(a, size))      # run lengths in first-seen order
        assert distinct(a).tolist() == sorted(set(int(x) for x in a))
