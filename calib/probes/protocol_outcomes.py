"""What the GPU does with each mbarrier / named-barrier / bulk-copy protocol violation (issue 15, item 6).

Each probe is a minimal sm_90a PTX kernel under ``calib/probes/protocol/`` (one violation each, described in the
file's header comment and in :data:`PROBES`).  The campaign goes through the one pipeline of ``calib/``
(:mod:`calib.pipeline`):

generate
    :func:`make_launch`: the probe's :class:`tcsim.launch.Launch` (the same arguments for every back end:
    ``out`` u32[128] zeros, ``src`` u32[128] = 0xA0000000 + i, the scalar ``arg`` the probe names, or a tensor map
    of an 8 x 8 u32 tensor).  ``lineinfo=True`` adds ``.file``/``.loc`` directives that name the probe file's own
    lines, so that compute-sanitizer places an error at the PTX line.
run
    :func:`run_gpu`: each probe in its own child process (:func:`tcsim.hw.launcher.run_on_gpu`, a hung kernel is
    killed after ``timeout`` seconds and poisons nothing else), one at a time; then :func:`memcheck`: every probe
    that did not hang once more under ``compute-sanitizer --tool memcheck`` (a process of its own:
    ``python -m calib.probes.protocol_outcomes gpu-one NAME --lineinfo``), to record where it locates the error.
    :func:`run_sim`: the same launch on tcsim, classified the same way (:func:`sim_outcome`).
record
    ``python -m calib.probes.protocol_outcomes record --out DIR`` writes ``DIR/protocol_outcomes.json``
    (provenance: the command, the date, the GPU, its driver, compute-sanitizer's version; per probe: the outcome
    ``completes`` / ``trap`` / ``hang``, the CUDA error, the outputs, memcheck's report and PTX line, the probe's
    PTX digest).
install
    ``python -m calib.probes.protocol_outcomes install DIR/protocol_outcomes.json`` ->
    ``tests/hw/golden_h100/protocol_outcomes.json`` (read by ``tests/hw/test_protocol_outcomes.py``).

Outcomes: ``completes`` (the launch finished; ``outputs`` holds ``out``), ``trap`` (the launch ended with a CUDA
error, e.g. ``CUDA_ERROR_ILLEGAL_INSTRUCTION``), ``hang`` (no result within the time limit; the child was killed).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calib.pipeline import ROOT, command_line, execute, install_files, provenance, sha256, write_json

PROBE_DIR = Path(__file__).resolve().parent / "protocol"
GOLDEN = ROOT / "tests" / "hw" / "golden_h100" / "protocol_outcomes.json"
RECORD_NAME = "protocol_outcomes.json"
OUT_WORDS = 128
DONE = 0xC0DE

COMPLETES, TRAP, HANG = "completes", "trap", "hang"


@dataclass(frozen=True)
class Probe:
    """One probe kernel: what it violates (bug class of ``bug_classes.md``, 0 = none of them), its launch shape,
    whether its outputs are schedule-independent (``compare``: a racy probe's outputs are recorded, not
    compared), and whether its outcome depends on timing (``timing_dependent``: the H100 ended it one way in the
    plain run and another under memcheck, whose instrumentation changes the timing, or differently between
    repeated runs; every one of them is an outcome the hardware gives)."""

    violates: str
    cls: int
    block: int = 32
    grid: int = 1
    cluster: int = 1
    arg: int = 0
    tensor: bool = False
    compare: bool = True
    timing_dependent: bool = False


PROBES = {
    "control_bulk_copy": Probe("nothing: a correct expect_tx / cp.async.bulk / wait", 0),
    "control_warp_arrive_count32": Probe("nothing: 32 lanes arrive on an mbarrier of count 32", 0),
    "arrive_twice_count1": Probe("two arrive instructions by one thread on an mbarrier of count 1", 4),
    "arrive_count2_on_count1": Probe("one arrive with count 2 on an mbarrier of count 1 (pending 1)", 4, arg=2),
    "two_lanes_arrive_count1": Probe("two lanes arrive in one instruction on an mbarrier of count 1", 17),
    "full_warp_arrive_count1": Probe("an unpredicated arrive by a full warp on an mbarrier of count 1", 17),
    "shared_full_barrier_second_arrive": Probe(
        "a second arrive.expect_tx on a count-1 full barrier whose phase waits for bytes (pending count 0)", 12),
    "stale_parity_consumer": Probe(
        "a consumer whose full-barrier wait parity never flips (one-stage ring, 64 threads)", 1, block=64,
        compare=False, timing_dependent=True),
    "tx_too_few_expect": Probe("expect_tx 16 for a 32-byte cp.async.bulk (tx over-delivery)", 3),
    "tx_too_many_expect": Probe("expect_tx 32 for a 16-byte cp.async.bulk (the phase never completes)", 3),
    "complete_tx_on_completed_phase": Probe("mbarrier.complete_tx 16 with no expect_tx after the phase completed", 3),
    "bulk_bytes_on_completed_phase": Probe(
        "cp.async.bulk bytes signalled to an mbarrier whose phase already completed (no expect_tx)", 3),
    "arrive_uninitialised": Probe("mbarrier.arrive on zeroed SMEM that was never mbarrier.init-ed", 11),
    "arrive_after_inval": Probe("mbarrier.arrive after mbarrier.inval", 11),
    "init_live_barrier": Probe("mbarrier.init on a live mbarrier (one arrival pending) without inval", 11),
    "bulk_smem_misaligned": Probe("cp.async.bulk SMEM destination 8 bytes off 16-byte alignment", 18),
    "bulk_global_misaligned": Probe("cp.async.bulk global source 8 bytes off 16-byte alignment", 18),
    "bulk_size_not16": Probe("cp.async.bulk of 24 bytes (not a multiple of 16)", 18, arg=24),
    "bulk_tensor_smem_not128": Probe("cp.async.bulk.tensor SMEM destination 16- but not 128-byte aligned", 18,
                                     tensor=True),
    "tx_too_few_expect_poll": Probe("expect_tx 16 for a 32-byte cp.async.bulk, polled with test_wait for ~2 ms "
                                    "instead of a blocking wait (which bytes land, does the phase complete)", 3),
    "bulk_size_not16_poll": Probe("cp.async.bulk of 24 bytes with expect_tx 24, polled with test_wait for ~2 ms", 18,
                                  arg=24),
    "bulk_size_not16_expect16_poll": Probe("cp.async.bulk of 24 bytes with expect_tx 16, polled for ~2 ms", 18,
                                           arg=24),
    "bulk_size_not16_expect32_poll": Probe("cp.async.bulk of 24 bytes with expect_tx 32, polled for ~2 ms", 18,
                                           arg=24),
    "expect_tx_over_limit": Probe("mbarrier.expect_tx of 2^20 (beyond the 2^20-1 tx-count limit)", 3, arg=1 << 20),
    "bar_sync_count_not_mult32": Probe("bar.sync 1, 48: a thread count not a multiple of 32", 16, block=64, arg=48),
    "bar_sync_mixed_counts_small_first": Probe(
        "bar.sync 1 with count 64 (warps 0, 1) and count 96 (warp 2, 20 us later) on one id", 16, block=96),
    "bar_sync_mixed_counts_large_first": Probe(
        "bar.sync 1 with count 96 (warp 2) and count 64 (warps 0, 1, 20 us later) on one id", 16, block=96),
    "bar_sync_too_few_threads": Probe("bar.sync 1, 64 reached by one warp of two (the other exits)", 16, block=64),
    "bar_sync_count_exceeds_cta": Probe("bar.sync 1, 128 in a CTA of 64 threads", 16, block=64, arg=128),
    "exit_with_bulk_store_pending": Probe(
        "a CTA exits after cp.async.bulk.commit_group of a bulk store, without wait_group.read", 5, block=128),
    "remote_arrive_after_exit": Probe(
        "mbarrier.arrive.release.cluster on a peer CTA's mbarrier after that CTA exited (cluster of 2)", 14,
        grid=2, cluster=2, timing_dependent=True),
}


# ------------------------------------------------------------------------------------------------ generate
def probe_path(name: str) -> Path:
    return PROBE_DIR / f"{name}.ptx"


def probe_text(name: str, lineinfo: bool = False) -> str:
    """The probe's PTX; with ``lineinfo``, a ``.file 1 "calib/probes/protocol/NAME.ptx"`` directive and a
    ``.loc 1 LINE 1`` before each instruction naming its line in the file (the file's own line numbers)."""
    text = probe_path(name).read_text()
    if not lineinfo:
        return text
    rel = probe_path(name).relative_to(ROOT).as_posix()
    out, in_body = [], False
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith(".address_size"):
            out.append(line)
            out.append(f'.file 1 "{rel}"')
            continue
        if s == "{":
            in_body = True
        elif in_body and s and not s.startswith(("//", ".", "}", "$")) and not s.endswith(":"):
            out.append(f"\t.loc 1 {n} 1")
        out.append(line)
    return "\n".join(out) + "\n"


def make_launch(name: str, lineinfo: bool = False):
    from tcsim.isa.tensormap import TensorMap
    from tcsim.launch import Launch

    p = PROBES[name]
    out = np.zeros(OUT_WORDS, np.uint32)
    if p.tensor:
        src = (np.uint32(0xB0000000) + np.arange(64, dtype=np.uint32)).reshape(8, 8)
        third = TensorMap.tiled(src, box=(4, 8))
    else:
        src = np.uint32(0xA0000000) + np.arange(OUT_WORDS, dtype=np.uint32)
        third = np.uint32(p.arg)
    return Launch(ptx=probe_text(name, lineinfo), kernel="probe", grid=(p.grid, 1, 1), block=(p.block, 1, 1),
                  cluster=(p.cluster, 1, 1), args=[out, src, third], name=f"{probe_path(name).relative_to(ROOT)}")


def ptx_digest(name: str) -> str:
    return sha256(probe_path(name).read_bytes())


def outputs_list(outputs) -> list:
    """``out`` as a list of ints (the record's form)."""
    return [int(x) for x in np.asarray(outputs[0]).reshape(-1)]


# ------------------------------------------------------------------------------------------------ run: GPU
def run_gpu(name: str, timeout: float = 12.0, lineinfo: bool = False) -> dict:
    """One probe on the GPU in its own child process: ``{"outcome", "cuda_error", "detail", "outputs", "wall_s"}``."""
    r = execute(make_launch(name, lineinfo), "gpu", timeout=timeout) if not lineinfo else _execute_lineinfo(
        name, timeout)
    row = {"wall_s": round(r.wall_s, 2)}
    if r.ok:
        row.update(outcome=COMPLETES, cuda_error=None, outputs=outputs_list(r.outputs))
    elif r.error == "TIMEOUT":
        row.update(outcome=HANG, cuda_error=None, detail=f"no result within {timeout} s of starting the child "
                                                         f"process; killed")
    else:
        row.update(outcome=TRAP if r.error.startswith("CUDA_ERROR") else "harness:" + r.error,
                   cuda_error=r.error, detail=r.detail)
    return row


def _execute_lineinfo(name, timeout):
    from calib.pipeline import Run
    from tcsim.hw.launcher import run_on_gpu

    t = time.time()
    res = run_on_gpu(make_launch(name, True), timeout=timeout, lineinfo=True)
    if not res.ok:
        return Run(False, error=res.error, detail=res.error_detail, wall_s=time.time() - t)
    return Run(True, outputs=list(res.outputs), wall_s=time.time() - t)


MEMCHECK_LOC = re.compile(r" in (?:\S*/)?([\w.]+\.ptx):(\d+)")


def parse_memcheck(text: str) -> dict:
    """What a memcheck report says: ``errors`` (its top-level lines: the error kinds, e.g. "Invalid __shared__
    write of size 16 bytes", "Unknown Error", "Program hit CUDA_ERROR_LAUNCH_FAILED ..."), ``line`` (the first PTX
    line it places an error at, from the ``at probe+0x.. in NAME.ptx:LINE`` lines; None when it names none),
    ``error_count`` (its ERROR SUMMARY)."""
    lines = [ln for ln in text.splitlines() if ln.startswith("=========")]
    errors = []
    for ln in lines:
        rest = ln[len("========="):]
        if not rest.startswith(" ") or rest.startswith("  ") or not rest.strip():
            continue                                          # indented detail lines, blank separators
        rest = rest.strip()
        if rest.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "Target application returned")):
            continue
        errors.append(rest)
    m = MEMCHECK_LOC.search(text)
    summary = re.search(r"ERROR SUMMARY: (\d+) error", text)
    return {"errors": errors[:8], "line": int(m.group(2)) if m else None,
            "error_count": int(summary.group(1)) if summary else None}


def memcheck(name: str, timeout: float = 90.0, sanitizer: str = "compute-sanitizer") -> dict:
    """The probe once more under ``compute-sanitizer --tool memcheck`` (line tables on): :func:`parse_memcheck`'s
    fields, ``rc`` and ``report`` (the sanitizer's own lines, shortened)."""
    cmd = [sanitizer, "--tool", "memcheck", "--print-limit", "10", sys.executable, "-m",
           "calib.probes.protocol_outcomes", "gpu-one", name, "--lineinfo"]
    t = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        text = ((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""))
        text += f"\n[killed after {timeout} s]"
        rc = None
    report = "\n".join(ln for ln in text.splitlines() if ln.startswith("=========") and "Host Frame" not in ln)
    return {**parse_memcheck(text), "rc": rc, "wall_s": round(time.time() - t, 2), "report": report[:4000]}


# ------------------------------------------------------------------------------------------------ run: sim
def sim_outcome(name: str, timing: bool = False, seed: int | None = None) -> dict:
    """The probe on tcsim, classified like a GPU run: ``outcome`` ('completes' / 'trap' / 'hang' / 'error'),
    ``line`` (the PTX line of the finding or fault), ``error`` (the exception class), ``finding`` (the
    :class:`tcsim.findings.Finding` that ended it), ``outputs``, ``message``."""
    from tcsim.findings import FindingError
    from tcsim.isa.errors import DeadlockError, MemoryFault, TcsimError
    from tcsim.launch import run_launch
    from tcsim.semantics.control import TrapError

    launch = make_launch(name)
    try:
        res = run_launch(launch, timing=timing, seed=seed)
    except FindingError as e:
        f = e.finding
        return {"outcome": f.outcome if f.outcome in (TRAP, HANG) else "error", "line": f.loc.line if f.loc else None,
                "error": "FindingError", "finding": f, "message": str(e), "outputs": None}
    except DeadlockError as e:
        return {"outcome": HANG, "line": e.loc.line if e.loc else None, "error": "DeadlockError", "finding": None,
                "message": str(e), "outputs": None}
    except (MemoryFault, TrapError) as e:
        return {"outcome": TRAP, "line": e.loc.line if e.loc else None, "error": type(e).__name__,
                "finding": None, "message": str(e), "outputs": None}
    except TcsimError as e:
        return {"outcome": "error", "line": e.loc.line if e.loc else None, "error": type(e).__name__,
                "finding": None, "message": str(e), "outputs": None}
    return {"outcome": COMPLETES, "line": None, "error": None, "finding": None, "message": "",
            "outputs": outputs_list(res.outputs), "findings": list(res.findings)}


# ------------------------------------------------------------------------------------------------ record
def _sanitizer_version(sanitizer: str) -> str | None:
    try:
        p = subprocess.run([sanitizer, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return " ".join(p.stdout.split()[-4:]) if p.returncode == 0 else None


def record(out_dir: Path, names, timeout: float, argv, jobs: int = 4, with_memcheck: bool = True,
           repeats: int = 0) -> dict:
    from calib.pipeline import device_info

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    meta = provenance(command_line("calib.probes.protocol_outcomes", argv))
    meta.update(device_info())
    meta.update(compute_sanitizer=_sanitizer_version(sanitizer), hang_timeout_s=timeout,
                outcomes=(f"{COMPLETES}: the launch finished (outputs = out); {TRAP}: the launch ended with the "
                          f"CUDA error named; {HANG}: no result within hang_timeout_s of starting the probe's "
                          f"child process, which was then killed"))
    rows = {}
    for name in names:                       # one at a time: each its own process, a hang only costs its timeout
        p = PROBES[name]
        row = {"violates": p.violates, "class": p.cls, "ptx": probe_path(name).relative_to(ROOT).as_posix(),
               "ptx_sha256": ptx_digest(name), "outputs_compared": p.compare}
        row.update(run_gpu(name, timeout))
        if p.timing_dependent and repeats:   # the same launch again: how often each ending comes
            row["repeat_outcomes"] = [run_gpu(name, timeout)["outcome"] for _ in range(repeats)]
        rows[name] = row
        print(f"{name:40s} {row['outcome']:10s} {row.get('cuda_error') or ''} ({row['wall_s']} s)", flush=True)
        write_json(out_dir / RECORD_NAME, {"meta": meta, "probes": rows})
    if with_memcheck:
        todo = [n for n in rows if rows[n]["outcome"] != HANG]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for n, mc in zip(todo, pool.map(lambda n: memcheck(n, sanitizer=sanitizer), todo)):
                rows[n]["memcheck"] = mc
                print(f"memcheck {n:40s} line {mc['line']} {mc['errors'][:2]}", flush=True)
        for n in rows:
            if rows[n]["outcome"] == HANG:
                rows[n]["memcheck"] = None
    meta["date_end"] = provenance("")["date"]
    doc = {"meta": meta, "probes": rows}
    write_json(out_dir / RECORD_NAME, doc)
    return doc


def load_golden(path: Path = GOLDEN) -> dict:
    return json.loads(Path(path).read_text())


def memcheck_outcome(row: dict) -> str | None:
    """How the probe ended in its memcheck run (None: not run there): 'completes' when the sanitizer reported
    nothing and the program succeeded, else 'trap'."""
    mc = row.get("memcheck")
    if not mc:
        return None
    return COMPLETES if mc.get("rc") == 0 and not mc.get("error_count") else TRAP


def hardware_outcomes(name: str, row: dict) -> set:
    """The outcomes the H100 gave this probe: the plain run's, and for a timing-dependent probe also the memcheck
    run's."""
    out = {row["outcome"]}
    if PROBES[name].timing_dependent:
        out.update(row.get("repeat_outcomes", ()))
        if memcheck_outcome(row):
            out.add(memcheck_outcome(row))
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m calib.probes.protocol_outcomes")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="run every probe on the GPU (+ memcheck) and write the record")
    r.add_argument("--out", required=True)
    r.add_argument("--probe", action="append", help="only these probes (default: all)")
    r.add_argument("--timeout", type=float, default=12.0, help="seconds before a probe counts as hung")
    r.add_argument("--jobs", type=int, default=4, help="memcheck runs at a time")
    r.add_argument("--no-memcheck", action="store_true")
    r.add_argument("--repeats", type=int, default=5, help="extra runs of each timing-dependent probe")
    g = sub.add_parser("gpu-one", help="one probe on the GPU (what memcheck runs); prints its row as JSON")
    g.add_argument("name", choices=sorted(PROBES))
    g.add_argument("--lineinfo", action="store_true")
    g.add_argument("--timeout", type=float, default=30.0)
    s = sub.add_parser("sim", help="every probe (or the named ones) on tcsim next to the golden outcome")
    s.add_argument("names", nargs="*")
    s.add_argument("--timing", action="store_true")
    i = sub.add_parser("install", help=f"copy a record to {GOLDEN.relative_to(ROOT)}")
    i.add_argument("record")
    a = ap.parse_args(argv)
    if a.cmd == "record":
        names = a.probe or list(PROBES)
        record(Path(a.out), names, a.timeout, argv, a.jobs, not a.no_memcheck, a.repeats)
        return 0
    if a.cmd == "gpu-one":
        row = run_gpu(a.name, a.timeout, lineinfo=a.lineinfo)
        print(json.dumps(row))
        return 0 if row["outcome"] == COMPLETES else 1
    if a.cmd == "sim":
        golden = load_golden()["probes"] if GOLDEN.is_file() else {}
        for name in a.names or list(PROBES):
            o = sim_outcome(name, timing=a.timing)
            want = golden.get(name, {})
            gl = (want.get("memcheck") or {}).get("line")
            print(f"{name:40s} tcsim {o['outcome']:9s} line {o['line']}  ({o['error']})   "
                  f"H100 {want.get('outcome')} {want.get('cuda_error') or ''} line {gl}")
        return 0
    if a.cmd == "install":
        doc = json.loads(Path(a.record).read_text())
        if set(doc.get("probes", {})) != set(PROBES):
            print(f"the record holds {sorted(doc.get('probes', {}))}, not every probe", file=sys.stderr)
            return 2
        for row in doc["probes"].values():      # the parsed fields, from the report as recorded
            if row.get("memcheck"):
                row["memcheck"].update(parse_memcheck(row["memcheck"]["report"]))
        doc["meta"]["memcheck_fields"] = ("errors / line / error_count parsed from each report by "
                                          "calib.probes.protocol_outcomes.parse_memcheck at install")
        staged = Path(a.record).with_name("protocol_outcomes.installed.json")
        write_json(staged, doc)
        install_files([(staged, GOLDEN.name)], GOLDEN.parent)
        print(GOLDEN)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
