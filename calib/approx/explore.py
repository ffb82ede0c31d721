"""Exploration sweep of the PTX .approx instructions on a GPU (first characterisation pass).

Run on the GPU machine:  python3 calib/approx/explore.py OUTDIR
Needs CuPy, nvcc and cuobjdump.  Writes:
  sass.txt      the SASS of every probed form (nvcc -arch=sm_90a, cuobjdump -sass)
  stats.npz     per f32 form, per (sign, exponent field) bin of 2**23 inputs: counts of results equal to the
                correctly rounded value (float64 CuPy reference rounded once), within 1 ulp, max |ulp|,
                zero / subnormal / inf / NaN results, ftz-vs-non-ftz disagreements, sign-symmetry failures
  half.npz      every 16-bit input of the f16/bf16 forms (full tables) and the exhaustive f16x2/bf16x2 check
  slices*.npz   selected bins of 2**23 consecutive inputs, delta-encoded (first value, int8 steps, escapes), zlib
  div.txt       div.approx/div.full checked in-kernel against a*rcp.approx.ftz(b) with the current scaling rules
"""
import os
import subprocess
import sys
import time
import zlib

import cupy as cp
import numpy as np

OUT = sys.argv[1]
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

src = ['#include <cstdint>\n']
for name, op in F32:
    src.append(f'extern "C" __global__ void k_{name}(unsigned base, unsigned* out) {{\n'
               f'  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; unsigned x = base + i, r;\n'
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
               f'  if (r != e) atomicAdd(bad, 1ULL);\n}}\n')
# div: hashed operand pairs; model = current tcsim rules around rcp.approx.ftz (all in PTX)
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
               f'  if ((i & 3) == 1) ub = (ub & 0x807FFFFF) | ((ub >> 24 & 7) << 23) ;\n'
               f'  if ((i & 3) == 2) ub = (ub & 0x807FFFFF) | ((0xF8 + (ub >> 24 & 7)) << 23);\n'
               f'  float a = __uint_as_float(ua), b = __uint_as_float(ub), r;\n'
               f'  asm volatile("{op} %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));\n'
               f'  float m = model(a, b, {ftz}, {full});\n'
               f'  unsigned ur = __float_as_uint(r), um = __float_as_uint(m);\n'
               f'  bool nan = (ur & 0x7FFFFFFF) > 0x7F800000 && (um & 0x7FFFFFFF) > 0x7F800000;\n'
               f'  if (ur != um && !nan) {{ unsigned long long j = atomicAdd(bad, 1ULL);\n'
               f'    if (j < 4096) {{ rec[4*j] = ua; rec[4*j+1] = ub; rec[4*j+2] = ur; rec[4*j+3] = um; }} }}\n}}\n')
code = "".join(src)
os.makedirs("/tmp/apx", exist_ok=True)
open("/tmp/apx/k.cu", "w").write(code)
subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", "/tmp/apx/k.cubin", "/tmp/apx/k.cu"], check=True)
with open(os.path.join(OUT, "sass.txt"), "w") as f:
    subprocess.run(["cuobjdump", "-sass", "/tmp/apx/k.cubin"], stdout=f, check=True)
mod = cp.RawModule(path="/tmp/apx/k.cubin")
t0 = time.time()
log = open(os.path.join(OUT, "log.txt"), "a")


def say(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    log.write(s + "\n")
    log.flush()


say(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())

# ------------------------------------------------------------------------------------------------ half forms
half = {}
for name, op in H16:
    o = cp.zeros(65536, cp.uint16)
    mod.get_function(f"k_{name}")((256,), (256,), (o,))
    half[name] = cp.asnumpy(o)
for name, op, base in H32:
    t = cp.asarray(half[base])
    bad = cp.zeros(1, cp.uint64)
    fn = mod.get_function(f"k_{name}")
    for c in range(16):
        fn((1 << 20,), (256,), (np.uint32(c << 28), t, bad))
    half[name + "_mismatches"] = cp.asnumpy(bad)
    say(name, "exhaustive mismatches vs per-half scalar table:", int(half[name + "_mismatches"][0]))
np.savez_compressed(os.path.join(OUT, "half.npz"), **half)

# ------------------------------------------------------------------------------------------------ div
with open(os.path.join(OUT, "div.txt"), "w") as f:
    for name, op in DIV:
        bad = cp.zeros(1, cp.uint64)
        rec = cp.zeros(4 * 4096, cp.uint32)
        fn = mod.get_function(f"k_{name}")
        for c in range(16):
            fn((1 << 20,), (256,), (np.uint64(c << 28), bad, rec))
        nb = int(cp.asnumpy(bad)[0])
        r = cp.asnumpy(rec).reshape(-1, 4)[:min(nb, 4096)]
        f.write(f"{name} {op}: {nb} mismatches in 2**32 hashed pairs\n")
        for row in r[:200]:
            f.write("  a=%08x b=%08x gpu=%08x model=%08x\n" % tuple(int(v) for v in row))
        say(name, "mismatches", nb)

# ------------------------------------------------------------------------------------------------ f32 forms
REF = {"ex2": cp.exp2, "lg2": cp.log2, "rcp": lambda v: 1.0 / v, "rsqrt": lambda v: 1.0 / cp.sqrt(v),
       "sqrt": cp.sqrt, "sin": cp.sin, "cos": cp.cos, "tanh": cp.tanh}
ODD = {"rcp", "sin", "tanh"}
EVEN = {"cos"}
SLICES = [
    ("rcp_ftz", 0, 127), ("ex2_ftz", 0, 127), ("ex2_ftz", 1, 127), ("ex2_ftz", 0, 126), ("ex2_ftz", 1, 126),
    ("rsqrt_ftz", 0, 127), ("rsqrt_ftz", 0, 128), ("sqrt_ftz", 0, 127), ("sqrt_ftz", 0, 128),
    ("lg2_ftz", 0, 127), ("lg2_ftz", 0, 126), ("lg2_ftz", 0, 128),
    ("rcp", 0, 0), ("rcp", 0, 253), ("rcp", 0, 254), ("rcp_ftz", 0, 253), ("rcp_ftz", 0, 254),
    ("sqrt", 0, 0), ("rsqrt", 0, 0), ("ex2", 1, 133), ("ex2", 1, 134), ("ex2_ftz", 1, 133),
    ("ex2_ftz", 0, 120), ("ex2_ftz", 1, 120), ("ex2_ftz", 0, 133),
    ("tanh", 0, 127), ("tanh", 0, 125), ("tanh", 0, 120), ("tanh", 0, 129), ("tanh", 0, 110),
    ("lg2", 0, 0), ("lg2_ftz", 0, 150), ("lg2_ftz", 0, 100),
    ("sin_ftz", 0, 127), ("cos_ftz", 0, 127), ("sin_ftz", 0, 120), ("cos_ftz", 0, 120),
    ("sin_ftz", 0, 140), ("cos_ftz", 0, 140),
]
want = {}
for s in SLICES:
    want.setdefault(s[0], []).append(s[1:])
slices = {}


def encode(o):
    o = o.astype(np.int64)
    d = np.diff(o)
    esc = np.nonzero((d < -127) | (d > 127))[0]
    small = np.clip(d, -128, 127).astype(np.int8)
    small[esc] = -128
    raw = (np.array([o[0]], np.int64).tobytes() + small.tobytes() + esc.astype(np.int32).tobytes()
           + d[esc].astype(np.int64).tobytes())
    return np.frombuffer(zlib.compress(raw, 9), np.uint8), len(esc)


def key(u):
    u = u.astype(cp.int64)
    return cp.where(u >= 0x80000000, -(u & 0x7FFFFFFF), u)


CH = 1 << 28
stats = {}
fam_forms = {}
for name, op in F32:
    fam_forms.setdefault(name.split("_")[0], []).append(name)
for fam, forms in fam_forms.items():
    st = {n: np.zeros((512, 9), np.int64) for n in forms}
    for c in range(16):
        base = c * CH
        outs = {}
        for n in forms:
            o = cp.empty(CH, cp.uint32)
            mod.get_function(f"k_{n}")((CH // 256,), (256,), (np.uint32(base), o))
            outs[n] = o
        x = cp.arange(CH, dtype=cp.uint32) + cp.uint32(base)
        ref = REF[fam](x.view(cp.float32).astype(cp.float64)).astype(cp.float32).view(cp.uint32)
        rk = key(ref)
        refnan = (ref & 0x7FFFFFFF) > 0x7F800000
        del x
        for n in forms:
            o = outs[n]
            ok = key(o)
            onan = (o & 0x7FFFFFFF) > 0x7F800000
            d = cp.abs(ok - rk)
            d = cp.where(onan & refnan, 0, cp.where(onan | refnan, 1 << 40, d))
            a = (o & 0x7FFFFFFF)
            rows = [
                (d == 0).reshape(32, -1).sum(1), (d <= 1).reshape(32, -1).sum(1),
                cp.minimum(d, 1 << 40).reshape(32, -1).max(1), (a == 0).reshape(32, -1).sum(1),
                ((a > 0) & (a < 0x800000)).reshape(32, -1).sum(1), (a == 0x7F800000).reshape(32, -1).sum(1),
                onan.reshape(32, -1).sum(1),
            ]
            if n.endswith("_ftz"):
                rows.append((o != outs[fam]).reshape(32, -1).sum(1))
            else:
                rows.append(cp.zeros(32, cp.int64))
            rows.append(cp.zeros(32, cp.int64))
            st[n][c * 32:(c + 1) * 32] = cp.asnumpy(cp.stack([r.astype(cp.int64) for r in rows], 1))
            for sg, e in want.get(n, []):
                if (sg << 8 | e) // 32 == c:
                    r = ((sg << 8 | e) % 32)
                    arr = cp.asnumpy(o[r << 23:(r + 1) << 23])
                    z, nesc = encode(arr)
                    if z.size > 6_000_000:
                        say("slice", n, sg, e, "too large", z.size)
                        continue
                    slices[f"{n}_{'n' if sg else 'p'}{e}"] = z
                    say("slice", n, sg, e, "bytes", z.size, "escapes", nesc)
        del ref, rk, refnan
        outs.clear()
    # sign symmetry: second pass over positive half with the negated inputs
    if fam in ODD or fam in EVEN:
        for c in range(8):
            base = c * CH
            for n in forms:
                o = cp.empty(CH, cp.uint32)
                on = cp.empty(CH, cp.uint32)
                mod.get_function(f"k_{n}")((CH // 256,), (256,), (np.uint32(base), o))
                mod.get_function(f"k_{n}")((CH // 256,), (256,), (np.uint32(base + (1 << 31)), on))
                exp = o ^ cp.uint32(0x80000000) if fam in ODD else o
                nan = (o & 0x7FFFFFFF) > 0x7F800000
                bad = (on != exp) & ~nan
                st[n][c * 32:(c + 1) * 32, 8] = cp.asnumpy(bad.reshape(32, -1).sum(1))
    for n in forms:
        stats[n] = st[n]
        s = st[n]
        say(n, "exact-vs-CR %.6f" % (s[:, 0].sum() / 2 ** 32), "<=1ulp %.6f" % (s[:, 1].sum() / 2 ** 32),
            "ftz!=nonftz", int(s[:, 7].sum()), "sym-fail", int(s[:, 8].sum()), "t=%.0fs" % (time.time() - t0))
np.savez_compressed(os.path.join(OUT, "stats.npz"), **stats)

# slices: pack into files of at most 15 MB
files, cur, size = [], {}, 0
for k, v in slices.items():
    if size + v.size > 15_000_000 and cur:
        files.append(cur)
        cur, size = {}, 0
    cur[k] = v
    size += v.size
files.append(cur)
for i, f in enumerate(files[:4]):
    np.savez(os.path.join(OUT, f"slices{i}.npz"), **f)
say("slice files", len(files), "dropped", sum(len(f) for f in files[4:]), "total s", time.time() - t0)
