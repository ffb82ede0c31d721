"""Differential test of ``tcsim check`` against ``ptxas -arch=<target>`` (issue 17, item 3).

* :mod:`calib.ptxas_agree.mutate` -- one-line mutants of the tracked PTX (typed operators: types, immediates,
  special registers, registers of other types, state spaces, vectors, operand counts, addresses, sinks, opcodes,
  declarations), each a pure function of ``(seed, index)``;
* :mod:`calib.ptxas_agree.campaign` -- judges mutants in worker processes (tcsim's verdict, ptxas's, and whether a
  program check accepts also loads) and summarises a campaign;
* :mod:`calib.ptxas_agree.explain` -- the known reasons a verdict may differ; every disagreement of a recorded
  campaign must have one;
* :mod:`calib.ptxas_agree.probes` -- one-instruction probes of single typing rules (``tests/isa/typing_probes.tsv``).

Command line: ``python -m calib.ptxas_agree --seed S --count N --jobs J --out record.json``; the committed record
``calib/ptxas_agree/records/seed17.json`` (10,000 mutants) is replayed by ``tests/isa/test_ptxas_agree.py``, which
also runs a CI-sized sample against ptxas where ptxas is on PATH.  This module is separate from the broader
robustness fuzzer of ``calib/robust`` (bytes, truncation, launches); the two could share the mutation operators.
"""
