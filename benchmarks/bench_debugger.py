"""Responsiveness of the debugger on the nvfp4 example (issue 20: a ``step`` or ``print`` answers in under 100 ms,
``reverse-step`` in under 1 s).

    python benchmarks/bench_debugger.py [--steps 60] [--reverse 6] [--checkpoint-every 128]

* ``step`` and ``print``: a :class:`tcsim.session.Session` of ``tcsim.examples.nvfp4_gemm`` (one 128 x 256 tile,
  K = 256, 6 warps, timing off as ``tcsim debug`` runs by default); ``--steps`` single steps at each of three
  places (the start, the middle of the run, the epilogue) and a ``print %r... as f16x2`` at the prompt
  (:class:`tcsim.debugger.prompt.DebugShell`) after each; the median and the worst of each.
* ``reverse-step``: ``tcsim debug tcsim.examples.nvfp4_gemm`` as a subprocess reading commands from a pipe (so
  with its forked checkpoints); ``continue`` to the end, then ``--reverse`` reverse-steps, each timed from the
  command's write to the next prompt (the fork from the checkpoint and the replay included), and the in-process
  replay of a Session (no checkpoints) for comparison.

Prints one line per measurement; exit status 1 when a bound is exceeded.  Figures depend on the machine and its
load (the README names this benchmark instead of quoting them).
"""
from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEP_BOUND, PRINT_BOUND, REVERSE_BOUND = 0.100, 0.100, 1.0


def step_and_print(steps: int) -> dict:
    from tcsim.debugger.prompt import DebugShell
    from tcsim.examples import nvfp4_gemm as ex
    from tcsim.session import Session

    launch = ex.make_launch()
    probe = Session(launch)
    probe.run()
    end = probe.pos
    s = Session(launch)
    out = io.StringIO()
    shell = DebugShell(s, stdin=io.StringIO(""), stdout=out)
    step_t, print_t = [], []
    for where in (0, end // 2, end - 3 * steps - 50):
        s.goto(max(where, s.pos))
        for _ in range(steps):
            t = time.perf_counter()
            r = s.step()
            step_t.append(time.perf_counter() - t)
            if r is None:
                break
            t = time.perf_counter()
            shell.onecmd(f"print %r1 warp {r.warp} as f16x2")
            print_t.append(time.perf_counter() - t)
    return {"step": step_t, "print": print_t, "events": end}


def reverse_cli(n: int, every: int) -> list:
    env = dict(os.environ, TCSIM_DEBUG_HISTORY="")
    p = subprocess.Popen([sys.executable, "-m", "tcsim.cli", "debug", "tcsim.examples.nvfp4_gemm",
                          "--checkpoint-every", str(every)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         cwd=ROOT, env=env)
    fd = p.stdout.fileno()

    def until_prompt() -> str:
        buf = b""
        while not buf.endswith(b"(tcsim) "):
            b = os.read(fd, 65536)
            if not b:
                raise RuntimeError("tcsim debug ended early: " + buf.decode(errors="replace")[-2000:])
            buf += b
        return buf.decode(errors="replace")

    def command(c: str) -> tuple:
        t = time.perf_counter()
        p.stdin.write((c + "\n").encode())
        p.stdin.flush()
        text = until_prompt()
        return time.perf_counter() - t, text

    until_prompt()
    command("continue")
    times = []
    for _ in range(n):
        dt, text = command("reverse-step")
        if "back at position" not in text:
            raise RuntimeError(text)
        times.append(dt)
    p.stdin.write(b"quit\n")
    p.stdin.flush()
    p.wait(timeout=60)
    return times


def reverse_in_process(n: int) -> list:
    from tcsim.examples import nvfp4_gemm as ex
    from tcsim.session import Session
    s = Session(ex.make_launch())
    s.run()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        s.reverse_step()
        out.append(time.perf_counter() - t)
    return out


def line(name: str, xs: list, bound: float | None) -> bool:
    ok = bound is None or max(xs) < bound
    print(f"{name:<34} median {statistics.median(xs) * 1e3:8.1f} ms   worst {max(xs) * 1e3:8.1f} ms   "
          f"({len(xs)} samples)" + ("" if bound is None else f"   bound {bound * 1e3:.0f} ms: "
                                    f"{'ok' if ok else 'EXCEEDED'}"))
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--reverse", type=int, default=6)
    ap.add_argument("--checkpoint-every", type=int, default=128)
    ap.add_argument("--in-process", action="store_true", help="also time reverse-step replaying from the launch")
    args = ap.parse_args(argv)
    sp = step_and_print(args.steps)
    print(f"nvfp4_gemm (128 x 256 x 256, 6 warps, timing off): {sp['events']} events in the run")
    ok = line("step (one warp-instruction)", sp["step"], STEP_BOUND)
    ok &= line("print %r1 as f16x2 (prompt)", sp["print"], PRINT_BOUND)
    ok &= line(f"reverse-step (tcsim debug, ckpt {args.checkpoint_every})", reverse_cli(args.reverse,
                                                                                   args.checkpoint_every),
               REVERSE_BOUND)
    if args.in_process:
        line("reverse-step (Session, from launch)", reverse_in_process(2), None)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
