"""The JSONL trace for tools (schema 2, README "JSONL trace"): a header, records in cycle order, and compact records
that lose nothing -- each record decoded here (by this file's own decoder) gives back exactly what its event
carried: register values per active lane, each lane's addresses, the bytes of an agent's block access, the TMEM
cells of an MMA's accumulator write."""
from __future__ import annotations

import gzip
import io
import json

import pytest

from tcsim.cli import _launch_of
from tcsim.launch import run_launch
from tcsim.observe import EventRecorder
from tcsim.timing.params import arch_config


@pytest.fixture(scope="module")
def walkthrough():
    """tcgen05_walkthrough (TMA loads, tcgen05.mma into TMEM, tcgen05.ld, global stores), timing on."""
    launch = _launch_of("tcsim.examples.tcgen05_walkthrough")
    rec = EventRecorder(kinds=("inst", "mem", "sync", "stall"))
    buf = io.StringIO()
    res = run_launch(launch, timing=True, observers=[rec], trace=buf)
    lines = buf.getvalue().splitlines()
    return launch, res, [e for e in rec.events if e.traced], lines


def test_header_then_records_in_cycle_order(walkthrough):
    launch, res, events, lines = walkthrough
    head = json.loads(lines[0])
    assert head["kind"] == "header" and head["schema"] == "tcsim-trace" and head["version"] == 2
    assert head["kernel"] == launch.kernel and head["arch"] == "sm_100a" and head["timing"] is True
    assert head["clock_mhz"] == arch_config("sm_100a").sm_clock_mhz
    assert head["block"] == list(launch.block) and head["records"] == len(lines) - 1 == len(events)
    assert set(head["legend"]) >= {"inst", "mem", "sync", "stall"}
    cycles = [json.loads(x)["cycle"] for x in lines[1:]]
    assert cycles == sorted(cycles)
    # the events arrive out of cycle order (a stall is published when it ends), the trace is sorted
    assert [e.cycle for e in events] != sorted(e.cycle for e in events)


def _hex_lanes(s: str, n: int) -> list:
    if s.startswith("*"):
        return [int(s[1:], 16)] * n
    w = len(s) // n
    return [int(s[i * w:(i + 1) * w], 16) for i in range(n)]


def _warp_pairs(r: dict) -> list:
    """(lane, address) of each address of a warp's access record."""
    if "lane_mask" in r:
        lanes = [i for i in range(32) if r["lane_mask"] >> i & 1]
        per = r.get("per_lane", 1)
        lanes = [x for x in lanes for _ in range(per)]
    else:
        lanes = r["lanes"]
    if "addrs" in r:
        return sorted(zip(lanes, r["addrs"]))
    per = r.get("per_lane", 1)
    out = []
    for i, lane in enumerate(lanes):
        out.append((lane, r["addr"] + (i // per) * r["stride"] + (i % per) * r.get("inner", 0)))
    return sorted(out)


def _bytes(r: dict) -> set:
    if "strided" in r:
        a, ln, pitch, n = r["strided"]
        rs = [(a + k * pitch, a + k * pitch + ln) for k in range(n)]
    else:
        rs = r["ranges"]
    return {b for a, e in rs for b in range(a, e)}


def test_records_lose_nothing(walkthrough):
    _, _, events, lines = walkthrough
    recs = [json.loads(x) for x in lines[1:]]
    events = sorted(events, key=lambda e: e.cycle)          # the trace's order: stable within a cycle
    seen = set()
    for r, e in zip(recs, events):
        assert (r["kind"], r["cycle"], tuple(r["cta"]), r["agent"]) == (e.kind, e.cycle, tuple(e.cta), e.agent)
        if e.kind == "inst":
            n = bin(e.mask).count("1")
            assert r["mask"] == e.mask and r["text"] == e.text and r["line"] == e.line
            assert set(r["writes"]) == set(e.writes)
            for reg, vals in e.writes.items():
                got = _hex_lanes(r["writes"][reg], n)
                w = 1 << (4 * (len(r["writes"][reg].lstrip("*")) // (1 if r["writes"][reg][0] == "*" else n)))
                assert got == [int(v) % w for v in vals], reg
            seen.add("inst")
        elif e.kind == "mem":
            assert (r["op"], r["space"], r["proxy"], r["size"]) == (e.op, e.space, e.proxy, e.size)
            if e.lanes:
                assert _warp_pairs(r) == sorted(zip(map(int, e.lanes), map(int, e.addrs)))
                seen.add("warp mem")
            elif e.space == "tmem":
                cells = {(lo_l + i, lo_c + j) for lo_l, hi_l, lo_c, hi_c in r["tmem"]
                         for i in range(hi_l - lo_l) for j in range(hi_c - lo_c)}
                assert cells == set(e.tmem_cells())
                assert len(json.dumps(r)) < 300          # one MMA's accumulator: a rectangle, not 16,384 cells
                seen.add("tmem")
            else:
                assert _bytes(r) == {b for a, z in e.ranges() for b in range(a, z)}
                seen.add("agent mem")
        elif e.kind == "sync":
            assert r["op"] == e.op and r.get("op_id") == e.op_id
            for k, v in e.detail.items():
                key = f"detail_{k}" if k in ("kind", "cycle", "cta", "agent") else k
                if k == "lanes" and "lane_mask" in r:
                    assert [i for i in range(32) if r["lane_mask"] >> i & 1] == list(v)
                else:
                    assert r.get(key) == json.loads(json.dumps(list(v) if isinstance(v, tuple) else v)), k
            seen.add("sync")
        else:
            assert (r["warp"], r["reason"], r["detail"], r["cycles"]) == (e.warp, e.reason, e.detail, e.cycles)
            seen.add("stall")
    assert seen == {"inst", "warp mem", "tmem", "agent mem", "sync", "stall"}


def test_gz_path_is_compressed_and_readable(tmp_path):
    from tcsim.examples.bugs.missing_proxy_fence import make_launch
    p = tmp_path / "t.jsonl.gz"
    run_launch(make_launch(), trace=str(p))
    lines = gzip.open(p, "rt").read().splitlines()
    assert json.loads(lines[0])["kind"] == "header" and any('"kind":"inst"' in x for x in lines[1:])


def test_readme_trace_sizes_are_measured(tmp_path):
    """The README's sizes of the gemm_async trace (plain and .gz, written by the CLI as it documents) are what
    the CLI writes now."""
    import re
    from pathlib import Path

    from tcsim.cli import main

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    plain = int(re.search(r"--trace out\.jsonl` the trace is (\d+) KB", text).group(1))
    packed = int(re.search(r"`out\.jsonl\.gz` is (\d+) KB", text).group(1))
    sizes = []
    for name in ("out.jsonl", "out.jsonl.gz"):
        p = tmp_path / name
        assert main(["run", "tcsim.examples.gemm_async", "--trace", str(p)]) == 0
        sizes.append(p.stat().st_size)
    assert [round(n / 1000) for n in sizes] == [plain, packed], sizes
