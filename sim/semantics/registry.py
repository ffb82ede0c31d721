"""The decode table: opcode -> decoders, each turning one IR instruction into an executable closure.

A semantics module registers a *decoder* per opcode family::

    @semantics("add", "sub")
    def decode_add(ins: Instruction, info: DecodeInfo) -> Callable[[ExecContext], None]:
        ...validate qualifiers/operands once (raise VerifyError / UnsupportedError)...
        def run(ctx): ...
        return run

Decoding happens once per instruction when a kernel is loaded, so ``tcsim check`` can report every
instruction tcsim cannot execute, with its file:line:col, without running anything.  Several decoders may
register the same opcode with a ``when`` predicate on the qualifiers (e.g. ``cp.async.bulk.tensor`` vs
``cp.async.bulk``); the first whose predicate accepts the instruction wins.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tcsim.isa import ir
from tcsim.isa.errors import TcsimError, UnsupportedError


@dataclass
class DecodeInfo:
    """What a decoder may know about the program: the function, its labels and registers, the target."""

    module: ir.Module
    function: ir.Function
    arch: str
    #: the lowering variants the launch turns on (tcsim.lowering; empty in normal runs)
    lowering: frozenset = frozenset()

    def label_index(self, ins: ir.Instruction, op) -> int:
        if not isinstance(op, (ir.LabelRef, ir.Sym)) or op.name not in self.function.labels:
            raise UnsupportedError(f"branch target {op} is not a label of {self.function.name}", ins.loc)
        return self.function.labels[op.name]

    def reg_type(self, op) -> str | None:
        if isinstance(op, ir.Reg):
            t = self.function.regs.get(op.name)
            return t[0] if t else None
        return None


@dataclass
class _Entry:
    decoder: Callable
    when: Callable | None
    module: str


class Registry:
    def __init__(self):
        self._table: dict[str, list[_Entry]] = {}

    def register(self, opcodes, decoder, when=None) -> None:
        for op in opcodes:
            self._table.setdefault(op, []).append(_Entry(decoder, when, decoder.__module__))

    def opcodes(self) -> list[str]:
        return sorted(self._table)

    def decode(self, ins: ir.Instruction, info: DecodeInfo) -> Callable:
        entries = self._table.get(ins.opcode)
        if not entries:
            raise UnsupportedError(f"instruction {ins.full_opcode} is not supported by tcsim", ins.loc,
                                   expected="an instruction tcsim implements (see `tcsim check --list`)")
        for e in entries:
            if e.when is None or e.when(ins):
                try:
                    return e.decoder(ins, info)
                except TcsimError as err:
                    raise err.with_context(loc=ins.loc)
        raise UnsupportedError(f"form {ins.full_opcode} is not supported by tcsim", ins.loc)


REGISTRY = Registry()


def semantics(*opcodes: str, when: Callable | None = None):
    """Register the decorated decoder for ``opcodes`` (see module docstring)."""

    def deco(fn):
        REGISTRY.register(opcodes, fn, when)
        return fn

    return deco
