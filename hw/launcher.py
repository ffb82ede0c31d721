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


def _child(launch, conn, stage_limit, lineinfo=False):
    try:
        if isinstance(launch, (list, tuple)):
            conn.send(("ok", _execute_sequence(list(launch), lineinfo)))
        else:
            conn.send(("ok", _execute(launch, stage_limit, lineinfo)))
    except GpuUnavailable as e:
        conn.send(("unavailable", str(e)))
    except _CudaError as e:
        conn.send(("cuda", (e.name, e.what)))
    except BaseException:  # noqa: BLE001 - reported to the parent with its traceback
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
    dptrs: dict = {}
    k = _prepare(d, launch, info, lineinfo, dptrs)
    ev0 = _check(d.cuEventCreate(0), "cuEventCreate", d)
    ev1 = _check(d.cuEventCreate(0), "cuEventCreate", d)
    _check(d.cuEventRecord(ev0, 0), "cuEventRecord", d)
    _launch(d, k, programmatic=False)
    _check(d.cuEventRecord(ev1, 0), "cuEventRecord", d)
    _check(d.cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)", d)
    ms = _check(d.cuEventElapsedTime(ev0, ev1), "cuEventElapsedTime", d)
    outputs = _download(d, k)
    for ptr, _ in dptrs.values():
        d.cuMemFree(ptr)
    return {"outputs": outputs, "elapsed_ms": float(ms), "device": info}


def _execute_sequence(launches, lineinfo=False):
    """Launch ``launches`` in order on one stream (the legacy default stream), each with
    ``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`` when its ``programmatic`` is set; an array passed
    to several launches is one device buffer.  Outputs: per launch, the buffers' contents after the whole
    sequence (the host cannot observe a buffer between programmatically overlapped grids)."""
    d = _driver()
    info = probe()
    _context(d)
    dptrs: dict = {}
    ks = [_prepare(d, launch, info, lineinfo, dptrs) for launch in launches]
    for launch, k in zip(launches, ks):
        _launch(d, k, programmatic=bool(getattr(launch, "programmatic", False)))
    _check(d.cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)", d)
    outputs = [_download(d, k) for k in ks]
    for ptr, _ in dptrs.values():
        d.cuMemFree(ptr)
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


def _prepare(d, launch, info, lineinfo, dptrs: dict) -> dict:
    """Load the kernel, place its arrays (``dptrs``: id(array) -> (device pointer, array), shared by the launches
    of a sequence) and pack its parameters; returns what :func:`_launch` and :func:`_download` need."""
    from tcsim.machine import layout_program as lay

    module, fn, kfn = _load(d, launch, info, lineinfo)
    layout = lay(module, fn)
    params = layout["param_symbols"]
    image = np.zeros(max(layout["param_size"], 8), dtype=np.uint8)
    outputs_spec = []
    from tcsim.launch import encode_scalar
    args = list(launch.args)
    if len(args) != len(fn.params):
        raise GpuUnavailable(f"kernel {fn.name} takes {len(fn.params)} parameters, launch passes {len(args)}")
    for i, (a, p) in enumerate(zip(args, fn.params)):
        if isinstance(a, np.ndarray) and not (p.array and p.type == "b8"):
            if id(a) not in dptrs:
                arr = np.ascontiguousarray(a)
                ptr = _check(d.cuMemAlloc(max(arr.nbytes, 1)), "cuMemAlloc", d)
                _check(d.cuMemcpyHtoD(ptr, arr.ctypes.data, arr.nbytes), "cuMemcpyHtoD", d)
                dptrs[id(a)] = (ptr, a)
            outputs_spec.append((i, dptrs[id(a)][0], a))
    for i, (a, p) in enumerate(zip(args, fn.params)):
        off = params[p.name].offset
        if id(a) in dptrs and isinstance(a, np.ndarray):
            raw = np.uint64(int(dptrs[id(a)][0])).tobytes()
        elif hasattr(a, "to_driver_args"):
            raw = _encode_tensormap(d, a, dptrs)
        elif isinstance(a, (bytes, bytearray)) or isinstance(a, np.ndarray):
            raw = bytes(a) if not isinstance(a, np.ndarray) else a.tobytes()
        else:
            raw = encode_scalar(a, p)
        image[off:off + len(raw)] = np.frombuffer(bytes(raw), dtype=np.uint8)
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


def _download(d, k: dict) -> list:
    outputs = [None] * k["nargs"]
    for i, ptr, orig in k["outputs_spec"]:
        host = np.empty_like(np.ascontiguousarray(orig))
        _check(d.cuMemcpyDtoH(host.ctypes.data, ptr, host.nbytes), "cuMemcpyDtoH", d)
        outputs[i] = host.reshape(orig.shape)
    return outputs


def _encode_tensormap(d, tm, dptrs) -> bytes:
    """cuTensorMapEncodeTiled from the simulator's TensorMap description, on the real device address."""
    arr = getattr(tm, "array", None)
    if arr is None or id(arr) not in dptrs:
        raise GpuUnavailable("a tensor map's tensor must be one of the launch's array arguments on the GPU")
    (dtype, rank, addr, dims, strides, box, estr, inter, swz, l2, oob) = tm.to_driver_args(
        global_address=int(dptrs[id(arr)][0]))
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


def run_on_gpu(launch, timeout: float = 120.0, stage: str | None = None, lineinfo: bool = False) -> GpuResult:
    """Run ``launch`` on GPU 0 in a child process.  Raises :class:`GpuUnavailable` with a one-line reason
    when it cannot run here; kernel faults come back as ``GpuResult.error``.  ``lineinfo``: JIT with line
    tables (``CU_JIT_GENERATE_LINE_INFO``), so that tools such as compute-sanitizer place an error at the
    ``.loc`` position of the PTX."""
    _driver()  # fail fast (one line) when cuda-python is missing
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(launch, child, stage, lineinfo), daemon=True)
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
        name, what = payload
        return GpuResult(outputs=[], error=name, error_detail=what)
    if kind == "crash":
        raise RuntimeError(f"GPU back end crashed:\n{payload}")
    dev = payload.get("device", {})
    return GpuResult(outputs=payload.get("outputs", []), elapsed_ms=payload.get("elapsed_ms"),
                     device=dev.get("name"), driver=dev.get("driver"), compute_capability=dev.get("cc"),
                     extra={"stage": payload.get("stage")})


def run_sequence_on_gpu(launches, timeout: float = 120.0) -> GpuResult:
    """Run ``launches`` in order on one stream of GPU 0 (a child process, as :func:`run_on_gpu`), each with
    ``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`` where its ``programmatic`` is set -- the GPU side of
    :func:`tcsim.launch.run_sequence`.  ``GpuResult.outputs``: one list per launch (its arguments'
    buffers after the sequence; an array shared by several launches is one buffer)."""
    return run_on_gpu(list(launches), timeout=timeout)


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
