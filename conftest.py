"""Root conftest: its presence puts the repository root on sys.path, so tests import the campaigns (``calib``)
and test helpers from the checkout; the simulator itself is imported as installed (``tcsim``, ``pip install -e .``)."""


def pytest_sessionstart(session):
    """Compile (or load from numba's on-disk cache) the compiled numerics kernels once, in the controlling process,
    before pytest-xdist starts its workers: otherwise each worker that reaches a kernel before the cache exists
    compiles it itself (tcsim.numerics.jit_warmup)."""
    if hasattr(session.config, "workerinput"):          # an xdist worker: the controller has warmed the cache
        return
    from tcsim.numerics.jit_warmup import warm_up
    warm_up()
    from tcsim.race.shadow import warm_up as warm_up_race_shadow      # the race detector's shadow kernel
    warm_up_race_shadow()
    from tcsim.fast.blocks import warm_up as warm_up_blocks            # the fast tier's compiled blocks
    warm_up_blocks()
