"""H100 fuzz campaigns replayed on the simulator (tests/golden/fuzz_campaign, made by ``python -m hw.fuzz.record``).

Each recording holds a 128-bit hash of the GPU output of every program of a campaign and the list of programs
the simulator agreed with when it was recorded.  CI replays a deterministic sample of those and requires the
simulator's output to hash to the GPU's: real-hardware truth guarding every change.  Programs the simulator
still disagrees with are the campaign's open findings (README in that folder); their GPU outputs, where kept,
let ``python -m hw.fuzz.record compare`` and ``python -m hw.fuzz.derive`` work on them without a GPU.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hw.fuzz.generator import generate
from hw.fuzz.record import _digest, _h, load
from hw.fuzz.runner import run_sim

ROOT = Path(__file__).resolve().parents[1] / "golden" / "fuzz_campaign"
FILES = sorted(ROOT.glob("h100_*seeds_*.npz"))         # every generator version
SAMPLE = 120
KNOWN = {int(k): v for k, v in json.loads((ROOT / "known_divergent.json").read_text()).items() if k.isdigit()}


def test_there_are_recordings():
    assert FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_recording_is_complete_and_current(path):
    z, meta = load(path)
    assert meta["device"].startswith("NVIDIA H100")
    n = meta["count"]
    assert n >= 9000
    assert len(meta["gpu_sha"]) + len(meta["errors"]) == len(meta["digests"]) == n
    for s in list(meta["digests"])[:: max(1, n // 50)]:          # the generator still makes these programs
        assert meta["digests"][s] == _digest(generate(int(s), version=meta.get("generator", 1))), \
            f"program {s} changed: re-record"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_simulator_matches_h100_on_a_sample(path):
    z, meta = load(path)
    agree = sorted(meta["sim_agrees"])
    sample = agree[:: max(1, len(agree) // SAMPLE)][:SAMPLE]
    assert sum(s in KNOWN for s in sample) <= len(sample) // 40, "too many known divergences: fix the model"
    bad = []
    for s in sample:
        if s in KNOWN:
            continue
        out = run_sim(generate(s, version=meta.get("generator", 1)))
        if not out.ok or _h(out.output) != meta["gpu_sha"][str(s)]:
            bad.append(s)
    assert not bad, f"the simulator no longer matches the H100 on programs {bad[:10]} (python -m hw.fuzz.record " \
                    f"compare --gpu {path} --seeds {bad[0]}-{bad[0]} shows the fields)"
