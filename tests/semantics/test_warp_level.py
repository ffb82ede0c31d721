"""Warp-level collectives: shfl.sync, vote.sync, elect.sync, activemask, match.sync, redux.sync
(PTX ISA 9.1 §9.7.9.6, §9.7.13.6-9, §9.7.13.14), each checked against an independent numpy/Python model."""
import numpy as np
import pytest

from tcsim.isa.errors import SyncError, UnsupportedError, VerifyError
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target {arch}\n.address_size 64\n"
LANE = np.arange(32)


def kernel(body, nslots, arch):
    return HEAD.format(arch=arch) + f"""
.visible .entry k(.param .u64 out, .param .u64 inp)
{{
  .reg .b32 %r<64>;
  .reg .b64 %rd<64>;
  .reg .pred %p<16>;
  .reg .f32 %f<8>;
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd2, [inp];
  mov.u32 %r0, %tid.x;
  and.b32 %r1, %r0, 31;               // lane
  mul.wide.u32 %rd63, %r0, {4 * nslots};
  add.u64 %rd1, %rd0, %rd63;
  mul.wide.u32 %rd62, %r0, 4;
  add.u64 %rd3, %rd2, %rd62;
  ld.global.u32 %r2, [%rd3];           // per-thread input value
{body}
  ret;
}}
"""


def out(slot, reg):
    return f"  st.global.u32 [%rd1+{4 * slot}], {reg};\n"


def pout(slot, pred):
    return f"  selp.u32 %r60, 1, 0, {pred};\n" + out(slot, "%r60")


def launch(body, inp=None, nthreads=32, nslots=1, arch="sm_90a"):
    if inp is None:
        inp = (np.arange(nthreads, dtype=np.uint64) * 2654435761 + 12345).astype(np.uint32)
    res = run_launch(Launch(ptx=kernel(body, nslots, arch), block=(nthreads, 1, 1),
                            args=[np.full(nthreads * nslots, 0xDEADBEEF, np.uint32), inp.astype(np.uint32)]))
    return res.outputs[0].reshape(nthreads, nslots), inp


# ------------------------------------------------------------------------------------------------ shfl
def shfl_cuda(vals, mode, b, width):
    """CUDA __shfl*_sync(width) semantics (programming guide), lane by lane."""
    d = np.empty(32, np.uint32)
    ok = np.empty(32, bool)
    for lane in range(32):
        base = lane - lane % width
        if mode == "idx":
            src = base + b % width
            good = True
        elif mode == "up":
            good = lane % width >= b
            src = lane - b
        elif mode == "down":
            good = lane % width + b < width
            src = lane + b
        else:
            src = lane ^ b
            good = src < base + width        # may read earlier segments, not later ones
        d[lane] = vals[src] if good else vals[lane]
        ok[lane] = good
    return d, ok


def shfl_ptx(vals, mode, bs, cs):
    """PTX pseudo-code of shfl.sync, scalar per lane (b and c may differ per lane)."""
    d = np.empty(32, np.uint32)
    ok = np.empty(32, bool)
    for lane in range(32):
        b, c = int(bs[lane]) & 31, int(cs[lane])
        clamp, seg = c & 31, (c >> 8) & 31
        maxl = (lane & seg) | (clamp & ~seg & 31)
        minl = lane & seg
        j = {"up": lane - b, "down": lane + b, "bfly": lane ^ b, "idx": minl | (b & ~seg & 31)}[mode]
        p = j >= maxl if mode == "up" else j <= maxl
        d[lane] = vals[j] if p else vals[lane]
        ok[lane] = p
    return d, ok


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
@pytest.mark.parametrize("width", [32, 16, 8, 4, 2])
@pytest.mark.parametrize("b", [0, 1, 3, 5, 17, 31])
def test_shfl_matches_cuda_width_model(mode, width, b):
    c = ((32 - width) << 8) | (0 if mode == "up" else 0x1F)
    body = f"  shfl.sync.{mode}.b32 %r3|%p1, %r2, {b}, {c}, 0xffffffff;\n" + out(0, "%r3") + pout(1, "%p1")
    r, vals = launch(body, nslots=2)
    d, ok = shfl_cuda(vals, mode, b, width)
    assert (r[:, 0] == d).all()
    assert (r[:, 1] == ok).all()


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
def test_shfl_per_lane_b_and_arbitrary_c_match_ptx_pseudocode(mode):
    rng = np.random.default_rng({"up": 1, "down": 2, "bfly": 3, "idx": 4}[mode])
    for _ in range(4):
        bs = rng.integers(0, 64, 32).astype(np.uint32)
        cs = (rng.integers(0, 32, 32) | (rng.integers(0, 32, 32) << 8)).astype(np.uint32)
        c0 = int(cs[0])
        inp = np.concatenate([rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)])
        # b per lane comes from a second copy of the input buffer; c is warp-uniform (immediate) or per lane
        body = ("  ld.global.u32 %r10, [%rd3+128];\n  ld.global.u32 %r11, [%rd3+256];\n"
                f"  shfl.sync.{mode}.b32 %r3|%p1, %r2, %r10, %r11, -1;\n"
                f"  shfl.sync.{mode}.b32 %r4, %r2, %r10, {c0}, -1;\n"
                + out(0, "%r3") + pout(1, "%p1") + out(2, "%r4"))
        big = np.concatenate([inp, bs, cs])
        res = run_launch(Launch(ptx=kernel(body, 3, "sm_90a"), block=(32, 1, 1),
                                args=[np.zeros(96, np.uint32), big]))
        r = res.outputs[0].reshape(32, 3)
        d, ok = shfl_ptx(inp, mode, bs, cs)
        assert (r[:, 0] == d).all() and (r[:, 1] == ok).all()
        d2, _ = shfl_ptx(inp, mode, bs, np.full(32, c0))
        assert (r[:, 2] == d2).all()


def test_shfl_partial_member_masks_two_halves():
    # two half-warps in one instruction, each with its own membermask, idx within 16-lane segments
    body = ("  setp.lt.u32 %p2, %r1, 16;\n  selp.b32 %r5, 0x0000ffff, 0xffff0000, %p2;\n"
            "  shfl.sync.idx.b32 %r3, %r2, 3, 0x101f, %r5;\n" + out(0, "%r3"))
    r, vals = launch(body)
    assert (r[:, 0] == vals[(LANE & ~15) + 3]).all()


def test_shfl_in_divergent_branch_with_partial_mask():
    # only lanes 8-15 shuffle (mask 0xff00), bfly 1 with clamp 31
    body = ("  setp.lt.u32 %p2, %r1, 8;\n  setp.ge.u32 %p3, %r1, 16;\n  or.pred %p4, %p2, %p3;\n  @%p4 bra SKIP;\n"
            "  shfl.sync.bfly.b32 %r3, %r2, 1, 31, 0xff00;\n" + out(0, "%r3") + "SKIP:\n")
    r, vals = launch(body)
    sel = (LANE >= 8) & (LANE < 16)
    assert (r[sel, 0] == vals[LANE[sel] ^ 1]).all()
    assert (r[~sel, 0] == 0xDEADBEEF).all()


def test_shfl_convergence_errors():
    with pytest.raises(SyncError, match="warp-collective"):
        launch("  setp.lt.u32 %p2, %r1, 8;\n  @%p2 bra SKIP;\n  shfl.sync.bfly.b32 %r3, %r2, 1, 31, -1;\nSKIP:\n")
    with pytest.raises(SyncError, match="does not contain the lane"):
        launch("  shfl.sync.bfly.b32 %r3, %r2, 1, 31, 0xffff;\n")
    with pytest.raises(UnsupportedError, match="without .sync"):
        launch("  shfl.bfly.b32 %r3, %r2, 1, 31;\n")


def test_shfl_exited_lanes_do_not_need_to_participate():
    body = ("  setp.ge.u32 %p2, %r1, 20;\n  @%p2 exit;\n  shfl.sync.down.b32 %r3, %r2, 1, 31, -1;\n" + out(0, "%r3"))
    r, vals = launch(body)
    assert (r[:19, 0] == vals[1:20]).all()


# ------------------------------------------------------------------------------------------------ vote
def test_vote_under_divergence():
    # lanes inside an `if (lane % 3 != 0)`; predicate = input bit 0; member mask from activemask
    body = ("  rem.u32 %r5, %r1, 3;\n  setp.eq.u32 %p2, %r5, 0;\n  @%p2 bra SKIP;\n"
            "  activemask.b32 %r6;\n  and.b32 %r7, %r2, 1;\n  setp.ne.u32 %p3, %r7, 0;\n"
            "  vote.sync.ballot.b32 %r8, %p3, %r6;\n  vote.sync.all.pred %p4, %p3, %r6;\n"
            "  vote.sync.any.pred %p5, %p3, %r6;\n  vote.sync.uni.pred %p6, %p3, %r6;\n"
            "  vote.sync.ballot.b32 %r9, !%p3, %r6;\n"
            + out(0, "%r6") + out(1, "%r8") + pout(2, "%p4") + pout(3, "%p5") + pout(4, "%p6") + out(5, "%r9")
            + "SKIP:\n")
    for inp in [None, np.ones(32, np.uint32), np.zeros(32, np.uint32)]:
        r, vals = launch(body, inp=inp, nslots=6)
        active = LANE % 3 != 0
        amask = int(sum(1 << int(l) for l in LANE[active]))
        p = (vals & 1).astype(bool) & active
        ballot = int(sum(1 << int(l) for l in LANE[p]))
        nballot = int(sum(1 << int(l) for l in LANE[active & ~p]))
        a = r[active]
        assert (a[:, 0] == amask).all() and (a[:, 1] == ballot).all() and (a[:, 5] == nballot).all()
        assert (a[:, 2] == int(p[active].all())).all()
        assert (a[:, 3] == int(p[active].any())).all()
        assert (a[:, 4] == int(p[active].all() or not p[active].any())).all()
        assert (r[~active] == 0xDEADBEEF).all()


def test_vote_requires_sync_and_types():
    with pytest.raises(UnsupportedError):
        launch("  setp.ne.u32 %p3, %r2, 0;\n  vote.any.pred %p4, %p3;\n")
    with pytest.raises(VerifyError):
        launch("  setp.ne.u32 %p3, %r2, 0;\n  vote.sync.ballot.pred %p4, %p3, -1;\n")


# ------------------------------------------------------------------------------------------------ elect
def test_elect_picks_lowest_member_lane():
    body = ("  elect.sync %r3|%p1, -1;\n" + out(0, "%r3") + pout(1, "%p1"))
    r, _ = launch(body, nslots=2)
    assert (r[:, 0] == 0).all() and (r[:, 1] == (LANE == 0)).all()


def test_elect_in_divergent_region_and_sink_destination():
    body = ("  setp.lt.u32 %p2, %r1, 5;\n  @%p2 bra SKIP;\n  activemask.b32 %r6;\n"
            "  elect.sync _|%p1, %r6;\n  elect.sync %r3|%p3, 0xf0000000;\n" + pout(0, "%p1") + out(1, "%r3")
            + "SKIP:\n")
    with pytest.raises(SyncError):
        launch(body, nslots=2)       # lanes 5-27 are not in 0xf0000000
    body = ("  setp.lt.u32 %p2, %r1, 5;\n  @%p2 bra SKIP;\n  activemask.b32 %r6;\n"
            "  elect.sync _|%p1, %r6;\n" + pout(0, "%p1") + "SKIP:\n")
    r, _ = launch(body)
    assert (r[5:, 0] == (LANE[5:] == 5)).all()


def test_elect_skips_exited_lanes():
    body = "  setp.lt.u32 %p2, %r1, 3;\n  @%p2 exit;\n  elect.sync %r3|%p1, -1;\n" + out(0, "%r3")
    r, _ = launch(body)
    assert (r[3:, 0] == 3).all()


# ------------------------------------------------------------------------------------------------ match
@pytest.mark.parametrize("typ", ["b32", "b64"])
def test_match_any_and_all(typ):
    inp = (LANE % 5).astype(np.uint32)
    if typ == "b64":     # put the value in the high word so a 32-bit comparison would see all zeros
        setup, src = "  cvt.u64.u32 %rd10, %r2;\n  shl.b64 %rd10, %rd10, 33;\n", "%rd10"
    else:
        setup, src = "", "%r2"
    members = 0x02108421                 # lanes 0,5,10,15,20,25: all hold value 0
    body = (setup + f"  match.any.sync.{typ} %r3, {src}, -1;\n  match.all.sync.{typ} %r4|%p1, {src}, -1;\n"
            + out(0, "%r3") + out(1, "%r4") + pout(2, "%p1")
            + f"  mov.u32 %r41, {members};\n  shr.b32 %r42, %r41, %r1;\n  and.b32 %r42, %r42, 1;\n"
            "  setp.eq.u32 %p9, %r42, 0;\n  @%p9 bra SKIPM;\n"
            f"  match.all.sync.{typ} %r5|%p2, {src}, %r41;\n  match.any.sync.{typ} %r6, {src}, %r41;\n"
            + out(3, "%r5") + pout(4, "%p2") + out(5, "%r6") + "SKIPM:\n")
    r, _ = launch(body, inp=inp, nslots=6)
    want_any = np.array([sum(1 << j for j in range(32) if inp[j] == inp[i]) for i in range(32)])
    assert (r[:, 0] == want_any).all()
    assert (r[:, 1] == 0).all() and (r[:, 2] == 0).all()
    inside = ((members >> LANE) & 1).astype(bool)
    assert (r[inside, 3] == members).all() and (r[inside, 4] == 1).all() and (r[inside, 5] == members).all()
    assert (r[~inside, 3] == 0xDEADBEEF).all()


# ------------------------------------------------------------------------------------------------ redux
@pytest.mark.parametrize("op,typ", [("add", "u32"), ("add", "s32"), ("min", "u32"), ("min", "s32"),
                                    ("max", "u32"), ("max", "s32"), ("and", "b32"), ("or", "b32"),
                                    ("xor", "b32")])
def test_redux_integer(op, typ):
    rng = np.random.default_rng(5)
    inp = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    body = (f"  redux.sync.{op}.{typ} %r3, %r2, -1;\n"
            "  setp.lt.u32 %p2, %r1, 16;\n  selp.b32 %r5, 0x0000ffff, 0xffff0000, %p2;\n"
            f"  redux.sync.{op}.{typ} %r4, %r2, %r5;\n" + out(0, "%r3") + out(1, "%r4"))
    r, _ = launch(body, inp=inp, nslots=2)

    def red(v):
        s = v.view(np.int32).astype(np.int64) if typ == "s32" else v.astype(np.int64)
        if op == "add":
            return int(s.sum()) & 0xFFFFFFFF
        if op == "min":
            return int(s.min()) & 0xFFFFFFFF
        if op == "max":
            return int(s.max()) & 0xFFFFFFFF
        acc = 0 if op != "and" else 0xFFFFFFFF
        for x in v:
            acc = {"and": acc & int(x), "or": acc | int(x), "xor": acc ^ int(x)}[op]
        return acc

    assert (r[:, 0] == red(inp)).all()
    assert (r[:16, 1] == red(inp[:16])).all() and (r[16:, 1] == red(inp[16:])).all()


def test_redux_skips_exited_lanes():
    body = "  setp.ge.u32 %p2, %r1, 10;\n  @%p2 exit;\n  redux.sync.add.u32 %r3, %r1, -1;\n" + out(0, "%r3")
    r, _ = launch(body)
    assert (r[:10, 0] == 45).all()


def f32bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


@pytest.mark.parametrize("flags", ["", ".abs", ".NaN", ".abs.NaN"])
@pytest.mark.parametrize("op", ["min", "max"])
def test_redux_f32_on_sm100a(op, flags):
    rng = np.random.default_rng(11)
    vals = rng.standard_normal(32).astype(np.float32) * 100
    vals[3] = -0.0
    vals[7] = 0.0
    for with_nan in (False, True):
        v = vals.copy()
        if with_nan:
            v[9] = np.nan
        body = (f"  mov.b32 %f1, %r2;\n  redux.sync.{op}{flags}.f32 %f2, %f1, -1;\n  mov.b32 %r3, %f2;\n"
                + out(0, "%r3"))
        r, _ = launch(body, inp=f32bits(v), arch="sm_100a")
        x = np.abs(v) if ".abs" in flags else v
        if with_nan and ".NaN" in flags:
            want = 0x7FFFFFFF
        else:
            y = x[~np.isnan(x)]
            want = int(f32bits(y.min() if op == "min" else y.max()))
        assert (r[:, 0] == want).all(), (op, flags, with_nan, hex(int(r[0, 0])), hex(want))


def test_redux_f32_needs_sm100a():
    with pytest.raises(VerifyError, match="sm_100a"):
        launch("  mov.b32 %f1, %r2;\n  redux.sync.min.f32 %f2, %f1, -1;\n", arch="sm_90a")
    with pytest.raises(VerifyError):
        launch("  redux.sync.add.b32 %r3, %r2, -1;\n")


def test_activemask_reports_converged_lanes():
    body = ("  setp.lt.u32 %p2, %r1, 12;\n  @%p2 bra A;\n  activemask.b32 %r3;\n  bra J;\n"
            "A:\n  activemask.b32 %r3;\nJ:\n" + out(0, "%r3"))
    r, _ = launch(body)
    assert (r[:12, 0] == 0xFFF).all() and (r[12:, 0] == 0xFFFFF000).all()
