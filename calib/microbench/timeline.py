"""Event timelines of the validation kernels: where inside a kernel the cycles go, on the GPU and in tcsim.

A validation case gives one number per CTA (exit - entry).  To see *which* part of a kernel a model misses, a
timeline copy of the kernel stores ``{event id, %clock64}`` at named points (after a wait succeeded, after an
issue, before a release...) from lane 0 of every warp into a per-thread event buffer, one extra last kernel
parameter.  The same copy runs on the GPU and in tcsim (whose ``%clock64`` is its cycle count), so the two
timelines compare event by event.  Each stamp is four instructions (a clock read, an id move, one
``st.global.v2.u64`` in lane 0 only, a pointer add) placed outside the inner loops, so it shifts the kernel by a
few cycles per event, the same way on both.  (Stamps stored from every thread -- 512 bytes per warp and event --
loaded the H100's store path enough to slow a store-heavy consumer by half; lane 0 alone stores 16 bytes.)

    python -m calib.microbench.timeline record --backend gpu|sim --out DIR [--case GLOB ...]
    python -m calib.microbench.timeline show DIR [--sim DIR] [--case GLOB ...]

``record`` writes ``DIR/timelines.npz`` (``<case>`` = int64 ``[thread, slot, 2]`` = (event id, clock relative to
the CTA's first entry), id -1 for an unused slot) and ``DIR/timelines.json`` (event names, launch shape).
``show`` prints, per warp (its lane 0), each event's median cycle over the occurrences, and with ``--sim`` the
simulator's beside it.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calib.golden import sha256
from tcsim.launch import Launch

from . import cases as C

SLOTS = 128                       # events per thread


@dataclass(frozen=True)
class Mark:
    name: str
    where: str                    # "before" | "after"
    text: str                     # a substring of the PTX line (first whitespace run matches any whitespace)


#: startup marks every validation kernel with TMA / bulk copies shares: the stamp prologue done (``@entry``),
#: mbarrier initialisation fenced (thread 0), the CTA barrier passed, the producer's first expect_tx
STARTUP = (
    Mark("entry", "after", "@entry"),
    Mark("init_fenced", "after", "fence.proxy.async.shared::cta;"),
    Mark("synced", "after", "bar.sync 0;"),
    Mark("expect_tx", "after", "mbarrier.arrive.expect_tx.shared::cta.b64"),
)

#: the marked points of each validation kernel (the substrings are in the kernels' PTX)
MARKS = {
    "pipe_gemm": STARTUP + (
        Mark("prod_issued_a", "after", "[%r15], [%rd1, {%r17, %r63}], [%r7];"),
        Mark("prod_free", "after", "@!%p6 bra $L_prod_wait;"),
        Mark("prod_issued", "after", "[%r16], [%rd2, {%r17, %r18}], [%r7];"),
        Mark("cons_full", "after", "@!%p6 bra $L_cons_wait;"),
        Mark("cons_computed", "before", "mbarrier.arrive.shared::cta.b64 _, [%r7];"),
        Mark("cons_stored", "before", "$L_done:"),
    ),
    "ws": STARTUP + (
        Mark("prod_free", "after", "@!%p6 bra $L_prod_wait;"),
        Mark("prod_issued", "after", "[%r15], [%rd1, {%r18, %r17}], [%r7];"),
        Mark("cons_full", "after", "@!%p6 bra $L_cons_wait;"),
        Mark("cons_done", "before", "mbarrier.arrive.shared::cta.b64 _, [%r7];"),
    ),
    "tma_mma_gemm": STARTUP + (
        Mark("issued_a", "after", "[%r3], [%rd1, {%r5, %r5}], [%r2];"),
        Mark("issued", "before", "$L_issued:"),
        Mark("loaded", "after", "@!%p2 bra $L_wait;"),
        Mark("computed", "before", "st.global.v2.f32 [%rd8], {%f0, %f1};"),
    ),
    "bulk_pipeline": STARTUP + (
        Mark("prod_free", "after", "@!%p5 bra $L_prod_wait;"),
        Mark("prod_issued", "after", "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"),
        Mark("cons_full", "after", "@!%p8 bra $L_cons_wait;"),
        Mark("cons_done", "before", "mbarrier.arrive.shared::cta.b64 %rd9, [%r28];"),
    ),
    "mma_gemm": (
        Mark("entry", "after", "@entry"),
        Mark("loaded_ab", "before", "setp."),
        Mark("pre_mma", "before", "mma.sync.aligned"),
        Mark("post_mma", "before", "st.global.f32 [%rd11], %f4;"),
    ),
}


def marks_for(case) -> tuple:
    key = case.params.get("example") if case.group == "example" else case.group
    return MARKS.get(key, ())


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.strip())


def instrument_events(ptx: str, kernel: str, marks) -> str:
    """A copy of ``ptx`` whose entry ``kernel`` takes one extra last parameter ``__tl_buf`` (u64 pointer to
    ``SLOTS`` x 16 bytes per thread) and, in lane 0 of every warp, stores {mark index, %clock64} at every mark
    (the other lanes read the clock and move their pointer but store nothing: one 16-byte store per warp and
    mark, so the stamps barely load the kernel's own store path).  The stamps start after the first
    ``%clock64`` read of the kernel (its entry clock)."""
    m = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\(", ptx)
    if not m:
        raise ValueError(f"no .entry {kernel} in the PTX")
    close = ptx.index(")", m.end())
    head, body = ptx[:close] + ",\n\t.param .u64 __tl_buf\n", ptx[close:]
    lines = body.split("\n")
    out, placed, found = [], False, [0] * len(marks)
    stamp = ("\tmov.u64 \t%__tl_c, %clock64;\n\tmov.u64 \t%__tl_i, {k};\n"
             "\t@%__tl_l st.global.v2.u64 \t[%__tl_p], {{%__tl_i, %__tl_c}};\n\tadd.s64 \t%__tl_p, %__tl_p, 16;")
    pro = ("\t.reg .b64 \t%__tl_c, %__tl_i, %__tl_p, %__tl_q;\n\t.reg .b32 \t%__tl_a, %__tl_b, %__tl_d;\n"
           "\t.reg .pred \t%__tl_l;\n\tmov.u32 \t%__tl_a, %laneid;\n\tsetp.eq.u32 \t%__tl_l, %__tl_a, 0;\n"
           "\tmov.u32 \t%__tl_a, %tid.x;\n\tmov.u32 \t%__tl_b, %ctaid.x;\n\tmov.u32 \t%__tl_d, %ntid.x;\n"
           "\tmad.lo.u32 \t%__tl_a, %__tl_b, %__tl_d, %__tl_a;\n\tld.param.u64 \t%__tl_p, [__tl_buf];\n"
           "\tcvta.to.global.u64 \t%__tl_p, %__tl_p;\n"
           f"\tmul.wide.u32 \t%__tl_q, %__tl_a, {SLOTS * 16};\n\tadd.s64 \t%__tl_p, %__tl_p, %__tl_q;")
    entry = [k for k, mk in enumerate(marks) if mk.text == "@entry"]
    for line in lines:
        code = _norm(line.split("//")[0])
        before = [k for k, mk in enumerate(marks) if mk.where == "before" and code and _norm(mk.text) in code]
        after = [k for k, mk in enumerate(marks) if mk.where == "after" and code and _norm(mk.text) in code]
        for k in before:
            out.append(stamp.format(k=k))
            found[k] += 1
        out.append(line)
        for k in after:
            out.append(stamp.format(k=k))
            found[k] += 1
        if not placed and "%clock64" in code:
            out.append(pro)
            placed = True
            for k in entry:
                out.append(stamp.format(k=k))
                found[k] += 1
    missing = [marks[k].name for k, n in enumerate(found) if n == 0]
    if missing or not placed:
        raise ValueError(f"timeline marks not found in {kernel}: {missing or 'entry clock'}")
    return head + "\n".join(out)


def build(case, base: Launch | None = None) -> Launch:
    """The timeline copy of ``case``'s launch (``base``: that launch, when already built)."""
    base = base or case.build()
    text = instrument_events(base.ptx_text()[0], base.kernel, marks_for(case))
    nthreads = base.grid[0] * base.block[0]
    buf = np.zeros((nthreads, SLOTS, 2), dtype=np.int64)
    buf[:, :, 0] = -1
    return Launch(ptx=text, kernel=base.kernel, grid=base.grid, block=base.block, cluster=base.cluster,
                  dynamic_smem=base.dynamic_smem, args=list(base.args) + [buf], name=case.name + ":timeline")


def ptx_sha(case) -> str:
    return sha256(build(case).ptx_text()[0].encode())


def sequences(ev: np.ndarray, names, block: int) -> dict:
    """{(cta, warp): tuple of event names of the warp's lane 0, in order}: the control path a timeline took."""
    return {k: tuple(n for n, _, _ in rows) for k, rows in summarize(ev, names, block).items()}


def run(case, backend: str) -> np.ndarray:
    """[thread, slot, 2] (event id, clock relative to the CTA's first entry)."""
    base = case.build()
    launch = build(case, base)
    if backend == "gpu":
        from tcsim.hw.launcher import run_on_gpu
        res = run_on_gpu(launch, timeout=60)
        if not res.ok:
            raise RuntimeError(f"{case.name}: {res.error}: {res.error_detail}")
        outs = res.outputs
    else:
        from tcsim.launch import run_launch
        outs = run_launch(launch, seed=None, timing=True).outputs
    ev = np.asarray(outs[-1]).view(np.int64).reshape(-1, SLOTS, 2).copy()
    clk = np.asarray(outs[C.clk_index(case, base)], dtype=np.uint64).reshape(launch.grid[0], -1, 2)
    t0 = clk[:, :, 0].min(axis=1).astype(np.int64)
    per = launch.block[0]
    for t in range(ev.shape[0]):
        used = ev[t, :, 0] >= 0
        ev[t, used, 1] -= t0[t // per]
    return ev


def summarize(ev: np.ndarray, names, block: int) -> dict:
    """{(cta, warp): [(event name, occurrence, cycle)]} from each warp's lane 0 (the first thread of the warp
    with events)."""
    out: dict = {}
    for t in range(ev.shape[0]):
        cta, tid = divmod(t, block)
        key = (cta, tid // 32)
        if key in out:
            continue
        used = ev[t, :, 0] >= 0
        if not used.any():
            continue
        seen: dict = {}
        rows = []
        for k, c in ev[t, used]:
            n = names[int(k)]
            rows.append((n, seen.get(n, 0), int(c)))
            seen[n] = seen.get(n, 0) + 1
        out[key] = rows
    return out


def record(cases, out: Path, backend: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    arrays, meta = {}, {}
    for case in cases:
        ev = run(case, backend)
        arrays[case.name] = ev
        launch = case.build()
        meta[case.name] = {"marks": [mk.name for mk in marks_for(case)], "block": launch.block[0],
                           "grid": launch.grid[0], "ptx_sha256": ptx_sha(case)}
        print(f"{case.name}: {int((ev[:, :, 0] >= 0).sum())} events", flush=True)
    np.savez_compressed(out / "timelines.npz", **arrays)
    (out / "timelines.json").write_text(json.dumps({"backend": backend, "command": " ".join(sys.argv),
                                                    "cases": meta}, indent=1))


def show(gpu: Path, sim: Path | None, globs) -> None:
    meta = json.loads((gpu / "timelines.json").read_text())["cases"]
    g = np.load(gpu / "timelines.npz")
    s = np.load(sim / "timelines.npz") if sim else None
    for name, m in meta.items():
        if globs and not any(fnmatch.fnmatchcase(name, x) for x in globs):
            continue
        print(f"== {name}")
        a = summarize(g[name], m["marks"], m["block"])
        b = summarize(s[name], m["marks"], m["block"]) if s is not None and name in s else {}
        for key in sorted(a):
            if key[0] != 0:
                continue
            rows_b = {(n, i): c for n, i, c in b.get(key, [])}
            line = []
            for n, i, c in a[key]:
                sc = rows_b.get((n, i))
                line.append(f"{n}#{i}={c}" + (f"/{sc}" if sc is not None else ""))
            print(f"  cta {key[0]} warp {key[1]}: " + "  ".join(line))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.microbench.timeline")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--backend", choices=("gpu", "sim"), default="sim")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--case", action="append", default=[])
    sh = sub.add_parser("show")
    sh.add_argument("gpu", type=Path)
    sh.add_argument("--sim", type=Path)
    sh.add_argument("--case", action="append", default=[])
    a = ap.parse_args(argv)
    if a.cmd == "record":
        cases = [c for c in C.CASES.values() if c.kind == "validation" and marks_for(c)
                 and (not a.case or any(fnmatch.fnmatchcase(c.name, g) for g in a.case))]
        record(cases, a.out, a.backend)
    else:
        show(a.gpu, a.sim, a.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
