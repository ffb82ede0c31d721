"""Timing outputs in the Python API (Result.timing, Session), the CLI summary and the tensor-throughput figures."""
import importlib.util
from pathlib import Path

from tcsim.examples import gemm_async
from tcsim.cli import main
from tcsim.launch import run_launch
from tcsim.session import Session
from tcsim.timing.params import arch_config

from timing_kernels import PROLOGUE, kernel

_spec = importlib.util.spec_from_file_location(
    "bench_tcgen05_fits", Path(__file__).resolve().parents[3] / "benchmarks" / "bench_tcgen05_fits.py")
fits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fits)


def test_achieved_vs_peak_tensor_throughput():
    cfg = arch_config("sm_100a")
    import numpy as np
    from tcsim.isa.descriptors import InstrDescriptor
    from tcsim.launch import Launch
    count, m, n = 12, 128, 256
    out = np.zeros(1, dtype=np.uint64)
    launch = Launch(ptx=fits.fit_kernel_ptx(m, n, False, 1, count), kernel="tcgen05_fit", block=(128, 1, 1),
                    dynamic_smem=1024 + fits.A_SMEM + fits.B_SMEM,
                    args=[out, InstrDescriptor.for_kind("f16", m, n, "f16", "f16", "f32").encode()])
    res = run_launch(launch, timing=True)
    t = res.timing.tensor
    flops = count * 2 * m * n * 16
    cycles = res.stats["cycles"]
    assert t["flops"] == flops and t["by_kind"] == {"f16": flops}
    assert t["peak_per_sm"] == cfg.tc_peak_f16
    assert abs(t["achieved_per_sm"] - flops / cycles) < 1e-9
    pipe = res.timing.units["tensor pipe"]
    assert pipe["busy"] == count * n // 2                          # N/2 cycles of compute per MMA
    assert abs(t["fraction"] - pipe["busy"] / cycles) < 1e-9       # f16 at N/2 per MMA is the peak rate


def test_session_exposes_scoreboard_and_report():
    body = PROLOGUE + "  ld.global.u32 %r1, [%rd1];\n  add.u32 %r2, %r1, 1;\n  st.global.u32 [%rd1], %r2;\n  ret;\n"
    import numpy as np
    from tcsim.launch import Launch
    s = Session(Launch(ptx=kernel(body), kernel="k", args=[np.zeros(4, dtype=np.uint32)]), timing=True)
    s.run(until=lambda s: s._last is not None and s._last.text.startswith("ld.global"))
    pend = s.scoreboard()
    assert set(pend) == {"%r1"} and pend["%r1"] > s.sim.env.now
    res = s.finish()
    assert res.outputs[0][0] == 1
    assert "%r1 <- ld.global.u32" in " ".join(s.timing().stalls_of((0, 0, 0), 0)["dependency"])
    assert Session(Launch(ptx=kernel(body), kernel="k", args=[np.zeros(4, dtype=np.uint32)])).timing() is None


def test_cli_summary_with_and_without_timing(capsys):
    path = str(Path(gemm_async.__file__))
    assert main(["run", path]) == 0
    out = capsys.readouterr().out
    assert "[sim] timing (sm_100a):" in out and "tensor:" in out and "unit utilisation:" in out
    assert "mbarrier:" in out
    assert main(["run", path, "--no-timing"]) == 0
    out = capsys.readouterr().out
    assert "1-cycle model" in out and "timing (" not in out
