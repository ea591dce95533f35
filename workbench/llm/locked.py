"""A backend whose calls run one at a time across threads (llama.cpp contexts are not
thread-safe); otherwise transparent."""
from __future__ import annotations

import threading
from typing import Any, Sequence

from . import batching
from .base import GenParams, ModelInfo


class LockedBackend:
    """Serialises calls to ``inner`` with ``lock`` (a lock of its own by default)."""

    def __init__(self, inner: Any, lock: Any = None):
        self.inner = inner
        self._lock = lock if lock is not None else threading.RLock()

    @property
    def info(self) -> ModelInfo:
        return self.inner.info

    def generate(self, messages: Any, params: GenParams | None = None, on_token: Any = None) -> Any:
        with self._lock:
            if on_token is None:
                return self.inner.generate(messages, params)
            return self.inner.generate(messages, params, on_token=on_token)

    def score(self, context: Any, continuation: str) -> Any:
        with self._lock:
            return self.inner.score(context, continuation)

    def generate_many(self, requests: Sequence[Any], **kw: Any) -> list[Any]:
        with self._lock:
            return batching.generate_many(self.inner, requests, **kw)

    def score_many(self, requests: Sequence[Any], **kw: Any) -> list[Any]:
        with self._lock:
            return batching.score_many(self.inner, requests, **kw)

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return self.inner.count_tokens(text)

    def __getattr__(self, name: str) -> Any:       # backend-specific extras
        return getattr(self.inner, name)
