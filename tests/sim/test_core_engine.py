"""Core engine: launches, argument checking, memory faults, runaway kernels, traces, stepping."""
import io

import numpy as np
import pytest

from tcsim.isa.errors import LaunchError, MemoryFault, PtxSyntaxError, RunawayError, UnsupportedError
from tcsim.launch import Launch, run_launch
from tcsim.observe import EventRecorder, read_trace
from tcsim.session import Session

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def kernel(body: str, params: str = ".param .u64 out", regs: str = "") -> str:
    return HEAD + f""".visible .entry k({params})
{{
  .reg .pred %p<4>;
  .reg .b16 %h<8>;
  .reg .b32 %r<16>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<16>;
{regs}
{body}
}}
"""


STORE_TID = kernel("""
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  cvt.u64.u32 %rd2, %r1;
  shl.b64 %rd2, %rd2, 2;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
""")

STORE_LANE0 = kernel("""
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  st.global.u32 [%rd1], %r1;
  ret;
""")


def test_lowest_lane_wins_on_same_address_store():
    out = np.zeros(4, dtype=np.uint32)
    r = run_launch(Launch(ptx=STORE_LANE0, block=(64, 1, 1), args=[out]))
    # two warps store tid to out[0] in launch order; within a warp the lowest lane's store wins (H100)
    assert r.outputs[0][0] == 32
    assert r.stats["warps"] == 2 and r.stats["warp_instructions"] == 2 * 4


def test_input_array_is_not_modified_and_result_has_same_shape():
    out = np.full((2, 2), 7, dtype=np.uint32)
    r = run_launch(Launch(ptx=STORE_LANE0, block=(32, 1, 1), args=[out]))
    assert out[0, 0] == 7
    assert r.outputs[0].shape == (2, 2) and r.outputs[0][0, 0] == 0 and r.outputs[0][1, 1] == 7


def test_wrong_argument_count_is_a_launch_error():
    with pytest.raises(LaunchError) as e:
        run_launch(Launch(ptx=STORE_LANE0, args=[]))
    msg = str(e.value)
    assert "takes 1 parameters (.u64 out) but the launch passes 0 arguments" in msg
    assert ":4:" in msg  # the kernel's line


def test_wrong_argument_type_is_a_launch_error():
    with pytest.raises(LaunchError, match="must be an integer, got str"):
        run_launch(Launch(ptx=kernel("  ret;", params=".param .u32 n"), args=["x"]))
    with pytest.raises(LaunchError, match=r"argument -2147483649 does not fit parameter n \(.u32\)"):
        run_launch(Launch(ptx=kernel("  ret;", params=".param .u32 n"), args=[-2 ** 31 - 1]))
    with pytest.raises(LaunchError, match="argument 0 is an array but parameter n has type .u32"):
        run_launch(Launch(ptx=kernel("  ret;", params=".param .u32 n"), args=[np.zeros(2)]))


def test_launch_shape_rules():
    with pytest.raises(LaunchError, match="at most 1024 threads"):
        run_launch(Launch(ptx=STORE_LANE0, block=(2048, 1, 1), args=[np.zeros(1, np.uint32)]))
    with pytest.raises(LaunchError, match="not a multiple of cluster"):
        run_launch(Launch(ptx=STORE_LANE0, grid=(3, 1, 1), cluster=(2, 1, 1), args=[np.zeros(1, np.uint32)]))
    req = HEAD + ".visible .entry k() .reqntid 64, 1, 1 { ret; }"
    with pytest.raises(LaunchError, match=r"requires .reqntid \(64, 1, 1\)"):
        run_launch(Launch(ptx=req, block=(32, 1, 1)))


def test_out_of_bounds_global_store_names_buffer_and_lane():
    src = kernel("""
  ld.param.u64 %rd1, [out];
  st.global.u32 [%rd1+16], %r1;
  ret;
""")
    with pytest.raises(MemoryFault) as e:
        run_launch(Launch(ptx=src, block=(32, 1, 1), args=[np.zeros(4, np.uint32)]))
    msg = str(e.value)
    assert "out-of-bounds global write of 4 bytes" in msg and "offset 16 of arg0(out), which is only 16 bytes" in msg
    assert "<ptx>:" in msg and ":14:" in msg and "warp 0" in msg and "st.global.u32 [%rd1+16], %r1;" in msg


def test_out_of_bounds_shared_access():
    src = kernel("""
  mov.u32 %r1, smem;
  ld.shared.u32 %r2, [%r1+64];
  ret;
""", params="", regs="  .shared .align 4 .b8 smem[64];")
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    with pytest.raises(MemoryFault, match=r"out-of-bounds shared memory of CTA \(0,0,0\) read of 4 bytes at "
                                          r"offset 0x440; shared memory of CTA \(0,0,0\) is 64 bytes at "
                                          r"\[0x400, 0x440\)"):
        run_launch(Launch(ptx=src))


def test_misaligned_vector_access():
    src = kernel("""
  mov.u32 %r1, smem;
  ld.shared.v2.u32 {%r2, %r3}, [%r1+4];
  ret;
""", params="", regs="  .shared .align 16 .b8 smem[64];")
    with pytest.raises(MemoryFault) as e:
        run_launch(Launch(ptx=src))
    # smem is the first user shared byte, address 0x400 (tests/hw/golden_h100/address_layout.json)
    assert "misaligned shared::cta access of 8 bytes at address 0x404 (lane 0)" in str(e.value)
    assert "aligned to 8 bytes" in str(e.value)


def test_runaway_kernel_hits_instruction_budget():
    src = kernel("""
LOOP:
  bra LOOP;
""", params="")
    with pytest.raises(RunawayError) as e:
        run_launch(Launch(ptx=src), max_instructions=1000)
    assert "more than 1000 warp-instructions" in str(e.value) and "warp 0" in str(e.value)


def test_unsupported_instruction_is_reported_at_load_with_location():
    src = kernel("  suld.b.1d.b32.trap {%r1}, [%rd1, {%r2}];\n  ret;", params="")
    with pytest.raises(UnsupportedError) as e:
        run_launch(Launch(ptx=src))
    assert "<ptx>:12:3" in str(e.value) and "suld.b.1d.b32.trap" in str(e.value)


def test_malformed_ptx_is_a_syntax_error():
    with pytest.raises(PtxSyntaxError):
        run_launch(Launch(ptx=HEAD + ".visible .entry k( { ret; }"))


def test_jsonl_trace_records_instructions_and_memory():
    buf = io.StringIO()
    run_launch(Launch(ptx=STORE_LANE0, args=[np.zeros(1, np.uint32)]), trace=buf)
    recs = list(read_trace(buf.getvalue().splitlines()))
    assert recs[0]["kind"] == "header" and recs[0]["version"] == 3        # schema: README "JSONL trace"
    insts = [r for r in recs if r["kind"] == "inst"]
    mems = [r for r in recs if r["kind"] == "mem"]
    assert [r["text"].split()[0] for r in insts] == ["ld.param.u64", "mov.u32", "st.global.u32", "ret;"]
    # the register write: each active lane's value (%tid.x), lane 0 first
    assert insts[1]["writes"]["%r1"] == list(range(32)) and insts[1]["mask"] == 0xFFFFFFFF
    assert {m["space"] for m in mems} == {"param", "global"}
    st = [m for m in mems if m["op"] == "st"][0]
    assert st["size"] == 4 and st["lane_mask"] == 0xFFFFFFFF


def test_session_steps_and_inspects():
    out = np.zeros(1, np.uint32)
    s = Session(Launch(ptx=STORE_LANE0, block=(64, 1, 1), args=[out]))
    r = s.step()
    assert r.warp == 0 and r.text.startswith("ld.param.u64")
    r = s.run(until={"warp": 1, "text": "mov.u32 %r1, %tid.x;"})
    assert r.warp == 1
    assert list(s.reg("%r1", warp=1)) == list(range(32, 64))
    assert "warp 0" in s.where()
    res = s.finish()
    assert res.outputs[0][0] == 32


def test_observer_sees_every_store():
    rec = EventRecorder(kinds=("mem",))
    run_launch(Launch(ptx=STORE_LANE0, block=(64, 1, 1), args=[np.zeros(1, np.uint32)]), observers=[rec])
    assert len(rec.of("mem", op="st")) == 2


SPIN_LOCK = HEAD + """.visible .entry k(.param .u64 lock, .param .u64 cnt)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [lock];
  ld.param.u64 %rd2, [cnt];
LOOP:
  atom.global.cas.b32 %r1, [%rd1], 0, 1;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra LOOP;
  ld.global.u32 %r2, [%rd2];
  add.u32 %r2, %r2, 1;
  st.global.u32 [%rd2], %r2;
  membar.gl;
  atom.global.exch.b32 %r3, [%rd1], 0;
  ret;
}
"""


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_intra_warp_spin_lock_makes_progress(seed):
    # Volta+ independent thread scheduling guarantees the lock holder (a lane of the same warp) progresses;
    # a pure lowest-PC-first scheduler would spin the losers forever.
    r = run_launch(Launch(ptx=SPIN_LOCK, block=(64, 1, 1), args=[np.zeros(1, np.uint32), np.zeros(1, np.uint32)]),
                   seed=seed)
    assert r.outputs[1][0] == 64 and r.outputs[0][0] == 0
