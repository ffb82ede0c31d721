"""The README cannot go stale (issue 14, item 6): every sample output, code sample and figure in it is checked here.

* **Sample outputs.** Every fenced block of README.md whose first line is ``$ tcsim ...`` is a command and what it
  prints: the test runs the command from the repository root and compares every line, after masking the
  wall-clock part of ``tcsim run``'s summary line (seconds and instructions per second) on both sides.  The GPU
  comparison is shown against a recorded H100 run (``tcsim diff ... --against golden:tests/hw/golden_h100/...``),
  so it runs without a GPU; a block whose command is not ``tcsim`` fails the test (nothing shown goes unchecked).
* **Code samples.** Every ``python`` block runs (from the repository root); a block of language ``output``
  right after it is what it must print.
* **Figures.** The timing paragraph and validation table (number of measured parameters, of calibration and
  recorded cases, the calibration tolerances, the validation kernels' cycles, their mean absolute error and how
  many are within 10%) are rendered here from the committed data -- tests/golden/timing_h100/meta.json,
  sim/timing/data/measured_h100.json, calib.microbench.cases and the simulator's cycles as
  tests/hw/test_timing_validation.py computes them (its module is reused, not copied) -- and must appear in the
  README verbatim.  ``python tests/test_readme.py`` prints the rendered text to paste after a model change.
* **Stands alone.** No pointer leaves the repository (``../``, a path that does not exist; an image shows a file
  of the repository); every ``tcsim.*`` name the README mentions resolves.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TIMING_VALIDATION = ROOT / "tests" / "hw" / "test_timing_validation.py"
#: the wall-clock part of ``tcsim run``'s summary line (tcsim.cli.summary); everything else it prints is simulated
WALL = re.compile(r"in \d+\.\d+ s = [\d,]+ warp-inst/s, [\d,]+ lane-inst/s")
FENCE = re.compile(r"^```(\w*)\s*$")


def fenced_blocks(text: str) -> list:
    """[(info string, [lines], first line number)] of the README's fenced blocks, in order."""
    out, cur = [], None
    for no, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if cur is None and m:
            cur = (m.group(1), [], no + 1)
        elif cur is not None and line.rstrip() == "```":
            out.append(cur)
            cur = None
        elif cur is not None:
            cur[1].append(line)
    assert cur is None, f"README.md: fenced block from line {cur[2] - 1} is not closed"
    return out


BLOCKS = fenced_blocks(README.read_text())
COMMANDS = [(lines[0][2:], lines[1:], no) for info, lines, no in BLOCKS if lines and lines[0].startswith("$ ")]
PYTHON = [(lines, BLOCKS[i + 1][1] if i + 1 < len(BLOCKS) and BLOCKS[i + 1][0] == "output" else None, no)
          for i, (info, lines, no) in enumerate(BLOCKS) if info == "python"]


def _masked(lines) -> list:
    return [WALL.sub("in <wall-clock>", line.rstrip()) for line in lines]


def _tcsim() -> list:
    script = Path(sys.executable).parent / "tcsim"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from tcsim.cli import main; sys.exit(main())"]


def test_readme_shows_commands_and_code():
    # the README's sample outputs: a simulator run, the GPU comparison (against a recorded GPU run)
    assert any(c.startswith("tcsim run ") for c, _, _ in COMMANDS), COMMANDS
    assert any(c.startswith("tcsim diff ") and "--against golden:" in c for c, _, _ in COMMANDS), COMMANDS
    assert PYTHON and all(out is not None for _, out, _ in PYTHON), "each python sample shows its output"


@pytest.mark.parametrize("command,expected,line", COMMANDS, ids=[c for c, _, _ in COMMANDS])
def test_sample_output_is_what_the_command_prints(command, expected, line):
    argv = shlex.split(command)
    assert argv[0] == "tcsim", f"README.md:{line}: only tcsim commands are checked, got {command!r}"
    r = subprocess.run([*_tcsim(), *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)
    got = _masked((r.stdout + r.stderr).splitlines())
    assert got == _masked(expected), (f"README.md:{line}: `{command}` now prints (paste this):\n"
                                      + "\n".join((r.stdout + r.stderr).splitlines()))


@pytest.mark.parametrize("code,expected,line", PYTHON, ids=[f"line{no}" for _, _, no in PYTHON])
def test_code_sample_runs_and_prints_its_output(code, expected, line):
    r = subprocess.run([sys.executable, "-c", "\n".join(code)], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, f"README.md:{line}: the sample fails:\n{r.stderr}"
    assert r.stdout.splitlines() == [x.rstrip() for x in expected], \
        f"README.md:{line}: the sample now prints (paste this):\n{r.stdout}"


# ------------------------------------------------------------------------------------------------- figures
def _timing_validation():
    """tests/hw/test_timing_validation.py as a module: the one place the validation cycles are computed (the
    module pytest imported when it is in this session, so its simulated cycles are computed once)."""
    mod = sys.modules.get(TIMING_VALIDATION.stem)
    if mod is not None and Path(mod.__file__).resolve() == TIMING_VALIDATION:
        return mod
    spec = importlib.util.spec_from_file_location(TIMING_VALIDATION.stem, TIMING_VALIDATION)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def render_timing_figures() -> str:
    """The README's timing figures and validation table, from the committed data and the simulator."""
    tv = _timing_validation()
    cases = tv.C.CASES
    calibration = [n for n, c in cases.items() if c.kind == "calibration"]
    recorded = tv.META["cases"]
    assert set(cases) <= set(recorded), sorted(set(cases) - set(recorded))
    tols = [tol for _, _, tol in tv.CALIBRATION]
    rows, errs = [], []
    for name in tv.VALIDATION:
        measured = recorded[name]["cycles"]
        simulated = tv.simulated_cycles(name)
        err = (simulated - measured) / measured
        errs.append(abs(err))
        sign = "" if round(1000 * err) == 0 else "+" if err > 0 else "-"
        rows.append(f"| `{name}` | {measured:g} | {simulated:g} | {sign}{_pct(abs(err))} |")
    within = sum(e <= 0.10 for e in errs)
    launches = {len(recorded[n]["cta_cycles"]) for n in tv.VALIDATION}
    assert len(launches) == 1, launches
    text = (f"The sm_90a config takes {len(tv.MEASURED)} measured parameters from "
            f"`sim/timing/data/measured_h100.json`, fitted (`python -m calib.microbench fit`) on the "
            f"{len(calibration)} calibration cases of `calib/microbench` ({len(cases)} cases recorded on an H100 in "
            f"all, `tests/golden/timing_h100`); `tests/hw/test_timing_validation.py` checks {len(tv.CALIBRATION)} "
            f"of their values, each within the tolerance it states ({100 * min(tols):.0f}-{100 * max(tols):.0f}%). "
            f"The {len(tv.VALIDATION)} validation kernels were never used for fitting: mean absolute error "
            f"{_pct(float(np.mean(errs)))}, {within} of {len(tv.VALIDATION)} within 10% (the mean cycles per CTA; H100: "
            f"the median over {launches.pop()} launches; tcsim: seed 0):\n\n"
            "| validation kernel | H100 cycles | tcsim cycles | error |\n| --- | ---: | ---: | ---: |\n"
            + "\n".join(rows) + "\n")
    return text


def _unwrapped(text: str) -> str:
    return re.sub(r"[ \t]*\n(?![\n|])[ \t]*", " ", text)


def test_timing_figures_are_those_of_the_committed_data():
    want = render_timing_figures().strip()
    assert _unwrapped(want) in _unwrapped(README.read_text()), \
        f"README.md's timing figures are stale; the committed data give (paste this):\n\n{want}"


# --------------------------------------------------------------------------------------------- stands alone
PATH_RE = re.compile(r"`((?:sim|isa|hw|examples|calib|tests|benchmarks|\.ci)/[^`\s]*)`")


def test_readme_points_only_inside_the_repository():
    text = README.read_text()
    assert "../" not in text
    # images (the report screenshots in docs/) are shown, so they are links: to a file the repository has
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text)
    assert all((ROOT / p).is_file() for p in images), images
    text_links = re.sub(r"!\[[^\]]*\]\([^)\s]+\)", "", text)
    assert not re.search(r"\]\((?!https?://|#)", text_links), "README.md links to files: name paths in `backticks`"
    missing = []
    for m in PATH_RE.finditer(text):
        path = m.group(1).split(":")[0].rstrip(".,;")
        if any(ch in path for ch in "*<{"):
            continue
        if not (ROOT / path).exists():
            missing.append(path)
    assert missing == [], f"README.md names paths the repository does not have: {missing}"


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_every_tcsim_name_in_the_readme_resolves():
    names = sorted(set(re.findall(r"\btcsim(?:\.[A-Za-z_]\w*)+", README.read_text())))
    assert names, "README.md names no tcsim.* module"
    assert [n for n in names if not _resolves(n)] == []


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))      # calib/ (the root conftest.py does this under pytest)
    print(render_timing_figures())
