"""The tcsim command line: check, run, demo — exit codes and diagnostics."""
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tcsim.cli import main
from tcsim.observe import read_trace

ROOT = Path(__file__).resolve().parents[2]
HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_check_accepts_executable_ptx(tmp_path, capsys):
    p = write(tmp_path, "ok.ptx", HEAD + ".visible .entry k(.param .u64 out)\n{\n .reg .b64 %rd<2>;\n"
              " ld.param.u64 %rd1, [out];\n ret;\n}\n")
    assert main(["check", str(p)]) == 0
    assert "OK" in capsys.readouterr().out


def test_check_reports_each_unsupported_instruction_with_location(tmp_path, capsys):
    p = write(tmp_path, "bad.ptx", HEAD + ".visible .entry k(.param .u64 out)\n{\n .reg .b32 %r<4>;\n"
              " .reg .b64 %rd<4>;\n suld.b.1d.b32.trap {%r1}, [%rd1, {%r2}];\n"
              " sust.b.1d.b32.trap [%rd1, {%r2}], {%r1};\n ret;\n}\n")
    assert main(["check", str(p)]) == 1
    out = capsys.readouterr().out
    assert f"{p}:8:2: unsupported: instruction suld.b.1d.b32.trap" in out
    assert f"{p}:9:2: unsupported: instruction sust.b.1d.b32.trap" in out


def test_check_reports_syntax_errors(tmp_path, capsys):
    p = write(tmp_path, "malformed.ptx", HEAD + ".visible .entry k()\n{\n ret\n}\n")
    assert main(["check", str(p)]) == 1
    assert f"{p}:" in capsys.readouterr().out


def test_check_missing_file_and_usage(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.ptx")]) == 1
    assert main(["check"]) == 2


def test_check_list_names_opcodes(capsys):
    assert main(["check", "--list"]) == 0
    ops = capsys.readouterr().out.split()
    assert {"ld", "st", "mov", "bra", "cvta"} <= set(ops)


def test_run_launch_file_with_trace(tmp_path, capsys):
    ptx = write(tmp_path, "k.ptx", HEAD + ".visible .entry k(.param .u64 out)\n{\n .reg .b32 %r<2>;\n"
                " .reg .b64 %rd<2>;\n ld.param.u64 %rd1, [out];\n mov.u32 %r1, %tid.x;\n"
                " st.global.u32 [%rd1], %r1;\n ret;\n}\n")
    launch = write(tmp_path, "launch_k.py", textwrap.dedent(f"""
        import numpy as np
        from tcsim.launch import Launch
        def make_launch():
            return Launch(ptx={str(ptx)!r}, block=(32, 1, 1), args=[np.zeros(1, np.uint32)])
        def check(result, launch):
            return int(result.outputs[0][0]) == 0, "out[0] = %d" % result.outputs[0][0]
    """))
    trace = tmp_path / "t.jsonl"
    assert main(["run", str(launch), "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "PASS: out[0] = 0" in out and "warp-instructions" in out
    recs = list(read_trace(str(trace)))
    assert any(r["kind"] == "inst" for r in recs)


def test_run_reports_failed_check_and_runtime_fault(tmp_path, capsys):
    ptx = write(tmp_path, "k.ptx", HEAD + ".visible .entry k(.param .u64 out)\n{\n .reg .b32 %r<2>;\n"
                " .reg .b64 %rd<2>;\n ld.param.u64 %rd1, [out];\n st.global.u32 [%rd1+64], %r1;\n ret;\n}\n")
    launch = write(tmp_path, "launch_bad.py", textwrap.dedent(f"""
        import numpy as np
        from tcsim.launch import Launch
        LAUNCH = Launch(ptx={str(ptx)!r}, args=[np.zeros(1, np.uint32)])
    """))
    assert main(["run", str(launch)]) == 1
    err = capsys.readouterr().err
    assert f"{ptx}:9:2: memory fault: out-of-bounds global write" in err
    assert main(["run", str(tmp_path / "missing.py")]) == 2


def test_demo_runs_and_passes(capsys):
    pytest.importorskip("tcsim.numerics.tensor_core")
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "bit-exact" in out


DEADLOCK = HEAD + """.visible .entry k()
{
 .reg .pred %p<2>;
 .reg .b32 %r<4>;
 .shared .align 8 .b64 bar;
 mov.u32 %r1, %tid.x;
 setp.ne.u32 %p1, %r1, 0;
 @%p1 bra WAIT;
 mbarrier.init.shared::cta.b64 [bar], 2;
WAIT:
 bar.sync 0;
 mbarrier.arrive.shared::cta.b64 _, [bar];
LOOP:
 mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
 @!%p1 bra LOOP;
 ret;
}
"""


def test_run_reports_deadlock_with_barrier_and_phase(tmp_path, capsys):
    # one thread arrives once on an mbarrier that expects 2 arrivals, then waits for phase 0 forever
    ptx = write(tmp_path, "dead.ptx", DEADLOCK)
    launch = write(tmp_path, "launch_dead.py", textwrap.dedent(f"""
        from tcsim.launch import Launch
        LAUNCH = Launch(ptx={str(ptx)!r}, block=(1, 1, 1))
    """))
    assert main(["run", str(launch)]) == 1
    err = capsys.readouterr().err
    assert "deadlock" in err and f"{ptx}:" in err
    assert "warp 0" in err and "mbarrier" in err and "phase 0" in err and "1/2 arrivals pending" in err


_K = HEAD + ".visible .entry k(.param .u64 out)\n{{\n .reg .pred %p<2>;\n .reg .b32 %r<4>;\n .reg .b64 %rd<4>;\n" \
    " .shared .align 16 .b8 smem[64];\n{body}\n ret;\n}}\n"
_DIAG_CASES = {
    "malformed": (HEAD + ".visible .entry k(.param .u64 out)\n{\n ret\n}\n", "np.zeros(1, np.uint32)",
                  ["syntax error"]),
    "unsupported": (_K.format(body=" suld.b.1d.b32.trap {%r1}, [%rd1, {%r2}];"), "np.zeros(1, np.uint32)",
                    ["unsupported: instruction suld.b.1d.b32.trap"]),
    "argcount": (_K.format(body=""), "", ["launch error", "takes 1 parameters"]),
    "argtype": (_K.format(body=""), "3.5", ["launch error", "must be an integer"]),
    # user shared bytes start at window offset 0x400 (tests/hw/golden_h100/address_layout.json)
    "smem_oob": (_K.format(body=" mov.u32 %r1, smem;\n ld.shared.u32 %r2, [%r1+64];"), "np.zeros(1, np.uint32)",
                 ["memory fault", "out-of-bounds shared memory", "warp 0", "Expected: offsets in [0x400, 0x43c]"]),
    "misaligned": (_K.format(body=" mov.u32 %r1, smem;\n ld.shared.v4.u32 {%r0, %r1, %r2, %r3}, [%r1+8];"),
                   "np.zeros(1, np.uint32)", ["memory fault", "misaligned", "aligned to 16 bytes"]),
}


@pytest.mark.parametrize("case", sorted(_DIAG_CASES))
def test_cli_diagnostics_exit_nonzero_with_location(case, tmp_path, capsys):
    text, arg, needles = _DIAG_CASES[case]
    ptx = write(tmp_path, f"{case}.ptx", text)
    launch = write(tmp_path, f"launch_{case}.py", textwrap.dedent(f"""
        import numpy as np
        from tcsim.launch import Launch
        LAUNCH = Launch(ptx={str(ptx)!r}, args=[{arg}])
    """))
    assert main(["run", str(launch)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err            # one paragraph
    assert f"{ptx}:" in err
    for n in needles:
        assert n in err, (n, err)


def test_compare_outputs_reports_first_difference():
    from tcsim.cli import compare_outputs
    a = np.arange(6, dtype=np.float32)
    b = a.copy()
    assert compare_outputs([a, None], [b, None]) == []
    b[4] = -0.0 if a[4] == 0 else np.float32(4.5)
    assert compare_outputs([a], [b]) == ["argument 0: 1 of 6 elements differ; first at flat index 4: "
                                         f"{a[4]!r} vs {b[4]!r}"]
    z = np.zeros(1, np.float32)
    nz = np.array([-0.0], np.float32)
    assert compare_outputs([z], [nz])          # -0 vs +0 differ bit for bit
    assert "float32[6] vs int32[6]" in compare_outputs([a], [a.view(np.int32)])[0]


def test_backend_gpu_without_gpu_is_one_line(tmp_path, capsys, monkeypatch):
    import tcsim.hw.launcher as L

    def unavailable(launch, **kw):
        raise L.GpuUnavailable("no usable CUDA driver/GPU here")
    monkeypatch.setattr(L, "run_on_gpu", unavailable)
    assert main(["demo", "--backend", "gpu"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "tcsim: the GPU back end cannot run here: no usable CUDA driver/GPU here"
