"""Run one microbenchmark case on the GPU or the simulator (:func:`calib.pipeline.execute`) and derive its record
entry: digests, the SASS ptxas makes of it, the measured values (:mod:`calib.microbench.analysis`)."""
from __future__ import annotations

import re

import numpy as np

from calib import pipeline as P
from calib.pipeline import sha256
from tcsim.isa import ptxas

from . import analysis as A
from . import cases as C


def ptx_sha(case) -> str:
    return sha256(case.ptx().encode())


def input_digests(case, launch) -> dict:
    skip = {0} if case.kind == "calibration" else {C.clk_index(case, launch)}
    return {str(i): sha256(a) for i, a in enumerate(launch.args) if isinstance(a, np.ndarray) and i not in skip}


# ------------------------------------------------------------------------------------------------ SASS
def sass_listing(ptx: str) -> str | None:
    """``cuobjdump -sass`` of what ptxas makes of ``ptx`` for sm_90a; None without ptxas/cuobjdump, "" when
    ptxas refuses it."""
    r = ptxas.sass(ptx, "sm_90a")
    if r is None:
        return None
    return r[1] if r[0] else ""


def count_sass(listing: str) -> dict:
    """{mnemonic with modifiers: count} of a SASS listing."""
    counts: dict = {}
    for line in listing.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def timed_regions(listing: str) -> list:
    """Instructions between the two clock reads of each timed region, in listing order (a region that ptxas
    emptied -- e.g. a loop-invariant chain hoisted out of the rep loop -- shows up as a short one)."""
    ins = [ln for ln in listing.splitlines() if re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+\S", ln)]
    at = [i for i, ln in enumerate(ins) if "SR_CLOCKLO" in ln]
    return [at[k + 1] - at[k] - 1 for k in range(0, len(at) - 1, 2)]


def sass_summary(ptx: str) -> dict:
    """{'sass': opcode counts, 'sass_timed': timed-region sizes}, both None without ptxas/cuobjdump."""
    listing = sass_listing(ptx)
    if listing is None:
        return {"sass": None, "sass_timed": None}
    if not listing:
        return {"sass": {"__ptxas_error__": 1}, "sass_timed": None}
    return {"sass": count_sass(listing), "sass_timed": timed_regions(listing)}


# ------------------------------------------------------------------------------------------------ running
def run_case(case, backend: str, val_runs: int, timing: bool = False) -> tuple:
    """(meta entry, {npz key: array}) for one case.  ``timing``: on the simulator, use the cycle-approximate
    model of sim/timing instead of one cycle per instruction."""
    launch = case.build()
    entry = {"name": case.name, "group": case.group, "kind": case.kind, "params": case.params, "note": case.note,
             "ptx_sha256": sha256(launch.ptx_text()[0].encode()), "inputs_sha256": input_digests(case, launch)}
    runs = 1 if case.kind == "calibration" else val_runs
    results = []
    for _ in range(runs):
        res = P.execute(launch, backend, timeout=60, seed=None if timing else 0, timing=timing)
        if not res.ok:
            if backend == "sim" and res.error.startswith("sim"):     # the harness, not a measurement, broke
                raise RuntimeError(res.detail)
            entry.update(status=res.error, detail=res.detail)
            return entry, {}
        results.append((res.outputs, res.elapsed_ms))
    entry["status"] = "ok"
    if backend == "gpu":
        entry.update(sass_summary(launch.ptx_text()[0]))
    arrays = {}
    if case.kind == "calibration":
        out = np.asarray(results[0][0][0], dtype=np.uint64).reshape(launch.args[0].shape)
        arrays[case.name] = out
        entry["shape"] = list(out.shape)
        entry.update(A.derive(case, out, entry.get("sass")))
    else:
        k = C.clk_index(case, launch)
        clks, checks = [], []
        for r, (outs, _) in enumerate(results):
            clk = np.asarray(outs[k], dtype=np.uint64).reshape(-1, 2)
            per = clk.reshape(launch.grid[0], -1, 2)
            rel = (per.astype(np.int64) - per[:, :, 0].min(axis=1).astype(np.int64)[:, None, None]).reshape(-1, 2)
            arrays[f"{case.name}:run{r}"] = rel
            clks.append(clk)
            checks.append(C.check_validation(case, launch, outs))
        entry["elapsed_ms"] = [e for _, e in results]
        entry["correct"] = [bool(ok) for ok, _ in checks]
        entry["check"] = checks[0][1]
        entry.update(A.validation_summary(launch, clks))
    return entry, arrays
