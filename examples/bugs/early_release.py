"""A deliberately buggy pipeline for the README's debugger walkthrough ("Debugging a race with ``tcsim debug``"):
``examples/bulk_pipeline.ptx`` with the consumer's release of a stage (``mbarrier.arrive`` on ``empty[s]``) moved
one instruction too early, before its last ``ld.shared`` of the stage.  The producer may then refill the stage
with the chunk three ahead while the consumer still reads it.  Under the default schedule the bulk copy lands
after the read and the output is right; under a forced interleaving it is wrong (``tcsim debug`` ``delay``/
``schedule`` commands, tests/debugger/test_walkthrough.py).  Kept out of ``tcsim.examples`` (whose kernels are all
correct)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tcsim.launch import Launch

PTX = Path(__file__).with_suffix(".ptx")
CHUNKS, CHUNK_BYTES = 6, 128


def make_launch(chunks: int = CHUNKS, chunk_bytes: int = CHUNK_BYTES, seed: int = 0) -> Launch:
    ptx = PTX.relative_to(Path.cwd()) if PTX.is_relative_to(Path.cwd()) else PTX
    rng = np.random.default_rng(seed)
    n = chunks * chunk_bytes // 4
    src = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    return Launch(ptx=ptx, kernel="early_release", grid=(1, 1, 1), block=(64, 1, 1), dynamic_smem=3 * chunk_bytes,
                  args=[src, np.zeros_like(src), chunks, chunk_bytes], name="early_release")


def reference(launch: Launch) -> np.ndarray:
    """out = 3 * in + 1 (u32, wrapping), computed from the input alone."""
    src = launch.args[0]
    return (src.astype(np.uint64) * 3 + 1).astype(np.uint32)


def check(result, launch):
    got, want = result.outputs[1], reference(launch)
    bad = np.flatnonzero(got != want)
    if bad.size:
        i = int(bad[0])
        return False, f"{bad.size} of {want.size} words wrong; first out[{i}] = {got[i]} (want {want[i]})"
    return True, f"out = 3*in + 1 for all {want.size} words"
