"""Forms of griddepcontrol (programmatic dependent launch), PTX ISA 9.1 §9.7.13 "griddepcontrol" (sm_90+)::

    griddepcontrol.launch_dependents;
    griddepcontrol.wait;

No operands, no other qualifiers (ptxas 13.0 rejects anything else).  The execution is
``tcsim.semantics.griddep``; the launch-sequence ordering it controls is :mod:`tcsim.grid_dependency`.
"""
from __future__ import annotations

from . import ir
from .atomic_forms import arch_number
from .errors import VerifyError
from .forms import FormSpec, QualGroup

SECTION = "PTX ISA §9.7.13 (griddepcontrol)"
ACTIONS = ("launch_dependents", "wait")
SPECS = (FormSpec("griddepcontrol", SECTION, (), (QualGroup("action", ACTIONS, required=True),)),)


def parse_griddepcontrol(ins: ir.Instruction, info=None) -> str:
    """The action ('launch_dependents' | 'wait') of a checked griddepcontrol."""
    name = ins.full_opcode
    if len(ins.mods) != 1 or ins.mods[0] not in ACTIONS:
        raise VerifyError(f"{name}: expected griddepcontrol.launch_dependents or griddepcontrol.wait", ins.loc,
                          expected=f"griddepcontrol.{{launch_dependents|wait}} ({SECTION})")
    if ins.operands:
        raise VerifyError(f"{name} takes no operands", ins.loc)
    if info is not None and info.arch and arch_number(info.arch) < 90:
        raise VerifyError(f"{name} requires sm_90 or later (the kernel targets {info.arch})", ins.loc)
    return ins.mods[0]


__all__ = ["SECTION", "ACTIONS", "SPECS", "parse_griddepcontrol"]
