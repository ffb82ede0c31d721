"""SQL over a Perfetto trace, for the tests: Perfetto's own trace processor where its binary is here, otherwise the
trace decoded with the ``perfetto`` package's generated protobuf classes into SQLite tables of the trace
processor's schema (the subset the tests query).

Why two: the ``perfetto`` package's ``TraceProcessor`` downloads the ``trace_processor_shell`` binary on first
use (from Google's artifact storage); no package registry ships it (not PyPI, Debian or npm), and this project's
machines reach only the registries -- so CI cannot have it.  ``TCSIM_TRACE_PROCESSOR=/path/to/trace_processor_shell``
(or the package's own cache, ``~/.local/share/perfetto/prebuilts``) makes the same queries run on the real one.

The decoder is independent of tcsim's writer (``tcsim.perfetto_trace`` encodes the wire format by hand): it parses
the file with ``perfetto.protos.perfetto.trace.perfetto_trace_pb2`` and applies the trace processor's rules for
track events -- ``TrackDescriptor`` s with a ``process`` / ``thread`` / ``counter`` become process / thread /
counter tracks, ``SLICE_BEGIN`` / ``SLICE_END`` nest per track (``depth``, ``parent_id``), ``INSTANT`` is a slice
of ``dur`` 0, ``COUNTER`` a ``counter`` row, debug annotations ``args`` rows keyed ``debug.NAME``, and a flow
goes from the slice carrying an id in ``flow_ids`` to the one carrying it in ``terminating_flow_ids``.  Tables
and columns: process(upid, pid, name), thread(utid, tid, name, upid), track(id, name, parent_id),
thread_track(id, name, utid), process_track(id, name, upid), counter_track(id, name), slice(id, ts, dur, track_id, category, name, depth,
parent_id, arg_set_id), args(arg_set_id, key, int_value, string_value, real_value), counter(id, ts, track_id,
value), flow(id, slice_out, slice_in).
"""
from __future__ import annotations

import glob
import os
import sqlite3
from pathlib import Path

SCHEMA = """
create table process(upid integer primary key, pid integer, name text);
create table thread(utid integer primary key, tid integer, name text, upid integer);
create table track(id integer primary key, name text, parent_id integer);
create table thread_track(id integer primary key, name text, utid integer);
create table process_track(id integer primary key, name text, upid integer);
create table counter_track(id integer primary key, name text);
create table slice(id integer primary key, ts integer, dur integer, track_id integer, category text, name text,
                   depth integer, parent_id integer, arg_set_id integer);
create table args(arg_set_id integer, key text, int_value integer, string_value text, real_value real);
create table counter(id integer primary key, ts integer, track_id integer, value real);
create table flow(id integer primary key, slice_out integer, slice_in integer);
"""


def trace_processor_binary() -> str | None:
    p = os.environ.get("TCSIM_TRACE_PROCESSOR")
    if p and Path(p).is_file():
        return p
    found = sorted(glob.glob(os.path.expanduser("~/.local/share/perfetto/prebuilts/trace_processor_shell*")))
    found = [f for f in found if not f.endswith(".tmp") and os.access(f, os.X_OK)]
    return found[0] if found else None


class ProtoSql:
    """The trace decoded into SQLite (module docstring)."""

    backend = "protobuf+sqlite"

    def __init__(self, path):
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
        tr = pb.Trace()
        tr.ParseFromString(Path(path).read_bytes())
        db = self.db = sqlite3.connect(":memory:")
        db.executescript(SCHEMA)
        tracks = {}             # uuid -> track id
        upid_of = {}            # pid -> upid
        ids = {"track": 0, "slice": 0, "args": 0, "counter": 0, "flow": 0, "utid": 0}
        stacks: dict = {}
        pending: dict = {}
        TE = pb.TrackEvent

        def new(kind):
            ids[kind] += 1
            return ids[kind]

        for p in tr.packet:
            if p.HasField("track_descriptor"):
                d = p.track_descriptor
                tid = tracks[d.uuid] = new("track")
                parent = tracks.get(d.parent_uuid) if d.HasField("parent_uuid") else None
                if d.HasField("process"):
                    upid_of[d.process.pid] = len(upid_of) + 1
                    db.execute("insert into process values (?,?,?)", (upid_of[d.process.pid], d.process.pid,
                                                                     d.process.process_name))
                    db.execute("insert into track values (?,?,?)", (tid, d.name or None, parent))
                    db.execute("insert into process_track values (?,?,?)", (tid, d.name or None,
                                                                            upid_of[d.process.pid]))
                elif d.HasField("thread"):
                    utid = new("utid")
                    db.execute("insert into thread values (?,?,?,?)", (utid, d.thread.tid, d.thread.thread_name,
                                                                      upid_of.get(d.thread.pid)))
                    db.execute("insert into track values (?,?,?)", (tid, d.name or None, parent))
                    db.execute("insert into thread_track values (?,?,?)", (tid, d.name or None, utid))
                else:
                    db.execute("insert into track values (?,?,?)", (tid, d.name or None, parent))
                    if d.HasField("counter"):
                        db.execute("insert into counter_track values (?,?)", (tid, d.name or None))
                continue
            if not p.HasField("track_event"):
                continue
            e = p.track_event
            track = tracks[e.track_uuid]
            ts = p.timestamp
            if e.type == TE.TYPE_COUNTER:
                v = e.counter_value if e.HasField("counter_value") else e.double_counter_value
                db.execute("insert into counter values (?,?,?,?)", (new("counter"), ts, track, v))
                continue
            stack = stacks.setdefault(track, [])
            if e.type == TE.TYPE_SLICE_END:
                sid, t0 = stack.pop()
                db.execute("update slice set dur = ? where id = ?", (ts - t0, sid))
                continue
            sid = new("slice")
            aid = None
            if e.debug_annotations:
                aid = new("args")
                for a in e.debug_annotations:
                    kind = a.WhichOneof("value")
                    iv = int(getattr(a, kind)) if kind in ("int_value", "uint_value", "bool_value") else None
                    sv = a.string_value if kind == "string_value" else None
                    rv = a.double_value if kind == "double_value" else None
                    db.execute("insert into args values (?,?,?,?,?)", (aid, "debug." + a.name, iv, sv, rv))
            db.execute("insert into slice values (?,?,?,?,?,?,?,?,?)",
                       (sid, ts, 0 if e.type == TE.TYPE_INSTANT else -1, track, ",".join(e.categories) or None,
                        e.name, len(stack), stack[-1][0] if stack else None, aid))
            for f in e.flow_ids:
                pending[f] = sid
            for f in e.terminating_flow_ids:
                if f in pending:
                    db.execute("insert into flow values (?,?,?)", (new("flow"), pending.pop(f), sid))
            if e.type == TE.TYPE_SLICE_BEGIN:
                stack.append((sid, ts))
        self.unclosed = sum(len(s) for s in stacks.values())

    def query(self, sql: str) -> list[tuple]:
        return [tuple(r) for r in self.db.execute(sql).fetchall()]

    def close(self):
        self.db.close()


class RealTp:
    """Perfetto's trace processor (the binary ``trace_processor_binary()`` found)."""

    backend = "trace_processor"

    def __init__(self, path, binary):
        from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
        self.tp = TraceProcessor(trace=str(path), config=TraceProcessorConfig(bin_path=binary))
        self.unclosed = 0

    def query(self, sql: str) -> list[tuple]:
        it = self.tp.query(sql)
        cols = it.column_names
        return [tuple(getattr(r, c) for c in cols) for r in it]

    def close(self):
        self.tp.close()


def open_sql(path, backend: str):
    if backend == "trace_processor":
        b = trace_processor_binary()
        if b is None:
            return None
        return RealTp(path, b)
    return ProtoSql(path)
