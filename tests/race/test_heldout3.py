"""The third round of held-out-style variants (tests/race/heldout3.py): one correct/buggy pair per bug class, for
all 20 classes, written apart from the zoo and the second variants.  Under timing off and on and scheduler seeds
None/1/2, the correct twin gives the numpy result and no finding; the buggy twin gives a finding that names the bug
-- its class, the PTX lines of both sides, the missing edge -- and the same diagnosis in every mode.

CI runs one case per class (its first target, timing off and on, seed None); the whole matrix is slow."""
from __future__ import annotations

import pytest

from tests.race.heldout3 import VARIANTS3
from tests.race.hb_common import MODES
from tests.race.test_heldout_variants import (QUICK, test_buggy_twin_is_a_minimal_edit as _minimal,
                                              test_buggy_twin_names_the_bug_the_same_way_in_every_mode as _named,
                                              test_correct_twin_is_clean as _clean,
                                              test_ptxas_assembles_both_twins as _ptxas)

#: the second variant of a class runs only in the slow matrix (one fast case per class in CI); the polled
#: expect_tx variant ends in a livelock, which the run watch needs seconds of polling to call
SECOND = {"standalone_expect_tx_high_polled", "multicast_mask_leaves_peer_out"}
RUNS = [pytest.param(v, t, modes, id=f"{v.name}-{t}-{'all-modes' if full else 'quick'}",
                     marks=[pytest.mark.slow] if full or v.name in SECOND else [])
        for v in VARIANTS3 for t in v.targets for full, modes in ((False, QUICK), (True, MODES))
        if full or t == v.targets[0]]


def test_every_class_has_a_variant():
    assert sorted({v.cls for v in VARIANTS3}) == list(range(1, 21))
    assert len(VARIANTS3) >= 21
    assert len({v.name for v in VARIANTS3}) == len(VARIANTS3)


@pytest.mark.parametrize("v", VARIANTS3, ids=lambda v: v.name)
def test_buggy_twin_is_a_minimal_edit(v):
    _minimal(v)


@pytest.mark.parametrize("v,target,modes", RUNS)
def test_correct_twin_is_clean(v, target, modes):
    _clean(v, target, modes)


@pytest.mark.parametrize("v,target,modes", RUNS)
def test_buggy_twin_names_the_bug_the_same_way_in_every_mode(v, target, modes):
    _named(v, target, modes)


@pytest.mark.slow
@pytest.mark.parametrize("v,target", [pytest.param(v, t, id=f"{v.name}-{t}") for v in VARIANTS3 for t in v.targets])
def test_ptxas_assembles_both_twins(v, target, tmp_path):
    _ptxas(v, target, tmp_path)
