"""The bug zoo (issue 15 item 7): for each of the 20 bug classes of ``/work/shared/reference/bug_classes.md``
(``tcsim.findings.CLASSES``), correct/buggy pairs of small PTX kernels written for tcsim, in the shape real
async tensor-core kernels have (TMA producer + mbarrier ring, MMA issuer with tcgen05.mma/commit, epilogue warps
with tcgen05.ld, named barriers, clusters of 2 with multicast and remote arrives).

Each pair is a template under ``templates/`` (the correct kernel, with ``// @name`` markers on the lines a finding
must name) plus the edit that makes the buggy twin -- one or two lines.  ``python tests/zoo/gen_zoo.py`` writes
``kernels/<class>_<name>.correct.ptx`` and ``.buggy.ptx``; the buggy file's header says what a detector must
report::

    // expect: class=8 sides=@write,@read missing=fence.proxy.async

``sides``: markers whose PTX lines the finding's ``lines`` must include (earlier access first);
``missing``: alternatives (``|``), one of which the finding's ``missing`` / ``fix`` / message must name.

:data:`LAUNCHES` builds each template's launch (inputs, grid/block/cluster) and checks a correct twin's output
against numpy, computed here from the inputs, never from tcsim's output.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
KERNELS = HERE / "kernels"
HOPPER_TOO = ("sm_100a", "sm_90a")
BLACKWELL = ("sm_100a",)


@dataclass(frozen=True)
class Pair:
    name: str                   # file stem: <class>_<name>
    cls: int
    template: str               # templates/<template>.ptx.tmpl
    targets: tuple
    edit: tuple                 # ((anchor, new lines or None = delete), ...): correct -> buggy
    sides: tuple                # markers, earlier access first
    missing: tuple              # alternatives the finding must name
    what: str                   # the buggy edit, in words
    why: str                    # why it is a bug per the PTX ISA, and what the hardware may do
    base: tuple = ()            # edits template -> correct twin (template variants)
    slow: bool = False


STORES = ["\tst.global.v4.f32 \t[%rd12], {%f0, %f1, %f2, %f3};                            // @use",
          "\tst.global.v4.f32 \t[%rd12+16], {%f4, %f5, %f6, %f7};",
          "\tst.global.v4.f32 \t[%rd12+32], {%f8, %f9, %f10, %f11};",
          "\tst.global.v4.f32 \t[%rd12+48], {%f12, %f13, %f14, %f15};"]
STORE_LATE = (("//<<STORE_EARLY>>", None), ("//<<STORE_LATE>>", STORES))
STORE_EARLY = (("//<<STORE_EARLY>>", STORES), ("//<<STORE_LATE>>", None))
WAIT_LD = "\ttcgen05.wait::ld.sync.aligned;"
# the class-7 pairs wait in the PTX ISA's canonical form (9.7.16.6.4.4: mbarrier.try_wait.relaxed.cluster, then
# tcgen05.fence::after_thread_sync): there the fence is the only ordering edge (tcsim.race.explain.fence_discipline)
RELAXED_MMA_WAIT = (("[%r11], 0;      // @wait",
                     ["\tmbarrier.try_wait.parity.relaxed.cluster.shared::cta.b64 \t%p8, [%r11], 0;      // @wait"]),)
RELAXED_FULL_WAIT = (("mbarrier.try_wait.parity.shared::cta.b64 \t%p5, [%r24], %r33;",
                      ["\tmbarrier.try_wait.parity.relaxed.cluster.shared::cta.b64 \t%p5, [%r24], %r33;"]),)
LD = ("\ttcgen05.ld.sync.aligned.32x32b.x16.b32 \t{%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8, %f9, %f10, %f11, "
      "%f12, %f13, %f14, %f15}, [%r40];      // @ld")

PAIRS = (
    # ------------------------------------------------------------------------------------------- the TMA ring
    Pair("01_stale_parity", 1, "ring", HOPPER_TOO,
         edit=(("and.b32 \t%r22, %r12, 1;", ["\tmov.u32 \t%r22, 0;                       // full[s] parity (never flipped)"]),),
         sides=("@wait",), missing=("parity", "phase"),
         what="the consumers wait on full[s] with parity 0 on every lap instead of lap & 1",
         why="PTX ISA 9.7.13.15 (mbarrier.test_wait / try_wait, .parity): with .parity the wait tests for completion of the "
             "phase whose parity is given; on the second lap phase 0 of full[s] has already completed, so the wait "
             "succeeds at once and the consumer reads the stage before the producer refilled it (stale data); the "
             "extra releases over-arrive on empty[s] (on an H100 an mbarrier over-arrival ends the launch with an "
             "error)."),
    Pair("02_leader_release", 2, "ring", HOPPER_TOO,
         edit=(("bar.sync \t1, 64;", None),),
         sides=("@read", "@write"), missing=("bar.sync", "bar.arrive", "mbarrier.arrive"),
         what="the named barrier between the two consumer warps is deleted: thread 32 (warp 1) releases stage s "
              "while warp 2 may still read it",
         why="PTX ISA 8 (memory consistency model): warp 2's ld.shared and the producer's refill are ordered only "
             "through a release/acquire chain; without bar.sync 1, 64 nothing orders warp 2's read before thread "
             "32's mbarrier.arrive (release), so the producer's wait + cp.async.bulk may overwrite the stage while "
             "warp 2 reads it (triton PR #10035)."),
    Pair("03_expect_tx_low", 3, "ring", HOPPER_TOO,
         edit=(("mbarrier.arrive.expect_tx.shared::cta.b64 \t_, [%r14], %r19;",
                ["\tmbarrier.arrive.expect_tx.shared::cta.b64 \t_, [%r14], 128;      // @expect"]),),
         sides=("@expect", "@write"), missing=("expect_tx",),
         what="arrive.expect_tx announces 128 bytes; the copy delivers 256",
         why="PTX ISA 9.7.13.15 (mbarrier tx-count, phase completion): the phase completes when the pending arrivals are 0 and the "
             "tx-count is 0; expect_tx(128) against complete_tx(256) drives the tx-count below zero, so the phase "
             "may complete before all bytes landed or never (the H100 hangs)."),
    Pair("03_expect_tx_high", 3, "ring", HOPPER_TOO,
         edit=(("mbarrier.arrive.expect_tx.shared::cta.b64 \t_, [%r14], %r19;",
                ["\tmbarrier.arrive.expect_tx.shared::cta.b64 \t_, [%r14], 512;      // @expect"]),),
         sides=("@expect", "@write"), missing=("expect_tx",),
         what="arrive.expect_tx announces 512 bytes; the copy delivers 256",
         why="PTX ISA 9.7.13.15 (mbarrier tx-count): the 256 missing bytes never arrive, the tx-count of full[s] never "
             "reaches 0 and the phase never completes: the consumers wait forever (a hang on the GPU)."),
    Pair("04_arrive_count", 4, "ring", HOPPER_TOO,
         edit=(("mbarrier.init.shared::cta.b64 \t[%r6], 1;",
                ["\t@%p1 mbarrier.init.shared::cta.b64 \t[%r6], 2;                // @init"]),),
         sides=("@init", "@arrive"), missing=("count", "mbarrier.init"),
         what="empty[0] is initialised with count 2; one thread arrives per phase",
         why="PTX ISA 9.7.13.15 (mbarrier.init, mbarrier.arrive): a phase completes when the pending arrival "
             "count reaches zero; with count 2 and one arrive per lap empty[0] never completes phase 0 and the "
             "producer waits forever before refilling stage 0 (hang)."),
    Pair("09_generic_read_async_write", 9, "reload", HOPPER_TOO,
         edit=(("fence.proxy.async.shared::cta;", None),),
         sides=("@read", "@write"), missing=("fence.proxy.async",),
         what="the readers' fence.proxy.async.shared::cta between their ld.shared of the buffer and the bar.sync "
              "that hands it back to the TMA loader is deleted",
         why="PTX ISA 8 (memory consistency model: proxies) and 9.7.13.4 (fence.proxy.async): accesses to the same "
             "location through different proxies need a cross-proxy fence; the generic ld.shared and the next "
             "tile's async-proxy write by cp.async.bulk are ordered by bar.sync only within the generic proxy, so "
             "the copy may land before the reads are performed (DeepEP PR #642, FA4 PR #2462; Triton PR #9610)."),
    Pair("09_release_before_use_handoff", 9, "handoff", HOPPER_TOO,
         edit=(("// @fence", None),),
         sides=("@read", "@write"), missing=("fence.proxy.async",),
         what="the readers' fence.proxy.async.shared::cta between their ld.shared of the stage and the elected "
              "mbarrier.arrive that releases it to the TMA producer is deleted; the loaded word is used only after "
              "the release",
         why="PTX ISA 8 (memory consistency model: proxies) and 9.7.13.4 (fence.proxy.async): the mbarrier arrive -> "
             "wait orders the reader and the producer within the generic proxy only; the producer's next "
             "cp.async.bulk writes the stage through the async proxy and may land before the readers' ld.shared, "
             "still outstanding since nothing used its value before the release, is performed (DeepEP PR #642: the "
             "combine's TMA load overwrote a stage whose LDS had not completed; fixed by this fence)."),
    Pair("16_named_barrier_count", 16, "ring", HOPPER_TOO,
         edit=(("bar.sync \t1, 64;", ["\tbar.sync \t1, 96;                                               // @bar"]),),
         sides=("@bar",), missing=("bar.sync", "count"),
         what="the consumers' named barrier 1 expects 96 threads; only the 64 consumer threads ever reach it",
         why="PTX ISA 9.7.13.1 (bar / barrier: bar.sync with a thread count b): the barrier completes when b "
             "threads have arrived; warps 1 and 2 supply 64, so both wait forever (hang)."),
    Pair("17_unpredicated_arrive", 17, "ring", HOPPER_TOO,
         edit=(("@%p7 mbarrier.arrive.shared::cta.b64", ["\tmbarrier.arrive.shared::cta.b64 \t_, [%r15];                    // @arrive"]),),
         sides=("@init", "@arrive"), missing=("count", "lane", "elect", "predicate"),
         what="the release arrive on empty[s] (count 1) loses its predicate: all 64 consumer threads arrive",
         why="PTX ISA 9.7.13.15 (mbarrier.arrive): every executing thread performs an arrive-on; 64 arrivals on "
             "a count-1 barrier complete the phase and then over-arrive on the next ones (undefined; the H100 ends "
             "the launch with an error at the arrive)."),
    Pair("17_producer_without_elect", 17, "ring", HOPPER_TOO,
         edit=(("@!%p3 bra \t$L_done;", None),),
         sides=("@initfull", "@expect"), missing=("elect", "lane", "count"),
         what="the producer's elect.sync filter is deleted: all 32 lanes of warp 0 arm full[s] (count 1) with "
              "arrive.expect_tx and issue the cp.async.bulk",
         why="PTX ISA 9.7.13.14 (elect.sync) and 9.7.13.15 (mbarrier.arrive.expect_tx, tx-count): every executing "
             "lane performs its own arrive-on and expect-tx and issues its own copy; 32 arrivals on a count-1 "
             "barrier over-arrive (the H100 ends the launch with an error at the arrive) and 32 copies write the "
             "stage (CuTe DSL cp.async docs, triton PR #9498)."),
    Pair("18_misaligned_bulk", 18, "ring", HOPPER_TOO,
         edit=(("mov.u32 \t%r19, 256;", ["\tmov.u32 \t%r19, 200;                      // bytes per chunk"]),),
         sides=("@write",), missing=("16", "multiple", "align"),
         what="the chunk size register holds 200 bytes (not a multiple of 16)",
         why="PTX ISA 9.7.9.25.4.1 (cp.async.bulk): the size operand must be a multiple of 16; otherwise the "
             "behaviour is undefined (illegal instruction or a hang on the GPU)."),
    # ------------------------------------------------------------------------------------- TMA store epilogue
    Pair("05_bulk_store_src_overwrite", 5, "store", HOPPER_TOO,
         edit=(("cp.async.bulk.wait_group.read \t0;", None),),
         sides=("@read", "@write"), missing=("wait_group.read", "wait_group"),
         what="thread 0 no longer waits for the bulk store to read sOut (cp.async.bulk.wait_group.read 0 deleted); "
              "the next tile's st.shared overwrites it (and is fenced afterwards)",
         why="PTX ISA 9.7.9.25.6.2 (cp.async.bulk.wait_group): the source of a bulk copy may be read until "
             "wait_group.read says the reads are complete; the fence.proxy.async after the next st.shared orders "
             "the new data for later async reads but does not wait for the earlier store, which may write the new "
             "tile's values (NVIDIA/Fuser PR #3863)."),
    Pair("08_store_without_proxy_fence", 8, "store", HOPPER_TOO,
         edit=(("fence.proxy.async.shared::cta;", None),),
         sides=("@write", "@read"), missing=("fence.proxy.async",),
         what="the writers' fence.proxy.async.shared::cta before bar.sync is deleted",
         why="PTX ISA 8 (memory consistency model: proxies) and 9.7.13.4 (fence.proxy.async): a generic-proxy st.shared is made "
             "visible to the async proxy only by fence.proxy.async; bar.sync orders the threads but not the "
             "proxies, so the TMA store may read stale SMEM (FlashKDA #24)."),
    Pair("08_mma_operands_without_proxy_fence", 8, "gemm_st", BLACKWELL,
         edit=(("// @fence", None),),
         sides=("@write", "@read"), missing=("fence.proxy.async",),
         what="the writers' fence.proxy.async.shared::cta between their st.shared of A/B and the bar.sync that "
              "hands the operands to the MMA issuer is deleted (CUTLASS's Blackwell tutorial 01 pattern)",
         why="PTX ISA 8 (memory consistency model: proxies), 9.7.13.4 (fence.proxy.async) and 9.7.16.10.9.1 "
             "(tcgen05.mma reads its SMEM operands through the async proxy): bar.sync and the tcgen05 fences order "
             "the threads, not the proxies, so the tensor core may read stale A/B (cuLA PR #114, "
             "facebookexperimental/triton PR #368)."),
    # -------------------------------------------------------------------------------------- tcgen05 GEMM tile
    Pair("06_dealloc_before_wait_ld", 6, "gemm", BLACKWELL, base=STORE_LATE,
         edit=((WAIT_LD, None),
               ("// @use", [WAIT_LD, "\tst.global.v4.f32 \t[%rd12], {%f0, %f1, %f2, %f3};                            // @use"])),
         sides=("@ld", "@free"), missing=("tcgen05.wait::ld",),
         what="tcgen05.wait::ld moves after the dealloc: the columns are freed while the tcgen05.ld may still read them",
         why="PTX ISA 9.7.16.8.3 (tcgen05.ld is asynchronous) and 9.7.16.8.5 (tcgen05.wait::ld waits for its completion)"
             " and 9.7.16.7.1 (tcgen05.dealloc): freeing columns a pending tcgen05.ld reads lets another "
             "allocation (or CTA) overwrite them before the load completes (cudnn-frontend #652)."),
    Pair("06_ld_before_mma_commit", 6, "gemm", BLACKWELL, base=STORE_EARLY,
         edit=(("// @ld", None), ("\tbar.warp.sync \t-1;", ["\tbar.warp.sync \t-1;", LD])),
         sides=("@mma", "@ld"), missing=("tcgen05.commit", "mma_bar", "commit"),
         what="the epilogue's tcgen05.ld of D moves above its mma_bar wait: it is issued before the MMA's "
              "tcgen05.commit -> mbarrier wait (TMEM stays allocated until after the wait)",
         why="PTX ISA 9.7.16.10.9.1 (tcgen05.mma is asynchronous) and 9.7.16.12.1 (tcgen05.commit: its completion is observed only through the commit's mbarrier arrive)"
             ": a tcgen05.ld of D not ordered after that phase reads "
             "accumulator cells the tensor pipe may not have written yet (wrong result, any value)."),
    Pair("07_missing_after_thread_sync", 7, "gemm", BLACKWELL, base=STORE_EARLY + RELAXED_MMA_WAIT,
         edit=(("tcgen05.fence::after_thread_sync;                               // @fence", None),),
         sides=("@mma", "@ld"), missing=("tcgen05.fence::after_thread_sync",),
         what="the epilogue's tcgen05.fence::after_thread_sync after the (.relaxed.cluster) mma_bar wait is deleted",
         why="PTX ISA 9.7.16.6.4.4 (canonical pattern: tcgen05.commit || mbarrier.try_wait.relaxed.cluster, "
             "tcgen05.fence::after_thread_sync, tcgen05.ld) and 9.7.16.11.1 (tcgen05.fence): tcgen05.ld is "
             "asynchronous and a .relaxed wait orders no memory, so only the fence orders the load after the wait; "
             "without it the load may be performed before the wait (CUTLASS #2974)."),
    Pair("13_tmem_leak", 13, "gemm", BLACKWELL, base=STORE_EARLY,
         edit=(("tcgen05.dealloc.cta_group::1.sync.aligned.b32", None),),
         sides=("@alloc", "@exit"), missing=("tcgen05.dealloc", "dealloc"),
         what="the tcgen05.dealloc is deleted: the CTA exits with 32 TMEM columns allocated",
         why="PTX ISA 9.7.16.7.1 (tcgen05.alloc/dealloc): all Tensor Memory allocated by a CTA must be "
             "deallocated before the CTA exits; a leaked allocation blocks later CTAs on the SM in tcgen05.alloc "
             "(hang) (CUTLASS #2835)."),
    Pair("19_ld_regs_before_wait", 19, "gemm", BLACKWELL, base=STORE_EARLY,
         edit=((WAIT_LD, None),
               ("[%rd12+48], {%f12", ["\tst.global.v4.f32 \t[%rd12+48], {%f12, %f13, %f14, %f15};", WAIT_LD])),
         sides=("@ld", "@use"), missing=("tcgen05.wait::ld",),
         what="tcgen05.wait::ld moves after the stores: the tcgen05.ld destination registers are stored before "
              "the load completed",
         why="PTX ISA 9.7.16.8.3 (tcgen05.ld): the destination registers are written asynchronously and may be "
             "read only after tcgen05.wait::ld; before it their contents are undefined (DeepGEMM #449)."),
    # --------------------------------------------------------------------------- tcgen05 GEMM with a K pipeline
    Pair("05_mma_operands_released_at_issue", 5, "gemm_ring", BLACKWELL,
         edit=(("// @release", ["\tmbarrier.arrive.shared::cta.b64 \t_, [%r25];                    // @release"]),),
         sides=("@mma", "@refill"), missing=("tcgen05.commit",),
         what="the MMA warp releases stage s with a plain mbarrier.arrive right after issuing the tcgen05.mma "
              "instead of tcgen05.commit -> empty[s]",
         why="PTX ISA 9.7.16.10.9.1 (tcgen05.mma is asynchronous: its SMEM operands are read after issue) and "
             "9.7.16.12.1 (tcgen05.commit: the mbarrier arrive that tracks completion of the prior tcgen05 "
             "operations); a plain arrive releases the stage at issue, so the producer's next TMA load may "
             "overwrite A/B while the tensor pipe still reads them (facebookexperimental/triton PR #1831)."),
    Pair("07_mma_issue_without_after_thread_sync", 7, "gemm_ring", BLACKWELL, base=RELAXED_FULL_WAIT,
         edit=(("// @fence", None),),
         sides=("@refill", "@mma"), missing=("tcgen05.fence::after_thread_sync",),
         what="the MMA warp's tcgen05.fence::after_thread_sync between the full[s] wait and the tcgen05.mma is "
              "deleted",
         why="PTX ISA 9.7.16.6 (tcgen05 memory consistency model) and 9.7.16.11.1 (tcgen05.fence): an async "
             "tcgen05.mma is ordered after a preceding thread synchronisation (here the mbarrier wait that "
             "observed the TMA bytes) only through tcgen05.fence::after_thread_sync; without it the MMA may read "
             "the stage before the wait; the full[s] wait is .relaxed.cluster (the ISA's canonical form), which "
             "orders no memory itself (CUTLASS #2974, flash-attention PR #2033)."),
    # ------------------------------------------------------------------------------ tcgen05 CTA pair (cta_group::2)
    Pair("03_expect_tx_not_times_cta_group", 3, "pair_gemm", BLACKWELL,
         edit=(("_, [%r10], 8704;", ["\t@%p9 mbarrier.arrive.expect_tx.shared::cta.b64 \t_, [%r10], 4352;      // @expect"]),),
         sides=("@expect", "@copy"), missing=("expect_tx",),
         what="the leader arms full_bar with its own CTA's bytes only (4352), not x cta_group (8704); both CTAs' "
              "TMA loads complete on it",
         why="PTX ISA 9.7.9.25.5.2 (cp.async.bulk.tensor .cta_group::2: the mbarrier signalled may be the peer "
             "CTA's) and 9.7.13.15 (mbarrier tx-count, phase completion): 8704 bytes complete_tx against an "
             "expect_tx of 4352 -- the phase can complete while half of the operands are in flight (the MMA reads "
             "stale SMEM) and the rest lands on the next phase (DeepGEMM PR #415, FA4 2-CTA)."),
    Pair("15_pair_peer_signals_own_barrier", 15, "pair_gemm", BLACKWELL,
         edit=(("mapa.shared::cluster.u32 \t%r21, %r10, %r14;",
                ["\tmapa.shared::cluster.u32 \t%r21, %r10, %r4;      // the leader's full_bar              // @leaderbar"]),),
         sides=("@copy",), missing=("expect_tx",),
         what="each CTA's TMA signals its OWN full_bar (mapa to its own rank): the peer's bytes land on a barrier "
              "that no expect_tx in the peer armed",
         why="PTX ISA 9.7.9.25.5.2 (cp.async.bulk.tensor: complete_tx on the mbarrier operand) and 9.7.13.15 "
             "(tx-count): the peer's full_bar receives 4352 bytes with no expect_tx and no arrival in its CTA, and "
             "the leader's expect_tx(8704) is only half met -- the leader's MMA never starts (hang) (FA4 2-CTA, "
             "DeepGEMM PR #429)."),
    Pair("13_pair_alloc_unpaired", 13, "pair_gemm", BLACKWELL,
         edit=(("bra \t$L_alloc_done;", ["\t@%p2 bra \t$L_alloc_done;", "\t@!%p9 bra \t$L_alloc_done;"]),),
         sides=("@alloc",), missing=("cta_group::2", "pair", "peer"),
         what="only the leader CTA's warp 0 executes tcgen05.alloc.cta_group::2 (the peer skips it, as if it were "
              "cta_group::1)",
         why="PTX ISA 9.7.16.7.1 (tcgen05.alloc .cta_group::2: one warp from each of the two peer CTAs performs the "
             "allocation collectively, and dealloc likewise): an alloc without its peer's never completes or "
             "leaves the pair's TMEM unallocated in the peer, which the MMA then writes (CUTLASS #3435)."),
    # ----------------------------------------------------------------------------------------------- clusters
    Pair("10_init_before_remote_arrive", 10, "remote_arrive", HOPPER_TOO,
         edit=(("fence.mbarrier_init.release.cluster;", None),),
         sides=("@init", "@arrive"), missing=("fence.mbarrier_init",),
         what="fence.mbarrier_init.release.cluster is deleted; the cluster barrier's arrive is .relaxed",
         why="PTX ISA 9.7.13.4 (membar / fence: fence.mbarrier_init) and 9.7.13.3 (barrier.cluster: .relaxed gives no memory "
             "ordering for prior accesses): nothing releases the mbarrier.init to the cluster, so the peer's "
             "remote mbarrier.arrive may act on an uninitialised object (triton PR #11498)."),
    Pair("14_exit_with_remote_read", 14, "cluster_exit", HOPPER_TOO,
         edit=(("barrier.cluster.arrive.aligned;", None), ("barrier.cluster.wait.aligned;", None)),
         sides=("@remote", "@exit"), missing=("barrier.cluster",),
         what="the trailing barrier.cluster.arrive/wait is deleted: a CTA may exit while its peer still reads its "
              "shared memory",
         why="PTX ISA, the .shared::cluster state space (distributed shared memory) with mapa, and 9.7.13.3 (barrier.cluster): accessing the shared memory of a CTA that has "
             "exited is undefined; the trailing cluster barrier is what keeps each CTA alive until its peer's "
             "ld.shared::cluster has completed (triton #11730)."),
    Pair("15_multicast_peer_no_expect_tx", 15, "multicast", HOPPER_TOO,
         edit=(("@%p1 mbarrier.arrive.expect_tx.shared::cta.b64",
                ["\t@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 \t_, [%r8], 512;       // @expect",
                 "\t@%p4 mbarrier.arrive.shared::cta.b64 \t_, [%r8];                  // @arrive"]),),
         sides=("@copy", "@arrive"), missing=("expect_tx",),
         what="only rank 0 arms its barrier with expect_tx(512); rank 1 arrives without expecting the multicast bytes",
         why="PTX ISA 9.7.9.25.4.1 (cp.async.bulk .multicast::cluster: complete_tx on the mbarrier of every "
             "destination CTA) and 9.7.13.15 (mbarrier tx-count): rank 1's phase completes at its plain arrive, before the "
             "multicast lands, so it reads stale SMEM, and the 512 bytes then complete_tx on the next phase (FA4 "
             "2-CTA, DeepGEMM PR #429)."),
    # ------------------------------------------------------------------------------------------- barrier storage
    Pair("11_barrier_storage_reuse", 11, "reuse", HOPPER_TOO,
         edit=(("mbarrier.inval.shared::cta.b64", None),),
         sides=("@init", "@store"), missing=("mbarrier.inval",),
         what="mbarrier.inval is deleted: the barrier's 8 bytes are overwritten by st.shared while it is still a "
              "valid mbarrier object",
         why="PTX ISA 9.7.13.15 (mbarrier.inval): an mbarrier object's memory may be used for any other purpose "
             "only after mbarrier.inval; a generic store over a live object is undefined behaviour (triton PR "
             "#3858)."),
    Pair("12_shared_barrier_two_channels", 12, "channels", HOPPER_TOO,
         edit=(("mov.u32 \t%r6, barY;", ["\tmov.u32 \t%r6, barX;                      // channel Y's barrier         // @chan"]),),
         sides=("@expectX", "@expectY"), missing=("barY", "barrier", "channel"),
         what="channel Y signals barX (count 1) like channel X; barY is never used",
         why="PTX ISA 9.7.13.15 (mbarrier phase completion: pending arrivals 0 and tx-count 0): with one count-1 barrier "
             "for two producers, the first producer's arrive and bytes complete the phase; the consumers' waits "
             "for 'X' and 'Y' are both satisfied by it (stale data for the other channel), or the second arrive "
             "over-arrives on a phase whose bytes are still pending (NVIDIA/Fuser PR #5862)."),
    # --------------------------------------------------------------------------------------- tensor map edits
    Pair("20_tensormap_without_acquire", 20, "tensormap", HOPPER_TOO,
         edit=(("fence.proxy.tensormap::generic.acquire.gpu", None),),
         sides=("@write", "@read"), missing=("fence.proxy.tensormap",),
         what="the fence.proxy.tensormap::generic.acquire before the TMA load through the edited map is deleted",
         why="PTX ISA 9.7.13.4 (membar / fence: fence.proxy.tensormap::generic) and tensormap.cp_fenceproxy (data movement instructions): a tensor "
             "map written through the generic proxy is visible to the tensormap proxy that cp.async.bulk.tensor "
             "uses only after a release (cp_fenceproxy) AND an acquire fence.proxy.tensormap::generic on the same "
             "address; without the acquire the TMA may use the stale map (the old tensor A) (DeepGEMM PR #343, "
             "triton PR #7293)."),
)

BY_NAME = {p.name: p for p in PAIRS}


# ------------------------------------------------------------------------------------------------ rendering
def _apply(text: str, edits, what: str) -> str:
    lines = text.split("\n")
    for anchor, new in edits:
        hits = [i for i, ln in enumerate(lines) if anchor in ln and not ln.startswith("// ")]
        if len(hits) != 1:
            raise ValueError(f"{what}: anchor {anchor!r} matches {len(hits)} lines")
        i = hits[0]
        lines[i:i + 1] = [] if new is None else list(new)
    return "\n".join(lines)


def _header(pair: Pair, buggy: bool) -> list:
    try:
        from tcsim.findings import CLASSES
        title = f" ({CLASSES[pair.cls]})"
    except ImportError:             # an older tcsim (a GPU machine's copy): the code lines are what matter
        title = ""
    h = [f"// zoo pair {pair.name}: class {pair.cls}{title}, "
         f"{'BUGGY twin' if buggy else 'correct twin'}; targets {', '.join(pair.targets)}.",
         f"// Generated from tests/zoo/templates/{pair.template}.ptx.tmpl by tests/zoo/gen_zoo.py -- do not edit."]
    if buggy:
        h.insert(0, f"// expect: class={pair.cls} sides={','.join(pair.sides)} missing={'|'.join(pair.missing)}")
        h += _wrap("// edit: " + pair.what) + _wrap("// why: " + pair.why)
    return h


def _wrap(s: str, width: int = 116) -> list:
    out, cur = [], ""
    for w in s.split(" "):
        if cur and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = "//   " + w
        else:
            cur = f"{cur} {w}" if cur else w
    return out + [cur]


def render(pair: Pair) -> tuple:
    """(correct text, buggy text) of ``pair``."""
    tmpl = (TEMPLATES / f"{pair.template}.ptx.tmpl").read_text()
    correct = _apply(tmpl, pair.base, f"{pair.name} base")
    buggy = _apply(correct, pair.edit, f"{pair.name} edit")
    return ("\n".join(_header(pair, False)) + "\n" + correct,
            "\n".join(_header(pair, True)) + "\n" + buggy)


def paths(pair: Pair) -> tuple:
    return KERNELS / f"{pair.name}.correct.ptx", KERNELS / f"{pair.name}.buggy.ptx"


# ---------------------------------------------------------------------------------------------- expectations
@dataclass(frozen=True)
class Expect:
    cls: int
    sides: dict                 # marker -> PTX line (1-based) in the buggy file
    missing: tuple


def expectation(text: str) -> Expect:
    """The ``// expect:`` header of a buggy twin, with each side marker's PTX line."""
    m = re.search(r"^// expect: class=(\d+) sides=(\S+) missing=(\S+)$", text, flags=re.M)
    if m is None:
        raise ValueError("no '// expect:' header")
    markers = m.group(2).split(",")
    lines = text.split("\n")
    sides = {}
    for mk in markers:
        at = [i + 1 for i, ln in enumerate(lines)
              if not ln.lstrip().startswith("//") and re.search(r"//.*" + re.escape(mk) + r"(\s|$)", ln)]
        if len(at) != 1:
            raise ValueError(f"marker {mk} is on {len(at)} PTX lines")
        sides[mk] = at[0]
    return Expect(int(m.group(1)), sides, tuple(m.group(3).split("|")))


def matches(finding, exp: Expect) -> bool:
    """Does ``finding`` name the bug ``exp`` describes: its class, every side's line, one of the missing edges?"""
    text = " ".join(x for x in (finding.missing, finding.fix, finding.message) if x).lower()
    return (finding.cls == exp.cls and set(exp.sides.values()) <= set(finding.lines)
            and any(a.lower() in text for a in exp.missing))


def run_buggy(pair: Pair, target: str, timing: bool, seed):
    """Run the buggy twin in sanitizer mode: (expectation, findings, the error that stopped the run or None)."""
    from tcsim.isa.errors import TcsimError
    from tcsim.launch import run_launch
    text = retarget(paths(pair)[1].read_text(), target)
    exp = expectation(text)
    launch, _ = make_launch(pair, text)
    try:
        return exp, list(run_launch(launch, seed=seed, timing=timing).findings), None
    except TcsimError as e:
        return exp, list(getattr(e, "findings", None) or []), e


def retarget(text: str, target: str) -> str:
    return re.sub(r"^\.target\s+\S+", f".target {target}", text, count=1, flags=re.M)


# ------------------------------------------------------------------------------------------------ launches
def _bf16(a):
    import ml_dtypes
    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _ring(ptx, rng):
    from tcsim.launch import Launch
    x = rng.standard_normal(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    want = (2.0 * x.astype(np.float64) + 1.0).astype(np.float32)
    return Launch(ptx=ptx, block=(96, 1, 1), args=[x, out], name="zoo_ring"), {1: want}


def _handoff(ptx, rng):
    from tcsim.launch import Launch
    x = rng.integers(0, 2**32, 256, dtype=np.uint32)
    out = np.zeros(64, np.uint32)
    want = np.zeros(64, np.uint64)
    for i in range(4):
        want += np.uint64(i + 1) * x[i * 64:(i + 1) * 64].astype(np.uint64)
    return Launch(ptx=ptx, block=(96, 1, 1), args=[x, out], name="zoo_handoff"), {1: (want & 0xFFFFFFFF).astype(np.uint32)}


def _store(ptx, rng):
    from tcsim.launch import Launch
    x = rng.standard_normal(192).astype(np.float32)
    out = np.zeros(192, np.float32)
    want = (3.0 * x.astype(np.float64) - 1.0).astype(np.float32)
    return Launch(ptx=ptx, block=(64, 1, 1), args=[x, out], name="zoo_store"), {1: want}


def _reload(ptx, rng):
    from tcsim.launch import Launch
    x = rng.integers(0, 2**32, 192, dtype=np.uint32)
    out = np.zeros(192, np.uint32)
    want = x * np.uint32(3) + np.uint32(1)
    return Launch(ptx=ptx, block=(64, 1, 1), args=[x, out], name="zoo_reload"), {1: want}


def _gemm(ptx, rng):
    from tcsim.isa.tensormap import TensorMap
    from tcsim.launch import Launch
    a = _bf16(rng.integers(-4, 5, size=(128, 16)))          # small integers: the f32 sums are exact
    bt = _bf16(rng.integers(-4, 5, size=(16, 16)))
    d = np.zeros((128, 16), np.float32)
    want = (a.astype(np.float64) @ bt.astype(np.float64).T).astype(np.float32)
    ta = TensorMap.tiled(a, box=(128, 16), swizzle="32B")
    tb = TensorMap.tiled(bt, box=(16, 16), swizzle="32B")
    return Launch(ptx=ptx, block=(128, 1, 1), args=[a, bt, d, ta, tb], name="zoo_gemm"), {2: want}


def _gemm_st(ptx, rng):
    from tcsim.launch import Launch
    a = _bf16(rng.integers(-4, 5, size=(128, 16)))
    bt = _bf16(rng.integers(-4, 5, size=(16, 16)))
    d = np.zeros((128, 16), np.float32)
    want = (a.astype(np.float64) @ bt.astype(np.float64).T).astype(np.float32)
    return Launch(ptx=ptx, block=(128, 1, 1), args=[a, bt, d], name="zoo_gemm_st"), {2: want}


def _gemm_ring(ptx, rng):
    from tcsim.isa.tensormap import TensorMap
    from tcsim.launch import Launch
    a = _bf16(rng.integers(-3, 4, size=(128, 64)))
    bt = _bf16(rng.integers(-3, 4, size=(16, 64)))
    d = np.zeros((128, 16), np.float32)
    want = (a.astype(np.float64) @ bt.astype(np.float64).T).astype(np.float32)
    ta = TensorMap.tiled(a, box=(128, 16), swizzle="32B")
    tb = TensorMap.tiled(bt, box=(16, 16), swizzle="32B")
    return Launch(ptx=ptx, block=(128, 1, 1), args=[a, bt, d, ta, tb], name="zoo_gemm_ring"), {2: want}


def _pair_gemm(ptx, rng):
    from tcsim.isa.tensormap import TensorMap
    from tcsim.launch import Launch
    a = _bf16(rng.integers(-4, 5, size=(256, 16)))
    bt = _bf16(rng.integers(-4, 5, size=(16, 16)))
    d = np.zeros((256, 16), np.float32)
    want = (a.astype(np.float64) @ bt.astype(np.float64).T).astype(np.float32)
    ta = TensorMap.tiled(a, box=(128, 16), swizzle="32B")
    tb = TensorMap.tiled(bt, box=(8, 16), swizzle="32B")
    return Launch(ptx=ptx, grid=(2, 1, 1), block=(128, 1, 1), cluster=(2, 1, 1), args=[a, bt, d, ta, tb],
                  name="zoo_pair_gemm"), {2: want}


def _remote_arrive(ptx, rng):
    from tcsim.launch import Launch
    x = rng.integers(0, 2**32, size=128, dtype=np.uint32)
    out = np.zeros(128, np.uint32)
    cta = np.arange(128) // 64
    t = np.arange(128) % 64
    peer = cta ^ 1
    want = ((x[peer * 64 + t].astype(np.uint64) * np.uint64(5) + peer.astype(np.uint64)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return Launch(ptx=ptx, grid=(2, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1), args=[x, out],
                  name="zoo_remote_arrive"), {1: want}


def _cluster_exit(ptx, rng):
    from tcsim.launch import Launch
    x = rng.integers(0, 2**32, size=128, dtype=np.uint32)
    out = np.zeros(128, np.uint32)
    g = np.arange(128)
    peer_g = (g // 64 ^ 1) * 64 + g % 64
    want = ((x[peer_g].astype(np.uint64) * np.uint64(7) + np.uint64(1)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return Launch(ptx=ptx, grid=(2, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1), args=[x, out],
                  name="zoo_cluster_exit"), {1: want}


def _multicast(ptx, rng):
    from tcsim.launch import Launch
    x = rng.standard_normal(128).astype(np.float32)
    out = np.zeros(256, np.float32)
    want = np.concatenate([x, (x.astype(np.float64) + 1.0).astype(np.float32)])
    return Launch(ptx=ptx, grid=(2, 1, 1), block=(128, 1, 1), cluster=(2, 1, 1), args=[x, out],
                  name="zoo_multicast"), {1: want}


def _reuse(ptx, rng):
    from tcsim.launch import Launch
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    want = (x + x[0]).astype(np.float32)
    return Launch(ptx=ptx, block=(64, 1, 1), args=[x, out], name="zoo_reuse"), {1: want}


def _channels(ptx, rng):
    from tcsim.launch import Launch
    x = rng.standard_normal(64).astype(np.float32)
    y = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    return Launch(ptx=ptx, block=(128, 1, 1), args=[x, y, out], name="zoo_channels"), {2: (x * y).astype(np.float32)}


def _tensormap(ptx, rng):
    from tcsim.isa.tensormap import TensorMap
    from tcsim.launch import Launch
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    out = np.zeros((16, 16), np.float32)
    slot = np.zeros(128, np.uint8)
    tmap = TensorMap.tiled(a, box=(16, 16))
    return Launch(ptx=ptx, block=(64, 1, 1), args=[a, b, out, slot, tmap], name="zoo_tensormap"), {2: b.copy()}


LAUNCHES = {"ring": _ring, "store": _store, "gemm": _gemm, "pair_gemm": _pair_gemm, "gemm_ring": _gemm_ring, "gemm_st": _gemm_st, "remote_arrive": _remote_arrive,
            "cluster_exit": _cluster_exit, "multicast": _multicast, "reuse": _reuse, "channels": _channels,
            "tensormap": _tensormap, "reload": _reload, "handoff": _handoff}


def make_launch(pair: Pair, ptx_text: str, data_seed: int = 0):
    """(Launch, {output index: expected array}) for ``pair`` run on ``ptx_text``."""
    return LAUNCHES[pair.template](ptx_text, np.random.default_rng(1000 + data_seed))
