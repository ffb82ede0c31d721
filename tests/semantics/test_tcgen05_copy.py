"""tcgen05.cp and tcgen05.shift (sim/semantics/tcgen05_copy.py), plus tcgen05.commit forms, end to end.

Kernels and the independent models of the canonical SMEM layout and of TMEM come from test_tcgen05_mma.py
(the same directory); the expected TMEM contents of each copy shape are written here from
tcgen05_layouts.md (e).  Every kernel passes ptxas -arch=sm_100a (skipped without ptxas).
"""
from __future__ import annotations

import numpy as np
import pytest

from tcsim.isa.descriptors import InstrDescriptorBlockScaled
from tcsim.isa.errors import VerifyError
from tcsim.numerics.tensor_core import mma_block_scaled
from test_tcgen05_mma import oracle_replay  # noqa: E402  (issue 22: checked numerics)
from test_tcgen05_mma import (arg, check_ptxas, desc, kernel, model_addr, operands, place, read_d, run, strides,
                              tmem_at)

tc_params = oracle_replay.checked_tc_params


def cp_issue(quals: str, col: int, lane: int = 0, cg: int = 1, nargs_base: int = 0) -> str:
    return "\n".join([arg(nargs_base, "%rd10"), tmem_at(col, "%r21", lane),
                      f"  tcgen05.cp.cta_group::{cg}.{quals} [%r21], %rd10;"])


def source(rows: int, row_bytes: int, swz: str, rng, variant: int = 0, start: int = 0):
    """A random rows x row_bytes byte matrix placed K-major in an SMEM image; (bytes, image, descriptor)."""
    X = rng.integers(0, 256, (rows, row_bytes)).astype(np.uint8)
    pad_rows = max(rows, 8)
    lbo, sbo, size = strides(pad_rows, row_bytes, 8, "K", swz, variant)
    img = np.zeros(start + size + 64, np.uint8)
    place(img, X, 8, "K", swz, start, lbo, sbo)
    return X, img, desc(start, lbo, sbo, swz)


def expected_lanes(shape: str, multicast: str | None, r: int) -> list:
    """tcgen05_layouts.md (e) Table: destination lanes of source row r."""
    if shape in ("128x256b", "128x128b"):
        return [r]
    if shape == "4x256b":
        return [32 * r]
    if multicast == "warpx2::02_13":
        return [r % 32 + 32 * (r // 32), r % 32 + 32 * (r // 32) + 64]
    if multicast == "warpx2::01_23":
        return [r % 32 + 64 * (r // 32), r % 32 + 64 * (r // 32) + 32]
    return [r + 32 * p for p in range(4)]


CP_CASES = [("128x256b", None, "none", 0), ("128x256b", None, "128B", 0), ("128x128b", None, "none", 1),
            ("128x128b", None, "32B", 0), ("4x256b", None, "none", 0), ("64x128b", "warpx2::02_13", "none", 0),
            ("64x128b", "warpx2::01_23", "64B", 0), ("32x128b", "warpx4", "none", 0)]


@pytest.mark.parametrize("shape, multicast, swz, variant", CP_CASES)
def test_cp_shapes(shape, multicast, swz, variant):
    rng = np.random.default_rng(hash((shape, multicast, swz)) % 2**32)
    rows, bits = (int(x) for x in shape[:-1].split("x"))
    nb = bits // 8
    X, img, d = source(rows, nb, swz, rng, variant)
    quals = shape + (f".{multicast}" if multicast else "")
    dump, _ = run(kernel(cp_issue(quals, 8), ncols=32), img, [d], ncols=32)
    exp = np.zeros((128, 32), np.uint32)
    words = X.view("<u4").reshape(rows, nb // 4)
    for r in range(rows):
        for ln in expected_lanes(shape, multicast, r):
            exp[ln, 8:8 + nb // 4] = words[r]
    assert np.array_equal(dump[0], exp)


def unpack_model(chunk: bytes, width: int) -> list:
    v = int.from_bytes(chunk, "little")
    return [(v >> (width * i)) & ((1 << width) - 1) for i in range(16)]


@pytest.mark.parametrize("fmt, width", [("b6x16_p32", 6), ("b4x16_p64", 4)])
def test_cp_decompression(fmt, width):
    rng = np.random.default_rng(30)
    X, img, d = source(128, 32, "none", rng)
    dump, _ = run(kernel(cp_issue(f"128x256b.b8x16.{fmt}", 0), ncols=32), img, [d], ncols=32)
    exp = np.zeros((128, 32), np.uint8)
    for r in range(128):
        for c in range(2):
            vals = unpack_model(X[r, 16 * c:16 * c + 16].tobytes(), width)
            exp[r, 16 * c:16 * c + 16] = [(v << 2) if width == 4 else v for v in vals]
    got = dump[0][:, 0:8].copy().view(np.uint8).reshape(128, 32)
    assert np.array_equal(got, exp)


def test_cp_cta_group_2_writes_both_ctas():
    rng = np.random.default_rng(31)
    srcs = [source(128, 16, "none", rng) for _ in range(2)]
    ptx = kernel(cp_issue("128x128b", 4, cg=2), ncols=32, cg=2)
    dump, _ = run(ptx, [srcs[0][1], srcs[1][1]], [srcs[0][2]], ncols=32, cg=2)
    for v in range(2):
        assert np.array_equal(dump[v][:, 4:8], srcs[v][0].view("<u4").reshape(128, 4))


def test_shift_down_one_subpartition():
    tinit = np.arange(128 * 16, dtype=np.uint32).reshape(1, 128, 16) + 1000
    issue = "\n".join([tmem_at(4, "%r21", 32), "  tcgen05.shift.cta_group::1.down [%r21];"])
    dump, _ = run(kernel(issue, ncols=32, tinit=(0, 16)), np.zeros(16, np.uint8), [0], ncols=32, tinit=tinit)
    exp = np.zeros((128, 32), np.uint32)
    exp[:, :16] = tinit[0]
    exp[33:64, 4:12] = tinit[0, 32:63, 4:12]                 # rows 32..62 -> 33..63; lane 32 keeps its row
    assert np.array_equal(dump[0], exp)


def test_shift_then_cp_4x256b_refills_and_mma_sees_it():
    """shift -> cp.4x256b and cp -> mma are pipelined in issue order (no waits in between)."""
    rng = np.random.default_rng(32)
    tinit = rng.integers(0, 2**32, (1, 128, 8), dtype=np.uint64).astype(np.uint32)
    X, img, d = source(4, 32, "none", rng)
    issue = "\n".join([tmem_at(0, "%r21", 0), "  tcgen05.shift.cta_group::1.down [%r21];",
                       tmem_at(0, "%r22", 32), "  tcgen05.shift.cta_group::1.down [%r22];",
                       arg(0, "%rd10"), "  tcgen05.cp.cta_group::1.4x256b [%r21], %rd10;"])
    dump, _ = run(kernel(issue, ncols=32, tinit=(0, 8)), img, [d], ncols=32, tinit=tinit)
    exp = tinit[0].copy()
    for q in (0, 1):
        exp[32 * q + 1:32 * q + 32] = tinit[0, 32 * q:32 * q + 31]
    words = X.view("<u4").reshape(4, 8)
    for r in range(4):
        exp[32 * r] = words[r]
    assert np.array_equal(dump[0][:, :8], exp)


def test_shift_lane_must_be_multiple_of_32():
    issue = "\n".join([tmem_at(0, "%r21", 16), "  tcgen05.shift.cta_group::1.down [%r21];"])
    with pytest.raises(VerifyError) as e:
        run(kernel(issue, ncols=32), np.zeros(16, np.uint8), [0], ncols=32)
    assert e.value.message == ("tcgen05.shift [taddr] lane field 16 (lane 0) is not a multiple of 32 "
                               "[rule shift-lane]")


def test_cp_outside_allocation_is_a_class_13_finding():
    """The GPU writes the physical cells (no allocation check without -g-tmem-access-check): the run goes on with a
    class-13 finding at the cp line (tcsim.race.tmem_alloc); the allocated columns 28-31 get the data."""
    rng = np.random.default_rng(33)
    X, img, d = source(128, 32, "none", rng)
    ptx = kernel(cp_issue("128x256b", 28), ncols=32)
    dump, res = run(ptx, img, [d], ncols=32)
    (f,) = [f for f in res.findings if f.cls == 13]
    assert "columns [28, 36)" in f.message and "columns [32, 64) are not allocated" in f.message
    assert "tcgen05.cp" in f.sides[-1].what and f.outcome == "continue"
    assert np.array_equal(dump[0][:, 28:32], X.view("<u4").reshape(128, 8)[:, :4])


# ---------------------------------------------------------------------------------------------- cp -> block-scaled mma
def sf_chunk(sf: np.ndarray) -> np.ndarray:
    """CUTLASS "32x4x4" scale-factor chunk (tcgen05_layouts.md (c)): byte (r%32)*16 + (r/32)*4 + s for 128 rows
    x 4 factors."""
    out = np.zeros(512, np.uint8)
    for r in range(128):
        for s in range(sf.shape[1]):
            out[(r % 32) * 16 + (r // 32) * 4 + s] = sf[r, s]
    return out


def test_scale_factors_via_cp_warpx4_then_mxf4nvf4():
    """The CUTLASS / nvfp4-GEMM flow: SFA and SFB chunks in SMEM, tcgen05.cp.32x128b.warpx4 to TMEM, then
    tcgen05.mma.kind::mxf4nvf4.block_scale.block16 -- no wait between the copies and the MMA."""
    rng = np.random.default_rng(34)
    m, n, K = 128, 128, 64
    A, B, img, da, db = operands("mxf4nvf4", "e2m1", "e2m1", m, n, K, "K", "K", "none", "none", rng)
    sfa = rng.integers(0x28, 0x48, (m, 4)).astype(np.uint8)
    sfb = rng.integers(0x28, 0x48, (n, 4)).astype(np.uint8)
    base = (len(img) + 1023) // 1024 * 1024
    img2 = np.zeros(base + 1024, np.uint8)
    img2[:len(img)] = img
    img2[base:base + 512] = sf_chunk(sfa)
    img2[base + 512:base + 1024] = sf_chunk(sfb)
    sd_a = desc(base, 16, 128, "none")
    sd_b = desc(base + 512, 16, 128, "none")
    idesc = InstrDescriptorBlockScaled.for_kind("mxf4nvf4", m, n, "e2m1", "e2m1", "ue4m3").encode()
    issue = "\n".join([arg(3, "%rd13"), arg(4, "%rd14"), tmem_at(0, "%r24"), tmem_at(4, "%r25"),
                       "  tcgen05.cp.cta_group::1.32x128b.warpx4 [%r24], %rd13;",
                       "  tcgen05.cp.cta_group::1.32x128b.warpx4 [%r25], %rd14;",
                       arg(0, "%rd10"), arg(1, "%rd11"), arg(2, "%rd12"), "  cvt.u32.u64 %r20, %rd12;",
                       tmem_at(128, "%r21"),
                       "  tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 [%r21], %rd10, %rd11, %r20, "
                       "[%r24], [%r25], 0;"])
    dump, _ = run(kernel(issue, ncols=256), img2, [da, db, idesc, sd_a, sd_b], ncols=256)
    p = tc_params("sm_100a", "tcgen05", "e2m1", kind="mxf4nvf4")
    exp = mma_block_scaled(A, B.T.copy(), np.zeros((m, n), np.uint32), sfa, sfb.T.copy(), "e2m1", "e2m1", "ue4m3",
                           16, p)
    assert np.array_equal(read_d(dump[0], m, n, 128), exp)


# ---------------------------------------------------------------------------------------------- commit forms
def commit_kernel(commit: str, mask_rank: bool = True) -> str:
    """Two CTAs (cluster of 2, cta_group::1): rank 0 copies 16 bytes into its TMEM and commits with ``commit``;
    each CTA waits on its own mbarrier, then records its phase."""
    return f""".version 8.8
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<32>;
  .reg .b64 %rd<16>;
  .reg .pred %p<8>;
  .reg .b16 %rs<4>;
  .shared .align 1024 .b8 smem[1024];
  .shared .align 8 .b64 bar;
  .shared .align 4 .b32 tslot;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r10, tslot;
  mov.u32 %r11, bar;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r10], 32;
  setp.eq.u32 %p1, %r1, 0;
  @!%p1 bra INITED;
  mbarrier.init.shared::cta.b64 [%r11], 1;
INITED:
  tcgen05.fence::before_thread_sync;
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  tcgen05.fence::after_thread_sync;
  ld.shared.u32 %r12, [tslot];
  setp.eq.and.u32 %p2, %r2, 0, %p1;
  @!%p2 bra ISSUED;
  mov.b64 %rd1, {SMEM_DESC};
  tcgen05.cp.cta_group::1.4x256b [%r12], %rd1;
{commit}
ISSUED:
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r11], 0;
  @!%p3 bra WAIT;
  tcgen05.fence::before_thread_sync;
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r12, 32;
  ret;
}}
"""


SMEM_DESC = desc(0, 16, 128, "none")


def run_commit(commit: str, cluster=2):
    from tcsim.launch import Launch, run_launch
    ptx = commit_kernel(commit)
    check_ptxas(ptx)
    return run_launch(Launch(ptx=ptx, grid=(cluster, 1, 1), cluster=(cluster, 1, 1), block=(32, 1, 1),
                             args=[np.zeros(4, np.uint32)]))


def test_commit_multicast_arrives_in_every_masked_cta():
    res = run_commit("  mov.b16 %rs1, 3;\n  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster."
                     "multicast::cluster.b64 [%r11], %rs1;")
    assert [c.mbarriers[min(c.mbarriers)].phase for c in res.simulation.ctas] == [1, 1]


def test_commit_generic_address():
    commit = ("  cvta.shared.u64 %rd2, bar;\n"
              "  tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [%rd2];\n"
              "  mapa.shared::cluster.u32 %r20, %r11, 1;\n"
              "  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r20];")
    res = run_commit(commit)
    assert [c.mbarriers[min(c.mbarriers)].phase for c in res.simulation.ctas] == [1, 1]


def test_commit_to_uninitialised_mbarrier_is_a_sync_error():
    from tcsim.isa.errors import SyncError
    with pytest.raises(SyncError) as e:
        # bar + 8 (tslot): a user shared word that holds no mbarrier.  (bar - 8 was used before: with the unused
        # smem[] taking no address, as ptxas lays it out, bar is the first user byte (0x400) and bar - 8 lies in the
        # reserved bytes, a located MemoryFault; tests/hw/golden_h100/address_layout.json)
        run_commit("  add.u32 %r20, %r11, 8;\n"
                   "  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r20];")
    assert "no mbarrier was initialised" in e.value.message
    assert "tcgen05.commit" in e.value.loc.text


def test_model_addr_sanity():
    """The copy source model puts row r, byte b of a no-swizzle K-major matrix at (r%8)*16 + (r//8)*SBO +
    (b//16)*LBO + b%16."""
    assert model_addr(9, 17, 8, "K", "none", 0, 2048, 128) == (16 + 128 + 2048 + 1, 0)
