"""tcsim: a simulator of NVIDIA Blackwell / Hopper tensor-core PTX kernels."""


def breakpoint(obj=None, launch=None, *, stdin=None, stdout=None) -> None:  # noqa: A001 -- pdb users' name
    """Open the ``tcsim debug`` prompt at the current state: of the Session ``obj``, or of the caller's local
    Session, or of the run that produced the caller's ``result`` and ``launch`` (e.g. inside a launch file's
    ``check(result, launch)``), or of the Session last stepped in this process (:mod:`tcsim.debugger.hooks`).
    ``stdin`` / ``stdout``: the prompt's streams (default the terminal's)."""
    import importlib
    import sys
    # (imported when called, by name: the package itself imports none of its modules)
    importlib.import_module("tcsim.debugger.hooks").open_prompt(obj, launch, sys._getframe(1), stdin,
                                                                      stdout)
