"""A robustness campaign: generate -> run (workers with limits) -> record -> minimise -> regression files.

:func:`campaign` counts the outcome classes per case kind and keeps the findings (:data:`.execute.FINDINGS`);
:func:`minimize` shrinks one finding with delta debugging (PTX: lines, then tokens of the remaining lines, then
characters of short lines; launch cases: the fields and keywords changed; command lines: the options) while
its signature (class, exception type, innermost product frame) stays the same; :func:`save_regression` writes a
minimised case under ``tests/robust_regressions`` (a ``.json`` description, plus the ``.ptx`` bytes for PTX cases)
and :func:`replay` runs every such file again (what ``tests/robust/test_robust.py`` asserts: none is a finding).
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter, defaultdict
from pathlib import Path

from .execute import CLASSES, FINDINGS, latin1, unlatin1
from .generate import cases as gen_cases
from .pool import DEFAULT_MEM, REPO, Pool

REGRESSIONS = REPO / "tests" / "robust_regressions"


def campaign(seed: int, count: int, *, start: int = 0, jobs: int = 1, time_limit: float = 20.0,
             mem: int = DEFAULT_MEM, max_bytes: int | None = None, out=None, minimize: int = 0, save=None,
             minimize_time: float = 120.0,
             log=None, mix=None, budget="default") -> dict:
    """Run cases ``start .. start+count-1`` of ``seed``; the campaign record (a dict)."""
    t0 = time.time()
    classes: Counter = Counter()
    by_kind: dict = defaultdict(Counter)
    findings: list = []
    sigs: Counter = Counter()
    seconds: Counter = Counter()
    done = 0
    kw = {"max_bytes": max_bytes}
    if mix is not None:
        kw["mix"] = mix
    if budget != "default":
        kw["budget"] = budget
    sink = None
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        sink = open(Path(out) / "findings.jsonl", "w")      # written as they come (a long campaign can be read)
    with Pool(jobs, time_limit, mem) as pool:
        for case, o in pool.imap(gen_cases(seed, count, start, **kw)):
            cls = o["cls"]
            classes[cls] += 1
            by_kind[case["kind"]][cls] += 1
            seconds[case["kind"]] += o.get("s", 0.0)
            if case["kind"] == "run":
                by_kind["run:" + o.get("stage", "check")][cls] += 1
            if cls in FINDINGS:
                sigs[o.get("sig") or cls] += 1
                findings.append((case, o))
                if sink:
                    sink.write(json.dumps({"case": case, "outcome": o}) + "\n")
                    sink.flush()
            done += 1
            if log and done % 2000 == 0:
                log(f"{done}/{count} cases, {time.time() - t0:.0f} s: {dict(classes)}")
        if sink:
            sink.close()
        minimised = []
        if minimize:
            seen = set()
            for c, o in findings:
                s = o.get("sig") or o["cls"]
                if s in seen or len(seen) >= minimize:
                    continue
                seen.add(s)
                small = globals()["minimize"](c, o, pool, log=log, budget_s=minimize_time)
                minimised.append((small, o))
                if save:
                    p = save_regression(small, o, Path(save))
                    if log:
                        log(f"saved {p.name}: {s}")
    from .generate import MIX, RUN_BUDGET, tracked_ptx
    return {"ptx_files": len(tracked_ptx()), "seed": seed, "start": start, "count": count, "time_limit_s": time_limit, "mem_bytes": mem,
            "mix": mix or MIX, "run_budget": RUN_BUDGET if budget == "default" else budget,
            "jobs": jobs, "classes": {k: classes.get(k, 0) for k in CLASSES},
            "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
            "findings": len(findings), "signatures": dict(sigs.most_common()),
            "case_seconds_by_kind": {k: round(v, 1) for k, v in sorted(seconds.items())},
            "examples": [{"sig": o.get("sig"), "detail": o.get("detail"), "kind": c["kind"], "id": c["id"],
                          "mutations": c.get("mutations"), "source": c.get("source"),
                          "launch": c.get("launch"), "run": c.get("run"), "argv": c.get("argv")}
                         for c, o in _one_per_sig(findings)],
            "cpu_wall_s": round(time.time() - t0, 1)}


def combine(records: list) -> dict:
    """One record of several campaign chunks (each a :func:`campaign` record with its ``command``): the summed
    counts per class and per kind, and every chunk as it was."""
    classes: Counter = Counter()
    by_kind: dict = defaultdict(Counter)
    sigs: Counter = Counter()
    for r in records:
        classes.update(r["classes"])
        for k, v in r["by_kind"].items():
            by_kind[k].update(v)
        sigs.update(r.get("signatures", {}))
    return {"cases": sum(r["count"] for r in records), "classes": {k: classes.get(k, 0) for k in CLASSES},
            "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())}, "findings": sum(r["findings"] for r in records),
            "signatures": dict(sigs.most_common()), "chunks": records}


def _one_per_sig(findings):
    seen = set()
    for c, o in findings:
        s = o.get("sig") or o["cls"]
        if s not in seen:
            seen.add(s)
            yield c, o


# ============================================================================================ minimisation

def _ddmin(items: list, test, log=None, deadline=None) -> list:
    """Delta debugging (Zeller's ddmin, complements only): a 1-minimal sublist of ``items`` for which ``test``
    (batched: a list of candidate lists -> list of bools) holds."""
    n = 2
    while len(items) >= 2:
        if deadline and time.time() > deadline:
            break
        chunk = max(1, len(items) // n)
        cands = [items[:k] + items[k + chunk:] for k in range(0, len(items), chunk)]
        ok = test(cands)
        hit = next((c for c, y in zip(cands, ok) if y), None)
        if hit is not None:
            items = hit
            n = max(n - 1, 2)
            continue
        if chunk == 1:
            break
        n = min(len(items), 2 * n)
    return items


def minimize(case: dict, outcome: dict, pool: Pool, log=None, budget_s: float = 120.0) -> dict:
    """The smallest variant of ``case`` found that keeps ``outcome``'s signature."""
    sig = outcome.get("sig") or outcome["cls"]
    deadline = time.time() + budget_s

    def same(cands: list) -> list:
        outs = pool.map(cands)
        return [(o.get("sig") or o["cls"]) == sig for o in outs]

    if case["kind"] in ("check", "run"):
        data = unlatin1(case["ptx"])
        lines = data.split(b"\n")

        def with_lines(ls):
            return dict(case, ptx=latin1(b"\n".join(ls)))

        lines = _ddmin(lines, lambda cs: same([with_lines(c) for c in cs]), log, deadline)
        # tokens of each remaining line (whitespace-separated), then characters of short lines
        for unit in ("token", "char"):
            for j in range(len(lines)):
                if time.time() > deadline:
                    break
                parts = re.split(rb"(\s+)", lines[j]) if unit == "token" else [bytes([b]) for b in lines[j]]
                if unit == "char" and len(parts) > 80:
                    continue

                def test(cs, j=j):
                    return same([with_lines(lines[:j] + [b"".join(c)] + lines[j + 1:]) for c in cs])
                if len(parts) >= 2:
                    lines[j] = b"".join(_ddmin(parts, test, log, deadline))
        return with_lines(lines)
    if case["kind"] == "launch":
        keys = [("launch", k) for k in case.get("launch", {})] + [("run", k) for k in case.get("run", {})]

        def build(ks):
            return dict(case, launch={k: case["launch"][k] for s, k in ks if s == "launch"},
                        run={k: case["run"][k] for s, k in ks if s == "run"})
        keys = _ddmin(keys, lambda cs: same([build(c) for c in cs]), log, deadline) if len(keys) > 1 else keys
        return build(keys)
    if case["kind"] == "cli":
        argv = case["argv"]
        head, units = argv[:2], []
        for a in argv[2:]:                      # an option with its values is one unit
            if a.startswith("--") or not units:
                units.append([a])
            else:
                units[-1].append(a)
        if len(units) >= 2:
            units = _ddmin(units, lambda cs: same([dict(case, argv=head + sum(c, [])) for c in cs]), log, deadline)
        return dict(case, argv=head + sum(units, []))
    return case


# ============================================================================================ regression files

def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_")[:60]


def save_regression(case: dict, outcome: dict, folder: Path = REGRESSIONS) -> Path:
    """Write ``case`` (a minimised finding) as ``folder/<kind>_<signature>_<hash>.json`` (+ ``.ptx``)."""
    folder.mkdir(parents=True, exist_ok=True)
    body = {k: v for k, v in case.items() if k not in ("id", "_slot", "ptx", "time_limit")}
    h = hashlib.sha1(json.dumps(body, sort_keys=True).encode() + case.get("ptx", "").encode("latin-1")).hexdigest()[:8]
    name = f"{case['kind']}_{_slug(outcome.get('sig') or outcome['cls'])}_{h}"
    body["found"] = {"class": outcome["cls"], "sig": outcome.get("sig"), "detail": outcome.get("detail")}
    if "ptx" in case:
        (folder / f"{name}.ptx").write_bytes(unlatin1(case["ptx"]))
        body["ptx_file"] = f"{name}.ptx"
    (folder / f"{name}.json").write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
    return folder / f"{name}.json"


def load_regressions(folder: Path = REGRESSIONS) -> list:
    out = []
    for p in sorted(folder.glob("*.json")):
        body = json.loads(p.read_text())
        case = {k: v for k, v in body.items() if k not in ("found", "ptx_file")}
        if "ptx_file" in body:
            case["ptx"] = latin1((folder / body["ptx_file"]).read_bytes())
        case["id"] = p.name
        out.append(case)
    return out


def replay(folder: Path = REGRESSIONS, *, jobs: int = 1, time_limit: float = 20.0, mem: int = DEFAULT_MEM,
           log=None) -> list:
    """Run every regression file of ``folder``; the ``(case, outcome)`` pairs that are still findings."""
    bad = []
    with Pool(jobs, time_limit, mem) as pool:
        for c, o in pool.imap(load_regressions(folder)):
            if o["cls"] in FINDINGS:
                bad.append((c, o))
            if log:
                log(f"{c['id']}: {o['cls']} {o.get('detail', '')[:160]}")
    return bad
