"""Compare two traced runs of the same instrumented launch (simulator vs GPU, vs a golden file, or two
simulator runs): outputs bit for bit, per-warp register-value sequences bit for bit.

What is compared, and how (see :mod:`tcsim.isa.instrument` for the value classes):

* **Outputs**: every array argument, bit for bit; the first differing element (multi-index, both values
  and their bits) and the number of differing elements are reported per buffer.
* **Traces**, per warp and per lane: the sequence of (point, value of each destination) over the records
  whose mask holds the lane, in the warp's program order.  Comparing lane by lane makes the result
  independent of how the back ends group divergent lanes (independent thread scheduling lets them differ);
  the order between different warps is not compared at all.  Lanes outside a record's mask are ignored.
  - ``exact`` values must be bit-identical;
  - ``address`` values (derived from pointer parameters or symbol addresses) must be bit-identical *or* lie
    at the same offset from the same relocation anchor (``A_ptr+256``, ``shared full_bar+8``) on both sides:
    buffers and variables live at different addresses on different back ends;
  - ``approx`` values (``.approx`` instruction results) that differ are listed separately with their ulp
    distance (:func:`tcsim.numerics.approx.ulp_distance`) and make the runs *not* identical;
  - ``poll`` values (``mbarrier.try_wait``/``test_wait`` results): how often a wait polls is timing, so a run
    of consecutive records of the same poll point collapses to its last record before comparing;
  - ``timing`` (``%clock``/``%globaltimer``-derived), ``hwid`` (``%smid``/``%warpid``...) and ``opaque``
    (``mbarrier.arrive`` state tokens, cache policies) values are counted, never compared.
* **Convergence** (which lanes executed each record together) is reported, not asserted: independent
  thread scheduling allows the GPU to group lanes differently from the simulator's min-PC reconvergence.
* **Clocks** are reported as ratios (GPU cycles per simulated cycle), never asserted.

When a warp's ring wrapped (more records than ``ring_records``) the newest records are compared, aligned at
the end of the kernel, and the report says how many.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

__all__ = ["diff_runs", "DiffReport", "OutputDiff", "Mismatch", "ApproxDiff", "relocate"]

_NOT_COMPARED = ("timing", "hwid", "opaque")
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclass
class OutputDiff:
    index: int
    name: str
    dtype: str
    shape: tuple
    equal: bool
    n_diff: int = 0
    first: tuple | None = None
    a: object = None
    b: object = None
    a_bits: str = ""
    b_bits: str = ""
    note: str = ""


@dataclass
class Mismatch:
    kind: str                  # value | control | length | poll
    warp: str
    lane: int
    position: int              # index in the lane's (collapsed) record sequence
    line: int
    text: str
    reg: str = ""
    cls: str = ""
    a: int | None = None
    b: int | None = None
    note: str = ""
    line_b: int | None = None
    text_b: str = ""


@dataclass
class ApproxDiff:
    point: int
    line: int
    text: str
    reg: str
    fmt: str
    count: int = 0
    max_ulp: int = 0
    example: tuple = ()        # (warp label, lane, a bits, b bits, ulp)


@dataclass
class DiffReport:
    a_name: str
    b_name: str
    kernel: str
    n_points: int
    ring_records: int
    outputs: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)        # first value mismatch per warp, plus control/length
    n_value_mismatches: int = 0
    approx: list = field(default_factory=list)
    compared: Counter = field(default_factory=Counter)    # lane values per class
    relocated: int = 0
    poll_collapsed: tuple = (0, 0)
    coverage: list = field(default_factory=list)          # notes about wrapped rings
    convergence: list = field(default_factory=list)       # notes (not asserted)
    timing: dict = field(default_factory=dict)
    records: tuple = (0, 0)
    warps: int = 0

    @property
    def outputs_identical(self) -> bool:
        return all(o.equal for o in self.outputs)

    @property
    def identical(self) -> bool:
        return self.outputs_identical and not self.mismatches and not self.approx

    def format(self, max_items: int = 8) -> str:
        return _format(self, max_items)

    def __str__(self) -> str:
        return self.format()


# ----------------------------------------------------------------------------------------- outputs


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype.itemsize in _UINT and a.dtype != object:
        return a.view(_UINT[a.dtype.itemsize])
    return a.view(np.uint8).reshape(a.shape + (-1,)) if a.ndim else a.view(np.uint8)


def _compare_output(i, name, a, b) -> OutputDiff:
    if a is None or b is None:
        eq = a is None and b is None
        return OutputDiff(i, name, "", (), eq, note="" if eq else "missing on one side")
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return OutputDiff(i, name, str(a.dtype), a.shape, False,
                          note=f"dtype/shape differ: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}")
    ba, bb = _bits(a), _bits(b)
    neq = ba != bb
    if neq.ndim > a.ndim:
        neq = neq.any(axis=-1)
    n = int(neq.sum())
    if n == 0:
        return OutputDiff(i, name, str(a.dtype), a.shape, True)
    first = tuple(int(x) for x in np.argwhere(neq)[0])
    w = 2 * a.dtype.itemsize
    fa, fb = ba[first], bb[first]
    return OutputDiff(i, name, str(a.dtype), a.shape, False, n_diff=n, first=first, a=a[first].item(),
                      b=b[first].item(),
                      a_bits=f"0x{int(fa):0{w}x}" if np.ndim(fa) == 0 else bytes(fa).hex(),
                      b_bits=f"0x{int(fb):0{w}x}" if np.ndim(fb) == 0 else bytes(fb).hex())


# ----------------------------------------------------------------------------------------- relocation


def _anchor_extents(run) -> list:
    lay = run.layout
    out = []
    for an in lay.anchors:
        if an.size is not None:
            out.append(int(an.size))
        elif an.kind == "param":
            try:
                v = run.arg_bytes[lay.params.index(an.name)]
            except (ValueError, IndexError):
                v = None
            off = getattr(an, "offset", 0)
            if isinstance(v, (list, tuple)):        # a struct argument: [[offset, nbytes]] of its pointers
                v = next((int(n) for o, n in v if int(o) == off), 0)
            elif off:                               # a word past the start of a non-struct argument
                v = 0
            out.append(int(v or 0))
        else:                                   # extern (dynamic) shared memory
            out.append(int(run.dynamic_smem))
    return out


def relocate(value: int, anchors, extents, layout) -> list:
    """Every (anchor index, offset) with ``anchor <= value <= anchor + extent`` (the empty list: none)."""
    out = []
    for k, (base, ext) in enumerate(zip(anchors, extents)):
        d = int(value) - int(base)
        if 0 <= d <= ext:
            out.append((k, d))
    return out


def _same_derivation(x: int, y: int, anchors_a, anchors_b, ext_a, ext_b) -> bool:
    """Whether ``x`` and ``y`` are the same offset from the same anchor although neither lies inside it: a pointer
    stepped before the start or past the end of its buffer (a loop's last increment), which :func:`relocate` does
    not place because the two back ends put the neighbouring buffers at different distances.  The offset may reach
    one extent beyond either end (a loop's last stride is at most the buffer) -- farther than that, a coincidence
    is more likely than a derivation."""
    for base_a, base_b, ea, eb in zip(anchors_a, anchors_b, ext_a, ext_b):
        d = int(x) - int(base_a)
        ext = max(int(ea), int(eb), 1)
        if d == int(y) - int(base_b) and -ext <= d <= 2 * ext:
            return True
    return False


def _anchor_name(layout, k) -> str:
    an = layout.anchors[k]
    kinds = {"param": "", "param_addr": "&param ", "param_generic": "generic &param ", "shared": "shared ",
             "shared_generic": "generic shared ", "global": "global ", "const": "const ",
             "const_generic": "generic const ", "local": "local ", "local_generic": "generic local "}
    word = f"[{an.offset}]" if getattr(an, "offset", 0) else ""
    return f"{kinds.get(an.kind, an.kind + ' ')}{an.name}{word}"


# ----------------------------------------------------------------------------------------- traces


def _ulp(fmt: str, a: int, b: int) -> int:
    from tcsim.numerics.approx import ulp_distance

    if fmt in ("f16x2", "bf16x2"):
        base = fmt[:-2]
        return max(int(ulp_distance(base, np.array([a & 0xFFFF]), np.array([b & 0xFFFF]))[0]),
                   int(ulp_distance(base, np.array([(a >> 16) & 0xFFFF]), np.array([(b >> 16) & 0xFFFF]))[0]))
    mask = {"f16": 0xFFFF, "bf16": 0xFFFF, "f32": 0xFFFFFFFF, "f64": (1 << 64) - 1}[fmt]
    return int(ulp_distance(fmt, np.array([a & mask], dtype=np.uint64), np.array([b & mask], dtype=np.uint64))[0])


def _lane_sequence(wt, lane, is_poll):
    sel = np.nonzero((wt.masks >> np.uint32(lane)) & np.uint32(1))[0]
    pts = wt.points[sel]
    if len(pts):
        nxt = np.append(pts[1:], -1)
        keep = ~(is_poll[pts] & (pts == nxt))
        return sel[keep], int((~keep).sum())
    return sel, 0


def _point_label(layout, pid):
    p = layout.points[pid]
    return p.line, p.text


def diff_runs(a, b, max_mismatches_per_warp: int = 1) -> DiffReport:
    """Compare two :class:`tcsim.hw.trace.TracedRun` s of the same instrumented launch."""
    la, lb = a.layout, b.layout
    if la.fingerprint != lb.fingerprint:
        raise ValueError("the two runs were instrumented differently (different PTX, points or ring size); "
                         "they cannot be compared record by record")
    lay = la
    rep = DiffReport(a_name=_run_name(a), b_name=_run_name(b), kernel=lay.kernel, n_points=len(lay.points),
                     ring_records=lay.ring_records)
    names = lay.params
    for i, (x, y) in enumerate(zip(a.outputs, b.outputs)):
        if x is None and y is None:
            continue
        name = names[i] if i < len(names) else f"arg{i}"
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)) and len(x) == len(y):
            for j, (xf, yf) in enumerate(zip(x, y)):       # a Struct argument: its pointer fields' arrays
                rep.outputs.append(_compare_output(i, f"{name}.{j}", xf, yf))
            continue
        rep.outputs.append(_compare_output(i, name, x, y))

    npts = len(lay.points)
    is_poll = np.zeros(max(npts, 1), dtype=bool)
    ndest = np.zeros(max(npts, 1), dtype=np.int64)
    cls_table = []
    for p in lay.points:
        is_poll[p.id] = any(c == "poll" for c in p.classes) and p.opcode.startswith("mbarrier")
        ndest[p.id] = len(p.dests)
        cls_table.append(p.classes)
    classes = ("exact", "address", "approx", "poll", "timing", "hwid", "opaque")
    cls_count = np.zeros((max(npts, 1), len(classes)), dtype=np.int64)
    for p in lay.points:
        for c in p.classes:
            cls_count[p.id, classes.index(c)] += 1
    ext_a, ext_b = _anchor_extents(a), _anchor_extents(b)
    approx_acc: dict = {}
    rep.warps = len(a.traces)
    rep.records = (sum(len(t) for t in a.traces), sum(len(t) for t in b.traces))
    if len(a.traces) != len(b.traces):
        rep.mismatches.append(Mismatch("length", "launch", -1, 0, 0, "",
                                       note=f"{len(a.traces)} warps vs {len(b.traces)} warps"))
    coll_a = coll_b = 0
    for wa, wb in zip(a.traces, b.traces):
        label = wa.label
        wrapped = wa.dropped > 0 or wb.dropped > 0
        if wrapped:
            rep.coverage.append(f"{label}: ring wrapped ({wa.count} / {wb.count} records written, "
                                f"{lay.ring_records} kept); the newest records were compared, aligned at the end")
        warp_mism = 0
        ctrl_reported = False
        for lane in range(32):
            ia, ca = _lane_sequence(wa, lane, is_poll)
            ib, cb = _lane_sequence(wb, lane, is_poll)
            coll_a += ca
            coll_b += cb
            if not len(ia) and not len(ib):
                continue
            if wrapped:
                n = min(len(ia), len(ib))
                ia, ib = ia[len(ia) - n:], ib[len(ib) - n:]
            elif len(ia) != len(ib):
                n = min(len(ia), len(ib))
                pa_, pb_ = wa.points[ia[:n]], wb.points[ib[:n]]
                d = np.nonzero(pa_ != pb_)[0]
                if not d.size and not ctrl_reported:
                    longer, side = (ia, "a") if len(ia) > len(ib) else (ib, "b")
                    extra = (wa if side == "a" else wb).points[longer[n]]
                    line, text = _point_label(lay, int(extra))
                    rep.mismatches.append(Mismatch(
                        "length", label, lane, n, line, text,
                        note=f"{len(ia)} records on {rep.a_name} vs {len(ib)} on {rep.b_name}; the longer one "
                             f"continues at line {line}"))
                    ctrl_reported = True
                    ia, ib = ia[:n], ib[:n]
                else:
                    ia, ib = ia[:n], ib[:n]
            pa, pb = wa.points[ia], wb.points[ib]
            d = np.nonzero(pa != pb)[0]
            if d.size:
                k = int(d[0])
                la_, ta_ = _point_label(lay, int(pa[k]))
                lb_, tb_ = _point_label(lay, int(pb[k]))
                if not ctrl_reported:
                    rep.mismatches.append(Mismatch("control", label, lane, k, la_, ta_, line_b=lb_, text_b=tb_,
                                                   note="the lane executed different instructions"))
                    ctrl_reported = True
                ia, ib, pa = ia[:k], ib[:k], pa[:k]
            for ci in range(len(classes)):
                rep.compared[classes[ci]] += int(cls_count[pa, ci].sum())
            va = wa.values[ia, :, lane]
            vb = wb.values[ib, :, lane]
            neq = np.argwhere(va != vb)
            for r, dcol in neq:
                pid = int(pa[r])
                if dcol >= ndest[pid]:
                    continue
                p = lay.points[pid]
                cls = p.classes[dcol]
                x, y = int(va[r, dcol]), int(vb[r, dcol])
                reg = p.dests[dcol][0]
                if cls in _NOT_COMPARED:
                    continue
                if cls == "address":
                    ra = dict(relocate(x, wa.anchors, ext_a, lay))
                    rb = dict(relocate(y, wb.anchors, ext_b, lay))
                    common = [k for k in ra if k in rb and ra[k] == rb[k]]
                    if common or _same_derivation(x, y, wa.anchors, wb.anchors, ext_a, ext_b):
                        rep.relocated += 1
                        continue
                    note = "address: " + _reloc_text(lay, ra, x) + " vs " + _reloc_text(lay, rb, y)
                elif cls == "approx":
                    key = (pid, reg)
                    ad = approx_acc.get(key)
                    if ad is None:
                        ad = approx_acc[key] = ApproxDiff(pid, p.line, p.text, reg, p.approx_format or "f32")
                    u = _ulp(ad.fmt, x, y)
                    ad.count += 1
                    if u > ad.max_ulp or not ad.example:
                        ad.max_ulp = max(ad.max_ulp, u)
                        ad.example = (label, lane, x, y, u)
                    continue
                elif cls == "poll":
                    note = "poll outcome differs (timing-dependent)"
                else:
                    note = "depends on .approx results" if p.approx_inputs else ""
                rep.n_value_mismatches += 1
                if warp_mism < max_mismatches_per_warp:
                    rep.mismatches.append(Mismatch("poll" if cls == "poll" else "value", label, lane, int(r), p.line,
                                                   p.text, reg=reg, cls=cls, a=x, b=y, note=note))
                warp_mism += 1
        _convergence(rep, wa, wb, lay, is_poll)
    rep.approx = sorted(approx_acc.values(), key=lambda d: (d.line, d.reg))
    rep.poll_collapsed = (coll_a, coll_b)
    rep.timing = _timing(a, b, lay)
    return rep


def _reloc_text(lay, rel: dict, v: int) -> str:
    if not rel:
        return f"0x{v:x} (no anchor)"
    k, d = max(rel.items(), key=lambda kv: -kv[1])
    return f"{_anchor_name(lay, k)}+{d}"


def _run_name(run) -> str:
    if run.backend == "golden":
        return f"golden ({run.info.get('saved_from', '?')}: {run.info.get('path', '')})"
    return f"{run.backend} [{run.device}]" if run.device else run.backend


def _collapsed_groups(wt, is_poll) -> Counter:
    c = Counter()
    prev = None
    for p, m in zip(wt.points.tolist(), wt.masks.tolist()):
        if prev == (p, m) and is_poll[p]:
            continue
        c[(p, m)] += 1
        prev = (p, m)
    return c


def _convergence(rep, wa, wb, lay, is_poll) -> None:
    if wa.dropped or wb.dropped:
        return
    ga, gb = _collapsed_groups(wa, is_poll), _collapsed_groups(wb, is_poll)
    if ga == gb:
        return
    only_a = ga - gb
    only_b = gb - ga
    ex = ""
    if only_a:
        (p, m), _ = min(only_a.items(), key=lambda kv: kv[0][0])
        other = sorted({mm for (pp, mm) in gb if pp == p})
        ex = (f"first at line {lay.points[p].line}: {rep.a_name.split()[0]} mask 0x{m:08x}, "
              f"{rep.b_name.split()[0]} masks {', '.join(f'0x{x:08x}' for x in other) or 'none'}")
    rep.convergence.append(f"{wa.label}: lanes grouped differently ({sum(only_a.values())} vs "
                           f"{sum(only_b.values())} records unmatched); {ex}")


def _timing(a, b, lay) -> dict:
    spans_a, spans_b = [], []
    for wa, wb in zip(a.traces, b.traces):
        if len(wa) > 1 and len(wb) > 1:
            spans_a.append(int(wa.clocks.max()) - int(wa.clocks.min()))
            spans_b.append(int(wb.clocks.max()) - int(wb.clocks.min()))
    if not spans_a:
        return {}
    sa, sb = float(np.median(spans_a)), float(np.median(spans_b))
    out = {"span_a": sa, "span_b": sb, "ratio": (sb / sa) if sa else float("inf")}
    # mean cycles from the previous record of the warp to each point, per side
    per = {}
    for side, run in (("a", a), ("b", b)):
        acc: dict = {}
        for wt in run.traces:
            if len(wt) < 2:
                continue
            d = np.diff(wt.clocks.astype(np.int64))
            for p, dd in zip(wt.points[1:].tolist(), d.tolist()):
                s = acc.setdefault(p, [0, 0])
                s[0] += dd
                s[1] += 1
        per[side] = {p: s[0] / s[1] for p, s in acc.items()}
    common = [p for p in per["b"] if p in per["a"]]
    top = sorted(common, key=lambda p: -per["b"][p])[:3]
    out["top"] = [(lay.points[p].line, lay.points[p].text, per["a"][p], per["b"][p]) for p in top]
    return out


# ----------------------------------------------------------------------------------------- the report


def _fmt_val(v):
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _format(rep: DiffReport, max_items: int) -> str:
    L = []
    A, B = rep.a_name, rep.b_name
    a0, b0 = A.split()[0], B.split()[0]
    L.append(f"comparing {A}  vs  {B}")
    L.append(f"kernel {rep.kernel}: {rep.n_points} trace points, {rep.warps} warp(s), ring {rep.ring_records} "
             f"records/warp; {rep.records[0]} records ({a0}) / {rep.records[1]} records ({b0})")
    n_eq = sum(o.equal for o in rep.outputs)
    L.append(f"outputs: {n_eq} of {len(rep.outputs)} buffers bit-identical")
    for o in rep.outputs:
        if o.equal:
            L.append(f"  [{o.index}] {o.name:<14} {o.dtype}{list(o.shape)}  identical")
        elif o.first is None:
            L.append(f"  [{o.index}] {o.name:<14} DIFFERS: {o.note}")
        else:
            idx = ",".join(map(str, o.first))
            L.append(f"  [{o.index}] {o.name:<14} {o.dtype}{list(o.shape)}  DIFFERS in {o.n_diff} element(s); "
                     f"first [{idx}]: {a0} {_fmt_val(o.a)} ({o.a_bits}) vs {b0} {_fmt_val(o.b)} ({o.b_bits})")
    comp = rep.compared
    L.append("trace values (per lane, program order within each warp):")
    L.append(f"  exact    {comp['exact']:>8} lane values compared bit for bit")
    L.append(f"  address  {comp['address']:>8} lane values (bit-identical or same offset from the same "
             f"anchor; {rep.relocated} relocated)")
    if comp["approx"] or rep.approx:
        L.append(f"  approx   {comp['approx']:>8} lane values of .approx results")
    if comp["poll"]:
        L.append(f"  poll     {comp['poll']:>8} wait results compared after collapsing repeated polls "
                 f"({rep.poll_collapsed[0]} / {rep.poll_collapsed[1]} extra polls dropped)")
    nc = {c: comp[c] for c in _NOT_COMPARED if comp[c]}
    if nc:
        L.append("  not compared: " + ", ".join(f"{v} {k}" for k, v in nc.items()))
    vm = [m for m in rep.mismatches if m.kind in ("value", "poll")]
    cm = [m for m in rep.mismatches if m.kind in ("control", "length")]
    if rep.n_value_mismatches:
        L.append(f"  VALUE MISMATCHES: {rep.n_value_mismatches} lane value(s); first per warp:")
        for m in vm[:max_items]:
            note = f"  [{m.note}]" if m.note else ""
            L.append(f"    {m.warp} lane {m.lane}, record {m.position}, line {m.line} `{m.text}`: {m.reg} "
                     f"({m.cls}) {a0} 0x{m.a:x} vs {b0} 0x{m.b:x}{note}")
        if len(vm) > max_items:
            L.append(f"    ... {len(vm) - max_items} more warps")
    if cm:
        L.append(f"  CONTROL-FLOW / LENGTH DIFFERENCES: {len(cm)} lane(s); first:")
        for m in cm[:max_items]:
            if m.kind == "control":
                L.append(f"    {m.warp} lane {m.lane}, record {m.position}: {a0} at line {m.line} `{m.text}`, "
                         f"{b0} at line {m.line_b} `{m.text_b}`")
            else:
                L.append(f"    {m.warp} lane {m.lane}: {m.note}")
    if rep.approx:
        L.append(f"  .APPROX RESULTS THAT DIFFER ({len(rep.approx)} point(s), reported, not tolerated):")
        for d in rep.approx[:max_items]:
            w, lane, x, y, u = d.example
            L.append(f"    line {d.line} `{d.text}` {d.reg}: {d.count} lane value(s), max {d.max_ulp} ulp "
                     f"({d.fmt}); e.g. {w} lane {lane}: 0x{x:x} vs 0x{y:x} ({u} ulp)")
    for c in rep.coverage[:max_items]:
        L.append(f"  note: {c}")
    if rep.convergence:
        L.append("convergence (reported, not asserted):")
        for c in rep.convergence[:max_items]:
            L.append(f"  {c}")
    else:
        L.append("convergence: same lane groupings on both sides")
    t = rep.timing
    if t:
        L.append(f"clocks (reported, not asserted): median warp span {a0} {t['span_a']:.0f} vs {b0} "
                 f"{t['span_b']:.0f} cycles, ratio {b0}/{a0} = {t['ratio']:.2f}")
        for line, text, ca, cb in t.get("top", []):
            r = cb / ca if ca else float("inf")
            L.append(f"  line {line:<4} {text[:60]:<60} {ca:8.1f} vs {cb:8.1f} cycles since previous record "
                     f"(x{r:.2f})")
    L.append("RESULT: " + ("bit-identical" if rep.identical else "DIFFERENT"))
    return "\n".join(L)
