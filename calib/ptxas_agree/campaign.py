"""Run ``tcsim check`` and ``ptxas -arch=<target>`` on mutants and compare their accept/reject verdicts.

:func:`judge` gives one mutant's verdicts: tcsim's (``accept``, ``reject`` with the first diagnostic, or
``crash`` -- a Python exception that is not a tcsim diagnostic), ptxas's (``accept`` / ``reject`` with its first
error) and, where tcsim's check accepts, whether the program also loads (``tcsim.engine.load_program``: layout
of every declaration, linking) -- an error that appears first there is one check should have found.
:func:`run_campaign` judges mutants ``start..start+count`` of a seed in worker processes (each under an
address-space limit, so a mutant declaring a 90 GiB array fails with MemoryError instead of swapping) and returns
the record: counts per class, agreement, and every disagreement.
"""
from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FuturesTimeout
from pathlib import Path

from .mutate import REPO, corpus, mutant

MEM_LIMIT = 6 << 30
PTXAS_TIMEOUT = 60


def _limit_memory():
    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))
    except (ValueError, OSError):
        pass


def ptxas_verdict(text: str, arch: str, ptxas: str = "ptxas") -> tuple:
    """('accept' | 'reject', first error line) of ``ptxas -arch=arch`` on ``text``."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "m.ptx"
        p.write_text(text)
        try:
            r = subprocess.run([ptxas, f"-arch={arch}", str(p), "-o", str(Path(tmp) / "m.cubin")],
                               capture_output=True, text=True, timeout=PTXAS_TIMEOUT)
        except subprocess.TimeoutExpired:
            return "timeout", ""
    log = (r.stdout + r.stderr).replace(str(p), "m.ptx")
    if r.returncode == 0:
        return "accept", ""
    first = next((ln for ln in log.splitlines() if "error" in ln or "fatal" in ln), log.strip()[:200])
    return "reject", first.strip()[:300]


def check_verdict(text: str, name: str = "m.ptx") -> tuple:
    """('accept' | 'reject' | 'crash', first diagnostic) of ``tcsim check`` (``tcsim.cli.check_ptx_text``)."""
    from tcsim.cli import check_ptx_text
    from tcsim.isa.errors import TcsimError
    try:
        errs = check_ptx_text(text, name)
    except TcsimError as e:
        return "reject", str(e).splitlines()[0][:300]
    except Exception as e:           # noqa: BLE001 -- a traceback is the finding
        return "crash", f"{type(e).__name__}: {e}"[:300]
    if errs:
        return "reject", str(errs[0]).splitlines()[0][:300]
    return "accept", ""


def load_verdict(text: str, name: str = "m.ptx") -> tuple:
    """('ok' | 'reject' | 'crash', message) of loading every kernel of an accepted program."""
    from tcsim.engine import load_program
    from tcsim.isa.errors import TcsimError
    from tcsim.isa.parser import parse
    try:
        mod = parse(text, name)
        for fn in mod.functions.values():
            if fn.kind == "entry" and not fn.is_declaration:
                load_program(mod, fn.name)
    except TcsimError as e:
        return "reject", str(e).splitlines()[0][:300]
    except MemoryError:
        return "crash", "MemoryError"
    except Exception as e:           # noqa: BLE001
        return "crash", f"{type(e).__name__}: {e}"[:300]
    return "ok", ""


def judge(seed: int, i: int, files: list, ptxas: str = "ptxas", load: bool = True) -> dict:
    m = mutant(seed, i, files)
    c, cmsg = check_verdict(m.text)
    p, pmsg = ptxas_verdict(m.text, m.target, ptxas)
    out = {"i": i, "file": m.path, "target": m.target, "line": m.line, "operator": m.operator,
           "before": m.before, "after": m.after, "check": c, "check_msg": cmsg, "ptxas": p, "ptxas_msg": pmsg}
    if load and c == "accept":
        out["load"], out["load_msg"] = load_verdict(m.text)
    return out


def _judge_many(args):
    seed, idxs, files, ptxas, load = args
    return [judge(seed, i, files, ptxas, load) for i in idxs]


def agrees(r: dict) -> bool:
    return r["check"] == r["ptxas"]


def run_campaign(seed: int, count: int, start: int = 0, jobs: int | None = None, ptxas: str = "ptxas",
                 load: bool = True, chunk: int = 10, time_limit: float | None = None) -> dict:
    """Judge mutants ``start..start+count``; with ``time_limit`` (seconds), chunks not finished by then are
    dropped and the record says how many mutants were judged (always a prefix-independent, reproducible set:
    every mutant is a pure function of ``(seed, index)``)."""
    files = corpus(REPO)
    jobs = jobs or os.cpu_count() or 1
    idx = list(range(start, start + count))
    chunks = [(seed, idx[k:k + chunk], files, ptxas, load) for k in range(0, len(idx), chunk)]
    t0 = time.time()
    results: list = []
    ex = ProcessPoolExecutor(jobs, initializer=_limit_memory)
    futs = [ex.submit(_judge_many, c) for c in chunks]
    try:
        for f in as_completed(futs, timeout=time_limit):
            results += f.result()
    except FuturesTimeout:
        pass
    finally:
        for f in futs:
            f.cancel()
        ex.shutdown(wait=False, cancel_futures=True)
    results.sort(key=lambda r: r["i"])
    return summarise(results, seed=seed, start=start, count=count, seconds=round(time.time() - t0, 1),
                     files=len(files))


def summarise(results: list, **meta) -> dict:
    counts: dict = {}
    for r in results:
        key = f"check={r['check']} ptxas={r['ptxas']}"
        counts[key] = counts.get(key, 0) + 1
    by_op: dict = {}
    for r in results:
        d = by_op.setdefault(r["operator"], [0, 0])
        d[0] += 1
        d[1] += agrees(r)
    agree = sum(agrees(r) for r in results)
    dis = [r for r in results if not agrees(r)]
    load_missed = [r for r in results if r.get("load") not in (None, "ok")]
    return {**meta, "mutants": len(results), "agree": agree,
            "agreement": round(agree / max(1, len(results)), 5), "counts": dict(sorted(counts.items())),
            "by_operator": {k: {"mutants": v[0], "agree": v[1]} for k, v in sorted(by_op.items())},
            "crashes": [r for r in results if r["check"] == "crash"],
            "disagreements": dis, "load_after_check": load_missed}


__all__ = ["judge", "run_campaign", "summarise", "agrees", "check_verdict", "ptxas_verdict", "load_verdict"]
