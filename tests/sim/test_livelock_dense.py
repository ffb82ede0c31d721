"""The livelock detector's dense window (tcsim.watch, issue 17): a loop whose state cycles with a period the sparse
samples (a power of two instructions apart) cannot see is found within a few periods of simulated work -- Brent's
cycle finding on the machine's states each time the warp passes its loop head -- and a loop that ends is never
called a livelock.

x -> 7 x mod 997 starting at 1 cycles with period 996 (7 is a primitive root of 997: its order is the group's
order, checked below), 5 instructions an iteration: 4,980 instructions, 2^2 x 1,245, so samples 2,048 or more
instructions apart see a period of 1,245 samples or more (millions of instructions before a repeat)."""
from __future__ import annotations

import numpy as np
import pytest

import tcsim.watch as watch
from tcsim.isa.errors import LivelockError, RunawayError
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def _src(exit_value: int) -> str:
    return HEAD + f""".visible .entry k(.param .u64 out)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 1;
  mov.u32 %r2, 0;
L:
  mul.lo.u32 %r1, %r1, 7;
  rem.u32 %r1, %r1, 997;
  add.u32 %r2, %r2, 1;
  setp.ne.u32 %p1, %r1, {exit_value};
  @%p1 bra L;
  st.global.u32 [%rd1], %r2;
  ret;
}}
"""


def _order_of_7():
    x, k = 7 % 997, 1
    while x != 1:
        x, k = x * 7 % 997, k + 1
    return k


@pytest.mark.parametrize("timing", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_long_data_cycle_is_found_within_a_few_periods(timing):
    # both tiers: the same finding, word for word (the fast tier runs the dense window's instructions one by one)
    assert _order_of_7() == 996
    msgs = []
    for tier in ("reference", "fast"):
        with pytest.raises(LivelockError) as ei:       # x never becomes 0 (997 is prime)
            run_launch(Launch(ptx=_src(0), args=[np.zeros(1, np.uint32)]), progress=False, detect=False,
                       max_instructions=60_000, tier=tier, timing=timing)
        assert "mul.lo.u32" in ei.value.loc.text         # the loop head
        sim_retired = int(str(ei.value).split("(")[-1].split(" instructions")[0])
        assert sim_retired < 6 * 996 * 5, (tier, sim_retired)
        msgs.append(str(ei.value))
    assert msgs[0] == msgs[1]


@pytest.mark.slow
def test_the_window_gives_up_after_its_arrivals(monkeypatch):
    # a window bounded to 1,024 arrivals cannot see a period of 996 iterations (Brent needs ~3 periods): the budget
    # ends the run, and the window is not reopened while memory stays the same
    monkeypatch.setattr(watch, "DENSE_ARRIVALS", 1024)
    with pytest.raises(RunawayError) as ei:
        run_launch(Launch(ptx=_src(0), args=[np.zeros(1, np.uint32)]), progress=False, detect=False,
                   max_instructions=40_000)
    assert not isinstance(ei.value, LivelockError)


@pytest.mark.slow
def test_without_the_dense_window_the_sparse_samples_miss_it(monkeypatch):
    monkeypatch.setattr(watch.RunWatch, "_dense_trigger", lambda self: None)
    with pytest.raises(RunawayError) as ei:
        run_launch(Launch(ptx=_src(0), args=[np.zeros(1, np.uint32)]), progress=False, detect=False,
                   max_instructions=60_000)
    assert not isinstance(ei.value, LivelockError)


def test_the_same_loop_that_reaches_its_exit_runs_to_the_end():
    # exit at x == 1: after the whole period (996 iterations, the dense window open for most of them)
    out = np.zeros(1, np.uint32)
    r = run_launch(Launch(ptx=_src(1), args=[out]), progress=False, detect=False)
    assert int(r.outputs[0][0]) == _order_of_7()
