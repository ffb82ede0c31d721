"""Cluster launch control (PTX ISA 9.1 §9.7.13.19-20): tests/fixtures/nvcc/clc_steal.cu (nvcc-compiled, the
ThunderKittens Blackwell scheduler idiom) on a machine of 4 SMs holding one CTA each (150 KB of dynamic SMEM), so
that a grid of 14 CTAs has 10 that have not started when the first ones ask to cancel them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.errors import VerifyError
from tcsim.launch import Launch, run_launch
from tcsim.timing.params import arch_config

PTX = (Path(__file__).resolve().parents[1] / "fixtures" / "nvcc" / "clc_steal.sm_100a.ptx").read_text()
SMS = 4


def _run(kernel, grid, cluster=1, ptx=PTX):
    cfg = arch_config("sm_100a").untimed().with_overrides({"num_sms": {"value": SMS, "kind": "E",
                                                                       "source": "test"}})
    out, who, cnt = np.zeros(grid, np.uint32), np.full(grid, 0xFFFFFFFF, np.uint32), np.zeros(grid, np.uint32)
    res = run_launch(Launch(ptx=ptx, kernel=kernel, grid=(grid, 1, 1), block=(32, 1, 1), cluster=(cluster, 1, 1),
                            dynamic_smem=150 * 1024, args=[out, who, cnt]), timing=cfg)
    return res


@pytest.mark.parametrize("kernel,cluster", [("clc_steal", 1), ("clc_steal_cluster", 2)])
def test_cancelled_clusters_are_done_by_the_running_ctas(kernel, cluster):
    grid = 14
    res = _run(kernel, grid, cluster)
    out, who, cnt = res.outputs
    assert np.array_equal(out, np.arange(grid) * 3 + 1)
    assert np.array_equal(cnt, np.ones(grid))                   # every tile once: no response names a tile twice
    assert np.array_equal(who[:SMS], np.arange(SMS))            # the resident CTAs did their own tiles
    assert (who[SMS:] < SMS).all()                              # the others never started: cancelled and stolen
    if cluster == 2:                                            # a cluster's two CTAs stole one cluster together
        assert (who[SMS::2] % 2 == 0).all() and np.array_equal(who[SMS + 1::2], who[SMS::2] + 1)
    assert res.findings == []


def test_no_cancellation_when_every_cluster_runs():
    out, who, cnt = _run("clc_steal", SMS).outputs
    assert np.array_equal(who, np.arange(SMS)) and np.array_equal(cnt, np.ones(SMS))


HDR = ".version 8.8\n.target {arch}\n.address_size 64\n"
BODY = """.visible .entry k()
{{
	.reg .b32 %r<3>;
	.shared .align 16 .b8 resp[16];
	.shared .align 8 .b64 bar;
	mov.u32 %r1, resp;
	mov.u32 %r2, bar;
	{ins}
	ret;
}}
"""


@pytest.mark.parametrize("arch,ins,match", [
    ("sm_100a", "clusterlaunchcontrol.try_cancel.shared::cta.mbarrier::complete_tx::bytes.b128 [%r1], [%r2];",
     ".async is mandatory"),
    ("sm_90a", "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%r1], [%r2];",
     "requires sm_100"),
    ("sm_100", "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
               ".multicast::cluster::all.b128 [%r1], [%r2];", "architecture-specific"),
])
def test_illegal_forms_are_located_errors(arch, ins, match):
    ptx = HDR.format(arch=arch) + BODY.format(ins=ins)
    with pytest.raises(VerifyError, match=match):
        run_launch(Launch(ptx=ptx, block=(32, 1, 1)))


def test_misaligned_response_is_a_fault():
    from tcsim.isa.errors import TcsimError
    ptx = HDR.format(arch="sm_100a") + BODY.format(
        ins="mbarrier.init.shared::cta.b64 [%r2], 1;\n\tadd.u32 %r1, %r1, 8;\n\t"
            "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%r1], [%r2];")
    with pytest.raises(TcsimError, match="16-byte aligned"):
        run_launch(Launch(ptx=ptx, block=(32, 1, 1)))
