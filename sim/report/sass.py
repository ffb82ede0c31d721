"""SASS lines of a PTX kernel for the report's source view: what ptxas made of each PTX line.

tcsim simulates PTX; the machine code a GPU runs is ptxas's SASS.  Where NVIDIA's ``ptxas`` and ``nvdisasm`` are
found (on PATH, under ``$CUDA_HOME`` / ``$CUDA_PATH`` / ``/usr/local/cuda``, or in the CUDA tools Triton bundles in
``triton/backends/nvidia/bin``), :func:`disassemble` compiles the PTX with line information pointing at the PTX
itself and maps each SASS instruction to its PTX line:

1. ``ptxas -arch=ARCH -lineinfo`` compiles the PTX as it is; besides the ``.debug_line`` of the PTX's own ``.loc``
   directives (a Triton kernel's Python lines), ptxas writes ``.nv_debug_line_sass``, the line table of the SASS
   against the PTX text itself (kept in the cubin as ``.nv_debug_ptx_txt``, numbered as the file);
2. ``nvdisasm -gp -c`` prints the SASS of each function with ``//## File ".nv_debug_ptx_txt", line N`` before the
   instructions that line N made;
3. every SASS instruction is listed with its offset, its text and the PTX line of the last such comment above it
   (a function's prologue -- stack pointer, memory descriptor -- is the line of its opening brace).

Listings of the shipped examples (and ``examples/bugs``) are committed (``sass/<example>.<arch>.json`` beside
this module, written by ``python -m tcsim.report.sass --write-examples`` on a machine with the tools, each naming
the tools and the command that made it) so the view also works where no disassembler is installed (CI):
:func:`listing_for` takes a committed listing whose PTX hash matches, else disassembles where the tools are
found, else gives ``{"error": why}`` (the report shows why there is no SASS).

Not supported: PTX that ptxas refuses (the reason is kept in the report), arches the disassembler does not know;
the lines are ptxas's attribution (an instruction it scheduled next to a neighbour's code may carry that line:
wgmma_pipeline_gemm's second HGMMA of a pair is under the descriptor add before the first).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

_HERE = Path(__file__).resolve().parent
DATA = _HERE / "sass"


def _tool_dirs() -> list:
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]) / "bin")
    dirs.append(Path("/usr/local/cuda/bin"))
    try:
        import importlib.util
        spec = importlib.util.find_spec("triton")
        if spec is not None and spec.origin:
            dirs.append(Path(spec.origin).parent / "backends" / "nvidia" / "bin")
    except (ImportError, ValueError):       # a broken triton install: no bundled tools
        pass
    return dirs


def find_tool(name: str) -> str | None:
    """The path of ``name`` (``ptxas``, ``nvdisasm``): PATH first, then the CUDA and Triton folders."""
    p = shutil.which(name)
    if p:
        return p
    for d in _tool_dirs():
        q = d / name
        if q.is_file() and os.access(q, os.X_OK):
            return str(q)
    return None


_FUNC = re.compile(r"^\s*\.section\s+\.text\.([\w$.]+)\s*,")
_LINE = re.compile(r'//##\s*File\s+"[^"]*",\s*line\s+(\d+)')
_INST = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*(?:/\*.*\*/\s*)?$")


def parse_nvdisasm(out: str) -> list:
    """The functions of ``nvdisasm -gp -c`` (or ``-g``) output:
    ``[{"name", "insts": [[offset, ptx line or None, text]]}]``
    (the NOPs padding a function's end left out)."""
    funcs: list = []
    cur = None
    line = None
    for raw in out.splitlines():
        m = _FUNC.match(raw)
        if m:
            cur = {"name": m.group(1), "insts": []}
            funcs.append(cur)
            line = None
            continue
        m = _LINE.search(raw)
        if m:
            line = int(m.group(1))
            continue
        m = _INST.match(raw)
        if m and cur is not None:
            cur["insts"].append([int(m.group(1), 16), line, re.sub(r"\s+", " ", m.group(2)).strip()])
    for f in funcs:             # the NOPs that pad a function's end to its alignment are no line's code
        while f["insts"] and f["insts"][-1][2] == "NOP":
            f["insts"].pop()
    return funcs


@functools.lru_cache(maxsize=None)
def _version(tool: str) -> str:
    try:
        r = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "?"
    lines = [x for x in r.stdout.splitlines() if x.strip()]
    return lines[-1].strip() if lines else "?"


def disassemble(text: str, arch: str, name: str = "kernel.ptx", timeout: float = 120) -> dict:
    """The SASS listing of PTX ``text`` for ``arch``: ``{"arch", "functions", "tools", "command"}``, or ``{"error":
    why}`` (no ptxas / nvdisasm found, ptxas refused the PTX, the disassembler failed)."""
    ptxas, nvdisasm = find_tool("ptxas"), find_tool("nvdisasm")
    if ptxas is None or nvdisasm is None:
        return {"error": "no SASS: ptxas and nvdisasm not found (PATH, $CUDA_HOME/bin, Triton's bundle)"}
    with tempfile.TemporaryDirectory() as tmp:
        p, cubin = Path(tmp) / name, Path(tmp) / "out.cubin"
        p.write_text(text)
        try:
            r = subprocess.run([ptxas, f"-arch={arch}", "-lineinfo", str(p), "-o", str(cubin)],
                               capture_output=True, text=True, timeout=timeout)
            if r.returncode != 0:
                return {"error": "no SASS: ptxas failed: " + (r.stdout + r.stderr).strip()[:400]}
            d = subprocess.run([nvdisasm, "-gp", "-c", str(cubin)], capture_output=True, text=True,
                               timeout=timeout)
        except (OSError, subprocess.SubprocessError) as e:
            return {"error": f"no SASS: {e}"}
    if d.returncode != 0:
        return {"error": "no SASS: nvdisasm failed: " + (d.stdout + d.stderr).strip()[:400]}
    funcs = parse_nvdisasm(d.stdout)
    if not any(f["insts"] for f in funcs):
        return {"error": "no SASS: nvdisasm printed no instructions"}
    return {"arch": arch, "functions": funcs, "tools": f"ptxas {_version(ptxas)}; nvdisasm {_version(nvdisasm)}",
            "command": f"ptxas -arch={arch} -lineinfo {name} -o out.cubin; nvdisasm -gp -c out.cubin"}


def ptx_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def committed_listing(text: str, arch: str) -> dict | None:
    """The committed listing (``sass/*.json``) of exactly this PTX text and arch, or None."""
    h = ptx_hash(text)
    if not DATA.is_dir():
        return None
    for p in sorted(DATA.glob(f"*.{arch}.json")):
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if d.get("ptx_sha256") == h:
            return {**d, "from": f"committed listing {p.name}"}
    return None


def listing_for(text: str, arch: str | None) -> dict:
    """The SASS listing the report shows: a committed one for this exact PTX, else a fresh one (:func:`disassemble`),
    else ``{"error": why}``."""
    if not text or not arch:
        return {"error": "no SASS: no PTX text or arch"}
    got = committed_listing(text, arch)
    if got is not None:
        return got
    d = disassemble(text, arch)
    if "error" not in d:
        d["from"] = "disassembled for this report"
    return d


def write_examples(names=None) -> list:
    """Write ``sass/<example>.<arch>.json`` for the shipped examples (``python -m tcsim.report.sass
    --write-examples``); returns the files written.  Needs ptxas and nvdisasm."""
    ex = _HERE.parent.parent / "examples"
    if not ex.is_dir():
        from .. import examples as _ex
        ex = Path(_ex.__file__).parent
    DATA.mkdir(exist_ok=True)
    written = []
    for p in sorted(ex.glob("*.ptx")) + sorted(ex.glob("bugs/*.ptx")):
        stem = p.stem if p.parent == ex else f"bugs.{p.stem}"
        if names and stem not in names:
            continue
        text = p.read_text()
        m = re.search(r"^\s*\.target\s+(sm_\w+)", text, re.M)
        if not m:
            continue
        d = disassemble(text, m.group(1), name=p.name)
        if "error" in d:
            print(f"{p.name}: {d['error']}")
            continue
        d = {"example": str(p.relative_to(ex)), "ptx_sha256": ptx_hash(text), **d,
             "made_by": "python -m tcsim.report.sass --write-examples"}
        out = DATA / f"{stem}.{m.group(1)}.json"
        out.write_text(json.dumps(d, separators=(",", ":")) + "\n")
        written.append(out)
        print(f"{out.name}: {sum(len(f['insts']) for f in d['functions'])} SASS instructions")
    return written


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m tcsim.report.sass", description=__doc__.split("\n")[0])
    ap.add_argument("--write-examples", nargs="*", metavar="NAME", default=None,
                    help="write the committed listings of the examples (all, or the NAMEs)")
    ap.add_argument("ptx", nargs="?", help="print the SASS of this PTX file, each line with its PTX line")
    a = ap.parse_args(argv)
    if a.write_examples is not None:
        return 0 if write_examples(a.write_examples or None) else 1
    if not a.ptx:
        ap.print_usage()
        return 2
    text = Path(a.ptx).read_text()
    m = re.search(r"^\s*\.target\s+(sm_\w+)", text, re.M)
    d = disassemble(text, m.group(1) if m else "sm_90a", name=Path(a.ptx).name)
    if "error" in d:
        print(d["error"])
        return 1
    for f in d["functions"]:
        print(f"{f['name']}:")
        for off, line, t in f["insts"]:
            print(f"  /*{off:04x}*/ {t:<60} // line {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["find_tool", "parse_nvdisasm", "disassemble", "committed_listing", "listing_for",
           "write_examples", "ptx_hash"]
