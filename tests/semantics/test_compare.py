"""Comparison and selection: setp, set, selp, slct (PTX ISA 9.1 §9.7.6) and the half-precision set/setp
(§9.7.4), as two-warp kernels compared with numpy comparisons; illegal forms with ptxas's diagnostics."""
from __future__ import annotations

import numpy as np
import pytest

from tcsim.isa.errors import VerifyError
from test_integer import (N, decode_error, f32_bits, f32_values, flush_f32, half_bits, half_values,
                          needs_ptxas, ptxas_accepts, rand_bits, run_body)

INT_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}


def float_cmp(op, x, y):
    """Reference float comparison on float64 values (PTX ISA §9.7.6.1 tables)."""
    un = np.isnan(x) | np.isnan(y)
    if op == "num":
        return ~un
    if op == "nan":
        return un
    with np.errstate(invalid="ignore"):
        r = INT_CMP[op[:2]](x, y)
    return (r | un) if len(op) == 3 else (r & ~un)


@pytest.mark.parametrize("t", ["s16", "u16", "s32", "u32", "b32", "s64", "u64", "b64"])
def test_setp_integer(t):
    n = int(t[1:])
    rng = np.random.default_rng(n)
    a, b = rand_bits(rng, n), rand_bits(rng, n)[::-1].copy()
    b[::4] = a[::4]                          # equal lanes
    ops = ["eq", "ne"] if t[0] == "b" else ["eq", "ne", "lt", "le", "gt", "ge"] + (["lo", "ls", "hi", "hs"]
                                                                                   if t[0] == "u" else [])
    body = "\n".join(f"setp.{op}.{t} %{op}, %a, %b;" for op in ops)
    out = run_body(body, {"a": t, "b": t}, {op: "pred" for op in ops}, {"a": a, "b": b})
    view = {"s": {16: np.int16, 32: np.int32, 64: np.int64}, "u": {16: np.uint16, 32: np.uint32, 64: np.uint64},
            "b": {16: np.uint16, 32: np.uint32, 64: np.uint64}}[t[0]][n]
    x, y = a.view(view), b.view(view)
    for op in ops:
        assert (out[op] == INT_CMP[op](x, y)).all(), op


FLOAT_OPS = ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"]


@pytest.mark.parametrize("ftz", [False, True])
def test_setp_f32_all_operators(ftz):
    rng = np.random.default_rng(3 + ftz)
    a, b = f32_bits(rng), f32_bits(rng)[::-1].copy()
    b[::5] = a[::5]
    b[40:44] = [0x80000000, 0x00000000, 0x00000001, 0x80000001]   # -0 == +0; subnormals equal zero with ftz
    a[40:44] = [0x00000000, 0x80000000, 0x00000000, 0x00000000]
    q = ".ftz" if ftz else ""
    body = "\n".join(f"setp.{op}{q}.f32 %{op}, %a, %b;" for op in FLOAT_OPS)
    out = run_body(body, {"a": "f32", "b": "f32"}, {op: "pred" for op in FLOAT_OPS}, {"a": a, "b": b})
    fa, fb = (flush_f32(a), flush_f32(b)) if ftz else (a, b)
    x, y = f32_values(fa), f32_values(fb)
    for op in FLOAT_OPS:
        assert (out[op] == float_cmp(op, x, y)).all(), op


def test_setp_f64_and_half_scalars():
    rng = np.random.default_rng(4)
    a64 = f32_values(f32_bits(rng)).astype(np.float64).view(np.uint64)
    b64 = a64[::-1].copy()
    b64[::3] = a64[::3]
    ha, hb = half_bits(rng, "f16"), half_bits(rng, "f16")[::-1].copy()
    ba, bb = half_bits(rng, "bf16"), half_bits(rng, "bf16")[::-1].copy()
    ops = ["lt", "equ", "ne", "num", "geu"]
    body = "\n".join(f"setp.{op}.f64 %d{op}, %a, %b; setp.{op}.f16 %h{op}, %c, %d; setp.{op}.bf16 %k{op}, %e, %f;"
                     for op in ops)
    outs = {f"{p}{op}": "pred" for op in ops for p in "dhk"}
    out = run_body(body, {"a": "f64", "b": "f64", "c": "b16", "d": "b16", "e": "b16", "f": "b16"}, outs,
                   {"a": a64, "b": b64, "c": ha, "d": hb, "e": ba, "f": bb})
    for op in ops:
        assert (out[f"d{op}"] == float_cmp(op, a64.view(np.float64), b64.view(np.float64))).all(), op
        assert (out[f"h{op}"] == float_cmp(op, half_values(ha, "f16"), half_values(hb, "f16"))).all(), op
        assert (out[f"k{op}"] == float_cmp(op, half_values(ba, "bf16"), half_values(bb, "bf16"))).all(), op


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_setp_and_set_packed_halves(kind):
    """setp on x2 writes the low half's result to p and the high half's to q; set writes per-half masks."""
    rng = np.random.default_rng(5)
    lo_a, hi_a = half_bits(rng, kind), half_bits(rng, kind)[::-1].copy()
    lo_b, hi_b = half_bits(rng, kind)[::-1].copy(), half_bits(rng, kind)
    lo_b[::3] = lo_a[::3]
    a = lo_a.astype(np.uint32) | (hi_a.astype(np.uint32) << 16)
    b = lo_b.astype(np.uint32) | (hi_b.astype(np.uint32) << 16)
    c = (np.arange(N) % 3 == 1).astype(np.uint32)
    t = f"{kind}x2"
    one = 0x3C00 if kind == "f16" else 0x3F80
    body = f"""setp.ltu.{t} %p|%q, %a, %b; setp.ge.and.{t} %r|%s, %a, %b, !%c;
               set.lt.{t}.{t} %o1, %a, %b; set.neu.u32.{t} %o2, %a, %b; set.num.or.s32.{t} %o3, %a, %b, %c;"""
    out = run_body(body, {"a": "b32", "b": "b32", "c": "pred"},
                   {"p": "pred", "q": "pred", "r": "pred", "s": "pred", "o1": "b32", "o2": "b32", "o3": "b32"},
                   {"a": a, "b": b, "c": c})
    xl, xh, yl, yh = (half_values(v, kind) for v in (lo_a, hi_a, lo_b, hi_b))
    C = c.astype(bool)
    assert (out["p"] == float_cmp("ltu", xl, yl)).all() and (out["q"] == float_cmp("ltu", xh, yh)).all()
    assert (out["r"] == (float_cmp("ge", xl, yl) & ~C)).all() and (out["s"] == (float_cmp("ge", xh, yh) & ~C)).all()

    def pack(lo, hi, v):
        return np.where(lo, v, 0).astype(np.uint32) | (np.where(hi, v, 0).astype(np.uint32) << 16)
    assert (out["o1"] == pack(float_cmp("lt", xl, yl), float_cmp("lt", xh, yh), one)).all()
    assert (out["o2"] == pack(float_cmp("neu", xl, yl), float_cmp("neu", xh, yh), 0xFFFF)).all()
    assert (out["o3"] == pack(float_cmp("num", xl, yl) | C, float_cmp("num", xh, yh) | C, 0xFFFF)).all()


def test_setp_boolean_combine_and_pair():
    """p = BoolOp(t, c), q = BoolOp(!t, c); '_' discards either destination."""
    rng = np.random.default_rng(6)
    a, b = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy()
    c = (np.arange(N) % 2).astype(np.uint32)
    body = """setp.lt.and.s32 %p1|%q1, %a, %b, %c; setp.lt.or.s32 %p2|%q2, %a, %b, !%c;
              setp.lt.xor.s32 %p3|%q3, %a, %b, %c; setp.lt.s32 %p4|%q4, %a, %b; setp.lt.s32 _|%q5, %a, %b;
              setp.lt.s32 %p6|_, %a, %b;"""
    outs = {f"{k}{i}": "pred" for i in (1, 2, 3, 4) for k in "pq"} | {"q5": "pred", "p6": "pred"}
    out = run_body(body, {"a": "s32", "b": "s32", "c": "pred"}, outs, {"a": a, "b": b, "c": c})
    t = a.view(np.int32) < b.view(np.int32)
    C = c.astype(bool)
    assert (out["p1"] == (t & C)).all() and (out["q1"] == (~t & C)).all()
    assert (out["p2"] == (t | ~C)).all() and (out["q2"] == (~t | ~C)).all()
    assert (out["p3"] == (t ^ C)).all() and (out["q3"] == (~t ^ C)).all()
    assert (out["p4"] == t).all() and (out["q4"] == ~t).all() and (out["q5"] == ~t).all()
    assert (out["p6"] == t).all()


def test_set_destinations():
    rng = np.random.default_rng(7)
    a, b = f32_bits(rng), f32_bits(rng)[::-1].copy()
    i, j = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy()
    c = (np.arange(N) % 2).astype(np.uint32)
    h, g = half_bits(rng, "f16"), half_bits(rng, "f16")[::-1].copy()
    body = """set.lt.u32.f32 %o1, %a, %b; set.gtu.f32.f32 %o2, %a, %b; set.hi.s32.u32 %o3, %i, %j;
              set.lt.and.f32.s32 %o4, %i, %j, %c; set.le.ftz.f16.f32 %k1, %a, %b; cvt.u32.u16 %o5, %k1;
              set.ne.bf16.f32 %k1, %a, %b; cvt.u32.u16 %o6, %k1; set.lt.u16.f16 %k1, %h, %g; cvt.u32.u16 %o7, %k1;
              set.geu.u32.f16 %o8, %h, %g;"""
    out = run_body(body, {"a": "f32", "b": "f32", "i": "b32", "j": "b32", "c": "pred", "h": "b16", "g": "b16"},
                   {f"o{k}": "b32" for k in range(1, 9)}, {"a": a, "b": b, "i": i, "j": j, "c": c, "h": h, "g": g},
                   decls=".reg .b16 %k1;")
    x, y = f32_values(a), f32_values(b)
    xf, yf = f32_values(flush_f32(a)), f32_values(flush_f32(b))
    hx, hy = half_values(h, "f16"), half_values(g, "f16")
    C = c.astype(bool)
    assert (out["o1"] == np.where(float_cmp("lt", x, y), 0xFFFFFFFF, 0)).all()
    assert (out["o2"] == np.where(float_cmp("gtu", x, y), 0x3F800000, 0)).all()
    assert (out["o3"] == np.where(i > j, 0xFFFFFFFF, 0)).all()
    assert (out["o4"] == np.where((i.view(np.int32) < j.view(np.int32)) & C, 0x3F800000, 0)).all()
    assert (out["o5"] == np.where(float_cmp("le", xf, yf), 0x3C00, 0)).all()
    assert (out["o6"] == np.where(float_cmp("ne", x, y), 0x3F80, 0)).all()
    assert (out["o7"] == np.where(float_cmp("lt", hx, hy), 0xFFFF, 0)).all()
    assert (out["o8"] == np.where(float_cmp("geu", hx, hy), 0xFFFFFFFF, 0)).all()


def test_selp_and_slct():
    rng = np.random.default_rng(8)
    a, b = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy()
    a64, b64 = rand_bits(rng, 64), rand_bits(rng, 64)[::-1].copy()
    ci = rand_bits(rng, 32)
    cf = f32_bits(rng)
    cf[:6] = [0x80000000, 0x00000000, 0x80000001, 0x7FC00000, 0xFFC00000, 0x00000001]
    p = (np.arange(N) % 3 == 0).astype(np.uint32)
    body = """selp.b32 %o1, %a, %b, %p; selp.u64 %w1, %x, %y, !%p; selp.f32 %o2, %a, 0f3F800000, %p;
              slct.b32.s32 %o3, %a, %b, %ci; slct.u64.f32 %w2, %x, %y, %cf; slct.ftz.s32.f32 %o4, %a, %b, %cf;"""
    out = run_body(body, {"a": "b32", "b": "b32", "x": "b64", "y": "b64", "ci": "s32", "cf": "f32", "p": "pred"},
                   {"o1": "b32", "o2": "b32", "o3": "b32", "o4": "b32", "w1": "b64", "w2": "b64"},
                   {"a": a, "b": b, "x": a64, "y": b64, "ci": ci, "cf": cf, "p": p})
    P = p.astype(bool)
    assert (out["o1"] == np.where(P, a, b)).all()
    assert (out["w1"] == np.where(~P, a64, b64)).all()
    assert (out["o2"] == np.where(P, a, 0x3F800000)).all()
    assert (out["o3"] == np.where(ci.view(np.int32) >= 0, a, b)).all()
    with np.errstate(invalid="ignore"):
        assert (out["w2"] == np.where(f32_values(cf) >= 0, a64, b64)).all()        # NaN selects b, -0 selects a
        assert (out["o4"] == np.where(f32_values(flush_f32(cf)) >= 0, a, b)).all()


ILLEGAL = [
    ("setp.lo.s32 %p1, %r1, %r2;", "Mismatch between instruction type and comparison qualifier"),
    ("setp.lt.b32 %p1, %r1, %r2;", "Mismatch between instruction type and comparison qualifier"),
    ("setp.equ.s32 %p1, %r1, %r2;", "Mismatch between instruction type and comparison qualifier"),
    ("setp.ls.b64 %p1, %rd1, %rd2;", "Mismatch between instruction type and comparison qualifier"),
    ("setp.lt.ftz.f64 %p1, %fd1, %fd2;", "Illegal modifier '.ftz' for instruction 'setp'"),
    ("setp.lt.ftz.bf16 %p1, %h1, %h2;", "Illegal modifier '.ftz' for instruction 'setp'"),
    ("setp.lt.f32 %r1, %f1, %f2;", "Arguments mismatch for instruction 'setp'"),
    ("setp.lt.u32 %p1|%p2, %r1, %r2, %p3;", "Boolean operation is required for instruction 'setp'"),
    ("setp.lt.s32 %p1, %f1, %f2;", "Arguments mismatch for instruction 'setp'"),
    ("set.lt.u16.s16 %h1, %h2, %h3;", "Unexpected instruction types specified for 'set'"),
    ("set.lt.f16.bf16 %h1, %h2, %h3;", "Unexpected instruction types specified for 'set'"),
    ("set.lt.f32.f16 %f1, %h2, %h3;", "Unexpected instruction types specified for 'set'"),
    ("set.lt.u64.u64 %rd1, %rd2, %rd3;", "Unexpected instruction types specified for 'set'"),
    ("set.lt.ftz.bf16.bf16 %h1, %h2, %h3;", "Illegal modifier '.ftz' for instruction 'set'"),
    ("set.lt.bf16x2.f16x2 %r1, %r2, %r3;", "Unexpected instruction types specified for 'set'"),
    ("set.lt.f16x2.bf16x2 %r1, %r2, %r3;", "Unexpected instruction types specified for 'set'"),
    ("selp.f16 %h1, %h2, %h3, %p1;", "Unexpected instruction types specified for 'selp'"),
    ("selp.b32 %r1, %r2, %r3, %r4;", "Arguments mismatch for instruction 'selp'"),
    ("slct.ftz.b32.s32 %r1, %r2, %r3, %r4;", "Illegal modifier '.ftz' for instruction 'slct'"),
    ("slct.u32.f32 %r1, %f1, %f2, %f3;", "Arguments mismatch for instruction 'slct'"),
]
LEGAL = ["setp.lt.and.s32 %p1|%p2, %r1, %r2, !%p3;", "setp.lo.u32 %p1, %r1, %r2;", "setp.lt.u32 _|%p1, %r1, %r2;",
         "setp.lt.u32 _, %r1, %r2;", "setp.lt.ftz.f16 %p1, %h1, %h2;", "setp.lt.f16x2 %p1, %r1, %r2;",
         "set.lt.f16.f32 %h1, %f2, %f3;", "set.lt.bf16.f16 %h1, %h2, %h3;", "set.lt.s16.bf16 %h1, %h2, %h3;",
         "set.lt.f32.f32 %r1, %f2, %f3;", "selp.u64 %rd1, %rd2, 5, %p1;", "slct.u64.f32 %rd1, %rd2, %rd3, %f4;",
         "set.eq.u32.b64 %r1, %rd2, %rd3;", "set.lt.bf16.bf16 %h1, %h2, %h3;", "set.lt.f16.f64 %h1, %fd2, %fd3;"]


@pytest.mark.parametrize("line,msg", ILLEGAL, ids=[x[0] for x in ILLEGAL])
def test_illegal_compare_forms(line, msg):
    err = decode_error(line)
    assert isinstance(err, VerifyError), f"{line!r}: got {err!r}"
    assert msg in err.message, err.message


def test_legal_compare_forms_decode():
    for line in LEGAL:
        assert decode_error(line) is None, line


@needs_ptxas
def test_ptxas_agrees_on_compare_forms():
    verdict = ptxas_accepts([x[0] for x in ILLEGAL] + LEGAL)
    n = len(ILLEGAL)
    assert not any(verdict[:n]), [x[0] for x, ok in zip(ILLEGAL, verdict) if ok]
    assert all(verdict[n:]), [x for x, ok in zip(LEGAL, verdict[n:]) if not ok]
