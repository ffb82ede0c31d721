"""fence / membar (PTX ISA 9.1 §9.7.13.4): no functional effect, but each emits a sync event with its meaning."""
import numpy as np
import pytest

from tcsim.isa.errors import UnsupportedError, VerifyError
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target sm_100a\n.address_size 64\n"


def kernel(body):
    return HEAD + f"""
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 4;
  add.u64 %rd1, %rd0, %rd2;
  st.global.u32 [%rd1], %r0;
{body}
  ld.global.u32 %r1, [%rd1];
  add.u32 %r1, %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}}
"""


def fences(body, nthreads=32):
    events = []
    res = run_launch(Launch(ptx=kernel(body), block=(nthreads, 1, 1), args=[np.zeros(nthreads, np.uint32)]),
                     observers=[events.append])
    assert (res.outputs[0] == np.arange(nthreads) + 1).all()     # fences change nothing functionally
    return [e.fields for e in events if e.kind == "sync" and e.fields.get("op") == "fence"]


@pytest.mark.parametrize("text,fields", [
    ("fence.sc.cta;", dict(fence="thread", sem="sc", scope="cta", proxy=None)),
    ("fence.sc.gpu;", dict(fence="thread", sem="sc", scope="gpu")),
    ("fence.acq_rel.cluster;", dict(fence="thread", sem="acq_rel", scope="cluster")),
    ("fence.acq_rel.sys;", dict(fence="thread", sem="acq_rel", scope="sys")),
    ("fence.gpu;", dict(fence="thread", sem="acq_rel", scope="gpu")),
    ("fence.acquire.sync_restrict::shared::cluster.cluster;",
     dict(fence="thread", sem="acquire", scope="cluster", restrict="shared::cluster")),
    ("fence.release.sync_restrict::shared::cta.cluster;",
     dict(fence="thread", sem="release", scope="cluster", restrict="shared::cta")),
    ("fence.mbarrier_init.release.cluster;", dict(fence="mbarrier_init", sem="release", scope="cluster")),
    ("fence.proxy.async;", dict(fence="proxy", proxy="async")),
    ("fence.proxy.async.global;", dict(fence="proxy", proxy="async.global")),
    ("fence.proxy.async.shared::cta;", dict(fence="proxy", proxy="async.shared::cta")),
    ("fence.proxy.async.shared::cluster;", dict(fence="proxy", proxy="async.shared::cluster")),
    ("fence.proxy.alias;", dict(fence="proxy", proxy="alias")),
    ("fence.proxy.tensormap::generic.release.gpu;",
     dict(fence="proxy", proxy="tensormap::generic", sem="release", scope="gpu")),
    ("fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;",
     dict(fence="proxy", proxy="async::generic", sem="release", restrict="shared::cta")),
    ("membar.cta;", dict(fence="membar", sem="sc", scope="cta")),
    ("membar.gl;", dict(fence="membar", sem="sc", scope="gpu")),
    ("membar.sys;", dict(fence="membar", sem="sc", scope="sys")),
    ("membar.proxy.alias;", dict(fence="proxy", proxy="alias")),
])
def test_fence_forms_emit_sync_event(text, fields):
    evs = fences("  " + text + "\n")
    assert len(evs) == 1
    for k, v in fields.items():
        assert evs[0][k] == v, (k, evs[0])
    assert evs[0]["lanes"] == list(range(32))


def test_tensormap_acquire_reports_address():
    evs = fences("  fence.proxy.tensormap::generic.acquire.gpu [%rd0], 128;\n")
    assert evs[0]["sem"] == "acquire" and len(evs[0]["addr"]) == 32 and len(set(evs[0]["addr"])) == 1


def test_predicated_fence_reports_executing_lanes():
    evs = fences("  setp.lt.u32 %p1, %r0, 4;\n  @%p1 fence.sc.gpu;\n")
    assert evs[0]["lanes"] == [0, 1, 2, 3]


@pytest.mark.parametrize("text,err", [
    ("fence.sc.foo;", UnsupportedError),
    ("fence.acquire.cluster;", VerifyError),
    ("fence.mbarrier_init.release.cta;", VerifyError),
    ("fence.proxy.foo;", UnsupportedError),
    ("fence.proxy.async.local;", UnsupportedError),
    ("fence.proxy.tensormap::generic.acquire.gpu [%rd0], 64;", VerifyError),
    ("fence.proxy.tensormap::generic.gpu;", VerifyError),
    ("membar.cluster;", UnsupportedError),
])
def test_bad_fence_forms_are_rejected(text, err):
    with pytest.raises(err):
        fences("  " + text + "\n")
