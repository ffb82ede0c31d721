"""The timing corpus (issue 21): 100+ one-CTA kernels timed on the H100 with ``%clock64`` at entry and exit, to
measure sim/timing's sm_90a model on kernels it was not tuned on.

* ``cuda/*.cu`` -- kernels written for the corpus (reductions, scans, sorting, histograms with atomics of every
  ordering and scope, fences at each scope, run-time-trip loops with dependent global loads, transposes, stencils,
  softmax / layer norm, GEMMs: SIMT, ldmatrix + mma.sync, cp.async, wgmma, TMA + mbarrier rings, warp-specialised
  producer / consumer kernels); ``ptx/`` their sm_90a PTX (nvcc 13.0);
* ``triton_src.py`` -- Triton 3.9 kernels; ``triton/`` their sm_90a PTX (compiled without a GPU);
* the 11 validation kernels of calib/microbench (``val_*``);
* ``kernels.py`` -- each kernel's launch (deterministic inputs) and the numpy check of its outputs;
* ``split.py`` -- fit / validation / test by a fixed hash of the name;
* ``record.py`` -- GPU / simulator runs of instrumented copies (calib.microbench.cases.instrument_clock);
* ``evaluate.py`` -- simulated vs measured per split, the evaluation cache, the README section;
* ``cli.py`` -- ``python -m calib.timing_corpus {list,build,record,install,timing {evaluate,report,readme}}``.

On the GPU machine: ``bash calib/timing_corpus/device_run.sh "$OUT"``.
"""
