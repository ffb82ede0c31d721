"""Run CUTLASS examples/cute/tutorial/blackwell/02_mma_tma_sm100.cu's gemm_device (nvcc -ptx, unmodified) in tcsim with
the launch its host code builds: D (f32) = alpha A B^T + beta C; A M x K, B N x K half K-major; C/D M x N f32
row-major; one SM100_MMA_F16BF16_SS 128 x 256 atom, MMA tile K 64; TMA atoms (CUtensorMap at offset 0 of a 256-byte
Copy_Atom) over A (box 128 x 64 halves, 128B swizzle) and B (box 256 x 64); 128 threads.  Small integers: exact."""
import os
import sys, time
import numpy as np
from tcsim.launch import Launch, Pointer, Struct, run_launch
from tcsim.isa.tensormap import TensorMap

HELDOUT = os.environ.get("HELDOUT", "/work/scratch/real16b")   # calib/heldout/build.sh's output folder

name = sys.argv[1] if len(sys.argv) > 1 else "cute_bw02_mma_tma"
M, N, K = (int(v) for v in (sys.argv[2:5] if len(sys.argv) > 4 else (256, 256, 128)))
ptx = open(f"{HELDOUT}/ptx/{name}.sm_100a.ptx").read()
kern = next(l.split(".entry ")[1].split("(")[0] for l in ptx.splitlines() if ".entry _Z11gemm_device" in l)
rng = np.random.default_rng(2)
A = rng.integers(-3, 4, (M, K)).astype(np.float16)
B = rng.integers(-3, 4, (N, K)).astype(np.float16)
C = rng.integers(-8, 9, (M, N)).astype(np.float32)
D = np.zeros((M, N), np.float32)
i32 = np.int32


def tensor(arr, rows, cols):
    return Struct(i32(rows), i32(cols), i32(cols), Pointer(arr), offsets=[0, 4, 8, 16], size=24)


alpha, beta = 2.0, 1.0
tma_a = Struct(TensorMap.tiled(A, box=(128, 64), swizzle="128B"), size=256)
tma_b = Struct(TensorMap.tiled(B, box=(256, 64), swizzle="128B"), size=256)
args = [Struct(i32(M), i32(K), i32(0)), Struct(i32(N), i32(K), i32(0)), tensor(C, M, N), tensor(D, M, N), bytes(1),
        Struct(np.uint32((1 << 4) | ((N >> 3 if N <= 256 else 32) << 17) | ((128 >> 4) << 24)), i32(0)), bytes(1),
        tma_a, tma_b, np.float32(alpha), np.float32(beta)]
# the instruction descriptor: D f32 (bit 4), A/B f16 K-major, N=256 >> 3 at bits 17-22, M=128 >> 4 at bits 24-28
args[5] = Struct(np.uint32((1 << 4) | ((256 >> 3) << 17) | ((128 >> 4) << 24)), i32(0))
t = time.time()
res = run_launch(Launch(ptx=ptx, kernel=kern, grid=(M // 128, N // 256, 1), block=(128, 1, 1),
                        dynamic_smem=128 * 64 * 2 + 256 * 64 * 2 + 1024, args=args))
out = res.outputs[3][0].astype(np.float64)
ref = alpha * (A.astype(np.float64) @ B.astype(np.float64).T) + beta * C
print(f"{time.time() - t:.1f}s findings {len(res.findings)}")
print("RESULT:", "correct" if np.array_equal(out, ref) else f"WRONG ({int(np.sum(out != ref))} of {ref.size} differ)")
from collections import Counter
print(Counter((f.cls, f.message[:200]) for f in res.findings).most_common(3))
if res.findings:
    print(res.findings[0].format())
