"""Periodic checkpoints for ``tcsim debug``: forked copies of the whole debugger process (gdb's ``checkpoint``).

A simpy simulation holds its warps and async units as generator frames, which cannot be copied inside a Python
process, so reverse execution in :class:`tcsim.session.Session` replays from the launch.  ``tcsim debug`` owns its
process, so it can copy it: every ``every`` events of a run (more sparsely as their number grows), the debugger
forks; the **parent stops** and holds the machine state at that position (a checkpoint), the **child goes on** as
the debugger.  To go back to a position ``p``, the debugger sends the checkpoint at the last position ``<= p``
what it needs (the target, the breakpoints and watchpoints, the schedule, the prompt's history, what to report)
and exits; the checkpoint drops every process forked after it (its child; the rest die with their parents:
``PR_SET_PDEATHSIG``), forks a new debugger that replays the few events from the checkpoint to ``p`` -- the
replay is deterministic, so this is the same state as a replay from the launch -- and keeps holding.  The first
checkpoint is the original process at position 0; when the debugger quits it tells that one, which exits with
the debugger's status.

Only the checkpoints of the current schedule are used (a forced interleaving starts a new run).  Linux only
(``fork``, ``prctl``); elsewhere :meth:`ForkCheckpoints.attach` leaves the session replaying in process.  Commands
read from a pipe or a file are read a byte at a time (:class:`tcsim.debugger.prompt._RawLines`), so the debugger
that takes over reads on exactly where the last one stopped.
"""
from __future__ import annotations

import ctypes
import os
import pickle
import select
import signal
import struct
import sys

PR_SET_PDEATHSIG = 1
#: checkpoints kept before their spacing doubles
DENSE = 32


class Resumed(BaseException):
    """Raised in a debugger forked from a checkpoint, to unwind to the prompt: ``payload`` says what to do."""

    def __init__(self, payload: dict):
        super().__init__("resumed from a checkpoint")
        self.payload = payload


def _die_with_parent(parent: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:          # (the parent died before prctl took effect)
        os._exit(1)
    return True


def _send(fd: int, obj) -> None:
    data = pickle.dumps(obj)
    os.write(fd, struct.pack("<I", len(data)) + data)


def _recv(fd: int):
    head = b""
    while len(head) < 4:
        b = os.read(fd, 4 - len(head))
        if not b:
            return None
        head += b
    (n,) = struct.unpack("<I", head)
    data = b""
    while len(data) < n:
        b = os.read(fd, n - len(data))
        if not b:
            return None
        data += b
    return pickle.loads(data)


class ForkCheckpoints:
    """The checkpoints of one ``tcsim debug`` session (module docstring)."""

    def __init__(self, session, shell, every: int):
        self.s = session
        self.shell = shell
        self.every = max(1, int(every))
        #: position -> (pid of the holding process, write end of its pipe), of the current schedule
        self.chain: dict = {}
        self.epoch = self._epoch_key()
        self.root_fd: int | None = None
        self.enabled = True

    @classmethod
    def attach(cls, session, shell, every: int) -> "ForkCheckpoints | None":
        if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
            return None
        cp = cls(session, shell, every)
        session.on_position = cp.on_position
        session.replayer = cp.replay
        shell.checkpoints = cp
        cp.take()                       # position 0: the original process (the one the shell waits for)
        return cp

    def _epoch_key(self):
        sch = self.s.schedule
        return (self.s.seed, None if sch is None else sch.knobs(), repr(self.s.timing_option))

    def _spacing(self) -> int:
        return self.every << (len(self.chain) // DENSE)

    # ------------------------------------------------------------------------------------------ taking
    def on_position(self, session) -> None:
        if not self.enabled:
            return
        key = self._epoch_key()
        if key != self.epoch:           # a new schedule: the old checkpoints hold another run
            self.epoch = key
            self.chain = {}
        if session.pos in self.chain or session.done:
            return
        below = [p for p in self.chain if p < session.pos]
        last = max(below) if below else None
        if last is None or session.pos - last >= self._spacing():
            self.take()

    def take(self) -> None:
        """Fork: this process stops and holds the current position; the child goes on as the debugger."""
        pos = self.s.pos
        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            if not _die_with_parent(parent):
                self.enabled = False
            self.chain[pos] = (parent, w)
            if self.root_fd is None:
                self.root_fd = w
            return
        self._own_w = w                 # (kept open: a debugger forked from this checkpoint writes to it)
        self._hold(r, pid, pos)

    # ------------------------------------------------------------------------------------------ holding
    def _hold(self, r: int, child: int, pos: int) -> None:
        """Wait as the checkpoint at ``pos``; return only in a new debugger forked from here (by raising
        Resumed)."""
        is_root = self.root_fd is None
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTSTP, signal.SIG_IGN)
        me = os.getpid()
        while True:
            ready, _, _ = select.select([r], [], [], 0.2)
            if ready:
                msg = _recv(r)
                if msg is None:
                    os._exit(1)
                if msg["op"] == "exit":
                    self._kill(child)
                    os._exit(int(msg.get("status", 0)))
                if msg["op"] == "resume":
                    self._kill(child)
                    sys.stdout.flush()
                    pid = os.fork()
                    if pid == 0:
                        if not _die_with_parent(me):
                            self.enabled = False
                        signal.signal(signal.SIGINT, signal.default_int_handler)
                        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
                        # this debugger's chain: the checkpoints up to here (the later ones are gone)
                        self.chain = {p: v for p, v in self.chain.items() if p < pos}
                        self.chain[pos] = (me, self._own_w)
                        if self.root_fd is None:        # (forked from the original process)
                            self.root_fd = self._own_w
                        raise Resumed(msg)
                    child = pid
                continue
            try:
                done, status = os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                done, status = child, 0
            if done == child and is_root:       # the debugger ended without a word: end the session with it
                code = os.waitstatus_to_exitcode(status)
                os._exit(code if code >= 0 else 1)

    @staticmethod
    def _kill(child: int) -> None:
        try:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        except (ProcessLookupError, ChildProcessError):
            pass

    # ------------------------------------------------------------------------------------------ going back
    def replay(self, session, target: int, then) -> None:
        """Session.replayer: continue the session in a new debugger forked from the checkpoint at the last
        position <= ``target`` (this process ends); return when there is none."""
        if not self.enabled or self._epoch_key() != self.epoch:
            return
        below = [p for p in self.chain if p <= target]
        if not below:
            return
        p = max(below)
        _pid, fd = self.chain[p]
        if then is not None and then[0] == "search":    # (reverse-continue searches from the checkpoint itself)
            target = p
        payload = {"op": "resume", "target": target, "then": then, "state": self.shell.state()}
        sys.stdout.flush()
        _send(fd, payload)
        os._exit(0)

    def quit(self, status: int) -> None:
        """The debugger ends: tell the original process, which exits with ``status``."""
        if self.root_fd is not None:
            sys.stdout.flush()
            try:
                _send(self.root_fd, {"op": "exit", "status": status})
            except OSError:
                pass
