"""sim/numerics/approx.py: the PTX-specified special cases exactly, canonical NaNs, .ftz, and the
'correctly-rounded-f64' model against an mpmath-free reference (numpy float64 rounded through
numpy float32 / float16, which is a single rounding for these functions' float64 results)."""
import math

import ml_dtypes
import numpy as np
import pytest

from tcsim.numerics import approx as ap

# numpy references cast NaN/Inf/out-of-range values on purpose (the special cases under test)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32 = lambda *v: np.array(v, np.float32).view(np.uint32)  # noqa: E731
INF, NAN = math.inf, math.nan


def f32(bits):
    return [float(x) for x in np.asarray(bits, np.uint32).view(np.float32)]


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


SPECIALS = [
    (ap.ex2_approx, [(-INF, 0.0), (INF, INF), (0.0, 1.0), (-0.0, 1.0), (1.0, 2.0), (-1.0, 0.5),
                     (128.0, INF), (-150.0, 2.0 ** -150 * 0 + 0.0), (NAN, NAN)]),
    (ap.lg2_approx, [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (INF, INF), (1.0, 0.0),
                     (8.0, 3.0), (NAN, NAN)]),
    (ap.rcp_approx, [(0.0, INF), (-0.0, -INF), (INF, 0.0), (-INF, -0.0), (2.0, 0.5), (NAN, NAN)]),
    (ap.sqrt_approx, [(-0.0, -0.0), (0.0, 0.0), (-1.0, NAN), (INF, INF), (4.0, 2.0), (-INF, NAN)]),
    (ap.rsqrt_approx, [(0.0, INF), (-0.0, -INF), (-1.0, NAN), (INF, 0.0), (4.0, 0.5)]),
    (ap.sin_approx, [(INF, NAN), (-INF, NAN), (0.0, 0.0), (-0.0, -0.0), (NAN, NAN)]),
    (ap.cos_approx, [(INF, NAN), (-INF, NAN), (0.0, 1.0), (-0.0, 1.0)]),
    (ap.tanh_approx, [(INF, 1.0), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (50.0, 1.0),
                      (-50.0, -1.0), (NAN, NAN)]),
]


@pytest.mark.parametrize("fn,cases", SPECIALS, ids=[f.__name__ for f, _ in SPECIALS])
def test_ptx_special_cases(fn, cases):
    x = F32(*[c[0] for c in cases])
    got = fn(x)
    assert got.dtype == np.uint32
    for (inp, exp), g, gb in zip(cases, f32(got), got):
        assert same(g, exp), (fn.__name__, inp, g, exp)
        if math.isnan(exp):
            assert int(gb) == 0x7FFFFFFF


def test_ex2_underflow_to_subnormal_and_ftz():
    x = F32(-140.0, -149.0, -126.5)
    got = f32(ap.ex2_approx(x))
    assert got == [2.0 ** -140, 2.0 ** -149, float(np.float32(2.0 ** -126.5))]
    assert f32(ap.ex2_approx(x, ftz=True)) == [0.0, 0.0, 0.0]
    # ftz on input: 2**(subnormal) == 1 either way; lg2(subnormal) = -Inf with ftz
    sub = np.array([1], np.uint32)
    assert f32(ap.lg2_approx(sub)) == [-149.0]
    assert f32(ap.lg2_approx(sub, ftz=True)) == [-INF]
    assert f32(ap.rcp_approx(sub, ftz=True)) == [INF]


REFS = {
    "ex2_approx": np.exp2, "lg2_approx": np.log2, "rcp_approx": lambda v: 1.0 / v,
    "sqrt_approx": np.sqrt, "rsqrt_approx": lambda v: 1.0 / np.sqrt(v), "sin_approx": np.sin,
    "cos_approx": np.cos, "tanh_approx": np.tanh,
}


@pytest.mark.parametrize("name", sorted(REFS))
def test_model_is_f64_rounded_once(name):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(-3, 3, 3000),
                        rng.random(500) * 200 - 100]).astype(np.float32)
    if name in ("lg2_approx", "sqrt_approx", "rsqrt_approx"):
        x = np.abs(x)
    got = getattr(ap, name)(x.view(np.uint32))
    with np.errstate(all="ignore"):
        ref = REFS[name](x.astype(np.float64)).astype(np.float32)
    assert np.array_equal(got.view(np.float32), ref, equal_nan=True)
    assert ap.APPROX_MODEL == "correctly-rounded-f64"


def test_half_variants():
    x = np.array([0.0, -0.0, 1.0, -1.0, 15.0, 16.0, -25.0, np.inf, -np.inf, np.nan, 0.3],
                 np.float16)
    got = ap.ex2_approx_f16(x.view(np.uint16))
    assert got.dtype == np.uint16
    ref = np.exp2(x.astype(np.float64)).astype(np.float16)
    assert np.array_equal(got.view(np.float16), ref, equal_nan=True)
    assert int(got[9]) == 0x7FFF
    t = ap.tanh_approx_f16(x.view(np.uint16)).view(np.float16)
    assert np.array_equal(t, np.tanh(x.astype(np.float64)).astype(np.float16), equal_nan=True)
    xb = np.array([0.5, -3.0, 1e-39, np.inf], ml_dtypes.bfloat16)
    tb = ap.tanh_approx_bf16(xb.view(np.uint16)).view(ml_dtypes.bfloat16).astype(np.float64)
    assert list(tb[[0, 1, 3]]) == [float(ml_dtypes.bfloat16(np.tanh(0.5))),
                                   float(ml_dtypes.bfloat16(np.tanh(-3.0))), 1.0]
    eb = ap.ex2_approx_bf16(xb.view(np.uint16))      # .ftz: 2**(subnormal) = 1
    assert float(eb.view(ml_dtypes.bfloat16)[2]) == 1.0


def test_f64_variants():
    x = np.array([0.0, -0.0, 4.0, np.inf, 1e-310], np.float64).view(np.uint64)
    r = ap.rcp_approx_f64(x).view(np.float64)
    assert list(r[:4]) == [INF, -INF, 0.25, 0.0] and r[4] == INF   # ftz input
    s = ap.rsqrt_approx_f64(x).view(np.float64)
    assert list(s[:4]) == [INF, -INF, 0.5, 0.0]


def test_ulp_distance():
    a = F32(1.0, 1.0, 0.0, -0.0, 1.0, NAN, NAN, 2.0 ** -149)
    b = F32(1.0, float(np.nextafter(np.float32(1), np.float32(2))), -0.0, 2.0 ** -149, NAN, NAN,
            1.0, -(2.0 ** -149))
    d = ap.ulp_distance("f32", a, b)
    assert d.dtype == np.int64
    assert list(d) == [0, 1, 0, 1, np.iinfo(np.int64).max, 0, np.iinfo(np.int64).max, 2]
    # neighbouring values across a binade, and f64 extremes do not overflow
    big = np.array([np.finfo(np.float64).max, -np.finfo(np.float64).max]).view(np.uint64)
    d = ap.ulp_distance("f64", big[:1], big[1:])
    assert d[0] == np.iinfo(np.int64).max          # saturates
    h = np.array([0x3C00, 0x3BFF], np.uint16)
    assert list(ap.ulp_distance("f16", h[:1], h[1:])) == [1]
    with pytest.raises(ValueError):
        ap.ulp_distance("e4m3", h, h)


# ------------------------------------------------------------------------------------------
# hardware probe (runs only where CuPy and a CUDA GPU are present: pytest -m gpu)
# ------------------------------------------------------------------------------------------

def _cupy():
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
        return cp
    except Exception:  # noqa: BLE001 - any failure means "no GPU here"
        pytest.skip("needs CuPy and a CUDA GPU")


_CT = {16: ("unsigned short", "h", np.uint16), 32: ("unsigned int", "r", np.uint32),
       64: ("unsigned long long", "l", np.uint64)}


def gpu_run(op, in_types, out_type, *arrays):
    """Run one PTX instruction per element on the GPU.  `op` uses {d} {a} {b} {c}; in_types /
    out_type are PTX register types (f32, f16, b16, u32, pred, ...), declared as .reg inside the
    asm block and moved bit-exactly from/to the C integer containers."""
    cp = _cupy()
    bits = lambda t: 16 if t[-2:] in ("16",) else 64 if t[-2:] == "64" else 32  # noqa: E731
    names = "abc"
    params, args, decl, moves = [], [], [], []
    for i, t in enumerate(in_types):
        ctype, con, _ = _CT[bits(t)]
        params.append(f"const {ctype}* in{i}")
        args.append(f'"{con}"(in{i}[i])')
        decl.append(f".reg .{t} {names[i]};")
        moves.append(f"mov.b{bits(t)} {names[i]}, %{i + 1};")
    if out_type == "pred":
        ctype, con, odt = _CT[32]
        decl.append(".reg .pred d;")
        tail = "selp.u32 %0, 1, 0, d;"
    else:
        ctype, con, odt = _CT[bits(out_type)]
        decl.append(f".reg .{out_type} d;")
        tail = f"mov.b{bits(out_type)} %0, d;"
    body = op.format(d="d", a="a", b="b", c="c")
    asm = " ".join(["{"] + decl + moves + [body + ";", tail, "}"])
    src = (f'extern "C" __global__ void k({", ".join(params)}, {ctype}* out, int n) {{\n'
           f"  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;\n"
           f"  {ctype} r; asm volatile(\"{asm}\" : \"={con}\"(r) : {', '.join(args)});\n"
           f"  out[i] = r;\n}}\n")
    kern = cp.RawKernel(src, "k")
    n = len(arrays[0])
    dev = [cp.asarray(np.ascontiguousarray(x.astype(_CT[bits(t)][2]))) for x, t in
           zip(arrays, in_types)]
    out = cp.zeros(n, dtype=odt)
    kern(((n + 127) // 128,), (128,), (*dev, out, np.int32(n)))
    return cp.asnumpy(out)


def report(tag, got, exp, inputs):
    bad = np.nonzero(np.asarray(got).astype(np.uint64) != np.asarray(exp).astype(np.uint64))[0]
    line = f"GPU {tag}: {len(got) - len(bad)}/{len(got)} bit-exact"
    if len(bad):
        i = bad[0]
        line += (f"; first mismatch inputs={[hex(int(x[i])) for x in inputs]} "
                 f"gpu={hex(int(got[i]))} sim={hex(int(exp[i]))}")
    print(line)
    return len(bad)


@pytest.mark.gpu
def test_gpu_approx_ulp_report():
    """Measure the model's distance from the GPU's SFU results (printed, for the record) and
    require the special cases, canonical NaNs and ftz behaviour to match exactly."""
    rng = np.random.default_rng(5)
    x = np.concatenate([
        (rng.standard_normal(20000) * 10.0 ** rng.integers(-4, 4, 20000)).astype(np.float32),
        (rng.random(5000) * 200 - 100).astype(np.float32),
        rng.integers(0, 1 << 32, 5000, dtype=np.uint64).astype(np.uint32).view(np.float32),
    ]).view(np.uint32)
    specials = F32(0.0, -0.0, INF, -INF, NAN, -1.0, 1.0, 2.0 ** -149, -(2.0 ** -149), 2.0 ** -127,
                   128.0, -150.0, 0.5, 100.0)
    x = np.concatenate([x, specials])
    for ptx, fn in (("ex2.approx.f32", ap.ex2_approx), ("ex2.approx.ftz.f32",
                                                         lambda v: ap.ex2_approx(v, ftz=True)),
                    ("lg2.approx.f32", ap.lg2_approx), ("lg2.approx.ftz.f32",
                                                         lambda v: ap.lg2_approx(v, ftz=True)),
                    ("rcp.approx.f32", ap.rcp_approx), ("rcp.approx.ftz.f32",
                                                         lambda v: ap.rcp_approx(v, ftz=True)),
                    ("sqrt.approx.f32", ap.sqrt_approx), ("rsqrt.approx.f32", ap.rsqrt_approx),
                    ("sin.approx.f32", ap.sin_approx), ("cos.approx.f32", ap.cos_approx),
                    ("tanh.approx.f32", ap.tanh_approx)):
        got = gpu_run(f"{ptx} {{d}}, {{a}}", ["f32"], "f32", x)
        sim = fn(x)
        d = ap.ulp_distance("f32", got, sim)
        fin = np.isfinite(x.view(np.float32))
        print(f"GPU {ptx}: exact {np.mean(d == 0):.4f}, <=1ulp {np.mean(d <= 1):.4f}, "
              f"max ulp (finite in) {int(d[fin].max())}, p99.9 {int(np.quantile(d[fin], 0.999))}")
        n = len(specials)
        for s, g, m in zip(specials, got[-n:], sim[-n:]):
            if int(g) != int(m):
                print(f"   special {hex(int(s))}: gpu {hex(int(g))} sim {hex(int(m))}")
    h = np.arange(0, 1 << 16, dtype=np.uint64).astype(np.uint16)
    for ptx, fn, reg in (("ex2.approx.f16", ap.ex2_approx_f16, "f16"),
                         ("tanh.approx.f16", ap.tanh_approx_f16, "f16"),
                         ("tanh.approx.bf16", ap.tanh_approx_bf16, "b16"),
                         ("ex2.approx.ftz.bf16", ap.ex2_approx_bf16, "b16")):
        got = gpu_run(f"{ptx} {{d}}, {{a}}", [reg], reg, h)
        d = ap.ulp_distance("f16" if reg == "f16" else "bf16", got, fn(h))
        print(f"GPU {ptx}: exact {np.mean(d == 0):.4f}, <=1ulp {np.mean(d <= 1):.4f}, "
              f"max ulp {int(d.max())}")
