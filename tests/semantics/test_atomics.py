"""atom / red (PTX ISA 9.1 §9.7.13.5, §9.7.13.6) on global, shared, shared::cluster and generic addresses."""
import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault, VerifyError
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target {arch}\n.address_size 64\n"


def kernel(body, arch):
    return HEAD.format(arch=arch) + f"""
.visible .entry k(.param .u64 out, .param .u64 mem, .param .u64 inp)
{{
  .reg .b32 %r<64>;
  .reg .b64 %rd<64>;
  .reg .pred %p<16>;
  .reg .f32 %f<16>;
  .reg .f64 %fd<8>;
  .reg .b16 %h<16>;
  .shared .align 16 .b32 sm[256];
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd2, [mem];
  ld.param.u64 %rd4, [inp];
  mov.u32 %r0, %tid.x;
  mov.u32 %r61, %ctaid.x;
  mov.u32 %r62, %ntid.x;
  mad.lo.u32 %r63, %r61, %r62, %r0;    // global thread id
  mul.wide.u32 %rd63, %r63, 8;
  add.u64 %rd1, %rd0, %rd63;            // &out[gtid] (8 bytes per thread)
  add.u64 %rd5, %rd4, %rd63;            // &inp[gtid] (8 bytes per thread)
  ld.global.u32 %r2, [%rd5];            // low word of the input
  ld.global.u64 %rd6, [%rd5];           // the whole 8-byte input
  mov.u32 %r50, sm;
{body}
  ret;
}}
"""


def launch(body, inp=None, mem=None, nthreads=32, nctas=1, cluster=1, arch="sm_90a", seed=None, observers=(),
           max_instructions=None):
    n = nthreads * nctas
    inp = np.zeros(n, np.uint64) if inp is None else np.asarray(inp)
    mem = np.zeros(16, np.uint64) if mem is None else mem
    res = run_launch(Launch(ptx=kernel(body, arch), grid=(nctas, 1, 1), cluster=(cluster, 1, 1),
                            block=(nthreads, 1, 1),
                            args=[np.zeros(n, np.uint64), mem, inp.view(np.uint8).reshape(-1).view(np.uint64)]),
                     seed=seed, observers=observers, max_instructions=max_instructions)
    return res.outputs[0], res.outputs[1]


@pytest.mark.parametrize("seed", [None, 3])
def test_many_lanes_adding_to_one_address(seed):
    body = "  atom.global.add.u32 %r3, [%rd2], 1;\n  st.global.u32 [%rd1], %r3;\n"
    out, mem = launch(body, nthreads=128, seed=seed)
    got = out.astype(np.uint32)
    assert int(mem.view(np.uint32)[0]) == 128
    assert sorted(got.tolist()) == list(range(128))
    for w in range(4):    # within a warp the lanes are applied in lane order
        seg = got[32 * w:32 * w + 32].astype(np.int64)
        assert (np.diff(seg) == 1).all()


def test_red_and_atom_with_sink_and_per_lane_addresses():
    # lanes hit 4 different words: lane % 4; red adds lane, atom with '_' adds 100
    body = ("  and.b32 %r3, %r0, 3;\n  mul.wide.u32 %rd10, %r3, 4;\n  add.u64 %rd11, %rd2, %rd10;\n"
            "  red.global.add.u32 [%rd11], %r0;\n  atom.global.add.u32 _, [%rd11], 100;\n")
    _, mem = launch(body)
    lane = np.arange(32)
    want = [int(lane[lane % 4 == k].sum()) + 800 for k in range(4)]
    assert mem.view(np.uint32)[:4].tolist() == want


def test_f32_add_sequential_rounding_in_lane_order():
    rng = np.random.default_rng(1)
    vals = (rng.standard_normal(32) * np.exp2(rng.integers(-20, 20, 32))).astype(np.float32)
    inp = np.zeros(32, np.uint64)
    inp[:] = vals.view(np.uint32)
    body = ("  mov.b32 %f1, %r2;\n  atom.global.add.f32 %f2, [%rd2], %f1;\n  mov.b32 %r3, %f2;\n"
            "  st.global.u32 [%rd1], %r3;\n"
            "  atom.shared.add.f32 %f3, [sm], %f1;\n  bar.sync 0;\n  ld.shared.u32 %r4, [sm];\n"
            "  st.global.u32 [%rd2+8], %r4;\n")
    out, mem = launch(body, inp=inp)
    acc = np.float32(0)
    seen = []
    for v in vals:        # independent model: float64 sum of two f32 is exact, then one rounding to f32
        seen.append(acc)
        acc = np.float32(np.float64(acc) + np.float64(v))
    assert out.astype(np.uint32).tolist() == np.array(seen, np.float32).view(np.uint32).tolist()
    assert int(mem.view(np.uint32)[0]) == int(np.float32(acc).view(np.uint32))
    assert int(mem.view(np.uint32)[2]) == int(np.float32(acc).view(np.uint32))


def test_f32_add_flushes_subnormals_on_global_only():
    # Seen on an H100 (sm_90a): red.global.add.f32 0 + 1e-40 -> 0, 1e-40 + 0 -> 0, atom returns the unflushed old
    # value; on shared memory both sums keep the subnormal.
    sub = int(np.array([1e-40], np.float32).view(np.uint32)[0])
    inp = np.full(32, sub, np.uint64)
    mem = np.zeros(16, np.uint64)
    mem.view(np.uint32)[1] = sub
    mem.view(np.uint32)[2] = sub
    body = ("  setp.ne.u32 %p1, %r0, 0;\n  @%p1 bra END;\n  mov.b32 %f1, %r2;\n  mov.f32 %f4, 0f00000000;\n"
            "  red.global.add.f32 [%rd2], %f1;\n  red.global.add.f32 [%rd2+4], %f4;\n"
            "  atom.global.add.f32 %f5, [%rd2+8], %f1;\n  mov.b32 %r7, %f5;\n  st.global.u32 [%rd1], %r7;\n"
            "  mov.u32 %r5, 0;\n  st.shared.v2.u32 [sm], {%r5, %r2};\n"
            "  red.shared.add.f32 [sm], %f1;\n  red.shared.add.f32 [sm+4], %f4;\n"
            "  ld.shared.v2.u32 {%r4, %r6}, [sm];\n  st.global.v2.u32 [%rd2+16], {%r4, %r6};\nEND:\n")
    out, mem = launch(body, inp=inp, mem=mem)
    m = mem.view(np.uint32)
    assert m[:3].tolist() == [0, 0, 0] and m[4:6].tolist() == [sub, sub]
    assert int(out.view(np.uint32)[0]) == sub


def test_f64_add():
    rng = np.random.default_rng(2)
    vals = rng.standard_normal(32) * 1e3
    body = ("  mov.b64 %fd1, %rd6;\n  atom.global.add.f64 %fd2, [%rd2], %fd1;\n  mov.b64 %rd7, %fd2;\n"
            "  st.global.u64 [%rd1], %rd7;\n")
    out, mem = launch(body, inp=vals.view(np.uint64))
    acc = 0.0
    seen = []
    for v in vals:
        seen.append(acc)
        acc = acc + v
    assert out.view(np.float64).tolist() == seen and mem.view(np.float64)[0] == acc


def test_cas_spin_lock_counter_from_64_threads():
    # lock at mem[0], counter at mem[1]; the "done flag" loop shape keeps the lock holder making progress
    body = """
  add.u64 %rd10, %rd2, 8;
  mov.u32 %r9, 0;                // done
LOOP:
  atom.global.acquire.gpu.cas.b32 %r3, [%rd2], 0, 1;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra RETRY;
  ld.global.u32 %r4, [%rd10];
  add.u32 %r4, %r4, 1;
  st.global.u32 [%rd10], %r4;
  st.global.u32 [%rd1], %r4;
  fence.acq_rel.gpu;
  atom.global.release.gpu.exch.b32 %r5, [%rd2], 0;
  mov.u32 %r9, 1;
RETRY:
  setp.eq.u32 %p2, %r9, 0;
  @%p2 bra LOOP;
"""
    for seed in (None, 5):
        out, mem = launch(body, nthreads=64, seed=seed)
        m = mem.view(np.uint32)
        assert int(m[0]) == 0 and int(m[2]) == 64
        assert sorted(out.astype(np.uint32).tolist()) == list(range(1, 65))


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("typ", ["s32", "u32", "s64", "u64"])
def test_min_max_signed_vs_unsigned(op, typ):
    rng = np.random.default_rng(3)
    bits = 32 if typ.endswith("32") else 64
    signed = typ[0] == "s"
    raw = rng.integers(-2**(bits - 1), 2**(bits - 1), 32, dtype=np.int64)
    raw[5], raw[9] = -1, 2**(bits - 1) - 1
    if bits == 32:
        inp = (raw & 0xFFFFFFFF).astype(np.uint64)
        start = np.uint64(7)
        body = (f"  atom.global.{op}.{typ} %r3, [%rd2], %r2;\n  st.global.u32 [%rd1], %r3;\n")
    else:
        inp = raw.view(np.uint64)
        start = np.uint64(7)
        body = (f"  atom.global.{op}.{typ} %rd7, [%rd2], %rd6;\n  st.global.u64 [%rd1], %rd7;\n")
    mem = np.zeros(16, np.uint64)
    mem[0] = start
    out, mem = launch(body, inp=inp, mem=mem)
    if bits == 32:
        vals = raw.astype(np.int32) if signed else (raw & 0xFFFFFFFF).astype(np.uint32)
    else:
        vals = raw if signed else raw.view(np.uint64)
    dt = vals.dtype
    acc = dt.type(7)
    seen = []
    for v in vals:
        seen.append(acc)
        acc = min(acc, v) if op == "min" else max(acc, v)
    mask = (1 << bits) - 1
    got = [int(x) & mask for x in out]
    assert got == [int(x) & mask for x in seen]
    assert int(mem[0]) & mask == int(acc) & mask


def test_inc_dec_wrap():
    # 13 lanes inc with bound 5 from 0; 13 lanes dec with bound 4 from 2; inc/dec from 7 > bound
    body = ("  setp.ge.u32 %p1, %r0, 13;\n  @%p1 bra END;\n"
            "  atom.global.inc.u32 %r3, [%rd2], 5;\n  atom.global.dec.u32 %r4, [%rd2+4], 4;\n"
            "  st.global.v2.u32 [%rd1], {%r3, %r4};\n"
            "  setp.ne.u32 %p2, %r0, 0;\n  @%p2 bra END;\n"
            "  atom.global.inc.u32 %r5, [%rd2+8], 5;\n  atom.global.dec.u32 %r6, [%rd2+12], 5;\n"
            "  red.global.inc.u32 [%rd2+16], 0;\n  red.global.dec.u32 [%rd2+20], 0;\nEND:\n")
    mem = np.zeros(16, np.uint64)
    m32 = mem.view(np.uint32)
    m32[0], m32[1], m32[2], m32[3], m32[4], m32[5] = 0, 2, 7, 7, 3, 3
    out, mem = launch(body, mem=mem)
    o = out.view(np.uint32).reshape(32, 2)[:13]

    def inc(r, s):
        return 0 if r >= s else r + 1

    def dec(r, s):
        return s if (r == 0 or r > s) else r - 1

    a, b, sa, sb = 0, 2, [], []
    for _ in range(13):
        sa.append(a)
        sb.append(b)
        a, b = inc(a, 5), dec(b, 4)
    assert o[:, 0].tolist() == sa and o[:, 1].tolist() == sb
    m = mem.view(np.uint32)
    assert m[0] == a and m[1] == b and m[2] == 0 and m[3] == 5 and m[4] == inc(3, 0) and m[5] == dec(3, 0)


def test_exch_chain_and_bitwise_ops():
    inp = np.arange(100, 132, dtype=np.uint64)
    body = ("  atom.global.exch.b32 %r3, [%rd2], %r2;\n  shl.b32 %r6, 1, %r0;\n"
            "  atom.global.or.b32 %r4, [%rd2+4], %r6;\n  atom.global.xor.b32 %r5, [%rd2+8], %r2;\n"
            "  red.global.and.b32 [%rd2+12], %r2;\n  atom.global.or.b64 _, [%rd2+16], %rd6;\n"
            "  st.global.v2.u32 [%rd1], {%r3, %r4};\n")
    mem = np.zeros(16, np.uint64)
    mem.view(np.uint32)[0] = 7
    mem.view(np.uint32)[3] = 0xFFFFFFFF
    out, mem = launch(body, inp=inp, mem=mem)
    o = out.view(np.uint32).reshape(32, 2)
    assert o[:, 0].tolist() == [7] + list(range(100, 131))
    assert o[:, 1].tolist() == [(1 << i) - 1 for i in range(32)]
    m = mem.view(np.uint32)
    x = 0
    a = 0xFFFFFFFF
    o64 = 0
    for v in range(100, 132):
        x ^= v
        a &= v
        o64 |= v
    assert m[0] == 131 and m[1] == 0xFFFFFFFF and m[2] == x and m[3] == a and mem[2] == o64


def test_cas_b16_b32_b64():
    # every lane tries cas(expected=lane, new=lane+1): they succeed one after the other in lane order
    body = ("  add.u32 %r4, %r0, 1;\n  atom.global.cas.b32 %r3, [%rd2], %r0, %r4;\n"
            "  cvt.u64.u32 %rd8, %r0;\n  add.u64 %rd9, %rd8, 1;\n  atom.global.cas.b64 %rd7, [%rd2+8], %rd8, %rd9;\n"
            "  cvt.u16.u32 %h1, %r0;\n  cvt.u16.u32 %h2, %r4;\n  atom.global.cas.b16 %h3, [%rd2+16], %h2, %h1;\n"
            "  st.global.u32 [%rd1], %r3;\n  cvt.u32.u16 %r5, %h3;\n  st.global.u32 [%rd1+4], %r5;\n")
    out, mem = launch(body)
    o = out.view(np.uint32).reshape(32, 2)
    assert o[:, 0].tolist() == list(range(32)) and int(mem.view(np.uint32)[0]) == 32 and int(mem[1]) == 32
    # the b16 cas compares with lane+1 while memory holds 0: nobody succeeds
    assert (o[:, 1] == 0).all() and int(mem.view(np.uint16)[8]) == 0


def test_shared_histogram_with_atom_and_red():
    inp = (np.arange(128, dtype=np.uint64) * 7919) % 13
    body = ("  setp.lt.u32 %p1, %r0, 16;\n  shl.b32 %r7, %r0, 2;\n  add.u32 %r8, %r50, %r7;\n"
            "  mov.u32 %r9, 0;\n  @%p1 st.shared.u32 [%r8], %r9;\n  bar.sync 0;\n"
            "  shl.b32 %r3, %r2, 2;\n  add.u32 %r4, %r50, %r3;\n  atom.shared::cta.add.u32 %r5, [%r4], 1;\n"
            "  red.shared.add.u32 [%r4+64], 2;\n  bar.sync 0;\n"
            "  @%p1 ld.shared.u32 %r6, [%r8];\n  @%p1 ld.shared.u32 %r10, [%r8+64];\n"
            "  @%p1 st.global.v2.u32 [%rd1], {%r6, %r10};\n")
    out, _ = launch(body, inp=inp, nthreads=128)
    o = out.view(np.uint32).reshape(128, 2)[:16]
    h = np.bincount(inp.astype(np.int64), minlength=16)
    assert o[:13, 0].tolist() == h[:13].tolist()
    assert o[:13, 1].tolist() == (2 * h[:13]).tolist()


def test_generic_address_atomics_to_shared_and_global():
    body = ("  cvta.shared.u64 %rd10, sm;\n  setp.eq.u32 %p1, %r0, 0;\n  mov.u32 %r9, 0;\n"
            "  @%p1 st.shared.u32 [sm], %r9;\n  bar.sync 0;\n"
            "  atom.add.u32 %r3, [%rd10], 2;\n  atom.add.u32 %r4, [%rd2], 3;\n  bar.sync 0;\n"
            "  @%p1 ld.shared.u32 %r5, [sm];\n  @%p1 st.global.u32 [%rd2+8], %r5;\n")
    _, mem = launch(body, nthreads=64)
    m = mem.view(np.uint32)
    assert m[0] == 192 and m[2] == 128


@pytest.mark.parametrize("seed", [None, 2])
def test_shared_cluster_reduction_into_rank0(seed):
    body = ("  mov.u32 %r20, %cluster_ctarank;\n  setp.eq.u32 %p1, %r0, 0;\n  setp.eq.u32 %p2, %r20, 0;\n"
            "  and.pred %p3, %p1, %p2;\n  mov.u32 %r9, 0;\n  @%p1 st.shared.u32 [sm], %r9;\n"
            "  barrier.cluster.arrive;\n  barrier.cluster.wait;\n"
            "  mov.u32 %r21, 0;\n  mapa.shared::cluster.u32 %r22, %r50, %r21;\n"
            "  add.u32 %r23, %r20, 1;\n  red.shared::cluster.add.u32 [%r22], %r23;\n"
            "  atom.shared::cluster.max.u32 %r24, [%r22+4], %r63;\n"
            "  barrier.cluster.arrive;\n  barrier.cluster.wait;\n"
            "  @%p3 ld.shared.v2.u32 {%r5, %r6}, [sm];\n  @%p3 st.global.v2.u32 [%rd2], {%r5, %r6};\n")
    _, mem = launch(body, nthreads=64, nctas=4, cluster=4, seed=seed)
    m = mem.view(np.uint32)
    assert m[0] == 64 * (1 + 2 + 3 + 4) and m[1] == 255


def test_half_precision_adds_noftz():
    rng = np.random.default_rng(4)
    f16 = (rng.uniform(0.5, 60, 64) * rng.choice([-1, 1], 64)).astype(np.float16)
    bf = (rng.uniform(0.5, 60, 64) * rng.choice([-1, 1], 64)).astype(ml_dtypes.bfloat16)
    inp = np.zeros(32, np.uint64)
    w = inp.view(np.uint16).reshape(32, 4)
    w[:, 0] = f16[:32].view(np.uint16)
    w[:, 1] = f16[32:].view(np.uint16)
    w[:, 2] = bf[:32].view(np.uint16)
    w[:, 3] = bf[32:].view(np.uint16)
    body = ("  mov.b64 {%h1, %h2, %h3, %h4}, %rd6;\n"
            "  atom.global.add.noftz.f16 %h5, [%rd2], %h1;\n"
            "  atom.global.add.noftz.bf16 %h6, [%rd2+2], %h3;\n"
            "  mov.b32 %r3, {%h1, %h2};\n  mov.b32 %r4, {%h3, %h4};\n"
            "  atom.global.add.noftz.f16x2 %r5, [%rd2+4], %r3;\n"
            "  red.global.add.noftz.bf16x2 [%rd2+8], %r4;\n")
    _, mem = launch(body, inp=inp)
    m = mem.view(np.uint16)

    def seq(vals, dt):
        acc = dt(0)
        for v in vals:
            acc = dt(np.float64(acc) + np.float64(v))
        return int(np.array(acc, dt).view(np.uint16))

    assert m[0] == seq(f16[:32], np.float16)
    assert m[1] == seq(bf[:32], ml_dtypes.bfloat16)
    assert m[2] == seq(f16[:32], np.float16) and m[3] == seq(f16[32:], np.float16)
    assert m[4] == seq(bf[:32], ml_dtypes.bfloat16) and m[5] == seq(bf[32:], ml_dtypes.bfloat16)


def test_vector_atomics_sm90():
    rng = np.random.default_rng(6)
    vals = rng.uniform(-10, 10, (32, 4)).astype(np.float32)
    inp = np.zeros(64, np.uint64)     # 16 bytes per lane: use two 8-byte slots per thread via stride
    inp.view(np.float32).reshape(32, 4)[:] = vals
    body = ("  mul.wide.u32 %rd20, %r0, 16;\n  add.u64 %rd21, %rd4, %rd20;\n"
            "  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd21];\n"
            "  atom.global.v4.f32.add {%f5, %f6, %f7, %f8}, [%rd2], {%f1, %f2, %f3, %f4};\n"
            "  red.global.add.v2.f32 [%rd2+16], {%f1, %f2};\n"
            "  mov.b64 {%h1, %h2, %h3, %h4}, %rd6;\n"
            "  atom.global.v4.f16.max.noftz {%h5, %h6, %h7, %h8}, [%rd2+32], {%h1, %h2, %h3, %h4};\n"
            "  st.global.v2.f32 [%rd1], {%f5, %f6};\n")
    out, mem = launch(body, inp=inp)
    acc = np.zeros(4, np.float32)
    seen = []
    for v in vals:
        seen.append(acc.copy())
        acc = (acc.astype(np.float64) + v.astype(np.float64)).astype(np.float32)
    assert (out.view(np.float32).reshape(32, 2) == np.array(seen)[:, :2]).all()
    mf = mem.view(np.float32)
    assert (mf[:4] == acc).all() and (mf[4:6] == acc[:2]).all()
    h = inp.view(np.uint16).reshape(64, 4)[:32].view(np.float16)    # lane i reads the 8 bytes at inp + 8*i
    # max with a NaN operand yields the other operand (fp.fmax), like np.fmax
    assert (mem.view(np.float16)[16:20] == np.fmax(np.fmax.reduce(h, axis=0), np.float16(0))).all()


def test_atomic_sync_event_records_sem_and_scope():
    events = []
    launch("  atom.global.acq_rel.cluster.add.u32 %r3, [%rd2], 1;\n  red.shared.release.cta.add.u32 [sm], 1;\n",
           observers=[events.append])
    sy = [e.fields for e in events if e.kind == "sync"]
    assert sy[0]["op"] == "atom" and sy[0]["sem"] == "acq_rel" and sy[0]["scope"] == "cluster"
    assert sy[1]["op"] == "red" and sy[1]["sem"] == "release" and sy[1]["space"] == "shared::cta"
    mems = [e.fields for e in events if e.kind == "mem" and e.fields["op"] in ("atom", "red")]
    assert {m["op"] for m in mems} == {"atom", "red"}


@pytest.mark.parametrize("text,err", [
    ("red.global.cas.b32 [%rd2], %r2;", VerifyError),
    ("atom.global.inc.s32 %r3, [%rd2], 1;", VerifyError),
    ("atom.global.add.f16 %h1, [%rd2], %h2;", VerifyError),
    ("atom.global.and.u32 %r3, [%rd2], 1;", VerifyError),
    ("atom.global.exch.b128 %rd7, [%rd2], %rd6;", VerifyError),
    ("atom.shared.v4.f32.add {%f1, %f2, %f3, %f4}, [sm], {%f1, %f2, %f3, %f4};", VerifyError),
    ("atom.global.v8.f32.add {%f1, %f2, %f3, %f4}, [%rd2], {%f1, %f2, %f3, %f4};", VerifyError),
    ("red.global.acquire.add.u32 [%rd2], 1;", VerifyError),
    ("atom.global.cas.b32 %r3, [%rd2], 1;", VerifyError),
])
def test_invalid_forms(text, err):
    with pytest.raises(err):
        launch("  " + text + "\n")


def test_vector_atomics_need_sm90():
    with pytest.raises(VerifyError, match="sm_90"):
        launch("  atom.global.v2.f32.add {%f1, %f2}, [%rd2], {%f1, %f2};\n", arch="sm_80")


def test_misaligned_and_out_of_bounds_atomics_fault():
    with pytest.raises(MemoryFault, match="misaligned"):
        launch("  atom.global.add.u32 %r3, [%rd2+2], 1;\n")
    with pytest.raises(MemoryFault):
        launch("  atom.global.add.u32 %r3, [%rd2+4096], 1;\n")
    with pytest.raises(MemoryFault, match="vector atomic on a non-global"):
        launch("  cvta.shared.u64 %rd10, sm;\n  atom.v2.f32.add {%f1, %f2}, [%rd10], {%f1, %f2};\n")
