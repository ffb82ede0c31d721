"""What the tensor-core numerics probes share (calib/probes/mma_fp8_probe.py, wgmma_probe.py, wgmma_targeted.py):
targeted vectors laid on the diagonals of MMA cases, the formats' codes of a test list, the GPU's answer to each
named test against the model's, and the command-line wrapper that turns a stale record or a missing GPU into one
line and an exit code.

A targeted test is one dot product -> one output element.  :func:`diagonal` puts test ``t`` in case
``t // per_case`` at row ``j = t % per_case`` and row ``j + 8`` of A (the same values: both halves of an m16 tile
see it), row ``j`` of B and ``C[j][j]`` / ``C[j + 8][j]``; its output is ``D[case][j][j]`` (``where[t]``).
"""
from __future__ import annotations

import sys

import numpy as np

from calib import pipeline as P


def convert(tests, fa, fb, fc) -> list:
    """(name, question, a codes, b codes, c code) of the tests ``(name, question, a values, b values, c value)`` whose
    every value the converters ``fa`` / ``fb`` / ``fc`` (value -> code, ValueError when not representable) take."""
    out = []
    for name, q, a, b, c in tests:
        try:
            out.append((name, q, [fa(v) for v in a], [fb(v) for v in b], fc(c)))
        except ValueError:
            continue
    return out


def diagonal(tests, *, rows: int, K: int, a_dtype, b_dtype, c_dtype, per_case: int = 8, multiple: int = 1):
    """(a (n, rows, K), b (n, 8, K), c (n, rows, 8), names, where) of ``tests`` -- ``(name, a codes, b codes,
    c code)`` -- laid on the diagonals (module docstring): ``n`` cases, at least ``len(tests) / per_case``, rounded
    up to a multiple of ``multiple``."""
    n = -(-len(tests) // per_case)
    n += -n % multiple
    a = np.zeros((n, rows, K), a_dtype)
    b = np.zeros((n, 8, K), b_dtype)
    c = np.zeros((n, rows, 8), c_dtype)
    names, where = [], []
    for t, (name, av, bv, cv) in enumerate(tests):
        i, j = divmod(t, per_case)
        a[i, j, :len(av)] = av
        a[i, j + 8, :len(av)] = av
        b[i, j, :len(bv)] = bv
        c[i, j, j] = c[i, j + 8, j] = cv
        names.append(name)
        where.append((i, j))
    return a, b, c, names, where


def named(d: np.ndarray, names, where) -> dict:
    """{test name: the output's code (hex)} of the targeted tests in the outputs ``d``."""
    return {t: hex(int(d[i, j, j])) for t, (i, j) in zip(names, where)}


def report_named(log, label: str, ref: np.ndarray, d: np.ndarray, names, where) -> None:
    """Log each named test whose GPU output ``d`` differs from the model's ``ref``."""
    for t, (i, j) in zip(names, where):
        if ref[i, j, j] != d[i, j, j]:
            log(f"    {label}{t}: GPU {int(d[i, j, j]):#x} model {int(ref[i, j, j]):#x}")


def cli(run) -> int:
    """``run()``'s exit code; a record that no longer matches (:class:`calib.pipeline.RecordError`) is exit code 2
    and no GPU (:class:`tcsim.hw.launcher.GpuUnavailable`) 3, each with one line on stderr."""
    from tcsim.hw.launcher import GpuUnavailable

    try:
        return run()
    except P.RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except GpuUnavailable as e:
        print(f"error: no GPU: {e}", file=sys.stderr)
        return 3
