"""Survey every recorded disagreement of the committed fuzz campaigns: re-simulate, try the verified explanations.

``python -m calib.fuzz.survey --out FILE.jsonl [--jobs J] [--explain-seconds S] [--campaigns STEM,...]``
    For every program of every campaign in tests/golden/fuzz_campaign that the simulator disagreed with when the
    campaign was recorded (:func:`calib.fuzz.record.differing_seeds`: differing outputs and GPU errors), one JSON
    line: whether today's simulator reproduces the GPU's bytes (``plain``: ``agree`` / ``differs`` /
    ``sim_error``), and where it does not, the first verified explanation (calib/fuzz/explain.py) that makes it
    reproduce them bit for bit (or the 128-bit hash the recording kept), within ``S`` CPU seconds of search per
    program (``explained``: ``diagnosed:...``, None, or ``"timeout"``), and the isa/lint.py checks that note the
    program (``noted``).  Resumable: seeds already in FILE are skipped.  ``python -m calib.fuzz.survey --summary
    FILE.jsonl`` groups the lines by campaign and cause.

This is the offline half of tests/hw/test_fuzz_disagreements.py: the list it writes (``--write-list``) is
tests/golden/fuzz_campaign/disagreements.json, which CI replays (each explanation re-run, each open one still
disagreeing).
"""
from __future__ import annotations

import argparse
import json
import re
import multiprocessing as mp
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "fuzz_campaign"


#: the explanations found most often (tests/golden/README.md), tried alone before the full search
#: (:func:`calib.fuzz.explain.explain` tries every combination, smallest first): any verified explanation will do
QUICK = (([], ["f64-nan-swap"]), (["testp-guard"], []), (["set-f32-guard"], []), ([], ["sign-ops-bitwise"]))


def _quick(prog, same) -> str | None:
    from calib.fuzz.explain import candidates
    from calib.fuzz.replay import replay_explained

    text = prog.render()
    applicable = {tuple(rw + var) for rw, var in candidates(text) if len(rw) + len(var) == 1}
    for rw, var in QUICK:
        if tuple(rw + var) in applicable:
            name = "diagnosed:" + "+".join(rw + var)
            out = replay_explained(prog, name)
            if out is not None and same(out):
                return name
    return None


def _task(args):
    stem, seed, gv, gpu, explain_seconds = args
    from calib.fuzz.explain import SearchTimeout, explain_program
    from calib.fuzz.generator import generate
    from calib.fuzz.record import _h, noted_checks
    from calib.fuzz.runner import run_sim

    t0 = time.process_time()
    prog = generate(seed, version=gv)
    rec = {"campaign": stem, "seed": seed}
    if gpu[0] == "error":
        rec["gpu"] = "error:" + gpu[1][:120]
    out = run_sim(prog)
    if gpu[0] == "error":
        rec["plain"] = "sim_error" if not out.ok else "runs"
        rec["sim"] = out.error[:200] if not out.ok else _h(out.output)
    else:
        same = (lambda b: b == gpu[1]) if gpu[0] == "bytes" else (lambda b: _h(b) == gpu[1])
        if not out.ok:
            rec["plain"] = "sim_error"
            rec["sim"] = out.error[:200]
        elif same(out.output):
            rec["plain"] = "agree"
        else:
            rec["plain"] = "differs"
            rec["explained"] = _quick(prog, same)
            if rec["explained"] is None:
                try:
                    rec["explained"] = explain_program(prog, gpu[1] if gpu[0] == "bytes" else same,
                                                       deadline=time.process_time() + explain_seconds)
                except SearchTimeout:
                    rec["explained"] = "timeout"
        rec["whole"] = gpu[0] == "bytes"
    if rec["plain"] != "agree" and not (rec.get("explained") or "").startswith("diagnosed:"):
        try:
            rec["noted"] = noted_checks(prog)
        except Exception as e:  # noqa: BLE001 - a program lint cannot read: say so in the survey
            rec["noted"] = [f"lint failed: {type(e).__name__}"]
    rec["cpu_s"] = round(time.process_time() - t0, 2)
    return rec


def known_divergent(meta: dict) -> list:
    """Seeds of the recording that agreed with the GPU when recorded and differ under a later simulator rule
    (tests/golden/fuzz_campaign/known_divergent.json)."""
    known = {int(k) for k in json.loads((ROOT / "known_divergent.json").read_text()) if k.isdigit()}
    agree = set(meta["sim_agrees"])
    return sorted(s for s in known if meta["seed"] <= s < meta["seed"] + meta["count"] and s in agree)


def _records(roots=(ROOT,)) -> list:
    """The campaign records (``.npz``) in ``roots``, one per file name, by name."""
    return sorted({p.name: p for r in roots for p in Path(r).glob("h[12]00_*seeds_*.npz")}.values(),
                  key=lambda p: p.name)


def _todo(stems, done, roots=(ROOT,)):
    from calib.fuzz.record import differing_seeds, load

    paths = _records(roots)
    metas = {p.stem: load(p)[1] for p in paths}
    # a program surveyed under another record of the same generator version with the same GPU result (a record and
    # the merged one that holds it) is not surveyed again; the same seed of another version is another program
    done_keys = {(metas[c].get("generator", 1), s, _gpu_key(metas[c], s)) for c, s in done if c in metas}
    for path in paths:
        if stems and path.stem not in stems:
            continue
        z, meta = load(path)
        gv = meta.get("generator", 1)
        for s in differing_seeds(meta) + known_divergent(meta):
            if (path.stem, s) in done or (gv, s, _gpu_key(meta, s)) in done_keys:
                continue
            if str(s) in meta["errors"]:
                gpu = ("error", meta["errors"][str(s)])
            elif f"s{s}" in z.files:
                gpu = ("bytes", bytes(z[f"s{s}"]))
            else:
                gpu = ("sha", meta["gpu_sha"][str(s)])
            yield (path.stem, s, gv, gpu)


def survey(out: Path, jobs: int, explain_seconds: float, stems=None, log=print, roots=(ROOT,)) -> None:
    done = set()
    if out.exists():
        for ln in out.read_text().splitlines():
            r = json.loads(ln)
            done.add((r["campaign"], r["seed"]))
    todo = [t + (explain_seconds,) for t in _todo(stems, done, roots)]
    log(f"[survey] {len(done)} done, {len(todo)} to do")
    t0 = time.time()
    # the compiled numerics once, before the workers fork (else each compiles its own on a fresh machine)
    from tcsim.numerics.jit_warmup import warm_up
    warm_up()
    with out.open("a") as f, mp.get_context("fork").Pool(jobs, maxtasksperchild=200) as pool:
        for i, rec in enumerate(pool.imap(_task, todo, chunksize=4)):
            f.write(json.dumps(rec) + "\n")
            f.flush()
            if i % 100 == 0:
                log(f"[survey] {i + 1}/{len(todo)} {rec['campaign']} {rec['seed']} {time.time() - t0:.0f} s")


def cause(r: dict) -> str:
    """A survey line's group: agree / explained:<names> / noted:<checks> / gpu_error / sim_error / unexplained."""
    if r.get("gpu"):
        return "gpu_error:" + r["gpu"].split(":")[1].split("(")[0].strip()
    if r["plain"] == "agree":
        return "agree"
    if r["plain"] == "sim_error":
        return "sim_error"
    e = r.get("explained") or ""
    if e.startswith("diagnosed:"):
        return "explained:" + "+".join(sorted({n.split("@")[0] for n in e[len("diagnosed:"):].split("+")}))
    if r.get("noted"):
        return "noted:" + ",".join(r["noted"])
    return "unexplained" + (" (search timed out)" if e == "timeout" else "")


def summary(path: Path) -> None:
    rows = [json.loads(ln) for ln in path.read_text().splitlines()]
    by = Counter((r["campaign"], cause(r)) for r in rows)
    for stem in sorted({r["campaign"] for r in rows}):
        n = sum(v for (c, _), v in by.items() if c == stem)
        print(f"{stem}: {n}")
        for (c, k), v in sorted(by.items(), key=lambda kv: -kv[1]):
            if c == stem:
                print(f"  {v:5d}  {k}")


LIST = ROOT / "disagreements.json"


def _gpu_key(meta: dict, seed: int) -> str:
    """What a recording says the GPU did for ``seed``: its output's 128-bit hash, or its error."""
    return meta["gpu_sha"].get(str(seed)) or "error:" + meta["errors"].get(str(seed), "?")


def write_list(survey_files, dst: Path = LIST, command: str = "", roots=(ROOT,)) -> dict:
    """The committed list (tests/golden/fuzz_campaign/disagreements.json) from surveys: for every campaign (the
    ``.npz`` records in ``roots``), every recorded disagreement in exactly one of ``agree_now`` (today's simulator
    reproduces the GPU's bytes), ``explained`` (by explanation: replaying it reproduces them bit for bit) and
    ``open`` (by cause: ``noted:<isa/lint.py checks>`` -- a ptxas miscompilation diagnosed from the SASS of a
    minimised reproducer, with no executable model yet --, ``unexplained``, ``gpu_error:<kind>``, ``sim_error``, or
    ``not surveyed``).  A program surveyed under another record (a campaign merged with a top-up keeps the first
    call's programs) counts where the generator version, the seed and the GPU's recorded result are the same."""
    from calib import pipeline as P
    from calib.fuzz.record import differing_seeds, load

    paths = _records(roots)
    metas = {p.stem: load(p)[1] for p in paths}
    rows: dict = {}
    for f in survey_files:
        for r in map(json.loads, Path(f).read_text().splitlines()):
            m = metas.get(r["campaign"])
            if m is not None:
                rows[(m.get("generator", 1), r["seed"], _gpu_key(m, r["seed"]))] = r
    out = {"_about": "every recorded disagreement of the fuzz campaigns in this folder, by what explains it; made by "
                     "python -m calib.fuzz.survey and replayed by tests/hw/test_fuzz_disagreements.py",
           "_command": command, **{f"_{k}": v for k, v in P.provenance(command).items() if k != "command"},
           "campaigns": {}}
    for path in paths:
        meta = metas[path.stem]
        c = {"generator": meta.get("generator", 1), "seed": meta["seed"], "count": meta["count"],
             "agree_now": [], "explained": {}, "open": {}, "known_divergent": {}}
        for s in known_divergent(meta):        # agreed when recorded, differ now: explained or open, by name
            r = rows.get((meta.get("generator", 1), s, _gpu_key(meta, s)))
            k = "not surveyed" if r is None else (r["explained"] if cause(r).startswith("explained:") else cause(r))
            c["known_divergent"].setdefault(k, []).append(s)
        for s in differing_seeds(meta):
            r = rows.get((meta.get("generator", 1), s, _gpu_key(meta, s)))
            k = "not surveyed" if r is None else cause(r)
            if k == "agree":
                c["agree_now"].append(s)
            elif k.startswith("explained:"):
                c["explained"].setdefault(r["explained"], []).append(s)
            else:
                c["open"].setdefault(k.replace(" (search timed out)", ""), []).append(s)
        c["explained"] = dict(sorted(c["explained"].items(), key=lambda kv: (-len(kv[1]), kv[0])))
        c["open"] = dict(sorted(c["open"].items(), key=lambda kv: (-len(kv[1]), kv[0])))
        out["campaigns"][path.stem] = c
    _dump(out, dst)
    return out


def _dump(out: dict, dst: Path) -> None:
    text = json.dumps(out, indent=1)
    # a seed list on one line: the file stays readable and its diffs small
    text = re.sub(r"\[\s*(\d[\d,\s]*?)\s*\]", lambda m: "[" + ", ".join(m.group(1).replace(",", " ").split()) + "]",
                  text)
    dst.write_text(text + "\n")


def _reexplain_task(args):
    stem, seed, gv, gpu, explain_seconds, stages = args
    from calib.fuzz.explain import SearchTimeout, explain_program
    from calib.fuzz.generator import generate
    from calib.fuzz.record import _h

    t0 = time.process_time()
    same = (lambda b: b == gpu[1]) if gpu[0] == "bytes" else (lambda b: _h(b) == gpu[1])
    try:
        name = explain_program(generate(seed, version=gv), same, deadline=t0 + explain_seconds, stages=stages)
    except SearchTimeout:
        name = None
    return stem, seed, name, round(time.process_time() - t0, 2)


def reexplain(prefix: str, jobs: int, explain_seconds: float, stages, stems=None, log=print, dst: Path = LIST,
              command: str = "", results: Path | None = None, search: bool = True) -> Counter:
    """Search again, with the explanation stages ``stages`` (calib.fuzz.explain.STAGES: the ones added since the
    list was made), the programs the committed list ``dst`` leaves open with a cause starting with ``prefix``
    (``noted:``: a lint note without an executable model), and move each one an explanation now reproduces to
    ``explained`` under that explanation.  ``results``: a JSON-lines file of the searches (``campaign``, ``seed``,
    ``explained``, ``cpu_s``), resumable -- programs already in it are not searched again; ``search`` False: only
    apply it.  Returns {cause: programs moved}."""
    from calib.fuzz.record import load

    out = json.loads(dst.read_text())
    found: dict = {}
    if results is not None and results.exists():
        for r in map(json.loads, results.read_text().splitlines()):
            found[(r["campaign"], r["seed"])] = r["explained"]
    todo = []
    for stem, c in out["campaigns"].items():
        if (stems and stem not in stems) or not (ROOT / f"{stem}.npz").exists():
            continue
        z, meta = load(ROOT / f"{stem}.npz")
        for k, seeds in c["open"].items():
            if k.startswith(prefix):
                for s in seeds:
                    if (stem, s) in found or not search:
                        continue
                    gpu = ("bytes", bytes(z[f"s{s}"])) if f"s{s}" in z.files else ("sha", meta["gpu_sha"][str(s)])
                    todo.append((stem, s, meta.get("generator", 1), gpu, explain_seconds, tuple(stages)))
    log(f"[reexplain] {len(todo)} programs open as {prefix}* to search ({len(found)} searched before)")
    moved = Counter()
    with mp.get_context("fork").Pool(jobs, maxtasksperchild=50) as pool:
        for i, (stem, s, name, cpu) in enumerate(pool.imap_unordered(_reexplain_task, todo)):
            found[(stem, s)] = name
            if results is not None:
                with results.open("a") as f:
                    f.write(json.dumps({"campaign": stem, "seed": s, "explained": name, "cpu_s": cpu}) + "\n")
            log(f"[reexplain] {i + 1}/{len(todo)} {stem} {s}: {name} ({cpu} s)")
    found = {k: v for k, v in found.items() if v and v.startswith("diagnosed:")}
    for stem, c in out["campaigns"].items():
        for k in list(c["open"]):
            keep = [s for s in c["open"][k] if (stem, s) not in found]
            for s in c["open"][k]:
                if (stem, s) in found:
                    c["explained"].setdefault(found[(stem, s)], []).append(s)
                    moved[k] += 1
            if keep:
                c["open"][k] = keep
            else:
                del c["open"][k]
        c["explained"] = dict(sorted(((n, sorted(v)) for n, v in c["explained"].items()),
                                     key=lambda kv: (-len(kv[1]), kv[0])))
    if command:
        out["_command"] = f"{out['_command']}; then {command}"
    _dump(out, dst)
    return moved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.fuzz.survey", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--explain-seconds", type=float, default=30.0)
    ap.add_argument("--campaigns", default="")
    ap.add_argument("--summary", default=None)
    ap.add_argument("--write-list", default=None, metavar="SURVEY.jsonl[,...]",
                    help="write tests/golden/fuzz_campaign/disagreements.json from surveys")
    ap.add_argument("--reexplain", default=None, metavar="CAUSE_PREFIX",
                    help="search the listed open programs whose cause starts with this (noted:) again with "
                         "--stages and move the explained ones in the committed list")
    ap.add_argument("--stages", default="line-rewrites", help="calib.fuzz.explain.STAGES for --reexplain")
    ap.add_argument("--apply-only", action="store_true", help="--reexplain: apply the searches in --out only")
    ap.add_argument("--roots", default=str(ROOT),
                    help="comma-separated folders whose campaign records the list covers (--write-list)")
    args = ap.parse_args(argv)
    if args.summary:
        summary(Path(args.summary))
        return 0
    if args.reexplain:
        from calib import pipeline as P
        moved = reexplain(args.reexplain, args.jobs, args.explain_seconds, args.stages.split(","),
                          set(filter(None, args.campaigns.split(","))), log=lambda m: print(m, flush=True),
                          command=P.command_line("calib.fuzz.survey", sys.argv[1:] if argv is None else argv),
                          results=Path(args.out) if args.out else None, search=not args.apply_only)
        print(f"moved {sum(moved.values())} programs to explained -> {LIST}")
        return 0
    if args.write_list:
        from calib import pipeline as P
        write_list(args.write_list.split(","), roots=args.roots.split(","),
                   command=P.command_line("calib.fuzz.survey", sys.argv[1:] if argv is None else argv))
        print(f"-> {LIST}")
        return 0
    survey(Path(args.out), args.jobs, args.explain_seconds, set(filter(None, args.campaigns.split(","))),
           log=lambda m: print(m, flush=True), roots=args.roots.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
