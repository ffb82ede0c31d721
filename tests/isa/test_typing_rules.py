"""``tcsim check`` agrees with ptxas on the PTX ISA typing rules (isa/typing_rules.py, isa/decl_rules.py).

The oracle is ptxas 13.0: ``tests/isa/typing_probes.tsv`` holds its verdict on one-instruction probes (the kernel of
``calib/ptxas_agree/probes.py`` with one line; sm_90a and sm_100a agree on every line), made by
``python -m calib.ptxas_agree.probes``.  Every probe must get ptxas's accept/reject verdict from ``tcsim check``,
except the few in :data:`KNOWN` (legal PTX tcsim does not execute, or tcsim's parser being stricter), each with its
reason.  The declaration cases are ptxas verdicts recorded the same way (commands in the comments).  Probes that
both accept and that touch no memory also *run* (no error that check could have found appears first at run time).
Under ``-m slow`` with ptxas on PATH the recorded verdicts are replayed through ptxas itself.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from calib.ptxas_agree.probes import PROBE_LINE, probe_arch, probe_text, ptxas_probe
from tcsim.cli import check_ptx_text
from tcsim.isa.errors import TcsimError, UnsupportedError
from tcsim.launch import Launch, run_launch

TABLE = Path(__file__).with_name("typing_probes.tsv")
PTXAS = shutil.which("ptxas")


def _probes() -> list:
    out = []
    for ln in TABLE.read_text().splitlines():
        if ln.startswith("#") or not ln.strip():
            continue
        line, verdict, msg = (ln.split("\t") + ["", ""])[:3]
        out.append((line, verdict, msg))
    return out


PROBES = _probes()

#: probe -> why tcsim's verdict differs from ptxas's
KNOWN = {
    "mov.b64 %rd1, {%r1, %p1};": "unsupported: a predicate element in a pack (legal, not executed by tcsim)",
    "mov.b64 {%p1, %r2}, %rd1;": "unsupported: a predicate element in an unpack",
    "mov.u64 %rd1, %current_graph_exec;": "unsupported: %current_graph_exec is not modelled",
    "mov.v4.u32 {%r0,%r1,%r2,%r3}, %tid;": "unsupported: a .v4 move of a whole special register",
    "mov.v4.u32 {%r0,%r1,%r2,%r3}, %ntid;": "unsupported: a .v4 move of a whole special register",
    "mov.u32 %r1, %ctaid.w;": "parser: %ctaid.w (the unused fourth component) is not accepted",
    "ld.global.u32 %r1, [%clock];": "parser: a special register as an address base is not accepted",
    "ld.global.u32 %r1, [%laneid];": "parser: a special register as an address base is not accepted",
    "ld.global.u32 %r1, [%rd2+18446744073709551616];": "parser: an address offset beyond 64 bits is rejected "
                                                       "(ptxas wraps it)",
    "getctarank.u64 %rd1, %rd2;": "accepted by tcsim: the destination of getctarank is not size-checked yet",
    "add.bf16x2 %r1, %r2, 48;": "accepted by tcsim: integer immediates of bf16x2 operands are not rejected yet",
    "cvt.rn.f16.bf16 %h0, -1;": "accepted by tcsim: integer immediates of a bf16 cvt source are not rejected yet",
    "cvt.rn.f32.bf16 %f0, 1;": "accepted by tcsim: integer immediates of a bf16 cvt source are not rejected yet",
    # deliberately stricter than ptxas 13.0 (which accepts them; the hardware's behaviour is undefined)
    "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%p1}, [%r2];": "strict: a predicate in ldmatrix's vector",
    "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r1, %p1}, [%r2];": "strict: a predicate in ldmatrix's vector",
    "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r2], {%p1};": "strict: a predicate in stmatrix's vector",
    "stmatrix.sync.aligned.m8n8.x2.shared.b16 [%r2], {%r1, %p1};": "strict: a predicate in stmatrix's vector",
    "movmatrix.sync.aligned.m8n8.trans.b16 %p1, %r2;": "strict: a predicate as movmatrix's destination",
    "movmatrix.sync.aligned.m8n8.trans.b16 %r1, %p2;": "strict: a predicate as movmatrix's source",
    "fence.proxy.tensormap::generic.acquire.gpu [%f1], 128;": "strict: a float register as an address",
    "cvt.rn.f64.u32 %q0, %r1;": "strict: a .b128 register as a wider cvt destination",
    "cvt.u64.u32 %q0, %r1;": "strict: a .b128 register as a wider cvt destination",
    "ld.global.f64 %q0, [%rd1];": "strict: a .b128 register as a wider ld destination",
    "ld.global.b64 %q0, [%rd1];": "strict: a .b128 register as a wider ld destination",
    # tcsim's call semantics (sim/semantics/calls.py) take results in .param variables only
    "call (%r1), f, (ca, cb);": "decoder: a register as a call's return operand is not supported",
    "call (%f1), f, (ca, cb);": "decoder: a register as a call's return operand is not supported",
    "call (_), f, (ca, cb);": "decoder: a discarded call result (_) is not supported",
}


def tcsim_verdict(text: str) -> tuple:
    errs = check_ptx_text(text, "p.ptx")
    return ("ERR", errs[0]) if errs else ("OK", None)


def test_table_is_large_and_balanced():
    verdicts = [v for _, v, _ in PROBES]
    assert len(PROBES) >= 400 and verdicts.count("OK") >= 150 and verdicts.count("ERR") >= 150


@pytest.mark.parametrize("line,verdict,msg", PROBES, ids=[p[0] for p in PROBES])
def test_check_agrees_with_ptxas(line, verdict, msg):
    got, err = tcsim_verdict(probe_text(*probe_arch(line)))
    if line in KNOWN:
        assert got != verdict, KNOWN[line]
        return
    assert got == verdict, f"ptxas: {verdict} {msg}; tcsim check: {err}"
    if err is not None:                                        # a located diagnostic on the probe's line
        assert err.loc is not None and err.loc.line == PROBE_LINE, err


def test_known_disagreements_are_still_in_the_table():
    assert set(KNOWN) <= {p[0] for p in PROBES}


def test_unsupported_ones_are_unsupported_errors():
    for line, why in KNOWN.items():
        if why.startswith("unsupported"):
            _, err = tcsim_verdict(probe_text(*probe_arch(line)))
            assert isinstance(err, UnsupportedError), (line, err)


# --------------------------------------------------------------------------------- checked constructs also run
_RUNNABLE_OPS = ("mov", "cvt", "and", "or", "xor", "add", "setp", "selp", "prmt", "shl", "mul", "cvta")


def _runnable(line: str) -> bool:
    return (line.split(".")[0].split()[0] in _RUNNABLE_OPS and "[" not in line
            and not any(s in line for s in ("gm", "sm", "lm", "cm", "pa", "pb", "pv", " k;")))


RUN = [p[0] for p in PROBES if p[1] == "OK" and p[0] not in KNOWN and _runnable(p[0])]


def test_accepted_register_probes_run():
    """Every probe both ptxas and tcsim check accept, that touches no memory, runs without error (item 3 of
    issue 17: mov.s8 %f1, 0f00000000 and mov.b16 %rs1, 0f3F800000 used to pass check and die at run time)."""
    assert len(RUN) >= 60
    failures = []
    for line in RUN:
        text = probe_text(line).replace(".param .u64 pa, .param .u32 pb, .param .align 16 .b8 pv[16]",
                                        ".param .u64 pa")
        try:
            run_launch(Launch(ptx=text, grid=(1, 1, 1), block=(32, 1, 1), args=[np.zeros(4, np.uint64)]))
        except TcsimError as e:
            failures.append(f"{line}: {e}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("line", ["mov.s8 %f1, 0f00000000;", "mov.b16 %rs1, 0f3F800000;",
                                  "and.b16 %rs1, %rs2, 0f3F800000;", "selp.b32 %r1, %r2, 1.5, %p1;"])
def test_float_immediates_that_died_at_run_time_are_check_errors(line):
    got, err = tcsim_verdict(probe_text(line))
    assert got == "ERR" and err.loc.line == PROBE_LINE


def test_mov_v2_copies_element_wise():
    head, tail = probe_text("mov.v2.u32 {%r0, %r1}, {%r2, %r3};").rsplit("  ret;", 1)     # (the kernel's ret)
    text = (head + "  ld.param.u64 %rd1, [pa];\n  st.global.v2.u32 [%rd1], {%r0, %r1};\n  ret;" + tail).replace(
        "  mov.v2.u32", "  mov.u32 %r2, 11;\n  mov.u32 %r3, 22;\n  mov.v2.u32")
    out = np.zeros(2, np.uint32)
    text = text.replace(".param .u64 pa, .param .u32 pb, .param .align 16 .b8 pv[16]", ".param .u64 pa")
    r = run_launch(Launch(ptx=text, grid=(1, 1, 1), block=(1, 1, 1), args=[out]))
    assert list(r.outputs[0]) == [11, 22]


# --------------------------------------------------------------------------------- declarations
_DECL_KERNEL = """.version {ver}
.target {arch}
.address_size 64
{mod}
.visible .entry k({params})
{{
  .reg .b32 %r<4>;
{body}
  ret;
}}
"""
#: (arch, .version, module scope, params, body, ptxas 13.0 verdict) -- each verdict recorded with
#: ``ptxas -arch=<arch>`` on _DECL_KERNEL (first error quoted)
DECLS = [
    ("sm_90a", "8.7", "", ".param .align 4 .b8 p[32764]", "", "OK"),
    ("sm_90a", "8.7", "", ".param .align 4 .b8 p[32765]", "", "ERR"),   # too much parameter space (0x7ffc max)
    ("sm_100a", "8.7", "", ".param .align 4 .b8 p[32768]", "", "ERR"),
    ("sm_90a", "8.7", "", ".param .u32 a, .param .align 4 .b8 p[32760]", "", "OK"),
    ("sm_90a", "8.7", "", ".param .u32 a, .param .align 8 .b8 p[32760]", "", "ERR"),   # 0x8000 after alignment
    ("sm_90a", "8.0", "", ".param .align 4 .b8 p[4352]", "", "OK"),
    ("sm_90a", "8.0", "", ".param .align 4 .b8 p[4353]", "", "ERR"),    # 0x1100 max before PTX ISA 8.1
    ("sm_90a", "8.1", "", ".param .align 4 .b8 p[4353]", "", "OK"),
    ("sm_90a", "8.7", "", ".param .u32 a", ".shared .align 4 .b8 s[232448];", "OK"),
    ("sm_90a", "8.7", "", ".param .u32 a", ".shared .align 4 .b8 s[232449];", "ERR"),   # too much shared data
    ("sm_100a", "8.7", "", ".param .u32 a", ".shared .align 4 .b8 s[232449];", "ERR"),
    ("sm_80", "8.5", "", ".param .u32 a", ".shared .align 4 .b8 s[49152];", "OK"),
    ("sm_80", "8.5", "", ".param .u32 a", ".shared .align 4 .b8 s[49153];", "ERR"),    # 0xc000 max (sm_7x, sm_8x)
    ("sm_89", "8.5", "", ".param .u32 a", ".shared .align 4 .b8 s[49153];", "ERR"),
    ("sm_90a", "8.7", ".const .align 4 .b8 c[65536];", ".param .u32 a", "", "OK"),
    ("sm_90a", "8.7", ".const .align 4 .b8 c[65537];", ".param .u32 a", "", "ERR"),    # too much constant data
    ("sm_90a", "8.7", ".global .align 4 .b8 g[4000000000];", ".param .u32 a", "", "OK"),
    ("sm_90a", "8.7", "", ".param .u32 a", ".local .align 4 .b8 l[4000000000];", "OK"),
    ("sm_90a", "8.7", "", ".param .u32 a", ".shared .align 16 .bf16 s[16];", "ERR"),   # Parsing error near .bf16
    ("sm_90a", "8.7", "", ".param .bf16 a", "", "ERR"),
    ("sm_90a", "8.7", "", ".param .u32 a", ".shared .align 16 .f16 s[16];", "OK"),
    ("sm_90a", "8.7", "", ".param .e4m3 a", "", "ERR"),    # may only be used as an instruction type
    ("sm_90a", "8.7", "", ".param .u32 a", ".shared .align 16 .pred s[16];", "ERR"),
    ("sm_90a", "8.7", "", ".param .pred a", "", "ERR"),
    ("sm_90a", "8.7", "", ".param .f16x2 a", "", "ERR"),   # cannot be allocated in .param state space
    ("sm_90a", "8.7", "", ".param .u32 a", ".shared .align 16 .f16x2 s[16];", "OK"),
    ("sm_90a", "8.7", "", ".param .u32 a", ".shared .align 16 .tf32 s[16];", "ERR"),
    ("sm_90a", "8.7", "", ".param .u32 a", ".reg .bf16 %x;", "ERR"),
    ("sm_90a", "8.7", "", ".param .u32 a", "{ .param .align 256 .b32 q; st.param.b32 [q], %r1; }", "ERR"),
    ("sm_90a", "8.7", "", ".param .u32 a", "{ .param .align 128 .b32 q; st.param.b32 [q], %r1; }", "OK"),
]


def _decl_text(c) -> str:
    arch, ver, mod, params, body, _ = c
    return _DECL_KERNEL.format(arch=arch, ver=ver, mod=mod, params=params, body="  " + body)


@pytest.mark.parametrize("case", DECLS, ids=[f"{c[0]}-{c[1]}-{c[2]}{c[3]}{c[4]}" for c in DECLS])
def test_declarations_agree_with_ptxas(case):
    got, err = tcsim_verdict(_decl_text(case))
    assert got == case[-1], err


def test_call_argument_sizes_match_the_callee():
    text = """.version 8.7
.target sm_90a
.address_size 64
.func (.param .b32 r) f(.param .b32 x)
{
  .reg .b32 %r<2>;
  ld.param.b32 %r1, [x];
  st.param.b32 [r], %r1;
  ret;
}
.visible .entry k()
{
  .reg .b32 %r<2>;
  {
  .param .b32 aSIZE;
  .param .b32 rv;
  st.param.b32 [a], 1;
  call (rv), f, (a);
  }
  ret;
}
"""
    assert tcsim_verdict(text.replace("SIZE", ""))[0] == "OK"
    got, err = tcsim_verdict(text.replace("SIZE", "[4]"))    # ptxas 13.0: "Type of argument does not match formal parameter 'x'"
    assert got == "ERR" and "formal parameter" in str(err)


# --------------------------------------------------------------------------------- the oracle itself
@pytest.mark.slow
@pytest.mark.skipif(PTXAS is None, reason="ptxas not on PATH")
def test_recorded_verdicts_are_ptxas_verdicts():
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as ex:
        live = list(ex.map(lambda p: ptxas_probe(*probe_arch(p[0]))[0], PROBES))
    wrong = [(p[0], p[1], v) for p, v in zip(PROBES, live) if p[1] != v]
    assert not wrong, wrong


@pytest.mark.slow
@pytest.mark.skipif(PTXAS is None, reason="ptxas not on PATH")
def test_recorded_declaration_verdicts_are_ptxas_verdicts():
    from calib.ptxas_agree.campaign import ptxas_verdict
    wrong = []
    for c in DECLS:
        v, msg = ptxas_verdict(_decl_text(c), c[0])
        if ("OK" if v == "accept" else "ERR") != c[-1]:
            wrong.append((c, msg))
    assert not wrong, wrong
