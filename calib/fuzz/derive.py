"""Locate, without a GPU, the instructions responsible for recorded simulator/GPU mismatches ("derived" points).

A recorded campaign (:mod:`calib.fuzz.record`) keeps the GPU's final register dump of every program the simulator
disagreed with.  For each differing register of a thread, :func:`derive` replays the program on the simulator
with an observer and finds the *last instruction that wrote that register in that thread*.  If every source
register of that instruction held, when it executed, the value it still holds at the end and that final value
agrees with the GPU, then the instruction's inputs are confirmed by the hardware and its GPU result is the
register's final GPU value: a single-instruction data point (instruction text, input values, simulator result,
GPU result) -- exactly what a hardware probe of that one instruction would give.  Points whose inputs are not
confirmed are counted, not reported.

``python -m calib.fuzz.derive --gpu FILE.npz [--seeds A-B] [--jobs J] [--out points.json]`` prints the points
grouped by instruction form (opcode and qualifiers), the forms with the most points first.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from .generator import STRIDE, generate, output_fields

_TOK = re.compile(r"%[a-z]+\d+")
_POOL = re.compile(r"^%(r|rd|h|p)\d+$")


def _final_fields(buf: bytes) -> list:
    """Per thread: {register: value} of the output dump (predicates split into %p0..%p3)."""
    a = np.frombuffer(buf, dtype=np.uint8)
    out = []
    for t in range(len(a) // STRIDE):
        rec = a[t * STRIDE:(t + 1) * STRIDE]
        d = {}
        for name, off, size in output_fields():
            v = int.from_bytes(rec[off:off + size].tobytes(), "little")
            if name == "%p*":
                for i in range(4):
                    d[f"%p{i}"] = (v >> i) & 1
            else:
                d[name] = v
        out.append(d)
    return out


def _operands(text: str):
    """(destination register names, source register names) of one instruction's text."""
    t = text.strip().rstrip(";")
    guard = []
    if t.startswith("@"):
        g, t = t.split(None, 1)
        guard = _TOK.findall(g)
    parts = t.split(None, 1)
    if len(parts) < 2:
        return [], guard
    ops = parts[1]
    if ops.startswith("{"):
        dst, rest = ops[1:].split("}", 1)
    else:
        dst, _, rest = ops.partition(",")
    return _TOK.findall(dst), _TOK.findall(rest) + guard


class _Recorder:
    kinds = ("inst",)          # the observation bus delivers (and builds) only retired-instruction records

    def __init__(self):
        self.events = []

    def on_event(self, ev):
        if ev.kind == "inst":
            f = ev.fields
            self.events.append((f["warp"], f["text"], int(f["mask"]), {k: list(v) for k, v in f["writes"].items()}))


def _simulate_with_history(prog):
    from tcsim.launch import Launch, run_launch

    rec = _Recorder()
    launch = Launch(ptx=prog.render(), kernel=prog.kernel_name, block=(prog.nthreads, 1, 1),
                    args=[prog.input_buffer(), prog.output_template()])
    res = run_launch(launch, observers=[rec])
    return res.outputs[1].tobytes(), rec.events


def _regval(v, name):
    if name.startswith("%p"):
        return int(bool(v))
    return int(v)


def derive(prog, gpu_out: bytes) -> tuple:
    """(points, unconfirmed count) for one program: see the module docstring."""
    sim_out, events = _simulate_with_history(prog)
    sim_f, gpu_f = _final_fields(sim_out), _final_fields(gpu_out)
    nthreads = prog.nthreads
    # per (thread, register): list of (event index, value)
    hist = defaultdict(list)
    for i, (warp, _text, mask, writes) in enumerate(events):
        for reg, vals in writes.items():
            base = reg.split(".")[0]
            if not _POOL.match(base):
                continue
            for lane in range(32):
                if (mask >> lane) & 1 and lane < len(vals) and vals[lane] is not None:
                    t = warp * 32 + lane
                    if t < nthreads:
                        hist[(t, base)].append((i, _regval(vals[lane], base)))
    inputs = _final_fields(prog.input_buffer().tobytes())
    points, unconfirmed = [], 0
    for t in range(nthreads):
        for reg, gv in gpu_f[t].items():
            if sim_f[t].get(reg) == gv:
                continue
            h = hist.get((t, reg))
            if not h:
                unconfirmed += 1        # never written on the simulator: a control-flow difference
                continue
            idx, simv = h[-1]
            warp, text, _mask, _w = events[idx]
            _dsts, srcs = _operands(text)
            vals, ok = {}, True
            for s in srcs:
                if not _POOL.match(s):
                    continue
                sh = hist.get((t, s), [])
                before = [v for i, v in sh if i < idx]
                after = [v for i, v in sh if i > idx]
                at = before[-1] if before else inputs[t].get(s)
                if after or at is None or sim_f[t].get(s) != gpu_f[t].get(s) or at != gpu_f[t].get(s):
                    ok = False
                    break
                vals[s] = at
            if not ok:
                unconfirmed += 1
                continue
            points.append({"seed": prog.seed, "thread": t, "text": text.strip(), "inputs": vals,
                           "register": reg, "sim": simv, "gpu": gv})
    return points, unconfirmed


def form_of(text: str) -> str:
    t = text.strip()
    if t.startswith("@"):
        t = t.split(None, 1)[1]
    return t.split()[0]


def _task(args):
    path, seed = args
    from .record import load
    z, _meta = load(Path(path))
    prog = generate(seed)
    try:
        return derive(prog, bytes(z[f"s{seed}"]))
    except Exception as e:  # noqa: BLE001 - a program the simulator rejects is reported, not fatal
        return [], f"{type(e).__name__}: {e}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.fuzz.derive", description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--seeds", default=None, help="A-B (inclusive)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--examples", type=int, default=3)
    args = ap.parse_args(argv)
    from .record import load
    z, _meta = load(Path(args.gpu))
    seeds = sorted(int(k[1:]) for k in z.files if k.startswith("s"))
    if args.seeds:
        a, b = (int(x) for x in args.seeds.split("-"))
        seeds = [s for s in seeds if a <= s <= b]
    import multiprocessing as mp
    with mp.get_context("fork").Pool(args.jobs) as pool:
        results = pool.map(_task, [(args.gpu, s) for s in seeds], chunksize=4)
    points, unconfirmed, errors = [], 0, []
    for s, (pts, unc) in zip(seeds, results):
        points += pts
        if isinstance(unc, str):
            errors.append((s, unc))
        else:
            unconfirmed += unc
    by_form = defaultdict(list)
    for p in points:
        by_form[form_of(p["text"])].append(p)
    for form, pts in sorted(by_form.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(pts):5d}  {form}")
        for p in pts[:args.examples]:
            ins = " ".join(f"{k}=0x{v:X}" for k, v in p["inputs"].items())
            print(f"         seed {p['seed']} t{p['thread']}: {p['text']}  [{ins}] sim 0x{p['sim']:X} gpu 0x{p['gpu']:X}")
    print(f"{len(points)} derived points in {len(by_form)} forms; {unconfirmed} differing registers without "
          f"confirmed inputs; {len(errors)} programs failed: {errors[:3]}")
    if args.out:
        Path(args.out).write_text(json.dumps(points, indent=0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
