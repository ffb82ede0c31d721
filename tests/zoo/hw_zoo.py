"""Run the zoo's sm_90a kernels (correct and buggy twins) on a real Hopper GPU and record what the GPU did.

    source calib/device_setup.sh && python3 tests/zoo/hw_zoo.py OUTDIR [--timeout 15] [--jobs 4]

on a GPU machine (numpy, simpy, ml_dtypes and cuda-python importable).  Each launch runs in its own child process
(:func:`tcsim.hw.launcher.run_on_gpu`), so a trap or a hang costs only that launch.  Writes ``OUTDIR/zoo_h100.json``:
per pair and twin, the SHA-256 of the PTX code that ran (comment lines aside), the CUDA error (or ``TIMEOUT`` for a hang) and whether every
checked output equals the numpy reference of :mod:`zoo` (computed from the inputs, never from a simulator).
Without a GPU it says why in one line and exits 2.  (Not run yet: the lent GPU machines run a copy of the main
checkout, which does not hold the zoo until this branch is merged.)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # noqa: E402

TARGET = "sm_90a"


def code_sha(text: str) -> str:
    """SHA-256 of the PTX without its whole-line comments (the header may change; the code may not)."""
    code = "\n".join(ln for ln in text.split("\n") if not ln.lstrip().startswith("//"))
    return hashlib.sha256(code.encode()).hexdigest()


def twin_text(pair, which: str) -> str:
    """The twin's PTX for sm_90a: the file under kernels/, or rendered from its template when the file is absent
    (a GPU machine given only the templates)."""
    pc, pb = zoo.paths(pair)
    path = pc if which == "correct" else pb
    text = path.read_text() if path.exists() else zoo.render(pair)[0 if which == "correct" else 1]
    return zoo.retarget(text, TARGET)


def run_one(pair, which, timeout):
    from tcsim.hw.launcher import run_on_gpu
    text = twin_text(pair, which)
    launch, want = zoo.make_launch(pair, text)
    t0 = time.time()
    r = run_on_gpu(launch, timeout=timeout)
    rec = {"pair": pair.name, "twin": which, "cls": pair.cls, "code_sha256": code_sha(text), "error": r.error,
           "error_detail": (r.error_detail or "")[:300], "wall_s": round(time.time() - t0, 2),
           "device": r.device, "driver": r.driver}
    if r.ok:
        rec["matches_numpy"] = bool(all(np.array_equal(np.asarray(r.outputs[i]).reshape(w.shape), w)
                                        for i, w in want.items()))
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--timeout", type=float, default=15.0)
    ap.add_argument("--jobs", type=int, default=4)
    a = ap.parse_args(argv)
    from tcsim.hw.launcher import gpu_available
    ok, what = gpu_available()
    print("GPU:", what, flush=True)
    if not ok:
        return 2
    jobs = [(p, w) for p in zoo.PAIRS if TARGET in p.targets for w in ("correct", "buggy")]
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        records = list(pool.map(lambda j: run_one(j[0], j[1], a.timeout), jobs))
    for r in records:
        print(f"{r['pair']:36s} {r['twin']:7s} error={r['error']} matches_numpy={r.get('matches_numpy')} "
              f"{r['wall_s']}s {r['error_detail'][:120]}", flush=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "zoo_h100.json").write_text(json.dumps({"gpu": what, "target": TARGET, "timeout_s": a.timeout,
                                                   "records": records}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
