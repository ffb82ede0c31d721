"""``tcsim check --list`` prints the forms tcsim executes, from the isa/ form definitions.

The printed lines are read back with their own syntax (``key .{a|b} [.{optional}] ... (section)``) and matched
against the instructions of the examples: every example instruction's family is listed, every instruction of a
family with declared qualifiers is spelled by its line, and forms tcsim does not execute are not.
"""
from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

import tcsim.examples
from tcsim.cli import main
from tcsim.isa.parser import parse

EXAMPLES = sorted(Path(tcsim.examples.__file__).parent.glob("*.ptx"))
_GROUP = re.compile(r"^(\[)?\.(\{([^}]*)\}|[^\s\[\]{}]+)(\])?$")


@pytest.fixture(scope="module")
def listing():
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["check", "--list"]) == 0
    lines = {}
    for line in buf.getvalue().splitlines():
        head = line.split("  (")[0].split()
        groups = []
        for tok in head[1:]:
            g = _GROUP.match(tok)
            assert g is not None, f"unreadable group {tok!r} in {line!r}"
            alts = g.group(3).split("|") if g.group(3) is not None else [g.group(2)]
            groups.append((alts, g.group(1) is None))
        assert head[0] not in lines, f"family {head[0]} listed twice"
        lines[head[0]] = groups if len(head) > 1 or "(PTX ISA" in line else None   # None: qualifiers undeclared
    return lines


def covered(listing, full_opcode: str) -> bool:
    """True when some listed line spells ``full_opcode``: its key's words, then each qualifier in one group
    (at most one per group), every required group present."""
    words = full_opcode.split(".")
    for key, groups in listing.items():
        kw = re.sub(r"(?<!:):[a-z_]+$", "", key).split(".")        # 'add:int' -> ['add']; '::' stays
        if groups is None or kw[0] != words[0]:
            continue
        rest = words[1:]
        if not all(w in rest for w in kw[1:]):
            continue
        rest = list(rest)
        for w in kw[1:]:
            rest.remove(w)
        used = set()
        ok = True
        for m in rest:
            i = next((i for i, (alts, _) in enumerate(groups) if i not in used and any(fnmatchcase(m, a) for a in alts)),
                     None)
            if i is None:
                ok = False
                break
            used.add(i)
        if ok and all(i in used for i, (_, req) in enumerate(groups) if req):
            return True
    return False


@pytest.mark.parametrize("form", [
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group",
    "tcgen05.mma.cta_group::1.kind::f16",
    "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16",
    "tcgen05.ld.sync.aligned.32x32b.x16.b32",
    "tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32",
    "mbarrier.try_wait.parity.shared::cta.b64",
    "mbarrier.arrive.expect_tx.shared::cta.b64",
    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
    "red.release.gpu.global.add.u32",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
    "cp.async.bulk.wait_group.read",
    "cp.async.cg.shared.global.L2::128B",
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32",
    "barrier.cluster.arrive.release.aligned",
    "bar.warp.sync",
    "fence.proxy.async.shared::cta",
    "fence.mbarrier_init.release.cluster",
    "membar.gl",
    "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned",
    "ld.global.nc.L1::no_allocate.v4.f32",
    "ld.global.b128",
    "st.weak.shared::cta.L2::cache_hint.b128",
    "atom.global.cas.b128",
    "st.relaxed.cluster.shared::cluster.u32",
    "mov.b64",
    "shfl.sync.idx.b32",
    "redux.sync.min.NaN.f32",
    "elect.sync",
])
def test_executed_forms_are_listed(listing, form):
    assert covered(listing, form)


@pytest.mark.parametrize("form", [
    "cp.async.bulk.tensor.6d.shared::cluster.global.mbarrier::complete_tx::bytes",   # no 6-D copies
    "cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes",  # im2col unsupported
    "cp.async.bulk.tensor.shared::cluster.global.mbarrier::complete_tx::bytes",      # dimension missing
    "tcgen05.mma.cta_group::1.kind::f64",
    "tcgen05.mma.kind::f16",                                                         # .cta_group missing
    "tcgen05.ld.red.sync.aligned.32x32b.x2.min.u32",
    "tcgen05.ld.sync.aligned.32x32b.x256.b32",
    "mbarrier.try_wait.parity.shared::cta.b32",
    "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8",
    "red.global.add.b128",                                                           # red has no .b128
    "tcgen05.fence::sideways",
    "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.ignore_oob",
    "cp.async.ca.shared.global.L2::512B",
    "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32",
    "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64",
    "barrier.cluster.sync",
    "fence.proxy.foo",
    "tensormap.replace.tile.box_dim.local.b1024.b32",
    "ld.global.u32.unified.foo",
    "shfl.sync.rotate.b32",
    "vote.sync.ballot.b64",
])
def test_unsupported_forms_are_not_listed(listing, form):
    assert not covered(listing, form)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_instruction_is_listed(listing, path):
    """Every instruction of the examples belongs to a listed family, and where that family's qualifiers are
    declared, its line spells the instruction."""
    from tcsim.isa.forms import family_of

    m = parse(path.read_text(), str(path))
    for fn in m.functions.values():
        for ins in fn.body:
            key = family_of(ins.opcode, ins.mods)
            assert key in listing, f"{ins.loc}: {ins.full_opcode} (family {key}) is not listed"
            if listing[key] is not None:
                assert covered(listing, ins.full_opcode), f"{ins.loc}: {ins.full_opcode} is not spelled by {key}"


def test_every_listed_family_declares_its_form():
    """Every line of ``tcsim check --list`` is a declared form: the family key, its qualifier groups (none for
    exit, trap, ...) and the PTX ISA section; no family is left to its decoder ("qualifiers checked by")."""
    import io
    from contextlib import redirect_stdout

    from tcsim.isa.form_catalog import SPECS
    from tcsim.semantics import REGISTRY, load_all

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["check", "--list"]) == 0
    lines = buf.getvalue().splitlines()
    load_all()
    assert len(lines) == len(REGISTRY.families())
    assert set(REGISTRY.families()) <= set(SPECS)
    for line in lines:
        assert "checked by" not in line, line
        assert re.search(r"  \(PTX ISA (§[0-9.]+|\"[a-z_.]+\")", line), f"no PTX ISA section: {line}"


@pytest.mark.parametrize("form", ["add.s32", "add.cc.u32", "mul.wide.s16", "mad.lo.cc.u64", "madc.hi.u32",
                                  "add.rn.ftz.f32", "fma.rn.relu.bf16x2", "div.approx.ftz.f32", "ex2.approx.f16x2",
                                  "min.NaN.xorsign.abs.f16", "setp.ltu.or.ftz.f32", "set.gt.and.u32.s16",
                                  "slct.ftz.s32.f32", "lop3.and.b32", "shf.r.clamp.b32", "prmt.b32.rc16",
                                  "cvt.rni.sat.s8.f32", "cvt.pack.sat.u4.s32.b32", "bra.uni", "call.uni",
                                  "ret.uni", "brx.idx.uni", "exit", "trap", "nanosleep.u32", "pmevent.mask",
                                  "setmaxnreg.inc.sync.aligned.u32", "prefetch.param.tensormap", "prefetchu.L1"])
def test_alu_and_control_forms_are_listed(listing, form):
    assert covered(listing, form)


@pytest.mark.parametrize("form", ["add.lo.s32", "sub.u16x2", "mul.s32", "fma.f32", "sin.f32", "setp.s32",
                                  "shf.l.b32", "cvt.pack.u16.s32", "bra.sync", "exit.uni", "nanosleep",
                                  "setmaxnreg.inc.u32", "prefetchu.L2", "tensormap.foo"])
def test_alu_and_control_forms_not_executed_are_not_listed(listing, form):
    assert not covered(listing, form)


def test_list_keeps_the_plain_opcodes(listing):
    assert {"ld", "st", "mov", "bra", "cvta", "mbarrier", "cp.async.bulk.tensor", "tcgen05.mma", "add:int",
            "add:float"} <= set(listing)


def test_every_declared_form_is_executed():
    """A FormSpec describes a family a decoder executes: every spec key is a registered family."""
    from tcsim.isa.form_catalog import SPECS
    from tcsim.semantics import REGISTRY, load_all

    load_all()
    assert set(SPECS) <= set(REGISTRY.families())
