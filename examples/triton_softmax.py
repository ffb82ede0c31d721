"""``triton_softmax``: a row softmax written in Triton, compiled by Triton on the CPU and run in tcsim through
:mod:`tcsim.triton` -- no hand-built launch: the front end specialises the arguments the way Triton's JIT does,
adds Triton's hidden scratch parameters and sizes the block from ``num_warps``.

The kernel (``examples/_triton_softmax.py``) gives each program one row: it loads up to BLOCK = 256 columns with
a mask (the tail reads -inf), subtracts the row maximum (``tl.max``: a warp-shuffle and shared-memory reduction
over 4 warps), exponentiates (``tl.exp`` -> ``ex2.approx.f32`` of x * log2 e), sums (``tl.sum``) and divides.
The input is a 200-column window of a 208-column array (a strided view: the kernel gets the view's address and
row stride 208), the output a dense 8 x 200 array.

``make_launch`` compiles the kernel with Triton when it is installed (``tcsim.triton.prepare``, PTX version 9.0 so
that the CUDA 13.0 ptxas accepts it); otherwise it replays ``triton_softmax.ptx`` / ``triton_softmax.json``, the
same kernel compiled by Triton 3.9.0 and saved by ``TritonLaunch.save`` (regenerate with ``python -m
tcsim.examples.triton_softmax --regenerate`` from the repository root).

Checked against a float64 numpy softmax of the input (computed from the launch's input array, never from simulator
state): every element within a relative 2^-16 (``ex2.approx`` and the f32 sum of 200 terms are approximate),
each row summing to 1 within 2^-16 and the masked columns never written.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import example_main, ptx_path

DESCRIPTION = ("Triton row softmax (sm_100a) via tcsim.triton: 8 programs x 4 warps, 200 of 256 columns masked in, "
               "tl.max / tl.exp / tl.sum over a strided 8 x 200 window of an 8 x 208 array")
PTX = ptx_path("triton_softmax.ptx")
ROWS, COLS, PITCH, BLOCK = 8, 200, 208, 256
ARCH = "sm_100a"
#: the compile options of the saved kernel (and of the live compile)
OPTIONS = dict(num_warps=4, ptx_version=90)


def _arguments(seed: int, rows: int, cols: int, pitch: int):
    rng = np.random.default_rng(seed)
    wide = (rng.standard_normal((rows, pitch)) * 3).astype(np.float32)
    x = wide[:, :cols]                                    # a strided view (row stride `pitch`)
    out = np.full((rows, cols), np.float32(-1.0))
    return x, out


def make_launch(seed: int = 0, rows: int = ROWS, cols: int = COLS, pitch: int = PITCH, arch: str = ARCH):
    """The tcsim Launch of the Triton kernel (compiled now when Triton is installed, else the saved one)."""
    return prepare(seed, rows, cols, pitch, arch).launch


def prepare(seed: int = 0, rows: int = ROWS, cols: int = COLS, pitch: int = PITCH, arch: str = ARCH):
    import tcsim.triton as tt
    x, out = _arguments(seed, rows, cols, pitch)
    args = (out, x, pitch, cols, cols)
    try:
        from tcsim.examples._triton_softmax import softmax_kernel
    except ImportError:
        if arch != ARCH:
            from tcsim.isa.errors import LaunchError
            raise LaunchError(f"compiling the softmax for {arch} needs Triton (the saved kernel is for {ARCH})",
                              expected="`pip install triton`") from None
        return tt.replay(PTX, (rows,), *args)
    return tt.prepare(softmax_kernel, (rows,), *args, BLOCK=BLOCK, arch=arch, **OPTIONS)


def inputs(launch):
    """(x, rows, cols) read back from the launch: args = (out, in, in_row_stride, out_row_stride, n_cols, ...)."""
    rows, cols, pitch = launch.grid[0], int(launch.args[4]), int(launch.args[2])
    flat = launch.args[1]
    x = np.lib.stride_tricks.as_strided(flat, shape=(rows, cols), strides=(pitch * flat.itemsize, flat.itemsize))
    return x, rows, cols


def reference(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check(result, launch):
    x, rows, cols = inputs(launch)
    got = np.asarray(result.outputs[0]).reshape(rows, -1)
    if got.shape[1] != cols:
        return False, f"output has {got.shape[1]} columns, want {cols}"
    want = reference(x)
    rel = np.abs(got - want) / want
    worst = np.unravel_index(np.argmax(rel), rel.shape)
    row_sums = got.astype(np.float64).sum(axis=1)
    if not (rel <= 2.0 ** -16).all():
        return False, (f"softmax[{rows},{cols}]: {int((rel > 2.0 ** -16).sum())} elements differ from the float64 "
                       f"reference by more than 2^-16 (worst [{worst[0]}][{worst[1]}]: got {got[worst]!r}, want "
                       f"{want[worst]!r})")
    if not (np.abs(row_sums - 1) <= 2.0 ** -16).all():
        return False, f"row sums {row_sums} are not 1"
    return True, (f"softmax[{rows},{cols}] within 2^-16 of float64 (worst relative error {rel.max():.2e}); "
                  f"rows sum to 1 within {np.abs(row_sums - 1).max():.1e}")


def demo_summary(result, launch) -> list[str]:
    x, rows, cols = inputs(launch)
    got = np.asarray(result.outputs[0]).reshape(rows, -1)
    want = reference(x)
    return [f"  launch: grid {launch.grid}, block {launch.block}, dynamic SMEM {launch.dynamic_smem} B, "
            f"{len(launch.args)} parameters (2 hidden scratch pointers)",
            f"  row 0: softmax[0][:4] = {np.array2string(got[0, :4], precision=7)}  (float64: "
            f"{np.array2string(want[0, :4], precision=7)})"]


def regenerate(out_dir: Path | None = None) -> None:
    """Recompile with Triton and rewrite triton_softmax.ptx / .json (the files :func:`make_launch` replays without
    Triton).  Deterministic for one Triton version; ``.loc`` lines name examples/_triton_softmax.py by absolute
    path, so run it from a checkout at /work/main to avoid a diff in ``.file`` lines."""
    import tcsim.triton as tt
    from tcsim.examples._triton_softmax import softmax_kernel
    x, out = _arguments(0, ROWS, COLS, PITCH)
    prep = tt.prepare(softmax_kernel, (ROWS,), out, x, PITCH, COLS, COLS, BLOCK=BLOCK, arch=ARCH, **OPTIONS)
    target = Path(out_dir) if out_dir else Path(__file__).resolve().parent
    prep.save(target / "triton_softmax.ptx")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--regenerate"]:
        regenerate()
        raise SystemExit(0)
    raise SystemExit(example_main(sys.modules[__name__]))
