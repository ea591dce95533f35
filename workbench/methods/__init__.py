"""Method registry. Every module or subpackage of this package that defines (or, for a
subpackage, exports from its ``__init__``) a Method subclass with a ``name`` is registered on
first use. A method kept outside the package is added with :func:`register_from` (a folder
holding method packages or modules, or one package folder), or by naming such folders in
``WORKBENCH_METHODS_PATH`` (separated like ``PATH``)."""
from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

from .base import Method, RunContext

PATH_ENV = "WORKBENCH_METHODS_PATH"

_REGISTRY: dict[str, type[Method]] = {}
_loaded = False


def _collect(m: ModuleType) -> list[type[Method]]:
    found = []
    for obj in vars(m).values():
        if isinstance(obj, type) and issubclass(obj, Method) and obj is not Method and obj.name:
            _REGISTRY[obj.name] = obj
            found.append(obj)
    return found


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in pkgutil.iter_modules(__path__):
        if mod.name.startswith("_") or mod.name in ("base", "prompts"):
            continue
        _collect(importlib.import_module(f"{__name__}.{mod.name}"))
    for folder in filter(None, os.environ.get(PATH_ENV, "").split(os.pathsep)):
        register_from(folder)


def register_from(path: str | Path) -> list[str]:
    """Register the methods found at ``path``: a package folder (with ``__init__.py``), a
    single ``.py`` file, or a folder holding such packages and modules. The folder's parent
    (or the folder itself) goes on ``sys.path`` so the package's relative imports work.
    Returns the names registered."""
    _load()
    path = Path(path).resolve()
    if (path / "__init__.py").exists() or path.suffix == ".py":
        targets = [path]
    else:
        targets = sorted(p for p in path.iterdir()
                         if not p.name.startswith(("_", "."))
                         and ((p / "__init__.py").exists() or p.suffix == ".py"))
    names: list[str] = []
    for t in targets:
        root, mod_name = str(t.parent), t.stem if t.suffix == ".py" else t.name
        if root not in sys.path:
            sys.path.insert(0, root)
        m = sys.modules.get(mod_name) or importlib.import_module(mod_name)
        names += [cls.name for cls in _collect(m)]
    return names


def unregister(*names: str) -> None:
    """Drop methods from the registry (tests that registered a toy method)."""
    for n in names:
        _REGISTRY.pop(n, None)


def all_methods() -> dict[str, type[Method]]:
    _load()
    return dict(sorted(_REGISTRY.items()))


def get_method(name: str) -> Method:
    _load()
    if name not in _REGISTRY:
        raise KeyError(f"unknown method {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]()


__all__ = ["Method", "RunContext", "all_methods", "get_method", "register_from", "unregister"]
