"""From raw clock64 samples to named values: statistics per timed segment and the derived quantities of each
calibration case (slopes, throughputs), and per-CTA cycles of the validation kernels.  Pure numpy; the same
functions read a GPU record and a simulator run."""
from __future__ import annotations

import numpy as np

from . import cases as C
from . import ptxgen as G


def stats(x) -> dict:
    x = np.asarray(x, dtype=np.float64).ravel()
    return {"median": float(np.median(x)), "min": float(x.min()), "max": float(x.max()),
            "p25": float(np.percentile(x, 25)), "p75": float(np.percentile(x, 75)), "n": int(x.size)}


def _warm(out, warps=None) -> np.ndarray:
    """(reps-1, nseg) samples of reps 1.. : one warp's, or per rep the max over ``warps`` (CTA-wide time)."""
    out = np.asarray(out, dtype=np.int64)
    if warps is None:
        return out[0, 1:, :]
    return out[list(warps), 1:, :].max(axis=0)


def _slope(med0, med1, n0, n1) -> float:
    return (med1 - med0) / (n1 - n0)


def derive(case: C.Case, out, sass: dict | None = None) -> dict:
    """{'segments': [stats per segment], 'values': {name: cycles or rate}} for a calibration case.  ``sass``:
    the kernel's SASS opcode counts (GPU records), used to tell the latency per SASS instruction of an ALU chain
    that ptxas folded (two dependent ``add.s32`` become one ``IADD3``)."""
    out = np.asarray(out, dtype=np.int64)
    g, p = case.group, case.params
    nw = out.shape[0]
    cta = None
    if g in ("ldmatrix", "mma", "loop") and p.get("warps", 1) > 1 or g == "wgmma":
        cta = range(nw)
    if g == "ws_tile":
        cta = range(4)                                       # the four consumer warps (not the TMA warp)
    if g == "store_quiet":                                   # [warp, 1, {rep-0 seg 0, seg 1, sums of reps 1..}]
        o = np.asarray(out, dtype=np.float64)[:, 0, :]
        n = C.REPS - 1
        segs = [stats(o[:, 2 + k] / n) for k in range(2)]
        mean = [float(np.max(o[:, 2 + k]) / n) for k in range(2)]
        per = _slope(mean[0], mean[1], *G.STORE_LENGTHS)
        return {"segments": segs, "values": {"cycles_per_store_per_warp": per, "seg16": mean[0], "seg64": mean[1],
                                             "rep0_seg16": float(np.max(o[:, 0])),
                                             "rep0_seg64": float(np.max(o[:, 1]))}}
    if g == "ring":
        w = out[1, 1:, :]                                    # the consumer warp
    elif g == "dsmem":
        w = np.concatenate([out[0, 1:, :], out[1, 1:, :]], axis=0)
    else:
        w = _warm(out, cta)
    segs = [stats(w[:, k]) for k in range(w.shape[1])]
    med = [s["median"] for s in segs]
    v: dict = {}
    if g == "clock":
        v = {"clock_read_pair": med[0], "clock_read_pair_with_xor": med[1]}
    elif g in ("alu", "smem", "gmem", "gmem_cold", "const") or (g == "ldmatrix" and p["mode"] == "latency") or \
            (g == "mma" and p["chains"] == 1):
        n0, n1 = C.CHAIN
        v = {"latency": _slope(med[0], med[1], n0, n1)}
        v["fixed"] = med[0] - n0 * v["latency"]
        if g == "const":                 # rep 0: the chase's first pass (every step a line never read)
            v["cold_latency"] = _slope(float(out[0, 0, 0]), float(out[0, 0, 1]), n0, n1)
        if g == "alu" and sass:
            n_ptx = sum(C.CHAIN)
            n_sass = sass_count(sass, SASS_OF[p["op"]])
            fold = max(1, round(n_ptx / n_sass)) if n_sass else 1
            v["sass_fold"] = fold
            v["latency_per_sass_instruction"] = v["latency"] * fold
    elif g == "bar_sync":
        v = {"per_barrier": _slope(med[0], med[1], *C.BAR_LENGTHS)}
    elif g == "mbarrier":
        rt = _slope(med[0], med[1], *C.MBAR_LENGTHS)
        v = {"round_trip": rt}
        if p["mode"] == "ping_pong":
            v["one_way"] = rt / 2
    elif g == "ldmatrix":
        per = _slope(med[0], med[1], *C.CHAIN)              # cycles per chain step per warp (all warps at once)
        v = {"cycles_per_step_per_warp": per, "ldmatrix_per_clk_sm": p["warps"] / per,
             "bytes_per_clk_sm": p["warps"] * p["x"] * 128 / per}
    elif g == "mma":
        per = _slope(med[0], med[1], *C.MMA_TPUT)           # cycles per step of `chains` mmas per warp
        rate = p["warps"] * p["chains"] / per
        v = {"cycles_per_step": per, "mma_per_clk_sm": rate, "flop_per_clk_sm": rate * C.MMA_FLOP,
             "fraction_of_peak": rate * C.MMA_FLOP / C.PEAK_MMA_F16_FLOP_PER_CLK}
    elif g == "wgmma":
        n1, n4, n16 = G.WGMMA_LENGTHS
        per = _slope(med[1], med[2], n4, n16)               # cycles per wgmma of each warpgroup (CTA-wide)
        flop = 2 * 64 * p["n"] * G.WGMMA_FORMS[p["form"]][1]
        v = {"cycles_per_wgmma": per, "fixed": med[1] - n4 * per, "one_wgmma": med[0],
             "flop_per_clk_sm": p.get("warpgroups", 1) * flop / per}
    elif g in ("tma", "bulk"):
        nbytes = p["rows"] * p["inner"] * (4 if p.get("f32") else 2) if g == "tma" else p["bytes"]
        v = {"cold": float(out[0, 0, 0]), "warm": med[0], "bytes": nbytes, "bytes_per_clk_warm": nbytes / med[0]}
    elif g == "loop":
        per = _slope(med[0], med[1], *C.KTILES)             # cycles per k-tile (CTA-wide: max over the warps)
        v = {"cycles_per_ktile": per, "fixed": med[0] - C.KTILES[0] * per,
             "mma_per_clk_sm": p["warps"] * 32 / per, "ldmatrix_per_clk_sm": p["warps"] * 20 / per}
    elif g == "store":
        per = _slope(med[0], med[1], *G.STORE_LENGTHS)      # cycles per store per warp (all warps at once)
        nb = 128 * p["vec"]
        v = {"cycles_per_store_per_warp": per, "bytes_per_clk_sm": p["warps"] * nb / per, "fixed": med[0]}
    elif g == "ws_tile":
        per = _slope(med[0], med[1], *G.WS_TILE_LENGTHS)     # cycles per tile (CTA-wide: max over the warps)
        v = {"cycles_per_tile": per, "fixed": med[0] - G.WS_TILE_LENGTHS[0] * per,
             "sectors_per_clk": 256 / per, "one_tile": med[0]}
    elif g == "tma_window":
        v = {name: med[k] for k, (name, _, _) in enumerate(G.TMA_STORE_WINDOWS)}
        v.update({f"extra_{name}": med[k] - med[0] for k, (name, _, _) in enumerate(G.TMA_STORE_WINDOWS) if k})
    elif g == "tma_issue":
        n0, n1 = G.TMA_ISSUE_LENGTHS
        v = {"per_tma_issue": _slope(med[0], med[1], n0, n1), "expect_tx_plus_one": med[0]}
    elif g == "fence":
        v = {"per_init_fence": _slope(med[0], med[1], *G.FENCE_LENGTHS), "one": med[0]}
    elif g == "elem":
        v = {f"per_chunk_{n}": med[k] for k, n in enumerate(G.ELEM_LOOP_BYTES)}
    elif g == "code" and p.get("jump"):
        v = {}
        for k, d in enumerate(G.JUMP_BYTES):
            v[f"warm_{d}"] = med[k]
            v[f"cold_{d}"] = float(out[0, 0, k])
    elif g == "code":
        n0, n1 = C.CODE_LENGTHS
        warm = _slope(med[0], med[1], n0, n1)
        cold = [float(out[0, 0, k]) for k in range(2)]
        cold_slope = _slope(cold[0], cold[1], n0, n1)
        v = {"warm_per_instruction": warm, "cold_per_instruction": cold_slope,
             "cold_extra_per_line": (cold_slope - warm) * 8, "cold_first_extra": cold[0] - med[0]}
    elif g == "ring":
        per = _slope(med[0], med[1], *C.RING_LENGTHS)       # consumer cycles per chunk
        v = {"per_chunk": per, "fixed": med[0] - C.RING_LENGTHS[0] * per, "bytes": p["bytes"],
             "bytes_per_clk": p["bytes"] / per}
    elif g == "dsmem":
        n0, n1 = C.CHAIN
        for k, name in enumerate(("ld_shared", "ld_shared_cluster_own", "ld_shared_cluster_peer")):
            v[name] = _slope(med[2 * k], med[2 * k + 1], n0, n1)
    return {"segments": segs, "values": v}


#: the SASS mnemonic a chain op must compile to (checked against the recorded SASS counts)
SASS_OF = {"add.s32": "IADD3", "mad.lo.s32": "IMAD", "mad.wide.u32": "IMAD.WIDE", "fma.rn.f32": "FFMA",
           "add.f32": "FADD", "fma.rn.f16x2": "HFMA2", "add.f64": "DADD", "shfl.sync.idx": "SHFL.IDX"}


def sass_count(counts: dict, prefix: str) -> int:
    return sum(n for k, n in counts.items() if k == prefix or k.startswith(prefix + "."))


def validation_summary(launch, clk_runs: list) -> dict:
    """Per run, per CTA cycles; the median over runs of each CTA and of the CTA mean."""
    per_run = [C.cta_cycles(launch, clk) for clk in clk_runs]
    arr = np.asarray(per_run, dtype=np.float64)
    return {"cta_cycles": per_run, "median_cta_cycles": [float(x) for x in np.median(arr, axis=0)],
            "cycles": float(np.median(arr.mean(axis=1)))}


#: sm_90a timing parameters (sim/timing/params.py names) that one recorded value gives directly:
#: name -> (case, value key, scale, note).  A candidate for sim/timing/data/measured_h100.json, which
#: sim/timing applies over its sm_90a estimates; fitting the model's own parameters is a separate step.
DIRECT_PARAMS = {
    "smem_latency": ("smem_conflict_1way", "latency", 1, "ld.shared.u32 pointer chase, conflict-free (LDS->LDS)"),
    "l1_latency": ("gmem_chase_default", "latency", 1, "ld.global.u64 pointer chase hitting L1 (LDG->LDG)"),
    "l2_latency": ("gmem_chase_cg", "latency", 1, "ld.global.cg.u64 pointer chase hitting L2"),
    "alu_latency": ("alu_fma_rn_f32", "latency", 1, "dependent FFMA chain (IMAD, FADD and IADD3 also 4)"),
    "fp64_latency": ("alu_add_f64", "latency", 1, "dependent DADD chain"),
    "warp_op_latency": ("alu_shfl_sync_idx", "latency", 1, "dependent shfl.sync.idx chain"),
    "mma_sync_latency": ("mma_f16_latency", "latency", 1, "dependent m16n8k16 f32.f16 chain (bf16, f16 acc: same)"),
    "mma_sync_interval": ("mma_f16_tput_1w", "cycles_per_step", 1 / 8, "one warp, 8 independent chains: cycles "
                          "per step / 8 = HMMA.16816 issue interval of one sub-partition"),
    "tma_issue_cycles": ("tma_issue", "per_tma_issue", 1, "lane 0 issuing 1 vs 4 back-to-back 2D tensor loads: the "
                         "issuing warp is held this long per cp.async.bulk.tensor"),
    "gmem_store_warp_interval": ("gmem_store_u32_1w", "cycles_per_store_per_warp", 1, "one warp issuing independent "
                                 "coalesced st.global.u32: one every this many cycles at most"),
    "gmem_fresh_latency": ("gmem_chase_fresh_128", "latency", 1, "dependent ld.global.u64 chase, each load a line the "
                           "kernel has not touched in a 1 MB buffer the host has just written (in L2; an L2 hit "
                           "costs l2_latency)"),
    "gmem_cold_latency": ("gmem_chase_cold", "latency", 1, "dependent ld.global.u64 chase, each load a line at the "
                          "front of a 64 MB buffer (larger than L2: from DRAM), incl. one 64-bit add"),
    "tc_fixed_mma_cycles_per_n": ("wgmma_f16_n256", "cycles_per_wgmma", 1 / 256, "back-to-back wgmma m64n256k16 "
                                  "f16 of one warpgroup on one accumulator: cycles per wgmma / N (N = 64, 128 and "
                                  "tf32 / e4m3 at N = 256 give the same N/2: 4096 dense f16 FLOP/clk/SM)"),
    "tc_fixed_mma_min_cycles": ("wgmma_f16_n8", "cycles_per_wgmma", 1, "back-to-back wgmma m64n8k16: the shortest "
                                "interval (N/2 would be 4)"),
}


def direct_params(meta: dict) -> dict:
    """{name: {'value', 'source', 'note'}} of :data:`DIRECT_PARAMS` from a record's meta."""
    out = {}
    for name, (case, key, scale, note) in DIRECT_PARAMS.items():
        e = meta["cases"][case]
        date = (e.get("recorded") or {}).get("date") or meta["date"]        # a merged case carries its own
        out[name] = {"value": round(e["values"][key] * scale, 2),
                     "source": f"calib/microbench {case} ({meta.get('gpu')}, {date[:10]})", "note": note}
    return out
