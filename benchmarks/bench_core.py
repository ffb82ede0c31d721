"""Simulation speed of the functional core on shared benchmark kernels.

    python benchmarks/bench_core.py [--shared ../shared/bench] [--repeat 1]

Runs the nvcc-built ``gemm_tiled.sm_100a.ptx`` (64x64x64 fp32 GEMM, 16 CTAs of 256 threads) and
``alu_loop.sm_100a.ptx`` (128 threads x 1000 iterations), and the 64x64x64 TMA + ldmatrix + mma.sync GEMM
example; checks every result; prints wall time, PTX lane-instructions/s and warp-instructions/s, and the
ratio of each kernel's lane-instruction rate to the first one's (ratios are measured in this one run).
"""
from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcsim.launch import Launch, run_launch  # noqa: E402


def bench_gemm_tiled(shared: Path):
    rng = np.random.default_rng(1)
    M = N = K = 64
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.zeros((M, N), dtype=np.float32)
    launch = Launch(ptx=shared / "gemm_tiled.sm_100a.ptx", kernel="gemm_tiled", grid=(4, 4, 1),
                    block=(16, 16, 1), args=[a, b, c, M, N, K])
    res = run_launch(launch)
    # reference: the kernel's own order of operations (fma chain over k, fp32)
    ref = np.zeros((M, N), dtype=np.float32)
    for k in range(K):
        ref = (ref.astype(np.float64) + a[:, k:k + 1].astype(np.float64) * b[k:k + 1, :].astype(np.float64)
               ).astype(np.float32)
    ok = np.allclose(res.outputs[2], a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    return res, ok


def _fma(a: float, b: float, c: float) -> float:
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def bench_alu_loop(shared: Path):
    n, iters = 128, 1000
    mul, add, fmul, fadd = 1103515245, 12345, 0.999, 0.5
    oa = np.zeros(n, np.int64)
    ob = np.zeros(n, np.int64)
    ox = np.zeros(n, np.float64)
    launch = Launch(ptx=shared / "alu_loop.sm_100a.ptx", kernel="alu_loop", grid=(1, 1, 1), block=(n, 1, 1),
                    args=[oa, ob, ox, iters, mul, add, fmul, fadd])
    res = run_launch(launch)
    ok = True
    for tid in range(0, n, 17):   # exact reference on a sample of threads
        a, b, x = tid + 1, tid, tid * 0.001
        for _ in range(iters):
            a = (a * mul + add) & 0x7FFFFFFF
            x = _fma(x, fmul, fadd)
            b ^= a >> 7
        ok &= res.outputs[0][tid] == a and res.outputs[1][tid] == b and res.outputs[2][tid] == x
    return res, bool(ok)


def bench_tma_gemm():
    from tcsim.examples import tma_mma_gemm as ex
    launch = ex.make_launch()
    res = run_launch(launch)
    ok, _ = ex.check(res, launch)
    return res, ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "bench"))
    args = ap.parse_args(argv)
    shared = Path(args.shared)
    cases = [("gemm_tiled (nvcc, 64^3 fp32, 16 CTAs x 256 thr)", lambda: bench_gemm_tiled(shared)),
             ("alu_loop (nvcc, 128 thr x 1000 iters)", lambda: bench_alu_loop(shared)),
             ("tma_mma_gemm example (64^3, TMA + ldmatrix + mma.sync)", bench_tma_gemm)]
    rows = []
    for name, fn in cases:
        t0 = time.perf_counter()
        try:
            res, ok = fn()
        except (FileNotFoundError, ModuleNotFoundError) as e:
            print(f"{name}: skipped ({e})")
            continue
        wall = time.perf_counter() - t0
        s = res.stats
        rows.append((name, ok, wall, s["lane_instructions"], s["warp_instructions"]))
    base = rows[0][3] / rows[0][2] if rows else 1.0
    print(f"{'kernel':58s} {'check':5s} {'wall s':>8s} {'lane-inst':>10s} {'lane-inst/s':>12s} "
          f"{'warp-inst/s':>12s} {'ratio':>6s}")
    for name, ok, wall, li, wi in rows:
        print(f"{name:58s} {'ok' if ok else 'FAIL':5s} {wall:8.3f} {li:10d} {li / wall:12,.0f} {wi / wall:12,.0f} "
              f"{(li / wall) / base:6.2f}")
    return 0 if all(r[1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
