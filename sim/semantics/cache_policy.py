"""L2 cache policies: createpolicy, applypriority, discard.

PTX ISA 9.1 §9.7.9.18 createpolicy, §9.7.9.16 applypriority, §9.7.9.17 discard (forms and checks:
:mod:`tcsim.isa.cache_policy_forms`).

* ``createpolicy`` writes the 64-bit cache-policy value the H100 writes for the same operands
  (:func:`tcsim.isa.cache_policy_forms.encode_policy`); the value is what the ``.L2::cache_hint`` operand of ld /
  st / atom / red / cp.async / cp.async.bulk{.tensor,.prefetch} carries.  tcsim models no caches, so the hint has
  no functional effect on those instructions: they check the operand (a 64-bit register) and read it.  A register
  fraction outside (0, 1] is what ptxas rejects for an immediate; at run time it raises a VerifyError naming the
  lanes.
* ``applypriority.global.L2::evict_normal [a], 128``: a hint; the address is evaluated (a bad one faults).
* ``discard.global.L2 [a], 128``: per the PTX a weak write of an indeterminate value to the 128-byte line; tcsim
  keeps the bytes (one value the PTX allows) and reports the write (op 'discard') to the race detector, so a read
  of the line that is not ordered after the discard is a race.

Not supported: the eviction behaviour itself (tcsim has no cache model); policy values are the sm_90 (H100)
encoding, also used for sm_100a targets (not measured on a Blackwell GPU).
"""
from __future__ import annotations

import numpy as np

from tcsim.isa.cache_policy_forms import encode_policy, parse_createpolicy, parse_hint_range
from tcsim.isa.errors import VerifyError
from tcsim.isa import ir
from .registry import semantics


@semantics("createpolicy")
def decode_createpolicy(ins, info):
    """PTX ISA §9.7.9.18 createpolicy: make a cache-policy value (module docstring)."""
    f = parse_createpolicy(ins, info)
    name = ins.full_opcode
    if f.mode == "fractional" and not isinstance(f.fraction, ir.Reg):
        value = encode_policy("fractional", f.primary, f.secondary,
                              fraction=1.0 if f.fraction is None else float(np.float32(f.fraction.value)))

        def run(ctx):
            ctx.write(f.dst, "b64", np.uint64(value))
        return run

    def run(ctx):
        lanes = ctx.lane_ids()
        out = np.zeros(32, dtype=np.uint64)
        if f.mode == "fractional":
            fr = ctx.read(f.fraction, "f32")
            bad = [int(ln) for ln in lanes if not 0.0 < float(fr[ln]) <= 1.0]
            if bad:
                raise VerifyError(f"{name}: fraction {float(fr[bad[0]])!r} (lane {bad[0]}) is outside (0, 1]",
                                  expected="a fraction in (0.0, 1.0]")
            for ln in lanes:
                out[ln] = encode_policy("fractional", f.primary, f.secondary, fraction=float(fr[ln]))
        elif f.mode == "range":
            a = ctx.address(f.addr)
            ps, ts = ctx.read(f.primary_size, "u32"), ctx.read(f.total_size, "u32")
            for ln in lanes:
                if int(ps[ln]) > int(ts[ln]):
                    raise VerifyError(f"{name}: primary-size {int(ps[ln])} exceeds total-size {int(ts[ln])} "
                                      f"(lane {int(ln)})", expected="primary-size <= total-size")
                out[ln] = encode_policy("range", f.primary, f.secondary, addr=int(a[ln]),
                                        primary_size=int(ps[ln]), total_size=int(ts[ln]))
        else:
            p = ctx.read(f.prop, "b64")
            for ln in lanes:
                out[ln] = encode_policy("cvt", prop=int(p[ln]))
        ctx.write(f.dst, "b64", out)

    return run


@semantics("applypriority")
def decode_applypriority(ins, info):
    """PTX ISA §9.7.9.16 applypriority: a cache hint with no architectural effect (the address is checked)."""
    addr = parse_hint_range(ins)

    def run(ctx):
        ctx.address(addr)
        ctx.emit_sync("applypriority", what=ins.full_opcode)

    return run


@semantics("discard")
def decode_discard(ins, info):
    """PTX ISA §9.7.9.17 discard: the 128-byte line becomes indeterminate (module docstring)."""
    addr = parse_hint_range(ins)

    def run(ctx):
        ctx.discard("global" if "global" in ins.mods else "generic", ctx.address(addr), 128)

    return run
