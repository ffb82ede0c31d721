"""The decode table: instruction family -> decoder, each turning one IR instruction into an executable closure.

A semantics module registers a *decoder* per instruction family (:mod:`tcsim.isa.forms`)::

    @semantics("add:int", "sub:int")
    def decode_add(ins: Instruction, info: DecodeInfo) -> Callable[[ExecContext], None]:
        form = parse_...(ins, info)       # isa/: qualifiers and operands, typed located errors
        def run(ctx): ...
        return run

The key of an instruction is computed in ``isa/`` (:func:`tcsim.isa.forms.family_of`: the full opcode --
``cp.async.bulk.tensor``, ``tcgen05.mma``, ``barrier.cluster`` -- or the opcode and its type class --
``add:int`` / ``add:float``), so exactly one decoder can match an instruction.  Registering a key that no
instruction can have, or a key that is already registered, raises :class:`DecoderOverlap` when the module is
imported.

Decoding happens once per instruction when a kernel is loaded, so ``tcsim check`` can report every
instruction tcsim cannot execute, with its file:line:col, without running anything.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tcsim.isa import ir
from tcsim.isa.errors import TcsimError, UnsupportedError
from tcsim.isa.forms import check_family_key, family_of, opcode_of_key
from tcsim.isa.typing_rules import (check_address_bases, check_integer_registers, reject_label_operands,
                                     reject_special_registers, reject_vector_operands)


class DecoderOverlap(ValueError):
    """Two decoders registered for instructions that can coincide, or a decoder for a key no instruction has."""


@dataclass
class DecodeInfo:
    """What a decoder may know about the program: the function, its labels and registers, the target."""

    module: ir.Module
    function: ir.Function
    arch: str
    #: the lowering variants the launch turns on (tcsim.lowering; empty in normal runs)
    lowering: frozenset = frozenset()
    #: where the function's body starts in the linked program (tcsim.linker): label PCs are offset by it
    pc_base: int = 0

    def label_index(self, ins: ir.Instruction, op) -> int:
        """The program PC of the label ``op`` names."""
        if not isinstance(op, (ir.LabelRef, ir.Sym)) or op.name not in self.function.labels:
            raise UnsupportedError(f"branch target {op} is not a label of {self.function.name}", ins.loc)
        return self.pc_base + self.function.labels[op.name]

    def reg_type(self, op) -> str | None:
        if isinstance(op, ir.Reg):
            t = self.function.regs.get(op.name)
            return t[0] if t else None
        return None


@dataclass(frozen=True)
class _Entry:
    decoder: Callable
    module: str


class Registry:
    def __init__(self):
        self._table: dict[str, _Entry] = {}

    def register(self, keys, decoder) -> None:
        """Register ``decoder`` for the families ``keys``; DecoderOverlap when a key is taken or not a family."""
        for key in keys:
            try:
                check_family_key(key)
            except ValueError as e:
                raise DecoderOverlap(f"{decoder.__module__}.{decoder.__qualname__}: {e}") from None
            old = self._table.get(key)
            if old is not None:
                raise DecoderOverlap(f"{decoder.__module__}.{decoder.__qualname__} and {old.module}."
                                     f"{old.decoder.__qualname__} are both registered for the instruction family "
                                     f"{key!r}")
            self._table[key] = _Entry(decoder, decoder.__module__)

    def families(self) -> list[str]:
        """The registered family keys, sorted."""
        return sorted(self._table)

    def module_of(self, key: str) -> str:
        """The semantics module whose decoder executes the family ``key``."""
        return self._table[key].module

    def opcodes(self) -> list[str]:
        return sorted({opcode_of_key(k) for k in self._table})

    def decoder_of(self, ins: ir.Instruction) -> Callable | None:
        key = family_of(ins.opcode, ins.mods)
        e = self._table.get(key) if key is not None else None
        return None if e is None else e.decoder

    def decode(self, ins: ir.Instruction, info: DecodeInfo) -> Callable:
        decoder = self.decoder_of(ins)
        if decoder is None:
            if ins.opcode not in self.opcodes():
                raise UnsupportedError(f"instruction {ins.full_opcode} is not supported by tcsim", ins.loc,
                                       expected="an instruction tcsim implements (see `tcsim check --list`)")
            raise UnsupportedError(f"form {ins.full_opcode} is not supported by tcsim", ins.loc)
        try:
            reject_label_operands(ins)
            reject_special_registers(ins)
            check_address_bases(ins, info)
            reject_vector_operands(ins)
            check_integer_registers(ins, info)
            return decoder(ins, info)
        except TcsimError as err:
            raise err.with_context(loc=ins.loc)


REGISTRY = Registry()


def semantics(*keys: str):
    """Register the decorated decoder for the instruction families ``keys`` (see module docstring)."""

    def deco(fn):
        REGISTRY.register(keys, fn)
        return fn

    return deco
