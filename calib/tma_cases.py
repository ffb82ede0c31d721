"""Golden data for tile-mode TMA on the H100 (sm_90a): a generated case list, recorded on the GPU, replayed on the
simulator bit for bit.

Every case is one small kernel (one to four CTAs of 128 threads) generated from one template, plus its launch:
numpy tensors made from a fixed per-case seed, tensor maps over them (:class:`CaseMap`, cuTensorMapEncodeTiled
arguments) and a list of copy operations issued by thread 0 of each CTA.  The template:

1. every thread copies the CTA's slice of the ``img`` argument into the CTA's shared buffer ``buf`` (a known
   pattern for loads, the source image for stores), then ``fence.proxy.async.shared::cta``;
2. thread 0 initialises one mbarrier and arrives on it with ``expect_tx`` = the bytes that this CTA receives
   (the full box per tensor load, per multicast destination), then a CTA or cluster barrier;
3. thread 0 of each CTA issues its operations in order (a store/reduce/bulk store is committed and waited with
   ``cp.async.bulk.wait_group 0`` before the next one, so overlapping stores are ordered);
4. every thread waits for phase 0 of the mbarrier, bounded by %clock64 (about a second on the GPU) so that a
   copy that never completes is a result (status word 1), not a hang;
5. the CTA's whole ``buf`` is written to ``out`` (for cases that load into shared memory), then a status word and
   an end marker.

Families (``python -m calib.tma_cases list`` prints every case): ``swizzle`` (each swizzle mode x element type,
rows narrower than the span, the 128B atom variants), ``phase`` (swizzled boxes whose SMEM address is not on
the pattern repeat), ``rank`` (ranks 1..5), ``oob`` (negative and past-the-end starts on every edge of ranks
1..5, zero and NaN fill, whole-box OOB, coordinate extremes), ``dtype`` (every non-packed data type, bit
patterns with NaN payloads and subnormals), ``estride`` (element strides), ``store`` (TMA stores, OOB dropped,
negative starts), ``reduce`` (cp.reduce.async.bulk.tensor for every redop x type of the PTX table, and some
that are not in it), ``multicast`` (2 and 4 CTAs, tensor and non-tensor), ``bulk`` (non-tensor cp.async.bulk in
each direction) and ``fault`` (misaligned SMEM boxes, tensor maps the driver must refuse, a .Nd that is not
the map's rank).

Each case carries ``expect``: ``ok`` (defined by the PTX ISA / driver documentation), ``fault`` (undefined or an
error: the GPU's answer is recorded next to tcsim's diagnosis), ``driver`` (cuTensorMapEncodeTiled should
refuse the map) or ``probe`` (unsettled in tma.md; the GPU settles it).  :func:`model` gives the outputs the
documented model (tma.md §2-§4, written here independently of sim/) predicts.

Commands::

    python -m calib.tma_cases list
    python -m calib.tma_cases record --out DIR [--jobs 8] [--backend gpu|sim] [--case GLOB ...]
    python -m calib.tma_cases install --gpu DIR          # -> tests/golden/tma_h100/{meta.json,tma_outputs.npz}
    python -m calib.tma_cases compare --gpu DIR          # simulate every recorded case, decode differences
    python -m calib.tma_cases check [--case GLOB ...]    # simulator vs the documented model, no GPU
    python -m calib.tma_cases ptxas                      # every kernel through ptxas -arch=sm_90a

``record`` runs each case through :func:`tcsim.hw.launcher.run_on_gpu` (its own child process, ``--jobs`` of them at
a time; the cases the documentation defines first, then the probes and faults) and writes ``DIR/meta.json``
(GPU, driver, date, command; per case: status, CUDA error name and detail, SHA-256 of the PTX and of the
inputs, output keys, and tcsim's result or diagnosis at record time) and ``DIR/outputs.npz`` (``<case>:out``,
the shared-memory dumps and status words; ``<case>:t<k>``, tensors that the case writes).  ``--backend sim``
runs the simulator instead (how CI tests the harness).  ``install`` stores outputs.npz as ``tma_outputs.npz``
(calib.golden would take a folder holding meta.json + outputs.npz for one of its cases); ``compare`` and ``install``
read a folder holding either name.
``tests/hw/test_tma_golden.py`` replays ``tests/golden/tma_h100``; on the GPU machine run
``bash calib/tma_device_run.sh $OUT``.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import fnmatch
import hashlib
import json
import math
import os
import shlex
import shutil
import sys
import time
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from calib.golden import sha256
from tcsim.isa.swizzle import SWIZZLE_PERIOD, SWIZZLE_SPAN
from tcsim.isa.tensormap import DATA_TYPES, TensorMap

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "tma_h100"
META = "meta.json"
OUTPUTS = "outputs.npz"
#: the installed name of outputs.npz: calib.golden takes every tests/golden/<dir>/ holding meta.json + outputs.npz
#: for one of its example cases, so tests/golden/tma_h100/ must not hold a file of that name
INSTALLED_OUTPUTS = "tma_outputs.npz"
HEAD = ".version 8.6\n.target sm_90a\n.address_size 64\n"
KERNEL = "tma_case"
NT = 128                      # threads per CTA
STATUS = 16                   # bytes after the SMEM dump: wait status (u32), end marker (u32), 8 unused
MARKER = 0x7C51D0E5
OUT_FILL = 0xEE               # initial bytes of `out`
SENTINEL = 0xEE               # bytes of tensor padding / untouched store targets
WAIT_CYCLES = 1 << 31         # bounded mbarrier wait (%clock64 cycles, ~1 s on an H100)
SIM_MAX_INSTRUCTIONS = 2_000_000
REDOPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
#: redop -> map data types the PTX ISA table allows (tma.md §2)
RED_TYPES = {
    "add": ("UINT32", "INT32", "UINT64", "FLOAT32", "FLOAT16", "BFLOAT16"),
    "min": ("UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "BFLOAT16"),
    "max": ("UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "BFLOAT16"),
    "inc": ("UINT32",), "dec": ("UINT32",),
    "and": ("UINT32", "INT32", "UINT64"), "or": ("UINT32", "INT32", "UINT64"), "xor": ("UINT32", "INT32", "UINT64"),
}
#: pairs of the PTX table an H100 refuses with an illegal instruction (first record: reduce_{and,or,xor}_int64)
RED_H100_ILLEGAL = {("and", "INT64"), ("or", "INT64"), ("xor", "INT64")}
#: (redop, type) pairs outside the PTX table that an H100 performs anyway (first record: reduce_bad_add_*)
RED_H100_EXTRA = {("add", "FLOAT64"), ("add", "FLOAT32_FTZ")}
#: NaN bit patterns of NAN_REQUEST_ZERO_FMA fill: tma.md leaves them open; the first H100 record settled them as
#: 0x7FF7 repeated over the element for every float type (oob_nan_*)
MODEL_NAN = {2: 0x7FF7, 4: 0x7FF77FF7, 8: 0x7FF77FF77FF77FF7}
#: canonical NaN of a reduction result (f32 add: first H100 record; f16/bf16 assumed) and of a TFLOAT32 load
RED_NAN = {2: 0x7FFF, 4: 0x7FFFFFFF}
TF32_LOAD_NAN = 0x7FFFE000
MANTISSA = {"FLOAT16": 10, "BFLOAT16": 7, "FLOAT32": 23, "FLOAT32_FTZ": 23, "TFLOAT32": 23, "TFLOAT32_FTZ": 23,
            "FLOAT64": 52}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# ================================================================================================ the cases
@dataclass(frozen=True)
class MapSpec:
    """A tiled tensor map over case tensor ``tensor`` (driver order: dim 0 innermost; strides in bytes for dims
    1..rank-1; ``byte_offset`` is added to the tensor's device address)."""

    tensor: int
    dtype: str
    dims: tuple
    strides: tuple
    box: tuple
    estr: tuple
    swizzle: str = "none"
    oob: str = "zero"
    byte_offset: int = 0

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def esize(self) -> int:
        return _esize(self.dtype)

    @property
    def n(self) -> tuple:
        """Elements moved per dim: ceil(box / elementStride), the dim-0 stride ignored (no interleave)."""
        return tuple(-(-b // (1 if i == 0 else e)) for i, (b, e) in enumerate(zip(self.box, self.estr)))

    @property
    def box_bytes(self) -> int:
        return self.esize * math.prod(self.n)

    @property
    def footprint(self) -> int:
        """SMEM bytes the box image spans: its rows padded to the swizzle span when they are narrower (first H100
        record, see :func:`image_addresses`)."""
        row = self.box[0] * self.esize
        span = SWIZZLE_SPAN.get(self.swizzle) or 0
        return self.box_bytes // row * span if row < span else self.box_bytes


@dataclass(frozen=True)
class Op:
    """One copy issued by thread 0 of CTA ``rank``.

    kinds: ``tload`` (tensor -> SMEM ``smem``; ``mask``: multicast ctaMask; ``dst_space``), ``tstore`` /
    ``treduce`` (SMEM ``smem`` -> tensor; ``redop``), ``bload`` (tensor ``tensor`` bytes [goff, goff+size) ->
    SMEM; ``mask``), ``bstore`` (SMEM -> tensor bytes), ``s2s`` (SMEM of ``rank`` -> SMEM ``dst_smem`` of CTA
    ``dst_rank``).  ``dim`` overrides the .Nd of a tensor instruction (a deliberate mismatch)."""

    kind: str
    rank: int = 0
    smem: int = 0
    map: int = 0
    coords: tuple = ()
    mask: int | None = None
    redop: str | None = None
    tensor: int = 0
    goff: int = 0
    size: int = 0
    dst_rank: int = 0
    dst_smem: int = 0
    dim: int | None = None
    dst_space: str = "shared::cluster"
    peer: int | None = None      # tload/bload without multicast: destination + mbarrier in this CTA (mapa)


@dataclass
class TmaCase:
    name: str
    family: str
    note: str
    tensors: list
    maps: list
    ops: list
    img: np.ndarray              # (ncta, smem) uint8: initial shared-memory contents
    ncta: int = 1
    dump: bool = True
    expect: str = "ok"           # ok | fault | driver | probe
    timeout: float = 40.0        # seconds for the GPU child (a hung kernel is killed and recorded as TIMEOUT)

    @property
    def smem(self) -> int:
        return self.img.shape[1]

    @property
    def out_bytes(self) -> int:
        return (self.smem if self.dump else 0) + STATUS

    def written_tensors(self) -> list:
        return sorted({op.tensor if op.kind == "bstore" else self.maps[op.map].tensor
                       for op in self.ops if op.kind in ("tstore", "treduce", "bstore")})

    def expected_tx(self) -> list:
        """Bytes each CTA's mbarrier expects (what the copies deliver to it under the documented model)."""
        tx = [0] * self.ncta
        for op in self.ops:
            if op.kind in ("tload", "bload"):
                nb = self.maps[op.map].box_bytes if op.kind == "tload" else op.size
                for t in _targets(op, self.ncta):
                    tx[t] += nb
            elif op.kind == "s2s":
                tx[op.dst_rank] += op.size
        return tx

    # ------------------------------------------------------------------------------------------ launch
    def ptx(self) -> str:
        return kernel_ptx(self)

    def launch(self):
        """A fresh :class:`tcsim.launch.Launch` (copies of the arrays; the maps refer to the copies)."""
        from tcsim.launch import Launch

        tensors = [t.copy() for t in self.tensors]
        out = np.full((self.ncta, self.out_bytes), OUT_FILL, dtype=np.uint8)
        maps = [CaseMap.of(m, tensors[m.tensor]) for m in self.maps]
        return Launch(ptx=self.ptx(), kernel=KERNEL, grid=(self.ncta, 1, 1), block=(NT, 1, 1),
                      cluster=(self.ncta, 1, 1), args=[out, self.img.copy(), *tensors, *maps],
                      name=f"tma:{self.name}")

    def output_args(self) -> dict:
        """Recorded outputs: key suffix -> launch argument index."""
        d = {"out": 0}
        for k in self.written_tensors():
            d[f"t{k}"] = 2 + k
        return d


def _targets(op: Op, ncta: int) -> list:
    if op.mask is None:
        return [op.rank if op.peer is None else op.peer]
    return [r for r in range(16) if op.mask >> r & 1 and r < ncta]


@dataclass
class CaseMap(TensorMap):
    """A :class:`TensorMap` whose global address is the launch buffer of ``array`` plus ``byte_offset`` on both
    back ends (hw.launcher calls :meth:`to_driver_args`, the simulator :meth:`encode_for_sim`), built without
    validation so that maps the driver must refuse can be passed too."""

    byte_offset: int = 0

    @classmethod
    def of(cls, m: MapSpec, array: np.ndarray) -> "CaseMap":
        return cls(dtype=m.dtype, rank=m.rank, global_address=0, global_dims=m.dims, global_strides=m.strides,
                   box_dims=m.box, element_strides=m.estr, swizzle=m.swizzle, oob_fill=m.oob, array=array,
                   byte_offset=m.byte_offset)

    def to_driver_args(self, global_address: int | None = None) -> tuple:
        args = list(super().to_driver_args(global_address))
        args[2] = int(args[2]) + self.byte_offset
        return tuple(args)

    def encode_for_sim(self, gmem, by_id: dict, name: str = "tensor map") -> bytes:
        from tcsim.isa.errors import LaunchError

        alloc = by_id.get(id(self.array))
        if alloc is None:
            raise LaunchError(f"{name}: the tensor of a case map must be a launch argument")
        # without an array, TensorMap.encode_for_sim encodes global_address as is
        at = dataclasses.replace(self, global_address=alloc.base + self.byte_offset, array=None)
        return TensorMap.encode_for_sim(at, gmem, by_id, name)


# ================================================================================================ PTX
def kernel_ptx(case: TmaCase) -> str:
    """The case's kernel (one template; see the module docstring)."""
    S, OB = case.smem, case.out_bytes
    L = [f"// generated by calib/tma_cases.py, case {case.name} ({case.family}) -- do not edit", HEAD]
    w = L.append
    params = [".param .u64 out", ".param .u64 img"] + [f".param .u64 t{k}" for k in range(len(case.tensors))] \
        + [f".param .align 64 .b8 m{k}[128]" for k in range(len(case.maps))]
    w(f".visible .entry {KERNEL}(\n\t" + ",\n\t".join(params) + "\n)")
    w(f".reqntid {NT}, 1, 1")
    w("{")
    w("\t.reg .pred %p<8>;\n\t.reg .b16 %h<2>;\n\t.reg .b32 %r<24>;\n\t.reg .b32 %c<5>;\n\t.reg .b64 %rd<16>;")
    if case.maps:
        w(f"\t.reg .b64 %m<{len(case.maps)}>;")
    if case.tensors:
        w(f"\t.reg .b64 %t<{len(case.tensors)}>;")
    w(f"\t.shared .align 1024 .b8 buf[{S}];")
    w("\t.shared .align 8 .b64 bar;")
    w("\tmov.u32 %r0, %tid.x;\n\tmov.u32 %r1, %cluster_ctarank;\n\tmov.u32 %r2, buf;\n\tmov.u32 %r3, bar;")
    for k in range(len(case.maps)):
        w(f"\tmov.b64 %m{k}, m{k};\n\tcvta.param.u64 %m{k}, %m{k};")
    for k in range(len(case.tensors)):
        w(f"\tld.param.u64 %t{k}, [t{k}];\n\tcvta.to.global.u64 %t{k}, %t{k};")
    # 1. shared memory <- img[rank]
    w("\tld.param.u64 %rd1, [img];\n\tcvta.to.global.u64 %rd1, %rd1;")
    w(f"\tmul.wide.u32 %rd2, %r1, {S};\n\tadd.u64 %rd1, %rd1, %rd2;")
    w("\tshl.b32 %r4, %r0, 4;")
    w("$L_fill:")
    w(f"\tsetp.ge.u32 %p1, %r4, {S};\n\t@%p1 bra $L_filled;")
    w("\tcvt.u64.u32 %rd2, %r4;\n\tadd.u64 %rd3, %rd1, %rd2;")
    w("\tld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd3];")
    w("\tadd.u32 %r10, %r2, %r4;\n\tst.shared.v4.u32 [%r10], {%r5, %r6, %r7, %r8};")
    w(f"\tadd.u32 %r4, %r4, {NT * 16};\n\tbra $L_fill;")
    w("$L_filled:")
    w("\tfence.proxy.async.shared::cta;")
    # 2. the mbarrier, expecting this CTA's bytes
    w("\tsetp.ne.u32 %p2, %r0, 0;\n\t@%p2 bra $L_init_done;")
    w("\tmbarrier.init.shared::cta.b64 [%r3], 1;\n\tfence.mbarrier_init.release.cluster;")
    tx = case.expected_tx()
    for r in range(case.ncta):
        pred = ""
        if case.ncta > 1:
            w(f"\tsetp.eq.u32 %p3, %r1, {r};")
            pred = "@%p3 "
        if tx[r]:
            w(f"\t{pred}mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], {tx[r]};")
        else:
            w(f"\t{pred}mbarrier.arrive.shared::cta.b64 _, [%r3];")
    w("$L_init_done:")
    _sync(w, case.ncta)
    # 3. thread 0 of each CTA issues its operations
    w("\t@%p2 bra $L_issued;")
    for r in range(case.ncta):
        ops = [op for op in case.ops if op.rank == r]
        if not ops:
            continue
        if case.ncta > 1:
            w(f"\tsetp.ne.u32 %p3, %r1, {r};\n\t@%p3 bra $L_rank{r}_done;")
        for op in ops:
            _emit_op(w, case, op)
        if case.ncta > 1:
            w(f"$L_rank{r}_done:")
    w("$L_issued:")
    # 4. bounded wait for phase 0
    w("\tmov.u32 %r9, 0;\n\tmov.u64 %rd4, %clock64;")
    w("$L_wait:")
    w("\tmbarrier.try_wait.parity.shared::cta.b64 %p4, [%r3], 0;\n\t@%p4 bra $L_waited;")
    w("\tmov.u64 %rd5, %clock64;\n\tsub.s64 %rd5, %rd5, %rd4;")
    w(f"\tsetp.lt.s64 %p5, %rd5, {WAIT_CYCLES};\n\t@%p5 bra $L_wait;")
    w("\tmov.u32 %r9, 1;")
    w("$L_waited:")
    w("\tbar.sync 0;")
    # 5. dump + status
    w("\tld.param.u64 %rd6, [out];\n\tcvta.to.global.u64 %rd6, %rd6;")
    w(f"\tmul.wide.u32 %rd7, %r1, {OB};\n\tadd.u64 %rd6, %rd6, %rd7;")
    if case.dump:
        w("\tshl.b32 %r4, %r0, 4;")
        w("$L_dump:")
        w(f"\tsetp.ge.u32 %p1, %r4, {S};\n\t@%p1 bra $L_dumped;")
        w("\tadd.u32 %r10, %r2, %r4;\n\tld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r10];")
        w("\tcvt.u64.u32 %rd2, %r4;\n\tadd.u64 %rd3, %rd6, %rd2;")
        w("\tst.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r8};")
        w(f"\tadd.u32 %r4, %r4, {NT * 16};\n\tbra $L_dump;")
        w("$L_dumped:")
    stat = OB - STATUS
    w("\t@%p2 bra $L_end;")
    w(f"\tst.global.u32 [%rd6+{stat}], %r9;\n\tst.global.u32 [%rd6+{stat + 4}], {MARKER};")
    w("$L_end:")
    if case.ncta > 1:
        _sync(w, case.ncta)
    w("\tret;\n}")
    return "\n".join(L) + "\n"


def _sync(w, ncta):
    if ncta > 1:
        w("\tbarrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;")
    else:
        w("\tbar.sync 0;")


def _emit_op(w, case: TmaCase, op: Op):
    w(f"\t// {op.kind} {_op_text(case, op)}")
    if op.kind in ("tload", "tstore", "treduce"):
        m = case.maps[op.map]
        dim = op.dim or m.rank
        coords = list(op.coords) + [0] * (dim - len(op.coords))
        for i, c in enumerate(coords[:dim]):
            w(f"\tmov.b32 %c{i}, {int(c)};")
        cs = ", ".join(f"%c{i}" for i in range(dim))
        w(f"\tadd.u32 %r11, %r2, {op.smem};")
        bar = _peer(w, op)
        if op.kind == "tload":
            mc = ""
            if op.mask is not None:
                w(f"\tmov.b16 %h0, {op.mask};")
                mc = ".multicast::cluster"
            w(f"\tcp.async.bulk.tensor.{dim}d.{op.dst_space}.global.tile.mbarrier::complete_tx::bytes{mc} "
              f"[%r11], [%m{op.map}, {{{cs}}}], [{bar}]" + (", %h0;" if mc else ";"))
        else:
            head = "cp.async.bulk.tensor" if op.kind == "tstore" else "cp.reduce.async.bulk.tensor"
            red = f".{op.redop}" if op.kind == "treduce" else ""
            w(f"\t{head}.{dim}d.global.shared::cta{red}.tile.bulk_group [%m{op.map}, {{{cs}}}], [%r11];")
            w("\tcp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group 0;")
    elif op.kind == "bload":
        w(f"\tadd.u32 %r11, %r2, {op.smem};\n\tadd.u64 %rd8, %t{op.tensor}, {op.goff};")
        bar = _peer(w, op)
        mc = ""
        if op.mask is not None:
            w(f"\tmov.b16 %h0, {op.mask};")
            mc = ".multicast::cluster"
        size = str(op.size)
        if op.size % 16:          # ptxas refuses a constant size that is not a multiple of 16
            w(f"\tmov.u32 %r14, {op.size};")
            size = "%r14"
        w(f"\tcp.async.bulk.{op.dst_space}.global.mbarrier::complete_tx::bytes{mc} [%r11], [%rd8], {size}, "
          f"[{bar}]" + (", %h0;" if mc else ";"))
    elif op.kind == "bstore":
        w(f"\tadd.u32 %r11, %r2, {op.smem};\n\tadd.u64 %rd8, %t{op.tensor}, {op.goff};")
        w(f"\tcp.async.bulk.global.shared::cta.bulk_group [%rd8], [%r11], {op.size};")
        w("\tcp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group 0;")
    elif op.kind == "s2s":
        w(f"\tadd.u32 %r11, %r2, {op.smem};\n\tadd.u32 %r12, %r2, {op.dst_smem};")
        w(f"\tmapa.shared::cluster.u32 %r12, %r12, {op.dst_rank};\n\tmapa.shared::cluster.u32 %r13, %r3, "
          f"{op.dst_rank};")
        w(f"\tcp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r12], [%r11], {op.size}, "
          f"[%r13];")
    else:
        raise ValueError(op.kind)


def _peer(w, op: Op) -> str:
    """For a load into another CTA: map %r11 (destination) and the mbarrier into it; returns the mbarrier
    operand."""
    if op.peer is None or op.mask is not None:
        return "%r3"
    w(f"\tmapa.shared::cluster.u32 %r11, %r11, {op.peer};\n\tmapa.shared::cluster.u32 %r13, %r3, {op.peer};")
    return "%r13"


def _op_text(case: TmaCase, op: Op) -> str:
    if op.kind in ("tload", "tstore", "treduce"):
        m = case.maps[op.map]
        s = f"map {op.map} ({m.dtype} dims {list(m.dims)} box {list(m.box)} estr {list(m.estr)} swizzle {m.swizzle}" \
            f" oob {m.oob}) coords {list(op.coords)} smem +{op.smem}"
        if op.redop:
            s += f" .{op.redop}"
    elif op.kind == "s2s":
        s = f"{op.size} bytes smem +{op.smem} -> CTA {op.dst_rank} smem +{op.dst_smem}"
    else:
        s = f"{op.size} bytes t{op.tensor}+{op.goff} {'->' if op.kind == 'bload' else '<-'} smem +{op.smem}"
    if op.mask is not None:
        s += f" ctaMask 0x{op.mask:x}"
    if op.peer is not None:
        s += f" into CTA {op.peer}"
    return s


# ================================================================================================ case builders
def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _esize(dtype: str) -> int:
    return DATA_TYPES[dtype].esize


def make_tensor(rng, dtype: str, dims, content="random", pad0=16, pad_outer=1):
    """A padded C-order backing array for a tensor of driver dims ``dims``: rows of ``dims[0]`` elements plus
    ``pad0`` bytes (rounded to 16 B), ``pad_outer`` extra slices in every outer dim; padding holds SENTINEL
    bytes.  ``content``: 'random' bits (with special values sprinkled in), 'sentinel', or a callable
    (rng, n) -> uint array of n elements.  Returns (array, strides in bytes for dims 1..r-1)."""
    es = _esize(dtype)
    ut = _UINT[es]
    r = len(dims)
    row = -(-(dims[0] * es + pad0) // 16) * 16
    shape = [dims[k] + pad_outer for k in reversed(range(1, r))] + [row // es]
    a = np.empty(shape, dtype=ut)
    a.view(np.uint8)[...] = SENTINEL
    inside = tuple(slice(0, dims[k]) for k in reversed(range(r)))
    cnt = math.prod(dims)
    if content == "random":
        vals = _random_bits(rng, dtype, cnt)
    elif content == "sentinel":
        vals = None
    else:
        vals = np.asarray(content(rng, cnt), dtype=ut)
    if vals is not None:
        a[inside] = vals.reshape([dims[k] for k in reversed(range(r))])
    strides = tuple(a.strides[::-1][1:])
    return a, strides


def _random_bits(rng, dtype: str, n: int) -> np.ndarray:
    es = _esize(dtype)
    ut = _UINT[es]
    v = rng.integers(0, 1 << (8 * es), size=n, dtype=np.uint64 if es == 8 else np.int64).astype(ut)
    sp = _specials(dtype)
    if sp.size and n >= 2 * sp.size:
        pos = rng.choice(n, sp.size, replace=False)
        v[pos] = sp
    return v


def _specials(dtype: str) -> np.ndarray:
    """Bit patterns worth seeing moved: zeros, NaN payloads (quiet and signalling), infinities, subnormals."""
    es = _esize(dtype)
    if not DATA_TYPES[dtype].is_float:
        top = (1 << (8 * es)) - 1
        return np.array([0, 1, top, top >> 1, (top >> 1) + 1], dtype=_UINT[es])
    if es == 2 and dtype == "FLOAT16":
        v = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE12, 0x0001, 0x83FF, 0x0400]
    elif es == 2:
        v = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC5, 0x0001, 0x807F, 0x0080]
    elif es == 4:
        v = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC01234, 0x00000001, 0x807FFFFF,
             0x00800000, 0x3F800FFF, 0x3F801000, 0x3F802000, 0x00001FFF]
    else:
        v = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0x7FF0000000000001,
             0x0000000000000001, 0x800FFFFFFFFFFFFF]
    return np.array(v, dtype=_UINT[es])


def spec_for(tensor_index: int, dtype: str, dims, strides, box, estr=None, swizzle="none", oob="zero",
             byte_offset=0) -> MapSpec:
    return MapSpec(tensor_index, dtype, tuple(dims), tuple(strides), tuple(box),
                   tuple(estr) if estr is not None else (1,) * len(dims), swizzle, oob, byte_offset)


class _Slots:
    """Shared-memory slots: each box starts on a fresh 1024-byte line (+ ``phase``)."""

    def __init__(self):
        self.next = 0

    def take(self, nbytes: int, phase: int = 0) -> int:
        off = self.next + phase
        end = off + max(nbytes, 16)
        self.next = -(-end // 1024) * 1024
        return off

    @property
    def size(self) -> int:
        return max(self.next, 1024)


def _img_fill(ncta: int, size: int) -> np.ndarray:
    """Initial SMEM for load cases: a recognisable non-zero, non-NaN-looking pattern (byte k = 0x5A ^ k)."""
    k = np.arange(size, dtype=np.int64)
    row = ((0x5A ^ (k & 0xFF)) & 0xFF).astype(np.uint8)
    img = np.tile(row, (ncta, 1))
    for r in range(ncta):
        img[r, 3::16] = 0xC0 + r          # tells CTAs apart
    return img


def align_c0(c, dtype: str) -> tuple:
    """``c`` with its dim-0 coordinate rounded down to a 16-byte boundary: a tile-mode copy whose c0 * element size
    is not a multiple of 16 is an illegal instruction on the H100 (the fault_inner_coord_* cases), so the cases
    that test something else start on one."""
    per = 16 // _esize(dtype) if _esize(dtype) < 16 else 1
    return (c[0] // per * per,) + tuple(c[1:]) if c else tuple(c)


def _load_case(name, family, note, dtype, dims, boxes, box, estr=None, swizzle="none", oob="zero", phase=0,
               expect="ok", content="random", dst_space="shared::cluster", pad0=16, byte_offset=0, dim=None,
               timeout=40.0, extra_smem=0, raw_c0=False, slot=None):
    """One map over one padded tensor; one tensor load per coordinate tuple in ``boxes``, each into its own slot
    (dim-0 coordinates rounded down to 16 bytes unless ``raw_c0``; ``slot``: bytes per slot instead of the box's
    footprint)."""
    if not raw_c0:
        boxes = [align_c0(c, dtype) for c in boxes]
    rng = _rng(name)
    t, strides = make_tensor(rng, dtype, dims, content=content, pad0=pad0)
    m = spec_for(0, dtype, dims, strides, box, estr, swizzle, oob, byte_offset)
    slots = _Slots()
    ops = []
    for c in boxes:
        ops.append(Op("tload", smem=slots.take(m.footprint if slot is None else slot, phase), map=0, coords=tuple(c),
                      dst_space=dst_space,
                      dim=dim))
    img = _img_fill(1, slots.size + extra_smem)
    return TmaCase(name, family, note, [t], [m], ops, img, expect=expect, timeout=timeout)


def _edges(dims, box, estr=None):
    """Start coordinates touching each edge: for every dim d, a box hanging over the negative edge and one over
    the far edge (other dims interior)."""
    r = len(dims)
    estr = estr or (1,) * r
    base = [max(0, (dims[i] - box[i]) // 2) for i in range(r)]
    out = []
    for d in range(r):
        ext = box[d] if d == 0 else (-(-box[d] // estr[d]) - 1) * estr[d] + 1
        lo = list(base)
        lo[d] = -max(1, ext // 2 + (1 if d % 2 else 0))
        hi = list(base)
        hi[d] = dims[d] - max(1, ext // 2 - (1 if d % 2 else 0))
        out += [tuple(lo), tuple(hi)]
    return out


# ------------------------------------------------------------------------------------------------ families
SWIZZLES = ("none", "32B", "64B", "128B")
ATOMS = ("128B_atom_32B", "128B_atom_32B_flip_8B", "128B_atom_64B")
#: inner box row (bytes) of the cases per swizzle mode: the mode's span (isa.swizzle); 64 B without a swizzle
SPAN = {**SWIZZLE_SPAN, "none": 64}
#: bytes after which the swizzle pattern repeats (isa.swizzle); without a swizzle, the 16-byte box alignment
REPEAT = {**SWIZZLE_PERIOD, "none": 16}


def _fam_swizzle():
    cases = []
    for sw in SWIZZLES:
        for dt in ("UINT8", "UINT16", "FLOAT32", "FLOAT64") + (("BFLOAT16",) if sw == "128B" else ()):
            es = _esize(dt)
            inner = SPAN[sw] // es
            dims = (inner * 2 + 16 // es * 3, 21)
            box = (inner, 16)
            cases.append(_load_case(f"swizzle_{sw}_{dt.lower()}", "swizzle",
                                    f"2-D {dt} box of {inner}x16 (inner row = the {SPAN[sw]}-byte span), swizzle {sw}: "
                                    "an interior box and one over the far corner (fill under the swizzle)",
                                    dt, dims, [(inner // 2 + 16 // es, 2), (dims[0] - inner // 2, 21 - 9)], box,
                                    swizzle=sw))
    for sw, rows in (("128B", (16, 32, 64)), ("64B", (16, 32)), ("32B", (16,))):
        for rb in rows:
            inner = rb // 4
            cases.append(_load_case(f"swizzle_{sw}_narrow{rb}", "swizzle",
                                    f"swizzle {sw} with {rb}-byte rows (narrower than the span): dense image + XOR "
                                    "on the address is the assumed model (tma.md §4)", "FLOAT32", (40, 30),
                                    [(3, 1)], (inner, 24), swizzle=sw, expect="probe"))
    for sw in ATOMS:
        cases.append(_load_case(f"swizzle_{sw}", "swizzle",
                                f"swizzle {sw} on sm_90: cuTensorMapEncodeTiled refuses it (tma.md lists it for "
                                "sm_100; first H100 record)", "FLOAT32", (70, 20), [(4, 2)], (32, 16),
                                swizzle=sw, expect="driver"))
    return cases


def _fam_phase():
    cases = []
    for sw, offs in (("32B", (16, 128, 256, 512)), ("64B", (16, 128, 256, 384, 512)),
                     ("128B", (16, 128, 256, 512, 896)), ("none", (16, 48, 128))):
        for off in offs:
            inner = SPAN[sw] // 4
            cases.append(_load_case(f"phase_{sw}_at{off}", "phase",
                                    f"swizzle {sw} box at SMEM offset {off} (pattern repeat {REPEAT[sw]} B): "
                                    "absolute-address swizzle assumed (tma.md §3)", "FLOAT32", (48, 40), [(5, 3)],
                                    (inner, 20), swizzle=sw, phase=off,
                                    expect="fault" if off % 128 else "ok" if sw == "none" else "probe"))
    return cases


RANK_DIMS = {1: (200,), 2: (40, 13), 3: (24, 7, 5), 4: (16, 5, 4, 3), 5: (16, 3, 4, 3, 2)}
RANK_BOX = {1: (64,), 2: (16, 8), 3: (16, 4, 3), 4: (8, 3, 2, 2), 5: (8, 2, 3, 2, 2)}


def _fam_rank():
    cases = []
    for r in range(1, 6):
        dims, box = RANK_DIMS[r], RANK_BOX[r]
        c = tuple(1 + (i % 2) for i in range(r))
        for dt, sw in (("FLOAT32", "none"), ("UINT16", "128B"), ("UINT8", "64B")):
            bx = box if dt == "FLOAT32" else (box[0] * (2 if dt == "UINT16" else 4),) + box[1:]
            if sw != "none":
                bx = (min(bx[0], SPAN[sw] // _esize(dt)),) + bx[1:]
            if dt == "UINT8":
                bx = (max(16, bx[0]),) + bx[1:]
            dm = (max(dims[0], bx[0] * 2 + 8),) + dims[1:]
            whole = tuple(min(b, d) for b, d in zip(bx, dm))
            cases.append(_load_case(f"rank{r}_{dt.lower()}_{sw}", "rank",
                                    f"rank-{r} {dt} load, swizzle {sw}: an interior box, one at the origin, and the "
                                    "last box of the tensor", dt, dm,
                                    [c, (0,) * r, tuple(d - b for d, b in zip(dm, whole))], bx, swizzle=sw))
    cases.append(_load_case("load_shared_cta_dst", "rank", "tensor load with the .shared::cta destination (PTX 8.6)",
                            "FLOAT32", (40, 13), [(3, 2)], (16, 8), dst_space="shared::cta"))
    return cases


def _fam_oob():
    cases = []
    for r in range(1, 6):
        dims, box = RANK_DIMS[r], RANK_BOX[r]
        for dt, fill in (("FLOAT32", "zero"), ("FLOAT32", "nan"), ("UINT16", "zero")):
            bx = box if dt == "FLOAT32" else (box[0] * 2,) + box[1:]
            dm = (max(dims[0], bx[0] + 8),) + dims[1:]
            cases.append(_load_case(f"oob_r{r}_{dt.lower()}_{fill}", "oob",
                                    f"rank-{r} {dt}, {fill} fill: one box over the negative and one over the far "
                                    "edge of every dimension", dt, dm, _edges(dm, bx), bx, oob=fill))
    dims, box = (40, 12, 6), (16, 4, 3)
    for fill in ("zero", "nan"):
        boxes = [(-3, -2, -1), (30, 10, 5), (-100, 0, 0), (0, 50, 0), (0, 0, -7), (40, 12, 6), (-16, -4, -3),
                 (24, 8, 3)]
        cases.append(_load_case(f"oob_corners_f32_{fill}", "oob",
                                f"rank-3 f32 {fill} fill: both corners, wholly OOB boxes in each dim and exactly "
                                "past the end, boxes ending exactly at the edges", "FLOAT32", dims, boxes, box,
                                oob=fill))
        cases.append(_load_case(f"oob_bigbox_f32_{fill}", "oob",
                                f"box larger than the tensor in every dim ({fill} fill): both edges at once",
                                "FLOAT32", (8, 3, 2), [(-2, -1, -1)], (16, 6, 5), oob=fill))
        cases.append(_load_case(f"oob_extreme_f32_{fill}", "oob",
                                f"coordinates near the s32 limits ({fill} fill): the box never wraps into the "
                                "tensor if the hardware computes in wider arithmetic", "FLOAT32", (32, 8),
                                [(-2 ** 31, 0), (2 ** 31 - 8, 0), (0, -2 ** 31), (0, 2 ** 31 - 4),
                                 (-2 ** 31 + 4, 2 ** 31 - 2)], (8, 4), oob=fill, expect="probe"))
    for dt in ("FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"):
        es = _esize(dt)
        inner = 32 // es
        cases.append(_load_case(f"oob_nan_{dt.lower()}", "oob",
                                f"NAN_REQUEST_ZERO_FMA fill bit pattern of {dt} (recorded {MODEL_NAN[es]:#x}): a box "
                                "over both corners and a wholly OOB box", dt, (inner * 3, 9),
                                [(-inner // 2, -2), (inner * 3 - inner // 2, 7), (-inner * 4, 0)], (inner, 4),
                                oob="nan", expect="probe"))
    for sw, dt, fill in (("128B", "FLOAT32", "nan"), ("64B", "UINT8", "zero"), ("32B", "BFLOAT16", "nan")):
        es = _esize(dt)
        inner = SPAN[sw] // es
        dims = (inner * 2 + 5, 20)
        cases.append(_load_case(f"oob_swizzle{sw}_{dt.lower()}_{fill}", "oob",
                                f"OOB fill under swizzle {sw}", dt, dims, _edges(dims, (inner, 12)), (inner, 12),
                                swizzle=sw, oob=fill))
    return cases


def _fam_dtype():
    cases = []
    for dt in ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT64",
               "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"):
        es = _esize(dt)
        inner = 64 // es
        probe = dt in ("FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ")
        cases.append(_load_case(f"dtype_{dt.lower()}", "dtype",
                                f"{dt} load of random bit patterns with NaN payloads, infinities and subnormals"
                                + (": does the TMA convert (round to tf32 / flush subnormals) or move bits?"
                                   if probe else ": bits move unchanged"), dt, (inner * 2, 12),
                                [(inner // 2, 1), (inner, 6)], (inner, 6), expect="probe" if probe else "ok"))
    return cases


def _fam_estride():
    cases = [
        _load_case("estride_r2_f32", "estride", "rank-2 f32, elementStrides (1, 2), box rows 7 -> 4 rows moved",
                   "FLOAT32", (24, 30), [(2, 1), (4, 25)], (8, 7), estr=(1, 2)),
        _load_case("estride_r3_u16", "estride", "rank-3 u16, elementStrides (1, 3, 2), boxes not multiples of the "
                   "strides, strided elements crossing the far edge", "UINT16", (32, 20, 9),
                   [(0, 0, 0), (8, 15, 6), (16, -4, -3)], (16, 7, 5), estr=(1, 3, 2)),
        _load_case("estride_r5_u8", "estride", "rank-5 u8, element strides up to 8", "UINT8", (32, 17, 5, 9, 4),
                   [(0, 1, 0, 0, 0), (16, 9, 2, 3, 1)], (16, 9, 3, 8, 2), estr=(1, 8, 2, 4, 1)),
        _load_case("estride_swizzle128_f32", "estride", "element strides with the 128B swizzle", "FLOAT32",
                   (64, 40), [(8, 3), (40, 30)], (32, 12), estr=(1, 3), swizzle="128B"),
        _load_case("estride_dim0_f32", "estride", "elementStrides[0] = 2 without interleave: ignored (tma.md §3) or "
                   "refused by the driver?", "FLOAT32", (48, 10), [(4, 2)], (16, 4), estr=(2, 1), expect="probe"),
        _load_case("estride_dim0_8_u16", "estride", "elementStrides[0] = 8 without interleave", "UINT16", (64, 6),
                   [(8, 1)], (16, 4), estr=(8, 1), expect="probe"),
        _load_case("estride_r4_f64_nan", "estride", "rank-4 f64, element strides with NaN fill over the edges",
                   "FLOAT64", (8, 9, 7, 3), [(-2, -3, 0, 0), (4, 6, 5, 2)], (4, 5, 4, 2), estr=(1, 2, 3, 1),
                   oob="nan"),
    ]
    return cases


def _store_case(name, family, note, dtype, dims, boxes, box, estr=None, swizzle="none", phase=0, expect="ok",
                content="random", redop=None, old="sentinel", byte_offset=0, timeout=40.0, raw_c0=False):
    """One map over one padded tensor (initially ``old``); one store (or reduce) per box, sources in separate
    SMEM slots filled with ``content`` (random bits, or a callable (rng, old_box_values, inb) -> values); dim-0
    coordinates rounded down to 16 bytes unless ``raw_c0``."""
    if not raw_c0:
        boxes = [align_c0(c, dtype) for c in boxes]
    rng = _rng(name)
    t, strides = make_tensor(rng, dtype, dims, content=old)
    m = spec_for(0, dtype, dims, strides, box, estr, swizzle, "zero", byte_offset)
    slots = _Slots()
    offs = [slots.take(m.footprint, phase) for _ in boxes]
    img = np.zeros((1, slots.size), dtype=np.uint8)
    img[0] = rng.integers(0, 256, slots.size, dtype=np.uint8)
    es = m.esize
    flat = t.reshape(-1).view(np.uint8)
    for off, c in zip(offs, boxes):
        boffs, inb = box_geometry(m, c)
        if callable(content):
            oldv = np.zeros(inb.size, dtype=_UINT[es])
            good = np.nonzero(inb)[0]
            if good.size:
                idx = boffs[good][:, None] + np.arange(es)
                oldv[good] = flat[idx].copy().view(_UINT[es]).reshape(-1)
            vals = np.asarray(content(rng, oldv, inb), dtype=_UINT[es])
        else:
            vals = _random_bits(rng, dtype, inb.size)
        place(img[0], off, vals.view(np.uint8), swizzle, m.box[0] * es)
    kind = "tstore" if redop is None else "treduce"
    ops = [Op(kind, smem=o, map=0, coords=tuple(c), redop=redop) for o, c in zip(offs, boxes)]
    return TmaCase(name, family, note, [t], [m], ops, img, dump=False, expect=expect, timeout=timeout)


def _fam_store():
    cases = []
    for sw in SWIZZLES:
        for dt in ("FLOAT32", "UINT16") + (("FLOAT64", "UINT8") if sw == "128B" else ()):
            es = _esize(dt)
            inner = SPAN[sw] // es
            dims = (inner * 2 + 3, 20)
            cases.append(_store_case(f"store_{sw}_{dt.lower()}", "store",
                                     f"TMA store of a {sw}-swizzled SMEM image ({dt}), interior box and one over the "
                                     "far corner (OOB elements dropped)", dt, dims,
                                     [(2, 1), (dims[0] - inner // 2, 20 - 5)], (inner, 12), swizzle=sw))
    for r in range(1, 6):
        dims, box = RANK_DIMS[r], RANK_BOX[r]
        far = [tuple(dims[i] - box[i] // 2 if i == d else max(0, (dims[i] - box[i]) // 2) for i in range(r))
               for d in range(r)]
        corner = tuple(d - max(1, b // 2) for d, b in zip(dims, box))
        inner = tuple(max(0, (d - b) // 2) for d, b in zip(dims, box))
        boxes = [inner] + far + [corner]
        cases.append(_store_case(f"store_r{r}_f32", "store",
                                 f"rank-{r} f32 stores: an interior box, one over the far edge of each dim, the far "
                                 "corner (OOB elements dropped)", "FLOAT32", dims, boxes, box))
    dims, box = (24, 10, 5), (8, 4, 3)
    for d in range(3):
        c = [8, 3, 1]
        c[d] = -(box[d] // 2 + 1)
        cases.append(_store_case(f"store_neg_r3_d{d}", "store",
                                 f"store whose start coordinate c{d} is negative: PTX §9.7.9.25.5.1 asks for "
                                 "non-negative starts; the H100 stops with an illegal instruction", "FLOAT32",
                                 dims, [tuple(c)], box, expect="fault"))
    cases.append(_store_case("store_neg_r1", "store", "rank-1 store starting at -8", "UINT16", (64,), [(-8,)],
                             (32,), expect="fault"))
    cases.append(_store_case("store_wholly_oob", "store", "stores entirely past the end (nothing written)",
                             "FLOAT32", (16, 8), [(16, 0), (0, 8), (100, 100)], (8, 4)))
    cases.append(_store_case("store_estride_f32", "store", "store through a map with element strides (1, 2)",
                             "FLOAT32", (16, 20), [(0, 1), (8, 15)], (8, 7), estr=(1, 2), expect="probe"))
    for sw, off in (("128B", 128), ("128B", 512), ("64B", 256), ("32B", 128)):
        cases.append(_store_case(f"store_phase_{sw}_at{off}", "store",
                                 f"store from a {sw}-swizzled image at SMEM offset {off} (not on the pattern repeat)",
                                 "FLOAT32", (64, 30), [(4, 2)], (SPAN[sw] // 4, 20), swizzle=sw, phase=off,
                                 expect="probe"))
    for sw, rb in (("128B", 64), ("64B", 32), ("32B", 16)):
        cases.append(_store_case(f"store_narrow_{sw}_{rb}", "store",
                                 f"store from a {sw}-swizzled image with {rb}-byte rows (narrower than the span: each "
                                 "row read from its own span, as loads write them?)", "FLOAT32", (40, 20),
                                 [(0, 1), (24, 12)], (rb // 4, 8), swizzle=sw, expect="probe"))
    for dt in ("FLOAT32_FTZ", "TFLOAT32", "BFLOAT16", "FLOAT16", "INT64"):
        es = _esize(dt)
        cases.append(_store_case(f"store_dtype_{dt.lower()}", "store",
                                 f"{dt} store of NaN payloads / subnormals / random bits: bits unchanged?", dt,
                                 (64 // es * 2, 8), [(64 // es // 2, 1)], (64 // es, 6),
                                 expect="probe" if "FTZ" in dt or "TF" in dt else "ok"))
    return cases


# ---- reduce operand generators (rng, old values of the box elements, in-bounds) -> source values
def _red_values(dtype: str, redop: str):
    es = _esize(dtype)
    ut = _UINT[es]
    bits = 8 * es

    def gen(rng, old, inb):
        n = old.size
        v = rng.integers(0, 1 << bits, size=n, dtype=np.uint64 if es == 8 else np.int64).astype(ut)
        k = np.arange(n)
        if redop in ("inc", "dec"):
            v = rng.integers(0, 9, size=n).astype(ut)
            v[k % 5 == 0] = old[k % 5 == 0]                         # old == src
            v[k % 7 == 0] = ut((1 << bits) - 1)
            return v
        if dtype in ("FLOAT32", "FLOAT16", "BFLOAT16", "FLOAT32_FTZ", "FLOAT64"):
            return _float_red_src(rng, dtype, old, redop)
        if redop in ("min", "max"):
            v[k % 4 == 0] = old[k % 4 == 0]
            v[k % 4 == 1] = old[k % 4 == 1] ^ ut(1 << (bits - 1))   # sign flips
        return v

    return gen


def _float_red_src(rng, dtype, old, redop):
    """Source values paired with the old ones: random bits, same-exponent neighbours (rounding), negations
    (cancellation to zero / subnormal), subnormals, and a table of special pairs."""
    es = _esize(dtype)
    ut = _UINT[es]
    n = old.size
    mant = MANTISSA[dtype]
    sign = ut(1 << (8 * es - 1))
    v = rng.integers(0, 1 << (8 * es), size=n, dtype=np.uint64 if es == 8 else np.int64).astype(ut)
    k = np.arange(n)
    near = old ^ rng.integers(0, 1 << mant, size=n, dtype=np.int64).astype(ut)       # same exponent
    v = np.where(k % 6 == 1, near, v)
    v = np.where(k % 6 == 2, near ^ sign, v)                                          # cancellation
    sub = rng.integers(0, 1 << mant, size=n, dtype=np.int64).astype(ut) | (v & sign)
    v = np.where(k % 6 == 3, sub, v)                                                  # subnormal sources
    shift = old + (rng.integers(1, 4, size=n).astype(ut) << ut(mant))                # exponents 1..3 apart
    v = np.where(k % 6 == 4, shift.astype(ut), v)
    sp = _specials(dtype)
    j = np.nonzero(k % 6 == 5)[0]
    v[j] = sp[rng.integers(0, sp.size, size=j.size)]
    return v


def _red_old(dtype: str):
    def gen(rng, n):
        v = _random_bits(rng, dtype, n)
        if DATA_TYPES[dtype].is_float:
            es = _esize(dtype)
            mant = MANTISSA[dtype]
            k = np.arange(n)
            sub = rng.integers(0, 1 << mant, size=n, dtype=np.int64).astype(_UINT[es])
            v = np.where(k % 9 == 3, sub, v).astype(_UINT[es])                        # subnormal old values
        return v
    return gen


def _fam_reduce():
    cases = []
    for redop in REDOPS:
        for dt in RED_TYPES[redop]:
            es = _esize(dt)
            inner = 64 // es
            dims = (inner * 2 - 3, 10)
            boxes = [(0, 0), (inner // 2, 2), (dims[0] - inner // 2, 7)]
            cases.append(_store_case(f"reduce_{redop}_{dt.lower()}", "reduce",
                                     f"cp.reduce.async.bulk.tensor .{redop} on {dt}: three overlapping boxes in "
                                     "order (the last over the far corner: OOB dropped)", dt, dims, boxes,
                                     (inner, 6), redop=redop, old=_red_old(dt), content=_red_values(dt, redop)))
    cases.append(_store_case("reduce_add_f32_swizzle128", "reduce", ".add f32 from a 128B-swizzled image",
                             "FLOAT32", (40, 20), [(3, 2), (20, 16)], (32, 8), swizzle="128B", redop="add",
                             old=_red_old("FLOAT32"), content=_red_values("FLOAT32", "add")))
    cases.append(_store_case("reduce_add_u32_r5", "reduce", "rank-5 .add u32 with the far-corner box",
                             "UINT32", RANK_DIMS[5], [(0, 0, 0, 0, 0), (12, 2, 3, 2, 1)], RANK_BOX[5], redop="add",
                             old=_red_old("UINT32"), content=_red_values("UINT32", "add")))
    cases.append(_store_case("reduce_neg_start_u32", "reduce", ".add u32 with a negative start coordinate",
                             "UINT32", (32, 8), [(-4, 2)], (16, 4), redop="add", expect="fault",
                             old=_red_old("UINT32"), content=_red_values("UINT32", "add")))
    for dt in ("FLOAT64", "FLOAT32_FTZ"):
        es = _esize(dt)
        inner = 64 // es
        cases.append(_store_case(f"reduce_add_{dt.lower()}", "reduce",
                                 f".add with a {dt} map: not in the PTX table, but the H100 performs it (first "
                                 "record); NaN operands, infinities, subnormals, cancellation", dt,
                                 (inner * 2 - 2, 10), [(0, 0), (inner // 2, 2), (inner, 5)], (inner, 6),
                                 redop="add", expect="probe", old=_red_old(dt), content=_red_values(dt, "add")))
    for redop, dt in (("add", "INT64"), ("min", "FLOAT32"), ("max", "FLOAT32"), ("inc", "UINT64"),
                      ("and", "FLOAT32"), ("add", "UINT16"), *sorted(RED_H100_ILLEGAL)):
        es = _esize(dt)
        cases.append(_store_case(f"reduce_bad_{redop}_{dt.lower()}", "reduce",
                                 f".{redop} with a {dt} map: not in the PTX table (tcsim refuses it); what does the "
                                 "H100 do?", dt, (64 // es, 4), [(0, 0)], (64 // es, 4), redop=redop,
                                 expect="fault", timeout=20.0, old=_red_old(dt), content=_red_values(dt, redop)))
    return cases


def _fam_multicast():
    cases = []

    def mc(name, note, ncta, issues, swizzle="none", dtype="FLOAT32", oob="zero", dims=(64, 24), box=(32, 8),
           expect="ok"):
        """issues: list of (issuing rank, coords, ctaMask); each box gets its own slot (same offset in all CTAs)."""
        rng = _rng(name)
        t, strides = make_tensor(rng, dtype, dims)
        m = spec_for(0, dtype, dims, strides, box, None, swizzle, oob)
        slots = _Slots()
        ops = [Op("tload", rank=r, smem=slots.take(m.box_bytes), map=0, coords=c, mask=mask) for r, c, mask in issues]
        return TmaCase(name, "multicast", note, [t], [m], ops, _img_fill(ncta, slots.size), ncta=ncta, expect=expect)

    cases.append(mc("mcast2_all", "cluster of 2: CTA 0 multicasts one box to both (ctaMask 0b11)", 2,
                    [(0, (4, 3), 0b11)]))
    cases.append(mc("mcast2_other", "cluster of 2: CTA 0 multicasts to CTA 1 only (issuer not in the mask)", 2,
                    [(0, (4, 3), 0b10)]))
    cases.append(mc("mcast4_all_128B", "cluster of 4: CTA 0 multicasts a 128B-swizzled box to all", 4,
                    [(0, (8, 5), 0xF)], swizzle="128B"))
    cases.append(mc("mcast4_subset", "cluster of 4: CTA 1 multicasts to CTAs 0 and 2; CTA 2 to CTAs 1, 2, 3", 4,
                    [(1, (0, 0), 0b0101), (2, (16, 9), 0b1110)]))
    cases.append(mc("mcast4_slices", "cluster of 4: each CTA multicasts its own slice to all (the CUTLASS pattern)",
                    4, [(r, (0, 8 * r - 4), 0xF) for r in range(4)], swizzle="64B", dtype="UINT16", box=(32, 8)))
    cases.append(mc("mcast4_oob_nan", "cluster of 4: multicast of a box over the corner, NaN fill", 4,
                    [(3, (48, 20), 0b1011)], oob="nan"))
    cases.append(mc("mcast2_mask_beyond_cluster", "cluster of 2: ctaMask 0b111 names a CTA outside the cluster", 2,
                    [(0, (0, 0), 0b111)], expect="fault"))
    name = "peer_tload_cluster2"
    rng = _rng(name)
    t, strides = make_tensor(rng, "FLOAT32", (64, 24))
    m = spec_for(0, "FLOAT32", (64, 24), strides, (32, 8), None, "128B")
    cases.append(TmaCase(name, "multicast", "cluster of 2: each CTA loads a box into the OTHER CTA's shared memory "
                         "(no multicast; destination and mbarrier through mapa)", [t], [m],
                         [Op("tload", rank=0, smem=0, map=0, coords=(0, 3), peer=1),
                          Op("tload", rank=1, smem=1024, map=0, coords=(40, 20), peer=0)],
                         _img_fill(2, 2048), ncta=2, expect="probe"))
    name = "peer_bload_cluster2"
    t = _rng(name).integers(0, 256, 4096, dtype=np.uint8)
    cases.append(TmaCase(name, "multicast", "cluster of 2: non-tensor global -> shared::cluster of the other CTA",
                         [t], [], [Op("bload", rank=0, smem=0, tensor=0, goff=512, size=256, peer=1),
                                   Op("bload", rank=1, smem=1024, tensor=0, goff=2048, size=96, peer=0)],
                         _img_fill(2, 2048), ncta=2, expect="probe"))
    # non-tensor multicast
    for ncta, mask in ((2, 0b11), (4, 0b1011)):
        name = f"mcast{ncta}_bulk_{mask:x}"
        rng = _rng(name)
        t = rng.integers(0, 256, 8192, dtype=np.uint8)
        ops = [Op("bload", rank=0, smem=0, tensor=0, goff=256, size=1024, mask=mask),
               Op("bload", rank=ncta - 1, smem=2048, tensor=0, goff=4096 + 48, size=160, mask=mask)]
        cases.append(TmaCase(name, "multicast", f"cluster of {ncta}: non-tensor cp.async.bulk .multicast::cluster "
                             f"(ctaMask 0x{mask:x}), 1024 and 160 bytes", [t], [], ops, _img_fill(ncta, 4096),
                             ncta=ncta))
    return cases


def _fam_bulk():
    cases = []
    rng = _rng("bulk")
    t = rng.integers(0, 256, 16384, dtype=np.uint8)
    sizes = [(16, 0, 0), (48, 16, 1024), (1024, 4096, 2048), (4096, 8192 + 32, 4096), (208, 3 * 1024 + 48, 9216)]
    cases.append(TmaCase("bulk_g2s_cluster", "bulk", "global -> shared::cluster (own CTA): 16, 48, 1024, 4096 and "
                         "208 bytes at various 16-byte aligned offsets", [t.copy()], [],
                         [Op("bload", smem=s, tensor=0, goff=g, size=n) for n, g, s in sizes],
                         _img_fill(1, 16384)))
    cases.append(TmaCase("bulk_g2s_cta", "bulk", "global -> shared::cta (PTX 8.6 form)", [t.copy()], [],
                         [Op("bload", smem=s, tensor=0, goff=g, size=n, dst_space="shared::cta")
                          for n, g, s in sizes[:3]], _img_fill(1, 4096)))
    out = np.full(8192, SENTINEL, dtype=np.uint8)
    img = _rng("bulk_s2g").integers(0, 256, (1, 8192), dtype=np.uint8)
    cases.append(TmaCase("bulk_s2g", "bulk", "shared::cta -> global: 16, 80, 2048 and 4096 bytes, in order",
                         [out], [], [Op("bstore", smem=s, tensor=0, goff=g, size=n)
                                     for n, g, s in ((16, 0, 0), (80, 32, 512), (2048, 1024, 2048),
                                                     (4096, 4096, 4096))],
                         img, dump=False))
    for ncta in (2, 4):
        img = _rng(f"bulk_s2s{ncta}").integers(0, 256, (ncta, 4096), dtype=np.uint8)
        ops = [Op("s2s", rank=r, smem=0, size=1024 + 16 * r, dst_rank=(r + 1) % ncta, dst_smem=2048)
               for r in range(ncta)]
        cases.append(TmaCase(f"bulk_s2s_cluster{ncta}", "bulk",
                             f"shared::cta -> shared::cluster around a ring of {ncta} CTAs (mbarrier in the "
                             "destination CTA)", [], [], ops, img, ncta=ncta))
    t2 = rng.integers(0, 256, 4096, dtype=np.uint8)
    cases.append(TmaCase("bulk_fault_size24", "fault", "cp.async.bulk of 24 bytes (not a multiple of 16)",
                         [t2.copy()], [], [Op("bload", smem=0, tensor=0, goff=0, size=24)], _img_fill(1, 1024),
                         expect="fault", timeout=20.0))
    cases.append(TmaCase("bulk_fault_misaligned_global", "fault", "cp.async.bulk from global address +8",
                         [t2.copy()], [], [Op("bload", smem=0, tensor=0, goff=8, size=64)], _img_fill(1, 1024),
                         expect="fault", timeout=20.0))
    cases.append(TmaCase("bulk_fault_misaligned_smem", "fault", "cp.async.bulk into SMEM offset +8",
                         [t2.copy()], [], [Op("bload", smem=8, tensor=0, goff=0, size=64)], _img_fill(1, 1024),
                         expect="fault", timeout=20.0))
    return cases


def _fam_fault():
    cases = []
    for sw in SWIZZLES:
        cases.append(_load_case(f"fault_smem_misaligned_{sw}", "fault",
                                f"tensor load into SMEM offset 8 (not 16-byte aligned), swizzle {sw}", "FLOAT32",
                                (64, 20), [(0, 0)], (SPAN[sw] // 4, 8), swizzle=sw, phase=8, expect="fault",
                                timeout=20.0))
    for off in (16, 64):
        cases.append(_store_case(f"fault_store_smem_at{off}", "fault",
                                 f"tensor store from SMEM offset {off} (16-byte aligned, not 128)", "FLOAT32",
                                 (64, 20), [(0, 0)], (16, 8), phase=off, expect="fault", timeout=20.0))
        cases.append(_load_case(f"fault_smem_at{off}_64B", "fault",
                                f"64B-swizzled tensor load into SMEM offset {off} (16-byte aligned, not 128)",
                                "FLOAT32", (64, 20), [(0, 0)], (16, 8), swizzle="64B", phase=off, expect="fault",
                                timeout=20.0))
    for sw in ("none", "128B"):
        case = _store_case(f"fault_store_smem_misaligned_{sw}", "fault",
                           f"tensor store from SMEM offset 8, swizzle {sw}", "FLOAT32", (64, 20), [(0, 0)],
                           (SPAN[sw] // 4, 8), swizzle=sw, phase=8, expect="fault", timeout=20.0)
        cases.append(case)
    drv = [
        ("global_addr_plus8", dict(byte_offset=8), "global address 8 bytes past a 256-byte aligned buffer"),
        ("global_addr_plus4", dict(byte_offset=4), "global address 4 bytes past a 256-byte aligned buffer"),
        ("stride_not16", dict(strides=(72,)), "globalStrides[0] = 72 (not a multiple of 16)"),
        ("box_inner_12B", dict(box=(3, 4)), "boxDim[0] * 4 = 12 bytes (not a multiple of 16)"),
        ("box_257", dict(box=(4, 257), dims=(32, 300)), "boxDim[1] = 257 (> 256)"),
        ("span_128B_256rows", dict(box=(64, 4), swizzle="128B"), "128B swizzle with a 256-byte inner box row"),
        ("span_32B_64rows", dict(box=(16, 4), swizzle="32B"), "32B swizzle with a 64-byte inner box row"),
        ("estride_9", dict(estr=(1, 9)), "elementStrides[1] = 9 (> 8)"),
        ("nan_fill_u32", dict(dtype="UINT32", oob="nan"), "NAN_REQUEST_ZERO_FMA on a UINT32 map"),
        ("global_dim_0", dict(dims=(32, 0)), "globalDim[1] = 0"),
    ]
    for tag, kw, note in drv:
        dims = kw.get("dims", (32, 16))
        dt = kw.get("dtype", "FLOAT32")
        rng = _rng(f"map_{tag}")
        t, strides = make_tensor(rng, dt, (dims[0], max(dims[1], 1)))
        m = spec_for(0, dt, dims, kw.get("strides", strides), kw.get("box", (8, 4)), kw.get("estr"),
                     kw.get("swizzle", "none"), kw.get("oob", "zero"), kw.get("byte_offset", 0))
        slots = _Slots()
        ops = [Op("tload", smem=slots.take(min(m.box_bytes, 32768)), map=0, coords=(0, 0))]
        cases.append(TmaCase(f"map_{tag}", "fault", f"cuTensorMapEncodeTiled must refuse: {note}", [t], [m], ops,
                             _img_fill(1, min(slots.size, 32768)), expect="driver", timeout=20.0))
    for tag, dt, c in (("load_f32_c1", "FLOAT32", (1, 2)), ("load_u16_c4", "UINT16", (4, 0)),
                       ("load_u8_c8", "UINT8", (8, 1)), ("load_f64_c1", "FLOAT64", (1, 0)),
                       ("load_f32_cneg1", "FLOAT32", (-1, 0))):
        es = _esize(dt)
        cases.append(_load_case(f"fault_inner_coord_{tag}", "fault",
                                f"tile load whose c0 = {c[0]} puts the box {c[0] * es} bytes into a row (not a "
                                "multiple of 16)", dt, (64 // es * 2, 8), [c], (64 // es, 4), expect="fault",
                                timeout=20.0, raw_c0=True))
    cases.append(_load_case("fault_inner_coord_load_128B_c4", "fault",
                            "128B-swizzled f32 tile load at c0 = 4 (16 bytes: aligned, must run)", "FLOAT32",
                            (64, 8), [(4, 1)], (32, 4), swizzle="128B", raw_c0=True))
    for tag, dt, c, redop in (("store_f32_c2", "FLOAT32", (2, 1), None), ("store_u16_c12", "UINT16", (12, 0), None),
                              ("reduce_u32_c3", "UINT32", (3, 0), "add")):
        es = _esize(dt)
        cases.append(_store_case(f"fault_inner_coord_{tag}", "fault",
                                 f"tile {'reduce' if redop else 'store'} whose c0 = {c[0]} is {c[0] * es} bytes into "
                                 "a row (not a multiple of 16)", dt, (64 // es * 2, 8), [c], (64 // es, 4),
                                 redop=redop, expect="fault", timeout=20.0, raw_c0=True,
                                 **({"old": _red_old(dt), "content": _red_values(dt, redop)} if redop else {})))
    cases.append(_load_case("fault_narrow_swizzle_past_smem", "fault",
                            "128B-swizzled u16 box of 32 x 32 (64-byte rows): 2 KiB of data spanning 4 KiB of SMEM "
                            "(rows padded to the span) in a 2 KiB shared memory", "UINT16", (64, 40), [(0, 0)],
                            (32, 32), swizzle="128B", slot=2048, expect="fault", timeout=20.0))
    cases.append(_load_case("fault_dim_mismatch_3d_on_rank2", "fault",
                            "a .3d load through a rank-2 map", "FLOAT32", (32, 16), [(0, 0, 0)], (8, 4), dim=3,
                            expect="fault", timeout=20.0))
    cases.append(_load_case("fault_dim_mismatch_2d_on_rank3", "fault",
                            "a .2d load through a rank-3 map", "FLOAT32", (32, 16, 4), [(0, 0)], (8, 4, 2), dim=2,
                            expect="fault", timeout=20.0))
    return cases


FAMILIES = {"swizzle": _fam_swizzle, "phase": _fam_phase, "rank": _fam_rank, "oob": _fam_oob, "dtype": _fam_dtype,
            "estride": _fam_estride, "store": _fam_store, "reduce": _fam_reduce, "multicast": _fam_multicast,
            "bulk": _fam_bulk, "fault": _fam_fault}
_CACHE: dict = {}


def all_cases() -> dict:
    """name -> :class:`TmaCase`, every family, deterministic."""
    if not _CACHE:
        for make in FAMILIES.values():
            for c in make():
                if c.name in _CACHE:
                    raise ValueError(f"duplicate case name {c.name}")
                if c.smem > 48 * 1024 - 16:
                    raise ValueError(f"case {c.name} needs {c.smem} bytes of static shared memory")
                _CACHE[c.name] = c
    return dict(_CACHE)


def select(patterns=None) -> list:
    cases = all_cases()
    if not patterns:
        return list(cases.values())
    out = [c for c in cases.values() if any(fnmatch.fnmatchcase(c.name, p) or c.family == p for p in patterns)]
    if not out:
        raise SystemExit(f"no case matches {patterns}")
    return out


# ================================================================================================ the model
def model_swizzle(a, mode: str):
    """tma.md §4 (absolute SMEM byte addresses; written out here independently of isa/swizzle.py)."""
    a = np.asarray(a, dtype=np.int64)
    line = a >> 7
    terms = {"none": (), "32B": ((1, 4),), "64B": ((3, 4),), "128B": ((7, 4),), "128B_atom_32B": ((3, 5),),
             "128B_atom_32B_flip_8B": ((3, 5), (1, 3)), "128B_atom_64B": ((1, 6),)}[mode]
    out = a.copy()
    for mask, shift in terms:
        out ^= (line & mask) << shift
    return out


def box_geometry(m: MapSpec, coords, granules: bool = False):
    """(byte offsets from the tensor's base, in-bounds flags) of every box element, image order (dim 0 fastest).
    ``granules``: the rows of stores and reductions end at the 16-byte granule holding their last element (the
    H100 writes whole granules: store_* / reduce_* of the first record wrote past globalDim[0])."""
    r = m.rank
    offs = np.zeros((), dtype=np.int64)
    inb = np.ones((), dtype=bool)
    n = m.n
    for d in range(r - 1, -1, -1):
        step = 1 if d == 0 else m.estr[d]
        g = np.int64(coords[d]) + np.arange(n[d], dtype=np.int64) * step
        stride = m.esize if d == 0 else m.strides[d - 1]
        offs = offs[..., None] + g * np.int64(stride)
        end = -(-m.dims[0] * m.esize // 16) * 16 // m.esize if (granules and d == 0) else m.dims[d]
        inb = inb[..., None] & (g >= 0) & (g < end)
    return offs.reshape(-1) + m.byte_offset, inb.reshape(-1)


def image_addresses(off: int, nbytes: int, mode: str, row: int | None = None) -> np.ndarray:
    """SMEM offsets of the ``nbytes`` image bytes of a box whose inner rows are ``row`` bytes: under a swizzle
    whose span is wider than the row, each row starts on a span boundary (the rest of the span is not touched:
    first H100 record, swizzle_*_narrow* and rank*_uint16_128B), then the swizzle permutes absolute addresses."""
    k = np.arange(nbytes, dtype=np.int64)
    span = SWIZZLE_SPAN.get(mode) or 0
    if row and row < span:
        k = k // row * span + k % row
    return model_swizzle(off + k, mode)


def place(smem_row: np.ndarray, off: int, data: np.ndarray, mode: str, row: int | None = None):
    """Write image bytes ``data`` at SMEM offset ``off`` through swizzle ``mode`` (buf is 1024-aligned)."""
    smem_row[image_addresses(off, data.size, mode, row)] = data


def gather(smem_row: np.ndarray, off: int, nbytes: int, mode: str, row: int | None = None) -> np.ndarray:
    return smem_row[image_addresses(off, nbytes, mode, row)]


def _float_view(dtype: str):
    import ml_dtypes

    return {"FLOAT16": np.float16, "BFLOAT16": ml_dtypes.bfloat16, "FLOAT32": np.float32,
            "FLOAT32_FTZ": np.float32}.get(dtype)


def model_tf32(u: np.ndarray) -> np.ndarray:
    """A TFLOAT32 load of f32 bit patterns ``u`` as the first H100 record showed it: each value rounded to a 10-bit
    mantissa, to nearest even, in float arithmetic (quantum 2^(e-10), e = max(exponent, -126)), no subnormal
    flush, infinities kept, NaN -> :data:`TF32_LOAD_NAN`.  Written independently of the simulator's bit-level
    :func:`tcsim.semantics.bulk_tensor.tf32_image`."""
    with np.errstate(invalid="ignore"):                 # signalling NaNs
        x = u.view(np.float32).astype(np.float64)
    out = np.empty(u.size, dtype=np.uint32)
    for i, v in enumerate(x):
        if np.isnan(v):
            out[i] = TF32_LOAD_NAN
        elif np.isinf(v) or v == 0:
            out[i] = u[i]
        else:
            e = max(int(np.frexp(v)[1]) - 1, -126)
            q = 2.0 ** (e - 10)
            with np.errstate(over="ignore"):
                out[i] = np.array([np.round(v / q) * q], dtype=np.float32).view(np.uint32)[0]
    return out


def model_reduce(redop: str, dtype: str, old: np.ndarray, src: np.ndarray) -> np.ndarray:
    """Element-wise ``old <redop> src`` (uint views of the map's type), PTX semantics: integer ops wrap; inc/dec
    as atom.inc/dec; float add rounds to nearest even once, subnormals kept; f16/bf16 min/max: a NaN loses to a
    number, two NaNs give the canonical NaN, -0 < +0.

    Part of the documented model: written from the PTX ISA (tma.md §2), deliberately independent of the
    simulator's ``tcsim.semantics.bulk_tensor.reduce_elements`` (scalar integer arithmetic, its own NaN
    assumption :data:`RED_NAN`), so that ``check`` compares two readings of the documentation."""
    es = _esize(dtype)
    ut = _UINT[es]
    top = (1 << (8 * es)) - 1
    if dtype == "FLOAT64" and redop == "add":
        # not in the PTX table; the first H100 record: an f64 add, a NaN operand kept as is (old first)
        x, y = old.view(np.float64), src.view(np.float64)
        with np.errstate(all="ignore"):
            r = (x + y).view(ut).copy()
        r[np.isnan(y)] = src[np.isnan(y)]
        r[np.isnan(x)] = old[np.isnan(x)]
        return r
    if dtype in ("FLOAT32", "FLOAT32_FTZ", "FLOAT16", "BFLOAT16"):
        ft = _float_view(dtype)
        if dtype == "FLOAT32_FTZ":               # first record: operands and result flushed, sign kept
            def flush(v):
                return np.where((v & ut(0x7F800000)) == 0, v & ut(0x80000000), v).astype(ut)
            old, src = flush(old), flush(src)
        x, y = old.view(ft), src.view(ft)
        if redop == "add":                 # a NaN result is assumed canonical (as the FADD unit makes it)
            with np.errstate(all="ignore"):
                if dtype in ("FLOAT32", "FLOAT32_FTZ"):
                    s = x + y
                    r = s.view(ut).copy()
                    if dtype == "FLOAT32_FTZ":
                        r = flush(r)
                else:
                    s = x.astype(np.float64) + y.astype(np.float64)     # exact for 16-bit types
                    r = s.astype(ft).view(ut).copy()
            r[np.isnan(s)] = RED_NAN[es]
            return r
        with np.errstate(all="ignore"):
            xf, yf = x.astype(np.float64), y.astype(np.float64)
        pick = (yf < xf) if redop == "min" else (yf > xf)
        zeros = (xf == 0) & (yf == 0)
        sx, sy = (old >> ut(8 * es - 1)) & ut(1), (src >> ut(8 * es - 1)) & ut(1)
        pick |= zeros & ((sy > sx) if redop == "min" else (sy < sx))
        pick |= np.isnan(xf) & ~np.isnan(yf)
        pick &= ~np.isnan(yf)
        r = np.where(pick, src, old).astype(ut)
        r[np.isnan(xf) & np.isnan(yf)] = RED_NAN[es]
        return r
    signed = DATA_TYPES[dtype].kind == "int"
    xi = [int(v) for v in old]
    yi = [int(v) for v in src]
    if signed:
        def sx(v):
            return v - (1 << (8 * es)) if v >> (8 * es - 1) else v
    else:
        def sx(v):
            return v
    out = []
    for a, b in zip(xi, yi):
        if redop == "add":
            r = a + b
        elif redop == "min":
            r = a if sx(a) <= sx(b) else b
        elif redop == "max":
            r = a if sx(a) >= sx(b) else b
        elif redop == "inc":
            r = 0 if a >= b else a + 1
        elif redop == "dec":
            r = b if (a == 0 or a > b) else a - 1
        elif redop == "and":
            r = a & b
        elif redop == "or":
            r = a | b
        else:
            r = a ^ b
        out.append(r & top)
    return np.array(out, dtype=ut)


def model(case: TmaCase):
    """Outputs the documented model predicts ({key suffix: array}), or None where it predicts a fault / refusal
    (``expect`` in fault, driver)."""
    if case.expect in ("fault", "driver"):
        return None
    tensors = [t.copy() for t in case.tensors]
    smem = case.img.copy()
    for op in case.ops:
        if op.kind in ("tload", "tstore", "treduce"):
            m = case.maps[op.map]
            es = m.esize
            offs, inb = box_geometry(m, op.coords, granules=op.kind != "tload")
            flat = tensors[m.tensor].reshape(-1).view(np.uint8)
            if op.kind == "tload":
                img = np.empty((inb.size, es), dtype=np.uint8)
                if m.oob == "nan":
                    img[:] = np.frombuffer(int(MODEL_NAN[es]).to_bytes(es, "little"), dtype=np.uint8)
                else:
                    img[:] = 0
                good = np.nonzero(inb)[0]
                if good.size:
                    img[good] = flat[offs[good][:, None] + np.arange(es)]
                    if m.dtype in ("TFLOAT32", "TFLOAT32_FTZ"):
                        img[good] = model_tf32(img[good].copy().view(np.uint32).reshape(-1)).view(np.uint8) \
                            .reshape(-1, es)
                for t in _targets(op, case.ncta):
                    place(smem[t], op.smem, img.reshape(-1), m.swizzle, m.box[0] * es)
            else:
                src = gather(smem[op.rank], op.smem, m.box_bytes, m.swizzle, m.box[0] * es).reshape(-1, es)
                good = np.nonzero(inb)[0]
                if good.size:
                    idx = offs[good][:, None] + np.arange(es)
                    new = src[good]
                    if op.kind == "treduce":
                        old = flat[idx].copy().view(_UINT[es]).reshape(-1)
                        new = model_reduce(op.redop, m.dtype, old,
                                           np.ascontiguousarray(new).view(_UINT[es]).reshape(-1))
                        new = new.view(np.uint8).reshape(-1, es)
                    flat[idx] = new
        elif op.kind == "bload":
            data = tensors[op.tensor].reshape(-1).view(np.uint8)[op.goff:op.goff + op.size]
            for t in _targets(op, case.ncta):
                smem[t, op.smem:op.smem + op.size] = data
        elif op.kind == "bstore":
            tensors[op.tensor].reshape(-1).view(np.uint8)[op.goff:op.goff + op.size] = \
                smem[op.rank, op.smem:op.smem + op.size]
        elif op.kind == "s2s":
            smem[op.dst_rank, op.dst_smem:op.dst_smem + op.size] = smem[op.rank, op.smem:op.smem + op.size]
    out = np.full((case.ncta, case.out_bytes), OUT_FILL, dtype=np.uint8)
    if case.dump:
        out[:, :case.smem] = smem
    st = case.out_bytes - STATUS
    out[:, st:st + 8] = np.frombuffer(np.array([0, MARKER], dtype=np.uint32).tobytes(), dtype=np.uint8)
    res = {"out": out}
    for k in case.written_tensors():
        res[f"t{k}"] = tensors[k]
    return res


# ================================================================================================ digests
def inputs_digest(case: TmaCase) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(case.img).tobytes())
    for t in case.tensors:
        h.update(f"{t.dtype.str}{list(t.shape)}".encode())
        h.update(np.ascontiguousarray(t).tobytes())
    for m in case.maps:
        h.update(repr(dataclasses.astuple(m)).encode())
    h.update(repr(case.ops).encode())
    return h.hexdigest()


def ptx_digest(case: TmaCase) -> str:
    return sha256(case.ptx().encode())


# ================================================================================================ running
@dataclass
class RunResult:
    ok: bool
    outputs: dict = field(default_factory=dict)     # key suffix -> array
    error: str | None = None
    detail: str | None = None
    elapsed_ms: float | None = None
    wall_s: float = 0.0
    device: str | None = None
    driver: int | None = None
    cc: tuple | None = None


def _collect(case: TmaCase, outputs) -> dict:
    return {key: np.ascontiguousarray(np.asarray(outputs[i])) for key, i in case.output_args().items()}


def run_sim(case: TmaCase, seed=None) -> RunResult:
    """Simulate ``case``; a TcsimError is a result (error = 'sim:<class>'), like a CUDA error on the GPU."""
    from tcsim.isa.errors import TcsimError
    from tcsim.launch import run_launch

    t = time.time()
    try:
        res = run_launch(case.launch(), seed=seed, max_instructions=SIM_MAX_INSTRUCTIONS)
    except TcsimError as e:
        return RunResult(False, error=f"sim:{type(e).__name__}", detail=str(e), wall_s=time.time() - t)
    except Exception as e:  # noqa: BLE001 - an internal simulator error: reported, never a diagnosis
        import traceback
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return RunResult(False, error=f"sim-crash:{type(e).__name__}",
                         detail=f"internal simulator error {type(e).__name__}: {e} at {tb.filename}:{tb.lineno}",
                         wall_s=time.time() - t)
    return RunResult(True, outputs=_collect(case, res.outputs), wall_s=time.time() - t, device="tcsim")


def run_gpu(case: TmaCase) -> RunResult:
    """Run ``case`` on the GPU through hw.launcher.run_on_gpu (own child process).  GpuUnavailable propagates."""
    from tcsim.hw.launcher import GpuUnavailable, run_on_gpu

    t = time.time()
    try:
        res = run_on_gpu(case.launch(), timeout=case.timeout)
    except GpuUnavailable:
        raise
    except Exception as e:  # noqa: BLE001 - a crash of the back end on one case is that case's result
        lines = [x for x in str(e).strip().splitlines() if x.strip()]
        return RunResult(False, error="HARNESS_CRASH", detail=(lines[-1] if lines else repr(e))[:2000],
                         wall_s=time.time() - t)
    if not res.ok:
        return RunResult(False, error=res.error, detail=(res.error_detail or "")[:2000], wall_s=time.time() - t)
    return RunResult(True, outputs=_collect(case, res.outputs), elapsed_ms=res.elapsed_ms, wall_s=time.time() - t,
                     device=res.device, driver=res.driver, cc=tuple(res.compute_capability or ()))


# ================================================================================================ record
#: errors that are no answer of the GPU (the case did not run, or the harness broke on it): replays skip them
UNRECORDED = ("NOT_RUN", "HARNESS_CRASH")


def record(out_dir: Path, cases: list, backend: str = "gpu", jobs: int = 8, command: str = "", log=print,
           time_limit: float | None = None) -> dict:
    """Run ``cases`` on ``backend`` and write ``out_dir/meta.json`` and ``out_dir/outputs.npz``.  Cases not
    started within ``time_limit`` seconds are recorded as NOT_RUN (the files are always written)."""
    runner = run_gpu if backend == "gpu" else run_sim
    info = {}
    if backend == "gpu":
        from tcsim.hw.launcher import GpuUnavailable, gpu_available

        ok, why = gpu_available()
        if not ok:
            raise GpuUnavailable(why)
        info["gpu_probe"] = why
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    results: dict = {}

    def one(case):
        if time_limit is not None and time.time() - t0 > time_limit:
            return RunResult(False, error="NOT_RUN", detail=f"not started within the {time_limit} s time limit")
        r = runner(case)
        tag = "ok" if r.ok else f"{r.error}"
        st = ""
        if r.ok and "out" in r.outputs:
            st = " " + status_text(case, r.outputs["out"])
        log(f"{case.name:44s} {case.family:9s} {tag}{st} ({r.wall_s:.1f} s)")
        return r

    # the cases the documentation defines run first, as a group: a kernel that may fault the GPU (probe, fault)
    # never runs beside them
    groups = [[c for c in cases if c.expect not in ("probe", "fault")], [c for c in cases if c.expect in
                                                                          ("probe", "fault")]]
    for group in groups:
        if jobs > 1 and len(group) > 1:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                for case, r in zip(group, pool.map(one, group)):
                    results[case.name] = r
        else:
            for case in group:
                results[case.name] = one(case)
    sims = {}
    if backend == "gpu":            # tcsim's view of every case, recorded beside the GPU's (informational)
        for case in cases:
            try:
                sims[case.name] = run_sim(case)
            except Exception as e:  # noqa: BLE001 - never lose a GPU record to the simulator
                sims[case.name] = RunResult(False, error="sim-unavailable", detail=repr(e))
    arrays = {}
    meta_cases = {}
    first = next((r for r in results.values() if r.device), None)
    for case in cases:
        r = results[case.name]
        entry = {"family": case.family, "expect": case.expect, "note": case.note, "ncta": case.ncta,
                 "status": "ok" if r.ok else "error", "error": r.error, "detail": r.detail,
                 "elapsed_ms": r.elapsed_ms, "wall_s": round(r.wall_s, 3),
                 "ptx_sha256": ptx_digest(case), "inputs_sha256": inputs_digest(case), "outputs": {}}
        if r.ok:
            for key, a in r.outputs.items():
                k = f"{case.name}:{key}"
                arrays[k] = a
                entry["outputs"][key] = {"key": k, "dtype": a.dtype.str, "shape": list(a.shape), "sha256": sha256(a)}
            entry["wait_status"], entry["end_marker"] = _status_words(case, r.outputs["out"])
        sr = sims.get(case.name)
        if sr is not None:
            same = None
            if sr.ok and r.ok:
                same = all(k in sr.outputs and np.array_equal(sr.outputs[k].view(np.uint8), a.view(np.uint8))
                           for k, a in r.outputs.items())
            entry["tcsim_at_record"] = {"status": "ok" if sr.ok else "error", "error": sr.error,
                                        "diagnosis": _first_line(sr.detail)[:600] or None,
                                        "outputs_identical": same}
        meta_cases[case.name] = entry
    meta = {
        "what": "tile-mode TMA golden data (calib/tma_cases.py)",
        "backend": backend,
        "gpu": first.device if first else None,
        "driver_version": first.driver if first else None,
        "compute_capability": (f"{first.cc[0]}.{first.cc[1]}" if first and first.cc else None),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "wall_s": round(time.time() - t0, 1),
        "counts": _counts(meta_cases),
        **info,
        "cases": meta_cases,
    }
    np.savez_compressed(out_dir / OUTPUTS, **arrays)
    (out_dir / META).write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def _counts(meta_cases: dict) -> dict:
    fam: dict = {}
    for e in meta_cases.values():
        d = fam.setdefault(e["family"], {"cases": 0, "ok": 0, "error": 0})
        d["cases"] += 1
        d[e["status"]] += 1
    return fam


def _status_words(case: TmaCase, out: np.ndarray) -> tuple:
    st = case.out_bytes - STATUS
    words = np.ascontiguousarray(out[:, st:st + 8]).view(np.uint32)
    return [int(x) for x in words[:, 0]], [int(x) == MARKER for x in words[:, 1]]


def status_text(case: TmaCase, out: np.ndarray) -> str:
    wait, marker = _status_words(case, out)
    bad = [f"CTA {r}: wait {'timed out' if w == 1 else w}" for r, w in enumerate(wait) if w != 0]
    bad += [f"CTA {r}: no end marker" for r, m in enumerate(marker) if not m]
    return "[" + "; ".join(bad) + "]" if bad else ""


# ================================================================================================ compare
class RecordError(ValueError):
    """A record folder that cannot be used (one-line reason; the CLI prints it instead of a traceback)."""


def outputs_file(d: Path) -> Path:
    """The record's arrays: ``outputs.npz`` as ``record`` writes it, or ``tma_outputs.npz`` as ``install`` stores
    it.  :class:`RecordError` when neither is there."""
    for name in (OUTPUTS, INSTALLED_OUTPUTS):
        if (Path(d) / name).is_file():
            return Path(d) / name
    raise RecordError(f"{d} holds {META} but neither {OUTPUTS} nor {INSTALLED_OUTPUTS} (copy the whole record folder)")


def load_record(d: Path) -> tuple:
    """(meta, {key: array}) of a record folder; :class:`RecordError` when it is not a readable record of this
    harness."""
    d = Path(d)
    if not (d / META).is_file():
        if (d / "tma" / META).is_file():
            raise RecordError(f"{d} holds no {META}; the record folder is {d / 'tma'}")
        raise RecordError(f"{d} holds no {META}: record it with `bash calib/tma_device_run.sh OUT` on an H100")
    try:
        meta = json.loads((d / META).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordError(f"{d / META} cannot be read ({e})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("cases"), dict):
        raise RecordError(f"{d / META} is not a record of calib/tma_cases.py (it has no per-case entries)")
    p = outputs_file(d)
    try:
        with np.load(p) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise RecordError(f"{p} cannot be read as a numpy .npz archive ({e})") from None
    return meta, arrays


@dataclass
class Verdict:
    case: str
    family: str
    agree: bool
    text: str
    stale: bool = False          # the generator changed since the record (re-record)
    skipped: bool = False        # the record holds no GPU answer for this case (UNRECORDED)


def compare_case(case: TmaCase, entry: dict, arrays: dict) -> Verdict:
    """Simulate ``case`` and compare with the recorded ``entry``: bit-identical outputs when the GPU ran, a
    simulator diagnosis when the GPU reported an error."""
    if entry["status"] != "ok" and entry["error"] in UNRECORDED:
        return Verdict(case.name, case.family, False, f"no GPU answer ({entry['error']}: "
                       f"{_first_line(entry.get('detail'))}); not compared", skipped=True)
    if entry["ptx_sha256"] != ptx_digest(case) or entry["inputs_sha256"] != inputs_digest(case):
        return Verdict(case.name, case.family, False,
                       "STALE: the generator now builds a different kernel or inputs; re-record on the GPU",
                       stale=True)
    sim = run_sim(case)
    if entry["status"] != "ok":
        gpu = f"GPU: {entry['error']}" + (f" ({_first_line(entry.get('detail'))})" if entry.get("detail") else "")
        if sim.ok:
            return Verdict(case.name, case.family, False,
                           f"{gpu}; the simulator ran without error {status_text(case, sim.outputs['out'])}".rstrip())
        if sim.error.startswith("sim-crash"):
            return Verdict(case.name, case.family, False, f"{gpu}; {sim.detail}")
        refused = "cuTensorMapEncodeTiled" in (entry.get("detail") or "") or entry["error"] == "sim:LaunchError"
        if refused != (sim.error == "sim:LaunchError"):
            return Verdict(case.name, case.family, False,
                           f"{gpu}; simulator {sim.error}: {_first_line(sim.detail)} -- "
                           + ("the driver refused the map, the simulator accepted it and faulted later" if refused
                              else "the driver accepted the map, the simulator refused it"))
        return Verdict(case.name, case.family, True, f"{gpu}; simulator: {_first_line(sim.detail)}")
    if not sim.ok:
        gout = arrays[entry["outputs"]["out"]["key"]]
        if case.expect == "fault" and any(entry.get("wait_status") or ()) and sim.error == "sim:MemoryFault":
            # the GPU raises no error but never completes the copy's transaction bytes: the kernel would hang in
            # its mbarrier wait (the harness bounds it); tcsim reports the faulty copy at issue instead
            return Verdict(case.name, case.family, True,
                           f"GPU: no error, the mbarrier wait timed out {status_text(case, gout)} (the kernel would "
                           f"hang); simulator: {_first_line(sim.detail)}")
        return Verdict(case.name, case.family, False,
                       f"GPU ran {status_text(case, gout) or '(completed)'}; simulator {sim.error}: "
                       f"{_first_line(sim.detail)}")
    msgs = []
    for key, spec in entry["outputs"].items():
        want = arrays[spec["key"]]
        got = sim.outputs.get(key)
        if got is None or got.shape != want.shape or got.dtype != want.dtype:
            msgs.append(f"{key}: simulator output {None if got is None else (got.dtype, got.shape)} vs GPU "
                        f"{(want.dtype, want.shape)}")
            continue
        if not np.array_equal(got.view(np.uint8), want.view(np.uint8)):
            msgs.append(explain(case, key, got, want))
    if msgs:
        return Verdict(case.name, case.family, False, "\n".join(msgs))
    n = sum(spec and int(np.prod(spec["shape"])) for spec in entry["outputs"].values())
    return Verdict(case.name, case.family, True, f"bit-identical ({n} output elements)")


def _first_line(s) -> str:
    s = (s or "").strip()
    return s.splitlines()[0][:300] if s else ""


def _decode_value(dtype: str, raw: bytes) -> str:
    es = len(raw)
    u = int.from_bytes(raw, "little")
    dt = DATA_TYPES[dtype]
    if dt.is_float:
        ft = _float_view(dtype) if es != 8 else np.float64
        if ft is None:
            ft = np.float32
        v = np.frombuffer(raw, dtype=ft)[0]
        return f"{float(v)!r} (0x{u:0{2 * es}x})"
    if dt.kind == "int" and u >> (8 * es - 1):
        u -= 1 << (8 * es)
    return f"{u} (0x{int.from_bytes(raw, 'little'):0{2 * es}x})"


def explain(case: TmaCase, key: str, got: np.ndarray, want: np.ndarray, limit: int = 4,
            names=("simulator", "GPU"), with_model: bool = True) -> str:
    """How many bytes differ, and the first differing elements decoded: which copy, which box element, which
    tensor coordinates (in bounds or which edge), simulator vs GPU vs documented model."""
    rows = got.shape[0] if key == "out" else 1
    gb, wb = got.view(np.uint8).reshape(rows, -1), want.view(np.uint8).reshape(rows, -1)
    diff = np.argwhere(gb != wb)
    mod = model(case) if with_model else None
    lines = [f"{key}: {len(diff)} byte(s) differ"]
    seen = set()
    for row, b in diff:
        row, b = int(row), int(b)
        desc, span = _locate(case, key, row, b)
        if span in seen:
            continue
        seen.add(span)
        lo, hi = span[-2], span[-1]
        sv, gv = bytes(gb[row, lo:hi]), bytes(wb[row, lo:hi])
        mv = None
        if mod is not None and key in mod:
            mb = mod[key].view(np.uint8).reshape(rows, -1)
            mv = bytes(mb[row, lo:hi])
        dtype = span[0] if isinstance(span[0], str) else None
        fmt = (lambda raw: _decode_value(dtype, raw)) if dtype else (lambda raw: "0x" + raw[::-1].hex())
        lines.append(f"  {desc}: {names[0]} {fmt(sv)}, {names[1]} {fmt(gv)}" + (f", model {fmt(mv)}" if mv else ""))
        if len(seen) >= limit:
            break
    return "\n".join(lines)


def _locate(case: TmaCase, key: str, row: int, b: int):
    """Describe byte ``b`` of output ``key`` (row ``row``: the CTA for 'out'); returns (text, span key) where the
    span key ends with the byte range of the element."""
    if key == "out":
        if b >= case.out_bytes - STATUS:
            st = case.out_bytes - STATUS
            w = (b - st) // 4
            what = {0: "mbarrier wait status (0 completed, 1 timed out)", 1: "end marker"}.get(w, "unused")
            return f"CTA {row} {what}", (None, row, st + 4 * w, st + 4 * w + 4)
        for i, op in enumerate(case.ops):
            if op.kind == "tload" and row in _targets(op, case.ncta):
                m = case.maps[op.map]
                k = int(model_swizzle(b, m.swizzle)) - op.smem
                if 0 <= k < m.box_bytes:
                    es = m.esize
                    e = k // es
                    x, rem = [], e
                    for d in range(m.rank):
                        x.append(rem % m.n[d])
                        rem //= m.n[d]
                    g = [op.coords[d] + x[d] * (1 if d == 0 else m.estr[d]) for d in range(m.rank)]
                    where = [f"dim {d} {'< 0' if g[d] < 0 else '>= ' + str(m.dims[d])}" for d in range(m.rank)
                             if not 0 <= g[d] < m.dims[d]]
                    lo = b - (k % es)
                    # the element's bytes may be scattered by the swizzle only in 8/16-byte pieces: same piece
                    return (f"CTA {row} SMEM +{b}: op {i} ({op.kind} coords {list(op.coords)} swizzle {m.swizzle}) "
                            f"box element x={x} -> tensor coords {g} "
                            f"({'OOB: ' + ', '.join(where) if where else 'in bounds'})",
                            (m.dtype, row, lo, lo + es))
            if op.kind in ("bload", "s2s"):
                dst = op.dst_smem if op.kind == "s2s" else op.smem
                tg = [op.dst_rank] if op.kind == "s2s" else _targets(op, case.ncta)
                if row in tg and dst <= b < dst + op.size:
                    lo = b - (b - dst) % 4
                    return (f"CTA {row} SMEM +{b}: op {i} ({op.kind}, byte {b - dst} of {op.size})",
                            (None, row, lo, lo + 4))
        lo = b - b % 4
        return f"CTA {row} SMEM +{b}: a byte no copy writes (initial pattern)", (None, row, lo, lo + 4)
    k = int(key[1:])
    flat_b = b                # tensors are compared as flat bytes (row 0)
    for i, op in enumerate(case.ops):
        if op.kind == "bstore" and op.tensor == k and op.goff <= flat_b < op.goff + op.size:
            lo = flat_b - flat_b % 4
            return f"t{k} byte {flat_b}: op {i} (bstore byte {flat_b - op.goff})", (None, 0, lo, lo + 4)
    for mi, m in enumerate(case.maps):
        if m.tensor != k:
            continue
        es = m.esize
        rel = flat_b - m.byte_offset
        g = []
        for d in range(m.rank - 1, 0, -1):
            g.append(rel // m.strides[d - 1])
            rel %= m.strides[d - 1]
        g.append(rel // es)
        g = g[::-1]
        inside = all(0 <= g[d] < m.dims[d] for d in range(m.rank))
        boxes = []
        for i, op in enumerate(case.ops):
            if op.kind in ("tstore", "treduce") and op.map == mi:
                xs = []
                for d in range(m.rank):
                    step = 1 if d == 0 else m.estr[d]
                    q = g[d] - op.coords[d]
                    if q < 0 or q % step or q // step >= m.n[d]:
                        break
                    xs.append(q // step)
                else:
                    boxes.append(f"op {i} ({op.kind}{'.' + op.redop if op.redop else ''} coords {list(op.coords)}) "
                                 f"box element {xs}")
        lo = flat_b - (flat_b - m.byte_offset) % es
        where = "inside the tensor" if inside else "padding (outside the map's dims)"
        return (f"t{k} element at tensor coords {g} ({where}); written by "
                + ("; ".join(boxes) if boxes else "no store box"), (m.dtype, 0, lo, lo + es))
    lo = flat_b - flat_b % 4
    return f"t{k} byte {flat_b}", (None, 0, lo, lo + 4)


def compare_dir(d: Path, patterns=None, jobs: int = 1, log=print) -> list:
    meta, arrays = load_record(d)
    cases = all_cases()
    wanted = {c.name for c in select(patterns)} if patterns else None
    names = [n for n in meta["cases"] if wanted is None or n in wanted]
    missing = [n for n in names if n not in cases]
    verdicts = []
    for n in missing:
        verdicts.append(Verdict(n, meta["cases"][n]["family"], False, "STALE: no such case in the generator any more",
                                stale=True))
        log(f"STALE  {n} [{meta['cases'][n]['family']}]: no such case in the generator any more")
    todo = [n for n in names if n in cases]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            res = list(pool.map(_compare_worker, [(str(d), n) for n in todo]))
    else:
        res = [compare_case(cases[n], meta["cases"][n], arrays) for n in todo]
    for v in res:
        e = meta["cases"][v.case]
        tag = "agree " if v.agree else "skip  " if v.skipped else "STALE " if v.stale else "DIFFER"
        log(f"{tag} {v.case} [{v.family}, expect {e['expect']}]: " + v.text.replace("\n", "\n       "))
        verdicts.append(v)
    fam: dict = {}
    for v in verdicts:
        a = fam.setdefault(v.family, [0, 0])
        a[1] += not v.skipped
        a[0] += v.agree
    skipped = sum(v.skipped for v in verdicts)
    log("summary (agree/compared): " + ", ".join(f"{f} {a}/{n}" for f, (a, n) in sorted(fam.items()))
        + f"; {sum(v.agree for v in verdicts)} of {len(verdicts) - skipped} agree with the "
          f"{meta.get('gpu') or meta.get('backend')}" + (f" ({skipped} without a GPU answer)" if skipped else ""))
    return verdicts


_WORKER_CACHE: dict = {}


def _compare_worker(args):
    d, n = args
    if d not in _WORKER_CACHE:
        _WORKER_CACHE.clear()
        _WORKER_CACHE[d] = load_record(Path(d))
    meta, arrays = _WORKER_CACHE[d]
    return compare_case(all_cases()[n], meta["cases"][n], arrays)


def check_model(cases: list, log=print) -> list:
    """Simulator vs the documented model (no GPU): the sanity check of the case list.  Returns the cases where
    they disagree, as (name, text)."""
    bad = []
    for case in cases:
        sim = run_sim(case)
        want = model(case)
        if want is None:
            txt = "model: fault" + (f"; simulator {sim.error}: {_first_line(sim.detail)}" if not sim.ok else
                                    "; simulator ran " + (status_text(case, sim.outputs["out"]) or "(completed)"))
            ok = not sim.ok and not sim.error.startswith("sim-crash")
        elif not sim.ok:
            txt, ok = f"simulator {sim.error}: {_first_line(sim.detail)}", False
        else:
            diffs = [explain(case, k, sim.outputs[k], want[k], names=("simulator", "model"), with_model=False)
                     for k in want
                     if not np.array_equal(sim.outputs[k].view(np.uint8), want[k].view(np.uint8))]
            ok = not diffs
            txt = "\n".join(diffs) if diffs else "simulator = model"
        log(f"{'same ' if ok else 'DIFF '} {case.name} [{case.family}, expect {case.expect}, {sim.wall_s:.2f} s]: "
            + txt.replace("\n", "\n       "))
        if not ok:
            bad.append((case.name, txt))
    return bad


# ================================================================================================ install
def install(src: Path, dest: Path = GOLDEN) -> list:
    """Copy a record directory's meta.json and outputs.npz (or an installed tma_outputs.npz) into ``dest`` as
    meta.json and tma_outputs.npz (checked: parseable, complete, < 16 MiB each)."""
    src = Path(src)
    meta, arrays = load_record(src)
    outputs = outputs_file(src)
    for n, e in meta["cases"].items():
        for spec in e["outputs"].values():
            if spec["key"] not in arrays:
                raise RecordError(f"{src}: output {spec['key']} of case {n} is missing from {outputs.name}")
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for p, to in ((src / META, META), (outputs, INSTALLED_OUTPUTS)):
        if p.stat().st_size >= 16 << 20:
            raise RecordError(f"{p} is {p.stat().st_size} bytes (limit 16 MiB)")
        shutil.copyfile(p, dest / to)
        (dest / to).chmod(0o644)
        copied.append(dest / to)
    stale = dest / OUTPUTS
    if stale.exists():
        stale.unlink()
    return copied


# ================================================================================================ ptxas
def ptxas_all(cases: list, arch: str = "sm_90a") -> list:
    """Assemble every case's kernel (one module, kernels renamed) with ptxas; returns [(case, message)] for
    kernels ptxas refuses (then each is assembled alone to name it), [] when all pass; None without ptxas."""
    from tcsim.isa.ptxas import assemble, first_error

    texts = []
    for i, c in enumerate(cases):
        body = c.ptx().split(HEAD, 1)[1].replace(f".entry {KERNEL}(", f".entry {KERNEL}_{i}(")
        texts.append(body)
    r = assemble(HEAD + "\n".join(texts), arch=arch, name="tma_cases.ptx")
    if r is None:
        return None
    if r[0] == 0:
        return []
    bad = []
    for c in cases:
        rr = assemble(c.ptx(), arch=arch, name=f"{c.name}.ptx")
        if rr and rr[0] != 0:
            bad.append((c.name, first_error(rr[1])))
    return bad or [("<module>", first_error(r[1]))]


# ================================================================================================ CLI
def _summary(cases: list) -> str:
    fam: dict = {}
    for c in cases:
        d = fam.setdefault(c.family, {})
        d[c.expect] = d.get(c.expect, 0) + 1
    return "\n".join(f"{f:10s} {sum(d.values()):4d}  " + ", ".join(f"{k} {v}" for k, v in sorted(d.items()))
                     for f, d in fam.items()) + f"\n{'total':10s} {len(cases):4d}"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m calib.tma_cases", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="the case list")
    p.add_argument("--case", action="append", help="name glob or family (repeatable)")
    p.add_argument("-v", action="store_true", help="one line per case")
    p = sub.add_parser("record", help="run the cases on the GPU (or the simulator) and write meta.json + outputs.npz")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--backend", choices=("gpu", "sim"), default="gpu")
    p.add_argument("--jobs", type=int, default=8, help="cases in flight (GPU child processes)")
    p.add_argument("--case", action="append")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds after which cases not yet started are recorded as NOT_RUN")
    p = sub.add_parser("install", help="copy a record directory into tests/golden/tma_h100")
    p.add_argument("--gpu", type=Path, required=True)
    p.add_argument("--dest", type=Path, default=GOLDEN)
    p = sub.add_parser("compare", help="simulate every recorded case and compare with the record")
    p.add_argument("--gpu", type=Path, default=GOLDEN)
    p.add_argument("--case", action="append")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p = sub.add_parser("check", help="simulator vs the documented model (no GPU)")
    p.add_argument("--case", action="append")
    p = sub.add_parser("ptxas", help="assemble every kernel with ptxas -arch=sm_90a")
    p.add_argument("--case", action="append")
    p = sub.add_parser("ptx", help="print one case's kernel")
    p.add_argument("name")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        cases = select(args.case)
        if args.v:
            for c in cases:
                print(f"{c.name:44s} {c.family:9s} {c.expect:6s} ncta {c.ncta} ops {len(c.ops):2d} smem {c.smem:6d}  "
                      f"{c.note}")
        print(_summary(cases))
        return 0
    if args.cmd == "ptx":
        case = all_cases().get(args.name)
        if case is None:
            print(f"calib.tma_cases: no case named {args.name!r} (`python -m calib.tma_cases list -v` lists them)",
                  file=sys.stderr)
            return 2
        print(case.ptx(), end="")
        return 0
    if args.cmd == "ptxas":
        bad = ptxas_all(select(args.case))
        if bad is None:
            print("ptxas is not on PATH")
            return 2
        for n, msg in bad:
            print(f"{n}: {msg}")
        print("every kernel assembles" if not bad else f"{len(bad)} kernel(s) refused")
        return 1 if bad else 0
    if args.cmd == "check":
        bad = check_model(select(args.case))
        print(f"{len(bad)} case(s) where the simulator and the documented model disagree")
        return 1 if bad else 0
    if args.cmd in ("install", "compare"):
        try:
            if args.cmd == "install":
                for p in install(args.gpu, args.dest):
                    print(f"installed {p} ({p.stat().st_size} bytes)")
                return 0
            v = compare_dir(args.gpu, args.case, jobs=args.jobs)
        except (RecordError, OSError) as e:       # OSError: a dest that cannot be written
            print(f"calib.tma_cases: {e}", file=sys.stderr)
            return 2
        return 0 if all(x.agree or x.skipped for x in v) else 1
    # record
    from tcsim.hw.launcher import GpuUnavailable

    command = "python -m calib.tma_cases " + " ".join(shlex.quote(a) for a in argv)
    cases = select(args.case)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"calib.tma_cases: cannot make the record folder {args.out}: {e}", file=sys.stderr)
        return 2
    try:
        meta = record(args.out, cases, backend=args.backend, jobs=args.jobs, command=command,
                      time_limit=args.time_limit)
    except GpuUnavailable as e:
        print(f"calib.tma_cases: no GPU here: {e}", file=sys.stderr)
        return 2
    print(json.dumps(meta["counts"]))
    print(f"{len(cases)} cases on {meta['gpu']} in {meta['wall_s']} s -> {args.out}")
    return 0


if __name__ == "__main__":
    # run the CLI from the importable module, so that pickled objects (CaseMap, sent to the GPU child
    # processes) name calib.tma_cases and not __main__
    from calib.tma_cases import main as _main
    raise SystemExit(_main())
