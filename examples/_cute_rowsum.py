"""The CuTe DSL program of :mod:`tcsim.examples.cute_rowsum` (kept apart so that importing the example does not need
the DSL: this module is imported only when nvidia-cutlass-dsl is installed)."""
import cutlass
import cutlass.cute as cute


@cute.kernel
def rowsum_kernel(gX: cute.Tensor, gY: cute.Tensor):
    """One warp per row: the lanes stride over the columns, then a butterfly shuffle reduction; lane 0 stores."""
    lane, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    acc = cutlass.Float32(0.0)
    for j in cutlass.range(lane, gX.shape[1], 32):
        acc += gX[row, j]
    for s in cutlass.range_constexpr(5):
        acc += cute.arch.shuffle_sync_bfly(acc, offset=1 << s)
    if lane == 0:
        gY[row] = acc


@cute.jit
def rowsum(mX: cute.Tensor, mY: cute.Tensor):
    """y[r] = sum(x[r, :]) with one 32-thread CTA per row (the grid is computed from x's runtime shape)."""
    rowsum_kernel(mX, mY).launch(grid=(mX.shape[0], 1, 1), block=(32, 1, 1))
