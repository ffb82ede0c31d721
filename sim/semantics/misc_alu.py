"""Shared numeric helpers of the ALU families (integer, logic, compare): exact wide integer arithmetic and the
predicate combine of setp / set / lop3 (PTX ISA 9.1 §9.7.1, §9.7.6.2).

This module registers no instruction.  The qualifier and operand rules of the ALU families (``Mods``,
``check_operands`` ...) are :mod:`tcsim.isa.operand_rules`.
"""
from __future__ import annotations

import numpy as np

# --------------------------------------------------------------------------------------------- numerics


def to_pyints(a: np.ndarray, signed: bool) -> list:
    """Lane values as Python ints (for exact wide arithmetic)."""
    return [int(x) for x in (a.astype(np.int64) if signed else a.astype(np.uint64))]


def from_pyints(vals, nbits: int) -> np.ndarray:
    """Python ints -> unsigned numpy array of ``nbits`` (values taken modulo 2**nbits)."""
    mask = (1 << nbits) - 1
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[nbits]
    return np.array([v & mask for v in vals], dtype=dt)


def bool_op(op: str | None, t: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """The ``.and/.or/.xor`` combine of setp/set/lop3 (PTX ISA §9.7.6.2)."""
    if op is None:
        return t
    if op == "and":
        return t & c
    if op == "or":
        return t | c
    return t ^ c
