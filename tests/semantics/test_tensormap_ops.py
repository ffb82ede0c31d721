"""tensormap.replace and tensormap.cp_fenceproxy (sim/semantics/tensormap.py): a kernel builds a tensor map from
zero-filled SMEM the way Triton's ``tl.make_tensor_descriptor`` does, publishes it to global memory and TMA-loads
through it; every field, the value rules and the decode-time rules (the same PTX ptxas 13.0 rejects)."""

import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault, SyncError, UnsupportedError, VerifyError
from tcsim.isa.tensormap import TensorMap
from tcsim.isa.ptxas import assemble
from tcsim.launch import Launch, run_launch

HEAD = ".version 9.0\n.target sm_100a\n.address_size 64\n"


def check_ptxas(ptx: str) -> None:
    """Test kernels that tcsim accepts must assemble (skipped without ptxas)."""
    r = assemble(ptx, "sm_100a")
    assert r is None or r[0] == 0, r[1]


def build_kernel(replaces: str, space: str = ".shared::cta", dims: str = "", tail: str = "") -> str:
    """Thread 0 zero-fills 128 bytes of SMEM (%rd2 = its shared::cta address), runs ``replaces`` on it, copies
    it to global %rd1 (the ``tmap`` argument) with cp_fenceproxy (warp 0), acquires it, then TMA-loads box
    (0, 0) into SMEM ``buf`` and thread 0 copies ``nbytes`` of ``buf`` to ``out``."""
    return HEAD + f""".visible .entry k(.param .u64 tmap, .param .u64 src, .param .u64 out, .param .u32 nbytes,
                        .param .u32 gdim0, .param .u32 gdim1, .param .u64 gstride)
{{
  .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .pred %p<10>;
  .shared .align 128 .b8 tm[128];
  .shared .align 1024 .b8 buf[8192];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [tmap];
  ld.param.u64 %rd3, [src];
  ld.param.u64 %rd4, [out];
  ld.param.u32 %r3, [nbytes];
  ld.param.u32 %r4, [gdim0];
  ld.param.u32 %r5, [gdim1];
  ld.param.u64 %rd5, [gstride];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, tm;
  cvt.u64.u32 %rd2, %r1;
  setp.lt.u32 %p1, %r0, 32;
  shl.b32 %r6, %r0, 2;
  add.u32 %r7, %r1, %r6;
  mov.b32 %r8, 0;
  @%p1 st.shared::cta.b32 [%r7], %r8;
  bar.sync 0;
  setp.eq.u32 %p2, %r0, 0;
  @!%p2 bra PUBLISH;
{replaces}
PUBLISH:
  bar.sync 0;
  @%p1 tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [%rd2], 128;
  @%p1 fence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;
  bar.sync 0;
  @!%p2 bra DONE;
  mov.u32 %r10, bar;
  mov.u32 %r11, buf;
  mbarrier.init.shared::cta.b64 [%r10], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r10], %r3;
  mov.b32 %r12, 0;
  cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%r11], [%rd1, {{%r12, %r12}}], [%r10];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r10], 0;
  @!%p3 bra WAIT;
  mov.b32 %r13, 0;
COPY:
  add.u32 %r14, %r11, %r13;
  ld.shared.b32 %r15, [%r14];
  cvt.u64.u32 %rd6, %r13;
  add.u64 %rd7, %rd4, %rd6;
  st.global.b32 [%rd7], %r15;
  add.u32 %r13, %r13, 4;
  setp.lt.u32 %p4, %r13, %r3;
  @%p4 bra COPY;
{tail}
DONE:
  ret;
}}
"""


def replaces_for(box=(16, 8), swizzle_mode=0, elemtype=7, extra="", space=".shared::cta", addr="%rd2"):
    """The replace sequence Triton emits for a rank-2 map (box given in driver order: dim 0 first)."""
    s = space
    return f"""
  tensormap.replace.tile.global_address{s}.b1024.b64 [{addr}], %rd3;
  tensormap.replace.tile.rank{s}.b1024.b32 [{addr}], 1;
  mov.b32 %r20, {box[0]};
  tensormap.replace.tile.box_dim{s}.b1024.b32 [{addr}], 0, %r20;
  mov.b32 %r21, {box[1]};
  tensormap.replace.tile.box_dim{s}.b1024.b32 [{addr}], 1, %r21;
  tensormap.replace.tile.global_dim{s}.b1024.b32 [{addr}], 0, %r4;
  tensormap.replace.tile.global_dim{s}.b1024.b32 [{addr}], 1, %r5;
  tensormap.replace.tile.global_stride{s}.b1024.b64 [{addr}], 0, %rd5;
  mov.b32 %r22, 1;
  tensormap.replace.tile.element_stride{s}.b1024.b32 [{addr}], 0, %r22;
  tensormap.replace.tile.element_stride{s}.b1024.b32 [{addr}], 1, %r22;
  tensormap.replace.tile.elemtype{s}.b1024.b32 [{addr}], {elemtype};
  tensormap.replace.tile.swizzle_mode{s}.b1024.b32 [{addr}], {swizzle_mode};
{extra}"""


def run_build(A, box_np, replaces, nbytes=None, tail=""):
    rows, cols = A.shape
    ptx = build_kernel(replaces, tail=tail)
    check_ptxas(ptx)
    nbytes = nbytes if nbytes is not None else box_np[0] * box_np[1] * A.itemsize
    tmap = np.zeros(128, np.uint8)
    out = np.zeros(nbytes, np.uint8)
    res = run_launch(Launch(ptx=ptx, block=(64, 1, 1),
                            args=[tmap, A, out, nbytes, cols, rows, cols * A.itemsize]))
    return res, TensorMap.decode(res.outputs[0].tobytes())


def test_build_publish_and_load_through_device_map():
    A = (np.arange(20 * 24, dtype=np.float32).reshape(20, 24) * 0.5 - 7)
    res, tm = run_build(A, (8, 16), replaces_for(box=(16, 8)))
    assert tm.dtype == "FLOAT32" and tm.rank == 2 and tm.global_dims == (24, 20)
    assert tm.global_strides == (96,) and tm.box_dims == (16, 8) and tm.element_strides == (1, 1)
    assert (tm.swizzle, tm.interleave, tm.l2_promotion, tm.oob_fill) == ("none", "none", "none", "zero")
    assert tm.global_address == res.simulation.gmem.allocation_of(tm.global_address).base   # = the src buffer
    assert np.array_equal(res.outputs[2].view(np.float32).reshape(8, 16), A[:8, :16])


def test_swizzle_and_elemtype_ptx_numbering():
    """elemtype 10 is .bf16 in PTX (BFLOAT16 = 9 in the driver enum); swizzle_mode 3 = 128B."""
    import ml_dtypes
    A = np.arange(16 * 64, dtype=np.float32).reshape(16, 64).astype(ml_dtypes.bfloat16)
    res, tm = run_build(A, (8, 64), replaces_for(box=(64, 8), swizzle_mode=3, elemtype=10))
    assert tm.dtype == "BFLOAT16" and tm.swizzle == "128B"
    got = res.outputs[2].view(np.uint8)
    # the SMEM image is the 128B-swizzled box: row r's 16-byte chunk c lands at chunk c ^ (r % 8)
    img = np.ascontiguousarray(A[:8, :64]).view(np.uint8).reshape(8, 8, 16)
    want = np.empty_like(img)
    for r in range(8):
        for c in range(8):
            want[r, c ^ (r % 8)] = img[r, c]
    assert np.array_equal(got, want.reshape(-1))


def test_all_enum_fields_and_atomicity():
    extra = """
  tensormap.replace.tile.swizzle_atomicity.shared::cta.b1024.b32 [%rd2], 3;
  tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%rd2], 0;
  tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%rd2], 1;
  tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%rd2], 8;"""
    A = np.ones((16, 32), np.float32)
    res, tm = run_build(A, (8, 32), replaces_for(box=(32, 8), swizzle_mode=3, extra=extra))
    assert tm.swizzle == "128B_atom_64B" and tm.oob_fill == "nan" and tm.dtype == "FLOAT32_FTZ"


def test_replace_in_global_memory_generic_address():
    """A map in global memory edited in place (.global and generic forms): retarget a host map."""
    A = np.arange(8 * 16, dtype=np.int32).reshape(8, 16)
    B = A + 1000
    host = TensorMap.tiled(B, (4, 16))
    ptx = HEAD + """.visible .entry k(.param .u64 tmap, .param .u64 src, .param .u32 rows)
{
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [tmap];
  ld.param.u64 %rd2, [src];
  ld.param.u32 %r1, [rows];
  tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;
  mov.b32 %r2, 2;
  tensormap.replace.tile.box_dim.b1024.b32 [%rd1], 1, %r2;
  tensormap.replace.tile.global_dim.b1024.b32 [%rd1], 1, %r1;
  ret;
}
"""
    check_ptxas(ptx)
    host.global_address = 0x1000                                   # stale: the kernel retargets it
    raw = np.frombuffer(host.encode(), dtype=np.uint8).copy()
    res = run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=[raw, A, 6]))
    tm = TensorMap.decode(res.outputs[0].tobytes())
    assert tm.global_dims == (16, 6) and tm.box_dims == (16, 2) and tm.dtype == "INT32"
    assert tm.global_strides == host.global_strides and tm.global_address != 0x1000
    assert tm.global_address == res.simulation.gmem.allocation_of(tm.global_address).base


@pytest.mark.parametrize("form, err, msg", [
    ("tensormap.replace.global_address.shared::cta.b1024.b64 [%rd2], %rd3;", VerifyError, "needs the mode "
     "qualifier .tile"),
    ("tensormap.replace.tile.rank.shared::cta.b1024.b64 [%rd2], %rd3;", VerifyError, ".rank takes a .b32"),
    ("tensormap.replace.tile.global_stride.shared::cta.b1024.b32 [%rd2], 0, %r1;", VerifyError,
     ".global_stride takes a .b64"),
    ("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd2], %r1, %r1;", VerifyError,
     "ord must be an integer constant"),
    ("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd2], 5, %r1;", VerifyError, "ord 5 is out of range"),
    ("tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%rd2], %r1;", VerifyError,
     "new .elemtype value must be an integer constant"),
    ("tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%rd2], 16;", VerifyError,
     "new value 16 is out of range for .elemtype"),
    ("tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%rd2], 4;", VerifyError,
     "new value 4 is out of range for .swizzle_mode"),
    ("tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%rd2], 2;", VerifyError, "out of range"),
    ("tensormap.replace.tile.global_address.shared.b1024.b64 [%rd2], %rd3;", VerifyError,
     "qualifier .shared is not valid"),
    ("tensormap.replace.tile.rank.shared::cta.b32 [%rd2], 1;", VerifyError, "needs .b1024"),
    ("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd2], 1;", VerifyError, "takes 3 operands"),
    ("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [%rd2], 64;",
     VerifyError, "size 64 must be 128"),
    ("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu [%rd1], [%rd2], 128;",
     VerifyError, "needs .sync"),
    ("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.acquire.gpu.sync.aligned [%rd1], [%rd2], 128;",
     VerifyError, "needs .release"),
    ("tensormap.cp_fenceproxy.global.shared::cta.release.gpu.sync.aligned [%rd1], [%rd2], 128;",
     VerifyError, "needs .tensormap::generic"),
])
def test_decode_diagnostics(form, err, msg):
    ptx = HEAD + f""".visible .entry k()
{{
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  {form}
  ret;
}}
"""
    with pytest.raises(err, match=msg) as ei:
        run_launch(Launch(ptx=ptx, block=(1, 1, 1), args=[]))
    assert ei.value.loc is not None and ei.value.loc.line == 7


@pytest.mark.parametrize("replace, err, msg", [
    ("mov.b32 %r30, 5;\n  tensormap.replace.tile.rank.shared::cta.b1024.b32 [%rd2], %r30;", VerifyError,
     "new value 5 is not a rank code"),
    ("mov.b32 %r30, 0;\n  tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd2], 1, %r30;", VerifyError,
     "box size 0 .dimension 1. is out of range"),
    ("mov.b32 %r30, 257;\n  tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd2], 0, %r30;", VerifyError,
     "box size 257"),
    ("mov.b32 %r30, 0;\n  tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%rd2], 0, %r30;", VerifyError,
     "global size 0"),
    ("mov.b32 %r30, 9;\n  tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%rd2], 0, %r30;",
     VerifyError, "element stride 9"),
    ("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%rd2], 4, %rd5;", UnsupportedError,
     "global strides for dimensions 1..4 only"),
    ("tensormap.replace.tile.swizzle_atomicity.shared::cta.b1024.b32 [%rd2], 1;", UnsupportedError,
     "swizzle span none with atomicity 32B has no CUtensorMapSwizzle value"),
    ("add.u64 %rd9, %rd2, 16;\n  tensormap.replace.tile.rank.shared::cta.b1024.b32 [%rd9], 1;", MemoryFault,
     "misaligned"),
])
def test_run_time_value_rules(replace, err, msg):
    ptx = build_kernel("  " + replace)
    check_ptxas(ptx)
    A = np.zeros((4, 4), np.float32)
    with pytest.raises(err, match=msg) as ei:
        run_launch(Launch(ptx=ptx, block=(64, 1, 1), args=[np.zeros(128, np.uint8), A, np.zeros(64, np.uint8),
                                                           64, 4, 4, 16]))
    e = ei.value
    assert e.loc is not None and "tensormap.replace" in e.loc.text and "lane 0" in str(e)


def test_half_built_map_is_rejected_where_used():
    """A map missing its data type is published fine but the TMA load that uses it reports it invalid."""
    A = np.zeros((16, 16), np.float32)
    replaces = replaces_for(box=(16, 8)).replace("elemtype.shared::cta.b1024.b32 [%rd2], 7",
                                                 "elemtype.shared::cta.b1024.b32 [%rd2], 0")
    # UINT8 with box[0] = 16 elements = 16 bytes is legal; ask for a 3-byte box row instead
    replaces = replaces.replace("mov.b32 %r20, 16;", "mov.b32 %r20, 3;")
    with pytest.raises(MemoryFault, match="is not valid: invalid tensor map: boxDim.0. \\* elementSize must be a "
                                          "multiple of 16 bytes"):
        run_build(A, (8, 16), replaces, nbytes=64)


def test_cp_fenceproxy_is_warp_collective_and_emits_release():
    ptx = HEAD + """.visible .entry k(.param .u64 dst)
{
  .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  .shared .align 128 .b8 tm[128];
  ld.param.u64 %rd1, [dst];
  mov.u32 %r1, tm;
  mov.u32 %r0, %tid.x;
  setp.lt.u32 %p1, %r0, 16;
  @%p1 tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.cta.sync.aligned [%rd1], [%r1], 128;
  ret;
}
"""
    check_ptxas(ptx)
    with pytest.raises(SyncError, match="warp-collective"):
        run_launch(Launch(ptx=ptx, block=(32, 1, 1), args=[np.zeros(128, np.uint8)]))
    events = []
    res = run_launch(Launch(ptx=ptx.replace("setp.lt.u32 %p1, %r0, 16", "setp.lt.u32 %p1, %r0, 32"),
                            block=(32, 1, 1), args=[np.full(128, 7, np.uint8)]), observers=[events.append])
    assert (res.outputs[0] == 0).all()                          # the (zero) SMEM bytes were copied
    fences = [e.fields for e in events if e.kind == "sync" and e.fields.get("op") == "fence"]
    assert len(fences) == 1 and fences[0]["proxy"] == "tensormap::generic" and fences[0]["sem"] == "release"
    assert fences[0]["scope"] == "cta"
    copies = [e.fields for e in events if e.kind == "mem" and e.fields.get("op") == "tensormap.cp"]
    assert [c["space"] for c in copies] == ["shared::cta", "global"]   # one copy for the 32 identical lanes
