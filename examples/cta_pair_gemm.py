"""``cta_pair_gemm``: a GEMM on CTA pairs with the 5th-generation tensor core's ``.cta_group::2`` -- each pair of
CTAs of a cluster (ranks 2p, 2p + 1; clusters of 2 or 4 CTAs along x) computes one 256 x N tile: the pair
allocates its tensor memory together
(``tcgen05.alloc.cta_group::2``), each CTA TMA-loads its 128-row half of A and its N/2-column half of B (signalling
the even CTA's mbarrier, ``.cta_group::2``), one thread of the even CTA issues ``tcgen05.mma.cta_group::2.kind::f16``
with M = 256, and ``tcgen05.commit.cta_group::2 ... .multicast::cluster`` arrives on both CTAs' mbarriers; each
CTA then reads its 128 rows of D out of its own TMEM (see ``cta_pair_gemm.ptx`` for every step).

D[256 P, N] (f32) = A[256 P, K] @ B[K, N] with A, B f16 or bf16, K = 64 * k_stages (1..4), N a multiple of 32 up
to 256, P pairs (grid = 2 P CTAs in clusters of ``cluster_size`` = 2 or 4 CTAs: one or two pairs per cluster).  A is row-major (K-major), B is passed as B^T (N rows of
K).  Launch arguments: A, B^T, D, the tensor maps of A (box 128 x 64) and B^T (box N/2 x 64), the 32-bit
instruction descriptor (M 256; the kernel reads N out of it) and k_stages.

Checked like ``gemm_async``, from the input arrays only: bit for bit against the numerics oracle
(``tc_params('sm_100a', 'tcgen05', fmt, kind='f16')``, the K=16 MMAs chained from D = +0 as issued; the
pair computes all 256 rows in one instruction, which the oracle sees as one M = 256 product), and against an
independent float64 product: equal for ``values='int'``, within 2^-14 (|A| @ |B|) otherwise.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.descriptors import InstrDescriptor
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path
# the operands, the bit-exact oracle chained over K and the comparison are gemm_async's (same argument layout)
from tcsim.examples.gemm_async import (DTYPES, K_MMA, K_STAGE, _values, compare, float64_product,  # noqa: F401
                                 operands, reference)

DESCRIPTION = ("CTA-pair GEMM (sm_100a, cta_group::2): 2-CTA cluster, pair TMEM alloc, each CTA TMA-loads its A/B "
               "halves onto the even CTA's mbarrier, one thread issues M=256 tcgen05.mma.cta_group::2.kind::f16, "
               "commit multicast to both CTAs, each reads its 128 rows with tcgen05.ld.32x32b")
PTX = ptx_path("cta_pair_gemm.ptx")
KERNEL = "cta_pair_gemm"
M_PAIR = 256                      # M of one cta_group::2 MMA = rows of one cluster's tile
MAX_STAGES = 4

#: named variants (tests run them): dtype, n, k_stages, pairs, cluster_size
VARIANTS = {
    "f16_n256_k192": dict(dtype="f16", n=256, k_stages=3),
    "bf16_n128_k128": dict(dtype="bf16", n=128, k_stages=2),
    "f16_n64_k64_2clusters": dict(dtype="f16", n=64, k_stages=1, pairs=2),
    "bf16_n96_k256_cluster4": dict(dtype="bf16", n=96, k_stages=4, pairs=2, cluster_size=4),
}


def instr_descriptor(dtype: str, n: int) -> InstrDescriptor:
    """kind::f16 instruction descriptor of the pair's MMA: M 256, A/B ``dtype``, D f32, both K-major."""
    return InstrDescriptor.for_kind("f16", M_PAIR, n, dtype, dtype, "f32")


def make_launch(seed: int = 0, dtype: str = "f16", n: int = 256, k_stages: int = 2, pairs: int = 1,
                cluster_size: int = 2, values: str = "normal", variant: str | None = None) -> Launch:
    """A launch of ``cta_pair_gemm``; ``variant`` (a key of :data:`VARIANTS`) overrides the shape arguments."""
    if variant is not None:
        v = VARIANTS[variant]
        dtype, n, k_stages = v["dtype"], v["n"], v["k_stages"]
        pairs, cluster_size = v.get("pairs", 1), v.get("cluster_size", 2)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if not (32 <= n <= 256 and n % 32 == 0):
        raise ValueError(f"N must be a multiple of 32 in 32..256, got {n}")
    if not 1 <= k_stages <= MAX_STAGES:
        raise ValueError(f"k_stages must be 1..{MAX_STAGES}, got {k_stages}")
    if pairs < 1:
        raise ValueError("pairs must be >= 1")
    if cluster_size not in (2, 4) or (2 * pairs) % cluster_size:
        raise ValueError(f"cluster_size must be 2 or 4 and divide the {2 * pairs} CTAs, got {cluster_size}")
    rng = np.random.default_rng(seed)
    m, k = M_PAIR * pairs, K_STAGE * k_stages
    dt = DTYPES[dtype]
    a = _values(rng, (m, k), values).astype(dt)
    bt = _values(rng, (n, k), values).astype(dt)
    d = np.zeros((m, n), dtype=np.float32)
    tmap_a = TensorMap.tiled(a, box=(M_PAIR // 2, K_STAGE), swizzle="128B")
    tmap_b = TensorMap.tiled(bt, box=(n // 2, K_STAGE), swizzle="128B")
    idesc = instr_descriptor(dtype, n).encode()
    return Launch(ptx=PTX, kernel=KERNEL, grid=(2 * pairs, 1, 1), block=(128, 1, 1), cluster=(cluster_size, 1, 1),
                  dynamic_smem=1024 + 2 * k_stages * 16384, args=[a, bt, d, tmap_a, tmap_b, idesc, k_stages],
                  name=f"cta_pair_gemm_{dtype}_m{m}n{n}k{k}_cluster{cluster_size}")


def check(result, launch):
    a, bt, fmt = operands(launch)
    m, k = a.shape
    n = bt.shape[0]
    return compare(result.outputs[2], reference(launch), a, bt,
                   f"D[{m},{n}] f32 = A {fmt} @ B {fmt} (K = {k}; {m // M_PAIR} CTA pair(s), {k // K_MMA} chained "
                   f"M=256 K=16 tcgen05.mma.cta_group::2)")


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
