"""Class 13 findings: the TMEM allocation protocol (PTX ISA 9.1 §9.7.16.7.1 tcgen05.alloc / dealloc /
relinquish_alloc_permit, §9.7.16.8.3-4 tcgen05.ld / st).

The semantics (``sim/semantics/tcgen05_mem.py``) keep the allocation table (:class:`tcsim.tmem.TensorMemory`:
which warp's alloc made each allocation, which dealloc freed each 32-column unit, the relinquish) and call these
builders; each finding names the alloc (or dealloc / relinquish) line and the offending line, the rule, the fix and
what the GPU does.

What the GPU does -- how sure we are.  We have no Blackwell GPU.  The outcomes come from the PTX ISA text and from
the SASS ptxas 13.0 emits for these instructions (``ptxas -arch=sm_100a``, read back with ``nvdisasm``): the TMEM
allocator is software over an SM-wide column bitmask (``UTCATOMSWS.FIND_AND_SET.ALIGN``, retried after a
``NANOSLEEP`` while it fails -- so an alloc that cannot be satisfied spins: a hang), with two per-CTA bitmasks and
a "relinquished" byte in reserved shared memory that the compiled code checks:

* alloc after ``relinquish_alloc_permit``: the code writes ``0xFFFFFFFF`` to ``[dst]`` and calls
  ``__cuda_sm10x_tcgen05_guardrail_trap_phase_invalid_during_alloc`` (``BPT.TRAP``): outcome ``'trap'``.
  ("it is illegal for a CTA to perform tcgen05.alloc after any of its constituent threads execute
  tcgen05.relinquish_alloc_permit").
* dealloc of columns that are not all allocated (double dealloc, never allocated, more columns than the
  allocation): ``..._trap_unallocated_columns_being_dealloced``: ``'trap'``.  ("The operand taddr must point to a
  previous Tensor Memory allocation.")
* dealloc whose start column no alloc returned (an address inside an allocation):
  ``..._trap_col_being_dealloced_not_returned_by_alloc``: ``'trap'``.
* dealloc with the right start but a smaller column count: no check; the named columns are freed and the rest
  stay allocated: ``'continue'`` (reported as an error; the rest leaks).
* a lane field other than 0 in the dealloc's address: the code uses ``taddr & 0xFFFF`` only: a lint note
  (the ISA requires the address a previous alloc returned) and the column part is used.
* nCols growing between two allocations of a CTA ("should not increase", PTX 9.1): nothing checks it; a warning.
* a CTA exiting with columns still allocated ("must be explicitly deallocated ... before the kernel exits"):
  nothing in the compiled code checks it; the columns stay taken in the SM-wide bitmask, so a later CTA on the
  same SM that allocates can block for ever.  Error, ``'continue'`` (the leaking CTA itself finishes).
* tcgen05.ld / st of columns that are not allocated: the compiled code has no check unless ptxas is run with
  ``-g-tmem-access-check`` (then a guardrail trap); without it the access reaches the physical cells, which may
  belong to another CTA's allocation.  Error, ``'continue'`` (tcsim reads / writes the CTA's cells).
"""
from __future__ import annotations

from ..findings import Access, Finding

SECTION = "PTX ISA 9.1 §9.7.16.7.1"
CLS = 13


def cols(c: int, n: int) -> str:
    return f"TMEM columns [{c}, {c + n})"


def alloc_after_relinquish(tm, side: Access, what: str) -> Finding:
    rel = tm.relinquish_side
    return Finding(
        CLS, f"{what} in {tm.label} after tcgen05.relinquish_alloc_permit: the CTA gave up its right to allocate",
        sides=tuple(s for s in (rel, side) if s is not None),
        missing=f"every tcgen05.alloc of the CTA before its tcgen05.relinquish_alloc_permit ({SECTION}: \"it is "
                f"illegal for a CTA to perform tcgen05.alloc after any of its constituent threads execute "
                f"tcgen05.relinquish_alloc_permit\")",
        fix="move the relinquish after the CTA's last alloc", outcome="trap")


def growing_ncols(tm, side: Access, what: str, ncols: int, last: int) -> Finding:
    return Finding(
        CLS, f"{what} of {ncols} columns in {tm.label} follows an allocation of {last} columns; the number of "
             f"columns must not increase between allocations of a CTA",
        sides=(side,), severity="warning",
        missing=f"nCols <= {last} ({SECTION}: \"The number of columns allocated should not increase between any two "
                f"allocations in the execution order within the CTA\")",
        fix="allocate the largest block first (or one block and carve it up)")


def bad_dealloc(tm, side: Access, what: str, col: int, ncols: int, kind: str) -> Finding:
    held = ", ".join(f"[{c}, {c + n})" for c, n in sorted(tm.allocations.items())) or "none"
    if kind == "unallocated":
        units = [u for u in range(col // 32, (col + ncols) // 32) if 0 <= u < 16 and tm.owner[u] < 0]
        freed = [tm.freed_sides.get(u) for u in units]
        earlier = next((f for f in freed if f is not None), None)
        why = ("double free: they were already freed" if earlier is not None else
               "they were never allocated (or the column count is larger than the allocation)")
        msg = (f"tcgen05.dealloc of columns [{col}, {col + ncols}) in {tm.label}, which is not an allocation "
               f"(double free or wrong size?); allocated: {held}. {why}")
        first = earlier if earlier is not None else _owner_side(tm, col, ncols)
        outcome = "trap"
    elif kind == "not_start":
        start = tm.owner_of(col)
        msg = (f"tcgen05.dealloc of columns [{col}, {col + ncols}) in {tm.label}, which is not an allocation "
               f"(double free or wrong size?); allocated: {held}. Column {col} lies inside the allocation "
               f"starting at column {start}: no tcgen05.alloc returned this address")
        first = tm.alloc_sides.get(start)
        outcome = "trap"
    else:
        n = tm.allocations.get(col)
        msg = (f"tcgen05.dealloc of columns [{col}, {col + ncols}) in {tm.label}, which is not an allocation "
               f"(double free or wrong size?); allocated: {held}. The allocation at column {col} has {n} columns: "
               f"the GPU frees only the {ncols} named" + (f" and columns [{col + ncols}, {col + n}) stay allocated"
                                                          if n and n > ncols else
                                                          ", including columns of the allocations after it"))
        first = tm.alloc_sides.get(col)
        outcome = "continue"
    return Finding(CLS, msg, sides=tuple(s for s in (first, side) if s is not None),
                   missing=f"the address and nCols returned by a matching tcgen05.alloc ({SECTION}: \"The operand "
                           f"taddr must point to a previous Tensor Memory allocation\")",
                   fix="dealloc each allocation exactly once, with the address and column count of its alloc",
                   outcome=outcome)


def _owner_side(tm, col, ncols):
    for c in range(col, col + ncols, 32):
        if 0 <= c < 512:
            o = tm.owner_of(c)
            if o >= 0 and o in tm.alloc_sides:
                return tm.alloc_sides[o]
    return None


def lane_field(tm, side: Access, what: str, lane: int, col: int) -> Finding:
    return Finding(
        CLS, f"{what} address 0x{(lane << 16) | col:08x} has lane field {lane}; the GPU uses only its column part "
             f"(taddr & 0xFFFF = {col}), and tcsim does the same",
        sides=(side,), severity="lint",
        missing=f"the address a tcgen05.alloc returned (lane field 0; {SECTION}: \"The operand taddr must point to a "
                f"previous Tensor Memory allocation\")",
        fix="pass the allocation's base address to tcgen05.dealloc")


def leak(tm, alloc_side, exit_side, col: int, ncols: int, site: str | None = None) -> Finding:
    """``site``: "file:line:col by CTA (x,y,z) warp w" of the alloc."""
    where = f" (allocated at {site})" if site else ""
    return Finding(
        CLS, f"{tm.label} exited with TMEM columns still allocated: tcgen05.alloc of [{col}, {col + ncols}){where} "
             f"never deallocated; the columns stay taken on the SM, so a later CTA there that allocates can wait for "
             f"ever",
        sides=tuple(s for s in (alloc_side, exit_side) if s is not None),
        missing=f"tcgen05.dealloc of {cols(col, ncols)} before the CTA exits ({SECTION}: \"All of the Tensor Memory "
                f"that was allocated using tcgen05.alloc instruction in a kernel, must be explicitly deallocated using "
                f"tcgen05.dealloc before the kernel exits\")",
        fix="dealloc every allocation (after the last tcgen05.ld/st/mma on it completed) before exit")


def unallocated_access(tm, side: Access, what: str, c0: int, c1: int, bad: int) -> Finding:
    freed = tm.freed_sides.get(bad // 32)
    after = " (freed by the earlier dealloc)" if freed is not None else " (never allocated)"
    # never allocated while the CTA holds allocations: the access runs past one of them (the allocation whose
    # columns the address starts in, or the one ending nearest below the bad columns) -- name its alloc
    near = None
    if freed is None and tm.allocations:
        held = sorted(tm.allocations.items())
        inside = [(c, n) for c, n in held if c <= c0 < c + n]
        below = [(c, n) for c, n in held if c + n <= bad]
        pick = (inside or below[-1:] or held[:1])[0]
        near = (pick, tm.alloc_sides.get(pick[0]))
        after = (f" (never allocated: the allocation of {pick[1]} columns at [{pick[0]}, {pick[0] + pick[1]})"
                 + (f" made at line {near[1].line}" if near[1] is not None else "") + " does not cover them)")
    first = freed if freed is not None else (near[1] if near is not None else None)
    return Finding(
        CLS, f"{what} touches TMEM columns [{c0}, {c1}) of {tm.label}, but columns [{bad}, {bad + 32}) are not "
             f"allocated{after}",
        sides=tuple(s for s in (first, side) if s is not None),
        missing=("tcgen05.alloc of enough columns: the alloc at line "
                 f"{near[1].line} must cover columns up to {c1} (PTX ISA 9.1 §9.7.16.7.1, §9.7.16.8.3-4: "
                 "Tensor Memory is accessed only inside an allocation a tcgen05.alloc returned)"
                 if near is not None and near[1] is not None else
                 "tcgen05.alloc before any TMEM access, and no access after dealloc (PTX ISA 9.1 §9.7.16.7.1, "
                 "§9.7.16.8.3-4: Tensor Memory is accessed through an address a tcgen05.alloc returned)"),
        fix=("move the access before the dealloc (after tcgen05.wait::ld / ::st)" if freed is not None else
             "allocate as many columns as the kernel uses (nCols of the tcgen05.alloc, and of its dealloc)"
             if near is not None else
             "allocate the columns first (tcgen05.alloc, then a thread sync and tcgen05.fence::after_thread_sync "
             "before reading the address)"))


def unsatisfiable_alloc(tm, side: Access, ncols: int) -> Finding:
    """At a deadlock: an alloc blocked for columns nobody frees.  The GPU's alloc retries
    ``UTCATOMSWS.FIND_AND_SET.ALIGN`` after a ``NANOSLEEP`` for ever: a hang."""
    held = sorted(tm.allocations.items())
    holders = [tm.alloc_sides.get(c) for c, _ in held]
    free = 512 - sum(n for _, n in tm.leaks())
    desc = ", ".join(f"[{c}, {c + n})" + (f" allocated at line {s.line} by warp {s.warp}" if s is not None else "")
                     for (c, n), s in zip(held, holders)) or "none"
    return Finding(
        CLS, f"tcgen05.alloc of {ncols} columns in {tm.label} can never be satisfied: {free} column(s) are free and "
             f"no live warp will free more; held: {desc}",
        sides=tuple(s for s in holders if s is not None) + (side,),
        missing=f"a tcgen05.dealloc of the held columns before this alloc ({ncols} free columns aligned to {ncols} are "
                f"needed; {SECTION}: \"The tcgen05.alloc blocks if the requested amount of Tensor Memory is not "
                f"available\")",
        fix="dealloc what the CTA no longer needs before allocating again, or allocate fewer columns",
        outcome="hang")


def peer_never_arrives(side: Access, what: str, peer_label: str) -> Finding:
    """At a deadlock: a cta_group::2 alloc / dealloc whose peer CTA never executes the matching instruction."""
    return Finding(
        CLS, f"{what} waits for ever: the peer CTA {peer_label} never executes the matching {what}",
        sides=(side,),
        missing=f"the same {what} by one warp of the peer CTA ({SECTION}: \"When .cta_group::2 is specified, one warp "
                f"from each of the peer CTAs must collectively perform the allocation and de-allocation\")",
        fix="have one warp of each CTA of the pair execute the alloc / dealloc (same nCols, same address)",
        outcome="hang")


def pair_mismatch(first: Access, then: Access, what: str, n_first: int, n_then: int) -> Finding:
    """cta_group::2 alloc with different nCols in the two CTAs.  In the SASS ptxas 13.0 emits, the even CTA's warp
    allocates its own nCols for both CTAs and stores the start column to the odd CTA: the run goes on with the even
    CTA's count (tcsim does the same)."""
    return Finding(
        CLS, f"{what}: the two CTAs of the pair request different column counts ({n_first} and {n_then}); the GPU "
             f"allocates the even CTA's count for both",
        sides=(first, then),
        missing=f"the same nCols on both CTAs of the pair ({SECTION}: one warp from each of the peer CTAs must "
                f"collectively perform the allocation)",
        fix="pass the same nCols in both CTAs")
