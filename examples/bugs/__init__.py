"""Deliberately buggy kernels that show what tcsim's findings look like (README, "Finding sync bugs"):
``tcsim run examples/bugs/missing_proxy_fence.py`` (or ``tcsim.examples.bugs.missing_proxy_fence`` once installed)
and ``tcsim run examples/bugs/flag_before_data.py --explore 8``.  Kept apart from ``tcsim.examples``, whose kernels
are all correct (tests/race/test_hb_shipped.py runs those with no finding)."""
