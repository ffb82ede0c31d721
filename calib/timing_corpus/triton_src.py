"""Triton 3.9 kernels of the timing corpus, compiled to sm_90a PTX without a GPU by ``python -m calib.timing_corpus
build`` (:func:`compile_all`: ``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))``, the PTX
written to ``triton/<name>.sm_90a.ptx``).  Importing this module needs Triton; nothing else in the corpus does.

Every kernel runs as one program (grid 1) of ``num_warps`` warps; Triton's launcher appends two scratch
pointers (global and profile scratch, null here: both sizes are 0), which the corpus passes as 0.
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def tri_vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def tri_softmax_rows(x_ptr, y_ptr, rows, COLS: tl.constexpr):
    for r in range(0, rows):
        offs = tl.arange(0, COLS)
        x = tl.load(x_ptr + r * COLS + offs)
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(y_ptr + r * COLS + offs, e / tl.sum(e, axis=0))


@triton.jit
def tri_softmax_2d(x_ptr, y_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    r = tl.arange(0, ROWS)[:, None]
    c = tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + r * COLS + c)
    x = x - tl.max(x, axis=1)[:, None]
    e = tl.exp(x)
    tl.store(y_ptr + r * COLS + c, e / tl.sum(e, axis=1)[:, None])


@triton.jit
def tri_layernorm(x_ptr, w_ptr, b_ptr, y_ptr, rows, COLS: tl.constexpr):
    offs = tl.arange(0, COLS)
    w = tl.load(w_ptr + offs)
    b = tl.load(b_ptr + offs)
    for r in range(0, rows):
        x = tl.load(x_ptr + r * COLS + offs)
        mean = tl.sum(x, axis=0) / COLS
        d = x - mean
        var = tl.sum(d * d, axis=0) / COLS
        tl.store(y_ptr + r * COLS + offs, d * tl.rsqrt(var + 1e-5) * w + b)


@triton.jit
def tri_rmsnorm_f16(x_ptr, y_ptr, rows, COLS: tl.constexpr):
    offs = tl.arange(0, COLS)
    for r in range(0, rows):
        x = tl.load(x_ptr + r * COLS + offs).to(tl.float32)
        k = tl.rsqrt(tl.sum(x * x, axis=0) / COLS + 1e-6)
        tl.store(y_ptr + r * COLS + offs, (x * k).to(tl.float16))


@triton.jit
def tri_sum_reduce(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def tri_argmax(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr, tl.argmax(x, axis=0))


@triton.jit
def tri_cumsum(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0))


@triton.jit
def tri_sort(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.sort(tl.load(x_ptr + offs)))


@triton.jit
def tri_transpose(x_ptr, y_ptr, N: tl.constexpr):
    r = tl.arange(0, N)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r * N + c)
    tl.store(y_ptr + r * N + c, tl.trans(x))


@triton.jit
def tri_gelu_tanh(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        u = 0.7978845608 * (x + 0.044715 * x * x * x)
        t = 2.0 / (1.0 + tl.exp(-2.0 * u)) - 1.0
        tl.store(y_ptr + offs, 0.5 * x * (1.0 + t), mask=offs < n)


@triton.jit
def tri_swiglu_f16(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        a = tl.load(a_ptr + offs, mask=offs < n).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=offs < n).to(tl.float32)
        tl.store(y_ptr + offs, (a * tl.sigmoid(a) * b).to(tl.float16), mask=offs < n)


@triton.jit
def tri_int_hash(x_ptr, y_ptr, n, ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        h = tl.load(x_ptr + offs, mask=offs < n)
        for _ in tl.static_range(ROUNDS):
            h = h ^ (h >> 16)
            h = h * 0x7FEB352D
            h = h ^ (h >> 15)
        tl.store(y_ptr + offs, h, mask=offs < n)


@triton.jit
def tri_histogram_atomic(x_ptr, bins_ptr, n, BLOCK: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n, other=0)
        tl.atomic_add(bins_ptr + (v & 63), 1, mask=offs < n, sem=SEM, scope=SCOPE)


@triton.jit
def tri_atomic_max(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n, other=0)
        tl.atomic_max(out_ptr + (offs & 7), v, mask=offs < n)


@triton.jit
def tri_gather(idx_ptr, val_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        i = tl.load(idx_ptr + offs, mask=offs < n, other=0)
        tl.store(y_ptr + offs, tl.load(val_ptr + i, mask=offs < n), mask=offs < n)


@triton.jit
def tri_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C[BM, BN] f32 = A[BM, K] f16 @ B[K, BN] f16, row-major; tl.dot lowers to wgmma on target 90."""
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm * BN + rn, acc)


@triton.jit
def tri_matmul_f32_fma(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The same on f32 operands with input_precision="ieee": FMA, no tensor cores."""
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm * BN + rn, acc)


@triton.jit
def tri_attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, L, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """One query block of flash attention (f16 in, f32 softmax, f16 out), keys/values in blocks of BN."""
    rm = tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, L, BN):
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
        v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
        s = tl.dot(q, tl.trans(k)) * 0.125
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def tri_cross_entropy(logits_ptr, target_ptr, loss_ptr, rows, COLS: tl.constexpr):
    offs = tl.arange(0, COLS)
    for r in range(0, rows):
        x = tl.load(logits_ptr + r * COLS + offs)
        m = tl.max(x, axis=0)
        lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
        t = tl.load(target_ptr + r)
        xt = tl.sum(tl.where(offs == t, x, 0.0), axis=0)
        tl.store(loss_ptr + r, lse - xt)


@triton.jit
def tri_matmul_tma(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A [BM,K], Bt [BN,K] and C [BM,BN] f16 through host tensor descriptors (TMA loads and store, wgmma)."""
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([0, k])
        b = b_desc.load([0, k])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([0, 0], acc.to(tl.float16))


#: name -> (kernel, signature, constexprs, options).  The names are the corpus names (``tri_`` + what).
KERNELS = {
    "tri_vector_add": (tri_vector_add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                       {"BLOCK": 1024}, {"num_warps": 4}),
    "tri_softmax_rows": (tri_softmax_rows, {"x_ptr": "*fp32", "y_ptr": "*fp32", "rows": "i32"}, {"COLS": 512},
                         {"num_warps": 4}),
    "tri_softmax_2d": (tri_softmax_2d, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"ROWS": 16, "COLS": 128},
                       {"num_warps": 4}),
    "tri_layernorm": (tri_layernorm, {"x_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "y_ptr": "*fp32",
                                      "rows": "i32"}, {"COLS": 256}, {"num_warps": 4}),
    "tri_rmsnorm_f16": (tri_rmsnorm_f16, {"x_ptr": "*fp16", "y_ptr": "*fp16", "rows": "i32"}, {"COLS": 512},
                        {"num_warps": 4}),
    "tri_sum_reduce": (tri_sum_reduce, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 512},
                       {"num_warps": 4}),
    "tri_argmax": (tri_argmax, {"x_ptr": "*fp32", "out_ptr": "*i32"}, {"N": 2048}, {"num_warps": 4}),
    "tri_cumsum": (tri_cumsum, {"x_ptr": "*i32", "y_ptr": "*i32"}, {"N": 1024}, {"num_warps": 4}),
    "tri_sort": (tri_sort, {"x_ptr": "*i32", "y_ptr": "*i32"}, {"N": 256}, {"num_warps": 4}),
    "tri_transpose": (tri_transpose, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"N": 64}, {"num_warps": 4}),
    "tri_gelu_tanh": (tri_gelu_tanh, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"BLOCK": 512},
                      {"num_warps": 4}),
    "tri_swiglu_f16": (tri_swiglu_f16, {"a_ptr": "*fp16", "b_ptr": "*fp16", "y_ptr": "*fp16", "n": "i32"},
                       {"BLOCK": 1024}, {"num_warps": 4}),
    "tri_int_hash": (tri_int_hash, {"x_ptr": "*u32", "y_ptr": "*u32", "n": "i32"}, {"ROUNDS": 8, "BLOCK": 512},
                     {"num_warps": 4}),
    "tri_atomic_max": (tri_atomic_max, {"x_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}, {"BLOCK": 256},
                       {"num_warps": 4}),
    "tri_gather": (tri_gather, {"idx_ptr": "*i32", "val_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                   {"BLOCK": 512}, {"num_warps": 4}),
    "tri_matmul_64x64": (tri_matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"},
                         {"BM": 64, "BN": 64, "BK": 32}, {"num_warps": 4, "num_stages": 2}),
    "tri_matmul_128x64": (tri_matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"},
                          {"BM": 128, "BN": 64, "BK": 64}, {"num_warps": 4, "num_stages": 3}),
    "tri_matmul_f32_fma": (tri_matmul_f32_fma, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "K": "i32"},
                           {"BM": 32, "BN": 32, "BK": 16}, {"num_warps": 4, "num_stages": 1}),
    "tri_attention_fwd": (tri_attention_fwd, {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16",
                                              "o_ptr": "*fp16", "L": "i32"},
                          {"D": 64, "BM": 64, "BN": 64}, {"num_warps": 4, "num_stages": 2}),
    "tri_cross_entropy": (tri_cross_entropy, {"logits_ptr": "*fp32", "target_ptr": "*i32", "loss_ptr": "*fp32",
                                              "rows": "i32"}, {"COLS": 256}, {"num_warps": 4}),
    "tri_matmul_tma": (tri_matmul_tma, {"a_desc": "tensordesc<fp16[64, 64]>", "b_desc": "tensordesc<fp16[64, 64]>",
                                        "c_desc": "tensordesc<fp16[64, 64]>", "K": "i32"},
                       {"BM": 64, "BN": 64, "BK": 64}, {"num_warps": 4, "num_stages": 2}),
}
for _sem in ("relaxed", "acquire", "release", "acq_rel"):
    for _scope in ("gpu", "cta", "sys"):
        if _scope != "gpu" and _sem in ("acquire", "release"):
            continue
        KERNELS[f"tri_hist_{_sem}_{_scope}"] = (
            tri_histogram_atomic, {"x_ptr": "*u32", "bins_ptr": "*u32", "n": "i32"},
            {"BLOCK": 256, "SEM": _sem, "SCOPE": _scope}, {"num_warps": 4})


def compile_kernel(name: str):
    """Triton's compiled kernel of corpus kernel ``name`` for sm_90a (its ``.asm["ptx"]`` has ``.version 9.0``:
    see tests/fixtures/triton/README.md)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn, sig, consts, opts = KERNELS[name]
    sig = dict(sig)
    for k in consts:
        sig[k] = "constexpr"
    src = ASTSource(fn=fn, signature=sig, constexprs=dict(consts))
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={**opts, "ptx_version": 90})
