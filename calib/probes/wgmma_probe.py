"""wgmma numerics probe: every wgmma.mma_async type combination on the GPU, compared with the numerics model.

Pipeline (calib/pipeline.py): generate (:mod:`calib.probes.wgmma_inputs`, from a seed) -> run (one launch per
combination and N, :mod:`calib.probes.wgmma_ptx`) -> record -> compare with
``tcsim.numerics.tensor_core`` (:func:`model`).  README: ``tests/golden/wgmma_numerics/README.md``.

A **case** is one output element of one wgmma instruction: one K-reduction D[m][n] = C[m][n] + sum_k A[m][k] B[k][n]
(K = 16 f16/bf16, 8 tf32, 32 fp8/8-bit, 256 b1).  Every combination runs 256 m64n8 instructions (131,072 cases)
and 16 m64n256 instructions (262,144 cases): 393,216 cases, 272 instructions.

``python -m calib.probes.wgmma_probe device --out DIR`` (GPU machine)
    Runs every campaign, compares every case with :func:`model` (and, for a first diagnosis, with the
    parameter variants of :func:`variants` on the m64n8 instructions), prints disagreements and writes
    ``DIR/wgmma_numerics.npz`` (GPU outputs stored as ``gpu ^ estimate``, compressed; :func:`estimate` is a
    float64 / int64 approximation that does not use the model under test) and ``DIR/meta.json``.
    (The installed record was re-encoded once, when :func:`estimate` learnt to cut fp8 -> f32 estimates to 13
    fraction bits; ``meta.json`` says so, and the SHA-256 of every GPU output is the device's.)
``python -m calib.probes.wgmma_probe install --gpu DIR``
    Checks the record (every output's SHA-256 rebuilt) and copies it to ``tests/golden/wgmma_numerics``.
:func:`golden_cases` ``(name, N) -> (inputs, expected)`` replays a recorded campaign (no GPU): the CI test
(tests/hw/test_wgmma_numerics_golden.py) and, later, the simulator's wgmma instruction use it.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

from calib import pipeline as P

from . import runner as R
from . import wgmma_inputs as WI
from .wgmma_ptx import (COMBOS, FLAG_NEG_A, FLAG_NEG_B, FLAG_RS, FLAG_SCALE_D, SHAPES_N, Combo, desc_words,
                        probe_launch, probe_ptx, regs_to_acc)

GOLDEN = P.GOLDEN_ROOT / "wgmma_numerics"
DATA = "wgmma_numerics.npz"
_SIGN = {"f16": 1 << 15, "bf16": 1 << 15, "tf32": 1 << 31, "e4m3": 0x80, "e5m2": 0x80}


# ================================================================================================ model
def operands(combo: Combo, x: dict, i: int):
    """(a, b, c) of instruction i as the MMA sees them: A negated for imm-scale-a = -1, B for imm-scale-b = -1
    (sign bit flipped: exact), C = +0 when scale-d is false (PTX ISA §9.7.15.5.2: D = A*B)."""
    a, b, c, fl = x["a"][i], x["b"][i], x["c"][i], int(x["flags"][i])
    if combo.has_neg:
        if fl & FLAG_NEG_A:
            a = a ^ a.dtype.type(_SIGN[combo.a])
        if fl & FLAG_NEG_B:
            b = b ^ b.dtype.type(_SIGN[combo.b])
    if not fl & FLAG_SCALE_D:
        c = np.zeros_like(c)
    return a, b, c


def model(combo: Combo, x: dict, params=None) -> np.ndarray:
    """D (n, 64, N) of every instruction in ``x`` by ``tcsim.numerics.tensor_core``: mma_float with
    ``tc_params('sm_90a', 'wgmma', a)`` (or ``params``), mma_int, mma_b1."""
    from tcsim.numerics import tensor_core as TC

    out = []
    if combo.is_float:
        Pm = params or TC.tc_params("sm_90a", "wgmma", combo.a)
    for i in range(len(x["flags"])):
        a, b, c = operands(combo, x, i)
        if combo.is_float:
            d = TC.mma_float(a, b.T, c, combo.a, combo.b, combo.d, Pm)
        elif combo.a == "b1":
            d = TC.mma_b1(a, b.T, c, "and").view(np.uint32)
        else:
            d = TC.mma_int(a, b.T, c, combo.a == "s8", combo.b == "s8", combo.satfinite).view(np.uint32)
        out.append(d)
    return np.stack(out).astype(combo.c_dtype)


def variants(combo: Combo) -> dict:
    """name -> TensorCoreParams: the table entry and single-switch alternatives (first diagnosis on the GPU)."""
    from tcsim.numerics import tensor_core as TC

    if not combo.is_float:
        return {}
    base = TC.tc_params("sm_90a", "wgmma", combo.a)
    rep = dataclasses.replace
    v = {"table": base, "no_floor": rep(base, e_floor=None), "zero_min": rep(base, zero_exp_policy="min"),
         f"F{base.frac_bits - 1}": rep(base, frac_bits=base.frac_bits - 1),
         f"F{base.frac_bits + 1}": rep(base, frac_bits=base.frac_bits + 1)}
    if combo.a in ("e4m3", "e5m2"):
        for F in (13, 14, 15, 16, 23, 24, 25):
            for tr in (None, 13):
                v[f"fp8_F{F}_trunc{tr}"] = rep(base, frac_bits=F, out_trunc_frac=tr)
        v["fp8_block16_F25"] = rep(base, block=16, frac_bits=25, out_trunc_frac=None)
        v["fp8_via_f16"] = rep(base, block=16, frac_bits=25, out_trunc_frac=None, lowering=TC.LOWER_FP8_VIA_F16)
    return v


def estimate(combo: Combo, x: dict) -> np.ndarray:
    """A deterministic approximation of D used only to store GPU outputs compactly (``gpu ^ estimate``): float
    types: C plus the products in k order in float64 (IEEE add/multiply), truncated (f32) or rounded half up
    (f16) to the accumulator by integer operations (:func:`calib.probes.mma_inputs._f64_to_code`), fp8 -> f32 then
    cut to 13 fraction bits (numerics.md "Parameters"; the stored XOR compresses much better); integer types:
    the exact sum wrapped to 32 bits.  Independent of ``tcsim.numerics.tensor_core``."""
    from tcsim.numerics.lowp import to_float64

    from .mma_inputs import _f64_to_code

    n = len(x["flags"])
    out = []
    for i in range(n):
        a, b, c = operands(combo, x, i)
        if combo.is_float:
            av, bv, s = to_float64(a, combo.a), to_float64(b, combo.b), to_float64(c, combo.d)
            with np.errstate(all="ignore"):
                for k in range(combo.K):
                    s = s + av[:, None, k] * bv[None, :, k]
            e = _f64_to_code(s, combo.d, combo.d == "f16")
            if combo.a in ("e4m3", "e5m2") and combo.d == "f32":
                e = e & ~((1 << 10) - 1)            # fp8 -> f32: 13 fraction bits (numerics.md), for compactness only
            out.append(e.astype(combo.c_dtype))
        else:
            if combo.a == "b1":
                A = np.unpackbits(a, axis=1).astype(np.int64)
                B = np.unpackbits(b, axis=1).astype(np.int64)
            else:
                A = a.astype(np.int64) - (256 * (a >= 128) if combo.a == "s8" else 0)
                B = b.astype(np.int64) - (256 * (b >= 128) if combo.b == "s8" else 0)
            s = A @ B.T + c.astype(np.int64)
            out.append((s & 0xFFFFFFFF).astype(np.uint32))
    return np.stack(out)


# ================================================================================================ replay
def load_golden(golden: Path = GOLDEN):
    """(meta, arrays) of the installed record."""
    return P.read_json(golden / P.META), P.load_arrays(golden / DATA)


def golden_cases(name: str, N: int, golden: Path = GOLDEN, count: int | None = None, _rec=None):
    """(inputs, expected) of the recorded campaign ``(name, N)``: inputs = dict a (n,64,K) codes, b (n,N,K) codes
    (``b[n][k] = B[k][n]``; b1: packed bytes), c (n,64,N), flags (n,), kind (n,) -- regenerated from the seed and
    checked against the recorded SHA-256; expected = the GPU's D (n,64,N) accumulator codes (SHA-256 checked).
    ``count``: only the first ``count`` instructions (their digests are not recorded separately, so the full
    campaign is still regenerated)."""
    meta, arr = _rec or load_golden(golden)
    combo = COMBOS[name]
    x = WI.gen(combo, N, seed=meta["seed"])
    rec = meta["combos"][name][str(N)]
    if WI.input_digest(x) != rec["in_sha256"]:
        raise P.RecordError(f"{name} n{N}: regenerated inputs differ from the recorded ones (SHA-256)")
    gpu = arr[f"{name}/n{N}/d_xor_estimate"] ^ estimate(combo, x)
    if WI.output_digest(gpu) != rec["gpu_out_sha256"]:
        raise P.RecordError(f"{name} n{N}: rebuilt GPU outputs do not match the recorded SHA-256")
    if count is not None:
        x = {k: v[:count] for k, v in x.items()}
        gpu = gpu[:count]
    return x, gpu


# ================================================================================================ device
def _gen(args):
    name, N = args
    return WI.gen(COMBOS[name], N)


def _compare(args):
    """Model agreement of one campaign: counts (total, per kind, per flag), first mismatches, variants."""
    name, N, x, gpu, do_variants = args
    combo = COMBOS[name]
    t0 = time.time()
    ref = model(combo, x)
    eq = ref == gpu
    kinds = WI.kinds_of(combo)
    fl = x["flags"]
    res = {"cases": int(eq.size), "equal": int(eq.sum()), "instructions": int(len(fl)),
           "instructions_equal": int(eq.all(axis=(1, 2)).sum()),
           "miss_by_kind": {k: int((~eq[x["kind"] == j]).sum()) for j, k in enumerate(kinds)},
           "miss_by_flag": {f: int((~eq[(fl & bit) != 0]).sum()) for f, bit in
                            (("scale_d", FLAG_SCALE_D), ("neg_a", FLAG_NEG_A), ("neg_b", FLAG_NEG_B),
                             ("rs", FLAG_RS))},
           "model_s": round(time.time() - t0, 2)}
    bad = np.argwhere(~eq)
    res["first_misses"] = []
    for i, m, n in bad[:12]:
        a, b, c = operands(combo, x, i)
        res["first_misses"].append({"instr": int(i), "m": int(m), "n": int(n), "flags": int(fl[i]),
                                    "kind": kinds[int(x["kind"][i])], "gpu": hex(int(gpu[i, m, n])),
                                    "model": hex(int(ref[i, m, n])), "c": hex(int(c[m, n])),
                                    "a": [hex(int(v)) for v in np.atleast_1d(a[m])],
                                    "b": [hex(int(v)) for v in np.atleast_1d(b[n])]})
    if do_variants:
        res["variants"] = {vn: int((model(combo, x, p) == gpu).sum()) for vn, p in variants(combo).items()}
    return name, N, res


def device_main(out: Path, names, workers: int, backend: str = "gpu", argv=(), jobs: int = 4,
                count: int | None = None) -> int:
    import multiprocessing as mp

    out.mkdir(parents=True, exist_ok=True)
    log = lambda s: print(s, flush=True)   # noqa: E731
    t0 = time.time()
    camp = [(n, N) for n in names for N in SHAPES_N]
    ctx = mp.get_context("fork")
    with ctx.Pool(workers) as pool:
        xs = pool.map(_gen, camp)
    if count is not None:
        xs = [{k: v[:count] for k, v in x.items()} for x in xs]
    log(f"generated {len(camp)} campaigns in {time.time() - t0:.1f} s")
    # descriptor convention check (module docstring of wgmma_ptx): f16 -> f32, the first 16 m64n8 instructions
    lo, hi = desc_words()
    desc = (lo, hi)
    probe_x = WI.gen(COMBOS["f16_f32"], 8, 0, 16)
    ref = model(COMBOS["f16_f32"], probe_x)
    for cand in [(lo, hi), ((hi << 16), lo >> 16)]:
        r = P.execute(probe_launch(COMBOS["f16_f32"], 8, probe_x["a"], probe_x["b"], probe_x["c"],
                                   probe_x["flags"], cand), backend, timeout=60)
        if not r.ok:
            log(f"descriptor check {cand}: {r.error} {r.detail}")
            continue
        miss = int((regs_to_acc(r.outputs[3]) != ref).sum())
        log(f"descriptor check desc_lo={cand[0]:#x} desc_hi={cand[1]:#x}: {miss} of {ref.size} differ from the model")
        if miss < ref.size // 4:
            desc = cand
            break

    def one(item):
        (name, N), x = item
        return P.execute(probe_launch(COMBOS[name], N, x["a"], x["b"], x["c"], x["flags"], desc), backend,
                         timeout=60)

    t1 = time.time()
    runs = P.run_all(list(zip(camp, xs)), one, jobs=jobs)
    log(f"ran {len(camp)} launches in {time.time() - t1:.1f} s")
    meta = {"command": P.command_line("calib.probes.wgmma_probe", argv), "date": P.utc_now(),
            "seed": WI.MASTER_SEED, "instructions": {str(k): v for k, v in WI.INSTRUCTIONS.items()},
            "descriptor": {"desc_lo": desc[0], "desc_hi": desc[1]}, "combos": {}}
    arrays = {}
    jobs_cmp = []
    for (name, N), x, r in zip(camp, xs, runs):
        if not r.ok:
            log(f"{name} n{N}: {r.error}: {r.detail}")
            meta["combos"].setdefault(name, {})[str(N)] = {"error": r.error, "detail": r.detail}
            continue
        meta.update(P.gpu_fields(r.device, r.driver, r.cc))
        gpu = regs_to_acc(r.outputs[3])
        combo = COMBOS[name]
        arrays[f"{name}/n{N}/d_xor_estimate"] = gpu ^ estimate(combo, x)
        meta["combos"].setdefault(name, {"opcode_n8": combo.opcode(8)})[str(N)] = {
            "opcode": combo.opcode(N), "in_sha256": WI.input_digest(x), "gpu_out_sha256": WI.output_digest(gpu),
            "ptx_sha256": P.sha256(probe_ptx(combo, N)), "kernel_ms": r.elapsed_ms}
        jobs_cmp.append((name, N, x, gpu, N == 8))
    t2 = time.time()
    with ctx.Pool(workers) as pool:
        for name, N, res in pool.imap_unordered(_compare, jobs_cmp):
            meta["combos"][name][str(N)]["model"] = res
            line = f"{name} n{N}: model == GPU on {res['equal']}/{res['cases']} cases"
            if res["equal"] != res["cases"]:
                line += f"  by kind {res['miss_by_kind']} by flag {res['miss_by_flag']}"
            log(line)
            for mm in res["first_misses"][:4]:
                log(f"    {mm}")
            if "variants" in res:
                best = sorted(res["variants"].items(), key=lambda kv: -kv[1])
                log("    variants: " + ", ".join(f"{k} {res['cases'] - v}" for k, v in best))
    log(f"compared in {time.time() - t2:.1f} s")
    np.savez_compressed(out / DATA, **arrays)
    P.write_json(out / P.META, meta)
    log(f"wrote {out / DATA} ({(out / DATA).stat().st_size} bytes); total {time.time() - t0:.1f} s")
    return 0


def targeted_main(out: Path, names, backend: str = "gpu", argv=(), vector_set: str = "targeted") -> int:
    """The targeted vectors (:mod:`calib.probes.wgmma_targeted`) of ``names`` on the GPU -> ``out/targeted.npz``
    (per combination: a, b, c, flags, the GPU's d, test names, where) with the model's agreement printed.
    ``vector_set`` "floor": the floor-on-E vectors (``wgmma_targeted.pack_floor``) -> ``out/targeted_floor.npz``,
    ``out/targeted_floor_meta.json``."""
    from . import wgmma_targeted as WT

    pack = WT.pack if vector_set == "targeted" else WT.pack_floor
    out.mkdir(parents=True, exist_ok=True)
    lo, hi = desc_words()
    arrays = {}
    meta = {"command": P.command_line("calib.probes.wgmma_probe", argv), "date": P.utc_now(), "combos": {}}
    for name in names:
        combo = COMBOS[name]
        packed = pack(combo)
        if packed is None:
            continue
        x, tnames, where = packed
        r = P.execute(probe_launch(combo, 8, x["a"], x["b"], x["c"], x["flags"], (lo, hi)), backend, timeout=60)
        if not r.ok:
            print(f"{name}: {r.error}: {r.detail}", flush=True)
            continue
        meta.update(P.gpu_fields(r.device, r.driver, r.cc))
        d = regs_to_acc(r.outputs[3])
        ref = model(combo, x)
        n = len(x["flags"]) // 2
        miss = int((ref != d).sum())
        named = R.named(d, tnames, where)
        rs_same = bool(np.array_equal(d[:n], d[n:]))
        meta["combos"][name] = {"model_misses": miss, "elements": int(d.size), "rs_equals_ss": rs_same,
                                "named": named}
        print(f"{name}: model misses {miss} of {d.size}; RS == SS: {rs_same}", flush=True)
        R.report_named(lambda s: print(s, flush=True), "", ref, d, tnames, where)
        for k in ("a", "b", "c", "flags"):
            arrays[f"{name}/{k}"] = x[k]
        arrays[f"{name}/d"] = d
        arrays[f"{name}/names"] = np.array(tnames)
        arrays[f"{name}/where"] = np.array(where, np.int64)
    if not arrays:
        print("no combination ran", flush=True)
        return 1
    np.savez_compressed(out / f"{vector_set}.npz", **arrays)
    P.write_json(out / f"{vector_set}_meta.json", meta)
    return 0


def install_main(gpu_dir: Path, dest: Path) -> int:
    """Check a device record (every campaign's inputs and outputs rebuild to the recorded SHA-256) and copy it,
    with the targeted record when ``gpu_dir`` holds one, to ``dest``."""
    meta, arr = P.read_json(gpu_dir / P.META), P.load_arrays(gpu_dir / DATA)
    for name in meta["combos"]:
        for N in SHAPES_N:
            golden_cases(name, N, _rec=(meta, arr))        # raises when inputs or outputs do not rebuild
    files = [(gpu_dir / P.META, P.META), (gpu_dir / DATA, DATA)]
    files += [(gpu_dir / f, f) for f in ("targeted.npz", "targeted_meta.json") if (gpu_dir / f).is_file()]
    return _install(files, dest)


def install_floor_main(gpu_dir: Path, dest: Path) -> int:
    """Check a floor-vector record (its inputs are today's ``pack_floor``) and copy it to ``dest``."""
    from . import wgmma_targeted as WT

    arr = P.load_arrays(gpu_dir / "targeted_floor.npz")
    for name in WT.FLOOR_COMBOS:
        x, names, _ = WT.pack_floor(COMBOS[name])
        if list(arr[f"{name}/names"]) != names or any(not np.array_equal(arr[f"{name}/{k}"], x[k])
                                                      for k in ("a", "b", "c", "flags")):
            raise P.RecordError(f"{gpu_dir}: {name} floor vectors differ from today's pack_floor")
    files = [(gpu_dir / f, f) for f in ("targeted_floor.npz", "targeted_floor_meta.json")]
    return _install(files, dest)


def _install(files, dest: Path) -> int:
    P.install_files(files, dest)
    print(f"installed into {dest}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.probes.wgmma_probe", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("device", help="run every campaign on the GPU and compare with the model")
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--combo", action="append", choices=list(COMBOS))
    d.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1))
    d.add_argument("--jobs", type=int, default=4, help="GPU launches in flight")
    d.add_argument("--count", type=int, help="only the first COUNT instructions of each campaign (a slice)")
    d.add_argument("--backend", choices=["gpu", "sim"], default="gpu")
    i = sub.add_parser("install", help="check a device record and copy it to tests/golden/wgmma_numerics")
    i.add_argument("--gpu", type=Path, required=True)
    i.add_argument("--out", type=Path, default=GOLDEN)
    t = sub.add_parser("targeted", help="run the targeted vectors on the GPU")
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--combo", action="append", choices=list(COMBOS))
    t.add_argument("--backend", choices=["gpu", "sim"], default="gpu")
    f = sub.add_parser("floor", help="run the floor-on-E vectors (bf16/tf32 -> f32) on the GPU")
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--backend", choices=["gpu", "sim"], default="gpu")
    fi = sub.add_parser("install-floor", help="check a floor-vector record and copy it to tests/golden/wgmma_numerics")
    fi.add_argument("--gpu", type=Path, required=True)
    fi.add_argument("--out", type=Path, default=GOLDEN)
    w = sub.add_parser("write-ptx", help="write the probe kernels to DIR")
    w.add_argument("dir", type=Path)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.cmd == "device":
        return R.cli(lambda: device_main(args.out, args.combo or list(COMBOS), args.workers, args.backend, argv,
                                         args.jobs, args.count))
    if args.cmd == "targeted":
        return R.cli(lambda: targeted_main(args.out, args.combo or list(COMBOS), args.backend, argv))
    if args.cmd == "install":
        return R.cli(lambda: install_main(args.gpu, args.out))
    if args.cmd == "floor":
        from . import wgmma_targeted as WT

        return R.cli(lambda: targeted_main(args.out, list(WT.FLOOR_COMBOS), args.backend, argv,
                                           vector_set="targeted_floor"))
    if args.cmd == "install-floor":
        return R.cli(lambda: install_floor_main(args.gpu, args.out))
    args.dir.mkdir(parents=True, exist_ok=True)
    for c in COMBOS.values():
        for N in SHAPES_N:
            (args.dir / f"{c.kernel(N)}.ptx").write_text(probe_ptx(c, N))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
