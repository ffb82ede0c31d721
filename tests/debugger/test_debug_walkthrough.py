"""The README's debugger walkthrough (issue 20, item 4) is what ``tcsim debug`` prints: the transcript block is
replayed command by command through stdin and compared line for line; the forced interleaving it shows reproduces
the wrong output deterministically."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def transcript() -> list:
    """The lines of the fenced block of the README section "Debugging a race with `tcsim debug`"."""
    sec = README[README.index("## Debugging a race with `tcsim debug`"):]
    start = sec.index("```text\n") + len("```text\n")
    return sec[start:sec.index("\n```", start)].splitlines()


def test_the_readme_transcript_is_what_the_debugger_prints():
    lines = transcript()
    assert lines[0].startswith("tcsim debug: early_release:")
    commands = [ln[len("(tcsim) "):] for ln in lines if ln.startswith("(tcsim) ")]
    # the forced interleaving: the producer first and its copies at the earliest completion (the functional
    # preset's default TMA takes a global round trip, 200 cycles, and lands the refill after the read)
    assert {"break finding", "watch smem 0x480:4 as u32", "reverse-continue", "schedule warp 0 first",
            "delay tma early"} <= set(commands)
    env = dict(os.environ, TCSIM_DEBUG_HISTORY="")
    r = subprocess.run([sys.executable, "-m", "tcsim.cli", "debug", "examples/bugs/early_release.py"],
                       input="".join(c + "\n" for c in commands), capture_output=True, text=True, cwd=ROOT,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == lines
    # the story it tells: the default run passes, the forced interleaving reads chunk 3's word and fails
    assert "check: FAIL: 96 of 192 words wrong" in r.stdout


def test_the_walkthrough_prose_cites_cycles_the_transcript_shows():
    # the paragraph after the transcript names cycles of it ("at cycle 454", "(cycle 651)"): each must be one the
    # debugger printed, so a model change that moves them cannot leave the prose stale
    sec = README[README.index("## Debugging a race with `tcsim debug`"):]
    prose = sec[sec.index("Step by step:"):]
    prose = prose[:prose.index("\n\n")]
    cited = re.findall(r"cycle\s+(\d+)", prose)
    shown = set(re.findall(r"cycle (\d+)", "\n".join(transcript())))
    assert cited and set(cited) <= shown, (cited, sorted(shown))

