"""One-instruction probes of ptxas's typing rules: a fixed kernel (:data:`TEMPLATE`, registers of every type, a
.shared, a .local, a .global and a .const variable, three kernel parameters) with one instruction line inserted.

``python -m calib.ptxas_agree.probes calib/ptxas_agree/probe_lines.txt > tests/isa/typing_probes.tsv`` runs ``ptxas -arch=sm_90a`` and
``-arch=sm_100a`` on every line and writes ``line<TAB>verdict<TAB>first error`` (verdict ``OK``/``ERR``; the two
targets agree on every line recorded); ``tests/isa/test_typing_rules.py`` replays the table through ``tcsim
check`` (and through ptxas, where it is on PATH, under ``-m slow``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

TEMPLATE = """.version 8.7
.target {arch}
.address_size 64
.global .align 16 .b8 gm[64];
.const .align 16 .b8 cm[64];
.visible .entry k(.param .u64 pa, .param .u32 pb, .param .align 16 .b8 pv[16])
{{
  .reg .pred %p<4>; .reg .b16 %rs<4>; .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .f32 %f<4>; .reg .f64 %fd<4>;
  .reg .b8 %c<4>; .reg .u8 %uc<4>; .reg .s8 %sc<4>; .reg .f16 %h<4>; .reg .s32 %s<4>; .reg .u64 %ud<4>;
  .reg .b128 %q<2>; .reg .f16x2 %hh<2>; .reg .u16 %us<2>; .reg .s16 %ss<2>; .reg .u32 %u<4>; .reg .s64 %sd<4>;
  .shared .align 16 .b8 sm[1024];
  .local .align 16 .b8 lm[64];
  {line}
  ret;
}}
"""


def probe_text(line: str, arch: str = "sm_90a") -> str:
    return TEMPLATE.format(arch=arch, line=line)


def ptxas_probe(line: str, arch: str = "sm_90a", ptxas: str = "ptxas") -> tuple:
    """(``'OK'`` | ``'ERR'``, first error line) of ptxas on the probe kernel with ``line``."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "p.ptx")
        with open(p, "w") as f:
            f.write(probe_text(line, arch))
        r = subprocess.run([ptxas, f"-arch={arch}", p, "-o", os.path.join(d, "o.cubin")], capture_output=True,
                           text=True, timeout=60)
    log = (r.stdout + r.stderr).replace(p, "p.ptx")
    msg = next((ln for ln in log.splitlines() if "error" in ln or "fatal" in ln), "")
    if r.returncode < 0:
        msg = f"ptxas crashed (signal {-r.returncode})"
    return ("OK" if r.returncode == 0 else "ERR"), msg.split(";", 1)[-1].strip()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    lines = [ln.rstrip("\n") for ln in open(argv[0]) if ln.strip() and not ln.startswith("#")]
    with ThreadPoolExecutor(4) as ex:
        a = list(ex.map(lambda ln: ptxas_probe(ln, "sm_90a"), lines))
        b = list(ex.map(lambda ln: ptxas_probe(ln, "sm_100a"), lines))
    for ln, (v9, m9), (v10, _) in zip(lines, a, b):
        if v9 != v10:
            print(f"# {ln}: sm_90a {v9}, sm_100a {v10} -- left out", file=sys.stderr)
            continue
        print(f"{ln}\t{v9}\t{m9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
