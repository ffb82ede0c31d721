"""TMA / UMMA shared-memory swizzle functions on absolute SMEM byte addresses.

PTX ISA 9.1 §5.5.7 "Tensor swizzling modes" (tma.md §4).  A swizzle is an XOR of SMEM address bits [9:7]
(the index of the 128-byte line) into the bits that select a chunk inside the line.  Every mode is an
involution: applying it twice gives the address back, so ``unswizzle(a, m) == swizzle(a, m)``.

| mode                    | transform                                          | period | chunk |
|-------------------------|----------------------------------------------------|--------|-------|
| ``none``                | ``A``                                              | —      | —     |
| ``32B``                 | ``A ^ (((A >> 7) & 1) << 4)``                       | 256 B  | 16 B  |
| ``64B``                 | ``A ^ (((A >> 7) & 3) << 4)``                       | 512 B  | 16 B  |
| ``128B``                | ``A ^ (((A >> 7) & 7) << 4)``                       | 1024 B | 16 B  |
| ``128B_atom_32B``       | ``A ^ (((A >> 7) & 3) << 5)``                       | 512 B  | 32 B  |
| ``128B_atom_32B_flip_8B``| ``128B_atom_32B`` then ``^ (((A >> 7) & 1) << 3)`` (*) | 512 B | 8 B |
| ``128B_atom_64B``       | ``A ^ (((A >> 7) & 1) << 6)``                       | 256 B  | 64 B  |

(These equal CuTe ``Swizzle<1,4,3>``, ``<2,4,3>``, ``<3,4,3>`` and ``<2,5,2>``.)  The swizzle is applied to the
*absolute* address, so a box that does not start on a pattern repeat sees the pattern at phase
``(A / 128) % period_lines`` — exactly what the hardware is described to do (tma.md §3).

``128B_atom_32B_flip_8B`` follows the one sentence documenting it, the comment on
``CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B`` in CUDA 13.0's ``cuda.h`` ("Swizzle 32B chunks within 128B span,
additionally swap lower 8B with upper 8B within each 16B for every alternate row").  Reading "row" as the
128-byte line (the span the other modes index by) is an interpretation: no hardware check backs it (the H100's
driver refuses every atom mode; they are Blackwell-only), so :data:`UNVERIFIED` names the mode and the tests
check only the documented sentence.  The 96B mode of sm_103a is not modelled (:func:`check_mode` rejects it).
"""
from __future__ import annotations

import numpy as np

#: mode name -> CUtensorMapSwizzle enum value (driver numbering)
SWIZZLE_MODES = {
    "none": 0,
    "32B": 1,
    "64B": 2,
    "128B": 3,
    "128B_atom_32B": 4,
    "128B_atom_32B_flip_8B": 5,
    "128B_atom_64B": 6,
}
SWIZZLE_NAMES = {v: k for k, v in SWIZZLE_MODES.items()}

#: modes whose model rests on documentation alone, with an interpretation no hardware has confirmed (see the
#: module docstring); a finding or test that depends on their exact bytes must say so
UNVERIFIED = {"128B_atom_32B_flip_8B": "cuda.h 13.0 documents 'swap lower 8B with upper 8B within each 16B for "
                                      "every alternate row'; 'row' read as the 128-byte line, not checked on "
                                      "hardware (no Blackwell GPU)"}

#: bytes of the swizzle "span": the longest inner box row (bytes) a mode allows (driver rule)
SWIZZLE_SPAN = {"none": None, "32B": 32, "64B": 64, "128B": 128, "128B_atom_32B": 128,
                "128B_atom_32B_flip_8B": 128, "128B_atom_64B": 128}

#: bytes after which the pattern repeats
SWIZZLE_PERIOD = {"none": 1, "32B": 256, "64B": 512, "128B": 1024, "128B_atom_32B": 512,
                  "128B_atom_32B_flip_8B": 512, "128B_atom_64B": 256}

#: granule (bytes) that the mode moves as a unit; bits below it are never changed
SWIZZLE_GRANULE = {"none": 16, "32B": 16, "64B": 16, "128B": 16, "128B_atom_32B": 32,
                   "128B_atom_32B_flip_8B": 8, "128B_atom_64B": 64}

#: (mask applied to the line index A >> 7, left shift of the XOR term) per mode; the flip mode adds a 2nd term
_TERMS = {
    "none": (),
    "32B": ((1, 4),),
    "64B": ((3, 4),),
    "128B": ((7, 4),),
    "128B_atom_32B": ((3, 5),),
    "128B_atom_32B_flip_8B": ((3, 5), (1, 3)),
    "128B_atom_64B": ((1, 6),),
}


def check_mode(mode: str) -> str:
    """Return ``mode`` if it is a known swizzle name, else raise ValueError listing the names."""
    if mode not in _TERMS:
        raise ValueError(f"unknown swizzle mode {mode!r}; known modes: {', '.join(SWIZZLE_MODES)}")
    return mode


def swizzle(addr, mode: str):
    """The swizzled address of each absolute SMEM byte address in ``addr`` (int or integer array).

    Works element-wise on numpy arrays (any integer dtype; the result has the input's dtype) and on Python
    ints.
    """
    terms = _TERMS[check_mode(mode)]
    if isinstance(addr, (int, np.integer)) and not isinstance(addr, bool):
        a = int(addr)
        out = a
        for mask, shift in terms:
            out ^= ((a >> 7) & mask) << shift
        return out
    a = np.asarray(addr)
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"swizzle needs integer addresses, got dtype {a.dtype}")
    out = a.copy()
    line = a >> a.dtype.type(7)
    for mask, shift in terms:
        out ^= (line & a.dtype.type(mask)) << a.dtype.type(shift)
    return out


def unswizzle(addr, mode: str):
    """Inverse of :func:`swizzle` (the same function: every mode is an XOR involution)."""
    return swizzle(addr, mode)


def swizzled_offsets(base: int, nbytes: int, mode: str, granule: int = 8) -> np.ndarray:
    """SMEM addresses receiving the ``granule``-byte pieces of a dense image of ``nbytes`` bytes placed at
    ``base``: piece ``k`` (bytes ``[k*granule, (k+1)*granule)``) lands at ``swizzle(base + k*granule)``.

    ``granule`` must divide every mode's granule (8 does for all modes) and ``base`` must be
    ``granule``-aligned, so each piece moves as a unit.
    """
    if base % granule or nbytes % granule:
        raise ValueError(f"base {base} and size {nbytes} must be multiples of the {granule}-byte granule")
    a = np.int64(base) + np.arange(0, nbytes, granule, dtype=np.int64)
    return swizzle(a, mode)


def pattern_table(mode: str, lines: int | None = None) -> np.ndarray:
    """The §5.5.7-style table: ``table[L, c]`` = the 16-byte chunk (of the 128-byte line ``L``) that logical
    chunk ``c`` lands in, for a box starting at a pattern-aligned address.  (For the 8-byte flip mode the
    table describes 16-byte chunks of the 32-byte-atom permutation only.)"""
    n = lines if lines is not None else max(SWIZZLE_PERIOD[mode] // 128, 1)
    a = (np.arange(n, dtype=np.int64)[:, None] * 128) + np.arange(8, dtype=np.int64)[None, :] * 16
    s = swizzle(a, mode)
    return ((s & 127) >> 4).astype(np.int64)
