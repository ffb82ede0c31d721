"""Run CuTe DSL programs (``@cute.jit`` host functions launching ``@cute.kernel`` s) in tcsim, compiled by the
DSL on the CPU.

::

    import tcsim.cute as tc
    tc.launch(add, a, b, c, arch="sm_100a")            # add is a @cute.jit function; c (numpy/torch CPU) is written
    prep = tc.prepare(add, a, b, c, arch="sm_90a")     # stop before running: prep.launches are tcsim Launches
    prep.save("add.ptx"); tc.replay("add.ptx", a, b, c)  # the same launch later, without the DSL

Arguments are numpy arrays or CPU torch tensors (handed to the DSL as ``cute.runtime.from_dlpack(x)``: static
shapes and strides; :func:`tensor` (``dynamic=True``) marks the layout dynamic, so shapes and strides become
kernel parameters), and whatever else the ``@cute.jit`` function takes (Python scalars, ``cutlass.Int32(...)``,
constexprs) passed through unchanged; parameters annotated ``cutlass.Constexpr`` are compiled in and not passed
to the compiled function again.  numpy arrays of ml_dtypes' bfloat16 / float8 types (which numpy cannot export
through DLPack) are handed over as their bits with the DSL element type set; read-only arrays are accepted as
inputs.  What the kernels write lands in the caller's arrays.

**How** (nvidia-cutlass-dsl 4.8.1): the DSL compiles the program for ``CUTE_DSL_ARCH`` (sm_100a or sm_90a) without
a GPU: device code to PTX (kept with the DSL's ``keep_ptx``), host code JIT-compiled by MLIR's execution engine
and linked against the runtime library named by ``CUTE_DSL_LIBS``.  tcsim compiles a stand-in for that library
(``cute_rt/tcsim_cute_rt.c``, built with the system C compiler at first use into ``$XDG_CACHE_HOME/tcsim``) and
selects it for the compile.  Calling the compiled function then runs the DSL's own host code -- which computes
grid, block, cluster, dynamic SMEM and the parameter bytes, and encodes TMA descriptors -- and every
``cudaLaunchKernelEx`` / ``cudaLaunchKernel`` and ``cuTensorMapEncodeTiled`` it makes arrives in a Python
callback instead of the driver.  Each recorded launch becomes a :class:`tcsim.launch.Launch` of the kernel's PTX:

* parameter bytes are read with the sizes the PTX ``.entry`` declares; every 8-byte-aligned 64-bit word inside a
  parameter that holds a host address inside an array argument becomes a :class:`tcsim.launch.Pointer` to the
  device buffer of that array (a pointer past the array's first element gets a buffer of its own from there, as
  in :mod:`tcsim.triton`); other bytes are copied verbatim (scalars decoded by their PTX type);
* a 128-byte ``.align 64`` parameter is a CUtensorMap.  The DSL's TMA atoms (``make_tiled_tma_atom``) do not call
  the driver: the host code writes the map's bytes itself, in the driver's undocumented format.
  :func:`decode_inline_tensor_map` reads the forms seen in the DSL's output (tiled maps of rank 2 to 5;
  u8/u32/f16/f32/bf16; every swizzle) and refuses anything else with a located error; a map the host code does encode through
  ``cuTensorMapEncodeTiled`` is taken from the call's arguments.  Either way it becomes a
  :class:`tcsim.isa.tensormap.TensorMap` (element type, dims, byte strides, box, element strides, interleave,
  swizzle, OOB fill) over the device buffer of the array holding its global address -- so TMA traffic reaches the
  caller's array;
* launches run in the order the host code made them; after each, what it changed is written into the caller's
  arrays (so a later launch sees it).

The device attributes the host code may query answer as the simulated device (max opt-in SMEM per block 232448
bytes, 148 SMs for sm_100a / 132 for sm_90a, warp size 32, ...); kernel attributes (static SMEM) read as 0.

**Without the DSL**: :meth:`CuteLaunch.save` writes the PTX and a JSON record of the launches (kernel, grid,
block, cluster, SMEM, each parameter as bytes / pointer into argument *k* at offset *o* / tensor map over
argument *k*); :func:`replay` rebuilds the launches with new arrays of the same shapes and dtypes.

On the GPU back end (``tcsim diff --against gpu``, :mod:`tcsim.hw.launcher`) these launches run as they are: the
:class:`~tcsim.launch.Struct`, shared :class:`~tcsim.launch.Pointer` and host tensor-map arguments are laid out on
the device as the simulator lays them out (as in :mod:`tcsim.triton`; tests/fixtures/frontend holds a rank-3 TMA
launch file).

Errors a caller can make (the DSL missing, an unsupported arch, a compile error in the DSL program, an argument of
the wrong kind, a parameter holding a host address outside every array argument) raise
:class:`tcsim.isa.errors.LaunchError` (DSL compile errors: :class:`CuteCompileError`) located at the ``@cute.jit``
function's definition.

Not supported: inline tensor maps of rank 1 or of element types not seen in the DSL's output (tf32,
f64, 64-bit integers, fp8, the packed types) -- refused, not guessed; im2col maps; launches whose host code
allocates device memory, uses streams/events/graphs or copies memory (``cudaMalloc``/``cudaMemcpy``: the stand-in
runtime answers cudaErrorNotSupported and the DSL raises); TVM-FFI compiled functions (``enable_tvm_ffi``); a
process that already loaded the DSL's real runtime library for a GPU (the stand-in is chosen per compile, but
symbols already bound by an earlier engine stay bound).  Arrays with negative strides cannot be handed to ``from_dlpack`` either.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tcsim.isa.errors import LaunchError, SourceLoc, TcsimError
from .launch import Launch, Pointer, Result, Struct, run_launch
from .triton import HostTensorMap, as_host_array, Regions, sim_options

#: tcsim architecture -> SM count the stand-in runtime reports (B200 / H100 SXM)
ARCHES = {"sm_100a": 148, "sm_90a": 132}
_RT_SOURCE = Path(__file__).with_name("cute_rt") / "tcsim_cute_rt.c"
_MAGIC = b"tcsim.cute.tmap#"
_LOCK = threading.RLock()


class CuteCompileError(TcsimError):
    """The CuTe DSL rejected the program (a type error, an unsupported construct, ...)."""

    kind = "CuTe DSL compile error"


# ------------------------------------------------------------------------------------------ the DSL
def _cute():
    """``(cutlass, cutlass.cute, from_dlpack)``, or a clean error saying how to get them."""
    try:
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import from_dlpack
    except ImportError as e:
        raise LaunchError(f"tcsim.cute needs the CuTe DSL, which cannot be imported here ({e})",
                          expected="`pip install nvidia-cutlass-dsl==4.8.1` (no GPU needed)") from None
    return cutlass, cute, from_dlpack


def _fn_loc(fn) -> SourceLoc | None:
    """file:line of the ``def`` of a ``@cute.jit`` function (the location of a front-end diagnostic)."""
    try:
        py = inspect.unwrap(fn)
    except ValueError:
        py = fn
    code = getattr(py, "__code__", None)
    if code is None:
        return None
    try:
        src, start = inspect.getsourcelines(py)
        for i, text in enumerate(src):
            if text.lstrip().startswith("def "):
                return SourceLoc(code.co_filename, start + i, 1, text.rstrip("\n"))
    except (OSError, TypeError):
        pass
    return SourceLoc(code.co_filename, code.co_firstlineno, 1)


# ------------------------------------------------------------------------------------------ the stand-in runtime
def runtime_library() -> Path:
    """The stand-in runtime library, compiled from ``cute_rt/tcsim_cute_rt.c`` with the system C compiler (``$CC``,
    else ``cc``/``gcc``/``clang``) on first use and cached by source hash."""
    src = _RT_SOURCE.read_bytes()
    digest = hashlib.sha256(src).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tcsim"
    lib = cache / f"tcsim_cute_rt-{digest}.so"
    if lib.exists():
        return lib
    cc = os.environ.get("CC") or next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if cc is None:
        raise LaunchError("tcsim.cute builds a small C library at first use and finds no C compiler",
                          expected="a C compiler on PATH (cc, gcc or clang) or $CC")
    try:
        cache.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
        os.close(fd)
    except OSError:
        cache = Path(tempfile.gettempdir()) / f"tcsim-{os.getuid()}"
        cache.mkdir(parents=True, exist_ok=True)
        lib = cache / lib.name
        if lib.exists():
            return lib
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
        os.close(fd)
    proc = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", tmp, str(_RT_SOURCE)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise LaunchError(f"compiling tcsim.cute's runtime library with {cc} failed:\n{proc.stderr.strip()}",
                          expected="a working C compiler")
    os.replace(tmp, lib)
    return lib


_LAUNCH_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32),
                              ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint32),
                              ctypes.POINTER(ctypes.c_void_p))
_TMAP_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                            ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                            ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32), ctypes.c_int,
                            ctypes.c_int, ctypes.c_int, ctypes.c_int)
_rt = None


def _runtime():
    global _rt
    if _rt is None:
        path = runtime_library()
        lib = ctypes.CDLL(str(path))
        _rt = (path, lib)
    return _rt


# cudaDeviceAttr values the host code may read (CUDA runtime API enum), as the simulated device has them
_DEVICE_ATTRS = {1: 1024, 2: 1024, 3: 1024, 4: 64, 5: 2 ** 31 - 1, 6: 65535, 7: 65535, 8: 49152, 10: 32,
                 12: 65536, 81: 233472, 82: 65536, 97: 232448, 39: 2048, 106: 32}


@contextlib.contextmanager
def _recording(arch: str, recorder):
    """The DSL set to compile for ``arch`` keeping PTX and linking the stand-in runtime; the runtime's callbacks
    feeding ``recorder``."""
    path, lib = _runtime()
    _, cute, _ = _cute()
    from cutlass.cutlass_dsl import CuTeDSL
    env = CuTeDSL._get_dsl().envar
    saved = {k: getattr(env, k) for k in ("_arch", "shared_libs", "keep_ptx", "dump_dir")}
    with _LOCK, tempfile.TemporaryDirectory(prefix="tcsim-cute-") as dump:
        env._arch, env.shared_libs, env.keep_ptx, env.dump_dir = arch, str(path), True, dump
        cc = int(arch[3:].rstrip("a"))
        attrs = {**_DEVICE_ATTRS, 16: ARCHES[arch], 75: cc // 10, 76: cc % 10}
        for k, v in attrs.items():
            lib.tcsim_rt_set_attribute(k, v)
        lcb, tcb = _LAUNCH_CB(recorder.on_launch), _TMAP_CB(recorder.on_tensor_map)
        lib.tcsim_rt_set_callbacks(lcb, tcb)
        try:
            yield cute
        finally:
            lib.tcsim_rt_set_callbacks(None, None)
            for k, v in saved.items():
                setattr(env, k, v)


# ------------------------------------------------------------------------------------------ inline tensor maps
def decode_inline_tensor_map(raw: bytes) -> dict | None:
    """The fields of a CUtensorMap that the CuTe DSL's host code encoded itself (its TMA atoms write the 128 bytes
    directly instead of calling ``cuTensorMapEncodeTiled``), or None when ``raw`` is not of a form read off the
    DSL's output.  The driver documents the map as opaque; this reading comes from nvidia-cutlass-dsl 4.8.1's
    encodings of tiled maps of rank 2 to 5, varied one field at a time (``tests/sim/test_cute_frontend.py`` checks
    it by running TMA kernels of every rank to the right answer): 64-bit words, little-endian --

    * word 0: the global address (16-byte aligned);
    * word 1, bits 0-3: 0b0010; bits 4-6: rank - 1 (1 to 4 seen); bits 7-11: element type in the PTX ``tensormap``
      numbering (u8 0, u32 2, f16 6, f32 7, bf16 10 seen); bits 13-14: swizzle (0 none, 1 32B, 2 64B, 3 128B);
      bits 16-19: 0b0100; bits 20-21: set to 2 in some rank-5 f32 maps (taken for the L2 promotion, which tcsim
      does not model); bits 32-63: global stride of dim 1 in 16-byte units;
    * the global strides of dims 2, 3, 4 in 16-byte units, 32 bits each: word 2 bits 0-31, word 2 bits 32-63,
      word 3 bits 0-31;
    * the global dims minus one, 32 bits each: dims 0 and 1 in word 4, dims 2 and 3 in word 5, dim 4 in word 6
      bits 0-31;
    * bytes 55 to 59: box dims 0 to 4, minus one;
    * every field of a dimension beyond the rank, the rest of words 3, 6 and 7: zero (element strides 1, no
      interleave); bytes 64-127 unused.

    Anything else (rank 1, another element type, set bits elsewhere) is refused rather than guessed; the L2
    promotion is recorded as ``none`` and the OOB fill is zero."""
    if len(raw) < 64:
        return None
    w = [int.from_bytes(raw[8 * i:8 * i + 8], "little") for i in range(8)]
    lo = w[1] & 0xFFFFFFFF
    ptx_types = {0: "UINT8", 2: "UINT32", 6: "FLOAT16", 7: "FLOAT32", 10: "BFLOAT16"}
    known = 0xF | (0x7 << 4) | (0x1F << 7) | (0x3 << 13) | (0xF << 16) | (0x3 << 20)
    rank = ((lo >> 4) & 0x7) + 1
    strides = [w[1] >> 32, w[2] & 0xFFFFFFFF, w[2] >> 32, w[3] & 0xFFFFFFFF]
    dims = [w[4] & 0xFFFFFFFF, w[4] >> 32, w[5] & 0xFFFFFFFF, w[5] >> 32, w[6] & 0xFFFFFFFF]
    box = [raw[55 + i] for i in range(5)]
    if (w[0] & 0xF or lo & 0xF != 0b0010 or not 2 <= rank <= 5 or (lo >> 16) & 0xF != 0b0100
            or lo & ~known & 0xFFFFFFFF or (lo >> 7) & 0x1F not in ptx_types
            or w[3] >> 32 or (w[6] >> 32) & 0xFFFFFF or w[7] >> 32
            or any(strides[rank - 1:]) or any(dims[rank:]) or any(box[rank:])):
        return None
    return dict(dtype=ptx_types[(lo >> 7) & 0x1F], rank=rank, address=w[0],
                dims=[d + 1 for d in dims[:rank]], strides=[x * 16 for x in strides[:rank - 1]],
                box=[b + 1 for b in box[:rank]], element_strides=[1] * rank, interleave=0,
                swizzle=(lo >> 13) & 0x3, l2=0, oob=0)


# ------------------------------------------------------------------------------------------ arguments
@dataclass(eq=False)
class TensorArg:
    """An array argument with the DSL options of its ``from_dlpack`` (see :func:`tensor`)."""

    array: object
    dynamic: bool = False
    assumed_align: int | None = None
    leading_dim: int | None = None
    element_type: object = None


def tensor(array, *, dynamic: bool = False, assumed_align: int | None = None, leading_dim: int | None = None,
           element_type=None):
    """An array argument given to the DSL as ``from_dlpack(array, assumed_align=...)``, with
    ``.mark_layout_dynamic(leading_dim)`` when ``dynamic`` (shapes and strides become kernel parameters) and the
    DSL element type set to ``element_type`` (a ``cutlass`` numeric type, e.g. for bits carried as uint8)."""
    return TensorArg(array, dynamic, assumed_align, leading_dim, element_type)


#: ml_dtypes numpy types -> (the carrier DLPack can export, the cutlass type the DSL gets)
_NARROW = {"bfloat16": (np.uint16, "BFloat16"), "float8_e4m3fn": (np.uint8, "Float8E4M3FN"),
           "float8_e5m2": (np.uint8, "Float8E5M2")}


@dataclass
class _Recorder:
    """What the stand-in runtime reported during one call of the compiled function."""

    entries: dict                     # kernel name -> ir.Function (the PTX's .entry)
    launches: list = field(default_factory=list)
    maps: list = field(default_factory=list)
    error: BaseException | None = None

    def on_launch(self, name, grid, block, smem, cluster, args):
        try:
            kname = name.decode()
            fn = self.entries.get(kname)
            if fn is None:
                raise LaunchError(f"the DSL launched kernel {kname!r}, which is not in the compiled PTX",
                                  expected=f"one of {', '.join(self.entries)}")
            params = []
            for i, p in enumerate(fn.params):
                params.append(ctypes.string_at(args[i], p.size_bytes))
            self.launches.append(dict(kernel=kname, grid=[grid[i] for i in range(3)],
                                      block=[block[i] for i in range(3)], smem=int(smem),
                                      cluster=[cluster[i] for i in range(3)], params=params))
            return 0
        except BaseException as e:          # never unwind through the C frames
            self.error = self.error or e
            return 1

    def on_tensor_map(self, out, dtype, rank, gaddr, dims, strides, box, estrides, interleave, swizzle, l2, oob):
        try:
            k = len(self.maps)
            from tcsim.isa.tensormap import DATA_TYPES_BY_ENUM
            if int(dtype) not in DATA_TYPES_BY_ENUM:
                raise LaunchError(f"cuTensorMapEncodeTiled with unknown data type {int(dtype)}")
            self.maps.append(dict(dtype=DATA_TYPES_BY_ENUM[int(dtype)].name, rank=int(rank), address=int(gaddr or 0),
                                  dims=[int(dims[i]) for i in range(rank)],
                                  strides=[int(strides[i]) for i in range(rank - 1)],
                                  box=[int(box[i]) for i in range(rank)],
                                  element_strides=[int(estrides[i]) for i in range(rank)],
                                  interleave=int(interleave), swizzle=int(swizzle), l2=int(l2), oob=int(oob)))
            ctypes.memmove(out, _MAGIC + k.to_bytes(8, "little") + bytes(128 - len(_MAGIC) - 8), 128)
            return 0
        except BaseException as e:
            self.error = self.error or e
            return 1


# ------------------------------------------------------------------------------------------ the prepared launch
@dataclass
class CuteLaunch:
    """A CuTe DSL program compiled and recorded as tcsim :class:`~tcsim.launch.Launch` es (``launches``, in the
    order the host code made them), not yet run.  ``compiled`` is the DSL's compiled function (None after
    :func:`replay`); ``record`` what :meth:`save` writes beside the PTX."""

    launches: list
    ptx: str
    regions: Regions
    arg_regions: list                 # per launch: {launch argument index: region (or [regions] of a Struct)}
    named: dict                       # argument label -> region
    record: dict
    compiled: object = None
    loc: SourceLoc | None = None

    @property
    def launch(self) -> Launch:
        """The one launch (an error when the program launched several kernels: see ``launches``)."""
        if len(self.launches) != 1:
            raise LaunchError(f"the program made {len(self.launches)} launches; use .launches", self.loc)
        return self.launches[0]

    def device_contents(self, index: int, result: Result) -> dict:
        out = {}
        for i, regs in self.arg_regions[index].items():
            if isinstance(regs, list):
                for reg, final in zip(regs, result.outputs[i]):
                    out[reg] = final
            else:
                out[regs] = result.outputs[i]
        for reg in self.regions.by_key.values():
            if reg not in out and reg.alloc is not None:
                out[reg] = reg.alloc.download(reg.host.nbytes).view(reg.host.dtype)
                reg.alloc = None
        return out

    def write_back(self, index: int, result: Result) -> list[str]:
        """Write what launch ``index`` changed into the caller's arrays; returns the arguments written."""
        written = self.regions.write_back(self.device_contents(index, result))
        for reg in self.regions.by_key.values():
            reg.before = reg.host.copy()
        return written

    def run(self, sim: dict | None = None) -> "CuteRun":
        results, written = [], []
        for i, ln in enumerate(self.launches):
            res = run_launch(ln, **sim_options(sim))
            results.append(res)
            written += [w for w in self.write_back(i, res) if w not in written]
        return CuteRun(results=results, prepared=self, written=written)

    def save(self, ptx_path, json_path=None) -> None:
        """Write the PTX and the JSON launch record (default: the PTX path with ``.json``) for :func:`replay`."""
        ptx_path = Path(ptx_path)
        json_path = Path(json_path) if json_path else ptx_path.with_suffix(".json")
        ptx_path.write_text(self.ptx)
        json_path.write_text(json.dumps(self.record, indent=1) + "\n")


@dataclass
class CuteRun:
    """What :func:`launch` returns: one tcsim :class:`~tcsim.launch.Result` per launch, the prepared
    :class:`CuteLaunch` and the arguments whose arrays the kernels changed."""

    results: list
    prepared: CuteLaunch
    written: list = field(default_factory=list)

    @property
    def result(self) -> Result:
        return self.results[-1]

    @property
    def findings(self):
        return [f for r in self.results for f in r.findings]


def _constexpr_flags(fn, n: int) -> list[bool]:
    """Per positional argument: is its parameter annotated ``cutlass.Constexpr`` (compiled in, not passed again)."""
    try:
        params = list(inspect.signature(inspect.unwrap(fn)).parameters.values())
    except (TypeError, ValueError):
        params = []
    out = []
    for i in range(n):
        ann = params[i].annotation if i < len(params) else None
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", "") or repr(ann)
        out.append("Constexpr" in str(text))
    return out


def _labels(fn, n: int) -> list[str]:
    try:
        names = list(inspect.signature(getattr(fn, "__wrapped__", fn)).parameters)
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def _host_arrays(args, labels, loc):
    """(argument index -> numpy array) for the array arguments, checked."""
    arrays = {}
    for i, a in enumerate(args):
        v = a.array if isinstance(a, TensorArg) else a
        arr = as_host_array(v)
        if arr is None:
            if isinstance(a, TensorArg) or isinstance(v, (list, tuple)):
                raise LaunchError(f"argument {labels[i]}: {type(v).__name__} is not a numpy array or a CPU torch "
                                  f"tensor", loc, expected="a numpy array or a CPU torch tensor")
            continue
        if any(s < 0 for s in arr.strides):
            raise LaunchError(f"argument {labels[i]}: array strides {arr.strides} are negative", loc,
                              expected="non-negative strides (np.ascontiguousarray(x))")
        arrays[i] = arr
    return arrays


def _alias(arr: np.ndarray) -> np.ndarray:
    """A writable array over the same memory as read-only ``arr`` (what the DSL gets: it reads address, shape and
    strides; the kernel's writes reach the caller only through write-back, which refuses read-only arrays)."""
    if arr.size == 0:
        return np.zeros(arr.shape, arr.dtype)
    lo = arr.__array_interface__["data"][0]
    span = 1 + sum((d - 1) * s for d, s in zip(arr.shape, arr.strides))
    buf = (ctypes.c_char * (span + arr.itemsize - 1)).from_address(lo)
    return np.ndarray(arr.shape, arr.dtype, buffer=buf, strides=arr.strides)


def _scalar_dtype(p):
    kind = {"u": "u", "b": "u", "s": "i", "f": "f"}.get(p.type[0])
    return np.dtype(f"{kind}{p.size_bytes}") if kind and p.size_bytes in (1, 2, 4, 8) else None


def _layout(entries, launches, maps, arrays, labels, loc):
    """tcsim Launches (and the JSON record of their parameters) from the recorded launches: host addresses inside
    array arguments become device pointers, recorded tensor maps tcsim TensorMaps."""
    from tcsim.isa.swizzle import SWIZZLE_NAMES
    from tcsim.isa.tensormap import INTERLEAVES, L2_PROMOTIONS, OOB_FILLS, TensorMap
    regions = Regions()
    named = {labels[i]: regions.of(arr, labels[i]) for i, arr in arrays.items()}
    spans = [(arr.__array_interface__["data"][0], arr.__array_interface__["data"][0]
              + max(named[labels[i]].host.nbytes, 1), i) for i, arr in arrays.items()]

    def region_at(addr, what):
        for lo, hi, i in spans:
            if lo <= addr < hi:
                reg = named[labels[i]]
                off = addr - lo
                if off == 0:
                    return reg, i, 0
                if off % reg.host.itemsize:
                    raise LaunchError(f"{what}: address {addr:#x} is {off} bytes into argument {labels[i]}, not "
                                      f"at an element boundary", loc)
                sub = reg.host[off // reg.host.itemsize:]
                return regions.of(sub, f"{labels[i]}[+{off}B]"), i, off
        return None

    def index(table):
        return {v: k for k, v in table.items()}
    inv_il, inv_l2, inv_oob = index(INTERLEAVES), index(L2_PROMOTIONS), index(OOB_FILLS)
    out, per_launch, record = [], [], []
    for n, rec in enumerate(launches):
        fn = entries[rec["kernel"]]
        args, regs, rparams = [], {}, []
        for j, (p, raw) in enumerate(zip(fn.params, rec["params"])):
            short = rec["kernel"] if len(rec["kernel"]) <= 48 else rec["kernel"][:45] + "..."
            what = f"launch {n} ({short}) parameter {j}"
            inline = None
            if p.array and len(raw) == 128 and (p.align or 0) >= 64 and not raw.startswith(_MAGIC):
                inline = decode_inline_tensor_map(raw)
                if inline is None:
                    raise LaunchError(f"{what} is a CUtensorMap the CuTe DSL encoded inline in the driver's binary "
                                      f"format with fields tcsim.cute cannot decode (first 64 bytes: "
                                      f"{raw[:64].hex()})", loc,
                                      expected="a tiled map of rank 2 to 5 of the forms listed in tcsim.cute's "
                                               "docstring")
            if inline is not None or (p.array and len(raw) == 128 and raw.startswith(_MAGIC)):
                m = inline or maps[int.from_bytes(raw[len(_MAGIC):len(_MAGIC) + 8], "little")]
                hit = region_at(m["address"], f"{what} (tensor map)")
                if hit is None:
                    raise LaunchError(f"{what}: the tensor map's global address {m['address']:#x} is not inside "
                                      f"any array argument", loc, expected="a tensor map over an array argument")
                reg, k, off = hit
                try:
                    tm = TensorMap(dtype=m["dtype"], rank=m["rank"], global_address=0,
                                   global_dims=tuple(m["dims"]), global_strides=tuple(m["strides"]),
                                   box_dims=tuple(m["box"]), element_strides=tuple(m["element_strides"]),
                                   interleave=inv_il[m["interleave"]], swizzle=SWIZZLE_NAMES[m["swizzle"]],
                                   l2_promotion=inv_l2[m["l2"]], oob_fill=inv_oob[m["oob"]])
                except (LaunchError, KeyError, IndexError) as e:
                    raise LaunchError(f"{what}: cuTensorMapEncodeTiled arguments tcsim cannot encode ({e})",
                                      loc) from None
                args.append(HostTensorMap(reg, tm, f"{labels[k]} (tensor map)"))
                rparams.append(dict(tensor_map=m, arg=k, offset=off))
                continue
            fields, ptrs, chunk, pos = [], [], bytearray(), 0
            while pos < len(raw):
                word = int.from_bytes(raw[pos:pos + 8], "little") if pos % 8 == 0 and pos + 8 <= len(raw) else None
                hit = region_at(word, what) if word else None
                if hit is None:
                    chunk += raw[pos:pos + 1]
                    pos += 1
                    continue
                if chunk:
                    fields.append(bytes(chunk))
                    chunk = bytearray()
                reg, k, off = hit
                fields.append(Pointer(reg.host))
                ptrs.append((reg, k, off, pos))
                pos += 8
            if chunk:
                fields.append(bytes(chunk))
            rparams.append(dict(bytes=raw.hex(), pointers=[dict(at=at, arg=k, offset=off)
                                                            for _, k, off, at in ptrs]))
            if not ptrs:
                if p.array:
                    args.append(bytes(raw))
                else:
                    dt = _scalar_dtype(p)
                    if dt is None:
                        raise LaunchError(f"{what}: .{p.type} scalar parameters are not supported", loc)
                    args.append(np.frombuffer(raw, dt)[0])
                continue
            if not p.array or (len(fields) == 1 and len(raw) == 8):     # a lone pointer
                args.append(Pointer(ptrs[0][0].host))
                regs[j] = ptrs[0][0]
            else:
                args.append(Struct(*fields))
                regs[j] = [r for r, _, _, _ in ptrs]
        out.append(Launch(ptx=None, kernel=rec["kernel"], grid=tuple(rec["grid"]), block=tuple(rec["block"]),
                          cluster=tuple(rec["cluster"]), dynamic_smem=rec["smem"], args=args,
                          name=rec["kernel"]))
        per_launch.append(regs)
        record.append(dict(kernel=rec["kernel"], grid=rec["grid"], block=rec["block"], cluster=rec["cluster"],
                           smem=rec["smem"], params=rparams))
    return out, per_launch, regions, named, record


def _entries(module) -> dict:
    return {name: f for name, f in module.functions.items() if f.kind == "entry"}


def prepare(fn, *args, arch: str = "sm_100a") -> CuteLaunch:
    """Compile ``fn`` (a ``@cute.jit`` function) with the DSL for ``arch``, call it with the stand-in runtime
    and lay out each kernel launch it makes as a tcsim :class:`~tcsim.launch.Launch` (not yet run)."""
    loc = _fn_loc(fn)
    if arch not in ARCHES:
        raise LaunchError(f"tcsim.cute cannot compile for arch={arch!r}", loc,
                          expected=f"one of {', '.join(ARCHES)}")
    cutlass, _, from_dlpack = _cute()
    if not callable(fn) or not (hasattr(fn, "__wrapped__") or type(fn).__module__.startswith("cutlass")):
        raise LaunchError(f"tcsim.cute needs a @cute.jit function, got {type(fn).__name__}", loc,
                          expected="a function decorated with @cute.jit")
    labels = _labels(fn, len(args))
    arrays = _host_arrays(args, labels, loc)
    dsl_args = []
    for i, a in enumerate(args):
        if i not in arrays:
            dsl_args.append(a)
            continue
        opts = a if isinstance(a, TensorArg) else TensorArg(a)
        src = opts.array if not isinstance(opts.array, np.ndarray) else arrays[i]
        elem = opts.element_type
        if isinstance(src, np.ndarray) and not src.flags.writeable:
            src = _alias(src)      # numpy's DLPack refuses read-only arrays; the DSL only reads the address
        if isinstance(src, np.ndarray) and src.dtype.name in _NARROW:
            # numpy cannot export ml_dtypes' types through DLPack: pass the bits, name the type
            carrier, dsl_name = _NARROW[src.dtype.name]
            src, elem = src.view(carrier), elem or getattr(cutlass, dsl_name)
        try:
            t = from_dlpack(src, assumed_align=opts.assumed_align)
            if elem is not None:
                t.element_type = elem
            if opts.dynamic:
                t = t.mark_layout_dynamic(leading_dim=opts.leading_dim)
        except Exception as e:          # the DSL's own validation of the array
            raise LaunchError(f"argument {labels[i]}: the CuTe DSL does not accept this array ({e})", loc) \
                from None
        dsl_args.append(t)
    from tcsim.isa.parser import parse
    rec = _Recorder(entries={})
    with _recording(arch, rec) as cute:
        try:
            compiled = cute.compile(fn, *dsl_args)
        except TcsimError:
            raise
        except Exception as e:
            msg = str(e).strip()
            raise CuteCompileError(f"the CuTe DSL could not compile {getattr(fn, '__name__', fn)!r} for {arch}:\n"
                                   + "\n".join(msg.splitlines()[:30]), loc) from None
        ptx = getattr(compiled, "__ptx__", None)
        if not ptx:
            raise LaunchError(f"{getattr(fn, '__name__', fn)!r} compiled to no device code (no kernel launch?)",
                              loc, expected="a @cute.jit function that launches a @cute.kernel")
        module = parse(ptx, f"<{getattr(fn, '__name__', 'cute')} {arch}>")
        rec.entries = _entries(module)
        compiled.__dict__["num_devices"] = 1          # the DSL asks the CUDA driver otherwise
        try:
            compiled(*[a for a, c in zip(dsl_args, _constexpr_flags(fn, len(dsl_args))) if not c])
        except Exception as e:
            if rec.error is not None:
                raise rec.error from None
            raise LaunchError(f"the CuTe DSL host code of {getattr(fn, '__name__', fn)!r} failed without a GPU "
                              f"({str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__})", loc,
                              expected="host code that only launches kernels and encodes tensor maps") from None
        if rec.error is not None:
            raise rec.error
    if not rec.launches:
        raise LaunchError(f"{getattr(fn, '__name__', fn)!r} launched no kernel", loc)
    launches, per_launch, regions, named, record = _layout(rec.entries, rec.launches, rec.maps, arrays, labels,
                                                           loc)
    for ln in launches:
        ln.ptx = module
    record = dict(format="tcsim.cute/1", arch=arch, dsl_version=_dsl_version(), function=getattr(fn, "__name__", ""),
                  arguments=[dict(label=labels[i], dtype=arrays[i].dtype.str, shape=list(arrays[i].shape),
                                  strides=list(arrays[i].strides)) if i in arrays else dict(label=labels[i])
                             for i in range(len(args))],
                  launches=record)
    return CuteLaunch(launches=launches, ptx=ptx, regions=regions, arg_regions=per_launch, named=named,
                      record=record, compiled=compiled, loc=loc)


def _dsl_version() -> str:
    try:
        from importlib.metadata import version
        return version("nvidia-cutlass-dsl")
    except Exception:
        return "unknown"


def launch(fn, *args, arch: str = "sm_100a", sim: dict | None = None) -> CuteRun:
    """Compile ``fn`` (``@cute.jit``) for ``arch``, run every kernel it launches in tcsim and write the outputs
    into the caller's arrays.  ``sim``: keyword arguments of :func:`tcsim.launch.run_launch`."""
    return prepare(fn, *args, arch=arch).run(sim)


def replay(ptx_path, *args, json_path=None) -> CuteLaunch:
    """The launches :meth:`CuteLaunch.save` recorded, with new arrays (same dtypes, shapes and strides as the
    recorded ones, in the same argument positions); no DSL needed.  Non-array arguments are ignored (their values
    are in the recorded parameter bytes)."""
    ptx_path = Path(ptx_path)
    json_path = Path(json_path) if json_path else ptx_path.with_suffix(".json")
    try:
        rec = json.loads(json_path.read_text())
        ptx = ptx_path.read_text()
    except OSError as e:
        raise LaunchError(f"cannot read the saved CuTe DSL launch ({e})") from None
    loc = SourceLoc(str(json_path), 1, 1)
    want = rec["arguments"]
    if len(args) != len(want):
        raise LaunchError(f"the saved launch takes {len(want)} arguments "
                          f"({', '.join(a['label'] for a in want)}), got {len(args)}", loc)
    labels = [a["label"] for a in want]
    arrays = _host_arrays(args, labels, loc)
    for i, w in enumerate(want):
        if "dtype" not in w:
            continue
        arr = arrays.get(i)
        if arr is None or arr.dtype.str != w["dtype"] or list(arr.shape) != w["shape"] \
                or list(arr.strides) != w["strides"]:
            got = "not an array" if arr is None else f"{arr.dtype.str}{list(arr.shape)} strides {list(arr.strides)}"
            raise LaunchError(f"argument {w['label']}: {got}; the saved launch was compiled for "
                              f"{w['dtype']}{w['shape']} strides {w['strides']}", loc,
                              expected="an array of the recorded dtype, shape and strides")
    # rebuild the recorded parameter bytes with these arrays' addresses, then lay out as a live launch
    maps, launches = [], []
    for ln in rec["launches"]:
        params = []
        for p in ln["params"]:
            if "tensor_map" in p:
                m = dict(p["tensor_map"], address=arrays[p["arg"]].__array_interface__["data"][0] + p["offset"])
                params.append(_MAGIC + len(maps).to_bytes(8, "little") + bytes(128 - len(_MAGIC) - 8))
                maps.append(m)
                continue
            raw = bytearray(bytes.fromhex(p["bytes"]))
            for ptr in p["pointers"]:
                addr = arrays[ptr["arg"]].__array_interface__["data"][0] + ptr["offset"]
                raw[ptr["at"]:ptr["at"] + 8] = addr.to_bytes(8, "little")
            params.append(bytes(raw))
        launches.append(dict(ln, params=params))
    from tcsim.isa.parser import parse
    module = parse(ptx, str(ptx_path))
    entries = _entries(module)
    missing = [ln["kernel"] for ln in launches if ln["kernel"] not in entries]
    if missing:
        raise LaunchError(f"the saved PTX {ptx_path} has no kernel {missing[0]!r}", loc)
    lns, per_launch, regions, named, _ = _layout(entries, launches, maps, arrays, labels, loc)
    for ln in lns:
        ln.ptx = module
    return CuteLaunch(launches=lns, ptx=ptx, regions=regions, arg_regions=per_launch, named=named, record=rec,
                      compiled=None, loc=loc)
