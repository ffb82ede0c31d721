"""Encoding of the measured .approx tables into tcsim's package data (sim/numerics/data/approx_sm90.npz).

Each table is an array of raw result bit patterns measured on the GPU over a base domain (see
calib/approx/gen_tables.py for which inputs).  It is stored delta-encoded: the first value (int64), the steps
between neighbours as int8 (-128 marks an escape), then the escaped positions (int32) and steps (int64), all
zlib-compressed; tcsim.numerics.approx._decode inverts it.  Monotone/smooth tables compress to ~1 bit an entry.
"""
from __future__ import annotations

import zlib

import numpy as np

HEADER = ("GENERATED FILE - do not edit.  Measured .approx results of an NVIDIA H100 (sm_90); regenerate on a GPU "
          "machine with: python3 calib/approx/gen_tables.py --out sim/numerics/data/approx_sm90.npz "
          "(see calib/approx/README.md).")


def encode(values: np.ndarray) -> np.ndarray:
    o = np.asarray(values).astype(np.int64)
    d = np.diff(o)
    esc = np.nonzero((d < -127) | (d > 127))[0]
    small = np.clip(d, -128, 127).astype(np.int8)
    small[esc] = -128
    raw = (o[:1].tobytes() + small.tobytes() + esc.astype(np.int32).tobytes() + d[esc].astype(np.int64).tobytes())
    return np.frombuffer(zlib.compress(raw, 9), np.uint8)


def write(path, tables: dict, meta: dict) -> None:
    """tables: name -> (dtype name, values); meta: name -> small int arrays/scalars stored as-is."""
    out = {"__header__": np.array(HEADER)}
    for name, (dt, vals) in tables.items():
        out[name] = encode(vals)
        out[name + "__n"] = np.array([len(vals)], np.int64)
        out[name + "__dtype"] = np.array(dt)
    for k, v in meta.items():
        out["meta_" + k] = np.asarray(v)
    np.savez(path, **out)


def from_measurements(get) -> tuple[dict, dict]:
    """Build the table set from GPU measurements.  ``get(kernel, first_bits, count)`` returns the raw results of
    the f32 form ``kernel`` (e.g. 'rcp_ftz') for inputs first_bits .. first_bits+count-1; ``get(half_name)``
    with count None returns a full 65536-entry f16/bf16 table."""
    B = 1 << 23
    one, two, half_ = 0x3F800000, 0x40000000, 0x3F000000
    rcp = get("rcp_ftz", one, B)                                  # x in [1, 2)
    rsq = np.concatenate([get("rsqrt_ftz", one, B), get("rsqrt_ftz", two, B)])   # [1, 2) then [2, 4)
    sq = np.concatenate([get("sqrt_ftz", one, B), get("sqrt_ftz", two, B)])
    ex_pos = get("ex2_ftz", one, B).astype(np.int64) - B          # 2**f, f = k/2**23, from x = 1 + f (exponent - 1)
    ex_neg = get("ex2_ftz", 0x80000000 | one, B).astype(np.int64) + B   # 2**-f from x = -(1 + f) (exponent + 1)
    lg_y = get("lg2_ftz", one, B)                                 # x in [1, 2)
    lg_half = get("lg2_ftz", half_, B)                            # x in [0.5, 1)
    split = LG2_SPLIT
    tables = {
        "rcp": ("u32", rcp), "rsqrt": ("u32", rsq), "sqrt": ("u32", sq),
        "ex2_pos": ("u32", ex_pos), "ex2_neg": ("u32", ex_neg),
        "lg2_y": ("u32", lg_y), "lg2_z": ("u32", lg_half[split:]),
    }
    for h in ("ex2_f16", "ex2_bf16", "tanh_f16", "tanh_bf16"):
        tables[h] = ("u16", get(h, None, None))
    meta = {"lg2_split": split, "lg2_half_m0": int(lg_half[0])}
    # tanh.approx.f32 (MUFU.TANH) for x in binades TANH_E0 .. TANH_E1 (below: tanh(x) = x, above: +-1): the
    # hardware uses only the top bits of the mantissa, so each binade is stored at the coarsest step 2**j on which
    # its results are constant (j found here, the claim checked exhaustively by calib/approx/verify.py)
    parts, js, offs, off = [], [], [], 0
    for e in range(TANH_E0, TANH_E1 + 1):
        o = np.asarray(get("tanh", e << 23, B))
        j = 0
        while j < 12 and (o.reshape(-1, 2 << j) == o.reshape(-1, 2 << j)[:, :1]).all():
            j += 1
        parts.append(o[::1 << j])
        js.append(j)
        offs.append(off)
        off += parts[-1].size
    tables["tanh"] = ("u32", np.concatenate(parts))
    meta.update({"tanh_j": np.array(js, np.int64), "tanh_off": np.array(offs, np.int64)})
    return tables, meta


#: first mantissa (23-bit field) at which MUFU.LG2 reduces x to [sqrt(2)/2, 1) * 2**(e+1) instead of
#: [1, sqrt(2)) * 2**e: 1 + m/2**23 >= sqrt(2)
LG2_SPLIT = 3474676

#: exponent fields of the tanh.approx.f32 binades kept as tables (|x| in [2**-12, 16)); measured on the H100: for
#: smaller |x| the result is x, for larger it is +-1
TANH_E0, TANH_E1 = 115, 130
