"""Fit sm_90a timing parameters on the **fit split** of the corpus (``python -m calib.timing_corpus timing fit``).

Gauss-Newton on the relative errors ``(simulated - measured) / measured`` of the fit-split kernels a parameter
group acts on, the Jacobian by forward differences (each kernel simulated with each parameter moved by its step),
values clipped to their bounds; two iterations.  Validation- and test-split kernels are never simulated here.
The result is printed (values, per-kernel errors before / after); the values go into sim/timing/params.py by hand,
each with this command as its source.
"""
from __future__ import annotations

import numpy as np

from calib import pipeline as P

from . import evaluate as E
from . import record as R
from .split import split_of

#: group -> (parameters {name: (step, low, high)}, kernel selector: a predicate on the kernel name)
GROUPS = {
    "memory_ordering": ({"membar_cta_cycles": (20.0, 0.0, 2000.0), "membar_gpu_cycles": (50.0, 0.0, 5000.0),
                         "membar_sys_cycles": (100.0, 0.0, 10000.0), "membar_sc_extra": (20.0, 0.0, 2000.0),
                         "acquire_cctl_cycles": (20.0, 0.0, 2000.0)},
                        lambda n: n.startswith(("fence_", "hist_", "tri_hist_", "flag_handoff"))),
    "atomics": ({"atom_same_address_cycles": (2.0, 0.0, 200.0)},
                lambda n: n.startswith(("atomic_", "hist_atom_relaxed", "hist_red", "tri_hist_relaxed", "tri_atomic"))),
    "gather": ({"l1_line_cycles": (0.5, 0.0, 16.0), "l2_line_cycles": (1.0, 0.0, 64.0)},
               lambda n: n.startswith(("chase_", "gather_", "tri_gather", "spmv_"))),
}


def _cfg(base, values):
    return base.with_overrides(dict(values), source="calib/timing_corpus fit")


def _sim(names, cfg, jobs) -> np.ndarray:
    got = P.run_all(names, lambda n: R.run_sim(n, cfg), max(1, jobs), processes=jobs > 1)
    out = []
    for n, e in zip(names, got):
        if e.get("status") != "ok" or not all(e["correct"]):
            raise RuntimeError(f"{n}: {e.get('status')} {e.get('detail', e.get('check'))}")
        out.append(e["cycles"][0])
    return np.asarray(out, dtype=np.float64)


def fit_group(group: str, jobs: int = 1, iters: int = 2, log=print) -> dict:
    from tcsim.timing.params import arch_config
    params, select = GROUPS[group]
    hw = E.measured(E.load_golden())
    names = [n for n in R.names() if n in hw and split_of(n) == "fit" and select(n)]
    if not names:
        raise E.EvalError(f"no fit-split kernel with an H100 record for {group}")
    base = arch_config("sm_90a")
    meas = np.asarray([hw[n] for n in names])
    x = {k: float(getattr(base, k)) for k in params}
    log(f"{group}: {len(names)} fit-split kernels: {', '.join(names)}")
    s0 = _sim(names, _cfg(base, x), jobs)
    before = (s0 - meas) / meas
    for it in range(iters):
        r = (_sim(names, _cfg(base, x), jobs) - meas) / meas if it else before
        J = np.zeros((len(names), len(params)))
        for j, (k, (step, _, _)) in enumerate(params.items()):
            xs = dict(x)
            xs[k] = x[k] + step
            J[:, j] = ((_sim(names, _cfg(base, xs), jobs) - meas) / meas - r) / step
        live = np.abs(J).sum(axis=0) > 0
        dx = np.zeros(len(params))
        dx[live] = np.linalg.lstsq(J[:, live], -r, rcond=None)[0]
        for j, (k, (_, lo, hi)) in enumerate(params.items()):
            x[k] = float(np.clip(x[k] + dx[j], lo, hi))
        log(f"  iteration {it + 1}: " + ", ".join(f"{k} {v:.1f}" for k, v in x.items()))
    after = (_sim(names, _cfg(base, x), jobs) - meas) / meas
    for n, b, a, m in zip(names, before, after, meas):
        log(f"  {n:34s} H100 {m:8.0f}  error {100 * b:+7.1f}% -> {100 * a:+7.1f}%")
    log(f"  fit-split MAPE of these kernels: {100 * np.mean(np.abs(before)):.1f}% -> {100 * np.mean(np.abs(after)):.1f}%")
    return {"values": x, "kernels": names, "before": before.tolist(), "after": after.tolist()}
