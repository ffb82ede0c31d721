"""Integer arithmetic (PTX ISA 9.1 §9.7.1, §9.7.2): every form run as a small PTX kernel of two warps on the
simulator and compared with an independent Python-int / numpy model; a table of illegal forms with their
exact diagnostics.

``kernel_for`` / ``run_body`` build and run those kernels; the other ``tests/semantics/test_*`` files of the
ALU families import them from here.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

from tcsim.isa.errors import UnsupportedError, VerifyError
from tcsim.launch import Launch, run_launch

N = 64                      # two warps
ARCH = "sm_100a"
_REGTYPE = {"bf16": "b16", "bf16x2": "b32", "u16x2": "b32", "s16x2": "b32", "e4m3x2": "b16", "e5m2x2": "b16"}
_SIZE = {"pred": 4, "b8": 1, "u8": 1, "s8": 1}


def _size(t: str) -> int:
    if t in _SIZE:
        return _SIZE[t]
    if t.endswith("x2"):
        return {"f16x2": 4, "bf16x2": 4, "u16x2": 4, "s16x2": 4, "e4m3x2": 2, "e5m2x2": 2}[t]
    return int(t[1:]) // 8


def kernel_for(body: str, inputs: dict, outputs: dict, decls: str = "", arch: str = ARCH,
               version: str = "8.8") -> str:
    """PTX of a kernel: thread i loads inputs[name][i] into register %name (declared with the given PTX type;
    'pred' inputs are 0/1 words), runs ``body``, stores %name of every output (predicates as 0/1 words)."""
    names = list(inputs) + list(outputs)
    params = ", ".join(f".param .u64 p_{n}" for n in names)
    lines = [f".version {version}", f".target {arch}", ".address_size 64",
             f".visible .entry k({params})", "{",
             "  .reg .u32 %tid_, %pv_; .reg .u64 %ad_, %of_;"]
    for n, t in list(inputs.items()) + list(outputs.items()):
        if n in inputs and n in outputs:
            continue
        lines.append(f"  .reg .{_REGTYPE.get(t, t)} %{n};")
    lines.append(decls)
    lines.append("  mov.u32 %tid_, %tid.x;")

    def addr(n, t):
        return [f"  ld.param.u64 %ad_, [p_{n}];", f"  mul.wide.u32 %of_, %tid_, {_size(t)};",
                "  add.s64 %ad_, %ad_, %of_;"]
    for n, t in inputs.items():
        lines += addr(n, t)
        if t == "pred":
            lines += ["  ld.global.u32 %pv_, [%ad_];", f"  setp.ne.u32 %{n}, %pv_, 0;"]
        else:
            lines.append(f"  ld.global.b{8 * _size(t)} %{n}, [%ad_];")
    lines.append(body)
    for n, t in outputs.items():
        lines += addr(n, t)
        if t == "pred":
            lines += [f"  selp.u32 %pv_, 1, 0, %{n};", "  st.global.u32 [%ad_], %pv_;"]
        else:
            lines.append(f"  st.global.b{8 * _size(t)} [%ad_], %{n};")
    lines += ["  ret;", "}"]
    return "\n".join(lines) + "\n"


def _np_dtype(t: str):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[_size(t)]


def launch_args(inputs: dict, outputs: dict, values: dict, n: int = N) -> list:
    args = []
    for name, t in inputs.items():
        v = np.asarray(values[name])
        if t == "pred":
            v = v.astype(bool).astype(np.uint32)
        else:
            v = v.astype(v.dtype.str.replace("i", "u")) if v.dtype.kind == "i" else v
            v = v.view(_np_dtype(t)) if v.dtype.itemsize == _size(t) else v.astype(_np_dtype(t))
        assert v.shape == (n,), name
        args.append(np.ascontiguousarray(v))
    for name, t in outputs.items():
        args.append(np.zeros(n, dtype=_np_dtype(t)))
    return args


def run_body(body: str, inputs: dict, outputs: dict, values: dict, decls: str = "", arch: str = ARCH,
             n: int = N) -> dict:
    """Run ``body`` for ``n`` threads; returns {output name: raw unsigned numpy array} (pred: bool)."""
    ptx = kernel_for(body, inputs, outputs, decls, arch)
    args = launch_args(inputs, outputs, values, n)
    res = run_launch(Launch(ptx=ptx, block=(n, 1, 1), args=args))
    out = {}
    for i, (name, t) in enumerate(outputs.items()):
        o = res.outputs[len(inputs) + i]
        out[name] = o.astype(bool) if t == "pred" else o
    return out


def decode_error(line: str, decls: str = "", arch: str = ARCH):
    """Load a kernel holding one instruction; returns the TcsimError raised (or None)."""
    from tcsim.engine import load_program
    from tcsim.isa.parser import parse
    ptx = (f".version 8.8\n.target {arch}\n.address_size 64\n.visible .entry k()\n{{\n"
           "  .reg .b32 %r<10>; .reg .pred %p<8>; .reg .f32 %f<8>; .reg .b64 %rd<8>; .reg .b16 %h<8>;\n"
           "  .reg .f64 %fd<8>; .reg .u32 %u<4>; .reg .s32 %s<4>; .reg .u16 %uh<4>; .reg .f16 %hf<4>;\n"
           f"{decls}\n  {line}\n  ret;\n}}\n")
    try:
        load_program(parse(ptx, "t.ptx"))
    except (VerifyError, UnsupportedError) as e:
        return e
    return None


PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not on PATH")
_DECL_LINES = ("  .reg .b32 %r<10>; .reg .pred %p<8>; .reg .f32 %f<8>; .reg .b64 %rd<8>; .reg .b16 %h<8>;\n"
               "  .reg .f64 %fd<8>; .reg .u32 %u<4>; .reg .s32 %s<4>; .reg .u16 %uh<4>; .reg .f16 %hf<4>;\n")


def _ptxas_one(lines, arch, decls):
    head = f".version 8.8\n.target {arch}\n.address_size 64\n.visible .entry k()\n{{\n{_DECL_LINES}{decls}\n"
    first = head.count("\n") + 1
    text = head + "\n".join("  " + ln for ln in lines) + "\n  ret;\n}\n"
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.ptx")
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run([PTXAS, f"-arch={arch}", src, "-o", os.path.join(d, "t.o")], capture_output=True,
                           text=True, timeout=120)
    bad = {int(m) - first for m in re.findall(r"line (\d+); (?:error|fatal)", r.stderr)}
    return r.returncode == 0, [i not in bad for i in range(len(lines))]


def ptxas_accepts(lines, arch: str = ARCH, decls: str = "") -> list:
    """Whether ptxas accepts each of ``lines`` (one kernel per line, run in parallel)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda ln: _ptxas_one([ln], arch, decls)[0], lines))


# ------------------------------------------------------------------------------------------- inputs
INT_EDGES = {
    16: [0, 1, 2, 0x7FFF, 0x8000, 0xFFFF, 0xFFFE, 0x8001, 3, 0x00FF, 0x0100],
    32: [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x80000001, 3, 0xFFFF, 0x10000, 0x00FFFFFF,
         0x00800000],
    64: [0, 1, 2, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, (1 << 64) - 2, (1 << 63) + 1, 3, 0xFFFFFFFF,
         1 << 32, (1 << 32) + 1],
}


def rand_bits(rng, nbits: int, n: int = N, edges: bool = True) -> np.ndarray:
    """Random n-bit patterns, the first ones edge cases (0, 1, -1, MIN, MAX...)."""
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[nbits]
    v = rng.integers(0, 1 << nbits, size=n, dtype=np.uint64 if nbits == 64 else np.int64, endpoint=False) \
        if nbits < 64 else rng.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)
    v = v.astype(dt)
    if edges:
        e = INT_EDGES.get(nbits, [])
        k = min(len(e), n)
        v[:k] = np.array(e[:k], dtype=dt)
        # small magnitudes are interesting too
        v[k:k + 8] = rng.integers(0, 8, size=8).astype(dt)
    return v


def sx(v: int, n: int) -> int:
    """Two's complement value of an n-bit pattern."""
    v &= (1 << n) - 1
    return v - (1 << n) if v >> (n - 1) else v


def lanes(*arrays):
    """Per-lane tuples of Python ints."""
    return list(zip(*[[int(x) for x in a] for a in arrays]))


def check(out, expect, n_bits):
    """Compare a raw output array with a list of Python ints (taken modulo 2**n_bits)."""
    want = np.array([e & ((1 << n_bits) - 1) for e in expect], dtype=out.dtype)
    bad = np.nonzero(out != want)[0]
    assert bad.size == 0, f"lanes {bad[:8].tolist()}: got {[hex(int(out[i])) for i in bad[:4]]} " \
                          f"want {[hex(int(want[i])) for i in bad[:4]]}"


# ------------------------------------------------------------------------------------------- tests
def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@pytest.mark.parametrize("t", ["u16", "s16", "u32", "s32", "u64", "s64"])
def test_arith_every_integer_type(t):
    """add sub mul.lo/.hi mad.lo/.hi div rem min max sad (+abs neg, mul/mad.wide) against Python ints."""
    n = int(t[1:])
    signed = t[0] == "s"
    rng = np.random.default_rng(n + signed)
    a, b, c = rand_bits(rng, n), rand_bits(rng, n)[::-1].copy(), rand_bits(rng, n)
    b[::7] = 0                                   # division by zero lanes
    b[3] = (1 << n) - 1                          # -1 (INT_MIN / -1 for signed)
    a[3] = 1 << (n - 1)
    ops = {"add": "add.{t} %o, %a, %b", "sub": "sub.{t} %o, %a, %b", "mullo": "mul.lo.{t} %o, %a, %b",
           "mulhi": "mul.hi.{t} %o, %a, %b", "madlo": "mad.lo.{t} %o, %a, %b, %c",
           "madhi": "mad.hi.{t} %o, %a, %b, %c", "div": "div.{t} %o, %a, %b", "rem": "rem.{t} %o, %a, %b",
           "min": "min.{t} %o, %a, %b", "max": "max.{t} %o, %a, %b", "sad": "sad.{t} %o, %a, %b, %c"}
    if signed:
        ops.update(abs="abs.{t} %o, %a", neg="neg.{t} %o, %a")
    outs = {k: t for k in ops}
    wide = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}.get(t)
    body = "\n".join(v.format(t=t).replace("%o", "%" + k) + ";" for k, v in ops.items())
    if wide:
        outs.update(mulw=wide, madw=wide)
        body += f"\nmul.wide.{t} %mulw, %a, %b;\ncvt.{wide}.{t} %cw, %c;\nmad.wide.{t} %madw, %a, %b, %cw;"
    out = run_body(body, {"a": t, "b": t, "c": t}, outs, {"a": a, "b": b, "c": c},
                   decls=f".reg .{wide} %cw;" if wide else "")
    M = (1 << n) - 1
    val = (lambda v: sx(v, n)) if signed else (lambda v: v & M)
    L = [(val(x), val(y), val(z)) for x, y, z in lanes(a, b, c)]
    check(out["add"], [x + y for x, y, z in L], n)
    check(out["sub"], [x - y for x, y, z in L], n)
    check(out["mullo"], [x * y for x, y, z in L], n)
    check(out["mulhi"], [(x * y) >> n for x, y, z in L], n)
    check(out["madlo"], [x * y + z for x, y, z in L], n)
    check(out["madhi"], [((x * y) >> n) + z for x, y, z in L], n)
    check(out["div"], [-1 if y == 0 else _trunc_div(x, y) for x, y, z in L], n)
    check(out["rem"], [-1 if y == 0 else x - _trunc_div(x, y) * y for x, y, z in L], n)
    check(out["min"], [min(x, y) for x, y, z in L], n)
    check(out["max"], [max(x, y) for x, y, z in L], n)
    check(out["sad"], [z + abs(x - y) for x, y, z in L], n)
    if signed:
        check(out["abs"], [abs(x) for x, y, z in L], n)
        check(out["neg"], [-x for x, y, z in L], n)
    if wide:
        check(out["mulw"], [x * y for x, y, z in L], 2 * n)
        check(out["madw"], [x * y + z for x, y, z in L], 2 * n)


def test_division_by_zero_and_overflow_constants():
    """x/0 and x%0 are all ones for every type (the GPU's answer); INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0."""
    from tcsim.semantics.integer import DIV_BY_ZERO_BITS, REM_BY_ZERO_BITS
    assert DIV_BY_ZERO_BITS == REM_BY_ZERO_BITS == -1
    a = np.array([0, 5, 0x80000000, 0xFFFFFFFF] * 16, dtype=np.uint32)
    b = np.array([0, 0, 0xFFFFFFFF, 0] * 16, dtype=np.uint32)
    out = run_body("div.s32 %q, %a, %b; rem.s32 %r, %a, %b; div.u32 %uq, %a, %b; rem.u32 %ur, %a, %b;",
                   {"a": "s32", "b": "s32"}, {"q": "s32", "r": "s32", "uq": "u32", "ur": "u32"}, {"a": a, "b": b})
    assert out["q"][:4].tolist() == [0xFFFFFFFF, 0xFFFFFFFF, 0x80000000, 0xFFFFFFFF]
    assert out["r"][:4].tolist() == [0xFFFFFFFF, 0xFFFFFFFF, 0, 0xFFFFFFFF]
    assert out["uq"][:4].tolist() == [0xFFFFFFFF, 0xFFFFFFFF, 0, 0xFFFFFFFF]
    assert out["ur"][:4].tolist() == [0xFFFFFFFF, 0xFFFFFFFF, 0x80000000, 0xFFFFFFFF]


def test_saturating_forms():
    rng = np.random.default_rng(7)
    a, b, c = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy(), rand_bits(rng, 32)
    body = """add.sat.s32 %o1, %a, %b; sub.sat.s32 %o2, %a, %b; mad.hi.sat.s32 %o3, %a, %b, %c;
              mad24.hi.sat.s32 %o4, %a, %b, %c;"""
    out = run_body(body, {"a": "s32", "b": "s32", "c": "s32"}, {f"o{i}": "s32" for i in range(1, 5)},
                   {"a": a, "b": b, "c": c})
    sat = lambda v: max(-(1 << 31), min((1 << 31) - 1, v))   # noqa: E731
    s24 = lambda v: sx(v & 0xFFFFFF, 24)                       # noqa: E731
    L = [(sx(x, 32), sx(y, 32), sx(z, 32)) for x, y, z in lanes(a, b, c)]
    check(out["o1"], [sat(x + y) for x, y, z in L], 32)
    check(out["o2"], [sat(x - y) for x, y, z in L], 32)
    check(out["o3"], [sat(((x * y) >> 32) + z) for x, y, z in L], 32)
    check(out["o4"], [sat(sx((s24(x) * s24(y)) >> 16, 32) + z) for x, y, z in L], 32)


def test_mul24_mad24():
    rng = np.random.default_rng(8)
    a, b, c = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy(), rand_bits(rng, 32)
    body = """mul24.lo.u32 %o1, %a, %b; mul24.hi.u32 %o2, %a, %b; mul24.lo.s32 %o3, %a, %b;
              mul24.hi.s32 %o4, %a, %b; mad24.lo.u32 %o5, %a, %b, %c; mad24.hi.s32 %o6, %a, %b, %c;"""
    out = run_body(body, {"a": "u32", "b": "u32", "c": "u32"}, {f"o{i}": "u32" for i in range(1, 7)},
                   {"a": a, "b": b, "c": c})
    u24 = lambda v: v & 0xFFFFFF             # noqa: E731
    s24 = lambda v: sx(v & 0xFFFFFF, 24)     # noqa: E731
    L = lanes(a, b, c)
    check(out["o1"], [u24(x) * u24(y) for x, y, z in L], 32)
    check(out["o2"], [(u24(x) * u24(y)) >> 16 for x, y, z in L], 32)
    check(out["o3"], [s24(x) * s24(y) for x, y, z in L], 32)
    check(out["o4"], [(s24(x) * s24(y)) >> 16 for x, y, z in L], 32)
    check(out["o5"], [u24(x) * u24(y) + z for x, y, z in L], 32)
    check(out["o6"], [((s24(x) * s24(y)) >> 16) + z for x, y, z in L], 32)


def test_carry_chains_128_bit_add_sub_and_mixed():
    """add.cc/addc and sub.cc/subc chains give 128-bit sums/differences; CC.CF is a carry (1 = no borrow after
    a subtraction), so a mixed chain add.cc -> subc computes a - b - 1 + carry (as an H100 does)."""
    rng = np.random.default_rng(9)
    x = [rand_bits(rng, 32) for _ in range(4)]
    y = [rand_bits(rng, 32)[::-1].copy() for _ in range(4)]
    ins = {f"x{i}": "u32" for i in range(4)} | {f"y{i}": "u32" for i in range(4)}
    vals = {f"x{i}": x[i] for i in range(4)} | {f"y{i}": y[i] for i in range(4)}
    body = """add.cc.u32 %s0, %x0, %y0; addc.cc.u32 %s1, %x1, %y1; addc.cc.u32 %s2, %x2, %y2; addc.u32 %s3, %x3, %y3;
              sub.cc.u32 %d0, %x0, %y0; subc.cc.u32 %d1, %x1, %y1; subc.cc.u32 %d2, %x2, %y2; subc.u32 %d3, %x3, %y3;
              add.cc.u32 %m0, %x0, %y0; subc.u32 %m1, %x1, %y1;
              sub.cc.u32 %n0, %x0, %y0; addc.u32 %n1, %x1, %y1;
              mad.lo.cc.u32 %w0, %x0, %y0, %x2; madc.hi.cc.u32 %w1, %x0, %y0, %x3; addc.u32 %w2, %y3, 0;"""
    outs = {f"{k}{i}": "u32" for k in "sd" for i in range(4)} | {"m0": "u32", "m1": "u32", "n0": "u32",
                                                                  "n1": "u32", "w0": "u32", "w1": "u32", "w2": "u32"}
    out = run_body(body, ins, outs, vals)
    X = [sum(int(x[i][l]) << (32 * i) for i in range(4)) for l in range(N)]
    Y = [sum(int(y[i][l]) << (32 * i) for i in range(4)) for l in range(N)]
    for i in range(4):
        check(out[f"s{i}"], [(p + q) >> (32 * i) for p, q in zip(X, Y)], 32)
        check(out[f"d{i}"], [(p - q) >> (32 * i) for p, q in zip(X, Y)], 32)
    L = lanes(*x, *y)
    carry = [(v[0] + v[4]) >> 32 for v in L]
    check(out["m1"], [v[1] - v[5] - 1 + cf for v, cf in zip(L, carry)], 32)
    nb = [1 if v[0] >= v[4] else 0 for v in L]          # carry of a + ~b + 1
    check(out["n1"], [v[1] + v[5] + cf for v, cf in zip(L, nb)], 32)
    lo = [((v[0] * v[4]) & 0xFFFFFFFF) + v[2] for v in L]     # carry-out of the 32-bit addition only
    check(out["w0"], lo, 32)
    c1 = [p >> 32 for p in lo]
    hi = [((v[0] * v[4]) >> 32) + v[3] + c for v, c in zip(L, c1)]
    check(out["w1"], hi, 32)
    check(out["w2"], [v[7] + (h >> 32) for v, h in zip(L, hi)], 32)


def test_carry_chain_64_bit_types():
    rng = np.random.default_rng(10)
    x0, x1, y0, y1 = (rand_bits(rng, 64) for _ in range(4))
    body = "add.cc.u64 %s0, %x0, %y0; addc.u64 %s1, %x1, %y1; sub.cc.s64 %d0, %x0, %y0; subc.s64 %d1, %x1, %y1;"
    out = run_body(body, {"x0": "u64", "x1": "u64", "y0": "u64", "y1": "u64"},
                   {"s0": "u64", "s1": "u64", "d0": "s64", "d1": "s64"}, {"x0": x0, "x1": x1, "y0": y0, "y1": y1})
    X = [int(a) + (int(b) << 64) for a, b in zip(x0, x1)]
    Y = [int(a) + (int(b) << 64) for a, b in zip(y0, y1)]
    check(out["s0"], [p + q for p, q in zip(X, Y)], 64)
    check(out["s1"], [(p + q) >> 64 for p, q in zip(X, Y)], 64)
    check(out["d1"], [(p - q) >> 64 for p, q in zip(X, Y)], 64)


def test_carry_flag_is_per_lane_and_survives_divergence():
    """Lanes that skip an addc keep their carry; the flag lives per warp (two warps, independent)."""
    a = np.full(N, 0xFFFFFFFF, np.uint32)
    b = np.array([i % 2 for i in range(N)], np.uint32)      # odd lanes carry out
    body = """add.cc.u32 %t, %a, %b;
              setp.lt.u32 %p, %b, 1;
              @%p add.cc.u32 %t, %b, %b;     // even lanes: clears their carry
              addc.u32 %o, 0, 0;"""
    out = run_body(body, {"a": "u32", "b": "u32"}, {"o": "u32"}, {"a": a, "b": b},
                   decls=".reg .u32 %t; .reg .pred %p;")
    assert out["o"].tolist() == [i % 2 for i in range(N)]


# ------------------------------------------------------------------------------------------- bit ops
def _bfind(v, n, signed, shiftamt):
    if signed and v >> (n - 1):
        v = ~v & ((1 << n) - 1)
    if v == 0:
        return 0xFFFFFFFF
    pos = v.bit_length() - 1
    return n - 1 - pos if shiftamt else pos


def _bfe(a, pos, ln, n, signed):
    pos, ln = pos & 0xFF, ln & 0xFF
    msb = n - 1
    sbit = 0 if (not signed or ln == 0) else (a >> min(pos + ln - 1, msb)) & 1
    d = 0
    for i in range(n):
        bit = (a >> (pos + i)) & 1 if (i < ln and pos + i <= msb) else sbit
        d |= bit << i
    return d


def _bfi(a, b, pos, ln, n):
    pos, ln = pos & 0xFF, ln & 0xFF
    f = b
    for i in range(ln):
        if pos + i > n - 1:
            break
        f = (f & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
    return f


def _fns(mask, base, offset):
    if offset == 0:
        return base if (mask >> base) & 1 else 0xFFFFFFFF
    if offset == -(1 << 31):        # H100: base, whatever the mask
        return base
    pos, count, step = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            if count == 0:
                return pos
            count -= 1
        pos += step
    return 0xFFFFFFFF


def _szext(a, b, clamp, signed):
    b1 = b & 31
    too_large = clamp and b >= 32
    n = 32 if too_large else b1
    if n == 0 and not too_large:
        return 0
    if too_large:
        return a
    v = a & ((1 << n) - 1)
    if signed and (v >> (n - 1)) & 1:
        v |= (0xFFFFFFFF << n) & 0xFFFFFFFF
    return v


def _bmsk(a, b, clamp):
    if clamp:
        if a >= 32:
            return 0
        width = min(b, 32)
    else:
        a, width = a & 31, b & 31
    return (((1 << width) - 1) << a) & 0xFFFFFFFF


def test_bit_manipulation():
    rng = np.random.default_rng(11)
    a = rand_bits(rng, 32)
    b = rng.integers(0, 300, N).astype(np.uint32)
    c = rng.integers(0, 300, N).astype(np.uint32)
    b[:8] = [0, 31, 32, 33, 255, 256, 1, 16]
    c[:8] = [0, 1, 32, 0, 40, 8, 31, 64]
    off = rng.integers(-34, 34, N).astype(np.int32)
    base = rng.integers(0, 32, N).astype(np.uint32)
    body = """popc.b32 %o1, %a; clz.b32 %o2, %a; bfind.u32 %o3, %a; bfind.s32 %o4, %a; bfind.shiftamt.u32 %o5, %a;
              bfind.shiftamt.s32 %o6, %a; brev.b32 %o7, %a; bfe.u32 %o8, %a, %b, %c; bfe.s32 %o9, %a, %b, %c;
              bfi.b32 %o10, %a, %c, %b, %c; fns.b32 %o11, %a, %base, %off; szext.clamp.s32 %o12, %a, %b;
              szext.wrap.s32 %o13, %a, %b; szext.clamp.u32 %o14, %a, %c; bmsk.clamp.b32 %o15, %b, %c;
              bmsk.wrap.b32 %o16, %b, %c;"""
    out = run_body(body, {"a": "b32", "b": "u32", "c": "u32", "base": "u32", "off": "s32"},
                   {f"o{i}": "u32" for i in range(1, 17)}, {"a": a, "b": b, "c": c, "base": base, "off": off})
    L = lanes(a, b, c, base, off.view(np.uint32))
    check(out["o1"], [bin(x).count("1") for x, *_ in L], 32)
    check(out["o2"], [32 - x.bit_length() for x, *_ in L], 32)
    check(out["o3"], [_bfind(x, 32, False, False) for x, *_ in L], 32)
    check(out["o4"], [_bfind(x, 32, True, False) for x, *_ in L], 32)
    check(out["o5"], [_bfind(x, 32, False, True) for x, *_ in L], 32)
    check(out["o6"], [_bfind(x, 32, True, True) for x, *_ in L], 32)
    check(out["o7"], [int(f"{x:032b}"[::-1], 2) for x, *_ in L], 32)
    check(out["o8"], [_bfe(x, p, q, 32, False) for x, p, q, *_ in L], 32)
    check(out["o9"], [_bfe(x, p, q, 32, True) for x, p, q, *_ in L], 32)
    check(out["o10"], [_bfi(x, q, p, q, 32) for x, p, q, *_ in L], 32)
    check(out["o11"], [_fns(x, bs, sx(o, 32)) for x, p, q, bs, o in L], 32)
    check(out["o12"], [_szext(x, p, True, True) for x, p, q, *_ in L], 32)
    check(out["o13"], [_szext(x, p, False, True) for x, p, q, *_ in L], 32)
    check(out["o14"], [_szext(x, q, True, False) for x, p, q, *_ in L], 32)
    check(out["o15"], [_bmsk(p, q, True) for x, p, q, *_ in L], 32)
    check(out["o16"], [_bmsk(p, q, False) for x, p, q, *_ in L], 32)


def test_bit_manipulation_64():
    rng = np.random.default_rng(12)
    a, b = rand_bits(rng, 64), rand_bits(rng, 64)[::-1].copy()
    p = rng.integers(0, 80, N).astype(np.uint32)
    q = rng.integers(0, 80, N).astype(np.uint32)
    body = """popc.b64 %o1, %a; clz.b64 %o2, %a; bfind.s64 %o3, %a; bfind.shiftamt.u64 %o4, %a;
              brev.b64 %w1, %a; bfe.s64 %w2, %a, %p, %q; bfe.u64 %w3, %a, %p, %q; bfi.b64 %w4, %a, %b, %p, %q;"""
    out = run_body(body, {"a": "b64", "b": "b64", "p": "u32", "q": "u32"},
                   {"o1": "u32", "o2": "u32", "o3": "u32", "o4": "u32", "w1": "b64", "w2": "b64", "w3": "b64",
                    "w4": "b64"}, {"a": a, "b": b, "p": p, "q": q})
    L = lanes(a, b, p, q)
    check(out["o1"], [bin(x).count("1") for x, *_ in L], 32)
    check(out["o2"], [64 - x.bit_length() for x, *_ in L], 32)
    check(out["o3"], [_bfind(x, 64, True, False) for x, *_ in L], 32)
    check(out["o4"], [_bfind(x, 64, False, True) for x, *_ in L], 32)
    check(out["w1"], [int(f"{x:064b}"[::-1], 2) for x, *_ in L], 64)
    check(out["w2"], [_bfe(x, s, n, 64, True) for x, y, s, n in L], 64)
    check(out["w3"], [_bfe(x, s, n, 64, False) for x, y, s, n in L], 64)
    check(out["w4"], [_bfi(x, y, s, n, 64) for x, y, s, n in L], 64)


def test_dot_products_and_packed_16x2():
    rng = np.random.default_rng(13)
    a, b, c = rand_bits(rng, 32), rand_bits(rng, 32)[::-1].copy(), rand_bits(rng, 32)
    body = """dp4a.u32.u32 %o1, %a, %b, %c; dp4a.s32.u32 %o2, %a, %b, %c; dp4a.s32.s32 %o3, %a, %b, %c;
              dp2a.lo.u32.u32 %o4, %a, %b, %c; dp2a.hi.s32.s32 %o5, %a, %b, %c; dp2a.lo.s32.u32 %o6, %a, %b, %c;
              add.u16x2 %o7, %a, %b; add.s16x2 %o8, %a, %b; min.u16x2 %o9, %a, %b; max.s16x2 %o10, %a, %b;
              min.relu.s16x2 %o11, %a, %b; max.relu.s32 %o12, %a, %b; min.relu.s32 %o13, %a, %b;"""
    out = run_body(body, {"a": "b32", "b": "b32", "c": "b32"}, {f"o{i}": "b32" for i in range(1, 14)},
                   {"a": a, "b": b, "c": c})

    def parts(v, k, w, signed):
        return [sx(v >> (w * i), w) if signed else (v >> (w * i)) & ((1 << w) - 1) for i in range(k)]

    def dp4(x, y, z, sa, sb):
        return z + sum(p * q for p, q in zip(parts(x, 4, 8, sa), parts(y, 4, 8, sb)))

    def dp2(x, y, z, sa, sb, hi):
        return z + sum(p * q for p, q in zip(parts(x, 2, 16, sa), parts(y, 4, 8, sb)[2 * hi:2 * hi + 2]))

    def pk(x, y, f, signed):
        r = [f(p, q) for p, q in zip(parts(x, 2, 16, signed), parts(y, 2, 16, signed))]
        return (r[0] & 0xFFFF) | ((r[1] & 0xFFFF) << 16)
    L = lanes(a, b, c)
    check(out["o1"], [dp4(x, y, z, False, False) for x, y, z in L], 32)
    check(out["o2"], [dp4(x, y, z, True, False) for x, y, z in L], 32)
    check(out["o3"], [dp4(x, y, z, True, True) for x, y, z in L], 32)
    check(out["o4"], [dp2(x, y, z, False, False, 0) for x, y, z in L], 32)
    check(out["o5"], [dp2(x, y, z, True, True, 1) for x, y, z in L], 32)
    check(out["o6"], [dp2(x, y, z, True, False, 0) for x, y, z in L], 32)
    check(out["o7"], [pk(x, y, lambda p, q: p + q, False) for x, y, z in L], 32)
    check(out["o8"], [pk(x, y, lambda p, q: p + q, True) for x, y, z in L], 32)
    check(out["o9"], [pk(x, y, min, False) for x, y, z in L], 32)
    check(out["o10"], [pk(x, y, max, True) for x, y, z in L], 32)
    check(out["o11"], [pk(x, y, lambda p, q: max(min(p, q), 0), True) for x, y, z in L], 32)
    check(out["o12"], [max(sx(x, 32), sx(y, 32), 0) for x, y, z in L], 32)
    check(out["o13"], [max(min(sx(x, 32), sx(y, 32)), 0) for x, y, z in L], 32)


def test_register_width_rules_for_narrow_types():
    """A 16-bit instruction writes a 16-bit register; immediates wrap to the type; sign is kept for s16."""
    a = np.arange(N, dtype=np.uint16) * 1000
    out = run_body("add.s16 %o, %a, -1; add.u16 %p, %a, 70000;", {"a": "u16"}, {"o": "s16", "p": "u16"}, {"a": a})
    check(out["o"], [int(x) - 1 for x in a], 16)
    check(out["p"], [int(x) + 70000 for x in a], 16)


# ------------------------------------------------------------------------------------------- illegal forms
ILLEGAL = [
    ("add.sat.u32 %r1, %r2, %r3;", VerifyError, "Modifier '.sat' does not apply to '.u32' type"),
    ("add.sat.s64 %rd1, %rd2, %rd3;", VerifyError, "Modifier '.sat' does not apply to '.s64' type"),
    ("add.cc.u16 %h1, %h2, %h3;", VerifyError, "Modifier '.cc' applies only to add integer types"),
    ("mul.u32 %r1, %r2, %r3;", VerifyError, "Unexpected instruction types specified for 'mul'"),
    ("mul.wide.u64 %rd1, %rd2, %rd3;", VerifyError, "Unexpected instruction types specified for 'mul.wide'"),
    ("mad.lo.sat.s32 %r1, %r2, %r3, %r4;", VerifyError, "Illegal modifier '.sat' for instruction 'mad.lo'"),
    ("mad.hi.sat.u32 %r1, %r2, %r3, %r4;", VerifyError, "Modifier '.sat' does not apply to '.u32' type"),
    ("mad.wide.cc.u32 %rd1, %r2, %r3, %rd4;", VerifyError, "Illegal modifier '.cc' for instruction 'mad.wide'"),
    ("mad24.lo.sat.s32 %r1, %r2, %r3, %r4;", VerifyError, "Illegal modifier '.sat' for instruction 'mad24.lo'"),
    ("mul24.u32 %r1, %r2, %r3;", VerifyError, "'.hi/.lo' modifier required for instruction 'mul24'"),
    ("sub.u16x2 %r1, %r2, %r3;", VerifyError, "Unexpected instruction types specified for 'sub'"),
    ("abs.u32 %r1, %r2;", VerifyError, "Instruction 'abs' applies only to signed numeric types"),
    ("neg.u32 %r1, %r2;", VerifyError, "Instruction 'neg' applies only to signed numeric types"),
    ("min.relu.u32 %r1, %r2, %r3;", VerifyError, "Illegal modifier '.relu' for instruction 'min' with type '.u32'"),
    ("popc.u32 %r1, %r2;", VerifyError, "Unexpected instruction types specified for 'popc'"),
    ("popc.b64 %rd1, %rd2;", VerifyError, "Arguments mismatch for instruction 'popc'"),
    ("bfind.b32 %r1, %r2;", VerifyError, "Unexpected instruction types specified for 'bfind'"),
    ("bfe.b32 %r1, %r2, %r3, %r4;", VerifyError, "Unexpected instruction types specified for 'bfe'"),
    ("szext.s32 %r1, %r2, %r3;", VerifyError, "Clamp modifier required for instruction 'szext'"),
    ("dp2a.u32.u32 %r1, %r2, %r3, %r4;", VerifyError, "'.hi/.lo' modifier required for instruction 'dp2a'"),
    ("add.u32 %r1, %rd1, 1;", VerifyError, "Arguments mismatch for instruction 'add'"),
    ("add.s32 %r1, %f1, 1;", VerifyError, "Arguments mismatch for instruction 'add'"),
    ("add.u32 %r1, %p1, 1;", VerifyError, "Arguments mismatch for instruction 'add': predicate %p1 used where"),
    ("add.u32 %r1, %r1, 1.5;", VerifyError, "Arguments mismatch for instruction 'add'"),
    ("add.u32 %r1, %tid.x, 1;", VerifyError, "Special register argument not allowed for instruction 'add'"),
    ("add.u32 _, %r1, 1;", VerifyError, "Result discard mode is not allowed for instruction 'add'"),
    ("add.u32 %r1, %r2;", VerifyError, "add.u32 takes 3 operands, got 2"),
    ("add.u64.u32 %rd1, %rd2, %rd3;", VerifyError, "Unexpected instruction types specified for 'add'"),
    ("add.lo.u32 %r1, %r2, %r3;", VerifyError, "Illegal modifier '.lo' for instruction 'add'"),
    ("addc.cc.u16 %h1, %h2, %h3;", VerifyError, "Modifier '.cc' applies only to addc integer types"),
    ("min.u16x2 %u1, %u2, %u3;", VerifyError, "Arguments mismatch for instruction 'min'"),
]


@pytest.mark.parametrize("line,exc,msg", ILLEGAL, ids=[x[0] for x in ILLEGAL])
def test_illegal_integer_forms(line, exc, msg):
    err = decode_error(line)
    assert isinstance(err, exc), f"{line!r}: expected {exc.__name__}, got {err!r}"
    assert msg in err.message, err.message


LEGAL = ["mad.lo.cc.u32 %r1, %r2, %r3, %r4;", "madc.hi.cc.u32 %r1, %r2, %r3, %r4;", "add.u32 %u1, %s1, %r3;",
         "mul.wide.u16 %r1, %h2, %h3;", "add.u32 %r1, %r1, 4294967296;", "popc.b64 %r1, %rd2;",
         "bfe.s64 %rd1, %rd2, %r3, %r4;", "dp4a.u32.s32 %r1, %r2, %r3, %r4;", "add.s16x2 %r1, %r2, %r3;",
         "mad.hi.sat.s32 %r1, %r2, %r3, %r4;", "sad.s16 %h1, %h2, %h3, %h4;", "bmsk.wrap.b32 %r1, %r2, %r3;", "addc.u16 %h1, %h2, %h3;"]


def test_legal_integer_forms_decode():
    for line in LEGAL:
        assert decode_error(line) is None, line


@needs_ptxas
def test_ptxas_agrees_on_integer_forms():
    """ptxas rejects every line of the illegal table and accepts every legal one."""
    verdict = ptxas_accepts([x[0] for x in ILLEGAL] + LEGAL)
    n = len(ILLEGAL)
    assert not any(verdict[:n]), [x[0] for x, ok in zip(ILLEGAL, verdict) if ok]
    assert all(verdict[n:]), [x for x, ok in zip(LEGAL, verdict[n:]) if not ok]


# ------------------------------------------------------------------------------------------- float inputs
F32_EDGES = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
             0xFFC00001, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800001,
             0x3EAAAAAB, 0x40490FDB, 0x4B000000, 0x3F000000, 0xBF000000, 0x3FC00000, 0x00400000, 0x7E800000]


def f32_bits(rng, n: int = N, lo: int = 100, hi: int = 154, edges: bool = True) -> np.ndarray:
    """f32 bit patterns: random sign/mantissa with biased exponent in [lo, hi), the first ones edge cases
    (+-0, +-1, +-Inf, NaNs with payloads, subnormals, FLT_MIN/MAX...), the last eighth fully random bits."""
    s = rng.integers(0, 2, n).astype(np.uint32) << np.uint32(31)
    e = rng.integers(lo, hi, n).astype(np.uint32) << np.uint32(23)
    m = rng.integers(0, 1 << 23, n).astype(np.uint32)
    v = s | e | m
    k = n // 8
    v[-k:] = rng.integers(0, 1 << 32, k, dtype=np.uint64).astype(np.uint32)
    if edges:
        v[:len(F32_EDGES)] = F32_EDGES
    return v


F16_EDGES = [0x0000, 0x8000, 0x3C00, 0xBC00, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE01, 0x0001, 0x83FF, 0x0400,
             0x7BFF, 0xFBFF, 0x3C01, 0x3555]
BF16_EDGES = [0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC1, 0x0001, 0x807F, 0x0080,
              0x7F7F, 0xFF7F, 0x3F81, 0x3EAB]


def half_bits(rng, kind: str, n: int = N, edges: bool = True) -> np.ndarray:
    """f16 (kind 'f16') or bf16 ('bf16') bit patterns, edge cases first."""
    if kind == "f16":
        v = (rng.integers(0, 2, n) << 15) | (rng.integers(8, 22, n) << 10) | rng.integers(0, 1 << 10, n)
        e = F16_EDGES
    else:
        v = (rng.integers(0, 2, n) << 15) | (rng.integers(110, 140, n) << 7) | rng.integers(0, 1 << 7, n)
        e = BF16_EDGES
    v = v.astype(np.uint16)
    v[-n // 8:] = rng.integers(0, 1 << 16, n // 8).astype(np.uint16)
    if edges:
        v[:len(e)] = e
    return v


def f32_values(bits: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.asarray(bits, np.uint32).view(np.float32).astype(np.float64)


def half_values(bits: np.ndarray, kind: str) -> np.ndarray:
    b = np.asarray(bits, np.uint16)
    if kind == "f16":
        return b.view(np.float16).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return (b.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def flush_f32(bits: np.ndarray) -> np.ndarray:
    """.ftz: subnormal f32 patterns -> signed zero."""
    b = np.asarray(bits, np.uint32)
    sub = ((b & np.uint32(0x7F800000)) == 0) & ((b & np.uint32(0x007FFFFF)) != 0)
    return np.where(sub, b & np.uint32(0x80000000), b).astype(np.uint32)


# ------------------------------------------------------------------------------------------- GPU differential
def gpu_cases():
    """Exact (non-.approx) ALU kernels of every family, for the bit-for-bit simulator-vs-GPU comparison."""
    rng = np.random.default_rng(99)
    i32 = [rand_bits(rng, 32) for _ in range(3)]
    i32[1][::5] = 0
    i64 = [rand_bits(rng, 64) for _ in range(2)]
    f32 = [f32_bits(rng) for _ in range(3)]
    h16 = [half_bits(rng, "f16").astype(np.uint32) | (half_bits(rng, "f16").astype(np.uint32) << 16)
           for _ in range(3)]
    b16 = [half_bits(rng, "bf16").astype(np.uint32) | (half_bits(rng, "bf16").astype(np.uint32) << 16)
           for _ in range(3)]
    sh = rng.integers(0, 70, N).astype(np.uint32)
    I3 = {"a": "b32", "b": "b32", "c": "b32"}
    out32 = lambda n: {f"o{k}": "b32" for k in range(1, n + 1)}      # noqa: E731
    yield ("integer", """div.s32 %o1, %a, %b; rem.u32 %o2, %a, %b; mul.hi.s32 %o3, %a, %b; mad.hi.sat.s32 %o4, %a, %b, %c;
            mul24.hi.s32 %o5, %a, %b; sad.s32 %o6, %a, %b, %c; add.sat.s32 %o7, %a, %b; add.cc.u32 %o8, %a, %b;
            subc.cc.u32 %o9, %b, %c; addc.u32 %o10, %a, %c; bfe.s32 %o11, %a, %b, %c; bfind.shiftamt.s32 %o12, %a;
            and.b32 %t, %b, 31; fns.b32 %o13, %a, %t, %c; szext.wrap.s32 %o14, %a, %c; bmsk.clamp.b32 %o15, %b, %c;
            dp4a.s32.u32 %o16, %a, %b, %c; dp2a.hi.u32.s32 %o17, %a, %b, %c; min.relu.s16x2 %o18, %a, %b;
            add.s16x2 %o19, %a, %c; popc.b32 %o20, %a;""", I3, out32(20), dict(zip("abc", i32)))
    yield ("integer64", """div.s64 %w1, %x, %y; rem.u64 %w2, %x, %y; mul.hi.u64 %w3, %x, %y; sub.cc.u64 %w4, %x, %y;
            subc.u64 %w5, %y, %x; bfe.s64 %w6, %x, %s, %s; brev.b64 %w7, %x; shr.s64 %w8, %x, %s;""",
           {"x": "b64", "y": "b64", "s": "b32"}, {f"w{k}": "b64" for k in range(1, 9)},
           {"x": i64[0], "y": i64[1], "s": sh})
    yield ("logic", """shf.l.clamp.b32 %o1, %a, %b, %s; shf.r.wrap.b32 %o2, %a, %b, %s; prmt.b32 %o3, %a, %b, %c;
            prmt.b32.b4e %o4, %a, %b, %c; prmt.b32.ecr %o5, %a, %b, %c; lop3.b32 %o6, %a, %b, %c, 0x6A;
            shl.b32 %o7, %a, %s; shr.s32 %o8, %a, %s; cnot.b32 %o9, %b;""",
           {**I3, "s": "b32"}, out32(9), {**dict(zip("abc", i32)), "s": sh})
    yield ("compare", """setp.ltu.ftz.f32 %p1|%p2, %a, %b; selp.b32 %o1, 1, 0, %p1; selp.b32 %o2, 1, 0, %p2;
            set.num.or.u32.f32 %o3, %a, %b, %p1; set.le.f16x2.f16x2 %o4, %x, %y; set.gtu.u32.bf16x2 %o5, %u, %v;
            slct.ftz.b32.f32 %o6, %x, %y, %a; setp.hs.u32 %p1, %x, %y; selp.b32 %o7, 1, 0, %p1;
            testp.normal.f32 %p1, %a; selp.b32 %o8, 1, 0, %p1;""",
           {"a": "f32", "b": "f32", "x": "b32", "y": "b32", "u": "b32", "v": "b32"}, out32(8),
           {"a": f32[0], "b": f32[1], "x": h16[0], "y": h16[1], "u": b16[0], "v": b16[1]})
    yield ("float", """add.rz.f32 %o1, %a, %b; mul.rm.ftz.f32 %o2, %a, %b; fma.rp.sat.f32 %o3, %a, %b, %c;
            div.rn.f32 %o4, %a, %b; sqrt.rz.f32 %o5, %a; rcp.rm.f32 %o6, %b; min.NaN.f32 %o7, %a, %b;
            max.xorsign.abs.f32 %o8, %a, %b; abs.f32 %o9, %a; neg.ftz.f32 %o10, %b; copysign.f32 %o11, %a, %b;
            fma.rn.relu.f16x2 %o12, %x, %y, %z; add.rn.ftz.sat.f16x2 %o13, %x, %y; fma.rn.relu.bf16x2 %o14, %u, %v, %w;
            mul.rn.bf16x2 %o15, %u, %v; max.NaN.bf16x2 %o16, %u, %v; neg.f16x2 %o17, %x; abs.bf16x2 %o18, %u;""",
           {"a": "f32", "b": "f32", "c": "f32", "x": "b32", "y": "b32", "z": "b32", "u": "b32", "v": "b32",
            "w": "b32"}, out32(18), {"a": f32[0], "b": f32[1], "c": f32[2], "x": h16[0], "y": h16[1], "z": h16[2],
                                     "u": b16[0], "v": b16[1], "w": b16[2]})
    yield ("convert", """cvt.rni.s32.f32 %o1, %a; cvt.rpi.u16.f32 %o2, %a; cvt.rz.f32.s32 %o3, %i; cvt.rn.f16x2.f32 %o4, %a, %b;
            cvt.rz.relu.satfinite.bf16x2.f32 %o5, %a, %b; cvt.rna.tf32.f32 %o6, %n; cvt.rmi.f32.f32 %o7, %a;
            cvt.sat.s8.s32 %o8, %i; cvt.pack.sat.s8.s32.b32 %o9, %i, %j, %k; cvt.rn.satfinite.e4m3x2.f32 %h, %a, %b;
            cvt.u32.u16 %o10, %h; cvt.rn.f16x2.e4m3x2 %o11, %h; cvt.rm.f32.f64 %o12, %d;""",
           {"a": "f32", "b": "f32", "i": "b32", "j": "b32", "k": "b32", "d": "f64", "n": "f32"}, out32(12),
           {"a": f32[0], "b": f32[1], "i": i32[0], "j": i32[1], "k": i32[2], "n": f32_bits(rng, edges=False) & 0x7F7FFFFF,
            "d": f32_values(f32[2]).astype(np.float64).view(np.uint64) + np.uint64(777)})


@pytest.mark.gpu
def test_alu_kernels_bit_exact_on_gpu():
    """The same ALU kernels on the simulator and on the GPU (hw.launcher), compared bit for bit.  (Inputs
    avoid the cases PTX leaves undefined, e.g. fns with base > 31, and cvt.tf32 of NaN, whose GPU result
    sim.numerics does not model yet.)"""
    try:
        from tcsim.hw.launcher import GpuUnavailable, gpu_available, run_on_gpu
    except ImportError as e:
        pytest.skip(f"GPU back end unavailable: {e}")
    ok, why = gpu_available()
    if not ok:
        pytest.skip(why)
    failures = []
    for name, body, ins, outs, vals in gpu_cases():
        decls = {"convert": ".reg .b16 %h;", "compare": ".reg .pred %p1, %p2;", "integer": ".reg .b32 %t;"}.get(name, "")
        ptx = kernel_for(body, ins, outs, decls, arch="sm_90")
        sim = run_launch(Launch(ptx=ptx, block=(N, 1, 1), args=launch_args(ins, outs, vals))).outputs
        try:
            gpu = run_on_gpu(Launch(ptx=ptx, block=(N, 1, 1), args=launch_args(ins, outs, vals)))
        except GpuUnavailable as e:
            pytest.skip(str(e))
        assert gpu.ok, f"{name}: {gpu.error} {gpu.error_detail}"
        for k, oname in enumerate(outs):
            s, g = sim[len(ins) + k], gpu.outputs[len(ins) + k]
            bad = np.nonzero(s != g)[0]
            if bad.size:
                failures.append(f"{name}.{oname}: {bad.size} lanes, e.g. lane {bad[0]} sim {int(s[bad[0]]):#x} "
                                f"gpu {int(g[bad[0]]):#x}")
    assert not failures, "\n".join(failures)
