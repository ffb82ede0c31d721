"""Run CUTLASS examples/cute/tutorial/blackwell/01_mma_sm100.cu's gemm_device (nvcc -ptx, unmodified) in tcsim with
the launch its host code builds: D (f32) = alpha A B^T + beta C, A M x K and B N x K half K-major, C/D M x N f32
row-major, one SM100_MMA_F16BF16_SS 128 x 256 atom, tile K 64, 128 threads.  Each tensor parameter is a cute::Tensor
by value (shape M, K @0 and @4, the dynamic stride @8, the pointer @16).  Small integer inputs: exact in f32."""
import os
import time
import numpy as np
from tcsim.launch import Launch, Pointer, Struct, run_launch

HELDOUT = os.environ.get("HELDOUT", "/work/scratch/real16b")   # calib/heldout/build.sh's output folder

M, N, K = 128, 256, 128
ptx = open(HELDOUT + "/ptx/cute_bw01_mma.sm_100a.ptx").read()
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
args = [tensor(A, M, K), tensor(B, N, K), tensor(C, M, N), tensor(D, M, N), bytes(1),
        # the TiledMMA holds the UMMA instruction descriptor the host computed (UMMA::make_instr_desc): D f32 (bit 4),
        # A/B f16 K-major, N >> 3 at bits 17-22, M >> 4 at bits 24-28 (PTX ISA tcgen05 instruction descriptor)
        Struct(np.uint32((1 << 4) | ((N >> 3) << 17) | ((128 >> 4) << 24)), i32(0)), bytes(1),
        np.float32(alpha), np.float32(beta)]
t = time.time()
res = run_launch(Launch(ptx=ptx, kernel=kern, grid=(M // 128, N // 256, 1), block=(128, 1, 1),
                        dynamic_smem=64 * 1024, args=args))
out = res.outputs[3][0]
ref = alpha * (A.astype(np.float64) @ B.astype(np.float64).T) + beta * C
print(f"{time.time() - t:.1f}s findings {len(res.findings)}")
print("RESULT:", "correct" if np.array_equal(out.astype(np.float64), ref) else
      f"WRONG ({int(np.sum(out != ref))} of {ref.size} differ)")
from collections import Counter
print(Counter((f.cls, f.message[:200]) for f in res.findings).most_common(3))
print(res.findings[0].missing, "|", res.findings[0].fix)
