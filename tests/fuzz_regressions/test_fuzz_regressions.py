"""Replay the differential-fuzzing reproducers saved here (``python -m calib.fuzz --backend gpu``): each ``.ptx`` +
``.json`` pair is run on the simulator with its saved input and compared bit for bit with its saved GPU output.

A record's ``status`` says what to expect: ``"open"`` -- the simulator still disagrees with the GPU (a known
finding, described in ``finding``; strict xfail, so the day the simulator is fixed the test XPASSes and asks
for the status to become ``"fixed"``); ``"fixed"`` -- it must agree; ``"diagnosed"`` -- the GPU result depends on
how ptxas lowers the PTX (the ISA leaves it open, or ptxas miscompiles it), and tcsim must say so: ``tcsim.isa.lint``
reports a note at the offending instruction, and the lowering ptxas produced, read from its SASS, reproduces the GPU
output when replayed in the simulator (``as_compiled.json``: the body as the SASS executes it, written as PTX, with
the SASS lines it is read from; ``sass/``: the listings) -- except the findings listed in :data:`OPEN_DIAGNOSED`, whose
SASS has not been modelled yet; ``"explained"`` -- the PTX ISA leaves the result open and the
lowering variant named in ``explained_by`` (sim/lowering.py, calib/fuzz/explain.py) reproduces the GPU output.  ``gpu_output_source`` says whether the GPU
bits were read back from the minimised program itself (``measured``) or taken from the fuzz run's exact data
point for that instruction (``derived``).  ``category`` ``"aliasing"`` marks register aliasings PTX leaves open
(the generator avoids them now).  Each reproducer must also pass ``tcsim check`` and be schedule-independent.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from calib.fuzz.runner import field_diffs, load_reproducer, replay_on_sim

HERE = Path(__file__).resolve().parent
RECORDS = sorted(p for p in HERE.glob("*.json") if p.name != "as_compiled.json")
AS_COMPILED = json.loads((HERE / "as_compiled.json").read_text())["models"]
DIAGNOSED = [p for p in RECORDS if load_reproducer(p).get("status") == "diagnosed"]
#: diagnosed ptxas miscompilations with no executable model yet (the SASS of each is described in its ``finding``):
#: each must still disagree, and the list is exact.  Empty: every diagnosed finding has its as-compiled model (the
#: last 20 were loops that ptxas unrolls by 4, by 2 and one at a time and compiles differently per copy; each model
#: runs the trip count's copies as the SASS does)
OPEN_DIAGNOSED: set = set()


def _param(p: Path):
    rec = load_reproducer(p)
    marks = []
    if rec.get("status") == "diagnosed":
        marks.append(pytest.mark.skip(reason="compiler-dependent; checked by test_diagnosed_findings_are_noted"))
    elif rec.get("status") == "explained":
        marks.append(pytest.mark.skip(reason="PTX leaves it open; checked by test_explained_findings_reproduce"))
    elif rec.get("status", "open") == "open":
        marks.append(pytest.mark.xfail(strict=True, reason=f"open finding: {rec.get('finding', rec['detail'])[:200]}"))
    return pytest.param(p, marks=marks, id=p.stem)


@pytest.mark.parametrize("path", [_param(p) for p in RECORDS])
def test_simulator_matches_saved_gpu_output(path):
    rec = load_reproducer(path)
    assert rec["gpu_output"] is not None, "reproducer without GPU output"
    out = replay_on_sim(rec)
    assert out.ok, out.error
    diffs = field_diffs(None, out.output, rec["gpu_output"], rec["nthreads"], rec.get("nacc", 0))
    assert not diffs, f"{rec['kernel']}: {len(diffs)} fields differ, first {diffs[:3]} -- {rec.get('finding', '')}"


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_reproducer_is_valid_and_schedule_independent(path):
    from tcsim.cli import check_ptx_text

    rec = load_reproducer(path)
    assert not check_ptx_text(rec["ptx"], path.name)
    assert rec["format"] == "tcsim-fuzz-reproducer/1" and rec.get("finding")
    a, b = replay_on_sim(rec, None), replay_on_sim(rec, 1)
    assert a.ok and a.output == b.output
    if rec["sim_output"] is not None and rec.get("status", "open") == "open":
        # the saved simulator bits document the disagreement; they change only when the simulator does
        assert a.output == rec["sim_output"] or a.output == rec["gpu_output"]


def test_there_are_reproducers():
    assert RECORDS, "no saved reproducers"


@pytest.mark.parametrize("path", [p for p in RECORDS if load_reproducer(p).get("status") == "diagnosed"],
                         ids=lambda p: p.stem)
def test_diagnosed_findings_are_noted(path):
    from tcsim.cli import ptx_notes

    rec = load_reproducer(path)
    notes = ptx_notes(rec["ptx"], path.name)
    body_lines = [i + 1 for i, ln in enumerate(rec["ptx"].splitlines()) if ln.strip() in rec["body"]]
    assert notes and all(n.loc.line in body_lines for n in notes), notes
    assert any("depends on" in n.message for n in notes)


@pytest.mark.parametrize("path", [p for p in RECORDS if load_reproducer(p).get("status") == "explained"],
                         ids=lambda p: p.stem)
def test_explained_findings_reproduce(path):
    """A result the PTX ISA leaves open: tcsim's default rule differs from this GPU output, and the named lowering
    variant (sim/lowering.py) reproduces it bit for bit."""
    from calib.fuzz.explain import explain_record

    rec = load_reproducer(path)
    assert replay_on_sim(rec).output != rec["gpu_output"]
    assert explain_record(rec) == rec["explained_by"]


@pytest.mark.parametrize("path", [p for p in DIAGNOSED if p.stem in AS_COMPILED], ids=lambda p: p.stem)
def test_diagnosed_finding_is_reproduced_by_the_lowering_ptxas_made(path):
    """A diagnosed ptxas miscompilation: tcsim's PTX semantics differ from the GPU output, and the program as the SASS
    executes it (as_compiled.json, each line read from the listing in sass/) reproduces the GPU output bit for bit
    -- the diagnosis is an executable model, not just the presence of a lint note."""
    from calib.fuzz.replay import as_compiled_text, replay_record

    rec = load_reproducer(path)
    model = AS_COMPILED[path.stem]
    assert replay_on_sim(rec).output != rec["gpu_output"], "tcsim now agrees with the GPU: make the status 'fixed'"
    if "explained_by" in model:             # a verified ptxas rewrite of calib/fuzz/explain.py
        got = replay_record(rec, name=model["explained_by"])
    else:
        got = replay_record(rec, ptx=as_compiled_text(rec["ptx"], model))
        listing = (HERE / "sass" / f"{path.stem}.sass").read_text().splitlines()
        missing = [ln for ln in model["sass"] if ln not in listing]
        assert not missing, f"SASS quoted in as_compiled.json is not in sass/{path.stem}.sass: {missing}"
    assert got is not None, "the simulator refuses the as-compiled program"
    diffs = field_diffs(None, got, rec["gpu_output"], rec["nthreads"], rec.get("nacc", 0))
    assert not diffs, f"the as-compiled model does not reproduce the GPU: {diffs[:3]}"


def test_open_diagnosed_findings_are_exactly_the_unmodelled_ones():
    """Every diagnosed finding has an executable model or is listed in OPEN_DIAGNOSED (exactly: a model added, or a
    finding added without one, must update the list), and each open one still disagrees with the GPU."""
    unmodelled = {p.stem for p in DIAGNOSED if p.stem not in AS_COMPILED}
    assert unmodelled == OPEN_DIAGNOSED
    assert set(AS_COMPILED) <= {p.stem for p in DIAGNOSED}, "a model for a finding that is not 'diagnosed'"
    for p in DIAGNOSED:
        if p.stem in OPEN_DIAGNOSED:
            rec = load_reproducer(p)
            assert replay_on_sim(rec).output != rec["gpu_output"], f"{p.stem} now agrees: make its status 'fixed'"


def _sass_listing(ptx_path: Path, tmp: Path) -> list:
    cub = tmp / (ptx_path.stem + ".cubin")
    subprocess.run(["ptxas", "-arch=sm_90a", str(ptx_path), "-o", str(cub)], check=True, capture_output=True)
    out = subprocess.run([_cuobjdump(), "-sass", str(cub)], check=True, capture_output=True, text=True).stdout
    return [re.sub(r"^/\*([0-9a-f]+)\*/\s+", r"/*\1*/ ", re.sub(r"\s*/\* 0x[0-9a-f]+ \*/", "", ln).strip())
            .replace(" ;", "").rstrip() for ln in out.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln)]


def _cuobjdump():
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import triton
        cand = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        return str(cand) if cand.exists() else None
    except ImportError:
        return None


@pytest.mark.skipif(shutil.which("ptxas") is None or _cuobjdump() is None,
                    reason="needs ptxas and cuobjdump (CI has neither: the listings in sass/ are committed)")
def test_sass_listings_are_what_ptxas_makes(tmp_path):
    """The committed listings (sass/) are what ptxas (13.0, the driver JIT's version) makes of each reproducer."""
    for name in sorted(m for m, v in AS_COMPILED.items() if "body" in v):
        got = _sass_listing(HERE / f"{name}.ptx", tmp_path)
        assert got == (HERE / "sass" / f"{name}.sass").read_text().splitlines(), name


def test_no_finding_is_left_open():
    """Every finding of the fuzzing campaigns is fixed or diagnosed (issue: zero unexplained mismatches)."""
    open_ = [p.stem for p in RECORDS if load_reproducer(p).get("status", "open") == "open"]
    assert not open_, open_


#: the SASS-diagnosed reproducers each per-instruction rewrite of calib/fuzz/explain.py (LINE_REWRITES: the
#: executable model of an isa/lint.py check, which the survey applies to whole campaign programs) is read from
LINE_REWRITE_SOURCES = {"guard-sunk": ("fuzz_108517_value", "fuzz_102217_value"),
                        "b64-shift-f2i": ("fuzz_1071_value",), "half2-abs-fma": ("fuzz_14858_value",),
                        "setp-no-ftz": ("fuzz_207439_value", "fuzz_208935_value", "fuzz_107537_value"),
                        "neg-neg-copy": ("fuzz_100279_value",),
                        "f2i-half-source": ("fuzz_107_value", "fuzz_100160_value", "fuzz_1060_value")}


#: per-instruction rewrites read from a campaign program's own SASS, not from a reproducer here: where it is checked
LINE_REWRITE_ELSEWHERE = {"wgmma-group-lost": "tests/hw/test_fuzz_wgmma_v7.py (v7 program 710731, v7_probe/)"}


def test_every_line_rewrite_names_its_reproducers():
    from calib.fuzz.explain import LINE_REWRITES

    assert set(LINE_REWRITE_SOURCES) | set(LINE_REWRITE_ELSEWHERE) == set(LINE_REWRITES)


@pytest.mark.parametrize("name,stem", [(n, s) for n, stems in LINE_REWRITE_SOURCES.items() for s in stems],
                         ids=lambda x: x)
def test_line_rewrite_is_the_lowering_ptxas_made(name, stem):
    """A per-instruction rewrite applied where its lint check notes the reproducer (no line chosen by hand) makes
    the program the SASS listing shows -- the output of the as-compiled model read from sass/ (as_compiled.json),
    which is the GPU's, bit for bit -- while tcsim's PTX semantics differ."""
    from calib.fuzz.explain import LINE_REWRITES
    from calib.fuzz.replay import as_compiled_text, replay_record

    rec = load_reproducer(HERE / f"{stem}.json")
    lines = LINE_REWRITES[name][1](rec["ptx"])
    assert lines, f"isa/lint.py notes nothing of {name} in {stem}"
    got = replay_record(rec, f"diagnosed:{name}@" + ",".join(map(str, lines)))
    model = replay_record(rec, ptx=as_compiled_text(rec["ptx"], AS_COMPILED[stem]))
    assert replay_on_sim(rec).output != rec["gpu_output"]
    assert got == model == rec["gpu_output"]
