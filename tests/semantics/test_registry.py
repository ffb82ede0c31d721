"""sim/semantics/registry.py: the decode table keyed by instruction family (tcsim.isa.forms).

* An overlapping registration (a family already taken) or a key no instruction can have raises DecoderOverlap.
* The real table loads without overlap, and every instruction of the examples finds its one decoder, in the
  module of its PTX ISA family.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import tcsim.examples
from tcsim.isa.errors import UnsupportedError
from tcsim.isa.forms import check_family_key
from tcsim.isa.parser import parse
from tcsim.semantics import REGISTRY, DecodeInfo, DecoderOverlap, load_all
from tcsim.semantics.registry import Registry

EXAMPLES = sorted(Path(tcsim.examples.__file__).parent.glob("*.ptx"))


def _decoder_a(ins, info):
    return lambda ctx: None


def _decoder_b(ins, info):
    return lambda ctx: None


def test_overlapping_registration_raises():
    reg = Registry()
    reg.register(("cp.async.bulk",), _decoder_a)
    with pytest.raises(DecoderOverlap, match=r"_decoder_b and .*_decoder_a are both registered for the "
                                             r"instruction family 'cp.async.bulk'"):
        reg.register(("cp.async.bulk",), _decoder_b)
    reg.register(("cp.async.bulk.tensor",), _decoder_b)        # a different family: no overlap
    assert reg.families() == ["cp.async.bulk", "cp.async.bulk.tensor"]


@pytest.mark.parametrize("key", ["cp", "tcgen05", "add", "barrier.foo"])
def test_registration_of_a_split_opcode_or_unknown_form_raises(key):
    # "cp" would overlap every cp.* family: instructions of a split opcode are only reachable by their family
    with pytest.raises(DecoderOverlap, match="is not an instruction family"):
        Registry().register((key,), _decoder_a)


def test_real_registry_has_no_overlap_and_valid_keys():
    load_all()                                      # importing every module raises on an overlap
    keys = REGISTRY.families()
    assert len(keys) == len(set(keys))
    for key in keys:
        check_family_key(key)
    fresh = Registry()
    for key in keys:                                # replaying the table into a fresh one finds no overlap
        fresh.register((key,), _decoder_a)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_instruction_has_one_decoder(path):
    load_all()
    m = parse(path.read_text(), str(path))
    for fn in m.functions.values():
        for ins in fn.body:
            assert REGISTRY.decoder_of(ins) is not None, f"{ins.loc}: {ins.full_opcode}"


@pytest.mark.parametrize("text, module", [
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes", "bulk_tensor"),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "bulk_copy"),
    ("cp.async.ca.shared.global", "async_copy"),
    ("tcgen05.ld.sync.aligned.32x32b.x1.b32", "tcgen05_mem"),
    ("tcgen05.mma.cta_group::1.kind::f16", "tcgen05_mma"),
    ("tcgen05.cp.cta_group::1.128x256b", "tcgen05_copy"),
    ("barrier.cluster.arrive", "cluster_barrier"),
    ("barrier.sync.aligned", "barrier"),
    ("add.rn.f32", "float_arith"),
    ("add.s32", "integer"),
    ("cvt.pack.sat.s8.s32.b32", "convert"),
])
def test_family_decoder_module(text, module):
    load_all()
    m = parse(".version 8.8\n.target sm_100a\n.address_size 64\n.visible .entry k()\n{\n  " + text + ";\n}\n", "t.ptx")
    ins = m.kernel().body[0]
    assert REGISTRY.decoder_of(ins).__module__ == f"tcsim.semantics.{module}"


@pytest.mark.parametrize("text, match", [
    ("cp.foo.bar", r"form cp\.foo\.bar is not supported by tcsim"),
    ("add.tf32", r"form add\.tf32 is not supported by tcsim"),
    ("tcgen05.fence::sideways", r"form tcgen05\.fence::sideways is not supported by tcsim"),
])
def test_form_without_a_family_is_a_located_unsupported_error(text, match):
    load_all()
    m = parse(".version 8.8\n.target sm_100a\n.address_size 64\n.visible .entry k()\n{\n  " + text + ";\n}\n", "t.ptx")
    fn = m.kernel()
    with pytest.raises(UnsupportedError, match=match) as e:
        REGISTRY.decode(fn.body[0], DecodeInfo(m, fn, "sm_100a"))
    assert e.value.loc is not None and e.value.loc.line == 6
