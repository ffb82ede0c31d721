"""Small PTX kernels for the timing tests: one body, a u64 output array, timing on by default."""
import numpy as np

from tcsim.launch import Launch, run_launch
from tcsim.observe import EventRecorder
from tests.ptx_frame import kernel  # noqa: F401  (the frame of every kernel here)


def run(body: str, *, threads: int = 32, out_len: int = 8, target: str = "sm_100a", shared: str = "",
        timing=True, seed=None, kinds=("inst", "sync", "stall"), trace=None):
    """(result, recorded events) of the kernel; ``out`` is a uint64 array of ``out_len``."""
    rec = EventRecorder(kinds=kinds)
    out = np.zeros(out_len, dtype=np.uint64)
    launch = Launch(ptx=kernel(body, target, shared), kernel="k", block=(threads, 1, 1), args=[out])
    res = run_launch(launch, timing=timing, seed=seed, observers=(rec,), trace=trace)
    return res, rec


#: %rd1 = the output array (global address)
PROLOGUE = """
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
"""
