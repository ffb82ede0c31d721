"""Speed of the execution tiers (tcsim.fast) on the shared benchmark kernels, in one run.

    python benchmarks/bench_tiers.py [--repeat 3] [--sweep 64,128,192,256] [--no-numba] [--reference-sweep]

Prints, for the reference and the fast tier, PTX lane-instructions per CPU second of the whole launch and of the
simulation alone (and the fast tier's wall time; on a loaded machine CPU time is the measure) of

* ``gemm_tiled`` 64^3 (nvcc, fp32, 16x16 shared-memory tiles, 16 CTAs x 256 threads) and ``alu_loop`` (128 threads
  x 1000 iterations), timing off and on (race detector off; then gemm_tiled 64^3 with the detector on);
* ``gemm_tiled`` from 64^3 to 256^3 on the fast tier (and on the reference tier at 64^3, or everywhere with
  ``--reference-sweep``): the rate at each size shows whether time grows linearly with the work;
* numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, in a child process) on the same gemm_tiled algorithm at
  64^3, when numba is installed, for the ratio;

and the ratios against issue 18's targets (50M / 20M lane-instructions/s with timing off, timing on at most 1.5x
off, 100x numba's simulator, 256^3 under 5 s).  Every run's outputs are checked (gemm against float64 numpy,
alu_loop against the C recurrence) and the two tiers' outputs and cycle counts are required to be identical.
Times are the median of ``--repeat`` interleaved runs (reference, fast, reference, ...).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "benchmarks" / "kernels"

from tcsim.launch import Launch  # noqa: E402

TIERS = ("reference", "fast")


def gemm_launch(s: int):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((s, s)).astype(np.float32)
    b = rng.standard_normal((s, s)).astype(np.float32)
    launch = Launch(ptx=KERNELS / "gemm_tiled.sm_100a.ptx", kernel="gemm_tiled", grid=(s // 16, s // 16, 1),
                    block=(16, 16, 1), args=[a, b, np.zeros((s, s), np.float32), s, s, s])

    def check(res):
        ref = a.astype(np.float64) @ b.astype(np.float64)
        return np.allclose(res.outputs[2], ref, rtol=1e-4, atol=1e-3 * np.sqrt(s))
    return launch, check


def alu_launch(n: int = 128, iters: int = 1000):
    launch = Launch(ptx=KERNELS / "alu_loop.sm_100a.ptx", kernel="alu_loop", grid=(1, 1, 1), block=(n, 1, 1),
                    args=[np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.float64), iters,
                          1103515245, 12345, 0.999, 0.5])

    def check(res):
        a = np.arange(n, dtype=np.int64) + 1
        b = np.arange(n, dtype=np.int64)
        for _ in range(iters):
            a = (a * 1103515245 + 12345) & 0x7FFFFFFF
            b = b ^ (a >> 7)
        return np.array_equal(res.outputs[0], a) and np.array_equal(res.outputs[1], b)
    return launch, check


def _run(launch, tier, **kw):
    """run_launch, in its three phases (set-up, simulation, result): (result, CPU s of the simulation itself)."""
    from tcsim.launch import Prepared
    prep = Prepared(launch, tier=tier, **kw)
    try:
        c0 = time.process_time()
        prep.sim.run()
        run_cpu = time.process_time() - c0
    finally:
        prep.close()
    return prep.result(), run_cpu


def measure(make, tiers, repeat: int, **kw) -> dict:
    """tier -> (median wall s, lane-instructions, cycles, outputs, median CPU s, median CPU s of the simulation
    alone); runs interleaved; checks every result."""
    walls = {t: [] for t in tiers}
    cpus = {t: [] for t in tiers}
    runs = {t: [] for t in tiers}
    info = {}
    kw.setdefault("progress", False)
    kw.setdefault("max_seconds", 1e9)            # (no run budget: a loaded machine is slow, not stuck)
    for _ in range(repeat):
        for t in tiers:
            launch, check = make()
            t0, c0 = time.perf_counter(), time.process_time()
            res, run_cpu = _run(launch, t, **kw)
            walls[t].append(time.perf_counter() - t0)
            cpus[t].append(time.process_time() - c0)
            runs[t].append(run_cpu)
            if not check(res):
                raise SystemExit(f"wrong result on tier {t}")
            info[t] = (res.stats["lane_instructions"], res.stats["cycles"],
                       [o.tobytes() if isinstance(o, np.ndarray) else None for o in res.outputs])
    return {t: (statistics.median(walls[t]),) + info[t] + (statistics.median(cpus[t]), statistics.median(runs[t]))
            for t in tiers}


def _check_same(res: dict) -> str:
    if len(res) < 2:
        return ""
    (_, l0, c0, o0, _, _), (_, l1, c1, o1, _, _) = res["reference"], res["fast"]
    if (l0, c0, o0) != (l1, c1, o1):
        raise SystemExit("the tiers disagree (outputs, lane-instructions or cycles)")
    return "identical"


def rate(lanes, wall):
    return lanes / wall if wall > 0 else float("inf")


NUMBA_GEMM = textwrap.dedent("""
    import os, sys, time
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import numpy as np
    from numba import cuda, float32
    TPB = 16

    @cuda.jit
    def gemm_tiled(A, B, C, M, N, K):
        sA = cuda.shared.array((TPB, TPB), float32)
        sB = cuda.shared.array((TPB, TPB), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        x = cuda.blockIdx.x * TPB + tx
        y = cuda.blockIdx.y * TPB + ty
        acc = float32(0.0)
        for t in range(K // TPB):
            sA[ty, tx] = A[y, t * TPB + tx]
            sB[ty, tx] = B[t * TPB + ty, x]
            cuda.syncthreads()
            for j in range(TPB):
                acc += sA[ty, j] * sB[j, tx]
            cuda.syncthreads()
        C[y, x] = acc

    s = int(sys.argv[1])
    rng = np.random.default_rng(1)
    a = rng.standard_normal((s, s)).astype(np.float32)
    b = rng.standard_normal((s, s)).astype(np.float32)
    c = np.zeros((s, s), np.float32)
    t0, c0 = time.perf_counter(), time.process_time()
    gemm_tiled[(s // TPB, s // TPB), (TPB, TPB)](a, b, c, s, s, s)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    ok = np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-3 * np.sqrt(s))
    print(dt, cpu, int(ok))
""")


def numba_sim(s: int):
    """(wall s, CPU s) of numba's CUDA simulator on gemm_tiled s^3 (child process), or None without numba."""
    import importlib.util
    if importlib.util.find_spec("numba") is None:
        return None
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", NUMBA_GEMM, str(s)], capture_output=True, text=True, env=env,
                       timeout=1800)
    if r.returncode != 0:
        print(f"  numba CUDA simulator failed: {r.stderr.strip().splitlines()[-1:]}")
        return None
    dt, cpu, ok = r.stdout.split()[-3:]
    if ok != "1":
        raise SystemExit("numba's simulator computed a wrong gemm")
    return float(dt), float(cpu)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=1, help="interleaved runs per measurement (median)")
    ap.add_argument("--sweep", default="64,128,192,256", help="gemm_tiled sizes for the scaling sweep")
    ap.add_argument("--reference-sweep", action="store_true", help="run the reference tier at every sweep size")
    ap.add_argument("--no-numba", action="store_true", help="skip numba's CUDA simulator")
    args = ap.parse_args(argv)
    rep = args.repeat
    print(f"tcsim execution tiers ({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; median of {rep} "
          "interleaved run(s)).  Times are this process's CPU seconds (a loaded machine inflates wall time, not "
          "these); lane/s = PTX lane-instructions per CPU second of the whole run_launch (parse, set-up, "
          "simulation, result), sim lane/s = of the simulation alone (Simulation.run); wall: the fast tier's "
          "wall seconds\n")
    rows = []
    results = {}
    for name, make in (("gemm_tiled 64^3", lambda: gemm_launch(64)), ("alu_loop 128x1000", alu_launch)):
        for timing in (False, True):
            r = measure(make, TIERS, rep, timing=timing, detect=False)
            same = _check_same(r)
            results[(name, timing)] = r
            rows.append((f"{name}, timing {'on' if timing else 'off'}", r, same))
    r = measure(lambda: gemm_launch(64), TIERS, rep, timing=False, detect=True)
    results[("gemm_tiled 64^3", "detect")] = r
    rows.append(("gemm_tiled 64^3, timing off, race detector on", r, _check_same(r)))
    w = max(len(x[0]) for x in rows)
    print(f"{'workload':<{w}}  {'lane-instr':>10}  {'ref cpu s':>9}  {'ref lane/s':>10}  {'fast cpu s':>10}  "
          f"{'fast lane/s':>11}  {'sim lane/s':>10}  {'speed-up':>8}  {'fast wall':>9}")
    for label, r, same in rows:
        (_, lanes, _, _, cr, _), (tf, _, _, _, cf, rf) = r["reference"], r["fast"]
        print(f"{label:<{w}}  {lanes:>10}  {cr:>9.3f}  {rate(lanes, cr):>10.3g}  {cf:>10.3f}  {rate(lanes, cf):>11.3g}"
              f"  {rate(lanes, rf):>10.3g}  {cr / cf:>7.1f}x  {tf:>8.3f}s  {same}")

    print("\ngemm_tiled scaling sweep (timing off; CPU seconds):")
    sizes = [int(x) for x in args.sweep.split(",") if x]
    sweep = {}
    for s in sizes:
        tiers = TIERS if (args.reference_sweep or s <= 64) else ("fast",)
        r = measure(lambda: gemm_launch(s), tiers, rep, timing=False, detect=False)
        sweep[s] = r
        f = r["fast"]
        line = f"  {s:>4}^3  {f[1]:>10} lane-instr  fast {f[4]:8.3f} s  {rate(f[1], f[4]):10.3g} lane/s  " \
               f"(sim {f[5]:7.3f} s, {rate(f[1], f[5]):10.3g} lane/s; wall {f[0]:.2f} s)"
        if "reference" in r:
            _check_same(r)
            line += f"   reference {r['reference'][4]:8.3f} s  {rate(r['reference'][1], r['reference'][4]):10.3g}" \
                    f" lane/s  (identical)"
        print(line)

    nb = None if args.no_numba else numba_sim(64)
    g_off = results[("gemm_tiled 64^3", False)]
    g_on = results[("gemm_tiled 64^3", True)]
    a_off = results[("alu_loop 128x1000", False)]
    a_on = results[("alu_loop 128x1000", True)]
    det = results[("gemm_tiled 64^3", "detect")]
    print()
    if nb is not None:
        print(f"numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1), gemm_tiled 64^3: {nb[1]:.3f} s CPU ({nb[0]:.3f} s "
              f"wall; {rate(g_off['fast'][1], nb[1]):.3g} lane/s of the same kernel); fast tier "
              f"{nb[1] / g_off['fast'][4]:.1f}x faster by CPU time, reference tier "
              f"{nb[1] / g_off['reference'][4]:.1f}x")
    else:
        print("numba CUDA simulator: not run (numba not installed or --no-numba)")

    print("\nagainst issue 18's targets (fast tier; CPU time, measured in this run):")

    def tgt(label, value, goal, ok):
        print(f"  {label:<44} {value:<34} target {goal:<14} {'met' if ok else 'NOT met'}")
    for label, r, goal in (("gemm_tiled 64^3, timing off", g_off, 50e6), ("alu_loop, timing off", a_off, 20e6)):
        tot, sim_ = rate(r["fast"][1], r["fast"][4]), rate(r["fast"][1], r["fast"][5])
        tgt(label, f"{tot / 1e6:.2f}M lane/s (sim alone {sim_ / 1e6:.2f}M)", f">= {goal / 1e6:.0f}M lane/s",
            tot >= goal)
    for label, on, off in (("gemm_tiled 64^3, timing on / off", g_on, g_off),
                           ("alu_loop, timing on / off", a_on, a_off),
                           ("gemm_tiled 64^3, race detector on / off", det, g_off)):
        x = on["fast"][4] / off["fast"][4]
        lim = 2.0 if "detector" in label else 1.5
        tgt(label, f"{x:.2f}x", f"<= {lim:g}x", x <= lim)
    if nb is not None:
        x = nb[1] / g_off["fast"][4]
        tgt("gemm_tiled 64^3 vs numba's CUDA simulator", f"{x:.1f}x faster", ">= 100x", x >= 100)
    if 256 in sweep:
        t256 = sweep[256]["fast"][4]
        tgt("gemm_tiled 256^3, timing off", f"{t256:.2f} s", "< 5 s", t256 < 5)
    if len(sweep) >= 2:
        rs = [rate(sweep[s]["fast"][1], sweep[s]["fast"][4]) for s in sizes]
        print(f"  rate across the sweep: {min(rs) / 1e6:.2f}M .. {max(rs) / 1e6:.2f}M lane/s "
              f"(linear growth: the rate stays flat or rises)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
