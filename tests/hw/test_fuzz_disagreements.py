"""Every recorded disagreement of the fuzz campaigns, re-checked by what explains it (issue 22, item 2).

tests/golden/fuzz_campaign/disagreements.json (made by ``python -m calib.fuzz.survey``, which re-simulates every
program a campaign recorded as disagreeing with the GPU and searches the verified explanations of
calib/fuzz/explain.py) puts each recorded disagreement of each campaign in exactly one group:

* ``explained``: the named explanation -- ptxas rewrites (the PTX as ptxas compiled it) and lowering variants
  (what the PTX ISA leaves open) -- replayed in the simulator (:func:`calib.fuzz.replay.replay_explained`, one run,
  no search) reproduces the GPU's output bit for bit (its recorded 128-bit hash), and the plain simulator does not;
* ``agree_now``: today's simulator reproduces the GPU's output as it is (fixed since the recording);
* ``open``, by cause: ``noted:<checks>`` (isa/lint.py notes a ptxas 13.0 miscompilation there, diagnosed from the
  SASS of a minimised reproducer, but no executable model of it reproduces this program yet), ``unexplained``,
  ``gpu_error:<kind>`` (the GPU refused or crashed: the driver's JIT segfaults, ...), ``sim_error``, ``not surveyed``
  (the survey has not reached it): the simulator must still disagree -- a program that starts to agree fails;
* ``known_divergent``: programs that agreed when recorded and differ under a later simulator rule
  (known_divergent.json, left out of the agreeing sample of tests/hw/test_fuzz_campaign_replay.py), by explanation.

CI checks that the groups cover every recorded disagreement exactly and replays a sample: one program per
explanation and per open cause of each campaign.  ``-m slow`` replays every one of them (about 6,000 programs:
tens of CPU minutes, which CI's 20-s share cannot hold).
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from calib.fuzz.generator import generate
from calib.fuzz.record import _h, differing_seeds, load
from calib.fuzz.replay import parse_explanation, replay_explained
from calib.fuzz.runner import run_sim
from calib.fuzz.survey import known_divergent

ROOT = Path(__file__).resolve().parents[1] / "golden" / "fuzz_campaign"
LIST = json.loads((ROOT / "disagreements.json").read_text())
COMMITTED = sorted(p.stem for p in ROOT.glob("h[12]00_*seeds_*.npz"))
#: the listed campaigns that are committed (the list may also name a record that a merged one superseded)
CAMPAIGNS = {k: v for k, v in LIST["campaigns"].items() if k in COMMITTED}
RESURVEY = "python -m calib.fuzz.survey --out S.jsonl --jobs J; python -m calib.fuzz.survey --write-list S.jsonl"
#: programs per campaign the fast replay samples at most, per group (a version-6 program costs several times more)
PER_GROUP = {"explained": 4, "open": 3, "agree_now": 1}
PER_GROUP_V6 = {"explained": 2, "open": 2, "agree_now": 1}


@functools.lru_cache(maxsize=None)
def _meta(stem):
    return load(ROOT / f"{stem}.npz")[1]


def _base(explanation: str) -> str:
    """An explanation's class: its names without the per-instruction lines (``f64-nan-swap@3,9`` -> ``f64-nan-swap@``)."""
    return "+".join(p.split("@")[0] + ("@" if "@" in p else "") for p in explanation.split(":", 1)[1].split("+"))


def sample(c: dict) -> dict:
    """{group: [(seed, explanation or cause)]}: the fast replay's deterministic sample of a campaign's list --
    the first program of each explanation class and of each kind of open cause (up to :data:`PER_GROUP`), and
    every known divergence."""
    per = PER_GROUP_V6 if c["generator"] >= 6 else PER_GROUP
    by_class: dict = {}
    for name, seeds in c["explained"].items():
        by_class.setdefault(_base(name), []).append((min(seeds), name))
    expl = sorted(min(v) for v in by_class.values())[:per["explained"]]
    by_kind: dict = {}                 # one program per kind of open cause: noted, gpu_error, unexplained, ...
    for k, seeds in c["open"].items():
        by_kind.setdefault(k.split(":")[0], []).append((min(seeds), k))
    opened = sorted(min(v) for v in by_kind.values())[:per["open"]]
    agree = [(s, "agree") for s in c["agree_now"][:per["agree_now"]]]
    known = [(s, k) for k, seeds in c.get("known_divergent", {}).items() for s in seeds]
    return {"explained": expl, "open": opened, "agree_now": agree, "known_divergent": known}


def check(stem: str, group: str, seed: int, what: str, plain_too: bool = True) -> str | None:
    """None when program ``seed`` of campaign ``stem`` behaves as its group says, else what is wrong.  An explained
    program is replayed with its explanation (bit for bit) and, with ``plain_too``, without it (it must differ)."""
    meta = _meta(stem)
    prog = generate(seed, version=meta.get("generator", 1))
    gpu = meta["gpu_sha"].get(str(seed))
    explained = group == "explained" or (group == "known_divergent" and what.startswith("diagnosed:"))
    if explained:
        got = replay_explained(prog, what)
        if got is None or _h(got) != gpu:
            return f"{what} no longer reproduces the GPU's output"
        if not plain_too:
            return None
    out = run_sim(prog)
    plain = out.ok and gpu is not None and _h(out.output) == gpu
    if group == "agree_now":
        return None if plain else "no longer agrees with the GPU"
    if plain:
        return f"now agrees with the GPU (listed {group}: {what}): re-run the survey"
    if group == "open" and what.startswith("gpu_error") and str(seed) not in meta["errors"]:
        return "listed as a GPU error, but the recording has the GPU's output"
    return None


@pytest.mark.parametrize("stem", sorted(CAMPAIGNS))
def test_list_covers_every_recorded_disagreement_once(stem):
    """The list names each recorded disagreement exactly once, for the campaign file as committed (a re-recorded or
    merged campaign fails here until the survey is re-run)."""
    assert (ROOT / f"{stem}.npz").exists(), f"{stem}: listed but not committed"
    meta = _meta(stem)
    c = CAMPAIGNS[stem]
    assert (c["generator"], c["seed"], c["count"]) == (meta.get("generator", 1), meta["seed"], meta["count"]), \
        f"{stem} was re-recorded since the survey: {RESURVEY}"
    listed = c["agree_now"] + [s for v in c["explained"].values() for s in v] + [s for v in c["open"].values()
                                                                               for s in v]
    assert len(listed) == len(set(listed)), f"{stem}: a program is listed twice"
    assert sorted(listed) == differing_seeds(meta), f"{stem}: the list does not match the recording: {RESURVEY}"
    known = sorted(s for v in c.get("known_divergent", {}).values() for s in v)
    assert known == known_divergent(meta), f"{stem}: known_divergent.json changed: {RESURVEY}"
    for name in c["explained"]:
        rw, var = parse_explanation(name)
        assert rw or var, name


def test_every_committed_campaign_is_listed():
    assert set(COMMITTED) == set(CAMPAIGNS), f"not listed: {sorted(set(COMMITTED) - set(CAMPAIGNS))}: {RESURVEY}"


def test_a_listed_record_that_is_not_committed_is_another_record_of_a_committed_campaign():
    """A listed campaign record that is not committed is another record of a committed campaign -- the same
    generator version from the same first seed: the record a merge with a top-up superseded, or the merged one
    (calib.fuzz.record merge), listed ahead of its landing."""
    for stem, c in LIST["campaigns"].items():
        if stem not in CAMPAIGNS:
            assert any((o["generator"], o["seed"]) == (c["generator"], c["seed"]) for o in CAMPAIGNS.values()), \
                f"{stem} is listed but no record of its campaign is committed"


@pytest.mark.parametrize("stem", sorted(CAMPAIGNS))
def test_sample_of_each_group_replays(stem):
    """One program per explanation class and per open cause: explained ones reproduced bit for bit by their
    explanation, open ones still disagreeing, resolved ones agreeing (``-m slow`` also checks that each explained
    one still differs without its explanation)."""
    bad = [(g, s, w, why) for g, items in sample(CAMPAIGNS[stem]).items() for s, w in items
           if (why := check(stem, g, s, w, plain_too=False))]
    assert not bad, f"{stem}: {bad[:5]}"


def _line_rewrite_sample() -> list:
    """(campaign, seed, explanation): the first program (newest ALU campaign first) explained by each per-instruction
    rewrite of a lint-noted class (calib.fuzz.explain.LINE_REWRITES), which :func:`sample`'s first few classes may
    miss; ``-m slow`` replays every one."""
    from calib.fuzz.explain import LINE_REWRITES

    out = []
    seen: set = set()
    for stem, c in sorted(CAMPAIGNS.items(), key=lambda kv: -kv[1]["generator"]):
        if c["generator"] >= 6:         # warpgroup programs (wgmma-group-lost: tests/hw/test_fuzz_wgmma_v7.py)
            continue
        for name, seeds in sorted(c["explained"].items(), key=lambda kv: min(kv[1])):
            classes = {r.split("@")[0] for r in parse_explanation(name)[0]} & set(LINE_REWRITES)
            if classes - seen:
                seen |= classes
                out.append((stem, min(seeds), name))
    return out


@pytest.mark.parametrize("stem,seed,name", _line_rewrite_sample())
def test_lint_noted_programs_reproduced_by_the_lowering_ptxas_made(stem, seed, name):
    """A campaign program the lint noted, now explained: the per-instruction rewrite of its class at the listed lines
    (the lowering read from the SASS of the class's reproducers, tests/fuzz_regressions test_line_rewrite_is_the_
    lowering_ptxas_made) reproduces the GPU's output bit for bit, and the plain simulator does not."""
    assert check(stem, "explained", seed, name) is None


#: programs per test of the exhaustive replay (a group of a campaign in parts: ``pytest -n N`` spreads them)
CHUNK = 100


def _items(stem: str, group: str) -> list:
    c = CAMPAIGNS[stem]
    return ([(s, w) for w, seeds in c.get(group, {}).items() for s in seeds] if group != "agree_now"
            else [(s, "agree") for s in c["agree_now"]])


def _all():
    return [pytest.param(stem, group, k, marks=pytest.mark.slow, id=f"{stem}-{group}-{k}")
            for group in ("explained", "open", "agree_now", "known_divergent") for stem in sorted(CAMPAIGNS)
            for k in range(-(-len(_items(stem, group)) // CHUNK))]


@pytest.mark.parametrize("stem,group,part", _all())
def test_every_listed_program_replays(stem, group, part):
    """The exhaustive replay (``-m slow``): every program of the group, as :func:`check` says (part ``part`` of
    :data:`CHUNK` programs)."""
    items = _items(stem, group)[part * CHUNK:(part + 1) * CHUNK]
    bad = [(s, w, why) for s, w in items if (why := check(stem, group, s, w))]
    assert not bad, f"{stem} {group}: {len(bad)} of {len(items)} wrong, first {bad[:5]}"
