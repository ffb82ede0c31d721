"""Findings: synchronisation bugs and hazards the simulator found, each explaining itself.

A :class:`Finding` names its bug class (the 20 classes of async tensor-core kernels, :data:`CLASSES`), both
sides (:class:`Access`: the PTX position, CTA / warp / lanes, proxy, address range or TMEM cells, cycle) and the
missing edge -- the fence, wait or barrier that would have ordered them -- with the fix.

Every checker reports through one door, :meth:`FindingLog.report` (``sim.findings``):

* **sanitizer mode** (the default): each distinct finding (:attr:`Finding.key`) is recorded once and the run goes
  on, so one hazard does not hide the next; ``Result.findings`` / ``tcsim run`` list them at the end.
* **strict mode** (``strict=True``, ``tcsim run --strict``): the first finding raises :class:`FindingError` at the
  instruction that exposed it (pdb-friendly, as before findings existed).
* A finding whose hardware outcome ends the launch (:attr:`Finding.outcome` ``'trap'``: the GPU raises an error
  there; ``'hang'``: the GPU never finishes) stops the run in either mode, the way the GPU would, with the finding
  as the explanation.

Lint notes (``severity='lint'``) are behaviour the PTX ISA leaves undefined but ptxas and the hardware give a
defined result; they are listed but never stop a run or fail ``tcsim run``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from tcsim.isa.errors import SourceLoc, SyncError

#: The bug classes (``../shared/reference/bug_classes.md``); 0 is a protocol error outside them.
CLASSES = {
    0: "synchronisation protocol error",
    1: "wrong wait parity (stale phase)",
    2: "stage released while a sibling still reads it",
    3: "expect_tx byte count mismatch",
    4: "arrive-count mismatch",
    5: "SMEM overwritten while an async read is in flight",
    6: "TMEM reused or freed while a tcgen05.ld reads it",
    7: "missing tcgen05.fence around a thread sync",
    8: "generic write read by the async proxy without fence.proxy.async",
    9: "generic read then async write without fence.proxy.async",
    10: "mbarrier init not made visible before remote use",
    11: "mbarrier storage reused or aliased",
    12: "one mbarrier shared by independent channels",
    13: "TMEM allocation protocol",
    14: "cluster lifetime / remote address misuse",
    15: "multicast bytes without a matching expect_tx",
    16: "named barrier misuse",
    17: "more lanes arrive or issue than the protocol counts",
    18: "misaligned TMA / bulk operand",
    19: "async operand registers used in flight",
    20: "descriptor / grid dependency race",
    21: "data race",
}

SEVERITIES = ("error", "warning", "lint")


def lanes_text(lanes, *, name_all: bool = True) -> str:
    """The lanes of a warp as findings and diagnostics name them: 'lane 3', 'lanes 0,2-5', 'all lanes' (with
    ``name_all`` False: 'lanes 0-31'), 'no lanes'.  ``lanes``: lane indices."""
    idx = sorted({int(x) for x in lanes})
    if not idx:
        return "no lanes"
    if name_all and len(idx) == 32:
        return "all lanes"
    if len(idx) == 1:
        return f"lane {idx[0]}"
    runs, start, prev = [], idx[0], idx[0]
    for i in idx[1:]:
        if i != prev + 1:
            runs.append((start, prev))
            start = i
        prev = i
    runs.append((start, prev))
    return "lanes " + ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
OUTCOMES = ("continue", "trap", "hang")


@dataclass(frozen=True)
class Access:
    """One side of a finding: an instruction's access (or sync operation) as the user wrote it."""

    what: str                           # the instruction text, or the operation ("tcgen05.mma (tensor pipe)")
    loc: SourceLoc | None = None        # PTX file:line:col of the issuing instruction
    cta: tuple | None = None            # ctaid of the CTA that executed it
    warp: int | None = None             # warp index in its CTA (None for an async unit's own access)
    lanes: str | None = None            # "lanes 0-31"
    proxy: str | None = None            # 'generic' | 'async' | 'tensormap' | None for a sync op
    unit: str | None = None             # 'warp' | 'tma' | 'tensor_pipe' | 'tcgen05' | ...
    where: str | None = None            # "SMEM [0x400, 0x600) of cta (0,0,0)", "TMEM lanes 0-31 columns 0-63"
    cycle: float | None = None          # simulated cycle of the access

    @property
    def line(self) -> int | None:
        return self.loc.line if self.loc is not None else None

    def describe(self) -> str:
        at = f"line {self.loc.line}" if self.loc is not None else "an unknown line"
        who = []
        if self.cta is not None:
            who.append(f"cta ({','.join(map(str, self.cta))})")
        if self.warp is not None:
            who.append(f"warp {self.warp}")
        if self.lanes:
            who.append(self.lanes)
        if self.unit and self.unit != "warp":
            who.append(f"via the {self.unit.replace('_', ' ')}")
        s = f"{at} (`{self.what}`"
        if who:
            s += " by " + " ".join(who)
        s += ")"
        if self.proxy:
            s += f" [{self.proxy} proxy]"
        if self.where:
            s += f" on {self.where}"
        if self.cycle is not None:
            s += f" at cycle {self.cycle:g}"
        return s

    def to_json(self) -> dict:
        return {"what": self.what,
                "loc": None if self.loc is None else {"file": self.loc.file, "line": self.loc.line,
                                                       "col": self.loc.col},
                "cta": None if self.cta is None else list(self.cta), "warp": self.warp, "lanes": self.lanes,
                "proxy": self.proxy, "unit": self.unit, "where": self.where, "cycle": self.cycle}


@dataclass(frozen=True)
class Finding:
    """A bug or hazard: its class, both sides, the missing edge and the fix."""

    cls: int                            # key of :data:`CLASSES`
    message: str                        # one paragraph: what happened
    sides: tuple = ()                   # the :class:`Access` es involved, earlier side first
    missing: str | None = None          # the edge that would order them ("no fence.proxy.async between ...")
    fix: str | None = None              # what to change
    severity: str = "error"             # 'error' | 'warning' | 'lint'
    outcome: str = "continue"           # what the GPU does: 'continue' (wrong data possible), 'trap', 'hang'
    key: tuple = field(default=(), compare=False)   # dedup key; default: class, the sides' lines, missing

    def __post_init__(self):
        if self.cls not in CLASSES:
            raise ValueError(f"unknown finding class {self.cls}")
        if self.severity not in SEVERITIES or self.outcome not in OUTCOMES:
            raise ValueError(f"bad severity/outcome {self.severity}/{self.outcome}")
        if not self.key:
            lines = tuple(s.line for s in self.sides)
            if self.cls == 21:          # a data race is one bug whichever of its two accesses came first
                key = (21, tuple(sorted(lines, key=lambda x: -1 if x is None else x)))
            else:
                key = (self.cls, lines, self.missing)
            object.__setattr__(self, "key", key)

    @property
    def title(self) -> str:
        return CLASSES[self.cls]

    @property
    def lines(self) -> tuple:
        """The PTX lines of the sides, in order."""
        return tuple(s.line for s in self.sides)

    @property
    def loc(self) -> SourceLoc | None:
        """Where to point the user: the last side (the access that exposed the bug)."""
        for s in reversed(self.sides):
            if s.loc is not None:
                return s.loc
        return None

    def format(self) -> str:
        head = f"{self.loc}: " if self.loc is not None else ""
        tag = f"class {self.cls}: " if self.cls else ""
        out = [f"{head}{self.severity}: [{tag}{self.title}] {self.message}"]
        for i, s in enumerate(self.sides):
            label = ("first" if i == 0 else "then") if len(self.sides) > 1 else "at"
            out.append(f"  {label}: {s.describe()}")
        if self.missing:
            out.append(f"  missing: {self.missing}")
        if self.fix:
            out.append(f"  fix: {self.fix}")
        if self.outcome != "continue":
            out.append("  on the GPU: " + ("the launch ends with an error here" if self.outcome == "trap"
                                           else "the kernel never finishes"))
        return "\n".join(out)

    __str__ = format

    def to_json(self) -> dict:
        return {"class": self.cls, "title": self.title, "severity": self.severity, "outcome": self.outcome,
                "message": self.message, "sides": [s.to_json() for s in self.sides], "missing": self.missing,
                "fix": self.fix}


def summarize(findings) -> str:
    """One line: how many findings of each class (lint notes aside), or 'no findings'."""
    probs = [f for f in findings if f.severity != "lint"]
    if not probs:
        n = len(findings)
        return "no findings" + (f" ({n} lint note{'s' if n != 1 else ''})" if n else "")
    by: dict = {}
    for f in probs:
        by[f.cls] = by.get(f.cls, 0) + 1
    parts = [f"{n} x class {c} ({CLASSES[c]})" if c else f"{n} x {CLASSES[c]}" for c, n in sorted(by.items())]
    return f"{len(probs)} finding{'s' if len(probs) != 1 else ''}: " + "; ".join(parts)


class FindingError(SyncError):
    """A finding that stopped the run (strict mode, or a hardware trap / hang); ``finding`` holds it."""

    def __init__(self, finding: Finding, findings: list | None = None):
        self.finding = finding
        self.findings = findings if findings is not None else [finding]
        super().__init__(finding.message, finding.loc,
                         expected=finding.fix or finding.missing)
        self.kind = f"sync error [class {finding.cls}: {finding.title}]" if finding.cls else "sync error"
        self.args = (self.format(),)

    def format(self) -> str:
        f = getattr(self, "finding", None)
        if f is None:
            return super().format()
        base = super().format()
        detail = [f"  {('first' if i == 0 else 'then') if len(f.sides) > 1 else 'at'}: {s.describe()}"
                  for i, s in enumerate(f.sides)]
        if f.missing:
            detail.append(f"  missing: {f.missing}")
        return "\n".join([base] + detail)


class FindingLog:
    """The run's findings (``sim.findings``): the one door checkers report through."""

    def __init__(self, strict: bool = False):
        self.strict = bool(strict)
        self.items: list[Finding] = []
        self._keys: set = set()
        self.repeats: dict = {}         # key -> how many more times the same finding was reported

    def report(self, finding: Finding) -> None:
        """Record ``finding``; raise :class:`FindingError` when it must stop the run (strict mode, or a hardware
        trap / hang).  Raised from inside the semantics or an agent, the engine locates and ends the run."""
        if finding.key in self._keys:
            self.repeats[finding.key] = self.repeats.get(finding.key, 0) + 1
            if finding.outcome == "continue":
                return
        else:
            self._keys.add(finding.key)
            self.items.append(finding)
        if finding.severity == "lint":
            return
        if self.strict or finding.outcome != "continue":
            raise FindingError(finding, list(self.items))

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def problems(self) -> list:
        """Findings that are not lint notes (what makes ``tcsim run`` exit non-zero)."""
        return [f for f in self.items if f.severity != "lint"]

    def summary(self) -> str:
        return summarize(self.items)

    def to_json(self) -> list:
        return [f.to_json() for f in self.items]


def write_report(report: dict, path) -> None:
    """Write a findings report (a JSON object) for tools; a path that cannot be written is a diagnostic."""
    from tcsim.isa.errors import TcsimError
    try:
        with open(path, "w") as fh:
            json.dump(report, fh, indent=1)
            fh.write("\n")
    except OSError as e:
        raise TcsimError(f"cannot write the findings to {path}: {e.strerror or e}",
                         expected="a writable file path for --findings") from None


def write_json(findings, path, **extra) -> None:
    """Write findings (a list of :class:`Finding`) as JSON for tools: ``{"findings": [...], **extra}``."""
    write_report({"findings": [f.to_json() for f in findings], **extra}, path)
