"""The numba-compiled numerics kernels (sim/numerics/jit_kernels.py) against the numpy references they port.

The references (``fp.ffma_reference``, ``tensor_core.mma_float_reference`` / ``mma_block_scaled_reference``) are
the specification, checked elsewhere against hand-derived vectors, an independent Fraction model, mmasim and H100
golden data; here the compiled path must give the same bits on large random sets built to hit the edges: NaN,
Inf, zeros of both signs, subnormals, overflow, cancellation, every rounding mode, .ftz / .sat / .relu, every
tensor-core kind of the parameter table, both policy switches, chained K blocks and partial last blocks.  The
golden-data replays (tests/hw/test_*numerics_golden.py, test_mmasim_oracle.py::test_golden_disagreements,
test_tensor_core.py) call the public entry points, which run these kernels whenever numba is installed
(test_compiled_path_is_on); test_golden_replays_run_compiled replays two of them with a spy on the kernels.
"""
from __future__ import annotations

import dataclasses
import itertools
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from tcsim.numerics import fp, jit, jit_kernels, tensor_core as tc  # noqa: E402
from tcsim.numerics.tensor_core import tc_params  # noqa: E402

import test_mmasim_oracle as MO  # noqa: E402  (tests/numerics is on sys.path: the oracle's case generator)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def test_compiled_path_is_on():
    """With numba installed (and TCSIM_NUMBA unset) the public entry points run the compiled kernels -- so every
    golden replay in the suite goes through them."""
    if os.environ.get("TCSIM_NUMBA", "1") == "0":
        pytest.skip("TCSIM_NUMBA=0 turns the compiled kernels off")
    assert jit.enabled() and jit.kernels() is jit_kernels


# ============================================================================================ exact fma
_GEOM = {"f16": (16, 10), "bf16": (16, 7), "f32": (32, 23), "f64": (64, 52)}
_DT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def edge_codes(rng, fmt: str, n: int) -> np.ndarray:
    """Codes of ``fmt``: a sixth each of random codes, subnormals, Inf / NaN, zeros, values near 1 (so sums
    cancel and round in every way) and values near the overflow and underflow thresholds; random signs."""
    w, man = _GEOM[fmt]
    eb = w - 1 - man
    bias = (1 << (eb - 1)) - 1
    sel = rng.integers(0, 7, n)
    frac = rng.integers(0, 1 << man, n, dtype=np.uint64)
    x = rng.integers(0, 1 << w, n, dtype=np.uint64, endpoint=False) if w < 64 else \
        rng.integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False)
    x = np.where(sel == 1, frac, x)
    x = np.where(sel == 2, np.uint64(((1 << eb) - 1) << man) | rng.integers(0, 3, n, dtype=np.uint64), x)
    x = np.where(sel == 3, np.uint64(0), x)
    near1 = (bias + rng.integers(-3, 3, n)).astype(np.uint64)
    x = np.where(sel == 4, (near1 << np.uint64(man)) | frac, x)
    hi = ((1 << eb) - 2 - rng.integers(0, 3, n)).astype(np.uint64)
    x = np.where(sel == 5, (hi << np.uint64(man)) | frac, x)
    lo = rng.integers(1, 4, n).astype(np.uint64)
    x = np.where(sel == 6, (lo << np.uint64(man)) | frac, x)
    x = x | (rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(w - 1))
    return x.astype(_DT[w])


def _fma_modes(fmt):
    for rnd, ftz, sat, relu in itertools.product(("rn", "rz", "rm", "rp"), (False, True), (False, True),
                                                 (False, True)):
        if (ftz and fmt in ("bf16", "f64")) or (sat and fmt == "f64") or \
                (relu and (fmt in ("f32", "f64") or rnd != "rn" or sat)):
            continue
        yield rnd, ftz, sat, relu


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16", "f64"])
def test_ffma_matches_reference(fmt):
    rng = np.random.default_rng(zlib_seed(fmt))
    n = 12000
    a, b, c = (edge_codes(rng, fmt, n) for _ in range(3))
    # products that land exactly on -c (exact cancellation, zero-sign rules) and on the subnormal boundary
    c[: n // 8] = fp.fmul(fmt, a[: n // 8], b[: n // 8], "rn") ^ _DT[_GEOM[fmt][0]](1 << (_GEOM[fmt][0] - 1))
    for rnd, ftz, sat, relu in _fma_modes(fmt):
        want = fp.ffma_reference(fmt, a, b, c, rnd, ftz, sat, relu)
        got = fp.ffma(fmt, a, b, c, rnd, ftz, sat, relu)
        assert got.dtype == want.dtype and got.shape == want.shape
        bad = np.nonzero(got != want)[0]
        assert not len(bad), (f"{fmt} {rnd} ftz={ftz} sat={sat} relu={relu}: {len(bad)} lanes differ, first "
                              f"a={int(a[bad[0]]):#x} b={int(b[bad[0]]):#x} c={int(c[bad[0]]):#x}: "
                              f"compiled {int(got[bad[0]]):#x}, reference {int(want[bad[0]]):#x}")


@pytest.mark.parametrize("op", ["fadd", "fsub", "fmul"])
@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
def test_add_sub_mul_match_reference(op, fmt):
    rng = np.random.default_rng(zlib_seed(op + fmt))
    n = 6000
    a, b = edge_codes(rng, fmt, n), edge_codes(rng, fmt, n)
    b[: n // 8] = a[: n // 8] ^ _DT[_GEOM[fmt][0]](1 << (_GEOM[fmt][0] - 1) if op == "fadd" else 0)  # x + -x
    fast, ref = getattr(fp, op), getattr(fp, op + "_reference")
    for rnd, ftz, sat in itertools.product(("rn", "rz", "rm", "rp"), (False, True), (False, True)):
        if ftz and fmt == "bf16":
            continue
        want, got = ref(fmt, a, b, rnd, ftz, sat), fast(fmt, a, b, rnd, ftz, sat)
        assert got.dtype == want.dtype and got.shape == want.shape
        bad = np.nonzero(got != want)[0]
        assert not len(bad), (f"{op} {fmt} {rnd} ftz={ftz} sat={sat}: {len(bad)} lanes differ, first "
                              f"a={int(a[bad[0]]):#x} b={int(b[bad[0]]):#x}: compiled {int(got[bad[0]]):#x}, "
                              f"reference {int(want[bad[0]]):#x}")


def test_ffma_f32_rn_all_finite_takes_the_same_bits_as_the_round_to_odd_path():
    """The reference's f32 .rn fast path (round to odd) decides a call whose lanes are all finite and non-zero;
    the compiled kernel rounds the TwoSum pair directly: both must agree."""
    rng = np.random.default_rng(7)
    v = rng.standard_normal((3, 50000)) * np.exp2(rng.integers(-60, 60, (3, 50000)))
    a, b, c = (x.astype(np.float32).view(np.uint32) for x in v)
    assert np.array_equal(fp.ffma("f32", a, b, c), fp.ffma_reference("f32", a, b, c))


def test_ffma_f32_rn_kernel_near_the_normal_boundary():
    """fp.ffma's f32 .rn kernel (ffma_f32_rn: round to odd in float64, one cast) where .ftz's flush depends on the
    unrounded sum: products and addends around 2**-126 (sums of both signs just above and below the smallest
    normal, subnormal addends, exact cancellations), with and without .ftz, against the numpy reference."""
    rng = np.random.default_rng(11)
    n = 40000
    ea = rng.integers(-70, -55, n)
    eb = -126 - ea + rng.integers(-2, 2, n)
    sgn = np.where(rng.integers(0, 2, (3, n)) == 1, -1.0, 1.0)
    a = (sgn[0] * rng.uniform(1, 2, n) * np.exp2(ea)).astype(np.float32)
    b = (sgn[1] * rng.uniform(1, 2, n) * np.exp2(eb)).astype(np.float32)
    c = (sgn[2] * rng.uniform(0, 2, n) * np.exp2(rng.integers(-150, -124, n))).astype(np.float32)
    c[: n // 10] = -(a[: n // 10].astype(np.float64) * b[: n // 10]).astype(np.float32)   # near-cancellation
    a, b, c = (x.view(np.uint32) for x in (a, b, c))
    for ftz in (False, True):
        want = fp.ffma_reference("f32", a, b, c, "rn", ftz)
        got = fp.ffma("f32", a, b, c, "rn", ftz)
        bad = np.nonzero(got != want)[0]
        assert not len(bad), (f"ftz={ftz}: {len(bad)} lanes differ, first a={int(a[bad[0]]):#x} "
                              f"b={int(b[bad[0]]):#x} c={int(c[bad[0]]):#x}")


def test_ffma_shapes_dtypes_and_errors_match_reference():
    one = np.uint32(0x3F800000)
    for args in [(one, one, one), (np.array([1, 2], np.uint32), one, np.array([[3], [4]], np.uint32)),
                 (np.array([0x3C00], np.uint64) | np.uint64(1 << 40), np.uint16(0x3C00), [0x3C00])]:
        fmt = "f16" if np.asarray(args[1]).dtype == np.uint16 else "f32"
        want, got = fp.ffma_reference(fmt, *args), fp.ffma(fmt, *args)
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    for f in (fp.ffma, fp.ffma_reference):
        with pytest.raises(ValueError, match="raw bit patterns"):
            f("f32", np.array([1.0]), one, one)
        with pytest.raises(ValueError, match="relu"):
            f("f32", one, one, one, relu=True)


def zlib_seed(s: str) -> int:
    import zlib
    return zlib.crc32(s.encode())


# ============================================================================================ tensor core
def _big(v, rng, tiles: int, K: int):
    """The oracle campaign's 8x8 tiles (every scenario: extremes, subnormals, specials, cancellation) laid side
    by side into one (8t, K) x (K, 8t) problem, so rows and columns mix scenarios."""
    A, B, C, scales, _ = MO.gen_batch(v, rng, tiles, K)
    T = MO.TILE
    a = A.reshape(tiles * T, K)
    b = B.transpose(1, 0, 2).reshape(K, tiles * T)
    c = np.empty((tiles * T, tiles * T), np.int64)
    for i in range(tiles):
        for j in range(tiles):
            c[i * T:(i + 1) * T, j * T:(j + 1) * T] = C[(i + 3 * j) % tiles]
    dt = np.uint32 if v.acc == "f32" else np.uint16
    if scales is None:
        return a, b, c.astype(dt), None
    sa = scales[0].reshape(tiles * T, -1)
    sb = scales[1].transpose(1, 0, 2).reshape(-1, tiles * T)
    return a, b, c.astype(dt), (sa, sb)


def _both(v, a, b, c, scales, p):
    if scales is None:
        return (tc.mma_float(a, b, c, v.a_fmt, v.b_fmt, v.acc, p),
                tc.mma_float_reference(a, b, c, v.a_fmt, v.b_fmt, v.acc, p))
    args = (a, b, c, scales[0], scales[1], v.a_fmt, v.b_fmt, v.scale_fmt, v.scale_block, p)
    return tc.mma_block_scaled(*args), tc.mma_block_scaled_reference(*args)


def _assert_same(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    bad = np.argwhere(got != want)
    assert not len(bad), (f"{what}: {len(bad)} of {got.size} outputs differ; first at {tuple(bad[0])}: "
                          f"compiled {int(got[tuple(bad[0])]):#x}, reference {int(want[tuple(bad[0])]):#x}")


_SAMPLE = [v for v in MO.VARIANTS if v.kind not in ("f8f6f4", "mxf8f6f4")] + \
    [v for v in MO.VARIANTS if v.kind in ("f8f6f4", "mxf8f6f4") and (v.a_fmt, v.b_fmt) in
     {("e4m3", "e4m3"), ("e5m2", "e2m1"), ("e3m2", "e2m3"), ("e2m1", "e4m3")}]


@pytest.mark.parametrize("v", _SAMPLE, ids=lambda v: v.name)
def test_tensor_core_kinds_match_reference(v, monkeypatch):
    """Every kind of the sm_100a table (f8f6f4 / mxf8f6f4: a sample of the 25 format pairs, both
    accumulators), K over two blocks (three for the group kinds' smaller scale blocks) and, for the unscaled
    kinds, a K that leaves a partial last block."""
    spy = _Spy(monkeypatch, "fused_float_rows", "fused_group_rows", "mma_float_codes", "mma_float_codes_f64",
               "mma_group_codes")
    rng = np.random.default_rng(zlib_seed(v.name))
    p = MO.tcsim_params(v)
    Ks = [2 * p.block] if v.scale_fmt else [2 * p.block, p.block + p.block // 2]
    for K in Ks:
        a, b, c, scales = _big(v, rng, 6, K)
        got, want = _both(v, a, b, c, scales, p)
        _assert_same(got, want, f"{v.name} K={K}")
    assert sum(spy.calls.values()) == len(Ks), "the compiled kernel did not run"


@pytest.mark.parametrize("tweak", [dict(zero_exp_policy="min"), dict(e_floor=None),
                                   dict(zero_exp_policy="min", e_floor=None), dict(group_exp_policy="sum")],
                         ids=lambda t: ",".join(f"{k}={w}" for k, w in t.items()))
def test_policy_switches_match_reference(tweak):
    names = ["tf32.f32.tf32", "f16.f32.bf16", "f8f6f4.f16.e5m2.e3m2", "mxf8f6f4.f32.e2m3.e4m3.block32.ue8m0",
             "mxf4nvf4.f32.e2m1.e2m1.block16.ue4m3", "mxf4.f32.e2m1.e2m1.block32.ue8m0"]
    by = {v.name: v for v in MO.VARIANTS}
    rng = np.random.default_rng(11)
    for name in names:
        v = next((by[n] for n in by if n.startswith(name)), None)
        assert v is not None, name
        if "group_exp_policy" in tweak and v.scale_fmt is None:
            continue
        p = dataclasses.replace(MO.tcsim_params(v), **tweak)
        a, b, c, scales = _big(v, rng, 4, 2 * p.block)
        got, want = _both(v, a, b, c, scales, p)
        _assert_same(got, want, f"{v.name} {tweak}")


@pytest.mark.parametrize("path,fmt", [("wgmma", "e4m3"), ("wgmma", "e5m2"), ("mma.sync", "e4m3"),
                                      ("mma.sync", "e5m2"), ("wgmma", "f16"), ("wgmma", "tf32")])
@pytest.mark.parametrize("acc", ["f32", "f16"])
def test_hopper_rows_match_reference(path, fmt, acc):
    """sm_90a: wgmma fp8 (F = 13, f32 result cut to e8m13) and mma.sync fp8 (the f16-HMMA lowering with an
    IEEE add of C), f16 and tf32."""
    if fmt == "tf32" and acc == "f16":
        pytest.skip("tf32 accumulates in f32 only")
    other = {"e4m3": "e5m2", "e5m2": "e4m3"}.get(fmt, fmt)
    kind = {"e4m3": "f8f6f4", "e5m2": "f8f6f4", "f16": "f16", "tf32": "tf32"}[fmt]
    v = next(v for v in MO.VARIANTS if v.kind == kind and v.a_fmt == fmt and v.b_fmt == other and v.acc == acc
             and v.scale_fmt is None)
    p = tc_params("sm_90a", path, fmt)
    rng = np.random.default_rng(zlib_seed(f"{path}{fmt}{acc}"))
    for K in (32, 64):
        a, b, c, _ = _big(v, rng, 4, K)
        got = tc.mma_float(a, b, c, fmt, other, acc, p)
        want = tc.mma_float_reference(a, b, c, fmt, other, acc, p)
        _assert_same(got, want, f"sm_90a {path} {fmt}x{other} -> {acc} K={K}")


def test_nvfp4_example_shape_matches_reference():
    """One MMA of the nvfp4 example's shape (M 128, N 256, K 64, ue4m3 scales, block16) from a non-zero
    accumulator, then a second chained on the first."""
    rng = np.random.default_rng(3)
    p = tc_params("sm_100a", "tcgen05", "e2m1", kind="mxf4nvf4")
    a = rng.integers(0, 16, (128, 64)).astype(np.uint8)
    b = rng.integers(0, 16, (64, 256)).astype(np.uint8)
    sfa = rng.integers(0x20, 0x50, (128, 4)).astype(np.uint8)
    sfb = rng.integers(0x20, 0x50, (4, 256)).astype(np.uint8)
    sfa[5, 1] = 0x7F                                           # a NaN scale: row 5 is NaN
    c = (rng.standard_normal((128, 256)) * 64).astype(np.float32).view(np.uint32)
    args = ("e2m1", "e2m1", "ue4m3", 16, p)
    d = tc.mma_block_scaled(a, b, c, sfa, sfb, *args)
    _assert_same(d, tc.mma_block_scaled_reference(a, b, c, sfa, sfb, *args), "nvfp4 step 1")
    assert np.all(d[5] == 0x7FFFFFFF)
    _assert_same(tc.mma_block_scaled(a, b, d, sfa, sfb, *args),
                 tc.mma_block_scaled_reference(a, b, d, sfa, sfb, *args), "nvfp4 step 2")


@pytest.mark.parametrize("name", ["f16.f32.f16.f16", "f16.f32.bf16", "tf32.f32.tf32", "f16.f16.f16.f16",
                                  "f8f6f4.f32.e4m3.e4m3", "f8f6f4.f16.e5m2.e2m1"])
def test_float64_kernel_matches_the_int64_kernel(name):
    """``fused_float_rows_f64`` (each product's truncating alignment done in float64) against the int64 kernel it
    replaces where its exactness bounds hold, on the oracle's edge tiles and on a wide random problem (the
    gemm_async MMA's shape, K over 3 blocks) whose products span the whole exponent range."""
    v = next(v for v in MO.VARIANTS if v.name.startswith(name))
    p = MO.tcsim_params(v)
    rng = np.random.default_rng(zlib_seed(name))
    a, b, c, _ = _big(v, rng, 6, 3 * p.block)
    pa, pb = tc._code_params(a, v.a_fmt), tc._code_params(b, v.b_fmt)
    assert tc._f64_exact(pa[1], pb[1], p.frac_bits, p.block)
    geo = tc._acc_geometry(v.acc, p)
    args = (pa[1], pb[1], int(p.block), p.frac_bits) + geo
    got = jit_kernels.mma_float_codes_f64(pa[0], pb[0], tc._i64(c), *args)
    want = jit_kernels.mma_float_codes(pa[0], pb[0], tc._i64(c), *args)
    _assert_same(got, want, f"{name} edge tiles")
    if v.a_fmt in ("f16", "bf16"):
        dt = np.uint16
        a = edge_codes(rng, v.a_fmt, 128 * 48).reshape(128, 48).astype(dt)
        b = edge_codes(rng, v.b_fmt, 48 * 96).reshape(48, 96).astype(dt)
        c = edge_codes(rng, "f32", 128 * 96).reshape(128, 96) if v.acc == "f32" else \
            edge_codes(rng, "f16", 128 * 96).reshape(128, 96)
        pa, pb = tc._code_params(a, v.a_fmt), tc._code_params(b, v.b_fmt)
        got = jit_kernels.mma_float_codes_f64(pa[0], pb[0], tc._i64(c), *args)
        want = jit_kernels.mma_float_codes(pa[0], pb[0], tc._i64(c), *args)
        _assert_same(got, want, f"{name} random edge codes")


def test_headroom_not_guaranteed_falls_back_to_the_reference():
    """A custom F too large for the int64 argument: the compiled path declines and the reference raises."""
    v = next(v for v in MO.VARIANTS if v.name == "f16.f32.f16.f16")
    p = dataclasses.replace(MO.tcsim_params(v), frac_bits=60)
    a = np.full((2, 16), 0x3C00, np.uint16)
    b = np.full((16, 2), 0x3C00, np.uint16)
    c = np.zeros((2, 2), np.uint32)
    for f in (tc.mma_float, tc.mma_float_reference):
        with pytest.raises(OverflowError):
            f(a, b, c, "f16", "f16", "f32", p)


# ============================================================================================ golden replays
class _Spy:
    def __init__(self, monkeypatch, *names):
        self.calls = dict.fromkeys(names, 0)
        for n in names:
            fn = getattr(jit_kernels, n)

            def wrapped(*a, _fn=fn, _n=n):
                self.calls[_n] += 1
                return _fn(*a)
            monkeypatch.setattr(jit_kernels, n, wrapped)


def test_golden_replays_run_compiled(monkeypatch):
    """The stored mmasim-oracle disagreements (group kinds) and the H100 mma.sync targeted vectors, replayed
    through the public entry points with a spy on the kernels: bit for bit the recorded outputs, and every call
    went through compiled code."""
    if not jit.enabled():
        pytest.skip("compiled kernels off")
    spy = _Spy(monkeypatch, "fused_float_rows", "fused_group_rows", "mma_float_codes", "mma_float_codes_f64",
               "mma_group_codes")
    for path in MO._golden_files():
        got, g, _ = MO.replay_golden(path)
        np.testing.assert_array_equal(got, g["expected"])
    assert spy.calls["fused_group_rows"] + spy.calls["mma_group_codes"] > 0
    from calib.probes.mma_ptx import FLOAT_PAIRS
    tgt = np.load(GOLDEN / "mma_sync_numerics" / "targeted.npz")
    for name, pair in FLOAT_PAIRS.items():
        P = tc_params("sm_90a", "mma.sync", pair.ab)
        a, bt, c, d = (tgt[f"{name}/{k}"] for k in ("a", "bt", "c", "d"))
        got = np.stack([tc.mma_float(a[i], bt[i].T, c[i], pair.ab, pair.ab, pair.acc, P) for i in range(len(a))])
        assert np.array_equal(got, d), name
    assert spy.calls["mma_float_codes"] + spy.calls["mma_float_codes_f64"] > 0


def test_codes_out_of_range_raise_as_the_reference_does():
    p = tc_params("sm_100a", "tcgen05", "e2m1")                       # kind::f8f6f4 with fp4 operands
    a = np.full((2, 32), 0x1F, np.uint8)                              # 5 bits: not an e2m1 code
    b = np.zeros((32, 2), np.uint8)
    c = np.zeros((2, 2), np.uint32)
    for f in (tc.mma_float, tc.mma_float_reference):
        with pytest.raises(ValueError, match="out of range"):
            f(a, b, c, "e2m1", "e2m1", "f32", p)
        with pytest.raises(ValueError, match="out of range"):
            f(b.T.astype(np.int16) - 1, a.T, c, "e2m1", "e2m1", "f32", p)
