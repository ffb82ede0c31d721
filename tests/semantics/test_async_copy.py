"""cp.async (non-bulk) and its completion forms (sim/semantics/async_copy.py, sim/agents/async_copy.py): what
Triton emits for pipelined pointer loads.  Data is checked against numpy; asynchrony is checked by reading SMEM
before waiting (stale) and by the events the waits record."""

import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault, UnsupportedError, VerifyError
from tcsim.agents.async_copy import AsyncCopyParams
from tcsim.isa.ptxas import assemble
from tcsim.launch import Launch, run_launch

HEAD = ".version 9.0\n.target sm_100a\n.address_size 64\n"
SENTINEL = 0xA5


def check_ptxas(ptx: str) -> None:
    """Test kernels that tcsim accepts must assemble (skipped without ptxas)."""
    r = assemble(ptx, "sm_100a")
    assert r is None or r[0] == 0, r[1]


def kernel(copy: str, wait: str = "cp.async.commit_group;\n  cp.async.wait_group 0;", size: int = 16,
           extra_decl: str = "") -> str:
    """Each thread t: fills its ``size`` bytes of SMEM buf[t*size..] with SENTINEL, then runs ``copy`` with
    %r2 = &buf[t*size] (shared::cta), %rd3 = &src[t*size] (global), %r5 = src-size argument, %p2 = (t is odd);
    then ``wait``; then copies its SMEM bytes to out[t*size..]."""
    words = size // 4
    fill = "\n  ".join(f"st.shared.u32 [%r2+{4 * i}], %r9;" for i in range(words))
    back = "\n  ".join(f"ld.shared.u32 %r10, [%r2+{4 * i}];\n  st.global.u32 [%rd4+{4 * i}], %r10;"
                       for i in range(words))
    return HEAD + f""".visible .entry k(.param .u64 src, .param .u64 out, .param .u32 srcsize)
{{
  .reg .b32 %r<16>; .reg .b64 %rd<16>; .reg .pred %p<4>;
  .shared .align 16 .b8 buf[{32 * size}];
  .shared .align 8 .b64 bar;
  {extra_decl}
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r5, [srcsize];
  mov.u32 %r0, %tid.x;
  mul.lo.u32 %r1, %r0, {size};
  mov.u32 %r2, buf;
  add.u32 %r2, %r2, %r1;
  cvt.u64.u32 %rd5, %r1;
  add.u64 %rd3, %rd1, %rd5;
  add.u64 %rd4, %rd2, %rd5;
  and.b32 %r6, %r0, 1;
  setp.eq.u32 %p2, %r6, 1;
  mov.b32 %r9, {SENTINEL * 0x01010101};
  {fill}
  {copy}
  {wait}
  {back}
  ret;
}}
"""


def run(ptx, src, srcsize=0, size=16, params=None, observers=()):
    out = np.zeros(32 * size, np.uint8)
    res = run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[src, out, srcsize]), observers=observers,
                     async_copy_params=params)
    return res.outputs[1]


def src_bytes(size=16, extra=0):
    return (np.arange(32 * size + extra) * 7 + 3).astype(np.uint8)


@pytest.mark.parametrize("form, size", [("cp.async.cg.shared.global [%r2], [%rd3], 16;", 16),
                                        ("cp.async.ca.shared.global [%r2], [%rd3], 16;", 16),
                                        ("cp.async.ca.shared::cta.global [%r2], [%rd3], 8;", 8),
                                        ("cp.async.ca.shared.global.L2::128B [%r2], [%rd3], 4;", 4),
                                        ("cp.async.cg.shared.global.L2::cache_hint [%r2], [%rd3], 16, %rd9;", 16)])
def test_copy_then_wait(form, size):
    ptx = kernel("mov.b64 %rd9, 0;\n  " + form, size=size)       # %rd9: the cache-policy operand
    check_ptxas(ptx)
    src = src_bytes(size)
    assert np.array_equal(run(ptx, src, size=size), src)


def test_src_size_zero_fills_and_skips_unread_sources():
    """src-size n copies n bytes and zero-fills the rest; a lane that reads nothing may carry any address."""
    copy = """cp.async.cg.shared.global [%r2], [%rd3], 16, %r5;"""
    ptx = kernel(copy)
    check_ptxas(ptx)
    src = src_bytes()
    got = run(ptx, src, srcsize=5).reshape(32, 16)
    want = src.reshape(32, 16).copy()
    want[:, 5:] = 0
    assert np.array_equal(got, want)
    far = kernel("add.u64 %rd3, %rd3, 1000000;\n  cp.async.cg.shared.global [%r2], [%rd3], 16, %r5;")
    check_ptxas(far)
    assert not run(far, src, srcsize=0).any()


def test_ignore_src_predicate():
    ptx = kernel("cp.async.ca.shared.global [%r2], [%rd3], 16, %p2;")
    check_ptxas(ptx)
    src = src_bytes()
    got = run(ptx, src).reshape(32, 16)
    want = src.reshape(32, 16).copy()
    want[1::2] = 0                                                    # odd threads: ignore-src -> zeros
    assert np.array_equal(got, want)


def test_reading_before_the_wait_sees_stale_smem():
    ptx = kernel("cp.async.cg.shared.global [%r2], [%rd3], 16;", wait="")
    got = run(ptx, src_bytes())
    assert (got == SENTINEL).all()


def test_wait_group_keeps_the_newest_groups_pending():
    """Two groups (bytes 0-7, then 8-15); wait_group 1 waits only for the first."""
    copy = """cp.async.ca.shared.global [%r2], [%rd3], 8;
  cp.async.commit_group;
  add.u32 %r11, %r2, 8;
  add.u64 %rd10, %rd3, 8;
  cp.async.ca.shared.global [%r11], [%rd10], 8;
  cp.async.commit_group;"""
    ptx = kernel(copy, wait="cp.async.wait_group 1;")
    check_ptxas(ptx)
    events = []
    got = run(ptx, src_bytes(), params=AsyncCopyParams(latency=500, issue_cycles=50),
              observers=[events.append]).reshape(32, 16)
    src = src_bytes().reshape(32, 16)
    assert np.array_equal(got[:, :8], src[:, :8])
    assert (got[:, 8:] == SENTINEL).all()             # the newer group lands 50 cycles later: not waited for
    waits = [e.fields for e in events if e.kind == "sync" and e.fields.get("op") == "cp.async.wait_group"]
    assert waits == [dict(waits[0], n=1, all=False)]
    ptx_all = kernel(copy.replace("  cp.async.commit_group;\n", "", 1).rsplit("cp.async.commit_group;", 1)[0],
                     wait="cp.async.wait_all;")
    check_ptxas(ptx_all)
    assert np.array_equal(run(ptx_all, src_bytes(), params=AsyncCopyParams(latency=500, issue_cycles=50)),
                          src_bytes())


@pytest.mark.parametrize("noinc", [True, False])
def test_mbarrier_arrive_after_the_copies(noinc):
    """cp.async.mbarrier.arrive: the barrier phase completes only once the thread's copies have landed."""
    if noinc:
        init, arrive = "32", "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%r12];"
        after = ""
    else:      # the async arrive raises the pending count first: one ordinary arrive per thread completes it
        init, arrive = "32", "cp.async.mbarrier.arrive.shared.b64 [%r12];"
        after = "mbarrier.arrive.shared::cta.b64 %rd11, [%r12];"
    copy = f"""mov.u32 %r12, bar;
  setp.eq.u32 %p3, %r0, 0;
  @%p3 mbarrier.init.shared::cta.b64 [%r12], {init};
  bar.sync 0;
  cp.async.cg.shared.global [%r2], [%rd3], 16;
  {arrive}
  {after}
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r12], 0;
  @!%p1 bra WAIT;"""
    ptx = kernel(copy, wait="")
    check_ptxas(ptx)
    assert np.array_equal(run(ptx, src_bytes(), params=AsyncCopyParams(latency=300)), src_bytes())


@pytest.mark.parametrize("copy, err, msg", [
    ("add.u32 %r2, %r2, 4;\n  cp.async.cg.shared.global [%r2], [%rd3], 16;", MemoryFault,
     "not aligned to cp-size 16"),
    ("add.u64 %rd3, %rd3, 8;\n  cp.async.cg.shared.global [%r2], [%rd3], 16;", MemoryFault,
     r"\[src\] = 0x[0-9a-f]+ \(lane 0\) is not aligned"),
    ("mov.b32 %r5, 17;\n  cp.async.cg.shared.global [%r2], [%rd3], 16, %r5;", MemoryFault,
     "src-size 17 .lane 0. exceeds cp-size 16"),
    ("add.u64 %rd3, %rd3, 512;\n  cp.async.cg.shared.global [%r2], [%rd3], 16;", MemoryFault,
     "is not inside one global allocation"),
    ("cvta.shared.u64 %rd7, buf;\n  cp.async.cg.shared.global [%rd7], [%rd3], 16;", MemoryFault,
     "is not a .shared::cta address"),
])
def test_issue_faults_name_the_lane(copy, err, msg):
    ptx = kernel(copy)
    with pytest.raises(err, match=msg) as ei:
        run(ptx, src_bytes())
    assert ei.value.loc is not None and "cp.async" in ei.value.loc.text


@pytest.mark.parametrize("form, err, msg", [
    ("cp.async.cg.shared.global [%r2], [%rd3], 8;", VerifyError, "cp.async.cg copies 16 bytes"),
    ("cp.async.ca.shared.global [%r2], [%rd3], 2;", VerifyError, "cp-size must be the constant 4, 8 or 16"),
    ("cp.async.shared.global [%r2], [%rd3], 16;", VerifyError, "needs the cache operator .ca or .cg"),
    ("cp.async.ca.global.shared [%r2], [%rd3], 16;", VerifyError, "copies .shared"),
    ("cp.async.cg.shared.global.L2::cache_hint [%r2], [%rd3], 16;", VerifyError, "needs a cache-policy"),
    ("cp.async.cg.shared.global.nc [%r2], [%rd3], 16;", UnsupportedError, "qualifier .nc is not supported"),
    ("cp.async.wait_group %r1;", VerifyError, "one integer constant"),
    ("cp.async.commit_group 1;", VerifyError, "takes no operands"),
    ("cp.async.mbarrier.arrive.shared.b32 [%r2];", VerifyError, "needs .b64"),
])
def test_decode_diagnostics(form, err, msg):
    ptx = HEAD + f""".visible .entry k()
{{
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  {form}
  ret;
}}
"""
    with pytest.raises(err, match=msg) as ei:
        run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=[]))
    assert ei.value.loc is not None and ei.value.loc.line == 7
