"""Datasets and methods as the UI sees them: cached, with readable errors, and open to
plug-ins (tests and researchers can register extra datasets and methods without
editing the package: ``WORKBENCH_UI_PLUGINS=module[,module]`` is imported once)."""
from __future__ import annotations

import importlib
import os
import threading
from typing import Any, Callable

from .. import paths

_EXTRA_DATASETS: dict[str, Callable[[], Any]] = {}
_CACHE: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()
_PLUGINS_LOADED: set[str] = set()


class DatasetError(LookupError):
    """A dataset cannot be used; the message says why and what to do."""


def load_plugins() -> list[str]:
    """Import the modules named in WORKBENCH_UI_PLUGINS (once each); returns errors."""
    errors = []
    for name in [m.strip() for m in os.environ.get("WORKBENCH_UI_PLUGINS", "").split(",") if m.strip()]:
        if name in _PLUGINS_LOADED:
            continue
        try:
            importlib.import_module(name)
            _PLUGINS_LOADED.add(name)
        except Exception as e:     # noqa: BLE001 - shown in the page, never a traceback
            errors.append(f"plug-in {name!r} could not be imported: {type(e).__name__}: {e}")
    return errors


def register_dataset(name: str, factory: Callable[[], Any]) -> None:
    _EXTRA_DATASETS[name] = factory
    for k in [k for k in _CACHE if k[0] == name]:
        _CACHE.pop(k, None)


def register_method(cls: type) -> None:
    from ..methods import _REGISTRY, all_methods
    all_methods()                      # load the package's methods first
    _REGISTRY[cls.name] = cls


def is_extra(name: str) -> bool:
    return name in _EXTRA_DATASETS


def dataset_names(active: str | None = None) -> list[str]:
    names: list[str] = []
    try:
        mod = importlib.import_module("workbench.datasets")
        for attr in ("list_datasets", "available", "dataset_names"):
            fn = getattr(mod, attr, None)
            if callable(fn):
                got = fn()
                names = [x if isinstance(x, str) else x.get("name") if isinstance(x, dict)
                         else getattr(x, "name", str(x)) for x in got]
                names = [n for n in names if n]
                break
        else:
            reg = getattr(mod, "DATASETS", None) or getattr(mod, "REGISTRY", None)
            if isinstance(reg, dict):
                names = list(reg)
    except ImportError:
        names = []
    names = [str(n) for n in names]
    for n in list(_EXTRA_DATASETS) + (["demo"] if not names else []) + ([active] if active else []):
        if n and n not in names:
            names.append(n)
    return names


def get_dataset(name: str) -> Any:
    """The dataset object (cached per process and WORKBENCH_HOME)."""
    key = (name, str(paths.home()))
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    if name in _EXTRA_DATASETS:
        ds = _EXTRA_DATASETS[name]()
    else:
        try:
            from ..datasets import load_dataset
        except ImportError as e:
            raise DatasetError(
                "The knowledge layer (workbench.datasets.load_dataset) is not installed in this "
                "checkout yet, so no dataset can be loaded.") from e
        try:
            ds = load_dataset(name)
        except (LookupError, FileNotFoundError, ValueError, OSError) as e:
            raise DatasetError(f"Dataset {name!r} could not be loaded: {e}") from e
    with _LOCK:
        _CACHE[key] = ds
    return ds


def questions(ds: Any) -> list[Any]:
    qs = getattr(ds, "questions", None)
    if callable(qs):
        qs = qs()
    if isinstance(qs, dict):
        qs = list(qs.values())
    return list(qs or [])


def passages(ds: Any) -> list[Any]:
    ps = getattr(ds, "passages", None)
    if callable(ps):
        ps = ps()
    if isinstance(ps, dict):
        ps = list(ps.values())
    return list(ps or [])


def index_built(ds: Any, kind: str) -> bool:
    """Whether searching ``ds`` with the ``kind`` retriever loads an index rather than
    builds one (a dataset that cannot say counts as not built)."""
    fn = getattr(ds, "retriever_built", None)
    try:
        return bool(fn(kind)) if callable(fn) else False
    except Exception:      # noqa: BLE001 - unknown: treat as a build
        return False


def question_by_id(ds: Any, qid: str) -> Any:
    fn = getattr(ds, "question", None)
    if callable(fn):
        try:
            return fn(qid)
        except (KeyError, LookupError):
            return None
    return next((q for q in questions(ds) if getattr(q, "id", None) == qid), None)


def demo_questions(ds: Any, n: int = 8) -> list[Any]:
    """Questions to offer as one-click starts: the dataset's 'demo' picks, else the first n."""
    qs = questions(ds)
    picked = [q for q in qs if (getattr(q, "meta", {}) or {}).get("demo")]
    return (picked or qs)[:n]


def method_classes() -> dict[str, type]:
    """The registry's methods; a method module that fails to import is skipped (and
    reported by :func:`method_load_errors`) instead of hiding all the others."""
    from .. import methods as pkg
    try:
        return pkg.all_methods()
    except Exception:      # noqa: BLE001 - a half-landed method must not break every page
        pass
    import pkgutil
    from ..methods.base import Method
    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name.startswith("_") or mod.name == "base":
            continue
        try:
            m = importlib.import_module(f"{pkg.__name__}.{mod.name}")
        except Exception:  # noqa: BLE001
            continue
        for obj in vars(m).values():
            if isinstance(obj, type) and issubclass(obj, Method) and obj is not Method and obj.name:
                pkg._REGISTRY.setdefault(obj.name, obj)
    return dict(sorted(pkg._REGISTRY.items()))


def method_load_errors() -> list[str]:
    """Import errors of method modules (all_methods stops at the first one)."""
    import pkgutil
    from .. import methods as pkg
    errs = []
    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name.startswith("_") or mod.name == "base":
            continue
        try:
            importlib.import_module(f"{pkg.__name__}.{mod.name}")
        except Exception as e:     # noqa: BLE001
            errs.append(f"methods/{mod.name}.py: {type(e).__name__}: {e}")
    return errs
