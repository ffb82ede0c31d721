"""Record fuzz programs' GPU outputs once, compare the simulator against them offline, as often as needed.

``python -m calib.fuzz.record gpu --seed S --count N --out FILE.npz [--gpu-workers W]`` (on a GPU machine)
    Runs programs ``S .. S+N-1`` (:func:`calib.fuzz.generator.generate`) on the GPU in batches and stores, for
    every program, a 128-bit hash of its output buffer (or its CUDA error); with ``--jobs J`` the simulator runs
    beside it and the whole GPU output (``s<seed>``) is kept for every program where they differ.  10,000
    programs take about 4 minutes on an H100 machine; the file is a few hundred kilobytes.

``python -m calib.fuzz.record compare --gpu FILE.npz [--jobs J] [--seeds A-B] [--differing] [--out DIR]`` (anywhere)
    Simulates every recorded program (``--differing``: those the simulator disagreed with when recorded) and
    compares bit for bit with the recorded GPU bytes (the comparison of ``python -m calib.fuzz --backend gpu``),
    or with the recorded hash where only that was kept; tries the verified explanations (calib/fuzz/explain.py) on
    each disagreement, marks those left whose program carries an isa/lint.py note (``noted:<checks>``: a diagnosed
    ptxas miscompilation), prints the mismatch classes and writes ``DIR/mismatches.json`` and
    ``DIR/unexplained.txt`` (the seeds neither explained nor noted, for ``python -m calib.fuzz.triage --seeds
    @DIR/unexplained.txt``).

``python -m calib.fuzz.record rerun --version V --seeds LIST --out FILE.npz [--gpu-timeout S]`` (on a GPU machine)
    Runs the listed programs of generator version ``V`` (``A-B``, ``A,B``, ``@FILE``) on the GPU again and keeps
    every whole output (``s<seed>``), beside its hash and any CUDA error: the bytes of disagreements a campaign
    record kept only the hash of, for the explanation search (:func:`rerun`).

``python -m calib.fuzz.record merge DST PART...`` / ``slim SRC DST --keep K [--per-part]`` (anywhere)
    Join the records of consecutive seed ranges made by several device calls on one card into one campaign record
    (each call's provenance in ``meta["parts"]``); keep only the first K whole outputs (of each part) for committing.

The generator is deterministic per seed, so the file plus this repository reproduce the campaign exactly; a
recording made by an older generator is detected (each program's input buffer is hashed into the file).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from calib import pipeline as P

from .explain import explain_program
from .generator import VERSION, generate
from .runner import Outcome, SimPool, ThreadBackends, classify, compare
from .triage import parse_seeds


def _digest(prog) -> str:
    h = hashlib.sha256(prog.render().encode())
    h.update(prog.input_buffer().tobytes())
    return h.hexdigest()[:16]


def _h(b: bytes) -> str:
    return P.sha256(b)[:32]


def record(seed: int, count: int, out: Path, gpu_workers: int = 4, batch: int = 64, log=print,
           driver: str = "cuda", jobs: int = 0, time_limit: float | None = None, keep_limit: int = 2000,
           command: str = "", sim_seconds: float | None = None, gpu_timeout: float = 60.0,
           checkpoint_s: float = 30.0, jit_timeout: float | None = None, chunk_sim_timeout: float = 120.0) -> dict:
    """Run programs on the GPU; keep the SHA-256 (128 bits) of every GPU output, and the whole output of every
    program whose simulator output (``jobs`` > 0: simulated here, in parallel) differs -- a complete record of
    a campaign in a few hundred kilobytes.

    Bounded in time, so that a call of a GPU machine always returns data: each simulation may take
    ``sim_seconds`` of simulator work (tcsim.watch; a program that outlasts it is a simulator error, ``BudgetExceeded``,
    and its GPU output is kept whole for a later look), each GPU program ``gpu_timeout`` seconds (then the GPU child
    is killed and restarted: ``TIMEOUT``), and ``time_limit`` is a deadline for the whole recording, honoured also
    while waiting for a chunk: the chunks finished by then are recorded (the seeds stay contiguous from ``seed``),
    ``meta["stopped"]`` says why.  The record is written every ``checkpoint_s`` seconds (``meta["partial"]``), so a
    call killed from outside still leaves the chunks done so far.  A chunk whose simulations have not all come back
    within ``chunk_sim_timeout`` goes on without them (``SIM_NOT_FINISHED``, the GPU outputs kept whole)."""
    from concurrent.futures import TimeoutError as FutureTimeout

    seeds = list(range(seed, seed + count))
    chunks = [seeds[i:i + batch] for i in range(0, len(seeds), batch)]
    per_thread = ThreadBackends(log, driver, timeout=gpu_timeout, jit_timeout=jit_timeout)
    backends = per_thread.all
    backend = per_thread.get
    pool = SimPool(jobs) if jobs else None
    t0 = time.time()
    deadline = t0 + time_limit if time_limit else None

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.time())

    def run(chunk):
        if deadline is not None and time.time() > deadline:
            return [], []
        progs = [made.pop(s) for s in chunk] if made else [generate(s) for s in chunk]
        # the programs themselves go to the simulator workers (generating a version-6 program again costs more
        # than sending it)
        sims = pool.map_async([("prog", p, (None,), sim_seconds) for p in progs]) if pool else None
        res = backend().run(progs)
        if sims is None:
            return progs, list(zip(res, [None] * len(progs)))
        # a chunk's simulations normally take seconds; a lost one (a simulator worker that died: the pool never
        # returns its task) must not hold the recording: after chunk_sim_timeout the chunk goes on without them
        wait = chunk_sim_timeout if deadline is None else min(chunk_sim_timeout, left())
        try:
            got = sims.get(timeout=wait)
        except mp.TimeoutError:
            got = [(Outcome(error=f"SIM_NOT_FINISHED (no simulator result for this chunk within {wait:.0f} s)"),
                    None)] * len(progs)
        return progs, list(zip(res, got))

    made: dict = {}
    if pool and pool.pool is not None:      # generating a version-3 program costs a parse: not on the GPU threads
        made.update(zip(seeds, pool.pool.map(generate, seeds, chunksize=64)))
        log(f"[record] {len(made)} programs generated, {time.time() - t0:.0f} s")
    arrays, meta = {}, {"seed": seed, "count": 0, "errors": {}, "digests": {}, "gpu_sha": {}, "sim_agrees": [],
                        "sim_errors": {}, "generator": VERSION, **P.provenance(command)}
    last_write = time.time()

    def write(partial: bool) -> None:
        meta["partial"] = partial
        meta["wall_s"] = round(time.time() - t0, 1)
        tmp = out.with_name(out.name + ".tmp.npz")
        P.write_packed(tmp, meta, arrays)
        tmp.replace(out)

    ex = ThreadPoolExecutor(gpu_workers)
    try:
        futs = [ex.submit(run, c) for c in chunks]
        for i, fut in enumerate(futs):
            try:
                progs, res = fut.result(timeout=left())
            except FutureTimeout:
                meta["stopped"] = f"deadline ({time_limit} s) reached waiting for chunk {i} (seed {chunks[i][0]})"
                log(f"[record] {meta['stopped']}")
                break
            if not progs:
                meta["stopped"] = f"deadline ({time_limit} s) reached before chunk {i} (seed {chunks[i][0]})"
                log(f"[record] {meta['stopped']}")
                break
            for p, (o, sim) in zip(progs, res):
                meta["count"] = max(meta["count"], p.seed - seed + 1)
                meta["digests"][str(p.seed)] = _digest(p)
                if not o.ok:
                    meta["errors"][str(p.seed)] = o.error
                    continue
                meta["gpu_sha"][str(p.seed)] = _h(o.output)
                so = sim[0] if sim is not None else None
                if so is not None and so.ok and so.output == o.output:
                    meta["sim_agrees"].append(p.seed)
                    continue
                if so is not None and not so.ok:
                    meta["sim_errors"][str(p.seed)] = so.error[:300]
                if len(arrays) < keep_limit:
                    arrays[f"s{p.seed}"] = np.frombuffer(o.output, dtype=np.uint8)
            if i % 20 == 0:
                log(f"[record] {meta['count']} programs, {len(arrays)} kept whole, {time.time() - t0:.0f} s")
            if time.time() - last_write > checkpoint_s:
                write(True)
                last_write = time.time()
    finally:
        ex.shutdown(wait=False, cancel_futures=True)
        for b in backends:
            meta["device"] = meta.get("device") or (b.info or {}).get("name")
            try:
                b.close()
            except Exception as e:  # noqa: BLE001 - a GPU child another thread still uses: the record comes first
                log(f"[record] closing a GPU child: {type(e).__name__}: {e}")
        if pool:
            pool.close()
        write(False)
    log(f"[record] {meta['count']} programs on {meta.get('device')} in {meta['wall_s']} s: {len(meta['errors'])} GPU "
        f"errors, {len(meta['sim_errors'])} simulator errors, {len(arrays)} outputs kept whole (simulator "
        f"disagreed) -> {out}" + (f"; stopped: {meta['stopped']}" if meta.get("stopped") else ""))
    return meta


def rerun(seeds: list, version: int, out: Path, gpu_timeout: float = 20.0, jit_timeout: float = 60.0,
          jobs: int = 1, batch: int = 32, command: str = "", log=print, driver: str = "cuda") -> dict:
    """Run programs ``seeds`` of generator ``version`` on the GPU and write a record that keeps every whole output:
    ``meta`` as a campaign record's (``generator``, ``gpu_sha``, ``errors``, ``digests``, ``device``, provenance)
    with ``seeds`` instead of a contiguous range, and ``s<seed>`` for each output."""
    import functools

    t0 = time.time()
    gen = functools.partial(generate, version=version)
    if jobs > 1:
        with mp.get_context("fork").Pool(jobs) as pool:
            progs = pool.map(gen, seeds, chunksize=4)
    else:
        progs = [gen(s) for s in seeds]
    log(f"[rerun] {len(progs)} programs of generator {version} generated, {time.time() - t0:.0f} s")
    gpu = ThreadBackends(log, driver, timeout=gpu_timeout, jit_timeout=jit_timeout).get()
    meta = {"seeds": list(seeds), "generator": version, "errors": {}, "digests": {}, "gpu_sha": {},
            **P.provenance(command)}
    arrays: dict = {}
    try:
        for i in range(0, len(progs), batch):
            part = progs[i:i + batch]
            for p, o in zip(part, gpu.run(part)):
                meta["digests"][str(p.seed)] = _digest(p)
                if o.ok:
                    meta["gpu_sha"][str(p.seed)] = _h(o.output)
                    arrays[f"s{p.seed}"] = np.frombuffer(o.output, dtype=np.uint8)
                else:
                    meta["errors"][str(p.seed)] = o.error
            log(f"[rerun] {min(i + batch, len(progs))} programs run, {time.time() - t0:.0f} s")
    finally:
        meta["device"] = (gpu.info or {}).get("name")
        gpu.close()
        meta["wall_s"] = round(time.time() - t0, 1)
        P.write_packed(out, meta, arrays)
    log(f"[rerun] {len(arrays)} outputs, {len(meta['errors'])} GPU errors on {meta['device']} -> {out}")
    return meta


def load(path: Path):
    """(the open .npz, its meta) of a campaign record."""
    return P.load_packed(path)


def _explain_task(args):
    """(seed, generator version, GPU output bytes or its recorded hash) -> explanation or None."""
    seed, version, gpu = args
    prog = generate(seed, version=version)
    if isinstance(gpu, str):
        return explain_program(prog, lambda b: _h(b) == gpu)
    return explain_program(prog, gpu)


def noted_checks(prog) -> list:
    """Names of the isa/lint.py checks that note an instruction of ``prog`` (each a diagnosed ptxas 13.0
    miscompilation with its minimised reproducer in tests/fuzz_regressions)."""
    from tcsim.isa.lint import CHECKS, notes
    from tcsim.isa.parser import parse

    module = parse(prog.render())
    return [name for name in CHECKS if notes(module, checks=[name])]


def compare_recording(path: Path, jobs: int = 2, seeds=None, log=print, time_limit: float | None = None) -> list:
    """Re-simulate the recorded programs (``seeds``: a subset), list every disagreement with its class and try the
    verified explanations on each.  ``time_limit`` (s): explanations not finished by then keep their plain class
    (``value:...``), each marked ``"explained": "not tried (time limit)"``."""
    z, meta = load(path)
    gv = meta.get("generator", 1)
    all_seeds = range(meta["seed"], meta["seed"] + meta["count"])
    todo = [s for s in all_seeds if seeds is None or s in seeds]
    pool = SimPool(jobs)
    found: list = []
    explain_todo: list = []
    t0 = time.time()
    try:
        for i in range(0, len(todo), 256):
            chunk = todo[i:i + 256]
            res = pool.map_async([("seed", (s, gv), (None,)) for s in chunk]).get()
            for s, (so, _sched) in zip(chunk, res):
                prog = generate(s, version=gv)
                if meta["digests"].get(str(s)) != _digest(prog):
                    raise SystemExit(f"{path}: program {s} was recorded from a different generator; re-record")
                key = f"s{s}"
                if key in z.files:
                    go = Outcome(output=bytes(z[key]))
                elif str(s) in meta["errors"]:
                    go = Outcome(error=meta["errors"][str(s)])
                elif str(s) in meta["gpu_sha"]:         # only the GPU output's 128-bit hash
                    sha = meta["gpu_sha"][str(s)]
                    if so.ok and _h(so.output) == sha:
                        continue
                    found.append({"seed": s, "kind": "value", "class": "value:hash",
                                  "detail": "output differs from the recorded GPU output's hash" if so.ok
                                  else f"simulator error: {so.error[:300]}"})
                    if so.ok:
                        explain_todo.append((len(found) - 1, (s, gv, sha)))
                    continue
                else:
                    continue                            # not run (time limit)
                m = compare(prog, so, go)
                if m is not None:
                    found.append({"seed": s, "kind": m.kind, "class": classify(m), "detail": m.detail[:400]})
                    if go.ok:
                        explain_todo.append((len(found) - 1, (s, gv, go.output)))
            log(f"[compare] {i + len(chunk)}/{len(todo)} programs, {len(found)} mismatches, "
                f"{time.time() - t0:.0f} s")
        tasks = [t for _, t in explain_todo]
        deadline = t0 + time_limit if time_limit else None
        whys: list = [None] * len(tasks)
        if pool.pool is not None:
            pending = [pool.pool.apply_async(_explain_task, (t,)) for t in tasks]
            for j, r in enumerate(pending):
                try:
                    whys[j] = r.get(timeout=None if deadline is None else max(0.0, deadline - time.time()))
                except mp.TimeoutError:
                    for jj in range(j, len(pending)):
                        if pending[jj].ready():
                            whys[jj] = pending[jj].get()
                        else:
                            found[explain_todo[jj][0]]["explained"] = "not tried (time limit)"
                    break
        else:
            for j, t in enumerate(tasks):
                if deadline is not None and time.time() > deadline:
                    for k, _ in explain_todo[j:]:
                        found[k]["explained"] = "not tried (time limit)"
                    break
                whys[j] = _explain_task(t)
        for (k, _), why in zip(explain_todo, whys):
            if why:
                found[k]["class"] = why
        for f in found:             # not explained: does it carry a note of a diagnosed ptxas miscompilation?
            if not f["class"].startswith("diagnosed:"):
                noted = noted_checks(generate(f["seed"], version=gv))
                if noted:
                    f["class"] = "noted:" + ",".join(noted)
        log(f"[compare] {sum(1 for w in whys if w)} of {len(found)} mismatches explained, "
            f"{sum(1 for f in found if f['class'].startswith('noted:'))} lint-noted, {time.time() - t0:.0f} s")
    finally:
        pool.close()
    return found


def slim(src: Path, dst: Path, keep: int = 300, per_part: bool = False) -> dict:
    """Copy a recording keeping every hash but only the first ``keep`` whole GPU outputs (for committing);
    ``per_part``: the first ``keep`` of each part of a merged recording (:func:`merge`), so that each device call's
    disagreements stay represented.  ``whole_dropped`` counts every whole output the file no longer holds (those
    an earlier slim dropped included)."""
    z, meta = load(src)
    names = sorted((k for k in z.files if k.startswith("s")), key=lambda k: int(k[1:]))
    if per_part and meta.get("parts"):
        whole = []
        for p in meta["parts"]:
            whole += [k for k in names if p["seed"] <= int(k[1:]) < p["seed"] + p["count"]][:keep]
    else:
        whole = names[:keep]
    meta = dict(meta, whole_kept=len(whole),
                whole_dropped=meta.get("whole_dropped", 0) + len(names) - len(whole))
    P.write_packed(dst, meta, {k: z[k] for k in whole})
    return meta


#: what belongs to one device call, not to a campaign of several: moved from the top of a merged record into its
#: ``parts`` entries
PER_PART = ("seed", "count", "device", "device_note", "wall_s", "command", "date", "driver", "host", "partial",
            "stopped", "tcsim_version", "whole_kept", "whole_dropped")


def merge(parts: list, dst: Path) -> dict:
    """One recording of consecutive parts (each recorded by one device call: ``gpu --seed S --count N``), as if
    recorded at once: hashes, errors, simulator errors, whole outputs and agreeing seeds joined; each part's
    provenance (command, date, device, whether it was a checkpoint, whole outputs kept and dropped) in
    ``meta["parts"]``.  The merged ``device`` is the parts' common device (a part that does not name one -- a
    checkpoint written before the device was known -- takes it from the others); parts made on different cards
    refuse to merge (a record file name says its card)."""
    loaded = sorted((load(Path(p)) for p in parts), key=lambda zm: zm[1]["seed"])
    first = loaded[0][1]
    devices = {m["device"] for _, m in loaded if m.get("device")}
    if len(devices) > 1:
        raise P.RecordError(f"parts were recorded on different GPUs ({', '.join(sorted(devices))}): not one campaign")
    meta = {k: v for k, v in first.items() if k not in PER_PART}
    meta.update(seed=first["seed"], digests={}, gpu_sha={}, errors={}, sim_errors={}, sim_agrees=[], parts=[])
    if devices:
        meta["device"] = devices.pop()
    arrays: dict = {}
    nxt = first["seed"]
    for z, m in loaded:
        if m["seed"] != nxt or m.get("generator", 1) != first.get("generator", 1):
            raise P.RecordError(f"parts are not consecutive recordings of one generator: a part starts at "
                                f"{m['seed']}, expected {nxt}")
        nxt = m["seed"] + m["count"]
        for k in ("digests", "gpu_sha", "errors", "sim_errors"):
            meta[k].update(m.get(k, {}))
        meta["sim_agrees"] += m["sim_agrees"]
        whole = [k for k in z.files if k.startswith("s")]
        part = {k: m[k] for k in PER_PART if k in m}
        part.setdefault("whole_kept", len(whole))
        part.setdefault("whole_dropped", 0)
        meta["parts"].append(part)
        arrays.update({k: z[k] for k in whole})
    meta["count"] = nxt - first["seed"]
    meta["wall_s"] = round(sum(m.get("wall_s", 0) for _, m in loaded), 1)
    meta["whole_kept"] = len(arrays)
    meta["whole_dropped"] = sum(p["whole_dropped"] for p in meta["parts"])
    P.write_packed(dst, meta, arrays)
    return meta


def differing_seeds(meta: dict) -> list:
    """The seeds of a campaign record on which the simulator did not reproduce the GPU (outputs or errors)."""
    agree = set(meta["sim_agrees"])
    return sorted(int(s) for s in list(meta["gpu_sha"]) + list(meta["errors"]) if int(s) not in agree)


def main(argv=None) -> int:
    try:
        return _main(argv)
    except P.RecordError as e:            # a file that is no campaign record: one line, no traceback
        print(f"calib.fuzz.record: {e}", file=sys.stderr)
        return 2


def _main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m calib.fuzz.record", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gpu")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--count", type=int, default=10000)
    g.add_argument("--out", required=True)
    g.add_argument("--gpu-workers", type=int, default=4)
    g.add_argument("--jobs", type=int, default=0, help="simulator processes (outputs kept only where it differs)")
    g.add_argument("--time-limit", type=float, default=None)
    g.add_argument("--keep-limit", type=int, default=2000,
                   help="at most this many whole GPU outputs (a version-6 warpgroup program's is ~80 KB)")
    g.add_argument("--sim-seconds", type=float, default=20.0,
                   help="simulator work one program may take (then it is a simulator error, kept whole)")
    g.add_argument("--gpu-timeout", type=float, default=20.0, help="seconds one GPU program may take")
    g.add_argument("--jit-timeout", type=float, default=90.0,
                   help="seconds the driver's JIT of one batch may take (then the batch is split to find the slow one)")
    g.add_argument("--batch", type=int, default=64, help="programs per GPU module (one JIT)")
    rr = sub.add_parser("rerun")
    rr.add_argument("--version", type=int, required=True, help="the generator version of the programs")
    rr.add_argument("--seeds", required=True, type=parse_seeds,
                    help="A-B (inclusive), a comma-separated list, or @FILE")
    rr.add_argument("--out", required=True)
    rr.add_argument("--gpu-timeout", type=float, default=20.0)
    rr.add_argument("--jit-timeout", type=float, default=60.0)
    rr.add_argument("--jobs", type=int, default=1, help="processes generating the programs")
    mg = sub.add_parser("merge")
    mg.add_argument("dst")
    mg.add_argument("parts", nargs="+")
    sl = sub.add_parser("slim")
    sl.add_argument("src")
    sl.add_argument("dst")
    sl.add_argument("--keep", type=int, default=300)
    sl.add_argument("--per-part", action="store_true",
                    help="keep the first KEEP whole outputs of each part of a merged recording")
    c = sub.add_parser("compare")
    c.add_argument("--gpu", required=True)
    c.add_argument("--jobs", type=int, default=2)
    c.add_argument("--seeds", default=None, type=parse_seeds,
                   help="A-B (inclusive), a comma-separated list, or @FILE")
    c.add_argument("--differing", action="store_true",
                   help="only the programs the simulator disagreed with when the campaign was recorded")
    c.add_argument("--out", default=None)
    c.add_argument("--time-limit", type=float, default=None,
                   help="seconds for the whole compare: explanations not finished by then are marked not tried")
    args = ap.parse_args(argv)
    if args.cmd == "merge":
        meta = merge(args.parts, Path(args.dst))
        print(f"{meta['count']} programs from {len(args.parts)} parts ({meta.get('device')}), "
              f"{len(differing_seeds(meta))} differing, {meta['whole_kept']} whole outputs -> {args.dst}")
        return 0
    if args.cmd == "rerun":
        from tcsim.hw.launcher import gpu_available
        ok, why = gpu_available()
        if not ok:
            print(f"calib.fuzz.record: no GPU here ({why})", file=sys.stderr)
            return 2
        meta = rerun(args.seeds, args.version, Path(args.out), args.gpu_timeout, args.jit_timeout, args.jobs,
                     command=P.command_line("calib.fuzz.record", argv), log=lambda m: print(m, flush=True))
        return 0 if not meta["errors"] else 1
    if args.cmd == "slim":
        meta = slim(Path(args.src), Path(args.dst), args.keep, per_part=args.per_part)
        print(f"kept {meta['whole_kept']} whole outputs, dropped {meta['whole_dropped']}; {len(meta['gpu_sha'])} hashes")
        return 0
    if args.cmd == "gpu":
        from tcsim.hw.launcher import gpu_available
        ok, why = gpu_available()
        if not ok:                        # before generating anything: one line, no traceback, no record
            print(f"calib.fuzz.record: no GPU here ({why})", file=sys.stderr)
            return 2
        meta = record(args.seed, args.count, Path(args.out), args.gpu_workers, batch=args.batch, jobs=args.jobs,
                      time_limit=args.time_limit, keep_limit=args.keep_limit,
                      command=P.command_line("calib.fuzz.record", argv), sim_seconds=args.sim_seconds,
                      gpu_timeout=args.gpu_timeout, jit_timeout=args.jit_timeout, log=lambda m: print(m, flush=True))
        if meta.get("stopped"):
            # worker threads may still wait on a GPU child or the simulator pool: the record is written, leave now
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0 if not meta["errors"] else 1)
        return 0 if not meta["errors"] else 1
    seeds = set(args.seeds) if args.seeds else None
    if args.differing:
        _, meta = load(Path(args.gpu))
        differing = set(differing_seeds(meta))
        seeds = differing if seeds is None else seeds & differing
    found = compare_recording(Path(args.gpu), args.jobs, seeds, log=lambda m: print(m, flush=True),
                              time_limit=args.time_limit)
    classes: dict = {}
    for f in found:
        classes[f["class"]] = classes.get(f["class"], 0) + 1
    for c_, n in sorted(classes.items(), key=lambda kv: -kv[1]):
        print(f"{n:6d}  {c_}")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "mismatches.json").write_text(json.dumps(found, indent=1))
        (Path(args.out) / "unexplained.txt").write_text(",".join(str(f["seed"]) for f in found
                                                                 if not f["class"].startswith(("diagnosed:", "noted:"))) + "\n")
    n_expl = sum(1 for f in found if f["class"].startswith("diagnosed:"))
    n_noted = sum(1 for f in found if f["class"].startswith("noted:"))
    print(f"{len(found)} mismatches: {n_expl} explained bit for bit, {n_noted} carry a lint note of a diagnosed "
          f"ptxas miscompilation, {len(found) - n_expl - n_noted} unexplained")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
