"""tcsim.program_cache: a launch's setup (parse, link + decode, lint notes) is paid once per PTX text and shared,
read-only, by later launches of that text -- with the same results as a fresh setup, the same located diagnostics
for bad PTX on every launch, and never for a module the caller owns."""
from __future__ import annotations

import numpy as np
import pytest

from tcsim.isa.errors import TcsimError
from tcsim.isa.parser import parse
from tcsim.launch import Launch, run_launch
from tcsim.program_cache import PROGRAMS

PTX = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 mul)
{
  .reg .b32 %r<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [mul];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, %tid.x;
  mul.lo.u32 %r3, %r2, %r1;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r3;
  ret;
}
"""


def _run(mul: int, text: str = PTX):
    out = np.zeros(64, np.uint32)
    res = run_launch(Launch(ptx=text, args=[out, np.uint32(mul)], grid=(1, 1, 1), block=(64, 1, 1)))
    return res.outputs[0]


def test_second_launch_hits_and_computes_its_own_arguments():
    PROGRAMS.clear()
    text = PTX.replace("ret;", "ret;  // a text of this test only")
    h0 = PROGRAMS.hits
    a = _run(3, text)
    h1 = PROGRAMS.hits
    b = _run(5, text)
    assert PROGRAMS.hits - h1 >= 2 and h1 == h0          # module + program (+ notes) came from the cache
    assert list(a) == [3 * t for t in range(64)] and list(b) == [5 * t for t in range(64)]


def test_cache_off_gives_the_same_results(monkeypatch):
    want = _run(7)
    monkeypatch.setenv("TCSIM_PROGRAM_CACHE", "0")
    h = PROGRAMS.hits
    assert list(_run(7)) == list(want)
    assert PROGRAMS.hits == h


def test_bad_ptx_raises_its_diagnostic_on_every_launch():
    bad = PTX.replace("mul.lo.u32 %r3, %r2, %r1;", "mul.lo.u32 %r3, %r2, %r9;")
    for _ in range(2):
        with pytest.raises(TcsimError) as e:
            _run(1, bad)
        assert "%r9" in str(e.value)


def test_a_callers_module_is_not_cached():
    """A parsed ir.Module passed as the launch's PTX is the caller's (it may change it between launches): loaded
    afresh every time."""
    mod = parse(PTX, "mine.ptx")
    m = PROGRAMS.misses
    for _ in range(2):
        res = run_launch(Launch(ptx=mod, args=[np.zeros(64, np.uint32), np.uint32(2)], grid=(1, 1, 1),
                                block=(64, 1, 1)))
        assert list(res.outputs[0]) == [2 * t for t in range(64)]
    assert PROGRAMS.misses == m


def test_capacity_bounds_the_tables():
    from tcsim.program_cache import ProgramCache
    c = ProgramCache(capacity=2)
    for i in range(5):
        c.module(f"text {i}", "x", lambda t, n: (t, n))
    assert len(c._modules) == 2 and c.misses == 5
    assert c.module("text 4", "x", lambda t, n: None) == ("text 4", "x") and c.hits == 1
