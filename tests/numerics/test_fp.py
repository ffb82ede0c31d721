"""sim/numerics/fp.py against an independent slow reference built on fractions.Fraction.

The reference (`ref_round`) rounds an exact rational to the target format from first principles
(IEEE 754-2019 §4.3); it shares no code with the implementation except `tcsim.isa.formats.decode`,
which test_formats.py checks exhaustively against numpy / ml_dtypes.
Every op is checked in every rounding mode on thousands of inputs: uniform random bit patterns
(covering subnormals, +-0, +-Inf, NaN and every exponent), near-cancellation pairs, operands whose
exact result sits on or next to a rounding boundary (halfway cases), and tiny/huge exponents.
"""
import math
from fractions import Fraction as Fr

import numpy as np
import pytest

from tcsim.isa.formats import decode
from tcsim.numerics import fp

PARAMS = {  # precision p (with hidden bit), emin, emax, bits
    "f16": (11, -14, 15, 16),
    "bf16": (8, -126, 127, 16),
    "f32": (24, -126, 127, 32),
    "f64": (53, -1022, 1023, 64),
}
DT = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}
NAN = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0x7FFFFFFFFFFFFFFF}
MODES = ("rn", "rz", "rm", "rp")
FMTS = ("f16", "bf16", "f32", "f64")


# ------------------------------------------------------------------------------------------
# reference
# ------------------------------------------------------------------------------------------

def floor_log2(a: Fr) -> int:
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fr(2) ** e > a:
        e -= 1
    while Fr(2) ** (e + 1) <= a:
        e += 1
    return e


def ref_round(fmt, x: Fr, rnd):
    """Correctly rounded value of nonzero rational x: a float (may be +-inf; exact)."""
    p, emin, emax, _ = PARAMS[fmt]
    neg = x < 0
    a = -x if neg else x
    e = floor_log2(a)
    q = max(e - (p - 1), emin - (p - 1))
    sc = a / Fr(2) ** q
    n = sc.numerator // sc.denominator
    r = sc - n
    if rnd == "rn":
        inc = r > Fr(1, 2) or (r == Fr(1, 2) and n % 2 == 1)
    elif rnd == "rz":
        inc = False
    elif rnd == "rp":
        inc = r > 0 and not neg
    else:
        inc = r > 0 and neg
    val = (n + int(inc)) * Fr(2) ** q
    maxval = (2 ** p - 1) * Fr(2) ** (emax - p + 1)
    if val > maxval:
        away = rnd == "rn" or (rnd == "rp" and not neg) or (rnd == "rm" and neg)
        res = math.inf if away else float(maxval)
    else:
        res = float(val)
    return -res if neg else res


def vals(fmt, bits):
    return [float(v) for v in decode(fmt, np.asarray(bits, dtype=DT[fmt]))]


def is_sub(fmt, v):
    p, emin, _, _ = PARAMS[fmt]
    return v != 0 and math.isfinite(v) and abs(v) < 2.0 ** emin


def flush(fmt, v):
    return math.copysign(0.0, v) if is_sub(fmt, v) else v


def zero_sum_sign(rnd, sa, sb):
    if sa == sb:
        return sa
    return rnd == "rm"


def ref_binop(op, fmt, x, y, rnd):
    if math.isnan(x) or math.isnan(y):
        return math.nan
    if op == "add":
        if math.isinf(x) or math.isinf(y):
            return x + y
        s = Fr(x) + Fr(y)
        if s == 0:
            neg = zero_sum_sign(rnd, math.copysign(1, x) < 0, math.copysign(1, y) < 0)
            return -0.0 if neg else 0.0
        return ref_round(fmt, s, rnd)
    if op == "mul":
        if math.isinf(x) or math.isinf(y):
            return x * y
        s = Fr(x) * Fr(y)
        if s == 0:
            return -0.0 if (math.copysign(1, x) * math.copysign(1, y)) < 0 else 0.0
        return ref_round(fmt, s, rnd)
    if op == "div":
        sgn = math.copysign(1, x) * math.copysign(1, y)
        if math.isinf(x) and math.isinf(y) or (x == 0 and y == 0):
            return math.nan
        if math.isinf(x) or y == 0:
            return math.copysign(math.inf, sgn)
        if math.isinf(y) or x == 0:
            return math.copysign(0.0, sgn)
        return ref_round(fmt, Fr(x) / Fr(y), rnd)
    raise ValueError(op)


def ref_fma(fmt, x, y, z, rnd):
    if any(math.isnan(t) for t in (x, y, z)):
        return math.nan
    if math.isinf(z) and math.isfinite(x) and math.isfinite(y):
        return z                       # the exact product is finite, however large
    if any(math.isinf(t) for t in (x, y, z)):
        return x * y + z
    prod = Fr(x) * Fr(y)
    psign = (math.copysign(1, x) * math.copysign(1, y)) < 0
    s = prod + Fr(z)
    if s == 0:
        return -0.0 if zero_sum_sign(rnd, psign, math.copysign(1, z) < 0) else 0.0
    return ref_round(fmt, s, rnd)


def ref_sqrt(fmt, x, rnd):
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0 or math.isinf(x):
        return x
    a = Fr(x)
    n, d = a.numerator, a.denominator  # d is a power of two
    k = d.bit_length() - 1
    if k % 2:
        n, k = n * 2, k + 1
    t = 80
    N = n << (2 * t)
    s = math.isqrt(N)
    exact = s * s == N
    val = Fr(s, 2 ** (k // 2 + t))
    if not exact:
        val += Fr(1, 2 ** (k // 2 + t + 1))   # strictly inside the open interval (s, s+1)
    return ref_round(fmt, val, rnd)


# ------------------------------------------------------------------------------------------
# input generation
# ------------------------------------------------------------------------------------------

def specials(fmt):
    p, emin, emax, nb = PARAMS[fmt]
    m = p - 1
    e = nb - 1 - m
    top = ((1 << e) - 1) << m
    s = 1 << (nb - 1)
    base = [0, 1, (1 << m) - 1, 1 << m, (1 << m) + 1, top - 1, top, top | 1, top | (1 << (m - 1)),
            (1 << (nb - 2)) - (1 << m) * 0 + 0,  # 2.0-ish region
            ((1 << (e - 1)) - 1) << m, (((1 << (e - 1)) - 1) << m) | 1]  # 1.0, 1+ulp
    return np.array(base + [b | s for b in base], dtype=np.uint64).astype(DT[fmt])


def gen(fmt, n, rng):
    nb = PARAMS[fmt][3]
    hi = 1 << nb
    if nb == 64:
        r = rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(
            0, 2, n, dtype=np.uint64)
    else:
        r = rng.integers(0, hi, n, dtype=np.uint64)
    return r.astype(DT[fmt])


def gen_moderate(fmt, n, rng):
    """Values with exponents in a narrow window (so operands interact)."""
    p, emin, emax, nb = PARAMS[fmt]
    m = p - 1
    bias = 1 - emin
    e = rng.integers(bias - 6, bias + 6, n).astype(np.uint64)
    frac = rng.integers(0, 1 << m, n, dtype=np.uint64) if m < 63 else None
    sign = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(nb - 1)
    return (sign | (e << np.uint64(m)) | frac).astype(DT[fmt])


def gen_tiny(fmt, n, rng):
    """Values in / near the subnormal range."""
    p, emin, emax, nb = PARAMS[fmt]
    m = p - 1
    e = rng.integers(0, 4, n).astype(np.uint64)
    frac = rng.integers(0, 1 << m, n, dtype=np.uint64)
    sign = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(nb - 1)
    return (sign | (e << np.uint64(m)) | frac).astype(DT[fmt])


def gen_huge(fmt, n, rng):
    p, emin, emax, nb = PARAMS[fmt]
    m = p - 1
    top = (1 << (nb - 1 - m)) - 1
    e = rng.integers(top - 4, top, n).astype(np.uint64)
    frac = rng.integers(0, 1 << m, n, dtype=np.uint64)
    sign = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(nb - 1)
    return (sign | (e << np.uint64(m)) | frac).astype(DT[fmt])


def nudge(fmt, b, rng, k=3):
    """Bit patterns a few ulps away from b (same sign), for near-boundary cases."""
    d = rng.integers(-k, k + 1, len(b)).astype(np.int64)
    return (b.astype(np.int64) + d).astype(np.uint64).astype(DT[fmt])


def neg_bits(fmt, b):
    return (b ^ DT[fmt](1 << (PARAMS[fmt][3] - 1))).astype(DT[fmt])


def operand_pairs(fmt, n, rng):
    a_parts, b_parts = [], []
    sp = specials(fmt)
    A, B = np.meshgrid(sp, sp)
    a_parts.append(A.ravel())
    b_parts.append(B.ravel())
    for g1, g2 in ((gen, gen), (gen_moderate, gen_moderate), (gen_tiny, gen_tiny),
                   (gen_huge, gen_huge), (gen_moderate, gen_tiny), (gen_huge, gen_moderate)):
        a_parts.append(g1(fmt, n, rng))
        b_parts.append(g2(fmt, n, rng))
    # cancellation: b ~ -a
    a = gen_moderate(fmt, n, rng)
    a_parts.append(a)
    b_parts.append(neg_bits(fmt, nudge(fmt, a, rng)))
    # exponent gaps around p (halfway / sticky cases for add)
    p = PARAMS[fmt][0]
    a = gen_moderate(fmt, n, rng)
    shift = rng.integers(p - 3, p + 4, n).astype(np.uint64)
    m = p - 1
    bb = a.astype(np.uint64) - (shift << np.uint64(m))
    bb = np.where(rng.random(n) < 0.5, bb & ~np.uint64((1 << m) - 1), bb)  # powers of two
    bb = bb ^ (rng.integers(0, 2, n).astype(np.uint64) << np.uint64(PARAMS[fmt][3] - 1))
    a_parts.append(a)
    b_parts.append(bb.astype(DT[fmt]))
    return np.concatenate(a_parts), np.concatenate(b_parts)


# ------------------------------------------------------------------------------------------
# comparison
# ------------------------------------------------------------------------------------------

def check(fmt, got_bits, expected, ctx):
    got = vals(fmt, got_bits)
    bad = []
    for i, (g, e) in enumerate(zip(got, expected)):
        gb = int(got_bits[i])
        if math.isnan(e):
            # f32/f16/bf16: canonical NaN; f64 propagates operand NaNs (rules tested separately)
            if (fmt != "f64" and gb != NAN[fmt]) or not math.isnan(got[i]):
                bad.append(i)
        elif not (g == e and math.copysign(1, g) == math.copysign(1, e)):
            bad.append(i)
    if bad:
        i = bad[0]
        raise AssertionError(
            f"{len(bad)} mismatches; first: {ctx(i)} got {hex(int(got_bits[i]))} ({got[i]!r}) "
            f"expected {expected[i]!r}")


N_RANDOM = {"f16": 120, "bf16": 120, "f32": 200, "f64": 200}


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("rnd", MODES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_ops_against_fraction(fmt, rnd, op):
    rng = np.random.default_rng(hash((fmt, rnd, op)) & 0xFFFF)
    a, b = operand_pairs(fmt, N_RANDOM[fmt], rng)
    if op == "mul" or op == "div":
        # products / quotients near 1 exercise mid-range rounding too
        a2 = gen_moderate(fmt, 300, rng)
        b2 = gen_moderate(fmt, 300, rng)
        a, b = np.concatenate([a, a2]), np.concatenate([b, b2])
    fn = {"add": fp.fadd, "sub": fp.fsub, "mul": fp.fmul, "div": fp.fdiv}[op]
    got = fn(fmt, a, b, rnd)
    assert got.dtype == DT[fmt] and got.shape == a.shape
    va, vb = vals(fmt, a), vals(fmt, b)
    if op == "sub":
        exp = [ref_binop("add", fmt, x, -y, rnd) for x, y in zip(va, vb)]
    else:
        exp = [ref_binop(op, fmt, x, y, rnd) for x, y in zip(va, vb)]
    check(fmt, got, exp, lambda i: f"{op}.{rnd}.{fmt}({va[i]!r}, {vb[i]!r})")


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("rnd", MODES)
def test_fma_against_fraction(fmt, rnd):
    rng = np.random.default_rng(hash((fmt, rnd, "fma")) & 0xFFFF)
    n = N_RANDOM[fmt]
    a, b = operand_pairs(fmt, n, rng)
    m = len(a)
    c = gen(fmt, m, rng)
    # replace a third of c by values cancelling the product (single vs double rounding)
    prod = fp.fmul(fmt, a, b, "rn")
    sel = rng.random(m) < 0.4
    c = np.where(sel, neg_bits(fmt, nudge(fmt, prod, rng, 2)), c)
    sel2 = rng.random(m) < 0.2
    c = np.where(sel2, gen_moderate(fmt, m, rng), c)
    # c an exponent gap below the product (sticky / halfway cases)
    sel3 = rng.random(m) < 0.15
    p = PARAMS[fmt][0]
    gap = rng.integers(p - 2, 2 * p + 3, m).astype(np.uint64)
    shifted = prod.astype(np.uint64) - (gap << np.uint64(p - 1))
    ok = (prod.astype(np.uint64) & ~np.uint64(1 << (PARAMS[fmt][3] - 1))) > (gap << np.uint64(p - 1))
    c = np.where(sel3 & ok, shifted.astype(DT[fmt]), c)
    got = fp.ffma(fmt, a, b, c, rnd)
    va, vb, vc = vals(fmt, a), vals(fmt, b), vals(fmt, c)
    exp = [ref_fma(fmt, x, y, z, rnd) for x, y, z in zip(va, vb, vc)]
    check(fmt, got, exp, lambda i: f"fma.{rnd}.{fmt}({va[i]!r}, {vb[i]!r}, {vc[i]!r})")


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("rnd", MODES)
def test_sqrt_rcp_against_fraction(fmt, rnd):
    rng = np.random.default_rng(hash((fmt, rnd, "sqrt")) & 0xFFFF)
    a = np.concatenate([specials(fmt), gen(fmt, 300, rng), gen_moderate(fmt, 300, rng),
                        gen_tiny(fmt, 100, rng), gen_huge(fmt, 100, rng)])
    va = vals(fmt, a)
    got = fp.fsqrt(fmt, a, rnd)
    check(fmt, got, [ref_sqrt(fmt, x, rnd) for x in va], lambda i: f"sqrt.{rnd}.{fmt}({va[i]!r})")
    got = fp.frcp(fmt, a, rnd)
    check(fmt, got, [ref_binop("div", fmt, 1.0, x, rnd) for x in va],
          lambda i: f"rcp.{rnd}.{fmt}({va[i]!r})")


def test_sqrt_exact_squares_and_halfway():
    # perfect squares must be exact; squares of midpoints are the hardest sticky cases
    rng = np.random.default_rng(7)
    m = rng.integers(1 << 11, 1 << 12, 400)
    sq = (m.astype(np.float64) ** 2).astype(np.float32).view(np.uint32)
    for rnd in MODES:
        got = fp.fsqrt("f32", sq, rnd).view(np.float32)
        assert np.array_equal(got.astype(np.float64), m.astype(np.float64))
    mid = (np.arange(1, 2000, dtype=np.float64) * 2 + 1) / 2 ** 12 + 1  # (1 + k/2**11 + 2**-12)
    x = (mid * mid)
    xb = x.astype(np.float64).view(np.uint64)
    for rnd in MODES:
        got = fp.fsqrt("f64", xb, rnd)
        exp = [ref_sqrt("f64", float(v), rnd) for v in x]
        check("f64", got, exp, lambda i: f"sqrt.{rnd}.f64({x[i]!r})")


def _finite(*xs):
    return all(math.isfinite(x) for x in xs)


@pytest.mark.parametrize("fmt", ["f32", "f16"])
@pytest.mark.parametrize("op", ["add", "mul", "fma", "div", "sqrt"])
def test_ftz(fmt, op):
    rng = np.random.default_rng(11)
    a = np.concatenate([gen_tiny(fmt, 200, rng), gen_moderate(fmt, 100, rng)])
    b = np.concatenate([gen_tiny(fmt, 150, rng), gen_moderate(fmt, 150, rng)])
    c = gen_tiny(fmt, 300, rng)
    rng.shuffle(b)
    va = [flush(fmt, v) for v in vals(fmt, a)]
    vb = [flush(fmt, v) for v in vals(fmt, b)]
    vc = [flush(fmt, v) for v in vals(fmt, c)]
    for rnd in MODES:
        if op == "add":
            got = fp.fadd(fmt, a, b, rnd, ftz=True)
            exp = [ref_binop("add", fmt, x, y, rnd) for x, y in zip(va, vb)]
        elif op == "mul":
            got = fp.fmul(fmt, a, b, rnd, ftz=True)
            exp = [ref_binop("mul", fmt, x, y, rnd) for x, y in zip(va, vb)]
        elif op == "div":
            got = fp.fdiv(fmt, a, b, rnd, ftz=True)
            exp = [ref_binop("div", fmt, x, y, rnd) for x, y in zip(va, vb)]
        elif op == "sqrt":
            got = fp.fsqrt(fmt, a, rnd, ftz=True)
            exp = [ref_sqrt(fmt, x, rnd) for x in va]
        else:
            got = fp.ffma(fmt, a, b, c, rnd, ftz=True)
            exp = [ref_fma(fmt, x, y, z, rnd) for x, y, z in zip(va, vb, vc)]
        # add/div/sqrt: flush where the exact result is below the smallest normal (the round-toward-zero
        # result is subnormal); mul/fma: tininess after rounding with an unbounded exponent (the operands
        # scaled so the boundary sits at 1.0, where rounding is unbounded)
        tiny = 2.0 ** PARAMS[fmt][1]
        k = Fr(1) / Fr(tiny)
        if op == "mul":
            ez = [ref_binop("mul", fmt, Fr(x) * k, Fr(y), rnd) * tiny if _finite(x, y) else 1.0
                  for x, y in zip(va, vb)]
        elif op == "fma":
            ez = [ref_fma(fmt, Fr(x) * k, Fr(y), Fr(z) * k, rnd) * tiny if _finite(x, y, z) else 1.0
                  for x, y, z in zip(va, vb, vc)]
        elif op == "add":
            ez = [ref_binop("add", fmt, x, y, "rz") for x, y in zip(va, vb)]
        elif op == "div":
            ez = [ref_binop("div", fmt, x, y, "rz") for x, y in zip(va, vb)]
        else:
            ez = [ref_sqrt(fmt, x, "rz") for x in va]
        exp = [math.copysign(0.0, e) if (not math.isnan(z) and abs(z) < tiny) else e
               for e, z in zip(exp, ez)]
        check(fmt, got, exp, lambda i: f"{op}.{rnd}.ftz.{fmt} lane {i}")


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
def test_sat(fmt):
    rng = np.random.default_rng(3)
    a, b = operand_pairs(fmt, 60, rng)
    got = fp.fadd(fmt, a, b, "rn", sat=True)
    va, vb = vals(fmt, a), vals(fmt, b)
    exp = []
    for x, y in zip(va, vb):
        r = ref_binop("add", fmt, x, y, "rn")
        exp.append(0.0 if (math.isnan(r) or r <= 0) else min(r, 1.0))
    check(fmt, got, exp, lambda i: f"add.sat.{fmt}({va[i]!r},{vb[i]!r})")


def test_relu_fma_half():
    a = np.array([0x3C00, 0x3C00, 0x7E00, 0x0001], np.uint16)  # 1, 1, NaN, tiny
    b = np.array([0xBC00, 0x3C00, 0x3C00, 0x8001], np.uint16)
    c = np.array([0x0000, 0x0000, 0x0000, 0x0000], np.uint16)
    got = fp.ffma("f16", a, b, c, "rn", relu=True)
    assert [hex(int(x)) for x in got] == ["0x0", "0x3c00", "0x7fff", "0x0"]


def test_canonical_nan_and_dtypes():
    for fmt in ("f16", "bf16", "f32"):
        nan_in = np.array([NAN[fmt] - 5], dtype=DT[fmt])  # a NaN with a different payload
        one = fp.frcp(fmt, fp.frcp(fmt, np.array([NAN[fmt] - 5], DT[fmt])))  # still NaN
        assert int(one[0]) == NAN[fmt]
        assert int(fp.fadd(fmt, nan_in, nan_in)[0]) == NAN[fmt]
        assert fp.fadd(fmt, nan_in, nan_in).dtype == DT[fmt]


def test_rm_zero_sign_and_exact_cancellation():
    x = np.array([1.5, -2.0], np.float32).view(np.uint32)
    y = np.array([-1.5, 2.0], np.float32).view(np.uint32)
    assert list(fp.fadd("f32", x, y, "rm")) == [0x80000000, 0x80000000]
    assert list(fp.fadd("f32", x, y, "rn")) == [0, 0]
    nz = np.array([0x80000000], np.uint32)
    assert list(fp.fadd("f32", nz, nz, "rn")) == [0x80000000]


def test_invalid_combinations_raise():
    z = np.zeros(2, np.uint64)
    with pytest.raises(ValueError):
        fp.fadd("f64", z, z, ftz=True)
    with pytest.raises(ValueError):
        fp.fadd("f32", z, z, rnd="rna")
    with pytest.raises(ValueError):
        fp.fadd("f8", z, z)
    with pytest.raises(ValueError):
        fp.fcompare("f32", "lg", z, z)
    with pytest.raises(ValueError):
        fp.fadd("f32", np.zeros(2), np.zeros(2))  # float arrays are not bit patterns


# ------------------------------------------------------------------------------------------
# min / max / abs / neg / compare
# ------------------------------------------------------------------------------------------

def ref_minmax(x, y, want_max, nan_mode):
    if math.isnan(x) and math.isnan(y):
        return math.nan
    if math.isnan(x) or math.isnan(y):
        return math.nan if nan_mode else (y if math.isnan(x) else x)
    if x == y:  # signed zeros: -0 < +0
        sx, sy = math.copysign(1, x), math.copysign(1, y)
        if want_max:
            return x if sx > sy else y
        return x if sx < sy else y
    return max(x, y) if want_max else min(x, y)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("want_max", [False, True])
@pytest.mark.parametrize("nan_mode", [False, True])
def test_min_max(fmt, want_max, nan_mode):
    if fmt == "f64" and nan_mode:
        pytest.skip(".NaN not defined for f64")
    rng = np.random.default_rng(5)
    a, b = operand_pairs(fmt, 50, rng)
    fn = fp.fmax if want_max else fp.fmin
    got = fn(fmt, a, b, nan=nan_mode)
    va, vb = vals(fmt, a), vals(fmt, b)
    exp = [ref_minmax(x, y, want_max, nan_mode) for x, y in zip(va, vb)]
    check(fmt, got, exp, lambda i: f"min/max({va[i]!r},{vb[i]!r})")
    if fmt != "f64":
        got = fn(fmt, a, b, xorsign_abs=True)
        exp = []
        for x, y in zip(va, vb):
            r = ref_minmax(abs(x), abs(y), want_max, False)
            if not math.isnan(r):
                neg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
                r = -abs(r) if neg else abs(r)
            exp.append(r)
        check(fmt, got, exp, lambda i: f"min/max.xorsign.abs({va[i]!r},{vb[i]!r})")


def test_min_ftz_and_nan_operand():
    a = np.array([0x00000001, 0x7FC00000, 0x80000000], np.uint32)
    b = np.array([0x80000000, 0x3F800000, 0x00000000], np.uint32)
    assert list(fp.fmin("f32", a, b, ftz=True)) == [0x80000000, 0x3F800000, 0x80000000]
    assert list(fp.fmax("f32", a, b, ftz=True)) == [0x00000000, 0x3F800000, 0x00000000]


def test_abs_neg():
    a = np.array([0x80000001, 0x7FC00001, 0x00000000, 0xFF800000], np.uint32)
    assert list(fp.fabs("f32", a)) == [1, 0x7FFFFFFF, 0, 0x7F800000]
    assert list(fp.fneg("f32", a)) == [1, 0x7FFFFFFF, 0x80000000, 0x7F800000]
    assert list(fp.fabs("f32", a, ftz=True)) == [0, 0x7FFFFFFF, 0, 0x7F800000]
    h = np.array([0x8001, 0x3C00], np.uint16)
    assert list(fp.fneg("bf16", h)) == [0x0001, 0xBC00]


@pytest.mark.parametrize("fmt", FMTS)
def test_compare(fmt):
    rng = np.random.default_rng(9)
    a, b = operand_pairs(fmt, 40, rng)
    va, vb = vals(fmt, a), vals(fmt, b)
    pyops = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
             "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
    for op in fp.COMPARE_OPS:
        got = fp.fcompare(fmt, op, a, b)
        assert got.dtype == bool
        for i, (x, y) in enumerate(zip(va, vb)):
            un = math.isnan(x) or math.isnan(y)
            if op == "num":
                e = not un
            elif op == "nan":
                e = un
            elif len(op) == 3:
                e = un or pyops[op[:2]](x, y)
            else:
                e = (not un) and pyops[op](x, y)
            assert bool(got[i]) == e, (op, x, y)
    # ftz: subnormal compares equal to zero
    t = np.array([1], DT[fmt])
    z = np.array([0], DT[fmt])
    if fmt in ("f32", "f16"):
        assert fp.fcompare(fmt, "eq", t, z, ftz=True)[0]
    assert not fp.fcompare(fmt, "eq", t, z)[0]


def test_packed2_order_and_results():
    # element 0 in the low half
    a = np.array([0x40003C00], np.uint32)  # hi=2.0, lo=1.0
    b = np.array([0x3C003C00], np.uint32)  # hi=1.0, lo=1.0
    r = fp.packed2(fp.fadd, "f16", a, b)
    assert r.dtype == np.uint32 and int(r[0]) == 0x42004000  # hi=3.0 lo=2.0
    lo, hi = fp.packed2(fp.fcompare, "f16", "gt", a, b)
    assert (bool(lo[0]), bool(hi[0])) == (False, True)
    r = fp.packed2(fp.ffma, "bf16", a, b, b, rnd="rn")
    assert r.dtype == np.uint32
    with pytest.raises(ValueError):
        fp.packed2(fp.fadd, "f32", a, b)


def test_vectorised_speed_f32():
    """A warp-sized f32 fma must not take a slow path (guard against per-lane loops)."""
    import time
    rng = np.random.default_rng(1)
    a, b, c = (gen_moderate("f32", 32, rng) for _ in range(3))
    t = time.perf_counter()
    for _ in range(50):
        fp.ffma("f32", a, b, c, "rz")
        fp.fadd("f32", a, b, "rn")
    assert (time.perf_counter() - t) / 100 < 5e-3


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


def _operands(fmt, rng, n=600):
    a, b = operand_pairs(fmt, n, rng)
    c = gen(fmt, len(a), rng)
    prod = fp.fmul(fmt, a, b, "rn")
    sel = rng.random(len(a)) < 0.4
    c = np.where(sel, neg_bits(fmt, nudge(fmt, prod, rng, 2)), c)
    return a, b, c


@pytest.mark.gpu
def test_gpu_ieee_ops_bit_exact():
    """Every IEEE op in every mode, f32 and f64 (and the f16/bf16 forms), on the GPU vs fp.py."""
    rng = np.random.default_rng(123)
    bad = 0
    for fmt in ("f32", "f64"):
        a, b, c = _operands(fmt, rng)
        for rnd in MODES:
            for name, fn, ptx, ins in (
                ("add", lambda: fp.fadd(fmt, a, b, rnd), f"add.{rnd}.{fmt} {{d}}, {{a}}, {{b}}", 2),
                ("sub", lambda: fp.fsub(fmt, a, b, rnd), f"sub.{rnd}.{fmt} {{d}}, {{a}}, {{b}}", 2),
                ("mul", lambda: fp.fmul(fmt, a, b, rnd), f"mul.{rnd}.{fmt} {{d}}, {{a}}, {{b}}", 2),
                ("fma", lambda: fp.ffma(fmt, a, b, c, rnd), f"fma.{rnd}.{fmt} {{d}}, {{a}}, {{b}}, {{c}}", 3),
                ("div", lambda: fp.fdiv(fmt, a, b, rnd), f"div.{rnd}.{fmt} {{d}}, {{a}}, {{b}}", 2),
                ("sqrt", lambda: fp.fsqrt(fmt, a, rnd), f"sqrt.{rnd}.{fmt} {{d}}, {{a}}", 1),
                ("rcp", lambda: fp.frcp(fmt, a, rnd), f"rcp.{rnd}.{fmt} {{d}}, {{a}}", 1),
            ):
                ops = (a, b, c)[:ins]
                got = gpu_run(ptx, [fmt] * ins, fmt, *ops)
                bad += report(f"{name}.{rnd}.{fmt}", got, fn(), ops)
        if fmt == "f32":
            for rnd in MODES:
                for name, fn, ptx, ins in (
                    ("add.ftz", lambda: fp.fadd(fmt, a, b, rnd, ftz=True), f"add.{rnd}.ftz.f32 {{d}}, {{a}}, {{b}}", 2),
                    ("mul.ftz", lambda: fp.fmul(fmt, a, b, rnd, ftz=True), f"mul.{rnd}.ftz.f32 {{d}}, {{a}}, {{b}}", 2),
                    ("fma.ftz", lambda: fp.ffma(fmt, a, b, c, rnd, ftz=True), f"fma.{rnd}.ftz.f32 {{d}}, {{a}}, {{b}}, {{c}}", 3),
                    ("div.ftz", lambda: fp.fdiv(fmt, a, b, rnd, ftz=True), f"div.{rnd}.ftz.f32 {{d}}, {{a}}, {{b}}", 2),
                    ("sqrt.ftz", lambda: fp.fsqrt(fmt, a, rnd, ftz=True), f"sqrt.{rnd}.ftz.f32 {{d}}, {{a}}", 1),
                    ("add.sat", lambda: fp.fadd(fmt, a, b, rnd, sat=True), f"add.{rnd}.sat.f32 {{d}}, {{a}}, {{b}}", 2),
                    ("fma.sat", lambda: fp.ffma(fmt, a, b, c, rnd, sat=True), f"fma.{rnd}.sat.f32 {{d}}, {{a}}, {{b}}, {{c}}", 3),
                ):
                    ops = (a, b, c)[:ins]
                    got = gpu_run(ptx, ["f32"] * ins, "f32", *ops)
                    bad += report(f"{name}.{rnd}", got, fn(), ops)
    for fmt, reg in (("f16", "f16"), ("bf16", "b16")):
        a, b, c = _operands(fmt, rng)
        cases = [("add", lambda: fp.fadd(fmt, a, b, "rn"), f"add.rn.{fmt} {{d}}, {{a}}, {{b}}", 2),
                 ("mul", lambda: fp.fmul(fmt, a, b, "rn"), f"mul.rn.{fmt} {{d}}, {{a}}, {{b}}", 2),
                 ("fma", lambda: fp.ffma(fmt, a, b, c, "rn"), f"fma.rn.{fmt} {{d}}, {{a}}, {{b}}, {{c}}", 3),
                 ("fma.relu", lambda: fp.ffma(fmt, a, b, c, "rn", relu=True), f"fma.rn.relu.{fmt} {{d}}, {{a}}, {{b}}, {{c}}", 3)]
        if fmt == "f16":
            cases += [("add.ftz", lambda: fp.fadd(fmt, a, b, "rn", ftz=True), "add.rn.ftz.f16 {d}, {a}, {b}", 2),
                      ("fma.ftz", lambda: fp.ffma(fmt, a, b, c, "rn", ftz=True), "fma.rn.ftz.f16 {d}, {a}, {b}, {c}", 3),
                      ("add.sat", lambda: fp.fadd(fmt, a, b, "rn", sat=True), "add.rn.sat.f16 {d}, {a}, {b}", 2)]
        for name, fn, ptx, ins in cases:
            ops = (a, b, c)[:ins]
            got = gpu_run(ptx, [reg] * ins, reg, *ops)
            bad += report(f"{name}.{fmt}", got, fn(), ops)
    assert bad == 0


@pytest.mark.gpu
def test_gpu_min_max_abs_neg_compare():
    rng = np.random.default_rng(321)
    bad = 0
    for fmt, reg in (("f32", "f32"), ("f64", "f64"), ("f16", "f16"), ("bf16", "b16")):
        a, b, _ = _operands(fmt, rng, 200)
        variants = [("", {})]
        if fmt != "f64":
            variants += [(".NaN", {"nan": True}), (".xorsign.abs", {"xorsign_abs": True})]
        if fmt in ("f32", "f16"):
            variants += [(".ftz", {"ftz": True})]
        for op, fn in (("min", fp.fmin), ("max", fp.fmax)):
            for q, kw in variants:
                got = gpu_run(f"{op}{q}.{fmt} {{d}}, {{a}}, {{b}}", [reg] * 2, reg, a, b)
                bad += report(f"{op}{q}.{fmt}", got, fn(fmt, a, b, **kw), (a, b))
        if fmt in ("f32", "f64"):
            for op, fn in (("abs", fp.fabs), ("neg", fp.fneg)):
                got = gpu_run(f"{op}.{fmt} {{d}}, {{a}}", [reg], reg, a)
                bad += report(f"{op}.{fmt}", got, fn(fmt, a), (a,))
        for cmp in fp.COMPARE_OPS:
            got = gpu_run(f"setp.{cmp}.{fmt} {{d}}, {{a}}, {{b}}", [reg] * 2, "pred", a, b)
            bad += report(f"setp.{cmp}.{fmt}", got, fp.fcompare(fmt, cmp, a, b).astype(np.uint32),
                          (a, b))
    assert bad == 0


@pytest.mark.gpu
def test_gpu_probe_nan_ftz_edges():
    """Prints what the GPU does at NaN-propagation and ftz-tininess edges (for the record)."""
    _cupy()
    q1, q2, s1 = 0x7FF8000000000123, 0xFFF8000000000456, 0x7FF0000000000001
    one, zero, inf = 0x3FF0000000000000, 0, 0x7FF0000000000000
    U = lambda *v: np.array(v, np.uint64)  # noqa: E731
    cases64 = [
        ("add.rn.f64 {d}, {a}, {b}", U(q1, q2, s1, one, q2, inf), U(q2, q1, q2, q1, one, 0xFFF0000000000000)),
        ("mul.rn.f64 {d}, {a}, {b}", U(q1, q2, s1, one, inf), U(q2, q1, q2, q2, zero)),
        ("div.rn.f64 {d}, {a}, {b}", U(q1, one, zero, q2), U(q2, q1, zero, one)),
        ("min.f64 {d}, {a}, {b}", U(q1, q2, s1, one), U(q2, q1, q1, q2)),
    ]
    for ptx, a, b in cases64:
        got = gpu_run(ptx, ["f64", "f64"], "f64", a, b)
        print("PROBE", ptx.split()[0], [f"{int(x):#x},{int(y):#x}->{int(g):#x}" for x, y, g in zip(a, b, got)])
    a = U(q1, one, one, q1, s1, inf)
    b = U(q2, q2, one, one, one, zero)
    c = U(one, one, q1, q2, q2, q1)
    got = gpu_run("fma.rn.f64 {d}, {a}, {b}, {c}", ["f64"] * 3, "f64", a, b, c)
    print("PROBE fma.f64", [f"{int(x):#x},{int(y):#x},{int(z):#x}->{int(g):#x}" for x, y, z, g in zip(a, b, c, got)])
    for op in ("neg.f64", "abs.f64", "sqrt.rn.f64", "rcp.rn.f64"):
        v = U(q1, q2, s1, 0x8000000000000000 | s1, 0xFFF0000000000000)
        got = gpu_run(op + " {d}, {a}", ["f64"], "f64", v)
        print("PROBE", op, [f"{int(x):#x}->{int(g):#x}" for x, g in zip(v, got)])
    v = U(q1, q2, s1, 0x8000000000000000 | s1)
    for op, ot in (("cvt.rn.f32.f64", "f32"), ("cvt.rn.bf16.f64", "b16"), ("cvt.rn.f16.f64", "f16"),
                   ("cvt.rzi.s32.f64", "s32"), ("cvt.rni.f64.f64", "f64")):
        got = gpu_run(op + " {d}, {a}", ["f64"], ot, v)
        print("PROBE", op, [f"{int(x):#x}->{int(g):#x}" for x, g in zip(v, got)])
    # ftz: exact result just below 2**-126 that rounds up to 2**-126
    a32 = np.array([0x00800000, 0x80800000, 0x00800000], np.uint32)
    b32 = np.array([0x3F7FFFFF, 0x3F7FFFFF, 0x3F800001], np.uint32)
    c32 = np.zeros(3, np.uint32)
    for rnd in ("rn", "rz", "rm", "rp"):
        for op in (f"mul.{rnd}.ftz.f32 {{d}}, {{a}}, {{b}}", f"fma.{rnd}.ftz.f32 {{d}}, {{a}}, {{b}}, {{c}}",
                   f"div.{rnd}.ftz.f32 {{d}}, {{a}}, {{b}}"):
            n = op.count("{") - 1
            got = gpu_run(op, ["f32"] * n, "f32", *(a32, b32, c32)[:n])
            print("PROBE", op.split()[0], [f"{int(g):#x}" for g in got])
    # f32 NaN through abs/neg/min/cvt/mov-like ops
    v = np.array([0x7FC00123, 0xFF800001, 0x7F800001], np.uint32)
    for op, ot in (("abs.f32", "f32"), ("neg.f32", "f32"), ("abs.ftz.f32", "f32"),
                   ("cvt.f64.f32", "f64"), ("cvt.rn.f16.f32", "f16"), ("cvt.rni.f32.f32", "f32")):
        got = gpu_run(op + " {d}, {a}", ["f32"], ot, v)
        print("PROBE", op, [f"{int(x):#x}->{int(g):#x}" for x, g in zip(v, got)])
    h = np.array([0x7E01, 0xFD01, 0x7FFF], np.uint16)
    for op, ot in (("abs.f16", "f16"), ("neg.f16", "f16"), ("cvt.f32.f16", "f32"), ("cvt.f64.f16", "f64")):
        got = gpu_run(op + " {d}, {a}", ["f16"], ot, h)
        print("PROBE", op, [f"{int(x):#x}->{int(g):#x}" for x, g in zip(h, got)])



# ------------------------------------------------------------------------------------------
# golden vectors measured on an NVIDIA H100 (sm_90, driver 580.159.04) with
# test_gpu_probe_nan_ftz_edges; they pin the NaN-propagation and .ftz rules on CPU-only CI
# ------------------------------------------------------------------------------------------

Q1, Q2, S1 = 0x7FF8000000000123, 0xFFF8000000000456, 0x7FF0000000000001
ONE64, INV64 = 0x3FF0000000000000, 0xFFF8000000000000


def _u64(*v):
    return np.array(v, np.uint64)


def test_golden_f64_nan_propagation():
    a = _u64(Q1, Q2, S1, ONE64, Q2, 0x7FF0000000000000)
    b = _u64(Q2, Q1, Q2, Q1, ONE64, 0xFFF0000000000000)
    assert list(fp.fadd("f64", a, b)) == [Q2, Q1, Q2, Q1, Q2, INV64]
    for rnd in MODES:
        assert list(fp.fadd("f64", a, b, rnd))[:5] == [Q2, Q1, Q2, Q1, Q2]
    a = _u64(Q1, Q2, S1, ONE64, 0x7FF0000000000000)
    b = _u64(Q2, Q1, Q2, Q2, 0)
    assert list(fp.fmul("f64", a, b)) == [Q2, Q1, Q2, Q2, INV64]
    assert list(fp.fmul("f64", a, b, "rz")) == [Q2, Q1, Q2, Q2, INV64]
    a = _u64(Q1, ONE64, 0, Q2)
    b = _u64(Q2, Q1, 0, ONE64)
    assert list(fp.fdiv("f64", a, b)) == [Q1, Q1, INV64, Q2]
    assert list(fp.fdiv("f64", a, b, "rp")) == [Q1, Q1, INV64, Q2]
    a = _u64(Q1, Q2, S1, ONE64)
    b = _u64(Q2, Q1, Q1, Q2)
    assert list(fp.fmin("f64", a, b)) == [Q2, Q1, Q1, ONE64]
    a = _u64(Q1, ONE64, ONE64, Q1, S1, 0x7FF0000000000000)
    b = _u64(Q2, Q2, ONE64, ONE64, ONE64, 0)
    c = _u64(ONE64, ONE64, Q1, Q2, Q2, Q1)
    for rnd in MODES:
        assert list(fp.ffma("f64", a, b, c, rnd)) == [Q2, Q2, Q1, Q2, Q2, Q1]
    # priority b > c > a: a signalling NaN in b beats a quiet NaN in c
    assert int(fp.ffma("f64", _u64(0x10000000000000), _u64(S1), _u64(INV64))[0]) == \
        0x7FF8000000000001
    # a finite product that overflows float64, plus +Inf, is +Inf (not Inf - Inf)
    mx = 0x7FEFFFFFFFFFFFFF
    assert int(fp.ffma("f64", _u64(mx | (1 << 63)), _u64(mx), _u64(0x7FF0000000000000))[0]) == \
        0x7FF0000000000000
    v = _u64(Q1, Q2, S1, S1 | (1 << 63), 0xFFF0000000000000)
    qs, qn = 0x7FF8000000000001, 0xFFF8000000000001
    assert list(fp.fneg("f64", v)) == [Q1, Q2, qs, qn, 0x7FF0000000000000]
    assert list(fp.fabs("f64", v)) == [Q1, Q2, qs, qn, 0x7FF0000000000000]
    assert list(fp.fsqrt("f64", v)) == [Q1, Q2, qs, qn, INV64]
    assert list(fp.frcp("f64", v)) == [Q1, Q2, qs, qn, 1 << 63]


def test_golden_half_single_nan_canonical():
    v = np.array([0x7FC00123, 0xFF800001, 0x7F800001], np.uint32)
    assert list(fp.fabs("f32", v)) == [0x7FFFFFFF] * 3
    assert list(fp.fneg("f32", v)) == [0x7FFFFFFF] * 3
    h = np.array([0x7E01, 0xFD01, 0x7FFF], np.uint16)
    assert list(fp.fabs("f16", h)) == [0x7FFF] * 3
    assert list(fp.fneg("f16", h)) == [0x7FFF] * 3


def test_golden_ftz_tininess_before_rounding():
    a = np.array([0x00800000, 0x80800000, 0x00800000], np.uint32)
    b = np.array([0x3F7FFFFF, 0x3F7FFFFF, 0x3F800001], np.uint32)
    c = np.zeros(3, np.uint32)
    for rnd in MODES:
        assert list(fp.fmul("f32", a, b, rnd, ftz=True)) == [0, 0x80000000, 0x800001]
        assert list(fp.ffma("f32", a, b, c, rnd, ftz=True)) == [0, 0x80000000, 0x800001]
    exp = {"rn": [0x800001, 0x80800001, 0], "rz": [0x800000, 0x80800000, 0],
           "rm": [0x800000, 0x80800001, 0], "rp": [0x800001, 0x80800000, 0]}
    for rnd, e in exp.items():
        assert list(fp.fdiv("f32", a, b, rnd, ftz=True)) == e
    # and the same inputs without .ftz keep the correctly rounded (normal / subnormal) result
    assert list(fp.fmul("f32", a, b, "rn")) == [0x800000, 0x80800000, 0x800001]


def test_div_f64_directed_rounding_with_a_dividend_near_dbl_max():
    """q*b overflowed the residual of the fast path (fuzz finding derived_div_rp_f64_dbl_max): every mode must
    give the correctly rounded quotient, checked with exact rationals."""
    from fractions import Fraction

    from tcsim.numerics.fp import fdiv

    rng = np.random.default_rng(11)
    a = np.full(64, 0x7FEFFFFFFFFFFFFF, np.uint64) ^ (rng.integers(0, 2, 64).astype(np.uint64) << np.uint64(63))
    a[32:] -= rng.integers(0, 1 << 40, 32).astype(np.uint64)
    b = (rng.integers(0x3FF, 0x7FE, 64).astype(np.uint64) << np.uint64(52)) | \
        rng.integers(0, 1 << 52, 64, dtype=np.uint64) | (rng.integers(0, 2, 64).astype(np.uint64) << np.uint64(63))
    b[0] = 0xEC97F777604A9C52
    for rnd in ("rn", "rz", "rm", "rp"):
        got = fdiv("f64", a, b, rnd=rnd)
        for i in range(64):
            x, y = float(a[i:i + 1].view(np.float64)[0]), float(b[i:i + 1].view(np.float64)[0])
            exact = Fraction(x) / Fraction(y)
            g = float(got[i:i + 1].view(np.float64)[0])
            lo, hi = sorted((g, float(np.nextafter(g, np.inf if exact > Fraction(g) else -np.inf))))
            assert Fraction(lo) <= exact <= Fraction(hi), (rnd, hex(int(a[i])), hex(int(b[i])))
            if rnd == "rz":
                assert abs(Fraction(g)) <= abs(exact)
            elif rnd == "rm":
                assert Fraction(g) <= exact
            elif rnd == "rp":
                assert Fraction(g) >= exact
