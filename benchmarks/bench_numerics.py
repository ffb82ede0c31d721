"""Compiled exact numerics (tcsim.numerics.jit) against the numpy references, in one run.

    python benchmarks/bench_numerics.py [--repeat 3] [--k 4096] [--no-cold]

Prints, each measured in a fresh child process with the compiled kernels on and with ``TCSIM_NUMBA=0`` (the
numpy references), alternating, best of ``--repeat``:

* the nvfp4 example at 128 x 256, K = 4096 (64 tcgen05.mma.kind::mxf4nvf4), the gemm_async example (12
  kind::f16 MMAs) and the cta_pair_gemm example: wall time of ``run_launch`` (the example's check must pass),
  and the part of it spent in the tensor-core numerics (``mma_block_scaled`` / ``mma_float``, cProfile-free:
  timed around the calls);
* per call: exact ``fp.ffma`` on one warp (32 lanes: f32 .rn and .rz, f16 .rn, f64 .rn), ``mma_block_scaled`` at the nvfp4
  MMA's shape (128x256x64) and ``mma_float`` at the gemm_async MMA's shape (128x128x16);
* the cold start of the compiled kernels (unless ``--no-cold``): importing numba plus compiling every kernel
  into an empty cache (``NUMBA_CACHE_DIR`` a fresh temporary folder), then the same in a new process loading
  that cache -- what the first test process on a fresh CI machine and every later one pay.

Ratios are reference time / compiled time, measured in this one run (wall time; the process CPU time of the
example runs is printed beside it, less sensitive to other load on the machine).  Not part of the test suite.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------------ child side
def _examples(k: int) -> list:
    from tcsim.examples import cta_pair_gemm, gemm_async, nvfp4_gemm
    return [(f"nvfp4_gemm 128x256 K={k}", nvfp4_gemm, nvfp4_gemm.make_launch(seed=0, k=k, stages=4)),
            ("gemm_async 128x128 K=192", gemm_async, gemm_async.make_launch()),
            ("cta_pair_gemm", cta_pair_gemm, cta_pair_gemm.make_launch())]


def _timed_numerics():
    """Wrap the tensor-core entry points the semantics call so their time is summed (no profiler overhead)."""
    from tcsim.numerics import tensor_core
    from tcsim.semantics import tcgen05_mma, warp_mma, wgmma

    spent = [0.0]
    orig = {name: getattr(tensor_core, name) for name in ("mma_block_scaled", "mma_float")}

    def wrap(fn):
        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[0] += time.perf_counter() - t
        return timed
    for mod in (tcgen05_mma, warp_mma, wgmma):          # the semantics' names only (not the examples' oracles)
        for name, fn in orig.items():
            if hasattr(mod, name):
                setattr(mod, name, wrap(fn))
    return spent


def child_examples(k: int) -> dict:
    from tcsim.launch import run_launch

    spent = _timed_numerics()
    out = {}
    cases = _examples(k)
    run_launch(cases[1][2])                      # warm-up: imports, and the kernels' first (cache-loading) call
    for name, mod, launch in cases:
        spent[0] = 0.0
        t, c = time.perf_counter(), time.process_time()
        res = run_launch(launch)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        numerics = spent[0]
        ok, msg = mod.check(res, launch)
        out[name] = {"wall": wall, "cpu": cpu, "numerics": numerics, "ok": bool(ok), "msg": msg}
    return out


def _per_call(fn, min_time=0.5) -> float:
    fn()
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - t0
        if el > min_time:
            return el / n


def child_calls() -> dict:
    import numpy as np

    from tcsim.numerics import fp
    from tcsim.numerics import tensor_core as tc

    rng = np.random.default_rng(0)
    v = rng.standard_normal((3, 32))
    a32, b32, c32 = (x.astype(np.float32).view(np.uint32) for x in v)
    a16, b16, c16 = (x.astype(np.float16).view(np.uint16) for x in v)
    a64, b64, c64 = (x.view(np.uint64) for x in v)
    p4 = tc.tc_params("sm_100a", "tcgen05", "e2m1", kind="mxf4nvf4")
    a = rng.integers(0, 16, (128, 64)).astype(np.uint8)
    b = rng.integers(0, 16, (64, 256)).astype(np.uint8)
    sfa = rng.integers(0x28, 0x48, (128, 4)).astype(np.uint8)
    sfb = rng.integers(0x28, 0x48, (4, 256)).astype(np.uint8)
    c = np.zeros((128, 256), np.uint32)
    pf = tc.tc_params("sm_100a", "tcgen05", "f16")
    fa = rng.standard_normal((128, 16)).astype(np.float16).view(np.uint16)
    fb = rng.standard_normal((16, 128)).astype(np.float16).view(np.uint16)
    fc = np.zeros((128, 128), np.uint32)
    return {
        "ffma f32 .rn, 32 lanes": _per_call(lambda: fp.ffma("f32", a32, b32, c32, "rn")),
        "ffma f16 .rn, 32 lanes": _per_call(lambda: fp.ffma("f16", a16, b16, c16, "rn")),
        "ffma f64 .rn, 32 lanes": _per_call(lambda: fp.ffma("f64", a64, b64, c64, "rn")),
        "ffma f32 .rz, 32 lanes": _per_call(lambda: fp.ffma("f32", a32, b32, c32, "rz")),
        "mma_block_scaled mxf4nvf4 128x256x64": _per_call(
            lambda: tc.mma_block_scaled(a, b, c, sfa, sfb, "e2m1", "e2m1", "ue4m3", 16, p4)),
        "mma_float f16->f32 128x128x16": _per_call(lambda: tc.mma_float(fa, fb, fc, "f16", "f16", "f32", pf)),
    }


def child_cold() -> dict:
    """Import numba, then the first call of every kernel (compiling, or loading the cache)."""
    import numpy as np

    t0 = time.perf_counter()
    importlib.import_module("numba")
    t1 = time.perf_counter()
    from tcsim.numerics import fp
    from tcsim.numerics import tensor_core as tc
    from tcsim.numerics import jit
    assert jit.enabled()
    u32 = np.zeros(32, np.uint32)
    fp.ffma("f32", u32, u32, u32)
    p4 = tc.tc_params("sm_100a", "tcgen05", "e2m1", kind="mxf4nvf4")
    tc.mma_block_scaled(np.zeros((128, 64), np.uint8), np.zeros((64, 8), np.uint8), np.zeros((128, 8), np.uint32),
                        np.full((128, 4), 0x38, np.uint8), np.full((4, 8), 0x38, np.uint8), "e2m1", "e2m1", "ue4m3",
                        16, p4)
    pf = tc.tc_params("sm_100a", "tcgen05", "f16")
    tc.mma_float(np.zeros((64, 16), np.uint16), np.zeros((16, 8), np.uint16), np.zeros((64, 8), np.uint32),
                 "f16", "f16", "f32", pf)
    return {"import numba": t1 - t0, "first calls": time.perf_counter() - t1}


# ------------------------------------------------------------------------------------------------ parent side
def _child(what: str, compiled: bool, extra_env=None, k: int = 4096) -> dict:
    env = dict(os.environ, TCSIM_NUMBA="1" if compiled else "0", PYTHONPATH=str(ROOT) + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    env.update(extra_env or {})
    r = subprocess.run([sys.executable, __file__, "--child", what, "--k", str(k)], env=env, capture_output=True,
                       text=True, check=False)
    if r.returncode:
        raise SystemExit(f"child {what} (compiled={compiled}) failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _best(rows: list) -> dict:
    out = {}
    for row in rows:
        for key, v in row.items():
            if isinstance(v, dict):
                cur = out.setdefault(key, dict(v))
                if v["wall"] < cur["wall"]:
                    out[key] = dict(v)
            else:
                out[key] = min(out.get(key, v), v)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("--child", choices=["examples", "calls", "cold"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        fn = {"examples": lambda: child_examples(args.k), "calls": child_calls, "cold": child_cold}[args.child]
        print(json.dumps(fn()))
        return 0

    from tcsim.numerics import jit
    if not jit.enabled():
        print("numba is not installed (or TCSIM_NUMBA=0): nothing compiled to compare")
        return 1
    runs = {True: [], False: []}
    calls = {True: [], False: []}
    for _ in range(max(1, args.repeat)):
        for compiled in (True, False):
            runs[compiled].append(_child("examples", compiled, k=args.k))
            calls[compiled].append(_child("calls", compiled))
    ex = {c: _best(runs[c]) for c in runs}
    cl = {c: _best(calls[c]) for c in calls}
    ok = True
    print(f"{'example (run_launch, best of ' + str(args.repeat) + ')':36s} {'reference s':>11s} "
          f"{'compiled s':>10s} {'ratio':>6s} {'(CPU s: ref':>11s} {'jit)':>6s}   {'numerics ref s':>14s} "
          f"{'numerics jit s':>14s}  check")
    for name in ex[True]:
        r, c = ex[False][name], ex[True][name]
        ok &= r["ok"] and c["ok"]
        print(f"{name:36s} {r['wall']:11.3f} {c['wall']:10.3f} {r['wall'] / c['wall']:6.2f} {r['cpu']:11.3f} "
              f"{c['cpu']:6.3f}   {r['numerics']:14.3f} {c['numerics']:14.4f}  {'ok' if r['ok'] and c['ok'] else 'FAIL'}")
    print(f"{'per call':44s} {'reference us':>11s} {'compiled us':>10s} {'ratio':>6s}")
    for name in cl[True]:
        r, c = cl[False][name], cl[True][name]
        print(f"{name:44s} {1e6 * r:11.1f} {1e6 * c:10.1f} {r / c:6.1f}")
    if not args.no_cold:
        with tempfile.TemporaryDirectory() as d:
            cold = _child("cold", True, {"NUMBA_CACHE_DIR": d})
            warm = _child("cold", True, {"NUMBA_CACHE_DIR": d})
        print(f"cold start: import numba {cold['import numba']:.2f} s; first call of every kernel: compiling "
              f"{cold['first calls']:.2f} s (empty cache), loading the cache {warm['first calls']:.2f} s "
              f"(import numba {warm['import numba']:.2f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
