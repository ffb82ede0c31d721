"""The microbenchmark case list: calibration (clock64-timed segments) and validation (whole kernels).

A :class:`Case` builds a :class:`tcsim.launch.Launch` (the same on the simulator and the GPU) and knows how to
read its outputs:

* calibration cases (``kind == "calibration"``): the kernel's ``out`` argument holds, per warp, rep and
  segment, the cycles between two ``%clock64`` reads (:mod:`calib.microbench.ptxgen`).  Rep 0 is a warm-up (for
  the copy benchmarks it is the *cold* sample, from DRAM); the statistics use reps 1.. .  :func:`derive` turns
  the segment medians into the named values (a latency is the slope between two segment lengths, so the clock
  reads and the closing dependent use cancel);
* validation cases (``kind == "validation"``): whole kernels whose every thread stores ``{%clock64 at entry,
  %clock64 at exit}``; a CTA's cycles are max(exit) - min(entry) over its threads.  Each also carries a
  correctness check of its outputs against numpy / the bit-exact tensor-core model.  The example kernels
  (examples/mma_gemm, tma_mma_gemm, bulk_pipeline) are instrumented copies (:func:`instrument_clock`): one
  extra last parameter, their outputs unchanged.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch

from . import ptxgen as G

KERNELS = Path(__file__).resolve().parent / "kernels"
REPS = 9                      # rep 0 = warm-up / cold sample
CHAIN = (16, 64)              # the two chain lengths of a latency slope
PEAK_MMA_F16_FLOP_PER_CLK = 4096   # H100 dense f16/bf16 per SM (timing.md, D)
MMA_FLOP = 2 * 16 * 8 * 16


@dataclass(frozen=True)
class Case:
    name: str
    group: str
    kind: str                                  # "calibration" | "validation"
    params: dict = field(default_factory=dict)
    note: str = ""

    def build(self) -> Launch:
        return BUILDERS[self.group](self)

    def ptx(self) -> str:
        return self.build().ptx_text()[0]


# ============================================================================================ calibration
def _io(threads: int) -> np.ndarray:
    io = np.zeros(G.SINK_WORD + threads, dtype=np.uint32)
    io[0:3] = (3, 5, 7)
    io[3:6] = np.array([1.0, 0.5, 0.25], dtype=np.float32).view(np.uint32)
    io[6:9] = (0x3C003C00, 0x38003800, 0x34003400)             # f16x2 1.0, 0.5, 0.25
    io[10:14] = np.array([1.0, 1e-3], dtype=np.float64).view(np.uint32)
    io[16:22] = 0x3C003C00                                       # mma A, B fragments (f16 1.0; as bf16 2^-7)
    return io


def _calib_launch(case, ptx, *, nseg, warps=1, ctas=1, cluster=(1, 1, 1), extra=(), dynamic_smem=0):
    threads = 32 * warps
    out = np.zeros((ctas * warps, REPS, nseg), dtype=np.uint64)
    return Launch(ptx=ptx, kernel=re.search(r"\.entry (\w+)", ptx).group(1), grid=(ctas, 1, 1),
                  block=(threads, 1, 1), cluster=cluster, dynamic_smem=dynamic_smem,
                  args=[out, _io(threads * ctas), *extra], name=case.name)


def _b_clock(c):
    return _calib_launch(c, G.clock_overhead(REPS), nseg=2)


def _b_alu(c):
    return _calib_launch(c, G.alu_chain(c.params["op"], CHAIN, REPS), nseg=2)


def _b_smem(c):
    return _calib_launch(c, G.smem_chase(c.params["ways"], CHAIN, REPS), nseg=2)


def _b_gmem(c):
    return _calib_launch(c, G.global_chase(c.params["cache"], CHAIN, REPS), nseg=2)


BAR_LENGTHS = (4, 16)


def _b_bar(c):
    return _calib_launch(c, G.bar_sync(BAR_LENGTHS, REPS), nseg=2, warps=c.params["warps"])


MBAR_LENGTHS = (2, 8)


def _b_mbar(c):
    if c.params["mode"] == "same_warp":
        return _calib_launch(c, G.mbarrier_same_warp(MBAR_LENGTHS, REPS), nseg=2)
    return _calib_launch(c, G.mbarrier_ping_pong(MBAR_LENGTHS, REPS), nseg=2, warps=2)


def _b_ldm(c):
    x = c.params["x"]
    if c.params["mode"] == "latency":
        return _calib_launch(c, G.ldmatrix_latency(x, CHAIN, REPS), nseg=2)
    return _calib_launch(c, G.ldmatrix_throughput(x, CHAIN, REPS), nseg=2, warps=c.params["warps"])


MMA_TPUT = (4, 16)


def _b_mma(c):
    chains = c.params["chains"]
    lengths = CHAIN if chains == 1 else MMA_TPUT
    return _calib_launch(c, G.mma_chain(c.params["form"], chains, lengths, REPS), nseg=2,
                         warps=c.params["warps"])


def _b_wgmma(c):
    p = c.params
    return _calib_launch(c, G.wgmma_chain(p["form"], p["n"], G.WGMMA_LENGTHS, REPS, rs=p.get("rs", False),
                                          warpgroups=p.get("warpgroups", 1)),
                         nseg=len(G.WGMMA_LENGTHS), warps=4 * p.get("warpgroups", 1))


def _b_tma(c):
    rows, inner, swz = c.params["rows"], c.params["inner"], c.params["swizzle"]
    adv = c.params.get("advance", False)
    total = max(256, rows * REPS) if adv else 256
    dt = np.float32 if c.params.get("f32") else np.float16
    t = (np.arange(total * inner, dtype=np.uint32) % 65521).astype(dt).reshape(total, inner)
    tm = TensorMap.tiled(t, box=(rows, inner), swizzle=swz)
    sw = c.params.get("store_warps", 0)
    if sw not in (0, 4):
        raise ValueError("store_warps: 4 (128 threads cover one 512-byte row of stores) or 0")
    extra = (t, tm) + ((np.zeros(G.STORE_STREAM_STORES * 128, dtype=np.float32),) if sw else ())
    return _calib_launch(c, G.tma_load(rows * inner * t.itemsize, REPS, advance_rows=rows if adv else 0,
                                       store_warps=sw), nseg=1, warps=1 + sw, extra=extra)


def _b_bulk(c):
    n = c.params["bytes"]
    adv = c.params.get("advance", False)
    src = np.arange(n * (REPS if adv else 1) // 4, dtype=np.uint32)
    return _calib_launch(c, G.bulk_copy(n, REPS, advance=adv), nseg=1, extra=(src,), dynamic_smem=n)


def _b_dsmem(c):
    return _calib_launch(c, G.dsmem_chase(CHAIN, REPS), nseg=6, ctas=2, cluster=(2, 1, 1))


KTILES = (1, 4)               # k-tiles per segment of the ldmatrix + mma.sync loop


def _b_loop(c):
    if c.params.get("tma_traffic"):
        t = (np.arange(64 * 64, dtype=np.uint32) % 65521).astype(np.float16).reshape(64, 64)
        tm = TensorMap.tiled(t, box=(64, 64), swizzle="128B")
        return _calib_launch(c, G.ldsm_mma_loop(KTILES, REPS, tma_traffic=True), nseg=2, warps=5, extra=(t, tm))
    return _calib_launch(c, G.ldsm_mma_loop(KTILES, REPS), nseg=2, warps=c.params["warps"])


RING_LENGTHS = (4, 16)        # chunks per segment of the bulk-copy ring


def _b_ring(c):
    n = c.params["bytes"]
    src = np.arange(RING_LENGTHS[1] * n // 4, dtype=np.uint32)
    return _calib_launch(c, G.bulk_ring(n, RING_LENGTHS, REPS), nseg=2, warps=2, extra=(src,),
                         dynamic_smem=G.RING_STAGES * n)


COLD_STRIDE = 8192            # bytes between the lines of the cold chase (one line per 8 KB)
COLD_BUFFER = 64 << 20        # > the H100's 50 MB L2


def _b_gmem_cold(c):
    stride, size = c.params.get("stride", COLD_STRIDE), c.params.get("buffer", COLD_BUFFER)
    chain = np.zeros(size // 8, dtype=np.uint64)
    steps = REPS * sum(CHAIN)
    chain[:steps * stride // 8:stride // 8] = stride
    return _calib_launch(c, G.global_chase_cold(CHAIN, REPS), nseg=2, extra=(chain,))


CODE_LENGTHS = (512, 2048)    # straight-line FFMAs per segment of the instruction-fetch case


def _b_store(c):
    vec, w = c.params["vec"], c.params["warps"]
    dst = np.zeros(w * REPS * sum(G.STORE_LENGTHS) * 32 * vec, dtype=np.uint32)
    return _calib_launch(c, G.global_stores(vec, G.STORE_LENGTHS, REPS), nseg=2, warps=w, extra=(dst,))


def _b_store_quiet(c):
    vec, w = c.params["vec"], c.params["warps"]
    dst = np.zeros(w * REPS * sum(G.STORE_LENGTHS) * 32 * vec, dtype=np.uint32)
    out = np.zeros((w, 1, 4), dtype=np.uint64)
    return Launch(ptx=G.global_stores_quiet(vec, G.STORE_LENGTHS, REPS), kernel="mb_global_stores_quiet",
                  grid=(1, 1, 1), block=(32 * w, 1, 1), args=[out, _io(32 * w), dst], name=c.name)


def _b_tma_issue(c):
    t = (np.arange(64 * 64, dtype=np.uint32) % 65521).astype(np.float16).reshape(64, 64)
    tm = TensorMap.tiled(t, box=(64, 64), swizzle="128B")
    return _calib_launch(c, G.tma_issue(G.TMA_ISSUE_LENGTHS, REPS), nseg=2, extra=(t, tm))


def _b_ws_tile(c):
    n = REPS * sum(G.WS_TILE_LENGTHS) * 8192 // 4
    extra = [np.zeros(n, dtype=np.float32), np.float32(WS_A), np.float32(WS_B)]
    if c.params.get("tma_traffic"):
        t = (np.arange(64 * 64, dtype=np.uint32) % 65521).astype(np.float16).reshape(64, 64)
        extra += [t, TensorMap.tiled(t, box=(64, 64), swizzle="128B")]
    kw = {k: v for k, v in c.params.items() if k in ("arrive", "same_lines", "quiet", "data", "layout", "store")}
    ptx = G.ws_tile_loop(G.WS_TILE_LENGTHS, REPS, tma_traffic=bool(c.params.get("tma_traffic")), **kw)
    return _calib_launch(c, ptx, nseg=2, warps=5 if c.params.get("tma_traffic") else 4, extra=extra)


def _b_tma_window(c):
    t = (np.arange(256 * 64, dtype=np.uint32) % 65521).astype(np.float32).reshape(256, 64)
    tm = TensorMap.tiled(t, box=(32, 64))
    dst = np.zeros(REPS * len(G.TMA_STORE_WINDOWS) * 8192 // 4, dtype=np.float32)
    return _calib_launch(c, G.tma_store_window(REPS), nseg=len(G.TMA_STORE_WINDOWS), warps=5, extra=(t, tm, dst))


def _b_elem(c):
    l = _calib_launch(c, G.elem_loop(G.ELEM_LOOP_BYTES, REPS), nseg=len(G.ELEM_LOOP_BYTES),
                      extra=(np.zeros(REPS * len(G.ELEM_LOOP_BYTES) * max(G.ELEM_LOOP_BYTES) // 4, dtype=np.uint32),))
    l.args[1][16:16 + len(G.ELEM_LOOP_BYTES)] = G.ELEM_LOOP_BYTES      # io[16..]: the run-time chunk sizes
    return l


def _b_fence(c):
    return _calib_launch(c, G.mbarrier_init_fence(c.params["form"], G.FENCE_LENGTHS, REPS),
                         nseg=len(G.FENCE_LENGTHS))


def _b_const(c):
    return _calib_launch(c, G.const_chase(c.params["stride"], CHAIN, REPS), nseg=2)


def _b_code(c):
    if c.params.get("jump"):
        return _calib_launch(c, G.icache_jump(REPS), nseg=len(G.JUMP_BYTES))
    return _calib_launch(c, G.straight_code(CODE_LENGTHS, REPS), nseg=2)


# ============================================================================================ validation
def instrument_clock(ptx: str, kernel: str) -> str:
    """A copy of ``ptx`` whose entry ``kernel`` takes one extra last parameter ``__mb_clk`` (u64 pointer) and
    stores, from every thread, {%clock64 at entry, %clock64 at exit} to ``__mb_clk[global thread id]``
    (1-D grid and block).  Every ``ret``/``exit`` of the kernel becomes a branch to one epilogue."""
    m = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\(", ptx)
    if not m:
        raise ValueError(f"no .entry {kernel} in the PTX")
    close = ptx.index(")", m.end())
    body_open = ptx.index("{", close)
    depth, i = 0, body_open
    while True:
        ch = ptx[i]
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0:
            break
        i += 1
    body = ptx[body_open + 1:i]
    body = re.sub(r"(?m)^(\s*(?:@!?%\w+\s+)?)(?:ret|exit)(?:\.uni)?\s*;", r"\1bra.uni \t$__mb_end;", body)
    body = re.sub(r"(?m)^(\s*@!?%\w+\s+)bra\.uni", r"\1bra", body)
    pro = ("\n\t.reg .b64 \t%__mb_t0, %__mb_t1, %__mb_p, %__mb_o;\n\t.reg .b32 \t%__mb_a, %__mb_b, %__mb_c;\n"
           "\tmov.u64 \t%__mb_t0, %clock64;")
    epi = ("$__mb_end:\n\tmov.u64 \t%__mb_t1, %clock64;\n\tmov.u32 \t%__mb_a, %tid.x;\n"
           "\tmov.u32 \t%__mb_b, %ctaid.x;\n\tmov.u32 \t%__mb_c, %ntid.x;\n"
           "\tmad.lo.u32 \t%__mb_a, %__mb_b, %__mb_c, %__mb_a;\n\tld.param.u64 \t%__mb_p, [__mb_clk];\n"
           "\tcvta.to.global.u64 \t%__mb_p, %__mb_p;\n\tmul.wide.u32 \t%__mb_o, %__mb_a, 16;\n"
           "\tadd.s64 \t%__mb_p, %__mb_p, %__mb_o;\n\tst.global.v2.u64 \t[%__mb_p], {%__mb_t0, %__mb_t1};\n"
           "\tret;\n")
    return (ptx[:close] + ",\n\t.param .u64 __mb_clk\n" + ptx[close:body_open + 1] + pro + body + epi
            + ptx[i:])


def _clk(launch: Launch) -> np.ndarray:
    n = launch.grid[0] * launch.block[0]
    return np.zeros((n, 2), dtype=np.uint64)


def _example(c):
    import importlib
    mod = importlib.import_module(f"examples.{c.params['example']}")
    base = mod.make_launch(**c.params["kwargs"])
    text = instrument_clock(base.ptx_text()[0], base.kernel)
    return Launch(ptx=text, kernel=base.kernel, grid=base.grid, block=base.block, cluster=base.cluster,
                  dynamic_smem=base.dynamic_smem, args=list(base.args) + [_clk(base)], name=c.name)


GEMM_M, GEMM_N, GEMM_KTILES = 128, 64, 8


def _pipe_gemm(c):
    rng = np.random.default_rng(c.params.get("seed", 0))
    k = 64 * GEMM_KTILES
    a = rng.standard_normal((GEMM_M, k)).astype(np.float16)
    bt = rng.standard_normal((GEMM_N, k)).astype(np.float16)
    cmat = np.zeros((GEMM_M, GEMM_N), dtype=np.float32)
    ta = TensorMap.tiled(a, box=(64, 64), swizzle="128B")
    tb = TensorMap.tiled(bt, box=(64, 64), swizzle="128B")
    s = c.params["stages"]
    launch = Launch(ptx=KERNELS / "pipe_gemm.ptx", kernel="mb_pipe_gemm", grid=(GEMM_M // 64, 1, 1),
                    block=(160, 1, 1), dynamic_smem=16384 * s + 64, name=c.name,
                    args=[a, bt, cmat, None, s, GEMM_KTILES, ta, tb])
    launch.args[3] = _clk(launch)
    return launch


WS_TILES, WS_CTAS = 8, 2
WS_A, WS_B = 1.5, -0.25


def _ws(c):
    rng = np.random.default_rng(c.params.get("seed", 0))
    rows = 32 * WS_TILES * WS_CTAS
    x = rng.standard_normal((rows, 64)).astype(np.float32)
    y = np.zeros_like(x)
    tm = TensorMap.tiled(x, box=(32, 64))
    s = c.params["stages"]
    launch = Launch(ptx=KERNELS / "ws_scale.ptx", kernel="mb_ws_scale", grid=(WS_CTAS, 1, 1), block=(160, 1, 1),
                    dynamic_smem=8192 * s, name=c.name, args=[x, y, None, s, WS_TILES, WS_A, WS_B, tm])
    launch.args[2] = _clk(launch)
    return launch


def clk_index(case: Case, launch: Launch) -> int:
    """The argument index of the clock buffer of a validation launch."""
    return {"example": len(launch.args) - 1, "pipe_gemm": 3, "ws": 2}[case.group]


def check_validation(case: Case, launch: Launch, outputs: list) -> tuple:
    """(ok, message): the kernel's outputs against numpy (and the bit-exact tensor-core model for GEMMs)."""
    class _R:
        pass
    r = _R()
    r.outputs = outputs
    if case.group == "example":
        import importlib
        mod = importlib.import_module(f"examples.{case.params['example']}")
        base = mod.make_launch(**case.params["kwargs"])
        return mod.check(r, base)
    if case.group == "pipe_gemm":
        a, bt = launch.args[0], launch.args[1]
        got = np.asarray(outputs[2])
        want = gemm_reference(a, bt)
        if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
            i, j = (int(v) for v in bad[0])
            return False, (f"{len(bad)} of {got.size} elements differ from the chained H100 mma.sync model "
                           f"(first C[{i}][{j}]: got {got[i, j]!r}, want {want[i, j]!r})")
        err = float(np.abs(got - a.astype(np.float64) @ bt.astype(np.float64).T).max())
        return err < 0.1, f"C equals the bit-exact chained mma.sync model; max |C - float64 A@B| = {err:.2e}"
    if case.group == "ws":
        x = launch.args[0]
        want = x * np.float32(WS_A) + np.float32(WS_B)
        got = np.asarray(outputs[1])
        if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            n = int((got.view(np.uint32) != want.view(np.uint32)).sum())
            return False, f"{n} of {got.size} elements differ from numpy float32 X*a + b"
        return True, f"Y = X*{WS_A} + {WS_B} (float32) for all {got.size} elements"
    raise ValueError(case.group)


def gemm_reference(a: np.ndarray, bt: np.ndarray) -> np.ndarray:
    """C = A @ B as the kernel chains it: m16n8k16 steps over K in order (the model is elementwise in M, N)."""
    from tcsim.numerics.tensor_core import mma_float, tc_params
    params = tc_params("sm_90a", "mma.sync", "f16")
    ab = a.view(np.uint16)
    bb = np.ascontiguousarray(bt.T).view(np.uint16)
    c = np.zeros((a.shape[0], bt.shape[0]), dtype=np.uint32)
    for k0 in range(0, a.shape[1], 16):
        c = np.asarray(mma_float(ab[:, k0:k0 + 16], bb[k0:k0 + 16, :], c, "f16", "f16", "f32", params),
                       dtype=np.uint32)
    return c.view(np.float32)


def cta_cycles(launch: Launch, clk: np.ndarray) -> list:
    """Per CTA: max(exit clock) - min(entry clock) over its threads."""
    clk = np.asarray(clk, dtype=np.uint64).reshape(launch.grid[0], launch.block[0], 2)
    return [int(clk[i, :, 1].max()) - int(clk[i, :, 0].min()) for i in range(launch.grid[0])]


# ============================================================================================ registry
BUILDERS = {"clock": _b_clock, "alu": _b_alu, "smem": _b_smem, "gmem": _b_gmem, "bar_sync": _b_bar,
            "mbarrier": _b_mbar, "ldmatrix": _b_ldm, "mma": _b_mma, "tma": _b_tma, "bulk": _b_bulk,
            "dsmem": _b_dsmem, "loop": _b_loop, "ring": _b_ring, "gmem_cold": _b_gmem_cold,
            "code": _b_code, "store": _b_store, "store_quiet": _b_store_quiet, "tma_issue": _b_tma_issue,
            "elem": _b_elem, "fence": _b_fence, "const": _b_const, "ws_tile": _b_ws_tile,
            "tma_window": _b_tma_window, "wgmma": _b_wgmma,
            "example": _example, "pipe_gemm": _pipe_gemm, "ws": _ws}


def _registry() -> dict:
    cs = [Case("clock", "clock", "calibration", note="two back-to-back clock64 reads; with one xor between")]
    for op in G.ALU_OPS:
        cs.append(Case(f"alu_{op.replace('.', '_')}", "alu", "calibration", {"op": op},
                       f"dependent chain of {op}, {CHAIN} long"))
    for ways in (1, 2, 4, 8, 16, 32):
        cs.append(Case(f"smem_conflict_{ways}way", "smem", "calibration", {"ways": ways},
                       f"ld.shared pointer chase, {ways}-way bank conflict"))
    cs.append(Case("smem_broadcast", "smem", "calibration", {"ways": 0},
                   "ld.shared pointer chase, all 32 lanes on one word"))
    for cache in ("", "ca", "cg"):
        cs.append(Case(f"gmem_chase_{cache or 'default'}", "gmem", "calibration", {"cache": cache},
                       f"ld.global{'.' + cache if cache else ''} pointer chase on one word "
                       f"({'L2' if cache == 'cg' else 'L1'} hit)"))
    for w in (1, 2, 4, 8, 16, 32):
        cs.append(Case(f"bar_sync_{w}w", "bar_sync", "calibration", {"warps": w}, f"bar.sync 0 with {w} warps"))
    for mode in ("same_warp", "ping_pong"):
        cs.append(Case(f"mbarrier_{mode}", "mbarrier", "calibration", {"mode": mode}))
    for x in (1, 2, 4):
        cs.append(Case(f"ldmatrix_x{x}_latency", "ldmatrix", "calibration", {"x": x, "mode": "latency"}))
        for w in (4, 16, 32):
            cs.append(Case(f"ldmatrix_x{x}_tput_{w}w", "ldmatrix", "calibration",
                           {"x": x, "mode": "throughput", "warps": w},
                           f"{w} warps, each a dependent ldmatrix.x{x} chain"))
    for form in ("f16", "bf16", "f16acc"):
        cs.append(Case(f"mma_{form}_latency", "mma", "calibration", {"form": form, "chains": 1, "warps": 1}))
    for form in ("f16", "bf16"):
        for w in (1, 2, 4, 8):
            cs.append(Case(f"mma_{form}_tput_{w}w", "mma", "calibration", {"form": form, "chains": 8, "warps": w}))
    # wgmma issue rate and latency (issue 22: the tensor pipe's sm_90a numbers were B200 estimates)
    for form, n, rs, wg in (("f16", 8, False, 1), ("f16", 64, False, 1), ("f16", 128, False, 1),
                            ("f16", 256, False, 1), ("f16", 256, True, 1), ("f16", 256, False, 2),
                            ("tf32", 256, False, 1), ("e4m3", 256, False, 1)):
        name = f"wgmma_{form}_n{n}" + ("_rs" if rs else "") + (f"_{wg}wg" if wg > 1 else "")
        cs.append(Case(name, "wgmma", "calibration", {"form": form, "n": n, "rs": rs, "warpgroups": wg},
                       f"{wg} warpgroup(s), each wgmma.mma_async m64n{n} {form} ({'A from registers' if rs else 'SS'}"
                       f") x {G.WGMMA_LENGTHS} per segment on one accumulator, then commit + wait_group 0"))
    for swz, inner, rows_list in (("128B", 64, (8, 32, 64, 128, 256)), ("none", 64, (8, 64, 256)),
                                  ("64B", 32, (64,)), ("32B", 16, (64,))):
        for rows in rows_list:
            cs.append(Case(f"tma_{swz}_{rows}x{inner}", "tma", "calibration",
                           {"swizzle": swz, "rows": rows, "inner": inner},
                           f"one 2D TMA load, f16 box {rows}x{inner} ({rows * inner * 2} B), swizzle {swz}"))
    for n in (256, 1024, 4096, 16384, 65536, 131072):
        cs.append(Case(f"bulk_{n}B", "bulk", "calibration", {"bytes": n}, f"one cp.async.bulk of {n} B"))
    cs.append(Case("dsmem_chase", "dsmem", "calibration", note="cluster of 2: ld.shared vs ld.shared::cluster "
                   "own/peer pointer chase"))
    # the three measurements the fit report asked for (issue 6): pipe_gemm's consumer loop, the bulk-copy ring,
    # a cold (DRAM) ld.global chase
    cs.append(Case("gmem_chase_cold", "gmem_cold", "calibration", note=f"ld.global.u64 pointer chase, one new "
                   f"line every {COLD_STRIDE} B: every load a first touch (DRAM)"))
    # what the validation timelines (calib/microbench/timeline.py) pointed at: first touches of lines the host has
    # just written (L2-resident, new pages), and instruction fetch of code run for the first time
    for stride, size in ((128, 1 << 20), (8192, 16 << 20)):
        cs.append(Case(f"gmem_chase_fresh_{stride}", "gmem_cold", "calibration", {"stride": stride, "buffer": size},
                       f"ld.global.u64 pointer chase, one new line every {stride} B of a {size >> 20} MB buffer "
                       f"the host has just written (smaller than L2)"))
    for vec, w in ((1, 1), (1, 4), (2, 1), (2, 4)):
        cs.append(Case(f"gmem_store_{'u32' if vec == 1 else 'v2'}_{w}w", "store", "calibration",
                       {"vec": vec, "warps": w}, f"{w} warp(s), each {G.STORE_LENGTHS} independent coalesced "
                       f"{'st.global.u32' if vec == 1 else 'st.global.v2.f32'} per segment, never waited for"))
    for vec in (1, 2):
        cs.append(Case(f"gmem_store_quiet_{'u32' if vec == 1 else 'v2'}_4w", "store_quiet", "calibration",
                       {"vec": vec, "warps": 4}, "gmem_store_*_4w without any other store between the segments "
                       "(segment times summed in registers, stored once at the end)"))
    cs.append(Case("tma_issue", "tma_issue", "calibration", note=f"lane 0: arrive.expect_tx + "
                   f"{G.TMA_ISSUE_LENGTHS} 2D tensor loads (8 KB boxes) per segment, issue only"))
    # first touches after the first rep: every rep loads lines never touched before, through a tensor map / a
    # source already used (rep 0 alone is also the first use of the map and of the buffer's pages)
    cs.append(Case("tma_fresh_128B_64x64", "tma", "calibration",
                   {"swizzle": "128B", "rows": 64, "inner": 64, "advance": True},
                   "one 2D TMA load per rep, f16 box 64x64 (8 KB), each rep the next 64 rows (fresh lines)"))
    for adv in (False, True):
        cs.append(Case(f"tma_{'fresh_' if adv else ''}none_32x64f32", "tma", "calibration",
                       {"swizzle": "none", "rows": 32, "inner": 64, "f32": True, "advance": adv},
                       "one 2D TMA load per rep, f32 box 32 x 64 (8 KB, 256-byte rows, no swizzle: val_ws_scale's "
                       "tile)" + (", each rep the next 32 rows (fresh lines)" if adv else "")))
        cs.append(Case(f"tma_{'fresh_' if adv else ''}none_32x64f32_stores", "tma", "calibration",
                       {"swizzle": "none", "rows": 32, "inner": 64, "f32": True, "advance": adv, "store_warps": 4},
                       f"tma_{'fresh_' if adv else ''}none_32x64f32 while 4 more warps store all the time "
                       f"(st.global.f32, 512 B apart: val_ws_scale's consumer stores)"))
    for n in (1024, 8192):
        cs.append(Case(f"bulk_fresh_{n}B", "bulk", "calibration", {"bytes": n, "advance": True},
                       f"one cp.async.bulk of {n} B per rep, each rep the next {n} B of the source (fresh lines)"))
    for form in G.FENCE_FORMS:
        cs.append(Case(f"mbarrier_init_fence_{form}", "fence", "calibration", {"form": form},
                       f"lane 0: {G.FENCE_LENGTHS} x (mbarrier.init + {G.FENCE_FORMS[form].strip()}) per segment"))
    for stride in (0, 64, 256):
        cs.append(Case(f"const_chase_{stride}", "const", "calibration", {"stride": stride},
                       f"ld.const.s64 chase through a 64 KB .const array, {stride} B per step"
                       + (" (one word: constant-cache hits)" if not stride else " (every step a new line)")))
    cs.append(Case("elem_loop", "elem", "calibration", note=f"bulk_pipeline's per-chunk consumer loop alone, "
                   f"run-time trip count, chunk sizes {G.ELEM_LOOP_BYTES} B"))
    cs.append(Case("icache_jump", "code", "calibration", {"jump": True}, note=f"branch over {G.JUMP_BYTES} B of "
                   f"code that never runs, then one instruction: rep 0 fetches each target for the first time"))
    cs.append(Case("icache_straight", "code", "calibration", note=f"{CODE_LENGTHS} straight-line fma.rn.f32 per "
                   f"segment, 8 independent chains: rep 0 runs code never fetched before"))
    for w in (1, 4):
        cs.append(Case(f"loop_ldsm_mma_{w}w", "loop", "calibration", {"warps": w},
                       f"pipe_gemm's consumer k-tile loop (4 x (5 ldmatrix.x4 + 8 mma.sync)) on SMEM data, {w} "
                       f"warp(s), {KTILES} k-tiles per segment"))
    cs.append(Case("tma_store_window", "tma_window", "calibration",
                   note="lane 0 times a 2D TMA load (val_ws_scale's 8 KB f32 tile, L2-warm) while 4 warps store "
                        "one ws tile (256 sectors) never / just before / with / ~150 / ~300 clk after it"))
    cs.append(Case("ws_tile", "ws_tile", "calibration", note=f"val_ws_scale's consumer work alone: 4 warps, per "
                   f"8 KB tile 16 x (ld.shared, mul, add, st.global.f32) per thread + mbarrier.arrive, "
                   f"{G.WS_TILE_LENGTHS} tiles per segment"))
    cs.append(Case("ws_tile_tma", "ws_tile", "calibration", {"tma_traffic": True},
                   "ws_tile beside a fifth warp streaming 8 KB TMA loads into SMEM (val_ws_scale's producer traffic)"))
    cs.append(Case("ws_tile_noarrive", "ws_tile", "calibration", {"arrive": False},
                   "ws_tile without the mbarrier.arrive after each tile"))
    cs.append(Case("ws_tile_same", "ws_tile", "calibration", {"same_lines": True},
                   "ws_tile with every tile storing to the same 8 KB (lines the kernel has already written)"))
    for tag, extra, what in (("", {}, ""), ("_reg", {"data": "reg"}, ", storing a register (no ld.shared/mul/add)"),
                             ("_contig", {"layout": "contig"}, ", warp w storing lines 16w.. (128 B apart)"),
                             ("_nostore", {"store": False}, ", summing instead of storing")):
        cs.append(Case(f"ws_tile_quiet{tag}", "ws_tile", "calibration", {"quiet": True, **extra},
                       f"ws_tile, each rep starting after ~1000 clk without stores (an empty store path){what}"))
    cs.append(Case("loop_ldsm_mma_4w_tma", "loop", "calibration", {"warps": 4, "tma_traffic": True},
                   "loop_ldsm_mma_4w beside a fifth warp streaming 8 KB TMA loads into SMEM (pipe_gemm's producer "
                   "traffic)"))
    for n in (32, 1024, 2048):
        cs.append(Case(f"bulk_ring_{n}", "ring", "calibration", {"bytes": n},
                       f"producer lane + consumer warp, {G.RING_STAGES}-stage ring of {n} B cp.async.bulk chunks, "
                       f"{RING_LENGTHS} chunks per segment"))
    # validation
    cs.append(Case("val_mma_gemm", "example", "validation", {"example": "mma_gemm",
                                                              "kwargs": {"beta": 1, "seed": 0}}))
    cs.append(Case("val_tma_mma_gemm", "example", "validation", {"example": "tma_mma_gemm", "kwargs": {"seed": 0}}))
    for chunks, nbytes in ((12, 1024), (25, 32), (5, 2048)):
        cs.append(Case(f"val_bulk_pipeline_{chunks}x{nbytes}", "example", "validation",
                       {"example": "bulk_pipeline", "kwargs": {"chunks": chunks, "chunk_bytes": nbytes,
                                                               "seed": chunks}}))
    for s in (2, 3, 4):
        cs.append(Case(f"val_pipe_gemm_{s}stage", "pipe_gemm", "validation", {"stages": s, "seed": s},
                       f"TMA + mma.sync GEMM {GEMM_M}x{GEMM_N}x{64 * GEMM_KTILES}, {s}-stage ring"))
    for s in (1, 2, 4):
        cs.append(Case(f"val_ws_scale_{s}stage", "ws", "validation", {"stages": s, "seed": s},
                       f"warp-specialized TMA producer / 4 consumer warps, {s}-stage ring"))
    return {c.name: c for c in cs}


CASES = _registry()
