// Loops with run-time trip counts, dependent global loads, transposes, stencils and streaming kernels (one CTA).
#include <cstdint>

extern "C" __global__ void chase_runtime_trip(const unsigned *next, unsigned *out, int steps) {
    // every thread follows its own chain through `next` (a permutation): one dependent global load per step,
    // the trip count known only at run time (ptxas cannot unroll it into independent loads)
    unsigned i = threadIdx.x;
    for (int k = 0; k < steps; ++k) i = next[i];
    out[threadIdx.x] = i;
}

extern "C" __global__ void chase_runtime_single_warp(const unsigned *next, unsigned *out, int steps) {
    unsigned i = threadIdx.x * 33u;
    for (int k = 0; k < steps; ++k) i = __ldcg(next + i);
    out[threadIdx.x] = i;
}

extern "C" __global__ void gather_indirect(const int *idx, const float *val, float *out, int n) {
    // out[t] = sum_k val[idx[t + k*blockDim]]: index load then dependent value load per iteration
    float acc = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += val[idx[i]];
    out[threadIdx.x] = acc;
}

extern "C" __global__ void loop_runtime_fma(const float *x, float *y, int iters) {
    float a = x[threadIdx.x], b = 1.0001f, c = 0.f;
    for (int k = 0; k < iters; ++k) { c = fmaf(a, b, c); a = fmaf(a, 0.999f, 0.001f); }
    y[threadIdx.x] = c;
}

extern "C" __global__ void loop_const_trip_loads(const float *x, float *y) {
    // compile-time trip count 16 with independent loads (ptxas unrolls and overlaps them)
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < 16; ++k) acc += x[threadIdx.x + k * 128];
    y[threadIdx.x] = acc;
}

extern "C" __global__ void loop_runtime_trip_loads(const float *x, float *y, int trips) {
    // the same loads with a run-time trip count: unrolled by 4 with a remainder loop
    float acc = 0.f;
    for (int k = 0; k < trips; ++k) acc += x[threadIdx.x + k * 128];
    y[threadIdx.x] = acc;
}

extern "C" __global__ void spmv_csr(const int *rowptr, const int *col, const float *val, const float *x,
                                    float *y, int rows) {
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        float acc = 0.f;
        for (int j = rowptr[r]; j < rowptr[r + 1]; ++j) acc += val[j] * x[col[j]];
        y[r] = acc;
    }
}

extern "C" __global__ void transpose_naive(const float *a, float *b, int n) {
    // n x n, block (32, 8): thread (tx, ty) moves column tx of rows ty, ty+8, ...
    for (int r = threadIdx.y; r < n; r += blockDim.y)
        for (int c = threadIdx.x; c < n; c += blockDim.x) b[c * n + r] = a[r * n + c];
}

template <int PAD>
__device__ void transpose_tiles(const float *a, float *b, int n) {
    __shared__ float t[32][32 + PAD];
    for (int by = 0; by < n; by += 32)
        for (int bx = 0; bx < n; bx += 32) {
            for (int j = threadIdx.y; j < 32; j += blockDim.y) t[j][threadIdx.x] = a[(by + j) * n + bx + threadIdx.x];
            __syncthreads();
            for (int j = threadIdx.y; j < 32; j += blockDim.y) b[(bx + j) * n + by + threadIdx.x] = t[threadIdx.x][j];
            __syncthreads();
        }
}

extern "C" __global__ void transpose_smem_nopad(const float *a, float *b, int n) { transpose_tiles<0>(a, b, n); }
extern "C" __global__ void transpose_smem_pad(const float *a, float *b, int n) { transpose_tiles<1>(a, b, n); }

extern "C" __global__ void transpose_smem_swizzle(const float *a, float *b, int n) {
    __shared__ float t[32][32];
    for (int by = 0; by < n; by += 32)
        for (int bx = 0; bx < n; bx += 32) {
            for (int j = threadIdx.y; j < 32; j += blockDim.y)
                t[j][threadIdx.x ^ j] = a[(by + j) * n + bx + threadIdx.x];
            __syncthreads();
            for (int j = threadIdx.y; j < 32; j += blockDim.y)
                b[(bx + j) * n + by + threadIdx.x] = t[threadIdx.x][j ^ threadIdx.x];
            __syncthreads();
        }
}

extern "C" __global__ void stencil1d_smem(const float *x, float *y, int n) {
    // radius-3 stencil over n points, tiles of blockDim.x with halos in SMEM
    __shared__ float s[256 + 6];
    for (int base = 0; base < n; base += blockDim.x) {
        int g = base + threadIdx.x;
        s[threadIdx.x + 3] = x[g];
        if (threadIdx.x < 3) {
            s[threadIdx.x] = g - 3 >= 0 ? x[g - 3] : 0.f;
            s[threadIdx.x + blockDim.x + 3] = g + blockDim.x < n ? x[g + blockDim.x] : 0.f;
        }
        __syncthreads();
        float r = 0.f;
#pragma unroll
        for (int k = -3; k <= 3; ++k) r += s[threadIdx.x + 3 + k] * (k == 0 ? 0.5f : 0.125f / (k < 0 ? -k : k));
        y[g] = r;
        __syncthreads();
    }
}

extern "C" __global__ void stencil2d_5pt_global(const float *x, float *y, int n) {
    for (int i = threadIdx.y + 1; i < n - 1; i += blockDim.y)
        for (int j = threadIdx.x + 1; j < n - 1; j += blockDim.x)
            y[i * n + j] = 0.5f * x[i * n + j] + 0.125f * (x[(i - 1) * n + j] + x[(i + 1) * n + j] +
                                                          x[i * n + j - 1] + x[i * n + j + 1]);
}

extern "C" __global__ void stencil2d_smem_tile(const float *x, float *y) {
    // one 32x32 interior tile of a 34x34 grid, block (32, 8): the tile with its halo staged in SMEM
    __shared__ float s[34][34];
    for (int i = threadIdx.y; i < 34; i += blockDim.y)
        for (int j = threadIdx.x; j < 34; j += blockDim.x) s[i][j] = x[i * 34 + j];
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += blockDim.y) {
        int j = threadIdx.x;
        y[i * 32 + j] = 0.5f * s[i + 1][j + 1] + 0.125f * (s[i][j + 1] + s[i + 2][j + 1] + s[i + 1][j] + s[i + 1][j + 2]);
    }
}

extern "C" __global__ void saxpy_gridstride(const float *x, float *y, float a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void copy_float4(const float4 *x, float4 *y, int n4) {
    for (int i = threadIdx.x; i < n4; i += blockDim.x) y[i] = x[i];
}

extern "C" __global__ void copy_ldg_nc(const float *__restrict__ x, float *__restrict__ y, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = __ldg(x + i) * 2.0f;
}

extern "C" __global__ void strided_load_uncoalesced(const float *x, float *y, int stride, int reps) {
    // each lane reads words `stride` apart (one sector per lane)
    float acc = 0.f;
    for (int r = 0; r < reps; ++r) acc += x[(threadIdx.x * stride + r * 32 * stride) & 65535];
    y[threadIdx.x] = acc;
}

extern "C" __global__ void local_array_dynamic_index(const int *sel, int *out) {
    // a per-thread array indexed at run time lives in local memory
    int a[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) a[k] = k * (threadIdx.x + 1);
    int s = 0;
    for (int k = 0; k < 16; ++k) s += a[(sel[threadIdx.x] + k * 7) & 31];
    out[threadIdx.x] = s;
}

extern "C" __global__ void smem_bank_stride(const int *x, int *y, int stride, int reps) {
    // SMEM reads with a run-time word stride between lanes (stride 1: no conflicts; 32: 32-way)
    __shared__ int s[4096];
    for (int i = threadIdx.x; i < 4096; i += blockDim.x) s[i] = x[i];
    __syncthreads();
    int acc = 0, lane = threadIdx.x & 31;
    for (int r = 0; r < reps; ++r) acc += s[(lane * stride + r + (threadIdx.x >> 5)) & 4095];
    y[threadIdx.x] = acc;
}
