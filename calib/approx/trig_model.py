"""Fit the compact model of MUFU.SIN / MUFU.COS (sin/cos.approx.f32) to an H100 record (issue 16 item 5).

    python3 calib/approx/trig_model.py --record DIR/trig_tables.npz [--out sim/numerics/data/trig_sm90.npz]

The record is what ``calib/approx/trig_record.py --out DIR`` writes on a GPU: the H100's result for every fraction t
of a revolution that an f32 input reaches (23,326,001 of the 2**25, for sin and for cos), checked there against all
2**32 inputs.  What the record shows (checked again here, bit for bit, over every reachable t):

* one function of the first quarter turn, S(u) for u in [0, 2**23), gives everything: t = q 2**23 + u returns
  S(u), S(2**23 - 1 - u), -S(u), -S(2**23 - 1 - u) for q = 0, 1, 2, 3 (the second quadrant evaluates the one's
  complement of the fraction, not 2**23 - u), and MUFU.COS(t) = MUFU.SIN(t + 2**23).  Together the reachable t of
  sin and cos cover every u, so S is known everywhere;
* S is a piecewise smooth function of u with rows of 1024 fractions (the model error of a quadratic per row drops
  sharply at that width and not at 512 or 2048), and within a row the result carries small offsets that are linear in
  the low 10 bits of u (truncated partial products, presumably): c0 + c1 x + c2 x**2 + sum_k w_k bit_k(x), x = u &
  1023, rounded once to f32, reproduces 99.6% of all u; for u < 655 it is exactly u * 6.283447265625 * 2**-25
  (the linear term alone, 2 pi rounded to 12 fraction bits).

The fit: least squares per row (weighted by the result's ulp), then alternating projections (targets clipped to
+-0.4 ulp of the GPU's value, refit) to make the rounded model agree on as many u as possible; the bit weights are
then quantised (an integer times a power of two per row) and the u where the rounded model still differs are kept as
exceptions (the GPU's bits minus the rounded model's, mostly +-1).  The package data is checked before it is
written: the simulator's own evaluation (tcsim.numerics.approx.quarter_sine_model, the same code) with these tables
equals the record at every reachable t of sin and cos.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from calib.approx.trig_record import model_table, unpack_residual  # noqa: E402

Q = 1 << 23
N = 1 << 25
ROW = 1024
NBITS = 10
BIT_FRAC = 12        # bit weights are quantised to 2**-12 of the row's largest result ulp
PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim", "numerics", "data",
                       "trig_sm90.npz")
HEADER = ("GENERATED FILE - do not edit.  MUFU.SIN / MUFU.COS of an NVIDIA H100 (sm_90): the quarter-sine model "
          "(per 1024-row quadratic + low-bit weights) and its exceptions; regenerate with python3 "
          "calib/approx/trig_model.py --record DIR/trig_tables.npz (DIR from calib/approx/trig_record.py on a GPU; "
          "calib/approx/README.md).")


def load_record(path):
    """(sin table, cos table, reachable mask) over every t, f32 bits as int64 (from trig_record.py's record)."""
    z = np.load(path)
    tabs = {}
    for fn in ("sin", "cos"):
        tabs[fn] = model_table(fn) + unpack_residual(z, fn)
    seen_s = np.unpackbits(np.frombuffer(zlib.decompress(z["sin_seen"].tobytes()), np.uint8)).astype(bool)
    seen_c = np.unpackbits(np.frombuffer(zlib.decompress(z["cos_seen"].tobytes()), np.uint8)).astype(bool)
    return tabs["sin"], tabs["cos"], seen_s[:N], seen_c[:N], json.loads(str(z["meta"]))


def quarter_sine(ts, tc, seen_s, seen_c):
    """S(u) over [0, 2**23) from every reachable t of sin and cos, checking that all of them agree."""
    S = np.full(Q, -1, np.int64)
    conflicts = 0
    t = np.arange(N, dtype=np.int64)
    for tab, seen, shift in ((ts, seen_s, 0), (tc, seen_c, Q)):
        tt = (t[seen] + shift) % N                    # MUFU.SIN argument
        val = tab[seen]
        q, u = tt >> 23, tt & (Q - 1)
        v = np.where(q & 1, Q - 1 - u, u)
        val = val ^ ((q >> 1) << 31)
        have = S[v] >= 0
        conflicts += int((S[v][have] != val[have]).sum())
        S[v] = val
    missing = int((S < 0).sum())
    return S, conflicts, missing


def _features():
    x = np.arange(ROW, dtype=np.float64)
    return np.concatenate([np.stack([np.ones(ROW), x, x * x], 1),
                           ((np.arange(ROW)[:, None] >> np.arange(NBITS)) & 1).astype(np.float64)], 1)


def _f32(bits):
    return (bits & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(np.float64)


def fit(S, iterations=40, clip=0.4, say=print):
    """Per-row coefficients (R, 3 + NBITS) of the model, fitted to the f32 values S."""
    R = Q // ROW
    F = _features()
    g = _f32(S).reshape(R, ROW)
    # (S(0) = 0: its "ulp" is floored so that the first row's weights stay finite)
    ulp = np.exp2(np.floor(np.log2(np.maximum(g, 2.0 ** -40))) - 23)
    uniform = (ulp == ulp[:, :1]).all(1)
    pinv = np.linalg.pinv(F)
    C = np.zeros((R, F.shape[1]))
    C[uniform] = (pinv @ g[uniform].T).T
    rows_w = np.nonzero(~uniform)[0]

    def solve_weighted(i, target):
        w = 1.0 / ulp[i]
        return np.linalg.lstsq(F * w[:, None], target * w, rcond=None)[0]

    for i in rows_w:
        C[i] = solve_weighted(i, g[i])
    for it in range(iterations):
        P = C @ F.T
        tgt = np.clip(P, g - clip * ulp, g + clip * ulp)
        C[uniform] = (pinv @ tgt[uniform].T).T
        for i in rows_w:
            C[i] = solve_weighted(i, tgt[i])
        if it % 10 == 9:
            bad = int((P.astype(np.float32).astype(np.float64) != g).sum())
            say(f"  fit iteration {it + 1}: {bad} u differ before rounding checks")
    return C, ulp


def quantise(C, ulp):
    """coef (R, 3) float64, bitq (R, NBITS) int32, bexp (R,) int8: w = bitq * 2**bexp."""
    bexp = (np.log2(ulp[:, -1]) - BIT_FRAC).astype(np.int64)
    q = np.round(C[:, 3:] / np.exp2(bexp)[:, None])
    assert np.abs(q).max() < 2 ** 31, np.abs(q).max()
    return C[:, :3].copy(), q.astype(np.int32), bexp.astype(np.int8)


def main(argv=None) -> int:
    ap_ = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap_.add_argument("--record", required=True, help="trig_tables.npz of calib/approx/trig_record.py")
    ap_.add_argument("--out", default=PACKAGE)
    ap_.add_argument("--iterations", type=int, default=40)
    args = ap_.parse_args(argv)
    from tcsim.numerics import approx as ap
    t0 = time.time()
    ts, tc, seen_s, seen_c, meta = load_record(args.record)
    print(f"record: {meta.get('device')} {meta.get('date')}; reachable t: sin {seen_s.sum()}, cos {seen_c.sum()}")
    S, conflicts, missing = quarter_sine(ts, tc, seen_s, seen_c)
    print(f"quarter sine: {conflicts} conflicts between the quadrant/cos symmetries, {missing} u not reached")
    if conflicts or missing:
        return 1
    C, ulp = fit(S, args.iterations)
    coef, bitq, bexp = quantise(C, ulp)
    model = {"coef": coef, "bits": bitq.astype(np.float64) * np.exp2(bexp.astype(np.float64))[:, None],
             "exc_u": np.zeros(0, np.int64), "exc_delta": np.zeros(0, np.int64)}
    u = np.arange(Q, dtype=np.int64)
    pred = ap.quarter_sine_model(u, np, model, exceptions=False)
    exc = np.nonzero(pred != S)[0]
    print(f"model alone: {Q - exc.size} of {Q} u exact ({100 * (1 - exc.size / Q):.3f}%), {exc.size} exceptions")
    exc_du = np.diff(np.concatenate([[0], exc])).astype(np.uint32)
    exc_delta = S[exc] - pred[exc]              # the GPU's bits minus the rounded model's (mostly +-1)
    out = {"__header__": np.array(HEADER), "coef": coef, "bitq": bitq, "bexp": bexp,
           "exc_du": exc_du, "exc_delta": exc_delta.astype(np.int32),
           "meta": np.array(json.dumps({"record": meta.get("device"), "record_date": meta.get("date"),
                                        "row": ROW, "bits": NBITS, "exceptions": int(exc.size)}))}
    model["exc_u"], model["exc_delta"] = exc.astype(np.int64), exc_delta.astype(np.int64)
    # the check: the simulator's evaluation with these tables equals the record at every reachable t
    for fn, tab, seen in (("sin", ts, seen_s), ("cos", tc, seen_c)):
        t = np.nonzero(seen)[0].astype(np.int64)
        arg = t if fn == "sin" else (t + Q) % N
        got = ap._mufu_sin_t(arg, np, model)
        bad = int((got != tab[t]).sum())
        print(f"{fn}: the model with its exceptions differs from the record at {bad} of {t.size} reachable t")
        if bad:
            return 1
    np.savez_compressed(args.out, **out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
