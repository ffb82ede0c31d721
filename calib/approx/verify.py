"""Exhaustive check of tcsim's .approx models against the GPU, and the golden sample the CI test replays.

    python3 calib/approx/verify.py --out DIR [--golden tests/hw/golden_h100/approx_sm90.npz] [--quick]

On a Hopper GPU with nvcc and CuPy, and tcsim importable (pip install -e .).  Steps:
  1. every f32 form (calib/approx/kernels.F32): all 2**32 inputs on the GPU against the tcsim function
     (tcsim.numerics.approx, evaluated with CuPy arrays: the same code as with numpy), in chunks; mismatch count
     and the first few mismatches; the numpy and CuPy evaluations are compared on 2**20 inputs + specials;
  2. the f16/bf16 forms on all 65536 inputs, the x2 forms on all 2**32 inputs (each half against the table);
  3. div.{approx,full}{.ftz}.f32 on 2**32 hashed pairs, in-kernel, against a * rcp.approx.ftz(b) with the
     scaling of tcsim.semantics.float_arith.div_approx_f32;
  4. the tables regenerated (calib/approx/gen_tables.py) and compared with the package data;
  5. --golden: a stratified sample (every sign/exponent bin, plus specials) of every form, recorded for
     tests/numerics/test_approx_golden.py.
Writes DIR/verify.json (the numbers calib/approx/README.md quotes) and DIR/log.txt.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from calib.approx import kernels, tables  # noqa: E402

F32_SPECIALS = np.array([
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF,
    0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,
    0x3F800000, 0xBF800000, 0x3F000000, 0xBF000000, 0x40000000, 0xC0000000, 0x42FC0000, 0xC2FC0000,
    0x43000000, 0xC3000000, 0x43160000, 0xC3160000, 0x42FE0000, 0xC2FE0000, 0x7E800000, 0x7E800001,
    0xFE800001, 0x3F3504F3, 0x3FB504F3, 0x3F3504F4, 0x40490FDB, 0xC0490FDB, 0x4B000000, 0x4C000000,
    0x34000000, 0x33800000, 0x00400000, 0x3F7FFFFF, 0x3F800001, 0xBF7FFFFF, 0x4CBEBC20, 0x3DCCCCCD,
], np.uint32)


def golden_inputs(seed=20261127, per_bin=128):
    """Every (sign, exponent) bin of f32 with `per_bin` random mantissas (mantissa 0 and the largest included),
    then the specials: ~65.6k inputs."""
    rng = np.random.default_rng(seed)
    bins = np.repeat(np.arange(512, dtype=np.uint64), per_bin)
    m = rng.integers(0, 1 << 23, bins.size, dtype=np.uint64)
    m[::per_bin] = 0
    m[1::per_bin] = (1 << 23) - 1
    x = ((bins << np.uint64(23)) | m).astype(np.uint32)
    return np.concatenate([x, F32_SPECIALS])


def main(argv=None):
    ap_ = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap_.add_argument("--out", required=True)
    ap_.add_argument("--golden")
    ap_.add_argument("--quick", action="store_true", help="2**28 inputs per f32 form instead of 2**32")
    ap_.add_argument("--forms", help="comma-separated f32 forms (default: all)")
    args = ap_.parse_args(argv)
    import cupy as cp
    from tcsim.numerics import approx as ap
    os.makedirs(args.out, exist_ok=True)
    log = open(os.path.join(args.out, "log.txt"), "a")
    t0 = time.time()

    def say(*a):
        s = " ".join(str(v) for v in a)
        print(s, flush=True)
        log.write(s + "\n")
        log.flush()

    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    say("device", dev)
    mod = kernels.build("/tmp/tcsim_approx", sass_path=os.path.join(args.out, "sass.txt"))
    res = {"device": dev, "f32": {}, "half": {}, "div": {}}

    def fn_of(name):
        base = name[:-4] if name.endswith("_ftz") else name
        return getattr(ap, base + "_approx"), name.endswith("_ftz")

    # 1. exhaustive f32
    forms = [f for f, _ in kernels.F32 if not args.forms or f in args.forms.split(",")]
    CH = 1 << 26
    total = (1 << 28) if args.quick else (1 << 32)
    rng = np.random.default_rng(1)
    xr = np.concatenate([rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32), F32_SPECIALS])
    for name in forms:
        fn, ftz = fn_of(name)
        bad, samples = 0, []
        for c in range(total // CH):
            base = c * CH if not args.quick else (c * CH * 16) & 0xFFFFFFFF
            g = kernels.run_f32(mod, name, base, CH)
            x = (cp.arange(CH, dtype=cp.uint64) + base).astype(cp.uint32)
            m = fn(x, ftz=ftz)
            neq = g != m
            n = int(neq.sum())
            bad += n
            if n and len(samples) < 12:
                idx = cp.nonzero(neq)[0][:12]
                samples += [[hex(int(v)) for v in t] for t in zip(cp.asnumpy(x[idx]), cp.asnumpy(g[idx]),
                                                                     cp.asnumpy(m[idx]))]
            del g, x, m, neq
        cpu = fn(xr, ftz=ftz)
        gpu_model = cp.asnumpy(fn(cp.asarray(xr), ftz=ftz))
        npcp = int((cpu != gpu_model).sum())
        res["f32"][name] = {"inputs": total, "mismatches": bad, "exact_fraction": 1 - bad / total,
                            "numpy_vs_cupy_model_mismatches": npcp, "first_mismatches": samples[:12]}
        say(name, "inputs", total, "mismatches", bad, "exact %.6f" % (1 - bad / total), "numpy!=cupy", npcp,
            samples[:3], "t=%.0fs" % (time.time() - t0))

    # 2. half precision
    gpu_half = {}
    for name, op in kernels.H16:
        g = kernels.run_half(mod, name)
        gpu_half[name] = g
        m = getattr(ap, name.replace("_f16", "_approx_f16").replace("_bf16", "_approx_bf16"))(
            np.arange(65536, dtype=np.uint32).astype(np.uint16))
        res["half"][name] = {"inputs": 65536, "mismatches": int((g != m).sum())}
        say(name, res["half"][name])
    for name, op, base in kernels.H32:
        t = cp.asarray(gpu_half[base])
        badc = cp.zeros(1, cp.uint64)
        for c in range(16):
            mod.get_function(f"k_{name}")((1 << 20,), (256,), (np.uint32(c << 28), t, badc))
        res["half"][name] = {"inputs": 1 << 32, "mismatches_vs_per_half_table": int(cp.asnumpy(badc)[0])}
        say(name, res["half"][name])

    # 3. div
    for name, op in kernels.DIV:
        badc = cp.zeros(1, cp.uint64)
        rec = cp.zeros(4 * 4096, cp.uint32)
        for c in range(16):
            mod.get_function(f"k_{name}")((1 << 20,), (256,), (np.uint64(c << 28), badc, rec))
        res["div"][name] = {"pairs": 1 << 32, "mismatches_vs_rcp_model": int(cp.asnumpy(badc)[0])}
        say(name, res["div"][name])

    # 4. regenerated tables
    def get(name, first, count):
        if count is None:
            return gpu_half[name]
        return cp.asnumpy(kernels.run_f32(mod, name, first, count))
    tabs, meta = tables.from_measurements(get)
    regen = os.path.join(args.out, "approx_sm90.npz")
    tables.write(regen, tabs, meta)
    same = {k: bool(np.array_equal(np.asarray(v).astype(np.int64), ap._table_np(k))) for k, (_, v) in tabs.items()}
    same.update({"meta_" + k: bool(np.array_equal(np.asarray(v), ap._npz()["meta_" + k])) for k, v in meta.items()})
    res["regenerated_tables_equal_package_data"] = same
    say("regenerated tables equal to package data:", all(same.values()), same)

    # 5. golden sample
    if args.golden:
        x = golden_inputs()
        gold = {"device": np.array(dev), "x": x,
                "command": np.array("python3 calib/approx/verify.py --out DIR --golden " + args.golden)}
        for name, _ in kernels.F32:
            gold["f32_" + name] = kernels.run_list(mod, name, x)
        for name, _ in kernels.H16:
            gold["h16_" + name] = gpu_half[name]
        rng = np.random.default_rng(7)
        px = rng.integers(0, 1 << 32, 1 << 14, dtype=np.uint64).astype(np.uint32)
        gold["x2_in"] = px
        for name, _, _ in kernels.H32:
            gold["x2_" + name] = kernels.run_list(mod, name, px)
        n = 1 << 15
        a = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        b = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        b[1::4] = (b[1::4] & 0x807FFFFF) | (((b[1::4] >> 24) & 7) << 23)           # tiny / subnormal divisors
        b[2::4] = (b[2::4] & 0x807FFFFF) | ((0xF8 + ((b[2::4] >> 24) & 7)) << 23)  # huge divisors, Inf, NaN
        gold["div_a"], gold["div_b"] = a, b
        for name, _ in kernels.DIV:
            gold["div_" + name] = kernels.run_div(mod, name, a, b)
        np.savez_compressed(os.path.join(args.out, os.path.basename(args.golden)), **gold)
        say("golden written", os.path.basename(args.golden))
    res["seconds"] = time.time() - t0
    with open(os.path.join(args.out, "verify.json"), "w") as f:
        json.dump(res, f, indent=1)
    say("done", "%.0fs" % res["seconds"])


if __name__ == "__main__":
    main()
