"""The loop monitor (tcsim.loop_watch, issue 17): a loop that can never end, or not within the budget, is reported
at once, located at the compare that governs its exit; loops that end (large trip counts, data-dependent while
loops, polls another warp satisfies, K loops of the examples) are never reported.

The exit arithmetic is checked against a brute-force oracle (every iteration of small-width counters); the
integration cases sample at every run-watch check (LOOP_AFTER = LOOP_EVERY = 0) so they take a fraction of a
second instead of the product's seconds."""
from __future__ import annotations

import random
import time

import numpy as np
import pytest

import tcsim.loop_watch as lw
from tcsim.isa.errors import DeadlockError, NonTerminatingLoopError, RunawayError
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def kernel(body: str, params: str = "") -> str:
    return HEAD + f""".visible .entry k({params})
{{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  .shared .b64 bar;
{body}
}}
"""


@pytest.fixture
def eager(monkeypatch):
    """Sample at every run-watch check."""
    monkeypatch.setattr(lw, "LOOP_AFTER", 0.0)
    monkeypatch.setattr(lw, "LOOP_EVERY", 0.0)


# ---------------------------------------------------------------------------------------------- exit arithmetic
def _brute(cmp, signed, width, a, sa, b, sb, want, limit):
    m = 1 << width

    def val(x):
        return x - m if signed and x >> (width - 1) else x
    for k in range(limit):
        ak, bk = (a + k * sa) % m, (b + k * sb) % m
        r = {"lt": val(ak) < val(bk), "le": val(ak) <= val(bk), "gt": val(ak) > val(bk), "ge": val(ak) >= val(bk),
             "eq": ak == bk, "ne": ak != bk}[cmp]
        if r == want:
            return k
    return None


def _random_cases(n, seed):
    rng = random.Random(seed)
    for _ in range(n):
        width = rng.choice([4, 6, 8])
        m = 1 << width
        cmp = rng.choice(["lt", "le", "gt", "ge", "eq", "ne"])
        a, b = rng.randrange(m), rng.randrange(m)
        sa = rng.randrange(m) if rng.random() < .8 else 0
        sb = rng.randrange(m) if (sa == 0 or cmp in ("eq", "ne")) and rng.random() < .5 else 0
        yield cmp, rng.random() < .5, width, a, sa, b, sb, rng.random() < .5


def test_int_exit_is_exact_against_brute_force(monkeypatch):
    monkeypatch.setattr(lw, "SEGMENTS", 100000)
    for case in _random_cases(3000, 1):
        width = case[2]
        assert lw._int_exit(*case, 1 << 62) == _brute(*case, 4 * (1 << width) + 2), case


def test_int_exit_is_a_lower_bound_with_few_segments():
    for case in _random_cases(3000, 2):
        exact = _brute(*case, 4 * (1 << case[2]) + 2)
        got = lw._int_exit(*case, 1 << 62)
        if got is None:
            assert exact is None, case
        else:
            assert exact is None or got <= exact, case


def test_float_exit_against_float32_iteration():
    rng = random.Random(3)
    for _ in range(400):
        x = float(np.float32(rng.choice([0.0, 1.0, -3.5, 1e6, 16777216.0, 3e7])))
        s = float(np.float32(rng.choice([1.0, -1.0, 0.5, 0.0, 3.0])))
        bnd = float(np.float32(x + rng.choice([-40.0, -3.0, 0.0, 2.5, 40.0])))
        cmp = rng.choice(["lt", "le", "gt", "ge", "eq", "ne"])
        want = rng.random() < .5
        k, _ = lw._float_exit(cmp, x, s, bnd, 0.0, want, 32)
        v, first = np.float32(x), None
        for j in range(400):
            r = {"lt": v < bnd, "le": v <= bnd, "gt": v > bnd, "ge": v >= bnd, "eq": v == bnd, "ne": v != bnd}[cmp]
            if r == want:
                first = j
                break
            v = np.float32(v + np.float32(s))
        if k is None:
            assert first is None, (cmp, x, s, bnd, want)
        else:
            assert first is None or k <= first, (cmp, x, s, bnd, want, k, first)


# ---------------------------------------------------------------------------------------------- loops that never end
def _line_of(src: str, text: str) -> int:
    return next(i for i, ln in enumerate(src.splitlines(), 1) if text in ln)


NEVER = {
    # a counter whose bound is two billion iterations away
    "wrong_bound": (kernel("""  mov.u32 %r1, 0;
  mov.u32 %r2, 2147483000;
L:
  add.s32 %r1, %r1, 1;
  setp.lt.s32 %p1, %r1, %r2;
  @%p1 bra L;
  ret;"""), "setp.lt.s32", "cannot leave, within the run's budget", ()),
    # an equality test the counter steps over
    "ne_skips_the_bound": (kernel("""  mov.u32 %r1, 0;
L:
  add.s32 %r1, %r1, 2;
  setp.ne.s32 %p1, %r1, 7;
  @%p1 bra L;
  ret;"""), "setp.ne.s32", "never", ()),
    # for (unsigned i = 10; i >= 0; i--)
    "unsigned_wrap": (kernel("""  mov.u32 %r1, 10;
  mov.u32 %r3, 0;
L:
  add.u32 %r3, %r3, %r1;
  add.s32 %r1, %r1, -1;
  setp.ge.u32 %p1, %r1, 0;
  @%p1 bra L;
  ret;"""), "setp.ge.u32", "wrap-arounds included", ()),
    # the counter is never incremented (another register is)
    "no_increment": (kernel("""  mov.u32 %r1, 0;
  mov.u32 %r3, 0;
L:
  add.u32 %r3, %r3, 5;
  setp.lt.s32 %p1, %r1, 10;
  @%p1 bra L;
  ret;"""), "setp.lt.s32", "neither operand changes", ()),
    # the bound is re-read from memory every iteration; the counter runs away from it
    "bound_from_memory": (kernel("""  ld.param.u64 %rd1, [n];
  mov.u32 %r1, 100;
L:
  ld.global.u32 %r2, [%rd1];
  add.s32 %r1, %r1, -1;
  setp.ne.s32 %p1, %r1, %r2;
  @%p1 bra L;
  ret;""", ".param .u64 n"), "setp.ne.s32", "loaded by", (np.array([200], np.uint32),)),
    # the outer loop of two: the inner one ends every time, the outer counter steps over its bound by 3s and meets
    # it again only after wrapping around (2^32 / 3 iterations)
    "nested_outer": (kernel("""  mov.u32 %r1, 0;
OUT:
  mov.u32 %r2, 0;
IN:
  add.s32 %r2, %r2, 1;
  setp.lt.s32 %p1, %r2, 50;
  @%p1 bra IN;
  add.s32 %r1, %r1, 3;
  setp.ne.s32 %p2, %r1, 1000;
  @%p2 bra OUT;
  ret;"""), "setp.ne.s32 %p2", "cannot leave, within the run's budget", ()),
    # two warps meet at bar.sync every iteration of a loop that wraps around before it ends
    "bar_sync_loop": (kernel("""  mov.u32 %r1, 0;
L:
  bar.sync 0;
  add.s32 %r1, %r1, 1;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra L;
  ret;"""), "setp.ne.s32", "cannot leave, within the run's budget", ()),
    # x += 1.0f from 2^24: the step is lost in rounding
    "float_absorbed": (kernel("""  mov.f32 %f1, 0f4B800000;
L:
  add.f32 %f1, %f1, 0f3F800000;
  setp.lt.f32 %p1, %f1, 0f4C000000;
  @%p1 bra L;
  ret;"""), "setp.lt.f32", "lost in rounding", ()),
    # an mbarrier poll (test_wait) that counts its attempts: the phase needs 64 arrivals, 32 came
    "mbarrier_poll_with_counter": (kernel("""  mov.u32 %r3, 0;
  mbarrier.init.shared.b64 [bar], 64;
  mbarrier.arrive.shared.b64 %rd2, [bar];
W:
  add.u32 %r3, %r3, 1;
  mbarrier.test_wait.parity.shared.b64 %p1, [bar], 0;
  @!%p1 bra W;
  ret;"""), "mbarrier.test_wait", "nothing that could complete it", ()),
    # a flag poll that counts its attempts; nobody sets the flag
    "flag_poll_with_counter": (kernel("""  ld.param.u64 %rd1, [n];
  mov.u32 %r3, 0;
W:
  add.u32 %r3, %r3, 1;
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra W;
  ret;""", ".param .u64 n"), "setp.eq.u32", "memory is not changing", (np.zeros(1, np.uint32),)),
    # a clock wait whose compare can never fail: an unsigned difference is always >= 0
    "clock_never": (kernel("""  mov.u64 %rd1, %clock64;
L:
  mov.u64 %rd2, %clock64;
  sub.u64 %rd3, %rd2, %rd1;
  setp.ge.u64 %p1, %rd3, 0;
  @%p1 bra L;
  ret;"""), "setp.ge.u64", "as %clock64 runs on: never", ()),
    # no exit at all
    "no_exit": (kernel("""  mov.u32 %r1, 0;
L:
  add.u32 %r1, %r1, 1;
  bra L;"""), "bra L;", "has no exit", ()),
    # a 64-bit pointer stepping by 8 towards an end 4 bytes off the grid
    "pointer_misses_end": (kernel("""  mov.u64 %rd1, 0;
  mov.u64 %rd2, 100;
L:
  add.u64 %rd1, %rd1, 8;
  setp.ne.u64 %p1, %rd1, %rd2;
  @%p1 bra L;
  ret;"""), "setp.ne.u64", "skips it", ()),
    # a derived counter (i * 4 + base) compared with an end it skips
    "derived_counter": (kernel("""  mov.u32 %r1, 0;
  mov.u32 %r5, 0;
L:
  add.s32 %r1, %r1, 1;
  mad.lo.s32 %r2, %r1, 4, 16;
  add.u32 %r5, %r5, %r2;
  setp.ne.s32 %p1, %r2, 1003;
  @%p1 bra L;
  ret;"""), "setp.ne.s32", "skips it", ()),
}


@pytest.mark.parametrize("name", sorted(NEVER))
def test_a_loop_that_cannot_end_is_reported_at_its_compare(name, eager):
    src, compare, words, args = NEVER[name]
    block = (64, 1, 1) if name == "bar_sync_loop" else (32, 1, 1)
    t0 = time.perf_counter()
    with pytest.raises(NonTerminatingLoopError) as e:
        run_launch(Launch(ptx=src, block=block, args=list(args)), progress=False, detect=False)
    assert isinstance(e.value, RunawayError)
    msg = str(e.value)
    assert e.value.loc is not None and e.value.loc.line == _line_of(src, compare), msg
    assert words in msg and "the loop at lines" in msg and "CTA (0,0,0) warp" in msg, msg
    assert time.perf_counter() - t0 < 20


def test_over_the_instruction_budget_is_reported_before_it_is_spent(eager):
    # 10^6 iterations of >= 3 instructions cannot fit in 200,000 warp-instructions: reported at the first samples
    src = kernel("""  mov.u32 %r1, 0;
L:
  add.s32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 1000000;
  @%p1 bra L;
  ret;""")
    with pytest.raises(NonTerminatingLoopError) as e:
        run_launch(Launch(ptx=src), max_instructions=200_000, progress=False, detect=False)
    msg = str(e.value)
    assert "max_instructions=200000" in msg and "more updates" in msg
    retired = int(msg.split("after ")[1].split(" warp-instructions")[0].replace(",", ""))
    assert retired < 20_000


@pytest.mark.slow
def test_the_default_product_settings_report_within_seconds():
    # LOOP_AFTER / LOOP_EVERY as shipped: a counting loop that skips its bound ends in a diagnostic well within 60 s
    # (seconds of work: the process's CPU time, as the run watch counts them)
    src = NEVER["ne_skips_the_bound"][0]
    t0 = time.process_time()
    with pytest.raises(NonTerminatingLoopError):
        run_launch(Launch(ptx=src), progress=False, detect=False)
    assert time.process_time() - t0 < lw.LOOP_AFTER + 3 * lw.LOOP_EVERY + 5


# ---------------------------------------------------------------------------------------------- loops that end
GOOD = {
    # a large trip count that converges
    "converging": (kernel("""  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 0;
  mov.u32 %r2, 0;
L:
  add.s32 %r1, %r1, 1;
  add.u32 %r2, %r2, 3;
  setp.lt.s32 %p1, %r1, 3000;
  @%p1 bra L;
  st.global.u32 [%rd1], %r2;
  ret;""", ".param .u64 out"), 9000),
    # a data-dependent while loop (Collatz from 77031: 350 steps)
    "collatz": (kernel("""  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 77031;
  mov.u32 %r5, 0;
L:
  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p2, %r2, 0;
  @%p2 bra EVEN;
  mad.lo.u32 %r1, %r1, 3, 1;
  bra NEXT;
EVEN:
  shr.u32 %r1, %r1, 1;
NEXT:
  add.u32 %r5, %r5, 1;
  setp.ne.u32 %p1, %r1, 1;
  @%p1 bra L;
  st.global.u32 [%rd1], %r5;
  ret;""", ".param .u64 out"), 350),
    # a counter that wraps around once and then meets its bound (u32: 0 - 3 -> 2^32 - 3, then up to 5)
    "wraps_then_ends": (kernel("""  ld.param.u64 %rd1, [out];
  mov.u32 %r1, -3;
  mov.u32 %r2, 0;
L:
  add.u32 %r1, %r1, 1;
  add.u32 %r2, %r2, 1;
  setp.ne.u32 %p1, %r1, 5;
  @%p1 bra L;
  st.global.u32 [%rd1], %r2;
  ret;""", ".param .u64 out"), 8),
    # warp 0 polls a flag (counting) while warp 1 counts to 1500 and then sets it
    "poll_satisfied_later": (kernel("""  ld.param.u64 %rd1, [out];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, 0;
  setp.ge.u32 %p2, %r2, 32;
  @%p2 bra SETTER;
W:
  add.u32 %r3, %r3, 1;
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra W;
  ret;
SETTER:
  mov.u32 %r4, 0;
C:
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p3, %r4, 1500;
  @%p3 bra C;
  setp.eq.u32 %p3, %r2, 32;
  @%p3 st.volatile.global.u32 [%rd1], %r4;
  ret;""", ".param .u64 out"), 1500),
}


@pytest.mark.parametrize("name", sorted(GOOD))
def test_a_loop_that_ends_is_never_reported(name, eager):
    src, want = GOOD[name]
    block = (64, 1, 1) if name == "poll_satisfied_later" else (32, 1, 1)
    r = run_launch(Launch(ptx=src, block=block, args=[np.zeros(1, np.uint32)]), progress=False, detect=False)
    assert int(r.outputs[0][0]) == want


def test_the_gemm_example_k_loop_is_never_reported(eager):
    from tcsim.examples import mma_gemm
    launch = mma_gemm.make_launch()
    r = run_launch(launch, progress=False, detect=False)
    mma_gemm.check(r, launch)


def test_a_deadlock_is_still_a_deadlock(eager):
    # try_wait blocks: the engine's deadlock report comes first, with its root cause
    src = kernel("""  mbarrier.init.shared.b64 [bar], 64;
  mbarrier.arrive.shared.b64 %rd2, [bar];
W:
  mbarrier.try_wait.parity.shared.b64 %p1, [bar], 0;
  @!%p1 bra W;
  ret;""")
    with pytest.raises(DeadlockError):
        run_launch(Launch(ptx=src), progress=False, detect=False)


# ---------------------------------------------------------------------------------------------- clock waits
# start = clock(); while (clock() - start < N) { tries++; }  -- out = the last difference read, tries
CLOCK_WAIT = {
    "clock64": ("%clock64", "u64", "s64", 200_000_000),
    "clock": ("%clock", "u32", "s32", 100_000_000),
    "globaltimer": ("%globaltimer", "u64", "u64", 50_000_000),      # 50 ms in nanoseconds
}


def _clock_wait(sreg, mov, sub, n):
    w = 64 if mov == "u64" else 32
    r = "%rd" if w == 64 else "%r"
    return kernel(f"""  ld.param.u64 %rd5, [out];
  mov.{mov} {r}1, {sreg};
  mov.u32 %r9, 0;
W:
  add.u32 %r9, %r9, 1;
  mov.{mov} {r}2, {sreg};
  sub.{sub} {r}3, {r}2, {r}1;
  setp.lt.{sub} %p1, {r}3, {n};
  @%p1 bra W;
  st.global.{mov} [%rd5], {r}3;
  ret;""", ".param .u64 out")


@pytest.mark.parametrize("tier", ["reference", "fast"])
@pytest.mark.parametrize("name", sorted(CLOCK_WAIT))
def test_a_clock_wait_skips_simulated_time_to_its_deadline(name, tier, eager):
    # every warp waits for the clock and nothing else runs: simulated time jumps to just before the deadline, and
    # the loop leaves having read a difference of at least N (and not much more: the skip stops 256 cycles short)
    sreg, mov, sub, n = CLOCK_WAIT[name]
    src = _clock_wait(sreg, mov, sub, n)
    lines = f"lines {_line_of(src, 'add.u32 %r9')}-{_line_of(src, '@%p1 bra W')}"
    t0 = time.process_time()
    r = run_launch(Launch(ptx=src, block=(64, 1, 1),
                          args=[np.zeros(1, np.uint64 if mov == "u64" else np.uint32)]),
                   progress=False, detect=False, tier=tier)
    got = int(r.outputs[0][0])
    ns_per_cycle = 1000 / r.simulation.arch_config.sm_clock_mhz if name == "globaltimer" else 1
    assert n <= got <= n + 64 * ns_per_cycle + 8, got
    sim = r.simulation
    assert sim.time_skipped > 0.99 * n / ns_per_cycle
    assert any("simulated time skipped" in w and lines in w for w in sim.warnings), sim.warnings
    assert r.stats["warp_instructions"] < 10 ** 6
    assert time.process_time() - t0 < 10


def test_a_clock_wait_is_skipped_only_once_nothing_else_runs(eager):
    # warp 1 counts to 3000 and then writes; warp 0 waits 10^7 cycles: time cannot be skipped while warp 1 works
    # (its count would come out of a different cycle), so the write happens and the wait still ends at its deadline
    src = kernel("""  ld.param.u64 %rd5, [out];
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p2, %r1, 32;
  @%p2 bra WORK;
  mov.u64 %rd1, %clock64;
W:
  mov.u64 %rd2, %clock64;
  sub.s64 %rd3, %rd2, %rd1;
  setp.lt.s64 %p1, %rd3, 10000000;
  @%p1 bra W;
  st.global.u64 [%rd5], %rd3;
  ret;
WORK:
  mov.u32 %r2, 0;
C:
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p3, %r2, 3000;
  @%p3 bra C;
  mov.u64 %rd4, %clock64;
  setp.eq.u32 %p3, %r1, 32;
  @%p3 st.global.u64 [%rd5+8], %rd4;
  ret;""", ".param .u64 out")
    r = run_launch(Launch(ptx=src, block=(64, 1, 1), args=[np.zeros(2, np.uint64)]), progress=False, detect=False)
    waited, worker_done = (int(x) for x in r.outputs[0])
    assert 10_000_000 <= waited <= 10_000_064
    assert 3000 <= worker_done < 20_000          # the worker's cycles were not skipped
    assert r.simulation.time_skipped > 9_000_000


def test_a_poll_with_a_timeout_times_out_at_its_deadline(eager):
    # while (flag == 0 && clock64() - start < 5e7): nobody sets the flag, so the wait ends by the timeout
    src = kernel("""  ld.param.u64 %rd5, [out];
  mov.u64 %rd1, %clock64;
W:
  ld.volatile.global.u32 %r1, [%rd5];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mov.u64 %rd2, %clock64;
  sub.s64 %rd3, %rd2, %rd1;
  setp.lt.s64 %p2, %rd3, 50000000;
  @%p2 bra W;
  st.global.u64 [%rd5+8], %rd3;
DONE:
  ret;""", ".param .u64 out")
    r = run_launch(Launch(ptx=src, args=[np.zeros(2, np.uint64)]), progress=False, detect=False)
    assert 50_000_000 <= int(r.outputs[0][1]) <= 50_000_064
