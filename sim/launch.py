"""The launch description shared by every back end, and the simulator's launcher.

A :class:`Launch` names a kernel (PTX text, a path or a parsed module), the grid/block/cluster shape, the
dynamic SMEM size and the arguments, in kernel-parameter order:

* a ``numpy.ndarray`` for a pointer parameter (``.u64``/``.b64``/``.s64``): copied into a device buffer; the
  result carries the buffer's final contents with the same dtype and shape;
* a Python/numpy scalar for a scalar parameter (range-checked against the parameter's type);
* a tensor map (``tcsim.isa.tensormap.TensorMap``) for a 128-byte ``.param .align 64 .b8 name[128]`` parameter;
  its tensor is one of the array arguments (matched by identity) or an array of its own;
* ``bytes`` for any ``.b8`` array parameter (copied verbatim);
* :class:`Pointer` ``(array)``: the array's device address, for a 64-bit scalar parameter or a ``.b8`` array
  parameter (CuTe DSL passes a tensor as ``.param .align 8 .b8 p[8]``); :class:`Struct` ``(field, ...)``:
  fields (:class:`Pointer` s, numpy scalars, ``bytes``) packed with C alignment into a ``.b8`` array parameter
  (a CuTe tensor with dynamic shape/strides, a TiledMma's runtime fields).  The arrays they point to become
  device buffers like array arguments; the result holds the pointed array's final contents (``Struct``: a list,
  one per pointer field).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tcsim.isa import ir
from tcsim.isa.errors import LaunchError
from tcsim.isa.tensormap import HOST_RANGES, as_numpy, is_torch, memory_key
from .memory import GlobalMemory
from .ptxtypes import SIZE, view_dtype


@dataclass
class Launch:
    ptx: object                       # PTX text, a path to a .ptx file, or an isa.ir.Module
    kernel: str | None = None
    grid: tuple = (1, 1, 1)
    block: tuple = (32, 1, 1)
    cluster: tuple = (1, 1, 1)
    dynamic_smem: int = 0
    args: list = field(default_factory=list)
    name: str | None = None           # a label for reports
    lowering: frozenset = frozenset()  # lowering variants to decode with (tcsim.lowering; differential tools only)
    #: launched with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION after the previous launch of a sequence
    #: (:func:`tcsim.launch.run_sequence`): this grid may begin before that one completes
    programmatic: bool = False
    #: per-thread stack bytes for recursive device functions (cudaLimitStackSize; CUDA's default 1024)
    stack_size: int = 1024
    #: the stack frame of each device function (tcsim.linker): None -- tcsim's model; "ptxas" -- the SASS frame
    #: sizes ``ptxas -v`` reports (needs ptxas on PATH), which match the GPU's; or a dict name -> bytes
    stack_frames: object = None
    #: the non-portable cluster opt-in (cudaFuncAttributeNonPortableClusterSizeAllowed): clusters of up to 16 CTAs
    #: instead of the portable 8 (tcsim.limits)
    non_portable_cluster: bool = False
    #: registers per thread the kernel uses (``ptxas -v``: "Used N registers"), checked against the register file
    #: (64 K per CTA) and ``.maxnreg``; "ptxas": ask ptxas (needs it on PATH); None: not checked (PTX does not say;
    #: tcsim.limits)
    registers: object = None
    #: the element type each pointer parameter points to, where the PTX (an untyped .u64) does not say: a sequence
    #: in parameter order or a dict name -> type, each None (unchecked) or a type name ("f16", "bf16", "f32",
    #: "s32", "u8"..., optionally with a trailing "*") or a numpy dtype.  A kernel with a C++ mangled name
    #: (``_Z9mma_16x16PK6__halfS1_PS_i``) has its pointer types read from it (tcsim.isa.mangling) when this is None.
    #: An array argument whose dtype is not the declared type (nor an integer of the same size: bit patterns) is a
    #: LaunchError naming the argument, unless ``cast``
    signature: object = None
    #: convert an array argument whose dtype differs from its parameter's declared element type to that type
    #: (``array.astype``) instead of rejecting it; the result holds the converted array
    cast: bool = False

    def __post_init__(self):
        from . import lowering
        from .linker import check_stack_size
        self.stack_size = check_stack_size(self.stack_size)
        if not (self.stack_frames is None or self.stack_frames == "ptxas" or isinstance(self.stack_frames, dict)):
            raise LaunchError(f"stack_frames={self.stack_frames!r}", expected="None, 'ptxas' or a dict function -> "
                              "bytes")
        try:
            self.lowering = lowering.check(self.lowering)
        except (ValueError, TypeError) as e:
            raise LaunchError(f"Launch lowering={self.lowering!r}: {e}",
                              expected="a set of tcsim.lowering.VARIANTS names (each also as <variant>@<line>)") from None
        from .limits import byte_count, check_dims, dim3
        self.grid = dim3(self.grid, "grid")
        self.block = dim3(self.block, "block")
        self.cluster = dim3(self.cluster, "cluster")
        if not isinstance(self.non_portable_cluster, (bool, np.bool_)):
            # (a string would be truthy whatever it says: 'no' must not opt in)
            raise LaunchError(f"non_portable_cluster={self.non_portable_cluster!r} is not True or False",
                              expected="non_portable_cluster=True to allow clusters of up to 16 CTAs (the non-portable "
                                       "cluster size opt-in), else False")
        check_dims(self.grid, self.block, self.cluster, bool(self.non_portable_cluster))
        self.dynamic_smem = byte_count(self.dynamic_smem, "dynamic_smem")
        if isinstance(self.args, (str, bytes, np.ndarray)) or not hasattr(self.args, "__iter__"):
            raise LaunchError(f"args={self.args!r} is not a list of arguments",
                              expected="args as a list, one entry per kernel parameter")
        self.args = list(self.args)
        if self.kernel is not None and not isinstance(self.kernel, str):
            raise LaunchError(f"kernel={self.kernel!r} is not a kernel name", expected="kernel as a str or None")

    def frame_sizes(self, module) -> dict | None:
        """The stack frames ``stack_frames`` asks for (function name -> bytes), or None for tcsim's model."""
        if self.stack_frames != "ptxas":
            return self.stack_frames
        from tcsim.isa.ptxas import stack_frames
        if isinstance(self.ptx, ir.Module):
            raise LaunchError("stack_frames='ptxas' needs the launch's PTX text, not a parsed module")
        frames = stack_frames(self.ptx_text()[0], module.arch or "sm_90a")
        if frames is None:
            raise LaunchError("stack_frames='ptxas' but ptxas is not on PATH",
                              expected="the CUDA toolkit's ptxas, or stack_frames=None (tcsim's frame model)")
        return frames

    # ---------------------------------------------------------------------------------- the PTX
    def ptx_text(self) -> tuple[str, str]:
        """(text, source name) of the PTX."""
        p = self.ptx
        if isinstance(p, ir.Module):
            raise TypeError("launch holds a parsed module; no text")
        if isinstance(p, (bytes, bytearray)):
            return _decode_ptx(bytes(p), "ptx=<bytes>"), self.name or "<ptx>"
        if not isinstance(p, (str, Path)):
            raise LaunchError(f"ptx={p!r} is not PTX", expected="ptx as PTX text, a path to a .ptx file or a "
                              "parsed tcsim.isa.ir.Module")
        if isinstance(p, Path) or ("\n" not in p and p.endswith(".ptx")) or \
                ("\n" not in p and len(p) < 4096 and _is_dir(p)):
            path = Path(p)
            if not path.exists():
                raise LaunchError(f"ptx={str(p)!r}: PTX file {path} does not exist")
            if path.is_dir():
                raise LaunchError(f"ptx={str(p)!r} is a directory", expected="ptx as PTX text or the path of a "
                                  ".ptx file")
            try:
                raw = path.read_bytes()
            except OSError as e:
                raise LaunchError(f"ptx={str(p)!r}: cannot read {path}: {e.strerror or e}") from None
            return _decode_ptx(raw, str(path)), str(path)
        return str(p), self.name or "<ptx>"

    def module(self) -> ir.Module:
        if isinstance(self.ptx, ir.Module):
            return self.ptx
        from tcsim.isa.parser import parse
        text, name = self.ptx_text()
        return parse(text, name)

    def shared_module(self) -> ir.Module:
        """:meth:`module` from the process's program cache (:mod:`tcsim.program_cache`): parsed once per PTX text
        and shared, read-only, by every launch of that text (what :class:`Prepared` runs)."""
        if isinstance(self.ptx, ir.Module):
            return self.ptx
        from tcsim.isa.parser import parse
        from .program_cache import PROGRAMS
        text, name = self.ptx_text()
        return PROGRAMS.module(text, name, parse)


@dataclass(frozen=True, eq=False)
class Pointer:
    """The device address of ``array`` (a numpy array that becomes a device buffer), as a kernel argument or a
    :class:`Struct` field."""

    array: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "torch", is_torch(self.array))
        object.__setattr__(self, "array", as_numpy(self.array))
        if not isinstance(self.array, np.ndarray):
            raise LaunchError(f"Pointer needs a numpy array (or a torch CPU tensor), got {type(self.array).__name__}")


@dataclass(frozen=True, eq=False)
class Struct:
    """Bytes for a ``.b8`` array parameter built from ``fields``: :class:`Pointer` (8 bytes, align 8), a numpy
    scalar (its dtype's bytes and alignment, e.g. ``np.int32(5)``), ``bytes`` (align 1) or a tensor map
    (:class:`tcsim.isa.tensormap.TensorMap`: its 128 bytes, align 64 -- ThunderKittens' global-layout structs hold
    the CUtensorMap at offset 128).

    Without ``offsets`` each field goes at the next offset aligned to its alignment (C rules).  With ``offsets``
    (one per field) each goes exactly there; a field that is misaligned, overlaps another or ends past ``size`` (or
    past the parameter) is a :class:`~tcsim.isa.errors.LaunchError` naming the field.  ``size``: the struct's byte
    size (the rest is zero)."""

    fields: tuple
    offsets: tuple | None = None
    size: int | None = None

    def __init__(self, *fields, offsets=None, size=None):
        object.__setattr__(self, "fields", tuple(fields))
        for f in self.fields:
            if not (isinstance(f, (Pointer, np.generic, bytes, bytearray)) or hasattr(f, "encode_for_sim")):
                raise LaunchError(f"Struct field {f!r} is not a Pointer, a numpy scalar or bytes (nor a TensorMap)",
                                  expected="Pointer(array), np.int32(...)/np.int64(...)/..., bytes or TensorMap")
        if offsets is not None:
            offsets = tuple(int(o) for o in offsets)
            if len(offsets) != len(self.fields):
                raise LaunchError(f"Struct has {len(self.fields)} fields but {len(offsets)} offsets",
                                  expected="one offset per field")
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "size", None if size is None else int(size))

    def pointers(self) -> list:
        return [f for f in self.fields if isinstance(f, Pointer)]

    def tensor_maps(self) -> list:
        return [f for f in self.fields if hasattr(f, "encode_for_sim")]

    def pointer_offsets(self) -> list:
        """``[offset, nbytes]`` of each :class:`Pointer` field: where the packed struct holds it and the size of
        the buffer it points to (the trace differ's relocation extent of that word)."""
        marks = {}

        def mark(arr):
            return marks.setdefault(id(arr), (0x7C5A << 48) + len(marks), )

        raw = self.pack(mark, lambda tm: bytes(128))
        sizes = {marks[id(f.array)]: int(f.array.nbytes) for f in self.pointers()}
        words = np.frombuffer(raw[:len(raw) // 8 * 8], np.uint64)
        return [[8 * k, sizes[int(w)]] for k, w in enumerate(words) if int(w) in sizes]

    @staticmethod
    def _align_of(f) -> int:
        if isinstance(f, Pointer):
            return 8
        if isinstance(f, np.generic):
            return f.dtype.itemsize
        if hasattr(f, "encode_for_sim"):
            return 64
        return 1

    def pack(self, address_of, tensor_map_bytes=None, limit: int | None = None, what: str = "Struct") -> bytes:
        """The struct's bytes: ``address_of(array)`` gives a Pointer's value, ``tensor_map_bytes(tm)`` a tensor map's
        128 bytes; ``limit``: the parameter's size."""
        out = bytearray()
        placed = []
        for j, f in enumerate(self.fields):
            if isinstance(f, Pointer):
                raw = np.uint64(address_of(f.array)).tobytes()
            elif isinstance(f, np.generic):
                raw = f.tobytes()
            elif hasattr(f, "encode_for_sim"):
                if tensor_map_bytes is None:
                    raise LaunchError(f"{what} field {j} is a tensor map, which needs a launch to be encoded")
                raw = bytes(tensor_map_bytes(f))
            else:
                raw = bytes(f)
            align = self._align_of(f)
            if self.offsets is None:
                off = len(out) + (-len(out) % align)
            else:
                off = self.offsets[j]
                if off < 0 or off % align:
                    raise LaunchError(f"{what} field {j} ({type(f).__name__}) at offset {off} is misaligned",
                                      expected=f"an offset that is a non-negative multiple of {align}")
            end = off + len(raw)
            for (o2, e2, k) in placed:
                if off < e2 and o2 < end:
                    raise LaunchError(f"{what} field {j} (bytes {off}..{end - 1}) overlaps field {k} (bytes "
                                      f"{o2}..{e2 - 1})", expected="disjoint field offsets")
            # (a positional struct that outgrows its parameter is reported whole by the launcher: "packs N bytes")
            caps = [x for x in (self.size, limit if self.offsets is not None else None) if x is not None]
            cap = min(caps) if caps else None
            if cap is not None and end > cap:
                raise LaunchError(f"{what} field {j} ends at byte {end}, past the {cap}-byte "
                                  f"{'struct' if cap == self.size else 'parameter'}",
                                  expected=f"fields inside {cap} bytes")
            placed.append((off, end, j))
            if len(out) < end:
                out += bytes(end - len(out))
            out[off:end] = raw
        if self.size is not None and len(out) < self.size:
            out += bytes(self.size - len(out))
        return bytes(out)


def _is_dir(p: str) -> bool:
    try:
        return Path(p).is_dir()
    except (OSError, ValueError):
        return False


def _decode_ptx(raw: bytes, name: str) -> str:
    """PTX bytes as text: the rule and diagnostic of ``tcsim check`` (:func:`tcsim.isa.lexer.decode_source`)."""
    from tcsim.isa.lexer import decode_source
    return decode_source(raw, name)


@dataclass
class Result:
    """What a launch produced: one entry per argument (arrays for array arguments, None otherwise)."""

    outputs: list
    stats: dict
    stdout: list = field(default_factory=list)
    globals: dict = field(default_factory=dict)
    simulation: object = None
    notes: list = field(default_factory=list)     # isa.lint notes: PTX whose GPU result depends on ptxas
    timing: object = None                         # sim.timing.stats.TimingReport (timing on), else None
    findings: list = field(default_factory=list)  # tcsim.findings.Finding: sync bugs / hazards found (sanitizer)

    def __getitem__(self, i):
        return self.outputs[i]


#: the integers a .uN / .sN / .bN parameter accepts: [-2^(N-1), 2^N), written as their N-bit two's-complement
#: pattern, as the CUDA launcher does (it copies the C argument's bytes; Triton declares i32 arguments .u32)
_INT_RANGES = {t: (-(1 << (8 * s - 1)), (1 << (8 * s)) - 1) for t, s in SIZE.items() if t[0] in "sub"}


def encode_scalar(value, param: ir.Param) -> bytes:
    t = param.type
    if t in ("f32", "f64", "f16"):
        try:
            return np.asarray(float(value), dtype=view_dtype(t) if t != "f16" else np.float16).tobytes()
        except (TypeError, ValueError):
            raise LaunchError(f"argument for parameter {param.name} (.{t}) must be a number, got {value!r}",
                              param.loc) from None
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise LaunchError(f"argument for parameter {param.name} (.{t}) must be an integer, got {value!r}",
                          param.loc)
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if not isinstance(value, (int, np.integer, float, np.floating)):
        raise LaunchError(f"argument for parameter {param.name} (.{t}) must be an integer, got "
                          f"{type(value).__name__}", param.loc)
    v = int(value)
    lo, hi = _INT_RANGES.get(t, (None, None))
    if lo is None:
        raise LaunchError(f"parameter {param.name} has type .{t}, which tcsim cannot fill from a scalar",
                          param.loc)
    if not lo <= v <= hi:
        raise LaunchError(f"argument {v} does not fit parameter {param.name} (.{t})", param.loc,
                          expected=f"a value in [{lo}, {hi}]")
    size = SIZE[t]
    return (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def prepare_arguments(launch: Launch, kernel: ir.Function, program, gmem: GlobalMemory, shared: dict | None = None):
    """Allocate buffers, encode parameters; returns (param_image, buffers) with buffers[i] = (alloc, array).
    ``shared`` (a launch sequence's): id(array) -> allocation of the arrays earlier launches placed; an array
    found there is that buffer (not uploaded again), a new one is added."""
    params = kernel.params
    args = [as_numpy(a) for a in launch.args]
    declared = declared_pointees(launch, kernel) if len(args) == len(params) else None
    if len(args) != len(params):
        sig = ", ".join(f".{p.type}{'[%d]' % p.array if p.array else ''} {p.name}" for p in params)
        raise LaunchError(f"kernel {kernel.name} takes {len(params)} parameters ({sig}) but the launch passes "
                          f"{len(args)} arguments", kernel.loc,
                          expected=f"{len(params)} arguments in parameter order")
    image = np.zeros(max(program.param_size, 1), dtype=np.uint8)
    buffers: list = [None] * len(args)
    by_id: dict = {}

    def device_buffer(i, p, arr_in, what="", share=True):
        """A device buffer holding ``arr_in``; a Pointer to an array that already has one shares it."""
        alloc = by_id.get(id(arr_in)) if share else None
        if alloc is None and shared is not None:
            alloc = shared.get(id(arr_in), (None, None))[0]
        if alloc is None:
            arr = np.ascontiguousarray(arr_in)
            alloc = gmem.allocate(arr.nbytes, name=f"arg{i}({p.name}){what}")
            alloc.upload(arr)
            by_id[id(arr_in)] = alloc
            if shared is not None:
                shared[id(arr_in)] = (alloc, arr_in)    # the array is kept alive, so its id stays its own
            # the same memory seen through another array object (a torch tensor's numpy view, a TensorMap's own
            # reference) finds this buffer too (tcsim.isa.tensormap.memory_key)
            by_id.setdefault(memory_key(arr_in), alloc)
            if arr_in.flags.c_contiguous:           # views into it (TensorMap tensors) find it by address
                by_id.setdefault(HOST_RANGES, []).append((arr_in.__array_interface__["data"][0], arr_in.nbytes,
                                                          alloc))
        return (alloc, arr_in)

    # first pass: arrays become buffers (so tensor maps can refer to them)
    for i, (a, p) in enumerate(zip(args, params)):
        if isinstance(a, np.ndarray):
            a = args[i] = check_array_dtype(i, p, a, declared[i] if declared else None, launch.cast)
        elif isinstance(a, Pointer):
            check_array_dtype(i, p, a.array, declared[i] if declared else None, False)
        if isinstance(a, np.ndarray) and not (p.array and p.type == "b8"):
            if p.type not in ("u64", "b64", "s64"):
                raise LaunchError(f"argument {i} is an array but parameter {p.name} has type .{p.type}",
                                  p.loc, expected="a 64-bit pointer parameter (.u64/.b64) for an array")
            buffers[i] = device_buffer(i, p, a, share=False)
        elif isinstance(a, Pointer):
            if not ((p.array and p.type == "b8" and p.size_bytes >= 8) or p.type in ("u64", "b64", "s64")):
                raise LaunchError(f"argument {i} is a Pointer but parameter {p.name} is .{p.type}"
                                  f"{'[%d]' % p.array if p.array else ''}", p.loc,
                                  expected="a 64-bit parameter or a .b8 array of at least 8 bytes")
            buffers[i] = device_buffer(i, p, a.array)
        elif isinstance(a, Struct):
            if not (p.array and p.type == "b8"):
                raise LaunchError(f"argument {i} is a Struct but parameter {p.name} is .{p.type}", p.loc,
                                  expected="a .b8 array parameter")
            buffers[i] = [device_buffer(i, p, f.array, f".field{j}") for j, f in enumerate(a.pointers())]
    for i, (a, p) in enumerate(zip(args, params)):
        off = program.param_symbols[p.name].offset
        if isinstance(a, Struct):
            own = {id(arr): alloc.base for alloc, arr in buffers[i]}

            def tmap_bytes(tm, i=i, p=p):
                return _tensor_map_bytes(tm, gmem, by_id, f"arg{i}({p.name})", program)
            try:
                raw = a.pack(lambda arr: own[id(arr)], tmap_bytes, limit=p.size_bytes, what=f"argument {i} Struct")
            except LaunchError as e:
                raise e.with_context(loc=p.loc)
            if len(raw) > p.size_bytes:
                raise LaunchError(f"argument {i} packs {len(raw)} bytes; parameter {p.name} holds {p.size_bytes}",
                                  p.loc)
        elif buffers[i] is not None:
            raw = np.uint64(buffers[i][0].base).tobytes()
        elif hasattr(a, "encode_for_sim"):
            if not (p.array and p.size_bytes >= 128):
                raise LaunchError(f"argument {i} is a tensor map but parameter {p.name} is .{p.type} "
                                  f"(needs .param .align 64 .b8 {p.name}[128])", p.loc)
            raw = _tensor_map_bytes(a, gmem, by_id, f"arg{i}({p.name})", program)
        elif isinstance(a, (bytes, bytearray)) or (isinstance(a, np.ndarray) and p.array):
            raw = bytes(a) if not isinstance(a, np.ndarray) else a.tobytes()
            if len(raw) > p.size_bytes:
                raise LaunchError(f"argument {i} has {len(raw)} bytes; parameter {p.name} holds {p.size_bytes}",
                                  p.loc)
        elif p.array:
            raise LaunchError(f"parameter {p.name} is a {p.size_bytes}-byte array; pass bytes or a tensor map",
                              p.loc)
        else:
            raw = encode_scalar(a, p)
        image[off:off + len(raw)] = np.frombuffer(bytes(raw), dtype=np.uint8)
    return image, buffers


#: element type names -> numpy dtype names (ml_dtypes for bf16 / fp8)
_ELEMENT_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "e4m3": "float8_e4m3fn",
                   "e5m2": "float8_e5m2", "s8": "int8", "u8": "uint8", "s16": "int16", "u16": "uint16",
                   "s32": "int32", "u32": "uint32", "s64": "int64", "u64": "uint64"}
_DTYPE_ELEMENTS = {v: k for k, v in _ELEMENT_DTYPES.items()}
_SIZES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2,
          "s32": 4, "u32": 4, "s64": 8, "u64": 8}
#: dtype kinds that are never device data: objects, str/bytes, datetimes
_NOT_DEVICE_DATA = {"O": "Python objects", "U": "str", "S": "bytes strings", "M": "datetimes", "m": "timedeltas"}


def _element_dtype(elem: str) -> np.dtype:
    name = _ELEMENT_DTYPES[elem]
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def _normalise_declared(t, where: str):
    """A :attr:`Launch.signature` entry as (element type, elements per value), or None."""
    if t is None:
        return None
    if isinstance(t, str):
        name = t.strip().rstrip("*").strip()
        name = {"half": "f16", "float": "f32", "double": "f64", "bfloat16": "bf16", "void": "any",
                "char": "any"}.get(name, name)
        if name == "any":
            return ("any", 1)
        if name in _ELEMENT_DTYPES:
            return (name, 1)
        if name in _DTYPE_ELEMENTS:
            return (_DTYPE_ELEMENTS[name], 1)
    else:
        try:
            dt = np.dtype(t)
        except TypeError:
            dt = None
        if dt is not None and dt.name in _DTYPE_ELEMENTS:
            return (_DTYPE_ELEMENTS[dt.name], 1)
    raise LaunchError(f"signature: {where} declares {t!r}, which is not an element type",
                      expected="None, a type name (" + ", ".join(_ELEMENT_DTYPES) + ", 'void') or a numpy dtype")


def declared_pointees(launch, kernel: ir.Function) -> list | None:
    """Per parameter, the declared element type of what it points to ((type, elements per value) or None), from
    :attr:`Launch.signature` or else the kernel's mangled name (:mod:`tcsim.isa.mangling`); None: nothing known."""
    sig = launch.signature
    params = kernel.params
    if sig is None:
        from tcsim.isa.mangling import pointee_types
        return pointee_types(kernel.name, len(params))
    if isinstance(sig, dict):
        names = {p.name for p in params}
        for k in sig:
            if k not in names:
                raise LaunchError(f"signature names {k!r}, which is not a parameter of kernel {kernel.name}",
                                  kernel.loc, expected="parameter names: " + ", ".join(p.name for p in params))
        return [_normalise_declared(sig.get(p.name), f"parameter {p.name}") for p in params]
    if isinstance(sig, (str, bytes)) or not hasattr(sig, "__len__"):
        raise LaunchError(f"signature={sig!r} is neither a sequence nor a dict",
                          expected="one type per parameter, or a dict parameter name -> type")
    if len(sig) != len(params):
        raise LaunchError(f"signature has {len(sig)} entries but kernel {kernel.name} takes {len(params)} "
                          "parameters", kernel.loc, expected=f"{len(params)} entries in parameter order")
    return [_normalise_declared(t, f"entry {i}") for i, t in enumerate(sig)]


def check_array_dtype(i: int, p: ir.Param, a: np.ndarray, declared, cast: bool) -> np.ndarray:
    """Argument ``i`` (an array for parameter ``p``) against its element type ``declared`` ((type, elements per
    value) or None); returns the array to upload (converted when ``cast``)."""
    kind = a.dtype.kind
    if kind in _NOT_DEVICE_DATA:
        raise LaunchError(f"argument {i} (parameter {p.name}) is an array of {_NOT_DEVICE_DATA[kind]} "
                          f"(dtype {a.dtype}), which is not device data", p.loc,
                          expected="a numeric numpy array (or a torch CPU tensor)")
    if declared is None or declared[0] not in _SIZES:
        return a
    elem, per = declared
    want = _element_dtype(elem)
    size = _SIZES[elem]
    ok = a.dtype == want or elem == "u8"                 # (uint8_t* is the raw-bytes idiom: any data)
    if not ok and kind in "iub":                         # integers of the same size (bit patterns)
        ok = a.dtype.itemsize == size
    if not ok and elem[0] in "su" and kind != "c":       # an integer pointer over same-size data: bit patterns
        ok = a.dtype.itemsize == size
    if not ok and kind == "c" and elem in ("f32", "f64") and per >= 2:
        ok = a.dtype.itemsize == 2 * size                # cuComplex / float2 data as complex numbers
    if ok:
        return a
    if cast:
        try:
            with np.errstate(all="ignore"):
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return np.ascontiguousarray(a).astype(want)
        except (TypeError, ValueError) as e:
            raise LaunchError(f"argument {i} (parameter {p.name}): cannot cast {a.dtype} to {want}: {e}",
                              p.loc) from None
    raise LaunchError(f"argument {i} (parameter {p.name}) is a {a.dtype} array but the kernel's parameter points "
                      f"to {elem}" + (f" (x{per})" if per > 1 else ""), p.loc,
                      expected=f"a {want} array (or a {size}-byte integer array of bit patterns), or "
                               f"Launch(cast=True) to convert it")


def _tensor_map_bytes(tm, gmem, by_id, name, program) -> bytes:
    raw = tm.encode_for_sim(gmem, by_id, name=name)
    if hasattr(tm, "check_device"):
        try:
            tm.check_device(program.module.arch)
        except LaunchError as e:
            e.message = f"{name}: {e.message}"
            raise
    return raw


def allocate_globals(module: ir.Module, gmem: GlobalMemory) -> dict:
    """Allocate and initialise module-scope ``.global`` variables; returns name -> address."""
    addrs = {}
    decls = [v for v in module.globals if v.space == "global"]
    for v in decls:
        if v.linkage == "extern":
            raise LaunchError(f"extern .global variable {v.name} has no definition", v.loc)
        try:
            alloc = gmem.allocate(max(v.size_bytes, 1), name=v.name, align=max(v.alignment, 16))
        except (MemoryError, ValueError) as e:      # numpy: "Unable to allocate", "Maximum allowed dimension"
            raise LaunchError(f".global variable {v.name} ({v.size_bytes:,} bytes) cannot be allocated: {e}",
                              v.loc, expected="a .global variable that fits in the simulating host's memory") \
                from None
        addrs[v.name] = alloc.base
    for v in decls:
        if v.init:
            alloc = gmem.allocation_of(addrs[v.name])
            alloc.upload(np.frombuffer(encode_init(v, addrs), dtype=np.uint8)[:v.size_bytes])
    return addrs


def encode_init(v: ir.VarDecl, symbols: dict) -> bytes:
    es = SIZE[v.type]
    out = bytearray()
    for item in v.init:
        if isinstance(item, ir.Imm):
            if v.type in ("f32", "f64"):
                val = np.asarray(item.value, dtype=view_dtype(v.type)).tobytes() if item.kind == "int" or \
                    (item.kind == "f64" and v.type == "f32") else int(item.bits).to_bytes(es, "little")
                out += val
            else:
                out += (int(item.value) & ((1 << (8 * es)) - 1)).to_bytes(es, "little")
        elif isinstance(item, ir.Sym):
            if item.name not in symbols:
                raise LaunchError(f"initialiser of {v.name} refers to {item.name}, which tcsim cannot place",
                                  v.loc)
            out += ((symbols[item.name] + item.offset) & ((1 << (8 * es)) - 1)).to_bytes(es, "little")
        else:
            raise LaunchError(f"unsupported initialiser {item} for {v.name}", v.loc)
    out += bytes(max(0, v.size_bytes - len(out)))
    return bytes(out)


def const_image(module: ir.Module, program, symbols: dict) -> np.ndarray:
    img = np.zeros(max(sum(s.size for s in program.const_symbols.values()) + 64, 64), dtype=np.uint8)
    for name, s in program.const_symbols.items():
        if s.decl.init:
            raw = encode_init(s.decl, symbols)
            img[s.offset:s.offset + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return img


class Prepared:
    """A launch set up on the simulator, not yet run (shared by :func:`run_launch` and the debugger)."""

    def __init__(self, launch: Launch, *, seed=None, trace=None, max_instructions=None, observers=(),
                 tma_params=None, tensor_pipe_params=None, async_copy_params=None, timing=False,
                 strict: bool = False, schedule=None, detect: bool = True, gmem: GlobalMemory | None = None,
                 shared_buffers: dict | None = None, grid_dependency=None, tier: str | None = None,
                 max_seconds=None, progress=None):
        from .engine import Simulation, load_program
        from .launch_options import check_run_options, open_trace
        from .limits import check_max_instructions, check_max_seconds, check_resources, check_seed
        from .observe import ObservationBus
        from .timing.params import timing_config

        if not isinstance(launch, Launch):
            raise LaunchError(f"expected a tcsim.launch.Launch, got {type(launch).__name__}")
        seed = check_seed(seed)
        max_instructions = check_max_instructions(max_instructions)
        max_seconds = check_max_seconds(max_seconds)
        check_run_options(trace=trace, observers=observers, timing=timing, schedule=schedule,
                          units={"tma_params": tma_params, "tensor_pipe_params": tensor_pipe_params,
                                 "async_copy_params": async_copy_params})
        self.launch = launch
        from .program_cache import PROGRAMS
        self.module = launch.shared_module()
        frames = launch.frame_sizes(self.module)
        self.program = PROGRAMS.program(self.module, launch.kernel, launch.lowering, frames,
                                        lambda: load_program(self.module, launch.kernel, lowering=launch.lowering,
                                                             frames=frames))
        check_resources(self.program, launch)        # before anything is allocated (tcsim.limits)
        self.gmem = GlobalMemory() if gmem is None else gmem
        self.global_symbols = allocate_globals(self.module, self.gmem)
        image, self.buffers = prepare_arguments(launch, self.program.kernel, self.program, self.gmem, shared_buffers)
        self.bus = ObservationBus()
        self.tracer = None
        if trace is not None:
            self.tracer = open_trace(trace)
            self.bus.subscribe(self.tracer)
        for o in observers:
            self.bus.subscribe(o)
        self.sim = Simulation(self.program, self.gmem, image, grid=launch.grid, block=launch.block,
                              cluster=launch.cluster, dynamic_smem=launch.dynamic_smem, seed=seed, bus=self.bus,
                              global_symbols=self.global_symbols,
                              const_image=const_image(self.module, self.program, self.global_symbols),
                              max_instructions=max_instructions, max_seconds=max_seconds, strict=strict,
                              progress=progress, non_portable_cluster=launch.non_portable_cluster,
                              schedule=schedule, stack_size=launch.stack_size,
                              timing=timing_config(self.program.module.arch, timing,
                                                   [u for u in (tma_params, tensor_pipe_params, async_copy_params)
                                                    if u is not None]),
                              grid_dependency=grid_dependency, tier=tier)
        if self.tracer is not None and hasattr(self.tracer, "set_header"):     # the JSONL trace's header record
            self.tracer.set_header(kernel=self.program.kernel.name, launch=launch.name, arch=self.sim.arch,
                                   clock_mhz=float(self.sim.arch_config.sm_clock_mhz), grid=launch.grid,
                                   block=launch.block, cluster=launch.cluster,
                                   timing=bool(self.sim.arch_config.timed))
        #: the happens-before race detector (:mod:`tcsim.race.hb`), subscribed when ``detect`` is on
        self.detector = None
        if detect:
            from .race.hb import HappensBefore
            self.detector = HappensBefore(self.sim)
            self.bus.subscribe(self.detector)

    def close(self) -> None:
        if self.tracer is not None:
            self.tracer.close()
            self.tracer = None

    def result(self) -> Result:
        sim = self.sim
        outputs = []

        def contents(b):
            alloc, orig = b
            return alloc.download(orig.nbytes).view(orig.dtype).reshape(orig.shape)

        def torch_if(x, was_torch):
            if not was_torch:
                return x
            import torch
            if x.dtype.name == "bfloat16":
                return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
            return torch.from_numpy(x)

        for a, b in zip(self.launch.args, self.buffers):
            if b is None:
                outputs.append(None)
            elif isinstance(b, list):
                ptrs = a.pointers() if isinstance(a, Struct) else []
                outputs.append([torch_if(contents(x), getattr(q, "torch", False)) for x, q in zip(b, ptrs)])
            else:
                outputs.append(torch_if(contents(b), is_torch(a) or getattr(a, "torch", False)))
        # tensor maps whose tensor got a buffer of its own write it back into the caller's array
        for a in self.launch.args:
            for tm in ([a] if hasattr(a, "write_back") else a.tensor_maps() if isinstance(a, Struct) else []):
                tm.write_back()
        glob = {}
        for v in self.module.globals:
            if v.space == "global" and v.name in self.global_symbols:
                glob[v.name] = self.gmem.allocation_of(self.global_symbols[v.name]).download()
        stats = {"cycles": int(sim.env.now), "warp_instructions": sim.retired,
                 "lane_instructions": sim.lane_instructions, "wall_s": sim.wall_time,
                 "ctas": len(sim.ctas) + sim.retention.ctas, "warps": len(sim.warps) + sim.retention.warps,
                 "timing": bool(sim.arch_config.timed)}
        from tcsim.isa.lint import notes
        from .program_cache import PROGRAMS
        return Result(outputs=outputs, stats=stats, stdout=list(sim.stdout), globals=glob,
                      simulation=sim, notes=PROGRAMS.notes(self.module, lambda: notes(self.module)), timing=sim.timing_report(),
                      findings=list(sim.findings.items))


def run_launch(launch: Launch, *, seed: int | None = None, trace=None, max_instructions: int | None = None,
               observers=(), timing=False, strict: bool = False, schedule=None, detect: bool = True,
               tier: str | None = None, max_seconds: float | None = None, progress=None, **units) -> Result:
    """Simulate ``launch`` and return its :class:`Result`.  ``trace`` is a JSONL path or file object;
    ``tma_params`` / ``tensor_pipe_params`` / ``async_copy_params`` (the agents' ``*Params``) replace the async
    units' parameters in the run's arch config (:meth:`tcsim.timing.params.ArchConfig.with_units`).

    ``timing``: False (default) -- the functional preset of the target's config (``ArchConfig.untimed()``): every
    warp-instruction takes one cycle (fast; what functional tests use); True -- the cycle-approximate model of the
    kernel's ``.target`` (:mod:`tcsim.timing`); or an :class:`tcsim.timing.params.ArchConfig` to run under.  With
    timing on, ``Result.timing`` holds the :class:`tcsim.timing.stats.TimingReport` (per-warp stalls, unit
    utilisation, tensor throughput).  Results of a race-free kernel are the same either way.

    Sanitizer mode (default): synchronisation bugs and hazards found on the way are recorded in
    ``Result.findings`` (:class:`tcsim.findings.Finding`) and the run goes on; one that ends the launch on the GPU
    (a trap, a hang) raises, with every finding so far in the exception's ``findings``.  ``strict=True`` raises
    :class:`tcsim.findings.FindingError` at the first finding.

    ``schedule``: a :class:`tcsim.explore.Schedule` perturbing warp order and async completion times within what
    the hardware allows (what ``tcsim run --explore`` / ``--schedule K`` runs; :func:`tcsim.explore.explore`).

    ``detect`` (default on): run the happens-before race detector (:mod:`tcsim.race.hb`), which reports unordered
    and unfenced accesses (classes 2, 5-10, 14, 16, 19-21) as findings; ``detect=False`` skips it.

    ``tier``: the execution tier (:mod:`tcsim.fast`): 'reference' or 'fast' (lockstep groups; same results, traces
    and cycles); None takes :func:`tcsim.fast.default_tier`.

    The run's budget (:mod:`tcsim.watch`): ``max_instructions`` warp-instructions and/or ``max_seconds`` of
    simulation work (CPU time); with neither given, :data:`tcsim.watch.DEFAULT_MAX_SECONDS`.  A run that outlasts
    it raises :class:`~tcsim.isa.errors.RunawayError` naming where each warp is; a run in which every live warp
    polls with no state change raises :class:`~tcsim.isa.errors.LivelockError`; Ctrl-C raises
    :class:`~tcsim.isa.errors.RunInterrupted` with every warp's position.  ``progress``: None -- a progress line on
    stderr, when it is a terminal, once the run is longer than ~2 s; True -- on stderr in any case; False -- none;
    a file -- write it there."""
    from .launch_options import check_run_options
    from .limits import check_max_instructions, check_max_seconds, check_seed
    check_seed(seed), check_max_instructions(max_instructions), check_max_seconds(max_seconds)
    check_run_options(units=units)
    if not isinstance(launch, Launch):
        raise LaunchError(f"expected a tcsim.launch.Launch, got {type(launch).__name__}")
    prep = Prepared(launch, seed=seed, trace=trace, max_instructions=max_instructions, observers=observers,
                    timing=timing, strict=strict, schedule=schedule, detect=detect, tier=tier,
                    max_seconds=max_seconds, progress=progress, **units)
    try:
        prep.sim.run()
    finally:
        prep.close()
    return prep.result()


@dataclass
class SequenceResult:
    """What :func:`run_sequence` produced: one :class:`tcsim.launch.Result` per launch, in order."""

    results: list
    #: per launch: the cycle (of that grid's own clock) from which its dependent could begin, or None
    release_cycles: list
    findings: list = field(default_factory=list)

    def __getitem__(self, i):
        return self.results[i]

    def __len__(self) -> int:
        return len(self.results)


def run_sequence(launches, *, seed: int | None = None, strict: bool = False, detect: bool = True,
                 max_instructions: int | None = None, timing=False, max_seconds: float | None = None,
                 progress=None) -> SequenceResult:
    """Run ``launches`` (:class:`Launch`) in order on one stream, in one global memory.  A launch with
    ``programmatic=True`` is launched with programmatic stream serialization after the one before it (the rules
    and how tcsim runs them: :mod:`tcsim.grid_dependency`).  Array arguments passed to several launches (the same
    numpy array object) are one device buffer; each result's outputs hold the buffers' contents when that grid
    finished."""
    from .grid_dependency import GridAccessLog, GridDependency

    launches = list(launches)
    if not launches:
        raise LaunchError("run_sequence needs at least one launch")
    if launches[0].programmatic:
        raise LaunchError("the first launch of a sequence has no prerequisite grid to overlap with",
                          expected="programmatic=False on the first launch")
    shared: dict = {}
    gmem = None
    results, releases, findings = [], [], []
    inflight: GridAccessLog | None = None
    for i, launch in enumerate(launches):
        nxt = launches[i + 1] if i + 1 < len(launches) else None
        deps = GridDependency(programmatic=bool(launch.programmatic),
                              prerequisites=inflight if launch.programmatic else None)
        prep = Prepared(launch, seed=seed, strict=strict, detect=detect, max_instructions=max_instructions,
                        timing=timing, gmem=gmem, shared_buffers=shared, grid_dependency=deps,
                        max_seconds=max_seconds, progress=progress)
        gmem = prep.gmem
        log = None
        if nxt is not None and nxt.programmatic:
            log = GridAccessLog(f"grid {i} ({launch.name or prep.program.kernel.name})")
            prep.bus.subscribe(log)
        try:
            prep.sim.run()
        finally:
            prep.close()
        res = prep.result()
        results.append(res)
        findings.extend(res.findings)
        rel = deps.release_cycle(c.ctaid for c in prep.sim.ctas)          # (and the compacted CTAs': retention)
        releases.append(None if rel is None else max(rel, prep.sim.retention.release))
        if log is not None:
            log.name_lines(prep.module)
            if launch.programmatic and inflight is not None and deps.releases_before_waiting():
                log.extend(inflight)          # this grid's own prerequisites may still be in flight too
            inflight = log
        else:
            inflight = None
    return SequenceResult(results, releases, findings)
