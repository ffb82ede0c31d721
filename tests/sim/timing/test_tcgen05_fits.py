"""The sm_100a config reproduces the published B200 tcgen05.mma fits (timing.md, SemiAnalysis) within 5%, measured
in tcsim by clock64-timed benchmark kernels (benchmarks/bench_tcgen05_fits.py) on a representative grid."""
import importlib.util
from pathlib import Path

import pytest

from tcsim.timing.params import arch_config

_spec = importlib.util.spec_from_file_location(
    "bench_tcgen05_fits", Path(__file__).resolve().parents[3] / "benchmarks" / "bench_tcgen05_fits.py")
fits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fits)

GRID = [(m, n, ss, cg) for (m, cg) in fits.SHAPES for n in (64, 128, 256) for ss in (False, True)]


@pytest.mark.parametrize("m, n, ss, cg", [g for g in GRID if fits.published_latency(*g) is not None])
def test_single_mma_latency_matches_published_fit(m, n, ss, cg):
    pub = fits.published_latency(m, n, ss, cg)
    got = fits.measure(m, n, ss, cg)
    assert abs(got - pub) <= fits.TOLERANCE * pub, f"M={m} N={n} {'SS' if ss else 'TS'} cg{cg}: {got} vs {pub}"


@pytest.mark.parametrize("m, n, ss, cg", [g for g in GRID if g[1] != 128])
def test_steady_issue_interval(m, n, ss, cg):
    expect = fits.published_interval(m, n, ss, cg)
    got = fits.steady_interval(m, n, ss, cg)
    assert abs(got - expect) <= fits.TOLERANCE * expect
    if (m, cg) in ((128, 1), (256, 2), (64, 1)) and fits.interval_source(m, n, ss, cg) == "N/2":
        assert expect == n / 2


def test_ss_small_n_is_smem_bound():
    # timing.md: "SS with N<128 is SMEM bound" -- (A 4096 + B 2048 bytes) / 128 B/clk = 48 > N/2 = 32
    assert fits.steady_interval(128, 64, True, 1) == 48
    assert fits.steady_interval(128, 64, False, 1) == 32


def test_timing_off_does_not_model_the_pipe():
    assert fits.measure(128, 256, True, 1, timing=False) != fits.published_latency(128, 256, True, 1)


def test_fit_depends_on_the_config():
    cfg = arch_config("sm_100a").with_overrides({"tc_fit_base_1sm": 204})
    assert fits.measure(128, 128, False, 1, timing=cfg) == fits.published_latency(128, 128, False, 1) + 100
