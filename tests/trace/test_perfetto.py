"""The Perfetto timeline (``tcsim run --perfetto``): loaded as a trace and queried by SQL, its tracks, slices,
counters and flows agree with the run's own statistics (``Result.stats``, the timing report, the findings) and
with cycles worked out by hand.

Each check runs on two SQL back ends (tests/trace/tp_sql.py): the trace decoded with the ``perfetto`` package's
own protobuf classes into SQLite (always), and Perfetto's trace processor (skipped: its binary is downloaded
from outside the package registries, which this project's machines cannot reach; set TCSIM_TRACE_PROCESSOR)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

from tcsim.launch import Launch, run_launch                      # noqa: E402
from tcsim.observe import EventRecorder                          # noqa: E402
from tcsim.report import VisualOutputs                           # noqa: E402
from tcsim.timing.params import arch_config                      # noqa: E402
from tests.ptx_frame import kernel                               # noqa: E402

from tp_sql import open_sql                                       # noqa: E402

CFG = arch_config("sm_100a")
SLEEP = 500
# warp 0 sleeps SLEEP ns then arrives on full_bar; warp 1 spins in try_wait until the phase completes
BODY = f"""
  mov.u32 %r10, full_bar;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  setp.eq.u32 %p3, %r1, 0;
  @!%p3 bra $L_init;
  mbarrier.init.shared::cta.b64 [%r10], 1;
$L_init:
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra $L_consumer;
  nanosleep.u32 {SLEEP};
  @%p3 mbarrier.arrive.shared::cta.b64 _, [%r10];
  bra $L_end;
$L_consumer:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r10], 0;
  @!%p4 bra $L_consumer;
  add.u32 %r5, %r1, 1;
$L_end:
  ret;
"""
SHARED = "  .shared .align 8 .b64 full_bar;"

BACKENDS = ["protobuf+sqlite", "trace_processor"]


def _run(launch, tmp_path, **kw):
    rec = EventRecorder(kinds=("inst", "sync", "stall"))
    vo = VisualOutputs(perfetto=tmp_path / "t.pftrace")
    res = run_launch(launch, observers=[rec, *vo.observers], **kw)
    vo.write(res, launch)
    return res, rec, tmp_path / "t.pftrace"


@pytest.fixture(scope="module")
def mbar_run(tmp_path_factory):
    launch = Launch(ptx=kernel(BODY, "sm_100a", SHARED), kernel="k", block=(64, 1, 1),
                    args=[np.zeros(8, np.uint64)])
    return _run(launch, tmp_path_factory.mktemp("mbar"), timing=True)


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def _sql(path, backend):
    db = open_sql(path, backend)
    if db is None:
        pytest.skip("Perfetto's trace_processor_shell is not here (it is downloaded from outside the package "
                    "registries); set TCSIM_TRACE_PROCESSOR to run these queries on it")
    return db


def _arg(key, col="int_value", slice_alias="s"):
    return f"(select {col} from args a where a.arg_set_id = {slice_alias}.arg_set_id and a.key = 'debug.{key}')"


def test_tracks_and_slices_agree_with_the_run(mbar_run, backend):
    res, rec, path = mbar_run
    db = _sql(path, backend)
    assert db.unclosed == 0
    # a process per CTA, a thread (track) per warp
    assert db.query("select name from process") == [("CTA (0,0,0)",)]
    assert sorted(db.query("select name from thread")) == [("warp 0",), ("warp 1",)]
    # every retired warp-instruction is in exactly one PTX-region slice
    (n,), = db.query(f"select sum({_arg('instructions')}) from slice s where s.category = 'inst'")
    assert n == res.stats["warp_instructions"]
    # stall slices: per warp and reason, their durations add up to the timing report's stall cycles
    rows = db.query(f"select t.name, {_arg('reason', 'string_value')} r, sum(s.dur) from slice s "
                    "join thread_track tt on s.track_id = tt.id join thread t using (utid) "
                    "where s.category = 'stall' group by t.name, r")
    got = {(w, r): d for w, r, d in rows}
    want = {(f"warp {w['warp']}", cat): sum(det.values()) for w in res.timing.warps
            for cat, det in w["stalls"].items()}
    assert got == want and got
    # nothing outlasts the run; the clock instant carries the conversion to ns
    (end,), = db.query("select max(ts + dur) from slice")
    assert end <= res.stats["cycles"]
    (mhz, cycles), = db.query(f"select {_arg('clock_mhz', 'real_value')}, {_arg('cycles')} from slice s "
                              "where s.name = 'clock'")
    assert mhz == CFG.sm_clock_mhz and cycles == res.stats["cycles"]
    db.close()


def test_the_mbarrier_stall_names_the_phase_that_released_it(mbar_run, backend):
    res, rec, path = mbar_run
    db = _sql(path, backend)
    arrive, = [e for e in rec.events if e.kind == "sync" and e.op == "mbarrier.arrive"]
    # warp 1 waits on full_bar (SMEM 0x400) from right after bar.sync until the arrive + the wake-up latency
    (dur, detail, released), = db.query(
        f"select s.dur, {_arg('detail', 'string_value')}, {_arg('released_by', 'string_value')} from slice s "
        "join thread_track tt on s.track_id = tt.id join thread t using (utid) "
        f"where t.name = 'warp 1' and {_arg('reason', 'string_value')} = 'mbarrier'")
    assert SLEEP - 20 <= dur <= SLEEP + CFG.mbarrier_wake_latency + 2
    assert detail == "full_bar (SMEM 0x400) of CTA (0,0,0)"
    assert released == f"mbarrier full_bar @0x400 phase 0 (completed at cycle {int(arrive.cycle)})"
    # the phase completion is an instant at the arrive's cycle; a flow leads from it to warp 1, and one into it
    # from warp 0's region holding the arrive
    (ts, sid), = db.query("select ts, id from slice where category = 'phase_done'")
    assert ts == arrive.cycle
    outs = db.query("select t.name, s.ts from flow f join slice s on f.slice_in = s.id join thread_track tt "
                    f"on s.track_id = tt.id join thread t using (utid) where f.slice_out = {sid}")
    assert outs == [("warp 1", int(arrive.cycle) + CFG.mbarrier_wake_latency)]
    ins = db.query("select t.name from flow f join slice s on f.slice_out = s.id join thread_track tt "
                   f"on s.track_id = tt.id join thread t using (utid) where f.slice_in = {sid}")
    assert ins == [("warp 0",)]
    # counters: pending arrivals 1 after init, 0 at the arrive, back to 1 (the count) when the phase completes
    pts = db.query("select c.ts, c.value from counter c join counter_track ct on c.track_id = ct.id "
                   "where ct.name = 'mbarrier full_bar @0x400 pending arrivals' order by c.ts, c.id")
    assert [v for _, v in pts] == [1, 0, 1] and pts[-1][0] == arrive.cycle
    (ph,), = db.query("select max(c.value) from counter c join counter_track ct on c.track_id = ct.id "
                      "where ct.name = 'mbarrier full_bar @0x400 completed phases'")
    assert ph == 1
    db.close()


@pytest.fixture(scope="module")
def finding_run(tmp_path_factory):
    from tcsim.examples.bugs.missing_proxy_fence import make_launch
    return _run(make_launch(), tmp_path_factory.mktemp("fence"), timing=True)


def test_async_operations_and_findings(finding_run, backend):
    res, rec, path = finding_run
    db = _sql(path, backend)
    issues = [e for e in rec.events if e.kind == "sync" and e.op == "async.issue"]
    done = {e.op_id: e for e in rec.events if e.kind == "sync" and e.op == "async.complete"}
    rows = db.query(f"select s.ts, s.dur, {_arg('op_id')}, {_arg('unit', 'string_value')}, "
                    f"{_arg('bytes')} from slice s where s.category = 'async' order by s.ts")
    assert [(ts, dur, op) for ts, dur, op, _, _ in rows] == \
        [(int(e.cycle), int(round(done[e.op_id].cycle)) - int(e.cycle), e.op_id) for e in issues]
    assert {u for *_, u, _ in rows} == {"tma"} and rows[0][4] == 64 * 4   # the 256-byte tile store
    # each finding is an instant with a flow from each of its two accesses
    assert len(res.findings) == 1
    (fid, fts, line), = db.query(f"select s.id, s.ts, {_arg('line')} from slice s where s.category = 'finding'")
    f = res.findings[0]
    assert line == f.loc.line and fts == int(round(max(s.cycle for s in f.sides)))
    srcs = db.query(f"select s.category from flow f join slice s on f.slice_out = s.id where f.slice_in = {fid} "
                    "order by s.category")
    assert srcs == [("async",), ("inst",)]          # the TMA's read and warp 0's st.shared
    # a flow from the issuing warp's region into the operation
    (n,), = db.query("select count(*) from flow f join slice a on f.slice_in = a.id join slice b on "
                     "f.slice_out = b.id where a.category = 'async' and b.category = 'inst'")
    assert n == len(issues)
    db.close()


def test_the_writer_is_the_perfetto_wire_format(mbar_run):
    """Decoded with the package's classes, every packet is on one sequence that starts cleared, every event names
    a declared track, timestamps never go backwards and each BEGIN has its END."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    _, _, path = mbar_run
    tr = pb.Trace()
    tr.ParseFromString(path.read_bytes())
    assert tr.packet[0].sequence_flags == 1
    assert {p.trusted_packet_sequence_id for p in tr.packet} == {1}
    declared = {p.track_descriptor.uuid for p in tr.packet if p.HasField("track_descriptor")}
    evs = [p for p in tr.packet if p.HasField("track_event")]
    assert {p.track_event.track_uuid for p in evs} <= declared
    ts = [p.timestamp for p in evs]
    assert ts == sorted(ts)
    depth: dict = {}
    for p in evs:
        e = p.track_event
        depth[e.track_uuid] = depth.get(e.track_uuid, 0) + {1: 1, 2: -1}.get(e.type, 0)
        assert depth[e.track_uuid] >= 0
    assert set(depth.values()) == {0}


def test_cli_writes_the_trace(tmp_path, capsys):
    from tcsim.cli import main
    out = tmp_path / "fence.pftrace"
    assert main(["run", "tcsim.examples.bugs.missing_proxy_fence", "--perfetto", str(out)]) == 1   # a finding
    assert f"Perfetto trace written to {out}" in capsys.readouterr().out
    db = _sql(out, "protobuf+sqlite")
    assert db.query("select count(*) from slice where category = 'finding'") == [(1,)]
    assert main(["run", "tcsim.examples.bugs.missing_proxy_fence", "--perfetto", str(tmp_path / "no" / "x")]) == 2


def test_a_process_per_cta_named_with_its_cluster(tmp_path):
    """cluster_exchange: 8 CTAs in clusters of 4 along x; each thread arrives on its right neighbour's mbarrier."""
    from tcsim.examples.cluster_exchange import make_launch
    launch = make_launch()
    res, rec, path = _run(launch, tmp_path, timing=False)
    gx, cx = launch.grid[0], launch.cluster[0]
    db = _sql(path, "protobuf+sqlite")
    names = sorted(n for (n,) in db.query("select name from process"))
    assert names == sorted(f"cluster ({x // cx},0,0) / CTA ({x},0,0)" for x in range(gx))
    (nthreads,), = db.query("select count(*) from thread")
    assert nthreads == res.stats["warps"]
    (n,), = db.query(f"select sum({_arg('instructions')}) from slice s where s.category = 'inst'")
    assert n == res.stats["warp_instructions"]
    # every mbarrier phase completion is on the track of the CTA that owns the mbarrier; there is one per CTA
    # whose mbarrier completed a phase (remote arrivals complete it)
    owners = {tuple(e.target_cta or e.cta) for e in rec.events if e.kind == "sync" and e.op == "mbarrier.phase"}
    rows = db.query("select p.name from slice s join track t on s.track_id = t.id join process_track pt on "
                    "t.parent_id = pt.id join process p using (upid) where s.category = 'phase_done'")
    want = [tuple(e.target_cta or e.cta) for e in rec.events if e.kind == "sync" and e.op == "mbarrier.phase"]
    assert sorted(r[0].split(" / ")[1] for r in rows) == sorted(f"CTA ({','.join(map(str, o))})" for o in want)
    assert len(owners) == gx
    db.close()
