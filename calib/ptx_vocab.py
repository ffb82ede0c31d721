"""The vocabulary the PTX mutation generators draw from, shared by the robustness fuzzer (``calib/robust``: bytes,
any damage) and the ``tcsim check`` vs ptxas differential campaign (``calib/ptxas_agree``: one-line mutants aimed at
the typing rules).  One list per kind of token, split into *well-formed* spellings (what a user could write and
mean: both generators) and *malformed* ones (lexical damage: the robustness fuzzer only, the ptxas campaign keeps
to the typing rules); and the tracked PTX corpus both mutate.

Sources of the values: the PTX ISA 9.1 type, state-space and vector qualifiers (sections 5.1, 5.2, 5.4.3,
9.7.x), the special registers of chapter 10, the integer/float immediate syntax of section 4.5 (hex, octal,
binary, ``U`` suffix, ``0f``/``0d``), and the hardware limits a declaration meets (48 KiB static shared memory,
227 KiB opt-in, 4 KiB kernel parameters on sm_90: the sizes just below and above).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------------------ qualifiers
#: type qualifiers (without the dot)
TYPES = ("b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "f16x2",
         "bf16", "bf16x2", "f32", "f64", "pred", "tf32", "e4m3", "e5m2", "e2m1x2", "f32x2", "f8x2", "u128", "s4")
#: state spaces a load/store/cvta/atom may name; MISUSED_SPACES are spaces that exist but no instruction takes so
SPACES = ("global", "shared", "shared::cta", "shared::cluster", "local", "param", "param::entry", "param::func",
          "const", "generic")
MISUSED_SPACES = ("tex", "reg", "sreg")
#: vector widths an instruction may take, and widths PTX has for no instruction
VECTORS = ("v2", "v4", "v8")
ODD_VECTORS = ("v1", "v3", "v16")

# ------------------------------------------------------------------------------------------------ operands
#: integer immediates at every width boundary, in every well-formed spelling
INT_IMMEDIATES = (
    "0", "1", "-1", "2", "5", "7", "8", "15", "16", "31", "32", "33", "63", "64", "65", "127", "128", "-128", "-129",
    "255", "256", "32767", "32768", "-32768", "-32769", "65535", "65536", "2147483647", "2147483648", "-2147483648",
    "-2147483649", "4294967295", "4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "1000000000000000000000000000000",
    "99999999999", "4000000000", "0x0", "0x7FFFFFFF", "0x80000000", "0xFFFFFFFF", "0x100000000",
    "0x7fffffffffffffff", "0xFFFFFFFFFFFFFFFF", "0x10000000000000000", "0xFFFFFFFFFFFFFFFFFFFFFFFF", "0X1f", "017",
    "077", "0b101", "5U", "1U", "0x8000U", "0xFFFFFFFFU", "00", "-0")
#: float immediates: exact bit patterns (``0f``/``0d``) and decimal spellings
FLOAT_IMMEDIATES = (
    "0f00000000", "0f3F800000", "0fBF800000", "0f7F800000", "0fFF800000", "0f7FC00000", "0f7FA00000", "0f00000001",
    "0f7F7FFFFF", "0fFFFFFFFF", "0F3f800000", "0d0000000000000000", "0d3FF0000000000000", "0d7FF0000000000000",
    "0d7FF8000000000000", "0d0000000000000001", "0dFFFFFFFFFFFFFFFF", "1.0", "1.5", "-2.5", "0.0", "-0.0", "1e10",
    "1e400", "-1e400", "1.0e-50", "1e-400", "3.4028235e38", "3.5e38", "65504.0", "65520.0")
#: numbers no PTX lexer reads as meant (the robustness fuzzer only): integer-like and float-like
MALFORMED_INTS = ("0x", "08", "0B2", "-5U", "+5", "--5", "1_000")
MALFORMED_FLOATS = ("0f123", "0f1234567890", "0fXYZ", "0d3FF", "0d3FF00000000000000000", ".5", "5.", "nan", "inf",
                    "-inf", "1.0f", "0x1p3")
#: special registers (chapter 10): sources only; some exist only on some targets, some are 64-bit
SPECIALS = ("%tid.x", "%ntid.y", "%laneid", "%warpid", "%ctaid.z", "%nctaid.x", "%smid", "%clock", "%clock64",
            "%globaltimer", "%lanemask_lt", "%cluster_ctarank", "%clusterid.x", "%dynamic_smem_size", "%envreg3",
            "%pm0", "%tid", "%total_smem_size", "%gridid")
#: operands that name nothing or are malformed (the robustness fuzzer only)
MALFORMED_OPERANDS = ("%ctaid.w", "%nosuchreg", "%r999999", "[]", "{}", "_", "%", "%r", "nosuchlabel", "$L__nosuch",
                      "%rd1+4", "-%r1", "!%p1", "%p1|%p2")
#: well-formed operands of other kinds than a position expects
OTHER_OPERANDS = ("%r1", "%rd1", "%f1", "%fd1", "%h1", "%rs1", "%p1", "%tid.x", "%laneid", "%clock64", "[%rd1]",
                  "[%r1+4]", "[%rd1+-8]", "[0]", "[%rd1+0x100000000]", "{%r1, %r2}", "{%r1,%r2,%r3}")

# ------------------------------------------------------------------------------------------------ declarations
#: array sizes and counts around the hardware limits, and beyond any
SIZES = ("0", "1", "3", "1024", "4096", "4097", "12288", "32765", "49152", "49153", "65536", "232448", "232449",
         "262144", "524289", "1048576", "2147483648", "4000000000", "99999999999", "1099511627776",
         "18446744073709551616", "1" + "0" * 40, "0xFFFFFFFF", "-1")
MALFORMED_SIZES = ("1.5", "")
#: sizes whose bytes ptxas 13.0 adds in 32 bits and so may accept after wrapping (calib/ptxas_agree/explain.py,
#: 'ptxas-overflow'): the ptxas campaign keeps two probes of that defect (4000000000, 99999999999), not all of them
PTXAS_WRAPPING_SIZES = ("2147483648", "1099511627776", "18446744073709551616", "1" + "0" * 40, "0xFFFFFFFF")
ALIGNS = ("0", "1", "2", "3", "6", "16", "128", "256", "1024", "4096")


def as_bytes(words, prefix: str = "") -> list:
    """``words`` as the byte strings the robustness fuzzer splices (with ``prefix``, e.g. ``"."``)."""
    return [(prefix + w).encode() for w in words]


# ------------------------------------------------------------------------------------------------ corpus
def tracked_ptx(repo: Path = REPO) -> list:
    """The tracked ``.ptx`` files of the checkout (``git ls-files``; a copy without ``.git``: every ``.ptx``), as
    paths relative to ``repo``, sorted."""
    try:
        names = subprocess.run(["git", "ls-files", "*.ptx"], cwd=repo, capture_output=True, text=True,
                               check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        names = []
    if not names:
        names = [str(p.relative_to(repo)) for p in repo.rglob("*.ptx")]
    return sorted(n for n in names if (repo / n).is_file())


__all__ = ["ALIGNS", "FLOAT_IMMEDIATES", "INT_IMMEDIATES", "MALFORMED_FLOATS", "MALFORMED_INTS", "MALFORMED_OPERANDS",
           "MALFORMED_SIZES", "MISUSED_SPACES", "PTXAS_WRAPPING_SIZES", "ODD_VECTORS", "OTHER_OPERANDS", "SIZES", "SPACES", "SPECIALS",
           "TYPES", "VECTORS", "as_bytes", "tracked_ptx"]
