"""A run that ends in an error still writes its report (``--report``) and timeline (``--perfetto``): the error
located (its kind, message, PTX line, how a GPU ends the launch) and what ran up to it (the timeline, the per-line
counts, each warp's last retired instruction).  One case per way a run ends badly: a deadlock, a kernel fault,
the instruction budget, bad input (a syntax error).  (The deadlock page in Chromium:
tests/trace/test_report_browser.py.)"""
from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path

import pytest

from tcsim.cli import main

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"

# one thread arrives once on an mbarrier that counts 2 arrivals, then polls phase 0 forever
DEADLOCK = HEAD + """.visible .entry k()
{
 .reg .pred %p<2>;
 .reg .b32 %r<4>;
 .shared .align 8 .b64 bar;
 mov.u32 %r1, %tid.x;
 mbarrier.init.shared::cta.b64 [bar], 2;
 mbarrier.arrive.shared::cta.b64 _, [bar];
LOOP:
 mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
 @!%p1 bra LOOP;
 ret;
}
"""

# 32 threads store their %tid.x to out[tid + 16] of a 16-word buffer: every lane out of bounds, the store faults
FAULT = HEAD + """.visible .entry k(.param .u64 out)
{
 .reg .b32 %r<4>;
 .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [out];
 mov.u32 %r1, %tid.x;
 add.u32 %r2, %r1, 16;
 mul.wide.u32 %rd2, %r2, 4;
 add.s64 %rd3, %rd1, %rd2;
 st.global.u32 [%rd3], %r1;
 ret;
}
"""

# a loop of 1000 iterations: 4 instructions each
LOOP = HEAD + """.visible .entry k()
{
 .reg .pred %p<2>;
 .reg .b32 %r<4>;
 mov.u32 %r1, 0;
AGAIN:
 add.u32 %r1, %r1, 1;
 setp.lt.u32 %p1, %r1, 1000;
 @%p1 bra AGAIN;
 ret;
}
"""


def _launch(tmp_path, name, ptx, args="[]", block=(1, 1, 1)):
    p = tmp_path / f"{name}.ptx"
    p.write_text(ptx)
    lf = tmp_path / f"launch_{name}.py"
    lf.write_text(textwrap.dedent(f"""
        import numpy as np
        from tcsim.launch import Launch
        LAUNCH = Launch(ptx={str(p)!r}, block={block!r}, args={args})
    """))
    return lf, ptx.splitlines()


def _data(page: Path) -> dict:
    m = re.search(r'<script type="application/json" id="tcsim-data">(.*?)</script>', page.read_text(), re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def _line(src, start: str) -> int:
    return next(i + 1 for i, t in enumerate(src) if t.strip().startswith(start))


@pytest.fixture(scope="module")
def deadlock(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dead")
    lf, src = _launch(tmp, "dead", DEADLOCK)
    out, pf = tmp / "dead.html", tmp / "dead.pftrace"
    assert main(["run", str(lf), "--report", str(out), "--perfetto", str(pf)]) == 1
    return out, pf, src


def test_deadlock_report(deadlock, capsys):
    out, pf, src = deadlock
    D = _data(out)
    E = D["error"]
    wait = _line(src, "mbarrier.try_wait")
    assert E["kind"] == "deadlock" and E["line"] == wait and E["gpu_error"] == "hang"
    assert "1/2 arrivals pending" in E["message"]
    # what ran: the init and the arrive once each, by the one warp; its last retired instruction is in the loop
    assert D["lines"][str(_line(src, "mbarrier.init"))]["executions"] == 1
    assert D["lines"][str(_line(src, "mbarrier.arrive"))]["executions"] == 1
    [w] = E["warps"]
    assert w["warp"] == 0 and w["line"] in (wait, wait + 1)
    assert any(t["name"] == "warp 0" for t in D["tracks"]) and D["slices"]
    assert D["cycles"] >= E["cycle"] > 0
    # the error is an instant on an "error" row where the run stopped (in the Perfetto trace too)
    [row] = [t for t in D["tracks"] if t["name"] == "error"]
    [mark] = [s for s in D["slices"] if s[0] == row["id"]]
    assert D["cats"][mark[4]] == "finding" and mark[1] == math.ceil(E["cycle"]) and mark[5]["line"] == wait
    assert b"deadlock: the kernel can make no progress" in pf.read_bytes()
    assert D["findings"] and D["findings"][0]["class"] == 4          # the race detector's root cause


def test_kernel_fault_report(tmp_path):
    lf, src = _launch(tmp_path, "fault", FAULT, args="[np.zeros(16, np.uint32)]", block=(32, 1, 1))
    out = tmp_path / "fault.html"
    assert main(["run", str(lf), "--report", str(out)]) == 1
    E = _data(out)["error"]
    st = _line(src, "st.global")
    assert E["kind"] == "memory fault" and E["line"] == st and E["gpu_error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert E["warps"][0]["line"] == st - 1                  # the add before it retired; the store did not
    assert _data(out)["lines"][str(st - 1)]["lanes"] == 32


def test_budget_report(tmp_path):
    lf, src = _launch(tmp_path, "loop", LOOP)
    out = tmp_path / "loop.html"
    assert main(["run", str(lf), "--report", str(out), "--max-instructions", "100", "--no-timing"]) == 1
    D = _data(out)
    E = D["error"]
    assert E["kind"] == "budget exceeded" and "more than 100 warp-instructions" in E["message"]
    assert 100 <= D["stats"]["warp_instructions"] <= 101
    body = [_line(src, "add.u32"), _line(src, "setp.lt"), _line(src, "@%p1 bra")]
    # 1 mov, then 3 per iteration: 33 iterations in the first 100 instructions
    assert [D["lines"][str(n)]["executions"] for n in body] in ([33, 33, 33], [34, 33, 33])
    assert E["line"] in body


BAD_INPUT = {
    # a missing ';': located at the ret line
    "syntax error": (DEADLOCK.replace(" ret;", " ret"), "[]", "ret"),
    # an instruction tcsim does not execute
    "unsupported": (DEADLOCK.replace(" ret;", " suld.b.1d.b32.trap {%r1}, [%rd1, {%r2}];\n ret;").replace(
        " .reg .b32 %r<4>;", " .reg .b32 %r<4>;\n .reg .b64 %rd<2>;"), "[]", "suld"),
    # an argument the kernel does not take: located at its .entry
    "launch error": (DEADLOCK, "[np.zeros(4, np.uint32)]", ".visible .entry"),
}


@pytest.mark.parametrize("kind", sorted(BAD_INPUT))
def test_bad_input_report(kind, tmp_path):
    ptx, args, start = BAD_INPUT[kind]
    lf, src = _launch(tmp_path, "bad", ptx, args=args)
    out = tmp_path / "bad.html"
    assert main(["run", str(lf), "--report", str(out)]) == 1
    D = _data(out)
    E = D["error"]
    assert E["kind"] == kind and E["line"] == _line(src, start) and E["warps"] == []
    assert D["source"] == src and not D["slices"]


def test_backend_both_report_says_why_there_is_no_comparison(tmp_path):
    """``--backend both --report``: without a GPU the page's sim-vs-GPU view gives the reason (and the simulator's
    run); with one (the GPU machine), the outputs compared."""
    out = tmp_path / "both.html"
    rc = main(["run", "tcsim.examples.mma_gemm", "--backend", "both", "--report", str(out)])
    X = _data(out)["diff"]
    if rc == 2:
        assert X["unavailable"].startswith("the GPU back end cannot run here: ") and X["outputs"] == []
    else:
        assert rc == 0 and X["identical"] and len(X["outputs"]) == 5 and all(o["equal"] for o in X["outputs"])
