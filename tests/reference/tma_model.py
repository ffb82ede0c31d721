"""The documented model of tile-mode TMA (tma.md §2-§4, from the PTX ISA §5.5 "Tensor" and §9.7.9.25
"cp.async.bulk.tensor"): the outputs every case of :mod:`calib.tma` should produce, written independently of the
simulator (tcsim.semantics.bulk_tensor) so that ``check_model`` compares two readings of the documentation.
Only tests use it (tests/hw/test_tma_golden.py, tests/semantics/test_bulk_tensor.py)."""
from __future__ import annotations

import numpy as np

from calib.tma.cases import TmaCase
from calib.tma.compare import explain
from calib.tma.layout import (MARKER, MODEL_NAN, OUT_FILL, STATUS, _esize, _float_view, _targets, _UINT,
                              box_geometry, image_addresses, place)
from calib.tma.record import first_line, run_sim, status_text
from tcsim.isa.tensormap import DATA_TYPES

#: canonical NaN of a reduction result (f32 add: first H100 record; f16/bf16 assumed) and of a TFLOAT32 load
RED_NAN = {2: 0x7FFF, 4: 0x7FFFFFFF}
TF32_LOAD_NAN = 0x7FFFE000


def gather(smem_row: np.ndarray, off: int, nbytes: int, mode: str, row: int | None = None) -> np.ndarray:
    return smem_row[image_addresses(off, nbytes, mode, row)]


def model_tf32(u: np.ndarray) -> np.ndarray:
    """A TFLOAT32 load of f32 bit patterns ``u`` as the first H100 record showed it: each value rounded to a 10-bit
    mantissa, to nearest even, in float arithmetic (quantum 2^(e-10), e = max(exponent, -126)), no subnormal
    flush, infinities kept, NaN -> :data:`TF32_LOAD_NAN`.  Written independently of the simulator's bit-level
    :func:`tcsim.semantics.bulk_tensor.tf32_image`."""
    with np.errstate(invalid="ignore"):                 # signalling NaNs
        x = u.view(np.float32).astype(np.float64)
    out = np.empty(u.size, dtype=np.uint32)
    for i, v in enumerate(x):
        if np.isnan(v):
            out[i] = TF32_LOAD_NAN
        elif np.isinf(v) or v == 0:
            out[i] = u[i]
        else:
            e = max(int(np.frexp(v)[1]) - 1, -126)
            q = 2.0 ** (e - 10)
            with np.errstate(over="ignore"):
                out[i] = np.array([np.round(v / q) * q], dtype=np.float32).view(np.uint32)[0]
    return out


def model_reduce(redop: str, dtype: str, old: np.ndarray, src: np.ndarray) -> np.ndarray:
    """Element-wise ``old <redop> src`` (uint views of the map's type), PTX semantics: integer ops wrap; inc/dec
    as atom.inc/dec; float add rounds to nearest even once, subnormals kept; f16/bf16 min/max: a NaN loses to a
    number, two NaNs give the canonical NaN, -0 < +0.

    Part of the documented model: written from the PTX ISA (tma.md §2), deliberately independent of the
    simulator's ``tcsim.semantics.bulk_tensor.reduce_elements`` (scalar integer arithmetic, its own NaN
    assumption :data:`RED_NAN`), so that ``check`` compares two readings of the documentation."""
    es = _esize(dtype)
    ut = _UINT[es]
    top = (1 << (8 * es)) - 1
    if dtype == "FLOAT64" and redop == "add":
        # not in the PTX table; the first H100 record: an f64 add, a NaN operand kept as is (old first)
        x, y = old.view(np.float64), src.view(np.float64)
        with np.errstate(all="ignore"):
            r = (x + y).view(ut).copy()
        r[np.isnan(y)] = src[np.isnan(y)]
        r[np.isnan(x)] = old[np.isnan(x)]
        return r
    if dtype in ("FLOAT32", "FLOAT32_FTZ", "FLOAT16", "BFLOAT16"):
        ft = _float_view(dtype)
        if dtype == "FLOAT32_FTZ":               # first record: operands and result flushed, sign kept
            def flush(v):
                return np.where((v & ut(0x7F800000)) == 0, v & ut(0x80000000), v).astype(ut)
            old, src = flush(old), flush(src)
        x, y = old.view(ft), src.view(ft)
        if redop == "add":                 # a NaN result is assumed canonical (as the FADD unit makes it)
            with np.errstate(all="ignore"):
                if dtype in ("FLOAT32", "FLOAT32_FTZ"):
                    s = x + y
                    r = s.view(ut).copy()
                    if dtype == "FLOAT32_FTZ":
                        r = flush(r)
                else:
                    s = x.astype(np.float64) + y.astype(np.float64)     # exact for 16-bit types
                    r = s.astype(ft).view(ut).copy()
            r[np.isnan(s)] = RED_NAN[es]
            return r
        with np.errstate(all="ignore"):
            xf, yf = x.astype(np.float64), y.astype(np.float64)
        pick = (yf < xf) if redop == "min" else (yf > xf)
        zeros = (xf == 0) & (yf == 0)
        sx, sy = (old >> ut(8 * es - 1)) & ut(1), (src >> ut(8 * es - 1)) & ut(1)
        pick |= zeros & ((sy > sx) if redop == "min" else (sy < sx))
        pick |= np.isnan(xf) & ~np.isnan(yf)
        pick &= ~np.isnan(yf)
        r = np.where(pick, src, old).astype(ut)
        r[np.isnan(xf) & np.isnan(yf)] = RED_NAN[es]
        return r
    signed = DATA_TYPES[dtype].kind == "int"
    xi = [int(v) for v in old]
    yi = [int(v) for v in src]
    if signed:
        def sx(v):
            return v - (1 << (8 * es)) if v >> (8 * es - 1) else v
    else:
        def sx(v):
            return v
    out = []
    for a, b in zip(xi, yi):
        if redop == "add":
            r = a + b
        elif redop == "min":
            r = a if sx(a) <= sx(b) else b
        elif redop == "max":
            r = a if sx(a) >= sx(b) else b
        elif redop == "inc":
            r = 0 if a >= b else a + 1
        elif redop == "dec":
            r = b if (a == 0 or a > b) else a - 1
        elif redop == "and":
            r = a & b
        elif redop == "or":
            r = a | b
        else:
            r = a ^ b
        out.append(r & top)
    return np.array(out, dtype=ut)


def model(case: TmaCase):
    """Outputs the documented model predicts ({key suffix: array}), or None where it predicts a fault / refusal
    (``expect`` in fault, driver)."""
    if case.expect in ("fault", "driver"):
        return None
    tensors = [t.copy() for t in case.tensors]
    smem = case.img.copy()
    for op in case.ops:
        if op.kind in ("tload", "tstore", "treduce"):
            m = case.maps[op.map]
            es = m.esize
            offs, inb = box_geometry(m, op.coords, granules=op.kind != "tload")
            flat = tensors[m.tensor].reshape(-1).view(np.uint8)
            if op.kind == "tload":
                img = np.empty((inb.size, es), dtype=np.uint8)
                if m.oob == "nan":
                    img[:] = np.frombuffer(int(MODEL_NAN[es]).to_bytes(es, "little"), dtype=np.uint8)
                else:
                    img[:] = 0
                good = np.nonzero(inb)[0]
                if good.size:
                    img[good] = flat[offs[good][:, None] + np.arange(es)]
                    if m.dtype in ("TFLOAT32", "TFLOAT32_FTZ"):
                        img[good] = model_tf32(img[good].copy().view(np.uint32).reshape(-1)).view(np.uint8) \
                            .reshape(-1, es)
                for t in _targets(op, case.ncta):
                    place(smem[t], op.smem, img.reshape(-1), m.swizzle, m.box[0] * es)
            else:
                src = gather(smem[op.rank], op.smem, m.box_bytes, m.swizzle, m.box[0] * es).reshape(-1, es)
                good = np.nonzero(inb)[0]
                if good.size:
                    idx = offs[good][:, None] + np.arange(es)
                    new = src[good]
                    if op.kind == "treduce":
                        old = flat[idx].copy().view(_UINT[es]).reshape(-1)
                        new = model_reduce(op.redop, m.dtype, old,
                                           np.ascontiguousarray(new).view(_UINT[es]).reshape(-1))
                        new = new.view(np.uint8).reshape(-1, es)
                    flat[idx] = new
        elif op.kind == "bload":
            data = tensors[op.tensor].reshape(-1).view(np.uint8)[op.goff:op.goff + op.size]
            for t in _targets(op, case.ncta):
                smem[t, op.smem:op.smem + op.size] = data
        elif op.kind == "bstore":
            tensors[op.tensor].reshape(-1).view(np.uint8)[op.goff:op.goff + op.size] = \
                smem[op.rank, op.smem:op.smem + op.size]
        elif op.kind == "s2s":
            smem[op.dst_rank, op.dst_smem:op.dst_smem + op.size] = smem[op.rank, op.smem:op.smem + op.size]
    out = np.full((case.ncta, case.out_bytes), OUT_FILL, dtype=np.uint8)
    if case.dump:
        out[:, :case.smem] = smem
    st = case.out_bytes - STATUS
    out[:, st:st + 8] = np.frombuffer(np.array([0, MARKER], dtype=np.uint32).tobytes(), dtype=np.uint8)
    res = {"out": out}
    for k in case.written_tensors():
        res[f"t{k}"] = tensors[k]
    return res


def check_model(cases: list, log=print) -> list:
    """Simulator vs the documented model (no GPU): the sanity check of the case list.  Returns the cases where
    they disagree, as (name, text)."""
    bad = []
    for case in cases:
        sim = run_sim(case)
        want = model(case)
        if want is None:
            txt = "model: fault" + (f"; simulator {sim.error}: {first_line(sim.detail)}" if not sim.ok else
                                    "; simulator ran " + (status_text(case, sim.outputs["out"]) or "(completed)"))
            ok = not sim.ok and not sim.error.startswith("sim-crash")
        elif not sim.ok:
            txt, ok = f"simulator {sim.error}: {first_line(sim.detail)}", False
        else:
            diffs = [explain(case, k, sim.outputs[k], want[k], names=("simulator", "model"))
                     for k in want
                     if not np.array_equal(sim.outputs[k].view(np.uint8), want[k].view(np.uint8))]
            ok = not diffs
            txt = "\n".join(diffs) if diffs else "simulator = model"
        log(f"{'same ' if ok else 'DIFF '} {case.name} [{case.family}, expect {case.expect}, {sim.wall_s:.2f} s]: "
            + txt.replace("\n", "\n       "))
        if not ok:
            bad.append((case.name, txt))
    return bad
