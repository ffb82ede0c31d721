"""clock64-instrumented microbenchmarks and whole-kernel validation runs for the H100 (sm_90a).

* ``ptxgen.py`` generates the calibration kernels (one timed-segment frame, one generator per family);
* ``kernels/`` holds the hand-written validation kernels (pipelined TMA + mma.sync GEMM, warp-specialized
  producer/consumer kernel); ``cases.py`` lists every case, builds its launch, instruments copies of the
  examples' PTX and checks the validation kernels' outputs; ``analysis.py`` turns samples into values;
* ``record.py`` is the command line::

    python -m calib.microbench list [-v]
    python -m calib.microbench ptx CASE
    python -m calib.microbench record --out DIR [--backend gpu|sim] [--case GLOB ...] [--jobs 8] [--val-runs 3]
    python -m calib.microbench install --gpu DIR        # -> tests/golden/timing_h100/{meta.json,timings.npz}
    python -m calib.microbench install --gpu DIR --merge   # add a --case record's cases to the installed record
    python -m calib.microbench sim [--gpu DIR] [--case GLOB ...] [--timing]   # simulated vs measured
    python -m calib.microbench show [--gpu DIR]
    python -m calib.microbench params [--gpu DIR] [--out FILE]   # sm_90a parameters the record gives directly
    python -m calib.microbench fit [--gpu DIR] [--out FILE|-]    # + the fitted ones (fit.py) -> sim/timing/data/measured_h100.json

On the GPU machine: ``bash calib/microbench_device_run.sh "$OUT"``.  tests/golden/timing_h100/README.md holds the
recorded values and what they settle.
"""
