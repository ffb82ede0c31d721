"""Reference models that only tests use: written from the documentation, independently of the simulator."""
