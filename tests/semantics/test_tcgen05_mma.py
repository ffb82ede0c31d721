"""tcgen05.mma / tcgen05.commit end to end (sim/semantics/tcgen05_mma.py, sim/agents/tensor_pipe.py).

Every kernel is a small sm_100a program: all threads copy a byte image from global memory into SMEM
(ld.global / st.shared, then fence.proxy.async), warp 0 allocates TMEM, thread 0 issues the MMA(s) and a
tcgen05.commit, every thread waits on the mbarrier, then the four warps dump TMEM lanes 0..127 x the allocated
columns to global memory with tcgen05.ld.32x32b.  Each kernel is checked with ``ptxas -arch=sm_100a`` (skipped
without ptxas).

The SMEM images are built here by an *independent* model of the canonical layouts written from
tcgen05_layouts.md (b') (scalar Python, its own swizzle function), and D is located in the dump with an
independent model of the data-path layouts of tcgen05_layouts.md (c).  Values are compared bit for bit with
expected D computed from the logical matrices: kind::i8 by exact integer arithmetic (``exact_i8``); the float kinds
by sim.numerics.tensor_core with parameters from ``oracle_replay.checked_params``, which first requires those
numerics to reproduce mmasim's recorded outputs for the same kind and operand formats (issue 22): the expected
values are backed by the oracle data in the same run, not by the model under test alone.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.descriptors import InstrDescriptor, InstrDescriptorBlockScaled, SmemDescriptor
from tcsim.isa.errors import MemoryFault, SyncError, VerifyError
from tcsim.launch import Launch, run_launch
from tcsim.numerics.tensor_core import mma_block_scaled, mma_float

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "numerics"))
import oracle_replay  # noqa: E402  (the recorded mmasim data: checked_params)

PTXAS = shutil.which("ptxas")
_PTXAS_OK: dict = {}


def check_ptxas(ptx: str) -> None:
    """Every test kernel must assemble with ptxas -arch=sm_100a (skipped when ptxas is absent)."""
    if PTXAS is None or ptx in _PTXAS_OK:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
        path = f.name
    try:
        r = subprocess.run([PTXAS, "-arch=sm_100a", path, "-o", os.devnull], capture_output=True, text=True,
                           timeout=120)
    finally:
        os.unlink(path)
    assert r.returncode == 0, f"ptxas rejected the test kernel:\n{r.stdout}{r.stderr}\n{ptx}"
    _PTXAS_OK[ptx] = True


# ---------------------------------------------------------------------------------------------- the kernel
def kernel(issue: str, ncols: int = 256, smem: int = 32768, cg: int = 1, version: str = "8.8",
           issuer_rank: int = 0, wait: str = "before", tinit: tuple | None = None, commit: bool = True,
           phases: int = 1) -> str:
    """The test kernel.  ``issue`` runs in thread 0 of cluster rank ``issuer_rank`` with: %r12 = TMEM base address
    (from tcgen05.alloc), %rd4 = the u64 argument array (global), %r11 = the mbarrier (shared::cta); scratch
    %r20-%r39, %rd10-%rd29, %p10-%p15.  The mbarrier phase 0 is completed by the issuer's commit (multicast
    to both CTAs of a pair for cg = 2).  ``tinit = (col, n)``: before the MMA every thread stores n words of
    the ``tinit`` argument (128 x n uint32 per CTA) into its TMEM lane, columns col..col+n-1 (tcgen05.st).
    ``wait``: 'before' the dump waits for the commit; 'after' dumps first (a racy read) and waits before the
    dealloc; 'never' does not wait at all.  ``phases``: mbarrier phases to wait for (the issue code may commit
    more than once)."""
    cluster_sync = "  barrier.cluster.arrive.aligned;\n  barrier.cluster.wait.aligned;\n" if cg == 2 else ""
    commit_mc = ("  mov.b16 %rs1, 3;\n  tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster"
                 ".multicast::cluster.b64 [%r11], %rs1;\n" if cg == 2 else
                 "  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r11];\n")
    waiting = "".join(f"""WAIT_{ph}:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r11], {ph};
  @!%p4 bra WAIT_{ph};
""" for ph in range(phases))
    wait_before = waiting if wait == "before" else ""
    wait_after = waiting.replace("WAIT_", "WAIT2_") if wait == "after" else ""
    if not commit:
        commit_mc = ""
    init = ""
    if tinit is not None:
        c0, nn = tinit
        regs = ", ".join(f"%r{40 + i}" for i in range(8))
        init = f"""  ld.param.u64 %rd7, [tinit];
  cvta.to.global.u64 %rd7, %rd7;
  mad.lo.u32 %r15, %r30, 128, %r1;
  mul.wide.u32 %rd8, %r15, {nn * 4};
  add.u64 %rd7, %rd7, %rd8;
  shl.b32 %r14, %r9, 21;
  add.u32 %r14, %r14, %r12;
  add.u32 %r14, %r14, {c0};
  mov.u32 %r16, 0;
TINIT:
  ld.global.v4.u32 {{%r40, %r41, %r42, %r43}}, [%rd7];
  ld.global.v4.u32 {{%r44, %r45, %r46, %r47}}, [%rd7+16];
  add.u32 %r17, %r14, %r16;
  tcgen05.st.sync.aligned.32x32b.x8.b32 [%r17], {{{regs}}};
  add.u64 %rd7, %rd7, 32;
  add.u32 %r16, %r16, 8;
  setp.lt.u32 %p5, %r16, {nn};
  @%p5 bra TINIT;
  tcgen05.wait::st.sync.aligned;
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
{cluster_sync}  tcgen05.fence::after_thread_sync;
"""
    return f""".version {version}
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 img, .param .u32 nbytes, .param .u64 out, .param .u64 args, .param .u64 tinit)
{{
  .reg .b32 %r<64>;
  .reg .b64 %rd<32>;
  .reg .pred %p<16>;
  .reg .b16 %rs<4>;
  .shared .align 1024 .b8 smem[{smem}];
  .shared .align 8 .b64 bar;
  .shared .align 4 .b32 tslot;
  mov.u32 %r1, %tid.x;
  mov.u32 %r30, %cluster_ctarank;
  ld.param.u64 %rd1, [img];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u32 %r2, [nbytes];
  mul.wide.u32 %rd2, %r30, %r2;
  add.u64 %rd1, %rd1, %rd2;
  shl.b32 %r3, %r1, 4;
COPY:
  setp.ge.u32 %p1, %r3, %r2;
  @%p1 bra COPIED;
  cvt.u64.u32 %rd2, %r3;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.v4.u32 {{%r4, %r5, %r6, %r7}}, [%rd3];
  mov.u32 %r8, smem;
  add.u32 %r8, %r8, %r3;
  st.shared.v4.u32 [%r8], {{%r4, %r5, %r6, %r7}};
  add.u32 %r3, %r3, 2048;
  bra COPY;
COPIED:
  fence.proxy.async.shared::cta;
  shr.u32 %r9, %r1, 5;
  setp.eq.u32 %p2, %r9, 0;
  @!%p2 bra ALLOCATED;
  mov.u32 %r10, tslot;
  tcgen05.alloc.cta_group::{cg}.sync.aligned.shared::cta.b32 [%r10], {ncols};
  tcgen05.relinquish_alloc_permit.cta_group::{cg}.sync.aligned;
ALLOCATED:
  setp.eq.u32 %p3, %r1, 0;
  mov.u32 %r11, bar;
  @!%p3 bra INITED;
  mbarrier.init.shared::cta.b64 [%r11], 1;
INITED:
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
{cluster_sync}  tcgen05.fence::after_thread_sync;
  ld.shared.u32 %r12, [tslot];
{init}  setp.eq.and.u32 %p6, %r30, {issuer_rank}, %p3;
  @!%p6 bra ISSUED;
  ld.param.u64 %rd4, [args];
  cvta.to.global.u64 %rd4, %rd4;
{issue}
{commit_mc}ISSUED:
{wait_before}  tcgen05.fence::after_thread_sync;
  shl.b32 %r14, %r9, 21;
  add.u32 %r14, %r14, %r12;
  ld.param.u64 %rd5, [out];
  cvta.to.global.u64 %rd5, %rd5;
  mad.lo.u32 %r15, %r30, 128, %r1;
  mul.wide.u32 %rd6, %r15, {ncols * 4};
  add.u64 %rd5, %rd5, %rd6;
  mov.u32 %r16, 0;
DUMP:
  add.u32 %r17, %r14, %r16;
  tcgen05.ld.sync.aligned.32x32b.x8.b32 {{%r40, %r41, %r42, %r43, %r44, %r45, %r46, %r47}}, [%r17];
  tcgen05.wait::ld.sync.aligned;
  st.global.v4.u32 [%rd5], {{%r40, %r41, %r42, %r43}};
  st.global.v4.u32 [%rd5+16], {{%r44, %r45, %r46, %r47}};
  add.u64 %rd5, %rd5, 32;
  add.u32 %r16, %r16, 8;
  setp.lt.u32 %p5, %r16, {ncols};
  @%p5 bra DUMP;
{wait_after}  tcgen05.fence::before_thread_sync;
  bar.sync 0;
{cluster_sync}  @!%p2 bra END;
  tcgen05.dealloc.cta_group::{cg}.sync.aligned.b32 %r12, {ncols};
END:
  ret;
}}
"""


def arg(i: int, reg: str) -> str:
    return f"  ld.global.u64 {reg}, [%rd4+{8 * i}];"


def tmem_at(col: int, reg: str, lane: int = 0) -> str:
    return f"  add.u32 {reg}, %r12, {(lane << 16) | col};"


def run(ptx: str, images, args, ncols: int = 256, cg: int = 1, seed=None, params=None, tinit=None):
    """Run the kernel; returns the TMEM dump (nctas, 128, ncols) uint32 and the Result.  ``tinit``: the
    (nctas, 128, n) uint32 words stored into TMEM before the MMA (kernel(..., tinit=(col, n)))."""
    check_ptxas(ptx)
    images = [np.asarray(im, dtype=np.uint8) for im in (images if isinstance(images, list) else [images])]
    nbytes = max(len(im) for im in images)
    nbytes = (nbytes + 15) // 16 * 16
    img = np.zeros((len(images), nbytes), np.uint8)
    for i, im in enumerate(images):
        img[i, :len(im)] = im
    out = np.zeros((cg, 128, ncols), np.uint32)
    launch = Launch(ptx=ptx, grid=(cg, 1, 1), cluster=(cg, 1, 1), block=(128, 1, 1),
                    args=[img.reshape(-1), nbytes, out, np.asarray(args, dtype=np.uint64),
                          np.zeros(8, np.uint32) if tinit is None else np.ascontiguousarray(tinit, np.uint32)])
    res = run_launch(launch, seed=seed, tensor_pipe_params=params)
    return res.outputs[2], res


# ---------------------------------------------------------------------------------------------- layout model
def model_swizzle(a: int, swz: str) -> int:
    """tcgen05_layouts.md (b'): XOR of the absolute address; W=32 bit4^=bit7, W=64 bits[5:4]^=bits[8:7], W=128
    bits[6:4]^=bits[9:7]; mode 1 (128B with 32B atoms) CuTe Swizzle<2,5,2>: bits[6:5]^=bits[8:7]."""
    if swz == "none":
        return a
    if swz == "32B":
        return a ^ (((a >> 7) & 1) << 4)
    if swz == "64B":
        return a ^ (((a >> 7) & 3) << 4)
    if swz == "128B":
        return a ^ (((a >> 7) & 7) << 4)
    if swz == "128B_base32B":
        return a ^ (((a >> 7) & 3) << 5)
    raise AssertionError(swz)


WIDTH = {"none": 16, "32B": 32, "64B": 64, "128B": 128, "128B_base32B": 128}


def model_addr(mn: int, k: int, ebits: int, major: str, swz: str, start: int, lbo: int, sbo: int):
    """(byte address, bit offset) of element (mn, k): the table of tcgen05_layouts.md (b'), scalar form."""
    W = WIDTH[swz]
    if major == "K":
        kbit = k * ebits
        kb, bit = kbit // 8, kbit % 8
        if swz == "none":
            lin = start + (mn % 8) * 16 + (mn // 8) * sbo + (kb % 16) + (kb // 16) * lbo
        else:
            lin = start + (mn % 8) * W + (mn // 8) * sbo + kb
    else:
        mbit = mn * ebits
        mb, bit = mbit // 8, mbit % 8
        if swz == "none":
            lin = start + (mb % 16) + (mb // 16) * sbo + (k % 8) * 16 + (k // 8) * lbo
        elif swz == "128B_base32B":
            lin = start + (mb % 128) + (mb // 128) * lbo + (k % 4) * 128 + (k // 4) * sbo
        else:
            lin = start + (mb % W) + (mb // W) * lbo + (k % 8) * W + (k // 8) * sbo
    return model_swizzle(lin, swz), bit


def strides(rows: int, k: int, ebits: int, major: str, swz: str, variant: int = 0) -> tuple:
    """A dense (lbo, sbo) choice for an operand of rows x k elements, and its size in bytes."""
    kbytes = k * ebits // 8
    if major == "K":
        if swz == "none":
            groups = rows // 8
            if variant == 0:                      # core matrices of one K chunk contiguous along MN
                return groups * 128, 128, groups * 128 * (kbytes // 16)
            return 128, 128 * (kbytes // 16), groups * 128 * (kbytes // 16)   # K chunks adjacent
        W = WIDTH[swz]
        return 16, 8 * W, (rows // 8) * 8 * W
    mbytes = rows * ebits // 8
    if swz == "none":
        chunks = mbytes // 16
        kg = (k + 7) // 8
        if variant == 0:
            return chunks * 128, 128, chunks * 128 * kg        # lbo = next 8-K group, sbo = next MN chunk
        return 128, kg * 128, chunks * 128 * kg
    if swz == "128B_base32B":
        atoms = (mbytes + 127) // 128
        kg = (k + 3) // 4
        return 512 * kg, 512, atoms * 512 * kg                  # lbo = next MN atom, sbo = next 4-K group
    W = WIDTH[swz]
    atoms = (mbytes + W - 1) // W
    kg = (k + 7) // 8
    if variant == 0:
        return 8 * W * kg, 8 * W, atoms * 8 * W * kg           # lbo = next MN atom, sbo = next 8-K group
    return 8 * W, 8 * W * atoms, atoms * 8 * W * kg


def place(img: np.ndarray, codes: np.ndarray, ebits: int, major: str, swz: str, start: int, lbo: int,
          sbo: int) -> None:
    """Write the containers ``codes`` (rows x k) into ``img`` at their model addresses."""
    rows, k = codes.shape
    nb = max(ebits // 8, 1)
    for mn in range(rows):
        for kk in range(k):
            a, bit = model_addr(mn, kk, ebits, major, swz, start, lbo, sbo)
            v = int(codes[mn, kk])
            if ebits == 4:
                img[a] = (int(img[a]) & ~(0xF << bit) | (v << bit)) & 0xFF
            else:
                img[a:a + nb] = np.frombuffer(v.to_bytes(nb, "little"), np.uint8)


#: the shared address of the kernels' ``smem`` buffer (their first shared variable): the first user byte of the shared
#: window, 0x400, as on the H100 (tests/hw/golden_h100/address_layout.json; tcsim.address_map)
SMEM_BASE = 0x400


def desc(start: int, lbo: int, sbo: int, swz: str) -> int:
    """The SMEM descriptor of an operand at byte ``start`` of the ``smem`` buffer."""
    return SmemDescriptor(start_address=SMEM_BASE + start, lbo=lbo, sbo=sbo, swizzle=swz).encode()


# ---------------------------------------------------------------------------------------------- D layout model
def d_cells(m: int, n: int, cg: int = 1, ws: bool = False, lane_base: int = 0):
    """TMEM (lane, column) of D[i][j] of one CTA (tcgen05_layouts.md (c)), as arrays (rows, n)."""
    if cg == 2:
        rows = m // 2
    else:
        rows = m
    i = np.arange(rows)[:, None]
    j = np.arange(n)[None, :]
    if cg == 1 and not ws and m == 64:
        return np.broadcast_to(32 * (i // 16) + i % 16 + lane_base, (rows, n)), np.broadcast_to(j, (rows, n))
    if (cg == 2 and m == 128) or (ws and m == 64):
        return i + 64 * (j // (n // 2)), j % (n // 2)
    if ws and m == 32:
        return i + 32 * (j // (n // 4)), j % (n // 4)
    return np.broadcast_to(i, (rows, n)), np.broadcast_to(j, (rows, n))


def read_d(dump: np.ndarray, m: int, n: int, col: int, cg: int = 1, ws: bool = False, lane_base: int = 0):
    ln, cl = d_cells(m, n, cg, ws, lane_base)
    return dump[ln, col + cl]


# ---------------------------------------------------------------------------------------------- operands
def rand_codes(fmt: str, shape, rng) -> np.ndarray:
    """Random finite codes of a format (small magnitudes so sums stay in range)."""
    if fmt in ("f16", "bf16"):
        dt = np.float16 if fmt == "f16" else ml_dtypes.bfloat16
        return (rng.standard_normal(shape) * 2).astype(dt).view(np.uint16)
    if fmt == "tf32":
        return rng.standard_normal(shape).astype(np.float32).view(np.uint32)
    if fmt in ("e4m3", "e5m2"):
        dt = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
        return (rng.standard_normal(shape) * 4).astype(dt).view(np.uint8)
    if fmt in ("e3m2", "e2m3"):
        return rng.integers(0, 64, shape).astype(np.uint8)
    if fmt == "e2m1":
        return rng.integers(0, 16, shape).astype(np.uint8)
    if fmt in ("s8", "u8"):
        return rng.integers(0, 256, shape).astype(np.uint8)
    raise AssertionError(fmt)


def to_container(codes: np.ndarray, fmt: str, kind: str) -> np.ndarray:
    """tcgen05_layouts.md (c): in kind::f8f6f4 / mxf8f6f4, E2M1 sits in bits [5:2] of its byte, fp6 in [5:0]."""
    if fmt == "e2m1" and kind in ("f8f6f4", "mxf8f6f4"):
        return (codes.astype(np.uint8) << 2).astype(np.uint8)
    return codes


EBITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "e3m2": 8, "e2m3": 8, "e2m1": 8, "s8": 8,
         "u8": 8}


def operands(kind, a_fmt, b_fmt, m_rows, n_rows, k, a_major, b_major, swz_a, swz_b, rng, variant=0,
             a_start=0, b_base=None):
    """Random A (m_rows x k) and B (n_rows x k, stored N x K) codes, an SMEM image holding both, descriptors."""
    ea = 4 if kind in ("mxf4", "mxf4nvf4") else EBITS[a_fmt]
    eb = 4 if kind in ("mxf4", "mxf4nvf4") else EBITS[b_fmt]
    A = rand_codes(a_fmt, (m_rows, k), rng)
    B = rand_codes(b_fmt, (n_rows, k), rng)
    lbo_a, sbo_a, size_a = strides(m_rows, k, ea, a_major, swz_a, variant)
    lbo_b, sbo_b, size_b = strides(n_rows, k, eb, b_major, swz_b, variant)
    if b_base is None:
        b_base = (a_start + size_a + 1023) // 1024 * 1024
    img = np.zeros(b_base + size_b + 64, np.uint8)
    place(img, to_container(A, a_fmt, kind), ea, a_major, swz_a, a_start, lbo_a, sbo_a)
    place(img, to_container(B, b_fmt, kind), eb, b_major, swz_b, b_base, lbo_b, sbo_b)
    return A, B, img, desc(a_start, lbo_a, sbo_a, swz_a), desc(b_base, lbo_b, sbo_b, swz_b)


def checked(kind, a_fmt, b_fmt, acc, scale_fmt=None, scale_block=None):
    """sm_100a tensor-core parameters whose numerics reproduce mmasim's recorded outputs for this form."""
    return oracle_replay.checked_params(kind, a_fmt, b_fmt, acc, scale_fmt, scale_block)


def exact_i8(A, B, C, a_signed: bool, b_signed: bool, sat: bool) -> np.ndarray:
    """kind::i8 D bits by exact integer arithmetic (PTX ISA §9.7.16: wrap modulo 2**32, or clamp with .satfinite);
    A (M,K) and B stored (N,K) as 8-bit codes."""
    def ints(x, signed):
        x = np.asarray(x).astype(np.int64) & 0xFF
        return (x ^ 0x80) - 0x80 if signed else x
    wide = ints(A, a_signed) @ ints(B, b_signed).T + np.asarray(C).astype(np.int64)
    d = np.clip(wide, -2**31, 2**31 - 1) if sat else (wide + 2**31) % 2**32 - 2**31
    return d.astype(np.int32).view(np.uint32)


def oracle(kind, A, B, a_fmt, b_fmt, d_fmt, C=None, **kw):
    """D bits from the numerics oracle; A (M,K) codes, B stored (N,K)."""
    m, n = A.shape[0], B.shape[0]
    if kind == "i8":
        c = np.zeros((m, n), np.int32) if C is None else C
        return exact_i8(A, B, c, a_fmt == "s8", b_fmt == "s8", kw.get("sat", False))
    acc = np.uint16 if d_fmt == "f16" else np.uint32
    c = np.zeros((m, n), acc) if C is None else C
    d = mma_float(A, B.T.copy(), c, a_fmt, b_fmt, d_fmt, checked(kind, a_fmt, b_fmt, d_fmt))
    return d.astype(np.uint32)


def mma_issue(kind_quals: str, d_col: int, a_tmem_col=None, extra_ops: str = "", enable: str = "0",
              tail: str = "", nargs_base: int = 0, cg: int = 1, ws: bool = False, d_lane: int = 0) -> str:
    """Thread-0 code for one MMA with args[nargs_base..] = (a-desc, b-desc, idesc)."""
    lines = [arg(nargs_base, "%rd10"), arg(nargs_base + 1, "%rd11"), arg(nargs_base + 2, "%rd12"),
             "  cvt.u32.u64 %r20, %rd12;", tmem_at(d_col, "%r21", d_lane)]
    a = "%rd10"
    if a_tmem_col is not None:
        lines.append(tmem_at(a_tmem_col, "%r22", d_lane))
        a = "[%r22]"
    ws_q = "ws." if ws else ""
    lines.append(f"  tcgen05.mma.{ws_q}cta_group::{cg}.{kind_quals} [%r21], {a}, %rd11, %r20{extra_ops}, "
                 f"{enable}{tail};")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- f16 / bf16
LAYOUTS = [("K", "K", "none", "none", 0), ("K", "K", "none", "none", 1), ("K", "K", "32B", "32B", 0),
           ("K", "K", "64B", "64B", 0), ("K", "K", "128B", "128B", 0), ("MN", "MN", "none", "none", 0),
           ("MN", "MN", "none", "none", 1), ("MN", "MN", "32B", "32B", 0), ("MN", "MN", "64B", "64B", 1),
           ("MN", "K", "128B", "64B", 0), ("K", "MN", "32B", "128B", 0)]


@pytest.mark.parametrize("a_major, b_major, swz_a, swz_b, variant", LAYOUTS)
def test_f16_layouts(a_major, b_major, swz_a, swz_b, variant):
    rng = np.random.default_rng(hash((a_major, b_major, swz_a, swz_b, variant)) % 2**32)
    M, N, K = 128, 32, 16
    A, B, img, da, db = operands("f16", "bf16", "bf16", M, N, K, a_major, b_major, swz_a, swz_b, rng, variant)
    idesc = InstrDescriptor.for_kind("f16", M, N, "bf16", "bf16", "f32", a_major=int(a_major == "MN"),
                                     b_major=int(b_major == "MN")).encode()
    dump, _ = run(kernel(mma_issue("kind::f16", 0), ncols=32), img, [da, db, idesc], ncols=32)
    got = read_d(dump[0], M, N, 0)
    exp = oracle("f16", A, B, "bf16", "bf16", "f32")
    assert np.array_equal(got, exp)
    # and the values are a matmul to within f32 rounding
    af = A.view(ml_dtypes.bfloat16).astype(np.float64)
    bf = B.view(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_allclose(got.view(np.float32), af @ bf.T, rtol=1e-5, atol=1e-5)


def idesc_for(kind, m, n, a, b, d, **kw):
    return InstrDescriptor.for_kind(kind, m, n, a, b, d, **kw).encode()


def test_f16_accumulator_is_low_half_of_cell():
    rng = np.random.default_rng(3)
    M, N, K = 128, 16, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "128B", "128B", rng)
    tinit = np.full((1, 128, 16), 0xFFFFFFFF, np.uint32)          # garbage in the cells before the MMA
    dump, _ = run(kernel(mma_issue("kind::f16", 0), ncols=32, tinit=(0, 16)), img,
                  [da, db, idesc_for("f16", M, N, "f16", "f16", "f16")], ncols=32, tinit=tinit)
    got = read_d(dump[0], M, N, 0)
    assert (got >> 16 == 0).all()
    assert np.array_equal(got, oracle("f16", A, B, "f16", "f16", "f16"))


@pytest.mark.parametrize("major, swz", [("K", "128B"), ("K", "none"), ("MN", "128B_base32B")])
def test_tf32(major, swz):
    rng = np.random.default_rng(4)
    M, N, K = 128, 24, 8
    A, B, img, da, db = operands("tf32", "tf32", "tf32", M, N, K, major, major, swz, swz, rng)
    idesc = idesc_for("tf32", M, N, "tf32", "tf32", "f32", a_major=int(major == "MN"), b_major=int(major == "MN"))
    dump, _ = run(kernel(mma_issue("kind::tf32", 0), ncols=32), img, [da, db, idesc], ncols=32)
    assert np.array_equal(read_d(dump[0], M, N, 0), oracle("tf32", A, B, "tf32", "tf32", "f32"))


@pytest.mark.parametrize("a_fmt, b_fmt, d_fmt, swz", [("e4m3", "e5m2", "f32", "128B"), ("e2m1", "e3m2", "f32", "none"),
                                                      ("e2m3", "e2m1", "f32", "64B"), ("e5m2", "e4m3", "f16", "32B")])
def test_f8f6f4(a_fmt, b_fmt, d_fmt, swz):
    rng = np.random.default_rng(5)
    M, N, K = 128, 32, 32
    A, B, img, da, db = operands("f8f6f4", a_fmt, b_fmt, M, N, K, "K", "K", swz, swz, rng)
    dump, _ = run(kernel(mma_issue("kind::f8f6f4", 0), ncols=32), img,
                  [da, db, idesc_for("f8f6f4", M, N, a_fmt, b_fmt, d_fmt)], ncols=32)
    assert np.array_equal(read_d(dump[0], M, N, 0), oracle("f8f6f4", A, B, a_fmt, b_fmt, d_fmt))


def test_f8_mn_major_b():
    rng = np.random.default_rng(6)
    M, N, K = 128, 32, 32
    A, B, img, da, db = operands("f8f6f4", "e4m3", "e4m3", M, N, K, "MN", "MN", "64B", "none", rng)
    idesc = idesc_for("f8f6f4", M, N, "e4m3", "e4m3", "f32", a_major=1, b_major=1)
    dump, _ = run(kernel(mma_issue("kind::f8f6f4", 0), ncols=32), img, [da, db, idesc], ncols=32)
    assert np.array_equal(read_d(dump[0], M, N, 0), oracle("f8f6f4", A, B, "e4m3", "e4m3", "f32"))


@pytest.mark.parametrize("sat", [False, True])
def test_i8_accumulate_wrap_and_saturate(sat):
    rng = np.random.default_rng(7)
    M, N, K = 128, 32, 32
    A, B, img, da, db = operands("i8", "s8", "u8", M, N, K, "K", "K", "128B", "128B", rng)
    C = rng.integers(-2**31, 2**31, (M, N)).astype(np.int64)
    C[:, :8] = 2**31 - 5                                      # near the limits: wraps or saturates
    C[:, 8:16] = -2**31 + 5
    C = C.astype(np.int32)
    tinit = np.zeros((1, 128, 32), np.uint32)
    tinit[0, :, :] = C.view(np.uint32)
    idesc = idesc_for("i8", M, N, "s8", "u8", "s32", saturate=int(sat))
    dump, _ = run(kernel(mma_issue("kind::i8", 0, enable="1"), ncols=32, tinit=(0, 32)), img, [da, db, idesc],
                  ncols=32, tinit=tinit)
    got = read_d(dump[0], M, N, 0)
    exp = exact_i8(A, B, C, True, False, sat)
    assert np.array_equal(got, exp)
    wide = A.view(np.int8).astype(np.int64) @ B.astype(np.int64).T + C
    assert np.array_equal(got.view(np.int32), np.clip(wide, -2**31, 2**31 - 1) if sat
                          else ((wide + 2**31) % 2**32 - 2**31))


def test_m64_layout_f_two_accumulators_share_columns():
    """M = 64 (layout F): lane base 0 and 16 put two accumulators in the same columns."""
    rng = np.random.default_rng(8)
    M, N, K = 64, 16, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "64B", "64B", rng)
    A2 = rand_codes("f16", (M, K), rng)
    lbo, sbo, size = strides(M, K, 16, "K", "64B")
    a2_base = 8192
    img2 = np.zeros(a2_base + size, np.uint8)
    img2[:len(img)] = img
    place(img2, A2, 16, "K", "64B", a2_base, lbo, sbo)
    da2 = desc(a2_base, lbo, sbo, "64B")
    idesc = idesc_for("f16", M, N, "f16", "f16", "f32")
    issue = "\n".join([mma_issue("kind::f16", 0),
                       arg(3, "%rd13"), "  add.u32 %r23, %r12, 0x100000;",      # lane 16
                       "  tcgen05.mma.cta_group::1.kind::f16 [%r23], %rd13, %rd11, %r20, 0;"])
    dump, _ = run(kernel(issue, ncols=32), img2, [da, db, idesc, da2], ncols=32)
    assert np.array_equal(read_d(dump[0], M, N, 0, lane_base=0), oracle("f16", A, B, "f16", "f16", "f32"))
    assert np.array_equal(read_d(dump[0], M, N, 0, lane_base=16), oracle("f16", A2, B, "f16", "f16", "f32"))


def test_accumulate_over_k_by_advancing_start_address():
    """Two K=16 slices of a K=32 operand in one 128B-swizzled atom: the second MMA's descriptors advance the
    start address by 32 bytes (CUTLASS / DeepGEMM), with enable-input-d from a predicate register."""
    rng = np.random.default_rng(9)
    M, N, K = 128, 64, 32
    A, B, img, da, db = operands("f16", "bf16", "bf16", M, N, K, "K", "K", "128B", "128B", rng)
    idesc = idesc_for("f16", M, N, "bf16", "bf16", "f32")
    issue = "\n".join([mma_issue("kind::f16", 0),
                       "  add.u64 %rd10, %rd10, 2;", "  add.u64 %rd11, %rd11, 2;",   # +32 bytes (field >> 4)
                       "  setp.ne.u32 %p10, %r20, 0;",
                       "  tcgen05.mma.cta_group::1.kind::f16 [%r21], %rd10, %rd11, %r20, %p10;"])
    dump, _ = run(kernel(issue, ncols=64), img, [da, db, idesc], ncols=64)
    p = checked("f16", "bf16", "bf16", "f32")
    d1 = mma_float(A[:, :16], B[:, :16].T.copy(), np.zeros((M, N), np.uint32), "bf16", "bf16", "f32", p)
    d2 = mma_float(A[:, 16:], B[:, 16:].T.copy(), d1, "bf16", "bf16", "f32", p)
    assert np.array_equal(read_d(dump[0], M, N, 0), d2)


def test_negate_and_wide_n():
    rng = np.random.default_rng(10)
    M, N, K = 128, 256, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "128B", "none", rng)
    idesc = idesc_for("f16", M, N, "f16", "f16", "f32", negate_a=1)
    dump, _ = run(kernel(mma_issue("kind::f16", 0)), img, [da, db, idesc])
    assert np.array_equal(read_d(dump[0], M, N, 0), oracle("f16", A ^ np.uint16(0x8000), B, "f16", "f16", "f32"))


def test_n8_at_column_offset():
    rng = np.random.default_rng(11)
    M, N, K = 128, 8, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "32B", "32B", rng)
    dump, _ = run(kernel(mma_issue("kind::f16", 40), ncols=64), img,
                  [da, db, idesc_for("f16", M, N, "f16", "f16", "f32")], ncols=64)
    assert np.array_equal(read_d(dump[0], M, N, 40), oracle("f16", A, B, "f16", "f16", "f32"))
    untouched = np.ones((128, 64), bool)
    untouched[:, 40:48] = False
    assert (dump[0][untouched] == 0).all()


# ---------------------------------------------------------------------------------------------- CTA pairs, .ws
@pytest.mark.parametrize("m, n", [(256, 64), (128, 64)])
def test_cta_group_2(m, n):
    """CTA v of the pair holds A rows [vM/2, (v+1)M/2) and B columns [vN/2, (v+1)N/2) at the same SMEM offsets and
    receives D rows [vM/2, ...) x all N (layout A for M=256, layout B "2x2" for M=128)."""
    rng = np.random.default_rng(12)
    K = 16
    parts = [operands("f16", "bf16", "bf16", m // 2, n // 2, K, "K", "K", "128B", "128B", rng) for _ in range(2)]
    A = np.concatenate([p[0] for p in parts])
    B = np.concatenate([p[1] for p in parts])
    assert parts[0][3] == parts[1][3] and parts[0][4] == parts[1][4]
    idesc = idesc_for("f16", m, n, "bf16", "bf16", "f32")
    ptx = kernel(mma_issue("kind::f16", 0, cg=2), ncols=64, cg=2)
    dump, _ = run(ptx, [parts[0][2], parts[1][2]], [parts[0][3], parts[0][4], idesc], ncols=64, cg=2)
    exp = oracle("f16", A, B, "bf16", "bf16", "f32")
    for v in range(2):
        got = read_d(dump[v], m, n, 0, cg=2)
        assert np.array_equal(got, exp[v * m // 2:(v + 1) * m // 2])


@pytest.mark.parametrize("m", [128, 64, 32])
def test_ws_layouts(m):
    rng = np.random.default_rng(13)
    n, K = 64, 32
    A, B, img, da, db = operands("f8f6f4", "e4m3", "e4m3", m, n, K, "K", "K", "128B", "64B", rng)
    dump, _ = run(kernel(mma_issue("kind::f8f6f4", 0, ws=True), ncols=64), img,
                  [da, db, idesc_for("f8f6f4", m, n, "e4m3", "e4m3", "f32")], ncols=64)
    assert np.array_equal(read_d(dump[0], m, n, 0, ws=True), oracle("f8f6f4", A, B, "e4m3", "e4m3", "f32"))


# ---------------------------------------------------------------------------------------------- A in TMEM
def a_tmem_words(A_cont: np.ndarray, ebits: int, lanes: list, ncols: int = 8) -> np.ndarray:
    """tcgen05_layouts.md (c) "A in TMEM": row i at lane lanes[i] (and every copy), element k in column
    k*ebits//32 at bit (k*ebits)%32."""
    words = np.zeros((128, ncols), np.uint32)
    rows, k = A_cont.shape
    for lane_of in lanes:
        for i in range(rows):
            for kk in range(k):
                c, b = (kk * ebits) // 32, (kk * ebits) % 32
                words[lane_of(i), c] |= np.uint32(int(A_cont[i, kk]) << b)
    return words


@pytest.mark.parametrize("case", ["m128", "m64_lane16", "ws_m32", "mxf4"])
def test_a_from_tmem(case):
    rng = np.random.default_rng(14)
    kind, fmt, quals, ws, lane_base, m, n = {
        "m128": ("f16", "bf16", "kind::f16", False, 0, 128, 32),
        "m64_lane16": ("tf32", "tf32", "kind::tf32", False, 16, 64, 32),
        "ws_m32": ("i8", "s8", "kind::i8", True, 0, 32, 64),
        "mxf4": ("mxf4", "e2m1", "kind::mxf4.block_scale", False, 0, 128, 16),
    }[case]
    K = {"f16": 16, "tf32": 8, "i8": 32, "mxf4": 64}[kind]
    ebits = 4 if kind == "mxf4" else EBITS[fmt]
    A, B, img, da, db = operands(kind, fmt, fmt, m, n, K, "K", "K", "none", "128B" if ebits >= 8 else "none", rng)
    if case == "m64_lane16":
        lanes = [lambda i: 32 * (i // 16) + i % 16 + 16]
    elif case == "ws_m32":
        lanes = [lambda i, q=q: i + 32 * q for q in range(4)]   # one copy per D column part
    else:
        lanes = [lambda i: i]
    tinit = np.zeros((1, 128, 16), np.uint32)
    tinit[0, :, 8:16] = a_tmem_words(A, ebits, lanes)
    extra = ""
    if kind == "mxf4":
        idesc = InstrDescriptorBlockScaled.for_kind("mxf4", m, n, "e2m1", "e2m1").encode()
        sfa = rng.integers(120, 134, (m, 2)).astype(np.uint8)
        sfb = rng.integers(120, 134, (n, 2)).astype(np.uint8)
        tinit[0, :, 0:4] = sf_words(sfa, 0)
        tinit[0, :, 4:8] = sf_words(sfb, 0)
        extra = ", [%r24], [%r25]"
        issue_pre = tmem_at(0, "%r24") + "\n" + tmem_at(4, "%r25") + "\n"
    else:
        d = "s32" if kind == "i8" else "f32"
        idesc = idesc_for(kind, m, n, fmt, fmt, d)
        issue_pre = ""
    issue = issue_pre + mma_issue(quals, 16, a_tmem_col=8, ws=ws, d_lane=lane_base, extra_ops=extra)
    dump, _ = run(kernel(issue, ncols=64, tinit=(0, 16)), img, [da, db, idesc], ncols=64, tinit=tinit)
    got = read_d(dump[0], m, n, 16, ws=ws, lane_base=lane_base)
    if kind == "mxf4":
        p = checked("mxf4", "e2m1", "e2m1", "f32", "ue8m0", 32)
        exp = mma_block_scaled(A, B.T.copy(), np.zeros((m, n), np.uint32), sfa, sfb.T.copy(), "e2m1", "e2m1",
                               "ue8m0", 32, p)
    else:
        exp = oracle(kind, A, B, fmt, fmt, "s32" if kind == "i8" else "f32")
    assert np.array_equal(got, exp)


# ---------------------------------------------------------------------------------------------- block scaling
def sf_words(sf: np.ndarray, sf_id: int, ncols: int = 4, half: int | None = None) -> np.ndarray:
    """tcgen05_layouts.md (c): factor s of row r at lane (r%32)+32p (p = 0..3), column r//32, byte sf_id+s."""
    words = np.zeros((128, ncols), np.uint32)
    rows, nsf = sf.shape
    for r in range(rows):
        for p in range(4):
            for s in range(nsf):
                words[r % 32 + 32 * p, r // 32] |= np.uint32(int(sf[r, s]) << (8 * (sf_id + s)))
    return words


@pytest.mark.parametrize("kind, quals, a_fmt, b_fmt, scale, sfa_id, sfb_id, n", [
    ("mxf8f6f4", "kind::mxf8f6f4.block_scale", "e4m3", "e2m1", "ue8m0", 1, 3, 64),
    ("mxf8f6f4", "kind::mxf8f6f4.block_scale.scale_vec::1X", "e3m2", "e5m2", "ue8m0", 0, 2, 32),
    ("mxf4", "kind::mxf4.block_scale.block32", "e2m1", "e2m1", "ue8m0", 2, 0, 64),
    ("mxf4nvf4", "kind::mxf4nvf4.block_scale.scale_vec::4X", "e2m1", "e2m1", "ue4m3", 0, 0, 128),
    ("mxf4nvf4", "kind::mxf4nvf4.block_scale.block16", "e2m1", "e2m1", "ue8m0", 0, 0, 32),
    ("mxf4nvf4", "kind::mxf4nvf4.block_scale.scale_vec::2X", "e2m1", "e2m1", "ue8m0", 2, 2, 32),
])
def test_block_scaled(kind, quals, a_fmt, b_fmt, scale, sfa_id, sfb_id, n):
    rng = np.random.default_rng(15)
    m = 128
    K = 32 if kind == "mxf8f6f4" else 64
    sb = 16 if ("4X" in quals or "block16" in quals) else 32
    swz = "128B" if kind == "mxf8f6f4" else "none"
    A, B, img, da, db = operands(kind, a_fmt, b_fmt, m, n, K, "K", "K", swz, swz, rng)
    if scale == "ue8m0":
        sfa = rng.integers(118, 136, (m, K // sb)).astype(np.uint8)
        sfb = rng.integers(118, 136, (n, K // sb)).astype(np.uint8)
    else:
        sfa = rng.integers(0x20, 0x50, (m, K // sb)).astype(np.uint8)
        sfb = rng.integers(0x20, 0x50, (n, K // sb)).astype(np.uint8)
    tinit = np.zeros((1, 128, 8), np.uint32)
    tinit[0, :, 0:4] = sf_words(sfa, sfa_id)
    tinit[0, :, 4:8] = sf_words(sfb, sfb_id)
    idesc = InstrDescriptorBlockScaled.for_kind(kind, m, n, a_fmt, b_fmt, scale, sfa_id=sfa_id,
                                                sfb_id=sfb_id).encode()
    issue = tmem_at(0, "%r24") + "\n" + tmem_at(4, "%r25") + "\n" + mma_issue(quals, 32, extra_ops=", [%r24], [%r25]")
    dump, _ = run(kernel(issue, ncols=256 if n > 64 else 128, tinit=(0, 8)), img, [da, db, idesc],
                  ncols=256 if n > 64 else 128, tinit=tinit)
    p = checked(kind, a_fmt, b_fmt, "f32", scale, sb)
    exp = mma_block_scaled(A, B.T.copy(), np.zeros((m, n), np.uint32), sfa, sfb.T.copy(), a_fmt, b_fmt, scale, sb, p)
    assert (exp != 0).mean() > 0.5
    assert np.array_equal(read_d(dump[0], m, n, 32), exp)


def test_block_scale_replicas_must_agree():
    rng = np.random.default_rng(16)
    m, n, K = 128, 32, 32
    A, B, img, da, db = operands("mxf8f6f4", "e4m3", "e4m3", m, n, K, "K", "K", "128B", "128B", rng)
    tinit = np.zeros((1, 128, 8), np.uint32)
    tinit[0, :, 0:4] = sf_words(np.full((m, 1), 127, np.uint8), 0)
    tinit[0, :, 4:8] = sf_words(np.full((n, 1), 127, np.uint8), 0)
    tinit[0, 64 + 5, 4] ^= 1                                   # SFB column 5, copy in subpartition 2
    idesc = InstrDescriptorBlockScaled.for_kind("mxf8f6f4", m, n, "e4m3", "e4m3").encode()
    issue = tmem_at(0, "%r24") + "\n" + tmem_at(4, "%r25") + "\n" + \
        mma_issue("kind::mxf8f6f4.block_scale", 32, extra_ops=", [%r24], [%r25]")
    with pytest.raises(VerifyError) as e:
        run(kernel(issue, ncols=64, tinit=(0, 8)), img, [da, db, idesc], ncols=64, tinit=tinit)
    assert "[rule sf-replicas]" in e.value.message
    assert "subpartitions 0 and 2" in e.value.message


# ---------------------------------------------------------------------------------------------- operands: lanes, scale
def test_disable_output_lane():
    rng = np.random.default_rng(17)
    M, N, K = 128, 16, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "none", "none", rng)
    masks = [0x0000FFFF, 0x80000001, 0, 0xFFFFFFFF]            # bit i of the 128-bit vector = lane i not written
    issue = "\n".join([f"  mov.u32 %r{31 + i}, {v};" for i, v in enumerate(masks)]) + "\n" + \
        mma_issue("kind::f16", 0, extra_ops=", {%r31, %r32, %r33, %r34}")
    tinit = np.full((1, 128, 16), 0x12345678, np.uint32)
    dump, _ = run(kernel(issue, ncols=32, tinit=(0, 16)), img, [da, db, idesc_for("f16", M, N, "f16", "f16", "f32")],
                  ncols=32, tinit=tinit)
    disabled = np.array([(masks[i // 32] >> (i % 32)) & 1 for i in range(128)], bool)
    got = read_d(dump[0], M, N, 0)
    exp = oracle("f16", A, B, "f16", "f16", "f32")
    assert np.array_equal(got[~disabled], exp[~disabled])
    assert (got[disabled] == 0x12345678).all()


def test_scale_input_d():
    rng = np.random.default_rng(18)
    M, N, K = 128, 16, 8
    A, B, img, da, db = operands("tf32", "tf32", "tf32", M, N, K, "K", "K", "32B", "32B", rng)
    C = (rng.standard_normal((M, N)) * 64).astype(np.float32)
    tinit = np.zeros((1, 128, 16), np.uint32)
    tinit[0] = C.view(np.uint32)
    dump, _ = run(kernel(mma_issue("kind::tf32", 0, enable="1", tail=", 3"), ncols=32, tinit=(0, 16)), img,
                  [da, db, idesc_for("tf32", M, N, "tf32", "tf32", "f32")], ncols=32, tinit=tinit)
    exp = oracle("tf32", A, B, "tf32", "tf32", "f32", C=(C / 8).astype(np.float32).view(np.uint32))
    assert np.array_equal(read_d(dump[0], M, N, 0), exp)


# ---------------------------------------------------------------------------------------------- collectors
def two_mmas(q1: str, q2: str, change_a: bool = False) -> str:
    """Two MMAs with the same A; between them thread 0 optionally rewrites A in SMEM (and fences)."""
    change = ""
    if change_a:              # after the first MMA completed (commit + wait), A[0][0] = 1.0 in SMEM
        change = "  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r11];\n" \
                 "W0:\n  mbarrier.try_wait.parity.shared::cta.b64 %p11, [%r11], 0;\n  @!%p11 bra W0;\n" \
                 "  mov.u32 %r35, smem;\n  mov.u16 %rs2, 0x3C00;\n  st.shared.u16 [%r35], %rs2;\n" \
                 "  fence.proxy.async.shared::cta;\n"
    return "\n".join([mma_issue(f"kind::f16{q1}", 0), change,
                      f"  tcgen05.mma.cta_group::1.kind::f16{q2} [%r21], %rd10, %rd11, %r20, 1;"])


def test_collector_fill_use_lastuse_give_plain_results():
    rng = np.random.default_rng(19)
    M, N, K = 128, 16, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "none", "none", rng)
    issue = two_mmas(".collector::a::fill", ".collector::a::use") + \
        "\n  tcgen05.mma.cta_group::1.kind::f16.collector::a::lastuse [%r21], %rd10, %rd11, %r20, 1;"
    dump, _ = run(kernel(issue, ncols=32), img, [da, db, idesc_for("f16", M, N, "f16", "f16", "f32")], ncols=32)
    p = checked("f16", "f16", "f16", "f32")
    d = np.zeros((M, N), np.uint32)
    for _ in range(3):
        d = mma_float(A, B.T.copy(), d, "f16", "f16", "f32", p)
    assert np.array_equal(read_d(dump[0], M, N, 0), d)


@pytest.mark.parametrize("q1, q2, change, msg", [
    (".collector::a::fill", ".collector::a::use", True, "its data in memory changed"),
    ("", ".collector::a::use", False, "empty collector buffer"),
    (".collector::a::fill", ".collector::a::lastuse", True, "its data in memory changed"),
])
def test_collector_misuse(q1, q2, change, msg):
    rng = np.random.default_rng(20)
    M, N, K = 128, 16, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "none", "none", rng)
    ptx = kernel(two_mmas(q1, q2, change), ncols=32, phases=2 if change else 1)
    with pytest.raises(SyncError) as e:
        run(ptx, img, [da, db, idesc_for("f16", M, N, "f16", "f16", "f32")], ncols=32)
    assert msg in e.value.message
    assert e.value.loc is not None and "collector::a::" + q2.split("::")[-1] in e.value.loc.text


# ---------------------------------------------------------------------------------------------- asynchrony
def test_racy_read_before_commit_sees_stale_tmem():
    """A kernel that reads D with tcgen05.ld before waiting on the commit's mbarrier sees the old TMEM."""
    rng = np.random.default_rng(21)
    M, N, K = 128, 32, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "none", "none", rng)
    tinit = np.full((1, 128, 32), 0xABCD0123, np.uint32)
    args = [da, db, idesc_for("f16", M, N, "f16", "f16", "f32")]
    racy, _ = run(kernel(mma_issue("kind::f16", 0), ncols=32, tinit=(0, 32), wait="after"), img, args, ncols=32,
                  tinit=tinit)
    assert (racy[0] == 0xABCD0123).all()
    good, _ = run(kernel(mma_issue("kind::f16", 0), ncols=32, tinit=(0, 32)), img, args, ncols=32, tinit=tinit)
    assert np.array_equal(read_d(good[0], M, N, 0), oracle("f16", A, B, "f16", "f16", "f32"))


def test_dealloc_before_completion_faults_at_the_mma():
    rng = np.random.default_rng(22)
    M, N, K = 128, 32, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "none", "none", rng)
    ptx = kernel(mma_issue("kind::f16", 0), ncols=32, wait="never")
    with pytest.raises(MemoryFault) as e:
        run(ptx, img, [da, db, idesc_for("f16", M, N, "f16", "f16", "f32")], ncols=32)
    assert "not allocated" in e.value.message and "at completion" in e.value.message
    assert "tcgen05.mma" in e.value.loc.text and "tensor pipe" in e.value.where


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_race_free_kernel_is_schedule_independent(seed):
    rng = np.random.default_rng(23)
    M, N, K = 128, 32, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "64B", "64B", rng)
    dump, _ = run(kernel(mma_issue("kind::f16", 0), ncols=32), img,
                  [da, db, idesc_for("f16", M, N, "f16", "f16", "f32")], ncols=32, seed=seed)
    assert np.array_equal(read_d(dump[0], M, N, 0), oracle("f16", A, B, "f16", "f16", "f32"))


def test_pipe_latency_parameters():
    """Completion = issue + N*mma_cycles_per_n + mma_latency: changing the latency moves the end of the kernel by
    exactly the difference (the commit's arrive is the critical path)."""
    from tcsim.agents.tensor_pipe import TensorPipeParams
    rng = np.random.default_rng(24)
    M, N, K = 128, 64, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "none", "none", rng)
    args = [da, db, idesc_for("f16", M, N, "f16", "f16", "f32")]
    ptx = kernel(mma_issue("kind::f16", 0), ncols=64)
    _, r1 = run(ptx, img, args, ncols=64, params=TensorPipeParams(mma_latency=100))
    _, r2 = run(ptx, img, args, ncols=64, params=TensorPipeParams(mma_latency=600))
    _, r3 = run(ptx, img, args, ncols=64, params=TensorPipeParams(mma_latency=600, mma_cycles_per_n=2.0))
    c1, c2, c3 = (r.stats["cycles"] for r in (r1, r2, r3))
    assert 495 <= c2 - c1 <= 505
    assert 90 <= c3 - c2 <= 100                                # N * (2.0 - 0.5) = 96


# ---------------------------------------------------------------------------------------------- run-time checks
def test_bad_idesc_is_a_verify_error_at_the_mma():
    rng = np.random.default_rng(25)
    A, B, img, da, db = operands("f16", "f16", "f16", 128, 16, 16, "K", "K", "none", "none", rng)
    bad = InstrDescriptor.for_kind("f16", 96, 16, "f16", "f16", "f32").encode()     # M = 96
    ptx = kernel(mma_issue("kind::f16", 0), ncols=32)
    with pytest.raises(VerifyError) as e:
        run(ptx, img, [da, db, bad], ncols=32)
    assert e.value.message == ("M = 96 is not legal for kind::f16 .cta_group::1 [rule idesc-shape]")
    assert "tcgen05.mma" in e.value.loc.text and "warp 0" in e.value.where


def test_d_outside_the_allocation_is_a_class_13_finding():
    """D beyond the allocation: the GPU writes the physical cells (no check without -g-tmem-access-check), so the run
    goes on and a class-13 finding names the mma line (tcsim.race.tmem_alloc); strict mode stops there."""
    from tcsim.findings import FindingError
    rng = np.random.default_rng(26)
    A, B, img, da, db = operands("f16", "f16", "f16", 128, 64, 16, "K", "K", "none", "none", rng)
    ptx = kernel(mma_issue("kind::f16", 0), ncols=32)                 # 32 columns allocated, N = 64
    _, res = run(ptx, img, [da, db, idesc_for("f16", 128, 64, "f16", "f16", "f32")], ncols=32)
    (f,) = [f for f in res.findings if f.cls == 13]
    assert "columns [32, 64)" in f.message and "not allocated" in f.message and f.outcome == "continue"
    assert "tcgen05.mma" in f.sides[-1].what and f.sides[-1].line == ptx.splitlines().index(
        next(l for l in ptx.splitlines() if "tcgen05.mma" in l)) + 1
    launch = Launch(ptx=ptx, grid=(1, 1, 1), cluster=(1, 1, 1), block=(128, 1, 1),
                    args=[np.asarray(img, np.uint8).reshape(-1), (len(img) + 15) // 16 * 16,
                          np.zeros((1, 128, 32), np.uint32),
                          np.asarray([da, db, idesc_for("f16", 128, 64, "f16", "f16", "f32")], dtype=np.uint64),
                          np.zeros(8, np.uint32)])
    with pytest.raises(FindingError, match="not allocated"):
        run_launch(launch, strict=True)


def test_operand_outside_smem_faults():
    rng = np.random.default_rng(27)
    A, B, img, da, db = operands("f16", "f16", "f16", 128, 16, 16, "K", "K", "none", "none", rng)
    far = desc(0x3F000, 2048, 128, "none")
    with pytest.raises(MemoryFault) as e:
        run(kernel(mma_issue("kind::f16", 0), ncols=32), img, [far, db, idesc_for("f16", 128, 16, "f16", "f16", "f32")],
            ncols=32)
    assert "operand A" in e.value.message and "outside" in e.value.message


def test_descriptor_fixed_bits_checked():
    rng = np.random.default_rng(28)
    A, B, img, da, db = operands("f16", "f16", "f16", 128, 16, 16, "K", "K", "none", "none", rng)
    with pytest.raises(VerifyError) as e:
        run(kernel(mma_issue("kind::f16", 0), ncols=32), img,
            [da & ~(1 << 46), db, idesc_for("f16", 128, 16, "f16", "f16", "f32")], ncols=32)
    assert "[rule desc-fixed]" in e.value.message and "the A descriptor" in e.value.message


def test_cta_group_2_block_scaled_m256():
    """M = 256 over a CTA pair: each CTA's SFA covers its 128 rows; each CTA holds SFB for all N columns (?)."""
    rng = np.random.default_rng(29)
    m, n, K = 256, 64, 32
    parts = [operands("mxf8f6f4", "e4m3", "e2m3", m // 2, n // 2, K, "K", "K", "128B", "128B", rng)
             for _ in range(2)]
    A = np.concatenate([p[0] for p in parts])
    B = np.concatenate([p[1] for p in parts])
    sfa = rng.integers(120, 134, (m, 1)).astype(np.uint8)
    sfb = rng.integers(120, 134, (n, 1)).astype(np.uint8)
    tinit = np.zeros((2, 128, 8), np.uint32)
    for v in range(2):
        tinit[v, :, 0:4] = sf_words(sfa[128 * v:128 * (v + 1)], 2)
        tinit[v, :, 4:8] = sf_words(sfb, 1)
    idesc = InstrDescriptorBlockScaled.for_kind("mxf8f6f4", m, n, "e4m3", "e2m3", sfa_id=2, sfb_id=1).encode()
    issue = tmem_at(0, "%r24") + "\n" + tmem_at(4, "%r25") + "\n" + \
        mma_issue("kind::mxf8f6f4.block_scale", 64, extra_ops=", [%r24], [%r25]", cg=2)
    dump, _ = run(kernel(issue, ncols=128, cg=2, tinit=(0, 8)), [parts[0][2], parts[1][2]],
                  [parts[0][3], parts[0][4], idesc], ncols=128, cg=2, tinit=tinit)
    p = checked("mxf8f6f4", "e4m3", "e2m3", "f32", "ue8m0", 32)
    exp = mma_block_scaled(A, B.T.copy(), np.zeros((m, n), np.uint32), sfa, sfb.T.copy(), "e4m3", "e2m3", "ue8m0",
                           32, p)
    for v in range(2):
        assert np.array_equal(read_d(dump[v], m, n, 64, cg=2), exp[128 * v:128 * (v + 1)])


def test_cta_group_2_m128_a_from_tmem_duplicated():
    """Layout B ("2x2"): each CTA's 64 A rows sit at lanes i and i + 64 (CUTLASS duplicates A); the column half
    computed in lanes 64.. reads the second copy."""
    rng = np.random.default_rng(30)
    m, n, K = 128, 64, 16
    parts = [operands("f16", "f16", "f16", m // 2, n // 2, K, "K", "K", "none", "32B", rng) for _ in range(2)]
    A = np.concatenate([p[0] for p in parts])
    B = np.concatenate([p[1] for p in parts])
    tinit = np.zeros((2, 128, 8), np.uint32)
    for v in range(2):
        tinit[v] = a_tmem_words(parts[v][0], 16, [lambda i: i, lambda i: i + 64])
    issue = mma_issue("kind::f16", 32, a_tmem_col=0, cg=2)
    dump, _ = run(kernel(issue, ncols=64, cg=2, tinit=(0, 8)), [parts[0][2], parts[1][2]],
                  [parts[0][3], parts[0][4], idesc_for("f16", m, n, "f16", "f16", "f32")], ncols=64, cg=2,
                  tinit=tinit)
    exp = oracle("f16", A, B, "f16", "f16", "f32")
    for v in range(2):
        assert np.array_equal(read_d(dump[v], m, n, 32, cg=2), exp[64 * v:64 * (v + 1)])


def test_ws_collector_b():
    rng = np.random.default_rng(31)
    m, n, K = 64, 128, 8
    A, B, img, da, db = operands("tf32", "tf32", "tf32", m, n, K, "K", "K", "32B", "128B", rng)
    issue = mma_issue("kind::tf32.collector::b1::fill", 0, ws=True) + \
        "\n  tcgen05.mma.ws.cta_group::1.kind::tf32.collector::b1::lastuse [%r21], %rd10, %rd11, %r20, 1;"
    dump, _ = run(kernel(issue, ncols=64), img, [da, db, idesc_for("tf32", m, n, "tf32", "tf32", "f32")], ncols=64)
    d1 = oracle("tf32", A, B, "tf32", "tf32", "f32")
    d2 = oracle("tf32", A, B, "tf32", "tf32", "f32", C=d1)
    assert np.array_equal(read_d(dump[0], m, n, 0, ws=True), d2)


def test_plain_mma_discards_the_collector():
    """No collector qualifier means .collector::a::discard, so a later ::use finds the buffer empty."""
    rng = np.random.default_rng(32)
    A, B, img, da, db = operands("f16", "f16", "f16", 128, 16, 16, "K", "K", "none", "none", rng)
    issue = mma_issue("kind::f16.collector::a::fill", 0) + \
        "\n  tcgen05.mma.cta_group::1.kind::f16 [%r21], %rd10, %rd11, %r20, 1;" \
        "\n  tcgen05.mma.cta_group::1.kind::f16.collector::a::use [%r21], %rd10, %rd11, %r20, 1;"
    with pytest.raises(SyncError) as e:
        run(kernel(issue, ncols=32), img, [da, db, idesc_for("f16", 128, 16, "f16", "f16", "f32")], ncols=32)
    assert "empty collector buffer" in e.value.message


@pytest.mark.parametrize("fence", [True, False])
def test_an_smem_operand_written_by_st_shared_needs_the_proxy_fence(fence):
    """The kernel writes A and B with st.shared; the tensor pipe reads them through the async proxy.  Without the
    fence.proxy.async the race detector reports class 8 at the MMA's operand read, naming the st.shared (the run goes
    on: sanitizer mode)."""
    rng = np.random.default_rng(11)
    M, N, K = 128, 16, 16
    A, B, img, da, db = operands("f16", "f16", "f16", M, N, K, "K", "K", "128B", "128B", rng)
    ptx = kernel(mma_issue("kind::f16", 0), ncols=32)
    if not fence:
        assert "  fence.proxy.async.shared::cta;\n" in ptx
        ptx = ptx.replace("  fence.proxy.async.shared::cta;\n", "", 1)
    args = [da, db, idesc_for("f16", M, N, "f16", "f16", "f32")]
    if fence:
        dump, _ = run(ptx, img, args, ncols=32)
        assert np.array_equal(read_d(dump[0], M, N, 0), oracle("f16", A, B, "f16", "f16", "f32"))
        return
    _, res = run(ptx, img, args, ncols=32)
    f8 = [f for f in res.findings if f.cls == 8]
    assert f8 and all(f.sides[0].what.startswith("st.shared") and "tcgen05.mma" in f.sides[1].what for f in f8)
    assert all("fence.proxy.async.shared::cta between line" in f.missing for f in f8)
