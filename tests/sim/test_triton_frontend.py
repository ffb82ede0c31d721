"""tcsim.triton: Triton kernels written here, compiled by Triton on the CPU for sm_100a / sm_90a, launched through
``tcsim.triton`` and compared with numpy references computed from the inputs (integer-valued data where the
result must be exact; a float64 bound otherwise).  Also: what the front end lays out (parameters, scratch, launch
shape) against Triton's compiled metadata, write-back through views, and the diagnostics for bad input."""
from __future__ import annotations

import sys

import numpy as np
import pytest

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

import tcsim.triton as tt  # noqa: E402
from tcsim.isa.errors import LaunchError  # noqa: E402

ARCHES = ("sm_100a", "sm_90a")
THIS = __file__


# ------------------------------------------------------------------------------------------ kernels
@triton.jit
def vadd(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def affine_i32(x, out, a, b, n, BLOCK: tl.constexpr):
    """out = x * a + b (i32 arithmetic, wraps like the GPU)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) * a + b, mask=m)


@triton.jit
def shifted_copy(x, out, shift, n, BLOCK: tl.constexpr):
    """out[i] = x[i + shift] where in range, else -1; ``shift`` may be negative."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = offs + shift
    ok = (offs < n) & (src >= 0) & (src < n)
    tl.store(out + offs, tl.load(x + src, mask=ok, other=-1), mask=offs < n)


@triton.jit
def scale_big(x, out, big, scale, n, BLOCK: tl.constexpr):
    """out = x * scale + (big >> 32): ``big`` is an i64 (does not fit i32), ``scale`` an fp32."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    hi = (big >> 32).to(tl.float32)
    tl.store(out + offs, tl.load(x + offs, mask=m) * scale + hi, mask=m)


@triton.jit
def act(x, out, n, BLOCK: tl.constexpr, MODE: tl.constexpr, SCALE: tl.constexpr):
    """constexpr variants: MODE picks the code path at compile time."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    if MODE == "relu":
        v = tl.maximum(v, 0.0)
    elif MODE == "square":
        v = v * v
    tl.store(out + offs, v * SCALE, mask=m)


@triton.jit
def row_reduce(x, sums, maxes, argm, R, C, stride_r, BLOCK_C: tl.constexpr):
    """One program per row: sum, max and argmax over the columns (masked tail)."""
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    m = cols < C
    v = tl.load(x + r * stride_r + cols, mask=m, other=float("-inf"))
    tl.store(maxes + r, tl.max(v, axis=0))
    tl.store(argm + r, tl.argmax(v, axis=0))
    tl.store(sums + r, tl.sum(tl.where(m, v, 0.0), axis=0))


@triton.jit
def col_sum_2d(x, out, R, C, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Column sums of an i32 matrix over a loop of row blocks (a 2-D reduction along axis 0)."""
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_C,), dtype=tl.int32)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        v = tl.load(x + r[:, None] * C + c[None, :], mask=(r[:, None] < R) & (c[None, :] < C), other=0)
        acc += tl.sum(v, axis=0)
    tl.store(out + c, acc, mask=c < C)


@triton.jit
def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        x = tl.load(a + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        y = tl.load(b + kk[:, None] * sbk + rn[None, :] * sbn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def desc_scale_add(x_desc, y_desc, out_desc, alpha, BM: tl.constexpr, BN: tl.constexpr):
    """out = x * alpha + y through three host tensor descriptors (TMA load / store)."""
    pm = tl.program_id(0) * BM
    pn = tl.program_id(1) * BN
    out_desc.store([pm, pn], x_desc.load([pm, pn]) * alpha + y_desc.load([pm, pn]))


@triton.jit
def desc_shape_probe(x_desc, out):
    """Stores the shape/stride scalars Triton passes beside a host descriptor's CUtensorMap."""
    tl.store(out + 0, x_desc.shape[0].to(tl.int64))
    tl.store(out + 1, x_desc.shape[1].to(tl.int64))
    tl.store(out + 2, x_desc.strides[0].to(tl.int64))
    tl.store(out + 3, x_desc.strides[1].to(tl.int64))


@triton.jit
def desc_matmul(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0) * BM
    pn = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pm, k * BK]), b_desc.load([k * BK, pn]), acc)
    c_desc.store([pm, pn], acc)


@triton.jit
def device_desc_rowscale(x, s, out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Tensor descriptors built on the device (tl.make_tensor_descriptor: the maps go through the global scratch)."""
    xd = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    od = tl.make_tensor_descriptor(out, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm = tl.program_id(0) * BM
    pn = tl.program_id(1) * BN
    rows = pm + tl.arange(0, BM)
    sv = tl.load(s + rows, mask=rows < M, other=0.0)
    od.store([pm, pn], xd.load([pm, pn]) * sv[:, None])


@triton.jit
def copy_any(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)


@triton.jit
def tuple_args(ptrs, coef, n, BLOCK: tl.constexpr, NEGATE: tl.constexpr):
    """Tuples of pointers and scalars (flattened into the parameter list), a bool constexpr."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(ptrs[0] + offs, mask=m) * coef[0] + coef[1]
    if NEGATE:
        v = -v
    tl.store(ptrs[1] + offs, v, mask=m)


@triton.jit
def where_flag(x, out, n, neg, BLOCK: tl.constexpr):
    """A runtime bool argument (Triton type u1, a .u8 parameter)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    tl.store(out + offs, tl.where(neg, -v, v), mask=m)


@triton.jit
def fill_annotated(out, v: tl.int32, BLOCK: tl.constexpr):
    tl.store(out + tl.arange(0, BLOCK), tl.full((BLOCK,), v, tl.int32))


try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
except ImportError:          # a Triton without Gluon
    gluon = None

if gluon is not None:
    @gluon.jit
    def gluon_axpy(x, y, out, n, BLOCK: gl.constexpr, num_warps: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout(size_per_thread=[4], threads_per_warp=[32],
                                                warps_per_cta=[num_warps], order=[0])
        offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
        m = offs < n
        gl.store(out + offs, gl.load(x + offs, mask=m) * 2 + gl.load(y + offs, mask=m), mask=m)


def _ints(rng, shape, dtype, lo=-4, hi=5):
    return rng.integers(lo, hi, shape).astype(dtype)


# ------------------------------------------------------------------------------------------ vector add
@pytest.mark.parametrize("arch", ARCHES)
def test_vector_add(arch):
    rng = np.random.default_rng(0)
    n = 1000                                  # not a multiple of BLOCK: the tail is masked
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n + 8, np.float32(-7.0))    # 8 elements past n must stay untouched
    run = tt.launch(vadd, (triton.cdiv(n, 256),), x, y, out, n, BLOCK=256, arch=arch)
    assert np.array_equal(out[:n], x + y)     # one f32 add: numpy's is the same IEEE operation
    assert (out[n:] == np.float32(-7.0)).all()
    assert run.written == ["out"] and not run.findings
    md = run.compiled.metadata
    launch = run.prepared.launch
    assert launch.block == (32 * md.num_warps, 1, 1) and launch.grid == (4, 1, 1)
    assert f".target {arch}" in run.prepared.ptx


def test_grid_callable_and_kernel_sugar():
    """``Kernel(fn, arch)[grid](...)`` with a grid computed from the bound arguments, as in Triton."""
    x = np.arange(3000, dtype=np.float32)
    y = np.full(3000, 0.5, np.float32)
    out = np.zeros(3000, np.float32)
    k = tt.Kernel(vadd, arch="sm_100a")
    run = k[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, 3000, BLOCK=1024)
    assert run.prepared.launch.grid == (3, 1, 1)
    assert np.array_equal(out, x + y)


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_num_warps_sets_the_block(num_warps):
    x = np.arange(2048, dtype=np.float32)
    out = np.zeros(2048, np.float32)
    run = tt.launch(vadd, (2,), x, x, out, 2048, BLOCK=1024, num_warps=num_warps, num_stages=2, arch="sm_100a")
    assert run.compiled.metadata.num_warps == num_warps
    assert run.prepared.launch.block == (32 * num_warps, 1, 1)
    assert np.array_equal(out, 2 * x)


def test_pointer_element_types():
    """Each array's dtype gives the pointer type (a fresh array per dtype, in a loop: Triton's specialiser caches
    dtype objects by identity, so an identity reused for another dtype would give the wrong type)."""
    import gc
    import ml_dtypes
    rng = np.random.default_rng(11)
    cases = [(np.int8, "*i8"), (np.float64, "*fp64"), (np.int16, "*i16"), (np.uint8, "*u8"), (np.int64, "*i64"),
             (ml_dtypes.bfloat16, "*bf16"), (np.float16, "*fp16"), (np.uint32, "*u32"), (np.int8, "*i8"),
             (ml_dtypes.float8_e4m3fn, "*fp8e4nv"), (np.float64, "*fp64")]
    for dt, want in cases:
        gc.collect()
        x = rng.integers(0, 100, 100).astype(dt)
        out = np.zeros(100, dt)
        run = tt.launch(copy_any, (1,), x, out, 100, BLOCK=128, arch="sm_100a")
        assert run.prepared.signature["x"] == want and run.prepared.signature["out"] == want, (dt, want)
        assert out.tobytes() == x.tobytes()


# ------------------------------------------------------------------------------------------ scalars
@pytest.mark.parametrize("arch", ARCHES)
def test_negative_i32_scalars(arch):
    """Triton types the ints as i32 and declares them ``.u32``; -16 and -3 arrive as their 32-bit patterns."""
    rng = np.random.default_rng(1)
    n = 777
    x = _ints(rng, n, np.int32, -1000, 1000)
    out = np.zeros(n, np.int32)
    run = tt.launch(affine_i32, (triton.cdiv(n, 256),), x, out, -3, -16, n, BLOCK=256, arch=arch)
    assert np.array_equal(out, x * -3 - 16)
    decl = {p["source"].split(":")[0]: p["type"] for p in run.prepared.params}
    assert decl["a"] == "u32" and decl["b"] == "u32"       # the .u32 declaration the negative values go through
    assert run.prepared.signature["a"] == "i32" and run.prepared.signature["b"] == "i32"


@pytest.mark.parametrize("shift", [-16, -1, 5])
def test_negative_offsets(shift):
    n = 300
    x = np.arange(n, dtype=np.int32) * 7
    out = np.zeros(n, np.int32)
    tt.launch(shifted_copy, (triton.cdiv(n, 128),), x, out, shift, n, BLOCK=128, arch="sm_100a")
    want = np.full(n, -1, np.int32)
    src = np.arange(n) + shift
    ok = (src >= 0) & (src < n)
    want[ok] = x[src[ok]]
    assert np.array_equal(out, want)


def test_i64_fp32_and_numpy_scalars():
    """2**40 + 2**33 is typed i64 (it does not fit i32), 0.5 fp32; numpy scalars are taken as Python values."""
    x = np.arange(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    big = 2 ** 40 + 2 ** 33
    run = tt.launch(scale_big, (1,), x, out, np.int64(big), np.float32(0.5), 256, BLOCK=256, arch="sm_100a")
    assert run.prepared.signature["big"] == "i64" and run.prepared.signature["scale"] == "fp32"
    assert np.array_equal(out, x * np.float32(0.5) + np.float32(2 ** 8 + 2))


def test_int_one_is_specialised_as_constexpr():
    """Triton turns an int argument equal to 1 into a constexpr: the parameter disappears from the PTX."""
    x = np.arange(64, dtype=np.int32)
    out = np.zeros(64, np.int32)
    run = tt.launch(affine_i32, (1,), x, out, 1, 5, 64, BLOCK=64, arch="sm_100a")
    assert run.prepared.signature["a"] == "constexpr"
    assert [p["source"].split(":")[0] for p in run.prepared.params][:4] == ["x", "out", "b", "n"]
    assert np.array_equal(out, x + 5)


def test_tuple_and_bool_arguments():
    x = np.arange(500, dtype=np.int32)
    out = np.zeros(500, np.int32)
    run = tt.launch(tuple_args, (2,), (x, out), (3, -7), 500, BLOCK=256, NEGATE=True, arch="sm_100a")
    assert np.array_equal(out, -(x * 3 - 7))
    assert [p["source"] for p in run.prepared.params][:5] == [
        "ptrs[0]: *i32", "ptrs[1]: *i32", "coef[0]: i32", "coef[1]: i32", "n: i32"]
    assert run.written == ["ptrs[1]"]
    for neg in (True, False):
        out2 = np.zeros(500, np.int32)
        run = tt.launch(where_flag, (2,), x, out2, 500, neg, BLOCK=256, arch="sm_100a")
        assert run.prepared.signature["neg"] == "u1" and run.prepared.params[3]["type"] == "u8"
        assert np.array_equal(out2, -x if neg else x)


@pytest.mark.parametrize("arch", ARCHES)
def test_num_ctas_launches_clusters(arch):
    """num_ctas=2: Triton's launcher multiplies gridX by num_ctas and launches clusters of (num_ctas, 1, 1)."""
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros(1000, np.float32)
    run = tt.launch(vadd, (4,), x, x, out, 1000, BLOCK=256, num_ctas=2, arch=arch)
    assert run.compiled.metadata.num_ctas == 2
    assert run.prepared.launch.grid == (8, 1, 1) and run.prepared.launch.cluster == (2, 1, 1)
    assert np.array_equal(out, 2 * x)


# ------------------------------------------------------------------------------------------ constexprs
@pytest.mark.parametrize("mode, scale", [("relu", 1.0), ("relu", 3.0), ("square", 0.5), ("none", -2.0)])
def test_constexpr_variants(mode, scale):
    rng = np.random.default_rng(2)
    x = _ints(rng, 500, np.float32)
    out = np.zeros(500, np.float32)
    run = tt.launch(act, (triton.cdiv(500, 128),), x, out, 500, BLOCK=128, MODE=mode, SCALE=scale, arch="sm_100a")
    v = {"relu": np.maximum(x, 0), "square": x * x, "none": x}[mode]
    assert np.array_equal(out, v * np.float32(scale))
    assert run.prepared.constexprs[(4,)] == mode


def test_constexpr_variants_compile_separately():
    """One Kernel keeps one compiled kernel per specialisation (different BLOCK -> different PTX)."""
    k = tt.Kernel(vadd, "sm_100a")
    x = np.ones(512, np.float32)
    o1, o2 = np.zeros(512, np.float32), np.zeros(512, np.float32)
    r1 = k[(4,)](x, x, o1, 512, BLOCK=128)
    r2 = k[(2,)](x, x, o2, 512, BLOCK=256)
    r3 = k[(4,)](x, x, o1, 512, BLOCK=128)
    assert r1.compiled is r3.compiled and r1.compiled is not r2.compiled
    assert (o1 == 2).all() and (o2 == 2).all()


# ------------------------------------------------------------------------------------------ reductions
@pytest.mark.parametrize("arch", ARCHES)
def test_row_reductions(arch):
    rng = np.random.default_rng(3)
    R, C = 6, 100                              # C < BLOCK_C: masked lanes must not count
    x = _ints(rng, (R, C), np.float32, -50, 50)
    sums = np.zeros(R, np.float32)
    maxes = np.zeros(R, np.float32)
    argm = np.zeros(R, np.int32)
    tt.launch(row_reduce, (R,), x, sums, maxes, argm, R, C, C, BLOCK_C=128, arch=arch)
    assert np.array_equal(sums, x.astype(np.float64).sum(axis=1))    # small integers: every order exact
    assert np.array_equal(maxes, x.max(axis=1))
    assert np.array_equal(argm, x.argmax(axis=1))                     # first maximum, as numpy


def test_column_sums_loop():
    rng = np.random.default_rng(4)
    R, C = 77, 50
    x = _ints(rng, (R, C), np.int32, -1000, 1000)
    out = np.zeros(C, np.int32)
    tt.launch(col_sum_2d, (triton.cdiv(C, 32),), x, out, R, C, BLOCK_R=16, BLOCK_C=32, arch="sm_100a")
    assert np.array_equal(out, x.sum(axis=0))


# ------------------------------------------------------------------------------------------ matmul (tl.dot)
def _mm(arch, M, N, K, a, b, c, BM=64, BN=64, BK=32, **kw):
    return tt.launch(matmul, (triton.cdiv(M, BM), triton.cdiv(N, BN)), a, b, c, M, N, K,
                     a.strides[0] // a.itemsize, a.strides[1] // a.itemsize,
                     b.strides[0] // b.itemsize, b.strides[1] // b.itemsize,
                     c.strides[0] // c.itemsize, c.strides[1] // c.itemsize, BM=BM, BN=BN, BK=BK, arch=arch, **kw)


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])     # tl.dot: tcgen05.mma / wgmma
def test_tiled_matmul_exact(arch):
    """f16 A @ B -> f32 with ragged M, N, K (masked loads); small integers, so every product and partial sum is
    exact and the result must equal the float64 product."""
    rng = np.random.default_rng(5)
    M, N, K = 100, 72, 80
    a = _ints(rng, (M, K), np.float16)
    b = _ints(rng, (K, N), np.float16)
    c = np.zeros((M, N), np.float32)
    run = _mm(arch, M, N, K, a, b, c)
    mma = {"sm_100a": "tcgen05.mma", "sm_90a": "wgmma.mma_async"}[arch]
    assert mma in run.prepared.ptx
    assert np.array_equal(c, a.astype(np.float64) @ b.astype(np.float64))


def test_tiled_matmul_random_and_strided_output():
    """Random f16 inputs within 2^-10 |A||B| of the float64 product, written into a column window of a wider
    array (a strided view: the kernel gets the view's address and strides; the other columns stay)."""
    rng = np.random.default_rng(6)
    M, N, K = 64, 64, 96
    a = rng.standard_normal((M, K)).astype(np.float16)
    bt = rng.standard_normal((N, K)).astype(np.float16)
    b = bt.T                                    # a transposed view: element strides (1, K)
    big = np.full((M, N + 40), np.float32(-9.0))
    c = big[:, 16:16 + N]
    _mm("sm_100a", M, N, K, a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert (np.abs(c - a64 @ b64) <= 2.0 ** -10 * (np.abs(a64) @ np.abs(b64))).all()
    assert (big[:, :16] == -9).all() and (big[:, 16 + N:] == -9).all()


# ------------------------------------------------------------------------------------------ tensor descriptors
@pytest.mark.parametrize("arch", ARCHES)
def test_host_tensor_descriptors(arch):
    """Three host TensorDescriptors (TMA), ragged shape: OOB rows/columns are zero-filled on load and clipped on
    store, so the padding columns of ``out`` keep their value."""
    rng = np.random.default_rng(7)
    M, N = 100, 72
    x = _ints(rng, (M, N), np.float32)
    y = _ints(rng, (M, N), np.float32)
    out = np.full((M, N), np.float32(-5.0))
    run = tt.launch(desc_scale_add, (triton.cdiv(M, 64), triton.cdiv(N, 64)), tt.tensor_descriptor(x, [64, 64]),
                    tt.tensor_descriptor(y, [64, 64]), tt.tensor_descriptor(out, [64, 64]), 1.5,
                    BM=64, BN=64, arch=arch)
    assert np.array_equal(out, x * np.float32(1.5) + y)    # small integers: the fused multiply-add is exact
    md = run.compiled.metadata
    assert len(md.tensordesc_meta) == 3
    srcs = [p["source"] for p in run.prepared.params]
    # each descriptor: map, shape as i32 x2, strides as i64 x2; then alpha and the two scratch pointers
    assert srcs[0].startswith("x_desc: CUtensorMap") and srcs[1:5] == [
        "x_desc.shape[0] (i32)", "x_desc.shape[1] (i32)", "x_desc.strides[0] (i64)", "x_desc.strides[1] (i64)"]
    assert srcs[-2:] == ["global_scratch (null)", "profile_scratch (null)"]
    types = [p["type"] for p in run.prepared.params]
    assert types[0] == "b8[128]" and types[1:5] == ["u32", "u32", "u64", "u64"]
    assert run.prepared.launch.dynamic_smem == md.shared > 0


def test_descriptor_shape_and_stride_scalars():
    """The scalars beside the map are the descriptor's shape and element strides (here of a column window)."""
    big = np.zeros((40, 96), np.float32)
    view = big[:, 32:64]
    out = np.zeros(4, np.int64)
    tt.launch(desc_shape_probe, (1,), tt.tensor_descriptor(view, [8, 32]), out, arch="sm_100a")
    assert out.tolist() == [40, 32, 96, 1]


def test_descriptor_over_a_view_writes_through():
    """A descriptor over a 64-column window of a wider array: TMA uses the view's row stride and the store lands in
    the caller's array; the columns outside the window are untouched."""
    rng = np.random.default_rng(8)
    x = _ints(rng, (64, 64), np.float32)
    y = _ints(rng, (64, 64), np.float32)
    big = np.full((64, 192), np.float32(3.0))
    out = big[:, 64:128]
    tt.launch(desc_scale_add, (1, 1), tt.tensor_descriptor(x, [64, 64]), tt.tensor_descriptor(y, [64, 64]),
              tt.tensor_descriptor(out, [64, 64]), -1.0, BM=64, BN=64, arch="sm_100a")
    assert np.array_equal(out, y - x)
    assert (big[:, :64] == 3).all() and (big[:, 128:] == 3).all()


def test_tritons_own_tensor_descriptor_over_a_host_array():
    """``triton.tools.tensor_descriptor.TensorDescriptor`` built by the caller (over tcsim.triton.HostArray)."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    out = np.zeros_like(x)
    d = lambda a: TensorDescriptor.from_tensor(tt.HostArray(a), [64, 64])  # noqa: E731
    tt.launch(desc_scale_add, (1, 1), d(x), d(x), d(out), 2.0, BM=64, BN=64, arch="sm_100a")
    assert np.array_equal(out, 3 * x)


def test_descriptor_matmul_sm100():
    """tl.dot on TMA-loaded tiles (tcgen05 on sm_100a), C stored through a descriptor; exact on integers."""
    rng = np.random.default_rng(9)
    M, N, K = 128, 128, 96
    a = _ints(rng, (M, K), np.float16)
    b = _ints(rng, (K, N), np.float16)
    c = np.zeros((M, N), np.float32)
    tt.launch(desc_matmul, (1, 1), tt.tensor_descriptor(a, [128, 32]), tt.tensor_descriptor(b, [32, 128]),
              tt.tensor_descriptor(c, [128, 128]), K, BM=128, BN=128, BK=32, arch="sm_100a")
    assert np.array_equal(c, a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize("arch", ARCHES)
def test_device_side_descriptors_use_the_global_scratch(arch):
    rng = np.random.default_rng(10)
    M, N = 100, 72
    x = _ints(rng, (M, N), np.float32)
    s = _ints(rng, M, np.float32)
    out = np.full((M, N), np.float32(-1.0))
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    run = tt.launch(device_desc_rowscale, grid, x, s, out, M, N, BM=64, BN=64, arch=arch)
    assert np.array_equal(out, x * s[:, None])
    md = run.compiled.metadata
    assert md.global_scratch_size >= 256      # two 128-byte maps per program
    scratch_src = run.prepared.params[-2]["source"]
    assert scratch_src == f"global_scratch (4 programs x {md.global_scratch_size} bytes)"
    scratch = run.result.outputs[-2]
    assert scratch.size == 4 * md.global_scratch_size and scratch.any()   # the kernel wrote its maps there


# ------------------------------------------------------------------------------------------ memory semantics
def test_same_array_twice_shares_one_buffer():
    """In place: x is both input and output (Triton passes the same pointer twice)."""
    x = np.arange(512, dtype=np.float32)
    want = 2 * x
    tt.launch(vadd, (2,), x, x, x, 512, BLOCK=256, arch="sm_100a")
    assert np.array_equal(x, want)


def test_read_only_input_is_fine_and_read_only_output_is_an_error():
    x = np.arange(256, dtype=np.float32)
    x.setflags(write=False)
    out = np.zeros(256, np.float32)
    tt.launch(vadd, (1,), x, x, out, 256, BLOCK=256, arch="sm_100a")
    assert np.array_equal(out, 2 * x)
    ro = np.zeros(256, np.float32)
    ro.setflags(write=False)
    with pytest.raises(LaunchError, match="read-only"):
        tt.launch(vadd, (1,), x, x, ro, 256, BLOCK=256, arch="sm_100a")


def test_prepare_then_run_launch():
    """``prepare`` gives a plain tcsim Launch (for run_launch, Prepared, tcsim run launch files)."""
    from tcsim.launch import run_launch
    x = np.arange(300, dtype=np.float32)
    out = np.zeros(300, np.float32)
    prep = tt.prepare(vadd, (2,), x, x, out, 300, BLOCK=256, arch="sm_90a")
    res = run_launch(prep.launch, seed=3)
    assert (out == 0).all()                     # nothing written back yet
    assert np.array_equal(prep.output(res, "out"), 2 * x)
    assert prep.write_back(res) == ["out"] and np.array_equal(out, 2 * x)


# ------------------------------------------------------------------------------------------ torch
def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    x = torch.arange(1000, dtype=torch.float32)
    y = torch.ones(1000, dtype=torch.float32)
    out = torch.zeros(1000, dtype=torch.float32)
    tt.launch(vadd, (4,), x, y, out, 1000, BLOCK=256, arch="sm_100a")
    assert torch.equal(out, x + y)
    a = torch.randint(-3, 4, (64, 32)).to(torch.bfloat16)
    b = torch.randint(-3, 4, (32, 64)).to(torch.bfloat16)
    wide = torch.full((64, 80), -3.0)
    c = wide[:, 8:72]                           # a strided view: written through into `wide`
    tt.launch(matmul, (1, 1), a, b, c, 64, 64, 32, 32, 1, 64, 1, c.stride(0), 1, BM=64, BN=64, BK=32,
              arch="sm_100a")
    assert torch.equal(c, (a.double() @ b.double()).float())
    assert (wide[:, :8] == -3).all() and (wide[:, 72:] == -3).all()
    # Triton's own host descriptor over torch tensors
    from triton.tools.tensor_descriptor import TensorDescriptor
    x = torch.randint(-4, 5, (64, 64)).float()
    o = torch.zeros(64, 64)
    d = lambda t: TensorDescriptor.from_tensor(t, [64, 64])  # noqa: E731
    tt.launch(desc_scale_add, (1, 1), d(x), d(x), d(o), 0.5, BM=64, BN=64, arch="sm_100a")
    assert torch.equal(o, 1.5 * x)


# ------------------------------------------------------------------------------------------ Gluon
@pytest.mark.skipif(gluon is None, reason="this Triton has no triton.experimental.gluon")
def test_gluon_kernel():
    """A Gluon kernel (explicit BlockedLayout; num_warps is a kernel constexpr and the compile option)."""
    x = np.arange(2000, dtype=np.float32)
    y = np.full(2000, 3.0, np.float32)
    out = np.zeros(2000, np.float32)
    for arch in ARCHES:
        run = tt.launch(gluon_axpy, (2,), x, y, out, 2000, BLOCK=1024, num_warps=8, arch=arch)
        assert run.prepared.launch.block == (256, 1, 1)
        assert np.array_equal(out, 2 * x + y)
        out[:] = 0


# ------------------------------------------------------------------------------------------ bad input
def _loc_is_kernel(err, fn):
    assert err.loc is not None and err.loc.file == THIS, err
    assert f"def {fn.fn.__name__}(" in err.loc.text


def test_wrong_argument_count():
    x = np.zeros(16, np.float32)
    with pytest.raises(LaunchError, match=r"missing a required argument: 'n'") as ei:
        tt.launch(vadd, (1,), x, x, x, BLOCK=16)
    _loc_is_kernel(ei.value, vadd)
    with pytest.raises(LaunchError, match="too many positional arguments") as ei:
        tt.launch(vadd, (1,), x, x, x, 16, 16, 7)
    _loc_is_kernel(ei.value, vadd)
    with pytest.raises(LaunchError, match=r"missing a required argument: 'BLOCK'"):
        tt.launch(vadd, (1,), x, x, x, 16)


def test_wrong_argument_type():
    x = np.zeros(16, np.float32)
    with pytest.raises(LaunchError, match="argument y has type str") as ei:
        tt.launch(vadd, (1,), x, "y", x, 16, BLOCK=16)
    _loc_is_kernel(ei.value, vadd)
    with pytest.raises(LaunchError, match="complex128 have no Triton element type"):
        tt.launch(vadd, (1,), x, np.zeros(16, complex), x, 16, BLOCK=16)
    with pytest.raises(LaunchError, match="unknown keyword argument 'BLOK'") as ei:
        tt.launch(vadd, (1,), x, x, x, 16, BLOK=16)
    _loc_is_kernel(ei.value, vadd)
    with pytest.raises(LaunchError, match="negative"):
        tt.launch(vadd, (1,), x[::-1], x, x, 16, BLOCK=16)
    with pytest.raises(LaunchError, match="arch='sm_80'"):
        tt.launch(vadd, (1,), x, x, x, 16, BLOCK=16, arch="sm_80")
    with pytest.raises(LaunchError, match="grid"):
        tt.launch(vadd, (0,), x, x, x, 16, BLOCK=16)


def test_pointer_where_a_scalar_goes_and_scalar_out_of_range():
    """An array for a scalar parameter type-checks in Triton (it becomes a pointer), so the kernel fails to
    compile: a located Triton compile error.  An explicit-width annotation still range-checks."""
    x = np.zeros(16, np.float32)
    with pytest.raises(tt.TritonCompileError) as ei:
        tt.launch(vadd, (1,), x, x, x, x, BLOCK=16)
    _loc_is_kernel(ei.value, vadd)
    out = np.zeros(16, np.int32)
    with pytest.raises(LaunchError, match=r"v = 1099511627776 does not fit Triton type i32") as ei:
        tt.launch(fill_annotated, (1,), out, 2 ** 40, BLOCK=16)
    _loc_is_kernel(ei.value, fill_annotated)
    tt.launch(fill_annotated, (1,), out, -(2 ** 31), BLOCK=16)
    assert (out == -(2 ** 31)).all()


@triton.jit
def unmasked_load(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs) + 1, mask=offs < n)


def test_fault_in_the_kernel_names_the_python_line():
    """A kernel bug (a load past the end of x) is a tcsim MemoryFault located in the PTX and, through Triton's
    ``.loc`` line info, in this file."""
    from tcsim.isa.errors import MemoryFault
    x = np.zeros(100, np.float32)
    with pytest.raises(MemoryFault, match="out-of-bounds global read") as ei:
        tt.launch(unmasked_load, (1,), x, np.zeros(100, np.float32), 100, BLOCK=128)
    assert ei.value.user_loc and ei.value.user_loc.startswith(f"{THIS}:")
    assert "ld.global" in ei.value.loc.text


def test_ptx_from_a_moved_checkout_names_the_file_where_it_is_now():
    """Triton's disk cache ignores where a kernel's file lives: PTX compiled from a copy of this file elsewhere comes
    back naming the old path.  tcsim points it at the file as loaded now; a vanished path of an unknown basename is
    left alone."""
    from tcsim.triton import current_source_paths
    ptx = ('.version 8.7\n\t.file\t1 "/old/checkout/tests/sim/test_triton_frontend.py"\n'
           '\t.file\t2 "/gone/helpers_nobody_loaded_xyz.py"\n')
    fixed = current_source_paths(ptx, unmasked_load)
    assert f'.file\t1 "{THIS}"' in fixed
    assert '.file\t2 "/gone/helpers_nobody_loaded_xyz.py"' in fixed


def test_not_a_jit_function():
    def plain(x):
        return x
    with pytest.raises(LaunchError, match="needs a @triton.jit"):
        tt.launch(plain, (1,), np.zeros(4, np.float32))
    with pytest.raises(LaunchError, match="needs a @triton.jit"):
        tt.Kernel(vadd.fn)


def _hide_triton(monkeypatch):
    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "triton", None)


def test_triton_missing(monkeypatch):
    _hide_triton(monkeypatch)
    with pytest.raises(LaunchError, match=r"needs Triton.*pip install triton"):
        tt.launch(vadd, (1,), np.zeros(4, np.float32))
    d = tt.tensor_descriptor(np.zeros((8, 8), np.float32), [8, 8])     # the stand-in, for replay
    assert isinstance(d, tt.HostTensorDescriptor) and d.strides == [8, 1]


# ------------------------------------------------------------------------------------------ save / replay
def test_save_and_replay_without_triton(tmp_path, monkeypatch):
    """A compiled launch saved as PTX + JSON runs again where Triton is not importable, with new arrays."""
    rng = np.random.default_rng(12)
    x = _ints(rng, (64, 64), np.float32)
    y = _ints(rng, (64, 64), np.float32)
    out = np.zeros((64, 64), np.float32)
    prep = tt.prepare(desc_scale_add, (1, 1), tt.tensor_descriptor(x, [64, 64]), tt.tensor_descriptor(y, [64, 64]),
                      tt.tensor_descriptor(out, [64, 64]), 2.0, BM=64, BN=64, arch="sm_100a")
    prep.save(tmp_path / "k.ptx")
    n = 1000
    a = np.arange(n, dtype=np.float32)
    o = np.zeros(n, np.float32)
    tt.prepare(vadd, (4,), a, a, o, n, BLOCK=256, arch="sm_90a").save(tmp_path / "v.ptx")
    _hide_triton(monkeypatch)
    from tcsim.launch import run_launch
    x2 = _ints(rng, (128, 64), np.float32)
    out2 = np.zeros((128, 64), np.float32)
    rp = tt.replay(tmp_path / "k.ptx", (2, 1), tt.tensor_descriptor(x2, [64, 64]), tt.tensor_descriptor(x2, [64, 64]),
                   tt.tensor_descriptor(out2, [64, 64]), -3.0)
    assert rp.write_back(run_launch(rp.launch)) == ["out_desc"]
    assert np.array_equal(out2, -2 * x2)
    b = np.arange(n, dtype=np.float32) * 3
    rp = tt.replay(tmp_path / "v.ptx", (4,), a, b, o, n, BLOCK=256)
    rp.write_back(run_launch(rp.launch))
    assert np.array_equal(o, a + b)
    assert ".target sm_90a" in rp.ptx and rp.launch.block == (32 * rp.metadata["num_warps"], 1, 1)


def test_replay_checks_the_specialisation(tmp_path):
    a = np.zeros(1024, np.float32)
    tt.prepare(vadd, (4,), a, a, a, 1024, BLOCK=256, arch="sm_100a").save(tmp_path / "v.ptx")
    rec = __import__("json").loads((tmp_path / "v.json").read_text())
    assert rec["signature"]["n"] == "i32" and "n" in rec["divisibility_16"]     # 1024 is a multiple of 16
    with pytest.raises(LaunchError, match=r"argument n = 1000 does not match the compiled kernel's i32 "
                                          r"\(specialised as a multiple of 16\)") as ei:
        tt.replay(tmp_path / "v.ptx", (4,), a, a, a, 1000)
    assert ei.value.loc.file == str(tmp_path / "v.json")
    with pytest.raises(LaunchError, match="does not match the compiled kernel's \\*fp32"):
        tt.replay(tmp_path / "v.ptx", (4,), a, a.astype(np.float16), a, 1024)
    with pytest.raises(LaunchError, match="compiled with BLOCK = 256"):
        tt.replay(tmp_path / "v.ptx", (4,), a, a, a, 1024, BLOCK=128)
    with pytest.raises(LaunchError, match="missing argument 'n'"):
        tt.replay(tmp_path / "v.ptx", (4,), a, a, a)
    with pytest.raises(LaunchError, match="cannot read the saved Triton kernel"):
        tt.replay(tmp_path / "nothing.ptx", (4,), a, a, a, 1024)
