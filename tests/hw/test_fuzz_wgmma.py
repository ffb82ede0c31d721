"""calib.fuzz generator version 6: wgmma programs (calib/fuzz/wgmma_ops.py) mixed with the ALU/memory items.

* the drawn programs cover the wgmma space the generator promises (every dense type combination but b1, random
  N, every swizzle mode in K- and MN-major tiles, register A, scale-d immediate and predicate, imm-scale-a/b,
  several wgmma-groups in flight, wait_group N > 0, accumulators read and written by pool instructions);
* every SMEM operand a program reads is where CUTLASS's canonical GMMA layouts put it (an address model written
  here from the layouts CUTLASS documents for ``make_gmma_desc``, independent of tcsim's
  ``operand_addresses``), and inside the tile the program initialised (so the GPU reads no stale byte even if
  LBO and SBO meant the other thing);
* ptxas and ``tcsim check`` accept them; the simulator runs them race-free (the happens-before detector on) and
  schedule-independently; trees the minimiser makes (waits deleted, groups deleted) still render to valid
  programs.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from calib.fuzz import wgmma_ops as WG
from calib.fuzz.generator import Program, _Render, generate, module_header
from calib.fuzz.runner import field_diffs, run_sim

PTXAS = shutil.which("ptxas")
SEEDS = range(600000, 600064)


def _wg_programs(seeds=SEEDS) -> list:
    return [p for p in (generate(s, version=6) for s in seeds) if p.has_wgmma]


@pytest.fixture(scope="module")
def programs():
    return _wg_programs()


def test_version_6_programs_cover_the_wgmma_space(programs):
    assert len(programs) >= 25
    text = "\n".join(p.render() for p in programs)
    ops = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k(\d+)(\.satfinite)?\.(\w+)\.(\w+)\.(\w+) "
                     r"\{[^}]*\}, (\{[^}]*\}|%kd8), %kd9, ([^,;]+)(.*);", text)
    forms = {(d, a, b, bool(s)) for _, _, s, d, a, b, *_ in ops}
    want = {(d, a, b, s) for _, d, a, b, s in WG.FORMS}
    assert want <= forms, sorted(want - forms)
    ns = {int(n) for n, *_ in ops}
    assert min(ns) == 8 and max(ns) >= 192 and len(ns) >= 15
    assert any(o[6].startswith("{") for o in ops) and any(o[6] == "%kd8" for o in ops)        # register A, SMEM A
    assert {o[7] for o in ops} >= {"0", "1", "%q6", "!%q6"}                                   # scale-d
    assert any(", -1" in o[8] for o in ops)                                                   # imm-scale -1
    assert any(o[8].endswith(", 1") and o[3] in ("f16", "f32") and o[4] in ("f16", "bf16") for o in ops)  # trans
    tiles = [(t.major, t.swizzle) for p in programs for t, _ in _tiles(p)]
    assert set(tiles) == {(m, s) for m in ("K", "MN") for s in WG.SWIZZLES}
    assert re.search(r"wgmma\.wait_group\.sync\.aligned [1-9]", text)
    assert "%ac" in text and re.search(r"mov\.b32 %r\d+, %ac\d+", text) and re.search(r"mov\.b32 %ac\d+, %r", text)
    # several groups in flight: two commits with no wait between them
    inflight = 0
    for p in programs:
        n = 0
        for ln in p.render().splitlines():
            if "commit_group" in ln:
                n += 1
                inflight = max(inflight, n)
            elif "wait_group.sync.aligned 0" in ln:
                n = 0
    assert inflight >= 3


# ------------------------------------------------------------------------------------------- operand addresses

def _tiles(p: Program) -> list:
    r = _Render(p)
    r.block(p.items)
    return r.wg_tiles


def _swizzle(addr: np.ndarray, swizzle: str) -> np.ndarray:
    """CuTe ``Swizzle<B,4,3>`` on byte addresses (B = 0 none, 1 32B, 2 64B, 3 128B): bits [4, 4+B) ^= bits
    [7, 7+B)."""
    b = {"none": 0, "32B": 1, "64B": 2, "128B": 3}[swizzle]
    mask = ((1 << b) - 1) << 7
    return addr ^ ((addr & mask) >> 3)


def _cutlass_layout(t: WG.Tile, start: int, rows: int, k_elems: int) -> np.ndarray:
    """Byte address of element (mn, k) per CUTLASS's canonical GMMA layouts (cute/atom/mma_traits_sm90_gmma.hpp,
    ``make_gmma_desc``), T = 16 / element size elements per 16 bytes, W = swizzle width / 16::

        K-major  INTERLEAVE ((8,m),(T,2)):((1T,SBO),(1,LBO))      swizzled ((8,m),(T,2)):((WT,SBO),(1,T))
        MN-major INTERLEAVE ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))  swizzled ((T,W,m),(8,k)):((1,T,LBO),(WT,SBO))

    (strides in elements except SBO / LBO, in bytes), then Swizzle<B,4,3> of the absolute address."""
    e = t.esize
    T = 16 // e
    W = WG.WIDTH[t.swizzle] // 16
    mn = np.arange(rows)[:, None]
    k = np.arange(k_elems)[None, :]
    if t.major == "K":
        row_stride = (T if t.swizzle == "none" else W * T) * e
        kb = k * e
        k_off = (kb % 16 + (kb // 16) * t.lbo) if t.swizzle == "none" else kb
        off = (mn % 8) * row_stride + (mn // 8) * t.sbo + k_off
    elif t.swizzle == "none":
        off = (mn % T) * e + (mn // T) * t.sbo + (k % 8) * 16 + (k // 8) * t.lbo
    else:
        off = (mn % (W * T)) * e + (mn // (W * T)) * t.lbo + (k % 8) * W * 16 + (k // 8) * t.sbo
    return _swizzle(start + off, t.swizzle)


@pytest.mark.parametrize("smem_base", [0x0, 0x400, 0x2C00])
def test_every_operand_is_where_cutlass_puts_it_and_inside_its_tile(programs, smem_base):
    from tcsim.isa.descriptors import WgmmaDescriptor, operand_addresses

    checked = 0
    for p in programs:
        for t, base in _tiles(p):
            k = 32 // t.esize
            for kb in range(t.kblocks):
                start = smem_base + base + t.kstart(kb)
                desc = WgmmaDescriptor.decode(((start >> 4) & 0x3FFF) | t.hi_bits())
                assert (desc.lbo, desc.sbo, desc.swizzle, desc.base_offset) == (t.lbo, t.sbo, t.swizzle, 0)
                got = operand_addresses(desc, t.rows, k, 8 * t.esize, t.major).byte
                want = _cutlass_layout(t, start, t.rows, k)
                assert np.array_equal(got, want), (p.seed, t, kb)
                lo, hi = smem_base + base, smem_base + base + t.size
                assert want.min() >= lo and want.max() + t.esize <= hi, (p.seed, t, kb)
                checked += 1
    assert checked >= 100


# ------------------------------------------------------------------------------------------- validity

@pytest.mark.skipif(PTXAS is None, reason="ptxas not on PATH")
def test_version_6_programs_pass_ptxas_and_tcsim_check(tmp_path, programs):
    from tcsim.cli import check_ptx_text

    progs = programs[:12] + [generate(s, version=6) for s in (600002, 600004)]       # and two without wgmma
    text = module_header() + "\n".join(p.render(name=f"fz_{i}", header=False) for i, p in enumerate(progs))
    path = tmp_path / "m.ptx"
    path.write_text(text)
    r = subprocess.run([PTXAS, "-arch=sm_90a", str(path), "-o", "/dev/null"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[:3000]
    errors = check_ptx_text(text, "fuzz_v6.ptx")
    assert not errors, "\n".join(str(e) for e in errors[:10])


def _run(p: Program, seed=None):
    from tcsim.launch import Launch, run_launch
    return run_launch(Launch(ptx=p.render(), kernel=p.kernel_name, block=(p.nthreads, 1, 1),
                             args=[p.input_buffer(), p.output_template()]), seed=seed, detect=True)


def test_wgmma_programs_are_race_free_and_schedule_independent(programs):
    small = sorted(programs, key=lambda p: p.instruction_count())[:3]
    for p in small:
        a, b = _run(p), _run(p, 1)
        assert not a.findings and not b.findings, (p.seed, [str(f) for f in a.findings + b.findings][:2])
        assert np.array_equal(a.outputs[1], b.outputs[1]), p.seed
        # the accumulator dump follows the records: some accumulators changed, the fill pattern is gone
        acc = a.outputs[1][p.nthreads * 112:].view(np.uint32).reshape(p.nthreads, p.nacc)
        init = p.input_buffer()[-p.nthreads * p.nacc * 4:].view(np.uint32).reshape(p.nthreads, p.nacc)
        assert (acc != init).any() and not (acc == 0xA5A5A5A5).all(axis=0).any()


def test_minimised_trees_stay_valid(programs):
    """What the minimiser makes of a wgmma program: its waits gone (the renderer waits where a later group or
    accumulator instruction meets one in flight), or all its groups gone (then fewer warps are allowed)."""
    from calib.fuzz.minimize import delete, node_ids
    from calib.fuzz.wgmma_ops import WgGroup, WgWait

    p = min((q for q in programs if sum(isinstance(it, WgGroup) for it in q.items) >= 2),
            key=lambda q: q.instruction_count())
    no_waits = delete(p, [it.id for it in p.items if isinstance(it, WgWait)])
    assert "wgmma.wait_group.sync.aligned 0" in no_waits.render()
    # every other op of every group gone, then every group: the program shrinks to fewer warps
    ops = [op.id for it in p.items if isinstance(it, WgGroup) for op in it.ops[1::2]]
    assert set(ops) <= set(node_ids(p.items))
    thinned = delete(no_waits, ops)
    bare = delete(p, [it.id for it in p.items if isinstance(it, (WgGroup, WgWait))])
    assert not bare.has_wgmma and "wgmma" not in bare.render()
    bare.nwarps = 1
    for q in (no_waits, thinned, bare):
        r = _run(q)
        assert not r.findings, (q.seed, [str(f) for f in r.findings][:2])
    assert run_sim(bare).ok


def test_accumulator_fields_are_named_in_diffs(programs):
    p = programs[0]
    a = bytearray(p.output_template().tobytes())
    b = bytearray(a)
    cut = p.nthreads * 112
    b[cut + 4 * p.nacc * 5 + 4 * 3] ^= 1          # thread 5, %ac3
    b[7 * 112 + 4] ^= 0x80                         # thread 7, %r1
    got = field_diffs(p, bytes(a), bytes(b))
    assert sorted((t, f) for t, f, _, _ in got) == [(5, "%ac3"), (7, "%r1")]
    assert field_diffs(None, bytes(a), bytes(b), p.nthreads, p.nacc) == got


# ------------------------------------------------------------------------------------------- an exact oracle

def _int_program(seed: int):
    """A warpgroup program of one wgmma-group: a chain of 1..3 integer wgmma (s8/u8, with and without
    .satfinite) over fresh tiles of random layout (A from a tile or from pool registers), filled from the input
    alone -- so every operand byte is known from the input."""
    import random as _random

    from calib.fuzz.generator import _Gen, make_inputs

    g = _Gen(seed, 6)
    g.nacc = WG.NACC_MAX
    rng = g.rng
    _, dtype, atype, btype, sat = rng.choice([f for f in WG.FORMS if f[0] == "int"])
    n = rng.choice(WG.INT_N)
    swz = rng.choice(WG.SWIZZLES)
    kblocks = rng.randint(1, {"none": 3, "32B": 1, "64B": 2, "128B": 4}[swz])
    bt = WG._tile(g, n, 1, kblocks, "K", swz, 1 << 20)
    swa = rng.choice(WG.SWIZZLES)
    at = WG._tile(g, 64, 1, min(kblocks, 1 if swa == "32B" else 2 if swa == "64B" else kblocks), "K", swa, 1 << 20)
    tiles = [bt, at]
    d0 = rng.randrange(WG.NACC_MAX - n // 2 + 1)
    a_regs = tuple(f"%r{rng.randrange(12)}" for _ in range(4)) if rng.random() < 0.4 else None
    ops = []
    for i in range(rng.randint(1, 3)):
        kb = rng.randrange(kblocks)
        sd = rng.choice(["0", "1"]) if i == 0 else "1"
        ops.append(WG.WgOp("int", dtype, atype, btype, sat, n, d0, None if a_regs else 1,
                           min(kb, at.kblocks - 1), a_regs, 0, 0, kb, sd, id=g.nid()))
    inputs = make_inputs(_random.Random(seed * 7919 + 17))
    inputs = np.concatenate([inputs, np.frombuffer(WG.tile_area(seed) + WG.acc_area(seed, g.nacc), np.uint8)])
    return Program(seed=seed, nwarps=4, items=[WG.WgGroup(tiles, ops, g.nid())], inputs=inputs, nacc=g.nacc)


def _smem_image(p: Program) -> np.ndarray:
    """fz_smem as the tiles' fill stores leave it (per thread: a tile-area chunk or four pool registers)."""
    from calib.fuzz.generator import OFF32, STRIDE

    area = np.frombuffer(WG.tile_area(p.seed), np.uint8).reshape(-1, 16)
    rec = p.inputs[:128 * STRIDE].reshape(128, STRIDE)
    tiles = _tiles(p)
    img = np.zeros(max(b + t.size for t, b in tiles), np.uint8)
    for t, base in tiles:
        for j, src in enumerate(t.fills):
            for tid in range(128):
                if src[0] == "tile":
                    chunk = area[(tid * src[1] + src[2]) & 255]
                else:
                    chunk = np.concatenate([rec[tid, OFF32 + 4 * int(r[2:]):OFF32 + 4 * int(r[2:]) + 4]
                                            for r in src[1]])
                o = base + WG.STRIPE * j + 16 * tid
                img[o:o + 16] = chunk
    return img, tiles


def _reference_int(p: Program) -> np.ndarray:
    """The accumulator bank every thread should end with: D = A x B^T (+ C) over the chain, int32 wrapping or
    saturating -- operands read through CUTLASS's layouts (above), the register fragments of CUTLASS's
    ``ALayout_64x32`` (8-bit A) and ``CLayout_64xN`` (mma_traits_sm90_gmma.hpp)."""
    from calib.fuzz.generator import OFF32, STRIDE

    (g,) = p.items
    img, tiles = _smem_image(p)
    rec = p.inputs[:128 * STRIDE].reshape(128, STRIDE)
    acc = np.frombuffer(p.inputs[-128 * p.nacc * 4:].tobytes(), np.uint32).reshape(128, p.nacc).copy()
    op0 = g.ops[0]
    T = np.arange(128)
    lane, w = T % 32, T // 32
    nd = op0.n // 2
    v = np.arange(nd)
    dm = (lane // 4 + 16 * w)[:, None] + 8 * ((v // 2) % 2)[None, :]          # CLayout: (thread, value) -> m, n
    dn = (2 * (lane % 4))[:, None] + (v % 2 + 8 * (v // 4))[None, :]
    D = np.zeros((64, op0.n), np.int64)
    C = acc[:, op0.d:op0.d + nd].view(np.int32).astype(np.int64)
    D[dm, dn] = C
    sgn = lambda x, t: x.astype(np.int8).astype(np.int64) if t == "s8" else x.astype(np.int64)  # noqa: E731
    for op in g.ops:
        bt, bbase = tiles[op.b_tile]
        B = img[_cutlass_layout(bt, bbase + bt.kstart(op.b_kb), op.n, 32)]
        if op.a_regs is None:
            at, abase = tiles[op.a_tile]
            A = img[_cutlass_layout(at, abase + at.kstart(op.a_kb), 64, 32)]
        else:                                              # ALayout_64x32: register r, byte b of a thread
            A = np.zeros((64, 32), np.uint8)
            for r, name in enumerate(op.a_regs):
                word = rec[:, OFF32 + 4 * int(name[2:]):OFF32 + 4 * int(name[2:]) + 4]
                for b in range(4):
                    A[lane // 4 + 16 * w + 8 * (r % 2), 4 * (lane % 4) + b + 16 * (r // 2)] = word[:, b]
        prod = sgn(A, op.atype) @ sgn(B, op.btype).T
        D = prod + (D if op.scale_d == "1" else 0)
        D = np.clip(D, -2**31, 2**31 - 1) if op.sat else (D + 2**31) % 2**32 - 2**31
    acc[:, op0.d:op0.d + nd] = D[dm, dn].astype(np.int64).astype(np.uint32)
    return acc


@pytest.mark.parametrize("seed", [700001, 700002, 700003, 700004, 700005, 700006])
def test_integer_wgmma_programs_match_an_exact_reference(seed):
    """The simulator's accumulators after a generated chain of integer wgmma equal A x B (+ C) computed here from
    the input bytes, through CUTLASS's operand layouts and register fragments (no tensor-core rounding in the
    integer kinds, so the reference is exact): the descriptors, swizzles, K-block starts, register-A and
    accumulator fragments, scale-d and the chain's order as the program draws them."""
    p = _int_program(seed)
    out = run_sim(p)
    assert out.ok, out.error
    got = np.frombuffer(out.output, np.uint8)[p.nthreads * 112:].view(np.uint32).reshape(128, p.nacc)
    want = _reference_int(p)
    (g,) = p.items
    assert np.array_equal(got, want), (seed, g.ops[0], [(t.swizzle, t.lbo, t.sbo) for t in g.tiles],
                                       int((got != want).sum()))
