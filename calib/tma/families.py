"""The TMA case families (``python -m calib.tma list -v`` prints every case; the families are described in
:mod:`calib.tma`): each a function returning its :class:`calib.tma.cases.TmaCase` list."""
from __future__ import annotations

import fnmatch
import functools
import types

import numpy as np

from tcsim.isa.swizzle import SWIZZLE_PERIOD, SWIZZLE_SPAN
from tcsim.isa.tensormap import DATA_TYPES

from .cases import (TmaCase, _edges, _img_fill, _load_case, _random_bits, _rng, _Slots, _specials, align_c0,
                    make_tensor, spec_for)
from .layout import (MANTISSA, MODEL_NAN, RED_H100_ILLEGAL, RED_TYPES, REDOPS, SENTINEL, _esize, _UINT, Op,
                     box_geometry, place)

SWIZZLES = ("none", "32B", "64B", "128B")
ATOMS = ("128B_atom_32B", "128B_atom_32B_flip_8B", "128B_atom_64B")
#: inner box row (bytes) of the cases per swizzle mode: the mode's span (isa.swizzle); 64 B without a swizzle
SPAN = {**SWIZZLE_SPAN, "none": 64}
#: bytes after which the swizzle pattern repeats (isa.swizzle); without a swizzle, the 16-byte box alignment
REPEAT = {**SWIZZLE_PERIOD, "none": 16}


def _fam_swizzle():
    cases = []
    for sw in SWIZZLES:
        for dt in ("UINT8", "UINT16", "FLOAT32", "FLOAT64") + (("BFLOAT16",) if sw == "128B" else ()):
            es = _esize(dt)
            inner = SPAN[sw] // es
            dims = (inner * 2 + 16 // es * 3, 21)
            box = (inner, 16)
            cases.append(_load_case(f"swizzle_{sw}_{dt.lower()}", "swizzle",
                                    f"2-D {dt} box of {inner}x16 (inner row = the {SPAN[sw]}-byte span), swizzle {sw}: "
                                    "an interior box and one over the far corner (fill under the swizzle)",
                                    dt, dims, [(inner // 2 + 16 // es, 2), (dims[0] - inner // 2, 21 - 9)], box,
                                    swizzle=sw))
    for sw, rows in (("128B", (16, 32, 64)), ("64B", (16, 32)), ("32B", (16,))):
        for rb in rows:
            inner = rb // 4
            cases.append(_load_case(f"swizzle_{sw}_narrow{rb}", "swizzle",
                                    f"swizzle {sw} with {rb}-byte rows (narrower than the span): dense image + XOR "
                                    "on the address is the assumed model (tma.md §4)", "FLOAT32", (40, 30),
                                    [(3, 1)], (inner, 24), swizzle=sw, expect="probe"))
    for sw in ATOMS:
        cases.append(_load_case(f"swizzle_{sw}", "swizzle",
                                f"swizzle {sw} on sm_90: cuTensorMapEncodeTiled refuses it (tma.md lists it for "
                                "sm_100; first H100 record)", "FLOAT32", (70, 20), [(4, 2)], (32, 16),
                                swizzle=sw, expect="driver"))
    return cases


def _fam_phase():
    cases = []
    for sw, offs in (("32B", (16, 128, 256, 512)), ("64B", (16, 128, 256, 384, 512)),
                     ("128B", (16, 128, 256, 512, 896)), ("none", (16, 48, 128))):
        for off in offs:
            inner = SPAN[sw] // 4
            cases.append(_load_case(f"phase_{sw}_at{off}", "phase",
                                    f"swizzle {sw} box at SMEM offset {off} (pattern repeat {REPEAT[sw]} B): "
                                    "absolute-address swizzle assumed (tma.md §3)", "FLOAT32", (48, 40), [(5, 3)],
                                    (inner, 20), swizzle=sw, phase=off,
                                    expect="fault" if off % 128 else "ok" if sw == "none" else "probe"))
    return cases


RANK_DIMS = {1: (200,), 2: (40, 13), 3: (24, 7, 5), 4: (16, 5, 4, 3), 5: (16, 3, 4, 3, 2)}
RANK_BOX = {1: (64,), 2: (16, 8), 3: (16, 4, 3), 4: (8, 3, 2, 2), 5: (8, 2, 3, 2, 2)}


def _fam_rank():
    cases = []
    for r in range(1, 6):
        dims, box = RANK_DIMS[r], RANK_BOX[r]
        c = tuple(1 + (i % 2) for i in range(r))
        for dt, sw in (("FLOAT32", "none"), ("UINT16", "128B"), ("UINT8", "64B")):
            bx = box if dt == "FLOAT32" else (box[0] * (2 if dt == "UINT16" else 4),) + box[1:]
            if sw != "none":
                bx = (min(bx[0], SPAN[sw] // _esize(dt)),) + bx[1:]
            if dt == "UINT8":
                bx = (max(16, bx[0]),) + bx[1:]
            dm = (max(dims[0], bx[0] * 2 + 8),) + dims[1:]
            whole = tuple(min(b, d) for b, d in zip(bx, dm))
            cases.append(_load_case(f"rank{r}_{dt.lower()}_{sw}", "rank",
                                    f"rank-{r} {dt} load, swizzle {sw}: an interior box, one at the origin, and the "
                                    "last box of the tensor", dt, dm,
                                    [c, (0,) * r, tuple(d - b for d, b in zip(dm, whole))], bx, swizzle=sw))
    cases.append(_load_case("load_shared_cta_dst", "rank", "tensor load with the .shared::cta destination (PTX 8.6)",
                            "FLOAT32", (40, 13), [(3, 2)], (16, 8), dst_space="shared::cta"))
    return cases


def _fam_oob():
    cases = []
    for r in range(1, 6):
        dims, box = RANK_DIMS[r], RANK_BOX[r]
        for dt, fill in (("FLOAT32", "zero"), ("FLOAT32", "nan"), ("UINT16", "zero")):
            bx = box if dt == "FLOAT32" else (box[0] * 2,) + box[1:]
            dm = (max(dims[0], bx[0] + 8),) + dims[1:]
            cases.append(_load_case(f"oob_r{r}_{dt.lower()}_{fill}", "oob",
                                    f"rank-{r} {dt}, {fill} fill: one box over the negative and one over the far "
                                    "edge of every dimension", dt, dm, _edges(dm, bx), bx, oob=fill))
    dims, box = (40, 12, 6), (16, 4, 3)
    for fill in ("zero", "nan"):
        boxes = [(-3, -2, -1), (30, 10, 5), (-100, 0, 0), (0, 50, 0), (0, 0, -7), (40, 12, 6), (-16, -4, -3),
                 (24, 8, 3)]
        cases.append(_load_case(f"oob_corners_f32_{fill}", "oob",
                                f"rank-3 f32 {fill} fill: both corners, wholly OOB boxes in each dim and exactly "
                                "past the end, boxes ending exactly at the edges", "FLOAT32", dims, boxes, box,
                                oob=fill))
        cases.append(_load_case(f"oob_bigbox_f32_{fill}", "oob",
                                f"box larger than the tensor in every dim ({fill} fill): both edges at once",
                                "FLOAT32", (8, 3, 2), [(-2, -1, -1)], (16, 6, 5), oob=fill))
        cases.append(_load_case(f"oob_extreme_f32_{fill}", "oob",
                                f"coordinates near the s32 limits ({fill} fill): the box never wraps into the "
                                "tensor if the hardware computes in wider arithmetic", "FLOAT32", (32, 8),
                                [(-2 ** 31, 0), (2 ** 31 - 8, 0), (0, -2 ** 31), (0, 2 ** 31 - 4),
                                 (-2 ** 31 + 4, 2 ** 31 - 2)], (8, 4), oob=fill, expect="probe"))
    for dt in ("FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"):
        es = _esize(dt)
        inner = 32 // es
        cases.append(_load_case(f"oob_nan_{dt.lower()}", "oob",
                                f"NAN_REQUEST_ZERO_FMA fill bit pattern of {dt} (recorded {MODEL_NAN[es]:#x}): a box "
                                "over both corners and a wholly OOB box", dt, (inner * 3, 9),
                                [(-inner // 2, -2), (inner * 3 - inner // 2, 7), (-inner * 4, 0)], (inner, 4),
                                oob="nan", expect="probe"))
    for sw, dt, fill in (("128B", "FLOAT32", "nan"), ("64B", "UINT8", "zero"), ("32B", "BFLOAT16", "nan")):
        es = _esize(dt)
        inner = SPAN[sw] // es
        dims = (inner * 2 + 5, 20)
        cases.append(_load_case(f"oob_swizzle{sw}_{dt.lower()}_{fill}", "oob",
                                f"OOB fill under swizzle {sw}", dt, dims, _edges(dims, (inner, 12)), (inner, 12),
                                swizzle=sw, oob=fill))
    return cases


def _fam_dtype():
    cases = []
    for dt in ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT64",
               "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"):
        es = _esize(dt)
        inner = 64 // es
        probe = dt in ("FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ")
        cases.append(_load_case(f"dtype_{dt.lower()}", "dtype",
                                f"{dt} load of random bit patterns with NaN payloads, infinities and subnormals"
                                + (": does the TMA convert (round to tf32 / flush subnormals) or move bits?"
                                   if probe else ": bits move unchanged"), dt, (inner * 2, 12),
                                [(inner // 2, 1), (inner, 6)], (inner, 6), expect="probe" if probe else "ok"))
    return cases


def _fam_estride():
    cases = [
        _load_case("estride_r2_f32", "estride", "rank-2 f32, elementStrides (1, 2), box rows 7 -> 4 rows moved",
                   "FLOAT32", (24, 30), [(2, 1), (4, 25)], (8, 7), estr=(1, 2)),
        _load_case("estride_r3_u16", "estride", "rank-3 u16, elementStrides (1, 3, 2), boxes not multiples of the "
                   "strides, strided elements crossing the far edge", "UINT16", (32, 20, 9),
                   [(0, 0, 0), (8, 15, 6), (16, -4, -3)], (16, 7, 5), estr=(1, 3, 2)),
        _load_case("estride_r5_u8", "estride", "rank-5 u8, element strides up to 8", "UINT8", (32, 17, 5, 9, 4),
                   [(0, 1, 0, 0, 0), (16, 9, 2, 3, 1)], (16, 9, 3, 8, 2), estr=(1, 8, 2, 4, 1)),
        _load_case("estride_swizzle128_f32", "estride", "element strides with the 128B swizzle", "FLOAT32",
                   (64, 40), [(8, 3), (40, 30)], (32, 12), estr=(1, 3), swizzle="128B"),
        _load_case("estride_dim0_f32", "estride", "elementStrides[0] = 2 without interleave: ignored (tma.md §3) or "
                   "refused by the driver?", "FLOAT32", (48, 10), [(4, 2)], (16, 4), estr=(2, 1), expect="probe"),
        _load_case("estride_dim0_8_u16", "estride", "elementStrides[0] = 8 without interleave", "UINT16", (64, 6),
                   [(8, 1)], (16, 4), estr=(8, 1), expect="probe"),
        _load_case("estride_r4_f64_nan", "estride", "rank-4 f64, element strides with NaN fill over the edges",
                   "FLOAT64", (8, 9, 7, 3), [(-2, -3, 0, 0), (4, 6, 5, 2)], (4, 5, 4, 2), estr=(1, 2, 3, 1),
                   oob="nan"),
    ]
    return cases


def _store_case(name, family, note, dtype, dims, boxes, box, estr=None, swizzle="none", phase=0, expect="ok",
                content="random", redop=None, old="sentinel", byte_offset=0, timeout=40.0, raw_c0=False):
    """One map over one padded tensor (initially ``old``); one store (or reduce) per box, sources in separate
    SMEM slots filled with ``content`` (random bits, or a callable (rng, old_box_values, inb) -> values); dim-0
    coordinates rounded down to 16 bytes unless ``raw_c0``."""
    if not raw_c0:
        boxes = [align_c0(c, dtype) for c in boxes]
    rng = _rng(name)
    t, strides = make_tensor(rng, dtype, dims, content=old)
    m = spec_for(0, dtype, dims, strides, box, estr, swizzle, "zero", byte_offset)
    slots = _Slots()
    offs = [slots.take(m.footprint, phase) for _ in boxes]
    img = np.zeros((1, slots.size), dtype=np.uint8)
    img[0] = rng.integers(0, 256, slots.size, dtype=np.uint8)
    es = m.esize
    flat = t.reshape(-1).view(np.uint8)
    for off, c in zip(offs, boxes):
        boffs, inb = box_geometry(m, c)
        if callable(content):
            oldv = np.zeros(inb.size, dtype=_UINT[es])
            good = np.nonzero(inb)[0]
            if good.size:
                idx = boffs[good][:, None] + np.arange(es)
                oldv[good] = flat[idx].copy().view(_UINT[es]).reshape(-1)
            vals = np.asarray(content(rng, oldv, inb), dtype=_UINT[es])
        else:
            vals = _random_bits(rng, dtype, inb.size)
        place(img[0], off, vals.view(np.uint8), swizzle, m.box[0] * es)
    kind = "tstore" if redop is None else "treduce"
    ops = [Op(kind, smem=o, map=0, coords=tuple(c), redop=redop) for o, c in zip(offs, boxes)]
    return TmaCase(name, family, note, [t], [m], ops, img, dump=False, expect=expect, timeout=timeout)


def _fam_store():
    cases = []
    for sw in SWIZZLES:
        for dt in ("FLOAT32", "UINT16") + (("FLOAT64", "UINT8") if sw == "128B" else ()):
            es = _esize(dt)
            inner = SPAN[sw] // es
            dims = (inner * 2 + 3, 20)
            cases.append(_store_case(f"store_{sw}_{dt.lower()}", "store",
                                     f"TMA store of a {sw}-swizzled SMEM image ({dt}), interior box and one over the "
                                     "far corner (OOB elements dropped)", dt, dims,
                                     [(2, 1), (dims[0] - inner // 2, 20 - 5)], (inner, 12), swizzle=sw))
    for r in range(1, 6):
        dims, box = RANK_DIMS[r], RANK_BOX[r]
        far = [tuple(dims[i] - box[i] // 2 if i == d else max(0, (dims[i] - box[i]) // 2) for i in range(r))
               for d in range(r)]
        corner = tuple(d - max(1, b // 2) for d, b in zip(dims, box))
        inner = tuple(max(0, (d - b) // 2) for d, b in zip(dims, box))
        boxes = [inner] + far + [corner]
        cases.append(_store_case(f"store_r{r}_f32", "store",
                                 f"rank-{r} f32 stores: an interior box, one over the far edge of each dim, the far "
                                 "corner (OOB elements dropped)", "FLOAT32", dims, boxes, box))
    dims, box = (24, 10, 5), (8, 4, 3)
    for d in range(3):
        c = [8, 3, 1]
        c[d] = -(box[d] // 2 + 1)
        cases.append(_store_case(f"store_neg_r3_d{d}", "store",
                                 f"store whose start coordinate c{d} is negative: PTX §9.7.9.25.5.1 asks for "
                                 "non-negative starts; the H100 stops with an illegal instruction", "FLOAT32",
                                 dims, [tuple(c)], box, expect="fault"))
    cases.append(_store_case("store_neg_r1", "store", "rank-1 store starting at -8", "UINT16", (64,), [(-8,)],
                             (32,), expect="fault"))
    cases.append(_store_case("store_wholly_oob", "store", "stores entirely past the end (nothing written)",
                             "FLOAT32", (16, 8), [(16, 0), (0, 8), (100, 100)], (8, 4)))
    cases.append(_store_case("store_estride_f32", "store", "store through a map with element strides (1, 2)",
                             "FLOAT32", (16, 20), [(0, 1), (8, 15)], (8, 7), estr=(1, 2), expect="probe"))
    for sw, off in (("128B", 128), ("128B", 512), ("64B", 256), ("32B", 128)):
        cases.append(_store_case(f"store_phase_{sw}_at{off}", "store",
                                 f"store from a {sw}-swizzled image at SMEM offset {off} (not on the pattern repeat)",
                                 "FLOAT32", (64, 30), [(4, 2)], (SPAN[sw] // 4, 20), swizzle=sw, phase=off,
                                 expect="probe"))
    for sw, rb in (("128B", 64), ("64B", 32), ("32B", 16)):
        cases.append(_store_case(f"store_narrow_{sw}_{rb}", "store",
                                 f"store from a {sw}-swizzled image with {rb}-byte rows (narrower than the span: each "
                                 "row read from its own span, as loads write them?)", "FLOAT32", (40, 20),
                                 [(0, 1), (24, 12)], (rb // 4, 8), swizzle=sw, expect="probe"))
    for dt in ("FLOAT32_FTZ", "TFLOAT32", "BFLOAT16", "FLOAT16", "INT64"):
        es = _esize(dt)
        cases.append(_store_case(f"store_dtype_{dt.lower()}", "store",
                                 f"{dt} store of NaN payloads / subnormals / random bits: bits unchanged?", dt,
                                 (64 // es * 2, 8), [(64 // es // 2, 1)], (64 // es, 6),
                                 expect="probe" if "FTZ" in dt or "TF" in dt else "ok"))
    return cases


# ---- reduce operand generators (rng, old values of the box elements, in-bounds) -> source values
def _red_values(dtype: str, redop: str):
    es = _esize(dtype)
    ut = _UINT[es]
    bits = 8 * es

    def gen(rng, old, inb):
        n = old.size
        v = rng.integers(0, 1 << bits, size=n, dtype=np.uint64 if es == 8 else np.int64).astype(ut)
        k = np.arange(n)
        if redop in ("inc", "dec"):
            v = rng.integers(0, 9, size=n).astype(ut)
            v[k % 5 == 0] = old[k % 5 == 0]                         # old == src
            v[k % 7 == 0] = ut((1 << bits) - 1)
            return v
        if dtype in ("FLOAT32", "FLOAT16", "BFLOAT16", "FLOAT32_FTZ", "FLOAT64"):
            return _float_red_src(rng, dtype, old, redop)
        if redop in ("min", "max"):
            v[k % 4 == 0] = old[k % 4 == 0]
            v[k % 4 == 1] = old[k % 4 == 1] ^ ut(1 << (bits - 1))   # sign flips
        return v

    return gen


def _float_red_src(rng, dtype, old, redop):
    """Source values paired with the old ones: random bits, same-exponent neighbours (rounding), negations
    (cancellation to zero / subnormal), subnormals, and a table of special pairs."""
    es = _esize(dtype)
    ut = _UINT[es]
    n = old.size
    mant = MANTISSA[dtype]
    sign = ut(1 << (8 * es - 1))
    v = rng.integers(0, 1 << (8 * es), size=n, dtype=np.uint64 if es == 8 else np.int64).astype(ut)
    k = np.arange(n)
    near = old ^ rng.integers(0, 1 << mant, size=n, dtype=np.int64).astype(ut)       # same exponent
    v = np.where(k % 6 == 1, near, v)
    v = np.where(k % 6 == 2, near ^ sign, v)                                          # cancellation
    sub = rng.integers(0, 1 << mant, size=n, dtype=np.int64).astype(ut) | (v & sign)
    v = np.where(k % 6 == 3, sub, v)                                                  # subnormal sources
    shift = old + (rng.integers(1, 4, size=n).astype(ut) << ut(mant))                # exponents 1..3 apart
    v = np.where(k % 6 == 4, shift.astype(ut), v)
    sp = _specials(dtype)
    j = np.nonzero(k % 6 == 5)[0]
    v[j] = sp[rng.integers(0, sp.size, size=j.size)]
    return v


def _red_old(dtype: str):
    def gen(rng, n):
        v = _random_bits(rng, dtype, n)
        if DATA_TYPES[dtype].is_float:
            es = _esize(dtype)
            mant = MANTISSA[dtype]
            k = np.arange(n)
            sub = rng.integers(0, 1 << mant, size=n, dtype=np.int64).astype(_UINT[es])
            v = np.where(k % 9 == 3, sub, v).astype(_UINT[es])                        # subnormal old values
        return v
    return gen


def _fam_reduce():
    cases = []
    for redop in REDOPS:
        for dt in RED_TYPES[redop]:
            es = _esize(dt)
            inner = 64 // es
            dims = (inner * 2 - 3, 10)
            boxes = [(0, 0), (inner // 2, 2), (dims[0] - inner // 2, 7)]
            cases.append(_store_case(f"reduce_{redop}_{dt.lower()}", "reduce",
                                     f"cp.reduce.async.bulk.tensor .{redop} on {dt}: three overlapping boxes in "
                                     "order (the last over the far corner: OOB dropped)", dt, dims, boxes,
                                     (inner, 6), redop=redop, old=_red_old(dt), content=_red_values(dt, redop)))
    cases.append(_store_case("reduce_add_f32_swizzle128", "reduce", ".add f32 from a 128B-swizzled image",
                             "FLOAT32", (40, 20), [(3, 2), (20, 16)], (32, 8), swizzle="128B", redop="add",
                             old=_red_old("FLOAT32"), content=_red_values("FLOAT32", "add")))
    cases.append(_store_case("reduce_add_u32_r5", "reduce", "rank-5 .add u32 with the far-corner box",
                             "UINT32", RANK_DIMS[5], [(0, 0, 0, 0, 0), (12, 2, 3, 2, 1)], RANK_BOX[5], redop="add",
                             old=_red_old("UINT32"), content=_red_values("UINT32", "add")))
    cases.append(_store_case("reduce_neg_start_u32", "reduce", ".add u32 with a negative start coordinate",
                             "UINT32", (32, 8), [(-4, 2)], (16, 4), redop="add", expect="fault",
                             old=_red_old("UINT32"), content=_red_values("UINT32", "add")))
    for dt in ("FLOAT64", "FLOAT32_FTZ"):
        es = _esize(dt)
        inner = 64 // es
        cases.append(_store_case(f"reduce_add_{dt.lower()}", "reduce",
                                 f".add with a {dt} map: not in the PTX table, but the H100 performs it (first "
                                 "record); NaN operands, infinities, subnormals, cancellation", dt,
                                 (inner * 2 - 2, 10), [(0, 0), (inner // 2, 2), (inner, 5)], (inner, 6),
                                 redop="add", expect="probe", old=_red_old(dt), content=_red_values(dt, "add")))
    for redop, dt in (("add", "INT64"), ("min", "FLOAT32"), ("max", "FLOAT32"), ("inc", "UINT64"),
                      ("and", "FLOAT32"), ("add", "UINT16"), *sorted(RED_H100_ILLEGAL)):
        es = _esize(dt)
        cases.append(_store_case(f"reduce_bad_{redop}_{dt.lower()}", "reduce",
                                 f".{redop} with a {dt} map: not in the PTX table (tcsim refuses it); what does the "
                                 "H100 do?", dt, (64 // es, 4), [(0, 0)], (64 // es, 4), redop=redop,
                                 expect="fault", timeout=20.0, old=_red_old(dt), content=_red_values(dt, redop)))
    return cases


def _fam_multicast():
    cases = []

    def mc(name, note, ncta, issues, swizzle="none", dtype="FLOAT32", oob="zero", dims=(64, 24), box=(32, 8),
           expect="ok"):
        """issues: list of (issuing rank, coords, ctaMask); each box gets its own slot (same offset in all CTAs)."""
        rng = _rng(name)
        t, strides = make_tensor(rng, dtype, dims)
        m = spec_for(0, dtype, dims, strides, box, None, swizzle, oob)
        slots = _Slots()
        ops = [Op("tload", rank=r, smem=slots.take(m.box_bytes), map=0, coords=c, mask=mask) for r, c, mask in issues]
        return TmaCase(name, "multicast", note, [t], [m], ops, _img_fill(ncta, slots.size), ncta=ncta, expect=expect)

    cases.append(mc("mcast2_all", "cluster of 2: CTA 0 multicasts one box to both (ctaMask 0b11)", 2,
                    [(0, (4, 3), 0b11)]))
    cases.append(mc("mcast2_other", "cluster of 2: CTA 0 multicasts to CTA 1 only (issuer not in the mask)", 2,
                    [(0, (4, 3), 0b10)]))
    cases.append(mc("mcast4_all_128B", "cluster of 4: CTA 0 multicasts a 128B-swizzled box to all", 4,
                    [(0, (8, 5), 0xF)], swizzle="128B"))
    cases.append(mc("mcast4_subset", "cluster of 4: CTA 1 multicasts to CTAs 0 and 2; CTA 2 to CTAs 1, 2, 3", 4,
                    [(1, (0, 0), 0b0101), (2, (16, 9), 0b1110)]))
    cases.append(mc("mcast4_slices", "cluster of 4: each CTA multicasts its own slice to all (the CUTLASS pattern)",
                    4, [(r, (0, 8 * r - 4), 0xF) for r in range(4)], swizzle="64B", dtype="UINT16", box=(32, 8)))
    cases.append(mc("mcast4_oob_nan", "cluster of 4: multicast of a box over the corner, NaN fill", 4,
                    [(3, (48, 20), 0b1011)], oob="nan"))
    cases.append(mc("mcast2_mask_beyond_cluster", "cluster of 2: ctaMask 0b111 names a CTA outside the cluster", 2,
                    [(0, (0, 0), 0b111)], expect="fault"))
    name = "peer_tload_cluster2"
    rng = _rng(name)
    t, strides = make_tensor(rng, "FLOAT32", (64, 24))
    m = spec_for(0, "FLOAT32", (64, 24), strides, (32, 8), None, "128B")
    cases.append(TmaCase(name, "multicast", "cluster of 2: each CTA loads a box into the OTHER CTA's shared memory "
                         "(no multicast; destination and mbarrier through mapa)", [t], [m],
                         [Op("tload", rank=0, smem=0, map=0, coords=(0, 3), peer=1),
                          Op("tload", rank=1, smem=1024, map=0, coords=(40, 20), peer=0)],
                         _img_fill(2, 2048), ncta=2, expect="probe"))
    name = "peer_bload_cluster2"
    t = _rng(name).integers(0, 256, 4096, dtype=np.uint8)
    cases.append(TmaCase(name, "multicast", "cluster of 2: non-tensor global -> shared::cluster of the other CTA",
                         [t], [], [Op("bload", rank=0, smem=0, tensor=0, goff=512, size=256, peer=1),
                                   Op("bload", rank=1, smem=1024, tensor=0, goff=2048, size=96, peer=0)],
                         _img_fill(2, 2048), ncta=2, expect="probe"))
    # non-tensor multicast
    for ncta, mask in ((2, 0b11), (4, 0b1011)):
        name = f"mcast{ncta}_bulk_{mask:x}"
        rng = _rng(name)
        t = rng.integers(0, 256, 8192, dtype=np.uint8)
        ops = [Op("bload", rank=0, smem=0, tensor=0, goff=256, size=1024, mask=mask),
               Op("bload", rank=ncta - 1, smem=2048, tensor=0, goff=4096 + 48, size=160, mask=mask)]
        cases.append(TmaCase(name, "multicast", f"cluster of {ncta}: non-tensor cp.async.bulk .multicast::cluster "
                             f"(ctaMask 0x{mask:x}), 1024 and 160 bytes", [t], [], ops, _img_fill(ncta, 4096),
                             ncta=ncta))
    return cases


def _fam_bulk():
    cases = []
    rng = _rng("bulk")
    t = rng.integers(0, 256, 16384, dtype=np.uint8)
    sizes = [(16, 0, 0), (48, 16, 1024), (1024, 4096, 2048), (4096, 8192 + 32, 4096), (208, 3 * 1024 + 48, 9216)]
    cases.append(TmaCase("bulk_g2s_cluster", "bulk", "global -> shared::cluster (own CTA): 16, 48, 1024, 4096 and "
                         "208 bytes at various 16-byte aligned offsets", [t.copy()], [],
                         [Op("bload", smem=s, tensor=0, goff=g, size=n) for n, g, s in sizes],
                         _img_fill(1, 16384)))
    cases.append(TmaCase("bulk_g2s_cta", "bulk", "global -> shared::cta (PTX 8.6 form)", [t.copy()], [],
                         [Op("bload", smem=s, tensor=0, goff=g, size=n, dst_space="shared::cta")
                          for n, g, s in sizes[:3]], _img_fill(1, 4096)))
    out = np.full(8192, SENTINEL, dtype=np.uint8)
    img = _rng("bulk_s2g").integers(0, 256, (1, 8192), dtype=np.uint8)
    cases.append(TmaCase("bulk_s2g", "bulk", "shared::cta -> global: 16, 80, 2048 and 4096 bytes, in order",
                         [out], [], [Op("bstore", smem=s, tensor=0, goff=g, size=n)
                                     for n, g, s in ((16, 0, 0), (80, 32, 512), (2048, 1024, 2048),
                                                     (4096, 4096, 4096))],
                         img, dump=False))
    for ncta in (2, 4):
        img = _rng(f"bulk_s2s{ncta}").integers(0, 256, (ncta, 4096), dtype=np.uint8)
        ops = [Op("s2s", rank=r, smem=0, size=1024 + 16 * r, dst_rank=(r + 1) % ncta, dst_smem=2048)
               for r in range(ncta)]
        cases.append(TmaCase(f"bulk_s2s_cluster{ncta}", "bulk",
                             f"shared::cta -> shared::cluster around a ring of {ncta} CTAs (mbarrier in the "
                             "destination CTA)", [], [], ops, img, ncta=ncta))
    t2 = rng.integers(0, 256, 4096, dtype=np.uint8)
    cases.append(TmaCase("bulk_fault_size24", "fault", "cp.async.bulk of 24 bytes (not a multiple of 16)",
                         [t2.copy()], [], [Op("bload", smem=0, tensor=0, goff=0, size=24)], _img_fill(1, 1024),
                         expect="fault", timeout=20.0))
    cases.append(TmaCase("bulk_fault_misaligned_global", "fault", "cp.async.bulk from global address +8",
                         [t2.copy()], [], [Op("bload", smem=0, tensor=0, goff=8, size=64)], _img_fill(1, 1024),
                         expect="fault", timeout=20.0))
    cases.append(TmaCase("bulk_fault_misaligned_smem", "fault", "cp.async.bulk into SMEM offset +8",
                         [t2.copy()], [], [Op("bload", smem=8, tensor=0, goff=0, size=64)], _img_fill(1, 1024),
                         expect="fault", timeout=20.0))
    return cases


def _fam_fault():
    cases = []
    for sw in SWIZZLES:
        cases.append(_load_case(f"fault_smem_misaligned_{sw}", "fault",
                                f"tensor load into SMEM offset 8 (not 16-byte aligned), swizzle {sw}", "FLOAT32",
                                (64, 20), [(0, 0)], (SPAN[sw] // 4, 8), swizzle=sw, phase=8, expect="fault",
                                timeout=20.0))
    for off in (16, 64):
        cases.append(_store_case(f"fault_store_smem_at{off}", "fault",
                                 f"tensor store from SMEM offset {off} (16-byte aligned, not 128)", "FLOAT32",
                                 (64, 20), [(0, 0)], (16, 8), phase=off, expect="fault", timeout=20.0))
        cases.append(_load_case(f"fault_smem_at{off}_64B", "fault",
                                f"64B-swizzled tensor load into SMEM offset {off} (16-byte aligned, not 128)",
                                "FLOAT32", (64, 20), [(0, 0)], (16, 8), swizzle="64B", phase=off, expect="fault",
                                timeout=20.0))
    for sw in ("none", "128B"):
        case = _store_case(f"fault_store_smem_misaligned_{sw}", "fault",
                           f"tensor store from SMEM offset 8, swizzle {sw}", "FLOAT32", (64, 20), [(0, 0)],
                           (SPAN[sw] // 4, 8), swizzle=sw, phase=8, expect="fault", timeout=20.0)
        cases.append(case)
    drv = [
        ("global_addr_plus8", dict(byte_offset=8), "global address 8 bytes past a 256-byte aligned buffer"),
        ("global_addr_plus4", dict(byte_offset=4), "global address 4 bytes past a 256-byte aligned buffer"),
        ("stride_not16", dict(strides=(72,)), "globalStrides[0] = 72 (not a multiple of 16)"),
        ("box_inner_12B", dict(box=(3, 4)), "boxDim[0] * 4 = 12 bytes (not a multiple of 16)"),
        ("box_257", dict(box=(4, 257), dims=(32, 300)), "boxDim[1] = 257 (> 256)"),
        ("span_128B_256rows", dict(box=(64, 4), swizzle="128B"), "128B swizzle with a 256-byte inner box row"),
        ("span_32B_64rows", dict(box=(16, 4), swizzle="32B"), "32B swizzle with a 64-byte inner box row"),
        ("estride_9", dict(estr=(1, 9)), "elementStrides[1] = 9 (> 8)"),
        ("nan_fill_u32", dict(dtype="UINT32", oob="nan"), "NAN_REQUEST_ZERO_FMA on a UINT32 map"),
        ("global_dim_0", dict(dims=(32, 0)), "globalDim[1] = 0"),
    ]
    for tag, kw, note in drv:
        dims = kw.get("dims", (32, 16))
        dt = kw.get("dtype", "FLOAT32")
        rng = _rng(f"map_{tag}")
        t, strides = make_tensor(rng, dt, (dims[0], max(dims[1], 1)))
        m = spec_for(0, dt, dims, kw.get("strides", strides), kw.get("box", (8, 4)), kw.get("estr"),
                     kw.get("swizzle", "none"), kw.get("oob", "zero"), kw.get("byte_offset", 0))
        slots = _Slots()
        ops = [Op("tload", smem=slots.take(min(m.box_bytes, 32768)), map=0, coords=(0, 0))]
        cases.append(TmaCase(f"map_{tag}", "fault", f"cuTensorMapEncodeTiled must refuse: {note}", [t], [m], ops,
                             _img_fill(1, min(slots.size, 32768)), expect="driver", timeout=20.0))
    for tag, dt, c in (("load_f32_c1", "FLOAT32", (1, 2)), ("load_u16_c4", "UINT16", (4, 0)),
                       ("load_u8_c8", "UINT8", (8, 1)), ("load_f64_c1", "FLOAT64", (1, 0)),
                       ("load_f32_cneg1", "FLOAT32", (-1, 0))):
        es = _esize(dt)
        cases.append(_load_case(f"fault_inner_coord_{tag}", "fault",
                                f"tile load whose c0 = {c[0]} puts the box {c[0] * es} bytes into a row (not a "
                                "multiple of 16)", dt, (64 // es * 2, 8), [c], (64 // es, 4), expect="fault",
                                timeout=20.0, raw_c0=True))
    cases.append(_load_case("fault_inner_coord_load_128B_c4", "fault",
                            "128B-swizzled f32 tile load at c0 = 4 (16 bytes: aligned, must run)", "FLOAT32",
                            (64, 8), [(4, 1)], (32, 4), swizzle="128B", raw_c0=True))
    for tag, dt, c, redop in (("store_f32_c2", "FLOAT32", (2, 1), None), ("store_u16_c12", "UINT16", (12, 0), None),
                              ("reduce_u32_c3", "UINT32", (3, 0), "add")):
        es = _esize(dt)
        cases.append(_store_case(f"fault_inner_coord_{tag}", "fault",
                                 f"tile {'reduce' if redop else 'store'} whose c0 = {c[0]} is {c[0] * es} bytes into "
                                 "a row (not a multiple of 16)", dt, (64 // es * 2, 8), [c], (64 // es, 4),
                                 redop=redop, expect="fault", timeout=20.0, raw_c0=True,
                                 **({"old": _red_old(dt), "content": _red_values(dt, redop)} if redop else {})))
    cases.append(_load_case("fault_narrow_swizzle_past_smem", "fault",
                            "128B-swizzled u16 box of 32 x 32 (64-byte rows): 2 KiB of data spanning 4 KiB of SMEM "
                            "(rows padded to the span) in a 2 KiB shared memory", "UINT16", (64, 40), [(0, 0)],
                            (32, 32), swizzle="128B", slot=2048, expect="fault", timeout=20.0))
    cases.append(_load_case("fault_dim_mismatch_3d_on_rank2", "fault",
                            "a .3d load through a rank-2 map", "FLOAT32", (32, 16), [(0, 0, 0)], (8, 4), dim=3,
                            expect="fault", timeout=20.0))
    cases.append(_load_case("fault_dim_mismatch_2d_on_rank3", "fault",
                            "a .2d load through a rank-3 map", "FLOAT32", (32, 16, 4), [(0, 0)], (8, 4, 2), dim=2,
                            expect="fault", timeout=20.0))
    return cases


FAMILIES = {"swizzle": _fam_swizzle, "phase": _fam_phase, "rank": _fam_rank, "oob": _fam_oob, "dtype": _fam_dtype,
            "estride": _fam_estride, "store": _fam_store, "reduce": _fam_reduce, "multicast": _fam_multicast,
            "bulk": _fam_bulk, "fault": _fam_fault}


@functools.lru_cache(maxsize=1)
def all_cases():
    """name -> :class:`TmaCase` (a read-only mapping), every family, deterministic; made once per process
    (``all_cases.cache_clear()`` makes them again)."""
    out = {}
    for make in FAMILIES.values():
        for c in make():
            if c.name in out:
                raise ValueError(f"duplicate case name {c.name}")
            if c.smem > 48 * 1024 - 16:
                raise ValueError(f"case {c.name} needs {c.smem} bytes of static shared memory")
            out[c.name] = c
    return types.MappingProxyType(out)


def select(patterns=None) -> list:
    cases = all_cases()
    if not patterns:
        return list(cases.values())
    out = [c for c in cases.values() if any(fnmatch.fnmatchcase(c.name, p) or c.family == p for p in patterns)]
    if not out:
        raise SystemExit(f"no case matches {patterns}")
    return out
