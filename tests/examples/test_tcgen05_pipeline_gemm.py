"""examples/tcgen05_pipeline_gemm: the multi-CTA tcgen05 GEMM fed by a 2-slot TMA / mbarrier ring (issue 18's
256x512x256 benchmark shape).  Each configuration equals an independent float64 numpy product exactly for integer
inputs (every product and partial sum exact) and within the truncation bound for normal inputs, and the bit-exact
tensor-core oracle chained as the kernel issues its MMAs; the results do not depend on the schedule or on timing;
the PTX assembles with ptxas for sm_100a; and breaking the ring's synchronisation is caught."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tcsim.cli import main
from tcsim.isa.ptxas import PTXAS
from tcsim.launch import run_launch
from kernel_checks import assert_assembles, mutation_is_caught, run_checked

import tcsim.examples.tcgen05_pipeline_gemm as ex

SMALL = "bf16_m128n256k192_bn128"           # 3 K stages lap the 2-slot ring; BN 128, grid 2 x 1


def test_ptxas_accepts_the_example():
    if PTXAS is None:
        pytest.skip("ptxas not on PATH")
    text = ex.PTX.read_text()
    assert re.search(r"^\.target sm_100a$", text, flags=re.M)
    assert_assembles(text)


def test_tcsim_check_accepts_the_example(capsys):
    assert main(["check", str(ex.PTX)]) == 0
    assert "OK" in capsys.readouterr().out


def test_default_shape_256x512x256():
    """The benchmark shape (2 x 2 CTAs of 128 x 256, K = 256 in four stages through two slots), normal inputs."""
    launch = ex.make_launch()
    assert launch.grid == (2, 2, 1) and launch.args[0].shape == (256, 256) and launch.args[2].shape == (256, 512)
    res = run_checked(ex, launch)
    assert res.findings == []


@pytest.mark.parametrize("variant", [SMALL, "m128n256k64"])
def test_integer_inputs_equal_the_float64_product(variant):
    launch = ex.make_launch(variant=variant, values="int", seed=3)
    res = run_checked(ex, launch)
    np.testing.assert_array_equal(res.outputs[2], ex.float64_product(launch).astype(np.float32))


def test_schedule_and_timing_independent():
    """Scheduler seeds and the timing model change when things happen, never the result (DESIGN.md principle 5)."""
    launch = ex.make_launch(variant=SMALL, seed=5)
    base = run_checked(ex, launch, detect=False).outputs[2]
    for kw in (dict(seed=1), dict(timing=True)):
        got = run_checked(ex, launch, detect=False, **kw).outputs[2]
        assert np.array_equal(base.view(np.uint32), got.view(np.uint32)), kw


def test_wrong_shapes_are_rejected():
    with pytest.raises(ValueError, match="BN"):
        ex.make_launch(bn=64)
    with pytest.raises(ValueError, match="multiple"):
        ex.make_launch(m=200)


_WAIT_EMPTY = ("$L_wait_empty:\n\tmbarrier.try_wait.parity.shared::cta.b64 \t%p4, [%r29], %r30;\n"
               "\t@!%p4 bra \t$L_wait_empty;\n")
_SLOT_COMMIT = "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 \t[%r29];   // frees the slot\n"


def test_producer_that_skips_the_empty_wait_is_caught():
    """Without waiting for the slot's 'empty' barrier the producer re-arms 'full' of a slot whose phase has not
    completed: an over-arrival, reported at the producer's arrive."""
    msg = mutation_is_caught(ex, ex.make_launch(variant=SMALL), lambda t: t.replace(_WAIT_EMPTY, "$L_wait_empty:\n"))
    assert "over-arrival" in msg


def test_missing_slot_commit_deadlocks_with_a_located_report():
    msg = mutation_is_caught(ex, ex.make_launch(variant=SMALL), lambda t: t.replace(_SLOT_COMMIT, ""))
    assert "deadlock" in msg and "try_wait" in msg
