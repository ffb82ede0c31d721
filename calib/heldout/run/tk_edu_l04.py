"""Run ThunderKittens kernels/gemm/educational_h100/level_04.cu (nvcc -ptx, unmodified) in tcsim; C = A @ B (bf16)."""
import os
import sys, time
import numpy as np
import ml_dtypes
from tcsim.launch import Launch, Pointer, Struct, run_launch

HELDOUT = os.environ.get("HELDOUT", "/work/scratch/real16b")   # calib/heldout/build.sh's output folder

N = int(sys.argv[1]) if len(sys.argv) > 1 else 64
rng = np.random.default_rng(0)
A = rng.standard_normal((N, N)).astype(ml_dtypes.bfloat16)
B = rng.standard_normal((N, N)).astype(ml_dtypes.bfloat16)
C = np.zeros((N, N), ml_dtypes.bfloat16)
u64 = np.uint64
# matmul_globals: three gl<bf16,1,1,-1,-1,st_bf<32,32>> (384 bytes each: raw_ptr @0, rows @16, cols @24, TMA
# descriptors @128) and int N @1152; the parameter is 1280 bytes
fields, offs = [], []
for k, arr in enumerate((A, B, C)):
    fields += [Pointer(arr), u64(N), u64(N)]
    offs += [384 * k, 384 * k + 16, 384 * k + 24]
fields.append(np.int32(N)); offs.append(1152)
g = Struct(*fields, offsets=offs, size=1280)
ptx = open(HELDOUT + "/ptx/tk_edu_h100_l04.sm_90a.ptx").read()
t = time.time()
res = run_launch(Launch(ptx=ptx, kernel="_Z6kernel14matmul_globals", grid=((N + 31) // 32, (N + 31) // 32, 1),
                        block=(32, 1, 1), dynamic_smem=100000,
                        args=[g]))
out = res.outputs[0][2]
ref = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
got = out.astype(np.float32)
ulp = np.abs(ref) * 2.0 ** -7 + 1e-30
print(f"N={N} {time.time() - t:.1f}s max |got-ref|/ulp(bf16) = {np.max(np.abs(got - ref) / ulp):.3f}; "
      f"findings {len(res.findings)}")
print("RESULT:", "correct" if np.all(np.abs(got - ref) <= ulp) else "WRONG")
