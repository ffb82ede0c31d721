"""The report's SASS lines (tcsim.report.sass): nvdisasm output parsed into (offset, PTX line, text), the committed
listings of the examples current and mapping each machine instruction to the PTX line that asks for it; where
ptxas and nvdisasm are found (this machine: Triton's bundle), a fresh disassembly agrees with the committed
listing."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tcsim.report import sass

ROOT = Path(__file__).resolve().parents[2]
HAVE_TOOLS = sass.find_tool("ptxas") is not None and sass.find_tool("nvdisasm") is not None

# a hand-written excerpt in nvdisasm -g -c's format (two functions; a line comment covers the instructions after it)
NVDISASM = """\
\t.section\t.text.helper,"ax",@progbits
helper:
        /*0000*/                   MOV R2, R4 ;
\t//## File "k.ptx", line 12
        /*0010*/                   RET.REL.NODEC R20 `(k) ;
\t.section\t.text.k,"ax",@progbits
k:
\t//## File "k.ptx", line 30
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/               @P0 BRA `(.L_x_1) ;
\t//## File "k.ptx", line 31 inlined at "k.ptx", line 40
        /*0020*/                   HMMA.16816.F32 R8, R8, R14, R20 ;
        /*0030*/                   EXIT ;
.L_x_1:
        /*0040*/                   BRA `(.L_x_1);
        /*0050*/                   NOP;
        /*0060*/                   NOP;
"""


def test_parse_nvdisasm():
    funcs = sass.parse_nvdisasm(NVDISASM)
    assert [f["name"] for f in funcs] == ["helper", "k"]
    assert funcs[0]["insts"] == [[0, None, "MOV R2, R4"], [16, 12, "RET.REL.NODEC R20 `(k)"]]
    assert funcs[1]["insts"] == [[0, 30, "LDC R1, c[0x0][0x28]"], [16, 30, "@P0 BRA `(.L_x_1)"],
                                 [32, 31, "HMMA.16816.F32 R8, R8, R14, R20"], [48, 31, "EXIT"],
                                 [64, 31, "BRA `(.L_x_1)"]]           # the padding NOPs left out


def _listings():
    return sorted((sass.DATA).glob("*.json"))


def _example_ptx(d: dict) -> Path:
    return ROOT / "examples" / d["example"]


def test_committed_listings_are_current_and_named():
    """Every committed listing is of the example PTX as it is now (its hash), names the tools and command that
    made it, and maps instructions only to lines where the PTX has an instruction (or a function's opening brace:
    its prologue); every example with a .target has one."""
    from tcsim.isa.parser import parse
    names = {p.name for p in _listings()}
    for p in sorted((ROOT / "examples").glob("*.ptx")) + sorted((ROOT / "examples" / "bugs").glob("*.ptx")):
        arch = re.search(r"^\s*\.target\s+(sm_\w+)", p.read_text(), re.M).group(1)
        stem = p.stem if p.parent.name == "examples" else f"bugs.{p.stem}"
        assert f"{stem}.{arch}.json" in names, p
    for p in _listings():
        d = json.loads(p.read_text())
        text = _example_ptx(d).read_text()
        assert d["ptx_sha256"] == sass.ptx_hash(text), \
            f"{p.name} is stale: python -m tcsim.report.sass --write-examples"
        assert "ptxas" in d["tools"] and "nvdisasm" in d["tools"] and "-lineinfo" in d["command"]
        starts = {i.loc.line for f in parse(text).functions.values() for i in f.body if hasattr(i, "opcode")}
        braces = {n for n, x in enumerate(text.splitlines(), 1) if x.strip().startswith("{")}
        lines = {x[1] for f in d["functions"] for x in f["insts"]}
        assert None not in lines and lines <= starts | braces, (p.name, sorted(lines - starts - braces))
        assert len(lines - {None}) >= 5


# what the SASS of a PTX instruction is named (the opcode families of the H100/B200 SASS), by PTX opcode.  (Not the
# HGMMA of wgmma.mma_async: ptxas files the second of each pair under the descriptor add before the first.)
FAMILIES = [("mma_gemm", r"^mma\.sync", r"^HMMA\."), ("wgmma_pipeline_gemm", r"^wgmma\.fence", r"^WARPGROUP\.ARRIVE"),
            ("wgmma_pipeline_gemm", r"^wgmma\.wait_group", r"^WARPGROUP\.DEPBAR"),
            ("tma_mma_gemm", r"^cp\.async\.bulk\.tensor", r"^UTMALDG"), ("gemm_async", r"^tcgen05\.mma", r"^UTC\w*MMA"),
            ("gemm_async", r"^tcgen05\.ld", r"^LDTM"), ("bugs.missing_proxy_fence", r"^st\.shared", r"^STS"),
            ("bugs.missing_proxy_fence", r"^bar\.sync", r"^BAR\.SYNC")]


@pytest.mark.parametrize("stem,ptx_op,sass_op", FAMILIES)
def test_machine_instructions_map_to_the_ptx_lines_that_ask_for_them(stem, ptx_op, sass_op):
    """Each SASS instruction of a family (HMMA, WARPGROUP, UTMALDG, UTCHMMA, LDTM, STS, BAR.SYNC) is mapped to a PTX
    line of the instruction that asks for it, and every such PTX line has one."""
    p = next(q for q in _listings() if q.name.startswith(stem + "."))
    d = json.loads(p.read_text())
    src = _example_ptx(d).read_text().splitlines()
    mapped = [(x[1], x[2]) for f in d["functions"] for x in f["insts"]
              if re.match(sass_op, re.sub(r"^@!?U?P\w+\s+", "", x[2]))]
    assert mapped, (stem, sass_op)
    for line, t in mapped:
        assert re.match(ptx_op, re.sub(r"^@!?%\w+\s+", "", src[line - 1].strip())), (line, src[line - 1], t)
    ptx_lines = {n for n, x in enumerate(src, 1) if re.match(ptx_op, re.sub(r"^@!?%\w+\s+", "", x.strip()))}
    assert ptx_lines == {line for line, _ in mapped}


def test_listing_for_prefers_the_committed_one_and_says_why_there_is_none(monkeypatch):
    text = (ROOT / "examples" / "mma_gemm.ptx").read_text()
    monkeypatch.setattr(sass, "find_tool", lambda name: None)          # a machine without the CUDA tools (CI)
    got = sass.listing_for(text, "sm_90a")
    assert got["from"] == "committed listing mma_gemm.sm_90a.json" and got["functions"]
    other = sass.listing_for(text + "\n// edited\n", "sm_90a")
    assert "error" in other and "not found" in other["error"]          # an edited kernel: not the committed one
    assert "error" in sass.listing_for("", "sm_90a")


@pytest.mark.skipif(not HAVE_TOOLS, reason="ptxas / nvdisasm not found")
@pytest.mark.parametrize("stem", ["mma_gemm", "bugs.missing_proxy_fence"])
def test_fresh_disassembly_agrees_with_the_committed_listing(stem):
    p = next(q for q in _listings() if q.name.startswith(stem + "."))
    d = json.loads(p.read_text())
    fresh = sass.disassemble(_example_ptx(d).read_text(), d["arch"], name=Path(d["example"]).name)
    assert fresh["functions"] == d["functions"]


@pytest.mark.skipif(not HAVE_TOOLS, reason="ptxas / nvdisasm not found")
def test_ptxas_refusal_is_the_reason_shown():
    text = (ROOT / "examples" / "mma_gemm.ptx").read_text().replace(".target sm_90a", ".target sm_100a")
    got = sass.disassemble(text, "sm_80")           # the PTX's .target is sm_100a, the compile asks for sm_80
    assert got["error"].startswith("no SASS: ptxas failed")


@pytest.mark.skipif(not HAVE_TOOLS, reason="ptxas / nvdisasm not found")
def test_a_kernel_with_its_own_line_info_maps_to_its_ptx_lines():
    """Triton's PTX carries .loc lines of its Python source; the SASS still maps to the PTX's own lines (its
    global loads to the ld.global lines)."""
    text = (ROOT / "examples" / "triton_softmax.ptx").read_text()
    assert re.search(r"^\s*\.loc\s", text, re.M)
    got = sass.disassemble(text, "sm_100a")
    src = text.splitlines()
    ldg = [x[1] for f in got["functions"] for x in f["insts"] if re.match(r"(@!?U?P\w+ )?LDG", x[2])]
    assert ldg and all("ld.global" in src[n - 1] for n in ldg)
