"""CI replay of the recorded mmasim results (issue 22, item 1): tcsim's sm_100a tensor-core numerics against the
second oracle, with neither torch nor mmasim installed.

tests/golden/mmasim_oracle/replay/ holds mmasim 2.1.1's output bits for >= 10^5 random cases of every variant of
test_mmasim_oracle.VARIANTS (tcgen05 kind::f16 f16/bf16 -> f32/f16, tf32, f8f6f4 all 25 operand pairs -> f32 and
f16, mxf8f6f4 all 25 pairs with ue8m0 block 32, mxf4 ue8m0 block 32, mxf4nvf4 ue8m0 block 32 / ue8m0 block 16 /
ue4m3 block 16; legacy mma.sync f16/bf16/tf32 on sm_100a).  Each test regenerates one variant's inputs from the
recorded seed (their digest is checked first), runs ``mma_float`` / ``mma_block_scaled`` with the parameter table's
values and requires mmasim's bits: every case through a per-chunk digest, the raw-recorded sample case by case.
How the data was made: oracle_replay.py and the manifest's ``command`` / ``versions``.  kind::i8 is not here (mmasim
has no integer model): test_tensor_core.py checks ``mma_int`` against exact Python integers.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import oracle_replay as R
import test_mmasim_oracle as MO
from tcsim.numerics import tensor_core as tc

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def recorded():
    return R.load_recorded()


@pytest.fixture(scope="module")
def manifest():
    return R.load_manifest()


def test_provenance(manifest):
    """The data names its recording: the exact mmasim version (the one the ``oracle`` extra pins), the command,
    the versions of torch / numpy / Python, the seed and the generator, and >= 10^5 cases per variant."""
    assert manifest["versions"]["mmasim"] == R.MMASIM_VERSION
    pin = re.search(r'"mmasim==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pin and pin.group(1) == R.MMASIM_VERSION, "pyproject's oracle extra must pin the recorded mmasim"
    assert manifest["command"] == R.RECORD_CMD
    for key in ("torch", "numpy", "python", "tcsim_commit"):
        assert manifest["versions"][key]
    assert (manifest["seed"], manifest["tile"], manifest["chunk_tiles"], manifest["raw_tiles"]) == \
        (R.SEED, R.TILE, R.CHUNK_TILES, R.RAW_TILES)
    rows = {r["variant"]: r for r in manifest["variants"]}
    assert set(rows) == {v.name for v in MO.VARIANTS}, "every oracle variant is recorded"
    for v in MO.VARIANTS:
        row = rows[v.name]
        assert row["cases"] >= R.MIN_CASES >= 100_000
        assert row["chunks"] == [list(x) for x in R.plan(v)]
        assert sum(row["outputs"].values()) == row["cases"]


def test_every_tcgen05_float_form_is_recorded():
    """Every floating-point (kind, A type, B type, accumulator, scale format / block) that tcsim's sm_100a tcgen05
    table accepts and mmasim models has a recorded variant (PTX ISA §9.7.16.2: the kinds' type tables)."""
    names = {v.name for v in MO.VARIANTS}
    want = set()
    f8f6f4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
    for acc in ("f32", "f16"):
        want |= {f"f16.{acc}.f16.f16", *(f"f8f6f4.{acc}.{a}.{b}" for a in f8f6f4 for b in f8f6f4)}
    want |= {"f16.f32.bf16.bf16", "tf32.f32.tf32.tf32"}
    want |= {f"mxf8f6f4.f32.{a}.{b}.block32.ue8m0" for a in f8f6f4 for b in f8f6f4}
    want |= {"mxf4.f32.e2m1.e2m1.block32.ue8m0", "mxf4nvf4.f32.e2m1.e2m1.block32.ue8m0",
             "mxf4nvf4.f32.e2m1.e2m1.block16.ue8m0", "mxf4nvf4.f32.e2m1.e2m1.block16.ue4m3"}
    assert want <= names, sorted(want - names)
    for v in MO.VARIANTS:                          # and tcsim's table has each of them
        tc.tc_params("sm_100a", v.path, v.a_fmt, v.tc_kind)


@pytest.mark.parametrize("v", MO.VARIANTS, ids=[v.name for v in MO.VARIANTS])
def test_replay_matches_mmasim(recorded, v):
    """tcsim gives mmasim's recorded bits on every case of the variant (>= 10^5)."""
    r = R.replay_variant(v, recorded[v.name])
    assert r.ok, r.describe()
    assert r.cases >= R.MIN_CASES
