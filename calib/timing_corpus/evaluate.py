"""Simulated vs measured cycles of the corpus, per split; the evaluation cache; the README section.

* golden data: ``tests/golden/timing_corpus_h100/`` (``meta.json`` + ``timings.npz``, a GPU record installed by
  ``python -m calib.timing_corpus install --gpu DIR``);
* :func:`evaluate` simulates kernels with sim/timing's model and writes ``evaluation.json`` beside this file: per
  kernel the simulated cycles (the simulator is deterministic), the date and the command.  It is a cache of a
  slow computation (about 2-5 s per kernel), not a measurement: ``tests/hw/test_timing_corpus.py`` re-simulates
  a few kernels against it on every run, and the whole corpus under ``slow``;
* :func:`report` prints the per-kernel table and one line per split, exactly
  ``<split> split: mean absolute percentage error X% over N kernels``;
* :func:`readme_section` renders the README's corpus section from the golden data and the cache (the test checks
  the README holds exactly that text).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from calib import pipeline as P

from . import record as R
from .split import HELDOUT, SPLITS, split_of

HERE = Path(__file__).resolve().parent
GOLDEN = P.GOLDEN_ROOT / "timing_corpus_h100"
CACHE = HERE / "evaluation.json"
#: the simulated cycles of the model before issue 21 changed it (commit 1a634e0), for the before / after report
BASELINE = HERE / "baseline.json"
README = P.ROOT / "README.md"
BEGIN, END = "<!-- timing-corpus:begin (tests/hw/test_timing_corpus.py checks this) -->", "<!-- timing-corpus:end -->"


class EvalError(ValueError):
    pass


def load_golden(d: Path | None = None) -> dict:
    d = GOLDEN if d is None else Path(d)
    meta, _ = P.load_record(d, R.DATA, "a `python -m calib.timing_corpus record --out DIR` folder")
    return meta


def stale(meta: dict) -> list:
    """Kernels whose recorded PTX (instrumented copy) is not what :func:`calib.timing_corpus.record.build` makes now:
    a record of another kernel, never compared."""
    return [n for n, e in meta["kernels"].items()
            if n not in R.names() or e.get("ptx_sha256") != P.sha256(R.build(n)[0].ptx_text()[0].encode())]


def measured(meta: dict) -> dict:
    """{name: median cycles} of the kernels recorded ok, correct on every repetition and not :func:`stale`."""
    old = set(stale(meta))
    return {n: e["median_cycles"] for n, e in meta["kernels"].items()
            if e.get("status") == "ok" and all(e.get("correct", [False])) and n not in old}


def simulate(names: list, jobs: int = 1) -> dict:
    """{name: simulated cycles or None (the simulator did not finish it correctly)}."""
    got = P.run_all(names, R.run_sim, max(1, jobs), processes=jobs > 1)
    out = {}
    for n, e in zip(names, got):
        out[n] = e["cycles"][0] if e.get("status") == "ok" and all(e["correct"]) else None
        if out[n] is None:
            print(f"{n}: simulator {e.get('status')} {e.get('detail', e.get('check', ''))[:200]}", flush=True)
    return out


def evaluate(names: list, jobs: int = 1, write: bool = True) -> dict:
    sim = simulate(names, jobs)
    if write:
        old = json.loads(CACHE.read_text())["kernels"] if CACHE.exists() else {}
        old.update(sim)
        P.write_json(CACHE, {"command": "python -m calib.timing_corpus timing evaluate", "date": P.utc_now(),
                             "kernels": {n: old[n] for n in R.names() if n in old}})
    return sim


def load_cache(path: Path | None = None) -> dict:
    path = CACHE if path is None else Path(path)
    if not path.exists():
        raise EvalError(f"{path} missing: run `python -m calib.timing_corpus timing evaluate`")
    return json.loads(path.read_text())["kernels"]


def rows(hw: dict, sim: dict) -> list:
    """[(name, split, source, hw, sim, signed error)] over the kernels with both values."""
    out = []
    for n in R.names():
        if n in hw and sim.get(n) is not None:
            out.append((n, split_of(n), R.source_of(n), hw[n], sim[n], (sim[n] - hw[n]) / hw[n]))
    return out


def split_lines(rs: list) -> list:
    """One line per split, exactly ``<split> split: mean absolute percentage error X% over N kernels``, then the
    held-out set's line."""
    lines = []
    for s in SPLITS + (HELDOUT,):
        errs = [abs(r[5]) for r in rs if r[1] == s]
        mape = 100 * float(np.mean(errs)) if errs else float("nan")
        what = f"{s} split" if s != HELDOUT else "held-out set (NVIDIA cuda-samples)"
        lines.append(f"{what}: mean absolute percentage error {mape:.1f}% over {len(errs)} kernels")
    from .kernels import HELDOUT2
    errs = [abs(r[5]) for r in rs if r[0] in HELDOUT2]
    if errs:
        lines.append(f"  of which the second held-out set (first measured after the model was frozen): mean absolute "
                     f"percentage error {100 * float(np.mean(errs)):.1f}% over {len(errs)} kernels")
    return lines


def table(rs: list) -> list:
    out = [f"{'kernel':34s} {'split':10s} {'source':26s} {'H100':>9s} {'tcsim':>9s} {'error':>8s}"]
    for s in SPLITS + (HELDOUT,):
        for n, sp, src, h, m, e in sorted((r for r in rs if r[1] == s), key=lambda r: r[0]):
            out.append(f"{n:34s} {sp:10s} {src:26s} {h:9.0f} {m:9.0f} {100 * e:+7.1f}%")
    return out


def report(cached: bool = False, jobs: int = 1, gpu_dir: Path | None = None, cache: Path | None = None) -> int:
    """``cache``: an evaluation file to compare (e.g. :data:`BASELINE`); ``cached``: the committed one."""
    hw = measured(load_golden(gpu_dir))
    names = [n for n in R.names() if n in hw]
    sim = load_cache(cache) if (cached or cache) else simulate(names, jobs)
    rs = rows(hw, sim)
    for line in table(rs):
        print(line)
    missing = [n for n in R.names() if n not in hw or sim.get(n) is None]
    if missing:
        print(f"not compared (no correct H100 record or simulation): {', '.join(missing)}")
    for line in split_lines(rs):
        print(line)
    return 0


def readme_section(hw: dict | None = None, sim: dict | None = None, meta: dict | None = None) -> str:
    """The README's corpus section (between :data:`BEGIN` and :data:`END`)."""
    meta = load_golden() if meta is None else meta
    hw = measured(meta) if hw is None else hw
    sim = load_cache() if sim is None else sim
    rs = rows(hw, sim)
    base = rows(hw, load_cache(BASELINE))
    lines = split_lines(rs)
    worst = sorted((r for r in rs if r[1] != HELDOUT), key=lambda r: -abs(r[5]))[:5]
    srcs: dict = {}
    for r in rs:
        key = {"triton": "Triton", "microbench": "calib/microbench"}.get(r[2], "cuda-samples" if r[2].startswith(
            "cuda-samples/") else "CUDA C")
        srcs[key] = srcs.get(key, 0) + 1
    held = [r for r in rs if r[1] == HELDOUT]
    text = [
        BEGIN,
        f"On kernels it was not tuned on: the timing corpus (`calib/timing_corpus`, issue 21) -- {len(rs)} one-CTA "
        f"kernels ({', '.join(f'{v} {k}' for k, v in sorted(srcs.items()))}), each measured on an "
        f"{meta.get('gpu', 'H100')} with `%clock64` at entry and exit (median of {meta.get('reps')} launches, "
        "`tests/golden/timing_corpus_h100`), assigned to fit / validation / test by a hash of its name before "
        "anything was fitted (`calib/timing_corpus/split.py`; the 11 kernels above are in fit, as they were tuned "
        "on). `python -m calib.timing_corpus timing report` prints:",
        "",
        "```",
        *lines,
        "```",
        "",
        "Before issue 21's mechanisms (loops ptxas keeps rolled, memory-ordering costs, scattered L1/L2 accesses; "
        "`calib/timing_corpus/baseline.json`): " + "; ".join(split_lines(base)[:3]) + ".",
        "Largest errors: " + ", ".join(f"`{r[0]}` ({r[1]}) {100 * r[5]:+.0f}%" for r in worst) + ".",
        f"Held out: the {len(held)} held-out kernels are simple NVIDIA cuda-samples kernels (transposes, a dot "
        "product, Black-Scholes, bitonic and merge sorts, tiled and cp.async SGEMMs, reductions, histograms, scans, "
        "a Sobol generator, atomics), one CTA each; the second set was chosen and wired before it was measured and "
        "first compared with a frozen model.  Kernels of CUTLASS, ThunderKittens, FlashMLA or DeepGEMM have not been "
        "measured this way, so how the model does on those is not known.",
        END,
    ]
    return "\n".join(text)


def readme(write: bool = False) -> int:
    text = README.read_text()
    new = readme_section()
    if BEGIN not in text or END not in text:
        raise EvalError(f"README.md has no {BEGIN} ... {END} block")
    a, rest = text.split(BEGIN, 1)
    _, b = rest.split(END, 1)
    out = a + new + b
    if write:
        README.write_text(out)
        print("README.md updated")
    else:
        print(new)
    return 0


def _fixed_command(meta: dict) -> None:
    """Records made before the CLI's prefix fix say ``python -m python -m calib.timing_corpus ...``: the installed
    record gets the command as it runs (``command``) and keeps what was written (``command_as_recorded``)."""
    bad = "python -m python -m "
    if meta.get("command", "").startswith(bad):
        meta["command_as_recorded"] = meta["command"]
        meta["command"] = "python -m " + meta["command"][len(bad):]


def install(src: Path, merge: bool = False) -> int:
    """Copy a GPU record into :data:`GOLDEN`.  ``merge``: add (replace) the record's kernels in the installed
    record; every kernel keeps its own provenance (``recorded``: command, date, GPU, driver) and the top-level
    ``merged`` list names each merge."""
    meta = load_golden(src)
    if meta.get("backend") != "gpu":
        raise EvalError(f"{src}: a {meta.get('backend')} record, not a GPU one")
    _fixed_command(meta)
    GOLDEN.mkdir(parents=True, exist_ok=True)
    if not merge:
        P.write_json(GOLDEN / P.META, meta)
        shutil.copyfile(Path(src) / R.DATA, GOLDEN / R.DATA)
        print(f"installed {len(meta['kernels'])} kernels -> {GOLDEN}")
        return 0
    old = load_golden()
    arrays = dict(P.load_arrays(GOLDEN / R.DATA))
    new_arrays = P.load_arrays(Path(src) / R.DATA)
    prov = {k: meta.get(k) for k in ("command", "date", "gpu", "driver_version", "reps")}
    for n, e in meta["kernels"].items():
        e["recorded"] = prov
        old["kernels"][n] = e
        arrays.pop(n, None)
        if n in new_arrays:
            arrays[n] = np.asarray(new_arrays[n])
    old.setdefault("merged", []).append({**prov, "kernels": sorted(meta["kernels"])})
    old["kernels"] = {n: old["kernels"][n] for n in R.names() if n in old["kernels"]}
    P.write_record(GOLDEN, old, arrays, R.DATA)
    print(f"merged {len(meta['kernels'])} kernels into {GOLDEN}")
    return 0
