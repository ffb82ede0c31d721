"""Class 9 through an mbarrier hand-off (DeepEP PR #642): readers ld.shared a TMA-fed stage and release it with an
mbarrier arrive that the producer waits on before its next cp.async.bulk overwrites the stage.  PTX ISA 9.1 §8.6
asks for fence.proxy.async between the generic read and the async write whatever orders them; the detector reports
the hand-off when the read may still be outstanding at the release -- nothing used its value before the arrive --
and accepts a stage consumed before it is released (pipelines ship that way, tests/zoo/test_clean_corpus.py).

Variants of the zoo's ``handoff`` template (tests/zoo/templates/handoff.ptx.tmpl, pair
``09_release_before_use_handoff``): the fence in the producer after its wait (DeepEP's first placement of the fix,
commit "Add fence.proxy.async.shared::cta between mbarrier wait and TMA load"), and the word used before the
release with no fence at all."""
import sys
from pathlib import Path

import numpy as np

from tests.race.hb_common import assert_clean
from tcsim.launch import run_launch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "zoo"))
import zoo  # noqa: E402

PAIR = zoo.BY_NAME["09_release_before_use_handoff"]
TMPL = (zoo.TEMPLATES / "handoff.ptx.tmpl").read_text()
FENCE = "\tfence.proxy.async.shared::cta;                                  // @fence"
USE = "\tmad.lo.u32 \t%r22, %r23, %r25, %r22;         // the word is used after the release"
ARRIVE = "\t@%p5 mbarrier.arrive.shared::cta.b64 \t_, [%r14];                // @arrive"


def run(ptx):
    out = []
    for timing, seed in ((False, None), (True, 1)):     # the zoo pair runs every mode (tests/zoo/test_zoo.py)
        launch, want = zoo.make_launch(PAIR, ptx)
        res = run_launch(launch, timing=timing, seed=seed)
        for i, w in want.items():
            assert np.array_equal(res.outputs[i], w)
        out.append(((timing, seed), res))
    return out


def edit(text, pairs):
    for a, b in pairs:
        assert text.count(a) == 1, a
        text = text.replace(a, b)
    return text


def test_fence_in_the_producer_after_its_wait_is_clean():
    ptx = edit(TMPL, [(FENCE + "\n", ""),
                      ("\t@!%p4 bra \t$L_wait_empty;\n",
                       "\t@!%p4 bra \t$L_wait_empty;\n\tfence.proxy.async.shared::cta;\n")])
    assert_clean(run(ptx))


def test_stage_consumed_before_its_release_without_a_fence_is_clean():
    # the mad reads the loaded word before the arrive: the load has been performed when the stage is released
    mult = "\tadd.u32 \t%r25, %r10, 1;\n"
    ptx = edit(TMPL, [(FENCE + "\n", ""), (mult + USE + "\n", ""),
                      ("\telect.sync", mult + USE + "\n\telect.sync")])
    assert_clean(run(ptx))


def test_the_finding_names_the_read_the_release_and_the_copy():
    ptx = zoo.paths(PAIR)[1].read_text()
    lines = ptx.split("\n")
    at = {m: next(i + 1 for i, ln in enumerate(lines) if ln.rstrip().endswith(f"// @{m}")) for m in
          ("read", "arrive", "write")}
    for mode, res in run(ptx):
        fs = [f for f in res.findings if f.cls == 9]
        assert len(fs) == 1 and not [f for f in res.findings if f.cls != 9], (mode, [str(f) for f in res.findings])
        f = fs[0]
        assert f.lines == (at["read"], at["arrive"], at["write"]), (mode, f.lines)
        assert f"fence.proxy.async.shared::cta between line {at['read']}" in f.missing
        assert f"before the mbarrier arrive at line {at['arrive']}" in f.missing
        assert f.severity == "error"
