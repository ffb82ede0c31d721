"""Fit the sm_90a timing parameters of sim/timing to the H100 calibration record (never to the validation set).

``python -m hw.microbench fit [--out FILE]`` writes the override file that sim/timing/params.py applies over its
sm_90a estimates (default: print it).  Two kinds of entries:

* **direct** readings (:data:`hw.microbench.analysis.DIRECT_PARAMS`): one recorded value is the parameter
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
copies of 256 B - 128 KiB: fixed latency + tensor-map extra + bytes / bandwidth), ``dram_latency`` (the same
copies' cold first rep, DRAM over L2), ``mma_sync_operand_read`` (pipe_gemm's consumer k-tile loop,
``loop_ldsm_mma_1w/4w``: the write-after-read wait of an ldmatrix for the mma.sync still reading its
destination).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import analysis as A
from . import cases as C

_NONE = "/nonexistent/measured.json"      # fit from the table's estimates, never from an earlier fit file


def _src(meta, names) -> str:
    return f"hw/microbench {', '.join(names)} ({meta.get('gpu')}, {meta['date'][:10]})"


def simulate(names, cfg) -> dict:
    """{case: derived values} of the calibration cases ``names`` simulated under the timing config ``cfg``."""
    from .record import run_case
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
    from sim.timing.params import arch_config
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
    names = [n for n, c in C.CASES.items() if c.group in ("tma", "bulk")]
    keys = ("tma_latency", "tma_tensor_extra", "tma_bytes_per_clk")
    x = gn_fit(meta, cfg(), names, "warm", dict(zip(keys, (300.0, 30.0, 100.0))),
               dict(zip(keys, (20.0, 20.0, 10.0))), iters=3)
    put({k: round(x[k], 1) for k in keys}, names, "L2-warm TMA tile loads (1-32 KB boxes, every swizzle) and "
        "bulk copies (256 B - 128 KiB), issue -> mbarrier phase seen by the issuing warp: least squares of "
        "latency (+ the tensor-map extra for tile loads) + bytes / bandwidth over the simulated kernels", "warm")

    # DRAM: the first rep of the same copies reads lines never touched (cold) -> + dram_latency - l2_latency
    names = [n for n, c in C.CASES.items() if c.group in ("tma", "bulk") and _meas_bytes(meta, n) <= 16384]
    x = gn_fit(meta, cfg(), names, "cold", {"dram_latency": 550.0}, {"dram_latency": 50.0})
    put({"dram_latency": round(x["dram_latency"], 1)}, names, "cold first rep of the TMA / bulk copies up to "
        "16 KB (larger ones overlap DRAM latency with the transfer: +160 clk cold at 64-128 KiB vs +300 at "
        "<= 4 KB, not modelled): least squares of dram_latency over the simulated kernels, first touch of a "
        "line costing dram_latency - l2_latency more", "cold")

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
    return out


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
