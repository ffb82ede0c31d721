"""Addresses as Hopper has them (issue 16 item 4): every value of the address-layout probe record
(``tests/hw/golden_h100/address_layout.json``, made by ``bash calib/probes/address_device_run.sh``: see
``tests/hw/golden_h100/README.md``) is replayed against tcsim, case by case, slot by slot, CTA by CTA: shared
addresses of static and dynamic variables, ``mapa`` / ``cvta`` / ``isspacep`` / ``getctarank`` for every cluster
rank, local and parameter addresses, and the shared-size special registers.  No GPU is needed.

The full record was made on an H200 (the device tool's machine of that call; sm_90, the same GH100 SM and driver
as the H100); ``address_layout_h100.json`` is the first record, made on an H100 with the first 11 cases, and
:func:`test_h100_and_h200_agree` checks that the two agree on every value they share."""
from __future__ import annotations

import copy
import json

import pytest

from calib.pipeline import sha256
from calib.probes.address_probe import (CASES, GOLDEN, NONE, VARIANTS, compare, normalised, ptx, run_cases, slots)
from tcsim.address_map import SM_90A, address_map

REC = json.loads(GOLDEN.read_text())
REC_H100 = json.loads((GOLDEN.parent / "address_layout_h100.json").read_text())

#: values tcsim does not give, and why (each must still differ exactly so: a change shows)
KNOWN = {("mod2_c2_d0", slot): "ptxas drops the write-only .local loc2 (the driver's local size is 48 bytes, loc "
                               "alone), so loc sits 48 bytes below the stack top, and a mov of loc2's address gives "
                               "its frame offset 0x28; tcsim keeps every declared .local variable in the frame "
                               "(64 bytes: loc at top - 64, loc2 at top - 24)"
         for slot in ("laddr:loc", "laddr:loc2", "local_addr", "local_generic")}


def test_record_provenance_and_freshness():
    meta = REC["meta"]
    assert meta["command"].startswith("python -m calib.probes.address_probe record")
    assert meta["gpu"].startswith(("NVIDIA H100", "NVIDIA H200")) and meta["compute_capability"] == "9.0"
    assert REC_H100["meta"]["gpu"].startswith("NVIDIA H100") and REC_H100["meta"]["compute_capability"] == "9.0"
    assert set(REC["cases"]) == set(CASES), "record the missing cases: bash calib/probes/address_device_run.sh"
    for name, e in REC["cases"].items():
        c = CASES[name]
        assert "error" not in e, f"{name} failed on the GPU: {e.get('error')}"
        assert e["ptx_sha256"] == sha256(ptx(c.variant)), f"{name}: the probe kernel changed since the record"
        assert (tuple(e["grid"]), tuple(e["cluster"]), e["dynamic_smem"]) == (c.grid, c.cluster, c.dynamic_smem)
        assert list(e["values"]) == slots(c.variant)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tcsim_gives_the_h100_values(case):
    sim, _ = run_cases("sim", [case])
    diffs = compare({"cases": {case: REC["cases"][case]}}, sim)
    unexplained = [d for d in diffs if (d[0], d[1]) not in KNOWN]
    assert not unexplained, "\n".join(f"{s} cta {c}: GPU {w!r}, tcsim {g!r}" for _, s, c, w, g in unexplained[:20])
    n = CASES[case].grid[0] * CASES[case].grid[1]
    assert {(d[0], d[1]) for d in diffs} == {k for k in KNOWN if k[0] == case}
    assert len(diffs) == n * len({k for k in KNOWN if k[0] == case})


def test_h100_and_h200_agree():
    """The first record (H100, 11 cases, the probe kernels without the laddr slots) and the full one (H200) give the
    same value in every slot they share, generic addresses compared relative to their windows."""
    shared = 0
    for name, e in REC_H100["cases"].items():
        a, b = normalised(e["values"]), normalised(REC["cases"][name]["values"])
        for slot in a:
            if slot in b:
                assert a[slot] == b[slot], (name, slot)
                shared += 1
    assert shared > 11 * 90


def test_compare_reports_a_single_changed_value():
    """Negative control: one value of tcsim's side changed (rank 1's mapa in CTA 3) is reported, alone."""
    case = "decl_c4_d4096"
    sim = {case: copy.deepcopy(REC["cases"][case])}
    sim[case]["values"]["mapa_u32:1"][3] ^= 0x400
    diffs = compare({"cases": {case: REC["cases"][case]}}, sim)
    assert [(d[0], d[1], d[2]) for d in diffs] == [(case, "mapa_u32:1", 3)]


def test_generic_windows_move_between_processes():
    """Why generic addresses are compared relative to their window: the H100's window bases differ from one
    process to the next, while their alignment and every offset inside them stay the same."""
    shared = {e["values"]["shared_window_base"][0] for e in REC["cases"].values()}
    local = {e["values"]["local_window_base"][0] for e in REC["cases"].values()}
    assert len(shared) > 1 and len(local) > 1
    assert all(b % (1 << 32) == 0 for b in shared) and all(b % (1 << 24) == 0 for b in local)
    n = normalised(REC["cases"]["decl_c2_d0"]["values"])
    assert n["cvta_shared"] == ["shared_window_base+0x410", "shared_window_base+0x1000410"] * 2


def test_the_sm90a_map_is_the_record():
    """The numbers of tcsim.address_map's sm_90a entry, read off the record directly."""
    v = REC["cases"]["decl_c1_d0"]["values"]
    assert SM_90A.reserved_smem == v["sreg:reserved_smem_offset_cap"][0] == v["addr:s1"][0]
    assert (SM_90A.reserved_smem_begin, SM_90A.reserved_smem_end, SM_90A.reserved_smem_0, SM_90A.reserved_smem_1) \
        == tuple(v[f"sreg:reserved_smem_offset_{k}"][0] for k in ("begin", "end", "0", "1"))
    c4 = REC["cases"]["decl_c4_d4096"]["values"]
    assert [a >> SM_90A.rank_shift for a in c4["mov_u32_primary"]] == c4["sreg:cluster_ctarank"]
    assert SM_90A.local_base(16) == v["laddr:loc"][0]
    assert SM_90A.param_generic_base % (1 << 24) == v["param_generic"][0] % (1 << 24)
    assert address_map("sm_90") is SM_90A and address_map(None).arch == "sm_100a"


def test_no_slot_is_left_unrun_where_the_rank_exists():
    """The record holds a value for every rank of the cluster and the sentinel beyond it (so a slot whose
    instruction did not run cannot pass for one that did)."""
    for name, e in REC["cases"].items():
        c = CASES[name]
        n = c.cluster[0] * c.cluster[1] * c.cluster[2]
        for r in range(4):
            vals = e["values"][f"mapa_u32:{r}"]
            assert all((v == NONE) == (r >= n) for v in vals), (name, r)
    assert set(VARIANTS) == {c.variant for c in CASES.values()}
