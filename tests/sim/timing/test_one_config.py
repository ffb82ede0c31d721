"""One timing configuration (DESIGN.md principle 14): every unit takes its parameters from the one ArchConfig the
simulation runs under, through its constructor; timing off is a preset of that config (``ArchConfig.untimed()``),
not a branch; semantics hold no latency; the warp process has one path."""
import ast
import importlib.util
import inspect
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tcsim.agents.async_copy import AsyncCopyParams
from tcsim.agents.tensor_pipe import TensorPipeParams
from tcsim.agents.tma import TmaParams
from tcsim.engine import Simulation
from tcsim.launch import Launch, run_launch
from tcsim.timing.params import SM_90A, SM_100A, UNTIMED, arch_config, timing_config
from timing_kernels import PROLOGUE, kernel

ROOT = Path(__file__).resolve().parents[3]
SEMANTICS = ROOT / "sim" / "semantics"

_spec = importlib.util.spec_from_file_location("bench_tcgen05_fits", ROOT / "benchmarks" / "bench_tcgen05_fits.py")
fits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fits)

HEAD = ".version 8.7\n.target sm_100a\n.address_size 64\n"


def _timed_kernel(decls: str, setup: str, timed: str) -> str:
    """One warp: ``setup``, then %clock64 around ``timed``; the difference goes to out[0] (%rd1 = out,
    %rd2 = src, both global)."""
    body = PROLOGUE + f"""  ld.param.u64 %rd2, [src];
  cvta.to.global.u64 %rd2, %rd2;
{setup}
  mov.u64 %rd10, %clock64;
{timed}
  mov.u64 %rd11, %clock64;
  sub.u64 %rd12, %rd11, %rd10;
  st.global.u64 [%rd1], %rd12;
  ret;"""
    return kernel(body, shared=decls, params=", .param .u64 src")


#: a TMA bulk copy of 1 KB global -> SMEM, waited for on its mbarrier (one thread)
TMA = _timed_kernel("  .shared .align 128 .b8 buf[1024];\n  .shared .align 8 .b64 bar;", """
  mov.u32 %r1, buf;
  mov.u32 %r2, bar;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 1024;""", """
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd2], 1024, [%r2];
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
  @!%p1 bra $L_wait;""")

#: a 16-byte cp.async per lane, committed and waited for
CP_ASYNC = _timed_kernel("  .shared .align 16 .b8 buf[512];", """
  mov.u32 %r1, %tid.x;
  mul.lo.u32 %r1, %r1, 16;
  mov.u32 %r2, buf;
  add.u32 %r2, %r2, %r1;
  cvt.u64.u32 %rd3, %r1;
  add.u64 %rd3, %rd2, %rd3;""", """
  cp.async.ca.shared.global [%r2], [%rd3], 16;
  cp.async.commit_group;
  cp.async.wait_group 0;""")

#: a tcgen05.st of one column, waited for with tcgen05.wait::st
TMEM_ST = _timed_kernel("  .shared .align 16 .b32 taddr[1];", """
  mov.u32 %r1, taddr;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;
  ld.shared.b32 %r2, [%r1];
  mov.u32 %r3, 7;""", """
  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r2], {%r3};
  tcgen05.wait::st.sync.aligned;""").replace("  ret;\n", """  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 32;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
  ret;
""")


def _clocked(ptx: str, timing, threads: int = 32) -> int:
    out = np.zeros(1, dtype=np.uint64)
    src = np.arange(1024, dtype=np.uint8)
    res = run_launch(Launch(ptx=ptx, kernel="k", block=(threads, 1, 1), args=[out, src]), timing=timing)
    return int(res.outputs[0][0])


def _mma(timing) -> int:
    """issue -> commit -> mbarrier wait of one 128x128 TS tcgen05.mma (benchmarks/bench_tcgen05_fits.py)."""
    return fits.measure(128, 128, False, 1, timing=timing)


MEASURES = {"tma": lambda t: _clocked(TMA, t, 1), "cp.async": lambda t: _clocked(CP_ASYNC, t),
            "tcgen05.st": lambda t: _clocked(TMEM_ST, t), "tensor pipe": _mma}


# ------------------------------------------------------------------------------------------ semantics
def _latency_like(name: str) -> bool:
    n = name.lower()
    return "latency" in n or "cycles" in n or "delay" in n


def test_semantics_hold_no_latency():
    """No ``*Params`` class and no latency-like name bound to a number literal anywhere in sim/semantics."""
    found = []
    for path in sorted(SEMANTICS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{path.name}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.ClassDef) and node.name.endswith("Params"):
                found.append(f"{where} class {node.name}")
            pairs = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, ast.keyword) and node.arg:
                pairs = [(ast.Name(node.arg), node.value)]
            for target, value in pairs:
                name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
                if _latency_like(name) and isinstance(value, ast.Constant) and \
                        isinstance(value.value, (int, float)) and not isinstance(value.value, bool) and value.value:
                    found.append(f"{where} {name} = {value.value}")
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "timeout" and node.args and \
                    isinstance(node.args[0], ast.Constant):
                found.append(f"{where} timeout({node.args[0].value})")
    assert not found, found


# ------------------------------------------------------------------------------------------ the preset
@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_timing_off_is_a_preset_of_the_same_config(arch):
    cfg = arch_config(arch)
    off = cfg.untimed()
    assert set(UNTIMED) <= set(SM_100A) == set(SM_90A)      # the preset only sets parameters every config has
    assert set(off.params) == set(cfg.params)
    assert cfg.timed == 1 and off.timed == 0
    assert all(off.param(k) == p for k, p in UNTIMED.items())
    # what stays the target's: the machine's size and clock
    assert (off.num_sms, off.sm_clock_mhz) == (cfg.num_sms, cfg.sm_clock_mhz)
    assert timing_config(arch, False).params == off.params
    assert timing_config(arch, True).params == cfg.params


def test_unit_params_are_views_of_the_config_and_default_to_the_preset():
    off, on = arch_config("sm_100a").untimed(), arch_config("sm_90a")
    for view in (TmaParams, AsyncCopyParams, TensorPipeParams):
        assert view.from_config(off) == view()
        assert view.from_config(arch_config("sm_100a").with_units(view.from_config(on))) == view.from_config(on)
    assert TmaParams.from_config(on) == TmaParams(on.tma_latency, on.tma_bytes_per_clk, on.tma_tensor_extra)
    assert AsyncCopyParams.from_config(on).latency == int(on.l2_latency)   # cp.async: one L2 round trip


def test_one_cycle_per_warp_instruction_comes_from_the_preset():
    """A warp running straight-line code issues one instruction per cycle under the preset, whether the launch
    says ``timing=False`` or passes the preset itself."""
    body = "".join(f"  add.u32 %r{1 + i % 8}, %r{1 + i % 8}, {i};\n" for i in range(40))
    ptx = HEAD + ".visible .entry k()\n{\n  .reg .b32 %r<16>;\n" + body + "  ret;\n}\n"
    for timing in (False, arch_config("sm_100a").untimed()):
        res = run_launch(Launch(ptx=ptx, kernel="k", block=(32, 1, 1), args=[]), timing=timing)
        assert res.stats["warp_instructions"] == 41
        assert res.stats["cycles"] == 41 and res.timing is None and res.stats["timing"] is False
    res = run_launch(Launch(ptx=ptx, kernel="k", block=(32, 1, 1), args=[]), timing=True)
    assert res.stats["timing"] is True and res.timing is not None


# ------------------------------------------------------------------------------------------ every unit
#: the parameter of each unit (tensor pipe: the fixed-parameter model's under the preset, the fitted model's
#: under the target's config)
PARAM = {"tma": "tma_latency", "cp.async": "cp_async_latency", "tcgen05.st": "tmem_st_land_latency"}
PIPE = {False: "tc_fixed_mma_latency", True: "tc_fit_base_1sm"}
DELTA = 1000


@pytest.mark.parametrize("timed", [False, True], ids=["preset", "sm_100a"])
def test_each_unit_reads_its_parameters_from_the_simulations_config(timed):
    """Adding DELTA cycles to one unit's latency in the config the launch runs under delays exactly that unit's
    operation by DELTA and no other unit's (no unit reads a default of its own)."""
    base = arch_config("sm_100a") if timed else arch_config("sm_100a").untimed()
    params = dict(PARAM, **{"tensor pipe": PIPE[timed]})
    before = {unit: measure(base) for unit, measure in MEASURES.items()}
    for unit, name in params.items():
        cfg = base.with_overrides({name: getattr(base, name) + DELTA})
        for other, measure in MEASURES.items():
            assert measure(cfg) - before[other] == (DELTA if other == unit else 0), (name, other)


def test_the_fixed_pipe_numbers_do_nothing_under_the_fitted_model():
    cfg = arch_config("sm_100a")
    assert cfg.tc_fixed_pipe == 0
    assert _mma(cfg.with_overrides({"tc_fixed_mma_latency": 5000})) == _mma(cfg)
    assert _mma(cfg.with_overrides({"tc_fixed_pipe": 1})) != _mma(cfg)


def test_launch_overrides_go_into_the_config():
    """``run_launch(tma_params=...)`` replaces the TMA parameters in the run's config (named as the override's
    source), and the simulation holds no per-unit parameter attribute beside its config."""
    out = np.zeros(1, dtype=np.uint64)
    launch = Launch(ptx=TMA, kernel="k", block=(1, 1, 1), args=[out, np.arange(1024, dtype=np.uint8)])
    res = run_launch(launch, tma_params=TmaParams(latency=777))
    cfg = res.simulation.arch_config
    assert cfg.tma_latency == 777 and "TmaParams" in cfg.param("tma_latency").source
    assert cfg.timed == 0 and cfg.cp_async_latency == UNTIMED["cp_async_latency"].value
    engines = [a for (name, _), a in res.simulation.agents.items() if name == "tma"]
    assert [e.params for e in engines] == [TmaParams(latency=777)]
    for attr in ("tma_params", "tensor_pipe_params", "async_copy_params", "tcgen05_params"):
        assert not hasattr(res.simulation, attr)
    piped = arch_config("sm_100a").with_units(TensorPipeParams(mma_latency=9))
    assert piped.tc_fixed_pipe == 1 and piped.tc_fixed_mma_latency == 9


def test_cp_async_latency_follows_l2_latency_until_set_itself():
    cfg = arch_config("sm_100a")
    assert cfg.cp_async_latency == cfg.l2_latency
    assert cfg.with_overrides({"l2_latency": 400}).cp_async_latency == 400
    assert cfg.with_overrides({"l2_latency": 400, "cp_async_latency": 50}).cp_async_latency == 50
    assert cfg.with_overrides({"cp_async_latency": 50}).with_overrides({"l2_latency": 400}).cp_async_latency == 50
    h100 = arch_config("sm_90a")       # the H100 measurements replace l2_latency: cp.async follows
    assert h100.cp_async_latency == h100.l2_latency != SM_90A["l2_latency"].value


# ------------------------------------------------------------------------------------------ one path
def test_the_warp_process_has_one_path():
    """``_warp_process`` never asks whether there is a timing model: it always consults one."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(Simulation._warp_process)))
    names = {"tm", "timing"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            left = node.left
            name = left.id if isinstance(left, ast.Name) else getattr(left, "attr", None)
            assert name not in names, ast.unparse(node)
        if isinstance(node, (ast.If, ast.IfExp)):
            test = node.test.operand if isinstance(node.test, ast.UnaryOp) else node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            assert name not in names, ast.unparse(node.test)
