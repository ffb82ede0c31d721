"""Small PTX kernels for the timing tests: one body, a u64 output array, timing on by default."""
import numpy as np

from tcsim.launch import Launch, run_launch
from tcsim.observe import EventRecorder


def kernel(body: str, target: str = "sm_100a", shared: str = "", params: str = "") -> str:
    """The kernel ``k(out{params})`` with the usual register files, ``shared`` declarations and ``body``."""
    return f""".version 8.7
.target {target}
.address_size 64
.visible .entry k(.param .u64 out{params})
{{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .f32 %f<32>;
  .reg .f64 %fd<32>;
  .reg .b64 %rd<32>;
{shared}
{body}
}}
"""


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
