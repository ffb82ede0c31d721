"""PTX scalar types as numpy containers.

Registers hold raw bits in an unsigned container of the declared width; instructions view them as the
instruction type.  ``retype`` implements the PTX operand-size rules for register reads and writes
(PTX ISA 9.1 §6.4.2 "Operand Size Exceeding Instruction-Type Size"): a wider register is truncated on read;
on write, a narrower instruction type is sign-extended into the register for signed types and
zero-extended otherwise.
"""
from __future__ import annotations

import numpy as np

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SINT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}

SIZE = {
    "pred": 1, "b8": 1, "u8": 1, "s8": 1, "e4m3": 1, "e5m2": 1,
    "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "e4m3x2": 2, "e5m2x2": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8,
    "b128": 16,
}

#: the container of a ``.b128`` register (PTX ISA 9.1 §5.2.2; mov/ld/st/atom.cas/atom.exch only): one record per
#: lane of two little-endian 64-bit halves, ``lo`` = bits 0-63 (the low address of a 16-byte access, element 0
#: of ``mov.b128 %q, {lo, hi}``), ``hi`` = bits 64-127.  numpy has no 128-bit integer, and nothing computes on
#: .b128 values: they are moved, loaded, stored, compared (atom.cas) and exchanged whole.
B128 = np.dtype([("lo", "<u8"), ("hi", "<u8")])


def b128_of(lo, hi) -> np.ndarray:
    """A .b128 lane vector from its 64-bit halves (arrays or ints, broadcast)."""
    lo, hi = np.broadcast_arrays(np.asarray(lo, dtype=np.uint64), np.asarray(hi, dtype=np.uint64))
    out = np.empty(lo.shape, dtype=B128)
    out["lo"], out["hi"] = lo, hi
    return out


def b128_int(x) -> int:
    """One lane of a .b128 vector as a Python int (bits 0-127)."""
    return int(x["lo"]) | (int(x["hi"]) << 64)


def size_of(ptype: str) -> int:
    try:
        return SIZE[ptype]
    except KeyError:
        raise ValueError(f"unknown PTX type .{ptype}") from None


def is_signed(ptype: str) -> bool:
    return ptype[0] == "s"


def is_float(ptype: str) -> bool:
    return ptype in ("f16", "bf16", "f32", "f64", "tf32", "f16x2", "bf16x2")


def container(ptype: str):
    """Unsigned container dtype of a type (pred -> bool)."""
    if ptype == "pred":
        return np.bool_
    if ptype == "b128":
        return B128
    return UINT[size_of(ptype)]


def view_dtype(ptype: str):
    """The numpy dtype an instruction of this type computes with."""
    v = _VIEW.get(ptype)
    if v is not None:
        return v
    v = _VIEW[ptype] = _view_dtype(ptype)
    return v


_VIEW: dict = {}        # ptype -> view_dtype's answer (a pure function of the type name)


def _view_dtype(ptype: str):
    if ptype == "pred":
        return np.bool_
    if ptype == "f32":
        return np.float32
    if ptype == "f64":
        return np.float64
    if ptype == "b128":
        return B128
    if ptype[0] == "s":
        return SINT[size_of(ptype)]
    return UINT[size_of(ptype)]   # b*, u*, f16/bf16 raw bits, packed types


def to_type(bits: np.ndarray, ptype: str, signed_extend: bool = False) -> np.ndarray:
    """Resize raw unsigned bits to the container of ``ptype`` and view them as ``ptype``."""
    want = size_of(ptype)
    have = bits.dtype.itemsize
    if (ptype == "b128") != (bits.dtype == B128):
        raise ValueError(f"a {8 * have}-bit register cannot be read as .{ptype}: a .b128 register is moved only "
                         "whole, by .b128 instructions (PTX ISA §5.2.2; ptxas: \"Arguments mismatch\")")
    if have != want:
        if signed_extend and want > have:
            bits = bits.view(SINT[have]).astype(SINT[want]).view(UINT[want])
        else:
            bits = bits.astype(UINT[want])
    return bits.view(view_dtype(ptype))


def to_container(values: np.ndarray, ptype: str, reg_size: int) -> np.ndarray:
    """Raw bits of ``values`` (typed as ``ptype``) resized to a register of ``reg_size`` bytes."""
    vsize = size_of(ptype)
    if (ptype == "b128") != (reg_size == 16):
        raise ValueError(f"a .{ptype} value cannot be written to a {8 * reg_size}-bit register: a .b128 register "
                         "is written only whole, by .b128 instructions (PTX ISA §5.2.2)")
    if ptype == "b128":
        return np.ascontiguousarray(values).astype(B128, copy=False)
    raw = np.ascontiguousarray(values).astype(view_dtype(ptype), copy=False).view(UINT[vsize])
    if vsize == reg_size:
        return raw
    if reg_size > vsize and is_signed(ptype):
        return raw.view(SINT[vsize]).astype(SINT[reg_size]).view(UINT[reg_size])
    return raw.astype(UINT[reg_size])


def imm_bits(value, kind: str, ptype: str, fbits: int | None = None) -> int:
    """Bit pattern of an immediate used as an operand of type ``ptype`` (PTX ISA §4.5 constants)."""
    size = size_of(ptype)
    if kind == "int":
        if ptype in ("f32", "f64"):
            # an integer literal where a float is expected is converted to that float
            return int(np.array(float(value), dtype=view_dtype(ptype)).view(UINT[size]))
        return int(value) & ((1 << (8 * size)) - 1)
    if ptype == "f32":
        if kind == "f32":
            return int(fbits)
        return int(np.array(value, dtype=np.float64).astype(np.float32).view(np.uint32))
    if ptype == "f64":
        if kind == "f64":
            return int(fbits)
        return int(np.array(np.float32(value), dtype=np.float64).view(np.uint64)) if kind == "f32" else \
            int(np.array(value, dtype=np.float64).view(np.uint64))
    if kind == "f32" and size == 4:
        return int(fbits)
    if kind == "f64" and size == 8:
        return int(fbits)
    if ptype == "f16":
        return int(np.array(value, dtype=np.float16).view(np.uint16))
    raise ValueError(f"float immediate {value} cannot be used as a .{ptype} operand")
