"""A deliberately buggy kernel to show what a finding looks like (``tcsim run examples/bugs/missing_proxy_fence.py``).

``missing_proxy_fence.ptx``: 64 threads write a tile of SMEM with ``st.shared``, ``bar.sync``, and thread 0 stores
the tile with a TMA bulk copy -- without the ``fence.proxy.async.shared::cta`` that orders the generic-proxy writes
before the async-proxy read (PTX ISA 9.1 §9.7.13.4).  The output is right in the simulator and usually on the GPU;
tcsim names the missing fence.  ``make_launch(fixed=True)`` adds the fence where the comment says.  Kept out of
``tcsim.examples`` (whose kernels are all correct).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tcsim.launch import Launch

PTX = Path(__file__).with_suffix(".ptx")
FIX = "// the fix: fence.proxy.async.shared::cta;"


def make_launch(fixed: bool = False) -> Launch:
    out = np.zeros(64, dtype=np.uint32)
    ptx = PTX.read_text().replace(FIX, "fence.proxy.async.shared::cta;") if fixed else PTX.relative_to(Path.cwd()) \
        if PTX.is_relative_to(Path.cwd()) else PTX
    return Launch(ptx=ptx, kernel="epilogue_store", grid=(1, 1, 1), block=(64, 1, 1), args=[out],
                  name="missing_proxy_fence" + ("(fixed)" if fixed else ""))


def check(result, launch):
    got = result.outputs[0]
    want = np.arange(64, dtype=np.uint32) * 3 + 1
    if not np.array_equal(got, want):
        return False, f"{int(np.count_nonzero(got != want))} of 64 words differ from 3*tid+1"
    return True, "out = 3*tid + 1 for the 64 words of the tile"
