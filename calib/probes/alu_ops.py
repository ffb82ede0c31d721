"""The scalar-instruction probe: which PTX ALU/conversion forms are measured, on which operand values.

A *group* is one kernel: every thread loads its own operands (up to four source registers, each from its own
input array) and executes every *op* of the group once, each into a fresh destination register, then stores
each result into its own 8-byte slot of the output row ``OUT[thread, op]`` (narrow results occupy the low bytes;
the rest of the slot keeps the fill pattern).  The same PTX runs on the GPU (:mod:`calib.probes.alu_probe`) and on
the simulator (``tests/hw/test_alu_probe_golden.py``), so each op column is a bit-for-bit comparison of one
instruction form over every operand vector.

The groups aim at the places where the PTX ISA's pseudo-code, the IEEE rules and the H100 can disagree
(found by the differential fuzzer, ``tests/fuzz_regressions``): NaN operand selection of f64 arithmetic
(including operand order and the same register twice), bit-field extract/insert with out-of-range positions
and lengths (register and immediate operands), ``fns``, shifts by out-of-range register and immediate
amounts, float-to-float ``cvt`` in every legal modifier combination over special values, directed-rounding
division/reciprocal/square root, and ``setp`` with p and q the same register.

Everything here is deterministic (seeded numpy); ``GROUPS`` maps a group name to its :class:`Group`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SEED = 20261123


@dataclass(frozen=True)
class Op:
    """One instruction: ``text`` uses ``{d}`` for the destination and ``{a} {b} {c} {e}`` for the sources;
    ``dst`` is the destination register class (b16/b32/b64, or pred: stored as 0/1 in a b32)."""

    text: str
    dst: str
    compiled_as: str | None = None   # the instruction ptxas really emits when it miscompiles ``text`` (isa/lint.py)

    @property
    def label(self) -> str:
        return self.text


@dataclass
class Group:
    """One probe kernel: ``inputs`` maps each source operand name (the ``{x}`` of the op texts) to its uint
    array (uint16 -> .b16 register, uint32 -> .b32, uint64 -> .b64), all of the same length (one per thread)."""

    name: str
    ops: list
    inputs: dict
    note: str = ""
    decl: dict = None                # input name -> declared register type (default: its bit-size class)

    @property
    def n(self) -> int:
        return int(next(iter(self.inputs.values())).shape[0])

    def src_class(self, name: str) -> str:
        return {2: "b16", 4: "b32", 8: "b64"}[self.inputs[name].dtype.itemsize]

    def src_decl(self, name: str) -> str:
        return (self.decl or {}).get(name) or self.src_class(name)


# ----------------------------------------------------------------------------------------------- values

def _rng(tag: int) -> np.random.Generator:
    return np.random.default_rng([SEED, tag])


def f64_specials(rng, n):
    """f64 bit patterns: NaNs (quiet/signalling, both signs, random payloads), infinities, zeros, subnormals,
    extremes and ordinary values."""
    kinds = rng.integers(0, 10, n)
    sign = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(63)
    pay = rng.integers(1, 1 << 51, n, dtype=np.uint64)
    qnan = np.uint64(0x7FF8000000000000) | pay
    snan = np.uint64(0x7FF0000000000000) | pay
    normal = rng.standard_normal(n).view(np.uint64) & np.uint64(0x7FFFFFFFFFFFFFFF)
    sub = rng.integers(1, 1 << 52, n, dtype=np.uint64)
    big = np.uint64(0x7FEFFFFFFFFFFFFF) - rng.integers(0, 1 << 20, n, dtype=np.uint64)
    table = [qnan, qnan, snan, qnan | np.uint64(0x0007FFFFFFFFFFFF), np.full(n, 0x7FF0000000000000, np.uint64),
             np.zeros(n, np.uint64), normal, sub, big, snan]
    out = np.choose(kinds, table)
    return (out | sign).astype(np.uint64)


def f32_specials(rng, n):
    kinds = rng.integers(0, 8, n)
    sign = rng.integers(0, 2, n).astype(np.uint32) << np.uint32(31)
    pay = rng.integers(1, 1 << 22, n).astype(np.uint32)
    table = [np.uint32(0x7FC00000) | pay, np.uint32(0x7F800000) | pay, np.full(n, 0x7F800000, np.uint32),
             np.zeros(n, np.uint32), rng.standard_normal(n).astype(np.float32).view(np.uint32) & np.uint32(0x7FFFFFFF),
             rng.integers(1, 1 << 23, n).astype(np.uint32), np.full(n, 0x7F7FFFFF, np.uint32),
             np.uint32(0x7FC00000) | pay]
    return (np.choose(kinds, table) | sign).astype(np.uint32)


def f16_specials(rng, n, bf16=False):
    e_all = 0x7F80 if bf16 else 0x7C00
    man = 0x7F if bf16 else 0x3FF
    kinds = rng.integers(0, 7, n)
    sign = (rng.integers(0, 2, n) << 15).astype(np.uint16)
    pay = rng.integers(1, man + 1, n).astype(np.uint16)
    table = [np.uint16(e_all) | pay, np.full(n, e_all, np.uint16), np.zeros(n, np.uint16),
             rng.integers(1, man + 1, n).astype(np.uint16), rng.integers(0, 0x7FFF, n).astype(np.uint16),
             np.uint16(e_all) | np.uint16((man + 1) >> 1) | pay, rng.integers(0, 1 << 15, n).astype(np.uint16)]
    return (np.choose(kinds, table) | sign).astype(np.uint16)


def _f32_cvt_inputs(rng, n):
    """f32 inputs for conversions: specials plus values at the f16/bf16/tf32 boundaries and rounding points."""
    base = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001,
            0x7FFFFFFF, 0xFFFFFFFF, 0x7FA00000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000,
            0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x477FE000, 0x477FF000, 0x477FEFFF, 0x47800000, 0xC77FF000,
            0x33800000, 0x33000000, 0x33000001, 0xB3000001, 0x387FC000, 0x38800000, 0x387FE000, 0x3F801000,
            0x3F800800, 0x3F801800, 0x3F800FFF, 0x7F7FF000, 0x7F7F8000, 0x7F7FC000, 0x00008000, 0x00400000]
    n_rand = n - len(base)
    kinds = rng.integers(0, 6, n_rand)
    e = rng.integers(0, 256, n_rand).astype(np.uint32)
    m = rng.integers(0, 1 << 23, n_rand).astype(np.uint32)
    s = (rng.integers(0, 2, n_rand).astype(np.uint32) << np.uint32(31))
    near16 = (rng.integers(100, 146, n_rand).astype(np.uint32) << np.uint32(23))
    low = m & np.uint32(0x3FFF) | np.uint32(0x1000) * (m & np.uint32(1))
    table = [e << np.uint32(23) | m, near16 | m, rng.integers(0, 1 << 23, n_rand).astype(np.uint32),
             (rng.integers(95, 115, n_rand).astype(np.uint32) << np.uint32(23)) | m,
             np.uint32(0x7F800000) | m | np.uint32(1), near16 | (m & np.uint32(0x7FE000)) | (low & np.uint32(0x1FFF))]
    r = (np.choose(kinds, table) | s).astype(np.uint32)
    return np.concatenate([np.array(base, np.uint32), r])


def _f64_cvt_inputs(rng, n):
    base = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000001,
            0x7FF0000000000001, 0xFFF4000000000000, 0x380FFFFFFFFFFFFF, 0x3810000000000000, 0xB80FFFFFFFFFFFFF,
            0x380FFFFFE0000000, 0x380FFFFFF0000000, 0x36A0000000000000, 0x3690000000000000, 0x3690000000000001,
            0x47EFFFFFE0000000, 0x47EFFFFFF0000000, 0x47EFFFFFEFFFFFFF, 0x47F0000000000000, 0x7FEFFFFFFFFFFFFF,
            0x0000000000000001, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x40F0000000000000, 0x40EFFE0000000000,
            0x40EFFF0000000000, 0x3E70000000000000, 0x3E60000000000000, 0x3F10000000000000, 0x3EF0000000000000]
    n_rand = n - len(base)
    kinds = rng.integers(0, 5, n_rand)
    m = rng.integers(0, 1 << 52, n_rand, dtype=np.uint64)
    s = rng.integers(0, 2, n_rand).astype(np.uint64) << np.uint64(63)
    table = [rng.integers(0, 2048, n_rand).astype(np.uint64) << np.uint64(52) | m,
             rng.integers(0x360, 0x390, n_rand).astype(np.uint64) << np.uint64(52) | m,
             rng.integers(0x3E0, 0x410, n_rand).astype(np.uint64) << np.uint64(52) | m,
             rng.integers(0x470, 0x480, n_rand).astype(np.uint64) << np.uint64(52) | m,
             np.uint64(0x7FF0000000000000) | m | np.uint64(1)]
    r = (np.choose(kinds, table) | s).astype(np.uint64)
    return np.concatenate([np.array(base, np.uint64), r])


def _f16_cvt_inputs(rng, n, bf16=False):
    base = ([0, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x7FFF, 0xFFFF, 0x0001, 0x8001, 0x007F,
             0x0080, 0x7F7F] if bf16 else
            [0, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0xFC01, 0x7FFF, 0xFFFF, 0x0001, 0x8001, 0x03FF,
             0x0400, 0x7BFF])
    r = rng.integers(0, 1 << 16, n - len(base)).astype(np.uint16)
    return np.concatenate([np.array(base, np.uint16), r])


# ----------------------------------------------------------------------------------------------- groups

def _u64(rng, n):
    return rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n).astype(np.uint64)


def _u32(rng, n):
    return rng.integers(0, 1 << 32, n).astype(np.uint32)


def _g_f64_nan() -> Group:
    n = 1024
    rng = _rng(1)
    a, b, c = f64_specials(rng, n), f64_specials(rng, n), f64_specials(rng, n)
    ops = []
    for op in ("add", "sub", "mul"):
        for rnd in ("", ".rn", ".rz"):
            ops += [Op(f"{op}{rnd}.f64 {{d}}, {{a}}, {{b}};", "b64"), Op(f"{op}{rnd}.f64 {{d}}, {{b}}, {{a}};", "b64")]
        ops += [Op(f"{op}.f64 {{d}}, {{a}}, {{a}};", "b64")]
    for op in ("min", "max"):
        ops += [Op(f"{op}.f64 {{d}}, {{a}}, {{b}};", "b64"), Op(f"{op}.f64 {{d}}, {{b}}, {{a}};", "b64"),
                Op(f"{op}.f64 {{d}}, {{a}}, {{a}};", "b64")]
    for perm in ("abc", "acb", "bac", "bca", "cab", "cba"):
        x, y, z = perm
        ops.append(Op(f"fma.rn.f64 {{d}}, {{{x}}}, {{{y}}}, {{{z}}};", "b64"))
    ops += [Op("fma.rz.f64 {d}, {a}, {b}, {c};", "b64"), Op("mad.rn.f64 {d}, {a}, {b}, {c};", "b64"),
            Op("fma.rn.f64 {d}, {a}, {a}, {b};", "b64"), Op("fma.rn.f64 {d}, {a}, {b}, {a};", "b64"),
            Op("div.rn.f64 {d}, {a}, {b};", "b64"), Op("div.rn.f64 {d}, {b}, {a};", "b64"),
            Op("div.rz.f64 {d}, {a}, {b};", "b64"), Op("sqrt.rn.f64 {d}, {a};", "b64"),
            Op("rcp.rn.f64 {d}, {a};", "b64"), Op("neg.f64 {d}, {a};", "b64"), Op("abs.f64 {d}, {a};", "b64"),
            Op("add.f64 {d}, {a}, 0d3FF0000000000000;", "b64"), Op("sub.f64 {d}, 0d3FF0000000000000, {a};", "b64"),
            Op("mul.f64 {d}, {a}, 0dC000000000000000;", "b64"),
            Op("fma.rn.f64 {d}, {a}, {b}, 0d0000000000000000;", "b64"),
            Op("copysign.f64 {d}, {a}, {b};", "b64"), Op("testp.notanumber.f64 {d}, {a};", "pred")]
    return Group("f64_nan", ops, {"a": a, "b": b, "c": c},
                 "f64 NaN operand selection: operand order, the same register twice, immediates, rounding modes")


def _g_small_float_nan() -> Group:
    n = 1024
    rng = _rng(2)
    ins = {"a": f32_specials(rng, n), "b": f32_specials(rng, n), "c": f32_specials(rng, n),
           "h": f16_specials(rng, n), "i": f16_specials(rng, n),
           "g": f16_specials(rng, n, bf16=True), "k": f16_specials(rng, n, bf16=True)}
    ops = []
    for op in ("add", "sub", "mul", "min", "max"):
        ops += [Op(f"{op}.f32 {{d}}, {{a}}, {{b}};", "b32"), Op(f"{op}.f32 {{d}}, {{a}}, {{a}};", "b32")]
    ops += [Op("min.NaN.f32 {d}, {a}, {b};", "b32"), Op("max.NaN.f32 {d}, {a}, {a};", "b32"),
            Op("min.ftz.f32 {d}, {a}, {a};", "b32"), Op("max.xorsign.abs.f32 {d}, {a}, {a};", "b32"),
            Op("fma.rn.f32 {d}, {a}, {b}, {c};", "b32"), Op("fma.rn.f32 {d}, {a}, {a}, {a};", "b32"),
            Op("min.f16 {d}, {h}, {h};", "b16"), Op("max.f16 {d}, {h}, {h};", "b16"), Op("min.f16 {d}, {h}, {i};", "b16"),
            Op("min.NaN.f16 {d}, {h}, {h};", "b16"), Op("add.f16 {d}, {h}, {h};", "b16"),
            Op("min.bf16 {d}, {g}, {g};", "b16"), Op("max.bf16 {d}, {g}, {g};", "b16"),
            Op("max.bf16 {d}, {g}, {k};", "b16"), Op("max.NaN.bf16 {d}, {g}, {g};", "b16")]
    return Group("small_float_nan", ops, ins, "f32/f16/bf16 NaN results, incl. min/max/add of one register with itself")


_BF_SPECIAL = [0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 0x7FFF, 0x8000,
               0xFFFF, 0x10000, 0x10020, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFE0, 0x3745370B]


def _posvals(rng, n):
    kinds = rng.integers(0, 4, n)
    table = [rng.integers(0, 72, n), rng.integers(0, 72, n),
             np.array(_BF_SPECIAL, np.int64)[rng.integers(0, len(_BF_SPECIAL), n)], rng.integers(0, 1 << 32, n)]
    return np.choose(kinds, table).astype(np.uint32)


def _g_bitfield_reg() -> Group:
    n = 2048
    rng = _rng(3)
    ins = {"a": _u64(rng, n), "A": _u32(rng, n), "f": _u64(rng, n), "F": _u32(rng, n),
           "b": _posvals(rng, n), "c": _posvals(rng, n)}
    ops = [Op("bfe.u32 {d}, {A}, {b}, {c};", "b32"), Op("bfe.s32 {d}, {A}, {b}, {c};", "b32"),
           Op("bfe.u64 {d}, {a}, {b}, {c};", "b64"), Op("bfe.s64 {d}, {a}, {b}, {c};", "b64"),
           Op("bfi.b32 {d}, {F}, {A}, {b}, {c};", "b32"), Op("bfi.b64 {d}, {f}, {a}, {b}, {c};", "b64")]
    for p in (0, 5, 33, 64, 129, 255):
        ops += [Op(f"bfe.s32 {{d}}, {{A}}, {p}, {{c}};", "b32"), Op(f"bfe.u64 {{d}}, {{a}}, {{b}}, {p};", "b64"),
                Op(f"bfi.b32 {{d}}, {{F}}, {{A}}, {p}, {{c}};", "b32"),
                Op(f"bfi.b64 {{d}}, {{f}}, {{a}}, {{b}}, {p};", "b64")]
    return Group("bitfield_reg", ops, ins, "bfe/bfi with register positions/lengths far out of range (and mixed)")


def _g_bitfield_imm() -> Group:
    n = 128
    rng = _rng(8)
    ins = {"a": _u64(rng, n), "A": _u32(rng, n), "f": _u64(rng, n), "F": _u32(rng, n)}
    imms = [0, 1, 8, 31, 32, 33, 63, 64, 65, 127, 128, 200, 255]
    ops = []
    for p in imms:
        for q in imms:
            ops += [Op(f"bfe.s32 {{d}}, {{A}}, {p}, {q};", "b32"), Op(f"bfe.u64 {{d}}, {{a}}, {p}, {q};", "b64"),
                    Op(f"bfe.s64 {{d}}, {{a}}, {p}, {q};", "b64"), Op(f"bfi.b32 {{d}}, {{F}}, {{A}}, {p}, {q};", "b32")]
            if p in (0, 33, 64, 128, 255) and q in (0, 32, 65, 128, 255):
                ops += [Op(f"bfe.u32 {{d}}, {{A}}, {p}, {q};", "b32"),
                        Op(f"bfi.b64 {{d}}, {{f}}, {{a}}, {p}, {q};", "b64")]
    return Group("bitfield_imm", ops, ins, "bfe/bfi with immediate positions and lengths in and out of range")


def _g_bfi_imm_sweep() -> Group:
    n = 64
    rng = _rng(10)
    ins = {"a": _u64(rng, n), "A": _u32(rng, n), "f": _u64(rng, n), "F": _u32(rng, n)}
    ops = []
    for p in range(32):
        for q in (0, 1, 2, 7, 8, 15, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 96, 127, 128, 200, 255):
            ops.append(Op(f"bfi.b32 {{d}}, {{F}}, {{A}}, {p}, {q};", "b32"))
    for p in (0, 1, 2, 7, 8, 31, 32, 33, 48, 63):
        for q in (0, 1, 31, 32, 33, 63, 64, 65, 96, 127, 128, 200, 255):
            ops.append(Op(f"bfi.b64 {{d}}, {{f}}, {{a}}, {p}, {q};", "b64"))
    return Group("bfi_imm_sweep", ops, ins, "bfi with every immediate position and lengths past the word's end")


def _g_sign_ops() -> Group:
    """neg/abs of NaNs (and everything else) with the source register declared as a bit-size type or as the
    float type: ptxas may pick a bit operation or a floating-point one accordingly (fuzz finding: neg.f32 on a
    .b32 register keeps the NaN payload)."""
    n = 512
    rng = _rng(11)
    f32 = f32_specials(rng, n)
    f64 = f64_specials(rng, n)
    h = f16_specials(rng, n)
    x2 = (f16_specials(rng, n).astype(np.uint32) << np.uint32(16)) | f16_specials(rng, n)
    bx2 = (f16_specials(rng, n, bf16=True).astype(np.uint32) << np.uint32(16)) | f16_specials(rng, n, bf16=True)
    ins = {"a": f32, "af": f32.copy(), "e": f64, "ef": f64.copy(), "h": h, "hf": h.copy(),
           "g": f16_specials(rng, n, bf16=True), "x": x2, "y": bx2}
    decl = {"af": "f32", "ef": "f64", "hf": "f16"}
    ops = []
    for op in ("neg", "abs"):
        ops += [Op(f"{op}.f32 {{d}}, {{a}};", "b32"), Op(f"{op}.ftz.f32 {{d}}, {{a}};", "b32"),
                Op(f"{op}.f32 {{d}}, {{af}};", "f32"), Op(f"{op}.ftz.f32 {{d}}, {{af}};", "f32"),
                Op(f"{op}.f64 {{d}}, {{e}};", "b64"), Op(f"{op}.f64 {{d}}, {{ef}};", "f64"),
                Op(f"{op}.f16 {{d}}, {{h}};", "b16"), Op(f"{op}.ftz.f16 {{d}}, {{h}};", "b16"),
                Op(f"{op}.f16 {{d}}, {{hf}};", "f16"), Op(f"{op}.bf16 {{d}}, {{g}};", "b16"),
                Op(f"{op}.f16x2 {{d}}, {{x}};", "b32"), Op(f"{op}.bf16x2 {{d}}, {{y}};", "b32")]
    return Group("sign_ops", ops, ins, "neg/abs of every float type, bit-size vs float register declarations",
                 decl)


def _g_guarded_pred() -> Group:
    """Predicate-writing instructions under a guard predicate (fuzz finding: predicated testp).  The destination
    predicate is preset from the inputs, then ``@%pg`` / ``@!%pg`` guards the instruction."""
    n = 512
    rng = _rng(12)
    ins = {"a": f32_specials(rng, n), "b": f32_specials(rng, n), "e": f64_specials(rng, n),
           "g": rng.integers(0, 2, n).astype(np.uint32), "q": rng.integers(0, 2, n).astype(np.uint32)}
    pre = "setp.ne.u32 %pg, {g}, 0; setp.ne.u32 {d}, {q}, 0; "
    ops = []
    for neg in ("", "!"):
        for test in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
            for t, x in (("f32", "a"), ("f64", "e")):
                body = f"testp.{test}.{t} {{d}}, {{{x}}};"
                ops.append(Op(pre + f"@{neg}%pg " + body, "pred", compiled_as=pre + body))
        ops += [Op(pre + f"@{neg}%pg setp.lt.f32 {{d}}, {{a}}, {{b}};", "pred"),
                Op(pre + f"@{neg}%pg setp.eq.f64 {{d}}, {{e}}, {{e}};", "pred"),
                Op(pre + f"@{neg}%pg setp.ne.u32 {{d}}, {{a}}, {{b}};", "pred")]
    return Group("guarded_pred", ops, ins, "predicate-writing instructions (testp, setp) under a guard")


def _g_fns_shift_reg() -> Group:
    n = 2048
    rng = _rng(4)
    mk = rng.integers(0, 4, n)
    mask = np.choose(mk, [rng.integers(0, 1 << 32, n), np.full(n, 0xFFFFFFFF),
                          (rng.integers(0, 1 << 32, n) & rng.integers(0, 1 << 32, n) & rng.integers(0, 1 << 32, n)),
                          np.zeros(n, np.int64) + (1 << rng.integers(0, 32, n))]).astype(np.uint32)
    base = np.choose(rng.integers(0, 3, n), [rng.integers(0, 32, n), rng.integers(0, 40, n),
                                             np.array(_BF_SPECIAL, np.int64)[rng.integers(0, len(_BF_SPECIAL), n)]]
                     ).astype(np.uint32)
    off = np.choose(rng.integers(0, 4, n), [rng.integers(-40, 41, n), rng.integers(-2 ** 31, 2 ** 31, n),
                                            np.array([-2 ** 31, 2 ** 31 - 1, 0, 1, -1, 32, -32, 33, -33], np.int64)[
                                                rng.integers(0, 9, n)], rng.integers(-3, 4, n)]).astype(np.int64)
    ins = {"m": mask, "b": base, "o": (off & 0xFFFFFFFF).astype(np.uint32), "e": _u64(rng, n), "A": _u32(rng, n),
           "H": rng.integers(0, 1 << 16, n).astype(np.uint16), "s": _posvals(rng, n)}
    ops = [Op("fns.b32 {d}, {m}, {b}, {o};", "b32")]
    for bi in (0, 5, 31, 32, 40, 0xFFFFFFFF):
        ops.append(Op(f"fns.b32 {{d}}, {{m}}, {bi}, {{o}};", "b32"))
    for oi in (0, 1, -1, 17, -17, 32, -33, -2147483648, 2147483647):
        ops.append(Op(f"fns.b32 {{d}}, {{m}}, {{b}}, {oi};", "b32"))
    for t, reg in (("b16", "H"), ("b32", "A"), ("b64", "e")):
        ops.append(Op(f"shl.{t} {{d}}, {{{reg}}}, {{s}};", t))
    for t, reg, dst in (("u16", "H", "b16"), ("s16", "H", "b16"), ("u32", "A", "b32"), ("s32", "A", "b32"),
                        ("u64", "e", "b64"), ("s64", "e", "b64")):
        ops.append(Op(f"shr.{t} {{d}}, {{{reg}}}, {{s}};", dst))
    return Group("fns_shift_reg", ops, ins, "fns with every kind of base/offset; shifts by register amounts")


def _g_shift_imm() -> Group:
    n = 128
    rng = _rng(9)
    ins = {"e": _u64(rng, n), "A": _u32(rng, n), "H": rng.integers(0, 1 << 16, n).astype(np.uint16)}
    ops = []
    for k in (0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 0xFFFF, 0x10000, 0x10001, 0x7FFFFFFF,
              0x80000000, 0xFFFFFFFF):
        ops += [Op(f"shl.b16 {{d}}, {{H}}, {k};", "b16"), Op(f"shl.b32 {{d}}, {{A}}, {k};", "b32"),
                Op(f"shl.b64 {{d}}, {{e}}, {k};", "b64"), Op(f"shr.s16 {{d}}, {{H}}, {k};", "b16"),
                Op(f"shr.u16 {{d}}, {{H}}, {k};", "b16"), Op(f"shr.u32 {{d}}, {{A}}, {k};", "b32"),
                Op(f"shr.s32 {{d}}, {{A}}, {k};", "b32"), Op(f"shr.s64 {{d}}, {{e}}, {k};", "b64")]
    return Group("shift_imm", ops, ins, "shl/shr by immediate amounts in and out of range")


def cvt_forms():
    """Every float-to-float cvt form ptxas accepts for sm_90a (isa/cvt_forms.py): (dst, src, modifiers)."""
    from tcsim.isa.cvt_forms import ACCEPTED

    out = []
    for k in sorted(ACCEPTED["sm_90a"]):
        types, mods = k.split(":")
        dst, src = types.split(".")
        out.append((dst, src, mods))
    return out


def _g_cvt() -> Group:
    n = 1024
    rng = _rng(5)
    ins = {"a": _f32_cvt_inputs(rng, n), "b": _f64_cvt_inputs(rng, n), "c": _f16_cvt_inputs(rng, n),
           "e": _f16_cvt_inputs(rng, n, bf16=True)}
    reg = {"f32": "a", "f64": "b", "f16": "c", "bf16": "e"}
    dreg = {"f32": "b32", "f64": "b64", "f16": "b16", "bf16": "b16", "tf32": "b32"}
    ops = []
    for dst, src, mods in cvt_forms():
        m = f".{mods}" if mods else ""
        ops.append(Op(f"cvt{m}.{dst}.{src} {{d}}, {{{reg[src]}}};", dreg[dst]))
    return Group("cvt_float", ops, ins, "every float-to-float cvt form ptxas accepts, over special and boundary values")


def _g_div() -> Group:
    n = 2048
    rng = _rng(6)
    kinds = rng.integers(0, 5, n)
    m = rng.integers(0, 1 << 52, n, dtype=np.uint64)
    s = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(63)
    exp_a = np.choose(kinds, [rng.integers(1, 2047, n), rng.integers(2040, 2047, n), rng.integers(0, 8, n),
                              rng.integers(1000, 1050, n), np.full(n, 2046)])
    exp_b = np.choose(kinds, [rng.integers(1, 2047, n), rng.integers(0, 8, n), rng.integers(2040, 2047, n),
                              rng.integers(1000, 1050, n), rng.integers(1000, 1050, n)])
    a = (exp_a.astype(np.uint64) << np.uint64(52)) | m | s
    b = (exp_b.astype(np.uint64) << np.uint64(52)) | rng.integers(0, 1 << 52, n, dtype=np.uint64) \
        | (rng.integers(0, 2, n).astype(np.uint64) << np.uint64(63))
    a[:8] = [0x7FEFFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, 1, 0x000FFFFFFFFFFFFF, 0x3FF0000000000000,
             0x4008000000000000, 0x0010000000000000]
    b[:8] = [0x3FEFFFFFFFFFFFFF, 0xBFF0000000000001, 0x3FF0000000000001, 0x3FE0000000000000, 0x4000000000000000,
             0x4008000000000000, 0x3FF0000000000000, 0x4330000000000001]
    e32 = np.choose(kinds, [rng.integers(1, 255, n), rng.integers(250, 255, n), rng.integers(0, 4, n),
                            rng.integers(120, 135, n), np.full(n, 254)]).astype(np.uint32)
    f32 = np.choose(kinds, [rng.integers(1, 255, n), rng.integers(0, 4, n), rng.integers(250, 255, n),
                            rng.integers(120, 135, n), rng.integers(120, 135, n)]).astype(np.uint32)
    c = (e32 << np.uint32(23)) | _u32(rng, n) & np.uint32(0x807FFFFF)
    e = (f32 << np.uint32(23)) | _u32(rng, n) & np.uint32(0x807FFFFF)
    ops = []
    for rnd in ("rn", "rz", "rm", "rp"):
        ops += [Op(f"div.{rnd}.f64 {{d}}, {{a}}, {{b}};", "b64"), Op(f"rcp.{rnd}.f64 {{d}}, {{b}};", "b64"),
                Op(f"sqrt.{rnd}.f64 {{d}}, {{a}};", "b64"), Op(f"fma.{rnd}.f64 {{d}}, {{a}}, {{b}}, {{a}};", "b64"),
                Op(f"div.{rnd}.f32 {{d}}, {{c}}, {{e}};", "b32"), Op(f"div.{rnd}.ftz.f32 {{d}}, {{c}}, {{e}};", "b32"),
                Op(f"rcp.{rnd}.f32 {{d}}, {{e}};", "b32"), Op(f"sqrt.{rnd}.f32 {{d}}, {{c}};", "b32")]
    return Group("div_rounding", ops, {"a": a, "b": b, "c": c, "e": e},
                 "directed-rounding div/rcp/sqrt/fma near overflow, underflow and exact quotients")


def _g_setp() -> Group:
    n = 1024
    rng = _rng(7)
    a = _u64(rng, n)
    b = np.where(rng.integers(0, 4, n) == 0, a, _u64(rng, n))
    ins = {"a": a, "b": b, "A": (a & np.uint64(0xFFFFFFFF)).astype(np.uint32),
           "B": (b & np.uint64(0xFFFFFFFF)).astype(np.uint32),
           "H": (a & np.uint64(0xFFFF)).astype(np.uint16), "I": (b & np.uint64(0xFFFF)).astype(np.uint16)}
    ops = []
    for t, x, y in (("u64", "a", "b"), ("s16", "H", "I"), ("s32", "A", "B"), ("f32", "A", "B"), ("f64", "a", "b")):
        for cmp in ("lt", "gt", "eq", "ne", "ge"):
            ops.append(Op(f"setp.{cmp}.{t} {{d}}|{{d}}, {{{x}}}, {{{y}}};", "pred"))
    return Group("setp_alias", ops, ins, "setp with p and q the same predicate register")


@lru_cache(maxsize=1)
def groups() -> dict:
    """Every probe group by name (built once; deterministic)."""
    gs = [_g_f64_nan(), _g_small_float_nan(), _g_sign_ops(), _g_bitfield_reg(), _g_bitfield_imm(), _g_bfi_imm_sweep(),
          _g_guarded_pred(), _g_fns_shift_reg(),
          _g_shift_imm(), _g_cvt(), _g_div(), _g_setp()]
    return {g.name: g for g in gs}
