"""Regenerate the corpus's PTX fixtures (needs nvcc 13.0 and Triton 3.9; no GPU).

* ``cuda/<stem>.cu`` -> ``ptx/<stem>.sm_90a.ptx`` with ``nvcc -ptx -O3 -arch=sm_90a -diag-suppress 550`` (each
  output checked with ``ptxas -arch=sm_90a``);
* every kernel of :mod:`calib.timing_corpus.triton_src` -> ``triton/<name>.sm_90a.ptx`` through
  ``triton.compile`` for ``GPUTarget("cuda", 90, 32)`` (``ptx_version`` 90), and ``triton/meta.json``: per
  kernel the shared memory Triton's launcher asks for, its warps and the tensor descriptors' swizzle.

* the **held-out** kernels (``heldout/``): NVIDIA cuda-samples (BSD-3-Clause; ``heldout/NOTICE``), compiled from a
  checkout of github.com/NVIDIA/cuda-samples at commit :data:`CUDA_SAMPLES_COMMIT` (outside this repository: only the
  PTX is kept, as the licence allows with its notice): ``build --heldout DIR`` (:data:`HELDOUT`).

``python -m calib.timing_corpus build [--cuda-only | --triton-only] [--heldout CUDA_SAMPLES_DIR]``.  The outputs are deterministic for a given
toolchain (the ``.file`` lines of Triton's PTX name this checkout's path).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
CUDA, PTX, TRITON, HELD = HERE / "cuda", HERE / "ptx", HERE / "triton", HERE / "heldout"
CUDA_SAMPLES_COMMIT = "c94ff366aed18c797b8a85dfaac7817b0228b420"
#: output stem -> (sample folder, the file compiled: a sample source, or a one-line include of its kernel header)
HELDOUT = {
    "transpose": ("Samples/6_Performance/transpose", "transpose.cu"),
    "scalarProd": ("Samples/2_Concepts_and_Techniques/scalarProd", '#include "scalarProd_kernel.cuh"'),
    "BlackScholes": ("Samples/5_Domain_Specific/BlackScholes", '#include "BlackScholes_kernel.cuh"'),
    "bitonicSort": ("Samples/2_Concepts_and_Techniques/sortingNetworks", "bitonicSort.cu"),
    "matrixMul": ("Samples/0_Introduction/matrixMul", "matrixMul.cu"),
    # the second held-out set (kernels.HELDOUT2)
    "vectorAdd": ("Samples/0_Introduction/vectorAdd", "vectorAdd.cu"),
    "simpleAtomicIntrinsics": ("Samples/0_Introduction/simpleAtomicIntrinsics",
                               '#include "simpleAtomicIntrinsics_kernel.cuh"'),
    "mergeSort": ("Samples/0_Introduction/mergeSort", "mergeSort.cu"),
    "reduction": ("Samples/2_Concepts_and_Techniques/reduction", "reduction_kernel.cu"),
    "histogram64": ("Samples/2_Concepts_and_Techniques/histogram", "histogram64.cu"),
    "histogram256": ("Samples/2_Concepts_and_Techniques/histogram", "histogram256.cu"),
    "scan": ("Samples/2_Concepts_and_Techniques/scan", "scan.cu"),
    "shfl_scan": ("Samples/2_Concepts_and_Techniques/shfl_scan", "shfl_scan.cu"),
    "sobol": ("Samples/5_Domain_Specific/SobolQRNG", "sobol_gpu.cu"),
    "globalToShmemAsyncCopy": ("Samples/3_CUDA_Features/globalToShmemAsyncCopy", "globalToShmemAsyncCopy.cu"),
    "warpAggregatedAtomicsCG": ("Samples/3_CUDA_Features/warpAggregatedAtomicsCG", "warpAggregatedAtomicsCG.cu"),
}
#: stems whose PTX holds many more entries than the corpus launches (template instantiations): only these entries
#: are kept (every other line of the module -- header, declarations, .func bodies -- stays as nvcc wrote it)
HELDOUT_KEEP = {
    "reduction": ("_Z7reduce2IiEvPT_S1_j", "_Z7reduce6IiLj256ELb1EEvPT_S1_j"),
    "globalToShmemAsyncCopy": ("_Z29MatrixMulAsyncCopySingleStageILi16EEvPfPKfS2_ii",),
}
NVCC = ("nvcc", "-ptx", "-O3", "-arch=sm_90a", "-diag-suppress", "550")


def build_cuda() -> list:
    if shutil.which("nvcc") is None:
        raise SystemExit("build: nvcc is not on PATH (CUDA 13.0 made the committed PTX)")
    PTX.mkdir(exist_ok=True)
    out = []
    for cu in sorted(CUDA.glob("*.cu")):
        dst = PTX / f"{cu.stem}.sm_90a.ptx"
        subprocess.run([*NVCC, cu.name, "-o", str(dst)], cwd=CUDA, check=True)
        if shutil.which("ptxas"):
            subprocess.run(["ptxas", "-arch=sm_90a", str(dst), "-o", os.devnull], check=True)
        out.append(dst)
        print(f"{cu.name} -> {dst.relative_to(HERE)}")
    return out


def build_triton() -> list:
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    from . import triton_src as T
    TRITON.mkdir(exist_ok=True)
    meta = {}
    out = []
    for name in T.KERNELS:
        k = T.compile_kernel(name)
        dst = TRITON / f"{name}.sm_90a.ptx"
        dst.write_text(k.asm["ptx"])
        md = k.metadata
        meta[name] = {"shared": int(md.shared), "num_warps": int(md.num_warps),
                      "tensordesc_swizzle": [int(d["swizzle"]) for d in (getattr(md, "tensordesc_meta", None) or [])]}
        out.append(dst)
        print(f"{name} -> {dst.relative_to(HERE)} (shared {md.shared} B, {md.num_warps} warps)")
    import triton
    (TRITON / "meta.json").write_text(json.dumps({"triton": triton.__version__, "kernels": meta}, indent=1) + "\n")
    return out


def keep_entries(ptx: str, keep) -> str:
    """``ptx`` without the ``.entry`` functions not named in ``keep``: an entry is the lines from its ``.entry``
    line to the first line that is a lone ``}`` (the module-scope declarations between its ``// .globl`` comment and
    its ``.entry`` line stay, and so does a ``.func``)."""
    lines, out, i, found = ptx.splitlines(keepends=True), [], 0, set()
    while i < len(lines):
        head = lines[i].strip()
        k = i + 1
        while head.startswith("// .globl") and k < len(lines) and not any(w in lines[k] for w in (".entry ", ".func ")):
            k += 1
        if not head.startswith("// .globl") or k >= len(lines) or ".entry " not in lines[k]:
            out.append(lines[i])
            i += 1
            continue
        name = head.split()[-1]
        j = i
        while j < len(lines) and lines[j].rstrip("\n") != "}":
            j += 1
        if name in keep:
            out.extend(lines[i:j + 1])
            found.add(name)
        else:
            out.extend(lines[i + 1:k])      # module-scope declarations (.extern .shared ...) other entries use
        i = j + 1
    if set(keep) - found:
        raise SystemExit(f"build: entries {sorted(set(keep) - found)} not in the PTX")
    return "".join(out)


def build_heldout(samples: Path) -> list:
    """``heldout/<stem>.sm_90a.ptx`` from a cuda-samples checkout (``-I Common -I <sample folder>``; a kernel header
    is compiled through a scratch file holding one ``#include`` in a temporary folder)."""
    import tempfile
    samples = Path(samples).resolve()
    if not (samples / "Common").is_dir():
        raise SystemExit(f"build: {samples} is no cuda-samples checkout (no Common/)")
    HELD.mkdir(exist_ok=True)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for stem, (folder, src) in HELDOUT.items():
            if src.startswith("#include"):
                f = Path(tmp) / f"{stem}.cu"
                f.write_text(src + "\n")
            else:
                f = samples / folder / src
            dst = HELD / f"{stem}.sm_90a.ptx"
            subprocess.run([*NVCC, "-I", str(samples / "Common"), "-I", str(samples / folder), str(f), "-o",
                            str(dst)], check=True)
            if stem in HELDOUT_KEEP:
                dst.write_text(keep_entries(dst.read_text(), HELDOUT_KEEP[stem]))
            out.append(dst)
            print(f"{folder}/{src} -> {dst.relative_to(HERE)}")
    return out


def main(cuda: bool = True, triton: bool = True, heldout: Path | None = None) -> int:
    if heldout is not None:
        build_heldout(heldout)
        return 0
    if cuda:
        build_cuda()
    if triton:
        build_triton()
    return 0
