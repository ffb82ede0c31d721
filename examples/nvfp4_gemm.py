"""``nvfp4_gemm``: the block-scaled nvfp4 warp-specialized GEMM of the Blackwell GEMM seed (004) on the
5th-generation tensor core -- one CTA of 6 warps per 128 x 256 output tile: warp 0 TMA producer, warp 1 MMA
issuer, warps 2-5 epilogue, an N-stage (2..4) SMEM pipeline with a full and an empty mbarrier per stage.

D[M,N] (f16) = (A * SFA) @ (B * SFB) with A, B e2m1 (fp4, two per byte, element 2i in the low nibble) and one
ue4m3 scale factor per 16 K elements of every row of A and column of B; K = 64 * k_iters, M = 128 * m_tiles,
N = 256 * n_tiles (grid = (n_tiles, m_tiles)).  Per K step of 64 the producer TMA-loads A (3-d map, the seed's
"columns of core matrices", no swizzle) and B^T, and bulk-copies the 512-byte "32x4x4" scale-factor chunks; the
MMA warp copies the chunks into tensor memory with ``tcgen05.cp.cta_group::1.32x128b.warpx4`` and issues one
``tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16`` (M 128, N 256, K 64) into an f32 accumulator; the
epilogue reads it with ``tcgen05.ld.16x256b.x8``, converts to f16 (``cvt.rn.f16x2.f32``) and stores.  See
``nvfp4_gemm.ptx`` for every step.  Launch arguments: A (M x K/2 bytes), B^T (N x K/2 bytes), the SFA and SFB
chunk arrays, D, the tensor maps of A and B^T, k_iters and stages.

Checked two ways, both computed from the input arrays (never from simulator state):

1. Bit for bit against the tensor-core numerics oracle: :func:`tcsim.numerics.tensor_core.mma_block_scaled` with
   ``tc_params('sm_100a', 'tcgen05', 'e2m1', kind='mxf4nvf4')``, scale block 16, ue4m3, chained over the K steps
   exactly as the kernel issues them (D = +0, then each K=64 MMA takes the previous f32 D as its accumulator),
   then rounded to f16 (round to nearest even, as ``cvt.rn.f16x2.f32``).
2. Against an independent float64 product: this module decodes the fp4 codes and ue4m3 scale factors itself
   (:func:`e2m1_to_float`, :func:`ue4m3_to_float`; no tcsim code) and computes (A*SFA) @ (B*SFB)^T in float64.
   Tolerance: |D - P| <= 2^-11 |P| + (1 + 2^-11) k_iters 2^-22 S + 2^-25, with P the float64 product and
   S = |A*SFA| @ |B*SFB|^T: each K=64 MMA truncates its aligned terms (F = 35) and rounds its f32 result toward
   zero (< 2^-22 S per step, chained k_iters times), and the f16 conversion adds half an f16 ulp.  With
   ``scales='pow2'`` (scale factors 0.5, 1, 2) every product is a multiple of 2^-4 and every partial sum fits in
   24 bits, so the f32 accumulator is exact and D must *equal* the float64 product rounded to f16.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.descriptors import InstrDescriptorBlockScaled
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("nvfp4 warp-specialized GEMM (sm_100a): 6 warps (TMA / MMA / 4 epilogue), N-stage mbarrier "
               "pipeline, e2m1 A/B + ue4m3 32x4x4 scale factors via tcgen05.cp.32x128b.warpx4, "
               "tcgen05.mma.kind::mxf4nvf4.block_scale.block16 128x256x64, f16 out via tcgen05.ld.16x256b")
PTX = ptx_path("nvfp4_gemm.ptx")
KERNEL = "nvfp4_gemm"
TILE_M, TILE_N = 128, 256
K_STEP = 64                        # K per pipeline stage = K per tcgen05.mma kind::mxf4nvf4
SF_VEC = 16                        # K elements per scale factor (.block16 / scale_vec::4X)
STAGE_BYTES = 16384                # SMEM per pipeline stage (13824 used)
TX_BYTES = 128 * 32 + 256 * 32 + 512 + 1024
MIN_STAGES, MAX_STAGES = 2, 4
#: the instruction descriptor the PTX holds as an immediate (Table 43: M 128, N 256, E2M1 x E2M1, UE4M3)
IDESC = 0x08400480
#: ue4m3 codes of the 'pow2' scale factors 0.5, 1, 2 (e = 6, 7, 8; bias 7)
POW2_SCALES = (0x30, 0x38, 0x40)

#: named variants (tests run them): k (K), stages, m_tiles, n_tiles, scales
VARIANTS = {
    "k256_s2": dict(k=256, stages=2),
    "k256_s4": dict(k=256, stages=4),
    "k448_s3_pow2": dict(k=448, stages=3, scales="pow2"),
    "k128_s2_2x1": dict(k=128, stages=2, m_tiles=2, n_tiles=1),
}


def instr_descriptor() -> InstrDescriptorBlockScaled:
    return InstrDescriptorBlockScaled.for_kind("mxf4nvf4", TILE_M, TILE_N, "e2m1", "e2m1", "ue4m3")


# ---------------------------------------------------------------------------------------------- formats (numpy)
#: e2m1 magnitudes of codes 0..7 (bit 3 is the sign; no Inf / NaN)
_E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def e2m1_to_float(codes: np.ndarray) -> np.ndarray:
    c = np.asarray(codes).astype(np.int64)
    return np.where(c & 8, -1.0, 1.0) * _E2M1[c & 7]


def ue4m3_to_float(codes: np.ndarray) -> np.ndarray:
    """Unsigned e4m3 scale factors: bit 7 ignored, 4 exponent bits (bias 7), 3 mantissa bits, 0x7F = NaN."""
    c = np.asarray(codes).astype(np.int64) & 0x7F
    e, m = c >> 3, c & 7
    v = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7))
    return np.where(c == 0x7F, np.nan, v)


def pack_fp4(codes: np.ndarray) -> np.ndarray:
    """(R, K) e2m1 codes -> (R, K/2) bytes, element 2i in the low nibble."""
    c = np.asarray(codes, dtype=np.uint8)
    return (c[:, 0::2] | (c[:, 1::2] << 4)).astype(np.uint8)


def unpack_fp4(packed: np.ndarray) -> np.ndarray:
    p = np.asarray(packed, dtype=np.uint8)
    out = np.empty((p.shape[0], 2 * p.shape[1]), np.uint8)
    out[:, 0::2] = p & 0xF
    out[:, 1::2] = p >> 4
    return out


def sf_to_chunks(sf: np.ndarray) -> np.ndarray:
    """(R, K/16) scale-factor codes -> (R/128, K/64, 512) bytes: 512-byte 32x4x4 chunks (CUTLASS SfKMajorAtom),
    row r, factor s of chunk (b, kb) at byte (r % 32) * 16 + (r / 32) * 4 + s."""
    R, nsf = sf.shape
    t = np.asarray(sf, np.uint8).reshape(R // 128, 4, 32, nsf // 4, 4)        # (b, r/32, r%32, kb, s)
    return np.ascontiguousarray(t.transpose(0, 3, 2, 1, 4)).reshape(R // 128, nsf // 4, 512)


def chunks_to_sf(chunks: np.ndarray) -> np.ndarray:
    nb, nkb, _ = chunks.shape
    t = np.asarray(chunks).reshape(nb, nkb, 32, 4, 4).transpose(0, 3, 2, 1, 4)  # (b, r/32, r%32, kb, s)
    return np.ascontiguousarray(t).reshape(nb * 128, nkb * 4)


def sf_to_linear_chunks(sf: np.ndarray) -> np.ndarray:
    """A *wrong* arrangement for negative controls: each 512-byte chunk row-major (row r, factor s at 4 r + s)."""
    R, nsf = sf.shape
    t = np.asarray(sf, np.uint8).reshape(R // 128, 128, nsf // 4, 4).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(t).reshape(R // 128, nsf // 4, 512)


def fp4_tensor_map(packed: np.ndarray, box_rows: int) -> TensorMap:
    """The seed's 3-d map over a (R, K/2)-byte fp4 matrix: dims {16 B, R rows, K/32 chunks}, strides {K/2, 16}
    bytes, box {16, box_rows, 2} -- one K step lands as two 16-byte-wide columns of core matrices."""
    rows, kb = packed.shape
    return TensorMap(dtype="UINT8", rank=3, global_address=0, global_dims=(16, rows, kb // 16),
                     global_strides=(kb, 16), box_dims=(16, box_rows, K_STEP // 32), element_strides=(1, 1, 1),
                     array=packed).validate(check_address=False)


# ---------------------------------------------------------------------------------------------- the launch
def make_launch(seed: int = 0, k: int = 256, stages: int = 2, m_tiles: int = 1, n_tiles: int = 1,
                scales: str = "random", sf_layout: str = "32x4x4", variant: str | None = None) -> Launch:
    """A launch of ``nvfp4_gemm``; ``variant`` (a key of :data:`VARIANTS`) overrides the other shape arguments.
    ``scales``: 'random' (ue4m3 codes 0x28..0x47, 0.25 .. 3.75) or 'pow2' (0.5, 1, 2).  ``sf_layout`` other than
    '32x4x4' ('linear') lays the scale-factor chunks out wrongly -- for negative controls only."""
    if variant is not None:
        v = VARIANTS[variant]
        k, stages = v["k"], v["stages"]
        m_tiles, n_tiles, scales = v.get("m_tiles", 1), v.get("n_tiles", 1), v.get("scales", "random")
    if k < K_STEP or k % K_STEP:
        raise ValueError(f"K must be a positive multiple of {K_STEP}, got {k}")
    if not MIN_STAGES <= stages <= MAX_STAGES:
        raise ValueError(f"stages must be {MIN_STAGES}..{MAX_STAGES}, got {stages}")
    if m_tiles < 1 or n_tiles < 1:
        raise ValueError("m_tiles and n_tiles must be >= 1")
    if scales not in ("random", "pow2"):
        raise ValueError(f"scales must be 'random' or 'pow2', got {scales!r}")
    if sf_layout not in ("32x4x4", "linear"):
        raise ValueError(f"sf_layout must be '32x4x4' or 'linear', got {sf_layout!r}")
    m, n = TILE_M * m_tiles, TILE_N * n_tiles
    rng = np.random.default_rng(seed)
    a_codes = rng.integers(0, 16, (m, k), dtype=np.uint8)
    b_codes = rng.integers(0, 16, (n, k), dtype=np.uint8)            # B^T: row j = column j of B
    if scales == "pow2":
        sfa = rng.choice(np.array(POW2_SCALES, np.uint8), (m, k // SF_VEC))
        sfb = rng.choice(np.array(POW2_SCALES, np.uint8), (n, k // SF_VEC))
    else:
        sfa = rng.integers(0x28, 0x48, (m, k // SF_VEC), dtype=np.uint8)
        sfb = rng.integers(0x28, 0x48, (n, k // SF_VEC), dtype=np.uint8)
    chunks = sf_to_chunks if sf_layout == "32x4x4" else sf_to_linear_chunks
    a = pack_fp4(a_codes)
    bt = pack_fp4(b_codes)
    d = np.zeros((m, n), dtype=np.float16)
    name = f"nvfp4_gemm_m{m}n{n}k{k}_s{stages}{'_pow2' if scales == 'pow2' else ''}"
    return Launch(ptx=PTX, kernel=KERNEL, grid=(n_tiles, m_tiles, 1), block=(192, 1, 1),
                  dynamic_smem=128 + stages * STAGE_BYTES,
                  args=[a, bt, chunks(sfa), chunks(sfb), d, fp4_tensor_map(a, TILE_M), fp4_tensor_map(bt, TILE_N), k // K_STEP,
                        stages], name=name)


def operands(launch: Launch):
    """(A codes (M,K), B^T codes (N,K), SFA codes (M,K/16), SFB codes (N,K/16)) decoded from the launch's input
    arrays, assuming the 32x4x4 chunk layout."""
    a, bt, sfa_c, sfb_c = launch.args[:4]
    return unpack_fp4(a), unpack_fp4(bt), chunks_to_sf(sfa_c), chunks_to_sf(sfb_c)


def reference_f32(launch: Launch) -> np.ndarray:
    """Bit-exact f32 accumulator: the oracle chained over K in 64-wide block-scaled MMAs from D = +0, as issued."""
    from tcsim.numerics.tensor_core import mma_block_scaled, tc_params

    a, bt, sfa, sfb = operands(launch)
    params = tc_params("sm_100a", "tcgen05", "e2m1", kind="mxf4nvf4")
    m, k = a.shape
    acc = np.zeros((m, bt.shape[0]), dtype=np.uint32)
    for k0 in range(0, k, K_STEP):
        s0 = k0 // SF_VEC
        acc = np.asarray(mma_block_scaled(a[:, k0:k0 + K_STEP], np.ascontiguousarray(bt[:, k0:k0 + K_STEP].T), acc,
                                          sfa[:, s0:s0 + K_STEP // SF_VEC],
                                          np.ascontiguousarray(sfb[:, s0:s0 + K_STEP // SF_VEC].T),
                                          "e2m1", "e2m1", "ue4m3", SF_VEC, params), dtype=np.uint32)
    return acc.view(np.float32)


def reference(launch: Launch) -> np.ndarray:
    """Bit-exact expected D (f16): :func:`reference_f32` rounded to nearest even."""
    return reference_f32(launch).astype(np.float16)


def scaled_operands(launch: Launch):
    """(A*SFA (M,K), B*SFB as B^T (N,K)) in float64, decoded with this module's own numpy decoders."""
    a, bt, sfa, sfb = operands(launch)
    av = e2m1_to_float(a) * np.repeat(ue4m3_to_float(sfa), SF_VEC, axis=1)
    bv = e2m1_to_float(bt) * np.repeat(ue4m3_to_float(sfb), SF_VEC, axis=1)
    return av, bv


def float64_product(launch: Launch) -> np.ndarray:
    av, bv = scaled_operands(launch)
    return av @ bv.T


def tolerance(launch: Launch) -> np.ndarray:
    """The per-element bound on |D - float64 product| (module docstring)."""
    av, bv = scaled_operands(launch)
    exact = av @ bv.T
    s = np.abs(av) @ np.abs(bv).T
    k_iters = av.shape[1] // K_STEP
    return 2.0 ** -11 * np.abs(exact) + (1 + 2.0 ** -11) * k_iters * 2.0 ** -22 * s + 2.0 ** -25


def compare(got: np.ndarray, launch: Launch, what: str):
    """(ok, message): bit-exact equality with the oracle, then the float64 check."""
    want = reference(launch)
    if got.shape != want.shape or got.dtype != np.float16:
        return False, f"{what}: output {got.dtype}{got.shape}, expected float16{want.shape}"
    diff = got.view(np.uint16) != want.view(np.uint16)
    if diff.any():
        r, c = np.argwhere(diff)[0]
        return False, (f"{what}: {int(diff.sum())} of {got.size} elements differ from the bit-exact tensor-core model "
                       f"(first at D[{r}][{c}]: got {got[r, c]!r}, want {want[r, c]!r})")
    exact = float64_product(launch)
    if not np.isfinite(got).all():
        return False, f"{what}: D has non-finite values (the inputs keep |D| far below the f16 range)"
    err = np.abs(got.astype(np.float64) - exact)
    a, bt, sfa, sfb = operands(launch)
    pow2 = all(np.isin(x, POW2_SCALES).all() for x in (sfa, sfb))
    if pow2:
        rounded = exact.astype(np.float16)
        bad = got.view(np.uint16) != rounded.view(np.uint16)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            return False, (f"{what}: power-of-two scales (exact f32 accumulation) but D[{r}][{c}] = {got[r, c]!r} "
                           f"!= float64 {exact[r, c]!r} rounded to f16 ({rounded[r, c]!r})")
        return True, (f"{what}: D equals the bit-exact model and, exactly, the float64 product rounded to f16 "
                      f"(power-of-two scale factors)")
    bound = tolerance(launch)
    if (err > bound).any():
        r, c = np.unravel_index(int((err / bound).argmax()), err.shape)
        return False, (f"{what}: D[{r}][{c}] = {got[r, c]!r} is {err[r, c]:.3e} from the float64 product "
                       f"{exact[r, c]!r} (bound {bound[r, c]:.3e}): a layout error")
    rel = float((err / np.maximum(np.abs(exact), 1e-30)).max())
    return True, (f"{what}: D equals the bit-exact model; max |D - float64| = {err.max():.2e} (max relative "
                  f"{rel:.1e}; bound 2^-11 |P| + k_iters 2^-22 |A|@|B|)")


def check(result, launch):
    a, bt, _, _ = operands(launch)
    m, k = a.shape
    n = bt.shape[0]
    stages = launch.args[8]
    return compare(result.outputs[4], launch,
                   f"D[{m},{n}] f16 = nvfp4 A @ nvfp4 B (K = {k}: {k // K_STEP} chained K=64 mxf4nvf4 MMAs, "
                   f"{stages}-stage pipeline)")


def demo_summary(result, launch) -> list[str]:
    from tcsim.isa.descriptors import SmemDescriptor

    got = result.outputs[4]
    ref = float64_product(launch)
    m, n = got.shape
    lines = [f"  idesc 0x{IDESC:08x} = {instr_descriptor().describe('mxf4nvf4')}",
             f"  A operand: {SmemDescriptor(0, lbo=2048, sbo=128).describe()}; B: LBO 4096; SF (tcgen05.cp "
             f"32x128b.warpx4): {SmemDescriptor(0, lbo=0, sbo=128).describe()}",
             f"  {launch.args[7]} K steps through a {launch.args[8]}-stage pipeline; "
             f"{result.stats['cycles']} simulated cycles"]
    for r, c in ((0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)):
        lines.append(f"  D[{r:3d}][{c:3d}] = {float(got[r, c]):+.5e}   (float64: {ref[r, c]:+.7e})")
    return lines


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
