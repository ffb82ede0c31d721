"""The measurement campaigns that check the simulator against real GPUs (not part of the installed tcsim; imported
from the repository root).  Each generates kernels and launches, runs them on the GPU back end (tcsim.hw) or the
simulator, records what came back with its provenance, compares the simulator with the record and installs it as
golden data under tests/ (or as package data the simulator reads, sim/timing/data) -- the steps of
:mod:`calib.pipeline`, which every campaign uses:

* :mod:`calib.golden` -- the example launches' outputs (tests/golden/<case>/);
* :mod:`calib.tma` -- tile-mode TMA cases (tests/golden/tma_h100/);
* :mod:`calib.microbench` -- clock64 microbenchmarks and validation kernels (tests/golden/timing_h100/), the timing
  fit (sim/timing/data/measured_h100.json); :mod:`calib.sass_facts` (sim/timing/data/sass_facts_h100.json),
  :mod:`calib.sass_schedule`;
* :mod:`calib.timing_corpus` -- a corpus of 100+ one-CTA kernels (CUDA C written for it, Triton 3.9) timed with
  clock64 and split fit / validation / test by a hash of their names (tests/golden/timing_corpus_h100/);
* :mod:`calib.probes` -- scalar-instruction, mma.sync and wgmma numerics probes (tests/golden/alu_probe/,
  tests/golden/mma_sync_numerics/, tests/golden/wgmma_numerics/);
* :mod:`calib.fuzz` -- differential fuzzing (tests/golden/fuzz_campaign/, tests/fuzz_regressions/);
* :mod:`calib.faults` -- faulting kernels, the GPU's error beside tcsim's diagnosis (tests/golden/faults.json).

On a GPU machine the ``*device_run.sh`` scripts run a campaign from a copy of the repository
(``calib/device_setup.sh`` installs tcsim from it first).
"""
