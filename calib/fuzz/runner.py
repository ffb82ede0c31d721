"""Run fuzz programs on the simulator and on the GPU, compare bit for bit, minimise and save mismatches.

Simulator: each program runs under scheduler seeds ``None`` and ``1`` (:data:`SIM_SEEDS`); a race-free program
must give identical outputs under every schedule, so a disagreement there is a *simulator* bug on its own
(reported as kind ``'schedule'``).  A :class:`tcsim.isa.errors.TcsimError` on a program that ptxas accepts is kind
``'sim_error'``.

GPU: :class:`GpuBatch` keeps one child process (spawned, as :mod:`tcsim.hw.launcher` does) that JIT-loads many
programs as the entries of one module and launches them one after the other, streaming each program's output
back as it completes.  A sticky CUDA error or a hang kills only that child; the batch goes on in a fresh child
from the next program.  Should the batch helper itself fail (not the kernel), the runner falls back to
:func:`tcsim.hw.launcher.run_on_gpu`, one child per program (slow, but the same well-tested path).

A mismatch (GPU bits != simulator bits, or an error on one side only) is minimised with
:func:`calib.fuzz.minimize.minimize` under the predicate "the GPU and the simulator still disagree" and saved as
``<out>/<name>.ptx`` + ``<name>.json`` (inputs, both outputs, the differing fields) -- the format that
``tests/fuzz_regressions`` replays.
"""
from __future__ import annotations

import base64
import ctypes
import json
import multiprocessing as mp
import os
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tcsim.hw.launcher import GpuUnavailable, _check, _CudaError, _driver, probe

from .generator import Program, generate, module_header

SIM_SEEDS = (None, 1)


# ============================================================================================ outcomes

@dataclass
class Outcome:
    """One back end's result for one program: the output buffer (bytes) or an error string."""
    output: bytes | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class Mismatch:
    prog: Program
    kind: str                       # 'value' | 'sim_error' | 'gpu_error' | 'schedule'
    sim: Outcome
    gpu: Outcome | None = None
    diffs: list = field(default_factory=list)
    detail: str = ""


# ============================================================================================ simulator

def run_sim(prog: Program, seed=None, max_instructions: int = 200_000, detect: bool = False,
            max_seconds: float | None = None) -> Outcome:
    """Simulate ``prog`` under scheduler ``seed``; returns the output buffer bytes or the error.  The
    happens-before race detector is off (``detect``): its findings are no part of the outcome, and the programs
    are race-free by construction (tests/hw/test_fuzz.py runs a sample with it on and requires no finding)."""
    from tcsim.isa.errors import TcsimError
    from tcsim.launch import Launch, run_launch

    try:
        launch = Launch(ptx=prog.render(), kernel=prog.kernel_name, block=(prog.nthreads, 1, 1),
                        args=[prog.input_buffer(), prog.output_template()])
        res = run_launch(launch, seed=seed, max_instructions=max_instructions, detect=detect,
                         max_seconds=max_seconds)
        return Outcome(output=res.outputs[1].tobytes())
    except TcsimError as e:
        return Outcome(error=f"{type(e).__name__}: {e}")


def sim_check(prog: Program, seeds=SIM_SEEDS, max_seconds: float | None = None) -> tuple:
    """(Outcome under seeds[0], None or a 'schedule' detail string when another seed disagrees); ``max_seconds``:
    the simulator work each run may take (None: the instruction budget alone)."""
    first = run_sim(prog, seeds[0], max_seconds=max_seconds)
    for s in seeds[1:]:
        other = run_sim(prog, s, max_seconds=max_seconds)
        if (other.output, other.error) != (first.output, first.error):
            return first, (f"scheduler seed {seeds[0]} vs {s}: "
                           + describe_diffs(prog, first, other, "seed0", f"seed{s}", limit=4))
    return first, None


def _sim_task(args):
    kind, payload, seeds = args[:3]
    max_seconds = args[3] if len(args) > 3 else None
    if kind == "seed":      # payload: a seed (current generator) or (seed, generator version)
        prog = generate(payload[0], version=payload[1]) if isinstance(payload, tuple) else generate(payload)
    else:
        prog = payload
    try:
        out, sched = sim_check(prog, seeds, max_seconds)
    except Exception:  # noqa: BLE001 - a Python exception in the simulator is a simulator bug: report it
        out, sched = Outcome(error="INTERNAL " + traceback.format_exc(limit=6)), None
    return out, sched


# ============================================================================================ comparison

def field_diffs(prog: Program | None, a: bytes, b: bytes, nthreads: int | None = None, nacc: int = 0) -> list:
    """[(thread, field name, a bits, b bits)] for every output field that differs: the per-thread records, then
    (wgmma programs: ``prog.nacc``, or ``nthreads`` and ``nacc`` without a program) the accumulator dump."""
    A = np.frombuffer(a, dtype=np.uint8)
    B = np.frombuffer(b, dtype=np.uint8)
    out = []
    if A.shape != B.shape:
        return [(-1, "size", len(a), len(b))]
    from .generator import STRIDE, acc_fields, output_fields
    if prog is not None:
        nthreads, nacc = prog.nthreads, prog.nacc
    if nacc:
        cut = nthreads * STRIDE
        out = field_diffs(None, a[:cut], b[:cut])
        Aa, Ba = A[cut:].reshape(nthreads, 4 * nacc), B[cut:].reshape(nthreads, 4 * nacc)
        for t in np.nonzero((Aa != Ba).any(axis=1))[0]:
            for name, off, size in acc_fields(nacc):
                va = int.from_bytes(Aa[t, off:off + size].tobytes(), "little")
                vb = int.from_bytes(Ba[t, off:off + size].tobytes(), "little")
                if va != vb:
                    out.append((int(t), name, va, vb))
        return out
    fields = output_fields()
    for t in np.nonzero((A != B).reshape(-1, STRIDE).any(axis=1))[0]:
        rec_a = A[t * STRIDE:(t + 1) * STRIDE]
        rec_b = B[t * STRIDE:(t + 1) * STRIDE]
        for name, off, size in fields:
            va = int.from_bytes(rec_a[off:off + size].tobytes(), "little")
            vb = int.from_bytes(rec_b[off:off + size].tobytes(), "little")
            if va != vb:
                out.append((int(t), name, va, vb))
    return out


def describe_diffs(prog, a: Outcome, b: Outcome, an="sim", bn="gpu", limit=8) -> str:
    if not a.ok or not b.ok:
        return f"{an}: {a.error or 'ok'} | {bn}: {b.error or 'ok'}"
    d = field_diffs(prog, a.output, b.output)
    parts = []
    for t, name, va, vb in d[:limit]:
        n = 16 if name.startswith("%rd") else 4 if name.startswith("%h") else 8
        parts.append(f"thread {t} {name}: {an} 0x{va:0{n}X} {bn} 0x{vb:0{n}X}")
    more = f" (+{len(d) - limit} more)" if len(d) > limit else ""
    return "; ".join(parts) + more


def compare(prog: Program, sim: Outcome, gpu: Outcome) -> Mismatch | None:
    if sim.ok and gpu.ok:
        if sim.output == gpu.output:
            return None
        return Mismatch(prog, "value", sim, gpu, field_diffs(prog, sim.output, gpu.output),
                        describe_diffs(prog, sim, gpu))
    if sim.ok and not gpu.ok:
        return Mismatch(prog, "gpu_error", sim, gpu, detail=gpu.error)
    if not sim.ok and gpu.ok:
        return Mismatch(prog, "sim_error", sim, gpu, detail=sim.error)
    return None                     # both refuse: nothing to compare


# ============================================================================================ the GPU batch

def _load_driver(kind: str):
    if kind.startswith("fake"):
        return SimulatedDriver(mutate=kind.partition("-")[2] or None)
    return _driver()


def _gpu_child(conn, driver_kind="cuda"):
    """Child loop: receive ('batch', [(name, entry_text, nthreads, in_bytes, out_bytes), ...]); JIT them as one
    module; launch each; send ('res', i, out_bytes) per program, then ('done',).  A JIT error sends
    ('jit', log); a CUDA error in a launch sends ('err', i, name) and exits (the context is gone)."""
    try:
        d = _load_driver(driver_kind)
        info = probe(d)
        if tuple(info["cc"]) != (9, 0):
            raise GpuUnavailable(f"the fuzz programs target sm_90a; this GPU ({info['name']}) is "
                                 f"sm_{info['cc'][0]}{info['cc'][1]}")
        dev = _check(d.cuDeviceGet(0), "cuDeviceGet", d)
        ctx = _check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain", d)
        _check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", d)
        conn.send(("ready", info))
    except GpuUnavailable as e:
        conn.send(("unavailable", str(e)))
        return
    except BaseException:  # noqa: BLE001
        conn.send(("crash", traceback.format_exc()))
        return
    J = d.CUjit_option
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        _, progs = msg
        try:
            text = module_header() + "\n".join(p[1] for p in progs)
            logsize = 1 << 16
            errlog = bytearray(logsize)
            infolog = bytearray(logsize)
            opts = [J.CU_JIT_ERROR_LOG_BUFFER, J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, J.CU_JIT_INFO_LOG_BUFFER,
                    J.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
            res = d.cuModuleLoadDataEx(text.encode() + b"\0", len(opts), opts, [errlog, logsize, infolog, logsize])
            if int(res[0]) != 0:
                log = bytes(errlog).split(b"\0")[0].decode(errors="replace")
                conn.send(("jit", log.strip()[:4000]))
                continue
            mod = res[1]
            conn.send(("loaded",))
            for i, (name, _text, nt, inb, outb) in enumerate(progs):
                try:
                    out = _launch_one(d, mod, name, nt, inb, outb)
                except _CudaError as e:
                    conn.send(("err", i, f"{e.name} in {e.what}"))
                    return
                conn.send(("res", i, out))
            d.cuModuleUnload(mod)
            conn.send(("done",))
        except BaseException:  # noqa: BLE001
            conn.send(("crash", traceback.format_exc()))
            return


def _launch_one(d, mod, name, nt, inb: bytes, outb: bytes) -> bytes:
    """Copy in, launch (1 CTA of nt threads, params: in pointer, out pointer), synchronise, copy out -- the
    same driver calls, in the same order, as hw.launcher._execute."""
    kfn = _check(d.cuModuleGetFunction(mod, name.encode()), "cuModuleGetFunction", d)
    ina = np.frombuffer(inb, dtype=np.uint8).copy()
    outa = np.frombuffer(outb, dtype=np.uint8).copy()
    pin = _check(d.cuMemAlloc(max(ina.nbytes, 1)), "cuMemAlloc", d)
    pout = _check(d.cuMemAlloc(max(outa.nbytes, 1)), "cuMemAlloc", d)
    try:
        _check(d.cuMemcpyHtoD(pin, ina.ctypes.data, ina.nbytes), "cuMemcpyHtoD", d)
        _check(d.cuMemcpyHtoD(pout, outa.ctypes.data, outa.nbytes), "cuMemcpyHtoD", d)
        image = np.zeros(16, dtype=np.uint8)
        image[0:8] = np.frombuffer(np.uint64(int(pin)).tobytes(), dtype=np.uint8)
        image[8:16] = np.frombuffer(np.uint64(int(pout)).tobytes(), dtype=np.uint8)
        buf = (ctypes.c_uint8 * 16).from_buffer_copy(image.tobytes())
        base = ctypes.addressof(buf)
        ptrs = (ctypes.c_void_p * 2)(base, base + 8)
        cfg = d.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = 1, 1, 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = nt, 1, 1
        cfg.sharedMemBytes = 0
        cfg.hStream = 0
        cfg.attrs = []
        cfg.numAttrs = 0
        _check(d.cuLaunchKernelEx(cfg, kfn, ctypes.addressof(ptrs), 0), f"cuLaunchKernelEx({name})", d)
        _check(d.cuCtxSynchronize(), f"kernel execution of {name} (cuCtxSynchronize)", d)
        host = np.empty_like(outa)
        _check(d.cuMemcpyDtoH(host.ctypes.data, pout, host.nbytes), "cuMemcpyDtoH", d)
        return host.tobytes()
    finally:
        d.cuMemFree(pin)
        d.cuMemFree(pout)


class SimulatedDriver:
    """A stand-in for ``cuda.bindings.driver`` backed by the simulator: the subset of the driver API that
    :func:`_gpu_child` uses, with the same calling conventions (result tuples, raw host pointers, a
    ``void**`` kernel-parameter array read through ctypes).  It lets the tests exercise the batch protocol,
    the parameter packing and the restart-after-a-sticky-error path without a GPU.  A kernel the simulator
    rejects fails like a faulting kernel (CUDA_ERROR_LAUNCH_FAILED at synchronisation, sticky); a kernel whose
    name contains ``_jitfail`` makes the whole module fail to load.  ``mutate='mulhi'`` plants a bug for
    testing the mismatch path end to end: every ``mul.hi`` executes as ``mul.lo``; ``mutate='hang'`` makes the
    launch of the second program of every batch (kernel ``fz_1``) never return, as a GPU kernel that hangs;
    ``mutate='slowjit'`` makes the JIT of any module holding a second program never return;
    ``mutate='trap-<text>'`` makes a kernel whose body contains ``<text>`` fail with
    CUDA_ERROR_ILLEGAL_INSTRUCTION (sticky), as a GPU that refuses an instruction."""

    NAMES = {0: b"CUDA_SUCCESS", 218: b"CUDA_ERROR_INVALID_PTX", 715: b"CUDA_ERROR_ILLEGAL_INSTRUCTION",
             719: b"CUDA_ERROR_LAUNCH_FAILED"}

    class CUjit_option:  # noqa: N801 - driver API spelling
        CU_JIT_ERROR_LOG_BUFFER = 5
        CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
        CU_JIT_INFO_LOG_BUFFER = 3
        CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4

    class CUdevice_attribute:  # noqa: N801
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76

    class CUlaunchConfig:  # noqa: N801
        pass

    def __init__(self, mutate: str | None = None):
        self.mutate = mutate
        self.mem: dict = {}
        self.next = 0x7F0000000000
        self.sticky = 0

    def cuGetErrorName(self, err):  # noqa: N802
        return (0, self.NAMES.get(int(err), b"CUDA_ERROR_UNKNOWN"))

    def cuInit(self, flags):  # noqa: N802
        return (0,)

    def cuDeviceGetCount(self):  # noqa: N802
        return (0, 1)

    def cuDeviceGet(self, i):  # noqa: N802
        return (0, 0)

    def cuDeviceGetName(self, n, dev):  # noqa: N802
        return (0, b"tcsim stand-in\0")

    def cuDeviceGetAttribute(self, attr, dev):  # noqa: N802
        return (0, 9 if attr == self.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR else 0)

    def cuDriverGetVersion(self):  # noqa: N802
        return (0, 13000)

    def cuDevicePrimaryCtxRetain(self, dev):  # noqa: N802
        return (0, 1)

    def cuCtxSetCurrent(self, ctx):  # noqa: N802
        return (0,)

    def cuModuleLoadDataEx(self, src, n, opts, vals):  # noqa: N802
        text = bytes(src).rstrip(b"\0").decode()
        if "_jitcrash" in text:     # the driver's JIT dying inside the call (ptxas 13.0 does on some programs)
            os._exit(139)
        if "_jitfail" in text:
            log = vals[opts.index(self.CUjit_option.CU_JIT_ERROR_LOG_BUFFER)]
            msg = b"ptxas application ptx input: error: planted JIT failure"
            log[:len(msg)] = msg
            return (218, None)
        if self.mutate == "mulhi":
            text = text.replace("mul.hi.", "mul.lo.")
        if self.mutate == "slowjit" and ".entry fz_1(" in text:
            time.sleep(3600)
        return (0, {"text": text})

    def cuModuleUnload(self, mod):  # noqa: N802
        return (0,)

    def cuModuleGetFunction(self, mod, name):  # noqa: N802
        return (0, (mod["text"], name.decode()))

    def cuMemAlloc(self, n):  # noqa: N802
        addr = self.next
        self.next += (n + 0xFFFF) // 0x10000 * 0x10000
        self.mem[addr] = bytearray(n)
        return (0, addr)

    def cuMemFree(self, p):  # noqa: N802
        self.mem.pop(int(p), None)
        return (0,)

    def cuMemcpyHtoD(self, dst, src, n):  # noqa: N802
        self.mem[int(dst)][:n] = ctypes.string_at(src, n)
        return (0,)

    def cuMemcpyDtoH(self, dst, src, n):  # noqa: N802
        if self.sticky:
            return (self.sticky,)
        ctypes.memmove(dst, bytes(self.mem[int(src)][:n]), n)
        return (0,)

    def cuLaunchKernelEx(self, cfg, fn, params, extra):  # noqa: N802
        from tcsim.isa.errors import TcsimError
        from tcsim.launch import Launch, run_launch

        if self.sticky:
            return (self.sticky,)
        text, name = fn
        if self.mutate == "hang" and name == "fz_1":
            time.sleep(3600)
        if (self.mutate or "").startswith("trap-"):
            body = text.split(f".entry {name}(", 1)[-1].split(".entry ", 1)[0]
            if self.mutate[5:] in body:
                self.sticky = 715
                return (0,)
        slots = (ctypes.c_void_p * 2).from_address(params)
        pin, pout = (ctypes.c_uint64.from_address(slots[i]).value for i in range(2))
        ina = np.frombuffer(bytes(self.mem[pin]), dtype=np.uint8).copy()
        outa = np.frombuffer(bytes(self.mem[pout]), dtype=np.uint8).copy()
        try:
            res = run_launch(Launch(ptx=text, kernel=name, block=(cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ),
                                    args=[ina, outa]))
            self.mem[pout][:] = res.outputs[1].tobytes()
        except TcsimError:
            self.sticky = 719
        return (0,)

    def cuCtxSynchronize(self):  # noqa: N802
        return (self.sticky,)


class GpuBatchError(Exception):
    """The batch helper itself failed (not a kernel); the caller may fall back to hw.launcher."""


class GpuBatch:
    """Many programs per child process.  ``run(progs) -> [Outcome]``."""

    def __init__(self, timeout: float = 60.0, driver: str = "cuda", jit_timeout: float | None = None):
        self.timeout = timeout
        #: how long the driver's JIT of one batch's module may take (a batch that outlasts it is run one program
        #: per module, so one program that ptxas takes minutes over is reported as JIT_TIMEOUT, not retried forever)
        self.jit_timeout = jit_timeout if jit_timeout is not None else max(timeout, 120.0)
        #: the JIT limit of one program alone (after its batch's module outlasted ``jit_timeout``)
        self.single_jit_timeout = 30.0
        self.driver = driver
        self.proc = None
        self.conn = None
        self.info = None
        self.children = 0

    def _start(self):
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=True)
        p = ctx.Process(target=_gpu_child, args=(child, self.driver), daemon=True)
        p.start()
        child.close()
        self.proc, self.conn = p, parent
        self.children += 1
        if not parent.poll(120):
            self.close()
            raise GpuBatchError("GPU child did not start within 120 s")
        kind, payload = parent.recv()
        if kind == "unavailable":
            self.close()
            raise GpuUnavailable(payload)
        if kind != "ready":
            self.close()
            raise GpuBatchError(f"GPU child failed to start: {payload}")
        self.info = payload

    def close(self):
        # another thread (a recording that stopped at its deadline) may be using this batch: work on local copies
        proc, conn = self.proc, self.conn
        self.proc = self.conn = None
        if proc is not None:
            try:
                conn.send(None)
            except (OSError, BrokenPipeError, AttributeError):
                pass
            proc.join(2)
            if proc.is_alive():
                proc.kill()
                proc.join()

    def _kill(self):
        proc = self.proc
        if proc is not None:
            proc.kill()
            proc.join()
        self.proc = self.conn = None

    def _blame(self, todo: list, progs: list, results: list, error: str) -> None:
        """The module of programs ``todo`` failed to load: a single program gets ``error``; a batch is split in
        halves and each half run again, so only the culprit(s) are reported."""
        if len(todo) == 1:
            results[todo[0]] = Outcome(error=error)
            return
        half = len(todo) // 2
        for part in (todo[:half], todo[half:]):
            for i, o in zip(part, self.run([progs[i] for i in part])):
                results[i] = o

    def run(self, progs: list) -> list:
        results: list = [None] * len(progs)
        names = [f"fz_{i}" for i in range(len(progs))]
        payload = [(names[i], p.render(name=names[i], header=False), p.nthreads, p.input_buffer().tobytes(),
                    p.output_template().tobytes()) for i, p in enumerate(progs)]
        todo = list(range(len(progs)))
        died_once: set = set()
        while todo:
            if self.proc is None or not self.proc.is_alive():
                self._start()
            batch = [payload[i] for i in todo]
            self.conn.send(("batch", batch))
            got = 0
            loaded = False
            restart = False
            while True:
                if not self.conn.poll(self.timeout if loaded else self.jit_timeout):
                    if not loaded:          # the JIT of this module outlasted its limit: find the slow program
                        self._kill()
                        if len(todo) == 1:
                            results[todo[0]] = Outcome(error=f"JIT_TIMEOUT (the driver's JIT took more than "
                                                             f"{self.jit_timeout:.0f} s)")
                        else:               # one module per program, each with a shorter limit
                            outer = self.jit_timeout
                            self.jit_timeout = min(outer, self.single_jit_timeout)
                            try:
                                for i in todo:
                                    results[i] = self.run([progs[i]])[0]
                            finally:
                                self.jit_timeout = outer
                        todo = []
                        break
                    idx = todo[got]
                    results[idx] = Outcome(error=f"TIMEOUT (no result within {self.timeout} s)")
                    self._kill()
                    todo = todo[got + 1:]
                    restart = True
                    break
                try:
                    msg = self.conn.recv()
                except EOFError:
                    idx = todo[got]
                    self._kill()
                    if not loaded:          # the driver's JIT itself died on this module
                        self._blame(todo, progs, results, "JIT_CRASH (the driver's PTX compiler killed the "
                                                          "process on this program; ptxas crashes on it too)")
                        todo = []
                        break
                    if idx in died_once:    # the same program killed a fresh child twice: its own result
                        results[idx] = Outcome(error="CHILD_DIED (the GPU child process exited twice on this "
                                                     "program)")
                        todo = todo[got + 1:]
                    else:                   # retry from this program in a fresh child (a child can die of
                        died_once.add(idx)  # causes unrelated to the program: do not blame it yet)
                        todo = todo[got:]
                    restart = True
                    break
                if msg[0] == "loaded":
                    loaded = True
                    continue
                if msg[0] == "res":
                    results[todo[msg[1]]] = Outcome(output=msg[2])
                    got = msg[1] + 1
                elif msg[0] == "err":
                    results[todo[msg[1]]] = Outcome(error=msg[2])
                    self._kill()
                    todo = todo[msg[1] + 1:]
                    restart = True
                    break
                elif msg[0] == "jit":
                    self._blame(todo, progs, results, "JIT " + msg[1])
                    todo = []
                    break
                elif msg[0] == "done":
                    todo = []
                    break
                elif msg[0] == "crash":
                    self._kill()
                    raise GpuBatchError(msg[1])
            if not restart:
                break
        return results


class ThreadBackends:
    """One :class:`GpuBackend` (one GPU child process) per worker thread, created on first use; ``all`` lists
    them for closing."""

    def __init__(self, log=print, driver: str = "cuda", timeout: float = 60.0, jit_timeout: float | None = None):
        self.log, self.driver, self.timeout, self.jit_timeout = log, driver, timeout, jit_timeout
        self.local = threading.local()
        self.lock = threading.Lock()
        self.all: list = []

    def get(self) -> "GpuBackend":
        if not hasattr(self.local, "gpu"):
            self.local.gpu = GpuBackend(timeout=self.timeout, log=self.log, driver=self.driver,
                                        jit_timeout=self.jit_timeout)
            with self.lock:
                self.all.append(self.local.gpu)
        return self.local.gpu


class GpuBackend:
    """Batch helper with a per-program fallback to :func:`tcsim.hw.launcher.run_on_gpu`."""

    def __init__(self, timeout: float = 60.0, log=print, driver: str = "cuda", jit_timeout: float | None = None):
        self.batch = GpuBatch(timeout, driver, jit_timeout)
        self.fallback = False
        self.log = log

    @property
    def info(self):
        return self.batch.info

    def run(self, progs: list) -> list:
        if not self.fallback:
            try:
                return self.batch.run(progs)
            except GpuBatchError as e:
                self.log(f"[fuzz] GPU batch helper failed, falling back to hw.launcher.run_on_gpu:\n{e}")
                self.batch.close()
                self.fallback = True
        from tcsim.hw.launcher import run_on_gpu
        from tcsim.launch import Launch

        out = []
        for p in progs:
            r = run_on_gpu(Launch(ptx=p.render(), kernel=p.kernel_name, block=(p.nthreads, 1, 1),
                                  args=[p.input_buffer(), p.output_template()]), timeout=60)
            out.append(Outcome(output=r.outputs[1].tobytes()) if r.ok else Outcome(error=f"{r.error}: "
                                                                                       f"{r.error_detail}"))
        return out

    def close(self):
        self.batch.close()


# ============================================================================================ mismatch predicate

class SimPool:
    """A process pool running simulator checks (seeds) in parallel; ``jobs <= 1`` runs inline."""

    def __init__(self, jobs: int = 1):
        self.jobs = jobs
        self.pool = mp.get_context("fork" if hasattr(os, "fork") else "spawn").Pool(jobs) if jobs > 1 else None

    def map_async(self, tasks):
        if self.pool is None:
            res = [_sim_task(t) for t in tasks]

            class _Done:
                def get(self, timeout=None):
                    return res
            return _Done()
        return self.pool.map_async(_sim_task, tasks, chunksize=1)

    def map(self, tasks):
        if self.pool is None:
            return [_sim_task(t) for t in tasks]
        return self.pool.map(_sim_task, tasks, chunksize=max(1, len(tasks) // (4 * self.jobs)))

    def imap(self, tasks):
        if self.pool is None:
            return (_sim_task(t) for t in tasks)
        return self.pool.imap(_sim_task, tasks, chunksize=4)

    def close(self):
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()


def gpu_mismatch_predicate(gpu: GpuBackend, pool: SimPool, kind: str, stats: dict | None = None):
    """Batched predicate for :func:`calib.fuzz.minimize.minimize`: does each program still show a mismatch of
    ``kind`` between the simulator (seed None) and the GPU?"""
    def pred(progs):
        sims = pool.map([("prog", p, (None,)) for p in progs])
        gpus = gpu.run(progs)
        if stats is not None:
            stats["evaluations"] = stats.get("evaluations", 0) + len(progs)
        out = []
        for p, (s, _), g in zip(progs, sims, gpus):
            m = compare(p, s, g)
            out.append(m is not None and m.kind == kind)
        return out
    return pred


def gpu_error_predicate(gpu: GpuBackend, pool: SimPool, code: str, stats: dict | None = None):
    """Batched predicate for :func:`calib.fuzz.minimize.minimize`: does each program still fail on the GPU with
    the CUDA error ``code`` (e.g. ``CUDA_ERROR_ILLEGAL_INSTRUCTION``) while the simulator runs it?"""
    def pred(progs):
        sims = pool.map([("prog", p, (None,)) for p in progs])
        gpus = gpu.run(progs)
        if stats is not None:
            stats["evaluations"] = stats.get("evaluations", 0) + len(progs)
        return [s.ok and not g.ok and g.error.startswith(code) for (s, _), g in zip(sims, gpus)]
    return pred


def minimise_gpu_finding(m: "Mismatch", gpu: GpuBackend, pool: SimPool, time_limit: float,
                         stats: dict | None = None) -> tuple:
    """Shrink the program of GPU mismatch ``m`` while it still shows a mismatch of the same kind, then run the
    result on both back ends once more.  Returns ``(program, mismatch)``: the minimised program and its
    mismatch, or ``m``'s own program and mismatch when the minimised one does not reproduce (a flaky GPU
    result must not be saved as a finding)."""
    from .minimize import minimize

    small = minimize(m.prog, gpu_mismatch_predicate(gpu, pool, m.kind), time_limit=time_limit, stats=stats)
    mm = compare(small, run_sim(small, None), gpu.run([small])[0])
    return (small, mm) if mm is not None else (m.prog, m)


def schedule_predicate(pool: SimPool):
    def pred(progs):
        return [sched is not None for _, sched in pool.map([("prog", p, SIM_SEEDS) for p in progs])]
    return pred


def sim_error_predicate(pool: SimPool, needle: str | None = None):
    def pred(progs):
        res = pool.map([("prog", p, (None,)) for p in progs])
        return [(not o.ok) and (needle is None or needle in o.error) for o, _ in res]
    return pred


# ============================================================================================ saving

def mismatch_record(m: Mismatch, original_seed: int | None = None, device: str | None = None) -> dict:
    p = m.prog
    return {
        "format": "tcsim-fuzz-reproducer/1",
        "seed": p.seed if original_seed is None else original_seed,
        "kernel": p.kernel_name,
        "nthreads": p.nthreads,
        "nacc": p.nacc,
        "kind": m.kind,
        "detail": m.detail,
        "device": device,
        "input_b64": base64.b64encode(p.input_buffer().tobytes()).decode(),
        "output_fill": 0xA5,
        "sim_output_b64": base64.b64encode(m.sim.output).decode() if m.sim.output else None,
        "sim_error": m.sim.error,
        "gpu_output_b64": base64.b64encode(m.gpu.output).decode() if m.gpu and m.gpu.output else None,
        "gpu_error": m.gpu.error if m.gpu else None,
        "diffs": [{"thread": t, "field": f, "sim": f"0x{a:X}", "gpu": f"0x{b:X}"} for t, f, a, b in m.diffs[:64]],
        "n_diffs": len(m.diffs),
        "instructions": p.instruction_count(),
        "body": body_lines(p),
        "inputs_thread0": inputs_of_thread(p, 0),
        "status": "open",
    }


def body_lines(p: Program) -> list:
    """The generated instructions of ``p`` (between the prologue and the register dump)."""
    lines = p.render().split("\n")
    a = lines.index("\t// ---- body")
    b = lines.index("\t// ---- dump")
    return [ln.strip() for ln in lines[a + 1:b]]


def inputs_of_thread(p: Program, t: int) -> dict:
    """Input register values of thread t, as hex strings, by register name."""
    from .generator import STRIDE
    rec = p.inputs[t * STRIDE:(t + 1) * STRIDE]
    out = {}
    for name, off, size in p.describe_outputs():
        v = int.from_bytes(rec[off:off + size].tobytes(), "little")
        out[name] = f"0x{v:0{2 * size}X}"
    return out


def save_mismatch(m: Mismatch, out_dir, name: str, original_seed=None, device=None) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    m.prog.name = m.prog.name or name
    (out / f"{name}.ptx").write_text(m.prog.render())
    rec = mismatch_record(m, original_seed, device)
    (out / f"{name}.json").write_text(json.dumps(rec, indent=1) + "\n")
    return out / f"{name}.json"


def load_reproducer(json_path) -> dict:
    """A saved reproducer: its record plus numpy ``input`` and the saved outputs."""
    path = Path(json_path)
    rec = json.loads(path.read_text())
    rec["ptx"] = path.with_suffix(".ptx").read_text()
    rec["input"] = np.frombuffer(base64.b64decode(rec["input_b64"]), dtype=np.uint8).copy()
    for k in ("sim_output", "gpu_output"):
        v = rec.get(k + "_b64")
        rec[k] = base64.b64decode(v) if v else None
    return rec


def replay_on_sim(rec: dict, seed=None) -> Outcome:
    """Run a saved reproducer's PTX and input on the simulator."""
    from tcsim.isa.errors import TcsimError
    from tcsim.launch import Launch, run_launch

    n = rec["nthreads"]
    try:
        out = np.full(len(rec["gpu_output"] or rec["sim_output"]), rec.get("output_fill", 0xA5), dtype=np.uint8)
        res = run_launch(Launch(ptx=rec["ptx"], kernel=rec["kernel"], block=(n, 1, 1),
                                args=[rec["input"].copy(), out]), seed=seed)
        return Outcome(output=res.outputs[1].tobytes())
    except TcsimError as e:
        return Outcome(error=f"{type(e).__name__}: {e}")


# ============================================================================================ the campaign

def writers(prog: Program, reg: str) -> set:
    """Opcodes (text before the first dot) of the instructions whose first operand names ``reg``."""
    from .generator import Ins, LdMatrix, Load, walk_leaves
    from .wgmma_ops import WgOp

    out = set()
    for it in walk_leaves(prog.items):
        if isinstance(it, Ins):
            parts = it.text.split(None, 1)
            if len(parts) < 2:
                continue
            first = parts[1].split("}", 1)[0] if parts[1].startswith("{") else parts[1].split(",", 1)[0]
            names = {x.strip(" {}").split("|")[0] for x in first.split(",")}
            names |= {x.strip(" {}").split("|")[-1] for x in first.split(",")}
            if reg in names:
                out.add(parts[0].split(".")[0])
        elif isinstance(it, Load) and it.dst == reg:
            out.add("ld.shared")
        elif isinstance(it, LdMatrix) and reg in it.dsts:
            out.add("ldmatrix")
        elif isinstance(it, WgOp) and reg in it.d_regs():
            out.add(f"wgmma.{it.kind}")
    return out


def classify(m: Mismatch) -> str:
    """A coarse signature for deduplication before minimisation: kind, and for value mismatches the opcodes
    that write the first differing register."""
    if m.kind != "value":
        return m.kind + ":" + (m.detail or "").split(":")[0][:60]
    reg = m.diffs[0][1] if m.diffs else "?"
    if reg == "%p*":
        return "value:pred"
    return "value:" + (",".join(sorted(writers(m.prog, reg))) or "input")


def fuzz(count: int, seed: int = 0, backend: str = "sim", out_dir="fuzz_out", jobs: int | None = None,
         time_limit: float | None = None, batch_size: int = 64, minimize_limit: int = 6,
         minimize_time: float = 60.0, gpu_workers: int | None = None, driver: str = "cuda",
         log=print, version: int | None = None) -> dict:
    """Generate programs ``seed .. seed+count-1`` (of generator ``version``, default the current one); simulate
    each under :data:`SIM_SEEDS`; with backend 'gpu' compare with the GPU.  Returns a summary dict (also written
    to ``out_dir/summary.json``)."""
    from .minimize import minimize

    t0 = time.time()
    deadline = t0 + time_limit if time_limit else None
    jobs = jobs or max(1, (os.cpu_count() or 2) - (1 if backend == "gpu" else 0))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pool = SimPool(jobs)
    gpu_workers = (gpu_workers or 1) if backend == "gpu" else 0
    gpu = None
    summary = {"count_requested": count, "seed": seed, "backend": backend, "ran_sim": 0, "ran_gpu": 0,
               "schedule_mismatches": [], "sim_errors": [], "gpu_mismatches": [], "minimised": [],
               "device": None}
    mismatches: list = []
    seeds = list(range(seed, seed + count))
    chunks = [seeds[i:i + batch_size] for i in range(0, len(seeds), batch_size)]
    per_thread = ThreadBackends(log, driver)
    backends = per_thread.all
    backend = per_thread.get

    def process(chunk):
        progs = [generate(s, version=version) for s in chunk]
        sim_async = pool.map_async([("prog", p, SIM_SEEDS) for p in progs])
        gres = backend().run(progs) if gpu_workers else [None] * len(chunk)
        return progs, sim_async.get(), gres

    def absorb(progs, sim_res, gres):
        summary["ran_sim"] += len(progs)
        if gpu_workers:
            summary["ran_gpu"] += len(progs)
            if summary["device"] is None and backends:
                summary["device"] = (backends[0].info or {}).get("name")
        for p, (so, sched), go in zip(progs, sim_res, gres):
            if sched:
                summary["schedule_mismatches"].append({"seed": p.seed, "detail": sched[:600]})
                mismatches.append(Mismatch(p, "schedule", so, detail=sched))
                log(f"[fuzz] seed {p.seed}: SCHEDULE-DEPENDENT simulator result: {sched[:400]}")
            if not so.ok and (go is None or go.ok):
                summary["sim_errors"].append({"seed": p.seed, "error": so.error[:500]})
                log(f"[fuzz] seed {p.seed}: simulator error: {so.error[:300]}")
            if go is not None:
                m = compare(p, so, go)
                if m is not None:
                    summary["gpu_mismatches"].append({"seed": p.seed, "kind": m.kind, "class": classify(m),
                                                      "detail": m.detail[:600]})
                    mismatches.append(m)
                    log(f"[fuzz] seed {p.seed}: GPU MISMATCH ({m.kind}, {classify(m)}): {m.detail[:300]}")
                if not go.ok and not so.ok:
                    log(f"[fuzz] seed {p.seed}: both back ends failed: sim {so.error[:120]} | gpu {go.error}")
            elif not so.ok:
                mismatches.append(Mismatch(p, "sim_error", so, detail=so.error))

    reserve = minimize_time if gpu_workers else 0
    try:
        with ThreadPoolExecutor(max(1, gpu_workers or 2)) as ex:
            pending = []
            it = iter(chunks)
            exhausted = False
            while True:
                while not exhausted and len(pending) < 2 * max(1, gpu_workers or 2):
                    if deadline and time.time() > deadline - reserve:
                        log(f"[fuzz] time limit: no new programs after {summary['ran_sim']}")
                        exhausted = True
                        break
                    nxt = next(it, None)
                    if nxt is None:
                        exhausted = True
                        break
                    pending.append(ex.submit(process, nxt))
                if not pending:
                    break
                done = pending.pop(0)
                absorb(*done.result())
                log(f"[fuzz] {summary['ran_sim']} programs, {len(mismatches)} findings, {time.time() - t0:.0f} s")
        gpu = backends[0] if backends else (GpuBackend(log=log, driver=driver) if gpu_workers else None)
        if gpu is not None and gpu not in backends:
            backends.append(gpu)
        # ---- minimise one finding per class
        seen = set()
        summary["classes"] = {}
        for m in mismatches:
            c = classify(m)
            summary["classes"][c] = summary["classes"].get(c, 0) + 1
        raw_saved = set()
        for m in sorted(mismatches, key=lambda m: m.prog.instruction_count()):
            c = classify(m)
            if c in seen or len(summary["minimised"]) >= minimize_limit:
                continue
            if deadline and time.time() > deadline:
                if c not in raw_saved and len(raw_saved) < 8:     # no time left: keep the raw finding
                    raw_saved.add(c)
                    path = save_mismatch(m, out, f"raw_{m.prog.seed}_{m.kind}", device=summary["device"])
                    summary.setdefault("raw_saved", []).append({"seed": m.prog.seed, "class": c,
                                                                "file": str(path)})
                continue
            seen.add(c)
            stats: dict = {}
            budget = minimize_time if not deadline else max(5.0, min(minimize_time, deadline - time.time()))
            if m.kind == "schedule":
                small = minimize(m.prog, schedule_predicate(pool), time_limit=budget, stats=stats)
                _, sched = sim_check(small)
                mm = Mismatch(small, "schedule", run_sim(small, None), detail=sched or m.detail)
            elif gpu is not None:
                small, mm = minimise_gpu_finding(m, gpu, pool, budget, stats)
            elif m.kind == "sim_error":
                pred = sim_error_predicate(pool, (m.sim.error or "").split(":")[0])
                small = minimize(m.prog, pred, time_limit=budget, stats=stats)
                so = run_sim(small, None)
                mm = Mismatch(small, "sim_error", so, detail=so.error or "")
            else:
                continue
            name = f"fuzz_{m.prog.seed}_{m.kind}"
            small.name = name
            path = save_mismatch(mm, out, name, original_seed=m.prog.seed, device=summary["device"])
            summary["minimised"].append({"seed": m.prog.seed, "class": c, "file": str(path),
                                         "instructions": small.instruction_count(), "detail": mm.detail[:800],
                                         "minimise": stats})
            log(f"[fuzz] minimised seed {m.prog.seed} ({c}) to {small.instruction_count()} instructions "
                f"-> {path}\n{small.render()}\n{mm.detail}")
    finally:
        pool.close()
        for g in backends:
            g.close()
    summary["wall_s"] = round(time.time() - t0, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary
