"""Recorded mmasim results for the sm_100a tensor-core numerics, replayed in CI without torch (issue 22, item 1).

MMA-Sim (PyPI ``mmasim``, pinned to MMASIM_VERSION; its Blackwell models were fitted by its authors to B200
hardware, see tests/golden/mmasim_oracle/README.md) is run once, by ``record`` below, on at least 10^5 random cases
of every variant of tests/numerics/test_mmasim_oracle.py (every tcgen05 kind / operand-type pair / accumulator /
scale format and block that tcsim models and mmasim has, plus legacy mma.sync on sm_100a).  What is committed
(tests/golden/mmasim_oracle/replay/):

* ``manifest.json``: provenance (command, date, mmasim / torch / numpy / Python versions, tcsim commit), the seed and
  the case plan, and per variant the input and output digests and the output classes;
* ``outputs.npz``: per variant and per chunk of CHUNK_TILES tiles, an 8-byte BLAKE2b digest of the inputs and one of
  mmasim's output bits, and mmasim's raw output bits of the first RAW_TILES tiles of every chunk (byte planes,
  xz-compressed).  The raw bits of every case would be ~20 MB compressed (f32 mantissas do not compress); the
  digests keep the check exact for every case at 16 bytes per chunk of 40,960 cases, and the raw sample (an eighth
  of the cases) names the failing cases.

The inputs are not stored: ``chunk_inputs`` regenerates them from the recorded seed with the case generator of
test_mmasim_oracle.py (numpy only) and the replay checks their digest first, so a change of the generator (or of
numpy's random streams) fails with the command that re-records, never silently compares other inputs.

Script mode (from the repository root; ``record`` needs the ``oracle`` extra, torch + mmasim)::

    python tests/numerics/oracle_replay.py record        # writes replay/manifest.json and replay/outputs.npz
    python tests/numerics/oracle_replay.py record-examples   # mmasim's D of the gemm_async launches the tests run
    python tests/numerics/oracle_replay.py witnesses     # tcsim only: writes replay/witnesses.json (mutants)
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import lzma
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import test_mmasim_oracle as MO  # noqa: E402  (the variants, the case generator and the two models)

DATA_DIR = HERE.parent / "golden" / "mmasim_oracle" / "replay"
MANIFEST = DATA_DIR / "manifest.json"
OUTPUTS = DATA_DIR / "outputs.npz"
WITNESSES = DATA_DIR / "witnesses.json"
MMASIM_VERSION = "2.1.1"
SEED = 22
TILE = 32                     # outputs per tile: TILE x TILE (one tcsim call per tile)
CHUNK_TILES = 40              # tiles generated together and digested together
RAW_TILES = 5                 # tiles per chunk whose raw output bits are stored
MIN_CASES = 100_000           # per variant
RECORD_CMD = "python tests/numerics/oracle_replay.py record"
WITNESS_CMD = "python tests/numerics/oracle_replay.py witnesses"
DIGEST_BYTES = 8


def plan(v: MO.Variant) -> list:
    """[(K, tiles)] per chunk: ceil(MIN_CASES / TILE^2) tiles, a fifth of them with K = 2k: two instructions, the
    second accumulating on the first's D (``mmasim_outputs``), which tcsim computes as two chained blocks."""
    n_tiles = -(-MIN_CASES // (TILE * TILE))
    n_chain = n_tiles // 5
    out = []
    for K, nt in ((v.k, n_tiles - n_chain), (2 * v.k, n_chain)):
        while nt > 0:
            m = min(CHUNK_TILES, nt)
            out.append((K, m))
            nt -= m
    return out


def variant_rng(v: MO.Variant, seed: int = SEED):
    """One random stream per variant, keyed by its name (not by its position in the list)."""
    return np.random.default_rng(np.random.SeedSequence([seed, *v.name.encode()]))


def _digest(*arrays) -> bytes:
    h = hashlib.blake2b(digest_size=DIGEST_BYTES)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.shape).encode())
        h.update(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
    return h.digest()


def chunk_inputs(v: MO.Variant, rng, K: int, tiles: int):
    """(A, B, C, scales, scenario, input digest) of one chunk; consumes rng as the recording did."""
    A, B, C, scales, scen = MO.gen_batch(v, rng, tiles, K, tile=TILE)
    parts = [A, B, C] + (list(scales) if scales is not None else [])
    return A, B, C, scales, scen, _digest(*[np.asarray(p, np.int64) for p in parts])


def iter_chunks(v: MO.Variant, seed: int = SEED):
    """Yield (chunk index, K, A, B, C, scales, scenario, input digest) for every chunk of the plan."""
    rng = variant_rng(v, seed)
    for i, (K, tiles) in enumerate(plan(v)):
        yield (i, K) + chunk_inputs(v, rng, K, tiles)


def out_dtype(v: MO.Variant):
    return np.dtype("<u4") if v.acc == "f32" else np.dtype("<u2")


def pack_raw(bits: np.ndarray) -> np.ndarray:
    """Output bits -> xz-compressed byte planes (uint8 array)."""
    b = np.ascontiguousarray(bits)
    planes = b.view(np.uint8).reshape(-1, b.dtype.itemsize).T.copy()
    return np.frombuffer(lzma.compress(planes.tobytes(), preset=9 | lzma.PRESET_EXTREME), np.uint8)


def unpack_raw(blob: np.ndarray, dtype) -> np.ndarray:
    raw = np.frombuffer(lzma.decompress(np.asarray(blob, np.uint8).tobytes()), np.uint8)
    n = raw.size // dtype.itemsize
    return np.ascontiguousarray(raw.reshape(dtype.itemsize, n).T).view(dtype).reshape(-1)


def mmasim_outputs(v: MO.Variant, A, B, C, scales, K: int) -> np.ndarray:
    """mmasim's output bits for every case of a chunk, flattened like tcsim_outputs: one ``dpa`` per instruction of
    K = v.k, each later one taking the previous D as its C (mmasim's block-scaled ``dpa`` takes one instruction's K
    only, so chaining is done here, the same way for every kind)."""
    a, b, c, sa, sb = MO._vectors(A, B, C, scales)
    d = c
    for k0 in range(0, K, v.k):
        ks = slice(k0, k0 + v.k)
        ss = None if scales is None else slice(k0 // v.scale_block, (k0 + v.k) // v.scale_block)
        d = MO.run_mmasim(v, a[:, ks], b[:, ks], d, None if ss is None else sa[:, ss],
                          None if ss is None else sb[:, ss], v.k)
    return d.astype(out_dtype(v))


def tcsim_outputs(v: MO.Variant, A, B, C, scales, params=None) -> np.ndarray:
    """tcsim's output bits for every case of a chunk, flattened (tile, row, column), as out_dtype."""
    p = MO.tcsim_params(v) if params is None else params
    dt = np.uint32 if v.acc == "f32" else np.uint16
    out = np.empty(C.shape, dt)
    Cc = C.astype(dt)
    for t in range(A.shape[0]):
        if scales is None:
            out[t] = MO.mma_float(A[t], B[t], Cc[t], v.a_fmt, v.b_fmt, v.acc, p)
        else:
            out[t] = MO.mma_block_scaled(A[t], B[t], Cc[t], scales[0][t], scales[1][t], v.a_fmt, v.b_fmt,
                                         v.scale_fmt, v.scale_block, p)
    return out.reshape(-1).astype(out_dtype(v))


# ================================================================================================
# Loading and replaying
# ================================================================================================
def load_manifest() -> dict:
    return json.loads(MANIFEST.read_text())


class Recorded:
    """The committed data of one variant: per chunk the input / output digests and the raw sample."""

    def __init__(self, v: MO.Variant, npz):
        self.v = v
        self.in_digest = npz[f"in__{v.name}"]
        self.out_digest = npz[f"out__{v.name}"]
        self.raw = unpack_raw(npz[f"raw__{v.name}"], out_dtype(v))
        self.raw_per_chunk = RAW_TILES * TILE * TILE

    def raw_chunk(self, i: int, tiles: int) -> np.ndarray:
        """Recorded raw bits of chunk i (its first min(RAW_TILES, tiles) tiles)."""
        starts = np.cumsum([0] + [min(RAW_TILES, t) * TILE * TILE for _, t in plan(self.v)])
        return self.raw[starts[i]:starts[i + 1]]


def load_recorded() -> dict:
    with np.load(OUTPUTS) as npz:
        return {v.name: Recorded(v, npz) for v in MO.VARIANTS if f"in__{v.name}" in npz.files}


@dataclasses.dataclass
class ReplayResult:
    variant: str
    cases: int = 0
    raw_checked: int = 0
    raw_bad: list = dataclasses.field(default_factory=list)     # (chunk, case in chunk, scenario, got, want)
    raw_bad_count: int = 0                                      # raw-recorded cases that differ (all of them)
    bad_chunks: list = dataclasses.field(default_factory=list)  # chunks whose output digest differs
    stale_inputs: list = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.raw_bad or self.bad_chunks or self.stale_inputs)

    def describe(self, limit: int = 5) -> str:
        if self.stale_inputs:
            return (f"{self.variant}: the regenerated inputs of chunks {self.stale_inputs[:8]} no longer match the "
                    f"recorded digests (the case generator in test_mmasim_oracle.py or numpy's random streams "
                    f"changed); re-record with the oracle extra installed: {RECORD_CMD}")
        lines = [f"{self.variant}: {len(self.bad_chunks)} of {len(plan(MO.BY_NAME[self.variant]))} chunks differ "
                 f"from mmasim {MMASIM_VERSION}'s recorded outputs (chunks {self.bad_chunks[:8]}); "
                 f"{self.raw_bad_count} of {self.raw_checked} raw-recorded cases differ"]
        for ch, j, sc, got, want in self.raw_bad[:limit]:
            lines.append(f"  chunk {ch} case {j} ({sc}): tcsim {got:#x}, mmasim {want:#x}")
        return "\n".join(lines)


def replay_variant(v: MO.Variant, rec: Recorded, params=None, stop_at_first: bool = False,
                   chunks: Optional[set] = None, raw_only: bool = False) -> ReplayResult:
    """Regenerate every chunk (checking its input digest), run tcsim (``params``: a replacement for the table's
    parameters, for mutants) and compare with the recorded digests and raw bits (``raw_only``: only the tiles whose
    raw bits are recorded, no digest)."""
    r = ReplayResult(v.name)
    pl = plan(v)
    for i, K, A, B, C, scales, scen, din in iter_chunks(v):
        if chunks is not None and i not in chunks:
            continue
        if din != bytes(rec.in_digest[i]):
            r.stale_inputs.append(i)
            if stop_at_first:
                return r
            continue
        if raw_only:
            nt = min(RAW_TILES, pl[i][1])
            A, B, C = A[:nt], B[:nt], C[:nt]
            scales = None if scales is None else (scales[0][:nt], scales[1][:nt])
        got = tcsim_outputs(v, A, B, C, scales, params)
        r.cases += got.size
        want_raw = rec.raw_chunk(i, pl[i][1])
        n = want_raw.size
        r.raw_checked += n
        bad = np.nonzero(got[:n] != want_raw)[0]
        r.raw_bad_count += bad.size
        per_tile = TILE * TILE
        for j in bad[:20]:
            r.raw_bad.append((i, int(j), MO.SCENARIOS[scen[j // per_tile]], int(got[j]), int(want_raw[j])))
        if not raw_only and _digest(got) != bytes(rec.out_digest[i]):
            r.bad_chunks.append(i)
        if stop_at_first and not r.ok:
            return r
    return r


# ================================================================================================
# Checked parameters: tests outside tests/numerics that need expected tensor-core outputs
# ================================================================================================
def variant_name(kind: str, a_fmt: str, b_fmt: str, acc: str, scale_fmt: Optional[str] = None,
                 scale_block: Optional[int] = None, path: str = "tcgen05") -> str:
    """The recorded variant of a tcgen05 kind (path 'mma.sync': sm_100a legacy mma.sync) and operand formats."""
    if path == "mma.sync":
        kind = "mma.sync:" + ("tf32" if a_fmt == "tf32" else "f16")
    name = f"{kind}.{acc}.{a_fmt}.{b_fmt}"
    if scale_fmt is not None:
        name += f".block{scale_block}.{scale_fmt}"
    if name not in MO.BY_NAME:
        raise KeyError(f"no recorded mmasim variant {name!r}")
    return name


_CHECKED: dict = {}


def check_variant(name: str) -> None:
    """tcsim's numerics (the table's parameters as they are now) reproduce the first recorded chunk (40,960 cases)
    of mmasim's outputs for the variant; once per process unless the parameters change."""
    v = MO.BY_NAME[name]
    p = MO.tcsim_params(v)
    if _CHECKED.get(name) != p:
        with np.load(OUTPUTS) as npz:
            rec = Recorded(v, npz)
        r = replay_variant(v, rec, params=p, chunks={0})
        if not r.ok:
            raise AssertionError("tcsim's tensor-core numerics no longer reproduce the recorded mmasim data: "
                                 + r.describe())
        _CHECKED[name] = p


def _hw_test_module(name: str):
    import importlib
    hw = HERE.parent / "hw"
    for p in (str(hw), str(HERE.parents[1])):             # tests/hw, and the root (calib)
        if p not in sys.path:
            sys.path.insert(0, p)
    return importlib.import_module(name)


_CHECKED_HW: dict = {}


def check_form(arch: str, path: str, in_fmt: str, kind: Optional[str] = None) -> bool:
    """Check the numerics of a ``tc_params(arch, path, in_fmt, kind)`` request against recorded data: sm_100a against
    every recorded mmasim variant of that kind and A format (check_variant), sm_90a against the H100 records (the
    discriminating vectors of every mma.sync pair, the targeted vectors of every mma.sync fp8 pair, the targeted
    and floor-on-E vectors of every wgmma combination, of that A format).
    Raises AssertionError when they no longer agree; returns False when no record covers the form."""
    from tcsim.numerics import tensor_core as tc
    k = kind or tc._IMPLIED_KIND.get(in_fmt)
    if arch == "sm_100a":
        names = [v.name for v in MO.VARIANTS if v.path == path and v.a_fmt == in_fmt
                 and (path == "mma.sync" or v.kind == k)]
        for n in names:
            check_variant(n)
        return bool(names)
    key = (arch, path, in_fmt, k)
    p = tc.tc_params(arch, path, in_fmt, kind)
    if _CHECKED_HW.get(key) == p:
        return True
    if path == "mma.sync" and in_fmt in ("e4m3", "e5m2"):     # the ptxas fp8 lowering (tests/golden/mma_sync_fp8)
        F8 = _hw_test_module("test_mma_fp8_numerics_golden")
        runs = [lambda n=n: F8.test_targeted_bit_exact(n) for n, pair in F8.FP8_PAIRS.items() if pair.ab == in_fmt]
    elif path == "mma.sync":
        M = _hw_test_module("test_mma_numerics_golden")
        runs = [lambda n=n: M.test_discriminating_elements_bit_exact(n)
                for n, pair in M.FLOAT_PAIRS.items() if pair.ab == in_fmt]
    else:
        W = _hw_test_module("test_wgmma_numerics_golden")
        runs = [lambda n=n: W.test_targeted_vectors_bit_exact(n)
                for n, c in W.COMBOS.items() if c.is_float and c.a == in_fmt and n in W.TARGETED]
        runs += [lambda n=n: W.test_floor_vectors_bit_exact(n)
                 for n, c in W.COMBOS.items() if c.a == in_fmt and n in ("bf16_f32", "tf32_f32")]
    for run in runs:
        run()
    if runs:
        _CHECKED_HW[key] = p
    return bool(runs)


@contextlib.contextmanager
def numerics_backed_by_data():
    """For the duration, every ``tc_params`` request (an example's check computing its expected D) is also checked
    against the recorded data of its form (check_form): an expected value then rests on numerics that the oracle or
    hardware data backs in the same run, not on the model under test alone.  Works for the examples' checks, which
    import tc_params when they run."""
    from tcsim.numerics import tensor_core as tc
    orig = tc.tc_params

    busy = []

    def tc_params(arch, path, in_fmt, kind=None):
        if not busy:                                   # the checks themselves ask for parameters too
            busy.append(1)
            try:
                check_form(arch, path, in_fmt, kind)
            finally:
                busy.pop()
        return orig(arch, path, in_fmt, kind)
    tc.tc_params = tc_params
    try:
        yield
    finally:
        tc.tc_params = orig


def checked_tc_params(arch: str, path: str, in_fmt: str, kind: Optional[str] = None):
    """``tc_params`` for tests that compute expected D with the numerics model: the form is first checked against
    its recorded data (check_form; forms without a record are named in the README's "What backs each claim")."""
    from tcsim.numerics import tensor_core as tc
    check_form(arch, path, in_fmt, kind)
    return tc.tc_params(arch, path, in_fmt, kind)


def checked_params(kind: str, a_fmt: str, b_fmt: str, acc: str, scale_fmt: Optional[str] = None,
                   scale_block: Optional[int] = None, path: str = "tcgen05"):
    """tcsim's sm_100a parameters for the form, after the numerics they select reproduced the first recorded chunk
    (40,960 cases) of mmasim's outputs for exactly that form (once per process and form).  A test that computes its
    expected D with ``mma_float`` / ``mma_block_scaled`` and these parameters therefore compares with numerics the
    oracle data backs in the same run, not with the model under test alone: a planted numerics change fails here."""
    name = variant_name(kind, a_fmt, b_fmt, acc, scale_fmt, scale_block, path)
    check_variant(name)
    return MO.tcsim_params(MO.BY_NAME[name])


# ================================================================================================
# Recording (needs torch and mmasim)
# ================================================================================================
def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def record(only: Optional[str] = None) -> None:
    import platform
    from importlib.metadata import version

    import torch
    torch.set_num_threads(1)
    if version("mmasim") != MMASIM_VERSION:
        raise SystemExit(f"mmasim {version('mmasim')} installed; the data pins {MMASIM_VERSION}")
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    arrays, rows = {}, []
    t_all = time.time()
    for v in MO.VARIANTS:
        if only and not v.name.startswith(only):
            continue
        t0 = time.time()
        din, dout, raw = [], [], []
        h_in, h_out = hashlib.sha256(), hashlib.sha256()
        classes = dict(nan=0, inf=0, zero=0, subnormal=0, normal=0)
        cases = agree = 0
        for i, K, A, B, C, scales, scen, d_in in iter_chunks(v):
            mm = mmasim_outputs(v, A, B, C, scales, K)
            tc = tcsim_outputs(v, A, B, C, scales)
            din.append(np.frombuffer(d_in, np.uint8))
            dout.append(np.frombuffer(_digest(mm), np.uint8))
            raw.append(mm[:RAW_TILES * TILE * TILE])
            h_in.update(d_in)
            h_out.update(mm.tobytes())
            for key, n in MO._classes(mm, v.acc).items():
                classes[key] += n
            cases += mm.size
            agree += int(np.sum(mm == tc))
        arrays[f"in__{v.name}"] = np.stack(din)
        arrays[f"out__{v.name}"] = np.stack(dout)
        arrays[f"raw__{v.name}"] = pack_raw(np.concatenate(raw))
        rows.append(dict(variant=v.name, kind=v.kind, mmasim_op=_op_name(v), cases=cases,
                         chunks=[list(x) for x in plan(v)], raw_cases=int(sum(x.size for x in raw)),
                         inputs_sha256=h_in.hexdigest(), outputs_sha256=h_out.hexdigest(),
                         outputs=classes, tcsim_agreed_at_recording=agree))
        print(f"{v.name:45s} {cases:7d} cases, tcsim agrees on {agree:7d}, {time.time() - t0:5.1f}s", flush=True)
    manifest = dict(
        what="mmasim's output bits for random cases of every sm_100a tensor-core variant, replayed through tcsim "
             "in CI by tests/numerics/test_mmasim_replay.py (issue 22)",
        command=RECORD_CMD + (f" --only {only}" if only else ""),
        install="pip install -e '.[oracle]'   # mmasim==2.1.1, torch==2.13.0 (the CPU wheel)",
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        seconds=round(time.time() - t_all, 1),
        versions=dict(mmasim=version("mmasim"), torch=torch.__version__, numpy=np.__version__,
                      python=platform.python_version(), tcsim_commit=_git_commit()),
        seed=SEED, tile=TILE, chunk_tiles=CHUNK_TILES, raw_tiles=RAW_TILES, min_cases=MIN_CASES,
        generator="tests/numerics/test_mmasim_oracle.py gen_batch (tile=%d), random stream "
                  "SeedSequence([seed, *variant name bytes]); per chunk BLAKE2b-%d of the int64 input codes "
                  "(A, B, C, SFA, SFB)" % (TILE, DIGEST_BYTES * 8),
        variants=rows)
    np.savez(OUTPUTS, **arrays)
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {OUTPUTS} ({OUTPUTS.stat().st_size} bytes) and {MANIFEST}; {time.time() - t_all:.0f}s")


# ---- the examples' launches: D of a whole kernel from mmasim ------------------------------------------------------
EXAMPLES = DATA_DIR / "examples.npz"
EXAMPLES_MANIFEST = DATA_DIR / "examples.json"
RECORD_EXAMPLES_CMD = "python tests/numerics/oracle_replay.py record-examples"
#: tests/examples/test_tcgen05_examples.py runs these launches: gemm_async.make_launch(seed=11, variant=V,
#: values='normal') for every variant V
GEMM_ASYNC_SEED = 11


def gemm_async_launch(variant: str):
    import tcsim.examples.gemm_async as gemm_async
    return gemm_async.make_launch(seed=GEMM_ASYNC_SEED, variant=variant, values="normal")


def example_inputs_digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).view(np.uint8).tobytes())
    return h.hexdigest()


def record_examples() -> None:
    """mmasim's D for each gemm_async launch the example tests run: D[i, j] = the kind::f16 dot product of row i of
    A and row j of B^T over K, chained in K = 16 blocks from +0 (mmasim's ``dpa`` chains blocks of its instruction's
    K, as the kernel chains its K = 16 MMAs)."""
    from importlib.metadata import version

    import torch
    import tcsim.examples.gemm_async as gemm_async
    torch.set_num_threads(1)
    arrays, rows = {}, []
    for name in sorted(gemm_async.VARIANTS):
        launch = gemm_async_launch(name)
        a, bt, fmt = gemm_async.operands(launch)
        m, n = a.shape[0], bt.shape[0]
        v = MO.Variant("f16", fmt, fmt, "f32", 16)
        av = np.ascontiguousarray(a).view(np.uint16).astype(np.int64)
        bv = np.ascontiguousarray(bt).view(np.uint16).astype(np.int64)
        rows_a = np.repeat(av, n, axis=0)                     # output (i, j) -> row i*n + j
        rows_b = np.tile(bv, (m, 1))
        d = MO.run_mmasim(v, rows_a, rows_b, np.zeros(m * n, np.int64), None, None, a.shape[1]).reshape(m, n)
        tc_d = gemm_async.reference(launch).view(np.uint32)
        arrays[f"gemm_async__{name}"] = pack_raw(d.astype("<u4"))
        rows.append(dict(example="gemm_async", variant=name, launch=f"make_launch(seed={GEMM_ASYNC_SEED}, "
                         f"variant={name!r}, values='normal')", shape=[m, n], k=int(a.shape[1]), dtype=fmt,
                         mmasim_op=_op_name(v), inputs_sha256=example_inputs_digest(a, bt),
                         tcsim_agreed_at_recording=int(np.sum(tc_d == d))))
        print(f"gemm_async {name:14s} {m}x{n} K={a.shape[1]}: tcsim agrees on {rows[-1]['tcsim_agreed_at_recording']}"
              f" of {m * n}", flush=True)
    np.savez(EXAMPLES, **arrays)
    EXAMPLES_MANIFEST.write_text(json.dumps(dict(
        what="mmasim's D for the example launches that tests/examples run (issue 22: the examples' checks compare "
             "with oracle data)", command=RECORD_EXAMPLES_CMD, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        versions=dict(mmasim=version("mmasim"), torch=torch.__version__, numpy=np.__version__,
                      tcsim_commit=_git_commit()), launches=rows), indent=1) + "\n")


def recorded_example(example: str, variant: str, *inputs) -> np.ndarray:
    """mmasim's recorded D bits (uint32) of an example launch; the launch's inputs must be the recorded ones."""
    rows = {(r["example"], r["variant"]): r for r in json.loads(EXAMPLES_MANIFEST.read_text())["launches"]}
    row = rows[(example, variant)]
    if example_inputs_digest(*inputs) != row["inputs_sha256"]:
        raise AssertionError(f"{example} {variant}: the launch's inputs changed since mmasim's D was recorded; "
                             f"re-record with the oracle extra installed: {RECORD_EXAMPLES_CMD}")
    with np.load(EXAMPLES) as npz:
        return unpack_raw(npz[f"{example}__{variant}"], np.dtype("<u4")).reshape(row["shape"])


def _op_name(v: MO.Variant) -> str:
    op = v.mmasim_op()
    return f'{type(op).__name__}("{op.arch}", "{op.shape_and_type}")'


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("record", "record-examples", "witnesses"))
    ap.add_argument("--only", default=None, help="record only variants whose name starts with this")
    args = ap.parse_args(argv)
    if args.what == "record":
        record(args.only)
    elif args.what == "record-examples":
        record_examples()
    else:
        import test_numerics_mutations as TM
        TM.write_witnesses()


if __name__ == "__main__":
    main()
