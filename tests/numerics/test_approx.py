"""sim/numerics/approx.py: the PTX-specified special cases exactly, canonical NaNs, .ftz, and the measured H100
models against independent float64 references within the accuracy the PTX ISA states (bit-exactness against
the GPU: tests/numerics/test_approx_golden.py, and exhaustively test_approx_hw.py -m gpu)."""
import math
from pathlib import Path

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
    assert got[:2] == [2.0 ** -140, 2.0 ** -149]       # r * r with r = MUFU.EX2(x / 2): exact powers of two
    assert abs(got[2] - float(np.float32(2.0 ** -126.5))) <= 2.0 ** -149   # within one subnormal ulp
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


def _ulps(got_bits, ref):
    """Distance of f32 results from float64 references in units of the f32 spacing at the reference."""
    got = got_bits.view(np.float32).astype(np.float64)
    sp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.abs(got - ref) / np.maximum(sp, 2.0 ** -149)


@pytest.mark.parametrize("ftz", [False, True])
@pytest.mark.parametrize("name", sorted(REFS))
def test_model_within_ptx_accuracy(name, ftz):
    """The measured models stay inside the accuracy the PTX ISA promises (an independent check: the tables come
    from the GPU, the bounds from the PTX ISA text, the reference from numpy's float64 libm)."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(-3, 3, 3000),
                        rng.random(500) * 200 - 100]).astype(np.float32)
    if name in ("lg2_approx", "sqrt_approx", "rsqrt_approx"):
        x = np.abs(x)
    if name in ("sin_approx", "cos_approx"):
        x = x[np.abs(x) <= np.pi]  # beyond, x *rz f32(1/(2 pi)) alone can be off by more than 2**-20.5 (GPU too)
    got = getattr(ap, name)(x.view(np.uint32), ftz=ftz)
    with np.errstate(all="ignore"):
        ref = REFS[name](x.astype(np.float64))
    fin = np.isfinite(ref) & (np.abs(ref) >= 2.0 ** -126) & (np.abs(ref) <= np.finfo(np.float32).max)
    g, r = got[fin], ref[fin]
    gv = g.view(np.float32).astype(np.float64)
    if name == "ex2_approx":
        assert _ulps(g, r).max() <= 2
    elif name in ("rcp_approx", "sqrt_approx"):
        assert (np.abs(gv / r - 1) <= 2 ** -23).all()
    elif name == "rsqrt_approx":
        assert (np.abs(gv / r - 1) <= 2 ** -22.9).all()
    elif name == "lg2_approx":
        assert (np.abs(gv - r) <= 2 ** -22.6 + np.spacing(np.abs(r).astype(np.float32))).all()
    elif name == "tanh_approx":
        assert (np.abs(gv - r) <= 2 ** -11 * np.abs(r)).all()
    else:
        assert np.abs(gv - r).max() <= 2 ** -20.5
    assert ap.APPROX_MODEL == "h100-measured"


def test_known_hardware_values():
    """Values read off an H100 and quoted in the PTX-level discussions: lg2(0.5) = -0.99999994 (the hardware
    truncates an internal value slightly above log2(m)), lg2(2**-27) just above -27, ex2 of a negative input uses
    its own table (2**-1 exactly), sin of tiny or huge arguments is 0 (a 25-bit fraction of a revolution)."""
    got = ap.lg2_approx(F32(0.5, 2.0 ** -27, 1.0, 2.0, 8.0))
    assert [hex(int(v)) for v in got] == ["0xbf7ffffe", hex(int(F32(-27.0)[0]) - 1), "0x0", "0x3f800000",
                                          "0x40400000"]
    assert f32(ap.ex2_approx(F32(-1.0, 1.0, 0.0, -150.0, 127.0, 128.0))) == [0.5, 2.0, 1.0, 0.0, 2.0 ** 127, INF]
    assert f32(ap.sin_approx(F32(1e-7, -1e-7, 2.0 ** 26, 2.0 ** -126))) == [0.0, -0.0, 0.0, 0.0]
    assert f32(ap.rcp_approx(F32(2.0 ** 127, 2.0 ** 126))) == [2.0 ** -127, 2.0 ** -126]
    assert f32(ap.rcp_approx(F32(2.0 ** 127), ftz=True)) == [0.0]


def test_exactness_flags():
    """Every f32 .approx form is bit-exact, sin/cos since their measured model (data/trig_sm90.npz, fitted by
    calib/approx/trig_model.py to an H100 record of all 2**32 inputs) is package data; the f64 forms are not."""
    assert all(ap.approx_exact(n) for n in ("ex2_approx", "lg2_approx", "rcp_approx", "sqrt_approx",
                                            "rsqrt_approx", "tanh_approx", "ex2_approx_f16", "tanh_approx_bf16",
                                            "sin_approx", "cos_approx"))
    assert not ap.approx_exact("rcp_approx_f64") and not ap.approx_exact("rsqrt_approx_f64")


def test_approx_package_data_is_a_few_mb():
    """Issue 16: the measured models ship as package data of a few MB at most (all .approx tables together)."""
    from importlib import resources
    data = resources.files("tcsim.numerics").joinpath("data")
    sizes = {p.name: p.stat().st_size for p in Path(str(data)).glob("*.npz")}
    assert set(sizes) >= {"approx_sm90.npz", "trig_sm90.npz"}
    assert sizes["trig_sm90.npz"] < 600_000 and sum(sizes.values()) < 2_500_000, sizes


def test_sin_model_within_the_ptx_bound_on_every_quadrant():
    """The model of MUFU.SIN over random fractions t of the whole revolution (all four quadrants, which the model
    derives from one quarter-turn function) stays within the PTX ISA's stated accuracy of sin.approx (absolute
    2**-20.5) of the float64 sine; the bit-exact oracle is the H100 sample of test_approx_golden.py."""
    from tcsim.numerics.approx import _mufu_sin_t, _trig_model_np
    m = _trig_model_np()
    t = np.random.default_rng(5).integers(0, 1 << 25, 1 << 16).astype(np.int64)
    v = (_mufu_sin_t(t, np, m) & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(np.float64)
    assert np.max(np.abs(v - np.sin(2 * np.pi * t / 2.0 ** 25))) < 2.0 ** -20.5


def test_half_variants():
    x = np.array([0.0, -0.0, 1.0, -1.0, 15.0, 16.0, -25.0, np.inf, -np.inf, np.nan, 0.3],
                 np.float16)
    got = ap.ex2_approx_f16(x.view(np.uint16))
    assert got.dtype == np.uint16
    ref = np.exp2(x.astype(np.float64))
    gv = got.view(np.float16).astype(np.float64)
    fin = (ref >= 2.0 ** -14) & (ref <= 65504)
    assert (np.abs(gv[fin] / ref[fin] - 1) <= 2 ** -9.9).all()
    assert list(gv[[0, 1, 2, 3, 4, 5, 7, 8]]) == [1.0, 1.0, 2.0, 0.5, 32768.0, INF, INF, 0.0]
    assert int(got[9]) == 0x7FFF
    t = ap.tanh_approx_f16(x.view(np.uint16)).view(np.float16).astype(np.float64)
    tr = np.tanh(x.astype(np.float64))
    ok = np.isfinite(x)
    assert (np.abs(t[ok] - tr[ok]) <= 2 ** -10 * np.abs(tr[ok])).all()   # H100: up to 2**-10.02 (PTX: 2**-10.987)
    assert list(t[[7, 8]]) == [1.0, -1.0]
    xb = np.array([0.5, -3.0, 1e-39, np.inf], ml_dtypes.bfloat16)
    tb = ap.tanh_approx_bf16(xb.view(np.uint16)).view(ml_dtypes.bfloat16).astype(np.float64)
    assert abs(tb[0] - np.tanh(0.5)) <= 2 ** -8 and abs(tb[1] - np.tanh(-3.0)) <= 2 ** -8 and tb[3] == 1.0
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
