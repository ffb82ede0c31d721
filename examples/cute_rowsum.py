"""``cute_rowsum``: a row sum written in the CuTe DSL (CUTLASS Python DSL), compiled by the DSL on the CPU and run
in tcsim through :mod:`tcsim.cute` -- no hand-built launch: the DSL's own host code computes the grid from the
tensor's runtime shape and packs the kernel parameters, and tcsim.cute records that launch.

The program (``examples/_cute_rowsum.py``) gives each 32-thread CTA one row: the lanes stride over the columns
(``cutlass.range(lane, n, 32)``), combine with a butterfly ``shfl.sync.bfly`` reduction and lane 0 stores the
sum.  Both tensors have dynamic layouts (``tcsim.cute.tensor(x, dynamic=True)``), so each parameter is a
``.b8`` struct of pointer, shape and strides: the input is a 100-column window of a 104-column array (a strided
view: row stride 104 travels in the parameter), the output a dense vector of 8.

``make_launch`` compiles the program with the DSL when it is installed (``tcsim.cute.prepare``); otherwise it
replays ``cute_rowsum.ptx`` / ``cute_rowsum.json``, the same program compiled by nvidia-cutlass-dsl 4.8.1 and saved
by ``CuteLaunch.save`` (regenerate with ``python -m tcsim.examples.cute_rowsum --regenerate``).

Checked against numpy's row sums of the input (integer-valued floats below 2^24 in magnitude, so every f32 sum
is exact in any order), with the columns outside the window never read into the result.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("CuTe DSL row sum (sm_100a) via tcsim.cute: 8 CTAs x 1 warp, lane-strided loads and a shfl.sync.bfly "
               "reduction over a strided 8 x 100 window of an 8 x 104 array, dynamic layouts")
PTX = ptx_path("cute_rowsum.ptx")
ROWS, COLS, PITCH = 8, 100, 104
ARCH = "sm_100a"


def _arguments(seed: int):
    rng = np.random.default_rng(seed)
    wide = rng.integers(-1000, 1000, (ROWS, PITCH)).astype(np.float32)
    wide[:, COLS:] = 1e6                                  # outside the window: would spoil any sum that read it
    x = wide[:, :COLS]
    y = np.full(ROWS, np.float32(-1.0))
    return x, y


def prepare(seed: int = 0, arch: str = ARCH):
    import tcsim.cute as tc
    x, y = _arguments(seed)
    try:
        from tcsim.examples._cute_rowsum import rowsum
    except ImportError:
        if arch != ARCH:
            from tcsim.isa.errors import LaunchError
            raise LaunchError(f"compiling the row sum for {arch} needs the CuTe DSL (the saved program is for {ARCH})",
                              expected="`pip install nvidia-cutlass-dsl==4.8.1`") from None
        return tc.replay(PTX, x, y)
    return tc.prepare(rowsum, tc.tensor(x, dynamic=True), tc.tensor(y, dynamic=True), arch=arch)


def make_launch(seed: int = 0, arch: str = ARCH):
    """The tcsim Launch of the program's one kernel launch (compiled now when the DSL is installed, else saved)."""
    return prepare(seed, arch).launch


def inputs(launch):
    """The input window, read back from the launch: args[0] is the Struct (pointer, shape, strides) of x."""
    flat = launch.args[0].fields[0].array
    return np.lib.stride_tricks.as_strided(flat, shape=(ROWS, COLS), strides=(PITCH * flat.itemsize, flat.itemsize))


def check(result, launch):
    x = inputs(launch)
    got = np.asarray(result.outputs[1][0]).reshape(-1)[:ROWS]
    want = x.astype(np.float64).sum(axis=1)
    if not np.array_equal(got.astype(np.float64), want):
        bad = np.flatnonzero(got.astype(np.float64) != want)
        return False, f"row sums differ in rows {bad.tolist()}: got {got[bad].tolist()}, want {want[bad].tolist()}"
    return True, f"{ROWS} row sums of an {ROWS} x {COLS} strided window exact"


def demo_summary(result, launch) -> list[str]:
    got = np.asarray(result.outputs[1][0]).reshape(-1)[:ROWS]
    return [f"  launch (from the DSL's host code): grid {launch.grid}, block {launch.block}, "
            f"{len(launch.args)} struct parameters (pointer, shape, strides)",
            f"  y[:4] = {got[:4].tolist()}"]


def regenerate(out_dir: Path | None = None) -> None:
    """Recompile with the CuTe DSL and rewrite cute_rowsum.ptx / .json (what :func:`make_launch` replays without the
    DSL).  Deterministic for one DSL version."""
    target = Path(out_dir) if out_dir else Path(__file__).resolve().parent
    prepare().save(target / "cute_rowsum.ptx")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--regenerate"]:
        regenerate()
        raise SystemExit(0)
    raise SystemExit(example_main(sys.modules[__name__]))
