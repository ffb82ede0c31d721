"""Speed of the execution tiers (tcsim.fast) on the shared benchmark kernels, in one run.

    python benchmarks/bench_tiers.py [--repeat 3] [--sweep 64,128,192,256] [--no-numba] [--reference-sweep]

Prints, for the reference and the fast tier, PTX lane-instructions per second (and wall time) of

* ``gemm_tiled`` 64^3 (nvcc, fp32, 16x16 shared-memory tiles, 16 CTAs x 256 threads) and ``alu_loop`` (128 threads
  x 1000 iterations), timing off and on (race detector off; then gemm_tiled 64^3 with the detector on);
* ``gemm_tiled`` from 64^3 to 256^3 on the fast tier (and on the reference tier up to 128^3, or everywhere with
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

from tcsim.launch import Launch, run_launch  # noqa: E402

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


def measure(make, tiers, repeat: int, **kw) -> dict:
    """tier -> (median wall s, lane-instructions, cycles, outputs, median CPU s); runs interleaved; checks every
    result."""
    walls = {t: [] for t in tiers}
    cpus = {t: [] for t in tiers}
    info = {}
    kw.setdefault("progress", False)
    kw.setdefault("max_seconds", 1e9)            # (no run budget: a loaded machine is slow, not stuck)
    for _ in range(repeat):
        for t in tiers:
            launch, check = make()
            t0, c0 = time.perf_counter(), time.process_time()
            res = run_launch(launch, tier=t, **kw)
            walls[t].append(time.perf_counter() - t0)
            cpus[t].append(time.process_time() - c0)
            if not check(res):
                raise SystemExit(f"wrong result on tier {t}")
            info[t] = (res.stats["lane_instructions"], res.stats["cycles"],
                       [o.tobytes() if isinstance(o, np.ndarray) else None for o in res.outputs])
    return {t: (statistics.median(walls[t]),) + info[t] + (statistics.median(cpus[t]),) for t in tiers}


def _check_same(res: dict) -> str:
    if len(res) < 2:
        return ""
    (_, l0, c0, o0, _), (_, l1, c1, o1, _) = res["reference"], res["fast"]
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
          "interleaved run(s)); lane/s = PTX lane-instructions per second of wall time (cpu: per second of this "
          "process's CPU time, what a loaded machine does not inflate)\n")
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
    print(f"{'workload':<{w}}  {'lane-instr':>10}  {'ref s':>8}  {'ref lane/s':>10}  {'ref cpu/s':>9}  {'fast s':>8}  "
          f"{'fast lane/s':>11}  {'fast cpu/s':>10}  {'speed-up':>8}  {'(cpu)':>6}")
    for label, r, same in rows:
        (tr, lanes, _, _, cr), (tf, _, _, _, cf) = r["reference"], r["fast"]
        print(f"{label:<{w}}  {lanes:>10}  {tr:>8.3f}  {rate(lanes, tr):>10.3g}  {rate(lanes, cr):>9.3g}  {tf:>8.3f}  "
              f"{rate(lanes, tf):>11.3g}  {rate(lanes, cf):>10.3g}  {tr / tf:>7.1f}x  {cr / cf:>5.1f}x  {same}")

    print("\ngemm_tiled scaling sweep (timing off):")
    sizes = [int(x) for x in args.sweep.split(",") if x]
    sweep = {}
    for s in sizes:
        tiers = TIERS if (args.reference_sweep or s <= 64) else ("fast",)
        r = measure(lambda: gemm_launch(s), tiers, rep, timing=False, detect=False)
        sweep[s] = r
        line = f"  {s:>4}^3  {r['fast'][1]:>10} lane-instr  fast {r['fast'][0]:8.3f} s  " \
               f"{rate(r['fast'][1], r['fast'][0]):10.3g} lane/s  {rate(r['fast'][1], r['fast'][4]):10.3g} cpu/s"
        if "reference" in r:
            _check_same(r)
            line += f"   reference {r['reference'][0]:8.3f} s  {rate(r['reference'][1], r['reference'][0]):10.3g}" \
                    f" lane/s  {rate(r['reference'][1], r['reference'][4]):10.3g} cpu/s  (identical)"
        print(line)

    nb = None if args.no_numba else numba_sim(64)
    g_off = results[("gemm_tiled 64^3", False)]
    g_on = results[("gemm_tiled 64^3", True)]
    a_off = results[("alu_loop 128x1000", False)]
    a_on = results[("alu_loop 128x1000", True)]
    det = results[("gemm_tiled 64^3", "detect")]
    print()
    if nb is not None:
        print(f"numba CUDA simulator, gemm_tiled 64^3: {nb[0]:.3f} s wall, {nb[1]:.3f} s CPU "
              f"({rate(g_off['fast'][1], nb[0]):.3g} lane/s); fast tier {nb[0] / g_off['fast'][0]:.1f}x faster "
              f"({nb[1] / g_off['fast'][4]:.1f}x by CPU time), reference {nb[0] / g_off['reference'][0]:.1f}x "
              f"({nb[1] / g_off['reference'][4]:.1f}x)")
    else:
        print("numba CUDA simulator: not run (numba not installed or --no-numba)")

    print("\nagainst issue 18's targets (fast tier; measured in this run):")

    def tgt(label, value, goal, ok):
        print(f"  {label:<58} {value:<22} target {goal:<16} {'met' if ok else 'NOT met'}")
    gr = rate(g_off["fast"][1], g_off["fast"][0])
    ar = rate(a_off["fast"][1], a_off["fast"][0])
    grc = rate(g_off["fast"][1], g_off["fast"][4])
    arc = rate(a_off["fast"][1], a_off["fast"][4])
    tgt("gemm_tiled 64^3, timing off", f"{gr / 1e6:.2f}M ({grc / 1e6:.2f}M cpu)", ">= 50M lane/s", gr >= 50e6)
    tgt("alu_loop, timing off", f"{ar / 1e6:.2f}M ({arc / 1e6:.2f}M cpu)", ">= 20M lane/s", ar >= 20e6)
    x = g_on["fast"][0] / g_off["fast"][0]
    tgt("gemm_tiled 64^3, timing on / off", f"{x:.2f}x", "<= 1.5x", x <= 1.5)
    x = a_on["fast"][0] / a_off["fast"][0]
    tgt("alu_loop, timing on / off", f"{x:.2f}x", "<= 1.5x", x <= 1.5)
    x = det["fast"][0] / g_off["fast"][0]
    tgt("gemm_tiled 64^3, race detector on / off", f"{x:.2f}x", "<= 2x", x <= 2)
    if nb is not None:
        x = nb[0] / g_off["fast"][0]
        tgt("gemm_tiled 64^3 vs numba's CUDA simulator", f"{x:.1f}x faster", ">= 100x", x >= 100)
    if 256 in sweep:
        t256 = sweep[256]["fast"][0]
        tgt("gemm_tiled 256^3, timing off", f"{t256:.2f} s", "< 5 s", t256 < 5)
    if len(sweep) >= 2:
        rs = [rate(sweep[s]["fast"][1], sweep[s]["fast"][0]) for s in sizes]
        print(f"  rate across the sweep: {min(rs) / 1e6:.2f}M .. {max(rs) / 1e6:.2f}M lane/s "
              f"(linear growth: the rate stays flat or rises)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
