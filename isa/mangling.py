"""Parameter types of a kernel from its C++ (Itanium ABI) mangled name.

PTX declares a pointer parameter as an untyped ``.u64``; the element type the C++ source gave it survives only in
the mangled kernel name nvcc emits (``_Z9mma_16x16PK6__halfS1_PS_i`` is
``mma_16x16(const __half*, const __half*, __half*, int)``).  :func:`pointee_types` reads it back, so a launch can
check that an array argument's dtype is the element type the kernel was written for.

Grammar covered (Itanium C++ ABI §5.1, "Mangling"): ``_Z`` + a plain <source-name> (or ``L`` static), the builtin
types, the qualifiers ``K`` ``V`` ``r``, pointers ``P``, references ``R``/``O``, class names (<source-name>), the
``Dh``/``DF16_`` half types and substitutions ``S_``/``S<seq-id>_`` over exactly those components.  Anything else
(nested or templated names, function types, arrays, template parameters, standard abbreviations like ``St``)
gives ``None``: no types known, nothing checked -- never a guess.
"""
from __future__ import annotations

#: builtin <builtin-type> codes -> tcsim element type names ("any": char/void, used for raw bytes)
_BUILTIN = {"v": "void", "b": "u8", "c": "any", "a": "s8", "h": "u8", "s": "s16", "t": "u16", "i": "s32",
            "j": "u32", "l": "s64", "m": "u64", "x": "s64", "y": "u64", "n": "s128", "o": "u128", "f": "f32",
            "d": "f64", "e": "f80", "g": "f128", "w": "u32", "z": "..."}

#: CUDA class types by name -> (element type, elements per value)
CLASSES = {
    "__half": ("f16", 1), "__half2": ("f16", 2), "__nv_bfloat16": ("bf16", 1), "__nv_bfloat162": ("bf16", 2),
    "__nv_fp8_e4m3": ("e4m3", 1), "__nv_fp8_e5m2": ("e5m2", 1),
    "float2": ("f32", 2), "float3": ("f32", 3), "float4": ("f32", 4), "double2": ("f64", 2),
    "int2": ("s32", 2), "int4": ("s32", 4), "uint2": ("u32", 2), "uint4": ("u32", 4),
    "char4": ("s8", 4), "uchar4": ("u8", 4), "short2": ("s16", 2), "ushort2": ("u16", 2),
    "longlong2": ("s64", 2), "ulonglong2": ("u64", 2),
    "cuComplex": ("f32", 2), "cuDoubleComplex": ("f64", 2),
}


class _Unsupported(Exception):
    pass


class Type:
    """A parsed type: ``kind`` 'builtin' / 'class' / 'pointer' / 'ref'; ``name`` (builtin code's element name or
    the class name); ``inner`` (pointee)."""

    __slots__ = ("kind", "name", "inner", "const")

    def __init__(self, kind, name=None, inner=None, const=False):
        self.kind, self.name, self.inner, self.const = kind, name, inner, const

    def __repr__(self):
        if self.kind in ("pointer", "ref"):
            return f"{'const ' if self.inner.const else ''}{self.inner!r}{'*' if self.kind == 'pointer' else '&'}"
        return self.name


class _Parser:
    def __init__(self, s: str):
        self.s, self.i, self.subs = s, 0, []

    def peek(self, n=1) -> str:
        return self.s[self.i:self.i + n]

    def take(self, n=1) -> str:
        if self.i + n > len(self.s):
            raise _Unsupported("truncated")
        t = self.s[self.i:self.i + n]
        self.i += n
        return t

    def source_name(self) -> str:
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        if j == self.i:
            raise _Unsupported("no length")
        n = int(self.s[self.i:j])
        self.i = j
        name = self.take(n)
        if len(name) != n:
            raise _Unsupported("short name")
        return name

    def type(self) -> Type:
        c = self.peek()
        if c in ("K", "V", "r"):
            quals = ""
            while self.peek() in ("K", "V", "r") and self.peek():
                quals += self.take()
            t = self.type()
            q = Type(t.kind, t.name, t.inner, const="K" in quals)
            self.subs.append(q)
            return q
        if c in ("P", "R", "O"):
            self.take()
            inner = self.type()
            t = Type("pointer" if c == "P" else "ref", inner=inner)
            self.subs.append(t)
            return t
        if c.isdigit():
            t = Type("class", self.source_name())
            self.subs.append(t)
            return t
        if c == "S":
            self.take()
            if self.peek() == "_":
                self.take()
                k = 0
            else:
                j = self.i
                while j < len(self.s) and (self.s[j].isdigit() or self.s[j].isupper()):
                    j += 1
                if j == self.i or j >= len(self.s) or self.s[j] != "_":
                    raise _Unsupported("substitution")
                k = int(self.s[self.i:j], 36) + 1
                self.i = j + 1
            if k >= len(self.subs):
                raise _Unsupported("substitution out of range")
            return self.subs[k]
        if c == "D":
            if self.peek(2) == "Dh":
                self.take(2)
                return Type("builtin", "f16")
            if self.peek(5) == "DF16_":
                self.take(5)
                return Type("builtin", "f16")
            raise _Unsupported("D type")
        if c in _BUILTIN:
            self.take()
            return Type("builtin", _BUILTIN[c])
        raise _Unsupported(f"type code {c!r}")


def parse(name: str) -> list | None:
    """The parameter types of mangled kernel ``name`` (a list of :class:`Type`), or None when the name is not a
    mangled plain function name this parser fully understands."""
    if not name.startswith("_Z"):
        return None
    p = _Parser(name)
    p.i = 2
    try:
        if p.peek() == "L":
            p.take()
        if not p.peek().isdigit():
            return None                     # nested / templated / operator names
        p.source_name()
        if p.peek() == "I":
            return None                     # a template's arguments
        params = []
        while p.i < len(p.s):
            if p.s.startswith(".", p.i):        # clone suffixes (.1, .constprop...) end the encoding
                break
            params.append(p.type())
    except _Unsupported:
        return None
    if len(params) == 1 and params[0].kind == "builtin" and params[0].name == "void":
        return []
    return params


def pointee_types(name: str, nparams: int) -> list | None:
    """Per kernel parameter: ``(element type, elements per value)`` of what a pointer parameter points to
    (``("any", 1)`` for ``void*`` / ``char*``), None for a non-pointer or unknown class; None for the whole list
    when the name gives no types (not mangled, not understood, or a parameter count that does not match)."""
    types = parse(name)
    if types is None or len(types) != nparams:
        return None
    out = []
    for t in types:
        if t.kind != "pointer":
            out.append(None)
            continue
        e = t.inner
        if e.kind == "builtin":
            out.append(("any", 1) if e.name in ("void", "any") else (e.name, 1))
        elif e.kind == "class":
            out.append(CLASSES.get(e.name))
        else:
            out.append(None)                # pointer to pointer: an array of addresses
    return out
