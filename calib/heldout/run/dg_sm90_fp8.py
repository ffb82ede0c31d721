"""Run DeepGEMM sm90_fp8_gemm_1d2d_impl (nvcc -ptx of inst/dg_sm90_fp8.cu, unmodified) in tcsim with the launch
DeepGEMM's host code (csrc/jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp) builds: D[m,n] = sum_k A[m,k] B[n,k] sfa[k/128,m]
sfb[n/128,k/128] in bf16.  Small-integer fp8 inputs and power-of-two scales: the answer is exact, numpy's bit for
bit."""
import os
import time
import numpy as np, ml_dtypes
from tcsim.launch import Launch, run_launch
from tcsim.isa.tensormap import TensorMap

HELDOUT = os.environ.get("HELDOUT", "/work/scratch/real16b")   # calib/heldout/build.sh's output folder

M = N = K = 256
SMS = 4
rng = np.random.default_rng(3)
A = rng.integers(-3, 4, (M, K)).astype(ml_dtypes.float8_e4m3fn)
B = rng.integers(-3, 4, (N, K)).astype(ml_dtypes.float8_e4m3fn)
sfa = (2.0 ** rng.integers(-2, 3, (K // 128, M))).astype(np.float32)        # MN-major: [k block, m]
sfb = (2.0 ** rng.integers(-2, 3, (N // 128, K // 128))).astype(np.float32)  # K-major: [n block, k block]
D = np.zeros((M, N), ml_dtypes.bfloat16)
u8 = lambda a: a.view(np.uint8)
tm_a = TensorMap.tiled(u8(A), box=(128, 128), swizzle="128B")
tm_b = TensorMap.tiled(u8(B), box=(128, 128), swizzle="128B")
tm_d = TensorMap.tiled(D.view(np.uint16), box=(128, 64), swizzle="128B", dtype="BFLOAT16")
tm_sfa = TensorMap.tiled(sfa, box=(1, 128))
ptx = open(HELDOUT + "/ptx/deepgemm_sm90_fp8.sm_90a.ptx").read()
kern = next(l.split(".entry ")[1].split("(")[0] for l in ptx.splitlines() if l.startswith(".entry"))
smem = 32768 + 256 + 8 + 4 * (16384 + 16384 + 512)
t = time.time()
res = run_launch(Launch(ptx=ptx, kernel=kern, grid=(SMS, 1, 1), block=(384, 1, 1), dynamic_smem=smem,
                        args=[sfb, np.uint64(0), np.uint32(M), np.uint32(N), np.uint32(K), tm_a, tm_b, tm_d, tm_sfa]))
out = D.astype(np.float64)
a = A.astype(np.float64); b = B.astype(np.float64)
ref = np.zeros((M, N))
for kb in range(K // 128):
    ks = slice(128 * kb, 128 * kb + 128)
    part = a[:, ks] @ b[:, ks].T
    ref += part * sfa[kb][:, None] * np.repeat(sfb[:, kb], 128)[None, :]
ref = ref.astype(ml_dtypes.bfloat16).astype(np.float64)
print(f"{time.time() - t:.1f}s findings {len(res.findings)}")
for f in res.findings[:3]:
    print(" ", f.cls, f.message[:300])
print("RESULT:", "correct" if np.array_equal(out, ref) else f"WRONG ({int(np.sum(out != ref))} of {ref.size} differ)")
