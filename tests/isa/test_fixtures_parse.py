"""The PTX front end parses real compiler output: every ``.ptx`` fixture (nvcc and Triton, under
``tests/fixtures/``) and the shared benchmark kernels (their copies in ``benchmarks/kernels/``).

Besides "parses without error" each file gets structural sanity checks that do not depend on how a
particular instruction is modelled:

* the kernels are exactly the ``.entry`` names in the text; version/target match the header;
* the number of instructions equals an independent statement count of the text (nothing dropped, nothing
  invented), and every instruction's ``loc.line`` points at a text line that contains its opcode;
* every register operand is declared in its function, every branch target resolves to a label;
* when the text has ``.loc`` lines, instructions carry ``user_loc`` taken from those lines;
* per-file spot checks of opcodes and operand shapes (``tcgen05.mma`` in the tcgen05 fixture, ...).

A last test recompiles a ``.cu`` fixture with the nvcc on PATH (skipped without one) and parses that fresh
output, and checks the committed PTX is not stale when the nvcc version is the one that made it.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

from tcsim.isa import ir
from tcsim.isa.parser import parse, parse_file

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
BENCH = REPO / "benchmarks" / "kernels"                 # copies of ../shared/bench (its README)


def _ptx_files() -> list:
    files = sorted(FIXTURES.rglob("*.ptx"))
    files += sorted(BENCH.glob("*.ptx"))
    return files


PTX_FILES = _ptx_files()


def _id(p: Path) -> str:
    try:
        return str(p.relative_to(REPO / "tests"))
    except ValueError:
        return "bench/" + p.name


@lru_cache(maxsize=None)
def _parsed(path: Path) -> ir.Module:
    return parse_file(path)


@lru_cache(maxsize=None)
def _text(path: Path) -> str:
    return path.read_text()


# ------------------------------------------------------------------------------------ independent text scan

_LABEL = re.compile(r"^\s*[A-Za-z_$%][\w$]*\s*:(?!:)")
_STRING = re.compile(r'"[^"\n]*"')


def _code_lines(text: str) -> list:
    """Text lines with comments and string literals blanked (line numbers preserved)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = []
    for line in text.split("\n"):
        line = _STRING.sub('""', line)
        out.append(line.split("//", 1)[0])
    return out


def count_statements(text: str) -> int:
    """Number of PTX instructions in ``text``, counted without the parser.

    Lines that start with a directive and carry no ``;`` (``.loc``, ``.file``, ``.maxntid``, ``.param``
    lines of a signature, ``.b8`` data of debug sections) are dropped, except ``.branchtargets`` (its label
    list runs on to a ``;`` on a later line); the rest is split on ``;``; each statement loses leading labels,
    braces and parentheses; what is left and does not start with ``.`` is an instruction.
    """
    kept = []
    for line in _code_lines(text):
        s = line.strip()
        if s.startswith(".") and ";" not in s and not s.startswith(".branchtargets"):
            continue
        kept.append(line)
    n = 0
    stmts = "\n".join(kept).split(";")
    for stmt in stmts[:-1]:               # the text after the last ';' is not a statement
        s = stmt.strip()
        while True:
            before = s
            s = s.lstrip("{}() \t\n")
            m = _LABEL.match(s)
            if m:
                s = s[m.end():]
            if s == before:
                break
        if s and not s.startswith("."):
            n += 1
    return n


def loc_lines(text: str) -> set:
    """Source line numbers named by ``.loc`` directives (including ``inlined_at`` ones)."""
    lines = set()
    for m in re.finditer(r"^\s*\.loc\s+\d+\s+(\d+)\s+\d+(.*)$", text, flags=re.M):
        lines.add(int(m.group(1)))
        for m2 in re.finditer(r"inlined_at\s+\d+\s+(\d+)\s+\d+", m.group(2)):
            lines.add(int(m2.group(1)))
    return lines


def entry_names(text: str) -> set:
    return set(re.findall(r"\.entry\s+([\w$]+)", "\n".join(_code_lines(text))))


def _walk(op):
    """Yield every leaf operand inside ``op``."""
    if isinstance(op, (ir.Vector, ir.ParenList)):
        for e in op.elems:
            yield from _walk(e)
    elif isinstance(op, ir.Address):
        if op.base is not None:
            yield op.base
        for c in op.coords or ():
            yield from _walk(c)
    elif isinstance(op, ir.Not):
        yield from _walk(op.operand)
    elif isinstance(op, ir.PredPair):
        yield from _walk(op.first)
        yield from _walk(op.second)
    else:
        yield op


def _bodies(mod: ir.Module):
    return [f for f in mod.functions.values() if not f.is_declaration]


def _all_insts(mod: ir.Module) -> list:
    return [i for f in _bodies(mod) for i in f.body]


def _full_opcodes(mod: ir.Module) -> set:
    return {i.full_opcode for i in _all_insts(mod)}


# ------------------------------------------------------------------------------------------ generic tests

def test_fixtures_exist():
    names = {p.name for p in PTX_FILES}
    assert any(n.startswith("tcgen05_mma") for n in names), names
    assert any(n.startswith("matmul_128x128x64") for n in names) or not (FIXTURES / "triton").is_dir(), names


@pytest.mark.parametrize("path", PTX_FILES, ids=_id)
def test_parses_with_sane_header_and_kernels(path):
    text = _text(path)
    mod = _parsed(path)
    assert isinstance(mod, ir.Module)
    assert path.name in mod.source_name
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", text, flags=re.M)
    assert mod.version == (int(m.group(1)), int(m.group(2)))
    target = re.search(r"^\s*\.target\s+(\w+)", text, flags=re.M).group(1)
    assert mod.arch == target
    assert mod.address_size == 64
    assert set(mod.kernels) == entry_names(text) and mod.kernels
    for name, k in mod.kernels.items():
        assert k.kind == "entry" and k.name == name
        assert len(k.body) > 0, f"{name} has an empty body"


@pytest.mark.parametrize("path", PTX_FILES, ids=_id)
def test_instruction_count_and_locations(path):
    text = _text(path)
    mod = _parsed(path)
    insts = _all_insts(mod)
    assert len(insts) == count_statements(text)
    lines = text.split("\n")
    for f in _bodies(mod):
        for idx, inst in enumerate(f.body):
            assert inst.index == idx
            assert 1 <= inst.loc.line <= len(lines)
            src = lines[inst.loc.line - 1]
            assert inst.opcode in src, f"{f.name}[{idx}] {inst} claims line {inst.loc.line}: {src!r}"


@pytest.mark.parametrize("path", PTX_FILES, ids=_id)
def test_registers_declared_and_labels_resolve(path):
    mod = _parsed(path)
    for f in _bodies(mod):
        assert all(0 <= v <= len(f.body) for v in f.labels.values()), f.name
        for inst in f.body:
            ops = list(inst.operands)
            if inst.guard is not None:
                ops.append(inst.guard[0])
            for op in ops:
                for leaf in _walk(op):
                    if isinstance(leaf, ir.Reg):
                        assert leaf.name in f.regs, f"{f.name}: {inst} uses undeclared {leaf.name}"
                    elif isinstance(leaf, ir.LabelRef) and inst.opcode == "brx":
                        assert leaf.name in f.branch_targets, f"{f.name}: {inst} names no .branchtargets list"
                    elif isinstance(leaf, ir.LabelRef) and inst.opcode == "call":
                        assert leaf.name in f.call_prototypes or leaf.name in f.call_targets, \
                            f"{f.name}: {inst} names no .callprototype / .calltargets"
                    elif isinstance(leaf, ir.LabelRef):
                        assert leaf.name in f.labels, f"{f.name}: {inst} branches to unknown {leaf.name}"
            if inst.opcode in ("bra", "brx"):
                assert isinstance(inst.operands[-1], ir.LabelRef), str(inst)
        for name, targets in f.branch_targets.items():
            assert name not in f.labels and targets and all(t in f.labels for t in targets), (name, targets)


@pytest.mark.parametrize("path", PTX_FILES, ids=_id)
def test_user_loc_from_dot_loc(path):
    text = _text(path)
    mod = _parsed(path)
    insts = _all_insts(mod)
    has_loc = re.search(r"^\s*\.loc\s", text, flags=re.M) is not None
    with_loc = [i for i in insts if i.user_loc is not None]
    if not has_loc:
        assert not with_loc, "user_loc set although the PTX has no .loc lines"
        return
    assert mod.files, ".file directives not recorded"
    # every instruction after the first .loc in its function body gets one; be lenient: most of them
    assert len(with_loc) >= 0.5 * len(insts), f"only {len(with_loc)}/{len(insts)} instructions have user_loc"
    allowed = loc_lines(text)
    known_files = set(map(str, mod.files.values())) | set(map(str, mod.files.keys()))
    for inst in with_loc:
        assert len(inst.user_loc) == 3, inst.user_loc
        file, line, col = inst.user_loc
        assert str(file) in known_files, (file, known_files)
        assert line in allowed, f"{inst} has user_loc line {line}, not named by any .loc"
        assert isinstance(col, int) and col >= 0


# -------------------------------------------------------------------------------------------- spot checks

#: file-name prefix -> full opcodes (prefix match) that must occur in the parsed module
EXPECTED_OPCODES = {
    "tma_mbarrier": [
        "mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster",
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "mbarrier.try_wait.parity.shared::cta.b64", "fence.proxy.async.shared::cta",
        "cp.async.bulk.global.shared::cta.bulk_group", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
        "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read", "prefetch.tensormap", "cvta.param",
        "mbarrier.inval",
    ],
    "tcgen05_mma": [
        "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
        "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned",
        "tcgen05.dealloc.cta_group::1.sync.aligned.b32", "tcgen05.mma.cta_group::1.kind::f16",
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
        "tcgen05.ld.sync.aligned.32x32b.x8.b32", "tcgen05.wait::ld.sync.aligned",
        "tcgen05.fence::before_thread_sync", "tcgen05.fence::after_thread_sync", "elect.sync",
        "mbarrier.try_wait.parity.shared::cta.b64",
    ],
    "cluster_dsmem": [
        "mapa.shared::cluster.u32", "barrier.cluster.arrive.release.aligned", "barrier.cluster.wait.acquire.aligned",
        "mbarrier.arrive.release.cluster.shared::cluster.b64", "st.shared::cluster.u32", "ld.shared::cluster.u32",
        "getctarank.shared::cluster.u32", "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64",
        "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes",
    ],
    "mma_sync_ldmatrix": [
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "stmatrix.sync.aligned.m8n8.x4.shared.b16", "cvt.rn.f16x2.f32",
    ],
    "printf_calls": ["call", "ret"],
    "vector_add": ["ld.global", "st.global"],
    "matmul_128x128x64.sm_90a": ["wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "wgmma.fence",
                                 "wgmma.commit_group", "wgmma.wait_group"],
    "matmul_128x128x64.sm_100a": ["tcgen05.mma.cta_group::1.kind::f16", "tcgen05.alloc", "tcgen05.commit",
                                  "tcgen05.ld.sync.aligned.32x32b", "elect.sync"],
    "matmul_tma_host_desc.sm_90a": ["cp.async.bulk.tensor.2d", "wgmma.mma_async", "mbarrier.try_wait"],
    "matmul_tma_host_desc.sm_100a": ["cp.async.bulk.tensor.2d", "tcgen05.mma", "mbarrier.try_wait"],
    "copy_tma_device_desc": ["tensormap.replace.tile", "tensormap.cp_fenceproxy",
                             "fence.proxy.tensormap::generic.acquire.gpu", "cp.async.bulk.tensor.2d"],
    "tc_matmul_bf16": ["tcgen05.mma.cta_group::1.kind::f16", "tcgen05.alloc", "tcgen05.commit",
                       "tcgen05.ld.sync.aligned", "mbarrier.try_wait", "ld.global", "st.global"],
    "cp_async_matmul_tf32": ["cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.commit_group",
                             "cp.async.wait_group", "tcgen05.mma.cta_group::1.kind::tf32", "fence.proxy.async"],
    "cute_gemm_bf16": ["tcgen05.mma.cta_group::1.kind::f16.collector::a::discard", "tcgen05.alloc",
                       "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint",
                       "tcgen05.ld.sync.aligned.32x32b.x32.b32", "mbarrier.try_wait.parity.shared.b64",
                       "tcgen05.commit"],
    "tma_matmul_bf16": ["cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes",
                        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "tcgen05.mma.cta_group::1.kind::f16",
                        "tcgen05.ld.sync.aligned", "mbarrier.arrive.expect_tx"],
    "ws_matmul_f16": ["brx.idx", "setmaxnreg.inc.sync.aligned.u32", "setmaxnreg.dec.sync.aligned.u32",
                      "barrier.sync", "tcgen05.mma.cta_group::1.kind::f16", "cp.async.bulk.tensor.2d"],
    "tma_scale_transpose_add": ["cp.async.bulk.tensor.2d.shared::cta.global", "fma.rn.f32x2",
                                "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"],
    "tma_device_desc_rowscale": ["tensormap.replace.tile", "tensormap.cp_fenceproxy",
                                 "fence.proxy.tensormap::generic.acquire.gpu", "cp.async.bulk.tensor.2d"],
    "gemm_tiled": ["bar.sync", "ld.shared", "fma.rn.f32"],
    "alu_loop": ["xor.b64", "fma.rn.f64", "mul.f64", "setp"],
}


def _expected_for(path: Path) -> list:
    return [op for key, ops in EXPECTED_OPCODES.items() if path.name.startswith(key) for op in ops]


@pytest.mark.parametrize("path", PTX_FILES, ids=_id)
def test_expected_opcodes(path):
    expected = _expected_for(path)
    if not expected:
        pytest.skip("no spot checks listed for this file")
    have = _full_opcodes(_parsed(path))
    missing = [e for e in expected if not any(h == e or h.startswith(e + ".") for h in have)]
    assert not missing, f"missing {missing}; parsed opcodes: {sorted(have)}"


def _first(mod: ir.Module, full_prefix: str) -> ir.Instruction:
    for inst in _all_insts(mod):
        if inst.full_opcode == full_prefix or inst.full_opcode.startswith(full_prefix + "."):
            return inst
    raise AssertionError(f"no {full_prefix} in {mod.source_name}")


def _fixture(name: str) -> Path:
    return FIXTURES / "nvcc" / name


def test_tma_fixture_details():
    mod = _parsed(_fixture("tma_mbarrier.sm_100a.ptx"))
    k = mod.kernel()
    tmap = k.params[0]
    assert tmap.array == 128 and tmap.size_bytes == 128 and tmap.alignment >= 64
    assert k.directives["maxntid"][0] == 128
    load = _first(mod, "cp.async.bulk.tensor.2d.shared::cluster.global")
    assert load.opcode == "cp" and load.has("mbarrier::complete_tx::bytes")
    dst, src, bar = load.operands
    assert isinstance(dst, ir.Address) and isinstance(bar, ir.Address)
    assert isinstance(src, ir.Address) and src.coords is not None and len(src.coords) == 2
    store = _first(mod, "cp.async.bulk.tensor.2d.global.shared::cta")
    assert store.operands[0].coords is not None and len(store.operands[0].coords) == 2
    # the try_wait spin loop: scoped predicate and labels renamed, branch targets resolve inside the scope
    wait = _first(mod, "mbarrier.try_wait.parity.shared::cta.b64")
    pred = wait.operands[0]
    assert isinstance(pred, ir.Reg) and pred.name != "P1" and pred.name.startswith("P1")
    expect = _first(mod, "mbarrier.arrive.expect_tx.shared::cta.b64")
    assert isinstance(expect.operands[0], ir.Sink)


def test_tcgen05_fixture_details():
    mod = _parsed(_fixture("tcgen05_mma.sm_100a.ptx"))
    k = mod.kernel()
    mma = [i for i in k.body if i.full_opcode == "tcgen05.mma.cta_group::1.kind::f16"]
    assert len(mma) == 4                                    # K=64 in four K=16 steps, fully unrolled
    d, adesc, bdesc, idesc, enable_d = mma[0].operands
    assert isinstance(d, ir.Address) and isinstance(d.base, ir.Reg)
    assert all(isinstance(o, ir.Reg) for o in (adesc, bdesc, idesc, enable_d))
    assert k.regs[adesc.name][0] in ("b64", "u64", "s64")
    assert k.regs[enable_d.name][0] == "pred"
    assert mma[0].mod_with_prefix("kind::") == "kind::f16"
    # the scoped predicates of the four inlined asm blocks are four distinct registers
    assert len({m.operands[4].name for m in mma}) == 4
    ld = [i for i in k.body if i.full_opcode == "tcgen05.ld.sync.aligned.32x32b.x8.b32"]
    assert len(ld) == 8
    assert isinstance(ld[0].operands[0], ir.Vector) and len(ld[0].operands[0].elems) == 8
    elect = _first(mod, "elect.sync")
    assert isinstance(elect.operands[0], ir.PredPair)
    # %rx / %px declared inside the asm scope are renamed but keep their base name
    assert elect.operands[0].first.name.startswith("%rx") and elect.operands[0].second.name.startswith("%px")
    # the instruction descriptor constant nvcc folded: D=F32, N=64, M=128
    idesc_movs = [i for i in k.body if i.full_opcode == "mov.b32" and isinstance(i.operands[1], ir.Imm)
                  and i.operands[1].value == (1 << 4) | (8 << 17) | (8 << 24)]
    assert idesc_movs, "instruction descriptor immediate 135266320 not found"


def test_cluster_fixture_details():
    for arch in ("sm_90a", "sm_100a"):
        mod = _parsed(_fixture(f"cluster_dsmem.{arch}.ptx"))
        k = mod.kernel()
        assert tuple(k.directives["reqnctapercluster"]) == (2, 1, 1)
        assert k.directives.get("explicitcluster") is True
        specials = {(leaf.name, leaf.component) for i in k.body for op in i.operands for leaf in _walk(op)
                    if isinstance(leaf, ir.SpecialReg)}
        assert ("%cluster_ctarank", None) in specials and ("%cluster_nctarank", None) in specials
        arrive = _first(mod, "mbarrier.arrive.release.cluster.shared::cluster.b64")
        assert isinstance(arrive.operands[0], ir.Sink)


def test_mma_sync_fixture_details():
    mod = _parsed(_fixture("mma_sync_ldmatrix.sm_90a.ptx"))
    mma = _first(mod, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    d, a, b, c = mma.operands
    assert [len(v.elems) for v in (d, a, b, c)] == [4, 4, 2, 4]
    st = _first(mod, "stmatrix.sync.aligned.m8n8.x4.shared.b16")
    assert isinstance(st.operands[0], ir.Address) and len(st.operands[1].elems) == 4


def test_printf_fixture_details():
    mod = _parsed(_fixture("printf_calls.sm_100a.ptx"))
    vprintf = mod.functions["vprintf"]
    assert vprintf.is_declaration and vprintf.kind == "func" and len(vprintf.params) == 2
    assert len(vprintf.returns) == 1
    poly = mod.functions["_Z4polyfi"]
    assert poly.kind == "func" and not poly.is_declaration and len(poly.params) == 2 and len(poly.returns) == 1
    strs = [g for g in mod.globals if g.name.startswith("$str")]
    assert len(strs) == 3 and all(g.space == "global" and g.type == "b8" for g in strs)
    s0 = next(g for g in strs if g.name == "$str")
    assert s0.dims == [33] and s0.init is not None
    text = bytes(int(v.value) for v in s0.init).rstrip(b"\0")
    assert text.startswith(b"poly overflow")
    calls = [i for f in _bodies(mod) for i in f.body if i.opcode == "call"]
    assert len(calls) == 4                                        # 3 printf + 1 poly
    # .param declared in the call scopes are recorded as function locals
    k = mod.kernel()
    assert any(getattr(v, "space", None) == "param" for v in k.locals)


def test_lineinfo_fixture_user_locs():
    mod = _parsed(_fixture("tcgen05_mma.lineinfo.sm_100a.ptx"))
    assert any(str(p).endswith("tcgen05_mma.cu") for p in mod.files.values())
    mma = [i for i in _all_insts(mod) if i.full_opcode == "tcgen05.mma.cta_group::1.kind::f16"]
    src = (FIXTURES / "nvcc" / "tcgen05_mma.cu").read_text().split("\n")
    mma_line = next(n for n, s in enumerate(src, 1) if "tcgen05.mma.cta_group::1.kind::f16 [%0]" in s)
    assert len(mma) == 4
    for inst in mma:
        assert inst.user_loc is not None
        # the .loc in front of an inline-asm MMA names a line of that (multi-line) asm statement in the .cu
        assert abs(inst.user_loc[1] - mma_line) <= 6, (inst.user_loc, mma_line)


def test_parse_text_matches_parse_file():
    path = _fixture("cluster_dsmem.sm_100a.ptx")
    a = parse(_text(path), str(path))
    b = _parsed(path)
    assert [str(i) for i in a.kernel().body] == [str(i) for i in b.kernel().body]


# ------------------------------------------------------------------------------------------- fresh nvcc

def _nvcc_version(text: str) -> str | None:
    m = re.search(r"^// Cuda compilation tools, (.*)$", text, flags=re.M)
    return m.group(1) if m else None


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_fresh_nvcc_output_parses(tmp_path):
    cu = FIXTURES / "nvcc" / "mma_sync_ldmatrix.cu"
    plain = tmp_path / "mma_sync_ldmatrix.sm_90a.ptx"
    lined = tmp_path / "mma_sync_ldmatrix.lineinfo.sm_90a.ptx"
    for out, extra in ((plain, []), (lined, ["-lineinfo"])):
        r = subprocess.run(["nvcc", "-ptx", "-O3", "-arch=sm_90a", *extra, str(cu), "-o", str(out)],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            pytest.fail(f"nvcc failed on {cu.name}:\n{r.stderr}")
    mod = parse_file(lined)
    k = mod.kernel()
    assert "mma_16x16" in k.name
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in _full_opcodes(mod)
    assert len(_all_insts(mod)) == count_statements(lined.read_text())
    assert any(i.user_loc is not None for i in k.body)
    # the committed fixture is current when this nvcc is the one that generated it
    committed = _text(FIXTURES / "nvcc" / plain.name)
    fresh = plain.read_text()
    if _nvcc_version(committed) == _nvcc_version(fresh):
        assert fresh == committed, "tests/fixtures/nvcc is stale: run tests/fixtures/nvcc/regen.sh"
