"""Mutations of PTX files (bytes in, bytes out), each deterministic from a ``random.Random``.

Every mutator takes the file's bytes and a seeded ``random.Random`` and returns ``(new bytes, label)``; the label
names what was done (``"imm: %r3 -> 0f3F800000 at line 41"``) so a finding's record says how it was made.  The
families (:data:`MUTATORS`): line deletions / duplications / swaps, token swaps, operand count changes, type,
state-space and vector-width qualifier changes, immediates of every kind and range (integers at every width
boundary, hex/octal/binary spellings, ``0f``/``0d`` float immediates, decimal floats -- also where an integer
belongs), truncation, non-UTF-8 and control bytes (in code and in comments), huge or malformed declarations
(``.param``/``.local``/``.shared``/``.global``/``.const`` arrays, ``.reg`` ranges), directive changes and
branch targets.  The tokens come from ``calib/ptx_vocab.py`` (shared with the ptxas campaign, calib/ptxas_agree),
well-formed and malformed spellings alike.
"""
from __future__ import annotations

import random
import re

from calib import ptx_vocab as V

#: a token of a PTX line: a register, an identifier/opcode with its qualifiers, a number, or one character
TOKEN = re.compile(rb"%[\w$.]+|[A-Za-z_$.][\w$.:]*|0[fFdD][0-9a-fA-F]+|0[xX][0-9a-fA-F]+U?|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?U?|\S")
REGISTER = re.compile(rb"%[A-Za-z_$][\w$]*")
QUALIFIER = re.compile(rb"\.[a-z][\w:]*")
# the token vocabulary (calib/ptx_vocab.py, shared with the ptxas campaign): well-formed and malformed spellings
TYPES = V.as_bytes(V.TYPES, ".")
SPACES = V.as_bytes(V.SPACES + V.MISUSED_SPACES, ".")
VECTORS = V.as_bytes(V.VECTORS + V.ODD_VECTORS, ".")
INT_IMMEDIATES = V.as_bytes(V.INT_IMMEDIATES + V.MALFORMED_INTS)
FLOAT_IMMEDIATES = V.as_bytes(V.FLOAT_IMMEDIATES + V.MALFORMED_FLOATS)
OTHER_OPERANDS = V.as_bytes(V.OTHER_OPERANDS + V.MALFORMED_OPERANDS)
BAD_BYTES = [b"\xff", b"\xfe", b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc3", b"\xe2\x82",
             b"\x00", b"\x01", b"\x07", b"\x08", b"\x1b[31m", b"\x7f", b"\r", b"\x0b", b"\x0c", b"\t", b"\x1a",
             b"\xef\xbb\xbf", b"\xe2\x80\xae", b"\xc2\xa0", b"\xe2\x80\x8b", "\u00e9".encode(), "\u4e2d".encode()]
HUGE = V.as_bytes(V.SIZES + V.MALFORMED_SIZES)
HUGE_DECLS = [
    b"\t.local .align 8 .b8 __fz_local[{n}];", b"\t.shared .align 16 .b8 __fz_smem[{n}];",
    b"\t.reg .b32 %fzr<{n}>;", b"\t.reg .pred %fzp<{n}>;", b"\t.local .u32 __fz_l2[{n}][{n}];",
    b"\t.shared .b64 __fz_s2[{n}];", b"\t.param .b8 __fz_p[{n}];",
]
MODULE_DECLS = [b".global .align 4 .b8 __fz_g[{n}];", b".const .align 4 .b8 __fz_c[{n}];",
                b".shared .align 16 .b8 __fz_ms[{n}];", b".global .u32 __fz_gi[{n}] = {{1, 2, 3}};",
                b".extern .shared .align 16 .b8 __fz_dyn[{n}];"]
PARAM_DECLS = [b"\t.param .b8 __fz_p[{n}]", b"\t.param .align 64 .b8 __fz_tm[{n}]", b"\t.param .u64 __fz_q[{n}]",
               b"\t.param .f16 __fz_h", b"\t.param .pred __fz_pp", b"\t.param .b128 __fz_w"]
DIRECTIVES = [b".version 1.0", b".version 99.9", b".version 8", b".version 8.8.8", b".version -1.0",
              b".target sm_20", b".target sm_90", b".target sm_100a", b".target sm_90a, texmode_independent",
              b".target sm_999", b".target", b".target compute_90a", b".address_size 32", b".address_size 48",
              b".address_size", b".maxntid 2048, 1, 1", b".maxntid 0", b".reqntid 1025", b".maxnreg 0",
              b".maxnreg 100000", b".reqnctapercluster 17, 1, 1", b".explicitcluster", b".pragma \"nounroll\";",
              b".minnctapersm -1", b".maxclusterrank 0", b".loc 1 2 3", b".file 1 \"\xff.cu\"", b".section .debug"]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _join(lines) -> bytes:
    return b"\n".join(lines)


def _code_lines(lines) -> list[int]:
    """Indices of lines holding an instruction (end in ';', not a declaration or comment)."""
    out = []
    for i, ln in enumerate(lines):
        s = ln.strip()
        if s.endswith(b";") and not s.startswith((b"//", b".", b"{", b"}")) and b"(" not in s[:1]:
            out.append(i)
    return out


def _any_code_line(lines, rng) -> int:
    code = _code_lines(lines)
    return rng.choice(code) if code else rng.randrange(len(lines))


def _tokens(line: bytes):
    return [(m.start(), m.end()) for m in TOKEN.finditer(line)]


def _replace(line: bytes, span, new: bytes) -> bytes:
    return line[:span[0]] + new + line[span[1]:]


def m_delete_lines(data, rng):
    lines = _lines(data)
    i = rng.randrange(len(lines))
    k = rng.choice([1, 1, 1, 2, 3, 8])
    return _join(lines[:i] + lines[i + k:]), f"delete lines {i + 1}..{i + k}"


def m_duplicate_line(data, rng):
    lines = _lines(data)
    i = rng.randrange(len(lines))
    j = rng.choice([i, rng.randrange(len(lines))])
    return _join(lines[:j] + [lines[i]] + lines[j:]), f"duplicate line {i + 1} before line {j + 1}"


def m_swap_lines(data, rng):
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return _join(lines), f"swap lines {i + 1} and {j + 1}"


def m_swap_tokens(data, rng):
    lines = _lines(data)
    i = _any_code_line(lines, rng)
    toks = _tokens(lines[i])
    if len(toks) < 2:
        return m_delete_lines(data, rng)
    if rng.random() < 0.5:
        a, b = sorted(rng.sample(range(len(toks)), 2))
        ta, tb = toks[a], toks[b]
        ln = lines[i]
        lines[i] = ln[:ta[0]] + ln[tb[0]:tb[1]] + ln[ta[1]:tb[0]] + ln[ta[0]:ta[1]] + ln[tb[1]:]
        return _join(lines), f"swap tokens {a} and {b} of line {i + 1}"
    k = _any_code_line(lines, rng)
    other = _tokens(lines[k])
    if not other:
        return _join(lines), "no-op"
    src = rng.choice(other)
    dst = rng.choice(toks)
    lines[i] = _replace(lines[i], dst, lines[k][src[0]:src[1]])
    return _join(lines), f"token of line {k + 1} into line {i + 1}"


def _operand_spans(line: bytes):
    """(start, end) of each comma-separated operand of an instruction line (after the opcode)."""
    s = line.rstrip()
    if not s.endswith(b";"):
        return []
    body_end = len(s) - 1
    m = re.match(rb"\s*(@!?%\w+\s+)?[\w.:]+\s*", line)
    if not m:
        return []
    start = m.end()
    spans, depth, cur = [], 0, start
    for j in range(start, body_end):
        c = line[j:j + 1]
        if c in (b"{", b"["):
            depth += 1
        elif c in (b"}", b"]"):
            depth -= 1
        elif c == b"," and depth == 0:
            spans.append((cur, j))
            cur = j + 1
    if cur < body_end:
        spans.append((cur, body_end))
    return spans


def m_operand_count(data, rng):
    lines = _lines(data)
    i = _any_code_line(lines, rng)
    spans = _operand_spans(lines[i])
    ln = lines[i]
    if not spans:
        return m_delete_lines(data, rng)
    r = rng.random()
    if r < 0.4 and len(spans) >= 1:
        k = rng.randrange(len(spans))
        a = spans[k - 1][1] if k else spans[k][0]
        b = spans[k][1]
        lines[i] = ln[:a] + ln[b:]
        return _join(lines), f"drop operand {k} of line {i + 1}"
    if r < 0.7:
        k = rng.randrange(len(spans))
        extra = ln[spans[k][0]:spans[k][1]].strip() if rng.random() < 0.6 else rng.choice(OTHER_OPERANDS)
        pos = spans[-1][1]
        lines[i] = ln[:pos] + b", " + extra + ln[pos:]
        return _join(lines), f"extra operand on line {i + 1}"
    # every operand gone, or a brace vector resized
    m = re.search(rb"\{([^{}]*)\}", ln)
    if m and rng.random() < 0.7:
        regs = [x.strip() for x in m.group(1).split(b",") if x.strip()]
        n = rng.choice([0, 1, 2, 3, 5, 8, 16, 64, 200])
        new = (regs * (n // max(len(regs), 1) + 1))[:n] if regs else [b"%r1"] * n
        lines[i] = ln[:m.start()] + b"{" + b", ".join(new) + b"}" + ln[m.end():]
        return _join(lines), f"vector operand of line {i + 1} with {n} elements"
    lines[i] = ln[:spans[0][0]] + ln[spans[-1][1]:]
    return _join(lines), f"no operands on line {i + 1}"


def _qualifier_swap(data, rng, pool, what):
    lines = _lines(data)
    cands = [(i, m.span()) for i, ln in enumerate(lines) for m in QUALIFIER.finditer(ln) if m.group() in pool]
    if not cands:
        lines = _lines(data)
        i = _any_code_line(lines, rng)
        m = re.match(rb"(\s*(?:@!?%\w+\s+)?[a-z][\w]*)", lines[i])
        if not m:
            return m_delete_lines(data, rng)
        new = rng.choice(pool)
        lines[i] = lines[i][:m.end()] + new + lines[i][m.end():]
        return _join(lines), f"insert {what} {new.decode()} on line {i + 1}"
    i, span = rng.choice(cands)
    r = rng.random()
    if r < 0.75:
        new = rng.choice(pool)
    elif r < 0.9:
        new = b""
    else:
        new = lines[i][span[0]:span[1]] * 2
    old = lines[i][span[0]:span[1]]
    lines[i] = _replace(lines[i], span, new)
    return _join(lines), f"{what} {old.decode()} -> {new.decode(errors='replace')} on line {i + 1}"


def m_type(data, rng):
    return _qualifier_swap(data, rng, TYPES, "type")


def m_space(data, rng):
    return _qualifier_swap(data, rng, SPACES, "space")


def m_vector(data, rng):
    return _qualifier_swap(data, rng, VECTORS, "vector")


def m_qualifier_any(data, rng):
    """Replace one qualifier by a qualifier from elsewhere in the file (or drop / add one)."""
    lines = _lines(data)
    allq = [(i, m.span()) for i, ln in enumerate(lines) for m in QUALIFIER.finditer(ln)]
    if not allq:
        return m_delete_lines(data, rng)
    i, span = rng.choice(allq)
    j, span2 = rng.choice(allq)
    new = lines[j][span2[0]:span2[1]]
    if rng.random() < 0.3:
        lines[i] = lines[i][:span[1]] + new + lines[i][span[1]:]
        return _join(lines), f"add qualifier {new.decode(errors='replace')} on line {i + 1}"
    lines[i] = _replace(lines[i], span, new)
    return _join(lines), f"qualifier -> {new.decode(errors='replace')} on line {i + 1}"


def m_immediate(data, rng):
    lines = _lines(data)
    i = _any_code_line(lines, rng)
    spans = _operand_spans(lines[i])
    pool = rng.choice([INT_IMMEDIATES, FLOAT_IMMEDIATES, OTHER_OPERANDS, INT_IMMEDIATES + FLOAT_IMMEDIATES])
    new = rng.choice(pool)
    ln = lines[i]
    if spans:
        k = rng.randrange(len(spans))
        sub = ln[spans[k][0]:spans[k][1]]
        # sometimes only an address offset or a vector element
        m = re.search(rb"\+\s*(-?\w+)\]", sub)
        if m and rng.random() < 0.4:
            a = spans[k][0] + m.start(1)
            lines[i] = ln[:a] + new + ln[spans[k][0] + m.end(1):]
            return _join(lines), f"address offset -> {new.decode()} on line {i + 1}"
        lines[i] = ln[:spans[k][0]] + b" " + new + ln[spans[k][1]:]
        return _join(lines), f"operand {k} -> {new.decode()} on line {i + 1}"
    nums = [(m.start(), m.end()) for m in re.finditer(rb"\b\d+\b", ln)]
    if nums:
        lines[i] = _replace(ln, rng.choice(nums), new)
        return _join(lines), f"number -> {new.decode()} on line {i + 1}"
    return m_delete_lines(data, rng)


def m_number_anywhere(data, rng):
    """Any number in the file (declaration sizes, alignments, directive arguments, offsets) -> another."""
    nums = [(m.start(), m.end()) for m in re.finditer(rb"(?<![\w%$.])\d+(?![\w.])", data)]
    if not nums:
        return m_immediate(data, rng)
    s = rng.choice(nums)
    new = rng.choice(HUGE + INT_IMMEDIATES[:20] + FLOAT_IMMEDIATES[20:30])
    return data[:s[0]] + new + data[s[1]:], f"number at byte {s[0]} -> {new.decode()}"


def m_truncate(data, rng):
    if rng.random() < 0.5:
        n = rng.randrange(len(data) + 1)
        return data[:n], f"truncate at byte {n}"
    lines = _lines(data)
    n = rng.randrange(len(lines))
    return _join(lines[:n]), f"truncate after line {n}"


def m_bad_bytes(data, rng):
    b = rng.choice(BAD_BYTES) * rng.choice([1, 1, 1, 2, 7])
    r = rng.random()
    lines = _lines(data)
    if r < 0.3:
        i = rng.randrange(len(lines))
        lines.insert(i, b"// comment " + b)
        return _join(lines), f"comment with {b!r} before line {i + 1}"
    if r < 0.4:
        return b + data, f"{b!r} at the start"
    if r < 0.5:
        return data + b, f"{b!r} at the end"
    i = _any_code_line(lines, rng)
    toks = _tokens(lines[i])
    if toks and rng.random() < 0.7:
        t = rng.choice(toks)
        pos = rng.choice([t[0], t[1], (t[0] + t[1]) // 2])
    else:
        pos = rng.randrange(len(lines[i]) + 1)
    lines[i] = lines[i][:pos] + b + lines[i][pos:]
    return _join(lines), f"{b!r} inside line {i + 1}"


def m_byte_flip(data, rng):
    if not data:
        return b"\xff", "byte"
    arr = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 5])):
        j = rng.randrange(len(arr))
        arr[j] = rng.randrange(256)
    return bytes(arr), "byte flips"


def _body_starts(lines):
    return [i for i, ln in enumerate(lines) if ln.strip() == b"{"]


def m_huge_decl(data, rng):
    lines = _lines(data)
    n = rng.choice(HUGE)
    r = rng.random()
    if r < 0.45:
        starts = _body_starts(lines)
        i = (rng.choice(starts) + 1) if starts else rng.randrange(len(lines))
        d = rng.choice(HUGE_DECLS).replace(b"{n}", n)
        lines.insert(i, d)
        return _join(lines), f"declaration {d.strip().decode(errors='replace')} at line {i + 1}"
    if r < 0.6:
        i = next((k for k, ln in enumerate(lines) if ln.startswith(b".address_size")), 2) + 1
        d = rng.choice(MODULE_DECLS).replace(b"{n}", n).replace(b"{{", b"{").replace(b"}}", b"}")
        lines.insert(min(i, len(lines)), d)
        return _join(lines), f"module declaration {d.decode(errors='replace')}"
    if r < 0.75:
        ent = [k for k, ln in enumerate(lines) if ln.lstrip().startswith((b".visible .entry", b".entry"))
               and ln.rstrip().endswith(b"(")]
        if ent:
            k = rng.choice(ent)
            d = rng.choice(PARAM_DECLS).replace(b"{n}", n)
            last = lines[k + 1].rstrip().endswith(b")")
            lines.insert(k + 1, d + (b"" if last and lines[k + 1].strip() == b")" else b","))
            return _join(lines), f"parameter {d.strip().decode(errors='replace')}"
    arrs = [(i, m.span(1)) for i, ln in enumerate(lines) for m in re.finditer(rb"\[(\d+)\]", ln)
            if ln.lstrip().startswith(b".")]
    regs = [(i, m.span(1)) for i, ln in enumerate(lines) for m in re.finditer(rb"<(\d+)>", ln)]
    pool = arrs + regs
    if not pool:
        return m_number_anywhere(data, rng)
    i, span = rng.choice(pool)
    lines[i] = _replace(lines[i], span, n)
    return _join(lines), f"declaration size -> {n.decode()} on line {i + 1}"


def m_directive(data, rng):
    lines = _lines(data)
    d = rng.choice(DIRECTIVES)
    key = d.split()[0]
    cand = [i for i, ln in enumerate(lines) if ln.lstrip().startswith(key)]
    if cand and rng.random() < 0.7:
        i = rng.choice(cand)
        lines[i] = d
        return _join(lines), f"directive line {i + 1} -> {d.decode(errors='replace')}"
    i = rng.randrange(len(lines) + 1)
    lines.insert(i, d)
    return _join(lines), f"directive {d.decode(errors='replace')} at line {i + 1}"


def m_branch(data, rng):
    lines = _lines(data)
    labels = [m.group(1) for ln in lines for m in [re.match(rb"\s*([$\w]+):", ln)] if m]
    i = _any_code_line(lines, rng)
    r = rng.random()
    if r < 0.4 and labels:
        lab = rng.choice(labels)
        lines.insert(i, b"\tbra.uni " + lab + b";")
        return _join(lines), f"bra.uni {lab.decode()} before line {i + 1}"
    if r < 0.6:
        lines.insert(i, b"__fz_spin:\n\tbra __fz_spin;")
        return _join(lines), f"spin loop before line {i + 1}"
    if r < 0.8:
        g = rng.choice([b"@%p1 ", b"@!%p1 ", b"@%p999 ", b"@%r1 ", b"@%nosuch ", b"@ ", b"@!"])
        lines[i] = re.sub(rb"^(\s*)", lambda m: m.group(1) + g, lines[i], count=1)
        return _join(lines), f"guard {g.decode()} on line {i + 1}"
    lines.insert(i, rng.choice([b"\tret;", b"\texit;", b"\ttrap;", b"\tbra nosuchlabel;", b"\tcall nosuchfn;",
                                b"\tbar.sync 0;", b"\tbar.sync 16;", b"\tbar.sync 0, 33;", b"\tbrkpt;"]))
    return _join(lines), f"control instruction before line {i + 1}"


def m_brackets(data, rng):
    """Unbalanced or extra braces, brackets, parentheses, semicolons, commas."""
    ch = rng.choice([b"{", b"}", b"[", b"]", b"(", b")", b";", b",", b";;", b"::", b"\"", b"/*", b"*/", b"//", b"\\",
                     b"<", b">", b"@", b"!", b"+", b"-", b"=", b"#", b"$", b"%", b"."])
    pos = rng.randrange(len(data) + 1)
    if rng.random() < 0.3:
        hits = [m.start() for m in re.finditer(re.escape(ch), data)]
        if hits:
            p = rng.choice(hits)
            return data[:p] + data[p + len(ch):], f"remove {ch!r} at byte {p}"
    return data[:pos] + ch + data[pos:], f"insert {ch!r} at byte {pos}"


MUTATORS = {
    "delete_lines": (m_delete_lines, 8),
    "duplicate_line": (m_duplicate_line, 5),
    "swap_lines": (m_swap_lines, 4),
    "swap_tokens": (m_swap_tokens, 8),
    "operand_count": (m_operand_count, 10),
    "type": (m_type, 10),
    "space": (m_space, 8),
    "vector": (m_vector, 4),
    "qualifier": (m_qualifier_any, 8),
    "immediate": (m_immediate, 14),
    "number": (m_number_anywhere, 6),
    "truncate": (m_truncate, 4),
    "bad_bytes": (m_bad_bytes, 7),
    "byte_flip": (m_byte_flip, 3),
    "huge_decl": (m_huge_decl, 8),
    "directive": (m_directive, 4),
    "branch": (m_branch, 4),
    "brackets": (m_brackets, 4),
}
_NAMES = list(MUTATORS)
_WEIGHTS = [MUTATORS[n][1] for n in _NAMES]


def mutate(data: bytes, rng: random.Random, rounds: int | None = None) -> tuple[bytes, list[str]]:
    """``data`` after 1..3 mutations (mostly one); returns (bytes, labels)."""
    n = rounds if rounds is not None else rng.choice([1, 1, 1, 1, 2, 3])
    labels = []
    for _ in range(n):
        name = rng.choices(_NAMES, _WEIGHTS)[0]
        if not data:
            data = b"\n"
        data, lab = MUTATORS[name][0](data, rng)
        labels.append(f"{name}: {lab}")
    return data, labels
