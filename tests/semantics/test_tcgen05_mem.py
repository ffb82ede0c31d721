"""tcgen05 TMEM semantics (PTX ISA 9.1 §9.7.16.7.1 alloc/dealloc/relinquish, §9.7.16.8.3-5 ld/st/wait,
§9.7.16.11.1 fence): small sm_100a kernels compared with an independent per-cell numpy model of the register
maps of tcgen05_layouts.md (d), the asynchronous st, cta_group::2 allocation, blocking alloc, and one exact
diagnostic per misuse.  Every kernel is also fed to ``ptxas -arch=sm_100a`` (valid ones must assemble, the
decode-time errors must be rejected by ptxas too); that half skips when ptxas is not on PATH."""
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

from tcsim.isa.errors import DeadlockError, MemoryFault, SyncError, VerifyError
from tcsim.launch import Launch, run_launch

PTXAS = shutil.which("ptxas")
HEAD = ".version 8.7\n.target sm_100a\n.address_size 64\n"
K = 0x9E3779B1                   # fill pattern: cell (lane, col) holds (lane * 512 + col) * K mod 2^32
REGS_PER_NUM = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}
MAX_NUM = {"32x32b": 128, "16x64b": 128, "16x128b": 64, "16x256b": 32, "16x32bx2": 128}
NUMS = (1, 2, 4, 8, 16, 32, 64, 128)


# ------------------------------------------------------------------------------------------------ harness
def ptxas(text: str):
    """(returncode, output) of ptxas -arch=sm_100a on ``text``; None without ptxas."""
    if PTXAS is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run([PTXAS, "-arch=sm_100a", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout + r.stderr


def assert_ptxas(text: str, ok: bool = True, match: str | None = None) -> None:
    r = ptxas(text)
    if r is None:
        return                    # ptxas absent: the simulator half still runs
    rc, out = r
    if ok:
        assert rc == 0, f"ptxas rejects a test kernel:\n{out}"
    else:
        assert rc != 0, "ptxas accepts a kernel the simulator rejects"
        if match:
            assert match in out, out


def kernel(body: str) -> str:
    """A kernel with %r380 = tid.x, %r381 = warp, %r382 = lane id, %r383 = warp % 4, %p15 = (warp == 0),
    %rd1 = &out[(ctaid.x * ntid.x + tid.x) * 256] (uint32 slots), the TMEM address word at ``taddr``."""
    return HEAD + f"""
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<400>;
  .reg .b64 %rd<16>;
  .reg .pred %p<16>;
  .shared .align 16 .b32 taddr[4];
  ld.param.u64 %rd0, [out];
  mov.u32 %r380, %tid.x;
  shr.u32 %r381, %r380, 5;
  and.b32 %r382, %r380, 31;
  and.b32 %r383, %r381, 3;
  setp.eq.u32 %p15, %r381, 0;
  mov.u32 %r379, %ctaid.x;
  mov.u32 %r378, %ntid.x;
  mad.lo.u32 %r377, %r379, %r378, %r380;
  mul.wide.u32 %rd1, %r377, 1024;
  add.u64 %rd1, %rd0, %rd1;
{body}
  ret;
}}
"""


def launch(body, nthreads=128, cluster=(1, 1, 1), grid=None, check_ptxas=True, seed=None):
    text = kernel(body)
    if check_ptxas:
        assert_ptxas(text)
    grid = grid or cluster
    n = nthreads * grid[0] * grid[1] * grid[2]
    res = run_launch(Launch(ptx=text, grid=grid, block=(nthreads, 1, 1), cluster=cluster,
                            args=[np.zeros(n * 256, np.uint32)]), seed=seed)
    return res.outputs[0].reshape(n, 256), res


def vec(first: int, n: int) -> str:
    return "{" + ", ".join(f"%r{first + i}" for i in range(n)) + "}"


def store_out(first: int, n: int, slot: int) -> str:
    """Write registers %r<first>.. %r<first+n-1> to out[tid*256 + slot ...]."""
    lines = []
    i = 0
    while i < n:
        if n - i >= 4 and (slot + i) % 4 == 0:
            lines.append(f"  st.global.v4.u32 [%rd1+{4 * (slot + i)}], {vec(first + i, 4)};")
            i += 4
        else:
            lines.append(f"  st.global.u32 [%rd1+{4 * (slot + i)}], %r{first + i};")
            i += 1
    return "\n".join(lines) + "\n"


ALLOC = ("  @%p15 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], {n};\n"
         "  bar.sync 0;\n  ld.shared.b32 %r384, [taddr];\n"
         # %r385 = this warp's quadrant address: taddr + ((32 * q) << 16)
         "  shl.b32 %r385, %r383, 21;\n  add.u32 %r385, %r385, %r384;\n")
FREE = ("  bar.sync 0;\n"
        "  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r384, {n};\n"
        "  @%p15 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n")

# every warp fills its 32 lanes x 512 columns with the pattern through st.32x32b.x128 (4 column blocks)
FILL = ("  shl.b32 %r386, %r383, 5;\n  add.u32 %r386, %r386, %r382;\n"          # absolute lane 32q + t
        "  mul.lo.u32 %r387, %r386, 512;\n")                                  # lane * 512
for _blk in range(4):
    FILL += f"  add.u32 %r388, %r387, {128 * _blk};\n  mul.lo.u32 %r388, %r388, {K};\n"
    FILL += "".join(f"  add.u32 %r{200 + j}, %r388, {(j * K) & 0xFFFFFFFF};\n" for j in range(128))
    FILL += f"  add.u32 %r389, %r385, {128 * _blk};\n"
    FILL += f"  tcgen05.st.sync.aligned.32x32b.x128.b32 [%r389], {vec(200, 128)};\n"
FILL += "  tcgen05.wait::st.sync.aligned;\n  bar.sync 0;\n"


# the same pattern in columns 5 and 6 only (st.32x32b.x2 by every warp into its own quadrant)
FILL_5_6 = ("  shl.b32 %r386, %r383, 5;\n  add.u32 %r386, %r386, %r382;\n  mul.lo.u32 %r387, %r386, 512;\n"
            f"  add.u32 %r200, %r387, 5;\n  mul.lo.u32 %r200, %r200, {K};\n  add.u32 %r201, %r200, {K};\n"
            "  add.u32 %r389, %r385, 5;\n  tcgen05.st.sync.aligned.32x32b.x2.b32 [%r389], {%r200, %r201};\n"
            "  tcgen05.wait::st.sync.aligned;\n  bar.sync 0;\n")


def pattern_image() -> np.ndarray:
    lane, col = np.meshgrid(np.arange(128, dtype=np.uint64), np.arange(512, dtype=np.uint64), indexing="ij")
    return ((lane * 512 + col) * K % (1 << 32)).astype(np.uint32)


def model_cells(shape: str, num: int, off: int = 0):
    """Independent model of tcgen05_layouts.md (d): {(thread, register): (lane offset, column offset)}."""
    nreg = num * REGS_PER_NUM[shape]
    cells = {}
    for t in range(32):
        for j in range(nreg):
            if shape == "32x32b":
                cells[t, j] = (t, j)
            elif shape == "16x64b":
                cells[t, j] = (t // 4 + 8 * (t % 2), 2 * j + (t // 2) % 2)
            elif shape == "16x128b":
                cells[t, j] = (t // 4 + 8 * (j % 2), 4 * (j // 2) + t % 4)
            elif shape == "16x256b":
                cells[t, j] = (t // 4 + 8 * ((j // 2) % 2), 8 * (j // 4) + 2 * (t % 4) + j % 2)
            else:  # 16x32bx2
                cells[t, j] = (t % 16, j + (t // 16) * off)
    return nreg, cells


def lane_base(shape: str, q: int, upper: bool) -> int:
    return 32 * q + (16 if upper and shape != "32x32b" else 0)


# ------------------------------------------------------------------------------------------------ ld / st maps
def test_fill_with_st_32x32b_lands_in_tmem_as_the_model_says():
    out, res = launch(ALLOC.format(n=512) + FILL + "  st.global.u32 [%rd1], %r384;\n" + FREE.format(n=512))
    assert (out[:, 0] == 0).all()                               # first fit: column 0, lane 0
    tm = res.simulation.ctas[0].tmem
    assert (tm.data == pattern_image()).all()
    assert tm.leaks() == [] and tm.relinquished
    assert not getattr(res.simulation, "warnings", [])


@pytest.mark.parametrize("shape", list(REGS_PER_NUM))
def test_ld_every_num_matches_the_register_map(shape):
    """Load the filled TMEM with every .num of ``shape``; odd warps use the upper 16 lanes of their quadrant
    (16-lane shapes) and a column base of 8."""
    body = ALLOC.format(n=512) + FILL
    # %r390 = address: quadrant base + 16 lanes for odd warps (16-lane shapes) + 8 columns
    body += "  and.b32 %r391, %r381, 1;\n"
    if shape != "32x32b":
        body += "  shl.b32 %r391, %r391, 20;\n  add.u32 %r390, %r385, %r391;\n"
    else:
        body += "  mov.u32 %r390, %r385;\n"
    body += "  add.u32 %r390, %r390, 8;\n"
    slot = 0
    layout = []
    for n in NUMS:
        if n > MAX_NUM[shape]:
            continue
        nreg = n * REGS_PER_NUM[shape]
        extra = f", {n}" if shape == "16x32bx2" else ""
        body += f"  tcgen05.ld.sync.aligned.{shape}.x{n}.b32 {vec(0, nreg)}, [%r390]{extra};\n"
        body += "  tcgen05.wait::ld.sync.aligned;\n" + store_out(0, nreg, slot)
        layout.append((n, slot))
        slot += nreg
    assert slot <= 256
    out, _ = launch(body + FREE.format(n=512))
    img = pattern_image()
    for n, slot in layout:
        nreg, cells = model_cells(shape, n, off=n)
        for tid in range(128):
            q, t = tid // 32, tid % 32
            l0 = lane_base(shape, q, upper=(tid // 32) % 2 == 1)
            want = [img[l0 + cells[t, j][0], 8 + cells[t, j][1]] for j in range(nreg)]
            got = out[tid, slot:slot + nreg]
            assert got.tolist() == want, (shape, n, tid)


@pytest.mark.parametrize("shape", list(REGS_PER_NUM))
def test_ld_pack_16b_joins_the_low_halves_of_adjacent_columns(shape):
    body = ALLOC.format(n=512) + FILL
    slot, layout = 0, []
    for n in (1, 2, MAX_NUM[shape] // 2):
        nreg = n * REGS_PER_NUM[shape]
        extra = f", {n}" if shape == "16x32bx2" else ""
        body += f"  tcgen05.ld.sync.aligned.{shape}.x{n}.pack::16b.b32 {vec(0, nreg)}, [%r385]{extra};\n"
        body += store_out(0, nreg, slot)
        layout.append((n, slot))
        slot += (nreg + 3) // 4 * 4
    out, _ = launch(body + "  tcgen05.wait::ld.sync.aligned;\n" + FREE.format(n=512))
    img = pattern_image()
    for n, slot in layout:
        nreg, cells = model_cells(shape, n, off=n)
        for tid in range(0, 128, 5):
            q, t = tid // 32, tid % 32
            want = []
            for j in range(nreg):
                lane, d = 32 * q + cells[t, j][0], cells[t, j][1]
                want.append(int(img[lane, 2 * d]) & 0xFFFF | (int(img[lane, 2 * d + 1]) & 0xFFFF) << 16)
            assert out[tid, slot:slot + nreg].tolist() == want, (shape, n, tid)


def st_values_body(nreg: int) -> str:
    """%r0.. = (q << 24) | (t << 16) | (16 j + 7) for thread t of warp q."""
    return ("  shl.b32 %r392, %r383, 24;\n  shl.b32 %r393, %r382, 16;\n  or.b32 %r392, %r392, %r393;\n"
            + "".join(f"  add.u32 %r{j}, %r392, {16 * j + 7};\n" for j in range(nreg)))


def st_value(q, t, j):
    return (q << 24) | (t << 16) | (16 * j + 7)


@pytest.mark.parametrize("shape,num,unpack,off", [
    ("32x32b", 4, False, 0), ("16x64b", 8, False, 0), ("16x128b", 4, False, 0), ("16x256b", 2, False, 0),
    ("16x32bx2", 8, False, 8), ("16x32bx2", 4, False, 200), ("32x32b", 2, True, 0), ("16x64b", 4, True, 0),
    ("16x128b", 2, True, 0), ("16x256b", 1, True, 0), ("16x32bx2", 2, True, 3)])
def test_st_then_ld_round_trip_and_tmem_image(shape, num, unpack, off):
    nreg = num * REGS_PER_NUM[shape]
    extra = f", {off}" if shape == "16x32bx2" else ""
    st_q = ".unpack::16b" if unpack else ""
    ld_q = ".pack::16b" if unpack else ""
    body = ALLOC.format(n=512) + st_values_body(nreg)
    st_extra = f" {off}," if shape == "16x32bx2" else ""
    body += f"  tcgen05.st.sync.aligned.{shape}.x{num}{st_q}.b32 [%r385],{st_extra} {vec(0, nreg)};\n"
    body += "  tcgen05.wait::st.sync.aligned;\n"
    body += f"  tcgen05.ld.sync.aligned.{shape}.x{num}{ld_q}.b32 {vec(100, nreg)}, [%r385]{extra};\n"
    body += store_out(100, nreg, 0) + FREE.format(n=512)
    out, res = launch(body)
    want_img = np.zeros((128, 512), np.uint32)
    _, cells = model_cells(shape, num, off)
    for q in range(4):
        for t in range(32):
            for j in range(nreg):
                lane, col = 32 * q + cells[t, j][0], cells[t, j][1]
                v = st_value(q, t, j)
                if unpack:
                    want_img[lane, 2 * col] = v & 0xFFFF
                    want_img[lane, 2 * col + 1] = v >> 16
                else:
                    want_img[lane, col] = v
    for tid in range(128):
        assert out[tid, :nreg].tolist() == [st_value(tid // 32, tid % 32, j) for j in range(nreg)], tid
    assert (res.simulation.ctas[0].tmem.data == want_img).all()


def test_ld_without_pack_sees_the_zero_extended_halves_of_st_unpack():
    body = ALLOC.format(n=32) + "  mov.u32 %r0, 0xBEEF1234;\n"
    body += "  tcgen05.st.sync.aligned.32x32b.x1.unpack::16b.b32 [%r385], {%r0};\n  tcgen05.wait::st.sync.aligned;\n"
    body += "  tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r1, %r2}, [%r385];\n" + store_out(1, 2, 0)
    out, _ = launch(body + FREE.format(n=32))
    assert (out[:, 0] == 0x1234).all() and (out[:, 1] == 0xBEEF).all()


def test_f32_registers_and_an_address_offset():
    body = ALLOC.format(n=64) + """
  .reg .f32 %f<4>;
  cvt.rn.f32.u32 %f0, %r382;
  add.f32 %f1, %f0, 0f3F000000;
  tcgen05.st.sync.aligned.32x32b.x2.b32 [%r385+33], {%f0, %f1};
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%f2}, [%r385+34];
  mov.b32 %r0, %f2;
""" + store_out(0, 1, 0)
    out, res = launch(body + FREE.format(n=64))
    assert np.array_equal(out[:, 0].view(np.float32), (np.arange(128) % 32 + 0.5).astype(np.float32))
    assert res.simulation.ctas[0].tmem.data[5, 33] == np.float32(5.0).view(np.uint32)


# ------------------------------------------------------------------------------------------------ asynchrony
def test_st_without_wait_is_not_visible_and_warns():
    body = ALLOC.format(n=32) + """
  mov.u32 %r0, 111;
  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r385], {%r0};
  tcgen05.wait::st.sync.aligned;
  mov.u32 %r0, 222;
  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r385], {%r0};
  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%r385];
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r2}, [%r385];
  tcgen05.wait::ld.sync.aligned;
""" + store_out(1, 2, 0)
    out, res = launch(body + FREE.format(n=32))
    assert (out[:, 0] == 111).all(), "the load before wait::st must see the stale value"
    assert (out[:, 1] == 222).all()
    w = res.simulation.warnings
    assert len(w) == 1 and "has not completed" in w[0] and "missing tcgen05.wait::st" in w[0]


def test_other_warp_sees_stale_tmem_without_wait_st_and_fresh_data_with_it():
    """Warp 0 stores into quadrant 0, all warps sync, warp 4 (same quadrant) loads; with the wait the handoff
    is correct, without it the consumer reads the old contents."""
    def body(wait):
        return ALLOC.format(n=32) + f"""
  setp.eq.u32 %p1, %r381, 4;
  mov.u32 %r0, 77;
  @%p15 tcgen05.st.sync.aligned.32x32b.x1.b32 [%r385], {{%r0}};
  {"@%p15 tcgen05.wait::st.sync.aligned;" if wait else ""}
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  @%p1 tcgen05.ld.sync.aligned.32x32b.x1.b32 {{%r1}}, [%r385];
""" + store_out(1, 1, 0) + ("" if wait else "  @%p15 tcgen05.wait::st.sync.aligned;\n") + FREE.format(n=32)
    good, _ = launch(body(True), nthreads=160)
    bad, res = launch(body(False), nthreads=160)
    assert (good[128:160, 0] == 77).all()
    assert (bad[128:160, 0] == 0).all()
    assert res.simulation.warnings


# ------------------------------------------------------------------------------------------------ allocation
def test_alloc_first_fit_and_nonincreasing_sizes():
    body = """
  @%p15 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], 128;
  @%p15 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr+4], 64;
  @%p15 tcgen05.alloc.cta_group::1.sync.aligned.b32 [%rd3], 64;
  bar.sync 0;
  ld.shared.v4.u32 {%r0, %r1, %r2, %r3}, [taddr];
""" + store_out(0, 3, 0) + """
  bar.sync 0;
  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 64;
  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r0, 128;
  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 64;
  @%p15 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
"""
    # generic destination: cvta of taddr+8
    body = "  mov.u64 %rd2, taddr;\n  cvta.shared.u64 %rd3, %rd2;\n  add.u64 %rd3, %rd3, 8;\n" + body
    out, res = launch(body)
    assert out[0, :3].tolist() == [0, 128, 192]


def test_blocking_alloc_is_released_by_a_dealloc_in_another_warp():
    """Warp 0 holds all 512 columns; warp 1's alloc of 256 blocks until warp 0 frees them."""
    body = """
  setp.eq.u32 %p1, %r381, 1;
  @%p15 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], 512;
  @%p15 bar.arrive 1, 64;
  @%p1 bar.sync 1, 64;
  @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr+4], 256;
  @%p1 mov.u32 %r1, %clock;
  @!%p15 bra.uni SKIP;
  mov.u32 %r2, 0;
SPIN:
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p2, %r2, 50;
  @%p2 bra.uni SPIN;
  ld.shared.b32 %r3, [taddr];
  mov.u32 %r4, %clock;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 512;
SKIP:
  bar.sync 0;
  ld.shared.b32 %r5, [taddr+4];
  @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 256;
  bar.sync 0;
  @%p15 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
  st.global.u32 [%rd1], %r1;
  st.global.u32 [%rd1+4], %r4;
  st.global.u32 [%rd1+8], %r5;
"""
    out, res = launch(body, nthreads=64)
    granted, freed, addr = int(out[32, 0]), int(out[0, 1]), int(out[32, 2])
    assert addr == 0
    assert granted > freed > 100            # warp 1 waited through warp 0's spin loop and its dealloc
    assert res.simulation.ctas[0].tmem.leaks() == []


def test_cta_group_2_pair_allocates_the_same_columns_and_waits_for_the_late_peer():
    body = """
  mov.u32 %r10, %cluster_ctarank;
  setp.eq.u32 %p2, %r10, 1;
  @!%p15 bra.uni DONE;
  mov.u32 %r2, 0;
  @!%p2 bra.uni GO;
SPIN:
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p3, %r2, 40;
  @%p3 bra.uni SPIN;
GO:
  mov.u32 %r3, %clock;
  tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [taddr], 64;
  tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [taddr+4], 64;
  mov.u32 %r4, %clock;
  ld.shared.v2.u32 {%r0, %r1}, [taddr];
  add.u32 %r6, %r1, 5;
  mov.u32 %r7, %r10;
  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r6], {%r7};
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r5}, [%r6];
  tcgen05.wait::ld.sync.aligned;
  tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r1, 64;
  tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r0, 64;
  tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;
""" + store_out(0, 6, 0) + """
DONE:
  barrier.cluster.arrive;
  barrier.cluster.wait;
"""
    out, res = launch(body, nthreads=32, cluster=(2, 1, 1))
    c0, c1 = out[0], out[32]
    assert c0[:2].tolist() == [0, 64] and c1[:2].tolist() == [0, 64]
    assert c0[5] == 0 and c1[5] == 1                      # each CTA stored into its own TMEM
    assert c0[4] >= c1[3] > c0[3]                         # rank 0 was released only after rank 1 arrived
    for cta in res.simulation.ctas:
        assert cta.tmem.leaks() == [] and cta.tmem.relinquished
        assert cta.tmem.data[0, 69] == cta.rank


def test_cta_group_2_without_a_peer_is_an_error():
    text = kernel("  tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [taddr], 32;\n")
    assert_ptxas(text)
    with pytest.raises(SyncError, match=r"needs the peer CTA of rank 1, but the cluster has 1 CTA"):
        run_launch(Launch(ptx=text, block=(32, 1, 1), args=[np.zeros(32 * 256, np.uint32)]))


def test_cta_group_2_peer_that_never_allocates_deadlocks_with_a_reason():
    body = """
  mov.u32 %r10, %cluster_ctarank;
  setp.eq.u32 %p2, %r10, 0;
  @%p2 tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [taddr], 32;
  barrier.cluster.arrive;
  barrier.cluster.wait;
"""
    with pytest.raises(DeadlockError, match=r"waits for the peer CTA \(1,0,0\) \(rank 1\) to execute "
                                            r"tcgen05.alloc.cta_group::2"):
        launch(body, nthreads=32, cluster=(2, 1, 1))


def test_missing_relinquish_is_a_warning_not_an_error():
    body = ALLOC.format(n=32) + "  bar.sync 0;\n  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r384, 32;\n"
    _, res = launch(body)
    assert res.simulation.warnings == [
        "warning: CTA (0,0,0) allocated TMEM but never executed tcgen05.relinquish_alloc_permit (alloc with no "
        "relinquish at exit); legal PTX: the relinquish only forbids later allocations"]


def test_alloc_address_store_and_tmem_accesses_are_on_the_bus():
    from tcsim.observe import EventRecorder
    text = kernel("  tcgen05.alloc.cta_group::1.sync.aligned.b32 [taddr+4], 32;\n  ld.shared.b32 %r0, [taddr+4];\n"
                  "  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r0], {%r382};\n  tcgen05.wait::st.sync.aligned;\n"
                  "  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%r0];\n"
                  "  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r0, 32;\n")
    assert_ptxas(text)
    rec = EventRecorder(kinds=("mem", "sync"))
    res = run_launch(Launch(ptx=text, block=(32, 1, 1), args=[np.zeros(32 * 256, np.uint32)]), observers=[rec])
    st = rec.of("mem", op="tcgen05.alloc")
    assert len(st) == 1 and st[0].fields["space"] == "shared::cta" and st[0].fields["size"] == 4
    # the slot is at user byte 4; user bytes begin at window offset 0x400 (tests/hw/golden_h100/address_layout.json)
    assert st[0].fields["addrs"] == [res.simulation.ctas[0].shared_base() + 0x400 + 4]
    tm_st, tm_ld = rec.of("mem", op="st", space="tmem"), rec.of("mem", op="ld", space="tmem")
    assert len(tm_st) == 1 and len(tm_st[0].fields["addrs"]) == 32 and tm_st[0].fields["proxy"] == "async"
    assert tm_ld[0].cycle >= tm_st[0].cycle and tm_ld[0].fields["addrs"] == [l << 16 for l in range(32)]
    ops = [e.fields["op"] for e in rec.of("sync")]
    assert ops.index("tcgen05.alloc") < ops.index("async.issue") < ops.index("async.complete") \
        < ops.index("tcgen05.dealloc")


def test_results_do_not_depend_on_the_schedule_seed():
    body = ALLOC.format(n=512) + FILL
    body += f"  tcgen05.ld.sync.aligned.16x256b.x8.b32 {vec(0, 32)}, [%r385];\n" + store_out(0, 32, 0)
    outs = [launch(body + FREE.format(n=512), check_ptxas=(seed is None), seed=seed)[0] for seed in (None, 1, 7)]
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])


def test_exited_lanes_break_a_warp_collective():
    run_err("  setp.ge.u32 %p1, %r382, 16;\n  @%p1 exit;\n  tcgen05.wait::ld.sync.aligned;\n", SyncError,
            r"tcgen05.wait::ld is executed by a warp whose lanes 16-31 have already exited", nthreads=32)


def test_fences_emit_sync_events():
    from tcsim.observe import EventRecorder
    text = kernel("  tcgen05.fence::before_thread_sync;\n  bar.sync 0;\n  tcgen05.fence::after_thread_sync;\n")
    assert_ptxas(text)
    rec = EventRecorder(kinds=("sync",))
    run_launch(Launch(ptx=text, block=(32, 1, 1), args=[np.zeros(32 * 256, np.uint32)]), observers=[rec])
    fences = rec.of("sync", op="tcgen05.fence")
    assert [e.fields["fence"] for e in fences] == ["before_thread_sync", "after_thread_sync"]
    assert "prior async tcgen05" in fences[0].fields["ordering"]


# ------------------------------------------------------------------------------------------------ misuse
def run_err(body, err, match, nthreads=128, ptxas_ok=True, ptxas_match=None):
    text = kernel(body)
    assert_ptxas(text, ok=ptxas_ok, match=ptxas_match)
    with pytest.raises(err, match=match) as ei:
        run_launch(Launch(ptx=text, block=(nthreads, 1, 1), args=[np.zeros(nthreads * 256, np.uint32)]))
    return str(ei.value)


def run_findings(body, nthreads=128, cls=13, strict_err=True):
    """Sanitizer mode: the run goes on and lists the findings; strict mode raises the first (a SyncError)."""
    text = kernel(body)
    assert_ptxas(text)
    launch_ = Launch(ptx=text, block=(nthreads, 1, 1), args=[np.zeros(nthreads * 256, np.uint32)])
    res = run_launch(launch_)
    found = [f for f in res.findings if f.cls == cls]
    assert found, res.findings
    if strict_err:
        with pytest.raises(SyncError):
            run_launch(launch_, strict=True)
    return text, found


def line_of(text, needle, nth=0):
    return [i + 1 for i, l in enumerate(text.splitlines()) if needle in l][nth]


def test_tmem_out_of_range():
    msg = run_err(ALLOC.format(n=512) + "  add.u32 %r0, %r385, 500;\n"
                  "  tcgen05.ld.sync.aligned.32x32b.x16.b32 " + vec(10, 16) + ", [%r0];\n",
                  MemoryFault, r"tcgen05.ld.32x32b.x16 at TMEM address 0x000001f4 touches TMEM lanes \[0, 32\) x "
                               r"columns \[500, 516\) outside the 128 x 512 tensor memory of CTA \(0,0,0\)")
    assert "warp 0" in msg and ":" in msg.split("memory fault")[0]     # located at the ld with its warp


@pytest.mark.parametrize("lane_field", [0, 96])
def test_address_of_another_quadrant_is_routed_to_the_warps_own_lanes(lane_field):
    """Every warp loads with one address whose lane field names quadrant ``lane_field // 32`` (DeepGEMM's sm100
    epilogues pass lane 0 from all four warps and are right on the B200): the GPU routes the access to the warp's
    own quadrant, lanes 32q + lane_field % 32 .. (DeepGEMM PR #341: release builds auto-route, -G traps), so
    tcsim reads those cells and reports one warning for the line (strict mode raises it)."""
    body = (ALLOC.format(n=32) + FILL_5_6 + f"  add.u32 %r0, %r384, {(lane_field << 16) + 5};\n"
            "  tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r10, %r11}, [%r0];\n  tcgen05.wait::ld.sync.aligned;\n"
            + store_out(10, 2, 0) + FREE.format(n=32))
    out, res = launch(body)
    img = pattern_image()
    t = np.arange(128)
    assert (out[:, 0] == img[t, 5]).all() and (out[:, 1] == img[t, 6]).all()
    quad = [f for f in res.findings if "may access only lanes" in f.message]
    assert len(quad) == 1 and len(res.findings) == 1, res.findings
    f = quad[0]
    assert f.cls == 0 and f.severity == "warning" and f.outcome == "continue"
    assert f.loc.line == line_of(kernel(body), "tcgen05.ld.sync.aligned.32x32b.x2")
    q = int(re.search(r"warp (\d) of its warpgroup", f.message).group(1))
    assert q != lane_field // 32
    assert f"names TMEM lanes [{lane_field}, {lane_field + 32})" in f.message
    assert f"lanes [{32 * q}, {32 * q + 32})" in f.message and "<< 16" in f.fix
    with pytest.raises(SyncError, match="may access only lanes"):
        run_launch(Launch(ptx=kernel(body), block=(128, 1, 1), args=[np.zeros(128 * 256, np.uint32)]),
                   strict=True)


def test_box_that_leaves_the_quadrant_is_a_memory_fault():
    """A 32-lane box starting at lane 8 of a quadrant crosses into the next one, routed or not."""
    run_err(ALLOC.format(n=32) + "  add.u32 %r0, %r385, 0x80000;\n"
            "  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%r0];\n",
            MemoryFault, r"tcgen05.ld.32x32b.x1 at TMEM address 0x00080000: warp 0 of its warpgroup may access only "
                         r"TMEM lanes \[0, 32\), not \[8, 40\)")


def test_16_lane_box_in_another_quadrant_keeps_its_half():
    """16x64b from warp 1 at lane field 16 (quadrant 0, upper half): routed to lanes 48-63 of warp 1's quadrant."""
    body = (ALLOC.format(n=32) + FILL_5_6 + "  add.u32 %r0, %r384, 0x100005;\n"
            "  tcgen05.ld.sync.aligned.16x64b.x1.b32 {%r10}, [%r0];\n  tcgen05.wait::ld.sync.aligned;\n"
            + store_out(10, 1, 0) + FREE.format(n=32))
    out, res = launch(body)
    img = pattern_image()
    _, cells = model_cells("16x64b", 1)
    for t in range(32, 64):
        lo, co = cells[t % 32, 0]
        assert out[t, 0] == img[48 + lo, 5 + co], t
    assert sum("warp 1 of its warpgroup" in f.message for f in res.findings) == 1


def test_quadrant_comes_from_the_thread_ids_of_a_2d_block():
    """Block (16, 8): warp w holds tid.y = 2w, 2w+1; its quadrant is ((tid.x + 16 tid.y) / 32) % 4."""
    text = HEAD + """
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .pred %p<4>;
  .shared .align 4 .b32 taddr;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %tid.y;
  mad.lo.u32 %r2, %r1, 16, %r0;
  shr.u32 %r3, %r2, 5;
  and.b32 %r4, %r2, 31;
  and.b32 %r5, %r3, 3;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], 32;
  bar.sync 0;
  ld.shared.b32 %r6, [taddr];
  shl.b32 %r7, %r5, 21;
  add.u32 %r7, %r7, %r6;
  tcgen05.st.sync.aligned.16x64b.x1.b32 [%r7], {%r4};
  tcgen05.wait::st.sync.aligned;
  bar.sync 0;
  @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r6, 32;
  @%p1 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
  ret;
}
"""
    assert_ptxas(text)
    res = run_launch(Launch(ptx=text, block=(16, 8, 1), args=[np.zeros(4, np.uint32)]))
    data = res.simulation.ctas[0].tmem.data
    # 16x64b.x1: thread t -> lane t/4 + 8 (t%2), column (t/2)%2; thread 1 of warp 3 -> lane 96 + 8, column 0
    assert data[32 * 3 + 8, 0] == 1 and data[32 * 2 + 15, 1] == 31


def test_use_after_dealloc():
    """Class 13, both sides: the dealloc that freed the columns, then the ld (the GPU reads the cells: continue)."""
    text, (f,) = run_findings(ALLOC.format(n=32) + "  bar.sync 0;\n"
                              "  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r384, 32;\n"
                              "  bar.sync 0;\n  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r0}, [%r385];\n")
    assert "touches TMEM columns [0, 1) of CTA (0,0,0), but columns [0, 32) are not allocated" in f.message
    assert f.lines == (line_of(text, "tcgen05.dealloc"), line_of(text, "tcgen05.ld")) and f.outcome == "continue"
    assert "no access after dealloc" in f.missing


def test_ld_before_alloc():
    text, (f,) = run_findings("  tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r0, %r1}, [%r384];\n", nthreads=32)
    assert "columns [0, 32) are not allocated (never allocated)" in f.message
    assert "tcgen05.alloc before any TMEM access" in f.missing and f.lines == (line_of(text, "tcgen05.ld"),)


def test_st_beyond_the_allocation():
    _, found = run_findings(ALLOC.format(n=32) + "  tcgen05.st.sync.aligned.32x32b.x2.b32 [%r385+31], {%r0, %r1};\n"
                            "  tcgen05.wait::st.sync.aligned;\n", nthreads=32)
    assert any("tcgen05.st.32x32b.x2 at TMEM address 0x0000001f touches TMEM columns [31, 33) of CTA (0,0,0), but "
               "columns [32, 64) are not allocated" in f.message for f in found)


def test_double_free():
    run_err(ALLOC.format(n=64) + "  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r384, 64;\n"
            "  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r384, 64;\n",
            SyncError, r"tcgen05.dealloc of columns \[0, 64\) in CTA \(0,0,0\), which is not an allocation "
                       r"\(double free or wrong size\?\); allocated: none")


def test_dealloc_with_the_wrong_size():
    """A smaller nCols at the right start: the GPU frees the named columns (no check in the SASS); the rest leaks."""
    text, found = run_findings(ALLOC.format(n=64) + "  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r384, 32;\n")
    size, leak = found
    assert ("tcgen05.dealloc of columns [0, 32) in CTA (0,0,0), which is not an allocation (double free or wrong "
            "size?); allocated: [0, 64)") in size.message and "columns [32, 64) stay allocated" in size.message
    assert size.lines == (line_of(text, "tcgen05.alloc"), line_of(text, "tcgen05.dealloc"))
    assert "exited with TMEM columns still allocated: tcgen05.alloc of [32, 64)" in leak.message
    assert leak.lines == (line_of(text, "tcgen05.alloc"), line_of(text, "ret;"))


def test_dealloc_while_a_store_is_in_flight():
    run_err(ALLOC.format(n=32) + "  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r385], {%r0};\n"
            "  @%p15 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r384, 32;\n",
            SyncError, r"tcgen05.dealloc.cta_group::1 of columns \[0, 32\) in CTA \(0,0,0\) while a tcgen05.st into "
                       r"them \(issued at .*:\d+:\d+ by CTA \(0,0,0\) warp 0, cycle \d+\) has not completed",
            nthreads=32)


def test_alloc_after_relinquish():
    run_err("  @%p15 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n  bar.sync 0;\n"
            + ALLOC.format(n=32), SyncError,
            r"tcgen05.alloc.cta_group::1 in CTA \(0,0,0\) after tcgen05.relinquish_alloc_permit")


def test_alloc_growing_ncols():
    """A warning (nothing in the compiled code checks it); the leaks of the two allocations follow."""
    _, found = run_findings("  @%p15 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], 32;\n"
                            "  @%p15 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr+4], 64;\n")
    grow = found[0]
    assert grow.severity == "warning" and ("tcgen05.alloc.cta_group::1 of 64 columns in CTA (0,0,0) follows an "
                                           "allocation of 32 columns; the number of columns must not increase"
                                           in grow.message)


def test_leak_at_exit():
    text, (f,) = run_findings(ALLOC.format(n=128))
    assert re.search(r"CTA \(0,0,0\) exited with TMEM columns still allocated: tcgen05.alloc of \[0, 128\) "
                     r"\(allocated at .*:\d+:\d+ by CTA \(0,0,0\) warp 0\) never deallocated", f.message)
    assert f.lines == (line_of(text, "tcgen05.alloc"), line_of(text, "ret;")) and f.outcome == "continue"


def test_wrong_vector_length_is_a_load_time_error():
    run_err("  tcgen05.ld.sync.aligned.16x128b.x2.b32 {%r0, %r1, %r2}, [%r384];\n", VerifyError,
            r"tcgen05.ld.sync.aligned.16x128b.x2.b32: needs a vector of 4 .b32 registers for .16x128b.x2, got 3",
            ptxas_ok=False, ptxas_match="vector size mismatch")


def test_too_many_registers_for_the_shape():
    run_err("  tcgen05.ld.sync.aligned.16x256b.x64.b32 " + vec(0, 256) + ", [%r384];\n", VerifyError,
            r"\.x64 is not allowed with shape \.16x256b \(256 registers\)", ptxas_ok=False,
            ptxas_match="not allowed")


def test_alloc_ncols_not_a_power_of_two():
    run_err("  @%p15 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], 96;\n", VerifyError,
            r"nCols 96 is not a power of two", ptxas_ok=False, ptxas_match="power of 2")
    run_err("  mov.u32 %r0, 96;\n  @%p15 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], %r0;\n",
            SyncError, r"tcgen05.alloc/dealloc of 96 columns.*Expected: a power of two in \[32, 512\]")


def test_divergent_warp_on_sync_aligned():
    run_err("  setp.lt.u32 %p1, %r382, 16;\n"
            "  @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], 32;\n", SyncError,
            r"tcgen05.alloc.cta_group::1 is warp-collective but lanes 16-31 of the member mask 0xffffffff are not "
            r"executing it together with lanes 0-15", nthreads=32)


def test_lanes_disagreeing_on_taddr():
    run_err(ALLOC.format(n=32) + "  add.u32 %r0, %r385, %r382;\n"
            "  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%r0];\n", SyncError,
            r"TMEM address differs between the lanes of the warp \(lane 0: 0, lane 1: 1\)", nthreads=32)


def test_mixed_cta_group_is_a_load_time_error_naming_both_lines():
    body = ("  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], 32;\n"
            "  tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;\n")
    text = kernel(body)
    line_alloc = text.splitlines().index(body.splitlines()[0]) + 1
    msg = run_err(body, VerifyError, r"uses \.cta_group::1 but tcgen05\.relinquish_alloc_permit\.cta_group::2\."
                                     r"sync\.aligned at .*:\d+:\d+ uses \.cta_group::2", nthreads=32,
                  ptxas_ok=False, ptxas_match="cta_group::2")
    assert f":{line_alloc}:" in msg and f":{line_alloc + 1}:" in msg


def test_tcgen05_needs_an_sm100_target():
    text = kernel("  tcgen05.wait::ld.sync.aligned;\n").replace("sm_100a", "sm_90a")
    with pytest.raises(VerifyError, match=r"requires an sm_100a-family target, but the module targets sm_90a"):
        run_launch(Launch(ptx=text, block=(32, 1, 1), args=[np.zeros(32 * 256, np.uint32)]))


def test_ld_red_is_unsupported():
    from tcsim.isa.errors import UnsupportedError
    text = kernel("  tcgen05.ld.red.sync.aligned.32x32b.x2.min.u32 {%r0, %r1}, %r2, [%r384];\n")
    with pytest.raises(UnsupportedError, match=r"tcgen05.ld.red is not supported"):
        run_launch(Launch(ptx=text, block=(32, 1, 1), args=[np.zeros(32 * 256, np.uint32)]))


def test_cell_access_by_block_equals_per_cell_indexing():
    """TensorMemory's raw cell access takes a block of consecutive lanes x columns (an MMA's D, its C) as slices:
    the same words as indexing every cell, writes land on the same cells, and any other indexing (gaps, duplicates,
    past the grid) still goes through the index arrays (an IndexError past the grid, as before)."""
    from tcsim.tmem import COLUMNS, LANES, TensorMemory
    rng = np.random.default_rng(18)
    tm = TensorMemory(None, "t")
    ref = rng.integers(0, 1 << 32, (LANES, COLUMNS), dtype=np.uint64).astype(np.uint32)
    tm.write_cells(np.arange(LANES)[:, None], np.arange(COLUMNS)[None, :], ref)
    assert np.array_equal(tm.peek(0, LANES, 0, COLUMNS), ref)
    for lanes, cols in [(np.arange(32, 96)[:, None], np.arange(100, 356)[None, :]),
                        (np.arange(5, 6)[:, None], np.arange(511, 512)[None, :]),
                        (np.array([[3], [5], [4]]), np.arange(8)[None, :]),          # not consecutive
                        (np.arange(4)[:, None], np.array([[7, 7, 9]]))]:             # a duplicate column
        got = tm.read_cells(lanes, cols)
        assert np.array_equal(got, ref[lanes, cols])
        got[...] = 0                                    # a copy: the cells keep their words
        assert np.array_equal(tm.peek(0, LANES, 0, COLUMNS), ref)
        vals = rng.integers(0, 1 << 32, np.broadcast(lanes, cols).shape, dtype=np.uint64).astype(np.uint32)
        tm.write_cells(lanes, cols, vals)
        ref[lanes, cols] = vals
        assert np.array_equal(tm.peek(0, LANES, 0, COLUMNS), ref)
    with pytest.raises(IndexError):
        tm.read_cells(np.arange(120, 130)[:, None], np.arange(4)[None, :])
    with pytest.raises(IndexError):
        tm.write_cells(np.arange(4)[:, None], np.arange(510, 514)[None, :], 0)
