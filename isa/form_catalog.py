"""The catalogue of declared instruction forms: every :class:`tcsim.isa.forms.FormSpec` of the ``isa/`` form
modules, by family key.  ``tcsim check --list`` prints the spec of each family the simulator registers; every
registered family has one (``tests/isa/test_forms_list.py``).
"""
from __future__ import annotations

from types import MappingProxyType

from . import (alu_forms, async_copy_forms, atomic_forms, barrier_forms, bulk_tensor_forms, cache_policy_forms,
               clc_forms, control_forms, data_movement_forms, fence_forms, griddep_forms, ldstmatrix_forms,
               mbarrier_forms, mma_sync_forms, tcgen05_mem_forms, tcgen05_rules, tensormap_forms, warp_level_forms,
               wgmma_forms)
from .forms import FormSpec, check_family_key, family_of

_ALL = (alu_forms.SPECS + async_copy_forms.SPECS + atomic_forms.SPECS + barrier_forms.SPECS
        + (bulk_tensor_forms.SPEC,) + cache_policy_forms.SPECS + clc_forms.SPECS + control_forms.SPECS
        + data_movement_forms.SPECS + fence_forms.SPECS + griddep_forms.SPECS
        + ldstmatrix_forms.SPECS + (mbarrier_forms.SPEC, mma_sync_forms.SPEC) + tcgen05_mem_forms.SPECS
        + tcgen05_rules.SPECS
        + tensormap_forms.SPECS + warp_level_forms.SPECS + wgmma_forms.SPECS)


def _index(specs) -> dict:
    out: dict = {}
    for s in specs:
        check_family_key(s.key)
        if s.key in out:
            raise ValueError(f"two form specs for the family {s.key!r}")
        out[s.key] = s
    return out


#: family key -> its FormSpec (a read-only mapping, built once at import)
SPECS = MappingProxyType(_index(_ALL))


def spec_of(key: str) -> FormSpec | None:
    return SPECS.get(key)


def covering_spec(full_opcode: str) -> FormSpec | None:
    """The spec whose qualifiers spell ``full_opcode`` (``'mbarrier.try_wait.parity.shared::cta.b64'``), or None
    (a family without a spec, or qualifiers outside the family's groups)."""
    opcode, *mods = full_opcode.split(".")
    key = family_of(opcode, tuple(mods))
    spec = SPECS.get(key) if key is not None else None
    return spec if spec is not None and spec.accepts(opcode, tuple(mods)) else None


__all__ = ["SPECS", "spec_of", "covering_spec"]
