"""The register scoreboard: a dependent instruction waits for its producer's latency, an independent one does
not; the stall breakdown names the register and its producer."""
from tcsim.timing.params import arch_config
from tcsim.timing.scoreboard import Scoreboard

from timing_kernels import PROLOGUE, run

CFG = arch_config("sm_100a")
SHARED = "  .shared .align 16 .b8 buf[512];"


def _timed(consumer: str, timing=True):
    """Cycles between two %clock64 reads around ld.shared %r1 -> ``consumer``."""
    body = f"""
  mov.u32 %r9, buf;
  mov.u32 %r3, 7;
{PROLOGUE}
  mov.u64 %rd2, %clock64;
  ld.shared.u32 %r1, [%r9];
  {consumer}
  mov.u64 %rd3, %clock64;
  sub.u64 %rd4, %rd3, %rd2;
  st.global.u64 [%rd1], %rd4;
  ret;
"""
    res, _ = run(body, shared=SHARED, timing=timing)
    return int(res.outputs[0][0]), res


def test_dependent_instruction_waits_for_the_producer_latency():
    dep, res = _timed("add.u32 %r2, %r1, 1;")
    indep, _ = _timed("add.u32 %r2, %r3, 1;")
    assert dep >= CFG.smem_latency + 1          # the add issues once ld.shared's value is back
    assert indep <= 4                           # an independent add issues at once
    assert dep - indep >= CFG.smem_latency - 2
    stalls = res.timing.stalls_of((0, 0, 0), 0)["dependency"]
    (what, cycles), = [(k, v) for k, v in stalls.items() if k.startswith("%r1 ")]
    assert "ld.shared.u32" in what and cycles >= CFG.smem_latency - 2


def test_one_cycle_model_ignores_latency():
    assert _timed("add.u32 %r2, %r1, 1;", timing=False)[0] == _timed("add.u32 %r2, %r3, 1;", timing=False)[0]


def test_write_after_write_waits_too():
    dep, _ = _timed("mov.u32 %r1, 5;")          # overwrites the load's destination
    assert dep >= CFG.smem_latency


def test_scoreboard_unit():
    sb = Scoreboard()
    sb.write(("%r1", "%r2"), 10, pc=3)
    sb.write(("%r3",), 20, pc=4)
    assert sb.blocking(("%r1",), 5) == (10, "%r1", 3)
    assert sb.blocking(("%r1", "%r3"), 5) == (20, "%r3", 4)
    assert sb.blocking(("%r1", "%r3"), 20) is None
    assert sb.blocking(("%r9",), 0) is None
    assert sb.pending(15) == {"%r3": 20}
