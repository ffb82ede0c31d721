"""Class 12 (tcsim.race.protocol): one mbarrier shared by two independent channels (NVIDIA/Fuser PR #5862).  Two
producers (warps 0 and 1) each announce a transfer on the barrier; two consumers (warps 2 and 3) each wait with the
parity they would use on a barrier of their own.  Steps are ordered with bar.sync so the interleaving is fixed:
in round 1 consumer A's wait is satisfied by phase 1, which channel B made, while A's own transfer is still
under way -- then B's next announcement over-arrives (the H100 traps there).  The correct twin gives each channel
its own barrier."""
import numpy as np
import pytest

from tcsim.findings import FindingError
from tcsim.launch import Launch, run_launch

from protocol_kernels import line_of

SCHEDULES = [(t, s) for t in (False, True) for s in (None, 1, 2)]


def channels(shared: bool) -> str:
    bar_b = "bar" if shared else "bar+8"
    return f""".version 8.6
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<20>; .reg .b64 %rd<8>; .reg .pred %p<12>;
  .shared .align 8 .b64 bar[2];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  setp.eq.u32 %p9, %r3, 0;
  setp.eq.u32 %p1, %r2, 0;
  and.pred %p1, %p1, %p9;
  setp.eq.u32 %p2, %r2, 1;
  and.pred %p2, %p2, %p9;
  setp.eq.u32 %p3, %r2, 2;
  setp.eq.u32 %p4, %r2, 3;
  setp.eq.u32 %p8, %r1, 0;
  @%p8 mbarrier.init.shared::cta.b64 [bar], 1;
  @%p8 mbarrier.init.shared::cta.b64 [bar+8], 1;
  bar.sync 0;
  mov.u32 %r10, 0;
ROUND:
  setp.eq.u32 %p5, %r10, 0;
  and.pred %p6, %p1, %p5;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;      // @PA
  @%p6 mbarrier.complete_tx.shared::cta.b64 [bar], 16;      // @PC
  bar.sync 0;
  @%p3 mbarrier.test_wait.parity.shared::cta.b64 %p7, [bar], %r10;      // @WA
  bar.sync 0;
  @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 _, [{bar_b}], 16;      // @PB
  @%p2 mbarrier.complete_tx.shared::cta.b64 [{bar_b}], 16;      // @PD
  bar.sync 0;
  xor.b32 %r11, %r10, {1 if shared else 0};
  @%p4 mbarrier.test_wait.parity.shared::cta.b64 %p7, [{bar_b}], %r11;      // @WB
  bar.sync 0;
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p10, %r10, 2;
  @%p10 bra ROUND;
  ret;
}}
"""


def run(ptx, timing, seed):
    return run_launch(Launch(ptx=ptx, grid=(1, 1, 1), block=(128, 1, 1), args=[np.zeros(4, np.uint32)]),
                      timing=timing, seed=seed)


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_wait_satisfied_by_the_other_channels_completion(timing, seed):
    ptx = channels(shared=True)
    with pytest.raises(FindingError) as ei:
        run(ptx, timing, seed)
    first = ei.value.findings[0]
    assert first.cls == 12 and first.outcome == "continue"
    assert first.lines == (line_of(ptx, "PB"), line_of(ptx, "PA"), line_of(ptx, "WA"))
    assert "another channel" in first.message and "still under way on phase 2" in first.message
    assert "separate mbarrier" in first.missing
    # then channel B's next announcement lands on the phase A's transfer holds open: the H100 traps there
    trap = ei.value.finding
    assert trap.cls == 12 and trap.outcome == "trap" and trap.loc.line == line_of(ptx, "PB")


@pytest.mark.parametrize("timing,seed", SCHEDULES)
def test_one_barrier_per_channel_is_clean(timing, seed):
    assert run(channels(shared=False), timing, seed).findings == []
