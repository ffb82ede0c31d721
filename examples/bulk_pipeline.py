"""``bulk_pipeline``: a 3-stage producer/consumer ring fed by 1-D bulk copies (see ``bulk_pipeline.ptx``).

Warp 0 (one elected lane) copies chunk ``c`` of ``in`` into SMEM stage ``c % 3`` with
``cp.async.bulk...mbarrier::complete_tx::bytes`` after waiting for the stage's ``empty`` barrier; warp 1 waits
for the stage's ``full`` barrier, writes ``3 * x + 1`` (u32, wrapping) of every element to ``out`` and
releases the stage (all 32 consumer threads arrive on ``empty``).  With more chunks than stages the ring wraps
and both barriers' phase parities flip once per lap.  Checked exactly against numpy (on an H100 too, for
12x1024, 7x80, 13x2048 and 25x32 B).
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.errors import LaunchError
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("bulk-copy pipeline: 2 warps, 3 SMEM stages, producer cp.async.bulk + full/empty mbarriers, "
               "consumer out = 3*in + 1 (u32)")
PTX = ptx_path("bulk_pipeline.ptx")
KERNEL = "bulk_pipeline"
STAGES = 3


def make_launch(chunks: int = 12, chunk_bytes: int = 1024, seed: int = 0) -> Launch:
    if chunks < 0 or chunk_bytes <= 0 or chunk_bytes % 16:
        raise LaunchError(f"bulk_pipeline needs chunks >= 0 and a positive chunk_bytes that is a multiple of 16 "
                          f"(cp.async.bulk size rule), got chunks={chunks}, chunk_bytes={chunk_bytes}")
    rng = np.random.default_rng(seed)
    n = chunks * chunk_bytes // 4
    src = rng.integers(0, 2**32, size=max(n, 4), dtype=np.uint32)
    dst = np.zeros_like(src)
    return Launch(ptx=PTX, kernel=KERNEL, grid=(1, 1, 1), block=(64, 1, 1), dynamic_smem=STAGES * chunk_bytes,
                  args=[src, dst, chunks, chunk_bytes], name=f"bulk_pipeline({chunks}x{chunk_bytes}B)")


def reference(launch: Launch) -> np.ndarray:
    src, dst, chunks, chunk_bytes = launch.args
    n = chunks * chunk_bytes // 4
    want = dst.copy()
    want[:n] = src[:n] * np.uint32(3) + np.uint32(1)            # wraps mod 2^32
    return want


def check(result, launch):
    got = result.outputs[1]
    want = reference(launch)
    _, _, chunks, chunk_bytes = launch.args
    if not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)
        per = chunk_bytes // 4
        chunks_bad = sorted({int(i) // per for i in bad})
        return False, (f"{bad.size} of {want.size} words differ from 3*in+1 (chunks {chunks_bad[:8]}"
                       f"{'...' if len(chunks_bad) > 8 else ''}; first at word {bad[0]}: got {got[bad[0]]}, "
                       f"want {want[bad[0]]})")
    return True, (f"out = 3*in + 1 for all {chunks} chunks of {chunk_bytes} B through {STAGES} stages "
                  f"({-(-chunks // STAGES)} laps of the ring)")


if __name__ == "__main__":
    import sys
    raise SystemExit(example_main(sys.modules[__name__]))
