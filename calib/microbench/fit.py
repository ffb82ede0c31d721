"""Fit the sm_90a timing parameters of sim/timing to the H100 calibration record (never to the validation set).

``python -m calib.microbench fit [--out FILE]`` writes the override file that sim/timing/params.py applies over its
sm_90a estimates (default: print it).  Two kinds of entries:

* **direct** readings (:data:`calib.microbench.analysis.DIRECT_PARAMS`): one recorded value is the parameter
  (e.g. the ld.shared pointer-chase slope is ``smem_latency``);
* **fitted** parameters: the simulator runs the calibration kernels themselves -- with every direct reading and
  every earlier fit applied -- and the parameters are chosen so the simulated values match the recorded ones:
  least squares, by Gauss-Newton with finite differences (the simulated quantity is close to linear in each
  parameter: a latency adds once per timed step).  Each entry's ``source`` names its cases and ``note`` the
  method and the simulated vs measured values after the fit.

Fits run in order: ``smem_conflict_cycles`` (latency vs conflict ways, a straight line through the readings),
``ldmatrix_latency`` (x1/x2/x4 chains), ``dsmem_*`` (the cluster chase), ``barrier_wake_*`` (bar.sync with 1-32
warps: fixed + per-warp), ``mbarrier_op_latency`` (same-warp round trip), ``mbarrier_wake_latency`` (hand-off
between warps), ``tma_latency`` / ``tma_tensor_extra`` / ``tma_bytes_per_clk`` (L2-warm TMA tile loads and bulk
copies of 256 B - 128 KiB: fixed latency + tensor-map extra + bytes / bandwidth), ``tma_fresh_extra`` and
``tlb_miss_latency`` (fresh-line copies, then the cold first rep of every copy), ``mma_sync_operand_read`` (pipe_gemm's consumer k-tile loop,
``loop_ldsm_mma_1w/4w``: the write-after-read wait of an ldmatrix for the mma.sync still reading its
destination), ``tc_fixed_mma_latency`` (one wgmma of N = 64-256, fence to wait_group 0),
``gmem_store_clk_per_sector`` (4 warps storing), the once-per-segment parameters (fences,
constant caches, branches, run-time-trip loops), and last ``tma_store_request_share`` / ``tma_store_request_after``
(TMA loads behind the SM's store backlog: tma_store_window, tma_*_stores; their kernels pay everything above).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import analysis as A
from . import cases as C
from . import ptxgen as G
from .run import run_case

_NONE = "/nonexistent/measured.json"      # fit from the table's estimates, never from an earlier fit file


def _src(meta, names) -> str:
    """The source of a parameter: its cases, the GPU and the latest date they were recorded (merged cases carry
    their own)."""
    date = max((meta["cases"].get(n, {}).get("recorded") or {}).get("date") or meta["date"] for n in names)
    return f"calib/microbench {', '.join(names)} ({meta.get('gpu')}, {date[:10]})"


def simulate(names, cfg) -> dict:
    """{case: derived values} of the calibration cases ``names`` simulated under the timing config ``cfg``."""
    out = {}
    for n in names:
        e, _ = run_case(C.CASES[n], "sim", 1, timing=cfg)
        if e["status"] != "ok":
            raise RuntimeError(f"{n}: {e['status']} {e.get('detail', '')}")
        out[n] = e["values"]
    return out


def _measured(meta, names, key):
    return np.array([meta["cases"][n]["values"][key] for n in names], dtype=np.float64)


def gn_fit(meta, cfg, names, key, start: dict, steps: dict, iters: int = 2) -> dict:
    """Least-squares fit of the parameters ``start`` on which the simulated ``key`` of ``names`` depends (close
    to linearly): Gauss-Newton with finite differences of ``steps``."""
    meas = _measured(meta, names, key)
    x = dict(start)

    def sim(vals):
        c = cfg.with_overrides(vals)
        return np.array([simulate([n], c)[n][key] for n in names])
    for _ in range(iters):
        s0 = sim(x)
        jac = [(sim(dict(x, **{k: x[k] + h})) - s0) / h for k, h in steps.items()]
        delta = np.linalg.lstsq(np.array(jac).T, meas - s0, rcond=None)[0]
        x = {k: x[k] + float(d) for k, d in zip(steps, delta)}
    return x


def check(meta, cfg, names, key) -> str:
    sim = simulate(names, cfg)
    parts = []
    for n in names:
        m, s = meta["cases"][n]["values"][key], sim[n][key]
        parts.append(f"{n} {m:.4g} vs {s:.4g} ({100 * (s - m) / m:+.1f}%)")
    return "; ".join(parts)


def fit(meta: dict, log=print) -> dict:
    """{name: {'value', 'source', 'note'}}: the direct readings, then the fitted parameters (module docstring)."""
    from tcsim.timing.params import arch_config
    out = A.direct_params(meta)
    base = arch_config("sm_90a", measured=_NONE)

    def cfg():
        return base.with_overrides({k: v["value"] for k, v in out.items()})

    def put(values: dict, names, how: str, key: str | None = None):
        for k, v in values.items():
            out[k] = {"value": v, "source": _src(meta, names), "note": how}
        if key is not None:
            how += "; simulated vs measured: " + check(meta, cfg(), names, key)
            for k in values:
                out[k]["note"] = how
        log(f"{values}: {how}")

    # bank conflicts: latency = smem_latency + (wavefronts - 1) x smem_conflict_cycles
    ways = [1, 2, 4, 8, 16, 32]
    names = [f"smem_conflict_{w}way" for w in ways]
    slope = float(np.polyfit(np.array(ways, dtype=float), _measured(meta, names, "latency"), 1)[0])
    put({"smem_conflict_cycles": round(slope, 2)}, names, "slope of the ld.shared chase latency over 1-32 "
        "bank-conflict ways (least-squares line): latency per wavefront after the first", "latency")

    # ldmatrix: the dependent LDSM -> IADD3 chains
    names = ["ldmatrix_x1_latency", "ldmatrix_x2_latency", "ldmatrix_x4_latency"]
    x = gn_fit(meta, cfg(), names, "latency", {"ldmatrix_latency": 25.0}, {"ldmatrix_latency": 5.0})
    put({"ldmatrix_latency": round(x["ldmatrix_latency"], 1)}, names, "latency of an x1 ldmatrix (each further "
        "128-byte phase adds smem_conflict_cycles): least squares over the simulated x1/x2/x4 chains "
        "(LDSM -> IADD3 -> LDSM)", "latency")

    # DSMEM
    m = meta["cases"]["dsmem_chase"]["values"]
    put({"dsmem_remote_latency": round(m["ld_shared_cluster_peer"], 1)}, ["dsmem_chase"],
        "ld.shared::cluster pointer chase on the peer CTA's word (cluster of 2): direct reading")
    put({"dsmem_own_extra": round(m["ld_shared_cluster_own"] - m["ld_shared"], 1)}, ["dsmem_chase"],
        "ld.shared::cluster chase on the own CTA's word (mapa; the GPU runs it as a generic LD + MOV) minus the "
        "plain ld.shared chase: direct reading")

    # bar.sync: per barrier = simulated overhead + barrier_wake_latency + barrier_wake_per_warp x warps
    names = [f"bar_sync_{w}w" for w in (1, 2, 4, 8, 16, 32)]
    x = gn_fit(meta, cfg(), names, "per_barrier", {"barrier_wake_latency": 10.0, "barrier_wake_per_warp": 2.0},
               {"barrier_wake_latency": 4.0, "barrier_wake_per_warp": 1.0})
    put({"barrier_wake_latency": round(x["barrier_wake_latency"], 1),
         "barrier_wake_per_warp": round(x["barrier_wake_per_warp"], 2)}, names,
        "bar.sync 0 repeated by 1-32 warps: least squares of fixed + per-warp x warps over the simulated "
        "kernels", "per_barrier")

    # mbarrier: the same warp arrives then polls (result latency), then the hand-off between warps (wake-up)
    names = ["mbarrier_same_warp"]
    x = gn_fit(meta, cfg(), names, "round_trip", {"mbarrier_op_latency": 30.0}, {"mbarrier_op_latency": 10.0})
    put({"mbarrier_op_latency": round(x["mbarrier_op_latency"], 1)}, names, "mbarrier.arrive by lane 0 -> "
        "try_wait.parity result in the same warp, fitted to the simulated round trip", "round_trip")
    names = ["mbarrier_ping_pong"]
    x = gn_fit(meta, cfg(), names, "one_way", {"mbarrier_wake_latency": 30.0}, {"mbarrier_wake_latency": 20.0})
    put({"mbarrier_wake_latency": round(x["mbarrier_wake_latency"], 1)}, names, "arrive by one warp -> the warp "
        "blocked in try_wait issues again, fitted to the simulated ping-pong (round trip / 2)", "one_way")

    # TMA engine: warm = overhead + tma_latency (+ tma_tensor_extra) + bytes / tma_bytes_per_clk
    names = [n for n, c in C.CASES.items() if c.group in ("tma", "bulk") and not c.params.get("advance")
             and not c.params.get("store_warps")]
    keys = ("tma_latency", "tma_tensor_extra", "tma_bytes_per_clk")
    x = gn_fit(meta, cfg(), names, "warm", dict(zip(keys, (300.0, 30.0, 100.0))),
               dict(zip(keys, (20.0, 20.0, 10.0))), iters=3)
    put({k: round(x[k], 1) for k in keys}, names, "L2-warm TMA tile loads (1-32 KB boxes, every swizzle) and "
        "bulk copies (256 B - 128 KiB), issue -> mbarrier phase seen by the issuing warp: least squares of "
        "latency (+ the tensor-map extra for tile loads) + bytes / bandwidth over the simulated kernels", "warm")

    # first touches: the fresh-line copies (every rep reads lines never touched, through a map / source already
    # used) give the fresh-line extra; then the cold first rep of every copy up to 16 KB (also the first touch of
    # the buffer's page) gives the TLB miss
    names = [n for n, c in C.CASES.items() if c.group in ("tma", "bulk") and c.params.get("advance")
             and not c.params.get("store_warps") and n in meta["cases"]]
    x = gn_fit(meta, cfg(), names, "warm", {"tma_fresh_extra": 150.0}, {"tma_fresh_extra": 30.0})
    put({"tma_fresh_extra": round(x["tma_fresh_extra"], 1)}, names, "reps 1-8 of the fresh-line TMA / bulk "
        "copies (each rep loads lines the kernel has not touched; host-written, in L2): least squares of the "
        "extra latency of a load touching new lines over the simulated kernels", "warm")
    names = [n for n, c in C.CASES.items() if c.group in ("tma", "bulk") and not c.params.get("store_warps")
             and n in meta["cases"] and _meas_bytes(meta, n) <= 16384]
    x = gn_fit(meta, cfg(), names, "cold", {"tlb_miss_latency": 120.0}, {"tlb_miss_latency": 30.0})
    put({"tlb_miss_latency": round(x["tlb_miss_latency"], 1)}, names, "cold first rep of the TMA / bulk copies "
        "up to 16 KB (larger ones overlap the first touch with the transfer, not modelled): least squares of the "
        "latency of a first access to a page over the simulated kernels, on top of tma_fresh_extra", "cold")

    # mma.sync operand read: the consumer k-tile loop (per k-step 5 ldmatrix.x4 + 8 mma.sync, the same fragment
    # registers every k-step): each ldmatrix waits until the previous k-step's mma.sync reading its destination
    # has read it, mma_sync_operand_read after that mma's start
    names = ["loop_ldsm_mma_1w", "loop_ldsm_mma_4w"]
    x = gn_fit(meta, cfg(), names, "cycles_per_ktile", {"mma_sync_operand_read": 24.0},
               {"mma_sync_operand_read": 8.0})
    put({"mma_sync_operand_read": round(x["mma_sync_operand_read"], 1)}, names, "pipe_gemm's consumer k-tile "
        "loop on SMEM data, 1 and 4 warps: least squares of the cycles per k-tile over the simulated kernels, "
        "where an instruction overwriting a register waits until every earlier mma.sync reading it has read it "
        "(mma_sync_operand_read after its start).  An effective value: the PTX reuses its 20 fragment registers "
        "only across k-steps, while ptxas's SASS reuses 2-3 B-fragment registers within one (LDSM -> 2 HMMA -> "
        "LDSM), so it exceeds the physical operand-read time", "cycles_per_ktile")

    # wgmma: a warp's share occupies its sub-partition's tensor core N x tc_fixed_mma_cycles_per_n (direct reading)
    # and completes tc_fixed_mma_latency later; one wgmma from wgmma.fence to wgmma.wait_group 0 at N = 64..256
    names = [n for n in ("wgmma_f16_n64", "wgmma_f16_n128", "wgmma_f16_n256") if n in meta["cases"]]
    if names:
        x = gn_fit(meta, cfg(), names, "one_wgmma", {"tc_fixed_mma_latency": 100.0}, {"tc_fixed_mma_latency": 20.0})
        put({"tc_fixed_mma_latency": round(x["tc_fixed_mma_latency"], 1)}, names, "one wgmma m64nNk16 (N = 64, "
            "128, 256), wgmma.fence -> wgmma.wait_group 0 in one warpgroup: least squares of the latency after "
            "the tensor core's occupancy over the simulated kernels", "one_wgmma")

    # the SM's global-store drain rate: 4 warps of independent coalesced stores, cycles per store per warp over
    # the sectors the 4 warps store meanwhile (u32: 4 sectors per store, v2.f32: 8)
    names = ["gmem_store_u32_4w", "gmem_store_v2_4w"]
    if all(n in meta["cases"] for n in names):
        per = [meta["cases"][n]["values"]["cycles_per_store_per_warp"] / (4 * 4 * C.CASES[n].params["vec"])
               for n in names]
        put({"gmem_store_clk_per_sector": round(float(np.mean(per)), 3)}, names, "4 warps of independent coalesced "
            "stores (st.global.u32 / v2.f32): cycles per store per warp / sectors stored by the 4 warps = "
            + " / ".join(f"{x:.3f}" for x in per) + " clk per 32-byte sector; the mean")

    def residual(pname: str, case: str, keys, start: dict, how: str) -> None:
        """A parameter the timed segment(s) of ``case`` pay exactly once: simulate with the ``start`` values and
        shift ``pname`` by the mean residual of ``keys`` (the least-squares value)."""
        if case not in meta["cases"]:
            return
        sim = simulate([case], cfg().with_overrides(start))[case]
        resid = [meta["cases"][case]["values"][k] - sim[k] for k in keys]
        put({pname: round(start[pname] + float(np.mean(resid)), 1)}, [case], how)
        parts = simulate([case], cfg())[case]
        out[pname]["note"] += "; simulated vs measured: " + "; ".join(
            f"{case} {k} {parts[k]:.4g} vs {meta['cases'][case]['values'][k]:.4g}" for k in keys)

    # fences: each adds its hold exactly once to the timed segment
    residual("fence_mbarrier_init_cycles", "mbarrier_init_fence_init", ["one"],
             {"fence_mbarrier_init_cycles": 60.0}, "mbarrier.init + fence.mbarrier_init.release.cluster "
             "(MEMBAR.ALL.CTA) + try_wait: the warp is held this long (the residual of the simulated segment)")
    residual("fence_proxy_async_cycles", "mbarrier_init_fence_proxy", ["per_init_fence"],
             {"fence_proxy_async_cycles": 60.0}, "each further mbarrier.init + fence.proxy.async.shared::cta "
             "(FENCE.VIEW.ASYNC.S): the warp is held this long (the residual of the simulated segment)")

    # the constant caches: the ld.const chase (LDC -> IADD per step) on one word, over 256-byte blocks read before
    # (the chase has wrapped), over blocks never read (its first pass); each step pays the parameter once
    const0 = {"const_hit_latency": 30.0, "const_l15_latency": 100.0, "const_miss_latency": 400.0}
    for pname, case, key in (("const_hit_latency", "const_chase_0", "latency"),
                             ("const_l15_latency", "const_chase_256", "latency"),
                             ("const_miss_latency", "const_chase_256", "cold_latency")):
        residual(pname, case, [key], const0, f"ld.const.s64 chase ({key} per step) minus the rest of the "
                 "simulated step (the IADD)")

    # branches: a taken jump over code that never runs (warm), and its first time (a target not fetched yet)
    branch0 = {"branch_taken_cycles": 8.0, "branch_cold_target_cycles": 60.0}
    for pname, key in (("branch_taken_cycles", "warm_2048"), ("branch_cold_target_cycles", "cold_2048")):
        residual(pname, "icache_jump", [key], branch0, f"a branch over 2 KB of code that never runs ({key}): the "
                 "residual of the simulated segment")

    # run-time-trip loops: bulk_pipeline's per-chunk consumer loop alone, three chunk sizes; each execution adds
    # runtime_loop_cycles exactly once
    residual("runtime_loop_cycles", "elem_loop", [f"per_chunk_{n}" for n in G.ELEM_LOOP_BYTES],
             {"runtime_loop_cycles": 150.0}, "bulk_pipeline's per-chunk consumer loop alone (run-time trip count; "
             "32 / 1024 / 2048 B chunks): each execution of a loop ptxas unrolls behind a trip-count dispatch adds "
             "this once (the mean residual over the three sizes; the per-iteration cost is not fitted)")

    # TMA loads behind the store path, last: its kernels also pay the branches, fences and loops fitted above.
    # The load waits tma_store_request_share x the store backlog tma_store_request_after cycles into it; the delay
    # is linear in the share, so for each candidate moment the least-squares share comes from two simulations,
    # and the moment with the smallest residual wins.
    r = fit_tma_store_requests(meta, cfg())
    if r is not None:
        put(r[0], r[1], r[2])
    return out


#: the moments (cycles after a TMA load is served) tried for tma_store_request_after
TMA_STORE_MOMENTS = (40, 50, 60, 70, 80)


#: the cases of the store-interference fit
TMA_STORE_CASES = ("tma_store_window", "tma_none_32x64f32_stores", "tma_fresh_none_32x64f32_stores")


def _tma_store_vector(values: dict) -> tuple:
    """(labels, values) the store-interference fit compares, from ``{case: derived values}`` (recorded or
    simulated): tma_store_window's extra cycles of a load per store window, and the warm loads beside a saturated
    store path."""
    win = values["tma_store_window"]
    keys = [k for k in win if k.startswith("extra_")]
    labels = [f"tma_store_window {k}" for k in keys] + [f"{n} warm" for n in TMA_STORE_CASES[1:]]
    vals = [win[k] for k in keys] + [values[n]["warm"] for n in TMA_STORE_CASES[1:]]
    return labels, np.array(vals, dtype=np.float64)


def _tma_store_sim(cfg) -> np.ndarray:
    return _tma_store_vector(simulate(TMA_STORE_CASES, cfg))[1]


def fit_tma_store_requests(meta, cfg) -> tuple | None:
    """(values, case names, note) of the fit of ``tma_store_request_share`` and ``tma_store_request_after`` on
    ``cfg`` (the config with every earlier fit), or None when the record lacks its cases."""
    if not all(n in meta["cases"] for n in TMA_STORE_CASES):
        return None
    labels, meas = _tma_store_vector({n: meta["cases"][n]["values"] for n in TMA_STORE_CASES})
    best = None
    for after in TMA_STORE_MOMENTS:
        s0 = _tma_store_sim(cfg.with_overrides({"tma_store_request_share": 1.0, "tma_store_request_after": after}))
        s1 = _tma_store_sim(cfg.with_overrides({"tma_store_request_share": 2.0, "tma_store_request_after": after}))
        slope = s1 - s0                                      # per unit of share (s0 is at share 1)
        share = 1.0 + float(slope @ (meas - s0) / (slope @ slope))
        rms = float(np.sqrt(np.mean((s0 + (share - 1.0) * slope - meas) ** 2)))
        if best is None or rms < best[0]:
            best = (rms, after, share)
    rms, after, share = best
    values = {"tma_store_request_share": round(share, 2), "tma_store_request_after": float(after)}
    fitted = _tma_store_sim(cfg.with_overrides(values))
    note = (f"a TMA load waits share x the SM's store backlog `after` cycles after it is served: for each `after` "
            f"in {TMA_STORE_MOMENTS} the least-squares share over tma_store_window's extra cycles per store window "
            f"and the warm loads beside a saturated store path (tma_*_stores); the smallest residual wins (rms "
            f"{rms:.0f} clk); simulated vs measured: "
            + "; ".join(f"{lab} {f:.0f} vs {m:.0f}" for lab, f, m in zip(labels, fitted, meas)))
    return values, list(TMA_STORE_CASES), note


def _meas_bytes(meta, n) -> int:
    return int(meta["cases"][n]["values"]["bytes"])


def main(meta: dict, out_path=None) -> int:
    res = fit(meta)
    text = json.dumps(res, indent=1) + "\n"
    if out_path:
        Path(out_path).write_text(text)
        print(f"wrote {len(res)} parameters -> {out_path}")
    else:
        print(text, end="")
    return 0
