"""PTX generator for the batched ``mma.sync`` probe kernels (one warp = one independent MMA case).

Every warp ``w`` (= ``4 * ctaid.x + tid.x / 32``; blocks of 128 threads) loads its own dense operands from
global memory with the fragment maps of PTX ISA 9.1 §9.7.14.5.7-10 written out as address arithmetic (so the
probe does not depend on :mod:`tcsim.isa.fragments`), executes one ``mma.sync.aligned`` and stores D densely:

* ``A``  : ``(ncases, 16, K)`` codes, row-major (the ``.row`` operand);
* ``BT`` : ``(ncases, 8, K)`` codes, i.e. B (K x 8) stored column-major (the ``.col`` operand): ``BT[n][k]``;
* ``C``/``D``: ``(ncases, 16, 8)`` accumulator codes, row-major.

With ``g = lane >> 2`` and ``t = lane & 3`` a lane's registers are (PTX ISA fragment tables, mma_sync.md):

* f16/bf16 m16n8k16: A reg r = ``A[g + 8(r%2)][2t + 8(r/2) .. +1]``; B reg r = ``B[2t + 8r .. +1][g]``
* f16/bf16 m16n8k8 : A reg r = ``A[g + 8r][2t .. +1]``;              B reg 0 = ``B[2t .. +1][g]``
* tf32 m16n8k8     : A reg i = ``A[g + 8(i%2)][t + 4(i/2)]``;          B reg i = ``B[t + 4i][g]``
* s8/u8 m16n8k32   : A reg r = ``A[g + 8(r%2)][4t + 16(r/2) .. +3]``;  B reg r = ``B[4t + 16r .. +3][g]``
* C/D (32-bit)     : reg i = ``C[g + 8(i/2)][2t + i%2]``; f16 C/D: reg j = ``C[g + 8j][2t .. +1]``

Only instructions the simulator's examples already use appear (mov, shl, shr, and, add, mul.wide, setp, bra,
cvta, ld/st.global, mma), so :func:`probe_launch` runs unchanged on the simulator and on the GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: the generator the kernel's first line names: its place when tests/golden/mma_sync_numerics was recorded.  The
#: line is part of the PTX the golden data and the committed copies (calib/probes/ptx) hold; it changes only with
#: a re-record on a GPU.
RECORDED_GENERATOR = "hw/probes/mma_ptx.py"

HERE = Path(__file__).resolve().parent
PTX_DIR = HERE / "ptx"
WARPS_PER_BLOCK = 4

ESIZE = {"f16": 2, "bf16": 2, "tf32": 4, "f32": 4, "s32": 4, "s8": 1, "u8": 1, "e4m3": 1, "e5m2": 1}
FP8 = ("e4m3", "e5m2")
CODE_DTYPE = {1: np.uint8, 2: np.uint16, 4: np.uint32}


@dataclass(frozen=True)
class Pair:
    """One (shape, type) probe: ``mma.sync.aligned.<shape>.row.col[.satfinite].<acc>.<ab>.<ab>.<acc>``."""

    name: str
    shape: str
    K: int
    ab: str
    acc: str
    satfinite: bool = False
    b: str = ""            # B's type where it differs from A's (fp8 pairs); "" = ``ab``

    @property
    def bt(self) -> str:
        """B's element type."""
        return self.b or self.ab

    @property
    def opcode(self) -> str:
        sat = ".satfinite" if self.satfinite else ""
        return f"mma.sync.aligned.{self.shape}.row.col{sat}.{self.acc}.{self.ab}.{self.bt}.{self.acc}"

    @property
    def ptx_version(self) -> str:
        """8.0 for the pairs recorded in 2026-11 (their PTX text is part of the record); fp8 operands with an f16
        accumulator need PTX ISA 8.7 (§9.7.14.5.14 "PTX ISA Notes"), so the fp8 pairs say 8.7."""
        return "8.7" if self.ab in FP8 else "8.0"

    @property
    def kernel(self) -> str:
        return f"mma_probe_{self.name}"

    @property
    def a_dtype(self):
        return CODE_DTYPE[ESIZE[self.ab]]

    @property
    def c_dtype(self):
        return CODE_DTYPE[ESIZE[self.acc]]

    @property
    def is_float(self) -> bool:
        return self.ab in ("f16", "bf16", "tf32")

    @property
    def is_fp8(self) -> bool:
        return self.ab in FP8


#: the float pairs of the random campaign (the first four are the brief's; the last two are extra coverage)
FLOAT_PAIRS = {p.name: p for p in [
    Pair("m16n8k16_f32_f16", "m16n8k16", 16, "f16", "f32"),
    Pair("m16n8k16_f32_bf16", "m16n8k16", 16, "bf16", "f32"),
    Pair("m16n8k8_f32_f16", "m16n8k8", 8, "f16", "f32"),
    Pair("m16n8k8_f32_bf16", "m16n8k8", 8, "bf16", "f32"),
    Pair("m16n8k16_f16_f16", "m16n8k16", 16, "f16", "f16"),
    Pair("m16n8k8_f32_tf32", "m16n8k8", 8, "tf32", "f32"),
]}
#: integer pairs (targeted vectors and a small random set only)
INT_PAIRS = {p.name: p for p in [
    Pair("m16n8k32_s32_s8", "m16n8k32", 32, "s8", "s32"),
    Pair("m16n8k32_s32_s8_sat", "m16n8k32", 32, "s8", "s32", satfinite=True),
    Pair("m16n8k32_s32_u8", "m16n8k32", 32, "u8", "s32"),
]}
ALL_PAIRS = {**FLOAT_PAIRS, **INT_PAIRS}
#: fp8 pairs (m16n8k32, every A/B type pair, f32 and f16 accumulators): on sm_90a ptxas lowers each onto f16 HMMAs
#: (tensor_core.LOWER_FP8_VIA_F16); recorded by calib.probes.mma_fp8_probe (tests/golden/mma_sync_fp8)
FP8_PAIRS = {p.name: p for p in [
    Pair(f"m16n8k32_{acc}_{a}_{b}", "m16n8k32", 32, a, acc, b=b)
    for acc in ("f32", "f16") for a in FP8 for b in FP8]}


def _log2(x: int) -> int:
    if x <= 0 or x & (x - 1):
        raise ValueError(f"{x} is not a power of two")
    return x.bit_length() - 1


def _operand_offsets(pair: Pair):
    """(t stride in elements, [A reg byte offsets], [B reg byte offsets]) relative to the lane bases
    ``(g*K + t*ts) * esize`` of A and of BT."""
    K, es = pair.K, ESIZE[pair.ab]
    if pair.ab in ("f16", "bf16"):
        ts = 2
        if pair.shape == "m16n8k16":
            a = [(8 * (r % 2) * K + 8 * (r // 2)) * es for r in range(4)]
            b = [8 * r * es for r in range(2)]
        elif pair.shape == "m16n8k8":
            a = [8 * r * K * es for r in range(2)]
            b = [0]
        else:
            raise ValueError(pair.shape)
    elif pair.ab == "tf32":
        if pair.shape != "m16n8k8":
            raise ValueError(pair.shape)
        ts = 1
        a = [(8 * (i % 2) * K + 4 * (i // 2)) * es for i in range(4)]
        b = [4 * i * es for i in range(2)]
    elif pair.ab in ("s8", "u8") or pair.ab in FP8:
        # PTX ISA §9.7.14.5.10: the m16n8k32 fragments of .e4m3/.e5m2 are those of .s8/.u8
        if pair.ab in FP8 and pair.shape != "m16n8k32":
            raise ValueError(pair.shape)
        ts = 4
        if pair.shape == "m16n8k32":
            a = [(8 * (r % 2) * K + 16 * (r // 2)) * es for r in range(4)]
            b = [16 * r * es for r in range(2)]
        elif pair.shape == "m16n8k16":
            a = [8 * r * K * es for r in range(2)]
            b = [0]
        else:
            raise ValueError(pair.shape)
    else:
        raise ValueError(pair.ab)
    return ts, a, b


def _acc_offsets(pair: Pair):
    cs = ESIZE[pair.acc]
    if cs == 4:
        return [0, 4, 8 * 8 * 4, 8 * 8 * 4 + 4]          # C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]
    return [0, 8 * 8 * 2]                                # f16x2: C[g][2t..2t+1], C[g+8][2t..2t+1]


def probe_ptx(pair: Pair) -> str:
    """The PTX text of ``pair``'s probe kernel (deterministic; committed copies live in ``calib/probes/ptx``)."""
    K, es, cs = pair.K, ESIZE[pair.ab], ESIZE[pair.acc]
    ts, a_off, b_off = _operand_offsets(pair)
    c_off = _acc_offsets(pair)
    a_case, b_case, c_case = 16 * K * es, 8 * K * es, 16 * 8 * cs
    float_acc = pair.acc == "f32"
    ctype = "f32" if float_acc else "b32"
    creg = "%f" if float_acc else "%c"
    na, nb, nc = len(a_off), len(b_off), len(c_off)
    L = []
    w = L.append
    w(f"// generated by {RECORDED_GENERATOR} for {pair.opcode} -- do not edit")
    w("// one warp per case: A (16xK, row-major), BT (8xK = B column-major), C and D (16x8, row-major)")
    w(f".version {pair.ptx_version}")
    w(".target sm_90a")
    w(".address_size 64")
    w("")
    w(f".visible .entry {pair.kernel}(")
    w("\t.param .u64 .ptr .global .align 16 A_ptr,")
    w("\t.param .u64 .ptr .global .align 16 BT_ptr,")
    w("\t.param .u64 .ptr .global .align 16 C_ptr,")
    w("\t.param .u64 .ptr .global .align 16 D_ptr,")
    w("\t.param .u32 ncases")
    w(")")
    w(f".reqntid {32 * WARPS_PER_BLOCK}, 1, 1")
    w("{")
    w("\t.reg .pred \t%p<2>;")
    w("\t.reg .b32 \t%r<24>;")
    w("\t.reg .b32 \t%a<8>;")
    w("\t.reg .b32 \t%b<4>;")
    if float_acc:
        w("\t.reg .f32 \t%f<8>;")
    else:
        w("\t.reg .b32 \t%c<8>;")
    w("\t.reg .b64 \t%rd<16>;")
    w("")
    w("\tmov.u32 \t%r0, %ctaid.x;")
    w("\tmov.u32 \t%r1, %tid.x;")
    w(f"\tshl.b32 \t%r2, %r0, {_log2(WARPS_PER_BLOCK)};")
    w("\tshr.u32 \t%r3, %r1, 5;")
    w("\tadd.u32 \t%r4, %r2, %r3;              // case = warp index")
    w("\tld.param.u32 \t%r5, [ncases];")
    w("\tsetp.ge.u32 \t%p1, %r4, %r5;")
    w("\t@%p1 bra \t$L_done;")
    w("\tand.b32 \t%r6, %r1, 31;               // lane")
    w("\tshr.u32 \t%r7, %r6, 2;                // g")
    w("\tand.b32 \t%r8, %r6, 3;                // t")
    # operand lane base (g*K + t*ts) * es
    w(f"\tshl.b32 \t%r9, %r7, {_log2(K * es)};")
    w(f"\tshl.b32 \t%r10, %r8, {_log2(ts * es)};")
    w("\tadd.u32 \t%r11, %r9, %r10;            // A/BT lane byte offset")
    w(f"\tshl.b32 \t%r12, %r7, {_log2(8 * cs)};")
    w(f"\tshl.b32 \t%r13, %r8, {_log2(2 * cs)};")
    w("\tadd.u32 \t%r14, %r12, %r13;           // C/D lane byte offset")
    for i, (pname, size) in enumerate([("A_ptr", a_case), ("BT_ptr", b_case), ("C_ptr", c_case),
                                       ("D_ptr", c_case)]):
        base = 4 * i + 1
        lane = "%r11" if i < 2 else "%r14"
        w(f"\tld.param.u64 \t%rd{base}, [{pname}];")
        w(f"\tcvta.to.global.u64 \t%rd{base}, %rd{base};")
        w(f"\tmul.wide.u32 \t%rd{base + 1}, %r4, {size};")
        w(f"\tadd.u64 \t%rd{base}, %rd{base}, %rd{base + 1};")
        w(f"\tmul.wide.u32 \t%rd{base + 2}, {lane}, 1;")
        w(f"\tadd.u64 \t%rd{base}, %rd{base}, %rd{base + 2};")
    for r, off in enumerate(a_off):
        w(f"\tld.global.b32 \t%a{r}, [%rd1+{off}];")
    for r, off in enumerate(b_off):
        w(f"\tld.global.b32 \t%b{r}, [%rd5+{off}];")
    for r, off in enumerate(c_off):
        w(f"\tld.global.{ctype} \t{creg}{r}, [%rd9+{off}];")
    dregs = ", ".join(f"{creg}{4 + r}" for r in range(nc))
    aregs = ", ".join(f"%a{r}" for r in range(na))
    bregs = ", ".join(f"%b{r}" for r in range(nb))
    cregs = ", ".join(f"{creg}{r}" for r in range(nc))
    w(f"\t{pair.opcode} \t{{{dregs}}}, {{{aregs}}}, {{{bregs}}}, {{{cregs}}};")
    for r, off in enumerate(c_off):
        w(f"\tst.global.{ctype} \t[%rd13+{off}], {creg}{4 + r};")
    w("$L_done:")
    w("\tret;")
    w("}")
    return "\n".join(L) + "\n"


def ptx_path(pair: Pair) -> Path:
    return PTX_DIR / f"{pair.kernel}.ptx"


def write_ptx_files() -> list:
    """(Re)write the committed copies ``calib/probes/ptx/<kernel>.ptx``."""
    PTX_DIR.mkdir(exist_ok=True)
    out = []
    for pair in ALL_PAIRS.values():
        p = ptx_path(pair)
        p.write_text(probe_ptx(pair))
        out.append(p)
    return out


def probe_launch(pair: Pair, a, bt, c):
    """A :class:`tcsim.launch.Launch` of ``pair``'s probe over the cases ``a (n,16,K)``, ``bt (n,8,K)``,
    ``c (n,16,8)`` (codes).  D (argument 3) comes back as ``(n,16,8)`` codes; n must be a multiple of 4."""
    from tcsim.launch import Launch

    a = np.ascontiguousarray(a, dtype=pair.a_dtype)
    bt = np.ascontiguousarray(bt, dtype=pair.a_dtype)
    c = np.ascontiguousarray(c, dtype=pair.c_dtype)
    n = a.shape[0]
    if a.shape != (n, 16, pair.K) or bt.shape != (n, 8, pair.K) or c.shape != (n, 16, 8):
        raise ValueError(f"{pair.name}: shapes {a.shape} {bt.shape} {c.shape}")
    if n % WARPS_PER_BLOCK or n == 0:
        raise ValueError(f"the number of cases must be a positive multiple of {WARPS_PER_BLOCK}, got {n}")
    d = np.zeros_like(c)
    return Launch(ptx=probe_ptx(pair), kernel=pair.kernel, grid=(n // WARPS_PER_BLOCK, 1, 1),
                  block=(32 * WARPS_PER_BLOCK, 1, 1), args=[a, bt, c, d, np.uint32(n)],
                  name=f"{pair.kernel}[{n}]")
