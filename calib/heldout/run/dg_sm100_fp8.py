"""Run DeepGEMM sm100_fp8_fp4_gemm_1d1d_impl (nvcc -ptx of inst/dg_sm100_fp8.cu, unmodified) in tcsim with the launch
DeepGEMM's host code (csrc/jit_kernels/impls/sm100_fp8_fp4_gemm_1d1d.hpp) builds: fp8 e4m3 A (M x K), B (N x K), UE8M0
scale factors packed four to an int32 (one per 128 K; MN-major maps), bf16 D = sum_g (A_g B_g^T) 2^(ea-127) 2^(eb-127).
Small-integer inputs and power-of-two scales: the answer is exact, numpy's bit for bit."""
import os
import time
import numpy as np, ml_dtypes
from tcsim.launch import Launch, run_launch
from tcsim.isa.tensormap import TensorMap

HELDOUT = os.environ.get("HELDOUT", "/work/scratch/real16b")   # calib/heldout/build.sh's output folder

M = N = K = 256
SMS = 4
rng = np.random.default_rng(4)
A = rng.integers(-3, 4, (M, K)).astype(ml_dtypes.float8_e4m3fn)
B = rng.integers(-3, 4, (N, K)).astype(ml_dtypes.float8_e4m3fn)
G = K // 128
ea = rng.integers(125, 130, (G, M)); eb = rng.integers(125, 130, (G, N))
def pack(e):          # [G, MN] exponents -> [ceil(G/4), MN] int32, byte j = group 4i+j (unused bytes 127 = 1.0)
    out = np.full((-(-e.shape[0] // 4) * 4, e.shape[1]), 127, np.uint32)
    out[:e.shape[0]] = e
    out = out.reshape(-1, 4, e.shape[1])
    return (out[:, 0] | out[:, 1] << 8 | out[:, 2] << 16 | out[:, 3] << 24).astype(np.uint32).view(np.int32)
sfa, sfb = pack(ea), pack(eb)
D = np.zeros((M, N), ml_dtypes.bfloat16)
u8 = lambda a: a.view(np.uint8)
tm_a = TensorMap.tiled(u8(A), box=(128, 128), swizzle="128B")
tm_b = TensorMap.tiled(u8(B), box=(128, 128), swizzle="128B")
tm_sfa = TensorMap.tiled(sfa, box=(1, 128))
tm_sfb = TensorMap.tiled(sfb, box=(1, 128))
tm_d = TensorMap.tiled(D.view(np.uint16), box=(128, 64), swizzle="128B", dtype="BFLOAT16")
ptx = open(HELDOUT + "/ptx/deepgemm_sm100_fp8.sm_100a.ptx").read()
kern = next(l.split(".entry ")[1].split("(")[0] for l in ptx.splitlines() if l.startswith(".entry"))
smem = 32768 + 808 + 4 + 4 * (16384 + 16384 + 512 + 512) + 1024
t = time.time()
res = run_launch(Launch(ptx=ptx, kernel=kern, grid=(SMS, 1, 1), block=(256, 1, 1), dynamic_smem=smem,
                        args=[np.uint64(0), np.uint32(M), np.uint32(N), np.uint32(K),
                              tm_a, tm_b, tm_sfa, tm_sfb, tm_d]))
out = D.astype(np.float64)
a = A.astype(np.float64); b = B.astype(np.float64)
ref = np.zeros((M, N))
for g in range(G):
    ks = slice(128 * g, 128 * g + 128)
    ref += (a[:, ks] @ b[:, ks].T) * 2.0 ** (ea[g] - 127)[:, None] * 2.0 ** (eb[g] - 127)[None, :]
ref = ref.astype(ml_dtypes.bfloat16).astype(np.float64)
print(f"{time.time() - t:.1f}s findings {len(res.findings)}")
for f in res.findings[:3]:
    print(" ", f.cls, f.message[:300])
print("RESULT:", "correct" if np.array_equal(out, ref) else f"WRONG ({int(np.sum(out != ref))} of {ref.size} differ)")
from collections import Counter
print(Counter((f.cls, f.severity, f.message[:90]) for f in res.findings).most_common(8))
print([f for f in res.findings if f.cls == 7][0].format())
