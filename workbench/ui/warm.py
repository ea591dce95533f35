"""Warm-up: load what the first run needs before the user presses Run.

The first run in a fresh process otherwise pays for the model, the sentence embedder
(``build_context`` asks for it) and the default retriever's index (a dense index is
built once per corpus and then cached on disk). :func:`start` does that in a
background thread, once per process and configuration; :func:`warm` does it
synchronously (Settings' "Load model now").
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any

from . import backend
from . import data as uidata

_LOCK = threading.Lock()
_STATE: dict[tuple, dict[str, Any]] = {}


def _key(settings: Any) -> tuple:
    return backend.settings_key(settings) + (settings.dataset, settings.retriever)


def warm(settings: Any, *, model: bool = True, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load model, dataset, embedder and default retriever; returns timings and errors."""
    st = state if state is not None else {}
    st.setdefault("timings", {})
    st.setdefault("errors", [])

    def step(name: str, fn: Any) -> Any:
        st["step"] = name
        t0 = time.perf_counter()
        try:
            return fn()
        except Exception as e:     # noqa: BLE001 - warm-up is best effort; the run reports
            st["errors"].append(f"{name}: {type(e).__name__}: {e}")
            return None
        finally:
            st["timings"][name] = round(time.perf_counter() - t0, 3)

    if model:
        step("model", lambda: backend.get_llm(settings))
    ds = step("dataset", lambda: uidata.get_dataset(settings.dataset))
    if ds is not None and uidata.passages(ds):
        def embedder() -> Any:
            from ..knowledge.dense import get_embedder
            return get_embedder()
        if settings.retriever in ("dense", "hybrid"):
            step("embedder", embedder)
        step(f"{settings.retriever} index",
             lambda: ds.retriever(settings.retriever).search("warm up", 1))
        if settings.retriever == "bm25":
            step("embedder", embedder)          # build_context asks for it anyway
    st["step"] = "done"
    st["done"] = True
    return st


def enabled() -> bool:
    return os.environ.get("WORKBENCH_UI_WARM", "1").lower() not in ("0", "false", "no", "off")


def start(settings: Any, *, model: bool = True) -> dict[str, Any] | None:
    """Start warming in the background (once per process and configuration).

    ``WORKBENCH_UI_WARM=0`` turns this off (the UI tests do).
    """
    if not enabled():
        return None
    k = _key(settings)
    with _LOCK:
        if k in _STATE:
            return _STATE[k]
        state: dict[str, Any] = {"done": False, "step": "queued", "started": time.time()}
        _STATE[k] = state
    threading.Thread(target=warm, args=(settings,), kwargs={"model": model, "state": state},
                     name="workbench-warm", daemon=True).start()
    return state


def status(settings: Any) -> dict[str, Any] | None:
    return _STATE.get(_key(settings))
