"""The per-launch setup, paid once per PTX text: parsed modules, linked and decoded programs, lint notes.

A launch's setup -- lexing and parsing the PTX (:func:`tcsim.isa.parser.parse`, with its verifiers), linking and
decoding every instruction (:func:`tcsim.engine.load_program`), the ptxas-dependence notes
(:func:`tcsim.isa.lint.notes`) -- depends only on the PTX text and the launch's kernel / lowering / stack-frame
choices, never on its arguments or on machine state.  A benchmark or a test that launches one kernel many times
paid it on every launch (70-130 ms of a 150 ms gemm_async run); :data:`PROGRAMS` keeps the last few results,
keyed by the text's SHA-256 and its source name (which every diagnostic's location carries).

What is shared between launches is read-only during a run: the module's IR, the decoded instruction callables
(closures over their decoded operands, holding no per-run state) and the symbol layout; every launch still builds
its own machine (memories, registers, barriers, units) and its own parameter image.  Only successes are kept: a
text that fails to parse or decode raises its located diagnostic again on every launch.

``TCSIM_PROGRAM_CACHE=0`` turns the cache off (every launch parses and decodes afresh, as before).
"""
from __future__ import annotations

import hashlib
import os
from collections import OrderedDict

#: programs / modules kept (least recently used go first)
CAPACITY = 16


def enabled() -> bool:
    return os.environ.get("TCSIM_PROGRAM_CACHE", "1") != "0"


class ProgramCache:
    """Bounded LRU maps: PTX text -> parsed module, (module, kernel, lowering, frames) -> program, module -> lint
    notes.  A module or program is keyed by the identity of the cached module it came from (the entry keeps that
    module alive, so its id is never reused while the entry exists)."""

    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        self._modules: OrderedDict = OrderedDict()
        self._programs: OrderedDict = OrderedDict()
        self._notes: OrderedDict = OrderedDict()
        #: lookups that found an entry / that had to build one (for tests and benchmarks)
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        self._modules.clear()
        self._programs.clear()
        self._notes.clear()

    def _get(self, table: OrderedDict, key, build, owner=None):
        """The value under ``key``, built on a miss; ``owner``: the object the value was built from, which the
        entry keeps alive and a hit must be built from (an id key stays valid only while its object lives)."""
        if not enabled():
            return build()
        hit = table.get(key)
        if hit is not None and hit[0] is owner:
            table.move_to_end(key)
            self.hits += 1
            return hit[1]
        self.misses += 1
        value = build()
        table[key] = (owner, value)
        while len(table) > self.capacity:
            table.popitem(last=False)
        return value

    def module(self, text: str, name: str, parse):
        """``parse(text, name)``, once per (text, name)."""
        key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), name)
        return self._get(self._modules, key, lambda: parse(text, name))

    def _cached_module(self, module) -> bool:
        return any(v[1] is module for v in self._modules.values())

    def program(self, module, kernel, lowering, frames, load):
        """``load()`` (the linked, decoded program of ``kernel`` in ``module``), once per (module, kernel,
        lowering, frames) -- for modules this cache parsed; any other module (a caller's own ir.Module, which it
        may change between launches) is loaded afresh."""
        if not enabled() or not self._cached_module(module):
            return load()
        fkey = None if frames is None else tuple(sorted(frames.items()))
        key = (id(module), kernel, frozenset(lowering or ()), fkey)
        return self._get(self._programs, key, load, owner=module)

    def notes(self, module, compute):
        """``compute()`` (the module's lint notes, a list the caller copies), once per cached module."""
        if not enabled() or not self._cached_module(module):
            return compute()
        return list(self._get(self._notes, id(module), compute, owner=module))


#: the process's cache (what :class:`tcsim.launch.Launch` and :class:`tcsim.launch.Prepared` use)
PROGRAMS = ProgramCache()
