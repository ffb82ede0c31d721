"""NVIDIA's ptxas as the reference for which PTX is legal: tcsim's front end and verifiers are tested against it,
generated tables (isa/cvt_forms.py) are derived from it, and every shipped or generated kernel must assemble.

:func:`assemble` runs ``ptxas -arch=<arch>`` on PTX text in a private temporary folder (safe from several
threads) and returns ``(return code, log)``, or None when ptxas is not on PATH -- callers skip, they never fail,
on a machine without the CUDA toolkit.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

PTXAS = shutil.which("ptxas")


def assemble(text: str, arch: str = "sm_100a", name: str = "kernel.ptx", timeout: float = 300) -> tuple | None:
    if PTXAS is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / name
        p.write_text(text)
        r = subprocess.run([PTXAS, f"-arch={arch}", str(p), "-o", str(Path(tmp) / "out.cubin")],
                           capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def first_error(log: str) -> str:
    """ptxas's first error message without the 'ptxas file, line N; error :' prefix."""
    for line in log.splitlines():
        if "error" in line and ":" in line:
            return line.split("error", 1)[1].lstrip(" :")
    return log.strip().splitlines()[0] if log.strip() else ""
