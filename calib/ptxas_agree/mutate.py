"""One-line mutants of the tracked PTX files for the ``tcsim check`` vs ptxas differential test.

:func:`corpus` lists the tracked ``.ptx`` files (``git ls-files`` of the checkout, minus deliberately broken ones and
files over :data:`MAX_BYTES`); :func:`mutant` makes mutant number ``i`` of campaign seed ``seed`` -- the same text
for ever -- by applying one operator of :data:`OPERATORS` to one instruction or declaration line of one file.

The operators aim at the typing rules of the PTX ISA (operand types and sizes, immediates, special registers,
vectors, state spaces, declarations) rather than at the lexer: each changes one token-level thing a user could get
wrong, so ptxas's verdict is usually decided by one rule.  (The broader robustness fuzzer that mutates bytes,
truncates files and varies launches lives in ``calib/robust``; the two draw their tokens from one vocabulary,
``calib/ptx_vocab.py`` -- this campaign its well-formed spellings only.)
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from calib import ptx_vocab as V

REPO = Path(__file__).resolve().parents[2]
MAX_BYTES = 60_000
SKIP_MARKERS = ("invalid", "malformed", "bad_", "reject")

_INS = re.compile(r"^(?P<ind>\s*)(?P<guard>@!?%\w+\s+)?(?P<op>[a-z][\w.:]*)(?P<sp>\s+)(?P<args>[^;]*);(?P<tail>.*)$")
_REGDECL = re.compile(r"^\s*\.reg\s+(?:\.v\d\s+)?\.(\w+)\s+(%\w+)(?:<(\d+)>)?")
_DECL = re.compile(r"^(?P<pre>\s*(?:\.(?:visible|extern|weak)\s+)*\.(?P<space>shared|local|global|const|param)\s+)"
                   r"(?P<rest>.*)$")

# the token vocabulary (calib/ptx_vocab.py, shared with the robustness fuzzer): the well-formed spellings only --
# this campaign aims at the typing rules, not the lexer
TYPES = V.TYPES
SPACES = V.SPACES + V.MISUSED_SPACES
VECS = V.VECTORS
IMMEDIATES = V.INT_IMMEDIATES + V.FLOAT_IMMEDIATES
SPECIALS = V.SPECIALS
SIZES = tuple(n for n in V.SIZES if n not in V.PTXAS_WRAPPING_SIZES)
ALIGNS = V.ALIGNS
SCALAR = re.compile(r"^(?:b|u|s|f|bf)(?:8|16|32|64|128)$|^pred$|^f16x2$|^bf16x2$")


@dataclass(frozen=True)
class Mutant:
    path: str          # the file, relative to the checkout
    target: str        # its .target (ptxas -arch)
    line: int          # 1-based line of the mutation
    operator: str
    before: str
    after: str
    text: str


def corpus(repo: Path = REPO) -> list:
    """The tracked .ptx files the campaign mutates, sorted."""
    out = V.tracked_ptx(repo)
    keep = []
    for rel in sorted(out):
        p = repo / rel
        if (any(m in p.name.lower() for m in SKIP_MARKERS) or not p.is_file()
                or "robust_regressions" in p.parts          # (the robustness fuzzer's minimised bad inputs)
                or p.stat().st_size > MAX_BYTES):
            continue
        keep.append(rel)
    return keep


def _groups(files: list) -> list:
    """Files grouped by folder (mutants pick a folder, then a file: the many fuzz regressions of one folder do
    not outweigh the examples)."""
    by: dict = {}
    for f in files:
        by.setdefault(str(Path(f).parent), []).append(f)
    return [by[k] for k in sorted(by)]


def split_args(args: str) -> list:
    """Top-level comma-separated operands (commas inside ``{}`` / ``[]`` / ``()`` stay)."""
    out, depth, cur = [], 0, ""
    for ch in args:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _registers(lines: list) -> dict:
    """type -> a few register names declared in the file."""
    regs: dict = {}
    for ln in lines:
        m = _REGDECL.match(ln)
        if m:
            t, name, n = m.group(1), m.group(2), m.group(3)
            names = [f"{name}{k}" for k in range(min(int(n), 4))] if n else [name]
            regs.setdefault(t, []).extend(names)
    return regs


# ----------------------------------------------------------------------------------------------- operators
def _op_parts(m):
    parts = m.group("op").split(".")
    return parts[0], parts[1:]


def _rebuild(m, op=None, args=None):
    op = m.group("op") if op is None else op
    args = m.group("args") if args is None else args
    return f"{m.group('ind')}{m.group('guard') or ''}{op}{m.group('sp')}{args};{m.group('tail')}"


def _mut_retype(rng, m, regs):
    base, mods = _op_parts(m)
    idx = [k for k, q in enumerate(mods) if SCALAR.match(q) or q in TYPES]
    if not idx:
        return None
    k = rng.choice(idx)
    mods[k] = rng.choice([t for t in TYPES if t != mods[k]])
    return _rebuild(m, op=".".join([base] + mods))


def _replace_operand(rng, m, new, *, skip_addr=True):
    ops = split_args(m.group("args"))
    cand = [k for k, a in enumerate(ops) if not (skip_addr and a.startswith("["))]
    if not cand:
        return None
    k = rng.choice(cand)
    ops[k] = new(ops[k])
    return _rebuild(m, args=", ".join(ops))


def _mut_imm(rng, m, regs):
    return _replace_operand(rng, m, lambda a: rng.choice(IMMEDIATES))


def _mut_special(rng, m, regs):
    return _replace_operand(rng, m, lambda a: rng.choice(SPECIALS), skip_addr=False)


def _mut_reg(rng, m, regs):
    pool = [r for rs in regs.values() for r in rs]
    if not pool:
        return None

    def new(a):
        if a.startswith("{"):
            elems = split_args(a[1:-1])
            if elems:
                elems[rng.randrange(len(elems))] = rng.choice(pool)
            return "{" + ", ".join(elems) + "}"
        if a.startswith("["):
            return "[" + rng.choice(pool) + "]"
        return rng.choice(pool)
    return _replace_operand(rng, m, new, skip_addr=False)


def _mut_space(rng, m, regs):
    base, mods = _op_parts(m)
    sp = rng.choice(SPACES)
    have = [k for k, q in enumerate(mods) if q in SPACES or q.startswith(("shared", "param"))]
    if have and rng.random() < 0.6:
        if rng.random() < 0.3:
            del mods[have[0]]
        else:
            mods[have[0]] = sp
    else:
        mods.insert(rng.randrange(len(mods) + 1) if mods else 0, sp)
    return _rebuild(m, op=".".join([base] + mods))


def _mut_vec(rng, m, regs):
    base, mods = _op_parts(m)
    have = [k for k, q in enumerate(mods) if q in VECS]
    if have:
        if rng.random() < 0.3:
            del mods[have[0]]
        else:
            mods[have[0]] = rng.choice([v for v in VECS if v != mods[have[0]]])
    else:
        tk = [k for k, q in enumerate(mods) if SCALAR.match(q)]
        mods.insert(tk[-1] if tk else len(mods), rng.choice(VECS))
    return _rebuild(m, op=".".join([base] + mods))


def _mut_operand_count(rng, m, regs):
    ops = split_args(m.group("args"))
    if not ops:
        return None
    if rng.random() < 0.5 and len(ops) > 0:
        del ops[rng.randrange(len(ops))]
    else:
        k = rng.randrange(len(ops))
        ops.insert(k, ops[k])
    return _rebuild(m, args=", ".join(ops))


def _mut_vector_operand(rng, m, regs):
    pool = [r for rs in regs.values() for r in rs] or ["%r0"]

    def new(a):
        if a.startswith("{"):
            elems = split_args(a[1:-1])
            if len(elems) > 1 and rng.random() < 0.5:
                elems = elems[:-1] if rng.random() < 0.5 else elems[:len(elems) // 2]
            else:
                elems = elems + elems[: max(1, len(elems))]
            return "{" + ", ".join(elems) + "}"
        if a.startswith("["):
            return a
        return "{" + ", ".join([a] + [rng.choice(pool) for _ in range(rng.choice((1, 3)))]) + "}"
    return _replace_operand(rng, m, new, skip_addr=False)


def _mut_address(rng, m, regs):
    def new(a):
        if a.startswith("["):
            inner = a[1:-1].strip()
            r = rng.random()
            if r < 0.4:
                return inner.split("+")[0].strip()
            if r < 0.7:
                return f"[{inner}+{rng.choice(('1', '3', '-8', '4294967296', '0x100000000'))}]"
            return f"[{rng.choice(SPECIALS)}]"
        return f"[{a}]"
    return _replace_operand(rng, m, new, skip_addr=False)


def _mut_drop_qualifier(rng, m, regs):
    base, mods = _op_parts(m)
    if not mods:
        return None
    del mods[rng.randrange(len(mods))]
    return _rebuild(m, op=".".join([base] + mods))


def _mut_sink(rng, m, regs):
    ops = split_args(m.group("args"))
    if not ops:
        return None
    k = rng.randrange(min(2, len(ops)))
    ops[k] = "_"
    return _rebuild(m, args=", ".join(ops))


def _mut_swap(rng, m, regs):
    ops = split_args(m.group("args"))
    if len(ops) < 2:
        return None
    i, j = rng.sample(range(len(ops)), 2)
    ops[i], ops[j] = ops[j], ops[i]
    return _rebuild(m, args=", ".join(ops))


_OPCODE_SWAPS = (("ld", "st", "ldu", "mov", "cvta", "atom", "red"), ("add", "sub", "mul", "mad", "fma", "min",
                 "max", "and", "or", "xor", "shl", "shr", "div", "rem", "abs", "neg", "not", "cvt", "setp",
                 "selp", "mov", "popc", "clz", "brev", "copysign"))


def _mut_opcode(rng, m, regs):
    base, mods = _op_parts(m)
    fam = [f for f in _OPCODE_SWAPS if base in f]
    if not fam:
        return None
    nb = rng.choice([o for o in fam[0] if o != base])
    return _rebuild(m, op=".".join([nb] + mods))


INS_OPERATORS = {"retype": _mut_retype, "immediate": _mut_imm, "special": _mut_special, "register": _mut_reg,
                 "space": _mut_space, "vector": _mut_vec, "operand_count": _mut_operand_count,
                 "vector_operand": _mut_vector_operand, "address": _mut_address,
                 "drop_qualifier": _mut_drop_qualifier, "sink": _mut_sink, "swap": _mut_swap,
                 "opcode": _mut_opcode}


def _mut_decl(rng, line):
    """A declaration of a .shared / .local / .param / .global / .const variable: size, alignment or type."""
    m = _DECL.match(line)
    if not m:
        return None
    rest = m.group("rest")
    r = rng.random()
    if r < 0.45 and "[" in rest:
        new = re.sub(r"\[\s*\d*\s*\]", f"[{rng.choice(SIZES)}]", rest, count=1)
    elif r < 0.6 and "[" not in rest:
        new = re.sub(r"(%?[\w$]+)\s*(;|,|\)|$)", lambda mm: f"{mm.group(1)}[{rng.choice(SIZES)}]{mm.group(2)}", rest,
                     count=1)
    elif r < 0.85:
        if ".align" in rest:
            new = re.sub(r"\.align\s+\d+", f".align {rng.choice(ALIGNS)}", rest, count=1)
        else:
            new = f".align {rng.choice(ALIGNS)} " + rest
    else:
        new = re.sub(r"\.(b|u|s|f)(8|16|32|64)\b", lambda mm: "." + rng.choice(TYPES), rest, count=1)
    return m.group("pre") + new if new != rest else None


OPERATORS = tuple(INS_OPERATORS) + ("declaration",)


def _target(text: str) -> str:
    m = re.search(r"^\s*\.target\s+(\w+)", text, flags=re.M)
    return m.group(1) if m else "sm_90a"


def mutant(seed: int, i: int, files: list | None = None, repo: Path = REPO, _cache: dict = {}) -> Mutant:  # noqa: B006
    """Mutant ``i`` of campaign ``seed`` (retries internally until an operator applies)."""
    files = corpus(repo) if files is None else files
    groups = _groups(files)
    rng = random.Random(f"{seed}:{i}")
    for _ in range(200):
        rel = rng.choice(rng.choice(groups))
        if rel not in _cache:
            _cache[rel] = (repo / rel).read_text(errors="replace")
        text = _cache[rel]
        lines = text.split("\n")
        regs = _registers(lines)
        opname = rng.choice(OPERATORS) if rng.random() < 0.9 else "declaration"
        if opname == "declaration":
            cand = [k for k, ln in enumerate(lines) if _DECL.match(ln)]
            if not cand:
                continue
            k = rng.choice(cand)
            new = _mut_decl(rng, lines[k])
        else:
            cand = [k for k, ln in enumerate(lines) if _INS.match(ln) and not ln.lstrip().startswith(".")]
            if not cand:
                continue
            k = rng.choice(cand)
            new = INS_OPERATORS[opname](rng, _INS.match(lines[k]), regs)
        if new is None or new == lines[k]:
            continue
        before = lines[k]
        lines[k] = new
        return Mutant(rel, _target(text), k + 1, opname, before.strip(), new.strip(), "\n".join(lines))
    raise RuntimeError(f"no mutation applies for seed {seed} index {i}")


__all__ = ["Mutant", "corpus", "mutant", "split_args", "OPERATORS", "MAX_BYTES"]
