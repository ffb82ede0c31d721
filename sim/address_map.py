"""The address layout a kernel can see, per architecture, as data (issue 16 item 4).

One :class:`AddressMap` per target says where things are in the state spaces and the generic space -- the shared
window of a CTA (system-reserved bytes first, then the static ``.shared`` variables as ptxas lays them out, then
the dynamic ``.extern .shared`` array), the cluster-rank field of a ``shared::cluster`` address, the local stack,
the kernel-parameter bank -- and what the shared-size special registers read.  The memory layer
(:mod:`tcsim.memory`), the program layout (:func:`tcsim.machine.layout_program`), the engine's special registers
and the data-movement semantics (``mapa``, ``cvta``, ``isspacep``, ``getctarank``) take their numbers from here.

**sm_90a** is measured on an H100 (driver 13.0) by the probe campaign ``calib/probes/address_probe.py``; the record
is ``tests/hw/golden_h100/address_layout.json`` and ``tests/hw/test_address_layout.py`` replays every value of it
against tcsim.  What the record shows:

* a CTA's shared window starts with ``%reserved_smem_offset_cap`` = 0x400 system-reserved bytes
  (``%reserved_smem_offset_begin`` 0, ``_end`` 0x120, ``_0``/``_1`` 0); the first user byte is at 0x400;
* static variables referenced by the kernel are laid out from there at their natural alignment, the kernel's own
  (kernel-scope) declarations first, then module-scope ones, each group in declaration order; the dynamic
  ``.extern .shared`` array follows at its alignment (at least 16), right after the referenced ones;
  unreferenced kernel-scope variables follow the referenced ones (the dynamic array may overlap them) and count in
  the static size (``CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES``), unreferenced module-scope ones are dropped; the
  static size runs to the dynamic base or the last variable, whichever is further, rounded up to 16 when a
  dynamic array is declared and not rounded otherwise;
* the 32-bit ``shared::cta`` address of a CTA of cluster rank ``r`` is ``r << 24 | offset`` (rank 0, and every CTA
  of a launch without clusters, carries no rank bits); ``mapa`` replaces the rank field, ``getctarank`` reads it;
  a ``shared::cta`` address is a valid ``shared::cluster`` address of the same bytes;
* generic shared addresses are ``window | shared::cluster address`` with a 4 GiB-aligned window whose base the
  driver picks per process (so tcsim's base is its own choice; only the low 32 bits are the GPU's);
  ``isspacep.shared::cta`` holds for the executing CTA's rank only, ``.shared::cluster`` for every rank;
* ``%total_smem_size`` = static + dynamic bytes rounded up to 128; ``%aggr_smem_size`` = reserved + static +
  dynamic (not rounded); ``%dynamic_smem_size`` = the launch's dynamic bytes;
* local memory: the per-thread stack starts at ``c[0x0][0x28]`` = 0xFFFDC0 (16 MiB - 0x240) and a kernel's frame
  (its ``.local`` variables, the size rounded up to 8 or to the largest variable alignment) lies just below it, in
  a 16 MiB-aligned generic window.  Not modelled: ptxas drops a ``.local`` variable that is only written (its
  frame shrinks), and a ``mov`` of such a variable's address gives its frame offset (0x28 in case mod2) instead of
  a stack address; tcsim keeps every declared variable in the frame.  A kernel that calls device functions has a
  larger frame (the non-recursive functions' variables in it) and recursive frames below it: :mod:`tcsim.linker`
  (measured on an H200: tests/hw/test_calls_golden.py, frame_addresses);
* the generic address of kernel-parameter byte 0 ends in 0x280210 (the parameters live at offset 0x210 of
  constant bank 0); ``isspacep.param`` and ``isspacep.global`` both hold for it.

**sm_100a** is not measured (no Blackwell GPU here); tcsim assumes the sm_90a layout, because: the CUDA C++
Programming Guide's technical-specification table gives 228 KB of shared memory per SM and 227 KB per block for
compute capabilities 9.0 and 10.0 alike (the 1 KB difference is the per-block system reservation, the 0x400
bytes above); CUTLASS's ``Sm100MmaPeerBitMask = 0xFEFFFFFF`` (cute/arch/copy_sm100_tma.hpp) clears bit 24 of a
``shared::cta`` address to reach the even CTA of a pair, i.e. the rank field starts at bit 24 on sm_100 as
measured on sm_90; the reserved-region registers, the stack top and the parameter-bank offset are driver
conventions tcsim carries over unchanged (to be re-measured on a B200: ``calib/probes/address_device_run.sh``).
"""
from __future__ import annotations

from dataclasses import dataclass

from tcsim.isa.errors import LaunchError

#: where the sm_90a numbers come from
H100_RECORD = "measured on an H100 (driver 13.0): tests/hw/golden_h100/address_layout.json (calib/probes/address_probe.py)"


@dataclass(frozen=True)
class AddressMap:
    """The address layout of one target (see the module docstring for what each number means and its source)."""

    arch: str
    source: str
    #: system-reserved bytes at the start of every CTA's shared window (%reserved_smem_offset_cap): the first user
    #: shared byte's offset
    reserved_smem: int = 0x400
    #: %reserved_smem_offset_begin / _end / _0 / _1
    reserved_smem_begin: int = 0
    reserved_smem_end: int = 0x120
    reserved_smem_0: int = 0
    reserved_smem_1: int = 0
    #: the cluster-rank field of a shared::cluster address starts at this bit
    rank_shift: int = 24
    #: the least alignment of the dynamic shared array (and of the end of the static section)
    dynamic_smem_align: int = 16
    #: %total_smem_size rounds static + dynamic bytes up to this
    total_smem_granule: int = 128
    #: the local stack's top (c[0x0][0x28]); a kernel's .local frame lies just below it
    local_stack_top: int = 0xFFFDC0
    #: a .local frame's size is rounded up to this, or to its most aligned variable's alignment if larger
    local_frame_align: int = 8
    #: generic address of kernel-parameter byte 0 (low bits as on the GPU; the high bits are tcsim's choice)
    param_generic_base: int = 0x7C00_0028_0210

    def static_smem_end(self, end: int) -> int:
        """The end of the static shared section whose last variable ends at ``end``."""
        a = self.dynamic_smem_align
        return (end + a - 1) // a * a

    def local_frame(self, local_size: int, align: int = 1) -> int:
        """Size of a kernel's .local frame holding ``local_size`` bytes of variables, the most aligned of which
        needs ``align``."""
        a = max(self.local_frame_align, int(align))
        return (int(local_size) + a - 1) // a * a

    def local_base(self, local_size: int, align: int = 1) -> int:
        """Local-space address of byte 0 of the kernel's .local frame."""
        return self.local_stack_top - self.local_frame(local_size, align)

    def total_smem_size(self, static: int, dynamic: int) -> int:
        g = self.total_smem_granule
        return (int(static) + int(dynamic) + g - 1) // g * g

    def aggr_smem_size(self, static: int, dynamic: int) -> int:
        return self.reserved_smem + int(static) + int(dynamic)


SM_90A = AddressMap("sm_90a", H100_RECORD)
SM_100A = AddressMap("sm_100a", "assumed equal to sm_90a (see tcsim.address_map's docstring for why)")

MAPS = {"sm_90a": SM_90A, "sm_100a": SM_100A}
ALIASES = {"sm_90": "sm_90a", "sm_100": "sm_100a", "sm_100f": "sm_100a"}


def address_map(arch: str | None) -> AddressMap:
    """The :class:`AddressMap` of ``arch`` (a module without ``.target``: sm_100a, as the rest of tcsim)."""
    a = ALIASES.get(arch or "sm_100a", arch or "sm_100a")
    m = MAPS.get(a)
    if m is not None:
        return m
    if a.startswith("sm_1") and len(a) >= 6:       # sm_100 .. sm_121 families
        return SM_100A
    if a.startswith("sm_"):                         # sm_80 / sm_86 / sm_89 / sm_90 forms: the same 1 KB reservation
        return SM_90A
    raise LaunchError(f"no address layout is known for target {arch}", expected="one of " + ", ".join(sorted(MAPS)))
