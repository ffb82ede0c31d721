"""PTX generator and host-side layouts for the ``wgmma.mma_async`` numerics probe (one warpgroup = one instruction).

PTX ISA 9.1 §9.7.15 (asynchronous warpgroup-level matrix multiply-accumulate).  Every CTA of 128 threads (one
warpgroup) executes exactly one ``wgmma.mma_async.sync.aligned.m64n<N>k<K>`` over its own operands:

* the kernel is **layout-agnostic**: it copies the A and B images byte for byte from global into shared memory
  (A: 2,048 bytes; B: ``32 * N`` bytes; every wgmma type has rows of exactly 32 bytes of K), loads each thread's
  accumulator registers C from ``C[case][thread][slot]`` as they lie in the registers, and stores D the same way.
  Where each element of A, B, C and D sits (PTX ISA §9.7.15.5 register fragments and §9.7.15.5.1 shared-memory
  matrix layout) is decided here on the host by :func:`smem_image`, :func:`a_registers` and :data:`FRAG`, so the
  one thing the hardware interprets is the matrix descriptor (§9.7.15.5.1.2).
* Operands in shared memory are K-major with no swizzle (the "interleave" layout): the 8-row x 16-byte core
  matrix (i, j) (i along M or N, j along K) starts at byte ``i * SBO + j * LBO`` with LBO = 128 (the leading
  dimension byte offset: between the two core matrices of a row group along K) and SBO = 256 (the stride
  dimension byte offset: between 8-row groups along M/N).  The descriptor is built at run time from the
  shared address of the tile and the kernel parameters ``desc_lo`` / ``desc_hi`` (LBO and SBO fields), so
  a wrong reading of the two fields shows up as a mismatch on every case, never as a silent error.
* With the RS form (A in registers, flag bit 3) the same 2,048 bytes are read as four 32-bit registers per
  thread (thread ``T`` gets bytes ``16T .. 16T+15``): :func:`a_registers` puts A's words there with the
  fragment map of §9.7.15.5 (the same for every type when counted in 32-bit words of a 32-byte row).
* Per-instruction flags word: bit 0 scale-d (1: D = A*B + C; 0: D = A*B), bit 1 imm-scale-a = -1, bit 2
  imm-scale-b = -1 (float types only), bit 3 A from registers.

Only K-major (imm-trans-a = imm-trans-b = 0) operands are probed: transposition moves elements, not numerics.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PTX_DIR = HERE / "ptx"
THREADS = 128
ROW_BYTES = 32                     # K * element size for every wgmma type (16 f16, 8 tf32, 32 8-bit, 256 b1)
A_BYTES = 64 * ROW_BYTES
LBO, SBO = 128, 256                # byte offsets of the no-swizzle K-major layout (module docstring)
SHAPES_N = (8, 256)

ESIZE = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1, "b1": 1}
ACC_DTYPE = {"f32": np.uint32, "f16": np.uint16, "s32": np.uint32}
CODE_DTYPE = {1: np.uint8, 2: np.uint16, 4: np.uint32}
FLAG_SCALE_D, FLAG_NEG_A, FLAG_NEG_B, FLAG_RS = 1, 2, 4, 8


@dataclass(frozen=True)
class Combo:
    """One wgmma type combination: ``wgmma.mma_async.sync.aligned.m64nNk<K>[.satfinite].<d>.<a>.<b>[.and.popc]``."""

    name: str
    a: str
    b: str
    d: str
    satfinite: bool = False

    @property
    def K(self) -> int:
        return ROW_BYTES * 8 if self.a == "b1" else ROW_BYTES // ESIZE[self.a]

    @property
    def is_float(self) -> bool:
        return self.d in ("f32", "f16")

    @property
    def has_neg(self) -> bool:
        """imm-scale-a / imm-scale-b exist for the float types only (PTX ISA §9.7.15.5.2)."""
        return self.is_float

    def opcode(self, N: int) -> str:
        sat = ".satfinite" if self.satfinite else ""
        tail = ".and.popc" if self.a == "b1" else ""
        return f"wgmma.mma_async.sync.aligned.m64n{N}k{self.K}{sat}.{self.d}.{self.a}.{self.b}{tail}"

    def kernel(self, N: int) -> str:
        return f"wgmma_probe_{self.name}_n{N}"

    @property
    def a_dtype(self):
        return np.uint8 if self.a == "b1" else CODE_DTYPE[ESIZE[self.a]]

    @property
    def b_dtype(self):
        return np.uint8 if self.b == "b1" else CODE_DTYPE[ESIZE[self.b]]

    @property
    def c_dtype(self):
        return ACC_DTYPE[self.d]


def _combos():
    out = [Combo("f16_f16", "f16", "f16", "f16"), Combo("f16_f32", "f16", "f16", "f32"),
           Combo("bf16_f32", "bf16", "bf16", "f32"), Combo("tf32_f32", "tf32", "tf32", "f32")]
    for d in ("f16", "f32"):
        for a in ("e4m3", "e5m2"):
            for b in ("e4m3", "e5m2"):
                out.append(Combo(f"{a}_{b}_{d}", a, b, d))
    for sat in (False, True):
        for a in ("s8", "u8"):
            for b in ("s8", "u8"):
                out.append(Combo(f"{a}_{b}_s32" + ("_sat" if sat else ""), a, b, "s32", sat))
    out.append(Combo("b1_and_popc", "b1", "b1", "s32"))
    return {c.name: c for c in out}


#: every type combination of wgmma.mma_async (PTX ISA 9.1 §9.7.15.5.2 "Matrix shape" table), dense only
COMBOS = _combos()


# ================================================================================================ host layouts
def _frag_map():
    """(row, col) of accumulator slot s of thread T for m64nN: PTX ISA §9.7.15.5 "WGMMA .m64nNk* register
    fragment layout for accumulator matrix D".  For 32-bit accumulators slot s is register s; for f16 slot s is
    half s%2 (low first) of register s//2 -- with that numbering one formula serves both:
    row = 16*warp + g + 8*((s//2)%2), col = 8*(s//4) + 2*t + s%2 (g = lane/4, t = lane%4).  Returns
    rows, cols of shape (128, 128) for N = 256 (slots 0..N/2-1 for smaller N)."""
    T = np.arange(THREADS)[:, None]
    s = np.arange(128)[None, :]
    w, lane = T // 32, T % 32
    g, t = lane // 4, lane % 4
    rows = 16 * w + g + 8 * ((s // 2) % 2)
    cols = 8 * (s // 4) + 2 * t + s % 2
    return rows, cols


FRAG = _frag_map()


def acc_to_regs(x: np.ndarray) -> np.ndarray:
    """(n, 64, N) accumulator codes -> (n, 128, N/2) thread-major register slots (the kernel's C layout)."""
    N = x.shape[2]
    r, c = FRAG[0][:, :N // 2], FRAG[1][:, :N // 2]
    return np.ascontiguousarray(x[:, r, c])


def regs_to_acc(y: np.ndarray) -> np.ndarray:
    """Inverse of :func:`acc_to_regs`: (n, 128, N/2) register slots -> (n, 64, N)."""
    n, _, S = y.shape
    out = np.zeros((n, 64, 2 * S), dtype=y.dtype)
    out[:, FRAG[0][:, :S], FRAG[1][:, :S]] = y
    return out


def row_bytes(x: np.ndarray) -> np.ndarray:
    """(n, rows, K) codes (b1: (n, rows, 32) bytes) -> (n, rows, 32) uint8, element k at byte k*size (little
    endian), as K-major shared memory holds a row."""
    x = np.ascontiguousarray(x)
    return x.view(np.uint8).reshape(x.shape[0], x.shape[1], ROW_BYTES)


def smem_image(x: np.ndarray) -> np.ndarray:
    """(n, rows, K) codes -> (n, rows*32) uint8 shared-memory images, K-major, no swizzle (module docstring):
    byte kb of row r lies at (r//8)*SBO + (kb//16)*LBO + (r%8)*16 + kb%16."""
    rb = row_bytes(x)
    n, rows, _ = rb.shape
    r = np.arange(rows)[:, None]
    kb = np.arange(ROW_BYTES)[None, :]
    off = (r // 8) * SBO + (kb // 16) * LBO + (r % 8) * 16 + kb % 16
    img = np.zeros((n, rows * ROW_BYTES), np.uint8)
    img[:, off] = rb
    return img


def a_registers(x: np.ndarray) -> np.ndarray:
    """(n, 64, K) A codes -> (n, 2048) bytes = four 32-bit registers per thread (thread T: bytes 16T..16T+15).
    PTX ISA §9.7.15.5 "register fragment layout for matrix A" (m64nNk16 f16/bf16, k8 tf32, k32 8-bit): register
    r of thread T (warp w, g = lane/4, t = lane%4) holds 32-bit word t + 4*(r//2) of row 16w + g + 8*(r%2)."""
    words = row_bytes(x).view(np.uint32)                      # (n, 64, 8)
    T = np.arange(THREADS)[:, None]
    r = np.arange(4)[None, :]
    w, lane = T // 32, T % 32
    g, t = lane // 4, lane % 4
    rows = 16 * w + g + 8 * (r % 2)
    cols = t + 4 * (r // 2)
    return np.ascontiguousarray(words[:, rows, cols]).view(np.uint8).reshape(x.shape[0], A_BYTES)


# ================================================================================================ PTX
def probe_ptx(combo: Combo, N: int) -> str:
    """The PTX of ``combo``'s probe kernel for m64n``N`` (deterministic)."""
    if N % 8 or not 8 <= N <= 256:
        raise ValueError(f"N must be a multiple of 8 in 8..256, got {N}")
    f32 = combo.d == "f32"
    words = N // 2 if combo.d != "f16" else N // 4          # 32-bit accumulator registers per thread
    dreg = "%f" if f32 else "%d"
    dty = "f32" if f32 else "b32"
    b_bytes = N * ROW_BYTES
    L = []
    w = L.append
    w(f"// generated by calib/probes/wgmma_ptx.py for {combo.opcode(N)} -- do not edit")
    w("// one warpgroup (CTA of 128 threads) per instruction; A image 2048 B, B image 32*N B, C/D per-thread slots")
    w(".version 8.4")                   # mixed s8/u8 wgmma needs PTX ISA 8.4
    w(".target sm_90a")
    w(".address_size 64")
    w("")
    w(f".visible .entry {combo.kernel(N)}(")
    for p in ("A_ptr", "B_ptr", "C_ptr", "D_ptr", "F_ptr"):
        w(f"\t.param .u64 .ptr .global .align 16 {p},")
    w("\t.param .u32 ncases,")
    w("\t.param .u32 desc_lo,")
    w("\t.param .u32 desc_hi")
    w(")")
    w(f".reqntid {THREADS}, 1, 1")
    w("{")
    w(f"\t.shared .align 256 .b8 sA[{A_BYTES}];")
    w(f"\t.shared .align 256 .b8 sB[{b_bytes}];")
    w("\t.reg .pred \t%p<8>;")
    w("\t.reg .b32 \t%r<40>;")
    w("\t.reg .b32 \t%a<4>;")
    w(f"\t.reg .{dty} \t{dreg}<{words}>;")
    w("\t.reg .b64 \t%rd<24>;")
    w("")
    w("\tmov.u32 \t%r0, %ctaid.x;               // case = instruction")
    w("\tld.param.u32 \t%r1, [ncases];")
    w("\tsetp.ge.u32 \t%p0, %r0, %r1;")
    w("\t@%p0 bra \t$L_done;")
    w("\tmov.u32 \t%r2, %tid.x;")
    # global bases
    for i, (p, size) in enumerate([("A_ptr", A_BYTES), ("B_ptr", b_bytes), ("C_ptr", THREADS * words * 4),
                                   ("D_ptr", THREADS * words * 4), ("F_ptr", 4)]):
        base = 2 * i + 1
        w(f"\tld.param.u64 \t%rd{base}, [{p}];")
        w(f"\tcvta.to.global.u64 \t%rd{base}, %rd{base};")
        w(f"\tmul.wide.u32 \t%rd{base + 1}, %r0, {size};")
        w(f"\tadd.u64 \t%rd{base}, %rd{base}, %rd{base + 1};")
    w("\tld.global.u32 \t%r3, [%rd9];               // flags")
    # A: thread T's 16 bytes -> shared (SS form) and registers (RS form)
    w("\tmul.wide.u32 \t%rd12, %r2, 16;")
    w("\tadd.u64 \t%rd13, %rd1, %rd12;")
    w("\tld.global.v4.b32 \t{%a0, %a1, %a2, %a3}, [%rd13];")
    w("\tmov.u32 \t%r4, sA;")
    w("\tmul.lo.u32 \t%r5, %r2, 16;")
    w("\tadd.u32 \t%r6, %r4, %r5;")
    w("\tst.shared.v4.b32 \t[%r6], {%a0, %a1, %a2, %a3};")
    # B: 16-byte chunks t, t+128, ...
    w("\tmov.u32 \t%r7, sB;")
    chunks = b_bytes // 16
    for j in range((chunks + THREADS - 1) // THREADS):
        w(f"\tadd.u32 \t%r8, %r2, {THREADS * j};")
        guarded = THREADS * (j + 1) > chunks
        if guarded:
            w(f"\tsetp.lt.u32 \t%p1, %r8, {chunks};")
        pre = "@%p1 " if guarded else ""
        w("\tmul.wide.u32 \t%rd14, %r8, 16;")
        w("\tadd.u64 \t%rd15, %rd3, %rd14;")
        w(f"\t{pre}ld.global.v4.b32 \t{{%r10, %r11, %r12, %r13}}, [%rd15];")
        w("\tmul.lo.u32 \t%r9, %r8, 16;")
        w("\tadd.u32 \t%r9, %r7, %r9;")
        w(f"\t{pre}st.shared.v4.b32 \t[%r9], {{%r10, %r11, %r12, %r13}};")
    # C registers: thread-major, `words` 32-bit words per thread
    w(f"\tmul.wide.u32 \t%rd16, %r2, {words * 4};")
    w("\tadd.u64 \t%rd17, %rd5, %rd16;")
    w("\tadd.u64 \t%rd18, %rd7, %rd16;")
    vec = 4 if words % 4 == 0 else 2
    for q in range(0, words, vec):
        regs = ", ".join(f"{dreg}{q + i}" for i in range(vec))
        w(f"\tld.global.v{vec}.{dty} \t{{{regs}}}, [%rd17+{4 * q}];")
    w("\tfence.proxy.async.shared::cta;")
    w("\tbar.sync \t0;")
    # descriptors: start address (>>4, 14 bits) | desc_lo (LBO field << 16); high word desc_hi (SBO field)
    w("\tld.param.u32 \t%r20, [desc_lo];")
    w("\tld.param.u32 \t%r21, [desc_hi];")
    for reg, src, rd in (("%r22", "%r4", "%rd20"), ("%r23", "%r7", "%rd21")):
        w(f"\tshr.u32 \t{reg}, {src}, 4;")
        w(f"\tand.b32 \t{reg}, {reg}, 16383;")
        w(f"\tor.b32 \t{reg}, {reg}, %r20;")
        w(f"\tmov.b64 \t{rd}, {{{reg}, %r21}};")
    w("\tand.b32 \t%r24, %r3, 1;")
    w("\tsetp.ne.u32 \t%p2, %r24, 0;            // scale-d")
    w("\tshr.u32 \t%r25, %r3, 1;")
    w("\tand.b32 \t%r25, %r25, 7;               // variant: neg_a | neg_b << 1 | rs << 2")
    if not combo.has_neg:
        w("\tand.b32 \t%r25, %r25, 4;")
    dl = "{" + ", ".join(f"{dreg}{i}" for i in range(words)) + "}"
    w("\twgmma.fence.sync.aligned;")
    variants = range(8) if combo.has_neg else (0, 4)
    for v in variants:
        w(f"\tsetp.eq.u32 \t%p3, %r25, {v};")
        w(f"\t@%p3 bra.uni \t$L_v{v};")
    w("\tbra.uni \t$L_join;")
    for v in variants:
        na, nb, rs = v & 1, (v >> 1) & 1, (v >> 2) & 1
        a_op = "{%a0, %a1, %a2, %a3}" if rs else "%rd20"
        ops = [dl, a_op, "%rd21", "%p2"]
        if combo.has_neg:
            ops += ["-1" if na else "1", "-1" if nb else "1"]
            if combo.a in ("f16", "bf16"):
                ops += ["0"] if rs else ["0", "0"]          # imm-trans-a (SS only), imm-trans-b
        w(f"$L_v{v}:")
        w(f"\t{combo.opcode(N)} \t" + ", ".join(ops) + ";")
        w("\tbra.uni \t$L_join;")
    w("$L_join:")
    w("\twgmma.commit_group.sync.aligned;")
    w("\twgmma.wait_group.sync.aligned \t0;")
    for q in range(0, words, vec):
        regs = ", ".join(f"{dreg}{q + i}" for i in range(vec))
        w(f"\tst.global.v{vec}.{dty} \t[%rd18+{4 * q}], {{{regs}}};")
    w("$L_done:")
    w("\tret;")
    w("}")
    return "\n".join(L) + "\n"


def desc_words() -> tuple:
    """(desc_lo, desc_hi) kernel parameters: the LBO field (bits 16-29) and the SBO field (bits 32-45) of the
    sm_90 matrix descriptor (PTX ISA §9.7.15.5.1.2), in 16-byte units; swizzle mode 0 and base offset 0."""
    return (LBO >> 4) << 16, SBO >> 4


def pack_operands(combo: Combo, a, b, flags):
    """Global buffers of the probe: A (n, 2048) bytes (shared image, or registers where the RS flag is set) and
    B (n, 32*N) shared images.  a (n, 64, K) codes, b (n, N, K) codes (B stored N x K: ``b[n][k] = B[k][n]``;
    b1 operands as (n, rows, 32) bytes)."""
    rs = (np.asarray(flags) & FLAG_RS) != 0
    A = np.where(rs[:, None], a_registers(a), smem_image(a))
    return np.ascontiguousarray(A), smem_image(b)


def probe_launch(combo: Combo, N: int, a, b, c, flags, desc=None):
    """A :class:`tcsim.launch.Launch` of the probe over n instructions (n CTAs).  D (argument 3) comes back as
    (n, 128, N/2) register slots of the accumulator type; :func:`regs_to_acc` maps them to (n, 64, N)."""
    from tcsim.launch import Launch

    a = np.ascontiguousarray(a, dtype=combo.a_dtype)
    b = np.ascontiguousarray(b, dtype=combo.b_dtype)
    n = a.shape[0]
    kk = ROW_BYTES if combo.a == "b1" else combo.K
    if a.shape != (n, 64, kk) or b.shape != (n, N, kk) or c.shape != (n, 64, N) or len(flags) != n:
        raise ValueError(f"{combo.name}: shapes {a.shape} {b.shape} {c.shape} {len(flags)}")
    A, B = pack_operands(combo, a, b, flags)
    C = acc_to_regs(np.asarray(c, dtype=combo.c_dtype))
    D = np.zeros_like(C)
    lo, hi = desc if desc is not None else desc_words()
    return Launch(ptx=probe_ptx(combo, N), kernel=combo.kernel(N), grid=(n, 1, 1), block=(THREADS, 1, 1),
                  args=[A, B, C, D, np.asarray(flags, np.uint32), np.uint32(n), np.uint32(lo), np.uint32(hi)],
                  name=f"{combo.kernel(N)}[{n}]")


def ptx_path(combo: Combo, N: int) -> Path:
    return PTX_DIR / f"{combo.kernel(N)}.ptx"
