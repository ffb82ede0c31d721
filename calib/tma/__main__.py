"""``python -m calib.tma``: the command line of :mod:`calib.tma.cli`."""
from calib.tma.cli import main

raise SystemExit(main())
