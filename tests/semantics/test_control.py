"""brx.idx through a .branchtargets list and setmaxnreg (sim/semantics/control.py): what Triton's warp
specialization emits to dispatch worker warps (`brx.idx %r, JTI0_0;`) and to rebalance registers."""

import numpy as np
import pytest

from tcsim.isa.errors import SyncError, UnsupportedError, VerifyError
from tcsim.isa.ptxas import assemble
from tcsim.launch import Launch, run_launch

HEAD = ".version 9.0\n.target sm_100a\n.address_size 64\n"


def check_ptxas(ptx: str) -> None:
    """Test kernels that tcsim accepts must assemble (skipped without ptxas)."""
    r = assemble(ptx, "sm_100a")
    assert r is None or r[0] == 0, r[1]


def brx_kernel(index_expr: str = "rem.u32 %r2, %r1, 3;", uni: str = "") -> str:
    return HEAD + f""".visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<8>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd1, %rd1, %rd2;
  {index_expr}
TARGETS:
  .branchtargets CASE0, CASE1, CASE2;
  brx.idx{uni} %r2, TARGETS;
CASE2:
  mov.b32 %r3, 30;
  bra.uni JOIN;
CASE0:
  mov.b32 %r3, 10;
  bra.uni JOIN;
CASE1:
  mov.b32 %r3, 20;
JOIN:
  add.u32 %r3, %r3, %r1;
  st.global.u32 [%rd1], %r3;
  ret;
}}
"""


def test_brx_idx_divergent_lanes_take_their_own_target():
    ptx = brx_kernel()
    check_ptxas(ptx)
    res = run_launch(Launch(ptx=ptx, block=(64, 1, 1), args=[np.zeros(64, np.uint32)]))
    lanes = np.arange(64)
    assert np.array_equal(res.outputs[0], 10 * (lanes % 3 + 1) + lanes)


def test_brx_idx_uni_immediate_index():
    ptx = brx_kernel("mov.b32 %r2, 2;", uni=".uni")
    check_ptxas(ptx)
    res = run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[np.zeros(32, np.uint32)]))
    assert np.array_equal(res.outputs[0], 30 + np.arange(32))


def test_brx_idx_index_past_the_list_is_reported():
    ptx = brx_kernel("add.u32 %r2, %r1, 0;")          # lanes 3.. index past the 3 labels
    with pytest.raises(VerifyError, match=r"brx.idx index 3 \(lane 3\) is past the end of TARGETS, which lists 3 "
                                          r"labels") as ei:
        run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[np.zeros(32, np.uint32)]))
    assert ei.value.loc is not None and "brx.idx" in ei.value.loc.text


@pytest.mark.parametrize("body, msg", [
    ("brx.idx %r2, CASE0;\nCASE0: ret;", "is not a .branchtargets list"),
    ("T: .branchtargets CASE0;\nbrx %r2, T;\nCASE0: ret;", "brx needs .idx"),
    ("T: .branchtargets CASE0;\nbra T;\nCASE0: ret;", "branch target T is not a label"),
])
def test_brx_decode_errors(body, msg):
    ptx = HEAD + f".visible .entry k()\n{{\n.reg .b32 %r<4>;\nmov.b32 %r2, 0;\n{body}\n}}\n"
    with pytest.raises((VerifyError, UnsupportedError), match=msg):
        run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[]))


def setmaxnreg_kernel(form: str, guard: str = "") -> str:
    return HEAD + f""".visible .entry k(.param .u64 out)
.maxnreg 256
{{
  .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  {guard}{form}
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd1, %rd1, %rd2;
  st.global.u32 [%rd1], %r1;
  ret;
}}
"""


@pytest.mark.parametrize("form, action, count", [("setmaxnreg.inc.sync.aligned.u32 256;", "inc", 256),
                                                  ("setmaxnreg.dec.sync.aligned.u32 24;", "dec", 24)])
def test_setmaxnreg_has_no_functional_effect_and_is_recorded(form, action, count):
    ptx = setmaxnreg_kernel(form)
    check_ptxas(ptx)
    events = []
    res = run_launch(Launch(ptx=ptx, block=(128, 1, 1), args=[np.zeros(128, np.uint32)]), observers=[events.append])
    assert np.array_equal(res.outputs[0], np.arange(128))
    recs = [e.fields for e in events if e.kind == "sync" and e.fields.get("op") == "setmaxnreg"]
    assert len(recs) == 4 and all(r["action"] == action and r["count"] == count for r in recs)


@pytest.mark.parametrize("form, msg", [
    ("setmaxnreg.dec.sync.aligned.u32 20;", "register count 20 is not valid"),
    ("setmaxnreg.inc.sync.aligned.u32 264;", "register count 264 is not valid"),
    ("setmaxnreg.inc.sync.aligned.u32 %r1;", "takes one integer constant"),
    ("setmaxnreg.inc.sync.u32 256;", "needs .aligned"),
    ("setmaxnreg.inc.sync.aligned.b32 256;", "needs .u32"),
    ("setmaxnreg.sync.aligned.u32 256;", "exactly one of .inc / .dec"),
])
def test_setmaxnreg_decode_errors(form, msg):
    with pytest.raises(VerifyError, match=msg):
        run_launch(Launch(ptx=setmaxnreg_kernel(form), block=(32, 1, 1), args=[np.zeros(32, np.uint32)]))


def test_setmaxnreg_divergent_is_a_sync_error():
    ptx = setmaxnreg_kernel("setmaxnreg.inc.sync.aligned.u32 256;", guard="@%p1 ")
    with pytest.raises(SyncError, match="warp-collective"):
        run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[np.zeros(32, np.uint32)]))
