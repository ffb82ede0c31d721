"""Typed, source-located diagnostics shared by the front end, the simulator and the GPU back end.

Every problem a user can cause (malformed PTX, an instruction tcsim cannot execute, a bad launch argument,
an out-of-bounds or misaligned access, a deadlock, a runaway kernel) is raised as a subclass of
:class:`TcsimError`.  ``str(err)`` is a one-paragraph diagnostic: where (file:line:col, CTA/warp/lane),
what happened, and what was expected.  The CLI prints it and exits non-zero; Python callers can inspect the
fields.  Internal bugs stay ordinary Python exceptions so they keep their tracebacks.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """A position in a PTX file (1-based line and column) plus the text of that line."""

    file: str
    line: int
    col: int
    text: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


#: how a real GPU ends a launch for the same event (:attr:`TcsimError.gpu_error`): the CUDA error names the
#: driver reports, plus ``HANG`` (the kernel never finishes; no error is ever reported)
ILLEGAL_INSTRUCTION = "CUDA_ERROR_ILLEGAL_INSTRUCTION"
MISALIGNED_ADDRESS = "CUDA_ERROR_MISALIGNED_ADDRESS"
ILLEGAL_ADDRESS = "CUDA_ERROR_ILLEGAL_ADDRESS"
LAUNCH_FAILED = "CUDA_ERROR_LAUNCH_FAILED"
DRIVER_REFUSAL = "CUDA_ERROR_INVALID_VALUE"        # the driver refuses a call (cuTensorMapEncodeTiled, ...)
HANG = "hang"


class TcsimError(Exception):
    """Base class of every user-facing diagnostic.

    ``where`` holds execution context (e.g. ``"cta (0,0,0) warp 1 lanes 3,7"``) when the error arises while
    running; ``loc`` is the PTX position; ``user_loc`` the CUDA/Triton source position from ``.loc``.
    ``gpu_error`` is how a real GPU ends the launch for the same event (one of the CUDA error names above, or
    ``HANG``), where that is known -- from the class's default or, where one class covers several hardware
    outcomes, from the raise site (each such site cites the GPU record it follows); None where tcsim stops for
    a reason the GPU has no counterpart for (a usage error, an unsupported instruction).  Golden comparisons
    match faults by this kind (tests/golden/tma_h100, tests/hw/test_tma_golden.py).
    """

    kind = "error"
    gpu_error: str | None = None
    #: the run's findings (:class:`tcsim.findings.Finding`) up to the error, when it ended a simulation
    findings: tuple = ()
    #: the lines the kernel printed (vprintf, __assertfail) before the error ended the simulation
    stdout: tuple = ()

    def __init__(self, message: str, loc: SourceLoc | None = None, *, where: str | None = None,
                 expected: str | None = None, user_loc: str | None = None, gpu_error: str | None = None):
        if gpu_error is not None:
            self.gpu_error = gpu_error
        self.message = message
        self.loc = loc
        self.where = where
        self.expected = expected
        self.user_loc = user_loc
        super().__init__(self.format())

    def with_context(self, loc: SourceLoc | None = None, where: str | None = None,
                     user_loc: str | None = None) -> "TcsimError":
        """Fill in location/context fields that were unknown where the error was raised."""
        if self.loc is None and loc is not None:
            self.loc = loc
        if self.where is None and where is not None:
            self.where = where
        if self.user_loc is None and user_loc is not None:
            self.user_loc = user_loc
        self.args = (self.format(),)
        return self

    def format(self) -> str:
        head = f"{self.loc}: " if self.loc is not None else ""
        parts = [f"{head}{self.kind}: {self.message}"]
        if self.where:
            parts.append(f"(in {self.where})")
        if self.expected:
            parts.append(f"Expected: {self.expected}.")
        if self.user_loc:
            parts.append(f"Source: {self.user_loc}.")
        if self.loc is not None and self.loc.text:
            parts.append(f"Offending text: `{self.loc.text.strip()}`")
        return " ".join(parts)

    def __str__(self) -> str:  # keep str() in sync with late-filled context
        return self.format()


class PtxSyntaxError(TcsimError):
    kind = "syntax error"


class UnsupportedError(TcsimError):
    """Well-formed PTX that tcsim cannot execute (yet): never silently skipped."""

    kind = "unsupported"


class VerifyError(TcsimError):
    """PTX that is syntactically fine but breaks a rule of the ISA (operand types, qualifier combinations)."""

    kind = "invalid PTX"


class LaunchError(TcsimError):
    """Bad launch description: wrong argument count/type, grid/block limits, SMEM size."""

    kind = "launch error"


class MemoryFault(TcsimError):
    """Out-of-bounds or misaligned access, as the GPU would fault (illegal/misaligned address)."""

    kind = "memory fault"
    gpu_error = ILLEGAL_ADDRESS


class SyncError(TcsimError):
    """Misuse of a synchronisation object (uninitialised mbarrier, over-arrival, divergent .aligned op...)."""

    kind = "sync error"


class DeadlockError(TcsimError):
    kind = "deadlock"
    gpu_error = HANG


class RunawayError(TcsimError):
    kind = "budget exceeded"


class NonTerminatingLoopError(RunawayError):
    """A warp is in a loop none of whose exits can be taken, ever or within the run's budget (the loop monitor,
    tcsim.loop_watch): located at the compare that governs the exit."""

    kind = "non-terminating loop"


class LivelockError(DeadlockError):
    """Every live warp keeps executing but the machine state repeats: polling that nothing can ever satisfy
    (reported like a deadlock, with each warp's position)."""

    kind = "livelock"


class RunInterrupted(TcsimError):
    """The user stopped the run (Ctrl-C); the message holds every warp's position."""

    kind = "interrupted"
