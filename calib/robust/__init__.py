"""Robustness fuzzing: bad inputs of every kind must end in a located diagnostic, never a traceback or a hang.

* :mod:`calib.robust.ptx_mutate` -- mutations of PTX bytes (lines, tokens, operands, qualifiers, immediates,
  truncation, non-UTF-8 / control bytes, huge declarations, directives, branches);
* :mod:`calib.robust.generate` -- cases from a seed: PTX mutants of every tracked file for ``tcsim check``, mutants
  of the examples' PTX run with their launches, bad values of every :class:`tcsim.launch.Launch` field and
  :func:`tcsim.launch.run_launch` keyword, bad ``tcsim check`` / ``tcsim run`` command lines;
* :mod:`calib.robust.execute` -- one case, in a worker, classified (diagnostic, unlocated, accepted, ran, traceback,
  hang, memory, crash); :mod:`calib.robust.worker` / :mod:`calib.robust.pool` -- worker processes under
  ``resource.setrlimit(RLIMIT_AS)`` and a per-case time limit;
* :mod:`calib.robust.campaign` -- counts per class, delta-debugging minimisation of findings, regression files
  (``tests/robust_regressions``) and their replay (``tests/robust/test_robust.py``).

``python -m calib.robust --count 100000 --jobs 16 --record R.json`` runs a campaign; ``--replay`` the regression
files.  The committed campaign record: ``calib/robust/campaign_record.json``.
"""
