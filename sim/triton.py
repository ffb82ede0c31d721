"""Launch Triton kernels (``@triton.jit``, and Gluon's ``@gluon.jit``) in tcsim, compiled by Triton on the CPU.

::

    import tcsim.triton as tt
    tt.launch(add_kernel, (n // 1024,), x, y, out, n, BLOCK=1024, arch="sm_100a", num_warps=4)   # out is written
    tt.Kernel(add_kernel, arch="sm_90a")[grid](x, y, out, n, BLOCK=1024)                  # the same, Triton-style

Arguments are numpy arrays (or CPU torch tensors, when torch is installed), Python/numpy scalars, constexprs (by
position or keyword), tuples of those, and host tensor descriptors (:func:`tensor_descriptor`, or Triton's own
``triton.tools.tensor_descriptor.TensorDescriptor`` over an array or tensor).  Keyword arguments that are not
kernel parameters are Triton compile options (``num_warps``, ``num_stages``, ``num_ctas``, ``maxnreg``,
``enable_fp_fusion``, ``ptx_version``, ...).  What the kernel writes lands in the caller's arrays.

What this does is what ``JITFunction.run`` and ``triton/backends/nvidia/driver.py`` do on a GPU machine, with tcsim
instead of the CUDA driver (read from Triton 3.9):

* **specialisation**: Triton's own binder (``triton.runtime.jit.create_function_from_signature``) with the backend of
  ``GPUTarget("cuda", 90 | 100, 32)`` decides each argument's type: ints are ``i32`` when they fit, else ``i64``
  (``u64`` from 2^63), the int 1 and ``None`` become constexprs, floats ``fp32``, bools ``u1``; pointers and ints
  divisible by 16 get ``tt.divisibility`` 16.  A pointer is the device address tcsim gives the array (256-byte
  aligned), so arrays specialise like fresh torch allocations.  Numpy scalars are taken as the Python value
  (Triton does not accept them).  The kernel is compiled by ``triton.compile(ASTSource(...) | GluonASTSource(...),
  target=GPUTarget(...), options=...)`` -- no GPU, no driver -- and the PTX is run in tcsim.
* **parameters**: constexprs vanish; a host ``TensorDescriptor`` becomes (128-byte CUtensorMap, shape as i32...,
  strides as i64...) -- the map encoded as ``fill_tma_descriptor_tiled`` does from the kernel's ``tensordesc_meta``
  (swizzle, element type, block size), interleave none, element strides 1, L2 promotion 128B, OOB fill NaN for
  ``padding="nan"`` else zero; when the kernel has no ``tensordesc_meta`` the descriptor is passed decomposed (base
  pointer, shape/strides as i64, padding and tf32-rounding flags, shape as i32, strides as i64).  Two hidden
  pointers close the list: the global scratch (``tl.make_tensor_descriptor`` builds device-side maps there) and
  the profile scratch, each ``grid size * num_ctas * size`` bytes from the compiled metadata, null when the size
  is 0.  Scalars are encoded for the PTX parameter: Triton declares ``i32`` as ``.u32``, so a negative ``i32`` is
  passed as its 32-bit two's-complement pattern, as the CUDA launcher does.
* **launch**: grid ``(gridX * num_ctas, gridY, gridZ)``, block ``32 * num_warps``, cluster ``(num_ctas, 1, 1)``,
  dynamic SMEM = the compiled ``shared``.  ``grid`` may be a callable of the bound arguments (``lambda meta:
  (triton.cdiv(n, meta["BLOCK"]),)``).
* **memory**: each array argument is backed by one device buffer covering its elements from its first one (a strided
  view keeps its strides: the kernel sees the caller's layout); arguments that are the same memory share one
  buffer.  After the run every byte the kernel changed is written back into the caller's array (torch tensors
  included, through a shared-memory numpy view); two overlapping arguments with different extents get separate
  buffers, and if the kernel wrote different values into the same caller bytes through them the launch raises.

**Without Triton**: :meth:`TritonLaunch.save` writes a compiled launch's PTX and a JSON record (specialised
signature, constexprs, the arguments specialised as multiples of 16, the compiled metadata); :func:`replay` lays out
launches of that kernel with new arguments where Triton is not installed, checking each argument against the
specialisation (``examples/triton_softmax.py`` ships one).  :meth:`Kernel.prepare` / :func:`prepare` stop before
running: ``.launch`` is a plain :class:`tcsim.launch.Launch` (for ``tcsim run`` launch files, the debugger,
:func:`tcsim.explore.explore`), ``.write_back(result)`` copies the outputs into the caller's arrays.

Errors a caller can make (not a JIT function, Triton missing, wrong argument count or type, an unknown keyword, a
value that does not fit its type, a Triton compile error) raise :class:`tcsim.isa.errors.LaunchError` (compile
errors: :class:`TritonCompileError`) located at the kernel's Python definition.

Not supported: autotuned kernels (pass ``kernel.fn`` with one config's values), im2col tensor descriptors, Triton's
GPU sanitizer (gsan) and launch hooks; arrays with negative strides (Triton pointers cannot express them either).
On the GPU back end (``tcsim diff --against gpu``, :mod:`tcsim.hw.launcher`) these launches run as they are: a
:class:`HostTensorMap` is encoded with ``cuTensorMapEncodeTiled`` at the device buffer of its memory region, shared
with the :class:`tcsim.launch.Pointer` arguments over the same memory, and the region is the argument's output on
both back ends (tests/hw/test_frontend_diff.py; launch files in tests/fixtures/frontend).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tcsim.isa.errors import LaunchError, SourceLoc, TcsimError
from .launch import Launch, Pointer, Result, run_launch

#: tcsim architecture name -> Triton compute capability
ARCHES = {"sm_90a": 90, "sm_100a": 100}
#: the device address every array argument specialises with: tcsim's global allocations are 256-byte aligned
_SPECIALISED_ADDRESS = 256


class TritonCompileError(TcsimError):
    """Triton rejected the kernel (a type error in the kernel body, an unsupported construct, ...)."""

    kind = "Triton compile error"


# ------------------------------------------------------------------------------------------ Triton access
def _triton():
    """The installed ``triton`` package, or a clean error saying how to get it."""
    try:
        import triton
        import triton.runtime.jit  # noqa: F401  (checks the package is usable)
    except ImportError as e:
        raise LaunchError(f"tcsim.triton needs Triton, which cannot be imported here ({e})",
                          expected="`pip install triton` (3.9 or newer; no GPU needed)") from None
    return triton


def _arch_cc(arch) -> tuple[str, int]:
    if isinstance(arch, (int, np.integer)) and int(arch) in ARCHES.values():
        cc = int(arch)
        return {v: k for k, v in ARCHES.items()}[cc], cc
    if isinstance(arch, str) and arch in ARCHES:
        return arch, ARCHES[arch]
    raise LaunchError(f"tcsim.triton cannot compile for arch={arch!r}",
                      expected=f"one of {', '.join(ARCHES)} (Triton's GPUTarget('cuda', 90 or 100, 32))")


def _kernel_loc(fn) -> SourceLoc | None:
    """file:line of the kernel's ``def`` (the location of a front-end diagnostic)."""
    py = getattr(fn, "fn", None)
    code = getattr(py, "__code__", None)
    if code is None:
        return None
    line = code.co_firstlineno
    try:
        src, start = inspect.getsourcelines(py)
        for i, text in enumerate(src):
            if text.lstrip().startswith("def "):
                return SourceLoc(code.co_filename, start + i, 1, text.rstrip("\n"))
    except (OSError, TypeError):
        pass
    return SourceLoc(code.co_filename, line, 1)


# ------------------------------------------------------------------------------------------ host arrays
class _Dtype:
    """What Triton reads from a tensor's dtype: ``str()`` (canonicalised: float32 -> fp32), ``itemsize``,
    ``is_floating_point``."""

    def __init__(self, dt: np.dtype):
        self.np = np.dtype(dt)
        self.itemsize = self.np.itemsize
        self.is_floating_point = self.np.kind == "f" or "float" in self.np.name

    def __str__(self):
        return self.np.name

    def __repr__(self):
        return f"dtype({self.np.name})"


@functools.lru_cache(maxsize=None)
def _dtype_of(dt: np.dtype) -> _Dtype:
    """One :class:`_Dtype` per numpy dtype for the life of the process: Triton's native specialiser caches what it
    read from a dtype object by the object's identity, so a fresh object per call could alias a dead one's entry."""
    return _Dtype(dt)


class HostArray:
    """A numpy array in the shape Triton expects of a tensor (``data_ptr()``, ``dtype``, ``shape``, ``stride()``):
    what tcsim.triton hands Triton's binder and puts under a :func:`tensor_descriptor`.  ``data_ptr()`` is the
    alignment the array will have on tcsim's device (256 bytes), which is all specialisation reads."""

    def __init__(self, array: np.ndarray):
        self.array = array
        self.dtype = _dtype_of(array.dtype)
        self.shape = tuple(array.shape)

    def data_ptr(self) -> int:
        return _SPECIALISED_ADDRESS

    def stride(self, dim=None):
        st = tuple(s // self.array.itemsize for s in self.array.strides)
        return st if dim is None else st[dim]

    def element_size(self) -> int:
        return self.array.itemsize

    def __repr__(self):
        return f"HostArray({self.array.dtype}{list(self.array.shape)})"


def _torch_to_numpy(t) -> np.ndarray:
    """A numpy view sharing memory with CPU tensor ``t`` (bf16 and fp8 through ml_dtypes)."""
    import torch
    if t.device.type != "cpu":
        raise LaunchError(f"a torch tensor on {t.device} cannot be simulated",
                          expected="a CPU tensor (tcsim is the device)")
    t = t.detach()
    special = {torch.bfloat16: ("bfloat16", torch.int16)}
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        if hasattr(torch, name):
            special[getattr(torch, name)] = (name, torch.uint8)
    if t.dtype in special:
        import ml_dtypes
        name, carrier = special[t.dtype]
        return t.view(carrier).numpy().view(getattr(ml_dtypes, name))
    try:
        return t.numpy()
    except (TypeError, RuntimeError) as e:
        raise LaunchError(f"torch tensor of dtype {t.dtype} cannot be viewed as a numpy array ({e})") from None


def as_host_array(v):
    """The numpy array behind an array-like argument, or None when ``v`` is not one."""
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, HostArray):
        return v.array
    mod = type(v).__module__ or ""
    if mod.startswith("torch") and type(v).__name__ in ("Tensor", "Parameter"):
        return _torch_to_numpy(v)
    return None


def tensor_descriptor(array, block_shape, padding: str = "zero", round_f32_to_tf32: bool = False):
    """A host-side tensor descriptor over a whole numpy array (or CPU torch tensor): shape and strides from the
    array, ``block_shape`` the TMA box.  Pass it where the kernel takes a tensor descriptor.  It is Triton's
    ``triton.tools.tensor_descriptor.TensorDescriptor`` (validated by it) when Triton is installed, else a
    :class:`HostTensorDescriptor` (for :func:`replay`)."""
    arr = as_host_array(array)
    if arr is None:
        raise LaunchError(f"tensor_descriptor needs a numpy array or a torch tensor, got {type(array).__name__}")
    if any(s % arr.itemsize for s in arr.strides):
        raise LaunchError(f"array strides {arr.strides} are not multiples of its {arr.itemsize}-byte elements")
    base = HostArray(arr)
    fields = (base, list(arr.shape), list(base.stride()), [int(b) for b in block_shape], padding,
              bool(round_f32_to_tf32))
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return HostTensorDescriptor(*fields)
    try:
        return TensorDescriptor(*fields)
    except (AssertionError, ValueError, TypeError) as e:
        raise LaunchError(f"invalid tensor descriptor over {arr.dtype}{list(arr.shape)} with block "
                          f"{list(block_shape)}: {e or 'rejected by triton.tools.tensor_descriptor'}",
                          expected="16-byte aligned strides, a dense last dimension, power-of-two block sizes") \
            from None


# ------------------------------------------------------------------------------------------ device regions
@dataclass(eq=False)
class _Region:
    """The device buffer behind one or more array arguments: ``host`` is a contiguous 1-D view of the caller's
    memory from the array's first element over its whole extent (its dtype), ``before`` a copy of it taken when the
    launch was prepared (to write back exactly the bytes the kernel changed)."""

    host: np.ndarray
    before: np.ndarray
    writable: bool
    label: str
    alloc: object = None              # the device allocation (set by the descriptor arguments that make it)

    @property
    def span(self) -> tuple[int, int]:
        a = self.host.__array_interface__["data"][0]
        return a, a + self.host.nbytes


def _extent(shape, strides_el) -> int:
    """Elements from the first to the last one a (shape, element strides) layout reaches, inclusive."""
    if any(d == 0 for d in shape):
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(shape, strides_el))


class Regions:
    """The host memory regions of a launch's array arguments (shared with tcsim.cute, the other front end that
    turns caller arrays into device buffers and writes them back)."""

    def __init__(self):
        self.by_key: dict = {}

    def of(self, arr: np.ndarray, label: str, min_elems: int = 0) -> _Region:
        if any(s < 0 for s in arr.strides):
            raise LaunchError(f"{label}: array strides {arr.strides} are negative; a Triton pointer cannot "
                              f"address them", expected="non-negative strides (np.ascontiguousarray(x))")
        if any(s % arr.itemsize for s in arr.strides):
            raise LaunchError(f"{label}: array strides {arr.strides} are not multiples of its "
                              f"{arr.itemsize}-byte elements")
        n = max(_extent(arr.shape, [s // arr.itemsize for s in arr.strides]), min_elems)
        key = (arr.__array_interface__["data"][0], n, arr.dtype.str, arr.dtype.name)
        reg = self.by_key.get(key)
        if reg is None:
            host = np.lib.stride_tricks.as_strided(arr, shape=(n,), strides=(arr.itemsize,),
                                                   writeable=bool(arr.flags.writeable)) if n else np.zeros(0, arr.dtype)
            reg = _Region(host=host, before=host.copy(), writable=bool(arr.flags.writeable), label=label)
            self.by_key[key] = reg
        return reg

    def write_back(self, device: dict) -> list[str]:
        """Copy every byte the kernel changed into the caller's memory; ``device``: region -> final contents.
        Returns the labels of the arguments written."""
        changed = []
        for reg, final in device.items():
            if reg.host.size == 0:
                continue
            b0, b1 = reg.before.view(np.uint8), np.asarray(final).reshape(-1).view(np.uint8)
            mask = b0 != b1
            if not mask.any():
                continue
            if not reg.writable:
                raise LaunchError(f"{reg.label}: the kernel wrote {int(mask.sum())} bytes into a read-only array",
                                  expected="a writable array for an argument the kernel stores to")
            changed.append((reg, b1, mask))
        # two regions over the same caller bytes: the kernel must not have written different values through them
        for i, (ra, fa, ma) in enumerate(changed):
            for rb, fb, mb in changed[i + 1:]:
                lo, hi = max(ra.span[0], rb.span[0]), min(ra.span[1], rb.span[1])
                if lo >= hi:
                    continue
                sa = slice(lo - ra.span[0], hi - ra.span[0])
                sb = slice(lo - rb.span[0], hi - rb.span[0])
                both = ma[sa] & mb[sb]
                if (both & (fa[sa] != fb[sb])).any():
                    raise LaunchError(f"{ra.label} and {rb.label} overlap in memory and the kernel wrote different "
                                      f"values into the same bytes through each (tcsim gives arguments with "
                                      f"different extents separate device buffers)",
                                      expected="non-overlapping output arguments, or the same array passed twice")
        for reg, final, mask in changed:
            host8 = reg.host.view(np.uint8)
            host8[mask] = final[mask]
        return [reg.label for reg, _, _ in changed]


# ------------------------------------------------------------------------------------------ descriptor arguments
@dataclass(eq=False)
class HostTensorMap:
    """A host tensor descriptor's CUtensorMap as a launch argument: a :class:`tcsim.isa.tensormap.TensorMap` whose
    global address is the device buffer of ``region`` (shared with the pointer arguments over the same memory)."""

    region: _Region
    tensor_map: object                # TensorMap with global_address 0 (filled in per launch)
    label: str

    def encode_for_sim(self, gmem, by_id: dict, name: str = "tensor map") -> bytes:
        import dataclasses
        reg = self.region
        alloc = by_id.get(id(reg.host))
        if alloc is None:
            alloc = gmem.allocate(reg.host.nbytes, name=f"{name}.tensor({self.label})")
            alloc.upload(np.ascontiguousarray(reg.host))
            by_id[id(reg.host)] = alloc
        reg.alloc = alloc
        tm = dataclasses.replace(self.tensor_map, global_address=alloc.base)
        try:
            return tm.encode()
        except LaunchError as e:
            e.message = f"{self.label}: {e.message}"
            raise e.with_context()

    def check_device(self, arch) -> None:
        self.tensor_map.check_device(arch)


# ------------------------------------------------------------------------------------------ the prepared launch
@dataclass
class TritonLaunch:
    """A Triton kernel compiled and laid out as a tcsim :class:`~tcsim.launch.Launch` (``launch``), not yet run.

    ``compiled`` is Triton's ``CompiledKernel`` (``.asm["ptx"]``, ``.metadata``; None for a :func:`replay`);
    ``signature`` the specialised signature; ``params`` says, per ``.entry`` parameter, which argument it comes
    from."""

    launch: Launch
    compiled: object
    signature: dict
    constexprs: dict
    params: list
    regions: Regions
    arg_regions: dict                 # launch argument index -> _Region (pointer arguments)
    named: dict                       # kernel argument name -> _Region (arrays and descriptor bases)
    shapes: dict                      # kernel argument name -> the caller's array (for read-back in its shape)
    metadata: dict = field(default_factory=dict)   # :func:`metadata_of` the compiled kernel
    ptx: str = ""                                  # the PTX Triton produced (what ``launch`` runs)
    record: dict = field(default_factory=dict)     # what :func:`save` writes beside the PTX

    def save(self, ptx_path, json_path=None) -> None:
        """Write the PTX and a JSON record (kernel, arch, Triton version, specialised signature, constexprs, the
        arguments specialised as multiples of 16, the compiled metadata) so :func:`replay` can launch the same
        compiled kernel where Triton is not installed.  ``json_path`` defaults to the PTX path with ``.json``."""
        import json
        ptx_path = Path(ptx_path)
        json_path = Path(json_path) if json_path else ptx_path.with_suffix(".json")
        if not self.record:
            raise LaunchError("this launch has no compile record to save (it was not made by Kernel.prepare)")
        ptx_path.write_text(self.ptx)
        json_path.write_text(json.dumps(self.record, indent=1) + "\n")

    def device_contents(self, result: Result) -> dict:
        """region -> what the device buffer held at the end of the run."""
        out = {}
        for i, reg in self.arg_regions.items():
            out[reg] = result.outputs[i]
        for reg in self.regions.by_key.values():
            if reg not in out and reg.alloc is not None:
                out[reg] = reg.alloc.download(reg.host.nbytes).view(reg.host.dtype)
        return out

    def output(self, result: Result, name: str) -> np.ndarray:
        """The final contents of kernel argument ``name`` (an array, or a descriptor's base), in the caller's
        shape and strides (a new array; the caller's array itself is updated by :meth:`write_back`)."""
        if name not in self.named:
            raise LaunchError(f"kernel argument {name!r} is not an array or tensor descriptor of this launch",
                              expected=f"one of {', '.join(self.named)}")
        reg = self.named[name]
        arr = self.shapes[name]
        final = np.array(self.device_contents(result)[reg], copy=True)
        if final.size == 0:
            return np.zeros(arr.shape, arr.dtype)
        return np.lib.stride_tricks.as_strided(final, shape=arr.shape, strides=arr.strides).copy()

    def write_back(self, result: Result) -> list[str]:
        """Write what the kernel changed into the caller's arrays; returns the arguments written."""
        return self.regions.write_back(self.device_contents(result))


@dataclass
class TritonRun:
    """What :func:`launch` returns: the tcsim :class:`~tcsim.launch.Result` (stats, findings, stdout, ...), the
    prepared :class:`TritonLaunch` and the arguments whose arrays the kernel changed."""

    result: Result
    prepared: TritonLaunch
    written: list = field(default_factory=list)

    @property
    def compiled(self):
        return self.prepared.compiled

    @property
    def findings(self):
        return self.result.findings

    @property
    def stats(self):
        return self.result.stats


# ------------------------------------------------------------------------------------------ the kernel wrapper
_SIM_KEYS = ("seed", "trace", "max_instructions", "observers", "timing", "strict", "schedule", "detect", "tier",
             "max_seconds", "progress")


class Kernel:
    """A ``@triton.jit`` (or Gluon) kernel bound to a tcsim target: ``Kernel(fn, arch)[grid](*args, **kwargs)``
    compiles (cached per specialisation), simulates and writes the outputs back, like ``fn[grid](...)`` on a GPU.
    """

    def __init__(self, fn, arch: str = "sm_100a"):
        triton = _triton()
        from triton.runtime.jit import JITFunction
        if not isinstance(fn, JITFunction):
            inner = getattr(fn, "fn", None)
            hint = (" (an autotuned/heuristics wrapper: pass kernel.fn and one config's values as keywords)"
                    if isinstance(inner, JITFunction) else "")
            raise LaunchError(f"tcsim.triton needs a @triton.jit (or gluon.jit) function, got "
                              f"{type(fn).__name__} {getattr(fn, '__name__', fn)!r}{hint}",
                              _kernel_loc(inner) if isinstance(inner, JITFunction) else None,
                              expected="a function decorated with @triton.jit")
        self.fn = fn
        self.arch, self.cc = _arch_cc(arch)
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend
        self.target = GPUTarget("cuda", self.cc, 32)
        self.backend = make_backend(self.target)
        self._binder = None
        self._cache: dict = {}
        self._triton = triton

    def __repr__(self):
        return f"tcsim.triton.Kernel({self.name}, arch={self.arch!r})"

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", None) or self.fn.fn.__name__

    @property
    def loc(self) -> SourceLoc | None:
        return _kernel_loc(self.fn)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, *args, **kwargs)

    # ---------------------------------------------------------------------------------- binding
    def _param_text(self) -> str:
        return ", ".join(f"{p.name}{': constexpr' if p.is_constexpr else ''}" for p in self.fn.params)

    def _option_names(self) -> set:
        import dataclasses
        opts = self.backend.parse_options({"enable_fp_fusion": True})
        return {f.name for f in dataclasses.fields(opts)}

    def _bind(self, args, kwargs):
        """Triton's own binder over converted arguments -> (bound args, specialisation, options)."""
        from triton.runtime.jit import create_function_from_signature
        names = [p.name for p in self.fn.params]
        options = self._option_names()
        for k in kwargs:
            if k not in names and k not in options:
                raise LaunchError(f"unknown keyword argument {k!r}: not a parameter of kernel {self.name} "
                                  f"({self._param_text()}) nor a Triton compile option", self.loc,
                                  expected=f"a kernel parameter or one of {', '.join(sorted(options))}")
        try:
            self.fn.signature.bind(*args, **{k: v for k, v in kwargs.items() if k in names})
        except TypeError as e:
            raise LaunchError(f"kernel {self.name}({self._param_text()}): {e} ({len(args)} positional argument"
                              f"{'s' if len(args) != 1 else ''} given)", self.loc,
                              expected="every parameter without a default, constexprs included, by position or "
                                       "keyword") from None
        conv_args = [self._convert(names[i] if i < len(names) else f"#{i}", a) for i, a in enumerate(args)]
        conv_kwargs = {k: (self._convert(k, v) if k in names else v) for k, v in kwargs.items()}
        if "enable_fp_fusion" not in conv_kwargs:
            conv_kwargs["enable_fp_fusion"] = True   # Triton 3.9's default, stated so it does not warn
        if self._binder is None:
            self._binder = create_function_from_signature(self.fn.signature, self.fn.params, self.backend)
        try:
            return (*self._binder(*conv_args, **conv_kwargs), conv_kwargs)
        except TypeError as e:
            bad = self._unspecialisable(conv_args, conv_kwargs)
            raise LaunchError(f"kernel {self.name}: {bad or e}", self.loc,
                              expected="arrays (numpy / CPU torch), tensor descriptors, Python or numpy scalars, "
                                       "None, or tuples of these; constexprs may also be dtypes or JIT "
                                       "functions") from None

    def _unspecialisable(self, args, kwargs) -> str | None:
        from triton._C.libtriton import native_specialize_impl
        params = self.fn.signature.parameters
        bound = self.fn.signature.bind(*args, **{k: v for k, v in kwargs.items() if k in params})
        for p in self.fn.params:
            if p.is_constexpr or p.name not in bound.arguments:
                continue
            v = bound.arguments[p.name]
            try:
                native_specialize_impl(type(self.backend), v, False, True, True)
            except TypeError:
                return f"argument {p.name} has type {type(v).__name__}, which Triton cannot pass"
        return None

    def _convert(self, name, v):
        """Arrays -> :class:`HostArray`, numpy scalars -> Python scalars, descriptors over arrays kept."""
        v = _host_value(name, v, self.loc)
        from triton._utils import type_canonicalisation_dict
        for x in (v if isinstance(v, tuple) else (v,)):
            if isinstance(x, HostArray) and x.array.dtype.name not in type_canonicalisation_dict:
                raise LaunchError(f"argument {name}: arrays of {x.array.dtype} have no Triton element type",
                                  self.loc, expected="an integer, float16/bfloat16/float32/float64, fp8 or bool "
                                                     "array")
        return v

    # ---------------------------------------------------------------------------------- compiling
    def compile(self, *args, **kwargs):
        """Specialise and compile for ``args`` (arrays may be stand-ins of the right dtype): returns
        (CompiledKernel, bound arguments, signature, constexprs, attrs).  Cached per specialisation."""
        from triton.compiler import ASTSource
        bound, spec, options, full = self._bind(args, kwargs)
        key = (repr(spec), repr(sorted(options.items(), key=lambda kv: kv[0])))
        hit = self._cache.get(key)
        if hit is not None:
            compiled, signature, constexprs, attrs = hit
            return compiled, bound, signature, constexprs, attrs
        try:
            # as JITFunction.run: the options come from every keyword (a Gluon kernel's num_warps parameter too)
            opts, signature, constexprs, attrs = self.fn._pack_args(self.backend, full, bound, spec, options)
        except (KeyError, ValueError, AssertionError) as e:
            raise LaunchError(f"kernel {self.name}: Triton rejected the options {options}: {e}", self.loc) from None
        src_cls = ASTSource
        if getattr(self.fn, "is_gluon", lambda: False)():
            from triton.experimental.gluon._runtime import GluonASTSource
            src_cls = GluonASTSource
        try:
            compiled = self._triton.compile(src_cls(self.fn, signature, constexprs, attrs), target=self.target,
                                            options={f.name: getattr(opts, f.name) for f in dataclasses.fields(opts)})
        except Exception as e:   # CompilationError, a failed MLIR pass, ptxas: Triton's message, at the kernel
            raise TritonCompileError(f"kernel {self.name} for {self.arch}: {type(e).__name__}: {_first_lines(e)}",
                                     self.loc) from e
        self._cache[key] = (compiled, signature, constexprs, attrs)
        return compiled, bound, signature, constexprs, attrs

    # ---------------------------------------------------------------------------------- the launch
    def prepare(self, grid, *args, **kwargs) -> TritonLaunch:
        """Compile and lay out a launch without running it (``.launch`` is a :class:`tcsim.launch.Launch`, e.g.
        for ``tcsim run`` launch files or :class:`tcsim.launch.Prepared`)."""
        compiled, bound, signature, constexprs, attrs = self.compile(*args, **kwargs)
        names = list(bound)
        record = {"kernel": self.name, "arch": self.arch, "triton_version": self._triton.__version__,
                  "source": f"{Path(self.loc.file).name}:{self.loc.line}" if self.loc else None,
                  "arg_names": names, "signature": {k: _json_type(v) for k, v in signature.items()},
                  "constexprs": {names[p[0]]: _json_value(v) for p, v in constexprs.items() if len(p) == 1},
                  "divisibility_16": sorted(names[p[0]] for p, a in attrs.items()
                                            if len(p) == 1 and ["tt.divisibility", 16] in [list(x) for x in a]),
                  "metadata": metadata_of(compiled)}
        return _layout(current_source_paths(compiled.asm["ptx"], self.fn), record["metadata"], signature,
                       constexprs, bound, grid,
                       name=self.name, arch=self.arch, loc=self.loc, compiled=compiled, record=record)

    def run(self, grid, *args, sim: dict | None = None, **kwargs) -> TritonRun:
        """Compile, simulate and write back; ``sim``: keyword arguments of :func:`tcsim.launch.run_launch`
        (``seed``, ``timing``, ``strict``, ``detect``, ``trace``, ``max_instructions``, ...)."""
        prep = self.prepare(grid, *args, **kwargs)
        res = run_launch(prep.launch, **sim_options(sim))
        written = prep.write_back(res)
        return TritonRun(result=res, prepared=prep, written=written)


def sim_options(sim) -> dict:
    """The checked keyword options a front end passes on to tcsim.launch.run_launch (shared with tcsim.cute)."""
    sim = dict(sim or {})
    bad = [k for k in sim if k not in _SIM_KEYS and not k.endswith("_params")]
    if bad:
        raise LaunchError(f"unknown simulator option(s) {', '.join(map(repr, bad))} in sim=",
                          expected=f"keywords of tcsim.launch.run_launch: {', '.join(_SIM_KEYS)}, *_params")
    return sim


def _first_lines(e, n=25) -> str:
    text = str(e).strip() or type(e).__name__
    lines = text.splitlines()
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


def _grid3(grid, name, loc) -> tuple:
    if isinstance(grid, (int, np.integer)):
        grid = (int(grid),)
    try:
        g = tuple(int(x) for x in grid)
    except (TypeError, ValueError):
        raise LaunchError(f"grid {grid!r} of kernel {name} is not 1 to 3 integers", loc) from None
    if not 1 <= len(g) <= 3 or any(x < 1 for x in g):
        raise LaunchError(f"grid {grid!r} of kernel {name} must be 1 to 3 positive integers", loc)
    return g + (1,) * (3 - len(g))


# ------------------------------------------------------------------------------------------ laying out a launch
#: the compiled metadata a launch needs (CompiledKernel.metadata fields), as :func:`metadata_of` returns them
METADATA_FIELDS = ("name", "target", "num_warps", "num_ctas", "num_stages", "shared", "tmem_size",
                   "global_scratch_size", "global_scratch_align", "profile_scratch_size", "profile_scratch_align",
                   "tensordesc_meta", "launch_cooperative_grid", "launch_pdl", "triton_version")


def metadata_of(compiled) -> dict:
    """The launch-relevant fields of a ``CompiledKernel``'s metadata as a JSON-able dict."""
    md = compiled.metadata
    out = {}
    for f in METADATA_FIELDS:
        v = getattr(md, f, None)
        if f == "target" and v is not None:
            v = {"backend": v.backend, "arch": v.arch, "warp_size": v.warp_size}
        elif f == "tensordesc_meta" and v is not None:
            v = [dict(m) if m is not None else None for m in v]
        out[f] = v
    return out


_FILE_DIRECTIVE = re.compile(r'^(\s*\.file\s+\d+\s+")([^"]*)(")', re.M)


def current_source_paths(ptx: str, fn) -> str:
    """Triton's on-disk cache is keyed by the kernel's source, not by where that source lives: a checkout moved or
    copied after a compile gets PTX whose ``.file`` directives (and so every ``.loc``-mapped fault position) name
    the old location.  A ``.file`` naming a file of the kernel's basename at another path is pointed at the
    kernel's file as it is loaded now; any other path that no longer exists is pointed at a loaded module of the
    same basename when exactly one is loaded (a helper ``@triton.jit`` function's file)."""
    import sys
    code = getattr(getattr(fn, "fn", fn), "__code__", None)
    own = os.path.abspath(code.co_filename) if code is not None else None
    loaded: dict | None = None

    def fix(m):
        nonlocal loaded
        path = m.group(2)
        base = os.path.basename(path)
        if own and base == os.path.basename(own):
            return m.group(1) + own + m.group(3)
        if os.path.exists(path):
            return m.group(0)
        if loaded is None:
            loaded = {}
            for mod in list(sys.modules.values()):
                f = getattr(mod, "__file__", None)
                if f:
                    loaded.setdefault(os.path.basename(f), set()).add(os.path.abspath(f))
        hits = loaded.get(base, ())
        return m.group(1) + next(iter(hits)) + m.group(3) if len(hits) == 1 else m.group(0)

    return _FILE_DIRECTIVE.sub(fix, ptx)


def _layout(ptx: str, md: dict, signature: dict, constexprs: dict, bound: dict, grid, *, name: str, arch: str,
            loc, compiled=None, record=None) -> TritonLaunch:
    """Kernel arguments in ``.entry`` order, the way Triton's CUDA launcher passes them (module docstring)."""
    from tcsim.isa.parser import parse
    module = parse(ptx, f"<triton {name} {arch}>")
    kname = md["name"]
    try:
        kfn = module.kernel(kname)
    except Exception:
        raise LaunchError(f"Triton's PTX for {name} has no .entry {kname}", loc) from None
    regions = Regions()
    launch_args: list = []
    sources: list = []
    arg_regions: dict = {}
    named: dict = {}
    shapes: dict = {}
    tdmeta = list(md.get("tensordesc_meta") or [])
    has_meta = bool(tdmeta)
    tds = iter(tdmeta)

    def add(value, source):
        launch_args.append(value)
        sources.append(source)

    def visit(label, ty, v):
        if isinstance(ty, tuple):
            if not isinstance(v, tuple) or len(v) != len(ty):
                raise LaunchError(f"argument {label} must be a tuple of {len(ty)}, got {v!r}", loc)
            for j, (t, x) in enumerate(zip(ty, v)):
                visit(f"{label}[{j}]", t, x)
            return
        if ty == "constexpr":
            return
        if ty.startswith("tensordesc"):
            meta = next(tds, None) if has_meta else None
            _descriptor_args(label, ty, v, meta, has_meta, regions, add, named, shapes, loc)
            return
        if ty.startswith("*"):
            if v is None or isinstance(v, (int, np.integer)):
                add(0 if v is None else int(v), f"{label}: {ty} (raw address)")
                return
            if not isinstance(v, HostArray):
                raise LaunchError(f"argument {label} ({ty}) is a {type(v).__name__}, not an array", loc)
            reg = regions.of(v.array, label)
            arg_regions[len(launch_args)] = reg
            named.setdefault(label, reg)
            shapes.setdefault(label, v.array)
            add(reg, f"{label}: {ty}")
            return
        add(_ScalarArg(label, ty, v), f"{label}: {ty}")

    for (pname, ty), v in zip(signature.items(), bound.values()):
        visit(pname, ty, v)
    if callable(grid):
        grid = grid(bound)
    g = _grid3(grid, name, loc)
    nctas = int(md.get("num_ctas") or 1)
    nprog = g[0] * g[1] * g[2] * nctas
    for what in ("global", "profile"):
        size = int(md.get(f"{what}_scratch_size") or 0)
        align = int(md.get(f"{what}_scratch_align") or 1)
        if size and align > 256:
            raise LaunchError(f"kernel {name} needs a {what} scratch aligned to {align} bytes; tcsim allocates at "
                              f"256", loc)
        add(np.zeros(nprog * size, np.uint8) if size else 0,
            f"{what}_scratch ({nprog} programs x {size} bytes)" if size else f"{what}_scratch (null)")
    params = kfn.params
    if len(params) != len(launch_args):
        raise LaunchError(f"Triton's PTX for {name} has {len(params)} parameters but the signature {signature} "
                          f"expands to {len(launch_args)} ({'; '.join(sources)})", loc)
    # a region used by one pointer argument alone is passed as the array itself (every back end takes arrays);
    # one that several arguments point to, as Pointer(array) (one shared device buffer)
    uses: dict = {}
    for a in launch_args:
        if isinstance(a, _Region):
            uses[a] = uses.get(a, 0) + 1
        elif isinstance(a, HostTensorMap):
            uses[a.region] = uses.get(a.region, 0) + 1
    final_args = []
    for a, p in zip(launch_args, params):
        if isinstance(a, _ScalarArg):
            a = a.encode(p, loc)
        elif isinstance(a, _Region):
            a = a.host if uses[a] == 1 else Pointer(a.host)
        final_args.append(a)
    launch = Launch(ptx=module, kernel=kname, grid=(g[0] * nctas, g[1], g[2]),
                    block=(32 * int(md["num_warps"]), 1, 1), cluster=(nctas, 1, 1), dynamic_smem=int(md["shared"]),
                    args=final_args, name=f"triton:{name}")
    plist = [{"name": p.name, "type": p.type + (f"[{p.array}]" if p.array else ""), "source": s}
             for p, s in zip(params, sources)]
    return TritonLaunch(launch=launch, compiled=compiled, signature=signature, constexprs=constexprs,
                        params=plist, regions=regions, arg_regions=arg_regions, named=named, shapes=shapes,
                        metadata=md, ptx=ptx, record=record or {})


def _is_descriptor(d) -> bool:
    return all(hasattr(d, a) for a in ("base", "shape", "strides", "block_shape", "padding"))


def _descriptor_args(label, ty, d, meta, has_meta, regions, add, named, shapes, loc):
    if not _is_descriptor(d) or not isinstance(d.base, HostArray):
        raise LaunchError(f"argument {label} ({ty}) must be a host tensor descriptor, got {type(d).__name__}",
                          loc, expected="tcsim.triton.tensor_descriptor(array, block_shape)")
    arr = d.base.array
    shape = [int(x) for x in d.shape]
    strides = [int(x) for x in d.strides]
    need = _extent(shape, strides)
    have = _extent(arr.shape, [s // arr.itemsize for s in arr.strides])
    if need > have:
        raise LaunchError(f"argument {label}: the descriptor's shape {shape} / strides {strides} reach {need} "
                          f"elements from its base, which holds {have}", loc)
    reg = regions.of(arr, label)
    named.setdefault(label, reg)
    shapes.setdefault(label, arr)
    if not has_meta or meta is None:
        # decomposed (no TMA lowering): base pointer, shape/strides as i64, padding and tf32 flags, then as below
        add(reg, f"{label}.base")
        for i, s in enumerate(shape):
            add(_ScalarArg(f"{label}.shape[{i}]", "i64", s), f"{label}.shape[{i}] (i64)")
        for i, s in enumerate(strides):
            add(_ScalarArg(f"{label}.strides[{i}]", "i64", s), f"{label}.strides[{i}] (i64)")
        add(_ScalarArg(f"{label}.padding_nan", "u1", d.padding == "nan"), f"{label}.padding == 'nan' (i1)")
        add(_ScalarArg(f"{label}.round_f32_to_tf32", "u1", bool(getattr(d, "round_f32_to_tf32", False))),
            f"{label}.round_f32_to_tf32 (i1)")
    else:
        add(HostTensorMap(reg, _tensor_map_of(label, d, meta, loc), label),
            f"{label}: CUtensorMap (fill_tma_descriptor_tiled)")
    for i, s in enumerate(shape):
        add(_ScalarArg(f"{label}.shape[{i}]", "i32", s), f"{label}.shape[{i}] (i32)")
    for i, s in enumerate(strides):
        add(_ScalarArg(f"{label}.strides[{i}]", "i64", s), f"{label}.strides[{i}] (i64)")


def _tensor_map_of(label, d, meta, loc):
    """The CUtensorMap ``fill_tma_descriptor_tiled`` encodes for descriptor ``d`` with its ``tensordesc_meta``."""
    from tcsim.isa.swizzle import SWIZZLE_NAMES
    from tcsim.isa.tensormap import PTX_ELEMTYPES, TensorMap
    if meta.get("is_im2col"):
        raise LaunchError(f"argument {label}: im2col tensor descriptors are not supported by tcsim.triton", loc)
    elem_type = 11 if getattr(d, "round_f32_to_tf32", False) else int(meta["elem_type"])   # Triton's TMA_TF32
    elem_size = int(meta["elem_size"])
    shape = [int(x) for x in d.shape]
    if meta.get("fp4_padded"):
        shape[-1] *= 2
    block = [int(b) for b in meta["block_size"]]
    rank = len(shape)
    strides_b = [elem_size * int(s) for s in d.strides[:-1]]
    try:
        return TensorMap(dtype=PTX_ELEMTYPES[elem_type], rank=rank, global_address=0, global_dims=shape[::-1],
                         global_strides=strides_b[::-1], box_dims=block[::-1], element_strides=(1,) * rank,
                         interleave="none", swizzle=SWIZZLE_NAMES[int(meta["swizzle"])], l2_promotion="128B",
                         oob_fill="nan" if d.padding == "nan" else "zero").validate(check_address=False)
    except LaunchError as e:
        e.message = f"argument {label}: {e.message}"
        raise e.with_context(loc)


@dataclass
class _ScalarArg:
    """A scalar of Triton type ``ty`` (i32, i64, u64, u1, fp32, ...), encoded for the PTX parameter it fills."""

    label: str
    ty: str
    value: object

    _INT = {"i1": (0, 1), "u1": (0, 1), "i8": (-2 ** 7, 2 ** 7 - 1), "i16": (-2 ** 15, 2 ** 15 - 1),
            "i32": (-2 ** 31, 2 ** 31 - 1), "i64": (-2 ** 63, 2 ** 63 - 1), "u8": (0, 2 ** 8 - 1),
            "u16": (0, 2 ** 16 - 1), "u32": (0, 2 ** 32 - 1), "u64": (0, 2 ** 64 - 1)}

    def encode(self, param, loc):
        """The value :func:`tcsim.launch.encode_scalar` takes for ``param``: an integer wraps to the parameter's
        width when the PTX declares it unsigned or untyped (Triton's ``i32`` is ``.u32``), a float of a 16-bit
        type becomes its bit pattern when the parameter is ``.b16``."""
        t, v, pt = self.ty, self.value, param.type
        if t in self._INT:
            try:
                iv = int(v)
            except (TypeError, ValueError):
                raise LaunchError(f"argument {self.label} ({t}) must be an integer, got {v!r}", loc) from None
            if t in ("i1", "u1"):
                iv = int(bool(v))
            lo, hi = self._INT[t]
            if not lo <= iv <= hi:
                raise LaunchError(f"argument {self.label} = {iv} does not fit Triton type {t}", loc,
                                  expected=f"a value in [{lo}, {hi}]")
            if pt[0] in "ub" and iv < 0:
                from .ptxtypes import SIZE
                iv &= (1 << (8 * SIZE.get(pt, 8))) - 1
            return iv
        if t in ("fp16", "bf16", "fp32", "fp64"):
            try:
                fv = float(v)
            except (TypeError, ValueError):
                raise LaunchError(f"argument {self.label} ({t}) must be a number, got {v!r}", loc) from None
            if pt[0] in "f":
                return fv
            import ml_dtypes
            npt = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32, "fp64": np.float64}[t]
            return int(np.asarray(fv, npt).view({2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(npt).itemsize]))
        raise LaunchError(f"argument {self.label} has Triton type {t}, which tcsim.triton cannot pass", loc)


# ------------------------------------------------------------------------------------------ replay without Triton
def _json_type(t):
    return [_json_type(x) for x in t] if isinstance(t, tuple) else t


def _sig_type(t):
    return tuple(_sig_type(x) for x in t) if isinstance(t, list) else t


def _json_value(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, tuple):
        return [_json_value(x) for x in v]
    return str(v)


#: numpy dtype name -> Triton element type (triton._utils.type_canonicalisation_dict, for use without Triton)
_NUMPY_TO_TRITON = {"bool": "u1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                    "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "fp16", "bfloat16": "bf16",
                    "float32": "fp32", "float64": "fp64", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
                    "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16"}


@dataclass
class HostTensorDescriptor:
    """The fields of ``triton.tools.tensor_descriptor.TensorDescriptor``, for :func:`replay` where Triton is not
    installed (:func:`tensor_descriptor` returns Triton's class when it can)."""

    base: object
    shape: list
    strides: list
    block_shape: list
    padding: str = "zero"
    round_f32_to_tf32: bool = False


def _host_value(name, v, loc):
    """Arrays -> :class:`HostArray`, numpy scalars -> Python values, descriptors over arrays -> HostArray bases."""
    if isinstance(v, tuple):
        return tuple(_host_value(name, x, loc) for x in v)
    if isinstance(v, HostArray):
        return v
    arr = as_host_array(v)
    if arr is not None:
        if not arr.dtype.isnative:
            raise LaunchError(f"argument {name}: array of byte order {arr.dtype.str!r} (tcsim's device is "
                              f"little-endian)", loc, expected="arr.astype(arr.dtype.newbyteorder('='))")
        return HostArray(arr)
    if isinstance(v, np.generic) and not isinstance(v, (np.void, np.str_, np.bytes_)):
        return v.item()
    if _is_descriptor(v) and not isinstance(v.base, HostArray):
        base = as_host_array(v.base)
        if base is None:
            raise LaunchError(f"argument {name}: tensor descriptor over {type(v.base).__name__}", loc,
                              expected="a descriptor over a numpy array or CPU torch tensor "
                                       "(tcsim.triton.tensor_descriptor)")
        import dataclasses
        return dataclasses.replace(v, base=HostArray(base))
    return v


def _check_specialisation(label, ty, v, div16: bool, loc):
    """Does ``v`` have the type (and the multiple-of-16 property) the recorded kernel was compiled for?"""
    def bad(what):
        raise LaunchError(f"argument {label} = {what} does not match the compiled kernel's {ty}"
                          f"{' (specialised as a multiple of 16)' if div16 else ''}", loc,
                          expected="the argument types the kernel was compiled for; with Triton installed, "
                                   "tcsim.triton.launch compiles a matching specialisation")
    if isinstance(ty, tuple):
        if not isinstance(v, tuple) or len(v) != len(ty):
            bad(repr(v))
        for j, (t, x) in enumerate(zip(ty, v)):
            _check_specialisation(f"{label}[{j}]", t, x, False, loc)
        return
    if ty.startswith("*"):
        if not isinstance(v, HostArray) or _NUMPY_TO_TRITON.get(v.array.dtype.name) != ty.lstrip("*k"):
            bad(f"{type(v).__name__}" + (f" of {v.array.dtype}" if isinstance(v, HostArray) else ""))
    elif ty.startswith("tensordesc"):
        if not _is_descriptor(v) or not isinstance(v.base, HostArray):
            bad(type(v).__name__)
        want = f"tensordesc<{_NUMPY_TO_TRITON.get(v.base.array.dtype.name)}{list(v.block_shape)}"
        if not ty.startswith(want):
            bad(f"a descriptor {want}>")
    elif ty in ("fp16", "bf16", "fp32", "fp64"):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            bad(repr(v))
    elif ty in _ScalarArg._INT:
        if not isinstance(v, (int, bool)):
            bad(repr(v))
        if ty != "u1" and int(v) == 1:
            bad("1 (Triton makes an int argument of 1 a constexpr)")
        if div16 and int(v) % 16:
            bad(repr(v))


def replay(ptx_path, grid, *args, json_path=None, **kwargs) -> TritonLaunch:
    """Lay out a launch of a kernel saved with :meth:`TritonLaunch.save` -- no Triton needed.  Arguments as for
    :func:`launch` (constexprs may be left out; given, they must equal the compiled ones); each must match the
    compiled specialisation (pointer element types, i32/i64, multiples of 16), else a :class:`LaunchError`."""
    import json
    ptx_path = Path(ptx_path)
    json_path = Path(json_path) if json_path else ptx_path.with_suffix(".json")
    try:
        rec = json.loads(json_path.read_text())
        ptx = ptx_path.read_text()
    except (OSError, ValueError) as e:
        raise LaunchError(f"cannot read the saved Triton kernel {ptx_path} / {json_path}: {e}") from None
    loc = SourceLoc(str(json_path), 1, 1)
    names = rec["arg_names"]
    signature = {k: _sig_type(v) for k, v in rec["signature"].items()}
    if len(args) > len(names):
        raise LaunchError(f"kernel {rec['kernel']} takes {len(names)} arguments ({', '.join(names)}); "
                          f"{len(args)} given", loc)
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise LaunchError(f"unknown keyword argument {k!r}: kernel {rec['kernel']} takes {', '.join(names)} "
                              f"(a saved kernel takes no compile options)", loc)
        if k in values:
            raise LaunchError(f"argument {k!r} given twice", loc)
        values[k] = v
    consts = rec.get("constexprs", {})
    bound = {}
    for i, n in enumerate(names):
        if signature[n] == "constexpr":
            if n in values and _json_value(_host_value(n, values[n], loc)) != consts.get(n):
                raise LaunchError(f"constexpr {n} = {values[n]!r}, but the saved kernel was compiled with "
                                  f"{n} = {consts.get(n)!r}", loc,
                                  expected="the saved value, or Triton installed to compile another variant")
            bound[n] = consts.get(n)
            continue
        if n not in values:
            raise LaunchError(f"kernel {rec['kernel']}: missing argument {n!r}", loc)
        v = _host_value(n, values[n], loc)
        _check_specialisation(n, signature[n], v, n in rec.get("divisibility_16", ()), loc)
        bound[n] = v
    constexprs = {(names.index(n),): v for n, v in consts.items()}
    return _layout(ptx, rec["metadata"], signature, constexprs, bound, grid, name=rec["kernel"], arch=rec["arch"],
                   loc=loc, record=rec)


# ------------------------------------------------------------------------------------------ one-call API
def launch(kernel, grid, *args, arch: str = "sm_100a", sim: dict | None = None, **kwargs) -> TritonRun:
    """Compile ``kernel`` (a ``@triton.jit`` / ``gluon.jit`` function) for ``arch`` with Triton on the CPU, run it
    in tcsim on ``grid`` with ``args`` and write what it stored back into the caller's arrays.  Keywords: kernel
    parameters (constexprs) by name and Triton compile options (``num_warps=4``, ``num_stages``, ``num_ctas``, ...);
    ``sim``: options of :func:`tcsim.launch.run_launch`.  Returns a :class:`TritonRun`."""
    return Kernel(kernel, arch).run(grid, *args, sim=sim, **kwargs)


def prepare(kernel, grid, *args, arch: str = "sm_100a", **kwargs) -> TritonLaunch:
    """Compile and lay out the launch without running it (see :meth:`Kernel.prepare`)."""
    return Kernel(kernel, arch).prepare(grid, *args, **kwargs)
