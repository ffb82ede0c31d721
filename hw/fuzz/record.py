"""Record fuzz programs' GPU outputs once, compare the simulator against them offline, as often as needed.

``python -m hw.fuzz.record gpu --seed S --count N --out FILE.npz [--gpu-workers W]`` (on a GPU machine)
    Runs programs ``S .. S+N-1`` (:func:`hw.fuzz.generator.generate`) on the GPU only, in batches, and stores
    each program's output buffer (``s<seed>``) -- or its CUDA error -- with the device name in one compressed
    file.  10,000 programs take about 4 minutes on an H100 machine and about 10 MB.

``python -m hw.fuzz.record compare --gpu FILE.npz [--jobs J] [--seeds A-B] [--out DIR]`` (anywhere)
    Simulates every recorded program and compares bit for bit with the recorded GPU bytes (the comparison of
    ``python -m hw.fuzz --backend gpu``), prints the mismatch classes and writes ``DIR/mismatches.json``.

The generator is deterministic per seed, so the file plus this repository reproduce the campaign exactly; a
recording made by an older generator is detected (each program's input buffer is hashed into the file).
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

from .generator import generate
from .runner import GpuBackend, Outcome, SimPool, classify, compare


def _digest(prog) -> str:
    h = hashlib.sha256(prog.render().encode())
    h.update(prog.input_buffer().tobytes())
    return h.hexdigest()[:16]


def record(seed: int, count: int, out: Path, gpu_workers: int = 4, batch: int = 64, log=print,
           driver: str = "cuda") -> dict:
    seeds = list(range(seed, seed + count))
    chunks = [seeds[i:i + batch] for i in range(0, len(seeds), batch)]
    import threading
    local = threading.local()
    backends = []
    lock = threading.Lock()

    def backend():
        if not hasattr(local, "gpu"):
            local.gpu = GpuBackend(log=log, driver=driver)
            with lock:
                backends.append(local.gpu)
        return local.gpu

    def run(chunk):
        progs = [generate(s) for s in chunk]
        return progs, backend().run(progs)

    arrays, meta = {}, {"seed": seed, "count": count, "errors": {}, "digests": {}}
    t0 = time.time()
    try:
        with ThreadPoolExecutor(gpu_workers) as ex:
            for i, (progs, res) in enumerate(ex.map(run, chunks)):
                for p, o in zip(progs, res):
                    meta["digests"][str(p.seed)] = _digest(p)
                    if o.ok:
                        arrays[f"s{p.seed}"] = np.frombuffer(o.output, dtype=np.uint8)
                    else:
                        meta["errors"][str(p.seed)] = o.error
                if i % 20 == 0:
                    log(f"[record] {sum(len(c) for c in chunks[:i + 1])} programs, {time.time() - t0:.0f} s")
    finally:
        for b in backends:
            meta["device"] = meta.get("device") or (b.info or {}).get("name")
            b.close()
    meta["wall_s"] = round(time.time() - t0, 1)
    np.savez_compressed(out, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    log(f"[record] {count} programs on {meta.get('device')} in {meta['wall_s']} s, {len(meta['errors'])} GPU "
        f"errors -> {out}")
    return meta


def load(path: Path):
    z = np.load(path)
    meta = json.loads(bytes(z["meta"]).decode())
    return z, meta


def compare_recording(path: Path, jobs: int = 2, seeds=None, log=print) -> list:
    z, meta = load(path)
    all_seeds = range(meta["seed"], meta["seed"] + meta["count"])
    todo = [s for s in all_seeds if seeds is None or s in seeds]
    pool = SimPool(jobs)
    found = []
    t0 = time.time()
    try:
        for i in range(0, len(todo), 256):
            chunk = todo[i:i + 256]
            res = pool.map_async([("seed", s, (None,)) for s in chunk]).get()
            for s, (so, _sched) in zip(chunk, res):
                prog = generate(s)
                if meta["digests"].get(str(s)) != _digest(prog):
                    raise SystemExit(f"{path}: program {s} was recorded from a different generator; re-record")
                key = f"s{s}"
                go = Outcome(output=bytes(z[key])) if key in z else Outcome(error=meta["errors"].get(str(s)))
                m = compare(prog, so, go)
                if m is not None:
                    found.append({"seed": s, "kind": m.kind, "class": classify(m), "detail": m.detail[:400]})
            log(f"[compare] {i + len(chunk)}/{len(todo)} programs, {len(found)} mismatches, "
                f"{time.time() - t0:.0f} s")
    finally:
        pool.close()
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hw.fuzz.record", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gpu")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--count", type=int, default=10000)
    g.add_argument("--out", required=True)
    g.add_argument("--gpu-workers", type=int, default=4)
    c = sub.add_parser("compare")
    c.add_argument("--gpu", required=True)
    c.add_argument("--jobs", type=int, default=2)
    c.add_argument("--seeds", default=None, help="A-B (inclusive) or a comma-separated list")
    c.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.cmd == "gpu":
        meta = record(args.seed, args.count, Path(args.out), args.gpu_workers)
        return 0 if not meta["errors"] else 1
    seeds = None
    if args.seeds:
        if "-" in args.seeds:
            a, b = args.seeds.split("-")
            seeds = set(range(int(a), int(b) + 1))
        else:
            seeds = {int(x) for x in args.seeds.split(",")}
    found = compare_recording(Path(args.gpu), args.jobs, seeds)
    classes: dict = {}
    for f in found:
        classes[f["class"]] = classes.get(f["class"], 0) + 1
    for c_, n in sorted(classes.items(), key=lambda kv: -kv[1]):
        print(f"{n:6d}  {c_}")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "mismatches.json").write_text(json.dumps(found, indent=1))
    print(f"{len(found)} mismatches")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
