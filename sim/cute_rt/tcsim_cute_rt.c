/* A stand-in for CuTe DSL's libcute_dsl_runtime.so (selected with CUTE_DSL_LIBS) used by tcsim.cute.
 *
 * The host code CuTe DSL JIT-compiles calls these entry points to load its kernels, size their shared memory,
 * encode TMA descriptors and launch.  Here no GPU is touched: library/kernel loads return handles naming the
 * kernel, device attributes are those of the simulated device, and every launch and tensor-map encode is handed
 * to a callback that tcsim.cute installs (it reads the launch shape and the parameter bytes and runs the PTX in
 * tcsim).  The structure layouts used are those of the CUDA runtime/driver API headers (cudaLaunchConfig_t,
 * cudaLaunchAttribute, CUtensorMap of 128 bytes).  Entry points the recorder does not implement return
 * cudaErrorNotSupported (801), which the DSL reports as a CUDA error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define NOT_SUPPORTED 801

typedef int (*tcsim_launch_cb)(const char *kernel, const uint32_t *grid, const uint32_t *block, uint64_t smem,
                               const uint32_t *cluster, void **args);
typedef int (*tcsim_tmap_cb)(void *map, int dtype, uint32_t rank, void *gaddr, const uint64_t *dims,
                             const uint64_t *strides, const uint32_t *box, const uint32_t *estrides, int interleave,
                             int swizzle, int l2, int oob);

static tcsim_launch_cb g_launch;
static tcsim_tmap_cb g_tmap;
static int g_attr_ids[64], g_attr_vals[64], g_nattr;

EXPORT void tcsim_rt_set_callbacks(tcsim_launch_cb launch, tcsim_tmap_cb tmap) { g_launch = launch; g_tmap = tmap; }
EXPORT void tcsim_rt_set_attribute(int attr, int value) {
    for (int i = 0; i < g_nattr; i++)
        if (g_attr_ids[i] == attr) { g_attr_vals[i] = value; return; }
    if (g_nattr < 64) { g_attr_ids[g_nattr] = attr; g_attr_vals[g_nattr++] = value; }
}

/* ---- libraries and kernels: a kernel handle is its (heap-copied) name */
EXPORT int _cudaLibraryLoadData(void **library, const void *code, void *jit_opts, void *jit_vals, unsigned nj,
                                void *lib_opts, void *lib_vals, unsigned nl) {
    (void)code; (void)jit_opts; (void)jit_vals; (void)nj; (void)lib_opts; (void)lib_vals; (void)nl;
    *library = (void *)0x7c5e0001;
    return 0;
}
EXPORT int _cuLibraryLoadData(void **library, const void *code, void *a, void *b, unsigned c, void *d, void *e,
                              unsigned f) { return _cudaLibraryLoadData(library, code, a, b, c, d, e, f); }
EXPORT int _cudaLibraryGetKernel(void **kernel, void *library, const char *name) {
    (void)library;
    *kernel = strdup(name);
    return *kernel ? 0 : 2;
}
EXPORT int _cuLibraryGetKernel(void **kernel, void *library, const char *name) {
    return _cudaLibraryGetKernel(kernel, library, name);
}
EXPORT int _cudaLibraryUnload(void *library) { (void)library; return 0; }
EXPORT int _cuLibraryUnload(void *library) { (void)library; return 0; }

/* ---- device and kernel attributes */
EXPORT int _cudaGetDevice(int *dev) { *dev = 0; return 0; }
EXPORT int _cudaSetDevice(int dev) { return dev == 0 ? 0 : 101; }
EXPORT int _cudaGetDeviceCount(int *n) { *n = 1; return 0; }
EXPORT int _cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return ordinal == 0 ? 0 : 101; }
EXPORT int _cudaDeviceGetAttribute(int *value, int attr, int dev) {
    (void)dev;
    for (int i = 0; i < g_nattr; i++)
        if (g_attr_ids[i] == attr) { *value = g_attr_vals[i]; return 0; }
    return NOT_SUPPORTED;
}
/* static shared memory, registers, ... of a kernel: the PTX is run by tcsim, which sizes it itself */
EXPORT int _cuKernelGetAttribute(int *value, int attr, void *kernel, int dev) {
    (void)attr; (void)kernel; (void)dev;
    *value = 0;
    return 0;
}
EXPORT int _cudaFuncSetAttribute(void *fn, int attr, int value) { (void)fn; (void)attr; (void)value; return 0; }
EXPORT int _cudaKernelSetAttributeForDevice(void *k, int attr, int value, int dev) {
    (void)k; (void)attr; (void)value; (void)dev;
    return 0;
}
EXPORT int _cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *fn, int block, size_t smem) {
    (void)fn; (void)block; (void)smem;
    *n = 1;
    return 0;
}
EXPORT int _cudaDeviceSynchronize(void) { return 0; }
EXPORT int _cudaStreamSynchronize(void *s) { (void)s; return 0; }

/* ---- launches */
EXPORT int _cudaLaunchKernelEx(const void *config, const void *func, void **args) {
    const uint8_t *c = (const uint8_t *)config;
    uint32_t grid[3], block[3], cluster[3] = {1, 1, 1};
    uint64_t smem;
    const uint8_t *attrs;
    uint32_t nattrs;
    memcpy(grid, c, 12);
    memcpy(block, c + 12, 12);
    memcpy(&smem, c + 24, 8);
    memcpy(&attrs, c + 40, 8);
    memcpy(&nattrs, c + 48, 4);
    for (uint32_t i = 0; i < nattrs; i++) {
        const uint8_t *a = attrs + 72 * (size_t)i;   /* cudaLaunchAttribute: id, pad to 8, 64-byte value */
        int32_t id;
        memcpy(&id, a, 4);
        if (id == 4) memcpy(cluster, a + 8, 12);      /* cudaLaunchAttributeClusterDimension */
    }
    if (!g_launch) return NOT_SUPPORTED;
    return g_launch((const char *)func, grid, block, smem, cluster, args);
}
EXPORT int _cudaLaunchKernel(const void *func, uint64_t grid_xy, uint32_t grid_z, uint64_t block_xy, uint32_t block_z,
                             void **args, size_t smem, void *stream) {
    /* dim3 by value: x,y in one register, z in the next (System V x86-64 ABI for a 12-byte struct) */
    uint32_t grid[3] = {(uint32_t)grid_xy, (uint32_t)(grid_xy >> 32), grid_z};
    uint32_t block[3] = {(uint32_t)block_xy, (uint32_t)(block_xy >> 32), block_z};
    uint32_t cluster[3] = {1, 1, 1};
    (void)stream;
    if (!g_launch) return NOT_SUPPORTED;
    return g_launch((const char *)func, grid, block, smem, cluster, args);
}

/* ---- TMA descriptors: the callback records the encode and marks the 128 bytes */
EXPORT int _cuTensorMapEncodeTiled(void *map, int dtype, uint32_t rank, void *gaddr, const uint64_t *dims,
                                   const uint64_t *strides, const uint32_t *box, const uint32_t *estrides,
                                   int interleave, int swizzle, int l2, int oob) {
    if (!g_tmap) return NOT_SUPPORTED;
    return g_tmap(map, dtype, rank, gaddr, dims, strides, box, estrides, interleave, swizzle, l2, oob);
}

/* ---- everything else the real runtime exports: not available without a GPU */
#define UNSUPPORTED(name) EXPORT int name(void) { return NOT_SUPPORTED; }
UNSUPPORTED(_cuLibraryGetGlobal) UNSUPPORTED(_cuLibraryGetKernelCount) UNSUPPORTED(_cuLibraryGetManaged)
UNSUPPORTED(_cuLibraryGetModule) UNSUPPORTED(_cuLibraryGetUnifiedFunction) UNSUPPORTED(_cuLibraryLoadFromFile)
UNSUPPORTED(_cudaEventCreate) UNSUPPORTED(_cudaEventDestroy) UNSUPPORTED(_cudaEventElapsedTime)
UNSUPPORTED(_cudaEventRecord) UNSUPPORTED(_cudaFree) UNSUPPORTED(_cudaFreeAsync) UNSUPPORTED(_cudaFreeHost)
UNSUPPORTED(_cudaGetDeviceProperties) UNSUPPORTED(_cudaGraphDestroy) UNSUPPORTED(_cudaGraphExecDestroy)
UNSUPPORTED(_cudaGraphInstantiate) UNSUPPORTED(_cudaGraphLaunch) UNSUPPORTED(_cudaLibraryGetGlobal)
UNSUPPORTED(_cudaLibraryGetKernelCount) UNSUPPORTED(_cudaLibraryGetManaged) UNSUPPORTED(_cudaLibraryGetUnifiedFunction)
UNSUPPORTED(_cudaLibraryLoadFromFile) UNSUPPORTED(_cudaMalloc) UNSUPPORTED(_cudaMallocAsync)
UNSUPPORTED(_cudaMallocHost) UNSUPPORTED(_cudaMallocManaged) UNSUPPORTED(_cudaMemcpy) UNSUPPORTED(_cudaMemcpyAsync)
UNSUPPORTED(_cudaMemset) UNSUPPORTED(_cudaMemsetAsync) UNSUPPORTED(_cudaProfilerStart) UNSUPPORTED(_cudaProfilerStop)
UNSUPPORTED(_cudaStreamAddCallback) UNSUPPORTED(_cudaStreamBeginCapture) UNSUPPORTED(_cudaStreamCreate)
UNSUPPORTED(_cudaStreamDestroy) UNSUPPORTED(_cudaStreamEndCapture) UNSUPPORTED(_cudaStreamWaitEvent)

/* ---- helpers the DSL's cuda dialect lowering calls (experimental tensor-map API, library caching) */
EXPORT void cuda_dialect_assert_success(int result) { (void)result; }
EXPORT const char *cuda_dialect_get_error_name(int result) {
    return result == NOT_SUPPORTED ? "not supported by tcsim.cute's stand-in runtime" : "tcsim.cute stand-in error";
}
EXPORT void cuda_dialect_print_on_error(int result) { (void)result; }
