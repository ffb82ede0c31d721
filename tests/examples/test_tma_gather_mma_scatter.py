"""examples/tma_gather_mma_scatter: the fused ``out[scatter_idx] = X[gather_idx] @ W`` kernel (gather4 loads into a
multi-buffered full/empty mbarrier ring, tcgen05.mma kind::f16 into TMEM, tcgen05.ld epilogue, scatter4 stores).

Every configuration equals, bit for bit, the tensor-core numerics oracle applied in numpy to the gathered rows and
scattered with numpy masking (and, for integer inputs, the float64 product exactly); results do not depend on the
schedule or the async units' timing; ``ptxas -arch=sm_100a`` accepts the kernel (skipped without ptxas); negative
controls -- a slot released before its MMAs completed, a producer that does not wait for 'empty', an MMA issuer
that does not wait for 'full', an epilogue that does not wait for the accumulator, a missing commit, a wrong
staging swizzle, swapped bf16 halves -- fail the check or stop with a located diagnostic."""
from __future__ import annotations

import re
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault
from tcsim.isa.ptxas import PTXAS
from tcsim.agents.tensor_pipe import TensorPipeParams
from tcsim.agents.tma import TmaParams
from tcsim.launch import run_launch

import tcsim.examples.tma_gather_mma_scatter as fused
from kernel_checks import assert_assembles, mutation_is_caught, run_checked

VARIANTS = sorted(fused.VARIANTS)


# ------------------------------------------------------------------------------------------------ correctness
@pytest.mark.parametrize("values", ["normal", "int"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_matches_oracle(variant, values):
    launch = fused.make_launch(seed=5, variant=variant, values=values)
    v = fused.VARIANTS[variant]
    assert launch.grid == (2, v["n"] // v["bn"], 1)
    result = run_checked(fused, launch)
    if values == "int":          # small integers: every product and partial sum is exact, no tolerance anywhere
        out0, sidx = launch.args[2], launch.args[4]
        exact = fused.float64_product(launch)
        want = fused.scatter_reference(out0, sidx, exact.astype(out0.dtype))
        got = result.outputs[2]
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_default_launch_is_the_tutorials_shape_class():
    """BLOCK_M = BLOCK_N = 128, BLOCK_K = 64, three buffers, permuted gather and scatter indices (the tutorial's
    test_matmul_fused_gather_scatter); K = 256 laps the 3-slot ring."""
    launch = fused.make_launch()
    x, wt, out, gidx, sidx = fused.operands(launch)
    assert (x.shape, wt.shape, out.shape, out.dtype) == ((256, 256), (128, 256), (256, 128),
                                                         np.dtype(ml_dtypes.bfloat16))
    assert launch.args[8] == fused.instr_descriptor(128).encode() and launch.args[9:] == [4, 3, 0]
    assert sorted(gidx) == list(range(256)) and sorted(sidx) == list(range(256))
    assert launch.block == (192, 1, 1) and launch.dynamic_smem == 1024 + 6 * 16384 + 128 * 128 * 2


def test_references_are_not_vacuous():
    """The configurations' data exercise every mask: gathered rows below, inside and past X; duplicated gather
    rows; scatter rows dropped past the end of out; rows of out nobody writes; and the scattered result is far
    from the initial contents."""
    oob = fused.make_launch(seed=5, variant="n64_k4_ring4_oob")
    x, _, out0, gidx, sidx = fused.operands(oob)
    assert (gidx < 0).any() and (gidx >= x.shape[0]).any() and ((gidx >= 0) & (gidx < x.shape[0])).any()
    assert (sidx >= out0.shape[0]).any() and (sidx < out0.shape[0]).any() and (sidx >= 0).all()
    assert len(set(sidx.tolist())) == sidx.size
    want = fused.reference(oob)
    kept = sidx < out0.shape[0]
    zero = kept & ((gidx < 0) | (gidx >= x.shape[0]))
    assert zero.any() and not want[sidx[zero]].view(np.uint16).any()            # OOB gathers scatter zeros
    assert (want[sidx[kept & ~zero]] != 0).any(axis=1).all()
    untouched = np.setdiff1d(np.arange(out0.shape[0]), sidx[kept])
    assert untouched.size and np.array_equal(want[untouched].view(np.uint16), out0[untouched].view(np.uint16))

    dup = fused.make_launch(seed=5, variant="n128_bn64_k3_ring2_dup")
    _, _, out0, gidx, sidx = fused.operands(dup)
    want = fused.reference(dup)
    vals, first, counts = np.unique(gidx, return_index=True, return_counts=True)
    assert (counts > 1).sum() > 10
    r = vals[np.argmax(counts)]
    rows = sidx[gidx == r]                                     # every copy of one gathered row: the same output row
    assert all(np.array_equal(want[rows[0]].view(np.uint16), want[o].view(np.uint16)) for o in rows[1:])
    assert not np.array_equal(want.view(np.uint16), out0.view(np.uint16))


def test_reference_is_the_k16_chain_per_tile():
    """The reference chains K=16 MMAs over the whole gathered matrix; the oracle's own block chaining (all of K in
    one call) agrees, and so does the oracle applied per 128 x BN tile as the CTAs compute it."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    launch = fused.make_launch(seed=2, variant="n128_bn64_k3_ring2_dup")
    x, wt, _, gidx, _ = fused.operands(launch)
    acc = fused.product_oracle(launch)
    a = fused.gathered_rows(x, gidx).view(np.uint16)
    b = np.ascontiguousarray(wt.T).view(np.uint16)
    params = tc_params("sm_100a", "tcgen05", "bf16", kind="f16")
    whole = np.asarray(mma_float(a, b, np.zeros(acc.shape, np.uint32), "bf16", "bf16", "f32", params), np.uint32)
    assert np.array_equal(whole, acc.view(np.uint32))
    tile = np.asarray(mma_float(a[128:], b[:, 64:], np.zeros((128, 64), np.uint32), "bf16", "bf16", "f32", params),
                      np.uint32)
    assert np.array_equal(tile, acc[128:, 64:].view(np.uint32))
    assert np.abs(acc).max() > 10 and np.allclose(acc, fused.float64_product(launch), rtol=0, atol=1e-3)


def test_check_catches_swapped_rows_and_a_written_untouched_row():
    launch = fused.make_launch(seed=4, variant="n64_k4_ring4_oob")
    result = run_checked(fused, launch)
    x, _, out0, gidx, sidx = fused.operands(launch)
    kept = sidx[sidx < out0.shape[0]]
    real = sidx[(sidx < out0.shape[0]) & (gidx >= 0) & (gidx < x.shape[0])]      # rows holding a real product
    got = result.outputs[2]
    swapped = got.copy()
    swapped[[real[0], real[1]]] = got[[real[1], real[0]]]
    untouched = np.setdiff1d(np.arange(out0.shape[0]), kept)[0]
    written = got.copy()
    written[untouched] = 0
    for bad in (swapped, written):
        result.outputs[2] = bad
        ok, msg = fused.check(result, launch)
        assert not ok and "differ" in msg, msg


def test_schedule_and_timing_independent():
    """A race-free kernel: the same bytes under scheduler seeds, the cycle-approximate timing model, a slow TMA and
    a slow tensor pipe (DESIGN.md principle 5); the 2-slot ring is lapped, so the empty barriers are exercised."""
    launch = fused.make_launch(seed=3, variant="n128_bn64_k3_ring2_dup")
    runs = [dict(seed=None), dict(seed=1), dict(seed=2), dict(seed=7, timing=True),
            dict(seed=1, tma_params=TmaParams(latency=3000)),
            dict(seed=2, tensor_pipe_params=TensorPipeParams(mma_latency=3000))]
    outs = [run_checked(fused, launch, **kw).outputs[2] for kw in runs]
    for o in outs[1:]:
        assert np.array_equal(o.view(np.uint8), outs[0].view(np.uint8))


# ------------------------------------------------------------------------------------------------ the PTX
def test_ptxas_accepts_the_kernel_for_sm_100a():
    if PTXAS is None:
        pytest.skip("ptxas not on PATH")
    text = fused.PTX.read_text()
    assert re.search(r"^\.target sm_100a$", text, flags=re.M)
    assert_assembles(text, "sm_100a")


def test_tcsim_check_and_the_kernels_ingredients():
    from tcsim.cli import check_ptx_text
    text = fused.PTX.read_text()
    assert check_ptx_text(text, str(fused.PTX)) == []
    for needle in (".tile::gather4.mbarrier::complete_tx::bytes", ".tile::scatter4.bulk_group",
                   "tcgen05.mma.cta_group::1.kind::f16", "tcgen05.commit", "tcgen05.ld.sync.aligned.32x32b.x32",
                   "fence.proxy.async.shared::cta", "mbarrier.arrive.expect_tx"):
        assert needle in text, needle


# ------------------------------------------------------------------------------------------------ negative controls
def _wait_dropped(pred: str, label: str):
    """Drop the retry loop of the try_wait on predicate ``pred`` (test_wait never blocks): the wait is gone."""
    def mutate(text):
        wait = f"mbarrier.try_wait.parity.shared::cta.b64 \t{pred},"
        return text.replace(f"\t@!{pred} bra \t{label};\n", "").replace(wait, wait.replace("try_wait", "test_wait"))
    return mutate


COMMIT_EMPTY = ("\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 \t[%r42];   "
                "// slot s: read, free\n")
MMA_DESC = "\tshl.b32 \t%r45, %r39, 14;\n\tadd.u32 \t%r46, %r12, %r45;       // sX[s]\n\tadd.u32 \t%r49, %r13, %r45;"


def _early_release(text):
    """Commit to empty[s] before the stage's MMAs instead of after them: the slot is released once the *earlier*
    MMAs completed, so the producer's next gather4 into it races with the MMAs still reading it."""
    assert text.count(COMMIT_EMPTY) == 1 and text.count(MMA_DESC) == 1
    return text.replace(COMMIT_EMPTY, "").replace(MMA_DESC, COMMIT_EMPTY + MMA_DESC)


MUTATIONS = {
    "slot_released_before_its_mmas": (_early_release, ("differ",)),
    # the producer re-arms full[s] before the phase it armed a lap ago completed
    "producer_skips_empty_wait": (_wait_dropped("%p7", "$L_wait_empty"), ("over-arrival",)),
    # the MMA reads a stage before its bytes land and releases it early: a wrong result, or (when the copy is still
    # in flight as the producer comes back, as under the functional preset's 200-cycle TMA) the producer's next
    # arrive.expect_tx over-arrives on a full barrier whose phase still waits for the earlier bytes
    "mma_skips_full_wait": (_wait_dropped("%p11", "$L_wait_full"), ("differ", "over-arrival")),
    # tcgen05.ld reads a partial accumulator; the early teardown deallocates TMEM under the MMAs still in flight
    "epilogue_skips_accumulator_wait": (_wait_dropped("%p13", "$L_wait_mma"), ("not allocated", "differ")),
    "no_commit_to_empty": (lambda t: t.replace(COMMIT_EMPTY, ""), ("deadlock",)),
    "staging_without_swizzle": (lambda t: t.replace("\tand.b32 \t%r63, %r61, 7;", "\tand.b32 \t%r63, %r61, 0;"),
                                ("differ",)),
    "bf16_halves_swapped": (lambda t: t.replace("cvt.rn.bf16x2.f32 \t%r70, %f1, %f0;",
                                                "cvt.rn.bf16x2.f32 \t%r70, %f0, %f1;"), ("differ",)),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_negative_controls(name):
    mutate, expect = MUTATIONS[name]
    msg = mutation_is_caught(fused, fused.make_launch(seed=0, variant="n128_bn64_k3_ring2_dup"), mutate)
    assert any(e in msg for e in expect), msg


def test_scatter_without_the_proxy_fence_is_caught():
    """The epilogue's st.shared of the staging tile must be fenced (fence.proxy.async.shared::cta) before the
    scatter4 (async proxy) reads it; without it the GPU may scatter stale bytes.  tcsim still reproduces the right
    output; the race detector reports the unfenced generic-proxy write the scatter4 reads (class 8; strict mode stops
    there)."""
    msg = mutation_is_caught(fused, fused.make_launch(seed=0, variant="n128_bn64_k3_ring2_dup"),
                             lambda t: t.replace("\tfence.proxy.async.shared::cta;\n", ""), strict=True)
    assert "class 8" in msg and "`st.shared" in msg and "missing: fence.proxy.async.shared::cta between line" in msg, msg


def test_negative_scatter_row_is_an_illegal_instruction():
    launch = fused.make_launch(seed=1, variant="n64_k4_ring4_oob")
    sidx = launch.args[4].copy()
    sidx[37] = -2
    args = list(launch.args)
    args[4] = sidx
    with pytest.raises(MemoryFault) as ei:
        run_launch(replace(launch, args=args))
    e = ei.value
    assert re.search(r"row coordinate row1 = -2 \(lane 1\) is negative.*illegal instruction", e.message)
    assert e.loc is not None and e.loc.file.endswith("tma_gather_mma_scatter.ptx") and "tile::scatter4" in e.loc.text


@pytest.mark.parametrize("bad", [dict(bn=32), dict(n=96, bn=64), dict(num_bufs=5), dict(num_bufs=0),
                                 dict(out_dtype="f16"), dict(gather="sorted"), dict(m_x=100),
                                 dict(gather_idx=np.arange(128, dtype=np.int32))])
def test_make_launch_rejects_what_the_kernel_cannot_do(bad):
    with pytest.raises(ValueError):
        fused.make_launch(**bad)


# ------------------------------------------------------------------------------------------------ drivers
def test_command_line_runs_and_checks_the_default(capsys):
    from tcsim.examples._common import example_main
    assert example_main(fused, ["--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "[sim] PASS: out[scatter_idx] = X[gather_idx] @ W (256 rows, N = 128, K = 256, bf16 out)" in out
