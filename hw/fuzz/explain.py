"""Verified explanations of simulator-vs-GPU mismatches that come from ptxas, not from tcsim.

A mismatch is *explained* only when the simulator reproduces the GPU's output bit for bit after one of these,
each established on the H100 from the SASS ptxas 13.0 emitted for minimised fuzz reproducers:

Rewrites (the PTX as ptxas really compiled it -- miscompilations; isa/lint.py notes each at the instruction):

``testp-guard``
    a predicated ``testp`` loses its guard (the destination predicate is written in every lane).
``set-f32-guard``
    a predicated ``set.<cmp>.f32.<type> d, a, b`` compiles to ``@g FSETP``/``SEL`` then an *unguarded*
    ``IABS`` + ``I2FP.F32.S32`` of the destination: where the guard is false the old bits of ``d`` come back
    converted, ``d = float(|int(d)|)``.

Lowering variants (results the PTX ISA leaves open; sim/lowering.py):

``sign-ops-bitwise``, ``f64-nan-swap``.

:func:`explain` tries every combination that applies and returns ``"diagnosed:<names>"`` for the first that
reproduces the GPU output exactly, else None.
"""
from __future__ import annotations

import itertools
import re

import numpy as np

_GUARDED_TESTP = re.compile(r"^(\s*)@!?%\w+ (testp\.[\w.]+ %\w+, [^;]+;)", re.M)
_GUARDED_SET_F32 = re.compile(r"^(\s*)(@!?%\w+) set\.([a-z.]+?)\.f32\.([a-z0-9]+) (%\w+), ([^;]+);", re.M)


def _testp_guard(text: str) -> str:
    return _GUARDED_TESTP.sub(r"\1\2", text)


def _set_f32_guard(text: str) -> str:
    return _GUARDED_SET_F32.sub(r"\1\2 set.\3.s32.\4 \5, \6;\n\1abs.s32 \5, \5;\n\1cvt.rn.f32.s32 \5, \5;", text)


REWRITES = {"testp-guard": _testp_guard, "set-f32-guard": _set_f32_guard}


def as_compiled(text: str, names=None) -> str | None:
    """``text`` with the named rewrites (default: all) applied; None when none of them changes anything."""
    out = text
    for n in (REWRITES if names is None else names):
        out = REWRITES[n](out)
    return out if out != text else None


def _applicable_rewrites(text: str) -> list:
    return [n for n, fn in REWRITES.items() if fn(text) != text]


def _has_f64(text: str) -> bool:
    return ".f64" in text


def _has_sign_op(text: str) -> bool:
    return re.search(r"\b(neg|abs)(\.ftz)?\.(f32|f16|bf16|f16x2|bf16x2|f64)\b", text) is not None


def candidates(text: str) -> list:
    """(rewrites, variants) combinations worth trying for ``text``, smallest first."""
    rw = _applicable_rewrites(text)
    var = [v for v, ok in (("sign-ops-bitwise", _has_sign_op(text)), ("f64-nan-swap", _has_f64(text))) if ok]
    out = []
    for k in range(1, len(rw) + len(var) + 1):
        for combo in itertools.combinations(rw + var, k):
            out.append(([c for c in combo if c in REWRITES], [c for c in combo if c not in REWRITES]))
    return out


def explain(ptx: str, kernel: str, nthreads: int, inp: np.ndarray, out_template: np.ndarray,
            gpu_out: bytes) -> str | None:
    """``"diagnosed:<names>"`` when a rewrite/variant combination makes the simulator reproduce ``gpu_out``."""
    from isa.errors import TcsimError
    from sim import lowering
    from sim.launch import Launch, run_launch

    for rw, var in candidates(ptx):
        text = as_compiled(ptx, rw) or ptx
        try:
            with lowering.variants(var):
                res = run_launch(Launch(ptx=text, kernel=kernel, block=(nthreads, 1, 1),
                                        args=[inp.copy(), out_template.copy()]))
        except TcsimError:
            continue
        if res.outputs[1].tobytes() == gpu_out:
            return "diagnosed:" + "+".join(rw + var)
    return None


def explain_program(prog, gpu_out: bytes) -> str | None:
    return explain(prog.render(), prog.kernel_name, prog.nthreads, prog.input_buffer(), prog.output_template(),
                   gpu_out)


def explain_record(rec: dict) -> str | None:
    """For a saved reproducer (:func:`hw.fuzz.runner.load_reproducer`)."""
    tmpl = np.full(len(rec["gpu_output"]), rec.get("output_fill", 0xA5), dtype=np.uint8)
    return explain(rec["ptx"], rec["kernel"], rec["nthreads"], rec["input"], tmpl, rec["gpu_output"])
