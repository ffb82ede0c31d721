"""examples/tma_gather_scatter: the Triton/Gluon tutorial's gather and scatter sweeps (BLOCK_X in {8, 128},
BLOCK_Y in {16, 128}, bf16 and fp32, the tutorial's y offsets and row offsets) on hand-written sm_100a PTX using
.tile::gather4 / .tile::scatter4, every case bit-identical to the masked numpy reference; the kernels assemble
with ptxas -arch=sm_100a; results do not depend on the schedule; negative controls (a wrong swizzle, a consumer
that skips its mbarrier wait, the tutorial's misaligned y_offset and negative scatter offsets) fail the check or
stop with a located diagnostic."""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault
from tcsim.agents.tma import TmaParams
from tcsim.launch import run_launch

import tcsim.examples.tma_gather_scatter as gs
from kernel_checks import assert_assembles, fails_or_diagnosed, mutation_is_caught, run_checked

SWEEP = gs.sweep()


def test_sweep_is_the_tutorials():
    assert len([c for c in SWEEP if c.kind == "gather"]) == 2 * 2 * 2 * 4
    assert len([c for c in SWEEP if c.kind == "scatter"]) == 2 * 2 * 2 * 3
    assert {c.y_offset for c in SWEEP if c.kind == "gather"} == {-16, 0, 48, 1000}
    assert {(c.block_x, c.block_y, c.dtype) for c in SWEEP} == {(x, y, d) for x in (8, 128) for y in (16, 128)
                                                                 for d in ("bf16", "fp32")}


@pytest.mark.parametrize("case", SWEEP, ids=[c.name for c in SWEEP])
def test_case_matches_masked_reference(case):
    launch = gs.make_case(case)
    assert gs.case_of(launch) == case
    run_checked(gs, launch)


def test_references_are_not_vacuous():
    """The sweep's data exercise both sides of every mask: gathered rows in and out of bounds, columns cut at
    both edges; scatter rows dropped and written."""
    g = gs.make_case(gs.Case("gather", "fp32", 128, 128, 1000))
    _, want = gs.expected(g)
    xoffs = g.args[3]
    assert (xoffs < 0).any() and (xoffs >= gs.X_MAX).any() and ((xoffs >= 0) & (xoffs < gs.X_MAX)).any()
    inb = (xoffs >= 0) & (xoffs < gs.X_MAX)
    assert (want[inb, :24] != 0).all() and (want[:, 24:] == 0).all() and (want[~inb] == 0).all()
    g = gs.make_case(gs.Case("gather", "bf16", 8, 16, -16))
    assert not gs.expected(g)[1].view(np.uint16).any()           # fully left of the tensor: all zero
    s = gs.make_case(gs.Case("scatter", "bf16", 128, 128, 1000))
    _, want = gs.expected(s)
    tensor, xoffs, src = s.args[0], s.args[2], s.args[3]
    assert (xoffs >= gs.X_MAX).any() and (xoffs >= 0).all()
    changed = want.view(np.uint16) != tensor.view(np.uint16)
    assert changed.any() and not changed[:, :1000].any()
    assert np.array_equal(want[xoffs[xoffs < gs.X_MAX], 1000:], src[xoffs < gs.X_MAX, :24])


@pytest.mark.parametrize("case", [gs.Case("gather", "bf16", 128, 128, 48), gs.Case("scatter", "fp32", 128, 16, 0)],
                         ids=lambda c: c.name)
def test_schedule_independent(case):
    launch = gs.make_case(case, seed=3)
    outs = [run_checked(gs, launch, seed=s).outputs[0] for s in (0, 1, 2)]
    for o in outs[1:]:
        assert np.array_equal(o.view(np.uint8), outs[0].view(np.uint8))


def test_example_ptx_assembles_for_sm_100a_and_tcsim_decodes_it():
    text = gs.PTX.read_text()
    assert ".target sm_100a" in text
    assert text.count("tile::gather4") >= 1 and text.count("tile::scatter4") >= 1
    assert_assembles(text, "sm_100a")
    from tcsim.cli import check_ptx_text
    assert check_ptx_text(text, str(gs.PTX)) == []


# ------------------------------------------------------------------------------------------- negative controls
def test_wrong_swizzle_in_the_consumer_fails_the_check():
    case = gs.Case("gather", "bf16", 128, 128, 0)
    launch = gs.make_case(case)
    args = list(launch.args)
    args[-1] = 0                                     # the kernel un-swizzles as if the map had no swizzle
    msg = fails_or_diagnosed(gs, launch, replace(launch, args=args))
    assert "differ from the masked reference" in msg


SLOW_TMA = TmaParams(latency=5000)


def test_consumer_that_skips_the_mbarrier_wait_fails():
    """With a slow TMA the rows land long after a consumer that does not wait has copied SMEM out; the right
    kernel gives the same bits under that timing as under the default one (DESIGN.md principle 5)."""
    launch = gs.make_case(gs.Case("gather", "fp32", 128, 16, 0))
    run_checked(gs, launch, tma_params=SLOW_TMA)
    # test_wait does not block (try_wait may): drop the retry loop and the wait is gone
    mutation_is_caught(gs, launch, lambda text: text.replace("\t@!%p5 bra \t$L_wait;\n", "").replace(
        "mbarrier.try_wait.parity", "mbarrier.test_wait.parity"), tma_params=SLOW_TMA)


def test_scatter_under_a_slow_tma_is_unchanged():
    run_checked(gs, gs.make_case(gs.Case("scatter", "bf16", 128, 128, 48)), tma_params=SLOW_TMA)


def test_scatter_without_the_proxy_fence_is_caught():
    """The generic-proxy st.shared of the tile must be fenced (fence.proxy.async.shared::cta) before the TMA (async
    proxy) reads it; without the fence the GPU may scatter stale bytes.  The mutation assembles, but tcsim still
    reproduces the right tensor; the race detector reports the unfenced generic-proxy write the TMA reads (class 8;
    strict mode stops there)."""
    msg = mutation_is_caught(gs, gs.make_case(gs.Case("scatter", "bf16", 128, 128, 48)),
                             lambda text: text.replace("\tfence.proxy.async.shared::cta;\n", ""), strict=True)
    assert "class 8" in msg and "`st.shared" in msg and "missing: fence.proxy.async.shared::cta between line" in msg, msg


def test_tutorials_illegal_gather_misaligned_y_offset():
    """The tutorial's test_illegal_gather: bf16, BLOCK_X = BLOCK_Y = 128, y_offset = 2 (4 bytes): illegal
    instruction on the GPU, a located diagnostic here."""
    launch = gs.make_case(gs.Case("gather", "bf16", 128, 128, 2))
    with pytest.raises(MemoryFault) as ei:
        run_launch(launch)
    e = ei.value
    assert "col = 2 (lane 0) starts each row at byte offset 4" in e.message
    assert "illegal instruction (CUDA_ERROR_ILLEGAL_INSTRUCTION)" in e.message
    assert e.loc is not None and e.loc.file.endswith("tma_gather_scatter.ptx") and "tile::gather4" in e.loc.text
    assert re.search(r"warp \d, lane 0", e.where)


def test_scatter_with_negative_row_offsets_is_an_illegal_instruction():
    launch = gs.make_case(gs.Case("scatter", "fp32", 8, 16, 0))
    args = list(launch.args)
    args[2] = args[2].copy()
    args[2][5] = -3
    with pytest.raises(MemoryFault, match=r"row coordinate row1 = -3 \(lane 0\) is negative.*illegal instruction"):
        run_launch(replace(launch, args=args))


# ------------------------------------------------------------------------------------------- drivers
def test_command_line_quick_sweep(capsys):
    assert gs.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "16 of 16 cases passed" in out and out.count("[sim] PASS") == 16


def test_tcsim_run_runs_the_representative_case(capsys):
    from tcsim.cli import main
    assert main(["run", str(gs.PTX.with_suffix(".py"))]) == 0
    assert "[sim] PASS: gather_bf16_x128_y128_off1000" in capsys.readouterr().out


def test_gpu_backend_on_an_h100_says_gather4_needs_sm_100a():
    msg = gs.gpu_problem({"name": "NVIDIA H100 80GB HBM3", "cc": (9, 0), "driver": 13000})
    assert msg is not None and "need an sm_100a" in msg and "NVIDIA H100 80GB HBM3" in msg and "sm_90" in msg
    assert ".tile::gather4" in msg and ".tile::scatter4" in msg
    assert gs.gpu_problem({"name": "NVIDIA B200", "cc": (10, 0), "driver": 13000}) is None


def test_gpu_backend_without_sm_100a_exits_2_with_the_reason(capsys):
    if gs.gpu_problem() is None:
        pytest.skip("an sm_100a GPU is present")
    assert gs.main(["--backend", "gpu", "--quick"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("[gpu] .tile::gather4 and .tile::scatter4") and "need an sm_100a" in out
