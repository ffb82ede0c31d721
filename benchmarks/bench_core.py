"""Simulation speed of the functional core on shared benchmark kernels.

    python benchmarks/bench_core.py [--shared ../shared/bench]
    python benchmarks/bench_core.py --against REV|DIR [--repeat 3]    # this tree vs commit REV's code, same run

Runs the nvcc-built ``gemm_tiled.sm_100a.ptx`` (64x64x64 fp32 GEMM, 16 CTAs of 256 threads) and
``alu_loop.sm_100a.ptx`` (128 threads x 1000 iterations), and the 64x64x64 TMA + ldmatrix + mma.sync GEMM
example; checks every result; prints wall time, PTX lane-instructions/s and warp-instructions/s, and the
ratio of each kernel's lane-instruction rate to the first one's (ratios are measured in this one run).

``--against REV`` measures this tree and the simulator of git commit ``REV`` (its ``sim/ isa/ hw/ examples/
benchmarks/`` extracted to a temporary folder, laid out as the package it installed as) in one run: each side's
bench in its own child process, the two alternating ``--repeat`` times; it prints each kernel's best wall time on
both sides and the speed ratio REV time / this tree's time (above 1: this tree is faster).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

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


def measure(shared: Path) -> list:
    """(name, ok, wall s, lane-instructions, warp-instructions) of every kernel, run here."""
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
    return rows


def print_table(rows: list) -> None:
    base = rows[0][3] / rows[0][2] if rows else 1.0
    print(f"{'kernel':58s} {'check':5s} {'wall s':>8s} {'lane-inst':>10s} {'lane-inst/s':>12s} "
          f"{'warp-inst/s':>12s} {'ratio':>6s}")
    for name, ok, wall, li, wi in rows:
        print(f"{name:58s} {'ok' if ok else 'FAIL':5s} {wall:8.3f} {li:10d} {li / wall:12,.0f} {wi / wall:12,.0f} "
              f"{(li / wall) / base:6.2f}")


def parse_table(text: str) -> dict:
    """kernel name -> (ok, wall s, lane-instructions) from the table :func:`print_table` prints (any version)."""
    rows = {}
    for line in text.splitlines():
        parts = line[58:].split()
        if len(line) > 58 and len(parts) >= 3 and parts[0] in ("ok", "FAIL"):
            rows[line[:58].strip()] = (parts[0] == "ok", float(parts[1]), int(parts[2]))
    return rows


FOLDERS = ("sim", "isa", "hw", "examples", "benchmarks")


def extract_tree(rev: str, dest: Path) -> tuple[Path, Path]:
    """Commit ``rev``'s simulator and benchmarks (or those of the folder ``rev``, a copy of such a tree) under
    ``dest``; returns (its bench_core.py, the folder to put on PYTHONPATH).  A tree that installs under ``tcsim``
    (pyproject's package-dir) is laid out as installed."""
    src = dest / "src"
    if Path(rev).is_dir():
        shutil.copytree(rev, src, ignore=shutil.ignore_patterns("__pycache__"))
        pyproject = (src / "pyproject.toml").read_text() if (src / "pyproject.toml").exists() else ""
    else:
        def git(*a, **kw):
            return subprocess.run(["git", *a], cwd=ROOT, check=True, capture_output=True, **kw).stdout
        listed = [f for f in FOLDERS if git("ls-tree", "--name-only", rev, f, text=True).strip()]
        src.mkdir(parents=True)
        subprocess.run(["tar", "-x", "-C", str(src)], input=git("archive", rev, *listed), check=True)
        pyproject = git("show", f"{rev}:pyproject.toml", text=True)
    if '"tcsim" = "sim"' not in pyproject:
        return src / "benchmarks" / "bench_core.py", src               # top-level sim/isa/hw/examples
    pkg = dest / "pkg" / "tcsim"
    pkg.parent.mkdir(parents=True)
    (src / "sim").rename(pkg)
    for sub in ("isa", "hw", "examples"):
        if (src / sub).exists():
            (src / sub).rename(pkg / sub)
    return src / "benchmarks" / "bench_core.py", pkg.parent


def against(rev: str, shared: Path, repeat: int) -> int:
    with tempfile.TemporaryDirectory(prefix="tcsim-bench-") as tmp:
        old_bench, old_path = extract_tree(rev, Path(tmp))
        sides = {rev: ([sys.executable, str(old_bench), "--shared", str(shared)], {"PYTHONPATH": os.pathsep.join(p for p in (str(old_path), os.environ.get("PYTHONPATH")) if p)}),
                 "this tree": ([sys.executable, str(Path(__file__).resolve()), "--shared", str(shared)], {})}
        best: dict = {side: {} for side in sides}
        for _ in range(max(1, repeat)):
            for side, (cmd, env) in sides.items():
                out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
                rows = parse_table(out.stdout)
                if out.returncode != 0 or not rows:
                    print(f"{side}: the bench failed (exit {out.returncode})\n{out.stdout}{out.stderr}")
                    return 1
                for name, (ok, wall, li) in rows.items():
                    prev = best[side].get(name)
                    best[side][name] = (ok and (prev is None or prev[0]), min(wall, prev[1]) if prev else wall, li)
    print(f"best of {max(1, repeat)} alternating runs each; ratio = {rev} wall / this tree's wall (above 1: faster now)")
    print(f"{'kernel':58s} {rev[:12]:>12s} {'this tree':>10s} {'ratio':>6s}")
    ok_all = True
    for name, (ok, wall, li) in best["this tree"].items():
        old = best[rev].get(name)
        if old is None:
            print(f"{name:58s} {'-':>12s} {wall:10.3f}")
            continue
        same = old[2] == li
        ok_all &= ok and old[0] and same
        print(f"{name:58s} {old[1]:12.3f} {wall:10.3f} {old[1] / wall:6.2f}"
              + ("" if same else f"  (lane-instructions differ: {old[2]} vs {li})"))
    return 0 if ok_all else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "bench"))
    ap.add_argument("--against", metavar="REV", help="also run the simulator of git commit REV (or of a folder holding "
                    "a copy of such a tree) and print the ratios")
    ap.add_argument("--repeat", type=int, default=3, help="with --against: alternating runs per side (best kept)")
    args = ap.parse_args(argv)
    shared = Path(args.shared).resolve()
    if args.against:
        return against(args.against, shared, args.repeat)
    rows = measure(shared)
    print_table(rows)
    return 0 if all(r[1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
