"""The Triton kernel of :mod:`tcsim.examples.triton_softmax` (kept apart so that importing the example does not need
Triton: this module is imported only when Triton is installed)."""
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    """One program per row: out[row, :] = softmax(in[row, :n_cols]) (the max subtracted first)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)
