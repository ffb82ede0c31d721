"""The one pipeline of the measurement campaigns: generate -> run -> record -> compare -> install.

Every campaign of ``calib/`` (``golden``: the example launches; ``tma``: tile-mode TMA cases; ``microbench``:
clock64 microbenchmarks; ``probes.alu_probe`` / ``probes.mma_probe``: scalar and mma.sync numerics;
``fuzz.record``: differential fuzz campaigns) generates its own kernels and launches (:class:`tcsim.launch.Launch`)
and then goes through the steps here:

run
    :func:`execute` runs one launch on the GPU (:func:`tcsim.hw.launcher.run_on_gpu`: its own child process, a
    time limit) or on the simulator (:func:`tcsim.launch.run_launch`) and returns a :class:`Run`: outputs, or the
    CUDA error / the simulator's diagnosis as a result, never an exception (except
    :class:`tcsim.hw.launcher.GpuUnavailable`: no GPU here).  :func:`run_all` runs many, ``jobs`` at a time, and
    reports the ones not started within a time limit as :data:`NOT_RUN`.
record
    :func:`provenance` (the command, the UTC date, the GPU, its driver and compute capability, tcsim's version),
    :func:`sha256` digests of the PTX and of the inputs, and :func:`write_record`: ``meta.json`` (``json`` with
    ``indent=1``) beside a compressed ``.npz`` of the arrays.
compare
    :func:`load_record` (typed :class:`RecordError` for a folder that is no record), :func:`check_fresh` (a
    record of another kernel or other inputs is stale, never compared) and :func:`first_difference` (bit for
    bit, NaN payloads and signed zeros included).
install
    :func:`install_files`: copy checked record files into ``tests/golden/...`` (or package data) under their
    installed names, world-readable, below a size limit.

Names recorded before the campaigns moved out of ``hw/`` (``python -m hw.golden regen``, factory
``examples.mma_gemm:make_launch``) stay in the golden files as they were recorded; :func:`current_name` and
:func:`current_command` read them with today's names (:data:`RENAMED`).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import importlib
import json
import shlex
import shutil
import time
import traceback
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_ROOT = ROOT / "tests" / "golden"
#: the data the simulator reads at run time (package data of tcsim.timing), in this checkout
PACKAGE_DATA = ROOT / "sim" / "timing" / "data"
META = "meta.json"
#: the errors that are no answer of the back end (the launch did not run, or the harness broke on it)
NOT_RUN, HARNESS_CRASH = "NOT_RUN", "HARNESS_CRASH"
UNRECORDED = (NOT_RUN, HARNESS_CRASH)

#: Module names (and the paths of their files) as golden data recorded before the move names them, and their
#: names now.  The golden files keep what was recorded (they are byte-identical records); readers map.
RENAMED = (
    ("hw.tma_cases", "calib.tma"),
    ("hw.golden", "calib.golden"),
    ("hw.faults", "calib.faults"),
    ("hw.sass_facts", "calib.sass_facts"),
    ("hw.sass_schedule", "calib.sass_schedule"),
    ("hw.microbench", "calib.microbench"),
    ("hw.probes", "calib.probes"),
    ("hw.fuzz", "calib.fuzz"),
    ("examples", "tcsim.examples"),
)


#: the files of hw/ that stayed there (the GPU back end, tcsim.hw)
BACKEND_FILES = ("__init__.py", "launcher.py", "trace.py", "diff.py", "cli_diff.py")


class RecordError(ValueError):
    """A record folder or file that cannot be used: one line saying why (CLIs print it instead of a traceback)."""


# ------------------------------------------------------------------------------------------------ names
def current_name(name: str) -> str:
    """Today's name of a module (or ``module:function``) that a golden file recorded under an earlier name:
    ``examples.mma_gemm:make_launch`` -> ``tcsim.examples.mma_gemm:make_launch``; a current name is returned
    as it is."""
    mod, sep, fn = name.partition(":")
    for old, new in RENAMED:
        if mod == old or mod.startswith(old + "."):
            return new + mod[len(old):] + sep + fn
    return name


def current_command(command: str) -> str:
    """A recorded command line with today's module names and paths (``python -m hw.golden regen`` ->
    ``python -m calib.golden regen``, ``bash hw/probes/alu_device_run.sh`` -> ``bash calib/probes/...``)."""
    words = command.split(" ")
    for i, w in enumerate(words):
        if i and words[i - 1] == "-m":
            words[i] = current_name(w)
        elif w.startswith("hw/"):
            words[i] = current_path(w)
    return " ".join(words)


def current_path(path: str) -> str:
    """Today's path of a campaign file that a golden file names by its place in ``hw/`` then: a module as
    :func:`current_name` says (``hw/tma_cases.py`` -> ``calib/tma/``), any other file of a campaign moved as it
    was (``hw/probes/alu_device_run.sh`` -> ``calib/probes/alu_device_run.sh``); a file of the GPU back end
    (``hw/launcher.py``, still there) is left as it is."""
    if not path.startswith("hw/") or path[3:] in BACKEND_FILES:
        return path
    if path.endswith(".py"):
        mod = current_name(path[:-3].replace("/", "."))
        new = mod.replace(".", "/")
        return new + ".py" if (ROOT / (new + ".py")).is_file() else new + "/"
    return "calib/" + path[3:]


def resolve(factory: str):
    """The function ``module:function`` names (an earlier name is read as :func:`current_name` says)."""
    mod_name, _, fn_name = current_name(factory).partition(":")
    if not fn_name:
        raise ValueError(f"factory must be 'module:function', got {factory!r}")
    return getattr(importlib.import_module(mod_name), fn_name)


# ------------------------------------------------------------------------------------------------ record
def sha256(x) -> str:
    """SHA-256 of an array (its dtype and shape, then its bytes), of bytes, or of ``str(x)``."""
    if isinstance(x, np.ndarray):
        h = hashlib.sha256()
        h.update(f"{x.dtype.str}{list(x.shape)}".encode())
        h.update(np.ascontiguousarray(x).tobytes())
        return h.hexdigest()
    return hashlib.sha256(x if isinstance(x, bytes) else str(x).encode()).hexdigest()


def command_line(prog: str, argv) -> str:
    """The command that made a record, as it is written into it: ``python -m PROG ARGS`` (shell-quoted)."""
    return f"python -m {prog} " + " ".join(shlex.quote(str(a)) for a in argv)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def gpu_fields(device, driver, cc) -> dict:
    """``gpu``, ``driver_version`` and ``compute_capability`` ("9.0") of a record."""
    return {"gpu": device, "driver_version": driver,
            "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None}


def provenance(command: str, run: "Run | None" = None) -> dict:
    """What every record says about how it was made: the command, the date, tcsim's version and (from a GPU
    :class:`Run`) the GPU."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        tcsim_version = version("tcsim")
    except PackageNotFoundError:
        tcsim_version = None
    out = {"command": command, "date": utc_now(), "tcsim_version": tcsim_version}
    if run is not None:
        out.update(gpu_fields(run.device, run.driver, run.cc))
    return out


def write_json(path: Path, obj) -> None:
    Path(path).write_text(json.dumps(obj, indent=1) + "\n")


def write_record(d: Path, meta: dict, arrays: dict, data_name: str) -> None:
    """``d/<data_name>`` (a compressed .npz of ``arrays``) and ``d/meta.json``."""
    d = Path(d)
    d.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(d / data_name, **arrays)
    write_json(d / META, meta)


def write_packed(path: Path, meta: dict, arrays: dict) -> None:
    """A one-file record: a compressed .npz of ``arrays`` whose ``meta`` entry holds ``meta`` as JSON bytes."""
    np.savez_compressed(path, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)


def load_packed(path: Path) -> tuple:
    """(the open .npz, its meta) of a :func:`write_packed` record; :class:`RecordError` when it is not one."""
    try:
        z = np.load(path)
        meta = json.loads(bytes(z["meta"]).decode())
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as e:
        raise RecordError(f"{path} is not a one-file record (an .npz with a JSON 'meta' entry): {e}") from None
    return z, meta


def read_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordError(f"{path} cannot be read ({e})") from None


def load_arrays(path: Path) -> dict:
    """{key: array} of an .npz; :class:`RecordError` when it is not one."""
    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise RecordError(f"{path} cannot be read as a numpy .npz archive ({e})") from None


def load_record(d: Path, data_name: str, hint: str = "") -> tuple:
    """(meta, {key: array}) of a record folder ``d`` (``meta.json`` + ``data_name``)."""
    d = Path(d)
    if not (d / META).is_file() or not (d / data_name).is_file():
        raise RecordError(f"{d} holds no {META} + {data_name}" + (f" ({hint})" if hint else ""))
    return read_json(d / META), load_arrays(d / data_name)


# ------------------------------------------------------------------------------------------------ run
@dataclass
class Run:
    """One launch on one back end: ``outputs`` (every argument after the run, as the back end returns them),
    or ``error`` (a CUDA error name, ``sim:<diagnostic class>``, ``sim-crash:<exception>``, or one of
    :data:`UNRECORDED`) with ``detail``."""

    ok: bool
    outputs: list = field(default_factory=list)
    error: str | None = None
    detail: str | None = None
    elapsed_ms: float | None = None
    wall_s: float = 0.0
    device: str | None = None
    driver: int | None = None
    cc: tuple | None = None
    #: for a simulator diagnosis, how the GPU ends the same event (tcsim.isa.errors.TcsimError.gpu_error: a CUDA
    #: error name, "hang", or None where the GPU has no counterpart); fault cases are matched by it
    gpu_error: str | None = None


def execute(launch, backend: str, timeout: float = 120.0, seed=None, timing: bool = False,
            max_instructions: int | None = None) -> Run:
    """Run ``launch`` on ``backend`` ("gpu" or "sim").  A CUDA error, a simulator diagnosis
    (:class:`tcsim.isa.errors.TcsimError`) or a crash of either back end is a result; only
    :class:`tcsim.hw.launcher.GpuUnavailable` propagates."""
    t = time.time()
    if backend == "gpu":
        from tcsim.hw.launcher import GpuUnavailable, run_on_gpu

        try:
            res = run_on_gpu(launch, timeout=timeout)
        except GpuUnavailable:
            raise
        except Exception as e:  # noqa: BLE001 - a crash of the back end on one launch is that launch's result
            lines = [x for x in str(e).strip().splitlines() if x.strip()]
            return Run(False, error=HARNESS_CRASH, detail=(lines[-1] if lines else repr(e))[:2000],
                       wall_s=time.time() - t)
        if not res.ok:
            return Run(False, error=res.error, detail=(res.error_detail or "")[:2000], wall_s=time.time() - t)
        return Run(True, outputs=list(res.outputs), elapsed_ms=res.elapsed_ms, wall_s=time.time() - t,
                   device=res.device, driver=res.driver, cc=tuple(res.compute_capability or ()))
    if backend != "sim":
        raise ValueError(f"backend must be 'gpu' or 'sim', got {backend!r}")
    from tcsim.isa.errors import TcsimError
    from tcsim.launch import run_launch

    kw = {} if max_instructions is None else {"max_instructions": max_instructions}
    try:
        res = run_launch(launch, seed=seed, timing=timing, **kw)
    except TcsimError as e:
        return Run(False, error=f"sim:{type(e).__name__}", detail=str(e), wall_s=time.time() - t,
                   gpu_error=e.gpu_error)
    except Exception as e:  # noqa: BLE001 - an internal simulator error: reported, never a diagnosis
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return Run(False, error=f"sim-crash:{type(e).__name__}",
                   detail=f"internal simulator error {type(e).__name__}: {e} at {tb.filename}:{tb.lineno}",
                   wall_s=time.time() - t)
    return Run(True, outputs=list(res.outputs), wall_s=time.time() - t, device="tcsim")


def run_all(items, one, jobs: int = 1, time_limit: float | None = None, not_run=None, processes: bool = False) -> list:
    """``[one(item) for item in items]``, ``jobs`` at a time, in order: threads (each GPU run is its own child
    process), or with ``processes`` forked worker processes (simulator runs: Python-bound, independent;
    :func:`tcsim.parallel.fork_map` -- ``one`` travels by fork, items and results must pickle).  With
    ``time_limit`` (seconds from the call), an item not started by then gives ``not_run(item)`` instead."""
    t0 = time.time()

    def call(item):
        if time_limit is not None and time.time() - t0 > time_limit:
            return not_run(item)
        return one(item)

    items = list(items)
    if processes:
        from tcsim.parallel import fork_map
        return list(fork_map(call, items, jobs))
    if jobs > 1 and len(items) > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(call, items))
    return [call(item) for item in items]


def not_run(time_limit: float) -> Run:
    return Run(False, error=NOT_RUN, detail=f"not started within the {time_limit} s time limit")


def device_info() -> dict:
    """``gpu``, ``driver_version``, ``compute_capability`` of GPU 0, asked in a child process (the parent never
    initialises CUDA)."""
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(1) as pool:
        info = pool.apply(_probe_device)
    return gpu_fields(info["name"], info["driver"], info["cc"])


def _probe_device() -> dict:
    from tcsim.hw.launcher import probe

    return probe()


# ------------------------------------------------------------------------------------------------ compare
def check_fresh(what: str, recorded: dict, now: dict) -> str | None:
    """None when the digests a record holds (``{name: sha256}``) are the ones the generator makes now, else a
    one-line reason (the record is stale: re-record it, never compare)."""
    bad = [k for k in recorded if recorded[k] != now.get(k)]
    if not bad:
        return None
    return f"{what}: the {' and the '.join(bad)} it builds changed since the record was made"


def bits_equal(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(
        np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


def first_difference(got: np.ndarray, want: np.ndarray):
    """None when ``got`` and ``want`` are bit-identical element by element (same dtype and shape required),
    else (number of differing elements, index of the first)."""
    gb = np.ascontiguousarray(got).view(np.uint8).reshape(got.shape + (-1,))
    wb = np.ascontiguousarray(want).view(np.uint8).reshape(want.shape + (-1,))
    bad = np.argwhere((gb != wb).any(axis=-1))
    if not len(bad):
        return None
    return len(bad), tuple(int(x) for x in bad[0])


def hex_bits(v) -> str:
    """An element's bits, most significant byte first: ``0x7fc00001``."""
    return "0x" + np.asarray(v).tobytes()[::-1].hex()


# ------------------------------------------------------------------------------------------------ install
def install_files(files, dest: Path, limit: int = 16 << 20) -> list:
    """Copy ``[(source path, installed name)]`` into ``dest`` (made if needed), each world-readable and below
    ``limit`` bytes (checked for all before anything is copied); returns the installed paths."""
    files = [(Path(p), name) for p, name in files]
    for p, _ in files:
        if p.stat().st_size >= limit:
            raise RecordError(f"{p} is {p.stat().st_size} bytes (limit {limit >> 20} MiB)")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for p, name in files:
        shutil.copyfile(p, dest / name)
        (dest / name).chmod(0o644)
        out.append(dest / name)
    return out
