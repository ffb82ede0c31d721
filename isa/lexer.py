"""PTX lexer: turns PTX text into a flat token stream with exact 1-based line/column positions.

Token kinds (``Tokens.kinds[i]``):

``'id'``
    an identifier, with any dot-separated qualifiers glued on: ``%r12``, ``$L__BB0_3``, ``%tid.x``,
    ``ld.global.v4.f32``, ``cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes``
    (PTX identifiers never contain dots, so a dotted word is an opcode or a special register component).
``'dir'``
    a directive or type word starting with a dot: ``.reg``, ``.b32``, ``.shared::cta``.
``'num'``
    a numeric literal; ``Tokens.vals[i]`` holds its decoded value (see :func:`decode_number`).
``'str'``
    a double-quoted string; ``Tokens.vals[i]`` holds the unescaped text.
punctuation
    the kind *is* the punctuation text: ``{ } ( ) [ ] , ; : @ ! + - * / % ~ & | ^ < > << >> <= >= == != && || ? =``
``'eof'``
    one final token.

Comments (``//`` to end of line, ``/* ... */`` possibly spanning lines) and white space are dropped.
Lexical errors (a character that cannot start a token, an unterminated comment or string, a malformed
numeric literal such as ``0f3F80``) raise :class:`~tcsim.isa.errors.PtxSyntaxError` at the exact position.

Not supported: line continuations and the C preprocessor (``#include``/``#define`` lines are rejected,
as ptxas without ``-E``-style preprocessing would).
"""
from __future__ import annotations

import re
import struct

from .errors import PtxSyntaxError, SourceLoc

__all__ = ["Tokens", "tokenize", "decode_number", "NumberValue", "decode_source", "read_source"]

_MASK64 = (1 << 64) - 1

_TOKEN_RE = re.compile(
    r"""
    (?P<nl>\n)
  | (?P<ws>[ \t\r\f\v]+)
  | (?P<lc>//[^\n]*)
  | (?P<bc>/\*(?:[^*]|\*(?!/))*\*/)
  | (?P<bcu>/\*)
  | (?P<id>(?:[A-Za-z_][\w$]*|[$%][\w$]+)(?:\.[\w$]+(?:::[\w$]+)*)*)
  | (?P<dir>\.[A-Za-z_$][\w$]*(?:::[\w$]+)*)
  | (?P<num>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d[\w$]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<stru>")
  | (?P<op><<|>>|<=|>=|==|!=|&&|\|\||[{}()\[\],;:@!+\-*/%~&|^<>?=])
    """,
    re.VERBOSE,
)

# characters that may not directly follow a numeric literal (``12abc``, ``1.5f``, ``1.5.2``)
_NUM_TAIL_RE = re.compile(r"[\w$.]")


class NumberValue(tuple):
    """A decoded numeric literal: ``(value, kind, bits, unsigned)``.

    ``kind`` is ``'int'`` (``value`` a Python int, ``unsigned`` True for a ``U`` suffix or a value that only
    fits as unsigned 64-bit), ``'f32'`` (``0fXXXXXXXX``) or ``'f64'`` (``0dXXXXXXXXXXXXXXXX`` or a decimal
    literal like ``1.5``); for floats ``bits`` is the exact IEEE bit pattern.
    """

    __slots__ = ()

    def __new__(cls, value, kind, bits, unsigned):
        return tuple.__new__(cls, (value, kind, bits, unsigned))

    value = property(lambda s: s[0])
    kind = property(lambda s: s[1])
    bits = property(lambda s: s[2])
    unsigned = property(lambda s: s[3])


_HEX_RE = re.compile(r"0[xX]([0-9A-Fa-f]+)(U?)")
_BIN_RE = re.compile(r"0[bB]([01]+)(U?)")
_OCT_RE = re.compile(r"0([0-7]*)(U?)")
_DEC_RE = re.compile(r"([1-9][0-9]*)(U?)")
_HEXFLOAT_RE = re.compile(r"0([fFdD])(.*)", re.S)
_IS_HEX_RE = re.compile(r"[0-9A-Fa-f]+")


def decode_number(text: str):
    """Decode one numeric literal.  Returns a :class:`NumberValue` or a str (the error message)."""
    c1 = text[1:2]
    if c1 in ("f", "F", "d", "D") and text[0] == "0":
        m = _HEXFLOAT_RE.fullmatch(text)
        digits = m.group(2)
        want = 8 if c1 in "fF" else 16
        if len(digits) != want or not _IS_HEX_RE.fullmatch(digits):
            kind = "0f (f32)" if want == 8 else "0d (f64)"
            return (f"bad float literal {text!r}: a {kind} literal needs exactly {want} hex digits "
                    f"after the prefix")
        bits = int(digits, 16)
        if want == 8:
            return NumberValue(struct.unpack("<f", struct.pack("<I", bits))[0], "f32", bits, False)
        return NumberValue(struct.unpack("<d", struct.pack("<Q", bits))[0], "f64", bits, False)
    if "." in text or (("e" in text or "E" in text) and not text[:2] in ("0x", "0X")):
        try:
            v = float(text)
        except ValueError:
            return f"bad float literal {text!r}"
        if v != v or v in (float("inf"), float("-inf")):
            return f"bad float literal {text!r}: out of range for f64"
        return NumberValue(v, "f64", struct.unpack("<Q", struct.pack("<d", v))[0], False)
    for rx, base in ((_DEC_RE, 10), (_HEX_RE, 16), (_BIN_RE, 2), (_OCT_RE, 8)):
        m = rx.fullmatch(text)
        if m is not None:
            v = int(m.group(1) or "0", base)
            if v > _MASK64:
                return f"integer literal {text!r} does not fit in 64 bits"
            return NumberValue(v, "int", None, bool(m.group(2)) or v > 0x7FFFFFFFFFFFFFFF)
    if text[:1] == "0" and text[1:2].isdigit():
        return f"bad octal literal {text!r}"
    return f"bad numeric literal {text!r}"


class Tokens:
    """Parallel lists describing the token stream of one PTX text (kept flat for speed)."""

    __slots__ = ("kinds", "texts", "lines", "cols", "vals", "source_name", "source_lines")

    def __init__(self, source_name: str, text: str):
        self.kinds: list = []
        self.texts: list = []
        self.lines: list = []
        self.cols: list = []
        self.vals: list = []
        self.source_name = source_name
        self.source_lines = text.split("\n")

    def line_text(self, line: int) -> str:
        if 1 <= line <= len(self.source_lines):
            return self.source_lines[line - 1].rstrip("\r")
        return ""

    def loc(self, i: int) -> SourceLoc:
        line = self.lines[i]
        return SourceLoc(self.source_name, line, self.cols[i], self.line_text(line))

    def __len__(self) -> int:
        return len(self.kinds)


def _unescape(s: str) -> str:
    out = []
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n:
            i += 1
            c = s[i]
            out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(c, c))
        else:
            out.append(c)
        i += 1
    return "".join(out)


def non_ascii_error(src, source_name: str) -> PtxSyntaxError | None:
    """The diagnostic for the first non-ASCII byte of PTX ``src`` (bytes, or text as its UTF-8 bytes), or None.

    One rule for every way PTX comes in (``tcsim check`` reading a file, ``Launch(ptx=...)`` as text, bytes or a
    path): ptxas 13.0 rejects any byte above 0x7F anywhere, comments included, whether or not it is UTF-8
    ("Unexpected non-ASCII character encountered on line N"; probes: tests/isa/typing_probes.tsv), so this is a
    :class:`~tcsim.isa.errors.PtxSyntaxError` at the byte's line and column naming the byte (and the character,
    when the bytes there are UTF-8)."""
    raw = src if isinstance(src, (bytes, bytearray)) else src.encode("utf-8", "surrogatepass")
    if raw.isascii():
        return None
    bad = next(i for i, b in enumerate(raw) if b > 127)
    ls = raw.rfind(b"\n", 0, bad) + 1
    le = raw.find(b"\n", bad)
    line_text = raw[ls:le if le >= 0 else len(raw)].decode("utf-8", errors="replace")
    ch = ""
    for n in (2, 3, 4):
        try:
            c = raw[bad:bad + n].decode("utf-8")
        except UnicodeDecodeError:
            continue
        ch = f" ({c!r} in UTF-8)"
        break
    line = raw.count(b"\n", 0, bad) + 1
    return PtxSyntaxError(f"unexpected non-ASCII byte 0x{raw[bad]:02x}{ch} (ptxas: \"Unexpected non-ASCII character "
                          f"encountered on line {line}\": PTX is ASCII, comments included)",
                          SourceLoc(source_name, line, bad - ls + 1, line_text))


def decode_source(raw: bytes, source_name: str = "<bytes>") -> str:
    """PTX bytes as text; the first non-ASCII byte is an error (:func:`non_ascii_error`)."""
    err = non_ascii_error(raw, source_name)
    if err is not None:
        raise err
    return raw.decode("ascii")


def read_source(path, source_name: str | None = None) -> str:
    """The text of the PTX file ``path`` (:func:`decode_source`); a path that cannot be read (missing, a directory,
    no permission) is a :class:`~tcsim.isa.errors.PtxSyntaxError` naming the file."""
    import os
    name = str(path) if source_name is None else source_name
    try:
        if os.path.isdir(path):
            raise PtxSyntaxError(f"{name} is a directory, not a PTX file")
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise PtxSyntaxError(f"cannot read {name}: {e.strerror or e}") from None
    return decode_source(raw, name)


def tokenize(text: str, source_name: str = "<string>") -> Tokens:
    """Split ``text`` into tokens.  Raises PtxSyntaxError on a lexical error."""
    toks = Tokens(source_name, text)
    kinds = toks.kinds
    texts = toks.texts
    lines = toks.lines
    cols = toks.cols
    vals = toks.vals
    kapp = kinds.append
    tapp = texts.append
    lapp = lines.append
    capp = cols.append
    vapp = vals.append
    line = 1
    line_start = 0
    pos = 0
    n = len(text)
    match = _TOKEN_RE.match

    def fail(msg, p, ln, ls):
        raise PtxSyntaxError(msg, SourceLoc(source_name, ln, p - ls + 1, toks.line_text(ln)))

    if not text.isascii():      # ptxas rejects any non-ASCII byte, comments included
        raise non_ascii_error(text, source_name)
    while pos < n:
        m = match(text, pos)
        if m is None:
            ch = text[pos]
            if ch == "#" and not text[line_start:pos].strip():
                fail("preprocessor lines ('#...') are not PTX; run the C preprocessor first", pos, line,
                     line_start)
            fail(f"unexpected character {ch!r}", pos, line, line_start)
        kind = m.lastgroup
        end = m.end()
        if kind == "ws" or kind == "lc":
            pos = end
            continue
        if kind == "nl":
            line += 1
            line_start = end
            pos = end
            continue
        tok = m.group()
        if kind == "id":
            kapp("id")
            vapp(None)
        elif kind == "op":
            kapp(tok)
            vapp(None)
        elif kind == "dir":
            kapp("dir")
            vapp(None)
        elif kind == "num":
            if end < n and _NUM_TAIL_RE.match(text, end):
                # e.g. '1.5f' or '12abc': report the whole run
                m2 = re.compile(r"[\w$.]+").match(text, pos)
                fail(f"bad numeric literal {m2.group()!r}", pos, line, line_start)
            v = decode_number(tok)
            if isinstance(v, str):
                fail(v, pos, line, line_start)
            kapp("num")
            vapp(v)
        elif kind == "bc":
            nl = tok.count("\n")
            if nl:
                line += nl
                line_start = pos + tok.rfind("\n") + 1
            pos = end
            continue
        elif kind == "bcu":
            fail("unterminated /* comment", pos, line, line_start)
        elif kind == "str":
            kapp("str")
            vapp(_unescape(tok[1:-1]))
        else:  # stru
            fail("unterminated string literal", pos, line, line_start)
        tapp(tok)
        lapp(line)
        capp(pos - line_start + 1)
        pos = end
    kapp("eof")
    tapp("")
    lapp(line)
    capp(pos - line_start + 1)
    vapp(None)
    return toks
