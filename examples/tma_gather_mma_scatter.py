"""``tma_gather_mma_scatter``: the fused gather-matmul-scatter of the Triton/Gluon tutorial "Native TMA Gather and
Scatter" (``matmul_fused_gather_scatter``), ``out[scatter_idx] = X[gather_idx] @ W``, as one hand-written,
warp-specialised Blackwell (sm_100a) kernel: ``.tile::gather4`` TMA loads of the gathered X rows into a
multi-buffered SMEM ring (full/empty mbarriers per slot), one thread issuing ``tcgen05.mma.kind::f16`` (bf16 in,
f32 accumulator in tensor memory) and committing each slot back to its 'empty' barrier, and four epilogue warps
that ``tcgen05.ld`` the accumulator, convert it (bf16, or keep f32), stage it in swizzled SMEM and
``.tile::scatter4`` the rows to ``out`` (see ``tma_gather_mma_scatter.ptx`` for every step).

Shapes: X is M_x x K bf16, W is K x N bf16 and is passed K-major as ``Wt = W^T`` (N x K, what the MMA's B operand
wants), ``gather_idx`` / ``scatter_idx`` are int32 vectors of ``128 * tiles`` entries, ``out`` is M_out x N (bf16
or f32).  K = 64 * k_iters; the ring has ``num_bufs`` (2..4) slots, so with k_iters > num_bufs the producer laps the
ring and waits on the 'empty' barriers.  One CTA per 128 gathered rows and BN (64 or 128) columns: grid
(tiles, N / BN).  Gather rows outside [0, M_x) -- negative or too large -- read as zeros; scatter rows >= M_out
are dropped (negative ones are illegal on the GPU: a located MemoryFault here); rows of ``out`` that no index
names keep their initial contents.  Scatter indices must be distinct (which of two scatters of one row wins is
unordered).

Checked from the input arrays only (never from simulator state):

1. Bit for bit against the tensor-core numerics oracle (:mod:`tcsim.numerics.tensor_core`, ``tc_params('sm_100a',
   'tcgen05', 'bf16', kind='f16')``) applied in numpy to the gathered rows (OOB rows zero) the way the kernel
   chains its MMAs -- D from +0, one K=16 MMA after the other -- then rounded to bf16 (round to nearest even, as
   ``cvt.rn.bf16x2.f32``) or kept f32, and scattered with numpy masking into the initial ``out``.
2. Against an independent float64 numpy product of the decoded inputs: rows of ``out`` nobody scatters to are
   unchanged, and every scattered element lies within the oracle's truncation bound 2^-14 (|A| @ |B|) (plus half
   a bf16 ulp for a bf16 output) of ``(X[gather_idx] @ W)`` -- a misplaced row, column, K slice or index would
   exceed it.

Run: ``python -m tcsim.examples.tma_gather_mma_scatter [--backend sim|gpu|both] [--seed N]`` (the default launch, two
CTAs of 128 rows, N = 128, K = 256 through a 3-slot ring, permuted gather and scatter indices, as in the
tutorial's test); ``tcsim run examples/tma_gather_mma_scatter.py`` runs the same.  The GPU back end needs an
sm_100a GPU (gather4/scatter4 and tcgen05 do not exist on an H100).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from tcsim.isa.descriptors import InstrDescriptor
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("fused gather-matmul-scatter (sm_100a): out[scatter_idx] = X[gather_idx] @ W -- gather4 TMA loads into "
               "a multi-buffered mbarrier ring, tcgen05.mma kind::f16 into TMEM, tcgen05.ld epilogue, scatter4 "
               "stores; bit-exact against the tensor-core numerics oracle")
PTX = ptx_path("tma_gather_mma_scatter.ptx")
KERNEL = "tma_gather_mma_scatter"
THREADS = 192                       # warps 0-3 epilogue, warp 4 producer, warp 5 TMEM + MMA issuer
M_TILE = 128                        # gathered rows per CTA (the MMA's M)
K_STAGE = 64                        # K per ring slot (one 128-byte swizzle row of bf16)
K_MMA = 16                          # K per tcgen05.mma kind::f16
SLOT_BYTES = 16384                  # one ring slot of X (128 x 128 B) or of W^T (<= 128 x 128 B)
MAX_BUFS = 4
BNS = (64, 128)
OUT_DTYPES = {"bf16": ml_dtypes.bfloat16, "f32": np.float32}
GATHER_PATTERNS = ("perm", "dup", "oob")
SCATTER_PATTERNS = ("perm", "oob")

#: named configurations (the tests run every one)
VARIANTS = {
    # the tutorial's test shape class: BLOCK_M = BLOCK_N = 128, BLOCK_K = 64, 3 buffers, permutations
    "n128_k4_ring3_perm": dict(n=128, bn=128, k_iters=4, num_bufs=3, gather="perm", scatter="perm"),
    # a 2-slot ring lapped by 3 stages; two N tiles of 64 (grid.y = 2); the gather repeats rows
    "n128_bn64_k3_ring2_dup": dict(n=128, bn=64, k_iters=3, num_bufs=2, gather="dup", scatter="perm"),
    # the tutorial's gather offsets (linspace(-M, 2M), shuffled: negative and past-the-end rows read zeros) and
    # scatter offsets past the end (dropped); N = 64, a 4-slot ring that is not lapped
    "n64_k4_ring4_oob": dict(n=64, bn=64, k_iters=4, num_bufs=4, gather="oob", scatter="oob"),
    # f32 output (4 scatter4 chunks of 32 columns per row), OOB both ways, 3 stages in a 2-slot ring
    "f32out_n128_k3_ring2_oob": dict(n=128, bn=128, k_iters=3, num_bufs=2, gather="oob", scatter="oob",
                                     out_dtype="f32"),
}


def instr_descriptor(bn: int) -> InstrDescriptor:
    """The kind::f16 instruction descriptor of every MMA: M 128, N ``bn``, A = B = bf16, D f32, both K-major."""
    return InstrDescriptor.for_kind("f16", M_TILE, bn, "bf16", "bf16", "f32")


def _values(rng, shape, values: str) -> np.ndarray:
    if values == "int":
        return rng.integers(-4, 5, shape).astype(np.float64)
    if values == "normal":
        return rng.standard_normal(shape)
    raise ValueError(f"values must be 'normal' or 'int', got {values!r}")


def gather_indices(pattern: str, rows: int, m_x: int, rng) -> np.ndarray:
    """``rows`` gather indices into X (``m_x`` rows): 'perm' distinct rows in random order, 'dup' rows drawn with
    replacement from a quarter of X (every row repeats), 'oob' the tutorial's ``linspace(-m_x, 2 m_x)`` shuffled
    (negative .. twice out of bounds)."""
    if pattern == "perm":
        if m_x < rows:
            raise ValueError(f"a permutation gather needs m_x >= {rows} rows, got {m_x}")
        return rng.permutation(m_x)[:rows].astype(np.int32)
    if pattern == "dup":
        return rng.integers(0, max(1, m_x // 4), rows).astype(np.int32)
    if pattern == "oob":
        return np.linspace(-m_x, 2 * m_x, rows).astype(np.int32)[rng.permutation(rows)]
    raise ValueError(f"gather pattern must be one of {', '.join(GATHER_PATTERNS)}, got {pattern!r}")


def scatter_indices(pattern: str, rows: int, m_out: int, rng) -> np.ndarray:
    """``rows`` distinct scatter indices into ``out`` (``m_out`` rows): 'perm' rows of out in random order, 'oob'
    distinct rows of [0, 2 m_out) (those >= m_out are dropped)."""
    if pattern == "perm":
        if m_out < rows:
            raise ValueError(f"a permutation scatter needs m_out >= {rows} rows, got {m_out}")
        return rng.permutation(m_out)[:rows].astype(np.int32)
    if pattern == "oob":
        return rng.choice(2 * m_out, rows, replace=False).astype(np.int32)
    raise ValueError(f"scatter pattern must be one of {', '.join(SCATTER_PATTERNS)}, got {pattern!r}")


def make_launch(seed: int = 0, n: int = 128, bn: int = 128, k_iters: int = 4, num_bufs: int = 3, tiles: int = 2,
                m_x: int | None = None, m_out: int | None = None, gather: str = "perm", scatter: str = "perm",
                out_dtype: str = "bf16", values: str = "normal", variant: str | None = None,
                gather_idx=None, scatter_idx=None) -> Launch:
    """A launch of the fused kernel; ``variant`` (a key of :data:`VARIANTS`) overrides the shape arguments;
    ``gather_idx`` / ``scatter_idx`` (int32 arrays of ``128 * tiles``) replace the generated index vectors."""
    if variant is not None:
        v = VARIANTS[variant]
        n, bn, k_iters, num_bufs = v["n"], v["bn"], v["k_iters"], v["num_bufs"]
        gather, scatter, out_dtype = v["gather"], v["scatter"], v.get("out_dtype", "bf16")
    if bn not in BNS:
        raise ValueError(f"BN must be one of {BNS} (the epilogue's 32-column loads, 128-byte scatter chunks and a "
                         f"128-column TMEM allocation), got {bn}")
    if n < bn or n % bn:
        raise ValueError(f"N = {n} must be a positive multiple of BN = {bn}")
    if k_iters < 1:
        raise ValueError(f"k_iters must be >= 1, got {k_iters}")
    if not 1 <= num_bufs <= MAX_BUFS:
        raise ValueError(f"num_bufs must be 1..{MAX_BUFS}, got {num_bufs}")
    if out_dtype not in OUT_DTYPES:
        raise ValueError(f"out_dtype must be one of {', '.join(OUT_DTYPES)}, got {out_dtype!r}")
    if tiles < 1:
        raise ValueError(f"tiles must be >= 1, got {tiles}")
    rows = M_TILE * tiles
    m_x = rows if m_x is None else m_x
    m_out = rows if m_out is None else m_out
    rng = np.random.default_rng(seed)
    k = K_STAGE * k_iters
    x = _values(rng, (m_x, k), values).astype(ml_dtypes.bfloat16)
    wt = _values(rng, (n, k), values).astype(ml_dtypes.bfloat16)          # W^T: row j holds column j of W
    odt = OUT_DTYPES[out_dtype]
    out = rng.standard_normal((m_out, n)).astype(odt)                     # rows nobody scatters to must survive
    gidx = gather_indices(gather, rows, m_x, rng) if gather_idx is None else np.asarray(gather_idx, np.int32)
    sidx = scatter_indices(scatter, rows, m_out, rng) if scatter_idx is None else np.asarray(scatter_idx, np.int32)
    for name, idx in (("gather_idx", gidx), ("scatter_idx", sidx)):
        if idx.shape != (rows,):
            raise ValueError(f"{name} must hold {rows} entries (128 per CTA), got shape {idx.shape}")
    chunk_cols = 128 // np.dtype(odt).itemsize
    tmap_x = TensorMap.tiled(x, box=(1, K_STAGE), swizzle="128B")          # gather4: one 128-byte row per box
    tmap_w = TensorMap.tiled(wt, box=(bn, K_STAGE), swizzle="128B")
    tmap_o = TensorMap.tiled(out, box=(1, chunk_cols), swizzle="128B")     # scatter4: one 128-byte row chunk
    idesc = instr_descriptor(bn).encode()
    smem = 1024 + 2 * num_bufs * SLOT_BYTES + M_TILE * bn * np.dtype(odt).itemsize
    name = (f"tma_gather_mma_scatter_{out_dtype}_rows{rows}_n{n}_bn{bn}_k{k}_ring{num_bufs}_{gather}_{scatter}")
    return Launch(ptx=PTX, kernel=KERNEL, grid=(tiles, n // bn, 1), block=(THREADS, 1, 1), dynamic_smem=smem,
                  args=[x, wt, out, gidx, sidx, tmap_x, tmap_w, tmap_o, idesc, k_iters, num_bufs,
                        int(out_dtype == "f32")],
                  name=name)


# ---------------------------------------------------------------------------------------------- references
def operands(launch: Launch):
    """(X, W^T, initial out, gather_idx, scatter_idx) of a launch."""
    x, wt, out, gidx, sidx = launch.args[:5]
    return x, wt, out, gidx, sidx


def gathered_rows(x: np.ndarray, gidx: np.ndarray) -> np.ndarray:
    """``X[gather_idx]`` with the rows outside [0, M_x) zero (what gather4 puts in SMEM)."""
    ok = (gidx >= 0) & (gidx < x.shape[0])
    a = np.zeros((gidx.size, x.shape[1]), dtype=x.dtype)
    a[ok] = x[gidx[ok]]
    return a


def product_oracle(launch: Launch) -> np.ndarray:
    """The f32 accumulator, bit-exact: the numerics oracle on the gathered rows, chained over K in 16-wide MMAs from
    D = +0 as the kernel issues them (rows x N, f32)."""
    from tcsim.numerics.tensor_core import mma_float, tc_params

    x, wt, _, gidx, _ = operands(launch)
    a_bits = np.ascontiguousarray(gathered_rows(x, gidx)).view(np.uint16)
    b_bits = np.ascontiguousarray(wt.T).view(np.uint16)                   # W[k][n]
    params = tc_params("sm_100a", "tcgen05", "bf16", kind="f16")
    acc = np.zeros((a_bits.shape[0], b_bits.shape[1]), dtype=np.uint32)
    for k0 in range(0, a_bits.shape[1], K_MMA):
        acc = np.asarray(mma_float(a_bits[:, k0:k0 + K_MMA], b_bits[k0:k0 + K_MMA], acc, "bf16", "bf16", "f32",
                                   params), dtype=np.uint32)
    return acc.view(np.float32)


def scatter_reference(out0: np.ndarray, sidx: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``out0`` with row ``scatter_idx[i]`` replaced by ``y[i]`` where ``scatter_idx[i] < M_out`` (masked)."""
    ref = out0.copy()
    ok = sidx < out0.shape[0]
    ref[sidx[ok]] = y[ok]
    return ref


def reference(launch: Launch) -> np.ndarray:
    """The expected ``out``: the oracle's accumulator, rounded to the output type (bf16: round to nearest even, as
    cvt.rn.bf16x2.f32), scattered with numpy masking into the initial ``out``."""
    out0, sidx = launch.args[2], launch.args[4]
    return scatter_reference(out0, sidx, product_oracle(launch).astype(out0.dtype))


def float64_product(launch: Launch) -> np.ndarray:
    """``X[gather_idx] @ W`` in float64 from the decoded inputs (OOB gather rows zero)."""
    x, wt, _, gidx, _ = operands(launch)
    return gathered_rows(x, gidx).astype(np.float64) @ wt.astype(np.float64).T


def check(result, launch):
    """(ok, message): ``out`` equals the oracle-based reference bit for bit, and lies within the oracle's error
    bound of the float64 product on every scattered row (untouched rows unchanged)."""
    x, wt, out0, gidx, sidx = operands(launch)
    got = np.asarray(result.outputs[2])
    want = reference(launch)
    rows, n = gidx.size, wt.shape[0]
    what = (f"out[scatter_idx] = X[gather_idx] @ W ({rows} rows, N = {n}, K = {x.shape[1]}, "
            f"{'f32' if out0.dtype == np.float32 else 'bf16'} out)")
    if got.shape != want.shape or got.dtype != want.dtype:
        return False, f"{what}: output {got.shape} {got.dtype}, expected {want.shape} {want.dtype}"
    bits = {2: np.uint16, 4: np.uint32}[want.dtype.itemsize]
    diff = got.view(bits) != want.view(bits)
    if diff.any():
        r, c = np.argwhere(diff)[0]
        src = np.nonzero(sidx == r)[0]
        whence = f"gathered row {src[0]} (X row {gidx[src[0]]})" if src.size else "a row nobody scatters to"
        return False, (f"{what}: {int(diff.sum())} of {want.size} elements differ from the bit-exact reference "
                       f"(first at out[{r}][{c}], {whence}: got {got[r, c]!r}, want {want[r, c]!r})")
    # independent layout check against float64
    ok = sidx < out0.shape[0]
    untouched = np.ones(out0.shape[0], bool)
    untouched[sidx[ok]] = False
    if not np.array_equal(got[untouched].view(bits), out0[untouched].view(bits)):
        return False, f"{what}: rows that no scatter index names were changed"
    exact = float64_product(launch)[ok]
    a64, b64 = np.abs(gathered_rows(x, gidx).astype(np.float64))[ok], np.abs(wt.astype(np.float64)).T
    bound = 2.0 ** -14 * (a64 @ b64) + 1e-30
    if out0.dtype != np.float32:
        # rounding the f32 value y to bf16 adds at most half an ulp <= 2^-8 |y| <= 2^-8 (|exact| + 2^-14 |A|@|B|)
        bound = bound + 2.0 ** -8 * (np.abs(exact) + 2.0 ** -14 * (a64 @ b64))
    err = np.abs(got[sidx[ok]].astype(np.float64) - exact)
    if (err > bound).any():
        i, c = np.unravel_index(int((err / bound).argmax()), err.shape)
        return False, (f"{what}: out[{sidx[ok][i]}][{c}] = {got[sidx[ok][i], c]!r} is {err[i, c]:.3e} from the "
                       f"float64 product {exact[i, c]!r} (bound {bound[i, c]:.3e}): a layout error")
    zero_rows = int((~((gidx >= 0) & (gidx < x.shape[0])) & ok).sum())
    return True, (f"{what}: bit-identical to the oracle reference ({int(ok.sum())} rows scattered, "
                  f"{rows - int(ok.sum())} dropped, {zero_rows} zero rows from OOB gathers, "
                  f"{int(untouched.sum())} rows untouched); within the oracle's bound of the float64 product")


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
