"""The README's "What backs each claim" section cannot go stale (issue 22, acceptance): it is rendered here from the
committed data (the mmasim replay manifest, the H100 numerics / TMA / timing records, the fuzz campaigns, the
mutation list) and must appear in README.md verbatim; every path and test it names must exist.
``python tests/test_readme_claims.py`` prints the rendered section to paste after the data changes.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GOLDEN = ROOT / "tests" / "golden"
sys.path.insert(0, str(ROOT / "tests" / "numerics"))
sys.path.insert(0, str(ROOT / "benchmarks"))

HEADING = "## What backs each claim"

#: tcsim kind (the manifest's ``kind``) -> (what the README calls it, the operand / scale forms recorded)
KINDS = {
    "f16": ("`tcgen05.mma` kind::f16", "f16 → f32, f16 → f16, bf16 → f32"),
    "tf32": ("`tcgen05.mma` kind::tf32", "tf32 → f32"),
    "f8f6f4": ("`tcgen05.mma` kind::f8f6f4", "all 25 pairs of e4m3, e5m2, e3m2, e2m3, e2m1, → f32 and → f16"),
    "mxf8f6f4": ("`tcgen05.mma` kind::mxf8f6f4", "all 25 pairs, ue8m0 scales, block 32"),
    "mxf4": ("`tcgen05.mma` kind::mxf4", "e2m1, ue8m0 scales, block 32"),
    "mxf4nvf4": ("`tcgen05.mma` kind::mxf4nvf4", "e2m1, ue8m0 block 32, ue8m0 block 16, ue4m3 block 16"),
    "mma.sync:f16": ("legacy `mma.sync` f16 / bf16", "f16 → f32, f16 → f16, bf16 → f32"),
    "mma.sync:tf32": ("legacy `mma.sync` tf32", "tf32 → f32"),
}


def _n(x: int) -> str:
    return f"{x:,}"


def render() -> str:
    import test_numerics_mutations as TM

    man = json.loads((GOLDEN / "mmasim_oracle" / "replay" / "manifest.json").read_text())
    per_kind: dict = {}
    for row in man["variants"]:
        k = per_kind.setdefault(row["kind"], [0, 0, row["cases"]])
        k[0] += 1
        k[1] += row["cases"]
        k[2] = min(k[2], row["cases"])
    mma = json.loads((GOLDEN / "mma_sync_numerics" / "summary.json").read_text())
    wg = json.loads((GOLDEN / "wgmma_numerics" / "meta.json").read_text())
    wg_cases = sum(n * 64 * int(N) for N, n in wg["instructions"].items())
    wg_floor = json.loads((GOLDEN / "wgmma_numerics" / "targeted_floor_meta.json").read_text())
    f8 = json.loads((GOLDEN / "mma_sync_fp8" / "meta.json").read_text())
    f8_cases = {r["random"]["cases"] for r in f8["pairs"].values()}
    f8_named = {len(r["targeted"]["named"]) for r in f8["pairs"].values()}
    tma = json.loads((GOLDEN / "tma_h100" / "meta.json").read_text())
    tma_cases = sum(c["cases"] for c in tma["counts"].values())
    tma_err = sum(c["error"] for c in tma["counts"].values())
    timing = json.loads((GOLDEN / "timing_h100" / "meta.json").read_text())
    corpus_meta = GOLDEN / "timing_corpus_h100" / "meta.json"
    corpus = json.loads(corpus_meta.read_text()) if corpus_meta.exists() else None
    from calib.fuzz.record import load as load_fuzz
    fuzz = {p.stem: load_fuzz(p)[1] for p in sorted((GOLDEN / "fuzz_campaign").glob("h[12]00_*seeds_*.npz"))}
    campaigns = {k: m for k, m in fuzz.items() if m["count"] >= 1000}
    gpus = sorted({k[:4].upper() for k in campaigns})
    small = [(k, m) for k, m in fuzz.items() if k not in campaigns]
    n_live = sum(1 for m in TM.MUTANTS if m.id not in TM.EQUIVALENT and m.id not in TM.GAPS)
    dis = _disagreements(fuzz)
    mut = json.loads((ROOT / "benchmarks" / "results" / "mutations_local.json").read_text())["results"]
    import bench_mutations as BM
    ver = man["versions"]

    rows = [
        ("sm_90a `mma.sync` numerics (f16, bf16, tf32)",
         f"{mma['device'].replace('NVIDIA ', '')}: {_n(mma['n_cases'])} random cases for each of {len(mma['pairs'])} "
         f"float forms, plus targeted vectors, s8 / u8 too (`tests/golden/mma_sync_numerics`)",
         f"`tests/hw/test_mma_numerics_golden.py`: {_n(mma['ci_cases'])} cases per form and every targeted and "
         f"discriminating vector, bit for bit (all of them with `TCSIM_FULL_NUMERICS=1`)"),
        ("sm_90a `wgmma` numerics",
         f"{wg['gpu'].replace('NVIDIA ', '')}: {_n(wg_cases)} random outputs for each of {len(wg['combos'])} type "
         f"combinations, plus targeted vectors, and vectors aimed at the floor on E for "
         f"{' and '.join(c.split('_')[0] for c in wg_floor['combos'])} → f32 (`tests/golden/wgmma_numerics`)",
         "`tests/hw/test_wgmma_numerics_golden.py`: every output, bit for bit"),
        ("sm_90a `mma.sync` fp8 numerics (e4m3, e5m2: ptxas lowers them onto f16 HMMAs)",
         f"{f8['gpu'].replace('NVIDIA ', '')}: {_n(min(f8_cases))} random cases ({_n(min(f8_cases) * 128)} outputs) "
         f"for each of {len(f8['pairs'])} m16n8k32 forms (all e4m3 / e5m2 pairs → f32 and → f16), plus "
         f"{min(f8_named)}-{max(f8_named)} targeted vectors each (`tests/golden/mma_sync_fp8`)",
         "`tests/hw/test_mma_fp8_numerics_golden.py`: the first 128 cases of each form and every targeted vector, "
         "bit for bit (every case under `-m slow`)"),
    ]
    for kind, (name, forms) in KINDS.items():
        n_var, cases, least = per_kind[kind]
        many = f"{_n(cases)} random cases, at least {_n(least)} for each of {n_var} forms"
        rows.append((f"sm_100a {name} numerics",
                     f"mmasim {ver['mmasim']}: {many if n_var > 1 else _n(cases) + ' random cases'} ({forms})",
                     "`tests/numerics/test_mmasim_replay.py`: every case, bit for bit"))
    rows += [
        ("sm_100a `tcgen05.mma` kind::i8, `mma.sync` / `wgmma` s8 / u8",
         "exact integer arithmetic (the sum is exact; then it wraps, or clamps with `.satfinite`); the sm_90a forms "
         "also on the H100 records above",
         "`tests/semantics/test_tcgen05_mma.py` (`exact_i8`), `tests/numerics/test_tensor_core.py`"),
        ("a planted change of a numerics parameter is caught",
         f"the numerics records above: {len(TM.MUTANTS)} one-step changes of the {len(TM.ROWS)} float rows of the "
         f"parameter table that have data, and of its constants",
         f"`tests/numerics/test_numerics_mutations.py`: each of {n_live} changes fails a replay above (its "
         f"recorded witness); {len(TM.EQUIVALENT)} are shown unobservable from the format table, the PTX "
         f"shapes and the fp8 lowering; " + (f"{len(TM.GAPS)} known gaps: {', '.join('`' + g + '`' for g in TM.GAPS)}" if TM.GAPS
                        else "no known gap")),
        ("the examples' expected values",
         "`gemm_async`: mmasim's D for each launch the tests run; `mma_gemm`, `tma_mma_gemm`: the H100's D; every "
         "example check: the records above, for each numerics form it uses",
         "`tests/examples/test_tcgen05_examples.py`, `tests/examples/test_examples.py`: D bit for bit; "
         "`tests/examples/kernel_checks.py`: each check runs with its numerics forms checked against the records "
         "in the same run"),
        ("TMA (tile mode, bulk copies, reductions, multicast, faults)",
         f"H100: {tma_cases} cases, {tma_err} of them faults or refused tensor maps (`tests/golden/tma_h100`)",
         "`tests/hw/test_tma_golden.py`: every case bit for bit; a fault must be the kind of fault the GPU reported"),
        ("differential fuzzing",
         f"{len(campaigns)} campaigns of random programs ({_n(sum(m['count'] for m in campaigns.values()))} "
         f"programs) on {' and '.join(gpus)} (`tests/golden/fuzz_campaign`)"
         + (f", and the first {small[0][1]['count']} programs of generator version"
            f"{'s' if len(small) > 1 else ''} {' and '.join(str(m['generator']) for _, m in small)} (what "
            f"`tests/hw/test_fuzz.py` runs on a GPU) on the H100 ("
            + ", ".join(f"`tests/golden/fuzz_campaign/{k}.npz`" for k, _ in small) + ")" if small else ""),
         "`tests/hw/test_fuzz_campaign_replay.py`: agreeing programs (sampled); `tests/hw/test_fuzz_disagreements.py`: "
         f"all {_n(dis['all'])} recorded disagreements (`tests/golden/fuzz_campaign/disagreements.json`): "
         f"{_n(dis['explained'])} reproduced bit for bit by their explanation ({_n(dis['line_rewrite'])} lint-noted "
         f"ones by ptxas's lowering read from SASS), {_n(dis['agree_now'])} agree now, {_n(dis['open'])} open "
         f"({_n(dis['noted'])} lint-noted, {_n(dis['unexplained'])} unexplained, {_n(dis['gpu_error'])} GPU errors); "
         "one per class in CI, all under `slow`"),
        ("a planted semantic bug is caught",
         f"`benchmarks/bench_mutations.py`: {len(BM.MUTATIONS)} small mutations of numerics, swizzle, descriptors, "
         f"mbarrier, TMA and timing, each run against its fast tests (`benchmarks/results/mutations_local.json`: "
         f"{sum(r['caught'] for r in mut)} of {len(mut)} caught)",
         "`tests/test_mutation_benchmark.py`: every mutation still applies; each is caught under `slow`"),
        ("sm_90a timing",
         f"H100: {len(timing['cases'])} recorded calibration and validation cases (`tests/golden/timing_h100`)"
         + (f", and a corpus of {len(corpus['kernels'])} kernels (`tests/golden/timing_corpus_h100`)" if corpus else ""),
         "`tests/hw/test_timing_validation.py` (\"How good the H100 timing is\" above)"
         + (", `tests/hw/test_timing_corpus.py`" if corpus else "")),
    ]
    lines = [HEADING, "",
             "Each claim, the data it rests on, and the test that checks it on every CI run (no GPU, no torch). "
             "mmasim is MMA-Sim's PyPI release (arXiv 2511.10909): its Blackwell models were fitted by its authors to "
             "B200 hardware; tcsim has no B200, so the sm_100a rows are checked against that second model, not "
             f"against a GPU. Its results were recorded once (`{man['command']}`, mmasim {ver['mmasim']}, torch "
             f"{ver['torch']}; `tests/golden/mmasim_oracle/replay/manifest.json` has the seed and the input digests) "
             "and are replayed without torch. This section is rendered from the data by "
             "`tests/test_readme_claims.py`.", "",
             "| claim | backed by | how CI checks it |", "| --- | --- | --- |"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    lines += ["",
              "Not backed by any data: sm_100a timing (the published tcgen05.mma fits, "
              "`benchmarks/bench_tcgen05_fits.py`, and estimates in `sim/timing/params.py`); sm_100a `mma.sync` fp8 "
              "(provisional parameters); fp6 / fp4 operands inside kind::f8f6f4 and mxf8f6f4, where mmasim "
              "extrapolates as tcsim does (model against model: `tests/golden/mmasim_oracle/README.md`)."]
    return "\n".join(lines) + "\n"


def _disagreements(fuzz: dict) -> dict:
    """Counts of tests/golden/fuzz_campaign/disagreements.json over the committed campaign records."""
    from calib.fuzz.explain import LINE_REWRITES

    lst = json.loads((GOLDEN / "fuzz_campaign" / "disagreements.json").read_text())["campaigns"]
    out = dict.fromkeys(("all", "explained", "line_rewrite", "agree_now", "open", "noted", "unexplained",
                         "gpu_error"), 0)
    for stem, c in lst.items():
        if stem not in fuzz:
            continue
        out["agree_now"] += len(c["agree_now"])
        for name, seeds in c["explained"].items():
            out["explained"] += len(seeds)
            out["line_rewrite"] += len(seeds) * any(p.split("@")[0] in LINE_REWRITES for p in name[10:].split("+"))
        for cause, seeds in c["open"].items():
            out["open"] += len(seeds)
            kind = cause.split(":")[0]
            if kind in ("noted", "unexplained", "gpu_error"):
                out[kind] += len(seeds)
    out["all"] = out["agree_now"] + out["explained"] + out["open"]
    return out


def test_readme_section_is_current():
    text = README.read_text()
    want = render()
    assert all(len(line) < 800 for line in want.splitlines()), "a rendered row holds more than a figure"
    assert want in text, ("README.md's section '" + HEADING + "' differs from the data; paste the output of "
                          "`python tests/test_readme_claims.py`")


def test_named_paths_exist():
    for path in re.findall(r"`((?:tests|benchmarks|sim)/[^`\s]+)`", render()):
        assert (ROOT / path).exists(), path


if __name__ == "__main__":
    print(render(), end="")
