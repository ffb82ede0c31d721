"""The timing corpus (issue 21, ``calib/timing_corpus``): its split, its H100 golden data, its evaluation cache and the
README figures made from them.

* the split is the fixed hash of each kernel's name (recomputed here from hashlib, not through the module), the
  microbench validation kernels are in fit, and only test-split kernels ever move (to validation);
* the golden record (``tests/golden/timing_corpus_h100``) belongs to today's kernels (PTX digests), every kernel was
  correct on every H100 launch, and the stored medians are the medians of the stored raw cycles;
* the evaluation cache (``calib/timing_corpus/evaluation.json``, the simulated cycles) is what the simulator gives
  now: a few cheap kernels are re-simulated on every run, the whole corpus under ``slow``;
* the README's corpus section is exactly what :func:`calib.timing_corpus.evaluate.readme_section` renders, and the
  split lines are recomputed here from the raw files.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil

import numpy as np
import pytest

from calib import pipeline as P
from calib.timing_corpus import evaluate as E
from calib.timing_corpus import kernels as K
from calib.timing_corpus import record as R
from calib.timing_corpus import split as S

HAVE_GOLDEN = (E.GOLDEN / P.META).exists() and (E.GOLDEN / R.DATA).exists()
HAVE_CACHE = E.CACHE.exists()
needs_golden = pytest.mark.skipif(not HAVE_GOLDEN, reason=f"{E.GOLDEN} not recorded yet: bash "
                                  "calib/timing_corpus/device_run.sh $OUT on an H100, then install")
needs_cache = pytest.mark.skipif(not HAVE_CACHE, reason="run python -m calib.timing_corpus timing evaluate")


def test_corpus_size_and_sources():
    names = R.names()
    assert len(names) == len(set(names)) >= 60
    sources = {R.source_of(n).split("/")[0] for n in names}
    assert sources == {"cuda", "triton", "microbench", "cuda-samples"}
    assert sum(R.source_of(n) == "triton" for n in names) >= 20
    for k in K.KERNELS:
        assert (K.HERE / k.ptx).is_file(), k.ptx
        assert re.search(r"\.entry\s+" + re.escape(k.entry) + r"\s*\(", (K.HERE / k.ptx).read_text()), k.name


def test_split_is_the_committed_hash():
    counts = {s: 0 for s in S.SPLITS}
    for n in R.names():
        if R.source_of(n).startswith("cuda-samples/"):
            assert n.startswith("cs_") and S.split_of(n) == S.HELDOUT
            continue
        h = int.from_bytes(hashlib.sha256(n.encode()).digest(), "big") % 10
        want = "fit" if n.startswith("val_") or h <= 5 else "validation" if h <= 7 else "test"
        if n in S.MOVED:
            assert want == "test" and S.MOVED[n][0] == "validation" and S.MOVED[n][1]
            want = "validation"
        assert S.split_of(n) == want, n
        counts[want] += 1
    assert all(counts[s] >= 10 for s in S.SPLITS), counts
    assert all(S.split_of(n) == "fit" for n in K.MICROBENCH_VALIDATION)


def test_inputs_are_deterministic():
    for name in ("spmv_csr", "tri_attention_fwd", "hist_atom_acq_rel_gpu"):
        a1, a2 = K.BY_NAME[name].plain_launch().args, K.BY_NAME[name].plain_launch().args
        for x, y in zip(a1, a2):
            if isinstance(x, np.ndarray):
                assert x.tobytes() == y.tobytes()


def test_instrumented_copy_adds_one_clock_parameter():
    launch, k, _ = R.build("chase_runtime_trip")
    text = launch.ptx_text()[0]
    assert k == len(launch.args) - 1 and launch.args[k].shape == (128, 2)
    assert text.count("%clock64") == 2 and "__mb_clk" in text


def test_checks_reject_wrong_outputs():
    """Each kind of check fails on a perturbed output (so a correct flag means something)."""
    for name, i in (("scan_blelloch", 1), ("softmax_block_row", 1), ("hist_atom_relaxed_gpu", 1)):
        k = K.BY_NAME[name]
        args = k.plain_launch().args
        bad = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
        bad[i] = bad[i] + 1
        assert not k.check(args, bad)[0], name


# ------------------------------------------------------------------------------------------------ golden
META = E.load_golden() if HAVE_GOLDEN else {"kernels": {}}


@needs_golden
def test_golden_provenance():
    assert META["backend"] == "gpu" and "H100" in META["gpu"] and META["compute_capability"] == "9.0"
    assert META["command"].startswith("python -m calib.timing_corpus record") and META["date"]
    assert META["reps"] >= 3


@needs_golden
def test_golden_belongs_to_todays_kernels():
    assert sorted(META["kernels"]) == sorted(R.names()), "re-record after adding or removing a kernel"
    stale = [n for n, e in META["kernels"].items()
             if e["ptx_sha256"] != P.sha256(R.build(n)[0].ptx_text()[0].encode())]
    assert not stale, f"kernels changed since the H100 record: {stale}"


@needs_golden
def test_golden_correct_and_medians_recomputed():
    arrays = P.load_arrays(E.GOLDEN / R.DATA)
    for n, e in META["kernels"].items():
        if e.get("status") != "ok":
            continue
        assert all(e["correct"]), (n, e["check"])
        raw = np.asarray(arrays[n])
        assert len(raw) == META["reps"] and np.median(raw) == e["median_cycles"], n
        assert raw.min() > 0


# ------------------------------------------------------------------------------------------------ evaluation
#: cheap kernels (about a second each) re-simulated on every run
REPLAY = ("reduce_float4_unrolled", "scan_warp_shfl", "loop_runtime_trip_loads")


@needs_cache
def test_cache_replays_on_a_subset():
    cache = E.load_cache()
    got = E.simulate(list(REPLAY))
    for n in REPLAY:
        assert got[n] == cache[n], f"{n}: simulated {got[n]}, cached {cache[n]}: run python -m " \
                                   "calib.timing_corpus timing evaluate --jobs 2 (and update the README)"


@pytest.mark.slow
@needs_cache
def test_cache_replays_on_the_whole_corpus():
    cache = E.load_cache()
    got = E.simulate(R.names(), jobs=2)
    assert all(v is not None for v in got.values()), "a kernel is wrong or fails on the simulator"
    diff = {n: (got[n], cache.get(n)) for n in got if got[n] != cache.get(n)}
    assert not diff, diff


def _independent_split_lines():
    """The three split lines from the raw files, without calib.timing_corpus.evaluate's helpers."""
    meta = json.loads((E.GOLDEN / P.META).read_text())
    sim = json.loads(E.CACHE.read_text())["kernels"]
    errs = {s: [] for s in S.SPLITS + (S.HELDOUT,)}
    for n, e in meta["kernels"].items():
        if e.get("status") == "ok" and all(e["correct"]) and sim.get(n) is not None:
            errs[S.split_of(n)].append(abs(sim[n] - e["median_cycles"]) / e["median_cycles"])
    out = [f"{s + ' split' if s != S.HELDOUT else 'held-out set (NVIDIA cuda-samples)'}: mean absolute percentage "
           f"error {100 * sum(v) / len(v):.1f}% over {len(v)} kernels" for s, v in errs.items()]
    second = [abs(sim[n] - meta["kernels"][n]["median_cycles"]) / meta["kernels"][n]["median_cycles"]
              for n in K.HELDOUT2 if n in meta["kernels"] and sim.get(n) is not None]
    if second:
        out.append("  of which the second held-out set (first measured after the model was frozen): mean absolute "
                   f"percentage error {100 * sum(second) / len(second):.1f}% over {len(second)} kernels")
    return out


@needs_golden
@needs_cache
def test_report_split_lines(capsys):
    assert E.report(cached=True) == 0
    out = capsys.readouterr().out.splitlines()
    want = _independent_split_lines()
    assert out[-len(want):] == want


@needs_golden
@needs_cache
def test_readme_states_the_split_errors():
    text = E.README.read_text()
    assert E.BEGIN in text and E.END in text, "README.md lacks the timing-corpus block"
    block = E.BEGIN + text.split(E.BEGIN, 1)[1].split(E.END, 1)[0] + E.END
    assert block == E.readme_section(), "README out of date: python -m calib.timing_corpus timing readme --write"
    for line in _independent_split_lines():
        assert line in block
    assert "Held out" in block


# ------------------------------------------------------------------------------------------------ SASS loop facts
def test_loop_facts_cover_the_corpus():
    """The committed loop facts (sim/timing/data/loop_facts_h100.json) are keyed by today's instrumented kernels:
    a kernel whose PTX changed would silently lose them."""
    from tcsim.isa.parser import parse
    from tcsim.timing.sass import LOOP_FACTS, kernel_fingerprint
    table = json.loads(LOOP_FACTS.read_text())
    by_kernel = {v["kernel"]: fp for fp, v in table.items()}
    for name in ("reduce_smem_tree", "tri_hist_relaxed_gpu", "chase_runtime_trip"):
        launch = R.build(name)[0]
        fn = parse(launch.ptx_text()[0], "kernel.ptx").functions[launch.kernel]
        assert by_kernel.get(name) == kernel_fingerprint(fn.body), name
    # read off the SASS (tests/golden/timing_corpus_h100/sass.tgz): reduce_smem_tree's block-stride loop is one
    # LDG per iteration; Triton's histogram loop stays rolled; chase_runtime_trip's main loop is unrolled x16
    assert table[by_kernel["reduce_smem_tree"]]["loops"]["63"] is True
    assert set(table[by_kernel["tri_hist_relaxed_gpu"]]["loops"].values()) == {True}
    assert table[by_kernel["chase_runtime_trip"]]["loops"]["70"] is False


@pytest.mark.skipif(not (shutil.which("ptxas") and shutil.which("nvdisasm")), reason="needs ptxas and nvdisasm")
def test_loop_facts_recomputed():
    from calib.timing_corpus import sass_loops
    from tcsim.isa.parser import parse
    from tcsim.timing.sass import LOOP_FACTS, kernel_fingerprint
    table = json.loads(LOOP_FACTS.read_text())
    for name in ("smem_bank_stride1", "tri_gather"):       # (the smem_bank_stride* kernels share one PTX)
        launch = R.build(name)[0]
        text = launch.ptx_text()[0]
        fp = kernel_fingerprint(parse(text, "kernel.ptx").functions[launch.kernel].body)
        windows: dict = {}
        assert sass_loops.loop_facts(text, launch.kernel, windows) == table[fp]["loops"]
        assert windows == table[fp]["windows"]


def test_load_window_from_register_reuse():
    """calib/timing_corpus/sass_loops.py load_window on hand-written SASS: a load stays in flight until an
    instruction reads a register it writes; the most in flight over the second pass of the body."""
    from types import SimpleNamespace as NS
    from calib.timing_corpus.sass_loops import load_window

    def body(*texts):
        return [NS(text=t) for t in texts]
    # two loads, then their consumer, the registers reused: 2 in flight at once
    assert load_window(body("LDG.E R1, desc[UR4][R8.64]", "LDG.E R2, desc[UR4][R10.64]",
                            "FFMA R0, R1, R2, R0", "IADD3 R8, P0, R8, 0x80, RZ")) == 2
    # gemv-like: four loads before the first consumer, each consumer frees two (4 in flight at most)
    assert load_window(body("LDG.E R21, desc[UR4][R10.64]", "LDG.E R24, desc[UR4][R8.64]",
                            "LDG.E R26, desc[UR4][R10.64+0x80]", "LDG.E R25, desc[UR4][R8.64+0x80]",
                            "FFMA R0, R21, R24, R0", "FFMA R0, R26, R25, R0")) == 4
    # a 128-bit load writes R4..R7: read through R6 it is consumed; a store reads its data register
    assert load_window(body("LDG.E.128 R4, desc[UR4][R2.64]", "LDS R9, [R3]", "FADD R0, R6, R0",
                            "STS [R3], R9")) == 2
    # predicated loads count; no loads: 0
    assert load_window(body("@P0 LDG.E R5, desc[UR4][R2.64]", "FADD R0, R5, R0")) == 1
    assert load_window(body("FADD R0, R1, R0")) == 0
