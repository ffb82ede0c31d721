"""Forms of the memory fences: fence{.sem}.scope, fence.mbarrier_init, fence.proxy.*, membar.

PTX ISA 9.1 §9.7.13.4 (membar / fence)::

    fence{.sc|.acq_rel}.{cta|cluster|gpu|sys}          (default .acq_rel)
    fence.{acquire|release}.sync_restrict::shared::{cluster|cta}.cluster
    fence.mbarrier_init.release.cluster
    fence.proxy.{alias|async|async.global|async.shared::cta|async.shared::cluster}
    fence.proxy.tensormap::generic.release.{cta|cluster|gpu|sys}
    fence.proxy.tensormap::generic.acquire.{cta|cluster|gpu|sys} [addr], 128
    fence.proxy.async::generic.{acquire|release}.sync_restrict::shared::{cluster|cta}.cluster
    membar.{cta|gl|sys}      (membar.gl = fence.sc.gpu, membar.sys = fence.sc.sys, membar.cta = fence.sc.cta)
    membar.proxy.alias       (legacy spelling of fence.proxy.alias)

Anything else is rejected with the offending qualifier named.  The execution (a ``sync`` event per fence, proxy
bookkeeping) is ``tcsim.semantics.fence``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .errors import UnsupportedError, VerifyError
from .forms import FormSpec, QualGroup

SECTION = "PTX ISA §9.7.13.4"
SCOPES = ("cta", "cluster", "gpu", "sys")
RESTRICTS = ("sync_restrict::shared::cluster", "sync_restrict::shared::cta")

SPECS = (FormSpec("fence", SECTION, (), (
    QualGroup("kind", ("proxy", "mbarrier_init")),
    QualGroup("proxy", ("alias", "async", "tensormap::generic", "async::generic")),
    QualGroup("proxy_space", ("global", "shared::cta", "shared::cluster", "shared")),
    QualGroup("sem", ("sc", "acq_rel", "acquire", "release")), QualGroup("restrict", RESTRICTS),
    QualGroup("scope", SCOPES))),
    FormSpec("membar", SECTION, (), (QualGroup("level", ("cta", "gl", "sys", "proxy")),
                                     QualGroup("alias", ("alias",)))))


@dataclass(frozen=True)
class FenceForm:
    """A checked fence / membar: ``fence`` ('thread', 'proxy', 'mbarrier_init', 'membar'), ``sem``, ``scope``,
    ``proxy``, ``restrict`` (the ``.sync_restrict::`` space) and, for fence.proxy.tensormap::generic.acquire, the
    ``addr`` and ``size`` operands."""

    fence: str
    sem: str | None
    scope: str | None
    proxy: str | None
    restrict: str | None
    addr: ir.Address | None = None
    size: object = None

    def event_fields(self) -> dict:
        """The fields of the fence's ``sync`` event (``tcsim.semantics.fence``)."""
        return dict(fence=self.fence, sem=self.sem, scope=self.scope, proxy=self.proxy, restrict=self.restrict)


def _no_operands(ins, what):
    if ins.operands:
        raise VerifyError(f"{what} takes no operands", ins.loc)


def _proxy(ins, rest, what) -> FenceForm:
    """fence.proxy.{alias|async{.global|.shared::cta|.shared::cluster}}, fence.proxy.tensormap::generic.*,
    fence.proxy.async::generic.*"""
    if not rest:
        raise VerifyError(f"{what} needs a proxy kind", ins.loc)
    kind = rest[0]
    if kind in ("alias", "async"):
        proxy = kind
        tail = rest[1:]
        if kind == "async" and tail and tail[0] in ("global", "shared::cta", "shared::cluster", "shared"):
            proxy = "async." + ("shared::cta" if tail[0] == "shared" else tail[0])
            tail = tail[1:]
        if tail:
            raise UnsupportedError(f"{what}: qualifier .{tail[0]} is not supported", ins.loc,
                                   expected="fence.proxy.async{.global|.shared::cta|.shared::cluster} or "
                                            "fence.proxy.alias")
        _no_operands(ins, what)
        return FenceForm("proxy", "acq_rel", None, proxy, None)
    if kind in ("tensormap::generic", "async::generic"):
        tail = rest[1:]
        if not tail or tail[0] not in ("acquire", "release"):
            raise VerifyError(f"{what}: needs .acquire or .release", ins.loc)
        sem = tail[0]
        tail = tail[1:]
        restrict = None
        if tail and tail[0].startswith("sync_restrict::"):
            restrict = tail[0][len("sync_restrict::"):]
            tail = tail[1:]
        if len(tail) != 1 or tail[0] not in SCOPES:
            raise VerifyError(f"{what}: needs a scope .cta/.cluster/.gpu/.sys", ins.loc)
        scope = tail[0]
        if kind == "async::generic":
            want = "shared::cluster" if sem == "acquire" else "shared::cta"
            if restrict != want or scope != "cluster":
                raise VerifyError(f"{what}: fence.proxy.async::generic.{sem} is only defined as "
                                  f".sync_restrict::{want}.cluster", ins.loc)
        elif restrict is not None:
            raise VerifyError(f"{what}: .sync_restrict is not valid on fence.proxy.tensormap::generic", ins.loc)
        if kind == "tensormap::generic" and sem == "acquire":
            if len(ins.operands) != 2 or not isinstance(ins.operands[0], ir.Address):
                raise VerifyError(f"{what} takes [addr], size", ins.loc)
            size = ins.operands[1]
            if isinstance(size, ir.Imm) and size.value != 128:
                raise VerifyError(f"{what}: size operand {size} must be 128", ins.loc)
            return FenceForm("proxy", sem, scope, kind, restrict, ins.operands[0], size)
        _no_operands(ins, what)
        return FenceForm("proxy", sem, scope, kind, restrict)
    raise UnsupportedError(f"{what}: proxy kind .{kind} is not supported", ins.loc,
                           expected="alias, async{.global,.shared::cta,.shared::cluster}, tensormap::generic, "
                                    "async::generic")


def parse_fence(ins: ir.Instruction) -> FenceForm:
    """The checked form of a ``fence`` instruction (module docstring)."""
    mods = list(ins.mods)
    what = ins.full_opcode
    if not mods:
        raise VerifyError("fence needs a scope", ins.loc, expected="fence{.sem}.scope")
    if mods[0] == "proxy":
        return _proxy(ins, mods[1:], what)
    if mods[0] in ("mbarrier_init",):
        if mods[1:] != ["release", "cluster"]:
            raise VerifyError(f"{what}: fence.mbarrier_init only exists as fence.mbarrier_init.release.cluster",
                              ins.loc)
        _no_operands(ins, what)
        return FenceForm("mbarrier_init", "release", "cluster", None, None)
    sem = "acq_rel"
    restrict = None
    rest = mods
    if rest and rest[0] in ("sc", "acq_rel", "acquire", "release"):
        sem = rest[0]
        rest = rest[1:]
    if rest and rest[0].startswith("sync_restrict::"):
        restrict = rest[0][len("sync_restrict::"):]
        rest = rest[1:]
    if len(rest) != 1 or rest[0] not in SCOPES:
        raise UnsupportedError(f"{what} is not a fence form tcsim knows", ins.loc,
                               expected="fence{.sc|.acq_rel}.{cta|cluster|gpu|sys}")
    scope = rest[0]
    if sem in ("acquire", "release"):
        want = "shared::cluster" if sem == "acquire" else "shared::cta"
        if restrict is None:
            raise VerifyError(f"{what}: fence.{sem} needs .sync_restrict::{want}", ins.loc)
        if restrict != want or scope != "cluster":
            raise VerifyError(f"{what}: fence.{sem} is only defined as fence.{sem}.sync_restrict::{want}.cluster",
                              ins.loc)
    elif restrict is not None:
        raise VerifyError(f"{what}: .sync_restrict is only valid with .acquire / .release", ins.loc)
    _no_operands(ins, what)
    return FenceForm("thread", sem, scope, None, restrict)


def parse_membar(ins: ir.Instruction) -> FenceForm:
    """``membar.{cta|gl|sys}`` (fence.sc at cta/gpu/sys scope) and ``membar.proxy.alias`` (PTX ISA 9.1 §9.7.13.4)."""
    mods = list(ins.mods)
    _no_operands(ins, ins.full_opcode)
    if mods == ["proxy", "alias"]:
        return FenceForm("proxy", "acq_rel", None, "alias", None)
    scope = {"cta": "cta", "gl": "gpu", "sys": "sys"}.get(mods[0]) if len(mods) == 1 else None
    if scope is None:
        raise UnsupportedError(f"{ins.full_opcode} is not supported", ins.loc, expected="membar.{cta|gl|sys}")
    return FenceForm("membar", "sc", scope, None, None)


__all__ = ["SECTION", "SCOPES", "SPECS", "FenceForm", "parse_fence", "parse_membar"]
