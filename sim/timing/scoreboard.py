"""The per-warp register scoreboard: a register written by an instruction may be read (or written again) only
once that instruction's latency has passed.

Semantics write register values at issue; the scoreboard decides *when* a later instruction of the same warp may
issue, so a dependent instruction waits for its producer's latency and an independent one does not.  Each entry
remembers its producer (pc) so that a stall can name the register and the instruction it waits for.
"""
from __future__ import annotations


class Scoreboard:
    __slots__ = ("ready", "reads")

    def __init__(self):
        #: register name -> (cycle at which it is readable, pc of the producer)
        self.ready: dict = {}
        #: register name -> (cycle until which an in-flight reader still reads it, pc of that reader): the
        #: write-after-read hazard of late-reading instructions (mma.sync; ``mma_sync_operand_read``)
        self.reads: dict = {}

    def war_blocking(self, names, now: float):
        """(cycle, register, reader pc) of the latest pending read among ``names`` at ``now``, or None."""
        return _latest(self.reads, names, now)

    def read(self, names, cycle: float, pc: int) -> None:
        reads = self.reads
        for n in names:
            r = reads.get(n)
            if r is None or r[0] < cycle:
                reads[n] = (cycle, pc)

    def blocking(self, names, now: float):
        """(cycle, register, producer pc) of the latest-ready register among ``names`` still pending at ``now``,
        or None when all are ready."""
        return _latest(self.ready, names, now)

    def write(self, names, cycle: float, pc: int) -> None:
        for n in names:
            self.ready[n] = (cycle, pc)

    def pending(self, now: float) -> dict:
        """Registers not yet readable at ``now``: {name: cycle}."""
        return {n: r[0] for n, r in self.ready.items() if r[0] > now}


__all__ = ["Scoreboard"]


def _latest(table: dict, names, now: float):
    """(cycle, register, pc) of the entry of ``table`` (register -> (cycle, pc)) among ``names`` that is still
    pending at ``now`` and ends last, or None."""
    worst = None
    for n in names:
        r = table.get(n)
        if r is not None and r[0] > now and (worst is None or r[0] > worst[0]):
            worst = (r[0], n, r[1])
    return worst
