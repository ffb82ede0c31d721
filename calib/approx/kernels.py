"""CUDA probe kernels for the .approx characterisation (compiled with nvcc for sm_90a, loaded with CuPy).

Every f32 kernel ``k_<form>(unsigned base, unsigned* out)`` writes the result for input bits base + i; the
16-bit kernels ``k_<form>(unsigned short* out)`` write all 65536; the packed x2 kernels compare each result
with the scalar table in-kernel; the div kernels compare div.{approx,full}{.ftz}.f32 on hashed operand pairs
with ``a * rcp.approx.ftz.f32(b)`` plus ptxas's scaling (tcsim.semantics.float_arith.div_approx_f32) in-kernel
and can also dump (a, b, d) for a list of pairs.
"""
from __future__ import annotations

import os
import subprocess

#: (form name, PTX instruction); the name is the tcsim function and flag: <fn>[_ftz]
F32 = [
    ("ex2", "ex2.approx.f32"), ("ex2_ftz", "ex2.approx.ftz.f32"),
    ("lg2", "lg2.approx.f32"), ("lg2_ftz", "lg2.approx.ftz.f32"),
    ("rcp", "rcp.approx.f32"), ("rcp_ftz", "rcp.approx.ftz.f32"),
    ("rsqrt", "rsqrt.approx.f32"), ("rsqrt_ftz", "rsqrt.approx.ftz.f32"),
    ("sqrt", "sqrt.approx.f32"), ("sqrt_ftz", "sqrt.approx.ftz.f32"),
    ("sin", "sin.approx.f32"), ("sin_ftz", "sin.approx.ftz.f32"),
    ("cos", "cos.approx.f32"), ("cos_ftz", "cos.approx.ftz.f32"),
    ("tanh", "tanh.approx.f32"),
]
H16 = [("ex2_f16", "ex2.approx.f16"), ("ex2_bf16", "ex2.approx.ftz.bf16"),
       ("tanh_f16", "tanh.approx.f16"), ("tanh_bf16", "tanh.approx.bf16")]
H32 = [("ex2_f16x2", "ex2.approx.f16x2", "ex2_f16"), ("ex2_bf16x2", "ex2.approx.ftz.bf16x2", "ex2_bf16"),
       ("tanh_f16x2", "tanh.approx.f16x2", "tanh_f16"), ("tanh_bf16x2", "tanh.approx.bf16x2", "tanh_bf16")]
DIV = [("div_approx", "div.approx.f32"), ("div_approx_ftz", "div.approx.ftz.f32"),
       ("div_full", "div.full.f32"), ("div_full_ftz", "div.full.ftz.f32")]


def source() -> str:
    src = ["#include <cstdint>\n"]
    for name, op in F32:
        src.append(f'extern "C" __global__ void k_{name}(unsigned base, unsigned* out) {{\n'
                   f'  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; unsigned x = base + i, r;\n'
                   f'  asm volatile("{{.reg .f32 a, d; mov.b32 a, %1; {op} d, a; mov.b32 %0, d;}}" : "=r"(r) : "r"(x));\n'
                   f'  out[i] = r;\n}}\n'
                   f'extern "C" __global__ void l_{name}(const unsigned* in, unsigned* out, unsigned n) {{\n'
                   f'  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; unsigned x = in[i], r;\n'
                   f'  asm volatile("{{.reg .f32 a, d; mov.b32 a, %1; {op} d, a; mov.b32 %0, d;}}" : "=r"(r) : "r"(x));\n'
                   f'  out[i] = r;\n}}\n')
    for name, op in H16:
        src.append(f'extern "C" __global__ void k_{name}(unsigned short* out) {{\n'
                   f'  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; unsigned short x = i, r;\n'
                   f'  asm volatile("{{.reg .b16 a, d; mov.b16 a, %1; {op} d, a; mov.b16 %0, d;}}" : "=h"(r) : "h"(x));\n'
                   f'  out[i] = r;\n}}\n')
    for name, op, _ in H32:
        src.append(f'extern "C" __global__ void k_{name}(unsigned base, const unsigned short* t, unsigned long long* bad) {{\n'
                   f'  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; unsigned x = base + i, r;\n'
                   f'  asm volatile("{{.reg .b32 a, d; mov.b32 a, %1; {op} d, a; mov.b32 %0, d;}}" : "=r"(r) : "r"(x));\n'
                   f'  unsigned e = (unsigned)t[x & 0xFFFF] | ((unsigned)t[x >> 16] << 16);\n'
                   f'  if (r != e) atomicAdd(bad, 1ULL);\n}}\n'
                   f'extern "C" __global__ void l_{name}(const unsigned* in, unsigned* out, unsigned n) {{\n'
                   f'  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; unsigned x = in[i], r;\n'
                   f'  asm volatile("{{.reg .b32 a, d; mov.b32 a, %1; {op} d, a; mov.b32 %0, d;}}" : "=r"(r) : "r"(x));\n'
                   f'  out[i] = r;\n}}\n')
    src.append(r'''
__device__ __forceinline__ unsigned hsh(unsigned long long v) {
  v ^= v >> 33; v *= 0xff51afd7ed558ccdULL; v ^= v >> 33; v *= 0xc4ceb9fe1a85ec53ULL; v ^= v >> 33; return (unsigned)v; }
__device__ __forceinline__ float rcpftz(float b) { float r; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b)); return r; }
__device__ __forceinline__ float mulrn(float a, float b) { float r; asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ float mulftz(float a, float b) { float r; asm("mul.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ float model(float a, float b, bool ftz, bool full) {
  float bv = fabsf(b);
  if (full && bv >= 8.507059173023462e+37f) { a = mulrn(a, 0.25f); b = mulrn(b, 0.25f); }
  if (!ftz && bv < 1.1754943508222875e-38f && bv > 0.f) { a = mulrn(a, 16777216.f); b = mulrn(b, 16777216.f); }
  float r = rcpftz(b);
  return ftz ? mulftz(a, r) : mulrn(a, r);
}
''')
    for k, (name, op) in enumerate(DIV):
        ftz = "true" if "ftz" in op else "false"
        full = "true" if "full" in op else "false"
        src.append(f'extern "C" __global__ void k_{name}(unsigned long long base, unsigned long long* bad, unsigned* rec) {{\n'
                   f'  unsigned long long i = base + blockIdx.x * blockDim.x + threadIdx.x;\n'
                   f'  unsigned ua = hsh(2 * i + {k} * 0x100000000ULL), ub = hsh(2 * i + 1 + {k} * 0x100000000ULL);\n'
                   f'  if ((i & 3) == 1) ub = (ub & 0x807FFFFF) | ((ub >> 24 & 7) << 23);\n'
                   f'  if ((i & 3) == 2) ub = (ub & 0x807FFFFF) | ((0xF8 + (ub >> 24 & 7)) << 23);\n'
                   f'  float a = __uint_as_float(ua), b = __uint_as_float(ub), r;\n'
                   f'  asm volatile("{op} %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));\n'
                   f'  float m = model(a, b, {ftz}, {full});\n'
                   f'  unsigned ur = __float_as_uint(r), um = __float_as_uint(m);\n'
                   f'  bool nan = (ur & 0x7FFFFFFF) > 0x7F800000 && (um & 0x7FFFFFFF) > 0x7F800000;\n'
                   f'  if (ur != um && !nan) {{ unsigned long long j = atomicAdd(bad, 1ULL);\n'
                   f'    if (j < 4096) {{ rec[4*j] = ua; rec[4*j+1] = ub; rec[4*j+2] = ur; rec[4*j+3] = um; }} }}\n}}\n'
                   f'extern "C" __global__ void l_{name}(const unsigned* a, const unsigned* b, unsigned* out, unsigned n) {{\n'
                   f'  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; float r;\n'
                   f'  asm volatile("{op} %0, %1, %2;" : "=f"(r) : "f"(__uint_as_float(a[i])), "f"(__uint_as_float(b[i])));\n'
                   f'  out[i] = __float_as_uint(r);\n}}\n')
    return "".join(src)


def build(workdir: str, sass_path: str | None = None):
    """Compile with nvcc (sm_90a), optionally dump the SASS (cuobjdump), load with CuPy; returns the module."""
    import cupy as cp
    os.makedirs(workdir, exist_ok=True)
    cu, cubin = os.path.join(workdir, "approx.cu"), os.path.join(workdir, "approx.cubin")
    with open(cu, "w") as f:
        f.write(source())
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", cubin, cu], check=True)
    if sass_path:
        with open(sass_path, "w") as f:
            subprocess.run(["cuobjdump", "-sass", cubin], stdout=f, check=True)
    return cp.RawModule(path=cubin)


def run_f32(mod, name, base, count):
    """GPU results of form `name` for input bits base .. base+count-1 (count a multiple of 256), CuPy uint32."""
    import cupy as cp
    import numpy as np
    out = cp.empty(count, cp.uint32)
    mod.get_function(f"k_{name}")((count // 256,), (256,), (np.uint32(base), out))
    return out


def run_list(mod, name, xs):
    """GPU results of form `name` (f32 or x2) for a list of 32-bit inputs (numpy) -> numpy uint32."""
    import cupy as cp
    import numpy as np
    x = cp.asarray(np.ascontiguousarray(xs, np.uint32))
    out = cp.empty_like(x)
    n = x.size
    mod.get_function(f"l_{name}")(((n + 255) // 256,), (256,), (x, out, np.uint32(n)))
    return cp.asnumpy(out)


def run_half(mod, name):
    import cupy as cp
    out = cp.zeros(65536, cp.uint16)
    mod.get_function(f"k_{name}")((256,), (256,), (out,))
    return cp.asnumpy(out)


def run_div(mod, name, a, b):
    import cupy as cp
    import numpy as np
    da, db = cp.asarray(np.ascontiguousarray(a, np.uint32)), cp.asarray(np.ascontiguousarray(b, np.uint32))
    out = cp.empty_like(da)
    n = da.size
    mod.get_function(f"l_{name}")(((n + 255) // 256,), (256,), (da, db, out, np.uint32(n)))
    return cp.asnumpy(out)
