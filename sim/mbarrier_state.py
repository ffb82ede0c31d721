"""The mbarrier object: phase, pending arrivals, expected arrivals, transaction count.

PTX ISA 9.1 §9.7.13.15 (mbarrier contents, phase completion, arrive-on, expect-tx, complete-tx).  The
object lives at an 8-byte aligned SMEM offset of one CTA; its state is kept here (the hardware encoding is
opaque), and the CTA tracks which SMEM bytes hold a live barrier so that a plain store over one is reported.

Ranges (mbarrier.md): expected 1..2^20-1, pending 0..2^20-1, tx-count -(2^20-1)..2^20-1.  The doors report an
over-arrival (more arrivals than pending) and an expect-tx past the limit as findings with the H100's outcome
before they get here (:mod:`tcsim.race.protocol`); these methods still raise :class:`SyncError` for what reaches
them anyway.  ``record`` holds the protocol history of the current incarnation (init, arrivals, transactions and
waits per phase) that those findings are built from.
"""
from __future__ import annotations

from tcsim.isa.errors import SyncError

MAX_COUNT = (1 << 20) - 1


class MBarrier:
    __slots__ = ("offset", "phase", "pending", "expected", "tx", "valid", "_waiters", "env", "record")

    def __init__(self, env, offset: int):
        self.env = env
        self.offset = offset
        self.phase = 0
        self.pending = 0
        self.expected = 0
        self.tx = 0
        self.valid = False
        self._waiters: list = []      # simpy events released at the next phase completion
        #: the protocol history of the current incarnation (:class:`tcsim.race.protocol.BarrierRecord`), set by
        #: the simulation's protocol checker at each init; None before the first
        self.record = None

    # -- primitive operations (each applied atomically) -------------------------------------------------
    # Named apply_* (and next_phase_event, which registers a waiter): only the two doors call them
    # (ExecContext.mbarrier_*, AgentPort.mbarrier_*), which report each change as it is made.
    def apply_init(self, count: int) -> None:
        if not (1 <= count <= MAX_COUNT):
            raise SyncError(f"mbarrier.init count {count} out of range", expected=f"1..{MAX_COUNT}")
        self.phase = 0
        self.pending = self.expected = int(count)
        self.tx = 0
        self.valid = True
        self._waiters = []   # waiters of an earlier (invalidated) incarnation never see this one

    def apply_add_pending(self, count: int) -> None:
        """Raise the pending arrival count of the current phase (``cp.async.mbarrier.arrive`` without .noinc,
        PTX ISA §9.7.9.25.3.4); SyncError past the 2^20-1 limit."""
        if self.pending + int(count) > MAX_COUNT:
            raise SyncError(f"pending count of the mbarrier at SMEM offset 0x{self.offset:x} would exceed {MAX_COUNT}")
        self.pending += int(count)

    def apply_inval(self) -> None:
        self.valid = False

    def apply_revive(self) -> None:
        """An operation reached the barrier after ``mbarrier.inval``: an H100 performs it on the state the barrier
        had before the inval (probe arrive_after_inval), so that state is live again (the finding is reported by
        :meth:`tcsim.race.protocol.Protocol.dead_barrier`)."""
        self.valid = True

    def _require_valid(self, what: str) -> None:
        if not self.valid:
            raise SyncError(f"{what} on SMEM offset 0x{self.offset:x}, which holds no initialised mbarrier",
                            expected="mbarrier.init (and a fence + barrier) before any other mbarrier operation")

    def apply_expect_tx(self, nbytes: int) -> None:
        self._require_valid("expect-tx")
        if self.tx + int(nbytes) > MAX_COUNT:
            raise SyncError(f"mbarrier at 0x{self.offset:x}: tx-count {self.tx + int(nbytes)} exceeds {MAX_COUNT}",
                            expected="at most 2^20-1 pending transaction bytes per phase")
        self.tx += int(nbytes)

    def apply_complete_tx(self, nbytes: int) -> bool:
        """Returns True if this completed the phase."""
        self._require_valid("complete-tx")
        if self.tx - int(nbytes) < -MAX_COUNT:
            raise SyncError(f"mbarrier at 0x{self.offset:x}: tx-count {self.tx - int(nbytes)} below -{MAX_COUNT}")
        self.tx -= int(nbytes)
        return self._check()

    def apply_arrive(self, count: int = 1, drop: bool = False, no_complete: bool = False) -> int:
        """arrive-on(count); returns the phase *before* the arrive (the opaque state token)."""
        self._require_valid("arrive")
        token = self.phase
        count = int(count)
        if drop and self.expected - count < 0:
            raise SyncError(f"mbarrier at 0x{self.offset:x}: arrive_drop made the expected count negative")
        if self.pending - count < 0:
            raise SyncError(f"over-arrival on mbarrier at SMEM offset 0x{self.offset:x}: "
                            f"{count - self.pending} more arrivals than pending in phase {self.phase}",
                            expected=f"at most {self.pending} arrivals in this phase")
        if no_complete and self.pending - count == 0 and self.tx == 0:
            raise SyncError(f"mbarrier.arrive.noComplete would complete phase {token} of mbarrier at "
                            f"0x{self.offset:x}", expected="a .noComplete arrive that leaves arrivals pending")
        if drop:
            self.expected -= count
        self.pending -= count
        self._check()
        return token

    def _check(self) -> bool:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.expected
            waiters, self._waiters = self._waiters, []
            for ev in waiters:
                if not ev.triggered:
                    ev.succeed(self.phase)
            return True
        return False

    # -- queries -----------------------------------------------------------------------------------------
    def parity_done(self, parity: int) -> bool:
        """Parity-form wait: the phase with this parity has completed  (``(phase & 1) != parity``)."""
        return (self.phase & 1) != (int(parity) & 1)

    def token_done(self, token_phase: int) -> bool:
        """Token-form wait: the phase recorded in a state token (mod 2^20) has completed, i.e. the current phase
        differs from it (PTX allows only the current or the immediately preceding phase to be queried)."""
        return ((self.phase - int(token_phase)) & MAX_COUNT) != 0

    def next_phase_event(self):
        ev = self.env.event()
        self._waiters.append(ev)
        return ev

    def describe(self) -> str:
        if not self.valid:
            return f"mbarrier@0x{self.offset:x} (not initialised)"
        return (f"mbarrier@0x{self.offset:x} phase {self.phase} (parity {self.phase & 1}), "
                f"{self.pending}/{self.expected} arrivals pending, tx-count {self.tx}")
