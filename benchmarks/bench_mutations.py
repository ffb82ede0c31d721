"""Mutation benchmark: does the fast (CI) suite notice small semantic bugs?  (issue 22, item 5)

A fixed list of small semantic mutations (:data:`MUTATIONS`: numerics, swizzle, descriptors, mbarrier, TMA, timing)
is planted one at a time in a temporary copy of the repository; for each, the fast tests of its area (the
``tests`` selection named with it, run as CI runs them: ``-m "not slow"``, stopping at the first failure) run
against the mutated copy, and the benchmark reports whether they failed (the mutation is *caught*) and how long
they took to fail (wall and CPU seconds of the pytest process: on a shared machine the CPU time is the stable
number).  The first failing test is then re-run alone on the unmutated copy and must pass, else the failure is not
the mutation's doing and does not count.

The copy is imported in place of the checkout (the installed layout -- tcsim = sim/, tcsim.isa = isa/, ... -- made
of links beside the copy, first on PYTHONPATH), so pytest's worker processes and every subprocess a test starts run
the mutated code too; ``calib`` comes from the copy (the working directory).  ``--parallel P`` plants P mutations
at once, each group in its own copy (a machine with many cores).

    python benchmarks/bench_mutations.py                 # every mutation; a table and benchmarks/out/mutations.json
    python benchmarks/bench_mutations.py --only NAME,...  # some of them
    python benchmarks/bench_mutations.py --list           # the list, with the selection each one runs

A mutation is a literal (old text -> new text) replacement that must occur exactly once in its file (the benchmark
refuses a stale one instead of planting nothing).  tests/test_mutation_benchmark.py checks that every mutation
still applies (fast) and, under ``-m slow``, that the suite catches each one.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    area: str
    file: str               # relative to the repository root
    old: str
    new: str
    what: str               # the planted bug, in words
    tests: tuple = field(default_factory=tuple)     # the fast-suite selection that must catch it (pytest args)
    #: tests of the selection that merely restate the mutated constant (a table of parameters): left out (``-k``),
    #: so that only a test of behaviour counts as catching the mutation
    restating: tuple = field(default_factory=tuple)
    #: a pytest ``-k`` expression narrowing the selection to the tests of behaviour that exercise the mutated code
    k: str = ""


MUTATIONS = [
    # ------------------------------------------------------------------------------------------ numerics
    Mutation("tcgen05-f16-acc-bits", "numerics", "sim/numerics/tensor_core.py",
             '("sm_100a", "tcgen05", "f16"): _Entry(_F16, 16, 25)',
             '("sm_100a", "tcgen05", "f16"): _Entry(_F16, 16, 24)',
             "sm_100a tcgen05 f16/bf16 accumulator fraction bits 25 -> 24 (the issue's example)",
             ("tests/numerics/test_mmasim_replay.py",)),
    Mutation("wgmma-f16-acc-bits", "numerics", "sim/numerics/tensor_core.py",
             '("sm_90a", "wgmma", "f16"): _Entry(_F16, 16, 25)',
             '("sm_90a", "wgmma", "f16"): _Entry(_F16, 16, 24)',
             "sm_90a wgmma f16/bf16 accumulator fraction bits 25 -> 24",
             ("tests/hw/test_wgmma_numerics_golden.py",)),
    Mutation("int-add-sat-bound", "numerics", "sim/semantics/integer.py",
             "return np.clip(v, -(1 << 31), (1 << 31) - 1)",
             "return np.clip(v, -(1 << 31) + 1, (1 << 31) - 1)",
             "add/sub/mad .sat.s32 lower bound -2^31 -> -2^31 + 1",
             ("tests/hw/test_alu_probe_golden.py", "tests/semantics/test_integer.py")),
    Mutation("e4m3-bias", "numerics", "sim/numerics/lowp.py",
             'LowpFormat("e4m3", 8, 4, 3, 7, "fn"),',
             'LowpFormat("e4m3", 8, 4, 3, 8, "fn"),',
             "e4m3 exponent bias 7 -> 8",
             ("tests/numerics/test_lowp.py",)),
    # ------------------------------------------------------------------------------------------ swizzle
    Mutation("swizzle-128B-mask", "swizzle", "isa/swizzle.py",
             '"128B": ((7, 4),),', '"128B": ((3, 4),),',
             "128B swizzle XORs two line-index bits instead of three",
             ("tests/hw/test_tma_golden.py", "tests/isa/test_swizzle.py")),
    Mutation("swizzle-64B-shift", "swizzle", "isa/swizzle.py",
             '"64B": ((3, 4),),', '"64B": ((3, 5),),',
             "64B swizzle XORs into bits 5-6 instead of 4-5",
             ("tests/hw/test_tma_golden.py", "tests/isa/test_swizzle.py")),
    # ------------------------------------------------------------------------------------------ descriptors
    Mutation("wgmma-desc-lbo", "descriptors", "isa/descriptors.py",
             "return cls(start_address=_bits(value, 0, 14) << 4, lbo=_bits(value, 16, 14) << 4,\n"
             "                   sbo=_bits(value, 32, 14) << 4, base_offset=_bits(value, 49, 3),\n"
             "                   swizzle=WGMMA_SWIZZLE_CODES",
             "return cls(start_address=_bits(value, 0, 14) << 4, lbo=_bits(value, 16, 14) << 5,\n"
             "                   sbo=_bits(value, 32, 14) << 4, base_offset=_bits(value, 49, 3),\n"
             "                   swizzle=WGMMA_SWIZZLE_CODES",
             "wgmma matrix descriptor: the decoded LBO doubled (field << 5 instead of << 4)",
             ("tests/hw/test_fuzz_wgmma.py", "tests/semantics/test_wgmma.py")),
    Mutation("tcgen05-idesc-n", "descriptors", "isa/descriptors.py",
             "return cls(m=_bits(v, 24, 5) << 4, n=_bits(v, 17, 6) << 3, dtype=_bits(v, 4, 2), atype=_bits(v, 7, 3),",
             "return cls(m=_bits(v, 24, 5) << 4, n=_bits(v, 17, 5) << 3, dtype=_bits(v, 4, 2), atype=_bits(v, 7, 3),",
             "tcgen05 instruction descriptor: N >> 3 read from 5 bits instead of 6 (N >= 256 wraps)",
             ("tests/semantics/test_tcgen05_mma.py", "tests/isa/test_descriptors.py")),
    # ------------------------------------------------------------------------------------------ mbarrier
    Mutation("mbarrier-tx-gating", "mbarrier", "sim/mbarrier_state.py",
             "        if self.pending == 0 and self.tx == 0:\n            self.phase += 1",
             "        if self.pending == 0:\n            self.phase += 1",
             "a phase completes when the arrivals are in, whatever the pending transaction bytes",
             ("tests/semantics/test_mbarrier.py",)),
    Mutation("mbarrier-arrive-drop", "mbarrier", "sim/mbarrier_state.py",
             "        if drop:\n            self.expected -= count\n",
             "        if drop:\n            pass\n",
             "arrive.drop no longer lowers the expected count of later phases",
             ("tests/semantics/test_mbarrier.py",)),
    Mutation("mbarrier-parity", "mbarrier", "sim/mbarrier_state.py",
             "return (self.phase & 1) != (int(parity) & 1)",
             "return (self.phase & 1) == (int(parity) & 1)",
             "try_wait.parity / test_wait.parity answer for the wrong phase",
             ("tests/semantics/test_mbarrier.py",)),
    # ------------------------------------------------------------------------------------------ TMA
    Mutation("tma-oob-bound", "TMA", "sim/semantics/bulk_tensor.py",
             "inb = inb[..., None] & (g >= 0) & (g < end)",
             "inb = inb[..., None] & (g >= 0) & (g <= end)",
             "a TMA box element at index globalDim counts as in bounds (off by one)",
             ("tests/hw/test_tma_golden.py",)),
    Mutation("tma-oob-nan-fill", "TMA", "sim/semantics/bulk_tensor.py",
             'OOB_NAN_BITS = {"FLOAT16": 0x7FF7,', 'OOB_NAN_BITS = {"FLOAT16": 0x7FFF,',
             "the f16 NaN that an oob_fill='nan' load writes outside the tensor: 0x7FF7 -> 0x7FFF",
             ("tests/hw/test_tma_golden.py",)),
    Mutation("tma-element-strides", "TMA", "sim/semantics/bulk_tensor.py",
             'step = 1 if (d == 0 and tm.interleave == "none") else tm.element_strides[d]',
             'step = 1 if (d <= 1 and tm.interleave == "none") else tm.element_strides[d]',
             "the element stride of tensor dimension 1 ignored (as dimension 0's is)",
             ("tests/hw/test_tma_golden.py",)),
    # ------------------------------------------------------------------------------------------ timing
    Mutation("smem-broadcast", "timing", "sim/timing/smem.py",
             "        words = np.unique(words)\n", "",
             "lanes reading the same SMEM word count as a bank conflict (no broadcast)",
             ("tests/hw/test_timing_validation.py", "tests/hw/test_microbench_golden.py")),
    Mutation("tma-tensor-extra-latency", "timing", "sim/agents/tma.py",
             'lat = self.params.latency + (self.params.tensor_extra if "tensor_map" in op.extra else 0)',
             "lat = self.params.latency",
             "tensor-map TMA operations lose their extra latency",
             ("tests/hw/test_timing_validation.py", "tests/hw/test_microbench_golden.py")),
    Mutation("tcgen05-mma-rate", "timing", "sim/timing/tensor.py",
             "compute = math.ceil(n * cycles_per_n(cfg, m, cg))",
             "compute = math.ceil(n * cycles_per_n(cfg, m, cg) / 2)",
             "tcgen05.mma computes twice as fast as the published per-N rate",
             ("tests/sim/timing/test_tcgen05_fits.py",)),
    Mutation("wgmma-issue-rate", "timing", "sim/agents/wgmma_unit.py",
             "op.occupancy = max(p.mma_min_cycles, math.ceil(op.n * p.mma_cycles_per_n))",
             "op.occupancy = max(p.mma_min_cycles, math.ceil(op.n * p.mma_cycles_per_n / 2))",
             "a wgmma occupies the tensor pipe half as long as the H100 measurement says",
             ("tests/hw/test_timing_validation.py", "tests/hw/test_microbench_golden.py")),
]

#: the tests of behaviour each selection is narrowed to (hardware golden data, independent oracles, hand-derived
#: protocol tests), by mutation
_K = {
    "tcgen05-f16-acc-bits": "replay_matches_mmasim",          # mmasim's recorded bits (issue 22 item 1)
    "wgmma-f16-acc-bits": "bit_exact",
    "int-add-sat-bound": "test_simulator_matches_h100 or sat",
    "e4m3-bias": "ml_dtypes",
    "swizzle-128B-mask": "test_replay_on_simulator",
    "swizzle-64B-shift": "test_replay_on_simulator",
    "tcgen05-idesc-n": "wide_n or descriptor",
    "mbarrier-tx-gating": "expect_tx or two_stage or parity",
    "mbarrier-arrive-drop": "arrive_drop or two_stage or parity",
    "mbarrier-parity": "parity or two_stage",
    "tma-oob-bound": "test_replay_on_simulator",
    "tma-oob-nan-fill": "test_replay_on_simulator",
    "tma-element-strides": "test_replay_on_simulator",
    "smem-broadcast": "calibration_values or validation_kernel",
    "tma-tensor-extra-latency": "calibration_values or validation_kernel",
    "wgmma-issue-rate": "calibration_values and wgmma",      # the H100 wgmma record (issue 22)
}
MUTATIONS = [replace(m, k=_K.get(m.name, m.k)) for m in MUTATIONS]

_IGNORE = shutil.ignore_patterns(".git", ".survey", "__pycache__", ".pytest_cache", "*.egg-info", "node_modules",
                                 "out", "build", "dist", ".whl")

def check_applies(m: Mutation, root: Path = ROOT) -> str:
    """The file's text with ``m`` planted; raises ValueError when ``m.old`` is not there exactly once."""
    text = (root / m.file).read_text()
    n = text.count(m.old)
    if n != 1:
        raise ValueError(f"mutation {m.name}: the text to replace occurs {n} times in {m.file} (stale mutation)")
    return text.replace(m.old, m.new)


#: installed package -> folder of the checkout (pyproject.toml's package-dir)
_LAYOUT = {"isa": "isa", "hw": "hw", "examples": "examples"}


def make_copy(dst: Path, src: Path = ROOT) -> Path:
    """A copy of the repository ``src`` at ``dst/repo``, importable as ``tcsim`` from ``dst/pkg``: ``pkg/tcsim`` is
    the copy's sim/, in which isa/, hw/ and examples/ appear as links (the installed layout).  ``dst/pkg`` goes
    first on PYTHONPATH, ahead of any installed tcsim (an editable install's finder comes after the path; a
    copied install sits in site-packages or later on the path)."""
    repo = dst / "repo"
    shutil.copytree(src, repo, ignore=_IGNORE, symlinks=True)
    for name, folder in _LAYOUT.items():
        (repo / "sim" / name).symlink_to(repo / folder, target_is_directory=True)
    (dst / "pkg").mkdir()
    (dst / "pkg" / "tcsim").symlink_to(repo / "sim", target_is_directory=True)
    return repo


def _env(repo: Path) -> dict:
    path = os.pathsep.join(filter(None, [str(repo.parent / "pkg"), str(repo), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, TCSIM_MUTATION_COPY=str(repo))


def run_selection(repo: Path, tests, timeout: float, jobs: int = 0, restating=(), k: str = "") -> tuple:
    """(pytest exit code, wall seconds, last lines of output) of the fast tests ``tests`` in ``repo``, without the
    tests named in ``restating``."""
    env = _env(repo)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow and not gpu",
           *(["-n", str(jobs)] if jobs else ["-p", "no:xdist"]),
           *(["-k", " and ".join([f"({k})"] * bool(k) + [f"not {t}" for t in restating])] if restating or k else []),
           *tests]
    # a wrapper process reports the CPU time of its own children (the pytest run and what it starts): the
    # selection's cost without the machine's load, also when several selections run at once (--parallel)
    wrap = [sys.executable, "-c", "import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
            "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(f'__CPU__ {r.ru_utime + r.ru_stime:.2f}', flush=True); sys.exit(rc)"]
    t0 = time.time()
    cpu = float("nan")
    p = subprocess.Popen(wrap + cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
        cpu = next((float(ln.split()[1]) for ln in out.splitlines() if ln.startswith("__CPU__")), cpu)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)            # the wrapper, pytest and whatever it started
        out, _ = p.communicate()
        rc, out = -1, f"timed out after {timeout} s\n{out[-2000:]}"
    out = "\n".join(ln for ln in out.splitlines() if not ln.startswith("__CPU__"))
    return rc, time.time() - t0, "\n".join(out.strip().splitlines()[-6:]), cpu


def check_copy_is_imported(repo: Path) -> None:
    """The copy, not the checkout, is what ``import tcsim`` gives under the benchmark's environment."""
    env = _env(repo)
    out = subprocess.run([sys.executable, "-c", "import tcsim, tcsim.isa, calib; print(tcsim.__file__); "
                          "print(tcsim.isa.__file__); print(calib.__file__)"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=120).stdout.split()
    if len(out) != 3 or not all(Path(p).resolve().is_relative_to(repo.resolve()) for p in out):
        raise SystemExit(f"bench_mutations: the mutated copy is not what gets imported ({out})")


def run_parallel(mutations, parallel: int, timeout: float, log=print, jobs: int = 0, src: Path = ROOT,
                 on_result=None) -> list:
    """:func:`run` on ``parallel`` groups of the mutations at once (round robin), each group in its own copy."""
    from concurrent.futures import ThreadPoolExecutor

    groups = [mutations[i::parallel] for i in range(parallel) if mutations[i::parallel]]
    with ThreadPoolExecutor(len(groups)) as ex:
        parts = list(ex.map(lambda g: run(g, timeout, log, jobs, src, on_result), groups))
    order = {m.name: i for i, m in enumerate(mutations)}
    return sorted((r for p in parts for r in p), key=lambda r: order[r["name"]])


def run(mutations, timeout: float = 600.0, log=print, jobs: int = 0, src: Path = ROOT, on_result=None) -> list:
    """Plant each mutation in turn and run its selection; a failure counts as a catch only when the first failing
    test passes on the unmutated copy (checked by re-running that one test: cheaper than a baseline run of the
    whole selection, and just as conclusive)."""
    results = []
    with tempfile.TemporaryDirectory(prefix="tcsim_mut_") as tmp:
        repo = make_copy(Path(tmp), src)
        check_copy_is_imported(repo)
        for m in mutations:
            sel = tuple(t for t in m.tests if (repo / t.split("::")[0]).exists())
            r = {"name": m.name, "area": m.area, "what": m.what, "file": m.file, "tests": list(sel), "k": m.k,
                 "not_in_this_checkout": [t for t in m.tests if t not in sel], "left_out": list(m.restating)}
            results.append(r)
            if not sel:
                r.update(caught=None, verdict="no selection in this checkout")
                log(f"[{m.area}] {m.name}: NOT RUN (no selection in this checkout)")
                continue
            path = repo / m.file
            original = path.read_text()
            path.write_text(check_applies(m, repo))
            try:
                rc, secs, tail, cpu = run_selection(repo, sel, timeout, jobs, m.restating, m.k)
            finally:
                path.write_text(original)
            first = next((ln for ln in tail.splitlines() if ln.startswith(("FAILED", "ERROR"))), "")
            node = first.split()[1] if len(first.split()) > 1 else ""
            r.update(rc=rc, seconds_to_fail=round(secs, 1), cpu_seconds=round(cpu, 1), first_failure=first or tail[-300:])
            if rc in (0, 5):
                r.update(caught=False, verdict="NOT CAUGHT")
            elif rc == -1:
                r.update(caught=False, verdict=f"selection timed out after {timeout} s")
            else:
                brc, bsecs, btail, bcpu = run_selection(repo, (node,), timeout, jobs) if node else (-2, 0, "", 0)
                r["first_failure_passes_unmutated"] = brc == 0
                r.update(caught=brc == 0, verdict="caught" if brc == 0 else
                         f"the failing test also fails unmutated (rc {brc}): {btail[-200:]}")
            log(f"[{m.area}] {m.name}: {r['verdict']} in {secs:.1f} s wall, {cpu:.1f} s CPU ({first[:140]})")
            if on_result is not None:
                on_result(r)
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_mutations.py", description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated mutation names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds one selection may take")
    ap.add_argument("-n", "--jobs", type=int, default=0, help="pytest-xdist workers per selection (0: none)")
    ap.add_argument("--parallel", type=int, default=1, help="mutations planted at once, each in its own copy")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "mutations.json"))
    ap.add_argument("--repo", default=str(ROOT), help="the checkout to copy and mutate (default: this one)")
    args = ap.parse_args(argv)
    names = set(filter(None, args.only.split(",")))
    unknown = names - {m.name for m in MUTATIONS}
    if unknown:
        ap.error(f"unknown mutations: {sorted(unknown)}")
    todo = [m for m in MUTATIONS if not names or m.name in names]
    if args.list:
        for m in todo:
            print(f"{m.area:12s} {m.name:26s} {m.file}: {m.what}\n{'':40s}tests: {' '.join(m.tests)}"
                  + (f" -k {m.k!r}" if m.k else ""))
        return 0
    for m in todo:
        check_applies(m, Path(args.repo))
    t0 = time.time()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done: list = []

    def save(r=None) -> None:          # after every mutation: a killed run still leaves what it measured
        if r is not None:
            done.append(r)
        out.write_text(json.dumps({"python": sys.version.split()[0], "repo": args.repo,
                                   "wall_s": round(time.time() - t0, 1), "results": done}, indent=1))

    log = lambda s: print(s, flush=True)          # noqa: E731
    res = (run_parallel(todo, args.parallel, args.timeout, log, args.jobs, Path(args.repo), save)
           if args.parallel > 1 else run(todo, args.timeout, log, args.jobs, Path(args.repo), save))
    done[:] = []
    for r in res:
        save(r)
    print(f"\n{'area':12s} {'mutation':26s} {'caught':7s} {'wall s':>7s} {'CPU s':>6s}  first failing test")
    for r in res:
        v = {True: "yes", False: "NO", None: "not run"}[r["caught"]]
        print(f"{r['area']:12s} {r['name']:26s} {v:7s} {r.get('seconds_to_fail') or '-':>7} "
              f"{r.get('cpu_seconds') if r['caught'] else '-':>6}  {r.get('first_failure') or r.get('verdict')}")
    missed = [r["name"] for r in res if not r["caught"]]
    print(f"{len(res) - len(missed)} of {len(res)} caught" + (f"; missed: {missed}" if missed else "") + f" -> {out}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
