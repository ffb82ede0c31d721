"""Grid dependency control: griddepcontrol.launch_dependents / griddepcontrol.wait.

PTX ISA 9.1 §9.7.13 (griddepcontrol), sm_90+ (forms: :mod:`tcsim.isa.griddep_forms`).  ``launch_dependents``
signals that the dependents of this grid may be scheduled once every CTA has issued it or completed (repeated
invocations in a CTA have no further effect); ``wait`` blocks the executing thread until every prerequisite grid
in flight has completed and its memory operations are visible.  Outside a programmatic launch sequence both are
no-ops.  The ordering they control across grids is :mod:`tcsim.grid_dependency` (``run_sequence``) and the
happens-before edge in :mod:`tcsim.race.hb`.

Not supported: nothing beyond what :mod:`tcsim.grid_dependency` lists (grids of a sequence are simulated one
after another, one of the schedules the hardware allows).
"""
from __future__ import annotations

from tcsim.isa.griddep_forms import parse_griddepcontrol
from .registry import semantics


@semantics("griddepcontrol")
def decode_griddepcontrol(ins, info):
    """PTX ISA §9.7.13 griddepcontrol (module docstring)."""
    action = parse_griddepcontrol(ins, info)

    def run(ctx):
        ctx.griddepcontrol(action)

    return run
