"""The kernels of the timing corpus: what each launches (PTX fixture, entry, grid, block, shared memory, inputs) and
how its outputs are checked (numpy references, computed independently of both back ends).

Every kernel runs as one CTA (``grid (1, 1, 1)``).  Its inputs are deterministic: a numpy generator seeded by a
CRC-32 of the kernel's name.  :func:`build` returns the :class:`tcsim.launch.Launch` of an **instrumented copy**
of the kernel (:func:`calib.microbench.cases.instrument_clock`: every thread stores ``{%clock64 at entry,
%clock64 at exit}`` into one extra last parameter), the same instrumentation as the microbenchmarks' validation
kernels; the cycles of a run are ``max(exit) - min(entry)`` over the CTA's threads
(:func:`calib.microbench.cases.cta_cycles`).

Sources: ``cuda/*.cu`` (written for this corpus; PTX in ``ptx/``, made by ``python -m calib.timing_corpus build``)
and ``triton_src.py`` (Triton 3.9; PTX in ``triton/``).  The 11 validation kernels of calib/microbench
(``val_*``) are part of the corpus too (``source == "microbench"``): the timing model was tuned on them.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch

HERE = Path(__file__).resolve().parent
PTX_DIR, TRITON_DIR = HERE / "ptx", HERE / "triton"


@dataclass(frozen=True)
class Kernel:
    name: str
    source: str                       # "cuda/<file>.cu" | "triton" | "cuda-samples/<stem>" | "microbench"
    ptx: str                          # path relative to calib/timing_corpus ("" for microbench)
    entry: str
    block: tuple
    make: Callable                    # rng -> list of arguments (without the clock buffer)
    check: Callable                   # (args, outputs) -> (ok, message)
    smem: int = 0                     # dynamic shared memory, bytes
    note: str = ""
    #: the launch's outputs include a tensor written by a TMA store through a map whose tensor is no array
    #: argument: run each repetition in its own process (the GPU back end copies such tensors back only there)
    own_process: bool = False
    tags: tuple = field(default_factory=tuple)

    def seed(self) -> int:
        return zlib.crc32(self.name.encode())

    def plain_launch(self) -> Launch:
        """The kernel as it is (no clock instrumentation)."""
        if self.source == "microbench":
            raise ValueError("microbench validation kernels are built by calib.microbench.cases")
        args = self.make(np.random.default_rng(self.seed()))
        return Launch(ptx=HERE / self.ptx, kernel=self.entry, grid=(1, 1, 1), block=self.block,
                      dynamic_smem=self.smem, args=args, name=self.name)


# ------------------------------------------------------------------------------------------------ checks
def _close(got, want, rtol=1e-5, atol=1e-5, what="output"):
    got = np.asarray(got, dtype=np.float64).reshape(np.shape(want))
    want = np.asarray(want, dtype=np.float64)
    err = np.abs(got - want)
    bad = err > atol + rtol * np.abs(want)
    if bad.any() or not np.isfinite(got).all():
        i = np.argwhere(bad | ~np.isfinite(got))[0]
        return False, (f"{int(bad.sum())} of {want.size} {what} elements off (first {tuple(int(v) for v in i)}: "
                       f"got {got[tuple(i)]!r}, want {want[tuple(i)]!r})")
    return True, f"{what} within rtol {rtol:g} / atol {atol:g} of numpy (max err {float(err.max()):.3g})"


def _exact(got, want, what="output"):
    got = np.asarray(got).reshape(np.shape(want))
    want = np.asarray(want)
    if not np.array_equal(got.astype(want.dtype), want):
        i = np.argwhere(got.astype(want.dtype) != want)[0]
        return False, (f"{int((got.astype(want.dtype) != want).sum())} of {want.size} {what} elements differ (first "
                       f"{tuple(int(v) for v in i)}: got {got[tuple(i)]!r}, want {want[tuple(i)]!r})")
    return True, f"{what} equals numpy exactly ({want.size} elements)"


def _all(*results):
    for ok, msg in results:
        if not ok:
            return ok, msg
    return True, "; ".join(m for _, m in results)


def _f32(rng, n, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, n).astype(np.float32)


def _quarters(rng, n):
    """floats k/4 for small integers k: every sum of them is exact in f32."""
    return (rng.integers(-8, 9, n) / 4).astype(np.float32)


# ------------------------------------------------------------------------------------------------ the CUDA kernels
KERNELS: list = []


def _k(name, src, entry, block, make, check, smem=0, note="", own_process=False, tags=()):
    if isinstance(block, int):
        block = (block, 1, 1)
    ptx = f"ptx/{src}.sm_90a.ptx" if src != "triton" else f"triton/{name}.sm_90a.ptx"
    KERNELS.append(Kernel(name, f"cuda/{src}.cu" if src != "triton" else "triton", ptx, entry, block, make, check,
                          smem, note, own_process, tuple(tags)))


# reduce_scan.cu
def _reduce(name, entry, n=4096, block=256, kind="f32"):
    if kind == "f32":
        _k(name, "reduce_scan", entry, block,
           lambda r: [_quarters(r, n), np.zeros(1, np.float32)] + ([] if entry == "reduce_float4_unrolled" else [np.int32(n)]),
           lambda a, o: _exact(o[1], np.array([a[0].astype(np.float64).sum()], np.float32), "sum"),
           tags=("reduction",))
    else:
        f = np.max if kind == "max" else np.sum
        _k(name, "reduce_scan", entry, block,
           lambda r: [r.integers(-1000, 1000, n).astype(np.int32), np.zeros(1, np.int32), np.int32(n)],
           lambda a, o: _exact(o[1], np.array([f(a[0])], np.int32), kind), tags=("reduction",))


_reduce("reduce_smem_tree", "reduce_smem_tree")
_reduce("reduce_warp_shfl", "reduce_warp_shfl")
_reduce("reduce_float4_unrolled", "reduce_float4_unrolled")
_reduce("reduce_smem_atomic", "reduce_smem_atomic", kind="sum")
_reduce("reduce_max_redux", "reduce_max_int", kind="max")
_k("scan_hillis_steele", "reduce_scan", "scan_hillis_steele", 512,
   lambda r: [r.integers(-50, 50, 512).astype(np.int32), np.zeros(512, np.int32)],
   lambda a, o: _exact(o[1], np.cumsum(a[0]).astype(np.int32), "scan"), tags=("scan",))
_k("scan_warp_shfl", "reduce_scan", "scan_warp_shfl", 256,
   lambda r: [r.integers(-50, 50, 1024).astype(np.int32), np.zeros(1024, np.int32)],
   lambda a, o: _exact(o[1], np.cumsum(a[0]).astype(np.int32), "scan"), tags=("scan",))
_k("scan_blelloch", "reduce_scan", "scan_blelloch", 512,
   lambda r: [r.integers(-50, 50, 1024).astype(np.int32), np.zeros(1024, np.int32)],
   lambda a, o: _exact(o[1], np.concatenate([[0], np.cumsum(a[0])[:-1]]).astype(np.int32), "scan"), tags=("scan",))
_k("bitonic_sort_smem", "reduce_scan", "bitonic_sort_smem", 512,
   lambda r: [r.integers(-10000, 10000, 1024).astype(np.int32), np.zeros(1024, np.int32)],
   lambda a, o: _exact(o[1], np.sort(a[0]), "sorted"), tags=("sort",))


# atomics_fences.cu
def _hist_ref(a):
    return np.bincount(a[0] & 63, minlength=64).astype(np.uint32)


def _hist(name, entry, src="atomics_fences", n=4096, block=256):
    _k(name, src, entry, block,
       lambda r: [r.integers(0, 1 << 30, n).astype(np.uint32), np.zeros(64, np.uint32), np.int32(n)],
       lambda a, o: _exact(o[1], _hist_ref(a), "bins"), tags=("atomic",))


for _sem, _scope in (("relaxed", "gpu"), ("acquire", "gpu"), ("release", "gpu"), ("acq_rel", "gpu"),
                     ("relaxed", "cta"), ("acq_rel", "cta"), ("relaxed", "sys"), ("acq_rel", "sys")):
    _hist(f"hist_atom_{_sem}_{_scope}", f"hist_atom_{_sem}_{_scope}")
_hist("hist_red_global", "hist_red_global")
_hist("hist_smem_then_global", "hist_smem_then_global")
_hist("hist_smem_acq_rel", "hist_smem_acq_rel")
_k("atomic_cas_counter", "atomics_fences", "atomic_cas_counter", 128,
   lambda r: [np.zeros(1, np.uint32), np.zeros(128, np.uint32), np.int32(4)],
   lambda a, o: _all(_exact(o[0], np.array([512], np.uint32), "counter"),
                     _exact(o[1], np.ones(128, np.uint32), "last-seen flags")), tags=("atomic",))


def _lcg(v, k):
    v = v.astype(np.uint64)
    for _ in range(k):
        v = (v * 1664525 + 1013904223) & 0xFFFFFFFF
    return v.astype(np.uint32)


FENCE_ITERS = 32
for _f in ("sc_cta", "acq_rel_cta", "sc_gpu", "acq_rel_gpu", "sc_sys", "acq_rel_sys"):
    _k(f"fence_{_f}", "atomics_fences", f"fence_{_f}", 128,
       lambda r: [np.zeros(256, np.uint32), np.int32(FENCE_ITERS)],
       lambda a, o: _exact(o[0], np.concatenate([_lcg(np.arange(128), FENCE_ITERS - 1),
                                                 _lcg(np.arange(128), FENCE_ITERS)]), "stores"),
       note=f"{FENCE_ITERS} x (st.global; fence; integer LCG step) per thread, run-time trip count", tags=("fence",))
_k("flag_handoff_release_acquire", "atomics_fences", "flag_handoff_release_acquire", 64,
   lambda r: [np.zeros(1, np.uint32), np.zeros(1, np.uint32), np.zeros(32, np.uint32), np.int32(16)],
   lambda a, o: _exact(o[2], np.full(32, 7 * 136, np.uint32), "sums"), tags=("fence", "atomic"))


# memory_loops.cu
def _chase_ref(nxt, start, steps):
    i = start.astype(np.int64)
    for _ in range(steps):
        i = nxt[i].astype(np.int64)
    return i.astype(np.uint32)


_k("chase_runtime_trip", "memory_loops", "chase_runtime_trip", 128,
   lambda r: [r.permutation(4096).astype(np.uint32), np.zeros(128, np.uint32), np.int32(48)],
   lambda a, o: _exact(o[1], _chase_ref(a[0], np.arange(128), 48), "chain ends"),
   note="one dependent ld.global per step, run-time trip count", tags=("runtime_loop", "dependent_load"))
_k("chase_runtime_single_warp", "memory_loops", "chase_runtime_single_warp", 32,
   lambda r: [r.permutation(4096).astype(np.uint32), np.zeros(32, np.uint32), np.int32(32)],
   lambda a, o: _exact(o[1], _chase_ref(a[0], np.arange(32) * 33, 32), "chain ends"),
   note="ld.global.cg chase, run-time trip count", tags=("runtime_loop", "dependent_load"))


def _gather_ref(a):
    idx, val = a[0], a[1]
    out = np.zeros(256, np.float32)
    for i in range(0, len(idx), 256):
        out = out + val[idx[i:i + 256]]
    return out


_k("gather_indirect", "memory_loops", "gather_indirect", 256,
   lambda r: [r.integers(0, 4096, 4096).astype(np.int32), _quarters(r, 4096), np.zeros(256, np.float32),
              np.int32(4096)],
   lambda a, o: _exact(o[2], _gather_ref(a), "sums"), tags=("runtime_loop", "dependent_load"))


def _fma_loop_ref(a):
    x = a[0].astype(np.float64)
    c = np.zeros_like(x)
    for _ in range(int(a[2])):
        c = x * 1.0001 + c
        x = x * 0.999 + 0.001
    return c


_k("loop_runtime_fma", "memory_loops", "loop_runtime_fma", 128,
   lambda r: [_f32(r, 128), np.zeros(128, np.float32), np.int32(64)],
   lambda a, o: _close(o[1], _fma_loop_ref(a), 1e-4, 1e-4), tags=("runtime_loop",))
_k("loop_const_trip_loads", "memory_loops", "loop_const_trip_loads", 128,
   lambda r: [_quarters(r, 2048), np.zeros(128, np.float32)],
   lambda a, o: _exact(o[1], a[0].reshape(16, 128).sum(axis=0), "sums"), tags=("loads",))
_k("loop_runtime_trip_loads", "memory_loops", "loop_runtime_trip_loads", 128,
   lambda r: [_quarters(r, 2048), np.zeros(128, np.float32), np.int32(16)],
   lambda a, o: _exact(o[1], a[0].reshape(16, 128).sum(axis=0), "sums"), tags=("runtime_loop", "loads"))


def _csr(r):
    rows = 256
    nnz = r.integers(3, 13, rows)
    rowptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int32)
    col = r.integers(0, 512, int(rowptr[-1])).astype(np.int32)
    return [rowptr, col, _quarters(r, int(rowptr[-1])), _quarters(r, 512), np.zeros(rows, np.float32),
            np.int32(rows)]


def _csr_ref(a):
    rowptr, col, val, x = a[:4]
    return np.array([np.sum(val[rowptr[i]:rowptr[i + 1]] * x[col[rowptr[i]:rowptr[i + 1]]])
                     for i in range(len(rowptr) - 1)], np.float32)


_k("spmv_csr", "memory_loops", "spmv_csr", 128, _csr, lambda a, o: _exact(o[4], _csr_ref(a), "y"),
   tags=("runtime_loop", "dependent_load"))
for _t in ("naive", "smem_nopad", "smem_pad", "smem_swizzle"):
    _k(f"transpose_{_t}", "memory_loops", f"transpose_{_t}", (32, 8),
       lambda r: [_f32(r, 64 * 64), np.zeros(64 * 64, np.float32), np.int32(64)],
       lambda a, o: _exact(o[1], a[0].reshape(64, 64).T.reshape(-1), "transpose"), tags=("transpose", "smem"))


def _stencil1d_ref(x):
    n = len(x)
    p = np.concatenate([np.zeros(3), x.astype(np.float64), np.zeros(3)])
    y = 0.5 * p[3:3 + n]
    for k in (1, 2, 3):
        y = y + (0.125 / k) * (p[3 - k:3 - k + n] + p[3 + k:3 + k + n])
    return y


_k("stencil1d_smem", "memory_loops", "stencil1d_smem", 256,
   lambda r: [_f32(r, 2048), np.zeros(2048, np.float32), np.int32(2048)],
   lambda a, o: _close(o[1], _stencil1d_ref(a[0]), 1e-5, 1e-6), tags=("stencil", "smem"))


def _st2d_ref(x, n):
    x = x.reshape(n, n).astype(np.float64)
    y = np.zeros((n, n))
    y[1:-1, 1:-1] = 0.5 * x[1:-1, 1:-1] + 0.125 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    return y


_k("stencil2d_5pt_global", "memory_loops", "stencil2d_5pt_global", (32, 8),
   lambda r: [_f32(r, 64 * 64), np.zeros(64 * 64, np.float32), np.int32(64)],
   lambda a, o: _close(o[1], _st2d_ref(a[0], 64).reshape(-1), 1e-5, 1e-6), tags=("stencil",))
_k("stencil2d_smem_tile", "memory_loops", "stencil2d_smem_tile", (32, 8),
   lambda r: [_f32(r, 34 * 34), np.zeros(32 * 32, np.float32)],
   lambda a, o: _close(o[1], _st2d_ref(a[0], 34)[1:-1, 1:-1].reshape(-1), 1e-5, 1e-6), tags=("stencil", "smem"))
_k("saxpy_gridstride", "memory_loops", "saxpy_gridstride", 256,
   lambda r: [_f32(r, 8192), _f32(r, 8192), np.float32(1.5), np.int32(8192)],
   lambda a, o: _close(o[1], 1.5 * a[0].astype(np.float64) + a[1], 1e-6, 1e-6), tags=("streaming",))
_k("copy_float4", "memory_loops", "copy_float4", 256,
   lambda r: [_f32(r, 8192), np.zeros(8192, np.float32), np.int32(2048)],
   lambda a, o: _exact(o[1], a[0], "copy"), tags=("streaming",))
_k("copy_ldg_nc", "memory_loops", "copy_ldg_nc", 256,
   lambda r: [_f32(r, 4096), np.zeros(4096, np.float32), np.int32(4096)],
   lambda a, o: _exact(o[1], a[0] * np.float32(2), "copy"), tags=("streaming",))


def _strided_ref(a):
    x, stride, reps = a[0], int(a[2]), int(a[3])
    t = np.arange(128)
    acc = np.zeros(128, np.float32)
    for r in range(reps):
        acc = acc + x[(t * stride + r * 32 * stride) & 65535]
    return acc


_k("strided_load_uncoalesced", "memory_loops", "strided_load_uncoalesced", 128,
   lambda r: [_quarters(r, 65536), np.zeros(128, np.float32), np.int32(33), np.int32(16)],
   lambda a, o: _exact(o[1], _strided_ref(a), "sums"), tags=("loads", "runtime_loop"))


def _local_ref(a):
    sel = a[0].astype(np.int64)
    t = np.arange(128)
    return sum(((sel + k * 7) & 31) * (t + 1) for k in range(16)).astype(np.int32)


_k("local_array_dynamic_index", "memory_loops", "local_array_dynamic_index", 128,
   lambda r: [r.integers(0, 32, 128).astype(np.int32), np.zeros(128, np.int32)],
   lambda a, o: _exact(o[1], _local_ref(a), "sums"), tags=("local",))


def _bank_ref(a):
    x, stride, reps = a[0].astype(np.int64), int(a[2]), int(a[3])
    t = np.arange(128)
    lane, w = t & 31, t >> 5
    return sum(x[(lane * stride + r + w) & 4095] for r in range(reps)).astype(np.int32)


for _s in (1, 2, 8, 32):
    _k(f"smem_bank_stride{_s}", "memory_loops", "smem_bank_stride", 128,
       (lambda s: lambda r: [r.integers(-100, 100, 4096).astype(np.int32), np.zeros(128, np.int32), np.int32(s),
                             np.int32(32)])(_s),
       lambda a, o: _exact(o[1], _bank_ref(a), "sums"), note=f"ld.shared with a {_s}-word stride between lanes",
       tags=("smem", "bank_conflict", "runtime_loop"))


# compute_norm.cu
def _softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_k("softmax_warp_per_row", "compute_norm", "softmax_warp_per_row", 256,
   lambda r: [_f32(r, 8 * 256, -4, 4), np.zeros(8 * 256, np.float32), np.int32(256)],
   lambda a, o: _close(o[1], _softmax(a[0].reshape(8, 256)).reshape(-1), 1e-3, 1e-6), tags=("softmax",))
_k("softmax_block_row", "compute_norm", "softmax_block_row", 256,
   lambda r: [_f32(r, 8 * 512, -4, 4), np.zeros(8 * 512, np.float32), np.int32(8), np.int32(512)],
   lambda a, o: _close(o[1], _softmax(a[0].reshape(8, 512)).reshape(-1), 1e-4, 1e-7), tags=("softmax",))


def _ln(x, eps=1e-5):
    x = x.astype(np.float64)
    m = x.mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)


_k("layernorm_warp_per_row", "compute_norm", "layernorm_warp_per_row", 256,
   lambda r: [_f32(r, 8 * 256, -2, 2), _f32(r, 256), _f32(r, 256), np.zeros(8 * 256, np.float32), np.int32(256)],
   lambda a, o: _close(o[3], (_ln(a[0].reshape(8, 256)) * a[1] + a[2]).reshape(-1), 1e-3, 1e-4),
   tags=("layernorm",))
_k("layernorm_block_twopass", "compute_norm", "layernorm_block_twopass", 256,
   lambda r: [_f32(r, 8 * 1024, -2, 2), np.zeros(8 * 1024, np.float32), np.int32(8), np.int32(1024)],
   lambda a, o: _close(o[1], _ln(a[0].reshape(8, 1024)).reshape(-1), 1e-3, 1e-4), tags=("layernorm",))


def _rms(x, eps=1e-6):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)


_k("rmsnorm_half2", "compute_norm", "rmsnorm_half2", 256,
   lambda r: [_f32(r, 8 * 512, -2, 2).astype(np.float16), np.zeros(8 * 512, np.float16), np.int32(256)],
   lambda a, o: _close(np.asarray(o[1]).view(np.float16), _rms(a[0].reshape(8, 512)).reshape(-1), 4e-3, 1e-3),
   tags=("layernorm", "f16"))
_k("gemv_warp_per_row", "compute_norm", "gemv_warp_per_row", 256,
   lambda r: [_f32(r, 64 * 256), _f32(r, 256), np.zeros(64, np.float32), np.int32(64), np.int32(256)],
   lambda a, o: _close(o[2], a[0].reshape(64, 256).astype(np.float64) @ a[1], 1e-4, 1e-4), tags=("gemv",))


def _sfu_ref(a):
    v = a[0].astype(np.float64)
    acc = np.zeros_like(v)
    for _ in range(int(a[2])):
        acc += np.sin(v) * np.exp(-v) + 1 / np.sqrt(v + 1)
        v = (v.astype(np.float32) + np.float32(0.01)).astype(np.float64)
    return acc


_k("sfu_transcendentals", "compute_norm", "sfu_transcendentals", 128,
   lambda r: [_f32(r, 128, 0, 2), np.zeros(128, np.float32), np.int32(32)],
   lambda a, o: _close(o[1], _sfu_ref(a), 1e-3, 1e-2), tags=("sfu", "runtime_loop"))
_k("precise_math", "compute_norm", "precise_math", 256,
   lambda r: [_f32(r, 256, 0, 2), np.zeros(256, np.float32)],
   lambda a, o: _close(o[1], (lambda v: np.exp(v) + np.log(v + 2) + np.sin(v) + np.sqrt(v + 1) / (v + 3))(
       a[0].astype(np.float64)), 1e-5, 1e-5), tags=("sfu",))


def _hash_ref(x, rounds):
    h = x.astype(np.uint64)
    for _ in range(rounds):
        h ^= h >> 16
        h = (h * 0x7FEB352D) & 0xFFFFFFFF
        h ^= h >> 15
        h = (h * 0x846CA68B) & 0xFFFFFFFF
        h ^= h >> 16
    return h.astype(np.uint32)


_k("int_hash_mix", "compute_norm", "int_hash_mix", 256,
   lambda r: [r.integers(0, 1 << 32, 256, dtype=np.uint64).astype(np.uint32), np.zeros(256, np.uint32), np.int32(32)],
   lambda a, o: _exact(o[1], _hash_ref(a[0], 32), "hashes"), tags=("integer", "runtime_loop"))
_k("fp64_dot", "compute_norm", "fp64_dot", 256,
   lambda r: [r.uniform(-1, 1, 4096), r.uniform(-1, 1, 4096), np.zeros(1, np.float64), np.int32(4096)],
   lambda a, o: _close(o[2], [np.dot(a[0], a[1])], 1e-12, 1e-12), tags=("fp64",))
_k("int_divmod", "compute_norm", "int_divmod", 256,
   lambda r: [r.integers(0, 1 << 30, 256).astype(np.int32), np.zeros(256, np.int32), np.int32(7)],
   lambda a, o: _exact(o[1], (a[0] // 7 + a[0] % 7 * 3 + (a[0] // 8) * 7).astype(np.int32), "results"),
   tags=("integer",))
_k("conv1d_direct", "compute_norm", "conv1d_direct", 256,
   lambda r: [_f32(r, 2048 + 15), _f32(r, 16), np.zeros(2048, np.float32), np.int32(2048), np.int32(16)],
   lambda a, o: _close(o[2], np.correlate(a[0].astype(np.float64), a[1].astype(np.float64), "valid"), 1e-5, 1e-5),
   tags=("stencil", "runtime_loop"))


# gemm.cu
def _mm(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


_k("sgemm_naive", "gemm", "sgemm_naive", 256,
   lambda r: [_f32(r, 32 * 32), _f32(r, 32 * 32), np.zeros(32 * 32, np.float32), np.int32(32)],
   lambda a, o: _close(o[2], _mm(a[0].reshape(32, 32), a[1].reshape(32, 32)).reshape(-1), 1e-4, 1e-4),
   tags=("gemm", "simt"))
_k("sgemm_smem_tiled", "gemm", "sgemm_smem_tiled", (16, 16),
   lambda r: [_f32(r, 64 * 64), _f32(r, 64 * 64), np.zeros(64 * 64, np.float32), np.int32(64)],
   lambda a, o: _close(o[2], _mm(a[0].reshape(64, 64), a[1].reshape(64, 64)).reshape(-1), 1e-4, 1e-4),
   tags=("gemm", "simt", "smem"))
_k("sgemm_regblock_4x4", "gemm", "sgemm_regblock_4x4", 256,
   lambda r: [_f32(r, 64 * 64), _f32(r, 64 * 64), np.zeros(64 * 64, np.float32), np.int32(64)],
   lambda a, o: _close(o[2], _mm(a[0].reshape(64, 64), a[1].reshape(64, 64)).reshape(-1), 1e-4, 1e-4),
   tags=("gemm", "simt", "smem"))


def _hgemm_args(K):
    return lambda r: [_f32(r, 64 * K).astype(np.float16), _f32(r, 64 * K).astype(np.float16),
                      np.zeros(64 * 64, np.float32), np.int32(K)]


def _hgemm_check(a, o):
    K = int(a[3])
    return _close(o[2], _mm(a[0].reshape(64, K), a[1].reshape(64, K).T).reshape(-1), 1e-3, 1e-3)


_k("hgemm_mma_sync_ldmatrix", "gemm", "hgemm_mma_sync_ldmatrix", 128, _hgemm_args(128), _hgemm_check,
   tags=("gemm", "mma_sync", "ldmatrix"))
_k("hgemm_mma_sync_cpasync", "gemm", "hgemm_mma_sync_cpasync", 128, _hgemm_args(256), _hgemm_check,
   tags=("gemm", "mma_sync", "ldmatrix", "cp_async"))
_k("hgemm_wgmma_smem", "gemm", "hgemm_wgmma_smem", 128, _hgemm_args(64), _hgemm_check, tags=("gemm", "wgmma"))


# pipelines.cu
def _tma_ring_args(r, tiles=8):
    x = _quarters(r, tiles * 32 * 64).reshape(tiles * 32, 64)
    return [TensorMap.tiled(x, box=(32, 64)), np.zeros(64, np.float32), np.int32(tiles)]


for _s in (2, 4):
    _k(f"tma_ring_colsum_{_s}stage", "pipelines", f"tma_ring_colsum_{_s}stage", 160, _tma_ring_args,
       lambda a, o: _exact(o[1], a[0].array.astype(np.float64).sum(axis=0).astype(np.float32), "column sums"),
       smem=_s * 8192, note=f"TMA producer lane + 4 consumer warps, {_s}-stage mbarrier ring of 8 KB tiles",
       tags=("tma", "mbarrier", "warp_specialized"))
_k("bulk_double_buffer_axpb", "pipelines", "bulk_double_buffer_axpb", 128,
   lambda r: [_f32(r, 8192), np.zeros(8192, np.float32), np.int32(8192), np.int32(4096)],
   lambda a, o: _exact(o[1], a[0] * np.float32(2) + np.float32(1), "y"), smem=8192,
   tags=("bulk_copy", "mbarrier"))
_k("ws_named_barrier_square", "pipelines", "ws_named_barrier_square", 160,
   lambda r: [_f32(r, 16 * 128), np.zeros(16 * 128, np.float32), np.int32(16)],
   lambda a, o: _exact(o[1], a[0] * a[0], "y"), tags=("warp_specialized", "named_barrier"))
_k("ws_mbarrier_plain_loads", "pipelines", "ws_mbarrier_plain_loads", 96,
   lambda r: [_quarters(r, 16 * 256), np.zeros(64, np.float32), np.int32(16)],
   lambda a, o: _exact(o[1], a[0].reshape(16, 4, 64).astype(np.float64).sum(axis=(0, 1)).astype(np.float32), "y"),
   tags=("warp_specialized", "mbarrier"))


def _tma_store_args(r, tiles=4):
    x = _f32(r, tiles * 32 * 64).reshape(tiles * 32, 64)
    y = np.zeros_like(x)
    return [TensorMap.tiled(x, box=(32, 64)), TensorMap.tiled(y, box=(32, 64)), y, np.int32(tiles)]


_k("tma_load_scale_store", "pipelines", "tma_load_scale_store", 128, _tma_store_args,
   lambda a, o: _close(np.asarray(o[2]).reshape(-1), (a[0].array.astype(np.float64) * 3 - 1).reshape(-1), 1e-6, 1e-7),
   smem=8192, tags=("tma", "tma_store", "mbarrier"))


# ------------------------------------------------------------------------------------------------ Triton
_TRI = json.loads((TRITON_DIR / "meta.json").read_text())["kernels"] if (TRITON_DIR / "meta.json").exists() else {}


def _t(name, entry, make, check, note="", own_process=False, tags=()):
    md = _TRI.get(name, {"shared": 0, "num_warps": 4})
    _k(name, "triton", entry, 32 * md["num_warps"], lambda r: make(r) + [0, 0], check, smem=md["shared"],
       note=note, own_process=own_process, tags=("triton",) + tuple(tags))


_t("tri_vector_add", "tri_vector_add", lambda r: [_f32(r, 4096), _f32(r, 4096), np.zeros(4096, np.float32),
                                                  np.int32(4096)],
   lambda a, o: _exact(o[2], a[0] + a[1], "sum"), tags=("streaming",))
_t("tri_softmax_rows", "tri_softmax_rows", lambda r: [_f32(r, 8 * 512, -4, 4), np.zeros(8 * 512, np.float32),
                                                      np.int32(8)],
   lambda a, o: _close(o[1], _softmax(a[0].reshape(8, 512)).reshape(-1), 1e-4, 1e-7), tags=("softmax",))
_t("tri_softmax_2d", "tri_softmax_2d", lambda r: [_f32(r, 16 * 128, -4, 4), np.zeros(16 * 128, np.float32)],
   lambda a, o: _close(o[1], _softmax(a[0].reshape(16, 128)).reshape(-1), 1e-4, 1e-7), tags=("softmax",))
_t("tri_layernorm", "tri_layernorm", lambda r: [_f32(r, 8 * 256, -2, 2), _f32(r, 256), _f32(r, 256),
                                                np.zeros(8 * 256, np.float32), np.int32(8)],
   lambda a, o: _close(o[3], (_ln(a[0].reshape(8, 256)) * a[1] + a[2]).reshape(-1), 1e-3, 1e-4),
   tags=("layernorm",))
_t("tri_rmsnorm_f16", "tri_rmsnorm_f16", lambda r: [_f32(r, 8 * 512, -2, 2).astype(np.float16),
                                                    np.zeros(8 * 512, np.float16), np.int32(8)],
   lambda a, o: _close(np.asarray(o[1]).view(np.float16), _rms(a[0].reshape(8, 512)).reshape(-1), 4e-3, 1e-3),
   tags=("layernorm", "f16"))
_t("tri_sum_reduce", "tri_sum_reduce", lambda r: [_quarters(r, 8192), np.zeros(1, np.float32), np.int32(8192)],
   lambda a, o: _exact(o[1], np.array([a[0].astype(np.float64).sum()], np.float32), "sum"), tags=("reduction",))
_t("tri_argmax", "tri_argmax", lambda r: [r.permutation(2048).astype(np.float32), np.zeros(1, np.int32)],
   lambda a, o: _exact(o[1], np.array([np.argmax(a[0])], np.int32), "argmax"), tags=("reduction",))
_t("tri_cumsum", "tri_cumsum", lambda r: [r.integers(-50, 50, 1024).astype(np.int32), np.zeros(1024, np.int32)],
   lambda a, o: _exact(o[1], np.cumsum(a[0]).astype(np.int32), "scan"), tags=("scan",))
_t("tri_sort", "tri_sort", lambda r: [r.integers(-10000, 10000, 256).astype(np.int32), np.zeros(256, np.int32)],
   lambda a, o: _exact(o[1], np.sort(a[0]), "sorted"), tags=("sort",))
_t("tri_transpose", "tri_transpose", lambda r: [_f32(r, 64 * 64), np.zeros(64 * 64, np.float32)],
   lambda a, o: _exact(o[1], a[0].reshape(64, 64).T.reshape(-1), "transpose"), tags=("transpose",))


def _gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


_t("tri_gelu_tanh", "tri_gelu_tanh", lambda r: [_f32(r, 4096, -3, 3), np.zeros(4096, np.float32), np.int32(4096)],
   lambda a, o: _close(o[1], _gelu(a[0]), 1e-4, 1e-5), tags=("elementwise", "sfu"))
_t("tri_swiglu_f16", "tri_swiglu_f16",
   lambda r: [_f32(r, 4096, -3, 3).astype(np.float16), _f32(r, 4096, -3, 3).astype(np.float16),
              np.zeros(4096, np.float16), np.int32(4096)],
   lambda a, o: _close(np.asarray(o[2]).view(np.float16),
                       (lambda x, y: x / (1 + np.exp(-x)) * y)(a[0].astype(np.float64), a[1].astype(np.float64)),
                       4e-3, 2e-3), tags=("elementwise", "f16"))


def _tri_hash_ref(x, rounds=8):
    h = x.astype(np.uint64)
    for _ in range(rounds):
        h ^= h >> 16
        h = (h * 0x7FEB352D) & 0xFFFFFFFF
        h ^= h >> 15
    return h.astype(np.uint32)


_t("tri_int_hash", "tri_int_hash",
   lambda r: [r.integers(0, 1 << 32, 2048, dtype=np.uint64).astype(np.uint32), np.zeros(2048, np.uint32),
              np.int32(2048)],
   lambda a, o: _exact(o[1], _tri_hash_ref(a[0]), "hashes"), tags=("integer",))
_t("tri_atomic_max", "tri_atomic_max",
   lambda r: [r.integers(-1 << 20, 1 << 20, 2048).astype(np.int32), np.full(8, -(1 << 30), np.int32),
              np.int32(2048)],
   lambda a, o: _exact(o[1], a[0].reshape(-1, 8).max(axis=0), "maxima"), tags=("atomic",))
_t("tri_gather", "tri_gather", lambda r: [r.integers(0, 4096, 4096).astype(np.int32), _f32(r, 4096),
                                          np.zeros(4096, np.float32), np.int32(4096)],
   lambda a, o: _exact(o[2], a[1][a[0]], "gathered"), tags=("dependent_load",))
for _sem, _scope in (("relaxed", "gpu"), ("relaxed", "cta"), ("relaxed", "sys"), ("acquire", "gpu"),
                     ("release", "gpu"), ("acq_rel", "gpu"), ("acq_rel", "cta"), ("acq_rel", "sys")):
    _t(f"tri_hist_{_sem}_{_scope}", "tri_histogram_atomic",
       lambda r: [r.integers(0, 1 << 30, 2048).astype(np.uint32), np.zeros(64, np.uint32), np.int32(2048)],
       lambda a, o: _exact(o[1], _hist_ref(a), "bins"), note=f"tl.atomic_add sem={_sem} scope={_scope}",
       tags=("atomic",))


def _tri_mm_args(M, N, K, dt=np.float16):
    return lambda r: [_f32(r, M * K).astype(dt), _f32(r, K * N).astype(dt), np.zeros(M * N, np.float32), np.int32(K)]


def _tri_mm_check(M, N, rtol=1e-3):
    def check(a, o):
        K = int(a[3])
        return _close(o[2], _mm(a[0].reshape(M, K), a[1].reshape(K, N)).reshape(-1), rtol, rtol)
    return check


_t("tri_matmul_64x64", "tri_matmul", _tri_mm_args(64, 64, 128), _tri_mm_check(64, 64), tags=("gemm", "wgmma"))
_t("tri_matmul_128x64", "tri_matmul", _tri_mm_args(128, 64, 256), _tri_mm_check(128, 64), tags=("gemm", "wgmma"))
_t("tri_matmul_f32_fma", "tri_matmul_f32_fma", _tri_mm_args(32, 32, 64, np.float32), _tri_mm_check(32, 32, 1e-4),
   tags=("gemm", "simt"))


def _attn_args(r, L=256, D=64):
    return [_f32(r, 64 * D).astype(np.float16), _f32(r, L * D).astype(np.float16), _f32(r, L * D).astype(np.float16),
            np.zeros(64 * D, np.float16), np.int32(L)]


def _attn_ref(a, D=64):
    q, k, v = (x.astype(np.float64).reshape(-1, D) for x in a[:3])
    return (_softmax(q @ k.T * 0.125) @ v).reshape(-1)


_t("tri_attention_fwd", "tri_attention_fwd", _attn_args,
   lambda a, o: _close(np.asarray(o[3]).view(np.float16), _attn_ref(a), 2e-2, 2e-3), tags=("attention", "wgmma"))


def _ce_args(r):
    return [_f32(r, 16 * 256, -4, 4), r.integers(0, 256, 16).astype(np.int32), np.zeros(16, np.float32), np.int32(16)]


def _ce_ref(a):
    x = a[0].reshape(16, 256).astype(np.float64)
    m = x.max(axis=1)
    return m + np.log(np.exp(x - m[:, None]).sum(axis=1)) - x[np.arange(16), a[1]]


_t("tri_cross_entropy", "tri_cross_entropy", _ce_args, lambda a, o: _close(o[2], _ce_ref(a), 1e-4, 1e-4),
   tags=("softmax",))


def _tma_mm_args(r, K=256):
    a = _f32(r, 64 * K).astype(np.float16).reshape(64, K)
    bt = _f32(r, 64 * K).astype(np.float16).reshape(64, K)
    c = np.zeros((64, 64), np.float16)

    def tm(x):
        return TensorMap.tiled(x, box=(64, 64), swizzle="128B", l2_promotion="128B", oob_fill="zero",
                               dtype="FLOAT16")
    return [tm(a), 64, K, K, 1, tm(bt), 64, K, K, 1, tm(c), 64, 64, 64, 1, np.int32(K)]


def _tma_out(arg):
    """What a TMA store wrote through tensor map ``arg``: the simulator's allocation, else (GPU) the array the
    launcher copied the tensor back into."""
    alloc = getattr(arg, "sim_allocation", None)
    if alloc is not None:
        return np.asarray(alloc.data).view(arg.array.dtype).reshape(arg.array.shape)
    return arg.array


_t("tri_matmul_tma", "tri_matmul_tma", _tma_mm_args,
   lambda a, o: _close(_tma_out(a[10]).astype(np.float64),
                       _mm(a[0].array, a[5].array.T), 2e-3, 2e-2),
   own_process=True, tags=("gemm", "wgmma", "tma", "tma_store"))


# ------------------------------------------------------------------------------------------------ held out
# NVIDIA cuda-samples (heldout/NOTICE; calib/timing_corpus/build.py build_heldout), launched as one CTA the way the
# samples launch them; never fitted on nor used to choose a mechanism (split "heldout")
def _h(name, stem, entry, block, make, check, smem=0, note=""):
    if isinstance(block, int):
        block = (block, 1, 1)
    KERNELS.append(Kernel(name, f"cuda-samples/{stem}", f"heldout/{stem}.sm_90a.ptx", entry, block, make, check,
                          smem, note, False, ("heldout",)))


for _e, _m in (("transposeNaive", "_Z14transposeNaivePfS_ii"), ("transposeCoalesced", "_Z18transposeCoalescedPfS_ii"),
               ("transposeNoBankConflicts", "_Z24transposeNoBankConflictsPfS_ii")):
    _h(f"cs_{_e}", "transpose", _m, (32, 16),
       lambda r: [np.zeros(32 * 32, np.float32), _f32(r, 32 * 32), np.int32(32), np.int32(32)],
       lambda a, o: _exact(o[0], a[1].reshape(32, 32).T.reshape(-1), "transpose"), note="one 32x32 tile")
_h("cs_scalarProdGPU", "scalarProd", "_Z13scalarProdGPUPfS_S_ii", 256,
   lambda r: [np.zeros(4, np.float32), _f32(r, 4 * 4096), _f32(r, 4 * 4096), np.int32(4), np.int32(4096)],
   lambda a, o: _close(o[0], (a[1].astype(np.float64) * a[2]).reshape(4, 4096).sum(axis=1), 1e-4, 1e-4),
   note="4 dot products of 4096 floats")


def _bs_ref(a):
    from math import erf
    s, x, t = (np.asarray(v, np.float64) for v in a[2:5])
    r, v = float(a[5]), float(a[6])
    sq = np.sqrt(t)
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * sq)
    d2 = d1 - v * sq
    cnd = np.vectorize(lambda d: 0.5 * (1 + erf(d / np.sqrt(2))))
    e = np.exp(-r * t)
    return s * cnd(d1) - x * e * cnd(d2), x * e * (1 - cnd(d2)) - s * (1 - cnd(d1))


_h("cs_BlackScholesGPU", "BlackScholes", "_Z15BlackScholesGPUP6float2S0_S0_S0_S0_ffi", 128,
   lambda r: [np.zeros(256, np.float32), np.zeros(256, np.float32), r.uniform(5, 30, 256).astype(np.float32),
              r.uniform(1, 100, 256).astype(np.float32), r.uniform(0.25, 10, 256).astype(np.float32),
              np.float32(0.02), np.float32(0.30), np.int32(256)],
   lambda a, o: _all(_close(o[0], _bs_ref(a)[0], 1e-4, 2e-3, "call"), _close(o[1], _bs_ref(a)[1], 1e-4, 2e-3, "put")),
   note="256 options (2 per thread)")


def _bitonic_check(a, o):
    keys, vals = np.asarray(o[0]), np.asarray(o[1])
    return _all(_exact(keys, np.sort(a[2]), "keys"), _exact(a[2][vals.astype(np.int64)], keys, "values"))


_h("cs_bitonicSortShared", "bitonicSort", "_Z17bitonicSortSharedPjS_S_S_jj", 512,
   lambda r: [np.zeros(1024, np.uint32), np.zeros(1024, np.uint32),
              r.permutation(1 << 20)[:1024].astype(np.uint32), np.arange(1024, dtype=np.uint32), np.uint32(1024),
              np.uint32(1)], _bitonic_check, note="1024 keys with values, ascending")
_h("cs_MatrixMulCUDA16", "matrixMul", "_Z13MatrixMulCUDAILi16EEvPfS0_S0_ii", (16, 16),
   lambda r: [np.zeros(16 * 16, np.float32), _f32(r, 16 * 64), _f32(r, 64 * 16), np.int32(64), np.int32(16)],
   lambda a, o: _close(o[0], _mm(a[1].reshape(16, 64), a[2].reshape(64, 16)).reshape(-1), 1e-4, 1e-4),
   note="one 16x16 tile of C, K = 64")



# The second held-out set (issue 21, round 3): more NVIDIA cuda-samples kernels, compiled the same way
# (build.HELDOUT), chosen and wired before they were first measured, and never fitted on nor used to choose a
# mechanism.  Reported on their own (HELDOUT2) as well as with the held-out set.
HELDOUT2: list = []


def _h2(name, stem, entry, block, make, check, smem=0, note=""):
    _h(name, stem, entry, block, make, check, smem, note)
    HELDOUT2.append(name)


_h2("cs_vectorAdd", "vectorAdd", "_Z9vectorAddPKfS0_Pfi", 256,
    lambda r: [_f32(r, 256), _f32(r, 256), np.zeros(256, np.float32), np.int32(256)],
    lambda a, o: _exact(o[2], a[0] + a[1], "sum"), note="256 elements, one per thread")


def _atomics_ref(n):
    tid = np.arange(n, dtype=np.int64)
    inc = dec = 0
    for _ in range(n):
        inc = 0 if inc >= 17 else inc + 1
        dec = 137 if (dec == 0 or dec > 137) else dec - 1
    orv = 0
    for t in range(min(n, 32)):
        orv |= 1 << t
    andv, xorv = 0xFF, 0xFF
    for t in range(n):
        andv &= (2 * t + 7) & 0xFFFFFFFF
        xorv ^= t
    # atomicOr(1 << tid): shl.b32 by 32 or more gives 0, so threads 32.. add nothing
    return {0: 10 * n, 1: -10 * n, 3: int(tid.max()), 4: 0, 5: inc, 6: dec, 8: andv,
            9: np.uint32(orv).view(np.int32).item(), 10: xorv}


def _atomics_check(a, o, n=256):
    got = np.asarray(o[0]).astype(np.int64)
    ref = _atomics_ref(n)
    for i, want in ref.items():
        if got[i] != want:
            return False, f"g_odata[{i}] = {got[i]}, want {want}"
    if not 0 <= got[2] < n or not 0 <= got[7] < n:
        return False, f"exch / cas results {got[2]}, {got[7]} outside [0, {n})"
    return True, "11 atomic results as numpy (exch, cas: a thread index)"


_h2("cs_atomicIntrinsics", "simpleAtomicIntrinsics", "_Z10testKernelPi", 256,
    lambda r: [np.array([0] * 8 + [0xFF, 0, 0xFF], np.int32)], _atomics_check,
    note="11 atomics of every kind on 11 words by 256 threads")
_h2("cs_mergeSortShared", "mergeSort", "_Z21mergeSortSharedKernelILj1EEvPjS0_S0_S0_j", 512,
    lambda r: [np.zeros(1024, np.uint32), np.zeros(1024, np.uint32),
               r.permutation(1 << 20)[:1024].astype(np.uint32), np.arange(1024, dtype=np.uint32), np.uint32(1024)],
    _bitonic_check, note="1024 keys with values, ascending")
for _b, _n in ((2, 256), (6, 4096)):
    _e = f"_Z7reduce{_b}IiEvPT_S1_j" if _b < 4 else f"_Z7reduce{_b}IiLj256ELb1EEvPT_S1_j"
    _h2(f"cs_reduce{_b}", "reduction", _e, 256,
        lambda r, n=_n: [r.integers(-1000, 1000, n).astype(np.int32), np.zeros(1, np.int32), np.uint32(n)],
        lambda a, o: _exact(o[1], np.array([a[0].sum()], np.int32), "sum"), smem=256 * 4,
        note=f"{_n} ints" + (", one per thread" if _b == 2 else ", grid-stride, 2 per iteration"))


def _bytes_of(a):
    return np.asarray(a).view(np.uint8)


_h2("cs_histogram64", "histogram64", "_Z17histogram64KernelPjP5uint4j", 64,
    lambda r: [np.zeros(64, np.uint32), r.integers(0, 1 << 32, 4 * 1024, dtype=np.uint64).astype(np.uint32),
               np.uint32(1024)],
    lambda a, o: _exact(o[0], np.bincount(_bytes_of(a[1]) >> 2, minlength=64).astype(np.uint32), "histogram"),
    note="16 KiB of bytes, 64 bins")
_h2("cs_histogram256", "histogram256", "_Z18histogram256KernelPjS_j", 192,
    lambda r: [np.zeros(256, np.uint32), r.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32),
               np.uint32(4096)],
    lambda a, o: _exact(o[0], np.bincount(_bytes_of(a[1]), minlength=256).astype(np.uint32), "histogram"),
    note="16 KiB of bytes, 256 bins, per-warp tagged SMEM counters")
_h2("cs_scanExclusiveShared", "scan", "_Z19scanExclusiveSharedP5uint4S0_j", 256,
    lambda r: [np.zeros(1024, np.uint32), r.integers(0, 1000, 1024).astype(np.uint32), np.uint32(1024)],
    lambda a, o: _exact(o[0], np.concatenate([[0], np.cumsum(a[1])[:-1]]).astype(np.uint32), "scan"),
    note="exclusive scan of 1024 uints (uint4 per thread)")
_h2("cs_shfl_scan", "shfl_scan", "_Z14shfl_scan_testPiiS_", 256,
    lambda r: [r.integers(-50, 50, 256).astype(np.int32), np.int32(32), np.zeros(1, np.int32)],
    lambda a, o: _exact(o[0], np.cumsum(a[0]).astype(np.int32), "scan"), smem=8 * 4,
    note="inclusive scan of 256 ints (shuffles, then per-warp sums)")


def _sobol_ref(v, n):
    out = np.zeros(n, np.float32)
    for i in range(n):
        g, x, k = i ^ (i >> 1), 0, 0
        while g:
            if g & 1:
                x ^= int(v[k])
            g >>= 1
            k += 1
        out[i] = np.float32(x) * np.float32(2.3283064e-10)
    return out


_h2("cs_sobolQRNG", "sobol", "_Z15sobolGPU_kerneljjPjPf", 64,
    lambda r: [np.uint32(2048), np.uint32(1), r.integers(0, 1 << 32, 32, dtype=np.uint64).astype(np.uint32),
               np.zeros(2048, np.float32)],
    lambda a, o: _close(o[3], _sobol_ref(a[2], 2048), 1e-6, 0), note="2048 points of one dimension, 64 threads")


for _v, _e in (("SingleStage", "_Z29MatrixMulAsyncCopySingleStageILi16EEvPfPKfS2_ii"),):
    _h2(f"cs_matmulAsync{_v}", "globalToShmemAsyncCopy", _e, (16, 16),
        lambda r: [np.zeros(16 * 16, np.float32), _f32(r, 16 * 256), _f32(r, 256 * 16), np.int32(256), np.int32(16)],
        lambda a, o: _close(o[0], _mm(a[1].reshape(16, 256), a[2].reshape(256, 16)).reshape(-1), 1e-4, 1e-4),
        note="one 16x16 tile of C, K = 256 (cp.async)")


def _filter_check(a, o):
    src = a[2]
    want = np.sort(src[src > 0])
    n = int(np.asarray(o[1])[0])
    if n != want.size:
        return False, f"nres {n}, want {want.size}"
    return _exact(np.sort(np.asarray(o[0])[:n]), want, "kept values (any order)")


_h2("cs_filter_arr", "warpAggregatedAtomicsCG", "_Z10filter_arrPiS_PKii", 256,
    lambda r: [np.zeros(2048, np.int32), np.zeros(1, np.int32), r.integers(-100, 100, 2048).astype(np.int32),
               np.int32(2048)], _filter_check, note="keep the positive of 2048 ints (warp-aggregated atomics)")


# ------------------------------------------------------------------------------------------------ microbench
MICROBENCH_VALIDATION = ("val_mma_gemm", "val_tma_mma_gemm", "val_bulk_pipeline_12x1024", "val_bulk_pipeline_25x32",
                         "val_bulk_pipeline_5x2048", "val_pipe_gemm_2stage", "val_pipe_gemm_3stage",
                         "val_pipe_gemm_4stage", "val_ws_scale_1stage", "val_ws_scale_2stage", "val_ws_scale_4stage")

BY_NAME = {k.name: k for k in KERNELS}
if len(BY_NAME) != len(KERNELS):
    raise RuntimeError("duplicate corpus kernel names")
