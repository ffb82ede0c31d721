"""mma.sync numerics probe: random campaigns and targeted vectors on the GPU, then analysis against the model.

Two steps (README in ``tests/golden/mma_sync_numerics``):

``python -m calib.probes.mma_probe device --out DIR [--cases 100000]`` (on a GPU machine)
    For every float pair of :data:`calib.probes.mma_ptx.FLOAT_PAIRS`: generate the campaign's inputs chunk by
    chunk from the seed (:mod:`calib.probes.mma_inputs`), append the targeted cases (:mod:`calib.probes.mma_targeted`),
    run the probe kernel once through :func:`tcsim.hw.launcher.run_on_gpu`, and write ``DIR/mma_<pair>.npz`` with
    the SHA-256 of every chunk's inputs and GPU outputs, the GPU outputs of the first ``--ci`` cases, the
    targeted outputs, and every output element where the GPU differs from the probe's own copy of the
    reference model (:func:`calib.probes.mma_models.fused` with default switches) -- so the full GPU output can be
    rebuilt elsewhere as "model, patched by the listed elements" and checked against the hashes.  The integer
    pairs (targeted + a small random set) go to ``DIR/mma_int.npz``.

``python -m calib.probes.mma_probe analyze --gpu DIR [--out tests/golden/mma_sync_numerics]`` (anywhere)
    Rebuilds every GPU output (checked against the hashes), compares every case bit for bit with
    ``tcsim.numerics.tensor_core.mma_float`` and with every variant of :func:`calib.probes.mma_models.variants`,
    and writes ``summary.json`` (agreement counts), ``discriminating.npz`` (element vectors where variants
    disagree, with the GPU's answer), ``ci_subsample.npz`` (GPU outputs of the CI subsample) and
    ``targeted.npz``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from calib import pipeline as P

from . import mma_inputs as MI
from . import mma_models as MM
from . import mma_targeted as MT
from .mma_ptx import FLOAT_PAIRS, INT_PAIRS, probe_launch

GOLDEN = P.GOLDEN_ROOT / "mma_sync_numerics"
N_CASES = 100_000
CI_CASES = 5000
MISMATCH_CAP = 600_000
INT_RANDOM = 64
DISC_CHUNKS = 2            # discriminating elements between variants are taken from the first chunks only
MODEL_MISS_KEEP = 200      # GPU != mma_float elements kept per chunk
INT_SEED_CHUNK = 99


# ================================================================================================ device
BASE = "model"             # the default variant the GPU outputs are stored relative to (device --base)
QUICK_CHUNKS = 4           # chunks whose variant agreement the device step reports by itself


def _gen_and_ref(args):
    name, chunk, n, base = args
    pair = FLOAT_PAIRS[name]
    a, bt, c = MI.gen_chunk(pair, chunk, n)
    ref = MM.variants(pair)[base][1](a, bt, c)
    return a, bt, c, MI.input_digest(a, bt, c), ref


def _quick_agreement(args):
    """Elements equal to the GPU per variant, for one chunk (device-side first look)."""
    name, chunk, gpu = args
    pair = FLOAT_PAIRS[name]
    a, bt, c = MI.gen_chunk(pair, chunk)
    return {vn: int((fn(a, bt, c) == gpu).sum()) for vn, (_d, fn) in MM.variants(pair).items()}


def int_random(pair, n=INT_RANDOM, seed=MI.MASTER_SEED):
    """Random integer cases (bytes uniform, C a mix of uniform int32 and values within 2^20 of +-2^31)."""
    R = MI.Raw(seed, MI.PAIR_INDEX[pair.name], INT_SEED_CHUNK, 0)
    a = R.bits(8, (n, 16, pair.K)).astype(np.uint8)
    bt = R.bits(8, (n, 8, pair.K)).astype(np.uint8)
    sel = R.choice(3, (n, 16, 8))
    off = R.ints(0, 1 << 20, (n, 16, 8))
    c = np.where(sel == 0, R.bits(32, (n, 16, 8)),
                 np.where(sel == 1, (1 << 31) - 1 - off, (1 << 31) + off)) & 0xFFFFFFFF
    return a, bt, c.astype(np.uint32)


def _run(pair, a, bt, c, log, backend: str = "gpu"):
    """The probe over cases ``a, bt, c`` on ``backend`` (``sim``: the dry run of ``device --backend sim``, the
    simulator in place of the GPU); a :class:`calib.pipeline.Run`."""
    t0 = time.time()
    res = P.execute(probe_launch(pair, a, bt, c), backend, timeout=900, seed=None)
    if not res.ok:
        raise RuntimeError(f"{pair.name}: the {backend} run failed: {res.error}: {res.detail}")
    if backend == "sim":
        res.device, res.driver, res.cc, res.elapsed_ms = "tcsim (dry run)", 0, (9, 0), 0.0
    log(f"  {pair.name}: {a.shape[0]} cases on {res.device} in {time.time() - t0:.1f} s "
        f"(kernel {res.elapsed_ms:.2f} ms)")
    return res


def device_main(out: Path, n_cases: int, ci: int, pairs, workers: int, backend: str = "gpu", base: str = BASE,
                argv=()) -> int:
    import multiprocessing as mp

    out.mkdir(parents=True, exist_ok=True)
    log = lambda s: print(s, flush=True)   # noqa: E731
    meta = {"date": P.utc_now(), "command": P.command_line("calib.probes.mma_probe", argv),
            "n_cases": n_cases, "chunk": MI.CHUNK, "seed": MI.MASTER_SEED, "pairs": {}}
    nch = n_cases // MI.CHUNK
    ctx = mp.get_context("fork")
    with ctx.Pool(workers) as pool:
        for name in pairs:
            pair = FLOAT_PAIRS[name]
            t0 = time.time()
            parts = pool.map(_gen_and_ref, [(name, j, MI.CHUNK, base) for j in range(nch)])
            a = np.concatenate([p[0] for p in parts])
            bt = np.concatenate([p[1] for p in parts])
            c = np.concatenate([p[2] for p in parts])
            ref = np.concatenate([p[4] for p in parts])
            in_sha = [p[3] for p in parts]
            del parts
            ta, tbt, tc, tnames, twhere = MT.pack(pair)
            log(f"{name}: generated {n_cases} cases + {len(tnames)} targeted in {time.time() - t0:.1f} s")
            res = _run(pair, np.concatenate([a, ta]), np.concatenate([bt, tbt]), np.concatenate([c, tc]), log,
                       backend)
            D = res.outputs[3]
            d, td = D[:n_cases], D[n_cases:]
            out_sha = [MI.output_digest(d[j * MI.CHUNK:(j + 1) * MI.CHUNK]) for j in range(nch)]
            bad = np.argwhere(d != ref)
            total = int(bad.shape[0])
            bad = bad[:MISMATCH_CAP]
            quick = pool.map(_quick_agreement, [(name, j, d[j * MI.CHUNK:(j + 1) * MI.CHUNK])
                                                for j in range(min(QUICK_CHUNKS, nch))])
            nq = min(QUICK_CHUNKS, nch) * MI.CHUNK * 128
            quick = {vn: sum(q[vn] for q in quick) for vn in quick[0]}
            log(f"  {name}: elements equal to the GPU in the first {nq} ("
                + ", ".join(f"{vn} {v}" for vn, v in sorted(quick.items(), key=lambda kv: -kv[1])) + ")")
            np.savez_compressed(
                out / f"mma_{name}.npz", in_sha=np.array(in_sha), out_sha=np.array(out_sha),
                mism_idx=bad.astype(np.int32), mism_gpu=d[bad[:, 0], bad[:, 1], bad[:, 2]],
                mism_total=np.int64(total), base=np.array(base), ci_d=d[:ci], tgt_a=ta, tgt_bt=tbt, tgt_c=tc, tgt_d=td,
                tgt_names=np.array(tnames), tgt_where=twhere)
            meta["pairs"][name] = {"mismatch_vs_base": total, "base": base, "elapsed_ms": res.elapsed_ms,
                                   "quick_agreement": {"elements": nq, "equal": quick}}
            meta.update(device=res.device, driver=res.driver, compute_capability=list(res.cc))
            log(f"  {name}: {total} output elements differ from the probe's {base} "
                f"({total / d.size:.2e} of {d.size})")
            del a, bt, c, ref, D, d
    # integer pairs
    ints = {}
    for name, pair in INT_PAIRS.items():
        ra, rbt, rc = int_random(pair)
        ta, tbt, tc, tnames, twhere = MT.pack(pair)
        res = _run(pair, np.concatenate([ra, ta]), np.concatenate([rbt, tbt]), np.concatenate([rc, tc]), log, backend)
        D = res.outputs[3]
        ints[f"{name}/rand_d"] = D[:len(ra)]
        ints[f"{name}/tgt_a"], ints[f"{name}/tgt_bt"], ints[f"{name}/tgt_c"] = ta, tbt, tc
        ints[f"{name}/tgt_d"] = D[len(ra):]
        ints[f"{name}/tgt_names"] = np.array(tnames)
        ints[f"{name}/tgt_where"] = twhere
    np.savez_compressed(out / "mma_int.npz", **ints)
    P.write_json(out / "mma_device.json", meta)
    log("done")
    return 0


def targeted_main(out: Path, pairs, backend: str = "gpu", argv=()) -> int:
    """Only the targeted vectors of ``pairs`` on the GPU -> ``out/targeted_<pair>.npz`` (keys as in the
    device step's ``tgt_*``)."""
    out.mkdir(parents=True, exist_ok=True)
    log = lambda s: print(s, flush=True)   # noqa: E731
    for name in pairs:
        pair = FLOAT_PAIRS.get(name) or INT_PAIRS[name]
        ta, tbt, tc, tnames, twhere = MT.pack(pair)
        res = _run(pair, ta, tbt, tc, log, backend)
        np.savez_compressed(out / f"targeted_{name}.npz", tgt_a=ta, tgt_bt=tbt, tgt_c=tc, tgt_d=res.outputs[3],
                            tgt_names=np.array(tnames), tgt_where=twhere,
                            device=np.array(f"{res.device} driver {res.driver} sm_{res.cc}"),
                            date=np.array(P.utc_now()),
                            command=np.array(P.command_line("calib.probes.mma_probe", argv)))
        for nm, (cs, j) in zip(tnames, twhere):
            log(f"  {name} {nm}: {int(res.outputs[3][cs, j, j]):#x}")
    return 0


# ================================================================================================ analysis
def _mma_float_cases(pair, a, bt, c):
    from tcsim.numerics.tensor_core import mma_float, tc_params

    P = tc_params("sm_90a", "mma.sync", pair.ab)
    return np.stack([mma_float(a[i], bt[i].T, c[i], pair.ab, pair.ab, pair.acc, P) for i in range(a.shape[0])])


def _analyze_chunk(args):
    """Everything the analysis needs from one chunk (runs in a worker)."""
    name, chunk, mism_idx, mism_gpu, in_sha, out_sha, keep_per_variant, base = args
    pair = FLOAT_PAIRS[name]
    a, bt, c = MI.gen_chunk(pair, chunk)
    if MI.input_digest(a, bt, c) != in_sha:
        raise RuntimeError(f"{name} chunk {chunk}: regenerated inputs differ from the device's (SHA-256)")
    V = MM.variants(pair)
    ref = V["model"][1](a, bt, c)
    gpu = V[base][1](a, bt, c) if base != "model" else ref.copy()
    if len(mism_idx):
        gpu[mism_idx[:, 0], mism_idx[:, 1], mism_idx[:, 2]] = mism_gpu
    if MI.output_digest(gpu) != out_sha:
        raise RuntimeError(f"{name} chunk {chunk}: rebuilt GPU outputs do not match the device's SHA-256")
    mf = _mma_float_cases(pair, a, bt, c)
    kinds = MI.case_kinds(chunk * MI.CHUNK, a.shape[0])
    stats = {}
    outs = {}
    for vn, (_desc, fn) in V.items():
        d = ref if vn == "model" else fn(a, bt, c)
        outs[vn] = d
        eq = d == gpu
        stats[vn] = {"elements": int(eq.sum()), "cases": int(eq.all(axis=(1, 2)).sum()),
                     "elem_miss_by_kind": [int((~eq[kinds == k]).sum()) for k in range(len(MI.KINDS))]}
    eqm = mf == gpu
    stats["mma_float"] = {"elements": int(eqm.sum()), "cases": int(eqm.all(axis=(1, 2)).sum()),
                          "elem_miss_by_kind": [int((~eqm[kinds == k]).sum()) for k in range(len(MI.KINDS))]}
    stats["probe_model_equals_mma_float"] = int((mf == ref).sum())
    # discriminating elements: for each variant, the first few (per kind) where it differs from the model,
    # plus every element where the GPU differs from mma_float
    picks = set()
    for vn, d in outs.items():
        if vn == "model" or chunk >= DISC_CHUNKS:
            continue
        diff = np.argwhere(d != ref)
        if diff.size == 0:
            continue
        dk = kinds[diff[:, 0]]
        for k in range(len(MI.KINDS)):
            for row in diff[dk == k][:keep_per_variant]:
                picks.add(tuple(int(x) for x in row))
    for row in np.argwhere(~eqm)[:MODEL_MISS_KEEP]:
        picks.add(tuple(int(x) for x in row))
    picks = sorted(picks)
    names = list(outs)
    if picks:
        P = np.array(picks)
        ci_, mi_, ni_ = P[:, 0], P[:, 1], P[:, 2]
        match = np.zeros(len(picks), np.uint64)
        for bit, vn in enumerate(names):
            match |= (outs[vn][ci_, mi_, ni_] == gpu[ci_, mi_, ni_]).astype(np.uint64) << np.uint64(bit)
        disc = {"case": ci_ + chunk * MI.CHUNK, "m": mi_, "n": ni_, "a": a[ci_, mi_, :], "b": bt[ci_, ni_, :],
                "c": c[ci_, mi_, ni_], "gpu": gpu[ci_, mi_, ni_], "model": mf[ci_, mi_, ni_],
                "match": match}
    else:
        disc = None
    return chunk, stats, disc, names, (gpu if chunk == 0 else None)


def analyze_main(gpu_dir: Path, out: Path, workers: int, keep_per_variant: int, ci_cases: int,
                 pairs) -> int:
    import multiprocessing as mp

    out.mkdir(parents=True, exist_ok=True)
    dev = json.loads((gpu_dir / "mma_device.json").read_text())
    summary = {"device": dev.get("device"), "driver": dev.get("driver"),
               "compute_capability": dev.get("compute_capability"), "date": dev.get("date"),
               "device_command": dev.get("command"), "seed": dev["seed"], "chunk": dev["chunk"],
               "n_cases": dev["n_cases"], "kinds": list(MI.KINDS), "pairs": {}}
    disc_all, ci_all, tgt_all = {}, {}, {}
    nch = dev["n_cases"] // dev["chunk"]
    ctx = mp.get_context("fork")
    for name in pairs:
        pair = FLOAT_PAIRS[name]
        z = np.load(gpu_dir / f"mma_{name}.npz")
        if int(z["mism_total"]) > len(z["mism_idx"]):
            raise RuntimeError(f"{name}: the mismatch list was capped; the GPU outputs cannot be rebuilt")
        idx, g = z["mism_idx"].astype(np.int64), z["mism_gpu"]
        jobs = []
        for j in range(nch):
            sel = (idx[:, 0] >= j * MI.CHUNK) & (idx[:, 0] < (j + 1) * MI.CHUNK)
            li = idx[sel].copy()
            li[:, 0] -= j * MI.CHUNK
            jobs.append((name, j, li, g[sel], str(z["in_sha"][j]), str(z["out_sha"][j]), keep_per_variant,
                         str(z["base"])))
        t0 = time.time()
        with ctx.Pool(workers) as pool:
            results = pool.map(_analyze_chunk, jobs)
        names = results[0][3]
        V = MM.variants(pair)
        agg = {}
        for _, stats, _, _, _ in results:
            for vn, s in stats.items():
                if isinstance(s, int):
                    agg[vn] = agg.get(vn, 0) + s
                    continue
                t = agg.setdefault(vn, {"elements": 0, "cases": 0, "elem_miss_by_kind": [0] * len(MI.KINDS)})
                t["elements"] += s["elements"]
                t["cases"] += s["cases"]
                t["elem_miss_by_kind"] = [x + y for x, y in zip(t["elem_miss_by_kind"], s["elem_miss_by_kind"])]
        n_el = dev["n_cases"] * 128
        pinfo = {"opcode": pair.opcode, "cases": dev["n_cases"], "elements": n_el,
                 "probe_model_equals_mma_float_elements": agg.pop("probe_model_equals_mma_float"),
                 "agreement": {}}
        for vn in ["mma_float"] + names:
            t = agg[vn]
            pinfo["agreement"][vn] = {"description": "tcsim.numerics.tensor_core.mma_float(tc_params('sm_90a', "
                                                     "'mma.sync', fmt))" if vn == "mma_float" else V[vn][0],
                                      "elements_equal": t["elements"], "cases_equal": t["cases"],
                                      "elements_differ_by_kind": dict(zip(MI.KINDS, t["elem_miss_by_kind"]))}
        # discriminating vectors
        discs = [r[2] for r in results if r[2] is not None]
        if discs:
            for key in discs[0]:
                disc_all[f"{name}/{key}"] = np.concatenate([d_[key] for d_ in discs])
        disc_all[f"{name}/variants"] = np.array(names)
        pinfo["discriminating_elements"] = int(sum(len(d_["case"]) for d_ in discs))
        # CI subsample (chunk 0)
        gpu0 = results[0][4][:ci_cases]
        if not np.array_equal(z["ci_d"][:ci_cases], gpu0):
            raise RuntimeError(f"{name}: the device's CI outputs differ from the rebuilt ones")
        a0, bt0, c0 = (x[:ci_cases] for x in MI.gen_chunk(pair, 0))
        ci_all[f"{name}/d_xor_estimate"] = gpu0 ^ MI.estimate(pair, a0, bt0, c0)
        ci_all[f"{name}/sha256"] = np.array(MI.output_digest(gpu0))
        # targeted
        for key in ("tgt_a", "tgt_bt", "tgt_c", "tgt_d", "tgt_names", "tgt_where"):
            tgt_all[f"{name}/{key[4:]}"] = z[key]
        pinfo["in_sha256_per_chunk"] = [str(x) for x in z["in_sha"]]
        pinfo["gpu_out_sha256_per_chunk"] = [str(x) for x in z["out_sha"]]
        summary["pairs"][name] = pinfo
        print(f"{name}: analysed in {time.time() - t0:.0f} s; mma_float equal on "
              f"{agg['mma_float']['elements']}/{n_el} elements, {agg['mma_float']['cases']}/{dev['n_cases']} cases",
              flush=True)
    zi = np.load(gpu_dir / "mma_int.npz")
    for key in zi.files:
        tgt_all[key.replace("/tgt_", "/")] = zi[key]
    summary["ci_cases"] = ci_cases
    P.write_json(out / "summary.json", summary)
    np.savez_compressed(out / "discriminating.npz", **disc_all)
    np.savez_compressed(out / "ci_subsample.npz", **ci_all)
    np.savez_compressed(out / "targeted.npz", **tgt_all)
    return 0


# ================================================================================================ report
SHORT = {"m16n8k16_f32_f16": "k16 f16→f32", "m16n8k16_f32_bf16": "k16 bf16→f32", "m16n8k8_f32_f16": "k8 f16→f32",
         "m16n8k8_f32_bf16": "k8 bf16→f32", "m16n8k16_f16_f16": "k16 f16→f16", "m16n8k8_f32_tf32": "k8 tf32→f32"}


def report_markdown(summary: dict) -> str:
    """Markdown tables of summary.json: output elements that differ from the H100, per variant and pair."""
    pairs = list(summary["pairs"])
    variants = []
    for p in pairs:
        for vn in summary["pairs"][p]["agreement"]:
            if vn not in variants:
                variants.append(vn)
    L = ["| variant | " + " | ".join(SHORT.get(p, p) for p in pairs) + " |",
         "|---|" + "---:|" * len(pairs)]
    for vn in variants:
        cells = []
        for p in pairs:
            ag = summary["pairs"][p]["agreement"].get(vn)
            if ag is None:
                cells.append("n/a")
            else:
                diff = summary["pairs"][p]["elements"] - ag["elements_equal"]
                cells.append(f"{diff:,}" if diff else "**0**")
        L.append(f"| `{vn}` | " + " | ".join(cells) + " |")
    L.append("")
    L.append("Cases (of 100,000 per pair) in which all 128 outputs equal the H100's:")
    L.append("")
    L.append("| variant | " + " | ".join(SHORT.get(p, p) for p in pairs) + " |")
    L.append("|---|" + "---:|" * len(pairs))
    for vn in variants:
        cells = []
        for p in pairs:
            ag = summary["pairs"][p]["agreement"].get(vn)
            cells.append("n/a" if ag is None else f"{ag['cases_equal']:,}")
        L.append(f"| `{vn}` | " + " | ".join(cells) + " |")
    return "\n".join(L) + "\n"


# ================================================================================================ CLI
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.probes.mma_probe", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("device", help="run the campaigns on the GPU")
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--cases", type=int, default=N_CASES)
    d.add_argument("--ci", type=int, default=CI_CASES)
    d.add_argument("--pair", action="append", choices=list(FLOAT_PAIRS))
    d.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1))
    d.add_argument("--backend", choices=["gpu", "sim"], default="gpu", help="sim: dry run on the simulator")
    d.add_argument("--base", default="model", help="variant the GPU outputs are stored relative to")
    a = sub.add_parser("analyze", help="compare the GPU results with the model and its variants")
    a.add_argument("--gpu", type=Path, required=True)
    a.add_argument("--out", type=Path, default=GOLDEN)
    a.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    a.add_argument("--keep-per-variant", type=int, default=2, help="discriminating elements kept per variant, "
                                                                     "kind and chunk (first chunks only)")
    a.add_argument("--ci", type=int, default=CI_CASES)
    a.add_argument("--pair", action="append", choices=list(FLOAT_PAIRS))
    t = sub.add_parser("targeted", help="run only the targeted vectors on the GPU")
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--pair", action="append", required=True, choices=list(FLOAT_PAIRS) + list(INT_PAIRS))
    t.add_argument("--backend", choices=["gpu", "sim"], default="gpu")
    sub.add_parser("write-ptx", help="rewrite calib/probes/ptx/*.ptx")
    r = sub.add_parser("report", help="markdown agreement tables from summary.json")
    r.add_argument("--summary", type=Path, default=GOLDEN / "summary.json")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.cmd == "device":
        if args.cases % MI.CHUNK:
            ap.error(f"--cases must be a multiple of {MI.CHUNK}")
        return device_main(args.out, args.cases, args.ci, args.pair or list(FLOAT_PAIRS), args.workers,
                           args.backend, args.base, argv)
    if args.cmd == "analyze":
        return analyze_main(args.gpu, args.out, args.workers, args.keep_per_variant, args.ci,
                            args.pair or list(FLOAT_PAIRS))
    if args.cmd == "targeted":
        return targeted_main(args.out, args.pair, args.backend, argv)
    if args.cmd == "report":
        print(report_markdown(json.loads(args.summary.read_text())), end="")
        return 0
    from .mma_ptx import write_ptx_files
    for p in write_ptx_files():
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
