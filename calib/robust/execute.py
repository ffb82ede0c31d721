"""Running one robustness case and classifying what happened (inside a worker process; see :mod:`.pool`).

A case is a JSON-able dict with a ``kind``:

* ``check`` -- ``{"ptx": <latin-1 text of the bytes>}``: the bytes are written to ``mutant.ptx`` and
  ``tcsim check mutant.ptx`` runs (:func:`tcsim.cli.main`, in this process, stdout/stderr captured);
* ``run`` -- ``{"ptx": ..., "example": NAME, "max_instructions": N}``: the example's ``make_launch()`` with its PTX
  replaced by the mutant (as a file), checked first (as ``tcsim check`` would) and, when the check accepts it, run
  with :func:`tcsim.launch.run_launch`;
* ``launch`` -- ``{"example": NAME, "launch": {field: expr}, "run": {keyword: expr}}``: the example's launch with
  fields (or ``args[i]``) replaced by the values of Python expressions (:func:`namespace`), then ``run_launch``
  with the keywords;
* ``cli`` -- ``{"argv": [...], "files": {name: latin-1 text}}``: ``tcsim <argv>`` with the files written first
  (``{tmp}`` in argv and in file texts is the case's folder; ``{dir}`` a directory there).

Classes (:data:`CLASSES`): ``diagnostic`` (a non-zero exit / a :class:`~tcsim.isa.errors.TcsimError` that says
where: ``file:line:col`` for PTX, the argument's name for a launch), ``unlocated`` (a diagnostic that does not),
``accepted`` (``tcsim check`` passed), ``ran`` (a run completed), ``traceback`` (any other exception escaped),
``hang`` (the time limit), ``memory`` (``MemoryError`` under the memory limit), ``crash`` (the worker died).
"""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import shutil
import sys
import traceback
from pathlib import Path

CLASSES = ("diagnostic", "unlocated", "accepted", "ran", "traceback", "hang", "memory", "crash")
#: classes that are findings (each is minimised into a regression file)
FINDINGS = ("unlocated", "traceback", "hang", "memory", "crash")

#: examples whose launches the ``run`` and ``launch`` cases use (each runs in well under a second)
RUN_EXAMPLES = ("mma_gemm", "bulk_pipeline", "cluster_exchange", "tcgen05_walkthrough", "gemm_async",
                "tma_mma_gemm", "tma_gather_scatter")


class Hang(BaseException):
    """Raised by the worker's interval timer: the case ran past its time limit (a BaseException, so no
    ``except Exception`` in the code under test swallows it)."""


def latin1(b: bytes) -> str:
    return b.decode("latin-1")


def unlatin1(s: str) -> bytes:
    return s.encode("latin-1")


def _frames_sig(tb) -> str:
    """Where an exception came from: its innermost frame inside the product (tcsim / calib), as file:function."""
    frames = traceback.extract_tb(tb)
    for fr in reversed(frames):
        f = fr.filename.replace("\\", "/")
        if "/sim/" in f or "/isa/" in f or "/hw/" in f or "/examples/" in f or "/tcsim/" in f:
            return f"{Path(f).name}:{fr.name}"
    return f"{Path(frames[-1].filename).name}:{frames[-1].name}" if frames else "?"


def _exc_outcome(e: BaseException, cls: str | None = None) -> dict:
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    if cls is None:
        cls = "memory" if isinstance(e, MemoryError) else "hang" if isinstance(e, Hang) else "traceback"
    return {"cls": cls, "detail": f"{type(e).__name__}: {str(e)[:300]}",
            "sig": f"{cls}|{type(e).__name__}|{_frames_sig(e.__traceback__)}", "tb": tb[-6000:]}


@contextlib.contextmanager
def _captured():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def _check_main(argv) -> int:
    """``tcsim check FILE``: :func:`tcsim.cli.main` without building the whole argument parser each time (the
    parser costs more than checking a small file); the same command function and the same error handling."""
    import argparse

    from tcsim.cli import cmd_check
    from tcsim.isa.errors import TcsimError
    try:
        return cmd_check(argparse.Namespace(files=list(argv[1:]), list=False))
    except TcsimError as e:
        print(str(e), file=sys.stderr)
        return 1


def _cli(argv, fast_check: bool = False) -> tuple[int | None, str, BaseException | None]:
    from tcsim.cli import main
    exc = None
    with _captured() as (out, err):
        try:
            rc = _check_main(argv) if fast_check else main(list(argv))
        except SystemExit as e:                     # argparse usage errors
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        except (Hang, MemoryError):
            raise
        except BaseException as e:  # noqa: BLE001 -- anything escaping main is what we look for
            rc, exc = None, e
    return rc, out.getvalue() + err.getvalue(), exc


_LOC = re.compile(r"^(?P<file>[^\n]*?):(?P<line>\d+):(?P<col>\d+): ", re.M)


def _ptx_located(text: str, path: str) -> bool:
    """Every diagnostic line of ``tcsim check`` output names the file with line and column."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if not ln.endswith("OK (every instruction is executable by tcsim)")]
    if not errs:
        return False
    first = errs[0]
    m = _LOC.match(first)
    return bool(m) and Path(m.group("file")).name == Path(path).name


def run_check(case: dict, tmp: Path) -> dict:
    path = tmp / "mutant.ptx"
    path.write_bytes(unlatin1(case["ptx"]))
    rc, text, exc = _cli(["check", str(path)], fast_check=True)
    if exc is not None:
        return _exc_outcome(exc)
    if rc == 0:
        return {"cls": "accepted", "detail": ""}
    located = _ptx_located(text, str(path))
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return {"cls": "diagnostic" if located else "unlocated", "detail": first[:300].replace(str(tmp), "{tmp}"),
            "sig": None if located else f"unlocated|check|{_shape(first, str(tmp))}"}


def _shape(line: str, tmp: str) -> str:
    """A diagnostic's text with numbers and names blurred (groups unlocated findings)."""
    s = line.replace(tmp, "{tmp}")
    s = re.sub(r"`.*", "", s)
    s = re.sub(r"\d+", "N", s)
    return s[:90]


def example_launch(name: str):
    mod = importlib.import_module(f"tcsim.examples.{name}")
    return mod, mod.make_launch()


def run_run(case: dict, tmp: Path) -> dict:
    from tcsim.isa.errors import TcsimError
    from tcsim.launch import run_launch

    raw = unlatin1(case["ptx"])
    path = tmp / "mutant.ptx"
    path.write_bytes(raw)
    out = run_check({"ptx": case["ptx"]}, tmp)
    if out["cls"] != "accepted":
        out["stage"] = "check"
        return out
    try:
        _, launch = example_launch(case["example"])
        launch.ptx = path
        with _captured():
            run_launch(launch, max_instructions=case.get("max_instructions"))
    except TcsimError as e:
        located = e.loc is not None or e.where is not None
        return {"cls": "diagnostic" if located else "unlocated", "stage": "run",
                "detail": f"{type(e).__name__}: {str(e)[:300]}".replace(str(tmp), "{tmp}"),
                "sig": None if located else f"unlocated|run|{type(e).__name__}|{_frames_sig(e.__traceback__)}"}
    except (Hang, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001
        o = _exc_outcome(e)
        o["stage"] = "run"
        return o
    return {"cls": "ran", "stage": "run", "detail": ""}


def namespace(tmp: Path, base) -> dict:
    """The names a launch case's expressions may use."""
    import numpy as np

    from tcsim.launch import Launch, Pointer, Struct
    d = tmp / "adir"
    d.mkdir(exist_ok=True)
    (tmp / "dir.ptx").mkdir(exist_ok=True)
    bad = tmp / "bad.ptx"
    text = base.ptx_text()[0] if not hasattr(base.ptx, "functions") else ""
    bad.write_bytes(b"// \xff\xfe comment\n" + text.encode())
    empty = tmp / "empty.ptx"
    empty.write_bytes(b"")
    return {"np": np, "Path": Path, "Launch": Launch, "Pointer": Pointer, "Struct": Struct, "DIR": str(d),
            "DIRPTX": str(tmp / "dir.ptx"), "MISSING": str(tmp / "missing.ptx"), "BADUTF": str(bad),
            "EMPTY": str(empty), "TEXT": text, "BASE": base, "ARGS": list(base.args), "TMP": str(tmp)}


def _launch_located(e, names) -> bool:
    s = str(e)
    return any(n in s for n in names) or e.loc is not None


def run_launch_case(case: dict, tmp: Path) -> dict:
    import dataclasses

    from tcsim.isa.errors import TcsimError
    from tcsim.launch import Launch, run_launch

    mod, base = example_launch(case["example"])
    ns = namespace(tmp, base)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(Launch)}
    names = []
    try:
        for key, expr in case.get("launch", {}).items():
            val = eval(expr, ns)  # noqa: S307 -- the fuzzer's own expressions
            m = re.fullmatch(r"args\[(\d+)\]", key)
            if m:
                args = list(fields["args"])
                i = int(m.group(1))
                if i < len(args):
                    args[i] = val
                else:
                    args.append(val)
                fields["args"] = args
                names += [f"argument {i}", "args"]
            else:
                fields[key] = val
                names += [key, "kernel"] if key == "ptx" else [key]
        kw = {k: eval(v, ns) for k, v in case.get("run", {}).items()}  # noqa: S307
        names += list(case.get("run", {}))
    except Exception as e:  # noqa: BLE001 -- a case that cannot be built is the fuzzer's bug
        return {"cls": "traceback", "detail": f"case construction: {type(e).__name__}: {e}",
                "sig": f"fuzzer|{type(e).__name__}"}
    # names the kernel's parameters under the mutated args too
    try:
        kparams = [p.name for p in base.module().functions[base.kernel].params] if base.kernel else []
    except Exception:  # noqa: BLE001
        kparams = []
    if any(n.startswith("argument") for n in names):
        names += kparams
    try:
        with _captured():
            launch = Launch(**fields)
            kw.setdefault("max_instructions", case.get("max_instructions"))
            run_launch(launch, **kw)
    except TcsimError as e:
        loc = _launch_located(e, names)
        return {"cls": "diagnostic" if loc else "unlocated",
                "detail": f"{type(e).__name__}: {str(e)[:300]}".replace(str(tmp), "{tmp}"),
                "sig": None if loc else f"unlocated|launch|{type(e).__name__}|{_shape(e.message, str(tmp))}"}
    except (Hang, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001
        return _exc_outcome(e)
    return {"cls": "ran", "detail": ""}


def run_cli_case(case: dict, tmp: Path) -> dict:
    (tmp / "adir").mkdir(exist_ok=True)
    (tmp / "dir.py").mkdir(exist_ok=True)
    (tmp / "dir.ptx").mkdir(exist_ok=True)
    for name, text in case.get("files", {}).items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(unlatin1(text.replace("{tmp}", str(tmp))))
    argv = [a.replace("{tmp}", str(tmp)).replace("{dir}", str(tmp / "adir")) for a in case["argv"]]
    rc, text, exc = _cli(argv)
    if exc is not None:
        return _exc_outcome(exc)
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if rc == 0:
        return {"cls": "ran" if argv[0] != "check" else "accepted", "detail": first[:200].replace(str(tmp), "{tmp}")}
    # a usage error names the option; a launch-file error names the file (with its line when it is the user's code)
    want = case.get("expect_in", [])
    low = text.replace(str(tmp), "{tmp}")
    # the thing named, or a PTX position (a diagnostic of the kernel the launch file runs)
    # an option is named as on the command line (--max-instructions) or as run_launch's keyword (max_instructions)
    want = list(want) + [w.lstrip("-").replace("-", "_") + "=" for w in want if w.startswith("--")]
    located = bool(low.strip()) and (not want or any(w in low for w in want) or bool(_PTX_LOC.search(low)))
    detail = low.strip().splitlines()[-1][:300] if low.strip() else f"exit {rc} with no output"
    return {"cls": "diagnostic" if located else "unlocated", "detail": detail,
            "sig": None if located else f"unlocated|cli|{case['argv'][0]}|{_shape(detail, str(tmp))}"}


_PTX_LOC = re.compile(r"\.ptx:\d+:\d+: ")


def run_selftest(case: dict, tmp: Path) -> dict:
    """The harness's own test (``{"what": ...}``): behave like a case of each class, to check the classification."""
    what = case["what"]
    if what == "hang":
        while True:
            pass
    if what == "native_hang":                   # the interval timer cannot interrupt this: the pool kills it
        import signal
        signal.setitimer(signal.ITIMER_REAL, 0)
        import time
        time.sleep(3600)
    if what == "memory":
        return {"cls": "ran", "detail": str(len(bytearray(64 << 30)))}
    if what == "crash":
        os._exit(7)
    if what == "raise":
        raise KeyError("selftest")
    if what == "diagnostic":
        from tcsim.isa.errors import LaunchError
        try:
            raise LaunchError("selftest")
        except LaunchError as e:
            return {"cls": "diagnostic", "detail": str(e)}
    return {"cls": "ran", "detail": what}


RUNNERS = {"selftest": run_selftest, "check": run_check, "run": run_run, "launch": run_launch_case, "cli": run_cli_case}


def execute(case: dict, tmp_root: Path) -> dict:
    """Run ``case`` in a fresh folder under ``tmp_root``; the outcome dict (always with ``cls``)."""
    tmp = tmp_root / "case"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cwd = os.getcwd()
    os.chdir(tmp)                                   # a relative path a case writes (a trace named b'x') lands here
    mods = set(sys.modules)
    try:
        out = RUNNERS[case["kind"]](case, tmp)
    except (Hang, MemoryError) as e:
        out = _exc_outcome(e)
    except Exception as e:  # noqa: BLE001 -- outside the code under test: the harness itself
        out = _exc_outcome(e)
        out["sig"] = "fuzzer|" + out["sig"]
    finally:
        os.chdir(cwd)
        for m in set(sys.modules) - mods:           # launch files imported by a cli case
            if not m.startswith(("tcsim", "numpy", "ml_dtypes", "simpy", "encodings", "_")):
                sys.modules.pop(m, None)
    if out["cls"] == "hang":                        # where a hang was stopped varies; the case kind does not
        out["sig"] = f"hang|{case['kind']}"
    return out
