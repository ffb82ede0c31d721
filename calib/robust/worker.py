"""A robustness worker: ``python -m calib.robust.worker MEM_BYTES TIME_S`` reads cases (JSON lines) on stdin and
writes one outcome per case (JSON line) on the stdout it started with.

Its address space is limited to ``MEM_BYTES`` (``resource.setrlimit(RLIMIT_AS)``), so a case that allocates
gigabytes gets a ``MemoryError`` (class ``memory``) instead of taking the machine; an interval timer raises
:class:`calib.robust.execute.Hang` after ``TIME_S`` seconds (class ``hang``, with the stack where it was).  After a
hang or a memory error the worker exits (its state may be damaged) and the pool starts another; the pool also
kills a worker that does not answer within ``TIME_S`` + a grace period (a hang in native code).
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path


def _limit_memory(nbytes: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    lim = nbytes if hard == resource.RLIM_INFINITY else min(nbytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (lim, hard))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    mem, limit = int(argv[0]), float(argv[1])
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)                     # stray native writes must not reach the protocol pipe
    os.dup2(devnull, 2)
    from .execute import Hang, execute
    import tcsim.cli
    import tcsim.launch
    del tcsim                               # imported before the limits apply and before the first case's clock

    def on_alarm(signum, frame):
        raise Hang(f"time limit {limit:g} s")

    signal.signal(signal.SIGALRM, on_alarm)
    _limit_memory(mem)
    root = Path(tempfile.mkdtemp(prefix="tcsim_robust_"))
    proto.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        signal.setitimer(signal.ITIMER_REAL, float(case.get("time_limit", limit)))
        t0 = time.perf_counter()
        try:
            out = execute(case, root)
        except Hang as e:                               # raised outside execute's own handler
            from .execute import _exc_outcome
            out = _exc_outcome(e)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        out["id"] = case.get("id")
        out["s"] = round(time.perf_counter() - t0, 4)
        try:
            proto.write(json.dumps(out) + "\n")
        except MemoryError:
            proto.write(json.dumps({"id": case.get("id"), "cls": "memory", "detail": "MemoryError",
                                    "sig": "memory|MemoryError|?"}) + "\n")
        if out["cls"] in ("hang", "memory"):
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
