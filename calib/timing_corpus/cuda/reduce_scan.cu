// Reductions and scans (one CTA).  Part of the tcsim timing corpus (calib/timing_corpus); compiled by
// `python -m calib.timing_corpus build` with nvcc -ptx -O3 -arch=sm_90a.
#include <cstdint>

extern "C" __global__ void reduce_smem_tree(const float *x, float *out, int n) {
    __shared__ float s[256];
    float acc = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = s[0];
}

extern "C" __global__ void reduce_warp_shfl(const float *x, float *out, int n) {
    __shared__ float w[32];
    float acc = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < blockDim.x / 32 ? w[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
        if (threadIdx.x == 0) out[0] = acc;
    }
}

extern "C" __global__ void reduce_float4_unrolled(const float4 *x, float *out) {
    // fixed size: 256 threads x 4 float4 each (compile-time trip count: unrolled)
    __shared__ float w[8];
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        float4 v = x[threadIdx.x + 256 * k];
        acc += (v.x + v.y) + (v.z + v.w);
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int i = 0; i < 8; ++i) t += w[i];
        out[0] = t;
    }
}

extern "C" __global__ void reduce_smem_atomic(const int *x, int *out, int n) {
    __shared__ int total;
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    int acc = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
    atomicAdd(&total, acc);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = total;
}

extern "C" __global__ void reduce_max_int(const int *x, int *out, int n) {
    int m = -2147483647 - 1;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = max(m, x[i]);
    m = __reduce_max_sync(0xffffffffu, m);
    __shared__ int w[32];
    if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        int r = w[0];
        for (int i = 1; i < blockDim.x / 32; ++i) r = max(r, w[i]);
        out[0] = r;
    }
}

extern "C" __global__ void scan_hillis_steele(const int *x, int *y) {
    // inclusive scan of blockDim.x ints, double-buffered in SMEM
    __shared__ int buf[2][512];
    int t = threadIdx.x, p = 0;
    buf[0][t] = x[t];
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        int v = buf[p][t];
        if (t >= off) v += buf[p][t - off];
        buf[p ^ 1][t] = v;
        p ^= 1;
        __syncthreads();
    }
    y[t] = buf[p][t];
}

extern "C" __global__ void scan_warp_shfl(const int *x, int *y) {
    // inclusive scan of 4 * blockDim.x ints: per-thread serial, warp shuffle scan, block of warp totals
    __shared__ int wsum[32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    int4 v = reinterpret_cast<const int4 *>(x)[t];
    v.y += v.x; v.z += v.y; v.w += v.z;
    int s = v.w;
    for (int o = 1; o < 32; o <<= 1) {
        int u = __shfl_up_sync(0xffffffffu, s, o);
        if (lane >= o) s += u;
    }
    if (lane == 31) wsum[warp] = s;
    __syncthreads();
    if (warp == 0) {
        int w = lane < blockDim.x / 32 ? wsum[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            int u = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += u;
        }
        wsum[lane] = w;
    }
    __syncthreads();
    int base = s - v.w + (warp ? wsum[warp - 1] : 0);
    v.x += base; v.y += base; v.z += base; v.w += base;
    reinterpret_cast<int4 *>(y)[t] = v;
}

extern "C" __global__ void scan_blelloch(const int *x, int *y) {
    // exclusive work-efficient scan of 2 * blockDim.x ints
    __shared__ int s[1024];
    int t = threadIdx.x, n = 2 * blockDim.x;
    s[2 * t] = x[2 * t];
    s[2 * t + 1] = x[2 * t + 1];
    int off = 1;
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            int ai = off * (2 * t + 1) - 1, bi = off * (2 * t + 2) - 1;
            s[bi] += s[ai];
        }
        off <<= 1;
    }
    if (t == 0) s[n - 1] = 0;
    for (int d = 1; d < n; d <<= 1) {
        off >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = off * (2 * t + 1) - 1, bi = off * (2 * t + 2) - 1;
            int u = s[ai];
            s[ai] = s[bi];
            s[bi] += u;
        }
    }
    __syncthreads();
    y[2 * t] = s[2 * t];
    y[2 * t + 1] = s[2 * t + 1];
}

extern "C" __global__ void bitonic_sort_smem(const int *x, int *y) {
    // sorts 2 * blockDim.x ints ascending in SMEM
    __shared__ int s[1024];
    int t = threadIdx.x, n = 2 * blockDim.x;
    s[t] = x[t];
    s[t + blockDim.x] = x[t + blockDim.x];
    __syncthreads();
    for (int k = 2; k <= n; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = t; i < n; i += blockDim.x) {
                int l = i ^ j;
                if (l > i) {
                    int a = s[i], b = s[l];
                    bool up = (i & k) == 0;
                    if ((a > b) == up) { s[i] = b; s[l] = a; }
                }
            }
            __syncthreads();
        }
    }
    y[t] = s[t];
    y[t + blockDim.x] = s[t + blockDim.x];
}
