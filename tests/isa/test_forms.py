"""isa/forms.py and the isa/*_forms.py parsers: instruction families, form parsing, typed located errors.

* family_of gives every instruction the family of the PTX ISA section that defines it (one key per instruction).
* Each family moved to isa/ parses a legal instruction into a frozen form and rejects a bad qualifier, a missing
  operand and a wrong type with a typed error (VerifyError / UnsupportedError) located at the PTX line.
* Control instructions (bra, brx.idx, call, ret, exit, trap, brkpt, nanosleep, pmevent, setmaxnreg) accept the
  qualifiers the PTX ISA defines (``bra.uni``, ``call.uni``, ``ret.uni``, ``brx.idx.uni``, ``nanosleep.u32``,
  ``pmevent.mask``) and reject any other; prefetch / prefetchu take the §9.7.9.15 forms only.
* The ALU form specs (isa/alu_forms.py) spell the forms the ALU decoders accept and none of those they reject.
"""
from __future__ import annotations

import dataclasses

import pytest


from tcsim.isa.alu_forms import CompareForm, LogicForm, parse_compare, parse_logic
from tcsim.isa.async_copy_forms import parse_bulk_copy, parse_cp_async
from tcsim.isa.control_forms import (CallForm, ControlForm, SetmaxnregForm, parse_brx, parse_call, parse_control,
                                     parse_nanosleep, parse_setmaxnreg)
from tcsim.isa.atomic_forms import parse_atom
from tcsim.isa.barrier_forms import ClusterBarrierForm, parse_bar, parse_barrier_cluster
from tcsim.isa.bulk_tensor_forms import parse_bulk_tensor
from tcsim.isa.convert_forms import CvtForm, CvtPackForm, check_cvt_operands, parse_cvt, parse_cvt_pack
from tcsim.isa.data_movement_forms import parse_cvta, parse_ld, parse_mapa, parse_mov, parse_prefetch, parse_st
from tcsim.isa.errors import TcsimError, UnsupportedError, VerifyError
from tcsim.isa.fence_forms import parse_fence, parse_membar
from tcsim.isa.float_forms import FloatForm, parse_float
from tcsim.isa.form_catalog import covering_spec
from tcsim.isa.integer_forms import IntForm, parse_integer
from tcsim.isa.forms import check_family_key, family_of
from tcsim.isa.ldstmatrix_forms import parse_matrix
from tcsim.isa.mbarrier_forms import parse_mbarrier
from tcsim.isa.mma_sync_forms import parse_mma_sync
from tcsim.isa.operand_rules import INT_TYPES, ROUNDING, Mods, check_operands
from tcsim.isa.parser import parse
from tcsim.isa.tcgen05_mem_forms import parse_alloc, parse_ldst
from tcsim.isa.tensormap_forms import parse_cp_fenceproxy, parse_replace
from tcsim.isa.warp_level_forms import parse_elect, parse_match, parse_redux, parse_shfl, parse_vote
from tcsim.semantics import REGISTRY, load_all
from tcsim.semantics.registry import DecodeInfo
from tests.ptx_frame import BODY_LINE, kernel

LINE = BODY_LINE    # the line of the instruction under test in module()


def module(line: str, target: str = "sm_100a") -> str:
    return kernel(f"  {line}\n  ret;", target, shared="  .reg .b16 %rs<4>; .shared .align 8 .b8 smem[1024];",
                  params=", .param .u64 pmap")


def instruction(line: str, target: str = "sm_100a"):
    m = parse(module(line, target), "t.ptx")
    fn = m.kernel()
    ins = next(i for i in fn.body if i.loc.line == LINE)
    return ins, DecodeInfo(m, fn, target)


def rejects(parser, line: str, err, match: str, target: str = "sm_100a"):
    ins, info = instruction(line, target)
    with pytest.raises(err, match=match) as e:
        parser(ins, info)
    assert e.value.loc is not None and (e.value.loc.file, e.value.loc.line) == ("t.ptx", LINE)
    assert f"t.ptx:{LINE}:" in str(e.value)
    return e.value


# ---------------------------------------------------------------------------------------------- families
@pytest.mark.parametrize("text, key", [
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes", "cp.async.bulk.tensor"),
    ("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.bulk_group", "cp.async.bulk.tensor"),
    ("cp.async.bulk.prefetch.tensor.2d.L2.global", "cp.async.bulk.tensor"),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "cp.async.bulk"),
    ("cp.async.bulk.commit_group", "cp.async.bulk"),
    ("cp.async.ca.shared.global", "cp.async"),
    ("cp.foo", None),
    ("tcgen05.mma.cta_group::1.kind::f16", "tcgen05.mma"),
    ("tcgen05.ld.sync.aligned.32x32b.x1.b32", "tcgen05.ld"),
    ("tcgen05.wait::st.sync.aligned", "tcgen05.wait::st"),
    ("tcgen05.fence::foo", None),
    ("barrier.cluster.arrive", "barrier.cluster"),
    ("barrier.sync", "barrier"),
    ("bar.sync", "bar"),
    ("cvt.rn.f16x2.f32", "cvt"),
    ("cvt.pack.sat.s8.s32.b32", "cvt.pack"),
    ("add.s32", "add:int"),
    ("add.rn.f32", "add:float"),
    ("min.bf16x2", "min:float"),
    ("add.tf32", None),
    ("mbarrier.try_wait.parity.shared::cta.b64", "mbarrier"),
    ("ld.global.u32", "ld"),
])
def test_family_of_names_the_ptx_instruction(text, key):
    opcode, *mods = text.split(".")
    assert family_of(opcode, tuple(mods)) == key


@pytest.mark.parametrize("key", ["cp", "tcgen05", "add", "tcgen05.foo", "cp.async.tensor", "add:double"])
def test_keys_no_instruction_has_are_rejected(key):
    with pytest.raises(ValueError, match="is not an instruction family"):
        check_family_key(key)


@pytest.mark.parametrize("key", ["ld", "cp.async.bulk", "tcgen05.wait::ld", "add:int", "tensormap"])
def test_family_keys_accepted(key):
    check_family_key(key)


# ---------------------------------------------------------------------------------------------- mbarrier
def test_mbarrier_form():
    ins, _ = instruction("mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;")
    f = parse_mbarrier(ins)
    assert (f.op, f.parity, f.space, f.sem, f.scope) == ("try_wait", True, "shared::cta", "acquire", "cta")
    assert (str(f.dst), str(f.addr), str(f.arg), f.hint) == ("%p1", "[%r1]", "%r2", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.op = "arrive"
    a, _ = instruction("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%r1], 256;")
    g = parse_mbarrier(a)
    assert (g.op, g.expect_tx, g.sem, g.scope, g.count.value) == ("arrive", True, "release", "cluster", 256)


@pytest.mark.parametrize("line, err, match", [
    ("mbarrier.arrive.foo.shared::cta.b64 %rd1, [%r1];", UnsupportedError, r"qualifier \.foo of mbarrier\.arrive"),
    ("mbarrier.init.parity.shared::cta.b64 [%r1], 1;", UnsupportedError, r"qualifier \.parity of mbarrier\.init"),
    ("mbarrier.init.shared::cta.b64 [%r1];", VerifyError, r"mbarrier\.init takes \[addr\], count"),
    ("mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r1];", VerifyError, r"needs a txCount operand"),
    ("mbarrier.init.shared::cta.b32 [%r1], 1;", UnsupportedError, r"qualifier \.b32 of mbarrier\.init"),
    ("mbarrier.init.shared::cta [%r1], 1;", VerifyError, r"needs the \.b64 type qualifier"),
    ("mbarrier.init.shared::cta.b64 [%r1], 0;", VerifyError, r"mbarrier\.init count 0 is out of range"),
    ("mbarrier.try_wait.shared::cluster.b64 %p1, [%r1], %rd2;", VerifyError, r"cannot take a \.shared::cluster"),
    ("mbarrier.arrive.acquire.cta.shared::cta.b64 %rd1, [%r1];", VerifyError, r"\.acquire is not allowed"),
])
def test_mbarrier_rejects(line, err, match):
    rejects(lambda ins, info: parse_mbarrier(ins), line, err, match)


# ---------------------------------------------------------------------------------------------- tcgen05 ld/st/alloc
def test_tcgen05_ld_st_forms():
    ins, info = instruction("tcgen05.ld.sync.aligned.16x256b.x2.pack::16b.b32 {%r1, %r2, %r3, %r4, %r5, %r6, "
                            "%r7, %r8}, [%r9];")
    f = parse_ldst(ins, info)
    assert (f.op, f.shape, f.num, f.pack, f.nregs, f.nlanes) == ("ld", "16x256b", 2, True, 8, 16)
    assert f.name == "tcgen05.ld.16x256b.x2.pack::16b"
    st, info = instruction("tcgen05.st.sync.aligned.16x32bx2.x1.b32 [%r9], 8, {%r1};")
    g = parse_ldst(st, info)
    assert (g.op, g.half_split, [str(e) for e in g.elems]) == ("st", 8, ["%r1"])


def test_tcgen05_alloc_form():
    ins, info = instruction("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [smem], 64;")
    f = parse_alloc(ins, info)
    assert (f.op, f.cta_group, f.has_space, str(f.dst), f.ncols.value) == ("alloc", 2, True, "[smem]", 64)


@pytest.mark.parametrize("line, err, match", [
    ("tcgen05.ld.sync.aligned.32x32b.x256.b32 {%r1}, [%r2];", UnsupportedError,
     r"qualifier \.x256 of tcgen05\.ld is not supported"),
    ("tcgen05.ld.sync.aligned.32x32b.x1.x2.b32 {%r1}, [%r2];", VerifyError, r"more than one num qualifier"),
    ("tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {%r1}, [%r2];", VerifyError, r"expects 3 operands"),
    ("tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r1}, [%r2];", VerifyError, r"needs a vector of 2 \.b32 registers"),
    ("tcgen05.ld.sync.aligned.32x32b.x1.b16 {%r1}, [%r2];", UnsupportedError, r"qualifier \.b16 of tcgen05\.ld"),
    ("tcgen05.ld.sync.aligned.32x32b.x1 {%r1}, [%r2];", VerifyError, r"\.b32 qualifier is required"),
    ("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%rd1}, [%r2];", VerifyError, r"vector element %rd1 is a \.b64 register"),
    ("tcgen05.ld.red.sync.aligned.32x32b.x2.min.u32 {%r0, %r1}, %r2, [%r3];", UnsupportedError,
     r"tcgen05\.ld\.red is not supported"),
])
def test_tcgen05_ldst_rejects(line, err, match):
    rejects(parse_ldst, line, err, match)


@pytest.mark.parametrize("line, err, match, target", [
    ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem], 96;", VerifyError,
     r"nCols 96 is not a power of two", "sm_100a"),
    ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem];", VerifyError,
     r"expects operands \[dst\], nCols", "sm_100a"),
    ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b64 [smem], 32;", UnsupportedError,
     r"qualifier \.b64 of tcgen05\.alloc", "sm_100a"),
    ("tcgen05.dealloc.sync.aligned.b32 %r1, 32;", VerifyError, r"the \.cta_group qualifier is required", "sm_100a"),
    ("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %rd1, 32;", VerifyError, r"taddr %rd1 is a \.b64 register",
     "sm_100a"),
    ("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;", VerifyError,
     r"requires an sm_100a-family target, but the module targets sm_90a", "sm_90a"),
])
def test_tcgen05_alloc_rejects(line, err, match, target):
    rejects(parse_alloc, line, err, match, target)


# ---------------------------------------------------------------------------------------------- ld/st/movmatrix
def test_matrix_forms():
    ins, info = instruction("ldmatrix.sync.aligned.m8n8.x4.trans.shared::cta.b16 {%r1, %r2, %r3, %r4}, [%r5];")
    f = parse_matrix(ins, info)
    assert (f.op, f.num, f.trans, f.space, len(f.regs), str(f.addr)) == ("ldmatrix", 4, True, "shared::cta", 4,
                                                                         "[%r5]")
    mv, info = instruction("movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;")
    g = parse_matrix(mv, info)
    assert (g.op, [str(r) for r in g.regs], [str(r) for r in g.src]) == ("movmatrix", ["%r1"], ["%r2"])


@pytest.mark.parametrize("line, err, match", [
    ("ldmatrix.sync.aligned.m8n8.x3.b16 {%r1, %r2, %r3}, [%r5];", VerifyError, r"unknown qualifier\(s\) \.x3"),
    ("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%r5];", UnsupportedError,
     r"the \.m16n16 form of ldmatrix is not supported"),
    ("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%r5];", VerifyError, r"stmatrix takes an address \[p\] and a "
                                                                    r"register vector"),
    ("ldmatrix.sync.aligned.m8n8.x2.b16 {%r1}, [%r5];", VerifyError, r"operand r has 1 register\(s\), expected 2"),
    ("ldmatrix.sync.aligned.m8n8.x1.b32 {%r1}, [%r5];", VerifyError, r"ldmatrix \.m8n8 needs the type \.b16"),
    ("ldmatrix.sync.aligned.m8n8.x1.b16 {%rs1}, [%r5];", VerifyError, r"register %rs1 of operand r is \.b16; expected a 32-bit"),
    ("movmatrix.sync.aligned.m8n8.b16 %r1, %r2;", VerifyError, r"movmatrix requires \.trans"),
])
def test_matrix_rejects(line, err, match):
    rejects(parse_matrix, line, err, match)


# ---------------------------------------------------------------------------------------------- atom / red
def test_atom_forms():
    ins, info = instruction("atom.acq_rel.gpu.global.cas.b32 %r1, [%rd1], %r2, %r3;")
    f = parse_atom(ins, info)
    assert (f.red, f.sem, f.scope, f.space, f.op, f.type, f.vec) == (False, "acq_rel", "gpu", "global", "cas",
                                                                     "b32", 1)
    assert (str(f.dst), str(f.addr), str(f.b), str(f.c)) == ("%r1", "[%rd1]", "%r2", "%r3")
    red, info = instruction("red.global.add.noftz.v2.f16x2 [%rd1], {%r1, %r2};")
    g = parse_atom(red, info)
    assert (g.red, g.op, g.type, g.vec, g.noftz, g.c) == (True, "add", "f16x2", 2, True, None)


@pytest.mark.parametrize("line, err, match, target", [
    ("atom.global.foo.u32 %r1, [%rd1], 1;", VerifyError, r"unexpected qualifier \.foo", "sm_100a"),
    ("atom.global.cas.b32 %r1, [%rd1], %r2;", VerifyError, r"takes d, \[a\], b, c", "sm_100a"),
    ("atom.global.inc.s32 %r1, [%rd1], 1;", VerifyError, r"\.inc does not take \.s32", "sm_100a"),
    ("red.global.cas.b32 [%rd1], %r2;", VerifyError, r"red\.cas does not exist", "sm_100a"),
    ("atom.global.add.noftz.v2.bf16 {%rs1, %rs2}, [%rd1], {%rs1, %rs2};", VerifyError,
     r"vector atomics require sm_90 or later", "sm_80"),
    ("atom.global.exch.b128 %r1, [%rd1], %r2;", VerifyError, r"must be a \.b128 register", "sm_100a"),
])
def test_atom_rejects(line, err, match, target):
    rejects(parse_atom, line, err, match, target)


# ---------------------------------------------------------------------------------------------- bulk tensor
def test_bulk_tensor_forms():
    ins, info = instruction("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                            ".multicast::cluster [%r1], [%rd1, {%r2, %r3}], [%r4], %rs1;")
    f = parse_bulk_tensor(ins, info)
    assert (f.direction, f.dim, f.spaces, f.mode, f.multicast, str(f.mask)) == (
        "load", 2, ("shared::cluster", "global"), "tile", True, "%rs1")
    assert f.qualifiers()["spaces"] == ["shared::cluster", "global"] and f.qualifiers()["dim"] == 2
    st, info = instruction("cp.reduce.async.bulk.tensor.1d.global.shared::cta.max.bulk_group [%rd1, {%r2}], [%r1];")
    g = parse_bulk_tensor(st, info)
    assert (g.direction, g.reduce, g.redop, str(g.src)) == ("store", True, "max", "[%r1]")


@pytest.mark.parametrize("line, err, match", [
    ("cp.async.bulk.tensor.6d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2}], [%r4];",
     UnsupportedError, r"qualifier \.6d is not supported on tensor copies"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}],"
     " [%r4];", UnsupportedError, r"load mode \.im2col is not supported"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}];",
     VerifyError, r"takes 3 operands here, got 2"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2}], [%r4];",
     VerifyError, r"a \.2d tensor copy takes 2 coordinates, got 1"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [pmap, {%r2, %r3}], [%r4];",
     VerifyError, r"the tensor map pmap is named as a \.param variable"),
    ("cp.async.bulk.tensor.2d.global.shared::cta.mbarrier::complete_tx::bytes [%rd1, {%r2, %r3}], [%r1];",
     VerifyError, r"a tensor store/reduce completes through \.bulk_group"),
])
def test_bulk_tensor_rejects(line, err, match):
    rejects(parse_bulk_tensor, line, err, match)


# ---------------------------------------------------------------------------------------------- cp.async / bulk copy
def test_cp_async_forms():
    ins, info = instruction("cp.async.cg.shared.global.L2::cache_hint [%r1], [%rd1], 16, %r2, %rd2;")
    f = parse_cp_async(ins, info)
    assert (f.kind, f.cache, f.cp_size, str(f.src_size), f.ignore, str(f.policy)) == ("copy", "cg", 16, "%r2",
                                                                                    None, "%rd2")
    w, info = instruction("cp.async.wait_group 3;")
    assert (parse_cp_async(w, info).kind, parse_cp_async(w, info).keep) == ("wait_group", 3)
    a, info = instruction("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%r1];")
    g = parse_cp_async(a, info)
    assert (g.kind, g.noinc, g.space) == ("mbarrier_arrive", True, "shared::cta")


@pytest.mark.parametrize("line, err, match", [
    ("cp.async.ca.shared.global.L2::512B [%r1], [%rd1], 4;", UnsupportedError, r"qualifier \.L2::512B is not "
                                                                               r"supported on cp\.async"),
    ("cp.async.ca.shared.global [%r1], [%rd1];", VerifyError, r"takes \[dst\], \[src\], cp-size"),
    ("cp.async.cg.shared.global [%r1], [%rd1], 8;", VerifyError, r"cp\.async\.cg copies 16 bytes, got cp-size 8"),
    ("cp.async.wait_group %r1;", VerifyError, r"takes one integer constant N"),
    ("cp.async.mbarrier.arrive.shared::cta [%r1];", VerifyError, r"cp\.async\.mbarrier\.arrive needs \.b64"),
])
def test_cp_async_rejects(line, err, match):
    rejects(parse_cp_async, line, err, match)


def test_bulk_copy_forms():
    ins, _ = instruction("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                         "[%r1], [%rd1], 256, [%r2], %rs1;")
    f = parse_bulk_copy(ins)
    assert (f.kind, f.dst_space, f.size.value, str(f.mbar), str(f.mask), f.policy) == (
        "load", "shared::cluster", 256, "[%r2]", "%rs1", None)
    st, _ = instruction("cp.async.bulk.global.shared::cta.bulk_group.cp_mask [%rd1], [%r1], 64, %rs1;")
    g = parse_bulk_copy(st)
    assert (g.kind, str(g.bytemask)) == ("store", "%rs1")
    w, _ = instruction("cp.async.bulk.wait_group.read 0;")
    assert (parse_bulk_copy(w).kind, parse_bulk_copy(w).read_only, parse_bulk_copy(w).keep) == ("wait_group", True, 0)


@pytest.mark.parametrize("line, err, match", [
    ("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.foo [%r1], [%rd1], 16, [%r2];", UnsupportedError,
     r"qualifier \.foo is not supported on cp\.async\.bulk"),
    ("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16;", VerifyError,
     r"takes 4 operands \(4 fixed\), got 3"),
    ("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 24, [%r2];", VerifyError,
     r"size 24 is not a multiple of 16"),
    ("cp.async.bulk.shared.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];", VerifyError,
     r"state space \.shared must be spelled"),
    ("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r1], 16;", UnsupportedError,
     r"non-tensor bulk reductions"),
])
def test_bulk_copy_rejects(line, err, match):
    rejects(lambda ins, info: parse_bulk_copy(ins), line, err, match)


# ---------------------------------------------------------------------------------------------- mma.sync
def test_mma_sync_form():
    ins, info = instruction("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f0, %f1, %f2, %f3}, "
                            "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f0, %f1, %f2, %f3};")
    f = parse_mma_sync(ins, info)
    assert (f.shape, f.dtype, f.atype, f.btype, f.ctype, f.integer) == ("m16n8k16", "f32", "bf16", "bf16", "f32",
                                                                        False)
    assert (len(f.d), len(f.a), len(f.b), len(f.c)) == (4, 4, 2, 4)      # PTX ISA §9.7.14.5.8 register counts


@pytest.mark.parametrize("line, err, match", [
    ("mma.sync.aligned.m16n8k16.row.col.foo.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r1, %r2, %r3, %r4}, "
     "{%r5, %r6}, {%f0, %f1, %f2, %f3};", VerifyError, r"unknown qualifier\(s\) \.foo"),
    ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f0, %f1}, {%r1}, {%r5}, {%f0};", UnsupportedError,
     r"mma shape \.m8n8k4 is not supported"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r1, %r2, %r3, %r4}, {%r5, %r6};",
     VerifyError, r"mma takes four operands d, a, b, c; got 3"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r1, %r2, %r3}, {%r5, %r6}, "
     "{%f0, %f1, %f2, %f3};", VerifyError, r"operand a has 3 register\(s\), expected 4"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f16 {%f0, %f1, %f2, %f3}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, "
     "{%f0, %f1};", VerifyError, r"\.dtype \(\.f32\) must be the same as \.ctype \(\.f16\)"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%rd1, %r2, %r3, %r4}, {%r5, %r6}, "
     "{%f0, %f1, %f2, %f3};", VerifyError, r"register %rd1 of operand a is \.b64"),
])
def test_mma_sync_rejects(line, err, match):
    rejects(parse_mma_sync, line, err, match)


# ---------------------------------------------------------------------------------------------- tensormap
def test_tensormap_forms():
    ins, _ = instruction("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%r1], 1, %r2;")
    f = parse_replace(ins)
    assert (f.field, f.vtype, f.space, f.ordinal, str(f.value)) == ("box_dim", "b32", "shared::cta", 1, "%r2")
    cp, _ = instruction("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
                        "[%rd1], [%r1], 128;")
    g = parse_cp_fenceproxy(cp)
    assert (g.scope, str(g.dst), str(g.src)) == ("gpu", "[%rd1]", "[%r1]")


@pytest.mark.parametrize("line, match", [
    ("tensormap.replace.tile.box_dim.local.b1024.b32 [%r1], 1, %r2;", r"qualifier \.local is not valid"),
    ("tensormap.replace.tile.box_dim.b1024.b32 [%r1], %r2;", r"takes 3 operands \(\[addr\], ord, new_val\), got 2"),
    ("tensormap.replace.tile.global_address.b1024.b32 [%r1], %rd2;", r"\.global_address takes a \.b64 new value"),
    ("tensormap.replace.tile.box_dim.b1024.b32 [%r1], 5, %r2;", r"ord 5 is out of range"),
    ("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [%r1], 64;",
     r"size 64 must be 128"),
    ("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.sync.aligned [%rd1], [%r1], 128;",
     r"needs exactly one scope"),
])
def test_tensormap_rejects(line, match):
    parser = parse_replace if ".replace." in line else parse_cp_fenceproxy
    rejects(lambda ins, info: parser(ins), line, VerifyError, match)


# ---------------------------------------------------------------------------------------------- barriers / fences
def test_barrier_and_fence_forms():
    ins, _ = instruction("barrier.cta.red.or.pred.aligned %p1, 1, 64, !%p2;")
    f = parse_bar(ins)
    assert (f.op, f.aligned, f.a.value, f.b.value, f.rop, str(f.dst), str(f.c)) == ("red", True, 1, 64, "or", "%p1",
                                                                                  "!%p2")
    cl, _ = instruction("barrier.cluster.wait.aligned;")
    assert parse_barrier_cluster(cl) == ClusterBarrierForm("wait", "acquire", True)
    fe, _ = instruction("fence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;")
    g = parse_fence(fe)
    assert g.event_fields() == dict(fence="proxy", sem="acquire", scope="gpu", proxy="tensormap::generic",
                                    restrict=None)
    assert str(g.addr) == "[%rd1]"
    mb, _ = instruction("membar.gl;")
    assert parse_membar(mb).event_fields() == dict(fence="membar", sem="sc", scope="gpu", proxy=None, restrict=None)


@pytest.mark.parametrize("line, err, match", [
    ("bar.sync.foo 0;", UnsupportedError, r"qualifier \.foo of bar\.sync is not supported"),
    ("bar.arrive 1;", VerifyError, r"needs a barrier number and a \(non-zero\) thread count"),
    ("bar.sync 16;", VerifyError, r"barrier 16 out of range"),
    ("bar.sync 0, 48;", VerifyError, r"thread count 48 must be a positive multiple of the warp size"),
    ("barrier.red.popc.pred %r1, 0, %p1;", VerifyError, r"\.popc requires type \.u32"),
    ("barrier.cluster.arrive.acquire;", VerifyError, r"qualifier \.acquire is not valid on barrier\.cluster\.arrive"),
    ("barrier.cluster.wait 0;", VerifyError, r"barrier\.cluster\.wait takes no operands"),
    ("fence.proxy.foo;", UnsupportedError, r"proxy kind \.foo is not supported"),
    ("fence.release.cluster;", VerifyError, r"fence\.release needs \.sync_restrict::shared::cta"),
    ("fence.proxy.tensormap::generic.acquire.gpu [%rd1];", VerifyError, r"takes \[addr\], size"),
    ("membar.gl %r1;", VerifyError, r"membar\.gl takes no operands"),
])
def test_barrier_and_fence_rejects(line, err, match):
    parser = {"bar": parse_bar, "barrier": parse_bar, "fence": parse_fence, "membar": parse_membar}[line.split(".")[0]]
    if line.startswith("barrier.cluster"):
        parser = parse_barrier_cluster
    rejects(lambda ins, info: parser(ins), line, err, match)


# ---------------------------------------------------------------------------------------------- data movement
def test_data_movement_forms():
    ld, _ = instruction("ld.relaxed.gpu.global.nc.L1::no_allocate.v2.f32 {%f0, %f1}, [%rd1+8];")
    f = parse_ld(ld)
    assert (f.op, f.space, f.sem, f.scope, f.vec, f.type, str(f.addr)) == ("ld", "global", "relaxed", "gpu", 2,
                                                                          "f32", "[%rd1+8]")
    st, _ = instruction("st.param::func.b32 [smem], %r1;")
    g = parse_st(st)
    assert (g.space, str(g.value), str(g.addr)) == ("param", "%r1", "[smem]")
    mv, _ = instruction("mov.b64 {%r1, %r2}, %rd1;")
    assert parse_mov(mv).mode == "unpack"
    cv, _ = instruction("cvta.to.shared.u64 %rd1, %rd2;")
    assert (parse_cvta(cv).to, parse_cvta(cv).space, parse_cvta(cv).size) == (True, "shared", "u64")


@pytest.mark.parametrize("line, err, match", [
    ("ld.global.foo.u32 %r1, [%rd1];", UnsupportedError, r"qualifier \.foo of ld is not supported"),
    ("ld.global.b128 %r1, [%rd1];", VerifyError, r"a \.b128 access needs a \.b128 register"),
    ("ld.global.u32 %r1;", VerifyError, r"ld needs a destination and an address \[a\]"),
    ("ld.global.u32.s32 %r1, [%rd1];", VerifyError, r"names two types \(\.u32 and \.s32\)"),
    ("st.global.v2.u32 [%rd1], %r1;", VerifyError, r"needs a source vector of 2 values"),
    ("st.const.u32 [%rd1], %r1;", VerifyError, r"st to \.const is not allowed"),
    ("mov.u32.u64 %r1, %r2;", VerifyError, r"needs exactly one type"),
    ("cvta.to.shared %rd1, %rd2;", VerifyError, r"malformed cvta\.to\.shared"),
    ("mapa.shared::cluster.u32 %r1, %r2;", VerifyError, r"takes 3 operands \(d, a, b\), got 2"),
])
def test_data_movement_rejects(line, err, match):
    parser = {"ld": parse_ld, "st": parse_st, "mov": parse_mov, "cvta": parse_cvta, "mapa": parse_mapa}[
        line.split(".")[0]]
    rejects(lambda ins, info: parser(ins, info) if parser in (parse_ld, parse_st, parse_mov) else parser(ins), line,
            err, match)


# ---------------------------------------------------------------------------------------------- warp collectives
def test_warp_collective_forms():
    sh, _ = instruction("shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, -1;")
    f = parse_shfl(sh)
    assert (f.mode, str(f.dst), str(f.pdst), f.b.value, f.membermask.value) == ("bfly", "%r1", "%p1", 1, -1)
    rd, _ = instruction("redux.sync.max.abs.NaN.f32 %f1, %f2, -1;")
    g = parse_redux(rd, "sm_100a")
    assert (g.mode, g.type, g.abs, g.nan) == ("max", "f32", True, True)


@pytest.mark.parametrize("line, err, match", [
    ("shfl.up.b32 %r1, %r2, 1, 0, -1;", UnsupportedError, r"shfl without \.sync is not supported"),
    ("shfl.sync.up.b32 %r1, %r2, 1, 0;", VerifyError, r"shfl\.sync takes d\[\|p\], a, b, c, membermask"),
    ("vote.sync.ballot.pred %r1, %p1, -1;", VerifyError, r"vote\.sync\.ballot requires type \.b32"),
    ("match.any.sync.b32 %r1|%p1, %r2, -1;", VerifyError, r"only match\.all\.sync has a predicate destination"),
    ("redux.sync.and.u32 %r1, %r2, -1;", VerifyError, r"redux\.sync\.and does not take \.u32"),
    ("redux.sync.max.f32 %f1, %f2, -1;", VerifyError, r"requires sm_100a or later \(target sm_90a\)"),
    ("elect.sync.foo %r1|%p1, -1;", VerifyError, r"expected elect\.sync"),
])
def test_warp_collective_rejects(line, err, match):
    parser = {"shfl": parse_shfl, "vote": parse_vote, "match": parse_match, "elect": parse_elect,
              "redux": lambda ins: parse_redux(ins, "sm_90a")}[line.split(".")[0]]
    rejects(lambda ins, info: parser(ins), line, err, match, target="sm_90a")


# ---------------------------------------------------------------------------------------------- ALU operand rules
def test_alu_qualifier_and_operand_rules():
    ins, info = instruction("add.sat.s32 %r1, %r2, 7;")
    m = Mods(ins)
    assert (m.flag("sat"), m.type(INT_TYPES)) == (True, "s32")
    m.done()
    check_operands(ins, info, "s32", ("s32", "s32"))            # §6.4.1: .b32/.s32/.u32 registers agree


@pytest.mark.parametrize("line, check, match", [
    ("add.sat.sat.s32 %r1, %r2, 7;", lambda ins, info: Mods(ins).flag("sat"),
     r"Duplicate modifier '\.sat' for instruction 'add'"),
    ("add.rn.rz.f32 %f1, %f2, %f3;", lambda ins, info: Mods(ins).one_of(ROUNDING, "rounding modifier"),
     r"Conflicting rounding modifiers '\.rn', '\.rz'"),
    ("add.s32 %r1, %r2, %rd3;", lambda ins, info: check_operands(ins, info, "s32", ("s32", "s32")),
     r"%rd3 is a \.b64 register, the operand is \.s32"),
    ("add.s32 %r1, %r2, 1.5;", lambda ins, info: check_operands(ins, info, "s32", ("s32", "s32")),
     r"floating-point constant .* used as a \.s32 operand"),
    ("add.s32 %r1, %r2;", lambda ins, info: check_operands(ins, info, "s32", ("s32", "s32")),
     r"add\.s32 takes 3 operands, got 2"),
    ("add.s32 %r1, %tid.x, 1;", lambda ins, info: check_operands(ins, info, "s32", ("s32", "s32")),
     r"Special register argument not allowed"),
])
def test_alu_rules_reject(line, check, match):
    rejects(check, line, VerifyError, match)


# ---------------------------------------------------------------------------------------------- logic, compare
def test_logic_forms():
    lop, info = instruction("lop3.or.b32 %r1|%p1, %r2, %r3, %r4, 0x1fe, %p2;")
    f = parse_logic(lop, info)
    assert isinstance(f, LogicForm)
    assert (f.op, f.type, f.boolop, str(f.dst), str(f.pdst), str(f.pred_src), f.lut) == (
        "lop3", "b32", "or", "%r1", "%p1", "%p2", 0xFE)            # only the low 8 bits of immLut matter
    assert [str(x) for x in f.srcs] == ["%r2", "%r3", "%r4"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.lut = 0
    shf, info = instruction("shf.r.wrap.b32 %r1, %r2, %r3, %r4;")
    g = parse_logic(shf, info)
    assert (g.direction, g.mode, g.type) == ("r", "wrap", "b32")
    pm, info = instruction("prmt.b32.ecl %r1, %r2, %r3, %r4;")
    assert parse_logic(pm, info).mode == "ecl"
    andp, info = instruction("and.pred %p1, %p2, %p3;")
    assert (parse_logic(andp, info).type, str(parse_logic(andp, info).dst)) == ("pred", "%p1")


def test_compare_forms():
    sp, info = instruction("setp.ltu.or.ftz.f32 %p1|%p2, %f1, %f2, !%p3;")
    f = parse_compare(sp, info)
    assert isinstance(f, CompareForm)
    assert (f.op, f.cmp, f.boolop, f.ftz, f.stype, str(f.dst), str(f.qdst), str(f.a), str(f.b), str(f.c)) == (
        "setp", "ltu", "or", True, "f32", "%p1", "%p2", "%f1", "%f2", "!%p3")
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.cmp = "eq"
    st, info = instruction("set.hi.u32.u16 %r1, %rs1, %rs2;")
    g = parse_compare(st, info)
    assert (g.cmp, g.dtype, g.stype, g.boolop, g.c) == ("hi", "u32", "u16", None, None)
    sl, info = instruction("slct.ftz.b32.f32 %r1, %r2, %r3, %f1;")
    h = parse_compare(sl, info)
    assert (h.op, h.stype, h.dtype, h.ftz) == ("slct", "b32", "f32", True)
    se, info = instruction("selp.u64 %rd1, %rd2, 5, %p1;")
    assert (parse_compare(se, info).stype, str(parse_compare(se, info).c)) == ("u64", "%p1")


@pytest.mark.parametrize("line, match", [
    ("and.b32.b64 %r1, %r2, %r3;", r"Unexpected instruction types specified for 'and'"),
    ("and.foo.b32 %r1, %r2, %r3;", r"Illegal modifier '\.foo' for instruction 'and'"),
    ("or.b32 %r1, %r2;", r"or\.b32 takes 3 operands, got 2"),
    ("xor.b32 %r1, %r2, %rd1;", r"%rd1 is a \.b64 register, the operand is \.b32"),
    ("shf.l.b32 %r1, %r2, %r3, %r4;", r"Clamp modifier required for instruction 'shf\.l'"),
    ("shf.clamp.b32 %r1, %r2, %r3, %r4;", r"Direction modifier \(\.l or \.r\) required"),
    ("lop3.and.b32 %r1, %r2, %r3, %r4, 0xfe, %p2;", r"lop3\.and needs a destination pair d\|p"),
    ("lop3.b32 %r1, %r2, %r3, %r4, %r5;", r"immLut must be an integer constant"),
    ("shl.s32 %r1, %r2, %r3;", r"Unexpected instruction types specified for 'shl'"),
    ("setp.s32 %p1, %r1, %r2;", r"Comparison operator required for instruction 'setp'"),
    ("setp.lo.s32 %p1, %r1, %r2;", r"Mismatch between instruction type and comparison qualifier"),
    ("setp.eq.ftz.s32 %p1, %r1, %r2;", r"Illegal modifier '\.ftz' for instruction 'setp'"),
    ("setp.eq.s32 %p1, %r1, %r2, %p2;", r"Boolean operation is required for instruction 'setp'"),
    ("setp.eq.and.s32 %p1, %r1, %r2;", r"setp\.eq\.and\.s32 takes 4 operands, got 3"),
    ("setp.eq.s32 %r1, %r1, %r2;", r"a predicate is expected"),
    ("set.eq.f32.f16 %f1, %rs1, %rs2;", r"Unexpected instruction types specified for 'set'"),
    ("set.eq.u32 %r1, %r2, %r3;", r"Unexpected instruction types specified for 'set'"),
    ("selp.b32 %r1, %r2, %r3;", r"selp\.b32 takes 4 operands, got 3"),
    ("slct.b32.u32 %r1, %r2, %r3, %r4;", r"Unexpected instruction types specified for 'slct'"),
    ("slct.ftz.b32.s32 %r1, %r2, %r3, %r4;", r"Illegal modifier '\.ftz' for instruction 'slct'"),
    ("add.cc.u16 %rs1, %rs2, %rs3;", r"Modifier '\.cc' applies only to add integer types of 32 or 64 bits"),
    ("add.sat.u32 %r1, %r2, %r3;", r"Modifier '\.sat' does not apply to '\.u32' type"),
    ("add.sat.sat.s32 %r1, %r2, %r3;", r"Duplicate modifier '\.sat' for instruction 'add'"),
    ("add.foo.s32 %r1, %r2, %r3;", r"Illegal modifier '\.foo' for instruction 'add'"),
    ("add.s32 %r1, %r2;", r"add\.s32 takes 3 operands, got 2"),
    ("add.s32 %r1, %r2, %rd3;", r"%rd3 is a \.b64 register, the operand is \.s32"),
    ("mul.u32 %r1, %r2, %r3;", r"Unexpected instruction types specified for 'mul'"),
    ("mul.wide.u64 %rd1, %rd2, %rd3;", r"Unexpected instruction types specified for 'mul\.wide'"),
    ("mad.wide.cc.u32 %rd1, %r2, %r3, %rd4;", r"Illegal modifier '\.cc' for instruction 'mad\.wide'"),
    ("mad.lo.sat.s32 %r1, %r2, %r3, %r4;", r"Illegal modifier '\.sat' for instruction 'mad\.lo'"),
    ("mul24.s32 %r1, %r2, %r3;", r"'\.hi/\.lo' modifier required for instruction 'mul24'"),
    ("mad24.lo.sat.s32 %r1, %r2, %r3, %r4;", r"Illegal modifier '\.sat' for instruction 'mad24\.lo'"),
    ("abs.u32 %r1, %r2;", r"Instruction 'abs' applies only to signed numeric types"),
    ("min.relu.u32 %r1, %r2, %r3;", r"Illegal modifier '\.relu' for instruction 'min' with type '\.u32'"),
    ("bmsk.b32 %r1, %r2, %r3;", r"Clamp modifier required for instruction 'bmsk'"),
    ("dp4a.u32 %r1, %r2, %r3, %r4;", r"Unexpected instruction types specified for 'dp4a'"),
    ("dp2a.u32.u32 %r1, %r2, %r3, %r4;", r"'\.hi/\.lo' modifier required for instruction 'dp2a'"),
    ("fns.b32 %r1, %r2, %r3;", r"fns\.b32 takes 4 operands, got 3"),
    ("add.rn.rz.f32 %f1, %f2, %f3;", r"Conflicting rounding modifiers '\.rn', '\.rz'"),
    ("add.rz.f16 %rs1, %rs2, %rs3;", r"Illegal rounding modifier for instruction 'add'"),
    ("add.sat.f64 %rd1, %rd2, %rd3;", r"Illegal modifier '\.sat' for instruction 'add'"),
    ("add.f32 %f1, %f2;", r"add\.f32 takes 3 operands, got 2"),
    ("add.f32 %f1, %f2, %rd3;", r"%rd3 is a \.b64 register, the operand is \.f32"),
    ("mul.f32.f16 %f1, %rs1, %f2;", r"Unexpected instruction types specified for 'mul'"),
    ("fma.f32 %f1, %f2, %f3, %f1;", r"Rounding modifier required for instruction 'fma'"),
    ("fma.rn.relu.f32 %f1, %f2, %f3, %f1;", r"Unexpected instruction types specified for 'fma'"),
    ("div.f32 %f1, %f2, %f3;", r"Rounding modifier or '\.approx' modifier required"),
    ("div.approx.rn.f32 %f1, %f2, %f3;", r"Conflicting modifiers for instruction 'div'"),
    ("rcp.approx.f64 %rd1, %rd2;", r"'\.ftz' modifier required for instruction 'rcp\.approx\.f64'"),
    ("sin.f32 %f1, %f2;", r"\.approx modifier required for instruction 'sin'"),
    ("tanh.approx.ftz.f32 %f1, %f2;", r"Illegal modifier '\.ftz' for instruction 'tanh'"),
    ("min.xorsign.f32 %f1, %f2, %f3;", r"Modifier '\.xorsign' requires modifier '\.abs'"),
    ("min.f64 %rd1, %rd2, %rd3, %rd4;", r"three inputs need \.f32"),
    ("testp.f32 %p1, %f1;", r"Instruction 'testp' requires one of \.finite"),
    ("cvt.f32 %f1, %f2;", r"Unexpected instruction types specified for 'cvt'"),
    ("cvt.rn.rz.f16.f32 %rs1, %f1;", r"Conflicting rounding modifiers"),
    ("cvt.rzi.f16.f32 %rs1, %f1;", r"Illegal modifier combination for 'cvt\.f16\.f32': \.rzi"),
    ("cvt.rn.ftz.f16x2.f32 %r1, %f1, %f2;", r"Illegal modifier '\.ftz' for instruction 'cvt'"),
    ("cvt.foo.f32.f16 %f1, %rs1;", r"Illegal modifier '\.foo' for instruction 'cvt'"),
    ("cvt.pack.u16.s32 %r1, %r2, %r3;", r"Modifier '\.sat' required for instruction 'cvt\.pack'"),
    ("cvt.pack.sat.u8.s32 %r1, %r2, %r3;", r"Unexpected instruction types specified for 'cvt\.pack'"),
    ("cvt.pack.sat.u16.s32 %r1, %r2;", r"cvt\.pack\.sat\.u16\.s32 takes 3 operands, got 2"),
])
def test_alu_rejects(line, match):
    """Logic, compare, integer, float and cvt forms: a bad qualifier, a missing operand, a wrong type or register is a
    VerifyError with ptxas's wording, located at the instruction."""
    rejects(ALU_PARSERS[alu_kind(instruction(line)[0])], line, VerifyError, match)


ALU_PARSERS = {"logic": parse_logic, "compare": parse_compare, "integer": parse_integer, "float": parse_float,
               "cvt": parse_cvt, "cvt.pack": parse_cvt_pack}


def alu_kind(ins) -> str:
    """Which isa parser takes the instruction: its family's spec group in isa/alu_forms."""
    from tcsim.isa.alu_forms import COMPARE_SPECS, FLOAT_SPECS, INTEGER_SPECS

    key = family_of(ins.opcode, ins.mods)
    if key in ("cvt", "cvt.pack"):
        return key
    for kind, specs in (("compare", COMPARE_SPECS), ("integer", INTEGER_SPECS), ("float", FLOAT_SPECS)):
        if key in {sp.key for sp in specs}:
            return kind
    return "logic"


@pytest.mark.parametrize("line, match", [
    ("add.rs.f32 %f1, %f2, %f3;", r"modifier \.rs of add\.rs\.f32 is not supported"),
    ("fma.rn.oob.f16 %rs1, %rs2, %rs3, %rs1;", r"\.oob .* is not supported"),
    ("cvt.rs.f16x2.f32 %r1, %f1, %f2;", r"stochastic rounding \(\.rs\)"),
])
def test_alu_unsupported(line, match):
    rejects(ALU_PARSERS[alu_kind(instruction(line)[0])], line, UnsupportedError, match)


# ---------------------------------------------------------------------------------------------- integer
def test_integer_forms():
    mw, info = instruction("mul.wide.u32 %rd1, %r2, 7;")
    f = parse_integer(mw, info)
    assert isinstance(f, IntForm)
    assert (f.op, f.type, f.dtype, f.mode, str(f.dst), [str(x) for x in f.srcs]) == (
        "mul", "u32", "u64", "wide", "%rd1", ["%r2", "7"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.mode = "lo"
    mc, info = instruction("madc.hi.cc.s32 %r1, %r2, %r3, %r4;")
    g = parse_integer(mc, info)
    assert (g.mode, g.cc, g.carry_in, g.sat, g.dtype) == ("hi", True, True, False, "s32")
    ac, info = instruction("add.cc.u64 %rd1, %rd2, %rd3;")
    assert (parse_integer(ac, info).cc, parse_integer(ac, info).carry_in) == (True, False)
    dp, info = instruction("dp2a.hi.s32.u32 %r1, %r2, %r3, %r4;")
    h = parse_integer(dp, info)
    assert (h.type, h.btype, h.dtype, h.mode) == ("s32", "u32", "s32", "hi")
    pc, info = instruction("popc.b64 %r1, %rd2;")
    assert (parse_integer(pc, info).type, parse_integer(pc, info).dtype) == ("b64", "u32")
    sz, info = instruction("szext.clamp.s32 %r1, %r2, %r3;")
    assert parse_integer(sz, info).mode == "clamp"
    mx, info = instruction("max.relu.s32 %r1, %r2, %r3;")
    assert parse_integer(mx, info).relu is True


# ---------------------------------------------------------------------------------------------- floating point
def test_float_forms():
    fm, info = instruction("fma.rn.relu.bf16x2 %r1, %r2, %r3, %r4;")
    f = parse_float(fm, info)
    assert isinstance(f, FloatForm)
    assert (f.op, f.type, f.rnd, f.rnd_given, f.relu, f.sat, f.atype, str(f.dst)) == (
        "fma", "bf16x2", "rn", True, True, False, None, "%r1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.rnd = "rz"
    ad, info = instruction("add.f32 %f1, %f2, %f3;")
    assert (parse_float(ad, info).rnd, parse_float(ad, info).rnd_given) == ("rn", False)   # .rn when none given
    mx, info = instruction("add.rz.sat.f32.bf16 %f1, %rs1, %f2;")
    g = parse_float(mx, info)
    assert (g.type, g.atype, g.rnd, g.sat, [str(x) for x in g.srcs]) == ("f32", "bf16", "rz", True, ["%rs1", "%f2"])
    dv, info = instruction("div.full.ftz.f32 %f1, %f2, %f3;")
    assert (parse_float(dv, info).full, parse_float(dv, info).ftz, parse_float(dv, info).approx) == (True, True, False)
    mn, info = instruction("max.xorsign.abs.f32 %f1, %f2, %f3;")
    assert (parse_float(mn, info).xorsign, parse_float(mn, info).abs) == (True, True)
    tp, info = instruction("testp.subnormal.f64 %p1, %rd1;")
    assert (parse_float(tp, info).test, parse_float(tp, info).type) == ("subnormal", "f64")


# ---------------------------------------------------------------------------------------------- conversion
def test_convert_forms():
    cv, info = instruction("cvt.rn.satfinite.relu.bf16x2.f32 %r1, %f1, %f2;")
    f = parse_cvt(cv, info)
    assert f == CvtForm("bf16x2", "f32", "rn", True, relu=True, satfinite=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.rnd = "rz"
    assert [str(x) for x in check_cvt_operands(cv, info, f)] == ["%r1", "%f1", "%f2"]
    wide, info = instruction("cvt.rzi.sat.s16.f32 %r1, %f1;")     # a destination register wider than .s16
    g = parse_cvt(wide, info)
    assert (g.dst, g.src, g.rnd, g.sat, g.pair) == ("s16", "f32", "rzi", True, False)
    assert [str(x) for x in check_cvt_operands(wide, info, g)] == ["%r1", "%f1"]
    pk, info = instruction("cvt.pack.sat.s4.s32.b32 %r1, %r2, %r3, %r4;")
    h = parse_cvt_pack(pk, info)
    assert isinstance(h, CvtPackForm)
    assert (h.ctype, h.width, str(h.dst), str(h.a), str(h.b), str(h.c)) == ("s4", 4, "%r1", "%r2", "%r3", "%r4")


@pytest.mark.parametrize("line, target, match", [
    ("add.u16x2 %r1, %r2, %r3;", "sm_80", r"requires sm_90 or higher \(target is sm_80\)"),
    ("add.f32x2 %rd1, %rd2, %rd3;", "sm_90a", r"requires sm_100 or higher \(target is sm_90a\)"),
    ("cvt.rn.satfinite.e2m1x2.f32 %rs1, %f1, %f2;", "sm_90a", r"'cvt with \.e2m1x2' not supported on \.target"),
])
def test_alu_target_rules(line, target, match):
    """The minimum targets of the newer ALU forms are checked in isa, located at the instruction."""
    rejects(ALU_PARSERS[alu_kind(instruction(line, target)[0])], line, VerifyError, match, target=target)


def test_cvt_operand_count():
    rejects(lambda ins, info: check_cvt_operands(ins, info, parse_cvt(ins, info)), "cvt.f32.f16 %f1;",
            VerifyError, r"cvt\.f32\.f16 takes 2 operands, got 1")


# ---------------------------------------------------------------------------------------------- one cta_group rule
def test_one_cta_group_rule_for_alloc_and_mma():
    """tcgen05.alloc (isa/tcgen05_mem_forms) and tcgen05.mma (isa/tcgen05_rules) share one check: PTX ISA 9.1
    §9.7.16.7.1, every tcgen05 instruction of a kernel uses the same .cta_group."""
    from tcsim.engine import decode_function

    text = module("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem], 32;\n"
                  "  tcgen05.mma.cta_group::2.kind::f16 [%r1], %rd1, %rd2, %r3, %p1;")
    m = parse(text, "t.ptx")
    with pytest.raises(VerifyError, match=r"uses \.cta_group::1 but tcgen05\.mma\.cta_group::2\.kind::f16 at "
                                          r"t\.ptx:13:\d+ uses \.cta_group::2; all tcgen05 instructions of kernel k "
                                          r"must use the same \.cta_group \[rule cta-group-uniform\]") as e:
        decode_function(m, m.kernel())
    assert e.value.loc.line == LINE



# ---------------------------------------------------------------------------------------------- control
def control_module(line: str) -> str:
    """``line`` in a kernel with a vprintf and a helper declaration, the label L1 and the .branchtargets list TAB."""
    return f""".version 8.8
.target sm_100a
.address_size 64
.extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);
.extern .func (.param .b32 r) helper(.param .b64 a);
.visible .entry k()
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
TAB:
  .branchtargets L1, L1;
  {line}
L1:
  ret;
}}
"""


CONTROL_LINE = 12


def control_instruction(line: str):
    m = parse(control_module(line), "t.ptx")
    fn = m.kernel()
    ins = next(i for i in fn.body if i.loc.line == CONTROL_LINE)
    return ins, DecodeInfo(m, fn, "sm_100a")


def test_control_forms():
    bra, _ = control_instruction("bra.uni L1;")
    f = parse_control(bra)
    assert isinstance(f, ControlForm)
    assert (f.op, f.uni, [str(o) for o in f.operands]) == ("bra", True, ["L1"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.uni = False
    plain, _ = control_instruction("bra L1;")
    assert parse_control(plain).uni is False
    ret, _ = control_instruction("ret.uni;")
    assert (parse_control(ret).op, parse_control(ret).uni, parse_control(ret).operands) == ("ret", True, ())
    ev, _ = control_instruction("pmevent.mask 0x3;")
    assert (parse_control(ev).mask, parse_control(ev).operands[0].value) == (True, 3)
    brx, _ = control_instruction("brx.idx.uni %r1, TAB;")
    g = parse_brx(brx)
    assert (g.uni, [str(o) for o in g.operands]) == (True, ["%r1", "TAB"])
    ns, _ = control_instruction("nanosleep.u32 %r2;")
    assert str(parse_nanosleep(ns).operands[0]) == "%r2"
    sm, _ = control_instruction("setmaxnreg.dec.sync.aligned.u32 40;")
    assert parse_setmaxnreg(sm) == SetmaxnregForm("dec", 40)
    call, _ = control_instruction("call.uni (%r3), vprintf, (%rd1, %rd2);")
    c = parse_call(call)
    assert isinstance(c, CallForm)
    assert (c.uni, c.name, c.direct, [str(p) for p in c.args]) == (True, "vprintf", True, ["%rd1", "%rd2"])
    assert [str(r) for r in c.returns] == ["%r3"] and c.prototype is None


@pytest.mark.parametrize("line, parser, err, match", [
    ("bra.foo L1;", parse_control, UnsupportedError, r"qualifier \.foo of bra is not supported"),
    ("bra.uni.uni L1;", parse_control, VerifyError, r"more than one uni qualifier"),
    ("bra;", parse_control, VerifyError, r"bra takes exactly one label operand"),
    ("exit.uni;", parse_control, UnsupportedError, r"qualifier \.uni of exit is not supported"),
    ("exit %r1;", parse_control, VerifyError, r"exit takes no operands, got 1"),
    ("trap.sync;", parse_control, UnsupportedError, r"qualifier \.sync of trap is not supported"),
    ("ret.sync;", parse_control, UnsupportedError, r"qualifier \.sync of ret is not supported"),
    ("pmevent;", parse_control, VerifyError, r"pmevent takes one operand"),
    ("brx.uni %r1, TAB;", parse_brx, VerifyError, r"brx needs \.idx"),
    ("brx.idx %r1;", parse_brx, VerifyError, r"brx\.idx takes two operands"),
    ("nanosleep %r1;", parse_nanosleep, VerifyError, r"nanosleep needs \.u32"),
    ("nanosleep.u64 %rd1;", parse_nanosleep, UnsupportedError, r"qualifier \.u64 of nanosleep is not supported"),
    ("nanosleep.u32;", parse_nanosleep, VerifyError, r"nanosleep takes one operand"),
    ("setmaxnreg.sync.aligned.u32 40;", parse_setmaxnreg, VerifyError, r"needs exactly one of \.inc / \.dec"),
    ("setmaxnreg.inc.sync.aligned.u32 41;", parse_setmaxnreg, VerifyError, r"register count 41 is not valid"),
    ("setmaxnreg.inc.sync.aligned.u32 %r1;", parse_setmaxnreg, VerifyError, r"takes one integer constant"),
    ("call.foo (%r3), vprintf, (%rd1, %rd2);", parse_call, UnsupportedError, r"qualifier \.foo of call"),
    ("call.uni (%r3);", parse_call, VerifyError, r"call needs a function name or a register"),
    ("call.uni (%r3), %rd1, (%rd2);", parse_call, VerifyError, r"names no \.callprototype or \.calltargets"),
    ("prefetch.global.L3 [%rd1];", parse_prefetch, UnsupportedError, r"qualifier \.L3 of prefetch"),
    ("prefetch.global [%rd1];", parse_prefetch, VerifyError, r"prefetch needs a level"),
    ("prefetch.local.L2::evict_last [%rd1];", parse_prefetch, VerifyError, r"does not take the state space \.local"),
    ("prefetch.global.tensormap [%rd1];", parse_prefetch, VerifyError, r"does not take the state space \.global"),
    ("prefetchu.L2 [%rd1];", parse_prefetch, UnsupportedError, r"qualifier \.L2 of prefetchu is not supported"),
    ("prefetch.global.L2 %rd1;", parse_prefetch, VerifyError, r"needs an address operand"),
])
def test_control_rejects(line, parser, err, match):
    ins, _ = control_instruction(line)
    with pytest.raises(err, match=match) as e:
        parser(ins)
    assert (e.value.loc.file, e.value.loc.line) == ("t.ptx", CONTROL_LINE)
    assert f"t.ptx:{CONTROL_LINE}:" in str(e.value)


def test_control_errors_reach_tcsim_check():
    """The decoders use the isa forms: a bad control qualifier is a located diagnostic of the loaded kernel."""
    load_all()
    ins, info = control_instruction("bra.foo L1;")
    with pytest.raises(UnsupportedError, match=r"qualifier \.foo of bra") as e:
        REGISTRY.decode(ins, info)
    assert (e.value.loc.file, e.value.loc.line) == ("t.ptx", CONTROL_LINE)


# ---------------------------------------------------------------------------------------------- prefetch
@pytest.mark.parametrize("line", ["prefetch.global.L2 [%rd1];", "prefetch.local.L1 [%rd1];", "prefetch.L1 [%rd1];",
                                  "prefetch.global.L2::evict_last [%rd1];", "prefetch.param.tensormap [pmap];",
                                  "prefetch.tensormap [%rd1];", "prefetchu.L1 [%rd1];"])
def test_prefetch_forms(line):
    ins, _ = instruction(line)
    assert str(parse_prefetch(ins)) == line.split(" ", 1)[1].rstrip(";")


def test_other_tensormap_forms_are_unsupported():
    """No decoder covers tensormap.* beyond replace / cp_fenceproxy: a located UnsupportedError from the table."""
    load_all()
    m = parse(module("tensormap.foo [%rd1];"), "t.ptx")
    fn = m.kernel()
    ins = next(i for i in fn.body if i.loc.line == LINE)
    with pytest.raises(UnsupportedError, match=r"form tensormap\.foo is not supported") as e:
        REGISTRY.decode(ins, DecodeInfo(m, fn, "sm_100a"))
    assert e.value.loc.line == LINE


# ---------------------------------------------------------------------------------------------- ALU specs
#: (instruction, whether the decoder accepts it): the spec must spell exactly the accepted qualifier sets
ALU_CASES = [
    ("add.s32 %r1, %r2, %r3;", True), ("add.cc.u32 %r1, %r2, %r3;", True), ("add.sat.s32 %r1, %r2, %r3;", True),
    ("add.lo.s32 %r1, %r2, %r3;", False), ("add.f32 %f1, %f2, %f3;", True), ("add.rn.ftz.f32 %f1, %f2, %f3;", True),
    ("add.rn.f32.bf16 %f1, %rs1, %f3;", True), ("add.approx.f32 %f1, %f2, %f3;", False),
    ("mul.wide.u32 %rd1, %r2, %r3;", True), ("mul.hi.lo.u32 %r1, %r2, %r3;", False),
    ("mad.lo.s32 %r1, %r2, %r3, %r4;", True), ("madc.hi.cc.u32 %r1, %r2, %r3, %r4;", True),
    ("mul24.lo.s32 %r1, %r2, %r3;", True), ("bfind.shiftamt.u32 %r1, %r2;", True),
    ("dp4a.u32.s32 %r1, %r2, %r3, %r4;", True), ("dp2a.lo.u32.u32 %r1, %r2, %r3, %r4;", True),
    ("szext.wrap.s32 %r1, %r2, %r3;", True), ("szext.s32 %r1, %r2, %r3;", False),
    ("fma.rn.f32 %f1, %f2, %f3, %f1;", True), ("fma.f32 %f1, %f2, %f3, %f1;", False),
    ("div.full.f32 %f1, %f2, %f3;", True), ("sqrt.rn.f32 %f1, %f2;", True), ("ex2.approx.ftz.f32 %f1, %f2;", True),
    ("tanh.approx.f32 %f1, %f2;", True), ("sin.f32 %f1, %f2;", False),
    ("min.NaN.f32 %f1, %f2, %f3;", True), ("testp.normal.f32 %p1, %f1;", True),
    ("setp.lt.and.s32 %p1, %r1, %r2, %p2;", True), ("setp.s32 %p1, %r1, %r2;", False),
    ("set.gt.u32.f32 %r1, %f1, %f2;", True), ("selp.b32 %r1, %r2, %r3, %p1;", True),
    ("slct.ftz.f32.f32 %f1, %f2, %f3, %f1;", True),
    ("and.pred %p1, %p2, %p3;", True), ("and.b32.wide %r1, %r2, %r3;", False),
    ("lop3.or.b32 %r1|%p1, %r2, %r3, %r4, 0xfe, %p2;", True),
    ("shf.l.wrap.b32 %r1, %r2, %r3, %r4;", True), ("shf.l.b32 %r1, %r2, %r3, %r4;", False),
    ("prmt.b32.f4e %r1, %r2, %r3, %r4;", True), ("shr.s32 %r1, %r2, %r3;", True),
    ("cvt.rn.f16.f32 %rs1, %f1;", True), ("cvt.rzi.s32.f32 %r1, %f1;", True), ("cvt.f32.f16.f16 %f1, %rs1;", False),
    ("cvt.pack.sat.u8.s32.b32 %r1, %r2, %r3, %r4;", True), ("cvt.pack.u16.s32 %r1, %r2, %r3;", False),
]


@pytest.mark.parametrize("line, accepted", ALU_CASES, ids=[c[0].split(" ")[0] for c in ALU_CASES])
def test_alu_spec_spells_the_decoded_forms(line, accepted):
    load_all()
    ins, info = instruction(line)
    try:
        REGISTRY.decode(ins, info)
        decoded = True
    except TcsimError:
        decoded = False
    assert decoded is accepted, f"decoder {'rejects' if accepted else 'accepts'} {line}"
    assert (covering_spec(ins.full_opcode) is not None) is accepted, ins.full_opcode
