"""Method registry. Every module in this package that defines a Method
subclass with a ``name`` is registered on first use."""
from __future__ import annotations

import importlib
import pkgutil

from .base import Method, RunContext

_REGISTRY: dict[str, type[Method]] = {}


def _load() -> None:
    if _REGISTRY:
        return
    for mod in pkgutil.iter_modules(__path__):
        if mod.name.startswith("_") or mod.name in ("base",):
            continue
        m = importlib.import_module(f"{__name__}.{mod.name}")
        for obj in vars(m).values():
            if isinstance(obj, type) and issubclass(obj, Method) and obj is not Method and obj.name:
                _REGISTRY[obj.name] = obj


def all_methods() -> dict[str, type[Method]]:
    _load()
    return dict(sorted(_REGISTRY.items()))


def get_method(name: str) -> Method:
    _load()
    if name not in _REGISTRY:
        raise KeyError(f"unknown method {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]()


__all__ = ["Method", "RunContext", "all_methods", "get_method"]
