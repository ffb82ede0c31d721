"""The CUtensorMap (TMA tensor-map descriptor) as data: fields, the driver's validity rules, tcsim's 128-byte
encoding.

Sources: CUDA Driver API ``cuTensorMapEncodeTiled`` (Tensor Map Object Management) and PTX ISA 9.1 §5.5
(tensors: §5.5.3 tiled-mode bounding box, §5.5.7 swizzling modes); tma.md §3 summarises both.

Dimension order is the driver's: **dim 0 is the innermost (fastest-varying, dense) dimension**.  For a
C-order numpy array of shape ``(R, C)``, ``global_dims = (C, R)`` and ``global_strides = (C * itemsize,)``.
:meth:`TensorMap.tiled` builds a map from a numpy array; its ``box`` and ``element_strides`` arguments are in
*numpy* axis order (the order of ``array.shape``) and are reversed into driver order.

The real CUtensorMap is 128 opaque bytes.  tcsim defines its own documented little-endian layout
(:data:`LAYOUT`) so a kernel may copy a map through global/shared memory (or edit it with
``tensormap.replace``) and the simulator decodes it where a TMA instruction uses it:

=======  ======  ==============================================================================
offset   size    field
=======  ======  ==============================================================================
0        u64     global_address
8        u32[5]  global_dims[i] - 1        (dims are 1..2^32; unused dims 0)
28       u32     reserved (0)
32       u64[4]  global_strides[i] in bytes for dims 1..4 (entry 0 = dim 1); unused 0
64       u8[5]   box_dims[i] - 1           (1..256)
69       u8[5]   element_strides[i] - 1    (1..8)
74       u8      rank (1..5)
75       u8      data type (CUtensorMapDataType enum, :data:`DATA_TYPES`)
76       u8      interleave (0 none, 1 16B, 2 32B)
77       u8      swizzle (CUtensorMapSwizzle enum, :data:`tcsim.isa.swizzle.SWIZZLE_MODES`)
78       u8      L2 promotion (0 none, 1 64B, 2 128B, 3 256B)
79       u8      OOB fill (0 zero = FLOAT_OOB_FILL_NONE, 1 nan = NAN_REQUEST_ZERO_FMA)
80..119          reserved (0)
120      u32     magic 0x70616D74 (the bytes ``b"tmap"``)
124      u16     layout version (1)
126      u16     reserved (0)
=======  ======  ==============================================================================

Validity rules (:meth:`TensorMap.validate`, each raising :class:`tcsim.isa.errors.LaunchError` naming the rule):
rank 1..5 (>= 3 when interleaved); global address 16-byte aligned (32 for INTERLEAVE_32B and the two ALIGN16B
packed types); global dims 1..2^32 (ALIGN16B types: dim 0 a multiple of 128; 16U4_ALIGN8B: dim 0 even); global
strides a multiple of 16 (32 for INTERLEAVE_32B / ALIGN16B types) and < 2^40; box dims 1..256, without
interleave ``boxDim[0] * elementSize`` a multiple of 16 bytes, ALIGN16B types ``boxDim[0] == 128``; with a
swizzle (and no interleave) the inner box row at most the swizzle span (32/64/128 B); element strides 1..8;
INTERLEAVE_32B requires SWIZZLE_32B (tma.md); packed types only allow swizzle none/128B/128B_atom_32B/
128B_atom_64B; OOB fill ``nan`` only for (non-packed) floating-point types; the map itself 64-byte aligned
(checked where a kernel reads it).

The four-row TMA modes (``.tile::gather4`` / ``.tile::scatter4``, PTX ISA 9.1 §5.5.3.4) use an ordinary tiled map
whose box is one row, ``TensorMap.tiled(array, box=(1, cols))``; :meth:`TensorMap.rows4_problem` says why a map
cannot serve them and :meth:`TensorMap.rows4_bytes` gives the size of their four-row SMEM image.

Not checked (the driver documents them only as examples (?)): that strides do not make rows overlap
(``globalStrides[0] >= globalDim[0] * elementSize``...).

Editing a map in memory (``tensormap.replace``, PTX ISA 9.1 "tensormap.replace"): :func:`replace_field` is the
pure byte-level edit the simulator's ``tensormap.replace`` performs on the 128 bytes.  The PTX field values
are translated into this layout (``rank`` new_val is rank - 1; ``box_dim``/``global_dim``/``element_stride``
are the sizes themselves, stored minus one; ``global_stride`` is in bytes; ``elemtype`` uses the PTX numbering
:data:`PTX_ELEMTYPES`, which differs from CUtensorMapDataType at 8/9/10; ``swizzle_mode`` and
``swizzle_atomicity`` together select one CUtensorMapSwizzle value, :data:`PTX_SWIZZLES`).  Every edit also
writes the magic/version header, because a kernel may build a map from zero-filled bytes (Triton's
``tl.make_tensor_descriptor`` does: 128 zero bytes in SMEM, then one replace per field); fields never
replaced keep the zero encoding (box/global dims and element strides of 1, no interleave, no L2 promotion,
zero OOB fill).  The edited bytes are validated only where a TMA instruction uses the map.
"""
from __future__ import annotations

import dataclasses
import math
import struct
from dataclasses import dataclass, field

import numpy as np

from .errors import DRIVER_REFUSAL, LaunchError, MemoryFault
from .swizzle import SWIZZLE_MODES, SWIZZLE_SPAN


def is_torch(obj) -> bool:
    """``obj`` is a torch tensor (checked without importing torch)."""
    return type(obj).__module__.split(".")[0] == "torch" and hasattr(obj, "numpy") and hasattr(obj, "device")


def as_numpy(obj):
    """A torch CPU tensor as a numpy array sharing its memory (bfloat16 as ml_dtypes' bfloat16); anything else
    unchanged.  A tensor on another device is a LaunchError (tcsim's arrays live on the host)."""
    if not is_torch(obj):
        return obj
    if obj.device.type != "cpu":
        raise LaunchError(f"a torch tensor on {obj.device} cannot be a tcsim argument",
                          expected="a CPU tensor (tensor.cpu())")
    t = obj.detach()
    if str(t.dtype) == "torch.bfloat16":
        import ml_dtypes
        return t.view(_torch_int16()).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _torch_int16():
    import torch
    return torch.int16


#: key of the launch's table of host address ranges of its C-contiguous array arguments: ``[(ptr, nbytes, alloc)]``
HOST_RANGES = "host ranges"


def memory_key(arr) -> tuple:
    """What identifies an array's memory regardless of the Python object: data pointer, shape, strides, dtype."""
    ai = arr.__array_interface__
    return ("memory", ai["data"][0], tuple(arr.shape), tuple(arr.strides), arr.dtype.str)


def _span_view(arr: np.ndarray) -> np.ndarray:
    """The bytes from ``arr``'s first element to the end of its last (non-negative strides) as a 1-D uint8 view of
    the same memory."""
    n = (sum((d - 1) * st for d, st in zip(arr.shape, arr.strides)) + arr.itemsize) if arr.size else 0
    flat = np.lib.stride_tricks.as_strided(arr, shape=(n // arr.itemsize,), strides=(arr.itemsize,),
                                           writeable=False)
    return flat.view(np.uint8)


def write_span(arr: np.ndarray, span) -> None:
    """Write the elements of the view ``arr`` from ``span``, the bytes of the memory it spans (as :func:`_span_view`
    lays them out: its first element at byte 0, its own strides)."""
    if not arr.size or not arr.flags.writeable:
        return
    dev = np.frombuffer(bytes(span), dtype=np.uint8)
    if dev.size % arr.itemsize:
        return
    arr[...] = np.lib.stride_tricks.as_strided(dev.view(arr.dtype), shape=arr.shape, strides=arr.strides,
                                               writeable=False)


@dataclass(frozen=True)
class DataType:
    """One ``CUtensorMapDataType``: driver enum value, element size in bits, and kind."""

    name: str
    enum: int
    bits: int
    kind: str            # 'uint' | 'int' | 'float' | 'packed'

    @property
    def esize(self) -> int | None:
        """Element size in bytes (None for the packed sub-byte types)."""
        return self.bits // 8 if self.kind != "packed" else None

    @property
    def is_float(self) -> bool:
        return self.kind == "float"


_DT = [
    ("UINT8", 0, 8, "uint"), ("UINT16", 1, 16, "uint"), ("UINT32", 2, 32, "uint"), ("INT32", 3, 32, "int"),
    ("UINT64", 4, 64, "uint"), ("INT64", 5, 64, "int"), ("FLOAT16", 6, 16, "float"),
    ("FLOAT32", 7, 32, "float"), ("FLOAT64", 8, 64, "float"), ("BFLOAT16", 9, 16, "float"),
    ("FLOAT32_FTZ", 10, 32, "float"), ("TFLOAT32", 11, 32, "float"), ("TFLOAT32_FTZ", 12, 32, "float"),
    ("16U4_ALIGN8B", 13, 4, "packed"), ("16U4_ALIGN16B", 14, 4, "packed"), ("16U6_ALIGN16B", 15, 6, "packed"),
]
#: name -> DataType (driver CUtensorMapDataType numbering 0..15)
DATA_TYPES = {n: DataType(n, e, b, k) for n, e, b, k in _DT}
DATA_TYPES_BY_ENUM = {d.enum: d for d in DATA_TYPES.values()}

INTERLEAVES = {"none": 0, "16B": 1, "32B": 2}
L2_PROMOTIONS = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
OOB_FILLS = {"zero": 0, "nan": 1}
_ALIGN16B = ("16U4_ALIGN16B", "16U6_ALIGN16B")
_PACKED_SWIZZLES = ("none", "128B", "128B_atom_32B", "128B_atom_64B")

#: rows moved by one ``.tile::gather4`` / ``.tile::scatter4`` (PTX ISA §5.5.3.4)
ROWS4 = 4

MAGIC = 0x70616D74
VERSION = 1
SIZE = 128
ALIGN = 64

#: field -> (byte offset, struct format) of tcsim's 128-byte encoding (see module docstring)
LAYOUT = {
    "global_address": (0, "<Q"),
    "global_dims": (8, "<5I"),
    "global_strides": (32, "<4Q"),
    "box_dims": (64, "<5B"),
    "element_strides": (69, "<5B"),
    "rank": (74, "<B"),
    "dtype": (75, "<B"),
    "interleave": (76, "<B"),
    "swizzle": (77, "<B"),
    "l2_promotion": (78, "<B"),
    "oob_fill": (79, "<B"),
    "magic": (120, "<I"),
    "version": (124, "<H"),
}


def _numpy_dtype_name(dt: np.dtype) -> str:
    dt = np.dtype(dt)
    named = {"uint8": "UINT8", "int8": "UINT8", "uint16": "UINT16", "int16": "UINT16", "uint32": "UINT32",
             "int32": "INT32", "uint64": "UINT64", "int64": "INT64", "float16": "FLOAT16",
             "float32": "FLOAT32", "float64": "FLOAT64", "bfloat16": "BFLOAT16"}
    if dt.name in named:
        return named[dt.name]
    by_size = {1: "UINT8", 2: "UINT16", 4: "UINT32", 8: "UINT64"}   # bytes moved verbatim (fp8, ...)
    if dt.itemsize in by_size and dt.kind not in "OSUc" and dt.fields is None:
        return by_size[dt.itemsize]
    raise LaunchError(f"numpy dtype {dt} has no tensor-map data type",
                      expected="an integer/float dtype of 1, 2, 4 or 8 bytes (or pass dtype=...)")


@dataclass
class TensorMap:
    """A tiled-mode CUtensorMap (``cuTensorMapEncodeTiled`` arguments), all dims in driver order (dim 0
    innermost).  ``array`` (optional) is the numpy array the map describes; the launcher replaces
    ``global_address`` by that array's device address (see :meth:`encode_for_sim`)."""

    dtype: str
    rank: int
    global_address: int
    global_dims: tuple
    global_strides: tuple
    box_dims: tuple
    element_strides: tuple
    interleave: str = "none"
    swizzle: str = "none"
    l2_promotion: str = "none"
    oob_fill: str = "zero"
    array: object = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if isinstance(self.dtype, (int, np.integer)):
            if int(self.dtype) not in DATA_TYPES_BY_ENUM:
                raise LaunchError(f"tensor-map data type enum {self.dtype} is unknown",
                                  expected="a CUtensorMapDataType value 0..15")
            self.dtype = DATA_TYPES_BY_ENUM[int(self.dtype)].name
        elif isinstance(self.dtype, str) and self.dtype.upper() in DATA_TYPES:
            self.dtype = self.dtype.upper()
        for name, table in (("interleave", INTERLEAVES), ("swizzle", SWIZZLE_MODES),
                            ("l2_promotion", L2_PROMOTIONS), ("oob_fill", OOB_FILLS)):
            v = getattr(self, name)
            if isinstance(v, (int, np.integer)):
                inv = {e: n for n, e in table.items()}
                if int(v) in inv:
                    setattr(self, name, inv[int(v)])
        self.rank = int(self.rank)
        self.global_address = int(self.global_address)
        for name in ("global_dims", "global_strides", "box_dims", "element_strides"):
            setattr(self, name, tuple(int(x) for x in getattr(self, name)))

    # ------------------------------------------------------------------------------------------ derived
    @property
    def data_type(self) -> DataType:
        try:
            return DATA_TYPES[self.dtype]
        except KeyError:
            raise LaunchError(f"tensor-map data type {self.dtype!r} is unknown",
                              expected=f"one of {', '.join(DATA_TYPES)}") from None

    @property
    def esize(self) -> int | None:
        """Element size in bytes (None for packed sub-byte types)."""
        return self.data_type.esize

    def traversed(self) -> tuple:
        """``n_i``: box elements actually moved per dim, ``ceil(boxDim[i] / elementStrides[i])``; the dim-0
        element stride is ignored unless the map is interleaved (driver rule)."""
        out = []
        for i, (b, s) in enumerate(zip(self.box_dims, self.element_strides)):
            if i == 0 and self.interleave == "none":
                s = 1
            out.append(-(-b // s))
        return tuple(out)

    def box_bytes(self) -> int:
        """Bytes of the SMEM image of one box (= the complete-tx count of a load): ``esize * prod(n_i)``."""
        bits = self.data_type.bits * math.prod(self.traversed())
        return bits // 8

    # ------------------------------------------------------------------------------------------ gather4 / scatter4
    def rows4_problem(self) -> str | None:
        """Why this map cannot serve ``.tile::gather4`` / ``.tile::scatter4`` (PTX ISA 9.1 §5.5.3.4: 2-D tensors
        only, no interleave; §5.5.3.4.1: the bounding box is one row, boxDim[1] == 1), or None if it can."""
        if self.rank != 2:
            return f"it is {self.rank}-dimensional, but the four-row modes work only on 2-D tensors"
        if self.box_dims[1] != 1:
            return (f"its boxDim[1] is {self.box_dims[1]}, but each of the four boxes is one row "
                    f"(boxDim[1] must be 1; boxDim[0] = {self.box_dims[0]} is the row length)")
        if self.interleave != "none":
            return f"it uses interleave {self.interleave}, which the four-row modes do not support"
        return None

    def rows4_bytes(self) -> int:
        """Bytes of the SMEM image of one ``.tile::gather4`` / ``.tile::scatter4`` (four rows of ``boxDim[0]``
        elements) = the complete-tx count of a gather4: ``4 * esize * n_0``."""
        return ROWS4 * self.data_type.bits * self.traversed()[0] // 8

    # ------------------------------------------------------------------------------------------ rules
    def check_device(self, arch: str | None) -> None:
        """What ``cuTensorMapEncodeTiled`` refuses on the device the kernel targets, beyond :meth:`validate`:
        the 128B_atom_* swizzles on an sm_9x GPU (an H100 answers CUDA_ERROR_INVALID_VALUE:
        tests/golden/tma_h100 swizzle_128B_atom_*)."""
        if arch and arch.startswith("sm_9") and self.swizzle.startswith("128B_atom"):
            raise LaunchError(f"invalid tensor map for {arch}: swizzle {self.swizzle} exists only on sm_100 and "
                              f"later; the driver refuses it on an sm_90 GPU (CUDA_ERROR_INVALID_VALUE)",
                              expected="swizzle none, 32B, 64B or 128B on sm_90", gpu_error=DRIVER_REFUSAL)

    def validate(self, check_address: bool = True) -> "TensorMap":
        """Apply the driver's validity rules; raise :class:`LaunchError` naming the first rule broken."""
        dt = self.data_type
        r = self.rank

        def bad(rule: str, got: str, expected: str):
            raise LaunchError(f"invalid tensor map: {rule} ({got})", expected=expected, gpu_error=DRIVER_REFUSAL)

        if self.interleave not in INTERLEAVES:
            bad("interleave must be one of the CUtensorMapInterleave values", f"interleave={self.interleave!r}",
                f"one of {', '.join(INTERLEAVES)}")
        if self.swizzle not in SWIZZLE_MODES:
            bad("swizzle must be one of the CUtensorMapSwizzle values", f"swizzle={self.swizzle!r}",
                f"one of {', '.join(SWIZZLE_MODES)}")
        if self.l2_promotion not in L2_PROMOTIONS:
            bad("l2Promotion must be one of the CUtensorMapL2promotion values",
                f"l2_promotion={self.l2_promotion!r}", f"one of {', '.join(L2_PROMOTIONS)}")
        if self.oob_fill not in OOB_FILLS:
            bad("oobFill must be 'zero' (FLOAT_OOB_FILL_NONE) or 'nan' (NAN_REQUEST_ZERO_FMA)",
                f"oob_fill={self.oob_fill!r}", "'zero' or 'nan'")
        if not 1 <= r <= 5:
            bad("tensorRank must be 1..5", f"rank={r}", "a rank from 1 to 5")
        if self.interleave != "none" and r < 3:
            bad("tensorRank must be >= 3 when interleave is not NONE", f"rank={r}, interleave={self.interleave}",
                "rank 3, 4 or 5 for an interleaved layout")
        for name, n in (("globalDim", len(self.global_dims)), ("boxDim", len(self.box_dims)),
                        ("elementStrides", len(self.element_strides))):
            if n != r:
                bad(f"{name} must have tensorRank entries", f"{n} entries for rank {r}", f"{r} entries")
        if len(self.global_strides) != r - 1:
            bad("globalStrides must have tensorRank-1 entries (dims 1..rank-1; dim 0 is dense)",
                f"{len(self.global_strides)} entries for rank {r}", f"{r - 1} entries")
        wide = self.interleave == "32B" or self.dtype in _ALIGN16B
        align = 32 if wide else 16
        if check_address and self.global_address % align:
            bad(f"globalAddress must be {align}-byte aligned"
                + (" (INTERLEAVE_32B / ALIGN16B packed type)" if wide else ""),
                f"globalAddress=0x{self.global_address:x}", f"an address that is a multiple of {align}")
        for i, d in enumerate(self.global_dims):
            if not 1 <= d <= 1 << 32:
                bad("globalDim must be non-zero and at most 2^32", f"globalDim[{i}]={d}", "1 <= globalDim <= 2^32")
        if self.dtype in _ALIGN16B and self.global_dims[0] % 128:
            bad(f"globalDim[0] must be a multiple of 128 for {self.dtype}", f"globalDim[0]={self.global_dims[0]}",
                "a multiple of 128")
        if self.dtype == "16U4_ALIGN8B" and self.global_dims[0] % 2:
            bad("globalDim[0] must be even for 16U4_ALIGN8B", f"globalDim[0]={self.global_dims[0]}", "an even size")
        for i, s in enumerate(self.global_strides):
            if s % align or s < 0:
                bad(f"globalStrides must be a multiple of {align} bytes"
                    + (" (INTERLEAVE_32B / ALIGN16B packed type)" if wide else ""),
                    f"globalStrides[{i}] (dim {i + 1})={s}", f"a non-negative multiple of {align}")
            if s >= 1 << 40:
                bad("globalStrides must be less than 2^40", f"globalStrides[{i}] (dim {i + 1})={s}", "< 2^40")
        for i, b in enumerate(self.box_dims):
            if not 1 <= b <= 256:
                bad("boxDim must be non-zero and at most 256", f"boxDim[{i}]={b}", "1 <= boxDim <= 256")
        inner_bits = self.box_dims[0] * dt.bits
        if self.interleave == "none" and inner_bits % 128:
            bad("boxDim[0] * elementSize must be a multiple of 16 bytes (interleave NONE)",
                f"boxDim[0]={self.box_dims[0]} x {dt.bits} bits = {inner_bits / 8:g} bytes",
                "an inner box row of 16, 32, 48, ... bytes")
        if self.dtype in _ALIGN16B and self.box_dims[0] != 128:
            bad(f"boxDim[0] must be 128 for {self.dtype}", f"boxDim[0]={self.box_dims[0]}", "boxDim[0] == 128")
        for i, e in enumerate(self.element_strides):
            if not 1 <= e <= 8:
                bad("elementStrides must be non-zero and at most 8", f"elementStrides[{i}]={e}",
                    "1 <= elementStrides <= 8")
        if self.interleave == "32B" and self.swizzle != "32B":
            bad("INTERLEAVE_32B requires SWIZZLE_32B", f"swizzle={self.swizzle}", "swizzle='32B'")
        span = SWIZZLE_SPAN[self.swizzle]
        if self.interleave == "none" and span is not None and inner_bits > span * 8:
            bad(f"with swizzle {self.swizzle} the inner box dimension (boxDim[0] * elementSize) must be at most "
                f"the swizzle span of {span} bytes",
                f"boxDim[0]={self.box_dims[0]} x {dt.bits} bits = {inner_bits // 8} bytes",
                f"an inner box row of at most {span} bytes")
        if dt.kind == "packed" and self.swizzle not in _PACKED_SWIZZLES:
            bad(f"packed type {self.dtype} allows only swizzle none, 128B, 128B_atom_32B, 128B_atom_64B",
                f"swizzle={self.swizzle}", ", ".join(_PACKED_SWIZZLES))
        if self.oob_fill == "nan" and not dt.is_float:
            bad("oobFill NAN_REQUEST_ZERO_FMA needs a floating-point (non-packed) data type",
                f"dtype={self.dtype}", "oob_fill='zero' for integer and packed types")
        return self

    # ------------------------------------------------------------------------------------------ building
    @classmethod
    def tiled(cls, array, box, swizzle: str = "none", element_strides=None, oob_fill: str = "zero",
              l2_promotion: str = "none", interleave: str = "none", dtype=None) -> "TensorMap":
        """A map over numpy ``array`` (dim 0 of the map = the LAST numpy axis).

        ``box`` and ``element_strides`` are given in numpy axis order (like ``array.shape``).  The innermost
        numpy axis must be dense (stride = itemsize); the other strides come from ``array.strides``.  ``dtype``
        (a :data:`DATA_TYPES` name or enum value) overrides the type derived from ``array.dtype``.  The map is
        validated now (except the global address, which the launcher fills in).
        """
        array = as_numpy(array)
        if not isinstance(array, np.ndarray):
            raise LaunchError(f"TensorMap.tiled needs a numpy array (or a torch CPU tensor), got "
                              f"{type(array).__name__}")
        nd = array.ndim
        if not 1 <= nd <= 5:
            raise LaunchError(f"invalid tensor map: tensorRank must be 1..5 (array has {nd} dimensions)",
                              expected="a 1- to 5-dimensional array")
        box = tuple(int(b) for b in (box if isinstance(box, (tuple, list)) else (box,)))
        if len(box) != nd:
            raise LaunchError(f"box {box} has {len(box)} entries but the array has {nd} dimensions",
                              expected=f"{nd} box sizes in numpy axis order")
        es = (1,) * nd if element_strides is None else tuple(int(e) for e in element_strides)
        if len(es) != nd:
            raise LaunchError(f"element_strides {es} has {len(es)} entries but the array has {nd} dimensions",
                              expected=f"{nd} element strides in numpy axis order")
        if dtype is None:
            dname = _numpy_dtype_name(array.dtype)
        else:
            dname = DATA_TYPES_BY_ENUM[int(dtype)].name if isinstance(dtype, (int, np.integer)) else str(dtype)
            if dname.upper() not in DATA_TYPES:
                raise LaunchError(f"tensor-map data type {dtype!r} is unknown",
                                  expected=f"one of {', '.join(DATA_TYPES)}")
            dname = dname.upper()
            dt = DATA_TYPES[dname]
            if dt.kind == "packed":
                raise LaunchError(f"TensorMap.tiled cannot derive a map for packed type {dname} from a numpy "
                                  f"array; build TensorMap(...) with explicit dims")
            if dt.esize != array.itemsize:
                raise LaunchError(f"dtype {dname} has {dt.esize}-byte elements but the array's items are "
                                  f"{array.itemsize} bytes", expected="matching element sizes")
        strides = array.strides[::-1]
        if nd and strides[0] != array.itemsize:
            raise LaunchError(f"the innermost axis of the array has stride {strides[0]} bytes; a tensor map's "
                              f"dim 0 must be dense", expected=f"stride {array.itemsize} (itemsize) on the last axis")
        if any(s < 0 for s in strides):
            raise LaunchError(f"array strides {array.strides} are negative", expected="non-negative strides")
        tm = cls(dtype=dname, rank=nd, global_address=0, global_dims=array.shape[::-1],
                 global_strides=strides[1:], box_dims=box[::-1], element_strides=es[::-1], interleave=interleave,
                 swizzle=swizzle, l2_promotion=l2_promotion, oob_fill=oob_fill, array=array)
        return tm.validate(check_address=False)

    # ------------------------------------------------------------------------------------------ encoding
    def encode(self) -> bytes:
        """tcsim's 128-byte little-endian encoding (layout in the module docstring).  Validates first."""
        self.validate()
        buf = bytearray(SIZE)
        r = self.rank
        pad = lambda t, n: tuple(t) + (0,) * (n - len(t))  # noqa: E731
        struct.pack_into("<Q", buf, 0, self.global_address)
        struct.pack_into("<5I", buf, 8, *pad([d - 1 for d in self.global_dims], 5))
        struct.pack_into("<4Q", buf, 32, *pad(self.global_strides, 4))
        struct.pack_into("<5B", buf, 64, *pad([b - 1 for b in self.box_dims], 5))
        struct.pack_into("<5B", buf, 69, *pad([e - 1 for e in self.element_strides], 5))
        struct.pack_into("<6B", buf, 74, r, self.data_type.enum, INTERLEAVES[self.interleave],
                         SWIZZLE_MODES[self.swizzle], L2_PROMOTIONS[self.l2_promotion], OOB_FILLS[self.oob_fill])
        struct.pack_into("<IH", buf, 120, MAGIC, VERSION)
        return bytes(buf)

    @classmethod
    def decode(cls, raw) -> "TensorMap":
        """Inverse of :meth:`encode`.  Raises :class:`MemoryFault` if the bytes are not a tcsim tensor map and
        :class:`LaunchError` (from :meth:`validate`) if the fields break a driver rule."""
        raw = bytes(raw)
        if len(raw) < SIZE:
            raise MemoryFault(f"a tensor map is {SIZE} bytes; got {len(raw)}")
        magic, version = struct.unpack_from("<IH", raw, 120)
        if magic != MAGIC or version != VERSION:
            raise MemoryFault("the 128 bytes used as a tensor map do not hold one (bad magic/version word at "
                              f"byte 120: 0x{magic:08x}/{version})",
                              expected="a CUtensorMap made by the host (TensorMap argument), copied intact")
        (addr,) = struct.unpack_from("<Q", raw, 0)
        dims = struct.unpack_from("<5I", raw, 8)
        strides = struct.unpack_from("<4Q", raw, 32)
        box = struct.unpack_from("<5B", raw, 64)
        est = struct.unpack_from("<5B", raw, 69)
        r, dte, il, sw, l2, oob = struct.unpack_from("<6B", raw, 74)

        def name_of(table, v, what):
            inv = {e: n for n, e in table.items()}
            if v not in inv:
                raise LaunchError(f"invalid tensor map: {what} enum {v} is unknown")
            return inv[v]

        if dte not in DATA_TYPES_BY_ENUM:
            raise LaunchError(f"invalid tensor map: data type enum {dte} is unknown")
        if not 1 <= r <= 5:
            raise LaunchError(f"invalid tensor map: tensorRank must be 1..5 (rank={r})")
        tm = cls(dtype=DATA_TYPES_BY_ENUM[dte].name, rank=r, global_address=addr,
                 global_dims=[d + 1 for d in dims[:r]], global_strides=strides[:r - 1],
                 box_dims=[b + 1 for b in box[:r]], element_strides=[e + 1 for e in est[:r]],
                 interleave=name_of(INTERLEAVES, il, "interleave"),
                 swizzle=name_of(SWIZZLE_MODES, sw, "swizzle"),
                 l2_promotion=name_of(L2_PROMOTIONS, l2, "l2Promotion"), oob_fill=name_of(OOB_FILLS, oob, "oobFill"))
        return tm.validate()

    def encode_for_sim(self, gmem, by_id: dict, name: str = "tensor map") -> bytes:
        """The 128 bytes passed as the kernel parameter (called by ``tcsim.launch.prepare_arguments``).

        With an ``array``: the global address becomes the device address of the launch argument that *is*
        that array (``by_id[id(array)]``, or the same memory: :func:`memory_key`), or of the C-contiguous array
        argument whose memory holds the array's (a view into it, found by address: ``by_id[HOST_RANGES]``; at the
        view's byte offset).  Otherwise the
        memory the array spans (first to last element, its real strides kept: a sliced, transposed or
        ``as_strided`` view) is placed in a buffer of ``gmem`` and the launch writes the view's elements back into
        the caller's array after the run (:meth:`write_back`), so TMA stores land where the caller sees them, as
        on the GPU where the map points at the caller's memory; the allocation is ``self.sim_allocation``.
        Without an array, ``global_address`` is used as is.
        """
        tm = self
        self.sim_allocation = None
        self.sim_view = None
        if self.array is not None:
            arr = as_numpy(self.array)
            addr = None
            alloc = by_id.get(id(arr)) or by_id.get(id(self.array)) or by_id.get(memory_key(arr))
            if alloc is not None:
                addr = alloc.base
            elif arr.size and all(st >= 0 for st in arr.strides):
                # a view whose memory lies inside a C-contiguous array argument: that argument's buffer
                lo = arr.__array_interface__["data"][0]
                hi = lo + _span_view(arr).size
                for ptr, nbytes, a in by_id.get(HOST_RANGES, ()):
                    if ptr <= lo and hi <= ptr + nbytes:
                        addr = a.base + (lo - ptr)
                        break
                base = arr.base
                while addr is None and isinstance(base, np.ndarray):     # or an argument on the view's base chain
                    a = by_id.get(id(base))
                    if a is not None and base.flags.c_contiguous:
                        off = lo - base.__array_interface__["data"][0]
                        if 0 <= off and off + (hi - lo) <= base.nbytes:
                            addr = a.base + off
                        break
                    base = base.base
            if addr is None:
                if any(st < 0 for st in arr.strides):
                    raise LaunchError(f"{name}: the tensor's strides {arr.strides} are negative",
                                      expected="non-negative strides")
                span = _span_view(arr)
                alloc = gmem.allocate(max(span.size, 1), name=f"{name}.tensor")
                alloc.upload(span)
                addr = alloc.base
                self.sim_allocation = alloc     # lets a caller read back what TMA stores wrote
                self.sim_view = arr
            tm = dataclasses.replace(tm, global_address=addr)
        try:
            return tm.encode()
        except LaunchError as e:
            e.message = f"{name}: {e.message}"
            raise e.with_context()

    def write_back(self) -> None:
        """After a launch that placed the map's tensor in a buffer of its own (:meth:`encode_for_sim`): write the
        elements the view covers back into the caller's array (a read-only array is left alone)."""
        arr, alloc = getattr(self, "sim_view", None), getattr(self, "sim_allocation", None)
        if arr is not None and alloc is not None:
            write_span(arr, alloc.download())

    def to_driver_args(self, global_address: int | None = None) -> tuple:
        """The arguments of ``cuTensorMapEncodeTiled`` after ``tensorMap``: ``(tensorDataType, tensorRank,
        globalAddress, globalDim, globalStrides, boxDim, elementStrides, interleave, swizzle, l2Promotion,
        oobFill)`` as ints / tuples of ints (enum values in driver numbering)."""
        addr = self.global_address if global_address is None else int(global_address)
        return (self.data_type.enum, self.rank, addr, tuple(self.global_dims), tuple(self.global_strides),
                tuple(self.box_dims), tuple(self.element_strides), INTERLEAVES[self.interleave],
                SWIZZLE_MODES[self.swizzle], L2_PROMOTIONS[self.l2_promotion], OOB_FILLS[self.oob_fill])


# ---------------------------------------------------------------------------------------------- tensormap.replace
#: ``.elemtype`` new_val (PTX numbering) -> CUtensorMapDataType name.  PTX orders .f32.ftz, .f64, .bf16 as
#: 8, 9, 10 where the driver enum has FLOAT64 8, BFLOAT16 9, FLOAT32_FTZ 10 (Triton's launcher keeps the same
#: device->host table, TMA_DTYPE_DEVICE_TO_HOST).
PTX_ELEMTYPES = ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT32_FTZ",
                 "FLOAT64", "BFLOAT16", "TFLOAT32", "TFLOAT32_FTZ", "16U4_ALIGN8B", "16U4_ALIGN16B",
                 "16U6_ALIGN16B")
#: ``.swizzle_mode`` new_val -> swizzle span; ``.swizzle_atomicity`` new_val -> atomicity
PTX_SWIZZLE_SPANS = ("none", "32B", "64B", "128B")
PTX_SWIZZLE_ATOMICITIES = ("16B", "32B", "32B_flip_8B", "64B")
#: (span, atomicity) -> CUtensorMapSwizzle name; other pairs have no driver encoding
PTX_SWIZZLES = {("none", "16B"): "none", ("32B", "16B"): "32B", ("64B", "16B"): "64B", ("128B", "16B"): "128B",
                ("128B", "32B"): "128B_atom_32B", ("128B", "32B_flip_8B"): "128B_atom_32B_flip_8B",
                ("128B", "64B"): "128B_atom_64B"}
_SWIZZLE_PARTS = {v: k for k, v in PTX_SWIZZLES.items()}
PTX_INTERLEAVES = ("none", "16B", "32B")
PTX_FILL_MODES = ("zero", "nan")

#: field -> (takes an ord operand, new_val type, immediate new_val required, number of legal new_val codes or
#: None).  Immediate-only fields and their ranges are ptxas 13.0's ("Integer constant expression expected",
#: "value 'v' expected to be in range [0..n-1]"); ``ord`` is always an immediate 0..4.
REPLACE_FIELDS = {
    "global_address": (False, "b64", False, None),
    "rank": (False, "b32", False, None),
    "box_dim": (True, "b32", False, None),
    "global_dim": (True, "b32", False, None),
    "global_stride": (True, "b64", False, None),
    "element_stride": (True, "b32", False, None),
    "elemtype": (False, "b32", True, len(PTX_ELEMTYPES)),
    "interleave_layout": (False, "b32", True, len(PTX_INTERLEAVES)),
    "swizzle_mode": (False, "b32", True, len(PTX_SWIZZLE_SPANS)),
    "swizzle_atomicity": (False, "b32", True, len(PTX_SWIZZLE_ATOMICITIES)),
    "fill_mode": (False, "b32", True, len(PTX_FILL_MODES)),
}
MAX_ORD = 4


def replace_field(raw, field: str, new_val: int, ord: int | None = None) -> bytes:
    """The 128 bytes ``raw`` (tcsim's encoding, or zeros) with one field replaced as ``tensormap.replace.tile
    .<field>`` does; returns the new 128 bytes (header written).  Raises :class:`VerifyError` for a value the
    PTX ISA does not allow for the field and :class:`UnsupportedError` for one tcsim's layout cannot hold
    (a 4th global stride, a swizzle span/atomicity pair with no CUtensorMapSwizzle value)."""
    from .errors import UnsupportedError, VerifyError

    if field not in REPLACE_FIELDS:
        raise UnsupportedError(f"tensormap.replace field .{field} is unknown",
                               expected=f"one of {', '.join('.' + f for f in REPLACE_FIELDS)}")
    buf = bytearray(bytes(raw)[:SIZE].ljust(SIZE, b"\0"))
    takes_ord, vtype, _, ncodes = REPLACE_FIELDS[field]
    v = int(new_val) & ((1 << 64) - 1 if vtype == "b64" else (1 << 32) - 1)
    if takes_ord:
        if ord is None or not 0 <= int(ord) <= MAX_ORD:
            raise VerifyError(f"tensormap.replace.{field}: ord {ord} is out of range", expected="ord 0..4")
        ord = int(ord)

    def bad(what, expected):
        raise VerifyError(f"tensormap.replace.{field}: {what}", expected=expected)

    if ncodes is not None and v >= ncodes:
        bad(f"new value {v} is not a valid .{field} code", f"0..{ncodes - 1}")
    if field == "global_address":
        struct.pack_into("<Q", buf, 0, v)
    elif field == "rank":
        if v > 4:
            bad(f"new value {v} is not a rank code (the field holds rank - 1)", "0..4 (ranks 1..5)")
        struct.pack_into("<B", buf, 74, v + 1)
    elif field == "box_dim":
        if not 1 <= v <= 256:
            bad(f"box size {v} (dimension {ord}) is out of range", "1..256")
        struct.pack_into("<B", buf, 64 + ord, v - 1)
    elif field == "global_dim":
        if v == 0:
            bad(f"global size 0 (dimension {ord})", "a size of 1 or more")
        struct.pack_into("<I", buf, 8 + 4 * ord, v - 1)
    elif field == "global_stride":
        if ord >= 4:
            raise UnsupportedError(f"tensormap.replace.global_stride ord {ord}: a tensor map has global strides "
                                   f"for dimensions 1..4 only (ord 0..3); tcsim's encoding holds no 5th",
                                   expected="ord 0..3 (ord i is the byte stride of dimension i + 1)")
        struct.pack_into("<Q", buf, 32 + 8 * ord, v)
    elif field == "element_stride":
        if not 1 <= v <= 8:
            bad(f"element stride {v} (dimension {ord}) is out of range", "1..8")
        struct.pack_into("<B", buf, 69 + ord, v - 1)
    elif field == "elemtype":
        struct.pack_into("<B", buf, 75, DATA_TYPES[PTX_ELEMTYPES[v]].enum)
    elif field == "interleave_layout":
        struct.pack_into("<B", buf, 76, INTERLEAVES[PTX_INTERLEAVES[v]])
    elif field == "fill_mode":
        struct.pack_into("<B", buf, 79, OOB_FILLS[PTX_FILL_MODES[v]])
    else:   # swizzle_mode / swizzle_atomicity: one CUtensorMapSwizzle byte holds both
        cur = buf[77]
        inv = {e: n for n, e in SWIZZLE_MODES.items()}
        span, atom = _SWIZZLE_PARTS.get(inv.get(cur), ("none", "16B"))
        if field == "swizzle_mode":
            span = PTX_SWIZZLE_SPANS[v]
        else:
            atom = PTX_SWIZZLE_ATOMICITIES[v]
        name = PTX_SWIZZLES.get((span, atom))
        if name is None:
            raise UnsupportedError(f"tensormap.replace.{field}: swizzle span {span} with atomicity {atom} has no "
                                   f"CUtensorMapSwizzle value, so tcsim's encoding cannot hold it",
                                   expected="atomicity 32B / 32B+8B flip / 64B only with swizzle_mode 128B "
                                            "(replace swizzle_mode first)")
        struct.pack_into("<B", buf, 77, SWIZZLE_MODES[name])
    struct.pack_into("<IH", buf, 120, MAGIC, VERSION)
    return bytes(buf)
