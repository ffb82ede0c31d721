"""Shared helpers of the happens-before detector tests (tests/race/test_hb_*.py): run a kernel under timing on
and off and seeds None/1/2, pick out the detector's findings, locate PTX lines by the ``// @name`` markers."""
from __future__ import annotations

from tcsim.launch import Launch, run_launch

MODES = [(timing, seed) for timing in (False, True) for seed in (None, 1, 2)]


def line_of(ptx: str, marker: str) -> int:
    """1-based line of the PTX line carrying ``// @marker``."""
    hits = [i + 1 for i, ln in enumerate(ptx.splitlines()) if ln.rstrip().endswith(f"// @{marker}")]
    assert len(hits) == 1, f"marker @{marker} found {len(hits)} times"
    return hits[0]


def line_with(ptx: str, text: str) -> int:
    hits = [i + 1 for i, ln in enumerate(ptx.splitlines()) if text in ln]
    assert len(hits) == 1, f"{text!r} found on {len(hits)} lines"
    return hits[0]


def runs(ptx, args, modes=MODES, **kw):
    """(mode, Result) for every mode."""
    out = []
    for timing, seed in modes:
        launch = Launch(ptx=ptx, args=[a.copy() if hasattr(a, "copy") else a for a in args], **kw)
        out.append(((timing, seed), run_launch(launch, timing=timing, seed=seed)))
    return out


def of_class(res, cls):
    return [f for f in res.findings if f.cls == cls]


def assert_found(results, cls, lines, missing):
    """Every run reports a class-``cls`` finding whose sides are on ``lines`` (as a set) and whose missing edge
    names ``missing``."""
    for mode, res in results:
        fs = of_class(res, cls)
        assert fs, f"{mode}: no class {cls} finding; got {[str(f) for f in res.findings]}"
        ok = [f for f in fs if set(f.lines) == set(lines) and missing in (f.missing or "")]
        assert ok, f"{mode}: class {cls} findings do not name lines {lines} and {missing!r}: " \
                   f"{[str(f) for f in fs]}"
        f = ok[0]
        assert f.fix and all(s.loc is not None and s.cycle is not None for s in f.sides)


def assert_clean(results):
    for mode, res in results:
        assert not res.findings, f"{mode}: {[str(f) for f in res.findings]}"
