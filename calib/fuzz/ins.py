"""The generator's leaf node, shared by :mod:`calib.fuzz.generator` and :mod:`calib.fuzz.wgmma_ops`."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Ins:
    """One instruction (text without guard and ';')."""
    text: str
    guard: str | None = None
    id: int = 0

    def lines(self, r) -> list:
        return [(f"@{self.guard} " if self.guard else "") + self.text + ";"]
