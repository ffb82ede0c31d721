"""A wgmma.mma_async is one operation of its warpgroup (PTX ISA 9.1 §9.7.15.5: the four warps execute the same
.sync.aligned instruction and the MMA reads its SMEM operands once), so a ``wgmma.wait_group`` in *any* warp of
the warpgroup that retires the group holding it observes the completion of the whole operation, its SMEM reads
included (§9.7.15.7.3).  One thread of the warpgroup may then release the stage (ThunderKittens' H100 attention
kernel arrives on its ``compute_done`` mbarrier from thread 0 of the warpgroup only, count 1).  The detector kept
each warp's share of the instruction as its own async op and ordered a warp's wait only after its own share: the
release by warp 0 did not cover the SMEM read recorded on another warp's share, and the TMA reload of the stage
was reported class 5.

Twins (edits of the hand-written examples/wgmma_pipeline_gemm.ptx, whose consumer warps each arrive on the
``empty`` mbarrier, count 4):
* only thread 0 of the warpgroup releases the stage (count 1), after ``wgmma.wait_group 1``: clean;
* the same with ``wgmma.wait_group 2``: the group reading the released stage may still be in flight -- class 5,
  naming an MMA and the TMA reload, the missing edge the completion of the MMA's read."""
import dataclasses

from tcsim.examples import wgmma_pipeline_gemm as gemm
from tcsim.launch import run_launch
from tests.race.hb_common import assert_clean, line_with

BASE = gemm.PTX.read_text()
LANE0 = "\tsetp.ne.or.u32 \t%p7, %r5, 0, %p7;"
WAIT1 = "\twgmma.wait_group.sync.aligned 1;"
RELOAD = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \t[%r18]"


def one_thread_releases(text: str) -> str:
    for edit in ((LANE0, "\tsetp.ne.or.u32 \t%p7, %r3, 0, %p7;"),) + tuple(
            (f"\tmbarrier.init.shared::cta.b64 \t[{a}], 4;", f"\tmbarrier.init.shared::cta.b64 \t[{a}], 1;")
            for a in ("%r10", "%r10+8", "%r10+16")):
        assert text.count(edit[0]) == 1, edit[0]
        text = text.replace(*edit)
    return text


# timing off and on (a seed): the verdict must not depend on the schedule; two modes keep the CI cost low
MODES = [(False, None), (True, 1)]


def run(ptx, modes=MODES):
    out = []
    for timing, seed in modes:
        launch = dataclasses.replace(gemm.make_launch(), ptx=ptx)
        out.append(((timing, seed), run_launch(launch, timing=timing, seed=seed)))
    return out


def test_one_thread_of_the_warpgroup_releases_the_stage_after_its_wait_group():
    assert_clean(run(one_thread_releases(BASE)))


def test_release_before_the_wait_group_retires_the_reading_mmas_is_class_5():
    ptx = one_thread_releases(BASE)
    assert ptx.count(WAIT1) == 1
    ptx = ptx.replace(WAIT1, "\twgmma.wait_group.sync.aligned 2;")
    res = run(ptx)
    reload = line_with(ptx, RELOAD)
    for mode, r in res:
        fs = [f for f in r.findings if f.cls == 5 and reload in f.lines
              and any("wgmma.mma_async" in s.what for s in f.sides)]
        assert fs, f"{mode}: {[str(f) for f in r.findings]}"
        assert all("completion" in (f.missing or "") for f in fs)
