"""``cluster_exchange``: distributed shared memory around a ring of the CTAs of a cluster (``cluster_exchange.ptx``).

Each CTA reads its right neighbour's shared memory through ``mapa`` + ``ld.shared::cluster``, writes ``3 v + rank``
into its left neighbour's shared memory with ``st.shared::cluster`` and arrives on the left neighbour's mbarrier
(release, cluster scope); every CTA waits on its own mbarrier for the data its right neighbour wrote.  Cluster
barriers (``.release``/``.acquire`` and ``.relaxed``) publish the mbarrier initialisation and keep every CTA
resident until the whole cluster is done.  The result also records ``%cluster_ctarank``, ``%cluster_nctarank``,
``%cluster_ctaid.x``, ``%clusterid.x``, ``%cluster_nctaid.x`` and ``%is_explicit_cluster`` of every thread, and is
checked exactly against numpy.
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.errors import LaunchError
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("DSMEM ring: each CTA of a cluster reads its right neighbour's SMEM, writes its left neighbour's and "
               "arrives on the left neighbour's mbarrier; cluster barriers around it")
PTX = ptx_path("cluster_exchange.ptx")
KERNEL = "cluster_exchange"
THREADS = 64


def make_launch(cluster: int = 4, clusters: int = 2, seed: int = 0) -> Launch:
    if cluster not in (1, 2, 4, 8) or clusters < 1:
        raise LaunchError(f"cluster_exchange needs a cluster of 1, 2, 4 or 8 CTAs and at least one cluster, got "
                          f"cluster={cluster}, clusters={clusters}")
    n = cluster * clusters * THREADS
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    out = np.full((n, 8), 0xDEADBEEF, dtype=np.uint32)
    return Launch(ptx=PTX, kernel=KERNEL, grid=(cluster * clusters, 1, 1), block=(THREADS, 1, 1),
                  cluster=(cluster, 1, 1), args=[src, out], name=f"cluster_exchange({clusters}x{cluster} CTAs)")


def reference(launch: Launch) -> np.ndarray:
    src, _ = launch.args
    c = launch.cluster[0]
    ncta = launch.grid[0]
    g = np.arange(ncta * THREADS)
    cta, t = g // THREADS, g % THREADS
    rank, cid = cta % c, cta // c
    nxt = (cta - rank) + (rank + 1) % c                      # right neighbour in the same cluster
    v = src[nxt * THREADS + t]
    # our sm_b[t] was written by the right neighbour: 3 * (its right neighbour's value) + its rank
    nxt2 = (cta - rank) + (rank + 2) % c
    w = ((src[nxt2 * THREADS + t].astype(np.uint64) * np.uint64(3) + ((rank + 1) % c).astype(np.uint64))
         & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    # a launch without cluster dimensions (cluster of 1) is not an explicit cluster
    explicit = np.full_like(g, int(c > 1))
    out = np.stack([v, w, rank, np.full_like(g, c), rank, cid, np.full_like(g, c), explicit], axis=1)
    return out.astype(np.uint32)


def check(result, launch):
    got = result.outputs[1]
    want = reference(launch)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        i, f = (int(x) for x in bad[0])
        names = ("v", "w", "ctarank", "nctarank", "cluster_ctaid.x", "clusterid.x", "cluster_nctaid.x",
                 "is_explicit_cluster")
        return False, (f"{len(bad)} of {want.size} words differ; first: thread {i} field {names[f]}: got "
                       f"{got[i, f]:#x}, want {want[i, f]:#x}")
    c = launch.cluster[0]
    return True, (f"{launch.grid[0]} CTAs in clusters of {c}: every thread read its right neighbour's SMEM and "
                  f"received 3v + rank from it through its mbarrier; cluster registers as expected")


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
