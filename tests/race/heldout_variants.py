"""Second, differently-shaped variants of the eight kernels of issue 15 that used to run clean (held-out style):
each a correct/buggy pair of small PTX kernels written apart from the zoo's templates -- other warp roles,
register and line layout, loop form, synchronisation shape -- and the edit that makes the buggy twin.

Each :class:`Variant` gives the correct kernel (``// @name`` markers on the lines a finding must name), the edit
(``(old, new)`` text replacements, at most two PTX lines), the class, the markers of both sides, the missing edge
the finding must name, the launch and the expected output of the correct twin (computed here with numpy from the
inputs, never from tcsim's output).  Run by tests/race/test_heldout_variants.py."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tests.ptx_frame import kernel


@dataclass(frozen=True)
class Variant:
    name: str
    cls: int
    correct: str
    edit: tuple                 # ((old, new), ...): correct -> buggy
    sides: tuple                # markers
    missing: str                # a text the finding's missing edge names
    launch: dict                # Launch keyword arguments besides ptx / args
    args: object                # () -> list of arguments
    want: object                # args -> {output index: expected array}
    lint: bool = False          # the finding is a lint note (class 19: ptxas orders the use)
    what: str = ""
    targets: tuple = field(default=("sm_100a",))

    def buggy(self) -> str:
        text = self.correct
        for old, new in self.edit:
            assert text.count(old) == 1, (self.name, old)
            text = text.replace(old, new)
        return text


def _line(ptx: str, marker: str) -> int:
    hits = [i + 1 for i, ln in enumerate(ptx.splitlines()) if ln.rstrip().endswith(f"// @{marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def lines(ptx: str, markers) -> set:
    return {_line(ptx, m) for m in markers}


# --------------------------------------------------------------------------------- class 2: leader release
# warp 2 (thread 64) is the producer: two 256-byte rounds into one stage; warps 0 and 1 read the stage, meet at
# named barrier 3 and thread 0 alone releases it (empty, count 1) for the refill
LEADER = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r3, stage;
  mov.u32 %r4, fullb;
  mov.u32 %r5, emptyb;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  setp.eq.u32 %p1, %r1, 64;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  setp.lt.u32 %p2, %r2, 2;
  @%p2 bra READERS;
  @!%p1 bra END;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 256;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd1], 256, [%r4];
WAIT_EMPTY:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r5], 0;
  @!%p3 bra WAIT_EMPTY;
  add.u64 %rd3, %rd1, 256;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 256;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd3], 256, [%r4];   // @refill
  bra END;
READERS:
  shl.b32 %r6, %r1, 2;
  add.u32 %r7, %r3, %r6;
  mul.wide.u32 %rd4, %r1, 4;
  add.u64 %rd5, %rd2, %rd4;
  mov.u32 %r9, 0;
ROUND:
WAIT_FULL:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r4], %r9;
  @!%p3 bra WAIT_FULL;
  ld.shared.u32 %r8, [%r7];   // @read
  st.global.u32 [%rd5], %r8;
  add.u64 %rd5, %rd5, 256;
  setp.ne.u32 %p4, %r9, 0;
  @%p4 bra END;
  bar.sync 3, 64;
  setp.eq.u32 %p5, %r1, 0;
  @%p5 mbarrier.arrive.shared::cta.b64 _, [%r5];
  mov.u32 %r9, 1;
  bra ROUND;
END:
  ret;""", params=", .param .u64 src",
                shared="  .shared .align 128 .b8 stage[256]; .shared .align 8 .b64 fullb; .shared .align 8 .b64 emptyb;")


def _leader_args():
    return [np.zeros(128, np.uint32), np.arange(128, dtype=np.uint32) * 7 + 3]


# -------------------------------------------------------------------- class 5: bulk store source overwritten
# two tiles through one SMEM buffer: every thread writes its word (st.shared in a loop), fences, meets at bar.sync;
# thread 32 (warp 1) stores the tile with a bulk copy and waits for the copy to have read it before the next tile
STORE = kernel("""  mov.u32 %r1, %tid.x;
  mov.u32 %r2, sOut;
  shl.b32 %r3, %r1, 2;
  add.u32 %r4, %r2, %r3;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd1, %rd3;
  setp.eq.u32 %p1, %r1, 32;
  mov.u32 %r10, 2;
TILE:
  ld.global.u32 %r5, [%rd4];
  add.u32 %r6, %r5, %r5;
  st.shared.u32 [%r4], %r6;   // @write
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @!%p1 bra NEXT;
  cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], 256;   // @read
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
NEXT:
  bar.sync 0;
  add.u64 %rd4, %rd4, 256;
  add.u64 %rd2, %rd2, 256;
  sub.u32 %r10, %r10, 1;
  setp.ne.u32 %p2, %r10, 0;
  @%p2 bra TILE;
  @%p1 cp.async.bulk.wait_group 0;
  ret;""", params=", .param .u64 src", shared="  .shared .align 128 .b8 sOut[256];")


# ------------------------------------------------------------------------ class 6: dealloc before wait::ld
# one warp: allocate 32 columns, write two columns of its 32 lanes with tcgen05.st, read them back, free them
TMEM_PRO = """  mov.u32 %r1, %tid.x;
  mov.u32 %r2, taddr;
  ld.param.u64 %rd1, [out];
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 32;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  ld.shared.u32 %r3, [%r2];
  mul.lo.u32 %r10, %r1, 3;
  add.u32 %r11, %r10, 1;
  add.u32 %r12, %r10, 2;
  add.u32 %r13, %r10, 5;
  tcgen05.st.sync.aligned.32x32b.x4.b32 [%r3], {%r10, %r11, %r12, %r13};
  tcgen05.wait::st.sync.aligned;
"""
DEALLOC = kernel(TMEM_PRO + """  tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r20, %r21}, [%r3];   // @ld
  tcgen05.wait::ld.sync.aligned;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;   // @free
  mul.wide.u32 %rd2, %r1, 8;
  add.u64 %rd3, %rd1, %rd2;
  st.global.v2.u32 [%rd3], {%r20, %r21};
  ret;""", shared="  .shared .align 4 .b32 taddr;")


# ------------------------------------------------------------------ class 7: missing ::after_thread_sync
# warp 0 writes TMEM lanes 0-31 with tcgen05.st, publishes them (wait::st, ::before_thread_sync, mbarrier arrive);
# warp 4 (same TMEM lanes) waits on the mbarrier, fences and reads them back
FENCE7 = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r9, %r1, 31;
  mov.u32 %r4, taddr;
  mov.u32 %r5, ready;
  ld.param.u64 %rd1, [out];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra ALLOCATED;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r4], 32;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
ALLOCATED:
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  ld.shared.u32 %r3, [%r4];
  setp.eq.u32 %p3, %r2, 4;
  @%p3 bra CONSUMER;
  @%p2 bra FREE;
  shl.b32 %r10, %r9, 4;
  add.u32 %r11, %r10, 7;
  tcgen05.st.sync.aligned.32x32b.x2.b32 [%r3], {%r10, %r11};   // @st
  tcgen05.wait::st.sync.aligned;
  tcgen05.fence::before_thread_sync;
  @%p1 mbarrier.arrive.shared::cta.b64 _, [%r5];
  bra FREE;
CONSUMER:
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r5], 0;
  @!%p4 bra WAIT;
  tcgen05.fence::after_thread_sync;
  tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r20, %r21}, [%r3];   // @ld
  tcgen05.wait::ld.sync.aligned;
  mul.wide.u32 %rd2, %r9, 8;
  add.u64 %rd3, %rd1, %rd2;
  st.global.v2.u32 [%rd3], {%r20, %r21};
FREE:
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  @%p2 bra END;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;
END:
  ret;""", shared="  .shared .align 4 .b32 taddr; .shared .align 8 .b64 ready;")


# --------------------------------------------------------------------- class 9: generic read, async write
# warps 0-1 read a TMA-filled buffer (ld.shared.v2), fence and hand it back with bar.arrive 1, 96 to warp 2, which
# waits at bar.sync 1, 96 and refills it with a bulk copy
RELOAD = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r3, buf;
  mov.u32 %r4, fullb;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  setp.eq.u32 %p1, %r1, 64;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 2;
  @%p2 bra READ;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 512;
  @%p1 cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd1], 512, [%r4];
  bar.sync 1, 96;
  add.u64 %rd3, %rd1, 512;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 512;
  @%p1 cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd3], 512, [%r4];   // @write
  bra END;
READ:
  shl.b32 %r5, %r1, 3;
  add.u32 %r6, %r3, %r5;
  mul.wide.u32 %rd4, %r1, 8;
  add.u64 %rd5, %rd2, %rd4;
WAIT0:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r4], 0;
  @!%p3 bra WAIT0;
  ld.shared.v2.u32 {%r7, %r8}, [%r6];   // @read
  st.global.v2.u32 [%rd5], {%r7, %r8};
  fence.proxy.async.shared::cta;
  bar.arrive 1, 96;
WAIT1:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r4], 1;
  @!%p3 bra WAIT1;
  ld.shared.v2.u32 {%r7, %r8}, [%r6];
  st.global.v2.u32 [%rd5+512], {%r7, %r8};
END:
  ret;""", params=", .param .u64 src",
                shared="  .shared .align 128 .b8 buf[512]; .shared .align 8 .b64 fullb;")


# ---------------------------------------------------------------------- class 10: init before remote arrive
# each CTA's thread 32 initialises its barrier; the fence.mbarrier_init comes before the cluster barrier's
# release arrive; rank 1's thread 0 then arrives on rank 0's barrier, which rank 0 waits on
REMOTE = kernel("""  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, mb;
  ld.param.u64 %rd1, [out];
  setp.eq.u32 %p1, %r1, 32;
  @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;   // @init
  @%p1 fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  setp.eq.u32 %p2, %r2, 0;
  @%p2 bra RANK0;
  setp.eq.u32 %p3, %r1, 0;
  mapa.shared::cluster.u32 %r4, %r3, 0;
  @%p3 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r4];   // @remote
  bra END;
RANK0:
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r3], 0;
  @!%p4 bra WAIT;
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  add.u32 %r5, %r1, 11;
  st.global.u32 [%rd3], %r5;
END:
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  ret;""", shared="  .shared .align 8 .b64 mb;")


# ------------------------------------------------------------------------- class 19: tcgen05.ld registers
# one warp reads four columns back and sums them; the sum must wait for tcgen05.wait::ld
LDREGS = kernel(TMEM_PRO + """  tcgen05.ld.sync.aligned.32x32b.x4.b32 {%r20, %r21, %r22, %r23}, [%r3];   // @ld
  tcgen05.wait::ld.sync.aligned;
  add.u32 %r24, %r20, %r23;   // @use
  add.u32 %r24, %r24, %r22;
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r24;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;
  ret;""", shared="  .shared .align 4 .b32 taddr;")


# ------------------------------------------------------------------------ class 20: device-edited tensor map
# warp 1 writes the tensor map into a global slot itself (a generic copy of the parameter map, then
# tensormap.replace of its global address on the slot, then the release fence) and meets warp 0 at bar.sync;
# warp 0's lane 0 acquires the map and loads a 16 x 16 f32 tile through it
TMAP = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mov.u32 %r4, tile;
  mov.u32 %r5, fullb;
  ld.param.u64 %rd1, [B];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [out];
  ld.param.u64 %rd3, [slot];
  cvta.to.global.u64 %rd3, %rd3;
  mov.b64 %rd4, tmap;
  cvta.param.u64 %rd4, %rd4;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  setp.ne.u32 %p2, %r2, 1;
  @%p2 bra MET;
  shl.b32 %r6, %r3, 2;
  cvt.u64.u32 %rd5, %r6;
  add.u64 %rd6, %rd4, %rd5;
  ld.u32 %r7, [%rd6];
  add.u64 %rd7, %rd3, %rd5;
  st.global.u32 [%rd7], %r7;
  bar.warp.sync -1;
  setp.eq.u32 %p3, %r3, 0;
  @%p3 tensormap.replace.tile.global_address.global.b1024.b64 [%rd3], %rd1;   // @write
  fence.proxy.tensormap::generic.release.gpu;
MET:
  bar.sync 0;
  @!%p1 bra LOADED;
  fence.proxy.tensormap::generic.acquire.gpu [%rd3], 128;
  mov.u32 %r8, 0;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], 1024;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd3, {%r8, %r8}], [%r5];   // @read
LOADED:
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r5], 0;
  @!%p4 bra WAIT;
  shl.b32 %r9, %r1, 4;
  add.u32 %r10, %r4, %r9;
  ld.shared.v4.f32 {%f0, %f1, %f2, %f3}, [%r10];
  cvt.u64.u32 %rd8, %r9;
  add.u64 %rd9, %rd2, %rd8;
  st.global.v4.f32 [%rd9], {%f0, %f1, %f2, %f3};
  ret;""", params=", .param .u64 A, .param .u64 B, .param .u64 slot, .param .align 64 .b8 tmap[128]",
               shared="  .shared .align 128 .b8 tile[1024]; .shared .align 8 .b64 fullb;")


def _tmap_args():
    from tcsim.isa.tensormap import TensorMap
    rng = np.random.default_rng(20)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    return [np.zeros((16, 16), np.float32), a, b, np.zeros(128, np.uint8), TensorMap.tiled(a, box=(16, 16))]


# -------------------------------------------------------------- class 1: stale parity, Triton-style
# a one-stage ring of 4 rounds; the consumer warp keeps the full barrier's phase in a register
# it flips with xor after each round and polls with mbarrier.test_wait (not try_wait); lane 0 releases the stage;
# thread 0 (warp 0) refills the stage four times from src (128 bytes each) after the release
STALE = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mov.u32 %r4, stage;
  mov.u32 %r5, fullb;
  mov.u32 %r6, emptyb;
  ld.param.u64 %rd1, [src];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r6], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  mov.u32 %r10, 0;
  setp.eq.u32 %p2, %r2, 0;
  @%p2 bra PRODUCER;
  mov.u32 %r9, 0;
  shl.b32 %r11, %r3, 2;
  add.u32 %r12, %r4, %r11;
  setp.eq.u32 %p3, %r3, 0;
CONSUME:
  mbarrier.test_wait.parity.shared::cta.b64 %p5, [%r5], %r9;   // @wait
  @!%p5 bra CONSUME;
  ld.shared.u32 %r13, [%r12];
  add.u32 %r13, %r13, 1;
  shl.b32 %r14, %r10, 5;
  add.u32 %r14, %r14, %r3;
  mul.wide.u32 %rd3, %r14, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r13;
  bar.warp.sync -1;
  @%p3 mbarrier.arrive.shared::cta.b64 _, [%r6];
  xor.b32 %r9, %r9, 1;
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p6, %r10, 4;
  @%p6 bra CONSUME;
  bra DONE;
PRODUCER:
  setp.ne.u32 %p4, %r3, 0;
  @%p4 bra DONE;
PRODUCE:
  setp.eq.u32 %p7, %r10, 0;
  @%p7 bra FILL;
  add.u32 %r15, %r10, 1;
  and.b32 %r15, %r15, 1;
WAITE:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r6], %r15;
  @!%p5 bra WAITE;
  fence.proxy.async.shared::cta;
FILL:
  mul.wide.u32 %rd5, %r10, 128;
  add.u64 %rd6, %rd1, %rd5;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], 128;   // @expect
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd6], 128, [%r5];
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p7, %r10, 4;
  @%p7 bra PRODUCE;
DONE:
  ret;""", params=", .param .u64 src", shared="  .shared .align 128 .b8 stage[128]; .shared .align 8 .b64 fullb; .shared .align 8 .b64 emptyb;")


def _tmem_words(t):
    t = np.arange(32, dtype=np.uint32)
    return t * 3, t * 3 + 1, t * 3 + 2, t * 3 + 5


VARIANTS = (
    Variant("leader_release", 2, LEADER,
            edit=(("  bar.sync 3, 64;\n", ""),), sides=("read", "refill"), missing="bar.sync",
            launch=dict(block=(96, 1, 1)), args=_leader_args,
            want=lambda a: {0: a[1].copy()},
            what="the consumers' bar.sync 3, 64 before thread 0's release is deleted: warp 1 may still read",
            targets=("sm_100a", "sm_90a")),
    Variant("bulk_store_src", 5, STORE,
            edit=(("  cp.async.bulk.wait_group.read 0;\n", ""),), sides=("read", "write"),
            missing="wait_group.read",
            launch=dict(block=(64, 1, 1)),
            args=lambda: [np.zeros(128, np.uint32), np.arange(128, dtype=np.uint32) * 5 + 1],
            want=lambda a: {0: a[1] * np.uint32(2)},
            what="thread 32 no longer waits for its bulk store to read sOut before the next tile overwrites it "
                 "(the next tile's fence.proxy.async follows the overwrite)",
            targets=("sm_100a", "sm_90a")),
    Variant("dealloc_before_wait_ld", 6, DEALLOC,
            edit=(("  tcgen05.wait::ld.sync.aligned;\n", ""),
                  ("   // @free\n", "   // @free\n  tcgen05.wait::ld.sync.aligned;\n")),
            sides=("ld", "free"), missing="tcgen05.wait::ld",
            launch=dict(block=(32, 1, 1)), args=lambda: [np.zeros(64, np.uint32)],
            want=lambda a: {0: np.stack(_tmem_words(None)[:2], axis=1).ravel()},
            what="tcgen05.wait::ld moves after the dealloc"),
    Variant("missing_after_thread_sync", 7, FENCE7,
            edit=(("  @!%p4 bra WAIT;\n  tcgen05.fence::after_thread_sync;\n", "  @!%p4 bra WAIT;\n"),),
            sides=("st", "ld"), missing="tcgen05.fence::after_thread_sync",
            launch=dict(block=(160, 1, 1)), args=lambda: [np.zeros(64, np.uint32)],
            want=lambda a: {0: np.stack([np.arange(32, dtype=np.uint32) * 16,
                                         np.arange(32, dtype=np.uint32) * 16 + 7], axis=1).ravel()},
            what="warp 4's tcgen05.fence::after_thread_sync after its mbarrier wait is deleted (warp 0 published "
                 "its tcgen05.st with ::before_thread_sync)"),
    Variant("generic_read_async_write", 9, RELOAD,
            edit=(("  fence.proxy.async.shared::cta;\n  bar.arrive 1, 96;\n", "  bar.arrive 1, 96;\n"),),
            sides=("read", "write"), missing="fence.proxy.async",
            launch=dict(block=(96, 1, 1)),
            args=lambda: [np.zeros(256, np.uint32), np.arange(256, dtype=np.uint32) * 9 + 4],
            want=lambda a: {0: a[1].copy()},
            what="the readers' fence.proxy.async before bar.arrive 1, 96 is deleted",
            targets=("sm_100a", "sm_90a")),
    Variant("init_before_remote_arrive", 10, REMOTE,
            edit=(("  @%p1 fence.mbarrier_init.release.cluster;\n  barrier.cluster.arrive.release.aligned;\n",
                   "  barrier.cluster.arrive.relaxed.aligned;\n  @%p1 fence.mbarrier_init.release.cluster;\n"),),
            sides=("init", "remote"), missing="fence.mbarrier_init.release.cluster",
            launch=dict(block=(64, 1, 1), grid=(2, 1, 1), cluster=(2, 1, 1)),
            args=lambda: [np.zeros(128, np.uint32)],
            want=lambda a: {0: np.concatenate([np.arange(64, dtype=np.uint32) + 11, np.zeros(64, np.uint32)])},
            what="fence.mbarrier_init moves after the cluster barrier's arrive, which becomes .relaxed (a .release "
                 "arrive would itself publish the init: PTX ISA 9.1 §9.7.13.4, fence.mbarrier_init is the "
                 ".op_restrict form of a release)",
            targets=("sm_100a", "sm_90a")),
    Variant("ld_regs_before_wait", 19, LDREGS,
            edit=(("  tcgen05.wait::ld.sync.aligned;\n", ""),
                  ("   // @use\n", "   // @use\n  tcgen05.wait::ld.sync.aligned;\n")),
            sides=("ld", "use"), missing="tcgen05.wait::ld", lint=True,
            launch=dict(block=(32, 1, 1)), args=lambda: [np.zeros(32, np.uint32)],
            want=lambda a: {0: (lambda w: w[0] + w[3] + w[2])(_tmem_words(None))},
            what="tcgen05.wait::ld moves after the first add that reads the loaded registers"),
    Variant("tensormap_without_acquire", 20, TMAP,
            edit=(("  fence.proxy.tensormap::generic.acquire.gpu [%rd3], 128;\n", ""),),
            sides=("write", "read"), missing="fence.proxy.tensormap::generic.acquire",
            launch=dict(block=(64, 1, 1)), args=_tmap_args,
            want=lambda a: {0: a[2].copy()},
            what="warp 0's fence.proxy.tensormap::generic.acquire before the TMA load through the edited map is "
                 "deleted",
            targets=("sm_100a", "sm_90a")),
    Variant("stale_parity_test_wait", 1, STALE,
            edit=(("  xor.b32 %r9, %r9, 1;\n", ""),), sides=("wait", "expect"), missing="parity",
            launch=dict(block=(64, 1, 1)),
            args=lambda: [np.zeros(128, np.uint32), np.arange(128, dtype=np.uint32) * 3 + 2],
            want=lambda a: {0: a[1] + np.uint32(1)},
            what="the consumer's phase flip (xor.b32 %r9, %r9, 1) after each round is deleted: from the second "
                 "round its test_wait passes on the phase it already consumed",
            targets=("sm_100a", "sm_90a")),
)
