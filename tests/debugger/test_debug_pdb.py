"""pdb integration (issue 20, item 3): ``tcsim run --pdb`` stops in pdb at the first finding or error with the
Session in scope; ``tcsim.breakpoint()`` in a launch file's check() opens the debugger prompt at the run's end."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FAULT_PTX = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry fault(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r1, 64;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
"""


def _run(args, stdin, cwd=ROOT):
    env = dict(os.environ, TCSIM_DEBUG_HISTORY="", PYTHONPATH=str(ROOT / "examples" / "bugs"))
    return subprocess.run([sys.executable, "-m", "tcsim.cli", *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, timeout=300, env=env)


def test_run_pdb_stops_at_the_first_finding_with_the_session_in_scope():
    r = _run(["run", "examples/bugs/early_release.py", "--no-timing", "--pdb"],
             "p finding.cls\np float(session.sim.env.now)\np float(finding.sides[-1].cycle)\np type(session).__name__\nc\n")
    out = r.stdout
    assert "[tcsim --pdb] stopped at position" in out and "[class 2:" in out
    answers = [line[len("(Pdb) "):] for line in out.splitlines() if line.startswith("(Pdb) ")]
    assert answers[0] == "2"
    assert answers[1] == answers[2]                          # stopped in the cycle of the access that exposed it
    assert answers[3] == "'Session'"
    assert "[sim] PASS" in out and "1 x class 2" in out      # `c` ran the launch on to its end
    assert r.returncode == 1                                 # (a finding: as `tcsim run`)


def test_run_pdb_stops_at_an_error_and_pm_reaches_the_semantics(tmp_path):
    (tmp_path / "fault.py").write_text(
        "import numpy as np\nfrom tcsim.launch import Launch\n"
        f"PTX = {FAULT_PTX!r}\n"
        "def make_launch():\n    return Launch(ptx=PTX, block=(32, 1, 1), args=[np.zeros(32, np.uint32)])\n")
    r = _run(["run", str(tmp_path / "fault.py"), "--no-timing", "--pdb"],
             "p error.loc.line\np session.done\np session.sim.retired\nc\n")
    answers = [line[len("(Pdb) "):] for line in r.stdout.splitlines() if line.startswith("(Pdb) ")]
    st_line = FAULT_PTX.splitlines().index("  st.global.u32 [%rd3], %r1;") + 1
    assert answers[:3] == [str(st_line), "True", "4"]       # the store faulted: the 5th instruction
    assert "out-of-bounds" in r.stderr and r.returncode == 1


def test_breakpoint_in_check_opens_the_prompt_at_the_end(tmp_path):
    (tmp_path / "launch_bp.py").write_text(
        "import tcsim\nfrom early_release import make_launch, reference\n"
        "def check(result, launch):\n"
        "    tcsim.breakpoint()\n"
        "    return bool((result.outputs[1] == reference(launch)).all()), 'checked'\n")
    r = _run(["run", str(tmp_path / "launch_bp.py"), "--no-timing", "--no-detect"],
             "info position\nprint %r22 warp 1 lane 0\nx/1uw gmem out_ptr[0]\nquit\n")
    out = r.stdout
    assert "[tcsim.breakpoint] early_release at position" in out
    import importlib.util
    spec = importlib.util.spec_from_file_location("er", ROOT / "examples" / "bugs" / "early_release.py")
    er = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(er)
    launch = er.make_launch()
    assert "374 warp-instructions retired" in out            # the whole run, replayed (seed, schedule, timing)
    assert f"%r22 (CTA (0,0,0) warp 1 lane 0) = {er.CHUNKS}" in out       # the consumer's loop ran all chunks
    assert f"  {int(er.reference(launch)[0])}" in out
    assert "[sim] PASS: checked" in out
