"""Real Triton output for Blackwell, executed: the sm_100a PTX that Triton 3.9 compiled (on a machine without a
GPU) from the kernels in ``tests/fixtures/triton/gen_triton_blackwell.py``, launched the way Triton's own
launcher would, and compared with numpy.

Only the committed fixtures are used (Triton is not needed): ``<kernel>.sm_100a.ptx`` and ``<kernel>.sm_100a.json``
(the compile call, ``num_warps``, dynamic SMEM, scratch sizes, ``tensordesc_meta`` and the parameter map).
How a launch is built from them (:func:`triton_args`), exactly as ``triton/backends/nvidia/driver.py`` does:

* a host ``TensorDescriptor`` argument becomes (CUtensorMap, shape..., strides...): the map is what
  ``cuTensorMapEncodeTiled`` gets from ``fill_tma_descriptor_tiled`` -- data type from ``tensordesc_meta
  .elem_type`` (Triton's device numbering = PTX ``.elemtype``, :data:`tcsim.isa.tensormap.PTX_ELEMTYPES`), box =
  ``block_size`` (the inner dimension already clamped to the swizzle span by Triton), swizzle =
  ``tensordesc_meta.swizzle`` (CUtensorMapSwizzle), element strides 1, no interleave, L2 promotion 128B, OOB
  fill NONE (zeros) for ``padding="zero"``; shape is passed as i32 and strides as i64 element counts;
* the two hidden trailing pointers are the global and profile scratch buffers: grid size * num_ctas * size
  bytes, or null when the size is 0;
* grid = tiles of the output, block = 32 * num_warps threads, dynamic SMEM = ``shared``.

References, all computed from the inputs with numpy (never from simulator state):

* matmuls: bit for bit against the tcgen05 numerics oracle (:func:`tcsim.numerics.tensor_core.mma_float`,
  ``tc_params('sm_100a', 'tcgen05', fmt, kind=...)``) chained over K exactly as the kernels issue their MMAs:
  the PTX issues four ``tcgen05.mma.cta_group::1.kind::f16`` (K = 16 each) per 64-wide K block, or four
  ``.kind::tf32`` (K = 8 each) per 32-wide K block, the SMEM descriptors advancing through K in order (checked
  in :func:`test_mma_chain_structure`); the first MMA of a tile has enable-input-d false (D = A*B: the same as
  accumulating onto +0 in the oracle, whose results are never -0) and every later one accumulates; masked /
  out-of-bounds K is loaded as zeros, so the reference chains the same steps over zero-padded operands.  f16
  outputs are the oracle's f32 rounded to nearest even (``cvt.rn.f16x2.f32`` in the PTX).  Also within
  2^-14 |A||B| (tf32: 2^-9) of the float64 product, a layout check independent of the oracle; one-token
  mutations of the PTX must fail the comparison (:func:`test_negative_controls`);
* elementwise TMA kernels: exactly equal to the correctly rounded ``fma.rn.f32`` (the PTX fuses ``x*alpha + y``
  into ``fma.rn.f32x2``); :func:`fma_f32` computes it in float64 and proves that double rounding cannot occur
  for the inputs used.

The last section runs the CuTe DSL fixture (``tests/fixtures/triton/cute_dsl/``, CUTLASS Python DSL 4.8.1, also
compiled without a GPU): a 2-stage TMA -> tcgen05 GEMM whose tensors arrive as byte-array parameters
(:class:`tcsim.launch.Pointer`, :class:`tcsim.launch.Struct`).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.descriptors import InstrDescriptor
from tcsim.isa.parser import parse_file
from tcsim.isa.swizzle import SWIZZLE_NAMES
from tcsim.isa.tensormap import PTX_ELEMTYPES, TensorMap
from tcsim.agents.tensor_pipe import TensorPipeParams
from tcsim.agents.tma import TmaParams
from tcsim.cli import main as tcsim_main
from tcsim.isa.ptxas import PTXAS, assemble
from tcsim.launch import Launch, Pointer, Prepared, Struct, run_launch

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "triton"
KERNELS = ("tc_matmul_bf16", "cp_async_matmul_tf32", "tma_matmul_bf16", "ws_matmul_f16",
           "tma_scale_transpose_add", "tma_device_desc_rowscale")
#: K of one tcgen05.mma per kind (PTX ISA: 32 bytes of K per MMA)
K_MMA = {"f16": 16, "tf32": 8}


@lru_cache(maxsize=None)
def meta(name: str) -> dict:
    return json.loads((FIX / f"{name}.sm_100a.json").read_text())


def ptx_path(name: str) -> Path:
    return FIX / f"{name}.sm_100a.ptx"


@lru_cache(maxsize=None)
def module(name: str):
    return parse_file(ptx_path(name))


# ------------------------------------------------------------------------------------------ the launcher
class Desc:
    """A host-side ``triton.tools.tensor_descriptor.TensorDescriptor`` over a whole numpy array."""

    def __init__(self, array: np.ndarray):
        self.array = array


def tensor_map(arr: np.ndarray, md: dict) -> TensorMap:
    """The CUtensorMap Triton's launcher encodes for ``arr`` with the kernel's ``tensordesc_meta`` entry."""
    assert not md["fp4_padded"] and not md["is_im2col"]
    dtype = PTX_ELEMTYPES[md["elem_type"]]
    assert md["elem_size"] == arr.itemsize
    return TensorMap.tiled(arr, box=tuple(md["block_size"]), swizzle=SWIZZLE_NAMES[md["swizzle"]],
                           l2_promotion="128B", oob_fill="zero", dtype=dtype)


def triton_args(name: str, values: dict, grid: tuple) -> list:
    """Kernel arguments in ``.entry`` order for signature values ``values`` (arrays, scalars, :class:`Desc`)."""
    m = meta(name)
    tds = iter(m["tensordesc_meta"])
    args = []
    for arg, ty in m["signature"].items():
        if ty == "constexpr":
            continue
        v = values[arg]
        if ty.startswith("tensordesc"):
            a = v.array
            args += [tensor_map(a, next(tds)), *a.shape, *(s // a.itemsize for s in a.strides)]
        else:
            args.append(v)
    nprog = int(np.prod(grid)) * m["num_ctas"]
    for size in (m["global_scratch_size"], m["profile_scratch_size"]):
        args.append(np.zeros(nprog * size, np.uint8) if size else 0)
    assert len(args) == len(m["params"])
    return args


def make_launch(name: str, values: dict, grid: tuple) -> Launch:
    m = meta(name)
    return Launch(ptx=module(name), kernel=name, grid=grid, block=(32 * m["num_warps"], 1, 1),
                  cluster=tuple(m["cluster_dims"]), dynamic_smem=m["shared"], args=triton_args(name, values, grid),
                  name=name)


def run(launch: Launch, seed=None, tma=None, pipe=None):
    return run_launch(launch, seed=seed, tma_params=tma, tensor_pipe_params=pipe)


def tma_written(launch: Launch, index: int, like: np.ndarray) -> np.ndarray:
    """What TMA stores wrote into the tensor of the map at argument ``index``."""
    return launch.args[index].sim_allocation.data.view(like.dtype).reshape(like.shape).copy()


# ------------------------------------------------------------------------------------------ references
def chained_mma(a: np.ndarray, b: np.ndarray, fmt: str, block_k: int = 64) -> np.ndarray:
    """D (f32) = A[M,K] @ B[K,N] as the kernels issue it: tcgen05.mma steps of K_MMA[kind] in K order from +0,
    K zero-padded to a multiple of the kernel's BLOCK_K."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    kind = "tf32" if fmt == "tf32" else "f16"
    step = K_MMA[kind]
    m, k = a.shape
    kp = -(-k // block_k) * block_k
    ap = np.zeros((m, kp), a.dtype)
    ap[:, :k] = a
    bp = np.zeros((kp, b.shape[1]), b.dtype)
    bp[:k] = b
    bits = np.uint32 if fmt == "tf32" else np.uint16
    a_bits, b_bits = ap.view(bits), bp.view(bits)
    params = tc_params("sm_100a", "tcgen05", fmt, kind=kind)
    acc = np.zeros((m, b.shape[1]), np.uint32)
    for k0 in range(0, kp, step):
        acc = np.asarray(mma_float(a_bits[:, k0:k0 + step], b_bits[k0:k0 + step], acc, fmt, fmt, "f32", params),
                         dtype=np.uint32)
    return acc.view(np.float32)


def assert_matmul(got: np.ndarray, a: np.ndarray, b: np.ndarray, fmt: str, out_dtype=np.float32, block_k=64):
    want = chained_mma(a, b, fmt, block_k).astype(out_dtype)
    diff = got.view(np.uint16 if out_dtype == np.float16 else np.uint32) != \
        want.view(np.uint16 if out_dtype == np.float16 else np.uint32)
    if diff.any():
        r, c = np.argwhere(diff)[0]
        raise AssertionError(f"{int(diff.sum())} of {diff.size} elements differ from the chained tcgen05 oracle "
                             f"(first D[{r}][{c}]: got {got[r, c]!r}, want {want[r, c]!r})")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = 2.0 ** (-9 if fmt == "tf32" else -14) * (np.abs(a64) @ np.abs(b64))   # tf32 keeps 10 mantissa bits
    if out_dtype == np.float16:
        bound += np.abs(a64 @ b64) * 2.0 ** -11
    assert (np.abs(got.astype(np.float64) - a64 @ b64) <= bound + 1e-30).all(), "layout error"


def fma_f32(a, b, c) -> np.ndarray:
    """round_f32(a * b + c) exactly (``fma.rn.f32``).  The product of two f32 is exact in float64; the float64 sum
    rounds once, which can change the final f32 rounding only when the float64 result lies within one float64
    ulp of an f32 rounding boundary -- asserted not to happen for these inputs."""
    a, b, c = (np.asarray(x, np.float32).astype(np.float64) for x in (a, b, c))
    r = a * b + c
    f = r.astype(np.float32)
    toward = np.where(r >= f.astype(np.float64), np.float32(np.inf), np.float32(-np.inf))
    mid = (f.astype(np.float64) + np.nextafter(f, toward).astype(np.float64)) / 2
    assert not (np.abs(r - mid) <= np.spacing(np.abs(r))).any(), "double rounding possible: pick other inputs"
    return f


# ------------------------------------------------------------------------------------------ fixture checks
@pytest.mark.parametrize("name", KERNELS)
def test_fixture_metadata_matches_ptx(name):
    m = meta(name)
    assert m["triton_version"] == "3.9.0" and m["target"] == "cuda:100" and m["kernel"] == name
    k = module(name).kernel(name)
    assert [p.name for p in k.params] == [p["name"] for p in m["params"]]
    assert k.directives["reqntid"][0] == 32 * m["num_warps"]
    assert m["num_ctas"] == 1 and tuple(m["cluster_dims"]) == (1, 1, 1)
    for p, info in zip(k.params, m["params"]):
        if info["source"].endswith("(128 bytes, cuTensorMapEncodeTiled)"):
            assert p.array == 128 and p.alignment == 64 and p.type == "b8"
    assert tcsim_main(["check", str(ptx_path(name))]) == 0


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("name", KERNELS)
def test_ptxas_accepts_fixture(name):
    rc, log = assemble(ptx_path(name).read_text(), "sm_100a")
    assert rc == 0, log


@pytest.mark.parametrize("name, fmt, n, b_major, per_block", [
    ("tc_matmul_bf16", "bf16", 128, "MN", 4), ("cp_async_matmul_tf32", "tf32", 64, "K", 4),
    ("tma_matmul_bf16", "bf16", 128, "MN", 4), ("ws_matmul_f16", "f16", 128, "K", 4)])
def test_mma_chain_structure(name, fmt, n, b_major, per_block):
    """What the reference relies on: every tcgen05.mma has the same M=128 f32-accumulator instruction descriptor
    (a constant), they come in groups of ``per_block`` per BLOCK_K (BLOCK_K / K_MMA), and within a group the A
    descriptors advance 2, 4, 6 in the start-address field (16-byte units: 32 bytes of K per MMA, in K order),
    found by following the definitions in program order."""
    from tcsim.isa import ir
    kind = "tf32" if fmt == "tf32" else "f16"
    body = module(name).kernel(name).body
    defs, offsets, idescs = {}, [], set()
    for ins in body:
        if ins.opcode == "tcgen05" and ins.mods[:1] == ("mma",):
            assert ins.full_opcode == f"tcgen05.mma.cta_group::1.kind::{kind}", ins.full_opcode
            idef = defs[ins.operands[3].name]
            assert idef.full_opcode == "mov.b32" and isinstance(idef.operands[1], ir.Imm)
            idescs.add(int(idef.operands[1].value))
            pair = defs[ins.operands[1].name]
            assert pair.full_opcode == "mov.b64" and isinstance(pair.operands[1], ir.Vector)
            lo = defs.get(pair.operands[1].elems[0].name)
            if lo is not None and lo.full_opcode == "add.s32" and isinstance(lo.operands[2], ir.Imm):
                offsets.append((lo.operands[1].name, int(lo.operands[2].value)))
            else:
                offsets.append((pair.operands[1].elems[0].name, 0))
        if ins.operands and isinstance(ins.operands[0], ir.Reg):
            defs[ins.operands[0].name] = ins
    assert offsets and len(offsets) % per_block == 0 and len(idescs) == 1
    d = InstrDescriptor.decode(idescs.pop())
    text = d.describe(kind)
    assert (d.m, d.n) == (128, n), text
    assert f"D f32, A {fmt}, B {fmt}" in text and "A K-major" in text and f"B {b_major}-major" in text, text
    for g in range(0, len(offsets), per_block):
        group = offsets[g:g + per_block]
        assert [o for _, o in group] == [0, 2, 4, 6] and len({b for b, _ in group}) == 1, group


# ------------------------------------------------------------------------------------------ the kernels
def _bf16(rng, shape):
    return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)


def test_tc_matmul_bf16_ragged_tiles():
    """Pointer loads with masks: M, N, K not multiples of the 128x128x64 tile; C has a padded row stride and
    the pad columns must stay untouched."""
    rng = np.random.default_rng(1)
    M, N, K = 200, 136, 160
    a, b = _bf16(rng, (M, K)), _bf16(rng, (K, N))
    ldc = N + 8
    c = np.full((M, ldc), np.float32(-777.0))
    grid = (2, 2, 1)
    launch = make_launch("tc_matmul_bf16", dict(a_ptr=a, b_ptr=b, c_ptr=c, M=M, N=N, K=K, stride_am=K,
                                                stride_bk=N, stride_cm=ldc), grid)
    res = run(launch)
    out = res.outputs[2]
    assert (out[:, N:] == np.float32(-777.0)).all()
    assert_matmul(out[:, :N], a, b, "bf16")


def test_cp_async_matmul_tf32():
    """cp.async pipeline (3 stages, 16-byte .cg and 4-byte .ca with src-size, commit/wait_group) feeding
    tcgen05.mma.kind::tf32; ragged M, N and K (K = 200 is not a multiple of BLOCK_K = 32)."""
    rng = np.random.default_rng(7)
    M, N, K = 200, 72, 208
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.float32(-777.0))
    events = []
    launch = make_launch("cp_async_matmul_tf32", dict(a_ptr=a, b_ptr=b, c_ptr=c, M=M, N=N, K=K, stride_am=K,
                                                      stride_bk=N, stride_cm=N), (2, 2, 1))
    prep = Prepared(launch, observers=[events.append])
    prep.sim.run()
    res = prep.result()
    assert_matmul(res.outputs[2], a, b, "tf32", block_k=32)
    waits = [e.fields for e in events if e.kind == "sync" and e.fields.get("op") == "cp.async.wait_group"]
    assert waits and {w["n"] for w in waits} <= {0, 1, 2}


def test_tma_matmul_bf16_ragged_tiles():
    """Host tensor descriptors: TMA zero-fills the out-of-bounds parts of the A/B boxes and clips the C store."""
    rng = np.random.default_rng(2)
    M, N, K = 200, 136, 160
    a, b = _bf16(rng, (M, K)), _bf16(rng, (K, N))
    c = np.full((M, N), np.float32(-777.0))
    grid = (2, 2, 1)
    launch = make_launch("tma_matmul_bf16", dict(a_desc=Desc(a), b_desc=Desc(b), c_desc=Desc(c), K=K), grid)
    run(launch)
    assert_matmul(tma_written(launch, 10, c), a, b, "bf16")


def _schedule_case(name, rng):
    """(make a fresh launch, read its output, check it against the reference) for one matmul fixture."""
    if name == "tma_matmul_bf16":
        M, N, K = 128, 128, 192
        a, b = _bf16(rng, (M, K)), _bf16(rng, (K, N))

        def make():
            c = np.zeros((M, N), np.float32)
            return make_launch(name, dict(a_desc=Desc(a), b_desc=Desc(b), c_desc=Desc(c), K=K), (1, 1, 1))
        return make, lambda launch, res: tma_written(launch, 10, launch.args[10].array), \
            lambda out: assert_matmul(out, a, b, "bf16")
    if name == "ws_matmul_f16":
        M, N, K = 128, 128, 256
        a = rng.standard_normal((M, K)).astype(np.float16)
        bt = rng.standard_normal((N, K)).astype(np.float16)

        def make():
            c = np.zeros((M, N), np.float16)
            return make_launch(name, dict(a_desc=Desc(a), bt_desc=Desc(bt), c_desc=Desc(c), K=K), (1, 1, 1))
        return make, lambda launch, res: tma_written(launch, 10, launch.args[10].array), \
            lambda out: assert_matmul(out, a, bt.T, "f16", out_dtype=np.float16)
    M, N, K = 128, 64, 96
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)

    def make():
        c = np.zeros((M, N), np.float32)
        return make_launch(name, dict(a_ptr=a, b_ptr=b, c_ptr=c, M=M, N=N, K=K, stride_am=K, stride_bk=N,
                                      stride_cm=N), (1, 1, 1))
    return make, lambda launch, res: res.outputs[2], lambda out: assert_matmul(out, a, b, "tf32", block_k=32)


@pytest.mark.parametrize("name", ["tma_matmul_bf16", "ws_matmul_f16", "cp_async_matmul_tf32"])
def test_schedule_independent(name):
    """Same bytes under other scheduler seeds and TMA / tensor-pipe / cp.async timings (DESIGN.md principle 5)."""
    from tcsim.agents.async_copy import AsyncCopyParams
    make, output, check = _schedule_case(name, np.random.default_rng(3))
    outs = []
    for seed, tma, pipe, acp in ((None, None, None, None),
                                 (1, TmaParams(latency=3000), None, AsyncCopyParams(latency=1000, issue_cycles=7)),
                                 (2, TmaParams(latency=1, bytes_per_cycle=16), TensorPipeParams(mma_latency=2000),
                                  AsyncCopyParams(latency=1))):
        launch = make()
        prep = Prepared(launch, seed=seed, tma_params=tma, tensor_pipe_params=pipe, async_copy_params=acp)
        prep.sim.run()
        outs.append(output(launch, prep.result()))
    check(outs[0])
    assert all(np.array_equal(o.view(np.uint8), outs[0].view(np.uint8)) for o in outs[1:])


@pytest.mark.parametrize("old, new, why", [
    ("mov.b32 \t%r35, 136381584;", "mov.b32 \t%r35, 136316048;", "B read K-major instead of MN-major"),
    ("add.s32 \t%r45, %r38, 4;", "add.s32 \t%r45, %r38, 6;", "the third K step of A re-reads the fourth"),
])
def test_negative_controls(old, new, why):
    """The comparison is discriminating: a one-token mutation of the Triton PTX must be caught."""
    from tcsim.isa.parser import parse
    text = ptx_path("tma_matmul_bf16").read_text()
    assert text.count(old) == 1
    rng = np.random.default_rng(9)
    M, N, K = 128, 128, 64
    a, b = _bf16(rng, (M, K)), _bf16(rng, (K, N))
    c = np.zeros((M, N), np.float32)
    launch = make_launch("tma_matmul_bf16", dict(a_desc=Desc(a), b_desc=Desc(b), c_desc=Desc(c), K=K), (1, 1, 1))
    launch.ptx = parse(text.replace(old, new), "mutated.ptx")
    run(launch)
    with pytest.raises(AssertionError, match="differ from the chained tcgen05 oracle"):
        assert_matmul(tma_written(launch, 10, c), a, b, "bf16")


def test_ws_matmul_f16_warp_specialized():
    """tl.range(warp_specialize=True): 8 warps in three partitions dispatched with brx.idx, a 3-stage ring
    wrapped twice (K = 384 is six K blocks), two output tiles."""
    rng = np.random.default_rng(4)
    M, N, K = 256, 128, 384
    a = rng.standard_normal((M, K)).astype(np.float16)
    bt = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    events = []
    launch = make_launch("ws_matmul_f16", dict(a_desc=Desc(a), bt_desc=Desc(bt), c_desc=Desc(c), K=K), (2, 1, 1))
    prep = Prepared(launch, observers=[events.append])
    prep.sim.run()
    assert_matmul(tma_written(launch, 10, c), a, bt.T, "f16", out_dtype=np.float16)
    setmax = {(e.fields["action"], e.fields["count"]) for e in events
              if e.kind == "sync" and e.fields.get("op") == "setmaxnreg"}
    assert ("dec", 24) in setmax and ("inc", 256) in setmax


def test_tma_scale_transpose_add():
    """out = alpha * x + y^T through three host descriptors (f32, 64x64 tiles, 128B swizzle, boxes of 64x32),
    ragged M and N (OOB zero fill on load, clipped store)."""
    rng = np.random.default_rng(5)
    M, N = 100, 72
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = rng.standard_normal((N, M)).astype(np.float32)
    alpha = np.float32(1.3)
    out = np.full((M, N), np.float32(-777.0))
    launch = make_launch("tma_scale_transpose_add", dict(x_desc=Desc(x), y_desc=Desc(y), out_desc=Desc(out),
                                                         alpha=float(alpha)), (2, 2, 1))
    run(launch)
    got = tma_written(launch, 10, out)
    assert np.array_equal(got.view(np.uint32), fma_f32(x, alpha, y.T).view(np.uint32))


def test_tma_device_desc_rowscale():
    """tl.make_tensor_descriptor: each program builds two tensor maps in SMEM with tensormap.replace, publishes
    them to its global scratch slot and TMA-loads / stores through them."""
    rng = np.random.default_rng(6)
    M, N = 100, 72
    x = rng.standard_normal((M, N)).astype(np.float32)
    s = rng.standard_normal(M).astype(np.float32)
    out = np.full((M, N), np.float32(-777.0))
    grid = (2, 2, 1)
    launch = make_launch("tma_device_desc_rowscale", dict(in_ptr=x, scale_ptr=s, out_ptr=out, M=M, N=N), grid)
    res = run(launch)
    assert np.array_equal(res.outputs[2].view(np.uint32), fma_f32(x, s[:, None], -x).view(np.uint32))
    # the scratch buffer holds, per program, the two maps the kernel built (in_desc, out_desc)
    scratch = res.outputs[5]
    assert scratch.size == 4 * meta("tma_device_desc_rowscale")["global_scratch_size"]
    maps = [TensorMap.decode(scratch[i * 128:(i + 1) * 128].tobytes()) for i in range(8)]
    for tm in maps:
        assert (tm.dtype, tm.rank, tm.global_dims, tm.global_strides) == ("FLOAT32", 2, (N, M), (4 * N,))
        assert (tm.box_dims, tm.element_strides, tm.swizzle) == ((32, 64), (1, 1), "128B")
    assert len({tm.global_address for tm in maps}) == 2


# ------------------------------------------------------------------------------------------ CuTe DSL
CUTE = FIX / "cute_dsl"


@lru_cache(maxsize=None)
def cute_meta() -> dict:
    return json.loads((CUTE / "cute_gemm_bf16.sm_100a.json").read_text())


def cute_launch(a, b, c, dynamic_smem=None, mma_state=bytes(32)) -> Launch:
    """The launch CuTe's host code makes: TiledMma runtime fields, the two tensor maps, C's address."""
    m = cute_meta()
    tm = m["tensor_maps"]
    maps = [TensorMap.tiled(x, box=tuple(tm["box_numpy_order"]), swizzle=tm["swizzle"], dtype=tm["dtype"])
            for x in (a, b)]
    return Launch(ptx=parse_file(CUTE / "cute_gemm_bf16.sm_100a.ptx"), kernel=m["kernel"], grid=tuple(m["grid"]),
                  block=tuple(m["block"]), dynamic_smem=m["dynamic_smem"] if dynamic_smem is None else dynamic_smem,
                  args=[mma_state, maps[0], maps[1], Pointer(c)], name="cute_gemm_bf16")


def test_cute_fixture_checks_and_assembles():
    m = cute_meta()
    path = CUTE / "cute_gemm_bf16.sm_100a.ptx"
    assert tcsim_main(["check", str(path)]) == 0
    k = parse_file(path).kernel(m["kernel"])
    assert [(p.size_bytes, p.alignment) for p in k.params] == [(32, 16), (128, 64), (128, 64), (8, 8)]
    assert m["nvidia_cutlass_dsl_version"] == "4.8.1"
    mmas = [i for i in k.body if i.opcode == "tcgen05" and i.mods[:1] == ("mma",)]
    # CuTe's form: .collector::a::discard and the 4 x b32 disable-output-lane operand; 4 per K block, 3 blocks
    assert len(mmas) == 12 and all(i.full_opcode == "tcgen05.mma.cta_group::1.kind::f16.collector::a::discard"
                                   and len(i.operands) == 6 for i in mmas)
    r = assemble(path.read_text(), "sm_100a")
    assert r is None or r[0] == 0, r[1]


def test_cute_gemm_bf16():
    m = cute_meta()["shapes"]
    rng = np.random.default_rng(11)
    a, b = _bf16(rng, (m["M"], m["K"])), _bf16(rng, (m["N"], m["K"]))
    c = np.full((m["M"], m["N"]), np.float32(-777.0))
    res = run(cute_launch(a, b, c))
    assert_matmul(res.outputs[3], a, b.T, "bf16")


def test_cute_gemm_dynamic_smem_is_exact():
    """The recorded dynamic SMEM size is what the kernel touches: one byte less and the last TMA box faults."""
    from tcsim.isa.errors import MemoryFault
    m = cute_meta()
    a = np.zeros((m["shapes"]["M"], m["shapes"]["K"]), ml_dtypes.bfloat16)
    b = np.zeros((m["shapes"]["N"], m["shapes"]["K"]), ml_dtypes.bfloat16)
    c = np.zeros((m["shapes"]["M"], m["shapes"]["N"]), np.float32)
    with pytest.raises(MemoryFault, match="past the end of shared memory") as ei:
        run(cute_launch(a, b, c, dynamic_smem=m["dynamic_smem"] - 1))
    assert ei.value.loc is not None and "cp.async.bulk.tensor" in ei.value.loc.text


def test_pointer_and_struct_parameters():
    """Pointer / Struct arguments (sim/launch.py): a pointer in a .b8[8] parameter, and a CuTe-style dynamic
    tensor {ptr, i32 shape, i64 stride} packed with C alignment (the i64 at offset 16)."""
    from tcsim.isa.errors import LaunchError
    ptx = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .align 8 .b8 p[8], .param .align 8 .b8 t[24])
{
  .reg .b32 %r<4>; .reg .b64 %rd<8>;
  ld.param.b64 %rd1, [p];
  ld.param.b64 %rd2, [t];
  ld.param.b32 %r1, [t+8];
  ld.param.b64 %rd3, [t+16];
  ld.global.u32 %r2, [%rd2];
  add.u32 %r2, %r2, %r1;
  cvt.u32.u64 %r3, %rd3;
  add.u32 %r2, %r2, %r3;
  st.global.u32 [%rd1], %r2;
  ret;
}
"""
    out = np.zeros(1, np.uint32)
    src = np.array([40], np.uint32)
    res = run_launch(Launch(ptx=ptx, block=(1, 1, 1),
                            args=[Pointer(out), Struct(Pointer(src), np.int32(2), np.int64(700))]))
    assert res.outputs[0][0] == 742 and res.outputs[1][0][0] == 40
    with pytest.raises(LaunchError, match="packs 32 bytes; parameter t holds 24"):
        run_launch(Launch(ptx=ptx, block=(1, 1, 1),
                          args=[Pointer(out), Struct(Pointer(src), np.int64(2), np.int64(7), np.int64(7))]))
    with pytest.raises(LaunchError, match="is not a Pointer, a numpy scalar or bytes"):
        Struct(Pointer(src), 5)
