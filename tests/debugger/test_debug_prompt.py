"""``tcsim debug`` (issue 20, item 1): every command, driven by a stdin script (in process, and as a subprocess
with its forked checkpoints) and through a pseudo-terminal (pexpect: the prompt, tab completion, history); bad
usage gets a one-line message, never a traceback.  Values shown are checked against the launch's inputs or the
kernel's arithmetic."""
from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tcsim.debugger.prompt import DebugShell
from tcsim.session import Session

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = "examples/bugs/early_release.py"
spec = importlib.util.spec_from_file_location("early_release", ROOT / LAUNCH)
ER = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ER)
PTX = (ROOT / "examples" / "bugs" / "early_release.ptx").read_text().splitlines()
LD = next(i + 1 for i, s in enumerate(PTX) if "ld.shared.u32 \t%r32" in s)
COPY = next(i + 1 for i, s in enumerate(PTX) if "\tcp.async.bulk.shared::cluster" in s)
SRC = ER.make_launch().args[0]


def drive(script: str, session=None, check=None) -> str:
    s = session or Session(ER.make_launch())
    out = io.StringIO()
    shell = DebugShell(s, stdin=io.StringIO(script), stdout=out, check=check)
    shell.cmdloop()
    return out.getvalue()


def answers(transcript: str) -> dict:
    """command -> what it printed (the last occurrence)."""
    got, cur = {}, None
    for line in transcript.splitlines():
        if line.startswith("(tcsim) "):
            cur = line[len("(tcsim) "):]
            got[cur] = []
        elif cur is not None:
            got[cur].append(line)
    return {k: "\n".join(v) for k, v in got.items()}


def test_every_command_in_process():
    script = f"""break {LD} if %r22 == 1 warp 1
tbreak {COPY}
info breakpoints
continue
async
continue
print %r22
print %r32 lane 5
print %r32 warp 1 lane 5 as f16x2
x/2xw smem 0x4a0
x/2uw gmem in_ptr[1]
x/1dw gmem in_ptr
where
info warps
mbarriers
delete 1
watch smem 0x480:8 as u32
watch gmem out_ptr[40]
watch mbarrier empty_bar+8
watch tmem 0:32 0:8
info watchpoints
continue
continue
reverse-continue
reverse-step
step
step 2 warp 0
next
next warp 1
info position
info schedule
info checkpoints
delete
break finding 2
continue
info findings
goto 10
list {LD}
run
schedule warp 0 first
info schedule
delay tma late
info schedule
schedule default
set verbose on
quit
"""
    t = drive(script, check=ER.check)
    a = answers(t)
    assert "Traceback" not in t
    assert a[f"break {LD} if %r22 == 1 warp 1"].startswith(f"Breakpoint 1: break line {LD} warp 1 if %r22 == 1")
    assert "2: tbreak line" in a["info breakpoints"]
    # the tbreak at the bulk copy fires first (chunk 0 issued), then goes away
    assert a["continue"]                                   # (the last continue: the finding)
    assert "tma" in a["async"] and f"{COPY}" in a["async"]
    lane5 = int(SRC[32 + 5])                               # chunk 1, lane 5: the consumer read it at line LD
    assert f"(CTA (0,0,0) warp 1 lane 5) = {lane5} " in a["print %r32 lane 5"]
    assert "(" in a["print %r32 warp 1 lane 5 as f16x2"] and "," in a["print %r32 warp 1 lane 5 as f16x2"]
    assert "[ 0] 1" in a["print %r22"].replace("  ", " ") or "] 1" in a["print %r22"]
    assert a["x/2xw smem 0x4a0"] == f"0x4a0:  0x{int(SRC[8]):08x}  0x{int(SRC[9]):08x}"   # stage 0 still chunk 0
    assert a["x/2uw gmem in_ptr[1]"].endswith(f"{int(SRC[1])}  {int(SRC[2])}")
    assert a["x/1dw gmem in_ptr"].endswith(f"{int(SRC[0].view(np.int32))}")            # the whole argument
    assert "waiting" in a["where"] or "runnable" in a["where"]
    assert a["where"] == a["info warps"]
    assert "full_bar+8" in a["mbarriers"] and "32/32" in a["mbarriers"]
    assert a["watch smem 0x480:8 as u32"].startswith("Watchpoint 3: smem 0x480:8")
    assert "no TMEM allocated yet" in a["watch tmem 0:32 0:8"]
    assert "out_ptr[40]" in a["info watchpoints"] and "empty_bar+8" in a["info watchpoints"]
    assert "back at position" in a["reverse-step"]
    assert "warp 0" in a["step 2 warp 0"]
    assert a["info position"].startswith("position ")
    assert a["info checkpoints"].startswith("no checkpoints")
    assert "[class 2: stage released while a sibling still reads it]" in a["info findings"]
    assert a["goto 10"].startswith("at position 10")
    assert f">{LD:5}" in a[f"list {LD}"] and "ld.shared.u32" in a[f"list {LD}"]
    assert "restarted: position 0" in a["run"]
    assert "warp 0 first" in a["info schedule"] or "tma late" in a["info schedule"]
    assert "the run restarted" in a["schedule default"]


def test_watch_stops_show_writers_and_the_check_runs_at_the_end():
    t = drive("watch gmem out_ptr[33]\ncontinue\ndelete\ncontinue\nquit\n", check=ER.check)
    want = (3 * int(SRC[33]) + 1) % 2**32
    store = next(i + 1 for i, s in enumerate(PTX) if "st.global.u32" in s)
    # out[33] is chunk 1's element 1: lane 1 of the consumer warp stores it
    assert f"written by line {store} `st.global.u32 [%rd8], %r33;` (warp 1 lane 1," in t
    assert "old: 0" in t and f"new: {want}" in t
    assert "the kernel exited" in t and "check: PASS" in t


def test_bad_usage_gets_a_message_not_a_traceback():
    bad = ["break", "break 30", "break 99999", f"break {LD} if %r22 ==", f"break {LD} warp 9", "break finding 77",
           "tbreak x", "delete 42", "watch", "watch smem", "watch smem 0x0:4", "watch gmem nosuch[1]",
           "watch gmem out_ptr[99999]", "watch tmem 0:200 0:1", "watch mbarrier nosuch", "step 0", "step x",
           "step 1 warp 7", "next warp 9", "continue now", "reverse-step 0", "reverse-step 5", "reverse-continue",
           "info", "info nothing", "print", "print %r99", "print %r1 warp 7", "print %r1 lane 40",
           "print %r1 as f99", "x/4xw", "x/4xw heap 0", "x/4xw smem 0x10", "x/2fb smem 0x480",
           "x/1xw gmem 0x10", "tmem", "tmem 0:1 0:1", "mbarriers cta 3", "schedule warp 9 first",
           "schedule warp 0", "delay dma", "delay tma soon", "goto -1", "goto x", "list a", "set verbose maybe",
           "frobnicate", "rev"]
    t = drive("\n".join(bad) + "\nquit\n")
    a = answers(t)
    assert "Traceback" not in t
    for cmd in bad:
        msg = a[cmd]
        assert msg and len(msg.splitlines()) <= 2, (cmd, msg)
        assert re.match(r"(usage: |.*debugger error: |unknown command |.*error: )", msg), (cmd, msg)
    assert "no instruction" in a["break 30"] and "nearest" in a["break 30"]
    assert "2 warps (0-1)" in a["print %r1 warp 7"]
    assert "did you mean: reverse_continue, reverse_step" in a["rev"]


def _debug(args, stdin: str, timeout=240):
    env = dict(os.environ, TCSIM_DEBUG_HISTORY="")
    return subprocess.run([sys.executable, "-m", "tcsim.cli", "debug", *args], input=stdin, capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout, env=env)


def test_stdin_script_with_forked_checkpoints():
    """A subprocess reading commands from a pipe: going back forks a new debugger from a checkpoint, which reads
    on exactly where the last one stopped, and the session's exit status is the original process's."""
    script = f"""set verbose on
break {LD} warp 1
continue
continue
continue
info checkpoints
reverse-step
print %r32 warp 1 lane 0
reverse-continue
print %r22 warp 1 lane 0
run
info position
quit
"""
    r = _debug([LAUNCH, "--checkpoint-every", "40"], script)
    assert r.returncode == 0, r.stderr
    a = answers(r.stdout)
    assert "Traceback" not in r.stdout + r.stderr
    assert re.search(r"checkpoints at positions 0, 40, 80, 120, ", a["info checkpoints"])
    assert "from the checkpoint at position" in a["reverse-step"]
    # reverse-continue: back to the second stop of the breakpoint (chunk 1)
    assert a["reverse-continue"].startswith("Breakpoint 1:")
    assert a["print %r22 warp 1 lane 0"].endswith("= 1")
    assert a["info position"].startswith("position 0,")
    assert r.stdout.count("(tcsim) ") == script.count("\n")          # every command read once, in order


def test_pseudo_terminal_prompt_completion_and_history(tmp_path):
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ, TCSIM_DEBUG_HISTORY=str(tmp_path / "hist"), TERM="dumb")
    child = pexpect.spawn(sys.executable, ["-m", "tcsim.cli", "debug", LAUNCH, "--checkpoint-every", "64"],
                          cwd=str(ROOT), env=env, encoding="utf-8", timeout=60)
    try:
        child.expect_exact("(tcsim) ")
        child.send("rever\t")                                # completion: reverse-step / reverse-continue
        child.expect_exact("se-")
        child.send("c\t")
        child.expect_exact("ontinue")
        child.sendcontrol("u")
        child.send("info war\t")                             # an argument: info warps
        child.expect_exact("ps")
        child.sendline("")
        child.expect_exact("runnable")
        child.expect_exact("(tcsim) ")
        child.sendline(f"break {LD} warp 1")
        child.expect_exact(f"Breakpoint 1: break line {LD} warp 1")
        child.expect_exact("(tcsim) ")
        child.sendline("cont")
        child.expect(f"retired line {LD}")
        child.expect_exact("(tcsim) ")
        child.sendline("print %r32 lane 2")
        child.expect(rf"lane 2\) = {int(SRC[2])} ")
        child.expect_exact("(tcsim) ")
        child.sendline("c")
        child.expect(f"retired line {LD}")
        child.expect_exact("(tcsim) ")
        child.sendcontrol("p")                               # history (previous-history, twice): `c`, then
        child.sendcontrol("p")                               # `print %r32 lane 2`
        child.sendline("")
        child.expect(rf"lane 2\) = {int(SRC[32 + 2])} ")     # chunk 1 now
        child.expect_exact("(tcsim) ")
        child.sendline("reverse-step")
        child.expect("back at position")
        child.expect_exact("(tcsim) ")
        child.sendline("print %r32 warp 1 lane 2")           # (a debugger forked from a checkpoint answers)
        child.expect(rf"lane 2\) = {int(SRC[2])} ")
        child.expect_exact("(tcsim) ")
        child.sendline("quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "print %r32 lane 2" in (tmp_path / "hist").read_text()


@pytest.mark.slow
def test_ctrl_c_stops_a_long_continue_at_a_consistent_position():
    """Ctrl-C in the middle of an event: the debugger replays back to the last whole event (the checkpoint
    holders ignore SIGINT) and goes on from there."""
    pexpect = pytest.importorskip("pexpect")
    import time
    env = dict(os.environ, TCSIM_DEBUG_HISTORY="", TERM="dumb")
    child = pexpect.spawn(sys.executable, ["-m", "tcsim.cli", "debug", "tcsim.examples.nvfp4_gemm"], cwd=str(ROOT),
                          env=env, encoding="utf-8", timeout=120)
    try:
        child.expect_exact("(tcsim) ")
        child.sendline("continue")
        time.sleep(3)
        child.sendintr()
        child.expect(r"interrupted; back to position (\d+)")
        pos = int(child.match.group(1))
        child.expect_exact("(tcsim) ")
        child.sendline("info position")
        child.expect(rf"position {pos}, ")
        child.expect_exact("(tcsim) ")
        child.sendline("continue")
        child.expect("check: PASS")
        child.expect_exact("(tcsim) ")
        child.sendline("quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
