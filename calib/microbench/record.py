"""Record the microbenchmarks on the GPU (or the simulator), install the record as golden data, and compare the
simulator with it.  ``python -m calib.microbench --help``; see ``calib/microbench/__init__.py``."""
from __future__ import annotations

import argparse
import datetime as _dt
import fnmatch
import json
import re
import shlex
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from calib.golden import sha256
from tcsim.isa import ptxas

from . import analysis as A
from . import cases as C

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "timing_h100"
META, DATA = "meta.json", "timings.npz"


class CliError(Exception):
    """Bad command-line input: printed as one line."""


def select(globs) -> list:
    if not globs:
        return list(C.CASES.values())
    out = []
    for g in globs:
        hit = [c for n, c in C.CASES.items() if fnmatch.fnmatchcase(n, g)]
        if not hit:
            raise CliError(f"no case matches {g!r} (python -m calib.microbench list)")
        out += [c for c in hit if c not in out]
    return out


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
        if backend == "gpu":
            from tcsim.hw.launcher import run_on_gpu
            res = run_on_gpu(launch, timeout=60)
            if not res.ok:
                entry.update(status=res.error, detail=res.error_detail)
                return entry, {}
            results.append((res.outputs, res.elapsed_ms))
        else:
            from tcsim.launch import run_launch
            results.append((run_launch(launch, seed=None if timing else 0, timing=timing).outputs, None))
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


def device_info() -> dict:
    from tcsim.hw.launcher import probe
    info = probe()
    return {"gpu": info["name"], "compute_capability": f"{info['cc'][0]}.{info['cc'][1]}",
            "driver_version": info["driver"]}


def record(cases, out: Path, backend: str, jobs: int, val_runs: int, command: str,
           sass_dir: Path | None = None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    meta = {"backend": backend, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "command": command, "reps": C.REPS, "chain": list(C.CHAIN), "validation_runs": val_runs}
    if backend == "gpu":
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(1) as pool:
            meta.update(pool.apply(device_info))
    arrays: dict = {}
    entries: dict = {}

    def one(case):
        try:
            return run_case(case, backend, val_runs)
        except Exception as e:  # noqa: BLE001 - recorded per case, the record goes on
            return {"name": case.name, "group": case.group, "kind": case.kind, "params": case.params,
                    "ptx_sha256": ptx_sha(case), "status": "HARNESS_ERROR",
                    "detail": f"{type(e).__name__}: {e}"}, {}

    calib = [c for c in cases if c.kind == "calibration"]
    valid = [c for c in cases if c.kind == "validation"]
    if backend == "gpu":
        with ThreadPoolExecutor(max(1, jobs)) as ex:            # one child process per launch
            done = list(ex.map(one, calib))
        done += [one(c) for c in valid]                         # whole kernels one at a time: nothing beside them
    else:
        done = [one(c) for c in cases]
    for (entry, arrs), case in zip(done, calib + valid if backend == "gpu" else cases):
        entries[case.name] = entry
        arrays.update(arrs)
        print(f"{case.name:32s} {entry['status']:10s} {summary_line(entry)}", flush=True)
    if sass_dir is not None:
        for case in cases:
            listing = sass_listing(case.ptx())
            if listing is None:
                print("no ptxas/cuobjdump here: no SASS listings", flush=True)
                break
            sass_dir.mkdir(parents=True, exist_ok=True)
            (sass_dir / f"{case.name}.sass").write_text(listing)
    meta["cases"] = entries
    meta["wall_s"] = round(time.time() - t0, 1)
    np.savez_compressed(out / DATA, **arrays)
    (out / META).write_text(json.dumps(meta, indent=1) + "\n")
    bad = [n for n, e in entries.items() if e["status"] != "ok" or not all(e.get("correct", [True]))]
    print(f"recorded {len(entries)} cases in {meta['wall_s']} s -> {out}; not ok: {bad or 'none'}")
    return meta


def summary_line(e: dict) -> str:
    if e["status"] != "ok":
        return e.get("detail", "")[:100]
    if e["kind"] == "calibration":
        return " ".join(f"{k}={_fmt(v)}" for k, v in e["values"].items())
    return f"cycles={e['median_cta_cycles']} correct={all(e['correct'])}"


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


# ------------------------------------------------------------------------------------------------ install
def load(d: Path) -> tuple:
    d = Path(d)
    if not (d / META).is_file() or not (d / DATA).is_file():
        raise CliError(f"{d} holds no {META} + {DATA} (a `python -m calib.microbench record --out DIR` folder)")
    meta = json.loads((d / META).read_text())
    with np.load(d / DATA) as z:
        arrays = {k: z[k] for k in z.files}
    return meta, arrays


def install(src: Path, dest: Path, merge: bool = False) -> None:
    """Copy the GPU record ``src`` to ``dest``; ``merge``: add its cases to the record already there instead."""
    meta, _ = load(src)
    if meta.get("backend") != "gpu":
        raise CliError(f"{src} was recorded on the {meta.get('backend')} back end, not the GPU")
    stale = [n for n, e in meta["cases"].items() if n in C.CASES and e["ptx_sha256"] != ptx_sha(C.CASES[n])]
    if stale:
        raise CliError(f"the PTX of {len(stale)} cases changed since this record ({stale[:3]}...); re-record")
    if merge:
        return _merge(src, dest)
    dest.mkdir(parents=True, exist_ok=True)
    for f in (META, DATA):
        shutil.copyfile(src / f, dest / f)
    print(f"installed {len(meta['cases'])} cases ({meta['gpu']}, {meta['date']}) -> {dest}")


def _merge(src: Path, dest: Path) -> None:
    """Add (or replace) the cases of the GPU record ``src`` in the installed record ``dest``; every other case,
    its raw samples and the record's own provenance stay as they are.  Each merged case carries its own
    provenance (``recorded``: the record command, date, GPU, driver); ``merged`` lists the merges."""
    meta, arrays = load(src)
    old, old_arrays = load(dest)
    for k in ("reps", "chain"):
        if meta.get(k) != old.get(k):
            raise CliError(f"{src} was recorded with {k}={meta.get(k)}, {dest} with {old.get(k)}: re-record all")
    if meta.get("gpu") != old.get("gpu"):
        raise CliError(f"{src} is from {meta.get('gpu')}, {dest} from {old.get('gpu')}")
    prov = {k: meta.get(k) for k in ("command", "date", "gpu", "driver_version", "wall_s")}
    names = list(meta["cases"])
    for n in names:
        old["cases"][n] = dict(meta["cases"][n], recorded=prov)
        old_arrays = {k: v for k, v in old_arrays.items() if k != n and not k.startswith(n + ":run")}
    old_arrays.update({k: v for k, v in arrays.items() if k.split(":run")[0] in meta["cases"]})
    old.setdefault("merged", []).append(dict(prov, cases=names))
    np.savez_compressed(dest / DATA, **old_arrays)
    (dest / META).write_text(json.dumps(old, indent=1) + "\n")
    print(f"merged {len(names)} cases ({meta['gpu']}, {meta['date']}) into {dest}: {len(old['cases'])} cases")


# ------------------------------------------------------------------------------------------------ sim
def compare(cases, gpu_dir: Path | None, timing: bool = False) -> int:
    """Simulate every case and print simulated vs measured values; the validation set's MAPE at the end.
    ``timing``: the simulator's cycle-approximate model (else one cycle per instruction)."""
    meta = load(gpu_dir)[0] if gpu_dir else {"cases": {}}
    rows, errs = [], []
    for case in cases:
        e_sim, _ = run_case(case, "sim", 1, timing)
        e_gpu = meta["cases"].get(case.name)
        if e_gpu is not None and e_gpu.get("ptx_sha256") != e_sim["ptx_sha256"]:
            e_gpu = dict(e_gpu, status="STALE")
        if e_sim["status"] != "ok":
            rows.append((case.name, "-", "-", e_sim["status"], e_sim.get("detail", "")[:60]))
            continue
        if case.kind == "calibration":
            for k, sv in e_sim["values"].items():
                if k in ("bytes", "sass_fold"):                  # parameters, not measurements
                    continue
                gv = e_gpu["values"].get(k) if e_gpu and e_gpu["status"] == "ok" else None
                rows.append((case.name, k, _fmt(gv) if gv is not None else "-", _fmt(sv),
                             f"{sv / gv:.2f}x" if gv else ""))
        else:
            sv = e_sim["cycles"]
            gv = e_gpu["cycles"] if e_gpu and e_gpu["status"] == "ok" else None
            err = "" if gv is None else f"{100 * (sv - gv) / gv:+.1f}%"
            if gv:
                errs.append(abs(sv - gv) / gv)
            rows.append((case.name, "cycles/CTA", _fmt(gv) if gv else "-", _fmt(sv), err))
    w = [max(len(str(r[i])) for r in rows + [("case", "value", "measured", "simulated", "sim/meas")])
         for i in range(5)]
    hdr = ("case", "value", "measured", "simulated", "sim/meas")
    for r in [hdr] + rows:
        print("  ".join(str(x).ljust(w[i]) for i, x in enumerate(r)))
    if errs:
        print(f"validation set ({'timing model' if timing else 'one cycle per instruction'}): mean absolute "
              f"percentage error {100 * np.mean(errs):.1f}% over {len(errs)} kernels")
    elif gpu_dir is None:
        print("(no GPU record: simulator values only)")
    return 0


def show(d: Path) -> int:
    meta, _ = load(d)
    print(f"{meta.get('gpu', meta.get('backend'))}, driver {meta.get('driver_version')}, {meta['date']}")
    for n, e in meta["cases"].items():
        print(f"{n:32s} {e['status']:8s} {summary_line(e)}")
    return 0


# ------------------------------------------------------------------------------------------------ CLI
def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m calib.microbench",
                                 description="clock64 microbenchmarks and validation kernels for the H100")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="list the cases")
    p.add_argument("-v", action="store_true")
    p = sub.add_parser("ptx", help="print a case's PTX")
    p.add_argument("case")
    p = sub.add_parser("record", help="run the cases and write DIR/meta.json + DIR/timings.npz")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--backend", choices=("gpu", "sim"), default="gpu")
    p.add_argument("--case", action="append")
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--val-runs", type=int, default=3)
    p.add_argument("--sass-dir", type=Path, default=None, help="also write each kernel's SASS listing there")
    p = sub.add_parser("install", help="copy a GPU record into tests/golden/timing_h100")
    p.add_argument("--gpu", type=Path, required=True)
    p.add_argument("--dest", type=Path, default=GOLDEN)
    p.add_argument("--merge", action="store_true", help="add the record's cases (e.g. one made with --case) to "
                   "the record in --dest, keeping every other case as it is")
    p = sub.add_parser("sim", help="simulate the cases and print simulated vs measured cycles")
    p.add_argument("--gpu", type=Path, default=None, help=f"a record folder (default {GOLDEN} when it exists)")
    p.add_argument("--case", action="append")
    p.add_argument("--timing", action="store_true", help="the simulator's timing model (default: 1 cycle/instr)")
    p = sub.add_parser("params", help="the sm_90a timing parameters a record gives directly, as JSON (the format "
                       "of sim/timing/data/measured_h100.json, which sim/timing applies)")
    p.add_argument("--gpu", type=Path, default=GOLDEN)
    p.add_argument("--out", type=Path, default=None, help="write there instead of printing")
    p = sub.add_parser("fit", help="fit the sm_90a timing parameters on the calibration cases (simulating them) "
                       "and write the override file sim/timing applies (sim/timing/data/measured_h100.json)")
    p.add_argument("--gpu", type=Path, default=GOLDEN)
    p.add_argument("--out", type=Path, default=None, help="write there instead of printing")
    p = sub.add_parser("show", help="print a record's values")
    p.add_argument("--gpu", type=Path, default=GOLDEN)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "list":
            for c in C.CASES.values():
                print(f"{c.name:32s} {c.kind:11s} {c.group:9s}" + (f" {c.params} {c.note}" if args.v else ""))
            return 0
        if args.cmd == "ptx":
            if args.case not in C.CASES:
                raise CliError(f"no case {args.case!r} (python -m calib.microbench list)")
            print(C.CASES[args.case].ptx(), end="")
            return 0
        if args.cmd == "record":
            if args.jobs < 1 or args.val_runs < 1:
                raise CliError("--jobs and --val-runs must be at least 1")
            cmd = "python -m calib.microbench " + " ".join(shlex.quote(a) for a in argv)
            meta = record(select(args.case), args.out, args.backend, args.jobs, args.val_runs, cmd, args.sass_dir)
            return 0 if all(e["status"] == "ok" for e in meta["cases"].values()) else 1
        if args.cmd == "install":
            install(args.gpu, args.dest, args.merge)
            return 0
        if args.cmd == "sim":
            gpu = args.gpu if args.gpu is not None else (GOLDEN if (GOLDEN / META).exists() else None)
            return compare(select(args.case), gpu, args.timing)
        if args.cmd == "show":
            return show(args.gpu)
        if args.cmd == "fit":
            from .fit import main as fit_main
            return fit_main(load(args.gpu)[0], args.out)
        if args.cmd == "params":
            text = json.dumps(A.direct_params(load(args.gpu)[0]), indent=1) + "\n"
            if args.out:
                args.out.write_text(text)
            else:
                print(text, end="")
            return 0
    except CliError as e:
        print(f"calib.microbench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - e.g. GpuUnavailable: one line, no traceback
        if type(e).__name__ == "GpuUnavailable":
            print(f"calib.microbench: no GPU here: {e}", file=sys.stderr)
            return 2
        raise
    return 0
