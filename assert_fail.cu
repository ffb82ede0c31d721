// assert() fixture: a debug build's `call.uni __assertfail, (msg, file, line, function, charSize)`.
#undef NDEBUG
#include <cassert>

__global__ void assert_kernel(const int* __restrict__ in, int* __restrict__ out, int limit)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int v = in[i];
    assert(v < limit && "value out of range");
    out[i] = 2 * v;
}
