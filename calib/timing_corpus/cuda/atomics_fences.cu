// Histograms with atomics of each memory ordering and scope, and fences at each scope (one CTA).  The atomics
// are written as inline PTX so that each kernel carries exactly the ordering/scope its name says.
#include <cstdint>

#define HIST_KERNEL(NAME, SPACE_PTR, ATOM)                                                            \
extern "C" __global__ void NAME(const unsigned *x, unsigned *bins, int n) {                            \
    for (int i = threadIdx.x; i < n; i += blockDim.x) {                                               \
        unsigned *p = bins + (x[i] & 63u);                                                            \
        unsigned old;                                                                                 \
        asm volatile(ATOM " %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");                          \
    }                                                                                                 \
}

HIST_KERNEL(hist_atom_relaxed_gpu, , "atom.relaxed.gpu.global.add.u32")
HIST_KERNEL(hist_atom_acquire_gpu, , "atom.acquire.gpu.global.add.u32")
HIST_KERNEL(hist_atom_release_gpu, , "atom.release.gpu.global.add.u32")
HIST_KERNEL(hist_atom_acq_rel_gpu, , "atom.acq_rel.gpu.global.add.u32")
HIST_KERNEL(hist_atom_relaxed_cta, , "atom.relaxed.cta.global.add.u32")
HIST_KERNEL(hist_atom_acq_rel_cta, , "atom.acq_rel.cta.global.add.u32")
HIST_KERNEL(hist_atom_relaxed_sys, , "atom.relaxed.sys.global.add.u32")
HIST_KERNEL(hist_atom_acq_rel_sys, , "atom.acq_rel.sys.global.add.u32")

// red (no return value): what atomicAdd compiles to when the result is unused
extern "C" __global__ void hist_red_global(const unsigned *x, unsigned *bins, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(bins + (x[i] & 63u), 1u);
}

extern "C" __global__ void hist_smem_then_global(const unsigned *x, unsigned *bins, int n) {
    __shared__ unsigned h[64];
    if (threadIdx.x < 64) h[threadIdx.x] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(&h[x[i] & 63u], 1u);
    __syncthreads();
    if (threadIdx.x < 64) atomicAdd(bins + threadIdx.x, h[threadIdx.x]);
}

extern "C" __global__ void hist_smem_acq_rel(const unsigned *x, unsigned *bins, int n) {
    __shared__ unsigned h[64];
    if (threadIdx.x < 64) h[threadIdx.x] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        unsigned old;
        unsigned a = (unsigned)__cvta_generic_to_shared(&h[x[i] & 63u]);
        asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;" : "=r"(old) : "r"(a) : "memory");
    }
    __syncthreads();
    if (threadIdx.x < 64) bins[threadIdx.x] = h[threadIdx.x];
}

extern "C" __global__ void atomic_cas_counter(unsigned *counter, unsigned *order, int iters) {
    // every thread increments one counter iters times with a CAS loop; records the last value it saw
    unsigned last = 0;
    for (int k = 0; k < iters; ++k) {
        unsigned old = *(volatile unsigned *)counter, assumed;
        do {
            assumed = old;
            old = atomicCAS(counter, assumed, assumed + 1);
        } while (old != assumed);
        last = old;
    }
    order[threadIdx.x] = last < (unsigned)(iters * blockDim.x) ? 1u : 0u;
}

#define FENCE_KERNEL(NAME, FENCE)                                                                     \
extern "C" __global__ void NAME(unsigned *buf, int iters) {                                           \
    unsigned v = threadIdx.x;                                                                         \
    for (int k = 0; k < iters; ++k) {                                                                 \
        buf[threadIdx.x] = v;                                                                         \
        asm volatile(FENCE ";" ::: "memory");                                                         \
        v = v * 1664525u + 1013904223u;                                                               \
    }                                                                                                 \
    buf[blockDim.x + threadIdx.x] = v;                                                                \
}

FENCE_KERNEL(fence_sc_cta, "fence.sc.cta")
FENCE_KERNEL(fence_acq_rel_cta, "fence.acq_rel.cta")
FENCE_KERNEL(fence_sc_gpu, "fence.sc.gpu")
FENCE_KERNEL(fence_acq_rel_gpu, "fence.acq_rel.gpu")
FENCE_KERNEL(fence_sc_sys, "fence.sc.sys")
FENCE_KERNEL(fence_acq_rel_sys, "fence.acq_rel.sys")

extern "C" __global__ void flag_handoff_release_acquire(unsigned *data, unsigned *flag, unsigned *out, int iters) {
    // warp 0 publishes a value with st.release, warp 1 spins with ld.acquire and reads it, iters rounds
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned acc = 0;
    for (int k = 1; k <= iters; ++k) {
        if (warp == 0) {
            if (lane == 0) {
                data[0] = k * 7u;
                asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(flag), "r"((unsigned)k) : "memory");
            }
        } else {
            unsigned f;
            do {
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(flag) : "memory");
            } while (f < (unsigned)k);
            acc += *(volatile unsigned *)data;
        }
        __syncthreads();
    }
    if (warp == 1) out[lane] = acc;
}
