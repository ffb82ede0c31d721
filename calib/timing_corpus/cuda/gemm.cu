// GEMMs of several styles (one CTA): SIMT (naive, SMEM-tiled, register-blocked), ldmatrix + mma.sync (plain
// loads / cp.async double buffering), wgmma from SMEM descriptors.
#include <cstdint>
#include <cuda_fp16.h>

extern "C" __global__ void sgemm_naive(const float *A, const float *B, float *C, int n) {
    for (int idx = threadIdx.x; idx < n * n; idx += blockDim.x) {
        int i = idx / n, j = idx % n;
        float s = 0.f;
        for (int k = 0; k < n; ++k) s += A[i * n + k] * B[k * n + j];
        C[idx] = s;
    }
}

extern "C" __global__ void sgemm_smem_tiled(const float *A, const float *B, float *C, int n) {
    // block (16, 16); every 16x16 output tile in turn, K in 16-wide SMEM tiles
    __shared__ float sa[16][16], sb[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    for (int bi = 0; bi < n; bi += 16)
        for (int bj = 0; bj < n; bj += 16) {
            float s = 0.f;
            for (int k0 = 0; k0 < n; k0 += 16) {
                sa[ty][tx] = A[(bi + ty) * n + k0 + tx];
                sb[ty][tx] = B[(k0 + ty) * n + bj + tx];
                __syncthreads();
#pragma unroll
                for (int k = 0; k < 16; ++k) s += sa[ty][k] * sb[k][tx];
                __syncthreads();
            }
            C[(bi + ty) * n + bj + tx] = s;
        }
}

extern "C" __global__ void sgemm_regblock_4x4(const float *A, const float *B, float *C, int K) {
    // C[64x64] = A[64xK] B[Kx64], 256 threads, 4x4 outputs each, K in 16-wide SMEM tiles
    __shared__ float sa[16][64 + 4], sb[16][64];
    int t = threadIdx.x, r0 = (t / 16) * 4, c0 = (t % 16) * 4;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = t; i < 1024; i += 256) {
            int m = i / 16, k = i % 16;
            sa[k][m] = A[m * K + k0 + k];
            sb[i / 64][i % 64] = B[(k0 + i / 64) * 64 + i % 64];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            float a[4], b[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) { a[u] = sa[k][r0 + u]; b[u] = sb[k][c0 + u]; }
#pragma unroll
            for (int u = 0; u < 4; ++u)
#pragma unroll
                for (int v = 0; v < 4; ++v) acc[u][v] += a[u] * b[v];
        }
        __syncthreads();
    }
    for (int u = 0; u < 4; ++u)
        for (int v = 0; v < 4; ++v) C[(r0 + u) * 64 + c0 + v] = acc[u][v];
}

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// C[64x64] f32 = A[64xK] f16 (row-major) * Bt[64xK] f16 (B transposed), 4 warps, warp w rows 16w..16w+15.
// K-slices of 32 staged in SMEM (row pitch 40 halves: ldmatrix rows spread over the banks).
template <bool CPASYNC>
__device__ void hgemm_body(const __half *A, const __half *Bt, float *C, int K) {
    __shared__ alignas(128) __half sa[2][64][40], sb[2][64][40];
    int t = threadIdx.x, lane = t & 31, w = t >> 5;
    float acc[8][4] = {};
    auto stage = [&](int buf, int k0) {
        for (int i = t; i < 64 * 4; i += 128) {       // 64 rows x 4 chunks of 8 halves (16 B)
            int r = i >> 2, c = (i & 3) * 8;
            if (CPASYNC) {
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_u32(&sa[buf][r][c])),
                             "l"(A + r * K + k0 + c) : "memory");
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_u32(&sb[buf][r][c])),
                             "l"(Bt + r * K + k0 + c) : "memory");
            } else {
                *reinterpret_cast<int4 *>(&sa[buf][r][c]) = *reinterpret_cast<const int4 *>(A + r * K + k0 + c);
                *reinterpret_cast<int4 *>(&sb[buf][r][c]) = *reinterpret_cast<const int4 *>(Bt + r * K + k0 + c);
            }
        }
        if (CPASYNC) asm volatile("cp.async.commit_group;" ::: "memory");
    };
    int nk = K / 32;
    stage(0, 0);
    for (int kt = 0; kt < nk; ++kt) {
        int buf = CPASYNC ? (kt & 1) : 0;
        if (CPASYNC) {
            if (kt + 1 < nk) { stage(buf ^ 1, (kt + 1) * 32); asm volatile("cp.async.wait_group 1;" ::: "memory"); }
            else asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < 32; ks += 16) {
            uint32_t a[4];
            int m = lane >> 3, rr = lane & 7;
            ldsm_x4(a, smem_u32(&sa[buf][w * 16 + (m & 1) * 8 + rr][ks + (m >> 1) * 8]));
#pragma unroll
            for (int nb = 0; nb < 64; nb += 16) {
                uint32_t b[4];
                ldsm_x4(b, smem_u32(&sb[buf][nb + (m >> 1) * 8 + rr][ks + (m & 1) * 8]));
                mma16816(acc[nb / 8], a, b[0], b[1]);
                mma16816(acc[nb / 8 + 1], a, b[2], b[3]);
            }
        }
        __syncthreads();
        if (!CPASYNC && kt + 1 < nk) stage(0, (kt + 1) * 32);
    }
    int row = w * 16 + (lane >> 2), col = (lane & 3) * 2;
    for (int j = 0; j < 8; ++j) {
        C[row * 64 + j * 8 + col] = acc[j][0];
        C[row * 64 + j * 8 + col + 1] = acc[j][1];
        C[(row + 8) * 64 + j * 8 + col] = acc[j][2];
        C[(row + 8) * 64 + j * 8 + col + 1] = acc[j][3];
    }
}

extern "C" __global__ void __launch_bounds__(128) hgemm_mma_sync_ldmatrix(const __half *A, const __half *Bt, float *C, int K) {
    hgemm_body<false>(A, Bt, C, K);
}

extern "C" __global__ void __launch_bounds__(128) hgemm_mma_sync_cpasync(const __half *A, const __half *Bt, float *C, int K) {
    hgemm_body<true>(A, Bt, C, K);
}

// wgmma m64n64k16 f32 += f16 * f16 with both operands K-major in SMEM, no swizzle: core matrices of 8 rows x
// 16 B stored contiguously, [row block][k block][8][8] (leading byte offset 128 between the two k blocks,
// stride byte offset 256 between row blocks).  One warpgroup, C[64x64] = A[64xK] Bt[64xK]^T.
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr) {
    return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)(128 >> 4) << 16) | ((uint64_t)(256 >> 4) << 32);
}

extern "C" __global__ void __launch_bounds__(128) hgemm_wgmma_smem(const __half *A, const __half *Bt, float *C, int K) {
    __shared__ alignas(256) __half sa[64 * 16], sb[64 * 16];
    int t = threadIdx.x;
    float d[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) d[i] = 0.f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = t; i < 64 * 2; i += 128) {            // one 8-half chunk per (row, k block)
            int r = i >> 1, kb = i & 1;
            int off = ((r >> 3) * 2 + kb) * 64 + (r & 7) * 8;
            *reinterpret_cast<int4 *>(&sa[off]) = *reinterpret_cast<const int4 *>(A + r * K + k0 + kb * 8);
            *reinterpret_cast<int4 *>(&sb[off]) = *reinterpret_cast<const int4 *>(Bt + r * K + k0 + kb * 8);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        uint64_t da = wg_desc(smem_u32(sa)), db = wg_desc(smem_u32(sb));
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
            "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
            "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncthreads();
    }
    int lane = t & 31, w = t >> 5, row = w * 16 + (lane >> 2), col = (lane & 3) * 2;
    for (int j = 0; j < 8; ++j) {
        C[row * 64 + j * 8 + col] = d[4 * j];
        C[row * 64 + j * 8 + col + 1] = d[4 * j + 1];
        C[(row + 8) * 64 + j * 8 + col] = d[4 * j + 2];
        C[(row + 8) * 64 + j * 8 + col + 1] = d[4 * j + 3];
    }
}
