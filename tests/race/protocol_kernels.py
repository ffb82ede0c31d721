"""Small producer/consumer pipelines for the protocol-check tests (tests/race/test_protocol_*.py).

:func:`ring` builds a TMA ring: warp 0 lane 0 produces (waits ``empty[s]``, ``arrive.expect_tx`` on ``full[s]``,
``cp.async.bulk`` of ``BYTES`` into stage ``s``), warp 1 consumes (waits ``full[s]``, each lane reads one word of
the stage and sums it, lane 0 arrives on ``empty[s]``); ``N`` iterations over ``S`` stages, parity flipped when the
stage index wraps.  Keyword arguments apply one of the minimal edits that make the buggy twins.  Lines carry
``// @NAME`` markers; :func:`line_of` finds them.
"""
from __future__ import annotations

import numpy as np

from tcsim.launch import Launch, run_launch

BYTES = 128      # one stage: 32 words, one per consumer lane


def ring(*, S=2, N=6, arch="sm_90a", consumer_flips=True, expect=BYTES, copies=1, empty_count=1, full_count=1,
         consumer_arrive="@%p7 mbarrier.arrive.shared::cta.b64 _, [%r14];", arrive_count=None,
         second_producer=False, store_over_barrier=False):
    """The ring kernel's PTX (see the module docstring); ``copies`` splits a stage into that many bulk copies."""
    part = BYTES // copies
    inits = []
    for s in range(S):
        inits.append(f"  mbarrier.init.shared::cta.b64 [full+{8 * s}], {full_count};      // @INIT_FULL{s}")
        inits.append(f"  mbarrier.init.shared::cta.b64 [empty+{8 * s}], {empty_count};    // @INIT_EMPTY{s}")
    copy_lines = []
    for c in range(copies):
        copy_lines.append(f"  add.u32 %r19, %r18, {c * part};\n  add.u64 %rd5, %rd4, {c * part};\n"
                          f"  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r19], [%rd5], {part}, "
                          f"[%r15];      // @COPY{c}")
    second = ""
    if second_producer:
        # a second, independent transfer announced on the same full barrier (its own expect_tx + copy)
        second = (f"  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r15], {BYTES};      // @EXPECT2\n"
                  f"  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r30], [%rd4], {BYTES}, "
                  f"[%r15];      // @COPY2\n")
    if arrive_count is not None:
        consumer_arrive = f"@%p7 mbarrier.arrive.shared::cta.b64 _, [%r14], {arrive_count};"
    clobber = "  st.shared.u32 [full+4], %r3;      // @CLOBBER\n" if store_over_barrier else ""
    cflip = "  @%p5 xor.b32 %r12, %r12, 1;      // @CFLIP\n" if consumer_flips else ""
    return f""".version 8.6
.target {arch}
.address_size 64
.visible .entry k(.param .u64 src, .param .u64 out)
{{
  .reg .b32 %r<40>;
  .reg .b64 %rd<40>;
  .reg .pred %p<10>;
  .shared .align 128 .b8 buf[{S * BYTES}];
  .shared .align 128 .b8 buf2[{BYTES}];
  .shared .align 8 .b64 full[{S}];
  .shared .align 8 .b64 empty[{S}];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r30, buf2;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra INITDONE;
{chr(10).join(inits)}
INITDONE:
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra CONSUMER;
  setp.ne.u32 %p3, %r3, 0;
  @%p3 bra DONE;
  mov.u32 %r10, 0;
  mov.u32 %r11, 0;
  mov.u32 %r12, 0;
PLOOP:
  shl.b32 %r13, %r11, 3;
  mov.u32 %r14, empty;
  add.u32 %r14, %r14, %r13;
  mov.u32 %r15, full;
  add.u32 %r15, %r15, %r13;
  xor.b32 %r16, %r12, 1;
PWAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r14], %r16;      // @PWAIT
  @!%p4 bra PWAIT;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r15], {expect};      // @EXPECT
  mul.lo.u32 %r17, %r11, {BYTES};
  mov.u32 %r18, buf;
  add.u32 %r18, %r18, %r17;
  mul.wide.u32 %rd3, %r10, {BYTES};
  add.u64 %rd4, %rd1, %rd3;
{chr(10).join(copy_lines)}
{second}  add.u32 %r10, %r10, 1;
  add.u32 %r11, %r11, 1;
  setp.eq.u32 %p5, %r11, {S};
  @%p5 mov.u32 %r11, 0;
  @%p5 xor.b32 %r12, %r12, 1;
  setp.lt.u32 %p6, %r10, {N};
  @%p6 bra PLOOP;
  bra DONE;
CONSUMER:
{clobber}  setp.eq.u32 %p7, %r3, 0;
  mov.u32 %r10, 0;
  mov.u32 %r11, 0;
  mov.u32 %r12, 0;
  mov.u32 %r21, 0;
CLOOP:
  shl.b32 %r13, %r11, 3;
  mov.u32 %r14, empty;
  add.u32 %r14, %r14, %r13;
  mov.u32 %r15, full;
  add.u32 %r15, %r15, %r13;
CWAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r15], %r12;      // @CWAIT
  @!%p4 bra CWAIT;
  mul.lo.u32 %r17, %r11, {BYTES};
  mov.u32 %r18, buf;
  add.u32 %r18, %r18, %r17;
  shl.b32 %r19, %r3, 2;
  add.u32 %r18, %r18, %r19;
  ld.shared.u32 %r20, [%r18];
  add.u32 %r21, %r21, %r20;
  {consumer_arrive}      // @CARRIVE
  add.u32 %r10, %r10, 1;
  add.u32 %r11, %r11, 1;
  setp.eq.u32 %p5, %r11, {S};
  @%p5 mov.u32 %r11, 0;
{cflip}  setp.lt.u32 %p6, %r10, {N};
  @%p6 bra CLOOP;
  mul.wide.u32 %rd6, %r3, 4;
  add.u64 %rd7, %rd2, %rd6;
  st.global.u32 [%rd7], %r21;
DONE:
  ret;
}}
"""


def line_of(ptx: str, marker: str) -> int:
    """The 1-based line carrying ``// @marker``."""
    hits = [i + 1 for i, t in enumerate(ptx.splitlines()) if t.rstrip().endswith(f"// @{marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def ring_inputs(N=6, seed=7):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 1000, size=N * BYTES // 4).astype(np.uint32)
    return src, src.reshape(N, 32).sum(axis=0).astype(np.uint32)


def run_ring(ptx, N=6, *, seed=None, timing=False, strict=False):
    src, _ = ring_inputs(N)
    return run_launch(Launch(ptx=ptx, grid=(1, 1, 1), block=(64, 1, 1),
                             args=[src, np.zeros(32, np.uint32)]), seed=seed, timing=timing, strict=strict)
