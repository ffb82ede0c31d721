"""Compare a TMA record with the simulator case by case (bit for bit, a differing byte decoded into the copy, box
element and tensor coordinates that wrote it), and install a record as golden data."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calib import pipeline as P
from calib.pipeline import META, UNRECORDED, RecordError
from tcsim.isa.errors import HANG
from tcsim.isa.tensormap import DATA_TYPES

from .families import all_cases, select
from .layout import STATUS, _float_view, _targets, model_swizzle
from .cases import TmaCase
from .record import OUTPUTS, first_line, inputs_digest, ptx_digest, run_sim, status_text

GOLDEN = P.GOLDEN_ROOT / "tma_h100"
#: the installed name of outputs.npz: calib.golden takes every tests/golden/<dir>/ holding meta.json + outputs.npz
#: for one of its example cases, so tests/golden/tma_h100/ must not hold a file of that name
INSTALLED_OUTPUTS = "tma_outputs.npz"


def outputs_file(d: Path) -> Path:
    """The record's arrays: ``outputs.npz`` as ``record`` writes it, or ``tma_outputs.npz`` as ``install`` stores
    it.  :class:`RecordError` when neither is there."""
    for name in (OUTPUTS, INSTALLED_OUTPUTS):
        if (Path(d) / name).is_file():
            return Path(d) / name
    raise RecordError(f"{d} holds {META} but neither {OUTPUTS} nor {INSTALLED_OUTPUTS} (copy the whole record folder)")


def load_record(d: Path) -> tuple:
    """(meta, {key: array}) of a record folder; :class:`RecordError` when it is not a readable record of this
    harness."""
    d = Path(d)
    if not (d / META).is_file():
        if (d / "tma" / META).is_file():
            raise RecordError(f"{d} holds no {META}; the record folder is {d / 'tma'}")
        raise RecordError(f"{d} holds no {META}: record it with `bash calib/tma_device_run.sh OUT` on an H100")
    meta = P.read_json(d / META)
    if not isinstance(meta, dict) or not isinstance(meta.get("cases"), dict):
        raise RecordError(f"{d / META} is not a record of calib/tma (it has no per-case entries)")
    return meta, P.load_arrays(outputs_file(d))


@dataclass
class Verdict:
    case: str
    family: str
    agree: bool
    text: str
    stale: bool = False          # the generator changed since the record (re-record)
    skipped: bool = False        # the record holds no GPU answer for this case (UNRECORDED)


def compare_case(case: TmaCase, entry: dict, arrays: dict) -> Verdict:
    """Simulate ``case`` and compare with the recorded ``entry``: bit-identical outputs when the GPU ran, a
    simulator diagnosis when the GPU reported an error."""
    if entry["status"] != "ok" and entry["error"] in UNRECORDED:
        return Verdict(case.name, case.family, False, f"no GPU answer ({entry['error']}: "
                       f"{first_line(entry.get('detail'))}); not compared", skipped=True)
    if entry["ptx_sha256"] != ptx_digest(case) or entry["inputs_sha256"] != inputs_digest(case):
        return Verdict(case.name, case.family, False,
                       "STALE: the generator now builds a different kernel or inputs; re-record on the GPU",
                       stale=True)
    sim = run_sim(case)
    if entry["status"] != "ok":
        gpu = f"GPU: {entry['error']}" + (f" ({first_line(entry.get('detail'))})" if entry.get("detail") else "")
        if sim.ok:
            return Verdict(case.name, case.family, False,
                           f"{gpu}; the simulator ran without error {status_text(case, sim.outputs['out'])}".rstrip())
        if sim.error.startswith("sim-crash"):
            return Verdict(case.name, case.family, False, f"{gpu}; {sim.detail}")
        # faults are matched by kind (issue 22): the simulator's diagnosis must be of the kind the GPU reported
        # (TcsimError.gpu_error), a driver refusal of the map included; any error for any error is no agreement
        # (a record made by the simulator back end, as the tests make one, holds the simulator's own diagnosis:
        # the same one must come again)
        want = entry["error"]
        if (sim.error if want.startswith("sim:") else sim.gpu_error) != want:
            return Verdict(case.name, case.family, False,
                           f"{gpu}; simulator {sim.error} ({sim.gpu_error or 'no GPU counterpart'}): "
                           f"{first_line(sim.detail)} -- a different kind of fault than the recorded {want}")
        return Verdict(case.name, case.family, True, f"{gpu}; simulator ({sim.gpu_error}): {first_line(sim.detail)}")
    if not sim.ok:
        gout = arrays[entry["outputs"]["out"]["key"]]
        if case.expect == "fault" and any(entry.get("wait_status") or ()) and sim.gpu_error == HANG:
            # the GPU raises no error but never completes the copy's transaction bytes: the kernel would hang in
            # its mbarrier wait (the harness bounds it); tcsim reports the faulty copy at issue, or (a bulk size
            # that is not a multiple of 16: the H100 moves and signals the rounded-down size, probed in
            # tests/hw/golden_h100/protocol_outcomes.json) the same hang, with the class-18 finding as its cause
            return Verdict(case.name, case.family, True,
                           f"GPU: no error, the mbarrier wait timed out {status_text(case, gout)} (the kernel would "
                           f"hang); simulator: {first_line(sim.detail)}")
        return Verdict(case.name, case.family, False,
                       f"GPU ran {status_text(case, gout) or '(completed)'}; simulator {sim.error}: "
                       f"{first_line(sim.detail)}")
    msgs = []
    for key, spec in entry["outputs"].items():
        want = arrays[spec["key"]]
        got = sim.outputs.get(key)
        if got is None or got.shape != want.shape or got.dtype != want.dtype:
            msgs.append(f"{key}: simulator output {None if got is None else (got.dtype, got.shape)} vs GPU "
                        f"{(want.dtype, want.shape)}")
            continue
        if not np.array_equal(got.view(np.uint8), want.view(np.uint8)):
            msgs.append(explain(case, key, got, want))
    if msgs:
        return Verdict(case.name, case.family, False, "\n".join(msgs))
    n = sum(spec and int(np.prod(spec["shape"])) for spec in entry["outputs"].values())
    return Verdict(case.name, case.family, True, f"bit-identical ({n} output elements)")


def _decode_value(dtype: str, raw: bytes) -> str:
    es = len(raw)
    u = int.from_bytes(raw, "little")
    dt = DATA_TYPES[dtype]
    if dt.is_float:
        ft = _float_view(dtype) if es != 8 else np.float64
        if ft is None:
            ft = np.float32
        v = np.frombuffer(raw, dtype=ft)[0]
        return f"{float(v)!r} (0x{u:0{2 * es}x})"
    if dt.kind == "int" and u >> (8 * es - 1):
        u -= 1 << (8 * es)
    return f"{u} (0x{int.from_bytes(raw, 'little'):0{2 * es}x})"


def explain(case: TmaCase, key: str, got: np.ndarray, want: np.ndarray, limit: int = 4,
            names=("simulator", "GPU")) -> str:
    """How many bytes differ, and the first differing elements decoded: which copy, which box element, which
    tensor coordinates (in bounds or which edge), decoded as the map's data type."""
    rows = got.shape[0] if key == "out" else 1
    gb, wb = got.view(np.uint8).reshape(rows, -1), want.view(np.uint8).reshape(rows, -1)
    diff = np.argwhere(gb != wb)
    lines = [f"{key}: {len(diff)} byte(s) differ"]
    seen = set()
    for row, b in diff:
        row, b = int(row), int(b)
        desc, span = _locate(case, key, row, b)
        if span in seen:
            continue
        seen.add(span)
        lo, hi = span[-2], span[-1]
        sv, gv = bytes(gb[row, lo:hi]), bytes(wb[row, lo:hi])
        dtype = span[0] if isinstance(span[0], str) else None
        fmt = (lambda raw: _decode_value(dtype, raw)) if dtype else (lambda raw: "0x" + raw[::-1].hex())
        lines.append(f"  {desc}: {names[0]} {fmt(sv)}, {names[1]} {fmt(gv)}" )
        if len(seen) >= limit:
            break
    return "\n".join(lines)


def _locate(case: TmaCase, key: str, row: int, b: int):
    """Describe byte ``b`` of output ``key`` (row ``row``: the CTA for 'out'); returns (text, span key) where the
    span key ends with the byte range of the element."""
    if key == "out":
        if b >= case.out_bytes - STATUS:
            st = case.out_bytes - STATUS
            w = (b - st) // 4
            what = {0: "mbarrier wait status (0 completed, 1 timed out)", 1: "end marker"}.get(w, "unused")
            return f"CTA {row} {what}", (None, row, st + 4 * w, st + 4 * w + 4)
        for i, op in enumerate(case.ops):
            if op.kind == "tload" and row in _targets(op, case.ncta):
                m = case.maps[op.map]
                k = int(model_swizzle(b, m.swizzle)) - op.smem
                if 0 <= k < m.box_bytes:
                    es = m.esize
                    e = k // es
                    x, rem = [], e
                    for d in range(m.rank):
                        x.append(rem % m.n[d])
                        rem //= m.n[d]
                    g = [op.coords[d] + x[d] * (1 if d == 0 else m.estr[d]) for d in range(m.rank)]
                    where = [f"dim {d} {'< 0' if g[d] < 0 else '>= ' + str(m.dims[d])}" for d in range(m.rank)
                             if not 0 <= g[d] < m.dims[d]]
                    lo = b - (k % es)
                    # the element's bytes may be scattered by the swizzle only in 8/16-byte pieces: same piece
                    return (f"CTA {row} SMEM +{b}: op {i} ({op.kind} coords {list(op.coords)} swizzle {m.swizzle}) "
                            f"box element x={x} -> tensor coords {g} "
                            f"({'OOB: ' + ', '.join(where) if where else 'in bounds'})",
                            (m.dtype, row, lo, lo + es))
            if op.kind in ("bload", "s2s"):
                dst = op.dst_smem if op.kind == "s2s" else op.smem
                tg = [op.dst_rank] if op.kind == "s2s" else _targets(op, case.ncta)
                if row in tg and dst <= b < dst + op.size:
                    lo = b - (b - dst) % 4
                    return (f"CTA {row} SMEM +{b}: op {i} ({op.kind}, byte {b - dst} of {op.size})",
                            (None, row, lo, lo + 4))
        lo = b - b % 4
        return f"CTA {row} SMEM +{b}: a byte no copy writes (initial pattern)", (None, row, lo, lo + 4)
    k = int(key[1:])
    flat_b = b                # tensors are compared as flat bytes (row 0)
    for i, op in enumerate(case.ops):
        if op.kind == "bstore" and op.tensor == k and op.goff <= flat_b < op.goff + op.size:
            lo = flat_b - flat_b % 4
            return f"t{k} byte {flat_b}: op {i} (bstore byte {flat_b - op.goff})", (None, 0, lo, lo + 4)
    for mi, m in enumerate(case.maps):
        if m.tensor != k:
            continue
        es = m.esize
        rel = flat_b - m.byte_offset
        g = []
        for d in range(m.rank - 1, 0, -1):
            g.append(rel // m.strides[d - 1])
            rel %= m.strides[d - 1]
        g.append(rel // es)
        g = g[::-1]
        inside = all(0 <= g[d] < m.dims[d] for d in range(m.rank))
        boxes = []
        for i, op in enumerate(case.ops):
            if op.kind in ("tstore", "treduce") and op.map == mi:
                xs = []
                for d in range(m.rank):
                    step = 1 if d == 0 else m.estr[d]
                    q = g[d] - op.coords[d]
                    if q < 0 or q % step or q // step >= m.n[d]:
                        break
                    xs.append(q // step)
                else:
                    boxes.append(f"op {i} ({op.kind}{'.' + op.redop if op.redop else ''} coords {list(op.coords)}) "
                                 f"box element {xs}")
        lo = flat_b - (flat_b - m.byte_offset) % es
        where = "inside the tensor" if inside else "padding (outside the map's dims)"
        return (f"t{k} element at tensor coords {g} ({where}); written by "
                + ("; ".join(boxes) if boxes else "no store box"), (m.dtype, 0, lo, lo + es))
    lo = flat_b - flat_b % 4
    return f"t{k} byte {flat_b}", (None, 0, lo, lo + 4)


def compare_dir(d: Path, patterns=None, jobs: int = 1, log=print) -> list:
    meta, arrays = load_record(d)
    cases = all_cases()
    wanted = {c.name for c in select(patterns)} if patterns else None
    names = [n for n in meta["cases"] if wanted is None or n in wanted]
    missing = [n for n in names if n not in cases]
    verdicts = []
    for n in missing:
        verdicts.append(Verdict(n, meta["cases"][n]["family"], False, "STALE: no such case in the generator any more",
                                stale=True))
        log(f"STALE  {n} [{meta['cases'][n]['family']}]: no such case in the generator any more")
    todo = [n for n in names if n in cases]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            res = list(pool.map(_compare_worker, [(str(d), n) for n in todo]))
    else:
        res = [compare_case(cases[n], meta["cases"][n], arrays) for n in todo]
    for v in res:
        e = meta["cases"][v.case]
        tag = "agree " if v.agree else "skip  " if v.skipped else "STALE " if v.stale else "DIFFER"
        log(f"{tag} {v.case} [{v.family}, expect {e['expect']}]: " + v.text.replace("\n", "\n       "))
        verdicts.append(v)
    fam: dict = {}
    for v in verdicts:
        a = fam.setdefault(v.family, [0, 0])
        a[1] += not v.skipped
        a[0] += v.agree
    skipped = sum(v.skipped for v in verdicts)
    log("summary (agree/compared): " + ", ".join(f"{f} {a}/{n}" for f, (a, n) in sorted(fam.items()))
        + f"; {sum(v.agree for v in verdicts)} of {len(verdicts) - skipped} agree with the "
          f"{meta.get('gpu') or meta.get('backend')}" + (f" ({skipped} without a GPU answer)" if skipped else ""))
    return verdicts


@functools.lru_cache(maxsize=1)
def _worker_record(d: str) -> tuple:
    """The record a compare worker process compares against, read once per process."""
    return load_record(Path(d))


def _compare_worker(args):
    d, n = args
    meta, arrays = _worker_record(d)
    return compare_case(all_cases()[n], meta["cases"][n], arrays)


def install(src: Path, dest: Path = GOLDEN) -> list:
    """Copy a record directory's meta.json and outputs.npz (or an installed tma_outputs.npz) into ``dest`` as
    meta.json and tma_outputs.npz (checked: parseable, complete, < 16 MiB each)."""
    src = Path(src)
    meta, arrays = load_record(src)
    outputs = outputs_file(src)
    for n, e in meta["cases"].items():
        for spec in e["outputs"].values():
            if spec["key"] not in arrays:
                raise RecordError(f"{src}: output {spec['key']} of case {n} is missing from {outputs.name}")
    copied = P.install_files([(src / META, META), (outputs, INSTALLED_OUTPUTS)], dest)
    stale = dest / OUTPUTS
    if stale.exists():
        stale.unlink()
    return copied
