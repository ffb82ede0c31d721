"""Regenerate ``isa/cvt_forms.py``: which float-to-float ``cvt`` modifier combinations ptxas accepts.

``python -m tcsim.isa.gen_cvt_forms`` assembles one tiny kernel per candidate form (destination f16/bf16/f32/f64/tf32,
source f16/bf16/f32/f64, every rounding modifier or none, with and without ``.ftz``, and ``.sat``/``.satfinite``/
``.relu`` combinations) with ``ptxas`` for each target in :data:`TARGETS`, and writes the accepted forms.
tcsim's cvt decoder consults that table so that it accepts exactly what ptxas accepts; a rejection lists the
modifier sets ptxas does accept for the same types.
"""
from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import ptxas

TARGETS = {"sm_90a": "8.5", "sm_100a": "8.7"}
DSTS = ("f16", "bf16", "f32", "f64", "tf32")
SRCS = ("f16", "bf16", "f32", "f64")
RNDS = ("", "rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi")
SATS = ("", "sat", "satfinite", "relu", "satfinite.relu")
_W = {"f16": 16, "bf16": 16, "f32": 32, "tf32": 32, "f64": 64}
OUT = Path(__file__).with_name("cvt_forms.py")


def key(dst: str, src: str, mods) -> str:
    """Canonical form name: ``dst.src`` and the sorted modifiers, e.g. ``f16.f32:ftz.rn.sat``."""
    return f"{dst}.{src}:" + ".".join(sorted(m for m in mods if m))


def candidates():
    for d in DSTS:
        for s in SRCS:
            for r in RNDS:
                for f in ("", "ftz"):
                    for sat in SATS:
                        yield d, s, tuple(x for x in (r, f, *sat.split(".")) if x)


def _assemble(args):
    target, version, (d, s, mods) = args
    m = "".join("." + x for x in mods)
    text = (f".version {version}\n.target {target}\n.address_size 64\n.visible .entry k(.param .u64 o)\n{{\n"
            f"\t.reg .b{_W[d]} %x;\n\t.reg .b{_W[s]} %y;\n\t.reg .b64 %a;\n\tld.param.u64 %a, [o];\n"
            f"\tld.global.b{_W[s]} %y, [%a];\n\tcvt{m}.{d}.{s} %x, %y;\n\tst.global.b{_W[d]} [%a], %x;\n\tret;\n}}\n")
    rc, log = ptxas.assemble(text, target, timeout=60)
    return None if rc == 0 else ptxas.first_error(log)


def main() -> int:
    if ptxas.PTXAS is None:
        print("ptxas is not on PATH", file=sys.stderr)
        return 2
    version = subprocess.run([ptxas.PTXAS, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    cands = list(candidates())
    table = {}
    with ThreadPoolExecutor(16) as ex:
        for target, ptx_version in TARGETS.items():
            msgs = list(ex.map(_assemble, [(target, ptx_version, c) for c in cands]))
            table[target] = {key(d, s, mods): msg for (d, s, mods), msg in zip(cands, msgs)}
    lines = ['"""Float-to-float cvt forms that ptxas accepts -- GENERATED, do not edit.',
             "",
             f"Regenerate with ``python -m tcsim.isa.gen_cvt_forms`` ({version}; {len(cands)} candidate forms per target).",
             "``ACCEPTED[target]`` holds the forms ptxas assembles for that target; every other combination of the",
             "same types and modifiers is rejected by ptxas.  Keys are ``dst.src:`` followed by the sorted modifiers",
             "(:func:`tcsim.isa.gen_cvt_forms.key`).",
             '"""', "", "ACCEPTED = {"]
    base_target = next(iter(table))
    base = {k for k, v in table[base_target].items() if v is None}
    lines.append(f"    {base_target!r}: frozenset({{")
    lines += [f"        {k!r}," for k in sorted(base)]
    lines.append("    }),")
    lines.append("}")
    for target, t in list(table.items())[1:]:
        acc = {k for k, v in t.items() if v is None}
        lines.append(f"ACCEPTED[{target!r}] = ACCEPTED[{base_target!r}] - frozenset({sorted(base - acc)!r}) | "
                     f"frozenset({sorted(acc - base)!r})")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT} ({sum(len(t) for t in table.values())} forms judged)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
