"""No greedy call made twice in one run: the second byte-identical call gets the first one's
completion at no cost.

A greedy call (temperature 0) is a function of its messages and parameters (grammar and
JSON schema included), so a run that asks the same thing again (CRP-RAG's answer paths that
share a prefix send the same step prompts once per path) needs no model for the repeat.
:class:`CallMemo` wraps a run's backend (``runner.execute`` puts it outermost, above
``CallReplay`` and the batch engine, so a repeat is answered before either sees it) and
returns the stored completion: text, tokens and log-probabilities are the first call's,
latency and token counts are zero, and ``reused_from`` names the first call's id, which the
``llm_call`` record keeps so the graph and the call list can show the call as reused.

Sampled calls are never memoised: two samples of one prompt are meant to differ (their seeds
are in the parameters, but a sampled repeat is the method asking for another draw). The memo
lives for one run only; ``eval --reuse-calls`` is the across-runs store.
"""
from __future__ import annotations

import dataclasses
import json
import uuid
from typing import Any, Callable, Sequence

from . import batching
from .base import Completion, GenParams, GenRequest, ModelInfo, Token


def memo_key(messages: Any, params: GenParams) -> str | None:
    """The key of a memoisable call (None for a sampled one): messages and every parameter,
    byte for byte."""
    if params.temperature != 0.0:
        return None
    return json.dumps([messages, params.to_dict()], sort_keys=True, ensure_ascii=False,
                      default=str)


def new_call_id() -> str:
    # the same form as trace.new_id("call_"): the id the run's llm_call event gets
    return "call_" + uuid.uuid4().hex[:12]


def reused(comp: Completion) -> Completion:
    """A copy of ``comp`` as a reuse of it: same output, zero cost, pointing at its call."""
    return dataclasses.replace(
        comp, tokens=[dataclasses.replace(t) for t in comp.tokens], params=dict(comp.params),
        prompt_tokens=0, completion_tokens=0, latency_ms=0.0, prompt_eval_ms=0.0,
        cached_prompt_tokens=0, cache=None, batch=None, call_id=None,
        reused_from=comp.call_id or "?")


class CallMemo:
    """``inner`` with byte-identical greedy calls of one run answered by the first one.

    Each completion that reaches the model gets its ``call_id`` here (the run's ``llm_call``
    event takes it), so a later reuse can name it. ``hits`` counts the calls answered."""

    def __init__(self, inner: Any):
        self.inner = inner
        self._done: dict[str, Completion] = {}
        self.hits = 0

    @property
    def info(self) -> ModelInfo:
        return self.inner.info

    def _stored(self, key: str | None) -> Completion | None:
        got = self._done.get(key) if key is not None else None
        if got is not None:
            self.hits += 1
            return reused(got)
        return None

    def _keep(self, key: str | None, comp: Completion) -> Completion:
        if comp.call_id is None:
            comp.call_id = new_call_id()
        # a completion cut by an error is not an answer to give again
        if key is not None and comp.finish_reason != "error":
            self._done.setdefault(key, comp)
        return comp

    def generate(self, messages: Any, params: GenParams | None = None,
                 on_token: Callable[[Token], None] | None = None) -> Completion:
        params = params or GenParams()
        key = memo_key(messages, params)
        got = self._stored(key)
        if got is not None:
            for t in got.tokens if on_token is not None else ():
                on_token(t)
            return got
        comp = (self.inner.generate(messages, params) if on_token is None
                else self.inner.generate(messages, params, on_token=on_token))
        return self._keep(key, comp)

    def generate_many(self, requests: Sequence[GenRequest], *, max_batch: int | None = None,
                      plan: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        """Memo hits and repeats within the batch are answered here; the rest run as one
        ``generate_many`` of the inner backend, with a given plan narrowed to them (a re-run
        of a recorded batch drops the same repeats, so the narrowed plans agree)."""
        keys = [memo_key(r.messages, r.params) for r in requests]
        out: list[Completion | None] = [self._stored(k) for k in keys]
        first: dict[str, int] = {}
        run: list[int] = []           # requests that go to the model
        later: list[tuple[int, int]] = []   # (request, the request in this batch it repeats)
        for i, k in enumerate(keys):
            if out[i] is not None:
                continue
            if k is not None and k in first:
                later.append((i, first[k]))
                continue
            if k is not None:
                first[k] = i
            run.append(i)
        if run:
            sub_plan = None
            if plan is not None:
                pos = {i: n for n, i in enumerate(run)}
                sub_plan = [g for g in ([pos[i] for i in grp if i in pos] for grp in plan) if g]
            got = batching.generate_many(self.inner, [requests[i] for i in run],
                                         max_batch=max_batch, plan=sub_plan)
            for i, comp in zip(run, got):
                out[i] = self._keep(keys[i], comp)
        for i, j in later:
            src = out[j]
            assert src is not None
            self.hits += 1
            out[i] = reused(src)
        return [c for c in out if c is not None]

    def score(self, context: Any, continuation: str) -> Any:
        return self.inner.score(context, continuation)

    def score_many(self, requests: Sequence[Any], **kw: Any) -> list[Any]:
        return batching.score_many(self.inner, requests, **kw)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def __getattr__(self, name: str) -> Any:       # backend-specific extras (render, n_ctx, …)
        return getattr(self.inner, name)
