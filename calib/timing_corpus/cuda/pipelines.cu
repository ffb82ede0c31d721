// Asynchronous pipelines (one CTA): TMA tensor loads and 1-D bulk copies into an mbarrier ring, warp-specialised
// producer/consumer kernels (TMA producer, plain-load producer with named barriers).
#include <cstdint>
#include <cuda.h>

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile("{\n.reg .pred P1;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
                 "@!P1 bra WAIT_%=;\n}\n" :: "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}
__device__ __forceinline__ void bulk_load(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

// Sum of every column of a [rows x 64] f32 tensor: tiles of 32 x 64 (8 KB) through a STAGES-deep ring.
// Thread 0 of warp 0 produces (TMA); warps 1..4 consume (each thread one column, 32 rows per tile).
template <int STAGES>
__device__ void tma_ring_colsum(const CUtensorMap *map, float *out, int tiles) {
    extern __shared__ __align__(1024) float ring[];          // STAGES x 32 x 64 floats
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    int t = threadIdx.x, w = t >> 5;
    if (t == 0) {
        for (int s = 0; s < STAGES; ++s) { mbar_init(smem_u32(&full[s]), 1); mbar_init(smem_u32(&empty[s]), 4); }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (w == 0) {
        if (t == 0)
            for (int i = 0; i < tiles; ++i) {
                int s = i % STAGES;
                if (i >= STAGES) mbar_wait(smem_u32(&empty[s]), ((i / STAGES) - 1) & 1);
                mbar_expect_tx(smem_u32(&full[s]), 8192);
                tma_load_2d(smem_u32(ring + s * 2048), map, 0, i * 32, smem_u32(&full[s]));
            }
    } else {
        int c = t - 32;                                       // 0..127: column c & 63, rows half (c >> 6)
        float acc = 0.f;
        for (int i = 0; i < tiles; ++i) {
            int s = i % STAGES;
            mbar_wait(smem_u32(&full[s]), (i / STAGES) & 1);
            const float *tile = ring + s * 2048;
            for (int r = (c >> 6) * 16; r < (c >> 6) * 16 + 16; ++r) acc += tile[r * 64 + (c & 63)];
            __syncwarp();
            if ((t & 31) == 0) mbar_arrive(smem_u32(&empty[s]));
        }
        atomicAdd(out + (c & 63), acc);
    }
}

extern "C" __global__ void tma_ring_colsum_2stage(const __grid_constant__ CUtensorMap map, float *out, int tiles) {
    tma_ring_colsum<2>(&map, out, tiles);
}
extern "C" __global__ void tma_ring_colsum_4stage(const __grid_constant__ CUtensorMap map, float *out, int tiles) {
    tma_ring_colsum<4>(&map, out, tiles);
}

// y = 2x + 1 over n floats in chunks of `chunk` bytes: bulk copies (1-D) into a 2-stage ring, all 4 warps consume,
// thread 0 issues the next copy once the stage is free (no producer warp).
extern "C" __global__ void bulk_double_buffer_axpb(const float *x, float *y, int n, int chunk) {
    extern __shared__ __align__(128) float buf[];            // 2 x chunk bytes
    __shared__ __align__(8) uint64_t full[2];
    int t = threadIdx.x, per = chunk / 4, nch = n / per;
    if (t == 0) { mbar_init(smem_u32(&full[0]), 1); mbar_init(smem_u32(&full[1]), 1);
                  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
    __syncthreads();
    if (t == 0)
        for (int s = 0; s < 2 && s < nch; ++s) {
            mbar_expect_tx(smem_u32(&full[s]), chunk);
            bulk_load(smem_u32(buf + s * per), x + s * per, chunk, smem_u32(&full[s]));
        }
    for (int i = 0; i < nch; ++i) {
        int s = i & 1;
        mbar_wait(smem_u32(&full[s]), (i >> 1) & 1);
        for (int j = t; j < per; j += blockDim.x) y[i * per + j] = 2.f * buf[s * per + j] + 1.f;
        __syncthreads();
        if (t == 0 && i + 2 < nch) {
            mbar_expect_tx(smem_u32(&full[s]), chunk);
            bulk_load(smem_u32(buf + s * per), x + (i + 2) * per, chunk, smem_u32(&full[s]));
        }
    }
}

// Warp-specialised with named barriers: warp 0 loads 128-float tiles into a 2-slot SMEM ring with plain loads
// (bar.arrive to publish, bar.sync to wait for a free slot); warps 1..4 compute y = x*x for each tile.
extern "C" __global__ void ws_named_barrier_square(const float *x, float *y, int tiles) {
    __shared__ float slot[2][128];
    int t = threadIdx.x, w = t >> 5, lane = t & 31;
    // barrier 1+s: slot s full (producer arrives, consumers sync); 3+s: slot s empty (consumers arrive, producer syncs)
    if (w == 0) {
        for (int i = 0; i < tiles; ++i) {
            int s = i & 1;
            if (i >= 2) asm volatile("bar.sync %0, 160;" :: "r"(3 + s) : "memory");
            for (int k = lane; k < 128; k += 32) slot[s][k] = x[i * 128 + k];
            asm volatile("bar.arrive %0, 160;" :: "r"(1 + s) : "memory");
        }
    } else {
        int c = t - 32;
        for (int i = 0; i < tiles; ++i) {
            int s = i & 1;
            asm volatile("bar.sync %0, 160;" :: "r"(1 + s) : "memory");
            float v = slot[s][c];
            y[i * 128 + c] = v * v;
            if (i + 2 < tiles) asm volatile("bar.arrive %0, 160;" :: "r"(3 + s) : "memory");
        }
    }
}

// Producer/consumer through mbarriers with plain loads: warp 0 copies 256-float tiles into SMEM and arrives on
// full[s] (count 32); warps 1..2 wait, reduce the tile to one value per thread and arrive on empty[s] (count 64).
extern "C" __global__ void ws_mbarrier_plain_loads(const float *x, float *y, int tiles) {
    __shared__ float slot[2][256];
    __shared__ __align__(8) uint64_t full[2], empty[2];
    int t = threadIdx.x, w = t >> 5, lane = t & 31;
    if (t == 0) {
        for (int s = 0; s < 2; ++s) { mbar_init(smem_u32(&full[s]), 32); mbar_init(smem_u32(&empty[s]), 64); }
    }
    __syncthreads();
    if (w == 0) {
        for (int i = 0; i < tiles; ++i) {
            int s = i & 1;
            if (i >= 2) mbar_wait(smem_u32(&empty[s]), ((i >> 1) - 1) & 1);
            for (int k = lane; k < 256; k += 32) slot[s][k] = x[i * 256 + k];
            mbar_arrive(smem_u32(&full[s]));
        }
    } else {
        int c = t - 32;                                       // 0..63
        float acc = 0.f;
        for (int i = 0; i < tiles; ++i) {
            int s = i & 1;
            mbar_wait(smem_u32(&full[s]), (i >> 1) & 1);
            acc += slot[s][c] + slot[s][c + 64] + slot[s][c + 128] + slot[s][c + 192];
            mbar_arrive(smem_u32(&empty[s]));
        }
        y[c] = acc;
    }
}

// One TMA 2-D tile load, wait, then every thread scales its part and the tile goes back with a TMA store.
// `out_arr` is the array the output map writes (unused by the code: it makes the map's tensor a kernel argument).
extern "C" __global__ void tma_load_scale_store(const __grid_constant__ CUtensorMap in, const __grid_constant__ CUtensorMap out,
                                                float *out_arr, int tiles) {
    extern __shared__ __align__(1024) float tile[];          // 32 x 64 floats
    __shared__ __align__(8) uint64_t bar;
    int t = threadIdx.x;
    if (t == 0) { mbar_init(smem_u32(&bar), 1); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
    __syncthreads();
    for (int i = 0; i < tiles; ++i) {
        if (t == 0) { mbar_expect_tx(smem_u32(&bar), 8192); tma_load_2d(smem_u32(tile), &in, 0, i * 32, smem_u32(&bar)); }
        mbar_wait(smem_u32(&bar), i & 1);
        for (int k = t; k < 2048; k += blockDim.x) tile[k] = tile[k] * 3.f - 1.f;
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (t == 0) {
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                         :: "l"(&out), "r"(0), "r"(i * 32), "r"(smem_u32(tile)) : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        }
        __syncthreads();
    }
    if (t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
