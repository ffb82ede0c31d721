"""Run a :class:`tcsim.launch.Launch` on a real GPU through the CUDA driver API (cuda-python).

The same launch description as the simulator: the PTX text is JIT-loaded with ``cuModuleLoadDataEx``;
array arguments become device buffers; scalars are packed at the offsets tcsim's own parameter layout
computes; tensor maps are encoded with ``cuTensorMapEncodeTiled`` from the same
:class:`tcsim.isa.tensormap.TensorMap` description the simulator decodes; the launch goes through
``cuLaunchKernelEx`` with the cluster-dimension attribute and the dynamic-SMEM attribute.

Each launch runs in a **child process** (multiprocessing, spawn): a sticky CUDA error (trap, illegal
instruction, misaligned address) kills only the child, and the caller gets a :class:`GpuResult` whose
``error`` names the CUDA error.  No GPU, no driver, or a ``.target`` the GPU cannot run (sm_100a on an H100)
gives a one-line :class:`GpuUnavailable` explanation, never a traceback.

Because the child is started with ``spawn``, a script that calls :func:`run_on_gpu` at top level must guard
its entry point with ``if __name__ == "__main__":`` (the child re-imports the main module).
"""
from __future__ import annotations

import ctypes
import multiprocessing as mp
import re
import traceback
from dataclasses import dataclass, field

import numpy as np


class GpuUnavailable(Exception):
    """The GPU back end cannot run this launch here (one-line reason)."""


@dataclass
class GpuResult:
    outputs: list
    error: str | None = None           # CUDA error name (e.g. CUDA_ERROR_ILLEGAL_INSTRUCTION) or None
    error_detail: str | None = None
    elapsed_ms: float | None = None
    device: str | None = None
    driver: int | None = None
    compute_capability: tuple | None = None
    jit_log: str = ""
    extra: dict = field(default_factory=dict)
    #: what the kernel printed (printf; the assertion lines of assert, before CUDA_ERROR_ASSERT)
    stdout: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


def _driver():
    try:
        from cuda.bindings import driver  # cuda-python >= 12.6
    except ImportError:
        try:
            from cuda import cuda as driver  # older cuda-python
        except ImportError:
            raise GpuUnavailable("cuda-python is not installed (pip install 'tcsim[gpu]')") from None
    return driver


def _check(res, what, d=None):
    """Unwrap a cuda-python result tuple; a CUDA error raises _CudaError naming the call.  ``d``: the driver
    module (default cuda.bindings.driver; the fuzzer passes its stand-in)."""
    err = res[0] if isinstance(res, tuple) else res
    if int(err) != 0:
        d = d or _driver()
        name = d.cuGetErrorName(err)[1]
        name = name.decode() if isinstance(name, bytes) else str(name)
        raise _CudaError(name, what)
    if isinstance(res, tuple):
        return res[1] if len(res) == 2 else res[1:]
    return None


class _CudaError(Exception):
    def __init__(self, name, what):
        super().__init__(f"{name} in {what}")
        self.name = name
        self.what = what


def target_capability(arch: str | None) -> tuple | None:
    m = re.match(r"sm_(\d+)(\d)([af]?)$", arch or "")
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3)


def probe(d=None) -> dict:
    """Describe the GPU (name, compute capability, driver) or raise GpuUnavailable.  Runs in this process.
    ``d``: the driver module (default cuda.bindings.driver)."""
    d = d or _driver()
    try:
        r = d.cuInit(0)
    except Exception as e:  # noqa: BLE001 - e.g. cuda-pathfinder's DynamicLibNotFoundError without libcuda
        raise GpuUnavailable(f"no CUDA driver here ({type(e).__name__}: {e})") from None
    if int(r[0]) != 0:
        raise GpuUnavailable(f"no usable CUDA driver/GPU here (cuInit: {d.cuGetErrorName(r[0])[1]})")
    n = _check(d.cuDeviceGetCount(), "cuDeviceGetCount", d)
    if n == 0:
        raise GpuUnavailable("no CUDA GPU is present")
    dev = _check(d.cuDeviceGet(0), "cuDeviceGet", d)
    name = _check(d.cuDeviceGetName(128, dev), "cuDeviceGetName", d)
    name = name.split(b"\0")[0].decode() if isinstance(name, bytes) else str(name)
    A = d.CUdevice_attribute
    major = _check(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attr", d)
    minor = _check(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attr", d)
    drv = _check(d.cuDriverGetVersion(), "cuDriverGetVersion", d)
    return {"name": name, "cc": (int(major), int(minor)), "driver": int(drv)}


def check_target(arch: str | None, cc: tuple, gpu_name: str) -> None:
    t = target_capability(arch)
    if t is None:
        return
    major, minor, suffix = t
    if suffix in ("a", "f") and (major, minor) != tuple(cc) and not (suffix == "f" and major == cc[0]):
        raise GpuUnavailable(f"the PTX targets {arch}, which needs an sm_{major}{minor} GPU; this GPU "
                             f"({gpu_name}) is sm_{cc[0]}{cc[1]}")
    if (major, minor) > tuple(cc):
        raise GpuUnavailable(f"the PTX targets {arch}, newer than this GPU ({gpu_name}, sm_{cc[0]}{cc[1]})")


# ------------------------------------------------------------------------------------------- the child


class _CapturedStdout:
    """File descriptor 1 of the child redirected to a temporary file: what the kernel printed (device printf and
    the assertion lines of ``assert``, which the driver writes to the process's stdout)."""

    def __enter__(self):
        import os
        import tempfile
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(1)
        os.dup2(self.file.fileno(), 1)
        return self

    def text(self) -> str:
        import os
        try:
            ctypes.CDLL(None).fflush(None)
        except Exception:  # noqa: BLE001 - no libc symbol table: nothing buffered to flush
            pass
        os.dup2(self.saved, 1)
        os.close(self.saved)
        self.file.seek(0)
        return self.file.read().decode(errors="replace")

    def __exit__(self, *exc):
        self.file.close()
        return False


def _flush_device_printf() -> None:
    """After a kernel fault the driver has not yet written the printf FIFO (an assert's lines): resetting the
    primary context makes it write them while the capture is still in place (best effort)."""
    try:
        d = _driver()
        dev = d.cuDeviceGet(0)
        if int(dev[0]) == 0:
            d.cuDevicePrimaryCtxReset(dev[1])
    except Exception:  # noqa: BLE001 - nothing more to flush than the driver gives
        pass


def _child(launch, conn, stage_limit, lineinfo=False):
    with _CapturedStdout() as cap:
        try:
            if isinstance(launch, (list, tuple)):
                res = _execute_sequence(list(launch), lineinfo)
            else:
                res = _execute(launch, stage_limit, lineinfo)
            res["stdout"] = cap.text()
            conn.send(("ok", res))
        except GpuUnavailable as e:
            cap.text()
            conn.send(("unavailable", str(e)))
        except _CudaError as e:
            _flush_device_printf()
            conn.send(("cuda", (e.name, e.what, cap.text())))
        except BaseException:  # noqa: BLE001 - reported to the parent with its traceback
            cap.text()
            conn.send(("crash", traceback.format_exc()))
        finally:
            conn.close()


def _execute(launch, stage_limit=None, lineinfo=False):
    d = _driver()
    info = probe()
    _context(d)
    if stage_limit == "load":
        _load(d, launch, info, lineinfo)
        return {"outputs": [], "device": info, "stage": "load"}
    dev = _DeviceArgs(d)
    k = _prepare(d, launch, info, lineinfo, dev)
    ev0 = _check(d.cuEventCreate(0), "cuEventCreate", d)
    ev1 = _check(d.cuEventCreate(0), "cuEventCreate", d)
    _check(d.cuEventRecord(ev0, 0), "cuEventRecord", d)
    _launch(d, k, programmatic=False)
    _check(d.cuEventRecord(ev1, 0), "cuEventRecord", d)
    _check(d.cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)", d)
    ms = _check(d.cuEventElapsedTime(ev0, ev1), "cuEventElapsedTime", d)
    outputs = _download(dev, k)
    spans = [None if sp is None else dev.download_bytes(*sp) for sp in dev.spans]
    dev.free()
    return {"outputs": outputs, "elapsed_ms": float(ms), "device": info, "spans": spans}


def _execute_sequence(launches, lineinfo=False):
    """Launch ``launches`` in order on one stream (the legacy default stream), each with
    ``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`` when its ``programmatic`` is set; an array passed
    to several launches is one device buffer.  Outputs: per launch, the buffers' contents after the whole
    sequence (the host cannot observe a buffer between programmatically overlapped grids)."""
    d = _driver()
    info = probe()
    _context(d)
    dev = _DeviceArgs(d, share_arguments=True)
    ks = [_prepare(d, launch, info, lineinfo, dev) for launch in launches]
    for launch, k in zip(launches, ks):
        _launch(d, k, programmatic=bool(getattr(launch, "programmatic", False)))
    _check(d.cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)", d)
    outputs = [_download(dev, k) for k in ks]
    dev.free()
    return {"outputs": outputs, "device": info}


def _context(d):
    ctx = _check(d.cuDevicePrimaryCtxRetain(_check(d.cuDeviceGet(0), "cuDeviceGet")), "cuDevicePrimaryCtxRetain", d)
    _check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", d)
    return ctx


def _load(d, launch, info, lineinfo):
    """JIT-load the launch's PTX: (module, function IR, CUfunction)."""
    module = launch.module()
    fn = module.kernel(launch.kernel)
    check_target(module.arch, info["cc"], info["name"])
    text = launch.ptx_text()[0] if not hasattr(launch.ptx, "functions") else None
    if text is None:
        raise GpuUnavailable("the GPU back end needs PTX text, not a parsed module")
    # JIT with an info/error log
    logsize = 1 << 16
    errlog = bytearray(logsize)
    infolog = bytearray(logsize)
    J = d.CUjit_option
    opts = [J.CU_JIT_ERROR_LOG_BUFFER, J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, J.CU_JIT_INFO_LOG_BUFFER,
            J.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
    vals = [errlog, logsize, infolog, logsize]
    if lineinfo:
        # line tables from the PTX's .loc directives (what compute-sanitizer names an error's place by)
        opts.append(J.CU_JIT_GENERATE_LINE_INFO)
        vals.append(1)
    src = text.encode() + b"\0"
    res = d.cuModuleLoadDataEx(src, len(opts), opts, vals)
    if int(res[0]) != 0:
        log = bytes(errlog).split(b"\0")[0].decode(errors="replace")
        raise _CudaError(d.cuGetErrorName(res[0])[1].decode(), f"cuModuleLoadDataEx (JIT): {log.strip()}")
    mod = res[1]
    kfn = _check(d.cuModuleGetFunction(mod, fn.name.encode()), "cuModuleGetFunction", d)
    return module, fn, kfn


def _prepare(d, launch, info, lineinfo, dev) -> dict:
    """Load the kernel, place its arguments on the device (``dev``: a :class:`_DeviceArgs`, shared by the launches
    of a sequence) and pack its parameters; returns what :func:`_launch` and :func:`_download` need."""
    from tcsim.machine import layout_program as lay

    module, fn, kfn = _load(d, launch, info, lineinfo)
    layout = lay(module, fn)
    params = layout["param_symbols"]
    image = np.zeros(max(layout["param_size"], 8), dtype=np.uint8)
    args = list(launch.args)
    if len(args) != len(fn.params):
        raise GpuUnavailable(f"kernel {fn.name} takes {len(fn.params)} parameters, launch passes {len(args)}")
    if int(getattr(launch, "stack_size", 1024)) != 1024:
        _check(d.cuCtxSetLimit(d.CUlimit.CU_LIMIT_STACK_SIZE, int(launch.stack_size)), "cuCtxSetLimit", d)
    dev.placements = list(getattr(launch, "_tensor_map_placements", None) or [])
    outputs_spec = dev.place(args, fn.params, params, image)
    # kernelParams: one pointer per parameter into the packed image
    buf = (ctypes.c_uint8 * image.size).from_buffer_copy(image.tobytes())
    base = ctypes.addressof(buf)
    ptrs = (ctypes.c_void_p * max(len(fn.params), 1))(*[base + params[p.name].offset for p in fn.params])
    A = d.CUfunction_attribute
    dyn = int(launch.dynamic_smem)
    static = _check(d.cuFuncGetAttribute(A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kfn), "cuFuncGetAttribute",
                    d) if dyn else 0
    if dyn and dyn + int(static) > 48 * 1024:
        # the opt-in is needed once static + dynamic shared memory passes 48 KiB (48 KiB dynamic + 64 B static
        # was refused with CUDA_ERROR_INVALID_VALUE before)
        _check(d.cuFuncSetAttribute(kfn, A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn), "cuFuncSetAttribute", d)
    csize = launch.cluster[0] * launch.cluster[1] * launch.cluster[2]
    if csize > 8:
        _check(d.cuFuncSetAttribute(kfn, A.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1), "cuFuncSetAttribute", d)
    return {"launch": launch, "fn": fn, "kfn": kfn, "buf": buf, "ptrs": ptrs, "dyn": dyn, "csize": csize,
            "outputs_spec": outputs_spec, "nargs": len(args)}


def _launch(d, k: dict, programmatic: bool) -> None:
    """cuLaunchKernelEx with the cluster-dimension attribute (clusters) and, for a programmatic dependent
    launch, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION."""
    launch, fn = k["launch"], k["fn"]
    cfg = d.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = launch.grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = launch.block
    cfg.sharedMemBytes = k["dyn"]
    cfg.hStream = 0
    attrs = []
    if k["csize"] > 1 or "reqnctapercluster" in fn.directives or "explicitcluster" in fn.directives:
        at = d.CUlaunchAttribute()
        at.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        at.value.clusterDim.x, at.value.clusterDim.y, at.value.clusterDim.z = launch.cluster
        attrs.append(at)
    if programmatic:
        at = d.CUlaunchAttribute()
        at.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        at.value.programmaticStreamSerializationAllowed = 1
        attrs.append(at)
    cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    _check(d.cuLaunchKernelEx(cfg, k["kfn"], ctypes.addressof(k["ptrs"]), 0), "cuLaunchKernelEx", d)


def _download(dev, k: dict) -> list:
    outputs = [None] * k["nargs"]
    for i, spec in k["outputs_spec"]:
        outputs[i] = [dev.download(p, a) for p, a in spec] if isinstance(spec, list) else dev.download(*spec)
    return outputs


class _DeviceArgs:
    """The launch's arguments on the device, laid out as :func:`tcsim.launch.prepare_arguments` lays them for the
    simulator: arrays (numpy, or torch CPU tensors) become buffers; :class:`tcsim.launch.Pointer` s their
    addresses; :class:`tcsim.launch.Struct` s their packed bytes (pointers and tensor maps at their offsets); a
    tensor map whose tensor is no array argument (nor a view inside one) gets a buffer holding the memory its view
    spans, with the view's real strides, copied back to the caller after the run (``spans``)."""

    def __init__(self, d, share_arguments: bool = False):
        self.d = d
        #: array arguments passed again (a later launch of a sequence) find their buffer: one buffer per array
        self.share_arguments = share_arguments
        self.by_id = {}         # id(array) -> device pointer
        self.keys = {}          # memory key -> device pointer
        self.ranges = []        # (host pointer, nbytes, device pointer) of C-contiguous array arguments
        self.allocs = []
        self.spans = []         # per tensor map, in argument order: (device pointer, bytes) of its span, or None
        self.placements = []    # per tensor map, in argument order (tensor_map_placements)
        self.arg_ptrs = {}      # argument index -> device pointer (array or Pointer argument)
        self.field_ptrs = {}    # argument index -> device pointers of a Struct's Pointer fields

    def buffer(self, arr_in, share=True) -> int:
        from tcsim.isa.tensormap import memory_key
        if share and id(arr_in) in self.by_id:
            return self.by_id[id(arr_in)]
        arr = np.ascontiguousarray(arr_in)
        ptr = _check(self.d.cuMemAlloc(max(arr.nbytes, 1)), "cuMemAlloc", self.d)
        if arr.nbytes:
            _check(self.d.cuMemcpyHtoD(ptr, arr.ctypes.data, arr.nbytes), "cuMemcpyHtoD", self.d)
        self.allocs.append(ptr)
        self.by_id[id(arr_in)] = ptr
        self.keys.setdefault(memory_key(arr_in), ptr)
        if arr_in.flags.c_contiguous:
            self.ranges.append((arr_in.__array_interface__["data"][0], arr_in.nbytes, int(ptr)))
        return ptr

    def tensor_map(self, tm) -> bytes:
        """The map's 128 bytes at the device address its placement (:func:`tensor_map_placements`, made in the
        parent, where the caller's views still are views) gives; a front end's host tensor map
        (:func:`is_host_tensor_map`) at the buffer of its memory region, shared with the pointer arguments over the
        same region."""
        where = self.placements.pop(0) if self.placements else None
        if is_host_tensor_map(tm):
            self.spans.append(None)
            return _encode_tensormap(self.d, tm.tensor_map, int(self.buffer(tm.region.host)))
        if where is None:
            self.spans.append(None)
            return _encode_tensormap(self.d, tm, None)
        if where[0] == "span":
            span = np.frombuffer(where[1], dtype=np.uint8)
            ptr = _check(self.d.cuMemAlloc(max(span.size, 1)), "cuMemAlloc", self.d)
            if span.size:
                _check(self.d.cuMemcpyHtoD(ptr, span.ctypes.data, span.size), "cuMemcpyHtoD", self.d)
            self.allocs.append(ptr)
            self.spans.append((ptr, span.size))
            return _encode_tensormap(self.d, tm, int(ptr))
        _, i, j, off = where
        base = self.arg_ptrs[i] if j is None else self.field_ptrs[i][j]
        self.spans.append(None)
        return _encode_tensormap(self.d, tm, int(base) + off)

    def place(self, args, fparams, params, image) -> list:
        from tcsim.isa.tensormap import as_numpy
        from tcsim.launch import Pointer, Struct, encode_scalar
        args = [as_numpy(a) for a in args]
        spec = []
        for i, (a, p) in enumerate(zip(args, fparams)):
            if isinstance(a, np.ndarray) and not (p.array and p.type == "b8"):
                self.arg_ptrs[i] = self.buffer(a, share=self.share_arguments)
                spec.append((i, (self.arg_ptrs[i], a)))
            elif isinstance(a, Pointer):
                self.arg_ptrs[i] = self.buffer(a.array)
                spec.append((i, (self.arg_ptrs[i], a.array)))
            elif isinstance(a, Struct):
                self.field_ptrs[i] = [self.buffer(f.array) for f in a.pointers()]
                spec.append((i, [(q, f.array) for q, f in zip(self.field_ptrs[i], a.pointers())]))
            elif is_host_tensor_map(a):
                # the map's memory region: one buffer with the pointer arguments over it; its final contents are
                # this argument's output (what a TMA store wrote)
                spec.append((i, (self.buffer(a.region.host), a.region.host)))
        for i, (a, p) in enumerate(zip(args, fparams)):
            off = params[p.name].offset
            if isinstance(a, np.ndarray) and not (p.array and p.type == "b8"):
                raw = np.uint64(int(self.by_id[id(a)])).tobytes()
            elif isinstance(a, Pointer):
                raw = np.uint64(int(self.by_id[id(a.array)])).tobytes()
            elif isinstance(a, Struct):
                raw = a.pack(lambda arr: int(self.by_id[id(arr)]), self.tensor_map, limit=p.size_bytes,
                             what=f"argument {i} Struct")
            elif hasattr(a, "to_driver_args") or is_host_tensor_map(a):
                raw = self.tensor_map(a)
            elif isinstance(a, (bytes, bytearray)) or isinstance(a, np.ndarray):
                raw = bytes(a) if not isinstance(a, np.ndarray) else a.tobytes()
            else:
                raw = encode_scalar(a, p)
            image[off:off + len(raw)] = np.frombuffer(bytes(raw), dtype=np.uint8)
        return spec

    def download(self, ptr, orig):
        host = np.empty_like(np.ascontiguousarray(orig))
        if host.nbytes:
            _check(self.d.cuMemcpyDtoH(host.ctypes.data, ptr, host.nbytes), "cuMemcpyDtoH", self.d)
        return host.reshape(orig.shape)

    def download_bytes(self, ptr, n) -> bytes:
        host = np.empty(n, np.uint8)
        if n:
            _check(self.d.cuMemcpyDtoH(host.ctypes.data, ptr, n), "cuMemcpyDtoH", self.d)
        return host.tobytes()

    def free(self):
        for ptr in self.allocs:
            self.d.cuMemFree(ptr)


def is_host_tensor_map(a) -> bool:
    """A front end's tensor map argument (:class:`tcsim.triton.HostTensorMap`, also made by :mod:`tcsim.cute`): a
    :class:`tcsim.isa.tensormap.TensorMap` (``tensor_map``, global address 0) over a memory region (``region.host``,
    the caller's memory as one flat array) that the launch's pointer arguments may share."""
    return hasattr(a, "region") and hasattr(a, "tensor_map") and hasattr(getattr(a, "region"), "host")


def _encode_tensormap(d, tm, addr) -> bytes:
    """cuTensorMapEncodeTiled from the simulator's TensorMap description, at device address ``addr`` (None: the
    map's own ``global_address``)."""
    (dtype, rank, addr, dims, strides, box, estr, inter, swz, l2, oob) = tm.to_driver_args(global_address=addr)
    if not strides:
        # rank 1 has no strides, but cuda-python turns an empty list into a NULL pointer, which
        # cuTensorMapEncodeTiled refuses with CUDA_ERROR_INVALID_VALUE (python -m calib.probes.tensormap_rank1 on an
        # H100); the driver reads none of the array, so one row-sized entry stands in
        strides = (-(-int(dims[0]) * tm.esize // 16) * 16,)
    tmap = _check(d.cuTensorMapEncodeTiled(
        d.CUtensorMapDataType(dtype), rank, addr,
        [d.cuuint64_t(x) for x in dims], [d.cuuint64_t(x) for x in strides],
        [d.cuuint32_t(x) for x in box], [d.cuuint32_t(x) for x in estr],
        d.CUtensorMapInterleave(inter), d.CUtensorMapSwizzle(swz), d.CUtensorMapL2promotion(l2),
        d.CUtensorMapFloatOOBfill(oob)), "cuTensorMapEncodeTiled")
    return np.asarray(tmap.opaque, dtype=np.uint64).tobytes()


# ------------------------------------------------------------------------------------------- the parent


def _in_child(work, timeout: float, stage, lineinfo):
    """Run ``work`` (a launch, or a list of launches) in a spawned child process: ("ok", payload) or a finished
    :class:`GpuResult` for a timeout, a dead child or a CUDA error; raises :class:`GpuUnavailable` / the child's
    crash."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(work, child, stage, lineinfo), daemon=True)
    p.start()
    child.close()
    if not parent.poll(timeout):
        p.kill()
        p.join()
        return GpuResult(outputs=[], error="TIMEOUT", error_detail=f"no result within {timeout} s (hang?)")
    try:
        kind, payload = parent.recv()
    except EOFError:
        p.join()
        return GpuResult(outputs=[], error="CHILD_DIED", error_detail=f"exit code {p.exitcode}")
    p.join()
    if kind == "unavailable":
        raise GpuUnavailable(payload)
    if kind == "cuda":
        name, what, printed = payload
        return GpuResult(outputs=[], error=name, error_detail=what, stdout=_lines(printed))
    if kind == "crash":
        raise RuntimeError(f"GPU back end crashed:\n{payload}")
    return kind, payload


def run_on_gpu(launch, timeout: float = 120.0, stage: str | None = None, lineinfo: bool = False) -> GpuResult:
    """Run ``launch`` on GPU 0 in a child process.  Raises :class:`GpuUnavailable` with a one-line reason
    when it cannot run here; kernel faults come back as ``GpuResult.error``.  ``lineinfo``: JIT with line
    tables (``CU_JIT_GENERATE_LINE_INFO``), so that tools such as compute-sanitizer place an error at the
    ``.loc`` position of the PTX."""
    _driver()  # fail fast (one line) when cuda-python is missing
    launch = _with_placements(launch)
    got = _in_child(launch, timeout, stage, lineinfo)
    if isinstance(got, GpuResult):
        return got
    payload = got[1]
    dev = payload.get("device", {})
    outputs = _as_callers(launch, payload.get("outputs", []))
    _write_spans_back(launch, payload.get("spans") or [])
    return GpuResult(outputs=outputs, elapsed_ms=payload.get("elapsed_ms"),
                     device=dev.get("name"), driver=dev.get("driver"), compute_capability=dev.get("cc"),
                     extra={"stage": payload.get("stage")}, stdout=_lines(payload.get("stdout", "")))


def run_sequence_on_gpu(launches, timeout: float = 120.0) -> GpuResult:
    """Run ``launches`` in order on one stream of GPU 0 (a child process, as :func:`run_on_gpu`), each with
    ``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`` where its ``programmatic`` is set -- the GPU side of
    :func:`tcsim.launch.run_sequence`.  ``GpuResult.outputs``: one list per launch (its arguments'
    buffers after the sequence; an array shared by several launches is one buffer)."""
    _driver()
    launches = [_with_placements(lc) for lc in launches]
    got = _in_child(launches, timeout, None, False)
    if isinstance(got, GpuResult):
        return got
    payload = got[1]
    dev = payload.get("device", {})
    outputs = [_as_callers(lc, o) for lc, o in zip(launches, payload.get("outputs", []))]
    return GpuResult(outputs=outputs, device=dev.get("name"), driver=dev.get("driver"),
                     compute_capability=dev.get("cc"), stdout=_lines(payload.get("stdout", "")))


def _lines(text: str) -> list:
    return [line + "\n" for line in (text or "").splitlines()]


def _as_callers(launch, outputs) -> list:
    """Outputs of torch-tensor arguments as torch tensors (the simulator's Result does the same)."""
    from tcsim.isa.tensormap import is_torch
    from tcsim.launch import Pointer, Struct

    def conv(x, was_torch):
        if not was_torch or x is None:
            return x
        import torch
        if x.dtype.name == "bfloat16":
            return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(x)

    out = []
    for a, o in zip(launch.args, outputs):
        if isinstance(a, Struct) and isinstance(o, list):
            out.append([conv(x, getattr(q, "torch", False)) for x, q in zip(o, a.pointers())])
        else:
            out.append(conv(o, is_torch(a) or (isinstance(a, Pointer) and getattr(a, "torch", False))))
    return out + outputs[len(out):]


def _tensor_maps(launch) -> list:
    from tcsim.launch import Struct
    maps = []
    for a in launch.args:
        if isinstance(a, Struct):
            maps += a.tensor_maps()
        elif hasattr(a, "to_driver_args") or is_host_tensor_map(a):
            maps.append(a)
    return maps


def tensor_map_placements(launch) -> list:
    """Where each tensor map's tensor goes on the device, decided in the caller's process (a view pickled into the
    child arrives as a contiguous copy): ``None`` (no array: its own global address), ``("arg", i, None, off)`` /
    ``("arg", i, j, off)`` (inside array argument / Pointer ``i``, or Pointer field ``j`` of Struct ``i``, at byte
    ``off``), or ``("span", bytes)`` (a buffer of its own holding the memory the view spans)."""
    from tcsim.isa.tensormap import _span_view, as_numpy
    from tcsim.launch import Pointer, Struct
    owners = []
    for i, a in enumerate(launch.args):
        a = as_numpy(a)
        if isinstance(a, np.ndarray):
            owners.append((i, None, a))
        elif isinstance(a, Pointer):
            owners.append((i, None, a.array))
        elif isinstance(a, Struct):
            owners += [(i, j, f.array) for j, f in enumerate(a.pointers())]
    out = []
    for tm in _tensor_maps(launch):
        arr = getattr(tm, "array", None)
        if arr is None or is_host_tensor_map(tm):
            out.append(None)
            continue
        arr = as_numpy(arr)
        span = _span_view(arr) if arr.size else np.zeros(0, np.uint8)
        lo = arr.__array_interface__["data"][0]
        hit = None
        for i, j, own in owners:
            if not own.flags.c_contiguous:
                continue
            base = own.__array_interface__["data"][0]
            if base <= lo and lo + span.size <= base + own.nbytes:
                hit = ("arg", i, j, lo - base)
                break
        out.append(hit or ("span", np.ascontiguousarray(span).tobytes()))
    return out


def _with_placements(launch):
    import copy
    lc = copy.copy(launch)
    lc._tensor_map_placements = tensor_map_placements(launch)
    return lc


def _write_spans_back(launch, spans) -> None:
    """Tensor maps whose tensor had a device buffer of its own: the view's elements back into the caller's array."""
    from tcsim.isa.tensormap import as_numpy, write_span
    for tm, span in zip(_tensor_maps(launch), spans):
        if span is not None and getattr(tm, "array", None) is not None:
            write_span(as_numpy(tm.array), span)


def gpu_available() -> tuple[bool, str]:
    """(True, description) or (False, one-line reason) — used by tests to skip cleanly."""
    try:
        _driver()
        ctx = mp.get_context("spawn")
        with ctx.Pool(1) as pool:
            info = pool.apply(probe)
        return True, f"{info['name']} sm_{info['cc'][0]}{info['cc'][1]} driver {info['driver']}"
    except GpuUnavailable as e:
        return False, str(e)
    except Exception as e:  # noqa: BLE001
        return False, f"GPU probe failed: {e}"
