"""Random, well-formed, race-free PTX programs for differential fuzzing (tcsim vs the GPU).

From a seed, :func:`generate` builds a :class:`Program`: a tree of items (instructions, atomic instruction
groups, divergent forward ``if`` blocks, lane-divergent bounded loops, and synchronisation *rounds* through
shared memory) plus the input data, and :meth:`Program.render` prints it as one complete ``.target sm_90a``
kernel for 1 CTA of 1..4 warps.  The tree is what :mod:`calib.fuzz.minimize` shrinks; every tree the minimiser
can produce renders to a valid program (labels, SMEM layout, mbarrier parities and the set-up code are derived
at render time from what is left).

The program model
-----------------
* **Register pools**, typed by size only (PTX ISA 9.1 §6.4.1: a bit-size register agrees with every type of
  its size): ``%r0..`` (.b32: u32/s32/f32/f16x2/bf16x2 data), ``%rd0..`` (.b64: u64/s64/f64), ``%h0..`` (.b16:
  u16/s16/f16/bf16, and u8/s8 in cvt), ``%p0..`` (.pred).  Every pool register is loaded per thread from the
  global input buffer in the prologue (so nothing reads an undefined register) and stored per thread to the
  global output buffer in the epilogue (predicates packed into one u32).
* **Control registers** (``%k..``, ``%kd..``, ``%q..``) hold thread index, addresses, loop counters and
  control predicates; instructions from the pools never write them.
* **Divergence**: ``if`` blocks (``@p bra`` over a body, the predicate derived from lane data) and loops whose
  trip count (1..4) comes from lane data contain ALU instructions only.  Warp collectives (shfl, vote,
  activemask, elect, redux, match, ldmatrix, mma) and CTA synchronisation appear only at top level, where the
  whole CTA is converged.
* **Race freedom**: every shared-memory round has its own region; each thread writes only its own slot, then
  a synchronisation (``bar.sync 0``, an mbarrier arrive + try_wait(.parity) round, or for ``cp.async.bulk`` an
  ``expect_tx`` + ``complete_tx`` round) orders the writes before any read of other threads' slots.
* **Data**: 32-bit slots are f32-, f16x2-, bf16x2-, integer-flavoured or random bits; specials (NaN with
  payloads, +-Inf, subnormals, -0, extreme integers) appear with a few percent probability each.

Versions: 1 draws everything below; 2 leaves out the constructs of :data:`V2_AVOIDS`; 3, 4 and 5 then redraw every
instruction that the isa/lint.py checks of the version (:data:`V3_LINT_CHECKS`, :data:`V4_LINT_CHECKS`,
:data:`V5_LINT_CHECKS`) note --
ptxas 13.0 lowers those against the PTX ISA.  Version 6 also avoids :data:`V6_AVOIDS` and makes most programs one
warpgroup (4 warps) with warpgroup MMA among the items (:mod:`calib.fuzz.wgmma_ops`: wgmma-groups, waits,
accumulator instructions; the accumulator bank is dumped after the records).  Version 7 moves values into and out
of the wgmma registers without ``mov`` copies and keeps imm-scale-a = -1 to descriptor A (:data:`V7_AVOIDS`);
version 8 renders version 7's trees with the waits version 7's renderer forgot (:data:`V8_LINT_CHECKS`).  Each H100
campaign (tests/golden/fuzz_campaign) names the version that made it, and ``generate(seed, version=v)`` makes the same
program for ever.

Left out on purpose: ``.approx`` operations (not bit-exact in tcsim yet), %clock/%warpid-like
nondeterministic special registers, atomics, cluster features, anything sm_100-only, and two register
aliasings that PTX does not define and the H100 toolchain resolves differently from tcsim (found by this
fuzzer, see tests/fuzz_regressions/): ``setp p|p`` (same predicate twice) and an ``mma`` destination that
aliases A, B or another element of C.
"""
from __future__ import annotations

import copy
import functools
import random
import struct
from dataclasses import dataclass, field

import numpy as np

import calib.fuzz.wgmma_ops as WG
from .ins import Ins
from .wgmma_ops import WgGroup, WgWait

N32, N64, N16, NP = 12, 6, 4, 4               # pool sizes
SLOT_BYTES = 8                                # one thread's slot in a shared-memory exchange round
BULK_BYTES = 512                              # global bytes a cp.async.bulk round may copy from
ARCH = "sm_90a"

#: The generator version new campaigns use.  Version 2 leaves out the constructs below, whose GPU results depend
#: on ptxas 13.0 rather than on the PTX ISA (each found by version 1, minimised, saved in tests/fuzz_regressions
#: and noted by isa/lint.py); recorded campaigns name the version that made them.
VERSION = 8
V2_AVOIDS = {
    "float-sign-ops": "abs/neg of f32/f16/bf16(x2): NaN results are unspecified (PTX) and ptxas folds them into "
                      "source modifiers, FADDs or nothing (neg(neg(x)) -> x, loop unrolling)",
    "s16-abs-neg": "abs.s16/neg.s16: ptxas keeps +32768 for -32768 in its 32-bit register, consumers see it",
    "mad-hi-self-accumulate": "mad.hi d, a, b, d: ptxas 13.0 drops copies when it unrolls a loop around it",
    "b64-shift-by-register": "64-bit shifts by a register: ptxas converts an amount it saw written by a float "
                             "instruction with F2I instead of using its bits",
}
#: Version 3 (found by version 2's H100 campaign, each minimised and saved in tests/fuzz_regressions): a version-3
#: program carries no note of the isa/lint.py checks :data:`V3_LINT_CHECKS` -- every instruction they note (ptxas
#: 13.0 lowers it against the PTX ISA) is drawn again until none is left (:func:`_without_noted`).  The list is
#: frozen with the version: a new check (or a change to one of these) changes the programs, and the campaigns'
#: digests (tests/hw/test_fuzz_campaign_replay.py) say so.  The checks added for version 3:
V3_AVOIDS = {
    "neg-neg-f64": "neg.f64 of a neg.f64 result (also in a loop): folded to a copy, a signalling NaN stays "
                   "signalling",
    "f2i-after-half-f2f": "cvt to an integer of an f16/bf16 that a cvt between 16-bit floats or a min/max.f16 "
                          "wrote: the F2I reads the register from before it",
    "float-after-int-range": "a float instruction reading a cnot or add/sub.sat result: ptxas folds with the "
                             "integer's value range",
    "half-shift-by-ftz-cvt": "a 16-bit shift by a cvt.ftz result: the amount is converted again without FTZ",
    "half2-after-tf32": "f16x2/bf16x2 arithmetic on a cvt.tf32 result: only the low halves are computed",
    "guarded-mad-hi-after-carry": "a predicated mad.hi adding a carry-chain result in a loop",
    "s16-div-after-f2i": "div/rem.s16 of a cvt.s16 from a float",
    "b64-shift-imm-after-mul": "a 64-bit shift by an immediate >= 64 of a constant multiplication's result: "
                               "ptxas merges them and returns the product unshifted",
    "copysign-same": "copysign(x, x): later uses simplified wrongly",
    "minmax-of-copy": "min/max of a register and its mov copy: folded to x (NaN kept)",
    "guard-from-setp-ftz": "an instruction guarded by a setp.ftz predicate: the guard is recomputed without FTZ",
    "mma-imm-operand": "an mma A/B register written by a mov of an immediate: the sign is folded into HMMA -R, "
                       "the result comes out negated",
    "sat-cvt-after-int-sign-op": "a saturating integer cvt of neg/abs.s32/s64: -(-2^31) saturates as +2^31",
    "guard-redefined-later": "a predicated instruction (or short branch) whose guard is written again later: "
                             "ptxas moves it below that write",
    "f64-nan-order-in-loop": "an f64 operation on two values the loop around it changes: the NaN order differs "
                             "between unrolled copies",
}
V3_LINT_CHECKS = ("mma-alias", "testp-guard", "set-f32-guard", "s16-sign-op", "mad-hi-self", "b64-shift-by-float",
                  "half2-abs-after-f32") + tuple(V3_AVOIDS)
#: Version 4 also avoids what version 3's H100 campaign found (tests/golden/fuzz_campaign/h100_v3_seeds_200000_
#: 209999.npz, reproducers in tests/fuzz_regressions); its campaign is h100_v4_seeds_300000_309999.npz.
V4_AVOIDS = {
    "lop3-repeated-source": "lop3 with a source register twice: merged with a following logic op into a wrong LUT",
    "guarded-mad-hi-in-loop": "a predicated mad.hi whose addend the loop around it writes later",
    "int-sign-op-min": "abs/neg.s32/s64: ptxas simplifies readers as if abs were non-negative, neg never wrapped",
    "half-int-arith-after-f2i": "16-bit mul/mad of a float-to-16-bit cvt: computed from 32-bit registers",
    "fp8-mma-after-big-shift": "an fp8 mma operand a shift by 32 or more zeroed: unpacked from a wrong constant",
    "branch-from-setp-ftz": "a branch on a setp.ftz predicate: the condition is recomputed without FTZ",
    "logic-after-relu-cvt": "a 16-bit and/or/xor of a cvt.relu result: dropped",
}
V4_LINT_CHECKS = V3_LINT_CHECKS + tuple(V4_AVOIDS)
#: Version 5 also avoids what version 4's H100 campaign found (tests/golden/fuzz_campaign/h100_v4_seeds_300000_
#: 309999.npz, reproducers in tests/fuzz_regressions); its campaign is h100_v5_seeds_400000_409999.npz, and the
#: isa/lint.py checks added for what that campaign found are in no version's list yet.
V5_AVOIDS = {
    "sat-of-wrapping-add-sub": "add/sub.sat of a wrapping add/sub result sharing a source: cancelled "
                               "algebraically as if the first could not wrap",
    "half-shift-by-cnot": "a 16-bit shift by a cnot result: shifted by 0",
    "conditional-mad-hi-addend-in-loop": "a mad.hi skipped by a branch (or predicated) in a loop whose body writes "
                                         "its addend first: reads another iteration's addend",
    "f64-nan-order-one-carried": "an f64 operation in a loop that changes one of its two sources: the peeled copy "
                                 "orders the sources the other way",
}
V5_LINT_CHECKS = V4_LINT_CHECKS + tuple(V5_AVOIDS)
#: Version 6 adds warpgroup MMA (:mod:`calib.fuzz.wgmma_ops`: most programs are one warpgroup of 4 warps with
#: wgmma-groups among the other items) and also avoids what version 5's H100 campaign found
#: (tests/golden/fuzz_campaign/h100_v5_seeds_400000_409999.npz, reproducers fuzz_40*_value).
V6_AVOIDS = {
    "half-compare-shift-after-f2i": "a 16-bit compare or right shift of a float-to-16-bit cvt: all 32 bits of a "
                                    "register holding another value are compared / shifted",
    "narrow-cvt-of-cnot": "cvt.sat.u16.u32 of a cnot result folded to 0",
    "float-after-mad-hi-sat": "a max.f32 of a mad.hi.sat result dropped",
    "logic-after-set-f32": "and.b32 of a set.f32 result and its cvt done on booleans",
    "neg-minmax-neg-f64": "neg.f64 of min.f64(y, y) of a neg.f64 folded to a copy",
    "pack-after-fp8x2-cvt": "an e4m3x2 cvt written over the other 16-bit register it is packed with",
}
V6_LINT_CHECKS = V5_LINT_CHECKS + tuple(V6_AVOIDS)
#: Version 7 moves values between the pools and the wgmma registers (register-A operands ``%wa``, accumulators
#: ``%ac``) only through instructions that make a new value -- ``xor.b32`` with a non-zero key, f32 arithmetic,
#: ``mul.wide``, ``cvt`` -- never a ``mov`` copy (calib.fuzz.wgmma_ops): version 6's H100/H200 campaign
#: (tests/golden/fuzz_campaign/h200_v6_seeds_600000_611999.npz) found ptxas 13.0 coalescing such copies with the
#: register they copy although a wgmma reads or writes it asynchronously (isa/lint.py notes both), and 37 of its
#: programs made ptxas 13.0 itself crash (signal 11; each compiles once its ``mov.b32 %wa, %r`` copies are
#: ``xor``s).  Version 7 also leaves ``imm-scale-a = -1`` to wgmmas with A from a descriptor: with A from registers
#: ptxas 13.0 may fold the negation into copies of the A registers as 32-bit integer negations (campaign program
#: 600269: ``IMAD.MOV R73, RZ, RZ, -R65`` for an f16x2 register; the GPU's output bit for bit with ``neg.s32`` of
#: each A register, calib/fuzz/explain.py ``wgmma-rs-neg-a-int``).  The PTX programs of both versions are defined
#: (PTX ISA 9.1 §9.7.15.5.2: no wgmma register is touched while its wgmma is in flight); version 7 measures tcsim
#: rather than these ptxas behaviours.
V7_AVOIDS = {
    "wgmma-a-source-reused": "an RS-form wgmma's A operand is a mov copy of a pool register written again while "
                             "the wgmma is in flight: ptxas gives both one register, the tensor core reads the "
                             "new value",
    "wgmma-acc-copy-clobbered": "a mov copy of an accumulator that a later wgmma writes again: ptxas gives the "
                                "copy the accumulator's register, readers after that wgmma see the new value",
    "wgmma-rs-neg-a": "imm-scale-a = -1 on a wgmma with A from registers: ptxas may negate the A registers as "
                      "32-bit integers",
}
V7_LINT_CHECKS = V6_LINT_CHECKS + tuple(V7_AVOIDS)
#: Version 8 fixes what version 7's H100 campaign (tests/golden/fuzz_campaign/h100_v7_seeds_700000_713999.npz) found
#: in the generator itself: rendering ``wgmma.wait_group N`` with fewer than N groups in flight, the renderer
#: forgot all but the newest of them (a negative slice, :func:`calib.fuzz.wgmma_ops.render_wait`), so it inserted no
#: ``wait_group 0`` before a later group wrote the register-A operands of an older one still in flight -- undefined
#: behaviour (PTX ISA 9.1 §9.7.15.5.2; program 701553: the H100 had read A before the overwrite, tcsim reads it at
#: completion).  Versions 6 and 7 keep their rendering (their programs are recorded); the generated trees of
#: version 8 are those of version 7.
V8_LINT_CHECKS = V7_LINT_CHECKS
_LINT_CHECKS = {3: V3_LINT_CHECKS, 4: V4_LINT_CHECKS, 5: V5_LINT_CHECKS, 6: V6_LINT_CHECKS, 7: V7_LINT_CHECKS,
                8: V8_LINT_CHECKS}

# per-thread input/output record: r (4 B each), rd (8 B each), h (2 B each), predicate bits (u32)
OFF32 = 0
OFF64 = OFF32 + 4 * N32
OFF16 = OFF64 + 8 * N64
OFFP = OFF16 + 2 * N16
STRIDE = (OFFP + 4 + 15) // 16 * 16

R = {16: "%h", 32: "%r", 64: "%rd"}
NPOOL = {16: N16, 32: N32, 64: N64}

INT_TYPES = ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64")
TSIZE = {"u8": 8, "s8": 8, "u16": 16, "s16": 16, "u32": 32, "s32": 32, "u64": 64, "s64": 64, "b16": 16,
         "b32": 32, "b64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "f16x2": 32, "bf16x2": 32,
         "u16x2": 32, "s16x2": 32}


def reg_size(t: str) -> int:
    """Register size used for a PTX type in the pools (8-bit integers live in 16-bit registers)."""
    return max(16, TSIZE[t])


# ============================================================================================ the tree

@dataclass
class Seq:
    """Instructions that only make sense together (a carry chain, an address computation and its load)."""
    items: list
    id: int = 0

    def lines(self, r):
        return [ln for it in self.items for ln in it.lines(r)]


@dataclass
class If:
    """``@pred bra`` over ``body``: lanes where the branch condition holds skip the body (divergent)."""
    cond: list               # Ins computing the control predicate (may be empty when a pool predicate is used)
    pred: str                # '%q1', '!%q1', '%p2', '!%p0'
    body: list
    id: int = 0

    def lines(self, r):
        end = r.label("skip")
        out = [ln for c in self.cond for ln in c.lines(r)]
        out.append(f"@{self.pred} bra {end};")
        out += r.block(self.body)
        out.append(f"{end}:")
        return out


@dataclass
class Loop:
    """A loop of 1..(mask+1) iterations, the count taken per lane from ``src`` (lane-divergent)."""
    src: str                 # a 32-bit pool register
    mask: int                # 1, 3
    depth: int               # nesting depth (selects the counter register and loop predicate)
    body: list
    id: int = 0

    def lines(self, r):
        top = r.label("loop")
        k = f"%k{8 + self.depth}"
        q = f"%q{4 + self.depth}"
        out = [f"and.b32 {k}, {self.src}, {self.mask};", f"add.u32 {k}, {k}, 1;", f"{top}:"]
        out += r.block(self.body)
        out += [f"sub.u32 {k}, {k}, 1;", f"setp.ne.u32 {q}, {k}, 0;", f"@{q} bra {top};"]
        return out


@dataclass
class Load:
    """A load of another thread's data in a round: ``dst`` (pool register, ``width`` bytes) from the slot
    chosen by ``sel``: ('rot', K) -> thread (tid + K) % ntid; ('data', reg) -> thread reg % ntid;
    for bulk rounds ('bytes', mul, add) -> byte offset ((tid * mul + add) * width) % nbytes."""
    dst: str
    width: int
    sel: tuple
    id: int = 0


@dataclass
class LdMatrix:
    """``ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16`` from a round's 16-byte rows; the row of each lane
    is ``(tid * mul + add) % ntid``."""
    dsts: list
    trans: bool
    mul: int
    add: int
    id: int = 0


@dataclass
class Round:
    """A shared-memory exchange: every thread writes its own slot, a synchronisation, then reads.

    kind 'smem': thread stores ``src`` (``width`` bytes) to its slot; sync is 'bar' | 'mbar' (arrive +
    try_wait.parity) | 'mbar_token' (arrive + try_wait with the state) | 'mbar_test' (test_wait.parity loop);
    kind 'bulk': thread 0 issues a ``cp.async.bulk`` of ``nbytes`` from the global bulk area at ``goff``
    (complete_tx on an mbarrier of count 1), everyone waits on the mbarrier's phase; every bulk round after
    the first starts with ``bar.sync`` so that no thread is still waiting on the previous phase (a parity wait
    cannot tell phase n from phase n + 2);
    kind 'ldm': thread stores 4 pool registers (``srcs``, v4.b32) as a 16-byte row; ``bar.sync``; reads are
    :class:`LdMatrix` items.
    ``reads`` are deletable one by one; the write and the synchronisation only go with the whole round."""
    kind: str
    sync: str = "bar"
    width: int = 4
    src: str = ""
    srcs: tuple = ()
    nbytes: int = 0
    goff: int = 0
    reads: list = field(default_factory=list)
    id: int = 0


# ============================================================================================ programs

@dataclass
class Program:
    seed: int
    nwarps: int
    items: list
    inputs: np.ndarray            # uint8[4 * 32 * STRIDE + BULK_BYTES]: records for up to 128 threads + bulk
    name: str = ""                # (version-6 warpgroup programs: + the tile area and 128 * nacc accumulator words)
    nacc: int = 0                 # accumulator registers per thread (wgmma programs), dumped after the records
    version: int = 0              # the generator version (0: before version 8, whose rendering it changes)

    @property
    def nthreads(self) -> int:
        return 32 * self.nwarps

    @property
    def kernel_name(self) -> str:
        return self.name or f"fuzz_{self.seed}"

    def input_buffer(self) -> np.ndarray:
        """The global input buffer: per-thread records then the bulk area (16-byte aligned)."""
        n = self.nthreads * STRIDE
        return np.concatenate([self.inputs[:n], self.inputs[4 * 32 * STRIDE:]]).copy()

    def output_template(self) -> np.ndarray:
        """The global output buffer before the run: a fill pattern (every byte is overwritten): the per-thread
        records, then (wgmma programs) ``nacc`` accumulator words per thread."""
        return np.full(self.nthreads * (STRIDE + 4 * self.nacc), 0xA5, dtype=np.uint8)

    @property
    def has_wgmma(self) -> bool:
        """Whether the program (still) holds warpgroup instructions -- wgmma-groups, waits, accumulator
        instructions -- and so needs its 4 warps.  (A minimised program may have lost them all: then it runs on
        fewer warps, its accumulator bank loaded and dumped like the pools.)"""
        return self.nacc > 0 and WG.has_wgmma(self.items)

    def copy(self) -> "Program":
        return copy.deepcopy(self)

    # ------------------------------------------------------------------------------- rendering
    def render(self, name: str | None = None, header: bool = True) -> str:
        """The complete PTX module text (``header=False``: the ``.entry`` alone, for multi-kernel modules)."""
        r = _Render(self)
        body = r.block(self.items)
        text = r.entry(name or self.kernel_name, body)
        if header:
            return module_header() + text
        return text

    def instruction_count(self) -> int:
        return sum(1 for _ in walk_leaves(self.items))

    def describe_outputs(self) -> list:
        return output_fields()


def output_fields(nacc: int = 0) -> list:
    """Names of the per-thread input/output record's fields, in order: (name, byte offset, size)."""
    out = [(f"%r{i}", OFF32 + 4 * i, 4) for i in range(N32)]
    out += [(f"%rd{i}", OFF64 + 8 * i, 8) for i in range(N64)]
    out += [(f"%h{i}", OFF16 + 2 * i, 2) for i in range(N16)]
    out.append(("%p*", OFFP, 4))
    return out


def acc_fields(nacc: int) -> list:
    """Names of the accumulator dump's fields (after the records, ``nacc`` words per thread): (name, offset in
    the thread's accumulator row, size)."""
    return [(f"%ac{i}", 4 * i, 4) for i in range(nacc)]


def module_header() -> str:
    return f".version 8.5\n.target {ARCH}\n.address_size 64\n\n"


def walk_leaves(items):
    for it in items:
        if isinstance(it, Seq):
            yield from it.items
        elif isinstance(it, (If, Loop)):
            yield from it.cond if isinstance(it, If) else ()
            yield from walk_leaves(it.body)
        elif isinstance(it, Round):
            yield it
            yield from it.reads
        elif isinstance(it, WgGroup):
            yield it
            yield from it.ops
        else:
            yield it


class _Render:
    """Render state: labels, the SMEM layout of the rounds and mbarrier phase parities."""

    def __init__(self, prog: Program):
        self.p = prog
        self.nt = prog.nthreads
        self.n_label = 0
        self.smem = 0             # bytes of the round area allocated so far
        self.parity = [0, 0]      # next phase parity of mbarrier 0 (thread rounds) and 1 (bulk rounds)
        self.uses_mbar = False
        self.bulk_rounds = 0
        self.wg_inflight: list = []    # register sets of the wgmma-groups in flight (calib.fuzz.wgmma_ops)
        self.wg_tiles: list = []       # (tile, byte offset in fz_smem) of every wgmma tile rendered
        self.align = 128

    def label(self, what: str) -> str:
        self.n_label += 1
        return f"$L_{what}_{self.n_label}"

    def alloc(self, nbytes: int) -> int:
        off = self.smem
        self.smem += (nbytes + 127) // 128 * 128
        return off

    def alloc_aligned(self, nbytes: int, align: int) -> int:
        self.smem = -(-self.smem // align) * align
        self.align = max(self.align, align)
        return self.alloc(nbytes)

    def block(self, items) -> list:
        out = []
        for it in items:
            if isinstance(it, Round):
                out += self.round(it)
            elif isinstance(it, WgGroup):
                out += WG.render_group(self, it)
            elif isinstance(it, WgWait):
                out += WG.render_wait(self, it)
            elif isinstance(it, Ins) and self.p.nacc and "%ac" in it.text:
                out += WG.render_ac_ins(self, it)
            else:
                out += it.lines(self)
        return out

    # ---------------------------------------------------------------------------------- rounds
    def _wait(self, bar: int, how: str) -> list:
        top = self.label("wait")
        addr = f"[%k10+{8 * bar}]" if bar else "[%k10]"
        par = self.parity[bar]
        self.parity[bar] ^= 1
        if how == "mbar_token":
            return [f"{top}:", f"mbarrier.try_wait.shared::cta.b64 %q3, {addr}, %kd7;", f"@!%q3 bra {top};"]
        if how == "mbar_test":
            return [f"{top}:", f"mbarrier.test_wait.parity.shared::cta.b64 %q3, {addr}, {par};",
                    f"@!%q3 bra {top};"]
        return [f"{top}:", f"mbarrier.try_wait.parity.shared::cta.b64 %q3, {addr}, {par};", f"@!%q3 bra {top};"]

    def round(self, rd: Round) -> list:
        nt = self.nt
        out = []
        if rd.kind == "smem":
            base = self.alloc(nt * SLOT_BYTES)
            out.append(f"st.shared.b{8 * rd.width} [%k3+{base}], {rd.src};")
            if rd.sync == "bar":
                out.append("bar.sync 0;")
            else:
                self.uses_mbar = True
                out.append("mbarrier.arrive.shared::cta.b64 %kd7, [%k10];")
                out += self._wait(0, rd.sync)
            for ld in rd.reads:
                if ld.sel[0] == "rot":
                    out.append(f"add.u32 %k4, %k0, {ld.sel[1] % nt};")
                else:
                    out.append(f"and.b32 %k4, {ld.sel[1]}, 1023;")
                out += [f"rem.u32 %k4, %k4, {nt};", f"mad.lo.u32 %k4, %k4, {SLOT_BYTES}, %k2;",
                        f"ld.shared.b{8 * ld.width} {ld.dst}, [%k4+{base}];"]
        elif rd.kind == "bulk":
            self.uses_mbar = True
            base = self.alloc(rd.nbytes)
            if self.bulk_rounds:
                # the count-1 barrier lets thread 0 run a phase ahead; without this every thread might not have
                # seen the previous phase complete before the next one completes (parity aliasing -> hang)
                out.append("bar.sync 0;")
            self.bulk_rounds += 1
            out += [f"@%q0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%k10+8], {rd.nbytes};",
                    f"@%q0 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%k2+{base}], "
                    f"[%kd5+{rd.goff}], {rd.nbytes}, [%k10+8];"]
            out += self._wait(1, "mbar")
            for ld in rd.reads:
                _, mul, add = ld.sel
                n = rd.nbytes // ld.width
                out += [f"mad.lo.u32 %k4, %k0, {mul}, {add};", f"rem.u32 %k4, %k4, {n};",
                        f"mad.lo.u32 %k4, %k4, {ld.width}, %k2;",
                        f"ld.shared.b{8 * ld.width} {ld.dst}, [%k4+{base}];"]
        elif rd.kind == "ldm":
            base = self.alloc(nt * 16)
            out += [f"st.shared.v4.b32 [%k5+{base}], {{{', '.join(rd.srcs)}}};", "bar.sync 0;"]
            for lm in rd.reads:
                x = len(lm.dsts)
                out += [f"mad.lo.u32 %k4, %k0, {lm.mul}, {lm.add};", f"rem.u32 %k4, %k4, {nt};",
                        "shl.b32 %k4, %k4, 4;", "add.u32 %k4, %k4, %k2;",
                        f"ldmatrix.sync.aligned.m8n8.x{x}{'.trans' if lm.trans else ''}.shared.b16 "
                        f"{{{', '.join(lm.dsts)}}}, [%k4+{base}];"]
        else:
            raise ValueError(f"unknown round kind {rd.kind!r}")
        return out

    # ---------------------------------------------------------------------------------- the entry
    def entry(self, name: str, body: list) -> str:
        nt = self.nt
        L = []
        a = L.append
        a(f".visible .entry {name}(\n\t.param .u64 fz_in,\n\t.param .u64 fz_out\n)")
        a(f".reqntid {nt}, 1, 1")
        a("{")
        a(f"\t.reg .pred %p<{NP}>;")
        a("\t.reg .pred %q<8>;")
        a(f"\t.reg .b16 %h<{N16}>;")
        a(f"\t.reg .b32 %r<{N32}>;")
        a(f"\t.reg .b64 %rd<{N64}>;")
        wg = self.p.nacc
        a(f"\t.reg .b32 %k<{24 if wg else 12}>;")
        a(f"\t.reg .b64 %kd<{16 if wg else 8}>;")
        if wg:
            L.extend(WG.declarations(wg))
        if self.smem:
            if self.smem > WG.SMEM_LIMIT:
                raise ValueError(f"fuzz program {self.p.seed}: {self.smem} bytes of shared memory")
            a(f"\t.shared .align {self.align} .b8 fz_smem[{self.smem}];")
        if self.uses_mbar:
            a("\t.shared .align 8 .b64 fz_mbar[2];")
        pro = [
            "ld.param.u64 %kd0, [fz_in];", "ld.param.u64 %kd1, [fz_out];",
            "cvta.to.global.u64 %kd0, %kd0;", "cvta.to.global.u64 %kd1, %kd1;",
            "mov.u32 %k0, %tid.x;", "mov.u32 %k1, %laneid;",
            "setp.eq.u32 %q0, %k0, 0;",
            f"mul.wide.u32 %kd2, %k0, {STRIDE};",
            "add.u64 %kd3, %kd0, %kd2;", "add.u64 %kd4, %kd1, %kd2;",
            f"add.u64 %kd5, %kd0, {nt * STRIDE};",
        ]
        if self.smem:
            pro += ["mov.u32 %k2, fz_smem;", f"mad.lo.u32 %k3, %k0, {SLOT_BYTES}, %k2;",
                    "mad.lo.u32 %k5, %k0, 16, %k2;"]
        for i in range(N32):
            pro.append(f"ld.global.b32 %r{i}, [%kd3+{OFF32 + 4 * i}];")
        for i in range(N64):
            pro.append(f"ld.global.b64 %rd{i}, [%kd3+{OFF64 + 8 * i}];")
        for i in range(N16):
            pro.append(f"ld.global.b16 %h{i}, [%kd3+{OFF16 + 2 * i}];")
        pro.append(f"ld.global.b32 %k6, [%kd3+{OFFP}];")
        for i in range(NP):
            pro += [f"and.b32 %k7, %k6, {1 << i};", f"setp.ne.u32 %p{i}, %k7, 0;"]
        if self.uses_mbar:
            pro += ["mov.u32 %k10, fz_mbar;",
                    f"@%q0 mbarrier.init.shared::cta.b64 [%k10], {nt};",
                    "@%q0 mbarrier.init.shared::cta.b64 [%k10+8], 1;",
                    "bar.sync 0;"]
        if wg:
            pro += WG.prologue(wg, nt, STRIDE, BULK_BYTES)
        epi = WG.epilogue(wg, self.p.has_wgmma) if wg else []
        for i in range(N32):
            epi.append(f"st.global.b32 [%kd4+{OFF32 + 4 * i}], %r{i};")
        for i in range(N64):
            epi.append(f"st.global.b64 [%kd4+{OFF64 + 8 * i}], %rd{i};")
        for i in range(N16):
            epi.append(f"st.global.b16 [%kd4+{OFF16 + 2 * i}], %h{i};")
        epi.append("mov.u32 %k6, 0;")
        for i in range(NP):
            epi += [f"selp.b32 %k7, {1 << i}, 0, %p{i};", "or.b32 %k6, %k6, %k7;"]
        epi += [f"st.global.b32 [%kd4+{OFFP}], %k6;", "ret;"]
        for ln in pro + ["// ---- body"] + body + ["// ---- dump"] + epi:
            a(ln if ln.endswith(":") else "\t" + ln)
        a("}")
        return "\n".join(L) + "\n"


# ============================================================================================ data

_F32_SPECIAL = [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0x7FFFFFFF, 0xFF800000, 0x7F800000, 0x00000000,
                0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF,
                0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F000000, 0x4F000000, 0x4F800000, 0xCF000000, 0x5F000000,
                0x33800000, 0x3FFFFFFF, 0x477FE000, 0x477FF000, 0x38800000, 0x33000000, 0x387FC000]
_F16_SPECIAL = [0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400,
                0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x3800, 0x5BFF, 0x5C00, 0x3BFF]
_BF16_SPECIAL = [0x7FC0, 0xFFC0, 0x7F81, 0x7F80, 0xFF80, 0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x7F7F, 0xFF7F,
                 0x3F80, 0xBF80, 0x3F00, 0x4F00]
_F64_SPECIAL = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF4000000000000,
                0x7FF0000000000000, 0xFFF0000000000000, 0, 0x8000000000000000, 1, 0x8000000000000001,
                0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000,
                0xBFF0000000000000, 0x41E0000000000000, 0x43E0000000000000, 0xC3E0000000000000,
                0x3810000000000000, 0x380FFFFFFFFFFFFF, 0x47EFFFFFE0000000, 0x36A0000000000000,
                0x3E70000000000000]
_I32_SPECIAL = [0, 1, 2, 3, 0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF, 0x80000000, 0x80000001, 31, 32, 33, 63, 64, 65,
                0xFF, 0x100, 0xFFFF, 0x10000, 0x8000, 0x7FFF, 0xFFFF8000, 0x55555555, 0xAAAAAAAA, 0x0F0F0F0F]
_I64_SPECIAL = [0, 1, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0x8000000000000001,
                0xFFFFFFFF, 0x100000000, 0x80000000, 0xFFFFFFFF80000000, 63, 64, 65]


def _f32_value(rng: random.Random) -> int:
    u = rng.random()
    if u < 0.12:
        return rng.choice(_F32_SPECIAL)
    if u < 0.20:                                          # subnormal / tiny
        return (rng.getrandbits(1) << 31) | rng.getrandbits(23 if rng.random() < 0.5 else 10)
    if u < 0.28:                                          # huge
        return (rng.getrandbits(1) << 31) | (rng.randint(0xF0, 0xFE) << 23) | rng.getrandbits(23)
    if u < 0.40:                                          # small integers and halves
        v = rng.randint(-40, 40) / rng.choice([1, 2, 4])
        return struct.unpack("<I", struct.pack("<f", v))[0]
    e = rng.randint(127 - 20, 127 + 20)
    return (rng.getrandbits(1) << 31) | (e << 23) | rng.getrandbits(23)


def _f16_value(rng: random.Random, special=_F16_SPECIAL, bf=False) -> int:
    u = rng.random()
    if u < 0.10:
        return rng.choice(special)
    if bf:
        e = rng.randint(127 - 12, 127 + 12) if u > 0.2 else rng.randint(0, 254)
        return (rng.getrandbits(1) << 15) | (e << 7) | rng.getrandbits(7)
    if u < 0.18:
        return (rng.getrandbits(1) << 15) | rng.getrandbits(10)       # subnormal
    e = rng.randint(15 - 6, 15 + 6) if u > 0.3 else rng.randint(0, 30)
    return (rng.getrandbits(1) << 15) | (e << 10) | rng.getrandbits(10)


def _i32_value(rng: random.Random) -> int:
    u = rng.random()
    if u < 0.35:
        return rng.choice(_I32_SPECIAL)
    if u < 0.65:
        return rng.randint(-300, 300) & 0xFFFFFFFF
    return rng.getrandbits(32)


def value32(rng: random.Random) -> int:
    u = rng.random()
    if u < 0.30:
        return _f32_value(rng)
    if u < 0.50:
        return _f16_value(rng) | (_f16_value(rng) << 16)
    if u < 0.60:
        return _f16_value(rng, _BF16_SPECIAL, True) | (_f16_value(rng, _BF16_SPECIAL, True) << 16)
    if u < 0.90:
        return _i32_value(rng)
    return rng.getrandbits(32)


def value64(rng: random.Random) -> int:
    u = rng.random()
    if u < 0.40:
        v = rng.random()
        if v < 0.15:
            return rng.choice(_F64_SPECIAL)
        if v < 0.3:
            return (rng.getrandbits(1) << 63) | rng.getrandbits(52 if rng.random() < 0.5 else 30)
        if v < 0.45:                                       # exactly an f32 value (cvt round trips)
            f = struct.unpack("<f", struct.pack("<I", _f32_value(rng)))[0]
            return struct.unpack("<Q", struct.pack("<d", f))[0]
        e = rng.randint(1023 - 40, 1023 + 40) if v < 0.85 else rng.randint(1, 2046)
        return (rng.getrandbits(1) << 63) | (e << 52) | rng.getrandbits(52)
    if u < 0.70:
        v = rng.random()
        if v < 0.4:
            return rng.choice(_I64_SPECIAL)
        if v < 0.7:
            return rng.randint(-1000, 1000) & 0xFFFFFFFFFFFFFFFF
        return rng.getrandbits(64)
    if u < 0.85:
        return value32(rng) | (value32(rng) << 32)
    return rng.getrandbits(64)


def value16(rng: random.Random) -> int:
    u = rng.random()
    if u < 0.4:
        return _f16_value(rng)
    if u < 0.55:
        return _f16_value(rng, _BF16_SPECIAL, True)
    if u < 0.85:
        return _i32_value(rng) & 0xFFFF
    return rng.getrandbits(16)


def make_inputs(rng: random.Random) -> np.ndarray:
    """Input records for 128 threads (a program uses the first 32 * nwarps) plus the bulk area."""
    buf = bytearray(4 * 32 * STRIDE + BULK_BYTES)
    for t in range(128):
        b = t * STRIDE
        for i in range(N32):
            struct.pack_into("<I", buf, b + OFF32 + 4 * i, value32(rng))
        for i in range(N64):
            struct.pack_into("<Q", buf, b + OFF64 + 8 * i, value64(rng))
        for i in range(N16):
            struct.pack_into("<H", buf, b + OFF16 + 2 * i, value16(rng))
        struct.pack_into("<I", buf, b + OFFP, rng.getrandbits(NP))
    base = 4 * 32 * STRIDE
    for i in range(0, BULK_BYTES, 4):
        u = rng.random()
        v = _f16_value(rng) | (_f16_value(rng) << 16) if u < 0.5 else value32(rng)
        struct.pack_into("<I", buf, base + i, v)
    return np.frombuffer(bytes(buf), dtype=np.uint8).copy()


# ============================================================================================ generation

_IRND = ("rni", "rzi", "rmi", "rpi")
_FRND = ("rn", "rz", "rm", "rp")


def _range_contains(d: str, s: str) -> bool:
    if d == s:
        return True
    return TSIZE[d] > TSIZE[s] and (d[0] == "s" or s[0] == "u")


def cvt_forms() -> list:
    """Every scalar/packed cvt form the generator uses: (mnemonic, dst reg size, [src reg sizes]).
    The legality rules are ptxas 13.0's for sm_90a (checked by tests/hw/test_fuzz.py through ptxas and
    ``tcsim check``).  Left out: forms tcsim rejects although ptxas accepts them (cvt.f16.bf16 and
    cvt.bf16.f16 without rounding, cvt.<rnd>.{f32,f64}.bf16) -- see the fuzzing report."""
    forms = []
    F = ("f16", "bf16", "f32", "f64")

    def add(mods, d, s, dsz=None, ssz=None):
        forms.append(("cvt" + "".join("." + m for m in mods) + f".{d}.{s}",
                      dsz or reg_size(d), ssz or [reg_size(s)]))

    for d in INT_TYPES:
        for s in INT_TYPES:
            add([], d, s)
            if not _range_contains(d, s):
                add(["sat"], d, s)
        for s in F:
            if s == "bf16" and TSIZE[d] == 8:
                continue
            for r in _IRND:
                add([r], d, s)
                if s != "bf16":
                    add([r, "sat"], d, s)
                if s == "f32":
                    add([r, "ftz"], d, s)
                    add([r, "ftz", "sat"], d, s)
    for d in F:
        for s in INT_TYPES:
            if d == "bf16" and TSIZE[s] == 8:
                continue
            for r in _FRND:
                add([r], d, s)
                if d != "bf16":
                    add([r, "sat"], d, s)
                if d == "f32":
                    add([r, "ftz"], d, s)
                    add([r, "ftz", "sat"], d, s)
    order = {"f16": 0, "bf16": 0, "f32": 1, "f64": 2}
    for d in F:
        for s in F:
            ftz = "f32" in (d, s)
            sat_ok = "bf16" not in (d, s)
            if d == s:
                rnds = [None] + list(_IRND)
            elif order[d] > order[s]:
                rnds = [None]
            else:
                rnds = list(_FRND)
            for r in rnds:
                base = [r] if r else []
                add(base, d, s)
                if sat_ok:
                    add(base + ["sat"], d, s)
                if ftz and not (d == "f64" and s == "bf16"):
                    add(base + ["ftz"], d, s)
                    if sat_ok:
                        add(base + ["ftz", "sat"], d, s)
    for d in ("f16", "bf16"):
        for r in ("rn", "rz"):
            for extra in (["satfinite"], ["relu"], ["relu", "satfinite"]):
                add([r] + extra, d, "f32")
    for d in ("f16x2", "bf16x2"):
        for r in ("rn", "rz"):
            for extra in ([], ["satfinite"], ["relu"], ["relu", "satfinite"]):
                add([r] + extra, d, "f32", 32, [32, 32])
    for mods in (["rna"], ["rna", "satfinite"], ["rn"], ["rz"]):
        add(mods, "tf32", "f32", 32, [32])
    for d in ("e4m3x2", "e5m2x2"):
        for extra in ([], ["relu"]):
            add(["rn", "satfinite"] + extra, d, "f32", 16, [32, 32])
            add(["rn", "satfinite"] + extra, d, "f16x2", 16, [32])
            add(["rn"] + extra, "f16x2", d, 32, [16])
    return forms


_CVT_FORMS = cvt_forms()


class _Gen:
    """Generation state: the random source, ids, and the per-family instruction makers."""

    def __init__(self, seed: int, version: int = 2):
        self.rng = random.Random(seed)
        self.next_id = 0
        self.version = version
        self.nacc = 0                 # version 6, 4 warps: the accumulator bank (calib.fuzz.wgmma_ops)
        self.wg_inflight: list = []   # register sets of the groups the generator left in flight
        self.wg_smem = 0              # shared-memory bytes left for wgmma tiles

    def nid(self) -> int:
        self.next_id += 1
        return self.next_id

    # ---------------------------------------------------------------------------------- operands
    def reg(self, size: int) -> str:
        return f"{R[size]}{self.rng.randrange(NPOOL[size])}"

    def other_pred(self, p: str) -> str:
        return f"%p{self.rng.choice([i for i in range(NP) if f'%p{i}' != p])}"

    def pred(self, neg_ok=False) -> str:
        p = f"%p{self.rng.randrange(NP)}"
        return ("!" + p) if neg_ok and self.rng.random() < 0.3 else p

    def imm_int(self, t: str) -> str:
        n = TSIZE[t] if t[0] in "usb" and t[1:].isdigit() else 32
        rng = self.rng
        u = rng.random()
        if u < 0.4:
            v = rng.randint(0, 40)
        elif u < 0.7:
            v = rng.choice([(1 << n) - 1, (1 << (n - 1)) - 1, 1 << (n - 1), n, n - 1, 255, 256])
        else:
            v = rng.getrandbits(n)
        if t[0] == "s" and v >= 1 << (n - 1) and rng.random() < 0.5:
            return str(v - (1 << n))
        return f"0x{v:X}" if v > 9 else str(v)

    def imm_float(self, t: str) -> str:
        if t == "f32":
            return f"0f{_f32_value(self.rng):08X}"
        return f"0d{value64(self.rng) if self.rng.random() < 0.3 else self._f64():016X}"

    def _f64(self) -> int:
        v = self.rng.choice(_F64_SPECIAL) if self.rng.random() < 0.3 else \
            (self.rng.getrandbits(1) << 63) | (self.rng.randint(1000, 1046) << 52) | self.rng.getrandbits(52)
        return v

    def bitpos(self) -> str:
        """A bit position / field length operand (u32; immediates must be in 0..255)."""
        if self.rng.random() < 0.5:
            return str(self.rng.choice([0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 255, self.rng.randint(0, 70)]))
        return self.reg(32)

    def src(self, t: str, imm: float = 0.2) -> str:
        """A source operand of type t: a pool register or (with probability imm) an immediate."""
        if self.rng.random() < imm:
            if t in ("f32", "f64"):
                return self.imm_float(t)
            if t[0] in "usb" and t[1:].isdigit():
                return self.imm_int(t)
        return self.reg(reg_size(t))

    def ins(self, text, guard_ok=True) -> Ins:
        g = None
        if guard_ok and self.rng.random() < 0.12:
            g = self.pred(neg_ok=True)
        return Ins(text, g, self.nid())

    # ---------------------------------------------------------------------------------- integer
    def g_intarith(self):
        rng = self.rng
        op = rng.choice(["add", "sub", "add", "sub", "min", "max", "abs", "neg", "div", "rem", "sad", "addsat"])
        t = rng.choice(["u16", "s16", "u32", "s32", "u64", "s64", "u32", "s32"])
        sz = reg_size(t)
        d = self.reg(sz)
        if op == "addsat":
            o = rng.choice(["add", "sub"])
            return self.ins(f"{o}.sat.s32 {self.reg(32)}, {self.src('s32')}, {self.src('s32')}")
        if op in ("abs", "neg"):
            t = rng.choice(["s16", "s32", "s64"] if self.version < 2 else ["s32", "s64"])  # v2: no s16 (V2_AVOIDS)
            return self.ins(f"{op}.{t} {self.reg(reg_size(t))}, {self.reg(reg_size(t))}")
        if op in ("min", "max") and rng.random() < 0.25:
            if rng.random() < 0.5:
                return self.ins(f"{op}.relu.s32 {self.reg(32)}, {self.reg(32)}, {self.src('s32')}")
            t = rng.choice(["u16x2", "s16x2"])
            relu = ".relu" if t == "s16x2" and rng.random() < 0.5 else ""
            return self.ins(f"{op}{relu}.{t} {self.reg(32)}, {self.reg(32)}, {self.reg(32)}")
        if op == "sad":
            return self.ins(f"sad.{t} {d}, {self.reg(sz)}, {self.src(t)}, {self.src(t)}")
        return self.ins(f"{op}.{t} {d}, {self.reg(sz)}, {self.src(t)}")

    def g_mul(self):
        rng = self.rng
        form = rng.choice(["lo", "hi", "wide", "lo", "hi", "wide", "24"])
        if form == "wide":
            t = rng.choice(["u16", "s16", "u32", "s32"])
            sz = reg_size(t)
            if rng.random() < 0.5:
                return self.ins(f"mul.wide.{t} {self.reg(2 * sz)}, {self.reg(sz)}, {self.src(t)}")
            ct = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}[t]
            return self.ins(f"mad.wide.{t} {self.reg(2 * sz)}, {self.reg(sz)}, {self.src(t)}, {self.src(ct)}")
        if form == "24":
            t = rng.choice(["u32", "s32"])
            hl = rng.choice(["lo", "hi"])
            if rng.random() < 0.5:
                return self.ins(f"mul24.{hl}.{t} {self.reg(32)}, {self.reg(32)}, {self.src(t)}")
            return self.ins(f"mad24.{hl}.{t} {self.reg(32)}, {self.reg(32)}, {self.src(t)}, {self.src(t)}")
        t = rng.choice(["u16", "s16", "u32", "s32", "u64", "s64"])
        sz = reg_size(t)
        if rng.random() < 0.5:
            return self.ins(f"mul.{form}.{t} {self.reg(sz)}, {self.reg(sz)}, {self.src(t)}")
        if form == "hi" and t == "s32" and rng.random() < 0.3:
            d, a, b = self.reg(32), self.reg(32), self.src(t)       # (the order the random source is drawn in)
            return self.ins(f"mad.hi.sat.s32 {d}, {a}, {b}, {self._addend(t, d)}")
        d, a, b = self.reg(sz), self.reg(sz), self.src(t)
        c = self._addend(t, d) if form == "hi" else self.src(t)
        return self.ins(f"mad.{form}.{t} {d}, {a}, {b}, {c}")

    def _addend(self, t: str, d: str) -> str:
        """mad.hi's addend; v2 never makes it the destination (V2_AVOIDS: ptxas 13.0's loop unroller drops
        copies of a self-accumulating mad.hi)."""
        c = self.src(t)
        while self.version >= 2 and c == d:
            c = self.src(t)
        return c

    def g_carry(self):
        rng = self.rng
        t = rng.choice(["u32", "s32", "u64", "s64"])
        sz = reg_size(t)
        n = rng.randint(2, 4)
        kind = rng.choice(["add", "sub", "mad"]) if sz == 32 else rng.choice(["add", "sub"])
        items = []
        for i in range(n):
            first, last = i == 0, i == n - 1
            if kind == "mad":
                hl = rng.choice(["lo", "hi"])
                op = "mad" if first else "madc"
                cc = "" if last else ".cc"
                d, a, b = self.reg(sz), self.reg(sz), self.src(t)
                c = self._addend(t, d) if hl == "hi" else self.src(t)
                txt = f"{op}.{hl}{cc}.{t} {d}, {a}, {b}, {c}"
            else:
                op = kind if first else kind + "c"
                cc = "" if last else ".cc"
                txt = f"{op}{cc}.{t} {self.reg(sz)}, {self.reg(sz)}, {self.src(t)}"
            items.append(Ins(txt, None, self.nid()))
        return Seq(items, self.nid())

    def g_bits(self):
        rng = self.rng
        op = rng.choice(["popc", "clz", "brev", "bfind", "bfe", "bfi", "szext", "bmsk", "dp4a", "dp2a", "fns"])
        if op in ("popc", "clz"):
            t = rng.choice(["b32", "b64"])
            return self.ins(f"{op}.{t} {self.reg(32)}, {self.reg(reg_size(t))}")
        if op == "brev":
            t = rng.choice(["b32", "b64"])
            return self.ins(f"brev.{t} {self.reg(reg_size(t))}, {self.reg(reg_size(t))}")
        if op == "bfind":
            t = rng.choice(["u32", "s32", "u64", "s64"])
            sh = ".shiftamt" if rng.random() < 0.4 else ""
            return self.ins(f"bfind{sh}.{t} {self.reg(32)}, {self.reg(reg_size(t))}")
        if op == "bfe":
            t = rng.choice(["u32", "s32", "u64", "s64"])
            return self.ins(f"bfe.{t} {self.reg(reg_size(t))}, {self.reg(reg_size(t))}, {self.bitpos()}, "
                            f"{self.bitpos()}")
        if op == "bfi":
            t = rng.choice(["b32", "b64"])
            sz = reg_size(t)
            return self.ins(f"bfi.{t} {self.reg(sz)}, {self.reg(sz)}, {self.reg(sz)}, {self.bitpos()}, "
                            f"{self.bitpos()}")
        if op == "szext":
            return self.ins(f"szext.{rng.choice(['wrap', 'clamp'])}.{rng.choice(['u32', 's32'])} {self.reg(32)}, "
                            f"{self.reg(32)}, {self.src('u32', 0.5)}")
        if op == "bmsk":
            return self.ins(f"bmsk.{rng.choice(['wrap', 'clamp'])}.b32 {self.reg(32)}, {self.src('u32', 0.3)}, "
                            f"{self.src('u32', 0.5)}")
        if op == "dp4a":
            return self.ins(f"dp4a.{rng.choice(['u32', 's32'])}.{rng.choice(['u32', 's32'])} {self.reg(32)}, "
                            f"{self.reg(32)}, {self.reg(32)}, {self.reg(32)}")
        if op == "dp2a":
            return self.ins(f"dp2a.{rng.choice(['lo', 'hi'])}.{rng.choice(['u32', 's32'])}."
                            f"{rng.choice(['u32', 's32'])} {self.reg(32)}, {self.reg(32)}, {self.reg(32)}, {self.reg(32)}")
        # fns: base in range (a value > 31 is undefined), offset any
        return self.ins(f"fns.b32 {self.reg(32)}, {self.reg(32)}, {rng.randint(0, 31)}, {self.src('s32', 0.5)}")

    def g_logic(self):
        rng = self.rng
        op = rng.choice(["and", "or", "xor", "not", "cnot", "lop3", "lop3", "shl", "shr", "shf", "prmt", "prmt"])
        if op in ("and", "or", "xor", "not"):
            t = rng.choice(["b16", "b32", "b64", "b32", "pred"])
            if t == "pred":
                a = [self.pred(neg_ok=True) for _ in range(2)]
                if op == "not":
                    return self.ins(f"not.pred {self.pred()}, {a[0].lstrip('!')}")
                return self.ins(f"{op}.pred {self.pred()}, {a[0]}, {a[1]}")
            sz = reg_size(t)
            if op == "not":
                return self.ins(f"not.{t} {self.reg(sz)}, {self.reg(sz)}")
            return self.ins(f"{op}.{t} {self.reg(sz)}, {self.reg(sz)}, {self.src(t)}")
        if op == "cnot":
            t = rng.choice(["b16", "b32", "b64"])
            return self.ins(f"cnot.{t} {self.reg(reg_size(t))}, {self.reg(reg_size(t))}")
        if op == "lop3":
            return self.ins(f"lop3.b32 {self.reg(32)}, {self.reg(32)}, {self.src('b32')}, {self.src('b32')}, "
                            f"0x{rng.getrandbits(8):02X}")
        if op in ("shl", "shr"):
            t = rng.choice(["b16", "b32", "b64"] if op == "shl" else
                           ["b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"])
            sz = reg_size(t)
            amt = self.src("u32", 0.6) if rng.random() < 0.8 else self.reg(32)
            if self.version >= 2 and sz == 64 and amt.startswith("%"):
                amt = self.imm_int("u32")   # V2_AVOIDS: a 64-bit shift by a register ptxas saw written as a float
            return self.ins(f"{op}.{t} {self.reg(sz)}, {self.reg(sz)}, {amt}")
        if op == "shf":
            return self.ins(f"shf.{rng.choice(['l', 'r'])}.{rng.choice(['wrap', 'clamp'])}.b32 {self.reg(32)}, "
                            f"{self.reg(32)}, {self.reg(32)}, {self.src('u32', 0.5)}")
        mode = rng.choice(["", "", "", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"])
        return self.ins(f"prmt.b32{mode} {self.reg(32)}, {self.reg(32)}, {self.src('b32', 0.2)}, "
                        f"{self.src('b32', 0.6)}")

    def g_move(self):
        rng = self.rng
        u = rng.random()
        if u < 0.25:
            t = rng.choice(["b16", "b32", "b64"])
            return self.ins(f"mov.{t} {self.reg(reg_size(t))}, {self.src(t, 0.5)}")
        if u < 0.45:
            return self.ins(f"mov.b32 {self.reg(32)}, {{{self.reg(16)}, {self.reg(16)}}}")
        if u < 0.6:
            a, b = rng.sample(range(N16), 2)
            return self.ins(f"mov.b32 {{%h{a}, %h{b}}}, {self.reg(32)}")
        if u < 0.75:
            return self.ins(f"mov.b64 {self.reg(64)}, {{{self.reg(32)}, {self.reg(32)}}}")
        if u < 0.9:
            a, b = rng.sample(range(N32), 2)
            return self.ins(f"mov.b64 {{%r{a}, %r{b}}}, {self.reg(64)}")
        return self.ins(f"mov.u32 {self.reg(32)}, {rng.choice(['%laneid', '%tid.x', '%ntid.x'])}")

    def g_compare(self):
        rng = self.rng
        u = rng.random()
        if u < 0.55:
            return self.setp()
        if u < 0.8:
            t = rng.choice(["b16", "b32", "b64", "f32", "f64", "u32", "s64"])
            return self.ins(f"selp.{t} {self.reg(reg_size(t))}, {self.src(t)}, {self.src(t)}, {self.pred()}")
        if u < 0.9:
            dt = rng.choice(["b32", "u32", "s32", "f32"])
            ct = rng.choice(["s32", "f32"])
            ftz = ".ftz" if ct == "f32" and rng.random() < 0.3 else ""
            return self.ins(f"slct{ftz}.{dt}.{ct} {self.reg(32)}, {self.src(dt)}, {self.src(dt)}, {self.reg(32)}")
        st = rng.choice(["u32", "s32", "f32", "f64", "u64"])
        dt = rng.choice(["u32", "s32", "f32"])
        ops = self._cmp_ops(st)
        ftz = ".ftz" if st == "f32" and rng.random() < 0.3 else ""
        return self.ins(f"set.{rng.choice(ops)}{ftz}.{dt}.{st} {self.reg(32)}, {self.reg(reg_size(st))}, "
                        f"{self.src(st)}")

    def _cmp_ops(self, t):
        if t.startswith("f") or t.startswith("bf"):
            return ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"]
        if t[0] == "u":
            return ["eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"]
        if t[0] == "b":
            return ["eq", "ne"]
        return ["eq", "ne", "lt", "le", "gt", "ge"]

    def setp(self, dst=None):
        rng = self.rng
        t = rng.choice(["u16", "s16", "u32", "s32", "u64", "s64", "b32", "f32", "f32", "f64", "f16", "bf16",
                        "f16x2", "bf16x2"])
        op = rng.choice(self._cmp_ops(t))
        ftz = ".ftz" if t in ("f32", "f16", "f16x2") and rng.random() < 0.25 else ""
        imm = 0.25 if t[0] in "usb" and "16" not in t or t in ("f32", "f64") else 0.0
        if t == "bf16":
            imm = 0.0
        a, b = self.reg(reg_size(t)), self.src(t, imm)
        d = dst or self.pred()
        if t.endswith("x2") or (dst is None and t not in ("f16", "bf16") and rng.random() < 0.2):
            # p and q distinct: with p == q ptxas keeps p on an H100 (tcsim writes q last); PTX leaves it open
            d = f"{d}|{self.other_pred(d)}"
        comb = ""
        if rng.random() < 0.2:
            comb = f".{rng.choice(['and', 'or', 'xor'])}"
            return self.ins(f"setp.{op}{comb}{ftz}.{t} {d}, {a}, {b}, {self.pred(neg_ok=True)}")
        return self.ins(f"setp.{op}{ftz}.{t} {d}, {a}, {b}")

    # ---------------------------------------------------------------------------------- float
    def g_float(self):
        rng = self.rng
        t = rng.choice(["f32", "f32", "f32", "f64", "f64", "f16", "f16x2", "bf16", "bf16x2"])
        half = t not in ("f32", "f64")
        op = rng.choice(["add", "sub", "mul", "fma", "fma", "min", "max", "abs", "neg"] +
                        ([] if half else ["div", "rcp", "sqrt", "copysign", "testp", "mad"]))
        if self.version >= 2 and op in ("abs", "neg"):
            t, half = "f64", False       # v2: no f32/f16/bf16 sign ops (their NaN results depend on ptxas)
        sz = reg_size(t)
        imm = 0.0 if half else 0.15
        a = lambda: self.src(t, imm)  # noqa: E731
        d = self.reg(sz)
        ftz_ok = t in ("f32", "f16", "f16x2")
        sat_ok = t in ("f32", "f16", "f16x2")
        ftz = ".ftz" if ftz_ok and rng.random() < 0.3 else ""
        sat = ".sat" if sat_ok and rng.random() < 0.2 else ""
        if op in ("add", "sub", "mul"):
            rnd = rng.choice(["", ".rn", ".rz", ".rm", ".rp"]) if not half else rng.choice(["", ".rn"])
            if t.startswith("bf16"):
                ftz = sat = ""
            if t == "f64":
                ftz = sat = ""
            return self.ins(f"{op}{rnd}{ftz}{sat}.{t} {d}, {self.reg(sz)}, {a()}")
        if op in ("fma", "mad"):
            rnd = rng.choice(["rn", "rz", "rm", "rp"]) if not half else "rn"
            relu = ""
            if half and rng.random() < 0.3 and not sat:
                relu = ".relu"
            if t.startswith("bf16") or t == "f64":
                ftz = sat = ""
            return self.ins(f"{op}.{rnd}{ftz}{sat}{relu}.{t} {d}, {self.reg(sz)}, {a()}, {a()}")
        if op in ("min", "max"):
            nan = ".NaN" if t != "f64" and rng.random() < 0.3 else ""
            xs = ".xorsign.abs" if t != "f64" and rng.random() < 0.2 else ""
            if t.startswith("bf16") or t == "f64":
                ftz = ""
            return self.ins(f"{op}{ftz}{nan}{xs}.{t} {d}, {self.reg(sz)}, {a() if not xs else self.reg(sz)}")
        if op in ("abs", "neg"):
            if t.startswith("bf16") or t == "f64":
                ftz = ""
            return self.ins(f"{op}{ftz}.{t} {d}, {self.reg(sz)}")
        if op == "div":
            rnd = rng.choice(["rn", "rz", "rm", "rp"])
            if t == "f64":
                ftz = ""
            return self.ins(f"div.{rnd}{ftz}.{t} {d}, {self.reg(sz)}, {a()}")
        if op in ("rcp", "sqrt"):
            rnd = rng.choice(["rn", "rz", "rm", "rp"])
            if t == "f64":
                ftz = ""
            return self.ins(f"{op}.{rnd}{ftz}.{t} {d}, {self.reg(sz)}")
        if op == "copysign":
            return self.ins(f"copysign.{t} {d}, {self.reg(sz)}, {self.reg(sz)}")
        tp = rng.choice(["finite", "infinite", "number", "notanumber", "normal", "subnormal"])
        return self.ins(f"testp.{tp}.{t} {self.pred()}, {self.reg(sz)}")

    def g_cvt(self):
        rng = self.rng
        mn, dsz, ssz = rng.choice(_CVT_FORMS)
        srcs = ", ".join(self.reg(s) for s in ssz)
        return self.ins(f"{mn} {self.reg(dsz)}, {srcs}")

    # ---------------------------------------------------------------------------------- warp collectives
    def g_collective(self):
        rng = self.rng
        u = rng.random()
        full = "0xffffffff"
        if u < 0.35:
            mode = rng.choice(["up", "down", "bfly", "idx"])
            b = str(rng.randint(0, 31)) if rng.random() < 0.6 else self.reg(32)
            if mode == "up":
                c = rng.choice([0, 0, 0x1800, 0x1C00, 0x1E00])
            else:
                c = rng.choice([0x1F, 0x1F, 0x1F, 0x0F, 0x07, 0x181F, 0x1C1F, 0x1E1F, 0x101F, 0x1F03])
            d = self.reg(32)
            if rng.random() < 0.4:
                d = f"{d}|{self.pred()}"
            return Ins(f"shfl.sync.{mode}.b32 {d}, {self.reg(32)}, {b}, 0x{c:X}, {full}", None, self.nid())
        if u < 0.55:
            mode = rng.choice(["all", "any", "uni", "ballot"])
            if mode == "ballot":
                return Ins(f"vote.sync.ballot.b32 {self.reg(32)}, {self.pred(True)}, {full}", None, self.nid())
            return Ins(f"vote.sync.{mode}.pred {self.pred()}, {self.pred(True)}, {full}", None, self.nid())
        if u < 0.62:
            return Ins(f"activemask.b32 {self.reg(32)}", None, self.nid())
        if u < 0.7:
            d = self.reg(32) if rng.random() < 0.7 else "_"
            return Ins(f"elect.sync {d}|{self.pred()}, {full}", None, self.nid())
        if u < 0.85:
            op = rng.choice(["add", "min", "max", "and", "or", "xor"])
            t = rng.choice(["u32", "s32"]) if op in ("add", "min", "max") else "b32"
            return Ins(f"redux.sync.{op}.{t} {self.reg(32)}, {self.reg(32)}, {full}", None, self.nid())
        t = rng.choice(["b32", "b64"])
        if rng.random() < 0.5:
            return Ins(f"match.any.sync.{t} {self.reg(32)}, {self.reg(reg_size(t))}, {full}", None, self.nid())
        return Ins(f"match.all.sync.{t} {self.reg(32)}|{self.pred()}, {self.reg(reg_size(t))}, {full}", None,
                   self.nid())

    def g_mma(self, a_regs=None):
        rng = self.rng
        form = rng.choice(["m16n8k16.row.col.f32.f16.f16.f32", "m16n8k16.row.col.f32.bf16.bf16.f32",
                           "m16n8k16.row.col.f16.f16.f16.f16", "m16n8k16.row.col.f32.f16.f16.f32",
                           "m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k8.row.col.f32.f16.f16.f32",
                           "m16n8k8.row.col.f32.bf16.bf16.f32", "m16n8k8.row.col.f32.tf32.tf32.f32",
                           "m16n8k16.row.col.f16.f16.f16.f16", "m16n8k32.row.col.f32.e4m3.e5m2.f32"])
        shape = form.split(".")[0]
        dt, at = form.split(".")[3], form.split(".")[4]
        na = {"m16n8k16": 4, "m16n8k8": 2, "m16n8k32": 4}[shape]
        nb = {"m16n8k16": 2, "m16n8k8": 1, "m16n8k32": 2}[shape]
        if at == "tf32":
            na, nb = 4, 2
        nc = 4 if dt == "f32" else 2
        A = list(a_regs[:na]) if a_regs and len(a_regs) >= na else [self.reg(32) for _ in range(na)]
        B = [self.reg(32) for _ in range(nb)]
        # D never aliases A or B, and C is either D itself (accumulate) or disjoint from D: on an H100, ptxas
        # lowers some forms (fp8 m16n8k32, f16 m16n8k16 with f16 C) to several HMMAs and a D that aliases
        # A/B (or another element of C) is clobbered between them (tests/fuzz_regressions/fuzz_1091_value)
        free = [i for i in range(N32) if f"%r{i}" not in A + B]
        D = [f"%r{i}" for i in rng.sample(free, nc)]
        if rng.random() < 0.4:
            C = list(D)
        else:
            C = [f"%r{rng.choice([i for i in range(N32) if f'%r{i}' not in D])}" for _ in range(nc)]
        v = lambda xs: "{" + ", ".join(xs) + "}"  # noqa: E731
        return Ins(f"mma.sync.aligned.{form} {v(D)}, {v(A)}, {v(B)}, {v(C)}", None, self.nid())

    # ---------------------------------------------------------------------------------- rounds
    def g_round(self):
        rng = self.rng
        kind = rng.choice(["smem", "smem", "bulk", "ldm"])
        if kind == "smem":
            w = rng.choice([2, 4, 4, 8])
            rd = Round("smem", sync=rng.choice(["bar", "bar", "mbar", "mbar_token", "mbar_test"]), width=w,
                       src=self.reg(max(16, 8 * w)), id=self.nid())
            for _ in range(rng.randint(1, 3)):
                sel = ("rot", rng.randint(1, 127)) if rng.random() < 0.7 else ("data", self.reg(32))
                rd.reads.append(Load(self.reg(max(16, 8 * w)), w, sel, self.nid()))
            return [rd]
        if kind == "bulk":
            nb = 16 * rng.randint(1, 16)
            goff = 16 * rng.randint(0, (BULK_BYTES - nb) // 16)
            rd = Round("bulk", nbytes=nb, goff=goff, id=self.nid())
            for _ in range(rng.randint(1, 3)):
                w = rng.choice([2, 4, 4, 8]) if nb % 8 == 0 else rng.choice([2, 4])
                rd.reads.append(Load(self.reg(max(16, 8 * w)), w, ("bytes", rng.randint(1, 7), rng.randint(0, 63)),
                                     self.nid()))
            return [rd]
        srcs = tuple(self.reg(32) for _ in range(4))
        rd = Round("ldm", srcs=srcs, id=self.nid())
        out = [rd]
        for _ in range(rng.randint(1, 2)):
            x = rng.choice([1, 2, 4, 4])
            dsts = [f"%r{i}" for i in rng.sample(range(N32), x)]
            rd.reads.append(LdMatrix(dsts, rng.random() < 0.3, rng.choice([1, 1, 3, 5, 7]), rng.randint(0, 127),
                                     self.nid()))
            if x == 4 and rng.random() < 0.7:
                out.append(self.g_mma(dsts))
        return out

    # ---------------------------------------------------------------------------------- structure
    ALU = (("g_intarith", 10), ("g_mul", 8), ("g_carry", 2), ("g_bits", 7), ("g_logic", 10), ("g_move", 4),
           ("g_compare", 8), ("g_float", 22), ("g_cvt", 14))

    def alu(self):
        names, weights = zip(*self.ALU)
        return getattr(self, self.rng.choices(names, weights)[0])()

    def block_items(self, n: int, depth: int) -> list:
        items = []
        while len(items) < n:
            u = self.rng.random()
            if depth < 2 and u < 0.08:
                items.append(self.g_if(depth))
            elif depth < 2 and u < 0.13:
                items.append(self.g_loop(depth))
            else:
                items.append(self.alu())
        return items

    def g_if(self, depth):
        rng = self.rng
        body = self.block_items(rng.randint(1, 5), depth + 1)
        if rng.random() < 0.4:
            return If([], self.pred(neg_ok=True), body, self.nid())
        q = f"%q{1 + depth}"
        cond = self.setp(dst=q)
        cond.guard = None
        return If([cond], ("!" if rng.random() < 0.5 else "") + q, body, self.nid())

    def g_loop(self, depth):
        rng = self.rng
        return Loop(self.reg(32), rng.choice([1, 3, 3]), depth, self.block_items(rng.randint(1, 4), depth + 1),
                    self.nid())

    def top_items(self, n: int) -> list:
        items = []
        while len(items) < n:
            u = self.rng.random()
            if self.nacc:
                if u < 0.10:
                    g = WG.gen_group(self)
                    if g is not None:
                        items.append(g)
                    continue
                if u < 0.14:
                    items.append(WG.gen_wait(self))
                    continue
                if u < 0.19:
                    items.append(WG.gen_acc_ins(self))
                    continue
                u = self.rng.random()
            if u < 0.08:
                items += self.g_round()
            elif u < 0.16:
                items.append(self.g_collective())
            elif u < 0.19:
                items.append(self.g_mma())
            elif u < 0.27:
                items.append(self.g_if(0))
            elif u < 0.32:
                items.append(self.g_loop(0))
            else:
                items.append(self.alu())
        return items


def generate(seed: int, size: int | None = None, nwarps: int | None = None, version: int | None = None) -> Program:
    """The program of ``seed``: ``size`` top-level items (default 20..60), ``nwarps`` warps (default 1..4).
    ``version`` selects the generator (default :data:`VERSION`; recorded campaigns name theirs)."""
    version = VERSION if version is None else version
    if version not in (1, 2, 3, 4, 5, 6, 7, 8):
        raise ValueError(f"unknown fuzz generator version {version} (known: 1, 2, 3, 4, 5, 6, 7, 8)")
    return _generate(seed, size, nwarps, version).copy()


@functools.lru_cache(maxsize=256)
def _generate(seed: int, size, nwarps, version: int) -> Program:
    g = _Gen(seed, version)
    rng = g.rng
    if version >= 6:
        # most version-6 programs are one warpgroup with wgmma (calib.fuzz.wgmma_ops)
        nw = nwarps or rng.choice([1, 2, 3, 4, 4, 4, 4, 4, 4, 4])
        if nw == 4:
            g.nacc = 4 * rng.randint(8, WG.NACC_MAX // 4)
            g.wg_smem = WG.SMEM_LIMIT - 12 * 1024            # the rest for the exchange rounds
    else:
        nw = nwarps or rng.choice([1, 1, 2, 3, 4])
    n = size or rng.randint(20, 60)
    items = g.top_items(n)
    if g.nacc and not any(isinstance(it, WgGroup) for it in items):
        grp = WG.gen_group(g)
        if grp is not None:
            items.insert(rng.randrange(len(items) + 1), grp)
    inputs = make_inputs(random.Random(seed * 7919 + 17))
    if g.nacc:
        inputs = np.concatenate([inputs, np.frombuffer(WG.tile_area(seed) + WG.acc_area(seed, g.nacc), np.uint8)])
    prog = Program(seed=seed, nwarps=nw, items=items, inputs=inputs, nacc=g.nacc,
                   version=version if version >= 8 else 0)
    while g.nacc:           # the exchange rounds and the tiles together within the static shared memory
        r = _Render(prog)
        r.block(prog.items)
        if r.smem <= WG.SMEM_LIMIT:
            break
        last = max(i for i, it in enumerate(prog.items) if isinstance(it, WgGroup))
        del prog.items[last]
    if version >= 3:
        _without_noted(g, prog)
    return prog


def _leaf_lines(prog: Program) -> tuple:
    """(rendered PTX text, {line number: id of the instruction leaf or ``if`` rendered there})."""
    text = prog.render()
    lines = text.split("\n")
    where = {}
    k = 0
    for node, want in _rendered_nodes(prog.items):
        while k < len(lines) and not (lines[k].strip() == want or (not isinstance(node, Ins)
                                                                   and lines[k].strip().startswith(want))):
            k += 1
        if k == len(lines):
            raise AssertionError(f"rendered program lost the instruction {want!r}")
        where[k + 1] = node.id
        k += 1
    return text, where


def _rendered_nodes(items):
    """(node, its rendered line or line prefix) for every instruction leaf and every ``if``'s branch, in render
    order."""
    for it in items:
        if isinstance(it, Seq):
            for x in it.items:
                yield x, x.lines(None)[0]
        elif isinstance(it, If):
            for c in it.cond:
                yield c, c.lines(None)[0]
            yield it, f"@{it.pred} bra "
            yield from _rendered_nodes(it.body)
        elif isinstance(it, Loop):
            yield from _rendered_nodes(it.body)
        elif isinstance(it, Ins):
            yield it, it.lines(None)[0]


def _replace_leaf(g: "_Gen", items: list, target: int) -> bool:
    """Replace the item holding node ``target`` (an instruction, its Seq, an ``if`` or the ``if`` whose condition
    it computes) with a freshly drawn ALU item."""
    for i, it in enumerate(items):
        if it.id == target or (isinstance(it, Seq) and any(x.id == target for x in it.items)) \
                or (isinstance(it, If) and any(c.id == target for c in it.cond)):
            items[i] = g.alu()
            return True
        if isinstance(it, (If, Loop)) and _replace_leaf(g, it.body, target):
            return True
    return False


def _without_noted(g: "_Gen", prog: Program, rounds: int = 200) -> None:
    """Versions 3 to 5: draw every instruction that the version's checks (:data:`V3_LINT_CHECKS`,
    :data:`V4_LINT_CHECKS`, :data:`V5_LINT_CHECKS`) note again until none is left."""
    from tcsim.isa.lint import notes
    from tcsim.isa.parser import parse

    for _ in range(rounds):
        text, where = _leaf_lines(prog)
        found = notes(parse(text), checks=_LINT_CHECKS[g.version])
        if not found:
            return
        lost = [str(n) for n in found if n.loc.line not in where]
        if lost:
            raise AssertionError(f"fuzz program {prog.seed}: a note on a line the generator did not draw: {lost[0]}")
        noted = sorted({where[n.loc.line] for n in found})
        for target in noted:
            _replace_leaf(g, prog.items, target)
    raise RuntimeError(f"fuzz program {prog.seed}: lint notes left after {rounds} rounds")
