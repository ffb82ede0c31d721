"""Traced runs on either back end, and the decoder of the trace buffer written by :mod:`tcsim.isa.instrument`.

``run_traced(launch, backend='sim'|'gpu', points='all', ring_records=256) -> TracedRun`` instruments the
launch's PTX, appends a zero-filled trace buffer as the last argument, runs it (simulator:
:func:`tcsim.launch.run_launch`; GPU: :func:`tcsim.hw.launcher.run_on_gpu`) and decodes the buffer.  Both back ends
execute the *same* instrumented PTX (the simulator runs ``activemask``, ``atom``, ``shfl.sync`` and
``%clock64`` like any other instruction), so the records are comparable one for one.
A :class:`TracedRun` unpacks as ``outputs, traces``; ``traces`` holds one :class:`WarpTrace` per warp
(global warp index order) with its records in the warp's program order.

A run can be saved to / loaded from a ``.npz`` file (``TracedRun.save`` / ``TracedRun.load``), so a GPU run
can serve later as a golden reference (``tcsim diff --against golden:PATH``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tcsim.isa.errors import TcsimError
from tcsim.isa.instrument import (DEST_BYTES, RECORD_HEADER_BYTES, WARP, TraceLayout, instrument)

__all__ = ["TraceRecord", "WarpTrace", "TracedRun", "TraceDecodeError", "GpuRunError", "decode_trace",
           "run_traced", "traced_launch"]


class TraceDecodeError(TcsimError):
    """The trace buffer does not match its layout (wrong size, torn or corrupt records)."""

    kind = "trace decode error"


class GpuRunError(TcsimError):
    """The GPU ran the instrumented kernel but reported a CUDA error."""

    kind = "GPU error"


class TraceRecord(NamedTuple):
    """One record: the point (instruction) id, its PTX line, the lanes that executed it, the clock and,
    per destination register, the 32 lane values (uint64, zero-extended; only lanes in ``mask`` matter)."""

    point: int
    line: int
    mask: int
    clock: int
    values: dict


@dataclass
class WarpTrace:
    """The records of one warp, oldest first.  ``count`` records were written in all; when it exceeds the
    ring size only the newest ``len(records)`` survive (``dropped`` = the rest)."""

    index: int                 # global warp index = linear CTA id * warps per CTA + warp in CTA
    cta: tuple                 # (x, y, z)
    warp: int                  # warp within its CTA
    count: int
    anchors: np.ndarray        # uint64[n_anchors]
    points: np.ndarray         # int64[n]
    masks: np.ndarray          # uint32[n]
    clocks: np.ndarray         # uint64[n]
    values: np.ndarray         # uint64[n, max_dests, 32]
    layout: TraceLayout = field(repr=False, default=None)

    @property
    def dropped(self) -> int:
        return self.count - len(self.points)

    @property
    def label(self) -> str:
        return f"cta ({self.cta[0]},{self.cta[1]},{self.cta[2]}) warp {self.warp}"

    def __len__(self) -> int:
        return len(self.points)

    def record(self, i: int) -> TraceRecord:
        pid = int(self.points[i])
        p = self.layout.points[pid]
        vals = {reg: self.values[i, d].copy() for d, (reg, _t) in enumerate(p.dests)}
        return TraceRecord(pid, p.line, int(self.masks[i]), int(self.clocks[i]), vals)

    @property
    def records(self) -> list:
        return [self.record(i) for i in range(len(self))]

    def __iter__(self):
        return iter(self.records)


def decode_trace(buf: np.ndarray, layout: TraceLayout, grid, block) -> list:
    """Decode a trace buffer (uint8) into one :class:`WarpTrace` per warp of the launch."""
    buf = np.ascontiguousarray(np.asarray(buf).reshape(-1).view(np.uint8))
    grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
    nw = layout.num_warps(grid, block)
    wpc = layout.warps_per_cta(block)
    R = layout.region_bytes
    if buf.size != nw * R:
        raise TraceDecodeError(f"trace buffer has {buf.size} bytes; the layout needs {nw} warps x {R} bytes = "
                               f"{nw * R}")
    maxd = (layout.record_bytes - RECORD_HEADER_BYTES) // DEST_BYTES
    npts = len(layout.points)
    out = []
    for w in range(nw):
        reg = buf[w * R:(w + 1) * R]
        count = int(reg[0:4].view(np.uint32)[0])
        anchors = reg[layout.anchor_offset:layout.anchor_offset + 8 * len(layout.anchors)].view(np.uint64).copy()
        n = min(count, layout.ring_records)
        ring = reg[layout.ring_offset:layout.ring_offset + layout.ring_records * layout.record_bytes]
        ring = ring.reshape(layout.ring_records, layout.record_bytes)
        slots = (np.arange(count - n, count, dtype=np.int64) % layout.ring_records)
        recs = ring[slots]
        hdr = np.ascontiguousarray(recs[:, :RECORD_HEADER_BYTES])
        points = hdr[:, 0:4].copy().view(np.uint32).reshape(-1).astype(np.int64)
        masks = hdr[:, 4:8].copy().view(np.uint32).reshape(-1)
        clocks = hdr[:, 8:16].copy().view(np.uint64).reshape(-1)
        vals = np.ascontiguousarray(recs[:, RECORD_HEADER_BYTES:RECORD_HEADER_BYTES + maxd * DEST_BYTES])
        vals = vals.view(np.uint64).reshape(n, maxd, WARP)
        bad = np.nonzero((masks == 0) | (points >= npts))[0]
        lin = w // wpc
        cta = (lin % grid[0], (lin // grid[0]) % grid[1], lin // (grid[0] * grid[1]))
        if bad.size:
            i = int(bad[0])
            raise TraceDecodeError(f"cta {cta} warp {w % wpc}: record {count - n + i} of {count} is torn or "
                                   f"corrupt (point {int(points[i])}, mask 0x{int(masks[i]):08x}); did the kernel "
                                   f"fault while tracing?")
        out.append(WarpTrace(index=w, cta=cta, warp=w % wpc, count=count, anchors=anchors, points=points,
                             masks=masks, clocks=clocks, values=vals, layout=layout))
    return out


@dataclass
class TracedRun:
    """The outputs and decoded traces of one instrumented run."""

    backend: str                   # 'sim', 'gpu' or 'golden'
    outputs: list                  # one entry per original launch argument (arrays; None for scalars)
    traces: list                   # WarpTrace per warp
    layout: TraceLayout
    buffer: np.ndarray             # the raw trace buffer
    grid: tuple
    block: tuple
    arg_bytes: list                # per original argument: nbytes of an array argument, else None
    dynamic_smem: int = 0
    device: str = ""
    info: dict = field(default_factory=dict)

    def __iter__(self):
        return iter((self.outputs, self.traces))

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> None:
        arrays = {"trace_buffer": np.asarray(self.buffer, dtype=np.uint8)}
        kinds = []
        for i, o in enumerate(self.outputs):
            if o is None:
                kinds.append(None)
            elif isinstance(o, (list, tuple)):          # a Struct argument: the arrays of its pointer fields
                for j, f in enumerate(o):
                    arrays[f"out{i}_{j}"] = np.asarray(f)
                kinds.append(len(o))
            else:
                arrays[f"out{i}"] = np.asarray(o)
                kinds.append(True)
        meta = {"backend": self.backend, "layout": self.layout.to_dict(), "grid": list(self.grid),
                "block": list(self.block), "arg_bytes": self.arg_bytes, "dynamic_smem": self.dynamic_smem,
                "device": self.device, "info": _jsonable(self.info), "outputs": kinds}
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)

    @classmethod
    def load(cls, path) -> "TracedRun":
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"golden trace file {p} does not exist")
        with np.load(p, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            outputs = [None if not k else z[f"out{i}"] if k is True else [z[f"out{i}_{j}"] for j in range(k)]
                       for i, k in enumerate(meta["outputs"])]
            buf = z["trace_buffer"]
        layout = TraceLayout.from_dict(meta["layout"])
        traces = decode_trace(buf, layout, meta["grid"], meta["block"])
        return cls(backend="golden", outputs=outputs, traces=traces, layout=layout, buffer=buf,
                   grid=tuple(meta["grid"]), block=tuple(meta["block"]), arg_bytes=meta["arg_bytes"],
                   dynamic_smem=meta["dynamic_smem"], device=meta.get("device") or meta["backend"],
                   info={**meta.get("info", {}), "saved_from": meta["backend"], "path": str(p)})


def _jsonable(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        try:
            json.dumps(v)
            out[k] = v
        except TypeError:
            out[k] = str(v)
    return out


def traced_launch(launch, points="all", ring_records: int = 256):
    """(instrumented Launch with the zero trace buffer appended, TraceLayout, trace buffer)."""
    from tcsim.launch import Launch

    text, name = launch.ptx_text()
    new_text, layout = instrument(text, name, kernel=launch.kernel, points=points, ring_records=ring_records)
    buf = np.zeros(layout.buffer_bytes(launch.grid, launch.block), dtype=np.uint8)
    tl = Launch(ptx=new_text, kernel=launch.kernel, grid=launch.grid, block=launch.block, cluster=launch.cluster,
                dynamic_smem=launch.dynamic_smem, args=list(launch.args) + [buf],
                name=f"{launch.name or name} (traced)")
    return tl, layout, buf


def _arg_bytes(a):
    """The bytes of the buffer an argument's address points into, where it names one (the extent that
    tcsim.hw.diff relocates addresses within): an array, a :class:`tcsim.launch.Pointer` to one (a front end's
    pointer argument, also one passed twice), a front end's host tensor map (its region); for a
    :class:`tcsim.launch.Struct`, ``[[offset, nbytes], ...]`` of its pointer fields; else None."""
    if isinstance(a, np.ndarray):
        return int(a.nbytes)
    arr = getattr(a, "array", None)
    if isinstance(arr, np.ndarray):
        return int(arr.nbytes)
    host = getattr(getattr(a, "region", None), "host", None)
    if isinstance(host, np.ndarray):
        return int(host.nbytes)
    if callable(getattr(a, "pointer_offsets", None)):      # a Struct: [[offset, nbytes]] of its Pointer fields
        return a.pointer_offsets() or None
    return None


def run_traced(launch, backend: str = "sim", points="all", ring_records: int = 256, seed: int | None = None,
               timeout: float = 120.0) -> TracedRun:
    """Instrument ``launch``, run it on ``backend`` ('sim' or 'gpu') and decode the trace.

    Raises :class:`tcsim.hw.launcher.GpuUnavailable` when the GPU back end cannot run here, :class:`GpuRunError`
    when the kernel faults on the GPU, and the simulator's diagnostics as usual."""
    tl, layout, _ = traced_launch(launch, points, ring_records)
    arg_bytes = [_arg_bytes(a) for a in launch.args]
    info = {}
    if backend == "sim":
        from tcsim.launch import run_launch

        res = run_launch(tl, seed=seed)
        outs = list(res.outputs)
        # a front end's host tensor map (tcsim.triton / tcsim.cute): its output is the memory region it maps, as
        # the GPU back end reports it (tcsim.hw.launcher); the simulator keeps that region's allocation on the map
        from tcsim.hw.launcher import is_host_tensor_map
        for i, a in enumerate(launch.args):
            alloc = getattr(getattr(a, "region", None), "alloc", None)
            if is_host_tensor_map(a) and outs[i] is None and alloc is not None:
                host = a.region.host
                outs[i] = alloc.download(host.nbytes).view(host.dtype).reshape(host.shape)
        device = "tcsim" + (f" (seed {seed})" if seed is not None else "")
        info = {"stats": dict(res.stats)}
    elif backend == "gpu":
        from tcsim.hw.launcher import run_on_gpu

        g = run_on_gpu(tl, timeout=timeout)
        if g.error is not None:
            raise GpuRunError(f"the instrumented kernel failed on the GPU: {g.error} ({g.error_detail})")
        outs = list(g.outputs)
        cc = g.compute_capability
        device = f"{g.device}" + (f" sm_{cc[0]}{cc[1]}" if cc else "")
        info = {"elapsed_ms": g.elapsed_ms, "driver": g.driver}
    else:
        raise ValueError(f"unknown backend {backend!r} (expected 'sim' or 'gpu')")
    buf = outs[-1]
    traces = decode_trace(buf, layout, launch.grid, launch.block)
    return TracedRun(backend=backend, outputs=outs[:-1], traces=traces, layout=layout, buffer=buf,
                     grid=tuple(launch.grid), block=tuple(launch.block), arg_bytes=arg_bytes,
                     dynamic_smem=int(launch.dynamic_smem), device=device, info=info)
