"""The UI's model: loaded once per process, shared by every session, one call at a time.

* ``get_llm()`` builds the backend the settings name (``st.cache_resource``; a changed
  setting reloads it — the old one is dropped so its memory is freed).
* Calls go through :class:`LockedBackend`: llama.cpp contexts are not thread-safe and
  several browser sessions (or the Ask and Compare pages) may run methods at once. Its
  lock is one process-wide :class:`~workbench.llm.locked.ModelQueue`, so sessions take
  turns in the order they asked and a waiting run can show its place in line.
* Tests and demos without a model: settings ``backend = "scripted"`` or the environment
  variable ``WORKBENCH_UI_BACKEND=scripted`` gives a :class:`DemoScriptedBackend`
  (optionally steered by a JSON rule table in ``WORKBENCH_SCRIPTED_TABLE``), and
  :func:`set_override` injects any backend object (AppTest runs in-process).
"""
from __future__ import annotations

import json
import os
import threading
from typing import Any, Sequence

from ..llm.base import GenParams, LLMError, ModelInfo
from ..llm.locked import LockedBackend as Locked
from ..llm.locked import ModelQueue
from ..llm.scripted import ScriptedBackend

_LLM_LOCK = ModelQueue()
_OVERRIDE: Any = None
_CURRENT: dict[str, Any] = {}          # key -> backend (one entry: the loaded model)
_LOAD_LOCK = threading.Lock()


def set_override(backend: Any) -> None:
    """Use this backend for every UI run in this process (tests)."""
    global _OVERRIDE
    _OVERRIDE = backend


def clear_override() -> None:
    set_override(None)


class LockedBackend(Locked):
    """The UI's lock: every session's calls, and unloading, take turns in the one
    process-wide queue."""

    def __init__(self, inner: Any):
        super().__init__(inner, _LLM_LOCK)


def _instance(schema: dict[str, Any], depth: int = 0) -> Any:
    """A minimal value that satisfies a (simple) JSON schema."""
    if depth > 6 or not isinstance(schema, dict):
        return None
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _instance(schema[key][0], depth + 1)
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    if t == "object" or "properties" in schema:
        props = schema.get("properties", {})
        req = schema.get("required") or list(props)
        return {k: _instance(props.get(k, {}), depth + 1) for k in req}
    if t == "array":
        n = max(1, int(schema.get("minItems", 1)))
        return [_instance(schema.get("items", {"type": "string"}), depth + 1) for _ in range(n)]
    if t == "integer":
        return int(schema.get("minimum", 1))
    if t == "number":
        return float(schema.get("minimum", 0.5))
    if t == "boolean":
        return True
    if t == "null":
        return None
    return "unknown"


class DemoScriptedBackend(ScriptedBackend):
    """Scripted backend that also answers schema-constrained calls with valid JSON."""

    def generate(self, messages: Sequence[Any] | str, params: GenParams | None = None,
                 on_token: Any = None) -> Any:
        params = params or GenParams()
        prompt = self._render(messages)
        rule = next((r for r in self.rules if r.matches(prompt)), None)
        if rule is None and params.json_schema:
            text = json.dumps(_instance(params.json_schema))
            return ScriptedBackend(default=text, default_logprob=self.default_logprob,
                                   info=self.info, n_ctx=self.n_ctx).generate(messages, params,
                                                                              on_token)
        return super().generate(messages, params, on_token)


def scripted_backend() -> DemoScriptedBackend:
    table_path = os.environ.get("WORKBENCH_SCRIPTED_TABLE")
    be = DemoScriptedBackend(default="I don't know.", default_logprob=-0.4)
    if table_path:
        try:
            rows = json.loads(open(table_path, encoding="utf-8").read())
        except (OSError, json.JSONDecodeError) as e:
            raise LLMError(f"WORKBENCH_SCRIPTED_TABLE={table_path!r} is not a readable JSON rule "
                           f"table ({e}).") from e
        be = DemoScriptedBackend.from_table(rows, default="I don't know.", default_logprob=-0.4)
    be.info = ModelInfo(name="scripted", backend="scripted", quantization="-", n_ctx=8192,
                        sha256="scripted")
    return be


def backend_kind(settings: Any) -> str:
    return os.environ.get("WORKBENCH_UI_BACKEND") or getattr(settings, "backend", "llama_cpp")


def settings_key(settings: Any) -> tuple:
    return (backend_kind(settings), settings.model, settings.n_gpu_layers, settings.n_ctx,
            settings.n_threads, settings.n_batch, settings.seed, settings.server_url,
            settings.server_model, settings.isolate_model,
            getattr(settings, "prefix_cache_tokens", None))


def loaded_key() -> tuple | None:
    return next(iter(_CURRENT), None)


def is_loaded(settings: Any) -> bool:
    return _OVERRIDE is not None or settings_key(settings) in _CURRENT


def get_llm(settings: Any | None = None) -> LockedBackend:
    """The process-wide backend for these settings, loading it (once) if needed.

    Raises :class:`~workbench.llm.base.LLMError` with a readable message on failure.
    """
    from .. import settings as settings_mod
    if _OVERRIDE is not None:
        return _OVERRIDE if isinstance(_OVERRIDE, LockedBackend) else LockedBackend(_OVERRIDE)
    s = settings or settings_mod.load()
    key = settings_key(s)
    with _LOAD_LOCK:
        if key not in _CURRENT:
            unload()
            _CURRENT[key] = _cached_backend(key, s)
        return _CURRENT[key]


def _load(s: Any) -> LockedBackend:
    if backend_kind(s) == "scripted":
        return LockedBackend(scripted_backend())
    from ..llm.registry import load_backend
    try:
        return LockedBackend(load_backend(s))
    except LLMError:
        raise
    except (OSError, ValueError, RuntimeError) as e:
        raise LLMError(f"Could not load the model {s.model!r}: {e}. Check the model file and "
                       f"the settings (n_ctx, n_gpu_layers).") from e


def _cached_backend(key: tuple, s: Any) -> LockedBackend:
    """``st.cache_resource`` (one entry) when Streamlit is importable; plain call otherwise."""
    try:
        import streamlit as st
    except ImportError:        # pragma: no cover - the library is usable without Streamlit
        return _load(s)
    global _ST_CACHED
    if _ST_CACHED is None:
        _ST_CACHED = st.cache_resource(max_entries=1, show_spinner=False)(
            lambda key, _s: _load(_s))
    return _ST_CACHED(key, s)


_ST_CACHED: Any = None


def unload() -> None:
    """Drop the loaded model (before loading another), freeing its memory."""
    from ..llm import registry
    with _LLM_LOCK:
        for be in _CURRENT.values():
            inner = getattr(be, "inner", None)
            close = getattr(inner, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:      # noqa: BLE001 - freeing is best effort
                    pass
        _CURRENT.clear()
        registry._BACKENDS.clear()
        if _ST_CACHED is not None:
            _ST_CACHED.clear()


def restart_model() -> bool:
    """Start the loaded model's worker process afresh (after a crash). False when the loaded
    backend has no worker process (in-process llama.cpp, a server, the scripted backend)."""
    with _LLM_LOCK:
        for be in [_OVERRIDE, *_CURRENT.values()]:
            restart = getattr(getattr(be, "inner", be), "restart", None)
            if callable(restart):
                restart()
                return True
    return False


def model_card(settings: Any) -> dict[str, Any]:
    """Name, quantisation, GPU layers and file of the configured model, without loading it."""
    card = {"name": settings.model, "backend": backend_kind(settings),
            "quantization": "?", "n_gpu_layers": settings.n_gpu_layers, "n_ctx": settings.n_ctx,
            "path": "", "context_length": None, "architecture": "", "error": None,
            "loaded": is_loaded(settings), "quality": "unknown",
            "quality_note": "not measured by the workbench (a model chosen by path)"}
    if _OVERRIDE is not None or card["backend"] == "scripted":
        info = (_OVERRIDE.info if _OVERRIDE is not None else ModelInfo(name="scripted"))
        card.update(name=info.name, quantization=info.quantization or "-", backend="scripted",
                    n_gpu_layers=0)
        return card
    if card["backend"] == "openai_compat":
        card.update(name=settings.server_model or settings.model, quantization="(server)",
                    path=settings.server_url)
        return card
    try:
        from ..llm.registry import BUNDLED, describe, resolve
        p = resolve(settings.model, verify=False)     # the hash is checked when it loads
        if not p.exists():
            raise LLMError(f"The model file {p} does not exist. Choose another in Settings.")
        e = describe(p, settings.model, with_sha=False)
        card.update(quantization=e.quantization, path=e.path, context_length=e.context_length,
                    architecture=e.architecture, size_mb=round(e.size_bytes / 1e6, 1))
        m = BUNDLED.get(settings.model)
        if m is not None:
            card.update(title=m.title, quality=m.quality, quality_note=m.quality_note)
    except LLMError as e:
        card["error"] = str(e)
    return card
