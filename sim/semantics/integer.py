"""Integer arithmetic: add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns brev bfe bfi
szext bmsk dp4a dp2a, and the extended-precision carry chains add.cc addc sub.cc subc mad.cc madc.

PTX ISA 9.1 §9.7.1 (integer arithmetic instructions) and §9.7.2 (extended-precision integer arithmetic).
Floating-point forms of the shared opcodes (``add.f32``, ``min.f16x2``...) are in ``float_arith.py``; this
module takes an opcode when its type qualifier is an integer type (or when it has no float type, so that
mistakes are reported here).

The condition code CC.CF of the carry chains is a per-lane flag of each warp, its declared field ``Warp.carry``
(read and written through :meth:`tcsim.context.ExecContext.carry_flag` / ``set_carry_flag``). Its hardware meaning
(confirmed on an H100, see ``tests/semantics/test_integer.py``) is a *carry*: ``add.cc`` sets it to the unsigned
carry-out of ``a + b``; ``sub.cc`` computes ``a + ~b + 1`` and sets it to the carry-out of that sum, i.e. CF = 1
means "no borrow"; ``subc`` computes ``a + ~b + CF`` (= ``a - b - borrow``). Pure add chains and pure sub chains
therefore give the results the PTX ISA describes; a chain that mixes them gives what the GPU gives.

Division by zero is unspecified in PTX; tcsim returns what an H100 (sm_90a, ptxas 13.0) returns, for every
integer type (named constants below): the quotient **and** the remainder are all ones (-1 for signed types).
``INT_MIN / -1`` gives INT_MIN and ``INT_MIN % -1`` gives 0 (also as observed).

Qualifiers, types and operands are parsed and checked by :func:`tcsim.isa.integer_forms.parse_integer` (a
frozen :class:`~tcsim.isa.integer_forms.IntForm`); this module builds the execution.

Not supported: nothing of §9.7.1/§9.7.2 is left out; mixed 16-bit ``.cc`` forms do not exist in PTX.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa import ir

from tcsim.isa.integer_forms import parse_integer
from ..ptxtypes import view_dtype
from .misc_alu import from_pyints, to_pyints
from .registry import semantics

#: x / 0 and x % 0, any integer type: all ones (measured on an H100 for u16 s16 u32 s32 u64 s64)
DIV_BY_ZERO_BITS = -1
REM_BY_ZERO_BITS = -1

_BITS = {"u16": 16, "s16": 16, "u32": 32, "s32": 32, "u64": 64, "s64": 64, "b32": 32, "b64": 64,
         "u16x2": 32, "s16x2": 32, "b16": 16}


def _nbits(t: str) -> int:
    return _BITS[t]


def _signed(t: str) -> bool:
    return t[0] == "s"


def _i64(a: np.ndarray, t: str) -> np.ndarray:
    """Value of a <=32-bit operand as int64."""
    return a.astype(np.int64)


def _u64(a: np.ndarray) -> np.ndarray:
    """Raw bits of an operand as uint64 (zero-extended)."""
    return a.view(np.dtype(a.dtype.str.replace("i", "u"))).astype(np.uint64)


def _wrap(v: np.ndarray, t: str) -> np.ndarray:
    """Integer results (int64 or uint64 arrays, or Python-int lists) reduced modulo 2**n and typed as ``t``."""
    n = _nbits(t)
    if isinstance(v, list):
        u = from_pyints(v, n)
    elif n == 64:
        u = v.astype(np.uint64) if v.dtype != np.uint64 else v
    else:
        u = (v.astype(np.int64) & ((1 << n) - 1)).astype({16: np.uint16, 32: np.uint32}[n])
    return u.view(view_dtype(t)) if t in ("u16", "u32", "u64", "s16", "s32", "s64") else u


def _sat32(v: np.ndarray) -> np.ndarray:
    return np.clip(v, -(1 << 31), (1 << 31) - 1)


def _carry_flag(ctx) -> np.ndarray:
    return ctx.carry_flag()


def _set_carry(ctx, values) -> None:
    ctx.set_carry_flag(values)


def _add_with_carry(a: np.ndarray, b: np.ndarray, cin: np.ndarray, n: int):
    """Unsigned n-bit a + b + cin -> (sum bits uint64, carry-out bool)."""
    au, bu = _u64(a), _u64(b)
    ci = cin.astype(np.uint64)
    if n < 64:
        s = au + bu + ci
        return s & np.uint64((1 << n) - 1), (s >> np.uint64(n)).astype(bool)
    s1 = au + bu
    c1 = s1 < au
    s = s1 + ci
    c2 = s < s1
    return s, c1 | c2


def _packed16(a: np.ndarray, b: np.ndarray, fn, signed: bool) -> np.ndarray:
    """Apply fn to the two 16-bit halves (element 0 = low half) of .u16x2/.s16x2 operands."""
    out = np.zeros(32, np.uint32)
    au, bu = a.astype(np.uint32), b.astype(np.uint32)
    for sh in (0, 16):
        x = ((au >> np.uint32(sh)) & np.uint32(0xFFFF)).astype(np.uint16)
        y = ((bu >> np.uint32(sh)) & np.uint32(0xFFFF)).astype(np.uint16)
        if signed:
            x, y = x.view(np.int16), y.view(np.int16)
        r = fn(x.astype(np.int64), y.astype(np.int64))
        out |= ((r & 0xFFFF).astype(np.uint32) << np.uint32(sh))
    return out


# ============================================================================================ add / sub
@semantics("add:int", "sub:int")
def decode_add_sub(ins, info):
    """PTX ISA 9.1 §9.7.1.1 add, §9.7.1.2 sub (``.sat`` for .s32; packed ``add.{u16x2,s16x2}``),
    §9.7.2.1 add.cc, §9.7.2.3 sub.cc (carry-out to CC.CF)."""
    form = parse_integer(ins, info)
    t, cc, sat = form.type, form.cc, form.sat
    d, (a, b) = form.dst, form.srcs
    n = _nbits(t)
    sub = ins.opcode == "sub"

    if t in ("u16x2", "s16x2"):
        def run(ctx):
            r = _packed16(ctx.read(a, "b32"), ctx.read(b, "b32"), lambda x, y: x + y, t[0] == "s")
            ctx.write(d, "b32", r)
        return run

    if cc:
        def run(ctx):
            x, y = ctx.read(a, t), ctx.read(b, t)
            if sub:
                s, c = _add_with_carry(x, _not_bits(y, n), np.ones(32, bool), n)
            else:
                s, c = _add_with_carry(x, y, np.zeros(32, bool), n)
            ctx.write(d, t, _wrap(s, t))
            _set_carry(ctx, c)
        return run

    if n == 64:
        def run(ctx):
            x, y = _u64(ctx.read(a, t)), _u64(ctx.read(b, t))
            ctx.write(d, t, _wrap(x - y if sub else x + y, t))
        return run

    def run(ctx):
        x, y = _i64(ctx.read(a, t), t), _i64(ctx.read(b, t), t)
        r = x - y if sub else x + y
        if sat:
            r = _sat32(r)
        ctx.write(d, t, _wrap(r, t))
    return run


def _not_bits(x: np.ndarray, n: int) -> np.ndarray:
    return (~_u64(x)) & np.uint64((1 << n) - 1)


@semantics("addc", "subc")
def decode_addc_subc(ins, info):
    """PTX ISA 9.1 §9.7.2.2 addc, §9.7.2.4 subc: add/subtract with carry-in from CC.CF (``.cc``: carry-out).
    subc computes ``a + ~b + CF`` (CF = "no borrow", see the module docstring)."""
    form = parse_integer(ins, info)
    t, cc = form.type, form.cc
    d, (a, b) = form.dst, form.srcs
    n = _nbits(t)
    sub = ins.opcode == "subc"

    def run(ctx):
        x, y = ctx.read(a, t), ctx.read(b, t)
        cin = _carry_flag(ctx).copy()
        if sub:
            y = _not_bits(y, n)
        s, c = _add_with_carry(x, y, cin, n)
        ctx.write(d, t, _wrap(s, t))
        if cc:
            _set_carry(ctx, c)
    return run


# ============================================================================================ mul / mad
def _product(x: np.ndarray, y: np.ndarray, t: str, mode: str):
    """a*b per mode: 'lo' -> n-bit, 'hi' -> upper n bits, 'wide' -> 2n-bit; returns ints for _wrap."""
    n = _nbits(t)
    s = _signed(t)
    if n <= 16 or (n == 32 and mode != "hi") or (n == 32 and s):
        p = x.astype(np.int64) * y.astype(np.int64)
        if mode == "hi":
            return p >> n
        return p
    if n == 32:   # u32 hi: product < 2**64 fits uint64
        p = x.astype(np.uint64) * y.astype(np.uint64)
        return (p >> np.uint64(32)).astype(np.int64)
    # 64-bit
    if mode == "lo":
        return _u64(x) * _u64(y)
    xs, ys = to_pyints(x, s), to_pyints(y, s)
    return [(p * q) >> 64 for p, q in zip(xs, ys)]


@semantics("mul:int")
def decode_mul(ins, info):
    """PTX ISA 9.1 §9.7.1.3 mul (integer): ``.lo`` / ``.hi`` / ``.wide`` (16- and 32-bit types only)."""
    form = parse_integer(ins, info)
    t, dt, mode = form.type, form.dtype, form.mode
    d, (a, b) = form.dst, form.srcs

    def run(ctx):
        ctx.write(d, dt, _wrap(_product(ctx.read(a, t), ctx.read(b, t), t, mode), dt))
    return run


@semantics("mad:int")
def decode_mad(ins, info):
    """PTX ISA 9.1 §9.7.1.4 mad (integer; ``mad.hi.sat.s32``), §9.7.2.5 mad.cc and §9.7.2.6 madc
    (carry-in/carry-out through CC.CF; 32/64-bit types, .lo/.hi)."""
    return _decode_mad(ins, info)


@semantics("madc")
def decode_madc(ins, info):
    """PTX ISA 9.1 §9.7.2.6 madc: ``d = (a*b).{lo,hi} + c + CC.CF``, ``.cc`` writes the carry-out."""
    return _decode_mad(ins, info)


def _decode_mad(ins, info):
    form = parse_integer(ins, info)
    t, dt, mode, cc, sat, carry_in = form.type, form.dtype, form.mode, form.cc, form.sat, form.carry_in
    d, (a, b, c) = form.dst, form.srcs
    n = _nbits(dt)

    def run(ctx):
        p = _product(ctx.read(a, t), ctx.read(b, t), t, mode)
        pbits = _wrap(p, dt)
        cv = ctx.read(c, dt)
        if cc or carry_in:
            cin = _carry_flag(ctx).copy() if carry_in else np.zeros(32, bool)
            s, co = _add_with_carry(pbits, cv, cin, n)
            ctx.write(d, dt, _wrap(s, dt))
            if cc:
                _set_carry(ctx, co)
            return
        if sat:
            r = _sat32(np.asarray(p, dtype=np.int64) + cv.astype(np.int64))
            ctx.write(d, dt, _wrap(r, dt))
            return
        if n == 64:
            ctx.write(d, dt, _wrap(_u64(pbits) + _u64(cv), dt))
        else:
            ctx.write(d, dt, _wrap(pbits.astype(np.int64) + cv.astype(np.int64), dt))
    return run


def _mul24(x: np.ndarray, y: np.ndarray, t: str, hi: bool) -> np.ndarray:
    """24x24-bit product (operands' low 24 bits, sign-extended for .s32) -> bits 31..0 or 47..16."""
    xu, yu = x.astype(np.uint32).astype(np.int64) & 0xFFFFFF, y.astype(np.uint32).astype(np.int64) & 0xFFFFFF
    if t == "s32":
        xu = np.where(xu & 0x800000, xu - (1 << 24), xu)
        yu = np.where(yu & 0x800000, yu - (1 << 24), yu)
    p = xu * yu
    return (p >> 16) if hi else p


@semantics("mul24")
def decode_mul24(ins, info):
    """PTX ISA 9.1 §9.7.1.5 mul24: 24x24-bit multiply, ``.lo`` = bits 31..0, ``.hi`` = bits 47..16."""
    form = parse_integer(ins, info)
    t, mode = form.type, form.mode
    d, (a, b) = form.dst, form.srcs

    def run(ctx):
        ctx.write(d, t, _wrap(_mul24(ctx.read(a, t), ctx.read(b, t), t, mode == "hi"), t))
    return run


@semantics("mad24")
def decode_mad24(ins, info):
    """PTX ISA 9.1 §9.7.1.6 mad24: 24x24-bit multiply (.lo/.hi as mul24) plus c; ``mad24.hi.sat.s32``
    saturates the sum to the s32 range."""
    form = parse_integer(ins, info)
    t, mode, sat = form.type, form.mode, form.sat
    d, (a, b, c) = form.dst, form.srcs

    def run(ctx):
        p = _mul24(ctx.read(a, t), ctx.read(b, t), t, mode == "hi")
        if mode == "lo":
            p = p & 0xFFFFFFFF
        elif t == "s32":
            p = _wrap(p, "s32").astype(np.int64)
        r = p + ctx.read(c, t).astype(np.int64)
        if sat:
            r = _sat32(r)
        ctx.write(d, t, _wrap(r, t))
    return run


@semantics("sad")
def decode_sad(ins, info):
    """PTX ISA 9.1 §9.7.1.7 sad: ``d = c + |a - b|`` (sum of absolute differences)."""
    form = parse_integer(ins, info)
    t = form.type
    d, (a, b, c) = form.dst, form.srcs
    n = _nbits(t)

    def run(ctx):
        x, y, z = ctx.read(a, t), ctx.read(b, t), ctx.read(c, t)
        if n == 64:
            xu, yu = _u64(x), _u64(y)
            diff = np.where(x < y, yu - xu, xu - yu)
            ctx.write(d, t, _wrap(_u64(z) + diff, t))
        else:
            diff = np.abs(x.astype(np.int64) - y.astype(np.int64))
            ctx.write(d, t, _wrap(z.astype(np.int64) + diff, t))
    return run


# ============================================================================================ div / rem
def _divrem(x: np.ndarray, y: np.ndarray, t: str):
    """Truncating quotient and remainder as raw uint64 bits (with the GPU's division-by-zero results)."""
    n = _nbits(t)
    mask = np.uint64((1 << n) - 1) if n < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    zero = y == 0
    if not _signed(t):
        xu, yu = _u64(x), _u64(y)
        q = xu // np.where(zero, np.uint64(1), yu)
        r = xu - q * yu
        q = np.where(zero, np.uint64(DIV_BY_ZERO_BITS & 0xFFFFFFFFFFFFFFFF) & mask, q)
        r = np.where(zero, np.uint64(REM_BY_ZERO_BITS & 0xFFFFFFFFFFFFFFFF) & mask, r)
        return q, r
    neg_x, neg_y = x < 0, y < 0
    xi, yi = x.astype(np.int64), y.astype(np.int64)
    ax = np.where(neg_x, np.uint64(0) - xi.astype(np.uint64), xi.astype(np.uint64))
    ay = np.where(neg_y, np.uint64(0) - yi.astype(np.uint64), yi.astype(np.uint64))
    qm = ax // np.where(zero, np.uint64(1), ay)
    rm = ax - qm * ay
    q = np.where(neg_x != neg_y, np.uint64(0) - qm, qm)
    r = np.where(neg_x, np.uint64(0) - rm, rm)
    q = np.where(zero, np.uint64(DIV_BY_ZERO_BITS & 0xFFFFFFFFFFFFFFFF), q)
    r = np.where(zero, np.uint64(REM_BY_ZERO_BITS & 0xFFFFFFFFFFFFFFFF), r)
    return q & mask, r & mask


@semantics("div:int")
@semantics("rem")
def decode_div_rem(ins, info):
    """PTX ISA 9.1 §9.7.1.8 div (integer, truncating toward zero), §9.7.1.9 rem (sign of the dividend).
    Division by zero: see the module docstring (the GPU's results)."""
    form = parse_integer(ins, info)
    t = form.type
    d, (a, b) = form.dst, form.srcs
    want_rem = ins.opcode == "rem"

    def run(ctx):
        q, r = _divrem(ctx.read(a, t), ctx.read(b, t), t)
        ctx.write(d, t, _wrap(r if want_rem else q, t))
    return run


# ============================================================================================ abs / neg / min / max
@semantics("abs:int", "neg:int")
def decode_abs_neg(ins, info):
    """PTX ISA 9.1 §9.7.1.10 abs, §9.7.1.11 neg (signed integers; INT_MIN maps to itself)."""
    form = parse_integer(ins, info)
    t = form.type
    d, (a,) = form.dst, form.srcs
    is_abs = ins.opcode == "abs"

    def run(ctx):
        x = _u64(ctx.read(a, t))
        neg = np.uint64(0) - x
        if is_abs:
            r = np.where(ctx.read(a, t) < 0, neg, x)
        else:
            r = neg
        ctx.write(d, t, _wrap(r, t))
    return run


@semantics("min:int", "max:int")
def decode_min_max(ins, info):
    """PTX ISA 9.1 §9.7.1.12 min, §9.7.1.13 max (integer; packed .u16x2/.s16x2 and ``.relu`` for
    .s32/.s16x2: negative results become 0)."""
    form = parse_integer(ins, info)
    t, relu = form.type, form.relu
    d, (a, b) = form.dst, form.srcs
    f = np.minimum if ins.opcode == "min" else np.maximum

    if t in ("u16x2", "s16x2"):
        def fn(x, y):
            r = f(x, y)
            return np.maximum(r, 0) if relu else r

        def run(ctx):
            ctx.write(d, "b32", _packed16(ctx.read(a, "b32"), ctx.read(b, "b32"), fn, t[0] == "s"))
        return run

    def run(ctx):
        r = f(ctx.read(a, t), ctx.read(b, t))
        if relu:
            r = np.maximum(r, 0).astype(r.dtype)
        ctx.write(d, t, r)
    return run


# ============================================================================================ bit ops
def _popc64(u: np.ndarray) -> np.ndarray:
    return np.bitwise_count(u.astype(np.uint64)).astype(np.uint32)


def _msb_index(u: np.ndarray) -> np.ndarray:
    """Index of the most significant set bit of uint64 values, -1 for 0 (binary search on the bits)."""
    x = u.astype(np.uint64)
    r = np.zeros(x.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        hi = x >> np.uint64(s)
        m = hi != 0
        r += np.where(m, s, 0)
        x = np.where(m, hi, x)
    return np.where(u == 0, -1, r)


@semantics("popc")
def decode_popc(ins, info):
    """PTX ISA 9.1 §9.7.1.14 popc: population count of a .b32/.b64 value; d is .u32."""
    form = parse_integer(ins, info)
    t = form.type
    d, (a,) = form.dst, form.srcs

    def run(ctx):
        ctx.write(d, "u32", _popc64(_u64(ctx.read(a, t))))
    return run


@semantics("clz")
def decode_clz(ins, info):
    """PTX ISA 9.1 §9.7.1.15 clz: count leading zeros of a .b32/.b64 value (32/64 for zero); d is .u32."""
    form = parse_integer(ins, info)
    t = form.type
    d, (a,) = form.dst, form.srcs
    n = _nbits(t)

    def run(ctx):
        idx = _msb_index(_u64(ctx.read(a, t)))
        ctx.write(d, "u32", (n - 1 - idx).astype(np.uint32))
    return run


@semantics("bfind")
def decode_bfind(ins, info):
    """PTX ISA 9.1 §9.7.1.16 bfind: position of the most significant non-sign bit (0xFFFFFFFF if none);
    ``.shiftamt`` returns the left shift that moves it to the msb instead."""
    form = parse_integer(ins, info)
    t, shiftamt = form.type, form.shiftamt
    d, (a,) = form.dst, form.srcs
    n = _nbits(t)
    mask = np.uint64((1 << n) - 1) if n < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)

    def run(ctx):
        x = ctx.read(a, t)
        u = _u64(x)
        if _signed(t):
            u = np.where(x < 0, ~u & mask, u)
        idx = _msb_index(u)
        if shiftamt:
            idx = np.where(idx >= 0, n - 1 - idx, -1)
        ctx.write(d, "u32", (idx & 0xFFFFFFFF).astype(np.uint32))
    return run


@semantics("fns")
def decode_fns(ins, info):
    """PTX ISA 9.1 §9.7.1.17 fns: position of the n-th set bit of mask counting from base (offset > 0
    upward, < 0 downward, 0: base itself if set); 0xFFFFFFFF if not found."""
    form = parse_integer(ins, info)
    d, (mask, base, off) = form.dst, form.srcs

    def run(ctx):
        mk = ctx.read(mask, "b32").astype(np.int64)
        bs = ctx.read(base, "b32").astype(np.int64)
        of = ctx.read(off, "s32").astype(np.int64)
        out = np.full(32, 0xFFFFFFFF, dtype=np.uint32)
        for lane in np.nonzero(ctx.mask)[0]:
            out[lane] = _fns_one(int(mk[lane]), int(bs[lane]), int(of[lane]))
        ctx.write(d, "b32", out)
    return run


#: fns with offset INT_MIN (|offset| not representable): the H100 returns 0 whatever the mask and base
#: (calib/probes group fns_shift_reg: register and immediate offsets, bases 0..31, >= 32 and 0xFFFFFFFF)
FNS_INT_MIN_OFFSET = -(1 << 31)


def _fns_one(mask: int, base: int, offset: int) -> int:
    if offset == FNS_INT_MIN_OFFSET:
        return 0
    if base > 31:
        # PTX: behaviour undefined for base > 31; the search simply starts outside the word
        return 0xFFFFFFFF
    if offset == 0:
        return base if (mask >> base) & 1 else 0xFFFFFFFF
    pos, count, inc = base, abs(offset) - 1, (1 if offset > 0 else -1)
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return 0xFFFFFFFF


@semantics("brev")
def decode_brev(ins, info):
    """PTX ISA 9.1 §9.7.1.18 brev: bit reverse of a .b32/.b64 value."""
    form = parse_integer(ins, info)
    t = form.type
    d, (a,) = form.dst, form.srcs
    n = _nbits(t)

    def run(ctx):
        u = _u64(ctx.read(a, t))
        r = np.zeros(32, np.uint64)
        for i in range(n):
            r |= ((u >> np.uint64(i)) & np.uint64(1)) << np.uint64(n - 1 - i)
        ctx.write(d, t, _wrap(r, t))
    return run


@semantics("bfe")
def decode_bfe(ins, info):
    """PTX ISA 9.1 §9.7.1.19 bfe: extract ``len = c & 0xff`` bits from position ``b & 0xff``, zero- or
    sign-extended (the sign is the field's top bit inside the word).

    Measured on the H100 (ptxas 13.0; ``calib/probes`` groups bitfield_reg/bitfield_imm): the 32-bit forms reduce
    position and length modulo 256 as the ISA says, but the 64-bit forms use the whole .u32 operands (a value
    >= 64 acts as 64); ``bfe.s32`` with an *immediate* position >= 32 and an immediate non-zero length gives
    0xFFFFFFFF whatever a (ptxas folds it so; with either operand in a register the ISA's a[31] fill holds)."""
    form = parse_integer(ins, info)
    t = form.type
    d, (a, b, c) = form.dst, form.srcs
    n = _nbits(t)
    msb = n - 1
    lim = np.uint32(0xFF) if n == 32 else np.uint32(0xFFFFFFFF)
    ones_imm = (t == "s32" and isinstance(b, ir.Imm) and isinstance(c, ir.Imm)
                and (int(b.value) & 0xFF) >= 32 and int(c.value) & 0xFF)

    def run(ctx):
        u = _u64(ctx.read(a, t))
        pos = (ctx.read(b, "u32") & lim).astype(np.int64)
        ln = (ctx.read(c, "u32") & lim).astype(np.int64)
        if ones_imm:
            ctx.write(d, t, _wrap(np.full(32, 0xFFFFFFFF, np.uint64), t))
            return
        if _signed(t):
            top = np.minimum(pos + ln - 1, msb)
            sbit = ((u >> np.clip(top, 0, 63).astype(np.uint64)) & np.uint64(1)).astype(bool) & (ln != 0)
        else:
            sbit = np.zeros(32, bool)
        # bits i < min(len, msb+1-pos) come from a[pos+i], the rest are sbit
        take = np.clip(np.minimum(ln, msb + 1 - pos), 0, n)
        shifted = np.where(pos <= msb, u >> np.clip(pos, 0, 63).astype(np.uint64), np.uint64(0))
        fmask = np.where(take >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                         (np.uint64(1) << np.clip(take, 0, 63).astype(np.uint64)) - np.uint64(1))
        full = np.uint64((1 << n) - 1) if n < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
        r = (shifted & fmask) | np.where(sbit, full & ~fmask, np.uint64(0))
        ctx.write(d, t, _wrap(r, t))
    return run


@semantics("bfi")
def decode_bfi(ins, info):
    """PTX ISA 9.1 §9.7.1.20 bfi: insert the low ``len = d & 0xff`` bits of a into b at position
    ``c & 0xff`` (bits beyond the msb are dropped).  As for bfe, ``bfi.b64`` on the H100 uses the whole .u32
    position and length (no reduction modulo 256).

    ``bfi.b32`` with an immediate position that is not a multiple of 8 and an immediate length: ptxas emits a
    bit-mask instruction that takes the length modulo 32, so a field running past bit 31 with a length >= 32
    inserts ``len % 32`` bits (length 32 inserts nothing).  Byte-aligned positions, register operands and every
    ``bfi.b64`` follow the ISA.  Measured on the H100 for every position 0..31 and 21 lengths (``calib/probes``
    group bfi_imm_sweep)."""
    form = parse_integer(ins, info)
    t = form.type
    f, (a, b, c, dl) = form.dst, form.srcs
    n = _nbits(t)
    lim = np.uint32(0xFF) if n == 32 else np.uint32(0xFFFFFFFF)
    if n == 32 and isinstance(c, ir.Imm) and isinstance(dl, ir.Imm) and (int(c.value) & 0xFF) % 8 \
            and (int(c.value) & 0xFF) < 32:
        p_imm, l_imm = int(c.value) & 0xFF, int(dl.value) & 0xFF
        bmsk = np.uint64((((1 << (l_imm % 32)) - 1) << p_imm) & 0xFFFFFFFF)

        def run_bmsk(ctx):
            au, bu = _u64(ctx.read(a, t)), _u64(ctx.read(b, t))
            ctx.write(f, t, _wrap((bu & ~bmsk) | ((au << np.uint64(p_imm)) & bmsk), t))
        return run_bmsk

    def run(ctx):
        au, bu = _u64(ctx.read(a, t)), _u64(ctx.read(b, t))
        pos = (ctx.read(c, "u32") & lim).astype(np.int64)
        ln = (ctx.read(dl, "u32") & lim).astype(np.int64)
        take = np.clip(np.minimum(ln, n - pos), 0, n)
        fmask = np.where(take >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                         (np.uint64(1) << np.clip(take, 0, 63).astype(np.uint64)) - np.uint64(1))
        sh = np.clip(pos, 0, 63).astype(np.uint64)
        ok = pos < n
        ins_mask = np.where(ok, fmask << sh, np.uint64(0))
        r = (bu & ~ins_mask) | ((au << sh) & ins_mask)
        ctx.write(f, t, _wrap(r, t))
    return run


@semantics("szext")
def decode_szext(ins, info):
    """PTX ISA 9.1 §9.7.1.21 szext: sign- (.s32) or zero- (.u32) extend the low N = b bits of a
    (``.clamp``: N >= 32 keeps a; ``.wrap``: N taken mod 32); N = 0 gives 0."""
    form = parse_integer(ins, info)
    t, mode = form.type, form.mode
    d, (a, b) = form.dst, form.srcs

    def run(ctx):
        x = ctx.read(a, t).astype(np.uint32).astype(np.int64)
        bv = ctx.read(b, "u32").astype(np.int64)
        b1 = bv & 0x1F
        too_large = (bv >= 32) & (mode == "clamp")
        msk = np.where(too_large, 0, (0xFFFFFFFF << b1) & 0xFFFFFFFF)
        sign_pos = (b1 - 1) & 0x1F
        if t == "s32":
            sbit = ((x >> sign_pos) & 1).astype(bool) & (b1 != 0) & ~too_large
        else:
            sbit = np.zeros(32, bool)
        r = (x & ~msk & 0xFFFFFFFF) | np.where(sbit, msk, 0)
        ctx.write(d, t, _wrap(r, t))
    return run


@semantics("bmsk")
def decode_bmsk(ins, info):
    """PTX ISA 9.1 §9.7.1.22 bmsk: mask of b bits starting at bit a (``.clamp`` / ``.wrap`` for values
    of 32 and more)."""
    form = parse_integer(ins, info)
    mode = form.mode
    d, (a, b) = form.dst, form.srcs

    def run(ctx):
        av = ctx.read(a, "b32").astype(np.int64)
        bv = ctx.read(b, "b32").astype(np.int64)
        a1, b1 = av & 0x1F, bv & 0x1F
        mask0 = (0xFFFFFFFF << a1) & 0xFFFFFFFF
        s = a1 + b1
        mask1 = np.where(s >= 32, 0, (0xFFFFFFFF << np.minimum(s, 31)) & 0xFFFFFFFF)
        over = s >= 32
        if mode == "clamp":
            mask0 = np.where(av >= 32, 0, mask0)
            over = over | (av >= 32) | (bv >= 32)
        mask1 = np.where(over, 0, np.where(b1 == 0, 0xFFFFFFFF, mask1))
        ctx.write(d, "b32", (mask0 & ~mask1 & 0xFFFFFFFF).astype(np.uint32))
    return run


# ============================================================================================ dot products
def _bytes(x: np.ndarray, signed: bool, count: int, width: int) -> list:
    u = x.astype(np.uint32).astype(np.int64)
    out = []
    for i in range(count):
        v = (u >> (width * i)) & ((1 << width) - 1)
        if signed:
            v = np.where(v >= (1 << (width - 1)), v - (1 << width), v)
        out.append(v)
    return out


@semantics("dp4a")
def decode_dp4a(ins, info):
    """PTX ISA 9.1 §9.7.1.23 dp4a: four-way 8-bit dot product accumulated into 32 bits."""
    form = parse_integer(ins, info)
    at, bt, ct = form.type, form.btype, form.dtype
    d, (a, b, c) = form.dst, form.srcs

    def run(ctx):
        va = _bytes(ctx.read(a, at), at == "s32", 4, 8)
        vb = _bytes(ctx.read(b, bt), bt == "s32", 4, 8)
        acc = ctx.read(c, ct).astype(np.int64)
        for x, y in zip(va, vb):
            acc = acc + x * y
        ctx.write(d, ct, _wrap(acc, ct))
    return run


@semantics("dp2a")
def decode_dp2a(ins, info):
    """PTX ISA 9.1 §9.7.1.24 dp2a: two 16-bit halves of a times bytes 0,1 (``.lo``) or 2,3 (``.hi``) of b,
    accumulated into 32 bits."""
    form = parse_integer(ins, info)
    at, bt, ct, mode = form.type, form.btype, form.dtype, form.mode
    d, (a, b, c) = form.dst, form.srcs
    sel = 0 if mode == "lo" else 2

    def run(ctx):
        va = _bytes(ctx.read(a, at), at == "s32", 2, 16)
        vb = _bytes(ctx.read(b, bt), bt == "s32", 4, 8)
        acc = ctx.read(c, ct).astype(np.int64)
        for i in range(2):
            acc = acc + va[i] * vb[sel + i]
        ctx.write(d, ct, _wrap(acc, ct))
    return run
