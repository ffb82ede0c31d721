"""Helpers shared by the example tests: run an example and require its own check to pass, and the negative
controls -- a mutated kernel (or mutated data) must assemble and then either fail the example's check or stop with
a located tcsim diagnostic, never reproduce the right answer and never end in another exception.

An example's check computes its expected D with tcsim's numerics model; ``run_checked`` runs it under
``oracle_replay.numerics_backed_by_data``, so every form the check asks ``tc_params`` for is first checked against
the recorded mmasim data (sm_100a) or the H100 records (sm_90a) in the same run (issue 22).  Forms without any record
(README "What backs each claim") are not checked."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from tcsim.isa.errors import TcsimError
from tcsim.isa.ptxas import assemble
from tcsim.launch import Launch, run_launch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "numerics"))
import oracle_replay  # noqa: E402  (numerics_backed_by_data)


def run_checked(mod, launch: Launch, **run_kw):
    """``run_launch(launch, **run_kw)`` whose result passes ``mod.check``."""
    result = run_launch(launch, **run_kw)
    with oracle_replay.numerics_backed_by_data():
        ok, msg = mod.check(result, launch)
    assert ok, msg
    return result


def with_ptx(launch: Launch, text: str) -> Launch:
    return replace(launch, ptx=text, name="mutated")


def assert_assembles(text: str, arch: str = "sm_100a") -> None:
    """A mutation must stay legal PTX (skipped without ptxas)."""
    r = assemble(text, arch)
    assert r is None or r[0] == 0, r[1]


def fails_or_diagnosed(mod, launch: Launch, broken: Launch, **run_kw) -> str:
    """Run ``broken``; return 'diagnosed: <message>' for a located TcsimError, else the message of
    ``mod.check`` failing against ``launch``'s expected result."""
    try:
        result = run_launch(broken, **run_kw)
    except TcsimError as e:
        assert e.loc is not None, f"diagnostic without a PTX location: {e}"
        return "diagnosed: " + str(e)
    ok, msg = mod.check(result, launch)
    assert not ok, "a broken kernel still passed the check"
    return msg


def mutation_is_caught(mod, launch: Launch, mutate, **run_kw) -> str:
    """Apply ``mutate`` to the example's PTX (``mod.PTX``): the text must change and still assemble, and the run
    must either stop with a located diagnostic or fail the check with differing outputs.  Returns the message."""
    text = mod.PTX.read_text()
    broken = mutate(text)
    assert broken != text, "the mutation did not apply"
    assert_assembles(broken)
    msg = fails_or_diagnosed(mod, launch, with_ptx(launch, broken), **run_kw)
    assert msg.startswith("diagnosed") or "differ" in msg, msg
    return msg
