"""Sanitizer mode on the hazard that used to end the run (issue 15, "stops at the first real hazard"): CUTLASS's
Blackwell tutorial 01 writes the MMA operands with st.shared, then bar.sync, then tcgen05.mma reads them with no
fence.proxy.async (zoo pair 08_mma_operands_without_proxy_fence; PTX ISA 9.1 §8.6 proxies, §9.7.13.4
fence.proxy.async, §9.7.16.10.9.1: tcgen05.mma reads SMEM through the async proxy).  The finding names the write, the
MMA and the missing fence, and the run goes on to the end -- the epilogue stores the whole tile, which equals the
numpy product of the inputs -- where ``strict=True`` stops at the MMA with that one finding (pdb-friendly)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # noqa: E402

from tcsim.findings import FindingError  # noqa: E402
from tcsim.launch import run_launch  # noqa: E402

PAIR = zoo.BY_NAME["08_mma_operands_without_proxy_fence"]


def _buggy():
    text = zoo.retarget(zoo.paths(PAIR)[1].read_text(), "sm_100a")
    return text, zoo.expectation(text)


def test_the_tutorial_01_hazard_is_named_and_the_run_goes_on():
    text, exp = _buggy()
    launch, want = zoo.make_launch(PAIR, text)
    res = run_launch(launch)          # (every timing mode and seed: tests/zoo/test_zoo.py)
    named = [f for f in res.findings if zoo.matches(f, exp)]
    assert named, [f.format() for f in res.findings]
    assert all(f.cls == 8 for f in res.findings)          # the one hazard (one finding per writing instruction)
    for i, w in want.items():                              # the epilogue ran: the whole tile is there
        assert np.array_equal(res.outputs[i], w)


def test_strict_mode_stops_at_the_mma_with_that_finding():
    text, exp = _buggy()
    launch, _ = zoo.make_launch(PAIR, text)
    with pytest.raises(FindingError) as ei:
        run_launch(launch, strict=True)
    [f] = ei.value.findings
    # the first of the writes the MMA meets (A's or B's st.shared), at the MMA's line
    assert f.cls == 8 and f.lines[-1] == exp.sides["@read"] and "fence.proxy.async" in f.missing
    assert ei.value.loc is not None and ei.value.loc.line == exp.sides["@read"]
