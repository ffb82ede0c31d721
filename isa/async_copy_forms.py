"""Forms of the non-tensor asynchronous copies: cp.async (Ampere) and cp.async.bulk, with their group completion.

PTX ISA 9.1 §9.7.9.25.3 (cp.async: §.1 cp.async, §.2 commit_group, §.3 wait_group / wait_all),
cp.async.mbarrier.arrive (§9.7.13.15), §9.7.9.25.4.1 (cp.async.bulk), §9.7.9.25.4.3 (cp.async.bulk.prefetch),
§9.7.9.25.6.1 / .2 (cp.async.bulk.commit_group / wait_group)::

    cp.async.{ca|cg}.shared{::cta}.global{.L2::cache_hint}{.L2::64B|.L2::128B|.L2::256B}
                                             [dst], [src], cp-size{, src-size | , ignore-src}{, cache-policy}
    cp.async.commit_group / cp.async.wait_group N / cp.async.wait_all
    cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [mbar]
    cp.async.bulk.{shared::cta|shared::cluster}.global.mbarrier::complete_tx::bytes{.multicast::cluster}
        {.L2::cache_hint} [dst], [src], size, [mbar]{, ctaMask}{, policy}
    cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
    cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}{.cp_mask} [dst], [src], size{, policy}{, byteMask}
    cp.async.bulk.prefetch.L2.global{.L2::cache_hint} [src], size{, policy}
    cp.async.bulk.commit_group / cp.async.bulk.wait_group{.read} N

Not supported (UnsupportedError): ``.ignore_oob`` (PTX 9.2), ``cp.reduce.async.bulk`` (non-tensor reductions)
and any other qualifier.  The execution is ``tcsim.semantics.async_copy`` / ``tcsim.semantics.bulk_copy``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .bulk_tensor_forms import MBAR
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup

SECTION_CP_ASYNC = "PTX ISA §9.7.9.25.3.1"
SECTION_BULK = "PTX ISA §9.7.9.25.4.1"
PREFETCH_SIZES = ("L2::64B", "L2::128B", "L2::256B")
BULK_SPACES = ("shared::cta", "shared::cluster", "global", "shared")
BULK_FLAGS = ("ignore_oob", MBAR, "bulk_group", "multicast::cluster", "L2::cache_hint", "cp_mask")

CP_ASYNC_GROUPS = (QualGroup("operation", ("ca", "cg", "commit_group", "wait_group", "wait_all", "mbarrier"),
                             required=True),
                   QualGroup("arrive", ("arrive",)), QualGroup("noinc", ("noinc",)),
                   QualGroup("dst", ("shared", "shared::cta")), QualGroup("src", ("global",)),
                   QualGroup("cache_hint", ("L2::cache_hint",)), QualGroup("prefetch_size", PREFETCH_SIZES),
                   QualGroup("type", ("b64",)))
BULK_GROUPS = (QualGroup("operation", ("prefetch", "commit_group", "wait_group")), QualGroup("read", ("read",)),
               QualGroup("dst", ("shared::cta", "shared::cluster", "global", "L2")),
               QualGroup("src", ("global", "shared::cta")),
               QualGroup("completion", (MBAR, "bulk_group")), QualGroup("multicast", ("multicast::cluster",)),
               QualGroup("cache_hint", ("L2::cache_hint",)), QualGroup("cp_mask", ("cp_mask",)))
SPECS = (FormSpec("cp.async", SECTION_CP_ASYNC, ("async",), CP_ASYNC_GROUPS),
         FormSpec("cp.async.bulk", SECTION_BULK, ("async", "bulk"), BULK_GROUPS))


def group_count(ins: ir.Instruction) -> int:
    """The N of ``...wait_group N``: one non-negative integer constant (VerifyError otherwise)."""
    if len(ins.operands) != 1 or not (isinstance(ins.operands[0], ir.Imm) and ins.operands[0].kind == "int"):
        raise VerifyError(f"{ins.full_opcode} takes one integer constant N", ins.loc)
    n = int(ins.operands[0].value)
    if n < 0:
        raise VerifyError(f"{ins.full_opcode}: N = {n} must be non-negative", ins.loc)
    return n


# ---------------------------------------------------------------------------------------------- cp.async
@dataclass(frozen=True)
class CpAsyncForm:
    """A checked cp.async instruction.  ``kind``: 'copy', 'commit_group', 'wait_group', 'wait_all' or
    'mbarrier_arrive'.  copy: ``cache`` ('ca' / 'cg'), ``dst``, ``src``, ``cp_size`` (4, 8, 16), ``src_size`` or
    ``ignore`` (the optional fourth operand), ``policy``; wait: ``keep`` (N; 0 for wait_all); mbarrier_arrive:
    ``noinc``, ``space`` ('shared::cta' or 'generic'), ``addr``."""

    kind: str
    cache: str | None = None
    dst: ir.Address | None = None
    src: ir.Address | None = None
    cp_size: int = 0
    src_size: object = None
    ignore: object = None
    policy: object = None
    keep: int = 0
    noinc: bool = False
    space: str | None = None
    addr: ir.Address | None = None


def _cp_async_copy(ins, rest, info) -> CpAsyncForm:
    what = ins.full_opcode
    if not rest or rest[0] not in ("ca", "cg"):
        raise VerifyError(f"{what}: cp.async needs the cache operator .ca or .cg", ins.loc,
                          expected="cp.async.{ca|cg}.shared{::cta}.global [dst], [src], cp-size{, src-size}")
    cache = rest[0]
    flags = rest[1:]
    if flags[:2] not in (["shared", "global"], ["shared::cta", "global"]):
        raise VerifyError(f"{what}: cp.async copies .shared{{::cta}}.global (destination, then source)", ins.loc)
    hint = False
    for m in flags[2:]:
        if m == "L2::cache_hint":
            hint = True
        elif m not in PREFETCH_SIZES:
            raise UnsupportedError(f"{what}: qualifier .{m} is not supported on cp.async", ins.loc,
                                   expected=".L2::cache_hint and .L2::64B/.L2::128B/.L2::256B")
    ops = list(ins.operands)
    if len(ops) < 3:
        raise VerifyError(f"{what} takes [dst], [src], cp-size{{, src-size | ignore-src}}{{, cache-policy}}",
                          ins.loc)
    policy = None
    if hint:
        if len(ops) < 4:
            raise VerifyError(f"{what}: .L2::cache_hint needs a cache-policy operand", ins.loc)
        policy = ops.pop()
    if len(ops) > 4:
        raise VerifyError(f"{what}: too many operands", ins.loc)
    dst, src, size_op = ops[:3]
    for op, name in ((dst, "[dst]"), (src, "[src]")):
        if not isinstance(op, ir.Address) or op.coords is not None:
            raise VerifyError(f"{what}: {name} must be a memory address, got {op}", ins.loc)
    if not isinstance(size_op, ir.Imm) or size_op.kind != "int" or int(size_op.value) not in (4, 8, 16):
        raise VerifyError(f"{what}: cp-size must be the constant 4, 8 or 16, got {size_op}", ins.loc)
    cp_size = int(size_op.value)
    if cache == "cg" and cp_size != 16:
        raise VerifyError(f"{what}: cp.async.cg copies 16 bytes, got cp-size {cp_size}", ins.loc)
    src_size = ignore = None
    if len(ops) == 4:
        extra = ops[3]
        if isinstance(extra, ir.Not) or (isinstance(extra, ir.Reg) and info.reg_type(extra) == "pred"):
            ignore = extra
        elif isinstance(extra, (ir.Reg, ir.Imm)):
            src_size = extra
        else:
            raise VerifyError(f"{what}: the 4th operand must be src-size (.u32) or ignore-src (a predicate)",
                              ins.loc)
    return CpAsyncForm("copy", cache=cache, dst=dst, src=src, cp_size=cp_size, src_size=src_size, ignore=ignore,
                       policy=policy)


def _cp_async_mbarrier_arrive(ins, rest) -> CpAsyncForm:
    what = ins.full_opcode
    noinc = "noinc" in rest
    rest = [m for m in rest if m != "noinc"]
    if "b64" not in rest:
        raise VerifyError(f"{what}: cp.async.mbarrier.arrive needs .b64", ins.loc)
    rest.remove("b64")
    if rest not in ([], ["shared"], ["shared::cta"]):
        raise VerifyError(f"{what}: qualifier .{rest[0]} is not valid on cp.async.mbarrier.arrive", ins.loc,
                          expected="cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr]")
    if len(ins.operands) != 1 or not isinstance(ins.operands[0], ir.Address):
        raise VerifyError(f"{what} takes one operand [addr]", ins.loc)
    return CpAsyncForm("mbarrier_arrive", noinc=noinc, space="shared::cta" if rest else "generic",
                       addr=ins.operands[0])


def parse_cp_async(ins: ir.Instruction, info) -> CpAsyncForm:
    """The checked form of a non-bulk ``cp.async*`` instruction (module docstring)."""
    rest = list(ins.mods[1:])
    if rest == ["commit_group"]:
        if ins.operands:
            raise VerifyError("cp.async.commit_group takes no operands", ins.loc)
        return CpAsyncForm("commit_group")
    if rest[:1] == ["wait_group"] and len(rest) == 1:
        return CpAsyncForm("wait_group", keep=group_count(ins))
    if rest == ["wait_all"]:
        if ins.operands:
            raise VerifyError("cp.async.wait_all takes no operands", ins.loc)
        return CpAsyncForm("wait_all")
    if rest[:2] == ["mbarrier", "arrive"]:
        return _cp_async_mbarrier_arrive(ins, rest[2:])
    return _cp_async_copy(ins, rest, info)


# ---------------------------------------------------------------------------------------------- cp.async.bulk
@dataclass(frozen=True)
class BulkCopyForm:
    """A checked non-tensor bulk instruction.  ``kind``: 'load' (global -> shared::cta / shared::cluster), 's2s'
    (shared::cta -> shared::cluster), 'store' (shared::cta -> global), 'prefetch', 'commit_group' or 'wait_group'.
    Operands: ``dst``, ``src``, ``size``, ``mbar``, ``mask`` (ctaMask), ``policy``, ``bytemask``; wait_group:
    ``keep`` (N) and ``read_only`` (``.read``)."""

    kind: str
    dst_space: str | None = None
    dst: ir.Address | None = None
    src: ir.Address | None = None
    size: object = None
    mbar: ir.Address | None = None
    mask: object = None
    policy: object = None
    bytemask: object = None
    keep: int = 0
    read_only: bool = False


def _operands(ins, n_fixed, extras):
    """Split the operand list: ``n_fixed`` required operands, then the named optional ones in order."""
    ops = ins.operands
    want = n_fixed + len(extras)
    if len(ops) != want:
        names = ", ".join(extras)
        raise VerifyError(f"{ins.full_opcode} takes {want} operands ({n_fixed} fixed"
                          f"{', then ' + names if names else ''}), got {len(ops)}", ins.loc)
    return ops[:n_fixed], dict(zip(extras, ops[n_fixed:]))


def _need_address(ins, op, what):
    if not isinstance(op, ir.Address) or op.coords is not None:
        raise VerifyError(f"{ins.full_opcode}: operand {what} must be a memory address [a], got {op}", ins.loc)


def _check_static_size(ins, size_op):
    """ptxas rejects an immediate size that is not a multiple of 16 (`expected to be multiple of 16`)."""
    if isinstance(size_op, ir.Imm) and size_op.kind == "int" and int(size_op.value) % 16:
        raise VerifyError(f"{ins.full_opcode}: size {size_op.value} is not a multiple of 16",
                          ins.loc, expected="a size that is a multiple of 16 bytes (PTX ISA §9.7.9.25.4.1)")


def _bulk_copy(ins, rest) -> BulkCopyForm:
    spaces = [m for m in rest if m in BULK_SPACES]
    if "shared" in spaces:
        raise VerifyError(f"{ins.full_opcode}: state space .shared must be spelled .shared::cta or "
                          f".shared::cluster for cp.async.bulk", ins.loc)
    if len(spaces) != 2:
        raise VerifyError(f"{ins.full_opcode}: cp.async.bulk needs a destination and a source state space "
                          f"(e.g. .shared::cta.global)", ins.loc)
    dst_space, src_space = spaces
    flags = [m for m in rest if m not in spaces]
    for f in flags:
        if f not in BULK_FLAGS:
            raise UnsupportedError(f"{ins.full_opcode}: qualifier .{f} is not supported on cp.async.bulk", ins.loc)
    if "ignore_oob" in flags:
        raise UnsupportedError(f"{ins.full_opcode}: .ignore_oob (PTX ISA 9.2) is not supported by tcsim yet",
                               ins.loc)
    hint = "L2::cache_hint" in flags
    direction = (dst_space, src_space)
    if direction in (("shared::cta", "global"), ("shared::cluster", "global")):
        if MBAR not in flags or "bulk_group" in flags or "cp_mask" in flags:
            raise VerifyError(f"{ins.full_opcode}: a global -> shared copy completes through "
                              f".mbarrier::complete_tx::bytes (and has no .bulk_group/.cp_mask)", ins.loc)
        mc = "multicast::cluster" in flags
        if mc and dst_space != "shared::cluster":
            raise VerifyError(f"{ins.full_opcode}: .multicast::cluster needs the .shared::cluster destination",
                              ins.loc)
        extras = (["ctaMask"] if mc else []) + (["policy"] if hint else [])
        (dst, src, size, mbar), opt = _operands(ins, 4, extras)
        _check_static_size(ins, size)
        for op, w in ((dst, "[dstMem]"), (src, "[srcMem]"), (mbar, "[mbar]")):
            _need_address(ins, op, w)
        return BulkCopyForm("load", dst_space, dst, src, size, mbar, mask=opt.get("ctaMask"),
                            policy=opt.get("policy"))
    if direction == ("shared::cluster", "shared::cta"):
        if MBAR not in flags or set(flags) - {MBAR}:
            raise VerifyError(f"{ins.full_opcode}: the shared::cta -> shared::cluster copy takes only "
                              f".mbarrier::complete_tx::bytes", ins.loc)
        (dst, src, size, mbar), _ = _operands(ins, 4, [])
        _check_static_size(ins, size)
        for op, w in ((dst, "[dstMem]"), (src, "[srcMem]"), (mbar, "[mbar]")):
            _need_address(ins, op, w)
        return BulkCopyForm("s2s", dst_space, dst, src, size, mbar)
    if direction == ("global", "shared::cta"):
        if "bulk_group" not in flags or MBAR in flags or "multicast::cluster" in flags:
            raise VerifyError(f"{ins.full_opcode}: a shared::cta -> global copy completes through .bulk_group",
                              ins.loc)
        cpm = "cp_mask" in flags
        extras = (["policy"] if hint else []) + (["byteMask"] if cpm else [])
        (dst, src, size), opt = _operands(ins, 3, extras)
        _check_static_size(ins, size)
        for op, w in ((dst, "[dstMem]"), (src, "[srcMem]")):
            _need_address(ins, op, w)
        return BulkCopyForm("store", dst_space, dst, src, size, policy=opt.get("policy"),
                            bytemask=opt.get("byteMask"))
    raise UnsupportedError(f"{ins.full_opcode}: copy direction .{dst_space}.{src_space} does not exist for "
                           f"cp.async.bulk", ins.loc,
                           expected="shared::cta.global, shared::cluster.global, shared::cluster.shared::cta or "
                                    "global.shared::cta")


def parse_bulk_copy(ins: ir.Instruction) -> BulkCopyForm:
    """The checked form of a non-tensor ``cp{.reduce}.async.bulk*`` instruction (module docstring)."""
    mods = ins.mods
    if mods[0] == "reduce":
        raise UnsupportedError(f"{ins.full_opcode}: non-tensor bulk reductions (cp.reduce.async.bulk, PTX ISA "
                               f"§9.7.9.25.4.2) are not supported by tcsim yet", ins.loc)
    rest = mods[2:]
    if rest == ("commit_group",):
        if ins.operands:
            raise VerifyError("cp.async.bulk.commit_group takes no operands", ins.loc)
        return BulkCopyForm("commit_group")
    if rest[:1] == ("wait_group",):
        if rest[1:] not in ((), ("read",)):
            raise UnsupportedError(f"{ins.full_opcode}: qualifiers {'.'.join(rest[1:])} are not supported "
                                   f"(expected cp.async.bulk.wait_group{{.read}} N)", ins.loc)
        return BulkCopyForm("wait_group", keep=group_count(ins), read_only=rest[1:] == ("read",))
    if rest[:1] == ("prefetch",):
        flags = set(rest[1:])
        if not {"L2", "global"} <= flags or flags - {"L2", "global", "L2::cache_hint"}:
            raise UnsupportedError(f"{ins.full_opcode}: expected cp.async.bulk.prefetch.L2.global"
                                   f"{{.L2::cache_hint}}", ins.loc)
        hint = "L2::cache_hint" in flags
        (src, size), opt = _operands(ins, 2, ["policy"] if hint else [])
        _need_address(ins, src, "[srcMem]")
        return BulkCopyForm("prefetch", src=src, size=size, policy=opt.get("policy"))
    return _bulk_copy(ins, rest)


__all__ = ["SECTION_CP_ASYNC", "SECTION_BULK", "SPECS", "group_count", "CpAsyncForm", "parse_cp_async",
           "BulkCopyForm", "parse_bulk_copy"]
