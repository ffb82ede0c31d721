"""Logic and shift instructions (PTX ISA 9.1 §9.7.7) and prmt (§9.7.9.7), as two-warp kernels compared with
independent Python models; illegal forms with their diagnostics (checked against ptxas where it is on PATH)."""
from __future__ import annotations

import numpy as np
import pytest

from tcsim.isa.errors import VerifyError
from test_integer import N, check, decode_error, lanes, needs_ptxas, ptxas_accepts, rand_bits, run_body, sx


@pytest.mark.parametrize("n", [16, 32, 64])
def test_bitwise_and_shifts(n):
    rng = np.random.default_rng(n)
    a, b = rand_bits(rng, n), rand_bits(rng, n)[::-1].copy()
    s = rng.integers(0, n + 40, N).astype(np.uint32)
    s[:6] = [0, 1, n - 1, n, n + 1, 0xFFFFFFFF]
    bt, ut, st = f"b{n}", f"u{n}", f"s{n}"
    body = f"""and.{bt} %o1, %a, %b; or.{bt} %o2, %a, %b; xor.{bt} %o3, %a, %b; not.{bt} %o4, %a; cnot.{bt} %o5, %a;
               shl.{bt} %o6, %a, %s; shr.{bt} %o7, %a, %s; shr.{ut} %o8, %a, %s; shr.{st} %o9, %a, %s;
               cnot.{bt} %o10, %z;"""
    z = a.copy()
    z[::3] = 0
    out = run_body(body, {"a": bt, "b": bt, "s": "u32", "z": bt}, {f"o{i}": bt for i in range(1, 11)},
                   {"a": a, "b": b, "s": s, "z": z})
    M = (1 << n) - 1
    L = lanes(a, b, s, z)
    check(out["o1"], [x & y for x, y, k, w in L], n)
    check(out["o2"], [x | y for x, y, k, w in L], n)
    check(out["o3"], [x ^ y for x, y, k, w in L], n)
    check(out["o4"], [~x for x, y, k, w in L], n)
    check(out["o5"], [int(x == 0) for x, y, k, w in L], n)
    check(out["o6"], [(x << k) if k < n else 0 for x, y, k, w in L], n)
    check(out["o7"], [(x >> k) if k < n else 0 for x, y, k, w in L], n)
    check(out["o8"], [(x >> k) if k < n else 0 for x, y, k, w in L], n)
    check(out["o9"], [sx(x, n) >> min(k, n) for x, y, k, w in L], n)
    check(out["o10"], [int(w == 0) for x, y, k, w in L], n)
    assert M


def test_shift_by_immediate_beyond_width():
    a = np.full(N, 0x80000001, np.uint32)
    out = run_body("shl.b32 %o1, %a, 33; shr.s32 %o2, %a, 40; shr.u32 %o3, %a, 32; shr.b16 %h, %g, 16;"
                   "cvt.u32.u16 %o4, %h;", {"a": "b32", "g": "b16"}, {f"o{i}": "b32" for i in range(1, 5)},
                   {"a": a, "g": np.full(N, 0x8000, np.uint16)}, decls=".reg .b16 %h;")
    assert (out["o1"] == 0).all() and (out["o2"] == 0xFFFFFFFF).all() and (out["o3"] == 0).all()
    assert (out["o4"] == 0).all()


def _lop3(a, b, c, lut):
    r = 0
    for i in range(32):
        idx = (((a >> i) & 1) << 2) | (((b >> i) & 1) << 1) | ((c >> i) & 1)
        r |= ((lut >> idx) & 1) << i
    return r


@pytest.mark.parametrize("lut", [0x00, 0x80, 0x96, 0xE8, 0xFE, 0x1A, 0xCA, 0x3F, 0xFF])
def test_lop3(lut):
    rng = np.random.default_rng(lut)
    a, b, c = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy(), rand_bits(rng, 32)
    q = (np.arange(N) % 3 == 0).astype(np.uint32)
    body = f"""lop3.b32 %o1, %a, %b, %c, {lut}; lop3.or.b32 %o2|%p, %a, %b, %c, {lut}, %q;
               lop3.and.b32 _|%r, %a, %b, %c, {lut}, !%q;"""
    out = run_body(body, {"a": "b32", "b": "b32", "c": "b32", "q": "pred"},
                   {"o1": "b32", "o2": "b32", "p": "pred", "r": "pred"}, {"a": a, "b": b, "c": c, "q": q})
    L = lanes(a, b, c, q)
    want = [_lop3(x, y, z, lut) for x, y, z, w in L]
    check(out["o1"], want, 32)
    check(out["o2"], want, 32)
    assert out["p"].tolist() == [(v != 0) or bool(w) for v, (x, y, z, w) in zip(want, L)]
    assert out["r"].tolist() == [(v != 0) and not w for v, (x, y, z, w) in zip(want, L)]


def test_funnel_shifts():
    rng = np.random.default_rng(5)
    a, b = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy()
    s = rng.integers(0, 80, N).astype(np.uint32)
    s[:5] = [0, 31, 32, 33, 0xFFFFFFFF]
    body = """shf.l.wrap.b32 %o1, %a, %b, %s; shf.l.clamp.b32 %o2, %a, %b, %s;
              shf.r.wrap.b32 %o3, %a, %b, %s; shf.r.clamp.b32 %o4, %a, %b, %s;"""
    out = run_body(body, {"a": "b32", "b": "b32", "s": "u32"}, {f"o{i}": "b32" for i in range(1, 5)},
                   {"a": a, "b": b, "s": s})
    L = lanes(a, b, s)
    v = [(y << 32) | x for x, y, k in L]
    check(out["o1"], [(w << (k & 31)) >> 32 for w, (x, y, k) in zip(v, L)], 32)
    check(out["o2"], [(w << min(k, 32)) >> 32 for w, (x, y, k) in zip(v, L)], 32)
    check(out["o3"], [w >> (k & 31) for w, (x, y, k) in zip(v, L)], 32)
    check(out["o4"], [w >> min(k, 32) for w, (x, y, k) in zip(v, L)], 32)


# byte of {b,a} selected for d.b0..d.b3 by the specialised modes (PTX ISA §9.7.9.7 table), per c & 3
PRMT_TABLE = {
    "f4e": ["3210", "4321", "5432", "6543"], "b4e": ["5670", "6701", "7012", "0123"],
    "rc8": ["0000", "1111", "2222", "3333"], "ecl": ["3210", "3211", "3222", "3333"],
    "ecr": ["0000", "1110", "2210", "3210"], "rc16": ["1010", "3232", "1010", "3232"],
}


def _prmt(a, b, c, mode):
    src = (b << 32) | a
    byte = lambda i: (src >> (8 * i)) & 0xFF                          # noqa: E731
    if mode is None:
        d = 0
        for k in range(4):
            sel = (c >> (4 * k)) & 0xF
            v = byte(sel & 7)
            if sel & 8:
                v = 0xFF if v & 0x80 else 0
            d |= v << (8 * k)
        return d
    spec = PRMT_TABLE[mode][c & 3]          # written d.b3 d.b2 d.b1 d.b0
    return sum(byte(int(spec[3 - k])) << (8 * k) for k in range(4))


@pytest.mark.parametrize("mode", [None, "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"])
def test_prmt(mode):
    rng = np.random.default_rng(17)
    a, b, c = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy(), rand_bits(rng, 32, edges=False)
    q = "" if mode is None else "." + mode
    out = run_body(f"prmt.b32{q} %o, %a, %b, %c;", {"a": "b32", "b": "b32", "c": "b32"}, {"o": "b32"},
                   {"a": a, "b": b, "c": c})
    check(out["o"], [_prmt(x, y, z, mode) for x, y, z in lanes(a, b, c)], 32)


def test_predicate_logic():
    p = (np.arange(N) % 2).astype(np.uint32)
    q = ((np.arange(N) // 2) % 2).astype(np.uint32)
    body = """and.pred %o1, %p, %q; or.pred %o2, %p, !%q; xor.pred %o3, %p, %q; not.pred %o4, %p;
              and.pred %o5, !%p, !%q;"""
    out = run_body(body, {"p": "pred", "q": "pred"}, {f"o{i}": "pred" for i in range(1, 6)}, {"p": p, "q": q})
    P, Q = p.astype(bool), q.astype(bool)
    assert (out["o1"] == (P & Q)).all() and (out["o2"] == (P | ~Q)).all() and (out["o3"] == (P ^ Q)).all()
    assert (out["o4"] == ~P).all() and (out["o5"] == (~P & ~Q)).all()


ILLEGAL = [
    ("and.u32 %r1, %r2, %r3;", "Unexpected instruction types specified for 'and'"),
    ("not.u32 %r1, %r2;", "Unexpected instruction types specified for 'not'"),
    ("cnot.pred %p1, %p2;", "Unexpected instruction types specified for 'cnot'"),
    ("shl.u32 %r1, %r2, 3;", "Unexpected instruction types specified for 'shl'"),
    ("shl.b64 %rd1, %rd2, %rd3;", "Arguments mismatch for instruction 'shl'"),
    ("shl.b32 %r1, %r2, %h3;", "Arguments mismatch for instruction 'shl'"),
    ("shf.l.b32 %r1, %r2, %r3, %r4;", "Clamp modifier required for instruction 'shf.l'"),
    ("shf.r.clamp.u32 %r1, %r2, %r3, %r4;", "Unexpected instruction types specified for 'shf.r'"),
    ("shf.l.clamp.b64 %rd1, %rd2, %rd3, %r4;", "Unexpected instruction types specified for 'shf.l'"),
    ("lop3.b32 %r1, %r2, %r3, %r4, %r5;", "Arguments mismatch for instruction 'lop3'"),
    ("lop3.b64 %rd1, %rd2, %rd3, %rd4, 0x96;", "Unexpected instruction types specified for 'lop3'"),
    ("prmt.u32 %r1, %r2, %r3, %r4;", "Unexpected instruction types specified for 'prmt'"),
    ("and.b32 %r1, %p1, %r3;", "Arguments mismatch for instruction 'and'"),
    ("and.pred %p1, %r1, %p2;", "Arguments mismatch for instruction 'and'"),
    ("xor.b16 %r1, %h2, %h3;", "Arguments mismatch for instruction 'xor'"),
]
LEGAL = ["lop3.b32 %r1, %r2, %r3, %r4, 256;", "lop3.and.b32 _|%p1, %r2, %r3, %r4, 0x96, !%p2;",
         "shr.s16 %h1, %h2, %r3;", "shl.b32 %r1, %r2, 33;", "and.pred %p1, !%p2, %p3;", "cnot.b16 %h1, %h2;",
         "prmt.b32.f4e %r1, %r2, %r3, 5;", "and.b32 %r1, %f2, %r3;"]


@pytest.mark.parametrize("line,msg", ILLEGAL, ids=[x[0] for x in ILLEGAL])
def test_illegal_logic_forms(line, msg):
    err = decode_error(line)
    assert isinstance(err, VerifyError), f"{line!r}: got {err!r}"
    assert msg in err.message, err.message


def test_legal_logic_forms_decode():
    for line in LEGAL:
        assert decode_error(line) is None, line


@needs_ptxas
def test_ptxas_agrees_on_logic_forms():
    verdict = ptxas_accepts([x[0] for x in ILLEGAL] + LEGAL)
    n = len(ILLEGAL)
    assert not any(verdict[:n]), [x[0] for x, ok in zip(ILLEGAL, verdict) if ok]
    assert all(verdict[n:]), [x for x, ok in zip(LEGAL, verdict[n:]) if not ok]
