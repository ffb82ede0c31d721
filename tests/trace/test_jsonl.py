"""The JSONL trace for tools (schema 3, README "JSONL trace"): a header, records in cycle order, and compact records
that lose nothing -- each record decoded here (by this file's own decoder: template merge, base64 / affine lane
values, runs) gives back exactly what its event carried: register values per active lane, each lane's addresses,
the bytes of an agent's block access, the TMEM cells of an MMA's accumulator write; tcsim.observe.read_trace gives
back the same records."""
from __future__ import annotations

import base64
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
    assert head["kind"] == "header" and head["schema"] == "tcsim-trace" and head["version"] == 3
    assert head["kernel"] == launch.kernel and head["arch"] == "sm_100a" and head["timing"] is True
    assert head["clock_mhz"] == arch_config("sm_100a").sm_clock_mhz
    assert head["block"] == list(launch.block) and head["records"] == len(lines) - 1 == len(events)
    assert set(head["legend"]) >= {"inst", "mem", "sync", "stall"}
    cycles = [json.loads(x)["cycle"] for x in lines[1:]]
    assert cycles == sorted(cycles)
    # the events arrive out of cycle order (a stall is published when it ends), the trace is sorted
    assert [e.cycle for e in events] != sorted(e.cycle for e in events)


def _lane_values(v, n: int) -> tuple:
    """(values, bytes per lane or None where exact) of an encoded register write of ``n`` active lanes."""
    if isinstance(v, int):
        return [v] * n, None
    if isinstance(v, list):
        return [v[0] + k * v[1] for k in range(n)], None
    raw = base64.b64decode(v)
    w = len(raw) // n
    assert w in (4, 8, 16) and len(raw) == w * n
    return [int.from_bytes(raw[k * w:(k + 1) * w], "little") for k in range(n)], w


def _decode(lines: list) -> list:
    """Each record of the trace whole: its template's fields and its own."""
    templates = json.loads(lines[0])["templates"]
    out = []
    for x in lines[1:]:
        r = json.loads(x)
        out.append({**templates[r.pop("t")], **r})
    return out


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
        rs, pos, runs = [], 0, r["runs"]
        for i in range(0, len(runs), 2):
            a = pos + runs[i]
            rs.append((a, a + runs[i + 1]))
            pos = a + runs[i + 1]
    return {b for a, e in rs for b in range(a, e)}


def test_records_lose_nothing(walkthrough):
    _, _, events, lines = walkthrough
    recs = _decode(lines)
    events = sorted(events, key=lambda e: e.cycle)          # the trace's order: stable within a cycle
    assert len(recs) == len(events)
    seen = set()
    for r, e in zip(recs, events):
        assert (r["kind"], r["cycle"], tuple(r["cta"]), r["agent"]) == (e.kind, e.cycle, tuple(e.cta), e.agent)
        if e.kind == "inst":
            n = bin(e.mask).count("1")
            assert r["mask"] == e.mask and r["text"] == e.text and r["line"] == e.line
            assert set(r["writes"]) == set(e.writes)
            for reg, vals in e.writes.items():
                enc = r["writes"][reg]
                got, w = _lane_values(enc, n)
                assert got == [int(v) % (1 << 8 * w) if w else int(v) for v in vals], reg
                seen.add(f"writes {type(enc).__name__}")
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
                seen.add("strided" if "strided" in r else f"{len(r['runs']) // 2 > 1} runs")
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
    assert seen == {"inst", "warp mem", "tmem", "agent mem", "sync", "stall", "writes int", "writes list",
                    "writes str", "False runs"}, seen


def test_read_trace_gives_back_whole_records(walkthrough, tmp_path):
    """tcsim.observe.read_trace (lines, a path, a .gz path) gives the header and each record whole: template merged,
    ``kind, cycle, cta, agent`` first, writes as lane-value lists, runs as ranges."""
    from tcsim.observe import read_trace
    _, _, events, lines = walkthrough
    mine = _decode(lines)
    got = list(read_trace(lines))
    assert got[0] == json.loads(lines[0]) and len(got) == len(lines)
    for r, g in zip(mine, got[1:]):
        assert list(g)[:4] == ["kind", "cycle", "cta", "agent"]
        if "writes" in r:
            n = bin(r["mask"]).count("1")
            assert g["writes"] == {k: _lane_values(v, n)[0] for k, v in r["writes"].items()}
        if "runs" in r:
            assert sorted(b for a, z in g["ranges"] for b in range(a, z)) == sorted(_bytes(r))
        assert {k: v for k, v in g.items() if k not in ("writes", "ranges")} == \
            {k: v for k, v in r.items() if k not in ("writes", "runs")}
    p = tmp_path / "t.jsonl.gz"
    with gzip.open(p, "wt") as f:
        f.write("\n".join(lines) + "\n")
    assert list(read_trace(str(p))) == got


def test_synthetic_encodings_round_trip():
    """Hand-made events through the tracer: a swizzled agent read (many short ranges: runs of gaps and lengths),
    a 2-D box (strided), writes of negative, 64-bit, 128-bit and affine lane values; the records the tracer
    writes decode (here) to the bytes and values put in, and one template carries what the records share."""
    from tcsim.observe import InstRetired, JsonlTracer, MemAccess
    swz = (2048, 2176, 2336, 4064, 4096)                       # 32-byte pieces, two of them adjacent
    box = tuple(1000 + 256 * k for k in range(6))              # 6 rows of 64 bytes, pitch 256
    vals = {"%r1": [-1 - k * k for k in range(32)], "%rd1": [(1 << 40) + k * k for k in range(32)],
            "%r2": [7 + 3 * k for k in range(32)], "%q": [(1 << 100) + k * k for k in range(32)], "%r3": [5] * 32}
    evs = [MemAccess(cycle=3, cta=(0, 0, 0), agent="tensor_pipe", op="ld", space="shared::cta", proxy="async",
                     addrs=swz, size=32, op_id=4),
           MemAccess(cycle=1, cta=(0, 0, 0), agent="tma", op="st", space="shared::cta", proxy="async",
                     addrs=box, size=64, op_id=2),
           InstRetired(cycle=2, cta=(1, 0, 0), agent="warp", warp=0, pc=7, line=12, text="x;", mask=(1 << 32) - 1,
                       writes=vals),
           InstRetired(cycle=2, cta=(1, 0, 0), agent="warp", warp=1, pc=7, line=12, text="x;", mask=(1 << 32) - 1,
                       writes={"%r3": [5] * 32})]
    buf = io.StringIO()
    tr = JsonlTracer(buf)
    for ev in evs:
        tr.on_event(ev)
    tr.close()
    lines = buf.getvalue().splitlines()
    raw = [json.loads(x) for x in lines[1:]]
    recs = _decode(lines)
    assert [r["cycle"] for r in recs] == [1, 2, 2, 3]
    assert recs[0]["strided"] == [1000, 64, 256, 6] and _bytes(recs[0]) == {b for a in box for b in range(a, a + 64)}
    assert recs[3]["runs"] == [2048, 32, 96, 32, 128, 32, 1696, 64]          # gaps: 2080..2176, 2208..2336, ...
    assert _bytes(recs[3]) == {b for a in swz for b in range(a, a + 32)}
    w = recs[1]["writes"]
    assert w["%r3"] == 5 and w["%r2"] == [7, 3]
    assert _lane_values(w["%r1"], 32) == ([(-1 - k * k) % 2 ** 32 for k in range(32)], 4)
    assert _lane_values(w["%rd1"], 32) == (vals["%rd1"], 8)
    assert _lane_values(w["%q"], 32) == (vals["%q"], 16)
    # the two warps' records of pc 7 share a template (cta, agent, text, line, mask): each keeps cycle, warp, writes
    assert raw[1]["t"] == raw[2]["t"] and "text" not in raw[1]
    assert raw[2] == {"t": raw[1]["t"], "cycle": 2, "warp": 1, "writes": {"%r3": 5}}
    assert recs[2]["writes"] == {"%r3": 5} and recs[2]["text"] == "x;" and recs[2]["cta"] == [1, 0, 0]


def test_gz_path_is_compressed_and_readable(tmp_path):
    from tcsim.examples.bugs.missing_proxy_fence import make_launch
    p = tmp_path / "t.jsonl.gz"
    run_launch(make_launch(), trace=str(p))
    lines = gzip.open(p, "rt").read().splitlines()
    assert json.loads(lines[0])["kind"] == "header" and '"templates"' in lines[0]
    from tcsim.observe import read_trace
    assert any(r["kind"] == "inst" for r in read_trace(str(p)))


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
    assert sizes[0] <= 2_550_000 // 10          # issue 19: at most a tenth of schema 1's 2.55 MB


def test_array_paths_agree_with_plain_oracles():
    """The record encoders' array paths (issue 19's cost: an agent's block of many ranges, a warp's many TMEM cells
    per lane, lane values) against oracles written here from the schema: the bytes a ``runs`` / ``strided`` field
    covers are exactly the union of the ranges put in; a warp access decodes (lane_mask / per_lane / addr / stride /
    inner, or the lists) to each lane's addresses in order; ``_affine`` is the common difference."""
    import numpy as np
    from tcsim.observe import _affine, _block_access, _warp_addressing

    rng = np.random.default_rng(19)
    for trial in range(60):
        n = int(rng.integers(1, 400))
        size = int(rng.choice([1, 4, 16, 128]))
        if trial % 3 == 0:                                   # a box: rows at a pitch, some touching
            pitch = int(rng.choice([size, 2 * size, 256]))
            addrs = [5000 + pitch * k for k in range(n)]
        else:
            addrs = [int(x) for x in rng.integers(0, 8 * n * size + 1, n)]
        d = _block_access(addrs, size)
        want = {b for a in addrs for b in range(a, a + size)}
        if "strided" in d:
            s0, ln, step, cnt = d["strided"]
            got = {s0 + step * k + j for k in range(cnt) for j in range(ln)}
            assert cnt >= 3
        else:
            got, pos = set(), None
            runs = d["runs"]
            for i in range(0, len(runs), 2):
                a = runs[i] if pos is None else pos + runs[i]
                assert pos is None or runs[i] > 0              # merged: a gap between any two runs
                got |= set(range(a, a + runs[i + 1]))
                pos = a + runs[i + 1]
        assert got == want, (trial, addrs[:8], size)
    for trial in range(60):
        per = int(rng.choice([1, 2, 4, 8, 16]))
        lanes_in = sorted(int(x) for x in rng.choice(32, int(rng.integers(4, 33)), replace=False))
        base, stride, inner = int(rng.integers(0, 1 << 20)), int(rng.integers(-64, 65)), int(rng.integers(0, 9))
        cells = {ln: [base + stride * i + inner * j for j in range(per)] for i, ln in enumerate(lanes_in)}
        if trial % 4 == 1:                                   # irregular addresses
            cells = {ln: [int(x) for x in rng.integers(0, 1 << 20, per)] for ln in lanes_in}
        if trial % 4 == 2 and len(lanes_in) > 1:             # one lane with an extra address
            cells[lanes_in[0]] = cells[lanes_in[0]] + [7]
        pairs = [(ln, a) for j in range(max(len(v) for v in cells.values()))
                 for ln in lanes_in for a in cells[ln][j:j + 1]]          # lane-interleaved, as a .x8 load lists them
        d = _warp_addressing([a for _, a in pairs], [ln for ln, _ in pairs])
        if "lanes" in d:
            got = {}
            for ln, a in zip(d["lanes"], d["addrs"]):
                got.setdefault(ln, []).append(a)
        else:
            lanes = [ln for ln in range(32) if d["lane_mask"] >> ln & 1]
            p = d.get("per_lane", 1)
            if "addrs" in d:
                got = {ln: d["addrs"][i * p:(i + 1) * p] for i, ln in enumerate(lanes)}
            else:
                got = {ln: [d["addr"] + d["stride"] * i + d.get("inner", 0) * j for j in range(p)]
                       for i, ln in enumerate(lanes)}
        assert got == cells, (trial, d)
    for xs in ([3], [3, 3, 3], [1, 4, 7, 10], [1, 4, 7, 11], [5, 3, 1], [0, 2, 2, 4], [2, 0, 2], [-4, 0, 4, 8, 12]):
        diffs = {b - a for a, b in zip(xs, xs[1:])}
        assert _affine(xs) == (0 if len(xs) < 2 else diffs.pop() if len(diffs) == 1 else None), xs
