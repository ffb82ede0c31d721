"""The interactive debugger (``tcsim debug LAUNCH.py``): the prompt (:mod:`tcsim.debugger.prompt`), tables that
print as text and render as HTML in Jupyter (:mod:`tcsim.debugger.views`), forked checkpoints for fast reverse
execution (:mod:`tcsim.debugger.checkpoints`) and the pdb hooks (:mod:`tcsim.debugger.hooks`).  The engine is
:class:`tcsim.session.Session`."""
