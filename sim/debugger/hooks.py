"""pdb integration: ``tcsim run LAUNCH.py --pdb`` and ``tcsim.breakpoint()``.

* ``tcsim run --pdb`` runs the launch under a :class:`tcsim.session.Session` and stops in pdb at the first finding
  or error, in a frame where ``session`` (the Session, at that position), ``finding`` and ``error`` are local
  variables and ``pm()`` opens a post-mortem of the error inside the semantics function that raised it.  ``c``
  continues the run (to the next finding or error), ``q`` ends it.
* ``tcsim.breakpoint()`` inside a launch file's ``check(result, launch)``, a test or a notebook opens the
  ``tcsim debug`` prompt at the current state: the Session given, else the caller's local Session, else a
  session of the caller's ``launch`` replayed to the end of the run that produced its ``result`` (same seed,
  schedule and timing), else the Session most recently stepped in this process.
"""
from __future__ import annotations

import bdb
import pdb
import sys

from tcsim.isa.errors import TcsimError


def _pdb_stop(session, finding, error, stdin=None, stdout=None):
    """The frame ``tcsim run --pdb`` stops in: ``session``, ``finding``, ``error`` and ``pm()`` are in scope
    (``stdin`` / ``stdout``: pdb's streams, default the terminal's)."""
    def pm():
        """Post-mortem of the error, in the semantics function that raised it."""
        if error is None or error.__traceback__ is None:
            print("no error to examine (the run stopped at a finding)")
            return
        pdb.post_mortem(error.__traceback__)
    what = f"finding:\n{finding.format()}" if finding is not None else f"error:\n{error}"
    out = stdout or sys.stdout
    print(f"[tcsim --pdb] stopped at position {session.pos} (cycle {session.sim.env.now:g}) on a {what}\n"
          f"[tcsim --pdb] in scope: session (tcsim.session.Session), finding, error, pm(); `c` goes on, `q` "
          f"ends the run", file=out)
    out.flush()
    debugger = pdb.Pdb(stdin=stdin, stdout=stdout)
    if stdin is not None:
        debugger.use_rawinput = False
    debugger.set_trace(sys._getframe())
    return session     # (pdb shows this line: `session.where()`, `session.reg('%r5', warp=1)` ...)


def run_pdb(mod, launch, args, call_check, summary, print_findings, stdin=None, stdout=None) -> int:
    """``tcsim run LAUNCH.py --pdb``: exit status as ``tcsim run``'s (``call_check`` / ``summary`` /
    ``print_findings``: the CLI's; ``stdin`` / ``stdout``: pdb's streams)."""
    from tcsim.session import Session
    s = Session(launch, seed=args.seed, timing=getattr(args, "timing", True),
                max_instructions=args.max_instructions, detect=getattr(args, "detect", True))
    s.break_finding()
    while True:
        try:
            st = s.cont()
        except TcsimError as e:
            try:
                _pdb_stop(s, None, e, stdin, stdout)
            except (SystemExit, bdb.BdbQuit):
                pass
            print(str(e), file=sys.stderr)
            return 1
        if st.reason == "finding":
            try:
                _pdb_stop(s, st.finding, None, stdin, stdout)
            except (SystemExit, bdb.BdbQuit):
                print("[tcsim --pdb] run ended at the user's request")
                return 1
            continue
        break
    result = s.finish()
    ok, msg = call_check(mod, result, launch)
    print(f"[sim] {'PASS' if ok else 'FAIL'}: {msg}")
    print(f"[sim] {summary(result)}")
    print_findings(result.findings)
    return 0 if ok and not any(f.severity != "lint" for f in result.findings) else 1


def open_prompt(obj=None, launch=None, frame=None, stdin=None, stdout=None) -> None:
    """``tcsim.breakpoint()``: the ``tcsim debug`` prompt at the current state (module docstring); ``stdin`` /
    ``stdout``: the prompt's streams (default the terminal's)."""
    from tcsim.launch import Launch
    from tcsim.session import DebugError, Session, current
    from .prompt import DebugShell, history_file

    s = obj if isinstance(obj, Session) else None
    result = obj if obj is not None and hasattr(obj, "simulation") else None
    if s is None and frame is not None and result is None:
        for v in list(frame.f_locals.values()):
            if isinstance(v, Session):
                s = v
                break
        if s is None:
            result = next((v for v in frame.f_locals.values() if hasattr(v, "simulation") and
                           hasattr(v, "outputs")), None)
            if launch is None:
                launch = next((v for v in frame.f_locals.values() if isinstance(v, Launch)), None)
    if s is None and result is not None:
        if launch is None:
            raise DebugError("tcsim.breakpoint(result) needs the launch too: tcsim.breakpoint(result, launch)")
        sim = result.simulation
        s = Session(launch, seed=sim.seed, schedule=sim.schedule, timing=sim.arch_config)
        s.run()
    if s is None:
        s = current()
    if s is None:
        raise DebugError("tcsim.breakpoint(): no Session here (pass one, or call it where a Session or a result "
                         "and its launch are local variables, e.g. in check(result, launch))")
    interactive = stdin is None and sys.stdin.isatty()
    shell = DebugShell(s, stdin=stdin, stdout=stdout, history=history_file() if interactive else None)
    shell.out(f"[tcsim.breakpoint] {s.launch.name or s.sim.program.kernel.name} at position {s.pos} "
              f"(cycle {s.sim.env.now:g}); `quit` returns to the program")
    shell.cmdloop()
