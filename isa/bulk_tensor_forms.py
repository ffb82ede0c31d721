"""Forms of the bulk tensor copies: cp.async.bulk.tensor, cp.reduce.async.bulk.tensor and
cp.async.bulk.prefetch.tensor (qualifiers, direction and operands, checked at decode time).

PTX ISA 9.1 §9.7.9.25.5.2 cp.async.bulk.tensor, §9.7.9.25.5.3 cp.reduce.async.bulk.tensor, §9.7.9.25.5.4
cp.async.bulk.prefetch.tensor; the four-row load modes ``.tile::gather4`` / ``.tile::scatter4`` §5.5.3.4.  Forms::

    cp.async.bulk.tensor.Nd.{shared::cta,shared::cluster}.global{.load_mode}.mbarrier::complete_tx::bytes
        {.multicast::cluster}{.cta_group::N}{.L2::cache_hint} [dstMem], [tensorMap, {c...}], [mbar]{, ctaMask}
        {, policy}
    cp{.reduce}.async.bulk.tensor.Nd.global.shared::cta{.redop}{.load_mode}.bulk_group{.L2::cache_hint}
        [tensorMap, {c...}], [srcMem]{, policy}
    cp.async.bulk.prefetch.tensor.Nd.L2.global{.load_mode}{.L2::cache_hint} [tensorMap, {c...}]{, policy}

Not supported (UnsupportedError): the im2col load modes, qualifiers outside the groups below, and
cp.reduce.async.bulk.tensor with .tile::scatter4.  The execution is ``tcsim.semantics.bulk_tensor``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from . import ir
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup
from .tensormap import ROWS4

SECTION = "PTX ISA §9.7.9.25.5.2"
MBAR = "mbarrier::complete_tx::bytes"
LOAD_MODES = ("tile", "tile::gather4", "tile::scatter4", "im2col", "im2col::w", "im2col::w::128", "im2col_no_offs")
REDOPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
DIMS = ("1d", "2d", "3d", "4d", "5d")
SPACES = ("shared::cta", "shared::cluster", "global", "L2", "shared")
#: the four-row load modes (§5.5.3.4) and their coordinate vector {col, row0, row1, row2, row3}
ROWS4_MODES = ("tile::gather4", "tile::scatter4")
ROWS4_SECTION = "PTX ISA §5.5.3.4"
ROWS4_NCOORDS = 1 + ROWS4
#: the load modes tcsim executes
SUPPORTED_MODES = ("tile",) + ROWS4_MODES

GROUPS = (QualGroup("reduce", ("reduce",)), QualGroup("prefetch", ("prefetch",)),
          QualGroup("dim", DIMS, required=True),
          QualGroup("dst", ("shared::cta", "shared::cluster", "global", "L2"), required=True),
          QualGroup("src", ("global", "shared::cta"), required=True), QualGroup("redop", REDOPS),
          QualGroup("load_mode", SUPPORTED_MODES), QualGroup("completion", (MBAR, "bulk_group")),
          QualGroup("multicast", ("multicast::cluster",)), QualGroup("cta_group", ("cta_group::1", "cta_group::2")),
          QualGroup("cache_hint", ("L2::cache_hint",)))
SPEC = FormSpec("cp.async.bulk.tensor", SECTION, ("async", "bulk", "tensor"), GROUPS)


@dataclass(frozen=True)
class BulkTensorForm:
    """A checked bulk tensor copy.  ``direction`` is 'load' (global -> shared), 'store' (shared -> global, a
    reduction with ``reduce``) or 'prefetch' (global -> L2); ``spaces`` the state spaces in order (dst, src).
    Operands: ``tmap`` the [tensorMap, {coords}] operand, ``dst`` / ``src`` the shared-memory address, ``mbar``
    the completion mbarrier, ``mask`` the ctaMask, ``policy`` the cache policy (None when absent)."""

    reduce: bool
    prefetch: bool
    dim: int
    spaces: tuple
    mode: str
    mbar: bool
    bulk_group: bool
    multicast: bool
    cta_group: int
    hint: bool
    redop: str | None
    explicit_cta_group: bool
    direction: str
    tmap: ir.Address
    dst: ir.Address | None = None
    src: ir.Address | None = None
    mbar_addr: ir.Address | None = None
    mask: object = None
    policy: object = None

    def qualifiers(self) -> dict:
        """The qualifier fields by name (``dim``, ``mode``, ``cta_group``, ``redop`` ...), as the execution helpers
        of ``tcsim.semantics.bulk_tensor`` read them."""
        q = {f.name: getattr(self, f.name) for f in fields(self) if f.name in _QUALIFIER_FIELDS}
        q["spaces"] = list(self.spaces)
        return q


_QUALIFIER_FIELDS = ("reduce", "prefetch", "dim", "spaces", "mode", "mbar", "bulk_group", "multicast", "cta_group",
                     "hint", "redop", "explicit_cta_group")


def _qualifiers(ins) -> dict:
    """Split the qualifiers of a cp{.reduce}.async.bulk{.prefetch}.tensor instruction."""
    mods = list(ins.mods)
    form = dict(reduce=mods[0] == "reduce", prefetch="prefetch" in mods, dim=None, spaces=[], mode="tile",
                mbar=False, bulk_group=False, multicast=False, cta_group=1, hint=False, redop=None,
                explicit_cta_group=False)
    for m in mods:
        if m in ("reduce", "async", "bulk", "tensor", "prefetch"):
            continue
        if len(m) == 2 and m[1] == "d" and m[0] in "12345":
            form["dim"] = int(m[0])
        elif m in SPACES:
            form["spaces"].append(m)
        elif m in LOAD_MODES:
            form["mode"] = m
        elif m == MBAR:
            form["mbar"] = True
        elif m == "bulk_group":
            form["bulk_group"] = True
        elif m == "multicast::cluster":
            form["multicast"] = True
        elif m in ("cta_group::1", "cta_group::2"):
            form["cta_group"] = int(m[-1])
            form["explicit_cta_group"] = True
        elif m == "L2::cache_hint":
            form["hint"] = True
        elif m in REDOPS and form["reduce"]:
            if form["redop"] is not None:
                raise VerifyError(f"{ins.full_opcode} names two reduction operations", ins.loc)
            form["redop"] = m
        else:
            raise UnsupportedError(f"{ins.full_opcode}: qualifier .{m} is not supported on tensor copies", ins.loc)
    if form["dim"] is None:
        raise VerifyError(f"{ins.full_opcode}: missing the .1d .. .5d dimension qualifier", ins.loc)
    mode = form["mode"]
    if mode not in SUPPORTED_MODES:
        raise UnsupportedError(f"{ins.full_opcode}: load mode .{mode} is not supported by tcsim yet "
                               f"(only .tile, .tile::gather4 and .tile::scatter4)", ins.loc)
    if mode in ROWS4_MODES and form["dim"] != 2:
        raise VerifyError(f"{ins.full_opcode}: .{form['dim']}d cannot be combined with .{mode}: the four-row modes "
                          f"work only on 2-D tensors (ptxas: \"Modifier '.{form['dim']}d' cannot be combined with "
                          f"modifier '.{mode}'\")", ins.loc, expected=f"cp.async.bulk.tensor.2d...{mode} "
                                                                     f"({ROWS4_SECTION})")
    return form


def declared_space(info, name: str) -> str | None:
    """State space of the variable or kernel parameter ``name`` as the function sees it (None: not declared)."""
    if any(p.name == name for p in info.function.params):
        return "param"
    for v in list(info.function.locals) + list(info.module.globals):
        if getattr(v, "name", None) == name:
            return v.space
    return None


def _tensor_operand(ins, info, op, dim, mode="tile"):
    if not isinstance(op, ir.Address) or op.coords is None:
        raise VerifyError(f"{ins.full_opcode}: expected the tensor operand [tensorMap, {{c0, ...}}], got {op}",
                          ins.loc)
    if mode in ROWS4_MODES:
        if len(op.coords) != ROWS4_NCOORDS:
            raise VerifyError(f"{ins.full_opcode}: a .{mode} tensor copy takes {ROWS4_NCOORDS} coordinates "
                              f"{{col, row0, row1, row2, row3}}, got {len(op.coords)} (ptxas: \"Argument vector "
                              f"size mismatch\")", ins.loc,
                              expected=f"the five-element tensorCoords vector of {SECTION} (table of .load_mode)")
    elif len(op.coords) != dim:
        raise VerifyError(f"{ins.full_opcode}: a .{dim}d tensor copy takes {dim} coordinates, got "
                          f"{len(op.coords)}", ins.loc)
    if not isinstance(op.base, (ir.Reg, ir.Sym)):
        raise VerifyError(f"{ins.full_opcode}: the tensor map must be a .global variable or a register, got "
                          f"{op.base}", ins.loc)
    if isinstance(op.base, ir.Sym):
        space = declared_space(info, op.base.name)
        if space not in (None, "global"):
            raise VerifyError(f"{ins.full_opcode}: the tensor map {op.base.name} is named as a .{space} variable, but "
                              f"the operand is the *generic* address of the map (ptxas: \"State space mismatch "
                              f"between instruction and address\")", ins.loc,
                              expected=(f"a register holding the generic address (mov.b64 %rd1, {op.base.name}; "
                                        f"cvta.{space}.u64 %rd2, %rd1, as nvcc emits) or a .global variable"
                                        if space in ("param", "const") else "a map in .param, .const or .global "
                                        "memory") + f" ({SECTION}: tensorMap is the generic address of the map in "
                                                    f".param, .const or .global space)")
    return op


def _address_operand(ins, op, what):
    if not isinstance(op, ir.Address) or op.coords is not None:
        raise VerifyError(f"{ins.full_opcode}: operand {what} must be a memory address [a], got {op}", ins.loc)
    return op


def _count(ins, n):
    if len(ins.operands) != n:
        raise VerifyError(f"{ins.full_opcode} takes {n} operands here, got {len(ins.operands)}", ins.loc)


def parse_bulk_tensor(ins: ir.Instruction, info) -> BulkTensorForm:
    """The checked form of a bulk tensor copy (module docstring)."""
    f = _qualifiers(ins)
    sp = f["spaces"]
    ops = ins.operands
    mode = f["mode"]
    q = dict(f, spaces=tuple(sp))
    if f["prefetch"]:
        if sp != ["L2", "global"] or f["mbar"] or f["bulk_group"] or f["multicast"] or f["reduce"]:
            raise VerifyError(f"{ins.full_opcode}: expected cp.async.bulk.prefetch.tensor.Nd.L2.global", ins.loc)
        if mode == "tile::scatter4":
            raise VerifyError(f"{ins.full_opcode}: .tile::scatter4 is a store mode; a prefetch reads (use "
                              f".tile::gather4)", ins.loc)
        _count(ins, 1 + f["hint"])
        tmap = _tensor_operand(ins, info, ops[0], f["dim"], mode)
        return BulkTensorForm(**q, direction="prefetch", tmap=tmap, policy=ops[1] if f["hint"] else None)
    if sp in (["shared::cta", "global"], ["shared::cluster", "global"]) and mode == "tile::scatter4":
        raise VerifyError(f"{ins.full_opcode}: .tile::scatter4 is a store mode (.global.shared::cta); a load into "
                          f"shared memory uses .tile::gather4 (ptxas: \"Illegal modifier '.tile::scatter4'\")",
                          ins.loc, expected=f"the .load_mode table of {SECTION}")
    if sp == ["global", "shared::cta"] and mode == "tile::gather4":
        raise VerifyError(f"{ins.full_opcode}: .tile::gather4 is a load mode; a store to global memory uses "
                          f".tile::scatter4 (ptxas: \"Illegal modifier '.tile::gather4'\")", ins.loc,
                          expected=f"the .load_mode table of {SECTION}")
    if sp == ["global", "shared::cta"] and mode == "tile::scatter4" and f["reduce"]:
        raise UnsupportedError(f"{ins.full_opcode}: cp.reduce.async.bulk.tensor with .tile::scatter4 is not "
                               f"supported by tcsim (PTX ISA 9.1 lists only .tile and .im2col_no_offs for "
                               f"reductions)", ins.loc)
    if sp in (["shared::cta", "global"], ["shared::cluster", "global"]):
        if f["reduce"] or not f["mbar"] or f["bulk_group"]:
            raise VerifyError(f"{ins.full_opcode}: a tensor load completes through .mbarrier::complete_tx::bytes",
                              ins.loc)
        if f["multicast"] and sp[0] != "shared::cluster":
            raise VerifyError(f"{ins.full_opcode}: .multicast::cluster needs the .shared::cluster destination",
                              ins.loc)
        _count(ins, 3 + f["multicast"] + f["hint"])
        dst = _address_operand(ins, ops[0], "[dstMem]")
        tmap = _tensor_operand(ins, info, ops[1], f["dim"], mode)
        mbar = _address_operand(ins, ops[2], "[mbar]")
        k = 3
        mask = None
        if f["multicast"]:
            mask, k = ops[k], k + 1
        policy = ops[k] if f["hint"] else None
        return BulkTensorForm(**q, direction="load", tmap=tmap, dst=dst, mbar_addr=mbar, mask=mask, policy=policy)
    if sp == ["global", "shared::cta"]:
        if not f["bulk_group"] or f["mbar"] or f["multicast"] or f["explicit_cta_group"]:
            raise VerifyError(f"{ins.full_opcode}: a tensor store/reduce completes through .bulk_group (no "
                              f".mbarrier, .multicast or .cta_group)", ins.loc)
        if f["reduce"] and f["redop"] is None:
            raise VerifyError(f"{ins.full_opcode}: cp.reduce.async.bulk.tensor needs a reduction operation "
                              f"({', '.join('.' + r for r in REDOPS)})", ins.loc)
        _count(ins, 2 + f["hint"])
        tmap = _tensor_operand(ins, info, ops[0], f["dim"], mode)
        src = _address_operand(ins, ops[1], "[srcMem]")
        return BulkTensorForm(**q, direction="store", tmap=tmap, src=src, policy=ops[2] if f["hint"] else None)
    raise VerifyError(f"{ins.full_opcode}: state spaces {'.'.join(sp) or '(none)'} do not name a tensor-copy "
                      f"direction", ins.loc,
                      expected="shared::cta.global / shared::cluster.global (loads) or global.shared::cta (stores)")


__all__ = ["SECTION", "MBAR", "LOAD_MODES", "REDOPS", "ROWS4_MODES", "ROWS4_SECTION", "ROWS4_NCOORDS", "SPEC",
           "BulkTensorForm", "parse_bulk_tensor", "declared_space"]
