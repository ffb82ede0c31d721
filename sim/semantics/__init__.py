"""Instruction semantics, one module per PTX opcode family; importing this package registers them all.

Every module in this package registers its decoders with :data:`tcsim.semantics.registry.REGISTRY` at import.
"""
import importlib
import pkgutil

from .registry import REGISTRY, DecodeInfo, DecoderOverlap, semantics  # noqa: F401

__all__ = ["REGISTRY", "DecodeInfo", "DecoderOverlap", "semantics", "load_all"]


def load_all() -> None:
    """Import every semantics module of this package (idempotent)."""
    for mod in pkgutil.iter_modules(__path__):
        if mod.name != "registry" and not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
