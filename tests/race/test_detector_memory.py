"""The race detector's state stays bounded over a grid of many CTAs (issue 15, item 3 of the last round; issue 17
measured 108.6 -> 154.3 MiB outside the shadow pages from CTA 500 to 1,100 of a 1,200-CTA grid).

What grew was the width of the vector clocks: one component per warp (and per tcgen05 / cp.async stream of each
warp) ever started, so every clock made later was wider (tcsim.race.clocks).  Now the components of compacted
clusters are retired and recycled once no clock alive knows them, the streams a warp never uses are not
registered, and the access records of compacted shared / tensor memory give their ids to new records.  The test
counts entries, not bytes or seconds: between the 250th and the 500th CTA exit of a grid that runs one CTA per SM,
the clock width, the components alive, the clocks alive and every per-cluster table stay where they were, and the
access records grow by the global store each CTA makes (the global shadow, which later CTAs meet, keeps it)."""
from __future__ import annotations

import numpy as np

from tcsim.launch import Launch, Prepared

# one CTA per SM (200 KiB of shared memory): thread 0 of each CTA stores to its shared buffer, reads it back
# after a barrier with every warp, and writes ctaid + 1 to out[ctaid]; warp 1 also stores and reads a word of its
# own (two warps with events per CTA).  And a race: thread 0 of CTA 50 (compacted early, its clock components
# recycled) and of CTA 510 (run on a recycled component) both write out[520] -- nothing orders them
KERNEL = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  .shared .align 8 .b8 buf[204800];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  add.u32 %r3, %r2, 1;
  setp.eq.u32 %p1, %r1, 0;
  setp.eq.u32 %p2, %r1, 32;
  @%p1 st.shared.u32 [buf], %r3;
  @%p2 st.shared.u32 [buf+64], %r3;
  bar.sync 0;
  @%p2 ld.shared.u32 %r5, [buf+64];
  @!%p1 bra DONE;
  ld.shared.u32 %r4, [buf];
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd3, %r2, 4;
  add.u64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r4;
  setp.eq.u32 %p2, %r2, 50;
  setp.eq.u32 %p3, %r2, 510;
  or.pred %p2, %p2, %p3;
  @%p2 st.global.u32 [%rd1+2080], %r4;       // RACE (out[520])
DONE:
  ret;
}
"""


def _counts(det) -> dict:
    reg = det.reg
    return {"clock width": reg.cap, "components alive": reg.live(), "clocks alive": len(reg.clocks),
            "warps": len(det.warps), "spaces": len(det.spaces), "ops": len(det.ops), "streams": len(det.streams),
            "barriers": len(det.bars) + len(det.mbars), "locations": len(det.locs),
            "record slots": len(det.recs),
            "global records": sum(r is not None and r.space == "global" for r in det.recs),
            "CTAs kept": len(det.sim.ctas)}


def test_detector_state_of_a_long_grid_stays_bounded(monkeypatch):
    import tcsim.retention as retention
    monkeypatch.setattr(retention, "KEEP_FINISHED_CTAS", 8)
    n, marks = 520, (250, 500)        # 520 CTAs run in ~4 waves of 132
    prep = Prepared(Launch(ptx=KERNEL, grid=(n, 1, 1), block=(64, 1, 1), args=[np.zeros(n + 1, np.uint32)]),
                    progress=False)
    det = prep.detector
    seen = {}

    def at_exit(cta):
        if cta.index == 50:
            seen["comp of CTA 50"] = det.warps[((50, 0, 0), 0)].comp
        if cta.index in marks:
            seen[cta.index] = _counts(det)
    prep.sim.cta_exit_hooks.append(at_exit)
    prep.sim.run()
    r = prep.result()
    assert np.array_equal(r.outputs[0][:n], np.arange(1, n + 1, dtype=np.uint32))
    # the race across a recycled component is found as in a run kept whole: one finding, both CTAs' stores
    c50 = seen["comp of CTA 50"]
    assert c50 in det.reg.free or det.reg.keys[c50] != ("warp", (50, 0, 0), 0)       # recycled
    line = next(i for i, ln in enumerate(KERNEL.splitlines(), 1) if "// RACE" in ln)
    [f] = r.findings
    assert f.cls == 21 and tuple(f.lines) == (line, line), f.format()
    assert "cta (50,0,0)" in f.format() and "cta (510,0,0)" in f.format(), f.format()
    a, b = seen[marks[0]], seen[marks[1]]
    ctas = marks[1] - marks[0]
    # the global stores of the CTAs that ran in between (those alive at the second mark included): one record
    # each, kept by the global shadow
    assert b["global records"] - a["global records"] <= ctas + b["CTAs kept"], (a, b)
    # the other records are those of the shared memory of the CTAs alive or kept whole (4 accesses each): their
    # slots are reused once a cluster is compacted (without that they would grow by 4 x 250)
    assert b["record slots"] - b["global records"] <= a["record slots"] - a["global records"] + 4 * 16, (a, b)
    # everything else stays where it was, up to the CTAs alive at the moment (2 warps with events each)
    assert b["clock width"] == a["clock width"], (a, b)
    for k in ("components alive", "clocks alive", "warps", "spaces", "ops", "streams", "barriers", "locations"):
        assert b[k] <= a[k] + 2 * 16, (k, a, b)
    # the components registered and not recycled are at most those of the CTAs that can be resident at once (one
    # per SM) and of the CTAs kept whole, 2 warps with events each, one component per warp, and the component
    # nobody advances -- not one per warp started (1,040 here)
    resident = prep.sim.resident_clusters
    assert resident == int(prep.sim.arch_config.num_sms)
    for c in (a, b):
        assert c["components alive"] <= 2 * (resident + 8) + 1, (c, resident)
