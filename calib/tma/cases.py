"""A TMA case: the tensors, tensor maps and copies of one small kernel (:class:`TmaCase`), the launch that runs it
on either back end (:class:`CaseMap`: a tensor map over a launch argument), and the helpers the case families
(:mod:`calib.tma.families`) build cases with."""
from __future__ import annotations

import dataclasses
import math
import zlib
from dataclasses import dataclass

import numpy as np

from tcsim.isa.tensormap import DATA_TYPES, TensorMap

from .layout import KERNEL, NT, OUT_FILL, SENTINEL, STATUS, MapSpec, Op, _esize, _targets, _UINT
from .ptx import kernel_ptx


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


@dataclass
class CaseMap(TensorMap):
    """A :class:`TensorMap` whose global address is the launch buffer of ``array`` plus ``byte_offset`` on both
    back ends (tcsim.hw.launcher calls :meth:`to_driver_args`, the simulator :meth:`encode_for_sim`), built without
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


# ================================================================================================case builders
def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


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
