"""Worker processes that run robustness cases under time and memory limits (:mod:`.worker`), many cases each.

:func:`run_cases` hands cases to ``jobs`` workers and yields ``(case, outcome)`` as they finish.  A worker that
does not answer within its case's time limit plus ``GRACE_S`` is killed (``hang``); one that dies without
answering is a ``crash`` (or ``memory`` when the kernel's out-of-memory killer took it); either way a new worker
takes its place.  Workers are replaced every ``recycle`` cases too, so leaks of one case cannot reach another
campaign's later cases.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GRACE_S = 10.0
DEFAULT_MEM = 3 << 30


class _Worker:
    def __init__(self, mem: int, time_limit: float):
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("PYTHONHASHSEED", "0")
        self.proc = subprocess.Popen([sys.executable, "-m", "calib.robust.worker", str(mem), str(time_limit)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     cwd=str(REPO), env=env, start_new_session=True)
        self.buf = b""
        self.case = None
        self.deadline = None
        self.done = 0
        self.ready = False

    def send(self, case: dict, limit: float) -> None:
        self.case = case
        self.limit = limit
        self.deadline = time.monotonic() + limit + GRACE_S + (30.0 if not self.ready else 0.0)
        self.proc.stdin.write((json.dumps(case) + "\n").encode())
        self.proc.stdin.flush()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()


class Pool:
    """``jobs`` long-lived workers; :meth:`imap` runs an iterable of cases on them (workers survive between calls,
    so a minimisation's many small batches do not pay the start-up each time)."""

    def __init__(self, jobs: int = 1, time_limit: float = 10.0, mem: int = DEFAULT_MEM, recycle: int = 400):
        self.jobs, self.time_limit, self.mem, self.recycle = max(1, jobs), time_limit, mem, recycle
        self.sel = selectors.DefaultSelector()
        self.workers: list[_Worker] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        for w in list(self.workers):
            self._retire(w, kill=True)

    def _spawn(self):
        w = _Worker(self.mem, self.time_limit)
        self.sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        self.workers.append(w)
        return w

    def _retire(self, w, kill=False):
        self.sel.unregister(w.proc.stdout)
        self.workers.remove(w)
        w.kill() if kill else w.close()

    def imap(self, cases):
        """Yield ``(case, outcome)`` for every case (in completion order)."""
        it = iter(cases)
        pending = True

        def feed(w):
            nonlocal pending
            if not pending:
                return False
            try:
                c = next(it)
            except StopIteration:
                pending = False
                return False
            w.send(c, float(c.get("time_limit", self.time_limit)))
            return True

        for w in list(self.workers):
            if w.case is None:
                feed(w)
        while pending and len(self.workers) < self.jobs:
            if not feed(self._spawn()):
                break
        while True:
            busy = [w for w in self.workers if w.case is not None]
            if not busy:
                return
            now = time.monotonic()
            timeout = max(0.0, min(w.deadline for w in busy) - now)
            for key, _ in self.sel.select(timeout=min(timeout, 1.0)):
                w = key.data
                chunk = os.read(w.proc.stdout.fileno(), 1 << 20)
                if not chunk:                                   # the worker died
                    rc = w.proc.wait()
                    c = w.case
                    self._retire(w)
                    if c is not None:
                        cls = "memory" if rc == -signal.SIGKILL else "crash"
                        yield c, {"id": c.get("id"), "cls": cls, "detail": f"worker exited with {rc}",
                                  "sig": f"{cls}|exit {rc}"}
                    if pending:
                        feed(self._spawn())
                    continue
                w.buf += chunk
                while b"\n" in w.buf:
                    line, w.buf = w.buf.split(b"\n", 1)
                    msg = json.loads(line)
                    if "ready" in msg:               # imports done: the case's clock starts now
                        w.ready = True
                        if w.case is not None:
                            w.deadline = time.monotonic() + w.limit + GRACE_S
                        continue
                    c = w.case
                    w.case = None
                    w.done += 1
                    yield c, msg
                    if msg.get("cls") in ("hang", "memory") or w.done >= self.recycle:
                        self._retire(w, kill=msg.get("cls") in ("hang", "memory"))
                        if pending:
                            feed(self._spawn())
                    else:
                        feed(w)
            now = time.monotonic()
            for w in [w for w in self.workers if w.case is not None and now > w.deadline]:
                c = w.case
                self._retire(w, kill=True)
                yield c, {"id": c.get("id"), "cls": "hang", "detail": "no answer within the time limit (killed)",
                          "sig": f"hang|{c.get('kind')}"}
                if pending:
                    feed(self._spawn())

    def map(self, cases) -> list:
        """Outcomes in the order of ``cases``."""
        cases = [dict(c, _slot=k) for k, c in enumerate(cases)]
        out = [None] * len(cases)
        for c, o in self.imap(cases):
            out[c["_slot"]] = o
        return out


def run_cases(cases, *, jobs: int = 1, time_limit: float = 10.0, mem: int = DEFAULT_MEM, recycle: int = 400):
    """Yield ``(case, outcome)`` for every case of the iterable ``cases`` (each a dict, see :mod:`.execute`)."""
    with Pool(jobs, time_limit, mem, recycle) as pool:
        yield from pool.imap(cases)
