"""Forms of the mbarrier instructions: qualifiers and operands, checked at decode time.

PTX ISA 9.1 §9.7.13.15: init §.9, inval §.10, expect_tx §.11, complete_tx §.12, arrive §.13, arrive_drop §.14,
test_wait / try_wait §.16, pending_count §.17.  The semantics (phases, counts, tokens) live in
``tcsim.semantics.mbarrier`` and ``tcsim.mbarrier_state``.

Rules checked here: one qualifier of each group; ``.b64`` required; ``.sem`` and ``.scope`` together, the
semantics allowed per operation; ``.noComplete`` not with ``.expect_tx`` and only with ``.release.cta``;
``.shared::cluster`` not on init / inval / test_wait / try_wait (they run on the barrier's own CTA) and an arrive
on it returns no state (sink ``_``); pending_count takes no state space; operand counts and kinds; immediate
counts in range.  Unlisted qualifiers are UnsupportedError naming the operation.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup

SECTION = "PTX ISA §9.7.13.15"
OPS = ("init", "inval", "arrive", "arrive_drop", "expect_tx", "complete_tx", "test_wait", "try_wait",
       "pending_count")
SPACES = ("shared", "shared::cta", "shared::cluster")
SEMS = ("release", "relaxed", "acquire")
SCOPES = ("cta", "cluster")
#: the largest arrival count / tx-count of an mbarrier (PTX ISA 9.1 §9.7.13.15.1: 20-bit counts)
MAX_COUNT = (1 << 20) - 1

#: the qualifier groups after the operation (the ones only some operations take are checked by parse_mbarrier)
GROUPS = (QualGroup("op", OPS, required=True), QualGroup("completion", ("expect_tx", "noComplete")),
          QualGroup("parity", ("parity",)), QualGroup("sem", SEMS), QualGroup("scope", SCOPES),
          QualGroup("space", SPACES), QualGroup("type", ("b64",), required=True))
SPEC = FormSpec("mbarrier", SECTION, (), GROUPS)

#: memory semantics allowed per operation (defaults: the first of the pair, scope .cta)
_ALLOWED_SEM = {"arrive": ("release", "relaxed"), "arrive_drop": ("release", "relaxed"),
                "test_wait": ("acquire", "relaxed"), "try_wait": ("acquire", "relaxed"),
                "expect_tx": ("relaxed",), "complete_tx": ("relaxed",)}


@dataclass(frozen=True)
class MbarrierForm:
    """A checked mbarrier instruction.  ``sem`` / ``scope`` carry the PTX defaults when not spelled (release.cta
    for arrives, acquire.cta for waits, relaxed.cta for expect_tx / complete_tx); ``space`` is the spelled state
    space (None: generic).  Operands: ``addr`` the barrier address, ``dst`` the state / waitComplete / count
    destination, ``count`` init's count, an arrive's count or txCount, expect_tx / complete_tx's txCount, ``arg``
    a wait's state or phaseParity, ``hint`` try_wait's suspendTimeHint, ``src`` pending_count's state."""

    op: str
    sem: str | None
    scope: str | None
    space: str | None
    expect_tx: bool
    no_complete: bool
    parity: bool
    name: str
    addr: ir.Address | None = None
    dst: object = None
    count: object = None
    arg: object = None
    hint: object = None
    src: object = None


def _err(ins, msg: str, expected: str | None = None) -> VerifyError:
    return VerifyError(msg, ins.loc, expected=expected)


def _addr_operand(ins, op, what):
    if not isinstance(op, ir.Address) or op.coords is not None:
        raise _err(ins, f"{what}: the mbarrier operand must be an address [a]")
    return op


def _check_imm_range(ins, op, lo, hi, what):
    if isinstance(op, ir.Imm):
        if op.kind != "int" or not lo <= int(op.value) <= hi:
            raise _err(ins, f"{what} {op} is out of range", expected=f"an integer in [{lo}, {hi}]")
    elif not isinstance(op, (ir.Reg, ir.Sym)):
        raise _err(ins, f"{what} must be a .u32 register or immediate, got {op}")


def _qualifiers(ins) -> dict:
    mods = ins.mods
    if not mods or mods[0] not in OPS:
        raise UnsupportedError(f"{ins.full_opcode} is not an mbarrier instruction tcsim knows", ins.loc,
                               expected="mbarrier." + "/".join(OPS))
    q = dict(op=mods[0], sem=None, scope=None, space=None, expect_tx=False, no_complete=False, parity=False)
    has_type = False
    for m in mods[1:]:
        if m in SEMS:
            if q["sem"] is not None:
                raise _err(ins, f"{ins.full_opcode} names two memory semantics")
            q["sem"] = m
        elif m in SCOPES:
            if q["scope"] is not None:
                raise _err(ins, f"{ins.full_opcode} names two scopes")
            q["scope"] = m
        elif m in SPACES:
            if q["space"] is not None:
                raise _err(ins, f"{ins.full_opcode} names two state spaces")
            q["space"] = m
        elif m == "b64":
            has_type = True
        elif m == "expect_tx" and q["op"] in ("arrive", "arrive_drop"):
            q["expect_tx"] = True
        elif m == "noComplete" and q["op"] in ("arrive", "arrive_drop"):
            q["no_complete"] = True
        elif m == "parity" and q["op"] in ("test_wait", "try_wait"):
            q["parity"] = True
        else:
            raise UnsupportedError(f"qualifier .{m} of mbarrier.{q['op']} is not supported", ins.loc,
                                   expected=f"the qualifiers of mbarrier.{q['op']} in {SECTION}")
    op, sem, scope, space = q["op"], q["sem"], q["scope"], q["space"]
    if not has_type:
        raise _err(ins, f"{ins.full_opcode} needs the .b64 type qualifier")
    if (sem is None) != (scope is None):
        raise _err(ins, f"{ins.full_opcode}: .sem and .scope qualifiers must be given together",
                   expected="e.g. .release.cluster or neither")
    allowed_sem = _ALLOWED_SEM.get(op, ())
    if sem is not None and sem not in allowed_sem:
        raise _err(ins, f"{ins.full_opcode}: .{sem} is not allowed on mbarrier.{op}",
                   expected=("one of " + ", ".join("." + s for s in allowed_sem)) if allowed_sem
                   else "no memory-semantics qualifier")
    if q["no_complete"]:
        if q["expect_tx"]:
            raise _err(ins, f"{ins.full_opcode}: .noComplete cannot be combined with .expect_tx")
        if sem not in (None, "release") or scope not in (None, "cta"):
            raise _err(ins, f"{ins.full_opcode}: .noComplete allows only .release.cta")
    if space == "shared::cluster" and op in ("init", "inval", "test_wait", "try_wait"):
        raise _err(ins, f"mbarrier.{op} cannot take a .shared::cluster address; it must be executed "
                        f"by the barrier's own CTA", expected=".shared::cta or a generic address")
    if space is not None and op == "pending_count":
        raise _err(ins, "mbarrier.pending_count takes no state space")
    if sem is None and op in _ALLOWED_SEM:
        q["sem"], q["scope"] = _ALLOWED_SEM[op][0], "cta"
    return q


def parse_mbarrier(ins: ir.Instruction) -> MbarrierForm:
    """The checked form of an ``mbarrier.*`` instruction (PTX ISA 9.1 §9.7.13.15; module docstring)."""
    q = _qualifiers(ins)
    op = q["op"]
    ops = ins.operands
    base = dict(q, name=ins.full_opcode)
    if op == "init":
        if len(ops) != 2:
            raise _err(ins, "mbarrier.init takes [addr], count")
        addr = _addr_operand(ins, ops[0], "mbarrier.init")
        _check_imm_range(ins, ops[1], 1, MAX_COUNT, "mbarrier.init count")
        return MbarrierForm(**base, addr=addr, count=ops[1])
    if op == "inval":
        if len(ops) != 1:
            raise _err(ins, "mbarrier.inval takes [addr]")
        return MbarrierForm(**base, addr=_addr_operand(ins, ops[0], "mbarrier.inval"))
    if op in ("arrive", "arrive_drop"):
        what = f"mbarrier.{op}"
        if len(ops) not in (2, 3):
            raise _err(ins, f"{what} takes state, [addr]{{, count}}")
        dst = ops[0]
        addr = _addr_operand(ins, ops[1], what)
        extra = ops[2] if len(ops) == 3 else None
        if not isinstance(dst, (ir.Reg, ir.Sink)):
            raise _err(ins, f"{what}: the state destination must be a .b64 register or _")
        if q["space"] == "shared::cluster" and not isinstance(dst, ir.Sink):
            raise _err(ins, f"{what} on a .shared::cluster address cannot return a state; use the sink _",
                       expected=f"{what}.shared::cluster.b64 _, [addr]")
        if q["expect_tx"] and extra is None:
            raise _err(ins, f"{what}.expect_tx needs a txCount operand")
        if q["no_complete"] and extra is None:
            raise _err(ins, f"{what}.noComplete needs a count operand")
        if extra is not None:
            if q["expect_tx"]:
                _check_imm_range(ins, extra, 0, MAX_COUNT, "txCount")
            else:
                _check_imm_range(ins, extra, 1, MAX_COUNT, "arrive count")
        return MbarrierForm(**base, addr=addr, dst=dst, count=extra)
    if op in ("expect_tx", "complete_tx"):
        what = f"mbarrier.{op}"
        if len(ops) != 2:
            raise _err(ins, f"{what} takes [addr], txCount")
        addr = _addr_operand(ins, ops[0], what)
        _check_imm_range(ins, ops[1], 0, MAX_COUNT, "txCount")
        return MbarrierForm(**base, addr=addr, count=ops[1])
    if op in ("test_wait", "try_wait"):
        what = ins.full_opcode
        blocking = op == "try_wait"
        nmax = 4 if blocking else 3
        if len(ops) not in (3, nmax) or (not blocking and len(ops) != 3):
            raise _err(ins, f"{what} takes waitComplete, [addr], {'phaseParity' if q['parity'] else 'state'}"
                            + (", {suspendTimeHint}" if blocking else ""))
        dst = ops[0]
        if isinstance(dst, ir.Sink):
            # ptxas 13.0: "Result discard mode is not allowed for instruction 'mbarrier.try_wait.parity'"
            raise _err(ins, f"{what}: Result discard mode is not allowed (waitComplete must be a predicate)")
        if not isinstance(dst, ir.Reg):
            raise _err(ins, f"{what}: waitComplete must be a predicate register")
        addr = _addr_operand(ins, ops[1], what)
        arg = ops[2]
        if q["parity"]:
            # ptxas 13.0: an immediate phaseParity "expected to be 0 or 1"
            _check_imm_range(ins, arg, 0, 1, "phaseParity")
        elif isinstance(arg, ir.Imm):
            raise _err(ins, f"{what}: the state operand must be the .b64 register returned by an arrive")
        return MbarrierForm(**base, addr=addr, dst=dst, arg=arg, hint=ops[3] if len(ops) == 4 else None)
    if len(ops) != 2:                                   # pending_count
        raise _err(ins, "mbarrier.pending_count takes count, state")
    return MbarrierForm(**base, dst=ops[0], src=ops[1])


__all__ = ["SECTION", "OPS", "SPACES", "SEMS", "SCOPES", "MAX_COUNT", "GROUPS", "SPEC", "MbarrierForm",
           "parse_mbarrier"]
