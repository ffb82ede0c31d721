"""Run CUTLASS examples/cute/tutorial/tiled_copy.cu's copy_kernel_vectorized (nvcc -ptx, unmodified) in tcsim with
the launch main() builds: a 256 x 512 float tensor (column-major), tiled_divide by (128, 64) -> grid (2, 8), 256
threads; each parameter is a cute::Tensor by value (gmem_ptr, layout: shape (m', n'), strides (256, 16384), then the
pointer)."""
import os
import time
import numpy as np
from tcsim.launch import Launch, Pointer, Struct, run_launch

HELDOUT = os.environ.get("HELDOUT", "/work/scratch/real16b")   # calib/heldout/build.sh's output folder

ptx = open(HELDOUT + "/ptx/cute_tiled_copy.sm_90a.ptx").read()
kern = next(l.split()[2].split("(")[0] for l in ptx.splitlines() if ".entry _Z22copy_kernel_vectorized" in l)
M, N = 256, 512
S = np.arange(M * N, dtype=np.float32)
D = np.zeros(M * N, np.float32)


def tensor(arr):
    # cute::Tensor holds its layout first (shape m', n' @0; strides 256, 16384 @8), then the engine (pointer @16)
    return Struct(np.int32(M // 128), np.int32(N // 64), np.int32(M), np.int32(M * 64), Pointer(arr),
                  offsets=[0, 4, 8, 12, 16], size=24)


t = time.time()
res = run_launch(Launch(ptx=ptx, kernel=kern, grid=(M // 128, N // 64, 1), block=(256, 1, 1),
                        args=[tensor(S), tensor(D), bytes(1)]))
out = res.outputs[1][0]
print(f"{time.time() - t:.1f}s findings {len(res.findings)}")
print("RESULT:", "correct" if np.array_equal(out, S) else f"WRONG ({np.sum(out != S)} differ)")
