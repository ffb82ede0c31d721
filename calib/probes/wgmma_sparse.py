"""Sparse wgmma (``wgmma.mma_async.sp``) on the GPU: every sparse type combination, recorded and replayed.

PTX ISA 9.1 §9.7.15.6 (sparse wgmma: 2:4 structured sparsity of A, 1:2 for tf32; the metadata operand and the
sparsity selector, §9.7.15.6.1-2).  One CTA of 128 threads (one warpgroup) runs one instruction
``wgmma.mma_async.sp.sync.aligned.m64nNk<Kd>`` over its own operands, like :mod:`calib.probes.wgmma_ptx` does for
the dense forms:

* the kernel is layout-agnostic: the packed A image (64 rows x 32 bytes = K/2 elements, 2,048 bytes; or four
  32-bit A registers per thread for the RS form), the B image (N rows x 64 bytes = the dense K) and one 32-bit
  metadata word per thread are copied in byte for byte; C is loaded into and D stored from the accumulator
  registers thread-major.  Shared memory is K-major without swizzle: 8 x 16-byte core matrices, LBO = 128 between
  core matrices along K, SBO = 256 (A) / 512 (B) between 8-row groups.
* Where each metadata nibble sits is decided here, on the host (:func:`meta_words`), from CUTLASS's metadata
  thread-value layouts for sparse GMMA (``ELayout_64x{16,32,64}`` of cute's sm90 sparse GMMA traits, read as
  (thread, value) -> (row, dense column)), written independently of the simulator:

  - f16 / bf16 (K = 32) and tf32 (K = 16): lane ``4g + 2s + h`` of warp ``w`` (``s`` = sp-sel) holds row
    ``16w + g`` in bits 0-15 and row ``16w + g + 8`` in bits 16-31, each for the dense columns
    ``[K/2 h, K/2 (h+1))``, one nibble per chunk (4 elements for 16-bit types: two 2-bit indices, the lower
    first; 2 elements for tf32: ``0b0100`` = element 0, ``0b1110`` = element 1); the other two lanes of each
    quad are not read (the probe fills them with random bits);
  - 8-bit (e4m3 / e5m2 / s8 / u8, K = 64; sp-sel 0): lane ``4g + t`` holds row ``16w + g + 8 (t & 1)``,
    dense columns ``[32 (t >> 1), 32 (t >> 1) + 32)``: eight nibbles, chunk c in bits 4c..4c+3.

* Per-instruction flags: bit 0 scale-d, bit 1 imm-scale-a = -1, bit 2 imm-scale-b = -1 (float types), bit 3 A
  from registers, bit 4 sp-sel = 1 (16-bit and tf32 types).

:func:`model` computes D on the host as the GPU does (measured: the record's comparison): each row of A sums only
its K/2 stored products with the B rows its metadata selects, as one packed K, through
``tcsim.numerics.tensor_core`` (``mma_float`` with ``tc_params('sm_90a', 'wgmma', a)``, or ``mma_int``).
:func:`model_dense` is the other reading (A expanded to the dense K, zeros between): the GPU rejects it for every
float type (about 20% of the outputs differ); the integer sums are exact, so both agree there.

``python -m calib.probes.wgmma_sparse device --out DIR`` (GPU machine) runs every combination and writes the GPU's
outputs (``DIR/wgmma_sparse.npz``) and ``DIR/wgmma_sparse.json`` (provenance, input and output SHA-256).
``install --gpu DIR`` compares them with the model (and the packed reading) and writes
``tests/golden/wgmma_sparse/``: each GPU output XOR the model's (zero where they agree), the comparison in the
JSON; ``tests/hw/test_wgmma_sparse_golden.py``
replays it: the model on every recorded case, and the probe kernel itself through the simulator on a few
instructions per combination (so tcsim's ``wgmma.mma_async.sp`` semantics, metadata layout included, are checked
against the GPU's bits).
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

from calib import pipeline as P

from . import wgmma_inputs as WI
from .mma_inputs import Raw
from .wgmma_ptx import (ACC_DTYPE, COMBOS, THREADS, Combo, acc_to_regs, a_registers, regs_to_acc, smem_image)

GOLDEN = P.GOLDEN_ROOT / "wgmma_sparse"
DATA, META = "wgmma_sparse.npz", "wgmma_sparse.json"
MASTER_SEED = 20261128
#: instructions per campaign, N -> count: 256 * 64 * 8 = 131,072 cases at N = 8, plus 2 * 64 * 256 at N = 256
INSTRUCTIONS = {8: 256, 256: 2}
FLAG_SCALE_D, FLAG_NEG_A, FLAG_NEG_B, FLAG_RS, FLAG_SPSEL = 1, 2, 4, 8, 16
LBO, SBO_A, SBO_B = 128, 256, 512
B_ROW = 64                       # bytes of a dense B row (K = 32 f16, 16 tf32, 64 8-bit)
#: the 2:4 metadata nibbles (two different indices, lower first) and tf32's 1:2 nibbles
NIBBLES_24 = np.array([i0 | (i1 << 2) for i0 in range(4) for i1 in range(i0 + 1, 4)], np.int64)
NIBBLES_TF32 = np.array([0b0100, 0b1110], np.int64)
_SIGN = {"f16": 1 << 15, "bf16": 1 << 15, "tf32": 1 << 31, "e4m3": 0x80, "e5m2": 0x80}


def _combos():
    return {f"sp_{n}": c for n, c in COMBOS.items() if c.a != "b1"}


#: every sparse combination: the dense ones without b1 (PTX ISA 9.1 §9.7.15.6.3, ``.sp`` shapes table)
SPARSE = _combos()
INDEX = {name: i for i, name in enumerate(SPARSE)}


def kd(combo: Combo) -> int:
    """The dense K of the sparse instruction (twice the packed K/2 that a 32-byte A row holds)."""
    return 2 * combo.K


def opcode(combo: Combo, N: int) -> str:
    sat = ".satfinite" if combo.satfinite else ""
    return f"wgmma.mma_async.sp.sync.aligned.m64n{N}k{kd(combo)}{sat}.{combo.d}.{combo.a}.{combo.b}"


def kernel_name(name: str, N: int) -> str:
    return f"wgmma_sparse_{name}_n{N}"


def has_sel(combo: Combo) -> bool:
    """sp-sel may be 0 or 1 for f16 / bf16 / tf32; the 8-bit forms take 0 only (PTX ISA §9.7.15.6.2)."""
    return combo.a in ("f16", "bf16", "tf32")


# ================================================================================================ inputs
def gen_instruction(name: str, N: int, i: int, seed: int = MASTER_SEED) -> dict:
    """Packed A (64, K/2), B (N, K), C (64, N), metadata nibbles (64, chunks), flags and the 128 metadata words of
    instruction ``i`` of campaign (``name``, N), from PCG64 seeded with [seed, combination index, N, i]."""
    combo = SPARSE[name]
    R = Raw(seed, INDEX[name], N, i)
    kinds = WI.kinds_of(combo)
    kind = kinds[i % len(kinds)]
    draw = WI._float_kind if combo.is_float else WI._int_kind
    a, b1, c = draw(kind, R, combo, N)
    _, b2, _ = draw(kind, R, combo, N)
    b = np.concatenate([b1, b2], axis=1)
    tf32 = combo.a == "tf32"
    nchunks = kd(combo) // (2 if tf32 else 4)
    table = NIBBLES_TF32 if tf32 else NIBBLES_24
    nib = table[R.choice(len(table), (64, nchunks))]
    flags = 0 if R.coin(0.125, 1)[0] else FLAG_SCALE_D
    if combo.is_float:
        flags |= FLAG_NEG_A * int(R.coin(0.25, 1)[0]) | FLAG_NEG_B * int(R.coin(0.25, 1)[0])
    flags |= FLAG_RS * int(R.coin(0.5, 1)[0])
    if has_sel(combo):
        flags |= FLAG_SPSEL * int(R.coin(0.5, 1)[0])
    noise = R.bits(32, THREADS)
    e = meta_words(combo, nib, bool(flags & FLAG_SPSEL), noise)
    return {"a": a.astype(combo.a_dtype), "b": b.astype(combo.b_dtype), "c": np.asarray(c).astype(combo.c_dtype),
            "nib": nib.astype(np.uint8), "e": e, "flags": np.uint32(flags)}


def gen(name: str, N: int, start: int = 0, count: int | None = None, seed: int = MASTER_SEED) -> dict:
    count = INSTRUCTIONS[N] - start if count is None else count
    parts = [gen_instruction(name, N, i, seed) for i in range(start, start + count)]
    return {k: np.stack([p[k] for p in parts]) for k in parts[0]}


def input_digest(x: dict) -> str:
    h = hashlib.sha256()
    for k in ("a", "b", "c", "e", "flags"):
        h.update(np.ascontiguousarray(x[k]).tobytes())
    return h.hexdigest()


# ================================================================================================ layouts
def meta_words(combo: Combo, nib: np.ndarray, sel: bool, noise: np.ndarray) -> np.ndarray:
    """The 128 threads' 32-bit metadata words for nibbles ``nib`` (64 rows x chunks) (module docstring)."""
    e = np.asarray(noise, np.int64).copy() & 0xFFFFFFFF
    for T in range(THREADS):
        w, lane = T // 32, T % 32
        g, t = lane // 4, lane % 4
        if combo.a in ("f16", "bf16", "tf32"):
            if t // 2 != int(sel):
                continue
            h = t % 2
            per = nib.shape[1] // 2                    # chunks of one lane-half (4)
            word = 0
            for rr, row in ((0, 16 * w + g), (1, 16 * w + g + 8)):
                for c in range(per):
                    word |= int(nib[row, h * per + c]) << (16 * rr + 4 * c)
        else:
            row = 16 * w + g + 8 * (t & 1)
            word = 0
            for c in range(8):
                word |= int(nib[row, 8 * (t >> 1) + c]) << (4 * c)
        e[T] = word
    return e.astype(np.uint32)


def expand(combo: Combo, a: np.ndarray, nib: np.ndarray) -> np.ndarray:
    """Dense (64, K) codes from packed A (64, K/2) and its nibbles (PTX ISA §9.7.15.6.1): a 2:4 chunk c puts packed
    elements 2c, 2c+1 at columns 4c + i0, 4c + i1; a tf32 chunk c puts packed element c at 2c + (i0 >> 1)."""
    rows = np.arange(64)[:, None]
    dense = np.zeros((64, kd(combo)), a.dtype)
    n = nib.astype(np.int64)
    i0, i1 = n & 3, n >> 2
    c = np.arange(n.shape[1])[None, :]
    if combo.a == "tf32":
        dense[rows, 2 * c + (i0 >> 1)] = a[:, c[0]]
    else:
        dense[rows, 4 * c + i0] = a[:, 2 * c[0]]
        dense[rows, 4 * c + i1] = a[:, 2 * c[0] + 1]
    return dense


def _operands(combo: Combo, x: dict, i: int):
    a, b, c, fl = x["a"][i], x["b"][i], x["c"][i], int(x["flags"][i])
    if combo.is_float:
        if fl & FLAG_NEG_A:
            a = a ^ a.dtype.type(_SIGN[combo.a])
        if fl & FLAG_NEG_B:
            b = b ^ b.dtype.type(_SIGN[combo.b])
    if not fl & FLAG_SCALE_D:
        c = np.zeros_like(c)
    return a, b, c


def model(combo: Combo, x: dict) -> np.ndarray:
    """D (n, 64, N) as the GPU computes it (measured, tests/golden/wgmma_sparse): each row of A sums only its K/2
    selected products, as one packed K -- the dense model's block (f16/bf16 16, tf32 8, fp8 32) over the K/2
    stored elements of the row and the B rows their metadata selects -- not the dense K with zeros in between."""
    from tcsim.numerics import tensor_core as TC
    out = []
    for i in range(len(x["flags"])):
        a, b, c = _operands(combo, x, i)
        cols = selected_columns(combo, x["nib"][i])
        d = np.zeros_like(c)
        for r in range(64):
            Bs = np.ascontiguousarray(b[:, cols[r]].T)               # (K/2, N)
            if combo.is_float:
                d[r] = TC.mma_float(a[r:r + 1], Bs, c[r:r + 1], combo.a, combo.b, combo.d,
                                    TC.tc_params("sm_90a", "wgmma", combo.a))[0]
            else:
                d[r] = TC.mma_int(a[r:r + 1], Bs, c[r:r + 1], combo.a == "s8", combo.b == "s8",
                                  combo.satfinite).view(np.uint32)[0]
        out.append(d)
    return np.stack(out).astype(combo.c_dtype)


def model_dense(combo: Combo, x: dict) -> np.ndarray:
    """The other reading, rejected by the GPU for the float types (tests/golden/wgmma_sparse: ~20% of the float
    outputs differ; the integer ones agree, sums being exact): A expanded to its dense K columns, zeros between,
    then the dense model over the dense K."""
    from tcsim.numerics import tensor_core as TC
    out = []
    for i in range(len(x["flags"])):
        a, b, c = _operands(combo, x, i)
        A = expand(combo, a, x["nib"][i])
        if combo.is_float:
            d = TC.mma_float(A, np.ascontiguousarray(b.T), c, combo.a, combo.b, combo.d,
                             TC.tc_params("sm_90a", "wgmma", combo.a))
        else:
            d = TC.mma_int(A, np.ascontiguousarray(b.T), c, combo.a == "s8", combo.b == "s8",
                           combo.satfinite).view(np.uint32)
        out.append(d)
    return np.stack(out).astype(combo.c_dtype)


def selected_columns(combo: Combo, nib: np.ndarray) -> np.ndarray:
    """(64, K/2) dense column of each packed element."""
    n = nib.astype(np.int64)
    i0, i1 = n & 3, n >> 2
    c = np.arange(n.shape[1])[None, :]
    if combo.a == "tf32":
        return 2 * c + (i0 >> 1)
    return np.stack([4 * c + i0, 4 * c + i1], axis=2).reshape(64, -1)


def b_image(b: np.ndarray) -> np.ndarray:
    """(n, N, K) dense B codes -> (n, N*64) uint8 shared images, K-major, no swizzle: byte kb of row r at
    (r // 8) * 512 + (kb // 16) * 128 + (r % 8) * 16 + kb % 16."""
    rb = np.ascontiguousarray(b).view(np.uint8).reshape(b.shape[0], b.shape[1], B_ROW)
    n, rows, _ = rb.shape
    r = np.arange(rows)[:, None]
    kb = np.arange(B_ROW)[None, :]
    off = (r // 8) * SBO_B + (kb // 16) * LBO + (r % 8) * 16 + kb % 16
    img = np.zeros((n, rows * B_ROW), np.uint8)
    img[:, off] = rb
    return img


# ================================================================================================ PTX
def probe_ptx(name: str, N: int) -> str:
    """The probe kernel of combination ``name`` for m64n``N`` (deterministic)."""
    combo = SPARSE[name]
    f32 = combo.d == "f32"
    words = N // 2 if combo.d != "f16" else N // 4
    dreg, dty = ("%f", "f32") if f32 else ("%d", "b32")
    b_bytes = N * B_ROW
    L = []
    w = L.append
    w(f"// generated by calib/probes/wgmma_sparse.py for {opcode(combo, N)} -- do not edit")
    w(".version 8.4")
    w(".target sm_90a")
    w(".address_size 64")
    w("")
    w(f".visible .entry {kernel_name(name, N)}(")
    for p in ("A_ptr", "B_ptr", "C_ptr", "D_ptr", "E_ptr", "F_ptr"):
        w(f"\t.param .u64 .ptr .global .align 16 {p},")
    w("\t.param .u32 ncases")
    w(")")
    w(f".reqntid {THREADS}, 1, 1")
    w("{")
    w("\t.shared .align 256 .b8 sA[2048];")
    w(f"\t.shared .align 512 .b8 sB[{b_bytes}];")
    w("\t.reg .pred \t%p<8>;")
    w("\t.reg .b32 \t%r<40>;")
    w("\t.reg .b32 \t%a<4>;")
    w(f"\t.reg .{dty} \t{dreg}<{words}>;")
    w("\t.reg .b64 \t%rd<32>;")
    w("\tmov.u32 \t%r0, %ctaid.x;")
    w("\tld.param.u32 \t%r1, [ncases];")
    w("\tsetp.ge.u32 \t%p0, %r0, %r1;")
    w("\t@%p0 bra \t$L_done;")
    w("\tmov.u32 \t%r2, %tid.x;")
    for i, (p, size) in enumerate([("A_ptr", 2048), ("B_ptr", b_bytes), ("C_ptr", THREADS * words * 4),
                                   ("D_ptr", THREADS * words * 4), ("E_ptr", THREADS * 4), ("F_ptr", 4)]):
        base = 2 * i + 1
        w(f"\tld.param.u64 \t%rd{base}, [{p}];")
        w(f"\tcvta.to.global.u64 \t%rd{base}, %rd{base};")
        w(f"\tmul.wide.u32 \t%rd{base + 1}, %r0, {size};")
        w(f"\tadd.u64 \t%rd{base}, %rd{base}, %rd{base + 1};")
    w("\tld.global.u32 \t%r3, [%rd11];               // flags")
    w("\tmul.wide.u32 \t%rd13, %r2, 4;")
    w("\tadd.u64 \t%rd14, %rd9, %rd13;")
    w("\tld.global.u32 \t%r30, [%rd14];              // this thread's metadata word")
    w("\tmul.wide.u32 \t%rd15, %r2, 16;")
    w("\tadd.u64 \t%rd16, %rd1, %rd15;")
    w("\tld.global.v4.b32 \t{%a0, %a1, %a2, %a3}, [%rd16];")
    w("\tmov.u32 \t%r4, sA;")
    w("\tmul.lo.u32 \t%r5, %r2, 16;")
    w("\tadd.u32 \t%r6, %r4, %r5;")
    w("\tst.shared.v4.b32 \t[%r6], {%a0, %a1, %a2, %a3};")
    w("\tmov.u32 \t%r7, sB;")
    chunks = b_bytes // 16
    for j in range((chunks + THREADS - 1) // THREADS):
        w(f"\tadd.u32 \t%r8, %r2, {THREADS * j};")
        guarded = THREADS * (j + 1) > chunks
        if guarded:
            w(f"\tsetp.lt.u32 \t%p1, %r8, {chunks};")
        pre = "@%p1 " if guarded else ""
        w("\tmul.wide.u32 \t%rd17, %r8, 16;")
        w("\tadd.u64 \t%rd18, %rd3, %rd17;")
        w(f"\t{pre}ld.global.v4.b32 \t{{%r10, %r11, %r12, %r13}}, [%rd18];")
        w("\tmul.lo.u32 \t%r9, %r8, 16;")
        w("\tadd.u32 \t%r9, %r7, %r9;")
        w(f"\t{pre}st.shared.v4.b32 \t[%r9], {{%r10, %r11, %r12, %r13}};")
    w(f"\tmul.wide.u32 \t%rd19, %r2, {words * 4};")
    w("\tadd.u64 \t%rd20, %rd5, %rd19;")
    w("\tadd.u64 \t%rd21, %rd7, %rd19;")
    vec = 4 if words % 4 == 0 else 2
    for q in range(0, words, vec):
        regs = ", ".join(f"{dreg}{q + i}" for i in range(vec))
        w(f"\tld.global.v{vec}.{dty} \t{{{regs}}}, [%rd20+{4 * q}];")
    w("\tfence.proxy.async.shared::cta;")
    w("\tbar.sync \t0;")
    # descriptors: start >> 4 (14 bits) | LBO field << 16; high word: SBO field
    for reg, src, rd, sbo in (("%r22", "%r4", "%rd22", SBO_A), ("%r23", "%r7", "%rd23", SBO_B)):
        w(f"\tshr.u32 \t{reg}, {src}, 4;")
        w(f"\tand.b32 \t{reg}, {reg}, 16383;")
        w(f"\tor.b32 \t{reg}, {reg}, {(LBO >> 4) << 16};")
        w(f"\tmov.b32 \t%r24, {sbo >> 4};")
        w(f"\tmov.b64 \t{rd}, {{{reg}, %r24}};")
    w("\tand.b32 \t%r25, %r3, 1;")
    w("\tsetp.ne.u32 \t%p2, %r25, 0;            // scale-d")
    w("\tshr.u32 \t%r26, %r3, 1;")
    w("\tand.b32 \t%r26, %r26, 15;              // variant: neg_a | neg_b << 1 | rs << 2 | sel << 3")
    mask = (3 if combo.is_float else 0) | 4 | (8 if has_sel(combo) else 0)
    w(f"\tand.b32 \t%r26, %r26, {mask};")
    dl = "{" + ", ".join(f"{dreg}{i}" for i in range(words)) + "}"
    w("\twgmma.fence.sync.aligned;")
    variants = [v for v in range(16) if v & ~mask == 0]
    for v in variants:
        w(f"\tsetp.eq.u32 \t%p3, %r26, {v};")
        w(f"\t@%p3 bra.uni \t$L_v{v};")
    w("\tbra.uni \t$L_join;")
    for v in variants:
        na, nb, rs, sel = v & 1, (v >> 1) & 1, (v >> 2) & 1, (v >> 3) & 1
        ops = [dl, "{%a0, %a1, %a2, %a3}" if rs else "%rd22", "%rd23", "%r30", str(sel), "%p2"]
        if combo.is_float:
            ops += ["-1" if na else "1", "-1" if nb else "1"]
            if combo.a in ("f16", "bf16"):
                ops += ["0"] if rs else ["0", "0"]
        w(f"$L_v{v}:")
        w(f"\t{opcode(combo, N)} \t" + ", ".join(ops) + ";")
        w("\tbra.uni \t$L_join;")
    w("$L_join:")
    w("\twgmma.commit_group.sync.aligned;")
    w("\twgmma.wait_group.sync.aligned \t0;")
    for q in range(0, words, vec):
        regs = ", ".join(f"{dreg}{q + i}" for i in range(vec))
        w(f"\tst.global.v{vec}.{dty} \t[%rd21+{4 * q}], {{{regs}}};")
    w("$L_done:")
    w("\tret;")
    w("}")
    return "\n".join(L) + "\n"


def probe_launch(name: str, N: int, x: dict):
    """A :class:`tcsim.launch.Launch` of the probe over the instructions of ``x`` (one CTA each); D is argument 3,
    (n, 128, words) register slots (:func:`calib.probes.wgmma_ptx.regs_to_acc` maps them to (n, 64, N))."""
    from tcsim.launch import Launch
    n = len(x["flags"])
    rs = (np.asarray(x["flags"]) & FLAG_RS) != 0
    A = np.ascontiguousarray(np.where(rs[:, None], a_registers(x["a"]), smem_image(x["a"])))
    B = b_image(x["b"])
    C = acc_to_regs(np.asarray(x["c"], dtype=ACC_DTYPE[SPARSE[name].d]))
    D = np.zeros_like(C)
    return Launch(ptx=probe_ptx(name, N), kernel=kernel_name(name, N), grid=(n, 1, 1), block=(THREADS, 1, 1),
                  args=[A, B, C, D, np.ascontiguousarray(x["e"], np.uint32), np.asarray(x["flags"], np.uint32),
                        np.uint32(n)], name=f"{kernel_name(name, N)}[{n}]")


def gpu_output(result) -> np.ndarray:
    return regs_to_acc(np.asarray(result.outputs[3]))


# ================================================================================================ device / install
def _campaign(item):
    name, N = item
    return gen(name, N)


def _compare(item):
    name, N, x, gpu = item
    combo = SPARSE[name]
    m = model(combo, x)
    res = {"cases": int(gpu.size), "model_equal": int((m == gpu).sum())}
    if N == 8:
        sub = {k: v[:32] for k, v in x.items()}
        res["dense_reading_equal_first32"] = int((model_dense(combo, sub) == gpu[:32]).sum())
        res["model_equal_first32"] = int((m[:32] == gpu[:32]).sum())
    return name, N, m, res


def device_main(out: Path, names, argv=(), backend: str = "gpu", workers: int = 8) -> int:
    """Run every campaign on ``backend`` and write the GPU's outputs as they are (``<name>/n<N>/d_gpu``) with the
    provenance; the comparison with the model is :func:`install`'s (no CPU time of the GPU machine)."""
    import multiprocessing as mp
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    camp = [(n, N) for n in names for N in INSTRUCTIONS]
    with mp.get_context("fork").Pool(workers) as pool:
        xs = pool.map(_campaign, camp)
    print(f"generated {len(camp)} campaigns in {time.time() - t0:.1f} s", flush=True)
    runs = P.run_all(list(zip(camp, xs)),
                     lambda it: P.execute(probe_launch(it[0][0], it[0][1], it[1]), backend, timeout=120), jobs=4)
    meta = {"command": P.command_line("calib.probes.wgmma_sparse", argv), "date": P.utc_now(),
            "seed": MASTER_SEED, "instructions": {str(k): v for k, v in INSTRUCTIONS.items()}, "combos": {}}
    arrays = {}
    for (name, N), x, r in zip(camp, xs, runs):
        ent = meta["combos"].setdefault(name, {})
        if not r.ok:
            ent[str(N)] = {"error": r.error, "detail": r.detail}
            print(f"{name} n{N}: {r.error}: {r.detail}", flush=True)
            continue
        meta.update(P.gpu_fields(r.device, r.driver, r.cc))
        gpu = gpu_output(r)
        arrays[f"{name}/n{N}/d_gpu"] = gpu
        ent[str(N)] = {"opcode": opcode(SPARSE[name], N), "in_sha256": input_digest(x),
                       "gpu_out_sha256": hashlib.sha256(np.ascontiguousarray(gpu).tobytes()).hexdigest(),
                       "ptx_sha256": P.sha256(probe_ptx(name, N)), "kernel_ms": r.elapsed_ms}
    np.savez_compressed(out / DATA, **arrays)
    P.write_json(out / META, meta)
    print(f"wrote {out / DATA} ({(out / DATA).stat().st_size} bytes) in {time.time() - t0:.1f} s", flush=True)
    return 0


def load(golden: Path = GOLDEN):
    meta = P.read_json(golden / META)
    with np.load(golden / DATA) as z:
        arrays = {k: z[k] for k in z.files}
    return meta, arrays


def install_main(gpu_dir: Path, dest: Path = GOLDEN, workers: int = 2) -> int:
    """Compare the device's record with :func:`model` (and :func:`model_dense` on the first 32 m64n8 instructions)
    and install it: every GPU output stored as ``gpu ^ model`` (``<name>/n<N>/d_xor_model``: zero where they agree,
    so it compresses), the comparison in the JSON."""
    import multiprocessing as mp
    meta = P.read_json(gpu_dir / META)
    with np.load(gpu_dir / DATA) as z:
        raw = {k: z[k] for k in z.files}
    todo = []
    for name, ent in meta["combos"].items():
        for N, e in ent.items():
            if "error" in e:
                print(f"{name} n{N}: {e['error']}")
                continue
            gpu = raw[f"{name}/n{N}/d_gpu"]
            assert hashlib.sha256(np.ascontiguousarray(gpu).tobytes()).hexdigest() == e["gpu_out_sha256"]
            x = gen(name, int(N))
            assert input_digest(x) == e["in_sha256"], f"{name} n{N}: the inputs changed since the record"
            todo.append((name, int(N), x, gpu))
    arrays = {}
    with mp.get_context("fork").Pool(workers) as pool:
        for name, N, m, res in pool.imap_unordered(_compare, todo):
            gpu = next(g for n2, N2, _, g in todo if (n2, N2) == (name, N))
            arrays[f"{name}/n{N}/d_xor_model"] = gpu ^ m
            meta["combos"][name][str(N)]["compare"] = res
            print(f"{name} n{N}: {res}", flush=True)
    dest.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(dest / DATA, **arrays)
    P.write_json(dest / META, meta)
    print(f"installed into {dest} ({(dest / DATA).stat().st_size} bytes)")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m calib.probes.wgmma_sparse", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("device")
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--backend", default="gpu")
    d.add_argument("--combo", action="append")
    d.add_argument("--workers", type=int, default=8)
    i = sub.add_parser("install")
    i.add_argument("--gpu", type=Path, required=True)
    i.add_argument("--dest", type=Path, default=GOLDEN)
    pp = sub.add_parser("ptx")
    pp.add_argument("combo")
    pp.add_argument("--n", type=int, default=8)
    a = ap.parse_args(argv)
    if a.cmd == "device":
        return device_main(a.out, a.combo or list(SPARSE), argv, a.backend, a.workers)
    if a.cmd == "install":
        return install_main(a.gpu, a.dest)
    print(probe_ptx(a.combo, a.n), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
