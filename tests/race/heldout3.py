"""A third, independent round of held-out-style variants (issue 15): one correct/buggy pair for EACH of the 20
bug classes, written apart from the zoo (tests/zoo) and from the second variants (tests/race/heldout_variants.py):
other warp roles and counts, other instruction forms (standalone mbarrier.expect_tx, arrive-state + test_wait,
try_wait with a suspend-time hint and .acquire.cta, tensor-map stores and multicast loads, tcgen05.st, wgmma with TMA
on sm_90a, tensormap.cp_fenceproxy from shared memory, split barrier.cluster arrive/wait), predicated and looped
forms, and other edits (a parity formula, a wait_group depth, a moved arrive, a moved acquire, a reused barrier id,
a register that holds the init count).

Each :class:`tests.race.heldout_variants.Variant` gives the correct kernel (``// @name`` markers on the lines a
finding must name), the edit (``(old, new)`` text replacements, at most two PTX lines), the class, the markers of
both sides, the missing edge the finding must name, the launch and the expected output of the correct twin
(computed here with numpy from the inputs, never from tcsim's output).  Run by tests/race/test_heldout3.py."""
from __future__ import annotations

import numpy as np

from tests.ptx_frame import kernel
from tests.race.heldout_variants import Variant

BOTH = ("sm_100a", "sm_90a")


def _bf16(a):
    import ml_dtypes
    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _f16(a):
    return np.asarray(a, dtype=np.float32).astype(np.float16)


# ------------------------------------------------------------------ a two-stage ring (classes 1 and 9)
# warp 1's elected lane produces six 128-byte rounds into a 2-stage ring (full[s] / empty[s], count 1); warp 0
# consumes: stage i & 1, full parity (i >> 1) & 1, waits with try_wait.parity.acquire.cta and a suspend-time hint,
# releases with an elected arrive.release.cta; the producer waits empty[s] with parity ((i >> 1) + 1) & 1 and fences
# the async proxy (fence.proxy.async after its acquire: the consumers' generic reads before the refill)
RING2 = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mov.u32 %r4, ring;
  mov.u32 %r5, full;
  mov.u32 %r6, empty;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
  setp.eq.u32 %p1, %r1, 32;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r5+8], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r6], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r6+8], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  mov.u32 %r10, 0;
  setp.eq.u32 %p2, %r2, 1;
  @%p2 bra PRODUCER;
CONSUME:
  and.b32 %r11, %r10, 1;
  shr.u32 %r12, %r10, 1;
  and.b32 %r12, %r12, 1;
  shl.b32 %r13, %r11, 3;
  add.u32 %r14, %r5, %r13;
  add.u32 %r15, %r6, %r13;
WAITF:
  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p3, [%r14], %r12, 1000000;   // @wait
  @!%p3 bra WAITF;
  shl.b32 %r16, %r11, 7;
  add.u32 %r16, %r4, %r16;
  shl.b32 %r17, %r3, 2;
  add.u32 %r16, %r16, %r17;
  ld.shared.u32 %r18, [%r16];   // @read
  add.u32 %r18, %r18, 1;
  shl.b32 %r19, %r10, 5;
  add.u32 %r19, %r19, %r3;
  mul.wide.u32 %rd3, %r19, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r18;
  bar.warp.sync -1;
  elect.sync %r20|%p4, -1;
  @%p4 mbarrier.arrive.release.cta.shared::cta.b64 _, [%r15];
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p5, %r10, 6;
  @%p5 bra CONSUME;
  bra DONE;
PRODUCER:
  elect.sync %r20|%p4, -1;
  @!%p4 bra DONE;
PRODUCE:
  and.b32 %r11, %r10, 1;
  shl.b32 %r13, %r11, 3;
  add.u32 %r14, %r5, %r13;
  add.u32 %r15, %r6, %r13;
  setp.lt.u32 %p6, %r10, 2;
  @%p6 bra FILL;
  shr.u32 %r12, %r10, 1;
  add.u32 %r12, %r12, 1;
  and.b32 %r12, %r12, 1;
WAITE:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r15], %r12;
  @!%p3 bra WAITE;
  fence.proxy.async.shared::cta;
FILL:
  shl.b32 %r16, %r11, 7;
  add.u32 %r16, %r4, %r16;
  mul.wide.u32 %rd5, %r10, 128;
  add.u64 %rd6, %rd1, %rd5;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r14], 128;   // @expect
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r16], [%rd6], 128, [%r14];   // @copy
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p5, %r10, 6;
  @%p5 bra PRODUCE;
DONE:
  ret;""", params=", .param .u64 src",
               shared="  .shared .align 128 .b8 ring[256]; .shared .align 8 .b64 full[2]; .shared .align 8 .b64 empty[2];")


def _ring2_args():
    return [np.zeros(192, np.uint32), (np.arange(192, dtype=np.uint32) * 2654435761) & np.uint32(0xFFFFFF)]


# ------------------------------------------------ class 9: consumers hand the stage back through a counter flag
# thread 0 loads 256 bytes (TMA, full barrier); warps 1-2 (64 threads) read their word, store it and count
# themselves on `done` with red.release; thread 0 spins on ld.acquire until 64, fences the async proxy (the
# consumers' generic reads before its refill) and reloads the stage with the next 256 bytes
FLAG9 = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r3, buf;
  mov.u32 %r4, fullb;
  mov.u32 %r5, done;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  @%p1 st.shared.u32 [%r5], 0;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra CONSUMERS;
  @!%p1 bra END;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 256;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd1], 256, [%r4];
SPIN:
  ld.acquire.cta.shared::cta.u32 %r6, [%r5];
  setp.lt.u32 %p3, %r6, 64;
  @%p3 bra SPIN;
  fence.proxy.async.shared::cta;
  add.u64 %rd3, %rd1, 256;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 256;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd3], 256, [%r4];   // @write
  bra END;
CONSUMERS:
  sub.u32 %r7, %r1, 32;
  shl.b32 %r8, %r7, 2;
  add.u32 %r8, %r3, %r8;
  mul.wide.u32 %rd4, %r7, 4;
  add.u64 %rd5, %rd2, %rd4;
W0:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra W0;
  ld.shared.u32 %r9, [%r8];   // @read
  st.global.u32 [%rd5], %r9;
  red.release.cta.shared::cta.add.u32 [%r5], 1;
W1:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 1;
  @!%p4 bra W1;
  ld.shared.u32 %r9, [%r8];
  st.global.u32 [%rd5+256], %r9;
END:
  ret;""", params=", .param .u64 src",
                shared="  .shared .align 128 .b8 buf[256]; .shared .align 8 .b64 fullb; .shared .align 4 .b32 done;")


# ------------------------------------------------------------ class 2: the leader releases before its siblings
# warp 0 (thread 0) produces two 384-byte rounds into one stage; warps 1-3 (96 threads) read it, meet at named
# barrier 2 (96 threads) and thread 32 releases the stage with arrive.release.cta
LEADER3 = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r3, stage;
  mov.u32 %r4, fullb;
  mov.u32 %r5, emptyb;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra CONSUMERS;
  @!%p1 bra END;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 384;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd1], 384, [%r4];
WAIT_EMPTY:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r5], 0;
  @!%p3 bra WAIT_EMPTY;
  fence.proxy.async.shared::cta;
  add.u64 %rd3, %rd1, 384;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 384;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd3], 384, [%r4];   // @refill
  bra END;
CONSUMERS:
  sub.u32 %r6, %r1, 32;
  shl.b32 %r7, %r6, 2;
  add.u32 %r7, %r3, %r7;
  mul.wide.u32 %rd4, %r6, 4;
  add.u64 %rd5, %rd2, %rd4;
  setp.eq.u32 %p4, %r1, 32;
  mov.u32 %r9, 0;
ROUND:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r4], %r9;
  @!%p3 bra ROUND;
  ld.shared.u32 %r8, [%r7];   // @read
  add.u32 %r8, %r8, %r9;
  st.global.u32 [%rd5], %r8;
  add.u64 %rd5, %rd5, 384;
  setp.ne.u32 %p5, %r9, 0;
  @%p5 bra END;
  bar.sync 2, 96;
  @%p4 mbarrier.arrive.release.cta.shared::cta.b64 _, [%r5];
  mov.u32 %r9, 1;
  bra ROUND;
END:
  ret;""", params=", .param .u64 src",
                 shared="  .shared .align 128 .b8 stage[384]; .shared .align 8 .b64 fullb; .shared .align 8 .b64 emptyb;")


def _leader3_want(a):
    src = a[1]
    return {0: np.concatenate([src[:96], src[96:] + np.uint32(1)])}


# ----------------------------------------------- two 16 x 16 f32 tensor-map tiles behind one barrier (3, 18)
# thread 0 announces the bytes with a standalone mbarrier.expect_tx and issues two 2-D tensor loads; every lane of
# the warp arrives (count 32), keeps the returned state and polls mbarrier.test_wait with it; out = A + B
TILES2 = kernel("""  mov.u32 %r1, %tid.x;
  mov.u32 %r2, tiles;
  add.u32 %r3, %r2, 1024;
  mov.u32 %r4, bar;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.b64 %rd2, mapA;
  cvta.param.u64 %rd2, %rd2;
  mov.b64 %rd3, mapB;
  cvta.param.u64 %rd3, %rd3;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 32;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  @!%p1 bra ARRIVE;
  mov.u32 %r5, 0;
  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r4], 2048;   // @expect
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r5, %r5}], [%r4];   // @copyA
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd3, {%r5, %r5}], [%r4];   // @copyB
ARRIVE:
  mbarrier.arrive.shared::cta.b64 %rd4, [%r4];
WAIT:
  mbarrier.test_wait.shared::cta.b64 %p2, [%r4], %rd4;
  @!%p2 bra WAIT;
  shl.b32 %r6, %r1, 5;
  add.u32 %r7, %r2, %r6;
  add.u32 %r8, %r3, %r6;
  ld.shared.v4.f32 {%f0, %f1, %f2, %f3}, [%r7];
  ld.shared.v4.f32 {%f4, %f5, %f6, %f7}, [%r7+16];
  ld.shared.v4.f32 {%f8, %f9, %f10, %f11}, [%r8];
  ld.shared.v4.f32 {%f12, %f13, %f14, %f15}, [%r8+16];   // @use
  add.f32 %f0, %f0, %f8;
  add.f32 %f1, %f1, %f9;
  add.f32 %f2, %f2, %f10;
  add.f32 %f3, %f3, %f11;
  add.f32 %f4, %f4, %f12;
  add.f32 %f5, %f5, %f13;
  add.f32 %f6, %f6, %f14;
  add.f32 %f7, %f7, %f15;
  cvt.u64.u32 %rd5, %r6;
  add.u64 %rd6, %rd1, %rd5;
  st.global.v4.f32 [%rd6], {%f0, %f1, %f2, %f3};
  st.global.v4.f32 [%rd6+16], {%f4, %f5, %f6, %f7};
  ret;""", params=", .param .u64 A, .param .u64 B, .param .align 64 .b8 mapA[128], .param .align 64 .b8 mapB[128]",
                shared="  .shared .align 128 .b8 tiles[2176]; .shared .align 8 .b64 bar;")


def _tiles2_args():
    from tcsim.isa.tensormap import TensorMap
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    return [np.zeros((16, 16), np.float32), a, b, TensorMap.tiled(a, box=(16, 16)), TensorMap.tiled(b, box=(16, 16))]


# ---------------------------------------------------------------- class 4: the init count held in a register
# warps 0 and 1 write one word each (st.shared) and every one of their 64 threads arrives (release) on `done`,
# initialised with the count in %r5 (64); warp 2 waits (acquire) and adds the two halves
COUNT = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r3, buf;
  mov.u32 %r4, done;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  setp.eq.u32 %p1, %r1, 64;
  mov.u32 %r5, 64;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], %r5;   // @init
  bar.sync 0;
  setp.eq.u32 %p2, %r2, 2;
  @%p2 bra CONSUMER;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.u32 %r6, [%rd4];
  mul.lo.u32 %r6, %r6, 3;
  shl.b32 %r7, %r1, 2;
  add.u32 %r7, %r3, %r7;
  st.shared.u32 [%r7], %r6;   // @write
  mbarrier.arrive.release.cta.shared::cta.b64 _, [%r4];   // @arrive
  bra END;
CONSUMER:
  sub.u32 %r8, %r1, 64;
WAIT:
  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p3, [%r4], 0;
  @!%p3 bra WAIT;
  shl.b32 %r9, %r8, 2;
  add.u32 %r9, %r3, %r9;
  ld.shared.u32 %r10, [%r9];
  ld.shared.u32 %r11, [%r9+128];   // @read
  add.u32 %r10, %r10, %r11;
  mul.wide.u32 %rd5, %r8, 4;
  add.u64 %rd6, %rd2, %rd5;
  st.global.u32 [%rd6], %r10;
END:
  ret;""", params=", .param .u64 src", shared="  .shared .align 16 .b8 buf[256]; .shared .align 8 .b64 done;")


# ---------------------------------------------------- class 5: a tensor-map store's source, wait_group.read depth
# two 16 x 16 f32 tiles staged through one SMEM buffer: 64 threads write 16 bytes each, fence, bar.sync; thread 0
# stores the tile with cp.async.bulk.tensor.2d (bulk_group), commits and waits until 0 groups are still reading
TSTORE = kernel("""  mov.u32 %r1, %tid.x;
  mov.u32 %r2, sOut;
  shl.b32 %r3, %r1, 4;
  add.u32 %r4, %r2, %r3;
  ld.param.u64 %rd1, [src];
  cvta.to.global.u64 %rd1, %rd1;
  mov.b64 %rd2, omap;
  cvta.param.u64 %rd2, %rd2;
  cvt.u64.u32 %rd3, %r3;
  add.u64 %rd4, %rd1, %rd3;
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r10, 0;
  mov.u32 %r11, 0;
TILE:
  ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd4];
  add.f32 %f0, %f0, %f0;
  add.f32 %f1, %f1, %f1;
  add.f32 %f2, %f2, %f2;
  add.f32 %f3, %f3, %f3;
  st.shared.v4.f32 [%r4], {%f0, %f1, %f2, %f3};   // @write
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @%p1 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd2, {%r11, %r10}], [%r2];   // @read
  @%p1 cp.async.bulk.commit_group;
  @%p1 cp.async.bulk.wait_group.read 0;
  bar.sync 0;
  add.u64 %rd4, %rd4, 1024;
  add.u32 %r10, %r10, 16;
  setp.lt.u32 %p2, %r10, 32;
  @%p2 bra TILE;
  @%p1 cp.async.bulk.wait_group 0;
  ret;""", params=", .param .u64 src, .param .align 64 .b8 omap[128]",
                shared="  .shared .align 128 .b8 sOut[1024];")


def _tstore_args():
    from tcsim.isa.tensormap import TensorMap
    out = np.zeros((32, 16), np.float32)
    src = np.random.default_rng(5).standard_normal((32, 16)).astype(np.float32)
    return [out, src, TensorMap.tiled(out, box=(16, 16))]


# ------------------------------------------------------- class 6: tcgen05.st over columns a tcgen05.ld still reads
TMEM6 = kernel("""  mov.u32 %r1, %tid.x;
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
  tcgen05.st.sync.aligned.32x32b.x2.b32 [%r3], {%r10, %r11};
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r20, %r21}, [%r3];   // @ld
  tcgen05.wait::ld.sync.aligned;
  add.u32 %r12, %r10, 100;
  add.u32 %r13, %r11, 100;
  tcgen05.st.sync.aligned.32x32b.x2.b32 [%r3], {%r12, %r13};   // @st
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r22, %r23}, [%r3];
  tcgen05.wait::ld.sync.aligned;
  mul.wide.u32 %rd2, %r1, 16;
  add.u64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r20, %r21, %r22, %r23};
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;
  ret;""", shared="  .shared .align 4 .b32 taddr;")


def _tmem6_want(a):
    t = np.arange(32, dtype=np.uint32) * 3
    return {0: np.stack([t, t + 1, t + 100, t + 101], axis=1).ravel()}


# --------------------------------------------- warp 1 allocates, warp 0 uses columns 32-63 (classes 7 and 13)
ALLOC2 = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r9, %r1, 31;
  mov.u32 %r4, taddr;
  ld.param.u64 %rd1, [out];
  setp.ne.u32 %p2, %r2, 1;
  @%p2 bra ALLOCATED;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r4], 64;   // @alloc
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
ALLOCATED:
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  ld.shared.u32 %r3, [%r4];
  @!%p2 bra FREE;
  add.u32 %r5, %r3, 32;
  mul.lo.u32 %r10, %r9, 5;
  add.u32 %r11, %r10, 2;
  tcgen05.st.sync.aligned.32x32b.x2.b32 [%r5], {%r10, %r11};   // @st
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r20, %r21}, [%r5];
  tcgen05.wait::ld.sync.aligned;
  mul.wide.u32 %rd2, %r9, 8;
  add.u64 %rd3, %rd1, %rd2;
  st.global.v2.u32 [%rd3], {%r20, %r21};
FREE:
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  @%p2 bra END;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 64;   // @free
END:
  ret;""", shared="  .shared .align 4 .b32 taddr;")


def _alloc2_want(a):
    t = np.arange(32, dtype=np.uint32) * 5
    return {0: np.stack([t, t + 2], axis=1).ravel()}


# ------------------------------------------------------ sm_90a: TMA + wgmma m64n8k16 (classes 8 and 19)
# thread 0 loads A (64 x 64 f16) and B^T (8 x 64 f16) with 128B-swizzled tensor maps; the warpgroup (128 threads)
# waits, negates A in place (xor of the f16 sign bits through the generic proxy), fences the async proxy, meets at
# named barrier 1 and runs four wgmma.mma_async m64n8k16 (K steps of 16: +32 bytes), then stores D = -(A @ B^T)
WG_BODY = """  mov.u32 %r1, %tid.x;
  mov.u32 %r2, sA;
  mov.u32 %r3, sB;
  mov.u32 %r4, bar;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.b64 %rd2, mapA;
  cvta.param.u64 %rd2, %rd2;
  mov.b64 %rd3, mapB;
  cvta.param.u64 %rd3, %rd3;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  mov.u32 %r5, 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 9216;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r5, %r5}], [%r4];
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd3, {%r5, %r5}], [%r4];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], 0;
  @!%p2 bra WAIT;
  shl.b32 %r6, %r1, 6;
  add.u32 %r6, %r2, %r6;
  mov.u32 %r7, 0;
NEG:
  ld.shared.v4.b32 {%r8, %r9, %r10, %r11}, [%r6];
  xor.b32 %r8, %r8, -2147450880;
  xor.b32 %r9, %r9, -2147450880;
  xor.b32 %r10, %r10, -2147450880;
  xor.b32 %r11, %r11, -2147450880;
  st.shared.v4.b32 [%r6], {%r8, %r9, %r10, %r11};   // @write
  add.u32 %r6, %r6, 16;
  add.u32 %r7, %r7, 1;
  setp.lt.u32 %p3, %r7, 4;
  @%p3 bra NEG;
  fence.proxy.async.shared::cta;
  bar.sync 1, 128;
  cvt.u64.u32 %rd4, %r2;
  and.b64 %rd4, %rd4, 262143;
  shr.u64 %rd4, %rd4, 4;
  or.b64 %rd4, %rd4, 4611686293305294848;
  cvt.u64.u32 %rd5, %r3;
  and.b64 %rd5, %rd5, 262143;
  shr.u64 %rd5, %rd5, 4;
  or.b64 %rd5, %rd5, 4611686293305294848;
  mov.f32 %f0, 0f00000000;
  mov.f32 %f1, 0f00000000;
  mov.f32 %f2, 0f00000000;
  mov.f32 %f3, 0f00000000;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd4, %rd5, 1, 1, 1, 0, 0;   // @read
  add.s64 %rd6, %rd4, 2;
  add.s64 %rd7, %rd5, 2;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd6, %rd7, 1, 1, 1, 0, 0;
  add.s64 %rd6, %rd4, 4;
  add.s64 %rd7, %rd5, 4;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd6, %rd7, 1, 1, 1, 0, 0;
  add.s64 %rd6, %rd4, 6;
  add.s64 %rd7, %rd5, 6;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd6, %rd7, 1, 1, 1, 0, 0;   // @mma
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  shr.u32 %r12, %r1, 5;
  and.b32 %r13, %r1, 31;
  shl.b32 %r14, %r12, 4;
  shr.u32 %r15, %r13, 2;
  add.u32 %r14, %r14, %r15;
  and.b32 %r16, %r13, 3;
  shl.b32 %r16, %r16, 1;
  shl.b32 %r17, %r14, 3;
  add.u32 %r17, %r17, %r16;
  mul.wide.u32 %rd8, %r17, 4;
  add.u64 %rd9, %rd1, %rd8;
  st.global.v2.f32 [%rd9], {%f0, %f1};   // @use
  st.global.v2.f32 [%rd9+256], {%f2, %f3};
  ret;"""
WGMMA = kernel(WG_BODY, target="sm_90a",
               params=", .param .u64 A, .param .u64 Bt, .param .align 64 .b8 mapA[128], .param .align 64 .b8 mapB[128]",
               shared="  .shared .align 1024 .b8 sA[8192]; .shared .align 1024 .b8 sB[1024]; .shared .align 8 .b64 bar;")


def _wgmma_args():
    from tcsim.isa.tensormap import TensorMap
    rng = np.random.default_rng(8)
    a = _f16(rng.integers(-3, 4, size=(64, 64)))
    bt = _f16(rng.integers(-3, 4, size=(8, 64)))
    return [np.zeros((64, 8), np.float32), a, bt, TensorMap.tiled(a, box=(64, 64), swizzle="128B"),
            TensorMap.tiled(bt, box=(8, 64), swizzle="128B")]


def _wgmma_want(a):
    return {0: (-(a[1].astype(np.float64) @ a[2].astype(np.float64).T)).astype(np.float32)}


# ---------------------------------------- class 10: a multicast copy into a barrier not yet initialised
# each CTA's thread 0 initialises its barrier and fences; the cluster barrier (arrive.release / wait.acquire) makes
# the inits visible; thread 0 of each CTA arms its barrier (expect_tx 256) and rank 0 multicasts 256 bytes
INIT10 = kernel("""  .reg .b16 %rs<4>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, buf;
  mov.u32 %r4, bar;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;   // @init
  @%p1 fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 256;
  setp.eq.u32 %p2, %r2, 0;
  and.pred %p3, %p1, %p2;
  mov.u16 %rs1, 3;
  @%p3 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r3], [%rd1], 256, [%r4], %rs1;   // @copy
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
  shl.b32 %r5, %r1, 2;
  add.u32 %r5, %r3, %r5;
  ld.shared.u32 %r6, [%r5];
  add.u32 %r6, %r6, %r2;
  shl.b32 %r7, %r2, 6;
  add.u32 %r7, %r7, %r1;
  mul.wide.u32 %rd3, %r7, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r6;
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  ret;""", params=", .param .u64 src", shared="  .shared .align 128 .b8 buf[256]; .shared .align 8 .b64 bar;")


def _init10_want(a):
    return {0: np.concatenate([a[1], a[1] + np.uint32(1)])}


# --------------------------------------------- class 11: thread 127 stores over a barrier thread 0 invalidated
# one TMA load through barrier `pool` (its first 8 bytes); after everyone read the tile (bar.sync), thread 0
# invalidates the barrier, bar.sync, and the 128 threads stage tile[127 - t] * 5 through `pool`
REUSE11 = kernel("""  mov.u32 %r1, %tid.x;
  mov.u32 %r2, pool;
  mov.u32 %r3, tile;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;   // @init
  bar.sync 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 512;
  @%p1 cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r3], [%rd1], 512, [%r2];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @!%p2 bra WAIT;
  shl.b32 %r4, %r1, 2;
  add.u32 %r5, %r3, %r4;
  ld.shared.u32 %r6, [%r5];
  mul.lo.u32 %r6, %r6, 5;
  bar.sync 0;
  @%p1 mbarrier.inval.shared::cta.b64 [%r2];   // @inval
  bar.sync 0;
  sub.u32 %r7, 127, %r1;
  shl.b32 %r7, %r7, 2;
  add.u32 %r7, %r2, %r7;
  st.shared.u32 [%r7], %r6;   // @store
  bar.sync 0;
  add.u32 %r8, %r2, %r4;
  ld.shared.u32 %r9, [%r8];
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r9;
  ret;""", params=", .param .u64 src", shared="  .shared .align 16 .b8 pool[512]; .shared .align 128 .b8 tile[512];")


# ------------------------------------------------- class 12: a TMA channel and a generic channel, bars[2]
# warp 0's elected lane loads X (256 bytes) on bars[0] (arrive.expect_tx); warp 1 writes Y with st.shared and its
# elected lane arrives (release) on bars[1] (address bars + 8 in %r6); warps 2 and 3 wait bars[0] then bars[1] and
# store X * Y
CHAN12 = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mov.u32 %r4, xs;
  mov.u32 %r7, ys;
  mov.u32 %r5, bars;
  add.u32 %r6, %r5, 8;
  ld.param.u64 %rd1, [X];
  ld.param.u64 %rd2, [Y];
  ld.param.u64 %rd3, [out];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r5+8], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  setp.gt.u32 %p2, %r2, 1;
  @%p2 bra CONSUMER;
  setp.eq.u32 %p3, %r2, 1;
  @%p3 bra GENERIC;
  elect.sync %r8|%p4, -1;
  @%p4 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], 256;   // @expect
  @%p4 cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r4], [%rd1], 256, [%r5];
  bra END;
GENERIC:
  shl.b32 %r9, %r3, 3;
  cvt.u64.u32 %rd4, %r9;
  add.u64 %rd5, %rd2, %rd4;
  ld.global.v2.f32 {%f0, %f1}, [%rd5];
  add.u32 %r10, %r7, %r9;
  st.shared.v2.f32 [%r10], {%f0, %f1};
  bar.warp.sync -1;
  elect.sync %r8|%p4, -1;
  @%p4 mbarrier.arrive.release.cta.shared::cta.b64 _, [%r6];   // @arrive
  bra END;
CONSUMER:
  sub.u32 %r11, %r1, 64;
  shl.b32 %r12, %r11, 2;
WAITX:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r5], 0;
  @!%p5 bra WAITX;
WAITY:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r5+8], 0;
  @!%p5 bra WAITY;
  add.u32 %r13, %r4, %r12;
  ld.shared.f32 %f2, [%r13];
  add.u32 %r14, %r7, %r12;
  ld.shared.f32 %f3, [%r14];
  mul.f32 %f2, %f2, %f3;
  cvt.u64.u32 %rd6, %r12;
  add.u64 %rd7, %rd3, %rd6;
  st.global.f32 [%rd7], %f2;
END:
  ret;""", params=", .param .u64 X, .param .u64 Y",
                 shared="  .shared .align 128 .b8 xs[256]; .shared .align 16 .b8 ys[256]; .shared .align 8 .b64 bars[2];")


def _chan12_args():
    rng = np.random.default_rng(12)
    return [np.zeros(64, np.float32), rng.standard_normal(64).astype(np.float32),
            rng.standard_normal(64).astype(np.float32)]


# ----------------------------------------- class 14: the trailing cluster arrive is issued before the remote read
# each CTA fills its table (64 words: src[t] * (rank + 2)); cluster barrier; each thread reads the peer's word with
# ld.shared::cluster, then the trailing barrier.cluster.arrive.release (split from its wait) keeps the peer alive
EXIT14 = kernel("""  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, tab;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.u32 %r4, [%rd4];
  add.u32 %r5, %r2, 2;
  mul.lo.u32 %r4, %r4, %r5;
  shl.b32 %r6, %r1, 2;
  add.u32 %r7, %r3, %r6;
  st.shared.u32 [%r7], %r4;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  xor.b32 %r8, %r2, 1;
  mapa.shared::cluster.u32 %r9, %r7, %r8;
  ld.shared::cluster.u32 %r10, [%r9];   // @remote
  barrier.cluster.arrive.release.aligned;
  shl.b32 %r11, %r2, 6;
  add.u32 %r11, %r11, %r1;
  mul.wide.u32 %rd5, %r11, 4;
  add.u64 %rd6, %rd2, %rd5;
  st.global.u32 [%rd6], %r10;
  barrier.cluster.wait.acquire.aligned;
  ret;   // @exit""", params=", .param .u64 src", shared="  .shared .align 16 .b8 tab[256];")


def _exit14_want(a):
    s = a[1]
    return {0: np.concatenate([s * np.uint32(3), s * np.uint32(2)])}


# ------------------------------------------ class 15: each CTA multicasts half of a tile, both expect all of it
# rank r loads rows 8r..8r+7 of a 16 x 16 f32 tensor (box 8 x 16, 512 bytes) and multicasts them (ctaMask 0b11) to
# buf + 512 r of both CTAs; each CTA's thread 0 arms its barrier with the bytes in %r9 (1024)
MCAST15 = kernel("""  .reg .b16 %rs<4>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, buf;
  mov.u32 %r4, bar;
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
  mov.b64 %rd1, map;
  cvta.param.u64 %rd1, %rd1;
  setp.eq.u32 %p1, %r1, 0;
  setp.eq.u32 %p2, %r2, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;   // @init
  @%p1 fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  mov.u32 %r9, 1024;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], %r9;   // @expect
  shl.b32 %r5, %r2, 9;
  add.u32 %r6, %r3, %r5;
  shl.b32 %r7, %r2, 3;
  mov.u32 %r8, 0;
  mov.u16 %rs1, 3;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r6], [%rd1, {%r8, %r7}], [%r4], %rs1;   // @copy
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
  shl.b32 %r10, %r1, 4;
  add.u32 %r11, %r3, %r10;
  ld.shared.v4.f32 {%f0, %f1, %f2, %f3}, [%r11];   // @read
  cvt.rn.f32.u32 %f4, %r2;
  add.f32 %f0, %f0, %f4;
  add.f32 %f1, %f1, %f4;
  add.f32 %f2, %f2, %f4;
  add.f32 %f3, %f3, %f4;
  shl.b32 %r12, %r2, 10;
  add.u32 %r12, %r12, %r10;
  cvt.u64.u32 %rd3, %r12;
  add.u64 %rd4, %rd2, %rd3;
  st.global.v4.f32 [%rd4], {%f0, %f1, %f2, %f3};
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  ret;""", params=", .param .u64 A, .param .align 64 .b8 map[128]",
                  shared="  .shared .align 128 .b8 buf[1024]; .shared .align 8 .b64 bar;")


def _mcast15_args():
    from tcsim.isa.tensormap import TensorMap
    a = np.random.default_rng(15).standard_normal((16, 16)).astype(np.float32)
    return [np.zeros(512, np.float32), a, TensorMap.tiled(a, box=(8, 16))]


def _mcast15_want(a):
    x = a[1].ravel()
    return {0: np.concatenate([x, (x + np.float32(1)).astype(np.float32)])}


# ------------------------------------------------------ class 16: two unrelated groups on one named barrier id
# group P (warps 0, 1) and group C (warps 2, 3) each hand a buffer from its writer warp to its reader warp with
# bar.arrive / bar.sync over 64 threads; P's writer first sums eight words from global (a longer path), C's writes
# at once; P uses barrier 1, C barrier 2
NAMED16 = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  shl.b32 %r4, %r3, 2;
  mov.u32 %r5, pbuf;
  mov.u32 %r6, cbuf;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  setp.eq.u32 %p1, %r2, 0;
  @%p1 bra PWRITE;
  setp.eq.u32 %p2, %r2, 1;
  @%p2 bra PREAD;
  setp.eq.u32 %p3, %r2, 2;
  @%p3 bra CWRITE;
  bar.sync 2, 64;   // @cbar
  add.u32 %r7, %r6, %r4;
  ld.shared.u32 %r8, [%r7];   // @cread
  mul.wide.u32 %rd3, %r3, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4+128], %r8;
  bra END;
CWRITE:
  add.u32 %r9, %r3, 1000;
  add.u32 %r7, %r6, %r4;
  st.shared.u32 [%r7], %r9;   // @cwrite
  bar.arrive 2, 64;   // @carrive
  bra END;
PWRITE:
  mov.u32 %r10, 0;
  mov.u32 %r11, 0;
  mul.wide.u32 %rd5, %r3, 4;
  add.u64 %rd6, %rd1, %rd5;
SUM:
  ld.global.u32 %r12, [%rd6];
  add.u32 %r10, %r10, %r12;
  add.u64 %rd6, %rd6, 128;
  add.u32 %r11, %r11, 1;
  setp.lt.u32 %p4, %r11, 8;
  @%p4 bra SUM;
  add.u32 %r7, %r5, %r4;
  st.shared.u32 [%r7], %r10;   // @pwrite
  bar.arrive 1, 64;
  bra END;
PREAD:
  bar.sync 1, 64;   // @pbar
  add.u32 %r7, %r5, %r4;
  ld.shared.u32 %r8, [%r7];   // @pread
  mul.wide.u32 %rd3, %r3, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r8;
END:
  ret;""", params=", .param .u64 src", shared="  .shared .align 16 .b8 pbuf[128]; .shared .align 16 .b8 cbuf[128];")


def _named16_want(a):
    s = a[1].reshape(8, 32).astype(np.uint64).sum(axis=0) & 0xFFFFFFFF
    return {0: np.concatenate([s.astype(np.uint32), np.arange(32, dtype=np.uint32) + 1000])}


# ---------------------------------------------- class 17: a tcgen05 GEMM tile whose commit is predicated on elect
# 128 threads; warp 3 allocates 32 TMEM columns; thread 0 loads A (128 x 16 bf16) and B^T (16 x 16 bf16) with
# 32B-swizzled maps on full_bar; warp 2's elected lane (predicated, not branched around) waits full_bar, fences,
# issues tcgen05.mma and tcgen05.commit to mma_bar; warps 0-3 wait mma_bar and read their 32 TMEM lanes
MMA17 = kernel("""  .reg .pred %q<4>;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r3, sA;
  mov.u32 %r4, sB;
  mov.u32 %r5, full_bar;
  mov.u32 %r6, mma_bar;
  mov.u32 %r7, tslot;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.b64 %rd2, mapA;
  cvta.param.u64 %rd2, %rd2;
  mov.b64 %rd3, mapB;
  cvta.param.u64 %rd3, %rd3;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r6], 1;   // @init
  @%p1 fence.mbarrier_init.release.cluster;
  setp.eq.u32 %p2, %r2, 3;
  @!%p2 bra ALLOCATED;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r7], 32;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
ALLOCATED:
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  ld.shared.u32 %r8, [%r7];
  mov.u32 %r9, 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], 4608;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd2, {%r9, %r9}], [%r5];
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd3, {%r9, %r9}], [%r5];
  setp.ne.u32 %p3, %r2, 2;
  @%p3 bra ISSUED;
  elect.sync %r10|%q1, -1;
WAITF:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r5], 0;
  @!%p4 bra WAITF;
  tcgen05.fence::after_thread_sync;
  and.b32 %r11, %r3, 262143;
  shr.u32 %r11, %r11, 4;
  or.b32 %r11, %r11, 65536;
  mov.b64 %rd4, {%r11, 0xC0004010};
  and.b32 %r12, %r4, 262143;
  shr.u32 %r12, %r12, 4;
  or.b32 %r12, %r12, 65536;
  mov.b64 %rd5, {%r12, 0xC0004010};
  mov.u32 %r13, 0x08040490;
  setp.ne.u32 %q2, %r13, %r13;
  @%q1 tcgen05.mma.cta_group::1.kind::f16 [%r8], %rd4, %rd5, %r13, %q2;
  @%q1 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r6];   // @commit
ISSUED:
  shl.b32 %r14, %r2, 21;
  add.u32 %r14, %r14, %r8;
  add.u32 %r15, %r14, 8;
WAITM:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r6], 0;
  @!%p5 bra WAITM;
  tcgen05.fence::after_thread_sync;
  tcgen05.ld.sync.aligned.32x32b.x8.b32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, [%r14];
  tcgen05.ld.sync.aligned.32x32b.x8.b32 {%f8, %f9, %f10, %f11, %f12, %f13, %f14, %f15}, [%r15];
  tcgen05.wait::ld.sync.aligned;
  mul.wide.u32 %rd6, %r1, 64;
  add.u64 %rd7, %rd1, %rd6;
  st.global.v4.f32 [%rd7], {%f0, %f1, %f2, %f3};
  st.global.v4.f32 [%rd7+16], {%f4, %f5, %f6, %f7};
  st.global.v4.f32 [%rd7+32], {%f8, %f9, %f10, %f11};
  st.global.v4.f32 [%rd7+48], {%f12, %f13, %f14, %f15};
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  @!%p2 bra END;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r8, 32;
END:
  ret;""", params=", .param .u64 A, .param .u64 Bt, .param .align 64 .b8 mapA[128], .param .align 64 .b8 mapB[128]",
                shared="  .shared .align 1024 .b8 sA[4096]; .shared .align 1024 .b8 sB[512]; "
                       ".shared .align 8 .b64 full_bar; .shared .align 8 .b64 mma_bar; .shared .align 4 .b32 tslot;")


def _mma17_args():
    from tcsim.isa.tensormap import TensorMap
    rng = np.random.default_rng(17)
    a = _bf16(rng.integers(-4, 5, size=(128, 16)))
    bt = _bf16(rng.integers(-4, 5, size=(16, 16)))
    return [np.zeros((128, 16), np.float32), a, bt, TensorMap.tiled(a, box=(128, 16), swizzle="32B"),
            TensorMap.tiled(bt, box=(16, 16), swizzle="32B")]


def _mma_want(a):
    return {0: (a[1].astype(np.float64) @ a[2].astype(np.float64).T).astype(np.float32)}


# ------------------------------------- class 20: a map built in SMEM, published with tensormap.cp_fenceproxy
# warp 1 copies the parameter map into SMEM, lane 0 replaces its global address (tensormap.replace ... shared::cta),
# and the warp copies it to the global slot with tensormap.cp_fenceproxy (release at .gpu); bar.sync; thread 0
# acquires the slot (fence.proxy.tensormap::generic.acquire) and loads a 16 x 16 f32 tile through it
TMAP20 = kernel("""  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mov.u32 %r4, tile;
  mov.u32 %r5, fullb;
  mov.u32 %r6, smap;
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
  shl.b32 %r7, %r3, 2;
  cvt.u64.u32 %rd5, %r7;
  add.u64 %rd6, %rd4, %rd5;
  ld.u32 %r8, [%rd6];
  add.u32 %r9, %r6, %r7;
  st.shared.u32 [%r9], %r8;
  bar.warp.sync -1;
  setp.eq.u32 %p3, %r3, 0;
  @%p3 tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%r6], %rd1;
  bar.warp.sync -1;
  tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd3], [%r6], 128;   // @write
MET:
  bar.sync 0;
  @%p1 fence.proxy.tensormap::generic.acquire.gpu [%rd3], 128;
  @!%p1 bra LOADED;
  mov.u32 %r10, 0;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], 1024;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd3, {%r10, %r10}], [%r5];   // @read
LOADED:
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r5], 0;
  @!%p4 bra WAIT;
  shl.b32 %r11, %r1, 4;
  add.u32 %r12, %r4, %r11;
  ld.shared.v4.f32 {%f0, %f1, %f2, %f3}, [%r12];
  cvt.u64.u32 %rd7, %r11;
  add.u64 %rd8, %rd2, %rd7;
  st.global.v4.f32 [%rd8], {%f0, %f1, %f2, %f3};
  ret;""", params=", .param .u64 A, .param .u64 B, .param .u64 slot, .param .align 64 .b8 tmap[128]",
                 shared="  .shared .align 128 .b8 tile[1024]; .shared .align 128 .b8 smap[128]; "
                        ".shared .align 8 .b64 fullb;")


def _tmap20_args():
    from tcsim.isa.tensormap import TensorMap
    rng = np.random.default_rng(20)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    return [np.zeros((16, 16), np.float32), a, b, np.zeros(128, np.uint8), TensorMap.tiled(a, box=(16, 16))]


def _u32(n, mul, add, out=None):
    return lambda: [np.zeros(n if out is None else out, np.uint32),
                    np.arange(n, dtype=np.uint32) * np.uint32(mul) + np.uint32(add)]


VARIANTS3 = (
    Variant("ring2_parity_formula", 1, RING2,
            edit=(("  shr.u32 %r12, %r10, 1;\n  and.b32 %r12, %r12, 1;\n  shl.b32 %r13",
                   "  and.b32 %r12, %r10, 1;\n  shl.b32 %r13"),),
            sides=("wait",), missing="parity",
            launch=dict(block=(64, 1, 1)), args=_ring2_args, want=lambda a: {0: a[1] + np.uint32(1)},
            what="the consumer's full[s] parity is i & 1 instead of (i >> 1) & 1 (a 2-stage ring flips each "
                 "barrier's phase every second round): round 1 waits parity 1 on full[1], whose phase 0 has not "
                 "completed, and passes at once",
            targets=BOTH),
    Variant("leader_arrives_before_named_barrier", 2, LEADER3,
            edit=(("  bar.sync 2, 96;\n  @%p4 mbarrier.arrive.release.cta.shared::cta.b64 _, [%r5];\n",
                   "  @%p4 mbarrier.arrive.release.cta.shared::cta.b64 _, [%r5];\n  bar.sync 2, 96;\n"),),
            sides=("read", "refill"), missing="bar.sync",
            launch=dict(block=(128, 1, 1)), args=_u32(192, 2246822519, 7), want=_leader3_want,
            what="thread 32's release arrive moves above the consumers' bar.sync 2, 96: warps 2 and 3 may still "
                 "read the stage when the producer refills it",
            targets=BOTH),
    Variant("standalone_expect_tx_low", 3, TILES2,
            edit=(("[%r4], 2048;   // @expect", "[%r4], 1024;   // @expect"),),
            sides=("expect", "copyB"), missing="expect_tx",
            launch=dict(block=(32, 1, 1)), args=_tiles2_args,
            want=lambda a: {0: (a[1] + a[2]).astype(np.float32)},
            what="the standalone mbarrier.expect_tx announces 1024 bytes; the two tensor loads deliver 2048",
            targets=BOTH),
    Variant("standalone_expect_tx_high_polled", 3, TILES2,
            edit=(("[%r4], 2048;   // @expect", "[%r4], 3072;   // @expect"),),
            sides=("expect", "copyA"), missing="expect_tx",
            launch=dict(block=(32, 1, 1)), args=_tiles2_args,
            want=lambda a: {0: (a[1] + a[2]).astype(np.float32)},
            what="the standalone mbarrier.expect_tx announces 3072 bytes; the two tensor loads deliver 2048: the "
                 "phase never completes and the warp polls its mbarrier.test_wait (state form) for ever (a livelock "
                 "in tcsim, a hang on the GPU)",
            targets=BOTH),
    Variant("init_count_register", 4, COUNT,
            edit=(("  mov.u32 %r5, 64;\n", "  mov.u32 %r5, 32;\n"),),
            sides=("init", "arrive"), missing="count",
            launch=dict(block=(96, 1, 1)), args=_u32(64, 40503, 11, out=32),
            want=lambda a: {0: a[1][:32] * np.uint32(3) + a[1][32:] * np.uint32(3)},
            what="the init count register holds 32; 64 threads arrive per round, so phase 0 completes when one "
                 "writer warp has arrived",
            targets=BOTH),
    Variant("tensor_store_wait_depth", 5, TSTORE,
            edit=(("  @%p1 cp.async.bulk.wait_group.read 0;\n", "  @%p1 cp.async.bulk.wait_group.read 1;\n"),),
            sides=("read", "write"), missing="wait_group.read",
            launch=dict(block=(64, 1, 1)), args=_tstore_args,
            want=lambda a: {0: (a[1] * np.float32(2)).astype(np.float32)},
            what="thread 0 waits with cp.async.bulk.wait_group.read 1 (one group may still read) instead of 0: "
                 "the next tile's st.shared overwrites sOut while the tensor store of the first tile reads it",
            targets=BOTH),
    Variant("tcgen05_st_over_pending_ld", 6, TMEM6,
            edit=(("  tcgen05.wait::ld.sync.aligned;\n  add.u32 %r12", "  add.u32 %r12"),),
            sides=("ld", "st"), missing="tcgen05.wait::ld",
            launch=dict(block=(32, 1, 1)), args=lambda: [np.zeros(128, np.uint32)], want=_tmem6_want,
            what="the tcgen05.wait::ld between the first tcgen05.ld and the tcgen05.st over the same columns is "
                 "deleted (the loaded registers are used only after the second wait::ld)"),
    Variant("alloc_handoff_without_after_thread_sync", 7, ALLOC2,
            edit=(("  bar.sync 0;\n  tcgen05.fence::after_thread_sync;\n  ld.shared.u32 %r3",
                   "  bar.sync 0;\n  ld.shared.u32 %r3"),),
            sides=("alloc", "st"), missing="tcgen05.fence::after_thread_sync",
            launch=dict(block=(64, 1, 1)), args=lambda: [np.zeros(64, np.uint32)], want=_alloc2_want,
            what="the tcgen05.fence::after_thread_sync after the bar.sync that hands warp 1's tcgen05.alloc to "
                 "warp 0 is deleted"),
    Variant("wgmma_operand_edit_without_proxy_fence", 8, WGMMA,
            edit=(("  fence.proxy.async.shared::cta;\n  bar.sync 1, 128;\n", "  bar.sync 1, 128;\n"),),
            sides=("write", "read"), missing="fence.proxy.async",
            launch=dict(block=(128, 1, 1)), args=_wgmma_args, want=_wgmma_want,
            what="the warpgroup's fence.proxy.async between its in-place st.shared of A and the wgmma that reads "
                 "A through the async proxy is deleted",
            targets=("sm_90a",)),
    Variant("flag_handback_without_proxy_fence", 9, FLAG9,
            edit=(("  @%p3 bra SPIN;\n  fence.proxy.async.shared::cta;\n", "  @%p3 bra SPIN;\n"),),
            sides=("read", "write"), missing="fence.proxy.async",
            launch=dict(block=(96, 1, 1)), args=_u32(128, 2654435761, 3), want=lambda a: {0: a[1].copy()},
            what="the producer's fence.proxy.async after its acquire of the consumers' counter (red.release / "
                 "ld.acquire) is deleted: the refill may land before the consumers' ld.shared are performed",
            targets=BOTH),
    Variant("multicast_before_cluster_init_sync", 10, INIT10,
            edit=(("  barrier.cluster.arrive.release.aligned;\n  barrier.cluster.wait.acquire.aligned;\n",
                   "  bar.sync 0;\n"),),
            sides=("init", "copy"), missing="barrier.cluster",
            launch=dict(block=(64, 1, 1), grid=(2, 1, 1), cluster=(2, 1, 1)), args=_u32(64, 97, 5, out=128),
            want=_init10_want,
            what="the cluster barrier after the mbarrier inits becomes a CTA barrier (bar.sync 0): rank 0's "
                 "multicast may complete_tx on rank 1's barrier before rank 1 initialised it",
            targets=BOTH),
    Variant("store_over_barrier_before_inval", 11, REUSE11,
            edit=(("   // @inval\n  bar.sync 0;\n", "   // @inval\n"),),
            sides=("inval", "store"), missing="mbarrier.inval",
            launch=dict(block=(128, 1, 1)), args=_u32(128, 31, 9),
            want=lambda a: {0: a[1][::-1] * np.uint32(5)},
            what="the bar.sync between thread 0's mbarrier.inval and the stores that reuse the barrier's bytes is "
                 "deleted: thread 127 may store over the object before it is invalidated",
            targets=BOTH),
    Variant("generic_channel_on_tma_barrier", 12, CHAN12,
            edit=(("  add.u32 %r6, %r5, 8;\n", "  add.u32 %r6, %r5, 0;\n"),),
            sides=("expect", "arrive"), missing="barrier",
            launch=dict(block=(128, 1, 1)), args=_chan12_args,
            want=lambda a: {0: (a[1] * a[2]).astype(np.float32)},
            what="warp 1's arrive for the generic channel Y computes the address of bars[0] (X's TMA barrier) "
                 "instead of bars[1]",
            targets=BOTH),
    Variant("columns_beyond_allocation", 13, ALLOC2,
            edit=(("[%r4], 64;   // @alloc", "[%r4], 32;   // @alloc"), ("%r3, 64;   // @free", "%r3, 32;   // @free")),
            sides=("alloc", "st"), missing="alloc",
            launch=dict(block=(64, 1, 1)), args=lambda: [np.zeros(64, np.uint32)], want=_alloc2_want,
            what="warp 1 allocates (and frees) 32 columns; warp 0 writes and reads columns 32-33"),
    Variant("cluster_arrive_before_remote_read", 14, EXIT14,
            edit=(("   // @remote\n  barrier.cluster.arrive.release.aligned;\n",
                   "   // @remote\n"),
                  ("  mapa.shared::cluster.u32 %r9",
                   "  barrier.cluster.arrive.release.aligned;\n  mapa.shared::cluster.u32 %r9")),
            sides=("remote", "exit"), missing="barrier.cluster",
            launch=dict(block=(64, 1, 1), grid=(2, 1, 1), cluster=(2, 1, 1)), args=_u32(64, 13, 1, out=128),
            want=_exit14_want,
            what="the trailing barrier.cluster.arrive moves above the ld.shared::cluster: the peer may pass its "
                 "wait and exit while this CTA still reads the peer's table",
            targets=BOTH),
    Variant("multicast_halves_one_side_expects", 15, MCAST15,
            edit=(("  mov.u32 %r9, 1024;\n", "  selp.u32 %r9, 1024, 0, %p2;\n"),),
            sides=("copy", "expect"), missing="expect_tx",
            launch=dict(block=(64, 1, 1), grid=(2, 1, 1), cluster=(2, 1, 1)), args=_mcast15_args,
            want=_mcast15_want,
            what="the expected byte count is selp'ed to 0 on rank 1: rank 1 arms its barrier with expect_tx(0) "
                 "while both CTAs' multicast halves (512 bytes each) land in it",
            targets=BOTH),
    Variant("multicast_mask_leaves_peer_out", 15, MCAST15,
            edit=(("  mov.u16 %rs1, 3;\n", "  mov.u16 %rs1, 1;\n"),),
            sides=("expect", "copy"), missing="ctaMask",
            launch=dict(block=(64, 1, 1), grid=(2, 1, 1), cluster=(2, 1, 1)), args=_mcast15_args,
            want=_mcast15_want,
            what="the multicast's ctaMask is 0b01: both halves go to rank 0 only, while rank 1 expects 1024 bytes "
                 "(a hang)",
            targets=BOTH),
    Variant("unrelated_groups_share_named_barrier", 16, NAMED16,
            edit=(("  bar.sync 2, 64;   // @cbar", "  bar.sync 1, 64;   // @cbar"),
                  ("  bar.arrive 2, 64;   // @carrive", "  bar.arrive 1, 64;   // @carrive")),
            sides=("pbar", "cbar", "carrive"), missing="named barrier id",
            launch=dict(block=(128, 1, 1)), args=_u32(256, 3, 1, out=64), want=_named16_want,
            what="group C's bar.arrive / bar.sync use barrier 1, the id group P uses: C's writer warp completes "
                 "a generation with P's reader",
            targets=BOTH),
    Variant("commit_by_every_lane", 17, MMA17,
            edit=(("  @%q1 tcgen05.commit", "  tcgen05.commit"),),
            sides=("init", "commit"), missing="elect",
            launch=dict(block=(128, 1, 1)), args=_mma17_args, want=_mma_want,
            what="the MMA warp's tcgen05.commit loses its elect.sync predicate: all 32 lanes commit, 32 arrivals "
                 "on mma_bar (count 1)"),
    Variant("tensor_load_dst_misaligned", 18, TILES2,
            edit=(("  add.u32 %r3, %r2, 1024;\n", "  add.u32 %r3, %r2, 1040;\n"),),
            sides=("copyB",), missing="align",
            launch=dict(block=(32, 1, 1)), args=_tiles2_args,
            want=lambda a: {0: (a[1] + a[2]).astype(np.float32)},
            what="the second tile's SMEM destination is tiles + 1040 (16-byte aligned, not 128)",
            targets=BOTH),
    Variant("wgmma_accumulator_before_wait", 19, WGMMA,
            edit=(("  wgmma.wait_group.sync.aligned 0;\n", ""),
                  ("   // @use\n", "   // @use\n  wgmma.wait_group.sync.aligned 0;\n")),
            sides=("mma", "use"), missing="wgmma.wait_group",
            launch=dict(block=(128, 1, 1)), args=_wgmma_args, want=_wgmma_want,
            what="wgmma.wait_group 0 moves after the first st.global of the accumulator registers",
            targets=("sm_90a",)),
    Variant("tensormap_acquire_before_barrier", 20, TMAP20,
            edit=(("MET:\n  bar.sync 0;\n  @%p1 fence.proxy.tensormap::generic.acquire.gpu [%rd3], 128;\n",
                   "MET:\n  @%p1 fence.proxy.tensormap::generic.acquire.gpu [%rd3], 128;\n  bar.sync 0;\n"),),
            sides=("write", "read"), missing="fence.proxy.tensormap::generic.acquire",
            launch=dict(block=(64, 1, 1)), args=_tmap20_args, want=lambda a: {0: a[2].copy()},
            what="thread 0's fence.proxy.tensormap::generic.acquire moves above the bar.sync that orders it after "
                 "warp 1's tensormap.cp_fenceproxy release",
            targets=BOTH),
)
