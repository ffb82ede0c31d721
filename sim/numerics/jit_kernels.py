"""numba-compiled kernels of the exact numerics: the tensor-core fused block model and exact IEEE fma.

Imported only through :func:`tcsim.numerics.jit.kernels` (which returns None where numba is absent or
``TCSIM_NUMBA=0``).  Each kernel is a line-for-line port of a pure numpy reference that stays in place
as the specification and the fallback:

* :func:`fused_float_rows` / :func:`fused_group_rows` -- ``tensor_core._product_block`` chained over K
  blocks (``mma_float``, the non-grouped ``mma_block_scaled`` kinds) and ``tensor_core._group_block``
  (kind::mxf4 / mxf4nvf4): numerics.md "The fused block model" steps 1-6, PTX ISA 9.1 §9.7.14-§9.7.16.
  The reference builds an (M, n, N) int64 tensor per block; these loop over rows and vectorise over the
  N columns, with the same int64 arithmetic (same truncating shifts, same clipping of shift counts).
* :func:`ffma_small` / :func:`ffma_f64` -- ``fp.ffma`` (PTX ISA 9.1 §9.7.3.5 / §9.7.4.4): the same float64
  error-free transformations (TwoSum, Dekker TwoProd, Boldo-Melquiond round-to-odd) and the same single
  rounding (``tcsim.isa.formats.round_scaled``), per lane.  ``ffma_f64`` marks the lanes the reference
  hands to exact Python-integer arithmetic; the caller sends those lanes through the reference.

Bit identity with the references is asserted by tests/numerics/test_jit.py on large random sets with
special values, every rounding mode, .ftz / .sat / .relu, and by the golden-data replays (tests/golden/*),
which go through these kernels whenever numba is installed.

numba semantics relied on: int64 ``<<`` / ``>>`` are LLVM shl / ashr (shift counts are clipped below 64
exactly where the reference clips them), float64 arithmetic is IEEE with no fast-math, ``np.float32(x)``
of a float64 rounds to nearest even (subnormals kept), as numpy's astype does.

Not supported here (the wrappers route these to the references): configurations whose int64 headroom is not
guaranteed statically (custom ``frac_bits``), the fp8-via-f16 lowering's IEEE add (numpy, O(M*N)).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

_DROPPED = -(1 << 40)

# ================================================================================================ helpers


@njit(cache=True)
def _bitlen(x):
    """Exact bit length of a non-negative int64 (0 -> 0): 64 - count of leading zeros (LLVM ctlz)."""
    return 64 - leading_zeros(x)


@njit(cache=True)
def _clip(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


@njit(cache=True)
def _align(sig, exp, frac, E, F):
    """tensor_core._fused_sum.align for one term."""
    sh = F + exp - E - frac
    return (sig << _clip(sh, 0, 62)) >> _clip(-sh, 0, 63)


@njit(cache=True)
def _round_pack(T, lsb_exp, man, emin, bias, exp_bits, width, rne, p_frac, overflow_to_inf):
    """tensor_core._round_pack for one value: round T * 2**lsb_exp once and encode it (+0 for every zero)."""
    neg = T < 0
    mag = -T if neg else T
    if mag == 0:
        return 0
    lead = _bitlen(mag) - 1 + lsb_exp
    q = (lead if lead > emin else emin) - p_frac
    s = q - lsb_exp
    up = _clip(-s, 0, 62)
    dn = _clip(s, 0, 62)
    r = (mag << up) >> dn
    if rne and dn > 0:
        rem = mag - (r << dn)
        half = np.int64(1) << (dn - 1)
        if rem > half or (rem == half and (r & 1) == 1):
            r += 1
    r = r << (man - p_frac)
    q = q - (man - p_frac)
    if (r >> (man + 1)) != 0:
        r = r >> 1
        q = q + 1
    if r >= (np.int64(1) << man):
        field = q + man + bias
        mant = r - (np.int64(1) << man)
    else:
        field = 0
        mant = r
    top = (1 << exp_bits) - 1
    if field >= top:
        if rne or overflow_to_inf:
            field = top
            mant = 0
        else:
            field = top - 1
            mant = (np.int64(1) << man) - 1
    bits = (field << man) | mant
    if neg and bits != 0:
        bits |= np.int64(1) << (width - 1)
    return bits


@njit(cache=True)
def _decode_acc(x, man, exp_bits, bias):
    """lowp.decode of one IEEE accumulator code (f32 / f16): (sign, exp, sig, nan, inf)."""
    mant = x & ((1 << man) - 1)
    field = (x >> man) & ((1 << exp_bits) - 1)
    sign = ((x >> (man + exp_bits)) & 1) == 1
    top = (1 << exp_bits) - 1
    emin = 1 - bias
    nan = field == top and mant != 0
    inf = field == top and mant == 0
    if field != 0:
        exp = field - bias
        sig = mant | (np.int64(1) << man)
    else:
        exp = emin
        sig = mant
    if nan or inf:
        exp = emin
        sig = 0
    return sign, exp, sig, nan, inf


# ================================================================================================ tensor core


@njit(cache=True)
def fused_float_rows(Ls, Le, Lg, Lnan, Linf, Rs, Re, Rg, Rnan, Rinf, c, block, frac, F, zero_exp,
                     has_floor, floor, man, exp_bits, bias, width, rne, p_frac, overflow_to_inf, nan_code):
    """mma_float's loop: for each block of ``block`` products along K (chained in K order), the fused sum of
    the products L[i, k] * R[k, j] and C (tensor_core._product_block = _fused_sum + _special_results).

    L*: (M, K) decoded left factors, R*: (K, N) decoded right factors (sign bool, exp int64, sig int64,
    nan / inf bool); frac: fraction bits of a product's sig; c: (M, N) int64 accumulator codes.  Returns
    (M, N) int64 codes."""
    M, K = Lg.shape
    N = Rg.shape[1]
    out = np.empty((M, N), np.int64)
    inf_code = ((np.int64(1) << exp_bits) - 1) << (width - 1 - exp_bits)
    # per K block: does R hold a NaN / Inf?
    nb = (K + block - 1) // block
    r_special = np.zeros(nb, np.bool_)
    for k in range(K):
        for j in range(N):
            if Rnan[k, j] or Rinf[k, j]:
                r_special[k // block] = True
    E = np.empty(N, np.int64)
    T = np.empty(N, np.int64)
    cur = np.empty(N, np.int64)
    Cs = np.empty(N, np.bool_)
    Ce = np.empty(N, np.int64)
    Cg = np.empty(N, np.int64)
    Cn = np.empty(N, np.bool_)
    Ci = np.empty(N, np.bool_)
    for i in range(M):
        for j in range(N):
            cur[j] = c[i, j]
        for b in range(nb):
            k0 = b * block
            k1 = min(k0 + block, K)
            for j in range(N):
                s, e, g, n_, f_ = _decode_acc(cur[j], man, exp_bits, bias)
                Cs[j] = s
                Cg[j] = g
                Cn[j] = n_
                Ci[j] = f_
                ce = zero_exp if g == 0 else e
                Ce[j] = ce
                E[j] = ce if ce > _DROPPED else _DROPPED
            for k in range(k0, k1):
                le = Le[i, k]
                lg = Lg[i, k]
                for j in range(N):
                    sg = lg * Rg[k, j]
                    te = zero_exp if sg == 0 else le + Re[k, j]
                    if te > E[j]:
                        E[j] = te
            if has_floor:
                for j in range(N):
                    if E[j] < floor:
                        E[j] = floor
            for j in range(N):
                T[j] = 0
            for k in range(k0, k1):
                le = Le[i, k]
                lg = Lg[i, k]
                ls = Ls[i, k]
                for j in range(N):
                    sg = lg * Rg[k, j]
                    te = zero_exp if sg == 0 else le + Re[k, j]
                    al = _align(sg, te, frac, E[j], F)
                    T[j] += -al if ls != Rs[k, j] else al
            l_special = False
            for k in range(k0, k1):
                if Lnan[i, k] or Linf[i, k]:
                    l_special = True
            for j in range(N):
                ca = _align(Cg[j], Ce[j], man, E[j], F)
                t = T[j] + (-ca if Cs[j] else ca)
                bits = _round_pack(t, E[j] - F, man, 1 - bias, bias, exp_bits, width, rne, p_frac,
                                   overflow_to_inf)
                # step 1: NaN / Inf decide the result (tensor_core._special_results)
                pnan = False
                pos = Ci[j] and not Cs[j]
                negi = Ci[j] and Cs[j]
                if l_special or r_special[b]:
                    for k in range(k0, k1):
                        ln, li = Lnan[i, k], Linf[i, k]
                        rn, ri = Rnan[k, j], Rinf[k, j]
                        lz = Lg[i, k] == 0 and not ln and not li
                        rz = Rg[k, j] == 0 and not rn and not ri
                        pn = ln or rn or (li and rz) or (lz and ri)
                        if pn:
                            pnan = True
                        elif li or ri:
                            if Ls[i, k] != Rs[k, j]:
                                negi = True
                            else:
                                pos = True
                nan = pnan or Cn[j] or (pos and negi)
                if nan:
                    bits = nan_code
                elif pos or negi:
                    bits = inf_code | (np.int64(1) << (width - 1)) if negi else inf_code
                cur[j] = bits
        for j in range(N):
            out[i, j] = cur[j]
    return out


@njit(cache=True)
def fused_group_rows(a_int, b_int, sa_sig, sa_exp, sb_sig, sb_exp, ALs, ALg, ALnan, ALinf, BRs, BRg, BRnan,
                     BRinf, c, G, block, frac, F, zero_exp, live_products, has_floor, floor, man, exp_bits, bias,
                     width, p_frac, overflow_to_inf, nan_code):
    """mma_block_scaled's loop for the group-scaled kinds (tensor_core._group_block chained over K blocks).

    a_int (M, K), b_int (K, N): int32, signed exact products' factors on the common grid (a_int * b_int = the
    reference's P; the caller guarantees every group sum fits in int32); sa_* (M, K/G), sb_* (K/G, N): the scale of each group (sig, exp); AL* / BR*: the scaled
    operands (sign, sig, nan, inf) for step 1; live_products: group_exp_policy == 'products'.  Returns
    (M, N) int64 f32 codes."""
    M, K = a_int.shape
    N = b_int.shape[1]
    ng = K // G
    gpb = block // G                        # groups per block (block is a multiple of G)
    nb = (K + block - 1) // block
    out = np.empty((M, N), np.int64)
    inf_code = ((np.int64(1) << exp_bits) - 1) << (width - 1 - exp_bits)
    r_special = np.zeros(nb, np.bool_)
    for k in range(K):
        for j in range(N):
            if BRnan[k, j] or BRinf[k, j]:
                r_special[k // block] = True
    Gs = np.empty((ng, N), np.int32)
    nz = np.empty((ng, N), np.int32)
    cur = np.empty(N, np.int64)
    t_sig = np.empty(gpb, np.int64)
    t_exp = np.empty(gpb, np.int64)
    t_neg = np.empty(gpb, np.bool_)
    for i in range(M):
        # exact group sums of row i (the reference's P summed over each group)
        for g in range(ng):
            for j in range(N):
                Gs[g, j] = 0
                nz[g, j] = 0
            for k in range(g * G, (g + 1) * G):
                a = a_int[i, k]
                if a != 0:
                    for j in range(N):
                        bv = b_int[k, j]
                        Gs[g, j] += a * bv
                        nz[g, j] |= bv
        for j in range(N):
            cur[j] = c[i, j]
        for b in range(nb):
            g0 = b * gpb
            g1 = min(g0 + gpb, ng)
            k0 = b * block
            k1 = min(k0 + block, K)
            l_special = False
            for k in range(k0, k1):
                if ALnan[i, k] or ALinf[i, k]:
                    l_special = True
            for j in range(N):
                cs, ce, cg, cn, ci = _decode_acc(cur[j], man, exp_bits, bias)
                if cg == 0:
                    ce = zero_exp
                E = ce if ce > _DROPPED else _DROPPED
                # the block's group terms: sig, exponent (zero_exp when not live), sign
                for g in range(g0, g1):
                    sc = sa_sig[i, g] * sb_sig[g, j]
                    gs = np.int64(Gs[g, j])
                    sig = (-gs if gs < 0 else gs) * sc
                    if live_products:
                        live = nz[g, j] != 0 and sc != 0
                    else:
                        live = sig != 0
                    te = sa_exp[i, g] + sb_exp[g, j] if live else zero_exp
                    t_sig[g - g0] = sig
                    t_exp[g - g0] = te
                    t_neg[g - g0] = gs < 0
                    if te > E:
                        E = te
                if has_floor and E < floor:
                    E = floor
                t = np.int64(0)
                for q in range(g1 - g0):
                    al = _align(t_sig[q], t_exp[q], frac, E, F)
                    t += -al if t_neg[q] else al
                ca = _align(cg, ce, man, E, F)
                t += -ca if cs else ca
                bits = _round_pack(t, E - F, man, 1 - bias, bias, exp_bits, width, False, p_frac, overflow_to_inf)
                pnan = False
                pos = ci and not cs
                negi = ci and cs
                if l_special or r_special[b]:
                    for k in range(k0, k1):
                        ln, li = ALnan[i, k], ALinf[i, k]
                        rn, ri = BRnan[k, j], BRinf[k, j]
                        lz = ALg[i, k] == 0 and not ln and not li
                        rz = BRg[k, j] == 0 and not rn and not ri
                        pn = ln or rn or (li and rz) or (lz and ri)
                        if pn:
                            pnan = True
                        elif li or ri:
                            if ALs[i, k] != BRs[k, j]:
                                negi = True
                            else:
                                pos = True
                if pnan or cn or (pos and negi):
                    bits = nan_code
                elif pos or negi:
                    bits = inf_code | (np.int64(1) << (width - 1)) if negi else inf_code
                cur[j] = bits
        for j in range(N):
            out[i, j] = cur[j]
    return out


# ================================================================================================ exact fma
# fmt codes of ffma_small: (man bits, exponent bits, bias, total bits)
_RN, _RZ, _RM, _RP = 0, 1, 2, 3
RND_CODES = {"rn": _RN, "rz": _RZ, "rm": _RM, "rp": _RP}


@njit(cache=True)
def _val_small(x, man, exp_bits, bias):
    """isa.formats.decode of one f16 / bf16 / f32 code: its exact float64 value."""
    frac = x & ((np.int64(1) << man) - 1)
    field = (x >> man) & ((1 << exp_bits) - 1)
    neg = ((x >> (man + exp_bits)) & 1) == 1
    if field == (1 << exp_bits) - 1:
        v = np.inf if frac == 0 else np.nan
    elif field == 0:
        v = math.ldexp(np.float64(frac), 1 - bias - man)
    else:
        v = math.ldexp(np.float64(frac | (np.int64(1) << man)), field - bias - man)
    return -v if neg else v


@njit(cache=True)
def _flush_small(x, man, exp_bits, width):
    """fp._flush of one code: a subnormal keeps only its sign."""
    if ((x >> man) & ((1 << exp_bits) - 1)) == 0 and (x & ((np.int64(1) << man) - 1)) != 0:
        return x & (np.int64(1) << (width - 1))
    return x


@njit(cache=True)
def _round_scaled(neg, mant, exp, sticky, rnd, man, exp_bits, bias, width):
    """isa.formats.round_scaled for one value of an IEEE format with Inf (f16 / bf16 / f32), mant < 2**62,
    no satfinite: the code of (-1)**neg * (mant * 2**exp + delta) rounded once by ``rnd``."""
    p = man + 1
    nb = _bitlen(mant)
    zero = nb == 0
    lead = exp + nb - 1
    qmin = (1 - bias) - (p - 1)
    q = lead - (p - 1)
    if q < qmin:
        q = qmin
    shift = q - exp
    if shift <= 0:
        N = mant << _clip(-shift, 0, 63)
        gt = False
        eq = False
        rem_nz = False
    elif shift > 62:                   # everything shifted out; mant < 2**62 <= half
        N = np.int64(0)
        gt = False
        eq = False
        rem_nz = mant != 0
    else:
        N = mant >> shift
        rem = mant - (N << shift)
        half = np.int64(1) << (shift - 1)
        gt = rem > half
        eq = rem == half
        rem_nz = rem != 0
    gt_half = gt or (eq and sticky)
    eq_half = eq and not sticky
    inexact = rem_nz or sticky
    if rnd == _RN:
        inc = gt_half or (eq_half and (N & 1) == 1)
        away = True
    elif rnd == _RZ:
        inc = False
        away = False
    elif rnd == _RP:
        inc = inexact and not neg
        away = not neg
    else:
        inc = inexact and neg
        away = neg
    top = (1 << exp_bits) - 1
    max_code = ((np.int64(top) - 1) << man) | ((np.int64(1) << man) - 1)
    qq = q - qmin
    cap = np.int64(1) << p
    Nc = N if N < cap else cap
    qq_lim = (max_code >> (p - 1)) - 1
    qq_c = qq if qq < qq_lim else qq_lim
    code = (qq_c << (p - 1)) + Nc + (1 if inc else 0)
    if qq > qq_lim or code > max_code:
        code = (np.int64(top) << man) if away else max_code
    if zero and not sticky:
        code = 0
    if neg:
        code |= np.int64(1) << (width - 1)
    return code


@njit(cache=True)
def _f64_parts(v):
    """isa.formats.f64_parts of one finite float64: (neg, mant, exp) with |v| = mant * 2**exp."""
    m, e = math.frexp(abs(v))            # |v| = m * 2**e, 0.5 <= m < 1 (subnormals: exact too)
    mant = np.int64(math.ldexp(m, 53))
    exp = e - 53
    if exp < -1074:                    # f64 subnormal: the reference keeps the exponent at -1074
        mant >>= (-1074 - exp)
        exp = -1074
    return v < 0 or (v == 0 and np.signbit(v)), mant, exp


@njit(cache=True)
def _round_pair(hi, lo, rnd, man, exp_bits, bias, width):
    """fp._round_pair: round the exact hi + lo (hi finite, non-zero) once."""
    neg, mh, eh = _f64_parts(hi)
    alo = abs(lo)
    q1 = math.ldexp(1.0, eh - 2)
    q2 = math.ldexp(1.0, eh - 1)
    g_floor = (1 if alo >= q1 else 0) + (1 if alo >= q2 else 0)
    integral = alo == 0 or alo == q1 or alo == q2
    g_ceil = g_floor + (0 if integral else 1)
    same = (np.signbit(lo) == np.signbit(hi)) or lo == 0
    m4 = mh * 4
    mant = m4 + g_floor if same else m4 - g_ceil
    return _round_scaled(neg, mant, eh - 2, not integral, rnd, man, exp_bits, bias, width)


@njit(cache=True)
def _ffma_small_one(xa, xb, xc, man, exp_bits, bias, width, rnd, ftz, sat, relu, nan_code):
    """One lane of :func:`ffma_small`: the code of xa * xb + xc rounded once."""
    sign = np.int64(1) << (width - 1)
    one = np.int64(bias) << man
    mn = math.ldexp(1.0, 1 - bias)
    if ftz:
        xa = _flush_small(xa, man, exp_bits, width)
        xb = _flush_small(xb, man, exp_bits, width)
        xc = _flush_small(xc, man, exp_bits, width)
    va = _val_small(xa, man, exp_bits, bias)
    vb = _val_small(xb, man, exp_bits, bias)
    vc = _val_small(xc, man, exp_bits, bias)
    if np.isfinite(va) and np.isfinite(vb) and np.isfinite(vc):
        p = va * vb                                   # exact: 2 * 24 significand bits
        hi = p + vc                                   # TwoSum
        bb = hi - p
        lo = (p - (hi - bb)) + (vc - bb)
        if hi == 0:
            sa, sc = np.signbit(va) != np.signbit(vb), np.signbit(vc)
            zneg = sa if sa == sc else rnd == _RM
            r = sign if zneg else np.int64(0)
        else:
            r = _round_pair(hi, lo, rnd, man, exp_bits, bias, width)
            if ftz and abs(hi) < 2 * mn:
                # tininess after rounding to the format's precision with an unbounded exponent
                t = _round_pair(hi / mn, lo / mn, rnd, man, exp_bits, bias, width)
                if (t & (sign - 1)) < one:
                    r = r & sign
    else:
        if np.isfinite(va) and np.isfinite(vb) and np.isinf(vc):
            s = vc
        else:
            s = va * vb + vc
        if np.isnan(s):
            r = nan_code
        else:
            r = ((np.int64(1) << exp_bits) - 1) << man
            if s < 0:
                r |= sign
    # fp._finish
    if ftz:
        r = _flush_small(r, man, exp_bits, width)
    mag = r & (sign - 1)
    is_nan = mag > (((np.int64(1) << exp_bits) - 1) << man)
    if is_nan:
        r = nan_code
    if sat:
        if is_nan or (r & sign) != 0 or r == 0:
            r = 0
        elif mag > one:
            r = one
    if relu:
        if not is_nan and (r & sign) != 0:
            r = 0
    return r


@njit(cache=True)
def ffma_small(a, b, c, out, man, exp_bits, bias, width, rnd, ftz, sat, relu, nan_code):
    """fp.ffma for f16 / bf16 / f32: out = a * b + c rounded once, with .ftz (inputs and results; tininess
    after rounding), .sat, .relu and the canonical NaN.  a, b, c, out: 1-d code arrays of one length and one
    unsigned dtype (uint16 / uint32)."""
    for i in range(a.shape[0]):
        out[i] = _ffma_small_one(np.int64(a[i]), np.int64(b[i]), np.int64(c[i]), man, exp_bits, bias, width, rnd,
                                 ftz, sat, relu, nan_code)


@njit(cache=True)
def ffma_f32_rn(a, b, c, out, ftz, nan_code):
    """fp.ffma for f32 .rn (.ftz or not, no .sat): the product of two f32 values is exact in float64, TwoSum
    gives the exact sum as s + lo, ``s`` made round-to-odd (flip to the odd neighbour on lo's side when lo != 0
    and s is even: 53 >= 2 * 24 + 2 bits, Boldo-Melquiond) and rounded once to f32 by the cast.  Exact zeros
    take the float64 sum's sign (IEEE round-to-nearest's rule, the product being exact).  Lanes this does not
    decide -- a non-finite sum (Inf / NaN operands), under .ftz a subnormal operand or a sum below 2**-125 (the
    flush depends on the unrounded value) -- go through :func:`_ffma_small_one`.  a, b, c, out: 1-d uint32
    arrays, contiguous."""
    fa = a.view(np.float32)
    fb = b.view(np.float32)
    fc = c.view(np.float32)
    fo = out.view(np.float32)
    buf = np.empty(1, np.float64)
    ubuf = buf.view(np.uint64)
    tiny = 2.0 ** -125
    sub = np.uint32(0x7F800000)
    for i in range(a.shape[0]):
        if ftz and (((a[i] & sub) == 0 and (a[i] << np.uint32(1)) != 0) or
                    ((b[i] & sub) == 0 and (b[i] << np.uint32(1)) != 0) or
                    ((c[i] & sub) == 0 and (c[i] << np.uint32(1)) != 0)):
            out[i] = _ffma_small_one(np.int64(a[i]), np.int64(b[i]), np.int64(c[i]), 23, 8, 127, 32, _RN, ftz,
                                     False, False, nan_code)
            continue
        va = np.float64(fa[i])
        vb = np.float64(fb[i])
        vc = np.float64(fc[i])
        p = va * vb
        s = p + vc
        if not np.isfinite(s) or (ftz and s != 0 and abs(s) < tiny):
            out[i] = _ffma_small_one(np.int64(a[i]), np.int64(b[i]), np.int64(c[i]), 23, 8, 127, 32, _RN, ftz,
                                     False, False, nan_code)
            continue
        bb = s - p
        lo = (p - (s - bb)) + (vc - bb)
        if lo != 0:
            buf[0] = s
            u = ubuf[0]
            if (u & np.uint64(1)) == np.uint64(0):
                if np.signbit(lo) == np.signbit(s):
                    ubuf[0] = u + np.uint64(1)
                else:
                    ubuf[0] = u - np.uint64(1)
                s = buf[0]
        fo[i] = np.float32(s)


_QNAN64 = np.uint64(0x0008000000000000)
_INVALID64 = np.uint64(0xFFF8000000000000)


@njit(cache=True)
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(cache=True)
def _split(a):
    t = 134217729.0 * a                # 2**27 + 1
    hi = t - (t - a)
    return hi, a - hi


@njit(cache=True)
def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@njit(cache=True)
def _directed_adjust(hi, lo, rnd):
    """fp._directed_adjust: hi = RN(exact), lo = exact - hi: the directed rounding of exact."""
    if rnd == _RP:
        return np.nextafter(hi, np.inf) if lo > 0 else hi
    if rnd == _RM:
        return np.nextafter(hi, -np.inf) if lo < 0 else hi
    if rnd == _RZ:
        if (hi > 0 and lo < 0) or (hi < 0 and lo > 0):
            return np.nextafter(hi, 0.0)
    return hi


@njit(cache=True)
def _is_nan64(u):
    return (u & np.uint64(0x7FF0000000000000)) == np.uint64(0x7FF0000000000000) and \
        (u & np.uint64(0x000FFFFFFFFFFFFF)) != 0


@njit(cache=True)
def ffma_f64(a, b, c, ua, ub, uc, out, hard, rnd):
    """fp.ffma for f64 (a, b, c: float64 views of the operands' bits ua, ub, uc): the Boldo-Melquiond
    round-to-odd emulation where it is provably exact, the zero-product and special cases, and the measured NaN
    propagation (b, then c, then a, quieted; else 0xFFF8000000000000).  ``hard[i]`` marks the lanes the reference
    computes with exact Python integers (out[i] is not set there); out: the result bits (uint64).  Returns how
    many lanes are marked."""
    buf = np.empty(1, np.float64)
    ubuf = buf.view(np.uint64)
    nhard = 0
    for i in range(a.shape[0]):
        va, vb, vc = a[i], b[i], c[i]
        hard[i] = False
        fin = np.isfinite(va) and np.isfinite(vb) and np.isfinite(vc)
        psign = np.signbit(va) != np.signbit(vb)
        sc = np.signbit(vc)
        zs = psign if psign == sc else rnd == _RM
        r = 0.0
        if not fin:
            if np.isfinite(va) and np.isfinite(vb) and np.isinf(vc):
                r = vc
            else:
                r = va * vb + vc
        elif va == 0 or vb == 0:
            if vc == 0:
                r = -0.0 if zs else 0.0
            else:
                r = vc
        else:
            aa, ab, ac = abs(va), abs(vb), abs(vc)
            p = va * vb
            safe = (aa < 2.0 ** 995 and ab < 2.0 ** 995 and abs(p) >= 2.0 ** -900 and abs(p) < 2.0 ** 1000
                    and (ac == 0 or (ac >= 2.0 ** -900 and ac < 2.0 ** 1000)))
            if safe:
                uh, ul = _two_prod(va, vb)
                th, tl = _two_sum(vc, uh)
                s, e = _two_sum(tl, ul)
                buf[0] = s
                odd = (ubuf[0] & np.uint64(1)) == np.uint64(1)
                v = s
                if e != 0 and not odd:
                    v = np.nextafter(s, np.inf) if e > 0 else np.nextafter(s, -np.inf)
                z, w = _two_sum(th, v)
                z = _directed_adjust(z, w, rnd)
                if abs(z) >= 2.0 ** -900 or z == 0:
                    r = z if z != 0 else (-0.0 if zs else 0.0)
                else:
                    safe = False
            if not safe:
                hard[i] = True
                nhard += 1
                continue
        buf[0] = r
        u = ubuf[0]
        if _is_nan64(u):
            if _is_nan64(ub[i]):
                u = ub[i] | _QNAN64
            elif _is_nan64(uc[i]):
                u = uc[i] | _QNAN64
            elif _is_nan64(ua[i]):
                u = ua[i] | _QNAN64
            else:
                u = _INVALID64
        out[i] = u
    return nhard


# ================================================================================================ add / sub / mul
@njit(cache=True)
def _finish_small(r, man, exp_bits, width, ftz, sat, nan_code):
    """fp._finish (no .relu): flush a subnormal result (.ftz), the canonical NaN, .sat clamping to [+0, 1]."""
    sign = np.int64(1) << (width - 1)
    if ftz:
        r = _flush_small(r, man, exp_bits, width)
    mag = r & (sign - 1)
    is_nan = mag > (((np.int64(1) << exp_bits) - 1) << man)
    if is_nan:
        r = nan_code
    if sat:
        one = np.int64((1 << (exp_bits - 1)) - 1) << man
        if is_nan or (r & sign) != 0 or r == 0:
            r = 0
        elif mag > one:
            r = one
    return r


@njit(cache=True)
def _special_small(s, man, exp_bits, width, nan_code):
    """fp._enc of a NaN / +-Inf float64: the canonical NaN, or the signed Inf code."""
    if np.isnan(s):
        return np.int64(nan_code)
    r = ((np.int64(1) << exp_bits) - 1) << man
    return r | (np.int64(1) << (width - 1)) if s < 0 else r


@njit(cache=True)
def fadd_small(a, b, out, man, exp_bits, bias, width, rnd, ftz, sat, nan_code, negate_b):
    """fp.fadd / fp.fsub (``negate_b``) for f16 / bf16 / f32: TwoSum, one rounding, the exact-zero sign rule,
    .ftz (tiny exact sums flush, keeping the sign), .sat; uint32 lanes."""
    sign = np.int64(1) << (width - 1)
    emask = ((np.int64(1) << exp_bits) - 1) << man
    for i in range(a.shape[0]):
        xa, xb = np.int64(a[i]), np.int64(b[i])
        if ftz:
            xa = _flush_small(xa, man, exp_bits, width)
            xb = _flush_small(xb, man, exp_bits, width)
        va = _val_small(xa, man, exp_bits, bias)
        vb = _val_small(xb, man, exp_bits, bias)
        if negate_b:
            vb = -vb
        if np.isfinite(va) and np.isfinite(vb):
            hi, lo = _two_sum(va, vb)
            if hi == 0:
                sa, sb = np.signbit(va), np.signbit(vb)
                zneg = sa if sa == sb else rnd == _RM
                r = sign if zneg else np.int64(0)
            else:
                r = _round_pair(hi, lo, rnd, man, exp_bits, bias, width)
                # fp._ftz_result: the exact sum is tiny when its rz rounding has a zero exponent field
                if ftz and (_round_pair(hi, lo, _RZ, man, exp_bits, bias, width) & emask) == 0:
                    r = r & sign
        else:
            r = _special_small(va + vb, man, exp_bits, width, nan_code)
        out[i] = _finish_small(r, man, exp_bits, width, ftz, sat, nan_code)


@njit(cache=True)
def fmul_small(a, b, out, man, exp_bits, bias, width, rnd, ftz, sat, nan_code):
    """fp.fmul for f16 / bf16 / f32: the exact float64 product rounded once, the sign of a zero product, .ftz
    (tininess after rounding), .sat; uint32 lanes."""
    sign = np.int64(1) << (width - 1)
    one = np.int64(bias) << man
    mn = math.ldexp(1.0, 1 - bias)
    for i in range(a.shape[0]):
        xa, xb = np.int64(a[i]), np.int64(b[i])
        if ftz:
            xa = _flush_small(xa, man, exp_bits, width)
            xb = _flush_small(xb, man, exp_bits, width)
        va = _val_small(xa, man, exp_bits, bias)
        vb = _val_small(xb, man, exp_bits, bias)
        p = va * vb
        if np.isfinite(va) and np.isfinite(vb):
            if p == 0:
                r = sign if np.signbit(va) != np.signbit(vb) else np.int64(0)
            else:
                r = _round_pair(p, 0.0, rnd, man, exp_bits, bias, width)
                if ftz and abs(p) < 2 * mn:
                    t = _round_pair(p / mn, 0.0, rnd, man, exp_bits, bias, width)
                    if (t & (sign - 1)) < one:
                        r = r & sign
        else:
            r = _special_small(p, man, exp_bits, width, nan_code)
        out[i] = _finish_small(r, man, exp_bits, width, ftz, sat, nan_code)


# ================================================================================================ codes -> mma_float
_SPECIALS = {"ieee": 0, "fn": 1, "none": 2, "e8m0": 3}


@njit(cache=True)
def decode_codes(x, man, exp_bits, bias, specials, has_sign, ignore_low):
    """lowp.decode of an int64 code array (any shape, flattened view): (sign, exp, sig, nan, inf) arrays."""
    flat = x.ravel()
    n = flat.shape[0]
    sign = np.empty(n, np.bool_)
    exp = np.empty(n, np.int64)
    sig = np.empty(n, np.int64)
    nan = np.empty(n, np.bool_)
    inf = np.empty(n, np.bool_)
    top = (1 << exp_bits) - 1
    emin = -bias if specials == 3 else 1 - bias
    for i in range(n):
        v = flat[i] >> ignore_low
        m = v & ((np.int64(1) << man) - 1)
        field = (v >> man) & top
        sign[i] = has_sign and ((v >> (man + exp_bits)) & 1) == 1
        if specials == 3:
            nn = field == top
            ii = False
            e = field - bias
            s = np.int64(1)
        else:
            if specials == 0:
                nn = field == top and m != 0
                ii = field == top and m == 0
            elif specials == 1:
                nn = field == top and m == (np.int64(1) << man) - 1
                ii = False
            else:
                nn = False
                ii = False
            if field != 0:
                e = field - bias
                s = m | (np.int64(1) << man)
            else:
                e = np.int64(emin)
                s = m
        if nn or ii:
            e = np.int64(emin)
            s = np.int64(0)
        nan[i] = nn
        inf[i] = ii
        exp[i] = e
        sig[i] = s
    sh = x.shape
    return sign.reshape(sh), exp.reshape(sh), sig.reshape(sh), nan.reshape(sh), inf.reshape(sh)


@njit(cache=True)
def mma_float_codes(a, b, c, fa, fb, block, F, zero_exp, has_floor, floor, man, exp_bits, bias, width, rne,
                    p_frac, overflow_to_inf, nan_code):
    """mma_float from raw codes: decode A (M, K) and B (K, N) (fa / fb: man, exp_bits, bias, specials code,
    has_sign, ignore_low) and run :func:`fused_float_rows`; one call instead of a dozen numpy decodes."""
    Ls, Le, Lg, Ln, Li = decode_codes(a, fa[0], fa[1], fa[2], fa[3], fa[4] != 0, fa[5])
    Rs, Re, Rg, Rn, Ri = decode_codes(b, fb[0], fb[1], fb[2], fb[3], fb[4] != 0, fb[5])
    return fused_float_rows(Ls, Le, Lg, Ln, Li, Rs, Re, Rg, Rn, Ri, c, block, fa[0] + fb[0], F, zero_exp,
                            has_floor, floor, man, exp_bits, bias, width, rne, p_frac, overflow_to_inf, nan_code)


# ================================================================================================ mma_float in float64
@njit(cache=True)
def _f64_operand(sig, exp, sign, man):
    """Exact float64 values (sig * 2**(exp - man), signed) and float64 exponents of decoded codes (NaN / Inf have
    sig 0: value 0, step 1 decides them)."""
    flat_s = sig.ravel()
    flat_e = exp.ravel()
    flat_n = sign.ravel()
    n = flat_s.shape[0]
    val = np.empty(n, np.float64)
    ef = np.empty(n, np.float64)
    for q in range(n):
        v = math.ldexp(np.float64(flat_s[q]), flat_e[q] - man)
        val[q] = -v if flat_n[q] else v
        ef[q] = np.float64(flat_e[q])
    return val.reshape(sig.shape), ef.reshape(sig.shape)


@njit(cache=True)
def fused_float_rows_f64(Ls, Le, Lg, Lnan, Linf, Rs, Re, Rg, Rnan, Rinf, c, block, frac, F, zero_exp,
                         has_floor, floor, man, exp_bits, bias, width, rne, p_frac, overflow_to_inf, nan_code,
                         man_a, man_b):
    """:func:`fused_float_rows` with each product's truncating alignment done in float64, where the caller has
    checked that it is exact (``tensor_core._compiled_codes``: both significands of at most 26 bits, so a product is
    an exact float64, and every aligned term and block sum below 2**53).

    A product's aligned term ``(sig << sh) >> -sh`` (sh = F + te - E - frac, te = le + re) is
    ``trunc(|a * b| * 2**(F - E))``: a * b is exact, the power-of-two scaling is exact (or underflows below 1,
    where the shift gives 0 too) and trunc of a non-negative value is the shift's floor; the sign is the product's,
    so ``trunc(a * b * 2**(F - E))`` is the signed term, and the block's sum of integers below 2**53 is exact.  C's
    term, E, the single rounding and step 1 are :func:`fused_float_rows`' own.  Bit for bit that kernel
    (tests/numerics/test_jit.py)."""
    M, K = Lg.shape
    N = Rg.shape[1]
    Lv, Lef = _f64_operand(Lg, Le, Ls, man_a)
    Rv, Ref = _f64_operand(Rg, Re, Rs, man_b)
    out = np.empty((M, N), np.int64)
    inf_code = ((np.int64(1) << exp_bits) - 1) << (width - 1 - exp_bits)
    nb = (K + block - 1) // block
    r_special = np.zeros(nb, np.bool_)
    for k in range(K):
        for j in range(N):
            if Rnan[k, j] or Rinf[k, j]:
                r_special[k // block] = True
    zf = np.float64(zero_exp)
    dropped = np.float64(_DROPPED)
    E = np.empty(N, np.float64)
    S = np.empty(N, np.float64)
    T = np.empty(N, np.float64)
    cur = np.empty(N, np.int64)
    Cs = np.empty(N, np.bool_)
    Ce = np.empty(N, np.int64)
    Cg = np.empty(N, np.int64)
    Cn = np.empty(N, np.bool_)
    Ci = np.empty(N, np.bool_)
    for i in range(M):
        for j in range(N):
            cur[j] = c[i, j]
        for b in range(nb):
            k0 = b * block
            k1 = min(k0 + block, K)
            for j in range(N):
                s, e, g, n_, f_ = _decode_acc(cur[j], man, exp_bits, bias)
                Cs[j] = s
                Cg[j] = g
                Cn[j] = n_
                Ci[j] = f_
                ce = zero_exp if g == 0 else e
                Ce[j] = ce
                E[j] = np.float64(ce if ce > _DROPPED else _DROPPED)
            for k in range(k0, k1):
                lv = Lv[i, k]
                le = Lef[i, k]
                for j in range(N):
                    te = le + Ref[k, j] if lv * Rv[k, j] != 0.0 else zf
                    E[j] = te if te > E[j] else E[j]
            if has_floor:
                fl = np.float64(floor)
                for j in range(N):
                    E[j] = fl if fl > E[j] else E[j]
            for j in range(N):
                sh = F - np.int64(E[j])
                # E at _DROPPED (or so low that 2**sh overflows): every term is zero
                S[j] = math.ldexp(1.0, sh) if (E[j] > dropped and sh < 1000) else 0.0
                T[j] = 0.0
            for k in range(k0, k1):
                lv = Lv[i, k]
                for j in range(N):
                    T[j] += np.trunc(lv * Rv[k, j] * S[j])
            l_special = False
            for k in range(k0, k1):
                if Lnan[i, k] or Linf[i, k]:
                    l_special = True
            for j in range(N):
                Ej = np.int64(E[j])
                ca = _align(Cg[j], Ce[j], man, Ej, F)
                t = np.int64(T[j]) + (-ca if Cs[j] else ca)
                bits = _round_pack(t, Ej - F, man, 1 - bias, bias, exp_bits, width, rne, p_frac,
                                   overflow_to_inf)
                pnan = False
                pos = Ci[j] and not Cs[j]
                negi = Ci[j] and Cs[j]
                if l_special or r_special[b]:
                    for k in range(k0, k1):
                        ln, li = Lnan[i, k], Linf[i, k]
                        rn, ri = Rnan[k, j], Rinf[k, j]
                        lz = Lg[i, k] == 0 and not ln and not li
                        rz = Rg[k, j] == 0 and not rn and not ri
                        pn = ln or rn or (li and rz) or (lz and ri)
                        if pn:
                            pnan = True
                        elif li or ri:
                            if Ls[i, k] != Rs[k, j]:
                                negi = True
                            else:
                                pos = True
                nan = pnan or Cn[j] or (pos and negi)
                if nan:
                    bits = nan_code
                elif pos or negi:
                    bits = inf_code | (np.int64(1) << (width - 1)) if negi else inf_code
                cur[j] = bits
        for j in range(N):
            out[i, j] = cur[j]
    return out


@njit(cache=True)
def mma_float_codes_f64(a, b, c, fa, fb, block, F, zero_exp, has_floor, floor, man, exp_bits, bias, width, rne,
                        p_frac, overflow_to_inf, nan_code):
    """:func:`mma_float_codes` through :func:`fused_float_rows_f64` (the caller checked its exactness bounds)."""
    Ls, Le, Lg, Ln, Li = decode_codes(a, fa[0], fa[1], fa[2], fa[3], fa[4] != 0, fa[5])
    Rs, Re, Rg, Rn, Ri = decode_codes(b, fb[0], fb[1], fb[2], fb[3], fb[4] != 0, fb[5])
    return fused_float_rows_f64(Ls, Le, Lg, Ln, Li, Rs, Re, Rg, Rn, Ri, c, block, fa[0] + fb[0], F, zero_exp,
                                has_floor, floor, man, exp_bits, bias, width, rne, p_frac, overflow_to_inf, nan_code,
                                fa[0], fb[0])


# ================================================================================================ codes -> group kinds
@njit(cache=True)
def _bits_of_max(x):
    """tensor_core._bits_of_max: bit length of the largest element (0 for none or all <= 0)."""
    m = np.int64(0)
    for v in x.ravel():
        if v > m:
            m = v
    return _bitlen(m)


@njit(cache=True)
def mma_group_codes(a, b, c, sfa, sfb, fa, fb, fs, scale_block, G, block, F, zero_exp, live_products, has_floor,
                    floor, man, exp_bits, bias, width, p_frac, overflow_to_inf, nan_code, ea, eb):
    """tensor_core._mma_block_scaled for the group kinds (kind::mxf4 / mxf4nvf4) from the raw codes, in one call:
    decode A (M, K), B (K, N) and the scale factors SFA (M, K / scale_block), SFB (K / scale_block, N) (fa / fb /
    fs: the format tuples of tensor_core._code_params), scale each element by its block's factor for step 1
    (tensor_core._scaled), build the exact products' factors on the common grid and the per-group scales
    (tensor_core._compiled_group) and run :func:`fused_group_rows`.  ``ea`` / ``eb``: emin of A's / B's format.

    Returns (ok, D codes): ok False where _compiled_group would decline (int32 / int64 headroom not guaranteed by
    the data), and the caller then takes the numpy path, which decides as the reference does."""
    M, K = a.shape
    N = b.shape[1]
    As, Ae, Ag, An, Ai = decode_codes(a, fa[0], fa[1], fa[2], fa[3], fa[4] != 0, fa[5])
    Bs, Be, Bg, Bn, Bi = decode_codes(b, fb[0], fb[1], fb[2], fb[3], fb[4] != 0, fb[5])
    SAs, SAe, SAg, SAn, SAi = decode_codes(sfa, fs[0], fs[1], fs[2], fs[3], fs[4] != 0, fs[5])
    SBs, SBe, SBg, SBn, SBi = decode_codes(sfb, fs[0], fs[1], fs[2], fs[3], fs[4] != 0, fs[5])
    empty = np.zeros((M, N), np.int64)
    # ---- step 1's operands: each element times its scale (tensor_core._scaled)
    ALg = np.empty((M, K), np.int64)
    ALn = np.empty((M, K), np.bool_)
    ALi = np.empty((M, K), np.bool_)
    for i in range(M):
        for k in range(K):
            q = k // scale_block
            s_zero = SAg[i, q] == 0 and not SAn[i, q]
            nan = An[i, k] or SAn[i, q] or (Ai[i, k] and s_zero)
            inf = Ai[i, k] and not nan
            ALn[i, k] = nan
            ALi[i, k] = inf
            ALg[i, k] = 0 if (nan or inf) else Ag[i, k] * SAg[i, q]
    BRg = np.empty((K, N), np.int64)
    BRn = np.empty((K, N), np.bool_)
    BRi = np.empty((K, N), np.bool_)
    for k in range(K):
        q = k // scale_block
        for j in range(N):
            s_zero = SBg[q, j] == 0 and not SBn[q, j]
            nan = Bn[k, j] or SBn[q, j] or (Bi[k, j] and s_zero)
            inf = Bi[k, j] and not nan
            BRn[k, j] = nan
            BRi[k, j] = inf
            BRg[k, j] = 0 if (nan or inf) else Bg[k, j] * SBg[q, j]
    # ---- the exact products' factors on the common grid (tensor_core._compiled_group)
    max_sha = np.int64(0)
    for x in Ae.ravel():
        if x - ea > max_sha:
            max_sha = x - ea
    max_shb = np.int64(0)
    for x in Be.ravel():
        if x - eb > max_shb:
            max_shb = x - eb
    if _bits_of_max(Ag) + max_sha > 30 or _bits_of_max(Bg) + max_shb > 30:
        return False, empty
    a_int = np.empty((M, K), np.int32)
    ma = np.int64(0)                            # the largest magnitude (gs_bits counts them unsigned)
    for i in range(M):
        for k in range(K):
            v = Ag[i, k] << (Ae[i, k] - ea)
            if v > ma:
                ma = v
            a_int[i, k] = -v if As[i, k] else v
    b_int = np.empty((K, N), np.int32)
    mb = np.int64(0)
    for k in range(K):
        for j in range(N):
            v = Bg[k, j] << (Be[k, j] - eb)
            if v > mb:
                mb = v
            b_int[k, j] = -v if Bs[k, j] else v
    ng = K // G
    sa_sig = np.empty((M, ng), np.int64)
    sa_exp = np.empty((M, ng), np.int64)
    for i in range(M):
        for g in range(ng):
            q = (g * G) // scale_block
            sa_sig[i, g] = SAg[i, q]
            sa_exp[i, g] = SAe[i, q]
    sb_sig = np.empty((ng, N), np.int64)
    sb_exp = np.empty((ng, N), np.int64)
    for g in range(ng):
        q = (g * G) // scale_block
        for j in range(N):
            sb_sig[g, j] = SBg[q, j]
            sb_exp[g, j] = SBe[q, j]
    frac = fa[0] + fb[0] - (ea + eb) + 2 * fs[0]
    gs_bits = _bitlen(ma) + _bitlen(mb) + _bitlen(np.int64(G))
    if gs_bits > 31:
        return False, empty
    kk = gs_bits + _bits_of_max(sa_sig) + _bits_of_max(sb_sig) - frac
    if kk < 1:
        kk = 1
    n_terms = min(block, K) // G
    if F + kk + _bitlen(np.int64(n_terms)) > 62:
        return False, empty
    out = fused_group_rows(a_int, b_int, sa_sig, sa_exp, sb_sig, sb_exp, As, ALg, ALn, ALi, Bs, BRg, BRn, BRi, c,
                           G, block, frac, F, zero_exp, live_products, has_floor, floor, man, exp_bits, bias, width,
                           p_frac, overflow_to_inf, nan_code)
    return True, out
