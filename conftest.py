"""Root conftest: puts the repository root on sys.path so tests import isa/sim/hw from the checkout."""
