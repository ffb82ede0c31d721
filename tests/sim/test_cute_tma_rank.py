"""CuTe DSL inline tensor maps of rank 3 to 5 (issue 16): the DSL's host code writes a rank-r CUtensorMap itself;
``tcsim.cute.decode_inline_tensor_map`` reads it (strides of dims 2-4 in words 2-3, dims 2-4 in words 5-6, boxes in
bytes 55-59, read off nvidia-cutlass-dsl 4.8.1's encodings) and the TMA copy runs to the right answer.

The fixture ``tests/fixtures/frontend/cute_tma_rank3.sm_90a`` (a rank-3 TMA copy over a row-padded view, compiled
by the DSL and saved by ``CuteLaunch.save``) replays without the DSL; the rank-4 and rank-5 kernels compile with
the DSL (slow).  The H100 runs the rank-3 fixture in tests/hw/test_frontend_diff.py."""
# no `from __future__ import annotations`: the DSL reads the kernels' annotations as live types
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import tcsim.cute as tc

try:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import cpasync
    from cutlass.memory import SmemAllocator
except ImportError:          # the DSL is optional: the replay tests need none
    cutlass = None

FRONT = Path(__file__).resolve().parents[1] / "fixtures" / "frontend"


def _launch_file():
    spec = importlib.util.spec_from_file_location("launch_frontend_cute_tma3", FRONT / "launch_frontend_cute_tma3.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rank3_fixture_replays_and_copies_every_box():
    L = _launch_file()
    a, o = L.arrays(3)
    prep = tc.replay(FRONT / "cute_tma_rank3.sm_90a.ptx", a, o)
    m = prep.record["launches"][0]["params"][0]["tensor_map"]
    assert (m["rank"], m["dims"], m["strides"], m["box"]) == (3, [64, 16, 4], [68 * 4, 16 * 68 * 4], [32, 8, 2])
    prep.run()
    assert np.array_equal(o, a)


def _raw(rank, dims, strides16, box, dtype=7, extra=0):
    b = bytearray(128)
    b[0:8] = (0x7000).to_bytes(8, "little")
    w1 = ((strides16[0] if strides16 else 0) << 32) | extra | 0b0100 << 16 | dtype << 7 | (rank - 1) << 4 | 0b0010
    b[8:16] = w1.to_bytes(8, "little")
    s = (list(strides16[1:]) + [0, 0, 0])[:3]
    b[16:24] = (s[0] | s[1] << 32).to_bytes(8, "little")
    b[24:28] = s[2].to_bytes(4, "little")
    d = [x - 1 for x in dims] + [0] * (5 - len(dims))
    b[32:40] = (d[0] | d[1] << 32).to_bytes(8, "little")
    b[40:48] = (d[2] | d[3] << 32).to_bytes(8, "little")
    b[48:52] = d[4].to_bytes(4, "little")
    for i, x in enumerate(box):
        b[55 + i] = x - 1
    return bytes(b)


def test_decoder_reads_every_rank_and_refuses_fields_past_the_rank():
    cases = [(2, [128, 32], [32], [32, 16]), (3, [64, 16, 4], [17, 272], [32, 8, 2]),
             (4, [64, 16, 4, 3], [16, 256, 1024], [32, 8, 2, 2]),
             (5, [64, 16, 4, 5, 3], [16, 256, 1024, 5120], [32, 8, 2, 2, 2])]
    for rank, dims, s16, box in cases:
        d = tc.decode_inline_tensor_map(_raw(rank, dims, s16, box))
        assert (d["rank"], d["dims"], d["strides"], d["box"]) == (rank, dims, [x * 16 for x in s16], box)
    # seen in a rank-5 f32 map (bits 20-21 = 2): accepted, the L2 promotion is not modelled
    assert tc.decode_inline_tensor_map(_raw(*cases[3], extra=2 << 20))["rank"] == 5
    rank, dims, s16, box = cases[1]
    good = _raw(rank, dims, s16, box)
    for byte, bit in ((20, 0), (44, 0), (58, 0), (28, 0), (8, 5 + 1)):    # stride 3, dim 3, box 3, word 3, rank 5
        bad = bytearray(good)
        bad[byte] |= 1 << bit
        got = tc.decode_inline_tensor_map(bytes(bad))
        assert got is None or got["rank"] != 3, (byte, bit)
    assert tc.decode_inline_tensor_map(_raw(1, [64], [], [32])) is None          # rank 1: never seen


@pytest.mark.slow
@pytest.mark.parametrize("shape,tile", [((3, 4, 16, 64), (2, 2, 8, 32)), ((3, 5, 4, 16, 64), (2, 2, 2, 8, 32))])
def test_rank4_and_rank5_dsl_kernels(shape, tile):
    if cutlass is None:
        pytest.skip("nvidia-cutlass-dsl is not installed")
    R, tot = len(shape), int(np.prod(tile))
    st = tuple(int(np.prod(tile[i + 1:])) for i in range(R))

    @cute.kernel
    def kk(tma: cute.CopyAtom, mT: cute.Tensor, mO: cute.Tensor, s_layout: cute.Layout):
        tidx, _, _ = cute.arch.thread_idx()
        bx, by, _ = cute.arch.block_idx()
        smem = SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1)
        sA = smem.allocate_tensor(element_type=mO.element_type, layout=s_layout, byte_alignment=1024)
        coord = (0,) * (R - 2) + (bx, by)
        gT = cute.local_tile(mT, tile, coord)
        tAsA, tAgA = cpasync.tma_partition(tma, 0, cute.make_layout(1), cute.group_modes(sA, 0, R),
                                           cute.group_modes(gT, 0, R))
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(bar, tot * mO.element_type.width // 8)
            cute.copy(tma, tAgA, tAsA, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        gO = cute.local_tile(mO, tile, coord)
        for i in cutlass.range(tidx, tot, 128):
            gO[tuple((i // st[d]) % tile[d] for d in range(R))] = sA[tuple((i // st[d]) % tile[d] for d in range(R))]

    @cute.jit
    def copyn(mA: cute.Tensor, mO: cute.Tensor):
        s_layout = cute.make_layout(tile, stride=st)
        tma, tT = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA, s_layout, tile)
        kk(tma, tT, mO, s_layout).launch(grid=(mA.shape[R - 2] // tile[R - 2], mA.shape[R - 1] // tile[R - 1], 1),
                                         block=(128, 1, 1))

    rng = np.random.default_rng(R)
    wide = rng.standard_normal(shape[:-1] + (shape[-1] + 4,)).astype(np.float32)
    a = wide[..., :shape[-1]]
    o = np.zeros(shape, np.float32)
    prep = tc.prepare(copyn, tc.tensor(a, assumed_align=16), tc.tensor(o, assumed_align=16), arch="sm_90a")
    assert prep.launch.args[0].tensor_map.rank == R
    prep.run()
    sl = tuple(slice(0, t) for t in tile[:-2])
    assert np.array_equal(o[sl], a[sl]) and not o[tuple(slice(t, None) for t in tile[:1])].any()
