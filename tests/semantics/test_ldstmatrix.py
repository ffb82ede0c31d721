"""ldmatrix / stmatrix / movmatrix (sim/semantics/ldstmatrix.py), PTX ISA §9.7.14.5.15-17.

SMEM tiles are filled from global memory by the kernel; every lane's row address comes from a per-lane
offset table (so rows are scattered, not contiguous).  The numpy side implements the PTX text directly:
register m of thread T = {M_m[T/4][2(T%4)], M_m[T/4][2(T%4)+1]}, .trans = the same on the transpose.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault, SyncError, UnsupportedError, VerifyError
from tcsim.launch import Launch, run_launch
from tcsim.numerics.tensor_core import mma_float

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "numerics"))
import oracle_replay  # noqa: E402  (expected D from numerics checked against the recorded data: issue 22)

tc_params = oracle_replay.checked_tc_params

SMEM_ROWS = 64          # 64 rows of 16 bytes


def ref_regs(tiles, trans):
    """tiles: list of 8x8 uint16 matrices as stored; -> (32, num) uint32 registers per the PTX text."""
    out = np.zeros((32, len(tiles)), dtype=np.uint32)
    for m, M in enumerate(tiles):
        X = M.T if trans else M
        for T in range(32):
            out[T, m] = int(X[T // 4, 2 * (T % 4)]) | (int(X[T // 4, 2 * (T % 4) + 1]) << 16)
    return out


def head(arch="sm_90a"):
    return f".version 8.7\n.target {arch}\n.address_size 64\n"


# Kernel prologue: copy src (SMEM_ROWS x 16 bytes) into smem, lane L copying rows L and L+32;
# %r2 = this lane's row address = smem + offs[lane]; %r1 = lane; %rd3 = out.
PROLOGUE = f"""
.visible .entry k(.param .u64 src, .param .u64 offs, .param .u64 out)
{{
  .shared .align 16 .b8 smem[{16 * SMEM_ROWS}];
  .reg .pred %p<2>;
  .reg .b32 %r<16>;
  .reg .b32 %v<8>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [offs];
  ld.param.u64 %rd3, [out];
  mov.u32 %r1, %laneid;
  mov.u32 %r3, smem;
  mul.wide.u32 %rd4, %r1, 16;
  add.s64 %rd5, %rd1, %rd4;
  mul.lo.u32 %r4, %r1, 16;
  add.u32 %r5, %r3, %r4;
  ld.global.v4.b32 {{%v0, %v1, %v2, %v3}}, [%rd5];
  st.shared.v4.b32 [%r5], {{%v0, %v1, %v2, %v3}};
  ld.global.v4.b32 {{%v0, %v1, %v2, %v3}}, [%rd5+512];
  st.shared.v4.b32 [%r5+512], {{%v0, %v1, %v2, %v3}};
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd2, %rd6;
  ld.global.u32 %r6, [%rd7];
  add.u32 %r2, %r3, %r6;
"""


def ld_kernel(num, trans, space=".shared", arch="sm_90a"):
    regs = ", ".join(f"%r{8 + j}" for j in range(num))
    stores = "\n".join(f"  st.global.b32 [%rd9+{4 * j}], %r{8 + j};" for j in range(num))
    addr = "%r2"
    extra = ""
    if space == "":
        extra = "  mul.wide.u32 %rd10, %r2, 1;\n  cvta.shared.u64 %rd11, %rd10;\n"
        addr = "%rd11"
    return head(arch) + PROLOGUE + f"""{extra}
  ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}{space}.b16 {{{regs}}}, [{addr}];
  mul.wide.u32 %rd8, %r1, {4 * num};
  add.s64 %rd9, %rd3, %rd8;
{stores}
  ret;
}}
"""


def random_setup(rng, num, misalign=False):
    src = rng.integers(0, 1 << 16, size=(SMEM_ROWS, 8)).astype(np.uint16)
    rows = rng.permutation(SMEM_ROWS)[:32]                  # lane L supplies smem row rows[L]
    offs = (rows * 16).astype(np.uint32)
    if misalign:
        offs[3] += 8
    return src, rows, offs


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix(num, trans):
    rng = np.random.default_rng(10 * num + trans)
    src, rows, offs = random_setup(rng, num)
    out = np.zeros((32, num), dtype=np.uint32)
    r = run_launch(Launch(ptx=ld_kernel(num, trans), block=(32, 1, 1), args=[src, offs, out]))
    tiles = [src[rows[8 * m:8 * m + 8]] for m in range(num)]
    assert (r.outputs[2] == ref_regs(tiles, trans)).all()


def test_ldmatrix_generic_address_and_shared_cta():
    rng = np.random.default_rng(5)
    src, rows, offs = random_setup(rng, 2)
    tiles = [src[rows[8 * m:8 * m + 8]] for m in range(2)]
    for space in ("", ".shared::cta"):
        out = np.zeros((32, 2), dtype=np.uint32)
        r = run_launch(Launch(ptx=ld_kernel(2, True, space), block=(32, 1, 1), args=[src, offs, out]))
        assert (r.outputs[2] == ref_regs(tiles, True)).all()


def test_ldmatrix_misaligned_row_is_a_memory_fault():
    rng = np.random.default_rng(6)
    src, rows, offs = random_setup(rng, 4, misalign=True)
    with pytest.raises(MemoryFault, match=r"lane 3"):
        run_launch(Launch(ptx=ld_kernel(4, False), block=(32, 1, 1),
                          args=[src, offs, np.zeros((32, 4), dtype=np.uint32)]))


def test_ldmatrix_x1_ignores_addresses_of_lanes_8_to_31():
    rng = np.random.default_rng(7)
    src, rows, offs = random_setup(rng, 1)
    offs[8:] = 0xFFFF0                                      # far outside SMEM: must not be touched
    out = np.zeros((32, 1), dtype=np.uint32)
    r = run_launch(Launch(ptx=ld_kernel(1, False), block=(32, 1, 1), args=[src, offs, out]))
    assert (r.outputs[2] == ref_regs([src[rows[:8]]], False)).all()


def st_kernel(num, trans):
    regs = ", ".join(f"%r{8 + j}" for j in range(num))
    loads = "\n".join(f"  ld.global.b32 %r{8 + j}, [%rd9+{4 * j}];" for j in range(num))
    return head() + PROLOGUE + f"""
  mul.wide.u32 %rd8, %r1, {4 * num};
  add.s64 %rd9, %rd3, %rd8;
{loads}
  stmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16 [%r2], {{{regs}}};
  ld.shared.v4.b32 {{%v0, %v1, %v2, %v3}}, [%r5];
  st.global.v4.b32 [%rd5], {{%v0, %v1, %v2, %v3}};
  ld.shared.v4.b32 {{%v0, %v1, %v2, %v3}}, [%r5+512];
  st.global.v4.b32 [%rd5+512], {{%v0, %v1, %v2, %v3}};
  ret;
}}
"""


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix(num, trans):
    """stmatrix writes the rows that ldmatrix would read back into the same registers; the other rows of
    the SMEM image keep their contents."""
    rng = np.random.default_rng(20 * num + trans)
    src, rows, offs = random_setup(rng, num)
    tiles = [rng.integers(0, 1 << 16, size=(8, 8)).astype(np.uint16) for _ in range(num)]
    regs = ref_regs(tiles, trans)                           # (32, num): the registers holding the tiles
    r = run_launch(Launch(ptx=st_kernel(num, trans), block=(32, 1, 1), args=[src, offs, regs]))
    img = r.outputs[0]                                      # SMEM copied back over src
    want = src.copy()
    for m in range(num):
        want[rows[8 * m:8 * m + 8]] = tiles[m]
    assert (img == want).all()


def test_movmatrix():
    rng = np.random.default_rng(8)
    M = rng.integers(0, 1 << 16, size=(8, 8)).astype(np.uint16)
    a = ref_regs([M], False)[:, 0].copy()
    out = np.zeros(32, dtype=np.uint32)
    ptx = head() + """
.visible .entry k(.param .u64 io, .param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [io];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %laneid;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.b32 %r2, [%rd4];
  movmatrix.sync.aligned.m8n8.trans.b16 %r3, %r2;
  st.global.b32 [%rd5], %r3;
  ret;
}
"""
    r = run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[a, out]))
    # d holds {M[2(T%4)][T/4], M[2(T%4)+1][T/4]}: the ldmatrix layout of M transposed
    assert (r.outputs[1] == ref_regs([M], True)[:, 0]).all()
    assert (r.outputs[1] == ref_regs([M.T], False)[:, 0]).all()


def test_ldmatrix_x4_feeds_mma_m16n8k16():
    """The canonical pipeline: A (16x16 row-major) via ldmatrix.x4, B stored [n][k] via ldmatrix.x2, one mma;
    checked against the exact product (small integers) and mma_float."""
    rng = np.random.default_rng(9)
    ia = rng.integers(-4, 5, size=(16, 16))
    ib = rng.integers(-4, 5, size=(16, 8))
    A = ia.astype(np.float16).view(np.uint16)
    Bnk = ib.T.astype(np.float16).view(np.uint16)           # 8 x 16, stored [n][k]
    src = np.zeros((SMEM_ROWS, 8), dtype=np.uint16)
    src.reshape(-1)[:256] = A.reshape(-1)                   # A at byte 0: row i = 32 bytes
    src.reshape(-1)[256:384] = Bnk.reshape(-1)              # B at byte 512: row n = 32 bytes
    lane = np.arange(32)
    a_offs = (lane % 16) * 32 + (lane // 16) * 16           # matrix m = lane/8: rows 0-7/8-15, k 0-7/8-15
    b_offs = 512 + (lane % 8) * 32 + ((lane // 8) % 2) * 16  # x2: (k 0-7), (k 8-15); lanes 16+ ignored
    offs = np.stack([a_offs, b_offs], axis=1).reshape(-1).astype(np.uint32)
    out = np.zeros((32, 4), dtype=np.uint32)
    ptx = head() + PROLOGUE.replace("mul.wide.u32 %rd6, %r1, 4;", "mul.wide.u32 %rd6, %r1, 8;") + """
  ld.global.u32 %r7, [%rd7+4];
  add.u32 %r7, %r3, %r7;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r8, %r9, %r10, %r11}, [%r2];
  ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r12, %r13}, [%r7];
  mov.b32 %v4, 0f00000000;
  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%v0, %v1, %v2, %v3}, {%r8, %r9, %r10, %r11}, {%r12, %r13}, {%v4, %v4, %v4, %v4};
  mul.wide.u32 %rd8, %r1, 16;
  add.s64 %rd9, %rd3, %rd8;
  st.global.v4.b32 [%rd9], {%v0, %v1, %v2, %v3};
  ret;
}
"""
    r = run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[src, offs, out]))
    D = np.zeros((16, 8), dtype=np.uint32)
    for T in range(32):                                     # C/D map: row g + 8*(i/2), col 2t + i%2
        for i in range(4):
            D[T // 4 + 8 * (i // 2), 2 * (T % 4) + i % 2] = r.outputs[2][T, i]
    assert (D.view(np.float32) == (ia @ ib).astype(np.float32)).all()
    want = mma_float(A, ib.astype(np.float16).view(np.uint16), np.zeros((16, 8), np.uint32), "f16", "f16", "f32",
                     tc_params("sm_90a", "mma.sync", "f16"))
    assert (D == want).all()


# ---------------------------------------------------------------------------------------- errors
def _err_kernel(line, before=""):
    return head("sm_100a") + f"""
.visible .entry k(.param .u64 out)
{{
  .shared .align 16 .b8 smem[512];
  .reg .pred %p<2>;
  .reg .b32 %r<16>;
  .reg .b16 %h<2>;
  mov.u32 %r1, %laneid;
  mov.u32 %r2, smem;
{before}
  {line}
  ret;
}}
"""


def _run(ptx):
    return run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[np.zeros(4, dtype=np.uint32)]))


@pytest.mark.parametrize("line,err,match", [
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r8, %r9}, [%r2];", VerifyError,
     r"operand r has 2 register\(s\), expected 4"),
    ("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%r2], {%r8};", VerifyError,
     r"operand r has 1 register\(s\), expected 2"),
    ("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%h0}, [%r2];", VerifyError, "expected a 32-bit register"),
    ("ldmatrix.sync.aligned.m8n8.x2.shared::cluster.b16 {%r8, %r9}, [%r2];", VerifyError,
     "takes .shared or .shared::cta"),
    ("movmatrix.sync.aligned.m8n8.b16 %r8, %r9;", VerifyError, "requires .trans"),
    ("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r8, %r9}, [%r2];", UnsupportedError,
     r"ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8: the .m16n16 form"),
    ("ldmatrix.sync.aligned.m8n16.x1.shared.b8x16.b6x16_p32 {%r8}, [%r2];", UnsupportedError,
     "the .m8n16 form"),
    ("stmatrix.sync.aligned.m16n8.x1.trans.shared.b8 [%r2], {%r8};", UnsupportedError, "the .m16n8 form"),
])
def test_decode_errors(line, err, match):
    with pytest.raises(err, match=match):
        _run(_err_kernel(line))


@pytest.mark.parametrize("line", [
    "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r8}, [%r2];",
    "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r2], {%r8};",
    "movmatrix.sync.aligned.m8n8.trans.b16 %r8, %r9;",
])
def test_divergent_warp_is_a_sync_error(line):
    with pytest.raises(SyncError, match="warp-collective"):
        _run(_err_kernel("@%p1 " + line, before="  setp.ne.u32 %p1, %r1, 5;"))


def test_generic_address_outside_shared_is_a_memory_fault():
    with pytest.raises(MemoryFault, match="does not point into shared memory"):
        _run(_err_kernel("ldmatrix.sync.aligned.m8n8.x1.b16 {%r8}, [%rd1];",
                         before="  .reg .b64 %rd<2>;\n  mov.u64 %rd1, 4096;"))
