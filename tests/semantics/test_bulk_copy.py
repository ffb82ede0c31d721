"""cp.async.bulk (non-tensor), cp.async.bulk.prefetch, commit_group / wait_group (sim/semantics/bulk_copy.py).

Each kernel is compared with an independent numpy expectation.  The kernels use the mbarrier instructions of
sim/semantics/mbarrier.py for completion.
"""
import re

import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault, SyncError, UnsupportedError, VerifyError
from tcsim.launch import Launch, run_launch
from tcsim.observe import EventRecorder

HEAD = """
.version 8.6
.target sm_100a
.address_size 64
"""


def kernel(params, body, regs=""):
    return HEAD + f""".visible .entry k({params})
{{
  .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .pred %p<10>; .reg .b16 %rs<4>;
{regs}
{body}
  ret;
}}
"""


def run(ptx, args, **kw):
    kw.setdefault("block", (1, 1, 1))
    return run_launch(Launch(ptx=ptx, args=args, **kw))


# ---------------------------------------------------------------------------------------------- producer/consumer
PRODCONS = kernel(".param .u64 src, .param .u64 out, .param .u64 early", """
  .shared .align 128 .b8 buf[1024];
  .shared .align 8 .b64 bar;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  ld.param.u64 %rd5, [early];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra CONSUMER;
  setp.ne.u32 %p3, %r3, 0;
  @%p3 bra DONE;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 1024;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd1], 512, [%r4];
  add.u32 %r6, %r5, 512;
  add.u64 %rd3, %rd1, 512;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.L2::cache_hint [%r6], [%rd3], 512, [%r4], %rd1;
  bra DONE;
CONSUMER:
  shl.b32 %r7, %r3, 5;
  add.u32 %r8, %r5, %r7;
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r8];
  mul.wide.u32 %rd6, %r3, 16;
  add.u64 %rd7, %rd5, %rd6;
  st.global.v4.u32 [%rd7], {%r10, %r11, %r12, %r13};
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r8];
  ld.shared.v4.u32 {%r14, %r15, %r16, %r17}, [%r8+16];
  cvt.u64.u32 %rd8, %r7;
  add.u64 %rd9, %rd2, %rd8;
  st.global.v4.u32 [%rd9], {%r10, %r11, %r12, %r13};
  st.global.v4.u32 [%rd9+16], {%r14, %r15, %r16, %r17};
DONE:
  ret;
""")


def test_1d_producer_consumer_and_stale_read_before_wait():
    src = (np.arange(256, dtype=np.uint32) * 2654435761 % 1000003).astype(np.uint32)
    out = np.zeros(256, np.uint32)
    early = np.full(128, 0xDEAD, np.uint32)
    res = run(PRODCONS, [src, out, early], block=(64, 1, 1))
    assert np.array_equal(res.outputs[1], src)
    # the consumer read SMEM before waiting on the mbarrier: the TMA had not landed yet -> zeros
    assert np.array_equal(res.outputs[2], np.zeros(128, np.uint32))


@pytest.mark.parametrize("seed", [1, 2])
def test_1d_result_independent_of_schedule(seed):
    src = np.arange(256, dtype=np.uint32) + 7
    out = np.zeros(256, np.uint32)
    res = run_launch(Launch(ptx=PRODCONS, args=[src, out, np.zeros(128, np.uint32)], block=(64, 1, 1)), seed=seed)
    assert np.array_equal(res.outputs[1], src)


@pytest.mark.parametrize("latency, bpc", [(0, 1 << 20), (300, 4)])
def test_1d_result_independent_of_tma_timing(latency, bpc):
    from tcsim.agents.tma import TmaParams
    src = np.arange(256, dtype=np.uint32) * 3
    out = np.zeros(256, np.uint32)
    res = run_launch(Launch(ptx=PRODCONS, args=[src, out, np.zeros(128, np.uint32)], block=(64, 1, 1)),
                     tma_params=TmaParams(latency, bpc))
    assert np.array_equal(res.outputs[1], src)
    assert (res.stats["cycles"] > 300) == (latency == 300)


def test_async_events_on_the_bus():
    rec = EventRecorder()
    src = np.arange(256, dtype=np.uint32)
    run_launch(Launch(ptx=PRODCONS, args=[src, np.zeros(256, np.uint32), np.zeros(128, np.uint32)],
                      block=(64, 1, 1)), observers=[rec])
    tma_mem = [e for e in rec.events if e.kind == "mem" and e.agent == "tma"]
    assert tma_mem and all(e.fields["proxy"] == "async" for e in tma_mem)
    assert {(e.fields["op"], e.fields["space"]) for e in tma_mem} == {("ld", "global"), ("st", "shared::cta")}
    ctx = [e for e in rec.events if e.kind == "sync" and e.fields["op"] == "mbarrier.complete_tx" and e.agent == "tma"]
    assert [e.fields["bytes"] for e in ctx] == [512, 512]
    assert any(e.kind == "sync" and e.fields["op"] == "mbarrier.phase" and e.agent == "tma" for e in rec.events)


# ---------------------------------------------------------------------------------------------- source read late
SRC_RACE = kernel(".param .u64 src, .param .u64 out", """
  .shared .align 128 .b8 buf[64];
  .shared .align 8 .b64 bar;
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mbarrier.init.shared::cta.b64 [%r4], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 64;
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd1], 64, [%r4];
  mov.u32 %r6, 777;
  st.global.u32 [%rd1], %r6;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
  ld.shared.u32 %r7, [%r5];
  st.global.u32 [%rd2], %r7;
""")


def test_load_reads_its_source_at_completion():
    # racy kernel: the source is overwritten right after the issue; the copy reads it later and sees 777
    src = np.arange(16, dtype=np.uint32) + 1
    res = run(SRC_RACE, [src, np.zeros(1, np.uint32)])
    assert res.outputs[1][0] == 777


# ---------------------------------------------------------------------------------------------- stores and groups
STORE = kernel(".param .u64 dst, .param .u64 out", """
  .shared .align 128 .b8 buf[256];
  mov.u32 %r1, %tid.x;
  mov.u32 %r5, buf;
  ld.param.u64 %rd1, [dst];
  ld.param.u64 %rd2, [out];
  shl.b32 %r2, %r1, 3;
  add.u32 %r3, %r5, %r2;
  cvt.u64.u32 %rd3, %r1;
  add.u64 %rd3, %rd3, 1000;
  st.shared.u64 [%r3], %rd3;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
@BODY@
DONE:
  ret;
""")


def store_kernel(body):
    return STORE.replace("@BODY@", body)


def smem_pattern(n=32):
    return np.arange(n, dtype=np.uint64) + 1000


def test_store_commit_wait():
    ptx = store_kernel("""
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r5], 256;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
""")
    res = run(ptx, [np.zeros(32, np.uint64), np.zeros(4, np.uint64)], block=(32, 1, 1))
    assert np.array_equal(res.outputs[0], smem_pattern())


def test_overwriting_a_store_source_before_wait_read_is_reported():
    # overwrite the source right after issuing: the store has not read it yet (on the GPU it may store either
    # value), so the race detector reports class 5 at the store's read, naming the overwriting instruction
    ptx = store_kernel("""
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r5], 256;
  cp.async.bulk.commit_group;
  mov.u64 %rd4, 5;
  st.shared.u64 [%r5], %rd4;
  cp.async.bulk.wait_group 0;
""")
    res = run(ptx, [np.zeros(32, np.uint64), np.zeros(4, np.uint64)], block=(32, 1, 1))
    f5 = [f for f in res.findings if f.cls == 5]
    assert len(f5) == 1, [str(f) for f in res.findings]
    whats = sorted(s.what for s in f5[0].sides)
    assert whats[0].startswith("cp.async.bulk.global.shared::cta.bulk_group") and \
        whats[1].startswith("st.shared.u64 [%r5], %rd4")
    assert "wait_group.read" in f5[0].missing and "8 bytes" in f5[0].message


def test_wait_group_read_then_reuse_smem():
    # .read: once it returns the source was read, so overwriting SMEM no longer changes what is stored
    ptx = store_kernel("""
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r5], 256;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
  mov.u64 %rd4, 5;
  st.shared.u64 [%r5], %rd4;
  cp.async.bulk.wait_group 0;
""")
    res = run(ptx, [np.zeros(32, np.uint64), np.zeros(4, np.uint64)], block=(32, 1, 1))
    assert np.array_equal(res.outputs[0], smem_pattern())


def test_wait_group_n_waits_only_for_older_groups():
    # three groups of one 64-byte store each; wait_group 1 guarantees groups 1 and 2, not group 3
    ptx = store_kernel("""
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r5], 64;
  cp.async.bulk.commit_group;
  add.u64 %rd5, %rd1, 64;
  add.u32 %r6, %r5, 64;
  cp.async.bulk.global.shared::cta.bulk_group [%rd5], [%r6], 64;
  cp.async.bulk.commit_group;
  add.u64 %rd6, %rd1, 128;
  add.u32 %r7, %r5, 128;
  cp.async.bulk.global.shared::cta.bulk_group [%rd6], [%r7], 128;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 1;
  ld.global.u64 %rd10, [%rd1];
  ld.global.u64 %rd11, [%rd5];
  ld.global.u64 %rd12, [%rd6];
  st.global.u64 [%rd2], %rd10;
  st.global.u64 [%rd2+8], %rd11;
  st.global.u64 [%rd2+16], %rd12;
  cp.async.bulk.wait_group 0;
  ld.global.u64 %rd12, [%rd6];
  st.global.u64 [%rd2+24], %rd12;
""")
    res = run(ptx, [np.zeros(32, np.uint64), np.zeros(4, np.uint64)], block=(32, 1, 1))
    assert list(res.outputs[1]) == [1000, 1008, 0, 1016]
    assert np.array_equal(res.outputs[0], smem_pattern())


def test_uncommitted_ops_are_not_waited_for_and_empty_groups_complete():
    ptx = store_kernel("""
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r5], 256;
  cp.async.bulk.wait_group 0;
  ld.global.u64 %rd10, [%rd1];
  st.global.u64 [%rd2], %rd10;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
  ld.global.u64 %rd10, [%rd1];
  st.global.u64 [%rd2+8], %rd10;
""")
    res = run(ptx, [np.zeros(32, np.uint64), np.zeros(4, np.uint64)], block=(32, 1, 1))
    assert list(res.outputs[1][:2]) == [0, 1000]


def test_cp_mask_store():
    ptx = store_kernel("""
  mov.u16 %rs1, 0x00F1;
  cp.async.bulk.global.shared::cta.bulk_group.cp_mask [%rd1], [%r5], 32, %rs1;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
""")
    dst = np.full(32, 0x1111111111111111, np.uint64)
    res = run(ptx, [dst, np.zeros(4, np.uint64)], block=(32, 1, 1))
    old = dst.view(np.uint8).reshape(-1).copy()
    new = smem_pattern().view(np.uint8).reshape(-1)
    keep = np.array([(0x00F1 >> (i % 16)) & 1 for i in range(32)], bool)
    exp = old.copy()
    exp[:32] = np.where(keep, new[:32], old[:32])
    assert np.array_equal(res.outputs[0].view(np.uint8).reshape(-1), exp)


# ---------------------------------------------------------------------------------------------- cluster forms
MULTICAST = HEAD + """
.visible .entry k(.param .u64 src, .param .u64 out)
{
  .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .pred %p<10>; .reg .b16 %rs<4>;
  .shared .align 128 .b8 buf[128];
  .shared .align 8 .b64 bar;
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  mov.u32 %r9, %cluster_ctarank;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mbarrier.init.shared::cta.b64 [%r4], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 128;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  setp.ne.u32 %p1, %r9, 0;
  @%p1 bra WAIT;
  mov.u16 %rs1, 3;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r5], [%rd1], 128, [%r4], %rs1;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
  ld.shared.u32 %r7, [%r5+4];
  mul.wide.u32 %rd3, %r9, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r7;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  ret;
}
"""


def test_multicast_delivers_to_every_selected_cta():
    src = np.arange(32, dtype=np.uint32) + 50
    res = run(MULTICAST, [src, np.zeros(2, np.uint32)], grid=(2, 1, 1), cluster=(2, 1, 1))
    assert list(res.outputs[1]) == [51, 51]
    for cta in res.simulation.ctas:
        assert np.array_equal(cta.smem.data[:128].view(np.uint32), src)


DSMEM = HEAD + """
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .pred %p<10>;
  .shared .align 128 .b8 buf[64];
  .shared .align 128 .b8 dstbuf[64];
  .shared .align 8 .b64 bar;
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  mov.u32 %r6, dstbuf;
  mov.u32 %r9, %cluster_ctarank;
  ld.param.u64 %rd2, [out];
  add.u32 %r1, %r9, 100;
  st.shared.u32 [%r5], %r1;
  mbarrier.init.shared::cta.b64 [%r4], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 64;
  fence.proxy.async.shared::cta;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  xor.b32 %r10, %r9, 1;
  mapa.shared::cluster.u32 %r11, %r6, %r10;
  mapa.shared::cluster.u32 %r12, %r4, %r10;
  @BAD@
  cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r11], [%r5], 64, [%r12];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4], 0;
  @!%p4 bra WAIT;
  ld.shared.u32 %r7, [%r6];
  mul.wide.u32 %rd3, %r9, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r7;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  ret;
}
"""


def test_shared_cta_to_peer_cta():
    res = run(DSMEM.replace("@BAD@", ""), [np.zeros(2, np.uint32)], grid=(2, 1, 1), cluster=(2, 1, 1))
    assert list(res.outputs[0]) == [101, 100]          # each CTA received its peer's rank + 100


def test_shared_cta_to_own_cta_faults():
    ptx = DSMEM.replace("@BAD@", "mov.u32 %r11, %r6;\n  mov.u32 %r12, %r4;")
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    with pytest.raises(MemoryFault, match="destination \\[dstMem\\] = 0x480 \\(lane 0\\) is in the executing CTA"):
        run(ptx, [np.zeros(2, np.uint32)], grid=(2, 1, 1), cluster=(2, 1, 1))


# ---------------------------------------------------------------------------------------------- faults
ONE = kernel(".param .u64 src, .param .u32 size, .param .u32 doff, .param .u64 soff", """
  .shared .align 128 .b8 buf[512];
  .shared .align 8 .b64 bar;
  mov.u32 %r4, bar;
  mov.u32 %r5, buf;
  ld.param.u64 %rd1, [src];
  ld.param.u32 %r1, [size];
  ld.param.u32 %r2, [doff];
  ld.param.u64 %rd2, [soff];
  add.u32 %r5, %r5, %r2;
  add.u64 %rd1, %rd1, %rd2;
  @INIT@
  cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd1], %r1, [%r4];
  ret;
""")
INIT = "mbarrier.init.shared::cta.b64 [%r4], 1;\n  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r4], 4096;"


def one(size, doff=0, soff=0, init=INIT):
    return run(ONE.replace("@INIT@", init), [np.zeros(256, np.uint32), size, doff, soff])


def test_fault_size_not_multiple_of_16():
    # an H100 moves only the first 96 bytes and signals 96 transaction bytes (probe bulk_size_not16_poll): a
    # class-18 finding at the copy, and the copy goes on rounded down; strict mode stops there
    res = one(100)
    [f] = res.findings
    assert f.cls == 18 and f.outcome == "continue"
    assert re.search(r"cp.async.bulk size is 100 bytes \(lane 0\), not a multiple of 16; the GPU raises no error but "
                     r"moves only 96 bytes", f.message)
    assert f.fix == "a size that is a multiple of 16 bytes (PTX ISA §9.7.9.25.4.1)"
    with pytest.raises(SyncError, match="not a multiple of 16"):
        run_launch(Launch(ptx=ONE.replace("@INIT@", INIT), args=[np.zeros(256, np.uint32), 100, 0, 0]), strict=True)


def test_fault_destination_misaligned():
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    with pytest.raises(MemoryFault, match=r"cp.async.bulk destination \[dstMem\] = 0x408 \(lane 0\) is not 16-byte "
                                          r"aligned"):
        one(64, doff=8)


def test_fault_source_misaligned():
    with pytest.raises(MemoryFault, match=r"cp.async.bulk source \[srcMem\] = 0x7f[0-9a-f]+ \(lane 0\) is not "
                                          r"16-byte aligned"):
        one(64, soff=4)


def test_fault_source_out_of_bounds_and_smem_out_of_bounds():
    with pytest.raises(MemoryFault, match=r"source \[srcMem\] range .* is not inside one global allocation"):
        one(1024 + 16)
    with pytest.raises(MemoryFault, match="out-of-bounds shared memory of CTA \\(0,0,0\\) cp.async.bulk destination"):
        one(512, doff=64)


def test_fault_uninitialised_mbarrier():
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    with pytest.raises(SyncError, match="no mbarrier was initialised at SMEM offset 0x600"):
        one(64, init="")


def test_fault_at_completion_is_located_at_the_issue():
    # the mbarrier is invalidated while the copy is in flight: complete-tx fails when the copy lands
    ptx = ONE.replace("@INIT@", INIT).replace("  ret;", "  mbarrier.inval.shared::cta.b64 [%r4];\n  ret;", 1)
    # shared offsets count from the window start: user bytes begin at 0x400 (tests/hw/golden_h100/address_layout.json)
    with pytest.raises(SyncError, match=r"<ptx>:22:3: sync error: complete-tx on SMEM offset 0x600, which holds no "
                                        r"initialised mbarrier .*\(in TMA engine of CTA \(0,0,0\), completing "
                                        r"cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes issued by "
                                        r"CTA \(0,0,0\) warp 0 lane 0 at cycle"):
        run(ptx, [np.zeros(256, np.uint32), 64, 0, 0])


def test_fault_multicast_mask_outside_cluster():
    ptx = MULTICAST.replace("mov.u16 %rs1, 3;", "mov.u16 %rs1, 5;")
    with pytest.raises(MemoryFault, match="ctaMask 0x0005 \\(lane 0\\) selects cluster rank 2, but the cluster has 2"):
        run(ptx, [np.zeros(32, np.uint32), np.zeros(2, np.uint32)], grid=(2, 1, 1), cluster=(2, 1, 1))


def test_prefetch_checks_operands():
    ok = kernel(".param .u64 src", "ld.param.u64 %rd1, [src];\n cp.async.bulk.prefetch.L2.global [%rd1], 64;")
    run(ok, [np.zeros(64, np.uint32)])
    bad = kernel(".param .u64 src", "ld.param.u64 %rd1, [src];\n add.u64 %rd1, %rd1, 8;\n"
                                    " cp.async.bulk.prefetch.L2.global.L2::cache_hint [%rd1], 64, %rd1;")
    with pytest.raises(MemoryFault, match=r"cp.async.bulk.prefetch source \[srcMem\] = .* not 16-byte aligned"):
        run(bad, [np.zeros(64, np.uint32)])


@pytest.mark.parametrize("text, err, msg", [
    ("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.ignore_oob [%r1], [%rd1], 16, 0, 0, [%r2];",
     UnsupportedError, "ignore_oob"),
    ("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r1], 16;",
     UnsupportedError, "non-tensor bulk reductions"),
    ("cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1];", VerifyError, "takes 3 operands"),
    ("cp.async.bulk.wait_group %r1;", VerifyError, "takes one integer constant N"),
    ("cp.async.bulk.shared::cta.global.bulk_group [%r1], [%rd1], 16;", VerifyError,
     "completes through .mbarrier::complete_tx::bytes"),
    ("cp.async.bulk.global.global.bulk_group [%rd1], [%rd1], 16;", UnsupportedError,
     "copy direction .global.global does not exist"),
])
def test_decode_diagnostics(text, err, msg):
    with pytest.raises(err, match=msg):
        run(kernel(".param .u64 p", text), [np.zeros(4, np.uint32)])


@pytest.mark.parametrize("wait", ["", "cp.async.bulk.wait_group.read 0;", "cp.async.bulk.wait_group 0;"])
def test_exit_before_a_store_has_read_its_smem_source_is_reported(wait):
    # the CTA leaves right after issuing: its shared memory may already belong to another CTA when the store
    # reads it, so without a wait that covers the source read this is a located SyncError
    ptx = store_kernel(f"""
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r5], 256;
  cp.async.bulk.commit_group;
  {wait}
""")
    args = [np.zeros(32, np.uint64), np.zeros(4, np.uint64)]
    if wait:
        assert np.array_equal(run(ptx, args, block=(32, 1, 1)).outputs[0], smem_pattern())
        return
    # an H100 completes the store with the right bytes (probe exit_with_bulk_store_pending): a class-14 finding,
    # the store goes on; strict mode stops there
    res = run(ptx, args, block=(32, 1, 1))
    assert np.array_equal(res.outputs[0], smem_pattern())
    # one finding, whichever check saw it first (the race detector at the exit, naming the exit line; the copy's
    # own residency check when it reads the source, also with the detector off)
    copy_line = next(i for i, t in enumerate(ptx.split("\n"), 1) if "cp.async.bulk.global.shared::cta" in t)
    for detect in (True, False):
        res = run_launch(Launch(ptx=ptx, args=args, block=(32, 1, 1)), detect=detect)
        [f] = res.findings
        assert f.cls == 14 and f.sides[0].line == copy_line and f.loc is not None
        assert re.search(r"CTA \(0,0,0\) exit(s \(line \d+\)|ed) while (its|the bulk async operation issued at "
                         r"line \d+)", f.message)
        assert "wait_group.read" in f.missing
    with pytest.raises(SyncError, match=r"CTA \(0,0,0\) exit") as ei:
        run_launch(Launch(ptx=ptx, args=args, block=(32, 1, 1)), strict=True)
    assert ei.value.loc is not None and "cp.async.bulk.global.shared::cta" in str(ei.value)
