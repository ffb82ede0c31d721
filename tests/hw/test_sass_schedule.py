"""The static SASS schedule (calib/sass_schedule.py) on saved ptxas 13.0 listings: it explains what the PTX-level
timing model cannot -- the same ldmatrix + mma.sync k-tile loop costs 429 clk per k-tile on the H100 in
loop_ldsm_mma_1w and ~690 (static) in val_pipe_gemm_*, because ptxas allocates the B fragments differently."""
import json
from pathlib import Path

import numpy as np
import pytest

from calib.microbench import timeline as T
from calib.microbench.record import GOLDEN
from calib.sass_schedule import clock_regions, parse_listing, static_cycles

SASS = GOLDEN / "sass"
META = json.loads((GOLDEN / "meta.json").read_text())


@pytest.fixture(scope="module")
def loop():
    return parse_listing((SASS / "loop_ldsm_mma.sass").read_text())


@pytest.fixture(scope="module")
def pipe():
    return parse_listing((SASS / "pipe_gemm.sass").read_text())


def test_control_bits_are_decoded(pipe):
    by = {i.addr: i for i in pipe}
    ldsm, hmma = by[0x0c60], by[0x0c70]
    assert ldsm.opcode == "LDSM.16.M88.4" and ldsm.write_barrier is not None
    assert hmma.opcode == "HMMA.16816.F32" and hmma.wait_mask >> ldsm.write_barrier & 1
    assert all(0 <= i.stall <= 15 for i in pipe)
    assert [i.addr for i in pipe] == sorted(i.addr for i in pipe)


def test_loop_case_static_schedule_matches_the_h100(loop):
    (a0, a1), _, (b0, b1) = clock_regions(loop)[:3]           # 1-k-tile segment, the frame's gap, 4-k-tile one
    per_ktile = (static_cycles(loop, b0, b1) - static_cycles(loop, a0, a1)) / 3
    h100 = META["cases"]["loop_ldsm_mma_1w"]["values"]["cycles_per_ktile"]
    assert per_ktile == pytest.approx(h100, rel=0.05)


def test_pipe_gemm_static_k_tile_is_the_serial_chain(loop, pipe):
    """pipe_gemm's k-tile body (first LDSM to the release): ptxas's serial LDSM -> HMMA -> LDSM register reuse
    makes its static schedule ~1.6x the loop case's."""
    (a0, a1), _, (b0, b1) = clock_regions(loop)[:3]
    loop_ktile = (static_cycles(loop, b0, b1) - static_cycles(loop, a0, a1)) / 3
    assert static_cycles(pipe, 0x0c50, 0x10e0) > 1.5 * loop_ktile


def test_instrumented_pipe_gemm_k_tile_matches_its_h100_timeline():
    """The timeline copy of val_pipe_gemm_3stage compiles to other SASS (ptxas schedules the k-tile around the
    stamps, without the serial chain): its k-tile region, between the cons_full and cons_computed stamps'
    clock reads, has a static schedule within 15% of that copy's H100 consumer time per k-tile (timelines,
    median over the 4 consumer warps and 8 k-tiles).  Like with like: the static schedule of the SASS that ran."""
    instrs = parse_listing((SASS / "pipe_gemm_timeline.sass").read_text())
    lo, hi = max(clock_regions(instrs), key=lambda r: sum(r[0] <= i.addr <= r[1] and i.opcode.startswith("HMMA")
                                                              for i in instrs))
    assert sum(lo <= i.addr <= hi and i.opcode.startswith("HMMA") for i in instrs) == 32   # 4 k-steps x 8
    tl = Path(GOLDEN / "timelines")
    meta = json.loads((tl / "timelines.json").read_text())["cases"]["val_pipe_gemm_3stage"]
    ev = np.load(tl / "timelines.npz")["val_pipe_gemm_3stage"]
    rows = T.summarize(ev, meta["marks"], meta["block"])
    ktiles = []
    for w in range(4):
        t = {(n, i): c for n, i, c in rows[(0, w)]}
        ktiles += [t[("cons_computed", k)] - t[("cons_full", k)] for k in range(8)]
    assert static_cycles(instrs, lo, hi) == pytest.approx(float(np.median(ktiles)), rel=0.15)
