"""GPU outputs of the fuzz generator's first seeds (the programs tests/hw/test_fuzz.py runs on a GPU), kept as
golden data so that CI compares the simulator with the hardware on them without a GPU
(tests/hw/test_fuzz_seed_golden.py).

    python -m calib.fuzz.seed_record gpu --out DIR [--count 16]     # on the GPU machine -> DIR/seeds.pkl
    python -m calib.fuzz.seed_record install DIR/seeds.pkl --device "NVIDIA H100 80GB HBM3" --date 2026-11-28
        # -> tests/golden/fuzz_gpu16/{gpu_outputs.npz,seeds_meta.json}
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pickle
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "fuzz_gpu16"


def ptx_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def record_gpu(out: Path, count: int) -> None:
    from .generator import generate
    from .runner import GpuBatch
    progs = [generate(s) for s in range(count)]
    batch = GpuBatch(timeout=120)
    try:
        res = batch.run(progs)
    finally:
        batch.close()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "seeds.pkl", "wb") as f:
        pickle.dump({"seeds": list(range(count)), "texts": [p.render() for p in progs], "gpu": res}, f)


def install(pkl: Path, device: str, date: str, command: str) -> None:
    d = pickle.load(open(pkl, "rb"))
    outs, errors = [], []
    for o in d["gpu"]:
        outs.append(np.frombuffer(o.output or b"", dtype=np.uint8))
        errors.append(o.error or "")
    offsets = np.cumsum([0] + [len(o) for o in outs]).astype(np.int64)
    GOLDEN.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(GOLDEN / "gpu_outputs.npz", data=np.concatenate(outs), offsets=offsets)
    meta = {"seeds": d["seeds"], "ptx_sha256": [ptx_digest(t) for t in d["texts"]], "gpu_errors": errors,
            "device": device, "date": date, "command": command,
            "re_record": "python -m calib.fuzz.seed_record gpu --out DIR (GPU), then "
                         "python -m calib.fuzz.seed_record install DIR/seeds.pkl --device ... --date ..."}
    (GOLDEN / "seeds_meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def load_golden():
    meta = json.loads((GOLDEN / "seeds_meta.json").read_text())
    z = np.load(GOLDEN / "gpu_outputs.npz")
    data, off = z["data"], z["offsets"]
    outs = [data[off[i]:off[i + 1]].tobytes() for i in range(len(meta["seeds"]))]
    return meta, outs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.fuzz.seed_record")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gpu")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--count", type=int, default=16)
    i = sub.add_parser("install")
    i.add_argument("pkl", type=Path)
    i.add_argument("--device", required=True)
    i.add_argument("--date", required=True)
    i.add_argument("--command", default="python -m calib.fuzz.seed_record gpu --out DIR --count 16")
    a = ap.parse_args(argv)
    if a.cmd == "gpu":
        record_gpu(a.out, a.count)
    else:
        install(a.pkl, a.device, a.date, a.command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
