"""Run ThunderKittens kernels/gemm/fp8_b200/fp8_b200_gemm.cu's kernel<config<256,64,256,4,true,5,2>> (nvcc -ptx,
unmodified) in tcsim with the launch its run_benchmark builds: globals = three gl (384 bytes each: raw_ptr @0, rows
@16, cols @24, the CUtensorMap @128 -- TK's 5-D swizzled map of create_tensor_map, axis 2) for A (M x K fp8), B
(N x K fp8), D (M x N bf16); D = A B^T.  Cluster 2, 256 threads, grid = M/128 * N/64.  Small integers: exact."""
import os
import sys, time
import numpy as np, ml_dtypes
from tcsim.launch import Launch, Pointer, Struct, run_launch
from tcsim.isa.tensormap import TensorMap

HELDOUT = os.environ.get("HELDOUT", "/work/scratch/real16b")   # calib/heldout/build.sh's output folder

M, N, K = (int(v) for v in (sys.argv[1:4] if len(sys.argv) > 3 else (256, 64, 512)))
rng = np.random.default_rng(6)
A = rng.integers(-3, 4, (M, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
B = rng.integers(-3, 4, (N, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
D = np.zeros((M, N), np.uint16)
u64 = np.uint64


def tk_map(arr, dtype, es, tile_rows, tile_cols, swz_bytes):
    rows, cols = arr.shape
    swz = swz_bytes // es
    return TensorMap(dtype=dtype, rank=5, global_address=0,
                     global_dims=(swz, rows, -(-cols // swz), 1, 1),
                     global_strides=(cols * es, swz_bytes, rows * cols * es, rows * cols * es),
                     box_dims=(swz, tile_rows, tile_cols // swz, 1, 1), element_strides=(1,) * 5,
                     swizzle=f"{swz_bytes}B", array=arr)


fields, offs = [], []
for k, (arr, tm) in enumerate(((A, tk_map(A, "UINT8", 1, 128, 256, 128)), (B, tk_map(B, "UINT8", 1, 32, 256, 128)),
                               (D, tk_map(D, "BFLOAT16", 2, 128, 32, 64)))):
    fields += [Pointer(arr), u64(arr.shape[0]), u64(arr.shape[1]), tm]
    offs += [384 * k, 384 * k + 16, 384 * k + 24, 384 * k + 128]
g = Struct(*fields, offsets=offs, size=1152)
ptx = open(HELDOUT + "/ptx/tk_fp8_b200.sm_100a.ptx").read()
kern = "_Z6kernelI6configILi256ELi64ELi256ELi4ELb1ELi5ELi2EEEv7globalsIT_E"
smem = 32768 * 5 + 8192 * 5 + 8192 * 2 + 1024
t = time.time()
res = run_launch(Launch(ptx=ptx, kernel=kern, grid=(M // 128 * (N // 64), 1, 1), block=(256, 1, 1), cluster=(2, 1, 1),
                        dynamic_smem=smem, args=[g]))
out = res.outputs[0][2].view(ml_dtypes.bfloat16).astype(np.float64)
a = A.view(ml_dtypes.float8_e4m3fn).astype(np.float64); b = B.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
ref = (a @ b.T).astype(ml_dtypes.bfloat16).astype(np.float64)
print(f"M={M} N={N} K={K} {time.time() - t:.1f}s findings {len(res.findings)}")
print("RESULT:", "correct" if np.array_equal(out, ref) else f"WRONG ({int(np.sum(out != ref))} of {ref.size} differ)")
from collections import Counter
print(Counter((f.cls, f.severity, f.message[:150]) for f in res.findings).most_common(4))
if res.findings:
    print(res.findings[0].format())
for f in res.findings:
    if f.cls == 10:
        print(f.format()); break
