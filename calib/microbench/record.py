"""Record the microbenchmarks on the GPU (or the simulator), install the record as golden data, and compare the
simulator with it.  ``python -m calib.microbench --help``; see ``calib/microbench/__init__.py``."""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time
from pathlib import Path

import numpy as np

from calib import pipeline as P
from calib.pipeline import META, RecordError as CliError

from . import analysis as A
from . import cases as C
from .run import ptx_sha, run_case, sass_listing

GOLDEN = P.GOLDEN_ROOT / "timing_h100"
DATA = "timings.npz"
#: the sm_90a timing parameters sim/timing applies (package data of tcsim.timing), written by ``fit``
MEASURED = P.PACKAGE_DATA / "measured_h100.json"


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


def record(cases, out: Path, backend: str, jobs: int, val_runs: int, command: str,
           sass_dir: Path | None = None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    prov = P.provenance(command)
    meta = {"backend": backend, "date": prov["date"], "command": command, "tcsim_version": prov["tcsim_version"],
            "reps": C.REPS, "chain": list(C.CHAIN), "validation_runs": val_runs}
    if backend == "gpu":
        meta.update(P.device_info())
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
        done = P.run_all(calib, one, max(1, jobs))              # one child process per launch
        done += [one(c) for c in valid]                         # whole kernels one at a time: nothing beside them
    else:                                                       # the simulator: independent runs in processes
        done = P.run_all(cases, one, max(1, jobs), processes=True)
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
    P.write_record(out, meta, arrays, DATA)
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
    return P.load_record(d, DATA, "a `python -m calib.microbench record --out DIR` folder")


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
    P.install_files([(src / f, f) for f in (META, DATA)], dest)
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
    P.write_record(dest, old, old_arrays, DATA)
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
    p.add_argument("--out", default=str(MEASURED), help=f"the file to write (default {MEASURED}); - prints")
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
            cmd = P.command_line("calib.microbench", argv)
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
            return fit_main(load(args.gpu)[0], None if args.out == "-" else Path(args.out))
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
