"""Malformed PTX: every case must raise PtxSyntaxError at an exact line and column."""
from __future__ import annotations

import pytest

from tcsim.isa.errors import PtxSyntaxError
from tcsim.isa.parser import parse

H = [".version 9.0", ".target sm_100a"]          # lines 1-2
K = [".visible .entry k()", "{"]                 # lines 3-4 (body '{' is line 4, col 1)


def body(*lines, decl=("    .reg .b32 %r1;",), tail=("}",)):
    """Lines 1-4 are H + K, then the declarations (line 5...), then the given lines, then '}'."""
    return H + K + list(decl) + list(lines) + list(tail)


# (id, source lines, line, col, a fragment the message must contain)
CASES = [
    # --- the required table ----------------------------------------------------------------------------
    ("unterminated block", body("    mov.b32 %r1, 0;", tail=()), 4, 1, "unterminated block"),
    ("unterminated nested block", body("    {", "    mov.b32 %r1, 0;", tail=()), 6, 5, "unterminated block"),
    ("missing semicolon at end of line", body("    mov.b32 %r1, 0", "    ret;"), 6, 19, "missing ';'"),
    ("missing semicolon same line", body("    mov.b32 %r1, 0 ret;"), 6, 20, "expected ',' or ';'"),
    ("missing semicolon after decl", body(decl=("    .reg .b32 %r1", "    ret;")), 5, 18, "missing ';'"),
    ("bad register range: name", body(decl=("    .reg .b32 %r<x>;",)), 5, 18, "bad register range"),
    ("bad register range: empty", body(decl=("    .reg .b32 %r<>;",)), 5, 18, "bad register range"),
    ("bad register range: zero", body(decl=("    .reg .b32 %r<0>;",)), 5, 18, "count must be positive"),
    ("bad register range: float", body(decl=("    .reg .b32 %r<1.5>;",)), 5, 18, "bad register range"),
    ("bad register range: no close", body(decl=("    .reg .b32 %r<4;",)), 5, 19, "expected '>'"),
    ("undeclared register", body("    mov.b32 %r2, 0;"), 6, 13, "undeclared register '%r2'"),
    ("undeclared register in guard", body("    @%p1 ret;"), 6, 6, "undeclared register '%p1'"),
    ("undeclared register in address", body("    ld.b32 %r1, [%rd9];"), 6, 18, "undeclared register '%rd9'"),
    ("undeclared register in vector", body("    mov.b64 %r1, {%r1, %r7};"), 6, 24, "undeclared register '%r7'"),
    ("undeclared register after its scope", body("    {", "    .reg .b32 %t;", "    }", "    mov.b32 %t, 0;"),
     9, 13, "undeclared register '%t'"),
    ("unknown label", body("    bra NOWHERE;"), 6, 9, "undefined label 'NOWHERE'"),
    ("label of a sibling scope", body("    { L1: ret; }", "    bra.uni L1;"), 7, 13, "undefined label 'L1'"),
    ("unterminated comment", body("    mov.b32 %r1, 0; /* oops", "    ret;"), 6, 21, "unterminated /* comment"),
    ("unterminated comment at top", ["/* header"] + H, 1, 1, "unterminated /* comment"),
    ("garbage character", body("    mov.b32 %r1, 0 # 1;"), 6, 20, "unexpected character '#'"),
    ("garbage backtick", body("    mov.b32 %r1, `;"), 6, 18, "unexpected character '`'"),
    ("garbage non-ascii", body("    mov.b32 %r1, \u00e9;"), 6, 18, "unexpected non-ASCII byte 0xc3 ('\u00e9' in UTF-8)"),
    ("bad float literal short", body("    mov.b32 %r1, 0f3F80;"), 6, 18, "bad float literal '0f3F80'"),
    ("bad float literal non-hex", body("    mov.b32 %r1, 0fXYZ00000;"), 6, 18, "bad float literal"),
    ("bad double literal", body("    mov.b32 %r1, 0d3FF00000;"), 6, 18, "exactly 16 hex digits"),
    ("bad decimal float suffix", body("    mov.b32 %r1, 1.5f;"), 6, 18, "bad numeric literal '1.5f'"),
    ("bad exponent", body("    mov.b32 %r1, 1e;"), 6, 18, "bad"),
    ("bad octal", body("    mov.b32 %r1, 09;"), 6, 18, "bad octal literal"),
    ("missing .version", [".target sm_100a", ".address_size 64"], 1, 1, "missing .version"),
    ("missing .version after comments", ["// hi", "/* x */  .target sm_100a"], 2, 10, "missing .version"),
    ("missing .version, empty file", [""], 1, 1, "missing .version"),
    # --- more ------------------------------------------------------------------------------------------
    ("duplicate register", body(decl=("    .reg .b32 %r1;", "    .reg .b32 %r1;")), 6, 15, "duplicate declaration"),
    ("duplicate register from range", body(decl=("    .reg .b32 %r<4>;", "    .reg .b32 %r3;")), 6, 15,
     "duplicate declaration of '%r3'"),
    ("duplicate label", body("L:", "L:", "    ret;"), 7, 1, "duplicate label 'L'"),
    ("duplicate param", H + [".entry k(.param .u32 a, .param .u32 a)", "{", "ret;", "}"], 3, 37,
     "duplicate parameter 'a'"),
    ("unknown instruction", body("    frobnicate.b32 %r1;"), 6, 5, "unknown instruction 'frobnicate'"),
    ("unknown directive in body", body("    .frob 3;"), 6, 5, "unknown or misplaced directive .frob"),
    ("unknown module directive", H + [".frob"], 3, 1, "unknown or misplaced directive .frob"),
    ("perf directive inside body", body("    .maxntid 128;"), 6, 5, "must appear between"),
    ("guard is not a predicate", body("    @%r1 ret;"), 6, 6, "not a .pred register"),
    ("undefined symbol", body("    mov.b32 %r1, nosuch;"), 6, 18, "undefined symbol 'nosuch'"),
    ("undefined symbol in address", body("    ld.b32 %r1, [nosuch+4];"), 6, 18, "undefined symbol 'nosuch'"),
    ("call to undefined function", body("    call nofunc;"), 6, 10, "call to undefined function 'nofunc'"),
    ("call target is a variable", [".version 9.0", ".target sm_90a", ".global .b32 v;"] + K + ["    call v;", "}"], 6, 10,
     "is a variable"),
    ("unterminated address", body("    ld.b32 %r1, [%r1;"), 6, 17, "unterminated address"),
    ("register plus register address", body("    ld.b32 %r1, [%r1+%r1];"), 6, 22, "constant"),
    ("unknown special register", body("    mov.b32 %r1, %tid.w;"), 6, 18, "no component .w"),
    ("unknown special register name", body("    mov.b32 %r1, %foo.x;"), 6, 18, "unknown special register"),
    ("vector element access", body("    mov.b32 %r1, %v.x;", decl=("    .reg .b32 %r1;", "    .reg .v4 .b32 %v;")),
     7, 18, "vector register element access"),
    ("declaring a special register", body(decl=("    .reg .b32 %tid;",)), 5, 15, "special register"),
    ("division by zero", body("    mov.b32 %r1, 4 / (2 - 2);"), 6, 20, "division by zero"),
    ("float expression", body("    mov.f32 %r1, 1.5 * 2;"), 6, 22, "floating-point constant expressions"),
    ("unclosed paren", body("    mov.b32 %r1, (1 + 2;"), 6, 24, "expected ')'"),
    (".loc with unknown file", body("    .loc 3 10 2", "    ret;"), 6, 5, "file index 3"),
    ("bad .loc attribute", body("    .loc 1 10 2, colour 5"), 6, 18, "unknown .loc attribute"),
    ("too many initialisers", H + [".global .b8 s[2] = {1, 2, 3};"], 3, 18, "too many initialisers"),
    ("initialiser with unknown symbol", H + [".global .u64 p = nosym;"], 3, 18, "undefined symbol 'nosym'"),
    ("unterminated section", H + [".section .debug_info", "{", ".b8 1"], 4, 1, "unterminated .section"),
    ("unterminated string", H + ['.file 1 "abc'], 3, 9, "unterminated string"),
    ("preprocessor line", ["#include <x>"] + H, 1, 1, "preprocessor"),
    ("bad .version", [".version 9", ".target sm_100a"], 1, 10, "major.minor"),
    ("duplicate .version", H + [".version 9.0"], 3, 1, "duplicate .version"),
    ("bad address size", H + [".address_size 48"], 3, 15, "32 or 64"),
    ("reg parameter", H + [".func f(.reg .b32 x)", "{", "ret;", "}"], 3, 9, ".reg parameters are not supported"),
    ("param without type", H + [".entry k(.param .align 8 x)", "{", "ret;", "}"], 3, 26, "has no type"),
    ("defined twice", H + [".func f() { ret; }", ".func f() { ret; }"], 4, 7, "defined twice"),
    ("statement outside function", H + ["mov.b32 %r1, 0;"], 3, 1, "expected a directive"),
    ("empty vector", body("    mov.b64 %r1, {};"), 6, 19, "empty vector"),
    ("predicate pair with immediate", body("    setp.eq.s32 1|%p, %r1, 0;"), 6, 19, "expected a constant"),
    ("linkage without declaration", H + [".visible"], 3, 1, "must be followed by a declaration"),
    ("branch targets undefined label", body("ts: .branchtargets L1, L2;", "L1: ret;"), 6, 24,
     "undefined label 'L2' in the .branchtargets list 'ts'"),
    ("branch targets without a label", body("    .branchtargets L1;", "L1: ret;"), 6, 5,
     ".branchtargets must follow the label"),
    ("branch targets not a label", body("ts: .branchtargets %r1;"), 6, 20, "expected a label"),
    ("call targets name no function", body("ct: .calltargets f;"), 6, 18, "call to undefined function 'f'"),
    ("texref unsupported", H + [".global .texref t;"], 3, 9, "not supported"),
    ("missing function body", H + [".entry k()", "ret;"], 4, 1, "expected '{'"),
    ("instruction after closing brace of function", body("    ret;", tail=("}", "}")), 8, 1,
     "expected a directive"),
]


@pytest.mark.parametrize("name,lines,line,col,fragment", CASES, ids=[c[0] for c in CASES])
def test_error_position(name, lines, line, col, fragment):
    src = "\n".join(lines) + "\n"
    with pytest.raises(PtxSyntaxError) as ei:
        parse(src, "bad.ptx")
    e = ei.value
    assert e.loc is not None
    assert (e.loc.line, e.loc.col) == (line, col), f"{e}"
    assert fragment in e.message, e.message
    assert e.loc.file == "bad.ptx"
    src_lines = src.split("\n")
    assert e.loc.text == src_lines[line - 1]
    assert str(e).startswith(f"bad.ptx:{line}:{col}: syntax error: ")


def test_error_message_format():
    with pytest.raises(PtxSyntaxError) as ei:
        parse("\n".join(body("    mov.b32 %r2, 0;")), "x.ptx")
    s = str(ei.value)
    assert s.startswith("x.ptx:6:13: syntax error: undeclared register '%r2'")
    assert "Offending text: `mov.b32 %r2, 0;`" in s


def test_missing_semicolon_before_closing_brace_or_label():
    for tail, where in (("    ret\n}", (6, 8)), ("    ret\nL:\n    ret;\n}", (6, 8)),
                        ("    bar.sync 0\n    .reg .b32 %q;\n}", (6, 15))):
        src = "\n".join(H + K + ["    .reg .b32 %r1;"]) + "\n" + tail + "\n"
        with pytest.raises(PtxSyntaxError) as ei:
            parse(src)
        assert (ei.value.loc.line, ei.value.loc.col) == where, str(ei.value)
        assert "missing ';'" in ei.value.message


def test_non_ascii_is_rejected_even_in_a_comment():
    """ptxas: 'Unexpected non-ASCII character' -- also inside // comments."""
    from tcsim.isa.errors import PtxSyntaxError
    from tcsim.isa.parser import parse

    text = ".version 8.5\n.target sm_90a\n.address_size 64\n// caf\u00e9\n.visible .entry k()\n{\n\tret;\n}\n"
    with pytest.raises(PtxSyntaxError) as e:
        parse(text, "na.ptx")
    assert e.value.loc.line == 4 and e.value.loc.col == 7 and "non-ASCII" in str(e.value)
