"""Hardware probes: PTX kernels and their generators that measure what a real GPU computes, for golden data.

* :mod:`calib.probes.mma_ptx`      -- batched ``mma.sync`` probe kernels (one warp = one case)
* :mod:`calib.probes.mma_inputs`   -- deterministic random campaigns (seed -> inputs) and their hashes
* :mod:`calib.probes.mma_targeted` -- targeted vectors for the open numerics questions
* :mod:`calib.probes.mma_models`   -- plausible alternative models, to see which one the GPU rules out
* :mod:`calib.probes.mma_probe`    -- ``device`` / ``targeted`` (GPU) and ``analyze`` / ``report`` (anywhere)
* :mod:`calib.probes.wgmma_ptx`    -- ``wgmma.mma_async`` probe kernels (one warpgroup = one instruction) and layouts
* :mod:`calib.probes.wgmma_inputs` -- seeded wgmma campaigns; :mod:`calib.probes.wgmma_targeted` -- its vectors
* :mod:`calib.probes.wgmma_probe`  -- ``device`` / ``targeted`` (GPU), ``install``, and ``golden_cases`` (replay)
* ``device_run.sh``             -- one GPU session: example golden data + the numerics campaign + SASS

Results live in ``tests/golden/`` (README there).
"""
