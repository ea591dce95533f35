"""Several eval items on one model, their LLM calls decoded together.

Each item runs on a thread of its own and calls ``generate`` / ``score`` as it always does.
:class:`ItemsTogether` holds a call until up to ``size`` calls of different items are
waiting (or ``gather_s`` has passed), then runs them as one ``generate_many`` (and one
``score_many``): the sequences of one llama.cpp batch. Items stay independent, so nothing
about a method changes; only which other items' sequences shared a decoding step does.

That depends on timing, so such a batch cannot be replayed: its record says
``across_items`` and :func:`~workbench.llm.batching.plans_from_records` leaves it out (a
re-run of the item decodes the call on its own). A method's own batched calls
(``generate_many``) go through as they are, one at a time on the model.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from . import batching
from .base import GenParams, GenRequest, ScoreRequest
from .locked import LockedBackend

DEFAULT_GATHER_S = 0.02


@dataclass(eq=False)
class _Waiting:
    request: GenRequest | ScoreRequest
    result: Any = None
    error: BaseException | None = None
    done: bool = False

    def value(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


class ItemsTogether(LockedBackend):
    """A backend shared by item threads whose single calls run as batches of ``size``; its
    lock lets one batch or one pass-through call (``generate_many``, a streamed call, ...)
    on the model at a time."""

    def __init__(self, inner: Any, size: int, gather_s: float = DEFAULT_GATHER_S):
        super().__init__(inner)
        self.size, self.gather_s = max(1, int(size)), gather_s
        self._cv = threading.Condition()
        self._queue: list[_Waiting] = []
        self._leading = False

    def generate(self, messages: Any, params: GenParams | None = None, on_token: Any = None) -> Any:
        if on_token is not None:            # a streamed call is watched live: run it alone
            return super().generate(messages, params, on_token)
        return self._call(GenRequest(messages, params or GenParams()))

    def score(self, context: Any, continuation: str) -> Any:
        return self._call(ScoreRequest(context, continuation))

    # -- the gathering --
    def _call(self, request: GenRequest | ScoreRequest) -> Any:
        me = _Waiting(request)
        with self._cv:
            self._queue.append(me)
            self._cv.notify_all()
            while True:
                if me.done:
                    return me.value()
                if not self._leading:
                    self._leading = True
                    break
                self._cv.wait()
        batch = [me]
        try:
            batch = self._gather(me)
            self._run(batch)
        except BaseException as e:      # an interrupt: every item of the batch sees it
            for w in batch:
                if w.result is None and w.error is None:
                    w.error = e
            raise
        finally:
            with self._cv:
                for w in batch:
                    w.done = True
                self._leading = False
                self._cv.notify_all()
        return me.value()

    def _gather(self, me: _Waiting) -> list[_Waiting]:
        """The leader's call and up to ``size - 1`` others, oldest first."""
        deadline = time.monotonic() + self.gather_s
        with self._cv:
            while len(self._queue) < self.size:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(left)
            self._queue.remove(me)
            batch = [me] + self._queue[: self.size - 1]
            del self._queue[: self.size - 1]
        return batch

    def _run(self, batch: list[_Waiting]) -> None:
        gens = [w for w in batch if isinstance(w.request, GenRequest)]
        scores = [w for w in batch if isinstance(w.request, ScoreRequest)]
        with self._lock:
            for group, many, one in ((gens, batching.generate_many, self._one_generate),
                                     (scores, batching.score_many, self._one_score)):
                if len(group) > 1:
                    try:
                        results = many(self.inner, [w.request for w in group],
                                       max_batch=self.size)
                    except Exception:
                        pass    # one bad request (a context overflow) fails its own item only
                    else:
                        for w, res in zip(group, results):
                            if getattr(res, "batch", None) is not None:
                                res.batch = {**res.batch, "across_items": True}
                            w.result = res
                        continue
                for w in group:
                    try:
                        w.result = one(w.request)
                    except Exception as e:
                        w.error = e

    def _one_generate(self, r: GenRequest) -> Any:
        return self.inner.generate(r.messages, r.params)

    def _one_score(self, r: ScoreRequest) -> Any:
        return self.inner.score(r.context, r.continuation)
