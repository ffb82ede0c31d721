"""Minimise many recorded fuzz findings at once, one GPU child per worker process.

``python -m calib.fuzz.triage --seeds A,B,C|A-B|@FILE --out DIR [--workers W] [--time-per T] [--deadline S]``
(on a GPU machine)

Each worker process owns a GPU child (:class:`calib.fuzz.runner.GpuBackend`) and simulates in-process.  For every
seed it re-runs the program on both back ends; where they still differ it minimises the program with the GPU
predicate (:func:`calib.fuzz.runner.gpu_mismatch_predicate`) for at most ``T`` seconds and saves the reproducer as
``DIR/fuzz_<seed>_<kind>.{ptx,json}`` (the format tests/fuzz_regressions replays).  ``DIR/triage.json`` lists
every seed's outcome: ``agrees``, ``gpu_error``, or the minimised reproducer's size and first differing fields.
With ``--gpu-errors`` a program the GPU refuses with a CUDA error (``CUDA_ERROR_ILLEGAL_INSTRUCTION``, ...) that the
simulator runs is minimised too, while the GPU still fails with the same error
(:func:`calib.fuzz.runner.gpu_error_predicate`), and saved as ``fuzz_<seed>_gpu_error``; a JIT failure or
timeout is not (its program never ran).  Seeds are handed out smallest program first, and no new minimisation starts after ``--deadline`` seconds, so a
time-limited run still returns every reproducer it finished.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from .generator import generate


def parse_seeds(text: str) -> list:
    """``A-B`` (inclusive), ``A,B,C``, a mix, or ``@FILE`` holding such a list (an argparse ``type``: a bad list
    or an unreadable file is a usage error, not a traceback)."""
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text().replace("\n", ",")
        except OSError as e:
            raise argparse.ArgumentTypeError(f"cannot read the seed list {text[1:]}: {e.strerror}") from None
    out: list = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        a, sep, b = part.partition("-")
        try:
            out.extend(range(int(a), int(b) + 1) if sep else [int(a)])
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a seed or seed range: {part!r}") from None
    return out


_STATE: dict = {}


def _init(driver: str, out: str, time_per: float, deadline: float, version: int, gpu_errors: bool = False):
    from .runner import GpuBackend, SimPool
    _STATE.update(gpu=GpuBackend(driver=driver, log=lambda *_: None), pool=SimPool(1), out=Path(out),
                  time_per=time_per, deadline=deadline, version=version, gpu_errors=gpu_errors)


def _minimise_gpu_error(seed: int, prog, go) -> dict:
    """Shrink a program the GPU refuses with a CUDA error while it still does (the simulator running it)."""
    from .minimize import minimize
    from .runner import compare, gpu_error_predicate, run_sim, save_mismatch

    st = _STATE
    code = go.error.split()[0]
    so = run_sim(prog)
    if not so.ok:
        return {"seed": seed, "outcome": "both_fail", "detail": f"GPU {go.error[:150]}; simulator {so.error[:150]}"}
    left = st["deadline"] - time.time()
    if not code.startswith("CUDA_ERROR") or left < 5:
        return {"seed": seed, "outcome": "gpu_error", "detail": go.error[:300]}
    stats: dict = {}
    small = minimize(prog, gpu_error_predicate(st["gpu"], st["pool"], code, stats),
                     time_limit=min(st["time_per"], left), stats=stats)
    g2 = st["gpu"].run([small])[0]
    mm = compare(small, run_sim(small), g2)
    if mm is None or mm.kind != "gpu_error" or not g2.error.startswith(code):     # flaky: keep the original
        small, mm = prog, compare(prog, so, go)
    name = f"fuzz_{seed}_gpu_error"
    small.name = name
    path = save_mismatch(mm, st["out"], name, original_seed=seed, device=(st["gpu"].info or {}).get("name"))
    return {"seed": seed, "outcome": "gpu_error_minimised", "kind": "gpu_error",
            "instructions": small.instruction_count(), "file": path.name, "detail": go.error[:300],
            "evaluations": stats.get("evaluations")}


def _triage_one(seed: int) -> dict:
    from .runner import compare, minimise_gpu_finding, run_sim, save_mismatch

    st = _STATE
    prog = generate(seed, version=st["version"])
    go = st["gpu"].run([prog])[0]
    if not go.ok:
        if st.get("gpu_errors"):
            return _minimise_gpu_error(seed, prog, go)
        return {"seed": seed, "outcome": "gpu_error", "detail": go.error[:300]}
    m = compare(prog, run_sim(prog), go)
    if m is None:
        return {"seed": seed, "outcome": "agrees"}
    left = st["deadline"] - time.time()
    if left < 5:
        return {"seed": seed, "outcome": "not_minimised", "kind": m.kind, "detail": m.detail[:400]}
    stats: dict = {}
    small, mm = minimise_gpu_finding(m, st["gpu"], st["pool"], min(st["time_per"], left), stats)
    name = f"fuzz_{seed}_{mm.kind}"
    small.name = name
    path = save_mismatch(mm, st["out"], name, original_seed=seed, device=(st["gpu"].info or {}).get("name"))
    return {"seed": seed, "outcome": "mismatch", "kind": mm.kind, "instructions": small.instruction_count(),
            "file": path.name, "detail": mm.detail[:400], "evaluations": stats.get("evaluations")}


def triage(seeds: list, out: Path, workers: int = 8, time_per: float = 60.0, deadline: float = 500.0,
           driver: str = "cuda", log=print, version: int | None = None, gpu_errors: bool = False) -> list:
    """Minimise the findings of ``seeds`` (programs of generator ``version``, default the current one;
    ``gpu_errors``: also the programs the GPU refuses with a CUDA error, see the module docstring)."""
    from .generator import VERSION
    version = VERSION if version is None else version
    out.mkdir(parents=True, exist_ok=True)
    order = sorted(seeds, key=lambda s: generate(s, version=version).instruction_count())
    t_end = time.time() + deadline
    results = []
    # ProcessPoolExecutor's workers are not daemonic, so each may start its own GPU child process
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"), initializer=_init,
                             initargs=(driver, str(out), time_per, t_end, version, gpu_errors)) as pool:
        for r in (f.result() for f in as_completed([pool.submit(_triage_one, s) for s in order])):
            results.append(r)
            log(f"[triage] {len(results)}/{len(order)} seed {r['seed']}: {r['outcome']}"
                + (f" ({r.get('instructions')} instructions) {r['detail'][:160]}"
                   if r["outcome"] in ("mismatch", "gpu_error_minimised") else ""))
    results.sort(key=lambda r: r["seed"])
    (out / "triage.json").write_text(json.dumps(results, indent=1) + "\n")
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.fuzz.triage", description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", required=True, type=parse_seeds,
                    help="A-B (inclusive), a comma-separated list, or @FILE")
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--time-per", type=float, default=60.0, help="seconds per minimisation")
    ap.add_argument("--deadline", type=float, default=500.0, help="no minimisation starts after this many seconds")
    ap.add_argument("--generator", type=int, default=None, help="generator version of the seeds (default: current)")
    ap.add_argument("--gpu-errors", action="store_true",
                    help="also minimise programs the GPU refuses with a CUDA error (while it still does)")
    ap.add_argument("--driver", default="cuda", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    try:
        res = triage(a.seeds, Path(a.out), a.workers, a.time_per, a.deadline, a.driver,
                     log=lambda s: print(s, flush=True), version=a.generator, gpu_errors=a.gpu_errors)
    except Exception as e:  # noqa: BLE001
        from tcsim.hw.launcher import GpuUnavailable
        if isinstance(e, GpuUnavailable):
            print(f"python -m calib.fuzz.triage: GPU unavailable: {e}", file=sys.stderr)
            return 2
        raise
    counts: dict = {}
    for r in res:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    print(f"[triage] {len(res)} seeds: {counts} -> {a.out}/triage.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
