"""Record what MUFU.SIN / MUFU.COS return for every fraction of a revolution they can see (issue 16 item 5).

    python3 calib/approx/trig_record.py --out DIR        # Hopper GPU, nvcc, CuPy, tcsim importable

``sin.approx.f32`` / ``cos.approx.f32`` are ``FMUL.RZ x, f32(1/(2 pi))`` then MUFU.SIN / MUFU.COS, and the result
depends on x only through t = trunc(|y| * 2**25) mod 2**25, y = |x| *rz f32(1/(2 pi)), and the sign of x
(tcsim.numerics.approx._revolutions; calib/approx/README.md).  This script runs every non-negative f32 input
(2**31 of them) on the GPU, for sin and cos, maps each to its t with tcsim's own reduction (evaluated with CuPy),
and builds the table T[t] of the GPU's results; then it checks, over every input again:

* the table explains every non-negative finite input (T[t(x)] == GPU(x): the reduction is exactly right);
* negative inputs: sin(-x) is sin(x) with the sign bit flipped, cos(-x) == cos(x), bit for bit;
* the .ftz forms equal the plain ones on all 2**32 inputs;
* Inf / NaN give the canonical NaN.

Written to ``DIR/trig_tables.npz``: per function the table as a residual against tcsim's float64 model of
MUFU (``sin/cos(2 pi t / 2**25)`` rounded once to f32, computed on the host with numpy, exactly as
tcsim.numerics.approx computes it), int8 with escapes, zlib-compressed, plus the mask of the t that some input
reaches (packed bits, zlib) and the check counts; ``DIR/trig_log.txt`` the log.
``python3 calib/approx/trig_record.py --install DIR/trig_tables.npz`` (anywhere) checks the record and fits the
compact model tcsim ships as ``sim/numerics/data/trig_sm90.npz`` (``calib/approx/trig_model.py``: a quarter-sine
model per 1024-row plus exceptions, checked equal to the record at every reachable t).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from calib.approx import kernels  # noqa: E402

T_BITS = 25
CHUNK = 1 << 27


def model_table(fn: str) -> np.ndarray:
    """tcsim's float64 model of MUFU over every t (numpy, as tcsim.numerics.approx._trig evaluates it): f32 bit
    patterns as int64, zeros with the quadrant signs."""
    from tcsim.numerics import approx as ap
    t = np.arange(1 << T_BITS, dtype=np.float64)
    r = ap._enc32(getattr(np, fn)(t * (2.0 * np.pi / 2.0 ** 25)), np)
    u = t if fn == "sin" else np.fmod(t + 2.0 ** 23, 2.0 ** 25)
    return np.where(u == 0, 0, np.where(u == 2 ** 24, 1 << 31, r)).astype(np.int64)


def pack_residual(table: np.ndarray, model: np.ndarray, seen: np.ndarray) -> dict:
    d = np.where(seen, table.astype(np.int64) - model, 0)
    esc = np.nonzero((d < -127) | (d > 127))[0]
    small = np.clip(d, -128, 127).astype(np.int8)
    small[esc] = -128
    return {"resid": np.frombuffer(zlib.compress(small.tobytes(), 9), np.uint8),
            "esc_pos": esc.astype(np.int64), "esc_val": d[esc].astype(np.int64)}


def unpack_residual(z, fn: str) -> np.ndarray:
    """int64 residuals over every t from a record's (or the package's) fields."""
    raw = z[f"{fn}_resid"].tobytes()
    try:
        raw = zlib.decompress(raw)
    except zlib.error:
        import lzma
        raw = lzma.decompress(raw)
    d = np.frombuffer(raw, np.int8).astype(np.int64)
    d[z[f"{fn}_esc_pos"]] = z[f"{fn}_esc_val"]
    return d


def install(record_path: str) -> int:
    """Check a GPU record (every check clean) and write the package data (calib/approx/trig_model.py)."""
    z = np.load(record_path)
    meta = json.loads(str(z["meta"]))
    for fn, c in meta["checks"].items():
        bad = {k: c[k] for k in ("table_misses_nonneg", "table_misses_neg", "ftz_differs", "special_not_nan") if c[k]}
        if bad:
            print(f"{fn}: the record's checks failed: {bad}; not installed")
            return 1
    # (the fitter runs as its own program: it imports this module's table helpers)
    return subprocess.call([sys.executable, str(Path(__file__).with_name("trig_model.py")), "--record", record_path])


def main(argv=None) -> int:
    ap_ = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap_.add_argument("--out")
    ap_.add_argument("--install", metavar="TRIG_TABLES_NPZ", help="write the package data from a GPU record")
    ap_.add_argument("--dry-run", type=int, default=0, metavar="N",
                     help="no GPU: numpy and tcsim's own model over inputs [0, N) and [2**31, 2**31 + N)")
    args = ap_.parse_args(argv)
    if args.install:
        return install(args.install)
    if not args.out:
        ap_.error("--out or --install is required")
    os.makedirs(args.out, exist_ok=True)
    if args.dry_run:
        from tcsim.numerics import approx as ap

        def run(fn, base, count):
            b = np.arange(base, base + count, dtype=np.int64).astype(np.uint32)
            return getattr(ap, fn.replace("_ftz", "") + "_approx")(b)
        return record(np, run, args.out, "dry run (numpy, tcsim's model)", args.dry_run)
    import cupy as cp
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    mod = kernels.build("/tmp/tcsim_trig")
    return record(cp, lambda fn, base, count: kernels.run_f32(mod, fn, base, count), args.out, dev, 1 << 31)


def record(cp, run_f32, outdir, dev, limit) -> int:
    """The recording (module docstring) with array module ``cp`` and ``run_f32(form, first_bits, count)``."""
    from tcsim.numerics import approx as ap
    chunk = min(CHUNK, limit)

    class args:
        out = outdir
    log = open(os.path.join(args.out, "trig_log.txt"), "a")
    t0 = time.time()

    def say(*a):
        s = " ".join(str(v) for v in a)
        print(s, flush=True)
        log.write(s + "\n")
        log.flush()

    say("device", dev, "command: python3 calib/approx/trig_record.py --out", args.out)
    res = {"device": dev, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "checks": {}}
    out = {}
    for fn in ("sin", "cos"):
        table = cp.zeros(1 << T_BITS, cp.int64)
        seen = cp.zeros(1 << T_BITS, cp.bool_)
        for base in range(0, limit, chunk):                   # non-negative inputs
            r = cp.asarray(run_f32(fn, base, chunk)).astype(cp.int64)
            b = cp.arange(base, base + chunk, dtype=cp.int64).astype(cp.uint32)
            _, a, t, _ = ap._revolutions(b, cp)
            fin = a < 0x7F800000
            ti = t.astype(cp.int64)[fin]
            table[ti] = r[fin]
            seen[ti] = True
        bad_pos = bad_neg = bad_ftz = bad_special = 0
        first = []
        for base in [b0 + k for b0 in (0, 1 << 31) for k in range(0, limit, chunk)]:
            r = cp.asarray(run_f32(fn, base, chunk)).astype(cp.int64)
            rf = cp.asarray(run_f32(fn + "_ftz", base, chunk)).astype(cp.int64)
            bad_ftz += int((r != rf).sum())
            b = cp.arange(base, base + chunk, dtype=cp.int64).astype(cp.uint32)
            s, a, t, _ = ap._revolutions(b, cp)
            fin = a < 0x7F800000
            want = table[t.astype(cp.int64)]
            if fn == "sin":
                want = want ^ (s << 31)
            miss = fin & (want != r)
            n = int(miss.sum())
            if base < (1 << 31):
                bad_pos += n
            else:
                bad_neg += n
            if n and len(first) < 8:
                idx = cp.nonzero(miss)[0][:8 - len(first)]
                first += [(int(b[i]), int(r[i]), int(want[i])) for i in (idx.get() if hasattr(idx, "get") else idx)]
            bad_special += int((~fin & (r != 0x7FFFFFFF)).sum())
        T = table.get() if hasattr(table, "get") else table
        S = seen.get() if hasattr(seen, "get") else seen
        M = model_table(fn)
        packed = pack_residual(T, M, S)
        d = np.where(S, T - M, 0)
        res["checks"][fn] = {"reachable_t": int(S.sum()), "table_misses_nonneg": bad_pos,
                             "table_misses_neg": bad_neg, "ftz_differs": bad_ftz, "special_not_nan": bad_special,
                             "first_misses": first, "model_exact": int(((d == 0) & S).sum()),
                             "resid_hist": {str(k): int(v) for k, v in zip(*np.unique(d[S], return_counts=True))
                                            if abs(k) <= 8},
                             "resid_abs_max": int(np.abs(d).max()), "resid_bytes": int(packed["resid"].size)}
        say(fn, json.dumps(res["checks"][fn]))
        for k, v in packed.items():
            out[f"{fn}_{k}"] = v
        out[f"{fn}_seen"] = np.frombuffer(zlib.compress(np.packbits(S).tobytes(), 9), np.uint8)
    # symmetry checks the package tables may use (reported, not assumed)
    out["meta"] = np.array(json.dumps(res))
    np.savez(os.path.join(args.out, "trig_tables.npz"), **out)
    say(f"wrote trig_tables.npz ({os.path.getsize(os.path.join(args.out, 'trig_tables.npz'))} bytes) in "
        f"{time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
