// Device-function calls fixture (sm_90a and sm_100a): the call ABI nvcc emits for __noinline__ functions.
#include <cassert>

struct Pair { long long a; int b; float c; };           // 16 bytes, .align 8: passed as .param .align 8 .b8 p[16]

__device__ __noinline__ int fib(int n)                   // recursion: .func calling itself
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__device__ __noinline__ unsigned ackermann(unsigned m, unsigned n)
{
    if (m == 0) return n + 1;
    if (n == 0) return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}

__device__ __noinline__ Pair mix(Pair p, int k)           // struct by value in and out
{
    Pair r;
    r.a = p.a * k + p.b;
    r.b = p.b ^ k;
    r.c = p.c * (float)k;
    return r;
}

__device__ __noinline__ int sum_local(int n)             // a local array: __local_depot / %SP
{
    volatile int buf[16];
    for (int i = 0; i < 16; ++i) buf[i] = i * n;
    int s = 0;
    for (int i = 0; i < 16; ++i) s += buf[(i * 7) & 15];
    return s;
}

__device__ __noinline__ int op_add(int a, int b) { return a + b; }
__device__ __noinline__ int op_mul(int a, int b) { return a * b; }
__device__ __noinline__ int op_sub(int a, int b) { return a - b; }

typedef int (*binop)(int, int);

__global__ void calls_kernel(const int* __restrict__ in, int* __restrict__ out, long long* __restrict__ pairs,
                             float* __restrict__ pc, unsigned* __restrict__ ack, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int x = in[i];
    binop ops[3] = {op_add, op_mul, op_sub};
    binop f = ops[i % 3];                               // per-lane function pointer: divergent indirect call
    int acc = f(x, i);
    if (i & 1)                                           // a divergent direct call
        acc += fib(x & 15);
    acc += sum_local(x);
    out[i] = acc;
    Pair p = {(long long)x << 20, x, 0.5f * (float)x};
    Pair q = mix(p, i + 1);
    pairs[2 * i] = q.a;
    pairs[2 * i + 1] = q.b;
    pc[i] = q.c;
    ack[i] = ackermann(i & 1 ? 2 : 1, x & 3);
}
