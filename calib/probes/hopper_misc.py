"""H100 golden data for the Hopper-common constructs of issue 16 item 1: 128-bit data (``b128_moves``), cache
policies (``createpolicy_probe``) and programmatic dependent launch (``griddep``).

The kernels are the nvcc fixtures ``tests/fixtures/nvcc/{b128_moves,createpolicy_probe,griddep}.sm_90a.ptx``; the
inputs are made here (seeded), so the recorder and the replay test (``tests/hw/test_hopper_misc_golden.py``) use
the same ones.  Record on a machine with the GPU, from the repository root::

    python -m calib.probes.hopper_misc record tests/hw/golden_h100/hopper_misc.json

(the GPU back end spawns a process; this module guards its entry point).  The record holds every output array
as lists of hexadecimal strings, plus the device name and driver.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "nvcc"
GOLDEN = REPO / "tests" / "hw" / "golden_h100" / "hopper_misc.json"


# ------------------------------------------------------------------------------------------------ the launches
def b128_launch():
    from tcsim.launch import Launch
    rng = np.random.default_rng(5)
    inp = rng.integers(0, 2 ** 64, (64, 2), dtype=np.uint64)
    cell = rng.integers(0, 2 ** 64, (128, 2), dtype=np.uint64)
    for t in range(64):
        if t % 4 < 2:
            cell[t] = inp[t ^ 1]
    out = np.zeros((320, 2), np.uint64)
    return Launch(ptx=(FIXTURES / "b128_moves.sm_90a.ptx").read_text(), grid=(1, 1, 1), block=(64, 1, 1),
                  args=[out, inp, cell], name="b128_moves")


#: the fractions of the createpolicy probe: exact binary fractions, decimal ones, the ends of (0, 1] and random
FRACTIONS = ([1.0, 0.5, 0.25, 0.75, 0.125, 0.0625, 1 / 32, 1 / 64, 1 / 128, 1 / 256, 1 / 512, 1 / 1024, 0.1, 0.2,
              0.3, 1 / 3, 0.4, 0.6, 0.7, 0.8, 0.9, 0.99, 0.999, 0.9999, 1 - 2 ** -24, 2 ** -20, 1e-10, 1.4e-45,
              0.375, 0.625, 0.875, 0.9375, 0.03125 * 3, 0.05, 0.15, 0.35, 0.45, 0.55, 0.65, 0.85, 0.95, 2 ** -8 * 3,
              2 ** -9, 2 ** -12])


def createpolicy_launch():
    from tcsim.launch import Launch
    rng = np.random.default_rng(16)
    frac = np.array(FRACTIONS + list(rng.uniform(0, 1, 64 - len(FRACTIONS))), dtype=np.float32)
    frac[frac == 0] = np.float32(0.5)
    sizes = [(0, 0), (128, 128), (1024, 4096), (4096, 1 << 20), (1, 2), (0xFFFFFFFF, 0xFFFFFFFF), (0, 4096),
             (4096, 4096), (1 << 20, 1 << 30), (100, 200), (127, 129), (256, 0xFFFFFFFF)]
    rows = []
    for t in range(64):
        if t < len(sizes):
            ps, ts = sizes[t]
            addr = [0, 0x7F0000001000, 0x12345678, 0xFFFFFFFFFFFF, 0x100, 0x7F00000FFF80][t % 6]
        else:
            ts = int(rng.integers(0, 1 << 32))
            ps = int(rng.integers(0, ts + 1))
            addr = int(rng.integers(0, 1 << 48))
        rows += [addr, ps, ts]
    rng_arr = np.array(rows, dtype=np.uint64)
    prop = np.array([0, 1, 0x1000000000000000, 0x12F0000000000000, 0x14F0000000000000, 0xFFFFFFFFFFFFFFFF]
                    + list(rng.integers(0, 2 ** 64, 58, dtype=np.uint64)), dtype=np.uint64)
    src = np.arange(64, dtype=np.uint32) * 1000 + 7
    return Launch(ptx=(FIXTURES / "createpolicy_probe.sm_90a.ptx").read_text(), grid=(1, 1, 1), block=(64, 1, 1),
                  args=[np.zeros(64 * 40, np.uint64), frac, rng_arr, prop, src, np.zeros(64, np.uint32)],
                  name="createpolicy_probe")


GRIDDEP_N = 300


def griddep_launches(programmatic: bool = True, kernel: str = "pdl_dependent"):
    """primary (x -> y) then the dependent (y, z -> out), the dependent launched with programmatic stream
    serialization when ``programmatic``."""
    from tcsim.launch import Launch
    ptx = (FIXTURES / "griddep.sm_90a.ptx").read_text()
    n = GRIDDEP_N
    rng = np.random.default_rng(9)
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    y = np.zeros(n, np.int32)
    z = rng.integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    prim = Launch(ptx=ptx, kernel="pdl_primary", grid=(3, 1, 1), block=(128, 1, 1), args=[x, y, np.int32(n)])
    dargs = [y, z, out, np.int32(n)] if kernel == "pdl_dependent" else [y, out, np.int32(n)]
    dep = Launch(ptx=ptx, kernel=kernel, grid=(3, 1, 1), block=(128, 1, 1), args=dargs, programmatic=programmatic)
    return [prim, dep]


# ------------------------------------------------------------------------------------------------ record / load
def _hex(a) -> list:
    a = np.ascontiguousarray(a)
    u = a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]).reshape(-1)
    return [format(int(v), "x") for v in u]


def unhex(rows, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    u = np.array([int(v, 16) for v in rows], dtype={1: np.uint8, 2: np.uint16, 4: np.uint32,
                                                     8: np.uint64}[dt.itemsize])
    return u.view(dt)


def record(path: str) -> dict:
    from tcsim.hw.launcher import probe, run_on_gpu, run_sequence_on_gpu
    out: dict = {"meta": {"date": time.strftime("%Y-%m-%d"), "command":
                          "python -m calib.probes.hopper_misc record tests/hw/golden_h100/hopper_misc.json"}}
    r = run_on_gpu(b128_launch())
    out["b128_moves"] = {"error": r.error, "out": _hex(r.outputs[0]) if r.ok else None,
                         "cell": _hex(r.outputs[2]) if r.ok else None}
    out["meta"].update(device=r.device, driver=r.driver, cc=list(r.compute_capability or ()))
    r = run_on_gpu(createpolicy_launch())
    out["createpolicy_probe"] = {"error": r.error, "pol": _hex(r.outputs[0]) if r.ok else None,
                                 "data": _hex(r.outputs[5]) if r.ok else None}
    for prog in (True, False):
        r = run_sequence_on_gpu(griddep_launches(prog))
        key = "griddep_programmatic" if prog else "griddep_serial"
        out[key] = {"error": r.error, "detail": r.error_detail,
                    "y": _hex(r.outputs[0][1]) if r.ok else None, "out": _hex(r.outputs[1][2]) if r.ok else None}
    try:
        out["meta"]["probe"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in probe().items()}
    except Exception as e:  # noqa: BLE001 - provenance only
        out["meta"]["probe"] = str(e)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=1) + "\n")
    return out


def load_golden() -> dict | None:
    return json.loads(GOLDEN.read_text()) if GOLDEN.is_file() else None


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "record":
        sys.exit("usage: python -m calib.probes.hopper_misc record <out.json>")
    rec = record(sys.argv[2])
    print(json.dumps({k: (v.get("error") if isinstance(v, dict) and "error" in v else v) for k, v in rec.items()},
                     default=str))
