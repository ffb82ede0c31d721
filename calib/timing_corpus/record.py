"""Run the corpus on the GPU or on the simulator and write a record (``meta.json`` + ``timings.npz``).

GPU: each kernel runs ``reps`` times; every repetition is its own launch of a freshly built instrumented copy
(own argument buffers, own module), in order on one stream of one child process per batch of kernels
(:func:`tcsim.hw.launcher.run_sequence_on_gpu`: nothing runs beside a kernel); a batch that fails is re-run kernel
by kernel, so one faulting kernel costs only its own record.  Kernels whose output comes back only through a TMA
store to a tensor of its own (``Kernel.own_process``) run each repetition alone (:func:`run_on_gpu`).  The cycles
of a repetition: ``max(exit) - min(entry)`` over the CTA's threads; the kernel's value: the median over
repetitions.  Every repetition's outputs are checked.

Simulator: one run per kernel with sim/timing's cycle-approximate model (the simulator is deterministic).

The SASS of every instrumented kernel (ptxas + cuobjdump of the sm_90a cubin, :func:`calib.microbench.record.
sass_listing`) goes to ``--sass-dir`` when given.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from calib import pipeline as P
from calib.microbench import cases as C
from tcsim.launch import Launch

from . import kernels as K
from .split import split_of

DATA = "timings.npz"


class CorpusLaunch(Launch):
    """A launch whose parsed module comes from the process's program cache: the repetitions of one kernel share
    one parse on the GPU side too (the GPU back end parses the PTX to lay out the parameters)."""

    def module(self):
        return self.shared_module()


def names() -> list:
    """Every corpus kernel, microbench validation kernels last."""
    return [k.name for k in K.KERNELS] + list(K.MICROBENCH_VALIDATION)


def source_of(name: str) -> str:
    return "microbench" if name in K.MICROBENCH_VALIDATION else K.BY_NAME[name].source


def build(name: str) -> tuple:
    """(instrumented launch, index of its clock buffer, check(outputs) -> (ok, message))."""
    if name in K.MICROBENCH_VALIDATION:
        case = C.CASES[name]
        launch = case.build()
        return launch, C.clk_index(case, launch), lambda outs: C.check_validation(case, launch, outs)
    k = K.BY_NAME[name]
    plain = k.plain_launch()
    text = instrument(plain.ptx_text()[0], k.entry, plain.block)
    clk = np.zeros((plain.block[0] * plain.block[1] * plain.block[2], 2), dtype=np.uint64)
    args = list(plain.args) + [clk]
    launch = CorpusLaunch(ptx=text, kernel=k.entry, grid=plain.grid, block=plain.block,
                          dynamic_smem=plain.dynamic_smem, args=args, name=name)
    return launch, len(args) - 1, lambda outs: k.check(args, outs)


_TID = "\tmov.u32 \t%__mb_a, %tid.x;\n"


def instrument(ptx: str, entry: str, block: tuple) -> str:
    """:func:`calib.microbench.cases.instrument_clock` (the text it makes for a 1-D block, unchanged); for a 2-D
    block the clock slot of a thread is its linear index ``tid.x + ntid.x * tid.y`` (the microbench helper uses
    ``tid.x`` alone, which gives the threads of one column one slot and leaves the others' slots 0)."""
    text = C.instrument_clock(ptx, entry)
    if block[2] != 1:
        raise ValueError(f"{entry}: 3-D blocks are not instrumented")
    if block[1] == 1:
        return text
    if text.count(_TID) != 1:
        raise ValueError(f"{entry}: unexpected clock epilogue")
    return text.replace(_TID, "\tmov.u32 \t%__mb_a, %tid.y;\n\tmov.u32 \t%__mb_b, %ntid.x;\n"
                              "\tmov.u32 \t%__mb_c, %tid.x;\n\tmad.lo.u32 \t%__mb_a, %__mb_a, %__mb_b, %__mb_c;\n")


def cycles_of(launch, clk) -> int:
    """max(exit) - min(entry) over the threads of the (one-CTA, or first) CTA; the 2-CTA microbench kernels: the
    mean over CTAs (as calib/microbench's ``cycles``)."""
    nthreads = launch.block[0] * launch.block[1] * launch.block[2]
    clk = np.asarray(clk, dtype=np.uint64).reshape(launch.grid[0], nthreads, 2)
    per = [int(clk[i, :, 1].max()) - int(clk[i, :, 0].min()) for i in range(launch.grid[0])]
    return float(np.mean(per))


def _outcome(name, launch, k, check, outputs) -> dict:
    ok, msg = check(outputs)
    return {"cycles": cycles_of(launch, outputs[k]), "correct": bool(ok), "check": msg}


def run_sim(name: str, cfg=None) -> dict:
    """One simulator run of ``name`` with sim/timing's model (``cfg``: an ArchConfig to run under instead of the
    kernel's target's)."""
    launch, k, check = build(name)
    res = P.execute(launch, "sim", timeout=600, seed=None, timing=True if cfg is None else cfg)
    if not res.ok:
        return {"status": res.error, "detail": res.detail[:500]}
    o = _outcome(name, launch, k, check, res.outputs)
    return {"status": "ok", "cycles": [o["cycles"]], "correct": [o["correct"]], "check": o["check"]}


def _gpu_sequence(items, reps: int, timeout: float) -> dict:
    """{name: entry} for ``items`` [(name, ...)], all repetitions in one child process."""
    from tcsim.hw.launcher import run_sequence_on_gpu
    built = [(n, [build(n) for _ in range(reps)]) for n in items]
    launches = [b[0] for _, bs in built for b in bs]
    res = run_sequence_on_gpu(launches, timeout=timeout)
    if not res.ok:
        return {"__error__": f"{res.error}: {(res.error_detail or '')[:300]}"}
    out, i = {}, 0
    for n, bs in built:
        rows = []
        for launch, k, check in bs:
            rows.append(_outcome(n, launch, k, check, res.outputs[i]))
            i += 1
        out[n] = _entry(rows, res)
    return out


def _gpu_alone(name: str, reps: int, timeout: float) -> dict:
    from tcsim.hw.launcher import run_on_gpu
    rows, res = [], None
    for _ in range(reps):
        launch, k, check = build(name)
        res = run_on_gpu(launch, timeout=timeout)
        if not res.ok:
            return {"status": res.error, "detail": (res.error_detail or "")[:500]}
        rows.append(_outcome(name, launch, k, check, res.outputs))
    return _entry(rows, res)


def _entry(rows, res) -> dict:
    return {"status": "ok", "cycles": [r["cycles"] for r in rows], "correct": [r["correct"] for r in rows],
            "check": rows[0]["check"], "device": res.device}


def run_gpu(todo: list, reps: int, batch: int, timeout: float) -> dict:
    done: dict = {}
    alone = [n for n in todo if n in K.BY_NAME and K.BY_NAME[n].own_process]
    seq = [n for n in todo if n not in alone]
    for i in range(0, len(seq), batch):
        part = seq[i:i + batch]
        t = time.time()
        got = _gpu_sequence(part, reps, timeout)
        if "__error__" in got:
            print(f"batch {part[0]}..{part[-1]}: {got['__error__']}; running its kernels one by one", flush=True)
            got = {}
            for n in part:
                one = _gpu_sequence([n], reps, timeout)
                got[n] = one[n] if n in one else {"status": "error", "detail": one["__error__"]}
        for n in part:
            done[n] = got[n]
            print(f"{n:34s} {_line(got[n])}", flush=True)
        print(f"  batch of {len(part)} in {time.time() - t:.1f} s", flush=True)
    for n in alone:
        done[n] = _gpu_alone(n, reps, timeout)
        print(f"{n:34s} {_line(done[n])}", flush=True)
    return done


def _line(e: dict) -> str:
    if e.get("status") != "ok":
        return f"{e.get('status')}: {e.get('detail', '')[:120]}"
    return f"cycles {[int(c) for c in e['cycles']]} correct {all(e['correct'])}"


def write_sass(todo: list, sass_dir: Path, jobs: int = 8) -> None:
    """``sass_dir/<name>.sass``: cuobjdump -sass of what ptxas 13.0 makes of each instrumented kernel."""
    from concurrent.futures import ThreadPoolExecutor

    from calib.microbench.record import sass_listing
    texts = [build(n)[0].ptx_text()[0] for n in todo]
    with ThreadPoolExecutor(jobs) as pool:
        listings = list(pool.map(sass_listing, texts))
    if any(x is None for x in listings):
        print("no ptxas/cuobjdump here: no SASS listings", flush=True)
        return
    sass_dir.mkdir(parents=True, exist_ok=True)
    for n, listing in zip(todo, listings):
        (sass_dir / f"{n}.sass").write_text(listing)


def record(out: Path, backend: str, reps: int, todo: list, command: str, batch: int = 12, jobs: int = 1,
           sass_dir: Path | None = None, timeout: float = 40.0) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    prov = P.provenance(command)
    meta = {"backend": backend, "date": prov["date"], "command": command, "tcsim_version": prov["tcsim_version"],
            "reps": reps if backend == "gpu" else 1}
    if backend == "gpu":
        meta.update(P.device_info())
        entries = run_gpu(todo, reps, batch, timeout)
    else:
        got = P.run_all(todo, run_sim, max(1, jobs), processes=jobs > 1)
        entries = dict(zip(todo, got))
        for n in todo:
            print(f"{n:34s} {_line(entries[n])}", flush=True)
    arrays = {}
    for n in todo:
        e = entries[n]
        launch, _, _ = build(n)
        e.update(name=n, source=source_of(n), split=split_of(n),
                 ptx_sha256=P.sha256(launch.ptx_text()[0].encode()))
        if e.get("status") == "ok":
            e["median_cycles"] = float(np.median(e["cycles"]))
            arrays[n] = np.asarray(e["cycles"], dtype=np.float64)
    if sass_dir is not None:
        write_sass(todo, sass_dir)
    meta["kernels"] = {n: entries[n] for n in todo}
    meta["wall_s"] = round(time.time() - t0, 1)
    P.write_record(out, meta, arrays, DATA)
    bad = [n for n, e in entries.items() if e.get("status") != "ok" or not all(e.get("correct", [False]))]
    print(f"recorded {len(todo)} kernels in {meta['wall_s']} s -> {out}; not ok: {bad or 'none'}", flush=True)
    return meta
