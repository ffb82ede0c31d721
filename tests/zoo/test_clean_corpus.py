"""No false positives on the project's own corpus (issue 15 item 7): every shipped example launch
(``examples/*.py`` with ``make_launch``) and every launchable fixture under ``tests/fixtures`` (nvcc, Triton,
CuTe DSL output) runs in sanitizer mode, timing off and on, with ZERO findings -- except real hazards, each listed
in :data:`KNOWN_HAZARDS` with the PTX ISA passage that makes it one and asserted to be reported (class and lines)
without stopping the run.

Launches are built the way the tests that own each fixture build them (``tests/examples/test_triton_blackwell.py``
for Triton / CuTe DSL, ``tests/semantics/test_bulk_tensor.py`` / ``test_warp_mma.py`` for the nvcc fixtures), at
small sizes.  Where those fixtures' own tests check the numbers, this file checks only the findings; the examples
also pass their own ``check``.

Fixtures not launched here and why: ``tests/fixtures/triton/{vector_add,matmul_128x128x64,matmul_tma_host_desc,
copy_tma_device_desc}`` (``gen_triton_ptx.py``, older Triton ABI) have no launcher in the project yet; they are
parsed and ptxas-checked by ``tests/isa/test_fixtures_parse.py`` and ``tests/test_ptxas_guard.py``;
``tests/fixtures/nvcc/assert_fail`` ends its launch by design (tests/semantics/test_calls.py runs it).
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.errors import TcsimError
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch, run_launch

ROOT = Path(__file__).resolve().parents[2]
NVCC = ROOT / "tests" / "fixtures" / "nvcc"
TIMINGS = (False, True)

#: Real hazards in the corpus: name -> (class, PTX lines of the two sides, the PTX ISA passage).
KNOWN_HAZARDS: dict = {
    # Triton 3.9 reads a shared word (the TMEM-address slot) with ld.shared, meets the other warps at bar.sync and
    # later lets a TMA load overwrite those bytes, with no fence.proxy.async between: PTX ISA 9.1 section 8.6,
    # "accessing the same memory location across multiple proxies needs a cross-proxy fence" (Triton's own
    # ProxyFenceInsertion pass gained async-read dependencies for this, triton PR #9610 / pytorch #181248).
    "triton/tma_matmul_bf16": (9, (59, 139), "PTX ISA 9.1 section 8.6"),
    "triton/ws_matmul_f16": (9, (56, 834), "PTX ISA 9.1 section 8.6"),
}

#: Lint notes (never errors) the corpus is expected to give: name -> {class: why the hardware result is defined}.
LINT_NOTES: dict = {
    # tcgen05.ld destination registers read before tcgen05.wait::ld (section 9.7.16.8.3 leaves them undefined; ptxas
    # orders the use after the load)
    "triton/tma_matmul_bf16": {19: "tcgen05.ld registers used before wait::ld"},
    "triton/cute_gemm_bf16": {19: "tcgen05.ld registers used before wait::ld"},
    # every warp stores the same immediate to one shared word (a race by section 8.9; every order leaves the same
    # bytes)
    "triton/ws_matmul_f16": {21: "same immediate stored by several warps"},
}

EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py")
                  if not p.stem.startswith("_") and "def make_launch" in p.read_text())
SLOW_EXAMPLES = {"nvfp4_gemm", "tma_gather_mma_scatter", "tcgen05_pipeline_gemm"}


def _run(launch: Launch, timing: bool):
    """(result or None, findings, the error that stopped the run or None)."""
    try:
        r = run_launch(launch, timing=timing)
        return r, list(r.findings), None
    except TcsimError as e:
        return None, list(getattr(e, "findings", None) or []), e


def _assert_clean(name: str, launch: Launch, timing: bool):
    result, findings, stop = _run(launch, timing)
    lint_ok = LINT_NOTES.get(name, {})
    lints = [f for f in findings if f.severity == "lint"]
    assert all(f.cls in lint_ok for f in lints), \
        f"{name}: undocumented lint notes:\n" + "\n".join(f.format() for f in lints if f.cls not in lint_ok)
    findings = [f for f in findings if f.severity != "lint"]
    hazard = KNOWN_HAZARDS.get(name)
    if hazard is None:
        assert stop is None, f"{name}: the run stopped: {stop}"
        assert findings == [], f"{name}: unexpected findings:\n" + "\n".join(f.format() for f in findings)
    else:
        cls, lines, _passage = hazard
        assert stop is None, f"{name}: a documented hazard must be reported without stopping the run: {stop}"
        assert any(f.cls == cls and set(lines) <= set(f.lines) for f in findings), \
            f"{name}: the documented hazard (class {cls}, lines {lines}) was not reported"
        others = [f for f in findings if not (f.cls == cls and set(lines) <= set(f.lines))]
        assert others == [], "\n".join(f.format() for f in others)
    return result


# ------------------------------------------------------------------------------------------------ examples
def test_examples_found():
    assert {"tcgen05_walkthrough", "cta_pair_gemm", "bulk_pipeline", "cluster_exchange"} <= set(EXAMPLES)


@pytest.mark.parametrize("timing", TIMINGS, ids=("untimed", "timed"))
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW_EXAMPLES else [])
                                  for n in EXAMPLES])
def test_example_is_clean(name, timing):
    mod = importlib.import_module(f"tcsim.examples.{name}")
    launch = mod.make_launch()
    result = _assert_clean(f"examples/{name}", launch, timing)
    if hasattr(mod, "check"):
        ok, msg = mod.check(result, launch)
        assert ok, msg


# -------------------------------------------------------------------------------------------- nvcc fixtures
def _nvcc_tma_mbarrier(arch):
    a = np.random.default_rng(7).standard_normal((256, 96)).astype(np.float32)
    return Launch(ptx=str(NVCC / f"tma_mbarrier.{arch}.ptx"), block=(128, 1, 1),
                  args=[TensorMap.tiled(a, (64, 32)), np.zeros(64 * 32, np.float32), 1, 2, np.float32(2.5)])


def _nvcc_mma_sync(arch):
    rng = np.random.default_rng(11)
    a = rng.integers(-4, 5, (16, 32)).astype(np.float16).view(np.uint16)
    bt = rng.integers(-4, 5, (16, 32)).astype(np.float16).view(np.uint16)
    return Launch(ptx=str(NVCC / f"mma_sync_ldmatrix.{arch}.ptx"), block=(32, 1, 1),
                  args=[a, bt, np.zeros((16, 16), np.uint16), 32])


def _nvcc_mma_sync_lineinfo(arch):
    launch = _nvcc_mma_sync(arch)
    launch.ptx = str(NVCC / f"mma_sync_ldmatrix.lineinfo.{arch}.ptx")
    return launch


def _nvcc_cluster(arch):
    x = np.random.default_rng(3).integers(0, 2**20, 512, dtype=np.uint32)
    return Launch(ptx=str(NVCC / f"cluster_dsmem.{arch}.ptx"), grid=(4, 1, 1), block=(128, 1, 1),
                  cluster=(2, 1, 1), args=[x, np.zeros(512, np.uint32)])


def _nvcc_tcgen05(arch):
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (128, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    return Launch(ptx=str(NVCC / f"tcgen05_mma.{arch}.ptx"), block=(128, 1, 1),
                  args=[a, b, np.zeros((128, 64), np.float32)])


def _nvcc_tcgen05_lineinfo(arch):
    launch = _nvcc_tcgen05(arch)
    launch.ptx = str(NVCC / f"tcgen05_mma.lineinfo.{arch}.ptx")
    return launch


def _nvcc_device_calls(arch):
    n = 24
    inp = np.random.default_rng(1).integers(-50, 50, n).astype(np.int32)
    return Launch(ptx=str(NVCC / f"device_calls.{arch}.ptx"), kernel="_Z12calls_kernelPKiPiPxPfPji", block=(32, 1, 1),
                  args=[inp, np.zeros(n, np.int32), np.zeros(2 * n, np.int64), np.zeros(n, np.float32),
                        np.zeros(n, np.uint32), n])


def _nvcc_printf_calls(arch):
    return Launch(ptx=str(NVCC / f"printf_calls.{arch}.ptx"), block=(32, 1, 1),
                  args=[np.linspace(-3.0, 40.0, 32).astype(np.float32), np.zeros(32, np.float32), 32, 5])


NVCC_CASES = [(f, arch) for f, archs in ((_nvcc_tma_mbarrier, ("sm_90a", "sm_100a")),
                                         (_nvcc_device_calls, ("sm_90a",)),
                                         (_nvcc_printf_calls, ("sm_100a",)),
                                         (_nvcc_mma_sync, ("sm_90a", "sm_100a")),
                                         (_nvcc_cluster, ("sm_90a", "sm_100a")),
                                         (_nvcc_mma_sync_lineinfo, ("sm_90a",)),
                                         (_nvcc_tcgen05, ("sm_100a",)),
                                         (_nvcc_tcgen05_lineinfo, ("sm_100a",))) for arch in archs]


@pytest.mark.parametrize("timing", TIMINGS, ids=("untimed", "timed"))
@pytest.mark.parametrize("make,arch", NVCC_CASES, ids=[f"{f.__name__[6:]}-{a}" for f, a in NVCC_CASES])
def test_nvcc_fixture_is_clean(make, arch, timing):
    _assert_clean(f"nvcc/{make.__name__[6:]}.{arch}", make(arch), timing)


# ----------------------------------------------------------------------------------- Triton / CuTe fixtures
def _triton():
    sys.path.insert(0, str(ROOT / "tests" / "examples"))
    try:
        return importlib.import_module("test_triton_blackwell")
    finally:
        sys.path.pop(0)


def _triton_launch(name):
    tb = _triton()
    rng = np.random.default_rng(9)
    bf16 = lambda shape: tb._bf16(rng, shape)           # noqa: E731
    if name == "tc_matmul_bf16":
        a, b, c = bf16((128, 64)), bf16((64, 128)), np.zeros((128, 128), np.float32)
        return tb.make_launch(name, dict(a_ptr=a, b_ptr=b, c_ptr=c, M=128, N=128, K=64, stride_am=64,
                                         stride_bk=128, stride_cm=128), (1, 1, 1))
    if name == "cp_async_matmul_tf32":
        a = rng.standard_normal((128, 64)).astype(np.float32)
        b = rng.standard_normal((64, 64)).astype(np.float32)
        return tb.make_launch(name, dict(a_ptr=a, b_ptr=b, c_ptr=np.zeros((128, 64), np.float32), M=128, N=64,
                                         K=64, stride_am=64, stride_bk=64, stride_cm=64), (1, 1, 1))
    if name == "tma_matmul_bf16":
        a, b = bf16((128, 128)), bf16((128, 128))
        return tb.make_launch(name, dict(a_desc=tb.Desc(a), b_desc=tb.Desc(b),
                                         c_desc=tb.Desc(np.zeros((128, 128), np.float32)), K=128), (1, 1, 1))
    if name == "ws_matmul_f16":
        a = rng.standard_normal((128, 256)).astype(np.float16)
        bt = rng.standard_normal((128, 256)).astype(np.float16)
        return tb.make_launch(name, dict(a_desc=tb.Desc(a), bt_desc=tb.Desc(bt),
                                         c_desc=tb.Desc(np.zeros((128, 128), np.float16)), K=256), (1, 1, 1))
    if name == "tma_scale_transpose_add":
        x = rng.standard_normal((64, 64)).astype(np.float32)
        y = rng.standard_normal((64, 64)).astype(np.float32)
        return tb.make_launch(name, dict(x_desc=tb.Desc(x), y_desc=tb.Desc(y),
                                         out_desc=tb.Desc(np.zeros((64, 64), np.float32)), alpha=1.5), (1, 1, 1))
    if name == "tma_device_desc_rowscale":
        x = rng.standard_normal((64, 32)).astype(np.float32)
        s = rng.standard_normal(64).astype(np.float32)
        return tb.make_launch(name, dict(in_ptr=x, scale_ptr=s, out_ptr=np.zeros((64, 32), np.float32), M=64,
                                         N=32), (1, 1, 1))
    if name == "cute_gemm_bf16":
        m = tb.cute_meta()["shapes"]
        a, b = bf16((m["M"], m["K"])), bf16((m["N"], m["K"]))
        return tb.cute_launch(a, b, np.zeros((m["M"], m["N"]), np.float32))
    raise KeyError(name)


TRITON = ("tc_matmul_bf16", "cp_async_matmul_tf32", "tma_matmul_bf16", "ws_matmul_f16", "tma_scale_transpose_add",
          "tma_device_desc_rowscale", "cute_gemm_bf16")


def test_triton_list_covers_the_launchable_fixtures():
    assert set(_triton().KERNELS) <= set(TRITON)


@pytest.mark.parametrize("timing", TIMINGS, ids=("untimed", "timed"))
@pytest.mark.parametrize("name", TRITON)
def test_triton_fixture_is_clean(name, timing):
    _assert_clean(f"triton/{name}", _triton_launch(name), timing)
