"""mma.sync.aligned (sim/semantics/warp_mma.py), PTX ISA §9.7.14.5.14.

Each case stages random fragments from global memory into the registers with a small hand-written PTX
kernel, runs one mma per warp and stores D.  The numpy side packs/unpacks fragments with the maps of
mma_sync.md, written out here independently of isa/fragments.py.  Checks: D equals
``tensor_core.mma_float`` (or ``mma_int``) called directly on the dense matrices, bit for bit (the fragment
plumbing), and for small-integer inputs the exact numpy product (the whole chain).
"""
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.errors import SyncError, UnsupportedError, VerifyError
from tcsim.launch import Launch, run_launch
from tcsim.numerics.tensor_core import mma_float, mma_int

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "numerics"))
import oracle_replay  # noqa: E402  (expected D from numerics checked against the recorded data: issue 22)

tc_params = oracle_replay.checked_tc_params

# ---------------------------------------------------------------------------------------- fragment maps
# mma_sync.md "Fragment maps": element i of lane -> (row, col); g = lane >> 2, t = lane & 3


def _pos(shape, operand, kind, lane, i):
    g, t = lane >> 2, lane & 3
    if operand == "C":
        return g + 8 * (i // 2), 2 * t + i % 2
    table = {
        ("m16n8k16", "A", "16"): (g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)),
        ("m16n8k16", "B", "16"): (2 * t + i % 2 + 8 * (i // 2), g),
        ("m16n8k8", "A", "16"): (g + 8 * (i // 2), 2 * t + i % 2),
        ("m16n8k8", "B", "16"): (2 * t + i, g),
        ("m16n8k8", "A", "32"): (g + 8 * (i % 2), t + 4 * (i // 2)),
        ("m16n8k8", "B", "32"): (t + 4 * i, g),
        ("m16n8k32", "A", "8"): (g + 8 * ((i // 4) % 2), 4 * t + i % 4 + 16 * (i // 8)),
        ("m16n8k32", "B", "8"): (4 * t + i % 4 + 16 * (i // 4), g),
        ("m16n8k16", "A", "8"): (g + 8 * (i // 4), 4 * t + i % 4),
        ("m16n8k16", "B", "8"): (4 * t + i, g),
    }
    return table[(shape, operand, kind)]


BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "s32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
DIMS = {"m16n8k8": 8, "m16n8k16": 16, "m16n8k32": 32}


def _dims(shape, operand):
    K = DIMS[shape]
    return {"A": (16, K), "B": (K, 8), "C": (16, 8)}[operand]


def pack(dense, shape, operand, et):
    """(32, nregs) uint32 fragment registers of every lane holding ``dense``."""
    bits = BITS[et]
    per = 32 // bits
    n = dense.size // 32
    out = np.zeros((32, n // per), dtype=np.uint64)
    for lane in range(32):
        for i in range(n):
            r, c = _pos(shape, operand, str(bits) if operand != "C" else "", lane, i)
            out[lane, i // per] |= np.uint64(int(dense[r, c]) & ((1 << bits) - 1)) << np.uint64((i % per) * bits)
    return out.astype(np.uint32)


def unpack(regs, shape, operand, et):
    bits = BITS[et]
    per = 32 // bits
    dense = np.zeros(_dims(shape, operand), dtype={8: np.uint8, 16: np.uint16, 32: np.uint32}[bits])
    for lane in range(32):
        for i in range(regs.shape[1] * per):
            r, c = _pos(shape, operand, str(bits) if operand != "C" else "", lane, i)
            dense[r, c] = (int(regs[lane, i // per]) >> ((i % per) * bits)) & ((1 << bits) - 1)
    return dense


# ---------------------------------------------------------------------------------------- the kernel
def mma_kernel(instr, arch, na, nb, nc, nd, cd_type):
    """One mma per warp; thread tid reads its A/B/C registers from a[tid*na ..] etc. and writes d."""
    def loads(reg, ptr, n, typ):
        return "\n".join(f"  ld.global.{typ} %{reg}{j}, [%{ptr}+{4 * j}];" for j in range(n))

    def offset(ptr, n):
        return f"  mul.wide.u32 %rd9, %r1, {4 * n};\n  add.s64 %{ptr}, %{ptr}, %rd9;"

    vec = lambda r, n: "{" + ", ".join(f"%{r}{j}" for j in range(n)) + "}"   # noqa: E731
    stores = "\n".join(f"  st.global.{cd_type} [%rd4+{4 * j}], %d{j};" for j in range(nd))
    return f""".version 8.7
.target {arch}
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{{
  .reg .b32 %a<4>;
  .reg .b32 %b<2>;
  .reg .{cd_type} %c<4>;
  .reg .{cd_type} %d<4>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pc];
  ld.param.u64 %rd4, [pd];
  mov.u32 %r1, %tid.x;
{offset('rd1', na)}
{offset('rd2', nb)}
{offset('rd3', nc)}
{offset('rd4', nd)}
{loads('a', 'rd1', na, 'b32')}
{loads('b', 'rd2', nb, 'b32')}
{loads('c', 'rd3', nc, cd_type)}
  {instr} {vec('d', nd)}, {vec('a', na)}, {vec('b', nb)}, {vec('c', nc)};
{stores}
  ret;
}}
"""


def run_mma(instr, arch, shape, at, bt, ct, As, Bs, Cs):
    """Run one warp per (A, B, C) triple; return the list of dense D matrices."""
    W = len(As)
    ra = np.concatenate([pack(A, shape, "A", at) for A in As])
    rb = np.concatenate([pack(B, shape, "B", bt) for B in Bs])
    rc = np.concatenate([pack(C, shape, "C", ct) for C in Cs])
    nd = rc.shape[1]
    out = np.zeros((32 * W, nd), dtype=np.uint32)
    cd = "f32" if ct == "f32" else ("s32" if ct == "s32" else "b32")
    ptx = mma_kernel(instr, arch, ra.shape[1], rb.shape[1], rc.shape[1], nd, cd)
    res = run_launch(Launch(ptx=ptx, block=(32 * W, 1, 1), args=[ra, rb, rc, out]))
    D = res.outputs[3]
    return [unpack(D[32 * w:32 * (w + 1)], shape, "C", ct) for w in range(W)]


# ---------------------------------------------------------------------------------------- inputs
SPECIALS = {
    "f16": [0x7C00, 0xFC00, 0x7E00, 0x0001, 0x8200, 0x0000, 0x8000],
    "bf16": [0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x8040, 0x0000, 0x8000],
    "tf32": [0x7F800000, 0xFF800000, 0x7FC00000, 0x00400000, 0x80002000, 0x0, 0x80000000],
    "f32": [0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x80400000, 0x0, 0x80000000],
    "e4m3": [0x7F, 0xFF, 0x01, 0x86, 0x00, 0x80],
    "e5m2": [0x7C, 0xFC, 0x7E, 0x01, 0x83, 0x00, 0x80],
}
# (exponent bits, mantissa bits, exponent field range of "moderate" values, subnormal mantissa bits)
FMT = {"f16": (5, 10, (11, 19)), "bf16": (8, 7, (123, 131)), "tf32": (8, 23, (123, 131)),
       "f32": (8, 23, (123, 131)), "e4m3": (4, 3, (4, 10)), "e5m2": (5, 2, (12, 18))}


def rand_float(rng, et, shape, subnormal_frac=0.1):
    eb, mb, (lo, hi) = FMT[et]
    total = 1 + eb + mb
    sign = rng.integers(0, 2, shape).astype(np.uint64)
    exp = rng.integers(lo, hi, shape).astype(np.uint64)
    man = rng.integers(0, 1 << mb, shape).astype(np.uint64)
    sub = rng.random(shape) < subnormal_frac
    exp = np.where(sub, 0, exp)
    bits = (sign << np.uint64(total - 1)) | (exp << np.uint64(mb)) | man
    return bits.astype({8: np.uint8, 16: np.uint16, 32: np.uint32}[total])


def sprinkle(rng, M, et, n=3):
    M = M.copy()
    for _ in range(n):
        M[rng.integers(0, M.shape[0]), rng.integers(0, M.shape[1])] = rng.choice(SPECIALS[et])
    return M


def encode(vals, et):
    """Exact small-integer values -> codes of format et."""
    v = np.asarray(vals, dtype=np.float64)
    if et == "f16":
        return v.astype(np.float16).view(np.uint16)
    if et in ("f32", "tf32"):
        return v.astype(np.float32).view(np.uint32)
    if et == "bf16":
        return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    import ml_dtypes
    dt = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}[et]
    out = v.astype(dt).view(np.uint8)
    assert (out.view(dt).astype(np.float64) == v).all()
    return out


FLOAT_FORMS = [  # shape, d, a, b, c
    ("m16n8k16", "f32", "f16", "f16", "f32"), ("m16n8k16", "f16", "f16", "f16", "f16"),
    ("m16n8k16", "f32", "bf16", "bf16", "f32"),
    ("m16n8k8", "f32", "f16", "f16", "f32"), ("m16n8k8", "f16", "f16", "f16", "f16"),
    ("m16n8k8", "f32", "bf16", "bf16", "f32"), ("m16n8k8", "f32", "tf32", "tf32", "f32"),
    ("m16n8k32", "f32", "e4m3", "e4m3", "f32"), ("m16n8k32", "f32", "e4m3", "e5m2", "f32"),
    ("m16n8k32", "f32", "e5m2", "e4m3", "f32"), ("m16n8k32", "f32", "e5m2", "e5m2", "f32"),
    ("m16n8k32", "f16", "e4m3", "e5m2", "f16"), ("m16n8k16", "f32", "e5m2", "e4m3", "f32"),
    ("m16n8k16", "f16", "e4m3", "e4m3", "f16"),
]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("form", FLOAT_FORMS, ids=lambda f: ".".join(f))
def test_float_mma(form, arch):
    shape, dt, at, bt, ct = form
    instr = f"mma.sync.aligned.{shape}.row.col.{dt}.{at}.{bt}.{ct}"
    rng = np.random.default_rng(zlib.crc32(repr((form, arch)).encode()))
    da, db, dc = _dims(shape, "A"), _dims(shape, "B"), _dims(shape, "C")
    # warp 0: random values with NaN/Inf/subnormal/zero sprinkled in; warp 1: finite, many subnormals;
    # warp 2: small integers (exact result)
    As = [sprinkle(rng, rand_float(rng, at, da), at), rand_float(rng, at, da, 0.3)]
    Bs = [sprinkle(rng, rand_float(rng, bt, db), bt), rand_float(rng, bt, db, 0.3)]
    As[0][3, 1] = SPECIALS[at][2] if at != "e4m3" else 0x7F            # a NaN reaches row 3 of D for sure
    Cs = [sprinkle(rng, rand_float(rng, ct, dc), ct, 2), rand_float(rng, ct, dc, 0.3)]
    ia, ib, ic = rng.integers(-4, 5, da), rng.integers(-4, 5, db), rng.integers(-64, 65, dc)
    As.append(encode(ia, at))
    Bs.append(encode(ib, bt))
    Cs.append(encode(ic, ct))
    Ds = run_mma(instr, arch, shape, at, bt, ct, As, Bs, Cs)
    params = tc_params(arch, "mma.sync", at)
    for w, (A, B, C, D) in enumerate(zip(As, Bs, Cs, Ds)):
        want = mma_float(A, B, C, at, bt, ct, params)
        assert D.dtype == want.dtype
        bad = np.argwhere(D != want)
        assert bad.size == 0, f"warp {w}: D differs from mma_float at {bad[:4].tolist()}"
    assert (Ds[0][3] == (0x7FFFFFFF if ct == "f32" else 0x7FFF)).all()      # canonical NaN in row 3
    exact = ia @ ib + ic
    assert (Ds[2] == encode(exact, ct)).all()


INT_FORMS = [(s, a, b) for s in ("m16n8k16", "m16n8k32") for a in ("s8", "u8") for b in ("s8", "u8")]


@pytest.mark.parametrize("satfinite", [False, True])
@pytest.mark.parametrize("form", INT_FORMS, ids=lambda f: ".".join(f))
def test_integer_mma(form, satfinite):
    shape, at, bt = form
    sat = ".satfinite" if satfinite else ""
    instr = f"mma.sync.aligned.{shape}.row.col{sat}.s32.{at}.{bt}.s32"
    rng = np.random.default_rng(7)
    da, db, dc = _dims(shape, "A"), _dims(shape, "B"), _dims(shape, "C")
    lo = lambda t: -128 if t == "s8" else 0                                    # noqa: E731
    A = [rng.integers(lo(at), lo(at) + 256, da) for _ in range(2)]
    B = [rng.integers(lo(bt), lo(bt) + 256, db) for _ in range(2)]
    # warp 0: ordinary C; warp 1: C at the edges of the int32 range so sums overflow
    C = [rng.integers(-(1 << 20), 1 << 20, dc),
         np.where(rng.random(dc) < 0.5, (1 << 31) - 5, -(1 << 31) + 5)]
    Ds = run_mma(instr, "sm_90a", shape, at, bt, "s32", [a.astype(np.uint8) for a in A],
                 [b.astype(np.uint8) for b in B], [c.astype(np.int32).view(np.uint32) for c in C])
    for a, b, c, D in zip(A, B, C, Ds):
        exact = a.astype(np.int64) @ b.astype(np.int64) + c
        want = np.clip(exact, -(1 << 31), (1 << 31) - 1) if satfinite else \
            ((exact + (1 << 31)) % (1 << 32)) - (1 << 31)
        assert (D.view(np.int32) == want).all()
        assert (D == mma_int(a.astype(np.uint8), b.astype(np.uint8), c.astype(np.int32), at == "s8", bt == "s8",
                             satfinite).view(np.uint32)).all()
    exact1 = A[1].astype(np.int64) @ B[1].astype(np.int64) + C[1]
    assert ((exact1 > (1 << 31) - 1) | (exact1 < -(1 << 31))).any()       # the overflow case happened


# ---------------------------------------------------------------------------------------- errors
def _one(instr_line, regs="", arch="sm_90a", body_before=""):
    return f""".version 8.7
.target {arch}
.address_size 64
.visible .entry k(.param .u64 out)
{{
  .reg .pred %p<2>;
  .reg .b32 %a<4>;
  .reg .b32 %b<4>;
  .reg .f32 %c<4>;
  .reg .f32 %d<4>;
  .reg .b32 %r<4>;
  .reg .b64 %x<4>;
  .reg .b16 %h<4>;
{regs}
{body_before}
  {instr_line}
  ret;
}}
"""


MMA16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, {%b0,%b1}, " \
        "{%c0,%c1,%c2,%c3};"


def _run(ptx, block=32):
    return run_launch(Launch(ptx=ptx, block=(block, 1, 1), args=[np.zeros(4, dtype=np.uint32)]))


def test_default_registers_run():
    _run(_one(MMA16))


def test_predicated_off_lanes_are_a_sync_error():
    body = "  mov.u32 %r1, %laneid;\n  setp.lt.u32 %p1, %r1, 16;"
    with pytest.raises(SyncError, match=r"warp-collective.*lanes 16-31"):
        _run(_one("@%p1 " + MMA16, body_before=body))


def test_divergent_branch_is_a_sync_error():
    body = "  mov.u32 %r1, %laneid;\n  setp.lt.u32 %p1, %r1, 8;\n  @%p1 bra SKIP;"
    with pytest.raises(SyncError, match="mma.sync.aligned.m16n8k16"):
        _run(_one(MMA16 + "\nSKIP:", body_before=body))


def test_partial_warp_is_a_sync_error():
    with pytest.raises(SyncError, match="needs all 32 lanes"):
        _run(_one(MMA16), block=16)


@pytest.mark.parametrize("line,match", [
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", r"operand a has 3 register\(s\), expected 4"),
    ("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", r"operand b has 2 register\(s\), expected 1"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%d0,%d1}, {%a0,%a1,%a2,%a3}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", r"operand d has 2 register\(s\), expected 4"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%h0}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", r"register %h0 of operand a is .b16"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", "must be the same"),
    ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f32 {%d0,%d1}, {%a0,%a1,%a2,%a3}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", r".dtype \(.f16\) must be the same as .ctype"),
    ("mma.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", "requires the .row.col layouts"),
    ("mma.sync.aligned.m16n8k16.row.col.satfinite.f32.f16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, "
     "{%b0,%b1}, {%c0,%c1,%c2,%c3};", "satfinite applies to integer mma only"),
    ("mma.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", "requires the .sync and .aligned"),
])
def test_verify_errors_at_decode(line, match):
    with pytest.raises(VerifyError, match=match):
        _run(_one(line))


@pytest.mark.parametrize("line,match", [
    ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", r"mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32: mma shape .m8n8k4"),
    ("mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, "
     "{%b0,%b1,%b2,%b3}, {%c0,%c1,%c2,%c3}, %r1, 0;", r"mma.sp.sync.*the .sp form"),
    ("mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0 "
     "{%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, {%b0,%b1}, {%c0,%c1,%c2,%c3}, %r1, {0, 0}, %r2, {0, 0};",
     r"the .kind::mxf4 form"),
    ("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, "
     "{%b0,%b1}, {%c0,%c1,%c2,%c3};", r"the .and form"),
    ("mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, {%b0,%b1}, "
     "{%c0,%c1,%c2,%c3};", r"m16n8k64.row.col.s32.s4.s4.s32: mma shape .m16n8k64"),
    ("mma.sync.aligned.m16n8k32.row.col.s32.s4.s4.s32 {%d0,%d1,%d2,%d3}, {%a0,%a1}, {%b0}, "
     "{%c0,%c1,%c2,%c3};", r"with .s4 operands"),
])
def test_unsupported_forms_at_decode(line, match):
    with pytest.raises(UnsupportedError, match=match):
        _run(_one(line))


# ---------------------------------------------------------------------------------------- nvcc fixture
FIXTURE = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / "nvcc"


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_nvcc_fixture_ldmatrix_mma_stmatrix(arch):
    """tests/fixtures/nvcc/mma_sync_ldmatrix.cu: C (f16) = A (16xK) * Bt^T (K x 16) with ldmatrix.x4, two
    mma.m16n8k16 per K-slice, cvt.rn.f16x2.f32 and stmatrix.x4.  Random f16 inputs: the K-slices chain
    through mma_float; small integers: the exact product."""
    K = 32
    rng = np.random.default_rng(11)
    params = tc_params(arch, "mma.sync", "f16")
    ptx = str(FIXTURE / f"mma_sync_ldmatrix.{arch}.ptx")
    for A, Bt in ((rand_float(rng, "f16", (16, K)), rand_float(rng, "f16", (16, K))),
                  (encode(rng.integers(-4, 5, (16, K)), "f16"), encode(rng.integers(-4, 5, (16, K)), "f16"))):
        out = np.zeros((16, 16), dtype=np.uint16)
        r = run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[A, Bt, out, K]))
        acc = np.zeros((16, 16), dtype=np.uint32)
        for k0 in range(0, K, 16):
            for n0 in (0, 8):
                acc[:, n0:n0 + 8] = mma_float(A[:, k0:k0 + 16], Bt[n0:n0 + 8, k0:k0 + 16].T, acc[:, n0:n0 + 8],
                                              "f16", "f16", "f32", params)
        want = acc.view(np.float32).astype(np.float16).view(np.uint16)
        assert (r.outputs[2] == want).all()
    exact = A.view(np.float16).astype(np.float64) @ Bt.view(np.float16).astype(np.float64).T
    assert (r.outputs[2].view(np.float16) == exact).all()


def test_float_mma_without_numerics_table_for_target_is_unsupported():
    with pytest.raises(UnsupportedError, match="no tensor-core numerics model for target sm_80"):
        _run(_one(MMA16, arch="sm_80"))
