"""Write a run's :class:`tcsim.timeline.Timeline` as a Perfetto trace (``tcsim run LAUNCH.py --perfetto out.pftrace``).

The format is Perfetto's protobuf trace (``perfetto/trace/trace.proto``: a ``Trace`` of ``TracePacket`` s holding
``TrackDescriptor`` s and ``TrackEvent`` s), which the Perfetto UI (ui.perfetto.dev, or a copy served offline)
and its trace processor load.  The protobuf wire format is written here by hand (varints and length-delimited
fields, field numbers from the public ``perfetto_trace.proto``), so tcsim needs no protobuf runtime; the tests
decode the file with the ``perfetto`` package's own generated classes and query it by SQL.

Layout (what :mod:`tcsim.timeline` builds): a process per CTA (``cluster (x,y,z) / CTA (x,y,z)``), a thread
track per warp (``warp N``: slices of category ``inst`` -- PTX regions, args ``instructions``, ``first_line``,
``last_line`` -- and ``stall`` -- named ``reason: what it waits on``, args ``reason``, ``detail``, ``line``,
``released_by``), child tracks of the process for each async unit lane (slices of category ``async``), each
mbarrier (``phase`` slices and ``phase_done`` instants) and the findings (``finding`` instants), counter tracks
(mbarrier completed phases / pending arrivals / pending tx bytes, TMEM columns allocated, SMEM stages in flight),
and flows (``flow_ids`` / ``terminating_flow_ids``) issue -> operation -> phase completion -> woken warp, and
access -> finding.

**Timestamps are simulated SM cycles**: one trace time unit (which the UI labels "ns") is one cycle.  The
``tcsim`` track's ``clock`` instant at time 0 carries ``clock_mhz`` (and ``ns_per_cycle``) to convert them, plus
the kernel, arch and total cycles.
"""
from __future__ import annotations

import struct

from .timeline import Timeline

_SLICE_BEGIN, _SLICE_END, _INSTANT, _COUNTER = 1, 2, 3, 4
_SEQ = 1                                # trusted_packet_sequence_id of every packet
_SEQ_INCREMENTAL_STATE_CLEARED = 1


_SMALL = [bytes([i]) for i in range(128)]


def _varint(n: int) -> bytes:
    if 0 <= n < 128:
        return _SMALL[n]
    if n < 0:
        n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


_KEYS: dict = {}


def _key(field: int, wire: int) -> bytes:
    k = _KEYS.get((field, wire))
    if k is None:
        k = _KEYS[(field, wire)] = _varint(field << 3 | wire)
    return k


def _f_int(field: int, v: int) -> bytes:
    return _key(field, 0) + _varint(int(v))


def _f_bytes(field: int, b: bytes) -> bytes:
    return _key(field, 2) + _varint(len(b)) + b


def _f_str(field: int, s: str) -> bytes:
    return _f_bytes(field, s.encode("utf-8"))


def _f_fixed64(field: int, v: int) -> bytes:
    return _key(field, 1) + struct.pack("<Q", v)


def _f_double(field: int, v: float) -> bytes:
    return _key(field, 1) + struct.pack("<d", v)


_ANN: dict = {}


def _annotation_field(name: str, v) -> bytes:
    """``debug_annotations`` (4) holding the annotation of ``name`` = ``v`` (cached: args repeat)."""
    try:
        key = (name, type(v), v)
        b = _ANN.get(key)
    except TypeError:                   # a list: not hashable
        return _f_bytes(4, _annotation(name, v))
    if b is None:
        b = _ANN[key] = _f_bytes(4, _annotation(name, v))
    return b


def _annotation(name: str, v) -> bytes:
    """A ``DebugAnnotation`` (name 10, bool 2, int 4, double 5, string 6)."""
    b = _f_str(10, name)
    if isinstance(v, bool):
        return b + _f_int(2, int(v))
    if isinstance(v, int):
        return b + _f_int(4, v)
    if isinstance(v, float):
        return b + _f_double(5, v)
    if isinstance(v, (list, tuple)):
        v = ", ".join(map(str, v))
    return b + _f_str(6, str(v))


def _track_event(kind: int, track_uuid: int, *, name: str | None = None, cat: str | None = None, args=None,
                 flows_out=(), flows_in=(), value=None) -> bytes:
    """A ``TrackEvent`` (type 9, track_uuid 11, name 23, categories 22, debug_annotations 4, flow_ids 47,
    terminating_flow_ids 48, counter_value 30, double_counter_value 44)."""
    b = _f_int(9, kind) + _f_int(11, track_uuid)
    if cat:
        b += _f_str(22, cat)
    if name is not None:
        b += _f_str(23, name)
    for k, v in (args or {}).items():
        if v is not None:
            b += _annotation_field(k, v)
    for f in flows_out:
        b += _f_fixed64(47, f)
    for f in flows_in:
        b += _f_fixed64(48, f)
    if value is not None:
        b += _f_int(30, value) if isinstance(value, int) else _f_double(44, float(value))
    return b


def _packet(body_field: int, body: bytes, ts: int | None = None, first: bool = False) -> bytes:
    """A ``TracePacket`` (timestamp 8, trusted_packet_sequence_id 10, sequence_flags 13) as a ``Trace.packet`` (1)."""
    b = b""
    if ts is not None:
        b += _f_int(8, ts)
    b += _f_int(10, _SEQ)
    if first:
        b += _f_int(13, _SEQ_INCREMENTAL_STATE_CLEARED)
    b += _f_bytes(body_field, body)
    return _f_bytes(1, b)


def _descriptor(uuid: int, *, name=None, parent=None, process=None, thread=None, counter=False, rank=None,
                description=None) -> bytes:
    """A ``TrackDescriptor`` (uuid 1, name 2, process 3 {pid 1, process_name 6}, thread 4 {pid 1, tid 2,
    thread_name 5}, parent_uuid 5, counter 8, child_ordering 11, sibling_order_rank 12, description 14)."""
    b = _f_int(1, uuid)
    if name is not None:
        b += _f_str(2, name)
    if process is not None:
        pid, pname = process
        b += _f_bytes(3, _f_int(1, pid) + _f_str(6, pname))
    if thread is not None:
        pid, tid, tname = thread
        b += _f_bytes(4, _f_int(1, pid) + _f_int(2, tid) + _f_str(5, tname))
    if parent is not None:
        b += _f_int(5, parent)
    if counter:
        b += _f_bytes(8, b"")
    if process is not None:
        b += _f_int(11, 3)                          # EXPLICIT: children ordered by sibling_order_rank
    if rank is not None:
        b += _f_int(12, rank)
    if description:
        b += _f_str(14, description)
    return b


_KIND_RANK = {"warp": 0, "unit": 1, "mbarrier": 2, "counter": 3, "findings": 4}
_UNIT_RANK = {"tma": 0, "tensor_pipe": 1, "tcgen05": 2, "wgmma": 3}


def perfetto_bytes(tl: Timeline) -> bytes:
    """The Perfetto protobuf trace of ``tl`` (module docstring)."""
    _ANN.clear()
    out = bytearray()
    first = True

    def put(field, body, ts=None):
        nonlocal first
        out.extend(_packet(field, body, ts, first))
        first = False

    meta_uuid = 1
    ns = 1000.0 / tl.clock_mhz if tl.clock_mhz else 0.0
    put(60, _descriptor(meta_uuid, name=f"tcsim {tl.kernel} ({tl.arch}): 1 time unit = 1 SM cycle",
                        description=f"timestamps are simulated SM cycles; clock {tl.clock_mhz:g} MHz "
                                    f"(1 cycle = {ns:.4f} ns)"))
    proc_uuid = {}
    for i, c in enumerate(tl.ctas):
        proc_uuid[i] = 1000 + i
        put(60, _descriptor(proc_uuid[i], process=(i + 1, c["name"])))
    track_uuid = {}
    order = sorted(tl.tracks, key=lambda t: (t.cta, _KIND_RANK.get(t.kind, 9),
                                             _UNIT_RANK.get(t.group, 9) if t.kind == "unit" else 0, t.lane, t.id))
    for rank, t in enumerate(order):
        u = track_uuid[t.id] = 10_000 + t.id
        pid = t.cta + 1
        if t.kind == "warp":
            put(60, _descriptor(u, name=t.name, thread=(pid, pid * 100_000 + t.warp + 1, t.name), rank=rank))
        else:
            put(60, _descriptor(u, name=t.name, parent=proc_uuid[t.cta], counter=t.kind == "counter", rank=rank))
    evs = []            # (ts, order, seq, sub, bytes)
    ends: dict = {}     # track uuid -> its SLICE_END event
    for i, s in enumerate(tl.slices):
        u = track_uuid[s.track]
        if s.dur == 0 and s.cat in ("phase_done", "finding"):
            evs.append((s.ts, 1, i, 0, _track_event(_INSTANT, u, name=s.name, cat=s.cat, args=s.args,
                                                   flows_out=s.flows_out, flows_in=s.flows_in)))
            continue
        evs.append((s.ts, 1, i, 0, _track_event(_SLICE_BEGIN, u, name=s.name, cat=s.cat, args=s.args,
                                               flows_out=s.flows_out, flows_in=s.flows_in)))
        end = s.ts + s.dur
        body = ends.get(u)
        if body is None:
            body = ends[u] = _track_event(_SLICE_END, u)
        evs.append((end, 0 if s.dur > 0 else 1, i, 1, body))
    for c in tl.counters:
        u = track_uuid[c.track]
        for j, (ts, v) in enumerate(c.points):
            evs.append((ts, 2, -1, j, _track_event(_COUNTER, u, value=v)))
    evs.append((0, -1, -1, 0, _track_event(_INSTANT, meta_uuid, name="clock", cat="tcsim",
                                           args={"clock_mhz": float(tl.clock_mhz), "ns_per_cycle": ns,
                                                 "kernel": tl.kernel, "arch": tl.arch, "cycles": int(tl.cycles),
                                                 "time_unit": "SM cycle"})))
    evs.sort(key=lambda e: e[:4])
    for ts, _o, _i, _s, body in evs:
        put(11, body, ts)
    return bytes(out)


def write_perfetto(tl: Timeline, path) -> int:
    """Write the trace to ``path``; returns its size in bytes."""
    data = perfetto_bytes(tl)
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


__all__ = ["perfetto_bytes", "write_perfetto"]
