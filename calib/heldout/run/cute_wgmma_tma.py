"""Run CUTLASS examples/cute/tutorial/hopper/wgmma_tma_sm90.cu's gemm_tn kernel (nvcc -ptx, unmodified) in tcsim with
the launch gemm_tn() builds: A M x K and B N x K half K-major (ldA = ldB = K), C = A B^T col-major (ldC = M), tile
128 x 128 x 64, 3 stages, TMA atoms (CUtensorMap at offset 0 of a 256-byte Copy_Atom, box 128 x 64, 128B swizzle),
SM90_64x64x16_F16F16F16_SS (128 threads), cluster (2,1,1), alpha 1, beta 0.  Small integers: exact in f16."""
import os
import sys, time
import numpy as np
from tcsim.launch import Launch, Struct, run_launch
from tcsim.isa.tensormap import TensorMap

HELDOUT = os.environ.get("HELDOUT", "/work/scratch/real16b")   # calib/heldout/build.sh's output folder

M, N, K = (int(v) for v in (sys.argv[1:4] if len(sys.argv) > 3 else (256, 128, 128)))
ptx = open(HELDOUT + "/ptx/cute_wgmma_tma_sm90.sm_90a.ptx").read()
kern = [l.split(".entry ")[1].split("(")[0] for l in ptx.splitlines() if l.startswith(".entry _Z11gemm_device")][1]
rng = np.random.default_rng(5)
A = rng.integers(-2, 3, (M, K)).astype(np.float16)
B = rng.integers(-2, 3, (N, K)).astype(np.float16)
C = np.zeros((N, M), np.float16)                     # C[m, n] at m + n * M
i32 = np.int32
h = lambda v: np.float16(v).view(np.uint16).tobytes()
args = [Struct(i32(M), i32(N), i32(K)), bytes(1),
        A, Struct(TensorMap.tiled(A, box=(128, 64), swizzle="128B"), size=256),
        B, Struct(TensorMap.tiled(B, box=(128, 64), swizzle="128B"), size=256),
        C, Struct(i32(M)), Struct(i32(1), i32(0)), h(1.0), h(0.0)]
t = time.time()
res = run_launch(Launch(ptx=ptx, kernel=kern, grid=(-(-M // 128) + (-(-M // 128)) % 2, -(-N // 128), 1),
                        block=(128, 1, 1), cluster=(2, 1, 1), dynamic_smem=2 * 3 * 128 * 64 * 2 + 1024, args=args))
out = res.outputs[6].astype(np.float64)
ref = (A.astype(np.float64) @ B.astype(np.float64).T).T      # [n, m]
print(f"M={M} N={N} K={K} {time.time() - t:.1f}s findings {len(res.findings)}")
print("RESULT:", "correct" if np.array_equal(out, ref) else f"WRONG ({int(np.sum(out != ref))} of {ref.size} differ)")
from collections import Counter
print(Counter((f.cls, f.severity, f.message[:150]) for f in res.findings).most_common(4))
if res.findings:
    print(res.findings[0].format())
