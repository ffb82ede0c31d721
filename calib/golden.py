"""Golden data from real hardware: run registered launches on the GPU and store their outputs for CI replay.

``python -m calib.golden regen [--case NAME ...] [--root DIR]`` (on a machine with a CUDA GPU) runs every
registered case (or the named ones) through :func:`tcsim.hw.launcher.run_on_gpu` and writes
``<root>/<case>/meta.json`` and ``<root>/<case>/outputs.npz`` (root: ``tests/golden``).

``meta.json`` records how to rebuild the launch (``factory`` = ``module:function`` and its ``kwargs``; the
input seed is the ``seed`` kwarg), SHA-256 digests of the PTX and of every array argument before the run
(so a replay can tell that it rebuilt the same launch), which arguments are outputs (stored in
``outputs.npz`` as ``arg<i>``) and the digest of every other array argument after the GPU run, plus the GPU
name, driver version, compute capability, date, the exact command and the kernel's elapsed time.

``tests/hw/test_golden_replay.py`` rebuilds each launch from its ``meta.json``, runs the simulator and requires
bit-identical outputs -- real-hardware truth checking the simulator on every CI run, without a GPU.

``python -m calib.golden list`` prints the registry; ``python -m calib.golden replay [--case NAME ...] [--jobs J]``
does what the test does, with a report (``--jobs``: the cases simulated in J processes, reported in order).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import pipeline as P
from .pipeline import GOLDEN_ROOT, META, sha256

OUTPUTS = "outputs.npz"


@dataclass(frozen=True)
class Case:
    """A registered golden case: ``factory(**kwargs)`` builds the launch; ``outputs`` are the argument
    indices whose post-run contents are stored."""

    name: str
    factory: str
    kwargs: dict = field(default_factory=dict)
    outputs: tuple = ()
    note: str = ""

    def build(self):
        return build_launch(self.factory, self.kwargs)


def build_launch(factory: str, kwargs: dict):
    """``factory(**kwargs)``; a factory recorded under an earlier module name is read with today's
    (:func:`calib.pipeline.current_name`: the golden meta.json files name ``examples.*``)."""
    return P.resolve(factory)(**kwargs)


def _registry() -> dict:
    cases = []
    for beta in (0, 1):
        for seed in (0, 1, 2):
            cases.append(Case(f"mma_gemm_beta{beta}_seed{seed}", "tcsim.examples.mma_gemm:make_launch",
                              {"beta": beta, "seed": seed}, (3,), "one m16n8k16 f16 mma.sync, D = A@B + beta*C"))
    for seed in (0, 1, 2):
        cases.append(Case(f"tma_mma_gemm_seed{seed}", "tcsim.examples.tma_mma_gemm:make_launch", {"seed": seed}, (2,),
                          "64x64x64 gemm: TMA 128B-swizzled loads, mbarrier, ldmatrix, 4 chained mma.sync"))
    for chunks, nbytes, seed in ((12, 1024, 0), (7, 80, 7), (25, 32, 25), (3, 128, 3), (1, 16, 1), (10, 256, 9),
                                 (0, 64, 0), (5, 2048, 5)):
        cases.append(Case(f"bulk_pipeline_{chunks}x{nbytes}", "tcsim.examples.bulk_pipeline:make_launch",
                          {"chunks": chunks, "chunk_bytes": nbytes, "seed": seed}, (1,),
                          "3-stage cp.async.bulk ring, full/empty mbarriers, out = 3*in + 1"))
    for cl, n, seed in ((2, 3, 0), (4, 2, 1)):
        cases.append(Case(f"cluster_exchange_c{cl}_seed{seed}", "tcsim.examples.cluster_exchange:make_launch",
                          {"cluster": cl, "clusters": n, "seed": seed}, (1,),
                          "DSMEM ring: mapa + ld/st.shared::cluster, remote mbarrier arrive, barrier.cluster"))
    return {c.name: c for c in cases}


CASES = _registry()


# ------------------------------------------------------------------------------------------------ digests
def ptx_digest(launch) -> str:
    return sha256(launch.ptx_text()[0].encode())


def array_args(launch) -> dict:
    return {i: a for i, a in enumerate(launch.args) if isinstance(a, np.ndarray)}


def input_digests(launch) -> dict:
    return {str(i): sha256(a) for i, a in array_args(launch).items()}


# ------------------------------------------------------------------------------------------------ regen
def regen_case(case: Case, root: Path, command: str) -> dict:
    launch = case.build()
    inputs = input_digests(launch)
    res = P.execute(launch, "gpu")
    if not res.ok:
        raise RuntimeError(f"{case.name}: the GPU run failed: {res.error}: {res.detail}")
    arrays = array_args(launch)
    bad = [i for i in case.outputs if i not in arrays]
    if bad:
        raise ValueError(f"{case.name}: outputs {bad} are not array arguments")
    outs = {f"arg{i}": np.asarray(res.outputs[i]) for i in case.outputs}
    post = {str(i): sha256(np.asarray(res.outputs[i]).reshape(arrays[i].shape).astype(arrays[i].dtype, copy=False))
            for i in arrays if i not in case.outputs}
    meta = {
        "case": case.name,
        "note": case.note,
        "factory": case.factory,
        "kwargs": case.kwargs,
        "seed": case.kwargs.get("seed"),
        "kernel": launch.kernel,
        "grid": list(launch.grid), "block": list(launch.block), "cluster": list(launch.cluster),
        "dynamic_smem": launch.dynamic_smem,
        "ptx_sha256": ptx_digest(launch),
        "inputs_sha256": inputs,
        "outputs": {str(i): {"key": f"arg{i}", "dtype": outs[f"arg{i}"].dtype.str,
                             "shape": list(outs[f"arg{i}"].shape), "sha256": sha256(outs[f"arg{i}"])}
                    for i in case.outputs},
        "other_args_after_run_sha256": post,
        **P.provenance(command, res),
        "elapsed_ms": res.elapsed_ms,
    }
    P.write_record(root / case.name, meta, outs, OUTPUTS)
    return meta


# ------------------------------------------------------------------------------------------------ replay
class GoldenMismatch(AssertionError):
    pass


def load_case(d: Path):
    return P.load_record(d, OUTPUTS)


def replay_case(d: Path, seed: int | None = 0) -> str:
    """Rebuild the launch of golden dir ``d``, simulate it, compare bit for bit; returns a one-line summary,
    raises :class:`GoldenMismatch` with the first differing element."""
    from tcsim.launch import run_launch

    meta, outs = load_case(d)
    launch = build_launch(meta["factory"], meta["kwargs"])
    stale = P.check_fresh(f"{meta['case']} ({meta['factory']}(**{meta['kwargs']}))",
                          {"PTX": meta["ptx_sha256"], "input arrays": meta["inputs_sha256"]},
                          {"PTX": ptx_digest(launch), "input arrays": input_digests(launch)})
    if stale:
        raise GoldenMismatch(f"{stale} (`python -m calib.golden regen --case {meta['case']}` on a GPU)")
    result = run_launch(launch, seed=seed)
    for i, spec in meta["outputs"].items():
        want = outs[spec["key"]]
        got = np.asarray(result.outputs[int(i)])
        if got.dtype.str != spec["dtype"] or list(got.shape) != spec["shape"]:
            raise GoldenMismatch(f"{meta['case']}: output arg{i} is {got.dtype}{list(got.shape)}, the GPU's "
                                 f"{spec['dtype']}{spec['shape']}")
        diff = P.first_difference(got, want)
        if diff is not None:
            n, idx = diff
            raise GoldenMismatch(f"{meta['case']}: output arg{i} differs from the {meta['gpu']} in {n} of "
                                 f"{got.size} elements; first at {list(idx)}: simulator {got[idx]!r} "
                                 f"({P.hex_bits(got[idx])}), GPU {want[idx]!r} ({P.hex_bits(want[idx])})")
    arrays = array_args(launch)
    for i, h in meta["other_args_after_run_sha256"].items():
        got = np.asarray(result.outputs[int(i)]).reshape(arrays[int(i)].shape)
        if sha256(got) != h:
            raise GoldenMismatch(f"{meta['case']}: argument {i} (not an output) after the simulated run differs "
                                 f"from the GPU's")
    return f"{meta['case']}: bit-identical to {meta['gpu']} ({sum(outs[k].size for k in outs)} elements)"


def _replay_line(d: Path) -> str:
    """replay_case's summary, or ``FAIL <mismatch>``."""
    try:
        return replay_case(d)
    except GoldenMismatch as e:
        return f"FAIL {e}"


def golden_dirs(root: Path = GOLDEN_ROOT) -> list:
    """The example-case directories (a meta.json beside an outputs.npz; other golden sets have their own)."""
    return sorted(p.parent for p in root.glob(f"*/{META}") if (p.parent / OUTPUTS).exists())


# ------------------------------------------------------------------------------------------------ CLI
def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m calib.golden", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("regen", help="run the cases on the GPU and (re)write their golden data")
    r.add_argument("--case", action="append", choices=sorted(CASES))
    r.add_argument("--root", type=Path, default=GOLDEN_ROOT)
    sub.add_parser("list", help="list the registered cases")
    p = sub.add_parser("replay", help="simulate the recorded cases and compare with the stored GPU outputs")
    p.add_argument("--case", action="append")
    p.add_argument("--root", type=Path, default=GOLDEN_ROOT)
    p.add_argument("--jobs", type=int, default=1, help="simulate the cases in this many processes")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        for c in CASES.values():
            print(f"{c.name:28s} {c.factory}(**{c.kwargs}) outputs {list(c.outputs)}")
        return 0
    if args.cmd == "replay":
        dirs = [d for d in golden_dirs(args.root) if not args.case or d.name in args.case]
        lines = P.run_all(dirs, _replay_line, max(1, args.jobs), processes=True)
        for line in lines:
            print(line)
        return 1 if any(line.startswith("FAIL ") for line in lines) else 0
    from tcsim.hw.launcher import GpuUnavailable

    command = P.command_line("calib.golden", argv)
    try:
        for name in args.case or list(CASES):
            meta = regen_case(CASES[name], args.root, command)
            print(f"{name}: {meta['gpu']} driver {meta['driver_version']} sm_{meta['compute_capability']} "
                  f"{meta['elapsed_ms']:.3f} ms -> {args.root / name}", flush=True)
    except GpuUnavailable as e:
        print(f"calib.golden: no GPU here: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
