"""tcsim's .approx results against H100 golden data, bit for bit (no GPU needed).

tests/hw/golden_h100/approx_golden.npz was recorded on an H100 by
    python3 calib/approx/verify.py --out DIR --golden tests/hw/golden_h100/approx_golden.npz
(calib/approx/README.md): every f32 form on 128 random mantissas of each of the 512 sign/exponent bins plus
specials (65,584 inputs), the f16/bf16 forms on all 65536 inputs, the x2 forms on 16,384 random pairs and
div.{approx,full}{.ftz}.f32 on 32,768 operand pairs (a quarter with tiny/subnormal, a quarter with huge/Inf/NaN
divisors).  The exhaustive check (all 2**32 inputs) is tests/numerics/test_approx_hw.py (-m gpu).
"""
import sys
from pathlib import Path

import numpy as np
import pytest

from tcsim.numerics import approx as ap
from tcsim.semantics.float_arith import div_approx_f32

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "semantics"))
from test_integer import run_body  # noqa: E402

GOLD = Path(__file__).resolve().parents[1] / "hw" / "golden_h100" / "approx_golden.npz"


@pytest.fixture(scope="module")
def gold():
    z = np.load(GOLD)
    assert str(z["device"]).startswith("NVIDIA H100")
    return {k: z[k] for k in z.files}


F32 = ["ex2", "ex2_ftz", "lg2", "lg2_ftz", "rcp", "rcp_ftz", "rsqrt", "rsqrt_ftz", "sqrt", "sqrt_ftz", "tanh",
       "sin", "sin_ftz", "cos", "cos_ftz"]


def _fn(form):
    base = form[:-4] if form.endswith("_ftz") else form
    return getattr(ap, base + "_approx"), form.endswith("_ftz"), base + "_approx"


def _first_diffs(x, got, want, k=5):
    bad = np.nonzero(got != want)[0]
    return f"{len(bad)} of {len(x)} differ, e.g. " + ", ".join(
        f"x={int(x[i]):#010x} gpu={int(want[i]):#010x} tcsim={int(got[i]):#010x}" for i in bad[:k])


@pytest.mark.parametrize("form", F32)
def test_f32_forms_against_h100(gold, form):
    fn, ftz, name = _fn(form)
    x, want = gold["x"], gold["f32_" + form]
    got = fn(x, ftz=ftz)
    assert got.dtype == np.uint32 and got.shape == x.shape
    if ap.approx_exact(name):
        assert np.array_equal(got, want), _first_diffs(x, got, want)
        return
    # sin/cos: the argument reduction is exact (so are the zeros and their signs, NaNs, the tiny arguments); the
    # MUFU value is the float64 function rounded once, a few ulp from the GPU's (calib/approx/README.md)
    agree = np.mean(got == want)
    assert agree > 0.84, agree
    e = (x >> 23) & 0xFF
    zero = (got & 0x7FFFFFFF) == 0          # (not conversely: the GPU also gives sin(+-pi as f32) = +-0)
    trivial = (e <= 103) | (e == 255) | zero
    assert np.array_equal(got[trivial], want[trivial]), _first_diffs(x[trivial], got[trivial], want[trivial])


def test_ftz_and_plain_forms_differ_only_where_ptxas_scales(gold):
    """Sanity of the recorded data: the non-.ftz forms differ from .ftz only for subnormal inputs or results."""
    x = gold["x"]
    for f in ("rcp", "sqrt", "rsqrt", "lg2", "ex2"):
        d = gold["f32_" + f] != gold["f32_" + f + "_ftz"]
        sub_in = (x & 0x7F800000) == 0
        sub_out = ((gold["f32_" + f] & 0x7F800000) == 0) & ((gold["f32_" + f] & 0x7FFFFF) != 0)
        assert not (d & ~sub_in & ~sub_out).any(), f


@pytest.mark.parametrize("name", ["ex2_f16", "ex2_bf16", "tanh_f16", "tanh_bf16"])
def test_half_forms_against_h100(gold, name):
    fn = getattr(ap, name.replace("_f16", "_approx_f16").replace("_bf16", "_approx_bf16"))
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    got = fn(h)
    assert np.array_equal(got, gold["h16_" + name]), _first_diffs(h, got, gold["h16_" + name])


@pytest.mark.parametrize("op,base", [("ex2.approx.f16x2", "ex2_f16"), ("ex2.approx.ftz.bf16x2", "ex2_bf16"),
                                     ("tanh.approx.f16x2", "tanh_f16"), ("tanh.approx.bf16x2", "tanh_bf16")])
def test_packed_half_forms_against_h100(gold, op, base):
    x, want = gold["x2_in"], gold["x2_" + base.replace("_f16", "_f16x2").replace("_bf16", "_bf16x2")]
    out = run_body(f"{op} %o, %a;", {"a": "b32"}, {"o": "b32"}, {"a": x[:64]})
    assert np.array_equal(out["o"], want[:64]), _first_diffs(x[:64], out["o"], want[:64])


@pytest.mark.parametrize("form", ["div_approx", "div_approx_ftz", "div_full", "div_full_ftz"])
def test_div_against_h100(gold, form):
    a, b, want = gold["div_a"], gold["div_b"], gold["div_" + form]
    got = div_approx_f32(ap.rcp_approx, a, b, "ftz" in form, "full" in form)
    nan = ((got & 0x7FFFFFFF) > 0x7F800000) & ((want & 0x7FFFFFFF) > 0x7F800000)
    assert np.array_equal(np.where(nan, 0, got), np.where(nan, 0, want)), _first_diffs(a, got, want)
    assert np.array_equal(got[nan], want[nan])
    op = form.replace("_", ".") + ".f32"
    out = run_body(f"{op} %o, %a, %b;", {"a": "f32", "b": "f32"}, {"o": "b32"}, {"a": a[:64], "b": b[:64]})
    assert np.array_equal(out["o"], want[:64]), _first_diffs(a[:64], out["o"], want[:64])


@pytest.mark.parametrize("op,form", [("ex2.approx.f32", "ex2"), ("lg2.approx.ftz.f32", "lg2_ftz"),
                                     ("rcp.approx.f32", "rcp"), ("rsqrt.approx.f32", "rsqrt"),
                                     ("sqrt.approx.ftz.f32", "sqrt_ftz"), ("tanh.approx.f32", "tanh")])
def test_ptx_level_against_h100(gold, op, form):
    """The same results through tcsim's PTX semantics (parse, decode, execute) on 64 lanes of subnormal,
    near-boundary and special inputs."""
    x, want = gold["x"], gold["f32_" + form]
    e = (x >> 23) & 0xFF
    pick = np.concatenate([np.nonzero(e == 0)[0][:16], np.nonzero((e >= 125) & (e <= 130))[0][:16],
                           np.nonzero(e >= 250)[0][:16], np.arange(len(x) - 16, len(x))])
    out = run_body(f"{op} %o, %a;", {"a": "f32"}, {"o": "b32"}, {"a": x[pick]})
    assert np.array_equal(out["o"], want[pick]), _first_diffs(x[pick], out["o"], want[pick])
