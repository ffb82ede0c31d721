"""One-instruction probes of ptxas's typing rules: a fixed kernel (:data:`TEMPLATE`, registers of every type, a
.shared, a .local, a .global and a .const variable, three kernel parameters) with one instruction line inserted.

``python -m calib.ptxas_agree.probes calib/ptxas_agree/probe_lines.txt > tests/isa/typing_probes.tsv`` runs ``ptxas -arch=sm_90a`` and
``-arch=sm_100a`` on every line and writes ``line<TAB>verdict<TAB>first error`` (verdict ``OK``/``ERR``; the two
targets agree on every line recorded; a line prefixed ``sm_100a: `` is probed on sm_100a alone); ``tests/isa/test_typing_rules.py`` replays the table through ``tcsim
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
.func (.param .b32 fr) f(.param .b32 fa, .param .b64 fb)
{{
  .reg .b32 %t;
  ld.param.b32 %t, [fa];
  st.param.b32 [fr], %t;
  ret;
}}
.func g(.param .align 4 .b8 ga[8])
{{
  ret;
}}
.visible .entry k(.param .u64 pa, .param .u32 pb, .param .align 16 .b8 pv[16])
{{
  .reg .pred %p<4>; .reg .b16 %rs<4>; .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .f32 %f<4>; .reg .f64 %fd<4>;
  .reg .b8 %c<4>; .reg .u8 %uc<4>; .reg .s8 %sc<4>; .reg .f16 %h<4>; .reg .s32 %s<4>; .reg .u64 %ud<4>;
  .reg .b128 %q<2>; .reg .f16x2 %hh<2>; .reg .u16 %us<2>; .reg .s16 %ss<2>; .reg .u32 %u<4>; .reg .s64 %sd<4>;
  .shared .align 16 .b8 sm[1024];
  .local .align 16 .b8 lm[64];
  .param .b32 ca; .param .b64 cb; .param .b32 cr; .param .f32 cf; .param .b16 ch; .param .align 4 .b8 carr[4];
  .param .align 4 .b8 carr8[8];
  {line}
  ret;
}}
"""
#: the 1-based line of {line} in TEMPLATE
PROBE_LINE = TEMPLATE.split("{line}")[0].count("\n") + 1
#: a probe line with this prefix is probed on sm_100a only (tcgen05 and other sm_100a-only instructions)
SM100 = "sm_100a: "


def probe_arch(line: str) -> tuple:
    """(the probe's instruction line, the target it is probed on)."""
    return (line[len(SM100):], "sm_100a") if line.startswith(SM100) else (line, "sm_90a")


def probe_text(line: str, arch: str = "sm_90a") -> str:
    return TEMPLATE.format(arch=arch, line=line)


def ptxas_probe(line: str, arch: str = "sm_90a", ptxas: str = "ptxas") -> tuple:
    """(``'OK'`` | ``'ERR'``, first error line) of ptxas on the probe kernel with ``line``."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "p.ptx")
        with open(p, "w", encoding="utf-8") as f:
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
    lines = [ln.rstrip("\n") for ln in open(argv[0], encoding="utf-8") if ln.strip() and not ln.startswith("#")]
    with ThreadPoolExecutor(4) as ex:
        a = list(ex.map(lambda ln: ptxas_probe(*probe_arch(ln)), lines))
        b = list(ex.map(lambda ln: ptxas_probe(probe_arch(ln)[0], "sm_100a") if not ln.startswith(SM100)
                        else None, lines))
    for ln, (v9, m9), r10 in zip(lines, a, b):
        if r10 is not None and v9 != r10[0]:
            print(f"# {ln}: sm_90a {v9}, sm_100a {r10[0]} -- left out", file=sys.stderr)
            continue
        print(f"{ln}\t{v9}\t{m9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
