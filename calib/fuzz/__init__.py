"""Differential fuzzing of tcsim against the GPU: random, well-formed, race-free PTX programs.

* :mod:`calib.fuzz.generator` -- from a seed, one complete ``.target sm_90a`` kernel (1 CTA, 1..4 warps) over the
  Hopper-common subset, with its input data; every pool register is dumped per lane at the end.
* :mod:`calib.fuzz.runner` -- runs programs on the simulator (under two scheduler seeds, which must agree) and,
  with the GPU back end, many programs per child process; compares bit for bit; minimises and saves mismatches.
* :mod:`calib.fuzz.minimize` -- delta debugging over the program tree (items, blocks, guards, warps, inputs)
  under any batched predicate.
* :mod:`calib.fuzz.wgmma_ops` -- generator version 6's warpgroup MMA items (wgmma-groups over SMEM tiles of every
  canonical layout and swizzle, register A, every dense type combination but b1, random N, scale-d / imm-scale,
  several groups in flight, waits, accumulator instructions), mixed with the items above in 4-warp programs.

Command line: ``python -m calib.fuzz --count N --seed S [--backend gpu] [--out DIR]``.  On an H100 machine
(16 cores) ``--count 10000 --backend gpu --jobs 12 --gpu-workers 4`` runs 10,000 programs (simulator twice, GPU
once each) in 3-5 minutes; minimised findings go to ``tests/fuzz_regressions``.  :mod:`calib.fuzz.record` keeps a
whole campaign (hashes of every GPU output, whole outputs where the simulator disagrees) for offline work
(``tests/golden/fuzz_campaign``), and :mod:`calib.fuzz.derive` pins differing registers on single instructions.
:mod:`calib.fuzz.explain` holds the verified explanations (ptxas rewrites, lowering variants) a disagreement may
have, :mod:`calib.fuzz.triage` minimises many recorded findings at once, and ``calib/fuzz/device_run.sh`` does either
job (``triage`` or a whole ``campaign``: record, compare, triage) in one GPU-machine call.
"""
from .generator import Program, generate  # noqa: F401
__all__ = ["Program", "generate"]
