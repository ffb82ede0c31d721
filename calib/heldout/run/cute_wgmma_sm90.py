"""Run CUTLASS examples/cute/tutorial/hopper/wgmma_sm90.cu's gemm_nt kernel (nvcc -ptx, unmodified) in tcsim with the
launch gemm_nt() builds: half A (M x K, col-major, ldA = M), B (N x K, ldB = N), C = A B^T (col-major, ldC = M), CTA
tile 128 x 128 x 64, 3 stages, one SM90_64x64x16_F16F16F16_SS atom (128 threads), alpha = 1, beta = 0.  Inputs are
small integers so that the f16 accumulation is exact and the answer is numpy's, bit for bit."""
import os
import sys, time
import numpy as np
from tcsim.launch import Launch, Struct, run_launch

HELDOUT = os.environ.get("HELDOUT", "/work/scratch/real16b")   # calib/heldout/build.sh's output folder

M, N, K = (int(v) for v in (sys.argv[1:4] if len(sys.argv) > 3 else (128, 128, 128)))
ptx = open(HELDOUT + "/ptx/cute_wgmma_sm90.sm_90a.ptx").read()
kern = next(l.split(".entry ")[1].split("(")[0] for l in ptx.splitlines()
            if ".entry _Z11gemm_deviceIN4cute5tupleIJiiiEEENS1_IJNS0_1CILi128EEES4_NS3_ILi64EEEEEEN7cutlass6half_t"
            "ENS1_IJNS3_ILi1EEEiEEE" in l)
rng = np.random.default_rng(1)
A = rng.integers(-2, 3, (K, M)).astype(np.float16)     # A[m, k] at m + k*M
B = rng.integers(-2, 3, (K, N)).astype(np.float16)     # B[n, k] at n + k*N
C = np.zeros((N, M), np.float16)                       # C[m, n] at m + n*M
i32 = np.int32
args = [Struct(i32(M), i32(N), i32(K)), bytes(1), A, Struct(i32(M)), bytes(1), bytes(1),
        B, Struct(i32(N)), bytes(1), bytes(1), C, Struct(i32(M)),
        Struct(i32(1), i32(0)),                        # TiledMMA: the atom's accumulate_ = ScaleOut::One
        np.float16(1.0).view(np.uint16).tobytes(), np.float16(0.0).view(np.uint16).tobytes()]
t = time.time()
res = run_launch(Launch(ptx=ptx, kernel=kern, grid=((M + 127) // 128, (N + 127) // 128, 1), block=(128, 1, 1),
                        dynamic_smem=2 * 3 * 128 * 64 * 2 + 1024, args=args))
out = res.outputs[10]
ref = (A.astype(np.float64).T @ B.astype(np.float64)).T      # [n, m]
print(f"M={M} N={N} K={K} {time.time() - t:.1f}s findings {len(res.findings)}")
print("RESULT:", "correct" if np.array_equal(out.astype(np.float64), ref) else
      f"WRONG ({int(np.sum(out.astype(np.float64) != ref))} of {ref.size} differ)")
from collections import Counter
print(Counter((f.cls, f.message[:150]) for f in res.findings).most_common(5))
if res.findings:
    print(res.findings[0].missing, res.findings[0].fix)
