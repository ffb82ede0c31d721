"""Class 13: the TMEM allocation protocol (tcsim.race.tmem_alloc; PTX ISA 9.1 §9.7.16.7.1).

Each bug is a minimal edit of a correct twin; both run with timing off and on and schedule seeds None / 1 / 2.  The
buggy one must give a class-13 finding naming both PTX lines (the alloc / dealloc / relinquish line first, the
offending line last), the rule broken, and the outcome the GPU has (trap where the SASS ptxas 13.0 emits calls a
guardrail trap, 'continue' where nothing checks); the correct twin must give no finding at all.  Kernels are checked
with ``ptxas -arch=sm_100a`` when it is on PATH.
"""

import numpy as np
import pytest

from tcsim.findings import FindingError
from tests.semantics.test_tcgen05_mem import assert_ptxas
from tcsim.launch import Launch, run_launch

SCHEDULES = [(t, s) for t in (False, True) for s in (None, 1, 2)]

TEMPLATE = """.version 8.7
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b32 slot;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
BODY
  ret;
}
"""
ALLOC = "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], {n};\n"
ADDR = ("  tcgen05.fence::before_thread_sync;\n  bar.sync 0;\n  tcgen05.fence::after_thread_sync;\n"
        "  ld.shared.b32 %r1, [slot];\n")
RELINQUISH = "  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n"
DEALLOC = "  tcgen05.dealloc.cta_group::1.sync.aligned.b32 {a}, {n};\n"
LD = ("  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r2}, [%r1];\n  tcgen05.wait::ld.sync.aligned;\n"
      "  mul.wide.u32 %rd1, %r0, 4;\n  add.u64 %rd2, %rd0, %rd1;\n  st.global.u32 [%rd2], %r2;\n")


def kernel(body: str) -> str:
    return TEMPLATE.replace("BODY", body.rstrip("\n"))


def line_of(text: str, needle: str, nth: int = 0) -> int:
    return [i + 1 for i, l in enumerate(text.splitlines()) if needle in l][nth]


def run(text, timing, seed):
    """(findings, the FindingError that stopped the run or None)."""
    try:
        res = run_launch(Launch(ptx=text, block=(32, 1, 1), args=[np.zeros(32, np.uint32)]), seed=seed,
                         timing=timing)
    except FindingError as e:
        return e.findings, e
    return res.findings, None


def check_twins(correct: str, buggy: str):
    """Run both twins under every schedule; return the buggy twin's class-13 findings (the same on every schedule)
    and how it ended."""
    ct, bt = kernel(correct), kernel(buggy)
    assert_ptxas(ct)
    assert_ptxas(bt)
    seen = None
    for timing, seed in SCHEDULES:
        found, err = run(ct, timing, seed)
        assert found == [] and err is None, [str(f) for f in found]
        found, err = run(bt, timing, seed)
        got = ([(f.cls, f.lines, f.outcome, f.severity) for f in found], err is not None)
        assert seen is None or got == seen, (timing, seed)
        seen = got
    found, err = run(bt, False, None)
    return bt, [f for f in found if f.cls == 13], err


def test_double_dealloc_traps():
    correct = ALLOC.format(n=64) + ADDR + RELINQUISH + DEALLOC.format(a="%r1", n=64)
    buggy = correct + DEALLOC.format(a="%r1", n=64)
    text, (f,), err = check_twins(correct, buggy)
    assert err is not None and err.finding is f and f.outcome == "trap"
    assert f.lines == (line_of(text, "tcgen05.dealloc", 0), line_of(text, "tcgen05.dealloc", 1))
    assert "double free: they were already freed" in f.message and "previous Tensor Memory allocation" in f.missing


def test_alloc_after_relinquish_traps():
    correct = ALLOC.format(n=32) + ADDR + RELINQUISH + DEALLOC.format(a="%r1", n=32)
    buggy = RELINQUISH + ALLOC.format(n=32) + ADDR + DEALLOC.format(a="%r1", n=32)
    text, (f,), err = check_twins(correct, buggy)
    assert err is not None and f.outcome == "trap"
    assert f.lines == (line_of(text, "relinquish_alloc_permit"), line_of(text, "tcgen05.alloc"))
    assert "illegal for a CTA to perform tcgen05.alloc after" in f.missing


def test_missing_dealloc_leaks_at_exit():
    correct = ALLOC.format(n=128) + ADDR + RELINQUISH + DEALLOC.format(a="%r1", n=128)
    buggy = ALLOC.format(n=128) + ADDR + RELINQUISH
    text, (f,), err = check_twins(correct, buggy)
    assert err is None and f.outcome == "continue" and f.severity == "error"
    assert f.lines == (line_of(text, "tcgen05.alloc"), line_of(text, "ret;"))
    assert "[0, 128)" in f.message and "must be explicitly deallocated" in f.missing


def test_tcgen05_ld_after_dealloc():
    correct = ALLOC.format(n=32) + ADDR + RELINQUISH + LD + DEALLOC.format(a="%r1", n=32)
    buggy = ALLOC.format(n=32) + ADDR + RELINQUISH + DEALLOC.format(a="%r1", n=32) + LD
    text, (f,), err = check_twins(correct, buggy)
    assert err is None and f.outcome == "continue"
    assert f.lines == (line_of(text, "tcgen05.dealloc"), line_of(text, "tcgen05.ld"))
    assert "freed by the earlier dealloc" in f.message and "move the access before the dealloc" in f.fix


def test_dealloc_of_an_address_inside_the_allocation_traps():
    correct = ALLOC.format(n=64) + ADDR + RELINQUISH + DEALLOC.format(a="%r1", n=64)
    buggy = (ALLOC.format(n=64) + ADDR + RELINQUISH + "  add.u32 %r3, %r1, 32;\n"
             + DEALLOC.format(a="%r3", n=32) + DEALLOC.format(a="%r1", n=32))
    text, (f,), err = check_twins(correct, buggy)
    assert err is not None and f.outcome == "trap"
    assert f.lines == (line_of(text, "tcgen05.alloc"), line_of(text, "tcgen05.dealloc", 0))
    assert "no tcgen05.alloc returned this address" in f.message


def test_dealloc_address_with_a_lane_field_is_a_lint_note():
    """The GPU uses taddr & 0xFFFF only: the dealloc works, a lint note says the address is not the alloc's."""
    correct = ALLOC.format(n=32) + ADDR + RELINQUISH + DEALLOC.format(a="%r1", n=32)
    buggy = (ALLOC.format(n=32) + ADDR + RELINQUISH + "  add.u32 %r3, %r1, 0x200000;\n"
             + DEALLOC.format(a="%r3", n=32))
    text, found, err = check_twins(correct, buggy)
    assert err is None and [f.severity for f in found] == ["lint"]
    assert found[0].lines == (line_of(text, "tcgen05.dealloc"),) and "lane field 32" in found[0].message


@pytest.mark.parametrize("timing", [False, True])
def test_strict_mode_stops_at_a_continue_finding(timing):
    text = kernel(ALLOC.format(n=128) + ADDR + RELINQUISH)
    with pytest.raises(FindingError) as e:
        run_launch(Launch(ptx=text, block=(32, 1, 1), args=[np.zeros(32, np.uint32)]), timing=timing, strict=True)
    assert e.value.finding.cls == 13 and "never deallocated" in e.value.finding.message


def test_an_alloc_nobody_can_satisfy_is_a_hang_naming_the_holder():
    """The CTA holds all 512 columns and allocates again: the GPU's alloc spins for ever (FIND_AND_SET retried after
    NANOSLEEP).  The deadlock report names the root cause, recorded as a class-13 finding with outcome 'hang' whose
    sides are the holder's alloc and the blocked alloc."""
    from tcsim.isa.errors import DeadlockError
    first = ALLOC.format(n=512) + ADDR
    second = "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;\n  ld.shared.b32 %r4, [slot];\n"
    correct = first + DEALLOC.format(a="%r1", n=512) + second + RELINQUISH + DEALLOC.format(a="%r4", n=32)
    buggy = first + second + RELINQUISH + DEALLOC.format(a="%r4", n=32) + DEALLOC.format(a="%r1", n=512)
    ct, bt = kernel(correct), kernel(buggy)
    assert_ptxas(ct)
    assert_ptxas(bt)
    for timing, seed in SCHEDULES:
        assert run(ct, timing, seed) == ([], None)
        with pytest.raises(DeadlockError, match="Root cause: .class 13. tcgen05.alloc of 32 columns") as e:
            run_launch(Launch(ptx=bt, block=(32, 1, 1), args=[np.zeros(32, np.uint32)]), seed=seed, timing=timing)
        (f,) = [f for f in e.value.findings if f.cls == 13]
        assert f.outcome == "hang" and f.lines == (line_of(bt, "tcgen05.alloc", 0), line_of(bt, "tcgen05.alloc", 1))
        assert "0 column(s) are free" in f.message and "[0, 512) allocated at line" in f.message


PAIR = """.version 8.7
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 out)
.reqnctapercluster 2, 1, 1
{
  .reg .b32 %r<16>;
  .reg .pred %p<4>;
  .shared .align 4 .b32 slot;
  mov.u32 %r0, %cluster_ctarank;
  setp.eq.u32 %p1, %r0, 0;
  selp.u32 %r5, 32, NCOLS_ODD, %p1;
  tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [slot], %r5;
  tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;
  ld.shared.b32 %r1, [slot];
  barrier.cluster.arrive;
  barrier.cluster.wait;
  tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r1, 32;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  ret;
}
"""


def test_pair_alloc_with_different_column_counts():
    """cta_group::2: the even CTA's warp allocates its own nCols for both (SASS: UTCATOMSWS.2CTA by the even CTA,
    the start stored to the odd one); a class-13 finding names both alloc executions."""
    ct, bt = PAIR.replace("NCOLS_ODD", "32"), PAIR.replace("NCOLS_ODD", "64")
    assert_ptxas(ct)
    assert_ptxas(bt)
    for timing, seed in SCHEDULES:
        out = np.zeros(4, np.uint32)
        res = run_launch(Launch(ptx=ct, grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1), args=[out]),
                         seed=seed, timing=timing)
        assert res.findings == []
        res = run_launch(Launch(ptx=bt, grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1), args=[out]),
                         seed=seed, timing=timing)
        (f,) = res.findings
        assert f.cls == 13 and ("different column counts (32 and 64)" in f.message
                                or "different column counts (64 and 32)" in f.message)
        assert {s.cta for s in f.sides} == {(0, 0, 0), (1, 0, 0)}
        assert f.lines == (line_of(bt, "tcgen05.alloc"),) * 2
