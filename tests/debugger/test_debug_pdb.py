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


def test_run_pdb_stops_at_an_error_with_the_session_in_scope(capsys):
    """(in process: run_pdb with pdb's streams given)"""
    import io
    import types

    import numpy as np

    from tcsim.cli import _call_check, print_findings, summary
    from tcsim.debugger.hooks import run_pdb
    from tcsim.launch import Launch
    launch = Launch(ptx=FAULT_PTX, block=(32, 1, 1), args=[np.zeros(32, np.uint32)])
    args = types.SimpleNamespace(seed=None, timing=False, max_instructions=None, detect=True)
    out = io.StringIO()
    rc = run_pdb(types.SimpleNamespace(), launch, args, _call_check, summary, print_findings,
                 stdin=io.StringIO("p error.loc.line\np session.done\np session.sim.retired\n"
                                   "p type(error).__name__\nc\n"), stdout=out)
    answers = [line[len("(Pdb) "):] for line in out.getvalue().splitlines() if line.startswith("(Pdb) ")]
    st_line = FAULT_PTX.splitlines().index("  st.global.u32 [%rd3], %r1;") + 1
    assert answers[:4] == [str(st_line), "True", "4", "'MemoryFault'"]    # the store (5th instruction) faulted
    assert "[tcsim --pdb] stopped at position" in out.getvalue() and "out-of-bounds" in out.getvalue()
    assert rc == 1 and "out-of-bounds" in capsys.readouterr().err


def test_breakpoint_in_check_opens_the_prompt_at_the_end():
    """tcsim.breakpoint() where ``result`` and ``launch`` are local variables (a launch file's check): the prompt
    over a session replayed to the end of that run."""
    import importlib.util
    import io

    import tcsim
    from tcsim.launch import run_launch
    spec = importlib.util.spec_from_file_location("er", ROOT / "examples" / "bugs" / "early_release.py")
    er = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(er)
    out = io.StringIO()

    def check(result, launch):
        tcsim.breakpoint(stdin=io.StringIO("info position\nprint %r22 warp 1 lane 0\nx/1uw gmem out_ptr[0]\n"
                                           "quit\n"), stdout=out)
        return True, "checked"

    launch = er.make_launch()
    res = run_launch(launch, timing=False)
    check(res, launch)
    text = out.getvalue()
    assert "[tcsim.breakpoint] early_release at position" in text
    assert f"{res.stats['warp_instructions']} warp-instructions retired" in text   # the whole run, replayed
    assert f"%r22 (CTA (0,0,0) warp 1 lane 0) = {er.CHUNKS}" in text       # the consumer's loop ran all chunks
    assert f"  {int(er.reference(launch)[0])}" in text
