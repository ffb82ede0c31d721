"""Tests of the PTX front end (isa.lexer / isa.parser) on small inline snippets and the shared bench files."""
from __future__ import annotations

import math
import os
import re
import struct

import pytest

from tcsim.isa.errors import PtxSyntaxError, SourceLoc
from tcsim.isa.ir import (Address, Imm, LabelRef, Not, ParenList, PredPair, Reg, Sink, SpecialReg, Sym,
                    Vector)
from tcsim.isa.parser import SPECIAL_REGISTERS, parse, parse_file

HDR = ".version 9.0\n.target sm_100a\n.address_size 64\n"
BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks", "kernels")
# (copies of ../shared/bench, benchmarks/kernels/README.md: present in every checkout, so nothing here skips)


def kernel_src(body: str, params: str = "", directives: str = "", prelude: str = "") -> str:
    return f"{HDR}{prelude}\n.visible .entry k({params})\n{directives}\n{{\n{body}\n}}\n"


def kern(body: str, params: str = "", directives: str = "", prelude: str = ""):
    return parse(kernel_src(body, params, directives, prelude)).kernel("k")


def only(body: str, decls: str = ".reg .pred %p<4>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n"
                                     ".reg .f32 %f<4>;\n.reg .f64 %fd<4>;", **kw):
    """Parse a kernel whose body has exactly one instruction and return it."""
    k = kern(decls + "\n" + body, **kw)
    assert len(k.body) == 1, k.body
    return k.body[0]


# ----------------------------------------------------------------------------------------- module directives


def test_module_directives():
    m = parse(".version 8.7\n.target sm_90a, texmode_independent, debug\n.address_size 32\n")
    assert m.version == (8, 7)
    assert m.target == ["sm_90a", "texmode_independent", "debug"]
    assert m.arch == "sm_90a"
    assert m.address_size == 32
    assert m.functions == {} and m.globals == []
    assert m.source_name == "<string>"


def test_defaults_and_source_name():
    m = parse(".version 9.0\n.target sm_100a\n", source_name="x.ptx")
    assert m.address_size == 64 and m.source_name == "x.ptx" and m.target == ["sm_100a"]


def test_parse_file_uses_path_as_given(tmp_path):
    p = tmp_path / "k.ptx"
    p.write_text(kernel_src("ret;"))
    m = parse_file(str(p))
    assert m.source_name == str(p)
    assert m.kernel().body[0].loc.file == str(p)
    m2 = parse_file(p)  # a PathLike works too
    assert m2.source_name == str(p)


# ----------------------------------------------------------------------------------------- functions


def test_entry_func_linkage_and_prototypes():
    src = HDR + """
.extern .func (.param .b32 func_retval0) vprintf
(
    .param .b64 vprintf_param_0,
    .param .b64 vprintf_param_1
)
;
.func (.param .b32 r) helper(.param .b32 a);
.weak .func nop_fn()
{
    ret;
}
.func (.param .b32 r) helper(.param .b32 a)
.noreturn
{
    .reg .b32 %x;
    ld.param.b32 %x, [a];
    st.param.b32 [r], %x;
    ret;
}
.entry plain
{
    ret;
}
.visible .entry k()
{
    ret;
}
"""
    m = parse(src)
    assert list(m.functions) == ["vprintf", "helper", "nop_fn", "plain", "k"]
    v = m.functions["vprintf"]
    assert v.kind == "func" and v.is_declaration and v.linkage == "extern" and v.body == []
    assert [(p.name, p.type) for p in v.returns] == [("func_retval0", "b32")]
    assert [(p.name, p.type) for p in v.params] == [("vprintf_param_0", "b64"), ("vprintf_param_1", "b64")]
    h = m.functions["helper"]
    assert not h.is_declaration and h.directives == {"noreturn": True} and len(h.body) == 3
    assert h.body[0].operands == (Reg("%x"), Address(Sym("a")))
    assert h.body[1].operands == (Address(Sym("r")), Reg("%x"))
    assert m.functions["nop_fn"].linkage == "weak" and m.functions["nop_fn"].params == []
    assert m.functions["plain"].kind == "entry" and m.functions["plain"].linkage is None
    assert set(m.kernels) == {"plain", "k"}
    assert m.functions["k"].linkage == "visible"
    assert m.functions["k"].loc.line == src.split("\n").index(".visible .entry k()") + 1
    assert m.functions["k"].loc.col == 1


PERF = [
    (".maxntid 128", {"maxntid": (128, 1, 1)}),
    (".maxntid 16, 16", {"maxntid": (16, 16, 1)}),
    (".reqntid 32, 2, 2", {"reqntid": (32, 2, 2)}),
    (".reqnctapercluster 2", {"reqnctapercluster": (2, 1, 1)}),
    (".reqnctapercluster 2, 1, 1\n.explicitcluster", {"reqnctapercluster": (2, 1, 1), "explicitcluster": True}),
    (".maxnreg 168", {"maxnreg": 168}),
    (".minnctapersm 2", {"minnctapersm": 2}),
    (".maxclusterrank 8", {"maxclusterrank": 8}),
    (".noreturn", {"noreturn": True}),
    (".blocksareclusters", {"blocksareclusters": True}),
    (".maxntid 256, 1, 1 .minnctapersm 1 .maxnreg 64",
     {"maxntid": (256, 1, 1), "minnctapersm": 1, "maxnreg": 64}),
]


@pytest.mark.parametrize("text,expected", PERF)
def test_perf_directives(text, expected):
    assert kern("ret;", directives=text).directives == expected


def test_params():
    params = """
    .param .u64 .ptr .global .align 16 a,
    .param .u64 .ptr .align 1 b,
    .param .align 64 .b8 tmap[128],
    .param .u32 n,
    .param .f64 x"""
    k = kern("ret;", params=params)
    a, b, t, n, x = k.params
    assert (a.name, a.type, a.ptr_space, a.ptr_align, a.align, a.array) == ("a", "u64", "global", 16, None, None)
    assert (b.name, b.type, b.ptr_space, b.ptr_align) == ("b", "u64", None, 1)
    assert (t.name, t.type, t.align, t.array, t.size_bytes, t.alignment) == ("tmap", "b8", 64, 128, 128, 64)
    assert (n.type, n.size_bytes, n.alignment) == ("u32", 4, 4)
    assert x.type == "f64"
    assert k.param("n") is n and k.param("zz") is None
    assert a.loc.line == 6 and a.loc.col == 5 and a.loc.text.strip().startswith(".param .u64 .ptr .global")


# ----------------------------------------------------------------------------------------- declarations


def test_reg_declarations():
    k = kern(""".reg .b32 %r<102>;
.reg .pred %p, %q;
.reg .v4 .f32 %v;
.reg .b64 %rd<3>, %x;
.reg .pred P1;
.reg .f16x2 %h<2>;
ret;""")
    assert [f"%r{i}" for i in range(102)] == [n for n in k.regs if n.startswith("%r") and n[2:].isdigit()]
    assert "%r102" not in k.regs
    assert k.regs["%r0"] == ("b32", 1) and k.regs["%r101"] == ("b32", 1)
    assert k.regs["%p"] == ("pred", 1) and k.regs["%q"] == ("pred", 1)
    assert k.regs["%v"] == ("f32", 4)
    assert k.regs["%rd2"] == ("b64", 1) and k.regs["%x"] == ("b64", 1)
    assert k.regs["P1"] == ("pred", 1)
    assert k.regs["%h1"] == ("f16x2", 1)
    assert len(k.regs) == 102 + 2 + 1 + 4 + 1 + 2


def test_module_variables():
    m = parse(HDR + """
.global .align 4 .u32 g = 5;
.global .align 1 .b8 s[6] = {72, 101, 108, 0, 0, 0};
.global .align 8 .u64 sym1;
.global .align 8 .u64 sym2;
.const .align 8 .u64 tbl[2] = {sym1, sym2+8};
.global .u32 grid[4][8];
.global .u32 m2[2][2] = {{1, 2}, {3, -4}};
.global .b8 unsized[] = {1, 2, 3};
.global .f32 fl[2] = {0f3F800000, 1.5};
.global .u64 gp = generic(g);
.shared .align 16 .b8 smem[1024];
.extern .shared .align 16 .b8 dsmem[];
.shared .b64 mbar;
.visible .global .v4 .f32 vv;
.weak .global .u32 w1, w2 = 3;
""")
    d = {v.name: v for v in m.globals}
    assert list(d) == ["g", "s", "sym1", "sym2", "tbl", "grid", "m2", "unsized", "fl", "gp", "smem", "dsmem",
                       "mbar", "vv", "w1", "w2"]
    g = d["g"]
    assert (g.space, g.type, g.align, g.dims, g.init, g.linkage) == ("global", "u32", 4, [], [Imm(5)], None)
    assert d["s"].dims == [6] and d["s"].init == [Imm(72), Imm(101), Imm(108), Imm(0), Imm(0), Imm(0)]
    assert d["s"].size_bytes == 6
    assert d["tbl"].space == "const" and d["tbl"].init == [Sym("sym1"), Sym("sym2", 8)]
    assert d["grid"].dims == [4, 8] and d["grid"].size_bytes == 128 and d["grid"].init is None
    assert d["m2"].init == [Imm(1), Imm(2), Imm(3), Imm(-4)]
    assert d["unsized"].dims == [3]
    assert d["fl"].init == [Imm(1.0, "f32", 0x3F800000), Imm(1.5, "f64", 0x3FF8000000000000)]
    assert d["gp"].init == [Sym("g")]
    assert (d["smem"].space, d["smem"].align, d["smem"].dims, d["smem"].size_bytes) == ("shared", 16, [1024], 1024)
    assert (d["dsmem"].dims, d["dsmem"].linkage, d["dsmem"].size_bytes) == ([None], "extern", 0)
    assert (d["mbar"].type, d["mbar"].dims, d["mbar"].alignment) == ("b64", [], 8)
    assert (d["vv"].vector, d["vv"].linkage, d["vv"].elem_size) == (4, "visible", 16)
    assert d["w1"].linkage == "weak" and d["w2"].init == [Imm(3)]


def test_function_scope_variables_and_body_params():
    k = kern("""
.local .align 8 .b8 __local_depot0[16];
.shared .align 8 .b64 mbar;
.reg .b64 %rd<3>;
.param .b64 top_param;
{
    .param .b64 param0;
    .param .align 16 .b8 param1[24];
    st.param.b64 [param0], %rd1;
    st.param.b64 [param1+8], %rd1;
}
{
    .param .b64 param0;
    st.param.b64 [param0], %rd2;
}
mov.u64 %rd1, __local_depot0;
st.shared.b64 [mbar], %rd1;
st.param.b64 [top_param], %rd1;
""")
    locs = [(v.space, v.name, v.type, v.align, v.dims) for v in k.locals]
    assert locs == [("local", "__local_depot0", "b8", 8, [16]), ("shared", "mbar", "b64", 8, []),
                    ("param", "top_param", "b64", None, []), ("param", "param0@1", "b64", None, []),
                    ("param", "param1@1", "b8", 16, [24]), ("param", "param0@2", "b64", None, [])]
    ops = [i.operands for i in k.body]
    assert ops[0] == (Address(Sym("param0@1")), Reg("%rd1"))
    assert ops[1] == (Address(Sym("param1@1"), 8), Reg("%rd1"))
    assert ops[2] == (Address(Sym("param0@2")), Reg("%rd2"))
    assert ops[3] == (Reg("%rd1"), Sym("__local_depot0"))
    assert ops[4] == (Address(Sym("mbar")), Reg("%rd1"))
    assert ops[5] == (Address(Sym("top_param")), Reg("%rd1"))


# ----------------------------------------------------------------------------------------- debug info & trivia


def test_file_loc_pragma_section_comments():
    src = HDR + """.file 1 "/src/a.cu", 1700000000, 1234
.file 2 "/src/b.cuh"
/* a multi-line
   comment */
.visible .entry k() {
    .reg .b32 %r<3>; // trailing comment
    mov.u32 %r1, 1;          // no .loc yet
    .loc 1 10 5
    mov.u32 %r1, 2;
    .pragma "nounroll";
L1:
    add.u32 /* inline */ %r1, %r1,
        /* spans
           lines */ 3;
    .loc 2 7 3, function_name $L__info_string0, inlined_at 1 10 5
    mov.u32 %r2, %r1;
    ret;
}
.section .debug_str
{
$L__info_string0:
.b8 107
.b8 0
}
.section .debug_macinfo { }
"""
    m = parse(src, "dbg.ptx")
    assert m.files == {1: "/src/a.cu", 2: "/src/b.cuh"}
    b = m.kernel().body
    assert [i.user_loc for i in b] == [None, ("/src/a.cu", 10, 5), ("/src/a.cu", 10, 5), ("/src/b.cuh", 7, 3),
                                       ("/src/b.cuh", 7, 3)]
    assert b[2].operands == (Reg("%r1"), Reg("%r1"), Imm(3))
    assert b[2].loc == SourceLoc("dbg.ptx", 15, 5, "    add.u32 /* inline */ %r1, %r1,")
    assert m.kernel().labels == {"L1": 2}


def test_file_after_functions_llvm_order():
    src = HDR + """.visible .entry k() {
    .loc 1 40 0
$L__func_begin0:
    .loc 1 41 2
    ret;
$L__func_end0:
}
    .file 1 "/tmp/kernel.py"
    .section .debug_abbrev
    {
.b8 1                                   // Abbreviation Code
.b8 17                                  // DW_TAG_compile_unit
    }
"""
    m = parse(src)
    k = m.kernel()
    assert k.body[0].user_loc == ("/tmp/kernel.py", 41, 2)
    assert k.labels == {"$L__func_begin0": 0, "$L__func_end0": 1}


# ----------------------------------------------------------------------------------------- labels and scopes


CUTLASS_WAIT = """
    {
    .reg .pred P1;
    LAB_WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 P1, [%r1], %r2;
    @P1 bra DONE;
    bra LAB_WAIT;
    DONE:
    }
"""


def test_labels_map_to_next_instruction():
    k = kern(""".reg .pred %p<2>;
$L__BB0_1:
    mov.pred %p1, 1;
    @%p1 bra $L__BB0_3;
$L__BB0_2:
$L__BB0_2b:
    bra.uni $L__BB0_1;
$L__BB0_3:
    ret;
$L__end:""")
    assert k.labels == {"$L__BB0_1": 0, "$L__BB0_2": 2, "$L__BB0_2b": 2, "$L__BB0_3": 3, "$L__end": 4}
    assert k.body[1].operands == (LabelRef("$L__BB0_3"),)
    assert k.body[1].guard == (Reg("%p1"), False)
    assert k.body[2].operands == (LabelRef("$L__BB0_1"),)


def test_cutlass_scopes_are_renamed_uniquely():
    k = kern(".reg .b32 %r<3>;\n.reg .pred P1;\n" + CUTLASS_WAIT + CUTLASS_WAIT +
             "@P1 bra OUT;\n{\n.reg .pred P1;\n{\n.reg .b32 %r1;\nmov.b32 %r1, 0;\n@P1 bra OUT;\n}\n"
             "mov.b32 %r1, 1;\n}\nOUT:\nret;")
    assert k.regs["P1"] == ("pred", 1) and k.regs["P1@1"] == ("pred", 1) and k.regs["P1@2"] == ("pred", 1)
    assert k.regs["P1@3"] == ("pred", 1) and k.regs["%r1@4"] == ("b32", 1)
    assert k.labels == {"LAB_WAIT@1": 0, "DONE@1": 3, "LAB_WAIT@2": 3, "DONE@2": 6, "OUT": 10}
    b = k.body
    assert b[0].operands[0] == Reg("P1@1")
    assert (b[1].guard, b[1].operands) == ((Reg("P1@1"), False), (LabelRef("DONE@1"),))
    assert b[2].operands == (LabelRef("LAB_WAIT@1"),)
    assert b[3].operands[0] == Reg("P1@2")
    assert (b[4].guard, b[4].operands) == ((Reg("P1@2"), False), (LabelRef("DONE@2"),))
    assert b[5].operands == (LabelRef("LAB_WAIT@2"),)
    assert b[6].guard == (Reg("P1"), False)          # outer P1 again after the scopes closed
    assert b[7].operands == (Reg("%r1@4"), Imm(0))   # innermost %r1
    assert b[8].guard == (Reg("P1@3"), False)        # P1 of the enclosing (not the innermost) scope
    assert b[8].operands == (LabelRef("OUT"),)       # outer label visible from nested scopes
    assert b[9].operands == (Reg("%r1"), Imm(1))     # %r1@4 went out of scope


def test_forward_reference_to_label_in_same_nested_scope():
    k = kern(".reg .pred %p;\n{\n@%p bra END;\nmov.pred %p, 0;\nEND:\n}\nEND:\nret;")
    assert k.body[0].operands == (LabelRef("END@1"),)
    assert k.labels == {"END@1": 2, "END": 2}


def test_nvcc_inline_asm_elect_scope():
    k = kern(""".reg .b32 %r<4>;
{
.reg .b32 %rx;
.reg .pred %px;
     elect.sync %rx|%px, %r1;
@%px mov.s32 %r2, 1;
     mov.s32 %r3, %rx;
}""")
    assert k.body[0].operands == (PredPair(Reg("%rx@1"), Reg("%px@1")), Reg("%r1"))
    assert k.body[1].guard == (Reg("%px@1"), False)
    assert k.body[2].operands == (Reg("%r3"), Reg("%rx@1"))


# ----------------------------------------------------------------------------------------- instructions


OPCODES = [
    ("ld.global.v4.f32", "ld", ("global", "v4", "f32")),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint", "cp",
     ("async", "bulk", "tensor", "2d", "shared::cluster", "global", "tile", "mbarrier::complete_tx::bytes",
      "L2::cache_hint")),
    ("tcgen05.mma.cta_group::1.kind::f16", "tcgen05", ("mma", "cta_group::1", "kind::f16")),
    ("tcgen05.ld.sync.aligned.16x256b.x4.b32", "tcgen05", ("ld", "sync", "aligned", "16x256b", "x4", "b32")),
    ("tcgen05.cp.cta_group::1.128x256b.b8x16.b4x16_p64", "tcgen05",
     ("cp", "cta_group::1", "128x256b", "b8x16", "b4x16_p64")),
    ("cp.async.bulk.tensor.2d.shared::cta.global.tile::gather4.mbarrier::complete_tx::bytes", "cp",
     ("async", "bulk", "tensor", "2d", "shared::cta", "global", "tile::gather4", "mbarrier::complete_tx::bytes")),
    ("ld.global.nc.L1::no_allocate.L2::256B.v4.u32", "ld",
     ("global", "nc", "L1::no_allocate", "L2::256B", "v4", "u32")),
    ("tcgen05.fence::before_thread_sync", "tcgen05", ("fence::before_thread_sync",)),
    ("ret", "ret", ()),
]


@pytest.mark.parametrize("text,opcode,mods", OPCODES)
def test_opcode_and_qualifiers(text, opcode, mods):
    ins = only(f"{text};", decls="")
    assert ins.opcode == opcode and ins.mods == mods and ins.full_opcode == text
    assert ins.operands == () and ins.guard is None and ins.index == 0


def test_guards_and_instruction_loc():
    k = kern(".reg .pred %p<3>;\n.reg .b32 %r<3>;\n@%p1 mov.b32 %r1, 1;\n   @!%p2 add.s32 %r1, %r1, 1;\n"
             "\tsub.s32 %r2, %r1, 1;")
    b = k.body
    assert b[0].guard == (Reg("%p1"), False) and b[1].guard == (Reg("%p2"), True) and b[2].guard is None
    assert [i.index for i in b] == [0, 1, 2]
    assert (b[0].loc.line, b[0].loc.col) == (10, 1)
    assert (b[1].loc.line, b[1].loc.col, b[1].loc.text) == (11, 4, "   @!%p2 add.s32 %r1, %r1, 1;")
    assert (b[2].loc.line, b[2].loc.col) == (12, 2)
    assert str(b[1]) == "@!%p2 add.s32 %r1, %r1, 1;"


def test_special_registers():
    names = sorted(SPECIAL_REGISTERS)
    for n in ("%tid", "%clock64", "%pm7_64", "%envreg31", "%reserved_smem_offset_1", "%current_graph_exec",
              "%lanemask_gt", "%is_explicit_cluster", "%cluster_nctarank", "%globaltimer_hi"):
        assert n in SPECIAL_REGISTERS
    body = ".reg .b64 %rd;\n" + "\n".join(
        f"mov.u64 %rd, {n}{'.x' if SPECIAL_REGISTERS[n] else ''};" for n in names)
    k = kern(body)
    assert [i.operands[1] for i in k.body] == [SpecialReg(n, "x" if SPECIAL_REGISTERS[n] else None)
                                               for n in names]
    k = kern(".reg .b32 %r<3>;\nmov.u32 %r0, %ctaid.y;\nmov.u32 %r1, %cluster_ctaid.z;\nmov.u32 %r2, %laneid;")
    assert [i.operands[1] for i in k.body] == [SpecialReg("%ctaid", "y"), SpecialReg("%cluster_ctaid", "z"),
                                               SpecialReg("%laneid")]


IMMS = [
    ("42", Imm(42)), ("-7", Imm(-7)), ("0x1F", Imm(31)), ("0XffU", Imm(255)), ("017", Imm(15)),
    ("0b1011", Imm(11)), ("0", Imm(0)), ("7U", Imm(7)), ("0xFFFFFFFFFFFFFFFF", Imm(2 ** 64 - 1)),
    ("2147483647", Imm(2147483647)), ("-2147483648", Imm(-2147483648)),
    ("0f3F800000", Imm(1.0, "f32", 0x3F800000)), ("0fBF800000", Imm(-1.0, "f32", 0xBF800000)),
    ("-0f3F800000", Imm(-1.0, "f32", 0xBF800000)),
    ("0d3FF0000000000000", Imm(1.0, "f64", 0x3FF0000000000000)),
    ("1.5", Imm(1.5, "f64", 0x3FF8000000000000)),
    ("1e-3", Imm(1e-3, "f64", struct.unpack("<Q", struct.pack("<d", 1e-3))[0])),
    ("-2.5E2", Imm(-250.0, "f64", struct.unpack("<Q", struct.pack("<d", -250.0))[0])),
    ("1 + 2 * 3", Imm(7)), ("(1 + 2) * 3", Imm(9)), ("1 << 4 | 1", Imm(17)), ("1 << (4 | 1)", Imm(32)),
    ("0xF0 & 0x3C ^ 0x01", Imm(0x31)), ("~0", Imm(-1)), ("~0U", Imm(2 ** 64 - 1)), ("!5", Imm(0)),
    ("!0", Imm(1)), ("-7 / 2", Imm(-3)), ("-7 % 2", Imm(-1)), ("7 % -2", Imm(1)), ("-16 >> 2", Imm(-4)),
    ("-16U >> 60", Imm(15)), ("10 - 2 - 3", Imm(5)), ("2 * -3", Imm(-6)), ("- -3", Imm(3)),
    ("1 < 2", Imm(1)), ("3 == 4", Imm(0)), ("1 && 0 || 1", Imm(1)), ("1 ? 10 : 20", Imm(10)),
    ("0x7FFFFFFFFFFFFFFF + 1", Imm(-(2 ** 63))), ("0xFFFFFFFF", Imm(0xFFFFFFFF)),
]


@pytest.mark.parametrize("text,imm", IMMS)
def test_immediates_and_constant_expressions(text, imm):
    ins = only(f"mov.b64 %rd1, {text};")
    op = ins.operands[1]
    assert op == imm
    if imm.kind != "int":
        assert math.isclose(op.value, imm.value) and op.bits == imm.bits


def test_float_immediate_nan_bits_preserved():
    op = only("mov.f32 %f1, 0f7FC00001;").operands[1]
    assert op.kind == "f32" and op.bits == 0x7FC00001 and math.isnan(op.value)
    assert str(op) == "0f7FC00001"


ADDRS = [
    ("[%rd1]", Address(Reg("%rd1"))),
    ("[%rd1+16]", Address(Reg("%rd1"), 16)),
    ("[%rd1+-16]", Address(Reg("%rd1"), -16)),
    ("[%rd1-16]", Address(Reg("%rd1"), -16)),
    ("[ %rd1 + 0 ]", Address(Reg("%rd1"), 0)),
    ("[%rd1+4*8]", Address(Reg("%rd1"), 32)),
    ("[%rd1-4+8]", Address(Reg("%rd1"), 4)),
    ("[gv]", Address(Sym("gv"))),
    ("[gv+4]", Address(Sym("gv"), 4)),
    ("[gv-4]", Address(Sym("gv"), -4)),
    ("[0x100]", Address(None, 256)),
    ("[%rd1, {%r1, %r2}]", Address(Reg("%rd1"), 0, (Reg("%r1"), Reg("%r2")))),
    ("[pt, {%r1, 0, -1}]", Address(Sym("pt"), 0, (Reg("%r1"), Imm(0), Imm(-1)))),
]


@pytest.mark.parametrize("text,addr", ADDRS)
def test_addresses(text, addr):
    ins = only(f"ld.b32 %r1, {text};", prelude=".global .align 4 .b32 gv[4];\n", params=".param .b8 pt[128]"
               ) if "pt" in text else only(f"ld.b32 %r1, {text};", prelude=".global .align 4 .b32 gv[4];\n")
    assert ins.operands[1] == addr


def test_other_operand_forms():
    k = kern(""".reg .pred %p<3>;
.reg .b32 %r<5>;
.reg .b64 %rd<3>;
mov.b64 %rd1, {%r1, %r2};
ld.global.v4.b32 {%r1, _, %r3, %r4}, [%rd1];
setp.eq.s32 %p1|%p2, %r1, 0;
elect.sync _|%p1, 0xffffffff;
vote.sync.ballot.b32 %r1, !%p1, -1;
mbarrier.arrive.expect_tx.shared::cta.b64 _, [gv], 16;
mov.u64 %rd2, gv;
mov.u64 %rd2, gv+8;
cvta.shared.u64 %rd2, sm;
""", prelude=".global .align 8 .b64 gv;\n.shared .align 8 .b64 sm[4];\n")
    ops = [i.operands for i in k.body]
    assert ops[0] == (Reg("%rd1"), Vector((Reg("%r1"), Reg("%r2"))))
    assert ops[1] == (Vector((Reg("%r1"), Sink(), Reg("%r3"), Reg("%r4"))), Address(Reg("%rd1")))
    assert ops[2] == (PredPair(Reg("%p1"), Reg("%p2")), Reg("%r1"), Imm(0))
    assert ops[3] == (PredPair(Sink(), Reg("%p1")), Imm(0xFFFFFFFF))
    assert ops[4] == (Reg("%r1"), Not(Reg("%p1")), Imm(-1))
    assert ops[5] == (Sink(), Address(Sym("gv")), Imm(16))
    assert ops[6] == (Reg("%rd2"), Sym("gv"))
    assert ops[7] == (Reg("%rd2"), Sym("gv", 8))
    assert ops[8] == (Reg("%rd2"), Sym("sm"))
    assert str(k.body[2]) == "setp.eq.s32 %p1|%p2, %r1, 0;"


def test_calls():
    src = HDR + """
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);
.func f(.param .b32 x) { ret; }
.visible .entry k() {
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    { // callseq 0, 0
    .param .b64 param0;
    st.param.b64 [param0], %rd1;
    .param .b64 param1;
    st.param.b64 [param1], %rd2;
    .param .b32 retval0;
    call.uni (retval0),
    vprintf,
    (
    param0,
    param1
    );
    ld.param.b32 %r1, [retval0];
    } // callseq 0
    {
    .param .b32 param0;
    call f, (param0);
    }
    call g;
    call.uni f, ();
    ret;
}
.func g() { ret; }
"""
    m = parse(src)
    b = m.kernel().body
    assert b[2].opcode == "call" and b[2].mods == ("uni",)
    assert b[2].operands == (ParenList((Sym("retval0@1"),)), Sym("vprintf"),
                             ParenList((Sym("param0@1"), Sym("param1@1"))))
    assert b[3].operands == (Reg("%r1"), Address(Sym("retval0@1")))
    assert b[4].operands == (Sym("f"), ParenList((Sym("param0@2"),)))
    assert b[5].operands == (Sym("g"),)              # defined after its use
    assert b[6].operands == (Sym("f"), ParenList(()))
    assert str(b[2]) == "call.uni (retval0@1), vprintf, (param0@1, param1@1);"


def test_label_operand_outside_branch_is_labelref_and_symbols_resolve_late():
    m = parse(HDR + """.visible .entry k() {
    .reg .b64 %rd;
    mov.u64 %rd, later;
    mov.u64 %rd, L;
L:
    ret;
}
.global .b32 later;
""")
    ops = [i.operands[1] for i in m.kernel().body[:2]]
    assert ops == [Sym("later"), LabelRef("L")]


# ----------------------------------------------------------------------------------------- real files


def count_instructions_grep(path: str) -> int:
    """Independent count: lines inside function bodies that hold an instruction (nvcc layout)."""
    n = 0
    for line in open(path):
        s = line.strip()
        if not s or not s.endswith(";") or s.startswith((".", "//", "$", "{", "}")):
            continue
        if re.match(r"^(@!?%?\w+\s+)?[a-z][a-z0-9_]*(\.[\w:]+)*(\s|;)", s):
            n += 1
    return n


@pytest.mark.parametrize("name", ["gemm_tiled.sm_100a.ptx", "alu_loop.sm_100a.ptx", "gemm_tiled.sm_80.ptx",
                                  "alu_loop.sm_80.ptx"])
def test_bench_files(name):
    path = os.path.join(BENCH, name)
    m = parse_file(path)
    k = m.kernel()
    assert len(k.body) == count_instructions_grep(path)
    assert m.version == (9, 0) and m.address_size == 64
    text = open(path).read()
    labels = re.findall(r"^(\$L__\w+):", text, re.M)
    assert sorted(k.labels) == sorted(labels)
    for lab, idx in k.labels.items():   # the label line is followed (eventually) by that instruction
        assert 0 <= idx <= len(k.body)
    assert all(i.index == n for n, i in enumerate(k.body))
    assert k.body[-1].opcode == "ret"
    for ins in k.body:                  # loc.text is the line that holds the instruction
        assert ins.loc.text.strip().startswith(("@", ins.opcode))
    if name.startswith("gemm_tiled.sm_100a"):
        assert m.arch == "sm_100a"
        assert len(k.params) == 6 and k.params[0].ptr_align == 1 and k.params[3].type == "u32"
        assert len([r for r in k.regs if r.startswith("%f")]) == 368
        assert [v.name for v in k.locals] == ["_ZZ10gemm_tiledE2sA", "_ZZ10gemm_tiledE2sB"]
        assert k.body[0].operands == (Reg("%r32"), Address(Sym("gemm_tiled_param_5")))


def test_large_file_synthetic_10k_lines():
    """A ~10,000-line module (the gemm kernel replicated under different names) parses completely."""
    path = os.path.join(BENCH, "gemm_tiled.sm_100a.ptx")
    text = open(path).read()
    head, _, rest = text.partition(".visible .entry")
    copies = []
    n = 0
    while sum(c.count("\n") for c in copies) + head.count("\n") < 10000:
        copies.append((".visible .entry" + rest).replace("gemm_tiled", f"gemm_tiled_{n}"))
        n += 1
    big = head + "".join(copies)
    assert big.count("\n") >= 10000
    m = parse(big, "big.ptx")
    per = count_instructions_grep(path)
    assert len(m.kernels) == n
    assert sum(len(f.body) for f in m.functions.values()) == per * n


def test_crlf_line_endings_and_tabs():
    src = kernel_src(".reg .b32\t%r<2>;\n\tmov.b32\t%r1, 7;").replace("\n", "\r\n")
    k = parse(src).kernel()
    ins = k.body[0]
    assert ins.operands == (Reg("%r1"), Imm(7))
    assert (ins.loc.line, ins.loc.col, ins.loc.text) == (9, 2, "\tmov.b32\t%r1, 7;")


def test_managed_attribute_and_multiple_names():
    m = parse(HDR + ".global .attribute(.managed) .align 4 .b32 man[4];\n.shared .b32 a, b[2];\n")
    assert [(v.name, v.space, v.dims) for v in m.globals] == [("man", "global", [4]), ("a", "shared", []),
                                                             ("b", "shared", [2])]


def test_nested_scope_variables_are_renamed_and_indirect_call_register():
    src = HDR + """.func f() { ret; }
.visible .entry k() {
    .reg .b64 %rd<2>;
    {
    .shared .align 8 .b64 tmp;
    mov.u64 %rd1, tmp;
    }
    mov.u64 %rd1, f;
    ret;
}"""
    k = parse(src).kernel()
    assert [v.name for v in k.locals] == ["tmp@1"]
    assert k.body[0].operands == (Reg("%rd1"), Sym("tmp@1"))
    assert k.body[1].operands == (Reg("%rd1"), Sym("f"))


def test_empty_statements_and_unusual_spacing():
    k = kern(".reg .b32 %r < 3 > ;\n;\n  mov.b32   %r1 ,1 ;;")
    assert k.regs == {"%r0": ("b32", 1), "%r1": ("b32", 1), "%r2": ("b32", 1)}
    assert k.body[0].operands == (Reg("%r1"), Imm(1))


@pytest.mark.parametrize("src", [
    HDR + ".func f(.reg .b32 x) { ret; }",
    HDR + ".entry k(.param .v2 .u32 x) { ret; }",
    kernel_src(".reg .v4 .b32 %v;\n.reg .b32 %r;\nmov.b32 %r, %v.y;"),
    HDR + ".alias a, b;",
    HDR + ".global .texref t;",
    kernel_src(".reg .f32 %f;\nmov.f32 %f, 1.5 + 1.5;"),
    "#define X 1\n" + HDR,
])
def test_unsupported_features_are_rejected_loudly(src):
    with pytest.raises(PtxSyntaxError) as ei:
        parse(src)
    assert ei.value.loc is not None and ("not supported" in ei.value.message or "preprocessor" in ei.value.message)


def test_branchtargets_list_and_brx():
    k = kern(".reg .b32 %r<2>;\nmov.u32 %r1, 1;\nJT: .branchtargets A, B,\n  C;\nbrx.idx %r1, JT;\nA: ret;\n"
             "B: exit;\n{\nJT: .branchtargets C, A;\nbrx.idx.uni %r1, JT;\n}\nC: ret;")
    # forward references resolve; a list in a nested scope is renamed like a label and sees outer labels
    assert k.branch_targets == {"JT": ("A", "B", "C"), "JT@1": ("C", "A")}
    assert "JT" not in k.labels and "JT@1" not in k.labels
    assert [k.labels[n] for n in k.branch_targets["JT"]] == [2, 3, 5]
    assert k.body[1].full_opcode == "brx.idx" and k.body[1].operands == (Reg("%r1"), LabelRef("JT"))
    assert k.body[4].operands == (Reg("%r1"), LabelRef("JT@1"))
    with pytest.raises(PtxSyntaxError, match="undefined label 'D'"):
        kern("JT: .branchtargets D;\n{\nD: ret;\n}")          # D is not visible from the list's scope


def test_call_prototypes_and_target_lists_are_parsed():
    """``.callprototype`` / ``.calltargets`` (PTX ISA §11.4.2-3) label an indirect call's signature / targets; they
    are not code labels, and a target list naming no function is a located error."""
    m = parse(kernel_src("proto: .callprototype (.param .b32 _) _ (.param .b32 _);\nts: .calltargets f;\nL1: ret;",
                         prelude=".func (.param .b32 r) f(.param .b32 a) { ret; }\n"))
    k = m.kernel("k")
    proto = k.call_prototypes["proto"]
    assert [p.type for p in proto.returns] == ["b32"] and [p.type for p in proto.params] == ["b32"]
    assert k.call_targets["ts"] == ("f",)
    assert "proto" not in k.labels and "ts" not in k.labels and "L1" in k.labels
    with pytest.raises(PtxSyntaxError) as ei:
        parse(kernel_src("ts: .calltargets nosuch;\nL1: ret;"))
    assert ei.value.loc is not None and "nosuch" in ei.value.message
