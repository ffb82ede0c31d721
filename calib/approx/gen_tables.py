"""Regenerate tcsim's measured .approx tables (sim/numerics/data/approx_sm90.npz) on a Hopper GPU.

    python3 calib/approx/gen_tables.py --out sim/numerics/data/approx_sm90.npz

Needs nvcc, CuPy and an sm_90 GPU.  The tables are the raw GPU results over the base domains listed in
calib/approx/tables.py (from_measurements); the generated file says "do not edit" in its __header__ entry.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from calib.approx import kernels, tables  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="sim/numerics/data/approx_sm90.npz")
    ap.add_argument("--work", default="/tmp/tcsim_approx")
    args = ap.parse_args(argv)
    import cupy as cp
    mod = kernels.build(args.work)

    def get(name, first, count):
        if count is None:
            return kernels.run_half(mod, name)
        return cp.asnumpy(kernels.run_f32(mod, name, first, count))

    tabs, meta = tables.from_measurements(get)
    tables.write(args.out, tabs, meta)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) on "
          f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")


if __name__ == "__main__":
    main()
