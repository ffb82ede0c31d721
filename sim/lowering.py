"""Lowering variants: alternative results where the GPU's answer depends on how ptxas lowers the PTX.

The PTX ISA leaves a few results open (the NaN an ``abs``/``neg`` returns, which NaN a two-NaN f64 operation
returns), and ptxas picks SASS whose answer differs from one program to the next.  tcsim executes one definite
rule (documented at each semantics function); a *variant* is the other rule the GPU is known to follow under a
different lowering.  Variants are off in normal runs.  The differential tools (calib/fuzz/explain.py) turn them on
to *verify* an explanation: a mismatch is explained only when the simulator, with a named variant, reproduces
the GPU's output bit for bit.

The variants are an explicit input of a launch, never ambient state: ``Launch(..., lowering={...})`` (checked by
:func:`check`) reaches the decoders as :attr:`tcsim.semantics.registry.DecodeInfo.lowering`, and a decoder asks
:func:`active` at decode time, so the executed instruction carries its lowering.

=====================  ==========================================================================================
variant                what changes
=====================  ==========================================================================================
``sign-ops-bitwise``   ``abs``/``neg`` NaNs (f32/f16/bf16/x2, f64) are bit operations (sign bit cleared/flipped,
                       payload kept, signalling NaNs stay signalling) -- ptxas folds the sign operation into a
                       source modifier (``FSEL -R``, ``|R|``) or away (``neg(neg(x))``) instead of emitting an
                       ``FADD``/``DADD``; measured on the H100 from the SASS of fuzz reproducers
                       (tests/fuzz_regressions).  ``sign-ops-bitwise@<line>``: for that instruction only.
``f64-nan-swap``       when both commutative sources of an f64 add/mul/min/max/fma are NaN, the other source's NaN
                       wins: ptxas ordered the SASS operands the other way (register allocation).  ptxas decides
                       this per instruction: ``f64-nan-swap@<line>`` applies it to the instruction on that PTX line
                       only (a program may have one instruction each way; fuzz reproducer fuzz_103554_value).
=====================  ==========================================================================================
"""
from __future__ import annotations

VARIANTS = ("sign-ops-bitwise", "f64-nan-swap")


def active(on, name: str, line: int | None = None) -> bool:
    """Is variant ``name`` in the set ``on`` -- everywhere, or (``name@<line>``) for the instruction on PTX line
    ``line``?"""
    return name in on or (line is not None and f"{name}@{line}" in on)


def _known(name: str) -> bool:
    """``name`` is a variant, alone or as ``variant@<line>``."""
    if not isinstance(name, str):
        return False
    base, at, line = name.partition("@")
    return base in VARIANTS and (not at or line.isdigit())


def check(names) -> frozenset:
    """The variant set ``names`` (``name``: everywhere; ``name@<line>``: only for the instruction on that PTX line --
    ptxas decides such lowerings per instruction); ValueError naming any unknown one."""
    if isinstance(names, str):
        names = (names,)
    names = frozenset(names)
    unknown = {n for n in names if not _known(n)}
    if unknown:
        raise ValueError(f"unknown lowering variant(s) {sorted(map(repr, unknown))}; known: {', '.join(VARIANTS)} "
                         f"(each also as <variant>@<PTX line>)")
    return names
