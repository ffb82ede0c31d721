"""wgmma (PTX ISA 9.1 §9.7.15): every shape / type family, descriptors and swizzles, fragments, transposes,
negation, scale-d, sparse, register-A and descriptor-A forms, the .aligned / warpgroup rules, decode errors, and
the race detector's findings for registers and SMEM operands in flight.

The kernels are written here (:func:`wgmma_kernel`): 128 threads copy a prepared SMEM image from global memory,
``fence.proxy.async``, ``bar.sync``, build the descriptors, load the accumulator (and A) registers from global
memory in the register-fragment layout, issue one wgmma, commit, wait, and store the accumulator registers back.

Independent oracles (nothing here is read back from the simulator's own layout code):

* the SMEM image is laid out by this file's own canonical-layout and swizzle formulas (:func:`place`: PTX ISA
  §9.7.15.5.1.2 / CUTLASS ``make_gmma_desc`` canonical forms, XOR swizzle of address bits [4, 4+b) with [7, 7+b));
  descriptors are packed by hand (:func:`desc`);
* registers are packed / unpacked with this file's formulas of the PTX fragment figures (:func:`d_pos`,
  :func:`a_pos`);
* expected values: integer and b1 kinds exactly with numpy int64; float kinds with the H100 numerics oracle
  ``tcsim.numerics.tensor_core.mma_float(..., tc_params('sm_90a', 'wgmma', atype))`` (measured against H100
  mma.sync and checked by its own tests), and additionally within a float64 error bound of numpy's product.

Kernels that should assemble are fed to ``ptxas -arch=sm_90a`` too (skipped without ptxas); forms tcsim rejects
at decode are rejected by ptxas as well.
"""
from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.descriptors import WgmmaDescriptor, operand_addresses
from tcsim.isa.errors import MemoryFault, SyncError, UnsupportedError, VerifyError
from tcsim.isa.ptxas import assemble
from tcsim.launch import Launch, run_launch
from tcsim.numerics.tensor_core import mma_float

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "numerics"))
import oracle_replay  # noqa: E402  (expected D from numerics checked against the recorded data: issue 22)

tc_params = oracle_replay.checked_tc_params

A_OFF, B_OFF = 0, 8192          # SMEM image offsets (1024-aligned: every swizzle pattern starts there)
SMEM = 8192 + 65536
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "b1": 1}
K_OF = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}
SW = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
WIDTH = {"none": 16, "32B": 32, "64B": 64, "128B": 128}


# ------------------------------------------------------------------------------------------ oracles: layouts
def desc(start: int, lbo: int, sbo: int, swizzle: str, base_offset: int = 0) -> int:
    """The sm_90 matrix descriptor, packed by hand (PTX ISA §9.7.15.5.1.2.2)."""
    enc = lambda x: (x & 0x3FFFF) >> 4                                          # noqa: E731
    return enc(start) | enc(lbo) << 16 | enc(sbo) << 32 | base_offset << 49 | SW[swizzle] << 62


def swz(addr: np.ndarray, swizzle: str) -> np.ndarray:
    b = {"none": 0, "32B": 1, "64B": 2, "128B": 3}[swizzle]
    return addr ^ (((addr >> 7) & ((1 << b) - 1)) << 4)


def layout(rows: int, kbytes: int, eb: int, major: str, swizzle: str):
    """(byte address function (mn, k) -> offset, LBO, SBO) of a canonical layout for ``rows`` x (kbytes / eb)
    elements of ``eb`` bytes."""
    W = WIDTH[swizzle]
    if major == "K":
        if swizzle == "none":
            lbo, sbo = (rows // 8) * 128, 128          # K core matrices after all MN groups: both fields matter
            return (lambda mn, k: (mn % 8) * 16 + (mn // 8) * sbo + (k * eb) % 16 + ((k * eb) // 16) * lbo), lbo, sbo
        sbo = 8 * W
        return (lambda mn, k: (mn % 8) * W + (mn // 8) * sbo + k * eb), 16, sbo
    mnb = rows * eb
    if swizzle == "none":
        sbo = 128
        lbo = (mnb // 16) * 128
        return (lambda mn, k: (mn * eb) % 16 + ((mn * eb) // 16) * sbo + (k % 8) * 16 + (k // 8) * lbo), lbo, sbo
    lbo = 8 * W
    sbo = max(mnb // W, 1) * 8 * W
    return (lambda mn, k: (mn * eb) % W + ((mn * eb) // W) * lbo + (k % 8) * W + (k // 8) * sbo), lbo, sbo


def place(image: np.ndarray, base: int, codes: np.ndarray, eb: int, major: str, swizzle: str):
    """Write ``codes`` (rows x K, ``eb``-byte little-endian codes) into ``image`` at ``base``; returns (LBO, SBO,
    one past the highest byte written)."""
    rows, k = codes.shape
    f, lbo, sbo = layout(rows, k * eb, eb, major, swizzle)
    top = 0
    for mn in range(rows):
        for kk in range(k):
            a = int(swz(np.int64(base + f(mn, kk)), swizzle))
            v = int(codes[mn, kk])
            for i in range(eb):
                image[a + i] = (v >> (8 * i)) & 0xFF
            top = max(top, a + eb)
    return lbo, sbo, top


# ------------------------------------------------------------------------------------------ oracles: fragments
def d_pos(lane_tid: int, i: int):
    """(row, col) of accumulator element i of thread ``lane_tid`` (0..127) (PTX ISA Figures 149/151/153/155)."""
    w, lane = lane_tid // 32, lane_tid % 32
    g, t = lane >> 2, lane & 3
    return 16 * w + g + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * t + i % 2


def a_pos(tid: int, i: int, fmt: str):
    """(row, col) of register-A element i of thread ``tid`` (PTX ISA Figures 148/150/152/154)."""
    w, lane = tid // 32, tid % 32
    g, t = lane >> 2, lane & 3
    if BITS[fmt] == 16:
        return 16 * w + g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)
    if fmt == "tf32":
        return 16 * w + g + 8 * (i % 2), t + 4 * (i // 2)
    if fmt == "b1":
        r, j = i // 32, i % 32
        return 16 * w + g + 8 * (r % 2), 32 * t + 128 * (r // 2) + j
    return 16 * w + g + 8 * ((i // 4) % 2), 4 * t + i % 4 + 16 * (i // 8)


def pack_d(D: np.ndarray, dbits: int) -> np.ndarray:
    """(128, nregs) uint32 accumulator registers holding D (64 x N codes)."""
    n = D.shape[1]
    per = 32 // dbits
    out = np.zeros((128, n // 2 // per), np.uint32)
    for tid in range(128):
        for i in range(n // 2):
            r, c = d_pos(tid, i)
            out[tid, i // per] |= np.uint32(int(D[r, c]) << (dbits * (i % per)))
    return out


def unpack_d(regs: np.ndarray, n: int, dbits: int) -> np.ndarray:
    per = 32 // dbits
    D = np.zeros((64, n), np.uint32)
    for tid in range(128):
        for i in range(n // 2):
            r, c = d_pos(tid, i)
            D[r, c] = (int(regs[tid, i // per]) >> (dbits * (i % per))) & ((1 << dbits) - 1)
    return D


def pack_a(A: np.ndarray, fmt: str) -> np.ndarray:
    bits = BITS[fmt]
    per = 32 // bits
    out = np.zeros((128, 4), np.uint32)
    for tid in range(128):
        for i in range(4 * per):
            r, c = a_pos(tid, i, fmt)
            out[tid, i // per] |= np.uint32((int(A[r, c]) & ((1 << bits) - 1)) << (bits * (i % per)))
    return out


# ------------------------------------------------------------------------------------------ random operands
def rand_codes(rng, fmt: str, shape) -> np.ndarray:
    if fmt in ("s8", "u8"):
        return rng.integers(0, 256, shape).astype(np.uint8)
    if fmt == "b1":
        return rng.integers(0, 2, shape).astype(np.uint8)
    if fmt in ("e4m3", "e5m2"):
        dt = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
        return rng.standard_normal(shape).astype(dt).view(np.uint8)
    if fmt == "tf32":
        return (rng.standard_normal(shape).astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000))
    dt = np.float16 if fmt == "f16" else ml_dtypes.bfloat16
    return rng.standard_normal(shape).astype(dt).view(np.uint16)


def values(codes: np.ndarray, fmt: str) -> np.ndarray:
    dt = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
          "e5m2": ml_dtypes.float8_e5m2}
    if fmt == "tf32":
        return codes.astype(np.uint32).view(np.float32).astype(np.float64)
    return codes.astype({16: np.uint16, 8: np.uint8}[BITS[fmt]]).view(dt[fmt]).astype(np.float64)


# ------------------------------------------------------------------------------------------ the kernel
def type_words(dtype, atype, btype):
    return f".{dtype}.{atype}.{btype}" + (".and.popc" if atype == "b1" else "")


def wgmma_kernel(instr: str, nd: int, a_reg: bool, sparse: bool = False, pre: str = "", post_issue: str = "",
                 post_wait: str = "", fence: bool = True, target: str = "sm_90a", nthreads_check: bool = True) -> str:
    """PTX of the test kernel around one wgmma instruction ``instr`` (operands spelled with %d*, %a*, %da, %db,
    %meta, %sd)."""
    dregs = ", ".join(f"%d{i}" for i in range(nd))
    instr = instr.replace("{D}", "{" + dregs + "}")
    return f""".version 8.4
.target {target}
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 img, .param .u64 cin, .param .u64 ain, .param .u64 meta,
                  .param .u64 desca, .param .u64 descb, .param .u32 nwords, .param .u32 sdv)
{{
  .reg .pred %p<4>; .reg .pred %sd;
  .reg .b32 %r<16>; .reg .b32 %d<{max(nd, 1)}>; .reg .b32 %a<4>; .reg .b32 %meta;
  .reg .b64 %rd<16>; .reg .b64 %da; .reg .b64 %db;
  .shared .align 1024 .b8 smem[{SMEM}];
  mov.u32 %r0, %tid.x;
  ld.param.u64 %rd0, [img];
  ld.param.u32 %r1, [nwords];
  mov.u32 %r2, %r0;
COPY:
  setp.ge.u32 %p0, %r2, %r1;
  @%p0 bra COPIED;
  mul.wide.u32 %rd1, %r2, 4;
  add.u64 %rd2, %rd0, %rd1;
  ld.global.u32 %r3, [%rd2];
  mov.u32 %r4, smem;
  shl.b32 %r5, %r2, 2;
  add.u32 %r4, %r4, %r5;
  st.shared.u32 [%r4], %r3;
  add.u32 %r2, %r2, 128;
  bra COPY;
COPIED:
  fence.proxy.async.shared::cta;
  bar.sync 0;
  mov.u32 %r6, smem;
  shr.u32 %r6, %r6, 4;
  cvt.u64.u32 %rd3, %r6;
  ld.param.u64 %da, [desca];
  add.u64 %da, %da, %rd3;
  ld.param.u64 %db, [descb];
  add.u64 %db, %db, %rd3;
  ld.param.u32 %r7, [sdv];
  setp.ne.u32 %sd, %r7, 0;
  ld.param.u64 %rd4, [cin];
  mul.wide.u32 %rd5, %r0, {4 * max(nd, 1)};
  add.u64 %rd4, %rd4, %rd5;
{chr(10).join(f"  ld.global.u32 %d{i}, [%rd4+{4 * i}];" for i in range(nd))}
  ld.param.u64 %rd6, [ain];
  mul.wide.u32 %rd7, %r0, 16;
  add.u64 %rd6, %rd6, %rd7;
  ld.global.v4.u32 {{%a0, %a1, %a2, %a3}}, [%rd6];
  ld.param.u64 %rd8, [meta];
  mul.wide.u32 %rd9, %r0, 4;
  add.u64 %rd8, %rd8, %rd9;
  ld.global.u32 %meta, [%rd8];
{pre}
  {"wgmma.fence.sync.aligned;" if fence else ""}
  {instr}
  wgmma.commit_group.sync.aligned;
{post_issue}
  wgmma.wait_group.sync.aligned 0;
{post_wait}
  ld.param.u64 %rd10, [out];
  add.u64 %rd10, %rd10, %rd5;
{chr(10).join(f"  st.global.u32 [%rd10+{4 * i}], %d{i};" for i in range(nd))}
  ret;
}}
"""


def instr_text(atype, btype, dtype, n, a_reg, scale_a=1, scale_b=1, trans_a=0, trans_b=0, sparse=False, sel=0,
               satfinite=False):
    k = K_OF[atype] * (2 if sparse else 1)
    sp = ".sp" if sparse else ""
    sat = ".satfinite" if satfinite else ""
    a = "{%a0, %a1, %a2, %a3}" if a_reg else "%da"
    ops = ["{D}", a, "%db"]
    if sparse:
        ops += ["%meta", str(sel)]
    ops.append("%sd")
    if atype in ("f16", "bf16"):
        ops += [str(scale_a), str(scale_b)] + ([] if a_reg else [str(trans_a)]) + [str(trans_b)]
    elif atype in ("tf32", "e4m3", "e5m2"):
        ops += [str(scale_a), str(scale_b)]
    return f"wgmma.mma_async{sp}.sync.aligned.m64n{n}k{k}{sat}{type_words(dtype, atype, btype)} " + ", ".join(ops) + ";"


class Case:
    """One wgmma execution: operands, the launch, and the expected D."""

    def __init__(self, atype, btype, dtype, n, *, a_reg=False, swa="128B", swb="128B", trans_a=0, trans_b=0,
                 scale_a=1, scale_b=1, scale_d=True, seed=0, satfinite=False, sparse=False, sel=0, c_scale=1.0):
        rng = np.random.default_rng(seed)
        self.atype, self.btype, self.dtype, self.n = atype, btype, dtype, n
        self.sparse = sparse
        K = K_OF[atype] * (2 if sparse else 1)
        self.K = K
        dbits = 16 if dtype == "f16" else 32
        self.dbits = dbits
        A = rand_codes(rng, atype, (64, K))
        B = rand_codes(rng, btype, (K, n))
        if sparse:
            A, Apacked, meta, self.sp_cols = sparsify(rng, A, atype, sel)
            self.Apacked = Apacked
        else:
            Apacked, meta = A, np.zeros(128, np.uint32)
        self.A, self.B = A, B
        if dtype == "s32":
            C = rng.integers(-2 ** 31, 2 ** 31, (64, n)).astype(np.int64)
            if satfinite:
                C[:8] = 2 ** 31 - 5
            Cbits = (C & 0xFFFFFFFF).astype(np.uint32)
        else:
            ft = np.float16 if dtype == "f16" else np.float32
            Cv = (rng.standard_normal((64, n)) * c_scale).astype(ft)
            C = Cv.astype(np.float64)
            Cbits = Cv.view(np.uint16 if dtype == "f16" else np.uint32).astype(np.uint32)
        self.C, self.Cbits = C, Cbits
        image = np.zeros(SMEM, np.uint8)
        eb_a = max(BITS[atype] // 8, 1)
        eb_b = max(BITS[btype] // 8, 1)
        if atype == "b1":
            a_store = np.packbits(Apacked, axis=1, bitorder="little")
            b_store = np.packbits(B.T, axis=1, bitorder="little")
        else:
            a_store, b_store = Apacked, B.T
        la, sa = (0, 0)
        if not a_reg:
            la, sa, _ = place(image, A_OFF, a_store, eb_a, "MN" if trans_a else "K", swa)
        lb, sb, top = place(image, B_OFF, b_store, eb_b, "MN" if trans_b else "K", swb)
        self.image = image
        self.nwords = (top + 3) // 4          # the kernel copies only the bytes in use
        self.desca = desc(A_OFF, la, sa, swa) if not a_reg else 0
        self.descb = desc(B_OFF, lb, sb, swb)
        self.ain = pack_a(Apacked, atype) if a_reg else np.zeros((128, 4), np.uint32)
        self.meta = meta
        self.cin = pack_d(Cbits, dbits)
        self.scale_d = scale_d
        self.instr = instr_text(atype, btype, dtype, n, a_reg, scale_a, scale_b, trans_a, trans_b, sparse, sel,
                                satfinite)
        self.nd = self.cin.shape[1]
        self.a_reg = a_reg
        self.neg = (scale_a == -1) != (scale_b == -1)
        self.scale_a, self.scale_b, self.satfinite = scale_a, scale_b, satfinite

    def launch(self, **kw) -> Launch:
        out = np.zeros_like(self.cin)
        ptx = wgmma_kernel(self.instr, self.nd, self.a_reg, **kw)
        return Launch(ptx, grid=(1, 1, 1), block=(128, 1, 1),
                      args=[out, self.image.view(np.uint32).copy(), self.cin.copy(), self.ain.copy(),
                            self.meta.copy(), np.uint64(self.desca), np.uint64(self.descb),
                            np.uint32(self.nwords), np.uint32(int(self.scale_d))])

    def expected(self) -> np.ndarray:
        A, B = self.A, self.B
        if self.atype in ("s8", "u8", "b1"):
            a = A.astype(np.int64)
            b = B.astype(np.int64)
            if self.atype == "s8":
                a = np.where(a >= 128, a - 256, a)
            if self.btype == "s8":
                b = np.where(b >= 128, b - 256, b)
            acc = a @ b + (self.C if self.scale_d else 0)
            if self.satfinite:
                acc = np.clip(acc, -2 ** 31, 2 ** 31 - 1)
            return (acc & 0xFFFFFFFF).astype(np.uint32)
        sign = {16: 0x8000, 32: 0x80000000, 8: 0x80}
        a = A ^ A.dtype.type(sign[BITS[self.atype]]) if self.scale_a == -1 else A
        b = B ^ B.dtype.type(sign[BITS[self.btype]]) if self.scale_b == -1 else B
        c = self.Cbits if self.scale_d else np.zeros_like(self.Cbits)
        c = c.astype(np.uint16) if self.dtype == "f16" else c
        p = tc_params("sm_90a", "wgmma", self.atype)
        if self.sparse:
            # each row sums its K/2 stored products with the B rows its metadata selects, as one packed K (measured
            # on the GPU, tests/golden/wgmma_sparse), not the dense K with zeros between
            ap = self.Apacked ^ self.Apacked.dtype.type(sign[BITS[self.atype]]) if self.scale_a == -1 else self.Apacked
            rows = [mma_float(ap[r:r + 1], np.ascontiguousarray(b[self.sp_cols[r]]), c[r:r + 1], self.atype,
                              self.btype, self.dtype, p) for r in range(64)]
            return np.concatenate([np.asarray(x) for x in rows]).astype(np.uint32)
        d = mma_float(a, b, c, self.atype, self.btype, self.dtype, p)
        return np.asarray(d).astype(np.uint32)

    def bound_check(self, got: np.ndarray) -> None:
        """float kinds: within a float64 error bound of numpy's product (an oracle independent of tensor_core)."""
        if self.atype in ("s8", "u8", "b1"):
            return
        av, bv = values(self.A, self.atype), values(self.B, self.btype)
        s = -1.0 if self.neg else 1.0
        exact = s * (av @ bv) + (self.C if self.scale_d else 0)
        ft = np.float16 if self.dtype == "f16" else np.float32
        gv = got.astype(np.uint16 if self.dtype == "f16" else np.uint32).view(ft).astype(np.float64)
        mag = np.abs(av) @ np.abs(bv) + (np.abs(self.C) if self.scale_d else 0)
        rel = {"f16": 2.0 ** -9, "f32": 2.0 ** -12}[self.dtype] if self.atype in ("e4m3", "e5m2") else \
            {"f16": 2.0 ** -9, "f32": 2.0 ** -20}[self.dtype]
        assert (np.abs(gv - exact) <= mag * rel + 2.0 ** -24).all()


def sparsify(rng, A, atype, sel):
    """2:4 (f16/bf16) or 1:2 (tf32) sparse A: (dense with zeros, packed (64, K/2), per-thread metadata words, the
    dense column of every packed element (64, K/2))."""
    K = A.shape[1]
    dense = np.zeros_like(A)
    packed = np.zeros((64, K // 2), A.dtype)
    cols = np.zeros((64, K // 2), np.int64)
    meta = np.zeros(128, np.uint32)
    tf32 = atype == "tf32"
    chunk = 2 if tf32 else 4
    nib = np.zeros((64, K // chunk), np.uint32)
    for r in range(64):
        for c in range(K // chunk):
            if tf32:
                j = int(rng.integers(0, 2))
                dense[r, 2 * c + j] = A[r, 2 * c + j]
                packed[r, c] = A[r, 2 * c + j]
                cols[r, c] = 2 * c + j
                nib[r, c] = 0b0100 if j == 0 else 0b1110
            else:
                i0, i1 = sorted(rng.choice(4, 2, replace=False))
                dense[r, 4 * c + i0] = A[r, 4 * c + i0]
                dense[r, 4 * c + i1] = A[r, 4 * c + i1]
                packed[r, 2 * c], packed[r, 2 * c + 1] = A[r, 4 * c + i0], A[r, 4 * c + i1]
                cols[r, 2 * c], cols[r, 2 * c + 1] = 4 * c + i0, 4 * c + i1
                nib[r, c] = i0 | (i1 << 2)
    per_half = (K // 2) // chunk               # chunks per thread per row
    for tid in range(128):
        w, lane = tid // 32, tid % 32
        g, q = lane >> 2, lane & 3
        if q // 2 != sel:
            meta[tid] = 0xDEADBEEF if q % 2 else 0x12345678    # ignored lanes: junk the MMA must not use
            continue
        h = q % 2
        word = 0
        for rr, row in ((0, 16 * w + g), (1, 16 * w + g + 8)):
            for c in range(per_half):
                word |= int(nib[row, h * per_half + c]) << (16 * rr + 4 * c)
        meta[tid] = word
    return dense, packed, meta, cols


def run_case(case: Case, check_ptxas=True, **kw):
    launch = case.launch(**kw)
    if check_ptxas:
        r = assemble(launch.ptx, "sm_90a")
        if r is not None:
            assert r[0] == 0, r[1]
    res = run_launch(launch)
    return res, unpack_d(res.outputs[0], case.n, case.dbits)


def check(case: Case, **kw):
    res, got = run_case(case, **kw)
    assert not res.findings, [f.message for f in res.findings]
    np.testing.assert_array_equal(got, case.expected())
    case.bound_check(got)
    return got


# ------------------------------------------------------------------------------------------ shapes and types
FAMILIES = [("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32"), ("tf32", "tf32", "f32"),
            ("e4m3", "e4m3", "f32"), ("e5m2", "e4m3", "f16"), ("e4m3", "e5m2", "f32"), ("s8", "s8", "s32"),
            ("u8", "s8", "s32"), ("s8", "u8", "s32"), ("u8", "u8", "s32"), ("b1", "b1", "s32")]


@pytest.mark.parametrize("atype,btype,dtype", FAMILIES)
@pytest.mark.parametrize("a_reg", [False, True])
def test_families(atype, btype, dtype, a_reg):
    n = 16 if atype != "b1" else 24
    check(Case(atype, btype, dtype, n, a_reg=a_reg, seed=hash((atype, btype, dtype, a_reg)) % 1000))


@pytest.mark.parametrize("n", [8, 56, 128, 256])
def test_n_range_f16(n):
    check(Case("f16", "f16", "f32", n, seed=n))


@pytest.mark.parametrize("n", [32, 48, 240])
def test_n_range_int(n):
    check(Case("s8", "u8", "s32", n, seed=n, swa="64B", swb="32B"))


@pytest.mark.parametrize("swa,swb", [("none", "none"), ("32B", "64B"), ("64B", "128B"), ("128B", "32B")])
@pytest.mark.parametrize("fmt", ["f16", "tf32", "e4m3"])
def test_swizzles_k_major(swa, swb, fmt):
    check(Case(fmt, fmt, "f32", 32, swa=swa, swb=swb, seed=7))


@pytest.mark.parametrize("sw", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("trans_a,trans_b", [(1, 0), (0, 1), (1, 1)])
def test_transposes(sw, trans_a, trans_b):
    n = 64
    check(Case("bf16", "bf16", "f32", n, swa=sw, swb=sw, trans_a=trans_a, trans_b=trans_b, seed=11))


def test_transpose_b_with_register_a():
    check(Case("f16", "f16", "f16", 64, a_reg=True, swb="64B", trans_b=1, seed=5))


@pytest.mark.parametrize("sa,sb", [(-1, 1), (1, -1), (-1, -1)])
@pytest.mark.parametrize("fmt", ["f16", "tf32", "e5m2"])
def test_negation(sa, sb, fmt):
    case = Case(fmt, fmt, "f32", 16, scale_a=sa, scale_b=sb, seed=3)
    got = check(case)
    plain = Case(fmt, fmt, "f32", 16, seed=3)
    if sa * sb == -1:       # D = -(A B) + C differs from A B + C
        assert (got != plain.expected()).any()


@pytest.mark.parametrize("fmt,dtype", [("f16", "f32"), ("f16", "f16"), ("s8", "s32"), ("b1", "s32")])
def test_scale_d_false_ignores_accumulator(fmt, dtype):
    case = Case(fmt, fmt, dtype, 16, scale_d=False, seed=9)
    got = check(case)
    assert (got != Case(fmt, fmt, dtype, 16, scale_d=True, seed=9).expected()).any()


def test_scale_d_immediate():
    case = Case("f16", "f16", "f32", 16, seed=4)
    case.instr = case.instr.replace("%sd,", "0,")
    got = run_case(case)[1]
    case.scale_d = False
    np.testing.assert_array_equal(got, case.expected())


def test_satfinite_clamps():
    """C near INT32_MAX in rows 0-7: .satfinite clamps where the sum overflows, where wrapping would differ."""
    case = Case("u8", "u8", "s32", 16, satfinite=True, seed=2)
    got = check(case)
    assert (got[:8] == 2 ** 31 - 1).any()
    case.satfinite = False
    assert (got != case.expected()).any()


@pytest.mark.parametrize("fmt,sel", [("f16", 0), ("bf16", 1), ("tf32", 0), ("tf32", 1)])
@pytest.mark.parametrize("a_reg", [False, True])
def test_sparse(fmt, sel, a_reg):
    check(Case(fmt, fmt, "f32", 32, sparse=True, sel=sel, a_reg=a_reg, seed=21 + sel))


def test_chained_accumulation():
    """Two MMAs on the same accumulator without a wait in between: the second reads the first's result."""
    case = Case("f16", "f16", "f32", 16, seed=13)
    case.instr = case.instr + "\n  " + case.instr.replace("%sd", "1")
    res = run_launch(case.launch())
    assert not res.findings
    once = case.expected()
    p = tc_params("sm_90a", "wgmma", "f16")
    twice = mma_float(case.A, case.B, once, "f16", "f16", "f32", p)
    np.testing.assert_array_equal(unpack_d(res.outputs[0], 16, 32), twice)


# ------------------------------------------------------------------------------------------ descriptors
def test_descriptor_fields_round_trip():
    v = desc(0x12340, 0x400, 0x2000, "64B", base_offset=0)
    d = WgmmaDescriptor.decode(v)
    assert (d.start_address, d.lbo, d.sbo, d.swizzle, d.base_offset) == (0x12340, 0x400, 0x2000, "64B", 0)
    assert d.encode() == v
    assert WgmmaDescriptor.decode(1 << 63 | 1 << 62).swizzle == "32B"
    assert "unused" in WgmmaDescriptor.decode(1 << 46).describe()


@pytest.mark.parametrize("sw", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("major", ["K", "MN"])
def test_operand_addresses_match_canonical_layouts(sw, major):
    eb = 2
    rows, k = 64, 16
    f, lbo, sbo = layout(rows, k * eb, eb, major, sw)
    d = WgmmaDescriptor.decode(desc(B_OFF, lbo, sbo, sw))
    got = operand_addresses(d, rows, k, 16, major).byte
    want = np.array([[int(swz(np.int64(B_OFF + f(m, kk)), sw)) for kk in range(k)] for m in range(rows)])
    np.testing.assert_array_equal(got, want)


def _bad_desc_run(descb, err, match):
    case = Case("f16", "f16", "f32", 16, seed=1)
    case.descb = descb
    launch = case.launch()
    with pytest.raises(err, match=match):
        run_launch(launch)


def test_descriptor_unused_bits_rejected():
    _bad_desc_run(desc(B_OFF, 16, 1024, "128B") | 1 << 46, VerifyError, "tcgen05 descriptor")


def test_descriptor_base_offset_unsupported():
    _bad_desc_run(desc(B_OFF, 16, 1024, "128B", base_offset=3), UnsupportedError, "base offset")


def test_descriptor_outside_smem_is_a_memory_fault():
    # the kernel adds its shared base (0x400 >> 4) to the start field: 0x3F000 + 0x400 still fits its 14 bits
    _bad_desc_run(desc(0x3F000, 16, 1024, "128B"), MemoryFault, "outside")


# ------------------------------------------------------------------------------------------ decode errors
BAD = [
    ("wgmma.mma_async.sync.aligned.m64n40k32.s32.s8.s8 {D}, %da, %db, %sd;", 20, "N = 40"),
    ("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {D}, %da, %db, %sd, 1, -1, 0, 0;", 4, "operands"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {D}, %da, %db, %sd, 2, 1, 0, 0;", 4, "imm-scale-a"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {D}, %da, %db, %sd, 1, 1, 2, 0;", 4, "imm-trans-a"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {D}, {%a0, %a1, %a2, %a3}, %db, %sd, 1, 1, 0, 1;", 4,
     "operands"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f16.bf16.bf16 {D}, %da, %db, %sd, 1, 1, 0, 0;", 2, "accumulates"),
    ("wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8 {D}, %da, %db, %sd, 1, 1;", 4, "operands"),
    ("wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.u8.s8 {D}, %da, %db, %meta, 1, %sd;", 4, "sp-sel"),
    ("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {D}, %da, %db, %meta, 2, %sd, 1, 1, 0, 0;", 4, "sp-sel"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {D}, %da, %db, %r1, 1, 1, 0, 0;", 4, "scale-d"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {D}, %da, %db, %sd, 1, 1, 0, 0;", 3, "3 register"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {D}, %r1, %db, %sd, 1, 1, 0, 0;", 4, "64-bit"),
    ("wgmma.mma_async.sync.aligned.m64n8k32.satfinite.f32.e4m3.e4m3 {D}, %da, %db, %sd, 1, 1;", 4, "satfinite"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.bf16 {D}, %da, %db, %sd, 1, 1, 0, 0;", 4, "type pair"),
    ("wgmma.mma_async.sync.aligned.m64n8k32.f32.f16.f16 {D}, %da, %db, %sd, 1, 1, 0, 0;", 4, "K = 16"),
    ("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1 {D}, %da, %db, %sd;", 4, "and.popc"),
    ("wgmma.mma_async.sync.aligned.m32n8k16.f32.f16.f16 {D}, %da, %db, %sd, 1, 1, 0, 0;", 4, "not a wgmma shape"),
    ("wgmma.mma_async.sp.sync.aligned.m64n8k512.s32.b1.b1.and.popc {D}, %da, %db, %meta, 0, %sd;", 4, "sparse"),
]


@pytest.mark.parametrize("instr,nd,match", BAD)
def test_decode_errors_located_and_rejected_by_ptxas(instr, nd, match):
    ptx = wgmma_kernel(instr, nd, False)
    r = assemble(ptx, "sm_90a")
    if r is not None:
        assert r[0] != 0, f"ptxas accepts {instr}"
    launch = Launch(ptx, block=(128, 1, 1), args=[np.zeros(4, np.uint32)] + [0] * 6 + [np.uint32(0)] * 2)
    with pytest.raises(VerifyError, match=match) as ei:
        run_launch(launch)
    assert ei.value.loc is not None and ei.value.loc.line > 0


def test_f16_accumulator_in_f32_registers_rejected():
    ptx = wgmma_kernel("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%f0, %f1}, %da, %db, %sd, 1, 1, 0, 0;",
                       0, False).replace(".reg .b32 %meta;", ".reg .b32 %meta; .reg .f32 %f<2>;")
    r = assemble(ptx, "sm_90a")
    if r is not None:
        assert r[0] != 0
    with pytest.raises(VerifyError, match=r"\.b32 registers"):
        run_launch(Launch(ptx, block=(128, 1, 1), args=[np.zeros(4, np.uint32)] + [0] * 6 + [np.uint32(0)] * 2))


def test_wgmma_needs_sm_90a():
    case = Case("f16", "f16", "f32", 16)
    launch = case.launch(target="sm_100a")
    with pytest.raises(VerifyError, match="sm_90a"):
        run_launch(launch)


def test_sparse_8bit_invalid_metadata_located():
    """8-bit sparse wgmma runs (tests/hw/test_wgmma_sparse_golden.py); all-zero metadata names equal indices
    (0b0000, undefined by PTX ISA §9.7.15.6.1): a located VerifyError naming the nibble and its lane."""
    from calib.probes import wgmma_sparse as S
    x = S.gen("sp_u8_s8_s32", 8, 0, 1)
    x["e"][:] = 0
    launch = S.probe_launch("sp_u8_s8_s32", 8, x)
    r = assemble(launch.ptx, "sm_90a")
    if r is not None:
        assert r[0] == 0
    with pytest.raises(VerifyError, match=r"sp-meta nibble 0b0000 \(lane 0, row 0, chunk 0\)") as ei:
        run_launch(launch)
    assert ei.value.loc is not None and "wgmma.mma_async.sp" in str(ei.value)


def test_fence_commit_wait_forms():
    for bad, match in (("wgmma.fence.aligned;", "sync"), ("wgmma.wait_group.sync.aligned %r1;", "immediate"),
                       ("wgmma.commit_group.sync.aligned 1;", "no operands")):
        ptx = wgmma_kernel("", 0, False).replace("wgmma.fence.sync.aligned;", bad)
        r = assemble(ptx, "sm_90a")
        if r is not None:
            assert r[0] != 0, bad
        with pytest.raises(VerifyError, match=match):
            run_launch(Launch(ptx, block=(128, 1, 1), args=[np.zeros(4, np.uint32)] + [0] * 6 + [np.uint32(0)] * 2))


# ------------------------------------------------------------------------------------------ warpgroup rules
def test_partial_warpgroup_is_a_sync_error():
    case = Case("f16", "f16", "f32", 16)
    launch = case.launch()
    launch.block = (64, 1, 1)
    with pytest.raises(SyncError, match="warpgroup 0"):
        run_launch(launch)


def test_non_aligned_warpgroup_is_a_sync_error():
    """Warp 3 skips the MMA (branch on the warp id): the warps of the warpgroup disagree."""
    case = Case("f16", "f16", "f32", 16)
    launch = case.launch(pre="  shr.u32 %r8, %r0, 5;\n  setp.eq.u32 %p1, %r8, 3;\n  @%p1 bra SKIP;",
                         post_issue="SKIP:")
    with pytest.raises(SyncError, match="aligned"):
        run_launch(launch)


def test_predicated_off_lanes_are_a_sync_error():
    case = Case("f16", "f16", "f32", 16)
    case.instr = "@!%p2 " + case.instr
    launch = case.launch(pre="  setp.eq.u32 %p2, %r0, 5;")
    with pytest.raises(SyncError, match="lane"):
        run_launch(launch)


def test_descriptor_must_be_warp_uniform():
    case = Case("f16", "f16", "f32", 16)
    launch = case.launch(pre="  cvt.u64.u32 %rd11, %r0;\n  and.b64 %rd11, %rd11, 1;\n  add.u64 %db, %db, %rd11;")
    with pytest.raises(VerifyError, match="b-desc differs"):
        run_launch(launch)


# ------------------------------------------------------------------------------------------ async + race detector
def test_accumulator_read_before_wait_is_a_finding_and_stale():
    """The accumulator is written at the MMA's completion: a read before wgmma.wait_group sees the old value, and
    the race detector names both lines and the missing wait (class 19)."""
    case = Case("f16", "f16", "f32", 16, seed=17)
    launch = case.launch(post_issue="  mov.b32 %r9, %d0;\n  st.global.u32 [%rd6], %r9;")
    res = run_launch(launch)
    f19 = [f for f in res.findings if f.cls == 19]
    assert f19, [f.message for f in res.findings]
    f = f19[0]
    assert "wgmma.wait_group" in f.missing and "%d0" in f.message
    mma_line = next(i + 1 for i, ln in enumerate(launch.ptx.splitlines()) if "wgmma.mma_async" in ln)
    assert {s.line for s in f.sides} >= {mma_line}
    stale = res.outputs[3].reshape(128, 4)[:, 0]
    np.testing.assert_array_equal(stale, case.cin[:, 0])      # every thread read the value before the MMA
    assert (unpack_d(res.outputs[0], 16, 32) == case.expected()).all()   # and the wait then saw the result


def test_accumulator_write_without_fence_is_a_finding():
    case = Case("f16", "f16", "f32", 16, seed=18)
    launch = case.launch(fence=False, pre="  wgmma.fence.sync.aligned;\n  mov.b32 %d1, 0;")
    res = run_launch(launch)
    f19 = [f for f in res.findings if f.cls == 19]
    assert f19 and "wgmma.fence" in f19[0].missing, [f.message for f in res.findings]


def test_fenced_write_is_clean():
    case = Case("f16", "f16", "f32", 16, seed=18)
    launch = case.launch(pre="  mov.b32 %d1, 0;")
    res = run_launch(launch)
    assert not res.findings


def test_register_a_overwritten_in_flight_is_a_finding():
    case = Case("f16", "f16", "f32", 16, a_reg=True, seed=19)
    launch = case.launch(post_issue="  mov.b32 %a2, 0;")
    res = run_launch(launch)
    f19 = [f for f in res.findings if f.cls == 19]
    assert f19 and "A fragment" in f19[0].message


def test_smem_operand_overwritten_in_flight_is_a_finding():
    case = Case("f16", "f16", "f32", 16, seed=20)
    launch = case.launch(post_issue=f"  mov.u32 %r10, smem;\n  st.shared.u32 [%r10+{B_OFF}], %r0;")
    res = run_launch(launch)
    assert any(f.cls == 5 for f in res.findings), [f.message for f in res.findings]


def test_smem_operand_without_proxy_fence_is_a_finding():
    case = Case("f16", "f16", "f32", 16, seed=22)
    launch = case.launch()
    launch.ptx = launch.ptx.replace("  fence.proxy.async.shared::cta;\n", "")
    res = run_launch(launch)
    assert any(f.cls == 8 for f in res.findings), [f.message for f in res.findings]


@pytest.mark.parametrize("timing", [False, True])
def test_same_result_under_timing_and_jitter(timing):
    case = Case("e4m3", "e5m2", "f32", 64, seed=23)
    res = run_launch(case.launch(), timing=timing)
    assert not res.findings
    np.testing.assert_array_equal(unpack_d(res.outputs[0], 64, 32), case.expected())


def test_ptxas_agrees_on_all_shapes():
    """Every (type family, N) the forms module accepts assembles (one kernel, many instructions)."""
    from tcsim.isa.wgmma_forms import KINDS
    lines = []
    maxd = 0
    for atype, btype, dtype in FAMILIES:
        kind = {"e4m3": "fp8", "e5m2": "fp8", "s8": "int", "u8": "int"}.get(atype, atype)
        for n in KINDS[kind][3]:
            nd = n // 4 if dtype == "f16" else n // 2
            maxd = max(maxd, nd)
            ins = instr_text(atype, btype, dtype, n, False)
            lines.append(ins.replace("{D}", "{" + ", ".join(f"%d{i}" for i in range(nd)) + "}"))
    ptx = wgmma_kernel("\n  ".join(lines), maxd, False)
    r = assemble(ptx, "sm_90a")
    if r is None:
        pytest.skip("ptxas not on PATH")
    assert r[0] == 0, r[1][:2000]
    from tcsim.cli import main
    import tempfile
    import os
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "all.ptx")
        open(p, "w").write(ptx)
        assert main(["check", p]) == 0
