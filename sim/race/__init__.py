"""Race and sync-bug detection: checkers that watch the observation bus and report :class:`tcsim.findings.Finding`.

Issue 15.  Each checker is an observer of the one observation door (:mod:`tcsim.observe`) or a protocol check at
the door of the state it guards, and reports through ``sim.findings``.
"""
