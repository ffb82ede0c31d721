"""The observation stream of every shipped example: each event is a typed record with its fields, async completions
link to their issue by op id, and over the examples the stream carries every kind of access and sync event the race
detector, trace visualiser and debugger need (issue 14, "one door")."""
from __future__ import annotations

import importlib
import io
import json
import pkgutil
from collections import defaultdict

import pytest

import tcsim.examples
from tcsim.cli import _get_launch
from tcsim.launch import run_launch
from tcsim.observe import (AsyncComplete, AsyncIssue, EventRecorder, InstRetired, JsonlTracer, MemAccess,
                           RegAccess, SyncEvent)

EXAMPLES = sorted(m.name for m in pkgutil.iter_modules(tcsim.examples.__path__) if not m.name.startswith("_"))
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
    assert {e.unit for e in issues} == {"tma", "tensor_pipe", "tcgen05"}
    assert all(isinstance(e, AsyncIssue) for e in issues)
    assert all(isinstance(e, AsyncComplete) for e in by[("sync", "async.complete")])


def test_the_trace_keeps_its_format(streams):
    """The JSONL tracer writes ``kind, cycle, cta, agent`` + ``Event.fields`` for the traced events only: no
    register events, none of the accesses marked ``traced=False``, and none of the new typed fields."""
    events, _ = streams["gemm_async"]
    buf = io.StringIO()
    tr = JsonlTracer(buf)
    for ev in events:
        tr.on_event(ev)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    kept = [e for e in events if e.kind in ("inst", "mem", "sync") and e.traced]
    assert len(lines) == len(kept) < len(events)
    assert any(isinstance(e, MemAccess) and not e.traced for e in events)     # the accumulator reads of the MMA
    for rec, ev in zip(lines, kept):
        assert list(rec)[:4] == ["kind", "cycle", "cta", "agent"]
        assert "op_id" not in rec and "line" not in rec or ev.kind == "inst"
        if ev.kind == "mem":
            assert list(rec)[4:] == ["warp", "pc", "op", "space", "proxy", "addrs", "size", "lanes"]
