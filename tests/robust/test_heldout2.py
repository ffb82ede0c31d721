"""Issue 17's held-out items, second session (robust17): what made three of 256 hand-written bad inputs outlast 60 s,
and what the second hand-written batch (/work/scratch/robust17/v2/cases2.py: 152 inputs run with `tcsim check`,
`tcsim run --tier reference` and `--tier fast`) found.

* a kernel whose only loops are counted loops with empty bodies (their control free in the sm_90a timing model:
  ptxas unrolls them away) held the simulated clock still, so a CTA spinning on its own shared memory beside them
  was never sampled twice 1000 cycles apart -- a free run of instructions now costs a cycle per
  ``tcsim.timing.model.FREE_RUN``;
* a data cycle of 65,536 iterations (327k instructions) is longer than the dense window follows: the default
  budget, seconds of work on both tiers, ends it with every warp's position;
* the atomics storm is tests/semantics/test_atomics_contention.py."""
from __future__ import annotations

import pytest

import tcsim.loop_watch as lw
import tcsim.watch as watch
from tcsim.isa.errors import LivelockError, NonTerminatingLoopError, RunawayError
from tcsim.launch import Launch, run_launch
from tcsim.timing.model import FREE_RUN

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"

EMPTY_LOOP = HEAD + """.visible .entry k()
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r3, 0;
L:
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, N;
  @%p1 bra L;
  ret;
}
"""


def test_a_loop_of_free_instructions_advances_the_clock():
    # the three instructions of the loop are free (counted loop, immediate bound: ptxas unrolls it away); a warp is
    # held a cycle after each FREE_RUN of them in a row: 3 N free instructions cost floor(3 N / FREE_RUN) cycles
    def cycles(n):
        r = run_launch(Launch(ptx=EMPTY_LOOP.replace("N", str(n))), timing=True, progress=False, detect=False)
        return int(r.stats["cycles"])
    assert FREE_RUN == 8
    base = cycles(8)
    for n in (800, 801, 803):
        assert cycles(n) - base == (3 * n) // 8 - (3 * 8) // 8, n


SPIN_BESIDE = HEAD + """.visible .entry k()
{
  .reg .pred %p<4>;
  .reg .b32 %r<10>;
  .shared .align 4 .u32 flag;
  mov.u32 %r2, %ctaid.x;
  setp.eq.u32 %p2, %r2, 0;
  @%p2 bra SPIN;
  mov.u32 %r3, 0;
L:
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p3, %r3, 100000;
  @%p3 bra L;
  bra DONE;
SPIN:
  mov.u32 %r9, flag;
W:
  ld.volatile.shared.u32 %r1, [%r9];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra W;
DONE:
  ret;
}
"""


@pytest.mark.parametrize("tier", ["reference", pytest.param("fast", marks=pytest.mark.slow)])
def test_a_shared_memory_spin_beside_free_loops_is_reported(tier, monkeypatch):
    # CTA 0 polls a flag in its own shared memory that nobody writes while CTAs 1-3 run empty counted loops (free:
    # zero cycles each before FREE_RUN); the per-cluster verdict needs two samples >= 1000 cycles apart
    monkeypatch.setattr(lw, "LOOP_AFTER", 0.5)
    monkeypatch.setattr(lw, "LOOP_EVERY", 0.25)
    with pytest.raises(NonTerminatingLoopError) as e:
        run_launch(Launch(ptx=SPIN_BESIDE, grid=(4, 1, 1)), timing=True, progress=False, detect=False, tier=tier)
    msg = str(e.value)
    assert "CTA (0,0,0) warp 0" in msg and "can never leave the loop at lines 21-23" in msg, msg
    assert "live warps of other CTAs are still running" in msg
    assert e.value.loc.line == 22


# x -> (1103515245 x + 12345) mod 2^16 has full period 65,536 (c odd, a = 1 mod 4) and never equals 100,000
DATA_CYCLE = HEAD + """.visible .entry k()
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r1, 1;
L:
  mul.lo.u32 %r1, %r1, 1103515245;
  add.u32 %r1, %r1, 12345;
  and.b32 %r1, %r1, 65535;
  setp.ne.u32 %p1, %r1, 100000;
  @%p1 bra L;
  ret;
}
"""


@pytest.mark.parametrize("tier", ["reference", "fast"])
def test_the_default_budget_is_seconds_of_work_on_both_tiers(tier, monkeypatch):
    monkeypatch.setattr(watch, "DEFAULT_MAX_SECONDS", 1.5)
    with pytest.raises(RunawayError) as e:
        run_launch(Launch(ptx=DATA_CYCLE), progress=False, detect=False, tier=tier)
    assert not isinstance(e.value, LivelockError)
    msg = str(e.value)
    assert "budget of 1.5 s of simulation work (CPU time; the default budget" in msg, msg
    # where every warp is, as the debugger's where() shows it: lanes, position, instruction
    assert "where every warp is:\n  CTA (0,0,0) warp 0: all lanes at <ptx>:" in msg, msg
    assert 10 <= e.value.loc.line <= 14         # (somewhere in the loop)


def test_numba_compilation_is_not_counted_as_work():
    from numba.core import event

    now = [100.0]
    clock = watch._CompileClock(lambda: now[0])
    clock.start()
    try:
        with event.trigger_event("numba:compile", data={}):
            now[0] += 2.0
            with event.trigger_event("numba:compile", data={}):     # (a nested compile counts once)
                now[0] += 1.0
        now[0] += 5.0
    finally:
        clock.stop()
    with event.trigger_event("numba:compile", data={}):        # after stop(): not counted
        now[0] += 7.0
    assert clock.seconds() == 3.0


@pytest.mark.parametrize("value", ["yes", "no", 1, None])
def test_the_cluster_opt_in_is_a_bool(value):
    # batch 2: non_portable_cluster='yes' was accepted (any truthy value opted in, 'no' too)
    from tcsim.isa.errors import LaunchError
    with pytest.raises(LaunchError, match=r"non_portable_cluster=.* is not True or False"):
        Launch(ptx=EMPTY_LOOP.replace("N", "1"), non_portable_cluster=value)


def test_compilation_left_out_is_capped(monkeypatch):
    # batch 2: a grid of 10^7 CTAs of 1024 threads on the fast tier spent 80 s of CPU under a 40 s budget, half of it
    # compiling; past COMPILE_ALLOWANCE seconds compiling counts as work
    from numba.core import event

    monkeypatch.setattr(watch, "COMPILE_ALLOWANCE", 2.5)
    now = [0.0]
    clock = watch._CompileClock(lambda: now[0])
    clock.start()
    try:
        with event.trigger_event("numba:compile", data={}):
            now[0] += 4.0
    finally:
        clock.stop()
    assert clock.seconds() == 2.5
