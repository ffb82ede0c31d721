"""The ``tcsim`` command line.

    tcsim demo [--kernel K] [--seed N] [--trace F] simulate an embedded kernel, check it, print a decoded
               [--backend sim|gpu|both]           summary (default: the tcgen05 GEMM gemm_async; --kernel
                                                  mma_gemm: the former default, the Hopper mma.sync seed)
    tcsim check FILE.ptx [...]                    parse + decode every instruction; exit 1 on anything tcsim
                                                  cannot execute (each reported with file:line:col)
    tcsim check --list                            list the instruction forms tcsim executes
    tcsim run LAUNCH.py [--trace F] [--seed N]    run a launch file and print its check and a summary (with
              [--backend sim|gpu|both]            the timing model's cycles, tensor throughput, utilisation
              [--no-timing]                       and top stalls; --no-timing: the 1-cycle model)
              [--explore N] [--schedule K]        --explore N: run N schedules (warp order, async completion
                                                  early/late; tcsim.explore) and report the union of findings,
                                                  output differences and a --schedule K reproducing each;
                                                  --schedule K: run exactly schedule K (0: the default);
              [--jobs J]                          --jobs J: the --explore schedules in J processes
    tcsim diff LAUNCH.py [--against gpu|golden:P] simulator vs GPU: outputs and per-warp traces, bit for bit
    tcsim report LAUNCH.py [-o OUT.html]          run a launch file and write its self-contained HTML report
                                                  (``tcsim run --report OUT.html``; ``--perfetto OUT.pftrace``:
                                                  the Perfetto timeline; tcsim.report)
    tcsim debug LAUNCH.py [--seed N] [--timing]   interactive debugger: breakpoints, watchpoints, reverse
                [-x COMMANDS]                     stepping, forced interleavings (tcsim.debugger.prompt)

Runs (``run``, ``demo``) stop at their budget -- ``--max-seconds S`` of simulation work (CPU time; default 40 s)
or ``--max-instructions N`` warp-instructions -- print a progress line on stderr once longer than ~2 s (on a
terminal; ``--progress``: also when stderr is not one, ``--no-progress``: never), report a livelock (every live
warp polling while the machine state repeats) like a deadlock, and stop on Ctrl-C with every warp's position
(exit status 130); :mod:`tcsim.watch`.

A launch file is a Python file (or an ``examples`` module) that defines ``make_launch()`` returning a
:class:`tcsim.launch.Launch` (or a module-level ``LAUNCH``), and optionally ``check(result, launch)``
returning ``(ok, message)``.  Exit status: 0 success, 1 a diagnostic or failed check, 2 bad usage (or a launch
file that cannot be imported), 130 stopped by Ctrl-C.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path

from tcsim.isa.errors import TcsimError

#: ``tcsim demo --kernel NAME`` -> example module; the first entry is the default
DEMO_KERNELS = {
    "gemm_async": "tcsim.examples.gemm_async",                   # tcgen05 (sm_100a) warpgroup GEMM, TMEM accumulator
    "mma_gemm": "tcsim.examples.mma_gemm",                       # the seed gemm: one warp, 16x8x16 mma.sync (sm_90a)
    "tcgen05_walkthrough": "tcsim.examples.tcgen05_walkthrough",
    "tma_mma_gemm": "tcsim.examples.tma_mma_gemm",
    "bulk_pipeline": "tcsim.examples.bulk_pipeline",
}
DEMO_DEFAULT = "gemm_async"


def _installed_module_name(p: Path) -> str | None:
    """The ``tcsim.*`` name of a file of the installed package (``examples/gemm_async.py`` of the checkout is
    ``tcsim.examples.gemm_async``), so it is imported once, under the name its own imports use."""
    import tcsim
    for sub in ("examples", "isa", "hw", None):
        pkg = importlib.import_module(f"tcsim.{sub}") if sub else tcsim
        for d in getattr(pkg, "__path__", ()):
            try:
                rel = p.relative_to(Path(d).resolve())
            except ValueError:
                continue
            return ".".join([pkg.__name__, *rel.with_suffix("").parts])
    return None


def _user_frame(exc: BaseException, path: Path | None = None) -> str | None:
    """``file:line`` of the launch file's code where ``exc`` was raised: the innermost frame in ``path`` (or, without
    it, the innermost frame outside the tcsim package); a SyntaxError's own position."""
    import traceback
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{exc.filename}:{exc.lineno}"
    pkg = Path(__file__).resolve().parent
    best = None
    for fr in traceback.extract_tb(exc.__traceback__):
        f = Path(fr.filename)
        try:
            f = f.resolve()
        except OSError:
            pass
        if (path is not None and f == path) or (path is None and pkg not in f.parents and f.name != "cli.py"):
            best = f"{fr.filename}:{fr.lineno}"
    return best


def _user_error(exc: BaseException, what: str, path: Path | None = None):
    """A :class:`~tcsim.isa.errors.LaunchError` for an exception the user's launch file raised: where (file:line of
    the launch file's code), what was running and the exception."""
    from tcsim.isa.errors import LaunchError
    where = _user_frame(exc, path)
    msg = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return LaunchError(f"{what} raised {msg}" + (f" (at {where})" if where else ""))


def _load_launch_module(path: str):
    """Import a launch file: a .py path (as part of its package when it sits in one) or a module name.  A path that
    is not a file or module is a FileNotFoundError; what importing it raises propagates (``tcsim run`` reports it
    with its place in the launch file, :func:`_launch_of` as a LaunchError)."""
    p = Path(path)
    if p.is_dir():
        raise FileNotFoundError(f"launch file {path or '.'} is a directory")
    if p.suffix == ".py" and p.is_file():
        return _import_launch_file(p.resolve())
    if p.suffix == ".py":
        raise FileNotFoundError(f"launch file {path} not found")
    if p.is_file() and p.suffix != ".py":
        hint = "; `tcsim check` verifies a PTX file" if p.suffix == ".ptx" else ""
        raise FileNotFoundError(f"{path} is not a launch file (a .py file defining make_launch() that returns a "
                                f"tcsim.launch.Launch, or a module name){hint}")
    if not path or any(not part.isidentifier() for part in path.split(".")):
        raise FileNotFoundError(f"launch file or module {path!r} not found (neither a .py file nor a module name)")
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as e:
        if e.name is not None and (path == e.name or path.startswith(e.name + ".")):
            raise FileNotFoundError(f"launch file or module {path} not found") from None
        raise


def _import_launch_file(p: Path):
    name = _installed_module_name(p)
    if name is not None:
        return importlib.import_module(name)
    parts = [p.stem]
    root = p.parent
    while (root / "__init__.py").exists():
        parts.insert(0, root.name)
        root = root.parent
    if len(parts) > 1:
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        return importlib.import_module(".".join(parts))
    spec = importlib.util.spec_from_file_location(p.stem, p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _mod_path(mod) -> Path | None:
    f = getattr(mod, "__file__", None)
    return Path(f).resolve() if f else None


def _get_launch(mod):
    """The :class:`~tcsim.launch.Launch` of a launch module: ``make_launch()`` or ``LAUNCH``; anything else (no such
    name, not callable, raising, returning something that is not a Launch) is a LaunchError naming it."""
    from tcsim.isa.errors import LaunchError
    from .launch import Launch

    where = getattr(mod, "__file__", None) or mod.__name__
    if hasattr(mod, "make_launch"):
        fn = mod.make_launch
        if not callable(fn):
            raise LaunchError(f"{where}: make_launch is a {type(fn).__name__}, not a function",
                              expected="def make_launch(): return Launch(...)")
        try:
            launch = fn()
        except TcsimError:
            raise
        except Exception as e:  # noqa: BLE001 -- the user's code: reported where it failed
            raise _user_error(e, f"{where}: make_launch()", _mod_path(mod)) from e
        what = "make_launch()"
    elif hasattr(mod, "LAUNCH"):
        launch, what = mod.LAUNCH, "LAUNCH"
    else:
        raise LaunchError(f"{where} defines neither make_launch() nor LAUNCH",
                          expected="a launch file defining make_launch() that returns a tcsim.launch.Launch "
                                   "(or a module-level LAUNCH)")
    if not isinstance(launch, Launch):
        raise LaunchError(f"{where}: {what} is a {type(launch).__name__}, not a tcsim.launch.Launch",
                          expected=f"{what} returning tcsim.launch.Launch(ptx=..., kernel=..., grid=..., block=..., "
                                   "args=[...])")
    return launch


def _call_check(mod, result, launch) -> tuple[bool, str]:
    """The launch file's ``check(result, launch)``: ``(ok, message)``; no check: ``(True, "no check defined")``."""
    from tcsim.isa.errors import LaunchError
    if not hasattr(mod, "check"):
        return True, "no check defined"
    where = getattr(mod, "__file__", None) or mod.__name__
    try:
        out = mod.check(result, launch)
    except TcsimError:
        raise
    except Exception as e:  # noqa: BLE001 -- the user's code
        raise _user_error(e, f"{where}: check(result, launch)", _mod_path(mod)) from e
    if not (isinstance(out, tuple) and len(out) == 2):
        raise LaunchError(f"{where}: check(result, launch) returned {out!r:.60}",
                          expected="check(result, launch) returning a pair (ok, message)")
    return bool(out[0]), str(out[1])


def _launch_of(spec: str):
    """The launch of a launch file or module name (``tcsim diff`` builds its launch with this)."""
    try:
        mod = _load_launch_module(spec)
    except (TcsimError, FileNotFoundError):
        raise
    except Exception as e:  # noqa: BLE001 -- the launch file's own error, with its place
        raise _user_error(e, f"importing launch file {spec}") from e
    return _get_launch(mod)


def summary(result) -> str:
    s = result.stats
    wall = max(s["wall_s"], 1e-9)
    model = "" if s.get("timing") else " (1-cycle model, --no-timing)"
    return (f"{s['ctas']} CTA(s), {s['warps']} warp(s); {s['cycles']} cycles{model}; {s['warp_instructions']} "
            f"warp-instructions ({s['lane_instructions']} lane-instructions) in {s['wall_s']:.3f} s "
            f"= {s['warp_instructions'] / wall:,.0f} warp-inst/s, {s['lane_instructions'] / wall:,.0f} "
            f"lane-inst/s")


def timing_summary(result) -> list[str]:
    """The timing model's lines (cycles, tensor throughput, utilisation, top stalls); [] with timing off."""
    return result.timing.summary_lines() if getattr(result, "timing", None) is not None else []


def print_findings(findings, out=None) -> None:
    """Each finding as the user sees it, then the summary line."""
    from .findings import summarize
    out = out or sys.stdout
    for f in findings:
        print(f.format(), file=out)
    print(f"[sim] findings: {summarize(findings)}", file=out)


def _finish_findings(args, findings, error=None) -> None:
    path = getattr(args, "findings", None)
    if path:
        from .findings import write_json
        write_json(findings, path, error=None if error is None else str(error))
        print(f"findings written to {path}")


def _run_sim(mod, launch, args):
    from .launch import run_launch

    k = getattr(args, "schedule", None)
    timing = getattr(args, "timing", True)
    seed, schedule = args.seed, None
    if k is not None:                   # schedule K of an exploration seeded with --seed (tcsim.explore)
        from .explore import schedule_of
        schedule = schedule_of(launch, k, timing=timing, seed=args.seed or 0, max_instructions=args.max_instructions)
        print(f"[sim] {schedule.label()}")
        seed, schedule = None, (schedule if k else None)
    from .report import VisualOutputs       # --perfetto / --report (tcsim.report)
    visual = VisualOutputs(getattr(args, "perfetto", None), getattr(args, "report", None))
    args.visual = visual                    # --backend both rewrites the report with the comparison
    try:
        result = run_launch(launch, seed=seed, trace=args.trace, max_instructions=args.max_instructions,
                            timing=timing, strict=getattr(args, "strict", False), schedule=schedule,
                            detect=getattr(args, "detect", True), max_seconds=getattr(args, "max_seconds", None),
                            progress=getattr(args, "progress", None), observers=visual.observers)
    except TcsimError as e:
        for line in e.stdout:               # printf output and assertion lines before the error, as the GPU shows
            print(line, end="" if line.endswith("\n") else "\n")
        found = list(getattr(e, "findings", ()))
        if found and not getattr(args, "strict", False):
            print_findings([f for f in found if f is not getattr(e, "finding", None)])
        _finish_findings(args, found, e)
        try:                                # --report / --perfetto: what ran up to the error, the error located
            for line in visual.write_error(e, launch, title=getattr(args, "launch_name", None)):
                print(line)
        except Exception as w:  # noqa: BLE001 -- the run's own diagnostic comes first; the page is secondary
            print(f"tcsim: the report of the failed run could not be written: {type(w).__name__}: {w}",
                  file=sys.stderr)
        raise
    for line in result.stdout:
        print(line, end="" if line.endswith("\n") else "\n")
    ok, msg = _call_check(mod, result, launch)
    print(f"[sim] {'PASS' if ok else 'FAIL'}: {msg}")
    print(f"[sim] {summary(result)}")
    for line in timing_summary(result):
        print(f"[sim] {line}")
    if args.trace:
        print(f"trace written to {args.trace}")
    for line in visual.write(result, launch, title=getattr(args, "launch_name", None)):
        print(line)
    print_findings(result.findings)
    _finish_findings(args, result.findings)
    if any(f.severity != "lint" for f in result.findings):
        ok = False
    return ok, result


def _run_gpu(mod, launch):
    from tcsim.hw.launcher import run_on_gpu

    res = run_on_gpu(launch)
    if not res.ok:
        print(f"[gpu] FAIL: the kernel failed on {res.device or 'the GPU'}: {res.error} ({res.error_detail})")
        return False, res
    ok, msg = _call_check(mod, res, launch)
    print(f"[gpu] {'PASS' if ok else 'FAIL'}: {msg}")
    print(f"[gpu] {res.device} (sm_{res.compute_capability[0]}{res.compute_capability[1]}, driver "
          f"{res.driver}): {res.elapsed_ms:.3f} ms")
    return ok, res


def compare_outputs(a: list, b: list) -> list[str]:
    """Bit-for-bit comparison of two runs' output buffers; returns one line per differing buffer."""
    import numpy as np

    diffs = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x is None or y is None:
            continue
        x, y = np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(y).reshape(-1)
        if x.dtype != y.dtype or x.size != y.size:
            diffs.append(f"argument {i}: {x.dtype}[{x.size}] vs {y.dtype}[{y.size}]")
            continue
        neq = np.nonzero((x.view(np.uint8).reshape(x.size, -1) != y.view(np.uint8).reshape(y.size, -1)).any(1))[0]
        if neq.size:
            j = int(neq[0])
            diffs.append(f"argument {i}: {neq.size} of {x.size} elements differ; first at flat index {j}: "
                         f"{x[j]!r} vs {y[j]!r}")
    return diffs


def _explore(mod, launch, args) -> int:
    """``--explore N``: the exploration report (tcsim.explore); exit 1 when anything was found or differs."""
    from .explore import explore

    timing = getattr(args, "timing", True)
    report = explore(launch, args.explore, timing=timing, seed=args.seed or 0,
                     max_instructions=args.max_instructions, strict=getattr(args, "strict", False),
                     check=getattr(mod, "check", None), detect=getattr(args, "detect", True),
                     jobs=max(1, getattr(args, "jobs", 1) or 1))
    for line in report.format(getattr(args, "launch_name", None) or "LAUNCH"):
        print(line)
    path = getattr(args, "findings", None)
    if path:
        from .findings import write_report
        write_report(report.to_json(getattr(args, "launch_name", None) or "LAUNCH"), path)
        print(f"findings written to {path}")
    return 0 if report.ok else 1


def _output_path_problem(args) -> str | None:
    """Why ``--trace`` / ``--findings`` cannot be written (checked before the run, not after it), or None."""
    for opt in ("trace", "findings", "perfetto", "report"):
        path = getattr(args, opt, None)
        if path is None:
            continue
        p = Path(path)
        if not path or p.is_dir():
            return f"--{opt} {path!r} is a directory, not a file to write"
        if not p.parent.is_dir():
            return f"--{opt} {path}: the directory {p.parent} does not exist"
    return None


def _run_module(mod, args) -> int:
    problem = _output_path_problem(args)
    if problem:
        print(f"tcsim: {problem}", file=sys.stderr)
        return 2
    launch = _get_launch(mod)
    backend = getattr(args, "backend", "sim")
    if getattr(args, "explore", None) is not None or getattr(args, "schedule", None) is not None:
        if backend != "sim" or (args.explore is not None and args.schedule is not None) or \
                (args.explore is not None and (args.explore < 1 or args.trace)) or \
                (args.schedule is not None and args.schedule < 0):
            print("tcsim: --explore N (N >= 1) and --schedule K (K >= 0) run the simulator (--backend sim), "
                  "one or the other; to trace a schedule, use --schedule K --trace F", file=sys.stderr)
            return 2
        if args.explore is not None:
            return _explore(mod, launch, args)
    if backend == "sim":
        ok, _ = _run_sim(mod, launch, args)
        return 0 if ok else 1
    from tcsim.hw.launcher import GpuUnavailable
    rs = None
    try:
        if backend == "gpu":
            ok, _ = _run_gpu(mod, launch)
            return 0 if ok else 1
        ok_s, rs = _run_sim(mod, launch, args)
        ok_g, rg = _run_gpu(mod, launch)
    except GpuUnavailable as e:
        print(f"tcsim: the GPU back end cannot run here: {e}", file=sys.stderr)
        if rs is not None and getattr(args, "report", None):       # the report says why there is no comparison
            from .report import outputs_diff_json
            diff = outputs_diff_json("simulator", "GPU", [], len(rs.outputs))
            diff.update(identical=False, unavailable=f"the GPU back end cannot run here: {e}", outputs=[])
            for line in args.visual.write(rs, launch, title=getattr(args, "launch_name", None), diff=diff):
                print(line)
        return 2
    if not (ok_g and getattr(rg, "ok", True)):
        return 1
    diffs = compare_outputs(rs.outputs, rg.outputs)
    if getattr(args, "report", None):       # the report's sim-vs-GPU view (tcsim.report)
        from .report import outputs_diff_json
        for line in args.visual.write(rs, launch, title=getattr(args, "launch_name", None), diff=outputs_diff_json(
                "simulator", f"GPU {getattr(rg, 'device', '')}", diffs, len(rs.outputs))):
            print(line)
    if diffs:
        print("[both] MISMATCH between simulator and GPU outputs:")
        for d in diffs:
            print(f"  {d}")
        return 1
    print("[both] simulator and GPU outputs are bit-identical")
    return 0 if ok_s else 1


def cmd_demo(args) -> int:
    name = getattr(args, "kernel", None) or DEMO_DEFAULT
    mod = importlib.import_module(DEMO_KERNELS[name])
    args.launch_name = DEMO_KERNELS[name]
    print(f"tcsim demo: {getattr(mod, 'DESCRIPTION', mod.__name__)}")
    if getattr(args, "backend", "sim") != "sim" or not hasattr(mod, "demo_summary") or \
            getattr(args, "explore", None) is not None:
        return _run_module(mod, args)
    problem = _output_path_problem(args)
    if problem:
        print(f"tcsim: {problem}", file=sys.stderr)
        return 2
    launch = _get_launch(mod)
    ok, result = _run_sim(mod, launch, args)
    for line in mod.demo_summary(result, launch):       # the decoded result: descriptors, a corner of D
        print(line)
    return 0 if ok else 1


def _launch_module_or_report(args, command: str):
    """The launch file's module, or None after printing why it could not be imported (usage error, exit 2)."""
    try:
        return _load_launch_module(args.launch)
    except FileNotFoundError as e:              # (a module that is not there is one too: _load_launch_module)
        print(f"tcsim {command}: {e}", file=sys.stderr)
    except TcsimError:
        raise
    except (Exception, SystemExit) as e:        # the launch file's own Python error: where it is, no traceback
        print(f"tcsim {command}: {args.launch}: importing the launch file raised {type(e).__name__}: {e} (at "
              f"{_user_frame(e) or args.launch})", file=sys.stderr)
    return None


def cmd_run(args) -> int:
    mod = _launch_module_or_report(args, "run")
    if mod is None:
        return 2
    args.launch_name = args.launch
    if getattr(args, "pdb", False):             # stop in pdb at the first finding or error (tcsim.debugger.hooks)
        from .debugger.hooks import run_pdb
        return run_pdb(mod, _get_launch(mod), args, _call_check, summary, print_findings)
    return _run_module(mod, args)


def cmd_debug(args) -> int:
    """``tcsim debug LAUNCH.py``: the interactive debugger (tcsim.debugger.prompt)."""
    mod = _launch_module_or_report(args, "debug")
    if mod is None:
        return 2
    from .debugger.prompt import debug_main
    return debug_main(args, mod, _get_launch(mod))


def check_ptx_text(text: str, name: str, notes_out: list | None = None) -> list:
    """All diagnostics for a PTX file: syntax first, then every instruction tcsim cannot execute.  With
    ``notes_out``, the notes of :func:`ptx_notes` of a file without diagnostics are appended to it (one parse)."""
    from tcsim.isa.parser import parse
    from .engine import decode_function

    try:
        module = parse(text, name)
    except TcsimError as e:
        return [e]
    errors: list = []
    for fn in module.functions.values():
        if fn.is_declaration:
            continue
        decode_function(module, fn, errors)
    if notes_out is not None and not errors:
        from tcsim.isa.lint import notes
        notes_out.extend(notes(module))
    return errors


def ptx_notes(text: str, name: str) -> list:
    """Notes (isa/lint.py) on instructions whose GPU result depends on how ptxas lowers them."""
    from tcsim.isa.lint import notes
    from tcsim.isa.parser import parse

    return notes(parse(text, name))


def list_forms() -> list[str]:
    """One line per instruction family tcsim executes: the family key and, where ``isa/`` declares the family's
    form, its qualifier groups (``.{a|b}`` one of, ``[.x]`` optional) and PTX ISA section."""
    from tcsim.isa.form_catalog import spec_of
    from .semantics import REGISTRY, load_all

    load_all()
    lines = []
    for key in REGISTRY.families():
        spec = spec_of(key)
        lines.append(spec.describe() if spec is not None else
                     f"{key}  (qualifiers checked by {REGISTRY.module_of(key)})")
    return lines


def cmd_check(args) -> int:
    if args.list:
        for line in list_forms():
            print(line)
        return 0
    if not args.files:
        print("tcsim check: give one or more .ptx files (or --list)", file=sys.stderr)
        return 2
    from tcsim.isa.lexer import read_source
    bad = 0
    for f in args.files:
        p = Path(f)
        if not p.exists():
            print(f"{f}: error: no such file", file=sys.stderr)
            bad += 1
            continue
        try:
            text = read_source(p, str(p))
        except TcsimError as e:         # a directory, an unreadable file, a byte that is not ASCII
            if e.loc is not None:
                print(str(e))
            else:
                print(f"{f or repr(f)}: error: {e.message}", file=sys.stderr)
            bad += 1
            continue
        found_notes: list = []
        errs = check_ptx_text(text, str(p), found_notes)
        for e in errs:
            print(str(e))
        if errs:
            bad += 1
        else:
            for n in found_notes:
                print(str(n))
            print(f"{f}: OK (every instruction is executable by tcsim)")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tcsim", description="Cycle-approximate simulator of Blackwell/Hopper "
                                                           "tensor-core PTX kernels")
    sub = ap.add_subparsers(dest="cmd", required=True)

    def run_opts(p):
        p.add_argument("--trace", help="write a JSONL event trace to this file")
        p.add_argument("--perfetto", metavar="OUT.pftrace", default=None,
                       help="write a Perfetto timeline (protobuf trace; timestamps in SM cycles) of the run")
        p.add_argument("--report", metavar="OUT.html", default=None,
                       help="write a self-contained HTML report of the run (timeline, annotated PTX, stalls)")
        p.add_argument("--seed", type=int, default=None, help="scheduler seed (interleaves warps differently)")
        p.add_argument("--max-instructions", type=int, default=None,
                       help="budget in warp-instructions (a positive count)")
        p.add_argument("--max-seconds", type=float, default=None,
                       help="budget in seconds of simulation work, CPU time (default: 40 s when no "
                            "--max-instructions)")
        p.add_argument("--progress", dest="progress", action="store_true", default=None,
                       help="a progress line on stderr for runs longer than ~2 s even when stderr is not a terminal "
                            "(default: on a terminal only)")
        p.add_argument("--no-progress", dest="progress", action="store_false",
                       help="no progress line")
        p.add_argument("--timing", dest="timing", action="store_true", default=True,
                       help="cycle-approximate timing of the kernel's .target (default)")
        p.add_argument("--no-timing", dest="timing", action="store_false",
                       help="1-cycle-per-instruction model (faster; same results)")
        p.add_argument("--strict", action="store_true",
                       help="stop at the first finding (a sync bug or hazard), where it happens (pdb-friendly); "
                            "default: report each distinct finding once and run to the end")
        p.add_argument("--detect", dest="detect", action="store_true", default=True,
                       help="run the happens-before race detector (default): unordered / unfenced accesses become "
                            "findings (tcsim.race.hb)")
        p.add_argument("--no-detect", dest="detect", action="store_false",
                       help="skip the happens-before race detector (faster)")
        p.add_argument("--findings", metavar="OUT.json", default=None,
                       help="write the findings as JSON for tools (with --explore: the whole report, each "
                            "finding with its schedules)")
        p.add_argument("--explore", type=int, metavar="N", default=None,
                       help="run N schedules perturbing warp order and async completion times within what the "
                            "hardware allows; report the union of findings, output differences and the "
                            "--schedule K reproducing each (--seed seeds the random schedules)")
        p.add_argument("--schedule", type=int, metavar="K", default=None,
                       help="run exactly schedule K of an exploration (0: the default schedule; --seed: the "
                            "exploration's seed)")
        p.add_argument("--jobs", type=int, metavar="J", default=1,
                       help="with --explore: run the schedules in J worker processes (the same report as 1)")
        p.add_argument("--backend", choices=["sim", "gpu", "both"], default="sim",
                       help="sim: the simulator; gpu: the real GPU (hw/); both: run both and compare bit for bit")
        p.add_argument("--tier", choices=["reference", "fast"], default=None,
                       help="execution tier (tcsim.fast): reference (default; $TCSIM_TIER) or fast (lockstep groups "
                            "of warps; identical results, traces and cycles)")

    p = sub.add_parser("demo", help="simulate the embedded default kernel (the tcgen05 GEMM gemm_async)")
    run_opts(p)
    p.add_argument("--kernel", choices=list(DEMO_KERNELS), default=DEMO_DEFAULT,
                   help=f"which embedded kernel (default {DEMO_DEFAULT}; mma_gemm is the former default)")
    p.set_defaults(fn=cmd_demo)
    p = sub.add_parser("run", help="run a launch file")
    p.add_argument("launch", help="a Python launch file (defines make_launch() and check())")
    run_opts(p)
    p.add_argument("--pdb", action="store_true", help="stop in pdb at the first finding or error, with the "
                   "debugging Session in scope (tcsim.debugger.hooks)")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("report", help="run a launch file and write its HTML report (tcsim run --report)")
    p.add_argument("launch", help="a Python launch file (defines make_launch() and check())")
    run_opts(p)
    p.add_argument("-o", "--output", dest="report", metavar="OUT.html", default="report.html",
                   help="the HTML report to write (default report.html)")
    p.set_defaults(fn=cmd_run, report="report.html")
    from tcsim.hw.cli_diff import add_parser as add_diff_parser
    add_diff_parser(sub, _launch_of)
    p = sub.add_parser("debug", help="debug a launch file interactively (breakpoints, watchpoints, reverse "
                                     "stepping, forced interleavings; `help` at the prompt)")
    p.add_argument("launch", help="a Python launch file (defines make_launch() and check())")
    p.add_argument("--seed", type=int, default=None, help="scheduler seed")
    p.add_argument("--timing", dest="timing", action="store_true", default=False,
                   help="cycle-approximate timing (default: off, one cycle per warp-instruction)")
    p.add_argument("--max-instructions", type=int, default=None, help="budget in warp-instructions")
    p.add_argument("-x", "--command", metavar="FILE", default=None, help="read the commands from FILE")
    p.add_argument("--checkpoint-every", type=int, default=128, metavar="N",
                   help="fork a checkpoint every N events (more sparsely as they add up) so going back replays "
                        "little; 0: replay from the start (default 128)")
    p.set_defaults(fn=cmd_debug)
    p = sub.add_parser("check", help="verify that tcsim can execute every instruction of PTX files")
    p.add_argument("files", nargs="*")
    p.add_argument("--list", action="store_true", help="list the instruction forms tcsim executes")
    p.set_defaults(fn=cmd_check)
    args = ap.parse_args(argv)
    from tcsim.isa.errors import RunInterrupted
    try:
        if getattr(args, "tier", None):
            from .fast import use_tier
            with use_tier(args.tier):
                return args.fn(args)
        return args.fn(args)
    except RunInterrupted as e:
        print(str(e), file=sys.stderr)
        return 130                      # 128 + SIGINT, as shells report a process Ctrl-C ended
    except TcsimError as e:
        print(str(e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("tcsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
