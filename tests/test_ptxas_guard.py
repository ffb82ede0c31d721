"""ptxas is the reference for what is legal PTX; tcsim must agree with it at the edges.

(a) Every ``.ptx`` file shipped under ``examples/`` and ``tests/`` is accepted by ``ptxas -arch=<its .target>``
    (files whose names mark them as deliberately broken -- ``invalid``, ``malformed``, ``bad_``, ``reject`` --
    are left out).  A PTX example that the real assembler refuses would make every simulator result built on
    it meaningless.
(b) A table of small invalid programs, each a one-line mutation of a valid kernel: ptxas rejects every one of
    them, and so must ``tcsim.isa.parser.parse``, with :class:`tcsim.isa.errors.PtxSyntaxError`.  The valid kernel itself
    is a control that both accept.

ptxas runs go through a thread pool once per session; without ptxas on PATH the ptxas halves skip cleanly
(the parser half of (b) still runs).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PTXAS = shutil.which("ptxas")
SKIP_MARKERS = ("invalid", "malformed", "bad_", "reject")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not on PATH")


def _shipped_ptx() -> list:
    found = []
    for top in ("examples", "tests"):
        root = REPO / top
        if not root.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            # (tests/robust_regressions holds minimised bad inputs of the robustness fuzzer: rejected on purpose)
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("__pycache__",
                                                                                           "robust_regressions"))
            for name in sorted(filenames):
                if name.endswith(".ptx") and not any(m in name.lower() for m in SKIP_MARKERS):
                    found.append(Path(dirpath) / name)
    return found


SHIPPED = _shipped_ptx()


def _target(text: str) -> str:
    m = re.search(r"^\s*\.target\s+([\w]+)", text, flags=re.M)
    return m.group(1) if m else "sm_80"


def _run_ptxas(path: Path, arch: str) -> tuple:
    try:
        r = subprocess.run([PTXAS, f"-arch={arch}", str(path), "-o", os.devnull],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return (-1, "ptxas timed out after 120 s")
    return (r.returncode, (r.stdout + r.stderr).strip())


def _ptxas_all(jobs: list) -> dict:
    """Run ptxas on every ``(key, path, arch)`` concurrently; returns ``{key: (returncode, output)}``."""
    workers = max(2, min(8, os.cpu_count() or 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {key: pool.submit(_run_ptxas, path, arch) for key, path, arch in jobs}
        return {key: f.result() for key, f in futures.items()}


# ------------------------------------------------------------------------------ (a) shipped PTX assembles


@pytest.fixture(scope="session")
def shipped_results() -> dict:
    return _ptxas_all([(p, p, _target(p.read_text())) for p in SHIPPED])


def test_some_shipped_ptx_found():
    assert SHIPPED, "no .ptx files under examples/ or tests/"


@needs_ptxas
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_shipped_ptx_accepted_by_ptxas(path, shipped_results):
    rc, out = shipped_results[path]
    arch = _target(path.read_text())
    assert rc == 0, f"ptxas -arch={arch} rejects {path.relative_to(REPO)}:\n{out}"


# -------------------------------------------------------------------- (b) tcsim rejects what ptxas rejects

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n\n"
BODY = """\
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<3>;

\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r1, %tid.x;
\tsetp.gt.u32 %p1, %r1, 31;
\t@%p1 bra $L_done;
\tadd.s32 %r2, %r1, 1;
\tst.global.u32 [%rd2], %r2;
$L_done:
\tret;
}
"""
VALID = HEAD + BODY


def _mut(old: str, new: str) -> str:
    assert old in BODY, old
    return HEAD + BODY.replace(old, new, 1)


#: name -> PTX text.  Each is rejected by ptxas (CUDA 13.0) with the message noted.
INVALID = {
    # "Unknown symbol '%r9'"
    "undeclared_register": _mut("add.s32 %r2, %r1, 1;", "add.s32 %r9, %r1, 1;"),
    # "Unknown symbol '%p7'"
    "undeclared_guard_predicate": _mut("@%p1 bra $L_done;", "@%p7 bra $L_done;"),
    # "Parsing error near 'setp'"
    "missing_semicolon": _mut("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %tid.x"),
    # "Parsing error near '%r1'"
    "missing_comma": _mut("add.s32 %r2, %r1, 1;", "add.s32 %r2 %r1, 1;"),
    # "Unknown symbol '$L_nowhere'"
    "unknown_label": _mut("@%p1 bra $L_done;", "@%p1 bra $L_nowhere;"),
    # "Duplicate definition of label '$L_done'"
    "duplicate_label": _mut("\tret;\n", "\tret;\n$L_done:\n\tret;\n"),
    # "Not a name of any known instruction: '$L_done'"
    "label_missing_colon": _mut("$L_done:\n", "$L_done\n"),
    # "Parsing error near ''" (end of file)
    "unterminated_block": VALID.rstrip().rstrip("}"),
    # "Parsing error near '}'"
    "extra_closing_brace": VALID + "}\n",
    # "Parsing error near '{'"
    "unterminated_param_list": _mut("\t.param .u64 k_param_0\n)", "\t.param .u64 k_param_0\n"),
    # "Parsing error near 'abc'"
    "bad_decimal_immediate": _mut("add.s32 %r2, %r1, 1;", "add.s32 %r2, %r1, 12abc;"),
    # "Parsing error near 'xZZ'"
    "bad_hex_immediate": _mut("add.s32 %r2, %r1, 1;", "add.s32 %r2, %r1, 0xZZ;"),
    # "Parsing error near 'f3F80'" (0f needs exactly 8 hex digits)
    "short_float_immediate": _mut("add.s32 %r2, %r1, 1;", "mov.b32 %r2, 0f3F80;"),
    # "Duplicate definition of variable '%r1'"
    "duplicate_register": _mut("\t.reg .b64 %rd<3>;", "\t.reg .b64 %rd<3>;\n\t.reg .b32 %r1;"),
    # "Parsing error near '.b33'"
    "unknown_register_type": _mut("\t.reg .b64 %rd<3>;", "\t.reg .b64 %rd<3>;\n\t.reg .b33 %x;"),
    # "Parsing error near '%q'"
    "reg_decl_missing_type": _mut("\t.reg .b64 %rd<3>;", "\t.reg .b64 %rd<3>;\n\t.reg %q;"),
    # "Unknown symbol 'k_param_7'"
    "undeclared_param_in_address": _mut("ld.param.u64 %rd1, [k_param_0];", "ld.param.u64 %rd1, [k_param_7];"),
    # "Unknown symbol 'no_such_var'"
    "undeclared_variable_in_address": _mut("st.global.u32 [%rd2], %r2;", "st.global.u32 [no_such_var], %r2;"),
    # "Parsing error near ';'"
    "unclosed_address": _mut("st.global.u32 [%rd2], %r2;", "st.global.u32 [%rd2, %r2;"),
    # "Parsing error near ';'"
    "unclosed_vector": _mut("st.global.u32 [%rd2], %r2;", "st.global.v2.u32 [%rd2], {%r2, %r3;"),
    # "Unknown symbol '%tidd'"
    "unknown_special_register": _mut("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %tidd.x;"),
    # "Not a name of any known instruction: 'frobnicate'"
    "unknown_opcode": _mut("add.s32 %r2, %r1, 1;", "frobnicate.s32 %r2, %r1, 1;"),
    # "Parsing error near '.frobnicate'"
    "unknown_directive": _mut("\t.reg .b64 %rd<3>;", "\t.reg .b64 %rd<3>;\n\t.frobnicate 3;"),
    # "Unknown symbol '%t'": a register declared in a { } scope is not visible after it
    "scoped_register_used_outside": _mut(
        "add.s32 %r2, %r1, 1;", "{\n\t.reg .b32 %t;\n\tmov.u32 %t, 1;\n\t}\n\tadd.s32 %r2, %t, 1;"),
    # "Unknown symbol '$L_inner'": nor is a label declared in a { } scope
    "scoped_label_branched_from_outside": _mut(
        "@%p1 bra $L_done;", "@%p1 bra $L_inner;\n\t{\n$L_inner:\n\tmov.u32 %r3, 1;\n\t}"),
    # "Duplicate definition of function 'k'"
    "duplicate_entry": VALID + BODY,
    # "Missing .version directive at start of file"
    "missing_version": ".target sm_80\n.address_size 64\n\n" + BODY,
    # "Missing .version directive at start of file" (".version 8" is not MAJOR.MINOR)
    "malformed_version": ".version 8\n.target sm_80\n.address_size 64\n\n" + BODY,
    # "Missing .target directive at start of file"
    "missing_target": ".version 8.0\n.address_size 64\n\n" + BODY,
}


@pytest.fixture(scope="session")
def snippet_results(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("ptxas_snippets")
    jobs = []
    for name, text in {"valid_control": VALID, **INVALID}.items():
        p = d / f"{name}.ptx"
        p.write_text(text)
        jobs.append((name, p, "sm_80"))
    return _ptxas_all(jobs)


@needs_ptxas
def test_control_snippet_accepted_by_ptxas(snippet_results):
    rc, out = snippet_results["valid_control"]
    assert rc == 0, out


def test_control_snippet_accepted_by_parser():
    from tcsim.isa.parser import parse

    mod = parse(VALID, "valid_control.ptx")
    assert list(mod.kernels) == ["k"] and len(mod.kernel("k").body) == 8


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_snippet_rejected_by_ptxas_and_parser(name, request):
    from tcsim.isa.errors import PtxSyntaxError
    from tcsim.isa.parser import parse

    text = INVALID[name]
    if PTXAS is not None:
        rc, out = request.getfixturevalue("snippet_results")[name]
        assert rc != 0, f"ptxas accepts the '{name}' snippet, so it does not belong in this table"
    with pytest.raises(PtxSyntaxError) as info:
        parse(text, f"{name}.ptx")
    err = info.value
    # the diagnostic carries a position in this snippet (whole-file problems may point at line 1)
    assert err.loc is not None, f"{name}: PtxSyntaxError without a source location: {err}"
    assert err.loc.file == f"{name}.ptx" and 1 <= err.loc.line <= text.count("\n") + 1, str(err)
