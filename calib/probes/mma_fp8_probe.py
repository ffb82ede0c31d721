"""sm_90a ``mma.sync`` fp8 numerics probe (m16n8k32, e4m3/e5m2 A and B, f32 and f16 accumulators) on the GPU.

On sm_90a ptxas does not emit a native fp8 MMA for ``mma.sync``: it lowers the instruction onto f16 HMMAs
(``tcsim.numerics.tensor_core.LOWER_FP8_VIA_F16``).  This probe records what the H100 computes for it, so CI can
replay the lowering's model against hardware bits (tests/hw/test_mma_fp8_numerics_golden.py; README in
``tests/golden/mma_sync_fp8``).

Kernels: :data:`calib.probes.mma_ptx.FP8_PAIRS` (the batched mma.sync probe of ``tests/golden/mma_sync_numerics``:
one warp = one case, fragment maps written out as address arithmetic; fp8 fragments of m16n8k32 are those of
s8/u8).  Inputs, never stored:

* **random**: the inputs of the recorded wgmma campaign with the same formats (``tests/golden/wgmma_numerics``,
  :func:`calib.probes.wgmma_inputs.gen` of combination ``<a>_<b>_<acc>`` at N = 8: 256 instructions, ten input
  kinds -- normal, wide, subnormal, specials, cancel, huge_tiny, c_extreme, zero_operand, tiny, mixed), with the
  instruction's flags applied (negated A / B, scale-d = 0 -> C = +0; :func:`calib.probes.wgmma_probe.operands`);
  each 64 x 32 A, 8 x 32 B, 64 x 8 C instruction becomes four mma.sync cases (rows 16r .. 16r + 15): 1,024 cases,
  131,072 outputs per pair.  Their SHA-256 must equal the wgmma record's (``in_sha256``) before anything runs;
* **targeted**: :data:`TESTS` -- the wgmma fp8 vectors (:data:`calib.probes.wgmma_targeted.FP8_TESTS`) plus
  vectors aimed at the lowering (:data:`LOWERING_TESTS`: where the two f16 halves and the IEEE add of C differ
  from one fused fp8 block), eight per case on the diagonal (rows j and j + 8, column j).

``python -m calib.probes.mma_fp8_probe device --out DIR`` (GPU machine, a few seconds)
    Runs both sets for every pair, prints the model's agreement, writes ``DIR/mma_sync_fp8.npz`` (GPU outputs)
    and ``DIR/meta.json`` (command, date, GPU, driver, PTX / input / output SHA-256, agreement).
``python -m calib.probes.mma_fp8_probe install --gpu DIR``
    Checks the record (inputs regenerate to the recorded digests, outputs hash to theirs) and copies it to
    ``tests/golden/mma_sync_fp8``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from calib import pipeline as P

from . import runner as R
from . import wgmma_inputs as WI
from . import wgmma_targeted as WT
from .mma_ptx import FP8_PAIRS, Pair, probe_launch, probe_ptx

GOLDEN = P.GOLDEN_ROOT / "mma_sync_fp8"
DATA = "mma_sync_fp8.npz"
WGMMA_N = 8
TESTS_PER_CASE = 8
#: cases per digest chunk (32 wgmma instructions): CI replays the first chunk of each pair, a slow test all 8
CHUNK = 128

#: (name, question, a values, b values, c value), k = position in the 32-wide dot product.  The lowering
#: (tensor_core._mma_fp8_via_f16): P0 = fused f16-HMMA block of k % 4 in {0, 1} from +0, P = fused block of
#: k % 4 in {2, 3} chained onto P0, D = C + P in IEEE arithmetic (round to nearest even).  Values are placed at
#: k = 0, 1, 2, ... in order, so a 3rd value (k = 2) falls in the second half.
LOWERING_TESTS = [
    # D = C + P in IEEE arithmetic, round to nearest even (a native fused block would truncate: wgmma fp8 gives
    # 1.0 for all three f32 vectors).  f32: C = 0.75 / 0.5 / 1.5 ulp(1) beside P = 1
    ("c_plus_p_rne", "ADD", (1,), (1,), 2**-24 + 2**-25),
    ("c_plus_p_tie_even", "ADD", (1,), (1,), 2**-24),
    ("c_plus_p_tie_odd", "ADD", (1,), (1,), 3 * 2**-24),
    # f16 accumulator: C = 0.75 ulp(1) of f16
    ("c_plus_p_rne_f16", "ADD", (1,), (1,), 2**-11 + 2**-12),
    # the two halves (k % 4 in {0, 1}, then {2, 3}): 2^16 - 2^16 in the first half, 2^-18 in the second: the
    # chained second block starts from +0 and keeps 2^-18; one fused 32-wide block (E = 16, F = 25) drops it
    ("halves_cancel_first", "HALF", (256, -256, 2**-9), (256, 256, 2**-9), 0.0),
    # 2^16 + 2^-18 in the first half (2^-18 below its F = 25 window), -2^16 in the second: +0
    ("halves_cancel_split", "HALF", (256, 2**-9, -256), (256, 2**-9, 256), 0.0),
    # f16 accumulator: each half is rounded to f16 (1 + 2^-11 -> 1.0 twice); one block would give 1 + 2^-10
    ("halves_round_f16", "HALF", (1, 2**-6, 2**-6), (1, 2**-5, 2**-5), 0.0),
    # C exact beside products that cancel; C = -1 plus P = 1: +0
    ("c_tiny_cancel", "ADD", (1, -1), (1, 1), 2**-30),
    ("c_neg_plus_p", "ADD", (1,), (1,), -1.0),
]


def tests_for(pair: Pair) -> list:
    """(name, question, a codes, b codes, c code) of the targeted tests representable in ``pair``'s formats."""
    combo = WT.COMBOS[combo_name(pair)]
    return list(WT.fp8_tests(combo)) + R.convert(LOWERING_TESTS, lambda v: WT._fp8(pair.ab, v),
                                                 lambda v: WT._fp8(pair.bt, v), lambda v: WT._acc(pair.acc, v))


def combo_name(pair: Pair) -> str:
    """The wgmma combination with the pair's formats (its recorded campaign supplies the random inputs)."""
    return f"{pair.ab}_{pair.bt}_{pair.acc}"


# ================================================================================================ inputs
def random_cases(pair: Pair, seed: int = WI.MASTER_SEED, chunks: int | None = None):
    """(a (n,16,32), bt (n,8,32), c (n,16,8), kind (n,), wgmma input SHA-256): the wgmma campaign's m64n8 inputs
    as mma.sync cases (module docstring).  ``chunks``: only the first ``chunks`` chunks of :data:`CHUNK` cases
    (the wgmma digest is then None)."""
    from .wgmma_probe import operands

    combo = WT.COMBOS[combo_name(pair)]
    count = None if chunks is None else chunks * CHUNK // 4
    x = WI.gen(combo, WGMMA_N, 0, count, seed=seed)
    wdig = WI.input_digest(x) if chunks is None else None
    A, B, C = [], [], []
    for i in range(len(x["flags"])):
        a, b, c = operands(combo, x, i)
        for r in range(4):
            A.append(a[16 * r:16 * r + 16])
            B.append(b)
            C.append(c[16 * r:16 * r + 16])
    kind = np.repeat(x["kind"], 4)
    return (np.stack(A).astype(pair.a_dtype), np.stack(B).astype(pair.a_dtype), np.stack(C).astype(pair.c_dtype),
            kind, wdig)


def targeted_cases(pair: Pair):
    """(a, bt, c, names, where): the tests of :func:`tests_for` on the diagonals of mma.sync cases, padded to a
    multiple of 4 cases (the probe's warps per block); ``where[t] = (case, j)``: output D[case][j][j]."""
    return R.diagonal([(name, av, bv, cv) for name, _q, av, bv, cv in tests_for(pair)], rows=16, K=32,
                      a_dtype=pair.a_dtype, b_dtype=pair.a_dtype, c_dtype=pair.c_dtype, per_case=TESTS_PER_CASE,
                      multiple=4)


def digest(*arrays) -> str:
    return P.sha256(b"".join(np.ascontiguousarray(x).tobytes() for x in arrays))


def model(pair: Pair, a, bt, c, params=None) -> np.ndarray:
    """D (n,16,8) of every case by ``tcsim.numerics.tensor_core.mma_float`` with ``tc_params('sm_90a', 'mma.sync',
    ...)`` (the LOWER_FP8_VIA_F16 lowering) or ``params``."""
    from tcsim.numerics import tensor_core as TC

    p = params or TC.tc_params("sm_90a", "mma.sync", pair.ab)
    return np.stack([TC.mma_float(a[i], bt[i].T, c[i], pair.ab, pair.bt, pair.acc, p)
                     for i in range(len(a))]).astype(pair.c_dtype)


# ================================================================================================ device
def _prepare(name):
    pair = FP8_PAIRS[name]
    return random_cases(pair), targeted_cases(pair)


def _model_job(args):
    name, a, bt, c = args
    return model(FP8_PAIRS[name], a, bt, c)


def device_main(out: Path, names, backend: str = "gpu", argv=(), workers: int = 1) -> int:
    import multiprocessing as mp

    out.mkdir(parents=True, exist_ok=True)
    log = lambda s: print(s, flush=True)   # noqa: E731
    t0 = time.time()
    wmeta = P.read_json(P.GOLDEN_ROOT / "wgmma_numerics" / P.META)
    meta = {"command": P.command_line("calib.probes.mma_fp8_probe", argv), "date": P.utc_now(),
            "seed": WI.MASTER_SEED, "wgmma_n": WGMMA_N, "pairs": {}}
    ctx = mp.get_context("fork")
    with ctx.Pool(max(1, workers)) as pool:
        prepared = pool.map(_prepare, names)
    log(f"generated the inputs of {len(names)} pairs in {time.time() - t0:.1f} s")
    runs = []                                     # (name, part, a, bt, c, gpu d)
    for name, ((a, bt, c, kind, wdig), (ta, tbt, tc_, tnames, twhere)) in zip(names, prepared):
        pair = FP8_PAIRS[name]
        want = wmeta["combos"][combo_name(pair)][str(WGMMA_N)]["in_sha256"]
        if wdig != want:
            log(f"{name}: the regenerated wgmma inputs do not hash to the wgmma record's; not run")
            return 2
        rec = {"opcode": pair.opcode, "ptx_sha256": P.sha256(probe_ptx(pair)), "wgmma_combo": combo_name(pair),
               "wgmma_in_sha256": wdig}
        meta["pairs"][name] = rec
        # one launch per pair: the random cases, then the targeted ones
        r = P.execute(probe_launch(pair, np.concatenate([a, ta]), np.concatenate([bt, tbt]),
                                   np.concatenate([c, tc_])), backend, timeout=120)
        if not r.ok:
            log(f"{name}: {r.error}: {r.detail}")
            rec["error"], rec["detail"] = r.error, r.detail
            continue
        if r.device:
            meta.update(P.gpu_fields(r.device, r.driver, r.cc))
        dall = np.asarray(r.outputs[3]).astype(pair.c_dtype)
        rec["kernel_ms"] = r.elapsed_ms
        for part, (pa, pb, pc), d in (("random", (a, bt, c), dall[:len(a)]), ("targeted", (ta, tbt, tc_),
                                                                              dall[len(a):])):
            rec[part] = {"cases": int(len(pa)), "in_sha256": digest(pa, pb, pc), "gpu_out_sha256": digest(d)}
            if part == "random":
                rec[part]["chunk_in_sha256"] = [digest(pa[k:k + CHUNK], pb[k:k + CHUNK], pc[k:k + CHUNK])
                                                for k in range(0, len(pa), CHUNK)]
                rec[part]["chunk_out_sha256"] = [digest(d[k:k + CHUNK]) for k in range(0, len(pa), CHUNK)]
            runs.append((name, part, pa, pb, pc, d, kind if part == "random" else (tnames, twhere)))
    log(f"ran {len(runs)} launches; {time.time() - t0:.1f} s")
    arrays = {}
    with ctx.Pool(max(1, workers)) as pool:
        refs = pool.map(_model_job, [(name, pa, pb, pc) for name, _p, pa, pb, pc, _d, _x in runs])
    for (name, part, pa, pb, pc, d, extra), ref in zip(runs, refs):
        rec = meta["pairs"][name][part]
        miss = ref != d
        rec["model_misses"] = int(miss.sum())
        if part == "random":
            rec["miss_by_kind"] = {k: int(miss[extra == j].sum()) for j, k in enumerate(WI.KINDS)}
        else:
            tnames, twhere = extra
            rec["named"] = R.named(d, tnames, twhere)
            arrays[f"{name}/targeted/names"] = np.array(tnames)
            arrays[f"{name}/targeted/where"] = np.array(twhere, np.int64)
            R.report_named(log, f"{name} ", ref, d, tnames, twhere)
        arrays[f"{name}/{part}/d"] = d
        log(f"{name} {part}: model misses {int(miss.sum())} of {miss.size}")
        for i, m, n in np.argwhere(miss)[:4]:
            log(f"    case {i} D[{m}][{n}]: GPU {int(d[i, m, n]):#x} model {int(ref[i, m, n]):#x}")
    np.savez_compressed(out / DATA, **arrays)
    P.write_json(out / P.META, meta)
    log(f"wrote {out / DATA} ({(out / DATA).stat().st_size} bytes); total {time.time() - t0:.1f} s")
    return 0


# ================================================================================================ replay
def load_golden(golden: Path = GOLDEN):
    return P.read_json(golden / P.META), P.load_arrays(golden / DATA)


def golden_cases(name: str, part: str, rec=None, golden: Path = GOLDEN, chunks: int | None = None):
    """(a, bt, c, gpu d) of the recorded ``part`` ("random" / "targeted") of pair ``name``, the inputs regenerated
    and every digest checked (:class:`calib.pipeline.RecordError` when stale).  ``chunks``: only the first
    ``chunks`` chunks of the random part (checked against their chunk digests)."""
    meta, arr = rec or load_golden(golden)
    pair = FP8_PAIRS[name]
    r = meta["pairs"][name]
    if r["ptx_sha256"] != P.sha256(probe_ptx(pair)):
        raise P.RecordError(f"{name}: the probe PTX changed since the record; re-record: "
                            f"python -m calib.probes.mma_fp8_probe device --out DIR")
    if part == "random" and chunks is not None:
        a, bt, c, _kind, _ = random_cases(pair, chunks=chunks)
        d = arr[f"{name}/random/d"][:len(a)]
        for k in range(chunks):
            sl = slice(k * CHUNK, (k + 1) * CHUNK)
            if digest(a[sl], bt[sl], c[sl]) != r["random"]["chunk_in_sha256"][k]:
                raise P.RecordError(f"{name} random chunk {k}: regenerated inputs differ from the recorded ones")
            if digest(d[sl]) != r["random"]["chunk_out_sha256"][k]:
                raise P.RecordError(f"{name} random chunk {k}: stored GPU outputs do not match their SHA-256")
        return a, bt, c, d
    if part == "random":
        a, bt, c, _kind, _ = random_cases(pair)
    else:
        a, bt, c, names, _ = targeted_cases(pair)
        if list(arr[f"{name}/targeted/names"]) != names:
            raise P.RecordError(f"{name}: the targeted tests changed since the record")
    if digest(a, bt, c) != r[part]["in_sha256"]:
        raise P.RecordError(f"{name} {part}: regenerated inputs differ from the recorded ones (SHA-256)")
    d = arr[f"{name}/{part}/d"]
    if digest(d) != r[part]["gpu_out_sha256"]:
        raise P.RecordError(f"{name} {part}: stored GPU outputs do not match the recorded SHA-256")
    return a, bt, c, d


def install_main(gpu_dir: Path, dest: Path) -> int:
    rec = load_golden(gpu_dir)
    for name in rec[0]["pairs"]:
        for part in ("random", "targeted"):
            golden_cases(name, part, rec=rec)
    P.install_files([(gpu_dir / P.META, P.META), (gpu_dir / DATA, DATA)], dest)
    print(f"installed into {dest}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.probes.mma_fp8_probe", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("device", help="run the random and targeted fp8 cases on the GPU and compare with the model")
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--pair", action="append", choices=list(FP8_PAIRS))
    d.add_argument("--backend", choices=["gpu", "sim"], default="gpu")
    d.add_argument("--workers", type=int, default=1, help="processes for input generation and the model")
    i = sub.add_parser("install", help="check a device record and copy it to tests/golden/mma_sync_fp8")
    i.add_argument("--gpu", type=Path, required=True)
    i.add_argument("--out", type=Path, default=GOLDEN)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.cmd == "device":
        return R.cli(lambda: device_main(args.out, args.pair or list(FP8_PAIRS), args.backend, argv, args.workers))
    return R.cli(lambda: install_main(args.gpu, args.out))


if __name__ == "__main__":
    raise SystemExit(main())
