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


def _ptxas_verbose(text: str, arch: str, timeout: float):
    """``ptxas -arch=ARCH -v`` of ``text`` (the completed process: its stdout and stderr carry the per-function
    resource lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "kernel.ptx"
        p.write_text(text)
        return subprocess.run([PTXAS, f"-arch={arch}", "-v", str(p), "-o", str(Path(tmp) / "out.cubin")],
                              capture_output=True, text=True, timeout=timeout)


def stack_frames(text: str, arch: str = "sm_90a", timeout: float = 300) -> dict | None:
    """Per function, the bytes of its SASS stack frame as ``ptxas -v`` reports them ("N bytes stack frame": its
    .local variables, spills, saved registers and return address), or None when ptxas is not on PATH.  A PTX file
    ptxas refuses gives an empty dict."""
    import re
    if PTXAS is None:
        return None
    r = _ptxas_verbose(text, arch, timeout)
    out = {}
    for m in re.finditer(r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame", r.stdout + r.stderr):
        out[m.group(1)] = int(m.group(2))
    return out


def register_counts(text: str, arch: str = "sm_90a", timeout: float = 300) -> dict | None:
    """Per entry function, the registers per thread ptxas allocates (``ptxas -v``: "Used N registers"), or None
    when ptxas is not on PATH.  A PTX file ptxas refuses gives an empty dict."""
    import re
    if PTXAS is None:
        return None
    r = _ptxas_verbose(text, arch, timeout)
    out, fn = {}, None
    for line in (r.stdout + r.stderr).splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            fn = m.group(1)
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and fn is not None:
            out[fn] = int(m.group(1))
            fn = None
    return out


def sass(text: str, arch: str = "sm_90a", lineinfo: bool = False, disassembler: str = "cuobjdump",
         timeout: float = 300) -> tuple | None:
    """``(True, listing)`` of what ptxas makes of ``text`` (``cuobjdump -sass``, or ``nvdisasm -g -hex`` with the
    PTX line of every SASS instruction, which wants ``.loc`` directives and ``lineinfo``), ``(False, ptxas log)``
    when ptxas refuses it, or None when ptxas or the disassembler is not on PATH."""
    tool = shutil.which(disassembler)
    if PTXAS is None or tool is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        p, cub = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        p.write_text(text)
        r = subprocess.run([PTXAS, f"-arch={arch}", *(["-lineinfo"] if lineinfo else []), str(p), "-o", str(cub)],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode:
            return False, r.stdout + r.stderr
        args = ["-sass"] if disassembler == "cuobjdump" else ["-g", "-hex", "-c"]
        d = subprocess.run([tool, *args, str(cub)], capture_output=True, text=True, timeout=timeout)
        return (d.returncode == 0), d.stdout if d.returncode == 0 else d.stderr


def first_error(log: str) -> str:
    """ptxas's first error message without the 'ptxas file, line N; error :' prefix."""
    for line in log.splitlines():
        if "error" in line and ":" in line:
            return line.split("error", 1)[1].lstrip(" :")
    return log.strip().splitlines()[0] if log.strip() else ""
