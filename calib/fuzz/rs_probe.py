"""The v6 campaign's open disagreements (issue 16): warpgroup programs whose accumulators written by a wgmma with A
from registers (RS form) differ from the simulator (56 of the 57 kept ones whose accumulators differ; the SS form
and the numerics probe's RS form agree).  One GPU experiment per program, in one call:

    python -m calib.fuzz.rs_probe --out DIR [--version V] [--repeat R] [SEEDS...]        # GPU machine

For each seed: the program as generated, and the same program with ``wgmma.wait_group.sync.aligned 0`` inserted
right after every ``wgmma.commit_group`` (nothing runs while a wgmma is in flight), each on the GPU and the
simulator; prints which of them agree, and writes the SASS of both (``cuobjdump -sass`` of ``ptxas -arch=sm_90a``)
and the GPU's output bytes (``<seed>_<tag>.gpu.bin``, or ``.gpu_error.txt``) to DIR.  If the waited variant agrees where the original does not, the GPU read A registers that instructions
issued while the wgmma was in flight had overwritten (a register the PTX never touched: ptxas reuse).
``--repeat R`` runs the program as generated R times (``<seed>_orig.gpu.bin``, ``<seed>_orig_r2.gpu.bin``, ...):
outputs that change from run to run are a race on the GPU (ptxas reading registers of a wgmma in flight), which
no deterministic model reproduces.  ``--version``: the generator version of the seeds (default 6)."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

SEEDS = (600221, 600031, 600245, 600269, 600132, 600203)


def waited(text: str) -> str:
    out = []
    for line in text.splitlines():
        out.append(line)
        if line.strip().startswith("wgmma.commit_group"):
            out.append("\twgmma.wait_group.sync.aligned 0;")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.fuzz.rs_probe", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--version", type=int, default=6, help="generator version of the seeds")
    ap.add_argument("--repeat", type=int, default=1, help="runs of the program as generated")
    ap.add_argument("seeds", nargs="*", type=int)
    a = ap.parse_args(argv)
    from tcsim.hw.launcher import run_on_gpu
    from tcsim.launch import Launch, run_launch
    from .generator import generate
    a.out.mkdir(parents=True, exist_ok=True)
    for seed in a.seeds or SEEDS:
        p = generate(seed, version=a.version)
        runs = [("orig" if k == 0 else f"orig_r{k + 1}", p.render()) for k in range(a.repeat)]
        for tag, text in runs + [("waited", waited(p.render()))]:
            mk = lambda: Launch(ptx=text, kernel=p.kernel_name, block=(p.nthreads, 1, 1),  # noqa: E731
                                args=[p.input_buffer(), p.output_template()])
            g = run_on_gpu(mk(), timeout=60)
            s = run_launch(mk(), detect=False)
            same = g.ok and bytes(g.outputs[1].tobytes()) == bytes(s.outputs[1].tobytes())
            print(f"{seed} {tag}: gpu {'ok' if g.ok else g.error} ; gpu == sim: {same}", flush=True)
            if g.ok:
                (a.out / f"{seed}_{tag}.gpu.bin").write_bytes(bytes(g.outputs[1].tobytes()))
            else:
                (a.out / f"{seed}_{tag}.gpu_error.txt").write_text(str(g.error) + "\n")
            if tag.startswith("orig_r"):
                continue
            ptx = a.out / f"{seed}_{tag}.ptx"
            ptx.write_text(text)
            r = subprocess.run(f"ptxas -arch=sm_90a {ptx} -o {ptx.with_suffix('.cubin')} && cuobjdump -sass "
                               f"{ptx.with_suffix('.cubin')}", shell=True, capture_output=True, text=True)
            (a.out / f"{seed}_{tag}.sass").write_text(r.stdout + r.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
