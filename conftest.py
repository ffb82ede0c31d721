"""Root conftest: its presence puts the repository root on sys.path, so tests import the campaigns (``calib``)
and test helpers from the checkout; the simulator itself is imported as installed (``tcsim``, ``pip install -e .``)."""
