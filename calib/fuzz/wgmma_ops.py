"""wgmma programs for the differential fuzzer (generator versions 6-8): warpgroup MMA mixed with the ALU/memory items.

Version 7 makes the register-A operands ``xor.b32 %wa, pool, key`` (not ``mov`` copies), moves values into and out
of the accumulators by new-value instructions only and leaves imm-scale-a = -1 to A from a descriptor; version 8
renders with the waits :func:`render_wait` forgot before (calib/fuzz/generator.py ``V7_AVOIDS``, ``V8_LINT_CHECKS``).

A version-6 program of 4 warps (one warpgroup, PTX ISA 9.1 §9.7.15.1) carries, beside the items of
:mod:`calib.fuzz.generator`, these top-level tree nodes:

* :class:`WgGroup` -- one wgmma-group: its SMEM operand tiles are filled by every thread (16-byte
  ``st.shared.v4.b32`` stripes from pool registers or from the input's type-flavoured tile area), then
  ``fence.proxy.async.shared::cta`` + ``bar.sync`` (generic-proxy writes before async-proxy reads, §9.7.15.4),
  the register-A operands are copied into dedicated registers, ``wgmma.fence``, one or two *chains* of
  ``wgmma.mma_async`` (each chain one form -- f16 (f16 or f32 accumulator), bf16, tf32, every e4m3/e5m2 pair
  (f16 or f32), every s8/u8 pair (with and without ``.satfinite``) -- a random N, A from an SMEM descriptor or from
  registers, B from a descriptor, each operand K-major or (16-bit types) MN-major with no / 32B / 64B / 128B
  swizzle and its own LBO / SBO, one K-block of the tile per instruction as a K loop steps through a swizzle atom;
  scale-d as the immediate 0 / 1 or a warpgroup-uniform predicate; imm-scale-a/b = -1 on float kinds), then
  ``wgmma.commit_group``.  The group stays in flight while the following items run.
* :class:`WgWait` -- ``wgmma.wait_group N`` (N from 0 to the number of groups the generator had in flight).
* ``Ins`` leaves reading or writing accumulator registers (``%ac<j>``): a copy into the pools, f32 arithmetic,
  an accumulator written from the pools (the next group's C).

Registers: the accumulators are a bank ``%ac0 .. %ac<nacc-1>`` (loaded per thread from the input's accumulator
area in the prologue, dumped per thread after the records in the epilogue), register A operands live in
``%wa0 .. %wa15`` (four sets); no pool instruction touches either, so ALU items may run while groups are in
flight.  Every tree the minimiser can make renders to a valid program: the renderer tracks the groups in flight
and puts a ``wgmma.wait_group 0`` before a group or an accumulator instruction that would touch registers of a
group still in flight (the PTX ISA makes that access undefined), tiles are fresh SMEM allocations (never
rewritten), and the epilogue waits for everything.  Tiles are aligned to 1024 bytes (the 128-byte swizzle's
repeat) and their extent is bounded with LBO and SBO in either role, so an address model that swapped the two
would still read only this tile's initialised bytes.

Not drawn: ``.sp`` sparse wgmma, b1 ``.and.popc``, a non-zero matrix base offset (tcsim does not model it),
descriptors whose start is not within a swizzle atom row of a 1024-byte-aligned tile.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

NACC_MAX = 128                 # accumulator registers per thread (N = 256 with an f32 accumulator)
NA_SETS = 4                    # register-A sets %wa<4s .. 4s+3>
TILE_BYTES = 4096              # type-flavoured data area of the input (after the bulk area)
SMEM_LIMIT = 48 * 1024         # static shared memory of one kernel
STRIPE = 128 * 16              # bytes one v4 store per thread of the warpgroup writes

#: (kind, dtype, atype, btype, satfinite): every dense wgmma type combination but b1 (PTX ISA §9.7.15.5.2)
FORMS = ([("f16", "f16", "f16", "f16", False), ("f16", "f32", "f16", "f16", False),
          ("bf16", "f32", "bf16", "bf16", False), ("tf32", "f32", "tf32", "tf32", False)]
         + [("fp8", d, a, b, False) for d in ("f16", "f32") for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
         + [("int", "s32", a, b, s) for s in (False, True) for a in ("s8", "u8") for b in ("s8", "u8")])
KDIM = {"f16": 16, "bf16": 16, "tf32": 8, "fp8": 32, "int": 32}
ESIZE = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}
FLOAT_N = tuple(range(8, 257, 8))
INT_N = (8, 16, 24, 32) + tuple(range(48, 257, 16))
SWIZZLES = ("none", "32B", "64B", "128B")
WIDTH = {"none": 16, "32B": 32, "64B": 64, "128B": 128}
SWZ_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
_AC = re.compile(r"%ac(\d+)\b")
_WA = re.compile(r"%wa(\d+)\b")


# ============================================================================================ the tree

@dataclass
class Tile:
    """One SMEM operand tile: ``rows`` (M or N) x ``kblocks`` K-blocks of 32 bytes, in the canonical layout
    ``major`` / ``swizzle`` with byte offsets ``lbo`` / ``sbo`` (PTX ISA §9.7.15.5.1.2); ``size`` bytes (a
    multiple of :data:`STRIPE`), filled stripe by stripe from ``fills``: ``('regs', (4 pool registers))`` or
    ``('tile', mul, add)`` (16 bytes of the input's tile area, chunk ``(tid * mul + add) % 256``)."""
    major: str
    swizzle: str
    rows: int
    esize: int
    kblocks: int
    lbo: int
    sbo: int
    size: int
    fills: list

    def kstart(self, kb: int) -> int:
        """Byte offset of K-block ``kb``'s descriptor start from the tile's base."""
        if self.major == "K":
            return kb * 2 * self.lbo if self.swizzle == "none" else kb * 32
        return kb * 2 * (self.lbo if self.swizzle == "none" else self.sbo)

    def hi_bits(self) -> int:
        """The descriptor bits above the start address (LBO, SBO, swizzle; base offset 0)."""
        return ((self.lbo >> 4) << 16) | ((self.sbo >> 4) << 32) | (SWZ_CODE[self.swizzle] << 62)


@dataclass
class WgOp:
    """One ``wgmma.mma_async``: the form, the accumulator registers ``%ac<d> ..``, A from tile ``a_tile`` (index
    in the group) at K-block ``a_kb`` or from registers (``a_regs``: 4 pool registers copied into set
    ``a_set``), B from tile ``b_tile`` at ``b_kb``; ``scale_d``: '0', '1' or ('pred', input word offset, cmp,
    imm, negated)."""
    kind: str
    dtype: str
    atype: str
    btype: str
    sat: bool
    n: int
    d: int
    a_tile: int | None
    a_kb: int
    a_regs: tuple | None
    a_set: int
    b_tile: int
    b_kb: int
    scale_d: object
    neg_a: bool = False
    neg_b: bool = False
    id: int = 0
    a_keys: tuple | None = None   # version 7: the A registers are ``xor.b32 %wa, pool, key`` (no mov copy)

    @property
    def k(self) -> int:
        return KDIM[self.kind]

    @property
    def nd(self) -> int:
        return self.n // 4 if self.dtype == "f16" else self.n // 2

    def d_regs(self) -> list:
        return [f"%ac{self.d + i}" for i in range(self.nd)]


@dataclass
class WgGroup:
    tiles: list
    ops: list
    id: int = 0

    def registers(self) -> set:
        out = set()
        for op in self.ops:
            out.update(op.d_regs())
            if op.a_regs is not None:
                out.update(f"%wa{4 * op.a_set + i}" for i in range(4))
        return out


@dataclass
class WgWait:
    n: int
    id: int = 0


def has_wgmma(items) -> bool:
    """Whether top-level ``items`` hold a wgmma-group or wait (accumulator instructions alone need no warpgroup:
    the renderer waits only where a group is in flight)."""
    return any(isinstance(it, (WgGroup, WgWait)) for it in items)


# ============================================================================================ rendering

def _uses(text: str) -> set:
    return {f"%ac{m}" for m in _AC.findall(text)} | {f"%wa{m}" for m in _WA.findall(text)}


def wait_if_needed(r, regs: set) -> list:
    """``wgmma.wait_group 0`` when ``regs`` meet a group still in flight (render state ``r.wg_inflight``)."""
    if any(regs & g for g in r.wg_inflight):
        r.wg_inflight = []
        return ["wgmma.wait_group.sync.aligned 0;"]
    return []


def render_ac_ins(r, ins) -> list:
    return wait_if_needed(r, _uses(ins.text)) + ins.lines(r)


def render_wait(r, w: WgWait) -> list:
    if r.p.version >= 8:        # wait_group N leaves the newest N groups in flight (all of them when fewer)
        r.wg_inflight = r.wg_inflight[max(0, len(r.wg_inflight) - w.n):] if w.n else []
    else:                       # versions 6 and 7 as recorded: with fewer than N, all but the newest forgotten
        r.wg_inflight = r.wg_inflight[len(r.wg_inflight) - w.n:] if w.n else []
    return [f"wgmma.wait_group.sync.aligned {w.n};"]


def _desc(dst: str, tile: Tile, base: int, kb: int) -> list:
    return [f"add.u32 %k17, %k2, {base + tile.kstart(kb)};", f"cvt.u64.u32 {dst}, %k17;",
            f"shr.u64 {dst}, {dst}, 4;", f"and.b64 {dst}, {dst}, 16383;",
            f"or.b64 {dst}, {dst}, 0x{tile.hi_bits():016X};"]


def _scale(op: WgOp) -> tuple:
    """(set-up lines, the scale-d operand)."""
    if op.scale_d in ("0", "1"):
        return [], op.scale_d
    _, off, cmp, imm, neg = op.scale_d
    # thread 0's input word: the same value in every thread of the warpgroup (scale-d must be uniform)
    return [f"ld.global.b32 %k16, [%kd0+{off}];", f"setp.{cmp}.u32 %q6, %k16, {imm};"], ("!%q6" if neg else "%q6")


def op_text(op: WgOp, a: str, b: str, sd: str, trans_a: bool = False, trans_b: bool = False) -> str:
    sat = ".satfinite" if op.sat else ""
    d = "{" + ", ".join(op.d_regs()) + "}"
    imms = ""
    if op.kind != "int":
        imms = f", {-1 if op.neg_a else 1}, {-1 if op.neg_b else 1}"
        if op.kind in ("f16", "bf16"):
            imms += (f", {int(trans_a)}" if op.a_tile is not None else "") + f", {int(trans_b)}"
    return (f"wgmma.mma_async.sync.aligned.m64n{op.n}k{op.k}{sat}.{op.dtype}.{op.atype}.{op.btype} "
            f"{d}, {a}, {b}, {sd}{imms}")


def render_group(r, g: WgGroup) -> list:
    out = []
    bases = []
    for t in g.tiles:
        base = r.alloc_aligned(t.size, 1024)
        bases.append(base)
        r.wg_tiles.append((t, base))
        for j, src in enumerate(t.fills):
            if src[0] == "regs":
                regs = ", ".join(src[1])
            else:
                _, mul, add = src
                out += [f"mad.lo.u32 %k12, %k0, {mul}, {add};", f"and.b32 %k12, %k12, {TILE_BYTES // 16 - 1};",
                        "mul.wide.u32 %kd10, %k12, 16;", "add.u64 %kd10, %kd11, %kd10;",
                        "ld.global.v4.b32 {%k12, %k13, %k14, %k15}, [%kd10];"]
                regs = "%k12, %k13, %k14, %k15"
            out.append(f"st.shared.v4.b32 [%k5+{base + STRIPE * j}], {{{regs}}};")
    if g.tiles:
        out += ["fence.proxy.async.shared::cta;", "bar.sync 0;"]
    out += wait_if_needed(r, g.registers())
    for op in g.ops:
        if op.a_regs is not None and op.a_keys is not None:       # version 7: a new value, never a copy
            out += [f"xor.b32 %wa{4 * op.a_set + i}, {s}, 0x{k:08X};"
                    for i, (s, k) in enumerate(zip(op.a_regs, op.a_keys))]
        elif op.a_regs is not None:
            out += [f"mov.b32 %wa{4 * op.a_set + i}, {s};" for i, s in enumerate(op.a_regs)]
    out.append("wgmma.fence.sync.aligned;")
    for op in g.ops:
        bt = g.tiles[op.b_tile]
        trans_a = False
        pre, sd = _scale(op)
        out += pre
        out += _desc("%kd9", bt, bases[op.b_tile], op.b_kb)
        if op.a_tile is not None:
            at = g.tiles[op.a_tile]
            trans_a = at.major == "MN"
            out += _desc("%kd8", at, bases[op.a_tile], op.a_kb)
            a = "%kd8"
        else:
            a = "{" + ", ".join(f"%wa{4 * op.a_set + i}" for i in range(4)) + "}"
        out.append(op_text(op, a, "%kd9", sd, trans_a, bt.major == "MN") + ";")
    out.append("wgmma.commit_group.sync.aligned;")
    r.wg_inflight.append(g.registers())
    return out


def declarations(nacc: int) -> list:
    return [f"\t.reg .b32 %ac<{nacc}>;", f"\t.reg .b32 %wa<{4 * NA_SETS}>;"]


def prologue(nacc: int, nt: int, stride: int, bulk: int) -> list:
    """Tile-area pointer (%kd11), accumulator loads from the input's accumulator area, the dump pointer
    (%kd13)."""
    acc0 = nt * stride + bulk + TILE_BYTES
    out = [f"add.u64 %kd11, %kd0, {nt * stride + bulk};",
           f"mul.wide.u32 %kd12, %k0, {4 * nacc};", "add.u64 %kd13, %kd1, %kd12;",
           f"add.u64 %kd13, %kd13, {nt * stride};",
           "add.u64 %kd12, %kd0, %kd12;", f"add.u64 %kd12, %kd12, {acc0};"]
    for i in range(0, nacc, 4):
        out.append(f"ld.global.v4.b32 {{%ac{i}, %ac{i + 1}, %ac{i + 2}, %ac{i + 3}}}, [%kd12+{4 * i}];")
    return out


def epilogue(nacc: int, wgmma: bool = True) -> list:
    out = ["wgmma.wait_group.sync.aligned 0;"] if wgmma else []
    for i in range(0, nacc, 4):
        out.append(f"st.global.v4.b32 [%kd13+{4 * i}], {{%ac{i}, %ac{i + 1}, %ac{i + 2}, %ac{i + 3}}};")
    return out


# ============================================================================================ data

_SPECIAL_WORDS = np.array([0x7FC00000, 0xFF800000, 0x7F800000, 0x80000000, 0x00000001, 0x7E007E00, 0x7C00FC00,
                           0x7F7F7F7F, 0xFFFFFFFF, 0x80808080, 0x00800000, 0x03FF03FF], dtype=np.uint32)


def _words(g: np.random.Generator, n: int, specials: float) -> np.ndarray:
    """``n`` 32-bit words of mostly finite, moderate values of one flavour each: f16x2, bf16x2, f32 (tf32),
    4 x e4m3, 4 x e5m2; ``specials`` of them NaN / Inf / -0 / subnormal / saturating patterns."""
    u32 = lambda lo, hi, shape=(n,): g.integers(lo, hi, size=shape, dtype=np.uint32)  # noqa: E731
    h16 = (u32(0, 2) << 15) | (u32(11, 19) << 10) | u32(0, 1 << 10)
    h16b = (u32(0, 2) << 15) | (u32(11, 19) << 10) | u32(0, 1 << 10)
    bf = (u32(0, 2) << 15) | (u32(122, 132) << 7) | u32(0, 1 << 7)
    bfb = (u32(0, 2) << 15) | (u32(122, 132) << 7) | u32(0, 1 << 7)
    f32 = (u32(0, 2) << 31) | (u32(120, 134) << 23) | u32(0, 1 << 23)
    e4 = (u32(0, 2, (n, 4)) << 7) | (u32(3, 12, (n, 4)) << 3) | u32(0, 8, (n, 4))
    e5 = (u32(0, 2, (n, 4)) << 7) | (u32(10, 21, (n, 4)) << 2) | u32(0, 4, (n, 4))
    sh = np.array([0, 8, 16, 24], dtype=np.uint32)
    kinds = [h16 | (h16b << 16), bf | (bfb << 16), f32, (e4 << sh).sum(axis=1, dtype=np.uint32),
             (e5 << sh).sum(axis=1, dtype=np.uint32)]
    pick = g.choice(5, size=n, p=[0.3, 0.2, 0.2, 0.15, 0.15])
    out = np.choose(pick, kinds).astype(np.uint32)
    sp = g.random(n) < specials
    out[sp] = g.choice(_SPECIAL_WORDS, size=int(sp.sum()))
    return out


def tile_area(seed: int) -> bytes:
    """The input's tile area (:data:`TILE_BYTES`) for program ``seed``."""
    return _words(np.random.default_rng([seed, 1]), TILE_BYTES // 4, 0.02).tobytes()


def acc_area(seed: int, nacc: int) -> bytes:
    """Initial accumulators, ``nacc`` words for each of 128 threads: moderate floats of each flavour, a few
    specials, small and extreme integers."""
    g = np.random.default_rng([seed, 2])
    out = _words(g, 128 * nacc, 0.04)
    ints = g.random(out.size) < 0.2
    out[ints] = g.choice(np.array([0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 1000, 0xFFFFFC18], dtype=np.uint32),
                         size=int(ints.sum()))
    return out.tobytes()


# ============================================================================================ generation

def _pick_n(rng, kind: str, max_nd: int, dtype: str) -> int | None:
    legal = INT_N if kind == "int" else FLOAT_N
    per = 4 if dtype == "f16" else 2
    ok = [n for n in legal if n // per <= max_nd]
    if not ok:
        return None
    small = [n for n in ok if n <= 64]
    if small and rng.random() < 0.6:
        return rng.choice(small)
    return rng.choice(ok)


def _layout(rng, rows: int, esize: int, kblocks: int, major: str, swizzle: str) -> tuple:
    """(lbo, sbo, size) of a tile (module docstring of :class:`Tile`); size bounds the extent with LBO and SBO
    in either role."""
    pad = lambda: rng.choice([0, 0, 0, 16, 128, 256])  # noqa: E731
    W = WIDTH[swizzle]
    if major == "K":
        if swizzle == "none":
            g1, g2 = rows // 8, 2 * kblocks              # row groups (SBO), K core matrices (LBO)
            if rng.random() < 0.5:
                lbo = 128 + pad()
                sbo = lbo * g2 + pad()
            else:
                sbo = 128 + pad()
                lbo = sbo * g1 + pad()
            atom = 128
        else:
            g1, g2 = max(1, rows // 8), 1
            sbo = 8 * W * rng.choice([1, 1, 1, 2])
            lbo = rng.choice([16, 16, 128, 8 * W, 16 * rng.randint(1, 64)])     # unused for K-major swizzled
            atom = 8 * W
    else:
        mnb = rows * esize
        if swizzle == "none":
            g1, g2 = max(1, mnb // 16), 2 * kblocks       # MN core-matrix groups (SBO), 8-row K groups (LBO)
            if rng.random() < 0.5:
                sbo = 128 + pad()
                lbo = sbo * g1 + pad()
            else:
                lbo = 128 + pad()
                sbo = lbo * g2 + pad()
            atom = 128
        else:
            g1, g2 = max(1, -(-mnb // W)), 2 * kblocks    # MN atoms (LBO), 8-row K groups (SBO)
            if rng.random() < 0.5:
                lbo = 8 * W + rng.choice([0, 0, 8 * W])
                sbo = lbo * g1
            else:
                sbo = 8 * W + rng.choice([0, 0, 8 * W])
                lbo = sbo * g2
            atom = 8 * W
    big, small = max(lbo, sbo), min(lbo, sbo)
    extent = (max(g1, g2) - 1) * big + (min(g1, g2) - 1) * small + atom + 1024
    extent = max(extent, (g1 - 1) * sbo + (g2 - 1) * lbo + atom, (g1 - 1) * lbo + (g2 - 1) * sbo + atom)
    if lbo >= 1 << 18 or sbo >= 1 << 18:
        return None
    size = -(-extent // STRIPE) * STRIPE
    return lbo, sbo, size


def _tile(gen, rows: int, esize: int, kblocks: int, major: str, swizzle: str, budget: int):
    lay = _layout(gen.rng, rows, esize, kblocks, major, swizzle)
    if lay is None or lay[2] > budget:
        return None
    lbo, sbo, size = lay
    rng = gen.rng
    fills = []
    for _ in range(size // STRIPE):
        if rng.random() < 0.3:
            fills.append(("regs", tuple(gen.reg(32) for _ in range(4))))
        else:
            fills.append(("tile", rng.choice([1, 1, 3, 5, 7, 9]), rng.randrange(256)))
    return Tile(major, swizzle, rows, esize, kblocks, lbo, sbo, size, fills)


def _chain(gen, g: WgGroup, budget: list, acc_free: list) -> bool:
    """Add one chain (tiles and ops of one form sharing an accumulator) to ``g``; False when nothing fits."""
    rng = gen.rng
    kind, dtype, atype, btype, sat = rng.choice(FORMS)
    # the accumulator range: a free stretch of the bank
    best = max(acc_free, key=lambda s: s[1] - s[0]) if acc_free else None
    if best is None:
        return False
    n = _pick_n(rng, kind, best[1] - best[0], dtype)
    if n is None:
        return False
    per = 4 if dtype == "f16" else 2
    nd = n // per
    d0 = best[0] + rng.randrange(best[1] - best[0] - nd + 1)
    sixteen = ESIZE[atype] == 2
    # B tile (and A tile)
    swz = rng.choice(SWIZZLES)
    major_b = "MN" if sixteen and rng.random() < 0.4 else "K"
    kmax = {"none": 4, "32B": 1, "64B": 2, "128B": 4}[swz] if major_b == "K" else 2
    kblocks = rng.randint(1, kmax)
    bt = _tile(gen, n, ESIZE[btype], kblocks, major_b, swz, budget[0])
    if bt is None:
        bt = _tile(gen, n, ESIZE[btype], 1, "K", "none", budget[0])
        if bt is None:
            return False
        kblocks = 1
    budget[0] -= bt.size + 1024
    g.tiles.append(bt)
    bi = len(g.tiles) - 1
    ai = None
    if rng.random() < 0.7:
        swa = rng.choice(SWIZZLES)
        major_a = "MN" if sixteen and rng.random() < 0.4 else "K"
        if major_a == "K" and swa != "none":
            ka = min(kblocks, WIDTH[swa] // 32)
        else:
            ka = kblocks
        at = _tile(gen, 64, ESIZE[atype], ka, major_a, swa, budget[0])
        if at is not None:
            budget[0] -= at.size + 1024
            g.tiles.append(at)
            ai = len(g.tiles) - 1
    # the ops: a K loop over the blocks (sometimes shuffled / repeated)
    nops = rng.randint(1, kblocks + 1)
    aset = rng.randrange(NA_SETS)
    for i in range(nops):
        kb = i % kblocks if rng.random() < 0.8 else rng.randrange(kblocks)
        a_tile = ai if ai is not None and rng.random() < 0.9 else None
        a_kb = min(kb, g.tiles[ai].kblocks - 1) if a_tile is not None else 0
        a_regs = a_keys = None
        if a_tile is None:
            a_regs = tuple(gen.reg(32) for _ in range(4))
            aset = (aset + 1) % NA_SETS
            if gen.version >= 7:
                a_keys = tuple(_key(rng) for _ in range(4))
        u = rng.random()
        if i == 0:
            sd = "1" if u < 0.45 else "0" if u < 0.7 else \
                ("pred", 4 * rng.randrange(12), rng.choice(["eq", "ne", "lt", "ge", "hi", "ls"]),
                 rng.choice([0, 1, 0x3F800000, 0x80000000, rng.getrandbits(32)]), rng.random() < 0.5)
        else:
            sd = "1" if u < 0.85 else "0" if u < 0.93 else \
                ("pred", 4 * rng.randrange(12), rng.choice(["eq", "ne", "lo", "hs"]), rng.getrandbits(32),
                 rng.random() < 0.5)
        flt = kind != "int"
        neg_a = flt and rng.random() < 0.25
        if gen.version >= 7 and a_tile is None:
            neg_a = False        # ptxas 13.0 may negate register A as 32-bit integers (V7_AVOIDS "wgmma-rs-neg-a")
        g.ops.append(WgOp(kind, dtype, atype, btype, sat, n, d0, a_tile, a_kb, a_regs, aset, bi, kb, sd,
                          neg_a=neg_a, neg_b=flt and rng.random() < 0.25, id=gen.nid(), a_keys=a_keys))
    # the accumulator stretch is used
    acc_free.remove(best)
    if d0 > best[0]:
        acc_free.append((best[0], d0))
    if d0 + nd < best[1]:
        acc_free.append((d0 + nd, best[1]))
    return True


def gen_group(gen) -> WgGroup | None:
    """A wgmma-group that fits the SMEM left (``gen.wg_smem``) and the accumulators not in flight."""
    rng = gen.rng
    busy = set()
    for regs in gen.wg_inflight:
        busy |= regs
    free = []
    start = None
    for i in range(gen.nacc + 1):
        if i < gen.nacc and f"%ac{i}" not in busy:
            start = i if start is None else start
        elif start is not None:
            free.append((start, i))
            start = None
    if not free or max(b - a for a, b in free) < 4:       # everything in flight: the renderer waits first
        free = [(0, gen.nacc)]
        gen.wg_inflight = []
    g = WgGroup([], [], gen.nid())
    budget = [gen.wg_smem]
    if not _chain(gen, g, budget, free):
        return None
    if rng.random() < 0.2:
        _chain(gen, g, budget, free)
    gen.wg_smem = budget[0]
    for op in g.ops:
        op.id = op.id or gen.nid()
    gen.wg_inflight.append(g.registers())
    return g


def gen_wait(gen) -> WgWait:
    n = gen.rng.randint(0, len(gen.wg_inflight))
    gen.wg_inflight = gen.wg_inflight[len(gen.wg_inflight) - n:] if n else []
    return WgWait(n, gen.nid())


def _key(rng) -> int:
    """A non-zero 32-bit xor key that leaves a float's exponent alone half of the time (version 7)."""
    return rng.choice([rng.randrange(1, 1 << 23), rng.randrange(1, 1 << 32), 0x80000000, 0x00010001])


def gen_acc_ins(gen):
    """An instruction reading or writing accumulator registers (at top level: the renderer may wait first).
    Version 7 moves values between the pools and the accumulators only through instructions that make a new
    value (:data:`calib.fuzz.generator.V7_AVOIDS`): never a ``mov`` copy, which ptxas 13.0 coalesces with the
    accumulator's register."""
    from .ins import Ins
    rng = gen.rng
    j = rng.randrange(gen.nacc)
    k = rng.randrange(gen.nacc)
    u = rng.random()
    if gen.version >= 7:
        if k == j:
            k = (j + 1 + rng.randrange(gen.nacc - 1)) % gen.nacc
        if u < 0.25:
            text = f"xor.b32 {gen.reg(32)}, %ac{j}, 0x{_key(rng):08X}"
        elif u < 0.4:
            text = f"add.rn.f32 {gen.reg(32)}, %ac{j}, {gen.reg(32)}"
        elif u < 0.5:
            text = f"xor.b32 {gen.reg(32)}, %ac{j}, %ac{k}"
        elif u < 0.6:
            text = f"mul.wide.u32 {gen.reg(64)}, %ac{j}, %ac{k}"
        elif u < 0.8:
            text = f"xor.b32 %ac{j}, {gen.reg(32)}, 0x{_key(rng):08X}"
        elif u < 0.9:
            text = f"cvt.rn.f16x2.f32 %ac{j}, {gen.reg(32)}, {gen.reg(32)}"
        else:
            text = f"add.rn.f32 %ac{j}, %ac{j}, {gen.reg(32)}"
    elif u < 0.25:
        text = f"mov.b32 {gen.reg(32)}, %ac{j}"
    elif u < 0.4:
        text = f"add.rn.f32 {gen.reg(32)}, %ac{j}, {gen.reg(32)}"
    elif u < 0.5:
        text = f"xor.b32 {gen.reg(32)}, %ac{j}, %ac{k}"
    elif u < 0.6:
        text = f"mov.b64 {gen.reg(64)}, {{%ac{j}, %ac{k}}}"
    elif u < 0.8:
        text = f"mov.b32 %ac{j}, {gen.reg(32)}"
    elif u < 0.9:
        text = f"cvt.rn.f16x2.f32 %ac{j}, {gen.reg(32)}, {gen.reg(32)}"
    else:
        text = f"add.rn.f32 %ac{j}, %ac{j}, {gen.reg(32)}"
    busy = set()
    for regs in gen.wg_inflight:
        busy |= regs
    if _uses(text) & busy:
        gen.wg_inflight = []
    return Ins(text, None, gen.nid())
