"""The seed's Gluon kernel (Triton's Gluon tutorial "Native TMA Gather and Scatter", /work/shared/seeds: the
``matmul_fused_gather_scatter_kernel``), ``out[scatter_idx] = X[gather_idx] @ W`` in bf16 with f32 accumulation,
compiled by Triton (3.9, on the CPU, no GPU) for sm_100a and run in tcsim -- issue 18's "Gluon fused kernel"
benchmark at the tutorial's test size M, N, K = 1024, 1024, 2048 (BLOCK 128 x 128 x 64, three load buffers).

The kernel body is the tutorial's: TMA gathers of the X rows (``tma.async_gather``) and TMA loads of W tiles into a
multi-buffered ring on mbarriers, ``tcgen05_mma`` into tensor memory with one MMA in flight, the accumulator read
back, converted to bf16, staged in SMEM and scattered with ``tma.async_scatter``, over a persistent, grouped tile
loop.  The tutorial takes two helpers from its "persistence" chapter (``t7.MMAv5``, ``t7.GroupedPersistentTileScheduler``)
that the seed does not show; they are written here from what the kernel uses of them: an MMA in tensor memory
with a completion mbarrier (issue / wait for the outstanding one / take the result) and a grouped tile order over a
persistent grid (GROUP_SIZE_M rows of tiles per group, tiles strided by the number of programs).

:func:`make_launch` compiles the kernel with :mod:`tcsim.triton` (needs Triton with Gluon) and returns the
prepared :class:`tcsim.launch.Launch`; :func:`check` compares the output with the numpy reference: every element
within 2^-14 (|A| @ |B|) plus half a bf16 ulp of the float64 product, rows scattered to exactly where the indices
say (the tutorial's test compares with ``assert_close(atol=1e-3, rtol=1e-3)``).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

import triton
import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (TensorMemoryLayout, allocate_tensor_memory,
                                                                 fence_async_shared, mbarrier, tcgen05_commit,
                                                                 tcgen05_mma, tma)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

NUM_SMS = 148                      # a B200's multiprocessors: the persistent grid is min(NUM_SMS, tiles)
GROUP_SIZE_M = 8


@gluon.jit
def _tile(idx, M, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, GROUP_M: gl.constexpr):
    """Tile ``idx`` of this program in the grouped persistent order: (pid_m, pid_n)."""
    tile_id = gl.program_id(0) + idx * gl.num_programs(0)
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (tile_id // in_group) * GROUP_M
    # (at least 1: the kernel also asks for the tile after its last one, whose group may lie past the last row of
    # tiles -- a remainder by zero there, which PTX leaves unspecified; that tile's loads are predicated off)
    size_m = gl.maximum(gl.minimum(num_pid_m - first_m, GROUP_M), 1)
    pid_m = first_m + (tile_id % in_group) % size_m
    pid_n = (tile_id % in_group) // size_m
    return pid_m, pid_n


@gluon.jit
def issue_loads(producer, X_desc, W_desc, X_gather_indx_ptr, off_m, off_n, k, bars, x_bufs, w_bufs,
                BLOCK_M: gl.constexpr, num_buffers: gl.constexpr, pred=True):
    gather_indx_layout: gl.constexpr = gl.SliceLayout(0, gl.BlockedLayout([1, 4], [32, 1], [1, gl.num_warps()],
                                                                          [1, 0]))
    offs_x_m = gl.load(X_gather_indx_ptr + off_m + gl.arange(0, BLOCK_M, gather_indx_layout))
    index = producer % num_buffers
    producer += 1
    bar = bars.index(index)
    mbarrier.expect(bar, W_desc.block_type.nbytes + BLOCK_M * X_desc.block_type.nbytes)
    tma.async_gather(X_desc, offs_x_m, k, bar, x_bufs.index(index), pred)
    tma.async_load(W_desc, [k, off_n], bar, w_bufs.index(index), pred)
    return producer


@gluon.jit
def issue_mma(consumer, mma_count, acc, mma_bar, bars, x_bufs, w_bufs, num_buffers: gl.constexpr):
    """Wait for the slot's loads and for the MMA in flight, then issue this slot's MMA (accumulating after the
    tile's first) with its commit on ``mma_bar``."""
    index = consumer % num_buffers
    phase = consumer // num_buffers & 1
    consumer += 1
    mbarrier.wait(bars.index(index), phase)
    mbarrier.wait(mma_bar, (mma_count - 1) & 1, pred=mma_count > 0)
    tcgen05_mma(x_bufs.index(index), w_bufs.index(index), acc, use_acc=True)
    tcgen05_commit(mma_bar)
    return consumer, mma_count + 1


@gluon.jit
def matmul_fused_gather_scatter_kernel(X_desc, W_desc, out_desc, X_gather_indx_ptr, out_scatter_indx_ptr,
                                       BLOCK_M: gl.constexpr, GROUP_M: gl.constexpr, num_buffers: gl.constexpr):
    BLOCK_N: gl.constexpr = W_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = W_desc.block_type.shape[0]
    dtype: gl.constexpr = X_desc.dtype
    M = X_desc.shape[0]
    N = W_desc.shape[1]
    K = X_desc.shape[1]

    x_bufs = gl.allocate_shared_memory(dtype, [num_buffers, BLOCK_M, BLOCK_K], X_desc.layout)
    w_bufs = gl.allocate_shared_memory(dtype, [num_buffers, BLOCK_K, BLOCK_N], W_desc.layout)
    out_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, BLOCK_N], out_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [num_buffers, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(num_buffers):
        mbarrier.init(bars.index(i), count=1)
    mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(mma_bar, count=1)
    producer = 0
    consumer = 0
    mma_count = 0

    tmem_layout: gl.constexpr = TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1)
    acc = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], tmem_layout)
    num_tiles = gl.cdiv(gl.cdiv(M, BLOCK_M) * gl.cdiv(N, BLOCK_N) - gl.program_id(0), gl.num_programs(0))

    idx = 0
    pid_m, pid_n = _tile(idx, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    for ki in gl.static_range(0, BLOCK_K * (num_buffers - 2), BLOCK_K):
        producer = issue_loads(producer, X_desc, W_desc, X_gather_indx_ptr, off_m, off_n, ki, bars, x_bufs, w_bufs,
                               BLOCK_M, num_buffers)
    k = BLOCK_K * (num_buffers - 2)
    producer = issue_loads(producer, X_desc, W_desc, X_gather_indx_ptr, off_m, off_n, k, bars, x_bufs, w_bufs,
                           BLOCK_M, num_buffers)

    for _ in range(num_tiles):
        # the tile's first MMA overwrites the accumulator (use_acc False), the others accumulate
        index = consumer % num_buffers
        mbarrier.wait(bars.index(index), consumer // num_buffers & 1)
        consumer += 1
        mbarrier.wait(mma_bar, (mma_count - 1) & 1, pred=mma_count > 0)
        tcgen05_mma(x_bufs.index(index), w_bufs.index(index), acc, use_acc=False)
        tcgen05_commit(mma_bar)
        mma_count += 1
        for k in range(BLOCK_K * (num_buffers - 1), K, BLOCK_K):
            producer = issue_loads(producer, X_desc, W_desc, X_gather_indx_ptr, off_m, off_n, k, bars, x_bufs,
                                   w_bufs, BLOCK_M, num_buffers)
            consumer, mma_count = issue_mma(consumer, mma_count, acc, mma_bar, bars, x_bufs, w_bufs, num_buffers)

        epilogue_off_m = off_m
        epilogue_off_n = off_n
        scatter_indx_layout: gl.constexpr = gl.SliceLayout(
            0, gl.BlockedLayout([1, 4], [32, 1], [1, gl.num_warps()], [1, 0]))
        out_offs_m = gl.load(out_scatter_indx_ptr + epilogue_off_m + gl.arange(0, BLOCK_M, scatter_indx_layout))

        idx += 1
        pid_m, pid_n = _tile(idx, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        pred = idx < num_tiles
        for ki in gl.static_range(0, BLOCK_K * (num_buffers - 2), BLOCK_K):
            producer = issue_loads(producer, X_desc, W_desc, X_gather_indx_ptr, off_m, off_n, ki, bars, x_bufs,
                                   w_bufs, BLOCK_M, num_buffers, pred)
            consumer, mma_count = issue_mma(consumer, mma_count, acc, mma_bar, bars, x_bufs, w_bufs, num_buffers)
        k = BLOCK_K * (num_buffers - 2)
        producer = issue_loads(producer, X_desc, W_desc, X_gather_indx_ptr, off_m, off_n, k, bars, x_bufs, w_bufs,
                               BLOCK_M, num_buffers, pred)

        mbarrier.wait(mma_bar, (mma_count - 1) & 1)
        out = acc.load().to(dtype)
        tma.store_wait(pendings=0)
        out_smem.store(out)
        fence_async_shared()
        tma.async_scatter(out_desc, out_offs_m, epilogue_off_n, out_smem)
    tma.store_wait(pendings=0)


def make_launch(M: int = 1024, N: int = 1024, K: int = 2048, BLOCK_M: int = 128, BLOCK_N: int = 128,
                BLOCK_K: int = 64, num_buffers: int = 3, seed: int = 0):
    """The tutorial's test at (M, N, K): permuted gather and scatter indices, normal bf16 X and W.  Returns the
    prepared :class:`tcsim.triton.TritonLaunch` (``.launch`` is the Launch; its arrays are the inputs)."""
    import tcsim.triton as tt

    rng = np.random.default_rng(seed)
    gidx = rng.permutation(M).astype(np.int32)
    sidx = rng.permutation(M).astype(np.int32)
    X = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    W = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    out = np.zeros((M, N), dtype=ml_dtypes.bfloat16)
    bf = gl.bfloat16
    x_desc = _desc(X, [1, BLOCK_K], gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], bf))
    w_desc = _desc(W, [BLOCK_K, BLOCK_N], gl.NVMMASharedLayout.get_default_for([BLOCK_K, BLOCK_N], bf))
    o_desc = _desc(out, [1, BLOCK_N], gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_N], bf))
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    grid = (min(NUM_SMS, tiles),)
    # the kernel loads the gather indices of the tile after its last one (an unpredicated gl.load; only the TMA
    # gather it feeds is predicated off), BLOCK_M entries from row M on when that tile lies beyond M (_tile's first
    # row of the next group): tcsim faults on that read (on a GPU it lands in the allocation's slack), so the index
    # buffer carries BLOCK_M entries of slack here -- the kernel takes M from X's descriptor and never uses them
    gidx_buf = np.concatenate([gidx, np.zeros(BLOCK_M, np.int32)])
    prep = tt.prepare(matmul_fused_gather_scatter_kernel, grid, x_desc, w_desc, o_desc, gidx_buf, sidx, BLOCK_M,
                      GROUP_SIZE_M, num_buffers, arch="sm_100a", num_warps=4)
    prep.inputs = (X, W, gidx, sidx, out)
    return prep


def _desc(arr, block, layout):
    from tcsim.triton import HostArray
    base = HostArray(arr)
    return TensorDescriptor(base, list(arr.shape), list(base.stride()), block, layout)


def check(result, prep):
    """(ok, message) of a run of :func:`make_launch`'s launch."""
    X, W, gidx, sidx, out0 = prep.inputs
    prep.write_back(result)
    got = out0.astype(np.float64)
    x64, w64 = X.astype(np.float64)[gidx], W.astype(np.float64)
    want = np.zeros_like(got)
    want[sidx] = x64 @ w64
    bound = np.zeros_like(got)
    bound[sidx] = 2.0 ** -14 * (np.abs(x64) @ np.abs(w64))
    bound += np.abs(want) * 2.0 ** -8 + 1e-30              # half a bf16 ulp of the rounded output
    err = np.abs(got - want)
    if (err > bound).any():
        r, c = np.unravel_index(int((err / bound).argmax()), err.shape)
        return False, f"out[{r}][{c}] = {got[r, c]!r}, float64 reference {want[r, c]!r} (bound {bound[r, c]:.3e})"
    return True, f"out[scatter_idx] = X[gather_idx] @ W within the bound (max error {err.max():.2e})"
