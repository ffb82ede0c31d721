"""A deliberately buggy flag hand-off whose wrong answer depends on the schedule
(``tcsim run examples/bugs/flag_before_data.py --explore 16``): see ``flag_before_data.ptx``.  Kept out of
``tcsim.examples`` (whose kernels are all correct)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tcsim.launch import Launch

PTX = Path(__file__).with_suffix(".ptx")


def make_launch() -> Launch:
    ptx = PTX.relative_to(Path.cwd()) if PTX.is_relative_to(Path.cwd()) else PTX
    return Launch(ptx=ptx, kernel="flag_before_data", grid=(1, 1, 1), block=(64, 1, 1),
                  args=[np.zeros(1, dtype=np.uint32)], name="flag_before_data")


def check(result, launch):
    v = int(result.outputs[0][0])
    return v == 42, f"out[0] = {v} (want 42)"
