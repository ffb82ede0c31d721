"""Golden data for tile-mode TMA on the H100 (sm_90a): a generated case list, recorded on the GPU, replayed on the
simulator bit for bit.

Every case is one small kernel (one to four CTAs of 128 threads) generated from one template, plus its launch:
numpy tensors made from a fixed per-case seed, tensor maps over them (:class:`CaseMap`, cuTensorMapEncodeTiled
arguments) and a list of copy operations issued by thread 0 of each CTA.  The template:

1. every thread copies the CTA's slice of the ``img`` argument into the CTA's shared buffer ``buf`` (a known
   pattern for loads, the source image for stores), then ``fence.proxy.async.shared::cta``;
2. thread 0 initialises one mbarrier and arrives on it with ``expect_tx`` = the bytes that this CTA receives
   (the full box per tensor load, per multicast destination), then a CTA or cluster barrier;
3. thread 0 of each CTA issues its operations in order (a store/reduce/bulk store is committed and waited with
   ``cp.async.bulk.wait_group 0`` before the next one, so overlapping stores are ordered);
4. every thread waits for phase 0 of the mbarrier, bounded by %clock64 (about a second on the GPU) so that a
   copy that never completes is a result (status word 1), not a hang;
5. the CTA's whole ``buf`` is written to ``out`` (for cases that load into shared memory), then a status word and
   an end marker.

Families (``python -m calib.tma list`` prints every case): ``swizzle`` (each swizzle mode x element type,
rows narrower than the span, the 128B atom variants), ``phase`` (swizzled boxes whose SMEM address is not on
the pattern repeat), ``rank`` (ranks 1..5), ``oob`` (negative and past-the-end starts on every edge of ranks
1..5, zero and NaN fill, whole-box OOB, coordinate extremes), ``dtype`` (every non-packed data type, bit
patterns with NaN payloads and subnormals), ``estride`` (element strides), ``store`` (TMA stores, OOB dropped,
negative starts), ``reduce`` (cp.reduce.async.bulk.tensor for every redop x type of the PTX table, and some
that are not in it), ``multicast`` (2 and 4 CTAs, tensor and non-tensor), ``bulk`` (non-tensor cp.async.bulk in
each direction) and ``fault`` (misaligned SMEM boxes, tensor maps the driver must refuse, a .Nd that is not
the map's rank).

Each case carries ``expect``: ``ok`` (defined by the PTX ISA / driver documentation), ``fault`` (undefined or an
error: the GPU's answer is recorded next to tcsim's diagnosis), ``driver`` (cuTensorMapEncodeTiled should
refuse the map) or ``probe`` (unsettled in tma.md; the GPU settles it).  The documented model (tma.md §2-§4,
written independently of the simulator) that predicts every ``ok`` case's outputs is a test's reference:
``tests/reference/tma_model.py`` (``pytest tests/hw/test_tma_golden.py -k documented_model`` checks the simulator
against it).

The package: :mod:`~calib.tma.layout` (constants, map and copy descriptions, box geometry and swizzle),
:mod:`~calib.tma.ptx` (the kernel template, ptxas), :mod:`~calib.tma.cases` (:class:`TmaCase`, its launch, the
builders), :mod:`~calib.tma.families` (the case list), :mod:`~calib.tma.record` (run and record, through
:mod:`calib.pipeline`), :mod:`~calib.tma.compare` (compare, decode, install), :mod:`~calib.tma.cli`.

Commands::

    python -m calib.tma list
    python -m calib.tma record --out DIR [--jobs 8] [--backend gpu|sim] [--case GLOB ...]
    python -m calib.tma install --gpu DIR          # -> tests/golden/tma_h100/{meta.json,tma_outputs.npz}
    python -m calib.tma compare --gpu DIR          # simulate every recorded case, decode differences
    python -m calib.tma ptxas                      # every kernel through ptxas -arch=sm_90a

``record`` runs each case through :func:`tcsim.hw.launcher.run_on_gpu` (its own child process, ``--jobs`` of them at
a time; the cases the documentation defines first, then the probes and faults) and writes ``DIR/meta.json``
(GPU, driver, date, command; per case: status, CUDA error name and detail, SHA-256 of the PTX and of the
inputs, output keys, and tcsim's result or diagnosis at record time) and ``DIR/outputs.npz`` (``<case>:out``,
the shared-memory dumps and status words; ``<case>:t<k>``, tensors that the case writes).  ``--backend sim``
runs the simulator instead (how CI tests the harness).  ``install`` stores outputs.npz as ``tma_outputs.npz``
(calib.golden would take a folder holding meta.json + outputs.npz for one of its cases); ``compare`` and ``install``
read a folder holding either name.
``tests/hw/test_tma_golden.py`` replays ``tests/golden/tma_h100``; on the GPU machine run
``bash calib/tma_device_run.sh $OUT``.
"""
from __future__ import annotations

from .cases import CaseMap, TmaCase, _esize
from .compare import (GOLDEN, INSTALLED_OUTPUTS, Verdict, compare_case, compare_dir, explain, install, load_record,
                      outputs_file)
from calib.pipeline import META

from .families import ATOMS, FAMILIES, all_cases, select
from .layout import RED_H100_EXTRA, RED_TYPES, REDOPS, SIM_MAX_INSTRUCTIONS, MapSpec, Op, model_swizzle
from .ptx import kernel_ptx, ptxas_all
from .record import OUTPUTS, inputs_digest, ptx_digest, record, run_gpu, run_sim, status_text
from .cli import main

__all__ = ["ATOMS", "CaseMap", "FAMILIES", "GOLDEN", "INSTALLED_OUTPUTS", "META", "MapSpec", "OUTPUTS", "Op",
           "RED_H100_EXTRA", "RED_TYPES", "REDOPS", "SIM_MAX_INSTRUCTIONS", "TmaCase", "Verdict", "_esize",
           "all_cases", "compare_case", "compare_dir", "explain", "inputs_digest", "install", "kernel_ptx",
           "load_record", "main", "model_swizzle", "outputs_file", "ptx_digest", "ptxas_all", "record", "run_gpu",
           "run_sim", "select", "status_text"]
