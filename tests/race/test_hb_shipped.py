"""The happens-before detector on shipped code: every example (examples/*.py launch files) runs with no finding,
under timing off and on; the Triton / CuTe DSL fixtures give only the real hazards documented here.

Real hazards the detector reports in Triton 3.9 output (tests/fixtures/triton), each a PTX-memory-model violation
even though the kernels produce the right result on the GPU:

* ``tma_matmul_bf16`` and ``ws_matmul_f16``, class 9: SMEM read with ``ld.shared`` (the TMEM-address / barrier
  slot) is later overwritten by a TMA load, ordered only by ``bar.sync`` with no ``fence.proxy.async`` between
  (PTX ISA 9.1 §8.6 proxies: "a proxy fence is required to synchronize across proxies"; the generic read and the
  async-proxy write are accesses of different proxies to the same location).  Triton's own fence-insertion pass
  added async *read* dependencies for this reason (triton PR #9610, pytorch #181248).
* ``ws_matmul_f16``, class 21 as a lint note: every warp stores the same immediate to the same SMEM address with no
  ordering between them (§8.9 data races: conflicting accesses that are not morally strong race, whatever values
  they write; every order leaves the same bytes).

Lint notes (class 19, not errors): Triton and CuTe DSL read ``tcgen05.ld`` destination registers without
``tcgen05.wait::ld``; the PTX ISA (§9.7.16.8.3) leaves their values undefined until the wait, ptxas orders the use
after the load.
"""
import importlib
import pkgutil

import numpy as np
import pytest

import tcsim.examples as ex
from tcsim.launch import run_launch
from tests.examples.test_triton_blackwell import Desc, _bf16, make_launch

EXAMPLES = sorted(m.name for m in pkgutil.iter_modules(ex.__path__)
                  if not m.name.startswith("_") and not m.ispkg)


@pytest.mark.parametrize("timing", [False, True])
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_clean(name, timing):
    mod = importlib.import_module(f"tcsim.examples.{name}")
    res = run_launch(mod.make_launch(), timing=timing)
    assert not res.findings, [str(f) for f in res.findings]


def test_triton_tma_matmul_gives_only_its_documented_hazards():
    rng = np.random.default_rng(2)
    M, N, K = 200, 136, 160
    a, b = _bf16(rng, (M, K)), _bf16(rng, (K, N))
    c = np.full((M, N), np.float32(-777.0))
    res = run_launch(make_launch("tma_matmul_bf16", dict(a_desc=Desc(a), b_desc=Desc(b), c_desc=Desc(c), K=K),
                                 (2, 2, 1)))
    errors = [f for f in res.findings if f.severity != "lint"]
    assert errors and {f.cls for f in errors} == {9}
    assert all("ld.shared" in f.sides[0].what and "cp.async.bulk.tensor" in f.sides[1].what for f in errors)
    assert {f.cls for f in res.findings if f.severity == "lint"} <= {19}


def test_triton_ws_matmul_gives_only_its_documented_hazards():
    rng = np.random.default_rng(4)
    M, N, K = 256, 128, 384
    a = rng.standard_normal((M, K)).astype(np.float16)
    bt = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    res = run_launch(make_launch("ws_matmul_f16", dict(a_desc=Desc(a), bt_desc=Desc(bt), c_desc=Desc(c), K=K),
                                 (2, 1, 1)))
    errors = [f for f in res.findings if f.severity != "lint"]
    assert {f.cls for f in errors} == {9}
    races = [f for f in res.findings if f.cls == 21]
    assert races and all(f.severity == "lint" for f in races)    # the same immediate: every order gives the same
    assert all(f.sides[0].line == f.sides[1].line and f.sides[0].what.startswith("st.shared.b32")
               and f.sides[0].warp != f.sides[1].warp for f in races)
