"""``tma_gather_scatter``: Blackwell (sm_100a) TMA row gather and row scatter -- ``cp.async.bulk.tensor.2d ...
.tile::gather4`` / ``.tile::scatter4`` (PTX ISA 9.1 §5.5.3.4) -- with the sweeps of the Triton/Gluon tutorial
"Native TMA Gather and Scatter" (``test_async_gather`` / ``test_async_scatter``), checked bit for bit against
masked numpy references.

* gather: ``out = T[x_offsets, y_offset : y_offset + BLOCK_Y]``, rows or columns outside ``T`` read as zero;
* scatter: ``T[x_offsets, y_offset : y_offset + BLOCK_Y] = src``, rows or columns outside ``T`` are dropped.

``T`` is ``X_MAX x Y_MAX = 1024 x 1024`` (bf16 or fp32, random normal).  The sweep, as in the tutorial:
BLOCK_X in {8, 128} rows, BLOCK_Y in {16, 128} columns, both dtypes; gather ``y_offset`` in {-16, 0, 48, 1000}
with row offsets spanning ``linspace(-X_MAX, 2 X_MAX, BLOCK_X)`` (negative .. twice out of bounds), shuffled;
scatter ``y_offset`` in {0, 48, 1000} with row offsets ``linspace(0, 2 X_MAX, BLOCK_X)``, shuffled (negative
offsets are illegal for scatter).  56 launches.

The kernels are hand-written PTX (``tma_gather_scatter.ptx``): one CTA of 4 warps; lane 0 of each warp issues
one gather4/scatter4 per 4-row group and column chunk; gather completes on one mbarrier (expect_tx of the whole
tile), scatter through a bulk async-group.  The tensor map is ``TensorMap.tiled(T, box=(1, chunk_cols),
swizzle=...)`` with the swizzle Triton's default NVMMA layout picks for a ``[BLOCK_X, BLOCK_Y]`` tile (32B / 64B
/ 128B for 32 / 64 / >= 128-byte rows), a row wider than the swizzle span being split into several boxes (column
chunks) as Triton does.

Run: ``python -m tcsim.examples.tma_gather_scatter [--backend sim|gpu|both] [--quick] [--seed N]`` (the full sweep
takes a few seconds on the simulator; ``--quick`` runs one case per kind, dtype and shape).  The GPU back end
needs an sm_100a GPU: on an H100 (sm_90) it says so and exits 2.  ``tcsim run examples/tma_gather_scatter.py``
runs one representative gather (:func:`make_launch`).
"""
from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch
# absolute import: `tcsim run examples/<name>.py` loads this file by path, outside the examples package
from tcsim.examples._common import ptx_path

DESCRIPTION = ("TMA gather4 / scatter4 (sm_100a): T[x_offsets, y:y+BLOCK_Y] <-> a [BLOCK_X, BLOCK_Y] tile, "
               "out-of-bounds rows/columns zero-filled (gather) or dropped (scatter), the Triton tutorial sweep")
PTX = ptx_path("tma_gather_scatter.ptx")
X_MAX = Y_MAX = 1024
THREADS = 128
DTYPES = {"bf16": ml_dtypes.bfloat16, "fp32": np.float32}
BLOCK_XS = (8, 128)
BLOCK_YS = (16, 128)
GATHER_Y_OFFSETS = (-16, 0, 48, 1000)
SCATTER_Y_OFFSETS = (0, 48, 1000)
SWZ_MASK = {"none": 0, "32B": 1, "64B": 3, "128B": 7}
NEEDS = (".tile::gather4 and .tile::scatter4 (cp.async.bulk.tensor, PTX ISA 9.1 §5.5.3.4) need an sm_100a "
         "(Blackwell B200/GB200-class) GPU")


@dataclass(frozen=True)
class Case:
    kind: str           # 'gather' | 'scatter'
    dtype: str          # 'bf16' | 'fp32'
    block_x: int
    block_y: int
    y_offset: int

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.dtype}_x{self.block_x}_y{self.block_y}_off{self.y_offset}"


def sweep(kind: str | None = None) -> list:
    """Every case of the tutorial's parametrisation (gather: 32, scatter: 24)."""
    out = []
    for k, offs in (("gather", GATHER_Y_OFFSETS), ("scatter", SCATTER_Y_OFFSETS)):
        if kind in (None, k):
            for dt, bx, by, y in itertools.product(DTYPES, BLOCK_XS, BLOCK_YS, offs):
                out.append(Case(k, dt, bx, by, y))
    return out


def quick_sweep() -> list:
    """One case per kind, dtype and (BLOCK_X, BLOCK_Y), cycling through the y offsets (16 cases)."""
    out = []
    for k, offs in (("gather", GATHER_Y_OFFSETS), ("scatter", SCATTER_Y_OFFSETS)):
        for i, (dt, bx, by) in enumerate(itertools.product(DTYPES, BLOCK_XS, BLOCK_YS)):
            out.append(Case(k, dt, bx, by, offs[i % len(offs)]))
    return out


def smem_layout(dtype: str, block_y: int) -> tuple:
    """(swizzle, columns per box) as Triton's default NVMMA layout and TMA lowering choose them for a tile whose
    rows are ``block_y`` elements: the widest swizzle span (32/64/128 B) the row fills, boxes of one span."""
    es = np.dtype(DTYPES[dtype]).itemsize
    row = block_y * es
    span = 128 if row >= 128 else 64 if row >= 64 else 32 if row >= 32 else None
    if span is None:
        return "none", block_y
    return f"{span}B", span // es


def row_offsets(case: Case, rng) -> np.ndarray:
    """The tutorial's row offsets: linspace over [-X_MAX, 2 X_MAX] (gather) or [0, 2 X_MAX] (scatter), shuffled."""
    lo = -X_MAX if case.kind == "gather" else 0
    x = np.linspace(lo, 2 * X_MAX, case.block_x).astype(np.int32)     # truncation toward zero, like torch
    return x[rng.permutation(case.block_x)]


def make_case(case: Case, seed: int = 0) -> Launch:
    if case.block_x % 4:
        raise ValueError(f"BLOCK_X must be a multiple of 4 (one gather4/scatter4 moves 4 rows), got {case.block_x}")
    rng = np.random.default_rng(seed)
    dt = DTYPES[case.dtype]
    tensor = rng.standard_normal((X_MAX, Y_MAX)).astype(dt)
    xoffs = row_offsets(case, rng)
    swizzle, cols = smem_layout(case.dtype, case.block_y)
    if case.block_y % cols:
        raise ValueError(f"BLOCK_Y = {case.block_y} is not a multiple of the box width {cols}")
    es = np.dtype(dt).itemsize
    tmap = TensorMap.tiled(tensor, box=(1, cols), swizzle=swizzle)
    scalars = [np.int32(case.y_offset), case.block_x, case.block_y // cols, cols, cols * es, SWZ_MASK[swizzle]]
    smem = 1024 + case.block_x * case.block_y * es
    if case.kind == "gather":
        out = np.zeros((case.block_x, case.block_y), dtype=dt)
        args = [out, tensor, tmap, xoffs, *scalars]
        kernel = "tma_gather"
    else:
        src = rng.standard_normal((case.block_x, case.block_y)).astype(dt)
        args = [tensor, tmap, xoffs, src, *scalars]
        kernel = "tma_scatter"
    return Launch(ptx=PTX, kernel=kernel, grid=(1, 1, 1), block=(THREADS, 1, 1), dynamic_smem=smem, args=args,
                  name=f"tma_gather_scatter:{case.name}")


def make_launch(seed: int = 0) -> Launch:
    """One representative launch (for ``tcsim run``): a bf16 128 x 128 gather at y_offset 1000."""
    return make_case(Case("gather", "bf16", 128, 128, 1000), seed)


def case_of(launch: Launch) -> Case:
    """The :class:`Case` a launch was made from (parsed from its name)."""
    kind, dtype, bx, by, off = launch.name.split(":", 1)[1].split("_")
    return Case(kind, dtype, int(bx[1:]), int(by[1:]), int(off[3:]))


# ---------------------------------------------------------------------------------------------- references
def reference_gather(tensor: np.ndarray, xoffs: np.ndarray, y_offset: int, block_y: int) -> np.ndarray:
    """The tutorial's masked reference: rows outside [0, X_MAX) and columns outside [0, Y_MAX) are zero."""
    out = np.zeros((xoffs.size, block_y), dtype=tensor.dtype)
    ok = (xoffs >= 0) & (xoffs < tensor.shape[0])
    lo, hi = max(0, y_offset), min(y_offset + block_y, tensor.shape[1])
    if hi > lo:
        out[np.nonzero(ok)[0], lo - y_offset:hi - y_offset] = tensor[xoffs[ok], lo:hi]
    return out


def reference_scatter(tensor: np.ndarray, xoffs: np.ndarray, y_offset: int, src: np.ndarray) -> np.ndarray:
    """The tutorial's masked reference: src rows whose offset is >= X_MAX and columns >= Y_MAX are dropped."""
    out = tensor.copy()
    ok = xoffs < tensor.shape[0]
    hi = min(y_offset + src.shape[1], tensor.shape[1])
    if hi > y_offset:
        out[xoffs[ok], y_offset:hi] = src[ok, :hi - y_offset]
    return out


def expected(launch: Launch) -> tuple:
    """(argument index of the output, expected array) of a launch, from its input arrays only."""
    if launch.kernel == "tma_gather":
        out, tensor, _, xoffs, y = launch.args[:5]
        return 0, reference_gather(tensor, xoffs, int(y), out.shape[1])
    tensor, _, xoffs, src, y = launch.args[:5]
    return 0, reference_scatter(tensor, xoffs, int(y), src)


def check(result, launch):
    """(ok, message): the output equals the masked numpy reference bit for bit."""
    idx, want = expected(launch)
    got = np.asarray(result.outputs[idx])
    what = launch.name.split(":", 1)[1]
    if got.shape != want.shape:
        return False, f"{what}: output shape {got.shape}, expected {want.shape}"
    bits = {2: np.uint16, 4: np.uint32}[want.dtype.itemsize]
    diff = got.view(bits) != want.view(bits)
    if diff.any():
        r, c = np.argwhere(diff)[0]
        return False, (f"{what}: {int(diff.sum())} of {want.size} elements differ from the masked reference "
                       f"(first at [{r}, {c}]: got {got[r, c]!r}, want {want[r, c]!r})")
    if launch.kernel == "tma_gather":
        zero = int((want.view(bits) == 0).sum())
        return True, f"{what}: out ({want.shape[0]}x{want.shape[1]}) is bit-identical ({zero} zero-filled)"
    changed = int((want.view(bits) != launch.args[0].view(bits)).sum())
    return True, f"{what}: the tensor is bit-identical to the reference ({changed} elements written)"


# ---------------------------------------------------------------------------------------------- driver
def gpu_problem(info: dict | None = None) -> str | None:
    """None when the GPU back end can run sm_100a here, else a one-line reason naming the gather4/scatter4
    requirement (an H100 is sm_90: it has no .tile::gather4 / .tile::scatter4).  ``info`` is
    :func:`tcsim.hw.launcher.probe`'s description of the GPU; without it the GPU is probed (in a child process)."""
    from tcsim.hw.launcher import GpuUnavailable, check_target

    if info is None:
        import multiprocessing as mp

        from tcsim.hw.launcher import _driver, probe

        try:
            _driver()                           # one line when cuda-python is missing
            with mp.get_context("spawn").Pool(1) as pool:   # the driver is initialised in a child, as for launches
                info = pool.apply(probe)
        except GpuUnavailable as e:
            return f"{NEEDS}; the GPU back end cannot run here: {e}"
        except Exception as e:  # noqa: BLE001 - e.g. no libcuda in the child
            return f"{NEEDS}; the GPU back end cannot run here (GPU probe failed: {e})"
    try:
        check_target("sm_100a", tuple(info["cc"]), info["name"])      # the GPU back end's own rule for .target
    except GpuUnavailable as e:
        return f"{NEEDS}; {e}"
    return None


def run_sweep(cases, backend: str = "sim", seed: int = 0, out=None) -> int:
    """Run every case on the simulator and/or the GPU; print one line per case; 0 if all pass."""
    from tcsim.cli import compare_outputs
    from tcsim.launch import run_launch

    out = sys.stdout if out is None else out

    if backend in ("gpu", "both"):
        problem = gpu_problem()
        if problem is not None:
            print(f"[gpu] {problem}", file=out)
            return 2
        from tcsim.hw.launcher import run_on_gpu
    failed = []
    for case in cases:
        launch = make_case(case, seed)
        results = {}
        ok_case = True
        if backend in ("sim", "both"):
            results["sim"] = run_launch(launch)
        if backend in ("gpu", "both"):
            r = run_on_gpu(launch)
            if r.ok:
                results["gpu"] = r
            else:
                print(f"[gpu] FAIL: {case.name}: the kernel failed: {r.error} ({r.error_detail})", file=out)
                ok_case = False
        for side, res in results.items():
            ok, msg = check(res, launch)
            ok_case &= ok
            print(f"[{side}] {'PASS' if ok else 'FAIL'}: {msg}", file=out)
        if len(results) == 2:
            diffs = compare_outputs(results["sim"].outputs, results["gpu"].outputs)
            ok_case &= not diffs
            print(f"[both] {case.name}: " + ("bit-identical" if not diffs else "; ".join(diffs)), file=out)
        if not ok_case:
            failed.append(case.name)
    print(f"{len(cases) - len(failed)} of {len(cases)} cases passed"
          + (f"; failed: {', '.join(failed)}" if failed else ""), file=out)
    return 0 if not failed else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcsim.examples.tma_gather_scatter", description=DESCRIPTION)
    ap.add_argument("--backend", choices=["sim", "gpu", "both"], default="sim",
                    help="sim, the real GPU (sm_100a only), or both compared bit for bit")
    ap.add_argument("--seed", type=int, default=0, help="data seed")
    ap.add_argument("--quick", action="store_true", help="16 representative cases instead of the 56 of the sweep")
    ap.add_argument("--kind", choices=["gather", "scatter"], default=None, help="only one of the two sweeps")
    args = ap.parse_args(argv)
    from tcsim.isa.errors import TcsimError

    cases = quick_sweep() if args.quick else sweep()
    if args.kind:
        cases = [c for c in cases if c.kind == args.kind]
    try:
        return run_sweep(cases, args.backend, args.seed)
    except TcsimError as e:
        print(str(e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
