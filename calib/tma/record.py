"""Run TMA cases on the GPU or the simulator and write a record (``meta.json`` + ``outputs.npz``) through the
campaign pipeline (:mod:`calib.pipeline`)."""
from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path

import numpy as np

from calib import pipeline as P
from calib.pipeline import sha256

from .cases import TmaCase
from .layout import MARKER, SIM_MAX_INSTRUCTIONS, STATUS

OUTPUTS = "outputs.npz"


# ================================================================================================ digests
def inputs_digest(case: TmaCase) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(case.img).tobytes())
    for t in case.tensors:
        h.update(f"{t.dtype.str}{list(t.shape)}".encode())
        h.update(np.ascontiguousarray(t).tobytes())
    for m in case.maps:
        h.update(repr(dataclasses.astuple(m)).encode())
    h.update(repr(case.ops).encode())
    return h.hexdigest()


def ptx_digest(case: TmaCase) -> str:
    return sha256(case.ptx().encode())


def _collect(case: TmaCase, outputs) -> dict:
    return {key: np.ascontiguousarray(np.asarray(outputs[i])) for key, i in case.output_args().items()}


def run_case(case: TmaCase, backend: str, seed=None) -> P.Run:
    """``case`` on ``backend`` (:func:`calib.pipeline.execute`: a CUDA error or a simulator diagnosis is a result,
    ``error`` = the CUDA error name or ``sim:<class>``); ``outputs``: {key suffix: array} of the recorded
    arguments.  GpuUnavailable propagates."""
    r = P.execute(case.launch(), backend, timeout=case.timeout, seed=seed, max_instructions=SIM_MAX_INSTRUCTIONS)
    return dataclasses.replace(r, outputs=_collect(case, r.outputs)) if r.ok else r


def run_sim(case: TmaCase, seed=None) -> P.Run:
    return run_case(case, "sim", seed)


def run_gpu(case: TmaCase) -> P.Run:
    return run_case(case, "gpu")


# ================================================================================================ record
def record(out_dir: Path, cases: list, backend: str = "gpu", jobs: int = 8, command: str = "", log=print,
           time_limit: float | None = None) -> dict:
    """Run ``cases`` on ``backend`` and write ``out_dir/meta.json`` and ``out_dir/outputs.npz``.  Cases not
    started within ``time_limit`` seconds are recorded as NOT_RUN (the files are always written)."""
    info = {}
    if backend == "gpu":
        from tcsim.hw.launcher import GpuUnavailable, gpu_available

        ok, why = gpu_available()
        if not ok:
            raise GpuUnavailable(why)
        info["gpu_probe"] = why
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    results: dict = {}

    def one(case):
        r = run_case(case, backend)
        tag = "ok" if r.ok else f"{r.error}"
        st = ""
        if r.ok and "out" in r.outputs:
            st = " " + status_text(case, r.outputs["out"])
        log(f"{case.name:44s} {case.family:9s} {tag}{st} ({r.wall_s:.1f} s)")
        return r

    # the cases the documentation defines run first, as a group: a kernel that may fault the GPU (probe, fault)
    # never runs beside them
    groups = [[c for c in cases if c.expect not in ("probe", "fault")], [c for c in cases if c.expect in
                                                                          ("probe", "fault")]]
    for group in groups:
        limit = None if time_limit is None else time_limit - (time.time() - t0)
        done = P.run_all(group, one, jobs, limit, lambda case: P.not_run(time_limit))
        results.update((case.name, r) for case, r in zip(group, done))
    sims = {}
    if backend == "gpu":            # tcsim's view of every case, recorded beside the GPU's (informational)
        for case in cases:
            try:
                sims[case.name] = run_sim(case)
            except Exception as e:  # noqa: BLE001 - never lose a GPU record to the simulator
                sims[case.name] = P.Run(False, error="sim-unavailable", detail=repr(e))
    arrays = {}
    meta_cases = {}
    first = next((r for r in results.values() if r.device), None)
    for case in cases:
        r = results[case.name]
        entry = {"family": case.family, "expect": case.expect, "note": case.note, "ncta": case.ncta,
                 "status": "ok" if r.ok else "error", "error": r.error, "detail": r.detail,
                 "elapsed_ms": r.elapsed_ms, "wall_s": round(r.wall_s, 3),
                 "ptx_sha256": ptx_digest(case), "inputs_sha256": inputs_digest(case), "outputs": {}}
        if r.ok:
            for key, a in r.outputs.items():
                k = f"{case.name}:{key}"
                arrays[k] = a
                entry["outputs"][key] = {"key": k, "dtype": a.dtype.str, "shape": list(a.shape), "sha256": sha256(a)}
            entry["wait_status"], entry["end_marker"] = _status_words(case, r.outputs["out"])
        sr = sims.get(case.name)
        if sr is not None:
            same = None
            if sr.ok and r.ok:
                same = all(k in sr.outputs and np.array_equal(sr.outputs[k].view(np.uint8), a.view(np.uint8))
                           for k, a in r.outputs.items())
            entry["tcsim_at_record"] = {"status": "ok" if sr.ok else "error", "error": sr.error,
                                        "diagnosis": first_line(sr.detail)[:600] or None,
                                        "outputs_identical": same}
        meta_cases[case.name] = entry
    meta = {
        "what": "tile-mode TMA golden data (calib/tma)",
        "backend": backend,
        **P.gpu_fields(*((first.device, first.driver, first.cc) if first else (None, None, None))),
        **P.provenance(command),
        "wall_s": round(time.time() - t0, 1),
        "counts": _counts(meta_cases),
        **info,
        "cases": meta_cases,
    }
    P.write_record(out_dir, meta, arrays, OUTPUTS)
    return meta


def _counts(meta_cases: dict) -> dict:
    fam: dict = {}
    for e in meta_cases.values():
        d = fam.setdefault(e["family"], {"cases": 0, "ok": 0, "error": 0})
        d["cases"] += 1
        d[e["status"]] += 1
    return fam


def _status_words(case: TmaCase, out: np.ndarray) -> tuple:
    st = case.out_bytes - STATUS
    words = np.ascontiguousarray(out[:, st:st + 8]).view(np.uint32)
    return [int(x) for x in words[:, 0]], [int(x) == MARKER for x in words[:, 1]]


def first_line(s) -> str:
    s = (s or "").strip()
    return s.splitlines()[0][:300] if s else ""


def status_text(case: TmaCase, out: np.ndarray) -> str:
    wait, marker = _status_words(case, out)
    bad = [f"CTA {r}: wait {'timed out' if w == 1 else w}" for r, w in enumerate(wait) if w != 0]
    bad += [f"CTA {r}: no end marker" for r, m in enumerate(marker) if not m]
    return "[" + "; ".join(bad) + "]" if bad else ""
